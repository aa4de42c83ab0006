r"""The fused route's VJP of symplectic attention at explicit matrices (not public).

Note [fused symplectic attention] in :mod:`geoattn.kernels._symattn_fused` states the forms; here they are
written entry by entry in SymPy, for the ``symattn.fused_vjp*`` claims to compare with
:math:`\partial\langle V, U\rangle` of the update.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..symattn import ACTIVATIONS
from ._exp_exact import ExpField
from ._symattn_exact import _layer_update, softmax, stack

__all__ = ["fused_vjp", "fused_vjp_residual", "FAULTS"]

#: deliberate mistakes a test injects into :func:`fused_vjp` (each must be refuted): the ``s F`` term dropped, the
#: row-side sums read by ``G^T`` instead of ``G``
FAULTS = ("drop_sF", "row_by_GT")


def _row(m: sp.Matrix, i: int) -> sp.Matrix:
    return m[i, :]


def fused_vjp(z: sp.Matrix, A: sp.Matrix, V: sp.Matrix, G: sp.Matrix, over: str, *, shared: bool = False,
              fault: str | None = None):
    r"""The fused VJP (row layout: ``z``, ``V`` are ``T x n``): returns :math:`(\bar z, \bar A)`.

    ``shared``: the column-side sums read ``G`` in place of ``G^T`` (the route's single product over all
    entries with a symmetric ``A``). ``fault``: one of :data:`FAULTS`, for negative controls."""
    T, n = z.shape
    Gt = G if shared else G.T
    Gr = G.T if fault == "row_by_GT" else G
    a, b = V * A, z * A
    ab, zv = a.row_join(b), z.row_join(V)
    H, F = Gt * V, Gt * z
    HA, FA = H * A, F * A
    s = [(_row(HA, j) * _row(z, j).T)[0] + (_row(FA, j) * _row(V, j).T)[0] for j in range(T)]
    if over == "all":
        s = [sum(s)] * T
    P = Gr * (V - sp.diag(*s) * z)
    R = sp.zeros(T, n)
    for k in range(T):
        M = sum((Gr[k, j] * _row(z, j).T * _row(zv, j) for j in range(T)), sp.zeros(n, 2 * n))
        N = sum((Gt[k, i] * _row(z, i).T * _row(ab, i) for i in range(T)), sp.zeros(n, 2 * n))
        P[k, :] = P[k, :] + (M * _row(ab, k).T).T
        sF = sp.zeros(1, n) if fault == "drop_sF" else s[k] * _row(F, k)
        R[k, :] = _row(H, k) + (N * _row(zv, k).T).T - sF
    return P * A.T + R * A, z.T * P + H.T * z


def _fixed_v(T: int, n: int) -> sp.Matrix:
    """A rational ``V`` with distinct nonzero entries of both signs (a counterexample's ``V``)."""
    return sp.Matrix(T, n, lambda i, k: sp.Rational((-1) ** (i + k) * (i + 2 * k + 1), 2))


def fused_vjp_residual(shared: bool = False, fault: str | None = None, activations=tuple(ACTIVATIONS),
                       symbolic_v: bool = True):
    r"""``f -> `` the fused VJP minus :math:`\partial\langle V, U\rangle/\partial z` and ``/\partial A`` of the
    generated update, stacked over ``activations`` (``shared``: only those over all entries). ``V`` is a matrix
    of symbols (an identity for every ``V``), or with ``symbolic_v=False`` the rational :func:`_fixed_v` (so that
    a counterexample is a number)."""

    def residual(f: ExpField) -> sp.Matrix:
        T, n = f.Q.cols, f.Q.rows
        Vm = alg.general("v", T, n) if symbolic_v else _fixed_v(T, n)
        parts = []
        for act in activations:
            over, one = ACTIVATIONS[act]
            if shared and over != "all":
                continue
            pairing = sum(Vm.T.multiply_elementwise(_layer_update(act, f)))
            want_z = f.grad(pairing).T
            want_A = sp.Matrix(f.A.rows, f.A.cols, lambda i, j, p=pairing: f.d(p, f.A[i, j]))
            gz, gA = fused_vjp(f.Q.T, f.A, Vm, softmax(f, over, one), over, shared=shared, fault=fault)
            if f.A == f.A.T:  # one symbol for A_ij and A_ji: its derivative is the sum of both entries'
                gA = gA + gA.T - sp.diag(*gA.diagonal())
            parts += [gz - want_z, gA - want_A]
        return stack(parts)

    return residual
