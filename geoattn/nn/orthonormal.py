r"""Attention with the orthonormal (exponential) activation (seed 003)."""

from __future__ import annotations

import math
from types import MappingProxyType

import torch
from torch import nn

from .._docstrings import fill_doc
from .. import kernels as K
from ._common import check_positive_int, check_sequence, factory

__all__ = ["OrthonormalAttention"]


@fill_doc
class OrthonormalAttention(nn.Module):
    r"""Self-attention with the activation :math:`\sigma(C) = \exp(\mathrm{uta}(C))` (seed 003).

    For ``x`` of shape ``(batch, T, dim)`` (:math:`Z = x^T`) and learned
    :math:`P^Q, P^K \in \mathbb{R}^{\mathrm{dim}\times\mathrm{dim}}`:

    .. math::

        Z \mapsto Z\,\Lambda(Z),\qquad
        \Lambda(Z) = \exp\!\big(\mathrm{uta}\big((P^QZ)^T(P^KZ)\big)\big),\qquad
        [\mathrm{uta}(A)]_{ij} = \begin{cases} a_{ij} & i < j\\ -a_{ji} & i > j\\ 0 & i = j,\end{cases}

    computed as :math:`\Lambda^T x = \exp(\mathrm{uta}(C)^T)\,x` with :func:`geoattn.kernels.exp_uta_action`
    from the factors :math:`q = xP^{QT}`, :math:`k = xP^{KT}` (the Chebyshev expansion of the action, on the CPU
    with the ``T x T`` matrix formed inside the kernel; :math:`\Lambda` itself is not formed).

    What it preserves:

    * at every input :math:`\Lambda(Z)` is orthogonal with determinant 1
      (``exp.uta_skew``, ``exp.orthogonal``, ``exp.det_one``), so the frozen map
      :math:`Y \mapsto Y\Lambda(Z_0)` is volume-preserving and symplectic for
      the extended structure (``exp.lift_symplectic``, ``exp.map_symplectic.frozen``,
      ``exp.map_volume_preserving.frozen``);
    * the layer map :math:`Z \mapsto Z\Lambda(Z)` is **neither** symplectic nor
      volume-preserving: the seed's claim is refuted (``exp.map_symplectic``,
      ``exp.map_volume_preserving``, exact counterexamples), because
      :math:`\Lambda` depends on :math:`Z`.

    Parameters
    ----------
    dim : int
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import orthogonality_error
    >>> layer = OrthonormalAttention(4, dtype=torch.float64)
    >>> Lam = layer.attention_matrix(torch.randn(3, 6, 4, dtype=torch.float64))
    >>> bool(orthogonality_error(Lam).max() < 1e-12)
    True
    """

    #: what the layer map preserves / is refuted to preserve: property -> ledger ids
    #: (see :func:`geoattn.testing.assert_preserves`)
    preserves = MappingProxyType({"orthogonal_attention": ("exp.orthogonal",)})
    does_not_preserve = MappingProxyType({"volume": ("exp.map_volume_preserving",),
                                          "symplectic": ("exp.map_symplectic",)})

    def __init__(self, dim: int, *, device=None, dtype=None) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.dim = check_positive_int("dim", dim)
        self.weight_q = nn.Parameter(torch.empty(dim, dim, **kw))
        self.weight_k = nn.Parameter(torch.empty(dim, dim, **kw))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform in :math:`\\pm 1/\\sqrt{\\mathrm{dim}}`, as :class:`torch.nn.Linear`."""
        bound = 1.0 / math.sqrt(self.dim)
        with torch.no_grad():
            self.weight_q.uniform_(-bound, bound)
            self.weight_k.uniform_(-bound, bound)

    def correlation(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`(P^QZ)^T(P^KZ)` in the row layout, ``(x P^{QT})(x P^{KT})^T``, shape ``(..., T, T)``."""
        q, k = self.factors(x)
        return q @ k.mT

    def attention_matrix(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`\Lambda(Z)`, orthogonal, shape ``(..., T, T)``."""
        return K.exp_skew(K.upper_triangular_asymmetrize(self.correlation(x)), check=False)

    def factors(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r""":math:`q = xP^{QT}` and :math:`k = xP^{KT}`, each ``(..., T, dim)``: the correlation is :math:`qk^T`."""
        check_sequence(self, "x", x, dim=self.dim, dtype=self.weight_q.dtype, device=self.weight_q.device)
        return x @ self.weight_q.mT, x @ self.weight_k.mT

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r"""``x``: ``(batch, T, dim)`` or ``(T, dim)``; returns the same shape, :math:`\Lambda^T x` computed as the
        action :func:`geoattn.kernels.exp_uta_action` of :math:`\exp(\mathrm{uta}(qk^T)^T)` on ``x``."""
        q, k = self.factors(x)
        return K.exp_uta_action(q, k, x)

    def explain(self, x: torch.Tensor):
        """How :meth:`forward` computes ``x``: :func:`geoattn.kernels.explain` of its ``exp_uta_action`` call."""
        q, k = self.factors(x)
        return K.explain("exp_uta_action", q, k, x)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
