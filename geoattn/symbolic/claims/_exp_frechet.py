r"""The exponential's Frechet derivative as the low-rank exponential backward uses it (not public).

* :class:`FrechetExp` and :class:`Phi`: unevaluated matrix expressions :math:`L_{\exp}(X, E)` and
  :math:`\varphi(X) = \int_0^1 e^{sX}ds`, the quantities the claim ``vp.lowrank_exp_vjp`` names;
* the lemma ``exp_block_triangular`` (Van Loan's block formula), registered here, and the steps that support it:
  the block-power induction step in the free algebra and the Beta integral that matches the integral and the
  series forms of :math:`L_{\exp}` term by term (both checked from their sides).
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import BlockMatrix, Identity, MatMul, MatrixExpr, MatrixSymbol, ZeroMatrix

from .. import algebra as alg
from ..lemmas import LEMMAS, register
from ..proof import Check, relation
from ..evidence import Step
from ._free_algebra import nc, nc_equal

__all__ = ["FrechetExp", "Phi", "block_power_step", "beta_step", "block_exp_step"]

if "exp_block_triangular" not in LEMMAS:
    register(
        "exp_block_triangular",
        r"\exp\begin{pmatrix}X & E & F\\ 0 & X & 0\\ 0 & 0 & 0\end{pmatrix} = \begin{pmatrix}e^X & L_{\exp}(X, E) & "
        r"\varphi(X)F\\ 0 & e^X & 0\\ 0 & 0 & I\end{pmatrix},\ \varphi(X) = \int_0^1 e^{sX}ds",
        "Van Loan, Computing integrals involving the matrix exponential, IEEE Trans. Automat. Control 23 (1978) "
        "395-404, Theorem 1; Higham, Functions of Matrices (SIAM, 2008), Theorem 3.6 and 10.2",
    )


class FrechetExp(MatrixExpr):
    r"""The Frechet derivative :math:`L_{\exp}(X, E)` of the exponential at ``X`` in the direction ``E``, unevaluated
    (it has the shape of ``E``)."""

    def __new__(cls, X, E):
        return super().__new__(cls, sp.sympify(X), sp.sympify(E))

    @property
    def shape(self):
        """The shape of the direction ``E``."""
        return self.args[1].shape

    def _latex(self, printer):
        return r"L_{\exp}\left(%s, %s\right)" % (printer._print(self.args[0]), printer._print(self.args[1]))

    def _sympystr(self, printer):
        return "L_exp(%s, %s)" % (printer._print(self.args[0]), printer._print(self.args[1]))


class Phi(alg.UnaryMatrixExpr):
    r""":math:`\varphi(X) = \int_0^1 e^{sX}ds = \sum_{m \ge 0} X^m/(m+1)!`, unevaluated."""

    def _latex(self, printer):
        return r"\varphi\left(%s\right)" % printer._print(self.arg)

    def _sympystr(self, printer):
        return "phi(%s)" % printer._print(self.arg)


def _nc_product_check() -> Check:
    """The lhs is an unevaluated product of explicit matrices with free-algebra entries, the rhs an explicit matrix of
    the same shape, and every entry of the product equals the rhs's in the free algebra (no relations)."""

    def decide(lhs, rhs):
        if not (isinstance(lhs, MatMul) and isinstance(rhs, sp.ImmutableMatrix)):
            return False
        got = sp.Matrix(lhs.args[0])
        for f in lhs.args[1:]:
            got = got * sp.Matrix(f)
        return got.shape == rhs.shape and all(nc_equal(a, b, ()) for a, b in zip(got, rhs))

    return relation(decide, "block product in the free algebra (no relations)")


def block_power_step() -> Step:
    r"""The induction step for the blocks of :math:`B^j`, :math:`B = [[X, E, F], [0, X, 0], [0, 0, 0]]`: if
    :math:`B^j = [[X^j, L_j, X^{j-1}F], [0, X^j, 0], [0, 0, 0]]` then :math:`B^{j+1}` has
    :math:`L_{j+1} = X^jE + L_jX`, so :math:`L_j = \sum_{i<j}X^iEX^{j-1-i}`: the series of
    ``exp(B)`` has the series of :math:`L_{\exp}(X, E)` and :math:`\varphi(X)F` in its blocks."""
    X, E, F, L = nc("X"), nc("E"), nc("F"), nc("L_j")
    j = sp.Symbol("j", integer=True, positive=True)
    z = sp.Integer(0)
    B = sp.ImmutableMatrix([[X, E, F], [z, X, z], [z, z, z]])
    Bj = sp.ImmutableMatrix([[X**j, L, X ** (j - 1) * F], [z, X**j, z], [z, z, z]])
    want = sp.ImmutableMatrix([[X ** (j + 1), X**j * E + L * X, X**j * F], [z, X ** (j + 1), z], [z, z, z]])
    return Step(MatMul(Bj, B, evaluate=False), want, "B^j B, block by block; so by induction "
                 "L_j = sum_{i<j} X^i E X^{j-1-i}", _nc_product_check())


def beta_step() -> Step:
    r""":math:`\int_0^1 \frac{s^i}{i!}\frac{(1-s)^m}{m!}ds = \frac{1}{(i+m+1)!}` (SymPy's integral, then
    ``gammasimp``): the integral :math:`\int_0^1 e^{sX}Ee^{(1-s)X}ds` and the series
    :math:`\sum_j \frac1{j!}\sum_{i<j}X^iEX^{j-1-i}` agree term by term (``m = 0``: the series of :math:`\varphi`)."""
    s = sp.Symbol("s", nonnegative=True)
    i, m = sp.symbols("i m", integer=True, nonnegative=True)
    lhs = sp.Integral(s**i * (1 - s) ** m / (sp.factorial(i) * sp.factorial(m)), (s, 0, 1))

    def decide(left, right):
        if not isinstance(left, sp.Integral):
            return False
        val = left.doit()
        val = val.args[0][0] if isinstance(val, sp.Piecewise) else val
        return sp.simplify(sp.gammasimp(val - right)) == 0

    return Step(lhs, 1 / sp.factorial(i + m + 1), "SymPy integration (the Beta integral)",
                relation(decide, "SymPy integral, then gammasimp"))


def block_exp_step(k, d) -> Step:
    r"""The cited block formula at the front end's block matrix (``X = -S``, ``E = RY_1^T``, ``F = R``), with
    ``X, E, F`` of shapes ``k x k``, ``k x k``, ``k x d``."""
    X, E, F = MatrixSymbol("X", k, k), MatrixSymbol("E", k, k), MatrixSymbol("F", k, d)
    zk, zkd, zdk = ZeroMatrix(k, k), ZeroMatrix(k, d), ZeroMatrix(d, k)
    B = BlockMatrix([[X, E, F], [zk, X, zkd], [zdk, zdk, ZeroMatrix(d, d)]])
    blocks = BlockMatrix([[alg.MatExp(X), FrechetExp(X, E), Phi(X) * F], [zk, alg.MatExp(X), zkd],
                          [zdk, zdk, Identity(d)]])
    return Step(alg.MatExp(B), blocks, "sum the blocks of B^j/j! (the block-power and Beta-integral steps); "
                "the front end's _exp_frechet_blocks with X = -S, E = R Y1^T, F = R gives K1, K2",
                lemma="exp_block_triangular")
