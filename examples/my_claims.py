r"""
Claims of one's own
===================

Four claims stated with geoattn's public engine and checked by ``geoattn prove --claims
examples/my_claims.py`` (the same table, JSON and exit codes as the ledger):

* ``mine.cayley_symmetric`` (true): :math:`\mathrm{Cayley}(S)` is symmetric when :math:`S` is, proved
  by a two-step derivation that the engine checks from its displayed sides;
* ``mine.vp_symmetric`` (false): the layer map :math:`Z \mapsto Z\,\mathrm{Cayley}(Z^TAZ)` with a
  *symmetric* :math:`A` is volume-preserving; refuted by an exact rational counterexample;
* ``mine.vp_symmetric.exp`` (false): the same with :math:`\exp` in place of the Cayley transform,
  refuted by an exact counterexample whose residual involves the transcendental :math:`e^{q}` of a
  rational :math:`q` (exact dual numbers through :func:`geoattn.symbolic.algebra.expm`);
* ``mine.det_exp`` (true): :math:`\det\exp(S) = 1` for skew :math:`S`, a derivation that cites
  Jacobi's formula from the lemma registry and checks the rest.

The docs guide "Write your own claim" walks through each of them.
"""

import sympy as sp
from sympy.matrices.expressions import Determinant, Identity, Inverse, MatrixSymbol, Trace, ZeroMatrix

from geoattn.symbolic import (
    Claim,
    Derivation,
    Level,
    MatrixIdentity,
    Policy,
    Step,
    algebra,
    at_sizes,
    identity,
    in_algebra,
    relation,
)

n = sp.Symbol("n", integer=True, positive=True)
SOURCE = "examples/my_claims.py (docs guide 'Write your own claim')"

# %%
# A true claim, proved: Cayley(S)^T = Cayley(S) for symmetric S
# ---------------------------------------------------------------
# The derivation starts from the claim's left side and ends at its right side. The first step is
# checked by SymPy's transpose rules; the second by the functional calculus in S with S^T = S (both
# sides are rational functions of the one matrix S, which commute). The engine also mutates each
# displayed right side (a fresh symbol added, a factor 2, a transpose) and requires the check to
# reject every mutant.

S = MatrixSymbol("S", n, n)
I = Identity(n)
CAY = (I - S) * Inverse(I + S)


def cayley_symmetric_derivation() -> Derivation:
    """Cayley(S)^T - Cayley(S) = 0 for symmetric S, in two checked steps."""
    transposed = Inverse(I + S.T) * (I - S.T)
    return Derivation(
        assumptions=[r"S^T = S", r"I + S\ \text{invertible}"],
        steps=[
            Step(CAY.T - CAY, transposed - CAY, "(XY)^T = Y^T X^T, (X^{-1})^T = (X^T)^{-1}", identity()),
            Step(transposed - CAY, ZeroMatrix(n, n), "functional calculus in S with S^T = S", in_algebra(S, 1)),
        ],
        conclusion=sp.Eq(CAY.T - CAY, ZeroMatrix(n, n), evaluate=False),
    )


def cayley_symmetric_identity() -> MatrixIdentity:
    """Cayley(S)^T - Cayley(S) at explicit symmetric matrices (the search stage's residual)."""
    return MatrixIdentity(
        "Cayley(S)^T - Cayley(S)",
        variables=lambda size: {"S": algebra.symmetric("s", size["n"])},
        residual=lambda size, S: (algebra.cayley(S).T - algebra.cayley(S)).applyfunc(sp.cancel),
        valid=lambda size, S: (sp.eye(size["n"]) + S).det() != 0,
    )


# %%
# A false claim, refuted: the volume-preserving layer with a symmetric weighting
# -------------------------------------------------------------------------------
# The residual is det J - 1, where J is the exact Jacobian of the map in row-stacked coordinates
# (:func:`geoattn.symbolic.algebra.jacobian_rows`, dual numbers over the rationals). A nonzero
# value at one rational point is an exact counterexample; the seed reproduces it.


def layer_identity(activation: str) -> MatrixIdentity:
    """det J - 1 of Z -> Z sigma(Z^T A Z) with A symmetric, sigma the Cayley transform or exp."""
    sigma = algebra.cayley if activation == "cayley" else algebra.expm

    def residual(size, Z, A):
        jac = algebra.jacobian_rows(lambda W: W * sigma(W.T * A * W), Z)
        return sp.simplify(jac.det() - 1)

    return MatrixIdentity(
        "det J(Z) - 1",
        variables=lambda size: {"Z": algebra.general("z", size["d"], size["T"]),
                                "A": algebra.symmetric("a", size["d"])},
        residual=residual,
        valid=lambda size, Z, A: (sp.eye(size["T"]) + Z.T * A * Z).det() != 0,
    )


