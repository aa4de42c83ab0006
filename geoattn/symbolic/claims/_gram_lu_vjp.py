r"""The claim ``vp.gram_lu_vjp``: the backward of the Gram form for every ``d``, from the forward's ``N``.

The native LU kernels (:mod:`geoattn.kernels._native_lu`, printed by :mod:`geoattn.codegen.gram_lu_c`) compute
:math:`y = x(2N - I)`, :math:`N = (I + GA)^{-T}`, :math:`G = x^Tx`, with ``N`` from an LU factorisation at
``5 <= d <= 16``, where no closed form exists (``vp.gram_closed_form`` is false from ``d = 5``). Their backward is
the bindings ``GRAM_CLOSED_LAYER_VJP`` of :mod:`geoattn.symbolic.expressions` (the token passes printed from them,
the ``d x d`` products written out by the template): :math:`\bar M = -2N\bar P^TN` with :math:`\bar P = x^T\bar y`,
:math:`H = A\bar M^T - \bar MA`, :math:`\bar x = \bar yP^T + xH`, :math:`\bar A = \mathrm{skew}(G\bar M)`. Those
formulas hold for any exact ``N``, which is what this claim states and checks: ``N`` is the exact inverse over
the rationals, and the reference is the exact directional derivative (dual numbers) of the ``T x T`` Cayley layer
:math:`\mathrm{Cayley}(xAx^T)^Tx`, which shares no formula with the kernel. The residual, one scalar per point,
is :math:`\langle\bar x, \dot x\rangle + \langle\bar A, \dot A\rangle` minus the derivative of
:math:`\langle\bar y, y\rangle` along :math:`(\dot x, \dot A)` (``A`` and :math:`\dot A` skew).
"""

from __future__ import annotations

import sympy as sp
from sympy import MatrixSymbol

from .. import algebra as alg
from .. import expressions as ex
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes, run_bindings

__all__ = ["LU_VJP_BINDINGS", "TRANSPOSED_VJP_BINDINGS", "lu_vjp_identity", "lu_vjp_degree_bound",
           "make_lu_vjp_claim"]

_N = MatrixSymbol("N", ex.d, ex.d)
#: the backward the native LU kernels compute (the closed-form layer's backward bindings, for any exact N)
LU_VJP_BINDINGS = ex.GRAM_CLOSED_LAYER_VJP
#: a negative control: the first factor of M_bar transposed (N^T instead of N)
TRANSPOSED_VJP_BINDINGS = [(n, -2 * _N.T * ex.Pbar.T * _N if n == "Mbar" else e) for n, e in LU_VJP_BINDINGS]


def _inner(u: sp.Matrix, v: sp.Matrix):
    return sum((u[i] * v[i] for i in range(len(u))), sp.Integer(0))


def lu_vjp_identity(bindings=LU_VJP_BINDINGS) -> MatrixIdentity:
    """``<x_bar, dx> + <A_bar, dA> - d<y_bar, y>`` along ``(dx, dA)``, with ``(x_bar, A_bar)`` from ``bindings``
    at the exact ``N = (I + x^T x A)^{-T}`` and the derivative of the ``T x T`` layer by dual numbers;
    ``bindings`` replaces the kernel's (negative controls)."""

    def residual(size, X, Am, Gy, dX, dA):
        k, t = size["d"], size["T"]
        M = sp.eye(k) + X.T * X * Am
        N = M.T.inv()
        back = run_bindings(bindings, {ex.x: X, ex.Gy: Gy, ex.A: Am, _N: N}, {ex.d: k, ex.T: t})
        gA = back["gA"]
        lhs = _inner(back["gx"], dX) + _inner((gA - gA.T) / 2, dA)
        xd, ad = alg.Dual(X, dX), alg.Dual(Am, dA)
        y = alg.cayley(xd * ad * xd.T).T * xd  # the T x T layer
        return sp.Matrix([[sp.cancel(lhs - _inner(Gy, y.dv))]])

    return MatrixIdentity(
        "<x_bar, dx> + <A_bar, dA> (Gram backward at N = (I + x^T x A)^{-T}) - d<y_bar, Cayley(x A x^T)^T x>",
        variables=lambda s: {"X": alg.general("x", s["T"], s["d"]), "Am": alg.skew("a", s["d"]),
                             "Gy": alg.general("gy", s["T"], s["d"]), "dX": alg.general("dx", s["T"], s["d"]),
                             "dA": alg.skew("da", s["d"])},
        residual=residual,
    )


