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
from .cprinter import LANES, REAL_PRELUDE, TOKEN_CHUNK, print_native_kernel

__all__ = ["MIN_DIM", "MAX_DIM", "BLOCK", "SPECS", "generate_gram_lu_module", "target_name"]

#: the widths the kernels are printed for: past the closed form's ``d <= 4``, up to the LU route's ``d <= 16``
MIN_DIM, MAX_DIM = 5, 16
#: samples per block of the drivers
BLOCK = 32
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

/* M = I + Gram A; PM = LU with partial pivoting; N = M^{{-T}} from U^T L^T P N = I; P = 2N - I; *R the largest
   entry of |M^T N - I| (NaN when one is: a zero or non-finite pivot shows there). */
static void gram_lu_factor(const double *restrict G, const double *restrict A, double *restrict N,
                           double *restrict P, double *restrict R)
{{
    double M[D][D], LU[D][D], Y[D][D];
    int piv[D];
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            double s = i == j ? 1.0 : 0.0;
            for (int k = 0; k < D; k++) s += G[i*D + k]*A[k*D + j];
            M[i][j] = s;
            LU[i][j] = s;
        }}
    for (int k = 0; k < D; k++) {{
        int p = k;
        double best = fabs(LU[k][k]);
        for (int i = k + 1; i < D; i++)
            if (fabs(LU[i][k]) > best) {{ best = fabs(LU[i][k]); p = i; }}
        piv[k] = p;
        if (p != k)
            for (int j = 0; j < D; j++) {{ double t = LU[k][j]; LU[k][j] = LU[p][j]; LU[p][j] = t; }}
        for (int i = k + 1; i < D; i++) {{
            const double l = LU[i][k]/LU[k][k];
            LU[i][k] = l;
            for (int j = k + 1; j < D; j++) LU[i][j] -= l*LU[k][j];
        }}
    }}
    /* U^T Z = I (forward), then L^T Y = Z (backward, unit diagonal), then N = P^T Y */
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            double s = i == j ? 1.0 : 0.0;
            for (int k = 0; k < i; k++) s -= LU[k][i]*Y[k][j];
            Y[i][j] = s/LU[i][i];
        }}
    for (int i = D - 2; i >= 0; i--)
        for (int j = 0; j < D; j++) {{
            double s = Y[i][j];
            for (int k = i + 1; k < D; k++) s -= LU[k][i]*Y[k][j];
            Y[i][j] = s;
        }}
    for (int k = D - 1; k >= 0; k--)
        if (piv[k] != k)
            for (int j = 0; j < D; j++) {{ double t = Y[k][j]; Y[k][j] = Y[piv[k]][j]; Y[piv[k]][j] = t; }}
    double m = 0.0;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            double s = i == j ? -1.0 : 0.0;
            for (int k = 0; k < D; k++) s += M[k][i]*Y[k][j];
            const double a = fabs(s);
            if (a > m || a != a) m = a;
            N[i*D + j] = Y[i][j];
            P[i*D + j] = 2.0*Y[i][j] - (i == j ? 1.0 : 0.0);
        }}
    *R = m;
}}

/* the backward's d x d stage: Mbar = {sign}2 N Pbar^T N, H = A Mbar^T - Mbar A, gA = Gram Mbar, P = 2N - I */
static void gram_lu_vjp(const double *restrict G, const double *restrict Pbar, const double *restrict N,
                        const double *restrict A, double *restrict P, double *restrict H, double *restrict gA)
{{
    double W[D][D], Mb[D][D];
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            double s = 0.0;
            for (int k = 0; k < D; k++) s += N[i*D + k]*Pbar[j*D + k];
            W[i][j] = s;
        }}
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            double s = 0.0;
            for (int k = 0; k < D; k++) s += W[i][k]*N[k*D + j];
            Mb[i][j] = {sign}2.0*s;
        }}
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            double h = 0.0, g = 0.0;
            for (int k = 0; k < D; k++) {{
                h += A[i*D + k]*Mb[j][k] - Mb[i][k]*A[k*D + j];
                g += G[i*D + k]*Mb[k][j];
            }}
            H[i*D + j] = h;
            gA[i*D + j] = g;
            P[i*D + j] = 2.0*N[i*D + j] - (i == j ? 1.0 : 0.0);
        }}
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
        for (int64_t b = 0; b < nb; b++)
            gram_lu_factor(Gram + (b0 + b)*D*D, A, N + (b0 + b)*D*D, P + b*D*D, R + b0 + b);
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
        for (int64_t b = 0; b < nb; b++)
            gram_lu_vjp(G + b*D*D, Pbar + b*D*D, N + (b0 + b)*D*D, A, P + b*D*D, H + b*D*D, gA + (b0 + b)*D*D);
        GEOATTN_NAME(vp_gram_lu_gx_d{d})(nb, T, x + b0*T*D, Gy + b0*T*D, P, H, gx + b0*T*D);
    }}
}}

#undef D
"""


def target_name() -> str:
    """The generated file's name, beside ``_native_gram.c`` in :mod:`geoattn.kernels`."""
    return "_native_gram_lu.c"


def _group(d: int, negate_backward: bool) -> str:
    printed = [print_native_kernel(SPECS[k], d) for k in ("gram", "out", "grams", "gx")]
    template = TEMPLATE.format(d=d, sign="" if negate_backward else "-")
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
    header = HEADER.format(lo=MIN_DIM, hi=MAX_DIM, claims=", ".join(_CLAIMS), lanes=LANES, chunk=TOKEN_CHUNK,
                           block=BLOCK, prelude=REAL_PRELUDE)
    return header + "\n" + "\n".join(_group(d, negate_backward) for d in dims)
