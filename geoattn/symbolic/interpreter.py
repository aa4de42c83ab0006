"""An interpreter of the kernel expressions at explicit matrices, independent of the torch printer."""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import (
    Adjoint,
    DiagMatrix,
    HadamardProduct,
    Identity,
    Inverse,
    KroneckerProduct,
    MatAdd,
    MatMul,
    MatPow,
    Transpose,
    ZeroMatrix,
)


__all__ = ["evaluate"]


def evaluate(expr, values: dict, sizes: dict | None = None, *, field=None):
    """Evaluate a kernel expression at explicit matrices.

    ``values`` maps matrix symbols to explicit :class:`sympy.Matrix` (vectors
    as ``k x 1``); ``sizes`` maps size symbols to integers. This interpreter is
    independent of the torch printer, so the claims check the expressions'
    meaning, and the printer is checked against it by the tests.

    With ``field`` (a SymPy domain, e.g. a fraction field of polynomials) the
    values are :class:`~sympy.polys.matrices.DomainMatrix` over it and so is
    the result: arithmetic there keeps every entry reduced, which makes exact
    symbolic identities fast (sums, products, transposes, inverses and
    identities only).
    """
    sizes = sizes or {}
    if field is not None:
        return _evaluate_in_field(expr, values, sizes, field)

    def dim(s):
        return int(sp.sympify(s).xreplace(sizes))

    def rec(e):
        if e in values:
            return values[e]
        if isinstance(e, Identity):
            return sp.eye(dim(e.shape[0]))
        if isinstance(e, ZeroMatrix):
            return sp.zeros(dim(e.shape[0]), dim(e.shape[1]))
        if isinstance(e, MatAdd):
            out = rec(e.args[0])
            for a in e.args[1:]:
                out = out + rec(a)
            return out
        if isinstance(e, MatMul):
            coeff, mats = e.as_coeff_matrices()
            out = rec(mats[0])
            for m in mats[1:]:
                out = out * rec(m)
            return coeff * out
        if isinstance(e, Transpose):
            return rec(e.arg).T
        if isinstance(e, MatPow) and e.exp.is_Integer and e.exp >= 0:
            return rec(e.base) ** int(e.exp)
        if isinstance(e, Adjoint):
            return rec(e.arg).H
        if isinstance(e, Inverse):
            return rec(e.arg).inv()
        if isinstance(e, HadamardProduct):
            out = rec(e.args[0])
            for a in e.args[1:]:
                out = out.multiply_elementwise(rec(a))
            return out
        if isinstance(e, DiagMatrix):
            v = rec(e.args[0])
            return sp.diag(*list(v))
        if isinstance(e, KroneckerProduct):
            out = rec(e.args[0])
            for a in e.args[1:]:
                out = sp.kronecker_product(out, rec(a))
            return out
        own = getattr(e, "_evaluate", None)  # the nodes of geoattn.symbolic.nodes carry their meaning
        if callable(own):
            return own(rec)
        raise TypeError(f"Expected a kernel expression node. Got {type(e).__name__}: {e}.")

    return sp.Matrix(rec(expr))


def _evaluate_in_field(expr, values: dict, sizes: dict, F):
    from sympy.polys.matrices import DomainMatrix

    def rec(e):
        if e in values:
            return values[e]
        if isinstance(e, Identity):
            return DomainMatrix.eye(int(sp.sympify(e.shape[0]).xreplace(sizes)), F)
        if isinstance(e, MatAdd):
            return sum((rec(a) for a in e.args[1:]), rec(e.args[0]))
        if isinstance(e, MatMul):
            coeff, mats = e.as_coeff_matrices()
            out = rec(mats[0])
            for m in mats[1:]:
                out = out * rec(m)
            return out * F.convert(coeff)
        if isinstance(e, Transpose):
            return rec(e.arg).transpose()
        if isinstance(e, Inverse):
            return rec(e.arg).inv()
        raise TypeError(f"Expected a sum, product, transpose, inverse or identity over a field. Got "
                        f"{type(e).__name__}: {e}.")

    return rec(expr)
