r"""The claims engine: claims, their checkers and their verdicts.

Typical use::

    >>> from geoattn import symbolic
    >>> v = symbolic.get_claim("cayley.orthogonal").check()
    >>> v.level.value
    'proved'

A claim of one's own is a :class:`Claim` whose checker is a :class:`Policy`: an identity
(:class:`MatrixIdentity`, built from the explicit matrices of :mod:`geoattn.symbolic.algebra`), where
to search for a counterexample, and optionally a :class:`Derivation` of :class:`Step` values checked
from their sides (:func:`identity`, :func:`in_algebra`, :func:`relation`) or resting on a registered
lemma (:data:`LEMMAS`). ``geoattn prove --claims PATH`` runs the claims a file declares in ``CLAIMS``
(:func:`load_claims`).
"""

from . import algebra
from .claim import CheckContext, Claim, UnknownClaimError, check, corrected, run
from .ledger import all_claims, declared_in, families, get_claim
from .evidence import Counterexample, Derivation, Evidence, Level, ProofFailed, Step, Verdict
from .lemmas import LEMMAS, Lemma
from .policy import Grows, Policy, Sizes, at_sizes, grid
from .proof import Check, identity, in_algebra, relation, validate
from .strategies import MatrixIdentity, certify, exact_check, search_counterexample
from .user import load_claims

__all__ = [
    "CheckContext",
    "Check",
    "Claim",
    "Counterexample",
    "Derivation",
    "Evidence",
    "Grows",
    "LEMMAS",
    "Lemma",
    "Level",
    "MatrixIdentity",
    "Policy",
    "ProofFailed",
    "Sizes",
    "Step",
    "UnknownClaimError",
    "Verdict",
    "all_claims",
    "at_sizes",
    "certify",
    "declared_in",
    "check",
    "corrected",
    "exact_check",
    "families",
    "get_claim",
    "grid",
    "identity",
    "in_algebra",
    "load_claims",
    "relation",
    "run",
    "search_counterexample",
    "validate",
]
