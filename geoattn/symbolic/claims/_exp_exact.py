r"""Exact arithmetic with exponentials of rational numbers (not public).

The potentials of symplectic attention contain :math:`e^{C_{mn}}`. Two exact strategies handle them:

* at explicit *symbolic* sizes, every :math:`e^{C_{mn}}` is replaced by a fresh symbol after
  differentiating (:func:`freeze_exp`); an identity that cancels to zero as a rational function of the
  matrix entries and those symbols holds for every value they take, the true exponentials included;
* at a *rational* point every exponential is :math:`e^{r}` with :math:`r = k/L`, so an expression is
  :math:`R(e^{1/L})` for a rational function :math:`R \in \mathbb{Q}(x)` (:func:`as_function_of_e`).
  Since :math:`e^{1/L}` is transcendental (Hermite--Lindemann), :math:`R(e^{1/L}) = 0` only when
  :math:`R = 0`: a nonzero :math:`R` is an exact counterexample.
"""

from __future__ import annotations

import math
import random

import sympy as sp

from .._exact import rational_zero
from ..evidence import Counterexample

__all__ = ["ExpField", "NonFiniteResidual", "as_function_of_e", "exp_residual_nonzero", "search_exp_counterexample",
           "X_E"]

#: the variable standing for e^{1/L} in :func:`as_function_of_e`
X_E = sp.Symbol("x", positive=True)

TRANSCENDENCE = (
    "the residual is R(e^{1/L}) for a nonzero rational function R with rational coefficients; e^{1/L} is "
    "transcendental (Hermite-Lindemann), so it is not a root of R and the residual is nonzero"
)


class ExpField:
    r"""Rational functions of the entries of ``Q``, ``A`` and of symbols :math:`e_{mn}` standing for
    :math:`e^{C_{mn}}`, :math:`C = Q^TAQ` (equal entries of ``C`` share a symbol).

    :meth:`d` differentiates with the chain rule :math:`\partial e_{mn} = e_{mn}\,\partial C_{mn}`, so no
    ``exp`` is ever differentiated or simplified by SymPy; :meth:`at` puts the true exponentials back at a
    rational point.
    """

    def __init__(self, Q: sp.Matrix, A: sp.Matrix):
        self.Q, self.A = Q, A
        self.C = (Q.T * A * Q).applyfunc(sp.expand)
        table: dict = {}
        self.E = sp.Matrix(self.C.rows, self.C.cols,
                           lambda m, k: table.setdefault(self.C[m, k], sp.Symbol(f"e_{m}_{k}", positive=True)))
        self.logits = {sym: c for c, sym in table.items()}

    def freeze(self, expr):
        """Replace ``exp(k C_mn)`` (``k`` an integer: SymPy writes ``1/exp(c)`` as ``exp(-c)`` and
        ``exp(c)**2`` as ``exp(2c)``) in ``expr`` by ``e_mn**k``; other exponentials are left as they are."""

        def swap(e):
            u = sp.expand(e.args[0])
            for sym, c in self.logits.items():
                k = sp.cancel(u / c) if c != 0 else None
                if k is not None and k.is_Integer:
                    return sym**k
            return e

        return expr.replace(lambda e: isinstance(e, sp.exp), swap)

    def d(self, expr, var):
        """The derivative of ``expr`` in the entry ``var`` of ``Q`` or ``A``."""
        out = sp.diff(expr, var)
        for sym, c in self.logits.items():
            dc = sp.diff(c, var)
            if dc != 0:
                out += sp.diff(expr, sym) * sym * dc
        return out

    def grad(self, scalar) -> sp.Matrix:
        """The gradient of a scalar in ``Q`` (the shape of ``Q``)."""
        return sp.Matrix(self.Q.rows, self.Q.cols, lambda i, j: self.d(scalar, self.Q[i, j]))

    def jacobian_asymmetry(self, update: sp.Matrix) -> sp.Matrix:
        """``J - J^T`` for the Jacobian of ``vec(update)`` in ``vec(Q)`` (zero iff the update is locally a gradient)."""
        u, w = list(update), list(self.Q)
        jac = sp.Matrix(len(u), len(w), lambda a, b: self.d(u[a], w[b]))
        return jac - jac.T

    def at(self, expr, values: dict):
        """``expr`` at the rational point ``values`` (symbol -> value), the ``e_mn`` replaced by true exponentials."""
        exps = {sym: sp.exp(c.xreplace(values)) for sym, c in self.logits.items()}
        return expr.xreplace(values).xreplace(exps)


