r"""The ``sdpa`` route of symplectic attention at explicit matrices (not public).

Note [symplectic attention through SDPA] in :mod:`geoattn.kernels._symattn_sdpa` states the forms: the update
over all entries as :math:`2w\odot O` from one attention call's output :math:`O` and log-sum-exp :math:`\ell`, and
its backward with :math:`\bar\ell` folded into the attention backward's row term. Here they are written entry by
entry in SymPy (every :math:`e^{C_{mn}}` a symbol of the :class:`~._exp_exact.ExpField`, so :math:`e^{\ell_i}` is
the row sum), for the ``symattn.sdpa_*`` claims to compare with the generated update and :math:`\partial\langle V,
U\rangle`.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..symattn import ACTIVATIONS
from ._exp_exact import ExpField
from ._symattn_exact import _layer_update, stack

__all__ = ["sdpa_update", "sdpa_vjp", "sdpa_form_residual", "sdpa_vjp_residual", "transpose_residual", "FAULTS",
           "ALL_ENTRIES"]

#: the activations the route serves: the softmaxes over all entries
ALL_ENTRIES = tuple(a for a, (over, _) in ACTIVATIONS.items() if over == "all")
#: deliberate mistakes a test injects into :func:`sdpa_vjp` (each must be refuted): the log-sum-exp's gradient
#: left out of the attention backward, the weighting's gradient taken without its symmetric part
FAULTS = ("drop_lse", "unsymmetrised")


def _forward(f: ExpField, one: bool):
    """``(z, a, P, O, w)`` of the route: rows ``z``, queries and values ``a = zA``, the row softmax ``P``, the
    attention output ``O = Pa`` and the weights :math:`w_i = e^{\\ell_i}/(\\epsilon + \\sum_k e^{\\ell_k})`."""
    z = f.Q.T
    a = z * f.A
    T = z.rows
    rows = [sum(f.E[i, :]) for i in range(T)]  # e^{lse_i}
    P = sp.Matrix(T, T, lambda i, j: f.E[i, j] / rows[i])
    total = (1 if one else 0) + sum(rows)
    w = [r / total for r in rows]
    return z, a, P, P * a, w


def sdpa_update(f: ExpField, one: bool) -> sp.Matrix:
    """The route's update :math:`2w\\odot O` in the column layout of the field (``n x T``)."""
    _, _, _, O, w = _forward(f, one)
    return (2 * sp.diag(*w) * O).T


def sdpa_vjp(f: ExpField, V: sp.Matrix, one: bool, fault: str | None = None):
    r"""The route's backward for the incoming gradient ``V`` (row layout, ``T x n``): :math:`(\bar z, \bar A)`."""
    z, a, P, O, w = _forward(f, one)
    T = z.rows
    gO = 2 * sp.diag(*w) * V
    gw = [2 * (V[i, :] * O[i, :].T)[0] for i in range(T)]
    mean = sum(wi * gi for wi, gi in zip(w, gw))
    glse = [0] * T if fault == "drop_lse" else [w[i] * (gw[i] - mean) for i in range(T)]
    D = [(gO[i, :] * O[i, :].T)[0] - glse[i] for i in range(T)]
    gS = sp.Matrix(T, T, lambda i, j: P[i, j] * ((gO[i, :] * a[j, :].T)[0] - D[i]))
    ga = gS * z + P.T * gO  # the queries' and the values' gradients: both are a
    gz = gS.T * a + ga * f.A.T
    gA = z.T * ga
    return gz, (gA if fault == "unsymmetrised" else (gA + gA.T) / 2)


def sdpa_form_residual(f: ExpField) -> sp.Matrix:
    """The route's update minus the generated update, for each softmax over all entries."""
    return stack([sdpa_update(f, ACTIVATIONS[act][1]) - _layer_update(act, f) for act in ALL_ENTRIES])


def _fixed_v(T: int, n: int) -> sp.Matrix:
    """A rational ``V`` with distinct nonzero entries of both signs (a counterexample's ``V``)."""
    return sp.Matrix(T, n, lambda i, k: sp.Rational((-1) ** (i + k) * (2 * i + k + 1), 3))


def sdpa_vjp_residual(fault: str | None = None, symbolic_v: bool = True, vjp=sdpa_vjp):
    r"""``f ->`` the route's backward minus :math:`\partial\langle V, U\rangle/\partial z` and ``/\partial A`` of the
    generated update, over the softmaxes of all entries (``V`` symbols, or the rational :func:`_fixed_v` so that a
    counterexample is a number). ``vjp(f, V, one, fault)`` is the backward compared: :func:`sdpa_vjp`, or another
    route's form of the same gradient."""

    def residual(f: ExpField) -> sp.Matrix:
        T, n = f.Q.cols, f.Q.rows
        Vm = alg.general("v", T, n) if symbolic_v else _fixed_v(T, n)
        parts = []
        for act in ALL_ENTRIES:
            pairing = sum(Vm.T.multiply_elementwise(_layer_update(act, f)))
            want_z = f.grad(pairing).T
            want_A = sp.Matrix(f.A.rows, f.A.cols, lambda i, j, p=pairing: f.d(p, f.A[i, j]))
            gz, gA = vjp(f, Vm, ACTIVATIONS[act][1], fault)
            if f.A == f.A.T:  # one symbol for A_ij and A_ji: its derivative is the sum of both entries'
                gA = gA + gA.T - sp.diag(*gA.diagonal())
            parts += [gz - want_z, gA - want_A]
        return stack(parts)

    return residual


def transpose_residual(activations=ALL_ENTRIES):
    r"""``f ->`` the generated update at :math:`A^T` minus the update at :math:`A`, for ``activations`` (the
    exponential symbols of the transposed field renamed to the field's own: :math:`C(A^T) = C(A)^T`)."""

    def residual(f: ExpField) -> sp.Matrix:
        g = ExpField(f.Q, f.A.T)
        table = {c: s for s, c in f.logits.items()}
        rename = {s: table[c] for s, c in g.logits.items()}
        return stack([_layer_update(act, g).xreplace(rename) - _layer_update(act, f) for act in activations])

    return residual
