r"""Fast exact decisions for the engine: zero tests of rational functions and evaluation at rational points.

Two tools, both exact (no floating point), used by :func:`~geoattn.symbolic.proof.same`,
:func:`~geoattn.symbolic.algebra.is_zero` and the engine's mutation tests before SymPy's simplification:

* :func:`rational_zero` writes a scalar expression as one fraction ``N/D`` of sparse polynomials over the
  rationals (no expression-level ``together``/``cancel``) and reads off whether ``N`` is the zero polynomial;
* :func:`point_differs` evaluates two (matrix) expressions at one random rational point (random rational
  matrices for the matrix symbols, small integers for the sizes) and reports an exactly nonzero difference.

Note [fast paths decide only what they prove]
---------------------------------------------
A fast path may answer only where its answer is a proof, and then it is the answer the slow path gives:

* ``N`` the zero polynomial: the expression is zero wherever it is defined (the map from polynomials in the
  symbols, and in any other subexpression taken as an opaque generator, to functions is a ring homomorphism).
  A nonzero ``N`` proves a nonzero expression only when no opaque generator occurs (generators may be
  algebraically dependent: ``exp(x) exp(-x) = 1``), so then the answer is "undecided". An opaque generator in a
  denominator is refused, so that every denominator is a nonzero polynomial in symbols.
* a nonzero exact difference at a point proves that the two sides differ as functions, so no sound rewriting
  (SymPy's ``doit``, ``expand``, ``simplify``) can make them equal: the slow path answers "not equal" too. A zero
  difference proves nothing: the caller goes on to the slow path. Points respect the symbols' assumptions
  (a positive symbol gets a positive value, an integer one an integer), sizes are positive integers, and a point
  where an inverse does not exist is redrawn, so every evaluated expression is defined there.
"""

from __future__ import annotations

import random

import sympy as sp
from sympy.matrices.expressions import (
    Adjoint,
    BlockDiagMatrix,
    BlockMatrix,
    Determinant,
    HadamardProduct,
    Identity,
    Inverse,
    KroneckerProduct,
    MatAdd,
    MatMul,
    MatPow,
    MatrixExpr,
    MatrixSymbol,
    OneMatrix,
    Trace,
    Transpose,
    ZeroMatrix,
)
from sympy.matrices.expressions.matexpr import MatrixElement
from sympy.polys.domains import QQ
from sympy.polys.matrices import DomainMatrix
from sympy.polys.rings import ring

__all__ = ["rational_zero", "point_differs", "polynomial_gradient", "NotEvaluable"]


class NotEvaluable(ValueError):
    """The expression has a node the fast paths do not evaluate (the caller falls back to SymPy)."""


# ---------------------------------------------------------------------------
# zero tests of rational functions
# ---------------------------------------------------------------------------


def _generators(expr) -> tuple[list, dict]:
    """The symbols of ``expr`` and its opaque subexpressions (anything but sums, products, integer powers,
    rationals and symbols), the latter mapped to dummies."""
    symbols: set = set()
    opaque: dict = {}
    stack = [expr]
    while stack:
        e = stack.pop()
        if not e.is_commutative:
            raise NotEvaluable(f"Expected commutative factors. Got {e}.")
        if e.is_Symbol:
            symbols.add(e)
        elif e.is_Rational:
            continue
        elif e.is_Add or e.is_Mul or (e.is_Pow and e.exp.is_Integer):
            stack.extend(e.args)
        elif e not in opaque:
            opaque[e] = sp.Dummy("g")
    return sorted(symbols, key=sp.default_sort_key), opaque


def rational_zero(expr) -> bool | None:
    """Whether a scalar SymPy expression is zero, decided as a fraction of polynomials over the rationals.

    Returns ``True`` (zero), ``False`` (nonzero: only when no opaque subexpression occurs) or ``None``
    (undecided: a float, a matrix, an opaque generator in a denominator or a nonzero numerator over opaque
    generators). See Note [fast paths decide only what they prove].
    """
    if not isinstance(expr, sp.Expr) or isinstance(expr, MatrixExpr) or expr.has(sp.Float):
        return None
    if not expr.is_commutative:
        return None
    if expr.is_Rational:
        return expr == 0
    try:
        symbols, opaque = _generators(expr)
    except NotEvaluable:
        return None
    R, *gens = ring(symbols + list(opaque.values()), QQ)
    table = dict(zip(symbols + list(opaque), gens))
    try:
        num, _ = _fraction(expr, R, table, len(symbols))
    except NotEvaluable:
        return None
    if not num:
        return True
    return False if not opaque else None


