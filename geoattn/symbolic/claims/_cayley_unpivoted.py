r"""The claim ``kernels.cayley_unpivoted``: the native Cayley solve's elimination without pivoting is well defined.

For skew ``C`` the leading ``k x k`` block of :math:`M = I + C` is :math:`I + C_k` with :math:`C_k` skew, and
:math:`\det(I + C_k) = 1 + \sum_S \mathrm{Pf}(C_S)^2` over the nonempty even subsets ``S`` of the first ``k``
indices, so every leading principal minor :math:`\Delta_k` is at least 1. The ``k``-th pivot of Gaussian
elimination without row exchanges is :math:`\Delta_k/\Delta_{k-1}`, defined and positive, so the elimination never
meets a zero pivot; and :math:`(I - C)(I + C)^{-1} = 2(I + C)^{-1} - I` (every ``C`` with ``I + C`` invertible) is
what the kernel forms from the inverse (:mod:`geoattn.codegen.cayley_solve_c`). The engine checks, at every size up
to ``n = 3`` with every entry of ``C`` a symbol: each minor minus 1 minus its sum of squares, each pivot the
elimination computes times :math:`\Delta_{k-1}` minus :math:`\Delta_k`, and the form from the inverse.
``structure="general"`` states the same of every ``C`` (the sum of squares taken of its skew part): false, e.g.
:math:`C = \begin{pmatrix}0 & 1\\ 1 & 0\end{pmatrix}` has :math:`\Delta_2 = 0`, a zero pivot (negative control).
"""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from ..claim import Claim, Level
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes

__all__ = ["unpivoted_identity", "make_unpivoted_claim"]


def _sum_of_squares(a: sp.Matrix, k: int) -> sp.Expr:
    """``1 + sum_S Pf(A_S)^2`` over the nonempty even subsets ``S`` of the first ``k`` indices (``a`` skew)."""
    total = sp.Integer(1)
    for subset in alg.principal_even_subsets(k):
        if subset:
            total += alg.pfaffian(a.extract(list(subset), list(subset))) ** 2
    return total


def _pivots(m: sp.Matrix) -> list:
    """The pivots of Gaussian elimination of ``m`` without row exchanges (rational functions of its entries)."""
    u, out = m.copy(), []
    n = m.rows
    for k in range(n):
        p = u[k, k]
        out.append(p)
        for i in range(k + 1, n):
            f = u[i, k] / p
            for j in range(k, n):
                u[i, j] = sp.cancel(u[i, j] - f * u[k, j])
    return out


def unpivoted_identity(structure: str = "skew") -> MatrixIdentity:
    r"""Rows: :math:`\Delta_k - 1 - \sum_S \mathrm{Pf}(\mathrm{skew}(C)_S)^2`, :math:`p_k\Delta_{k-1} - \Delta_k` for
    ``k = 1..n`` (``p_k`` the pivots of elimination without pivoting, :math:`\Delta_0 = 1`) and the entries of
    :math:`2(I + C)^{-1} - I - (I - C)(I + C)^{-1}`; ``C`` skew, or ``"general"`` (negative control)."""
    make = {"skew": alg.skew, "general": lambda nm, k: alg.general(nm, k, k)}[structure]

    def residual(size, C):
        n = size["n"]
        eye = sp.eye(n)
        m = eye + C
        sk = (C - C.T) / 2
        minors = [sp.Integer(1)] + [m.extract(list(range(k)), list(range(k))).det(method="berkowitz")
                                    for k in range(1, n + 1)]
        rows = [sp.expand(minors[k] - _sum_of_squares(sk, k)) for k in range(1, n + 1)]
        if structure == "skew":  # the pivots exist: every minor is 1 plus squares
            rows += [sp.cancel(p * minors[k] - minors[k + 1]) for k, p in enumerate(_pivots(m))]
            # 2 M^-1 - I - (I - C) M^-1 = (2I - M - (I - C)) M^-1: its left factor
            rows += list(alg.vec_rows((2 * eye - m - (eye - C)).applyfunc(sp.expand)))
        return sp.Matrix(rows)

    return MatrixIdentity(
        "leading minors of I + C minus 1 + sum of squared Pfaffians; pivots times the previous minor minus the minor; "
        "2(I + C)^-1 - I - Cayley(C)",
        variables=lambda s: {"C": make("c", s["n"])},
        residual=residual,
    )


def make_unpivoted_claim(structure: str = "skew", claim_id: str = "kernels.cayley_unpivoted") -> Claim:
    """The claim for skew ``C``; ``structure="general"`` is the false variant (negative controls)."""
    skew = structure == "skew"
    return Claim(
        id=claim_id,
        title="Cayley by elimination without pivoting" if skew else "unpivoted elimination of I + C for every C",
        statement=("For skew C (n x n) every leading principal minor of I + C is 1 plus a sum of squares of "
                   "Pfaffians, hence at least 1; the pivots of Gaussian elimination of I + C without row exchanges "
                   "are their ratios, defined and positive; and Cayley(C) = 2(I + C)^-1 - I (the kernel "
                   "cayley_solve_fwd).") if skew else
                  ("For every C (n x n) the leading principal minors of I + C are 1 plus the squared Pfaffians of "
                   "the skew part of C (false: C = [[0, 1], [1, 0]] has a zero pivot)."),
        latex=(r"C^T = -C \implies \Delta_k(I + C) = 1 + \sum_{S \subseteq \{1..k\}} \mathrm{Pf}(C_S)^2 \ge 1,\ "
               r"p_k = \Delta_k/\Delta_{k-1},\ \mathrm{Cayley}(C) = 2(I + C)^{-1} - I") if skew else
              r"\Delta_k(I + C) = 1 + \sum_S \mathrm{Pf}(\mathrm{skew}(C)_S)^2\ \text{for every } C",
        source="kernel cayley_solve_fwd of geoattn.codegen.cayley_solve_c (Note [native Cayley solve])",
        expected=Level.CHECKED if skew else Level.REFUTED,
        checker=Policy(
            identity=unpivoted_identity(structure),
            search=at_sizes({"n": 2}, {"n": 4}),
            points=2,
            exact=at_sizes({"n": 1}, {"n": 2}, {"n": 3}),
            exact_method="exact symbolic identity at n = 1..3 (every entry of the skew C a symbol): the minors, "
            "the pivots of the elimination and the form from the inverse (its factor 2I - (I + C) - (I - C))",
        ),
        notes="Every size n reduces to the minors of the sizes k <= n: the leading block of a skew matrix is skew, "
        "and the sum-of-squares form of det(I + C) is cayley.well_defined's certificate. The pivot identity "
        "p_k Delta_{k-1} = Delta_k holds for elimination without exchanges whenever the earlier pivots are nonzero. "
        "The kernel's Gauss-Jordan elimination divides by the same pivots as Gaussian elimination. What is checked "
        "exactly is n <= 3; the kernel's sizes 4 <= T <= 32 rest on that reduction argument (not checked by the "
        "engine at those sizes) and on the kernel's per-sample defect measurement, which sends any sample above "
        "64 T eps to the pivoted solve.",
    )
