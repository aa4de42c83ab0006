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

from ..proof import Check, identity, relation
from ..evidence import Derivation, Step
from ._common import T, d, same

__all__ = ["canon_sums", "by_cases", "blockwise", "lift_symplectic_derivation", "frozen_map_derivation"]

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


def by_cases(cases: dict) -> Check:
    r"""A check of a scalar step over integer indices, decided case by case: ``cases`` maps a case's name to the
    substitution that puts the indices in it (``{"i < j": {j: i + p}}`` with ``p`` positive), and the step holds
    when its two sides agree after every substitution."""

    def decide(lhs, rhs):
        return all(same(sp.piecewise_fold(lhs.subs(sub)), sp.piecewise_fold(rhs.subs(sub))) for sub in cases.values())

    return relation(decide, "by cases: " + ", ".join(cases))


def _kron_normal(expr, pairs):
    """``expr`` with Kronecker products combined (mixed-product and transpose rules), then ``pairs`` applied."""
    expr = combine_kronecker(expr.doit())
    for old, new in pairs:
        expr = combine_kronecker(expr.subs(old, new).doit())
    return expr


def _blockwise(lhs, rhs, pairs) -> bool:
    """Whether ``lhs`` and ``rhs``, collapsed to block matrices of the same block shape, agree block by block
    in the Kronecker algebra after the substitutions ``pairs``."""
    left, right = block_collapse(lhs), block_collapse(rhs)
    if not (isinstance(left, BlockMatrix) and isinstance(right, BlockMatrix)):
        return False
    if left.blockshape != right.blockshape:
        return False
    return all(
        same(_kron_normal(left.blocks[r, c], pairs), _kron_normal(right.blocks[r, c], pairs))
        for r in range(left.blockshape[0]) for c in range(left.blockshape[1])
    )


def blockwise(*subs, facts: tuple[str, ...] | None = None) -> Check:
    r"""A check of a step between block matrices: block multiplication (SymPy's ``block_collapse``), then every
    block compared in the Kronecker algebra after the substitutions ``subs`` and the derivation's ``facts``."""
    return Check("block multiplication, Kronecker rules", _blockwise, facts, tuple(subs))


def lift_symplectic_derivation(cite: str = "cayley.orthogonal") -> Derivation:
    r"""The lift :math:`\mathbb{I}_{2d}\otimes\Lambda` of an orthogonal :math:`\Lambda` (``cite``) is symplectic."""
    M = KroneckerProduct(Identity(d), L)
    O = ZeroMatrix(d * T, d * T)
    Id = Identity(d * T)
    lift = BlockMatrix([[M, O], [O, M]])
    J = BlockMatrix([[O, Id], [-Id, O]])
    collapsed = block_collapse(lift.T * J * lift)
    return Derivation(
        assumptions=[
            r"\Lambda^T\Lambda = \mathbb{I}_T" + rf"\ \text{{({cite})}}",
            r"z^{(i)} = (q^{(i)}, p^{(i)}),\ q^{(i)}, p^{(i)}\in\mathbb{R}^d",
            r"\tilde\Lambda = \mathbb{I}_{2d}\otimes\Lambda = "
            r"\mathrm{diag}(\mathbb{I}_d\otimes\Lambda,\ \mathbb{I}_d\otimes\Lambda)"
            r"\ \text{in the } q/p \text{ rearrangement}",
        ],
        facts={f"Lambda orthogonal ({cite})": {L.T * L: Identity(T)}},
        steps=[
            Step(lift.T * J * lift, collapsed, "block multiplication", blockwise(facts=())),
            Step(collapsed, J, r"(\mathbb{I}_d\otimes\Lambda)^T(\mathbb{I}_d\otimes\Lambda) = "
                 r"\mathbb{I}_d\otimes\Lambda^T\Lambda = \mathbb{I}_{dT}", blockwise()),
        ],
        remark=r"\tilde\Lambda^T\mathbb{J}\tilde\Lambda = \mathbb{J} = "
        r"\begin{pmatrix}0 & \mathbb{I}_{dT}\\ -\mathbb{I}_{dT} & 0\end{pmatrix}",
        conclusion=sp.Eq(lift.T * J * lift, J, evaluate=False),
    )


def frozen_map_derivation(
    arg: str = "C(Z_0)", cite: str = "cayley.det_one", fn: str = r"\mathrm{Cayley}"
) -> Derivation:
    r""":math:`Z\mapsto Z\Lambda(Z_0)` with :math:`\Lambda = f(\mathrm{arg})` frozen at :math:`Z_0` and
    :math:`\det\Lambda = 1` (``cite``) is volume-preserving."""
    L = MatrixSymbol("Lambda", T, T)
    K = KroneckerProduct(Identity(d), L.T)
    jac = MatrixSymbol(r"J_{Z\mapsto Z\Lambda}", d * T, d * T)
    return Derivation(
        assumptions=[rf"\Lambda = {fn}({arg}) \text{{ for a fixed }} Z_0", rf"\det\Lambda = 1 \text{{ ({cite})}}",
                     r"J_{Z\mapsto Z\Lambda} = \partial\,\mathrm{vec}_r(Z\Lambda)/\partial\,\mathrm{vec}_r(Z)"],
        facts={f"det Lambda = 1 ({cite})": {Determinant(L): 1}},
        steps=[
            Step(jac, K, "the map is linear in Z, with matrix I_d (x) Lambda^T in row-stacked coordinates",
                 lemma="ledger:vec.right_multiplication"),
            Step(Determinant(jac), Determinant(K), "step 1", identity((jac, K), facts=())),
            Step(Determinant(K), Determinant(L) ** d,
                 r"\det(A\otimes B) = \det(A)^{q}\det(B)^{p};\ \det\Lambda^T = \det\Lambda", identity(facts=())),
            Step(Determinant(L) ** d, 1, r"\det\Lambda = 1", identity()),
        ],
        remark=r"Z\mapsto Z\Lambda(Z_0) \text{ is volume-preserving for every fixed } Z_0",
        conclusion=sp.Eq(Determinant(jac), 1, evaluate=False),
    )
