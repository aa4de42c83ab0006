r"""Volume-preserving feed-forward layers: residual maps with strictly triangular weights."""

from __future__ import annotations

import math
from types import MappingProxyType

import torch
from torch import nn

from .._docstrings import fill_doc
from ..nn._common import NOTHING_PRESERVED as _NOTHING
from ..nn._common import check_positive_int, factory
from ._common import Chain, check_nonnegative_int, check_state, make_activation

__all__ = ["TriangularResidual", "VolumePreservingFeedForward"]


@fill_doc
class TriangularResidual(nn.Module):
    r"""The residual map :math:`x \mapsto x + \sigma(Lx + b)` with :math:`L` strictly triangular.

    .. math::

        \frac{\partial}{\partial x}\bigl(x + \sigma(Lx + b)\bigr)
        = I + \mathrm{diag}\bigl(\sigma'(Lx + b)\bigr)\,L,

    a unit triangular matrix, so the determinant is 1 at every :math:`x`
    whatever :math:`\sigma` is: the map is volume-preserving. Without an
    activation (``activation=None``) it is the linear map :math:`(I + L)x (+ b)`.

    Parameters
    ----------
    sys_dim : int
    lower : bool
        :math:`L` strictly lower (``True``) or strictly upper (``False``) triangular.
    activation : str, nn.Module or None
    bias : bool
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import jacobian_determinant
    >>> layer = TriangularResidual(3, lower=True, activation="tanh")
    >>> jacobian_determinant(layer, torch.randn(4, 3)).sub(1).abs().max() < 1e-14
    tensor(True)
    """

    #: what the map preserves: property -> ledger ids (see :func:`geoattn.testing.assert_preserves`)
    preserves = MappingProxyType({"volume": ("models.triangular_residual_det_one",)})
    does_not_preserve = _NOTHING

    def __init__(self, sys_dim: int, *, lower: bool = True, activation="tanh", bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.sys_dim = check_positive_int("sys_dim", sys_dim)
        self.lower = bool(lower)
        self.activation = None if activation is None else make_activation(activation)
        self.weight = nn.Parameter(torch.empty(sys_dim, sys_dim, **kw))
        self.bias = nn.Parameter(torch.empty(sys_dim, **kw)) if bias else None
        mask = torch.ones(sys_dim, sys_dim, dtype=torch.bool, device=device)
        self.register_buffer("mask", mask.tril(-1) if self.lower else mask.triu(1), persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform in :math:`\\pm 1/\\sqrt{\\mathrm{sys\\_dim}}`; bias zero."""
        bound = 1.0 / math.sqrt(self.sys_dim)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.zero_()

    def triangular_weight(self) -> torch.Tensor:
        """:math:`L`, the weight with its diagonal and the other triangle zeroed."""
        return self.weight * self.mask

    def free_parameters(self) -> int:
        """Entries the map uses: the strict triangle of the weight (the rest is stored but masked) and the bias."""
        d = self.sys_dim
        return d * (d - 1) // 2 + (d if self.bias is not None else 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_state(self, x, self.sys_dim, self.weight.dtype)
        y = x @ self.triangular_weight().mT
        if self.bias is not None:
            y = y + self.bias
        if self.activation is not None:
            y = self.activation(y)
        return x + y

    def extra_repr(self) -> str:
        act = None if self.activation is None else type(self.activation).__name__
        return f"sys_dim={self.sys_dim}, lower={self.lower}, activation={act}, bias={self.bias is not None}"


@fill_doc
class VolumePreservingFeedForward(Chain):
    r"""A chain of :class:`TriangularResidual` layers alternating lower and upper, applied to every time step.

    Each of the ``n_blocks`` blocks is ``n_linear`` pairs of linear layers
    :math:`x \mapsto (I + L)x` (lower, then upper; the last upper one with a
    bias) followed by a nonlinear pair :math:`x \mapsto x + \sigma(Lx + b)`
    (lower, then upper); one more linear pair (its upper layer with a bias)
    closes the chain, so that it can end on an affine map. With
    :math:`d` = ``sys_dim`` that is
    :math:`n_\mathrm{blocks}\,(n_\mathrm{linear}\,d(d-1) + d(d+1) + d\,[n_\mathrm{linear} > 0]) + d(d-1) + d`
    free parameters (135 for :math:`d = 3`, six blocks and one linear pair,
    the size of the volume-preserving transformer paper's baseline). Every
    factor has a unit triangular Jacobian, so the whole map has
    :math:`\det J = 1` at every input: it is volume-preserving, on one state
    and on a sequence of states.

    It is not symplectic in general (a triangular shear with
    :math:`\sigma'L` not symmetric is not).

    Parameters
    ----------
    sys_dim : int
    n_blocks : int
    n_linear : int
        linear pairs per block (0 allowed).
    activation : str or nn.Module
        :math:`\sigma` of the nonlinear pairs (a name in :data:`ACTIVATIONS` or a module).
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import assert_volume_preserving
    >>> ff = VolumePreservingFeedForward(3, n_blocks=2)
    >>> assert_volume_preserving(ff, torch.randn(4, 5, 3))
    """

    #: what the map preserves: property -> ledger ids (see :func:`geoattn.testing.assert_preserves`)
    preserves = MappingProxyType({"volume": ("models.triangular_residual_det_one",)})
    does_not_preserve = _NOTHING

    def __init__(self, sys_dim: int, *, n_blocks: int = 1, n_linear: int = 1, activation="tanh",
                 device=None, dtype=None) -> None:
        super().__init__()
        self.sys_dim = check_positive_int("sys_dim", sys_dim)
        self.n_blocks = check_positive_int("n_blocks", n_blocks)
        self.n_linear = check_nonnegative_int("n_linear", n_linear)
        kw = {"device": device, "dtype": dtype}
        layers = []
        def linear_pair(bias: bool) -> list:
            return [TriangularResidual(sys_dim, lower=True, activation=None, bias=False, **kw),
                    TriangularResidual(sys_dim, lower=False, activation=None, bias=bias, **kw)]

        for _ in range(n_blocks):
            for i in range(n_linear):
                layers += linear_pair(bias=i == n_linear - 1)
            layers.append(TriangularResidual(sys_dim, lower=True, activation=activation, **kw))
            layers.append(TriangularResidual(sys_dim, lower=False, activation=activation, **kw))
        layers += linear_pair(bias=True)
        self.layers = nn.Sequential(*layers)

    def extra_repr(self) -> str:
        return f"sys_dim={self.sys_dim}, n_blocks={self.n_blocks}, n_linear={self.n_linear}"
