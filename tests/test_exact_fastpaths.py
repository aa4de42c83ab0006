"""The engine's exact fast paths (geoattn.symbolic._exact): they decide only what they prove, and the engine's
answers are those of SymPy's simplification alone."""

import random

import pytest
import sympy as sp
from sympy import Identity, MatrixSymbol, Symbol

from geoattn.symbolic import _exact, proof, steps
from geoattn.symbolic._exact import point_differs, rational_zero
from geoattn.symbolic.algebra import is_zero

x, y = sp.symbols("x y")
n = Symbol("n", integer=True, positive=True)
X, Y = MatrixSymbol("X", n, n), MatrixSymbol("Y", n, n)
I = Identity(n)


def test_rational_zero_decides_rational_functions_and_catches_a_perturbation():
    ident = (x**2 - y**2) / (x - y) - (x + y)
    assert rational_zero(ident) is True
    # negative controls: the identity perturbed by 1/(x + 1), or by a factor 2 on one side, is nonzero
    assert rational_zero(ident + 1 / (x + 1)) is False
    assert rational_zero((x**2 - y**2) / (x - y) - 2 * (x + y)) is False


def test_rational_zero_leaves_undecided_what_it_cannot_prove():
    # opaque generators may be dependent: a nonzero numerator over them is not a proof of nonzero
    assert rational_zero(sp.exp(x) + sp.exp(y)) is None
    assert rational_zero(1 / (1 + sp.exp(x)) + x) is None  # an opaque generator in a denominator
    assert rational_zero(sp.Float(0.5) * x + y) is None
    a, b = sp.symbols("a b", commutative=False)
    assert rational_zero(a * b - b * a) is None
    # a zero numerator over opaque generators is a proof of zero
    assert rational_zero(sp.exp(x) * (x + 1) - sp.exp(x) * x - sp.exp(x)) is True


def test_point_differs_separates_a_wrong_identity_and_never_a_true_one():
    # negative controls: a wrong transpose rule and a wrong order are separated at the point
    assert point_differs((X * Y).T, X.T * Y.T)
    assert point_differs(X * Y, Y * X)
    assert point_differs(sp.BlockDiagMatrix(X, Y), sp.BlockDiagMatrix(X, Y.T))
    assert point_differs(sp.Trace(X * Y), sp.Trace(Y * X) + 1)
    # true identities are never separated (the point is exact)
    assert not point_differs((X * Y).T, Y.T * X.T)
    assert not point_differs(sp.Inverse(I + X) * (I + X), I)
    assert not point_differs(sp.Trace(X * Y), sp.Trace(Y * X))
    assert not point_differs(sp.Determinant(X * Y), sp.Determinant(X) * sp.Determinant(Y))


def test_point_differs_is_undecided_on_nodes_it_does_not_evaluate():
    from geoattn.symbolic.algebra import MatExp

    assert not point_differs(MatExp(X), 2 * MatExp(X))
    assert not point_differs(sp.exp(x), 2 * sp.exp(x))


def test_points_respect_the_symbols_assumptions():
    rng = random.Random(0)
    for facts in ({"positive": True}, {"integer": True}, {"negative": True, "integer": True}, {"nonzero": True}):
        s = Symbol("s", **facts)
        for _ in range(20):
            v = _exact._value_for(s, rng)
            assert all(getattr(v, f"is_{k}") is val for k, val in s.assumptions0.items()), (facts, v)


CASES = [
    ((X * Y).T, Y.T * X.T),
    ((X * Y).T, X.T * Y.T),
    (X * (Y + I), X * Y + X),
    (X * (Y + I), X * Y + 2 * X),
    (sp.Trace(X + Y), sp.Trace(X) + sp.Trace(Y)),
    (sp.Trace(X * Y), sp.Trace(X) * sp.Trace(Y)),
    (sp.Matrix([[x / (x + 1), 1]]), sp.Matrix([[1 - 1 / (x + 1), 1]])),
    (sp.Matrix([[x / (x + 1), 1]]), sp.Matrix([[1 + 1 / (x + 1), 1]])),
    ((x + 1) ** 2, x**2 + 2 * x + 1),
    ((x + 1) ** 2, x**2 + 1),
    (sp.sin(x) ** 2 + sp.cos(x) ** 2, sp.Integer(1)),
]


@pytest.mark.parametrize("lhs, rhs", CASES)
def test_same_answers_as_simplification_alone(lhs, rhs, monkeypatch):
    fast = proof.same(lhs, rhs)
    steps._SAME.clear()
    monkeypatch.setattr(steps, "point_differs", lambda a, b: False)
    monkeypatch.setattr(steps, "rational_zero", lambda e: None)
    assert proof.same(lhs, rhs) == fast
    steps._SAME.clear()


