"""Torch kernels generated from the verified SymPy expressions.

DO NOT EDIT: this file is written by ``geoattn codegen`` from
``geoattn/symbolic/expressions.py``; ``geoattn codegen --check`` fails when it is
stale. Every function is batched over leading dimensions and builds identity
matrices with the dtype and device of its inputs.

expressions-sha256: b56d683b37ae154d67c04237ffabb5ea46c1a8f6d8058ab76bd5c8640a84e050
printer-version: 5

Sources (kernel: expression  [ledger claims]):
  cayley_matrix: Lam = (I + C)**(-1)*(I - C)  [cayley.orthogonal, kernels.cayley_left_solve]
  cayley_skew_small: C2 = C**2; Lam = (2/(1 - Trace(C2)/2))*(-C + C2) + I  [kernels.cayley_skew_small]
  cayley_apply_solve: y = 2*(I - C)**(-1)*x - x  [cayley.apply_form]
  cayley_apply_matrix: y = Lam.T*x  [cayley.orthogonal, cayley.apply_form]
  cayley_vjp: P = I + Lam.T; gC = -(1/2)*P*G*P  [cayley.vjp]
  orthogonal_polish: R = (3/2)*I - (1/2)*E.T*E; N = E*R  [cayley.polish]
  skew_from_lower: S = StrictLower(C) - StrictLower(C).T  [vp.lower_assign_skew, kernels.triangle_forms]
  upper_triangular_asymmetrize: S = StrictUpper(C) - StrictUpper(C).T  [exp.uta_skew, kernels.triangle_forms]
  vp_correlation: C = x*A*x.T  [vp.skew_weighting, kernels.row_layout]
  vp_correlation_lower: C = StrictLower(x*A*x.T) - StrictLower(x*A*x.T).T  [vp.lower_assign_skew, kernels.row_layout]
  lsa_update: dq = (1/2)*A*q + (1/2)*A.T*q  [lsa.gradient, kernels.lsa_row_layout]
  exp_skew_from_eigh: E = RealPart(U*DiagMatrix(VectorMap(theta, Lambda(a, exp(-I*a))))*Adjoint(U))  [exp_skew.eigh_form]
  cayley_from_eigh: Lam = RealPart(U*DiagMatrix(VectorMap(theta, Lambda(a, (I*a + 1)/(-I*a + 1))))*Adjoint(U))  [cayley.eigh_form]
  exp_skew_vjp: gS = RealPart(U*(HadamardProduct(Adjoint(U)*G*U, PairMatrix(theta, Lambda((a, b), exp(I*(a + b)/2)*sinc(a/2 - b/2)))))*Adjoint(U))  [exp_skew.vjp]
  exp_taylor16: X2 = X**2; X3 = X*X2; X4 = X2**2; H3 = (1/479001600)*I + (1/6227020800)*X + (1/87178291200)*X2 + (1/1307674368000)*X3 + (1/20922789888000)*X4; H2 = (1/40320)*I + H3*X4 + (1/362880)*X + (1/3628800)*X2 + (1/39916800)*X3; H1 = (1/24)*I + H2*X4 + (1/120)*X + (1/720)*X2 + (1/5040)*X3; E = I + H1*X4 + X + (1/2)*X2 + (1/6)*X3  [exp_skew.taylor_form, exp_skew.taylor_remainder]
  exp_taylor16_vjp: D2 = G*X.T + X.T*G; D3 = G*X2.T + X.T*D2; D4 = D2*X2.T + X2.T*D2; dH3 = (1/87178291200)*D2 + (1/1307674368000)*D3 + (1/20922789888000)*D4 + (1/6227020800)*G; dH2 = (1/3628800)*D2 + (1/39916800)*D3 + (1/362880)*G + dH3*X4.T + H3.T*D4; dH1 = (1/720)*D2 + (1/5040)*D3 + (1/120)*G + dH2*X4.T + H2.T*D4; gX = (1/2)*D2 + (1/6)*D3 + G + dH1*X4.T + H1.T*D4  [exp_skew.taylor_vjp, exp_skew.taylor_remainder]
  exp_taylor9: X2 = X**2; X3 = X*X2; H2 = (1/720)*I + (1/5040)*X + (1/40320)*X2 + (1/362880)*X3; H1 = (1/6)*I + H2*X3 + (1/24)*X + (1/120)*X2; E = I + H1*X3 + X + (1/2)*X2  [exp_skew.taylor_form, exp_skew.taylor_remainder]
  exp_taylor9_vjp: D2 = G*X.T + X.T*G; D3 = G*X2.T + X.T*D2; dH2 = (1/40320)*D2 + (1/362880)*D3 + (1/5040)*G; dH1 = (1/120)*D2 + (1/24)*G + dH2*X3.T + H2.T*D3; gX = (1/2)*D2 + G + dH1*X3.T + H1.T*D3  [exp_skew.taylor_vjp, exp_skew.taylor_remainder]
  vp_lowrank_skew: S0 = R*A*R.T; S = (1/2)*S0 - (1/2)*S0.T  [vp.lowrank_form]
  cayley_minus_identity: W = -2*(I + S)**(-1)*S  [vp.lowrank_form]
  vp_gram_cayley: G = x.T*x; M = I + G*A; y = -x + 2*x*M.T**(-1)  [vp.gram_form]
  vp_gram_closed: J = A*Gram; J2 = J**2; Nu = ((1 - Trace(J2)/2)*I + J2)*(I + J); N = 1/(-Trace(J2**2)/4 + Trace(J2)**2/8 - Trace(J2)/2 + 1)*Nu; P = -I + 2*N; R = -I - J*N + N  [vp.gram_closed_form]
  vp_gram_closed_vjp: Mbar = -2*N*Pbar.T*N; H = A*Mbar.T - Mbar*A  [vp.gram_closed_form_vjp]
  cayley_minus_identity_skew_small: S2 = S**2; W = (2/(1 - Trace(S2)/2))*(-S + S2)  [kernels.cayley_skew_small]
  exp_skew_so4: H = Hodge4(S); Sp = (1/2)*H + (1/2)*S; Sm = -(1/2)*H + (1/2)*S; Sp2 = Sp**2; Sm2 = Sm**2; Ep = cos(sqrt(-Trace(Sp2))/2)*I + sinc(sqrt(-Trace(Sp2))/2)*Sp; Em = cos(sqrt(-Trace(Sm2))/2)*I + sinc(sqrt(-Trace(Sm2))/2)*Sm; E = Ep*Em  [exp_skew.hodge_form]
  vp_lowrank_apply: K = W.T*R; y = Q*K + x  [vp.lowrank_form]
  vp_lowrank_project: Y1 = Q.T*Gy  [vp.lowrank_exp_vjp]
  vp_lowrank_cayley_vjp: Y1 = Q.T*Gy; NR = (I + (1/2)*W.T)*R; P1 = Y1.T*NR; P2 = NR.T*R; P2A = P2*A; gx = Gy*(I - 2*P2A) + Q*(-2*NR*P1*A.T + W*Y1*(I - P2A)); gA0 = -2*P2.T*P1; gA = (1/2)*gA0 - (1/2)*gA0.T  [vp.lowrank_cayley_vjp]
  vp_lowrank_exp_vjp: gx = Gy*(I + K2.T*R*A) + Q*(K1*R*A.T + W*Y1 - Y1*K2.T*R*A + K1.T*R*A); gA0 = R.T*K1*R; gA = (1/2)*gA0 - (1/2)*gA0.T  [vp.lowrank_exp_vjp]
  square_vjp: gE = G*E.T + E.T*G  [exp_skew.square_vjp]
  lift: L = KroneckerProduct(I, Lam.T)  [vec.right_multiplication, lift.orthogonal, lift.symplectic]
  symattn_update_matrix_softmax: C = z*A*z.T; G = Softmax(C, all, False); U = G*z*A.T + G.T*z*A  [symattn.potential_gradient, symattn.layer_symplectic]
  symattn_update_vector_softmax: C = z*A*z.T; G = Softmax(C, columns, False); U = G*z*A.T + G.T*z*A  [symattn.potential_gradient, symattn.layer_symplectic]
  symattn_update_matrix_one_softmax: C = z*A*z.T; G = Softmax(C, all, True); U = G*z*A.T + G.T*z*A  [symattn.potential_gradient, symattn.layer_symplectic]
  symattn_update_vector_one_softmax: C = z*A*z.T; G = Softmax(C, columns, True); U = G*z*A.T + G.T*z*A  [symattn.potential_gradient, symattn.layer_symplectic]
  symattn_vjp_all: Cd = V*A*z.T + z*A*V.T; K = SoftmaxJVP(G, Cd, all); P = G*V + K*z; H = G.T*V; R = H + K.T*z; gz = P*A.T + R*A; gA = H.T*z + z.T*P  [symattn.layer_vjp]
  symattn_vjp_columns: Cd = V*A*z.T + z*A*V.T; K = SoftmaxJVP(G, Cd, columns); P = G*V + K*z; H = G.T*V; R = H + K.T*z; gz = P*A.T + R*A; gA = H.T*z + z.T*P  [symattn.layer_vjp]
"""

