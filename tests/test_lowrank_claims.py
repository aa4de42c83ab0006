"""The low-rank form of volume-preserving attention and its backward passes (ledger ``vp.lowrank_*``).

Each claim reaches its verdict; false variants (a non-skew ``A``, wrong backward bindings, a
wrong free-algebra step, a wrong chain-rule reference) are caught; and the generated torch
kernels agree in float64 with autograd through the ``T x T`` form.
"""

import pytest
import sympy as sp
import torch

from geoattn.symbolic import Derivation, Level, ProofFailed, Step, get_claim
from geoattn.symbolic import algebra as alg
from geoattn.symbolic import expressions as ex
from geoattn.symbolic import kernel_table as kt
from geoattn.symbolic.claim import CheckContext
from geoattn.symbolic.claims import _free_algebra as fa
from geoattn.symbolic.claims import _lowrank_cayley as lc
from geoattn.symbolic.claims import _lowrank_exact as lx
from geoattn.symbolic.claims import _lowrank_exp as le
from geoattn.symbolic.claims import lowrank as lr
from geoattn.symbolic.strategies import exact_check, search_counterexample

EXPECTED = {
    "vp.lowrank_form": Level.PROVED,
    "vp.lowrank_cayley_vjp": Level.PROVED,
    "vp.lowrank_exp_vjp": Level.PROVED,
}


@pytest.mark.parametrize("claim_id", sorted(EXPECTED))
def test_claim_reaches_expected_verdict(claim_id):
    claim = get_claim(claim_id)
    assert claim.expected is EXPECTED[claim_id]
    v = claim.check()
    assert v.level is EXPECTED[claim_id], v.error
    d = v.derivation
    assert d is not None and all(s.verified is not False for s in d.steps)
    assert sum(bool(s.verified) for s in d.steps) > len(d.lemmas)


def test_cayley_vjp_has_symbolic_identity_and_dual_confirmation():
    v = get_claim("vp.lowrank_cayley_vjp").check()
    checked = [e for e in v.evidence if e.level is Level.CHECKED]
    assert checked and checked[0].sizes == lc.EXACT_SIZES
    assert "dual-number gradient" in v.strongest.detail


def test_kernel_specs_cite_these_claims():
    cited = {c for spec in kt.KERNELS if spec.name.startswith(("vp_lowrank", "cayley_minus"))
             and not spec.name.endswith("skew_small") for c in spec.claims}  # that one: kernels.cayley_skew_small
    assert cited == set(EXPECTED)


# -- negative controls ----------------------------------------------------------------------


def test_general_A_breaks_the_form():
    v = lr.make_lowrank_form_claim("general", "neg.lowrank_form").check()
    assert v.level is Level.REFUTED, v.error
    ce = v.counterexample
    assert ce is not None and any(e != 0 for e in ce.residual)
    assert ce.values["A"] != -ce.values["A"].T  # the point really has a non-skew A
    # the stored point is the evaluated one: Q has exactly orthonormal columns
    Q = ce.values["Q"]
    assert Q.T * Q == sp.eye(Q.cols)
    assert lr.lowrank_form_identity("general").evaluate(ce.sizes, ce.values) == ce.residual


def _flip_gx_second_term(bindings):
    out = []
    for name, expr in bindings:
        if name == "gx":
            with_q = [a for a in expr.args if ex.Qf in a.atoms(sp.MatrixSymbol)]
            rest = [a for a in expr.args if a not in with_q]
            assert len(with_q) == 1 and rest
            expr = sp.MatAdd(*rest) - with_q[0]
        out.append((name, expr))
    return out


def test_wrong_cayley_binding_is_refuted():
    bad = _flip_gx_second_term(ex.LOWRANK_CAYLEY_VJP)
    assert bad != ex.LOWRANK_CAYLEY_VJP
    v = lc.make_cayley_vjp_claim(bad, "neg.lowrank_cayley_vjp", Level.REFUTED).check()
    assert v.level is Level.REFUTED, v.error
    assert any(e != 0 for e in v.counterexample.residual)
    with pytest.raises(ProofFailed):
        lc.cayley_vjp_derivation(bad).run()
    ok, _ = exact_check(lc.cayley_vjp_field_identity(bad), lc.EXACT_SIZES)
    assert not ok
    ok, _ = exact_check(lc.cayley_vjp_field_identity(), lc.EXACT_SIZES)
    assert ok


def test_wrong_exp_binding_is_refuted():
    bad = _flip_gx_second_term(ex.LOWRANK_EXP_VJP)
    v = le.make_exp_vjp_claim(bad, "neg.lowrank_exp_vjp", Level.REFUTED).check()
    assert v.level is Level.REFUTED, v.error
    with pytest.raises(ProofFailed):
        le.exp_vjp_derivation(bad).run()


