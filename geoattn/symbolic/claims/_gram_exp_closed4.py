r"""The claims ``vp.gram_exp_closed_quartic`` and ``vp.gram_exp_closed_quartic_vjp``: the closed form of the exponential
layer's Gram form at ``d = 4`` (:mod:`geoattn.kernels._gram_exp_closed4`); :mod:`.vp_gram` lists them.

* ``vp.gram_exp_closed_quartic``: for skew ``A`` (4 x 4) and ``M = -Ax^Tx``, :math:`M^4 + pM^2 + qI = 0` with
  :math:`p = -\mathrm{Tr}(M^2)/2` and :math:`q = (2p^2 - \mathrm{Tr}(M^4))/4` (Cayley--Hamilton with
  :math:`\mathrm{Tr}\,M = e_3(M) = 0`, and Newton's identities for :math:`e_4 = \det M`), checked exactly with
  ``x`` and ``A`` symbolic; and the kernel's arithmetic in the ring :math:`\mathbb{R}[z]/(z^4 + pz^2 + q)`: the
  Taylor polynomial of ``exp`` of degree 9 at ``M``, and the square of a polynomial of degree 3 in ``M``, equal the
  polynomials of degree 3 whose coefficients Horner's scheme and the squaring rule (``z^4 = -q - pz^2``,
  ``z^5 = -qz - pz^3``, ``z^6 = pq + (p^2 - q)z^2``) compute, at rational points.
* ``vp.gram_exp_closed_quartic_vjp``: the backward formulas of the kernel are the gradient of
  :math:`\langle\bar y, xE\rangle`, :math:`E = \sum_{i<4}c_i(p, q)M^i`, for ``c_i`` affine in ``p`` and ``q`` with
  **symbolic** coefficients (both sides are linear in them), against exact directional derivatives (dual numbers)
  at rational points, and certified at random integer points of full rank (Schwartz--Zippel).
"""

from __future__ import annotations

import sympy as sp

from sympy.polys.matrices import DomainMatrix

from .. import algebra as alg
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes

__all__ = ["closed_form4_identity", "closed4_vjp_identity", "closed4_backward", "ring_square", "ring_taylor",
           "make_closed_form4_claim", "make_closed4_vjp_claim", "vjp4_degree_bound"]


def _skew(m: sp.Matrix) -> sp.Matrix:
    return (m - m.T) / 2


def _inner(u: sp.Matrix, v: sp.Matrix):
    return sum((u[i] * v[i] for i in range(len(u))), sp.Integer(0))


def _pq(M: sp.Matrix, quarter=sp.Rational(1, 4)):
    M2 = M * M
    p = -M2.trace() / 2
    return p, quarter * (2 * p * p - (M2 * M2).trace())


def ring_square(c: list, p, q, six=None) -> list:
    """The kernel's squaring rule: the coefficients of ``(sum c_i z^i)^2`` reduced modulo ``z^4 + p z^2 + q``;
    ``six(p, q)`` replaces the reduction of ``z^6`` (negative controls)."""
    w = [sum((c[i] * c[k - i] for i in range(4) if 0 <= k - i < 4), sp.Integer(0)) for k in range(7)]
    z6 = six(p, q) if six is not None else [p * q, 0, p * p - q, 0]
    z4, z5 = [-q, 0, -p, 0], [0, -q, 0, -p]
    return [w[i] + z4[i] * w[4] + z5[i] * w[5] + z6[i] * w[6] for i in range(4)]


def ring_taylor(p, q, degree: int) -> list:
    """The kernel's Horner scheme: the coefficients of the Taylor polynomial of exp of ``degree`` in the ring."""
    v = [sp.Integer(1), 0, 0, 0]
    for k in range(degree, 0, -1):
        v = [-q * v[3], v[0], v[1] - p * v[3], v[2]]  # times z, with z^4 = -q - p z^2
        v = [e / k for e in v]
        v[0] += 1
    return v


def _poly(c, M: sp.Matrix) -> sp.Matrix:
    out, P = sp.zeros(M.rows), sp.eye(M.rows)
    for ci in c:
        out, P = out + ci * P, P * M
    return out


