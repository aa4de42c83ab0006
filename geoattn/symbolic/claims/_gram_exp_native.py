r"""The claims of the native exponential Gram kernels (:mod:`geoattn.codegen.gram_exp_c`).

* ``vp.gram_exp_native_truncation`` (proved): for :math:`\|X\| \le \theta = 49/64` in a submultiplicative norm
  (the kernel takes the smaller of the 1-norm and the Frobenius norm, both submultiplicative), the Taylor
  polynomial of degree :math:`m = 16` satisfies :math:`\|e^X - p_m(X)\|/\|e^X\| \le \|e^X - p_m(X)\|\,
  \|e^{-X}\|/\|I\| \le 3\,\theta^{m+1}/(m+1)!\,/(1 - \theta/(m+2)) < 2^{-53}` (:math:`\|e^{-X}\| \le \|I\| - 1 +
  e^\theta` and :math:`\|I\| \ge 1`, so the Frobenius norm's :math:`\|I\| = \sqrt d` costs nothing): the
  truncation relative to the result is below float64's unit roundoff. Degree
  15 at that :math:`\theta`, and :math:`\theta = 50/64` at degree 16, fail the comparison (the negative controls).
* ``vp.gram_exp_native_reverse`` (checked): the adjoint rules the backward template applies, each the identity
  :math:`\langle\bar Z, dZ\rangle = \sum\langle\bar W, dW\rangle` of one step ``Z = f(W...)``: a squaring
  :math:`Y = X^2` (:math:`\bar X = \bar YX^T + X^T\bar Y`), a product step of the powers and of the Horner scheme
  :math:`S' = SP + B` (:math:`\bar S = \bar S'P^T`, :math:`\bar P = S^T\bar S'`, :math:`\bar B = \bar S'`), the
  coefficients' linear step :math:`B = \sum_i c_iX^i`, the scaling :math:`X = cM` and :math:`M = -AG` (``A``
  skew, ``G`` symmetric: :math:`\bar G = A\bar M`, :math:`\bar A = -\bar MG`), as exact symbolic identities with
  every entry a symbol at ``d = 1, 2, 3``. What is not checked here is their composition in the C template's order:
  the tests compare the compiled backward with the float64 ``T x T`` form and run ``gradcheck`` on it. The
  negative control drops the transpose of the squaring's adjoint (:math:`\bar YX + X^T\bar Y`) and is refuted by an
  exact rational counterexample.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..claim import Claim, Level
from ..evidence import Derivation, Step
from ..lemmas import LEMMAS, register
from ..proof import identity
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes, grid

__all__ = ["THETA", "DEGREE", "relative_tail_bound", "make_truncation_claim", "reverse_rules_identity",
           "make_reverse_claim", "square_adjoint", "untransposed_square_adjoint"]

#: the scaled matrix's norm bound and the Taylor degree of the kernels (geoattn.codegen.gram_exp_c: a test keeps
#: them equal)
THETA, DEGREE = sp.Rational(49, 64), 16
UNIT_ROUNDOFF = sp.Rational(1, 2**53)

if "exp_series_norm_bound" not in LEMMAS:
    register("exp_series_norm_bound", r"\|e^{-X}\| \le \|I\| - 1 + e^{\|X\|} and \|I\| \le \|e^X\|\,\|e^{-X}\| for a "
             r"submultiplicative norm (the series term by term; \|I\| = 1 for the 1-norm, \sqrt d for Frobenius)",
             "the triangle inequality on the exponential series, and I = e^X e^{-X}")


def relative_tail_bound(theta, m: int) -> sp.Rational:
    r""":math:`3\,\theta^{m+1}/(m+1)!\,/(1 - \theta/(m+2))`, exact: a bound of :math:`\|e^X - p_m(X)\|/\|e^X\|`
    for :math:`\|X\| \le \theta \le 1` (:math:`e^\theta < 3`).

    Parameters
    ----------
    theta : rational, ``0 < theta <= 1``
    m : int

    Returns
    -------
    sympy.Rational
    """
    theta = sp.nsimplify(theta)
    if not (theta.is_Rational and 0 < theta <= 1):
        raise ValueError(f"Expected a rational 0 < theta <= 1 (the bound uses e^theta < 3). Got theta={theta}.")
    return 3 * theta ** (m + 1) / sp.factorial(m + 1) / (1 - theta / (m + 2))


def _truncation_derivation(m: int, theta) -> Derivation:
    rel = sp.Symbol(rf"\|e^X - p_{{{m}}}(X)\|/\|e^X\|")
    err = sp.Symbol(rf"\|e^X - p_{{{m}}}(X)\|\,\|e^{{-X}}\|/\|I\|")
    tail = sp.Symbol(rf"e^\theta\sum_{{k>{m}}}\theta^k/k!")
    value = relative_tail_bound(theta, m)
    sign = sp.sign(sp.Add(UNIT_ROUNDOFF, -value, evaluate=False), evaluate=False)
    return Derivation(
        assumptions=[rf"\|X\| \le \theta = {sp.latex(theta)} \text{{ in a submultiplicative norm (1-norm or "
                     r"Frobenius)}"],
        subject=(rel,),
        steps=[
            Step(rel, err, r"\|I\| = \|e^Xe^{-X}\| \le \|e^X\|\,\|e^{-X}\|", lemma="exp_series_norm_bound",
                 relation="<="),
            Step(err, tail, r"\|e^{-X}\|/\|I\| \le (\|I\| - 1 + e^\theta)/\|I\| \le e^\theta (as \|I\| \ge 1) and the "
                 r"omitted terms of the series have norms at most \theta^k/k!", lemma="exp_series_norm_bound",
                 relation="<="),
            Step(tail, value, r"e^\theta < 3 for \theta \le 1; the tail is the first omitted term times "
                 r"1/(1 - \theta/(m+2))", lemma="taylor_remainder_bound", relation="<="),
            Step(sign, 1, r"exact rational comparison: the bound is below u = 2^{-53} (\mathrm{sign}(u - "
                 r"\text{bound}) = 1)", identity()),
        ],
        remark=rf"\text{{the degree-{m} Taylor polynomial at }}\|X\| \le {sp.latex(theta)}\text{{: truncation "
        r"relative to }e^X < u",
        conclusion=sp.Eq(sign, 1, evaluate=False),
    )


def make_truncation_claim(m: int = DEGREE, claim_id: str = "vp.gram_exp_native_truncation", theta=THETA) -> Claim:
    """The truncation claim at degree ``m`` and norm bound ``theta`` (a lower degree or a larger bound is a negative
    control)."""
    theta = sp.nsimplify(theta)
    return Claim(
        id=claim_id,
        title="truncation of the native exponential kernels' Taylor polynomial",
        statement=f"For ||X|| <= theta = {theta} in a submultiplicative norm (the 1-norm or the Frobenius norm), the "
        f"Taylor polynomial p of degree {m} satisfies ||exp(X) - p(X)|| / ||exp(X)|| <= 3 theta^(m+1) / (m+1)! / "
        "(1 - theta/(m+2)) < 2^-53: after scaling, the truncation relative to the result is below float64's unit "
        "roundoff.",
        latex=rf"\|X\|\le\theta = {sp.latex(theta)} \implies \|e^X - p_{{{m}}}(X)\|/\|e^X\| \le "
        rf"\frac{{3\,\theta^{{{m}+1}}}}{{({m}+1)!\,(1 - \theta/({m}+2))}} < 2^{{-53}}",
        source="kernels of geoattn.kernels._native_exp (the d x d stage of geoattn.codegen.gram_exp_c)",
        expected=Level.PROVED,
        checker=Policy(prove=lambda: _truncation_derivation(m, theta)),
    )


def _inner(u, v):
    return sum((u[i] * v[i] for i in range(len(u))), sp.Integer(0))


def square_adjoint(X, gY):
    r"""The kernel's adjoint of :math:`Y = X^2`: :math:`\bar YX^T + X^T\bar Y`."""
    return gY * X.T + X.T * gY


