r"""Checks shared by the ``kernels`` family's derivations: each decides a step from its displayed sides.

They extend :func:`~geoattn.symbolic.proof.identity` and :func:`~geoattn.symbolic.proof.in_algebra` to the shapes
the kernels' derivations take: a functional-calculus identity times a common factor, on both sides of a middle
factor, of a composite block, a proved equality used inside a larger expression, and SymPy's matrix derivative.
Each has a negative control in ``tests/test_kernel_checks.py``.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import Identity, MatMul, MatrixSymbol

from .. import algebra as alg
from ..proof import Check, relation, same

__all__ = ["algebra_times", "algebra_of", "sandwich", "inside", "matrix_derivative"]


def inside(old, new, name: str = "an earlier step inside the expression") -> Check:
    """A check that ``rhs`` is ``lhs`` with ``old`` replaced by ``new`` (an equality proved by an earlier step, used
    inside a larger expression), up to :func:`~geoattn.symbolic.proof.same`."""
    return relation(lambda lhs, rhs: same(lhs.subs(old, new), rhs), name)


def algebra_of(block, name: str = "X", eps: int | None = None) -> Check:
    r"""Equality in the functional calculus of the composite matrix ``block`` (e.g. ``x^T x A``): ``block`` is renamed
    to a fresh matrix symbol on both sides, which must then be rational functions of it alone
    (:func:`~geoattn.symbolic.algebra.equal_in_algebra`, transpose rule ``eps``)."""
    var = MatrixSymbol(name, *block.shape)

    def decide(lhs, rhs, pairs):
        return alg.equal_in_algebra(lhs.subs(block, var), rhs.subs(block, var), var, eps)

    return Check(f"functional calculus in {name} = {block}", decide, ())


def algebra_times(sym: MatrixSymbol, eps: int | None, right) -> Check:
    r"""Equality of ``L * right`` and ``R * right`` because ``L = R`` in the functional calculus of ``sym``
    (:func:`~geoattn.symbolic.algebra.equal_in_algebra`, transpose rule ``sym^T = eps*sym``): both displayed sides
    must end in the factor ``right`` (``right`` alone counts as ``I * right``)."""

    def left_factor(expr):
        if expr == right:
            return Identity(right.shape[0])
        if isinstance(expr, MatMul) and expr.args[-1] == right:
            return MatMul(*expr.args[:-1])
        return None

    def decide(lhs, rhs, pairs):
        lf, rf = left_factor(lhs), left_factor(rhs)
        return lf is not None and rf is not None and alg.equal_in_algebra(lf, rf, sym, eps)

    return Check(f"functional calculus in {sym} (transpose rule {eps}) times {right}", decide, ())


def sandwich(sym: MatrixSymbol, eps: int | None, middle, transposed: bool = False) -> Check:
    r"""Equality of ``L_1 M R_1`` and ``L_2 M R_2`` for the middle factor ``M`` and ``L_i, R_i`` in the functional
    calculus of ``sym`` (of ``sym^T`` with ``transposed``: every ``sym^T`` is renamed first and a bare ``sym`` is then
    outside the algebra): the images ``f_i(a)g_i(b)`` of the outer factors in two independent variables must agree,
    which determines ``X -> L X R`` (scalars may sit on either side)."""
    a, b = sp.Dummy("a"), sp.Dummy("b")
    var = MatrixSymbol("_" + sym.name + "_T", *sym.shape) if transposed else sym

    def image(expr):
        expr = expr.doit()
        if transposed:
            expr = expr.subs(sym.T, var)
        if not isinstance(expr, MatMul):
            return None
        args = list(expr.args)
        hits = [k for k, f in enumerate(args) if f == middle]
        if len(hits) != 1:
            return None
        k = hits[0]
        left = MatMul(*args[:k]) if k else Identity(middle.shape[0])
        right = MatMul(*args[k + 1:]) if k + 1 < len(args) else Identity(middle.shape[1])
        try:
            return alg.scalar_image(left, var, a, eps) * alg.scalar_image(right, var, b, eps)
        except alg.NotInAlgebra:
            return None

    def decide(lhs, rhs, pairs):
        il, ir = image(lhs), image(rhs)
        return il is not None and ir is not None and sp.simplify(sp.cancel(sp.together(il - ir))) == 0

    on = f"{sym}^T" if transposed else str(sym)
    return Check(f"functional calculus in {on} on both sides of {middle}", decide, ())


def matrix_derivative() -> Check:
    """The lhs is an unevaluated ``Derivative(f, X)`` of a matrix expression and the rhs equals SymPy's matrix
    derivative ``f.diff(X)`` (up to :func:`~geoattn.symbolic.proof.same`)."""

    def decide(lhs, rhs, pairs):
        if not isinstance(lhs, sp.Derivative):
            return False
        return same(lhs.expr.diff(*lhs.variables), rhs)

    return Check("matrix derivative (SymPy)", decide, ())
