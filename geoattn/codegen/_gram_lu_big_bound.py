r"""The wide stage's a posteriori bound on the residual (printed by :mod:`geoattn.codegen.gram_lu_big_c` before the
stage's ``factor``; ledger ``vp.gram_lu_residual_bound``).

The fast form computes, in double, the Cholesky factor ``L`` of ``G`` (``G = LL^T + dG``), ``W = AL + dW``,
``K' = L^TAL + dK`` (skew), an LU of ``S = I - K'`` without pivoting whose solve gives ``X``
(``(S + dS)X = L^T``) and ``N = I + WX + dN``. For these the residual :math:`R = (I - AG)N - I` is exactly

.. math:: R = AL(dK - dS)X + (I - ALL^T)(dW\,X + dN) - A\,dG\,N,

and the standard backward-error bounds (``u = 2^{-53}``, :math:`\gamma_k = ku/(1 - ku)`) give, to first order in
``u``: :math:`|dG| \le \gamma_{d+3}|L||L^T|` (plus the asymmetry of ``G``, measured), :math:`|dW| \le
\gamma_d|A||L|`, :math:`|dK| \le 4\gamma_d|L^T||A||L|`, :math:`|dS| \le \gamma_{3d+4}|L_u||U_u|` and
:math:`|dN| \le \gamma_{d+1}(|W||X| + I)`. So :math:`\max|R| \le \| |R|e \|_\infty` is bounded by the largest
entry of a sum of products of absolute matrices with the vector of ones ``e``, evaluated right to left as fourteen
matrix-vector products (``14 d^2`` multiply-adds against the ``2 d^3`` of ``R``). The bound is multiplied by
``1.001`` for the neglected second-order terms (relative size ``d u``); underflow is not modelled. A sample whose
Cholesky factor has a zeroed pivot (a rank-deficient ``G``) gets ``+inf``: the analysis does not cover it.
What it guarantees: an upper bound on ``max |R|`` for the ``N`` the fast form computes, provided the code
performs the analysed operations; it does not read ``N`` entry by entry (only ``|N|e``), so it says nothing
about an ``N`` altered after the fact.

Where this bound exceeds the tolerance, a second one (``measured_bound``, ledger ``vp.gram_lu_measured_bound``)
forms :math:`X - L^TN` (an upper triangular product, ``d^3 / 2``) and bounds the rest,
:math:`|R| \le |A||L|(|X - L^TN| + \gamma_{d+1}(|X| + |L^T||N|)) + (\gamma_d + \gamma_{d+1})|A||L||X| +
\gamma_{d+1} + \gamma_{d+3}|A||L||L^T||N|` (times ``e``, plus the asymmetry term): the elimination's growth, the
first bound's largest term at ``d = 64``, does not enter.
"""

from __future__ import annotations

__all__ = ["BOUND"]

