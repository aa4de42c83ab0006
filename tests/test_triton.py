"""The Triton kernels (geoattn.codegen.tritonprinter, geoattn.kernels._triton) without a GPU: Triton's interpreter
(TRITON_INTERPRET=1) runs the printed kernels on CPU tensors inside backend("triton"), against the eager form and a
float64 reference; kernels printed from broken bindings are caught. The same cases on a CUDA device are in
tests/test_triton_cuda.py."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from sympy.matrices.expressions import MatrixSymbol

pytest.importorskip("triton")

import geoattn.kernels as K  # noqa: E402
from conftest import eps, full64, skew64  # noqa: E402
from geoattn.codegen import generate, tritonprinter  # noqa: E402
from geoattn.errors import BackendError  # noqa: E402
from geoattn.kernels import _triton  # noqa: E402
from geoattn.symbolic import expressions as ex  # noqa: E402
from geoattn.symbolic.kernel_spec import NativeKernelSpec  # noqa: E402
from geoattn.symbolic.kernel_table import NATIVE_KERNELS  # noqa: E402

F32, F16, F64 = torch.float32, torch.float16, torch.float64
FWD, BWD, CFWD, CBWD = NATIVE_KERNELS
BLOCK = _triton.BLOCK["cpu"]


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def layer(x, A, backend):
    """y, x_bar, A_bar of the Cayley layer for the incoming gradient g (seeded), on one backend."""
    x, A = x.clone().requires_grad_(), A.clone().requires_grad_()
    with K.backend(backend):
        y = K.vp_attention(x, A, method="gram")
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(7), dtype=y.dtype)
    y.backward(g)
    return y.detach(), x.grad, A.grad, g


# -- the printer and the generated file -----------------------------------------------------------------------------


def test_every_printed_kernel_records_its_bindings_and_claims():
    for spec in NATIVE_KERNELS:
        for d in range(1, spec.max_dim + 1):
            src = generate.generate_triton_module(spec.name, d)  # one module per native kernel and width
            body = tritonprinter.print_triton_kernel(spec, d)
            assert f"def {spec.name}_d{d}(" in body and body in src
            assert f"# verified by: {', '.join(spec.claims)}" in body
            for name, _ in spec.bindings:
                assert f"# from: {name} = " in body
    assert {n: k.max_dim for n, k in ((k.name, k) for k in NATIVE_KERNELS)} == _triton.FUNCTIONS


def test_codegen_check_covers_the_triton_files(tmp_path):
    for path, make in generate._triton_outputs(str(tmp_path)):  # with the LU modules (tests/test_triton_lu.py)
        with open(path, "w") as fh:
            fh.write(make())
    fresh, diff = generate.check(triton_dir=str(tmp_path))
    assert fresh, diff
    path = tmp_path / "_triton_vp_gram_fwd_d2.py"
    src = generate.generate_triton_module("vp_gram_fwd", 2)
    assert "2.0*N_0_0" in src
    path.write_text(src.replace("2.0*N_0_0", "3.0*N_0_0", 1))
    fresh, diff = generate.check(triton_dir=str(tmp_path))
    assert not fresh and "3.0*N_0_0" in diff
    path.unlink()  # a missing module is stale too
    assert not generate.check(triton_dir=str(tmp_path))[0]


def test_fractions_are_printed_exactly_in_float64():
    import sympy as sp

    s = sp.Symbol("s", real=True)
    printer = tritonprinter._ScalarTriton({s: "s"})
    assert "_one" in printer.doprint(s / 3)  # a Python literal 1/3 would be rounded to float32 by Triton
    assert "_one" not in printer.doprint(s / 4)  # 1/4 is exact in float32


def test_the_runtime_imports_and_works_without_triton():
    code = ("import sys; sys.modules['triton'] = None\n"
            "import torch, geoattn.kernels as K\n"
            "x = torch.randn(2, 5, 3); A = torch.randn(3, 3); A = A - A.T\n"
            "K.vp_attention(x, A)\n"
            "from geoattn.kernels import _triton, _backends\n"
            "from geoattn.kernels.dispatch import Call\n"
            "print(_triton.triton_status()[1])\n"
            "print(_backends._triton_check(Call(device=torch.device('cuda'), traced=False)))\n"
            "print('sympy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("triton is not installed") and lines[1] == lines[0]
    assert lines[2] == "False"


# -- the backend ----------------------------------------------------------------------------------------------------


def test_explain_says_why_the_triton_routes_do_not_serve(monkeypatch):
    x, A = torch.randn(3, 8, 4), skew64(4).float()
    why = dict((r.name, w) for r, w in K.explain("vp_attention", x, A).rejected)
    assert "inside backend('triton')" in why["gram-closed/triton"]
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    why = dict((r.name, w) for r, w in K.explain("vp_attention", x, A).rejected)
    assert "run on CUDA devices" in why["gram-closed/triton"]
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with K.backend("triton"):
        assert K.explain("vp_attention", x, A).route.name == "gram-closed/triton"
        assert K.explain("cayley", torch.zeros(2, 3, 3)).route.name == "closed-small/triton"
        with pytest.raises(BackendError, match="float64"):
            K.vp_attention(x.double(), A.double())
        with pytest.raises(BackendError, match="d=17 > 4"):  # d = 5..16: gram-lu/triton
            K.vp_attention(torch.randn(2, 20, 17), skew64(17).float())


def test_negative_control_a_missing_triton_is_reported(monkeypatch):
    monkeypatch.setitem(_triton._loaded, "triton", (False, "triton is not installed (test)"))
    x, A = torch.randn(3, 8, 4), skew64(4).float()
    with K.backend("triton"):
        with pytest.raises(BackendError, match=r"triton is not installed \(test\)"):
            K.vp_attention(x, A)


# -- the Gram layer against the eager form and a float64 reference -------------------------------------------------


@pytest.mark.parametrize("d", [3, 4])
@pytest.mark.parametrize("T", [1, 7, BLOCK + 3])  # one token, an odd count, more tokens than lanes in a block
def test_layer_matches_the_eager_form_and_float64(d, T):
    torch.manual_seed(10 * d + T)
    B = BLOCK + 3  # a tail block
    x, A = torch.randn(B, T, d), skew64(d).float()
    y, gx, gA, g = layer(x, A, "triton")
    ye, gxe, gAe, _ = layer(x, A, "eager")
    # both compute in float64 and round once: a few units of float32
    for a, b in ((y, ye), (gx, gxe), (gA, gAe)):
        assert (a - b).abs().max() <= 4 * T * eps(F32) * (1 + b.abs().max())
    x64, A64 = x.double().requires_grad_(), A.double().requires_grad_()
    y64 = full64(x64, 0.5 * (A64 - A64.mT))
    rx, rA = torch.autograd.grad(y64, (x64, A64), g.double())
    assert ((y.double() - y64).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 8 * T * eps(F32)
    tol = 64 * T * eps(F32)
    assert (gx.double() - rx).abs().max() <= tol * (1 + rx.abs().max())
    assert (gA.double() - rA).abs().max() <= tol * B * (1 + rA.abs().max())


def test_half_tokens_are_computed_in_float64_and_rounded_once():
    torch.manual_seed(1)
    x, A = torch.randn(5, 9, 3).half(), skew64(3)
    y, _, _, rmax = _triton.gram_forward(x, A)
    assert y.dtype == F16
    ref = full64(x.double(), A)
    assert ((y.double() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 2 * eps(F16)


def test_a_nan_sample_does_not_touch_its_neighbours():
    torch.manual_seed(2)
    x, A = torch.randn(BLOCK + 3, 5, 4), skew64(4).float()
    x[BLOCK, 2, 1] = float("nan")  # in the tail block
    clean = torch.cat([x[:BLOCK], x[BLOCK + 1:]])
    y, gx, gA, _ = layer(x, A, "triton")
    yc, gxc, _, _ = layer(clean, A, "triton")
    assert torch.isnan(y[BLOCK]).all() and torch.isnan(gx[BLOCK]).all()
    keep = [i for i in range(BLOCK + 3) if i != BLOCK]
    assert torch.equal(y[keep], yc) and not torch.isnan(gx[keep]).any()
    _, _, _, rmax = _triton.gram_forward(x.contiguous(), skew64(4))
    assert torch.isnan(rmax[BLOCK]) and not torch.isnan(rmax[keep]).any()


def test_samples_failing_the_residual_check_are_solved():
    torch.manual_seed(3)
    b = torch.randn(4, 1, 3)
    # nearly parallel tokens of scale 10 (Note [closed-form residual check])
    x = 10 * (b + 1e-3 * torch.randn(4, 12, 3))
    A = skew64(3, 1.0).float()
    _, _, _, rmax = _triton.gram_forward(x, A.double())
    assert (rmax > _triton_tol()).any()
    y, *_ = layer(x, A, "triton")
    ye, *_ = layer(x, A, "eager")
    assert (y - ye).abs().max() <= 64 * 12 * eps(F32) * (1 + ye.abs().max())


def _triton_tol():
    from geoattn.kernels._gram import residual_tolerance

    return residual_tolerance(F32)


# -- the Cayley transform of small matrices --------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 2, 3])
def test_cayley_matches_the_eager_form_and_float64(T):
    torch.manual_seed(T)
    B = BLOCK + 3
    w = torch.randn(B, T, T)
    c = w - w.mT
    c[1] = torch.randn(T, T)  # not skew: solved
    g = torch.randn(B, T, T)
    out = {}
    for backend in ("triton", "eager"):
        cr = c.clone().requires_grad_()
        with K.backend(backend):
            lam = K.cayley(cr)
        lam.backward(g)
        out[backend] = (lam.detach(), cr.grad)
    for a, b in zip(out["triton"], out["eager"]):
        assert (a - b).abs().max() <= 16 * T * eps(F32) * (1 + b.abs().max())
    c64 = c.double().requires_grad_()
    eye = torch.eye(T, dtype=F64)
    ref = torch.linalg.solve((eye + c64).mT, (eye - c64).mT).mT  # (I - C)(I + C)^{-1}
    (rc,) = torch.autograd.grad(ref, c64, g.double())
    # the skew samples against float64 (orthogonal results: no conditioning to account for); the solved
    # non-skew sample is the eager form's float32 solve, compared above
    skew = [i for i in range(B) if i != 1]
    assert (out["triton"][0].double() - ref)[skew].abs().max() <= 16 * T * eps(F32)
    assert (out["triton"][1].double() - rc)[skew].abs().max() <= 64 * T * eps(F32) * (1 + rc[skew].abs().max())


# -- negative controls: kernels printed from broken bindings are caught -------------------------------------------


def _broken_module(tmp_path, specs, name):
    header = generate.TRITON_HEADER.format(hash="-", version="-", sources="", names="")
    body = [tritonprinter.print_triton_kernel(k, d) for k in specs for d in range(1, k.max_dim + 1)]
    path = tmp_path / f"{name}.py"
    path.write_text(header + "\n\n" + "\n\n".join(body))
    return _triton.kernels(path=str(path))


def _with(spec, name, expr):
    return NativeKernelSpec(**{**spec.__dict__, "bindings": [(n, expr if n == name else e) for n, e in spec.bindings]})


@pytest.mark.parametrize("name,expr", [
    ("J", -ex.A * ex.Gram),  # a sign in the closed form
    ("y", ex.x * MatrixSymbol("N", ex.d, ex.d)),  # N in place of P = 2N - I
])
def test_negative_control_a_broken_forward_kernel_is_caught(tmp_path, name, expr):
    torch.manual_seed(4)
    x, A = torch.randn(6, 7, 3), skew64(3)
    module = _broken_module(tmp_path, [_with(FWD, name, expr)], f"fwd_{name}")
    y = _triton.gram_forward(x, A, module=module)[0]
    rel = ((y.double() - full64(x, A)).abs() / x.double().norm(dim=-2, keepdim=True)).max()
    assert rel > 8 * 7 * eps(F32)  # the check test_layer_matches_the_eager_form_and_float64 makes


def test_negative_control_a_broken_backward_kernel_is_caught(tmp_path):
    torch.manual_seed(5)
    x, A, gy = torch.randn(6, 7, 3), skew64(3), torch.randn(6, 7, 3)
    P, H = MatrixSymbol("P", ex.d, ex.d), MatrixSymbol("H", ex.d, ex.d)
    module = _broken_module(tmp_path, [FWD, _with(BWD, "gx", ex.Gy * P.T - ex.x * H)], "bwd")
    _, _, N, _ = _triton.gram_forward(x, A, module=module)
    gx, _ = _triton.gram_backward(x, gy, N, A, module=module)
    x64 = x.double().requires_grad_()
    rx = torch.autograd.grad(full64(x64, A), x64, gy.double())[0]
    assert (gx.double() - rx).abs().max() > 64 * 7 * eps(F32) * (1 + rx.abs().max())


def test_negative_control_a_broken_cayley_kernel_is_caught(tmp_path):
    torch.manual_seed(6)
    w = torch.randn(5, 3, 3)
    c = (w - w.mT).contiguous()
    C = MatrixSymbol("C", ex.d, ex.d)
    broken = _with(CFWD, "C2", C * C.T)  # C C^T = -C^2 for skew C: a sign
    module = _broken_module(tmp_path, [broken], "cayley")
    lam = _triton.cayley_forward(c, module=module)[0]
    eye = torch.eye(3, dtype=F64)
    ref = (eye - c.double()) @ torch.linalg.inv(eye + c.double())
    assert (lam.double() - ref).abs().max() > 16 * 3 * eps(F32) * (1 + ref.abs().max())


# -- the printed kernels compile for a GPU (Triton's compiler runs without a device) ---------------------------------


def _compile(fn, arrays):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {"B": "i32", "T": "i32", **{f"{n}_ptr": t for n, t in arrays}, "BLOCK": "constexpr"}
    try:
        return triton.compile(ASTSource(fn=fn, signature=signature, constexprs={"BLOCK": 128}),
                              target=GPUTarget("cuda", 90, 32))
    except (ImportError, FileNotFoundError) as err:  # a triton without its CUDA backend or ptxas
        pytest.skip(f"Triton's CUDA compiler is not available here: {err}")


@pytest.mark.parametrize("name,arrays", [
    ("vp_gram_fwd_d4", [("x", "*fp32"), ("A", "*fp64"), ("y", "*fp32"), ("Gram", "*fp64"), ("N", "*fp64"),
                        ("R", "*fp64")]),
    ("vp_gram_bwd_d4", [("x", "*bf16"), ("Gy", "*bf16"), ("N", "*fp64"), ("A", "*fp64"), ("gx", "*bf16"),
                        ("gA", "*fp64")]),
    ("cayley_vjp_d3", [("Lam", "*fp16"), ("G", "*fp16"), ("gC", "*fp16")]),
])
def test_printed_kernels_compile_for_sm90(monkeypatch, name, arrays):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    kernel, d = name.rsplit("_d", 1)
    compiled = _compile(getattr(_triton.kernels(kernel, int(d)), name), arrays)
    ptx = compiled.asm["ptx"]
    assert ".target sm_90" in ptx and "ld.global" in ptx and "st.global" in ptx
    assert "f64" in ptx  # computed in float64 whatever the storage


def test_negative_control_a_kernel_that_does_not_type_check_fails_to_compile(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    src = generate.TRITON_HEADER.format(hash="-", version="-", sources="", names="")
    body = tritonprinter.print_triton_kernel(CBWD, 2).replace("gC_ptr + _b*4 + 0,", "gC_ptr + _b*4 + 0.5,", 1)
    path = tmp_path / "untyped.py"
    path.write_text(src + "\n\n" + body)
    module = _triton.kernels(path=str(path))
    with pytest.raises(Exception, match="(?i)pointer|float|type"):
        _compile(module.cayley_vjp_d2, [("Lam", "*fp32"), ("G", "*fp32"), ("gC", "*fp32")])


def test_a_generated_module_imported_elsewhere_is_decorated_again_under_the_interpreter(monkeypatch):
    """The kernels of a module imported before the interpreter was switched on (by a doctest, or a test reading the
    generated file) were decorated for a GPU: kernels() decorates them again (in a full run they raised "0 active
    drivers")."""
    import importlib
    import sys

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    module = importlib.reload(importlib.import_module("geoattn.kernels._triton_vp_gram_fwd_d3"))
    if hasattr(module, "_interpreted"):
        del module._interpreted
    assert "geoattn.kernels._triton_vp_gram_fwd_d3" in sys.modules
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x, A = torch.randn(3, 7, 3), skew64(3).float()
    with K.backend("triton"):
        y = K.vp_attention(x, A)
    with K.backend("eager"):
        ref = K.vp_attention(x, A)
    assert (y - ref).abs().max() <= 64 * 7 * 3 * eps(F32) * float(x.abs().max()) ** 2


def test_one_generated_module_per_kernel_and_width():
    """Each generated module holds one job: one native kernel printed at one width; other widths are refused."""
    for spec in NATIVE_KERNELS:
        for d in range(1, spec.max_dim + 1):
            src = generate.generate_triton_module(spec.name, d)
            assert src.count("@triton.jit") == 1 and f"def {spec.name}_d{d}(" in src
        with pytest.raises(ValueError, match=rf"Expected d in 1..{spec.max_dim} for {spec.name}. Got 0."):
            generate.generate_triton_module(spec.name, 0)
