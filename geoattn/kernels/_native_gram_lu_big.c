/* The d x d stage of the Gram form y = 2 x (I + x^T x A)^{-T} - x for 17 <= d <= 64, one sample at a time.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/gram_lu_big_c.py); `geoattn codegen
   --check` fails when it is stale. N = M^{-T}, M = I + Gram A, by Cholesky and an unpivoted LU of I - K
   (K = L^T A L skew), the residual, an LU with partial pivoting for the samples it fails, and the backward's
   products [ledger: vp.gram_form, vp.gram_lu_woodbury, vp.gram_lu_vjp]. Compiled at first use by
   geoattn.kernels._native_lu_big, one library per d (-DGEOATTN_D=<d>); never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>

#if !defined(GEOATTN_D) || GEOATTN_D < 17 || GEOATTN_D > 64
#error "compile with -DGEOATTN_D=<d>, 17 <= d <= 64"
#endif
#define D GEOATTN_D
#define KSIGN -
#define RETRY 1
#define MBAR_SCALE (-2.0)
#define NAME3(a, b) geoattn_##a##_d##b
#define NAME2(a, b) NAME3(a, b)
#define NAME(a) NAME2(a, D)
#if defined(__GNUC__) && !defined(__clang__)
/* a*b + c as one fused multiply-add where the CPU has one (a rounding less, never a reassociation) */
#pragma GCC optimize ("fp-contract=fast")
#endif

/* C = X Y, row i of C accumulated along rows of Y */
static void mul(const double X[D][D], const double Y[D][D], double C[D][D])
{
    for (int i = 0; i < D; i++) {
        double acc[D];
        for (int j = 0; j < D; j++) acc[j] = X[i][0]*Y[0][j];
        for (int k = 1; k < D; k++) {
            const double a = X[i][k];
            for (int j = 0; j < D; j++) acc[j] += a*Y[k][j];
        }
        for (int j = 0; j < D; j++) C[i][j] = acc[j];
    }
}

/* the largest |M^T N - I| with MT = M^T, NaN when one entry is */
static double residual(const double MT[D][D], const double N[D][D])
{
    double R[D][D], m = 0.0;
    mul(MT, N, R);
    for (int i = 0; i < D; i++) {
        R[i][i] -= 1.0;
        for (int j = 0; j < D; j++) {
            const double a = fabs(R[i][j]);
            if (!(a <= m)) m = a;  /* takes a NaN, which no later entry replaces */
            if (m != m) return m;
        }
    }
    return m;
}

/* N = MT^{-1} by an LU with partial pivoting (a zero pivot leaves non-finite entries, which the residual sees) */
static void pivoted(const double MT[D][D], double N[D][D])
{
    double U[D][D];
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) { U[i][j] = MT[i][j]; N[i][j] = i == j ? 1.0 : 0.0; }
    }
    for (int k = 0; k < D; k++) {
        int r = k;
        for (int i = k + 1; i < D; i++) if (fabs(U[i][k]) > fabs(U[r][k])) r = i;
        if (r != k)
            for (int j = 0; j < D; j++) {
                double t = U[k][j]; U[k][j] = U[r][j]; U[r][j] = t;
                t = N[k][j]; N[k][j] = N[r][j]; N[r][j] = t;
            }
        const double inv = 1.0/U[k][k];
        for (int i = k + 1; i < D; i++) {
            const double f = U[i][k]*inv;
            for (int j = k + 1; j < D; j++) U[i][j] -= f*U[k][j];
            for (int j = 0; j < D; j++) N[i][j] -= f*N[k][j];
        }
    }
    for (int i = D - 1; i >= 0; i--) {
        for (int k = i + 1; k < D; k++) {
            const double f = U[i][k];
            for (int j = 0; j < D; j++) N[i][j] -= f*N[k][j];
        }
        const double inv = 1.0/U[i][i];
        for (int j = 0; j < D; j++) N[i][j] *= inv;
    }
}

/* N = M^{-T} of one sample by the Cholesky-Woodbury form (vp.gram_lu_woodbury), P = 2N - I, the residual's largest
   entry; the pivoted form where the residual exceeds tol or is NaN */
