/* Native CPU kernels generated from the verified SymPy bindings.

   DO NOT EDIT: this file is written by `geoattn codegen` from geoattn/symbolic/expressions.py
   (Note [the closed-form Gram layer]; Note [Cayley of small skew matrices] in geoattn.kernels._functions);
   `geoattn codegen --check` fails when it is stale. It is compiled at first use by geoattn.kernels._native
   (plain C99, no Python or torch headers), one library per d and real type (-DGEOATTN_D=<d> -DGEOATTN_F32 or
   -DGEOATTN_F64), and called through ctypes; every function is batched over B samples, of T tokens where it
   has token inputs (Note [lanes] in geoattn.codegen.cprinter).

   bindings-sha256: f69bc26d9100dfde54a7eeda2161211cb8aa9b6685ac59e2fb7a9008030964ca
   printer-version: 5

   Sources (kernel: bindings  [ledger claims]):
     vp_gram_fwd: Gram = x.T*x; J = A*Gram; J2 = J**2; Nu = ((1 - Trace(J2)/2)*I + J2)*(I + J); N = 1/(-Trace(J2**2)/4 + Trace(J2)**2/8 - Trace(J2)/2 + 1)*Nu; P = -I + 2*N; R = -I - J*N + N; y = x*P  [vp.gram_closed_form, vp.gram_closed_form_vjp]
     vp_gram_bwd: Gram = x.T*x; Pbar = x.T*Gy; P = -I + 2*N; Mbar = -2*N*Pbar.T*N; H = A*Mbar.T - Mbar*A; gx = Gy*P.T + x*H; gA = Gram*Mbar  [vp.gram_closed_form_vjp]
     cayley_small_fwd: C2 = C**2; Lam = (2/(1 - Trace(C2)/2))*(-C + C2) + I; Skew = C + C.T; Size = C  [kernels.cayley_skew_small]
     cayley_vjp: P = I + Lam.T; gC = -(1/2)*P*G*P  [cayley.vjp]
*/

#include <math.h>
#include <stdint.h>

#define LANES (GEOATTN_VBYTES / 8)
#define TOKEN_CHUNK 32

#if defined(GEOATTN_F32)
typedef float real_t;
#define GEOATTN_NAME(name) geoattn_##name##_f32
#elif defined(GEOATTN_F64)
typedef double real_t;
#define GEOATTN_NAME(name) geoattn_##name##_f64
#else
#error "compile with -DGEOATTN_F32 or -DGEOATTN_F64"
#endif
/* one vector register of the target: GCC keeps a wider vector type in memory (Note [vector width]);
   a definition given before this one (the tests' other widths) is kept */
#if defined(GEOATTN_VBYTES)
#elif defined(__AVX512F__)
#define GEOATTN_VBYTES 64
#define GEOATTN_VREGS 32
#elif defined(__AVX__)
#define GEOATTN_VBYTES 32
#define GEOATTN_VREGS 16
#else
#define GEOATTN_VBYTES 16
#define GEOATTN_VREGS 16
#endif

/* functions:
   geoattn_vp_gram_fwd_d1_f32
   geoattn_vp_gram_fwd_d1_f64
   geoattn_vp_gram_fwd_d2_f32
   geoattn_vp_gram_fwd_d2_f64
   geoattn_vp_gram_fwd_d3_f32
   geoattn_vp_gram_fwd_d3_f64
   geoattn_vp_gram_fwd_d4_f32
   geoattn_vp_gram_fwd_d4_f64
   geoattn_vp_gram_bwd_d1_f32
   geoattn_vp_gram_bwd_d1_f64
   geoattn_vp_gram_bwd_d2_f32
   geoattn_vp_gram_bwd_d2_f64
   geoattn_vp_gram_bwd_d3_f32
   geoattn_vp_gram_bwd_d3_f64
   geoattn_vp_gram_bwd_d4_f32
   geoattn_vp_gram_bwd_d4_f64
   geoattn_cayley_small_fwd_d1_f32
   geoattn_cayley_small_fwd_d1_f64
   geoattn_cayley_small_fwd_d2_f32
   geoattn_cayley_small_fwd_d2_f64
   geoattn_cayley_small_fwd_d3_f32
   geoattn_cayley_small_fwd_d3_f64
   geoattn_cayley_vjp_d1_f32
   geoattn_cayley_vjp_d1_f64
   geoattn_cayley_vjp_d2_f32
   geoattn_cayley_vjp_d2_f64
   geoattn_cayley_vjp_d3_f32
   geoattn_cayley_vjp_d3_f64
*/

#if GEOATTN_D == 1

/* The closed-form Gram layer's forward for d <= 4: Gram = x^T x, N = (I + Gram A)^{-T} in closed form, the largest entry of its residual R = (I + Gram A)^T N - I, and y = x (2N - I). */
void GEOATTN_NAME(vp_gram_fwd_d1)(int64_t B, int64_t T, const real_t *restrict x, const double *restrict A, real_t *restrict y, double *restrict Gram, double *restrict N, double *restrict R)
{
    typedef double geoattn_lanes_t __attribute__((vector_size(LANES*sizeof(double)), aligned(8), may_alias));
    double tile_x[TOKEN_CHUNK*1*LANES];
    double Gram_0_0[LANES];
    double row_y[1][LANES];
    const int64_t nchunks = (T + TOKEN_CHUNK - 1)/TOKEN_CHUNK;
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) Gram_0_0[l] = 0.0;
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            const real_t *src_x[LANES];
            for (int l = 0; l < LANES; l++) {
                const int64_t bl = b0 + (l < nl ? l : nl - 1);
                src_x[l] = x + (bl*T + t0)*1;
            }
            for (int64_t tt = 0; tt < nt*1; tt++)
                for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            #if GEOATTN_VREGS >= 32
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 1*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
            }
            #else
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 1*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
            }
            #endif
        }
        for (int l = 0; l < nl; l++) {
            Gram[(int64_t)(b0 + l)*1 + 0] = Gram_0_0[l];
        }
        for (int l = 0; l < nl; l++) {
            N[(int64_t)(b0 + l)*1 + 0] = 1.0;
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            R[b0 + l] = m;
        }
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            if (nchunks > 1) {
                const real_t *src_x[LANES];
                for (int l = 0; l < LANES; l++) {
                    const int64_t bl = b0 + (l < nl ? l : nl - 1);
                    src_x[l] = x + (bl*T + t0)*1;
                }
                for (int64_t tt = 0; tt < nt*1; tt++)
                    for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            }
            for (int64_t tt = 0; tt < nt; tt++) {
                for (int l = 0; l < LANES; l++) {
                    row_y[0][l] = tile_x[(0 + 1*tt)*LANES + l];
                }
                for (int l = 0; l < nl; l++) {
                    y[((int64_t)(b0 + l)*T + t0 + tt)*1 + 0] = (real_t)(row_y[0][l]);
                }
            }
        }
    }
}

/* The closed-form Gram layer's backward for d <= 4: x_bar = y_bar P^T + x H and the per-sample Gram M_bar (A_bar is the skew part of its sum over the batch), from x, y_bar and the forward's N. */
void GEOATTN_NAME(vp_gram_bwd_d1)(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy, const double *restrict N, const double *restrict A, real_t *restrict gx, double *restrict gA)
{
    typedef double geoattn_lanes_t __attribute__((vector_size(LANES*sizeof(double)), aligned(8), may_alias));
    double tile_x[TOKEN_CHUNK*1*LANES];
    double tile_Gy[TOKEN_CHUNK*1*LANES];
    double N_0_0[LANES];
    double Gram_0_0[LANES];
    double Pbar_0_0[LANES];
    double P_0_0[LANES];
    double gA_0_0[LANES];
    double row_gx[1][LANES];
    const int64_t nchunks = (T + TOKEN_CHUNK - 1)/TOKEN_CHUNK;
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            N_0_0[l] = N[(int64_t)bl*1 + 0];
        }
        for (int l = 0; l < LANES; l++) Gram_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_0[l] = 0.0;
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            const real_t *src_x[LANES];
            const real_t *src_Gy[LANES];
            for (int l = 0; l < LANES; l++) {
                const int64_t bl = b0 + (l < nl ? l : nl - 1);
                src_x[l] = x + (bl*T + t0)*1;
                src_Gy[l] = Gy + (bl*T + t0)*1;
            }
            for (int64_t tt = 0; tt < nt*1; tt++)
                for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            for (int64_t tt = 0; tt < nt*1; tt++)
                for (int l = 0; l < LANES; l++) tile_Gy[tt*LANES + l] = (double)src_Gy[l][tt];
            #if GEOATTN_VREGS >= 32
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Pbar_0_0;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 1*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 1*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_Gy_0*v_x_0;
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Pbar_0_0 = acc1;
            }
            #else
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Pbar_0_0;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 1*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 1*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_Gy_0*v_x_0;
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Pbar_0_0 = acc1;
            }
            #endif
        }
        for (int l = 0; l < LANES; l++) {
            P_0_0[l] = 2.0*N_0_0[l] - 1.0;
            const double Mbar_0_0 = -2.0*(N_0_0[l]*N_0_0[l])*Pbar_0_0[l];
            gA_0_0[l] = Gram_0_0[l]*Mbar_0_0;
        }
        for (int l = 0; l < nl; l++) {
            gA[(int64_t)(b0 + l)*1 + 0] = gA_0_0[l];
        }
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            if (nchunks > 1) {
                const real_t *src_x[LANES];
                const real_t *src_Gy[LANES];
                for (int l = 0; l < LANES; l++) {
                    const int64_t bl = b0 + (l < nl ? l : nl - 1);
                    src_x[l] = x + (bl*T + t0)*1;
                    src_Gy[l] = Gy + (bl*T + t0)*1;
                }
                for (int64_t tt = 0; tt < nt*1; tt++)
                    for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
                for (int64_t tt = 0; tt < nt*1; tt++)
                    for (int l = 0; l < LANES; l++) tile_Gy[tt*LANES + l] = (double)src_Gy[l][tt];
            }
            for (int64_t tt = 0; tt < nt; tt++) {
                for (int l = 0; l < LANES; l++) {
                    row_gx[0][l] = tile_Gy[(0 + 1*tt)*LANES + l]*P_0_0[l];
                }
                for (int l = 0; l < nl; l++) {
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*1 + 0] = (real_t)(row_gx[0][l]);
                }
            }
        }
    }
}

/* Cayley(C) = I + 2 (C^2 - C)/(1 - Tr(C^2)/2) of T x T matrices with T <= 3 (T renamed d), with the largest entries of C + C^T and of C (the caller's skew check: the form holds for skew C only). */
void GEOATTN_NAME(cayley_small_fwd_d1)(int64_t B, int64_t T, const real_t *restrict C, real_t *restrict Lam, double *restrict Skew, double *restrict Size)
{
    double C_0_0[LANES];
    double Lam_0_0[LANES];
    double Skew_0_0[LANES];
    double Size_0_0[LANES];
    (void)T;  /* no token inputs */
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            C_0_0[l] = (double)C[(int64_t)bl*1 + 0];
        }
        for (int l = 0; l < LANES; l++) {
            const double C2_0_0 = (C_0_0[l]*C_0_0[l]);
            Lam_0_0[l] = 1.0 + 2.0*(C2_0_0 - C_0_0[l])/(1.0 - 1.0/2.0*C2_0_0);
            Skew_0_0[l] = 2.0*C_0_0[l];
            Size_0_0[l] = C_0_0[l];
        }
        for (int l = 0; l < nl; l++) {
            Lam[(int64_t)(b0 + l)*1 + 0] = (real_t)(Lam_0_0[l]);
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            a = fabs(Skew_0_0[l]); if (a > m || a != a) m = a;
            Skew[b0 + l] = m;
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            a = fabs(Size_0_0[l]); if (a > m || a != a) m = a;
            Size[b0 + l] = m;
        }
    }
}

/* The Cayley transform's vector-Jacobian product -1/2 (I + Lam^T) G (I + Lam^T) from the output Lam, for T <= 3 (T renamed d). */
void GEOATTN_NAME(cayley_vjp_d1)(int64_t B, int64_t T, const real_t *restrict Lam, const real_t *restrict G, real_t *restrict gC)
{
    double Lam_0_0[LANES];
    double G_0_0[LANES];
    double gC_0_0[LANES];
    (void)T;  /* no token inputs */
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            Lam_0_0[l] = (double)Lam[(int64_t)bl*1 + 0];
            G_0_0[l] = (double)G[(int64_t)bl*1 + 0];
        }
        for (int l = 0; l < LANES; l++) {
            const double P_0_0 = Lam_0_0[l] + 1.0;
            gC_0_0[l] = -1.0/2.0*G_0_0[l]*(P_0_0*P_0_0);
        }
        for (int l = 0; l < nl; l++) {
            gC[(int64_t)(b0 + l)*1 + 0] = (real_t)(gC_0_0[l]);
        }
    }
}

#endif  /* d = 1 */

#if GEOATTN_D == 2

/* The closed-form Gram layer's forward for d <= 4: Gram = x^T x, N = (I + Gram A)^{-T} in closed form, the largest entry of its residual R = (I + Gram A)^T N - I, and y = x (2N - I). */
void GEOATTN_NAME(vp_gram_fwd_d2)(int64_t B, int64_t T, const real_t *restrict x, const double *restrict A, real_t *restrict y, double *restrict Gram, double *restrict N, double *restrict R)
{
    typedef double geoattn_lanes_t __attribute__((vector_size(LANES*sizeof(double)), aligned(8), may_alias));
    const double A_1_0 = A[2];
    double tile_x[TOKEN_CHUNK*2*LANES];
    double Gram_0_0[LANES];
    double Gram_0_1[LANES];
    double Gram_1_1[LANES];
    double N_0_0[LANES];
    double N_0_1[LANES];
    double N_1_0[LANES];
    double N_1_1[LANES];
    double P_0_0[LANES];
    double P_0_1[LANES];
    double P_1_0[LANES];
    double P_1_1[LANES];
    double R_0_0[LANES];
    double R_0_1[LANES];
    double R_1_0[LANES];
    double R_1_1[LANES];
    double row_y[2][LANES];
    const int64_t nchunks = (T + TOKEN_CHUNK - 1)/TOKEN_CHUNK;
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) Gram_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_1[l] = 0.0;
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            const real_t *src_x[LANES];
            for (int l = 0; l < LANES; l++) {
                const int64_t bl = b0 + (l < nl ? l : nl - 1);
                src_x[l] = x + (bl*T + t0)*2;
            }
            for (int64_t tt = 0; tt < nt*2; tt++)
                for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            #if GEOATTN_VREGS >= 32
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_1_1;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 2*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 2*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + (v_x_1*v_x_1);
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_1_1 = acc2;
            }
            #else
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_1_1;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 2*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 2*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + (v_x_1*v_x_1);
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_1_1 = acc2;
            }
            #endif
        }
        for (int l = 0; l < LANES; l++) {
            const double sJ_0 = A_1_0*Gram_0_1[l];
            const double J_0_0 = -sJ_0;
            const double J_0_1 = -A_1_0*Gram_1_1[l];
            const double J_1_0 = A_1_0*Gram_0_0[l];
            const double J_1_1 = sJ_0;
            const double sJ2_0 = J_0_1*J_1_0;
            const double J2_0_0 = (J_0_0*J_0_0) + sJ2_0;
            const double J2_0_1 = J_0_0*J_0_1 + J_0_1*J_1_1;
            const double J2_1_0 = J_0_0*J_1_0 + J_1_0*J_1_1;
            const double J2_1_1 = (J_1_1*J_1_1) + sJ2_0;
            const double sNu_0 = J_0_0 + 1.0;
            const double sNu_1 = (1.0/2.0)*J2_0_0;
            const double sNu_2 = (1.0/2.0)*J2_1_1;
            const double sNu_3 = sNu_1 - sNu_2 + 1.0;
            const double sNu_4 = J_1_1 + 1.0;
            const double sNu_5 = -sNu_1 + sNu_2 + 1.0;
            const double Nu_0_0 = J2_0_1*J_1_0 + sNu_0*sNu_3;
            const double Nu_0_1 = J2_0_1*sNu_4 + J_0_1*sNu_3;
            const double Nu_1_0 = J2_1_0*sNu_0 + J_1_0*sNu_5;
            const double Nu_1_1 = J2_1_0*J_0_1 + sNu_4*sNu_5;
            const double sN_0 = (1.0/(-1.0/4.0*(J2_0_0*J2_0_0) - 1.0/2.0*J2_0_0 - 1.0/2.0*J2_0_1*J2_1_0 - 1.0/4.0*(J2_1_1*J2_1_1) - 1.0/2.0*J2_1_1 + (1.0/8.0)*((J2_0_0 + J2_1_1)*(J2_0_0 + J2_1_1)) + 1.0));
            N_0_0[l] = Nu_0_0*sN_0;
            N_0_1[l] = Nu_0_1*sN_0;
            N_1_0[l] = Nu_1_0*sN_0;
            N_1_1[l] = Nu_1_1*sN_0;
            P_0_0[l] = 2.0*N_0_0[l] - 1.0;
            P_0_1[l] = 2.0*N_0_1[l];
            P_1_0[l] = 2.0*N_1_0[l];
            P_1_1[l] = 2.0*N_1_1[l] - 1.0;
            R_0_0[l] = -J_0_0*N_0_0[l] - J_0_1*N_1_0[l] + N_0_0[l] - 1.0;
            R_0_1[l] = -J_0_0*N_0_1[l] - J_0_1*N_1_1[l] + N_0_1[l];
            R_1_0[l] = -J_1_0*N_0_0[l] - J_1_1*N_1_0[l] + N_1_0[l];
            R_1_1[l] = -J_1_0*N_0_1[l] - J_1_1*N_1_1[l] + N_1_1[l] - 1.0;
        }
        for (int l = 0; l < nl; l++) {
            Gram[(int64_t)(b0 + l)*4 + 0] = Gram_0_0[l];
            Gram[(int64_t)(b0 + l)*4 + 1] = Gram_0_1[l];
            Gram[(int64_t)(b0 + l)*4 + 2] = Gram_0_1[l];
            Gram[(int64_t)(b0 + l)*4 + 3] = Gram_1_1[l];
        }
        for (int l = 0; l < nl; l++) {
            N[(int64_t)(b0 + l)*4 + 0] = N_0_0[l];
            N[(int64_t)(b0 + l)*4 + 1] = N_0_1[l];
            N[(int64_t)(b0 + l)*4 + 2] = N_1_0[l];
            N[(int64_t)(b0 + l)*4 + 3] = N_1_1[l];
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            a = fabs(R_0_0[l]); if (a > m || a != a) m = a;
            a = fabs(R_0_1[l]); if (a > m || a != a) m = a;
            a = fabs(R_1_0[l]); if (a > m || a != a) m = a;
            a = fabs(R_1_1[l]); if (a > m || a != a) m = a;
            R[b0 + l] = m;
        }
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            if (nchunks > 1) {
                const real_t *src_x[LANES];
                for (int l = 0; l < LANES; l++) {
                    const int64_t bl = b0 + (l < nl ? l : nl - 1);
                    src_x[l] = x + (bl*T + t0)*2;
                }
                for (int64_t tt = 0; tt < nt*2; tt++)
                    for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            }
            for (int64_t tt = 0; tt < nt; tt++) {
                for (int l = 0; l < LANES; l++) {
                    row_y[0][l] = P_0_0[l]*tile_x[(0 + 2*tt)*LANES + l] + P_1_0[l]*tile_x[(1 + 2*tt)*LANES + l];
                    row_y[1][l] = P_0_1[l]*tile_x[(0 + 2*tt)*LANES + l] + P_1_1[l]*tile_x[(1 + 2*tt)*LANES + l];
                }
                for (int l = 0; l < nl; l++) {
                    y[((int64_t)(b0 + l)*T + t0 + tt)*2 + 0] = (real_t)(row_y[0][l]);
                    y[((int64_t)(b0 + l)*T + t0 + tt)*2 + 1] = (real_t)(row_y[1][l]);
                }
            }
        }
    }
}