def untransposed_square_adjoint(X, gY):
    r"""A negative control: :math:`\bar YX + X^T\bar Y` (the first transpose dropped)."""
    return gY * X + X.T * gY


def reverse_rules_identity(square=square_adjoint) -> MatrixIdentity:
    """One residual entry per adjoint rule of the backward template: ``<Z_bar, dZ>`` minus the pairing of the
    rule's input gradients with the input directions; ``square`` replaces the squaring's adjoint (negative
    controls)."""

    def residual(size, X, dX, gY, S, P, B, dS, dP, dB, gS, M, dM, gX, A, dA, G, dG, gM, c, cs):
        k = size["d"]
        rules = [
            _inner(gY, dX * X + X * dX) - _inner(square(X, gY), dX),  # Y = X^2
            _inner(gS, dS * P + S * dP + dB) - _inner(gS * P.T, dS) - _inner(S.T * gS, dP) - _inner(gS, dB),
            # B = c0 I + c1 X + c2 X^2 (the powers are inputs of their own): B_bar enters X^i_bar as c_i B_bar
            _inner(gS, cs[1] * dX + cs[2] * dP) - _inner(cs[1] * gS, dX) - _inner(cs[2] * gS, dP),
            _inner(gX, c * dM) - _inner(c * gX, dM),  # X = c M
            _inner(gM, -dA * G - A * dG) - _inner(A * gM, dG) - _inner(-gM * G, dA),  # M = -A G
        ]
        del k
        return sp.Matrix([[sp.expand(r)] for r in rules])

    def variables(s):
        d = s["d"]
        g = {n: alg.general(n, d, d) for n in ("X", "dX", "gY", "S", "P", "B", "dS", "dP", "dB", "gS", "M", "dM",
                                                  "gX", "gM")}
        g.update(A=alg.skew("a", d), dA=alg.skew("da", d), G=alg.symmetric("g", d), dG=alg.symmetric("dg", d),
                 c=sp.Symbol("c"), cs=sp.symbols("c0:3"))
        return g

    return MatrixIdentity("adjoint rules of the native exponential backward: <Z_bar, dZ> - <W_bar, dW> per step",
                          variables=variables, residual=residual)


