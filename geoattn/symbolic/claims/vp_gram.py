r"""Claims of the closed-form Gram kernels ``vp_gram_closed`` and ``vp_gram_closed_vjp``
(Note [closed-form Gram solve] in :mod:`geoattn.symbolic.expressions`).

* ``vp.gram_closed_form``: for ``d <= 4``, symmetric ``G`` and skew ``A``, the kernel's ``N`` is
  :math:`(I + GA)^{-T}` and ``P = 2N - I``. The residual :math:`(I + GA)^TN_u - D\,I` (``I + GA`` built
  independently of the kernel, ``N_u`` its numerator binding, ``D`` its denominator) is a polynomial in the
  entries of ``G`` and ``A``; it is checked to vanish identically at every ``d`` the claim covers, with
  :math:`DN - N_u` and :math:`P - 2N + I` (``G`` a generic symmetric matrix, so every ``T`` and
  every rank of ``x`` in ``G = x^Tx`` is covered at once). At ``d = 5`` it does not vanish, and the tests keep
  that as the negative control.
* ``vp.gram_closed_form_vjp``: the backward bindings give the gradient of :math:`\langle\bar y, y\rangle` in
  ``x`` and in (the skew part of) ``A``, compared with the exact dual-number gradient of the ``T x T`` Cayley
  layer :math:`\mathrm{Cayley}(xAx^T)^Tx`, which shares no formula with them.
* ``vp.gram_exp_vjp``: the backward of the exponential layer's Gram form :math:`y = x\exp(-Ax^Tx)`
  (:mod:`geoattn.kernels._gram_exp`), stated and checked in :mod:`geoattn.symbolic.claims._gram_exp`.
* ``vp.gram_exp_closed_form``, ``vp.gram_exp_closed_form_vjp``: its closed form at ``d = 3``
  (:math:`\exp(M) = I + aM + bM^2`, :mod:`geoattn.kernels._gram_exp_closed`) and that form's backward, stated and
  checked in :mod:`geoattn.symbolic.claims._gram_exp_closed`.
* ``vp.gram_lu_vjp``: the Gram form's backward from the forward's exact ``N`` at every ``d`` (the native LU
  kernels for ``5 <= d <= 16``), stated and checked in :mod:`geoattn.symbolic.claims._gram_lu_vjp`.
* ``vp.gram_lu_woodbury``: the pivot-free form of :math:`N = (I + GA)^{-T}` with :math:`G = FF^T` those kernels
  compute first, stated and checked in :mod:`geoattn.symbolic.claims._gram_lu_woodbury`.
* ``vp.gram_lu_measured_bound``: the wide ``d x d`` stage's residual split exactly into the measured error of its
  solve and its steps' rounding errors, the ground of its a posteriori bound
  (:mod:`geoattn.symbolic.claims._gram_residual_bound`).
* ``vp.gram_exp_closed_quartic``, ``vp.gram_exp_closed_quartic_vjp``: the same at ``d = 4``
  (:math:`\exp(M) = \sum_{i<4}c_i(p, q)M^i`, :mod:`geoattn.kernels._gram_exp_closed4`), stated and checked in
  :mod:`geoattn.symbolic.claims._gram_exp_closed4`.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import Identity, MatrixSymbol
from sympy.polys.matrices import DomainMatrix

from .. import algebra as alg
from .. import expressions as ex
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes, grid, run_bindings
from ._gram_exp import make_gram_exp_vjp_claim
from ._gram_exp_closed import make_closed_form_claim, make_closed_vjp_claim
from ._gram_lu_vjp import make_lu_vjp_claim
from ._gram_lu_woodbury import make_woodbury_claim
from ._gram_residual_bound import make_measured_bound_claim
from ._gram_exp_closed4 import make_closed4_vjp_claim, make_closed_form4_claim
from ._gram_exp_native import make_reverse_claim, make_truncation_claim
from ._lowrank_exact import dual_gradient

__all__ = ["CLAIMS", "closed_form_identity", "closed_vjp_identity"]


def _closed(Gm: sp.Matrix, Am: sp.Matrix, k: int) -> dict:
    return run_bindings(ex.GRAM_CLOSED, {ex.Gram: Gm, ex.A: Am}, {ex.d: k})


def _field(*mats: sp.Matrix):
    """The rational functions of the matrices' symbols (the rationals when they have none)."""
    syms = sorted(set().union(*(m.free_symbols for m in mats)), key=sp.default_sort_key)
    return sp.ZZ.frac_field(*syms) if syms else sp.QQ


_USED = ("J2", "Nu", "N", "P")  # the bindings the claim reads (the diagnostic R after them is not evaluated)


def _closed_over(F, Gd: DomainMatrix, Ad: DomainMatrix, k: int) -> dict:
    """The bindings of ``GRAM_CLOSED`` evaluated in order over the field ``F`` (every entry a reduced fraction),
    up to the last one the claim reads."""
    table = {s.name: s for _, expr in ex.GRAM_CLOSED for s in sp.sympify(expr).atoms(MatrixSymbol)}
    env, out = {ex.Gram: Gd, ex.A: Ad}, {}
    for name, expr in ex.GRAM_CLOSED:
        if all(u in out for u in _USED):
            break
        out[name] = ex.evaluate(expr, env, {ex.d: k}, field=F)
        if name in table:
            env[table[name]] = out[name]
    return out


