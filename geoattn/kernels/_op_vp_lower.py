r"""The operation ``vp_attention_lower``: volume-preserving attention with the arbitrary weighting.

The layer output in the row layout is :math:`y = \mathrm{Cayley}(C)^Tx = 2(I - C)^{-1}x - x`,
:math:`C = \mathrm{skew\_from\_lower}(xAx^T)/\sqrt d`, for ``x`` of shape ``(..., T, d)`` and an arbitrary ``d x d``
matrix ``A`` (ledger ``cayley.apply_form``). Routes, in order:

1. ``semisep/eager``: the nested block solve of :mod:`geoattn.kernels._semisep` (Note [nested block solve of I minus
   a lower-assigned skew matrix]; ``vp_lower.offdiag_blocks``, ``vp_lower.merge``), :math:`O(T)` per sample, in
   float64, when ``d < T`` and ``T >= SEMISEP_MIN_T`` (below it the ``T x T`` solve is as fast; measured by
   ``benchmarks/vp_lower.py``);
2. ``full/eager``: the ``T x T`` correlation and the ``cayley_apply`` operation (:math:`O(T^3)`).
"""

from __future__ import annotations

import math

import torch

from ..errors import OptionError
from . import _generated as gen
from ._backends import EAGER
from ._checks import check_tokens_and_weighting, half_in_float32
from ._functions import _traced
from ._op_cayley import cayley_apply
from ._semisep import vp_arbitrary_linear
from .dispatch import Call, Operation, Route, dispatch, register_operation

__all__ = ["vp_attention_lower", "VP_ATTENTION_LOWER", "SEMISEP_MIN_T"]

#: the shortest sequence the nested block solve takes: forward+backward, float32, one thread, B * T = 8192, d = 4, 8,
#: 16, it took 0.5-1.0x the time of the T x T solve at T = 128 and 0.8-1.9x at T = 96 (1.2-1.4x at T = 64)
SEMISEP_MIN_T = 128

_METHODS = ("auto", "semisep", "full")


def _bind(x: torch.Tensor, A: torch.Tensor, *, method: str = "auto") -> Call:
    check_tokens_and_weighting(x, A)
    if method not in _METHODS:
        raise OptionError(f"Expected method in {_METHODS}. Got {method!r}.")
    return Call(x=x, A=A, method=method, T=x.shape[-2], d=x.shape[-1], dtype=x.dtype, device=x.device,
                traced=_traced(x) or _traced(A))


def _semisep_when(c: Call) -> str | None:
    if c.method == "full":
        return "method 'full' requested"
    if c.device.type == "mps":
        return "device mps: the nested block solve runs in float64, which MPS lacks"
    if c.A.dim() != 2:
        return f"A batched (shape {tuple(c.A.shape)}): the nested block solve takes one (d, d) weighting"
    if c.method == "semisep":
        return None
    if c.d >= c.T:
        return f"d={c.d} >= T={c.T}: the T x T solve is as cheap"
    if c.T < SEMISEP_MIN_T:
        return f"T={c.T} < {SEMISEP_MIN_T}: the T x T solve is as fast"
    return None


def _run_full(c: Call) -> torch.Tensor:
    C = gen.vp_correlation_lower(c.x, c.A) / math.sqrt(c.d)
    return cayley_apply(C, c.x, check=False)


VP_ATTENTION_LOWER = register_operation(Operation(
    "vp_attention_lower",
    _bind,
    (
        Route("semisep", EAGER.name, _semisep_when, lambda c: vp_arbitrary_linear(c.x, c.A),
              claims=("vp_lower.offdiag_blocks", "vp_lower.merge", "cayley.apply_form")),
        Route("full", EAGER.name, lambda c: "method 'semisep' requested" if c.method == "semisep" else None,
              _run_full, per_sample="skew samples of norm above 8 T take the polished matrix (cayley_apply)",
              claims=("vp.lower_assign_skew", "cayley.apply_form", "cayley.polish")),
    ),
    claims=("vp.lower_assign_skew", "cayley.apply_form"),
    doc="Cayley(skew_from_lower(x A x^T)/sqrt(d))^T x for an arbitrary A",
))


@half_in_float32
def vp_attention_lower(x: torch.Tensor, A: torch.Tensor, *, method: str = "auto") -> torch.Tensor:
    r"""Volume-preserving attention with the arbitrary weighting: :math:`\mathrm{Cayley}(C)^Tx`,
    :math:`C = \mathrm{skew\_from\_lower}(xAx^T)/\sqrt d`.

    Parameters
    ----------
    x : Tensor ``(..., T, d)``
    A : Tensor ``(d, d)``, any matrix of ``x``'s dtype and device
    method : ``"auto"``, ``"semisep"`` or ``"full"``
        ``"semisep"``: the nested block solve in :math:`O(T)` (float64 inside, leaves of
        :data:`geoattn.kernels._semisep.LEAF` rows); ``"full"``: the ``T x T`` solve; ``"auto"``: ``"semisep"``
        when ``d < T`` and ``T >= SEMISEP_MIN_T``.

    Returns
    -------
    Tensor ``(..., T, d)`` of ``x``'s dtype

    Notes
    -----
    ``geoattn.kernels.explain("vp_attention_lower", x, A)`` says which route computes it.

    Examples
    --------
    >>> x = torch.randn(2, 256, 4, dtype=torch.float64)
    >>> A = torch.randn(4, 4, dtype=torch.float64)
    >>> y = vp_attention_lower(x, A)
    >>> torch.allclose(y.norm(dim=-2), x.norm(dim=-2))  # Cayley(C) is orthogonal
    True
    """
    return dispatch("vp_attention_lower", x, A, method=method)

