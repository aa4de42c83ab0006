r"""The volume-preserving layer map ``F(Z) = Z Cayley(C(Z))`` (seed 000).

With ``C(Z) = Z^T A Z`` (``A`` skew) the map keeps ``C`` invariant,
``C(F(Z)) = C(Z)``, its inverse is the same layer with ``A`` replaced by
``-A``, and it is volume-preserving for every ``d`` and ``T``; so is
``Z -> Z exp(Z^T A Z)``. Its linear-time form is in :mod:`.vp_linear`. With
the arbitrary weighting ``C(Z) = skew_from_lower(Z^T A Z)`` the map is not
volume-preserving.

Note [map versus frozen matrix]
-------------------------------
The seed argues volume preservation from the orthogonality of ``Lambda(Z)`` at
a fixed ``Z``. The layer map's Jacobian has a second term from ``dLambda/dZ``,
so that argument proves only the frozen claim ``vp.map_volume_preserving.frozen``.
For the map itself the ledger mechanises a flow argument
(:func:`.vp_flow.volume_flow_derivation`). On ``U = {Z : ||C(Z)|| < 1}`` the map
is the time-1 flow of ``V(Z) = Z K(C(Z))`` with
``K(C) = -2 artanh(C) = -2 sum_j C^(2j+1)/(2j+1)``: along the flow
``dC/dt = K^T C + C K = 0`` (odd powers of a skew ``C`` are skew and commute
with ``C``), so ``Z(t) = Z_0 exp(t K(C_0))``, and ``exp(K(C)) = Cayley(C)``.
``div(Z -> Z C^m)`` is a sum of products of traces of powers of ``C`` with one
odd power in each term, hence zero for odd ``m``, and Liouville's theorem gives
``det J_F = 1`` on ``U``. ``det J_F - 1`` is a polynomial over a power of
``det(I + C)``, and a polynomial vanishing on the open set ``U`` (which contains
``Z = 0``) is zero, so ``det J_F = 1`` everywhere. SymPy verifies the algebraic
steps; the analytic ones (power series, the linear ODE, Liouville, the identity
theorem for polynomials) and the divergence formula are stated lemmas; the
formula is not verified by SymPy for general sizes, only checked exactly at
explicit sizes. The exact Jacobian checks
(symbolic at small sizes, certified beyond, rank-one points) corroborate the
result. With ``K(C) = C`` the same argument, without series or continuation,
proves the exponential form. With the arbitrary weighting ``C`` is not
invariant and the determinant differs from 1 (refuted, with an exact
counterexample).
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import Identity, MatMul, MatrixSymbol
from sympy.polys.matrices import DomainMatrix

from .. import algebra as alg
from ..claim import Claim, corrected
from ..proof import Check, identity, in_algebra
from ..steps import _apply
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity, certify
from ._common import Policy, T, at_sizes, d, grid, sizes
from .volume_preserving import SEC, SRC
from ._derivations import frozen_map_derivation
from .vp_flow import circle_evidence, divergence_evidence
from .vp_linear import LOW_RANK, SIZES, cay, skew_variables

__all__ = [
    "CLAIMS",
    "correlation",
    "map_identity",
    "map_degree_bound",
    "make_map_claim",
    "invariant_identity",
    "inverse_identity",
    "make_inverse_claim",
]

Zm, Am, Ym = MatrixSymbol("Z", d, T), MatrixSymbol("A", d, d), MatrixSymbol("Y", d, T)
Cs, Lm = MatrixSymbol("C", T, T), MatrixSymbol("Lambda", T, T)
It = Identity(T)
Cz = Zm.T * Am * Zm


def _algebra(lhs, rhs) -> bool:
    return alg.equal_in_algebra(lhs, rhs, Cs, -1)


# ---------------------------------------------------------------------------
# vp.map_invariant, vp.map_invariant.exp
# ---------------------------------------------------------------------------


#: the hypotheses the functional-calculus checks use: A skew, and C standing for Z^T A Z (or Y^T A Y)
FACTS = {"A skew": {Am.T: -Am}, "C = Z^TAZ": {Cz: Cs}}


def _calculus(facts=("A skew", "C = Z^TAZ")):
    """Functional calculus in ``C`` (skew) after ``A^T = -A`` and ``Z^T A Z = C``."""
    return in_algebra(Cs, -1, facts=facts)


def _invariant_derivation() -> Derivation:
    lam = cay(Cz)
    image = (Zm * lam).T * Am * (Zm * lam)
    conj = lam.T * Cz * lam
    return Derivation(
        assumptions=[r"A^T = -A,\ C = Z^TAZ \text{ (so } C^T = -C\text{, vp.skew\_weighting)}",
                     r"\Lambda = \mathrm{Cayley}(C) = (I-C)(I+C)^{-1}"],
        facts=FACTS,
        steps=[
            Step(image, conj, r"(Z\Lambda)^T = \Lambda^TZ^T", identity(facts=())),
            Step(conj, Cz, r"functional calculus: \Lambda^T = \mathrm{Cayley}(-C) commutes with C and "
                 r"\Lambda^T\Lambda = I", _calculus()),
        ],
        remark=r"C(Z\Lambda(Z)) = \Lambda^TC\Lambda = C(Z)",
        conclusion=sp.Eq(image, Cz, evaluate=False),
    )


def _invariant_exp_derivation() -> Derivation:
    E = alg.MatExp(Cz)
    image = (Zm * E).T * Am * (Zm * E)
    conj = E.T * Cz * E
    return Derivation(
        assumptions=[r"A^T = -A,\ C = Z^TAZ \text{ (so } C^T = -C\text{, vp.skew\_weighting)}", r"\Lambda = \exp(C)"],
        facts=FACTS,
        steps=[
            Step(image, conj, r"(Z\Lambda)^T = \Lambda^TZ^T", identity(facts=())),
            Step(conj, Cz, r"\exp(X)^T=\exp(X^T); functional calculus: e^{-c}\,c\,e^{c}=c", _calculus()),
        ],
        remark=r"C(Z\exp(C(Z))) = \exp(C)^TC\exp(C) = C(Z)",
        conclusion=sp.Eq(image, Cz, evaluate=False),
    )


def invariant_identity(structure: str = "skew") -> MatrixIdentity:
    """``C(Z Cayley(C(Z))) - C(Z)`` with ``A`` skew (or ``"general"``, for negative controls)."""

    def residual(size, Z, A):
        y = Z * alg.cayley(Z.T * A * Z)
        return (y.T * A * y - Z.T * A * Z).applyfunc(sp.cancel)

    return MatrixIdentity(
        "C(Z Cayley(C(Z))) - C(Z)", variables=lambda s: skew_variables(s, structure), residual=residual,
        valid=lambda size, Z, A: (sp.eye(Z.cols) + Z.T * A * Z).det() != 0,
    )


# ---------------------------------------------------------------------------
# vp.map_inverse
# ---------------------------------------------------------------------------


def _times_calculus(z: MatrixSymbol, facts: tuple[str, ...]) -> Check:
    r"""A check of ``Z X = Z X'`` (``Z`` written first on both sides, ``X = I`` where a side is ``Z`` alone) with
    ``X = X'`` decided by functional calculus in ``C`` after the named facts (see :func:`_calculus`)."""

    def factor(expr):
        if expr == z:
            return It
        if isinstance(expr, MatMul) and expr.args[0] == z:
            return MatMul(*expr.args[1:]).doit()
        return None

    def decide(lhs, rhs, pairs):
        left, right = factor(_apply(lhs, pairs)), factor(_apply(rhs, pairs))
        if left is None or right is None:
            return False
        return alg.equal_in_algebra(left, right, Cs, -1)

    return Check(f"{z} times functional calculus in C", decide, facts)


