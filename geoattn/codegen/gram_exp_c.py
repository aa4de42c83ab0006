r"""The C source of the exponential layer's Gram form for ``3 <= d <= 16``: printed token passes around a
scaling-and-squaring template.

The layer output is :math:`y = xE`, :math:`E = \exp(M)`, :math:`M = -AG`, :math:`G = x^Tx` (ledger
``vp.exp_push_through``); its backward (ledger ``vp.gram_exp_vjp``) is :math:`\bar E = x^T\bar y`, :math:`\bar M`
the adjoint of the Fréchet derivative of ``exp`` at ``M`` applied to :math:`\bar E`, :math:`\bar G = A\bar M`,
:math:`H = \bar G + \bar G^T`, :math:`\bar x = \bar yE^T + xH` and the per-sample :math:`-\bar MG` (the gradient in
``A`` is the skew part of its sum). These are the token passes of the LU kernels with :math:`P := E`, so:

* the token passes are the specifications of :data:`geoattn.codegen.gram_lu_c.SPECS` (``Gram = x^T x``,
  ``y = x P``, ``Gram`` and ``Pbar = x^T Gy``, ``gx = Gy P^T + x H``), renamed and printed at every ``d`` by the
  same C printer;
* the ``d x d`` stage is a template in double, ``SL`` samples at a time: :math:`X = 2^{-s}M` with the least
  ``s`` such that :math:`\min(\|X\|_1, \|X\|_F) \le` :data:`THETA`, the Taylor polynomial of degree :data:`DEGREE` of
  :math:`\exp(X)` by the Paterson--Stockmeyer scheme (powers :math:`X^2 .. X^p`, then a Horner scheme in
  :math:`X^p`), ``s`` squarings (ledger ``vp.gram_exp_native_truncation``: the truncation relative to the result is
  below float64's unit roundoff), the structure check's :math:`\max|E^TGE - G| / \mathrm{Tr}\,G` per sample;
* the backward's ``d x d`` stage recomputes that algorithm and runs its reverse mode (ledger
  ``vp.gram_exp_native_reverse``: :math:`\bar X = \bar YX^T + X^T\bar Y` for a squaring :math:`Y = X^2`, and the
  rules of the products and sums of the Horner steps), so :math:`\bar M` is the exact gradient of the computed
  ``E``, not of the exact exponential: the two differ by the truncation error.

Samples whose scale :math:`\mathrm{Tr}\,G\,\|A\|_F` exceeds the bound the caller passes, or is not finite, or
that need more than ``SMAX`` squarings, report NaN as their residual: the caller recomputes them by another form.
``negate_backward`` prints a deliberately wrong kernel (the transpose dropped from the squarings' adjoint) for the
tests' negative control.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

from .cprinter import LANES, REAL_PRELUDE
from .gram_exp_stage import STAGE
from .gram_lu_c import BLOCK, CHUNK, SPECS as LU_SPECS, print_pass

__all__ = ["MIN_DIM", "MAX_DIM", "THETA", "DEGREE", "BLOCKS", "TOP_SCALAR", "SMAX", "SPECS", "generate_gram_exp_module",
           "target_name", "truncation_bound"]

#: the widths the kernels are printed for (d <= 2 keep the other routes)
MIN_DIM, MAX_DIM = 3, 16
#: the scaled matrix's norm bound: the largest k/64 at which the degree-DEGREE bound (:func:`truncation_bound`) is
#: below 2^-53 (Note [the exponential stage's degree] in geoattn.codegen.gram_exp_stage)
THETA = Fraction(49, 64)
#: the Taylor degree
DEGREE = 16
#: the Paterson--Stockmeyer block length p: powers X^2 .. X^p, then ceil((DEGREE + 1)/p) - 1 Horner steps, the
#: first of them without a product when the top block is the constant c_DEGREE alone (TOP_SCALAR)
BLOCKS = 4
TOP_SCALAR = (DEGREE + 1) % BLOCKS == 1
#: the most squarings a sample may take (|x|_F^2 |A|_F <= 1e6 needs at most 25 at d = 16)
SMAX = 40
_CLAIMS = ["vp.exp_push_through", "vp.gram_exp_vjp", "vp.gram_exp_native_truncation", "vp.gram_exp_native_reverse"]

#: the printed token passes: the LU kernels' specifications under this module's names
SPECS = {k: dataclasses.replace(s, name=s.name.replace("vp_gram_lu_", "vp_gram_exp_"), claims=list(_CLAIMS))
         for k, s in LU_SPECS.items()}


def truncation_bound(theta: Fraction, m: int) -> Fraction:
    r"""A rational upper bound of :math:`\|\sum_{k>m}X^k/k!\|\,\|\exp(X)^{-1}\|` for :math:`\|X\| \le \theta`
    (any submultiplicative norm): :math:`e^\theta\,\theta^{m+1}/(m+1)!\,/(1 - \theta/(m+2))`, with :math:`e^\theta`
    bounded by :math:`3^\theta` for :math:`\theta \le 1` (ledger ``vp.gram_exp_native_truncation``).

    Parameters
    ----------
    theta : Fraction
        the norm bound, ``0 < theta <= 1``
    m : int
        the Taylor degree

    Returns
    -------
    Fraction
    """
    theta = Fraction(theta)
    if not 0 < theta <= 1 or m < 1:
        raise ValueError(f"Expected 0 < theta <= 1 and m >= 1. Got theta={theta}, m={m}.")
    tail = theta ** (m + 1) / math.factorial(m + 1) / (1 - theta / (m + 2))
    return 3 * tail  # e^theta <= e < 3


HEADER = """/* Native CPU kernels of the exponential layer's Gram form y = x exp(-A x^T x) for {lo} <= d <= {hi}.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/gram_exp_c.py); `geoattn codegen
   --check` fails when it is stale. The token passes are printed from the verified bindings of
   geoattn/symbolic/expressions.py (Note [the closed-form Gram layer]); the d x d stage (scaling and squaring of
   a Taylor polynomial of degree {m} by Paterson-Stockmeyer, its reverse mode, the structure check) is the
   template of geoattn.codegen.gram_exp_c [ledger: {claims}]. Compiled at first use by
   geoattn.kernels._native_exp, one library per d and real type; never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define LANES {lanes}
#define TOKEN_CHUNK {chunk}
#define BLOCK {block}
#define SMAX {smax}
#define THETA {theta}
#define EX_TOP_SCALAR {top}
#define NPOW {p}
#define NBLK {q}

{prelude}

/* the Taylor coefficients 1/k!, k = 0 .. NPOW*NBLK - 1 (zero past the degree {m}) */
static const double TAYLOR[NPOW*NBLK] = {{{coefs}}};
"""

# the drivers at D = GEOATTN_D around the d x d stage of geoattn.codegen.gram_exp_stage
TEMPLATE = r"""
#define D {d}
#define SL {sl}
#define EX_NEGATE {negate}
{stage}
/* forward: y = x E, and per sample Gram, E and R (A: the whole skew matrix; K: |A|_F and the largest scale) */
void GEOATTN_NAME(vp_gram_exp_fwd_d{d})(int64_t B, int64_t T, const real_t *restrict x, const double *restrict A,
                                      const double *restrict K, real_t *restrict y, double *restrict Gram,
                                      double *restrict E, double *restrict R)
{{
    for (int64_t b0 = 0; b0 < B; b0 += BLOCK) {{
        const int64_t nb = B - b0 < BLOCK ? B - b0 : BLOCK;
        GEOATTN_NAME(vp_gram_exp_gram_d{d})(nb, T, x + b0*T*D, Gram + b0*D*D);
        for (int64_t b = 0; b < nb; b += SL) {{
            const int nl = nb - b < SL ? (int)(nb - b) : SL;
            ex_forward(Gram + (b0 + b)*D*D, nl, A, K, E + (b0 + b)*D*D, R + b0 + b);
        }}
        GEOATTN_NAME(vp_gram_exp_out_d{d})(nb, T, x + b0*T*D, E + b0*D*D, y + b0*T*D);
    }}
}}

