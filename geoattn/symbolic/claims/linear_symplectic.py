"""Linear symplectic attention (seed 004).

Phase-space inputs ``Z = [Q; P]`` with ``Q, P`` of shape ``n x T``; the
``p``-update maps ``(Q, P) -> (Q, P + Q Abar)`` and the ``q``-update
``(Q, P) -> (Q + P Abar, P)`` with ``Abar = (A + A^T)/2``.
"""

from __future__ import annotations

import sympy as sp
from sympy import Sum
from sympy.matrices.expressions import (
    BlockMatrix,
    Identity,
    KroneckerProduct,
    MatrixSymbol,
    Trace,
    ZeroMatrix,
)
from sympy.matrices.expressions.matexpr import MatrixElement

from .. import algebra as alg
from ..claim import Claim
from ..proof import identity
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import Policy, T, grid, n
from ._entrywise import BLOCKS, ENTRIES, blocks_with, collapse
from ._sources import ORIGINS

__all__ = ["CLAIMS", "reweighting_identity", "make_reweighting", "map_symplectic_identity", "make_map_symplectic"]

SRC = ORIGINS["004"]

Qm = MatrixSymbol("Q", n, T)
Am = MatrixSymbol("A", T, T)
ABAR = (Am + Am.T) / 2


# ---------------------------------------------------------------------------
# lsa.gradient
# ---------------------------------------------------------------------------


def _gradient_derivation() -> Derivation:
    F = Trace(Qm * Am * Qm.T) / 2
    grad = sp.Derivative(F, Qm)
    calc = Qm * Am / 2 + Qm * Am.T / 2
    return Derivation(
        assumptions=[r"Q\in\mathbb{R}^{n\times T},\ A\in\mathbb{R}^{T\times T}",
                     r"[\nabla_QF]_{ab} = \partial F/\partial Q_{ab}"],
        steps=[
            Step(grad, calc, "matrix calculus (SymPy): d Tr(QAQ^T) = Tr(dQ A Q^T) + Tr(Q A dQ^T)", identity()),
            Step(calc, Qm * ABAR, r"\bar A := \tfrac12(A + A^T)", identity()),
        ],
        conclusion=sp.Eq(grad, Qm * ABAR, evaluate=False),
    )


def _gradient_identity() -> MatrixIdentity:
    def residual(size, Q, A):
        # differentiate with respect to symbolic entries, then evaluate at Q
        Qs = alg.general("x", Q.rows, Q.cols)
        F = (Qs * A * Qs.T).trace() / 2
        grad = sp.Matrix(Q.rows, Q.cols, lambda a, b: sp.diff(F, Qs[a, b]))
        grad = grad.xreplace(dict(zip(Qs, Q)))
        return (grad - Q * (A + A.T) / 2).applyfunc(sp.expand)

    def variables(s):
        return {"Q": alg.general("q", s["n"], s["T"]), "A": alg.general("a", s["T"], s["T"])}

    return MatrixIdentity("grad_Q F - Q (A + A^T)/2 (entrywise derivatives)", variables=variables, residual=residual)


# ---------------------------------------------------------------------------
# lsa.reweighting
# ---------------------------------------------------------------------------


def _reweighting_derivation() -> Derivation:
    k, j, i = sp.symbols("k j i", integer=True, nonnegative=True)
    entry = MatrixElement(Qm * ABAR, k, j)
    product = Sum(Qm[k, i] * ABAR[i, j], (i, 0, T - 1))
    seed = Sum(ABAR[j, i] * Qm[k, i], (i, 0, T - 1))
    return Derivation(
        assumptions=[r"\bar A = \tfrac12(A + A^T)", r"q^{(i)} = Q_{\bullet i}"],
        steps=[
            Step(entry, product, "definition of the matrix product", ENTRIES),
            Step(product, seed, r"\bar a_{ij} = \bar a_{ji}", ENTRIES),
        ],
        remark=r"Q\bar A = \left[\sum_i \bar a_{1i}q^{(i)}, \ldots, \sum_i \bar a_{Ti}q^{(i)}\right]"
        r"\ \text{(entry } k \text{ of column } j)",
        conclusion=sp.Eq(entry, seed, evaluate=False),
    )


