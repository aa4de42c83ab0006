r"""The linear-time form of the volume-preserving layer (seed 000).

With ``C = Z^T A Z`` (``A`` skew, ``d x d``; ``Z`` is ``d x T``) and ``M = Z Z^T A``
the layer's ``T x T`` matrices can be pushed through ``Z``:
``Z Cayley(C) = Cayley(M) Z`` and ``Z exp(C) = exp(M) Z``, with
``det(I_d + M) = det(I_T + C) != 0`` (Sylvester's identity), so the layer needs the
``d x d`` Gram matrix ``Z Z^T`` and one ``d x d`` solve: ``O(T d^2)`` work and no
``T x T`` tensor. The helpers here (``z_variable``, ``skew_variables``, the size
lists) are shared with :mod:`.vp_map`.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import (
    BlockMatrix,
    Determinant,
    Identity,
    Inverse,
    MatMul,
    MatPow,
    MatrixSymbol,
    Transpose,
    ZeroMatrix,
)

from .. import algebra as alg
from ..claim import Claim
from ..proof import identity, relation
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity, exact_check
from ._common import Policy, T, at_sizes, d, same
from ._derivations import _blockwise
from .volume_preserving import SEC, SRC

__all__ = [
    "CLAIMS",
    "SIZES",
    "LOW_RANK",
    "z_variable",
    "skew_variables",
    "invertible",
    "cay",
    "subs_chain",
    "rewrite",
    "induction_on",
    "push_through_identity",
    "sylvester_identity",
    "taylor_identity",
]

Zm, Am = MatrixSymbol("Z", d, T), MatrixSymbol("A", d, d)
Cs, Ms = MatrixSymbol("C", T, T), MatrixSymbol("M", d, d)
Id, It = Identity(d), Identity(T)
Cz, Mz = Zm.T * Am * Zm, Zm * Zm.T * Am
k = sp.Symbol("k", integer=True, nonnegative=True)

#: random sizes of the corroborating exact points (T < d, T = d, T > d) and rank-one points
SIZES = [{"d": 2, "T": 3}, {"d": 3, "T": 2}, {"d": 3, "T": 3}, {"d": 4, "T": 2}, {"d": 2, "T": 5}]
LOW_RANK = [{"d": 3, "T": 3, "rank": 1}, {"d": 4, "T": 2, "rank": 1}, {"d": 2, "T": 3, "rank": 1}]


def cay(x, ident=It):
    """``(I - X)(I + X)^{-1}`` as a matrix expression."""
    return (ident - x) * Inverse(ident + x)


def subs_chain(expr, target, *rewrites) -> bool:
    """Apply the rewrites ``(old, new)`` (contiguous factors of a product) in order; compare with ``target``."""
    for old, new in rewrites:
        expr = expr.subs(old, new)
    return same(expr.doit(), target.doit())


def z_variable(s: dict) -> sp.Matrix:
    """``Z`` at size ``s``: generic, or ``U V^T`` of rank ``s["rank"]`` when that is below ``min(d, T)``."""
    r = s.get("rank")
    if r is None or r >= min(s["d"], s["T"]):
        return alg.general("z", s["d"], s["T"])
    return alg.general("u", s["d"], r) * alg.general("v", s["T"], r).T


def skew_variables(s: dict, structure: str = "skew") -> dict:
    """``{"Z": z_variable(s), "A": ...}`` with ``A`` skew (or general, for negative controls)."""
    a = alg.skew("a", s["d"]) if structure == "skew" else alg.general("a", s["d"], s["d"])
    return {"Z": z_variable(s), "A": a}


def invertible(size, Z, A) -> bool:
    """``I_T + Z^T A Z`` and ``I_d + Z Z^T A`` are invertible at an exact point."""
    return (sp.eye(Z.cols) + Z.T * A * Z).det() != 0 and (sp.eye(Z.rows) + Z * Z.T * A).det() != 0


# ---------------------------------------------------------------------------
# vp.push_through, vp.push_through_invertible, vp.exp_push_through
# ---------------------------------------------------------------------------

LINEAR_SRC = SRC.at(f"{SEC} (linear-time form of the layer)")


def rewrite(*pairs, name: str = "") -> "relation":
    r"""A check that applies the rewrites ``(old, new)`` (contiguous factors of a product, e.g.
    ``(I + M)Z -> Z(I + C)``)
    to the step's lhs, in order, and compares the result with its rhs after SymPy's evaluation (which cancels
    ``X X^{-1}``). Each rewrite must itself be an identity the derivation verifies."""
    shown = ", ".join(f"{sp.sstr(a)} -> {sp.sstr(b)}" for a, b in pairs)
    return relation(lambda lhs, rhs: subs_chain(lhs, rhs, *pairs), name or f"rewrite {shown}")


def induction_on(var: sp.Symbol, *pairs) -> "relation":
    r"""A check of ``X B^{var} = R(var)`` for every integer ``var >= 0`` by induction, from the step's sides: the
    base ``var = 0`` by evaluation, and the step ``X B^{var+1} = (X B^{var}) B``, rewritten by the hypothesis (the
    step itself) and then by ``pairs``, equal to ``R(var + 1)``."""

    def decide(lhs, rhs):
        if not (isinstance(lhs, MatMul) and isinstance(lhs.args[-1], MatPow) and lhs.args[-1].exp == var):
            return False
        if not same(lhs.subs(var, 0).doit(), rhs.subs(var, 0).doit()):
            return False
        peeled = MatMul(*lhs.args, lhs.args[-1].base)
        if not same(peeled.doit(), lhs.subs(var, var + 1).doit()):
            return False
        return subs_chain(peeled.subs(lhs, rhs), rhs.subs(var, var + 1), *pairs)

    return relation(decide, f"induction on {var}")


def _push_through_derivation() -> Derivation:
    start = MatMul(Id - Mz, Zm, Inverse(It + Cz))
    inserted = MatMul(Id - Mz, Inverse(Id + Mz), Id + Mz, Zm, Inverse(It + Cz))
    pushed = MatMul(Id - Mz, Inverse(Id + Mz), Zm, It + Cz, Inverse(It + Cz))
    return Derivation(
        assumptions=[
            r"A^T = -A\in\mathbb{R}^{d\times d},\ Z\in\mathbb{R}^{d\times T},\ C = Z^TAZ,\ M = ZZ^TA",
            r"I_T + C \text{ invertible (vp.skew\_weighting, cayley.well\_defined)}",
            r"I_d + M \text{ invertible (vp.push\_through\_invertible)}",
        ],
        subject=((Id + Mz) * Zm,),
        steps=[
            Step((Id + Mz) * Zm, Zm * (It + Cz), "distribute: both are Z + ZZ^TAZ", identity()),
            Step(Zm * cay(Cz), start, "distribute: Z(I - C) and (I - M)Z are both Z - ZZ^TAZ", identity()),
            Step(start, inserted, r"insert (I + M)^{-1}(I + M) = I", identity()),
            Step(inserted, pushed, "step 1: (I + M)Z = Z(I + C)",
                 rewrite((MatMul(Id + Mz, Zm), MatMul(Zm, It + Cz)), name="rewrite by step 1")),
            Step(pushed, cay(Mz, Id) * Zm, r"cancel (I + C)(I + C)^{-1} = I", identity()),
        ],
        remark=r"Z\,\mathrm{Cayley}(Z^TAZ) = \mathrm{Cayley}(ZZ^TA)\,Z \text{ for all } d, T \text{ and every } Z",
        conclusion=sp.Eq(Zm * cay(Cz), cay(Mz, Id) * Zm, evaluate=False),
    )


def push_through_identity(structure: str = "skew", gram: str = "right") -> MatrixIdentity:
    """``Z Cayley(Z^T A Z) - Cayley(M) Z`` at exact points.

    Parameters
    ----------
    structure : str
        ``"skew"`` (the claim) or ``"general"`` (``A`` without structure).
    gram : str
        ``"right"``: ``M = Z Z^T A`` (the claim); ``"left"``: ``M = A Z Z^T``, a false variant.
    """

    def residual(size, Z, A):
        m = Z * Z.T * A if gram == "right" else A * Z * Z.T
        return (Z * alg.cayley(Z.T * A * Z) - alg.cayley(m) * Z).applyfunc(sp.cancel)

    def valid(size, Z, A):
        return invertible(size, Z, A) and (gram == "right" or (sp.eye(Z.rows) + A * Z * Z.T).det() != 0)

    name = "Z Cayley(Z^T A Z) - Cayley(" + ("Z Z^T A" if gram == "right" else "A Z Z^T") + ") Z"
    return MatrixIdentity(name, variables=lambda s: skew_variables(s, structure), residual=residual, valid=valid)


def _sylvester_derivation() -> Derivation:
    X, Y, O_td, O_dt = MatrixSymbol("X", d, T), MatrixSymbol("Y", T, d), ZeroMatrix(T, d), ZeroMatrix(d, T)
    B, U, L = (BlockMatrix([[Id, -X], [Y, It]]), BlockMatrix([[Id + X * Y, -X], [O_td, It]]),
               BlockMatrix([[Id, O_dt], [Y, It]]))
    inst = {X: Zm, Y: Zm.T * Am}
    generic_l, generic_r = Determinant(Id + X * Y), Determinant(It + Y * X)

    def instance(lhs, rhs):  # the generic identity (steps 1-3) at X = Z, Y = Z^T A
        return same(lhs, generic_l.xreplace(inst)) and same(rhs, generic_r.xreplace(inst))

    def same_blocks(lhs, rhs):
        return isinstance(lhs, Determinant) and isinstance(rhs, Determinant) and _blockwise(lhs.arg, rhs.arg, [])

    return Derivation(
        assumptions=[r"X\in\mathbb{R}^{d\times T},\ Y\in\mathbb{R}^{T\times d}", r"A^T = -A,\ C = Z^TAZ,\ M = ZZ^TA"],
        facts={"A skew": {Am.T: -Am}},
        subject=(generic_l, Transpose(Cz), Determinant(It + Cz)),
        steps=[
            Step(generic_l, Determinant(U * L), r"\det(PQ) = \det P\det Q; block-triangular determinants "
                 r"(\det U = \det(I_d + XY), \det L = 1)", identity(facts=())),
            Step(Determinant(U * L), Determinant(B), "block multiplication", relation(same_blocks, "blockwise")),
            Step(Determinant(B), generic_r, r"Schur complement of the block I_d", identity(facts=())),
            Step(Transpose(Cz), -Cz, "A^T = -A: C is skew (vp.skew_weighting)", identity()),
            Step(Determinant(It + Cz), "0", "I + S is invertible for skew S (cayley.well_defined)",
                 lemma="ledger:cayley.well_defined", relation=r"\neq"),
            Step(Determinant(Id + Mz), Determinant(It + Cz), "steps 1-3 (Sylvester's identity) at X = Z, Y = Z^TA",
                 relation(instance, "instance of steps 1-3")),
        ],
        remark=r"\det(I_d + ZZ^TA) = \det(I_T + Z^TAZ) \neq 0: I_d + ZZ^TA \text{ is invertible}",
        conclusion=sp.Eq(Determinant(Id + Mz), Determinant(It + Cz), evaluate=False),
    )


def sylvester_identity(general: bool) -> MatrixIdentity:
    """``det(I_d + Z Z^T A) - det(I_T + Z^T A Z)`` (``A`` skew), or with ``general``
    ``det(I_d + XY) - det(I_T + YX)`` for general ``X`` (``d x T``) and ``Y`` (``T x d``)."""

    def residual(size, Z, A):
        eye_d, eye_t = sp.eye(size["d"]), sp.eye(size["T"])
        return sp.expand((eye_d + Z * A).det(method="berkowitz") - (eye_t + A * Z).det(method="berkowitz"))

    if general:  # X = Z, Y = A
        return MatrixIdentity(
            "det(I_d + XY) - det(I_T + YX)", residual=residual,
            variables=lambda s: {"Z": alg.general("x", s["d"], s["T"]), "A": alg.general("y", s["T"], s["d"])},
        )
    return MatrixIdentity("det(I_d + Z Z^T A) - det(I_T + Z^T A Z)", variables=lambda s: skew_variables(s),
                          residual=lambda size, Z, A: residual(size, Z, Z.T * A))


def _general_sylvester_evidence(ctx) -> Evidence:
    """Sylvester's identity for general ``X``, ``Y``, exact at two sizes."""
    ok, done = exact_check(sylvester_identity(True), [{"d": 2, "T": 3}, {"d": 3, "T": 2}])
    return Evidence(Level.CHECKED if ok else Level.ERROR, "Sylvester's identity for general X, Y", sizes=done)