/* The closed-form Gram layer's backward for d <= 4: x_bar = y_bar P^T + x H and the per-sample Gram M_bar (A_bar is the skew part of its sum over the batch), from x, y_bar and the forward's N. */
void GEOATTN_NAME(vp_gram_bwd_d2)(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy, const double *restrict N, const double *restrict A, real_t *restrict gx, double *restrict gA)
{
    typedef double geoattn_lanes_t __attribute__((vector_size(LANES*sizeof(double)), aligned(8), may_alias));
    const double A_1_0 = A[2];
    double tile_x[TOKEN_CHUNK*2*LANES];
    double tile_Gy[TOKEN_CHUNK*2*LANES];
    double N_0_0[LANES];
    double N_0_1[LANES];
    double N_1_0[LANES];
    double N_1_1[LANES];
    double Gram_0_0[LANES];
    double Gram_0_1[LANES];
    double Gram_1_1[LANES];
    double Pbar_0_0[LANES];
    double Pbar_0_1[LANES];
    double Pbar_1_0[LANES];
    double Pbar_1_1[LANES];
    double P_0_0[LANES];
    double P_0_1[LANES];
    double P_1_0[LANES];
    double P_1_1[LANES];
    double H_0_0[LANES];
    double H_0_1[LANES];
    double H_1_1[LANES];
    double gA_0_0[LANES];
    double gA_0_1[LANES];
    double gA_1_0[LANES];
    double gA_1_1[LANES];
    double row_gx[2][LANES];
    const int64_t nchunks = (T + TOKEN_CHUNK - 1)/TOKEN_CHUNK;
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            N_0_0[l] = N[(int64_t)bl*4 + 0];
            N_0_1[l] = N[(int64_t)bl*4 + 1];
            N_1_0[l] = N[(int64_t)bl*4 + 2];
            N_1_1[l] = N[(int64_t)bl*4 + 3];
        }
        for (int l = 0; l < LANES; l++) Gram_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_1_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_1_1[l] = 0.0;
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            const real_t *src_x[LANES];
            const real_t *src_Gy[LANES];
            for (int l = 0; l < LANES; l++) {
                const int64_t bl = b0 + (l < nl ? l : nl - 1);
                src_x[l] = x + (bl*T + t0)*2;
                src_Gy[l] = Gy + (bl*T + t0)*2;
            }
            for (int64_t tt = 0; tt < nt*2; tt++)
                for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            for (int64_t tt = 0; tt < nt*2; tt++)
                for (int l = 0; l < LANES; l++) tile_Gy[tt*LANES + l] = (double)src_Gy[l][tt];
            #if GEOATTN_VREGS >= 32
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Pbar_0_0;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Pbar_0_1;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Pbar_1_0;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Pbar_1_1;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 2*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 2*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 2*tt)*LANES);
                    const geoattn_lanes_t v_Gy_1 = *(const geoattn_lanes_t *)(tile_Gy + (1 + 2*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + (v_x_1*v_x_1);
                    acc3 = acc3 + v_Gy_0*v_x_0;
                    acc4 = acc4 + v_Gy_1*v_x_0;
                    acc5 = acc5 + v_Gy_0*v_x_1;
                    acc6 = acc6 + v_Gy_1*v_x_1;
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_1_1 = acc2;
                *(geoattn_lanes_t *)Pbar_0_0 = acc3;
                *(geoattn_lanes_t *)Pbar_0_1 = acc4;
                *(geoattn_lanes_t *)Pbar_1_0 = acc5;
                *(geoattn_lanes_t *)Pbar_1_1 = acc6;
            }
            #else
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Pbar_0_0;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Pbar_0_1;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Pbar_1_0;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Pbar_1_1;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 2*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 2*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 2*tt)*LANES);
                    const geoattn_lanes_t v_Gy_1 = *(const geoattn_lanes_t *)(tile_Gy + (1 + 2*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + (v_x_1*v_x_1);
                    acc3 = acc3 + v_Gy_0*v_x_0;
                    acc4 = acc4 + v_Gy_1*v_x_0;
                    acc5 = acc5 + v_Gy_0*v_x_1;
                    acc6 = acc6 + v_Gy_1*v_x_1;
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_1_1 = acc2;
                *(geoattn_lanes_t *)Pbar_0_0 = acc3;
                *(geoattn_lanes_t *)Pbar_0_1 = acc4;
                *(geoattn_lanes_t *)Pbar_1_0 = acc5;
                *(geoattn_lanes_t *)Pbar_1_1 = acc6;
            }
            #endif
        }
        for (int l = 0; l < LANES; l++) {
            P_0_0[l] = 2.0*N_0_0[l] - 1.0;
            P_0_1[l] = 2.0*N_0_1[l];
            P_1_0[l] = 2.0*N_1_0[l];
            P_1_1[l] = 2.0*N_1_1[l] - 1.0;
            const double sMbar_0 = 2.0*N_0_0[l]*Pbar_0_0[l] + 2.0*N_0_1[l]*Pbar_0_1[l];
            const double sMbar_1 = 2.0*N_0_0[l]*Pbar_1_0[l] + 2.0*N_0_1[l]*Pbar_1_1[l];
            const double sMbar_2 = 2.0*N_1_0[l]*Pbar_0_0[l] + 2.0*N_1_1[l]*Pbar_0_1[l];
            const double sMbar_3 = 2.0*N_1_0[l]*Pbar_1_0[l] + 2.0*N_1_1[l]*Pbar_1_1[l];
            const double Mbar_0_0 = -N_0_0[l]*sMbar_0 - N_1_0[l]*sMbar_1;
            const double Mbar_0_1 = -N_0_1[l]*sMbar_0 - N_1_1[l]*sMbar_1;
            const double Mbar_1_0 = -N_0_0[l]*sMbar_2 - N_1_0[l]*sMbar_3;
            const double Mbar_1_1 = -N_0_1[l]*sMbar_2 - N_1_1[l]*sMbar_3;
            const double sH_0 = 2.0*A_1_0;
            H_0_0[l] = -Mbar_0_1*sH_0;
            H_0_1[l] = A_1_0*Mbar_0_0 - A_1_0*Mbar_1_1;
            H_1_1[l] = Mbar_1_0*sH_0;
            gA_0_0[l] = Gram_0_0[l]*Mbar_0_0 + Gram_0_1[l]*Mbar_1_0;
            gA_0_1[l] = Gram_0_0[l]*Mbar_0_1 + Gram_0_1[l]*Mbar_1_1;
            gA_1_0[l] = Gram_0_1[l]*Mbar_0_0 + Gram_1_1[l]*Mbar_1_0;
            gA_1_1[l] = Gram_0_1[l]*Mbar_0_1 + Gram_1_1[l]*Mbar_1_1;
        }
        for (int l = 0; l < nl; l++) {
            gA[(int64_t)(b0 + l)*4 + 0] = gA_0_0[l];
            gA[(int64_t)(b0 + l)*4 + 1] = gA_0_1[l];
            gA[(int64_t)(b0 + l)*4 + 2] = gA_1_0[l];
            gA[(int64_t)(b0 + l)*4 + 3] = gA_1_1[l];
        }
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            if (nchunks > 1) {
                const real_t *src_x[LANES];
                const real_t *src_Gy[LANES];
                for (int l = 0; l < LANES; l++) {
                    const int64_t bl = b0 + (l < nl ? l : nl - 1);
                    src_x[l] = x + (bl*T + t0)*2;
                    src_Gy[l] = Gy + (bl*T + t0)*2;
                }
                for (int64_t tt = 0; tt < nt*2; tt++)
                    for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
                for (int64_t tt = 0; tt < nt*2; tt++)
                    for (int l = 0; l < LANES; l++) tile_Gy[tt*LANES + l] = (double)src_Gy[l][tt];
            }
            for (int64_t tt = 0; tt < nt; tt++) {
                for (int l = 0; l < LANES; l++) {
                    row_gx[0][l] = tile_Gy[(0 + 2*tt)*LANES + l]*P_0_0[l] + tile_Gy[(1 + 2*tt)*LANES + l]*P_0_1[l] + H_0_0[l]*tile_x[(0 + 2*tt)*LANES + l] + H_0_1[l]*tile_x[(1 + 2*tt)*LANES + l];
                    row_gx[1][l] = tile_Gy[(0 + 2*tt)*LANES + l]*P_1_0[l] + tile_Gy[(1 + 2*tt)*LANES + l]*P_1_1[l] + H_0_1[l]*tile_x[(0 + 2*tt)*LANES + l] + H_1_1[l]*tile_x[(1 + 2*tt)*LANES + l];
                }
                for (int l = 0; l < nl; l++) {
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*2 + 0] = (real_t)(row_gx[0][l]);
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*2 + 1] = (real_t)(row_gx[1][l]);
                }
            }
        }
    }
}

/* Cayley(C) = I + 2 (C^2 - C)/(1 - Tr(C^2)/2) of T x T matrices with T <= 3 (T renamed d), with the largest entries of C + C^T and of C (the caller's skew check: the form holds for skew C only). */
void GEOATTN_NAME(cayley_small_fwd_d2)(int64_t B, int64_t T, const real_t *restrict C, real_t *restrict Lam, double *restrict Skew, double *restrict Size)
{
    double C_0_0[LANES];
    double C_0_1[LANES];
    double C_1_0[LANES];
    double C_1_1[LANES];
    double Lam_0_0[LANES];
    double Lam_0_1[LANES];
    double Lam_1_0[LANES];
    double Lam_1_1[LANES];
    double Skew_0_0[LANES];
    double Skew_0_1[LANES];
    double Skew_1_1[LANES];
    double Size_0_0[LANES];
    double Size_0_1[LANES];
    double Size_1_0[LANES];
    double Size_1_1[LANES];
    (void)T;  /* no token inputs */
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            C_0_0[l] = (double)C[(int64_t)bl*4 + 0];
            C_0_1[l] = (double)C[(int64_t)bl*4 + 1];
            C_1_0[l] = (double)C[(int64_t)bl*4 + 2];
            C_1_1[l] = (double)C[(int64_t)bl*4 + 3];
        }
        for (int l = 0; l < LANES; l++) {
            const double sC2_0 = C_0_1[l]*C_1_0[l];
            const double C2_0_0 = (C_0_0[l]*C_0_0[l]) + sC2_0;
            const double C2_0_1 = C_0_0[l]*C_0_1[l] + C_0_1[l]*C_1_1[l];
            const double C2_1_0 = C_0_0[l]*C_1_0[l] + C_1_0[l]*C_1_1[l];
            const double C2_1_1 = (C_1_1[l]*C_1_1[l]) + sC2_0;
            const double sLam_0 = 2.0/(-1.0/2.0*C2_0_0 - 1.0/2.0*C2_1_1 + 1.0);
            Lam_0_0[l] = sLam_0*(C2_0_0 - C_0_0[l]) + 1.0;
            Lam_0_1[l] = sLam_0*(C2_0_1 - C_0_1[l]);
            Lam_1_0[l] = sLam_0*(C2_1_0 - C_1_0[l]);
            Lam_1_1[l] = sLam_0*(C2_1_1 - C_1_1[l]) + 1.0;
            Skew_0_0[l] = 2.0*C_0_0[l];
            Skew_0_1[l] = C_0_1[l] + C_1_0[l];
            Skew_1_1[l] = 2.0*C_1_1[l];
            Size_0_0[l] = C_0_0[l];
            Size_0_1[l] = C_0_1[l];
            Size_1_0[l] = C_1_0[l];
            Size_1_1[l] = C_1_1[l];
        }
        for (int l = 0; l < nl; l++) {
            Lam[(int64_t)(b0 + l)*4 + 0] = (real_t)(Lam_0_0[l]);
            Lam[(int64_t)(b0 + l)*4 + 1] = (real_t)(Lam_0_1[l]);
            Lam[(int64_t)(b0 + l)*4 + 2] = (real_t)(Lam_1_0[l]);
            Lam[(int64_t)(b0 + l)*4 + 3] = (real_t)(Lam_1_1[l]);
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            a = fabs(Skew_0_0[l]); if (a > m || a != a) m = a;
            a = fabs(Skew_0_1[l]); if (a > m || a != a) m = a;
            a = fabs(Skew_1_1[l]); if (a > m || a != a) m = a;
            Skew[b0 + l] = m;
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            a = fabs(Size_0_0[l]); if (a > m || a != a) m = a;
            a = fabs(Size_0_1[l]); if (a > m || a != a) m = a;
            a = fabs(Size_1_0[l]); if (a > m || a != a) m = a;
            a = fabs(Size_1_1[l]); if (a > m || a != a) m = a;
            Size[b0 + l] = m;
        }
    }
}

/* The Cayley transform's vector-Jacobian product -1/2 (I + Lam^T) G (I + Lam^T) from the output Lam, for T <= 3 (T renamed d). */
void GEOATTN_NAME(cayley_vjp_d2)(int64_t B, int64_t T, const real_t *restrict Lam, const real_t *restrict G, real_t *restrict gC)
{
    double Lam_0_0[LANES];
    double Lam_0_1[LANES];
    double Lam_1_0[LANES];
    double Lam_1_1[LANES];
    double G_0_0[LANES];
    double G_0_1[LANES];
    double G_1_0[LANES];
    double G_1_1[LANES];
    double gC_0_0[LANES];
    double gC_0_1[LANES];
    double gC_1_0[LANES];
    double gC_1_1[LANES];
    (void)T;  /* no token inputs */
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            Lam_0_0[l] = (double)Lam[(int64_t)bl*4 + 0];
            Lam_0_1[l] = (double)Lam[(int64_t)bl*4 + 1];
            Lam_1_0[l] = (double)Lam[(int64_t)bl*4 + 2];
            Lam_1_1[l] = (double)Lam[(int64_t)bl*4 + 3];
            G_0_0[l] = (double)G[(int64_t)bl*4 + 0];
            G_0_1[l] = (double)G[(int64_t)bl*4 + 1];
            G_1_0[l] = (double)G[(int64_t)bl*4 + 2];
            G_1_1[l] = (double)G[(int64_t)bl*4 + 3];
        }
        for (int l = 0; l < LANES; l++) {
            const double P_0_0 = Lam_0_0[l] + 1.0;
            const double P_0_1 = Lam_1_0[l];
            const double P_1_0 = Lam_0_1[l];
            const double P_1_1 = Lam_1_1[l] + 1.0;
            const double sgC_0 = (1.0/2.0)*G_0_0[l]*P_0_0 + (1.0/2.0)*G_1_0[l]*P_0_1;
            const double sgC_1 = (1.0/2.0)*G_0_1[l]*P_0_0 + (1.0/2.0)*G_1_1[l]*P_0_1;
            const double sgC_2 = (1.0/2.0)*G_0_0[l]*P_1_0 + (1.0/2.0)*G_1_0[l]*P_1_1;
            const double sgC_3 = (1.0/2.0)*G_0_1[l]*P_1_0 + (1.0/2.0)*G_1_1[l]*P_1_1;
            gC_0_0[l] = -P_0_0*sgC_0 - P_1_0*sgC_1;
            gC_0_1[l] = -P_0_1*sgC_0 - P_1_1*sgC_1;
            gC_1_0[l] = -P_0_0*sgC_2 - P_1_0*sgC_3;
            gC_1_1[l] = -P_0_1*sgC_2 - P_1_1*sgC_3;
        }
        for (int l = 0; l < nl; l++) {
            gC[(int64_t)(b0 + l)*4 + 0] = (real_t)(gC_0_0[l]);
            gC[(int64_t)(b0 + l)*4 + 1] = (real_t)(gC_0_1[l]);
            gC[(int64_t)(b0 + l)*4 + 2] = (real_t)(gC_1_0[l]);
            gC[(int64_t)(b0 + l)*4 + 3] = (real_t)(gC_1_1[l]);
        }
    }
}

#endif  /* d = 2 */

#if GEOATTN_D == 3

