r"""Step checks for derivations written entry by entry or with block matrices (not public).

Used by the ``linear_symplectic``, ``multihead`` and ``symattn`` families. Each check decides a step from its
displayed sides only (Note [checks see their sides] in :mod:`geoattn.symbolic.proof`):

* :func:`blocks_equal` collapses (nested) block matrices into their finest blocks and compares them one by one
  (the two sides must be partitioned alike);
* :func:`entries_equal` compares scalar expressions made of matrix entries, traces and finite sums: every
  entry of a (block) product is expanded into its sum, sums over sums are merged, constants pulled out, and the
  bound variables renamed canonically before the comparison.

Also registers the lemma ``vec_inner_product`` (the row-wise vectorisation pairs entries in order).
"""

from __future__ import annotations

import sympy as sp
from sympy import Sum
from sympy.matrices.expressions import BlockMatrix, MatrixExpr, Trace, block_collapse
from sympy.matrices.expressions.matexpr import MatrixElement

from ..lemmas import LEMMAS, register
from ..proof import Check, relation, same
from ..steps import _apply
from ._derivations import canon_sums

__all__ = ["collapse", "blocks_equal", "blocks_with", "entries_equal", "normal_sums", "matrices_equal", "BLOCKS",
           "BY_ENTRIES", "ENTRIES"]

if "vec_inner_product" not in LEMMAS:
    register(
        "vec_inner_product",
        r"\mathrm{vec}(X)^T\mathrm{vec}(Y) = \mathrm{Tr}(X^TY); for the row-wise vectorisation "
        r"\mathrm{vec}_r(X) = \mathrm{vec}(X^T) likewise \mathrm{vec}_r(X)^T\mathrm{vec}_r(Y) = "
        r"\sum_{k,i}X_{ki}Y_{ki} = \mathrm{Tr}(X^TY)",
        "Magnus and Neudecker, Matrix Differential Calculus, 3rd ed. (Wiley, 2019), ch. 2, Theorem 2.2",
    )


def collapse(expr):
    """``expr`` with every block product and sum collapsed, blocks of blocks included."""
    if not isinstance(expr, MatrixExpr):
        return expr
    out = block_collapse(expr)
    if isinstance(out, BlockMatrix):
        rows, cols = out.blockshape
        return BlockMatrix([[collapse(out.blocks[r, c]) for c in range(cols)] for r in range(rows)])
    return out


def _tiles(expr, row=0, col=0) -> dict:
    """The finest blocks of ``expr`` after :func:`collapse`: (row offset, column offset, shape) -> block."""
    out = collapse(expr)
    if not isinstance(out, BlockMatrix):
        return {(sp.expand(row), sp.expand(col), out.shape): out}
    tiles: dict = {}
    rows, cols = out.blockshape
    r0 = row
    for r in range(rows):
        c0 = col
        for c in range(cols):
            tiles.update(_tiles(out.blocks[r, c], r0, c0))
            c0 += out.blocks[r, c].shape[1]
        r0 += out.blocks[r, 0].shape[0]
    return tiles


def _same_blocks(lhs, rhs) -> bool:
    left, right = _tiles(lhs), _tiles(rhs)
    if set(left) != set(right):
        return False
    return all(same(left[key], right[key]) for key in left)


def blocks_equal(lhs, rhs) -> bool:
    """Whether two (block) matrix expressions are equal after block multiplication, block by block."""
    try:
        return _same_blocks(lhs, rhs)
    except (TypeError, ValueError, AttributeError):
        return False


def _expand_entries(expr):
    """Every entry of a product (or of a block product) and every trace written as its finite sum."""
    expr = expr.replace(lambda e: isinstance(e, MatrixElement), lambda e: collapse(e.parent)[e.i, e.j])
    expr = expr.replace(lambda e: isinstance(e, Trace), lambda e: e.rewrite(Sum))
    return expr.doit()


def _merge_sums(expr):
    """Sums split over their addends, numeric factors pulled out, a sum of a sum merged into one."""
    expr = sp.expand(expr)
    if isinstance(expr, Sum):
        body = _merge_sums(expr.function)
        if body.is_Add:
            return sp.Add(*[_merge_sums(Sum(t, *expr.limits)) for t in body.args])
        coeff, rest = body.as_independent(*[lim[0] for lim in expr.limits], as_Add=False)
        if rest == 1:
            return _merge_sums(expr.doit())
        if isinstance(rest, Sum):
            return coeff * Sum(rest.function, *rest.limits, *expr.limits)
        return coeff * Sum(rest, *expr.limits)
    if expr.is_Add or expr.is_Mul:
        return expr.func(*[_merge_sums(a) for a in expr.args])
    return expr


def normal_sums(expr):
    """The normal form :func:`entries_equal` compares: entries expanded, sums merged, bound variables renamed."""
    return canon_sums(_merge_sums(_expand_entries(sp.sympify(expr))))


def entries_equal(lhs, rhs) -> bool:
    """Whether two scalar expressions of matrix entries, traces and finite sums agree (see :func:`normal_sums`);
    two explicit matrices of one shape agree entry by entry."""
    if isinstance(lhs, sp.MatrixBase) or isinstance(rhs, sp.MatrixBase):
        if not (isinstance(lhs, sp.MatrixBase) and isinstance(rhs, sp.MatrixBase)) or lhs.shape != rhs.shape:
            return False
        return all(entries_equal(a, b) for a, b in zip(lhs, rhs))
    if isinstance(lhs, MatrixExpr) or isinstance(rhs, MatrixExpr):
        return False
    left, right = normal_sums(lhs), normal_sums(rhs)
    if left == right:
        return True
    try:
        return same(left, right)
    except RecursionError:  # SymPy's symbolic summation can recurse without end on some sums: not confirmed
        return False


_ROW, _COL = sp.symbols("row_ col_", integer=True, nonnegative=True)


def matrices_equal(lhs, rhs) -> bool:
    """Whether two matrix expressions of one shape agree at a generic entry ``(row_, col_)`` (see
    :func:`entries_equal`)."""
    if not (isinstance(lhs, MatrixExpr) and isinstance(rhs, MatrixExpr)) or lhs.shape != rhs.shape:
        return False
    return entries_equal(MatrixElement(lhs, _ROW, _COL), MatrixElement(rhs, _ROW, _COL))


def blocks_with(*subs, facts: tuple[str, ...] | None = None) -> Check:
    """:func:`blocks_equal` after the substitutions ``subs`` and the derivation's facts (all, or those named)."""
    shown = ", ".join(f"{sp.sstr(a)} -> {sp.sstr(b)}" for a, b in subs)
    return Check("block multiplication" + (f" with {shown}" if shown else ""),
                 lambda lhs, rhs, pairs: blocks_equal(_apply(lhs, pairs), _apply(rhs, pairs)), facts, tuple(subs))


#: the block-multiplication check
BLOCKS = relation(blocks_equal, "block multiplication")
#: the generic-entry check of matrix expressions
BY_ENTRIES = relation(matrices_equal, "equal at a generic entry")
#: the entrywise check
ENTRIES = relation(entries_equal, "entries of products as finite sums")