def make_reverse_claim(square=square_adjoint, claim_id: str = "vp.gram_exp_native_reverse",
                       expected: Level = Level.CHECKED) -> Claim:
    """The reverse-mode claim; ``square`` replaces the squaring's adjoint (negative controls expect
    ``Level.REFUTED``)."""
    return Claim(
        id=claim_id,
        title="the adjoint rules of the native exponential kernels' backward",
        statement="Each step of the scaling and squaring has the adjoint the backward template applies: for Y = X^2, "
        "X_bar = Y_bar X^T + X^T Y_bar; for S' = S P + B (the powers X^k = X^(k-1) X and the Horner steps), "
        "S_bar = S'_bar P^T, P_bar = S^T S'_bar, B_bar = S'_bar; for B = sum_i c_i X^i, (X^i)_bar += c_i B_bar; for "
        "X = c M, M_bar = c X_bar; for M = -A G (A skew, G symmetric), G_bar = A M_bar and A_bar = -M_bar G. "
        "Checked as exact identities at d = 1, 2, 3; their composition in the template's order is tested "
        "numerically (tests/test_native_gram_exp.py), not checked here.",
        latex=r"Y = X^2:\ \bar X = \bar YX^T + X^T\bar Y;\ S' = SP + B:\ \bar S = \bar S'P^T,\ \bar P = S^T\bar S';"
        r"\ M = -AG:\ \bar G = A\bar M,\ \bar A = -\bar MG",
        source="kernels of geoattn.kernels._native_exp (the backward d x d stage of geoattn.codegen.gram_exp_c)",
        expected=expected,
        checker=Policy(
            identity=reverse_rules_identity(square),
            search=at_sizes({"d": 2}),
            points=1,
            exact=grid(d=[1, 2, 3]),
            exact_method="exact symbolic identity at d = 1, 2, 3, every entry a symbol (A skew, G symmetric); "
            "exact rational search at d = 2",
        ),
        notes="Each rule is the pairing identity <Z_bar, dZ> = sum <W_bar, dW> of one step, which defines the "
        "adjoint; the composition of adjoints is the adjoint of the composition (chain rule), so the rules give "
        "the exact gradient of the computed E, not of exp: the two differ by the truncation "
        "(vp.gram_exp_native_truncation) and the rounding.",
    )
