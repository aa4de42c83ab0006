"""Code generation: freshness, printer output, and generated kernels against the SymPy interpreter."""

import os
import random
import subprocess
import sys

import pytest
import sympy as sp
import torch
from sympy.matrices.expressions import MatrixSymbol

from geoattn import codegen
from geoattn.cli import main
from geoattn.codegen.printer import CodegenError, TorchKernelPrinter
from geoattn.kernels import _generated as gen
from geoattn.symbolic import expressions as ex
from geoattn.symbolic import kernel_table as kt


def test_checked_in_kernels_are_fresh(capsys):
    assert main(["codegen", "--check"]) == 0
    fresh, diff = codegen.check()
    assert fresh and diff == ""


def test_stale_file_is_detected(tmp_path, capsys):
    stale = tmp_path / "_generated.py"
    stale.write_text(codegen.generate_module().replace("@", "*", 1))
    fresh, diff = codegen.check(str(stale))
    assert not fresh and diff
    assert main(["codegen", "--check", "--path", str(stale)]) == 1
    from geoattn.symbolic.kernel_table import NATIVE_KERNELS

    paths = [codegen.native_target_path(), codegen.ledger_ids_target_path(),
             *(codegen.triton_target_path(k.name, d) for k in NATIVE_KERNELS for d in range(1, k.max_dim + 1))]
    before = {p: os.path.getmtime(p) for p in paths}
    assert main(["codegen", "--path", str(stale)]) == 0
    assert codegen.check(str(stale))[0]
    # only the named file was written: the checked-in files of the source tree are untouched
    assert {p: os.path.getmtime(p) for p in before} == before


def test_header_records_sources_and_hash():
    src = codegen.generate_module()
    assert f"expressions-sha256: {kt.expressions_hash()}" in src
    for k in kt.KERNELS:
        assert f"def {k.name}(" in src
        for claim in k.claims:
            assert claim in src


def _code_nodes():
    """AST nodes of the generated function bodies, docstrings excluded."""
    import ast

    tree = ast.parse(codegen.generate_module())
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        for stmt in fn.body[1:]:  # body[0] is the docstring
            yield from ast.walk(stmt)


def test_generated_code_never_inverts_and_uses_batched_ops():
    import ast

    attrs = {n.attr for n in _code_nodes() if isinstance(n, ast.Attribute)}
    names = {n.id for n in _code_nodes() if isinstance(n, ast.Name)}
    assert "T" not in attrs and "H" not in attrs  # 2-D-only transposes would be wrong for batches
    assert "inv" not in attrs and "inverse" not in attrs and "pinv" not in attrs
    assert {"mT", "mH"} <= attrs
    # solves go through the aligned batched solve (Note [aligned batches]), never torch.linalg.solve directly
    assert "solve" in names and "solve" not in attrs
    assert "numpy" not in names and "sympy" not in names


def test_shared_subexpressions_and_factored_sums():
    src = {k.name: codegen.generate_kernel(k) for k in kt.KERNELS}
    body = src["cayley_vjp"].split('"""')[-1]
    assert body.count("Lam.mT") == 1 and "(P @ G) @ P" in body  # (I + Lam^T) computed once, used twice
    lsa = src["lsa_update"].split('"""')[-1]
    assert lsa.count("@") == 1  # 1/2 (A q + A^T q) printed as one batched product


def test_accumulating_into_a_transposed_argument_never_writes_to_the_argument():
    """The Cayley VJP adds the identity in place to a copy of Lam^T; at T = 1 Lam^T is contiguous, so a
    .contiguous() view would alias Lam (negative control of that mistake below)."""
    for t in (1, 3):
        lam = torch.randn(4, t, t, dtype=torch.float64)
        keep = lam.clone()
        g = torch.randn(4, t, t, dtype=torch.float64)
        got = gen.cayley_vjp(lam, g)
        assert torch.equal(lam, keep)
        eye = torch.eye(t, dtype=torch.float64)
        want = -0.5 * (eye + lam.mT) @ g @ (eye + lam.mT)
        assert (got - want).abs().max() <= 8 * t * torch.finfo(torch.float64).eps * want.abs().max()
    lam = torch.randn(4, 1, 1)
    alias = lam.mT.contiguous()  # the hazard the kernel avoids: at T = 1 .contiguous() returns Lam itself
    assert alias.data_ptr() == lam.data_ptr()


def test_accumulate_never_scales_an_argument_in_place():
    """In accumulate mode c * X (one factor) must print as a new tensor, not X.mul_(c) on the argument."""
    T = ex.T
    X = sp.MatrixSymbol("X", T, T)
    p = TorchKernelPrinter({X: "X"}, {T: ("X", -1)}, "X", accumulate=True)
    p.bind("out", 2 * X.T)
    assert not any("mul_" in line for line in p.lines), p.lines
    p.bind("out2", 2 * X * X.T)
    assert any(line == "out2.mul_(2)" for line in p.lines), p.lines


def test_bare_inverse_is_refused():
    T = ex.T
    C = sp.MatrixSymbol("C", T, T)
    p = TorchKernelPrinter({C: "C"}, {T: ("C", -1)}, "C")
    with pytest.raises(CodegenError, match="bare inverse"):
        p.bind("out", sp.Inverse(sp.Identity(T) + C))


