r"""The parts of a derivation the engine checks: steps, the checks that see their sides, and the engine's report.

:mod:`geoattn.symbolic.proof` assembles them into a :class:`~geoattn.symbolic.proof.Derivation` and validates it
(:mod:`geoattn.symbolic._validate`); this module depends on neither.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import sympy as sp
from sympy.matrices.expressions import Determinant, Inverse, MatrixExpr, Transpose, ZeroMatrix

from ._exact import point_differs, rational_zero

__all__ = ["Check", "Step", "DerivationReport", "ProofFailed", "identity", "in_algebra", "relation", "same",
           "det_rules", "scalar_zero", "zero_argument"]

# Note [checks see their sides]
# A step used to carry any zero-argument callable as its verifier: nothing tied it to the sides it
# displays, so ``Step(C^T, C, "obvious", lambda: True)`` "verified" a false step. A check now
# receives the step's displayed ``lhs`` and ``rhs`` (and the derivation's named facts) and decides
# from them alone. That alone does not stop a check that ignores its arguments, so the engine also
# runs every check on mutants of ``rhs`` (a fresh symbol added, a factor 2, a transpose): a sound
# check must reject each mutant that differs from ``rhs``. Mutants that are provably equal to
# ``rhs`` (2*0, the transpose of a symmetric expression) are skipped; the fresh-symbol mutant never is.


class ProofFailed(Exception):
    """A derivation is not a proof: a step failed, a link is missing or the conclusion does not follow."""


def same(lhs, rhs) -> bool:
    """Structural equality of two (matrix) expressions after evaluation and expansion.

    Decided first at a random rational point (an exactly nonzero difference there proves the sides different)
    and entrywise by exact rational-function arithmetic, then by SymPy's evaluation and simplification; the
    answers are those of the SymPy path (Note [fast paths decide only what they prove] in
    :mod:`geoattn.symbolic._exact`). Answers are remembered for hashable sides.
    """
    return _remembered(_SAME, _hashable(lhs, rhs), lambda: _same(lhs, rhs))


_CACHE_SIZE = 4096
_SAME: dict = {}
_APPLIED: dict = {}


def _remembered(cache: dict, key, compute):
    """``compute()``, remembered in ``cache`` under ``key`` (not at all when ``key`` is None); the cache is
    emptied when it holds ``_CACHE_SIZE`` answers."""
    if key is None:
        return compute()
    if key in cache:
        return cache[key]
    out = compute()
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    cache[key] = out
    return out


def _hashable(*items):
    try:
        hash(items)
    except TypeError:
        return None
    return items


def scalar_zero(x) -> bool:
    """Whether a scalar expression is zero: exact rational-function arithmetic where it decides, else
    ``simplify(x) == 0``."""
    fast = rational_zero(x) if isinstance(x, sp.Expr) else None
    return fast if fast is not None else sp.simplify(x) == 0


def _same(lhs, rhs) -> bool:
    if lhs == rhs:
        return True
    if point_differs(lhs, rhs):
        return False
    try:
        diff = (lhs - rhs).doit()
    except (TypeError, AttributeError):
        diff = sp.sympify(lhs) - sp.sympify(rhs)
    if isinstance(diff, ZeroMatrix) or diff == 0:
        return True
    if isinstance(diff, sp.MatrixBase):
        return all(scalar_zero(x) for x in diff)
    if isinstance(diff, MatrixExpr):
        try:
            expanded = diff.expand().doit()
        except AttributeError:
            return False
        return isinstance(expanded, ZeroMatrix) or expanded == 0
    return scalar_zero(diff)


def det_rules(expr):
    """Apply ``det(X^T) = det(X)`` and ``det(X^{-1}) = 1/det(X)``."""
    expr = expr.replace(
        lambda e: isinstance(e, Determinant) and isinstance(e.arg, Transpose),
        lambda e: Determinant(e.arg.arg),
    )
    return expr.replace(
        lambda e: isinstance(e, Determinant) and isinstance(e.arg, Inverse),
        lambda e: 1 / Determinant(e.arg.arg),
    )


def _apply(expr, pairs):
    """``expr`` evaluated, then each substitution ``(old, new)`` applied until nothing changes (at most 4 rounds)."""
    if not isinstance(expr, sp.Basic):
        return expr
    return _remembered(_APPLIED, _hashable(expr, tuple(pairs)), lambda: _apply_rounds(expr, pairs))


def _apply_rounds(expr, pairs):
    for _ in range(4):
        try:
            new = expr.doit()
        except (TypeError, AttributeError, ValueError):
            new = expr
        for old, repl in pairs:
            new = new.subs(old, repl)
        if new == expr:
            break
        expr = new
    return expr


@dataclass(frozen=True)
class Check:
    r"""A rule that decides a step ``lhs = rhs`` from its displayed sides.

    Parameters
    ----------
    name:
        how the rule is shown (``"identity"``, ``"functional calculus in A"``, ...).
    decide:
        ``decide(lhs, rhs, pairs) -> bool``, where ``pairs`` are the substitutions ``(old, new)``
        of the facts the check uses.
    facts:
        names of the derivation's facts the check may use; ``None`` means all of them.
    subs:
        substitutions of the check itself, ``(old, new)`` pairs (e.g. ``(A.T, -A)``), applied
        with the facts.
    """

    name: str
    decide: Callable[[Any, Any, list], bool]
    facts: tuple[str, ...] | None = None
    subs: tuple[tuple[Any, Any], ...] = ()

    def pairs(self, facts: Mapping[str, Mapping]) -> list:
        """The substitutions this check applies: its own, then the named (or all) facts."""
        names = list(facts) if self.facts is None else list(self.facts)
        missing = [nm for nm in names if nm not in facts]
        if missing:
            raise ProofFailed(f"Expected facts stated by the derivation ({', '.join(facts) or 'none'}). Got {missing}.")
        out = list(self.subs)
        for nm in names:
            out.extend(facts[nm].items())
        return out

    def __call__(self, lhs, rhs, facts: Mapping[str, Mapping] | None = None) -> bool:
        """Whether ``lhs = rhs`` holds by this rule under ``facts`` (name -> substitution dict)."""
        return bool(self.decide(lhs, rhs, self.pairs(facts or {})))


def identity(*subs, facts: tuple[str, ...] | None = None) -> Check:
    r"""Algebraic identity of the two sides, after applying the substitutions ``subs`` (``(old, new)`` pairs)
    and the derivation's facts (all, or those named in ``facts``), in the free matrix algebra with
    SymPy's evaluation rules (transposes and inverses of products, Kronecker and block rules).

    Examples
    --------
    ``Step(C.T, Z.T*A.T*Z, "transpose of a product", identity())``;
    ``Step(Z.T*A.T*Z, -C, "A^T = -A", identity((A.T, -A)))``.
    """

    def decide(lhs, rhs, pairs):
        return same(_apply(lhs, pairs), _apply(rhs, pairs))

    shown = ", ".join(f"{sp.sstr(a)} -> {sp.sstr(b)}" for a, b in subs)
    return Check("identity" + (f" with {shown}" if shown else ""), decide, facts, tuple(subs))


def in_algebra(sym: sp.MatrixSymbol, eps: int | None, facts: tuple[str, ...] | None = ()) -> Check:
    r"""Equality in the commutative algebra of rational functions (and ``exp``) of one matrix ``sym``, with
    the transpose rule ``sym^T = eps*sym`` (``eps=None``: no transposes allowed), see
    :func:`geoattn.symbolic.algebra.equal_in_algebra`."""
    from .algebra import equal_in_algebra

    def decide(lhs, rhs, pairs):
        return equal_in_algebra(_apply(lhs, pairs), _apply(rhs, pairs), sym, eps)

    return Check(f"functional calculus in {sym} (transpose rule {eps})", decide, facts)


def relation(fn: Callable[[Any, Any], bool], name: str) -> Check:
    r"""A check given by a function ``fn(lhs, rhs) -> bool`` of the displayed sides (facts are not applied).
    Like every check it is mutation-tested: ``fn`` must reject a perturbed ``rhs``."""
    return Check(name, lambda lhs, rhs, pairs: fn(lhs, rhs))


@dataclass
class Step:
    r"""One step ``lhs = rhs`` of a derivation and what justifies it.

    Parameters
    ----------
    lhs, rhs:
        the displayed sides (SymPy expressions; a text side can only be a lemma's).
    rule:
        the justification as shown to a reader.
    check:
        a :class:`Check`, or a function ``(lhs, rhs) -> bool`` (wrapped by :func:`relation`),
        that decides the step from its sides; ``None`` when the step cites ``lemma``.
    lemma:
        the name of a registered lemma (:mod:`geoattn.symbolic.lemmas`) the step rests on instead.
    relation:
        ``"="`` (default), ``"=>"``, ``"<=>"``, ``">="`` or ``"<="``.
    """

    lhs: Any
    rhs: Any
    rule: str
    check: Any = None
    lemma: str | None = None
    relation: str = "="
    verified: bool | None = field(default=None, compare=False)
    problem: str = field(default="", compare=False)

    @property
    def is_lemma(self) -> bool:
        """Whether the step rests on a stated lemma rather than a check."""
        return self.lemma is not None and self.check is None

    def latex(self) -> str:
        """The step in LaTeX."""
        rel = {"=": "=", "=>": r"\Longrightarrow", "<=>": r"\Longleftrightarrow", ">=": r"\geq", "<=": r"\leq"}.get(
            self.relation, self.relation
        )
        return f"{_latex(self.lhs)} {rel} {_latex(self.rhs)}"

    def text(self) -> str:
        """The step in plain text."""
        return f"{_text(self.lhs)} {self.relation} {_text(self.rhs)}"

    def to_json(self) -> dict:
        """The step as a JSON-ready dict."""
        return {
            "lhs": _text(self.lhs),
            "rhs": _text(self.rhs),
            "relation": self.relation,
            "latex": self.latex(),
            "rule": self.rule,
            "check": None if self.check is None else getattr(self.check, "name", "relation"),
            "lemma": self.lemma,
            "verified": self.verified,
            "problem": self.problem or None,
        }


def _latex(obj: Any) -> str:
    return obj if isinstance(obj, str) else _printed(obj, sp.latex)


def _text(obj: Any) -> str:
    return obj if isinstance(obj, str) else _printed(obj, sp.sstr)


@functools.lru_cache(maxsize=4096)
def _printed_cached(obj: Any, printer) -> str:
    return printer(obj)


def _printed(obj: Any, printer) -> str:
    """``printer(obj)``, remembered: a chain prints each side twice (a step's rhs is the next step's lhs, the last
    rhs the conclusion's side), and printing large matrix expressions is a tenth of the ledger's time."""
    try:
        return _printed_cached(obj, printer)
    except TypeError:  # unhashable
        return printer(obj)


@dataclass
class DerivationReport:
    """The engine's account of a derivation: counts, lemma names, problems (empty for a proof)."""

    steps: int
    verified: int
    lemmas: list[str]
    problems: list[str]

    @property
    def ok(self) -> bool:
        """Whether the derivation is a proof."""
        return not self.problems

    def summary(self) -> str:
        """``"n steps: k verified, m lemmas (names)"``."""
        names = sorted(set(self.lemmas))
        lem = f", {len(self.lemmas)} lemmas ({', '.join(names)})" if self.lemmas else ", 0 lemmas"
        return f"{self.steps} steps: {self.verified} verified{lem}"

    def to_json(self) -> dict:
        """The counts as a JSON-ready dict."""
        return {
            "n_steps": self.steps,
            "n_verified": self.verified,
            "n_lemmas": len(self.lemmas),
            "lemma_names": sorted(set(self.lemmas)),
            "summary": self.summary(),
            "problems": list(self.problems),
        }


def zero_argument(fn) -> bool:
    """Whether ``fn`` is a callable that takes no arguments (it cannot see a step's sides)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    required = [
        p for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return not required
