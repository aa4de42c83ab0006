r"""The claims ``vp.gram_lu_residual_bound`` and ``vp.gram_lu_measured_bound``: the exact splits of the wide
stage's residual into its rounding errors.

The native ``d x d`` stage for ``17 <= d <= 64`` (:mod:`geoattn.codegen._gram_lu_big_bound`) accepts a sample's
``N`` on an a posteriori bound of :math:`\max|R|`, :math:`R = (I - AG)N - I`, built from the standard bounds on
the errors of each step. The bound rests on this identity, which holds for any matrices standing for the errors:
with :math:`G = LL^T + dG`, :math:`K = L^TAL`, ``X`` solving :math:`(I - K - dK + dS)X = L^T` (the computed
:math:`K' = K + dK` and the LU's backward error ``dS``), ``W = AL + dW`` and :math:`N = I + WX + dN`,

.. math:: R = AL(dK - dS)X + (I - ALL^T)(dW\,X + dN) - A\,dG\,N .

It is checked here as a polynomial identity with ``dS X`` replaced by :math:`L^T - (I - K')X` (the solve's
equation), at symbolic ``d = 2`` and ``3`` entries; the negative control drops the factor ``AL`` from the first
term (the bound "without the factor from F"), refuted by an exact counterexample.

The second claim, ``vp.gram_lu_measured_bound``, keeps the solve's error as the measured matrix :math:`X - L^TN`:

.. math:: R = AL(X - L^TN) + dW\,X + dN - A\,dG\,N ,

so the growth of the elimination does not enter; its negative control drops ``AL`` likewise.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes

__all__ = ["split_identity", "make_residual_bound_claim", "measured_identity", "make_measured_bound_claim"]


def split_identity(with_factor: bool = True) -> MatrixIdentity:
    r"""``R - (split)`` for symbolic ``A`` (skew), ``L``, ``X``, ``dK``, ``dS``, ``dW``, ``dN``, ``dG`` (general), with
    ``G`` and ``N`` built from them and :math:`L^T` eliminated through the solve's equation; ``with_factor=False``
    is the negative control (the first term without ``AL``)."""

    def residual(size, Am, L, X, dK, dW, dN, dG):
        eye = sp.eye(size["d"])
        K = L.T * Am * L
        dSX = L.T - (eye - K - dK) * X  # dS X from the solve's equation (S + dS) X = L^T, S = I - K - dK
        G = L * L.T + dG
        N = eye + (Am * L + dW) * X + dN
        R = (eye - Am * G) * N - eye
        first = dK * X - dSX
        split = ((Am * L * first) if with_factor else first) + (eye - Am * L * L.T) * (dW * X + dN) - Am * dG * N
        return (R - split).applyfunc(sp.expand)

    def variables(s):
        d = s["d"]
        names = ("L", "X", "dK", "dW", "dN", "dG")
        return {"Am": alg.skew("a", d), **{n: alg.general(n.lower(), d, d) for n in names}}

    return MatrixIdentity("R - [AL(dK - dS)X + (I - ALL^T)(dW X + dN) - A dG N]" if with_factor else
                          "R - [(dK - dS)X + (I - ALL^T)(dW X + dN) - A dG N]",
                          variables=variables, residual=residual)


def make_residual_bound_claim(with_factor: bool = True, claim_id: str = "vp.gram_lu_residual_bound",
                              expected: Level = Level.CHECKED) -> Claim:
    """The claim; ``with_factor=False`` is the negative control (expected ``Level.REFUTED``)."""
    return Claim(
        id=claim_id,
        title="the wide d x d stage's residual split into the rounding errors of its steps",
        statement="With G = L L^T + dG, K = L^T A L, (I - K - dK + dS) X = L^T and N = I + (A L + dW) X + dN: "
        "(I - A G) N - I = A L (dK - dS) X + (I - A L L^T)(dW X + dN) - A dG N, for skew A and any L, X and "
        "error matrices; the native stage for 17 <= d <= 64 bounds each term by its step's backward error.",
        latex=r"(I - AG)N - I = AL(dK - dS)X + (I - ALL^T)(dW\,X + dN) - A\,dG\,N",
        source="kernels of geoattn.kernels._native_lu_big (geoattn.codegen._gram_lu_big_bound, residual_bound)",
        expected=expected,
        checker=Policy(
            identity=split_identity(with_factor),
            search=at_sizes({"d": 2}),
            points=1,
            exact=at_sizes({"d": 2}, {"d": 3}),
            exact_method="exact symbolic identity at d = 2, 3 (symbolic skew A and general L, X and errors)",
        ),
        notes="The identity is polynomial in the entries and uses no property of A beyond its being square (skew "
        "is the case used); the bound itself (first order in u, the step bounds of the module docstring of "
        "geoattn.codegen._gram_lu_big_bound) is measured against the true residual in tests/test_native_lu_big.py.",
    )


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
        "- A dG N, for skew A and any L, X and error matrices; the native stage for 17 <= d <= 64 forms X - L^T N "
        "(an upper triangular product) and bounds the other terms by their steps' backward errors.",
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
        notes="No term of the LU's backward error appears: the solve's error is measured, so the growth of the "
        "elimination without pivoting does not enter the bound (it does in vp.gram_lu_residual_bound).",
    )
