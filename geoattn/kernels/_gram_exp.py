r"""The Gram form of the exponential layer: :math:`y = xE`, :math:`E = \exp(-AG)`, :math:`G = x^Tx`, with no QR.

For ``x`` of shape ``(..., T, d)`` and skew ``A`` the exponential layer's output in the row layout is
:math:`y = \exp(C)^Tx = \exp(-xAx^T)x` (:math:`C = xAx^T` is skew), and the push-through identity
(ledger ``vp.exp_push_through``: :math:`Z\exp(Z^TAZ) = \exp(ZZ^TA)Z` with :math:`Z = x^T`, here with
:math:`-A`) turns it into :math:`y = x\exp(-AG)`: only ``d x d`` matrices, and a batched scaling and squaring of
a Taylor polynomial (:mod:`geoattn.kernels._taylor_exp`) instead of one LAPACK QR per sample.

Note [Gram form of the exponential]
-----------------------------------
Forward: ``G`` and ``E`` are computed in float64 and ``y`` is cast back to ``x``'s dtype. Backward (ledger
``vp.gram_exp_vjp``): with the incoming gradient :math:`\bar y`, :math:`M = -A_sG` (:math:`A_s` the skew part of
``A``, which the form uses) and :math:`\bar E = x^T\bar y`,

.. math::
   \bar M = L_{\exp}(M^T, \bar E),\quad
   \bar x = \bar yE^T + x(\bar G + \bar G^T),\ \bar G = A_s\bar M,\quad
   \bar A = \mathrm{skew}(-\bar MG),

where :math:`L_{\exp}(X, \cdot)` is the Fréchet derivative of ``exp`` at ``X``. ``E`` is computed by the native
kernels' algorithm in batched products (:mod:`geoattn.kernels._taylor_exp`, Note [batched Taylor exponential]:
per sample the least ``s`` with :math:`\min(\|2^{-s}M\|_1, \|2^{-s}M\|_F) \le 49/64`, the degree-16 Taylor
polynomial by Paterson--Stockmeyer, ``s`` squarings; ledger ``vp.gram_exp_native_truncation``), and
:math:`\bar M` by its reverse mode from the forward's stored powers, Horner iterates and squaring inputs (ledger
``vp.gram_exp_native_reverse``): the exact gradient of the computed ``E``, equal to :math:`L_{\exp}(M^T, \bar E)` up
to the truncation. With ``create_graph=True`` or inside ``torch.func`` transforms that nest gradients, the backward
is recomputed through the same Gram form written with differentiable operations (``torch.linalg.matrix_exp`` has
its own derivative), still without a ``T x T`` matrix.

Measured before the batched Taylor form (``torch.linalg.matrix_exp`` forward, the Fréchet derivative read off one
``2d x 2d`` block exponential per sample), one thread, float32, B*T = 65,536 unit-normal tokens, default weighting,
forward+backward against SDPA in the same run (an earlier benchmarks/layers.py run): d = 32, T = 64: 23x
(808 ms); a separate profile of the same size on a loaded machine timed the block exponential at about 850 ms
against 98 ms for the forward's ``matrix_exp`` and 2 ms per token product, so the backward's block exponential was
nearly all of it; d = 32, T = 256: 1.79x; d = 64, T = 256: 6.3x. The figures after are
in Note [batched Taylor exponential].

Note [structure check of the exponential Gram form]
---------------------------------------------------
The layer keeps the norm of every row of :math:`Z = x^T` (every column of ``x``) and their inner products:
:math:`y^Ty = E^TGE = G`, since :math:`\exp(GA)G = G\exp(AG)` (push-through again). Every sample's float64
result is checked against it: the largest entry of :math:`E^TGE - G` must not exceed
:func:`exp_residual_tolerance` times :math:`\mathrm{Tr}\,G = \|x\|_F^2` (``d * eps(dtype) / 16`` of the input's
dtype: float32, d = 4: 3e-8). Samples that fail it, samples with a non-finite entry, and samples with
:math:`\|x\|_F^2\|A_s\|_F > 10^6` (``GRAM_MAX_SCALE``, where the exponential's scaling and squaring grows long and
:math:`E` is as ill-conditioned as ``G``) take the QR form of :mod:`geoattn.kernels._lowrank` in float64, each on
its own: the rest of the batch enters the exponential with those samples replaced by zeros, so no sample's value
reaches another's result. Each sample's scaling ``s`` is its own and the degree is fixed, so a sample's ``E`` does
not depend on the rest of the batch (the batched products compute each sample alone).
"""

