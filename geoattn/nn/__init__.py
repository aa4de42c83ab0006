r"""Attention layers of the seeds as torch modules, built on :mod:`geoattn.kernels`.

Tensors are batch-first, ``(batch, seq_len, dim)``; an unbatched
``(seq_len, dim)`` works too (any leading dimensions do). The seeds write a
sequence as the columns of :math:`Z \in \mathbb{R}^{\mathrm{dim}\times T}`;
here a sample is :math:`x = Z^T`, so the seeds' right multiplication
:math:`Z\Lambda` is the left multiplication :math:`\Lambda^T x`.

Each class docstring states what its map preserves and what it does not,
citing the ids of the claims ledger (``geoattn prove --list``); the tests
check every statement with :mod:`geoattn.testing`.
"""

from ._common import LayerDtypeError, LayerShapeError
from .attention import Attention, attention_weights
from .linear_symplectic import LinearSymplecticAttention
from .multihead import MultiHeadAttention
from .orthonormal import OrthonormalAttention
from .symplectic_attention import SymplecticAttention
from .volume_preserving import Skew, VolumePreservingAttention

__all__ = [
    "Attention",
    "MultiHeadAttention",
    "VolumePreservingAttention",
    "OrthonormalAttention",
    "LinearSymplecticAttention",
    "SymplecticAttention",
    "Skew",
    "attention_weights",
    "LayerShapeError",
    "LayerDtypeError",
]
