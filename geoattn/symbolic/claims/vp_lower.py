r"""Claims of the nested block solve of the arbitrary weighting (:mod:`geoattn.kernels._semisep`, Note [nested
block solve of I minus a lower-assigned skew matrix]).

* ``vp_lower.offdiag_blocks``: for rows :math:`X = (X_1; X_2)` split into an earlier block 1 and a later block 2
  and an arbitrary :math:`A`, the off-diagonal blocks of :math:`S = \mathrm{skew\_from\_lower}(XAX^T)` are
  :math:`S_{21} = X_2AX_1^T` and :math:`S_{12} = -X_1A^TX_2^T`: rank at most ``d`` however long the blocks.
* ``vp_lower.merge``: with :math:`M_b = I - c\,\mathrm{skew\_from\_lower}(X_bAX_b^T)` (``c`` the scale,
  :math:`1/\sqrt d` in the layer), :math:`U_b = M_b^{-1}X_b`, :math:`K_b = X_b^TU_b`,
  :math:`G = \begin{pmatrix}0 & cA^T\\ -cA & 0\end{pmatrix}`, :math:`N = I_{2d} + G\,\mathrm{diag}(K_1, K_2)` and
  :math:`R = N^{-1}(I_d; I_d)`: :math:`X_p^TM_p^{-1}X_p = K_1R_1 + K_2R_2` and
  :math:`M_p^{-1}X_p = (U_1R_1; U_2R_2)` (Woodbury's identity), the merge of the upward pass and the transfer
  matrices of the downward one. The reference inverts :math:`M_p` directly and shares no formula with the merge.

Both take a ``sign`` (``-1`` flips the coupling: the upper block as :math:`+X_1A^TX_2^T`, or
:math:`N = I - G K_D`), which the tests refute by exact counterexamples: the negative controls.
"""

from __future__ import annotations

import sympy as sp
from sympy.polys.matrices import DomainMatrix

from .. import algebra as alg
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes

__all__ = ["CLAIMS", "skew_from_lower", "offdiag_identity", "merge_identity", "make_offdiag_claim",
           "make_merge_claim"]


def skew_from_lower(P: sp.Matrix) -> sp.Matrix:
    """The strict lower triangle of ``P`` copied to the upper one, negated (zero diagonal)."""
    n = P.rows
    return sp.Matrix(n, n, lambda i, j: P[i, j] if i > j else (-P[j, i] if i < j else 0))


def _blocks(s: dict) -> dict:
    t1, t2, k = s["T1"], s["T2"], s["d"]
    return {"X1": alg.general("x", t1, k), "X2": alg.general("z", t2, k), "Am": alg.general("a", k, k)}


def offdiag_identity(sign: int = 1) -> MatrixIdentity:
    """``[S_21 - X_2 A X_1^T; S_12 + sign X_1 A^T X_2^T]`` with ``S = skew_from_lower(X A X^T)``."""

    def residual(size, X1, X2, Am):
        t1 = X1.rows
        S = skew_from_lower(sp.Matrix.vstack(X1, X2) * Am * sp.Matrix.vstack(X1, X2).T)
        low = S[t1:, :t1] - X2 * Am * X1.T
        up = S[:t1, t1:] + sign * X1 * Am.T * X2.T
        return sp.Matrix.vstack(alg.vec_rows(low.applyfunc(sp.expand)), alg.vec_rows(up.applyfunc(sp.expand)))

    return MatrixIdentity("[S_21 - X_2 A X_1^T; S_12 + X_1 A^T X_2^T], S = skew_from_lower(X A X^T)",
                          variables=_blocks, residual=residual)


def _field(*mats: sp.Matrix):
    """The rational functions of the matrices' symbols (the rationals when they have none)."""
    syms = sorted(set().union(*(m.free_symbols for m in mats)), key=sp.default_sort_key)
    return sp.ZZ.frac_field(*syms) if syms else sp.QQ


def merge_identity(sign: int = 1) -> MatrixIdentity:
    """``[K_1 R_1 + K_2 R_2 - X_p^T M_p^{-1} X_p; (U_1 R_1; U_2 R_2) - M_p^{-1} X_p]`` with ``N = I + sign G K_D``.

    Evaluated over the field of rational functions of the symbols (``DomainMatrix``: every entry a reduced
    fraction, so the residual is zero exactly when each entry is the zero element)."""

    def residual(size, X1, X2, Am, c):
        F = _field(X1, X2, Am, c)

        def dm(m):
            return DomainMatrix.from_list_sympy(m.rows, m.cols, m.tolist()).convert_to(F)

        def M(X):
            return DomainMatrix.eye(X.rows, F).to_dense() - dm(c[0, 0] * skew_from_lower(X * Am * X.T))

        k = Am.rows
        x1, x2, a, cc = dm(X1), dm(X2), dm(Am), F.convert(c[0, 0])
        U1, U2 = M(X1).lu_solve(x1), M(X2).lu_solve(x2)
        K1, K2 = x1.transpose() * U1, x2.transpose() * U2
        Z = DomainMatrix.zeros((k, k), F).to_dense()
        G = DomainMatrix.vstack(DomainMatrix.hstack(Z, a.transpose() * cc), DomainMatrix.hstack(a * (-cc), Z))
        KD = DomainMatrix.vstack(DomainMatrix.hstack(K1, Z), DomainMatrix.hstack(Z, K2))
        e = DomainMatrix.eye(k, F).to_dense()
        N = DomainMatrix.eye(2 * k, F).to_dense() + G * KD * F.convert(sign)
        R = N.lu_solve(DomainMatrix.vstack(e, e))
        R1, R2 = R[:k, :], R[k:, :]
        xp = DomainMatrix.vstack(x1, x2)
        Up = M(sp.Matrix.vstack(X1, X2)).lu_solve(xp)
        res = [K1 * R1 + K2 * R2 - xp.transpose() * Up, DomainMatrix.vstack(U1 * R1, U2 * R2) - Up]
        return sp.Matrix.vstack(*(alg.vec_rows(r.to_Matrix()) for r in res))

    def variables(s):
        return {**_blocks(s), "c": sp.Matrix([[sp.Symbol("c", real=True)]])}

    return MatrixIdentity("[K_1 R_1 + K_2 R_2 - X_p^T M_p^-1 X_p; (U_1 R_1; U_2 R_2) - M_p^-1 X_p], "
                          "R = (I + G diag(K_1, K_2))^-1 (I; I)", variables=variables, residual=residual)