def _fraction(expr, R, table: dict, n_plain: int):
    """``(num, den)``, polynomials of the ring ``R`` with ``expr == num / den``; ``table`` maps the symbols and the
    opaque subexpressions to ``R``'s generators, the first ``n_plain`` of them the symbols' (shared subtrees built
    once). A denominator that is zero or uses an opaque generator raises :class:`NotEvaluable`; a polynomial gives
    ``den == R.one``."""
    memo: dict = {}

    def plain(p) -> bool:
        """Whether the polynomial ``p`` uses no opaque generator."""
        return all(not any(m[n_plain:]) for m in p.monoms())

    def rec(e):
        if e not in memo:
            memo[e] = build(e)
        return memo[e]

    def build(e):
        if e in table:
            return table[e], R.one
        if e.is_Rational:
            return R(QQ(int(e.p), int(e.q))), R.one
        if e.is_Add:
            num, den = rec(e.args[0])
            for a in e.args[1:]:
                num, den = _add((num, den), rec(a), R)
        elif e.is_Mul:
            num, den = R.one, R.one
            for a in e.args:
                n2, d2 = rec(a)
                num, den = num * n2, den * d2
        else:  # an integer power (anything else is a generator)
            num, den = rec(e.base)
            k = int(e.exp)
            if k < 0:
                if not num or not plain(num):
                    raise NotEvaluable("Expected a nonzero denominator of rational generators. "
                                       "Got one that is zero or opaque.")
                num, den, k = den, num, -k
            num, den = num**k, den**k
        return num, den

    return rec(expr)


def polynomial_gradient(expr, wrt) -> list:
    r"""The derivatives of the polynomial ``expr`` in each symbol of ``wrt``, as expanded SymPy expressions.

    ``expr`` may be any unexpanded tree of sums, products and nonnegative integer powers of symbols and
    rationals; it is built once as a sparse polynomial over the rationals (shared subtrees once) and each
    derivative is read off that polynomial, so no expression-level ``expand``, ``diff`` or ``subs`` runs. A symbol
    of ``wrt`` that ``expr`` does not contain has derivative 0. Raises :class:`NotEvaluable` for anything else (a
    float, a negative power, a function). Exact: the result is SymPy's ``expand(diff(expr, s))``.

    Examples
    --------
    >>> import sympy as sp
    >>> x, y = sp.symbols("x y")
    >>> polynomial_gradient((x + y) ** 2 * (x - 1), [x, y])
    [3*x**2 + 4*x*y - 2*x + y**2 - 2*y, 2*x**2 + 2*x*y - 2*x - 2*y]
    """
    expr = sp.sympify(expr)
    if expr.has(sp.Float):
        raise NotEvaluable("Expected exact rational coefficients. Got a float.")
    symbols, opaque = _generators(expr)
    if opaque:
        raise NotEvaluable(f"Expected a polynomial in symbols. Got the subexpression {next(iter(opaque))}.")
    wrt = list(wrt)
    if not all(isinstance(s, sp.Symbol) for s in wrt) or len(set(wrt)) != len(wrt):
        raise ValueError(f"Expected distinct symbols to differentiate by. Got {wrt}.")
    extra = [s for s in wrt if s not in set(symbols)]
    R, *gens = ring(symbols + extra, QQ)
    table = dict(zip(symbols + extra, gens))
    p, den = _fraction(expr, R, table, len(gens))
    if den != R.one:
        raise NotEvaluable(f"Expected a polynomial. Got a denominator in {expr}.")
    return [p.diff(table[s]).as_expr() for s in wrt]


def _add(a, b, R):
    """``a + b`` for fractions ``(num, den)``, sharing the denominator when one divides the other."""
    (n1, d1), (n2, d2) = a, b
    if d1 == d2:
        return n1 + n2, d1
    if d1 == R.one:
        return n1 * d2 + n2, d2
    if d2 == R.one:
        return n1 + n2 * d1, d1
    q, r = divmod(d2, d1)
    if not r:
        return n1 * q + n2, d2
    q, r = divmod(d1, d2)
    if not r:
        return n1 + n2 * q, d1
    return n1 * d2 + n2 * d1, d1 * d2


# ---------------------------------------------------------------------------
# evaluation at a rational point
# ---------------------------------------------------------------------------

_SIZES = (3, 2, 4)


