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
#define PERTURB 0
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
#if defined(__GNUC__) && !defined(__clang__)
/* a*b + c as one fused multiply-add where the CPU has one (a rounding less, never a reassociation) */
#pragma GCC optimize ("fp-contract=fast")
#endif

/* Every d x d matrix of the stage lives in a local array of D rows padded to DP = VW NV doubles (zero past column
   D), read and written a row at a time as NV vectors of VW doubles (one register of the target: 8 with AVX-512, 4 with
   AVX2); rows of products are accumulated in registers. */
#define VW (GEOATTN_VBYTES / 8)
#define NV ((D + VW - 1) / VW)
#define DP (VW * NV)
/* rows of a product per block: (RB + 1) NV vector registers at most (16 accumulators with AVX-512) */
#define RB (GEOATTN_VREGS >= 32 ? (NV <= 4 ? 4 : 2) : (NV <= 2 ? 4 : NV <= 4 ? 2 : 1))
typedef double vd __attribute__((vector_size(GEOATTN_VBYTES), may_alias));
typedef long long vl __attribute__((vector_size(GEOATTN_VBYTES), may_alias));
typedef double mat[D][DP] __attribute__((aligned(64)));
#define V(M, i) ((vd *)(M)[i])
#define UNROLL _Pragma("GCC unroll 8")
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

/* the vectors of a row of C per pass: the whole row where its NV sums and a broadcast fit in the registers, else
   half of it (d > 56 with 16 registers); each entry's sum runs in the same order either way */
#define CB (NV + 2 <= GEOATTN_VREGS ? NV : (NV + 1) / 2)
#define SPLIT (CB < NV)

/* C = X Y (+ C when add) for X of n padded rows, Y a matrix; RB rows of C at a time in vector accumulators; upper
   says X is upper triangular (the sums of a block of rows start at its first row) */
static void mul_n(int n, const double (*restrict X)[DP], mat Y, double (*C)[DP], int add, int upper)
{
    int i = 0;
    for (; RB > 1 && !SPLIT && i + RB <= n; i += RB) {
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
        UNROLL for (int c0 = 0; c0 < NV; c0 += CB) {
            vd acc[CB];
            UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) acc[v] = add ? V(C, i)[c0 + v] : (vd){0};
            for (int k = upper ? i : 0; k < D; k++) {
                const double a = X[i][k];
                UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) acc[v] += a*V(Y, k)[c0 + v];
            }
            UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) V(C, i)[c0 + v] = acc[v];
        }
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
    for (; RB > 1 && !SPLIT && i + RB <= D; i += RB) {
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
        UNROLL for (int c0 = 0; c0 < NV; c0 += CB) {
            vd acc[CB];
            UNROLL for (int v = 0; v < CB; v++) acc[v] = (vd){0};
            for (int t = 0; t < n; t++) {
                const double a = X[t][i];
                UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) acc[v] += a*V(Y, t)[c0 + v];
            }
            UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) V(C, i)[c0 + v] = acc[v];
        }
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


/* Higham's gamma_k = k u / (1 - k u) for the unit roundoff u of double */
static double gam(int k)
{
    const double u = 0x1p-53;
    return k*u/(1.0 - k*u);
}

#define ABS(x) ((vd)((vl)(x) & 0x7fffffffffffffffLL))

static double hsum_n(const double *x)
{
    double s = 0.0;
    for (int i = 0; i < D; i++) s += x[i];
    return s;
}

/* the sums of a row are kept in HL vectors standing for eight lanes (entry j in lane j mod 8, vector block v in
   a[v mod HL]), added in one order: the same bits at every vector width VW (2, 4 or 8 doubles) */
