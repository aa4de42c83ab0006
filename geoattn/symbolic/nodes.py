r"""The matrix-expression nodes the kernels need beyond SymPy's own, each with an explicit-matrix meaning.

* :class:`StrictLower`, :class:`StrictUpper`: ``tril(X, -1)``, ``triu(X, 1)``;
* :class:`RealPart`: entrywise real part;
* :class:`Hodge4`: the Hodge star of ``4 x 4`` matrices, :math:`(\star X)_{ij} = \tfrac12\sum_{kl}\varepsilon_{ijkl}X_{kl}`;
* :class:`VectorMap`: a scalar function applied entrywise to a vector;
* :class:`PairMatrix`: the matrix ``[f(v_j, v_k)]_{jk}`` built from a vector;
* :class:`Softmax`: exp of every entry, normalised over all entries or over each column, optionally
  with a ``1 +`` in the denominator (the "one softmax");
* :class:`SoftmaxJVP`: the directional derivative of a :class:`Softmax` from its value.

Each node carries its whole meaning beside its ``_latex``: ``explicit`` and ``_explicit_value`` (what
:func:`geoattn.symbolic.interpreter.evaluate` computes) and ``_torchcode`` (what
:class:`geoattn.codegen.printer.TorchKernelPrinter` prints, through its ``printmethod`` as SymPy's
printers call ``_latex`` or ``_pythoncode``). Adding a node touches its class only.
"""

from __future__ import annotations

import sympy as sp
from sympy.core.symbol import Str
from sympy.matrices.expressions import MatrixExpr

from .algebra import UnaryMatrixExpr

__all__ = ["StrictLower", "StrictUpper", "RealPart", "Hodge4", "VectorMap", "PairMatrix", "Softmax", "SoftmaxJVP"]


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


def _hodge4_table() -> list[tuple[int, int]]:
    """For each entry (i, j) of a 4 x 4 matrix, row-major: the flat index of the pair k < l complementary to
    {i, j} and the sign eps_ijkl, so that (star X)_ij = eps_ijkl K_kl with K = (X - X^T)/2; (0, 0) on the diagonal."""
    table = []
    for i in range(4):
        for j in range(4):
            if i == j:
                table.append((0, 0))
                continue
            k, l = (m for m in range(4) if m not in (i, j))
            table.append((4 * k + l, int(sp.LeviCivita(i, j, k, l))))
    return table


class Hodge4(_Unary):
    r"""The Hodge star of a ``4 x 4`` matrix, :math:`(\star X)_{ij} = \tfrac12\sum_{kl}\varepsilon_{ijkl}X_{kl}`.

    It depends on the skew part of ``X`` only and is skew; on skew matrices it is the linear involution that
    splits :math:`\mathfrak{so}(4)` into its self-dual and anti-self-dual halves (claim
    ``exp_skew.hodge_form``).
    """

    def __new__(cls, arg):
        arg = sp.sympify(arg)
        if tuple(arg.shape) != (4, 4):
            raise ValueError(f"Expected a 4 x 4 matrix for the Hodge star. Got shape {tuple(arg.shape)}.")
        return super().__new__(cls, arg)

    @staticmethod
    def explicit(m: sp.Matrix) -> sp.Matrix:
        """The Hodge star of an explicit ``4 x 4`` matrix, from the Levi-Civita symbol."""
        return sp.Matrix(4, 4, lambda i, j: sum(sp.LeviCivita(i, j, k, l) * m[k, l]
                                                for k in range(4) for l in range(4)) / 2)

    def _latex(self, printer):
        return r"\star\left(%s\right)" % printer._print(self.arg)

    def _torchcode(self, printer):
        if getattr(printer, "layout", "batch") != "batch":
            return printer.emptyPrinter(self)  # written for batch-first tensors only
        # entry (i, j) is eps_ijkl (X_kl - X_lk)/2 for the complementary pair k < l, stacked in row-major order:
        # indices and signs are Python constants, so no tensor is built on the host per call
        a = printer.print_arg(self.arg)
        entries = [f"torch.zeros_like({a}[..., 0, 0])" if sign == 0 else
                   f"{'-' if sign < 0 else ''}({a}[..., {k}, {l}] - {a}[..., {l}, {k}])"
                   for k, l, sign in ((*divmod(flat, 4), sign) for flat, sign in _hodge4_table())]
        return f"0.5 * torch.stack([{', '.join(entries)}], dim=-1).unflatten(-1, (4, 4))"


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


#: how a :class:`Softmax` normalises: over every entry, or over each column (the index ``m`` of ``C_mn``)
SOFTMAX_OVER = ("all", "columns")


