/* The d x d stage of the Gram form y = 2 x (I + x^T x A)^{-T} - x for 17 <= d <= 64, per sample.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/gram_lu_big_c.py); `geoattn codegen
   --check` fails when it is stale. N = M^{-T}, M = I + Gram A, by Cholesky and an unpivoted LU of I - K
   (K = L^T A L skew), the residual, an LU with partial pivoting for the samples it fails, and the backward's
   products [ledger: vp.gram_form, vp.gram_lu_woodbury, vp.gram_lu_vjp]. Compiled at first use by
   geoattn.kernels._native_lu_big, one library per d and real type (-DGEOATTN_D=<d> -DGEOATTN_F32 or
   -DGEOATTN_F64); never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#if !defined(GEOATTN_D) || GEOATTN_D < 17 || GEOATTN_D > 64
#error "compile with -DGEOATTN_D=<d>, 17 <= d <= 64"
#endif
#define D GEOATTN_D
#define KSIGN -
#define RETRY 1
#define MBAR_SCALE (-2.0)
#if defined(GEOATTN_F32)
typedef float real_t;
#define NAME3(a, b) geoattn_##a##_d##b##_f32
#elif defined(GEOATTN_F64)
typedef double real_t;
#define NAME3(a, b) geoattn_##a##_d##b##_f64
#else
#error "compile with -DGEOATTN_F32 or -DGEOATTN_F64"
#endif
#define NAME2(a, b) NAME3(a, b)
#define NAME(a) NAME2(a, D)
#if defined(__GNUC__) && !defined(__clang__)
/* a*b + c as one fused multiply-add where the CPU has one (a rounding less, never a reassociation) */
#pragma GCC optimize ("fp-contract=fast")
#endif

/* Every d x d matrix of the stage lives in a local array of D rows padded to DP = 8 NV doubles (zero past column D),
   read and written a row at a time as NV vectors of eight doubles; rows of products are accumulated in registers. */
#define NV ((D + 7) / 8)
#define DP (8 * NV)
#define RB (NV <= 4 ? 4 : 2)  /* rows of a product per block: 16 vector accumulators */
typedef double vd __attribute__((vector_size(64), may_alias));
typedef long long vl __attribute__((vector_size(64), may_alias));
typedef double mat[D][DP] __attribute__((aligned(64)));
#define V(M, i) ((vd *)(M)[i])
#define UNROLL _Pragma("GCC unroll 8")
/* the residual check's probes: entry k of eight sign vectors in row k (geoattn.codegen.gram_lu_big_c.probe_signs) */
static const double PROBE[64][8] __attribute__((aligned(64))) = {
    {1.0, -1.0, -1.0, 1.0, -1.0, -1.0, -1.0, 1.0},
    {1.0, -1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, -1.0, -1.0, 1.0},
    {-1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0},
    {1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0},
    {1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0, -1.0},
    {1.0, -1.0, 1.0, -1.0, -1.0, 1.0, -1.0, -1.0},
    {1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0, -1.0},
    {1.0, -1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0},
    {1.0, 1.0, -1.0, 1.0, -1.0, -1.0, -1.0, -1.0},
    {-1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0},
    {-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0},
    {1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0},
    {1.0, -1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0},
    {1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0},
    {1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0},
    {1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0},
    {1.0, 1.0, 1.0, -1.0, -1.0, -1.0, 1.0, -1.0},
    {-1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0},
    {-1.0, -1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0},
    {-1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 1.0, -1.0},
    {1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0},
    {1.0, 1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0},
    {-1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0, -1.0},
    {-1.0, -1.0, -1.0, 1.0, 1.0, -1.0, -1.0, -1.0},
    {-1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0},
    {-1.0, -1.0, 1.0, -1.0, -1.0, -1.0, -1.0, -1.0},
    {-1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0},
    {1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0},
    {-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0},
    {1.0, 1.0, -1.0, 1.0, 1.0, 1.0, -1.0, -1.0},
    {1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, -1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 1.0},
    {-1.0, -1.0, 1.0, -1.0, 1.0, 1.0, 1.0, -1.0},
    {-1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0},
    {-1.0, -1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0},
    {1.0, 1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0},
    {1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0},
    {-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0},
    {-1.0, 1.0, -1.0, 1.0, 1.0, 1.0, -1.0, -1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, -1.0, -1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0},
    {-1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0},
    {-1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0},
    {-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0},
    {-1.0, 1.0, 1.0, -1.0, -1.0, -1.0, 1.0, 1.0},
    {-1.0, -1.0, -1.0, -1.0, 1.0, 1.0, -1.0, -1.0},
    {-1.0, -1.0, 1.0, -1.0, 1.0, 1.0, 1.0, -1.0},
    {-1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0, -1.0},
    {1.0, -1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0},
    {-1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0},
    {1.0, 1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0},
    {-1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0},
    {-1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0, -1.0},
    {1.0, -1.0, 1.0, -1.0, -1.0, -1.0, -1.0, 1.0},
    {1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0},
    {1.0, 1.0, 1.0, -1.0, -1.0, -1.0, 1.0, -1.0},
    {-1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0},
    {-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0},
    {-1.0, 1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0},
    {-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0}
};
#define PV(k) (*(const vd *)PROBE[k])