/* The closed-form Gram layer's forward for d <= 4: Gram = x^T x, N = (I + Gram A)^{-T} in closed form, the largest entry of its residual R = (I + Gram A)^T N - I, and y = x (2N - I). */
void GEOATTN_NAME(vp_gram_fwd_d3)(int64_t B, int64_t T, const real_t *restrict x, const double *restrict A, real_t *restrict y, double *restrict Gram, double *restrict N, double *restrict R)
{
    typedef double geoattn_lanes_t __attribute__((vector_size(LANES*sizeof(double)), aligned(8), may_alias));
    const double A_1_0 = A[3];
    const double A_2_0 = A[6];
    const double A_2_1 = A[7];
    double tile_x[TOKEN_CHUNK*3*LANES];
    double Gram_0_0[LANES];
    double Gram_0_1[LANES];
    double Gram_0_2[LANES];
    double Gram_1_1[LANES];
    double Gram_1_2[LANES];
    double Gram_2_2[LANES];
    double N_0_0[LANES];
    double N_0_1[LANES];
    double N_0_2[LANES];
    double N_1_0[LANES];
    double N_1_1[LANES];
    double N_1_2[LANES];
    double N_2_0[LANES];
    double N_2_1[LANES];
    double N_2_2[LANES];
    double P_0_0[LANES];
    double P_0_1[LANES];
    double P_0_2[LANES];
    double P_1_0[LANES];
    double P_1_1[LANES];
    double P_1_2[LANES];
    double P_2_0[LANES];
    double P_2_1[LANES];
    double P_2_2[LANES];
    double R_0_0[LANES];
    double R_0_1[LANES];
    double R_0_2[LANES];
    double R_1_0[LANES];
    double R_1_1[LANES];
    double R_1_2[LANES];
    double R_2_0[LANES];
    double R_2_1[LANES];
    double R_2_2[LANES];
    double row_y[3][LANES];
    const int64_t nchunks = (T + TOKEN_CHUNK - 1)/TOKEN_CHUNK;
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) Gram_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_2_2[l] = 0.0;
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            const real_t *src_x[LANES];
            for (int l = 0; l < LANES; l++) {
                const int64_t bl = b0 + (l < nl ? l : nl - 1);
                src_x[l] = x + (bl*T + t0)*3;
            }
            for (int64_t tt = 0; tt < nt*3; tt++)
                for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            #if GEOATTN_VREGS >= 32
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_0_2;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Gram_1_2;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Gram_2_2;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 3*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + v_x_0*v_x_2;
                    acc3 = acc3 + (v_x_1*v_x_1);
                    acc4 = acc4 + v_x_1*v_x_2;
                    acc5 = acc5 + (v_x_2*v_x_2);
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_0_2 = acc2;
                *(geoattn_lanes_t *)Gram_1_1 = acc3;
                *(geoattn_lanes_t *)Gram_1_2 = acc4;
                *(geoattn_lanes_t *)Gram_2_2 = acc5;
            }
            #else
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_0_2;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Gram_1_2;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Gram_2_2;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 3*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + v_x_0*v_x_2;
                    acc3 = acc3 + (v_x_1*v_x_1);
                    acc4 = acc4 + v_x_1*v_x_2;
                    acc5 = acc5 + (v_x_2*v_x_2);
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_0_2 = acc2;
                *(geoattn_lanes_t *)Gram_1_1 = acc3;
                *(geoattn_lanes_t *)Gram_1_2 = acc4;
                *(geoattn_lanes_t *)Gram_2_2 = acc5;
            }
            #endif
        }
        for (int l = 0; l < LANES; l++) {
            const double sJ_0 = A_1_0*Gram_0_1[l];
            const double sJ_1 = A_2_0*Gram_0_2[l];
            const double sJ_2 = A_2_1*Gram_1_2[l];
            const double J_0_0 = -sJ_0 - sJ_1;
            const double J_0_1 = -A_1_0*Gram_1_1[l] - A_2_0*Gram_1_2[l];
            const double J_0_2 = -A_1_0*Gram_1_2[l] - A_2_0*Gram_2_2[l];
            const double J_1_0 = A_1_0*Gram_0_0[l] - A_2_1*Gram_0_2[l];
            const double J_1_1 = sJ_0 - sJ_2;
            const double J_1_2 = A_1_0*Gram_0_2[l] - A_2_1*Gram_2_2[l];
            const double J_2_0 = A_2_0*Gram_0_0[l] + A_2_1*Gram_0_1[l];
            const double J_2_1 = A_2_0*Gram_0_1[l] + A_2_1*Gram_1_1[l];
            const double J_2_2 = sJ_1 + sJ_2;
            const double sJ2_0 = J_0_1*J_1_0;
            const double sJ2_1 = J_0_2*J_2_0;
            const double sJ2_2 = J_1_2*J_2_1;
            const double J2_0_0 = (J_0_0*J_0_0) + sJ2_0 + sJ2_1;
            const double J2_0_1 = J_0_0*J_0_1 + J_0_1*J_1_1 + J_0_2*J_2_1;
            const double J2_0_2 = J_0_0*J_0_2 + J_0_1*J_1_2 + J_0_2*J_2_2;
            const double J2_1_0 = J_0_0*J_1_0 + J_1_0*J_1_1 + J_1_2*J_2_0;
            const double J2_1_1 = (J_1_1*J_1_1) + sJ2_0 + sJ2_2;
            const double J2_1_2 = J_0_2*J_1_0 + J_1_1*J_1_2 + J_1_2*J_2_2;
            const double J2_2_0 = J_0_0*J_2_0 + J_1_0*J_2_1 + J_2_0*J_2_2;
            const double J2_2_1 = J_0_1*J_2_0 + J_1_1*J_2_1 + J_2_1*J_2_2;
            const double J2_2_2 = (J_2_2*J_2_2) + sJ2_1 + sJ2_2;
            const double sNu_0 = J_0_0 + 1.0;
            const double sNu_1 = (1.0/2.0)*J2_2_2;
            const double sNu_2 = -sNu_1;
            const double sNu_3 = (1.0/2.0)*J2_0_0;
            const double sNu_4 = (1.0/2.0)*J2_1_1;
            const double sNu_5 = sNu_3 - sNu_4;
            const double sNu_6 = sNu_2 + sNu_5 + 1.0;
            const double sNu_7 = J_1_1 + 1.0;
            const double sNu_8 = J_2_2 + 1.0;
            const double sNu_9 = -sNu_1 - sNu_5 + 1.0;
            const double sNu_10 = -sNu_2 - sNu_3 - sNu_4 + 1.0;
            const double Nu_0_0 = J2_0_1*J_1_0 + J2_0_2*J_2_0 + sNu_0*sNu_6;
            const double Nu_0_1 = J2_0_1*sNu_7 + J2_0_2*J_2_1 + J_0_1*sNu_6;
            const double Nu_0_2 = J2_0_1*J_1_2 + J2_0_2*sNu_8 + J_0_2*sNu_6;
            const double Nu_1_0 = J2_1_0*sNu_0 + J2_1_2*J_2_0 + J_1_0*sNu_9;
            const double Nu_1_1 = J2_1_0*J_0_1 + J2_1_2*J_2_1 + sNu_7*sNu_9;
            const double Nu_1_2 = J2_1_0*J_0_2 + J2_1_2*sNu_8 + J_1_2*sNu_9;
            const double Nu_2_0 = J2_2_0*sNu_0 + J2_2_1*J_1_0 + J_2_0*sNu_10;
            const double Nu_2_1 = J2_2_0*J_0_1 + J2_2_1*sNu_7 + J_2_1*sNu_10;
            const double Nu_2_2 = J2_2_0*J_0_2 + J2_2_1*J_1_2 + sNu_10*sNu_8;
            const double sN_0 = (1.0/(-1.0/4.0*(J2_0_0*J2_0_0) - 1.0/2.0*J2_0_0 - 1.0/2.0*J2_0_1*J2_1_0 - 1.0/2.0*J2_0_2*J2_2_0 - 1.0/4.0*(J2_1_1*J2_1_1) - 1.0/2.0*J2_1_1 - 1.0/2.0*J2_1_2*J2_2_1 - 1.0/4.0*(J2_2_2*J2_2_2) - 1.0/2.0*J2_2_2 + (1.0/8.0)*((J2_0_0 + J2_1_1 + J2_2_2)*(J2_0_0 + J2_1_1 + J2_2_2)) + 1.0));
            N_0_0[l] = Nu_0_0*sN_0;
            N_0_1[l] = Nu_0_1*sN_0;
            N_0_2[l] = Nu_0_2*sN_0;
            N_1_0[l] = Nu_1_0*sN_0;
            N_1_1[l] = Nu_1_1*sN_0;
            N_1_2[l] = Nu_1_2*sN_0;
            N_2_0[l] = Nu_2_0*sN_0;
            N_2_1[l] = Nu_2_1*sN_0;
            N_2_2[l] = Nu_2_2*sN_0;
            P_0_0[l] = 2.0*N_0_0[l] - 1.0;
            P_0_1[l] = 2.0*N_0_1[l];
            P_0_2[l] = 2.0*N_0_2[l];
            P_1_0[l] = 2.0*N_1_0[l];
            P_1_1[l] = 2.0*N_1_1[l] - 1.0;
            P_1_2[l] = 2.0*N_1_2[l];
            P_2_0[l] = 2.0*N_2_0[l];
            P_2_1[l] = 2.0*N_2_1[l];
            P_2_2[l] = 2.0*N_2_2[l] - 1.0;
            R_0_0[l] = -J_0_0*N_0_0[l] - J_0_1*N_1_0[l] - J_0_2*N_2_0[l] + N_0_0[l] - 1.0;
            R_0_1[l] = -J_0_0*N_0_1[l] - J_0_1*N_1_1[l] - J_0_2*N_2_1[l] + N_0_1[l];
            R_0_2[l] = -J_0_0*N_0_2[l] - J_0_1*N_1_2[l] - J_0_2*N_2_2[l] + N_0_2[l];
            R_1_0[l] = -J_1_0*N_0_0[l] - J_1_1*N_1_0[l] - J_1_2*N_2_0[l] + N_1_0[l];
            R_1_1[l] = -J_1_0*N_0_1[l] - J_1_1*N_1_1[l] - J_1_2*N_2_1[l] + N_1_1[l] - 1.0;
            R_1_2[l] = -J_1_0*N_0_2[l] - J_1_1*N_1_2[l] - J_1_2*N_2_2[l] + N_1_2[l];
            R_2_0[l] = -J_2_0*N_0_0[l] - J_2_1*N_1_0[l] - J_2_2*N_2_0[l] + N_2_0[l];
            R_2_1[l] = -J_2_0*N_0_1[l] - J_2_1*N_1_1[l] - J_2_2*N_2_1[l] + N_2_1[l];
            R_2_2[l] = -J_2_0*N_0_2[l] - J_2_1*N_1_2[l] - J_2_2*N_2_2[l] + N_2_2[l] - 1.0;
        }
        for (int l = 0; l < nl; l++) {
            Gram[(int64_t)(b0 + l)*9 + 0] = Gram_0_0[l];
            Gram[(int64_t)(b0 + l)*9 + 1] = Gram_0_1[l];
            Gram[(int64_t)(b0 + l)*9 + 2] = Gram_0_2[l];
            Gram[(int64_t)(b0 + l)*9 + 3] = Gram_0_1[l];
            Gram[(int64_t)(b0 + l)*9 + 4] = Gram_1_1[l];
            Gram[(int64_t)(b0 + l)*9 + 5] = Gram_1_2[l];
            Gram[(int64_t)(b0 + l)*9 + 6] = Gram_0_2[l];
            Gram[(int64_t)(b0 + l)*9 + 7] = Gram_1_2[l];
            Gram[(int64_t)(b0 + l)*9 + 8] = Gram_2_2[l];
        }
        for (int l = 0; l < nl; l++) {
            N[(int64_t)(b0 + l)*9 + 0] = N_0_0[l];
            N[(int64_t)(b0 + l)*9 + 1] = N_0_1[l];
            N[(int64_t)(b0 + l)*9 + 2] = N_0_2[l];
            N[(int64_t)(b0 + l)*9 + 3] = N_1_0[l];
            N[(int64_t)(b0 + l)*9 + 4] = N_1_1[l];
            N[(int64_t)(b0 + l)*9 + 5] = N_1_2[l];
            N[(int64_t)(b0 + l)*9 + 6] = N_2_0[l];
            N[(int64_t)(b0 + l)*9 + 7] = N_2_1[l];
            N[(int64_t)(b0 + l)*9 + 8] = N_2_2[l];
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            a = fabs(R_0_0[l]); if (a > m || a != a) m = a;
            a = fabs(R_0_1[l]); if (a > m || a != a) m = a;
            a = fabs(R_0_2[l]); if (a > m || a != a) m = a;
            a = fabs(R_1_0[l]); if (a > m || a != a) m = a;
            a = fabs(R_1_1[l]); if (a > m || a != a) m = a;
            a = fabs(R_1_2[l]); if (a > m || a != a) m = a;
            a = fabs(R_2_0[l]); if (a > m || a != a) m = a;
            a = fabs(R_2_1[l]); if (a > m || a != a) m = a;
            a = fabs(R_2_2[l]); if (a > m || a != a) m = a;
            R[b0 + l] = m;
        }
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            if (nchunks > 1) {
                const real_t *src_x[LANES];
                for (int l = 0; l < LANES; l++) {
                    const int64_t bl = b0 + (l < nl ? l : nl - 1);
                    src_x[l] = x + (bl*T + t0)*3;
                }
                for (int64_t tt = 0; tt < nt*3; tt++)
                    for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            }
            for (int64_t tt = 0; tt < nt; tt++) {
                for (int l = 0; l < LANES; l++) {
                    row_y[0][l] = P_0_0[l]*tile_x[(0 + 3*tt)*LANES + l] + P_1_0[l]*tile_x[(1 + 3*tt)*LANES + l] + P_2_0[l]*tile_x[(2 + 3*tt)*LANES + l];
                    row_y[1][l] = P_0_1[l]*tile_x[(0 + 3*tt)*LANES + l] + P_1_1[l]*tile_x[(1 + 3*tt)*LANES + l] + P_2_1[l]*tile_x[(2 + 3*tt)*LANES + l];
                    row_y[2][l] = P_0_2[l]*tile_x[(0 + 3*tt)*LANES + l] + P_1_2[l]*tile_x[(1 + 3*tt)*LANES + l] + P_2_2[l]*tile_x[(2 + 3*tt)*LANES + l];
                }
                for (int l = 0; l < nl; l++) {
                    y[((int64_t)(b0 + l)*T + t0 + tt)*3 + 0] = (real_t)(row_y[0][l]);
                    y[((int64_t)(b0 + l)*T + t0 + tt)*3 + 1] = (real_t)(row_y[1][l]);
                    y[((int64_t)(b0 + l)*T + t0 + tt)*3 + 2] = (real_t)(row_y[2][l]);
                }
            }
        }
    }
}

