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
    block_collapse,
)

from .. import algebra as alg
from ..claim import Claim
from ..proof import identity
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity, exact_check
from ._common import Policy, T, at_sizes, d, same
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

LINEAR_SRC = f"{SRC}, {SEC} (linear-time form of the layer)"


def push_through_lemma_step(hypothesis: bool = True) -> Step:
    r"""``XY = WX`` with ``W, Y`` invertible implies ``W^{-1}X = XY^{-1}`` (an implication, not an identity).

    The verifier reduces ``E = W^{-1}(WX)Y^{-1}`` two ways: by cancelling ``W^{-1}W`` (to ``XY^{-1}``) and, after
    rewriting ``WX`` by the hypothesis ``XY``, by cancelling ``YY^{-1}`` (to ``W^{-1}X``). With
    ``hypothesis=False`` the rewrite is skipped and the step fails to verify (a negative control).
    """
    X, W, Y = MatrixSymbol("X", d, T), MatrixSymbol("W", d, d), MatrixSymbol("Y", T, T)

    def verify():
        e = MatMul(Inverse(W), W, X, Inverse(Y))  # unevaluated W^{-1}(WX)Y^{-1}
        via_w = e.doit()
        via_y = (e.subs(W * X, X * Y) if hypothesis else e).doit()
        return via_w == X * Inverse(Y) and via_y == Inverse(W) * X

    return Step(r"XY=WX,\ W,\ Y \text{ invertible}", r"W^{-1}X=XY^{-1}",
                r"W^{-1}(WX)Y^{-1} is XY^{-1} (cancel W^{-1}W) and, with WX=XY, W^{-1}X (cancel YY^{-1})",
                verify, relation="=>")


