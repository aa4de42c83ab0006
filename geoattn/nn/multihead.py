r"""Multi-head attention (seed 001)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrizations, parametrize

from .._docstrings import fill_doc
from ._common import NOTHING_PRESERVED as _NOTHING
from ._common import (
    LayerDtypeError,
    LayerShapeError,
    check_positive_int,
    check_probability,
    check_sequence,
    factory,
    layer_name,
)
from .attention import attention_weights, check_mask

__all__ = ["MultiHeadAttention"]


def _combine_masks(layer, x: torch.Tensor, mask, is_causal: bool, key_padding_mask) -> torch.Tensor | None:
    """One mask for :func:`attention_weights` of shape broadcastable to ``(..., h, T, T)``: boolean (True = attend)
    unless ``mask`` is additive, in which case the other masks become ``-inf`` entries."""
    T = x.shape[-2]
    name = layer_name(layer)
    if mask is not None:
        check_mask(mask, f"{name}: ", x.device)
        if mask.dim() == 3:  # (batch, T, T): every head of each sample
            if x.dim() != 3 or mask.shape[0] not in (1, x.shape[0]):
                batch = x.shape[0] if x.dim() == 3 else 1
                raise LayerShapeError(
                    f"{name}: Expected a 3-D mask of shape (batch, T, T) with batch = {batch} "
                    f"for a batched x (per-head masks are 4-D: (batch, n_heads, T, T)). Got {tuple(mask.shape)} for x "
                    f"of shape {tuple(x.shape)}.")
            mask = mask.unsqueeze(-3)
    keep = None
    if is_causal:
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    if key_padding_mask is not None:
        kpm = key_padding_mask
        if not isinstance(kpm, torch.Tensor) or kpm.dtype != torch.bool:
            raise LayerDtypeError(f"{name}: Expected a boolean key_padding_mask (True = ignore the key). Got "
                                  f"{kpm.dtype if isinstance(kpm, torch.Tensor) else type(kpm).__name__}.")
        check_mask(kpm, f"{name}: ", x.device, "key_padding_mask")
        if tuple(kpm.shape) != tuple(x.shape[:-1]):
            raise LayerShapeError(f"{name}: Expected key_padding_mask of shape {tuple(x.shape[:-1])} "
                                  f"(batch, T). Got {tuple(kpm.shape)}.")
        pad = ~kpm[..., None, None, :]  # (..., 1, 1, T)
        keep = pad if keep is None else keep & pad
    if keep is None:
        return mask
    if mask is None:
        return keep
    if mask.dtype == torch.bool:
        return mask & keep
    return mask.masked_fill(~keep, float("-inf"))


def _open_empty_rows(keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(keep, empty)``: the combined mask with every query row that has no key left opened to all keys (so that
    the fused kernel computes finite values there, forward and backward), and the boolean ``empty`` of ``keep``'s
    shape with a last dimension of one, True at those rows, whose output is then set to zero. Each row is decided
    from its own mask entries only, so a sample's result does not depend on the rest of the batch."""
    if keep.dtype == torch.bool:
        empty = ~keep.any(-1, keepdim=True)
        return keep | empty, empty
    empty = (keep == float("-inf")).all(-1, keepdim=True)
    return keep.masked_fill(empty, 0.0), empty


def _check_broadcast(name: str, mask: torch.Tensor, shape: tuple[int, ...]) -> None:
    """Refuse a combined mask that does not broadcast to the scores' ``shape`` ``(batch, h, T, T)``."""
    if len(mask.shape) > len(shape) or any(m not in (1, s) for m, s in zip(mask.shape[::-1], shape[::-1])):
        raise LayerShapeError(f"{name}: Expected masks broadcastable to the scores' shape {shape} (batch, n_heads, T, "
                              f"T). Got a combined mask of shape {tuple(mask.shape)}.")