/* The closed-form Gram layer's backward for d <= 4: x_bar = y_bar P^T + x H and the per-sample Gram M_bar (A_bar is the skew part of its sum over the batch), from x, y_bar and the forward's N. */
void GEOATTN_NAME(vp_gram_bwd_d3)(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy, const double *restrict N, const double *restrict A, real_t *restrict gx, double *restrict gA)
{
    typedef double geoattn_lanes_t __attribute__((vector_size(LANES*sizeof(double)), aligned(8), may_alias));
    const double A_1_0 = A[3];
    const double A_2_0 = A[6];
    const double A_2_1 = A[7];
    double tile_x[TOKEN_CHUNK*3*LANES];
    double tile_Gy[TOKEN_CHUNK*3*LANES];
    double N_0_0[LANES];
    double N_0_1[LANES];
    double N_0_2[LANES];
    double N_1_0[LANES];
    double N_1_1[LANES];
    double N_1_2[LANES];
    double N_2_0[LANES];
    double N_2_1[LANES];
    double N_2_2[LANES];
    double Gram_0_0[LANES];
    double Gram_0_1[LANES];
    double Gram_0_2[LANES];
    double Gram_1_1[LANES];
    double Gram_1_2[LANES];
    double Gram_2_2[LANES];
    double Pbar_0_0[LANES];
    double Pbar_0_1[LANES];
    double Pbar_0_2[LANES];
    double Pbar_1_0[LANES];
    double Pbar_1_1[LANES];
    double Pbar_1_2[LANES];
    double Pbar_2_0[LANES];
    double Pbar_2_1[LANES];
    double Pbar_2_2[LANES];
    double P_0_0[LANES];
    double P_0_1[LANES];
    double P_0_2[LANES];
    double P_1_0[LANES];
    double P_1_1[LANES];
    double P_1_2[LANES];
    double P_2_0[LANES];
    double P_2_1[LANES];
    double P_2_2[LANES];
    double H_0_0[LANES];
    double H_0_1[LANES];
    double H_0_2[LANES];
    double H_1_1[LANES];
    double H_1_2[LANES];
    double H_2_2[LANES];
    double gA_0_0[LANES];
    double gA_0_1[LANES];
    double gA_0_2[LANES];
    double gA_1_0[LANES];
    double gA_1_1[LANES];
    double gA_1_2[LANES];
    double gA_2_0[LANES];
    double gA_2_1[LANES];
    double gA_2_2[LANES];
    double row_gx[3][LANES];
    const int64_t nchunks = (T + TOKEN_CHUNK - 1)/TOKEN_CHUNK;
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            N_0_0[l] = N[(int64_t)bl*9 + 0];
            N_0_1[l] = N[(int64_t)bl*9 + 1];
            N_0_2[l] = N[(int64_t)bl*9 + 2];
            N_1_0[l] = N[(int64_t)bl*9 + 3];
            N_1_1[l] = N[(int64_t)bl*9 + 4];
            N_1_2[l] = N[(int64_t)bl*9 + 5];
            N_2_0[l] = N[(int64_t)bl*9 + 6];
            N_2_1[l] = N[(int64_t)bl*9 + 7];
            N_2_2[l] = N[(int64_t)bl*9 + 8];
        }
        for (int l = 0; l < LANES; l++) Gram_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_2_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_1_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_1_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_1_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_2_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_2_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_2_2[l] = 0.0;
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            const real_t *src_x[LANES];
            const real_t *src_Gy[LANES];
            for (int l = 0; l < LANES; l++) {
                const int64_t bl = b0 + (l < nl ? l : nl - 1);
                src_x[l] = x + (bl*T + t0)*3;
                src_Gy[l] = Gy + (bl*T + t0)*3;
            }
            for (int64_t tt = 0; tt < nt*3; tt++)
                for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            for (int64_t tt = 0; tt < nt*3; tt++)
                for (int l = 0; l < LANES; l++) tile_Gy[tt*LANES + l] = (double)src_Gy[l][tt];
            #if GEOATTN_VREGS >= 32
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_0_2;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Gram_1_2;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Gram_2_2;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Pbar_0_0;
                geoattn_lanes_t acc7 = *(const geoattn_lanes_t *)Pbar_0_1;
                geoattn_lanes_t acc8 = *(const geoattn_lanes_t *)Pbar_0_2;
                geoattn_lanes_t acc9 = *(const geoattn_lanes_t *)Pbar_1_0;
                geoattn_lanes_t acc10 = *(const geoattn_lanes_t *)Pbar_1_1;
                geoattn_lanes_t acc11 = *(const geoattn_lanes_t *)Pbar_1_2;
                geoattn_lanes_t acc12 = *(const geoattn_lanes_t *)Pbar_2_0;
                geoattn_lanes_t acc13 = *(const geoattn_lanes_t *)Pbar_2_1;
                geoattn_lanes_t acc14 = *(const geoattn_lanes_t *)Pbar_2_2;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 3*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 3*tt)*LANES);
                    const geoattn_lanes_t v_Gy_1 = *(const geoattn_lanes_t *)(tile_Gy + (1 + 3*tt)*LANES);
                    const geoattn_lanes_t v_Gy_2 = *(const geoattn_lanes_t *)(tile_Gy + (2 + 3*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + v_x_0*v_x_2;
                    acc3 = acc3 + (v_x_1*v_x_1);
                    acc4 = acc4 + v_x_1*v_x_2;
                    acc5 = acc5 + (v_x_2*v_x_2);
                    acc6 = acc6 + v_Gy_0*v_x_0;
                    acc7 = acc7 + v_Gy_1*v_x_0;
                    acc8 = acc8 + v_Gy_2*v_x_0;
                    acc9 = acc9 + v_Gy_0*v_x_1;
                    acc10 = acc10 + v_Gy_1*v_x_1;
                    acc11 = acc11 + v_Gy_2*v_x_1;
                    acc12 = acc12 + v_Gy_0*v_x_2;
                    acc13 = acc13 + v_Gy_1*v_x_2;
                    acc14 = acc14 + v_Gy_2*v_x_2;
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_0_2 = acc2;
                *(geoattn_lanes_t *)Gram_1_1 = acc3;
                *(geoattn_lanes_t *)Gram_1_2 = acc4;
                *(geoattn_lanes_t *)Gram_2_2 = acc5;
                *(geoattn_lanes_t *)Pbar_0_0 = acc6;
                *(geoattn_lanes_t *)Pbar_0_1 = acc7;
                *(geoattn_lanes_t *)Pbar_0_2 = acc8;
                *(geoattn_lanes_t *)Pbar_1_0 = acc9;
                *(geoattn_lanes_t *)Pbar_1_1 = acc10;
                *(geoattn_lanes_t *)Pbar_1_2 = acc11;
                *(geoattn_lanes_t *)Pbar_2_0 = acc12;
                *(geoattn_lanes_t *)Pbar_2_1 = acc13;
                *(geoattn_lanes_t *)Pbar_2_2 = acc14;
            }
            #else
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_0_2;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Gram_1_2;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Gram_2_2;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Pbar_0_0;
                geoattn_lanes_t acc7 = *(const geoattn_lanes_t *)Pbar_0_1;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 3*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 3*tt)*LANES);
                    const geoattn_lanes_t v_Gy_1 = *(const geoattn_lanes_t *)(tile_Gy + (1 + 3*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + v_x_0*v_x_2;
                    acc3 = acc3 + (v_x_1*v_x_1);
                    acc4 = acc4 + v_x_1*v_x_2;
                    acc5 = acc5 + (v_x_2*v_x_2);
                    acc6 = acc6 + v_Gy_0*v_x_0;
                    acc7 = acc7 + v_Gy_1*v_x_0;
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_0_2 = acc2;
                *(geoattn_lanes_t *)Gram_1_1 = acc3;
                *(geoattn_lanes_t *)Gram_1_2 = acc4;
                *(geoattn_lanes_t *)Gram_2_2 = acc5;
                *(geoattn_lanes_t *)Pbar_0_0 = acc6;
                *(geoattn_lanes_t *)Pbar_0_1 = acc7;
            }
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Pbar_0_2;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Pbar_1_0;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Pbar_1_1;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Pbar_1_2;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Pbar_2_0;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Pbar_2_1;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Pbar_2_2;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 3*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 3*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 3*tt)*LANES);
                    const geoattn_lanes_t v_Gy_1 = *(const geoattn_lanes_t *)(tile_Gy + (1 + 3*tt)*LANES);
                    const geoattn_lanes_t v_Gy_2 = *(const geoattn_lanes_t *)(tile_Gy + (2 + 3*tt)*LANES);
                    acc0 = acc0 + v_Gy_2*v_x_0;
                    acc1 = acc1 + v_Gy_0*v_x_1;
                    acc2 = acc2 + v_Gy_1*v_x_1;
                    acc3 = acc3 + v_Gy_2*v_x_1;
                    acc4 = acc4 + v_Gy_0*v_x_2;
                    acc5 = acc5 + v_Gy_1*v_x_2;
                    acc6 = acc6 + v_Gy_2*v_x_2;
                }
                *(geoattn_lanes_t *)Pbar_0_2 = acc0;
                *(geoattn_lanes_t *)Pbar_1_0 = acc1;
                *(geoattn_lanes_t *)Pbar_1_1 = acc2;
                *(geoattn_lanes_t *)Pbar_1_2 = acc3;
                *(geoattn_lanes_t *)Pbar_2_0 = acc4;
                *(geoattn_lanes_t *)Pbar_2_1 = acc5;
                *(geoattn_lanes_t *)Pbar_2_2 = acc6;
            }
            #endif
        }
        for (int l = 0; l < LANES; l++) {
            P_0_0[l] = 2.0*N_0_0[l] - 1.0;
            P_0_1[l] = 2.0*N_0_1[l];
            P_0_2[l] = 2.0*N_0_2[l];
            P_1_0[l] = 2.0*N_1_0[l];
            P_1_1[l] = 2.0*N_1_1[l] - 1.0;
            P_1_2[l] = 2.0*N_1_2[l];
            P_2_0[l] = 2.0*N_2_0[l];
            P_2_1[l] = 2.0*N_2_1[l];
            P_2_2[l] = 2.0*N_2_2[l] - 1.0;
            const double sMbar_0 = 2.0*N_0_0[l]*Pbar_0_0[l] + 2.0*N_0_1[l]*Pbar_0_1[l] + 2.0*N_0_2[l]*Pbar_0_2[l];
            const double sMbar_1 = 2.0*N_0_0[l]*Pbar_1_0[l] + 2.0*N_0_1[l]*Pbar_1_1[l] + 2.0*N_0_2[l]*Pbar_1_2[l];
            const double sMbar_2 = 2.0*N_0_0[l]*Pbar_2_0[l] + 2.0*N_0_1[l]*Pbar_2_1[l] + 2.0*N_0_2[l]*Pbar_2_2[l];
            const double sMbar_3 = 2.0*N_1_0[l]*Pbar_0_0[l] + 2.0*N_1_1[l]*Pbar_0_1[l] + 2.0*N_1_2[l]*Pbar_0_2[l];
            const double sMbar_4 = 2.0*N_1_0[l]*Pbar_1_0[l] + 2.0*N_1_1[l]*Pbar_1_1[l] + 2.0*N_1_2[l]*Pbar_1_2[l];
            const double sMbar_5 = 2.0*N_1_0[l]*Pbar_2_0[l] + 2.0*N_1_1[l]*Pbar_2_1[l] + 2.0*N_1_2[l]*Pbar_2_2[l];
            const double sMbar_6 = 2.0*N_2_0[l]*Pbar_0_0[l] + 2.0*N_2_1[l]*Pbar_0_1[l] + 2.0*N_2_2[l]*Pbar_0_2[l];
            const double sMbar_7 = 2.0*N_2_0[l]*Pbar_1_0[l] + 2.0*N_2_1[l]*Pbar_1_1[l] + 2.0*N_2_2[l]*Pbar_1_2[l];
            const double sMbar_8 = 2.0*N_2_0[l]*Pbar_2_0[l] + 2.0*N_2_1[l]*Pbar_2_1[l] + 2.0*N_2_2[l]*Pbar_2_2[l];
            const double Mbar_0_0 = -N_0_0[l]*sMbar_0 - N_1_0[l]*sMbar_1 - N_2_0[l]*sMbar_2;
            const double Mbar_0_1 = -N_0_1[l]*sMbar_0 - N_1_1[l]*sMbar_1 - N_2_1[l]*sMbar_2;
            const double Mbar_0_2 = -N_0_2[l]*sMbar_0 - N_1_2[l]*sMbar_1 - N_2_2[l]*sMbar_2;
            const double Mbar_1_0 = -N_0_0[l]*sMbar_3 - N_1_0[l]*sMbar_4 - N_2_0[l]*sMbar_5;
            const double Mbar_1_1 = -N_0_1[l]*sMbar_3 - N_1_1[l]*sMbar_4 - N_2_1[l]*sMbar_5;
            const double Mbar_1_2 = -N_0_2[l]*sMbar_3 - N_1_2[l]*sMbar_4 - N_2_2[l]*sMbar_5;
            const double Mbar_2_0 = -N_0_0[l]*sMbar_6 - N_1_0[l]*sMbar_7 - N_2_0[l]*sMbar_8;
            const double Mbar_2_1 = -N_0_1[l]*sMbar_6 - N_1_1[l]*sMbar_7 - N_2_1[l]*sMbar_8;
            const double Mbar_2_2 = -N_0_2[l]*sMbar_6 - N_1_2[l]*sMbar_7 - N_2_2[l]*sMbar_8;
            const double sH_0 = 2.0*A_1_0;
            const double sH_1 = 2.0*A_2_0;
            const double sH_2 = 2.0*A_2_1;
            H_0_0[l] = -Mbar_0_1*sH_0 - Mbar_0_2*sH_1;
            H_0_1[l] = A_1_0*Mbar_0_0 - A_1_0*Mbar_1_1 - A_2_0*Mbar_1_2 - A_2_1*Mbar_0_2;
            H_0_2[l] = -A_1_0*Mbar_2_1 + A_2_0*Mbar_0_0 - A_2_0*Mbar_2_2 + A_2_1*Mbar_0_1;
            H_1_1[l] = Mbar_1_0*sH_0 - Mbar_1_2*sH_2;
            H_1_2[l] = A_1_0*Mbar_2_0 + A_2_0*Mbar_1_0 + A_2_1*Mbar_1_1 - A_2_1*Mbar_2_2;
            H_2_2[l] = Mbar_2_0*sH_1 + Mbar_2_1*sH_2;
            gA_0_0[l] = Gram_0_0[l]*Mbar_0_0 + Gram_0_1[l]*Mbar_1_0 + Gram_0_2[l]*Mbar_2_0;
            gA_0_1[l] = Gram_0_0[l]*Mbar_0_1 + Gram_0_1[l]*Mbar_1_1 + Gram_0_2[l]*Mbar_2_1;
            gA_0_2[l] = Gram_0_0[l]*Mbar_0_2 + Gram_0_1[l]*Mbar_1_2 + Gram_0_2[l]*Mbar_2_2;
            gA_1_0[l] = Gram_0_1[l]*Mbar_0_0 + Gram_1_1[l]*Mbar_1_0 + Gram_1_2[l]*Mbar_2_0;
            gA_1_1[l] = Gram_0_1[l]*Mbar_0_1 + Gram_1_1[l]*Mbar_1_1 + Gram_1_2[l]*Mbar_2_1;
            gA_1_2[l] = Gram_0_1[l]*Mbar_0_2 + Gram_1_1[l]*Mbar_1_2 + Gram_1_2[l]*Mbar_2_2;
            gA_2_0[l] = Gram_0_2[l]*Mbar_0_0 + Gram_1_2[l]*Mbar_1_0 + Gram_2_2[l]*Mbar_2_0;
            gA_2_1[l] = Gram_0_2[l]*Mbar_0_1 + Gram_1_2[l]*Mbar_1_1 + Gram_2_2[l]*Mbar_2_1;
            gA_2_2[l] = Gram_0_2[l]*Mbar_0_2 + Gram_1_2[l]*Mbar_1_2 + Gram_2_2[l]*Mbar_2_2;
        }
        for (int l = 0; l < nl; l++) {
            gA[(int64_t)(b0 + l)*9 + 0] = gA_0_0[l];
            gA[(int64_t)(b0 + l)*9 + 1] = gA_0_1[l];
            gA[(int64_t)(b0 + l)*9 + 2] = gA_0_2[l];
            gA[(int64_t)(b0 + l)*9 + 3] = gA_1_0[l];
            gA[(int64_t)(b0 + l)*9 + 4] = gA_1_1[l];
            gA[(int64_t)(b0 + l)*9 + 5] = gA_1_2[l];
            gA[(int64_t)(b0 + l)*9 + 6] = gA_2_0[l];
            gA[(int64_t)(b0 + l)*9 + 7] = gA_2_1[l];
            gA[(int64_t)(b0 + l)*9 + 8] = gA_2_2[l];
        }
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            if (nchunks > 1) {
                const real_t *src_x[LANES];
                const real_t *src_Gy[LANES];
                for (int l = 0; l < LANES; l++) {
                    const int64_t bl = b0 + (l < nl ? l : nl - 1);
                    src_x[l] = x + (bl*T + t0)*3;
                    src_Gy[l] = Gy + (bl*T + t0)*3;
                }
                for (int64_t tt = 0; tt < nt*3; tt++)
                    for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
                for (int64_t tt = 0; tt < nt*3; tt++)
                    for (int l = 0; l < LANES; l++) tile_Gy[tt*LANES + l] = (double)src_Gy[l][tt];
            }
            for (int64_t tt = 0; tt < nt; tt++) {
                for (int l = 0; l < LANES; l++) {
                    row_gx[0][l] = tile_Gy[(0 + 3*tt)*LANES + l]*P_0_0[l] + tile_Gy[(1 + 3*tt)*LANES + l]*P_0_1[l] + tile_Gy[(2 + 3*tt)*LANES + l]*P_0_2[l] + H_0_0[l]*tile_x[(0 + 3*tt)*LANES + l] + H_0_1[l]*tile_x[(1 + 3*tt)*LANES + l] + H_0_2[l]*tile_x[(2 + 3*tt)*LANES + l];
                    row_gx[1][l] = tile_Gy[(0 + 3*tt)*LANES + l]*P_1_0[l] + tile_Gy[(1 + 3*tt)*LANES + l]*P_1_1[l] + tile_Gy[(2 + 3*tt)*LANES + l]*P_1_2[l] + H_0_1[l]*tile_x[(0 + 3*tt)*LANES + l] + H_1_1[l]*tile_x[(1 + 3*tt)*LANES + l] + H_1_2[l]*tile_x[(2 + 3*tt)*LANES + l];
                    row_gx[2][l] = tile_Gy[(0 + 3*tt)*LANES + l]*P_2_0[l] + tile_Gy[(1 + 3*tt)*LANES + l]*P_2_1[l] + tile_Gy[(2 + 3*tt)*LANES + l]*P_2_2[l] + H_0_2[l]*tile_x[(0 + 3*tt)*LANES + l] + H_1_2[l]*tile_x[(1 + 3*tt)*LANES + l] + H_2_2[l]*tile_x[(2 + 3*tt)*LANES + l];
                }
                for (int l = 0; l < nl; l++) {
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*3 + 0] = (real_t)(row_gx[0][l]);
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*3 + 1] = (real_t)(row_gx[1][l]);
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*3 + 2] = (real_t)(row_gx[2][l]);
                }
            }
        }
    }
}

/* Cayley(C) = I + 2 (C^2 - C)/(1 - Tr(C^2)/2) of T x T matrices with T <= 3 (T renamed d), with the largest entries of C + C^T and of C (the caller's skew check: the form holds for skew C only). */
void GEOATTN_NAME(cayley_small_fwd_d3)(int64_t B, int64_t T, const real_t *restrict C, real_t *restrict Lam, double *restrict Skew, double *restrict Size)
{
    double C_0_0[LANES];
    double C_0_1[LANES];
    double C_0_2[LANES];
    double C_1_0[LANES];
    double C_1_1[LANES];
    double C_1_2[LANES];
    double C_2_0[LANES];
    double C_2_1[LANES];
    double C_2_2[LANES];
    double Lam_0_0[LANES];
    double Lam_0_1[LANES];
    double Lam_0_2[LANES];
    double Lam_1_0[LANES];
    double Lam_1_1[LANES];
    double Lam_1_2[LANES];
    double Lam_2_0[LANES];
    double Lam_2_1[LANES];
    double Lam_2_2[LANES];
    double Skew_0_0[LANES];
    double Skew_0_1[LANES];
    double Skew_0_2[LANES];
    double Skew_1_1[LANES];
    double Skew_1_2[LANES];
    double Skew_2_2[LANES];
    double Size_0_0[LANES];
    double Size_0_1[LANES];
    double Size_0_2[LANES];
    double Size_1_0[LANES];
    double Size_1_1[LANES];
    double Size_1_2[LANES];
    double Size_2_0[LANES];
    double Size_2_1[LANES];
    double Size_2_2[LANES];
    (void)T;  /* no token inputs */
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            C_0_0[l] = (double)C[(int64_t)bl*9 + 0];
            C_0_1[l] = (double)C[(int64_t)bl*9 + 1];
            C_0_2[l] = (double)C[(int64_t)bl*9 + 2];
            C_1_0[l] = (double)C[(int64_t)bl*9 + 3];
            C_1_1[l] = (double)C[(int64_t)bl*9 + 4];
            C_1_2[l] = (double)C[(int64_t)bl*9 + 5];
            C_2_0[l] = (double)C[(int64_t)bl*9 + 6];
            C_2_1[l] = (double)C[(int64_t)bl*9 + 7];
            C_2_2[l] = (double)C[(int64_t)bl*9 + 8];
        }
        for (int l = 0; l < LANES; l++) {
            const double sC2_0 = C_0_1[l]*C_1_0[l];
            const double sC2_1 = C_0_2[l]*C_2_0[l];
            const double sC2_2 = C_1_2[l]*C_2_1[l];
            const double C2_0_0 = (C_0_0[l]*C_0_0[l]) + sC2_0 + sC2_1;
            const double C2_0_1 = C_0_0[l]*C_0_1[l] + C_0_1[l]*C_1_1[l] + C_0_2[l]*C_2_1[l];
            const double C2_0_2 = C_0_0[l]*C_0_2[l] + C_0_1[l]*C_1_2[l] + C_0_2[l]*C_2_2[l];
            const double C2_1_0 = C_0_0[l]*C_1_0[l] + C_1_0[l]*C_1_1[l] + C_1_2[l]*C_2_0[l];
            const double C2_1_1 = (C_1_1[l]*C_1_1[l]) + sC2_0 + sC2_2;
            const double C2_1_2 = C_0_2[l]*C_1_0[l] + C_1_1[l]*C_1_2[l] + C_1_2[l]*C_2_2[l];
            const double C2_2_0 = C_0_0[l]*C_2_0[l] + C_1_0[l]*C_2_1[l] + C_2_0[l]*C_2_2[l];
            const double C2_2_1 = C_0_1[l]*C_2_0[l] + C_1_1[l]*C_2_1[l] + C_2_1[l]*C_2_2[l];
            const double C2_2_2 = (C_2_2[l]*C_2_2[l]) + sC2_1 + sC2_2;
            const double sLam_0 = 2.0/(-1.0/2.0*C2_0_0 - 1.0/2.0*C2_1_1 - 1.0/2.0*C2_2_2 + 1.0);
            Lam_0_0[l] = sLam_0*(C2_0_0 - C_0_0[l]) + 1.0;
            Lam_0_1[l] = sLam_0*(C2_0_1 - C_0_1[l]);
            Lam_0_2[l] = sLam_0*(C2_0_2 - C_0_2[l]);
            Lam_1_0[l] = sLam_0*(C2_1_0 - C_1_0[l]);
            Lam_1_1[l] = sLam_0*(C2_1_1 - C_1_1[l]) + 1.0;
            Lam_1_2[l] = sLam_0*(C2_1_2 - C_1_2[l]);
            Lam_2_0[l] = sLam_0*(C2_2_0 - C_2_0[l]);
            Lam_2_1[l] = sLam_0*(C2_2_1 - C_2_1[l]);
            Lam_2_2[l] = sLam_0*(C2_2_2 - C_2_2[l]) + 1.0;
            Skew_0_0[l] = 2.0*C_0_0[l];
            Skew_0_1[l] = C_0_1[l] + C_1_0[l];
            Skew_0_2[l] = C_0_2[l] + C_2_0[l];
            Skew_1_1[l] = 2.0*C_1_1[l];
            Skew_1_2[l] = C_1_2[l] + C_2_1[l];
            Skew_2_2[l] = 2.0*C_2_2[l];
            Size_0_0[l] = C_0_0[l];
            Size_0_1[l] = C_0_1[l];
            Size_0_2[l] = C_0_2[l];
            Size_1_0[l] = C_1_0[l];
            Size_1_1[l] = C_1_1[l];
            Size_1_2[l] = C_1_2[l];
            Size_2_0[l] = C_2_0[l];
            Size_2_1[l] = C_2_1[l];
            Size_2_2[l] = C_2_2[l];
        }
        for (int l = 0; l < nl; l++) {
            Lam[(int64_t)(b0 + l)*9 + 0] = (real_t)(Lam_0_0[l]);
            Lam[(int64_t)(b0 + l)*9 + 1] = (real_t)(Lam_0_1[l]);
            Lam[(int64_t)(b0 + l)*9 + 2] = (real_t)(Lam_0_2[l]);
            Lam[(int64_t)(b0 + l)*9 + 3] = (real_t)(Lam_1_0[l]);
            Lam[(int64_t)(b0 + l)*9 + 4] = (real_t)(Lam_1_1[l]);
            Lam[(int64_t)(b0 + l)*9 + 5] = (real_t)(Lam_1_2[l]);
            Lam[(int64_t)(b0 + l)*9 + 6] = (real_t)(Lam_2_0[l]);
            Lam[(int64_t)(b0 + l)*9 + 7] = (real_t)(Lam_2_1[l]);
            Lam[(int64_t)(b0 + l)*9 + 8] = (real_t)(Lam_2_2[l]);
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            a = fabs(Skew_0_0[l]); if (a > m || a != a) m = a;
            a = fabs(Skew_0_1[l]); if (a > m || a != a) m = a;
            a = fabs(Skew_0_2[l]); if (a > m || a != a) m = a;
            a = fabs(Skew_1_1[l]); if (a > m || a != a) m = a;
            a = fabs(Skew_1_2[l]); if (a > m || a != a) m = a;
            a = fabs(Skew_2_2[l]); if (a > m || a != a) m = a;
            Skew[b0 + l] = m;
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            a = fabs(Size_0_0[l]); if (a > m || a != a) m = a;
            a = fabs(Size_0_1[l]); if (a > m || a != a) m = a;
            a = fabs(Size_0_2[l]); if (a > m || a != a) m = a;
            a = fabs(Size_1_0[l]); if (a > m || a != a) m = a;
            a = fabs(Size_1_1[l]); if (a > m || a != a) m = a;
            a = fabs(Size_1_2[l]); if (a > m || a != a) m = a;
            a = fabs(Size_2_0[l]); if (a > m || a != a) m = a;
            a = fabs(Size_2_1[l]); if (a > m || a != a) m = a;
            a = fabs(Size_2_2[l]); if (a > m || a != a) m = a;
            Size[b0 + l] = m;
        }
    }
}

