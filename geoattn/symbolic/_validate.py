"""The engine's validation of a derivation (Note [checks see their sides] in :mod:`geoattn.symbolic.proof`)."""

from __future__ import annotations

import itertools

import sympy as sp
from sympy.matrices.expressions import MatrixExpr, MatrixSymbol

from .lemmas import LEMMAS, is_known
from .steps import _apply, Check, DerivationReport, Step, relation, same, scalar_zero, zero_argument

_MUTANT = itertools.count()


def _fresh_like(rhs):
    k = next(_MUTANT)
    if isinstance(rhs, MatrixExpr):
        return MatrixSymbol(f"mutant_{k}", *rhs.shape)
    return sp.Symbol(f"mutant_{k}")


def _zero(expr) -> bool:
    if isinstance(expr, sp.MatrixBase):
        return False  # simplify(M) == 0 compares a matrix with a number: never zero (the factor-2 mutant is kept)
    try:
        return same(expr, 0 * expr) if isinstance(expr, MatrixExpr) else scalar_zero(expr)
    except Exception:  # noqa: BLE001 - undecidable counts as nonzero
        return False


def mutants(rhs, pairs=()) -> list[tuple[str, object]]:
    """The perturbations of ``rhs`` a sound check must reject: a fresh symbol added (always), a factor 2
    (unless ``rhs`` is zero) and a transpose (for square matrices not provably symmetric under ``pairs``,
    the substitutions of the facts the check uses)."""
    out = [("a fresh symbol added", rhs + _fresh_like(rhs))]
    if not _zero(rhs):
        out.append(("a factor 2", 2 * rhs))
    if isinstance(rhs, MatrixExpr) and rhs.shape[0] == rhs.shape[1]:
        try:
            symmetric = same(_apply(rhs.T, pairs), _apply(rhs, pairs))
        except Exception:  # noqa: BLE001
            symmetric = False
        if not symmetric:
            out.append(("a transpose", rhs.T))
    return out


def _as_check(step: Step):
    """The step's check, or a message saying why it has none that can see its sides."""
    chk = step.check
    if chk is None:
        return None, ""
    if isinstance(chk, Check):
        return chk, ""
    if callable(chk) and zero_argument(chk):
        return None, (
            "Expected a check of the step's displayed sides (a Check such as identity() or in_algebra(...), "
            "or a function (lhs, rhs) -> bool). Got a zero-argument callable, which cannot see them."
        )
    if callable(chk):
        return relation(chk, getattr(chk, "__name__", "relation")), ""
    return None, f"Expected a Check or a function (lhs, rhs) -> bool. Got {type(chk).__name__}."


def _run_step(step: Step, facts: dict) -> str:
    """Check one step and its mutants; return the problem ('' when it verified)."""
    if step.is_lemma:
        if not is_known(step.lemma):
            known = ", ".join(sorted(LEMMAS))
            return f"Expected a registered lemma ({known}) or ledger:<claim id>. Got {step.lemma!r}."
        return ""
    if step.check is None:
        return "Expected a check of the step's sides or a registered lemma. Got neither."
    chk, why = _as_check(step)
    if chk is None:
        return why
    if isinstance(step.lhs, str) or isinstance(step.rhs, str):
        return "Expected SymPy sides for a checked step (text sides can only cite a lemma). Got text."
    try:
        ok = chk(step.lhs, step.rhs, facts)
    except Exception as exc:  # noqa: BLE001 - a crashing check does not verify
        return f"check {chk.name!r} raised {exc!r}"
    if not ok:
        return f"check {chk.name!r} does not confirm the step"
    for label, mutant in mutants(step.rhs, chk.pairs(facts)):
        try:
            survived = chk(step.lhs, mutant, facts)
        except Exception:  # noqa: BLE001 - rejecting a mutant by raising is rejecting it
            survived = False
        if survived:
            return f"check {chk.name!r} survives its mutation ({label} to the rhs): it does not decide from the sides"
    return ""