from __future__ import annotations

import torch

from ._functions import _traced, _under_functorch
from ._gram import GRAM_MAX_SCALE, _dual, _flat_batch, _qr_for_failed, _skew64
from ._taylor_exp import taylor_exp, taylor_exp_adjoint

__all__ = ["vp_gram_exp", "gram_exp_reason", "exp_residual_tolerance", "structure_ok"]


def gram_exp_reason(x: torch.Tensor, A: torch.Tensor) -> str | None:
    """None when :func:`vp_gram_exp` can compute the layer of ``x`` and ``A``, else why not.

    Parameters
    ----------
    x : Tensor ``(..., T, d)``
    A : Tensor ``(d, d)`` or ``(..., d, d)``

    Returns
    -------
    str or None
    """
    if x.numel() == 0:
        return "an empty input"
    if x.device.type != "cpu":
        return f"device {x.device.type}: this form was measured on the CPU only (and MPS has no float64)"
    if _traced(x) or _traced(A):
        return "traced (torch.func, torch.compile or meta): the structure check branches on the data"
    if _dual(x) or _dual(A):
        return "a forward-mode tangent: the Gram form of exp has no jvp"
    return None


def exp_residual_tolerance(dtype: torch.dtype, d: int) -> float:
    r"""The largest entry of :math:`E^TGE - G`, relative to :math:`\mathrm{Tr}\,G`, that a sample may leave:
    ``d * eps(dtype) / 16`` (Note [structure check of the exponential Gram form]).

    Parameters
    ----------
    dtype : torch.dtype
        the dtype of the layer's input (float32 for float32 and half inputs)
    d : int
        the feature dimension

    Returns
    -------
    float
    """
    return d * torch.finfo(dtype).eps / 16


