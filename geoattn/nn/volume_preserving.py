r"""Volume-preserving attention with the Cayley activation (seed 000)."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils import parametrize

from .. import kernels as K
from ._common import check_positive_int, check_sequence, factory

__all__ = ["VolumePreservingAttention", "Skew"]


class Skew(nn.Module):
    r"""Parametrization :math:`X \mapsto \mathrm{triu}_1(X) - \mathrm{triu}_1(X)^T` onto the skew-symmetric matrices.

    Register it with :func:`torch.nn.utils.parametrize.register_parametrization`.
    Assigning a skew matrix to the parametrized tensor stores its strict upper triangle.
    """

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        U = X.triu(1)
        return U - U.mT

    def right_inverse(self, A: torch.Tensor) -> torch.Tensor:
        return A.triu(1)


class VolumePreservingAttention(nn.Module):
    r"""Self-attention whose activation is the Cayley transform of a skew correlation matrix (seed 000).

    For ``x`` of shape ``(batch, T, dim)`` (the seeds' :math:`Z = x^T \in
    \mathbb{R}^{\mathrm{dim}\times T}`), with :math:`\mathrm{Cayley}(C) = (I - C)(I + C)^{-1}`:

    .. math::

        Z \mapsto Z\,\Lambda(Z),\qquad \Lambda(Z) = \mathrm{Cayley}(C(Z)),\qquad
        C(Z) = \begin{cases} Z^TAZ, & A \text{ skew } (\texttt{skew\_sym=True}),\\
        \tfrac{1}{\sqrt{\mathrm{dim}}}\,\mathrm{skew\_from\_lower}(Z^TAZ), & A \text{ arbitrary } (\texttt{skew\_sym=False}),
        \end{cases}

    with :math:`A \in \mathbb{R}^{\mathrm{dim}\times\mathrm{dim}}` (ledger
    ``vp.arbitrary_weighting_shape.corrected``) and ``skew_from_lower`` the
    lower-triangle-to-skew assignment (``vp.lower_assign_skew``). In the row
    layout the output is :math:`\Lambda(Z)^T x`, computed by
    :func:`geoattn.kernels.cayley_apply` without forming :math:`\Lambda` when
    ``dim < T``.

    What it preserves:

    * at every input, :math:`\Lambda(Z)` is orthogonal with determinant 1
      (``cayley.orthogonal``, ``cayley.det_one``), so the *frozen* map
      :math:`Y \mapsto Y\Lambda(Z_0)` is volume-preserving, orthogonal and
      symplectic for the product structure (``vp.map_volume_preserving.frozen``,
      ``lift.orthogonal``, ``lift.symplectic``);
    * with ``skew_sym=True`` the layer map :math:`Z \mapsto Z\Lambda(Z)` itself
      is volume-preserving (``vp.map_volume_preserving.skew``: exact for
      :math:`d, T \le 2`, certified up to :math:`(3, 3)` and :math:`(2, 4)`);
    * with ``skew_sym=False`` the layer map is **not** volume-preserving
      (``vp.map_volume_preserving.arbitrary`` is refuted: :math:`\det J - 1 = 161/458`
      at an exact point with :math:`d = 1, T = 2`);
    * neither map is symplectic in general.

    Parameters
    ----------
    dim : int
    skew_sym : bool
        skew-symmetric weighting (parametrized by :class:`Skew`) or an
        arbitrary weighting with the lower-triangle assignment.
    device, dtype :
        of the parameters.

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import orthogonality_error
    >>> layer = VolumePreservingAttention(3, dtype=torch.float64)
    >>> x = torch.randn(2, 5, 3, dtype=torch.float64)
    >>> bool(orthogonality_error(layer.attention_matrix(x)).max() < 1e-12)
    True
    """

    def __init__(self, dim: int, *, skew_sym: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.dim = check_positive_int("dim", dim)
        self.skew_sym = bool(skew_sym)
        self.weight = nn.Parameter(torch.empty(dim, dim, **kw))
        self.reset_parameters()
        if self.skew_sym:
            parametrize.register_parametrization(self, "weight", Skew())

    def reset_parameters(self) -> None:
        """Entries of the weighting drawn from :math:`\\mathcal{N}(0, 1/\\mathrm{dim}^2)`, so that correlations of
        inputs with unit entries are of order one."""
        with torch.no_grad():
            w = torch.randn_like(self.weight) / self.dim
            if self.skew_sym and parametrize.is_parametrized(self, "weight"):
                self.weight = w - w.mT
            else:
                self.weight.copy_(w)

    def correlation(self, x: torch.Tensor) -> torch.Tensor:
        """The skew correlation matrix :math:`C(Z)`, shape ``(..., T, T)``."""
        A = self.weight
        check_sequence(self, "x", x, dim=self.dim, dtype=A.dtype)
        if self.skew_sym:
            C = K.vp_correlation(x, A)
            return 0.5 * (C - C.mT)  # exactly skew; equal to C in exact arithmetic
        return K.vp_correlation_lower(x, A) / math.sqrt(self.dim)

    def attention_matrix(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`\Lambda(Z) = \mathrm{Cayley}(C(Z))`, orthogonal, shape ``(..., T, T)``."""
        return K.cayley(self.correlation(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(batch, T, dim)`` or ``(T, dim)``; returns the same shape."""
        return K.cayley_apply(self.correlation(x), x, check=False)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, skew_sym={self.skew_sym}"