/* The Cayley transform's vector-Jacobian product -1/2 (I + Lam^T) G (I + Lam^T) from the output Lam, for T <= 3 (T renamed d). */
void GEOATTN_NAME(cayley_vjp_d3)(int64_t B, int64_t T, const real_t *restrict Lam, const real_t *restrict G, real_t *restrict gC)
{
    double Lam_0_0[LANES];
    double Lam_0_1[LANES];
    double Lam_0_2[LANES];
    double Lam_1_0[LANES];
    double Lam_1_1[LANES];
    double Lam_1_2[LANES];
    double Lam_2_0[LANES];
    double Lam_2_1[LANES];
    double Lam_2_2[LANES];
    double G_0_0[LANES];
    double G_0_1[LANES];
    double G_0_2[LANES];
    double G_1_0[LANES];
    double G_1_1[LANES];
    double G_1_2[LANES];
    double G_2_0[LANES];
    double G_2_1[LANES];
    double G_2_2[LANES];
    double gC_0_0[LANES];
    double gC_0_1[LANES];
    double gC_0_2[LANES];
    double gC_1_0[LANES];
    double gC_1_1[LANES];
    double gC_1_2[LANES];
    double gC_2_0[LANES];
    double gC_2_1[LANES];
    double gC_2_2[LANES];
    (void)T;  /* no token inputs */
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            Lam_0_0[l] = (double)Lam[(int64_t)bl*9 + 0];
            Lam_0_1[l] = (double)Lam[(int64_t)bl*9 + 1];
            Lam_0_2[l] = (double)Lam[(int64_t)bl*9 + 2];
            Lam_1_0[l] = (double)Lam[(int64_t)bl*9 + 3];
            Lam_1_1[l] = (double)Lam[(int64_t)bl*9 + 4];
            Lam_1_2[l] = (double)Lam[(int64_t)bl*9 + 5];
            Lam_2_0[l] = (double)Lam[(int64_t)bl*9 + 6];
            Lam_2_1[l] = (double)Lam[(int64_t)bl*9 + 7];
            Lam_2_2[l] = (double)Lam[(int64_t)bl*9 + 8];
            G_0_0[l] = (double)G[(int64_t)bl*9 + 0];
            G_0_1[l] = (double)G[(int64_t)bl*9 + 1];
            G_0_2[l] = (double)G[(int64_t)bl*9 + 2];
            G_1_0[l] = (double)G[(int64_t)bl*9 + 3];
            G_1_1[l] = (double)G[(int64_t)bl*9 + 4];
            G_1_2[l] = (double)G[(int64_t)bl*9 + 5];
            G_2_0[l] = (double)G[(int64_t)bl*9 + 6];
            G_2_1[l] = (double)G[(int64_t)bl*9 + 7];
            G_2_2[l] = (double)G[(int64_t)bl*9 + 8];
        }
        for (int l = 0; l < LANES; l++) {
            const double P_0_0 = Lam_0_0[l] + 1.0;
            const double P_0_1 = Lam_1_0[l];
            const double P_0_2 = Lam_2_0[l];
            const double P_1_0 = Lam_0_1[l];
            const double P_1_1 = Lam_1_1[l] + 1.0;
            const double P_1_2 = Lam_2_1[l];
            const double P_2_0 = Lam_0_2[l];
            const double P_2_1 = Lam_1_2[l];
            const double P_2_2 = Lam_2_2[l] + 1.0;
            const double sgC_0 = (1.0/2.0)*G_0_0[l]*P_0_0 + (1.0/2.0)*G_1_0[l]*P_0_1 + (1.0/2.0)*G_2_0[l]*P_0_2;
            const double sgC_1 = (1.0/2.0)*G_0_1[l]*P_0_0 + (1.0/2.0)*G_1_1[l]*P_0_1 + (1.0/2.0)*G_2_1[l]*P_0_2;
            const double sgC_2 = (1.0/2.0)*G_0_2[l]*P_0_0 + (1.0/2.0)*G_1_2[l]*P_0_1 + (1.0/2.0)*G_2_2[l]*P_0_2;
            const double sgC_3 = (1.0/2.0)*G_0_0[l]*P_1_0 + (1.0/2.0)*G_1_0[l]*P_1_1 + (1.0/2.0)*G_2_0[l]*P_1_2;
            const double sgC_4 = (1.0/2.0)*G_0_1[l]*P_1_0 + (1.0/2.0)*G_1_1[l]*P_1_1 + (1.0/2.0)*G_2_1[l]*P_1_2;
            const double sgC_5 = (1.0/2.0)*G_0_2[l]*P_1_0 + (1.0/2.0)*G_1_2[l]*P_1_1 + (1.0/2.0)*G_2_2[l]*P_1_2;
            const double sgC_6 = (1.0/2.0)*G_0_0[l]*P_2_0 + (1.0/2.0)*G_1_0[l]*P_2_1 + (1.0/2.0)*G_2_0[l]*P_2_2;
            const double sgC_7 = (1.0/2.0)*G_0_1[l]*P_2_0 + (1.0/2.0)*G_1_1[l]*P_2_1 + (1.0/2.0)*G_2_1[l]*P_2_2;
            const double sgC_8 = (1.0/2.0)*G_0_2[l]*P_2_0 + (1.0/2.0)*G_1_2[l]*P_2_1 + (1.0/2.0)*G_2_2[l]*P_2_2;
            gC_0_0[l] = -P_0_0*sgC_0 - P_1_0*sgC_1 - P_2_0*sgC_2;
            gC_0_1[l] = -P_0_1*sgC_0 - P_1_1*sgC_1 - P_2_1*sgC_2;
            gC_0_2[l] = -P_0_2*sgC_0 - P_1_2*sgC_1 - P_2_2*sgC_2;
            gC_1_0[l] = -P_0_0*sgC_3 - P_1_0*sgC_4 - P_2_0*sgC_5;
            gC_1_1[l] = -P_0_1*sgC_3 - P_1_1*sgC_4 - P_2_1*sgC_5;
            gC_1_2[l] = -P_0_2*sgC_3 - P_1_2*sgC_4 - P_2_2*sgC_5;
            gC_2_0[l] = -P_0_0*sgC_6 - P_1_0*sgC_7 - P_2_0*sgC_8;
            gC_2_1[l] = -P_0_1*sgC_6 - P_1_1*sgC_7 - P_2_1*sgC_8;
            gC_2_2[l] = -P_0_2*sgC_6 - P_1_2*sgC_7 - P_2_2*sgC_8;
        }
        for (int l = 0; l < nl; l++) {
            gC[(int64_t)(b0 + l)*9 + 0] = (real_t)(gC_0_0[l]);
            gC[(int64_t)(b0 + l)*9 + 1] = (real_t)(gC_0_1[l]);
            gC[(int64_t)(b0 + l)*9 + 2] = (real_t)(gC_0_2[l]);
            gC[(int64_t)(b0 + l)*9 + 3] = (real_t)(gC_1_0[l]);
            gC[(int64_t)(b0 + l)*9 + 4] = (real_t)(gC_1_1[l]);
            gC[(int64_t)(b0 + l)*9 + 5] = (real_t)(gC_1_2[l]);
            gC[(int64_t)(b0 + l)*9 + 6] = (real_t)(gC_2_0[l]);
            gC[(int64_t)(b0 + l)*9 + 7] = (real_t)(gC_2_1[l]);
            gC[(int64_t)(b0 + l)*9 + 8] = (real_t)(gC_2_2[l]);
        }
    }
}

#endif  /* d = 3 */

#if GEOATTN_D == 4

