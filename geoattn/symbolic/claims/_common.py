"""Helpers shared by the claim families (not public)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import sympy as sp
from sympy.matrices.expressions import Determinant, Inverse, MatrixExpr, Transpose, ZeroMatrix

from .. import expressions as ex
from ..algebra import NotInAlgebra
from ..proof import identity
from ..evidence import Derivation, Evidence, Level, ProofFailed
from ..proof import det_rules, same, validate  # noqa: F401  (same, det_rules re-exported)
from ..strategies import MatrixIdentity, certify, exact_evidence, search_counterexample  # noqa: F401
from ..policy import NOWHERE, Grows, Policy, Sizes, at_sizes, grid, prove_evidence, sizes  # noqa: F401  (re-exported)

n = sp.Symbol("n", integer=True, positive=True)
d = sp.Symbol("d", integer=True, positive=True)
T = sp.Symbol("T", integer=True, positive=True)


@dataclass(frozen=True, kw_only=True)
class ShapePolicy:
    """The evidence policy of a shape claim: shape inference of the product ``factors(size)`` (a list of
    ``(name, rows, cols)``), dimension-generic first, then at ``sizes`` (see :func:`shape_evidence`)."""

    factors: Callable[[dict], list]
    sizes: Sizes
    name: str = "product"
    expect_shape: Callable[[dict], tuple] | None = None

    def __call__(self, ctx) -> list[Evidence]:
        """The evidence at the depth and seed of ``ctx``."""
        return shape_evidence(ctx, self.factors, self.sizes.at(ctx), expect_shape=self.expect_shape, name=self.name)


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
    from ..proof import identity

    generic = {k: sp.Symbol(k, integer=True, positive=True) for k in concrete_sizes[0]}
    factors = build(generic)
    bad = product_mismatch(factors)
    shape = (factors[0][1], factors[-1][2])
    ok_shape = expect_shape is None or all(
        sp.simplify(sp.sympify(a) - sp.sympify(b)) == 0 for a, b in zip(shape, expect_shape(generic))
    )
    if bad is None and ok_shape:
        chain = r" \cdot ".join(rf"{{{nm}}}_{{{sp.latex(r)}\times {sp.latex(c)}}}" for nm, r, c in factors)
        # one step: the inner dimensions (and the product's shape) as a vector, equal side by side
        cols = [sp.sympify(f[2]) for f in factors[:-1]]
        rows = [sp.sympify(f[1]) for f in factors[1:]]
        rule = "inner dimensions agree"
        if expect_shape is not None:
            cols += [sp.sympify(shape[0]), sp.sympify(shape[1])]
            rows += [sp.sympify(x) for x in expect_shape(generic)]
            rule += "; rows of the first factor and columns of the last are the expected shape"
        lhs, rhs = sp.ImmutableMatrix([cols]), sp.ImmutableMatrix([rows])
        deriv = Derivation(
            assumptions=[chain],
            steps=[Step(lhs, rhs, rule, identity())],
            conclusion=sp.Eq(lhs, rhs, evaluate=False),
            remark=rf"{name}\ \text{{is defined for all sizes}}",
        )
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


def run_bindings(bindings, values: dict, sizes: dict, post: Callable | None = None) -> dict:
    """Evaluate a kernel's bindings in order at explicit matrices (later bindings name earlier ones by symbol);
    returns name -> matrix. ``sizes`` maps size symbols to integers; ``post`` (optional) is applied to every
    entry of each result before later bindings use it."""
    table = {}
    for _, expr in bindings:
        for s in sp.sympify(expr).atoms(sp.MatrixSymbol):
            table.setdefault(s.name, s)
    env = dict(values)
    out = {}
    for name, expr in bindings:
        out[name] = ex.evaluate(expr, env, sizes)
        if post is not None:
            out[name] = out[name].applyfunc(post)
        if name in table:
            env[table[name]] = out[name]
    return out


def kernel_eval(expr, values: dict, size: dict):
    """A kernel expression at explicit matrices, with the sizes ``T`` and ``d`` (default 1) of ``size``."""
    return ex.evaluate(expr, values, {ex.T: size["T"], ex.d: size.get("d", 1)})
