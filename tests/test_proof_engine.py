"""The proof engine's own guarantees: steps checked from their sides, mutation testing, connected chains,
levels earned by the engine. Each test is a negative control: an injected fault the engine must catch."""

from __future__ import annotations

import pytest
import sympy as sp
from sympy.matrices.expressions import Identity, Inverse, MatrixSymbol

from geoattn.symbolic import Claim
from geoattn.symbolic.evidence import Evidence, Level
from geoattn.symbolic.proof import Derivation, Step, identity, in_algebra, relation, validate

n = sp.Symbol("n", integer=True, positive=True)
A = MatrixSymbol("A", n, n)
I = Identity(n)
CAY = (I - A) * Inverse(I + A)


def _claim(checker, expected=Level.PROVED):
    return Claim(id="user.test", title="t", statement="s", latex="s", source="test", expected=expected, checker=checker)


def _proof_evidence(deriv):
    return lambda ctx: [Evidence(Level.PROVED, "derivation", derivation=deriv)]


def test_a_true_chain_is_accepted():
    prod = Inverse(I - A) * (I + A) * CAY
    deriv = Derivation(
        steps=[
            Step(CAY.T * CAY, prod, "transpose rules; A^T = -A", identity((A.T, -A))),
            Step(prod, I, "functional calculus", in_algebra(A, -1)),
        ],
        conclusion=sp.Eq(CAY.T * CAY, I, evaluate=False),
    )
    report = validate(deriv)
    assert report.ok, report.problems
    assert report.summary() == "2 steps: 2 verified, 0 lemmas"
    assert _claim(_proof_evidence(deriv)).check().level is Level.PROVED


def test_lambda_true_step_is_rejected():
    """The false claim 'Cayley(A) is symmetric for every A' with a zero-argument verifier."""
    deriv = Derivation(steps=[Step(CAY.T, CAY, "obvious", lambda: True)], conclusion=sp.Eq(CAY.T, CAY, evaluate=False))
    report = validate(deriv)
    assert not report.ok
    assert "zero-argument callable" in report.problems[0] and "Expected" in report.problems[0]
    verdict = _claim(_proof_evidence(deriv)).check()
    assert verdict.level is Level.ERROR
    assert "proved not earned" in verdict.error


def test_check_ignoring_its_sides_is_caught_by_mutation():
    deriv = Derivation(
        steps=[Step(CAY.T, CAY, "obvious", relation(lambda lhs, rhs: True, "always"))],
        conclusion=sp.Eq(CAY.T, CAY, evaluate=False),
    )
    report = validate(deriv)
    assert not report.ok
    assert "survives its mutation (a fresh symbol added" in report.problems[0]
    assert _claim(_proof_evidence(deriv)).check().level is Level.ERROR


def test_check_that_ignores_only_some_perturbations_is_caught():
    """A check that looks at the rhs's free symbols only: the factor-2 mutant survives it."""
    def weak(lhs, rhs):
        return rhs.free_symbols == lhs.free_symbols

    deriv = Derivation(steps=[Step(CAY.T, CAY, "weak", weak)], conclusion=sp.Eq(CAY.T, CAY, evaluate=False))
    problems = validate(deriv).problems
    assert any("survives its mutation (a factor 2" in p for p in problems), problems


def test_chain_with_a_gap_is_rejected():
    B = MatrixSymbol("B", n, n)
    deriv = Derivation(
        steps=[
            Step(A + B, B + A, "commutativity", identity()),
            Step(2 * B, B + B, "unrelated", identity()),  # 2B is nowhere on the board
        ],
        conclusion=sp.Eq(A + B, B + B, evaluate=False),
    )
    problems = validate(deriv).problems
    assert any("a gap in the chain" in p and "step 2" in p for p in problems), problems


def test_conclusion_not_matching_the_last_step_is_rejected():
    x = sp.Symbol("x")
    deriv = Derivation(steps=[Step(x * (x + 1), x**2 + x, "expand", identity())],
                       conclusion=sp.Eq(x * (x + 1), x**2 + 2 * x, evaluate=False))
    problems = validate(deriv).problems
    assert any("Expected the last step to end at the conclusion" in p for p in problems), problems


def test_text_conclusion_is_rejected():
    deriv = Derivation(steps=[Step(A + A, 2 * A, "double", identity())], conclusion="A + A = 2A")
    problems = validate(deriv).problems
    assert any("Expected the conclusion as a SymPy relation" in p for p in problems), problems


def test_checker_claiming_proved_for_itself_is_refused():
    verdict = _claim(lambda ctx: [Evidence(Level.PROVED, "trust me")]).check()
    assert verdict.level is Level.ERROR
    assert "Expected proved evidence to carry a Derivation" in verdict.error


def test_refuted_without_a_nonzero_residual_is_refused():
    from geoattn.symbolic.evidence import Counterexample

    ce = Counterexample(seed=0, sizes={"n": 1}, values={}, residual_name="r", residual=sp.Integer(0))
    verdict = _claim(lambda ctx: [Evidence(Level.REFUTED, "mine", counterexample=ce)], Level.REFUTED).check()
    assert verdict.level is Level.ERROR and "exactly nonzero residual" in verdict.error


def test_unknown_lemma_is_rejected_and_known_lemma_is_counted():
    x = MatrixSymbol("x", n, 1)
    bad = Derivation(steps=[Step(x.T * x, sp.ZeroMatrix(1, 1), "folklore", lemma="folklore")],
                     conclusion=sp.Eq(x.T * x, sp.ZeroMatrix(1, 1), evaluate=False))
    assert any("Expected a registered lemma" in p for p in validate(bad).problems)
    good = Derivation(steps=[Step(x, sp.ZeroMatrix(n, 1), "sum of squares", lemma="sum_of_squares_real")],
                      conclusion=sp.Eq(x, sp.ZeroMatrix(n, 1), evaluate=False))
    report = validate(good)
    assert report.ok and report.lemmas == ["sum_of_squares_real"]
    assert report.summary() == "1 steps: 0 verified, 1 lemmas (sum_of_squares_real)"


def test_false_step_with_a_real_check_fails():
    deriv = Derivation(steps=[Step(CAY.T, CAY, "claimed symmetric", identity())],
                       conclusion=sp.Eq(CAY.T, CAY, evaluate=False))
    problems = validate(deriv).problems
    assert any("does not confirm the step" in p for p in problems), problems


@pytest.mark.parametrize("claim_id", ["cayley.orthogonal", "cayley.det_one", "cayley.well_defined"])
def test_rewritten_cayley_claims_are_proved_by_the_engine(claim_id):
    from geoattn.symbolic import get_claim

    verdict = get_claim(claim_id).check()
    assert verdict.level is Level.PROVED, verdict.error
    assert validate(verdict.derivation).ok