/* S (D x D, row-major) into M, zero padded; transposed when t */
static void load(const double *restrict S, int t, mat M)
{
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) M[i][j] = t ? S[j*D + i] : S[i*D + j];
        for (int j = D; j < DP; j++) M[i][j] = 0.0;
    }
}

static void store(mat M, double *restrict S)
{
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) S[i*D + j] = M[i][j];
}

/* C = X Y (+ C when add) for X of n padded rows, Y a matrix; RB rows of C at a time in vector accumulators; upper
   says X is upper triangular (the sums of a block of rows start at its first row) */
static void mul_n(int n, const double (*restrict X)[DP], mat Y, double (*C)[DP], int add, int upper)
{
    int i = 0;
    for (; i + RB <= n; i += RB) {
        vd acc[RB][NV];
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) acc[r][v] = add ? V(C, i + r)[v]
                                                                                                   : (vd){0};
        for (int k = upper ? i : 0; k < D; k++) {
            vd y[NV];
            UNROLL for (int v = 0; v < NV; v++) y[v] = V(Y, k)[v];
            UNROLL for (int r = 0; r < RB; r++) {
                const double a = X[i + r][k];
                UNROLL for (int v = 0; v < NV; v++) acc[r][v] += a*y[v];
            }
        }
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) V(C, i + r)[v] = acc[r][v];
    }
    for (; i < n; i++) {
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = add ? V(C, i)[v] : (vd){0};
        for (int k = upper ? i : 0; k < D; k++) {
            const double a = X[i][k];
            UNROLL for (int v = 0; v < NV; v++) acc[v] += a*V(Y, k)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) V(C, i)[v] = acc[v];
    }
}

static void mul(mat X, mat Y, mat C)
{
    mul_n(D, (const double (*)[DP])X, Y, C, 0, 0);
}

/* C = X^T Y for X and Y of n padded rows (the Gram matrix and Pbar: sums over the tokens) */
static void mul_tn(int n, const double (*X)[DP], const double (*Y)[DP], mat C)
{
    int i = 0;
    for (; i + RB <= D; i += RB) {
        vd acc[RB][NV];
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) acc[r][v] = (vd){0};
        for (int t = 0; t < n; t++) {
            vd y[NV];
            UNROLL for (int v = 0; v < NV; v++) y[v] = V(Y, t)[v];
            UNROLL for (int r = 0; r < RB; r++) {
                const double a = X[t][i + r];
                UNROLL for (int v = 0; v < NV; v++) acc[r][v] += a*y[v];
            }
        }
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) V(C, i + r)[v] = acc[r][v];
    }
    for (; i < D; i++) {
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = (vd){0};
        for (int t = 0; t < n; t++) {
            const double a = X[t][i];
            UNROLL for (int v = 0; v < NV; v++) acc[v] += a*V(Y, t)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) V(C, i)[v] = acc[v];
    }
}

/* n padded rows aligned to 64 bytes from malloc (C99 has no aligned allocation); *base is what to free */
static double (*rows(int64_t n, void **base))[DP]
{
    *base = malloc(sizeof(double[DP]) * (size_t)n + 64);
    if (*base == NULL) return NULL;
    return (double (*)[DP])(((uintptr_t)*base + 63) & ~(uintptr_t)63);
}

/* the n x D tokens at S into n padded double rows */
static void load_tokens(const real_t *restrict S, int n, double (*restrict X)[DP])
{
    for (int t = 0; t < n; t++) {
        for (int j = 0; j < D; j++) X[t][j] = S[t*D + j];
        for (int j = D; j < DP; j++) X[t][j] = 0.0;
    }
}

