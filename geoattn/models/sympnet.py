r"""SympNet gradient layers: symplectic shears :math:`p \mapsto p + \nabla V(q)` and their twins."""

from __future__ import annotations

import math
from types import MappingProxyType

import torch
from torch import nn

from .._docstrings import fill_doc
from ..errors import OptionError
from ..nn._common import NOTHING_PRESERVED as _NOTHING
from ..nn._common import check_positive_int, factory
from ._common import Chain, check_even_sys_dim, check_state, make_activation

__all__ = ["GradientLayer", "SympNet"]


@fill_doc
class GradientLayer(nn.Module):
    r"""A gradient shear of phase space, applied to every time step.

    For a state :math:`(q, p) \in \mathbb{R}^{2n}`, with
    :math:`K \in \mathbb{R}^{m\times n}`, :math:`a, b \in \mathbb{R}^m` and
    :math:`V(q) = a^T\Sigma(Kq + b)`, :math:`\Sigma' = \sigma` entrywise:

    .. math::

        \texttt{update="p"}:\ (q, p) \mapsto \bigl(q,\ p + K^T(a \odot \sigma(Kq + b))\bigr),\qquad
        \texttt{update="q"}:\ (q, p) \mapsto \bigl(q + K^T(a \odot \sigma(Kp + b)),\ p\bigr).

    The increment is :math:`\nabla V`, whose Jacobian
    :math:`K^T\mathrm{diag}(a\odot\sigma')K` is symmetric, so the Jacobian of
    the layer, :math:`\begin{pmatrix} I & 0\\ S & I\end{pmatrix}` with
    :math:`S = S^T`, satisfies :math:`J^T\mathbb{J}J = \mathbb{J}`: the map is
    symplectic (and so volume-preserving) at every input.

    Parameters
    ----------
    sys_dim : int
        :math:`2n`, even; the first :math:`n` features are :math:`q`.
    upscaling_dim : int
        :math:`m`.
    update : ``"p"`` or ``"q"``
    activation : str or nn.Module
        :math:`\sigma` (a name in :data:`ACTIVATIONS` or a module).
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import assert_symplectic
    >>> assert_symplectic(GradientLayer(4, 8), torch.randn(3, 2, 4))
    """

    #: what the map preserves: property -> ledger ids (see :func:`geoattn.testing.assert_preserves`)
    preserves = MappingProxyType({"symplectic": ("models.gradient_layer_symplectic",)})
    does_not_preserve = _NOTHING

    def __init__(self, sys_dim: int, upscaling_dim: int, *, update: str = "p", activation="tanh",
                 device=None, dtype=None) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.sys_dim = check_even_sys_dim(check_positive_int("sys_dim", sys_dim))
        self.upscaling_dim = check_positive_int("upscaling_dim", upscaling_dim)
        if update not in ("p", "q"):
            raise OptionError(f"Expected update to be 'p' or 'q'. Got {update!r}.")
        self.update = update
        self.activation = make_activation(activation)
        n = sys_dim // 2
        self.weight = nn.Parameter(torch.empty(upscaling_dim, n, **kw))
        self.bias = nn.Parameter(torch.empty(upscaling_dim, **kw))
        self.scale = nn.Parameter(torch.empty(upscaling_dim, **kw))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """:math:`K` uniform in :math:`\\pm 1/\\sqrt{n}`, :math:`a` uniform in :math:`\\pm 1/\\sqrt{m}`, :math:`b = 0`."""
        with torch.no_grad():
            self.weight.uniform_(-1 / math.sqrt(self.sys_dim // 2), 1 / math.sqrt(self.sys_dim // 2))
            self.scale.uniform_(-1 / math.sqrt(self.upscaling_dim), 1 / math.sqrt(self.upscaling_dim))
            self.bias.zero_()

    def potential_gradient(self, q: torch.Tensor) -> torch.Tensor:
        r""":math:`\nabla V(q) = K^T(a\odot\sigma(Kq + b))`, batched over leading dimensions."""
        return (self.scale * self.activation(q @ self.weight.mT + self.bias)) @ self.weight

    def _shear(self, x: torch.Tensor, sign: float) -> torch.Tensor:
        check_state(self, x, self.sys_dim, self.weight.dtype)
        n = self.sys_dim // 2
        q, p = x[..., :n], x[..., n:]
        if self.update == "p":
            return torch.cat([q, p + sign * self.potential_gradient(q)], dim=-1)
        return torch.cat([q + sign * self.potential_gradient(p), p], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._shear(x, 1.0)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        r"""The inverse shear :math:`(q, p) \mapsto (q, p - \nabla V(q))` (``update="p"``), exact up to rounding."""
        return self._shear(y, -1.0)

    def extra_repr(self) -> str:
        return f"sys_dim={self.sys_dim}, upscaling_dim={self.upscaling_dim}, update={self.update!r}"


@fill_doc
class SympNet(Chain):
    r"""A gradient-module SympNet: ``n_layers`` pairs of :class:`GradientLayer` (``q`` then ``p``).

    A composition of symplectic maps, so symplectic at every input; it maps
    one state to the next and, applied to a sequence, acts on every time step.

    Parameters
    ----------
    sys_dim : int
        even.
    n_layers : int
    upscaling_dim : int
    activation : str or nn.Module
        :math:`\sigma` of every gradient layer (a name in :data:`ACTIVATIONS` or a module).
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import assert_symplectic
    >>> assert_symplectic(SympNet(4, n_layers=2, upscaling_dim=8), torch.randn(3, 1, 4))
    """

    #: what the map preserves: property -> ledger ids (see :func:`geoattn.testing.assert_preserves`)
    preserves = MappingProxyType({"symplectic": ("models.gradient_layer_symplectic",)})
    does_not_preserve = _NOTHING

    def __init__(self, sys_dim: int, *, n_layers: int = 2, upscaling_dim: int | None = None, activation="tanh",
                 device=None, dtype=None) -> None:
        super().__init__()
        self.sys_dim = check_even_sys_dim(check_positive_int("sys_dim", sys_dim))
        self.n_layers = check_positive_int("n_layers", n_layers)
        m = 2 * sys_dim if upscaling_dim is None else upscaling_dim
        kw = {"device": device, "dtype": dtype, "activation": activation}
        layers = []
        for _ in range(n_layers):
            layers.append(GradientLayer(sys_dim, m, update="q", **kw))
            layers.append(GradientLayer(sys_dim, m, update="p", **kw))
        self.layers = nn.Sequential(*layers)

    def extra_repr(self) -> str:
        return f"sys_dim={self.sys_dim}, n_layers={self.n_layers}"