#define HL (8 / VW)
static double hsum(const vd a[HL])
{
    double l[8];
    for (int h = 0; h < HL; h++)
        for (int k = 0; k < VW; k++) l[h * VW + k] = a[h][k];
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* y = |M| x (x, y of DP entries, zero past D, distinct) */
static void absmv(mat M, const double *restrict x, double *restrict y)
{
    const vd *xv = (const vd *)x;
    for (int i = 0; i < D; i++) {
        vd acc[HL];
        for (int h = 0; h < HL; h++) acc[h] = (vd){0};
        UNROLL for (int v = 0; v < NV; v++) acc[v % HL] += ABS(V(M, i)[v])*xv[v];
        y[i] = hsum(acc);
    }
    for (int i = D; i < DP; i++) y[i] = 0.0;
}

/* y = |M|^T x: the rows of |M| scaled by x and summed, a row of vectors at a time (y may be x; zero past D) */
static void absmtv(mat M, const double *x, double *y)
{
    vd acc[NV];
    UNROLL for (int v = 0; v < NV; v++) acc[v] = (vd){0};
    for (int i = 0; i < D; i++) {
        const double a = x[i];
        UNROLL for (int v = 0; v < NV; v++) acc[v] += a*ABS(V(M, i)[v]);
    }
    UNROLL for (int v = 0; v < NV; v++) ((vd *)y)[v] = acc[v];
}

/* the largest |G_ij - G_ji| (zero for the fused kernels' Gram matrices, symmetric by construction) */
static double asymmetry(mat G)
{
    double m = 0.0;
    for (int i = 0; i < D; i++)
        for (int j = i + 1; j < D; j++) {
            const double a = fabs(G[i][j] - G[j][i]);
            m = a > m || a != a ? a : m;
        }
    return m;
}

/* sum_j |X_ij - Y_ij| for each row i into y (zero past D) */
static void absdiff_rows(mat X, mat Y, double *y)
{
    for (int i = 0; i < D; i++) {
        vd acc[HL];
        for (int h = 0; h < HL; h++) acc[h] = (vd){0};
        UNROLL for (int v = 0; v < NV; v++) acc[v % HL] += ABS(V(X, i)[v] - V(Y, i)[v]);
        y[i] = hsum(acc);
    }
    for (int i = D; i < DP; i++) y[i] = 0.0;
}

/* an upper bound on max |R| (first order in u) from the measured error of the solve: with N = I + WX + dN and
   W = AL + dW,
   R = AL(X - L^TN) + dW X + dN - A dG N exactly [ledger: vp.gram_lu_measured_bound]; X - L^TN is formed (an upper
   triangular product, d^3 / 2, in Wk) and its rounding bounded by gamma_{d+1}(|X| + |L^T||N|); no term of the
   LU's backward error appears, so the growth of the elimination does not enter. +inf when deficient. */
static double measured_bound(mat G, mat A, mat C, mat X, mat N, mat Wk, int deficient)
{
    if (deficient) return INFINITY;
    const double gd = gam(D), gn = gam(D + 1), gg = gam(D + 3);
    double e[DP] __attribute__((aligned(64))), v[DP] __attribute__((aligned(64))), nN[DP] __attribute__((aligned(64)));
    double lN[DP] __attribute__((aligned(64))), a[DP] __attribute__((aligned(64))), p[DP] __attribute__((aligned(64)));
    double q[DP] __attribute__((aligned(64))), r[DP] __attribute__((aligned(64)));
    mul_n(D, (const double (*)[DP])C, N, Wk, 0, 1);  /* L^T N */
    absdiff_rows(X, Wk, a);  /* |X - L^TN|e as formed */
    for (int i = 0; i < DP; i++) e[i] = i < D ? 1.0 : 0.0;
    absmv(X, e, v);  /* |X|e */
    absmv(N, e, nN);  /* |N|e */
    absmv(C, nN, lN);  /* |L^T||N|e */
    for (int i = 0; i < DP; i++) a[i] += gn*(v[i] + lN[i]);
    absmtv(C, a, p);
    absmtv(A, p, r);  /* |A||L||X - L^TN|e */
    absmtv(C, v, p);
    absmtv(A, p, q);  /* |A||L||X|e */
    absmtv(C, lN, p);  /* |L||L^T||N|e */
    const double ga = asymmetry(G)*hsum_n(nN);
    for (int i = 0; i < DP; i++) p[i] = i < D ? gg*p[i] + ga : 0.0;  /* plus max|G - G^T| (sum |N|e) */
    absmtv(A, p, p);
    double m = 0.0;
    for (int i = 0; i < D; i++) {
        const double b = r[i] + (gd + gn)*q[i] + gn + p[i];
        if (b != b) return b;
        if (b > m) m = b;
    }
    return 1.001*m;
}

/* the largest entry of R = (I - AG)N - I computed in full (two d x d products, in W and Bm) */
static double full_residual(mat G, mat A, mat N, mat W, mat Bm)
{
    mul(A, G, W);
    for (int i = 0; i < D; i++) {
        UNROLL for (int v = 0; v < NV; v++) V(W, i)[v] = -V(W, i)[v];
        W[i][i] += 1.0;
    }
    mul(W, N, Bm);
    double m = 0.0;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            const double a = fabs(Bm[i][j] - (i == j ? 1.0 : 0.0));
            if (a != a) return a;
            if (a > m) m = a;
        }
    return m;
}


