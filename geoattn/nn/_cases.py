"""Example constructions of every public layer of :mod:`geoattn.nn`, one per code path.

Each :class:`Case` builds a fresh layer and names an input shape it accepts. The cases marked ``declared`` are
one per variant whose ``preserves`` / ``does_not_preserve`` declarations differ (the docs' preserves table and the
preserves tests read them); the others pick further code paths (an activation, an update, a weighting, a
sequence no longer than the dimension) that the compile tests run too. :mod:`geoattn.models._cases` does the
same for the models and joins both lists.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from torch import nn

from .attention import Attention
from .linear_symplectic import LinearSymplecticAttention
from .multihead import MultiHeadAttention
from .orthonormal import OrthonormalAttention
from .symplectic_attention import SymplecticAttention
from .volume_preserving import VolumePreservingAttention

__all__ = ["Case", "CASES"]


class Case(NamedTuple):
    """One example construction: a label naming the class and its options, a builder and an input shape.

    Attributes
    ----------
    label : str
        the class name, followed by the options in parentheses when they differ from the defaults.
    build : callable
        returns a fresh module (float32 parameters, default device).
    shape : tuple of int
        a batch-first input shape the module accepts.
    declared : bool
        whether the case stands for a variant whose declarations differ (one per such variant).
    """

    label: str
    build: Callable[[], nn.Module]
    shape: tuple[int, ...]
    declared: bool = True


VPA = VolumePreservingAttention
SA = SymplecticAttention

#: the layers' cases, in the order of the docs' preserves table
CASES: tuple[Case, ...] = (
    Case("VolumePreservingAttention(dim)", lambda: VPA(3), (2, 5, 3)),
    Case("VolumePreservingAttention(dim, activation='exp')", lambda: VPA(3, activation="exp"), (2, 5, 3)),
    Case("VolumePreservingAttention(dim, skew_sym=False)", lambda: VPA(3, skew_sym=False), (2, 5, 3)),
    Case("VolumePreservingAttention(dim) with seq_len <= dim", lambda: VPA(4), (2, 3, 4), False),
    Case("VolumePreservingAttention(dim, skew_sym=False) with seq_len >= 128", lambda: VPA(3, skew_sym=False),
         (2, 130, 3), False),
    Case("VolumePreservingAttention(dim, activation='exp') with seq_len <= dim", lambda: VPA(4, activation="exp"),
         (2, 3, 4), False),
    Case("OrthonormalAttention", lambda: OrthonormalAttention(4), (2, 5, 4)),
    Case("LinearSymplecticAttention", lambda: LinearSymplecticAttention(3), (2, 3, 4)),
    Case("LinearSymplecticAttention(seq_len, update='q')", lambda: LinearSymplecticAttention(3, update="q"),
         (2, 3, 4), False),
    Case("SymplecticAttention(dim)", lambda: SA(4), (2, 5, 4)),
    Case("SymplecticAttention(dim, update='q', activation='vector_one_softmax', symmetric=False)",
         lambda: SA(4, activation="vector_one_softmax", symmetric=False, update="q"), (2, 5, 4)),
    Case("SymplecticAttention(dim, update='q', activation='vector_softmax')",
         lambda: SA(4, activation="vector_softmax", update="q"), (2, 5, 4), False),
    Case("SymplecticAttention(dim, activation='matrix_one_softmax', symmetric=False)",
         lambda: SA(4, activation="matrix_one_softmax", symmetric=False), (2, 5, 4), False),
    Case("MultiHeadAttention", lambda: MultiHeadAttention(4, 2), (2, 3, 4)),
    Case("MultiHeadAttention(dim, n_heads, add_connection=True, stiefel=True)",
         lambda: MultiHeadAttention(4, 2, add_connection=True, stiefel=True), (2, 3, 4), False),
    Case("Attention", lambda: Attention(4), (2, 3, 4)),
    Case("Attention(dim, bias=True)", lambda: Attention(4, bias=True), (2, 3, 4), False),
)
