r"""The matrix-expression nodes the kernels need beyond SymPy's own, each with an explicit-matrix meaning.

* :class:`StrictLower`, :class:`StrictUpper`: ``tril(X, -1)``, ``triu(X, 1)``;
* :class:`RealPart`: entrywise real part;
* :class:`VectorMap`: a scalar function applied entrywise to a vector;
* :class:`PairMatrix`: the matrix ``[f(v_j, v_k)]_{jk}`` built from a vector.

Each carries its ``explicit`` meaning (what :func:`geoattn.symbolic.interpreter.evaluate` computes)
beside its ``_latex``; the torch printer handles each in a ``_print_<Class>`` method.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from .algebra import UnaryMatrixExpr

__all__ = ["StrictLower", "StrictUpper", "RealPart", "VectorMap", "PairMatrix"]


class StrictLower(UnaryMatrixExpr):
    """The strictly lower triangle of a square matrix (zeros elsewhere)."""

    @staticmethod
    def explicit(m: sp.Matrix) -> sp.Matrix:
        """The strict lower triangle of an explicit matrix."""
        return sp.Matrix(m.rows, m.cols, lambda i, j: m[i, j] if i > j else 0)

    def _latex(self, printer):
        return r"\mathrm{tril}_{-1}\left(%s\right)" % printer._print(self.arg)


class StrictUpper(UnaryMatrixExpr):
    """The strictly upper triangle of a square matrix (zeros elsewhere)."""

    @staticmethod
    def explicit(m: sp.Matrix) -> sp.Matrix:
        """The strict upper triangle of an explicit matrix."""
        return sp.Matrix(m.rows, m.cols, lambda i, j: m[i, j] if i < j else 0)

    def _latex(self, printer):
        return r"\mathrm{triu}_{1}\left(%s\right)" % printer._print(self.arg)


class RealPart(UnaryMatrixExpr):
    """Entrywise real part."""

    @staticmethod
    def explicit(m: sp.Matrix) -> sp.Matrix:
        """The entrywise real part of an explicit matrix."""
        return m.applyfunc(sp.re)

    def _latex(self, printer):
        return r"\operatorname{Re}\left(%s\right)" % printer._print(self.arg)


class _VectorFunction(MatrixExpr):
    """Base of matrices built entrywise from a column vector ``vec`` and a ``Lambda`` ``fn``."""

    def __new__(cls, vec, fn: sp.Lambda):
        return super().__new__(cls, vec, fn)

    @property
    def vec(self):
        return self.args[0]

    @property
    def fn(self) -> sp.Lambda:
        return self.args[1]


class VectorMap(_VectorFunction):
    """``[f(v_j)]_j`` for a column vector ``v`` and a scalar ``Lambda`` ``f``."""

    @property
    def shape(self):
        return self.vec.shape

    def explicit(self, v: sp.Matrix) -> sp.Matrix:
        """The entrywise image of an explicit vector."""
        return v.applyfunc(self.fn)

    def _latex(self, printer):
        (a,) = self.fn.variables
        return r"\left[%s\right]_{%s = %s_j}" % (printer._print(self.fn.expr), printer._print(a), printer._print(self.vec))


class PairMatrix(_VectorFunction):
    """``[f(v_j, v_k)]_{jk}`` for a column vector ``v`` and ``f = Lambda((a, b), ...)``."""

    @property
    def shape(self):
        return (self.vec.shape[0], self.vec.shape[0])

    def explicit(self, v: sp.Matrix) -> sp.Matrix:
        """The matrix of pair values of an explicit vector."""
        return sp.Matrix(v.rows, v.rows, lambda j, k: self.fn(v[j], v[k]))

    def _latex(self, printer):
        return r"\left[%s\right]_{jk}" % printer._print(self.fn.expr)
