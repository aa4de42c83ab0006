r"""The ``d x d`` stage and the drivers of the Gram form's native LU kernels (printed into
``_native_gram_lu.c`` by :mod:`geoattn.codegen.gram_lu_c`, around its printed token passes).

Per group of ``SL`` samples (one vector register of doubles, ``GEOATTN_VBYTES / 8``: 8 with AVX-512, 4 with AVX2;
one sample per lane of a GCC vector, each lane's arithmetic that
of a scalar loop, no sum reassociated):

* forward (``gram_lu_factor_fast``): the Cholesky factor ``F`` of ``Gram`` (a column set to zero where its pivot
  is not positive), ``K = F^T A F``, the LU factors of ``I - K`` without pivoting, ``N = I + A F (I - K)^{-1}
  F^T`` (ledger ``vp.gram_lu_woodbury``), ``P = 2N - I`` and the residual's largest entry
  :math:`|(I + GA)^TN - I|`; a sample whose residual exceeds its input type's tolerance
  (``eps / 16``, that of :func:`geoattn.kernels._gram.residual_tolerance`) or is NaN is recomputed by the
  pivoted form ``gram_lu_factor`` (LU with partial pivoting, one lane at a time), whose ``N`` and residual it
  then returns, exactly as before this form existed;
* backward (``gram_lu_vjp_fast``): :math:`\bar M = -2N\bar P^TN`, :math:`H = A\bar M^T - \bar MA`,
  :math:`G\bar M`, ``P = 2N - I`` (ledger ``vp.gram_lu_vjp``), every product with one row of the result in
  ``d`` vector accumulators;
* the per-sample arrays are moved in and out of lanes by 8 x 8 or 4 x 4 transposes of vectors (GCC's
  ``__builtin_shuffle``; element by element with other compilers).

Note [the LU stage's fast form]
-------------------------------
Measured on one thread at ``B*T = 65,536`` tokens (float32 tokens, unit-normal, the stage alone, a C driver,
best of 30 runs, alternating, on a machine shared with other work): ``d = 8, T = 16``: forward stage 2.5 -> 1.0
ms, backward stage 1.7 -> 1.0 ms; ``d = 16, T = 64``: 3.6 -> 1.9 ms and 2.5 -> 1.9 ms (before the fused
multiply-adds, which took about 10% more off). With them, in a quieter run (three alternations): ``d = 8,
T = 16``: 2.0-2.3 -> 0.74-0.78 ms forward, 1.1-1.2 -> 0.66-0.69 ms backward; ``d = 16, T = 64``: 3.1 -> 1.3 ms
and 1.8-2.0 -> 1.2 ms. The pivoted form spent its time in
per-lane pivot searches and row swaps, in residual maxima taken lane by lane, in load-add-store chains over stack
arrays and in element-by-element transposes.

``fault_fast`` prints ``I + K`` in place of ``I - K`` and ``retry=False`` leaves out the pivoted recomputation:
the tests' negative controls (the residual check must see the first; the second exposes the fast form alone).
"""

from __future__ import annotations

from ._gram_lu_pivoted import PIVOTED

__all__ = ["group_lanes", "print_stage"]