def _inverse_derivation() -> Derivation:
    lam = cay(Cz)
    fz = Zm * lam  # F(Z)
    gf = fz * cay(fz.T * Am * fz).T  # G(F(Z))
    cy = Ym.T * Am * Ym
    lam_y = cay(cy)
    gy = Ym * lam_y.T  # G(Y)
    fg = gy * cay(gy.T * Am * gy)  # F(G(Y))
    facts = {**FACTS, "C = Y^TAY": {cy: Cs}}
    on_y = ("A skew", "C = Y^TAY")
    return Derivation(
        assumptions=[r"F(Z) = Z\Lambda(C(Z)),\ G(Y) = Y\Lambda(C(Y))^T,\ \Lambda = \mathrm{Cayley},"
                     r"\ C(Z) = Z^TAZ,\ A^T=-A"],
        facts=facts,
        subject=(fg, lam_y.T),
        steps=[
            Step(lam_y.T, cay(-cy), r"\mathrm{Cayley}(C)^T = \mathrm{Cayley}(-C) = \mathrm{Cayley}(Y^T(-A)Y)",
                 in_algebra(Cs, -1, facts=on_y)),
            Step(fg, Ym, r"F(G(Y)) = Y\Lambda^T\mathrm{Cayley}(\Lambda C\Lambda^T) = Y\Lambda^T\Lambda = Y "
                 "(functional calculus in C = Y^TAY)", _times_calculus(Ym, on_y)),
            Step(gf, Zm, r"G(F(Z)) = Z\Lambda\,\mathrm{Cayley}(\Lambda^TC\Lambda)^T = Z\Lambda\Lambda^T = Z "
                 "(functional calculus in C = Z^TAZ)", _times_calculus(Zm, ("A skew", "C = Z^TAZ"))),
        ],
        remark=r"G(F(Z)) = Z \text{ and } F(G(Y)) = Y \text{ (step 2)}: "
        r"F^{-1}(Y) = Y\,\mathrm{Cayley}(Y^TAY)^T = Y\,\mathrm{Cayley}(Y^T(-A)Y) \text{ (step 1)}",
        conclusion=sp.Eq(gf, Zm, evaluate=False),
    )