def _exp_push_derivation() -> Derivation:
    defs = {Cs: Cz, Ms: Mz}
    return Derivation(
        assumptions=[r"C = Z^TAZ,\ M = ZZ^TA"],
        facts={"C = Z^TAZ, M = ZZ^TA": defs},
        subject=(Zm * Cs, Zm * MatPow(Cs, k)),
        steps=[
            Step(Zm * Cs, Ms * Zm, "associativity: both are ZZ^TAZ", identity()),
            Step(Zm * MatPow(Cs, k), MatPow(Ms, k) * Zm,
                 r"induction on k: Z C^0 = M^0 Z; Z C^{k+1} = (ZC^k)C = M^k Z C = M^k M Z (step 1)",
                 induction_on(k, (Zm * Cs, Ms * Zm))),
            Step(Zm * alg.MatExp(Cz), Zm * alg.MatExp(Cs), "C = Z^TAZ", identity()),
            Step(Zm * alg.MatExp(Cs), alg.MatExp(Ms) * Zm,
                 r"\exp(X)=\sum_k X^k/k! converges absolutely; multiply termwise by Z (step 2)",
                 lemma="power_series_calculus"),
            Step(alg.MatExp(Ms) * Zm, alg.MatExp(Mz) * Zm, "M = ZZ^TA", identity()),
        ],
        remark=r"Z\exp(Z^TAZ) = \exp(ZZ^TA)\,Z",
        conclusion=sp.Eq(Zm * alg.MatExp(Cz), alg.MatExp(Mz) * Zm, evaluate=False),
    )