static void store_tokens(const double (*restrict X)[DP], int n, real_t *restrict S)
{
    for (int t = 0; t < n; t++)
        for (int j = 0; j < D; j++) S[t*D + j] = (real_t)X[t][j];
}

/* Y = X^T */
static void transpose(mat X, mat Y)
{
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) Y[i][j] = X[j][i];
        for (int j = D; j < DP; j++) Y[i][j] = 0.0;
    }
}

/* the largest |R V| with R = (I - A G) N - I and V the D x 8 table PROBE of signs, NaN when one entry is (sign bits
   cleared, masks blended): three matrix-vector passes of eight lanes, U = N V, W = G U, R V = U - A W - V, in place
   of the two d x d products of R itself [ledger: vp.gram_probe_residual] */
static double probe_residual(mat G, mat A, mat N)
{
    vd U[D], W[D];
    for (int i = 0; i < D; i++) {
        vd acc = (vd){0};
        for (int k = 0; k < D; k++) acc += N[i][k]*PV(k);
        U[i] = acc;
    }
    for (int i = 0; i < D; i++) {
        vd acc = (vd){0};
        for (int k = 0; k < D; k++) acc += G[i][k]*U[k];
        W[i] = acc;
    }
    vd m = (vd){0};
    for (int i = 0; i < D; i++) {
        vd acc = U[i] - PV(i);
        for (int k = 0; k < D; k++) acc -= A[i][k]*W[k];
        const vd a = (vd)((vl)acc & 0x7fffffffffffffffLL);
        const vl take = (a > m) | (a != a);
        m = (vd)(((vl)a & take) | ((vl)m & ~take));
    }
    double r = 0.0;
    for (int l = 0; l < 8; l++) {
        if (m[l] != m[l]) return m[l];
        if (m[l] > r) r = m[l];
    }
    return r;
}

/* N = MT^{-1} by an LU with partial pivoting (a zero pivot leaves non-finite entries, which the residual sees) */
static void pivoted(mat MT, mat N)
{
    mat U;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < DP; j++) { U[i][j] = MT[i][j]; N[i][j] = i == j ? 1.0 : 0.0; }
    for (int k = 0; k < D; k++) {
        int r = k;
        for (int i = k + 1; i < D; i++) if (fabs(U[i][k]) > fabs(U[r][k])) r = i;
        if (r != k)
            for (int v = 0; v < NV; v++) {
                vd t = V(U, k)[v]; V(U, k)[v] = V(U, r)[v]; V(U, r)[v] = t;
                t = V(N, k)[v]; V(N, k)[v] = V(N, r)[v]; V(N, r)[v] = t;
            }
        const double inv = 1.0/U[k][k];
        for (int i = k + 1; i < D; i++) {
            const double f = U[i][k]*inv;
            for (int j = k + 1; j < D; j++) U[i][j] -= f*U[k][j];
            UNROLL for (int v = 0; v < NV; v++) V(N, i)[v] -= f*V(N, k)[v];
        }
    }
    for (int i = D - 1; i >= 0; i--) {
        for (int k = i + 1; k < D; k++) {
            const double f = U[i][k];
            UNROLL for (int v = 0; v < NV; v++) V(N, i)[v] -= f*V(N, k)[v];
        }
        const double inv = 1.0/U[i][i];
        UNROLL for (int v = 0; v < NV; v++) V(N, i)[v] *= inv;
    }
}

/* N = M^{-T} of one sample by the Cholesky-Woodbury form (vp.gram_lu_woodbury), P = 2N - I, the largest entry of
   the residual on the probes; the pivoted form where it exceeds tol or is NaN */