def _push_through_derivation() -> Derivation:
    X, W, Y = MatrixSymbol("X", d, T), MatrixSymbol("W", d, d), MatrixSymbol("Y", T, T)
    inst = {X: Zm, W: Id + Mz, Y: It + Cz}
    left, right = Inverse(W) * X, X * Inverse(Y)
    solved = Zm * Inverse(It + Cz)

    def instance():  # the lemma's hypothesis and conclusion at X = Z, W = I + M, Y = I + C
        return (
            same((X * Y).xreplace(inst), Zm * (It + Cz))
            and same((W * X).xreplace(inst), (Id + Mz) * Zm)
            and left.xreplace(inst) == Inverse(Id + Mz) * Zm
            and right.xreplace(inst) == solved
        )

    return Derivation(
        assumptions=[
            r"A^T = -A\in\mathbb{R}^{d\times d},\ Z\in\mathbb{R}^{d\times T},\ C = Z^TAZ,\ M = ZZ^TA",
            r"I_T + C \text{ invertible (vp.skew\_weighting, cayley.well\_defined)}",
            r"I_d + M \text{ invertible (vp.push\_through\_invertible)}",
        ],
        steps=[
            Step((Id + Mz) * Zm, Zm * (It + Cz), "distribute: both are Z+ZZ^TAZ",
                 identity()),
            Step((Id - Mz) * Zm, Zm * (It - Cz), "distribute: both are Z-ZZ^TAZ",
                 identity()),
            push_through_lemma_step(),
            Step(Inverse(Id + Mz) * Zm, solved, "step 3 with X=Z, W=I_d+M, Y=I_T+C (hypothesis: step 1)", instance),
            Step(Zm * cay(Cz), (Id - Mz) * solved, "step 2", identity()),
            Step((Id - Mz) * solved, cay(Mz, Id) * Zm, "step 4",
                 identity()),
        ],
        remark=r"Z\,\mathrm{Cayley}(Z^TAZ) = \mathrm{Cayley}(ZZ^TA)\,Z \text{ for all } d, T \text{ and every } Z",
        conclusion=sp.Eq((Id + Mz) * Zm, cay(Mz, Id) * Zm, evaluate=False),
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
    tex_b = r"\begin{pmatrix} I_d & -X \\ Y & I_T \end{pmatrix}"
    tex_u = r"\begin{pmatrix} I_d + XY & -X \\ 0 & I_T \end{pmatrix}"
    tex_l = r"\begin{pmatrix} I_d & 0 \\ Y & I_T \end{pmatrix}"

    def factors():
        prod = block_collapse(U * L)
        return all(same(prod.blocks[r, c], B.blocks[r, c]) for r in range(2) for c in range(2))

    def schur():
        return same(sp.det(B), Determinant(It + Y * X))

    def triangular():
        return same(sp.det(U) * sp.det(L), Determinant(Id + X * Y))

    return Derivation(
        assumptions=[r"X\in\mathbb{R}^{d\times T},\ Y\in\mathbb{R}^{T\times d}", r"A^T = -A,\ C = Z^TAZ,\ M = ZZ^TA"],
        steps=[
            Step(tex_b, tex_u + tex_l, "block multiplication", factors),
            Step(rf"\det{tex_b}", Determinant(It + Y * X), r"Schur complement of the block I_d", schur),
            Step(rf"\det{tex_u}\det{tex_l}", Determinant(Id + X * Y),
                 r"\det(PQ)=\det P\det Q; block-triangular determinants", triangular),
            Step(Determinant(Id + X * Y), Determinant(It + Y * X),
                 r"Sylvester's determinant identity: steps 1-3 and \det(UL)=\det U\det L",
                 identity()),
            Step(Determinant(Id + Mz), Determinant(It + Cz), "step 4 with X=Z, Y=Z^TA",
                 identity()),
            Step(Transpose(Cz), -Cz, "A^T=-A (vp.skew_weighting)", identity((Am.T, -Am))),
            Step(Determinant(It + Cz), 0, "I+S is invertible for skew S (cayley.well_defined)", lemma='ledger:cayley.well_defined', relation=r"\neq"),
        ],
        remark=r"\det(I_d + ZZ^TA) = \det(I_T + Z^TAZ) \neq 0: I_d + ZZ^TA \text{ is invertible}",
        conclusion=sp.Eq(tex_b, 0, evaluate=False),
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
    step, P = Zm * MatPow(Cs, k + 1), MatrixSymbol("P", d, T)  # P stands for ZC^k

    def induction():
        hyp = (P * Cs).xreplace({P: MatPow(Ms, k) * Zm}).doit()  # (ZC^k)C with ZC^k = M^kZ
        return same(Zm * MatPow(Cs, k) * Cs, step) and subs_chain(hyp, MatPow(Ms, k + 1) * Zm, (Zm * Cs, Ms * Zm))

    return Derivation(
        assumptions=[r"C = Z^TAZ,\ M = ZZ^TA", r"\text{steps 2-3 for any } C, M \text{ with } ZC = MZ"],
        steps=[
            Step(r"ZC = Z(Z^TAZ)", r"(ZZ^TA)Z = MZ", "associativity: both are ZZ^TAZ", identity()),
            Step(r"ZC^0", r"M^0Z", r"C^0=I_T, M^0=I_d", identity()),
            Step(step, MatPow(Ms, k + 1) * Zm, r"ZC^{k+1}=(ZC^k)C; hypothesis ZC^k=M^kZ; ZC=MZ; M^kM=M^{k+1}",
                 induction),
            Step(Zm * alg.MatExp(Cz), alg.MatExp(Mz) * Zm,
                 r"\exp(X)=\sum_k X^k/k! converges absolutely; multiply termwise by Z (steps 1-3)", lemma='power_series_calculus'),
        ],
        remark=r"Z\exp(Z^TAZ) = \exp(ZZ^TA)\,Z",
        conclusion=None,  # TODO
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
        statement="For every Z in R^{d x T} and skew A, Z Cayley(Z^T A Z) = Cayley(Z Z^T A) Z (any d, T and rank of Z).",
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
        notes="The exact checks compare Z C^k with M^k Z for k <= 6; the residual of the degree-6 Taylor polynomial is the "
        "sum of these terms, each homogeneous of degree 2k+1 in Z, so it vanishes iff every term does.",
    ),
]