def reweighting_identity(symmetrize: bool = True) -> MatrixIdentity:
    """Q A-bar minus the column-by-column reweighting the seed writes (``symmetrize=False``: A in place of A-bar)."""
    def residual(size, Q, A):
        abar = (A + A.T) / 2 if symmetrize else A
        t = size["T"]
        seed = sp.Matrix.hstack(*[sum((abar[j, i] * Q[:, i] for i in range(t)), sp.zeros(Q.rows, 1)) for j in range(t)])
        return (Q * abar - seed).applyfunc(sp.expand)

    def variables(s):
        return {"Q": alg.general("q", s["n"], s["T"]), "A": alg.general("a", s["T"], s["T"])}

    return MatrixIdentity("Q Abar - [sum_i abar_ji q^(i)]_j", variables=variables, residual=residual)


def make_reweighting(symmetrize: bool = True, claim_id: str = "lsa.reweighting") -> Claim:
    """The claim; ``symmetrize=False`` is its false variant (negative control)."""
    return Claim(
        id=claim_id,
        title="Q Abar as a reweighting" + ("" if symmetrize else " (non-symmetric A)"),
        statement="Q Abar = [sum_i abar_1i q^(i), ..., sum_i abar_Ti q^(i)]"
        + ("" if symmetrize else " with Abar replaced by a general A"),
        latex=r"Q\bar A = \left[\sum_{i}\bar a_{1i}q^{(i)}, \ldots, \sum_i\bar a_{Ti}q^{(i)}\right]",
        source=SRC.at("'So the map performs'"),
        expected=Level.PROVED if symmetrize else Level.REFUTED,
        checker=Policy(
            identity=reweighting_identity(symmetrize),
            search=grid(n=[1, 2], T=[2, 3]),
            prove=_reweighting_derivation if symmetrize else None,
            exact=grid(n=[1, 2], T=[1, 2, 3]),
        ),
    )


# ---------------------------------------------------------------------------
# lsa.map_symplectic
# ---------------------------------------------------------------------------


def _poisson(N):
    """The block matrix [[0, I_N], [-I_N, 0]]."""
    return BlockMatrix([[ZeroMatrix(N, N), Identity(N)], [-Identity(N), ZeroMatrix(N, N)]])


def _map_symplectic_derivation() -> Derivation:
    N = n * T
    Ab = MatrixSymbol("Abar", T, T)
    M = KroneckerProduct(Identity(n), Ab.T)
    O, I, J = ZeroMatrix(N, N), Identity(N), _poisson(N)
    Dp, Dq = MatrixSymbol("D_p", 2 * N, 2 * N), MatrixSymbol("D_q", 2 * N, 2 * N)
    jac_p = BlockMatrix([[I, O], [M, I]])
    jac_q = BlockMatrix([[I, M], [O, I]])
    both = BlockMatrix([[Dp.T * J * Dp, Dq.T * J * Dq]])
    substituted = BlockMatrix([[jac_p.T * J * jac_p, jac_q.T * J * jac_q]])
    collapsed = collapse(substituted)
    target = BlockMatrix([[J, J]])
    vec = "ledger:vec.right_multiplication"
    return Derivation(
        assumptions=[
            r"\bar A^T = \bar A",
            r"\text{coordinates } (\mathrm{vec}_r Q, \mathrm{vec}_r P),\ \mathbb{J} = "
            r"\begin{pmatrix}0 & \mathbb{I}_{nT}\\ -\mathbb{I}_{nT} & 0\end{pmatrix}",
            r"D_p, D_q\ \text{the Jacobians of the p- and q-updates}",
        ],
        facts={"Abar symmetric": {Ab.T: Ab}},
        subject=(Dp, Dq),
        steps=[
            Step(Dp, jac_p, r"p-update: the Jacobian of Q \mapsto Q\bar A is \mathbb{I}_n\otimes\bar A^T", lemma=vec),
            Step(Dq, jac_q, r"q-update: the Jacobian of P \mapsto P\bar A is \mathbb{I}_n\otimes\bar A^T", lemma=vec),
            Step(both, substituted, "steps 1-2", identity((Dp, jac_p), (Dq, jac_q), facts=())),
            Step(substituted, collapsed, "block multiplication", BLOCKS),
            Step(collapsed, target, r"(\mathbb{I}\otimes\bar A^T)^T = \mathbb{I}\otimes\bar A,\ \bar A^T = \bar A",
                 blocks_with()),
        ],
        remark=r"D_p^T\mathbb{J}D_p = D_q^T\mathbb{J}D_q = \mathbb{J}",
        conclusion=sp.Eq(both, target, evaluate=False),
    )


