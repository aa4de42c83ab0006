r"""The operation ``exp_uta_action``: :math:`\exp(\mathrm{uta}(qk^T)^T)\,x`, the orthonormal activation's action,
from the factors ``q``, ``k`` (``T x d`` each) without a ``T x T`` tensor where the native kernel serves.

Routes, in order: ``empty`` (``T = 0`` or ``d = 0``), ``chebyshev-factored/native`` (the Chebyshev action of
:mod:`geoattn.kernels._native_exp_action` with ``S`` formed inside the kernel from ``q`` and ``k``, Note [the
factored Chebyshev action]: CPU, float32 or float64, ``T <= 256``, ``d <= 16``, ``q``, ``k`` and ``x`` of one
shape, not traced, the kernel built; per sample, a degree ``m`` above the limit, ``m d > 32 T`` or a non-finite
bound sends the sample to ``exp_skew`` formed densely), ``formed/eager`` (``S = uta(q k^T)^T`` as a tensor, then
:func:`geoattn.kernels.exp_skew_action` with its own routes).
"""

from __future__ import annotations

import torch

from ..errors import ShapeError
from ._backends import EAGER, NATIVE
from ._checks import check_float, check_same, half_in_float32
from ._functions import _traced, merge_samples
from ._native_exp_action import _uta_t, exp_uta_action_native
from ._op_exp_action import DENSE_RATIO, degree_limit, exp_skew_action, native_reason
from .dispatch import Call, Operation, Route, dispatch, register_operation

__all__ = ["exp_uta_action", "EXP_UTA_ACTION"]


def _bind(q: torch.Tensor, k: torch.Tensor, x: torch.Tensor) -> Call:
    for name, t in (("q", q), ("k", k), ("x", x)):
        check_float(name, t)
        if t.dim() < 2:
            raise ShapeError(f"Expected {name} of shape (..., T, d). Got {tuple(t.shape)}.")
    check_same(("q", q), ("k", k), ("x", x))
    if q.shape != k.shape:
        raise ShapeError(f"Expected q and k of one shape (..., T, r). Got q {tuple(q.shape)} and k {tuple(k.shape)}.")
    if q.shape[:-1] != x.shape[:-1]:
        raise ShapeError(f"Expected q and x with the same batch shape and length T. Got q {tuple(q.shape)} and x "
                         f"{tuple(x.shape)}.")
    return Call(q=q, k=k, x=x, traced=_traced(q) or _traced(k) or _traced(x), device=x.device)


def _empty(c: Call) -> str | None:
    return None if c.x.shape[-2] == 0 or c.x.shape[-1] == 0 else "T > 0 and d > 0"


def _formed(c: Call) -> torch.Tensor:
    return exp_skew_action(_uta_t(c.q, c.k), c.x, check=False)


def _native_when(c: Call) -> str | None:
    if c.traced:
        return "traced (torch.func, torch.compile or meta): the degree depends on the data"
    if c.q.shape[-1] != c.x.shape[-1]:
        return f"q and k of rank {c.q.shape[-1]}, x of {c.x.shape[-1]} columns: the kernel takes one width"
    return native_reason(c.device, c.x.dtype, c.x.shape[-2], c.x.shape[-1])


def _run_native(c: Call) -> torch.Tensor:
    T, d = c.x.shape[-2], c.x.shape[-1]
    q, k, x = (t.reshape(-1, T, d) for t in (c.q, c.k, c.x))
    y, served = exp_uta_action_native(q, k, x, degree_limit(T), dense_ratio=DENSE_RATIO["native"])
    if bool(served.all()):
        return y.reshape(c.x.shape)
    idx, rest = served.nonzero().squeeze(-1), (~served).nonzero().squeeze(-1)
    dense = exp_skew_action(_uta_t(q[rest], k[rest]), x[rest], method="dense", check=False)
    return merge_samples(idx, y, rest, dense).reshape(c.x.shape)


EXP_UTA_ACTION = register_operation(Operation(
    "exp_uta_action",
    _bind,
    (
        Route("empty", EAGER.name, _empty, lambda c: c.x.clone()),
        Route("chebyshev-factored", NATIVE.name, _native_when, _run_native,
              per_sample="S formed in the kernel from q and k; degree from the Bessel tail bound at "
              "rho = (||S^2||_F^2 / 2)^(1/4), each sample run to its own degree; above the degree limit, m d > 32 T "
              "or a non-finite norm: exp_skew formed densely",
              claims=("exp_action.uta_factor_vjp", "exp_action.chebyshev_recurrence",
                      "exp_action.chebyshev_adjoint", "exp_action.truncation_bound",
                      "exp_action.skew_square_norm_bound")),
        Route("formed", EAGER.name, lambda c: None, _formed, claims=("exp.uta_skew",)),
    ),
    claims=("exp.orthogonal",),
    doc="exp(uta(q k^T)^T) x from the factors q, k (T x r) and x (T x d), batched",
))


@half_in_float32
def exp_uta_action(q: torch.Tensor, k: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    r""":math:`\exp(S)\,x` with :math:`S = \mathrm{uta}(qk^T)^T` (skew), without a ``T x T`` tensor where the native
    kernel serves.

    :math:`[\mathrm{uta}(C)]_{ij} = c_{ij}` above the diagonal and :math:`-c_{ji}` below it, so
    :math:`S_{il} = q_l\cdot k_i` for :math:`i > l`, :math:`-q_i\cdot k_l` for :math:`i < l` and 0 on the diagonal
    (ledger ``exp_action.uta_factor_vjp``). The native route forms ``S`` inside its kernel one sample at a time and
    runs the Chebyshev action of :func:`geoattn.kernels.exp_skew_action` on it (Note [the factored Chebyshev
    action] in :mod:`geoattn.kernels._native_exp_action`); the gradients in ``q`` and ``k`` come from the kernel's
    :math:`\partial L/\partial S`. Elsewhere ``S`` is formed and :func:`~geoattn.kernels.exp_skew_action` computes
    the action. A sample's result does not depend on the rest of the batch.
    ``geoattn.kernels.explain("exp_uta_action", q, k, x)`` says which route computes it.

    Parameters
    ----------
    q, k : Tensor ``(..., T, r)``
    x : Tensor ``(..., T, d)``, the same batch shape and ``T``

    Returns
    -------
    Tensor ``(..., T, d)``

    Examples
    --------
    >>> from geoattn.kernels import upper_triangular_asymmetrize
    >>> q, k, x = (torch.randn(4, 6, 3, dtype=torch.float64) for _ in range(3))
    >>> S = upper_triangular_asymmetrize(q @ k.mT).mT
    >>> torch.allclose(exp_uta_action(q, k, x), torch.linalg.matrix_exp(S) @ x)
    True
    """
    return dispatch("exp_uta_action", q, k, x)
