r"""Single-head scaled dot-product attention (seed 002)."""

from __future__ import annotations

import math

import torch
from torch import nn

from .._docstrings import fill_doc
from ._common import NOTHING_PRESERVED as _NOTHING
from ..errors import DeviceError
from ._common import LayerDtypeError, LayerShapeError, check_positive_int, check_probability, check_sequence, factory

__all__ = ["Attention", "attention_weights", "check_mask"]


def check_mask(mask, prefix: str = "", device: torch.device | None = None, name: str = "mask") -> None:
    """Refuse a ``mask`` that is neither None nor a boolean or floating tensor, or not on ``device`` (the inputs'
    device, when given; ``prefix`` names the layer)."""
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor):
        raise LayerDtypeError(f"{prefix}Expected mask to be a torch.Tensor or None. Got {type(mask).__name__}.")
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise LayerDtypeError(f"{prefix}Expected a boolean or floating mask. Got {mask.dtype}.")
    if device is not None and mask.device != device:
        raise DeviceError(f"{prefix}Expected {name} on the inputs' device {device}. Got {name} on {mask.device}.")


def attention_weights(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None,
                      is_causal: bool = False, scale: float | None = None) -> torch.Tensor:
    r"""Row-stochastic weights :math:`\mathrm{softmax}(q k^T / \sqrt{d} + M)` over the keys.

    ``mask`` follows :func:`torch.nn.functional.scaled_dot_product_attention`:
    a boolean mask marks with ``True`` the pairs that take part; a floating
    mask is added to the scores. A query row with no key left gets all-zero
    weights, as in ``scaled_dot_product_attention``.
    """
    if is_causal and mask is not None:
        raise ValueError("Expected either mask or is_causal=True, not both. Got both.")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.mT) * scale
    if is_causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    if mask is not None:
        check_mask(mask, device=scores.device)
        try:
            torch.broadcast_shapes(mask.shape, scores.shape)
        except RuntimeError:
            raise LayerShapeError(
                f"Expected mask broadcastable to the scores' shape {tuple(scores.shape)}. Got {tuple(mask.shape)}."
            ) from None
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask.to(scores.dtype)
        empty = scores.amax(dim=-1, keepdim=True) == float("-inf")
        return torch.softmax(scores.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)
    return torch.softmax(scores, dim=-1)


@fill_doc
class Attention(nn.Module):
    r"""Scaled dot-product attention with learned projections (seed 002).

    For a query sequence ``x`` of shape ``(batch, T, dim)`` (row convention:
    row :math:`t` is the token :math:`x^{(t)}`, so :math:`X = Z^T` for the
    seeds' column matrix :math:`Z`) and a context ``c`` of shape
    ``(batch, S, dim)`` (``c = x`` for self-attention):

    .. math::

        Q = X W_q^T,\quad K = C W_k^T,\quad V = C W_v^T,\qquad
        \mathrm{Attention}(X, C) = \mathrm{softmax}\!\left(\frac{QK^T}{\sqrt{\mathrm{dim}}} + M\right) V,

    the softmax acting on each row (over the keys). In the column convention
    this is :math:`V_c\,\mathrm{softmax}(K_c^TQ_c/\sqrt{\mathrm{dim}})` with a
    column-wise softmax (ledger ``attention.row_column_equivalence``).

    What it preserves: nothing geometric. Each output row is a convex
    combination of value rows (``softmax.stochastic``), and the weight matrix
    can be singular (``softmax.can_be_singular``), so the map can lose
    information; this layer is the unstructured baseline.

    Parameters
    ----------
    dim : int
        feature size of queries, keys and values.
    bias : bool
        add biases to the three projections.
    {{dropout}}
    {{device_dtype}}

    Examples
    --------
    >>> import torch
    >>> import torch.nn.functional as F
    >>> layer = Attention(4)
    >>> x = torch.randn(2, 5, 4)
    >>> q, k, v = layer.q_proj(x), layer.k_proj(x), layer.v_proj(x)
    >>> torch.allclose(layer(x), F.scaled_dot_product_attention(q, k, v), atol=1e-6)
    True
    """

    #: what the map preserves / is refuted to preserve: property -> ledger ids
    #: (see :func:`geoattn.testing.assert_preserves`); nothing for this one
    preserves = _NOTHING
    does_not_preserve = _NOTHING

    def __init__(self, dim: int, *, bias: bool = False, dropout: float = 0.0, device=None, dtype=None) -> None:
        super().__init__()
        kw = factory(device, dtype)
        self.dim = check_positive_int("dim", dim)
        self.dropout = check_probability("dropout", dropout)
        self.q_proj = nn.Linear(dim, dim, bias=bias, **kw)
        self.k_proj = nn.Linear(dim, dim, bias=bias, **kw)
        self.v_proj = nn.Linear(dim, dim, bias=bias, **kw)

    def reset_parameters(self) -> None:
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            proj.reset_parameters()

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                is_causal: bool = False, *, need_weights: bool = False):
        """``x``: ``(batch, T, dim)`` or ``(T, dim)``; ``context``: ``(batch, S, dim)`` or ``None``;
        ``mask``: broadcastable to ``(batch, T, S)``, boolean (``True`` = attend) or additive; ``is_causal=True``
        builds the causal mask itself and refuses a ``mask`` beside it (combine them into one mask). With
        ``need_weights=True`` returns ``(output, weights)``, the weights ``(batch, T, S)`` before dropout."""
        w = self.q_proj.weight
        check_sequence(self, "x", x, dim=self.dim, dtype=w.dtype, device=w.device)
        context = x if context is None else context
        check_sequence(self, "context", context, dim=self.dim, dtype=w.dtype, device=w.device)
        q, k, v = self.q_proj(x), self.k_proj(context), self.v_proj(context)
        weights = attention_weights(q, k, mask, is_causal)
        used = nn.functional.dropout(weights, self.dropout) if self.training and self.dropout else weights
        out = used @ v
        return (out, weights) if need_weights else out

    def extra_repr(self) -> str:
        return f"dim={self.dim}, bias={self.q_proj.bias is not None}"