def map_symplectic_identity(symmetrize: bool = True) -> MatrixIdentity:
    """The symplecticity residuals of the p- and q-updates (``symmetrize=False``: with A in place of A-bar)."""
    def residual(size, Z, A):
        nn, t = size["n"], size["T"]
        abar = (A + A.T) / 2 if symmetrize else A

        def p_update(W):
            q, p = W[:nn, :], W[nn:, :]
            return alg.vstack(q, p + q * abar)

        def q_update(W):
            q, p = W[:nn, :], W[nn:, :]
            return alg.vstack(q + p * abar, p)

        omega = alg.poisson_matrix(nn * t)
        out = []
        for fn in (p_update, q_update):
            jac = alg.jacobian_rows(fn, Z)
            out.append(jac.T * omega * jac - omega)
        return sp.Matrix.vstack(*out)

    def variables(s):
        return {"Z": alg.general("z", 2 * s["n"], s["T"]), "A": alg.general("a", s["T"], s["T"])}

    return MatrixIdentity("[J_p^T J J_p - J; J_q^T J J_q - J]", variables=variables, residual=residual)


def make_map_symplectic(symmetrize: bool = True, claim_id: str = "lsa.map_symplectic") -> Claim:
    """The claim; ``symmetrize=False`` is its false variant (negative control)."""
    return Claim(
        id=claim_id,
        title="linear symplectic attention is symplectic" + ("" if symmetrize else " (non-symmetric A)"),
        statement="The maps (q, p) -> (q, p + Q Abar) and (q, p) -> (q + P Abar, p) are symplectic for the "
        "product structure" + ("" if symmetrize else ", with a non-symmetric A in place of Abar"),
        latex=r"(Q, P)\mapsto(Q, P + Q\bar A),\ (Q, P)\mapsto(Q + P\bar A, P)\ \text{symplectic}",
        source=SRC.at("LinearSymplecticAttentionQ / LinearSymplecticAttentionP"),
        expected=Level.PROVED if symmetrize else Level.REFUTED,
        checker=Policy(
            identity=map_symplectic_identity(symmetrize),
            search=grid(n=[1, 2], T=[2, 3]),
            points=2,
            prove=_map_symplectic_derivation if symmetrize else None,
            exact=grid(n=[1], T=[1, 2]),
        ),
    )


# ---------------------------------------------------------------------------
# symplectic.product_structure
# ---------------------------------------------------------------------------


def _product_structure_derivation() -> Derivation:
    N = n * T
    i = sp.Symbol("i", integer=True, nonnegative=True)
    J = _poisson(N)
    Q, P, Qt, Pt = (MatrixSymbol(s, n, T) for s in ("Q", "P", r"\tilde Q", r"\tilde P"))
    u, v, ut, vt = (MatrixSymbol(rf"\mathrm{{vec}}_r({s})", N, 1) for s in ("Q", "P", r"\tilde Q", r"\tilde P"))
    big = MatrixElement(BlockMatrix([[u], [v]]).T * J * BlockMatrix([[ut], [vt]]), 0, 0)
    flat = MatrixElement(u.T * vt - v.T * ut, 0, 0)
    traces = Trace(Q.T * Pt) - Trace(P.T * Qt)
    z_i = BlockMatrix([[Q[:, i]], [P[:, i]]])
    zt_i = BlockMatrix([[Qt[:, i]], [Pt[:, i]]])
    small = Sum(MatrixElement(z_i.T * _poisson(n) * zt_i, 0, 0), (i, 0, T - 1))
    return Derivation(
        assumptions=[r"Z = [Q; P]\in\mathbb{R}^{2n\times T},\ Z_\mathrm{vec} = (\mathrm{vec}_rQ, \mathrm{vec}_rP)",
                     r"z^{(i)} = (q^{(i)}, p^{(i)}) = Z_{\bullet i}"],
        steps=[
            Step(big, flat, "block multiplication", ENTRIES),
            Step(flat, traces, r"\mathrm{vec}_r(X)^T\mathrm{vec}_r(Y) = \mathrm{Tr}(X^TY)", lemma="vec_inner_product"),
            Step(traces, small, "traces as sums over columns i; block multiplication of each column", ENTRIES),
        ],
        remark=r"Z_\mathrm{vec}^T\mathbb{J}\tilde Z_\mathrm{vec} = \sum_i (z^{(i)})^T\mathbb{J}_{2n}\tilde z^{(i)} "
        r"= \hat{\mathbb{J}}([z], [\tilde z])",
        conclusion=sp.Eq(big, small, evaluate=False),
    )