#: the C text (over the stage's macros: D, mat, V, vd, vl, NV, UNROLL)
BOUND = r"""
/* Higham's gamma_k = k u / (1 - k u) for the unit roundoff u of double */
static double gam(int k)
{
    const double u = 0x1p-53;
    return k*u/(1.0 - k*u);
}

/* the lane indices of a vector of eight doubles */
static const vl IOTA = {0, 1, 2, 3, 4, 5, 6, 7};
#define ABS(x) ((vd)((vl)(x) & 0x7fffffffffffffffLL))

static double hsum_n(const double *x)
{
    double s = 0.0;
    for (int i = 0; i < D; i++) s += x[i];
    return s;
}

static double hsum(vd a)
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* y = |M| x (x, y of DP entries, zero past D, distinct), row i over columns part 0: all, 1: k >= i (an upper
   factor), 2: k < i plus x_i (a unit lower factor whose multipliers lie below the diagonal); the other entries are
   masked out bitwise (whatever they hold) */
static void absmv(mat M, int part, const double *restrict x, double *restrict y)
{
    const vd *xv = (const vd *)x;
    for (int i = 0; i < D; i++) {
        vd acc = (vd){0};
        UNROLL for (int v = 0; v < NV; v++) {
            vd m = ABS(V(M, i)[v]);
            if (part) {
                const vl j = IOTA + 8*v;
                const vl keep = part == 1 ? (j >= i) : (j < i);
                m = (vd)((vl)m & keep);
            }
            acc += m*xv[v];
        }
        y[i] = hsum(acc) + (part == 2 ? x[i] : 0.0);
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
        vd acc = (vd){0};
        UNROLL for (int v = 0; v < NV; v++) acc += ABS(V(X, i)[v] - V(Y, i)[v]);
        y[i] = hsum(acc);
    }
    for (int i = D; i < DP; i++) y[i] = 0.0;
}

/* a first-order upper bound on max |R|, R = (I - AG)N - I, for the N of the fast form from C = L^T, the solve X,
   the multipliers Lm (below the diagonal), the upper factor U (on and above it) and N; NaN when an input is,
   +inf when deficient (a zeroed Cholesky pivot) [ledger: vp.gram_lu_residual_bound] */
static double residual_bound(mat G, mat A, mat C, mat X, mat Lm, mat U, mat N, int deficient)
{
    if (deficient) return INFINITY;
    const double gd = gam(D), gn = gam(D + 1), gg = gam(D + 3), gs = gam(3*D + 4);
    double e[DP] __attribute__((aligned(64))), v[DP] __attribute__((aligned(64))), p[DP] __attribute__((aligned(64)));
    double q[DP] __attribute__((aligned(64))), s[DP] __attribute__((aligned(64))), t[DP] __attribute__((aligned(64)));
    double w[DP] __attribute__((aligned(64))), r[DP] __attribute__((aligned(64)));
    for (int i = 0; i < DP; i++) e[i] = i < D ? 1.0 : 0.0;
    absmv(X, 0, e, v);  /* v = |X|e */
    absmtv(C, v, p);
    absmtv(A, p, q);  /* q = |A||L|v (|A| symmetric) */
    absmv(C, 0, q, s);  /* |L^T||A||L|v: the bound of |dK|v over 4 gamma_d */
    absmv(U, 1, v, w);
    absmv(Lm, 2, w, t);  /* |Lu||Uu|v */
    for (int i = 0; i < DP; i++) s[i] = 4.0*gd*s[i] + gs*t[i];
    absmtv(C, s, p);
    absmtv(A, p, r);  /* |A||L|(|dK| + |dS|)|X|e */
    for (int i = 0; i < DP; i++) t[i] = i < D ? (gd + gn)*q[i] + gn : 0.0;  /* (|dW||X| + |dN|)e */
    absmv(C, 0, t, w);
    absmtv(C, w, p);
    absmtv(A, p, s);
    for (int i = 0; i < D; i++) r[i] += t[i] + s[i];  /* (I + |A||L||L^T|) t */
    absmv(N, 0, e, v);  /* |N|e */
    absmv(C, 0, v, w);
    absmtv(C, w, p);
    const double ga = asymmetry(G)*hsum_n(v);
    for (int i = 0; i < DP; i++) p[i] = i < D ? gg*p[i] + ga : 0.0;  /* plus max|G - G^T| (sum |N|e) >= |G - G^T||N|e */
    absmtv(A, p, s);
    double m = 0.0;
    for (int i = 0; i < D; i++) {
        const double b = r[i] + s[i];
        if (b != b) return b;
        if (b > m) m = b;
    }
    return 1.001*m;
}

/* the second bound, from the measured error of the solve: with N = I + WX + dN and W = AL + dW,
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
    absmv(X, 0, e, v);  /* |X|e */
    absmv(N, 0, e, nN);  /* |N|e */
    absmv(C, 0, nN, lN);  /* |L^T||N|e */
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

"""
