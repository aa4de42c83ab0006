r"""The claims behind the printed backward of ``exp_skew`` for ``T <= 4`` (kernel ``exp_skew_small_vjp``, Note [the
half-turn VJP] in :mod:`geoattn.symbolic.native_table`).

* ``exp_skew.hodge_vjp``: the kernel's bindings, with ``q`` its direct form :math:`(\cos t - \mathrm{sinc}\,t)/t^2`,
  equal the gradient in ``S`` of :math:`\langle G, E(S)\rangle` for the forward kernel's ``E`` (the bindings of
  ``exp_skew.hodge_form`` applied to the skew part of ``S``). The reference differentiates the forward bindings
  (exact derivatives along each of the 16 unit directions, SymPy's ``diff`` of one symbol) and shares no formula
  with the backward. Points: ``S = Q diag((u+v)J, (u-v)J) Q^T + P`` (every skew matrix is of this form, ``Q`` a
  rational rotation, Cayley of a skew ``q``; ``P`` symmetric, which the gradient must ignore); the angles of the two
  halves are then ``u`` and ``v``.
* ``exp_skew.hodge_vjp_series``: on :math:`0 \le w = t^2 < 1/4` the kernel's series of ``q`` (``Q_TERMS`` terms)
  is within the unit roundoff of float64, relative to ``|q|``: the series alternates with terms decreasing in
  magnitude there, so the first omitted term bounds the error, and :math:`|q| \ge 1/3 - w/30`.
"""

from __future__ import annotations

import random

import sympy as sp

from .. import algebra as alg
from ..claim import Claim, Level
from ..evidence import Derivation, Step
from ..lemmas import LEMMAS, register
from ..native_table import EXP_SKEW_SMALL_FWD, Q_SWITCH, Q_TERMS, exp_so4_vjp_bindings
from ..proof import identity
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes, run_bindings

__all__ = ["CLAIMS", "vjp_identity", "make_vjp_claim", "series_bound", "make_series_claim"]

_S = sp.MatrixSymbol("S", 4, 4)
_G = sp.MatrixSymbol("G", 4, 4)
_J = sp.Matrix([[0, 1], [-1, 0]])
#: unit roundoff of float64, the dtype the kernel computes in
_U64 = sp.Rational(1, 2**53)

if "alternating_series_remainder" not in LEMMAS:
    register("alternating_series_remainder", r"for a series \sum_n (-1)^n a_n with a_n \ge a_{n+1} \ge 0 the "
             r"remainder after N terms is at most a_{N+1} in magnitude (Leibniz)", "any analysis text")


def _direct(bindings):
    """``bindings`` with every Piecewise replaced by its last branch (the direct form of ``q``)."""
    return [(n, sp.sympify(e).replace(sp.Piecewise, lambda *a: a[-1][0])) for n, e in bindings]


def _unsinc(e):
    return sp.expand(e.replace(sp.sinc, lambda z: sp.sin(z) / z))


def _point(q, w, P, angles: bool = False):
    """``S = Q diag((u+v)J, (u-v)J) Q^T + P`` with ``Q = Cayley(q)`` and the angles ``u, v = w`` (positive symbols,
    ``angles``) or ``u = w0^2 + 1``, ``v = w1^2 + 1/2`` (positive at every rational point: the direct ``q`` is
    undefined at 0)."""
    u, v = (w[0], w[1]) if angles else (w[0] ** 2 + 1, w[1] ** 2 + sp.Rational(1, 2))
    Q = alg.cayley(q)
    return (Q * sp.diag((u + v) * _J, (u - v) * _J) * Q.T).applyfunc(sp.expand) + P


def _reference(S0, G) -> sp.Matrix:
    """The gradient of ``<G, E(S)>`` at ``S0``, ``E`` the forward kernel's bindings: exact derivatives along the 16
    unit directions."""
    eps = sp.Symbol("eps")

    def slope(i, j):
        D = sp.Matrix(4, 4, lambda r, c: eps if (r, c) == (i, j) else 0)
        E = run_bindings(EXP_SKEW_SMALL_FWD, {_S: S0 + D}, {})["E"]
        loss = sum((G[r, c] * E[r, c] for r in range(4) for c in range(4)), sp.Integer(0))
        return sp.diff(loss, eps).subs(eps, 0)

    return sp.Matrix(4, 4, slope)


