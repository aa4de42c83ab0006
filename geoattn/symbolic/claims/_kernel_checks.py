r"""Checks shared by the ``kernels`` family's derivations: each decides a step from its displayed sides.

They extend :func:`~geoattn.symbolic.proof.identity` and :func:`~geoattn.symbolic.proof.in_algebra` to the shapes
the kernels' derivations take: a functional-calculus identity times a common factor, on both sides of a middle
factor, of a composite block, a proved equality used inside a larger expression, and SymPy's matrix derivative.
Each has a negative control in ``tests/test_kernel_checks.py``.
"""

from __future__ import annotations

import functools

import sympy as sp
from sympy.matrices.expressions import Identity, MatMul, MatrixSymbol

from .. import algebra as alg
from ..proof import Check, relation, same

__all__ = ["algebra_times", "algebra_of", "sandwich", "inside", "matrix_derivative", "free_algebra", "blockwise",
           "compose", "matrix_diff", "Gradient"]


class Gradient(sp.Derivative):
    r"""An unevaluated matrix derivative ``d f / d X`` of a scalar ``f`` by a matrix symbol ``X`` that prints as
    :math:`\nabla_X f` and has the shape of ``X`` (a plain ``Derivative`` has no shape, and SymPy's printers fail on
    it inside a transpose or a block matrix). It is a ``Derivative``: :func:`matrix_derivative` reads it as one."""

    is_MatrixExpr = False

    @property
    def shape(self):
        """The shape of the variable."""
        return self.variables[0].shape

    @property
    def rows(self):
        """The number of rows of the variable."""
        return self.shape[0]

    @property
    def cols(self):
        """The number of columns of the variable."""
        return self.shape[1]

    def _latex(self, printer):
        return r"\nabla_{%s}\left(%s\right)" % (printer._print(self.variables[0]), printer._print(self.expr))


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


@functools.lru_cache(maxsize=256)
def matrix_diff(expr, var):
    """SymPy's matrix derivative of the scalar ``expr`` by ``var``, taken term by term over sums and past rational
    factors (SymPy returns 0 for the derivative of a sum of traces as a whole); remembered, as the mutation tests
    ask for it again."""
    from sympy.matrices.expressions import MatAdd, ZeroMatrix

    if isinstance(expr, sp.Add):
        terms = [t for t in (matrix_diff(a, var) for a in expr.args) if not (t == 0 or isinstance(t, ZeroMatrix))]
        return MatAdd(*terms).doit() if terms else ZeroMatrix(*var.shape)
    coeff, rest = expr.as_coeff_Mul()
    if coeff != 1:
        return coeff * matrix_diff(rest, var)
    return expr.diff(var)


def matrix_derivative() -> Check:
    """The lhs is an unevaluated ``Derivative(f, X)`` of a scalar ``f`` by one matrix symbol ``X``, and the rhs has
    the shape of ``X`` and equals SymPy's matrix derivative of ``f`` (term by term, up to
    :func:`~geoattn.symbolic.proof.same`)."""

    def decide(lhs, rhs, pairs):
        if not isinstance(lhs, sp.Derivative) or len(lhs.variables) != 1:
            return False
        var = lhs.variables[0]
        if getattr(rhs, "shape", None) != var.shape:
            return False
        return same(matrix_diff(lhs.expr, var), rhs)

    return Check("matrix derivative (SymPy)", decide, ())


def free_algebra() -> Check:
    r"""Equality of two polynomial matrix expressions in the free algebra over :math:`\mathbb{Q}` (every matrix
    symbol and its transpose independent noncommuting generators, no relations; see
    :mod:`geoattn.symbolic.claims._free_algebra`): an identity there holds for matrices of every size."""
    from ._free_algebra import nc_equal, to_nc

    def decide(lhs, rhs, pairs):
        try:
            return nc_equal(to_nc(lhs), to_nc(rhs), ())
        except alg.NotInAlgebra:
            return False

    return Check("free algebra (no relations)", decide, ())


def blockwise(check: Check) -> Check:
    """Both sides are block-diagonal matrices with as many blocks, and ``check`` accepts every pair of blocks."""
    from sympy.matrices.expressions import BlockDiagMatrix

    def decide(lhs, rhs, pairs):
        if not (isinstance(lhs, BlockDiagMatrix) and isinstance(rhs, BlockDiagMatrix)):
            return False
        if len(lhs.diag) != len(rhs.diag):
            return False
        return all(check.decide(a, b, pairs) for a, b in zip(lhs.diag, rhs.diag))

    return Check(f"blockwise {check.name}", decide, check.facts, check.subs)


def compose(bindings, table: dict | None = None) -> dict:
    """A kernel's bindings composed as matrix expressions: name -> the binding with every earlier name (a matrix
    symbol of the binding's shape) replaced by its own composed expression; ``table`` seeds earlier names."""
    table = dict(table or {})
    out = {}
    for name, expr in bindings:
        e = sp.sympify(expr).xreplace(table)
        out[name] = e
        table[MatrixSymbol(name, *e.shape)] = e
    return out
