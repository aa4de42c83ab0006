r"""The wide stage's a posteriori bound on the residual (printed by :mod:`geoattn.codegen.gram_lu_big_c` before the
stage's ``factor``; ledger ``vp.gram_lu_measured_bound``).

The fast form computes, in double, the Cholesky factor ``L`` of ``G`` (``G = LL^T + dG``), ``W = AL + dW``, a
solve ``X`` of :math:`(I - K)X = L^T` (``K = L^TAL``, by elimination without pivoting) and ``N = I + WX + dN``. For
these the residual :math:`R = (I - AG)N - I` is exactly

.. math:: R = AL(X - L^TN) + dW\,X + dN - A\,dG\,N

whatever ``X`` is. The stage forms :math:`X - L^TN` (an upper triangular product, ``d^3 / 2`` multiply-adds against
the ``2 d^3`` of ``R``; its rounding is at most :math:`\gamma_{d+1}(|X| + |L^T||N|)`) and bounds the other terms by
the standard backward errors (``u = 2^{-53}``, :math:`\gamma_k = ku/(1 - ku)`): :math:`|dG| \le
\gamma_{d+3}|L||L^T|` plus the asymmetry of ``G`` (measured), :math:`|dW| \le \gamma_d|A||L|`, :math:`|dN| \le
\gamma_{d+1}(|W||X| + I)`. With ``e`` the vector of ones, :math:`\max|R| \le \max_i (|R|e)_i` is bounded by

.. math:: |A||L|\bigl(|X - L^TN|e + \gamma_{d+1}(|X| + |L^T||N|)e\bigr) + (\gamma_d + \gamma_{d+1})|A||L||X|e
          + \gamma_{d+1}e + |A|\bigl(\gamma_{d+3}|L||L^T||N|e + \max|G - G^T|\,(e^T|N|e)\,e\bigr),

evaluated right to left as matrix-vector products (``O(d^2)``), times ``1.001`` for the neglected second-order terms
(relative size ``d u``); underflow is not modelled. A sample whose Cholesky factor has a zeroed pivot (a
rank-deficient ``G``) gets ``+inf``: the analysis does not cover it.

What it guarantees: an upper bound on ``max |R|`` of the ``N`` it is given, to first order in ``u``, provided ``L``
is the computed Cholesky factor of ``G`` and ``W`` the computed ``AL``; it trusts nothing about ``K``, the
elimination or ``X`` (their errors are measured), so a wrong ``X`` (a wrong sign of ``K``) or an ``N`` altered by
any ``\Delta`` with :math:`AG\Delta` above the tolerance is reported. An ``N`` altered by a ``\Delta`` with both
``\Delta`` and :math:`AG\Delta` below the tolerance is not, and need not be: then ``R`` moves by less than twice it.
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

"""
