r"""The registry of stated lemmas: standard results a derivation may cite without SymPy checking them.

A step that rests on one names it (``Step(lhs, rhs, rule, lemma="liouville")``); every verdict records
which lemmas its derivation used, and the tables show ``n steps: k verified, m lemmas (names)``.
A step may also cite a claim of the ledger by id with ``lemma="ledger:<id>"``: its own verdict backs it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Lemma", "LEMMAS", "register", "is_known"]


@dataclass(frozen=True)
class Lemma:
    """A stated lemma: its name, statement and a reference a reader can open."""

    name: str
    statement: str
    reference: str


#: name -> :class:`Lemma`: every lemma a derivation may cite (``Step(..., lemma=name)``)
LEMMAS: dict[str, Lemma] = {}


def register(name: str, statement: str, reference: str) -> Lemma:
    """Add a lemma to the registry (a name may be registered once)."""
    if name in LEMMAS:
        raise ValueError(f"Expected a new lemma name. Got {name!r}, already registered.")
    if not statement or not reference:
        raise ValueError(f"Expected a statement and a reference for {name!r}. Got {statement!r} and {reference!r}.")
    LEMMAS[name] = Lemma(name, statement, reference)
    return LEMMAS[name]


def is_known(name: str) -> bool:
    """Whether ``name`` is a registered lemma or ``ledger:<id>`` of a claim in the ledger."""
    if name in LEMMAS:
        return True
    if name.startswith("ledger:"):
        return _LEDGER_IDS is not None and name[len("ledger:"):] in _LEDGER_IDS()
    return False


#: the ledger's claim ids, set by :mod:`geoattn.symbolic.ledger` when it is imported (importing
#: ``geoattn.symbolic`` imports it): the registry does not import the ledger, whose claims import the registry
_LEDGER_IDS = None


def use_ledger(ids) -> None:
    """Let ``ledger:<id>`` citations resolve against ``ids()``, the ledger's claim ids."""
    global _LEDGER_IDS
    _LEDGER_IDS = ids


_HJ = "Horn and Johnson, Matrix Analysis, 2nd ed. (Cambridge, 2013)"
_HIGHAM = "Higham, Functions of Matrices (SIAM, 2008)"
_ARNOLD = "Arnold, Mathematical Methods of Classical Mechanics, 2nd ed. (Springer, 1989)"

register("definition", "a quantity equals what its definition says (the rule names the definition)",
         "the claim's source")
register("hypothesis", "a hypothesis of the claim, applied as stated in its assumptions", "the claim's statement")
register("sum_of_squares_real", r"x^T x = \sum_i x_i^2 = 0 implies x = 0 for real x", _HJ + ", 5.1")
register("determinant_multiplicative", r"\det(XY) = \det X \det Y,\ \det X^T = \det X,\ \det \mathbb{I} = 1", 
         _HJ + ", 0.3")
register("determinant_equal_columns", "a determinant with two equal columns vanishes", _HJ + ", 0.3")
register("product_rule", "the derivative of a product of differentiable matrix functions is the sum over factors",
         "any calculus text; " + _HIGHAM + ", 3.2")
register("chain_rule", "the derivative of a composition is the composition of the derivatives", _HIGHAM + ", 3.2")
register("kronecker_entries", r"[A\otimes B]_{(a-1)q+b,(c-1)r+e} = A_{ac}B_{be}", 
         "Horn and Johnson, Topics in Matrix Analysis (Cambridge, 1991), 4.2")
register("power_series_calculus", "convergent matrix power series may be multiplied, differentiated and rearranged "
         "termwise inside the radius of convergence; f(X) for commuting arguments obeys scalar identities",
         _HIGHAM + ", 1 and 4.7")
register("exp_commuting", r"\exp(X + Y) = \exp X \exp Y when XY = YX", _HIGHAM + ", Theorem 10.2")
register("jacobi_formula", r"\det\exp(S) = e^{\mathrm{tr}\,S}", _HIGHAM + ", Theorem 1.43")
register("exp_frechet_integral", r"L_{\exp}(X, E) = \int_0^1 e^{sX}Ee^{(1-s)X}\,ds and its adjoint "
         r"under the trace inner product is L_{\exp}(X^T, \cdot)", _HIGHAM + ", 10.2 (10.15)")
register("eigendecomposition_normal", r"a normal matrix is unitarily diagonalisable, e^{tS} = Ue^{tD}U^H",
         _HJ + ", 2.5")
register("ode_uniqueness", "a linear ODE with a constant coefficient has the unique solution Z(t) = Z_0 e^{tK}",
         "Arnold, Ordinary Differential Equations (MIT Press, 1973), 3.1")
register("liouville", r"the flow of a divergence-free vector field preserves volume: "
         r"\tfrac{d}{dt}\det D\Phi_t = (\operatorname{div}V)\det D\Phi_t", _ARNOLD + ", 16")
register("identity_theorem_polynomials", "a polynomial that vanishes on a nonempty open set is zero",
         "Lang, Algebra, 3rd ed. (Springer, 2002), IV.1")
register("hessian_symmetric", "the Hessian of a twice continuously differentiable function is symmetric (Schwarz)",
         "Rudin, Principles of Mathematical Analysis, 3rd ed. (McGraw-Hill, 1976), Theorem 9.41")
register("entrywise_symmetric", "an entrywise function of a symmetric matrix, divided by any scalar, is symmetric",
         "definition of the entrywise function")
register("adjugate_jacobian", r"F = N/\delta with a polynomial numerator N and a nonzero polynomial denominator "
         r"\delta has a Jacobian determinant that is a rational function; polynomial identities transfer",
         _HJ + ", 0.8")
register("taylor_remainder_bound", r"for \|X\|\le\theta the tail of the exponential series is bounded by the "
         r"first omitted term times 1/(1 - \theta/(m+2)); Frechet derivatives of X^j have j terms",
         _HIGHAM + ", 10.3 and 4.3")
register("induction", "a statement that holds at 0 and is preserved by one step holds at every step",
         "any algebra text")
register("softmax_derivative", r"\partial\,\mathrm{softmax}(c)/\partial c = \mathrm{diag}(s) - ss^T",
         "Goodfellow, Bengio and Courville, Deep Learning (MIT Press, 2016), 6.2.2.3")
register("matrix_calculus", "the gradient of a trace of a matrix polynomial follows from the product rule",
         "Petersen and Pedersen, The Matrix Cookbook (2012), 2.5")
register("flow_time_one", "a map that is the time-1 flow of a vector field on an invariant set equals the flow there",
         _ARNOLD + ", 16")