def lu_vjp_degree_bound(size: dict) -> int:
    r"""A bound on the degree of the residual's numerator over :math:`\delta^2`, :math:`\delta = \det(I + GA) =
    \det(I + xAx^T)` (Sylvester), in all the variables.

    ``M = I + GA`` has entries of degree 3, its adjugate ``3(d - 1)``, so ``N = adj(M)^T/\delta``;
    :math:`\bar M` has a numerator of degree ``6(d - 1) + 2`` over :math:`\delta^2`, ``x H`` and ``G\bar M`` two
    more, and the pairing with the direction one more: ``6d + 1``. The layer ``Cayley(C)^T x`` has a numerator
    of degree ``3T + 1`` over :math:`\delta`, its derivative ``6T + 1`` over :math:`\delta^2`, paired with
    :math:`\bar y` ``6T + 2``. The sum of the two is a safe bound.
    """
    return 6 * size["d"] + 6 * size["T"] + 3


def make_lu_vjp_claim(bindings=LU_VJP_BINDINGS, claim_id: str = "vp.gram_lu_vjp",
                      expected: Level = Level.CERTIFIED) -> Claim:
    """The claim; ``bindings`` replaces the kernel's backward (negative controls expect ``Level.REFUTED``)."""
    return Claim(
        id=claim_id,
        title="the Gram form's backward from the forward's N, every d",
        statement="For y = x P, P = 2N - I, N = (I + x^T x A)^{-T} (x of shape (T, d), A skew d x d, any d) and "
        "incoming gradient y_bar: with P_bar = x^T y_bar, M_bar = -2 N P_bar^T N and H = A M_bar^T - M_bar A, "
        "x_bar = y_bar P^T + x H and A_bar = skew(x^T x M_bar) are the gradient of <y_bar, y> in x and in "
        "(the skew part of) A: the backward of the native LU kernels for 5 <= d <= 16 and of the native d x d "
        "stage for 17 <= d <= 64 (certified at d = 5 and 6 only; the other widths rest on the formula's "
        "derivation for any d, which the tests confirm in float64 at d = 8, 16, 17, 24, 32).",
        latex=r"N = (I + x^TxA)^{-T}:\ \bar M = -2N(x^T\bar y)^TN,\ \bar x = \bar y(2N - I)^T + x(A\bar M^T - \bar MA),"
        r"\ \bar A = \mathrm{skew}(x^Tx\bar M)",
        source="kernels of geoattn.kernels._native_lu (geoattn.codegen.gram_lu_c; bindings GRAM_CLOSED_LAYER_VJP)",
        expected=expected,
        checker=Policy(
            identity=lu_vjp_identity(bindings),
            search=at_sizes({"T": 6, "d": 5}),
            points=1,
            certify=at_sizes({"T": 6, "d": 5}, {"T": 3, "d": 6}),
            certify_points=2,
            degree_bound=lu_vjp_degree_bound,
            certify_method="exact directional derivative of the T x T layer (dual numbers over QQ) against the "
            "kernel's backward at the exact inverse, along a random direction, at random integer points, "
            "d = 5 (T = 6) and d = 6 (T = 3: x of rank 3 < d)",
        ),
        notes="Both sides are linear in the direction (dx, dA), so a nonzero gradient difference makes the "
        "residual a nonzero rational function of all the variables; delta >= 1 for skew A, so every point is "
        "valid. The kernel reads N, never the LU factors: the LU enters only through N and the residual check "
        "(Note [closed-form residual check] in geoattn.kernels._gram).",
    )
