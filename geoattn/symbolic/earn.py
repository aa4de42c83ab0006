"""Levels earned, not declared: the engine re-decides the level of every piece of evidence a checker returns.

A checker returns :class:`~geoattn.symbolic.evidence.Evidence`; the level it writes there is a request.
The engine grants it only when the evidence carries what that level needs:

``proved``
    a :class:`~geoattn.symbolic.proof.Derivation` that the engine validates itself (every step checked
    from its sides and mutation-tested, or a registered lemma; the chain connected; the conclusion a relation);
``refuted``
    a counterexample whose residual is exactly nonzero;
``checked``
    the explicit sizes at which the exact identity was checked;
``certified``
    the number of points and the Schwartz--Zippel bound.

Evidence that does not earn its level becomes an ``error`` whose detail says what was expected and what came.
"""

from __future__ import annotations

import sympy as sp

from ._exact import rational_zero
from .evidence import Evidence, Level
from .proof import Derivation, validate

__all__ = ["earn"]


def _nonzero(residual) -> bool:
    if isinstance(residual, sp.MatrixBase):
        return any(_nonzero(x) for x in residual)
    try:
        residual = sp.sympify(residual)
        fast = rational_zero(residual)  # exact where it decides (Note [fast paths decide only what they prove])
        return not fast if fast is not None else sp.simplify(residual) != 0
    except (sp.SympifyError, TypeError):
        return False


def _refusal(ev: Evidence) -> str:
    """Why ``ev`` does not earn its level ('' when it does)."""
    if ev.level is Level.PROVED:
        if not isinstance(ev.derivation, Derivation):
            return ("Expected proved evidence to carry a Derivation the engine validates. "
                    f"Got {type(ev.derivation).__name__}.")
        report = validate(ev.derivation)
        if not report.ok:
            return "Expected a derivation the engine accepts. Got: " + "; ".join(report.problems)
        return ""
    if ev.level is Level.REFUTED:
        ce = ev.counterexample
        if ce is None or not _nonzero(ce.residual):
            return "Expected refuted evidence to carry a counterexample with an exactly nonzero residual. Got " + (
                "no counterexample." if ce is None else f"residual {ce.residual!r}.")
        return ""
    if ev.level is Level.CHECKED and not ev.sizes:
        return "Expected checked evidence to name the explicit sizes it checked. Got none."
    if ev.level is Level.CERTIFIED and (ev.points is None or ev.failure_bound is None):
        return (f"Expected certified evidence to give its points and failure bound. Got points={ev.points}, "
                f"failure_bound={ev.failure_bound}.")
    return ""


def earn(evidence: list) -> list[Evidence]:
    """The evidence with every level the engine does not grant replaced by an ``error`` saying why."""
    out = []
    for ev in evidence:
        if not isinstance(ev, Evidence):
            out.append(Evidence(Level.ERROR, "checker output",
                                detail=f"Expected Evidence values from the checker. Got {type(ev).__name__}."))
            continue
        why = _refusal(ev)
        if why:
            out.append(Evidence(Level.ERROR, ev.method, derivation=ev.derivation,
                                detail=f"{ev.level.value} not earned: {why}"))
        else:
            out.append(ev)
    return out
