r"""Multi-head attention (seed 001)."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils import parametrizations, parametrize

from ._common import LayerShapeError, check_positive_int, check_sequence, factory
from .attention import attention_weights

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    r"""Multi-head self-attention without an output projection (seed 001).

    For ``x`` of shape ``(batch, T, dim)`` (:math:`X = Z^T`) and heads
    :math:`i = 1, \dots, h` with projections
    :math:`P^Q_i, P^K_i, P^V_i \in \mathbb{R}^{(\mathrm{dim}/h) \times \mathrm{dim}}`
    (the shape of ledger ``mha.projection_shapes.corrected``; the seed's
    :math:`\mathrm{dim}\times(\mathrm{dim}/h)` is refuted as
    ``mha.projection_shapes``):

    .. math::

        \mathrm{head}_i = \mathrm{softmax}\!\left(\frac{(X P^{Q\,T}_i)(X P^{K\,T}_i)^T}{\sqrt{\mathrm{dim}/h}}\right)
        X P^{V\,T}_i,\qquad
        \mathrm{MHA}(X) = [\mathrm{head}_1, \dots, \mathrm{head}_h]\;(+\,X),

    the heads concatenated along the features (ledger ``mha.output_shape``)
    and ``X`` added when ``add_connection=True``.

    Scaling: by :math:`\sqrt{\mathrm{dim}/h}`, the head size, as the seed's
    correlation section and :class:`torch.nn.MultiheadAttention` do
    (GeometricMachineLearning.jl scales by :math:`\sqrt{\mathrm{dim}}`).

    What it preserves: nothing geometric (see :class:`Attention`). With
    ``stiefel=True`` each :math:`P_i` has orthonormal rows,
    :math:`P_iP_i^T = I`, kept by
    :func:`torch.nn.utils.parametrizations.orthogonal`.

    Parameters
    ----------
    dim : int
    n_heads : int
        must divide ``dim``.
    add_connection : bool
        add the input to the output.
    stiefel : bool
        keep the projections on the Stiefel manifold.
    device, dtype :
        of the parameters.

    Examples
    --------
    >>> import torch
    >>> layer = MultiHeadAttention(6, 3, stiefel=True)
    >>> P = layer.weight_q
    >>> torch.allclose(P @ P.mT, torch.eye(2).expand(3, 2, 2), atol=1e-6)
    True
    >>> layer(torch.randn(4, 5, 6)).shape
    torch.Size([4, 5, 6])
    """

    #: what the map preserves / is refuted to preserve: property -> ledger ids
    #: (see :func:`geoattn.testing.assert_preserves`); nothing for this one
    preserves: dict = {}
    does_not_preserve: dict = {}

    def __init__(self, dim: int, n_heads: int, *, add_connection: bool = False, stiefel: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.dim = check_positive_int("dim", dim)
        self.n_heads = check_positive_int("n_heads", n_heads)
        if dim % n_heads:
            raise LayerShapeError(f"Expected n_heads to divide dim = {dim}. Got n_heads = {n_heads}.")
        self.head_dim = dim // n_heads
        self.add_connection = bool(add_connection)
        self.stiefel = bool(stiefel)
        shape = (n_heads, self.head_dim, dim)
        self.weight_q = nn.Parameter(torch.empty(shape, **kw))
        self.weight_k = nn.Parameter(torch.empty(shape, **kw))
        self.weight_v = nn.Parameter(torch.empty(shape, **kw))
        self.reset_parameters()
        if self.stiefel:
            for name in ("weight_q", "weight_k", "weight_v"):
                parametrizations.orthogonal(self, name)

    def reset_parameters(self) -> None:
        """Uniform in :math:`\\pm 1/\\sqrt{\\mathrm{dim}}` (as :class:`torch.nn.Linear`); with
        ``stiefel=True`` the parametrization maps the draw to the Stiefel manifold."""
        bound = 1.0 / math.sqrt(self.dim)
        with torch.no_grad():
            for name in ("weight_q", "weight_k", "weight_v"):
                if parametrize.is_parametrized(self, name):
                    w = torch.empty_like(getattr(self, name)).uniform_(-bound, bound)
                    setattr(self, name, torch.linalg.qr(w.mT).Q.mT)
                else:
                    getattr(self, name).uniform_(-bound, bound)

    def _project(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        # (..., T, dim) x (h, e, dim) -> (..., h, T, e)
        return (x.unsqueeze(-3) @ w.mT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(batch, T, dim)`` or ``(T, dim)``; returns the same shape."""
        wq = self.weight_q
        check_sequence(self, "x", x, dim=self.dim, dtype=wq.dtype)
        q, k, v = self._project(x, wq), self._project(x, self.weight_k), self._project(x, self.weight_v)
        heads = attention_weights(q, k) @ v  # (..., h, T, e)
        out = heads.movedim(-3, -2).reshape(x.shape)
        return x + out if self.add_connection else out

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, n_heads={self.n_heads}, add_connection={self.add_connection}, "
                f"stiefel={self.stiefel}")