def _key(expr):
    return ("text", expr) if isinstance(expr, str) else expr


def _evaluated(expr):
    try:
        return expr.doit()
    except Exception:  # noqa: BLE001 - an expression SymPy cannot evaluate stays as written
        return expr


def _on_board(expr, board: list) -> bool:
    """Whether ``expr`` (as written or evaluated) is, or is part of, an expression on the board."""
    if isinstance(expr, str):
        return any(isinstance(b, str) and b == expr for b in board)
    exprs = [b for b in board if isinstance(b, sp.Basic)]
    # the forms as written first: evaluating (a matrix derivative, a large product) is only needed when they miss,
    # and the answer is the same either way
    if any(b == expr or b.has(expr) for b in exprs):
        return True
    forms = {expr, _evaluated(expr)}
    for b in exprs:
        for bb in {b, _evaluated(b)}:
            if any(bb == f or bb.has(f) for f in forms):
                return True
    return False


class _Components:
    def __init__(self):
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a, b):
        self.parent[self.find(a)] = self.find(b)


def _conclusion_sides(conclusion):
    if isinstance(conclusion, sp.Equality):
        return conclusion.lhs, conclusion.rhs
    if isinstance(conclusion, tuple) and len(conclusion) == 2 and not any(isinstance(c, str) for c in conclusion):
        return conclusion
    return None


def validate_derivation(deriv) -> DerivationReport:
    # deriv: a geoattn.symbolic.proof.Derivation (not imported here: proof imports this module)
    """Run every check (with mutants), then the links and the conclusion; see :func:`~.proof.validate`."""
    problems: list[str] = []
    verified = 0
    lemmas: list[str] = []
    for k, step in enumerate(deriv.steps, 1):
        problem = _run_step(step, deriv.facts)
        step.problem = problem
        step.verified = None if (step.is_lemma and not problem) else not problem
        if problem:
            problems.append(f"step {k} ({step.text()}): {problem}")
        elif step.is_lemma:
            lemmas.append(step.lemma)
        else:
            verified += 1
    sides = _conclusion_sides(deriv.conclusion)
    if sides is None:
        problems.append(
            f"Expected the conclusion as a SymPy relation (sp.Eq(lhs, rhs)). Got {type(deriv.conclusion).__name__}: "
            f"{deriv.conclusion!r}."
        )
        return DerivationReport(len(deriv.steps), verified, lemmas, problems)
    if not deriv.steps:
        problems.append("Expected at least one step. Got none.")
        return DerivationReport(0, 0, [], problems)
    board = [sides[0], *deriv.subject]
    for fact in deriv.facts.values():
        for a, b in fact.items():
            board += [a, b]
    comps = _Components()
    for k, step in enumerate(deriv.steps, 1):
        prev = deriv.steps[k - 2].rhs if k > 1 else None
        linked = (prev is not None and _key(step.lhs) == _key(prev)) or _on_board(step.lhs, board)
        if not linked:
            problems.append(
                f"step {k}: Expected its lhs to be the previous rhs or part of an expression already on the board "
                f"(the conclusion's lhs, the subject, a fact, an earlier side). Got {step.text()}, a gap in the chain."
            )
        board += [step.lhs, step.rhs]
        comps.join(_key(step.lhs), _key(step.rhs))
    last = deriv.steps[-1].rhs
    if not any(_key(last) == _key(s) for s in sides):
        problems.append(
            f"Expected the last step to end at the conclusion {sp.sstr(sides[0])} = {sp.sstr(sides[1])}. "
            f"Got a last rhs of {_text(last)}."
        )
    elif comps.find(_key(sides[0])) != comps.find(_key(sides[1])):
        problems.append(
            f"Expected the steps to join the conclusion's sides {sp.sstr(sides[0])} and {sp.sstr(sides[1])}. "
            "Got no chain of steps between them."
        )
    return DerivationReport(len(deriv.steps), verified, lemmas, problems)


def _text(obj) -> str:
    return obj if isinstance(obj, str) else sp.sstr(obj)
