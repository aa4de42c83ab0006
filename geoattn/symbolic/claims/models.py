"""The building blocks of the models: triangular residual layers and gradient shears.

``TriangularResidual``: ``x -> x + sigma(L x + b)`` with ``L`` strictly
triangular has Jacobian ``I + D L`` with ``D = diag(sigma'(L x + b))``.
``GradientLayer``: ``(q, p) -> (q, p + K^T (a * sigma(K q + b)))`` has
Jacobian ``[[I, 0], [K^T D K, I]]`` with ``D = diag(a * sigma'(K q + b))``.
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..claim import Claim
from ..proof import identity
from ..evidence import Level
from ..strategies import MatrixIdentity
from ._common import Grows, Policy, grid

__all__ = ["CLAIMS", "make_gradient_claim"]

SRC = "geoattn.models"


def _diag(v: sp.Matrix) -> sp.Matrix:
    return sp.diag(*list(v))


def _triangular_identity() -> MatrixIdentity:
    def variables(s):
        return {"L": alg.general("l", s["n"], s["n"]), "d": alg.general("d", s["n"], 1)}

    def residual(size, L, d):
        D = _diag(d)
        lower = (sp.eye(size["n"]) + D * L.lower_triangular(-1)).det(method="berkowitz") - 1
        upper = (sp.eye(size["n"]) + D * L.upper_triangular(1)).det(method="berkowitz") - 1
        return sp.Matrix([sp.expand(lower), sp.expand(upper)])

    return MatrixIdentity("det(I + D tril_{-1}(L)) - 1, det(I + D triu_1(L)) - 1", variables=variables,
                          residual=residual)


def _gradient_identity(symmetric: bool = True) -> MatrixIdentity:
    def variables(s):
        out = {"K": alg.general("k", s["m"], s["n"]), "a": alg.general("a", s["m"], 1)}
        if not symmetric:
            out["W"] = alg.general("w", s["m"], s["n"])
        return out

    def residual(size, K, a, W=None):
        nn = size["n"]
        S = K.T * _diag(a) * K if symmetric else W.T * _diag(a) * K
        I, O = sp.eye(nn), sp.zeros(nn, nn)
        Jp = sp.Matrix(sp.BlockMatrix([[I, O], [S, I]]))
        Jq = sp.Matrix(sp.BlockMatrix([[I, S], [O, I]]))
        omega = alg.poisson_matrix(nn)
        return sp.Matrix.vstack(Jp.T * omega * Jp - omega, Jq.T * omega * Jq - omega).applyfunc(sp.expand)

    return MatrixIdentity("J^T J2n J - J2n for the gradient shears", variables=variables, residual=residual)


def make_gradient_claim(symmetric: bool = True, claim_id: str = "models.gradient_layer_symplectic") -> Claim:
    """The claim that a gradient layer is symplectic; ``symmetric=False`` is its false variant."""
    return Claim(
        id=claim_id,
        title="gradient layer is symplectic" + ("" if symmetric else " (K^T D W, W != K)"),
        statement="The shears (q, p) -> (q, p + K^T(a * sigma(Kq + b))) and (q, p) -> (q + K^T(a * sigma(Kp + b)), p) "
        "are symplectic: their Jacobian block K^T diag(a * sigma') K is symmetric"
        + ("" if symmetric else "; with a second weight W in place of K^T it is not"),
        latex=r"\begin{pmatrix}\mathbb{I} & 0\\ K^TDK & \mathbb{I}\end{pmatrix}^T\mathbb{J}_{2n}"
        r"\begin{pmatrix}\mathbb{I} & 0\\ K^TDK & \mathbb{I}\end{pmatrix} = \mathbb{J}_{2n}",
        source=f"{SRC}.GradientLayer",
        expected=Level.CHECKED if symmetric else Level.REFUTED,
        checker=Policy(
            identity=_gradient_identity(symmetric),
            search=grid(n=[1, 2], m=[1, 2, 3]),
            exact=grid(n=[1, 2], m=[1, 2, 3]),
        ),
    )


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    Claim(
        id="models.triangular_residual_det_one",
        title="triangular residual layer has det J = 1",
        statement="For L strictly lower (or upper) triangular and any diagonal D, det(I + D L) = 1: the map "
        "x -> x + sigma(Lx + b) is volume-preserving for every activation.",
        latex=r"\det(\mathbb{I} + DL) = 1,\ D\text{ diagonal},\ L\text{ strictly triangular}",
        source=f"{SRC}.TriangularResidual / VolumePreservingFeedForward",
        expected=Level.CHECKED,
        checker=Policy(identity=_triangular_identity(), search=grid(n=range(1, 5)), exact=grid(n=Grows(1, 5))),
    ),
    make_gradient_claim(),
]
