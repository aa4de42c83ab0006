"""Negative controls for the step checks of the linear_symplectic, multihead and symattn derivations: each check
confirms a true step and rejects the same step with an injected fault."""

from __future__ import annotations

import sympy as sp
from sympy import Sum
from sympy.matrices.expressions import BlockMatrix, Identity, MatrixSymbol, Trace, ZeroMatrix
from sympy.matrices.expressions.matexpr import MatrixElement

from geoattn.symbolic.claims import _symattn_proofs as sp_proofs
from geoattn.symbolic.claims import linear_symplectic, multihead
from geoattn.symbolic.claims._common import T, n
from geoattn.symbolic.claims._entrywise import BLOCKS, BY_ENTRIES, ENTRIES, blocks_with
from geoattn.symbolic.proof import Derivation, Step, validate

i, j, k = sp.symbols("i j k", integer=True, nonnegative=True)
Q = MatrixSymbol("Q", n, T)
W = MatrixSymbol("W", n, n)
Z = MatrixSymbol("Z", n, T)


def test_entries_check_confirms_a_product_entry_and_rejects_swapped_indices():
    entry = MatrixElement(Z.T * W * Z, i, j)
    assert ENTRIES(entry, MatrixElement(Z[:, i].T * W * Z[:, j], 0, 0))
    assert not ENTRIES(entry, MatrixElement(Z[:, j].T * W * Z[:, i], 0, 0))
    assert not ENTRIES(MatrixElement(Z.T * W, i, j),
                       Sum(W[j, k] * Z[k, i], (k, 0, n - 1)))


def test_entries_check_rejects_a_nonsymmetrised_reweighting():
    A = MatrixSymbol("A", T, T)
    entry = MatrixElement(Q * (A + A.T) / 2, k, j)
    assert ENTRIES(entry, Sum((A[j, i] + A[i, j]) / 2 * Q[k, i], (i, 0, T - 1)))
    assert not ENTRIES(entry, Sum(A[j, i] * Q[k, i], (i, 0, T - 1)))


def test_generic_entry_check_rejects_a_wrong_scale():
    from sympy.matrices.expressions import FunctionMatrix, OneMatrix

    soft0 = FunctionMatrix(T, T, sp.Lambda((i, j), 1 / Sum(1, (k, 0, T - 1))))
    assert BY_ENTRIES(soft0, OneMatrix(T, T) / T)
    assert not BY_ENTRIES(soft0, OneMatrix(T, T) / (T + 1))


def test_block_check_needs_the_symmetry_it_is_given():
    N = sp.Symbol("N", integer=True, positive=True)
    H = MatrixSymbol("H", N, N)
    I, O = Identity(N), ZeroMatrix(N, N)
    om = BlockMatrix([[O, I], [-I, O]])
    jp = BlockMatrix([[I, O], [H, I]])
    assert not BLOCKS(jp.T * om * jp, om)  # false without H^T = H
    assert blocks_with((H.T, H))(jp.T * om * jp, om)
    assert not blocks_with((H.T, H))(jp.T * om * jp, -om)


def test_map_symplectic_derivation_fails_without_the_symmetric_fact():
    deriv = linear_symplectic._map_symplectic_derivation()
    assert validate(deriv).ok
    bad = Derivation(steps=deriv.steps, conclusion=deriv.conclusion, facts={}, subject=deriv.subject)
    problems = validate(bad).problems
    assert any("step 5" in p and "does not confirm" in p for p in problems), problems


def test_entry_derivative_check_rejects_a_missing_one():
    f, total = sp_proofs._potential_entry("all", True)
    lhs = sp.Derivative(f, sp_proofs._c[sp_proofs._i, sp_proofs._j])
    ce = sp.exp(sp_proofs._c[sp_proofs._i, sp_proofs._j])
    assert sp_proofs.DERIVATIVE(lhs, ce / total)
    assert not sp_proofs.DERIVATIVE(lhs, ce / (total - 1))  # the softmax without the extra 1


def test_gradient_check_takes_sums_of_traces_addend_by_addend():
    A = MatrixSymbol("A", n, n)
    K = MatrixSymbol("K", T, T)
    expr = Trace(K.T * Q.T * A * Q) + Trace(Q.T * A * Q)
    want = A * Q * K.T + A.T * Q * K + A * Q + A.T * Q
    assert sp_proofs.GRADIENT(sp.Derivative(expr, Q), want)
    assert not sp_proofs.GRADIENT(sp.Derivative(expr, Q), ZeroMatrix(n, T))  # SymPy's whole-sum diff gives 0
    assert not sp_proofs.GRADIENT(sp.Derivative(expr, Q), A * Q * K.T + A.T * Q * K)


def test_linear_check_rejects_a_different_linear_function():
    V = MatrixSymbol("V", n, T)
    G = MatrixSymbol("G", T, T)
    A = MatrixSymbol("A", n, n)
    check = sp_proofs._linear_in(V)
    assert check(Trace(V.T * A * Q * G), Trace(G.T * Q.T * A.T * V))
    assert not check(Trace(V.T * A * Q * G), Trace(G * Q.T * A.T * V))
    assert not check(Trace(V.T * A * Q * G), Trace(V.T * A * Q * G) + 1)


def test_every_rewritten_derivation_validates():
    builders = [linear_symplectic._gradient_derivation, linear_symplectic._reweighting_derivation,
                linear_symplectic._map_symplectic_derivation, linear_symplectic._product_structure_derivation,
                linear_symplectic._nondegenerate_derivation, multihead._stochastic_derivation,
                multihead._singular_derivation, multihead._row_column_derivation, sp_proofs.shear_derivation,
                sp_proofs.vjp_derivation]
    for build in builders:
        report = validate(build())
        assert report.ok, (build.__name__, report.problems)
        assert report.verified >= 1, build.__name__


def test_a_false_step_in_a_rewritten_derivation_is_caught():
    deriv = multihead._stochastic_derivation()
    last = deriv.steps[-1]
    deriv.steps[-1] = Step(last.lhs, sp.ImmutableMatrix([[2, 1]]), last.rule, last.check)
    deriv.conclusion = sp.Eq(deriv.conclusion.lhs, sp.ImmutableMatrix([[2, 1]]), evaluate=False)
    assert any("does not confirm" in p for p in validate(deriv).problems)
