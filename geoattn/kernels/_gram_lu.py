r"""The Gram form of the Cayley layer for ``d > 4`` with the structure-of-arrays LU of
:mod:`geoattn.kernels._batched_solve` and an explicit backward that reuses its factors.

For ``x`` of shape ``(B, T, d)`` and skew ``A`` the layer output is :math:`y = 2xN - x` with
:math:`N = M^{-T}`, :math:`M = I + GA` and the Gram matrix :math:`G = x^Tx` (ledger ``vp.gram_form``), all in
float64. ``M`` is invertible for every ``x``: :math:`\det(I_d + GA) = \det(I_T + xAx^T)` (ledger
``vp.push_through_invertible``), and :math:`xAx^T` is skew, so its eigenvalues are imaginary and those of
:math:`I_T + xAx^T` have real part 1; equivalently the nonzero eigenvalues of :math:`GA` (``G`` positive
semidefinite, ``A`` skew) are those of :math:`G^{1/2}AG^{1/2}`, a skew matrix. The condition number of ``M``
still grows with :math:`\|x\|_F^2\|A\|`, hence the per-sample safety below.

Note [Gram solve backward]
--------------------------
With :math:`\bar y` the incoming gradient, :math:`\bar N = 2x^T\bar y`. From :math:`dN = -N\,dM^T N`,
:math:`\bar M = -N\bar N^TN = -W N` with :math:`W = M^{-T}\bar N^T`: one more solve with :math:`M^T` from the
forward's LU factors. Then :math:`M = I + GA` gives :math:`\bar G = \bar MA^T` and :math:`\bar A = G\bar M`
(summed over the batch for a shared ``A``), and :math:`G = x^Tx` gives
:math:`\bar x = \bar y(2N - I)^T + x(\bar G + \bar G^T)`. The layer uses the skew part of ``A``, so the gradient
in ``A`` is the skew part of :math:`\bar A`.

Per sample, as on the closed-form route (Note [closed-form residual check] in :mod:`geoattn.kernels._gram`): the
residual :math:`R = M^TN - I` must not exceed ``residual_tolerance`` of the input's dtype in any entry; a sample
that fails it is solved again by LAPACK's pivoted solve (``torch.linalg.solve``), and its backward takes
:math:`W = N\bar N^T` from that ``N``. Samples with :math:`\|x\|_F^2\|A\|_F > 10^6` (``GRAM_MAX_SCALE``) take the
QR form in float64 (Note [why QR and not the Gram matrix]). A NaN sample fails its residual check and stays NaN;
every operation is per sample, so its neighbours are untouched.
"""

from __future__ import annotations

import torch

from . import _generated as gen
from ._batched_solve import soa_lu, soa_lu_solve
from ._gram import (GRAM_MAX_SCALE, CLOSED_MAX_DIM, _dual, _finite_samples, _flat_batch, _qr_for_failed, _skew64,
                    residual_tolerance)
from ._functions import _traced

__all__ = ["vp_gram_lu", "lu_reason", "LU_MAX_DIM", "LU_MIN_T"]

#: the largest d the structure-of-arrays LU serves and the shortest T: forward+backward, one thread, float32,
#: 16,384 tokens (benchmarks/gram_lu.py, two noisy runs), time of gram-solve / gram-lu: d = 8: T = 16 0.6-1.1,
#: T = 64 0.9-2.7, T = 256 1.1-1.4; d = 16: T = 64 0.9-1.1, T = 256 1.2-1.7; d = 32: T = 64 0.55-0.6,
#: T = 256 1.1-1.3. The choice depends on the sample's shape only, never on the batch.
LU_MAX_DIM = 16
LU_MIN_T = 32


def lu_reason(x: torch.Tensor, A: torch.Tensor) -> str | None:
    """None when :func:`vp_gram_lu` serves the Gram form of ``x`` and ``A``, else why not."""
    d = x.shape[-1]
    if x.device.type != "cpu":
        return f"device {x.device.type}: the structure-of-arrays LU was measured on the CPU only"
    if x.dtype == torch.float64:
        return "float64 input: its residual check is held to the input's eps, which a float64 LU cannot meet"
    if d <= CLOSED_MAX_DIM:
        return f"d={d} <= {CLOSED_MAX_DIM}: measured only for d > {CLOSED_MAX_DIM} (the closed form's range)"
    if d > LU_MAX_DIM:
        return f"d={d} > {LU_MAX_DIM}: LAPACK's batched solve is faster than the structure-of-arrays LU there"
    if x.shape[-2] < LU_MIN_T:
        return f"T={x.shape[-2]} < {LU_MIN_T}: LAPACK's batched solve was as fast or faster for short sequences"
    if x.numel() == 0:
        return "an empty input"
    if _traced(x) or _traced(A):
        return "traced (torch.func, torch.compile or meta): the residual check branches on the data"
    if _dual(x) or _dual(A):
        return "a forward-mode tangent: the explicit backward has no jvp"
    return None


