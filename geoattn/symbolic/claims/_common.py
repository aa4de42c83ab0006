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
from ..strategies import MatrixIdentity, certify, exact_evidence, search_counterexample

n = sp.Symbol("n", integer=True, positive=True)
d = sp.Symbol("d", integer=True, positive=True)
T = sp.Symbol("T", integer=True, positive=True)


def prove_evidence(build: Callable[[], Derivation], method: str = "dimension-generic derivation") -> Evidence:
    """Validate the derivation ``build()`` (:func:`geoattn.symbolic.proof.validate`) and return ``proved``
    evidence; a derivation that is not a proof raises :class:`~geoattn.symbolic.evidence.ProofFailed`."""
    derivation = build().run()
    return Evidence(Level.PROVED, method, derivation=derivation, detail=validate(derivation).summary())


@dataclass(frozen=True)
class Grows:
    """An integer range ``lo..hi`` (inclusive) whose upper end grows with the run's depth.

    At depth 1 it is ``range(lo, hi + 1)``; at depth ``k`` the upper end is ``hi + k - 1``
    (:meth:`~geoattn.symbolic.claim.CheckContext.bound`).
    """

    lo: int
    hi: int

    def at(self, ctx) -> range:
        """The range at the depth of ``ctx``."""
        return range(self.lo, ctx.bound(self.hi) + 1)


@dataclass(frozen=True)
class Sizes:
    """Where a stage of a :class:`Policy` runs: explicit size dicts, or a grid of per-symbol values.

    Build it with :func:`grid` (cartesian product, smallest total first; a :class:`Grows` value
    grows with depth) or :func:`at_sizes` (the dicts as given, then the ``deep`` ones above depth 1).
    """

    fixed: tuple[dict, ...] = ()
    ranges: tuple[tuple[str, object], ...] = ()
    deep: tuple[dict, ...] = ()

    def at(self, ctx) -> list[dict]:
        """The size dicts at the depth of ``ctx``."""
        if not self.ranges:
            return [dict(s) for s in self.fixed + (self.deep if ctx.depth > 1 else ())]
        resolved = {k: (v.at(ctx) if isinstance(v, Grows) else v) for k, v in self.ranges}
        return sizes(**resolved)



def grid(**ranges) -> Sizes:
    """Every combination of the given values (a :class:`Grows` grows with depth)."""
    return Sizes(ranges=tuple((k, v if isinstance(v, Grows) else tuple(v)) for k, v in ranges.items()))


def at_sizes(*dicts: dict, deep: Sequence[dict] = ()) -> Sizes:
    """Exactly these sizes, in this order; above depth 1 followed by the ``deep`` ones."""
    return Sizes(fixed=tuple(dicts), deep=tuple(deep))


NOWHERE = Sizes()


# Note [evidence policy]
# Every claim's checker is a Policy value, declared beside the claim: which identity to evaluate,
# where to search for a counterexample (exact evaluation at random rational points), which
# derivation proves it, where to check the symbolic identity exactly, where to certify it
# (Schwartz--Zippel), and which independent evidence to add. The stages run in that order:
# a counterexample ends the run; an exact check runs only while the claim is unproved unless
# ``always_exact``; certification runs only while it is unproved and a degree bound is given.
# Nothing is decided by keyword defaults hidden in a helper: a stage that is not declared does
# not run.


@dataclass(frozen=True, kw_only=True)
class Policy:
    """The evidence policy of one claim; calling it with a check context runs it.

    Parameters
    ----------
    identity:
        the identity ``residual == 0`` the search, exact and certification stages evaluate.
    search:
        sizes for exact evaluation at ``points`` random rational points (a nonzero residual is
        an exact counterexample and the verdict is ``refuted``).
    points:
        random points per search size, or a function of the check context.
    prove:
        the dimension-generic derivation (``proved`` when every step verifies).
    exact:
        sizes for the exact symbolic identity (``checked``).
    always_exact:
        run the exact stage even when proved.
    certify:
        sizes for certification at ``certify_points`` random integer points with the
        Schwartz--Zippel ``degree_bound`` (``certified``), run only while unproved.
    extra:
        further checkers ``f(ctx) -> Evidence | list[Evidence]`` whose evidence is appended.
    """

    identity: MatrixIdentity | None = None
    search: Sizes = NOWHERE
    points: int | Callable[[object], int] = 3
    prove: Callable[[], Derivation] | None = None
    exact: Sizes = NOWHERE
    exact_method: str = "exact symbolic identity at explicit sizes"
    always_exact: bool = False
    certify: Sizes = NOWHERE
    certify_points: int = 6
    degree_bound: Callable[[dict], int] | None = None
    certify_method: str = "exact evaluation at random integer points"
    extra: tuple[Callable[[object], Evidence | list[Evidence]], ...] = ()

    def __call__(self, ctx) -> list[Evidence]:
        """The stages, then the ``extra`` evidence, at the depth and seed of ``ctx``."""
        evidence = self.run(ctx)
        if evidence and evidence[0].level is Level.REFUTED and len(evidence) == 1:
            return evidence
        for more in self.extra:
            got = more(ctx)
            evidence.extend(got if isinstance(got, list) else [got])
        return evidence

    def run(self, ctx) -> list[Evidence]:
        """The search, prove, exact and certify stages (without ``extra``)."""
        points = self.points(ctx) if callable(self.points) else self.points
        return _run_stages(
            ctx,
            ident=self.identity,
            random_sizes=self.search.at(ctx),
            points=points,
            prove=self.prove,
            exact_sizes=self.exact.at(ctx),
            exact_method=self.exact_method,
            certify_sizes=self.certify.at(ctx),
            certify_points=self.certify_points,
            degree_bound=self.degree_bound,
            certify_method=self.certify_method,
            always_exact=self.always_exact,
        )


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


def _run_stages(
    ctx,
    *,
    ident: MatrixIdentity | None,
    random_sizes: Sequence[dict],
    points: int,
    prove: Callable[[], Derivation] | None,
    exact_sizes: Sequence[dict],
    exact_method: str,
    certify_sizes: Sequence[dict],
    certify_points: int,
    degree_bound: Callable[[dict], int] | None,
    certify_method: str,
    always_exact: bool,
) -> list[Evidence]:
    """See Note [evidence policy]."""
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
        except (ProofFailed, NotInAlgebra, sp.SympifyError, TypeError, ValueError) as exc:
            failure = f"derivation not accepted by the engine: {exc}"
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
            remark=rf"{name}\ 	ext{{is defined for all sizes}}",
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