def test_false_free_algebra_steps_fail():
    Q, Qt, S, W = fa.Q, fa.Qt, fa.S, fa.W
    assert not fa.nc_equal(Q * Qt, 1)  # Q Q^T = I is not a consequence of Q^T Q = I
    assert fa.nc_equal(Qt * Q, 1)
    # the induction step needs Q^T Q = I: without the rule it is not an identity
    n = sp.Symbol("n", integer=True, positive=True)
    assert not fa.nc_equal(Q * S**n * Qt * Q * S * Qt, Q * S ** (n + 1) * Qt, ())
    assert fa.nc_equal(Q * S**n * Qt * Q * S * Qt, Q * S ** (n + 1) * Qt)
    # products do not commute
    assert not fa.nc_equal(W * S, S * W)
    lhs, rhs = (Q * S * Qt) ** 2, Q * S**2 * Qt
    bad = Derivation(steps=[Step(lhs, rhs, "no Q^T Q = I", lambda: fa.nc_equal(lhs, rhs, ()))], conclusion="false")
    with pytest.raises(ProofFailed):
        bad.run()


def test_transpose_is_an_anti_automorphism():
    Q, R, A = fa.Q, fa.R, fa.An
    e = 2 * Q * R * A + sp.Rational(1, 2) * R
    assert fa.nc_transpose(e) == 2 * fa.nc("A^T") * fa.Rt * fa.Qt + sp.Rational(1, 2) * fa.Rt
    assert sp.expand(fa.nc_transpose(fa.nc_transpose(e)) - e) == 0


def test_wrong_chain_rule_reference_is_caught_by_dual_numbers():
    def wrong_reference(x, A, G):  # cayley.vjp without its factor -1/2
        e = sp.eye(x.rows)
        lam = alg.cayley(x * A * x.T)
        return lx.chain_rule_gradient(x, A, G, lam, (e + lam).T * (x * G.T) * (e + lam).T)

    ctx = CheckContext(claim_id="neg.dual")
    bad = lx.reference_dual_evidence(ctx, alg.cayley, wrong_reference, lc.DUAL_SIZE, what="wrong")
    assert bad is not None and bad.level is Level.ERROR
    assert any(e != 0 for e in bad.counterexample.residual)
    good = lx.reference_dual_evidence(ctx, alg.cayley, lx.cayley_chain_reference, lc.DUAL_SIZE, what="Cayley")
    assert good is None


def test_exp_polynomial_part_is_not_vacuous():
    # K2 with the wrong sign of -S would break part (ii)/(iii): check the identity sees K2 at all
    ident = le.exp_vjp_identity()
    size = lx.FORM_SIZES[0]
    assert search_counterexample(ident, [size], seed=3, points=2) is None
    # patched in _lowrank_exp (le), where exp_vjp_identity looks _poly_phi up
    orig = le._poly_phi
    try:
        le._poly_phi = lambda coeffs, X: orig(coeffs, -X)
        assert search_counterexample(le.exp_vjp_identity(), [size], seed=3, points=2) is not None
    finally:
        le._poly_phi = orig


# -- float64 cross-check of the generated kernels ---------------------------------------------


def _point(T, d, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, d, dtype=torch.float64, generator=g)
    A = torch.randn(d, d, dtype=torch.float64, generator=g) * 0.5
    A = A - A.mT
    gy = torch.randn(T, d, dtype=torch.float64, generator=g)
    return x, A, gy


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("T,d,seed", [(7, 3, 0), (5, 4, 1)])
def test_generated_backward_matches_autograd_of_full_form(activation, T, d, seed):
    from geoattn.kernels import _generated as gen
    from geoattn.kernels import _lowrank

    x, A, gy = _point(T, d, seed)
    xr, Ar = x.clone().requires_grad_(), A.clone().requires_grad_()
    want_x, want_A = torch.autograd.grad(_lowrank.vp_full(xr, Ar, activation), (xr, Ar), gy)
    with torch.no_grad():
        Q, R, S, W = _lowrank._small_factors(x, A, activation)
        if activation == "cayley":
            gx, gA = gen.vp_lowrank_cayley_vjp(Q, R, W, A, gy)
        else:
            Y1 = gen.vp_lowrank_project(Q, gy)
            K1, K2 = _lowrank._exp_frechet_blocks(S, R, Y1)
            gx, gA = gen.vp_lowrank_exp_vjp(Q, R, W, A, gy, Y1, K1, K2)
    # k * n * eps, scaled by the gradient's magnitude and by 1 + |C|_2 (cond(I + C) for skew C,
    # and the relative sensitivity of exp(C) is of the same order)
    eps = torch.finfo(torch.float64).eps
    cond = 1 + float(torch.linalg.matrix_norm(x @ A @ x.mT, ord=2))
    for got, want in ((gx, want_x), (gA, want_A)):
        tol = 32 * T * d * eps * (1 + float(want.abs().max())) * cond
        assert got.shape == want.shape
        assert float((got - want).abs().max()) <= tol, (float((got - want).abs().max()), tol)
    assert float(want_A.abs().max()) > 0 and float(want_x.abs().max()) > 0