def _fixed(seed: int = 7) -> dict:
    """Rational ``q``, ``P`` and ``G`` for the exact stage (the angles stay symbols there)."""
    rng = random.Random(seed)

    def r():
        return sp.Rational(rng.randint(-9, 9), rng.randint(1, 5))

    q, P = sp.zeros(4, 4), sp.zeros(4, 4)
    for i in range(4):
        for j in range(i, 4):
            P[i, j] = P[j, i] = r()
            if j > i:
                q[i, j] = r()
                q[j, i] = -q[i, j]
    return {"q": q, "P": P, "G": sp.Matrix(4, 4, lambda i, j: r())}


def vjp_identity(bindings=None) -> MatrixIdentity:
    """The kernel's ``gS`` (direct ``q``) minus the reference gradient; ``bindings`` replaces the kernel's (negative
    controls). At the size ``{"T": 4, "angles": 1}`` only the angles are symbols (``q``, ``P``, ``G`` rational)."""
    bindings = _direct(exp_so4_vjp_bindings() if bindings is None else bindings)

    def variables(size):
        if size.get("angles"):
            return {"w": sp.Matrix(2, 1, sp.symbols("u v", positive=True)), **_fixed()}
        return {"w": alg.general("w", 2, 1), "q": alg.skew("q", 4), "P": alg.symmetric("p", 4),
                "G": alg.general("g", 4, 4)}

    def residual(size, w, q, P, G):
        S0 = _point(q, w, P, bool(size.get("angles")))
        got = run_bindings(bindings, {_S: S0, _G: G}, {}, post=sp.expand)["gS"]
        return (got - _reference(S0, G)).applyfunc(_unsinc)

    return MatrixIdentity("gS(S, G) - grad_S <G, E(S)>, S = Q diag((u+v)J, (u-v)J) Q^T + P", variables=variables,
                          residual=residual)


def make_vjp_claim(bindings=None, claim_id: str = "exp_skew.hodge_vjp", expected: Level = Level.CHECKED) -> Claim:
    """The VJP claim; ``bindings`` replaces the kernel's (negative controls, with ``expected`` refuted)."""
    return Claim(
        id=claim_id,
        title="the closed-form VJP of exp of a 4 x 4 skew matrix",
        statement="For 4 x 4 S, K = (S - S^T)/2, K+- = (K +- *K)/2 with half-turns E+- = cos t+- I + sinc t+- K+- "
        "(t+-^2 = -Tr(K+-^2)/4) and incoming gradient G: with Gb+ = G E-^T, Gb- = E+^T G, per half "
        "Xb = sinc t Gb + (sinc t Tr(Gb)/4 - q(t) <Gb, X>/4) X^T, q(t) = (cos t - sinc t)/t^2, "
        "Kb = (Xb+ + Xb-)/2 + *(Xb+ - Xb-)/2 and gS = (Kb - Kb^T)/2 is the gradient of <G, E+ E-> in S.",
        latex=r"\bar X_\pm = \mathrm{sinc}\,t_\pm\bar G_\pm + \big(\tfrac14\mathrm{sinc}\,t_\pm\mathrm{Tr}\,\bar G_\pm"
        r" - \tfrac14q(t_\pm)\langle\bar G_\pm, K_\pm\rangle\big)K_\pm^T,\ \bar K = \tfrac12(\bar X_+ + \bar X_-)"
        r" + \star\tfrac12(\bar X_+ - \bar X_-),\ \bar S = \tfrac12(\bar K - \bar K^T)",
        source="kernel exp_skew_small_vjp (Note [the half-turn VJP] in geoattn.symbolic.native_table)",
        expected=expected,
        checker=Policy(
            identity=vjp_identity(bindings),
            search=at_sizes({"T": 4}),
            points=1,
            exact=at_sizes({"T": 4, "angles": 1}),
            exact_method="exact symbolic identity in the two angles (every u > 0, v > 0: cosines and sines kept "
            "symbolic) at a fixed rational rotation Q, symmetric part P and incoming gradient G; exact rational "
            "search over Q, P, G and the angles",
        ),
        notes="The gradient is the skew projection: the forward reads S through its skew part only. The kernel "
        "replaces the direct q by its series below t = 1/2 (exp_skew.hodge_vjp_series); this claim checks the "
        "direct form. The Hodge star is SO(4)-equivariant, so one rotation Q stands for all in the exact stage; "
        "that step is not mechanised.",
    )