import torch

from ._lapack import solve

__all__ = ["cayley_matrix", "cayley_skew_small", "cayley_apply_solve", "cayley_apply_matrix", "cayley_vjp", "orthogonal_polish", "skew_from_lower", "upper_triangular_asymmetrize", "vp_correlation", "vp_correlation_lower", "lsa_update", "exp_skew_from_eigh", "cayley_from_eigh", "exp_skew_vjp", "exp_taylor16", "exp_taylor16_vjp", "exp_taylor9", "exp_taylor9_vjp", "vp_lowrank_skew", "cayley_minus_identity", "vp_gram_cayley", "vp_gram_closed", "vp_gram_closed_vjp", "cayley_minus_identity_skew_small", "exp_skew_so4", "vp_lowrank_apply", "vp_lowrank_project", "vp_lowrank_cayley_vjp", "vp_lowrank_exp_vjp", "square_vjp", "lift", "symattn_update_matrix_softmax", "symattn_update_vector_softmax", "symattn_update_matrix_one_softmax", "symattn_update_vector_one_softmax", "symattn_vjp_all", "symattn_vjp_columns", "soa_mm", "soa_tr", "soa_tr_mm", "soa_eye", "sin_over", "N_OUTPUTS", "NATIVE_FUNCTIONS", "SYMATTN_ACTIVATIONS"]


