r"""The C source of the Gram form's native kernels for ``4 < d <= 16``: printed token passes around an LU template.

The layer output is :math:`y = 2xN - x` with :math:`N = M^{-T}`, :math:`M = I + GA`, :math:`G = x^Tx` (ledger
``vp.gram_form``); its backward is :math:`\bar M = -2N\bar P^TN` with :math:`\bar P = x^T\bar y`,
:math:`H = A\bar M^T - \bar MA`, :math:`\bar x = \bar y(2N - I)^T + xH` and the per-sample :math:`G\bar M`
(ledger ``vp.gram_lu_vjp``, for every invertible ``M``). No closed form of ``N`` exists past ``d = 4``, so:

* the token passes are printed from the verified bindings of Note [the closed-form Gram layer] in
  :mod:`geoattn.symbolic.expressions` (``Gram = x^T x``, ``Pbar = x^T Gy``, ``y = x P``, ``gx = Gy P^T + x H``)
  by the C printer of the closed-form kernels (:mod:`geoattn.codegen.cprinter`: samples in lanes, tokens in
  tiles);
* the ``d x d`` stage is a template at a fixed ``d``: ``M``, its LU factorisation with partial pivoting in double,
  ``N`` from the factors (:math:`M^T = U^TL^TP`), the largest residual entry :math:`|M^TN - I|` (NaN when one is)
  and the backward's ``d x d`` products, one sample at a time.

A driver per direction runs the three stages on blocks of ``BLOCK`` samples, so a block's tokens are still in
cache for the second pass. ``negate_backward`` prints a deliberately wrong kernel (the sign of :math:`\bar M`
flipped) for the tests' negative control.
"""

from __future__ import annotations

from ..symbolic import expressions as ex
from ..symbolic.kernel_spec import NativeKernelSpec
from .cprinter import LANES, REAL_PRELUDE, print_native_kernel

__all__ = ["MIN_DIM", "MAX_DIM", "BLOCK", "SPECS", "generate_gram_lu_module", "target_name"]

#: the widths the kernels are printed for: past the closed form's ``d <= 4``, up to the LU route's ``d <= 16``
MIN_DIM, MAX_DIM = 5, 16
#: samples per block of the drivers
BLOCK = 32
#: tokens per tile of the printed passes: half the closed-form kernels' 32, since two token inputs of up to 16
#: features make tiles of 2 x 32 x 16 x 8 doubles (64 KiB) there, more than a first-level cache (one noisy run on
#: one thread, d = 16, T = 64: the backward's token passes 6 ms with 16, 12 to 19 ms with 32)
CHUNK = 16
_CLAIMS = ["vp.gram_form", "vp.gram_lu_vjp"]
_N, _P, _H = ex._Ng, ex._P_b, ex._H_b

#: the printed token passes (each a NativeKernelSpec of the closed-form printer)
SPECS = {
    "gram": NativeKernelSpec(
        name="vp_gram_lu_gram", doc="The Gram matrix Gram = x^T x of each sample, one pass over its tokens.",
        bindings=[("Gram", ex.x.T * ex.x)], token_inputs=("x",), sample_outputs=("Gram",),
        claims=_CLAIMS, max_dim=MAX_DIM),
    "out": NativeKernelSpec(
        name="vp_gram_lu_out", doc="The output y = x P, P = 2N - I, of each sample from its P.",
        bindings=[("y", ex.x * _P)], token_inputs=("x",), sample_inputs={"P": "general"}, token_outputs=("y",),
        claims=_CLAIMS, max_dim=MAX_DIM),
    "grams": NativeKernelSpec(
        name="vp_gram_lu_grams", doc="Gram = x^T x and Pbar = x^T Gy of each sample, one pass over its tokens.",
        bindings=[("Gram", ex.x.T * ex.x), ("Pbar", ex.x.T * ex.Gy)], token_inputs=("x", "Gy"),
        sample_outputs=("Gram", "Pbar"), claims=_CLAIMS, max_dim=MAX_DIM),
    "gx": NativeKernelSpec(
        name="vp_gram_lu_gx", doc="The gradient gx = Gy P^T + x H of each sample from its P and H.",
        bindings=[("gx", ex.Gy * _P.T + ex.x * _H)], token_inputs=("x", "Gy"),
        sample_inputs={"P": "general", "H": "general"}, token_outputs=("gx",), claims=_CLAIMS, max_dim=MAX_DIM),
}

