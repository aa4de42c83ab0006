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
    block_collapse,
)

from .. import algebra as alg
from ..claim import Claim
from ..proof import identity
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import Policy, T, grid, n, same
from ._derivations import canon_sums

__all__ = ["CLAIMS", "reweighting_identity", "make_reweighting", "map_symplectic_identity", "make_map_symplectic"]

SRC = "004_c1f7b079d5720ca3.txt"

Qm = MatrixSymbol("Q", n, T)
Am = MatrixSymbol("A", T, T)
ABAR = (Am + Am.T) / 2


# ---------------------------------------------------------------------------
# lsa.gradient
# ---------------------------------------------------------------------------


def _gradient_derivation() -> Derivation:
    F = Trace(Qm * Am * Qm.T) / 2
    grad = F.diff(Qm)
    return Derivation(
        assumptions=[r"Q\in\mathbb{R}^{n\times T},\ A\in\mathbb{R}^{T\times T}", r"[\nabla_QF]_{ab} = \partial F/\partial Q_{ab}"],
        steps=[
            Step(r"\nabla_Q\,\tfrac12\mathrm{Tr}(QAQ^T)", grad, "matrix calculus (SymPy)", identity()),
            Step(grad, Qm * ABAR, r"\bar A := \tfrac12(A + A^T)", identity()),
        ],
        remark=r"\nabla_Q\tfrac12\mathrm{Tr}(QAQ^T) = \tfrac12Q(A + A^T) = Q\bar A",
        conclusion=None,  # TODO
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
    col = (Qm * ABAR)[k, j]
    seed = Sum(ABAR[j, i] * Qm[k, i], (i, 0, T - 1))
    return Derivation(
        assumptions=[r"\bar A = \tfrac12(A + A^T)"],
        steps=[
            Step(r"[Q\bar A]_{kj}", col, "definition of the matrix product (expanded by SymPy)", lemma='definition'),
            Step(
                col,
                seed,
                r"\bar a_{ij} = \bar a_{ji}",
                identity(),
            ),
        ],
        remark=r"Q\bar A = \left[\sum_i \bar a_{1i}q^{(i)}, \ldots, \sum_i \bar a_{Ti}q^{(i)}\right]",
        conclusion=None,  # TODO
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
        source=f"{SRC}, 'So the map performs'",
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


def _map_symplectic_derivation() -> Derivation:
    N = n * T
    Ab = MatrixSymbol("Abar", T, T)
    M = KroneckerProduct(Identity(n), Ab.T)
    O = ZeroMatrix(N, N)
    I = Identity(N)
    J = BlockMatrix([[O, I], [-I, O]])
    Mm = MatrixSymbol("M", N, N)
    jac_p = BlockMatrix([[I, O], [Mm, I]])
    jac_q = BlockMatrix([[I, Mm], [O, I]])
    res_p = block_collapse(jac_p.T * J * jac_p)
    res_q = block_collapse(jac_q.T * J * jac_q)

    def is_J_when_symmetric(res) -> bool:
        sub = {Mm.T: Mm}
        blocks = res.blocks
        return (
            same(blocks[0, 1].subs(sub), I)
            and same(blocks[1, 0].subs(sub), -I)
            and same(blocks[0, 0].subs(sub), O)
            and same(blocks[1, 1].subs(sub), O)
        )

    return Derivation(
        assumptions=[
            r"\bar A^T = \bar A",
            r"\text{coordinates } (\mathrm{vec}_r Q, \mathrm{vec}_r P),\ \mathbb{J} = \begin{pmatrix}0 & \mathbb{I}_{nT}\\ -\mathbb{I}_{nT} & 0\end{pmatrix}",
        ],
        steps=[
            Step("M", M, r"Jacobian of Q \mapsto Q\bar A is \mathbb{I}_n\otimes\bar A^T (vec.right_multiplication)", lemma='ledger:vec.right_multiplication'),
            Step(M.T, M, r"(\mathbb{I}\otimes\bar A^T)^T = \mathbb{I}\otimes\bar A,\ \bar A^T = \bar A", identity((Ab.T, Ab), (Ab.T, Ab))),
            Step(r"J_p^T\mathbb{J}J_p", res_p, "p-update: J_p = [[I, 0], [M, I]]; block multiplication", identity()),
            Step(r"J_q^T\mathbb{J}J_q", res_q, "q-update: J_q = [[I, M], [0, I]]; block multiplication", identity()),
        ],
        remark=r"J_p^T\mathbb{J}J_p = J_q^T\mathbb{J}J_q = \mathbb{J} \iff M = M^T",
        conclusion=None,  # TODO
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
        source=f"{SRC}, LinearSymplecticAttentionQ / LinearSymplecticAttentionP",
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
    I = Identity(N)
    O = ZeroMatrix(N, N)
    J = BlockMatrix([[O, I], [-I, O]])
    q, p, qt, pt = (MatrixSymbol(s, N, 1) for s in ("q", "p", r"\tilde q", r"\tilde p"))
    big = block_collapse(BlockMatrix([[q], [p]]).T * J * BlockMatrix([[qt], [pt]]))
    flat = q.T * pt - p.T * qt
    # one time step: z = (q_i, p_i) in R^{2n}
    In = Identity(n)
    On = ZeroMatrix(n, n)
    J2n = BlockMatrix([[On, In], [-In, On]])
    qi, pi, qti, pti = (MatrixSymbol(s, n, 1) for s in ("q_i", "p_i", r"\tilde q_i", r"\tilde p_i"))
    small = block_collapse(BlockMatrix([[qi], [pi]]).T * J2n * BlockMatrix([[qti], [pti]]))

    def as_expr(x):
        return x.blocks[0, 0] if hasattr(x, "blocks") else x

    return Derivation(
        assumptions=[r"Z = [Q; P]\in\mathbb{R}^{2n\times T},\ Z_\mathrm{vec} = (\mathrm{vec}_rQ, \mathrm{vec}_rP)"],
        steps=[
            Step(
                r"Z_\mathrm{vec}^T\mathbb{J}\tilde Z_\mathrm{vec}",
                flat,
                "block multiplication",
                identity(),
            ),
            Step(
                flat,
                r"\sum_{i=1}^T (q^{(i)})^T\tilde p^{(i)} - (p^{(i)})^T\tilde q^{(i)}",
                r"\mathrm{vec}_r(X)^T\mathrm{vec}_r(Y) = \sum_{k,i}X_{ki}Y_{ki}, regrouped by column i", lemma='TODO',
            ),
            Step(
                r"(z^{(i)})^T\mathbb{J}_{2n}\tilde z^{(i)}",
                qi.T * pti - pi.T * qti,
                "block multiplication",
                identity(),
            ),
        ],
        remark=r"Z_\mathrm{vec}^T\mathbb{J}\tilde Z_\mathrm{vec} = \sum_i (z^{(i)})^T\mathbb{J}_{2n}\tilde z^{(i)} = \hat{\mathbb{J}}([z], [\tilde z])",
        conclusion=None,  # TODO
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
    I = Identity(N)
    O = ZeroMatrix(N, N)
    J = BlockMatrix([[O, I], [-I, O]])
    jt = block_collapse(J.T)
    jj = block_collapse(J * J)
    return Derivation(
        assumptions=[r"\mathbb{J} = \begin{pmatrix}0 & \mathbb{I}_{nT}\\ -\mathbb{I}_{nT} & 0\end{pmatrix}"],
        steps=[
            Step(r"\mathbb{J}^T", jt, "block transpose", identity()),
            Step(r"\mathbb{J}^2", jj, "block multiplication", identity()),
        ],
        remark=r"\mathbb{J}^T = -\mathbb{J} \text{ (skew) and } \mathbb{J}^{-1} = -\mathbb{J} \text{ (non-degenerate)}",
        conclusion=None,  # TODO
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
        source=f"{SRC}, gradient of F",
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
        latex=r"\hat{\mathbb{J}}([z],[\tilde z]) = \sum_{i=1}^T (z^{(i)})^T\mathbb{J}_{2n}\tilde z^{(i)} = Z_\mathrm{vec}^T\mathbb{J}\tilde Z_\mathrm{vec}",
        source=f"{SRC}, 'symplectic product structure' remark",
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
        source=f"{SRC}, 'symplectic product structure' remark",
        expected=Level.PROVED,
        checker=Policy(
            identity=_nondegenerate_identity(),
            search=grid(n=[1, 2], T=[1, 2, 3]),
            points=1,
            prove=_nondegenerate_derivation,
        ),
    ),
]
