r"""The operation ``lsa_update``: the linear symplectic attention update, its checks and its route."""

from __future__ import annotations

import torch

from . import _generated as gen
from ._backends import EAGER
from ._checks import check_float, check_matmul, check_same, check_square, half_in_float32
from .dispatch import Call, Operation, Route, dispatch, register_operation

__all__ = ["lsa_update", "LSA_UPDATE"]


def _bind(q: torch.Tensor, A: torch.Tensor) -> Call:
    check_float("q", q)
    check_square("A", A)
    check_same(("q", q), ("A", A))
    check_matmul("A", A, "q", q)
    return Call(q=q, A=A, device=q.device, traced=False)


LSA_UPDATE = register_operation(Operation(
    "lsa_update", _bind,
    (Route("generated", EAGER.name, lambda c: None, lambda c: gen.lsa_update(c.q, c.A), claims=("lsa.gradient",)),),
    claims=("lsa.gradient", "lsa.map_symplectic"),
    doc="(A + A^T)/2 q, the gradient of Tr(Q A Q^T)/2",
))


@half_in_float32
def lsa_update(q: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""The linear symplectic attention update :math:`\bar A q`, :math:`\bar A = \tfrac12(A + A^T)`.

    This is the gradient of :math:`\tfrac12\mathrm{Tr}(QAQ^T)` (ledger ``lsa.gradient``) in the row
    layout ``q = Q^T`` of shape ``(..., T, n)``; ``A`` is ``(T, T)``.
    """
    return dispatch("lsa_update", q, A)