static double factor(const double G[D][D], const double A[D][D], double tol, double N[D][D], double P[D][D])
{
    double L[D][D], V[D][D], Bm[D][D], Z[D][D];
    for (int i = 0; i < D; i++)  /* Cholesky Gram = Z^T Z, Z = L^T upper, right-looking along rows of Z */
        for (int j = 0; j < D; j++) Z[i][j] = j < i ? 0.0 : G[i][j];
    for (int k = 0; k < D; k++) {
        const double s = Z[k][k];
        const double q = s > 0.0 ? sqrt(s) : 0.0, r = s > 0.0 ? 1.0/q : 0.0;  /* a zero row where s <= 0 or NaN */
        Z[k][k] = q;
        for (int j = k + 1; j < D; j++) Z[k][j] *= r;
        for (int i = k + 1; i < D; i++) {
            const double f = Z[k][i];
            for (int j = i; j < D; j++) Z[i][j] -= f*Z[k][j];
        }
    }
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) L[i][j] = Z[j][i];
    for (int i = 0; i < D; i++) {  /* V = A L */
        double acc[D];
        for (int j = 0; j < D; j++) acc[j] = 0.0;
        for (int k = 0; k < D; k++) {
            const double a = A[i][k];
            for (int j = 0; j < D; j++) acc[j] += a*L[k][j];
        }
        for (int j = 0; j < D; j++) V[i][j] = acc[j];
    }
    for (int i = 0; i < D; i++) {  /* K = L^T V = Z V (only i < j: K is skew); Bm = I - K */
        double acc[D];
        for (int j = 0; j < D; j++) acc[j] = 0.0;
        for (int k = i; k < D; k++) {
            const double a = Z[i][k];
            for (int j = 0; j < D; j++) acc[j] += a*V[k][j];
        }
        for (int j = i + 1; j < D; j++) { Bm[i][j] = KSIGN acc[j]; Bm[j][i] = -Bm[i][j]; }
        Bm[i][i] = 1.0;
    }
    for (int k = 0; k < D; k++) {  /* LU of Bm without pivoting, in place */
        const double r = 1.0/Bm[k][k];
        for (int i = k + 1; i < D; i++) {
            const double f = Bm[i][k]*r;
            Bm[i][k] = f;
            for (int j = k + 1; j < D; j++) Bm[i][j] -= f*Bm[k][j];
        }
    }
    for (int i = 1; i < D; i++)  /* Z = (I - K)^{-1} L^T: the unit lower factor's solve, then the upper one's */
        for (int k = 0; k < i; k++) {
            const double f = Bm[i][k];
            for (int j = 0; j < D; j++) Z[i][j] -= f*Z[k][j];
        }
    for (int i = D - 1; i >= 0; i--) {
        for (int k = i + 1; k < D; k++) {
            const double f = Bm[i][k];
            for (int j = 0; j < D; j++) Z[i][j] -= f*Z[k][j];
        }
        const double r = 1.0/Bm[i][i];
        for (int j = 0; j < D; j++) Z[i][j] *= r;
    }
    mul(V, Z, N);  /* N - I */
    for (int i = 0; i < D; i++) N[i][i] += 1.0;
    for (int i = 0; i < D; i++) {  /* M^T = I - A Gram, in Bm */
        double acc[D];
        for (int j = 0; j < D; j++) acc[j] = 0.0;
        for (int k = 0; k < D; k++) {
            const double a = A[i][k];
            for (int j = 0; j < D; j++) acc[j] -= a*G[k][j];
        }
        for (int j = 0; j < D; j++) Bm[i][j] = acc[j];
        Bm[i][i] += 1.0;
    }
    double m = residual(Bm, N);
#if RETRY
    if (!(m <= tol)) {
        pivoted(Bm, N);
        m = residual(Bm, N);
    }
#endif
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) P[i][j] = 2.0*N[i][j];
        P[i][i] -= 1.0;
    }
    return m;
}

/* forward stage: per sample N, P = 2N - I and R (the residual's largest entry) from Gram; A the whole skew matrix;
   *tol the largest residual entry kept (eps / 16 of the tokens' type); d must equal D */
void NAME(vp_gram_lu_big_fwd)(int64_t B, int64_t d, const double *restrict Gram, const double *restrict A,
                              const double *restrict tol, double *restrict N, double *restrict P,
                              double *restrict R)
{
    if (d != D) return;
    for (int64_t b = 0; b < B; b++)
        R[b] = factor((const double (*)[D])(Gram + b*D*D), (const double (*)[D])A, *tol,
                      (double (*)[D])(N + b*D*D), (double (*)[D])(P + b*D*D));
}

/* backward stage: per sample P = 2N - I, H = A Mbar^T - Mbar A and gA = Gram Mbar with Mbar = -2 N Pbar^T N */
void NAME(vp_gram_lu_big_bwd)(int64_t B, int64_t d, const double *restrict Gram, const double *restrict Pbar,
                              const double *restrict Ns, const double *restrict As, double *restrict P,
                              double *restrict H, double *restrict gA)
{
    if (d != D) return;
    const double (*A)[D] = (const double (*)[D])As;
    for (int64_t b = 0; b < B; b++) {
        const double (*N)[D] = (const double (*)[D])(Ns + b*D*D), (*Pb)[D] = (const double (*)[D])(Pbar + b*D*D);
        double PbT[D][D], W[D][D], Mb[D][D];
        double (*Pout)[D] = (double (*)[D])(P + b*D*D), (*Hout)[D] = (double (*)[D])(H + b*D*D);
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) PbT[i][j] = Pb[j][i];
        mul(N, (const double (*)[D])PbT, W);  /* W = N Pbar^T */
        mul((const double (*)[D])W, N, Mb);  /* Mbar = -2 W N */
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) Mb[i][j] *= MBAR_SCALE;
        mul((const double (*)[D])Mb, A, W);  /* K = Mbar A; H = A Mbar^T - Mbar A = -(K + K^T) as A^T = -A */
        for (int i = 0; i < D; i++)
            for (int j = 0; j <= i; j++) { const double h = -(W[i][j] + W[j][i]); Hout[i][j] = h; Hout[j][i] = h; }
        mul((const double (*)[D])(Gram + b*D*D), (const double (*)[D])Mb, (double (*)[D])(gA + b*D*D));
        for (int i = 0; i < D; i++) {
            for (int j = 0; j < D; j++) Pout[i][j] = 2.0*N[i][j];
            Pout[i][i] -= 1.0;
        }
    }
}
