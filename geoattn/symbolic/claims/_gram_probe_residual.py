r"""The claim ``vp.gram_probe_residual``: the wide stage's residual check applied to probe vectors.

The native ``d x d`` stage for ``17 <= d <= 64`` (:mod:`geoattn.kernels._native_lu_big`,
:mod:`geoattn.codegen.gram_lu_big_c`) accepts a sample's ``N`` when the residual :math:`R = (I + GA)^TN - I` is
small. Forming ``R`` costs two ``d x d`` products (``AG`` and :math:`(I - AG)N`); the stage instead applies it to a
``d x 8`` matrix ``V`` of fixed signs (the probes) by three matrix-vector passes, from right to left:

.. math:: RV = (I - A(G(NV))) - V, \qquad A^T = -A,\ G^T = G,

which is the claim (``N`` and ``V`` general: it holds for whatever ``N`` the elimination left). What the check then
guarantees follows from a sign argument, not from the claim: for a row ``r`` of ``R``, an index ``j`` and a probe
``v`` with entries :math:`\pm 1` chosen independently of ``r``, write :math:`r\cdot v = r_jv_j + s` with ``s``
independent of :math:`v_j`; one of :math:`|s + r_j|`, :math:`|s - r_j|` is at least :math:`|r_j|` (their sum is),
so :math:`|r\cdot v| \ge |r_j|` with probability at least 1/2. With eight independent probes a residual entry
above the tolerance escapes all of them with probability at most :math:`2^{-8}`; conversely
:math:`\max|RV| \le d\max|R|`, so an ``N`` whose residual entries all lie below ``tol / d`` always passes. The
probes are a fixed table of signs (the same for every sample), independent of the rounding errors that make
``R``; a residual whose rows are orthogonal to the probes passes them whatever its size, so the stage no longer
accepts on the probes: it accepts on an upper bound of ``max |R|`` (``vp.gram_lu_residual_bound``,
``vp.gram_lu_measured_bound``) and keeps the probes as a guard (the value it reports is never below
:math:`\max|RV|`). The negative control writes ``I + AG`` for :math:`(I + GA)^T`, a sign of ``A^T`` lost.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes

__all__ = ["probe_identity", "make_probe_residual_claim"]


def probe_identity(a_sign: int = -1) -> MatrixIdentity:
    """``(N V - A (G (N V)) - V) - ((I + G A)^T N - I) V`` for skew ``A``, symmetric ``G``, general ``N`` and a
    ``d x 2`` ``V``; ``a_sign = +1`` is the negative control (``I + AG`` in place of ``I - AG``)."""

    def residual(size, G, Am, N, V):
        eye = sp.eye(size["d"])
        U = N * V
        probe = U + a_sign * Am * (G * U) - V
        return (probe - ((eye + G * Am).T * N - eye) * V).applyfunc(sp.expand)

    sign = "-" if a_sign < 0 else "+"
    return MatrixIdentity(
        f"N V {sign} A G N V - V - ((I + G A)^T N - I) V",
        variables=lambda s: {"G": alg.symmetric("g", s["d"]), "Am": alg.skew("a", s["d"]),
                             "N": alg.general("n", s["d"], s["d"]), "V": alg.general("v", s["d"], 2)},
        residual=residual,
    )


def make_probe_residual_claim(a_sign: int = -1, claim_id: str = "vp.gram_probe_residual",
                              expected: Level = Level.CHECKED) -> Claim:
    """The claim; ``a_sign = +1`` is the negative control (expected ``Level.REFUTED``)."""
    return Claim(
        id=claim_id,
        title="the residual check of the wide d x d stage, applied to probe vectors",
        statement="For skew A, symmetric G and any N and V: N V - A (G (N V)) - V = ((I + G A)^T N - I) V, the "
        "residual of N applied to V; the native d x d stage for 17 <= d <= 64 checks max |R V| for eight fixed "
        "sign vectors in place of max |R| (three matrix-vector passes in place of two d x d products).",
        latex=r"NV - A(G(NV)) - V = \left((I + GA)^TN - I\right)V \quad (A^T = -A,\ G^T = G)",
        source="kernels of geoattn.kernels._native_lu_big (geoattn.codegen.gram_lu_big_c, probe_residual)",
        expected=expected,
        checker=Policy(
            identity=probe_identity(a_sign),
            search=at_sizes({"d": 3}),
            points=1,
            exact=at_sizes({"d": 2}, {"d": 3}, {"d": 4}),
            exact_method="exact symbolic identity at d = 2, 3, 4 (symbolic G, A, N and a d x 2 V)",
        ),
        notes="The identity is linear in N and V and uses only A^T = -A and G^T = G, so the explicit sizes test "
        "every entry's pattern. What the probes guarantee (module docstring): an entry of R above the tolerance "
        "passes all eight with probability at most 2^-8 over the choice of signs, never for an R orthogonal to "
        "them; the stage accepts on an upper bound of max |R| (vp.gram_lu_residual_bound) and keeps the probes as "
        "a guard against a departure of its code from the analysed steps.",
    )