def _cayley_hamilton(X: sp.Matrix, Am: sp.Matrix, quarter) -> sp.Matrix:
    """``M^4 + pM^2 + qI`` for symbolic ``x`` and ``A``, in the polynomial ring of their entries (sparse polynomial
    arithmetic: the same identity as Matrix products, without expanding their intermediate sums)."""
    syms = sorted(X.free_symbols | Am.free_symbols, key=sp.default_sort_key)
    K = sp.QQ[tuple(syms)] if syms else sp.QQ
    Xd, Ad = DomainMatrix.from_Matrix(X).convert_to(K), DomainMatrix.from_Matrix(Am).convert_to(K)
    M = -(Ad * (Xd.transpose() * Xd))
    M2 = M * M
    M4 = M2 * M2

    def tr(D):
        return sum((D[i, i].element for i in range(4)), K.zero)

    p = -tr(M2) * K.convert(sp.Rational(1, 2))
    q = (2 * p * p - tr(M4)) * K.convert(sp.sympify(quarter))
    return (M4 + M2 * DomainMatrix.eye(4, K).mul(p) + DomainMatrix.eye(4, K).mul(q)).to_Matrix()


def closed_form4_identity(quarter=sp.Rational(1, 4), six=None, degree: int = 9) -> MatrixIdentity:
    r"""``[M^4 + pM^2 + qI;`` Taylor polynomial of exp at ``M`` minus its ring form; ``c(M)^2`` minus the squaring
    rule's ``]`` with ``M = -A x^T x``; ``quarter`` replaces the 1/4 of ``q`` and ``six(p, q)`` the reduction of
    :math:`z^6` (negative controls). The ring rows are evaluated only at rational points (``size["ring"]``); at
    symbolic points the residual is the first row alone."""

    def residual(size, X, Am, Cm):
        if not size.get("ring"):
            return alg.vec_rows(_cayley_hamilton(X, Am, quarter))
        M = -Am * (X.T * X)
        p, q = _pq(M, quarter)
        M2 = M * M
        rows = [alg.vec_rows((M2 * M2 + p * M2 + q * sp.eye(4)).applyfunc(sp.expand))]
        taylor, P = sp.eye(4), sp.eye(4)
        for j in range(1, degree + 1):
            P = P * M
            taylor = taylor + P / sp.factorial(j)
        rows.append(alg.vec_rows((taylor - _poly(ring_taylor(p, q, degree), M)).applyfunc(sp.expand)))
        c = list(Cm)
        rows.append(alg.vec_rows((_poly(c, M) ** 2 - _poly(ring_square(c, p, q, six), M)).applyfunc(sp.expand)))
        return sp.Matrix.vstack(*rows)

    return MatrixIdentity(
        "[M^4 + p M^2 + q I; Taylor_9(exp)(M) - ring Horner; c(M)^2 - ring square], M = -A x^T x, "
        "p = -Tr(M^2)/2, q = (2p^2 - Tr(M^4))/4",
        variables=lambda s: {"X": alg.general("x", s["T"], 4), "Am": alg.skew("a", 4), "Cm": alg.general("c", 4, 1)},
        residual=residual,
    )


def closed4_backward(X: sp.Matrix, Am: sp.Matrix, Gy: sp.Matrix, cf: sp.Matrix, sign: int = -1
                     ) -> tuple[sp.Matrix, sp.Matrix]:
    r"""``(x_bar, A_bar)`` as the kernel computes them, with :math:`c_i = cf_{i0} + cf_{i1}p + cf_{i2}q`; ``sign`` is
    that of the term in :math:`(M^3 + pM)^T` (negative controls)."""
    G = X.T * X
    M = -Am * G
    p, q = _pq(M)
    pw = [sp.eye(4), M, M * M, M * M * M]
    c = [cf[i, 0] + cf[i, 1] * p + cf[i, 2] * q for i in range(4)]
    E = sum((c[i] * pw[i] for i in range(4)), sp.zeros(4))
    gE = X.T * Gy
    gamma = [_inner(gE, P) for P in pw]
    p_bar = sum((gamma[i] * cf[i, 1] for i in range(4)), sp.Integer(0))
    q_bar = sum((gamma[i] * cf[i, 2] for i in range(4)), sp.Integer(0))
    gM = sp.zeros(4)
    for i in range(1, 4):
        for j in range(i):
            gM += c[i] * pw[j].T * gE * pw[i - 1 - j].T
    gM += -p_bar * M.T + sign * q_bar * (pw[3] + p * M).T
    gG = Am * gM
    return Gy * E.T + X * (gG + gG.T), _skew(-gM * G)


def _loss(X, B, Gy, cf):
    M = -B * (X.T * X)
    p, q = _pq(M)
    c = [cf[i, 0] + cf[i, 1] * p + cf[i, 2] * q for i in range(4)]
    return _inner(Gy, X * _poly(c, M))