/* The closed-form Gram layer's forward for d <= 4: Gram = x^T x, N = (I + Gram A)^{-T} in closed form, the largest entry of its residual R = (I + Gram A)^T N - I, and y = x (2N - I). */
void GEOATTN_NAME(vp_gram_fwd_d4)(int64_t B, int64_t T, const real_t *restrict x, const double *restrict A, real_t *restrict y, double *restrict Gram, double *restrict N, double *restrict R)
{
    typedef double geoattn_lanes_t __attribute__((vector_size(LANES*sizeof(double)), aligned(8), may_alias));
    const double A_1_0 = A[4];
    const double A_2_0 = A[8];
    const double A_3_0 = A[12];
    const double A_2_1 = A[9];
    const double A_3_1 = A[13];
    const double A_3_2 = A[14];
    double tile_x[TOKEN_CHUNK*4*LANES];
    double Gram_0_0[LANES];
    double Gram_0_1[LANES];
    double Gram_0_2[LANES];
    double Gram_0_3[LANES];
    double Gram_1_1[LANES];
    double Gram_1_2[LANES];
    double Gram_1_3[LANES];
    double Gram_2_2[LANES];
    double Gram_2_3[LANES];
    double Gram_3_3[LANES];
    double N_0_0[LANES];
    double N_0_1[LANES];
    double N_0_2[LANES];
    double N_0_3[LANES];
    double N_1_0[LANES];
    double N_1_1[LANES];
    double N_1_2[LANES];
    double N_1_3[LANES];
    double N_2_0[LANES];
    double N_2_1[LANES];
    double N_2_2[LANES];
    double N_2_3[LANES];
    double N_3_0[LANES];
    double N_3_1[LANES];
    double N_3_2[LANES];
    double N_3_3[LANES];
    double P_0_0[LANES];
    double P_0_1[LANES];
    double P_0_2[LANES];
    double P_0_3[LANES];
    double P_1_0[LANES];
    double P_1_1[LANES];
    double P_1_2[LANES];
    double P_1_3[LANES];
    double P_2_0[LANES];
    double P_2_1[LANES];
    double P_2_2[LANES];
    double P_2_3[LANES];
    double P_3_0[LANES];
    double P_3_1[LANES];
    double P_3_2[LANES];
    double P_3_3[LANES];
    double R_0_0[LANES];
    double R_0_1[LANES];
    double R_0_2[LANES];
    double R_0_3[LANES];
    double R_1_0[LANES];
    double R_1_1[LANES];
    double R_1_2[LANES];
    double R_1_3[LANES];
    double R_2_0[LANES];
    double R_2_1[LANES];
    double R_2_2[LANES];
    double R_2_3[LANES];
    double R_3_0[LANES];
    double R_3_1[LANES];
    double R_3_2[LANES];
    double R_3_3[LANES];
    double row_y[4][LANES];
    const int64_t nchunks = (T + TOKEN_CHUNK - 1)/TOKEN_CHUNK;
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) Gram_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_2_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_2_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_3_3[l] = 0.0;
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            const real_t *src_x[LANES];
            for (int l = 0; l < LANES; l++) {
                const int64_t bl = b0 + (l < nl ? l : nl - 1);
                src_x[l] = x + (bl*T + t0)*4;
            }
            for (int64_t tt = 0; tt < nt*4; tt++)
                for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            #if GEOATTN_VREGS >= 32
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_0_2;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Gram_0_3;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Gram_1_2;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Gram_1_3;
                geoattn_lanes_t acc7 = *(const geoattn_lanes_t *)Gram_2_2;
                geoattn_lanes_t acc8 = *(const geoattn_lanes_t *)Gram_2_3;
                geoattn_lanes_t acc9 = *(const geoattn_lanes_t *)Gram_3_3;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_3 = *(const geoattn_lanes_t *)(tile_x + (3 + 4*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + v_x_0*v_x_2;
                    acc3 = acc3 + v_x_0*v_x_3;
                    acc4 = acc4 + (v_x_1*v_x_1);
                    acc5 = acc5 + v_x_1*v_x_2;
                    acc6 = acc6 + v_x_1*v_x_3;
                    acc7 = acc7 + (v_x_2*v_x_2);
                    acc8 = acc8 + v_x_2*v_x_3;
                    acc9 = acc9 + (v_x_3*v_x_3);
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_0_2 = acc2;
                *(geoattn_lanes_t *)Gram_0_3 = acc3;
                *(geoattn_lanes_t *)Gram_1_1 = acc4;
                *(geoattn_lanes_t *)Gram_1_2 = acc5;
                *(geoattn_lanes_t *)Gram_1_3 = acc6;
                *(geoattn_lanes_t *)Gram_2_2 = acc7;
                *(geoattn_lanes_t *)Gram_2_3 = acc8;
                *(geoattn_lanes_t *)Gram_3_3 = acc9;
            }
            #else
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_0_2;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Gram_0_3;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Gram_1_2;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Gram_1_3;
                geoattn_lanes_t acc7 = *(const geoattn_lanes_t *)Gram_2_2;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_3 = *(const geoattn_lanes_t *)(tile_x + (3 + 4*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + v_x_0*v_x_2;
                    acc3 = acc3 + v_x_0*v_x_3;
                    acc4 = acc4 + (v_x_1*v_x_1);
                    acc5 = acc5 + v_x_1*v_x_2;
                    acc6 = acc6 + v_x_1*v_x_3;
                    acc7 = acc7 + (v_x_2*v_x_2);
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_0_2 = acc2;
                *(geoattn_lanes_t *)Gram_0_3 = acc3;
                *(geoattn_lanes_t *)Gram_1_1 = acc4;
                *(geoattn_lanes_t *)Gram_1_2 = acc5;
                *(geoattn_lanes_t *)Gram_1_3 = acc6;
                *(geoattn_lanes_t *)Gram_2_2 = acc7;
            }
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_2_3;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_3_3;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_3 = *(const geoattn_lanes_t *)(tile_x + (3 + 4*tt)*LANES);
                    acc0 = acc0 + v_x_2*v_x_3;
                    acc1 = acc1 + (v_x_3*v_x_3);
                }
                *(geoattn_lanes_t *)Gram_2_3 = acc0;
                *(geoattn_lanes_t *)Gram_3_3 = acc1;
            }
            #endif
        }
        for (int l = 0; l < LANES; l++) {
            const double sJ_0 = A_1_0*Gram_0_1[l];
            const double sJ_1 = A_2_0*Gram_0_2[l];
            const double sJ_2 = A_3_0*Gram_0_3[l];
            const double sJ_3 = A_2_1*Gram_1_2[l];
            const double sJ_4 = A_3_1*Gram_1_3[l];
            const double sJ_5 = A_3_2*Gram_2_3[l];
            const double J_0_0 = -sJ_0 - sJ_1 - sJ_2;
            const double J_0_1 = -A_1_0*Gram_1_1[l] - A_2_0*Gram_1_2[l] - A_3_0*Gram_1_3[l];
            const double J_0_2 = -A_1_0*Gram_1_2[l] - A_2_0*Gram_2_2[l] - A_3_0*Gram_2_3[l];
            const double J_0_3 = -A_1_0*Gram_1_3[l] - A_2_0*Gram_2_3[l] - A_3_0*Gram_3_3[l];
            const double J_1_0 = A_1_0*Gram_0_0[l] - A_2_1*Gram_0_2[l] - A_3_1*Gram_0_3[l];
            const double J_1_1 = sJ_0 - sJ_3 - sJ_4;
            const double J_1_2 = A_1_0*Gram_0_2[l] - A_2_1*Gram_2_2[l] - A_3_1*Gram_2_3[l];
            const double J_1_3 = A_1_0*Gram_0_3[l] - A_2_1*Gram_2_3[l] - A_3_1*Gram_3_3[l];
            const double J_2_0 = A_2_0*Gram_0_0[l] + A_2_1*Gram_0_1[l] - A_3_2*Gram_0_3[l];
            const double J_2_1 = A_2_0*Gram_0_1[l] + A_2_1*Gram_1_1[l] - A_3_2*Gram_1_3[l];
            const double J_2_2 = sJ_1 + sJ_3 - sJ_5;
            const double J_2_3 = A_2_0*Gram_0_3[l] + A_2_1*Gram_1_3[l] - A_3_2*Gram_3_3[l];
            const double J_3_0 = A_3_0*Gram_0_0[l] + A_3_1*Gram_0_1[l] + A_3_2*Gram_0_2[l];
            const double J_3_1 = A_3_0*Gram_0_1[l] + A_3_1*Gram_1_1[l] + A_3_2*Gram_1_2[l];
            const double J_3_2 = A_3_0*Gram_0_2[l] + A_3_1*Gram_1_2[l] + A_3_2*Gram_2_2[l];
            const double J_3_3 = sJ_2 + sJ_4 + sJ_5;
            const double sJ2_0 = J_0_1*J_1_0;
            const double sJ2_1 = J_0_2*J_2_0;
            const double sJ2_2 = J_0_3*J_3_0;
            const double sJ2_3 = J_1_2*J_2_1;
            const double sJ2_4 = J_1_3*J_3_1;
            const double sJ2_5 = J_2_3*J_3_2;
            const double J2_0_0 = (J_0_0*J_0_0) + sJ2_0 + sJ2_1 + sJ2_2;
            const double J2_0_1 = J_0_0*J_0_1 + J_0_1*J_1_1 + J_0_2*J_2_1 + J_0_3*J_3_1;
            const double J2_0_2 = J_0_0*J_0_2 + J_0_1*J_1_2 + J_0_2*J_2_2 + J_0_3*J_3_2;
            const double J2_0_3 = J_0_0*J_0_3 + J_0_1*J_1_3 + J_0_2*J_2_3 + J_0_3*J_3_3;
            const double J2_1_0 = J_0_0*J_1_0 + J_1_0*J_1_1 + J_1_2*J_2_0 + J_1_3*J_3_0;
            const double J2_1_1 = (J_1_1*J_1_1) + sJ2_0 + sJ2_3 + sJ2_4;
            const double J2_1_2 = J_0_2*J_1_0 + J_1_1*J_1_2 + J_1_2*J_2_2 + J_1_3*J_3_2;
            const double J2_1_3 = J_0_3*J_1_0 + J_1_1*J_1_3 + J_1_2*J_2_3 + J_1_3*J_3_3;
            const double J2_2_0 = J_0_0*J_2_0 + J_1_0*J_2_1 + J_2_0*J_2_2 + J_2_3*J_3_0;
            const double J2_2_1 = J_0_1*J_2_0 + J_1_1*J_2_1 + J_2_1*J_2_2 + J_2_3*J_3_1;
            const double J2_2_2 = (J_2_2*J_2_2) + sJ2_1 + sJ2_3 + sJ2_5;
            const double J2_2_3 = J_0_3*J_2_0 + J_1_3*J_2_1 + J_2_2*J_2_3 + J_2_3*J_3_3;
            const double J2_3_0 = J_0_0*J_3_0 + J_1_0*J_3_1 + J_2_0*J_3_2 + J_3_0*J_3_3;
            const double J2_3_1 = J_0_1*J_3_0 + J_1_1*J_3_1 + J_2_1*J_3_2 + J_3_1*J_3_3;
            const double J2_3_2 = J_0_2*J_3_0 + J_1_2*J_3_1 + J_2_2*J_3_2 + J_3_2*J_3_3;
            const double J2_3_3 = (J_3_3*J_3_3) + sJ2_2 + sJ2_4 + sJ2_5;
            const double sNu_0 = J_0_0 + 1.0;
            const double sNu_1 = (1.0/2.0)*J2_1_1;
            const double sNu_2 = (1.0/2.0)*J2_0_0;
            const double sNu_3 = (1.0/2.0)*J2_2_2;
            const double sNu_4 = (1.0/2.0)*J2_3_3;
            const double sNu_5 = sNu_3 + sNu_4 - 1.0;
            const double sNu_6 = -sNu_1 + sNu_2 - sNu_5;
            const double sNu_7 = J_1_1 + 1.0;
            const double sNu_8 = J_2_2 + 1.0;
            const double sNu_9 = J_3_3 + 1.0;
            const double sNu_10 = sNu_1 - sNu_2 - sNu_5;
            const double sNu_11 = sNu_1 + sNu_2 - 1.0;
            const double sNu_12 = -sNu_11 + sNu_3 - sNu_4;
            const double sNu_13 = -sNu_11 - sNu_3 + sNu_4;
            const double Nu_0_0 = J2_0_1*J_1_0 + J2_0_2*J_2_0 + J2_0_3*J_3_0 + sNu_0*sNu_6;
            const double Nu_0_1 = J2_0_1*sNu_7 + J2_0_2*J_2_1 + J2_0_3*J_3_1 + J_0_1*sNu_6;
            const double Nu_0_2 = J2_0_1*J_1_2 + J2_0_2*sNu_8 + J2_0_3*J_3_2 + J_0_2*sNu_6;
            const double Nu_0_3 = J2_0_1*J_1_3 + J2_0_2*J_2_3 + J2_0_3*sNu_9 + J_0_3*sNu_6;
            const double Nu_1_0 = J2_1_0*sNu_0 + J2_1_2*J_2_0 + J2_1_3*J_3_0 + J_1_0*sNu_10;
            const double Nu_1_1 = J2_1_0*J_0_1 + J2_1_2*J_2_1 + J2_1_3*J_3_1 + sNu_10*sNu_7;
            const double Nu_1_2 = J2_1_0*J_0_2 + J2_1_2*sNu_8 + J2_1_3*J_3_2 + J_1_2*sNu_10;
            const double Nu_1_3 = J2_1_0*J_0_3 + J2_1_2*J_2_3 + J2_1_3*sNu_9 + J_1_3*sNu_10;
            const double Nu_2_0 = J2_2_0*sNu_0 + J2_2_1*J_1_0 + J2_2_3*J_3_0 + J_2_0*sNu_12;
            const double Nu_2_1 = J2_2_0*J_0_1 + J2_2_1*sNu_7 + J2_2_3*J_3_1 + J_2_1*sNu_12;
            const double Nu_2_2 = J2_2_0*J_0_2 + J2_2_1*J_1_2 + J2_2_3*J_3_2 + sNu_12*sNu_8;
            const double Nu_2_3 = J2_2_0*J_0_3 + J2_2_1*J_1_3 + J2_2_3*sNu_9 + J_2_3*sNu_12;
            const double Nu_3_0 = J2_3_0*sNu_0 + J2_3_1*J_1_0 + J2_3_2*J_2_0 + J_3_0*sNu_13;
            const double Nu_3_1 = J2_3_0*J_0_1 + J2_3_1*sNu_7 + J2_3_2*J_2_1 + J_3_1*sNu_13;
            const double Nu_3_2 = J2_3_0*J_0_2 + J2_3_1*J_1_2 + J2_3_2*sNu_8 + J_3_2*sNu_13;
            const double Nu_3_3 = J2_3_0*J_0_3 + J2_3_1*J_1_3 + J2_3_2*J_2_3 + sNu_13*sNu_9;
            const double sN_0 = (1.0/(-1.0/4.0*(J2_0_0*J2_0_0) - 1.0/2.0*J2_0_0 - 1.0/2.0*J2_0_1*J2_1_0 - 1.0/2.0*J2_0_2*J2_2_0 - 1.0/2.0*J2_0_3*J2_3_0 - 1.0/4.0*(J2_1_1*J2_1_1) - 1.0/2.0*J2_1_1 - 1.0/2.0*J2_1_2*J2_2_1 - 1.0/2.0*J2_1_3*J2_3_1 - 1.0/4.0*(J2_2_2*J2_2_2) - 1.0/2.0*J2_2_2 - 1.0/2.0*J2_2_3*J2_3_2 - 1.0/4.0*(J2_3_3*J2_3_3) - 1.0/2.0*J2_3_3 + (1.0/8.0)*((J2_0_0 + J2_1_1 + J2_2_2 + J2_3_3)*(J2_0_0 + J2_1_1 + J2_2_2 + J2_3_3)) + 1.0));
            N_0_0[l] = Nu_0_0*sN_0;
            N_0_1[l] = Nu_0_1*sN_0;
            N_0_2[l] = Nu_0_2*sN_0;
            N_0_3[l] = Nu_0_3*sN_0;
            N_1_0[l] = Nu_1_0*sN_0;
            N_1_1[l] = Nu_1_1*sN_0;
            N_1_2[l] = Nu_1_2*sN_0;
            N_1_3[l] = Nu_1_3*sN_0;
            N_2_0[l] = Nu_2_0*sN_0;
            N_2_1[l] = Nu_2_1*sN_0;
            N_2_2[l] = Nu_2_2*sN_0;
            N_2_3[l] = Nu_2_3*sN_0;
            N_3_0[l] = Nu_3_0*sN_0;
            N_3_1[l] = Nu_3_1*sN_0;
            N_3_2[l] = Nu_3_2*sN_0;
            N_3_3[l] = Nu_3_3*sN_0;
            P_0_0[l] = 2.0*N_0_0[l] - 1.0;
            P_0_1[l] = 2.0*N_0_1[l];
            P_0_2[l] = 2.0*N_0_2[l];
            P_0_3[l] = 2.0*N_0_3[l];
            P_1_0[l] = 2.0*N_1_0[l];
            P_1_1[l] = 2.0*N_1_1[l] - 1.0;
            P_1_2[l] = 2.0*N_1_2[l];
            P_1_3[l] = 2.0*N_1_3[l];
            P_2_0[l] = 2.0*N_2_0[l];
            P_2_1[l] = 2.0*N_2_1[l];
            P_2_2[l] = 2.0*N_2_2[l] - 1.0;
            P_2_3[l] = 2.0*N_2_3[l];
            P_3_0[l] = 2.0*N_3_0[l];
            P_3_1[l] = 2.0*N_3_1[l];
            P_3_2[l] = 2.0*N_3_2[l];
            P_3_3[l] = 2.0*N_3_3[l] - 1.0;
            R_0_0[l] = -J_0_0*N_0_0[l] - J_0_1*N_1_0[l] - J_0_2*N_2_0[l] - J_0_3*N_3_0[l] + N_0_0[l] - 1.0;
            R_0_1[l] = -J_0_0*N_0_1[l] - J_0_1*N_1_1[l] - J_0_2*N_2_1[l] - J_0_3*N_3_1[l] + N_0_1[l];
            R_0_2[l] = -J_0_0*N_0_2[l] - J_0_1*N_1_2[l] - J_0_2*N_2_2[l] - J_0_3*N_3_2[l] + N_0_2[l];
            R_0_3[l] = -J_0_0*N_0_3[l] - J_0_1*N_1_3[l] - J_0_2*N_2_3[l] - J_0_3*N_3_3[l] + N_0_3[l];
            R_1_0[l] = -J_1_0*N_0_0[l] - J_1_1*N_1_0[l] - J_1_2*N_2_0[l] - J_1_3*N_3_0[l] + N_1_0[l];
            R_1_1[l] = -J_1_0*N_0_1[l] - J_1_1*N_1_1[l] - J_1_2*N_2_1[l] - J_1_3*N_3_1[l] + N_1_1[l] - 1.0;
            R_1_2[l] = -J_1_0*N_0_2[l] - J_1_1*N_1_2[l] - J_1_2*N_2_2[l] - J_1_3*N_3_2[l] + N_1_2[l];
            R_1_3[l] = -J_1_0*N_0_3[l] - J_1_1*N_1_3[l] - J_1_2*N_2_3[l] - J_1_3*N_3_3[l] + N_1_3[l];
            R_2_0[l] = -J_2_0*N_0_0[l] - J_2_1*N_1_0[l] - J_2_2*N_2_0[l] - J_2_3*N_3_0[l] + N_2_0[l];
            R_2_1[l] = -J_2_0*N_0_1[l] - J_2_1*N_1_1[l] - J_2_2*N_2_1[l] - J_2_3*N_3_1[l] + N_2_1[l];
            R_2_2[l] = -J_2_0*N_0_2[l] - J_2_1*N_1_2[l] - J_2_2*N_2_2[l] - J_2_3*N_3_2[l] + N_2_2[l] - 1.0;
            R_2_3[l] = -J_2_0*N_0_3[l] - J_2_1*N_1_3[l] - J_2_2*N_2_3[l] - J_2_3*N_3_3[l] + N_2_3[l];
            R_3_0[l] = -J_3_0*N_0_0[l] - J_3_1*N_1_0[l] - J_3_2*N_2_0[l] - J_3_3*N_3_0[l] + N_3_0[l];
            R_3_1[l] = -J_3_0*N_0_1[l] - J_3_1*N_1_1[l] - J_3_2*N_2_1[l] - J_3_3*N_3_1[l] + N_3_1[l];
            R_3_2[l] = -J_3_0*N_0_2[l] - J_3_1*N_1_2[l] - J_3_2*N_2_2[l] - J_3_3*N_3_2[l] + N_3_2[l];
            R_3_3[l] = -J_3_0*N_0_3[l] - J_3_1*N_1_3[l] - J_3_2*N_2_3[l] - J_3_3*N_3_3[l] + N_3_3[l] - 1.0;
        }
        for (int l = 0; l < nl; l++) {
            Gram[(int64_t)(b0 + l)*16 + 0] = Gram_0_0[l];
            Gram[(int64_t)(b0 + l)*16 + 1] = Gram_0_1[l];
            Gram[(int64_t)(b0 + l)*16 + 2] = Gram_0_2[l];
            Gram[(int64_t)(b0 + l)*16 + 3] = Gram_0_3[l];
            Gram[(int64_t)(b0 + l)*16 + 4] = Gram_0_1[l];
            Gram[(int64_t)(b0 + l)*16 + 5] = Gram_1_1[l];
            Gram[(int64_t)(b0 + l)*16 + 6] = Gram_1_2[l];
            Gram[(int64_t)(b0 + l)*16 + 7] = Gram_1_3[l];
            Gram[(int64_t)(b0 + l)*16 + 8] = Gram_0_2[l];
            Gram[(int64_t)(b0 + l)*16 + 9] = Gram_1_2[l];
            Gram[(int64_t)(b0 + l)*16 + 10] = Gram_2_2[l];
            Gram[(int64_t)(b0 + l)*16 + 11] = Gram_2_3[l];
            Gram[(int64_t)(b0 + l)*16 + 12] = Gram_0_3[l];
            Gram[(int64_t)(b0 + l)*16 + 13] = Gram_1_3[l];
            Gram[(int64_t)(b0 + l)*16 + 14] = Gram_2_3[l];
            Gram[(int64_t)(b0 + l)*16 + 15] = Gram_3_3[l];
        }
        for (int l = 0; l < nl; l++) {
            N[(int64_t)(b0 + l)*16 + 0] = N_0_0[l];
            N[(int64_t)(b0 + l)*16 + 1] = N_0_1[l];
            N[(int64_t)(b0 + l)*16 + 2] = N_0_2[l];
            N[(int64_t)(b0 + l)*16 + 3] = N_0_3[l];
            N[(int64_t)(b0 + l)*16 + 4] = N_1_0[l];
            N[(int64_t)(b0 + l)*16 + 5] = N_1_1[l];
            N[(int64_t)(b0 + l)*16 + 6] = N_1_2[l];
            N[(int64_t)(b0 + l)*16 + 7] = N_1_3[l];
            N[(int64_t)(b0 + l)*16 + 8] = N_2_0[l];
            N[(int64_t)(b0 + l)*16 + 9] = N_2_1[l];
            N[(int64_t)(b0 + l)*16 + 10] = N_2_2[l];
            N[(int64_t)(b0 + l)*16 + 11] = N_2_3[l];
            N[(int64_t)(b0 + l)*16 + 12] = N_3_0[l];
            N[(int64_t)(b0 + l)*16 + 13] = N_3_1[l];
            N[(int64_t)(b0 + l)*16 + 14] = N_3_2[l];
            N[(int64_t)(b0 + l)*16 + 15] = N_3_3[l];
        }
        for (int l = 0; l < nl; l++) {
            double m = 0.0, a;
            a = fabs(R_0_0[l]); if (a > m || a != a) m = a;
            a = fabs(R_0_1[l]); if (a > m || a != a) m = a;
            a = fabs(R_0_2[l]); if (a > m || a != a) m = a;
            a = fabs(R_0_3[l]); if (a > m || a != a) m = a;
            a = fabs(R_1_0[l]); if (a > m || a != a) m = a;
            a = fabs(R_1_1[l]); if (a > m || a != a) m = a;
            a = fabs(R_1_2[l]); if (a > m || a != a) m = a;
            a = fabs(R_1_3[l]); if (a > m || a != a) m = a;
            a = fabs(R_2_0[l]); if (a > m || a != a) m = a;
            a = fabs(R_2_1[l]); if (a > m || a != a) m = a;
            a = fabs(R_2_2[l]); if (a > m || a != a) m = a;
            a = fabs(R_2_3[l]); if (a > m || a != a) m = a;
            a = fabs(R_3_0[l]); if (a > m || a != a) m = a;
            a = fabs(R_3_1[l]); if (a > m || a != a) m = a;
            a = fabs(R_3_2[l]); if (a > m || a != a) m = a;
            a = fabs(R_3_3[l]); if (a > m || a != a) m = a;
            R[b0 + l] = m;
        }
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            if (nchunks > 1) {
                const real_t *src_x[LANES];
                for (int l = 0; l < LANES; l++) {
                    const int64_t bl = b0 + (l < nl ? l : nl - 1);
                    src_x[l] = x + (bl*T + t0)*4;
                }
                for (int64_t tt = 0; tt < nt*4; tt++)
                    for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            }
            for (int64_t tt = 0; tt < nt; tt++) {
                for (int l = 0; l < LANES; l++) {
                    row_y[0][l] = P_0_0[l]*tile_x[(0 + 4*tt)*LANES + l] + P_1_0[l]*tile_x[(1 + 4*tt)*LANES + l] + P_2_0[l]*tile_x[(2 + 4*tt)*LANES + l] + P_3_0[l]*tile_x[(3 + 4*tt)*LANES + l];
                    row_y[1][l] = P_0_1[l]*tile_x[(0 + 4*tt)*LANES + l] + P_1_1[l]*tile_x[(1 + 4*tt)*LANES + l] + P_2_1[l]*tile_x[(2 + 4*tt)*LANES + l] + P_3_1[l]*tile_x[(3 + 4*tt)*LANES + l];
                    row_y[2][l] = P_0_2[l]*tile_x[(0 + 4*tt)*LANES + l] + P_1_2[l]*tile_x[(1 + 4*tt)*LANES + l] + P_2_2[l]*tile_x[(2 + 4*tt)*LANES + l] + P_3_2[l]*tile_x[(3 + 4*tt)*LANES + l];
                    row_y[3][l] = P_0_3[l]*tile_x[(0 + 4*tt)*LANES + l] + P_1_3[l]*tile_x[(1 + 4*tt)*LANES + l] + P_2_3[l]*tile_x[(2 + 4*tt)*LANES + l] + P_3_3[l]*tile_x[(3 + 4*tt)*LANES + l];
                }
                for (int l = 0; l < nl; l++) {
                    y[((int64_t)(b0 + l)*T + t0 + tt)*4 + 0] = (real_t)(row_y[0][l]);
                    y[((int64_t)(b0 + l)*T + t0 + tt)*4 + 1] = (real_t)(row_y[1][l]);
                    y[((int64_t)(b0 + l)*T + t0 + tt)*4 + 2] = (real_t)(row_y[2][l]);
                    y[((int64_t)(b0 + l)*T + t0 + tt)*4 + 3] = (real_t)(row_y[3][l]);
                }
            }
        }
    }
}

