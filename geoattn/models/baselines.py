"""The baselines the structure-preserving integrators are compared with: a standard transformer and a ResNet, each
preserving nothing."""

from __future__ import annotations

import math

import torch
from torch import nn

from .._docstrings import fill_doc
from ..nn import MultiHeadAttention
from ..nn._common import check_positive_int
from ._common import make_activation
from .integrators import Integrator

__all__ = ["StandardTransformerIntegrator", "ResNetIntegrator"]


class _ResidualMLP(nn.Module):
    def __init__(self, dim: int, width: int, activation, **kw) -> None:
        super().__init__()
        self.inner = nn.Linear(dim, width, **kw)
        self.outer = nn.Linear(width, dim, **kw)
        self.activation = make_activation(activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.outer(self.activation(self.inner(x)))


@fill_doc
class StandardTransformerIntegrator(Integrator):
    r"""The unstructured baseline: multi-head attention and residual feed-forward layers.

    .. math::

        x \mapsto W_\downarrow\,(R_L\circ M_L\circ\cdots\circ R_1\circ M_1)(W_\uparrow x + E),

    :math:`W_\uparrow, W_\downarrow` linear maps between ``sys_dim`` and
    ``transformer_dim``, :math:`E` a learned positional embedding (``positional=True``),
    :math:`M_i` a :class:`~geoattn.nn.MultiHeadAttention` with
    ``add_connection=True`` and :math:`R_i` ``n_blocks`` residual layers
    :math:`y \mapsto y + W_2\sigma(W_1y + b_1) + b_2` on every time step.

    What it preserves: nothing — neither volume nor a symplectic structure.

    Parameters
    ----------
    sys_dim, seq_len : int
    transformer_dim : int, optional
        default ``4 * sys_dim`` rounded up to a multiple of ``n_heads``.
    n_heads : int
    depth : int
    n_blocks : int
        residual layers after each attention layer.
    activation : str or nn.Module
    positional : bool
        add a learned positional embedding after the up-projection (without
        one the map is equivariant under permutations of the time steps).
    {{device_dtype}}
    """

    def __init__(self, sys_dim: int, seq_len: int, *, transformer_dim: int | None = None, n_heads: int = 2,
                 depth: int = 2, n_blocks: int = 1, activation="tanh", positional: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.sys_dim = check_positive_int("sys_dim", sys_dim)
        self.seq_len = check_positive_int("seq_len", seq_len)
        self.n_heads = check_positive_int("n_heads", n_heads)
        self.depth = check_positive_int("depth", depth)
        check_positive_int("n_blocks", n_blocks)
        if transformer_dim is None:
            transformer_dim = n_heads * math.ceil(4 * sys_dim / n_heads)
        self.transformer_dim = check_positive_int("transformer_dim", transformer_dim)
        kw = {"device": device, "dtype": dtype}
        self.up = nn.Linear(sys_dim, transformer_dim, **kw)
        self.positional = nn.Parameter(torch.zeros(seq_len, transformer_dim, **kw)) if positional else None
        layers = []
        for _ in range(depth):
            layers.append(MultiHeadAttention(transformer_dim, n_heads, add_connection=True, **kw))
            for _ in range(n_blocks):
                layers.append(_ResidualMLP(transformer_dim, transformer_dim, activation, **kw))
        self.layers = nn.Sequential(*layers)
        self.down = nn.Linear(transformer_dim, sys_dim, **kw)

    def _window_map(self, x: torch.Tensor) -> torch.Tensor:
        y = self.up(x)
        if self.positional is not None:
            y = y + self.positional
        return self.down(self.layers(y))

    def extra_repr(self) -> str:
        return (f"sys_dim={self.sys_dim}, seq_len={self.seq_len}, transformer_dim={self.transformer_dim}, "
                f"n_heads={self.n_heads}, depth={self.depth}, positional={self.positional is not None}")


@fill_doc
class ResNetIntegrator(Integrator):
    r"""A plain residual network on every time step: :math:`z \mapsto z + W_2\sigma(W_1z + b_1) + b_2`, ``depth`` times.

    With ``seq_len=1`` it is a one-step map :math:`z^{(t)} \mapsto z^{(t+1)}`.
    What it preserves: nothing.

    Parameters
    ----------
    sys_dim : int
    seq_len : int
    width : int
    depth : int
    activation : str or nn.Module
    {{device_dtype}}
    """

    _repr_fields = ("sys_dim", "seq_len", "width", "depth")

    def __init__(self, sys_dim: int, seq_len: int = 1, *, width: int = 32, depth: int = 2, activation="tanh",
                 device=None, dtype=None) -> None:
        super().__init__()
        self.sys_dim = check_positive_int("sys_dim", sys_dim)
        self.seq_len = check_positive_int("seq_len", seq_len)
        self.width = check_positive_int("width", width)
        self.depth = check_positive_int("depth", depth)
        kw = {"device": device, "dtype": dtype}
        self.layers = nn.Sequential(*(_ResidualMLP(sys_dim, width, activation, **kw) for _ in range(depth)))

