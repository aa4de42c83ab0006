r"""Derivations the engine checks from their displayed sides.

A :class:`Derivation` is a list of :class:`Step` values ``lhs = rhs`` and a conclusion that is a
SymPy relation. The engine (:func:`validate`) accepts it as a proof only when

* every step is either checked from its own sides by a :class:`Check` (``check(lhs, rhs, facts)``)
  or cites a registered lemma (:mod:`geoattn.symbolic.lemmas`);
* every checked step is mutation-tested: its check must reject the displayed ``rhs`` perturbed by a
  fresh symbol, by a factor 2 and by a transpose (where these change it); a check that accepts a
  mutant does not look at its sides, and the step cannot contribute to ``proved``;
* the steps connect: each step's ``lhs`` is the previous step's ``rhs`` or part of an expression
  already on the board (the subject, a stated fact, an earlier side);
* the last step ends at the conclusion, and the conclusion's two sides are joined by the steps.

See Note [checks see their sides].
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from ._validate import validate_derivation
from .steps import (  # the parts of a derivation, re-exported: proof is where users find them
    Check,
    DerivationReport,
    ProofFailed,
    Step,
    _latex,
    _text,
    det_rules,
    identity,
    in_algebra,
    relation,
    same,
)

__all__ = [
    "Check",
    "Step",
    "Derivation",
    "DerivationReport",
    "ProofFailed",
    "identity",
    "in_algebra",
    "relation",
    "same",
    "det_rules",
    "validate",
]

@dataclass(eq=False)
class Derivation:
    r"""An ordered list of steps that ends in the conclusion.

    Parameters
    ----------
    steps:
        the steps, in order.
    conclusion:
        the statement proved, a SymPy relation (``sp.Eq(lhs, rhs)``).
    assumptions:
        the hypotheses as LaTeX, for readers.
    facts:
        the hypotheses the checks may use, by name: name -> substitution dict (``{"A skew": {A.T: -A}}``).
    subject:
        expressions the derivation starts from besides the conclusion's left side (optional).
    remark:
        what the conclusion means, in LaTeX, when the relation alone does not say it.
    """

    steps: list[Step]
    conclusion: Any
    assumptions: list[str] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    subject: tuple = ()
    remark: str = ""

    @property
    def lemmas(self) -> list[Step]:
        """The steps that rest on a stated lemma."""
        return [s for s in self.steps if s.is_lemma]

    def conclusion_latex(self) -> str:
        """The conclusion in LaTeX."""
        # the remark is prose with some math in it: it is not set inside the formula (the JSON keeps it apart)
        return _latex(self.conclusion)

    def run(self) -> "Derivation":
        """Validate (see :func:`validate`); raise :class:`ProofFailed` when it is not a proof."""
        report = validate(self)
        if not report.ok:
            raise ProofFailed("; ".join(report.problems))
        return self

    def to_json(self) -> dict:
        """The derivation and the engine's account of it as a JSON-ready dict."""
        report = validate(self)
        return {
            "assumptions": list(self.assumptions),
            "facts": {k: {sp.sstr(a): sp.sstr(b) for a, b in v.items()} for k, v in self.facts.items()},
            "steps": [s.to_json() for s in self.steps],
            "conclusion": _text(self.conclusion),
            "conclusion_latex": self.conclusion_latex(),
            "remark": self.remark or None,
            **report.to_json(),
        }


_REPORTS: "weakref.WeakKeyDictionary[Derivation, DerivationReport]" = weakref.WeakKeyDictionary()


def validate(derivation: Derivation) -> DerivationReport:
    """Check every step from its sides, mutation-test it, check the links and the conclusion.

    The result is remembered for the derivation object (the engine and the checker share one run).
    """
    if not isinstance(derivation, Derivation):
        raise TypeError(f"Expected a Derivation. Got {type(derivation).__name__}.")
    if derivation in _REPORTS:
        return _REPORTS[derivation]
    report = validate_derivation(derivation)
    _REPORTS[derivation] = report
    return report