def series_bound(terms: int = Q_TERMS, switch=Q_SWITCH):
    """The first omitted term of ``q``'s series at ``w = switch`` relative to the lower bound ``1/3 - switch/30`` of
    ``|q|`` there (exact rational)."""
    n = terms + 1
    return sp.Integer(2 * n) / sp.factorial(2 * n + 1) * switch ** (n - 1) / (sp.Rational(1, 3) - switch / 30)


def _series_derivation(terms: int, switch) -> Derivation:
    err = sp.Symbol(rf"|q(w) - q_{{{terms}}}(w)|/|q(w)|")
    tail = sp.Symbol(rf"a_{{{terms + 1}}}(w)/(1/3 - w/30)")
    value = series_bound(terms, switch)
    ratios = sp.Add(*[sp.sign(1 - switch / (2 * n * (2 * n + 3)), evaluate=False) for n in range(1, terms + 2)],
                    evaluate=False)
    sign = sp.sign(sp.Add(_U64, -value, evaluate=False), evaluate=False)
    return Derivation(
        assumptions=[rf"0 \le w < {sp.latex(switch)},\ q(w) = \sum_{{n\ge1}}(-1)^n a_n(w),\ "
                     r"a_n(w) = \frac{2n}{(2n+1)!}w^{n-1}"],
        subject=(err, ratios),
        steps=[
            Step(ratios, terms + 1, r"a_{n+1}/a_n = w/(2n(2n+3)) < 1 on the interval: exact rational comparisons "
                 r"at its end (\mathrm{sign}(1 - w/(2n(2n+3))) = 1)", identity()),
            Step(err, tail, r"alternating series with decreasing terms (step 1); |q(w)| \ge 1/3 - w/30 by the "
                 r"same bound after one term", lemma="alternating_series_remainder", relation="<="),
            Step(tail, value, r"a_{N+1}(w) increases with w: its value at the end of the interval",
                 lemma="alternating_series_remainder", relation="<="),
            Step(sign, 1, r"exact rational comparison with u = 2^{-53} (\mathrm{sign}(u - \text{bound}) = 1)",
                 identity()),
        ],
        remark=rf"\text{{the {terms}-term series of }}q\text{{ below }}w = {sp.latex(switch)}\text{{: relative "
        r"truncation error below the unit roundoff of float64}",
        conclusion=sp.Eq(sign, 1, evaluate=False),
    )


def make_series_claim(terms: int = Q_TERMS, claim_id: str = "exp_skew.hodge_vjp_series", switch=Q_SWITCH) -> Claim:
    """The series claim; fewer ``terms`` or a larger ``switch`` are negative controls (the proof then fails)."""
    return Claim(
        id=claim_id,
        title="the series branch of the closed-form exp VJP",
        statement=f"For 0 <= w < {switch}, q(w) = (cos t - sinc t)/w (t^2 = w) and its series cut after {terms} "
        "terms, sum_{n<=N} (-1)^n 2n/(2n+1)! w^(n-1), differ by less than 2^-53 |q(w)|.",
        latex=rf"0 \le w < {sp.latex(switch)}:\ \Big|q(w) - \sum_{{n=1}}^{{{terms}}}\frac{{(-1)^n2n}}{{(2n+1)!}}"
        r"w^{n-1}\Big| < 2^{-53}|q(w)|",
        source="kernel exp_skew_small_vjp (Note [the half-turn VJP] in geoattn.symbolic.native_table)",
        expected=Level.PROVED,
        checker=Policy(prove=lambda: _series_derivation(terms, switch)),
    )


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [make_vjp_claim(), make_series_claim()]