/* backward: gx, and per sample gA = -Mbar Gram (the gradient in A is the skew part of its sum); returns 0, or 1
   when the scratch could not be allocated (nothing written then) */
int GEOATTN_NAME(vp_gram_exp_bwd_d{d})(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy,
                                     const double *restrict A, real_t *restrict gx, double *restrict gA)
{{
    double G[BLOCK*D*D], Pbar[BLOCK*D*D], P[BLOCK*D*D], H[BLOCK*D*D];
    /* the squarings' inputs, 64-byte aligned as the vectors require */
    char *raw = malloc(sizeof(exm)*(SMAX + 1) + 64);
    if (raw == NULL) return 1;
    exm *Y = (exm *)(raw + (64 - (uintptr_t)raw % 64));
    for (int64_t b0 = 0; b0 < B; b0 += BLOCK) {{
        const int64_t nb = B - b0 < BLOCK ? B - b0 : BLOCK;
        GEOATTN_NAME(vp_gram_exp_grams_d{d})(nb, T, x + b0*T*D, Gy + b0*T*D, G, Pbar);
        for (int64_t b = 0; b < nb; b += SL) {{
            const int nl = nb - b < SL ? (int)(nb - b) : SL;
            ex_backward(G + b*D*D, Pbar + b*D*D, nl, A, Y, P + b*D*D, H + b*D*D, gA + (b0 + b)*D*D);
        }}
        GEOATTN_NAME(vp_gram_exp_gx_d{d})(nb, T, x + b0*T*D, Gy + b0*T*D, P, H, gx + b0*T*D);
    }}
    free(raw);
    return 0;
}}

