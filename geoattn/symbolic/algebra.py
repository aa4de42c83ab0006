"""Symbolic building blocks shared by the claims.

Two layers live here:

* **explicit matrices** (:class:`sympy.Matrix`) at a chosen size, whose entries
  are symbols or exact rationals: constructors for general, skew-symmetric and
  symmetric matrices, the Cayley transform, the triangle-to-skew assignments,
  row-stacking, Kronecker products and exact Jacobians;
* **matrix expressions** (:class:`sympy.MatrixSymbol` of symbolic size): the
  one-symbol functional calculus :func:`scalar_image`, which proves identities
  between rational (or exponential) functions of a single matrix ``A`` with
  ``A.T = eps*A``, valid for every size.

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

import itertools
from typing import Callable, Iterable

import sympy as sp
from sympy.matrices.expressions import MatrixExpr

from ._exact import rational_zero

__all__ = [
    "general",
    "skew",
    "symmetric",
    "eye",
    "cayley",
    "right_solve",
    "exp_skew",
    "vstack",
    "Dual",
    "skew_from_lower",
    "upper_triangular_asymmetrize",
    "vec_rows",
    "unvec_rows",
    "kron",
    "poisson_matrix",
    "jacobian_rows",
    "pfaffian",
    "is_zero",
    "UnaryMatrixExpr",
    "MatExp",
    "NotInAlgebra",
    "scalar_image",
    "equal_in_algebra",
    "free_symbols",
]


# ---------------------------------------------------------------------------
# explicit matrices
# ---------------------------------------------------------------------------


def general(name: str, rows: int, cols: int) -> sp.Matrix:
    """A ``rows x cols`` matrix of independent real symbols ``name_i_j``."""
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}_{j}", real=True))


def skew(name: str, n: int) -> sp.Matrix:
    """A generic real skew-symmetric ``n x n`` matrix (free entries below the diagonal)."""
    m = sp.zeros(n, n)
    for i in range(n):
        for j in range(i):
            s = sp.Symbol(f"{name}_{i}_{j}", real=True)
            m[i, j] = s
            m[j, i] = -s
    return m


def symmetric(name: str, n: int) -> sp.Matrix:
    """A generic real symmetric ``n x n`` matrix."""
    m = sp.zeros(n, n)
    for i in range(n):
        for j in range(i + 1):
            s = sp.Symbol(f"{name}_{i}_{j}", real=True)
            m[i, j] = s
            m[j, i] = s
    return m


def eye(n: int) -> sp.Matrix:
    return sp.eye(n)


def right_solve(b, p):
    """``X = B P^{-1}`` (solve ``X P = B``) without forming the inverse.

    For :class:`Dual` arguments the tangent follows from differentiating
    ``X P = B``: ``dX P + X dP = dB``, so ``dX = (dB - X dP) P^{-1}``.
    """
    if isinstance(b, Dual) or isinstance(p, Dual):
        b = Dual.lift(b)
        p = Dual.lift(p)
        x = right_solve(b.v, p.v)
        dx = right_solve(b.dv - x * p.dv, p.v)
        return Dual(x, dx)
    # X P = B  <=>  P^T X^T = B^T
    return p.T.LUsolve(b.T).T


def cayley(c) -> sp.Matrix:
    """``(I - C)(I + C)^{-1}`` for an explicit square matrix (exact)."""
    ident = sp.eye(c.rows)
    return right_solve(ident - c, ident + c)


def vstack(*mats):
    """Stack matrices (or :class:`Dual` matrices) vertically."""
    if any(isinstance(m, Dual) for m in mats):
        duals = [Dual.lift(m) for m in mats]
        return Dual(sp.Matrix.vstack(*[m.v for m in duals]), sp.Matrix.vstack(*[m.dv for m in duals]))
    return sp.Matrix.vstack(*mats)


def exp_skew(s):
    """Exact ``exp(S)`` for the cases the claims need.

    * a :class:`Dual` whose value is zero: ``exp(0 + eps*D) = I + eps*D``
      (``exp(0) = I`` and the derivative of ``exp`` at 0 is the identity);
    * an explicit matrix: :meth:`sympy.Matrix.exp` (closed forms with
      ``cos``/``sin`` for 2 x 2 skew matrices).
    """
    if isinstance(s, Dual):
        if not s.v.is_zero_matrix:
            raise NotImplementedError("Expected a Dual with value 0 (exact exp of a Dual is implemented there only). Got a nonzero value.")
        return Dual(sp.eye(s.rows), s.dv)
    if s.is_zero_matrix:
        return sp.eye(s.rows)
    return s.exp()


class Dual:
    """A matrix with a tangent, ``V + eps*dV`` with ``eps**2 = 0`` (exact).

    Supports the operations the claims use (``+``, ``-``, ``*`` with matrices
    and scalars, ``.T``, :func:`right_solve`, and linear entrywise maps through
    :meth:`linear`), so a function written for :class:`sympy.Matrix` yields
    exact directional derivatives when given a :class:`Dual`.
    """

    _op_priority = 20.0  # sympy matrices defer to us in mixed arithmetic
    __slots__ = ("v", "dv")

    def __init__(self, v: sp.Matrix, dv: sp.Matrix):
        if v.shape != dv.shape:
            raise ValueError(f"Expected value and tangent of one shape. Got {v.shape} and {dv.shape}.")
        self.v = v
        self.dv = dv

    @staticmethod
    def lift(x) -> "Dual":
        if isinstance(x, Dual):
            return x
        return Dual(x, sp.zeros(*x.shape))

    @property
    def shape(self):
        return self.v.shape

    @property
    def rows(self):
        return self.v.rows

    @property
    def cols(self):
        return self.v.cols

    @property
    def T(self) -> "Dual":
        return Dual(self.v.T, self.dv.T)

    def __getitem__(self, key) -> "Dual":
        return Dual(self.v[key], self.dv[key])

    def linear(self, fn: Callable[[sp.Matrix], sp.Matrix]) -> "Dual":
        """Apply a linear map to value and tangent."""
        return Dual(fn(self.v), fn(self.dv))

    def __add__(self, other):
        if isinstance(other, Dual):
            return Dual(self.v + other.v, self.dv + other.dv)
        return Dual(self.v + other, self.dv)

    __radd__ = __add__

    def __neg__(self):
        return Dual(-self.v, -self.dv)

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, Dual):
            return Dual(self.v * other.v, self.dv * other.v + self.v * other.dv)
        return Dual(self.v * other, self.dv * other)

    def __rmul__(self, other):
        return Dual(other * self.v, other * self.dv)


def skew_from_lower(m: sp.Matrix) -> sp.Matrix:
    """Copy the strict lower triangle to the upper one, negated; zero diagonal."""
    if isinstance(m, Dual):
        return m.linear(skew_from_lower)
    n = m.rows
    out = sp.zeros(n, n)
    for i in range(n):
        for j in range(i):
            out[i, j] = m[i, j]
            out[j, i] = -m[i, j]
    return out


def upper_triangular_asymmetrize(m: sp.Matrix) -> sp.Matrix:
    """``[uta(A)]_ij = a_ij (i<j), -a_ji (i>j), 0 (i=j)`` (seed 003)."""
    if isinstance(m, Dual):
        return m.linear(upper_triangular_asymmetrize)
    n = m.rows
    out = sp.zeros(n, n)
    for i in range(n):
        for j in range(i + 1, n):
            out[i, j] = m[i, j]
            out[j, i] = -m[i, j]
    return out


def vec_rows(m: sp.Matrix) -> sp.Matrix:
    """Stack the rows of ``m`` into one column (the seeds' ``Z_vec``)."""
    return sp.Matrix([m[i, j] for i in range(m.rows) for j in range(m.cols)])


def unvec_rows(v: sp.Matrix, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: v[i * cols + j])


def kron(a: sp.Matrix, b: sp.Matrix) -> sp.Matrix:
    """Kronecker product of explicit matrices."""
    return sp.kronecker_product(a, b)


def poisson_matrix(n: int) -> sp.Matrix:
    """``[[0, I_n], [-I_n, 0]]``."""
    z = sp.zeros(n, n)
    i = sp.eye(n)
    return sp.Matrix(sp.BlockMatrix([[z, i], [-i, z]]))


def free_symbols(mats: Iterable[sp.Matrix]) -> list[sp.Symbol]:
    syms: set[sp.Symbol] = set()
    for m in mats:
        syms |= set(m.free_symbols) if hasattr(m, "free_symbols") else set()
    return sorted(syms, key=lambda s: s.name)


def jacobian_rows(fn: Callable[[sp.Matrix], sp.Matrix], z: sp.Matrix) -> sp.Matrix:
    """Exact Jacobian of ``Z -> fn(Z)`` in row-stacked coordinates.

    If ``z`` has free symbols the Jacobian is symbolic; if ``z`` is exact
    (rational) each column is the tangent of ``fn(Dual(Z, E_k))``, computed
    in exact rational arithmetic.
    """
    rows, cols = z.shape
    n_in = rows * cols
    if z.free_symbols:
        out = vec_rows(fn(z))
        zv = vec_rows(z)
        return sp.Matrix(out.rows, n_in, lambda a, b: sp.diff(out[a], zv[b]))
    columns = []
    for k in range(n_in):
        e = sp.zeros(rows, cols)
        e[k // cols, k % cols] = 1
        columns.append(vec_rows(fn(Dual(z, e)).dv))
    return sp.Matrix.hstack(*columns)


def pfaffian(m: sp.Matrix) -> sp.Expr:
    """Pfaffian of an explicit skew-symmetric matrix (expansion along row 0)."""
    n = m.rows
    if n == 0:
        return sp.Integer(1)
    if n % 2:
        return sp.Integer(0)
    total = sp.Integer(0)
    for j in range(1, n):
        keep = [k for k in range(n) if k not in (0, j)]
        sub = m.extract(keep, keep)
        total += (-1) ** (j + 1) * m[0, j] * pfaffian(sub)
    return sp.expand(total)


def is_zero(x) -> bool:
    """Exact zero test for a scalar or matrix of rational functions."""
    if isinstance(x, sp.MatrixBase):
        return all(is_zero(e) for e in x)
    x = sp.sympify(x)
    if x.is_zero:
        return True
    fast = rational_zero(x)  # exact polynomial arithmetic; None where it does not decide
    if fast is not None:
        return fast
    if x.free_symbols:
        return sp.cancel(sp.together(x)) == 0
    return sp.simplify(x) == 0


def principal_even_subsets(n: int):
    for k in range(0, n + 1, 2):
        yield from itertools.combinations(range(n), k)


# ---------------------------------------------------------------------------
# matrix expressions: one-symbol functional calculus
# ---------------------------------------------------------------------------


class UnaryMatrixExpr(MatrixExpr):
    """Base of unevaluated matrix functions ``f(X)`` with the shape of ``X``."""

    def __new__(cls, arg):
        return super().__new__(cls, sp.sympify(arg))

    @property
    def arg(self):
        return self.args[0]

    @property
    def shape(self):
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
                raise NotInAlgebra(f"{e} needs a transpose rule for {sym}")
            return rec(e.arg).subs(var, eps * var)
        if isinstance(e, MatrixExpr):
            raise NotInAlgebra(f"{e} is not a function of {sym}")
        if e.is_commutative and not e.has(MatrixExpr):
            return e
        raise NotInAlgebra(f"cannot map {e!r}")

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