def sin_over(x):
    """sin(x)/x, 1 at x = 0, for real x. Not torch.sinc(x / pi): its argument is rounded twice, so its error grows
    with |x| (about |x| eps: at |x| = 1e3 in float32, a rotation built from it is orthogonal to 2e-4 only)."""
    zero = x == 0
    safe = torch.where(zero, torch.ones_like(x), x)
    return torch.where(zero, torch.ones_like(x), torch.sin(safe) / safe)


def soa_mm(a, b):
    """Product of (n, m, *batch) and (m, p, *batch) matrices in the structure-of-arrays layout (the same
    multiply-adds for every batch size, so a sample's result never depends on its batch)."""
    out = a[:, 0:1] * b[0:1]
    for k in range(1, a.shape[1]):
        out.addcmul_(a[:, k:k + 1], b[k:k + 1])
    return out


def soa_tr(a):
    """Trace of (n, n, *batch) matrices: shape (*batch)."""
    out = a[0, 0].clone()
    for k in range(1, a.shape[0]):
        out += a[k, k]
    return out


def soa_tr_mm(a, b):
    """Tr(a b) of (n, n, *batch) matrices without the product: the sum of a * b^T."""
    return (a * b.transpose(0, 1)).flatten(0, 1).sum(0)


def soa_eye(n, like):
    """The n x n identity shaped to broadcast against (n, n, *batch) matrices like ``like``."""
    return torch.eye(n, dtype=like.dtype, device=like.device).view(n, n, *([1] * (like.dim() - 2)))


def cayley_matrix(C):
    """Cayley transform Lambda = (I - C)(I + C)^{-1} = (I + C)^{-1}(I - C), batched over leading dims.

    Generated from:
    Lam = (I + C)**(-1)*(I - C)
    Verified by: cayley.orthogonal, kernels.cayley_left_solve
    """
    eye = torch.eye(C.shape[-1], dtype=C.dtype, device=C.device)
    Lam = solve(eye + C, eye - C)
    return Lam


def cayley_skew_small(C):
    """Cayley(C) = I + 2 (C^2 - C)/(1 - Tr(C^2)/2) for skew C of size T <= 3, without a solve.

    Generated from:
    C2 = C**2
    Lam = (2/(1 - Trace(C2)/2))*(-C + C2) + I
    Verified by: kernels.cayley_skew_small
    """
    eye = torch.eye(C.shape[-1], dtype=C.dtype, device=C.device)
    C2 = C @ C
    Lam = (2 / (1 - 0.5 * C2.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None])) * (C2 - C) + eye
    return Lam


def cayley_apply_solve(C, x):
    """Row-layout layer output (x^T Cayley(C))^T = 2 (I - C)^{-1} x - x for skew C, without forming Cayley(C).

    Generated from:
    y = 2*(I - C)**(-1)*x - x
    Verified by: cayley.apply_form
    """
    eye = torch.eye(C.shape[-1], dtype=C.dtype, device=C.device)
    y = 2 * solve(eye - C, x) - x
    return y


def cayley_apply_matrix(Lam, x):
    """Row-layout layer output (x^T Lam)^T = Lam^T x from the formed matrix Lam = Cayley(C).

    Generated from:
    y = Lam.T*x
    Verified by: cayley.orthogonal, cayley.apply_form
    """
    y = Lam.mT @ x
    return y


def cayley_vjp(Lam, G):
    """Gradient of <G, Cayley(C)> with respect to C, from the forward output Lam = Cayley(C).

    Generated from:
    P = I + Lam.T
    gC = -(1/2)*P*G*P
    Verified by: cayley.vjp
    """
    P = Lam.mT.clone(memory_format=torch.contiguous_format)
    P.diagonal(dim1=-2, dim2=-1).add_(1)
    gC = (P @ G) @ P
    gC.mul_(-0.5)
    return gC


def orthogonal_polish(E):
    """One Newton-Schulz step E (3I - E^T E)/2 towards the orthogonal polar factor: squares the defect.

    Generated from:
    R = (3/2)*I - (1/2)*E.T*E
    N = E*R
    Verified by: cayley.polish
    """
    eye = torch.eye(E.shape[-1], dtype=E.dtype, device=E.device)
    R = 1.5 * eye - 0.5 * (E.mT @ E)
    N = E @ R
    return N


def skew_from_lower(C):
    """Copy the strict lower triangle to the upper one, negated (tensor_mat_skew_sym_assign).

    Generated from:
    S = StrictLower(C) - StrictLower(C).T
    Verified by: vp.lower_assign_skew, kernels.triangle_forms
    """
    t0 = torch.tril(C, -1)
    S = t0 - t0.mT
    return S


def upper_triangular_asymmetrize(C):
    """Keep the strict upper triangle, put its negated transpose below (seed 003).

    Generated from:
    S = StrictUpper(C) - StrictUpper(C).T
    Verified by: exp.uta_skew, kernels.triangle_forms
    """
    t0 = torch.triu(C, 1)
    S = t0 - t0.mT
    return S


def vp_correlation(x, A):
    """Row-layout volume-preserving correlations Z^T A Z = x A x^T (Z = x^T).

    Generated from:
    C = x*A*x.T
    Verified by: vp.skew_weighting, kernels.row_layout
    """
    C = (x @ A) @ x.mT
    return C


def vp_correlation_lower(x, A):
    """Row-layout skew_from_lower(Z^T A Z) for the arbitrary weighting.

    Generated from:
    C = StrictLower(x*A*x.T) - StrictLower(x*A*x.T).T
    Verified by: vp.lower_assign_skew, kernels.row_layout
    """
    t0 = torch.tril((x @ A) @ x.mT, -1)
    C = t0 - t0.mT
    return C


