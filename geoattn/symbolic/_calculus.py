r"""Matrix expressions of one matrix symbol, proved for every size by the functional calculus.

Note [functional calculus]
--------------------------
Let ``A`` be a square matrix with ``A^T = eps*A`` (``eps = -1``: skew,
``eps = +1``: symmetric). Every expression built from ``A``, the identity,
sums, products, inverses, transposes and :class:`MatExp` lies in the
commutative algebra of rational/analytic functions of ``A``: transposition maps
``r(A)`` to ``r(A^T) = r(eps*A)``. The map ``r(A) -> r(a)`` into scalar
functions of one variable ``a`` is therefore a ring homomorphism on that
algebra (it is the holomorphic functional calculus), so an identity of scalar
functions ``r(a) = s(a)`` implies ``r(A) = s(A)`` whenever every inverse in
both sides exists. The proof is independent of the size of ``A``.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from ._exact import rational_zero

__all__ = ["UnaryMatrixExpr", "MatExp", "NotInAlgebra", "scalar_image", "equal_in_algebra"]


class UnaryMatrixExpr(MatrixExpr):
    """Base of unevaluated matrix functions ``f(X)`` with the shape of ``X``."""

    def __new__(cls, arg):
        return super().__new__(cls, sp.sympify(arg))

    @property
    def arg(self):
        """The matrix the function is applied to."""
        return self.args[0]

    @property
    def shape(self):
        """The shape of the argument (a matrix function keeps it)."""
        return self.arg.shape


class MatExp(UnaryMatrixExpr):
    """The matrix exponential ``exp(X)`` as an unevaluated matrix expression."""

    def _eval_transpose(self):
        # exp(X)^T = exp(X^T): transpose the power series term by term.
        return MatExp(self.arg.T)

    def _latex(self, printer):
        return r"\exp\left(%s\right)" % printer._print(self.arg)

    def _sympystr(self, printer):
        return "exp(%s)" % printer._print(self.arg)


class NotInAlgebra(ValueError):
    """The expression is not a function of the single matrix symbol."""


def scalar_image(expr, sym: sp.MatrixSymbol, var: sp.Symbol, eps: int | None) -> sp.Expr:
    """Image of ``expr`` under ``A -> a`` (see Note [functional calculus]).

    ``eps`` is the transpose rule ``A^T = eps*A``; with ``eps=None`` any
    transpose of ``A`` makes the map undefined and :class:`NotInAlgebra` is
    raised (this is what makes the prover fail on a non-skew ``A``).
    """
    from sympy.matrices.expressions import (
        Identity,
        Inverse,
        MatAdd,
        MatMul,
        MatPow,
        Transpose,
        ZeroMatrix,
    )

    def rec(e):
        if e == sym:
            return var
        if isinstance(e, Identity):
            return sp.Integer(1)
        if isinstance(e, ZeroMatrix):
            return sp.Integer(0)
        if isinstance(e, MatAdd):
            return sp.Add(*[rec(a) for a in e.args])
        if isinstance(e, MatMul):
            return sp.Mul(*[rec(a) for a in e.args])
        if isinstance(e, MatPow):
            return rec(e.base) ** e.exp
        if isinstance(e, Inverse):
            return 1 / rec(e.arg)
        if isinstance(e, MatExp):
            return sp.exp(rec(e.arg))
        if isinstance(e, Transpose):
            if eps is None:
                raise NotInAlgebra(f"Expected a transpose rule for {sym} to map {e}. Got none (eps=None).")
            return rec(e.arg).subs(var, eps * var)
        if isinstance(e, MatrixExpr):
            raise NotInAlgebra(f"Expected a function of {sym}. Got {e}.")
        if e.is_commutative and not e.has(MatrixExpr):
            return e
        raise NotInAlgebra(f"Expected a matrix expression in {sym} alone. Got {e!r}.")

    return rec(expr)


def equal_in_algebra(lhs, rhs, sym: sp.MatrixSymbol, eps: int | None) -> bool:
    """Prove ``lhs == rhs`` for every size via :func:`scalar_image`."""
    a = sp.Dummy("a")
    try:
        diff = scalar_image(lhs, sym, a, eps) - scalar_image(rhs, sym, a, eps)
    except NotInAlgebra:
        return False
    if rational_zero(diff) is True:
        return True
    return sp.simplify(sp.cancel(sp.together(diff))) == 0
