"""Activations by name, input checks and the layer-chain base shared by :mod:`geoattn.models`."""

from __future__ import annotations

import numbers

import torch
from torch import nn

from ..nn._common import LayerDtypeError, LayerShapeError

__all__ = ["make_activation", "ACTIVATIONS", "check_state", "check_nonnegative_int", "check_even_sys_dim", "Chain"]

#: activation names accepted by :func:`make_activation`
ACTIVATIONS = {
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "softplus": nn.Softplus,
    "identity": nn.Identity,
}


def make_activation(activation) -> nn.Module:
    """An activation module from a name in :data:`ACTIVATIONS` or an ``nn.Module``."""
    if isinstance(activation, nn.Module):
        return activation
    if isinstance(activation, str) and activation in ACTIVATIONS:
        return ACTIVATIONS[activation]()
    raise LayerShapeError(
        f"Expected activation to be an nn.Module or one of {sorted(ACTIVATIONS)}. Got {activation!r}."
    )


def check_nonnegative_int(name: str, value) -> int:
    """``value`` as an int if it is an integer >= 0 (numpy integers included), else :class:`~geoattn.nn.LayerShapeError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise LayerShapeError(f"Expected {name} to be a non-negative int. Got {value!r}.")
    return int(value)


def check_even_sys_dim(sys_dim: int) -> int:
    """``sys_dim`` if it is even (a phase space ``(q, p)``), else :class:`~geoattn.nn.LayerShapeError`."""
    if sys_dim % 2:
        raise LayerShapeError(f"Expected an even sys_dim 2n = (q, p). Got {sys_dim}.")
    return sys_dim


def check_state(module: nn.Module, x, sys_dim: int, dtype: torch.dtype) -> None:
    """Check a ``(..., sys_dim)`` input of ``module``: a tensor of the parameters' dtype with ``sys_dim`` features."""
    kind = type(module).__name__
    if not isinstance(x, torch.Tensor):
        raise LayerDtypeError(f"{kind}: expected a torch.Tensor. Got {type(x).__name__}.")
    if x.dtype != dtype:
        raise LayerDtypeError(f"{kind}: expected an input of the parameters' dtype {dtype}. Got {x.dtype}.")
    if x.dim() < 1 or x.shape[-1] != sys_dim:
        raise LayerShapeError(f"{kind}: expected {sys_dim} features in the last dimension. Got shape {tuple(x.shape)}.")


class Chain(nn.Module):
    """A composition of layers held in ``self.layers`` (an ``nn.Sequential``), applied to every time step.

    A per-step map of a sequence ``(T, dim)`` is the direct product of
    :math:`T` copies of the map of one state, so its Jacobian is block
    diagonal and every property of the one-state map (determinant 1,
    symplecticity) holds for the sequence with the product structure.
    """

    layers: nn.Sequential

    def reset_parameters(self) -> None:
        """Reset every layer."""
        for layer in self.layers:
            layer.reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)
