"""The layer-map claims (linear-time form, invariant, inverse, volume) and their negative controls.

Counterexamples of the controls are confirmed by an independent float64 torch computation that
reuses only their rational inputs.
"""

import pytest
import sympy as sp
import torch

from geoattn import symbolic
from geoattn.symbolic import Level
from geoattn.symbolic.proof import validate
from geoattn.symbolic.claims import vp_flow
from geoattn.symbolic.claims.vp_flow import divergence_identity, exp_map_circle_identity
from geoattn.symbolic.claims.vp_linear import push_through_identity, sylvester_identity
from geoattn.symbolic.claims.vp_map import invariant_identity, make_inverse_claim, make_map_claim
from geoattn.symbolic.strategies import exact_check, search_counterexample

NEW = [
    "vp.push_through",
    "vp.push_through_invertible",
    "vp.exp_push_through",
    "vp.map_invariant",
    "vp.map_invariant.exp",
    "vp.map_inverse",
    "vp.map_volume_preserving.skew",
    "vp.map_volume_preserving.exp_skew",
]
EPS = torch.finfo(torch.float64).eps


def t(m) -> torch.Tensor:
    return torch.tensor([[float(x) for x in m.row(i)] for i in range(m.rows)], dtype=torch.float64)


def cayley(c: torch.Tensor) -> torch.Tensor:
    eye = torch.eye(c.shape[-1], dtype=c.dtype)
    return torch.linalg.solve(eye + c, eye - c, left=False)  # X (I + C) = I - C


def assert_confirms(float_residual: torch.Tensor, exact_residual: sp.Matrix, scale: float):
    """The float residual agrees entrywise with the exact one, which is clearly nonzero."""
    exact = t(exact_residual)
    tol = 100 * exact.numel() * EPS * scale
    assert torch.allclose(float_residual, exact, rtol=0, atol=tol), (float_residual, exact, tol)
    assert exact.abs().max() > 10 * tol


@pytest.fixture(scope="module")
def verdicts():
    return {cid: symbolic.get_claim(cid).check() for cid in NEW}


@pytest.mark.parametrize("cid", NEW)
def test_new_claim_reaches_expected_verdict(cid, verdicts):
    claim, v = symbolic.get_claim(cid), verdicts[cid]
    assert claim.family == "volume_preserving"
    assert v.level is claim.expected, v.error
    assert v.seconds < 10, f"{cid} took {v.seconds:.1f} s at the default depth"


@pytest.mark.parametrize("cid", NEW)
def test_proved_claims_have_a_verified_derivation_and_corroboration(cid, verdicts):
    v = verdicts[cid]
    if v.level is not Level.PROVED:
        pytest.skip(f"{cid} is {v.level.value}")
    steps = v.derivation.steps
    assert all(s.verified is not False for s in steps)
    assert sum(bool(s.verified) for s in steps) >= 2
    # every proved claim here is corroborated by exact evidence beyond the derivation
    proved = [e for e in v.evidence if e.level is Level.PROVED]
    assert len(v.evidence) > 1 or "random rational points" in proved[0].detail


def test_skew_map_keeps_exact_corroboration_for_small_and_tall_sizes(verdicts):
    v = verdicts["vp.map_volume_preserving.skew"]
    checked = [s for e in v.evidence if e.level is Level.CHECKED for s in e.sizes]
    certified = [s for e in v.evidence if e.level is Level.CERTIFIED for s in e.sizes]
    assert {"d": 3, "T": 1} in checked and {"d": 2, "T": 2} in checked
    assert any(s["d"] > s["T"] for s in certified)
    assert any(s.get("m") == 2 for s in checked), "the divergence formula is tested where its sign matters"
    assert v.level is Level.CHECKED and v.derivation is None


def test_divergence_formula_with_the_wrong_sign_fails():
    ok, _ = exact_check(divergence_identity(-1), [{"d": 2, "T": 2, "m": 2}, {"d": 2, "T": 3, "m": 2}])
    assert ok
    bad = divergence_identity(+1)
    ok, _ = exact_check(bad, [{"d": 2, "T": 2, "m": 2}])
    assert not ok
    ce = search_counterexample(bad, [{"d": 2, "T": 2, "m": 2}], seed=0, points=3)
    assert ce is not None and ce.residual[0] != 0
    # at odd m every trace in the formula vanishes, so the sign is not tested there
    assert exact_check(bad, [{"d": 2, "T": 2, "m": 3}])[0]


def test_flow_derivations_are_not_accepted_while_the_divergence_formula_is_unverified():
    """The engine refuses the flow arguments (their divergence formula is neither verified nor a registered lemma):
    the two volume claims are expected checked, not proved."""
    for build in (vp_flow.volume_flow_derivation, vp_flow.exp_flow_derivation):
        report = validate(build())
        assert not report.ok
        assert any("Expected a registered lemma" in p for p in report.problems), report.problems
    for cid in ("vp.map_volume_preserving.skew", "vp.map_volume_preserving.exp_skew"):
        assert symbolic.get_claim(cid).expected is Level.CHECKED


def test_push_through_needs_the_gram_matrix_on_the_right():
    # the false variant Z Cayley(Z^T A Z) = Cayley(A Z Z^T) Z
    ce = search_counterexample(push_through_identity(gram="left"), [{"d": 2, "T": 3}], seed=0, points=3)
    assert ce is not None
    Z, A = t(ce.values["Z"]), t(ce.values["A"])
    res = Z @ cayley(Z.T @ A @ Z) - cayley(A @ Z @ Z.T) @ Z
    assert_confirms(res, ce.residual, scale=1 + float(Z.abs().max()))


