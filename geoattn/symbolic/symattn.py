r"""The expressions of nonlinear symplectic attention: potentials, their gradients and the gradients' VJPs.

In the row layout of the kernels a sequence is :math:`z \in \mathbb{R}^{T\times n}` (tokens as rows,
:math:`z = Q^T` for the seeds' column layout :math:`Q \in \mathbb{R}^{n\times T}`) and

.. math::

    C = z A z^T = Q^T A Q,\qquad \Sigma(z) = f(C),\qquad
    \nabla_z\Sigma = G\,zA^T + G^T z A,\quad G = \nabla_C f,

for the four potentials :data:`ACTIVATIONS` (``f`` a log-sum-exp over all entries or per column, with or
without the one softmax's extra ``1``). ``G`` is then the matching :class:`~geoattn.symbolic.nodes.Softmax`
of ``C`` (ledger ``symattn.potential_gradient``; in the column layout
:math:`\nabla_Q\Sigma = AQG^T + A^TQG`). The VJP of the update along :math:`V` follows from
:math:`\langle V, \nabla\Sigma\rangle = \langle G, \dot C\rangle`, :math:`\dot C = VAz^T + zAV^T`
(ledger ``symattn.layer_vjp``):

.. math::

    K = \mathrm{D}G[\dot C],\quad
    \bar z = Kz A^T + K^T z A + G V A^T + G^T V A,\quad
    \bar A = z^T K z + V^T G z + z^T G V.
"""

from __future__ import annotations

from sympy.matrices.expressions import MatrixSymbol

from .expressions import T, d
from .nodes import Softmax, SoftmaxJVP

__all__ = ["ACTIVATIONS", "update_bindings", "vjp_bindings", "z", "Aw", "V", "Gw"]

#: activation name -> (normalised over, one softmax)
ACTIVATIONS: dict[str, tuple[str, bool]] = {
    "matrix_softmax": ("all", False),
    "vector_softmax": ("columns", False),
    "matrix_one_softmax": ("all", True),
    "vector_one_softmax": ("columns", True),
}

z = MatrixSymbol("z", T, d)
Aw = MatrixSymbol("A", d, d)
V = MatrixSymbol("V", T, d)
Gw = MatrixSymbol("G", T, T)
_C = MatrixSymbol("C", T, T)
_Cd = MatrixSymbol("Cd", T, T)
_K = MatrixSymbol("K", T, T)
_P = MatrixSymbol("P", T, d)
_H = MatrixSymbol("H", T, d)
_R = MatrixSymbol("R", T, d)


def update_bindings(activation: str) -> list[tuple[str, object]]:
    """``C``, ``G`` and the update ``U`` of one activation, as kernel bindings (later ones name earlier ones)."""
    over, one = ACTIVATIONS[activation]
    return [
        ("C", z * Aw * z.T),
        ("G", Softmax(_C, over, one)),
        ("U", Gw * z * Aw.T + Gw.T * z * Aw),
    ]


def vjp_bindings(over: str) -> list[tuple[str, object]]:
    """The VJP of the update along ``V`` from the saved softmax ``G`` (the same for the one softmax)."""
    # grouped so that each T x T factor multiplies once: P = Kz + GV, H = G^T V, R = K^T z + H;
    # gz = P A^T + R A and gA = z^T P + H^T z (ledger symattn.layer_vjp checks the bindings as printed)
    return [
        ("Cd", V * Aw * z.T + z * Aw * V.T),
        ("K", SoftmaxJVP(Gw, _Cd, over)),
        ("P", _K * z + Gw * V),
        ("H", Gw.T * V),
        ("R", _K.T * z + _H),
        ("gz", _P * Aw.T + _R * Aw),
        ("gA", z.T * _P + _H.T * z),
    ]