class Softmax(MatrixExpr):
    r"""``exp`` of every entry of ``C``, normalised over ``over`` (``"all"`` entries or each of the ``"columns"``).

    .. math::

        \mathrm{softmax}_{\text{all}}(C)_{mn} = \frac{e^{C_{mn}}}{\epsilon + \sum_{m'n'} e^{C_{m'n'}}},\qquad
        \mathrm{softmax}_{\text{columns}}(C)_{mn} = \frac{e^{C_{mn}}}{\epsilon + \sum_{m'} e^{C_{m'n}}},

    with :math:`\epsilon = 1` for the one softmax (``one=True``) and 0 otherwise. In the row layout of the
    kernels (``C = z A z^T`` with tokens as rows) a column is the dimension ``-2``.
    """

    def __new__(cls, arg, over: str = "all", one: bool = False):
        over = over.name if isinstance(over, Str) else over  # as rebuilt from its args (doit, subs)
        if over not in SOFTMAX_OVER:
            raise ValueError(f"Expected over in {SOFTMAX_OVER}. Got {over!r}.")
        return super().__new__(cls, sp.sympify(arg), Str(over), sp.true if one else sp.false)

    @property
    def arg(self):
        """The matrix of logits."""
        return self.args[0]

    @property
    def over(self) -> str:
        """``"all"`` or ``"columns"``."""
        return self.args[1].name

    @property
    def one(self) -> bool:
        """Whether the denominator has the extra ``1 +``."""
        return bool(self.args[2])

    @property
    def shape(self):
        """That of the logits."""
        return self.arg.shape

    @staticmethod
    def normalise(e: sp.Matrix, over: str, one: bool) -> sp.Matrix:
        """Explicit positive entries ``e`` (the exponentials) divided by their sum over ``over``, plus 1 if ``one``."""
        eps = 1 if one else 0
        if over == "all":
            total = eps + sum(e)
            return e.applyfunc(lambda x: x / total)
        cols = [eps + sum(e[:, j]) for j in range(e.cols)]
        return sp.Matrix(e.rows, e.cols, lambda i, j: e[i, j] / cols[j])

    def explicit(self, m: sp.Matrix) -> sp.Matrix:
        """The softmax of an explicit matrix (entries ``exp(m_ij)``, kept exact)."""
        return self.normalise(m.applyfunc(sp.exp), self.over, self.one)

    def _explicit_value(self, rec):
        return self.explicit(rec(self.arg))

    def _latex(self, printer):
        sub = r"\text{all}" if self.over == "all" else r"\text{col}"
        sup = "^{+1}" if self.one else ""
        return r"\mathrm{softmax}_{%s}%s\left(%s\right)" % (sub, sup, printer._print(self.arg))

    def _torchcode(self, printer):
        c = printer.print_arg(self.arg)
        if self.over == "all":
            if self.one:  # an extra zero logit carries the 1
                return f"torch.softmax(torch.nn.functional.pad({c}.flatten(-2), (0, 1)), -1)[..., :-1].view_as({c})"
            return f"torch.softmax({c}.flatten(-2), -1).view_as({c})"
        if self.one:
            return f"torch.softmax(torch.nn.functional.pad({c}, (0, 0, 0, 1)), -2)[..., :-1, :]"
        return f"torch.softmax({c}, -2)"


class SoftmaxJVP(MatrixExpr):
    r"""The derivative of a softmax along ``D``, from its value ``G`` (the same for the one softmax).

    .. math::

        \text{all}:\ G\odot D - G\,\langle G, D\rangle,\qquad
        \text{columns}:\ G\odot\bigl(D - \mathbf{1}\,\mathbf{1}^T(G\odot D)\bigr).

    It is the Hessian of the potential ``f`` with :math:`\nabla f = G` applied to ``D`` (ledger
    ``symattn.layer_vjp``).
    """

    def __new__(cls, g, direction, over: str = "all"):
        over = over.name if isinstance(over, Str) else over  # as rebuilt from its args (doit, subs)
        if over not in SOFTMAX_OVER:
            raise ValueError(f"Expected over in {SOFTMAX_OVER}. Got {over!r}.")
        return super().__new__(cls, sp.sympify(g), sp.sympify(direction), Str(over))

    @property
    def over(self) -> str:
        """``"all"`` or ``"columns"``."""
        return self.args[2].name

    @property
    def shape(self):
        """That of the softmax value."""
        return self.args[0].shape

    def explicit(self, g: sp.Matrix, dm: sp.Matrix) -> sp.Matrix:
        """The derivative at explicit ``G`` and ``D``."""
        h = g.multiply_elementwise(dm)
        if self.over == "all":
            inner = sum(h)
            return sp.Matrix(g.rows, g.cols, lambda i, j: g[i, j] * (dm[i, j] - inner))
        cols = [sum(h[:, j]) for j in range(h.cols)]
        return sp.Matrix(g.rows, g.cols, lambda i, j: g[i, j] * (dm[i, j] - cols[j]))

    def _explicit_value(self, rec):
        return self.explicit(rec(self.args[0]), rec(self.args[1]))

    def _latex(self, printer):
        g, dm = (printer._print(a) for a in self.args[:2])
        if self.over == "all":
            return r"%s\odot %s - %s\langle %s, %s\rangle" % (g, dm, g, g, dm)
        return r"%s\odot\left(%s - \mathbf{1}\mathbf{1}^T(%s\odot %s)\right)" % (g, dm, g, dm)

    def _torchcode(self, printer):
        g = printer.print_arg(self.args[0])
        dm = printer.print_arg(self.args[1])
        dims = "(-2, -1)" if self.over == "all" else "-2"
        return f"{printer.wrap(g)} * ({dm} - ({g} * {dm}).sum({dims}, keepdim=True))"
