"""The native CPU kernels of the closed-form Gram layer: the C printer (geoattn.codegen.cprinter), the generated
source, and the compiled kernels against independent references (geoattn.kernels._native)."""

from __future__ import annotations

import threading

import pytest
import torch

from geoattn.kernels import dispatch
from conftest import build_native_library, full64, native_or_skip
from sympy.matrices.expressions import MatrixSymbol

import geoattn.kernels as K
from geoattn.codegen import cprinter, generate
from geoattn.codegen.printer import CodegenError
from geoattn.kernels import _native
from geoattn.symbolic import expressions as ex
from geoattn.symbolic.kernel_spec import NativeKernelSpec
from geoattn.symbolic.kernel_table import NATIVE_KERNELS

F32, F64 = torch.float32, torch.float64
FWD, BWD, CFWD, CBWD = NATIVE_KERNELS


def _native_or_skip(d=4, dtype=F32):
    native_or_skip(d, dtype)


def skew64(d, scale=1.0):
    w = torch.randn(d, d, dtype=F64) * scale
    return (w - w.mT).contiguous()


# -- the printer -------------------------------------------------------------------------------------------------


def test_printer_sorts_bindings_into_reductions_small_bindings_and_row_maps():
    toks = {ex.x, ex.Gy}
    kinds = {n: cprinter._kind(n, e, toks) for n, e in ex.GRAM_CLOSED_LAYER_VJP}
    assert kinds == {"Gram": "reduction", "Pbar": "reduction", "P": "small", "Mbar": "small", "H": "small", "gx": "rowmap", "gA": "small"}


@pytest.mark.parametrize("expr", [ex.x.T * ex.Gy * ex.x.T * ex.x,  # three token factors
                                  MatrixSymbol("S", ex.d, ex.d) * ex.x.T,  # a d x T result
                                  ex.x.T * ex.Gy + MatrixSymbol("S", ex.d, ex.d)])  # mixed terms
def test_printer_refuses_other_token_products(expr):
    with pytest.raises(CodegenError):
        spec = NativeKernelSpec(name="bad", doc="", bindings=[("Z", expr)], token_inputs=("x", "Gy"),
                                sample_inputs={"S": "general"})
        cprinter.print_native_kernel(spec, 2)


def test_printer_refuses_unknown_symbols_and_sizes():
    spec = NativeKernelSpec(name="bad", doc="", bindings=[("Z", MatrixSymbol("Q", ex.d, ex.d))], token_inputs=())
    with pytest.raises(CodegenError, match="unbound symbol"):
        cprinter.print_native_kernel(spec, 2)
    with pytest.raises(CodegenError, match="1 <= d <= 4"):
        cprinter.print_native_kernel(FWD, 5)


def test_printer_shares_symmetric_entries_and_reads_skew_lower_triangles():
    src = cprinter.print_native_kernel(FWD, 3)
    assert "double Gram_0_1[LANES];" in src and "Gram_1_0" not in src  # x^T x: one accumulator per pair
    assert "A[3]" in src and "A[1]" not in src  # A_1_0 read, A_0_1 = -A_1_0 assumed


def test_generated_source_is_up_to_date():
    with open(generate.native_target_path()) as fh:
        assert fh.read() == generate.generate_native_module()


# -- the compiled kernels ----------------------------------------------------------------------------------------


def test_native_kernels_build_where_a_compiler_is_found():
    if _native._compiler() is None:
        pytest.skip("no C compiler on this machine (scripts/setup.sh installs gcc where apt-get exists)")
    for d in range(1, 5):
        assert _native.native_status(d, F32) == (True, "native kernels built")