HEADER = """/* Native CPU kernels of the Gram form y = 2 x (I + x^T x A)^{{-T}} - x for {lo} <= d <= {hi}.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/gram_lu_c.py); `geoattn codegen
   --check` fails when it is stale. The token passes are printed from the verified bindings of
   geoattn/symbolic/expressions.py (Note [the closed-form Gram layer]); the d x d stage (M = I + Gram A, LU with
   partial pivoting, N = M^{{-T}}, the residual, the backward's products) is the template of
   geoattn.codegen.gram_lu_c [ledger: {claims}]. Compiled at first use by geoattn.kernels._native_lu, one
   library per d and real type (-DGEOATTN_D=<d> -DGEOATTN_F32 or -DGEOATTN_F64); never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>

#define LANES {lanes}
#define TOKEN_CHUNK {chunk}
#define BLOCK {block}

{prelude}
"""

# the d x d stage at D = GEOATTN_D (one sample; arrays row-major)
TEMPLATE = r"""
#define D {d}
/* matrices are [D][DP][SL]: the padding keeps the stack arrays from lying 4 KiB apart (store-load aliasing) */
#define DP (D + 1)
/* samples per group of the d x d stage */
#define SL {sl}

/* The d x d stage runs SL samples at a time, every value an array over the lanes (Note [lanes] in
   geoattn.codegen.cprinter): the innermost loops are over the lanes, which the compiler vectorises without
   reassociating a sum (no -ffast-math); each lane's arithmetic is that of a scalar LU. The pivot search and the
   row exchanges are per lane. Lanes past nl repeat sample nl - 1 and are not stored. */
#define LOOP_L for (int l = 0; l < SL; l++)

/* the (nl, D, D) matrices at S as [D][DP][SL] */
static void gram_lu_load(const double *restrict S, int nl, double out[D][DP][SL])
{{
    for (int l = 0; l < SL; l++) {{
        const double *s = S + (l < nl ? l : nl - 1)*D*D;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) out[i][j][l] = s[i*D + j];
    }}
}}

static void gram_lu_store(const double in[D][DP][SL], int nl, double *restrict S)
{{
    for (int l = 0; l < nl; l++)
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) S[l*D*D + i*D + j] = in[i][j][l];
}}

/* M = I + Gram A; PM = LU with partial pivoting; N = M^{{-T}} from U^T L^T P N = I; P = 2N - I; R the largest
   entry of |M^T N - I| (NaN when one is: a zero or non-finite pivot shows there). */
static void gram_lu_factor(const double *restrict G, int nl, const double *restrict A, double *restrict N,
                           double *restrict P, double *restrict R)
{{
    double M[D][DP][SL], LU[D][DP][SL], Y[D][DP][SL], E[D][SL], m[SL];
    int piv[D][SL];
    gram_lu_load(G, nl, Y);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            LOOP_L M[i][j][l] = i == j ? 1.0 : 0.0;
            for (int k = 0; k < D; k++) {{
                const double a = A[k*D + j];
                LOOP_L M[i][j][l] += Y[i][k][l]*a;
            }}
            LOOP_L LU[i][j][l] = M[i][j][l];
        }}
    for (int k = 0; k < D; k++) {{
        for (int l = 0; l < SL; l++) {{
            int p = k;
            double best = fabs(LU[k][k][l]);
            for (int i = k + 1; i < D; i++)
                if (fabs(LU[i][k][l]) > best) {{ best = fabs(LU[i][k][l]); p = i; }}
            piv[k][l] = p;
            if (p != k)
                for (int j = 0; j < D; j++) {{ double t = LU[k][j][l]; LU[k][j][l] = LU[p][j][l]; LU[p][j][l] = t; }}
        }}
        for (int i = k + 1; i < D; i++) {{
            LOOP_L LU[i][k][l] /= LU[k][k][l];
            for (int j = k + 1; j < D; j++)
                LOOP_L LU[i][j][l] -= LU[i][k][l]*LU[k][j][l];
        }}
    }}
    /* U^T Z = I (forward substitution), then L^T Y = Z (backward, unit diagonal), then N = P^T Y */
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{  /* Z = U^{{-T}} is lower triangular: row k of it ends at column k */
            LOOP_L Y[i][j][l] = i == j ? 1.0 : 0.0;
            if (j > i) continue;
            for (int k = j; k < i; k++)
                LOOP_L Y[i][j][l] -= LU[k][i][l]*Y[k][j][l];
            LOOP_L Y[i][j][l] /= LU[i][i][l];
        }}
    for (int i = D - 2; i >= 0; i--)
        for (int j = 0; j < D; j++)
            for (int k = i + 1; k < D; k++)
                LOOP_L Y[i][j][l] -= LU[k][i][l]*Y[k][j][l];
    for (int k = D - 1; k >= 0; k--)
        for (int l = 0; l < SL; l++) {{
            const int p = piv[k][l];
            if (p != k)
                for (int j = 0; j < D; j++) {{ double t = Y[k][j][l]; Y[k][j][l] = Y[p][j][l]; Y[p][j][l] = t; }}
        }}
    LOOP_L m[l] = 0.0;
    for (int i = 0; i < D; i++) {{
        for (int j = 0; j < D; j++) {{
            LOOP_L E[j][l] = i == j ? -1.0 : 0.0;
            for (int k = 0; k < D; k++)
                LOOP_L E[j][l] += M[k][i][l]*Y[k][j][l];
            for (int l = 0; l < SL; l++) {{
                const double a = fabs(E[j][l]);
                if (a > m[l] || a != a) m[l] = a;
            }}
        }}
    }}
    gram_lu_store(Y, nl, N);
    for (int i = 0; i < D; i++) LOOP_L Y[i][i][l] -= 0.5;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) LOOP_L Y[i][j][l] *= 2.0;
    gram_lu_store(Y, nl, P);
    for (int l = 0; l < nl; l++) R[l] = m[l];
}}

/* the backward's d x d stage: Mbar = {sign}2 N Pbar^T N, H = A Mbar^T - Mbar A, gA = Gram Mbar, P = 2N - I */
static void gram_lu_vjp(const double *restrict G, const double *restrict Pbar, const double *restrict N, int nl,
                        const double *restrict A, double *restrict P, double *restrict H, double *restrict gA)
{{
    double Nl[D][DP][SL], X[D][DP][SL], W[D][DP][SL], Mb[D][DP][SL];
    gram_lu_load(N, nl, Nl);
    gram_lu_load(Pbar, nl, X);
    for (int i = 0; i < D; i++)  /* W = N Pbar^T */
        for (int j = 0; j < D; j++) {{
            LOOP_L W[i][j][l] = 0.0;
            for (int k = 0; k < D; k++)
                LOOP_L W[i][j][l] += Nl[i][k][l]*X[j][k][l];
        }}
    for (int i = 0; i < D; i++)  /* Mbar = {sign}2 W N */
        for (int j = 0; j < D; j++) {{
            LOOP_L Mb[i][j][l] = 0.0;
            for (int k = 0; k < D; k++)
                LOOP_L Mb[i][j][l] += W[i][k][l]*Nl[k][j][l];
            LOOP_L Mb[i][j][l] *= {sign}2.0;
        }}
    for (int i = 0; i < D; i++)  /* K = Mbar A; H = A Mbar^T - Mbar A = -(K + K^T) as A^T = -A */
        for (int j = 0; j < D; j++) {{
            LOOP_L W[i][j][l] = 0.0;
            for (int k = 0; k < D; k++) {{
                const double b = A[k*D + j];
                LOOP_L W[i][j][l] += Mb[i][k][l]*b;
            }}
        }}
    for (int i = 0; i < D; i++)
        for (int j = 0; j <= i; j++)
            LOOP_L {{ const double h = -(W[i][j][l] + W[j][i][l]); W[i][j][l] = h; W[j][i][l] = h; }}
    gram_lu_store(W, nl, H);
    gram_lu_load(G, nl, X);
    for (int i = 0; i < D; i++)  /* gA = Gram Mbar */
        for (int j = 0; j < D; j++) {{
            LOOP_L W[i][j][l] = 0.0;
            for (int k = 0; k < D; k++)
                LOOP_L W[i][j][l] += X[i][k][l]*Mb[k][j][l];
        }}
    gram_lu_store(W, nl, gA);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) LOOP_L W[i][j][l] = 2.0*Nl[i][j][l] - (i == j ? 1.0 : 0.0);
    gram_lu_store(W, nl, P);
}}

/* forward: y = x (2N - I), and per sample Gram, N and the residual's largest entry R (A: the whole skew matrix) */
void GEOATTN_NAME(vp_gram_lu_fwd_d{d})(int64_t B, int64_t T, const real_t *restrict x, const double *restrict A,
                                     real_t *restrict y, double *restrict Gram, double *restrict N,
                                     double *restrict R)
{{
    double P[BLOCK*D*D];
    for (int64_t b0 = 0; b0 < B; b0 += BLOCK) {{
        const int64_t nb = B - b0 < BLOCK ? B - b0 : BLOCK;
        GEOATTN_NAME(vp_gram_lu_gram_d{d})(nb, T, x + b0*T*D, Gram + b0*D*D);
        for (int64_t b = 0; b < nb; b += SL) {{
            const int nl = nb - b < SL ? (int)(nb - b) : SL;
            gram_lu_factor(Gram + (b0 + b)*D*D, nl, A, N + (b0 + b)*D*D, P + b*D*D, R + b0 + b);
        }}
        GEOATTN_NAME(vp_gram_lu_out_d{d})(nb, T, x + b0*T*D, P, y + b0*T*D);
    }}
}}

/* backward: gx, and per sample gA = Gram Mbar (the gradient in A is the skew part of its sum), from x, Gy and N */
void GEOATTN_NAME(vp_gram_lu_bwd_d{d})(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy,
                                     const double *restrict N, const double *restrict A, real_t *restrict gx,
                                     double *restrict gA)
{{
    double G[BLOCK*D*D], Pbar[BLOCK*D*D], P[BLOCK*D*D], H[BLOCK*D*D];
    for (int64_t b0 = 0; b0 < B; b0 += BLOCK) {{
        const int64_t nb = B - b0 < BLOCK ? B - b0 : BLOCK;
        GEOATTN_NAME(vp_gram_lu_grams_d{d})(nb, T, x + b0*T*D, Gy + b0*T*D, G, Pbar);
        for (int64_t b = 0; b < nb; b += SL) {{
            const int nl = nb - b < SL ? (int)(nb - b) : SL;
            gram_lu_vjp(G + b*D*D, Pbar + b*D*D, N + (b0 + b)*D*D, nl, A, P + b*D*D, H + b*D*D, gA + (b0 + b)*D*D);
        }}
        GEOATTN_NAME(vp_gram_lu_gx_d{d})(nb, T, x + b0*T*D, Gy + b0*T*D, P, H, gx + b0*T*D);
    }}
}}

#undef LOOP_L
#undef SL
#undef DP
#undef D
"""