@pytest.mark.parametrize(
    "module",
    ["geoattn.kernels", "geoattn.nn", "geoattn.testing", "geoattn.models", "geoattn.systems", "geoattn.experiments"],
)
def test_runtime_path_does_not_load_sympy(module):
    code = f"import sys, {module}; assert 'sympy' not in sys.modules, 'sympy imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


EPS64 = torch.finfo(torch.float64).eps


def assert_close64(got, want, n, k=64, note=""):
    """``|got - want| <= k n eps (1 + max|want|)`` in float64: rounding of an n x n computation."""
    tol = k * n * EPS64 * (1 + float(want.abs().max()))
    err = float((got - want).abs().max())
    assert err <= tol, f"Expected |got - want| <= {tol:.3g}{note}. Got {err:.3g}."


def _float(m):
    return torch.tensor([[complex(sp.N(x)) for x in m.row(i)] for i in range(m.rows)], dtype=torch.complex128)


def _rand_rational(rng, r, c):
    return sp.Matrix(r, c, lambda i, j: sp.Rational(rng.randint(-9, 9), rng.randint(1, 9)))


def _composed(bindings):
    """The last output of kernel bindings as one expression (earlier bindings substituted)."""
    out = bindings[-1][1]
    for name, expr in reversed(bindings[:-1]):
        out = out.subs(sp.MatrixSymbol(name, *expr.shape), expr)
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_real_kernels_match_sympy_interpreter(seed):
    rng = random.Random(seed)
    Tn, dn = 4, 3
    S = _rand_rational(rng, Tn, Tn)
    S = S - S.T
    X = _rand_rational(rng, Tn, dn)
    Am = _rand_rational(rng, dn, dn)
    W = _rand_rational(rng, Tn, Tn)
    Gm = _rand_rational(rng, Tn, Tn)
    lam = ex.evaluate(ex.CAYLEY, {ex.C: S}, {ex.T: Tn})
    cases = [
        (gen.cayley_matrix(_float(S).real), ex.CAYLEY, {ex.C: S}),
        (gen.cayley_apply_solve(_float(S).real, _float(X).real), ex.CAYLEY_APPLY_SOLVE, {ex.C: S, ex.x: X}),
        (gen.cayley_apply_matrix(_float(lam).real, _float(X).real), ex.CAYLEY_APPLY_MATRIX, {ex.Lam: lam, ex.x: X}),
        (gen.cayley_vjp(_float(lam).real, _float(Gm).real), ex.CAYLEY_VJP, {ex.Lam: lam, ex.G: Gm}),
        (gen.skew_from_lower(_float(W).real), ex.skew_from_lower_expr(ex.C), {ex.C: W}),
        (gen.upper_triangular_asymmetrize(_float(W).real), ex.uta_expr(ex.C), {ex.C: W}),
        (gen.vp_correlation(_float(X).real, _float(Am).real), ex.VP_CORRELATION, {ex.x: X, ex.A: Am}),
        (gen.vp_correlation_lower(_float(X).real, _float(Am).real), ex.VP_CORRELATION_LOWER, {ex.x: X, ex.A: Am}),
        (gen.lsa_update(_float(X).real, _float(W).real), ex.LSA_UPDATE, {ex.q: X, ex.W: W}),
        (gen.lift(_float(lam).real, 2), ex.LIFT, {ex.Lam: lam}),
        (gen.vp_gram_cayley(_float(X).real, _float(Am).real), _composed(ex.GRAM_CAYLEY), {ex.x: X, ex.A: Am}),
        (gen.cayley_skew_small(_float(S).real), _composed(ex.CAYLEY_SKEW_SMALL), {ex.C: S}),
    ]
    for got, expr, vals in cases:
        want = _float(ex.evaluate(expr, vals, {ex.T: Tn, ex.d: 2 if expr is ex.LIFT else dn})).real
        assert_close64(got, want, Tn, note=f" for {expr}")


@pytest.mark.parametrize("dtype", list(ex.TAYLOR_SCHEMES))
def test_taylor_kernels_match_sympy_interpreter(dtype):
    """The accumulated (in-place) printing of the Taylor kernels computes the bound expressions."""
    m, _ = ex.TAYLOR_SCHEMES[dtype]
    rng = random.Random(m)
    Tn = 4
    Xs = _rand_rational(rng, Tn, Tn) / 4
    Gs = _rand_rational(rng, Tn, Tn)
    fwd = getattr(gen, f"exp_taylor{m}")(_float(Xs).real)
    env = {ex.X: Xs}
    for (name, expr), got in zip(kt.kernel(f"exp_taylor{m}").bindings, fwd):
        env[sp.MatrixSymbol(name, ex.T, ex.T)] = ex.evaluate(expr, env, {ex.T: Tn})
        assert_close64(got, _float(env[sp.MatrixSymbol(name, ex.T, ex.T)]).real, Tn, note=f" for {name}")
    back = {ex.X: Xs, ex.G: Gs, **{k: v for k, v in env.items() if k != ex.X}}
    for name, expr in kt.kernel(f"exp_taylor{m}_vjp").bindings:
        back[sp.MatrixSymbol(name, ex.T, ex.T)] = ex.evaluate(expr, back, {ex.T: Tn})
    got = getattr(gen, f"exp_taylor{m}_vjp")(_float(Xs).real, *fwd[:-1], _float(Gs).real)
    assert_close64(got, _float(back[sp.MatrixSymbol("gX", ex.T, ex.T)]).real, Tn)
    want = _float(ex.evaluate(ex.SQUARE_VJP, {ex.Ek: Xs, ex.G: Gs}, {ex.T: Tn})).real
    assert_close64(gen.square_vjp(_float(Xs).real, _float(Gs).real), want, Tn)


