"""Helpers shared by the claim families (not public)."""

from __future__ import annotations

from typing import Callable, Sequence

import sympy as sp
from sympy.matrices.expressions import Determinant, Inverse, MatrixExpr, Transpose, ZeroMatrix

from .. import expressions as ex
from ..algebra import NotInAlgebra
from ..evidence import Derivation, Evidence, Level, ProofFailed
from ..strategies import MatrixIdentity, certify, exact_evidence, search_counterexample

n = sp.Symbol("n", integer=True, positive=True)
d = sp.Symbol("d", integer=True, positive=True)
T = sp.Symbol("T", integer=True, positive=True)


def same(lhs, rhs) -> bool:
    """Structural equality of two (matrix) expressions after evaluation."""
    if lhs == rhs:
        return True
    try:
        diff = (lhs - rhs).doit()
    except (TypeError, AttributeError):
        diff = sp.sympify(lhs) - sp.sympify(rhs)
    if isinstance(diff, ZeroMatrix) or diff == 0:
        return True
    if isinstance(diff, MatrixExpr):
        try:
            expanded = diff.expand().doit()
        except AttributeError:
            return False
        return isinstance(expanded, ZeroMatrix) or expanded == 0
    return sp.simplify(diff) == 0


def det_rules(expr):
    """Apply ``det(X^T) = det(X)`` and ``det(X^{-1}) = 1/det(X)``."""
    expr = expr.replace(
        lambda e: isinstance(e, Determinant) and isinstance(e.arg, Transpose),
        lambda e: Determinant(e.arg.arg),
    )
    expr = expr.replace(
        lambda e: isinstance(e, Determinant) and isinstance(e.arg, Inverse),
        lambda e: 1 / Determinant(e.arg.arg),
    )
    return expr


def prove_evidence(build: Callable[[], Derivation], method: str = "dimension-generic derivation") -> Evidence:
    """Run the derivation ``build()`` and return ``proved`` evidence; a step that does not verify raises
    :class:`~geoattn.symbolic.evidence.ProofFailed` (the caller records it as a failed proof)."""
    derivation = build().run()
    lemmas = len(derivation.lemmas)
    detail = f"{len(derivation.steps)} steps, {len(derivation.steps) - lemmas} verified by SymPy"
    if lemmas:
        detail += f", {lemmas} stated as lemmas (not verified by SymPy)"
    return Evidence(Level.PROVED, method, derivation=derivation, detail=detail)


def standard(
    ctx,
    *,
    ident: MatrixIdentity | None = None,
    random_sizes: Sequence[dict] = (),
    points: int = 3,
    prove: Callable[[], Derivation] | None = None,
    exact_sizes: Sequence[dict] = (),
    exact_method: str = "exact symbolic identity at explicit sizes",
    certify_sizes: Sequence[dict] = (),
    certify_points: int = 6,
    degree_bound: Callable[[dict], int] | None = None,
    certify_method: str = "exact evaluation at random integer points",
    always_exact: bool = False,
) -> list[Evidence]:
    """The usual pipeline: search, then prove, then check, then certify.

    1. exact evaluation of ``ident`` at random rational points of
       ``random_sizes`` (a nonzero value is a counterexample: ``refuted``);
    2. the derivation ``prove`` (``proved``);
    3. the symbolic identity at ``exact_sizes`` (``checked``), skipped once
       proved unless ``always_exact``;
    4. certification at ``certify_sizes`` (``certified``) when still unproved.
    """
    evidence: list[Evidence] = []
    if ident is not None and random_sizes:
        ce = search_counterexample(ident, list(random_sizes), seed=ctx.seed_for("search"), points=points)
        if ce is not None:
            return [Evidence(Level.REFUTED, "exact evaluation at random rational points", counterexample=ce)]
    proved = False
    failure = ""
    if prove is not None:
        try:
            ev = prove_evidence(prove)
            if ident is not None and random_sizes:
                ev.detail += (
                    f"; consistent with exact evaluation at {points} random rational points per size "
                    + "; ".join(",".join(f"{k}={v}" for k, v in s.items()) for s in random_sizes)
                )
            evidence.append(ev)
            proved = True
        except (ProofFailed, NotInAlgebra) as exc:
            failure = f"derivation failed: {exc}"
    if ident is not None and exact_sizes and (always_exact or not proved):
        ev = exact_evidence(ident, list(exact_sizes), method=exact_method, seed=ctx.seed_for("exact"), detail=failure)
        evidence.append(ev)
        if ev.level is Level.REFUTED:
            return [ev]
    if ident is not None and certify_sizes and not proved and degree_bound is not None:
        ev = certify(
            ident,
            list(certify_sizes),
            seed=ctx.seed_for("certify"),
            points=certify_points,
            degree_bound=degree_bound,
            method=certify_method,
        )
        evidence.append(ev)
        if ev.level is Level.REFUTED:
            return [ev]
    if not evidence and failure:
        evidence.append(Evidence(Level.ERROR, "derivation", detail=failure))
    return evidence


