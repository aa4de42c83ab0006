r"""Linear symplectic attention (seed 004)."""

from __future__ import annotations

import math
from types import MappingProxyType

import torch
from torch import nn

from .._docstrings import fill_doc
from .. import kernels as K
from ..errors import OptionError
from ._common import NOTHING_PRESERVED as _NOTHING
from ._common import check_positive_int, check_sequence, factory

__all__ = ["LinearSymplecticAttention"]


@fill_doc
class LinearSymplecticAttention(nn.Module):
    r"""A symplectic shear along the sequence axis (seed 004).

    Inputs are sequences of phase-space points, ``x`` of shape
    ``(batch, seq_len, 2n)`` whose first ``n`` features are :math:`q` and last
    ``n`` are :math:`p`. With :math:`Q = [q^{(1)}, \dots, q^{(T)}] \in
    \mathbb{R}^{n\times T}` and :math:`\bar A = \tfrac12(A + A^T)` for a
    learned :math:`A \in \mathbb{R}^{T\times T}`:

    .. math::

        \texttt{update="p"}:\ (Q, P) \mapsto (Q,\ P + Q\bar A),\qquad
        \texttt{update="q"}:\ (Q, P) \mapsto (Q + P\bar A,\ P).

    :math:`Q\bar A = \nabla_Q \tfrac12\mathrm{Tr}(QAQ^T)` (ledger
    ``lsa.gradient``); in the row layout the update is :math:`\bar A q`
    (:func:`geoattn.kernels.lsa_update`).

    What it preserves: the map is symplectic for the product structure
    :math:`\hat{\mathbb{J}}(z, \tilde z) = \sum_t (z^{(t)})^T\mathbb{J}_{2n}\tilde z^{(t)}`
    (``lsa.map_symplectic``, ``symplectic.product_structure``), hence also
    volume-preserving. It is linear in ``x`` and not orthogonal.

    Parameters
    ----------
    seq_len : int
        :math:`T`; inputs must have exactly this many time steps.
    update : ``"p"`` or ``"q"``
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import symplecticity_error
    >>> layer = LinearSymplecticAttention(3)
    >>> x = torch.randn(2, 3, 4)
    >>> bool(symplecticity_error(layer, x).max() < 1e-12)
    True
    """

    #: what the layer map preserves / is refuted to preserve: property -> ledger ids
    #: (see :func:`geoattn.testing.assert_preserves`)
    preserves = MappingProxyType({"symplectic": ("lsa.map_symplectic",)})
    does_not_preserve = _NOTHING

    def __init__(self, seq_len: int, *, update: str = "p", device=None, dtype=None) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.seq_len = check_positive_int("seq_len", seq_len)
        if update not in ("p", "q"):
            raise OptionError(f"Expected update to be 'p' or 'q'. Got {update!r}.")
        self.update = update
        self.weight = nn.Parameter(torch.empty(seq_len, seq_len, **kw))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform in :math:`\\pm 1/\\sqrt{T}`."""
        bound = 1.0 / math.sqrt(self.seq_len)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)

    def free_parameters(self) -> int:
        r"""Entries the map uses: :math:`T(T+1)/2`, the symmetric part of the stored :math:`T\times T` weight."""
        return self.seq_len * (self.seq_len + 1) // 2

    def _shear(self, x: torch.Tensor, sign: float, name: str) -> torch.Tensor:
        check_sequence(self, name, x, seq_len=self.seq_len, even=True, dtype=self.weight.dtype, device=self.weight.device)
        n = x.shape[-1] // 2
        q, p = x[..., :n], x[..., n:]
        if self.update == "p":
            return torch.cat([q, p + sign * K.lsa_update(q, self.weight)], dim=-1)
        return torch.cat([q + sign * K.lsa_update(p, self.weight), p], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(batch, seq_len, 2n)`` or ``(seq_len, 2n)``; returns the same shape."""
        return self._shear(x, 1.0, "x")

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        r"""The inverse map :math:`(Q, P) \mapsto (Q, P - Q\bar A)` (for ``update="p"``; exact up to rounding,
        since the half the update reads is unchanged)."""
        return self._shear(y, -1.0, "y")

    def extra_repr(self) -> str:
        return f"seq_len={self.seq_len}, update={self.update!r}"
