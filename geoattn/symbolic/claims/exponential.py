"""The orthonormal activation of seed 003.

.. math:: \\sigma(A) = \\exp(\\mathtt{upper\\_triangular\\_asymmetrize}(A)),
   \\qquad Z \\mapsto Z\\,\\sigma((P^QZ)^T(P^KZ)).

Note [exact points for exp]
---------------------------
``exp`` of a nonzero rational matrix is transcendental, so exact
counterexamples for the layer map are taken at rational points where the
upper triangle of ``(P^Q Z)^T(P^K Z)`` vanishes (``T = 2``: one linear
equation, solved for one entry of ``Z``). There ``exp`` is ``I`` and its
derivative is the identity, so the Jacobian is exact and rational.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import Determinant, Identity, MatrixSymbol, Trace

from .. import algebra as alg
from ..claim import Claim, corrected
from ..nodes import StrictUpper
from ..proof import identity, in_algebra, relation
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import Grows, Policy, T, at_sizes, grid, same
from ._derivations import by_cases, frozen_map_derivation, lift_symplectic_derivation
from ._sources import ORIGINS

__all__ = ["CLAIMS", "exp_map_identity"]

SRC = ORIGINS["003"]

S = MatrixSymbol("S", T, T)


# ---------------------------------------------------------------------------
# exp.uta_skew, exp.orthogonal, exp.det_one
# ---------------------------------------------------------------------------


def skew_rule(sym: MatrixSymbol):
    r"""A check that replaces every ``sym^T`` of the step's lhs by ``-sym`` (as written, before SymPy evaluates the
    transpose away) and compares the result with the rhs."""
    return relation(lambda lhs, rhs: same(lhs.xreplace({sym.T: -sym}), rhs), f"{sym}^T = -{sym}")


def _uta_derivation() -> Derivation:
    a = MatrixSymbol("A", T, T)
    i, j = sp.symbols("i j", integer=True, nonnegative=True)
    p = sp.Symbol("p", integer=True, positive=True)
    upper = StrictUpper(a)
    uta = upper - upper.T
    # the seed's entry (i, j) of uta(A), and the entry of triu_1(A) - triu_1(A)^T by the definition of triu_1
    seed_entry = sp.Piecewise((a[i, j], i < j), (-a[j, i], i > j), (0, True))
    triu_entry = sp.Piecewise((a[i, j], i < j), (0, True)) - sp.Piecewise((a[j, i], j < i), (0, True))
    cases = {"i < j": {j: i + p}, "i > j": {i: j + p}, "i = j": {i: j}}
    return Derivation(
        assumptions=[r"A = (a_{ij})\in\mathbb{R}^{T\times T}",
                     r"[\mathrm{triu}_1(A)]_{ij} = a_{ij} \text{ for } i < j,\ 0 \text{ otherwise}"],
        subject=(seed_entry,),
        steps=[
            Step(seed_entry, triu_entry, r"the seed's definition is \mathrm{triu}_1(A) - \mathrm{triu}_1(A)^T "
                 "entrywise", by_cases(cases)),
            Step(uta.T, upper.T - upper, "transpose of a difference; (X^T)^T = X", identity()),
            Step(upper.T - upper, -uta, "collect", identity()),
        ],
        remark=r"\mathtt{upper\_triangular\_asymmetrize}(A) = \mathrm{triu}_1(A) - \mathrm{triu}_1(A)^T "
        r"\text{ is skew-symmetric}",
        conclusion=sp.Eq(uta.T, -uta, evaluate=False),
    )


def _uta_identity() -> MatrixIdentity:
    def residual(size, A):
        u = alg.upper_triangular_asymmetrize(A)
        return u + u.T

    return MatrixIdentity(
        "uta(A) + uta(A)^T",
        variables=lambda s: {"A": alg.general("a", s["T"], s["T"])},
        residual=residual,
    )


def _exp_orthogonal_derivation() -> Derivation:
    E = alg.MatExp(S)
    return Derivation(
        assumptions=[r"S = \mathtt{upper\_triangular\_asymmetrize}(A),\ S^T = -S \text{ (exp.uta\_skew)}"],
        facts={"S skew (exp.uta_skew)": {S.T: -S}},
        steps=[
            Step(E.T * E, alg.MatExp(S.T) * E, r"\exp(X)^T = \exp(X^T) (power series)", identity(facts=())),
            Step(alg.MatExp(S.T) * E, alg.MatExp(-S) * E, "S^T = -S", identity()),
            Step(
                alg.MatExp(-S) * E,
                Identity(T),
                "functional calculus: exp(-s) exp(s) = 1 (S and -S commute)",
                in_algebra(S, -1),
            ),
        ],
        remark=r"\exp(S)^T\exp(S) = \mathbb{I}",
        conclusion=sp.Eq(E.T * E, Identity(T), evaluate=False),
    )


def _exp_orthogonal_identity() -> MatrixIdentity:
    def residual(size, A):
        e = alg.exp_skew(alg.upper_triangular_asymmetrize(A))
        return (e.T * e - sp.eye(size["T"])).applyfunc(sp.simplify)

    return MatrixIdentity(
        "exp(uta(A))^T exp(uta(A)) - I",
        variables=lambda s: {"A": alg.general("a", s["T"], s["T"])},
        residual=residual,
    )


def _exp_det_derivation() -> Derivation:
    tr = Trace(S)
    E = alg.MatExp(S)
    return Derivation(
        assumptions=[r"S^T = -S \text{ (exp.uta\_skew)}"],
        steps=[
            Step(Determinant(E), sp.exp(tr), r"\det\exp(S) = e^{\mathrm{tr}\,S} (Jacobi's formula)",
                 lemma="jacobi_formula"),
            Step(sp.exp(tr), sp.exp(Trace(S + S.T) / 2), r"\mathrm{tr}\,S = \mathrm{tr}\,S^T", identity()),
            Step(sp.exp(Trace(S + S.T) / 2), 1, r"S + S^T = 0", skew_rule(S)),
        ],
        remark=r"\det\exp(\mathtt{upper\_triangular\_asymmetrize}(A)) = e^0 = 1",
        conclusion=sp.Eq(Determinant(E), 1, evaluate=False),
    )


def _exp_det_identity() -> MatrixIdentity:
    return MatrixIdentity(
        "det exp(uta(A)) - 1",
        variables=lambda s: {"A": alg.general("a", s["T"], s["T"])},
        residual=lambda size, A: sp.simplify(alg.exp_skew(alg.upper_triangular_asymmetrize(A)).det() - 1),
    )


# ---------------------------------------------------------------------------
# exp.lift_symplectic
# ---------------------------------------------------------------------------


def _exp_lift_identity() -> MatrixIdentity:
    def residual(size, A):
        lam = alg.exp_skew(alg.upper_triangular_asymmetrize(A))
        lift = alg.kron(sp.eye(2 * size["n"]), lam)
        J = alg.poisson_matrix(size["n"] * size["T"])
        return (lift.T * J * lift - J).applyfunc(sp.simplify)

    return MatrixIdentity(
        "Lift^T J Lift - J",
        variables=lambda s: {"A": alg.general("a", s["T"], s["T"])},
        residual=residual,
    )


# ---------------------------------------------------------------------------
# the layer map: exp.map_symplectic, exp.map_volume_preserving
# ---------------------------------------------------------------------------


def _zero_angle(Z: sp.Matrix, PQ: sp.Matrix, PK: sp.Matrix) -> sp.Matrix | None:
    """Adjust the last entry of the last column of Z so that the upper
    triangle of (P^Q Z)^T (P^K Z) vanishes (T = 2); None if impossible."""
    if Z.cols != 2:
        raise ValueError(f"Expected T = 2 for zero-angle points. Got T = {Z.cols}.")
    x = sp.Dummy("x")
    Zx = Z.copy()
    Zx[Z.rows - 1, 1] = x
    m01 = sp.expand(((PQ * Zx).T * (PK * Zx))[0, 1])
    coeff = m01.coeff(x, 1)
    if coeff == 0:
        return None
    Zx[Z.rows - 1, 1] = sp.solve(m01, x)[0]
    return Zx


def exp_map_identity(kind: str, *, frozen: bool = False) -> MatrixIdentity:
    """Residual of the exp layer map at a zero-angle point.

    ``kind`` is ``"symplectic"`` (``J^T Omega J - Omega``) or ``"volume"``
    (``det J - 1``). ``frozen`` uses the linear map ``W -> W Lambda(Z0)``.
    """

    def layer(PQ, PK):
        return lambda W: W * alg.exp_skew(alg.upper_triangular_asymmetrize((PQ * W).T * (PK * W)))

    def residual(size, Z, PQ, PK):
        if frozen:  # a generic point: exp in closed form (cos/sin), simplified exactly
            lam = alg.exp_skew(alg.upper_triangular_asymmetrize((PQ * Z).T * (PK * Z)))
            jac = alg.kron(sp.eye(Z.rows), lam.T)
            if kind == "volume":
                return sp.simplify(jac.det() - 1)
            omega = alg.poisson_matrix(size["n"] * size["T"])
            return (jac.T * omega * jac - omega).applyfunc(sp.simplify)
        jac = alg.jacobian_rows(layer(PQ, PK), Z)
        if kind == "volume":
            return jac.det() - 1
        omega = alg.poisson_matrix(size["n"] * size["T"])
        return jac.T * omega * jac - omega

    def variables(s):
        dim = 2 * s["n"]
        return {
            "Z": alg.general("z", dim, 2),
            "PQ": alg.general("q", s["m"], dim),
            "PK": alg.general("k", s["m"], dim),
        }

    def project(size, Z, PQ, PK):
        z0 = _zero_angle(Z, PQ, PK)
        return None if z0 is None else {"Z": z0, "PQ": PQ, "PK": PK}

    name = ("det J - 1" if kind == "volume" else "J^T Omega J - Omega") + (" (frozen Z0)" if frozen else "")
    return MatrixIdentity(name, variables=variables, residual=residual, project=None if frozen else project)


def _exp_map_claim(kind: str) -> Claim:
    word = "symplectic" if kind == "symplectic" else "volume-preserving"
    return Claim(
        id=f"exp.map_{'symplectic' if kind == 'symplectic' else 'volume_preserving'}",
        title=f"exp layer map {word}",
        statement=f"The layer map Z -> Z exp(upper_triangular_asymmetrize((P^Q Z)^T (P^K Z))) is {word}.",
        latex=r"Z\mapsto Z\exp(\mathtt{upper\_triangular\_asymmetrize}((P^QZ)^T(P^KZ)))\ \text{is " + word + "}",
        source=SRC.at("'symplectic transformation that is transformer-like'"),
        expected=Level.REFUTED,
        checker=Policy(
            identity=exp_map_identity(kind),
            search=at_sizes({"n": 1, "T": 2, "m": 2}, {"n": 2, "T": 2, "m": 2}),
            points=4,
        ),
        notes="See Note [exact points for exp]; the Jacobian has a term from dLambda/dZ, as in "
        "vp.map_volume_preserving.arbitrary.",
    )


def _frozen_exp_claim(kind: str) -> Claim:
    base = "exp.map_symplectic" if kind == "symplectic" else "exp.map_volume_preserving"
    if kind == "symplectic":

        def prove():
            return lift_symplectic_derivation(cite="exp.orthogonal")

        statement = "For each fixed Z0 the linear map Z -> Z Lambda(Z0), Lambda = exp(uta(...)), is symplectic."
        latex = r"(\mathbb{I}_{2n}\otimes\Lambda(Z_0)^T)^T\mathbb{J}(\mathbb{I}_{2n}\otimes\Lambda(Z_0)^T) = \mathbb{J}"
    else:

        def prove():
            arg = r"\mathtt{upper\_triangular\_asymmetrize}((P^QZ_0)^T(P^KZ_0))"
            return frozen_map_derivation(arg, "exp.det_one", r"\exp")
        statement = "For each fixed Z0 the linear map Z -> Z Lambda(Z0), Lambda = exp(uta(...)), is volume-preserving."
        latex = r"\det(\mathbb{I}_{2n}\otimes\Lambda(Z_0)^T) = 1"
    return corrected(_exp_map_claim(kind), Claim(
        id=f"{base}.frozen",
        title=f"frozen exp map {kind}",
        statement=statement,
        latex=latex,
        expected=Level.PROVED,
        checker=Policy(
            identity=exp_map_identity(kind, frozen=True),
            search=at_sizes({"n": 1, "T": 2, "m": 2}),
            points=2,
            prove=prove,
        ),
    ))


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    Claim(
        id="exp.uta_skew",
        title="upper_triangular_asymmetrize is skew",
        statement="upper_triangular_asymmetrize(A) (a_ij above, -a_ji below, 0 on the diagonal) is skew-symmetric.",
        latex=r"\mathtt{upper\_triangular\_asymmetrize}(A)^T = -\mathtt{upper\_triangular\_asymmetrize}(A)",
        source=SRC.at("definition of upper_triangular_asymmetrize"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_uta_identity(),
            search=grid(T=[2, 3, 4]),
            prove=_uta_derivation,
            exact=grid(T=Grows(1, 5)),
            always_exact=True,
        ),
    ),
    Claim(
        id="exp.orthogonal",
        title="exp(uta(A)) is orthogonal",
        statement="exp(upper_triangular_asymmetrize(A)) is orthogonal (orthonormal).",
        latex=r"\sigma(A) = \exp(\mathtt{upper\_triangular\_asymmetrize}(A)) "
        r"\implies \sigma(A)^T\sigma(A) = \mathbb{I}",
        source=SRC.at("'the matrix Lambda(Z) is orthonormal'"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_exp_orthogonal_identity(),
            search=at_sizes({"T": 2}),
            points=2,
            prove=_exp_orthogonal_derivation,
        ),
    ),
    Claim(
        id="exp.det_one",
        title="det exp(uta(A)) = 1",
        statement="The orthonormal activation has determinant 1 (it lies in SO(T)).",
        latex=r"\det\exp(\mathtt{upper\_triangular\_asymmetrize}(A)) = 1",
        source=f"{SRC}; {ORIGINS['000'].at('remark on det sigma(C)')}",
        expected=Level.PROVED,
        checker=Policy(identity=_exp_det_identity(), search=at_sizes({"T": 2}), points=2, prove=_exp_det_derivation),
    ),
    Claim(
        id="exp.lift_symplectic",
        title="exp lift preserves extended J",
        statement="Lambda-tilde(Z) = block-diag(Lambda(Z), ...) with Lambda = exp(uta((P^Q Z)^T (P^K Z))) satisfies "
        "Lambda-tilde^T J Lambda-tilde = J for the q/p rearrangement, at each fixed Z.",
        latex=r"\tilde\Lambda(Z)^T\mathbb{J}\tilde\Lambda(Z) = \mathbb{J}",
        source=SRC.at("'extended symplectic structure'"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_exp_lift_identity(),
            search=at_sizes({"n": 1, "T": 2}),
            points=2,
            prove=lambda: lift_symplectic_derivation(cite="exp.orthogonal"),
        ),
    ),
    _exp_map_claim("symplectic"),
    _exp_map_claim("volume"),
    _frozen_exp_claim("symplectic"),
    _frozen_exp_claim("volume"),
]
