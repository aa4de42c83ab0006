r"""The ``dense`` route of symplectic attention at explicit matrices (not public).

Note [dense symplectic attention] in :mod:`geoattn.kernels._symattn_dense` states the backward of the update
:math:`2Ga` (:math:`a = zA`, :math:`G` the softmax over all entries of :math:`C = az^T`) by the chain rule of that
form. Here it is written in SymPy (every :math:`e^{C_{mn}}` a symbol of the :class:`~._exp_exact.ExpField`), for the
``symattn.dense_vjp`` claims to compare with :math:`\partial\langle V, U\rangle` of the generated update.
"""

from __future__ import annotations

import sympy as sp

from ._exp_exact import ExpField
from ._symattn_exact import softmax
from ._symattn_sdpa_exact import sdpa_vjp_residual

__all__ = ["dense_vjp", "dense_vjp_residual", "DENSE_FAULTS"]

#: deliberate mistakes a test injects into :func:`dense_vjp` (each must be refuted): the softmax backward's shift
#: by :math:`\langle G, \bar G'\rangle` left out, the weighting's gradient taken without its symmetric part
DENSE_FAULTS = ("unshifted", "unsymmetrised")


def dense_vjp(f: ExpField, V: sp.Matrix, one: bool, fault: str | None = None):
    r"""The route's backward for the incoming gradient ``V`` (row layout, ``T x n``): :math:`(\bar z, \bar A)`."""
    z = f.Q.T
    a = z * f.A
    G = softmax(f, "all", one)
    gG = V * a.T  # half the gradient of G: U = 2 G a
    shift = 0 if fault == "unshifted" else sum(G.multiply_elementwise(gG))
    gC = G.multiply_elementwise(gG) - shift * G
    h = G * V + gC * z
    gz = 2 * (gC.T * a + h * f.A)
    gA = z.T * h
    return gz, (2 * gA if fault == "unsymmetrised" else gA + gA.T)


def dense_vjp_residual(fault: str | None = None, symbolic_v: bool = True):
    r"""``f ->`` the route's backward minus :math:`\partial\langle V, U\rangle/\partial z` and ``/\partial A`` of the
    generated update, over the softmaxes of all entries (as :func:`~._symattn_sdpa_exact.sdpa_vjp_residual`)."""
    return sdpa_vjp_residual(fault, symbolic_v, vjp=dense_vjp)
