r"""The exponential Gram form with its token products in C for ``17 <= d <= 32``, float32 tokens and a shared ``A``:
one pass over the batch per direction (``vp_gram_exp_wide_tok_fwd`` and ``_bwd`` of
:mod:`geoattn.kernels._native_exp_wide`, Note [fused wide exponential] in :mod:`geoattn.codegen.gram_exp_wide_c`).
Float64 tokens are taken as well (the same text in double: the tests' gradcheck).

Each sample is computed as :class:`geoattn.kernels._gram_exp._VPGramExp` computes it: ``G = x^Tx`` in double, the
same scale bound (``GRAM_MAX_SCALE``, decided in C from :math:`\mathrm{Tr}\,G = \|x\|_F^2`: no float64 pass over the
tokens in torch), the same shift rule, the same stage and its reverse mode, the same structure check
(:func:`geoattn.kernels._gram_exp.exp_residual_tolerance`); a sample not kept never enters the stage (``y = 0``,
zero gradients), one whose shift fails takes ``E = I``; only ``y = xE``, :math:`x^T\bar y` and
:math:`\bar yE^T + xH` run in the tokens' type (the bound is in the Note). The caller's
:func:`geoattn.kernels._gram._qr_for_failed` replaces the failed samples as before. Each part of a split batch sums its
:math:`-\bar MG` in C into the first entry of its part of a reused scratch (:func:`geoattn.kernels._scratch.scratch`).
"""

from __future__ import annotations

import torch

from . import _native, _native_exp_wide as W, _scratch
from ._gram import GRAM_MAX_SCALE, _flat_batch, _qr_for_failed, _skew64
from ._functions import _under_functorch
from ._gram_exp import _gram_exp_form, exp_residual_tolerance, vp_gram_exp

__all__ = ["fused_reason", "VPGramExpFused", "vp_gram_exp_wide"]

_REAL = {torch.float32: "f32", torch.float64: "f64"}


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
    if x.dtype not in _REAL:
        return f"{x.dtype} tokens: the fused kernels take float32 (float64 for the tests' gradcheck)"
    if A.dim() != 2:
        return "a weighting per sample: the fused kernels take one shared A"
    if not W.MIN_DIM <= d <= W.FUSED_MAX_DIM:
        return f"d={d}: the fused kernels cover {W.MIN_DIM} <= d <= {W.FUSED_MAX_DIM}"
    lib = W.library(d, _REAL[x.dtype])
    return lib if isinstance(lib, str) else None


class VPGramExpFused(torch.autograd.Function):
    r"""``(y, ok)`` of the exponential Gram form from tokens ``x`` ``(n, T, d)`` and a shared ``A``: a sample is
    computed when :math:`\mathrm{Tr}\,G\,\|A_s\|_F` is finite and at most ``GRAM_MAX_SCALE`` (decided in C from its
    Gram matrix), else ``y = 0`` and ``ok`` False there; the backward is the fused kernel's (:math:`\bar x`,
    :math:`\bar A`), or the differentiable Gram form when a graph of it is wanted."""

    @staticmethod
    def forward(ctx, x, A):
        n, T, d = x.shape
        x = x.contiguous()
        As = _skew64(A).contiguous()
        # Note [structure check of the exponential Gram form]: the scale bound and exp_residual_tolerance
        bound = torch.tensor([float(As.norm()), GRAM_MAX_SCALE, exp_residual_tolerance(x.dtype, d)],
                             dtype=torch.float64)
        y = torch.empty_like(x)
        s = torch.empty(n, dtype=torch.int32)
        ok = torch.empty(n, dtype=torch.uint8)
        real = _REAL[x.dtype]
        _native.run_checked(W._fn(W.library(d, real), "vp_gram_exp_wide_tok_fwd", d, real), n, T,
                            [(x, True), (As, False), (bound, False), (y, True), (s, True), (ok, True)])
        ctx.save_for_backward(x, A, As, s)
        ok = ok.bool()
        ctx.mark_non_differentiable(ok)
        return y, ok

    @staticmethod
    def backward(ctx, gy, _ok):
        x, A, As, s = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(gy):  # a graph of the backward, or a batched gradient
            _, pullback = torch.func.vjp(lambda a, b: _gram_exp_form(a, b, s != -2), x, A)
            return pullback(gy)
        n, T, d = x.shape
        if gy.dtype != x.dtype:
            gy = gy.to(x.dtype)
        strides = torch.tensor(gy.stride(), dtype=torch.int64)
        gx = torch.empty_like(x)
        gA = _scratch.scratch((n, d, d), torch.float64)  # one entry per part of the batch written
        first = torch.zeros(n, dtype=torch.uint8)
        real = _REAL[x.dtype]
        _native.run_checked(W._fn(W.library(d, real), "vp_gram_exp_wide_tok_bwd", d, real), n, T,
                            [(x, True), (gy, True), (strides, False), (As, False), (s, True), (gx, True),
                             (gA, True), (first, True)])
        gAs = gA[first.bool()].sum(0)
        _scratch.release(gA)
        return gx, (0.5 * (gAs - gAs.mT)).to(A.dtype)


def vp_gram_exp_wide(x: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""The exponential Gram form with the ``d x d`` stage of :mod:`geoattn.kernels._native_exp_wide` (route
    ``gram-exp-wide/native``, ``17 <= d <= 64``): :class:`VPGramExpFused` where :func:`fused_reason` allows it (the
    token products in the same C call), else :func:`geoattn.kernels._gram_exp.vp_gram_exp` with that stage; the
    samples that fail the structure check or the scale bound take the QR form either way.

    Parameters
    ----------
    x : Tensor ``(..., T, d)``
    A : Tensor ``(d, d)`` or ``(..., d, d)``; its skew part is used

    Returns
    -------
    Tensor of ``x``'s shape (broadcast against ``A``'s batch) and dtype
    """
    T, d = x.shape[-2:]
    if W.FUSED_MAX_DIM >= d:
        batch, xb, Ab = _flat_batch(x, A)
        if fused_reason(xb, Ab) is None:  # the same per-sample decisions, taken in C
            y, ok = VPGramExpFused.apply(xb, Ab)
            return _qr_for_failed(y, ok, xb, Ab, "exp").reshape(batch + (T, d))
    return vp_gram_exp(x, A, W)
