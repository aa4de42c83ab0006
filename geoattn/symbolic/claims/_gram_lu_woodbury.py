r"""The claim ``vp.gram_lu_woodbury``: the pivot-free form of ``N = (I + GA)^{-T}`` in the native LU kernels.

The native LU kernels (:mod:`geoattn.kernels._native_lu`, the ``d x d`` stage of
:mod:`geoattn.codegen.gram_lu_stage`, for ``5 <= d <= 16``) and the native ``d x d`` stage for ``17 <= d <= 64``
(:mod:`geoattn.kernels._native_lu_big`, :mod:`geoattn.codegen.gram_lu_big_c`) factor :math:`G = x^Tx = FF^T`
(Cholesky, ``F`` lower triangular, a column set to zero where its pivot is not positive) and compute

.. math:: N = I + VZ, \qquad V = AF, \qquad (I - K)Z = F^T, \qquad K = F^TAF,

which is :math:`(I + FF^TA)^{-T}` for every square ``F`` and skew ``A`` (the push-through identity
:math:`(I + F\,F^TA)^{-1} = I - F(I + F^TAF)^{-1}F^TA`, transposed with :math:`A^T = -A`, :math:`K^T = -K`).
``K`` is skew, so :math:`I - K` is invertible for every real ``F`` and its symmetric part is ``I``: Gaussian
elimination without pivoting meets pivots of real part at least 1. The claim's residual is
:math:`(I + FF^TA)^T N - I` with ``F`` a general square matrix (so every rank of ``G`` is covered) and ``A``
skew; the negative control flips the sign of ``K`` (both generators' fault flag prints the same mistake).
Certified at ``d = 5, 8, 12``: the identity is one rational identity of symbolic size, and the exact evaluation at
``d = 12`` (two points) adds about a second; larger sizes grow as ``d^3`` big-rational operations with numerators
of degree ``3d + 3`` and add nothing the smaller ones do not test.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes

__all__ = ["woodbury_identity", "woodbury_degree_bound", "make_woodbury_claim"]


def woodbury_identity(k_sign: int = -1) -> MatrixIdentity:
    """``(I + F F^T A)^T (I + A F (I + k_sign F^T A F)^{-1} F^T) - I`` for a general square ``F`` and skew ``A``;
    ``k_sign = +1`` is the negative control (``I + K`` in place of ``I - K``)."""

    def residual(size, F, Am):
        k = size["d"]
        eye = sp.eye(k)
        K = F.T * Am * F
        Z = (eye + k_sign * K).LUsolve(F.T)
        N = eye + Am * F * Z
        M = eye + F * F.T * Am
        return (M.T * N - eye).applyfunc(sp.cancel)

    sign = "-" if k_sign < 0 else "+"
    return MatrixIdentity(
        f"(I + F F^T A)^T (I + A F (I {sign} F^T A F)^{{-1}} F^T) - I",
        variables=lambda s: {"F": alg.general("f", s["d"], s["d"]), "Am": alg.skew("a", s["d"])},
        residual=residual,
        valid=lambda s, F, Am: (sp.eye(s["d"]) + k_sign * F.T * Am * F).det() != 0,
    )


def woodbury_degree_bound(size: dict) -> int:
    r"""A bound on the degree of the residual's numerator over :math:`\delta = \det(I - F^TAF)`: ``K`` has
    entries of degree 3, the adjugate of :math:`I - K` degree ``3(d - 1)``, so ``N`` has a numerator of degree
    ``3(d - 1) + 3``, and :math:`M^TN - I` (``M`` of degree 3) one of degree at most ``3d + 3``."""
    return 3 * size["d"] + 3


def make_woodbury_claim(k_sign: int = -1, claim_id: str = "vp.gram_lu_woodbury",
                        expected: Level = Level.CERTIFIED) -> Claim:
    """The claim; ``k_sign = +1`` is the negative control (expected ``Level.REFUTED``)."""
    return Claim(
        id=claim_id,
        title="the pivot-free form of N = (I + GA)^{-T} with G = F F^T",
        statement="For skew A and any square F (G = F F^T, e.g. a Cholesky factor of x^T x with zero columns where "
        "x is rank-deficient): with K = F^T A F (skew), V = A F and Z = (I - K)^{-1} F^T, N = I + V Z is "
        "(I + G A)^{-T}: the forward of the native LU kernels for 5 <= d <= 16, whose I - K has symmetric part I "
        "and is factored without pivoting, and of the native d x d stage for 17 <= d <= 64.",
        latex=r"(I + FF^TA)^{-T} = I + AF(I - F^TAF)^{-1}F^T \quad (A^T = -A)",
        source="kernels of geoattn.kernels._native_lu (geoattn.codegen.gram_lu_stage, gram_lu_factor_fast) and "
        "geoattn.kernels._native_lu_big (geoattn.codegen.gram_lu_big_c, factor)",
        expected=expected,
        checker=Policy(
            identity=woodbury_identity(k_sign),
            search=at_sizes({"d": 5}),
            points=1,
            certify=at_sizes({"d": 5}, {"d": 8}, {"d": 12}),
            certify_points=2,
            degree_bound=woodbury_degree_bound,
            certify_method="exact evaluation of (I + F F^T A)^T N - I over the rationals at random integer F "
            "(general) and A (skew), d = 5, 8 and 12",
        ),
        notes="det(I - K) >= 1 for real F since K is skew, so every point is valid. The kernels keep the residual "
        "check of the pivoted form on the N this gives, and recompute with partial pivoting any sample whose "
        "residual exceeds the tolerance of its input type (Note [closed-form residual check] in "
        "geoattn.kernels._gram). The certificate covers d = 5, 8 and 12; the widths 6, 7, 9-11 and 13-64 the "
        "kernels serve rest on the identity's derivation for every d (the push-through identity above) and on "
        "that per-sample residual check, not on an evaluation at those sizes.",
    )