def inverse_identity(wrong_sign: bool = False) -> MatrixIdentity:
    """``[G(F(Z)) - Z; F(G(Y)) - Y; Cayley(C(Y))^T - Cayley(Y^T(-A)Y)]`` with ``G(Y) = Y Lambda(C(Y))^T``.

    With ``wrong_sign`` the candidate inverse is ``G(Y) = Y Lambda(C(Y))`` (false: a negative control).
    """

    def lam(W, A):
        return alg.cayley(W.T * A * W)

    def residual(size, Z, A, Y):
        def F(W):
            return W * lam(W, A)

        def G(W):
            return W * (lam(W, A) if wrong_sign else lam(W, A).T)

        blocks = [G(F(Z)) - Z, F(G(Y)) - Y, lam(Y, A).T - lam(Y, -A)]
        return sp.Matrix.vstack(*blocks).applyfunc(sp.cancel)

    name = "[G(F(Z)) - Z; F(G(Y)) - Y; Cayley(C(Y))^T - Cayley(Y^T(-A)Y)]"
    name += " with G(Y) = Y Lambda(C(Y))" if wrong_sign else ""
    return MatrixIdentity(name, residual=residual,
                          variables=lambda s: {**skew_variables(s), "Y": alg.general("y", s["d"], s["T"])})


def make_inverse_claim(wrong_sign: bool = False, claim_id: str = "vp.map_inverse") -> Claim:
    """The inverse of the layer map; ``wrong_sign=True`` is the false inverse ``Y -> Y Lambda(C(Y))`` (a control)."""
    inverse = "Y Cayley(Y^T A Y)" if wrong_sign else "Y Cayley(Y^T A Y)^T"
    tail = "." if wrong_sign else ", and Cayley(C)^T = Cayley(-C) is the same layer with A replaced by -A."
    return Claim(
        id=claim_id,
        title="inverse of the layer map" + (" (wrong sign)" if wrong_sign else ""),
        statement=f"The inverse of F(Z) = Z Cayley(Z^T A Z) is G(Y) = {inverse}{tail}",
        latex=r"F^{-1}(Y) = Y\Lambda(C(Y))" + ("" if wrong_sign else "^T"),
        source=SRC.at(SEC),
        expected=Level.REFUTED if wrong_sign else Level.PROVED,
        checker=Policy(
            identity=inverse_identity(wrong_sign),
            search=at_sizes(*SIZES[:3], *LOW_RANK[:1]),
            points=2,
            prove=None if wrong_sign else _inverse_derivation,
        ),
    )