def _reference(X: sp.Matrix, Am: sp.Matrix, Gy: sp.Matrix, cf: sp.Matrix):
    r"""``(x_bar, skew(A_bar))`` of :math:`\langle\bar y, xE(-Ax^Tx)\rangle`: exact directional derivatives (dual
    numbers, :func:`_slope`) along every entry of ``x`` and of a general ``A``, at rational or symbolic points."""
    def unit(rows, cols, i, j):
        return sp.Matrix(rows, cols, lambda r, c: 1 if (r, c) == (i, j) else 0)

    zx, za = sp.zeros(X.rows, X.cols), sp.zeros(4)
    gx = sp.Matrix(X.rows, X.cols, lambda i, j: _slope(X, unit(X.rows, X.cols, i, j), Am, za, Gy, cf))
    return gx, _skew(sp.Matrix(4, 4, lambda i, j: _slope(X, zx, Am, unit(4, 4, i, j), Gy, cf)))


def _slope(X, dX, B, dB, Gy, cf):
    r"""The exact derivative of :math:`\langle\bar y, xE(-Bx^Tx)\rangle` along ``(dX, dB)`` by dual numbers
    (value, tangent): the product rule through every matrix product, no formula of the backward."""
    def mul(u, v):
        return u[0] * v[0], u[0] * v[1] + u[1] * v[0]

    x = (X, dX)
    G = mul((X.T, dX.T), x)
    M = mul((-B, -dB), G)
    pw = [(sp.eye(4), sp.zeros(4)), M]
    for _ in range(2):
        pw.append(mul(pw[-1], M))
    M4 = mul(pw[2], pw[2])
    p = (-pw[2][0].trace() / 2, -pw[2][1].trace() / 2)
    q = ((2 * p[0] ** 2 - M4[0].trace()) / 4, (4 * p[0] * p[1] - M4[1].trace()) / 4)
    out = sp.Integer(0)
    for i in range(4):  # linear in the coefficients: each one's rational factor, then the sum
        u = _inner(Gy, dX * pw[i][0] + X * pw[i][1])
        w = _inner(Gy, X * pw[i][0])
        out += cf[i, 0] * u + cf[i, 1] * (p[0] * u + p[1] * w) + cf[i, 2] * (q[0] * u + q[1] * w)
    return sp.expand(out)


def closed4_vjp_identity(backward=closed4_backward) -> MatrixIdentity:
    """The kernel's ``(x_bar, A_bar)`` minus the reference gradient, stacked; ``backward`` replaces the kernel's
    formulas (negative controls). The ``c_i`` are affine in ``p`` and ``q`` with symbolic coefficients."""

    def residual(size, X, Am, Gy, cf):
        got = backward(X, Am, Gy, cf)
        ref = _reference(X, Am, Gy, cf)
        return sp.Matrix.vstack(*[alg.vec_rows(g - r) for g, r in zip(got, ref)]).applyfunc(sp.expand)

    return MatrixIdentity(
        "closed-form backward of x sum_i c_i(p, q) M^i, M = -A x^T x, d = 4 - its gradient (c_i affine in p, q)",
        variables=lambda s: {"X": alg.general("x", s["T"], 4), "Am": alg.skew("a", 4),
                             "Gy": alg.general("gy", s["T"], 4), "cf": alg.general("cf", 4, 3)},
        residual=residual,
    )


def make_closed_form4_claim(quarter=sp.Rational(1, 4), six=None, claim_id: str = "vp.gram_exp_closed_quartic",
                            expected: Level = Level.CHECKED) -> Claim:
    """The closed-form claim at d = 4; ``quarter`` and ``six`` replace the kernel's constants (negative controls)."""
    return Claim(
        id=claim_id,
        title="the exponential Gram form in closed form at d = 4",
        statement="For skew 4 x 4 A, x of shape (T, 4) and M = -A x^T x: M^4 + p M^2 + q I = 0 with p = -Tr(M^2)/2 "
        "and q = (2p^2 - Tr(M^4))/4 = det M (Cayley--Hamilton; Tr M = e_3(M) = 0), hence exp(M) = c_0 I + c_1 M + "
        "c_2 M^2 + c_3 M^3 with c_i computed in the ring R[z]/(z^4 + p z^2 + q): the Taylor polynomial by Horner's "
        "scheme (z^4 = -q - p z^2) and squaring by the rule z^5 = -q z - p z^3, z^6 = pq + (p^2 - q) z^2 (the "
        "kernel vp_gram_exp_closed at d = 4).",
        latex=r"d = 4:\ M^4 + pM^2 + qI = 0,\ p = -\tfrac12\mathrm{Tr}(M^2),\ q = \tfrac14(2p^2 - \mathrm{Tr}(M^4)),"
        r"\ \exp(M) = \textstyle\sum_{i<4}c_i(p, q)M^i",
        source="kernel of geoattn.kernels._gram_exp_closed4 (Note [closed-form exponential at d = 4])",
        expected=expected,
        checker=Policy(
            identity=closed_form4_identity(quarter, six),
            search=at_sizes({"T": 2, "ring": 1}, {"T": 4, "ring": 1}),
            points=1,
            exact=at_sizes({"T": 1}, {"T": 2}),
            exact_method="exact symbolic identity M^4 + p M^2 + q I = 0 at T = 1 and T = 2 (every entry of x and A a "
            "symbol); the ring's Horner scheme (Taylor degree 9) and squaring rule at exact rational points, T = 2 "
            "and 4 (G of rank 2 and 4)",
        ),
        notes="Scaling and squaring rests on exp(M) = exp(M/2^s)^(2^s) and on the ring rules checked here; the "
        "Taylor truncation (degree 12 at |t_i| <= 1/4 in the kernel) is a bound, not an identity. The exact "
        "symbolic check at T = 4 (G of full rank) is too large to expand quickly; T = 4 is covered at rational "
        "points.",
    )


