"""The engine must refute false variants of the seeds' claims and prove their true twins.

A checker that cannot return ``refuted`` is a defect; these are its negative controls.
"""

import pytest
import sympy as sp

from geoattn.symbolic import Derivation, Level, MatrixIdentity, ProofFailed, Step, algebra as alg
from geoattn.symbolic.claims.cayley import make_cayley_orthogonal
from geoattn.symbolic.claims.linear_symplectic import make_map_symplectic, make_reweighting
from geoattn.symbolic.claims.models import make_gradient_claim
from geoattn.symbolic.claims.vectorisation import make_lift_claim, make_vec_claim
from geoattn.symbolic.claims.volume_preserving import make_skew_weighting
from geoattn.symbolic.claims.vp_map import make_map_claim
from geoattn.symbolic.strategies import certify, exact_check, exact_evidence, search_counterexample

PAIRS = [
    # (false variant, true twin)
    (lambda: make_cayley_orthogonal("general", "neg.cayley_general"), lambda: make_cayley_orthogonal("skew", "pos.cayley")),
    (lambda: make_cayley_orthogonal("symmetric", "neg.cayley_sym"), lambda: make_cayley_orthogonal("skew", "pos.cayley2")),
    (lambda: make_reweighting(False, "neg.reweight"), lambda: make_reweighting(True, "pos.reweight")),
    (lambda: make_map_symplectic(False, "neg.lsa"), lambda: make_map_symplectic(True, "pos.lsa")),
    (lambda: make_vec_claim("seed", "neg.vec_seed"), lambda: make_vec_claim("exact", "pos.vec")),
    (lambda: make_vec_claim("blockdiag", "neg.vec_blockdiag"), lambda: make_vec_claim("exact", "pos.vec2")),
    (lambda: make_vec_claim("column_major", "neg.vec_colmajor"), lambda: make_vec_claim("exact", "pos.vec3")),
    (lambda: make_lift_claim("orthogonal", "general", "neg.lift_o"), lambda: make_lift_claim("orthogonal", "cayley", "pos.lift_o")),
    (lambda: make_lift_claim("symplectic", "general", "neg.lift_s"), lambda: make_lift_claim("symplectic", "cayley", "pos.lift_s")),
    (lambda: make_skew_weighting("general", "neg.skew_w"), lambda: make_skew_weighting("skew", "pos.skew_w")),
    (lambda: make_map_claim("arbitrary", "neg.vp_map"), lambda: make_map_claim("skew", "pos.vp_map")),
    (lambda: make_gradient_claim(False, "neg.gradient_untied"), lambda: make_gradient_claim(True, "pos.gradient")),
]


@pytest.mark.parametrize("false_claim,true_claim", PAIRS, ids=[f"pair{i}" for i in range(len(PAIRS))])
def test_false_variant_refuted_true_twin_holds(false_claim, true_claim):
    bad = false_claim().check()
    assert bad.level is Level.REFUTED, bad.error
    assert bad.counterexample is not None
    good = true_claim().check()
    assert good.level in (Level.PROVED, Level.CHECKED), good.error


def test_wrong_derivation_step_fails():
    n = sp.Symbol("n", integer=True, positive=True)
    A = sp.MatrixSymbol("A", n, n)
    I = sp.Identity(n)
    C = (I - A) * sp.Inverse(I + A)
    bad = Derivation(
        steps=[Step(C.T * C, 2 * I, "wrong", lambda: alg.equal_in_algebra(C.T * C, 2 * I, A, -1))],
        conclusion="false",
    )
    with pytest.raises(ProofFailed):
        bad.run()


def test_functional_calculus_refuses_non_skew():
    n = sp.Symbol("n", integer=True, positive=True)
    A = sp.MatrixSymbol("A", n, n)
    I = sp.Identity(n)
    C = (I - A) * sp.Inverse(I + A)
    assert alg.equal_in_algebra(C.T * C, I, A, -1)
    assert not alg.equal_in_algebra(C.T * C, I, A, None)  # no transpose rule: not provable
    assert not alg.equal_in_algebra(C.T * C, I, A, +1)  # symmetric A: false


def _false_identity():
    # (A + B)^2 = A^2 + 2AB + B^2 fails for non-commuting matrices
    def residual(size, A, B):
        return ((A + B) ** 2 - A**2 - 2 * A * B - B**2).applyfunc(sp.expand)

    return MatrixIdentity(
        "(A+B)^2 - A^2 - 2AB - B^2",
        variables=lambda s: {"A": alg.general("a", s["n"], s["n"]), "B": alg.general("b", s["n"], s["n"])},
        residual=residual,
    )


