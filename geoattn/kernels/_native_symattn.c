/* Native CPU kernel of nonlinear symplectic attention (symmetric A, softmax over all entries),
   1 <= n <= 16.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/symattn_c.py); `geoattn codegen
   --check` fails when it is stale. One sample at a time, VL rows side by side
   [ledger: symattn.sdpa_form, symattn.dense_vjp, symattn.native_vjp].
   Compiled at first use by geoattn.kernels._native_symattn, one library per n and real type (-DGEOATTN_D=<n>
   -DGEOATTN_F32 or -DGEOATTN_F64); never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* -std=c99 turns off the contraction of a * b + c into one fused multiply-add; this file's sums want it (one
   rounding instead of two: never less accurate). No other floating-point option changes. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#elif defined(__clang__)
#pragma clang fp contract(fast)
#endif

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
#if GEOATTN_D >= 1 && GEOATTN_D <= 16

#define N GEOATTN_D
#if defined(GEOATTN_F32)
typedef int32_t int_t;
#define EXP_LOW -87.0f
#define EXP_HIGH 88.0f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define ROUND_MAGIC 12582912.0f
#define MANT 23
#define BIAS 127
#else
typedef int64_t int_t;
#define EXP_LOW -708.0
#define EXP_HIGH 709.0
#define LOG2E 1.4426950408889634074
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define ROUND_MAGIC 6755399441055744.0
#define MANT 52
#define BIAS 1023
#endif
#define VL ((int)(GEOATTN_VBYTES / sizeof(real_t)))
typedef real_t vr __attribute__((vector_size(GEOATTN_VBYTES)));
typedef int_t vi __attribute__((vector_size(GEOATTN_VBYTES)));
#if defined(GEOATTN_F32)
#define EXP_DEG 7
static const real_t EXP_C[] = {
    1.0f,  /* 1/1 */
    1.0f,  /* 1/1 */
    0.5f,  /* 1/2 */
    0.16666666666666666f,  /* 1/6 */
    0.041666666666666664f,  /* 1/24 */
    0.008333333333333333f,  /* 1/120 */
    0.001388888888888889f,  /* 1/720 */
    0.0001984126984126984f,  /* 1/5040 */
};
#elif defined(GEOATTN_F64)
#define EXP_DEG 13
static const real_t EXP_C[] = {
    1.0,  /* 1/1 */
    1.0,  /* 1/1 */
    0.5,  /* 1/2 */
    0.16666666666666666,  /* 1/6 */
    0.041666666666666664,  /* 1/24 */
    0.008333333333333333,  /* 1/120 */
    0.001388888888888889,  /* 1/720 */
    0.0001984126984126984,  /* 1/5040 */
    2.48015873015873e-05,  /* 1/40320 */
    2.7557319223985893e-06,  /* 1/362880 */
    2.755731922398589e-07,  /* 1/3628800 */
    2.505210838544172e-08,  /* 1/39916800 */
    2.08767569878681e-09,  /* 1/479001600 */
    1.6059043836821613e-10,  /* 1/6227020800 */
};
#endif

static inline __attribute__((always_inline)) vr splat(real_t x)
{
    vr zero = {0};
    /* the scalar broadcast to every lane: x - (+0) is x for every x, -0 and NaN included, so the compiler folds it
       into the broadcast (into the multiply-add's memory operand where the scalar is loaded); zero + x is not x
       for x = -0 and cost one scalar addition per broadcast (half the backward's instructions at n = 8) */
    return x - zero;
}

static inline vr sel(vi m, vr a, vr b)  /* a where m, else b */
{
    return (vr)(((vi)a & m) | ((vi)b & ~m));
}

