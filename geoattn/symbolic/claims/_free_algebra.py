"""The free algebra the low-rank identities are checked in (Note [free-algebra reduction] in
:mod:`geoattn.symbolic.claims.lowrank`)."""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import (
    Identity,
    MatAdd,
    MatMul,
    MatPow,
    MatrixSymbol,
    Transpose,
    ZeroMatrix,
)

from ..algebra import NotInAlgebra

# ---------------------------------------------------------------------------
# the free algebra (Note [free-algebra reduction])
# ---------------------------------------------------------------------------


def nc(name: str) -> sp.Symbol:
    """The noncommutative generator called ``name`` (``"Q^T"`` is the transpose of ``"Q"``)."""
    return sp.Symbol(name, commutative=False)


def _transposed_symbol(s: sp.Symbol) -> sp.Symbol:
    name = s.name
    return nc(name[:-2] if name.endswith("^T") else name + "^T")


def nc_transpose(e) -> sp.Expr:
    """The transpose in the free algebra: reverse every product, transpose every generator."""
    e = sp.sympify(e)
    if e.is_Add:
        return sp.Add(*[nc_transpose(a) for a in e.args])
    if e.is_Mul:
        c, ncs = e.args_cnc()
        return sp.Mul(*c) * sp.Mul(*[nc_transpose(f) for f in reversed(ncs)])
    if e.is_Pow:
        return nc_transpose(e.base) ** e.exp
    if e.is_Symbol and not e.is_commutative:
        return _transposed_symbol(e)
    if e.is_commutative:
        return e
    raise NotInAlgebra(f"Expected a polynomial in noncommutative symbols. Got {e!r}.")


def to_nc(expr, env: dict | None = None) -> sp.Expr:
    """Image of a matrix expression in the free algebra.

    Parameters
    ----------
    expr:
        a matrix expression built from matrix symbols, identities, sums, products,
        rational multiples, transposes and nonnegative integer powers.
    env:
        matrix-symbol names to free-algebra elements (e.g. ``{"x": Q*R}``); other
        symbols become generators of their own name.

    Returns
    -------
    sympy.Expr
        the image; identities map to 1.

    Raises
    ------
    NotInAlgebra
        for an inverse or any other node (those are handled by the functional calculus).
    """
    env = env or {}

    def rec(e):
        if isinstance(e, MatrixSymbol):
            return env[e.name] if e.name in env else nc(e.name)
        if isinstance(e, Identity):
            return sp.Integer(1)
        if isinstance(e, ZeroMatrix):
            return sp.Integer(0)
        if isinstance(e, Transpose):
            return nc_transpose(rec(e.arg))
        if isinstance(e, MatAdd):
            return sp.Add(*[rec(a) for a in e.args])
        if isinstance(e, MatMul):
            coeff, mats = e.as_coeff_matrices()
            return coeff * sp.Mul(*[rec(m) for m in mats])
        if isinstance(e, MatPow) and e.exp.is_Integer and e.exp >= 0:
            return rec(e.base) ** int(e.exp)
        raise NotInAlgebra(f"Expected a polynomial matrix expression. Got {type(e).__name__}: {e}.")

    return rec(sp.sympify(expr))


def compose(bindings, env: dict | None = None) -> dict:
    """Images of a kernel's bindings, each substituted into the later ones (name -> element)."""
    env = dict(env or {})
    for name, expr in bindings:
        env[name] = to_nc(expr, env)
    return env


#: the hypothesis Q^T Q = I as a rewriting rule (word, replacement)
ORTHONORMAL = (((nc("Q^T"), nc("Q")), sp.Integer(1)),)


def _tokens(term):
    c, ncs = term.args_cnc()
    toks = []
    for f in ncs:
        if f.is_Pow and f.exp.is_Integer and f.exp > 0:
            toks.extend([f.base] * int(f.exp))
        else:
            toks.append(f)  # a generator, or a power with a symbolic exponent (kept whole)
    return sp.Mul(*c), toks


def _merge(toks) -> sp.Expr:
    """The product of ``toks`` with adjacent powers of one base merged (``S**n*S -> S**(n+1)``)."""
    out: list[list] = []
    for t in toks:
        base, e = t.as_base_exp()
        if out and out[-1][0] == base:
            out[-1][1] += e
        else:
            out.append([base, e])
    return sp.Mul(*[b**e for b, e in out if e != 0])


def nc_reduce(expr, rules=ORTHONORMAL, max_steps: int = 100_000) -> sp.Expr:
    """Normal form of ``expr`` under the rewriting ``rules`` (see Note [free-algebra reduction]).

    Parameters
    ----------
    expr:
        a polynomial in noncommutative symbols with rational (or commuting symbolic) coefficients.
    rules:
        pairs ``(word, replacement)``: a tuple of generators and the element it is replaced by.
    max_steps:
        a bound on the number of rewrites (the rules used here shorten words, so it is never reached).

    Returns
    -------
    sympy.Expr
        the expanded normal form; adjacent powers of one base are merged.
    """
    work = list(sp.Add.make_args(sp.expand(expr)))
    done = []
    steps = 0
    while work:
        steps += 1
        if steps > max_steps:
            raise RuntimeError(f"Expected the rewriting to terminate within {max_steps} rewrites. Got more "
                               f"(next term {work[-1]}).")
        term = work.pop()
        c, toks = _tokens(term)
        hit = None
        for i in range(len(toks)):
            for word, rep in rules:
                if tuple(toks[i : i + len(word)]) == tuple(word):
                    hit = (i, len(word), rep)
                    break
            if hit:
                break
        if hit is None:
            done.append(c * _merge(toks))
            continue
        i, n, rep = hit
        new = c * sp.Mul(*toks[:i]) * rep * sp.Mul(*toks[i + n :])
        work.extend(sp.Add.make_args(sp.expand(new)))
    return sp.expand(sp.Add(*done))


def nc_equal(lhs, rhs, rules=ORTHONORMAL) -> bool:
    """``lhs == rhs`` modulo the ideal of ``rules`` (an exact decision for confluent rules)."""
    return nc_reduce(sp.sympify(lhs) - sp.sympify(rhs), rules) == 0


Q, Qt, R, Rt = nc("Q"), nc("Q^T"), nc("R"), nc("R^T")
An, At, S, St = nc("A"), nc("A^T"), nc("S"), nc("S^T")
W, G, Gt = nc("W"), nc("Gy"), nc("Gy^T")
K1, K2 = nc("K1"), nc("K2")
Y1n = nc("Y1")
#: Y1 = Q^T Gy (kernel vp_lowrank_project) as two more rules; no left side overlaps another, so the
#: system stays confluent (Note [free-algebra reduction])
PROJECTED = ORTHONORMAL + (((Qt, G), Y1n), ((Gt, Q), nc("Y1^T")))
#: A^T = -A (and S^T = -S) as a substitution
SKEW = {At: -An, St: -S}


def nc_check(rules=ORTHONORMAL):
    """A step check: the two displayed sides are equal in the free algebra modulo ``rules`` (see :func:`nc_equal`)."""
    from ..proof import Check

    return Check("free algebra modulo " + ("no rules" if not rules else f"{len(rules)} rules"),
                 lambda lhs, rhs, pairs: nc_equal(lhs, rhs, rules))