# the fast form and the backward (plain C: its parameters are the macros set by print_stage)
FAST = r"""
/* The d x d stage on SL samples at a time as GCC vectors of SL doubles (one lane per sample, the arithmetic
   of each lane that of a scalar loop: no sum is reassociated); LU_KSIGN is the sign of K in I - K (+ for the tests'
   negative control), LU_RETRY == 0 leaves out the pivoted recomputation. */
#if defined(__GNUC__) && !defined(__clang__)
/* a*b + c as one fused multiply-add where the CPU has one (a rounding less, never a reassociation; about 10% of
   the stage's time at d = 8 and 16 in one run): GCC's -std=c99 leaves contraction off */
#pragma GCC push_options
#pragma GCC optimize ("fp-contract=fast")
#endif
typedef double vd __attribute__((vector_size(8*SL)));
typedef long long vl __attribute__((vector_size(8*SL)));
#define UNROLL _Pragma("GCC unroll 16")

#if (SL == 8 || SL == 4) && defined(__GNUC__) && !defined(__clang__)
#define LU_SHUFFLE 1
#if SL == 8
/* the transpose of eight vectors of eight doubles (SL = 8): out[l][k] = in[k][l] */
static inline void lu_t8(const vd in[8], vd out[8])
{
    const vl lo = {0, 8, 2, 10, 4, 12, 6, 14}, hi = {1, 9, 3, 11, 5, 13, 7, 15};
    const vl lo2 = {0, 1, 8, 9, 4, 5, 12, 13}, hi2 = {2, 3, 10, 11, 6, 7, 14, 15};
    const vl lo4 = {0, 1, 2, 3, 8, 9, 10, 11}, hi4 = {4, 5, 6, 7, 12, 13, 14, 15};
    vd t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = __builtin_shuffle(in[k], in[k + 1], lo);
        t[k + 1] = __builtin_shuffle(in[k], in[k + 1], hi);
    }
    for (int k = 0; k < 8; k += 4)
        for (int h = 0; h < 2; h++) {
            u[k + h] = __builtin_shuffle(t[k + h], t[k + h + 2], lo2);
            u[k + h + 2] = __builtin_shuffle(t[k + h], t[k + h + 2], hi2);
        }
    for (int h = 0; h < 4; h++) {
        out[h] = __builtin_shuffle(u[h], u[h + 4], lo4);
        out[h + 4] = __builtin_shuffle(u[h], u[h + 4], hi4);
    }
}
#else
/* the transpose of four vectors of four doubles (SL = 4): out[l][k] = in[k][l] */
static inline void lu_t8(const vd in[4], vd out[4])
{
    const vl lo = {0, 4, 2, 6}, hi = {1, 5, 3, 7}, lo2 = {0, 1, 4, 5}, hi2 = {2, 3, 6, 7};
    const vd t0 = __builtin_shuffle(in[0], in[1], lo), t1 = __builtin_shuffle(in[0], in[1], hi);
    const vd t2 = __builtin_shuffle(in[2], in[3], lo), t3 = __builtin_shuffle(in[2], in[3], hi);
    out[0] = __builtin_shuffle(t0, t2, lo2);
    out[1] = __builtin_shuffle(t1, t3, lo2);
    out[2] = __builtin_shuffle(t0, t2, hi2);
    out[3] = __builtin_shuffle(t1, t3, hi2);
}
#endif
#else
#define LU_SHUFFLE 0
#endif

/* the (nl, D, D) matrices at S as [D][D] vectors over the lanes (lanes past nl repeat sample nl - 1) */
static void lu_vload(const double *restrict S, int nl, vd out[D][D])
{
    const double *s[SL];
    for (int l = 0; l < SL; l++) s[l] = S + (l < nl ? l : nl - 1)*D*D;
    vd *o = &out[0][0];
    int k0 = 0;
#if LU_SHUFFLE
    for (; k0 + SL <= D*D; k0 += SL) {
        vd rows[SL];
        for (int l = 0; l < SL; l++) __builtin_memcpy(&rows[l], s[l] + k0, sizeof(vd));
        lu_t8(rows, o + k0);
    }
#endif
    for (int k = k0; k < D*D; k++)
        for (int l = 0; l < SL; l++) o[k][l] = s[l][k];
}

static void lu_vstore(vd in[D][D], int nl, double *restrict S)
{
    const vd *v = &in[0][0];
    int k0 = 0;
#if LU_SHUFFLE
    if (nl == SL)
        for (; k0 + SL <= D*D; k0 += SL) {
            vd rows[SL];
            lu_t8(v + k0, rows);
            for (int l = 0; l < SL; l++) __builtin_memcpy(S + l*D*D + k0, &rows[l], sizeof(vd));
        }
#endif
    for (int l = 0; l < nl; l++)
        for (int k = k0; k < D*D; k++) S[l*D*D + k] = v[k][l];
}

/* C = X Y (all D x D), row i of C in D accumulators */
static inline void lu_vmul(vd X[D][D], vd Y[D][D], vd C[D][D])
{
    for (int i = 0; i < D; i++) {
        vd acc[D];
        UNROLL for (int j = 0; j < D; j++) acc[j] = X[i][0]*Y[0][j];
        for (int k = 1; k < D; k++) {
            const vd a = X[i][k];
            UNROLL for (int j = 0; j < D; j++) acc[j] += a*Y[k][j];
        }
        UNROLL for (int j = 0; j < D; j++) C[i][j] = acc[j];
    }
}

/* The fast form of gram_lu_factor: with Gram = L L^T (Cholesky, a column of L set to zero where its pivot is not
   positive), K = L^T A L is skew and N = M^{-T} = I + V Z with V = A L and (I - K) Z = L^T (ledger
   vp.gram_lu_woodbury); I - K has symmetric part I, so its LU factorisation needs no pivoting (every pivot has
   real part at least 1). The residual |M^T N - I| is that of the pivoted form; a lane whose residual exceeds
   LU_RETRY_TOL (or is NaN) is recomputed by gram_lu_factor. */
static void gram_lu_factor_fast(const double *restrict Gs, int nl, const double *restrict A, double *restrict N,
                                double *restrict P, double *restrict R)
{
    vd G[D][D], L[D][D], V[D][D], Bm[D][D], Z[D][D];
    lu_vload(Gs, nl, G);
    for (int j = 0; j < D; j++) {  /* Cholesky, left-looking: L[i][j] for i >= j */
        vd s = G[j][j], q;
        vd r;
        for (int k = 0; k < j; k++) s -= L[j][k]*L[j][k];
        for (int l = 0; l < SL; l++) q[l] = sqrt(s[l] > 0.0 ? s[l] : 0.0);
        r = (vd)((vl)(1.0/q) & (s > 0.0));  /* 1/q, or 0 where the pivot is not positive (or NaN) */
        L[j][j] = q;
        for (int i = j + 1; i < D; i++) {
            vd t = G[i][j];
            for (int k = 0; k < j; k++) t -= L[i][k]*L[j][k];
            L[i][j] = t*r;
        }
        for (int i = 0; i < j; i++) L[i][j] = (vd){0};
    }
    for (int i = 0; i < D; i++) {  /* V = A L: row i of V in D accumulators */
        vd acc[D];
        UNROLL for (int j = 0; j < D; j++) acc[j] = (vd){0};
        for (int k = 0; k < D; k++) {
            const double a = A[i*D + k];
            UNROLL for (int j = 0; j < D; j++) acc[j] += a*L[k][j];
        }
        UNROLL for (int j = 0; j < D; j++) V[i][j] = acc[j];
    }
    for (int i = 0; i < D; i++) {  /* K = L^T V (only i < j: K is skew); Bm = I - K */
        vd acc[D];
        UNROLL for (int j = 0; j < D; j++) acc[j] = (vd){0};
        for (int k = i; k < D; k++) {
            const vd a = L[k][i];
            UNROLL for (int j = 0; j < D; j++) acc[j] += a*V[k][j];
        }
        for (int j = i + 1; j < D; j++) { Bm[i][j] = LU_KSIGN acc[j]; Bm[j][i] = -Bm[i][j]; }
        Bm[i][i] = (vd){0} + 1.0;
    }
    for (int k = 0; k < D; k++) {  /* LU of Bm without pivoting, in place */
        const vd r = 1.0/Bm[k][k];
        for (int i = k + 1; i < D; i++) {
            const vd f = Bm[i][k]*r;
            Bm[i][k] = f;
            UNROLL for (int j = k + 1; j < D; j++) Bm[i][j] -= f*Bm[k][j];
        }
    }
    for (int i = 0; i < D; i++)  /* Z = L^T, then the unit lower factor's solve, then the upper one's */
        for (int j = 0; j < D; j++) Z[i][j] = L[j][i];
    for (int i = 1; i < D; i++)
        for (int k = 0; k < i; k++) {
            const vd f = Bm[i][k];
            UNROLL for (int j = 0; j < D; j++) Z[i][j] -= f*Z[k][j];
        }
    for (int i = D - 1; i >= 0; i--) {
        for (int k = i + 1; k < D; k++) {
            const vd f = Bm[i][k];
            UNROLL for (int j = 0; j < D; j++) Z[i][j] -= f*Z[k][j];
        }
        const vd r = 1.0/Bm[i][i];
        UNROLL for (int j = 0; j < D; j++) Z[i][j] *= r;
    }
    lu_vmul(V, Z, L);  /* N - I in L */
    for (int i = 0; i < D; i++) L[i][i] += 1.0;
    for (int i = 0; i < D; i++) {  /* M^T = I - A Gram, in Bm, row i in D accumulators */
        vd acc[D];
        UNROLL for (int j = 0; j < D; j++) acc[j] = (vd){0};
        for (int k = 0; k < D; k++) {
            const double a = A[i*D + k];
            UNROLL for (int j = 0; j < D; j++) acc[j] -= a*G[k][j];
        }
        UNROLL for (int j = 0; j < D; j++) Bm[i][j] = acc[j];
        Bm[i][i] += 1.0;
    }
    lu_vmul(Bm, L, Z);  /* M^T N */
    vd m = (vd){0};  /* the largest |entry| per lane, NaN when one is (sign bits cleared, masks blended) */
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            const vd a = (vd)((vl)(Z[i][j] - (i == j ? 1.0 : 0.0)) & 0x7fffffffffffffffLL);
            const vl take = (a > m) | (a != a);
            m = (vd)(((vl)a & take) | ((vl)m & ~take));
        }
    lu_vstore(L, nl, N);
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) L[i][j] *= 2.0;
        L[i][i] -= 1.0;
    }
    lu_vstore(L, nl, P);
    int retry = 0;
    for (int l = 0; l < nl; l++) { R[l] = m[l]; retry |= !(m[l] <= LU_RETRY_TOL); }
#if LU_RETRY
    if (retry) {  /* the pivoted form for the lanes the fast one did not keep */
        double Nt[SL*D*D], Pt[SL*D*D], Rt[SL];
        gram_lu_factor(Gs, nl, A, Nt, Pt, Rt);
        for (int l = 0; l < nl; l++)
            if (!(m[l] <= LU_RETRY_TOL)) {
                R[l] = Rt[l];
                for (int k = 0; k < D*D; k++) { N[l*D*D + k] = Nt[l*D*D + k]; P[l*D*D + k] = Pt[l*D*D + k]; }
            }
    }
#endif
}

/* the backward's d x d stage on vectors (as gram_lu_vjp) */
static void gram_lu_vjp_fast(const double *restrict Gs, const double *restrict Pbar, const double *restrict Ns,
                             int nl, const double *restrict A, double *restrict P, double *restrict H,
                             double *restrict gA)
{
    vd Nv[D][D], X[D][D], W[D][D], Mb[D][D];
    lu_vload(Ns, nl, Nv);
    lu_vload(Pbar, nl, X);
    for (int i = 0; i < D; i++) {  /* W = N Pbar^T */
        vd acc[D];
        UNROLL for (int j = 0; j < D; j++) acc[j] = Nv[i][0]*X[j][0];
        for (int k = 1; k < D; k++) {
            const vd a = Nv[i][k];
            UNROLL for (int j = 0; j < D; j++) acc[j] += a*X[j][k];
        }
        UNROLL for (int j = 0; j < D; j++) W[i][j] = acc[j];
    }
    lu_vmul(W, Nv, Mb);  /* Mbar = -2 W N (MBAR_SCALE) */
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) Mb[i][j] *= MBAR_SCALE;
    for (int i = 0; i < D; i++) {  /* K = Mbar A; H = A Mbar^T - Mbar A = -(K + K^T) as A^T = -A */
        vd acc[D];
        UNROLL for (int j = 0; j < D; j++) acc[j] = (vd){0};
        for (int k = 0; k < D; k++) {
            const vd a = Mb[i][k];
            UNROLL for (int j = 0; j < D; j++) acc[j] += a*A[k*D + j];
        }
        UNROLL for (int j = 0; j < D; j++) W[i][j] = acc[j];
    }
    for (int i = 0; i < D; i++)
        for (int j = 0; j <= i; j++) { const vd h = -(W[i][j] + W[j][i]); W[i][j] = h; W[j][i] = h; }
    lu_vstore(W, nl, H);
    lu_vload(Gs, nl, X);
    lu_vmul(X, Mb, W);  /* gA = Gram Mbar */
    lu_vstore(W, nl, gA);
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) W[i][j] = 2.0*Nv[i][j];
        W[i][i] -= 1.0;
    }
    lu_vstore(W, nl, P);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
"""