def make_offdiag_claim(sign: int = 1, claim_id: str = "vp_lower.offdiag_blocks",
                       expected: Level = Level.CHECKED) -> Claim:
    """The off-diagonal blocks claim; ``sign = -1`` states the upper block with the wrong sign (negative control)."""
    return Claim(
        id=claim_id,
        title="off-diagonal blocks of the lower-assigned correlation have rank d",
        statement="For X = (X_1; X_2) (X_1 the earlier T_1 rows, X_2 the later T_2 rows, d columns) and any d x d A, "
        "S = skew_from_lower(X A X^T) has S_21 = X_2 A X_1^T and S_12 = -X_1 A^T X_2^T.",
        latex=r"S = \mathrm{skew\_from\_lower}(XAX^T):\ S_{21} = X_2AX_1^T,\ S_{12} = -X_1A^TX_2^T",
        source="kernel vp_arbitrary_linear of geoattn.kernels._semisep (Note [nested block solve of I minus a "
        "lower-assigned skew matrix])",
        expected=expected,
        checker=Policy(
            identity=offdiag_identity(sign),
            search=at_sizes({"T1": 2, "T2": 3, "d": 2}),
            points=1,
            exact=at_sizes({"T1": 1, "T2": 1, "d": 1}, {"T1": 2, "T2": 2, "d": 2}, {"T1": 2, "T2": 3, "d": 3}),
            exact_method="exact symbolic identity at (T_1, T_2, d) = (1, 1, 1), (2, 2, 2), (2, 3, 3), every entry of "
            "X and A a symbol",
        ),
        notes="Entrywise: S_ij = x_i^T A x_j for i > j, and S_ij = -x_j^T A x_i = -x_i^T A^T x_j for i < j; every "
        "row of block 2 comes after every row of block 1, so each block lies wholly on one side of the diagonal.",
    )


def make_merge_claim(sign: int = 1, claim_id: str = "vp_lower.merge", expected: Level = Level.CHECKED) -> Claim:
    """The merge claim; ``sign = -1`` flips the coupling in ``N`` (negative control)."""
    return Claim(
        id=claim_id,
        title="the merge of the nested block solve",
        statement="With M_b = I - c skew_from_lower(X_b A X_b^T), U_b = M_b^-1 X_b, K_b = X_b^T U_b (b = 1, 2 and the "
        "parent p, X_p = (X_1; X_2)), G = [[0, c A^T], [-c A, 0]], N = I + G diag(K_1, K_2) and "
        "R = N^-1 (I; I) = (R_1; R_2): K_p = K_1 R_1 + K_2 R_2 and U_p = (U_1 R_1; U_2 R_2).",
        latex=r"N = I_{2d} + G\,\mathrm{diag}(K_1, K_2),\ \binom{R_1}{R_2} = N^{-1}\binom{I}{I}:\ "
        r"K_p = K_1R_1 + K_2R_2,\ M_p^{-1}X_p = \binom{U_1R_1}{U_2R_2}",
        source="kernel vp_arbitrary_linear of geoattn.kernels._semisep (Note [nested block solve of I minus a "
        "lower-assigned skew matrix])",
        expected=expected,
        checker=Policy(
            identity=merge_identity(sign),
            search=at_sizes({"T1": 2, "T2": 2, "d": 2}, {"T1": 3, "T2": 2, "d": 2}, {"T1": 2, "T2": 3, "d": 3}),
            points=2,
            exact=at_sizes({"T1": 1, "T2": 1, "d": 1}, {"T1": 2, "T2": 1, "d": 1}, {"T1": 1, "T2": 2, "d": 1},
                           {"T1": 2, "T2": 2, "d": 1}, {"T1": 1, "T2": 1, "d": 2}),
            exact_method="exact symbolic identity (X, A and the scale c symbols, over their field of rational "
            "functions) at (T_1, T_2, d) = (1, 1, 1), (2, 1, 1), (1, 2, 1), (2, 2, 1), (1, 1, 2); exact rational "
            "points at (2, 2, 2), (3, 2, 2), (2, 3, 3)",
        ),
        notes="M_b is I minus a skew matrix, so it is invertible (its symmetric part is I), and det N = "
        "det M_p / (det M_1 det M_2) != 0 (Schur complement), so every inverse is defined at every point. "
        "From Woodbury's identity M_p^-1 = D^-1 - D^-1 W N'^-1 G W^T D^-1 with M_p = D + W G W^T, "
        "W = diag(X_1, X_2), N' = I + G W^T D^-1 W = N.",
    )


CLAIMS = [make_offdiag_claim(), make_merge_claim()]