static double factor(mat G, mat A, double tol, mat N, mat P)
{
    mat Z, L, W, Bm;
    double rinv[D];
    for (int k = 0; k < D; k++) {  /* Gram = Z^T Z, Z = L^T upper, row k from the rows above it */
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = V(G, k)[v];
        for (int j = 0; j < k; j++) {
            const double f = Z[j][k];
            UNROLL for (int v = 0; v < NV; v++) acc[v] -= f*V(Z, j)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) V(Z, k)[v] = acc[v];
        const double s = Z[k][k];
        const double q = s > 0.0 ? sqrt(s) : 0.0, r = s > 0.0 ? 1.0/q : 0.0;  /* a zero row where s <= 0 or NaN */
        UNROLL for (int v = 0; v < NV; v++) V(Z, k)[v] *= r;
        for (int j = 0; j < k; j++) Z[k][j] = 0.0;
        Z[k][k] = q;
    }
    transpose(Z, L);
    mul(A, L, W);  /* W = A L */
    mul_n(D, (const double (*)[DP])Z, W, Bm, 0, 1);  /* K = L^T A L (Z = L^T upper); Bm = I - K from K's upper part */
    for (int i = 0; i < D; i++) {
        for (int j = i + 1; j < D; j++) { Bm[i][j] = KSIGN Bm[i][j]; Bm[j][i] = -Bm[i][j]; }
        Bm[i][i] = 1.0;
    }
    /* the elimination of Bm without pivoting (its U in Bm's upper part) applied to Z = L^T at the same time, so Z
       becomes the unit lower factor's solve; right-looking: the updates of the rows below pivot k are independent
       of each other (no chain through one row), each in place */
    for (int k = 0; k < D; k++) {
        const double rk = 1.0/Bm[k][k];
        rinv[k] = rk;
        for (int i = k + 1; i < D; i++) {
            const double f = Bm[i][k]*rk;
            for (int v = k >> 3; v < NV; v++) V(Bm, i)[v] -= f*V(Bm, k)[v];
            UNROLL for (int v = 0; v < NV; v++) V(Z, i)[v] -= f*V(Z, k)[v];
        }
    }
    /* then the upper factor's solve from the last row up, two rows at a time (two independent sums) */
    int i = D - 1;
    for (; i >= 1; i -= 2) {
        vd a0[NV], a1[NV];
        UNROLL for (int v = 0; v < NV; v++) { a0[v] = V(Z, i)[v]; a1[v] = V(Z, i - 1)[v]; }
        for (int k = i + 1; k < D; k++) {
            const double f0 = Bm[i][k], f1 = Bm[i - 1][k];
            UNROLL for (int v = 0; v < NV; v++) { a0[v] -= f0*V(Z, k)[v]; a1[v] -= f1*V(Z, k)[v]; }
        }
        const double f = Bm[i - 1][i];
        UNROLL for (int v = 0; v < NV; v++) {
            a0[v] *= rinv[i];
            V(Z, i)[v] = a0[v];
            V(Z, i - 1)[v] = (a1[v] - f*a0[v])*rinv[i - 1];
        }
    }
    if (i == 0) {
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = V(Z, 0)[v];
        for (int k = 1; k < D; k++) {
            const double f = Bm[0][k];
            UNROLL for (int v = 0; v < NV; v++) acc[v] -= f*V(Z, k)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) V(Z, 0)[v] = acc[v]*rinv[0];
    }
    mul(W, Z, N);  /* N - I */
    for (int i = 0; i < D; i++) N[i][i] += 1.0;
    double m = probe_residual(G, A, N);
#if RETRY
    if (!(m <= tol)) {
        mul(A, G, Bm);  /* M^T = I - A Gram, in Bm */
        for (int i = 0; i < D; i++) {
            UNROLL for (int v = 0; v < NV; v++) V(Bm, i)[v] = -V(Bm, i)[v];
            Bm[i][i] += 1.0;
        }
        pivoted(Bm, N);
        m = probe_residual(G, A, N);
    }
#endif
    for (int i = 0; i < D; i++) {
        UNROLL for (int v = 0; v < NV; v++) V(P, i)[v] = 2.0*V(N, i)[v];
        P[i][i] -= 1.0;
    }
    return m;
}

/* the backward's d x d stage: Mbar = -2 N Pbar^T N from PbT = Pbar^T, H = A Mbar^T - Mbar A, gA = Gram Mbar,
   P = 2N - I; PbT is overwritten */
static void vjp(mat G, mat PbT, mat N, mat A, mat P, mat H, mat gA)
{
    mat W, Mb;
    mul(N, PbT, W);  /* W = N Pbar^T */
    mul(W, N, Mb);  /* Mbar = -2 W N */
    for (int i = 0; i < D; i++) UNROLL for (int v = 0; v < NV; v++) V(Mb, i)[v] *= MBAR_SCALE;
    mul(Mb, A, W);  /* K = Mbar A; H = A Mbar^T - Mbar A = -(K + K^T) as A^T = -A */
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) H[i][j] = -(W[i][j] + W[j][i]);
        for (int j = D; j < DP; j++) H[i][j] = 0.0;
    }
    mul(G, Mb, gA);
    for (int i = 0; i < D; i++) {
        UNROLL for (int v = 0; v < NV; v++) V(P, i)[v] = 2.0*V(N, i)[v];
        P[i][i] -= 1.0;
    }
}

