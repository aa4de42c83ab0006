"""The claims engine: claims, their checkers and their verdicts.

Typical use::

    >>> from geoattn import symbolic
    >>> v = symbolic.get_claim("cayley.orthogonal").check()
    >>> v.level.value
    'proved'
"""

from .claim import CheckContext, Claim, UnknownClaimError, check, corrected, run
from .ledger import all_claims, declared_in, families, get_claim
from .evidence import Counterexample, Derivation, Evidence, Level, ProofFailed, Step, Verdict
from .strategies import MatrixIdentity, certify, exact_check, search_counterexample

__all__ = [
    "CheckContext",
    "Claim",
    "Counterexample",
    "Derivation",
    "Evidence",
    "Level",
    "MatrixIdentity",
    "ProofFailed",
    "Step",
    "UnknownClaimError",
    "Verdict",
    "all_claims",
    "certify",
    "declared_in",
    "check",
    "exact_check",
    "families",
    "get_claim",
    "corrected",
    "run",
    "search_counterexample",
]
