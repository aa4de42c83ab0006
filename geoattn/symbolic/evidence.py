"""Verdicts and the evidence that backs them.

A claim's verdict is one of four levels, from strongest to weakest positive
evidence, plus the negative one:

``proved``
    a dimension-generic symbolic derivation whose every step SymPy verified;
``checked``
    an exact symbolic identity at every explicit size up to a stated bound;
``certified``
    exact rational evaluation at random points of a rational-function identity,
    with a Schwartz--Zippel bound on the probability of a false pass;
``refuted``
    an exact counterexample with rational entries, reproducible from a seed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from .proof import Derivation, ProofFailed, Step  # re-exported

__all__ = [
    "Level",
    "Step",
    "Derivation",
    "Counterexample",
    "Evidence",
    "Verdict",
    "ProofFailed",
]


class Level(str, enum.Enum):
    """Evidence levels, ordered by :attr:`rank` (higher is stronger)."""

    PROVED = "proved"
    CHECKED = "checked"
    CERTIFIED = "certified"
    REFUTED = "refuted"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"proved": 3, "checked": 2, "certified": 1, "refuted": 0, "error": -1}[self.value]

    def __str__(self) -> str:  # pragma: no cover - cosmetic
        return self.value


def _jsonable(value: Any) -> Any:
    if isinstance(value, sp.MatrixBase):
        return [[sp.sstr(x) for x in value.row(i)] for i in range(value.rows)]
    if isinstance(value, sp.Basic):
        return sp.sstr(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@dataclass
class Counterexample:
    """An exact witness that a claim is false.

    ``values`` maps the claim's variable names to exact (rational) matrices or
    to sizes; ``residual`` is the exact value that the claim says is zero (or
    the offending quantity, e.g. a Jacobian determinant minus one).
    """

    seed: int | None
    sizes: dict
    values: dict
    residual_name: str
    residual: Any
    description: str = ""

    def residual_float(self) -> float | None:
        try:
            r = self.residual
            if isinstance(r, sp.MatrixBase):
                return float(max(abs(sp.N(x)) for x in r)) if r.shape != (0, 0) else 0.0
            return float(abs(sp.N(r)))
        except (TypeError, ValueError):
            return None

    def summary(self) -> str:
        r = self.residual
        if isinstance(r, sp.MatrixBase) and len(r) > 6:
            nz = [x for x in r if x != 0]
            shown = f"{len(nz)} nonzero entries, max |entry| = {self.residual_float():.6g}"
        else:
            shown = sp.sstr(r)
        seed = "" if self.seed is None else f" seed={self.seed}"
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"{self.residual_name} = {shown} at {sizes}{seed}"

    def to_json(self) -> dict:
        return {
            "seed": self.seed,
            "sizes": dict(self.sizes),
            "values": _jsonable(self.values),
            "residual_name": self.residual_name,
            "residual": _jsonable(self.residual),
            "residual_abs_max": self.residual_float(),
            "description": self.description,
        }


@dataclass
class Evidence:
    """One piece of evidence produced by a checker."""

    level: Level
    method: str
    sizes: list[dict] = field(default_factory=list)
    points: int | None = None
    failure_bound: Any = None
    derivation: Derivation | None = None
    counterexample: Counterexample | None = None
    detail: str = ""

    def describe(self) -> str:
        parts = [self.method]
        if self.sizes:
            parts.append("sizes " + "; ".join(_size_str(s) for s in self.sizes))
        if self.points is not None:
            parts.append(f"{self.points} random points")
        if self.failure_bound is not None:
            parts.append(f"P(false pass) <= {_fmt_bound(self.failure_bound)}")
        if self.counterexample is not None:
            parts.append(self.counterexample.summary())
        return ", ".join(parts)

    def to_json(self) -> dict:
        return {
            "level": self.level.value,
            "method": self.method,
            "sizes": [dict(s) for s in self.sizes],
            "points": self.points,
            "failure_bound": None if self.failure_bound is None else _fmt_bound(self.failure_bound),
            "derivation": None if self.derivation is None else self.derivation.to_json(),
            "counterexample": None if self.counterexample is None else self.counterexample.to_json(),
            "detail": self.detail,
        }


def _size_str(size: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in size.items())


def _fmt_bound(bound: Any) -> str:
    try:
        b = sp.Rational(bound)
        if b == 0:
            return "0"
        exp10 = sp.floor(sp.log(b, 10))
        mant = b / sp.Integer(10) ** exp10
        return f"{float(mant):.2f}e{int(exp10)}"
    except (TypeError, ValueError):
        return str(bound)


@dataclass
class Verdict:
    """The computed verdict of one claim."""

    claim_id: str
    level: Level
    evidence: list[Evidence]
    seconds: float = 0.0
    error: str | None = None

    @property
    def strongest(self) -> Evidence | None:
        if not self.evidence:
            return None
        if self.level is Level.REFUTED:
            return next(e for e in self.evidence if e.level is Level.REFUTED)
        return max(self.evidence, key=lambda e: e.level.rank)

    @property
    def counterexample(self) -> Counterexample | None:
        ev = self.strongest
        return None if ev is None else ev.counterexample

    @property
    def derivation(self) -> Derivation | None:
        for ev in self.evidence:
            if ev.derivation is not None:
                return ev.derivation
        return None

    @classmethod
    def from_evidence(cls, claim_id: str, evidence: list[Evidence], seconds: float = 0.0) -> "Verdict":
        if not evidence:
            return cls(claim_id, Level.ERROR, [], seconds, error="checker produced no evidence")
        refuted = any(e.level is Level.REFUTED for e in evidence)
        positive = any(e.level.rank > 0 for e in evidence)
        if refuted and positive:
            return cls(
                claim_id,
                Level.ERROR,
                evidence,
                seconds,
                error="inconsistent evidence: a counterexample and a positive verdict",
            )
        if refuted:
            level = Level.REFUTED
        else:
            level = max((e.level for e in evidence), key=lambda lv: lv.rank)
        return cls(claim_id, level, evidence, seconds)