static inline vr load(const real_t *p)
{
    vr v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* e^x lane by lane: 2^k times the Taylor polynomial of e^r, r = x - k ln 2 (geoattn/codegen/symattn_c.py) */
static inline __attribute__((always_inline)) vr vexp(vr x)
{
    vi low = x < splat(EXP_LOW), high = x > splat(EXP_HIGH);
    x = sel(low, splat(EXP_LOW), sel(high, splat(EXP_HIGH), x));  /* NaN compares false: it stays */
    vr kf = (x * splat(LOG2E) + splat(ROUND_MAGIC)) - splat(ROUND_MAGIC);
    vr r = (x - kf * splat(LN2_HI)) - kf * splat(LN2_LO);
    vr p = splat(EXP_C[EXP_DEG]);
    for (int q = EXP_DEG - 1; q >= 0; q--) p = p * r + splat(EXP_C[q]);
    vi k = __builtin_convertvector(kf, vi);
    vr scale = (vr)((k + (int_t)BIAS) << MANT);
    vr y = p * scale;
    y = sel(low, splat(0), y);
    return sel(high, splat(INFINITY), y);
}

/* a = z A (row-major, T x N) and its transpose aT (N x TP, the padding rows zero); zT likewise when asked */
static void prepare(int64_t T, int64_t TP, const real_t *z, const real_t *A, real_t *a, real_t *aT)
{
    for (int64_t i = 0; i < T; i++) {
        for (int k = 0; k < N; k++) {
            real_t s = 0;
            for (int l = 0; l < N; l++) s += z[i * N + l] * A[l * N + k];
            a[i * N + k] = s;
            aT[k * TP + i] = s;
        }
    }
    for (int k = 0; k < N; k++)
        for (int64_t i = T; i < TP; i++) aT[k * TP + i] = 0;
}

static void transpose(int64_t T, int64_t TP, const real_t *x, real_t *xT)
{
    for (int64_t i = 0; i < T; i++)
        for (int k = 0; k < N; k++) xT[k * TP + i] = x[i * N + k];
    for (int k = 0; k < N; k++)
        for (int64_t i = T; i < TP; i++) xT[k * TP + i] = 0;
}

/* U (B x T x N) = 2 G a and L (B) = log(one + sum_ij e^{C_ij}), per sample, C = a z^T, a = z A, A symmetric;
   returns 1 when its buffers could not be allocated (the loader raises), 0 otherwise */
int GEOATTN_NAME(symattn_fwd)(int64_t B, int64_t T, const real_t *zs, const real_t *A, const double *one,
                               real_t *Us, double *Ls)
{
    int64_t TP = (T + VL - 1) / VL * VL;
    real_t *a = malloc(sizeof(real_t) * (size_t)(T * N + N * TP + T * VL));
    double *ml = malloc(sizeof(double) * (size_t)(2 * T));
    if (a == NULL || ml == NULL) {
        free(a);
        free(ml);
        return 1;
    }
    real_t *aT = a + T * N, *buf = aT + N * TP;
    for (int64_t b = 0; b < B; b++) {
        const real_t *z = zs + b * T * N;
        real_t *U = Us + b * T * N;
        prepare(T, TP, z, A, a, aT);
        for (int64_t ib = 0; ib < TP; ib += VL) {
            vr aI[N];
            #pragma GCC unroll 16
            for (int k = 0; k < N; k++) aI[k] = load(aT + k * TP + ib);
            vr m = splat(-INFINITY);
            for (int64_t j = 0; j < T; j++) {
                vr s = aI[0] * splat(z[j * N]);
                #pragma GCC unroll 16
                for (int k = 1; k < N; k++) s += aI[k] * splat(z[j * N + k]);
                memcpy(buf + j * VL, &s, sizeof s);
                m = sel(s > m, s, m);
            }
            vr l = splat(0), acc[N];
            #pragma GCC unroll 16
            for (int k = 0; k < N; k++) acc[k] = splat(0);
            for (int64_t j = 0; j < T; j++) {
                vr e = vexp(load(buf + j * VL) - m);
                l += e;
                #pragma GCC unroll 16
                for (int k = 0; k < N; k++) acc[k] += e * splat(a[j * N + k]);
            }
            for (int q = 0; q < VL && ib + q < T; q++) {
                ml[ib + q] = m[q];
                ml[T + ib + q] = l[q];
                for (int k = 0; k < N; k++) U[(ib + q) * N + k] = acc[k][q];
            }
        }
        double M = -INFINITY, S = 0;
        for (int64_t i = 0; i < T; i++) M = (ml[i] > M || ml[i] != ml[i]) ? ml[i] : M;
        for (int64_t i = 0; i < T; i++) S += exp(ml[i] - M) * ml[T + i];
        double L = M + log(S);
        if (*one != 0) L = L > 0 ? L + log1p(exp(-L)) : log1p(exp(L));
        for (int64_t i = 0; i < T; i++) {
            double w = 2 * exp(ml[i] - L);
            for (int k = 0; k < N; k++) U[i * N + k] = (real_t)(w * U[i * N + k]);
        }
        Ls[b] = L;
    }
    free(a);
    free(ml);
    return 0;
}

/* h and y = (dC'^T a) of Note [native symplectic attention] for the incoming gradient V of the update, per sample:
   h_i = sum_j G_ij (V_j + (V_i . a_j - s) z_j), y_i = sum_j G_ij (a_i . V_j - s) a_j, s = (1/2) sum_i V_i . U_i;
   returns 1 when its buffer could not be allocated (the loader raises), 0 otherwise */
int GEOATTN_NAME(symattn_bwd)(int64_t B, int64_t T, const real_t *zs, const real_t *A, const real_t *Vs,
                               const real_t *Us, const double *Ls, real_t *hs, real_t *ys)
{
    int64_t TP = (T + VL - 1) / VL * VL;
    real_t *a = malloc(sizeof(real_t) * (size_t)(T * N + 2 * N * TP + 3 * T * VL));
    if (a == NULL) return 1;
    real_t *aT = a + T * N, *VT = aT + N * TP, *buf = VT + N * TP;
    for (int64_t b = 0; b < B; b++) {
        const real_t *z = zs + b * T * N, *V = Vs + b * T * N, *U = Us + b * T * N;
        real_t *h = hs + b * T * N, *y = ys + b * T * N;
        double s2 = 0;
        for (int64_t x = 0; x < T * N; x++) s2 += (double)V[x] * (double)U[x];
        vr sv = splat((real_t)(0.5 * s2)), Lv = splat((real_t)Ls[b]);
        prepare(T, TP, z, A, a, aT);
        transpose(T, TP, V, VT);
        for (int64_t ib = 0; ib < TP; ib += VL) {
            /* two passes over the columns keep each pass's vectors in registers: the weights, then the sums */
            vr aI[N], VI[N];
            for (int k = 0; k < N; k++) {
                aI[k] = load(aT + k * TP + ib);
                VI[k] = load(VT + k * TP + ib);
            }
            for (int64_t j = 0; j < T; j++) {
                const real_t *zj = z + j * N, *aj = a + j * N, *Vj = V + j * N;
                vr c = aI[0] * splat(zj[0]), t1 = VI[0] * splat(aj[0]), t2 = aI[0] * splat(Vj[0]);
                for (int k = 1; k < N; k++) {
                    c += aI[k] * splat(zj[k]);
                    t1 += VI[k] * splat(aj[k]);
                    t2 += aI[k] * splat(Vj[k]);
                }
                vr g = vexp(c - Lv);
                vr g1 = g * (t1 - sv), g2 = g * (t2 - sv);
                memcpy(buf + 3 * j * VL, &g, sizeof g);
                memcpy(buf + (3 * j + 1) * VL, &g1, sizeof g);
                memcpy(buf + (3 * j + 2) * VL, &g2, sizeof g);
            }
            vr hI[N], yI[N];
            for (int k = 0; k < N; k++) hI[k] = yI[k] = splat(0);
            for (int64_t j = 0; j < T; j++) {
                const real_t *zj = z + j * N, *aj = a + j * N, *Vj = V + j * N;
                vr g = load(buf + 3 * j * VL), g1 = load(buf + (3 * j + 1) * VL), g2 = load(buf + (3 * j + 2) * VL);
                for (int k = 0; k < N; k++) {
                    hI[k] += g * splat(Vj[k]);  /* two multiply-adds, not a product, a multiply-add, a sum */
                    hI[k] += g1 * splat(zj[k]);
                    yI[k] += g2 * splat(aj[k]);
                }
            }
            for (int q = 0; q < VL && ib + q < T; q++) {
                for (int k = 0; k < N; k++) {
                    h[(ib + q) * N + k] = hI[k][q];
                    y[(ib + q) * N + k] = yI[k][q];
                }
            }
        }
    }
    free(a);
    return 0;
}
#endif