/* forward stage: per sample N, P = 2N - I and R (the residual's largest entry) from Gram; As the whole
   skew matrix, *tol the largest residual entry kept (eps / 16 of the tokens' type) */
void NAME(vp_gram_lu_big_fwd)(int64_t B, int64_t T, const double *restrict Gram, const double *restrict As,
                              const double *restrict tol, double *restrict Ns, double *restrict Ps,
                              double *restrict R)
{
    (void)T;
    mat A, G, N, P;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load(Gram + b*D*D, 0, G);
        R[b] = factor(G, A, *tol, N, P);
        store(N, Ns + b*D*D);
        store(P, Ps + b*D*D);
    }
}

/* backward stage: per sample P = 2N - I, H = A Mbar^T - Mbar A and gA = Gram Mbar with Mbar = -2 N Pbar^T N */
void NAME(vp_gram_lu_big_bwd)(int64_t B, int64_t T, const double *restrict Gram, const double *restrict Pbar,
                              const double *restrict Ns, const double *restrict As, double *restrict Ps,
                              double *restrict Hs, double *restrict gAs)
{
    (void)T;
    mat A, G, X, N, P, H, gA;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load(Gram + b*D*D, 0, G);
        load(Pbar + b*D*D, 1, X);
        load(Ns + b*D*D, 0, N);
        vjp(G, X, N, A, P, H, gA);
        store(P, Ps + b*D*D);
        store(H, Hs + b*D*D);
        store(gA, gAs + b*D*D);
    }
}

/* the whole forward per sample, token products included: Gram = x^T x, N, R, y = x (2N - I) (products in double);
   returns 0, or 1 when the token buffers could not be allocated (nothing written then) */
int NAME(vp_gram_lu_big_tok_fwd)(int64_t B, int64_t T, const real_t *restrict x, const double *restrict As,
                                 const double *restrict tol, real_t *restrict y, double *restrict Gram,
                                 double *restrict Ns, double *restrict R)
{
    void *base;
    double (*X)[DP] = rows(2*T, &base);
    if (X == NULL) return 1;
    double (*Y)[DP] = X + T;
    mat A, G, N, P;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load_tokens(x + b*T*D, (int)T, X);
        mul_tn((int)T, (const double (*)[DP])X, (const double (*)[DP])X, G);
        store(G, Gram + b*D*D);
        R[b] = factor(G, A, *tol, N, P);
        store(N, Ns + b*D*D);
        mul_n((int)T, (const double (*)[DP])X, P, Y, 0, 0);
        store_tokens((const double (*)[DP])Y, (int)T, y + b*T*D);
    }
    free(base);
    return 0;
}

/* the whole backward per sample: Pbar^T = Gy^T x, the d x d stage on the forward's Gram (not recomputed from the
   tokens), gx = Gy P^T + x H (products in double), gA = Gram Mbar; returns 0, or 1 when the token buffers could not
   be allocated */
int NAME(vp_gram_lu_big_tok_bwd)(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy,
                                 const double *restrict Gram, const double *restrict Ns, const double *restrict As,
                                 real_t *restrict gx, double *restrict gAs)
{
    void *base;
    double (*X)[DP] = rows(3*T, &base);
    if (X == NULL) return 1;
    double (*Gd)[DP] = X + T, (*Out)[DP] = X + 2*T;
    mat A, G, PbT, N, P, H, gA, PT;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load_tokens(x + b*T*D, (int)T, X);
        load_tokens(Gy + b*T*D, (int)T, Gd);
        load(Gram + b*D*D, 0, G);
        mul_tn((int)T, (const double (*)[DP])Gd, (const double (*)[DP])X, PbT);
        load(Ns + b*D*D, 0, N);
        vjp(G, PbT, N, A, P, H, gA);
        store(gA, gAs + b*D*D);
        transpose(P, PT);
        mul_n((int)T, (const double (*)[DP])Gd, PT, Out, 0, 0);
        mul_n((int)T, (const double (*)[DP])X, H, Out, 1, 0);
        store_tokens((const double (*)[DP])Out, (int)T, gx + b*T*D);
    }
    free(base);
    return 0;
}
