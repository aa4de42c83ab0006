"""The Cayley transform (seed 000, section "The Cayley Transform").

.. math:: \\mathrm{Cayley}(A) = (I - A)(I + A)^{-1}
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import Determinant, Identity, Inverse, MatrixSymbol, Transpose  # noqa: F401

from .. import algebra as alg
from ..claim import Claim, corrected
from ..proof import identity, in_algebra, relation
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity, exact_evidence
from ._common import Grows, Policy, at_sizes, det_rules, grid, n, same
from ._sources import ORIGINS

__all__ = ["CLAIMS", "orthogonality_identity", "make_cayley_orthogonal", "det_implication_identity"]

SRC = ORIGINS["000"]

A = MatrixSymbol("A", n, n)
I = Identity(n)
CAY = (I - A) * Inverse(I + A)


# ---------------------------------------------------------------------------
# cayley.well_defined
# ---------------------------------------------------------------------------


def _well_defined_derivation() -> Derivation:
    x = MatrixSymbol("x", n, 1)
    q = x.T * A * x
    z1 = sp.ZeroMatrix(1, 1)
    return Derivation(
        assumptions=[r"A^T = -A \in \mathbb{R}^{n\times n}", r"x \in \mathbb{R}^{n},\ (I + A)x = 0"],
        facts={"A skew": {A.T: -A}},
        subject=(x.T * (I + A) * x, q),
        steps=[
            Step(q, q.T, "a 1x1 matrix equals its transpose",
                 relation(lambda l, r: l.shape == (1, 1) and same(l.T, r), "1x1 transpose")),
            Step(q.T, -q, "transpose reverses products; A^T = -A", identity()),
            Step(q, z1, "q = q^T = -q", relation(
                lambda l, r: l.shape == (1, 1) and same((l + l.T).doit().subs(A.T, -A), 2 * r), "q + q^T = 2 rhs")),
            Step(x.T * (I + A) * x, x.T * x + q, "distribute", identity()),
            Step(x.T * x + q, x.T * x, "step 3: q = 0", identity((q, z1))),
            Step(x.T * x, z1, "(I + A)x = 0, so x^T(I + A)x = 0; steps 4-5", lemma="hypothesis"),
            Step(x, sp.ZeroMatrix(n, 1), r"x^T x = \sum_i x_i^2 = 0 forces x = 0 for real x",
                 lemma="sum_of_squares_real"),
        ],
        conclusion=sp.Eq(x, sp.ZeroMatrix(n, 1), evaluate=False),
        remark=r"\ker(I + A) = \{0\},\ \text{so } I + A \text{ is invertible for every real skew-symmetric } A",
    )


def _sum_of_squares(size: dict) -> sp.Expr:
    """``det(I + A) - 1 - sum_S Pf(A_S)^2`` over nonempty even principal subsets."""
    k = size["n"]
    a = alg.skew("a", k)
    total = sp.Integer(1)
    for subset in alg.principal_even_subsets(k):
        if subset:
            total += alg.pfaffian(a.extract(list(subset), list(subset))) ** 2
    return sp.expand((sp.eye(k) + a).det(method="berkowitz") - total)


def _sum_of_squares_evidence(ctx) -> Evidence:
    """Independent exact evidence: det(I + A) is 1 plus a sum of squares."""
    bound = ctx.bound(5)
    ident = MatrixIdentity(
        "det(I + A) - 1 - sum_S Pf(A_S)^2",
        variables=lambda s: {},
        residual=lambda s: _sum_of_squares(s),
    )
    return exact_evidence(
        ident,
        [{"n": k} for k in range(1, bound + 1)],
        method="sum-of-squares certificate det(I + A) = 1 + sum over even principal subsets S of Pf(A_S)^2",
        seed=ctx.seed_for("sos"),
    )


# ---------------------------------------------------------------------------
# cayley.orthogonal
# ---------------------------------------------------------------------------


def _orthogonal_derivation(eps: int | None = -1, matrix: str = "skew") -> Derivation:
    ct = Inverse(I + A.T) * (I - A.T)
    ct_skew = Inverse(I - A) * (I + A)
    prod = ct_skew * CAY
    steps = [
        Step(Transpose(CAY), ct, "(XY)^T = Y^T X^T, (X^{-1})^T = (X^T)^{-1}", identity()),
    ]
    if eps == -1:
        steps += [
            Step(ct, ct_skew, "A^T = -A", identity((A.T, -A))),
            Step(CAY.T * CAY, prod, "substitute", identity((A.T, -A))),
        ]
        final = prod
    else:
        final = CAY.T * CAY
    steps.append(
        Step(
            final,
            I,
            "functional calculus: all factors are rational functions of A and commute",
            in_algebra(A, eps),
        )
    )
    return Derivation(
        assumptions=[rf"A\ \text{{is {matrix}}}", r"I \pm A\ \text{invertible (cayley.well_defined)}"],
        steps=steps,
        conclusion=sp.Eq(CAY.T * CAY, I, evaluate=False),
    )


def orthogonality_identity(structure: str = "skew") -> MatrixIdentity:
    """``Cayley(A)^T Cayley(A) - I`` for ``A`` skew, symmetric or general."""
    make = {"skew": alg.skew, "symmetric": alg.symmetric, "general": lambda nm, k: alg.general(nm, k, k)}[structure]

    def residual(size, A):
        c = alg.cayley(A)
        return (c.T * c - sp.eye(size["n"])).applyfunc(sp.cancel)

    return MatrixIdentity(
        "Cayley(A)^T Cayley(A) - I",
        variables=lambda s: {"A": make("a", s["n"])},
        residual=residual,
        valid=lambda s, A: (sp.eye(s["n"]) + A).det() != 0 and (sp.eye(s["n"]) - A).det() != 0,
    )


def make_cayley_orthogonal(structure: str = "skew", claim_id: str = "cayley.orthogonal") -> Claim:
    """The orthogonality claim for ``A`` of the given ``structure``.

    ``structure="skew"`` is the seed's claim; ``"general"`` and ``"symmetric"``
    are false variants used as negative controls.
    """
    eps = {"skew": -1, "symmetric": 1, "general": None}[structure]

    return Claim(
        id=claim_id,
        title="Cayley of skew is orthogonal" if structure == "skew" else f"Cayley of {structure} A is orthogonal",
        statement=f"Cayley(A) = (I - A)(I + A)^-1 is orthogonal for {structure} A.",
        latex=r"A^T = -A \implies \mathrm{Cayley}(A)^T\mathrm{Cayley}(A) = \mathbb{I}"
        if structure == "skew"
        else rf"A\ \text{{{structure}}} \implies \mathrm{{Cayley}}(A)^T\mathrm{{Cayley}}(A) = \mathbb{{I}}",
        source=SRC.at("'The Cayley Transform'"),
        expected=Level.PROVED if structure == "skew" else Level.REFUTED,
        checker=Policy(
            identity=orthogonality_identity(structure),
            search=grid(n=Grows(2, 4)),
            prove=lambda: _orthogonal_derivation(eps, structure),
            exact=grid(n=Grows(1, 3)),
        ),
    )


# ---------------------------------------------------------------------------
# cayley.det_one
# ---------------------------------------------------------------------------


def _det_one_derivation() -> Derivation:
    dplus = Determinant(I + A)
    dminus = Determinant(I - A)
    return Derivation(
        assumptions=[r"A^T = -A", r"I + A\ \text{invertible (cayley.well_defined)}"],
        steps=[
            Step(Determinant(CAY), dminus / dplus, r"\det(XY) = \det X \det Y, \det X^{-1} = 1/\det X",
                 relation(lambda l, r: same(det_rules(sp.det(l.arg)), r), "determinant rules")),
            Step(dminus, Determinant((I + A).T), "$I - A = (I + A)^T$ for $A^T = -A$", identity((A.T, -A))),
            Step(Determinant((I + A).T), dplus, r"\det X^T = \det X",
                 relation(lambda l, r: isinstance(l, Determinant) and isinstance(r, Determinant)
                          and same(l.arg, r.arg.T), "det X^T = det X")),
            Step(dminus / dplus, 1, "steps 2-3", identity((dminus, dplus))),
        ],
        conclusion=sp.Eq(Determinant(CAY), 1, evaluate=False),
    )


def _det_identity() -> MatrixIdentity:
    return MatrixIdentity(
        "det Cayley(A) - 1",
        variables=lambda s: {"A": alg.skew("a", s["n"])},
        residual=lambda s, A: sp.cancel(alg.cayley(A).det() - 1),
    )


# ---------------------------------------------------------------------------
# orthogonal.det_one (seed remark) and its corrected form
# ---------------------------------------------------------------------------


def _orthogonal_family(size: dict, S: sp.Matrix) -> sp.Matrix:
    """A rational orthogonal matrix: Cayley(S) times a reflection if asked.

    ``Cayley(S) * diag(+-1, 1, ..., 1)`` covers both components of O(n).
    """
    k = size["n"]
    reflect = sp.diag(*([-1 if size["reflect"] else 1] + [1] * (k - 1)))
    q = alg.cayley(S) * reflect
    assert alg.is_zero(q.T * q - sp.eye(k)), "hypothesis Q^T Q = I must hold"
    return q


def det_implication_identity(target: str) -> MatrixIdentity:
    """``det Q - 1`` (``target="one"``) or ``det(Q)^2 - 1`` (``"pm_one"``) over orthogonal Q."""

    def residual(size, S):
        q = _orthogonal_family(size, S)
        dq = q.det()
        return sp.cancel(dq - 1) if target == "one" else sp.cancel(dq**2 - 1)

    return MatrixIdentity(
        "det(Q) - 1" if target == "one" else "det(Q)^2 - 1",
        variables=lambda s: {"S": alg.skew("s", s["n"])},
        residual=residual,
    )


def _det_pm_one_derivation() -> Derivation:
    Q = MatrixSymbol("Q", n, n)
    dq = sp.Symbol(r"\det Q")
    return Derivation(
        assumptions=[r"Q^T Q = \mathbb{I}"],
        subject=(Determinant(Q.T * Q),),
        steps=[
            Step(Determinant(Q.T * Q), Determinant(Q) ** 2, r"\det(XY) = \det X\det Y, \det X^T = \det X",
                 relation(lambda l, r: same(det_rules(sp.det(l.arg)), r), "determinant rules")),
            Step(Determinant(Q.T * Q), 1, r"Q^T Q = \mathbb{I}, \det\mathbb{I} = 1",
                 relation(lambda l, r: same(Determinant(l.arg.subs(Q.T * Q, Identity(n))).doit(), r), "Q^T Q = I")),
        ],
        conclusion=sp.Eq(Determinant(Q) ** 2, 1, evaluate=False),
        remark=r"\det Q \in \{-1, 1\}, the roots of x^2 - 1",
    )


# ---------------------------------------------------------------------------
# the seed's argument for orthogonality: a curve of skew matrices through I
# ---------------------------------------------------------------------------


def _curve_start_identity() -> MatrixIdentity:
    return MatrixIdentity(
        "A(0) + A(0)^T with A(0) = I",
        variables=lambda s: {},
        residual=lambda s: sp.eye(s["n"]) + sp.eye(s["n"]).T,
    )


def _first_variation_derivation() -> Derivation:
    B = MatrixSymbol("B", n, n)
    e = sp.Symbol("varepsilon")
    b = sp.Dummy("b")
    cay_eb = (I - e * B) * Inverse(I + e * B)
    image = alg.scalar_image(cay_eb, B, b, -1)
    deriv_image = sp.diff(image, e).subs(e, 0)
    dcay = -2 * B
    dot = MatrixSymbol(r"\dot{M}", n, n)  # d/de at 0 of Cayley(eB)^T Cayley(eB)
    return Derivation(
        assumptions=[r"B^T = -B", r"A(\varepsilon) = \varepsilon B"],
        steps=[
            Step(deriv_image, -2 * b, "functional calculus: d/de (1 - e b)/(1 + e b) at 0 is -2b", identity()),
            Step(
                dot,
                dcay.T + dcay,
                "product rule at Cayley(0) = I", lemma='product_rule',
            ),
            Step(dcay.T + dcay, sp.ZeroMatrix(n, n), "B^T = -B", identity((B.T, -B))),
        ],
        remark=r"\frac{d}{d\varepsilon}\big|_0\mathrm{Cayley}(\varepsilon B) = -2B "
        r"\text{ and the first variation of } \mathrm{Cayley}^T\mathrm{Cayley} \text{ vanishes}",
        subject=(deriv_image,),
        conclusion=sp.Eq(dot, sp.ZeroMatrix(n, n), evaluate=False),
    )


def _first_variation_identity() -> MatrixIdentity:
    def residual(size, B):
        e = sp.Dummy("e")
        c = alg.cayley(e * B)
        return c.applyfunc(lambda x: sp.diff(x, e).subs(e, 0)) + 2 * B

    return MatrixIdentity(
        "d/de Cayley(eB)|_0 + 2B",
        variables=lambda s: {"B": alg.skew("b", s["n"])},
        residual=residual,
    )


_ORTHOGONAL_DET_ONE = Claim(
    id="orthogonal.det_one",
    title="orthogonal implies det 1",
    statement="sigma(C)^T sigma(C) = I, which further implies det(sigma(C)) = 1.",
    latex=r"\sigma(C)^T\sigma(C) = \mathbb{I} \implies \det\sigma(C) = 1",
    source=SRC.at("'Volume-Preserving Attention', remark"),
    expected=Level.REFUTED,
    checker=Policy(identity=det_implication_identity("one"), search=grid(n=Grows(2, 3), reflect=[0, 1])),
    notes="Orthogonality gives det = +-1 only; det = 1 needs sigma to be Cayley or exp (cayley.det_one).",
)


_CAYLEY_SEED_CURVE_START = Claim(
    id="cayley.seed_curve_start",
    title="seed's curve of skew matrices starts at I",
    statement="Consider eps -> A(eps) in S_skew with A(0) = I and A'(0) = B.",
    latex=r"\varepsilon\mapsto A(\varepsilon)\in\mathcal{S}_\mathrm{skew},\ A(0) = \mathbb{I}",
    source=SRC.at("'The Cayley Transform'"),
    expected=Level.REFUTED,
    checker=Policy(identity=_curve_start_identity(), search=at_sizes({"n": 1}, {"n": 2}), points=1),
    notes="The identity is not skew-symmetric; the argument must start the curve at A(0) = 0.",
)


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    Claim(
        id="cayley.well_defined",
        title="I + A invertible for skew A",
        statement="I + A is invertible for every real skew-symmetric A, so Cayley(A) is defined.",
        latex=r"A^T = -A \in \mathbb{R}^{n\times n} \implies \det(\mathbb{I} + A) \neq 0",
        source=SRC.at("(implicit in 'The Cayley Transform')"),
        expected=Level.PROVED,
        checker=Policy(prove=_well_defined_derivation, extra=(_sum_of_squares_evidence,)),
    ),
    make_cayley_orthogonal("skew"),
    Claim(
        id="cayley.det_one",
        title="det Cayley(A) = 1",
        statement="det Cayley(A) = 1 for skew-symmetric A (Cayley maps into SO(N)).",
        latex=r"A^T = -A \implies \det\mathrm{Cayley}(A) = 1",
        source=SRC.at("'The Cayley Transform', footnote 4"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_det_identity(),
            search=grid(n=Grows(2, 5)),
            prove=_det_one_derivation,
            exact=grid(n=range(1, 4)),
        ),
    ),
    _ORTHOGONAL_DET_ONE,
    corrected(_ORTHOGONAL_DET_ONE, Claim(
        id="orthogonal.det_pm_one",
        title="orthogonal implies det +-1",
        statement="Q^T Q = I implies det Q = +1 or -1; det Q = 1 holds for Q = Cayley(A) (cayley.det_one).",
        latex=r"Q^TQ = \mathbb{I} \implies \det Q \in \{-1, 1\}",
        expected=Level.PROVED,
        checker=Policy(
            identity=det_implication_identity("pm_one"),
            search=grid(n=Grows(1, 3), reflect=[0, 1]),
            prove=_det_pm_one_derivation,
        ),
    )),
    _CAYLEY_SEED_CURVE_START,
    corrected(_CAYLEY_SEED_CURVE_START, Claim(
        id="cayley.first_variation",
        title="first variation of Cayley at 0",
        statement="For a curve of skew matrices with A(0) = 0, A'(0) = B: d/de Cayley(A(e)) at 0 is -2B, "
        "and the first variation of Cayley^T Cayley vanishes.",
        latex=r"\frac{d}{d\varepsilon}\Big|_{0}\mathrm{Cayley}(\varepsilon B) = -2B",
        expected=Level.PROVED,
        checker=Policy(identity=_first_variation_identity(), search=grid(n=range(2, 4)), prove=_first_variation_derivation),
    )),
]