#undef EX_NEGATE
#undef SL
#undef D
"""


def target_name() -> str:
    """The generated file's name, beside ``_native_gram_lu.c`` in :mod:`geoattn.kernels`."""
    return "_native_gram_exp.c"


def _group(d: int, negate_backward: bool) -> str:
    printed = [print_pass(SPECS[k], d) for k in ("gram", "out", "grams", "gx")]
    template = TEMPLATE.format(d=d, sl="(GEOATTN_VBYTES / 8)", negate=int(negate_backward), stage=STAGE)
    return f"#if GEOATTN_D == {d}\n\n" + "\n".join(printed) + template + f"\n#endif  /* d = {d} */\n"


def generate_gram_exp_module(dims: tuple[int, ...] | None = None, negate_backward: bool = False) -> str:
    """The C source of the exponential Gram form's kernels at every ``d`` of ``dims`` (default ``MIN_DIM ..
    MAX_DIM``).

    Parameters
    ----------
    dims : tuple of int, optional
        the widths to print (each in ``MIN_DIM .. MAX_DIM``).
    negate_backward : bool
        print the squarings' adjoint without its transpose (:math:`\\bar X = \\bar YX + X^T\\bar Y`): a broken
        kernel for the tests' negative control.

    Returns
    -------
    str
        the C text: a header, then one ``#if GEOATTN_D == d`` group per width.
    """
    dims = tuple(range(MIN_DIM, MAX_DIM + 1)) if dims is None else tuple(dims)
    for d in dims:
        if not MIN_DIM <= d <= MAX_DIM:
            raise ValueError(f"Expected every d in {MIN_DIM} .. {MAX_DIM}. Got {d}.")
    q = -(-(DEGREE + 1) // BLOCKS)
    coefs = ", ".join(repr(1.0 / math.factorial(k)) if k <= DEGREE else "0.0" for k in range(BLOCKS * q))
    header = HEADER.format(lo=MIN_DIM, hi=MAX_DIM, m=DEGREE, claims=", ".join(_CLAIMS), lanes=LANES, chunk=CHUNK,
                           block=BLOCK, smax=SMAX, theta=repr(float(THETA)), top=int(TOP_SCALAR), p=BLOCKS, q=q,
                           prelude=REAL_PRELUDE, coefs=coefs)
    return header + "\n" + "\n".join(_group(d, negate_backward) for d in dims)