def test_build_says_why_it_cannot_build(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOATTN_NATIVE", "0")
    assert _native.build(4, "f32", cache_dir=str(tmp_path)) == "GEOATTN_NATIVE=0 in the environment"
    monkeypatch.delenv("GEOATTN_NATIVE")
    monkeypatch.setattr(_native, "_compiler", lambda: None)
    assert _native.build(4, "f32", cache_dir=str(tmp_path)).startswith("no C compiler found")


def test_build_reports_a_blocked_cache_and_a_compiler_error(tmp_path):
    if _native._compiler() is None:
        pytest.skip("no C compiler on this machine")
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the cache directory should be
    assert _native.build(4, "f32", cache_dir=str(blocked / "cache")).startswith("cannot build the native kernels")
    bad = tmp_path / "bad.c"
    bad.write_text("this is not C\n")
    assert _native.build(4, "f32", source=str(bad), cache_dir=str(tmp_path)).startswith("the C compiler failed")


def test_a_changed_source_gets_its_own_library(tmp_path):
    """The library's name hashes the source bytes it was compiled from: an edited source is never served by the
    library of the old one."""
    if _native._compiler() is None:
        pytest.skip("no C compiler on this machine")
    src = tmp_path / "native_gram.c"
    src.write_text(open(_native.SOURCE).read())
    cache = tmp_path / "cache"
    assert not isinstance(_native.build(1, "f32", str(src), str(cache)), str)
    assert not isinstance(_native.build(1, "f32", str(src), str(cache)), str)  # found in the cache
    assert len(list(cache.glob("*.so"))) == 1
    src.write_text(src.read_text() + "\n/* edited */\n")
    assert not isinstance(_native.build(1, "f32", str(src), str(cache)), str)
    assert len(list(cache.glob("*.so"))) == 2


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("T,B", [(16, 19), (3, 8), (40, 9), (100, 3)])  # a tail block, d > T, several token tiles
def test_forward_matches_the_full_form(d, T, B):
    _native_or_skip(d)
    torch.manual_seed(d * 100 + T)
    x = torch.randn(B, T, d)
    A = skew64(d, 0.3)
    y, G, N, rmax = _native.gram_forward(x, A)
    ref = full64(x, A)
    rel = ((y.double() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max()
    assert rel <= 8 * T * torch.finfo(F32).eps, rel
    x64 = x.double()
    eps = torch.finfo(F64).eps
    assert (G - x64.mT @ x64).abs().max() <= 4 * T * eps * (x64 * x64).sum((-2, -1)).max()
    eye = torch.eye(d, dtype=F64)
    M = eye + G @ A
    Rtrue = M.mT @ N - eye  # N - M^{-T} = M^{-T} R: the residual bounds N's error
    assert (Rtrue.abs().amax((-2, -1)) <= torch.finfo(F32).eps / 16).all()  # these inputs pass the runtime's check
    Nref = torch.linalg.inv(M.mT)
    cond = torch.linalg.cond(M)
    bound = torch.linalg.matrix_norm(Nref, 2) * (torch.linalg.matrix_norm(Rtrue) + 64 * d * eps * cond)
    assert ((N - Nref).abs().amax((-2, -1)) <= bound).all()
    # the kernel's own residual: the same matrix up to the rounding of the product M^T N
    scale = 1 + torch.linalg.matrix_norm(M) * torch.linalg.matrix_norm(N)
    assert ((rmax - Rtrue.abs().amax((-2, -1))).abs() <= 16 * d * eps * scale).all()


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("T", [5, 40])
def test_backward_matches_the_full_form(d, T):
    _native_or_skip(d)
    torch.manual_seed(d + T)
    B = 11
    x = torch.randn(B, T, d)
    A = skew64(d, 0.3)
    gy = torch.randn(B, T, d)
    _, _, N, _ = _native.gram_forward(x, A)
    gx, gA = _native.gram_backward(x, gy, N, A)
    x64 = x.double().requires_grad_()
    a = A.clone().requires_grad_()
    rx, ra = torch.autograd.grad(full64(x64, 0.5 * (a - a.mT)), (x64, a), gy.double())
    tol = 64 * T * torch.finfo(F32).eps
    assert (gx.double() - rx).abs().max() <= tol * (1 + rx.abs().max())
    ga = gA.sum(0)
    assert (0.5 * (ga - ga.mT) - ra).abs().max() <= tol * B * (1 + ra.abs().max())


def test_float64_tokens_agree_with_the_float64_solve():
    _native_or_skip(4, F64)
    torch.manual_seed(1)
    x, A = torch.randn(9, 20, 4, dtype=F64), skew64(4, 0.3)
    y, G, _, _ = _native.gram_forward(x, A)
    ref = full64(x, A)
    cond = torch.linalg.cond(torch.eye(4, dtype=F64) + G @ A)  # both sides lose cond(I + G A) units of rounding
    err = ((y - ref).abs() / x.norm(dim=-2, keepdim=True)).amax((-2, -1))
    assert (err <= 64 * 20 * torch.finfo(F64).eps * cond).all(), (err, cond)


def test_results_do_not_depend_on_the_batch_or_the_thread_split(monkeypatch):
    _native_or_skip()
    torch.manual_seed(2)
    x, A = torch.randn(2 * _native._MIN_PER_THREAD + 5, 16, 4), skew64(4, 0.3)
    gy = torch.randn_like(x)
    monkeypatch.setattr(_native, "_threads", lambda: 1)
    one = _native.gram_forward(x, A)
    back_one = _native.gram_backward(x, gy, one[2], A)
    monkeypatch.setattr(_native, "_threads", lambda: 2)
    two = _native.gram_forward(x, A)
    back_two = _native.gram_backward(x, gy, one[2], A)
    for a, b in zip(one + back_one, two + back_two):
        assert torch.equal(a, b)
    for i in (0, 7, 1000):
        for batch in (x[i : i + 1], x[i : i + 9], torch.cat([x[:3] * 1e3, x[i : i + 1]])):
            k = 0 if batch.shape[0] != 4 else 3
            assert torch.equal(_native.gram_forward(batch.contiguous(), A)[0][k], one[0][i])


def test_nan_inputs_fail_the_residual_check():
    _native_or_skip()
    x, A = torch.randn(3, 16, 4), skew64(4)
    x[1, 4, 2] = float("nan")
    y, _, _, rmax = _native.gram_forward(x, A)
    assert torch.isnan(rmax[1]) and not torch.isnan(rmax[[0, 2]]).any()
    assert torch.isnan(y[1]).all() and not torch.isnan(y[[0, 2]]).any()


def test_inputs_are_checked():
    _native_or_skip()
    with pytest.raises(ValueError, match="Expected a contiguous CPU tensor"):
        _native.gram_forward(torch.randn(2, 16, 4).mT, skew64(4))
    with pytest.raises(ValueError, match="Expected A as a contiguous float64"):
        _native.gram_forward(torch.randn(2, 16, 4), skew64(4).float())
    with pytest.raises(ValueError, match="Expected gy contiguous"):
        x = torch.randn(2, 16, 4)
        _native.gram_backward(x, torch.ones(()).expand_as(x), torch.eye(4, dtype=F64).repeat(2, 1, 1), skew64(4))
    with pytest.raises(ValueError, match="Expected N contiguous"):
        _native.gram_backward(x, x, torch.eye(4, dtype=F64).expand(2, 4, 4), skew64(4))


def test_the_layer_takes_the_native_kernels_and_agrees_with_the_eager_form(monkeypatch):
    _native_or_skip()
    calls = []
    for name in ("gram_forward", "gram_backward"):
        real = getattr(_native, name)
        monkeypatch.setattr(_native, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    torch.manual_seed(5)
    x0, A0 = torch.randn(5, 16, 4), skew64(4, 0.3).float()
    g = torch.randn(5, 16, 4)
    results = {}
    for native in (True, False):
        monkeypatch.setattr(dispatch, "_FORCED", [] if native else ["eager"])
        calls.clear()
        x, A = x0.clone().requires_grad_(), A0.clone().requires_grad_()
        y = K.vp_attention(x, A)
        y.backward(g)
        assert calls == (["gram_forward", "gram_backward"] if native else [])
        results[native] = (y.detach(), x.grad, A.grad)
    tol = 64 * 16 * torch.finfo(F32).eps
    for a, b in zip(results[True], results[False]):  # the same float64 computation, rounded to float32 once
        assert (a - b).abs().max() <= tol * (1 + b.abs().max())


# -- negative controls: kernels printed from broken bindings are caught -------------------------------------------


def _with(bindings, name, expr):
    return [(n, expr if n == name else e) for n, e in bindings]


@pytest.mark.parametrize("name,expr", [
    ("J", -ex.A * ex.Gram),  # a sign in the closed form
    ("y", ex.x * MatrixSymbol("N", ex.d, ex.d)),  # N in place of P = 2N - I
])
def test_negative_control_a_broken_forward_kernel_is_caught(tmp_path, name, expr):
    _native_or_skip()
    torch.manual_seed(3)
    x, A = torch.randn(6, 16, 4), skew64(4, 0.3)
    spec = NativeKernelSpec(**{**FWD.__dict__, "bindings": _with(FWD.bindings, name, expr)})
    lib = build_native_library(tmp_path, [spec, BWD], 4)
    y = _native.gram_forward(x, A, library=lib)[0]
    rel = ((y.double() - full64(x, A)).abs() / x.double().norm(dim=-2, keepdim=True)).max()
    assert rel > 8 * 16 * torch.finfo(F32).eps  # the check test_forward_matches_the_full_form makes


def test_negative_control_a_broken_backward_kernel_is_caught(tmp_path):
    _native_or_skip()
    torch.manual_seed(4)
    x, A, gy = torch.randn(6, 16, 4), skew64(4, 0.3), torch.randn(6, 16, 4)
    P, H = MatrixSymbol("P", ex.d, ex.d), MatrixSymbol("H", ex.d, ex.d)
    spec = NativeKernelSpec(**{**BWD.__dict__, "bindings": _with(BWD.bindings, "gx", ex.Gy * P.T - ex.x * H)})
    lib = build_native_library(tmp_path, [FWD, spec], 4)
    _, _, N, _ = _native.gram_forward(x, A, library=lib)
    gx, _ = _native.gram_backward(x, gy, N, A, library=lib)
    x64 = x.double().requires_grad_()
    rx = torch.autograd.grad(full64(x64, A), x64, gy.double())[0]
    assert (gx.double() - rx).abs().max() > 64 * 16 * torch.finfo(F32).eps * (1 + rx.abs().max())


def test_vmapped_incoming_gradients_take_the_functional_backward(monkeypatch):
    """is_grads_batched hands the backward a batched gradient, which has no storage for the C kernel to read: the
    layer's backward then takes the differentiable float64 form, and agrees with the native one."""
    _native_or_skip()
    torch.manual_seed(6)
    x, A = torch.randn(3, 16, 4, requires_grad=True), skew64(4, 0.3).float().requires_grad_()
    gs = torch.randn(5, 3, 16, 4)
    bx, bA = torch.autograd.grad(K.vp_attention(x, A), (x, A), gs, is_grads_batched=True)
    calls = []
    real = _native.gram_backward
    monkeypatch.setattr(_native, "gram_backward", lambda *a: calls.append(1) or real(*a))
    tol = 64 * 16 * torch.finfo(F32).eps
    for k in range(5):
        ox, oA = torch.autograd.grad(K.vp_attention(x, A), (x, A), gs[k])
        assert (bx[k] - ox).abs().max() <= tol * (1 + ox.abs().max())
        assert (bA[k] - oA).abs().max() <= tol * 16 * (1 + oA.abs().max())
    assert len(calls) == 5  # the reference took the native backward


def test_a_kernel_that_cannot_allocate_raises():
    # run_checked: a kernel returning 1 (its buffers not allocated) raises instead of leaving its outputs unwritten
    out = torch.zeros(4, 3)
    _native.run_checked(lambda *a: 0, 4, 3, [(out, True)])
    with pytest.raises(MemoryError, match="Expected the native kernel to allocate"):
        _native.run_checked(lambda *a: 1, 4, 3, [(out, True)])


def test_geoattn_native_0_is_not_remembered(monkeypatch):
    # a status asked while GEOATTN_NATIVE=0 refuses, and the refusal is not cached for the rest of the process
    libraries = {}
    monkeypatch.setenv("GEOATTN_NATIVE", "0")
    assert _native.load(libraries, threading.Lock(), (4, "f32"), lambda d, r: "built") == \
        "GEOATTN_NATIVE=0 in the environment"
    assert libraries == {}
    monkeypatch.delenv("GEOATTN_NATIVE")
    assert _native.load(libraries, threading.Lock(), (4, "f32"), lambda d, r: "built") == "built"