def lsa_update(q, A):
    """Linear symplectic attention update in the row layout: the gradient of 1/2 Tr(Q A Q^T), q = Q^T.

    Generated from:
    dq = (1/2)*A*q + (1/2)*A.T*q
    Verified by: lsa.gradient, kernels.lsa_row_layout
    """
    dq = (0.5 * (A + A.mT)) @ q
    return dq


def exp_skew_from_eigh(U, theta):
    """exp(S) for skew S from the eigendecomposition i S = U diag(theta) U^H.

    Generated from:
    E = RealPart(U*DiagMatrix(VectorMap(theta, Lambda(a, exp(-I*a))))*Adjoint(U))
    Verified by: exp_skew.eigh_form
    """
    E = ((U * torch.exp(-1j * theta).unsqueeze(-2)) @ U.mH).real
    return E


def cayley_from_eigh(U, theta):
    """Cayley(C) for skew C from the eigendecomposition i C = U diag(theta) U^H (used at large norms).

    Generated from:
    Lam = RealPart(U*DiagMatrix(VectorMap(theta, Lambda(a, (I*a + 1)/(-I*a + 1))))*Adjoint(U))
    Verified by: cayley.eigh_form
    """
    Lam = ((U * ((1 + 1j * theta) / (1 - 1j * theta)).unsqueeze(-2)) @ U.mH).real
    return Lam


def exp_skew_vjp(U, theta, G):
    """Gradient of <G, exp(S)> with respect to S (Daleckii-Krein), from i S = U diag(theta) U^H.

    Generated from:
    gS = RealPart(U*(HadamardProduct(Adjoint(U)*G*U, PairMatrix(theta, Lambda((a, b), exp(I*(a + b)/2)*sinc(a/2 - b/2)))))*Adjoint(U))
    Verified by: exp_skew.vjp
    """
    t0 = U.mH
    gS = ((U @ (((t0 @ G) @ U) * (torch.exp(0.5j * (theta.unsqueeze(-1) + theta.unsqueeze(-2))) * sin_over(0.5 * theta.unsqueeze(-1) - 0.5 * theta.unsqueeze(-2))))) @ t0).real
    return gS


def exp_taylor16(X):
    """Taylor polynomial of exp of degree 16 (the float64 scheme), Paterson--Stockmeyer with X^2..X^4; returns the intermediates the backward needs, then p(X).

    Generated from:
    X2 = X**2
    X3 = X*X2
    X4 = X2**2
    H3 = (1/479001600)*I + (1/6227020800)*X + (1/87178291200)*X2 + (1/1307674368000)*X3 + (1/20922789888000)*X4
    H2 = (1/40320)*I + H3*X4 + (1/362880)*X + (1/3628800)*X2 + (1/39916800)*X3
    H1 = (1/24)*I + H2*X4 + (1/120)*X + (1/720)*X2 + (1/5040)*X3
    E = I + H1*X4 + X + (1/2)*X2 + (1/6)*X3
    Verified by: exp_skew.taylor_form, exp_skew.taylor_remainder
    """
    X2 = X @ X
    X3 = X @ X2
    X4 = X2 @ X2
    H3 = 4.779477332387385e-14 * X4
    H3.add_(X3, alpha=7.647163731819816e-13)
    H3.add_(X2, alpha=1.1470745597729725e-11)
    H3.add_(X, alpha=1.6059043836821613e-10)
    H3.diagonal(dim1=-2, dim2=-1).add_(2.08767569878681e-09)
    H2 = H3 @ X4
    H2.add_(X3, alpha=2.505210838544172e-08)
    H2.add_(X2, alpha=2.755731922398589e-07)
    H2.add_(X, alpha=2.7557319223985893e-06)
    H2.diagonal(dim1=-2, dim2=-1).add_(2.48015873015873e-05)
    H1 = H2 @ X4
    H1.add_(X3, alpha=0.0001984126984126984)
    H1.add_(X2, alpha=0.001388888888888889)
    H1.add_(X, alpha=0.008333333333333333)
    H1.diagonal(dim1=-2, dim2=-1).add_(0.041666666666666664)
    E = H1 @ X4
    E.add_(X3, alpha=0.16666666666666666)
    E.add_(X2, alpha=0.5)
    E.diagonal(dim1=-2, dim2=-1).add_(1)
    E.add_(X)
    return X2, X3, X4, H3, H2, H1, E


