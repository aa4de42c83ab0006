"""The claims engine: claims, their checkers and their verdicts.

Typical use::

    >>> from geoattn import symbolic
    >>> v = symbolic.get_claim("cayley.orthogonal").check()
    >>> v.level.value
    'proved'
"""

from .claim import (
    CheckContext,
    Claim,
    UnknownClaimError,
    all_claims,
    check,
    families,
    get_claim,
    register,
    run,
)
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
    "check",
    "exact_check",
    "families",
    "get_claim",
    "register",
    "run",
    "search_counterexample",
]
