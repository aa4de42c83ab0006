"""Volume-preserving attention (seed 000, 'Volume-Preserving Attention').

The layer maps ``Z -> Z Cayley(C(Z))`` with either the skew-symmetric
weighting ``C(Z) = Z^T A Z`` (``A^T = -A``) or the arbitrary weighting
``C(Z) = skew_from_lower(Z^T A Z)``.

Note [map versus frozen matrix]
-------------------------------
The seed argues volume preservation from the orthogonality of
``Lambda-tilde(Z)`` at a fixed ``Z``. The layer map's Jacobian has a second
term from ``dLambda/dZ``, so the map claims are checked on the exact Jacobian
of the map itself. With the skew weighting the determinant is exactly 1: the
map keeps ``C`` invariant (``C(Z Lambda) = Lambda^T C Lambda = C`` because
``Lambda`` is a function of ``C``) and acts on each level set of ``C`` by a
fixed orthogonal matrix, and a co-area argument then gives volume
preservation. That argument is not mechanised here; the claim's evidence is
the exact symbolic identity at small sizes and certification beyond. With the
arbitrary weighting ``C`` is no longer invariant and the determinant differs
from 1 (refuted, with an exact counterexample).
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import Determinant, Identity, KroneckerProduct, MatrixSymbol, Transpose
from sympy.polys.matrices import DomainMatrix

from .. import algebra as alg
from ..claim import Claim, register
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import T, d, same, shape_evidence, sizes, standard

SRC = "000_a6b1d30a66a64c9f.txt"
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
            Step(Transpose(C), Zm.T * Am.T * Zm, "(XYW)^T = W^T Y^T X^T", lambda: same(C.T, Zm.T * Am.T * Zm)),
            Step(Zm.T * Am.T * Zm, -C, "A^T = -A", lambda: same((Zm.T * Am.T * Zm).subs(Am.T, -Am), -C)),
        ],
        conclusion=r"(Z^TAZ)^T = -Z^TAZ",
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
    true = structure == "skew"
    return Claim(
        id=claim_id,
        title="Z^T A Z skew for skew A" if true else f"Z^T A Z skew for {structure} A",
        statement=f"Z^T A Z is skew-symmetric when A is {structure}.",
        latex=r"A^T = -A \implies (Z^TAZ)^T = -Z^TAZ",
        source=f"{SRC}, 'First approach: scalar products with a skew-symmetric weighting'",
        family="volume_preserving",
        expected=Level.PROVED if true else Level.REFUTED,
        checker=lambda ctx: standard(
            ctx,
            ident=_skew_weighting_identity(structure),
            random_sizes=sizes(d=[2, 3], T=[2, 3]),
            prove=_skew_weighting_derivation if true else None,
            exact_sizes=sizes(d=[1, 2], T=[1, 2]),
        ),
    )


register(make_skew_weighting())


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
    g = sp.Function("g")  # g(i, j) = (z^(i))^T A z^(j) = [Z^T A Z]_{ij}
    i, j = sp.symbols("i j", integer=True)
    p = sp.Symbol("p", integer=True, positive=True)

    def seed_entry(a, b):
        return sp.Piecewise((g(a, b), a > b), (-g(b, a), a < b), (0, True))

    def copied_entry(a, b):  # M = Z^T A Z; copy the lower triangle up, negated
        return sp.Piecewise((g(a, b), a > b), (-g(b, a), a < b), (0, True))

    cases = {"i > j": {i: j + p}, "i < j": {j: i + p}, "i = j": {i: j}}

    def skew_in(case):
        sub = cases[case]
        return sp.simplify((seed_entry(i, j) + seed_entry(j, i)).subs(sub)) == 0

    def equal_in(case):
        sub = cases[case]
        return sp.simplify((seed_entry(i, j) - copied_entry(i, j)).subs(sub)) == 0

    steps = []
    for case in cases:
        steps.append(Step(r"C_{ij} + C_{ji}", 0, f"case {case}", lambda c=case: skew_in(c)))
    for case in cases:
        steps.append(Step(r"C_{ij}", r"[\mathrm{skew\_from\_lower}(Z^TAZ)]_{ij}", f"case {case}", lambda c=case: equal_in(c)))
    return Derivation(
        assumptions=[r"g(i,j) := (z^{(i)})^TAz^{(j)} = [Z^TAZ]_{ij}", r"i, j \in \{1,\dots,T\}"],
        steps=steps,
        conclusion=r"C = \mathrm{skew\_from\_lower}(Z^TAZ) \text{ and } C^T = -C",
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


register(
    Claim(
        id="vp.lower_assign_skew",
        title="lower-triangle assignment is skew",
        statement="Arranging the correlations (z^(i))^T A z^(j), i > j, into C (negated above the diagonal) "
        "gives a skew-symmetric matrix, equal to computing Z^T A Z and copying the lower triangle to the "
        "upper one negated.",
        latex=r"C = \mathrm{skew\_from\_lower}(Z^TAZ),\quad C^T = -C",
        source=f"{SRC}, 'Second approach: scalar products with an arbitrary weighting'",
        family="volume_preserving",
        expected=Level.PROVED,
        checker=lambda ctx: standard(
            ctx,
            ident=_lower_assign_identity(),
            random_sizes=sizes(d=[2, 3], T=[2, 3, 4]),
            prove=_lower_assign_derivation,
            exact_sizes=sizes(d=range(1, 4), T=range(1, ctx.bound(4) + 1)),
            always_exact=True,
        ),
    )
)


# ---------------------------------------------------------------------------
# shapes of the arbitrary weighting
# ---------------------------------------------------------------------------


def _weighting_factors(a_rows: str):
    def build(s):
        r = s[a_rows]
        return [("z_i^T", 1, s["d"]), ("A", r, r), ("z_j", s["d"], 1)]

    return build


register(
    Claim(
        id="vp.arbitrary_weighting_shape",
        title="arbitrary weighting A is T x T",
        statement="This arbitrary T x T matrix A constitutes the learnable parameters; correlations are "
        "(z^(i))^T A z^(j).",
        latex=r"A\in\mathbb{R}^{T\times T},\quad (z^{(i)})^TAz^{(j)},\ z^{(i)}\in\mathbb{R}^d",
        source=f"{SRC}, 'Second approach: scalar products with an arbitrary weighting'",
        family="volume_preserving",
        expected=Level.REFUTED,
        checker=lambda ctx: shape_evidence(
            ctx, _weighting_factors("T"), sizes(d=[2, 3], T=[2, 3]), name="(z^(i))^T A z^(j)"
        ),
        notes="z^(i) lies in R^d, so A must be d x d; the product is defined only when d = T.",
    )
)

register(
    Claim(
        id="vp.arbitrary_weighting_shape.corrected",
        title="arbitrary weighting A is d x d",
        statement="The arbitrary weighting A is a d x d matrix; (z^(i))^T A z^(j) is a scalar, the (i, j) entry "
        "of the T x T matrix Z^T A Z.",
        latex=r"A\in\mathbb{R}^{d\times d},\quad (z^{(i)})^TAz^{(j)} = [Z^TAZ]_{ij}",
        source="corrected form of vp.arbitrary_weighting_shape",
        family="volume_preserving",
        expected=Level.PROVED,
        corrects="vp.arbitrary_weighting_shape",
        checker=lambda ctx: shape_evidence(
            ctx,
            _weighting_factors("d"),
            sizes(d=[2, 3], T=[2, 3]),
            expect_shape=lambda s: (1, 1),
            name="(z^(i))^T A z^(j)",
        ),
    )
)


def _index_range_identity() -> MatrixIdentity:
    # number of correlations the seed lists (i > j, i <= d) minus the number of
    # strictly-lower entries of the T x T matrix C
    return MatrixIdentity(
        "d(d-1)/2 - T(T-1)/2",
        variables=lambda s: {},
        residual=lambda s: sp.Integer(s["d"] * (s["d"] - 1) // 2 - s["T"] * (s["T"] - 1) // 2),
    )


register(
    Claim(
        id="vp.arbitrary_correlation_indices",
        title="correlations indexed up to z^(d)",
        statement="The correlations (z^(2))^T A z^(1), ..., (z^(d))^T A z^(d-1) fill the strictly lower "
        "triangle of the correlation matrix C.",
        latex=r"\{(z^{(i)})^TAz^{(j)} : 1\le j<i\le d\} \text{ fills the lower triangle of } C\in\mathbb{R}^{T\times T}",
        source=f"{SRC}, 'Second approach: scalar products with an arbitrary weighting'",
        family="volume_preserving",
        expected=Level.REFUTED,
        checker=lambda ctx: standard(
            ctx, ident=_index_range_identity(), random_sizes=sizes(d=[2, 3], T=[2, 3]), points=1
        ),
        notes="There are T vectors z^(1..T); the indices run to T, not d (also in the displayed matrix).",
    )
)


def _index_count_derivation() -> Derivation:
    i = sp.Symbol("i", integer=True, positive=True)
    pairs = sp.Sum(i - 1, (i, 1, T)).doit()
    lower = (T**2 - T) / 2
    return Derivation(
        assumptions=[r"Z = [z^{(1)}, \ldots, z^{(T)}]\in\mathbb{R}^{d\times T}"],
        steps=[
            Step(r"\#\{(i, j): 1\le j<i\le T\}", pairs, r"\sum_{i=1}^T (i-1)", lambda: sp.simplify(pairs - lower) == 0),
            Step(r"\#\{\text{strictly lower entries of a } T\times T \text{ matrix}\}", lower, "(T^2 - T)/2", lambda: sp.simplify(lower - T * (T - 1) / 2) == 0),
        ],
        conclusion=r"\text{the correlations } (z^{(i)})^TAz^{(j)},\ 1\le j<i\le T, \text{ fill the lower triangle of } C",
    )


def _index_count_identity() -> MatrixIdentity:
    def residual(size):
        t = size["T"]
        pairs = [(i, j) for i in range(1, t + 1) for j in range(1, i)]
        return sp.Integer(len(pairs) - sum(1 for r in range(t) for c in range(t) if r > c))

    return MatrixIdentity("#pairs(j < i <= T) - #lower entries", variables=lambda s: {}, residual=residual)


register(
    Claim(
        id="vp.arbitrary_correlation_indices.corrected",
        title="correlations indexed up to z^(T)",
        statement="The correlations (z^(i))^T A z^(j) for 1 <= j < i <= T are exactly the T(T-1)/2 strictly lower "
        "entries of C in R^{T x T}.",
        latex=r"\{(z^{(i)})^TAz^{(j)} : 1\le j<i\le T\} = \{C_{ij} : i > j\}",
        source="corrected form of vp.arbitrary_correlation_indices",
        family="volume_preserving",
        expected=Level.PROVED,
        corrects="vp.arbitrary_correlation_indices",
        checker=lambda ctx: standard(
            ctx, ident=_index_count_identity(), random_sizes=sizes(T=range(1, 7)), points=1, prove=_index_count_derivation
        ),
    )
)


# ---------------------------------------------------------------------------
# the layer map: vp.map_volume_preserving.{skew,arbitrary}
# ---------------------------------------------------------------------------


def correlation(weighting: str):
    """``C(Z)`` for the ``"skew"`` or ``"arbitrary"`` weighting."""
    if weighting == "skew":
        return lambda Z, A: Z.T * A * Z
    return lambda Z, A: alg.skew_from_lower(Z.T * A * Z)


def _symbolic_jacobian_residual(Z: sp.Matrix, C: sp.Matrix) -> sp.Expr:
    """``det(Jnum) - delta^(2n)`` as a polynomial, inverse-free.

    With ``delta = det(I + C)`` and ``N = Z (I - C) adj(I + C)`` the layer map
    is ``N / delta``; its Jacobian is ``Jnum / delta^2`` with
    ``Jnum = dN*delta - N*d(delta)``, so ``det J = 1`` iff
    ``det Jnum = delta^(2n)`` (``n = dT``). Arithmetic is in ``QQ[vars]``.
    """
    t = C.rows
    ident = sp.eye(t)
    plus = ident + C
    delta = sp.expand(plus.det(method="berkowitz"))
    numer = (Z * (ident - C) * plus.adjugate(method="berkowitz")).applyfunc(sp.expand)
    zv = alg.vec_rows(Z)
    nv = alg.vec_rows(numer)
    n_in = len(zv)
    jnum = sp.Matrix(
        n_in, n_in, lambda a, b: sp.expand(sp.diff(nv[a], zv[b]) * delta - nv[a] * sp.diff(delta, zv[b]))
    )
    syms = sorted(jnum.free_symbols | delta.free_symbols, key=lambda s: s.name)
    if not syms:
        return sp.expand(jnum.det() - delta ** (2 * n_in))
    ring = sp.QQ[tuple(syms)]
    det = DomainMatrix.from_Matrix(jnum).convert_to(ring).det()
    return ring.to_sympy(det - ring.from_sympy(sp.expand(delta ** (2 * n_in))))


def map_identity(weighting: str, *, frozen: bool = False) -> MatrixIdentity:
    """``det J - 1`` for the layer map (or its frozen-input linearisation)."""
    corr = correlation(weighting)

    def variables(s):
        a = alg.skew("a", s["d"]) if weighting == "skew" else alg.general("a", s["d"], s["d"])
        return {"Z": alg.general("z", s["d"], s["T"]), "A": a}

    def residual(size, Z, A):
        if frozen:
            lam = alg.cayley(corr(Z, A))
            jac = alg.kron(sp.eye(size["d"]), lam.T)  # Jacobian of the linear map W -> W Lambda
            return sp.cancel(jac.det() - 1)
        if Z.free_symbols:
            return _symbolic_jacobian_residual(Z, corr(Z, A))
        jac = alg.jacobian_rows(lambda W: W * alg.cayley(corr(W, A)), Z)
        return jac.det() - 1

    name = "det(I_d (x) Lambda(Z0)^T) - 1" if frozen else "det J(Z) - 1"
    return MatrixIdentity(name, variables=variables, residual=residual)


def map_degree_bound(size: dict) -> int:
    """Degree of the numerator of ``det J - 1`` in all variables (Z and A).

    ``C`` has degree 3 (2 in Z, 1 in A); ``delta = det(I + C)`` degree
    <= 3T; the map's numerator ``Z (I - C) adj(I + C)`` degree <= 3T + 1; each
    Jacobian entry is ``(dN delta - N d delta)/delta^2`` with numerator degree
    <= 6T; so ``det J - 1 = (det Jnum - delta^(2n)) / delta^(2n)`` has a
    numerator of degree <= 6T n = 6 d T^2.
    """
    return 6 * size["d"] * size["T"] ** 2


def make_map_claim(weighting: str, claim_id: str | None = None) -> Claim:
    true = weighting == "skew"

    def checker(ctx):
        return standard(
            ctx,
            ident=map_identity(weighting),
            random_sizes=sizes(d=[1, 2], T=[2, 3]),
            points=2,
            exact_sizes=[{"d": 1, "T": 2}, {"d": 2, "T": 1}, {"d": 2, "T": 2}][: 3 + ctx.depth - 1],
            exact_method="exact symbolic identity det J = 1 (inverse-free polynomial form over QQ[Z, A])",
            certify_sizes=[{"d": 2, "T": 3}, {"d": 3, "T": 2}, {"d": 3, "T": 3}, {"d": 2, "T": 4}]
            + ([{"d": 3, "T": 4}, {"d": 4, "T": 3}] if ctx.depth > 1 else []),
            certify_points=4 + 2 * (ctx.depth - 1),
            degree_bound=map_degree_bound,
            certify_method="exact Jacobian (dual numbers over QQ) at random integer points",
        )

    what = "Z^T A Z, A skew" if true else "skew_from_lower(Z^T A Z), A arbitrary"
    return Claim(
        id=claim_id or f"vp.map_volume_preserving.{weighting}",
        title=f"layer map volume-preserving ({weighting} weighting)",
        statement=f"The layer map Z -> Z Cayley(C(Z)) with C(Z) = {what} is volume-preserving "
        "(Jacobian determinant 1).",
        latex=r"\det\frac{\partial\,\mathrm{vec}_r(Z\,\mathrm{Cayley}(C(Z)))}{\partial\,\mathrm{vec}_r(Z)} = 1",
        source=f"{SRC}, {SEC} and 'How is Structure Preserved?'",
        family="volume_preserving",
        expected=Level.CHECKED if true else Level.REFUTED,
        checker=checker,
        notes="See Note [map versus frozen matrix]."
        if true
        else "C(Z Lambda) != C(Z) here, and the Jacobian picks up a term from dLambda/dZ.",
    )


register(make_map_claim("skew"))
register(make_map_claim("arbitrary"))


def _frozen_derivation(arg: str = "C(Z_0)", cite: str = "cayley.det_one", fn: str = r"\mathrm{Cayley}") -> Derivation:
    L = MatrixSymbol("Lambda", T, T)
    K = KroneckerProduct(Identity(d), L.T)
    det_k = Determinant(K).doit()
    return Derivation(
        assumptions=[rf"\Lambda = {fn}({arg}) \text{{ for a fixed }} Z_0", rf"\det\Lambda = 1 \text{{ ({cite})}}"],
        steps=[
            Step(
                r"\frac{\partial\,\mathrm{vec}_r(Z\Lambda)}{\partial\,\mathrm{vec}_r(Z)}",
                K,
                "vec.right_multiplication (the map is linear in Z)",
            ),
            Step(
                Determinant(K),
                Determinant(L) ** d,
                r"\det(A\otimes B) = \det(A)^{q}\det(B)^{p};\ \det\Lambda^T = \det\Lambda",
                lambda: same(det_k.replace(lambda e: isinstance(e, Determinant) and e.arg == L.T, lambda e: Determinant(L)), Determinant(L) ** d),
            ),
            Step(Determinant(L) ** d, 1, r"\det\Lambda = 1", lambda: (Determinant(L) ** d).subs(Determinant(L), 1) == 1),
        ],
        conclusion=r"Z\mapsto Z\Lambda(Z_0) \text{ is volume-preserving for every fixed } Z_0",
    )


register(
    Claim(
        id="vp.map_volume_preserving.frozen",
        title="frozen-input map volume-preserving",
        statement="For each fixed input Z0, the linear map Z -> Z Cayley(C(Z0)) is volume-preserving, for either "
        "weighting.",
        latex=r"\det(\mathbb{I}_d\otimes\Lambda(Z_0)^T) = 1",
        source="corrected form of vp.map_volume_preserving.arbitrary",
        family="volume_preserving",
        expected=Level.PROVED,
        corrects="vp.map_volume_preserving.arbitrary",
        checker=lambda ctx: standard(
            ctx,
            ident=map_identity("arbitrary", frozen=True),
            random_sizes=sizes(d=[1, 2, 3], T=[2, 3]),
            prove=_frozen_derivation,
        ),
    )
)
