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
    Trace,
    Transpose,
    ZeroMatrix,
)


__all__ = ["evaluate"]


def evaluate(expr, values: dict, sizes: dict | None = None, *, field=None):
    """Evaluate a kernel expression at explicit matrices.

    ``values`` maps matrix symbols to explicit :class:`sympy.Matrix` (vectors
    as ``k x 1``); ``sizes`` maps size symbols to integers. This interpreter is
    independent of the torch printer, so the claims check the expressions'
    meaning, and the printer is checked against it by the tests. A custom node
    supplies its own meaning through ``_explicit_value(rec)``
    (:mod:`geoattn.symbolic.nodes`).

    With ``field`` (a SymPy domain, e.g. a fraction field of polynomials) the
    values are :class:`~sympy.polys.matrices.DomainMatrix` over it and so is
    the result: arithmetic there keeps every entry reduced, which makes exact
    symbolic identities fast. Sums, products, transposes, powers, inverses,
    identities, zeros and coefficients with traces are supported there; other nodes raise.
    """
    sizes = sizes or {}

    def dim(s):
        return int(sp.sympify(s).xreplace(sizes))

    if field is None:
        eye, zeros = (lambda n: sp.eye(n)), (lambda m, n: sp.zeros(m, n))
        transpose, scale = (lambda m: m.T), (lambda c, m: c * m)
    else:
        from sympy.polys.matrices import DomainMatrix

        eye, zeros = (lambda n: DomainMatrix.eye(n, field)), (lambda m, n: DomainMatrix.zeros((m, n), field))
        transpose, scale = (lambda m: m.transpose()), (lambda c, m: m * field.convert(c))

    def explicit_only(e):
        if field is not None:
            raise TypeError(f"Expected a sum, product, transpose, power, inverse, identity or zero over a field. Got "
                            f"{type(e).__name__}: {e}.")

    def scalar(c):
        """A coefficient; a batched one (traces of matrices, Note [batched scalars] of the printer) evaluated."""
        traces = c.atoms(Trace) if isinstance(c, sp.Basic) else set()
        if not traces:
            return c
        if field is not None:  # the trace as an element of the field, written back as a SymPy expression
            return c.xreplace({t: field.to_sympy(_field_trace(rec(t.arg), field)) for t in traces})
        return c.xreplace({t: rec(t.arg).trace() for t in traces})

    def rec(e):
        if e in values:
            return values[e]
        if isinstance(e, Identity):
            return eye(dim(e.shape[0]))
        if isinstance(e, ZeroMatrix):
            return zeros(dim(e.shape[0]), dim(e.shape[1]))
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
            return scale(scalar(coeff), out)
        if isinstance(e, Transpose):
            return transpose(rec(e.arg))
        if isinstance(e, Inverse):
            return rec(e.arg).inv()
        if isinstance(e, MatPow) and e.exp.is_Integer and e.exp >= 0:
            return rec(e.base) ** int(e.exp)
        explicit_only(e)
        if isinstance(e, Adjoint):
            return rec(e.arg).H
        if isinstance(e, HadamardProduct):
            out = rec(e.args[0])
            for a in e.args[1:]:
                out = out.multiply_elementwise(rec(a))
            return out
        if isinstance(e, DiagMatrix):
            return sp.diag(*list(rec(e.args[0])))
        if isinstance(e, KroneckerProduct):
            out = rec(e.args[0])
            for a in e.args[1:]:
                out = sp.kronecker_product(out, rec(a))
            return out
        own = getattr(e, "_explicit_value", None)  # the nodes of geoattn.symbolic.nodes carry their meaning
        if callable(own):
            return own(rec)
        raise TypeError(f"Expected a kernel expression node. Got {type(e).__name__}: {e}.")

    out = rec(expr)
    return out if field is not None else sp.Matrix(out)


def _field_trace(m, field):
    """The trace of a square DomainMatrix over ``field``, an element of ``field``."""
    return sum((m[i, i].element for i in range(m.shape[0])), field.zero)