/* N = M^{-T} of one sample by the Cholesky-Woodbury form (vp.gram_lu_woodbury), P = 2N - I, the largest entry of
   the bound on its residual; the pivoted form where that exceeds tol or is NaN */
static double factor(mat G, mat A, double tol, mat N, mat P)
{
    mat Z, L, W, Bm, C;  /* L holds L^T A; C = L^T */
    double rinv[D];
    int deficient = 0;
    for (int k = 0; k < D; k++) {  /* Gram = Z^T Z, Z = L^T upper, row k from the rows above it */
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = V(G, k)[v];
        for (int j = 0; j < k; j++) {
            const double f = Z[j][k];
            UNROLL for (int v = 0; v < NV; v++) acc[v] -= f*V(Z, j)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) V(Z, k)[v] = acc[v];
        const double s = Z[k][k];
        deficient |= !(s > 0.0);
        const double q = s > 0.0 ? sqrt(s) : 0.0, r = s > 0.0 ? 1.0/q : 0.0;  /* a zero row where s <= 0 or NaN */
        UNROLL for (int v = 0; v < NV; v++) V(Z, k)[v] *= r;
        for (int j = 0; j < k; j++) Z[k][j] = 0.0;
        Z[k][k] = q;
    }
    mul_n(D, (const double (*)[DP])Z, A, L, 0, 1);  /* L^T A (Z = L^T upper: half the products), in L */
    for (int i = 0; i < D; i++) {  /* W = A L = -(L^T A)^T as A^T = -A */
        for (int j = 0; j < D; j++) W[i][j] = -L[j][i];
        for (int j = D; j < DP; j++) W[i][j] = 0.0;
    }
    mul_n(D, (const double (*)[DP])Z, W, Bm, 0, 1);  /* K = L^T A L (Z = L^T upper); Bm = I - K from K's upper part */
    for (int i = 0; i < D; i++) {
        for (int j = i + 1; j < D; j++) { Bm[i][j] = KSIGN Bm[i][j]; Bm[j][i] = -Bm[i][j]; }
        Bm[i][i] = 1.0;
    }
    /* the elimination of Bm without pivoting (its U in Bm's upper part) applied to Z = L^T at the same time, so Z
       becomes the unit lower factor's solve; right-looking: the updates of the rows below pivot k are independent
       of each other (no chain through one row), each in place */
    for (int i = 0; i < D; i++) UNROLL for (int v = 0; v < NV; v++) V(C, i)[v] = V(Z, i)[v];
    for (int k = 0; k < D; k++) {
        const double rk = 1.0/Bm[k][k];
        rinv[k] = rk;
        for (int i = k + 1; i < D; i++) {
            const double f = Bm[i][k]*rk;
            for (int v = k / VW; v < NV; v++) V(Bm, i)[v] -= f*V(Bm, k)[v];
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
#if PERTURB
    perturb(N);
#endif
    double m = measured_bound(G, A, C, Z, N, W, deficient);  /* vp.gram_lu_measured_bound */
#if RETRY
    if (!(m <= tol)) {
        mul(A, G, Bm);  /* M^T = I - A Gram, in Bm */
        for (int i = 0; i < D; i++) {
            UNROLL for (int v = 0; v < NV; v++) V(Bm, i)[v] = -V(Bm, i)[v];
            Bm[i][i] += 1.0;
        }
        pivoted(Bm, N);
        m = full_residual(G, A, N, W, Bm);
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


/* token rows of real_t in vectors of TL lanes, NT vectors a row, TP = TL NT entries (zero padded) */
#define TL ((int)(GEOATTN_VBYTES / sizeof(real_t)))
#define NT ((D + TL - 1) / TL)
#define TP (TL * NT)
/* rows per block: 16 vector accumulators with AVX-512, 8 with 16 registers */
#define TRB (GEOATTN_VREGS >= 32 ? (NT <= 2 ? 8 : NT <= 4 ? 4 : 2) : (NT <= 2 ? 4 : NT <= 4 ? 2 : 1))
typedef real_t vt __attribute__((vector_size(GEOATTN_VBYTES), may_alias));
typedef real_t tmat[D][TP] __attribute__((aligned(64)));
#define VT(M, i) ((vt *)(M)[i])

/* n padded token rows of real_t, aligned to 64 bytes; *base is what to free */
static real_t (*trows(int64_t n, void **base))[TP]
{
    *base = malloc(sizeof(real_t[TP]) * (size_t)n + 64);
    if (*base == NULL) return NULL;
    return (real_t (*)[TP])(((uintptr_t)*base + 63) & ~(uintptr_t)63);
}

static void tload(const real_t *restrict S, int n, real_t (*restrict X)[TP])
{
    for (int t = 0; t < n; t++) {
        for (int j = 0; j < D; j++) X[t][j] = S[t*D + j];
        for (int j = D; j < TP; j++) X[t][j] = 0;
    }
}

/* the same from n rows of S at element strides st (rows) and sj (entries): an expanded incoming gradient (the one of
   out.sum(), every stride 0) is read where it lies, never materialised */
static void tload_strided(const real_t *restrict S, int n, int64_t st, int64_t sj, real_t (*restrict X)[TP])
{
    for (int t = 0; t < n; t++) {
        for (int j = 0; j < D; j++) X[t][j] = S[t*st + j*sj];
        for (int j = D; j < TP; j++) X[t][j] = 0;
    }
}

static void tstore(const real_t (*restrict X)[TP], int n, real_t *restrict S)
{
    for (int t = 0; t < n; t++)
        for (int j = 0; j < D; j++) S[t*D + j] = X[t][j];
}

/* M (double, padded) rounded into Mt, transposed when tr */
static void to_tmat(mat M, int tr, tmat Mt)
{
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) Mt[i][j] = (real_t)(tr ? M[j][i] : M[i][j]);
        for (int j = D; j < TP; j++) Mt[i][j] = 0;
    }
}

/* C = X Y (+ C when add) for n token rows X and Y of D rows; TRB rows of C at a time in vector accumulators */
static void tmul_n(int n, const real_t (*restrict X)[TP], tmat Y, real_t (*C)[TP], int add)
{
    int i = 0;
    for (; TRB > 1 && i + TRB <= n; i += TRB) {
        vt acc[TRB][NT];
        UNROLL for (int r = 0; r < TRB; r++) UNROLL for (int v = 0; v < NT; v++) acc[r][v] = add ? VT(C, i + r)[v]
                                                                                                     : (vt){0};
        for (int k = 0; k < D; k++) {
            vt y[NT];
            UNROLL for (int v = 0; v < NT; v++) y[v] = VT(Y, k)[v];
            UNROLL for (int r = 0; r < TRB; r++) {
                const real_t a = X[i + r][k];
                UNROLL for (int v = 0; v < NT; v++) acc[r][v] += a*y[v];
            }
        }
        UNROLL for (int r = 0; r < TRB; r++) UNROLL for (int v = 0; v < NT; v++) VT(C, i + r)[v] = acc[r][v];
    }
    for (; i < n; i++) {
        vt acc[NT];
        UNROLL for (int v = 0; v < NT; v++) acc[v] = add ? VT(C, i)[v] : (vt){0};
        for (int k = 0; k < D; k++) {
            const real_t a = X[i][k];
            UNROLL for (int v = 0; v < NT; v++) acc[v] += a*VT(Y, k)[v];
        }
        UNROLL for (int v = 0; v < NT; v++) VT(C, i)[v] = acc[v];
    }
}

/* C = X^T Y (D x D, a sum over n token rows) into the double matrix Cd */
static void tmul_tn(int n, const real_t (*X)[TP], const real_t (*Y)[TP], mat Cd)
{
    tmat C;
    int i = 0;
    for (; TRB > 1 && i + TRB <= D; i += TRB) {
        vt acc[TRB][NT];
        UNROLL for (int r = 0; r < TRB; r++) UNROLL for (int v = 0; v < NT; v++) acc[r][v] = (vt){0};
        for (int t = 0; t < n; t++) {
            vt y[NT];
            UNROLL for (int v = 0; v < NT; v++) y[v] = VT(Y, t)[v];
            UNROLL for (int r = 0; r < TRB; r++) {
                const real_t a = X[t][i + r];
                UNROLL for (int v = 0; v < NT; v++) acc[r][v] += a*y[v];
            }
        }
        UNROLL for (int r = 0; r < TRB; r++) UNROLL for (int v = 0; v < NT; v++) VT(C, i + r)[v] = acc[r][v];
    }
    for (; i < D; i++) {
        vt acc[NT];
        UNROLL for (int v = 0; v < NT; v++) acc[v] = (vt){0};
        for (int t = 0; t < n; t++) {
            const real_t a = X[t][i];
            UNROLL for (int v = 0; v < NT; v++) acc[v] += a*VT(Y, t)[v];
        }
        UNROLL for (int v = 0; v < NT; v++) VT(C, i)[v] = acc[v];
    }
    for (int r = 0; r < D; r++) {
        for (int j = 0; j < D; j++) Cd[r][j] = C[r][j];
        for (int j = D; j < DP; j++) Cd[r][j] = 0.0;
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

/* the whole forward per sample, token products included: Gram = x^T x (in double), N, R, y = x (2N - I) (in the
   tokens' type, TOKENS of geoattn.codegen._gram_lu_big_tokens); returns 0, or 1 when the token buffers could not be
   allocated (nothing written then) */
int NAME(vp_gram_lu_big_tok_fwd)(int64_t B, int64_t T, const real_t *restrict x, const double *restrict As,
                                 const double *restrict tol, real_t *restrict y, double *restrict Gram,
                                 double *restrict Ns, double *restrict R)
{
    void *base, *tbase;
    double (*X)[DP] = rows(T, &base);
    if (X == NULL) return 1;
    real_t (*Xt)[TP] = trows(2*T, &tbase);
    if (Xt == NULL) {
        free(base);
        return 1;
    }
    real_t (*Yt)[TP] = Xt + T;
    mat A, G, N, P;
    tmat Pt;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load_tokens(x + b*T*D, (int)T, X);
        tload(x + b*T*D, (int)T, Xt);
        mul_tn((int)T, (const double (*)[DP])X, (const double (*)[DP])X, G);
        store(G, Gram + b*D*D);
        R[b] = factor(G, A, *tol, N, P);
        store(N, Ns + b*D*D);
        to_tmat(P, 0, Pt);
        tmul_n((int)T, (const real_t (*)[TP])Xt, Pt, Yt, 0);
        tstore((const real_t (*)[TP])Yt, (int)T, y + b*T*D);
    }
    free(tbase);
    free(base);
    return 0;
}

/* the whole backward per sample: Pbar^T = Gy^T x, the d x d stage on the forward's Gram (not recomputed from the
   tokens), gx = Gy P^T + x H (token products in the tokens' type), gA = Gram Mbar; Gy at the element strides
   Gs[0] (samples), Gs[1] (tokens), Gs[2] (entries); returns 0, or 1 when the token buffers could not be allocated */
int NAME(vp_gram_lu_big_tok_bwd)(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy,
                                 const int64_t *restrict Gs, const double *restrict Gram, const double *restrict Ns,
                                 const double *restrict As, real_t *restrict gx, double *restrict gAs)
{
    void *tbase;
    real_t (*Xt)[TP] = trows(3*T, &tbase);
    if (Xt == NULL) return 1;
    real_t (*Gd)[TP] = Xt + T, (*Out)[TP] = Xt + 2*T;
    mat A, G, PbT, N, P, H, gA;
    tmat PTt, Ht;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        tload(x + b*T*D, (int)T, Xt);
        tload_strided(Gy + b*Gs[0], (int)T, Gs[1], Gs[2], Gd);
        load(Gram + b*D*D, 0, G);
        tmul_tn((int)T, (const real_t (*)[TP])Gd, (const real_t (*)[TP])Xt, PbT);
        load(Ns + b*D*D, 0, N);
        vjp(G, PbT, N, A, P, H, gA);
        store(gA, gAs + b*D*D);
        to_tmat(P, 1, PTt);
        to_tmat(H, 0, Ht);
        tmul_n((int)T, (const real_t (*)[TP])Gd, PTt, Out, 0);
        tmul_n((int)T, (const real_t (*)[TP])Xt, Ht, Out, 1);
        tstore((const real_t (*)[TP])Out, (int)T, gx + b*T*D);
    }
    free(tbase);
    return 0;
}