def exp_taylor16_vjp(X, X2, X3, X4, H3, H2, H1, G):
    """Gradient of <G, p(X)> for the degree-16 scheme, from the forward intermediates.

    Generated from:
    D2 = G*X.T + X.T*G
    D3 = G*X2.T + X.T*D2
    D4 = D2*X2.T + X2.T*D2
    dH3 = (1/87178291200)*D2 + (1/1307674368000)*D3 + (1/20922789888000)*D4 + (1/6227020800)*G
    dH2 = (1/3628800)*D2 + (1/39916800)*D3 + (1/362880)*G + dH3*X4.T + H3.T*D4
    dH1 = (1/720)*D2 + (1/5040)*D3 + (1/120)*G + dH2*X4.T + H2.T*D4
    gX = (1/2)*D2 + (1/6)*D3 + G + dH1*X4.T + H1.T*D4
    Verified by: exp_skew.taylor_vjp, exp_skew.taylor_remainder
    """
    t0 = X.mT
    D2 = G @ t0
    D2.add_(t0 @ G)
    t1 = X2.mT
    D3 = G @ t1
    D3.add_(t0 @ D2)
    D4 = D2 @ t1
    D4.add_(t1 @ D2)
    dH3 = 4.779477332387385e-14 * D4
    dH3.add_(D3, alpha=7.647163731819816e-13)
    dH3.add_(D2, alpha=1.1470745597729725e-11)
    dH3.add_(G, alpha=1.6059043836821613e-10)
    t2 = X4.mT
    dH2 = dH3 @ t2
    dH2.add_(D3, alpha=2.505210838544172e-08)
    dH2.add_(D2, alpha=2.755731922398589e-07)
    dH2.add_(G, alpha=2.7557319223985893e-06)
    dH2.add_(H3.mT @ D4)
    dH1 = dH2 @ t2
    dH1.add_(D3, alpha=0.0001984126984126984)
    dH1.add_(D2, alpha=0.001388888888888889)
    dH1.add_(G, alpha=0.008333333333333333)
    dH1.add_(H2.mT @ D4)
    gX = dH1 @ t2
    gX.add_(D3, alpha=0.16666666666666666)
    gX.add_(D2, alpha=0.5)
    gX.add_(H1.mT @ D4)
    gX.add_(G)
    return gX


def exp_taylor9(X):
    """Taylor polynomial of exp of degree 9 (the float32 scheme), Paterson--Stockmeyer with X^2..X^3; returns the intermediates the backward needs, then p(X).

    Generated from:
    X2 = X**2
    X3 = X*X2
    H2 = (1/720)*I + (1/5040)*X + (1/40320)*X2 + (1/362880)*X3
    H1 = (1/6)*I + H2*X3 + (1/24)*X + (1/120)*X2
    E = I + H1*X3 + X + (1/2)*X2
    Verified by: exp_skew.taylor_form, exp_skew.taylor_remainder
    """
    X2 = X @ X
    X3 = X @ X2
    H2 = 2.7557319223985893e-06 * X3
    H2.add_(X2, alpha=2.48015873015873e-05)
    H2.add_(X, alpha=0.0001984126984126984)
    H2.diagonal(dim1=-2, dim2=-1).add_(0.001388888888888889)
    H1 = H2 @ X3
    H1.add_(X2, alpha=0.008333333333333333)
    H1.add_(X, alpha=0.041666666666666664)
    H1.diagonal(dim1=-2, dim2=-1).add_(0.16666666666666666)
    E = H1 @ X3
    E.add_(X2, alpha=0.5)
    E.diagonal(dim1=-2, dim2=-1).add_(1)
    E.add_(X)
    return X2, X3, H2, H1, E


def exp_taylor9_vjp(X, X2, X3, H2, H1, G):
    """Gradient of <G, p(X)> for the degree-9 scheme, from the forward intermediates.

    Generated from:
    D2 = G*X.T + X.T*G
    D3 = G*X2.T + X.T*D2
    dH2 = (1/40320)*D2 + (1/362880)*D3 + (1/5040)*G
    dH1 = (1/120)*D2 + (1/24)*G + dH2*X3.T + H2.T*D3
    gX = (1/2)*D2 + G + dH1*X3.T + H1.T*D3
    Verified by: exp_skew.taylor_vjp, exp_skew.taylor_remainder
    """
    t0 = X.mT
    D2 = G @ t0
    D2.add_(t0 @ G)
    D3 = G @ X2.mT
    D3.add_(t0 @ D2)
    dH2 = 2.7557319223985893e-06 * D3
    dH2.add_(D2, alpha=2.48015873015873e-05)
    dH2.add_(G, alpha=0.0001984126984126984)
    t1 = X3.mT
    dH1 = dH2 @ t1
    dH1.add_(D2, alpha=0.008333333333333333)
    dH1.add_(G, alpha=0.041666666666666664)
    dH1.add_(H2.mT @ D3)
    gX = dH1 @ t1
    gX.add_(D2, alpha=0.5)
    gX.add_(H1.mT @ D3)
    gX.add_(G)
    return gX


def vp_lowrank_skew(R, A):
    """The small skew matrix S = R A R^T of the low-rank form (skew-symmetrised), from x = Q R.

    Generated from:
    S0 = R*A*R.T
    S = (1/2)*S0 - (1/2)*S0.T
    Verified by: vp.lowrank_form
    """
    S0 = (R @ A) @ R.mT
    S = 0.5 * S0 - 0.5 * S0.mT
    return S


def cayley_minus_identity(S):
    """Cayley(S) - I = -2 (I + S)^{-1} S, batched.

    Generated from:
    W = -2*(I + S)**(-1)*S
    Verified by: vp.lowrank_form
    """
    eye = torch.eye(S.shape[-1], dtype=S.dtype, device=S.device)
    W = -2 * solve(eye + S, S)
    return W


def vp_gram_cayley(x, A):
    """Row-layout Cayley layer output by the Gram (push-through) form: y = 2 x (I + G A)^{-T} - x with G = x^T x (d x d), one d x d solve and no T x T matrix; run in float64 for float32 inputs.

    Generated from:
    G = x.T*x
    M = I + G*A
    y = -x + 2*x*M.T**(-1)
    Verified by: vp.gram_form
    """
    eye = torch.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    G = x.mT @ x
    M = G @ A + eye
    y = 2 * solve(M.mT, x, left=False) - x
    return y