def _soa_dd(M: torch.Tensor) -> torch.Tensor:
    """``(B, d, d)`` -> ``(d, d, B)`` contiguous."""
    return M.permute(1, 2, 0).contiguous()


def _aos_dd(Ms: torch.Tensor) -> torch.Tensor:
    """``(d, d, B)`` -> ``(B, d, d)`` contiguous."""
    return Ms.permute(2, 0, 1).contiguous()


class _VPGramLU(torch.autograd.Function):
    # x (B, T, d) of any real dtype; A (d, d) shared or (B, d, d); Note [Gram solve backward]
    @staticmethod
    def forward(ctx, x, A):
        B, T, d = x.shape
        xd = x.to(torch.float64)
        As = _skew64(A)
        eye = torch.eye(d, dtype=torch.float64, device=x.device)
        G = xd.mT @ xd
        M = torch.baddbmm(eye, G, As.expand(B, d, d))
        LU, perm = soa_lu(_soa_dd(M))
        Ns = soa_lu_solve(LU, perm, eye.view(d, d, 1).expand(d, d, B), transpose=True)
        N = _aos_dd(Ns)
        ok = torch.baddbmm(-eye, M.mT, N).abs().amax((-2, -1)) <= residual_tolerance(x.dtype)
        bad = None
        if not bool(ok.all()):
            bad = (~ok).nonzero().squeeze(-1)
            N = N.index_copy(0, bad, torch.linalg.solve(M.index_select(0, bad).mT, eye.expand(bad.numel(), d, d)))
        P = 2 * N - eye
        y = (xd @ P).to(x.dtype)
        ctx.save_for_backward(x, A, xd, G, N, P, As, LU, perm)
        ctx.bad = bad
        return y

    @staticmethod
    def backward(ctx, gy):
        x, A, xd, G, N, P, As, LU, perm = ctx.saved_tensors
        if torch.is_grad_enabled():
            # double backward: through the differentiable float64 Gram form
            def f(a, b):
                return gen.vp_gram_cayley(a.double(), _skew64(b)).to(a.dtype)

            _, pullback = torch.func.vjp(f, x, A)
            return pullback(gy)
        gyd = gy.to(torch.float64)
        gNt = gyd.mT @ xd  # (2 x^T gy)^T / 2
        W = _aos_dd(soa_lu_solve(LU, perm, _soa_dd(gNt), transpose=True))  # M^{-T} gN^T / 2
        if ctx.bad is not None:
            W = W.index_copy(0, ctx.bad, N.index_select(0, ctx.bad) @ gNt.index_select(0, ctx.bad))
        gM = -2 * (W @ N)
        gG = gM @ As.mT
        gA = G @ gM
        if A.dim() == 2:
            finite = _finite_samples(G)
            if not bool(finite.all()):  # a non-finite sample's output is NaN and its own (_qr_for_failed)
                gA = torch.where(finite[:, None, None], gA, torch.zeros((), dtype=gA.dtype, device=gA.device))
            gA = gA.sum(0)
        gx = torch.baddbmm(gyd @ P.mT, xd, gG + gG.mT)
        return gx.to(x.dtype), (0.5 * (gA - gA.mT)).to(A.dtype)


def vp_gram_lu(x: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""The Gram form :math:`y = 2x(I + x^TxA)^{-T} - x` by the structure-of-arrays LU (:func:`lu_reason` is None).

    Parameters
    ----------
    x : Tensor ``(..., T, d)``
    A : Tensor ``(d, d)`` or ``(..., d, d)``, skew, broadcasting against ``x``'s batch

    Returns
    -------
    Tensor of ``x``'s broadcast shape and dtype; computed in float64. Per sample: a residual check with a LAPACK
    solve for the samples that fail it, and the QR form for :math:`\|x\|_F^2\|A\|_F > 10^6` (module docstring).
    """
    T, d = x.shape[-2:]
    batch, xb, Ab = _flat_batch(x, A)
    scale = xb.detach().double().square().sum((-2, -1)) * _skew64(Ab.detach()).norm(dim=(-2, -1))
    big = scale > GRAM_MAX_SCALE
    if not bool(big.any()):
        return _VPGramLU.apply(xb, Ab).reshape(batch + (T, d))
    small = (~big).nonzero().squeeze(-1)
    out = torch.empty(xb.shape, dtype=x.dtype, device=x.device)
    if small.numel():
        out = out.index_put((small,), _VPGramLU.apply(xb[small], Ab if A.dim() == 2 else Ab[small]))
    return _qr_for_failed(out, ~big, xb, Ab, "cayley").reshape(batch + (T, d))
