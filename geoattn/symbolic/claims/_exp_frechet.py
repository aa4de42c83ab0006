r"""The exponential's Frechet derivative as the low-rank exponential backward uses it (not public).

* :class:`FrechetExp` and :class:`Phi`: unevaluated matrix expressions :math:`L_{\exp}(X, E)` and
  :math:`\varphi(X) = \int_0^1 e^{sX}ds`, the quantities the claim ``vp.lowrank_exp_vjp`` names;
* the lemma ``exp_block_triangular`` (Van Loan's block formula), registered here, and the steps that support it:
  the block-power induction step in the free algebra and the Beta integral that matches the integral and the
  series forms of :math:`L_{\exp}` term by term (both checked from their sides);
* the derivation of ``exp_skew.vjp``: the gradient of :math:`\langle G, e^S\rangle` by the Daleckii--Krein form
  (the lemma ``daleckii_krein``, registered here) at the eigendecomposition of a skew ``S``.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import (
    Adjoint, BlockMatrix, DiagMatrix, HadamardProduct, Identity, MatMul, MatrixExpr, MatrixSymbol, Trace, ZeroMatrix,
)

from .. import algebra as alg
from .. import expressions as ex
from ..lemmas import LEMMAS, register
from ..nodes import PairMatrix
from ..proof import Check, identity, relation
from ..evidence import Derivation, Step
from ._free_algebra import nc, nc_equal
from ._kernel_checks import Gradient

__all__ = ["FrechetExp", "Phi", "block_power_step", "beta_step", "block_exp_step", "exp_vjp_derivation"]

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


# ---------------------------------------------------------------------------
# exp_skew.vjp: the Daleckii--Krein form of the gradient
# ---------------------------------------------------------------------------

if "daleckii_krein" not in LEMMAS:
    register(
        "daleckii_krein",
        r"for a normal X = V\,\mathrm{diag}(\lambda)V^H (V unitary) and f analytic on its spectrum, "
        r"L_f(X, E) = V\left(V^HEV\circ f^{[1]}(\lambda)\right)V^H with f^{[1]}_{jk} = "
        r"\frac{f(\lambda_j) - f(\lambda_k)}{\lambda_j - \lambda_k} (f'(\lambda_j) where \lambda_j = \lambda_k); "
        r"for real X, E and f with real Taylor coefficients L_f(X, E) is real",
        "Daleckii and Krein, Integration and differentiation of functions of Hermitian operators, AMS Transl. (2) "
        "47 (1965) 1-30; Higham, Functions of Matrices (SIAM, 2008), Theorem 3.11 and Corollary 3.12",
    )

T, G = ex.T, ex.G
_Sg = sp.MatrixSymbol("S", T, T)
_a, _b = sp.symbols("a b", real=True)
#: the divided difference of exp at the eigenvalues i theta_j, i theta_k of S^T = -S
_DD_AT_I_THETA = sp.Lambda((_a, _b), (sp.exp(sp.I * _a) - sp.exp(sp.I * _b)) / (sp.I * _a - sp.I * _b))


def _spectral_form(fn) -> sp.Expr:
    """``U (U^H G U o [fn(theta_j, theta_k)]) U^H``."""
    return ex.U * HadamardProduct(Adjoint(ex.U) * G * ex.U, PairMatrix(ex.theta, fn)) * Adjoint(ex.U)


def _pair_function(expr):
    """The ``Lambda`` of the one :class:`PairMatrix` in ``expr`` and ``expr`` with it replaced by a marker."""
    pairs = [p for p in sp.preorder_traversal(expr) if isinstance(p, PairMatrix)]
    if len(pairs) != 1:
        return None, None
    marker = sp.MatrixSymbol("Phi_marker", *pairs[0].shape)
    return pairs[0].fn, expr.xreplace({pairs[0]: marker})


def _same_divided_difference(lhs, rhs) -> bool:
    r"""Both sides are one expression up to the function ``f`` of their :class:`PairMatrix`, and the two functions
    agree: for ``a != b`` after rewriting to exponentials and simplifying, and at ``a = b`` the rhs's value is the
    limit of the lhs's (the divided difference's diagonal is the derivative)."""
    f1, rest1 = _pair_function(lhs)
    f2, rest2 = _pair_function(rhs)
    if f1 is None or f2 is None or rest1 != rest2:
        return False
    u, v = sp.symbols("u v", real=True)
    e1, e2 = f1(u, v), f2(u, v)
    off = sp.simplify(sp.expand((e1 - e2.replace(sp.sinc, lambda z: sp.sin(z) / z)).rewrite(sp.exp))) == 0
    diag = sp.simplify(sp.limit(e1, v, u) - e2.subs(v, u)) == 0
    return off and diag


def _integral_entry_step() -> Step:
    r"""The entries of the integral form in the eigenbasis: :math:`\int_0^1 e^{t\lambda_j}e^{(1-t)\lambda_k}dt =
    (e^{\lambda_j} - e^{\lambda_k})/(\lambda_j - \lambda_k)` (SymPy's integral, its generic branch
    :math:`\lambda_j \ne \lambda_k`): the cited divided-difference form agrees with exp_frechet_integral."""
    t, lj, lk = sp.symbols("t lambda_j lambda_k")
    lhs = sp.Integral(sp.exp(t * lj) * sp.exp((1 - t) * lk), (t, 0, 1))

    def decide(left, right):
        if not isinstance(left, sp.Integral):
            return False
        val = left.doit()
        val = val.args[0][0] if isinstance(val, sp.Piecewise) else val
        return sp.simplify(val - right) == 0

    return Step(lhs, (sp.exp(lj) - sp.exp(lk)) / (lj - lk), "SymPy integration (lambda_j != lambda_k)",
                relation(decide, "SymPy integral, generic branch"))


def exp_vjp_derivation() -> Derivation:
    r"""The gradient of :math:`\langle G, e^S\rangle` is :math:`L_{\exp}(S^T, G)` (cited), :math:`S^T = -S =
    U\,\mathrm{diag}(i\theta)U^H` (checked from the hypotheses), the Daleckii--Krein form at the eigenvalues
    :math:`i\theta` (cited), the kernel's stable divided difference (checked, both branches), and the real part
    (the gradient is real: cited with Daleckii--Krein)."""
    S, U, th = _Sg, ex.U, ex.theta
    Dth = DiagMatrix(th)
    grad = Gradient(Trace(G.T * alg.MatExp(S)), S)
    at_s_t = FrechetExp(S.T, G)
    at_eig = FrechetExp(sp.I * U * Dth * Adjoint(U), G)
    divided = _spectral_form(_DD_AT_I_THETA)
    stable = _spectral_form(ex.expm_divided_difference(conj=True))
    entry = _integral_entry_step()
    return Derivation(
        assumptions=[r"S^T = -S\ \text{real},\ iS = U\,\mathrm{diag}(\theta)U^H\ (U\ \text{unitary},\ \theta\ "
                     r"\text{real}),\ G\ \text{real}"],
        facts={"S skew": {S.T: -S}, "eigendecomposition": {S: -sp.I * U * Dth * Adjoint(U)}},
        subject=(entry.lhs,),
        steps=[
            entry,
            Step(grad, at_s_t, "the gradient of <G, e^S> under Tr(X^T Y) is the adjoint of L_exp(S, .), "
                 "L_exp(S^T, G)", lemma="exp_frechet_integral"),
            Step(at_s_t, at_eig, "S^T = -S and S = -i U diag(theta) U^H", identity()),
            Step(at_eig, divided, "Daleckii-Krein at the eigenvalues i theta of the normal S^T (divided "
                 "differences of exp; the entries are the integral of step 1 at lambda = i theta)",
                 lemma="daleckii_krein"),
            Step(divided, stable, "the kernel's stable form e^{i(a+b)/2} sinc((a-b)/2): equal for a != b, and "
                 "e^{ia} (the derivative) at a = b", relation(_same_divided_difference, "same divided difference")),
            Step(stable, ex.EXP_SKEW_VJP, "the gradient of a real function in a real direction is real: it equals "
                 "its real part (the kernel drops the round-off imaginary part)", lemma="daleckii_krein"),
        ],
        remark=r"\frac{\partial L}{\partial S} = \operatorname{Re}\left(U\,(U^HGU\circ\bar\Phi)\,U^H\right),\quad "
        r"\Phi_{jk} = e^{-i(\theta_j + \theta_k)/2}\,\mathrm{sinc}\tfrac{\theta_j - \theta_k}{2}",
        conclusion=sp.Eq(grad, ex.EXP_SKEW_VJP, evaluate=False),
    )
