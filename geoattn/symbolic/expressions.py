"""The SymPy expressions that the torch kernels are generated from.

Each :class:`~geoattn.symbolic.kernel_spec.KernelSpec` names a kernel, its inputs (matrix symbols of
symbolic size, in the **row layout** used by the layers: ``x`` is
``(..., T, d)``, i.e. ``x = Z^T`` per sample), its outputs as matrix
expressions, and the ledger claims that verify those expressions. The claims
of the ``kernels`` family check every expression here against the seeds'
column-convention formulas, so what runs is what was checked.

Besides SymPy's own matrix expressions a few small nodes are needed
(:mod:`geoattn.symbolic.nodes`); :func:`~geoattn.symbolic.interpreter.evaluate`
computes any expression at explicit matrices (both re-exported here), and
:mod:`geoattn.symbolic.kernel_table` lists the kernels built from these
expressions.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import (
    Adjoint,
    DiagMatrix,
    HadamardProduct,
    Identity,
    Inverse,
    KroneckerProduct,
    MatrixSymbol,
    Trace,
)

from .interpreter import evaluate
from .kernel_spec import KernelSpec
from .nodes import Hodge4, PairMatrix, RealPart, StrictLower, StrictUpper, VectorMap

__all__ = [
    "StrictLower",
    "StrictUpper",
    "RealPart",
    "Hodge4",
    "VectorMap",
    "PairMatrix",
    "KernelSpec",
    "lsa_gradient_row_layout",
    "expm_divided_difference",
    "TAYLOR_SCHEMES",
    "TAYLOR_THETA",
    "taylor_ps_bindings",
    "taylor_ps_vjp_bindings",
    "taylor_names",
    "evaluate",
]

# symbolic sizes: T sequence length, d feature size (n for phase space halves)
T = sp.Symbol("T", integer=True, positive=True)
d = sp.Symbol("d", integer=True, positive=True)


# ---------------------------------------------------------------------------
# the expressions
# ---------------------------------------------------------------------------

C = MatrixSymbol("C", T, T)
x = MatrixSymbol("x", T, d)
A = MatrixSymbol("A", d, d)
W = MatrixSymbol("A", T, T)  # the linear symplectic weight (T x T)
q = MatrixSymbol("q", T, d)
G = MatrixSymbol("G", T, T)
I_T = Identity(T)

#: Cayley(C) = (I - C)(I + C)^{-1}, the seeds' form
CAYLEY_RIGHT = (I_T - C) * Inverse(I_T + C)

#: the kernel's form (I + C)^{-1}(I - C): equal (the factors commute; kernels.cayley_left_solve).
#: On CPU a left and a right batched solve take the same time within run-to-run noise.
CAYLEY = Inverse(I_T + C) * (I_T - C)

#: apply form in the row layout: (x^T Cayley(C))^T = 2 (I - C)^{-1} x - x for skew C
CAYLEY_APPLY_SOLVE = 2 * Inverse(I_T - C) * x - x

#: forming the matrix: (x^T Lambda)^T = Lambda^T x, with Lam bound to CAYLEY first
Lam = MatrixSymbol("Lam", T, T)
CAYLEY_APPLY_MATRIX = Lam.T * x

#: Cayley(C) of a skew C with T <= 3 (Rodrigues): C^3 = -a C with a = -Tr(C^2)/2, so (I + C)^{-1} =
#: ((1 + a) I - C + C^2)/(1 + a) and Cayley(C) = I + 2 (C^2 - C)/(1 + a); no solve
_C2 = MatrixSymbol("C2", T, T)
CAYLEY_SKEW_SMALL = [("C2", C**2), ("Lam", I_T + (_C2 - C) * (2 / (1 - Trace(_C2) / 2)))]
#: vector-Jacobian product of Lambda = Cayley(C), reusing the forward output, as the kernel binds it:
#: P = I + Lam^T once (a contiguous copy, so both batched products read contiguous operands), then
#: -1/2 P G P, scaled in place
_P = MatrixSymbol("P", T, T)
CAYLEY_VJP_BINDINGS = [("P", I_T + Lam.T), ("gC", -sp.Rational(1, 2) * _P * G * _P)]
CAYLEY_VJP = CAYLEY_VJP_BINDINGS[1][1].subs(_P, CAYLEY_VJP_BINDINGS[0][1])
#: one Newton--Schulz step towards the orthogonal polar factor of an almost orthogonal E, as the kernel binds it:
#: R = (3 I - E^T E) / 2, then E R; with D = E^T E - I the result's defect is -3/4 D^2 + 1/4 D^3 (cayley.polish)
Eo = MatrixSymbol("E", T, T)
_R = MatrixSymbol("R", T, T)
ORTHOGONAL_POLISH = [("R", (3 * I_T - Eo.T * Eo) / 2), ("N", Eo * _R)]


def skew_from_lower_expr(m):
    """``tril(M, -1) - tril(M, -1)^T`` as a matrix expression."""
    return StrictLower(m) - StrictLower(m).T


def uta_expr(m):
    """``triu(M, 1) - triu(M, 1)^T`` as a matrix expression."""
    return StrictUpper(m) - StrictUpper(m).T


#: Z^T A Z with Z = x^T (row layout)
VP_CORRELATION = x * A * x.T
VP_CORRELATION_LOWER = skew_from_lower_expr(x * A * x.T)


def lsa_gradient_row_layout():
    """Derive the linear symplectic update from F(Q) = 1/2 Tr(Q A Q^T).

    SymPy's matrix derivative gives ``grad_Q F`` (``Q`` is ``n x T`` in the
    column convention); the row layout ``q = Q^T`` is its transpose. The
    common right factor ``q`` is pulled out by the code generator, so the
    weight is symmetrised once and applied with one batched product.
    """
    Qc = MatrixSymbol("Q", d, T)
    grad = (Trace(Qc * W * Qc.T) / 2).diff(Qc)
    return grad.subs(Qc, q.T).T.doit()


LSA_UPDATE = lsa_gradient_row_layout()


# exp of a skew matrix through the Hermitian eigendecomposition i S = U diag(theta) U^H
U = MatrixSymbol("U", T, T)
theta = MatrixSymbol("theta", T, 1)
_a, _b = sp.symbols("a b", real=True)


def expm_divided_difference(conj: bool = False) -> sp.Lambda:
    """phi(a, b) = (e^{-ia} - e^{-ib}) / (-i(a - b)) in the stable form
    e^{-i(a+b)/2} sinc((a-b)/2); ``conj`` gives its complex conjugate."""
    sign = 1 if conj else -1
    return sp.Lambda((_a, _b), sp.exp(sign * sp.I * (_a + _b) / 2) * sp.sinc((_a - _b) / 2))


EXP_SKEW_FROM_EIGH = RealPart(U * DiagMatrix(VectorMap(theta, sp.Lambda(_a, sp.exp(-sp.I * _a)))) * Adjoint(U))
#: Cayley(C) for skew C from i C = U diag(theta) U^H: C has eigenvalues -i theta, Cayley maps them to
#: (1 + i theta) / (1 - i theta), of modulus one
CAYLEY_FROM_EIGH = RealPart(
    U * DiagMatrix(VectorMap(theta, sp.Lambda(_a, (1 + sp.I * _a) / (1 - sp.I * _a)))) * Adjoint(U)
)
EXP_SKEW_VJP = RealPart(U * HadamardProduct(Adjoint(U) * G * U, PairMatrix(theta, expm_divided_difference(conj=True))) * Adjoint(U))


# exp of a skew matrix by scaling and squaring of a truncated Taylor series
# ------------------------------------------------------------------------
# Note [Taylor scheme for exp_skew]
# exp(S) = exp(X)^(2^k) with X = S / 2^k and ||X||_1 <= 1/2. exp(X) is replaced by
# the Taylor polynomial p_m(X) = sum_{j <= m} X^j / j!, evaluated by the
# Paterson--Stockmeyer scheme: the powers X^2 .. X^r are formed, then
# p_m(X) = B_0 + X^r (B_1 + X^r (B_2 + ...)) with B_j = sum_{i < r} X^i / (r j + i)!,
# which takes (r - 1) + (m / r - 1) products instead of m - 1. The degree is chosen
# per dtype so that the truncation error of p_m and of its Frechet derivative is
# below the unit roundoff for ||X||_1 <= 1/2 (exp_skew.taylor_remainder).
# The backward pass is the forward-mode derivative of the same scheme at X^T in
# direction G (exp_skew.taylor_vjp), so it needs the scheme's intermediate
# matrices, which the forward kernel returns.

#: the scaled argument X = S / 2^k
X = MatrixSymbol("X", T, T)

#: float dtype -> (degree m, block size r) of the Paterson--Stockmeyer scheme
TAYLOR_SCHEMES = {"float64": (16, 4), "float32": (9, 3)}

#: the bound on ||X||_1 after scaling
TAYLOR_THETA = sp.Rational(1, 2)


def _power_name(i: int) -> str:
    return "X" if i == 1 else f"X{i}"


def taylor_names(m: int, r: int) -> list[str]:
    """Names the forward bindings of the degree-``m``, block-``r`` scheme bind, in order:
    the powers ``X2 .. Xr``, the Horner steps ``H{q-1} .. H1`` (``q = m / r``), then ``E``."""
    q = m // r
    return [_power_name(i) for i in range(2, r + 1)] + [f"H{j}" for j in range(q - 1, 0, -1)] + ["E"]


def taylor_ps_bindings(m: int, r: int) -> list[tuple[str, object]]:
    """Paterson--Stockmeyer evaluation of ``sum_{j <= m} X^j / j!`` as a list of bindings.

    Each binding may use the names bound before it; the last one, ``E``, is the
    polynomial. ``r`` must divide ``m`` (then the top block is a multiple of the identity).
    """
    if m % r or r < 2:
        raise ValueError(f"Expected a block size r >= 2 dividing the degree m. Got m={m}, r={r}.")
    q = m // r
    c = [1 / sp.factorial(k) for k in range(m + 1)]
    pw = {0: I_T, 1: X}
    out = []
    for i in range(2, r + 1):
        a = i // 2
        pw[i] = MatrixSymbol(_power_name(i), T, T)
        out.append((_power_name(i), pw[a] * pw[i - a]))

    def block(j):
        return sp.Add(*[c[r * j + i] * pw[i] for i in range(r) if r * j + i <= m])

    names = taylor_names(m, r)[r - 1 :]
    acc = c[m] * pw[r] + block(q - 1)
    prev = ""
    for name, j in zip(names, range(q - 1, -1, -1)):
        if j < q - 1:
            acc = MatrixSymbol(prev, T, T) * pw[r] + block(j)
        out.append((name, acc))
        prev = name
    return out


def taylor_ps_vjp_bindings(m: int, r: int) -> list[tuple[str, object]]:
    """The derivative of the scheme of :func:`taylor_ps_bindings` at ``A = X^T`` in direction ``G``.

    Inputs are ``X`` and the forward intermediates (transposed here: the scheme
    evaluated at ``X^T`` has the transposed intermediates); the last binding,
    ``gX``, is the gradient of ``<G, p_m(X)>`` with respect to ``X`` (exp_skew.taylor_vjp).
    """
    q = m // r
    c = [1 / sp.factorial(k) for k in range(m + 1)]
    pw = {1: X.T}
    d = {1: G}
    out = []
    for i in range(2, r + 1):
        a = i // 2
        pw[i] = MatrixSymbol(_power_name(i), T, T).T
        d[i] = MatrixSymbol(f"D{i}", T, T)
        out.append((f"D{i}", d[a] * pw[i - a] + pw[a] * d[i - a]))

    def dblock(j):
        return sp.Add(*[c[r * j + i] * d[i] for i in range(1, r) if r * j + i <= m])

    horner = taylor_names(m, r)[r - 1 : -1]  # H_{q-1} .. H_1 (forward names)
    acc = c[m] * d[r] + dblock(q - 1)
    prev = ""
    for j in range(q - 1, -1, -1):
        name = "gX" if j == 0 else f"dH{j}"
        if j < q - 1:
            hj1 = MatrixSymbol(horner[q - 2 - j], T, T)
            acc = MatrixSymbol(prev, T, T) * pw[r] + hj1.T * d[r] + dblock(j)
        out.append((name, acc))
        prev = name
    return out


#: Frechet derivative of squaring, adjoint form: the gradient of <G, E^2> is G E^T + E^T G
Ek = MatrixSymbol("E", T, T)
SQUARE_VJP = G * Ek.T + Ek.T * G


#: the lift Lambda-tilde = I_d (x) Lambda^T acting on row-stacked vectors (vec.right_multiplication)
LIFT = KroneckerProduct(Identity(d), Lam.T)

# linear-time volume-preserving attention
# ----------------------------------------
# Note [low-rank form]
# For x = Z^T (T x d) with thin QR factorisation x = Q R (Q^T Q = I_k, R k x d, k = min(T, d)), the
# correlation matrix is C = x A x^T = Q S Q^T with S = R A R^T (k x k, skew for skew A), and
# for every activation f with f(0) = I that is a power series, f(Q S Q^T) = I + Q (f(S) - I) Q^T
# (vp.lowrank_form). The layer output Lambda^T x is then x + Q (f(S) - I)^T R: two small
# products, one T x k by k x d product, no T x T matrix. The backward passes
# (vp.lowrank_cayley_vjp, vp.lowrank_exp_vjp) are written with the same factors, so they need
# three T x d by d x d products and d x d work only. The push-through form
# Z Cayley(Z^T A Z) = Cayley(Z Z^T A) Z (vp.push_through) is equivalent in exact arithmetic but
# solves with I + Z Z^T A, whose condition number grows with that of the Gram matrix Z Z^T; the
# QR form only ever inverts I + S with S skew (||(I + S)^{-1}|| <= 1).

#: the rank bound k = min(T, d) of the thin QR factorisation x = Q R: Q is T x k, R is k x d
k = sp.Symbol("k", integer=True, positive=True)
Qf = MatrixSymbol("Q", T, k)
Rf = MatrixSymbol("R", k, d)
#: the small skew matrix S = R A R^T, W = f(S) - I (k x k), the incoming gradient of the layer output
Sd = MatrixSymbol("S", k, k)
Wd = MatrixSymbol("W", k, k)
Gy = MatrixSymbol("Gy", T, d)
Y1 = MatrixSymbol("Y1", k, d)
K1 = MatrixSymbol("K1", k, k)
K2 = MatrixSymbol("K2", k, d)
I_k = Identity(k)
I_d = Identity(d)

_S0 = MatrixSymbol("S0", k, k)
#: S = R A R^T, skew-symmetrised after the product (equal for skew A; exactly skew in floating point)
LOWRANK_S = [("S0", Rf * A * Rf.T), ("S", (_S0 - _S0.T) / 2)]
#: Cayley(S) - I = -2 (I + S)^{-1} S
CAYLEY_MINUS_I = -2 * Inverse(I_k + Sd) * Sd
#: the same for skew S with k <= 3, without a solve: 2 (S^2 - S)/(1 - Tr(S^2)/2) (see CAYLEY_SKEW_SMALL)
_S2 = MatrixSymbol("S2", k, k)
CAYLEY_MINUS_I_SKEW_SMALL = [("S2", Sd**2), ("W", (_S2 - Sd) * (2 / (1 - Trace(_S2) / 2)))]
# Note [exp of a 4 x 4 skew matrix]
# so(4) is the sum of two commuting copies of so(3). With the Hodge star, S = S_+ + S_- where
# S_pm = (S pm *S)/2 commute and square to -theta_pm^2 I, theta_pm^2 = -Tr(S_pm^2)/4. Hence
# exp(S) = exp(S_+) exp(S_-) with exp(S_pm) = cos(theta_pm) I + sinc(theta_pm) S_pm (claim
# exp_skew.hodge_form): no series, no squarings and no eigendecomposition, at every norm, in a few
# 4 x 4 products. A smaller skew matrix is padded with zeros: exp(diag(S, 0)) = diag(exp(S), 1).
#: the 4 x 4 skew input of the kernel exp_skew_so4
S4 = MatrixSymbol("S", 4, 4)
_I4 = Identity(4)
_H4, _Sp, _Sm, _Sp2, _Sm2, _Ep, _Em = (MatrixSymbol(n, 4, 4) for n in ("H", "Sp", "Sm", "Sp2", "Sm2", "Ep", "Em"))


def _half_turn(half, square):
    """cos(theta) I + sinc(theta) X for X = ``half`` with X^2 = ``square`` = -theta^2 I."""
    theta = sp.sqrt(-Trace(square)) / 2
    return sp.cos(theta) * _I4 + sp.sinc(theta) * half


#: exp(S) for skew 4 x 4 S as the product of the half-turns of S_pm = (S pm *S)/2 (exp_skew.hodge_form)
EXP_SO4 = [
    ("H", Hodge4(S4)),
    ("Sp", (S4 + _H4) / 2),
    ("Sm", (S4 - _H4) / 2),
    ("Sp2", _Sp**2),
    ("Sm2", _Sm**2),
    ("Ep", _half_turn(_Sp, _Sp2)),
    ("Em", _half_turn(_Sm, _Sm2)),
    ("E", _Ep * _Em),
]

#: the Gram (push-through) form of the Cayley layer in the row layout: Z Cayley(Z^T A Z) = Cayley(Z Z^T A) Z with
#: Z = x^T, so y = x Cayley(G A)^T = 2 x (I + G A)^{-T} - x with the d x d Gram matrix G = x^T x (vp.push_through)
_Gd = MatrixSymbol("G", d, d)
_Md = MatrixSymbol("M", d, d)
GRAM_CAYLEY = [("G", x.T * x), ("M", I_d + _Gd * A), ("y", 2 * x * Inverse(_Md.T) - x)]

# Note [closed-form Gram solve]
# For d <= 4 the d x d solve of GRAM_CAYLEY has a closed form. K = G A (G symmetric, A skew) has
# Tr K = Tr K^3 = 0, so by Cayley--Hamilton and Newton's identities K^4 + c2 K^2 + c4 I = 0 with
# c2 = -Tr(K^2)/2 and c4 = (Tr(K^2)^2 - 2 Tr(K^4))/8 (c4 = 0 for d <= 3), and then
# (I + K)((1 + c2)(I - K) + K^2 - K^3) = (1 + c2 + c4) I (ledger vp.gram_closed_form). The kernel needs
# N = (I + K)^{-T} = (I - J)^{-1} with J = A G = -K^T, that is N = ((1 + c2)(I + J) + J^2 + J^3)/(1 + c2 + c4)
# (Tr J^2 = Tr K^2, Tr J^4 = Tr K^4), and P = 2N - I, so that y = x P. It is printed in the
# structure-of-arrays layout: a d x d matrix is a tensor (d, d, *batch), so every product is d^2
# elementwise multiply-adds over the batch and no LAPACK call is made.
Gram = MatrixSymbol("Gram", d, d)
_J, _J2 = MatrixSymbol("J", d, d), MatrixSymbol("J2", d, d)
_Nu = MatrixSymbol("Nu", d, d)
_Ng = MatrixSymbol("N", d, d)
_c2 = 1 - Trace(_J2) / 2
_det = _c2 + (Trace(_J2) ** 2 - 2 * Trace(_J2 * _J2)) / 8
#: the denominator D = det(I + G A) of the closed form, a number per matrix (a polynomial in traces of J^2)
GRAM_CLOSED_DET = _det
GRAM_CLOSED = [
    ("J", A * Gram),
    ("J2", _J * _J),
    ("Nu", (_c2 * I_d + _J2) * (I_d + _J)),  # (1 + c2)(I + J) + J^2 + J^3, factored (J^2 and J commute)
    ("N", _Nu * (1 / _det)),
    ("P", 2 * _Ng - I_d),
    ("R", _Ng - _J * _Ng - I_d),  # (I + G A)^T N - I: the runtime's residual check (Note [closed-form residual check])
]
#: the backward of y = x P through N = (I + G A)^{-T}: with P_bar = x^T y_bar, M_bar = -2 N P_bar^T N is the
#: gradient in M = I + G A, and x_bar = y_bar P^T + x H with H = A M_bar^T - M_bar A (from G = x^T x);
#: A_bar = skew(sum over the batch of G M_bar) (vp.gram_closed_form_vjp)
Pbar = MatrixSymbol("Pbar", d, d)
_Mbar = MatrixSymbol("Mbar", d, d)
GRAM_CLOSED_VJP = [("Mbar", -2 * _Ng * Pbar.T * _Ng), ("H", A * _Mbar.T - _Mbar * A)]

# Note [the closed-form Gram layer]
# The whole layer, token-sized products included, as bindings: the forward takes x (T x d) to the Gram matrix,
# the closed form and y = x P; the backward takes x, the incoming gradient Gy and the forward's N to x_bar,
# the per-sample A_bar before skew-symmetrisation (Gram M_bar; the batch sum and skew part are the caller's).
# These are the sources of the native CPU kernels (geoattn.codegen.cprinter), and the backward list is what the
# claim vp.gram_closed_form_vjp evaluates against the T x T layer, so the C kernels' x_bar is the verified one
# (the eager torch backward of geoattn.kernels._gram writes the same products by hand; the tests compare the
# two paths). Token-sized products have one of two shapes the C printer knows: a sum over the
# tokens of X^T Y (both T x d), or a row-by-row map X S + Y S' (S, S' d x d).
_Gram_b = MatrixSymbol("Gram", d, d)
_P_b = MatrixSymbol("P", d, d)
_H_b = MatrixSymbol("H", d, d)
GRAM_CLOSED_LAYER = [("Gram", x.T * x), *GRAM_CLOSED, ("y", x * _P_b)]
GRAM_CLOSED_LAYER_VJP = [
    ("Gram", x.T * x),  # recomputed in the same pass over the tokens as Pbar: the forward saves only x and N
    ("Pbar", x.T * Gy),
    ("P", 2 * _Ng - I_d),
    *GRAM_CLOSED_VJP,
    ("gx", Gy * _P_b.T + x * _H_b),
    ("gA", _Gram_b * _Mbar),
]
#: the layer output x + Q (f(S) - I)^T R, with the d x d factor bound first
LOWRANK_K = Wd.T * Rf
LOWRANK_APPLY = x + Qf * MatrixSymbol("K", k, d)
_P1 = MatrixSymbol("P1", d, d)
_P2 = MatrixSymbol("P2", d, d)
_GA0 = MatrixSymbol("gA0", d, d)
_NR = MatrixSymbol("NR", k, d)
_P2A = MatrixSymbol("P2A", d, d)
#: the Cayley backward, from the saved factors; the forward uses the skew part of A (S is
#: skew-symmetrised), so the gradient with respect to A is the skew part
LOWRANK_CAYLEY_VJP = [
    ("Y1", Qf.T * Gy),
    ("NR", (I_k + Wd.T / 2) * Rf),
    ("P1", Y1.T * _NR),
    ("P2", _NR.T * Rf),
    ("P2A", _P2 * A),
    ("gx", Gy * (I_d - 2 * _P2A) + Qf * (Wd * Y1 * (I_d - _P2A) - 2 * _NR * (_P1 * A.T))),
    ("gA0", -2 * _P2.T * _P1),
    ("gA", (_GA0 - _GA0.T) / 2),
]
#: the exponential backward, from the saved factors and K1 = L_exp(-S, R Y1^T), K2 = phi(-S) R
LOWRANK_EXP_VJP = [
    ("gx", Gy * (I_d + K2.T * Rf * A) + Qf * (Wd * Y1 + K1 * Rf * A.T + K1.T * Rf * A - Y1 * K2.T * Rf * A)),
    ("gA0", Rf.T * K1 * Rf),
    ("gA", (_GA0 - _GA0.T) / 2),
]


