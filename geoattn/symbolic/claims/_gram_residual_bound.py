r"""The claim ``vp.gram_lu_measured_bound``: the wide stage's residual split exactly into the measured error of its
solve and the rounding errors of its other steps.

The native ``d x d`` stage for ``17 <= d <= 64`` (:mod:`geoattn.codegen._gram_lu_big_bound`) accepts a sample's
``N`` on an a posteriori bound of :math:`\max|R|`, :math:`R = (I - AG)N - I`. The bound rests on this identity,
which holds for any matrices standing for the errors: with :math:`G = LL^T + dG`, ``W = AL + dW`` and
:math:`N = I + WX + dN` for any ``X``,

.. math:: R = AL(X - L^TN) + dW\,X + dN - A\,dG\,N .

It is checked as a polynomial identity at symbolic ``d = 2`` and ``3``; the negative control drops the factor
``AL`` from the first term (the bound "without the factor from F"), refuted by an exact counterexample.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes

__all__ = ["measured_identity", "make_measured_bound_claim"]


def measured_identity(with_factor: bool = True) -> MatrixIdentity:
    r"""``R - (AL(X - L^TN) + dW X + dN - A dG N)`` with ``G = LL^T + dG`` and ``N = I + (AL + dW)X + dN`` for
    symbolic skew ``A`` and general ``L``, ``X`` and errors; ``with_factor=False`` drops ``AL`` (negative control)."""

    def residual(size, Am, L, X, dW, dN, dG):
        eye = sp.eye(size["d"])
        N = eye + (Am * L + dW) * X + dN
        R = (eye - Am * (L * L.T + dG)) * N - eye
        measured = X - L.T * N
        split = (Am * L * measured if with_factor else measured) + dW * X + dN - Am * dG * N
        return (R - split).applyfunc(sp.expand)

    def variables(s):
        d = s["d"]
        return {"Am": alg.skew("a", d), **{n: alg.general(n.lower(), d, d) for n in ("L", "X", "dW", "dN", "dG")}}

    return MatrixIdentity("R - [AL(X - L^T N) + dW X + dN - A dG N]" if with_factor else
                          "R - [(X - L^T N) + dW X + dN - A dG N]", variables=variables, residual=residual)


def make_measured_bound_claim(with_factor: bool = True, claim_id: str = "vp.gram_lu_measured_bound",
                              expected: Level = Level.CHECKED) -> Claim:
    """The claim of the second bound; ``with_factor=False`` is the negative control (expected ``Level.REFUTED``)."""
    return Claim(
        id=claim_id,
        title="the wide d x d stage's residual from the measured error of its solve",
        statement="With G = L L^T + dG and N = I + (A L + dW) X + dN: (I - A G) N - I = A L (X - L^T N) + dW X + dN "
        "- A dG N, for skew A and any L, X and error matrices (the identity the native stage for 17 <= d <= 64 "
        "rests on: it forms X - L^T N and bounds the other terms by their steps' backward errors; those bounds "
        "and their constants are the stage's rounding analysis, not part of this check).",
        latex=r"(I - AG)N - I = AL(X - L^TN) + dW\,X + dN - A\,dG\,N",
        source="kernels of geoattn.kernels._native_lu_big (geoattn.codegen._gram_lu_big_bound, measured_bound)",
        expected=expected,
        checker=Policy(
            identity=measured_identity(with_factor),
            search=at_sizes({"d": 2}),
            points=1,
            exact=at_sizes({"d": 2}, {"d": 3}),
            exact_method="exact symbolic identity at d = 2, 3 (symbolic skew A and general L, X and errors)",
        ),
        notes="No term of the LU's backward error appears: the solve's error is measured, so neither the growth of "
        "the elimination without pivoting nor a wrong X enters the bound unseen; an earlier O(d^2) bound from the "
        "LU's backward error (|dS| <= gamma_3d |L||U|) exceeded eps32 / 16 at d = 64 or T = 256 for every "
        "unit-normal sample and missed a perturbed N, so the stage uses this one.",
    )