/* The closed-form Gram layer's backward for d <= 4: x_bar = y_bar P^T + x H and the per-sample Gram M_bar (A_bar is the skew part of its sum over the batch), from x, y_bar and the forward's N. */
void GEOATTN_NAME(vp_gram_bwd_d4)(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy, const double *restrict N, const double *restrict A, real_t *restrict gx, double *restrict gA)
{
    typedef double geoattn_lanes_t __attribute__((vector_size(LANES*sizeof(double)), aligned(8), may_alias));
    const double A_1_0 = A[4];
    const double A_2_0 = A[8];
    const double A_3_0 = A[12];
    const double A_2_1 = A[9];
    const double A_3_1 = A[13];
    const double A_3_2 = A[14];
    double tile_x[TOKEN_CHUNK*4*LANES];
    double tile_Gy[TOKEN_CHUNK*4*LANES];
    double N_0_0[LANES];
    double N_0_1[LANES];
    double N_0_2[LANES];
    double N_0_3[LANES];
    double N_1_0[LANES];
    double N_1_1[LANES];
    double N_1_2[LANES];
    double N_1_3[LANES];
    double N_2_0[LANES];
    double N_2_1[LANES];
    double N_2_2[LANES];
    double N_2_3[LANES];
    double N_3_0[LANES];
    double N_3_1[LANES];
    double N_3_2[LANES];
    double N_3_3[LANES];
    double Gram_0_0[LANES];
    double Gram_0_1[LANES];
    double Gram_0_2[LANES];
    double Gram_0_3[LANES];
    double Gram_1_1[LANES];
    double Gram_1_2[LANES];
    double Gram_1_3[LANES];
    double Gram_2_2[LANES];
    double Gram_2_3[LANES];
    double Gram_3_3[LANES];
    double Pbar_0_0[LANES];
    double Pbar_0_1[LANES];
    double Pbar_0_2[LANES];
    double Pbar_0_3[LANES];
    double Pbar_1_0[LANES];
    double Pbar_1_1[LANES];
    double Pbar_1_2[LANES];
    double Pbar_1_3[LANES];
    double Pbar_2_0[LANES];
    double Pbar_2_1[LANES];
    double Pbar_2_2[LANES];
    double Pbar_2_3[LANES];
    double Pbar_3_0[LANES];
    double Pbar_3_1[LANES];
    double Pbar_3_2[LANES];
    double Pbar_3_3[LANES];
    double P_0_0[LANES];
    double P_0_1[LANES];
    double P_0_2[LANES];
    double P_0_3[LANES];
    double P_1_0[LANES];
    double P_1_1[LANES];
    double P_1_2[LANES];
    double P_1_3[LANES];
    double P_2_0[LANES];
    double P_2_1[LANES];
    double P_2_2[LANES];
    double P_2_3[LANES];
    double P_3_0[LANES];
    double P_3_1[LANES];
    double P_3_2[LANES];
    double P_3_3[LANES];
    double H_0_0[LANES];
    double H_0_1[LANES];
    double H_0_2[LANES];
    double H_0_3[LANES];
    double H_1_1[LANES];
    double H_1_2[LANES];
    double H_1_3[LANES];
    double H_2_2[LANES];
    double H_2_3[LANES];
    double H_3_3[LANES];
    double gA_0_0[LANES];
    double gA_0_1[LANES];
    double gA_0_2[LANES];
    double gA_0_3[LANES];
    double gA_1_0[LANES];
    double gA_1_1[LANES];
    double gA_1_2[LANES];
    double gA_1_3[LANES];
    double gA_2_0[LANES];
    double gA_2_1[LANES];
    double gA_2_2[LANES];
    double gA_2_3[LANES];
    double gA_3_0[LANES];
    double gA_3_1[LANES];
    double gA_3_2[LANES];
    double gA_3_3[LANES];
    double row_gx[4][LANES];
    const int64_t nchunks = (T + TOKEN_CHUNK - 1)/TOKEN_CHUNK;
    for (int64_t b0 = 0; b0 < B; b0 += LANES) {
        const int nl = B - b0 < LANES ? (int)(B - b0) : LANES;
        for (int l = 0; l < LANES; l++) {
            const int64_t bl = b0 + (l < nl ? l : nl - 1);
            N_0_0[l] = N[(int64_t)bl*16 + 0];
            N_0_1[l] = N[(int64_t)bl*16 + 1];
            N_0_2[l] = N[(int64_t)bl*16 + 2];
            N_0_3[l] = N[(int64_t)bl*16 + 3];
            N_1_0[l] = N[(int64_t)bl*16 + 4];
            N_1_1[l] = N[(int64_t)bl*16 + 5];
            N_1_2[l] = N[(int64_t)bl*16 + 6];
            N_1_3[l] = N[(int64_t)bl*16 + 7];
            N_2_0[l] = N[(int64_t)bl*16 + 8];
            N_2_1[l] = N[(int64_t)bl*16 + 9];
            N_2_2[l] = N[(int64_t)bl*16 + 10];
            N_2_3[l] = N[(int64_t)bl*16 + 11];
            N_3_0[l] = N[(int64_t)bl*16 + 12];
            N_3_1[l] = N[(int64_t)bl*16 + 13];
            N_3_2[l] = N[(int64_t)bl*16 + 14];
            N_3_3[l] = N[(int64_t)bl*16 + 15];
        }
        for (int l = 0; l < LANES; l++) Gram_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_0_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_1_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_2_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_2_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Gram_3_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_0_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_1_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_1_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_1_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_1_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_2_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_2_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_2_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_2_3[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_3_0[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_3_1[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_3_2[l] = 0.0;
        for (int l = 0; l < LANES; l++) Pbar_3_3[l] = 0.0;
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            const real_t *src_x[LANES];
            const real_t *src_Gy[LANES];
            for (int l = 0; l < LANES; l++) {
                const int64_t bl = b0 + (l < nl ? l : nl - 1);
                src_x[l] = x + (bl*T + t0)*4;
                src_Gy[l] = Gy + (bl*T + t0)*4;
            }
            for (int64_t tt = 0; tt < nt*4; tt++)
                for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
            for (int64_t tt = 0; tt < nt*4; tt++)
                for (int l = 0; l < LANES; l++) tile_Gy[tt*LANES + l] = (double)src_Gy[l][tt];
            #if GEOATTN_VREGS >= 32
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_0_2;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Gram_0_3;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Gram_1_2;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Gram_1_3;
                geoattn_lanes_t acc7 = *(const geoattn_lanes_t *)Gram_2_2;
                geoattn_lanes_t acc8 = *(const geoattn_lanes_t *)Gram_2_3;
                geoattn_lanes_t acc9 = *(const geoattn_lanes_t *)Gram_3_3;
                geoattn_lanes_t acc10 = *(const geoattn_lanes_t *)Pbar_0_0;
                geoattn_lanes_t acc11 = *(const geoattn_lanes_t *)Pbar_0_1;
                geoattn_lanes_t acc12 = *(const geoattn_lanes_t *)Pbar_0_2;
                geoattn_lanes_t acc13 = *(const geoattn_lanes_t *)Pbar_0_3;
                geoattn_lanes_t acc14 = *(const geoattn_lanes_t *)Pbar_1_0;
                geoattn_lanes_t acc15 = *(const geoattn_lanes_t *)Pbar_1_1;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_3 = *(const geoattn_lanes_t *)(tile_x + (3 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_1 = *(const geoattn_lanes_t *)(tile_Gy + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_2 = *(const geoattn_lanes_t *)(tile_Gy + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_3 = *(const geoattn_lanes_t *)(tile_Gy + (3 + 4*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + v_x_0*v_x_2;
                    acc3 = acc3 + v_x_0*v_x_3;
                    acc4 = acc4 + (v_x_1*v_x_1);
                    acc5 = acc5 + v_x_1*v_x_2;
                    acc6 = acc6 + v_x_1*v_x_3;
                    acc7 = acc7 + (v_x_2*v_x_2);
                    acc8 = acc8 + v_x_2*v_x_3;
                    acc9 = acc9 + (v_x_3*v_x_3);
                    acc10 = acc10 + v_Gy_0*v_x_0;
                    acc11 = acc11 + v_Gy_1*v_x_0;
                    acc12 = acc12 + v_Gy_2*v_x_0;
                    acc13 = acc13 + v_Gy_3*v_x_0;
                    acc14 = acc14 + v_Gy_0*v_x_1;
                    acc15 = acc15 + v_Gy_1*v_x_1;
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_0_2 = acc2;
                *(geoattn_lanes_t *)Gram_0_3 = acc3;
                *(geoattn_lanes_t *)Gram_1_1 = acc4;
                *(geoattn_lanes_t *)Gram_1_2 = acc5;
                *(geoattn_lanes_t *)Gram_1_3 = acc6;
                *(geoattn_lanes_t *)Gram_2_2 = acc7;
                *(geoattn_lanes_t *)Gram_2_3 = acc8;
                *(geoattn_lanes_t *)Gram_3_3 = acc9;
                *(geoattn_lanes_t *)Pbar_0_0 = acc10;
                *(geoattn_lanes_t *)Pbar_0_1 = acc11;
                *(geoattn_lanes_t *)Pbar_0_2 = acc12;
                *(geoattn_lanes_t *)Pbar_0_3 = acc13;
                *(geoattn_lanes_t *)Pbar_1_0 = acc14;
                *(geoattn_lanes_t *)Pbar_1_1 = acc15;
            }
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Pbar_1_2;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Pbar_1_3;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Pbar_2_0;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Pbar_2_1;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Pbar_2_2;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Pbar_2_3;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Pbar_3_0;
                geoattn_lanes_t acc7 = *(const geoattn_lanes_t *)Pbar_3_1;
                geoattn_lanes_t acc8 = *(const geoattn_lanes_t *)Pbar_3_2;
                geoattn_lanes_t acc9 = *(const geoattn_lanes_t *)Pbar_3_3;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_3 = *(const geoattn_lanes_t *)(tile_x + (3 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_1 = *(const geoattn_lanes_t *)(tile_Gy + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_2 = *(const geoattn_lanes_t *)(tile_Gy + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_3 = *(const geoattn_lanes_t *)(tile_Gy + (3 + 4*tt)*LANES);
                    acc0 = acc0 + v_Gy_2*v_x_1;
                    acc1 = acc1 + v_Gy_3*v_x_1;
                    acc2 = acc2 + v_Gy_0*v_x_2;
                    acc3 = acc3 + v_Gy_1*v_x_2;
                    acc4 = acc4 + v_Gy_2*v_x_2;
                    acc5 = acc5 + v_Gy_3*v_x_2;
                    acc6 = acc6 + v_Gy_0*v_x_3;
                    acc7 = acc7 + v_Gy_1*v_x_3;
                    acc8 = acc8 + v_Gy_2*v_x_3;
                    acc9 = acc9 + v_Gy_3*v_x_3;
                }
                *(geoattn_lanes_t *)Pbar_1_2 = acc0;
                *(geoattn_lanes_t *)Pbar_1_3 = acc1;
                *(geoattn_lanes_t *)Pbar_2_0 = acc2;
                *(geoattn_lanes_t *)Pbar_2_1 = acc3;
                *(geoattn_lanes_t *)Pbar_2_2 = acc4;
                *(geoattn_lanes_t *)Pbar_2_3 = acc5;
                *(geoattn_lanes_t *)Pbar_3_0 = acc6;
                *(geoattn_lanes_t *)Pbar_3_1 = acc7;
                *(geoattn_lanes_t *)Pbar_3_2 = acc8;
                *(geoattn_lanes_t *)Pbar_3_3 = acc9;
            }
            #else
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_0_0;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_0_1;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Gram_0_2;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Gram_0_3;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Gram_1_1;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Gram_1_2;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Gram_1_3;
                geoattn_lanes_t acc7 = *(const geoattn_lanes_t *)Gram_2_2;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_3 = *(const geoattn_lanes_t *)(tile_x + (3 + 4*tt)*LANES);
                    acc0 = acc0 + (v_x_0*v_x_0);
                    acc1 = acc1 + v_x_0*v_x_1;
                    acc2 = acc2 + v_x_0*v_x_2;
                    acc3 = acc3 + v_x_0*v_x_3;
                    acc4 = acc4 + (v_x_1*v_x_1);
                    acc5 = acc5 + v_x_1*v_x_2;
                    acc6 = acc6 + v_x_1*v_x_3;
                    acc7 = acc7 + (v_x_2*v_x_2);
                }
                *(geoattn_lanes_t *)Gram_0_0 = acc0;
                *(geoattn_lanes_t *)Gram_0_1 = acc1;
                *(geoattn_lanes_t *)Gram_0_2 = acc2;
                *(geoattn_lanes_t *)Gram_0_3 = acc3;
                *(geoattn_lanes_t *)Gram_1_1 = acc4;
                *(geoattn_lanes_t *)Gram_1_2 = acc5;
                *(geoattn_lanes_t *)Gram_1_3 = acc6;
                *(geoattn_lanes_t *)Gram_2_2 = acc7;
            }
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Gram_2_3;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Gram_3_3;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Pbar_0_0;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Pbar_0_1;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Pbar_0_2;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Pbar_0_3;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Pbar_1_0;
                geoattn_lanes_t acc7 = *(const geoattn_lanes_t *)Pbar_1_1;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_0 = *(const geoattn_lanes_t *)(tile_x + (0 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_3 = *(const geoattn_lanes_t *)(tile_x + (3 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_1 = *(const geoattn_lanes_t *)(tile_Gy + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_2 = *(const geoattn_lanes_t *)(tile_Gy + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_3 = *(const geoattn_lanes_t *)(tile_Gy + (3 + 4*tt)*LANES);
                    acc0 = acc0 + v_x_2*v_x_3;
                    acc1 = acc1 + (v_x_3*v_x_3);
                    acc2 = acc2 + v_Gy_0*v_x_0;
                    acc3 = acc3 + v_Gy_1*v_x_0;
                    acc4 = acc4 + v_Gy_2*v_x_0;
                    acc5 = acc5 + v_Gy_3*v_x_0;
                    acc6 = acc6 + v_Gy_0*v_x_1;
                    acc7 = acc7 + v_Gy_1*v_x_1;
                }
                *(geoattn_lanes_t *)Gram_2_3 = acc0;
                *(geoattn_lanes_t *)Gram_3_3 = acc1;
                *(geoattn_lanes_t *)Pbar_0_0 = acc2;
                *(geoattn_lanes_t *)Pbar_0_1 = acc3;
                *(geoattn_lanes_t *)Pbar_0_2 = acc4;
                *(geoattn_lanes_t *)Pbar_0_3 = acc5;
                *(geoattn_lanes_t *)Pbar_1_0 = acc6;
                *(geoattn_lanes_t *)Pbar_1_1 = acc7;
            }
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Pbar_1_2;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Pbar_1_3;
                geoattn_lanes_t acc2 = *(const geoattn_lanes_t *)Pbar_2_0;
                geoattn_lanes_t acc3 = *(const geoattn_lanes_t *)Pbar_2_1;
                geoattn_lanes_t acc4 = *(const geoattn_lanes_t *)Pbar_2_2;
                geoattn_lanes_t acc5 = *(const geoattn_lanes_t *)Pbar_2_3;
                geoattn_lanes_t acc6 = *(const geoattn_lanes_t *)Pbar_3_0;
                geoattn_lanes_t acc7 = *(const geoattn_lanes_t *)Pbar_3_1;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_1 = *(const geoattn_lanes_t *)(tile_x + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_2 = *(const geoattn_lanes_t *)(tile_x + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_x_3 = *(const geoattn_lanes_t *)(tile_x + (3 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_0 = *(const geoattn_lanes_t *)(tile_Gy + (0 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_1 = *(const geoattn_lanes_t *)(tile_Gy + (1 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_2 = *(const geoattn_lanes_t *)(tile_Gy + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_3 = *(const geoattn_lanes_t *)(tile_Gy + (3 + 4*tt)*LANES);
                    acc0 = acc0 + v_Gy_2*v_x_1;
                    acc1 = acc1 + v_Gy_3*v_x_1;
                    acc2 = acc2 + v_Gy_0*v_x_2;
                    acc3 = acc3 + v_Gy_1*v_x_2;
                    acc4 = acc4 + v_Gy_2*v_x_2;
                    acc5 = acc5 + v_Gy_3*v_x_2;
                    acc6 = acc6 + v_Gy_0*v_x_3;
                    acc7 = acc7 + v_Gy_1*v_x_3;
                }
                *(geoattn_lanes_t *)Pbar_1_2 = acc0;
                *(geoattn_lanes_t *)Pbar_1_3 = acc1;
                *(geoattn_lanes_t *)Pbar_2_0 = acc2;
                *(geoattn_lanes_t *)Pbar_2_1 = acc3;
                *(geoattn_lanes_t *)Pbar_2_2 = acc4;
                *(geoattn_lanes_t *)Pbar_2_3 = acc5;
                *(geoattn_lanes_t *)Pbar_3_0 = acc6;
                *(geoattn_lanes_t *)Pbar_3_1 = acc7;
            }
            {
                geoattn_lanes_t acc0 = *(const geoattn_lanes_t *)Pbar_3_2;
                geoattn_lanes_t acc1 = *(const geoattn_lanes_t *)Pbar_3_3;
                for (int64_t tt = 0; tt < nt; tt++) {
                    const geoattn_lanes_t v_x_3 = *(const geoattn_lanes_t *)(tile_x + (3 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_2 = *(const geoattn_lanes_t *)(tile_Gy + (2 + 4*tt)*LANES);
                    const geoattn_lanes_t v_Gy_3 = *(const geoattn_lanes_t *)(tile_Gy + (3 + 4*tt)*LANES);
                    acc0 = acc0 + v_Gy_2*v_x_3;
                    acc1 = acc1 + v_Gy_3*v_x_3;
                }
                *(geoattn_lanes_t *)Pbar_3_2 = acc0;
                *(geoattn_lanes_t *)Pbar_3_3 = acc1;
            }
            #endif
        }
        for (int l = 0; l < LANES; l++) {
            P_0_0[l] = 2.0*N_0_0[l] - 1.0;
            P_0_1[l] = 2.0*N_0_1[l];
            P_0_2[l] = 2.0*N_0_2[l];
            P_0_3[l] = 2.0*N_0_3[l];
            P_1_0[l] = 2.0*N_1_0[l];
            P_1_1[l] = 2.0*N_1_1[l] - 1.0;
            P_1_2[l] = 2.0*N_1_2[l];
            P_1_3[l] = 2.0*N_1_3[l];
            P_2_0[l] = 2.0*N_2_0[l];
            P_2_1[l] = 2.0*N_2_1[l];
            P_2_2[l] = 2.0*N_2_2[l] - 1.0;
            P_2_3[l] = 2.0*N_2_3[l];
            P_3_0[l] = 2.0*N_3_0[l];
            P_3_1[l] = 2.0*N_3_1[l];
            P_3_2[l] = 2.0*N_3_2[l];
            P_3_3[l] = 2.0*N_3_3[l] - 1.0;
            const double sMbar_0 = 2.0*N_0_0[l]*Pbar_0_0[l] + 2.0*N_0_1[l]*Pbar_0_1[l] + 2.0*N_0_2[l]*Pbar_0_2[l] + 2.0*N_0_3[l]*Pbar_0_3[l];
            const double sMbar_1 = 2.0*N_0_0[l]*Pbar_1_0[l] + 2.0*N_0_1[l]*Pbar_1_1[l] + 2.0*N_0_2[l]*Pbar_1_2[l] + 2.0*N_0_3[l]*Pbar_1_3[l];
            const double sMbar_2 = 2.0*N_0_0[l]*Pbar_2_0[l] + 2.0*N_0_1[l]*Pbar_2_1[l] + 2.0*N_0_2[l]*Pbar_2_2[l] + 2.0*N_0_3[l]*Pbar_2_3[l];
            const double sMbar_3 = 2.0*N_0_0[l]*Pbar_3_0[l] + 2.0*N_0_1[l]*Pbar_3_1[l] + 2.0*N_0_2[l]*Pbar_3_2[l] + 2.0*N_0_3[l]*Pbar_3_3[l];
            const double sMbar_4 = 2.0*N_1_0[l]*Pbar_0_0[l] + 2.0*N_1_1[l]*Pbar_0_1[l] + 2.0*N_1_2[l]*Pbar_0_2[l] + 2.0*N_1_3[l]*Pbar_0_3[l];
            const double sMbar_5 = 2.0*N_1_0[l]*Pbar_1_0[l] + 2.0*N_1_1[l]*Pbar_1_1[l] + 2.0*N_1_2[l]*Pbar_1_2[l] + 2.0*N_1_3[l]*Pbar_1_3[l];
            const double sMbar_6 = 2.0*N_1_0[l]*Pbar_2_0[l] + 2.0*N_1_1[l]*Pbar_2_1[l] + 2.0*N_1_2[l]*Pbar_2_2[l] + 2.0*N_1_3[l]*Pbar_2_3[l];
            const double sMbar_7 = 2.0*N_1_0[l]*Pbar_3_0[l] + 2.0*N_1_1[l]*Pbar_3_1[l] + 2.0*N_1_2[l]*Pbar_3_2[l] + 2.0*N_1_3[l]*Pbar_3_3[l];
            const double sMbar_8 = 2.0*N_2_0[l]*Pbar_0_0[l] + 2.0*N_2_1[l]*Pbar_0_1[l] + 2.0*N_2_2[l]*Pbar_0_2[l] + 2.0*N_2_3[l]*Pbar_0_3[l];
            const double sMbar_9 = 2.0*N_2_0[l]*Pbar_1_0[l] + 2.0*N_2_1[l]*Pbar_1_1[l] + 2.0*N_2_2[l]*Pbar_1_2[l] + 2.0*N_2_3[l]*Pbar_1_3[l];
            const double sMbar_10 = 2.0*N_2_0[l]*Pbar_2_0[l] + 2.0*N_2_1[l]*Pbar_2_1[l] + 2.0*N_2_2[l]*Pbar_2_2[l] + 2.0*N_2_3[l]*Pbar_2_3[l];
            const double sMbar_11 = 2.0*N_2_0[l]*Pbar_3_0[l] + 2.0*N_2_1[l]*Pbar_3_1[l] + 2.0*N_2_2[l]*Pbar_3_2[l] + 2.0*N_2_3[l]*Pbar_3_3[l];
            const double sMbar_12 = 2.0*N_3_0[l]*Pbar_0_0[l] + 2.0*N_3_1[l]*Pbar_0_1[l] + 2.0*N_3_2[l]*Pbar_0_2[l] + 2.0*N_3_3[l]*Pbar_0_3[l];
            const double sMbar_13 = 2.0*N_3_0[l]*Pbar_1_0[l] + 2.0*N_3_1[l]*Pbar_1_1[l] + 2.0*N_3_2[l]*Pbar_1_2[l] + 2.0*N_3_3[l]*Pbar_1_3[l];
            const double sMbar_14 = 2.0*N_3_0[l]*Pbar_2_0[l] + 2.0*N_3_1[l]*Pbar_2_1[l] + 2.0*N_3_2[l]*Pbar_2_2[l] + 2.0*N_3_3[l]*Pbar_2_3[l];
            const double sMbar_15 = 2.0*N_3_0[l]*Pbar_3_0[l] + 2.0*N_3_1[l]*Pbar_3_1[l] + 2.0*N_3_2[l]*Pbar_3_2[l] + 2.0*N_3_3[l]*Pbar_3_3[l];
            const double Mbar_0_0 = -N_0_0[l]*sMbar_0 - N_1_0[l]*sMbar_1 - N_2_0[l]*sMbar_2 - N_3_0[l]*sMbar_3;
            const double Mbar_0_1 = -N_0_1[l]*sMbar_0 - N_1_1[l]*sMbar_1 - N_2_1[l]*sMbar_2 - N_3_1[l]*sMbar_3;
            const double Mbar_0_2 = -N_0_2[l]*sMbar_0 - N_1_2[l]*sMbar_1 - N_2_2[l]*sMbar_2 - N_3_2[l]*sMbar_3;
            const double Mbar_0_3 = -N_0_3[l]*sMbar_0 - N_1_3[l]*sMbar_1 - N_2_3[l]*sMbar_2 - N_3_3[l]*sMbar_3;
            const double Mbar_1_0 = -N_0_0[l]*sMbar_4 - N_1_0[l]*sMbar_5 - N_2_0[l]*sMbar_6 - N_3_0[l]*sMbar_7;
            const double Mbar_1_1 = -N_0_1[l]*sMbar_4 - N_1_1[l]*sMbar_5 - N_2_1[l]*sMbar_6 - N_3_1[l]*sMbar_7;
            const double Mbar_1_2 = -N_0_2[l]*sMbar_4 - N_1_2[l]*sMbar_5 - N_2_2[l]*sMbar_6 - N_3_2[l]*sMbar_7;
            const double Mbar_1_3 = -N_0_3[l]*sMbar_4 - N_1_3[l]*sMbar_5 - N_2_3[l]*sMbar_6 - N_3_3[l]*sMbar_7;
            const double Mbar_2_0 = -N_0_0[l]*sMbar_8 - N_1_0[l]*sMbar_9 - N_2_0[l]*sMbar_10 - N_3_0[l]*sMbar_11;
            const double Mbar_2_1 = -N_0_1[l]*sMbar_8 - N_1_1[l]*sMbar_9 - N_2_1[l]*sMbar_10 - N_3_1[l]*sMbar_11;
            const double Mbar_2_2 = -N_0_2[l]*sMbar_8 - N_1_2[l]*sMbar_9 - N_2_2[l]*sMbar_10 - N_3_2[l]*sMbar_11;
            const double Mbar_2_3 = -N_0_3[l]*sMbar_8 - N_1_3[l]*sMbar_9 - N_2_3[l]*sMbar_10 - N_3_3[l]*sMbar_11;
            const double Mbar_3_0 = -N_0_0[l]*sMbar_12 - N_1_0[l]*sMbar_13 - N_2_0[l]*sMbar_14 - N_3_0[l]*sMbar_15;
            const double Mbar_3_1 = -N_0_1[l]*sMbar_12 - N_1_1[l]*sMbar_13 - N_2_1[l]*sMbar_14 - N_3_1[l]*sMbar_15;
            const double Mbar_3_2 = -N_0_2[l]*sMbar_12 - N_1_2[l]*sMbar_13 - N_2_2[l]*sMbar_14 - N_3_2[l]*sMbar_15;
            const double Mbar_3_3 = -N_0_3[l]*sMbar_12 - N_1_3[l]*sMbar_13 - N_2_3[l]*sMbar_14 - N_3_3[l]*sMbar_15;
            const double sH_0 = 2.0*A_2_0;
            const double sH_1 = 2.0*A_3_0;
            const double sH_2 = 2.0*A_2_1;
            const double sH_3 = 2.0*A_3_1;
            const double sH_4 = 2.0*A_3_2;
            H_0_0[l] = -2.0*A_1_0*Mbar_0_1 - Mbar_0_2*sH_0 - Mbar_0_3*sH_1;
            H_0_1[l] = A_1_0*Mbar_0_0 - A_1_0*Mbar_1_1 - A_2_0*Mbar_1_2 - A_2_1*Mbar_0_2 - A_3_0*Mbar_1_3 - A_3_1*Mbar_0_3;
            H_0_2[l] = -A_1_0*Mbar_2_1 + A_2_0*Mbar_0_0 - A_2_0*Mbar_2_2 + A_2_1*Mbar_0_1 - A_3_0*Mbar_2_3 - A_3_2*Mbar_0_3;
            H_0_3[l] = -A_1_0*Mbar_3_1 - A_2_0*Mbar_3_2 + A_3_0*Mbar_0_0 - A_3_0*Mbar_3_3 + A_3_1*Mbar_0_1 + A_3_2*Mbar_0_2;
            H_1_1[l] = 2.0*A_1_0*Mbar_1_0 - Mbar_1_2*sH_2 - Mbar_1_3*sH_3;
            H_1_2[l] = A_1_0*Mbar_2_0 + A_2_0*Mbar_1_0 + A_2_1*Mbar_1_1 - A_2_1*Mbar_2_2 - A_3_1*Mbar_2_3 - A_3_2*Mbar_1_3;
            H_1_3[l] = A_1_0*Mbar_3_0 - A_2_1*Mbar_3_2 + A_3_0*Mbar_1_0 + A_3_1*Mbar_1_1 - A_3_1*Mbar_3_3 + A_3_2*Mbar_1_2;
            H_2_2[l] = Mbar_2_0*sH_0 + Mbar_2_1*sH_2 - Mbar_2_3*sH_4;
            H_2_3[l] = A_2_0*Mbar_3_0 + A_2_1*Mbar_3_1 + A_3_0*Mbar_2_0 + A_3_1*Mbar_2_1 + A_3_2*Mbar_2_2 - A_3_2*Mbar_3_3;
            H_3_3[l] = Mbar_3_0*sH_1 + Mbar_3_1*sH_3 + Mbar_3_2*sH_4;
            gA_0_0[l] = Gram_0_0[l]*Mbar_0_0 + Gram_0_1[l]*Mbar_1_0 + Gram_0_2[l]*Mbar_2_0 + Gram_0_3[l]*Mbar_3_0;
            gA_0_1[l] = Gram_0_0[l]*Mbar_0_1 + Gram_0_1[l]*Mbar_1_1 + Gram_0_2[l]*Mbar_2_1 + Gram_0_3[l]*Mbar_3_1;
            gA_0_2[l] = Gram_0_0[l]*Mbar_0_2 + Gram_0_1[l]*Mbar_1_2 + Gram_0_2[l]*Mbar_2_2 + Gram_0_3[l]*Mbar_3_2;
            gA_0_3[l] = Gram_0_0[l]*Mbar_0_3 + Gram_0_1[l]*Mbar_1_3 + Gram_0_2[l]*Mbar_2_3 + Gram_0_3[l]*Mbar_3_3;
            gA_1_0[l] = Gram_0_1[l]*Mbar_0_0 + Gram_1_1[l]*Mbar_1_0 + Gram_1_2[l]*Mbar_2_0 + Gram_1_3[l]*Mbar_3_0;
            gA_1_1[l] = Gram_0_1[l]*Mbar_0_1 + Gram_1_1[l]*Mbar_1_1 + Gram_1_2[l]*Mbar_2_1 + Gram_1_3[l]*Mbar_3_1;
            gA_1_2[l] = Gram_0_1[l]*Mbar_0_2 + Gram_1_1[l]*Mbar_1_2 + Gram_1_2[l]*Mbar_2_2 + Gram_1_3[l]*Mbar_3_2;
            gA_1_3[l] = Gram_0_1[l]*Mbar_0_3 + Gram_1_1[l]*Mbar_1_3 + Gram_1_2[l]*Mbar_2_3 + Gram_1_3[l]*Mbar_3_3;
            gA_2_0[l] = Gram_0_2[l]*Mbar_0_0 + Gram_1_2[l]*Mbar_1_0 + Gram_2_2[l]*Mbar_2_0 + Gram_2_3[l]*Mbar_3_0;
            gA_2_1[l] = Gram_0_2[l]*Mbar_0_1 + Gram_1_2[l]*Mbar_1_1 + Gram_2_2[l]*Mbar_2_1 + Gram_2_3[l]*Mbar_3_1;
            gA_2_2[l] = Gram_0_2[l]*Mbar_0_2 + Gram_1_2[l]*Mbar_1_2 + Gram_2_2[l]*Mbar_2_2 + Gram_2_3[l]*Mbar_3_2;
            gA_2_3[l] = Gram_0_2[l]*Mbar_0_3 + Gram_1_2[l]*Mbar_1_3 + Gram_2_2[l]*Mbar_2_3 + Gram_2_3[l]*Mbar_3_3;
            gA_3_0[l] = Gram_0_3[l]*Mbar_0_0 + Gram_1_3[l]*Mbar_1_0 + Gram_2_3[l]*Mbar_2_0 + Gram_3_3[l]*Mbar_3_0;
            gA_3_1[l] = Gram_0_3[l]*Mbar_0_1 + Gram_1_3[l]*Mbar_1_1 + Gram_2_3[l]*Mbar_2_1 + Gram_3_3[l]*Mbar_3_1;
            gA_3_2[l] = Gram_0_3[l]*Mbar_0_2 + Gram_1_3[l]*Mbar_1_2 + Gram_2_3[l]*Mbar_2_2 + Gram_3_3[l]*Mbar_3_2;
            gA_3_3[l] = Gram_0_3[l]*Mbar_0_3 + Gram_1_3[l]*Mbar_1_3 + Gram_2_3[l]*Mbar_2_3 + Gram_3_3[l]*Mbar_3_3;
        }
        for (int l = 0; l < nl; l++) {
            gA[(int64_t)(b0 + l)*16 + 0] = gA_0_0[l];
            gA[(int64_t)(b0 + l)*16 + 1] = gA_0_1[l];
            gA[(int64_t)(b0 + l)*16 + 2] = gA_0_2[l];
            gA[(int64_t)(b0 + l)*16 + 3] = gA_0_3[l];
            gA[(int64_t)(b0 + l)*16 + 4] = gA_1_0[l];
            gA[(int64_t)(b0 + l)*16 + 5] = gA_1_1[l];
            gA[(int64_t)(b0 + l)*16 + 6] = gA_1_2[l];
            gA[(int64_t)(b0 + l)*16 + 7] = gA_1_3[l];
            gA[(int64_t)(b0 + l)*16 + 8] = gA_2_0[l];
            gA[(int64_t)(b0 + l)*16 + 9] = gA_2_1[l];
            gA[(int64_t)(b0 + l)*16 + 10] = gA_2_2[l];
            gA[(int64_t)(b0 + l)*16 + 11] = gA_2_3[l];
            gA[(int64_t)(b0 + l)*16 + 12] = gA_3_0[l];
            gA[(int64_t)(b0 + l)*16 + 13] = gA_3_1[l];
            gA[(int64_t)(b0 + l)*16 + 14] = gA_3_2[l];
            gA[(int64_t)(b0 + l)*16 + 15] = gA_3_3[l];
        }
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t t0 = c*TOKEN_CHUNK, nt = T - t0 < TOKEN_CHUNK ? T - t0 : TOKEN_CHUNK;
            if (nchunks > 1) {
                const real_t *src_x[LANES];
                const real_t *src_Gy[LANES];
                for (int l = 0; l < LANES; l++) {
                    const int64_t bl = b0 + (l < nl ? l : nl - 1);
                    src_x[l] = x + (bl*T + t0)*4;
                    src_Gy[l] = Gy + (bl*T + t0)*4;
                }
                for (int64_t tt = 0; tt < nt*4; tt++)
                    for (int l = 0; l < LANES; l++) tile_x[tt*LANES + l] = (double)src_x[l][tt];
                for (int64_t tt = 0; tt < nt*4; tt++)
                    for (int l = 0; l < LANES; l++) tile_Gy[tt*LANES + l] = (double)src_Gy[l][tt];
            }
            for (int64_t tt = 0; tt < nt; tt++) {
                for (int l = 0; l < LANES; l++) {
                    row_gx[0][l] = tile_Gy[(0 + 4*tt)*LANES + l]*P_0_0[l] + tile_Gy[(1 + 4*tt)*LANES + l]*P_0_1[l] + tile_Gy[(2 + 4*tt)*LANES + l]*P_0_2[l] + tile_Gy[(3 + 4*tt)*LANES + l]*P_0_3[l] + H_0_0[l]*tile_x[(0 + 4*tt)*LANES + l] + H_0_1[l]*tile_x[(1 + 4*tt)*LANES + l] + H_0_2[l]*tile_x[(2 + 4*tt)*LANES + l] + H_0_3[l]*tile_x[(3 + 4*tt)*LANES + l];
                    row_gx[1][l] = tile_Gy[(0 + 4*tt)*LANES + l]*P_1_0[l] + tile_Gy[(1 + 4*tt)*LANES + l]*P_1_1[l] + tile_Gy[(2 + 4*tt)*LANES + l]*P_1_2[l] + tile_Gy[(3 + 4*tt)*LANES + l]*P_1_3[l] + H_0_1[l]*tile_x[(0 + 4*tt)*LANES + l] + H_1_1[l]*tile_x[(1 + 4*tt)*LANES + l] + H_1_2[l]*tile_x[(2 + 4*tt)*LANES + l] + H_1_3[l]*tile_x[(3 + 4*tt)*LANES + l];
                    row_gx[2][l] = tile_Gy[(0 + 4*tt)*LANES + l]*P_2_0[l] + tile_Gy[(1 + 4*tt)*LANES + l]*P_2_1[l] + tile_Gy[(2 + 4*tt)*LANES + l]*P_2_2[l] + tile_Gy[(3 + 4*tt)*LANES + l]*P_2_3[l] + H_0_2[l]*tile_x[(0 + 4*tt)*LANES + l] + H_1_2[l]*tile_x[(1 + 4*tt)*LANES + l] + H_2_2[l]*tile_x[(2 + 4*tt)*LANES + l] + H_2_3[l]*tile_x[(3 + 4*tt)*LANES + l];
                    row_gx[3][l] = tile_Gy[(0 + 4*tt)*LANES + l]*P_3_0[l] + tile_Gy[(1 + 4*tt)*LANES + l]*P_3_1[l] + tile_Gy[(2 + 4*tt)*LANES + l]*P_3_2[l] + tile_Gy[(3 + 4*tt)*LANES + l]*P_3_3[l] + H_0_3[l]*tile_x[(0 + 4*tt)*LANES + l] + H_1_3[l]*tile_x[(1 + 4*tt)*LANES + l] + H_2_3[l]*tile_x[(2 + 4*tt)*LANES + l] + H_3_3[l]*tile_x[(3 + 4*tt)*LANES + l];
                }
                for (int l = 0; l < nl; l++) {
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*4 + 0] = (real_t)(row_gx[0][l]);
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*4 + 1] = (real_t)(row_gx[1][l]);
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*4 + 2] = (real_t)(row_gx[2][l]);
                    gx[((int64_t)(b0 + l)*T + t0 + tt)*4 + 3] = (real_t)(row_gx[3][l]);
                }
            }
        }
    }
}

#endif  /* d = 4 */
