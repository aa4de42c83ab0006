"""Activations by name and small shared helpers of :mod:`geoattn.models`."""

from __future__ import annotations

import torch
from torch import nn

from ..nn import LayerShapeError

__all__ = ["make_activation", "ACTIVATIONS", "PerStep"]

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


class PerStep(nn.Module):
    """Marker base: a module that acts on every time step of a sequence independently.

    Its map of a sequence ``(T, dim)`` is the direct product of :math:`T`
    copies of its map of one state, so its Jacobian is block diagonal and
    every property of the one-state map (determinant 1, symplecticity) holds
    for the sequence with the product structure.
    """


def check_state(module: nn.Module, x, sys_dim: int, dtype: torch.dtype) -> None:
    kind = type(module).__name__
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{kind}: expected a torch.Tensor. Got {type(x).__name__}.")
    if not x.is_floating_point() or x.dtype != dtype:
        raise TypeError(f"{kind}: expected an input of the parameters' dtype {dtype}. Got {x.dtype}.")
    if x.dim() < 1 or x.shape[-1] != sys_dim:
        raise LayerShapeError(f"{kind}: expected {sys_dim} features in the last dimension. Got shape {tuple(x.shape)}.")