def sizes(**ranges) -> list[dict]:
    """Cartesian product of size ranges, smallest total first."""
    import itertools

    keys = list(ranges)
    combos = [dict(zip(keys, vals)) for vals in itertools.product(*(ranges[k] for k in keys))]
    return sorted(combos, key=lambda s: (sum(v for v in s.values() if isinstance(v, int)), list(s.values())))


# ---------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------


def product_mismatch(factors):
    """First ``(index, cols - rows)`` where consecutive factors do not chain.

    ``factors`` is a list of ``(name, rows, cols)`` with integer or symbolic
    sizes; a symbolic difference counts as a mismatch unless it simplifies to
    zero (the product must be defined for every size).
    """
    for idx in range(len(factors) - 1):
        gap = sp.simplify(sp.sympify(factors[idx][2]) - sp.sympify(factors[idx + 1][1]))
        if gap != 0:
            return idx, gap
    return None


def shape_evidence(ctx, build, concrete_sizes, *, expect_shape=None, name="product"):
    """Shape check of a product of factors.

    ``build(size)`` returns the factor list for a size dict whose values may be
    symbols (dimension-generic) or integers. If the symbolic product chains for
    every size (and has ``expect_shape(size)`` when given) the claim is
    ``proved``; otherwise the first concrete size where it does not chain is a
    counterexample.
    """
    from ..evidence import Counterexample, Derivation, Step

    generic = {k: sp.Symbol(k, integer=True, positive=True) for k in concrete_sizes[0]}
    factors = build(generic)
    bad = product_mismatch(factors)
    shape = (factors[0][1], factors[-1][2])
    ok_shape = expect_shape is None or all(
        sp.simplify(sp.sympify(a) - sp.sympify(b)) == 0 for a, b in zip(shape, expect_shape(generic))
    )
    if bad is None and ok_shape:
        chain = r" \cdot ".join(rf"{{{nm}}}_{{{sp.latex(r)}\times {sp.latex(c)}}}" for nm, r, c in factors)
        steps = [
            Step(
                f"cols({factors[i][0]})",
                f"rows({factors[i + 1][0]})",
                "inner dimensions agree",
                (lambda i=i: product_mismatch(factors[i : i + 2]) is None),
            )
            for i in range(len(factors) - 1)
        ]
        steps.append(
            Step(
                f"shape({name})",
                f"{sp.sstr(shape[0])} x {sp.sstr(shape[1])}",
                "rows of the first factor, columns of the last",
                lambda: ok_shape,
            )
        )
        deriv = Derivation(assumptions=[chain], steps=steps, conclusion=rf"{name}\ \text{{is defined for all sizes}}")
        return [prove_evidence(lambda: deriv, method="dimension-generic shape inference")]
    for size in concrete_sizes:
        fac = build(size)
        mism = product_mismatch(fac)
        if mism is not None:
            idx, gap = mism
            ce = Counterexample(
                seed=None,
                sizes=dict(size),
                values={f[0]: f"{f[1]}x{f[2]}" for f in fac},
                residual_name=f"cols({fac[idx][0]}) - rows({fac[idx + 1][0]})",
                residual=sp.Integer(gap),
                description=f"{name}: a {fac[idx][1]}x{fac[idx][2]} factor cannot multiply a "
                f"{fac[idx + 1][1]}x{fac[idx + 1][2]} one",
            )
            return [Evidence(Level.REFUTED, "shape inference at explicit sizes", counterexample=ce)]
        got = (fac[0][1], fac[-1][2])
        if expect_shape is not None and tuple(got) != tuple(expect_shape(size)):
            ce = Counterexample(
                seed=None,
                sizes=dict(size),
                values={f[0]: f"{f[1]}x{f[2]}" for f in fac},
                residual_name=f"shape({name}) - expected",
                residual=sp.Matrix([[got[0] - expect_shape(size)[0], got[1] - expect_shape(size)[1]]]),
                description=f"{name} is {got[0]}x{got[1]}, expected {expect_shape(size)}",
            )
            return [Evidence(Level.REFUTED, "shape inference at explicit sizes", counterexample=ce)]
    return [Evidence(Level.ERROR, "shape inference", detail="generic mismatch but no concrete counterexample")]


def kernel_eval(expr, values: dict, size: dict):
    """A kernel expression at explicit matrices, with the sizes ``T`` and ``d`` (default 1) of ``size``."""
    return ex.evaluate(expr, values, {ex.T: size["T"], ex.d: size.get("d", 1)})
