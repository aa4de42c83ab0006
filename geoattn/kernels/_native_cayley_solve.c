/* Native CPU forward of the Cayley transform (I - C)(I + C)^-1 for 4 <= T <= 32, batched.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/cayley_solve_c.py); `geoattn codegen
   --check` fails when it is stale. Gauss-Jordan elimination of M = I + C without pivoting, in double, SL samples
   side by side [ledger: kernels.cayley_unpivoted, cayley.orthogonal]. Compiled at first use by geoattn.kernels._native_cayley_solve, one library per
   T and real type (-DGEOATTN_D=<T> -DGEOATTN_F32 or -DGEOATTN_F64); never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>

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

#if GEOATTN_D >= 4 && GEOATTN_D <= 32
#define D GEOATTN_D
/* matrices are [D][DP][SL]: the padding keeps rows from lying a power of two apart */
#define DP (D + 1)
/* samples side by side: 8 doubles (one 512-bit register) while a sample's matrices fit a first-level cache, else 4 */
#define SL (D > 16 ? 4 : 8)
#define LOOP_L for (int l = 0; l < SL; l++)

static inline double cs_max(double m, double a)
{
    return (a > m || a != a) ? a : m;  /* a NaN stays */
}

/* row k *= p, lane by lane (separate rows through restrict pointers: the compiler vectorises over the lanes) */
static inline void cs_scale_row(double (*restrict r)[SL], const double *restrict p)
{
    for (int j = 0; j < D; j++)
        LOOP_L r[j][l] *= p[l];
}

/* row i -= f row k, lane by lane (i != k) */
static inline void cs_sub_row(double (*restrict ri)[SL], const double (*restrict rk)[SL], const double *restrict f)
{
    for (int j = 0; j < D; j++)
        LOOP_L ri[j][l] -= f[l]*rk[j][l];
}

/* one group of nl <= SL samples at C (row-major, (nl, D, D)); lanes past nl repeat sample nl - 1, not stored */
static void cayley_solve_group(const real_t *restrict C, int nl, real_t *restrict Q, double *restrict Skew,
                               double *restrict Size, double *restrict Norm, double *restrict Defect)
{
    double M[D][DP][SL], s[SL], z[SL], r[SL], m[SL];
    for (int l = 0; l < SL; l++) {
        const real_t *c = C + (int64_t)(l < nl ? l : nl - 1)*D*D;
        double skew = 0.0, size = 0.0, norm = 0.0;
        for (int i = 0; i < D; i++) {
            double row = 0.0;
            for (int j = 0; j < D; j++) {
                const double a = (double)c[i*D + j];
                M[i][j][l] = (i == j ? 1.0 : 0.0) + a;
                row += fabs(a);
                size = cs_max(size, fabs(a));
                skew = cs_max(skew, fabs(a + (double)c[j*D + i]));
            }
            norm = cs_max(norm, row);
        }
        s[l] = skew; z[l] = size; r[l] = norm;
    }
    /* in place: M becomes M^{-1}; pivot k is the ratio of leading minors k and k - 1, at least 1 over the
       last for skew C (kernels.cayley_unpivoted), so no row is exchanged */
    for (int k = 0; k < D; k++) {
        double p[SL];
        LOOP_L { p[l] = 1.0 / M[k][k][l]; M[k][k][l] = 1.0; }
        cs_scale_row(M[k], p);
        for (int i = 0; i < D; i++) {
            if (i == k) continue;
            double f[SL];
            LOOP_L { f[l] = M[i][k][l]; M[i][k][l] = 0.0; }
            cs_sub_row(M[i], M[k], f);
        }
    }
    /* Q = 2 M^{-1} - I (kernels.cayley_unpivoted) */
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++)
            LOOP_L M[i][j][l] = 2.0*M[i][j][l] - (i == j ? 1.0 : 0.0);
    /* the defect max |Q^T Q - I| over the upper triangle (the matrix is symmetric) */
    LOOP_L m[l] = 0.0;
    for (int i = 0; i < D; i++)
        for (int j = i; j < D; j++) {
            double e[SL];
            LOOP_L e[l] = i == j ? -1.0 : 0.0;
            for (int k = 0; k < D; k++)
                LOOP_L e[l] += M[k][i][l]*M[k][j][l];
            LOOP_L m[l] = cs_max(m[l], fabs(e[l]));
        }
    for (int l = 0; l < nl; l++) {
        real_t *q = Q + (int64_t)l*D*D;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) q[i*D + j] = (real_t)M[i][j][l];
        Skew[l] = s[l]; Size[l] = z[l]; Norm[l] = r[l]; Defect[l] = m[l];
    }
}

/* B samples of size T = D (the argument T is checked by the caller): Q, and per sample Skew, Size, Norm, Defect */
void GEOATTN_NAME(cayley_solve_fwd)(int64_t B, int64_t T, const real_t *restrict C, real_t *restrict Q,
                                   double *restrict Skew, double *restrict Size, double *restrict Norm,
                                   double *restrict Defect)
{
    (void)T;
    for (int64_t b = 0; b < B; b += SL) {
        const int nl = B - b < SL ? (int)(B - b) : SL;
        cayley_solve_group(C + b*D*D, nl, Q + b*D*D, Skew + b, Size + b, Norm + b, Defect + b);
    }
}

#undef LOOP_L
#undef SL
#undef DP
#undef D
#endif