def group_lanes(d: int) -> int:
    """Samples per group of the ``d x d`` stage: 8 at every ``d`` (in one noisy run of the stage alone at ``d = 16``,
    4 samples per group took twice as long in the backward and as long in the forward)."""
    return 8


def target_name() -> str:
    """The generated file's name, beside ``_native_gram.c`` in :mod:`geoattn.kernels`."""
    return "_native_gram_lu.c"


def _group(d: int, negate_backward: bool) -> str:
    printed = [print_native_kernel(SPECS[k], d) for k in ("gram", "out", "grams", "gx")]
    template = TEMPLATE.format(d=d, sl=group_lanes(d), sign="" if negate_backward else "-")
    return f"#if GEOATTN_D == {d}\n\n" + "\n".join(printed) + template + f"\n#endif  /* d = {d} */\n"


def generate_gram_lu_module(dims: tuple[int, ...] | None = None, negate_backward: bool = False) -> str:
    """The C source of the Gram form's LU kernels at every ``d`` of ``dims`` (default ``MIN_DIM .. MAX_DIM``).

    Parameters
    ----------
    dims : tuple of int, optional
        the widths to print (each in ``MIN_DIM .. MAX_DIM``).
    negate_backward : bool
        print :math:`\\bar M` with the wrong sign: a broken kernel for the tests' negative control.

    Returns
    -------
    str
        the C text: a header, then one ``#if GEOATTN_D == d`` group per width.
    """
    dims = tuple(range(MIN_DIM, MAX_DIM + 1)) if dims is None else tuple(dims)
    for d in dims:
        if not MIN_DIM <= d <= MAX_DIM:
            raise ValueError(f"Expected every d in {MIN_DIM} .. {MAX_DIM}. Got {d}.")
    header = HEADER.format(lo=MIN_DIM, hi=MAX_DIM, claims=", ".join(_CLAIMS), lanes=LANES, chunk=CHUNK,
                           block=BLOCK, prelude=REAL_PRELUDE)
    return header + "\n" + "\n".join(_group(d, negate_backward) for d in dims)