# %%
# A derivation that cites a lemma: det exp(S) = 1 for skew S
# -----------------------------------------------------------
# Step 1 rests on Jacobi's formula det exp(S) = e^{tr S}, a registered lemma (``jacobi_formula``,
# with its reference); it is counted as a lemma, not as verified. The other steps are checked from
# their sides: tr S = tr S^T, tr S^T = -tr S under S^T = -S, hence tr S = 0 and e^{tr S} = 1.

K = MatrixSymbol("K", n, n)


def _skew_in_trace(lhs, rhs) -> bool:
    """lhs = rhs after K^T -> -K inside the trace."""
    return sp.simplify((lhs.xreplace({K.T: -K}).doit() - rhs).doit()) == 0


def _half_of_sum(lhs, rhs) -> bool:
    """tr K + tr K^T (with K^T -> -K) equals twice the rhs: x = -x gives x = 0."""
    return sp.simplify((lhs + Trace(K.T)).xreplace({K.T: -K}).doit() - 2 * rhs) == 0


def det_exp_derivation() -> Derivation:
    """det exp(K) = 1 for skew K: Jacobi's formula (a lemma), then tr K = 0 (checked)."""
    det = Determinant(algebra.MatExp(K))
    tr = Trace(K)
    return Derivation(
        assumptions=[r"K^T = -K"],
        steps=[
            Step(det, sp.exp(tr), r"Jacobi's formula $\det\exp(K) = e^{\mathrm{tr}\,K}$", lemma="jacobi_formula"),
            Step(tr, Trace(K.T), "a matrix and its transpose have one trace", identity()),
            Step(Trace(K.T), -tr, "K^T = -K", relation(_skew_in_trace, "K^T = -K inside the trace")),
            Step(tr, sp.Integer(0), "tr K = -tr K", relation(_half_of_sum, "x = -x gives x = 0")),
            Step(sp.exp(tr), sp.Integer(1), "tr K = 0 (step 4)", identity((tr, sp.Integer(0)))),
        ],
        conclusion=sp.Eq(det, 1, evaluate=False),
    )


def det_exp_identity() -> MatrixIdentity:
    """det exp(K) - 1 at explicit 2 x 2 skew matrices (exp in closed form: a rotation)."""
    return MatrixIdentity(
        "det exp(K) - 1",
        variables=lambda size: {"K": algebra.skew("k", size["n"])},
        residual=lambda size, K: sp.simplify(algebra.expm(K).det() - 1),
    )


CLAIMS = [
    Claim(
        id="mine.cayley_symmetric",
        title="Cayley of a symmetric matrix is symmetric",
        statement="For symmetric S with I + S invertible, Cayley(S) = (I - S)(I + S)^{-1} is symmetric.",
        latex=r"\mathrm{Cayley}(S)^T - \mathrm{Cayley}(S) = 0,\quad S^T = S",
        source=SOURCE,
        expected=Level.PROVED,
        checker=Policy(identity=cayley_symmetric_identity(), search=at_sizes({"n": 2}, {"n": 3}), points=2,
                       prove=cayley_symmetric_derivation),
    ),
    Claim(
        id="mine.vp_symmetric",
        title="volume-preserving layer with a symmetric weighting",
        statement="The map Z -> Z Cayley(Z^T A Z) with A symmetric is volume-preserving (Jacobian determinant 1).",
        latex=r"\det\frac{\partial\,\mathrm{vec}_r(Z\,\mathrm{Cayley}(Z^TAZ))}{\partial\,\mathrm{vec}_r(Z)} = 1,"
        r"\quad A^T = A",
        source=SOURCE,
        expected=Level.REFUTED,
        checker=Policy(identity=layer_identity("cayley"), search=at_sizes({"d": 1, "T": 2}, {"d": 2, "T": 2}),
                       points=2),
        notes="For skew A the same map is volume-preserving (vp.map_volume_preserving.skew); symmetry is not enough.",
    ),
    Claim(
        id="mine.vp_symmetric.exp",
        title="exponential layer with a symmetric weighting",
        statement="The map Z -> Z exp(Z^T A Z) with A symmetric is volume-preserving (Jacobian determinant 1).",
        latex=r"\det\frac{\partial\,\mathrm{vec}_r(Z\exp(Z^TAZ))}{\partial\,\mathrm{vec}_r(Z)} = 1,\quad A^T = A",
        source=SOURCE,
        expected=Level.REFUTED,
        checker=Policy(identity=layer_identity("exp"), search=at_sizes({"d": 1, "T": 2}), points=2),
        notes="At d = 1 the matrix Z^T A Z has the rational eigenvalues 0 and a|z|^2, so exp(Z^T A Z) and its "
        "derivative are exact in Q(e^{a|z|^2}).",
    ),
    Claim(
        id="mine.det_exp",
        title="det exp(K) = 1 for skew K",
        statement="For every skew-symmetric K, det exp(K) = 1.",
        latex=r"\det\exp(K) = 1,\quad K^T = -K",
        source=SOURCE,
        expected=Level.PROVED,
        checker=Policy(identity=det_exp_identity(), search=at_sizes({"n": 2}), points=2, prove=det_exp_derivation),
    ),
]
