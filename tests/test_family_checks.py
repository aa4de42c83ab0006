"""Negative controls for the checks of the vectorisation, volume-preserving and exponential derivations: each check
accepts its true step and rejects an injected fault."""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import BlockMatrix, Identity, KroneckerProduct, MatPow, MatrixSymbol, ZeroMatrix

from geoattn.symbolic.claims import exponential, vectorisation, volume_preserving, vp_linear, vp_map
from geoattn.symbolic.claims._common import T, d
from geoattn.symbolic.claims._derivations import blockwise, by_cases, lift_symplectic_derivation
from geoattn.symbolic.proof import validate


def test_case_split_rejects_a_wrong_entry_below_the_diagonal():
    step = exponential._uta_derivation().steps[0]
    assert step.check(step.lhs, step.rhs)
    a = MatrixSymbol("A", T, T)
    i, j = sp.symbols("i j", integer=True, nonnegative=True)
    p = sp.Symbol("p", integer=True, positive=True)
    wrong = sp.Piecewise((a[i, j], i < j), (a[j, i], i > j), (0, True))  # +a_ji below: symmetric, not skew
    check = by_cases({"i < j": {j: i + p}, "i > j": {i: j + p}, "i = j": {i: j}})
    assert not check(wrong, step.rhs)


def test_blockwise_check_needs_the_orthogonality_fact():
    deriv = lift_symplectic_derivation()
    assert validate(deriv).ok
    step = deriv.steps[1]
    assert not blockwise()(step.lhs, step.rhs)  # without Lambda^T Lambda = I the lift is not symplectic
    L = MatrixSymbol("Lambda", T, T)
    O, Id = ZeroMatrix(d * T, d * T), Identity(d * T)
    assert not blockwise((L.T * L, Identity(T)))(step.lhs, BlockMatrix([[O, Id], [Id, O]]))


def test_kronecker_rules_reject_the_seed_block():
    L = MatrixSymbol("Lambda", T, T)
    M = KroneckerProduct(Identity(d), L)
    assert vectorisation.KRONECKER_RULES(M.T * M, KroneckerProduct(Identity(d), L.T * L))
    assert not vectorisation.KRONECKER_RULES(M.T * M, KroneckerProduct(Identity(d), L * L.T))


def test_vec_derivation_rejects_the_untransposed_block():
    deriv = vectorisation._right_mult_derivation()
    assert validate(deriv).ok
    step = deriv.steps[0]
    k, j, i, kp = sp.symbols("k j i k'", integer=True, nonnegative=True)
    wrong = sp.KroneckerDelta(k, kp, (0, d - 1)) * MatrixSymbol("Lambda", T, T)[j, i]  # I_d (x) Lambda
    assert not step.check(step.lhs, wrong, deriv.facts)


def test_induction_rejects_the_left_gram_matrix():
    Z = MatrixSymbol("Z", d, T)
    C, M, k = vp_linear.Cs, vp_linear.Ms, vp_linear.k
    check = vp_linear.induction_on(k, (Z * C, M * Z))
    assert check(Z * MatPow(C, k), MatPow(M, k) * Z)
    assert not check(Z * MatPow(C, k), MatPow(M, k + 1) * Z)
    wrong = MatrixSymbol("N", d, d)  # Z C = N Z is not the rewrite the step uses
    assert not vp_linear.induction_on(k, (Z * C, wrong * Z))(Z * MatPow(C, k), MatPow(M, k) * Z)


def test_inverse_check_rejects_the_wrong_sign_inverse():
    deriv = vp_map._inverse_derivation()
    assert validate(deriv).ok
    step = deriv.steps[2]  # G(F(Z)) = Z
    Z, A = vp_map.Zm, vp_map.Am
    fz = Z * vp_map.cay(vp_map.Cz)
    wrong = fz * vp_map.cay(fz.T * A * fz)  # G(Y) = Y Cayley(C(Y)), without the transpose
    assert step.check(step.lhs, step.rhs, deriv.facts)
    assert not step.check(wrong, Z, deriv.facts)


def test_lower_assignment_and_index_count_are_proved_and_sensitive():
    for build in (volume_preserving._lower_assign_derivation, volume_preserving._index_count_derivation):
        assert validate(build()).ok
    step = volume_preserving._index_count_derivation().steps[0]
    assert not step.check(step.lhs, T**2 / 2)