# the drivers at D
DRIVERS = r"""
/* forward: y = x (2N - I), and per sample N, the residual's largest entry R (A: the whole skew matrix) and, where
   the pointers are not NULL, the Gram matrix and its trace S = |x|_F^2 (Gram == NULL: each block's Gram matrices
   live in a block-sized buffer, Note [block-local Gram]) */
void GEOATTN_NAME(vp_gram_lu_fwd_d{d})(int64_t B, int64_t T, const real_t *restrict x, const double *restrict A,
                                     real_t *restrict y, double *restrict Gram, double *restrict N,
                                     double *restrict R, double *restrict S)
{{
    double P[BLOCK*D*D] LU_ALIGN, Gl[BLOCK*D*D] LU_ALIGN;
    for (int64_t b0 = 0; b0 < B; b0 += BLOCK) {{
        const int64_t nb = B - b0 < BLOCK ? B - b0 : BLOCK;
        double *Gb = Gram ? Gram + b0*D*D : Gl;
        GEOATTN_NAME(vp_gram_lu_gram_d{d})(nb, T, x + b0*T*D, Gb);
        if (S)
            for (int64_t b = 0; b < nb; b++) {{
                double t = 0.0;
                for (int i = 0; i < D; i++) t += Gb[b*D*D + i*(D + 1)];
                S[b0 + b] = t;
            }}
        for (int64_t b = 0; b < nb; b += SL) {{
            const int nl = nb - b < SL ? (int)(nb - b) : SL;
            gram_lu_factor_fast(Gb + b*D*D, nl, A, N + (b0 + b)*D*D, P + b*D*D, R + b0 + b);
        }}
        GEOATTN_NAME(vp_gram_lu_out_d{d})(nb, T, x + b0*T*D, P, y + b0*T*D);
    }}
}}

/* backward: gx, and per sample gA = Gram Mbar (the gradient in A is the skew part of its sum), from x, Gy, N and
   the forward's Gram matrices (saved: one pass over the tokens less) or, where Gram is NULL, each block's Gram
   matrices formed again by a pass over its tokens just before the one that reads them again */
void GEOATTN_NAME(vp_gram_lu_bwd_d{d})(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy,
                                     const double *restrict Gram, const double *restrict N,
                                     const double *restrict A, real_t *restrict gx, double *restrict gA)
{{
    double Pbar[BLOCK*D*D] LU_ALIGN, P[BLOCK*D*D] LU_ALIGN, H[BLOCK*D*D] LU_ALIGN, Gl[BLOCK*D*D] LU_ALIGN;
    for (int64_t b0 = 0; b0 < B; b0 += BLOCK) {{
        const int64_t nb = B - b0 < BLOCK ? B - b0 : BLOCK;
        const double *Gb = Gram ? Gram + b0*D*D : Gl;
        if (!Gram)
            GEOATTN_NAME(vp_gram_lu_gram_d{d})(nb, T, x + b0*T*D, Gl);
        GEOATTN_NAME(vp_gram_lu_pbar_d{d})(nb, T, x + b0*T*D, Gy + b0*T*D, Pbar);
        for (int64_t b = 0; b < nb; b += SL) {{
            const int nl = nb - b < SL ? (int)(nb - b) : SL;
            gram_lu_vjp_fast(Gb + b*D*D, Pbar + b*D*D, N + (b0 + b)*D*D, nl, A, P + b*D*D, H + b*D*D,
                             gA + (b0 + b)*D*D);
        }}
        GEOATTN_NAME(vp_gram_lu_gx_d{d})(nb, T, x + b0*T*D, Gy + b0*T*D, P, H, gx + b0*T*D);
    }}
}}

#undef LOOP_L
#undef LU_SHUFFLE
#undef UNROLL
#undef LU_ALIGN
#undef LU_KSIGN
#undef LU_RETRY
#undef MBAR_SCALE
#undef SL
#undef DP
#undef D
"""