def test_push_through_with_general_A_holds_where_defined_but_can_be_undefined():
    # skewness is what makes I + Z^T A Z invertible: the identity itself needs only invertibility
    general = push_through_identity("general")
    assert search_counterexample(general, [{"d": 2, "T": 3}, {"d": 3, "T": 2}], seed=1, points=3) is None
    Z, A = sp.Matrix([[1, 0]]), sp.Matrix([[-1]])  # d = 1, T = 2, A = -1 (not skew): I + Z^T A Z is singular
    assert not general.valid({"d": 1, "T": 2}, Z, A)  # the identity's domain excludes it
    assert push_through_identity("skew").valid({"d": 1, "T": 2}, Z, sp.Matrix([[0]]))


def test_invariant_fails_for_general_A():
    ce = search_counterexample(invariant_identity("general"), [{"d": 2, "T": 2}, {"d": 2, "T": 3}], seed=0, points=3)
    assert ce is not None
    Z, A = t(ce.values["Z"]), t(ce.values["A"])
    Y = Z @ cayley(Z.T @ A @ Z)
    res = Y.T @ A @ Y - Z.T @ A @ Z
    assert_confirms(res, ce.residual, scale=float((Z.T @ A @ Z).abs().max()) + 1)


def test_wrong_sign_inverse_is_refuted():
    v = make_inverse_claim(wrong_sign=True, claim_id="neg.vp_inverse").check()
    assert v.level is Level.REFUTED
    ce = v.counterexample
    Z, A, Y = (t(ce.values[k]) for k in ("Z", "A", "Y"))

    def F(W):
        return W @ cayley(W.T @ A @ W)

    def G(W):  # the wrong sign: Lambda instead of Lambda^T
        return W @ cayley(W.T @ A @ W)

    res = torch.cat([G(F(Z)) - Z, F(G(Y)) - Y, cayley(Y.T @ A @ Y).T - cayley(-(Y.T @ A @ Y))])
    assert_confirms(res, ce.residual, scale=1 + float(torch.cat([Z, Y]).abs().max()))
    assert make_inverse_claim(claim_id="pos.vp_inverse").check().level is Level.PROVED


def test_arbitrary_weighting_map_is_refuted_and_skew_twin_holds():
    assert make_map_claim("arbitrary", "neg.vp_map_arbitrary").check().level is Level.REFUTED
    assert make_map_claim("skew", "pos.vp_map_skew").check().level is Level.CHECKED


def test_sylvester_identity_for_general_factors():
    ok, done = exact_check(sylvester_identity(True), [{"d": 1, "T": 3}, {"d": 3, "T": 1}, {"d": 2, "T": 2}])
    assert ok and len(done) == 3


def test_exp_circle_reduction_is_not_vacuous():
    """The T = 2 exact checks of the exponential map pass for skew A and detect a non-skew A,
    for which C(Z exp(C_12 J)) differs from C(Z) (the symmetric part of C is rotated)."""
    size = {"d": 2, "T": 2}
    for kind in ("det", "invariant"):
        assert exact_check(exp_map_circle_identity(kind), [size])[0]
    ident = exp_map_circle_identity("invariant")
    Z = sp.Matrix(2, 2, sp.symbols("z0:4", real=True))
    general = sp.Matrix([[1, 2], [0, 3]])
    assert ident.evaluate(size, {"Z": Z, "A": general}) != sp.zeros(2, 2)


def _shifted(dim, n, mm, trace, sign=-1):
    """A wrong formula: Tr(C^{k+1}) Tr(C^{m-k}) instead of Tr(C^{k+1}) Tr(C^{m-1-k})."""

    def tr_(e):
        return n if e == 0 else trace(e)

    def summand(q):
        return sign**q * tr_(mm) + tr_(q + 1) * tr_(mm - q)

    if isinstance(mm, int):
        return dim * tr_(mm) + sum((summand(q) for q in range(mm)), 0 * tr_(mm))
    return dim * tr_(mm) + sp.Sum(summand(vp_flow.k), (vp_flow.k, 0, mm - 1))


_DIV_FORMULA = vp_flow.div_formula


def _extra_term(dim, n, mm, trace, sign=-1):
    """A wrong formula with an extra Tr(C^m): still zero at odd m, but wrong at m = 1 and at explicit sizes."""
    return _DIV_FORMULA(dim, n, mm, trace, sign) + (n if mm == 0 else trace(mm))


@pytest.mark.parametrize("wrong", [_shifted, _extra_term])
def test_a_wrong_shared_formula_breaks_the_derivations_and_the_exact_check(monkeypatch, wrong):
    size = [{"d": 2, "T": 2, "m": 1}, {"d": 2, "T": 3, "m": 2}]
    assert exact_check(divergence_identity(), size)[0]
    monkeypatch.setattr(vp_flow, "div_formula", wrong)
    assert not exact_check(divergence_identity(), size)[0]


def test_push_through_rewrite_needs_its_hypothesis():
    """The push-through derivation's rewrite step holds by (I + M)Z = Z(I + C) and fails without that rewrite."""
    from geoattn.symbolic.claims import vp_linear

    deriv = vp_linear._push_through_derivation()
    assert validate(deriv).ok
    step = deriv.steps[3]
    assert step.check(step.lhs, step.rhs)
    assert not vp_linear.rewrite()(step.lhs, step.rhs)
