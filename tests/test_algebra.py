"""Building blocks of the claims engine, against independent computations."""

import random

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from geoattn.symbolic import algebra as alg

rationals = st.fractions(min_value=-5, max_value=5, max_denominator=7).map(sp.Rational)


def skew_from(values, n):
    m = sp.zeros(n, n)
    it = iter(values)
    for i in range(n):
        for j in range(i):
            v = next(it)
            m[i, j], m[j, i] = v, -v
    return m


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(st.just(n), st.lists(rationals, min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))))
def test_cayley_of_rational_skew_is_exactly_orthogonal(args):
    n, vals = args
    c = alg.cayley(skew_from(vals, n))
    assert c.T * c == sp.eye(n)
    assert c.det() == 1


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(st.just(n), st.lists(rationals, min_size=n * n, max_size=n * n))))
def test_cayley_matches_inverse_formula(args):
    n, vals = args
    a = sp.Matrix(n, n, vals)
    if (sp.eye(n) + a).det() == 0:
        return
    assert alg.cayley(a) == (sp.eye(n) - a) * (sp.eye(n) + a).inv()


def test_triangle_maps():
    m = sp.Matrix(3, 3, range(1, 10))
    assert alg.skew_from_lower(m) == sp.Matrix([[0, -4, -7], [4, 0, -8], [7, 8, 0]])
    assert alg.upper_triangular_asymmetrize(m) == sp.Matrix([[0, 2, 3], [-2, 0, 6], [-3, -6, 0]])


def test_vec_rows_and_kron():
    z = sp.Matrix([[1, 2, 3], [4, 5, 6]])
    assert list(alg.vec_rows(z)) == [1, 2, 3, 4, 5, 6]
    assert alg.unvec_rows(alg.vec_rows(z), 2, 3) == z
    assert alg.kron(sp.eye(2), sp.Matrix([[1, 2], [3, 4]]))[2:, 2:] == sp.Matrix([[1, 2], [3, 4]])


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_pfaffian_squares_to_determinant(n):
    a = alg.skew("a", n)
    assert sp.expand(alg.pfaffian(a) ** 2 - a.det(method="berkowitz")) == 0


def test_dual_jacobian_matches_symbolic():
    rng = random.Random(3)
    A = sp.Matrix([[0, sp.Rational(2, 3)], [sp.Rational(-2, 3), 0]])
    B = sp.Matrix([[1, 2], [sp.Rational(1, 2), -1]])

    def f(Z):
        return Z * alg.cayley(alg.skew_from_lower(Z.T * B * Z)) + Z * alg.cayley(Z.T * A * Z)

    zs = alg.general("z", 2, 3)
    point = {s: sp.Rational(rng.randint(-5, 5), rng.randint(1, 5)) for s in zs}
    sym = alg.jacobian_rows(f, zs).xreplace(point).applyfunc(sp.cancel)
    dual = alg.jacobian_rows(f, zs.xreplace(point))
    assert sym == dual


def test_dual_rules():
    v = sp.Matrix([[1, 2], [3, 5]])
    dv = sp.Matrix([[0, 1], [1, 0]])
    x = alg.Dual(v, dv)
    # product rule and transpose
    p = x * x.T
    assert p.v == v * v.T and p.dv == dv * v.T + v * dv.T
    # right_solve: X P = B
    b = alg.Dual(sp.eye(2), sp.zeros(2, 2))
    sol = alg.right_solve(b, x)
    assert sol.v == v.inv()
    assert sol.dv == -v.inv() * dv * v.inv()
    with pytest.raises(ValueError, match="Expected value and tangent of one shape"):
        alg.Dual(sp.eye(2), sp.eye(3))


def test_exp_skew_closed_form():
    th = sp.Rational(1, 3)
    e = alg.exp_skew(sp.Matrix([[0, th], [-th, 0]]))
    assert e == sp.Matrix([[sp.cos(th), sp.sin(th)], [-sp.sin(th), sp.cos(th)]])
    zero = alg.Dual(sp.zeros(2, 2), sp.Matrix([[0, 1], [-1, 0]]))
    out = alg.exp_skew(zero)
    assert out.v == sp.eye(2) and out.dv == zero.dv


def test_expm_dual_of_any_value():
    # 1 x 1: exp(a + b eps) = e^a + e^a b eps, with e^a kept exact
    a, b = sp.Rational(2, 3), sp.Rational(-5, 7)
    out = alg.expm(alg.Dual(sp.Matrix([[a]]), sp.Matrix([[b]])))
    assert out.v == sp.Matrix([[sp.exp(a)]]) and sp.simplify(out.dv[0, 0] - sp.exp(a) * b) == 0
    # diagonal value: the Daleckii-Krein formula L_ij = D_ij (e^{a_i} - e^{a_j}) / (a_i - a_j), L_ii = D_ii e^{a_i}
    lam = [sp.Integer(1), sp.Rational(-1, 2)]
    dmat = sp.Matrix([[3, -2], [5, sp.Rational(1, 4)]])
    out = alg.expm(alg.Dual(sp.diag(*lam), dmat))
    for i in range(2):
        for j in range(2):
            want = dmat[i, j] * (sp.exp(lam[i]) if i == j else (sp.exp(lam[i]) - sp.exp(lam[j])) / (lam[i] - lam[j]))
            assert sp.simplify(out.dv[i, j] - want) == 0
    # a wrong tangent is told apart (the transpose of D gives another derivative here)
    wrong = alg.expm(alg.Dual(sp.diag(*lam), dmat.T))
    assert any(sp.simplify(x) != 0 for x in out.dv - wrong.dv)
    # a skew value with a zero tangent: the value is the closed-form rotation, the tangent zero
    rot = alg.expm(alg.Dual(sp.Matrix([[0, 1], [-1, 0]]), sp.zeros(2, 2)))
    assert rot.dv.is_zero_matrix
    assert sp.simplify(rot.v - sp.Matrix([[sp.cos(1), sp.sin(1)], [-sp.sin(1), sp.cos(1)]])) == sp.zeros(2, 2)


def test_is_zero():
    x = sp.Symbol("x")
    assert alg.is_zero(sp.Matrix([[x / (x + 1) - 1 + 1 / (x + 1)]]))
    assert not alg.is_zero(sp.Matrix([[x]]))