def vp_gram_closed(Gram, A):
    """N = (I + Gram A)^{-T} = (I - J)^{-1} (J = A Gram), P = 2N - I and the residual R = (I - J) N - I of the Gram form in closed form for d <= 4, no solve (Note [closed-form Gram solve]); structure-of-arrays layout: Gram (d, d, *batch), A (d, d, 1).

    Generated from:
    J = A*Gram
    J2 = J**2
    Nu = ((1 - Trace(J2)/2)*I + J2)*(I + J)
    N = 1/(-Trace(J2**2)/4 + Trace(J2)**2/8 - Trace(J2)/2 + 1)*Nu
    P = -I + 2*N
    R = -I - J*N + N
    Verified by: vp.gram_closed_form
    """
    eye = soa_eye(Gram.shape[0], Gram)
    J = soa_mm(A, Gram)
    J2 = soa_mm(J, J)
    Nu = soa_mm((1 - 0.5 * soa_tr(J2)) * eye + J2, eye + J)
    N = (1 / (1 - 0.5 * soa_tr(J2) - 0.25 * soa_tr_mm(J2, J2) + 0.125 * soa_tr(J2) ** 2)) * Nu
    P = 2 * N - eye
    R = N - eye - soa_mm(J, N)
    return N, P, R


def vp_gram_closed_vjp(N, Pbar, A):
    """The small factors of the Gram form's backward: M_bar = -2 N P_bar^T N and H = A M_bar^T - M_bar A (x_bar = y_bar P^T + x H, A_bar = skew(sum of Gram M_bar)); structure-of-arrays layout.

    Generated from:
    Mbar = -2*N*Pbar.T*N
    H = A*Mbar.T - Mbar*A
    Verified by: vp.gram_closed_form_vjp
    """
    Mbar = -2 * soa_mm(soa_mm(N, Pbar.transpose(0, 1)), N)
    H = soa_mm(A, Mbar.transpose(0, 1)) - soa_mm(Mbar, A)
    return Mbar, H


def cayley_minus_identity_skew_small(S):
    """Cayley(S) - I = 2 (S^2 - S)/(1 - Tr(S^2)/2) for skew S of size k <= 3, without a solve.

    Generated from:
    S2 = S**2
    W = (2/(1 - Trace(S2)/2))*(-S + S2)
    Verified by: kernels.cayley_skew_small
    """
    S2 = S @ S
    W = (2 / (1 - 0.5 * S2.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None])) * (S2 - S)
    return W


def exp_skew_so4(S):
    """exp(S) for skew 4 x 4 S in closed form: (cos t+ I + sinc t+ S+)(cos t- I + sinc t- S-) with S+- = (S +- *S)/2 and t+-^2 = -Tr(S+-^2)/4 (Note [exp of a 4 x 4 skew matrix]); no series, squaring or eigendecomposition.

    Generated from:
    H = Hodge4(S)
    Sp = (1/2)*H + (1/2)*S
    Sm = -(1/2)*H + (1/2)*S
    Sp2 = Sp**2
    Sm2 = Sm**2
    Ep = cos(sqrt(-Trace(Sp2))/2)*I + sinc(sqrt(-Trace(Sp2))/2)*Sp
    Em = cos(sqrt(-Trace(Sm2))/2)*I + sinc(sqrt(-Trace(Sm2))/2)*Sm
    E = Ep*Em
    Verified by: exp_skew.hodge_form
    """
    eye = torch.eye(4, dtype=S.dtype, device=S.device)
    H = 0.5 * torch.stack([torch.zeros_like(S[..., 0, 0]), (S[..., 2, 3] - S[..., 3, 2]), -(S[..., 1, 3] - S[..., 3, 1]), (S[..., 1, 2] - S[..., 2, 1]), -(S[..., 2, 3] - S[..., 3, 2]), torch.zeros_like(S[..., 0, 0]), (S[..., 0, 3] - S[..., 3, 0]), -(S[..., 0, 2] - S[..., 2, 0]), (S[..., 1, 3] - S[..., 3, 1]), -(S[..., 0, 3] - S[..., 3, 0]), torch.zeros_like(S[..., 0, 0]), (S[..., 0, 1] - S[..., 1, 0]), -(S[..., 1, 2] - S[..., 2, 1]), (S[..., 0, 2] - S[..., 2, 0]), -(S[..., 0, 1] - S[..., 1, 0]), torch.zeros_like(S[..., 0, 0])], dim=-1).unflatten(-1, (4, 4))
    Sp = 0.5 * (H + S)
    Sm = 0.5 * S - 0.5 * H
    Sp2 = Sp @ Sp
    Sm2 = Sm @ Sm
    Ep = torch.cos(0.5 * torch.sqrt(-Sp2.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None])) * eye + sin_over(0.5 * torch.sqrt(-Sp2.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None])) * Sp
    Em = torch.cos(0.5 * torch.sqrt(-Sm2.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None])) * eye + sin_over(0.5 * torch.sqrt(-Sm2.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None])) * Sm
    E = Ep @ Em
    return E


def vp_lowrank_apply(x, Q, W, R):
    """Row-layout layer output x + Q W^T R = Lambda^T x with Lambda = I + Q W Q^T (W = f(S) - I).

    Generated from:
    K = W.T*R
    y = Q*K + x
    Verified by: vp.lowrank_form
    """
    K = W.mT @ R
    y = Q @ K + x
    return y


