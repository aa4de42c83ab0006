r"""The C source of the Gram form's native kernels for ``4 < d <= 16``: printed token passes around an LU template.

The layer output is :math:`y = 2xN - x` with :math:`N = M^{-T}`, :math:`M = I + GA`, :math:`G = x^Tx` (ledger
``vp.gram_form``); its backward is :math:`\bar M = -2N\bar P^TN` with :math:`\bar P = x^T\bar y`,
:math:`H = A\bar M^T - \bar MA`, :math:`\bar x = \bar y(2N - I)^T + xH` and the per-sample :math:`G\bar M`
(ledger ``vp.gram_lu_vjp``, for every invertible ``M``). No closed form of ``N`` exists past ``d = 4``, so:

* the token passes are printed from the verified bindings of Note [the closed-form Gram layer] in
  :mod:`geoattn.symbolic.expressions` (``Gram = x^T x``, ``Pbar = x^T Gy``, ``y = x P``, ``gx = Gy P^T + x H``)
  by the row printer at ``d = 8`` and ``16`` (:mod:`geoattn.codegen.rowprinter`: a token row as vectors of
  doubles, one sample at a time) and elsewhere by the C printer of the closed-form kernels
  (:mod:`geoattn.codegen.cprinter`: samples in lanes, tokens in tiles);
* the ``d x d`` stage and the drivers are the C text of :mod:`geoattn.codegen.gram_lu_stage` at a fixed ``d``:
  ``N`` by the pivot-free form of ``vp.gram_lu_woodbury`` (Cholesky of ``Gram``, an LU factorisation of
  ``I - K`` without pivoting), the largest residual entry :math:`|M^TN - I|` (NaN when one is), the pivoted LU
  in double for the samples whose residual fails, and the backward's ``d x d`` products, one vector register of samples at a time (8 with AVX-512, 4 with AVX2).

A driver per direction runs the three stages on blocks of ``BLOCK`` samples, so a block's tokens are still in
cache for the second pass. ``negate_backward`` prints a deliberately wrong kernel (the sign of :math:`\bar M`
flipped) and ``fault_fast`` one with the sign of ``K`` flipped, for the tests' negative controls.
"""

from __future__ import annotations

from ..symbolic import expressions as ex
from ..symbolic.kernel_spec import NativeKernelSpec
from .cprinter import LANES, REAL_PRELUDE, print_native_kernel
from .gram_lu_stage import print_stage
from .rowprinter import ROW_DIMS, print_row_kernel

__all__ = ["MIN_DIM", "MAX_DIM", "BLOCK", "SPECS", "generate_gram_lu_module", "print_pass", "target_name"]

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
    # Gram and Pbar in one pass: the exponential kernels' backward and the Triton LU kernels (the C LU backward
    # takes the forward's Gram and prints "pbar")
    "grams": NativeKernelSpec(
        name="vp_gram_lu_grams", doc="Gram = x^T x and Pbar = x^T Gy of each sample, one pass over its tokens.",
        bindings=[("Gram", ex.x.T * ex.x), ("Pbar", ex.x.T * ex.Gy)], token_inputs=("x", "Gy"),
        sample_outputs=("Gram", "Pbar"), claims=_CLAIMS, max_dim=MAX_DIM),
    "pbar": NativeKernelSpec(
        name="vp_gram_lu_pbar", doc="Pbar = x^T Gy of each sample, one pass over its tokens (the forward saved Gram).",
        bindings=[("Pbar", ex.x.T * ex.Gy)], token_inputs=("x", "Gy"), sample_outputs=("Pbar",), claims=_CLAIMS,
        max_dim=MAX_DIM),
    "gx": NativeKernelSpec(
        name="vp_gram_lu_gx", doc="The gradient gx = Gy P^T + x H of each sample from its P and H.",
        bindings=[("gx", ex.Gy * _P.T + ex.x * _H)], token_inputs=("x", "Gy"),
        sample_inputs={"P": "general", "H": "general"}, token_outputs=("gx",), claims=_CLAIMS, max_dim=MAX_DIM),
}

HEADER = """/* Native CPU kernels of the Gram form y = 2 x (I + x^T x A)^{{-T}} - x for {lo} <= d <= {hi}.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/gram_lu_c.py); `geoattn codegen
   --check` fails when it is stale. The token passes are printed from the verified bindings of
   geoattn/symbolic/expressions.py (Note [the closed-form Gram layer]); the d x d stage (N = M^{{-T}},
   M = I + Gram A, by Cholesky and an unpivoted LU of I - K, the residual, LU with partial pivoting for the
   samples it fails, the backward's products) is the C text of geoattn.codegen.gram_lu_stage
   [ledger: {claims}]. Compiled at first use by geoattn.kernels._native_lu, one library per d and real type
   (-DGEOATTN_D=<d> -DGEOATTN_F32 or -DGEOATTN_F64); never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>

#define LANES {lanes}
#define TOKEN_CHUNK {chunk}
#define BLOCK {block}

{prelude}
"""

def target_name() -> str:
    """The generated file's name, beside ``_native_gram.c`` in :mod:`geoattn.kernels`."""
    return "_native_gram_lu.c"


def print_pass(spec: NativeKernelSpec, d: int) -> str:
    """The C text of one token pass at ``d``: the row form (:mod:`geoattn.codegen.rowprinter`) at ``d`` in its
    ``ROW_DIMS``, the lane form (:func:`geoattn.codegen.cprinter.print_native_kernel`) elsewhere."""
    return print_row_kernel(spec, d) if d in ROW_DIMS else print_native_kernel(spec, d)


def _group(d: int, negate_backward: bool, fault_fast: bool, retry: bool) -> str:
    printed = [print_pass(SPECS[k], d) for k in ("gram", "out", "pbar", "gx")]
    stage = print_stage(d, negate_backward=negate_backward, fault_fast=fault_fast, retry=retry)
    return f"#if GEOATTN_D == {d}\n\n" + "\n".join(printed) + stage + f"\n#endif  /* d = {d} */\n"


def generate_gram_lu_module(dims: tuple[int, ...] | None = None, negate_backward: bool = False,
                            fault_fast: bool = False, retry: bool = True) -> str:
    """The C source of the Gram form's LU kernels at every ``d`` of ``dims`` (default ``MIN_DIM .. MAX_DIM``).

    Parameters
    ----------
    dims : tuple of int, optional
        the widths to print (each in ``MIN_DIM .. MAX_DIM``).
    negate_backward : bool
        print :math:`\\bar M` with the wrong sign: a broken kernel for the tests' negative control.
    fault_fast : bool
        print ``I + K`` in place of ``I - K`` in the fast forward (``vp.gram_lu_woodbury``'s negative control).
    retry : bool
        recompute with partial pivoting the samples whose fast residual fails (``False`` exposes the fast form).

    Returns
    -------
    str
        the C text: a header, then one ``#if GEOATTN_D == d`` group per width.
    """
    dims = tuple(range(MIN_DIM, MAX_DIM + 1)) if dims is None else tuple(dims)
    for d in dims:
        if not MIN_DIM <= d <= MAX_DIM:
            raise ValueError(f"Expected every d in {MIN_DIM} .. {MAX_DIM}. Got {d}.")
    claims = ", ".join(_CLAIMS + ["vp.gram_lu_woodbury"])
    header = HEADER.format(lo=MIN_DIM, hi=MAX_DIM, claims=claims, lanes=LANES, chunk=CHUNK,
                           block=BLOCK, prelude=REAL_PRELUDE)
    return header + "\n" + "\n".join(_group(d, negate_backward, fault_fast, retry) for d in dims)
