r"""The exponential Gram form with its token products in C for ``17 <= d <= 32`` and float32 tokens: one pass over
the batch per direction (``vp_gram_exp_wide_tok_fwd`` and ``_bwd`` of :mod:`geoattn.kernels._native_exp_wide`,
Note [fused wide exponential] in :mod:`geoattn.codegen.gram_exp_wide_c`).

Each sample is computed as :class:`geoattn.kernels._gram_exp._VPGramExp` computes it: ``G = x^Tx`` in double, the
same shift rule, the same stage and its reverse mode, the same structure check (:func:`exp_residual_tolerance`), the
samples not kept entering as zeros, the shift's failed samples as ``E = I``; only ``y = xE``, :math:`x^T\bar y` and
:math:`\bar yE^T + xH` run in float32 (the bound is in the Note). The caller's
:func:`geoattn.kernels._gram._qr_for_failed` replaces the failed samples as before.
"""

from __future__ import annotations

import torch

from . import _native, _native_exp_wide as W
from ._gram import _skew64

__all__ = ["fused_reason", "VPGramExpFused"]


def fused_reason(x: torch.Tensor, A: torch.Tensor) -> str | None:
    """None when :class:`VPGramExpFused` serves ``x`` and ``A`` (flattened to ``(n, T, d)`` and ``(d, d)``), else
    why not.

    Parameters
    ----------
    x : Tensor ``(n, T, d)``
    A : Tensor ``(d, d)`` or ``(n, d, d)``

    Returns
    -------
    str or None
    """
    d = x.shape[-1]
    if x.dtype != torch.float32:
        return f"{x.dtype} tokens: the fused kernels take float32"
    if A.dim() != 2:
        return "a weighting per sample: the fused kernels take one shared A"
    if not W.MIN_DIM <= d <= W.FUSED_MAX_DIM:
        return f"d={d}: the fused kernels cover {W.MIN_DIM} <= d <= {W.FUSED_MAX_DIM}"
    lib = W.library(d, "f32")
    return lib if isinstance(lib, str) else None


class VPGramExpFused(torch.autograd.Function):
    r"""``(y, ok)`` of the exponential Gram form from float32 tokens ``x`` ``(n, T, d)``, a shared ``A`` and the
    samples ``keep`` computed; the backward is the fused kernel's (:math:`\bar x`, :math:`\bar A`), or the
    differentiable Gram form when a graph of it is wanted."""

    @staticmethod
    def forward(ctx, x, A, keep):
        n, T, d = x.shape
        x = x.contiguous()
        As = _skew64(A).contiguous()
        keep8 = keep.to(torch.uint8).contiguous()
        tol = torch.tensor([d * torch.finfo(x.dtype).eps / 16], dtype=torch.float64)
        y = torch.empty_like(x)
        s = torch.empty(n, dtype=torch.int32)
        ok = torch.empty(n, dtype=torch.uint8)
        lib = W.library(d, "f32")
        W.run_checked(W._fn(lib, "vp_gram_exp_wide_tok_fwd", d, "f32"), n, T,
                      [(x, True), (As, False), (keep8, True), (tol, False), (y, True), (s, True), (ok, True)])
        ctx.save_for_backward(x, A, As, keep, keep8, s)
        ok = ok.bool()
        ctx.mark_non_differentiable(ok)
        return y, ok

    @staticmethod
    def backward(ctx, gy, _ok):
        x, A, As, keep, keep8, s = ctx.saved_tensors
        if torch.is_grad_enabled():
            from ._gram_exp import _gram_exp_form
            _, pullback = torch.func.vjp(lambda a, b: _gram_exp_form(a, b, keep), x, A)
            return (*pullback(gy), None)
        n, T, d = x.shape
        if gy.dtype != x.dtype:
            gy = gy.to(x.dtype)
        strides = torch.tensor(gy.stride(), dtype=torch.int64)
        gx = torch.empty_like(x)
        gA = _native.scratch((n, d, d), torch.float64)
        lib = W.library(d, "f32")
        W.run_checked(W._fn(lib, "vp_gram_exp_wide_tok_bwd", d, "f32"), n, T,
                      [(x, True), (gy, True), (strides, False), (As, False), (keep8, True), (s, True), (gx, True),
                       (gA, True)])
        gAs = gA.sum(0)
        _native.release(gA)
        return gx, (0.5 * (gAs - gAs.mT)).to(A.dtype), None