def vp_lowrank_project(Q, Gy):
    """Y1 = Q^T Gy: the incoming gradient in the basis of Q.

    Generated from:
    Y1 = Q.T*Gy
    Verified by: vp.lowrank_exp_vjp
    """
    Y1 = Q.mT @ Gy
    return Y1


def vp_lowrank_cayley_vjp(Q, R, W, A, Gy):
    """Gradients of <Gy, y> with respect to x and A for the Cayley activation, from Q, R, W = Cayley(S) - I.

    Generated from:
    Y1 = Q.T*Gy
    NR = (I + (1/2)*W.T)*R
    P1 = Y1.T*NR
    P2 = NR.T*R
    P2A = P2*A
    gx = Gy*(I - 2*P2A) + Q*(-2*NR*P1*A.T + W*Y1*(I - P2A))
    gA0 = -2*P2.T*P1
    gA = (1/2)*gA0 - (1/2)*gA0.T
    Verified by: vp.lowrank_cayley_vjp
    """
    eye = torch.eye(R.shape[-2], dtype=Q.dtype, device=Q.device)
    eye_d = torch.eye(R.shape[-1], dtype=Q.dtype, device=Q.device)
    Y1 = Q.mT @ Gy
    NR = (0.5 * W.mT + eye) @ R
    P1 = Y1.mT @ NR
    P2 = NR.mT @ R
    P2A = P2 @ A
    gx = Gy @ (eye_d - 2 * P2A) + Q @ ((W @ Y1) @ (eye_d - P2A) - 2 * ((NR @ P1) @ A.mT))
    gA0 = -2 * (P2.mT @ P1)
    gA = 0.5 * gA0 - 0.5 * gA0.mT
    return gx, gA


def vp_lowrank_exp_vjp(Q, R, W, A, Gy, Y1, K1, K2):
    """Gradients of <Gy, y> with respect to x and A for the exponential activation, from Q, R, W = exp(S) - I, Y1 = Q^T Gy, K1 = L_exp(-S, R Y1^T) and K2 = phi(-S) R.

    Generated from:
    gx = Gy*(I + K2.T*R*A) + Q*(K1*R*A.T + W*Y1 - Y1*K2.T*R*A + K1.T*R*A)
    gA0 = R.T*K1*R
    gA = (1/2)*gA0 - (1/2)*gA0.T
    Verified by: vp.lowrank_exp_vjp
    """
    eye = torch.eye(R.shape[-1], dtype=Q.dtype, device=Q.device)
    t0 = K2.mT
    gx = Gy @ ((t0 @ R) @ A + eye) + Q @ (W @ Y1 + (K1 @ R) @ A.mT + (K1.mT @ R) @ A - ((Y1 @ t0) @ R) @ A)
    gA0 = (R.mT @ K1) @ R
    gA = 0.5 * gA0 - 0.5 * gA0.mT
    return gx, gA


def square_vjp(E, G):
    """Gradient of <G, E^2> with respect to E: one step of the squaring phase, backwards.

    Generated from:
    gE = G*E.T + E.T*G
    Verified by: exp_skew.square_vjp
    """
    t0 = E.mT
    gE = G @ t0
    gE.add_(t0 @ G)
    return gE


def lift(Lam, d):
    """The lift I_d (x) Lambda^T of Z -> Z Lambda to row-stacked vectors (for analysis and tests).

    Generated from:
    L = KroneckerProduct(I, Lam.T)
    Verified by: vec.right_multiplication, lift.orthogonal, lift.symplectic
    """
    eye = torch.eye(d, dtype=Lam.dtype, device=Lam.device)
    L = (eye.unsqueeze(-1).unsqueeze(-3) * Lam.mT.unsqueeze(-2).unsqueeze(-4)).flatten(-4, -3).flatten(-2, -1)
    return L


def symattn_update_matrix_softmax(z, A):
    """Symplectic-attention update grad Sigma(z) for the matrix_softmax potential in the row layout (z: tokens as rows): C = z A z^T, G = the softmax of C, U = G z A^T + G^T z A; returns U and G.

    Generated from:
    C = z*A*z.T
    G = Softmax(C, all, False)
    U = G*z*A.T + G.T*z*A
    Verified by: symattn.potential_gradient, symattn.layer_symplectic
    """
    C = (z @ A) @ z.mT
    G = torch.softmax(C.flatten(-2), -1).view_as(C)
    U = (G @ z) @ A.mT + (G.mT @ z) @ A
    return U, G


def symattn_update_vector_softmax(z, A):
    """Symplectic-attention update grad Sigma(z) for the vector_softmax potential in the row layout (z: tokens as rows): C = z A z^T, G = the softmax of C, U = G z A^T + G^T z A; returns U and G.

    Generated from:
    C = z*A*z.T
    G = Softmax(C, columns, False)
    U = G*z*A.T + G.T*z*A
    Verified by: symattn.potential_gradient, symattn.layer_symplectic
    """
    C = (z @ A) @ z.mT
    G = torch.softmax(C, -2)
    U = (G @ z) @ A.mT + (G.mT @ z) @ A
    return U, G