def closed_form_identity() -> MatrixIdentity:
    """``[M^T N_u - D I; D N - N_u; P - 2N + I]`` with ``M = I + G A`` built here, independently of the kernel, from
    a symmetric ``G`` and a skew ``A`` (all zero exactly when the kernel's ``N`` is ``(I + G A)^{-T}`` and its ``P``
    is ``2N - I``; ``N_u`` and ``D`` are the kernel's numerator binding and denominator). The kernel's diagnostic
    ``R = (I - J) N - I`` is not part of the claim; the tests compare it with :math:`(I + GA)^TN - I` in float64.

    The bindings are evaluated over the field of rational functions of the entries of ``G`` and ``A`` (the
    rationals at a point), where every entry is kept as a reduced fraction of polynomials, so the residual is zero
    exactly when each of its entries is the zero element (about 2 s at d = 4, against 11 s for SymPy's
    expressions and their simplification)."""

    def residual(size, Gm, Am):
        k = size["d"]
        F = _field(Gm, Am)

        def conv(m):
            return DomainMatrix.from_list_sympy(m.rows, m.cols, m.tolist()).convert_to(F)

        out = _closed_over(F, conv(Gm), conv(Am), k)
        # D I, evaluated from the kernel's own denominator expression
        Dm = ex.evaluate(ex.GRAM_CLOSED_DET * Identity(ex.d), {MatrixSymbol("J2", ex.d, ex.d): out["J2"]}, {ex.d: k},
                         field=F)
        e = DomainMatrix.eye(k, F)
        M = e + conv(Gm) * conv(Am)
        two, det = F.convert(sp.Integer(2)), Dm[0, 0].element
        # D N - N_u written as (N - N_u / D) D: the same matrix, and where it is zero the product costs nothing
        # (multiplying the symbolic fractions N by D directly takes a minute at d = 4)
        row2 = (out["N"] - out["Nu"] * (F.one / det)) * det
        res = DomainMatrix.vstack(M.transpose() * out["Nu"] - Dm, row2, out["P"] - out["N"] * two + e)
        return res.to_Matrix()

    return MatrixIdentity(
        "[(I + G A)^T N_u - D I; D N - N_u; P - (2N - I)]",
        variables=lambda s: {"Gm": alg.symmetric("g", s["d"]), "Am": alg.skew("a", s["d"])},
        residual=residual,
    )


def _skew_from(syms: dict, k: int) -> sp.Matrix:
    return sp.Matrix(k, k, lambda i, j: syms[i, j] if i < j else (-syms[j, i] if i > j else 0))


def _reference_gradient(X: sp.Matrix, Am: sp.Matrix, Gy: sp.Matrix) -> tuple[sp.Matrix, sp.Matrix]:
    r"""``(x_bar, skew(A_bar))`` of :math:`L = \langle\bar y, \mathrm{Cayley}(xAx^T)^Tx\rangle` for skew ``A``: exact
    dual numbers at a rational point; with symbols, SymPy's derivatives in ``x`` and in the entries above the
    diagonal of ``A`` (:math:`\partial L/\partial a_{ij} = \bar A_{ij} - \bar A_{ji} = 2\,\mathrm{skew}(\bar A)_{ij}`)."""
    if not (X.free_symbols | Am.free_symbols):
        return dual_gradient(X, Am, Gy, alg.cayley)
    k = Am.rows
    syms = {(i, j): sp.Symbol(f"s_{i}_{j}", real=True) for i in range(k) for j in range(i + 1, k)}
    As = _skew_from(syms, k)
    L = sum(((Gy.T * alg.cayley(X * As * X.T).T * X)[i, i] for i in range(X.cols)), sp.Integer(0))
    at = {syms[i, j]: Am[i, j] for (i, j) in syms}
    gx = sp.Matrix(X.rows, X.cols, lambda i, j: sp.diff(L, X[i, j]).subs(at))
    ga = _skew_from({ij: sp.diff(L, s).subs(at) / 2 for ij, s in syms.items()}, k)
    return gx, ga


