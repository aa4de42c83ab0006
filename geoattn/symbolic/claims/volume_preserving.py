"""Volume-preserving attention (seed 000, 'Volume-Preserving Attention'): the weightings.

The layer maps ``Z -> Z Cayley(C(Z))`` with either the skew-symmetric
weighting ``C(Z) = Z^T A Z`` (``A^T = -A``) or the arbitrary weighting
``C(Z) = skew_from_lower(Z^T A Z)``. This module holds the claims about the
weightings and the correlation indices; the layer map itself (its Jacobian,
invariant, inverse and Note [map versus frozen matrix]) is in :mod:`.vp_map`,
its linear-time form in :mod:`.vp_linear`.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import MatrixSymbol, Transpose

from .. import algebra as alg
from ..claim import Claim, corrected
from ..nodes import StrictLower
from ..proof import identity
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import Grows, Policy, ShapePolicy, T, d, grid
from ._derivations import by_cases
from ._sources import ORIGINS

__all__ = ["CLAIMS", "make_skew_weighting", "seed_lower_assignment"]

SRC = ORIGINS["000"]
SEC = "'Volume-Preserving Attention'"

Zm = MatrixSymbol("Z", d, T)
Am = MatrixSymbol("A", d, d)


# ---------------------------------------------------------------------------
# vp.skew_weighting
# ---------------------------------------------------------------------------


def _skew_weighting_derivation() -> Derivation:
    C = Zm.T * Am * Zm
    return Derivation(
        assumptions=[r"A^T = -A\in\mathbb{R}^{d\times d}", r"Z\in\mathbb{R}^{d\times T}"],
        steps=[
            Step(Transpose(C), Zm.T * Am.T * Zm, "(XYW)^T = W^T Y^T X^T", identity()),
            Step(Zm.T * Am.T * Zm, -C, "A^T = -A", identity((Am.T, -Am))),
        ],
        remark=r"(Z^TAZ)^T = -Z^TAZ",
        conclusion=sp.Eq(Transpose(C), -C, evaluate=False),
    )


def _skew_weighting_identity(structure: str = "skew") -> MatrixIdentity:
    def variables(s):
        a = alg.skew("a", s["d"]) if structure == "skew" else alg.general("a", s["d"], s["d"])
        return {"Z": alg.general("z", s["d"], s["T"]), "A": a}

    def residual(size, Z, A):
        c = Z.T * A * Z
        return (c + c.T).applyfunc(sp.expand)

    return MatrixIdentity("C + C^T with C = Z^T A Z", variables=variables, residual=residual)


def make_skew_weighting(structure: str = "skew", claim_id: str = "vp.skew_weighting") -> Claim:
    """The claim that the skew weighting gives a skew correlation; other ``structure`` values are false variants."""
    true = structure == "skew"
    return Claim(
        id=claim_id,
        title="Z^T A Z skew for skew A" if true else f"Z^T A Z skew for {structure} A",
        statement=f"Z^T A Z is skew-symmetric when A is {structure}.",
        latex=r"A^T = -A \implies (Z^TAZ)^T = -Z^TAZ",
        source=SRC.at("'First approach: scalar products with a skew-symmetric weighting'"),
        expected=Level.PROVED if true else Level.REFUTED,
        checker=Policy(
            identity=_skew_weighting_identity(structure),
            search=grid(d=[2, 3], T=[2, 3]),
            prove=_skew_weighting_derivation if true else None,
            exact=grid(d=[1, 2], T=[1, 2]),
        ),
    )


# ---------------------------------------------------------------------------
# vp.lower_assign_skew
# ---------------------------------------------------------------------------


def seed_lower_assignment(Z: sp.Matrix, A: sp.Matrix) -> sp.Matrix:
    """The seed's correlation matrix, entry by entry: ``(z^(i))^T A z^(j)``
    below the diagonal, ``-(z^(j))^T A z^(i)`` above it."""
    t = Z.cols
    out = sp.zeros(t, t)
    for i in range(t):
        for j in range(t):
            if i > j:
                out[i, j] = (Z[:, i].T * A * Z[:, j])[0, 0]
            elif i < j:
                out[i, j] = -(Z[:, j].T * A * Z[:, i])[0, 0]
    return out


def _lower_assign_derivation() -> Derivation:
    m = MatrixSymbol("M", T, T)  # M = Z^T A Z: M_{ij} = (z^{(i)})^T A z^{(j)}
    i, j = sp.symbols("i j", integer=True, nonnegative=True)
    p = sp.Symbol("p", integer=True, positive=True)
    lower = StrictLower(m)
    c = lower - lower.T  # skew_from_lower(M)
    # the seed's entry (i, j) of C, and the entry of tril_{-1}(M) - tril_{-1}(M)^T by the definition of tril_{-1}
    seed_entry = sp.Piecewise((m[i, j], i > j), (-m[j, i], i < j), (0, True))
    tril_entry = sp.Piecewise((m[i, j], i > j), (0, True)) - sp.Piecewise((m[j, i], j > i), (0, True))
    cases = {"i > j": {i: j + p}, "i < j": {j: i + p}, "i = j": {i: j}}
    return Derivation(
        assumptions=[r"M = Z^TAZ,\ M_{ij} = (z^{(i)})^TAz^{(j)}",
                     r"[\mathrm{tril}_{-1}(M)]_{ij} = M_{ij} \text{ for } i > j,\ 0 \text{ otherwise}",
                     r"\mathrm{skew\_from\_lower}(M) = \mathrm{tril}_{-1}(M) - \mathrm{tril}_{-1}(M)^T"],
        subject=(seed_entry,),
        steps=[
            Step(seed_entry, tril_entry, r"the seed's C is \mathrm{skew\_from\_lower}(Z^TAZ) entrywise",
                 by_cases(cases)),
            Step(c.T, lower.T - lower, "transpose of a difference; (X^T)^T = X", identity()),
            Step(lower.T - lower, -c, "collect", identity()),
        ],
        remark=r"C = \mathrm{skew\_from\_lower}(Z^TAZ) \text{ and } C^T = -C",
        conclusion=sp.Eq(c.T, -c, evaluate=False),
    )


def _lower_assign_identity() -> MatrixIdentity:
    def residual(size, Z, A):
        c = seed_lower_assignment(Z, A)
        return sp.Matrix.vstack(c + c.T, c - alg.skew_from_lower(Z.T * A * Z)).applyfunc(sp.expand)

    return MatrixIdentity(
        "[C + C^T; C - skew_from_lower(Z^T A Z)]",
        variables=lambda s: {"Z": alg.general("z", s["d"], s["T"]), "A": alg.general("a", s["d"], s["d"])},
        residual=residual,
    )


# ---------------------------------------------------------------------------
# shapes of the arbitrary weighting
# ---------------------------------------------------------------------------


def _weighting_factors(a_rows: str):
    def build(s):
        r = s[a_rows]
        return [("z_i^T", 1, s["d"]), ("A", r, r), ("z_j", s["d"], 1)]

    return build


def _index_range_identity() -> MatrixIdentity:
    # number of correlations the seed lists (i > j, i <= d) minus the number of
    # strictly-lower entries of the T x T matrix C
    return MatrixIdentity(
        "d(d-1)/2 - T(T-1)/2",
        variables=lambda s: {},
        residual=lambda s: sp.Integer(s["d"] * (s["d"] - 1) // 2 - s["T"] * (s["T"] - 1) // 2),
    )


def _index_count_derivation() -> Derivation:
    i, j, r, c = sp.symbols("i j r c", integer=True)
    pairs = sp.Sum(1, (j, 1, i - 1), (i, 1, T))  # #{(i, j): 1 <= j < i <= T}
    lower = sp.Sum(1, (c, 0, r - 1), (r, 0, T - 1))  # #{(r, c): c < r} in a T x T matrix (0-based)
    count = (T**2 - T) / 2
    return Derivation(
        assumptions=[r"Z = [z^{(1)}, \ldots, z^{(T)}]\in\mathbb{R}^{d\times T}"],
        subject=(lower,),
        steps=[
            Step(pairs, count, r"\sum_{i=1}^T (i-1) = T(T-1)/2", identity()),
            Step(count, lower, r"\sum_{r=0}^{T-1} r = T(T-1)/2", identity()),
        ],
        remark=r"\text{the correlations } (z^{(i)})^TAz^{(j)},\ 1\le j<i\le T, \text{ are as many as the strictly "
        r"lower entries of } C \in \mathbb{R}^{T\times T} \text{ and fill them}",
        conclusion=sp.Eq(pairs, lower, evaluate=False),
    )


def _index_count_identity() -> MatrixIdentity:
    def residual(size):
        t = size["T"]
        pairs = [(i, j) for i in range(1, t + 1) for j in range(1, i)]
        return sp.Integer(len(pairs) - sum(1 for r in range(t) for c in range(t) if r > c))

    return MatrixIdentity("#pairs(j < i <= T) - #lower entries", variables=lambda s: {}, residual=residual)


_VP_ARBITRARY_WEIGHTING_SHAPE = Claim(
    id="vp.arbitrary_weighting_shape",
    title="arbitrary weighting A is T x T",
    statement="This arbitrary T x T matrix A constitutes the learnable parameters; correlations are "
    "(z^(i))^T A z^(j).",
    latex=r"A\in\mathbb{R}^{T\times T},\quad (z^{(i)})^TAz^{(j)},\ z^{(i)}\in\mathbb{R}^d",
    source=SRC.at("'Second approach: scalar products with an arbitrary weighting'"),
    expected=Level.REFUTED,
    checker=ShapePolicy(factors=_weighting_factors("T"), sizes=grid(d=[2, 3], T=[2, 3]), name="(z^{(i)})^T A z^{(j)}"),
    notes="z^(i) lies in R^d, so A must be d x d; the product is defined only when d = T.",
)


_VP_ARBITRARY_CORRELATION_INDICES = Claim(
    id="vp.arbitrary_correlation_indices",
    title="correlations indexed up to z^(d)",
    statement="The correlations (z^(2))^T A z^(1), ..., (z^(d))^T A z^(d-1) fill the strictly lower "
    "triangle of the correlation matrix C.",
    latex=r"\{(z^{(i)})^TAz^{(j)} : 1\le j<i\le d\} \text{ fills the lower triangle of } C\in\mathbb{R}^{T\times T}",
    source=SRC.at("'Second approach: scalar products with an arbitrary weighting'"),
    expected=Level.REFUTED,
    checker=Policy(identity=_index_range_identity(), search=grid(d=[2, 3], T=[2, 3]), points=1),
    notes="There are T vectors z^(1..T); the indices run to T, not d (also in the displayed matrix).",
)


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    make_skew_weighting(),
    Claim(
        id="vp.lower_assign_skew",
        title="lower-triangle assignment is skew",
        statement="Arranging the correlations (z^(i))^T A z^(j), i > j, into C (negated above the diagonal) "
        "gives a skew-symmetric matrix, equal to computing Z^T A Z and copying the lower triangle to the "
        "upper one negated.",
        latex=r"C = \mathrm{skew\_from\_lower}(Z^TAZ),\quad C^T = -C",
        source=SRC.at("'Second approach: scalar products with an arbitrary weighting'"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_lower_assign_identity(),
            search=grid(d=[2, 3], T=[2, 3, 4]),
            prove=_lower_assign_derivation,
            exact=grid(d=range(1, 4), T=Grows(1, 4)),
            always_exact=True,
        ),
    ),
    _VP_ARBITRARY_WEIGHTING_SHAPE,
    corrected(_VP_ARBITRARY_WEIGHTING_SHAPE, Claim(
        id="vp.arbitrary_weighting_shape.corrected",
        title="arbitrary weighting A is d x d",
        statement="The arbitrary weighting A is a d x d matrix; (z^(i))^T A z^(j) is a scalar, the (i, j) entry "
        "of the T x T matrix Z^T A Z.",
        latex=r"A\in\mathbb{R}^{d\times d},\quad (z^{(i)})^TAz^{(j)} = [Z^TAZ]_{ij}",
        expected=Level.PROVED,
        checker=ShapePolicy(
            factors=_weighting_factors("d"),
            sizes=grid(d=[2, 3], T=[2, 3]),
            expect_shape=lambda s: (1, 1),
            name="(z^{(i)})^T A z^{(j)}",
        ),
    )),
    _VP_ARBITRARY_CORRELATION_INDICES,
    corrected(_VP_ARBITRARY_CORRELATION_INDICES, Claim(
        id="vp.arbitrary_correlation_indices.corrected",
        title="correlations indexed up to z^(T)",
        statement="The correlations (z^(i))^T A z^(j) for 1 <= j < i <= T are exactly the T(T-1)/2 strictly lower "
        "entries of C in R^{T x T}.",
        latex=r"\{(z^{(i)})^TAz^{(j)} : 1\le j<i\le T\} = \{C_{ij} : i > j\}",
        expected=Level.PROVED,
        checker=Policy(
            identity=_index_count_identity(), search=grid(T=range(1, 7)), points=1, prove=_index_count_derivation
        ),
    )),
]