def vjp4_degree_bound(size: dict) -> int:
    r"""A bound on the degree of the backward residual in all its variables: the loss term
    :math:`\langle\bar y, x\,c_{i2}qM^3\rangle` has degree 8 + 4 (``q`` in ``x`` and ``A``) + 6 + 3 (``M^3``)
    + 1 (``x``) + 1 (:math:`\bar y`) + 1 (the coefficient), and no term of either side exceeds it."""
    return 24


def make_closed4_vjp_claim(backward=closed4_backward, claim_id: str = "vp.gram_exp_closed_quartic_vjp",
                           expected: Level = Level.CERTIFIED) -> Claim:
    """The backward claim at d = 4; ``backward`` replaces the kernel's formulas (negative controls)."""
    return Claim(
        id=claim_id,
        title="the closed-form exponential Gram backward at d = 4",
        statement="For y = x E, E = sum_(i<4) c_i(p, q) M^i, M = -A G, G = x^T x (A skew 4 x 4), p = -Tr(M^2)/2, "
        "q = (2p^2 - Tr(M^4))/4 and incoming gradient y_bar: with E_bar = x^T y_bar, gamma_i = <E_bar, M^i>, "
        "p_bar = sum_i gamma_i dc_i/dp, q_bar = sum_i gamma_i dc_i/dq, M_bar = sum_(i>=1) c_i sum_(j<i) "
        "(M^j)^T E_bar (M^(i-1-j))^T - p_bar M^T - q_bar (M^3 + p M)^T and G_bar = A M_bar, x_bar = y_bar E^T + "
        "x(G_bar + G_bar^T) and A_bar = skew(-M_bar G) are the gradient of <y_bar, y> in x and the skew part of "
        "its gradient in A. Checked with c_i every affine function of (p, q) (symbolic coefficients).",
        latex=r"\bar M = \sum_{i\ge1}c_i\sum_{j<i}(M^j)^T\bar E(M^{i-1-j})^T - \bar pM^T - \bar q(M^3 + pM)^T,"
        r"\ \bar x = \bar yE^T + x(A\bar M + \bar M^TA^T),\ \bar A = \mathrm{skew}(-\bar MG)",
        source="kernel backward of geoattn.kernels._gram_exp_closed at d = 4 (Note [closed-form exponential at "
        "d = 4])",
        expected=expected,
        checker=Policy(
            identity=closed4_vjp_identity(backward),
            search=at_sizes({"T": 2}),
            points=1,
            certify=at_sizes({"T": 4}),
            certify_points=3,
            degree_bound=vjp4_degree_bound,
            certify_method="exact evaluation at random integer points at T = 4 (q = det M nonzero), every entry of "
            "x, A, y_bar and of the c_i's coefficients drawn, with the Schwartz--Zippel bound of degree 24; exact "
            "rational search at T = 2 (the coefficients symbolic, q = 0)",
        ),
        notes="The exact symbolic identity (every entry a symbol) took minutes at T = 1 with SymPy's expansion, "
        "hence certification. Both sides are linear in the coefficients of the c_i, so each check covers every "
        "affine c_i; the "
        "terms of higher degree in (p, q) enter through the same p_bar and q_bar (their derivatives), which the "
        "affine family already exercises. The reference differentiates x E(-A x^T x) directly and shares no "
        "formula with the backward.",
    )
