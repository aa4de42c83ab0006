"""Torch kernels generated from the verified SymPy expressions.

DO NOT EDIT: this file is written by ``geoattn codegen`` from
``geoattn/symbolic/expressions.py``; ``geoattn codegen --check`` fails when it is
stale. Every function is batched over leading dimensions and builds identity
matrices with the dtype and device of its inputs.

expressions-sha256: 5331e45fbaaab20c45d6a33f89691f949babfdb2e8686b399e535cfa1a9f2ce9
printer-version: 1

Sources (kernel: expression  [ledger claims]):
  cayley_matrix: Lam = (I + C)**(-1)*(I - C)  [cayley.orthogonal, kernels.cayley_left_solve]
  cayley_apply_solve: y = 2*(I - C)**(-1)*x - x  [cayley.apply_form]
  cayley_apply_matrix: y = Lam.T*x  [cayley.orthogonal, cayley.apply_form]
  cayley_vjp: gC = (-(1/2)*I - (1/2)*Lam.T)*G*(I + Lam.T)  [cayley.vjp]
  skew_from_lower: S = StrictLower(C) - StrictLower(C).T  [vp.lower_assign_skew, kernels.triangle_forms]
  upper_triangular_asymmetrize: S = StrictUpper(C) - StrictUpper(C).T  [exp.uta_skew, kernels.triangle_forms]
  vp_correlation: C = x*A*x.T  [vp.skew_weighting, kernels.row_layout]
  vp_correlation_lower: C = StrictLower(x*A*x.T) - StrictLower(x*A*x.T).T  [vp.lower_assign_skew, kernels.row_layout]
  lsa_update: dq = (1/2)*A*q + (1/2)*A.T*q  [lsa.gradient, kernels.lsa_row_layout]
  exp_skew_from_eigh: E = RealPart(U*DiagMatrix(VectorMap(theta, Lambda(a, exp(-I*a))))*Adjoint(U))  [exp_skew.eigh_form]
  exp_skew_vjp: gS = RealPart(U*(HadamardProduct(Adjoint(U)*G*U, PairMatrix(theta, Lambda((a, b), exp(I*(a + b)/2)*sinc(a/2 - b/2)))))*Adjoint(U))  [exp_skew.vjp]
  lift: L = KroneckerProduct(I, Lam.T)  [vec.right_multiplication, lift.orthogonal, lift.symplectic]
"""

import math

import torch

__all__ = ["cayley_matrix", "cayley_apply_solve", "cayley_apply_matrix", "cayley_vjp", "skew_from_lower", "upper_triangular_asymmetrize", "vp_correlation", "vp_correlation_lower", "lsa_update", "exp_skew_from_eigh", "exp_skew_vjp", "lift"]


def cayley_matrix(C):
    """Cayley transform Lambda = (I - C)(I + C)^{-1} = (I + C)^{-1}(I - C), batched over leading dims.

    Generated from:
    Lam = (I + C)**(-1)*(I - C)
    Verified by: cayley.orthogonal, kernels.cayley_left_solve
    """
    eye = torch.eye(C.shape[-1], dtype=C.dtype, device=C.device)
    Lam = torch.linalg.solve(eye + C, eye - C)
    return Lam


def cayley_apply_solve(C, x):
    """Row-layout layer output (x^T Cayley(C))^T = 2 (I - C)^{-1} x - x for skew C, without forming Cayley(C).

    Generated from:
    y = 2*(I - C)**(-1)*x - x
    Verified by: cayley.apply_form
    """
    eye = torch.eye(C.shape[-1], dtype=C.dtype, device=C.device)
    y = 2 * torch.linalg.solve(eye - C, x) - x
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
    gC = (-(1/2)*I - (1/2)*Lam.T)*G*(I + Lam.T)
    Verified by: cayley.vjp
    """
    eye = torch.eye(Lam.shape[-1], dtype=Lam.dtype, device=Lam.device)
    t0 = eye + Lam.mT
    gC = ((-0.5 * t0) @ G) @ t0
    return gC


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


def exp_skew_vjp(U, theta, G):
    """Gradient of <G, exp(S)> with respect to S (Daleckii-Krein), from i S = U diag(theta) U^H.

    Generated from:
    gS = RealPart(U*(HadamardProduct(Adjoint(U)*G*U, PairMatrix(theta, Lambda((a, b), exp(I*(a + b)/2)*sinc(a/2 - b/2)))))*Adjoint(U))
    Verified by: exp_skew.vjp
    """
    t0 = U.mH
    gS = ((U @ (((t0 @ G) @ U) * (torch.exp(0.5j * (theta.unsqueeze(-1) + theta.unsqueeze(-2))) * torch.sinc((0.5 * theta.unsqueeze(-1) - (0.5 * theta.unsqueeze(-2))) / math.pi)))) @ t0).real
    return gS


def lift(Lam, d):
    """The lift I_d (x) Lambda^T of Z -> Z Lambda to row-stacked vectors (for analysis and tests).

    Generated from:
    L = KroneckerProduct(I, Lam.T)
    Verified by: vec.right_multiplication, lift.orthogonal, lift.symplectic
    """
    eye = torch.eye(d, dtype=Lam.dtype, device=Lam.device)
    L = (eye.unsqueeze(-1).unsqueeze(-3) * Lam.mT.unsqueeze(-2).unsqueeze(-4)).flatten(-4, -3).flatten(-2, -1)
    return L