def _value_for(sym: sp.Symbol, rng: random.Random, integer_only: bool = False):
    """A rational value of ``sym`` that has every assumption ``sym`` states (or :class:`NotEvaluable`)."""
    facts = sym.assumptions0
    for _ in range(20):
        p = rng.randint(1, 9) * rng.choice((1, -1))
        q = 1 if integer_only or facts.get("integer") else rng.randint(1, 9)
        for cand in (sp.Rational(p, q), sp.Rational(abs(p), q)):
            if all(getattr(cand, f"is_{key}") is val for key, val in facts.items()):
                return cand
    raise NotEvaluable(f"Expected a rational value with the assumptions of {sym}. Got none.")


class _Point:
    """One random rational point: values of symbols and matrix symbols, chosen at first use."""

    def __init__(self, rng: random.Random, exprs):
        self.rng = rng
        self.values: dict = {}
        self.memo: dict = {}
        dims = set()
        for e in exprs:
            if isinstance(e, sp.Basic):
                for atom in e.atoms(MatrixSymbol, Identity, ZeroMatrix, OneMatrix):
                    for s in atom.shape:
                        dims |= sp.sympify(s).free_symbols
        for k, s in enumerate(sorted(dims, key=sp.default_sort_key)):
            value = sp.Integer(_SIZES[k % len(_SIZES)])
            if not all(getattr(value, f"is_{key}") is val for key, val in s.assumptions0.items()):
                value = _value_for(s, rng, integer_only=True)
            self.values[s] = value

    def dim(self, s) -> int:
        v = self.scalar(sp.sympify(s))
        if v.denominator != 1 or v.numerator < 1:
            raise NotEvaluable(f"Expected a positive integer size at the point. Got {s}.")
        return int(v.numerator)

    def rational(self) -> object:
        return QQ(self.rng.randint(-9, 9), self.rng.randint(1, 9))

    def scalar(self, e):
        """The value of a scalar expression, an element of QQ."""
        if e in self.memo:
            return self.memo[e]
        if e.is_Rational:
            out = QQ(int(e.p), int(e.q))
        elif e.is_Symbol:
            if e not in self.values:
                self.values[e] = _value_for(e, self.rng)
            v = self.values[e]
            out = QQ(int(v.p), int(v.q))
        elif e.is_Add:
            out = sum((self.scalar(a) for a in e.args), QQ(0))
        elif e.is_Mul:
            out = QQ(1)
            for a in e.args:
                out *= self.scalar(a)
        elif e.is_Pow:
            k = self.scalar(e.exp)
            if k.denominator != 1:
                raise NotEvaluable(f"Expected an integer exponent. Got {e}.")
            base = self.scalar(e.base)
            if k < 0 and not base:
                raise _Singular()
            out = base ** int(k.numerator)
        elif isinstance(e, Trace):
            m = self.matrix(e.arg)
            out = sum((m[i, i].element for i in range(m.shape[0])), QQ(0))
        elif isinstance(e, Determinant):
            out = self.matrix(e.arg).det()
        elif isinstance(e, MatrixElement):
            out = self.matrix(e.parent)[self.dim(e.i), self.dim(e.j)].element
        else:
            raise NotEvaluable(f"Expected a scalar node the point evaluation knows. Got {type(e).__name__}.")
        self.memo[e] = out
        return out

    def matrix(self, e) -> DomainMatrix:
        """The value of a matrix expression (or an explicit matrix), a DomainMatrix over QQ."""
        if isinstance(e, sp.MatrixBase):
            return DomainMatrix([[self.scalar(sp.sympify(x)) for x in e.row(i)] for i in range(e.rows)],
                                e.shape, QQ)
        if e in self.memo:
            return self.memo[e]
        out = self._matrix(e)
        self.memo[e] = out
        return out

    def _matrix(self, e) -> DomainMatrix:
        if isinstance(e, MatrixSymbol):
            rows, cols = self.dim(e.rows), self.dim(e.cols)
            return DomainMatrix([[self.rational() for _ in range(cols)] for _ in range(rows)], (rows, cols), QQ)
        if isinstance(e, Identity):
            return DomainMatrix.eye(self.dim(e.rows), QQ)
        if isinstance(e, ZeroMatrix):
            return DomainMatrix.zeros((self.dim(e.rows), self.dim(e.cols)), QQ)
        if isinstance(e, OneMatrix):
            return DomainMatrix.ones((self.dim(e.rows), self.dim(e.cols)), QQ)
        if isinstance(e, MatAdd):
            out = self.matrix(e.args[0])
            for a in e.args[1:]:
                out = out + self.matrix(a)
            return out
        if isinstance(e, MatMul):
            coeff, mats = QQ(1), []
            for a in e.args:
                if isinstance(a, (MatrixExpr, sp.MatrixBase)):
                    mats.append(self.matrix(a))
                else:
                    coeff *= self.scalar(a)
            out = mats[0]
            for m in mats[1:]:
                out = out * m
            return out * coeff
        if isinstance(e, MatPow):
            k = self.scalar(e.exp)
            if k.denominator != 1:
                raise NotEvaluable(f"Expected an integer exponent of a matrix power. Got {e}.")
            base = self.matrix(e.base)
            if k < 0:
                base, k = _inverse(base), -k
            return base ** int(k.numerator) if k else DomainMatrix.eye(base.shape[0], QQ)
        if isinstance(e, (Transpose, Adjoint)):  # the values are real
            return self.matrix(e.arg).transpose()
        if isinstance(e, Inverse):
            return _inverse(self.matrix(e.arg))
        if isinstance(e, BlockDiagMatrix):
            return _blockdiag([self.matrix(b) for b in e.args])
        if isinstance(e, BlockMatrix):
            rows = [[self.matrix(b) for b in e.blocks.row(i)] for i in range(e.blocks.rows)]
            return DomainMatrix.vstack(*[DomainMatrix.hstack(*r) for r in rows])
        if isinstance(e, HadamardProduct):
            out = self.matrix(e.args[0])
            for a in e.args[1:]:
                out = out.mul_elementwise(self.matrix(a))
            return out
        if isinstance(e, KroneckerProduct):
            out = self.matrix(e.args[0])
            for a in e.args[1:]:
                out = _kron(out, self.matrix(a))
            return out
        raise NotEvaluable(f"Expected a matrix node the point evaluation knows. Got {type(e).__name__}.")


