r"""The symplectic transformer: nonlinear symplectic attention and SympNet gradient layers."""

from __future__ import annotations

from types import MappingProxyType

import torch

from .._docstrings import fill_doc
from ..nn import SymplecticAttention
from .integrators import Integrator, set_block_sizes, symplectic_blocks

__all__ = ["SymplecticTransformer"]


@fill_doc
class SymplecticTransformer(Integrator):
    r"""Symplectic attention (:class:`~geoattn.nn.SymplecticAttention`) and SympNet gradient layers.

    Each of the ``depth`` blocks is a symplectic attention layer updating :math:`q` from :math:`p`,
    ``n_sympnet`` :class:`~geoattn.models.GradientLayer` layers (alternating ``q``, ``p``), a symplectic
    attention layer updating :math:`p` from :math:`q` and ``n_sympnet`` more, in the order of
    :class:`LinearSymplecticTransformer`. The attention layers couple the time steps of the window
    nonlinearly (through the softmax of :math:`C = zAz^T`), where the linear symplectic transformer
    couples them with a fixed :math:`T\times T` matrix.

    What the whole map preserves: every factor is a shear by the gradient of a scalar potential
    (``symattn.layer_symplectic``, ``models.gradient_layer_symplectic``), so the window map is symplectic
    for the product structure of the sequence, hence volume-preserving. It is not orthogonal.

    Parameters
    ----------
    sys_dim : int
        :math:`2n`, even.
    seq_len : int
    depth : int
    n_sympnet : int
        gradient layers after each attention layer.
    upscaling_dim : int, optional
        width of the gradient layers (default ``2 * sys_dim``).
    activation : str
        of the attention layers, one of :data:`geoattn.kernels.SYMATTN_ACTIVATIONS`.
    symmetric : bool
        symmetric weightings in the attention layers.
    sympnet_activation : str or nn.Module
        of the gradient layers.
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import assert_symplectic
    >>> model = SymplecticTransformer(4, 3, dtype=torch.float64)
    >>> x = torch.randn(2, 3, 4, dtype=torch.float64)
    >>> assert_symplectic(model, x)
    >>> bool((model.inverse(model(x)) - x).abs().max() < 1e-12)
    True
    """

    preserves = MappingProxyType({"symplectic": ("symattn.layer_symplectic", "models.gradient_layer_symplectic",
                                                 "symattn.gradient_shear_symplectic")})
    _repr_fields = ("sys_dim", "seq_len", "depth", "n_sympnet", "activation", "symmetric")

    def __init__(self, sys_dim: int, seq_len: int, *, depth: int = 1, n_sympnet: int = 2,
                 upscaling_dim: int | None = None, activation: str = "matrix_softmax", symmetric: bool = True,
                 sympnet_activation="tanh", device=None, dtype=None) -> None:
        super().__init__()
        m = set_block_sizes(self, sys_dim, seq_len, depth, n_sympnet, upscaling_dim)
        self.activation, self.symmetric = activation, symmetric
        kw = {"device": device, "dtype": dtype}
        self.layers = symplectic_blocks(
            lambda update: SymplecticAttention(sys_dim, update=update, activation=activation, symmetric=symmetric,
                                               **kw),
            sys_dim, depth, n_sympnet, m, sympnet_activation, kw)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """The inverse window map: the layers' inverses in reverse order (exact up to rounding)."""
        self._check(y)
        for layer in reversed(self.layers):
            y = layer.inverse(y)
        return y

