"""Negative controls for the checks of the ``kernels`` family's derivations (``claims/_kernel_checks.py``): each
accepts a true step and rejects an injected fault, and a derivation built on a faulty step is not a proof."""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import Identity, Inverse, MatrixSymbol, Trace

from geoattn.symbolic.claims._kernel_checks import (
    algebra_of, algebra_times, blockwise, free_algebra, inside, matrix_derivative, sandwich,
)
from geoattn.symbolic.proof import Derivation, Step, validate

n = sp.Symbol("n", integer=True, positive=True)
k = sp.Symbol("k", integer=True, positive=True)
C = MatrixSymbol("C", n, n)
G = MatrixSymbol("G", n, n)
H = MatrixSymbol("H", n, n)
x = MatrixSymbol("x", n, k)
I = Identity(n)
CAY = (I - C) * Inverse(I + C)


def _proof(lhs, rhs, check):
    return validate(Derivation(steps=[Step(lhs, rhs, "step", check)], conclusion=sp.Eq(lhs, rhs, evaluate=False)))


def test_algebra_times_accepts_commuted_factors_and_rejects_a_wrong_one():
    chk = algebra_times(C, None, x)
    assert _proof(CAY * x, Inverse(I + C) * (I - C) * x, chk).ok
    assert not chk(CAY * x, (I + C) * Inverse(I - C) * x)  # the inverse Cayley transform
    assert not chk(CAY * x, Inverse(I + C) * (I - C) * G)  # another right factor
    assert not chk(CAY.T * x, CAY * x)  # a transpose without a transpose rule
    assert chk(CAY.T * x, (I + C) * Inverse(I - C) * x) is False
    assert algebra_times(C, -1, x)(CAY.T * x, (I + C) * Inverse(I - C) * x)  # with C^T = -C


def test_algebra_of_a_composite_block():
    K = x.T * x * MatrixSymbol("A", k, k)
    Ik = Identity(k)
    chk = algebra_of(K, "K")
    assert _proof((Ik - K) * Inverse(Ik + K), 2 * Inverse(Ik + K) - Ik, chk).ok
    assert not chk((Ik - K) * Inverse(Ik + K), 2 * Inverse(Ik - K) - Ik)
    assert not chk((Ik - K) * Inverse(Ik + K), (Ik - K.T) * Inverse(Ik + K))


def test_sandwich_rejects_a_swapped_or_wrong_factor():
    lhs = Inverse(I + C.T) * G * (I - C.T)
    swapped = (I - C.T) * G * Inverse(I + C.T)  # wrong: the factors do not move across G
    assert not sandwich(C, None, G, transposed=True)(lhs, swapped)
    want = -(I + CAY).T * G * (I + CAY).T / 2
    grad = (-I + Inverse(I + C.T) * (C.T - I)) * G * Inverse(I + C.T)
    assert _proof(grad, want, sandwich(C, None, G, transposed=True)).ok
    assert not sandwich(C, None, G, transposed=True)(grad, -(I + C).T * G * (I + C).T / 2)  # input for output
    assert not sandwich(C, None, G)(grad, want)  # C^T is outside the algebra of C


def test_inside_and_matrix_derivative():
    B = MatrixSymbol("B", n, n)
    assert _proof(CAY * B, Inverse(I + C) * (I - C) * B, inside(CAY, Inverse(I + C) * (I - C))).ok
    assert not inside(CAY, Inverse(I + C) * (I - C))(CAY * B, Inverse(I + C) * (I + C) * B)
    f = sp.Derivative(Trace(G.T * C * H), H)
    assert _proof(f, C.T * G, matrix_derivative()).ok
    assert not matrix_derivative()(f, G.T * C)
    assert not matrix_derivative()(Trace(G.T * C * H), C.T * G)  # not a derivative on the left


def test_free_algebra_blockwise_and_derivative_of_a_sum():
    from sympy.matrices.expressions import BlockDiagMatrix

    word = G * C * C + C * G
    assert free_algebra()(word, G * C**2 + C * G)
    assert not free_algebra()(word, G * C**2 + G * C)  # C and G do not commute
    assert not free_algebra()(word, C.T * C * G + C * G)  # C^T is its own generator
    assert not free_algebra()(Inverse(I + C), I - C)  # an inverse is outside the polynomial algebra
    blocks = blockwise(free_algebra())
    assert _proof(BlockDiagMatrix(word, C * C), BlockDiagMatrix(G * C**2 + C * G, C**2), blocks).ok
    assert not blocks(BlockDiagMatrix(word, C * C), BlockDiagMatrix(G * C**2 + C * G, C**3))
    assert not blocks(BlockDiagMatrix(word, C * C), BlockDiagMatrix(G * C**2 + C * G))
    f = sp.Derivative(Trace(G.T * C) + Trace(G.T * C * C) / 2, C)
    want = G + (G * C.T + C.T * G) / 2
    assert _proof(f, want, matrix_derivative()).ok
    assert not matrix_derivative()(f, sp.ZeroMatrix(n, n) + G)  # drops a term
    assert not matrix_derivative()(f, sp.Integer(0))  # a scalar is not a gradient of C's shape


def test_lsa_row_derivation_prints_its_gradient_in_latex_and_json():
    """The transposed matrix derivative of kernels.lsa_row_layout is a Gradient: SymPy's LaTeX printer failed on a
    plain Derivative inside a transpose, which made ``geoattn prove --json`` crash."""
    from geoattn.symbolic.claims.kernels import _lsa_row_derivation

    out = _lsa_row_derivation().to_json()
    assert out["problems"] == [] and out["n_verified"] == out["n_steps"] == 3
    assert r"\nabla_{Q}" in out["steps"][0]["latex"]


def test_exp_skew_vjp_derivation_and_its_divided_difference_check():
    """exp_skew.vjp: every step verified or cited (Daleckii--Krein, the integral form), printable; the step to the
    kernel's stable form rejects the unconjugated divided difference and a wrong diagonal (negative controls)."""
    from geoattn.symbolic import expressions as ex
    from geoattn.symbolic.claims import _exp_frechet as ef
    from geoattn.symbolic.lemmas import LEMMAS

    out = ef.exp_vjp_derivation().to_json()
    assert out["problems"] == [] and (out["n_steps"], out["n_verified"], out["n_lemmas"]) == (6, 3, 3)
    assert "Higham" in LEMMAS["daleckii_krein"].reference
    divided = ef._spectral_form(ef._DD_AT_I_THETA)
    assert ef._same_divided_difference(divided, ef._spectral_form(ex.expm_divided_difference(conj=True)))
    assert not ef._same_divided_difference(divided, ef._spectral_form(ex.expm_divided_difference(conj=False)))
    a, b = sp.symbols("a b", real=True)
    off_only = sp.Lambda((a, b), sp.Piecewise((2 * sp.exp(sp.I * a), sp.Eq(a, b)),
                                              ((sp.exp(sp.I * a) - sp.exp(sp.I * b)) / (sp.I * (a - b)), True)))
    assert not ef._same_divided_difference(divided, ef._spectral_form(off_only))  # a wrong value at a = b