def _in_x(value) -> tuple[object, int]:
    """``(S, L)`` with ``value == S(e^{1/L})``, ``S`` the expression with every ``exp`` replaced, not yet
    cancelled."""
    value = sp.sympify(value) if not isinstance(value, sp.MatrixBase) else value
    rationals = [a.args[0] for a in value.atoms(sp.exp)] + ([sp.Integer(1)] if value.has(sp.E) else [])
    bad = [r for r in rationals if not r.is_Rational]
    if bad:
        raise ValueError(f"Expected exponentials of rational numbers only. Got exp({bad[0]}).")
    L = math.lcm(*(int(r.q) for r in rationals)) if rationals else 1
    return value.replace(lambda e: isinstance(e, sp.exp), lambda e: X_E ** (e.args[0] * L)).subs(sp.E, X_E**L), L


def as_function_of_e(value) -> tuple[object, int]:
    """``(R, L)`` with ``value == R(e^{1/L})``; ``value`` may hold ``exp`` of rationals and ``E`` only."""
    out, L = _in_x(value)
    simplify = (lambda x: sp.cancel(sp.together(x)))
    return (out.applyfunc(simplify) if isinstance(out, sp.MatrixBase) else simplify(out)), L


class NonFiniteResidual(ValueError):
    """The residual is not finite at the point (a zero denominator): the point is outside the claim's domain."""


def exp_residual_nonzero(value) -> bool:
    """Whether an exact value built from rationals and ``exp`` of rationals is nonzero (see the module note).

    A value that is not finite (a zero denominator at the point: ``zoo``, ``nan``) is not a counterexample:
    :class:`NonFiniteResidual`, so the caller can draw another point."""
    out, _ = _in_x(value)
    entries = list(out) if isinstance(out, sp.MatrixBase) else [out]
    bad = (sp.zoo, sp.nan, sp.oo, -sp.oo)
    for x in entries:
        if x.has(*bad):
            raise NonFiniteResidual(f"Expected a finite residual. Got {x}.")
    nonzero = False
    for x in entries:  # every entry: a non-finite one anywhere makes the point outside the domain
        # decided as one fraction of polynomials in x over the rationals where every denominator is a nonzero
        # polynomial (Note [fast paths decide only what they prove]); SymPy's cancel otherwise
        zero = rational_zero(x)
        if zero is None:
            r = sp.cancel(sp.together(x))
            if r.has(*bad):
                raise NonFiniteResidual(f"Expected a finite residual. Got {r}.")
            zero = r == 0
        nonzero = nonzero or not zero
    return nonzero


def search_exp_counterexample(residual, variables, sizes, *, seed: int, points: int, name: str,
                              description: str = "") -> Counterexample | None:
    """Exact evaluation of ``residual(field)`` at random small rational points.

    ``variables(size)`` returns the symbolic ``Q`` and ``A``; ``residual`` is computed once per size in the
    :class:`ExpField` of those and evaluated at each point; a nonzero value (decided by
    :func:`exp_residual_nonzero`) is returned as a :class:`Counterexample`.
    """
    rng = random.Random(seed)
    for size in sizes:
        mats = variables(size)
        field = ExpField(mats["Q"], mats["A"])
        res = residual(field)
        syms = sorted(set().union(*(m.free_symbols for m in mats.values())), key=str)
        done = tries = 0
        while done < points and tries < 10 * points:  # points outside the domain are redrawn
            tries += 1
            sub = {s: sp.Rational(rng.randint(-3, 3), rng.randint(1, 2)) for s in syms}
            value = field.at(res, sub)
            try:
                nonzero = exp_residual_nonzero(value)
            except NonFiniteResidual:
                continue
            done += 1
            if nonzero:
                return Counterexample(seed=seed, sizes=dict(size), values={k: m.xreplace(sub) for k, m in mats.items()},
                                      residual_name=name, residual=value,
                                      description=(description + "; " if description else "") + TRANSCENDENCE)
    return None