# ---------------------------------------------------------------------------
# the layer map: vp.map_volume_preserving.{skew,arbitrary,frozen,exp_skew}
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
    """``det J - 1`` for the layer map (or its frozen-input linearisation); sizes may carry a ``rank``."""
    corr = correlation(weighting)

    def variables(s):
        return skew_variables(s, weighting)

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


def _certify_skew_map(ctx) -> Evidence:
    """The skew layer map certified at larger sizes (also when proved), two more points per depth."""
    cert = [{"d": 2, "T": 3}, {"d": 3, "T": 2}, {"d": 4, "T": 2}, {"d": 3, "T": 3}, {"d": 2, "T": 4}]
    return certify(map_identity("skew"), cert + ([{"d": 3, "T": 4}, {"d": 4, "T": 3}] if ctx.depth > 1 else []),
                   seed=ctx.seed_for("certify"), points=4 + 2 * (ctx.depth - 1), degree_bound=map_degree_bound,
                   method="exact Jacobian (dual numbers over QQ) at random integer points")


def _skew_map_divergence(ctx) -> Evidence:
    """The divergence lemma for ``m <= 4`` (``m <= 5`` above depth 1)."""
    return divergence_evidence(ctx, (1, 2, 3, 4) + ((5,) if ctx.depth > 1 else ()))


def _refutations_first(policy: Policy):
    """``policy``'s evidence, or only its refuting evidence when some (the certificate) refutes."""

    def check(ctx) -> list[Evidence]:
        evidence = policy(ctx)
        return [e for e in evidence if e.level is Level.REFUTED] or evidence

    return check


def make_map_claim(weighting: str, claim_id: str | None = None) -> Claim:
    """The claim that the layer map is volume-preserving.

    Parameters
    ----------
    weighting : str
        ``"skew"`` (``C = Z^T A Z``, ``A`` skew: proved) or ``"arbitrary"``
        (``C = skew_from_lower(Z^T A Z)``: refuted).
    claim_id : str, optional
        defaults to ``vp.map_volume_preserving.<weighting>``.
    """
    true = weighting == "skew"
    what = "Z^T A Z, A skew" if true else "skew_from_lower(Z^T A Z), A arbitrary"
    return Claim(
        id=claim_id or f"vp.map_volume_preserving.{weighting}",
        title=f"layer map volume-preserving ({weighting} weighting)",
        statement=f"The layer map Z -> Z Cayley(C(Z)) with C(Z) = {what} is volume-preserving "
        "(Jacobian determinant 1)" + (", for every d and T." if true else "."),
        latex=r"\det\frac{\partial\,\mathrm{vec}_r(Z\,\mathrm{Cayley}(C(Z)))}{\partial\,\mathrm{vec}_r(Z)} = 1",
        source=SRC.at(f"{SEC} and 'How is Structure Preserved?'"),
        expected=Level.CHECKED if true else Level.REFUTED,
        checker=_refutations_first(Policy(
            identity=map_identity(weighting),
            search=at_sizes(
                *sizes(d=[1, 2], T=[2, 3]), *([{"d": 3, "T": 1}, {"d": 3, "T": 2}, *LOW_RANK] if true else [])
            ),
            points=2,
            exact=at_sizes({"d": 1, "T": 2}, {"d": 2, "T": 1}, {"d": 3, "T": 1}, {"d": 2, "T": 2}),
            exact_method="exact symbolic identity det J = 1 (inverse-free polynomial form over QQ[Z, A])",
            always_exact=True,
            extra=(_certify_skew_map, _skew_map_divergence) if true else (),
        )),
        notes="Expected checked, not proved: the flow argument of Note [map versus frozen matrix] "
        "(volume_flow_derivation) needs the divergence formula for Z -> Z C^m at general d, T, m, which SymPy does "
        "not verify generically and which is no published theorem that could be cited as a lemma; the engine does "
        "not accept a derivation resting on it, so the verdict is the exact det J = 1 at explicit sizes, with the "
        "certificate at larger sizes and the divergence formula checked exactly at d, T in {2, 3}, m <= 4."
        if true
        else "C(Z Lambda) != C(Z) here, and the Jacobian picks up a term from dLambda/dZ.",
    )