def test_eigh_kernels_match_sympy_interpreter():
    torch.manual_seed(0)
    S = torch.randn(3, 3, dtype=torch.float64)
    S = S - S.T
    Gt = torch.randn(3, 3, dtype=torch.float64)
    theta, U = torch.linalg.eigh(1j * S.to(torch.complex128))
    Us = sp.Matrix(3, 3, lambda i, j: complex(U[i, j]))
    ths = sp.Matrix([float(t) for t in theta])
    Gs = sp.Matrix(3, 3, lambda i, j: float(Gt[i, j]))
    E = gen.exp_skew_from_eigh(U, theta)
    want_E = _float(ex.evaluate(ex.EXP_SKEW_FROM_EIGH, {ex.U: Us, ex.theta: ths}, {ex.T: 3})).real
    # the eigendecomposition's rounding is amplified by |S| (cond of the eigenproblem)
    k = 64 * (1 + float(torch.linalg.matrix_norm(S, ord=2)))
    assert_close64(E, want_E, 3, k)
    assert_close64(E, torch.linalg.matrix_exp(S), 3, k)
    g = gen.exp_skew_vjp(U, theta, Gt.to(torch.complex128))
    want_g = _float(ex.evaluate(ex.EXP_SKEW_VJP, {ex.U: Us, ex.theta: ths, ex.G: Gs}, {ex.T: 3})).real
    assert_close64(g.real, want_g, 3, k)


def test_node_protocol_dispatch_and_declared_unsupported_nodes():
    """A node prints through its own _torchcode, else the first _print_<Class> along its MRO; a node nobody
    declared fails with a reason (never a wrong kernel), and declared-unsupported ones say why."""
    from sympy.matrices.expressions import ZeroMatrix

    from geoattn.symbolic.algebra import UnaryMatrixExpr

    n = sp.Symbol("n", integer=True, positive=True)
    X = MatrixSymbol("X", n, n)

    class Doubled(UnaryMatrixExpr):  # a new node that carries its own printing
        def _torchcode(self, printer):
            return f"2 * {printer.wrap(printer.print_arg(self.arg))}"

    class Unknown(UnaryMatrixExpr):  # a new node without one
        pass

    class DoubledWithMeaning(Doubled):  # and its explicit meaning, for the interpreter
        def _explicit_value(self, rec):
            return 2 * rec(self.arg)

    printer = TorchKernelPrinter({X: "X"}, {n: ("X", -1)}, "X")
    printer.bind("Y", Doubled(X))
    assert printer.lines[-1].endswith("2 * X")
    from geoattn.symbolic.interpreter import evaluate

    assert evaluate(DoubledWithMeaning(X), {X: sp.Matrix([[1, 2], [3, 4]])}, {n: 2}) == sp.Matrix([[2, 4], [6, 8]])
    with pytest.raises(TypeError, match="Expected a kernel expression node. Got Unknown"):
        evaluate(Unknown(X), {X: sp.eye(2)}, {n: 2})
    with pytest.raises(CodegenError, match="Expected a supported matrix node. Got Unknown"):
        TorchKernelPrinter({X: "X"}, {n: ("X", -1)}, "X").bind("Y", Unknown(X))
    with pytest.raises(CodegenError, match="Expected no zero matrix"):
        TorchKernelPrinter({X: "X"}, {n: ("X", -1)}, "X").bind("Y", ZeroMatrix(n, n))


def test_interpreter_over_a_field_refuses_what_it_cannot_evaluate_there():
    from sympy.matrices.expressions import HadamardProduct
    from sympy.polys.matrices import DomainMatrix

    from geoattn.symbolic.interpreter import evaluate

    n = sp.Symbol("n", integer=True, positive=True)
    X = MatrixSymbol("X", n, n)
    Xd = DomainMatrix.from_Matrix(sp.Matrix([[1, 2], [3, 4]])).convert_to(sp.QQ)
    got = evaluate(X.T * X + sp.Identity(n), {X: Xd}, {n: 2}, field=sp.QQ)
    assert got.to_Matrix() == sp.Matrix([[1, 3], [2, 4]]) * sp.Matrix([[1, 2], [3, 4]]) + sp.eye(2)
    with pytest.raises(TypeError, match="Expected a sum, product, transpose, power, inverse, identity or zero"):
        evaluate(HadamardProduct(X, X), {X: Xd}, {n: 2}, field=sp.QQ)
