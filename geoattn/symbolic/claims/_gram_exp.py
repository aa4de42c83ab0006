r"""The claim ``vp.gram_exp_vjp``: the backward of the exponential layer's Gram form
(:mod:`geoattn.kernels._gram_exp`); :mod:`.vp_gram` lists it.

The layer is :math:`y = f(C)^Tx = xf(M)`, :math:`C = xAx^T`, :math:`M = -AG`, :math:`G = x^Tx` (``A`` skew,
``vp.exp_push_through``), and the runtime's backward is

.. math::
   \bar E = x^T\bar y,\ \bar M = L_f(M^T, \bar E) = [f(B)]_{12},\ B = \begin{pmatrix}M^T & \bar E\\0 & M^T
   \end{pmatrix},\ \bar G = A\bar M,\ \bar x = \bar yf(M)^T + x(\bar G + \bar G^T),\ \bar A = \mathrm{skew}(-\bar MG).

Every quantity above is linear in the power-series coefficients of ``f``, and so is the gradient it must equal; the
claim is checked with ``f`` a polynomial :math:`p(X) = \sum_{j\le m} c_jX^j` of **symbolic** coefficients
``c_j`` (every polynomial of degree ``m`` at once, the Taylor polynomials of ``exp`` among them), against the
gradient of the ``T x T`` layer :math:`p(xAx^T)^Tx` computed independently: SymPy's derivatives where the point
is symbolic, exact dual numbers where it is rational. The block formula :math:`[p(B)]_{12} = L_p(M^T, \bar E)`
is itself part of what is evaluated: the residual takes :math:`\bar M` from ``p(B)``, never from a formula for
:math:`L_p`.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes
from ._lowrank_exact import dual_gradient

__all__ = ["gram_backward", "gram_exp_vjp_identity", "make_gram_exp_vjp_claim"]


def _poly(c: sp.Matrix, X):
    """``sum_j c_j X^j`` for an explicit matrix or a :class:`~geoattn.symbolic.algebra.Dual` ``X``."""
    out = sp.eye(X.rows) * c[0]
    P = None
    for cj in list(c)[1:]:
        P = X if P is None else P * X
        out = out + P * cj
    return out


def _skew(m: sp.Matrix) -> sp.Matrix:
    return (m - m.T) / 2


def gram_backward(X: sp.Matrix, Am: sp.Matrix, Gy: sp.Matrix, f) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    r"""``(y, x_bar, A_bar)`` of the Gram form with ``f`` in place of ``exp``, as the runtime computes them:
    :math:`y = xf(M)`, :math:`\bar M` the block (1, 2) of :math:`f(B)`, then the chain through :math:`M = -AG` and
    :math:`G = x^Tx` (``A`` is taken as given: skew)."""
    k = X.cols
    G = X.T * X
    M = -Am * G
    E = f(M)
    gE = X.T * Gy
    B = sp.Matrix(sp.BlockMatrix([[M.T, gE], [sp.zeros(k, k), M.T]]))
    gM = f(B)[:k, k:]
    gG = Am * gM
    return X * E, Gy * E.T + X * (gG + gG.T), _skew(-gM * G)


def _reference(X: sp.Matrix, Am: sp.Matrix, Gy: sp.Matrix, f) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    r"""``(y, x_bar, skew(A_bar))`` of :math:`\langle\bar y, f(xAx^T)^Tx\rangle`, the ``T x T`` layer: exact dual
    numbers at a rational point; with symbols, SymPy's derivatives in ``x`` and in a general ``A`` (whose gradient's
    skew part is the gradient along skew matrices), taken at the skew ``A``."""
    y = f(X * Am * X.T).T * X
    if not (X.free_symbols | Am.free_symbols):
        gx, ga = dual_gradient(X, Am, Gy, f)
        return y, gx, ga
    k = Am.rows
    Bm = alg.general("b_gen", k, k)
    Lb = sum(((Gy.T * f(X * Bm * X.T).T * X)[i, i] for i in range(X.cols)), sp.Integer(0))
    at = {Bm[i, j]: Am[i, j] for i in range(k) for j in range(k)}
    gx = sp.Matrix(X.rows, X.cols, lambda i, j: sp.diff(Lb, X[i, j]).subs(at))
    gb = sp.Matrix(k, k, lambda i, j: sp.diff(Lb, Bm[i, j]).subs(at))
    return y, gx, _skew(gb)


def gram_exp_vjp_identity(backward=gram_backward) -> MatrixIdentity:
    """The Gram form's ``y, x_bar, A_bar`` minus the ``T x T`` layer's and its independent gradient, stacked, with
    ``f = p`` of symbolic coefficients of degree ``size["m"]``; ``backward`` replaces the runtime's formulas
    (negative controls)."""

    def residual(size, X, Am, Gy, c):
        def f(Y):
            return _poly(c, Y)

        got = backward(X, Am, Gy, f)
        ref = _reference(X, Am, Gy, f)
        res = sp.Matrix.vstack(*[alg.vec_rows(g - r) for g, r in zip(got, ref)])
        return res.applyfunc(sp.expand)

    return MatrixIdentity(
        "Gram-form backward of p(x A x^T)^T x = x p(-A x^T x) - gradient of the T x T layer (p: symbolic coefficients)",
        variables=lambda s: {"X": alg.general("x", s["T"], s["d"]), "Am": alg.skew("a", s["d"]),
                             "Gy": alg.general("gy", s["T"], s["d"]), "c": alg.general("c", s["m"] + 1, 1)},
        residual=residual,
    )


def make_gram_exp_vjp_claim(backward=gram_backward, claim_id: str = "vp.gram_exp_vjp",
                            expected: Level = Level.CHECKED) -> Claim:
    """The claim; ``backward`` replaces the runtime's formulas (negative controls)."""
    return Claim(
        id=claim_id,
        title="the exponential Gram form's backward",
        statement="For y = exp(x A x^T)^T x = x E, E = exp(M), M = -A G, G = x^T x (A skew; vp.exp_push_through) "
        "and incoming gradient y_bar: with E_bar = x^T y_bar, M_bar = L_exp(M^T, E_bar) the block (1,2) of "
        "exp([[M^T, E_bar], [0, M^T]]) and G_bar = A M_bar, x_bar = y_bar E^T + x(G_bar + G_bar^T) and "
        "A_bar = skew(-M_bar G) are the gradient of <y_bar, y> in x and the skew part of its gradient in A. "
        "Checked with exp replaced by every polynomial of the stated degree (symbolic coefficients): the formulas "
        "and the gradient are linear in f's power-series coefficients.",
        latex=r"\bar x = \bar yE^T + x(\bar G + \bar G^T),\ \bar G = A\bar M,\ \bar A = \mathrm{skew}(-\bar MG),\ "
        r"\bar M = \left[\exp\begin{pmatrix}M^T & x^T\bar y\\ 0 & M^T\end{pmatrix}\right]_{12},\ M = -Ax^Tx",
        source="kernel backward of geoattn.kernels._gram_exp (Note [Gram form of the exponential])",
        expected=expected,
        checker=Policy(
            identity=gram_exp_vjp_identity(backward),
            search=at_sizes({"T": 3, "d": 2, "m": 5}, {"T": 4, "d": 3, "m": 4}, {"T": 5, "d": 4, "m": 3},
                            {"T": 2, "d": 4, "m": 4}),
            points=1,
            exact=at_sizes({"T": 2, "d": 2, "m": 3}, {"T": 1, "d": 3, "m": 2}),
            exact_method="exact symbolic identity with f = c_0 + c_1 X + ... + c_m X^m of symbolic coefficients at "
            "T = 2, d = 2, m = 3 and T = 1, d = 3, m = 2 (every entry of x, A, y_bar and c a symbol); exact rational "
            "search up to T = 5, d = 4 and degree 5",
        ),
        notes="The runtime writes these formulas by hand in torch (it is not printed from them); its tests compare "
        "it with the float64 T x T form and with gradcheck. A polynomial of degree m stands for exp: the claim's two "
        "sides are linear in the coefficients of f, so each checked size covers every polynomial of degree <= m; "
        "exp itself, a limit of such polynomials, is not evaluated exactly here (its exact values at rational "
        "skew points are cosines and sines of algebraic numbers).",
    )

