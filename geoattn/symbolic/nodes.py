r"""The matrix-expression nodes the kernels need beyond SymPy's own, each with an explicit-matrix meaning.

* :class:`StrictLower`, :class:`StrictUpper`: ``tril(X, -1)``, ``triu(X, 1)``;
* :class:`RealPart`: entrywise real part;
* :class:`VectorMap`: a scalar function applied entrywise to a vector;
* :class:`PairMatrix`: the matrix ``[f(v_j, v_k)]_{jk}`` built from a vector.

Each node carries its whole meaning beside its ``_latex``: ``explicit`` and ``_explicit_value`` (what
:func:`geoattn.symbolic.interpreter.evaluate` computes) and ``_torchcode`` (what
:class:`geoattn.codegen.printer.TorchKernelPrinter` prints, through its ``printmethod`` as SymPy's
printers call ``_latex`` or ``_pythoncode``). Adding a node touches its class only.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from .algebra import UnaryMatrixExpr

__all__ = ["StrictLower", "StrictUpper", "RealPart", "VectorMap", "PairMatrix"]


class _Unary(UnaryMatrixExpr):
    """A node of one matrix argument whose explicit meaning is ``explicit(arg)``."""

    def _explicit_value(self, rec):
        return self.explicit(rec(self.arg))


class StrictLower(_Unary):
    """The strictly lower triangle of a square matrix (zeros elsewhere)."""

    @staticmethod
    def explicit(m: sp.Matrix) -> sp.Matrix:
        """The strict lower triangle of an explicit matrix."""
        return sp.Matrix(m.rows, m.cols, lambda i, j: m[i, j] if i > j else 0)

    def _latex(self, printer):
        return r"\mathrm{tril}_{-1}\left(%s\right)" % printer._print(self.arg)

    def _torchcode(self, printer):
        return f"torch.tril({printer.print_arg(self.arg)}, -1)"


class StrictUpper(_Unary):
    """The strictly upper triangle of a square matrix (zeros elsewhere)."""

    @staticmethod
    def explicit(m: sp.Matrix) -> sp.Matrix:
        """The strict upper triangle of an explicit matrix."""
        return sp.Matrix(m.rows, m.cols, lambda i, j: m[i, j] if i < j else 0)

    def _latex(self, printer):
        return r"\mathrm{triu}_{1}\left(%s\right)" % printer._print(self.arg)

    def _torchcode(self, printer):
        return f"torch.triu({printer.print_arg(self.arg)}, 1)"


class RealPart(_Unary):
    """Entrywise real part."""

    @staticmethod
    def explicit(m: sp.Matrix) -> sp.Matrix:
        """The entrywise real part of an explicit matrix."""
        return m.applyfunc(sp.re)

    def _latex(self, printer):
        return r"\operatorname{Re}\left(%s\right)" % printer._print(self.arg)

    def _torchcode(self, printer):
        return f"{printer.wrap(printer.print_arg(self.arg))}.real"


class _VectorFunction(MatrixExpr):
    """Base of matrices built entrywise from a column vector ``vec`` and a ``Lambda`` ``fn``."""

    def __new__(cls, vec, fn: sp.Lambda):
        return super().__new__(cls, vec, fn)

    @property
    def vec(self):
        """The column vector the node is built from."""
        return self.args[0]

    #: printed as a whole: the code generator does not rewrite its arguments (they are a Lambda and a vector)
    codegen_atom = True

    def _explicit_value(self, rec):
        return self.explicit(rec(self.vec))

    @property
    def fn(self) -> sp.Lambda:
        """The scalar function, a :class:`sympy.Lambda`."""
        return self.args[1]


class VectorMap(_VectorFunction):
    """``[f(v_j)]_j`` for a column vector ``v`` and a scalar ``Lambda`` ``f``."""

    @property
    def shape(self):
        """That of ``vec``."""
        return self.vec.shape

    def explicit(self, v: sp.Matrix) -> sp.Matrix:
        """The entrywise image of an explicit vector."""
        return v.applyfunc(self.fn)

    def _torchcode(self, printer):
        (a,) = self.fn.variables
        return printer.scalar(self.fn.expr, {a: printer.print_arg(self.vec)})

    def _latex(self, printer):
        (a,) = self.fn.variables
        return r"\left[%s\right]_{%s = %s_j}" % (printer._print(self.fn.expr), printer._print(a), printer._print(self.vec))


class PairMatrix(_VectorFunction):
    """``[f(v_j, v_k)]_{jk}`` for a column vector ``v`` and ``f = Lambda((a, b), ...)``."""

    @property
    def shape(self):
        """Square, of the length of ``vec``."""
        return (self.vec.shape[0], self.vec.shape[0])

    def explicit(self, v: sp.Matrix) -> sp.Matrix:
        """The matrix of pair values of an explicit vector."""
        return sp.Matrix(v.rows, v.rows, lambda j, k: self.fn(v[j], v[k]))

    def _torchcode(self, printer):
        a, b = self.fn.variables
        v = printer.print_arg(self.vec)
        return printer.scalar(self.fn.expr, {a: f"{v}.unsqueeze(-1)", b: f"{v}.unsqueeze(-2)"})

    def _latex(self, printer):
        return r"\left[%s\right]_{jk}" % printer._print(self.fn.expr)