def symattn_update_matrix_one_softmax(z, A):
    """Symplectic-attention update grad Sigma(z) for the matrix_one_softmax potential in the row layout (z: tokens as rows): C = z A z^T, G = the softmax of C, U = G z A^T + G^T z A; returns U and G.

    Generated from:
    C = z*A*z.T
    G = Softmax(C, all, True)
    U = G*z*A.T + G.T*z*A
    Verified by: symattn.potential_gradient, symattn.layer_symplectic
    """
    C = (z @ A) @ z.mT
    G = torch.softmax(torch.nn.functional.pad(C.flatten(-2), (0, 1)), -1)[..., :-1].view_as(C)
    U = (G @ z) @ A.mT + (G.mT @ z) @ A
    return U, G


def symattn_update_vector_one_softmax(z, A):
    """Symplectic-attention update grad Sigma(z) for the vector_one_softmax potential in the row layout (z: tokens as rows): C = z A z^T, G = the softmax of C, U = G z A^T + G^T z A; returns U and G.

    Generated from:
    C = z*A*z.T
    G = Softmax(C, columns, True)
    U = G*z*A.T + G.T*z*A
    Verified by: symattn.potential_gradient, symattn.layer_symplectic
    """
    C = (z @ A) @ z.mT
    G = torch.softmax(torch.nn.functional.pad(C, (0, 0, 0, 1)), -2)[..., :-1, :]
    U = (G @ z) @ A.mT + (G.mT @ z) @ A
    return U, G


def symattn_vjp_all(z, A, V, G):
    """VJP of the symplectic-attention update along V (softmax over all), from the saved softmax G: the gradients of <V, U> with respect to z and A.

    Generated from:
    Cd = V*A*z.T + z*A*V.T
    K = SoftmaxJVP(G, Cd, all)
    P = G*V + K*z
    H = G.T*V
    R = H + K.T*z
    gz = P*A.T + R*A
    gA = H.T*z + z.T*P
    Verified by: symattn.layer_vjp
    """
    t0 = z.mT
    Cd = (V @ A) @ t0 + (z @ A) @ V.mT
    K = G * (Cd - (G * Cd).sum((-2, -1), keepdim=True))
    P = G @ V + K @ z
    H = G.mT @ V
    R = K.mT @ z + H
    gz = P @ A.mT + R @ A
    gA = H.mT @ z + t0 @ P
    return gz, gA


def symattn_vjp_columns(z, A, V, G):
    """VJP of the symplectic-attention update along V (softmax over columns), from the saved softmax G: the gradients of <V, U> with respect to z and A.

    Generated from:
    Cd = V*A*z.T + z*A*V.T
    K = SoftmaxJVP(G, Cd, columns)
    P = G*V + K*z
    H = G.T*V
    R = H + K.T*z
    gz = P*A.T + R*A
    gA = H.T*z + z.T*P
    Verified by: symattn.layer_vjp
    """
    t0 = z.mT
    Cd = (V @ A) @ t0 + (z @ A) @ V.mT
    K = G * (Cd - (G * Cd).sum(-2, keepdim=True))
    P = G @ V + K @ z
    H = G.mT @ V
    R = K.mT @ z + H
    gz = P @ A.mT + R @ A
    gA = H.mT @ z + t0 @ P
    return gz, gA


#: how many tensors each kernel returns (read by the autograd wrappers)
N_OUTPUTS = {
    "cayley_matrix": 1,
    "cayley_skew_small": 1,
    "cayley_apply_solve": 1,
    "cayley_apply_matrix": 1,
    "cayley_vjp": 1,
    "orthogonal_polish": 1,
    "skew_from_lower": 1,
    "upper_triangular_asymmetrize": 1,
    "vp_correlation": 1,
    "vp_correlation_lower": 1,
    "lsa_update": 1,
    "exp_skew_from_eigh": 1,
    "cayley_from_eigh": 1,
    "exp_skew_vjp": 1,
    "exp_taylor16": 7,
    "exp_taylor16_vjp": 1,
    "exp_taylor9": 5,
    "exp_taylor9_vjp": 1,
    "vp_lowrank_skew": 1,
    "cayley_minus_identity": 1,
    "vp_gram_cayley": 1,
    "vp_gram_closed": 3,
    "vp_gram_closed_vjp": 2,
    "cayley_minus_identity_skew_small": 1,
    "exp_skew_so4": 1,
    "vp_lowrank_apply": 1,
    "vp_lowrank_project": 1,
    "vp_lowrank_cayley_vjp": 2,
    "vp_lowrank_exp_vjp": 2,
    "square_vjp": 1,
    "lift": 1,
    "symattn_update_matrix_softmax": 2,
    "symattn_update_vector_softmax": 2,
    "symattn_update_matrix_one_softmax": 2,
    "symattn_update_vector_one_softmax": 2,
    "symattn_vjp_all": 2,
    "symattn_vjp_columns": 2,
}

#: the native C functions (geoattn_<name>_d<d>_<real>) and the largest d each is printed for
NATIVE_FUNCTIONS = {
    "vp_gram_fwd": 4,
    "vp_gram_bwd": 4,
    "cayley_small_fwd": 3,
    "cayley_vjp": 3,
}
#: the potentials of symplectic attention: name -> (normalised over, one softmax)
SYMATTN_ACTIVATIONS = {
    "matrix_softmax": ('all', False),
    "vector_softmax": ('columns', False),
    "matrix_one_softmax": ('all', True),
    "vector_one_softmax": ('columns', True),
}
