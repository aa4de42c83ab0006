r"""The ``dense`` route of symplectic attention: short sequences, a symmetric ``A``, the softmaxes over all entries,
with the ``T x T`` softmax of each sample formed and kept.

Note [dense symplectic attention]
---------------------------------
With :math:`A = A^T` the softmax :math:`G` over all entries of :math:`C = az^T`, :math:`a = zA`, is symmetric and
the update is :math:`U = 2Ga` (ledger ``symattn.sdpa_form``'s premise, Note [symplectic attention through SDPA]).
For short sequences the fused attention kernel's blocking costs more than the ``T x T`` matrices themselves, so
this route forms them: one product for :math:`C`, one softmax over each sample's :math:`T^2` entries (written
over :math:`C`), one product for :math:`Ga`; :math:`G` is kept for the backward. The backward (ledger
``symattn.dense_vjp``) is the chain rule of that form: with :math:`\bar G' = Va^T` (half the gradient of
:math:`G`),

.. math::

    \bar C' = G\odot\bar G' - \langle G, \bar G'\rangle\,G,\qquad h = GV + \bar C'z,\qquad
    \bar z = 2(\bar C'^Ta + hA),\qquad \bar A = z^Th + h^Tz,

the softmax's backward being the same for the one softmax (its extra zero logit has no gradient). :math:`\bar
A` is the symmetric part of the one-product form's gradient, which is the update's gradient at a symmetric
:math:`A` (``symattn.transpose_invariant``). Per sample: two products in the forward, four in the backward, and
one elementwise pass over the ``T x T`` matrices each way.

The route serves CPU float32 and float64 with one symmetric weighting and :math:`T \le` :data:`DENSE_MAX_T`
(measured: one thread, ``B T = 65,536``, float32), outside functorch transforms and ``torch.compile``; a graph of
the backward (``create_graph=True``) is the VJP of the generated forward, as on the other routes. Each sample's
numbers are its own: no result depends on the other samples of the batch.
"""

from __future__ import annotations

import torch

from . import _generated as gen
from ._functions import _under_functorch
from ._symattn import SYMATTN_ACTIVATIONS
from ._symattn_fused import _softmax_rows_

__all__ = ["symattn_dense", "dense_reason", "DENSE_MAX_T"]

#: the longest sequence the route serves; above it the ``sdpa`` route's blocks cost less than ``B T^2`` entries
DENSE_MAX_T = 32


def dense_reason(z: torch.Tensor, A: torch.Tensor, activation: str) -> str | None:
    """None when the ``dense`` route serves the (checked) arguments, else why not."""
    if z.device.type != "cpu":
        return f"device {z.device.type}: the route keeps B T^2 entries, sized for the CPU"
    if SYMATTN_ACTIVATIONS[activation][0] != "all":
        return f"activation {activation!r}: the route's G is symmetric only over all entries"
    if z.shape[-2] > DENSE_MAX_T:
        return f"T = {z.shape[-2]} > {DENSE_MAX_T}: the route keeps B T^2 entries; the sdpa route is faster there"
    if z.dtype not in (torch.float32, torch.float64):
        return f"{z.dtype}: the route takes float32 and float64"
    if A.dim() != 2:
        return f"A batched (shape {tuple(A.shape)}): the route takes one (n, n) weighting"
    if not torch.equal(A, A.mT):
        return "A is not symmetric: the update is G z A^T + G^T z A, not 2 G z A"
    return None


class _DenseUpdate(torch.autograd.Function):
    """See Note [dense symplectic attention]."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
        shape = z.shape
        T, n = shape[-2:]
        zb = z.reshape(-1, T, n)
        a = zb @ A
        G = torch.bmm(a, zb.mT)
        _softmax_rows_(G, True, SYMATTN_ACTIVATIONS[activation][1])
        U = torch.bmm(G, a).mul_(2)
        ctx.save_for_backward(z, A, G)
        ctx.activation = activation
        return U.view(shape)

    @staticmethod
    def backward(ctx, gU: torch.Tensor):
        z, A, G = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(gU):
            forward = getattr(gen, f"symattn_update_{ctx.activation}")
            _, pullback = torch.func.vjp(lambda u, v: forward(u, v)[0], z, A)
            gz, gA = pullback(gU)
            return gz, gA, None
        shape = z.shape
        T, n = shape[-2:]
        zb, V = z.reshape(-1, T, n), gU.reshape(-1, T, n)
        a = zb @ A
        gC = torch.bmm(V, a.mT)
        B = gC.shape[0]
        flat, Gf = gC.view(B, -1), G.view(B, -1)
        torch.ops.aten._softmax_backward_data.out(flat, Gf, -1, G.dtype, grad_input=flat)
        h = torch.baddbmm(torch.bmm(G, V), gC, zb)
        gz = torch.baddbmm(h @ A, gC.mT, a).mul_(2)
        zf, hf = zb.reshape(-1, n), h.reshape(-1, n)
        gA = zf.mT @ hf
        return gz.view(shape), gA + gA.mT, None


def symattn_dense(z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
    """The update through the ``dense`` route (arguments checked, :func:`dense_reason` None)."""
    return _DenseUpdate.apply(z, A, activation)
