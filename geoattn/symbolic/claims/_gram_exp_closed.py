r"""The claims ``vp.gram_exp_closed_form`` and ``vp.gram_exp_closed_form_vjp``: the closed form of the exponential
layer's Gram form at ``d = 3`` (:mod:`geoattn.kernels._gram_exp_closed`); :mod:`.vp_gram` lists them.

* ``vp.gram_exp_closed_form``: for skew ``A`` (3 x 3) and ``M = -Ax^Tx``, :math:`M^3 + \theta^2M = 0` with
  :math:`\theta^2 = -\mathrm{Tr}(M^2)/2` (Cayley--Hamilton: :math:`\mathrm{Tr}\,M = 0`, :math:`\det M = 0`). Then
  :math:`M^{2k+1} = (-\theta^2)^kM` and :math:`M^{2k+2} = (-\theta^2)^kM^2`, and the power series of ``exp``
  regroups into :math:`I + a(\theta^2)M + b(\theta^2)M^2` with the entire functions
  :math:`a(t) = \sum_k (-t)^k/(2k+1)!` and :math:`b(t) = \sum_k (-t)^k/(2k+2)!`. The engine checks the polynomial
  identity exactly with ``x`` and ``A`` symbolic, and the regrouping on the Taylor polynomial of degree 7 at
  rational points.
* ``vp.gram_exp_closed_form_vjp``: the backward formulas of the kernel are the gradient of
  :math:`\langle\bar y, xE(M)\rangle`, :math:`E(M) = I + a(t)M + b(t)M^2`, :math:`t = -\mathrm{Tr}(M^2)/2`, for
  ``a`` and ``b`` polynomials of **symbolic** coefficients (both sides are linear in them, as in
  ``vp.gram_exp_vjp``), against SymPy's derivatives at symbolic points and exact directional derivatives at
  rational ones.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from .._exact import polynomial_gradient
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes

__all__ = ["closed_form_identity", "closed_vjp_identity", "closed_backward", "make_closed_form_claim",
           "make_closed_vjp_claim"]

_t = sp.Symbol("t")


def _skew(m: sp.Matrix) -> sp.Matrix:
    return (m - m.T) / 2


def _inner(u: sp.Matrix, v: sp.Matrix):
    return sum((u[i] * v[i] for i in range(len(u))), sp.Integer(0))


def _theta2(M: sp.Matrix, half=sp.Rational(1, 2)):
    return -half * (M * M).trace()


def closed_form_identity(half=sp.Rational(1, 2), degree: int = 7) -> MatrixIdentity:
    r"""``[M^3 + \theta^2 M;`` Taylor polynomial of ``exp`` of degree ``degree`` at ``M`` minus its regrouping
    ``I + a_m M + b_m M^2]`` with ``M = -A x^T x``; ``half`` replaces the 1/2 of :math:`\theta^2` (negative
    controls). The regrouping is evaluated only at rational points (``size["taylor"]``)."""

    def residual(size, X, Am):
        M = -Am * (X.T * X)
        t = _theta2(M, half)
        M2 = M * M
        rows = [alg.vec_rows((M2 * M + t * M).applyfunc(sp.expand))]
        if size.get("taylor"):
            taylor, P = sp.eye(3), sp.eye(3)
            for j in range(1, degree + 1):
                P = P * M
                taylor = taylor + P / sp.factorial(j)
            a = sum(((-t) ** k / sp.factorial(2 * k + 1) for k in range((degree - 1) // 2 + 1)), sp.Integer(0))
            b = sum(((-t) ** k / sp.factorial(2 * k + 2) for k in range((degree - 2) // 2 + 1)), sp.Integer(0))
            rows.append(alg.vec_rows((taylor - sp.eye(3) - a * M - b * M2).applyfunc(sp.expand)))
        return sp.Matrix.vstack(*rows)

    return MatrixIdentity(
        "[M^3 + theta^2 M; Taylor_7(exp)(M) - (I + a_7 M + b_7 M^2)], M = -A x^T x, theta^2 = -Tr(M^2)/2",
        variables=lambda s: {"X": alg.general("x", s["T"], 3), "Am": alg.skew("a", 3)},
        residual=residual,
    )


def _poly(c: sp.Matrix, t):
    return sum((c[j] * t ** j for j in range(len(c))), sp.Integer(0))


def _E(M: sp.Matrix, ca: sp.Matrix, cb: sp.Matrix) -> sp.Matrix:
    t = _theta2(M)
    return sp.eye(M.rows) + _poly(ca, t) * M + _poly(cb, t) * M * M


def closed_backward(X: sp.Matrix, Am: sp.Matrix, Gy: sp.Matrix, ca: sp.Matrix, cb: sp.Matrix,
                    sign: int = -1) -> tuple[sp.Matrix, sp.Matrix]:
    r"""``(x_bar, A_bar)`` as the kernel computes them, with :math:`a(t) = \sum_j ca_j t^j` and
    :math:`b(t) = \sum_j cb_j t^j`; ``sign`` is that of the term in :math:`M^T` (negative controls)."""
    G = X.T * X
    M = -Am * G
    M2 = M * M
    t = _theta2(M)
    a, b = _poly(ca, t), _poly(cb, t)
    da, db = sp.diff(_poly(ca, _t), _t).subs(_t, t), sp.diff(_poly(cb, _t), _t).subs(_t, t)
    E = sp.eye(M.rows) + a * M + b * M2
    gE = X.T * Gy
    gM = a * gE + b * (gE * M.T + M.T * gE) + sign * (da * _inner(gE, M) + db * _inner(gE, M2)) * M.T
    gG = Am * gM
    return Gy * E.T + X * (gG + gG.T), _skew(-gM * G)


def _loss(X, B, Gy, ca, cb):
    Y = X * _E(-B * (X.T * X), ca, cb)
    return _inner(Gy, Y)


def _reference(X: sp.Matrix, Am: sp.Matrix, Gy: sp.Matrix, ca: sp.Matrix, cb: sp.Matrix):
    r"""``(x_bar, skew(A_bar))`` of :math:`\langle\bar y, xE(-Ax^Tx)\rangle`. At a symbolic point (every entry of
    ``x`` and the free entries ``a_ij``, ``i > j``, of the skew ``A`` distinct symbols): the derivatives of the loss
    as one sparse polynomial, :math:`\mathrm{skew}(\bar A)_{ij} = \tfrac12\,\partial L/\partial a_{ij}`; at a
    rational point: exact directional derivatives (a polynomial in one symbol ``eps``, its linear coefficient)
    along every entry."""
    k = Am.rows
    if X.free_symbols | Am.free_symbols:
        lower = [(i, j) for i in range(k) for j in range(i)]
        free = [Am[i, j] for i, j in lower]
        if not (k > 1 and Am == -Am.T and all(e.is_Symbol for e in [*free, *X])
                and len(set(free) | set(X)) == len(free) + len(X)):
            raise ValueError("Expected x and the free entries of a skew A as distinct symbols, or a rational point. "
                             f"Got x = {X.tolist()}, A = {Am.tolist()}.")
        # moving a_ij moves A along E_ij - E_ji, so skew(gradient in a general A)_ij = (1/2) dL/da_ij
        grads = polynomial_gradient(_loss(X, Am, Gy, ca, cb), list(X) + free)
        gx = sp.Matrix(X.rows, X.cols, grads[:len(X)])
        ga = sp.zeros(k, k)
        for (i, j), g in zip(lower, grads[len(X):]):
            ga[i, j], ga[j, i] = g / 2, -g / 2
        return gx, ga
    eps = sp.Symbol("eps")

    def slope(Xe, Be):
        return sp.Poly(sp.expand(_loss(Xe, Be, Gy, ca, cb)), eps).coeff_monomial(eps)

    def unit(rows, cols, i, j):
        return sp.Matrix(rows, cols, lambda r, c: eps if (r, c) == (i, j) else 0)

    gx = sp.Matrix(X.rows, X.cols, lambda i, j: slope(X + unit(X.rows, X.cols, i, j), Am))
    gb = sp.Matrix(k, k, lambda i, j: slope(X, Am + unit(k, k, i, j)))
    return gx, _skew(gb)


def closed_vjp_identity(backward=closed_backward) -> MatrixIdentity:
    """The kernel's ``(x_bar, A_bar)`` minus the reference gradient, stacked; ``backward`` replaces the kernel's
    formulas (negative controls). ``a`` and ``b`` have degree ``size["m"]`` and symbolic coefficients."""

    def residual(size, X, Am, Gy, ca, cb):
        got = backward(X, Am, Gy, ca, cb)
        ref = _reference(X, Am, Gy, ca, cb)
        return sp.Matrix.vstack(*[alg.vec_rows(g - r) for g, r in zip(got, ref)])

    return MatrixIdentity(
        "closed-form backward of x (I + a(t) M + b(t) M^2), M = -A x^T x - its gradient (a, b: symbolic polynomials)",
        variables=lambda s: {"X": alg.general("x", s["T"], 3), "Am": alg.skew("a", 3),
                             "Gy": alg.general("gy", s["T"], 3), "ca": alg.general("ca", s["m"] + 1, 1),
                             "cb": alg.general("cb", s["m"] + 1, 1)},
        residual=residual,
    )


def make_closed_form_claim(half=sp.Rational(1, 2), claim_id: str = "vp.gram_exp_closed_form",
                           expected: Level = Level.CHECKED) -> Claim:
    """The closed-form claim; ``half`` replaces the 1/2 of theta^2 (negative controls)."""
    return Claim(
        id=claim_id,
        title="the exponential Gram form in closed form at d = 3",
        statement="For skew 3 x 3 A, x of shape (T, 3) and M = -A x^T x: M^3 + theta^2 M = 0 with "
        "theta^2 = -Tr(M^2)/2 (Cayley--Hamilton; Tr M = det M = 0), hence exp(M) = I + a M + b M^2 with "
        "a = sum_k (-theta^2)^k/(2k+1)! = sin(theta)/theta and b = sum_k (-theta^2)^k/(2k+2)! = "
        "(1 - cos theta)/theta^2 (the kernel vp_gram_exp_closed).",
        latex=r"d = 3:\ M^3 = -\theta^2M,\ \exp(M) = I + \frac{\sin\theta}{\theta}M + \frac{1-\cos\theta}{\theta^2}M^2,"
        r"\ \theta^2 = -\tfrac12\mathrm{Tr}(M^2),\ M = -Ax^Tx",
        source="kernel of geoattn.kernels._gram_exp_closed (Note [closed-form exponential Gram form])",
        expected=expected,
        checker=Policy(
            identity=closed_form_identity(half),
            search=at_sizes({"T": 2, "taylor": 1}, {"T": 4, "taylor": 1}),
            points=2,
            exact=at_sizes({"T": 2}, {"T": 3}),
            exact_method="exact symbolic identity M^3 + theta^2 M = 0 at T = 2 and T = 3 (every entry of x and A a "
            "symbol; G = x^T x of rank 2 and 3); the regrouping of the degree-7 Taylor polynomial into "
            "I + a_7 M + b_7 M^2 at exact rational points, T = 2 and 4",
        ),
        notes="The step from M^3 = -theta^2 M to the regrouped series is the termwise identity "
        "M^(2k+1) = (-theta^2)^k M, M^(2k+2) = (-theta^2)^k M^2 (induction on k), which the engine evaluates on a "
        "Taylor polynomial, not on the whole series. theta^2 >= 0: M is similar to the skew "
        "-G^(1/2) A G^(1/2) when G is invertible.",
    )


def make_closed_vjp_claim(backward=closed_backward, claim_id: str = "vp.gram_exp_closed_form_vjp",
                          expected: Level = Level.CHECKED) -> Claim:
    """The backward claim; ``backward`` replaces the kernel's formulas (negative controls)."""
    return Claim(
        id=claim_id,
        title="the closed-form exponential Gram backward at d = 3",
        statement="For y = x E, E = I + a(t) M + b(t) M^2, t = -Tr(M^2)/2, M = -A G, G = x^T x (A skew 3 x 3) and "
        "incoming gradient y_bar: with E_bar = x^T y_bar, M_bar = a E_bar + b (E_bar M^T + M^T E_bar) - "
        "(a'(t) <E_bar, M> + b'(t) <E_bar, M^2>) M^T and G_bar = A M_bar, x_bar = y_bar E^T + x(G_bar + G_bar^T) "
        "and A_bar = skew(-M_bar G) are the gradient of <y_bar, y> in x and the skew part of its gradient in A. "
        "Checked with a and b every polynomial of the stated degree (symbolic coefficients).",
        latex=r"\bar M = a\bar E + b(\bar EM^T + M^T\bar E) - \big(a'\langle\bar E, M\rangle + b'\langle\bar E, M^2"
        r"\rangle\big)M^T,\ \bar x = \bar yE^T + x(A\bar M + \bar M^TA^T),\ \bar A = \mathrm{skew}(-\bar MG)",
        source="kernel backward of geoattn.kernels._gram_exp_closed (Note [closed-form exponential Gram form])",
        expected=expected,
        checker=Policy(
            identity=closed_vjp_identity(backward),
            search=at_sizes({"T": 2, "m": 1}),
            points=1,
            exact=at_sizes({"T": 1, "m": 1}),
            exact_method="exact symbolic identity at T = 1 with a, b linear of symbolic coefficients (every entry "
            "of x, A, y_bar a symbol); exact rational search at T = 2 (a, b linear)",
        ),
        notes="Both sides are linear in the coefficients of a and b, so each size covers every polynomial of the "
        "degree; the kernel's a, b (sin(theta)/theta and (1 - cos theta)/theta^2, vp.gram_exp_closed_form) are "
        "limits of such polynomials. The reference differentiates x E(-A x^T x) directly and shares no formula "
        "with the backward. At T = 1, x A x^T = 0 makes y = x (every term of the backward in M vanishes), so "
        "the exact identity there checks little; the rational search at T = 2 is what refutes a wrong sign of "
        "the term in M^T (the negative control; the exact identity at T = 2 refutes it too, in about 8 s).",
    )