_FLAGS = """#include <float.h>
#define LU_ALIGN __attribute__((aligned(64)))
#define LU_KSIGN {ksign}
#define LU_RETRY {retry}
#define MBAR_SCALE ({sign}2.0)
#if defined(GEOATTN_F32)
#define LU_RETRY_TOL (FLT_EPSILON/16)
#else
#define LU_RETRY_TOL (DBL_EPSILON/16)
#endif
"""


def group_lanes(d: int) -> str:
    """Samples per group of the ``d x d`` stage, a C expression: one vector register of doubles,
    ``GEOATTN_VBYTES / 8`` (8 with AVX-512, 4 with AVX2: Note [vector width] in :mod:`geoattn.codegen.cprinter`);
    the transposes are written for 8 and 4, other widths move the lanes element by element."""
    return "(GEOATTN_VBYTES / 8)"


def print_stage(d: int, negate_backward: bool = False, fault_fast: bool = False, retry: bool = True) -> str:
    r"""The C text of the ``d x d`` stage and the drivers at width ``d``.

    Parameters
    ----------
    d : int
        the width.
    negate_backward : bool
        :math:`\bar M` with the wrong sign (a negative control).
    fault_fast : bool
        ``I + K`` in place of ``I - K`` in the fast forward (a negative control).
    retry : bool
        recompute with partial pivoting the samples whose fast residual fails (``False``: a test exposes the fast
        form alone).

    Returns
    -------
    str
        the C text, to follow the printed token passes of width ``d``.
    """
    flags = _FLAGS.format(ksign="" if fault_fast else "-", retry=int(retry), sign="" if negate_backward else "-")
    return (PIVOTED.format(d=d, sl=group_lanes(d)) + flags + FAST + "#undef LU_RETRY_TOL\n"
            + DRIVERS.format(d=d))