def closed_vjp_identity() -> MatrixIdentity:
    """The closed-form layer's ``y`` and its backward's ``(x_bar, A_bar)`` (the bindings ``GRAM_CLOSED_LAYER`` and
    ``GRAM_CLOSED_LAYER_VJP``, the sources of the native kernels) minus the ``T x T`` Cayley layer and its exact
    dual-number gradient, stacked."""

    def residual(size, X, Am, Gy):
        k, t = size["d"], X.rows
        sizes = {ex.d: k, ex.T: t}
        fwd = run_bindings(ex.GRAM_CLOSED_LAYER, {ex.x: X, ex.A: Am}, sizes)
        back = run_bindings(ex.GRAM_CLOSED_LAYER_VJP, {ex.x: X, ex.Gy: Gy, ex.A: Am,
                                                       MatrixSymbol("N", ex.d, ex.d): fwd["N"]}, sizes)
        gx, ga = back["gx"], back["gA"]
        dx, da = _reference_gradient(X, Am, Gy)
        y = alg.cayley(X * Am * X.T).T * X  # the T x T layer
        res = sp.Matrix.vstack((fwd["y"] - y).reshape(t * k, 1), (gx - dx).reshape(t * k, 1),
                               ((ga - ga.T) / 2 - da).reshape(k * k, 1))
        return res.applyfunc(sp.cancel)

    def variables(s):
        t, k = s["T"], s["d"]
        X = alg.general("x", t, k)
        if s.get("rank1"):  # every row a multiple of the first
            X = sp.Matrix(t, k, lambda i, j: sp.Symbol(f"r_{i}", real=True) * sp.Symbol(f"x_0_{j}", real=True))
        return {"X": X, "Am": alg.skew("a", k), "Gy": alg.general("gy", t, k)}

    return MatrixIdentity("closed-form Gram backward - dual-number gradient of the T x T layer",
                          variables=variables, residual=residual)


CLAIMS = [
    Claim(
        id="vp.gram_closed_form",
        title="the Gram solve in closed form for d <= 4",
        statement="For d <= 4, symmetric G and skew A, with J = A G, c = 1 - Tr(J^2)/2 and "
        "D = c + (Tr(J^2)^2 - 2 Tr(J^4))/8: (I + G A)^{-T} = (c I + J^2)(I + J)/D, the kernel vp_gram_closed "
        "(Cayley--Hamilton for J, whose odd power traces vanish).",
        latex=r"d \le 4:\ (I + GA)^{-T} = \frac{(cI + J^2)(I + J)}{c + \tfrac18(\mathrm{Tr}(J^2)^2 - 2\mathrm{Tr}(J^4))},"
        r"\ J = AG,\ c = 1 - \tfrac12\mathrm{Tr}(J^2)",
        source="kernel vp_gram_closed (geoattn.symbolic.expressions)",
        expected=Level.CHECKED,
        checker=Policy(identity=closed_form_identity(), exact=grid(d=[1, 2, 3, 4]),
                       exact_method="exact symbolic identity at every size the claim covers (d = 1, 2, 3, 4; G a "
                       "generic symmetric matrix, so every T and rank of x)"),
        notes="False from d = 5 on (J^4 + c2 J^2 + c4 I = 0 needs d <= 4); the runtime takes it only for d <= 4. "
        "For G = x^T x, D = det(I_d + x^T x A) = det(I_T + x A x^T) >= 1 (Sylvester's determinant identity; "
        "x A x^T is skew), so the division is always defined.",
    ),
    Claim(
        id="vp.gram_closed_form_vjp",
        title="the closed-form Gram backward",
        statement="The layer bindings (GRAM_CLOSED_LAYER, GRAM_CLOSED_LAYER_VJP: the sources of the kernels and of "
        "the native CPU kernels) give y = Cayley(x A x^T)^T x, and for y = x P with P = 2N - I, "
        "N = (I + x^T x A)^{-T} (A skew, d <= 4) and incoming gradient y_bar: x_bar = y_bar P^T + x H, A_bar = skew(G M_bar) with M_bar = -2 N (x^T y_bar)^T N and "
        "H = A M_bar^T - M_bar A (kernel vp_gram_closed_vjp), the gradient of <y_bar, y>.",
        latex=r"\bar x = \bar yP^T + x(A\bar M^T - \bar MA),\ \bar A = \mathrm{skew}(G\bar M),\ "
        r"\bar M = -2N(x^T\bar y)^TN",
        source="kernel vp_gram_closed_vjp (geoattn.symbolic.expressions)",
        expected=Level.CHECKED,
        checker=Policy(
            identity=closed_vjp_identity(),
            search=at_sizes({"T": 3, "d": 2}, {"T": 2, "d": 3}, {"T": 5, "d": 4}, {"T": 3, "d": 4},
                            {"T": 4, "d": 3, "rank1": 1}),
            points=2,
            exact=at_sizes({"T": 1, "d": 2}, {"T": 1, "d": 3}),
            exact_method="exact symbolic identity at T = 1 (d = 2, 3; the symbolic T = 2, d = 2 check takes 38 s), "
            "exact rational search up to T = 5, d = 4",
        ),
        notes="The reference differentiates the T x T layer, so it shares no formula with the kernel; at rational "
        "points it uses exact dual numbers.",
    ),
    make_gram_exp_vjp_claim(),
    make_closed_form_claim(),
    make_closed_vjp_claim(),
    make_lu_vjp_claim(),
    make_woodbury_claim(),
    make_measured_bound_claim(),
    make_closed_form4_claim(),
    make_closed4_vjp_claim(),
    make_truncation_claim(),
    make_reverse_claim(),
]