def _product_structure_identity() -> MatrixIdentity:
    def residual(size, Z, Y):
        nn, t = size["n"], size["T"]
        big = (alg.vec_rows(Z).T * alg.poisson_matrix(nn * t) * alg.vec_rows(Y))[0, 0]
        j2n = alg.poisson_matrix(nn)
        small = sum(((Z[:, i].T * j2n * Y[:, i])[0, 0] for i in range(t)), sp.Integer(0))
        return sp.expand(big - small)

    return MatrixIdentity(
        "Z_vec^T J Y_vec - sum_i z_i^T J_2n y_i",
        variables=lambda s: {"Z": alg.general("z", 2 * s["n"], s["T"]), "Y": alg.general("y", 2 * s["n"], s["T"])},
        residual=residual,
    )


def _nondegenerate_derivation() -> Derivation:
    N = n * T
    J = _poisson(N)
    both = BlockMatrix([[J.T, J * J]])
    collapsed = collapse(both)
    eye = BlockMatrix([[Identity(N), ZeroMatrix(N, N)], [ZeroMatrix(N, N), Identity(N)]])  # I_{2nT}
    target = BlockMatrix([[-J, -eye]])
    return Derivation(
        assumptions=[r"\mathbb{J} = \begin{pmatrix}0 & \mathbb{I}_{nT}\\ -\mathbb{I}_{nT} & 0\end{pmatrix}"],
        steps=[
            Step(both, collapsed, "block transpose and block multiplication", BLOCKS),
            Step(collapsed, target, "the blocks of -J and of -I", BLOCKS),
        ],
        remark=r"\mathbb{J}^T = -\mathbb{J} \text{ (skew) and } \mathbb{J}^{-1} = -\mathbb{J} \text{ (non-degenerate)}",
        conclusion=sp.Eq(both, target, evaluate=False),
    )


def _nondegenerate_identity() -> MatrixIdentity:
    def residual(size):
        J = alg.poisson_matrix(size["n"] * size["T"])
        return sp.Matrix.vstack(J + J.T, J * J + sp.eye(J.rows))

    return MatrixIdentity("[J + J^T; J^2 + I]", variables=lambda s: {}, residual=residual)


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    Claim(
        id="lsa.gradient",
        title="gradient of 1/2 Tr(QAQ^T)",
        statement="The gradient of F(Q) = 1/2 Tr(Q A Q^T) is 1/2 Q (A + A^T) =: Q Abar.",
        latex=r"\nabla_Q\tfrac12\mathrm{Tr}(QAQ^T) = \tfrac12Q(A + A^T) =: Q\bar A",
        source=SRC.at("gradient of F"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_gradient_identity(),
            search=grid(n=[1, 2], T=[2, 3]),
            prove=_gradient_derivation,
            exact=grid(n=range(1, 4), T=range(1, 4)),
            always_exact=True,
        ),
    ),
    make_reweighting(),
    make_map_symplectic(),
    Claim(
        id="symplectic.product_structure",
        title="product structure = pulled-back J",
        statement="J-hat([z], [z~]) = sum_i z^(i)^T J_2n z~^(i) is the big-vector form J pulled back through the "
        "rearrangement (rows stacked, q rows then p rows).",
        latex=r"\hat{\mathbb{J}}([z],[\tilde z]) = \sum_{i=1}^T (z^{(i)})^T\mathbb{J}_{2n}\tilde z^{(i)} "
        r"= Z_\mathrm{vec}^T\mathbb{J}\tilde Z_\mathrm{vec}",
        source=SRC.at("'symplectic product structure' remark"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_product_structure_identity(),
            search=grid(n=[1, 2], T=[2, 3]),
            prove=_product_structure_derivation,
            exact=grid(n=range(1, 4), T=range(1, 4)),
            always_exact=True,
        ),
    ),
    Claim(
        id="symplectic.product_structure_nondegenerate",
        title="product structure skew and non-degenerate",
        statement="The symplectic product structure is a skew-symmetric non-degenerate bilinear form.",
        latex=r"\mathbb{J}^T = -\mathbb{J},\quad \mathbb{J}^2 = -\mathbb{I}",
        source=SRC.at("'symplectic product structure' remark"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_nondegenerate_identity(),
            search=grid(n=[1, 2], T=[1, 2, 3]),
            points=1,
            prove=_nondegenerate_derivation,
        ),
    ),
]