DEEP_TAYLOR = [{"d": 2, "T": 3}, {"d": 3, "T": 2}]


def taylor_identity(degree: int = 6) -> MatrixIdentity:
    """``[Z C^k - M^k Z]_{k=1..degree}`` (``C = Z^T A Z``, ``M = Z Z^T A``): the Taylor polynomial
    ``Z p(C) - p(M) Z`` of the exponential, degree by degree."""

    def residual(size, Z, A):
        left, right, c, m, out = Z, Z, Z.T * A * Z, Z * Z.T * A, []
        for _ in range(degree):  # Z C^k and M^k Z
            left, right = (left * c).applyfunc(sp.expand), (m * right).applyfunc(sp.expand)
            out.append(left - right)
        return sp.Matrix.vstack(*out)

    return MatrixIdentity(f"Z C^k - M^k Z, k = 1..{degree}", variables=lambda s: skew_variables(s), residual=residual)


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    Claim(
        id="vp.push_through",
        title="push-through: Z Cayley(Z^T A Z) = Cayley(Z Z^T A) Z",
        statement="For every Z in R^{d x T} and skew A, Z Cayley(Z^T A Z) = Cayley(Z Z^T A) Z "
        "(any d, T and rank of Z).",
        latex=r"Z\,(I_T - Z^TAZ)(I_T + Z^TAZ)^{-1} = (I_d - ZZ^TA)(I_d + ZZ^TA)^{-1}Z",
        source=LINEAR_SRC,
        expected=Level.PROVED,
        checker=Policy(
            identity=push_through_identity(),
            search=at_sizes(*SIZES, *LOW_RANK),
            points=2,
            prove=_push_through_derivation,
            exact=at_sizes({"d": 2, "T": 1}, deep=[{"d": 2, "T": 2}]),
            always_exact=True,
        ),
        notes="The identity holds for any A for which I + Z^T A Z is invertible; skewness makes both inverses exist.",
    ),
    Claim(
        id="vp.push_through_invertible",
        title="I_d + Z Z^T A is invertible",
        statement="For every Z in R^{d x T} and skew A, det(I_d + Z Z^T A) = det(I_T + Z^T A Z) != 0.",
        latex=r"\det(I_d + ZZ^TA) = \det(I_T + Z^TAZ) \neq 0",
        source=LINEAR_SRC,
        expected=Level.PROVED,
        checker=Policy(
            identity=sylvester_identity(False),
            search=at_sizes(*SIZES, *LOW_RANK),
            points=2,
            prove=_sylvester_derivation,
            exact=at_sizes(
                {"d": 1, "T": 2}, {"d": 2, "T": 1}, {"d": 2, "T": 2}, {"d": 3, "T": 2}, {"d": 2, "T": 3},
                {"d": 3, "T": 3}, deep=[{"d": 4, "T": 2}],
            ),
            exact_method="exact symbolic identity det(I_d + ZZ^TA) = det(I_T + Z^TAZ), A skew",
            always_exact=True,
            extra=(_general_sylvester_evidence,),
        ),
    ),
    Claim(
        id="vp.exp_push_through",
        title="push-through: Z exp(Z^T A Z) = exp(Z Z^T A) Z",
        statement="For every Z in R^{d x T} and skew A, Z exp(Z^T A Z) = exp(Z Z^T A) Z.",
        latex=r"Z\exp(Z^TAZ) = \exp(ZZ^TA)\,Z",
        source=LINEAR_SRC,
        expected=Level.PROVED,
        checker=Policy(
            identity=taylor_identity(),
            search=at_sizes(*SIZES, *LOW_RANK),
            points=2,
            prove=_exp_push_derivation,
            exact=at_sizes({"d": 2, "T": 1}, {"d": 2, "T": 2}, deep=DEEP_TAYLOR),
            exact_method="exact symbolic Taylor identity Z p_6(C) = p_6(M) Z, degree by degree",
            always_exact=True,
        ),
        notes="The exact checks compare Z C^k with M^k Z for k <= 6; the residual of the degree-6 Taylor polynomial "
        "is the "
        "sum of these terms, each homogeneous of degree 2k+1 in Z, so it vanishes iff every term does.",
    ),
]
