r"""Nonlinear symplectic attention: a shear of phase space by the gradient of a softmax potential."""

from __future__ import annotations

import math
from types import MappingProxyType

import torch
from torch import nn

from .._docstrings import fill_doc
from .. import kernels as K
from ..errors import OptionError
from ._common import NOTHING_PRESERVED as _NOTHING
from ._common import LayerShapeError, check_positive_int, check_sequence, factory

__all__ = ["SymplecticAttention"]


@fill_doc
class SymplecticAttention(nn.Module):
    r"""Symplectic attention: :math:`(q, p) \mapsto (q,\ p + \nabla_q\Sigma(q))` along the sequence.

    Inputs are sequences of phase-space points, ``x`` of shape ``(batch, T, dim)``, ``dim = 2n``: the
    first ``n`` features are :math:`q`, the last ``n`` are :math:`p`. With the tokens' :math:`q` parts as
    the rows of :math:`z \in \mathbb{R}^{T\times n}` and :math:`C = zAz^T` (the seeds' :math:`Q^TAQ`),
    the potential is a log-sum-exp of :math:`C`:

    .. math::

        \texttt{matrix\_softmax}:\ \Sigma = \log\textstyle\sum_{mk}e^{C_{mk}},\qquad
        \texttt{vector\_softmax}:\ \Sigma = \sum_k\log\textstyle\sum_{m}e^{C_{mk}},

    and the ``*_one_softmax`` forms add 1 inside each logarithm. The update is

    .. math::

        \nabla_z\Sigma = G\,zA^T + G^TzA,\qquad G = \mathrm{softmax}(C)

    (ledger ``symattn.potential_gradient``), generated from the proved expression with a generated
    backward (``symattn.layer_vjp``). ``update="q"`` maps :math:`(q, p) \mapsto (q + \nabla_p\Sigma(p), p)`.

    What it preserves: it is a shear by the gradient of a scalar potential, so it is symplectic for the
    product structure of the sequence at every input (``symattn.layer_symplectic``,
    ``symattn.gradient_shear_symplectic``), hence volume-preserving. GeometricMachineLearning.jl's
    symmetric vector-softmax layer, :math:`2AQ\,\mathrm{softmax}(C)`, is *not* a gradient and not
    symplectic (``symattn.gml.layer_symplectic.vector_softmax_symmetric``); this layer's update is always the
    true gradient :math:`AZS^T + A^TZS` (for a symmetric :math:`A`, :math:`AZ(S + S^T)`).

    Parameters
    ----------
    dim : int
        :math:`2n`, even.
    update : ``"p"`` or ``"q"``
        which half is updated (from the other).
    activation : str
        one of :data:`geoattn.kernels.SYMATTN_ACTIVATIONS`.
    symmetric : bool
        ``True``: :math:`A = \tfrac12(W + W^T)` (:math:`n(n+1)/2` free parameters); ``False``: :math:`A = W`.
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import symplecticity_error
    >>> layer = SymplecticAttention(4, activation="vector_softmax", dtype=torch.float64)
    >>> x = torch.randn(2, 5, 4, dtype=torch.float64)
    >>> bool(symplecticity_error(layer, x).max() < 1e-12)
    True
    >>> bool((layer.inverse(layer(x)) - x).abs().max() < 1e-12)
    True
    """

    #: what the layer map preserves / is refuted to preserve: property -> ledger ids
    #: (see :func:`geoattn.testing.assert_preserves`)
    preserves = MappingProxyType({"symplectic": ("symattn.layer_symplectic", "symattn.gradient_shear_symplectic")})
    does_not_preserve = _NOTHING

    def __init__(self, dim: int, *, update: str = "p", activation: str = "matrix_softmax", symmetric: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.dim = check_positive_int("dim", dim)
        if dim % 2:
            raise LayerShapeError(f"Expected an even dim = 2n (q and p halves). Got {dim}.")
        if update not in ("p", "q"):
            raise OptionError(f"Expected update to be 'p' or 'q'. Got {update!r}.")
        if activation not in K.SYMATTN_ACTIVATIONS:
            raise OptionError(f"Expected activation in {tuple(K.SYMATTN_ACTIVATIONS)}. Got {activation!r}.")
        if not isinstance(symmetric, bool):
            raise TypeError(f"Expected symmetric to be a bool. Got {symmetric!r}.")
        self.update, self.activation, self.symmetric = update, activation, symmetric
        n = dim // 2
        self.weight = nn.Parameter(torch.empty(n, n, **kw))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform in :math:`\\pm 1/\\sqrt{n}`."""
        bound = 1.0 / math.sqrt(self.dim // 2)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)

    def free_parameters(self) -> int:
        """Entries the map uses: :math:`n(n+1)/2` for ``symmetric=True``, :math:`n^2` otherwise."""
        n = self.dim // 2
        return n * (n + 1) // 2 if self.symmetric else n * n

    def weighting(self) -> torch.Tensor:
        """The weighting :math:`A` (symmetrised for ``symmetric=True``)."""
        return 0.5 * (self.weight + self.weight.mT) if self.symmetric else self.weight

    def _split(self, x: torch.Tensor, name: str):
        check_sequence(self, name, x, dim=self.dim, dtype=self.weight.dtype, device=self.weight.device)
        # split, not two slices: the backward then writes one (..., dim) gradient instead of zero-filling one per half
        return x.split(self.dim // 2, dim=-1)

    def potential(self, z: torch.Tensor) -> torch.Tensor:
        """:math:`\\Sigma` of the half the update reads (``q`` for ``update="p"``), one value per sequence:
        shape ``(batch,)`` (``()`` for an unbatched input)."""
        q, p = self._split(z, "z")
        return K.symattn_potential(q if self.update == "p" else p, self.weighting(), self.activation)

    def _shear(self, x: torch.Tensor, sign: float, name: str) -> torch.Tensor:
        check_sequence(self, name, x, dim=self.dim, dtype=self.weight.dtype, device=self.weight.device)
        return K.symattn_shear(x, self.weighting(), self.activation, self.update, sign)

    def explain(self, x: torch.Tensor):
        """How :meth:`forward` would compute the update for ``x``: the route of ``symattn_update`` and why every
        other route does not serve (:func:`geoattn.kernels.explain`; nothing is computed). :meth:`forward` calls
        :func:`geoattn.kernels.symattn_shear`, which is one call where this route is ``native``, ``dense`` or
        ``sdpa``, the update (by this route) and a concatenation otherwise.

        Examples
        --------
        >>> layer = SymplecticAttention(8)
        >>> forms = ("flash", "native", "dense", "sdpa", "fused", "generated")
        >>> layer.explain(torch.randn(2, 16, 8)).route.form in forms
        True
        """
        q, p = self._split(x, "x")
        with torch.no_grad():
            return K.explain("symattn_update", q if self.update == "p" else p, self.weighting(), self.activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(batch, T, dim)`` or ``(T, dim)``; returns the same shape."""
        return self._shear(x, 1.0, "x")

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """The inverse map :math:`(q, p) \\mapsto (q, p - \\nabla\\Sigma(q))` (exact up to rounding: the half the
        update reads is unchanged)."""
        return self._shear(y, -1.0, "y")

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, update={self.update!r}, activation={self.activation!r}, "
                f"symmetric={self.symmetric}")