_ARBITRARY = make_map_claim("arbitrary")

#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    Claim(
        id="vp.map_invariant",
        title="the layer map keeps C(Z) = Z^T A Z",
        statement="For skew A and Lambda = Cayley(C(Z)), C(Z Lambda) = C(Z): the layer map keeps the correlation "
        "matrix.",
        latex=r"C(Z\Lambda(Z)) = \Lambda^T Z^TAZ\Lambda = Z^TAZ,\quad \Lambda(Z) = \mathrm{Cayley}(Z^TAZ)",
        source=SRC.at(SEC),
        expected=Level.PROVED,
        checker=Policy(
            identity=invariant_identity(), search=at_sizes(*SIZES[:3], *LOW_RANK), points=2, prove=_invariant_derivation
        ),
    ),
    Claim(
        id="vp.map_invariant.exp",
        title="the exponential layer map keeps C(Z)",
        statement="For skew A and Lambda = exp(C(Z)), C(Z Lambda) = C(Z).",
        latex=r"C(Z\exp(Z^TAZ)) = Z^TAZ",
        source=SRC.at(f"{SEC} (exponential form)"),
        expected=Level.PROVED,
        checker=Policy(prove=_invariant_exp_derivation, extra=(lambda ctx: circle_evidence(ctx, "invariant"),)),
        notes="exp of a nonzero rational matrix is transcendental, so there are no exact random points; the exact "
        "check "
        "is at T = 2 (Note [exact points for exp at T = 2]).",
    ),
    make_inverse_claim(),
    make_map_claim("skew"),
    _ARBITRARY,
    corrected(_ARBITRARY, Claim(
        id="vp.map_volume_preserving.frozen",
        title="frozen-input map volume-preserving",
        statement="For each fixed input Z0, the linear map Z -> Z Cayley(C(Z0)) is volume-preserving, for either "
        "weighting.",
        latex=r"\det(\mathbb{I}_d\otimes\Lambda(Z_0)^T) = 1",
        expected=Level.PROVED,
        checker=Policy(
            identity=map_identity("arbitrary", frozen=True),
            search=grid(d=[1, 2, 3], T=[2, 3]),
            prove=frozen_map_derivation,
        ),
    )),
    Claim(
        id="vp.map_volume_preserving.exp_skew",
        title="exponential layer map volume-preserving (skew weighting)",
        statement="The map Z -> Z exp(Z^T A Z) with A skew is volume-preserving (Jacobian determinant 1), for every d "
        "and T.",
        latex=r"\det\frac{\partial\,\mathrm{vec}_r(Z\exp(Z^TAZ))}{\partial\,\mathrm{vec}_r(Z)} = 1",
        source=SRC.at(f"{SEC} (exponential form)"),
        expected=Level.CHECKED,
        checker=Policy(
            extra=(lambda ctx: divergence_evidence(ctx, (1, 2)), lambda ctx: circle_evidence(ctx, "det")),
        ),
        notes="Expected checked, not proved: the flow argument (exp_flow_derivation) rests on the divergence "
        "formula for Z -> Z C^m, which SymPy does not verify for general d, T, m and which is no published theorem "
        "to cite, so the engine does not accept it (the linear ODE and Liouville's theorem are registered lemmas). "
        "The divergence formula is not verified by SymPy for general d, T, m: "
        "it is checked exactly only at explicit sizes, m = 1, 2 and d, T in {2, 3} (div(Z -> ZC) = 0 itself at "
        "m = 1); det J = 1 itself is checked exactly only at T = 2, where exp(C) is a rotation (Note [exact points "
        "for exp at T = 2]). No floating-point evaluation is used as evidence.",
    ),
]