def test_is_zero_answers_as_cancel_alone():
    cube = x**3 - 3 * x**2 * y + 3 * x * y**2 - y**3
    for expr in (x / (x + 1) + 1 / (x + 1) - 1, x / (x + 1) - 1, (x - y) ** 3 - cube, (x - y) ** 3 - cube - 1):
        assert is_zero(expr) == (sp.cancel(sp.together(expr)) == 0)


def test_interpreter_evaluates_trace_coefficients_over_a_field():
    from sympy.polys.matrices import DomainMatrix

    from geoattn.symbolic.interpreter import evaluate

    m = sp.Matrix([[1, 2], [3, 5]])
    expr = (1 - sp.Trace(X * X) / 2) * X + sp.Identity(n) * (1 / sp.Trace(X))
    got = evaluate(expr, {X: DomainMatrix.from_Matrix(m).convert_to(sp.QQ)}, {n: 2}, field=sp.QQ)
    want = evaluate(expr, {X: m}, {n: 2})
    assert got.to_Matrix() == want
    # negative control: a different coefficient gives a different matrix
    assert got.to_Matrix() != evaluate((1 - sp.Trace(X * X)) * X + sp.Identity(n) / sp.Trace(X), {X: m}, {n: 2})


def test_polynomial_gradient_is_sympys_expanded_derivative():
    rng = random.Random(3)
    a, b, c = sp.symbols("a b c")
    for _ in range(5):
        terms = [rng.randint(-3, 3) * a ** rng.randint(0, 3) * b ** rng.randint(0, 2) * c ** rng.randint(0, 2)
                 for _ in range(4)]
        expr = (sum(terms) + sp.Rational(1, 3)) ** 2 * (a - c) + (b * (a + 1)) ** 3  # unexpanded on purpose
        got = _exact.polynomial_gradient(expr, [a, b, c, x])
        want = [sp.expand(sp.diff(expr, s)) for s in (a, b, c, x)]
        assert [sp.expand(g - w) for g, w in zip(got, want)] == [0, 0, 0, 0]
    assert got[3] == 0  # a symbol the polynomial does not contain
    # negative control: the derivatives of a perturbed polynomial are told apart from the true ones
    wrong = _exact.polynomial_gradient(expr + a * b**2, [a, b, c])
    assert [sp.expand(g - w) != 0 for g, w in zip(wrong, want)] == [True, True, False]


def test_polynomial_gradient_refuses_what_is_not_a_polynomial():
    for bad in (sp.exp(x) * y, 1 / (x + 1), x**sp.Rational(1, 2), 0.5 * x):
        with pytest.raises(_exact.NotEvaluable):
            _exact.polynomial_gradient(bad, [x])
    for wrt in ([x, sp.Integer(2)], [x, x]):  # a constant would be taken for a generator; a repeated symbol
        with pytest.raises(ValueError, match="distinct symbols"):
            _exact.polynomial_gradient(2 * x + 3, wrt)


def test_exp_residual_fast_path_answers_as_cancel():
    from geoattn.symbolic.claims._exp_exact import NonFiniteResidual, _in_x, as_function_of_e, exp_residual_nonzero

    e = sp.exp(sp.Rational(1, 2))
    cases = [e**2 - sp.E, e / (1 + e) - 1 + 1 / (1 + e), sp.Matrix([e**3 - sp.exp(sp.Rational(3, 2)), 0]),
             e - 1, sp.Matrix([0, e / (e + 2) - sp.Rational(1, 2)]), sp.exp(sp.Rational(1, 3)) - e]
    for v in cases:
        r, _ = as_function_of_e(v)
        slow = any(t != 0 for t in (r if isinstance(r, sp.MatrixBase) else [r]))
        assert exp_residual_nonzero(v) is slow
        # the fast path itself decides these (no fallback to cancel)
        entries = _in_x(v)[0]
        assert all(rational_zero(t) is not None for t in (entries if isinstance(entries, sp.MatrixBase) else [entries]))
    assert [exp_residual_nonzero(v) for v in cases] == [False, False, False, True, True, True]
    with pytest.raises(NonFiniteResidual):
        exp_residual_nonzero(sp.zoo * e)
    # a non-finite entry anywhere, before or after a nonzero one (a zero that SymPy does not simplify as its
    # denominator: the fast path refuses it, cancel finds the pole), puts the point outside the domain
    z = (1 + e) ** 2 - 1 - 2 * e - e**2
    for v in (sp.Matrix([e - 1, 1 / z]), sp.Matrix([1 / z, e - 1]), sp.Matrix([e - 1, sp.zoo])):
        with pytest.raises(NonFiniteResidual):
            exp_residual_nonzero(v)