def test_search_exact_and_certify_refute_false_identity():
    ident = _false_identity()
    assert search_counterexample(ident, [{"n": 2}], seed=1) is not None
    ok, _ = exact_check(ident, [{"n": 1}, {"n": 2}])
    assert not ok
    ev = exact_evidence(ident, [{"n": 2}], method="m", seed=3)
    assert ev.level is Level.REFUTED
    cert = certify(ident, [{"n": 2}], seed=0, points=3, degree_bound=lambda s: 2, method="m")
    assert cert.level is Level.REFUTED


def test_true_identity_passes_every_strategy():
    def residual(size, A, B):
        return ((A + B).T - A.T - B.T).applyfunc(sp.expand)

    ident = MatrixIdentity(
        "(A+B)^T - A^T - B^T",
        variables=lambda s: {"A": alg.general("a", s["n"], s["n"]), "B": alg.general("b", s["n"], s["n"])},
        residual=residual,
    )
    assert search_counterexample(ident, [{"n": 2}, {"n": 3}], seed=1) is None
    assert exact_check(ident, [{"n": 1}, {"n": 2}, {"n": 3}])[0]
    cert = certify(ident, [{"n": 3}], seed=0, points=4, degree_bound=lambda s: 1, method="m")
    assert cert.level is Level.CERTIFIED
    assert sp.Rational(cert.failure_bound) <= (sp.Rational(1, 2 * 2**20 + 1)) ** 4


def test_inconsistent_evidence_is_an_error():
    from geoattn.symbolic import Counterexample, Evidence, Verdict

    ce = Counterexample(0, {"n": 1}, {}, "r", sp.Integer(1))
    v = Verdict.from_evidence("x", [Evidence(Level.PROVED, "p"), Evidence(Level.REFUTED, "r", counterexample=ce)])
    assert v.level is Level.ERROR


def test_crashing_checker_is_an_error():
    from geoattn.symbolic import Claim, check

    def boom(ctx):
        raise RuntimeError("boom")

    claim = Claim(id="neg.crash", title="t", statement="s", latex="l", source="000_x.txt", family="cayley",
                  expected=Level.PROVED, checker=boom)
    v = check(claim)
    assert v.level is Level.ERROR and "boom" in v.error


def test_wrong_backward_formulas_are_refuted():
    from geoattn.symbolic.claims.kernels import make_vjp_claim
    from geoattn.symbolic.claims.kernels_spectral import exp_vjp_identity

    # -1/2 (I + C)^T G (I + C)^T: the forward output must be used, not C
    assert make_vjp_claim("input", "neg.vjp").check().level is Level.REFUTED
    assert make_vjp_claim("exact", "pos.vjp").check().level is Level.PROVED
    # the Daleckii-Krein adjoint needs the conjugate of Phi
    assert search_counterexample(exp_vjp_identity(conj=False), [{"T": 2}], seed=0, points=1) is not None
    assert search_counterexample(exp_vjp_identity(conj=True), [{"T": 2}], seed=0, points=1) is None


def test_wrong_taylor_schemes_are_refuted():
    from geoattn.symbolic import expressions as ex
    from geoattn.symbolic.claims.taylor import make_remainder_claim, make_taylor_form_claim, make_taylor_vjp_claim

    def bad_forward(m, r):  # one coefficient off by 1/1000
        b = ex.taylor_ps_bindings(m, r)
        name, expr = b[-1]
        return b[:-1] + [(name, expr + ex.X**2 / 1000)]

    def bad_backward(m, r):  # the transpose of G where G belongs
        b = ex.taylor_ps_vjp_bindings(m, r)
        name, expr = b[-1]
        return b[:-1] + [(name, expr - ex.G + ex.G.T)]

    assert make_taylor_form_claim(bad_forward, "neg.taylor_form").check().level is Level.REFUTED
    assert make_taylor_vjp_claim(bad_backward, "neg.taylor_vjp").check().level is Level.REFUTED
    assert make_taylor_form_claim(None, "pos.taylor_form").check().level is Level.PROVED
    # at ||X|| <= 1 the degrees are too low for float64: the certificate must not go through
    v = make_remainder_claim(1, "neg.taylor_remainder").check()
    assert v.level is Level.ERROR and "does not confirm the step" in v.error
    assert make_remainder_claim(sp.Rational(1, 2), "pos.taylor_remainder").check().level is Level.PROVED
