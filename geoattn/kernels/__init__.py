r"""Batched torch kernels generated from the verified SymPy expressions.

The numerical work lives in :mod:`geoattn.kernels._generated`, which
``geoattn codegen`` prints from :mod:`geoattn.symbolic.expressions`; this
module adds argument checks, the dtype policy and the custom backward passes.
It never imports SymPy.

All kernels are batched over leading dimensions. float32 and float64 run
natively; float16 and bfloat16 inputs are computed in float32 and cast back.
Sequences use the row layout of the layers: ``x`` is ``(..., T, d)``, the
transpose of the seeds' ``Z`` (``d x T``).

How each call is computed is read in one table per operation
(:mod:`geoattn.kernels.dispatch`): :func:`explain` returns the route a call takes
and why every other route did not serve, :func:`route_table` prints the routes,
and ``with backend("eager"):`` forces a backend. The operations' modules
(``_op_vp``, ``_op_vp_lower``, ``_op_cayley``, ``_op_exp``) hold their checks and routes; the
autograd Functions and their Notes live in :mod:`geoattn.kernels._functions`, :mod:`geoattn.kernels._exp`,
:mod:`geoattn.kernels._lowrank` and :mod:`geoattn.kernels._gram`.
"""

from __future__ import annotations

import torch

from . import _generated as gen
from ._checks import (
    KernelDtypeError,
    KernelShapeError,
    check_float,
    check_matmul,
    check_same,
    check_square,
    half_in_float32,
)
from ._lowrank import ACTIVATIONS as _VP_ACTIVATIONS
from ._native import native_status
from ._triton import triton_status
# The operations: each module holds its checks, its routes (the dispatch table) and its public function.
from ._op_cayley import cayley, cayley_apply
from ._op_exp import exp_skew
from ._op_exp_action import exp_skew_action
from ._op_uta_action import exp_uta_action
from ._op_vp import vp_attention
from ._op_vp_lower import vp_attention_lower
from ._op_lsa import lsa_update
from ._op_symattn import symattn_potential, symattn_shear, symattn_update
from ._symattn import SYMATTN_ACTIVATIONS
from .dispatch import BACKENDS, OPERATIONS, backend, explain, route_table

#: the activations of :func:`vp_attention` (and of :class:`geoattn.nn.VolumePreservingAttention`)
VP_ACTIVATIONS = _VP_ACTIVATIONS

__all__ = [
    "VP_ACTIVATIONS",
    "SYMATTN_ACTIVATIONS",
    "KernelShapeError",
    "KernelDtypeError",
    "cayley",
    "cayley_apply",
    "skew_from_lower",
    "upper_triangular_asymmetrize",
    "vp_correlation",
    "vp_correlation_lower",
    "exp_skew",
    "exp_skew_action",
    "exp_uta_action",
    "lsa_update",
    "symattn_update",
    "symattn_shear",
    "symattn_potential",
    "lift",
    "vp_attention",
    "vp_attention_lower",
    "native_status",
    "triton_status",
    "explain",
    "backend",
    "route_table",
    "OPERATIONS",
    "BACKENDS",
]


@half_in_float32
def skew_from_lower(C: torch.Tensor) -> torch.Tensor:
    """Copy the strict lower triangle of ``C`` to the upper one, negated (zero diagonal)."""
    check_square("C", C)
    return gen.skew_from_lower(C)


@half_in_float32
def upper_triangular_asymmetrize(C: torch.Tensor) -> torch.Tensor:
    r"""``[uta(C)]_ij = c_ij (i < j), -c_ji (i > j), 0 (i = j)`` (seed 003)."""
    check_square("C", C)
    return gen.upper_triangular_asymmetrize(C)


def _check_correlation(x: torch.Tensor, A: torch.Tensor) -> None:
    check_float("x", x)
    check_square("A", A)
    check_same(("x", x), ("A", A))
    check_matmul("x", x, "A", A)


@half_in_float32
def vp_correlation(x: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""Correlations :math:`Z^TAZ` in the row layout: ``x @ A @ x.mT`` for ``x`` of shape ``(..., T, d)``."""
    _check_correlation(x, A)
    return gen.vp_correlation(x, A)


@half_in_float32
def vp_correlation_lower(x: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""``skew_from_lower(x @ A @ x.mT)``: the arbitrary weighting of volume-preserving attention.

    The full product is formed, then masked.
    """
    _check_correlation(x, A)
    return gen.vp_correlation_lower(x, A)


def lift(Lam: torch.Tensor, d: int) -> torch.Tensor:
    r"""The matrix :math:`\tilde\Lambda = I_d \otimes \Lambda^T` with
    :math:`\mathrm{vec}_r(Z\Lambda) = \tilde\Lambda\,\mathrm{vec}_r(Z)` (analysis and tests only;
    layers never build it)."""
    check_square("Lam", Lam)
    if not isinstance(d, int) or d < 1:
        raise ValueError(f"Expected d to be a positive int. Got {d!r}.")
    return gen.lift(Lam, d)
