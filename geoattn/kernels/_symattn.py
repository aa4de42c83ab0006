r"""Nonlinear symplectic attention: the update :math:`\nabla\Sigma` with its generated backward, and the potential.

Note [symplectic attention backward]
------------------------------------
The update is :math:`U = Gz A^T + G^T z A` with :math:`G` the softmax of :math:`C = zAz^T`. Autograd through
that composition saves the softmax and its exponentials and recomputes products per term; the generated
VJP (ledger ``symattn.layer_vjp``) needs only ``z``, ``A`` and the saved ``G``: with
:math:`\dot C = VAz^T + zAV^T` and :math:`K = \mathrm{D}G[\dot C]` (one elementwise pass),
:math:`\bar z = KzA^T + K^TzA + GVA^T + G^TVA` and :math:`\bar A = z^TKz + V^TGz + z^TGV`. The
backward runs when no graph of it is wanted; with ``create_graph=True`` (second derivatives, e.g. a loss on
the gradient) the backward is the VJP of the generated forward instead, differentiable again.
"""

from __future__ import annotations

import torch

from . import _generated as gen
from ._functions import _under_functorch
from ._gram import _dual
from ._lowrank import _sum_to

__all__ = ["SYMATTN_ACTIVATIONS", "symattn_forward", "symattn_potential_value"]

#: activation -> (normalised over, one softmax): a table printed by ``geoattn codegen`` from
#: :data:`geoattn.symbolic.symattn.ACTIVATIONS`
SYMATTN_ACTIVATIONS: dict[str, tuple[str, bool]] = dict(gen.SYMATTN_ACTIVATIONS)

_FORWARD = {name: getattr(gen, f"symattn_update_{name}") for name in SYMATTN_ACTIVATIONS}
_VJP = {"all": gen.symattn_vjp_all, "columns": gen.symattn_vjp_columns}


class _SymattnUpdate(torch.autograd.Function):
    """See Note [symplectic attention backward]."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
        U, G = _FORWARD[activation](z, A)
        ctx.save_for_backward(z, A, G)
        ctx.over = SYMATTN_ACTIVATIONS[activation][0]
        ctx.activation = activation
        return U

    @staticmethod
    def backward(ctx, gU: torch.Tensor):
        z, A, G = ctx.saved_tensors
        if torch.is_grad_enabled():
            # a graph of the backward is wanted (create_graph=True): the VJP of the generated forward, built
            # from differentiable operations (G is recomputed from z and A)
            _, pullback = torch.func.vjp(lambda a, b: _FORWARD[ctx.activation](a, b)[0], z, A)
            gz, gA = pullback(gU)
            return gz, gA, None
        gz, gA = _VJP[ctx.over](z, A, gU, G)
        return _sum_to(gz, z.shape), _sum_to(gA, A.shape), None


def symattn_forward(z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
    """The update through the custom backward (arguments already checked); under a functorch transform
    (``vmap``, ``jacrev``, ...) the generated forward is differentiated by autograd instead."""
    if _under_functorch(z) or _under_functorch(A) or _dual(z) or _dual(A):  # no jvp of the custom backward
        return _FORWARD[activation](z, A)[0]
    return _SymattnUpdate.apply(z, A, activation)


def symattn_potential_value(z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
    r"""The potential :math:`\Sigma(z)` per sequence, ``(...,)``, written directly in torch (stable log-sum-exp)."""
    over, one = SYMATTN_ACTIVATIONS[activation]
    C = (z @ A) @ z.mT
    if over == "all":
        flat = C.flatten(-2)
        if one:  # the extra 1 is a zero logit
            flat = torch.nn.functional.pad(flat, (0, 1))
        return torch.logsumexp(flat, dim=-1)
    if one:
        C = torch.nn.functional.pad(C, (0, 0, 0, 1))
    return torch.logsumexp(C, dim=-2).sum(-1)
