r"""Volume-preserving attention with the Cayley or the exponential activation (seed 000)."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils import parametrize

from .._docstrings import fill_doc
from .. import kernels as K
from ..kernels.dispatch import Explanation
from ..errors import OptionError
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


@fill_doc
class VolumePreservingAttention(nn.Module):
    r"""Self-attention whose activation is an orthogonal function of a skew correlation matrix (seed 000).

    For ``x`` of shape ``(batch, T, dim)`` (the seeds' :math:`Z = x^T \in
    \mathbb{R}^{\mathrm{dim}\times T}`):

    .. math::

        Z \mapsto Z\,\Lambda(Z),\qquad \Lambda(Z) = f(C(Z)),\qquad
        C(Z) = \begin{cases} Z^TAZ, & A \text{ skew } (\texttt{skew\_sym=True}),\\
        \tfrac{1}{\sqrt{\mathrm{dim}}}\,\mathrm{skew\_from\_lower}(Z^TAZ), & A \text{ arbitrary } (\texttt{skew\_sym=False}),
        \end{cases}

    with :math:`f(C) = \mathrm{Cayley}(C) = (I - C)(I + C)^{-1}` (``activation="cayley"``)
    or :math:`f(C) = \exp(C)` (``activation="exp"``), :math:`A \in
    \mathbb{R}^{\mathrm{dim}\times\mathrm{dim}}` (ledger
    ``vp.arbitrary_weighting_shape.corrected``) and ``skew_from_lower`` the
    lower-triangle-to-skew assignment (``vp.lower_assign_skew``).

    **Linear time.** With ``skew_sym=True`` and ``dim < T`` the forward and
    ``loss.backward()`` never form a ``T x T`` matrix (double backward and nested
    ``torch.func`` gradients do): :func:`geoattn.kernels.vp_attention`
    computes float32 Cayley inputs by the Gram form :math:`y = 2x(I + x^Tx\,A)^{-T} - x`
    in float64 (``vp.gram_form``; for ``dim <= 4`` with the closed-form inverse and backward
    of ``vp.gram_closed_form``: no solve for the samples that pass its residual check; on CPU
    as C kernels printed from the verified bindings, see :func:`geoattn.kernels.native_status`),
    and otherwise factors :math:`x = QR` and uses
    :math:`f(Z^TAZ) = I + Q(f(RAR^T) - I)Q^T` (``vp.lowrank_form``);
    :math:`O(T\,\mathrm{dim}^2)` time and memory either way. The
    lower-triangle assignment of the arbitrary weighting breaks the low rank of
    :math:`Z^TAZ` but not that of the off-diagonal blocks of :math:`C`
    (``vp_lower.offdiag_blocks``): with ``skew_sym=False``, ``dim < T`` and ``T >= 128``
    :func:`geoattn.kernels.vp_attention_lower` solves :math:`(I - C)u = x` by a nested block
    (Woodbury) solve over a binary tree of blocks (``vp_lower.merge``), in float64,
    :math:`O(T)` time and memory per sample, forward and backward; below that the ``T x T`` solve.

    What it preserves:

    * at every input, :math:`\Lambda(Z)` is orthogonal with determinant 1
      (``cayley.orthogonal``, ``cayley.det_one``, ``exp.orthogonal``), so the
      norm of every row of ``Z`` is kept and the *frozen* map
      :math:`Y \mapsto Y\Lambda(Z_0)` is volume-preserving, orthogonal and
      symplectic for the product structure (``vp.map_volume_preserving.frozen``,
      ``lift.orthogonal``, ``lift.symplectic``);
    * with ``skew_sym=True`` the layer map :math:`Z \mapsto Z\Lambda(Z)` itself
      is volume-preserving (``vp.map_volume_preserving.skew``,
      ``vp.map_volume_preserving.exp_skew``: checked exactly at small sizes, certified at larger ones),
      keeps the correlation matrix (``vp.map_invariant``) and is inverted by
      :meth:`inverse` (``vp.map_inverse``);
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
    activation : ``"cayley"`` or ``"exp"``
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> layer = VolumePreservingAttention(3, dtype=torch.float64)
    >>> x = torch.randn(2, 50, 3, dtype=torch.float64)
    >>> y = layer(x)                                  # no 50 x 50 matrix is formed
    >>> torch.allclose(y.norm(dim=-2), x.norm(dim=-2))  # rows of Z keep their norms
    True
    >>> torch.allclose(layer.inverse(y), x)
    True
    """

    @property
    def preserves(self) -> dict[str, tuple[str, ...]]:
        """What the layer map preserves: property -> ledger ids (see :func:`geoattn.testing.assert_preserves`)."""
        if not self.skew_sym:
            return {"orthogonal_attention": ("cayley.orthogonal",)}
        if self.activation == "exp":
            return {"volume": ("vp.map_volume_preserving.exp_skew",), "orthogonal_attention": ("exp.orthogonal",)}
        return {"volume": ("vp.map_volume_preserving.skew",), "orthogonal_attention": ("cayley.orthogonal",)}

    @property
    def does_not_preserve(self) -> dict[str, tuple[str, ...]]:
        """Properties the ledger refutes for the layer map: property -> ledger ids."""
        return {} if self.skew_sym else {"volume": ("vp.map_volume_preserving.arbitrary",)}

    def __init__(
        self, dim: int, *, skew_sym: bool = True, activation: str = "cayley", device=None, dtype=None
    ) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.dim = check_positive_int("dim", dim)
        if activation not in K.VP_ACTIVATIONS:
            raise OptionError(f"Expected activation in {K.VP_ACTIVATIONS}. Got {activation!r}.")
        if activation == "exp" and not skew_sym:
            raise ValueError(
                "Expected skew_sym=True with activation='exp' (the exponential of the lower-triangle assignment is "
                "OrthonormalAttention's territory and has no volume claim here). Got skew_sym=False."
            )
        self.activation = activation
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

    def free_parameters(self) -> int:
        """Entries the map uses: :math:`d(d-1)/2` for a skew weighting (stored as a full square), else :math:`d^2`."""
        return self.dim * (self.dim - 1) // 2 if self.skew_sym else self.dim * self.dim

    def correlation(self, x: torch.Tensor) -> torch.Tensor:
        """The skew correlation matrix :math:`C(Z)`, shape ``(..., T, T)`` (for analysis: the forward does not form it
        when ``dim < T``, with ``skew_sym=False`` only from ``T >= 128``)."""
        A = self.weight
        check_sequence(self, "x", x, dim=self.dim, dtype=A.dtype, device=A.device)
        if self.skew_sym:
            C = K.vp_correlation(x, A)
            return 0.5 * (C - C.mT)  # exactly skew; equal to C in exact arithmetic
        return K.vp_correlation_lower(x, A) / math.sqrt(self.dim)

    def attention_matrix(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`\Lambda(Z) = f(C(Z))`, orthogonal, shape ``(..., T, T)``."""
        C = self.correlation(x)
        return K.cayley(C) if self.activation == "cayley" else K.exp_skew(C, check=False)

    def explain(self, x: torch.Tensor) -> Explanation:
        """How :meth:`forward` would compute ``x``: the route of the kernel operation it calls (``vp_attention``
        with ``skew_sym=True``, else ``vp_attention_lower``) and why every other route does not serve
        (:func:`geoattn.kernels.explain`; nothing is computed beyond what the choice reads).

        Examples
        --------
        >>> layer = VolumePreservingAttention(4)
        >>> layer.explain(torch.randn(8, 16, 4)).route.form in ("gram-closed", "gram-solve")
        True
        >>> layer.explain(torch.randn(8, 3, 4)).route.form      # d >= T: the T x T form
        'full'
        >>> VolumePreservingAttention(4, skew_sym=False).explain(torch.randn(2, 512, 4)).route.name
        'semisep/eager'
        """
        A = self.weight
        check_sequence(self, "x", x, dim=self.dim, dtype=A.dtype, device=A.device)
        if self.skew_sym:
            return K.explain("vp_attention", x, A, activation=self.activation, check=False)
        return K.explain("vp_attention_lower", x, A)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(batch, T, dim)`` or ``(T, dim)``; returns the same shape."""
        A = self.weight
        check_sequence(self, "x", x, dim=self.dim, dtype=A.dtype, device=A.device)
        if self.skew_sym:
            return K.vp_attention(x, A, activation=self.activation, check=False)
        return K.vp_attention_lower(x, A)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        r"""The inverse map :math:`Y \mapsto Y\,\Lambda(Y)^T`: the same layer with :math:`A` replaced by :math:`-A`.

        Exact up to rounding because the layer keeps the correlation matrix, :math:`C(Z\Lambda(Z)) = C(Z)`
        (``vp.map_invariant``, ``vp.map_inverse``). Only for ``skew_sym=True``.
        """
        if not self.skew_sym:
            raise ValueError(
                "Expected skew_sym=True for inverse(): with the arbitrary weighting the layer does not keep the "
                "correlation matrix, so Y Lambda(Y)^T is not its inverse. Got skew_sym=False."
            )
        A = self.weight
        check_sequence(self, "y", y, dim=self.dim, dtype=A.dtype, device=A.device)
        return K.vp_attention(y, -A, activation=self.activation, check=False)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, skew_sym={self.skew_sym}, activation={self.activation!r}"
