"""Derivations and helpers that more than one claim family uses (not public)."""

from __future__ import annotations

import sympy as sp
from sympy import Sum
from sympy.matrices.expressions import (
    BlockMatrix,
    Determinant,
    Identity,
    KroneckerProduct,
    MatrixSymbol,
    ZeroMatrix,
    block_collapse,
)
from sympy.matrices.expressions.kronecker import combine_kronecker

from ..proof import identity
from ..evidence import Derivation, Step
from ._common import T, d, same

__all__ = ["canon_sums", "lift_symplectic_derivation", "frozen_map_derivation"]

L = MatrixSymbol("Lambda", T, T)


def canon_sums(expr):
    """Rename the bound variables of every ``Sum`` canonically (for comparison)."""

    def rename(s):
        new = {}
        limits = []
        for idx, lim in enumerate(s.limits):
            sym = sp.Symbol(f"s_{idx}", integer=True)
            new[lim[0]] = sym
            limits.append((sym,) + tuple(lim[1:]))
        return Sum(s.function.xreplace(new), *limits)

    return expr.replace(lambda x: isinstance(x, Sum), rename)


def lift_symplectic_derivation(cite: str = "cayley.orthogonal") -> Derivation:
    r"""The lift :math:`\mathbb{I}_{2d}\otimes\Lambda` of an orthogonal :math:`\Lambda` (``cite``) is symplectic."""
    M = KroneckerProduct(Identity(d), L)
    O = ZeroMatrix(d * T, d * T)
    Id = Identity(d * T)
    lift = BlockMatrix([[M, O], [O, M]])
    J = BlockMatrix([[O, Id], [-Id, O]])
    collapsed = block_collapse(lift.T * J * lift)
    mtm = collapsed.blocks[0, 1]
    return Derivation(
        assumptions=[
            r"\Lambda^T\Lambda = \mathbb{I}_T" + rf"\ \text{{({cite})}}",
            r"z^{(i)} = (q^{(i)}, p^{(i)}),\ q^{(i)}, p^{(i)}\in\mathbb{R}^d",
            r"\tilde\Lambda = \mathbb{I}_{2d}\otimes\Lambda = \mathrm{diag}(\mathbb{I}_d\otimes\Lambda,\ \mathbb{I}_d\otimes\Lambda)"
            r"\ \text{in the } q/p \text{ rearrangement}",
        ],
        steps=[
            Step(
                r"\tilde\Lambda^T\mathbb{J}\tilde\Lambda",
                collapsed,
                "block multiplication",
                identity(),
            ),
            Step(
                mtm,
                Identity(d * T),
                "lift.orthogonal",
                identity((L.T * L, Identity(T))),
            ),
        ],
        remark=r"\tilde\Lambda^T\mathbb{J}\tilde\Lambda = \mathbb{J} = "
        r"\begin{pmatrix}0 & \mathbb{I}_{dT}\\ -\mathbb{I}_{dT} & 0\end{pmatrix}",
        conclusion=None,  # TODO
    )


def frozen_map_derivation(arg: str = "C(Z_0)", cite: str = "cayley.det_one", fn: str = r"\mathrm{Cayley}") -> Derivation:
    r""":math:`Z\mapsto Z\Lambda(Z_0)` with :math:`\Lambda = f(\mathrm{arg})` frozen at :math:`Z_0` and
    :math:`\det\Lambda = 1` (``cite``) is volume-preserving."""
    L = MatrixSymbol("Lambda", T, T)
    K = KroneckerProduct(Identity(d), L.T)
    det_k = Determinant(K).doit()
    return Derivation(
        assumptions=[rf"\Lambda = {fn}({arg}) \text{{ for a fixed }} Z_0", rf"\det\Lambda = 1 \text{{ ({cite})}}"],
        steps=[
            Step(
                r"\frac{\partial\,\mathrm{vec}_r(Z\Lambda)}{\partial\,\mathrm{vec}_r(Z)}",
                K,
                "vec.right_multiplication (the map is linear in Z)", lemma='ledger:vec.right_multiplication',
            ),
            Step(
                Determinant(K),
                Determinant(L) ** d,
                r"\det(A\otimes B) = \det(A)^{q}\det(B)^{p};\ \det\Lambda^T = \det\Lambda",
                identity(),
            ),
            Step(Determinant(L) ** d, 1, r"\det\Lambda = 1",
                 identity((Determinant(L), 1))),
        ],
        remark=r"Z\mapsto Z\Lambda(Z_0) \text{ is volume-preserving for every fixed } Z_0",
        conclusion=None,  # TODO
    )