def structure_ok(G: torch.Tensor, E: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    r"""Per sample: whether :math:`\max|E^TGE - G| \le` :func:`exp_residual_tolerance` :math:`\cdot\,\mathrm{Tr}\,G`.

    Parameters
    ----------
    G : Tensor ``(n, d, d)``
        the Gram matrices :math:`x^Tx` (float64)
    E : Tensor ``(n, d, d)``
        the computed :math:`\exp(-AG)` (float64)
    dtype : torch.dtype
        the input's dtype, which sets the tolerance

    Returns
    -------
    Tensor ``(n,)`` of bool; False for a sample with a non-finite residual
    """
    R = E.mT @ G @ E - G
    scale = G.diagonal(dim1=-2, dim2=-1).sum(-1)
    return R.abs().amax((-2, -1)) <= exp_residual_tolerance(dtype, G.shape[-1]) * scale


#: a deliberately wrong backward (the transpose dropped from the squarings' adjoint) for the tests' negative control
_NEGATE_SQUARE_ADJOINT = False


def _masked(x64: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """``x64`` with the samples not kept set to zero (their non-finite entries must not reach sums over the batch)."""
    if bool(keep.all()):
        return x64
    return torch.where(keep[:, None, None], x64, torch.zeros((), dtype=x64.dtype, device=x64.device))


def _gram_exp_form(x: torch.Tensor, A: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """The same form from differentiable operations (double backward and nested transforms)."""
    xd = _masked(x.double(), keep)
    return (xd @ torch.linalg.matrix_exp(-_skew64(A) @ (xd.mT @ xd))).to(x.dtype)


class _VPGramExp(torch.autograd.Function):
    # x: (n, T, d); A: (d, d) shared or (n, d, d); keep: (n,) the samples computed here (the others enter as zeros:
    # E = I, y = x, replaced by the caller). Returns y and the per-sample structure check.
    @staticmethod
    def forward(ctx, x, A, keep, stage):
        xd = _masked(x.to(torch.float64), keep)
        As = _skew64(A)
        G = xd.mT @ xd
        t = (taylor_exp if stage is None else stage.stage_exp)(-(As @ G))
        E = t.E
        ok = structure_ok(G, E, x.dtype) & keep & ~t.failed
        y = (xd @ E).to(x.dtype)
        ctx.save_for_backward(x, A, keep, xd, As, G, E)
        ctx.taylor, ctx.stage = t, stage
        ctx.mark_non_differentiable(ok)
        return y, ok

    @staticmethod
    def backward(ctx, gy, _ok):
        x, A, keep, xd, As, G, E = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(gy):
            # a graph of the backward is wanted, or a batched incoming gradient (is_grads_batched,
            # jacobian(vectorize=True)) that the stored-record adjoint cannot read: through the differentiable Gram form
            _, pullback = torch.func.vjp(lambda a, b: _gram_exp_form(a, b, keep), x, A)
            return (*pullback(gy), None, None)
        gyd = _masked(gy.to(torch.float64), keep)
        if ctx.stage is None:
            gM = taylor_exp_adjoint(ctx.taylor, xd.mT @ gyd, drop_square_transpose=_NEGATE_SQUARE_ADJOINT)
        else:
            gM = ctx.stage.stage_exp_adjoint(ctx.taylor, xd.mT @ gyd)
        gG = As @ gM
        gx = torch.baddbmm(gyd @ E.mT, xd, gG + gG.mT)
        gAs = -(gM @ G)
        if A.dim() == 2:
            gAs = gAs.sum(0)
        return gx.to(x.dtype), (0.5 * (gAs - gAs.mT)).to(A.dtype), None, None


def vp_gram_exp(x: torch.Tensor, A: torch.Tensor, stage=None) -> torch.Tensor:
    r"""The exponential layer :math:`y = \exp(xAx^T)^Tx = x\exp(-AG)` by its Gram form.

    Computed in float64 and cast back; the backward is explicit (Note [Gram form of the exponential]). Samples that
    fail the structure check, have a non-finite entry, or have :math:`\|x\|_F^2\|A_s\|_F >` ``GRAM_MAX_SCALE`` take
    the QR form in float64 on their own (Note [structure check of the exponential Gram form]).

    Parameters
    ----------
    x : Tensor ``(..., T, d)``
    A : Tensor ``(d, d)`` or ``(..., d, d)`` broadcasting against ``x``'s leading dimensions; its skew part is used
    stage : module, optional
        where the ``d x d`` exponential and its reverse mode run: by default the batched torch products of
        :mod:`geoattn.kernels._taylor_exp`; :mod:`geoattn.kernels._native_exp_wide` (its ``stage_exp`` and
        ``stage_exp_adjoint``) runs the same algorithm in C for ``17 <= d <= 64`` (the route ``gram-exp-wide``
        calls :func:`geoattn.kernels._gram_exp_fused.vp_gram_exp_wide`, which up to ``FUSED_MAX_DIM`` (32), for
        float32 or float64 tokens and a shared ``A``, runs the token products in the same C call)

    Returns
    -------
    Tensor of shape ``broadcast(x.shape[:-2], A.shape[:-2]) + (T, d)``, ``x``'s dtype

    Examples
    --------
    >>> x = torch.randn(4, 20, 3)
    >>> A = torch.randn(3, 3); A = A - A.T
    >>> y = vp_gram_exp(x, A)
    >>> torch.allclose(y.norm(dim=-2), x.norm(dim=-2), atol=1e-4)   # columns of x keep their norms
    True
    """
    T, d = x.shape[-2:]
    batch, xb, Ab = _flat_batch(x, A)
    with torch.no_grad():
        # summed in float64 without a float64 copy of float32 tokens: a square that overflows float32 is an entry
        # above 1.8e19, whose sample exceeds GRAM_MAX_SCALE in float64 as well (inf > GRAM_MAX_SCALE: the QR form)
        xs = xb if xb.dtype in (torch.float32, torch.float64) else xb.double()
        sq = xs.square().sum((-2, -1), dtype=torch.float64)
        scale = sq * _skew64(Ab).norm(dim=(-2, -1))
        keep = torch.isfinite(scale) & (scale <= GRAM_MAX_SCALE)
    y, ok = _VPGramExp.apply(xb, Ab, keep, stage)
    return _qr_for_failed(y, ok, xb, Ab, "exp").reshape(batch + (T, d))