def test_lowrank_form_derivation_is_accepted_and_fails_with_a_wrong_cayley_minus_identity():
    der = lr._form_derivation().run()
    assert sum(bool(s.verified) for s in der.steps) == 10 and [s.lemma for s in der.lemmas] == ["power_series_calculus"]
    wrong = -sp.Inverse(ex.I_k + ex.Sd) * ex.Sd  # (Cayley(S) - I)/2: W(I + S) = -2S fails
    with pytest.raises(ProofFailed, match="step 4"):
        lr._form_derivation(wrong).run()


def test_nc_rules_negative_controls():
    Q, Qt, S, W = fa.Q, fa.Qt, fa.S, fa.W
    Wt = fa.nc("W^T")
    plain = lx.nc_rules("no other rule")
    assert plain(Q * S * Qt * Q, Q * S)
    assert not plain(Q * Qt * Q * S, S)  # Q Q^T is not I
    with_rule = lx.nc_rules("S W^T = W^T - 2S", subs=((S * Wt, Wt - 2 * S),))
    lhs = (1 - Q * S * Qt) * (1 + Q * Wt * Qt)
    assert with_rule(lhs, 1 + Q * S * Qt)
    assert not plain(lhs, 1 + Q * S * Qt)  # the rule is needed
    assert not with_rule(lhs, 1 - Q * S * Qt)
    wrong = lx.nc_rules("S W^T = W^T + 2S", subs=((S * Wt, Wt + 2 * S),))
    assert not wrong(lhs, 1 + Q * S * Qt)


def test_cayley_vjp_derivation_verifies_every_step_and_fails_with_a_wrong_w():
    der = lc.cayley_vjp_derivation().run()
    assert all(s.verified for s in der.steps) and not der.lemmas
    with pytest.raises(ProofFailed):
        lc.cayley_vjp_derivation(w_kernel=-sp.Inverse(ex.I_k + ex.Sd) * ex.Sd).run()


def test_image_at_qr_refuses_an_unknown_inverse():
    from geoattn.symbolic.algebra import NotInAlgebra

    It = sp.Identity(ex.T)
    with pytest.raises(NotInAlgebra):
        lc._image_at_qr(sp.Inverse(It + ex.x * ex.A * ex.A * ex.x.T) * ex.x)
    C = ex.x * ((ex.A - ex.A.T) / 2) * ex.x.T
    assert lc._image_at_qr(sp.Inverse(It + C) * ex.x) == lc.Minv * fa.Q * fa.R


def test_exp_vjp_derivation_counts_and_its_side_checks_reject_wrong_sides():
    """The exponential backward's derivation: every step verified or a cited lemma; the block-power induction step,
    the Beta integral and the image at x = QR reject a wrong right side (negative controls)."""
    from geoattn.symbolic.claims import _exp_frechet as ef
    from geoattn.symbolic.proof import validate

    rep = validate(le.exp_vjp_derivation())
    assert rep.ok, rep.problems
    assert (rep.steps, rep.verified, len(rep.lemmas)) == (14, 8, 6)
    step = ef.block_power_step()
    wrong = step.rhs.as_mutable()
    wrong[0, 1] = step.rhs[0, 1] - fa.nc("L_j") * fa.nc("X") + fa.nc("X") * fa.nc("L_j")  # X L_j for L_j X
    assert step.check(step.lhs, step.rhs) and not step.check(step.lhs, sp.ImmutableMatrix(wrong))
    beta = ef.beta_step()
    i, m = sorted(beta.rhs.free_symbols, key=str)
    assert beta.check(beta.lhs, beta.rhs) and not beta.check(beta.lhs, 1 / sp.factorial(i + m))
    d = le.exp_vjp_derivation()
    image = next(s for s in d.steps if s.rule == "at x = QR with A^T = -A")
    flipped = sp.ImmutableMatrix([[image.rhs[0]], [-image.rhs[1]]])
    assert image.check(image.lhs, image.rhs) and not image.check(image.lhs, flipped)