@fill_doc
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
    {{dropout}}
    {{device_dtype}}

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
    preserves = _NOTHING
    does_not_preserve = _NOTHING

    def __init__(self, dim: int, n_heads: int, *, add_connection: bool = False, stiefel: bool = False,
                 dropout: float = 0.0, device=None, dtype=None) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.dim = check_positive_int("dim", dim)
        self.n_heads = check_positive_int("n_heads", n_heads)
        if dim % n_heads:
            raise LayerShapeError(f"Expected n_heads to divide dim = {dim}. Got n_heads = {n_heads}.")
        self.head_dim = dim // n_heads
        self.dropout = check_probability("dropout", dropout)
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

    def _fused(self, x: torch.Tensor, wq: torch.Tensor, mask, is_causal: bool, key_padding_mask) -> torch.Tensor:
        """The heads through :func:`torch.nn.functional.scaled_dot_product_attention` (the weights are not
        formed where torch has a fused kernel): the same projections, masks, scale and empty rows as the explicit
        path; no dropout (the caller takes the explicit path when dropout acts). ``wq`` is ``self.weight_q``, read
        once by the caller (a parametrized weight is computed at every read)."""
        h, e, T = self.n_heads, self.head_dim, x.shape[-2]
        # (..., T, dim) -> (..., T, h, e) -> (..., h, T, e): strided views, the layout SDPA takes. Three
        # projections rather than one packed: the gradients SDPA returns are then viewed back without a copy (a
        # packed one stacks and copies them: measured 0.79-0.98 of its forward+backward time, T = 16 to 256).
        q, k, v = (F.linear(x, w.reshape(self.dim, self.dim)).unflatten(-1, (h, e)).transpose(-3, -2)
                   for w in (wq, self.weight_k, self.weight_v))
        if q.dim() == 3:  # unbatched: a batch of one, the four-dimensional layout of the fused kernels
            q, k, v = q[None], k[None], v[None]
        keep, empty = None, None
        if mask is not None or key_padding_mask is not None:
            keep = _combine_masks(self, x, mask, is_causal, key_padding_mask)
            _check_broadcast(layer_name(self), keep, (*q.shape[:-2], T, T))
            keep = keep if keep.dtype == torch.bool else keep.to(q.dtype)
            keep, empty = _open_empty_rows(keep)
            is_causal = False
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=is_causal)
        if empty is not None:
            heads = torch.where(empty, 0.0, heads)  # keeps SDPA's (..., T, h, e) layout; masked_fill copies it
        return heads.transpose(-3, -2).reshape(x.shape)  # (..., T, h, e) -> (..., T, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, *, is_causal: bool = False,
                key_padding_mask: torch.Tensor | None = None, need_weights: bool = False,
                average_attn_weights: bool = True):
        """Self-attention of ``x``: ``(batch, T, dim)`` or ``(T, dim)``; returns the same shape.

        Parameters
        ----------
        mask : Tensor, optional
            ``(T, T)``, ``(batch, T, T)`` (every head of each sample) or
            broadcastable to ``(batch, n_heads, T, T)`` (per head; torch's
            ``(batch * n_heads, T, T)`` layout is not accepted): boolean with ``True`` where a query
            may attend (the convention of
            :func:`torch.nn.functional.scaled_dot_product_attention`; the
            opposite of :class:`torch.nn.MultiheadAttention`'s
            ``attn_mask``), or floating and added to the scores.
        is_causal : bool
            each query attends to itself and earlier positions only
            (combined with ``mask`` and ``key_padding_mask`` when given).
        key_padding_mask : Tensor, optional
            ``(batch, T)`` (or ``(T,)``) boolean, ``True`` at keys to ignore,
            as :class:`torch.nn.MultiheadAttention` takes it.
        need_weights : bool
            also return the attention weights, ``(batch, T, T)`` averaged over
            the heads or ``(batch, n_heads, T, T)`` with
            ``average_attn_weights=False``; they are the weights before
            dropout (torch's :class:`~torch.nn.MultiheadAttention` returns
            them after dropout in training mode).

        Notes
        -----
        A query that may attend to no key gets all-zero weights (torch's
        :class:`~torch.nn.MultiheadAttention` returns NaN there). Dropout
        (``dropout`` of the constructor) acts on the weights in training
        mode only.

        Without ``need_weights`` and without dropout at work (evaluation mode,
        or ``dropout=0``), the heads are computed by
        :func:`torch.nn.functional.scaled_dot_product_attention` from one
        projection per query, key and value, with ``is_causal`` passed on
        when it is the only mask; rows with no key left are detected from the
        mask (per sample) and set to zero. Otherwise the weights are formed explicitly by
        :func:`attention_weights`. Both compute the same map.
        """
        wq = self.weight_q
        check_sequence(self, "x", x, dim=self.dim, dtype=wq.dtype, device=wq.device)
        if not need_weights and not (self.training and self.dropout):
            out = self._fused(x, wq, mask, is_causal, key_padding_mask)
            return x + out if self.add_connection else out
        q, k, v = self._project(x, wq), self._project(x, self.weight_k), self._project(x, self.weight_v)
        keep = _combine_masks(self, x, mask, is_causal, key_padding_mask)
        weights = attention_weights(q, k, keep)  # (..., h, T, T)
        used = nn.functional.dropout(weights, self.dropout) if self.training and self.dropout else weights
        heads = used @ v  # (..., h, T, e)
        out = heads.movedim(-3, -2).reshape(x.shape)
        out = x + out if self.add_connection else out
        if not need_weights:
            return out
        return out, (weights.mean(-3) if average_attn_weights else weights)

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, n_heads={self.n_heads}, add_connection={self.add_connection}, "
                f"stiefel={self.stiefel}")
