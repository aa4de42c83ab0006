r"""The ``native`` route of symplectic attention at explicit matrices (not public).

Note [native symplectic attention] in :mod:`geoattn.kernels._symattn_native` states the compiled kernel's backward
row by row: with :math:`s = \tfrac12\sum_i V_i\cdot U_i`, :math:`h_i = \sum_j G_{ij}(V_j + (V_i\cdot a_j - s)z_j)`
and :math:`y_i = \sum_j G_{ij}(a_i\cdot V_j - s)a_j`, the gradients are :math:`\bar z = 2(y + hA)` and
:math:`\bar A = z^Th + h^Tz`. Here it is written in SymPy (every :math:`e^{C_{mn}}` a symbol of the
:class:`~._exp_exact.ExpField`), for the ``symattn.native_vjp`` claims to compare with
:math:`\partial\langle V, U\rangle` of the generated update.
"""

from __future__ import annotations

import sympy as sp

from ._exp_exact import ExpField
from ._symattn_exact import softmax
from ._symattn_sdpa_exact import sdpa_vjp_residual

__all__ = ["native_vjp", "native_vjp_residual", "NATIVE_FAULTS"]

#: deliberate mistakes a test injects into :func:`native_vjp` (each must be refuted): the shift ``s`` taken as the
#: whole pairing :math:`\sum_i V_i\cdot U_i` instead of half of it
NATIVE_FAULTS = ("unhalved",)


def _dot(x: sp.Matrix, i: int, y: sp.Matrix, j: int):
    return (x[i, :] * y[j, :].T)[0]


def native_vjp(f: ExpField, V: sp.Matrix, one: bool, fault: str | None = None):
    r"""The kernel's backward for the incoming gradient ``V`` (row layout, ``T x n``): :math:`(\bar z, \bar A)`."""
    z = f.Q.T
    a = z * f.A
    T, n = z.rows, z.cols
    G = softmax(f, "all", one)
    U = 2 * G * a
    s = sum(V.multiply_elementwise(U)) * (1 if fault == "unhalved" else sp.Rational(1, 2))
    h = sp.zeros(T, n)
    y = sp.zeros(T, n)
    for i in range(T):
        for j in range(T):
            h[i, :] += G[i, j] * (V[j, :] + (_dot(V, i, a, j) - s) * z[j, :])
            y[i, :] += G[i, j] * (_dot(a, i, V, j) - s) * a[j, :]
    gA = z.T * h
    return 2 * (y + h * f.A), gA + gA.T


def native_vjp_residual(fault: str | None = None, symbolic_v: bool = True):
    r"""``f ->`` the kernel's backward minus :math:`\partial\langle V, U\rangle/\partial z` and ``/\partial A`` of
    the generated update, over the softmaxes of all entries (as :func:`~._symattn_sdpa_exact.sdpa_vjp_residual`)."""
    return sdpa_vjp_residual(fault, symbolic_v, vjp=native_vjp)