class _Singular(ArithmeticError):
    """An inverse that does not exist at the point: draw another point."""


def _inverse(m: DomainMatrix) -> DomainMatrix:
    if m.shape[0] != m.shape[1] or not m.det():
        raise _Singular()
    return m.inv()


def _blockdiag(blocks: list) -> DomainMatrix:
    rows = []
    cols = sum(b.shape[1] for b in blocks)
    left = 0
    for b in blocks:
        pad_l = DomainMatrix.zeros((b.shape[0], left), QQ)
        pad_r = DomainMatrix.zeros((b.shape[0], cols - left - b.shape[1]), QQ)
        rows.append(DomainMatrix.hstack(*[p for p in (pad_l, b, pad_r) if p.shape[1]]))
        left += b.shape[1]
    return DomainMatrix.vstack(*rows)


def _kron(a: DomainMatrix, b: DomainMatrix) -> DomainMatrix:
    la, lb = a.to_list(), b.to_list()
    rows = [[x * y for x in ra for y in rb] for ra in la for rb in lb]
    return DomainMatrix(rows, (a.shape[0] * b.shape[0], a.shape[1] * b.shape[1]), QQ)


def _is_matrix(x) -> bool:
    return isinstance(x, (MatrixExpr, sp.MatrixBase))


def point_differs(lhs, rhs, *, seed: int = 0, tries: int = 3) -> bool:
    """Whether ``lhs - rhs`` is exactly nonzero at a random rational point (``True`` proves they differ as
    functions; ``False`` means undecided: zero at the point, a node it does not evaluate, or no point found
    where every inverse exists). See Note [fast paths decide only what they prove]."""
    if _is_matrix(lhs) != _is_matrix(rhs):
        return False
    if not _is_matrix(lhs):
        try:
            lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
        except (sp.SympifyError, TypeError):
            return False
        if not isinstance(lhs, sp.Expr) or not isinstance(rhs, sp.Expr):
            return False
    rng = random.Random(seed)
    for _ in range(tries):
        try:
            point = _Point(rng, (lhs, rhs))
            if _is_matrix(lhs):
                a, b = point.matrix(lhs), point.matrix(rhs)
                if a.shape != b.shape:
                    return False
                return not (a - b).is_zero_matrix
            return point.scalar(lhs) != point.scalar(rhs)
        except _Singular:
            continue
        except Exception:  # noqa: BLE001 - a node or value it cannot evaluate: undecided, the caller falls back
            return False
    return False
