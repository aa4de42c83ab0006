"""The Triton kernel of exp_skew for T <= 4 (geoattn.kernels._exp_triton, route closed-small/triton) without a GPU:
Triton's interpreter (TRITON_INTERPRET=1) runs the printed kernel on CPU tensors inside backend("triton"), against
the eager route and matrix_exp in float64; the printer's functions; a kernel printed from broken bindings is caught.
The same cases on a CUDA device are in tests/test_triton_cuda.py."""

from __future__ import annotations

import pytest
import sympy as sp
import torch
from sympy.matrices.expressions import MatrixSymbol

pytest.importorskip("triton")

import geoattn.kernels as K  # noqa: E402
from conftest import eps  # noqa: E402
from geoattn.codegen import generate, tritonprinter  # noqa: E402
from geoattn.codegen.printer import CodegenError  # noqa: E402
from geoattn.errors import StructureError  # noqa: E402
from geoattn.kernels import _exp_triton, _triton  # noqa: E402
from geoattn.symbolic.kernel_spec import NativeKernelSpec  # noqa: E402
from geoattn.symbolic.native_table import TRITON_KERNELS  # noqa: E402

F32, F16, F64 = torch.float32, torch.float16, torch.float64
(EXP,) = [k for k in TRITON_KERNELS if k.name == "exp_skew_small_fwd"]
BLOCK = _triton.BLOCK["cpu"]
B = BLOCK + 3  # a tail block


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def skews(n, T, scale, seed, dtype=F32):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n, T, T, generator=g, dtype=F64) * scale
    return (w - w.mT).to(dtype)


def run(s, backend, g=None, **kw):
    """exp_skew(s) on one backend, and its gradient for the incoming gradient g."""
    s = s.clone().requires_grad_()
    with K.backend(backend):
        e = K.exp_skew(s, **kw)
    if g is None:
        return e.detach(), None
    return e.detach(), torch.autograd.grad(e, s, g)[0]


def reference(s, g):
    """exp(S) and its gradient by torch.linalg.matrix_exp in float64 (an independent form: Pade and squaring)."""
    s64 = s.double().requires_grad_()
    e = torch.linalg.matrix_exp(s64)
    return e.detach(), torch.autograd.grad(e, s64, g.double())[0]


# -- the printer ----------------------------------------------------------------------------------------------------


def test_the_printer_prints_sqrt_sin_cos_and_sinc_in_float64():
    t = sp.Symbol("t", real=True)
    printer = tritonprinter._ScalarTriton({t: "t"})
    assert printer.doprint(sp.sqrt(t)) == "tl.sqrt(t)"
    assert printer.doprint(sp.cos(t)) == "tl.cos(t)" and printer.doprint(sp.sin(t)) == "tl.sin(t)"
    assert printer.doprint(sp.sinc(t)) == "tl.where(t == 0.0, 1.0, tl.sin(t)/tl.where(t == 0.0, 1.0, t))"


@pytest.mark.parametrize("expr", ["exp", "tan", "Abs", "atan2", "cbrt"])
def test_negative_control_every_other_function_is_refused(expr):
    t, u = sp.symbols("t u", real=True)
    e = {"exp": sp.exp(t), "tan": sp.tan(t), "Abs": sp.Abs(t), "atan2": sp.atan2(t, u), "cbrt": t ** sp.Rational(1, 3)}
    with pytest.raises(CodegenError, match="Expected .* in a Triton kernel. Got"):
        tritonprinter._ScalarTriton({t: "t", u: "u"}).doprint(e[expr])


def test_the_module_records_its_bindings_and_claims_and_one_width():
    src = generate.generate_triton_module(EXP.name, 4)
    assert src.count("@triton.jit") == 1 and "def exp_skew_small_fwd_d4(" in src
    assert "# verified by: exp_skew.hodge_form" in src and "# from: K = " in src
    assert "tl.cos(" in src and "tl.sqrt(" in src
    with pytest.raises(ValueError, match="Expected d in 4 for exp_skew_small_fwd. Got 3."):
        generate.generate_triton_module(EXP.name, 3)
    with pytest.raises(ValueError, match="Expected d = 4 for exp_skew_small_fwd. Got 2."):
        _triton.kernels(EXP.name, 2)


def test_codegen_check_covers_the_module(tmp_path):
    fresh, diff = generate.check()
    assert fresh, diff
    name = generate.triton_target_path(EXP.name, 4)
    path = tmp_path / "stale.py"
    src = open(name).read()
    path.write_text(src.replace("tl.cos(sEp_0)", "tl.sin(sEp_0)", 1))
    assert "tl.cos(sEp_0)" in src
    assert generate._diff(str(path), generate.generate_triton_module(EXP.name, 4))  # the stale copy differs


# -- the route: explain and its reasons ---------------------------------------------------------------------------


def test_explain_shows_the_route_and_its_reasons(monkeypatch):
    s = skews(3, 4, 1.0, 0)
    with K.backend("triton"):
        assert "-> closed-small/triton" in str(K.explain("exp_skew", s))
        assert "method 'taylor'" in str(K.explain("exp_skew", s, method="taylor"))
        assert "torch.float64: the Triton kernels take" in str(K.explain("exp_skew", s.double()))
        assert "T=5 > 4: no closed form" in str(K.explain("exp_skew", skews(2, 5, 1.0, 0)))
    why = str(K.explain("exp_skew", s))  # not forced: the interpreter never serves by itself
    assert "closed-small/triton" in why and "-> taylor-or-eigh/eager" in why
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert "the Triton kernels run on CUDA devices" in str(K.explain("exp_skew", s))


# -- against the eager route and float64 ----------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0, 1e3])
def test_forward_and_gradient_match_the_eager_route_and_float64(T, scale):
    s = skews(B, T, scale, 10 * T)
    g = torch.randn(B, T, T, generator=torch.Generator().manual_seed(1))
    e, gs = run(s, "triton", g)
    ee, gse = run(s, "eager", g)
    r, rg = reference(s, g)
    u = eps(F32)
    # the kernel computes in float64 and rounds once: within half a unit of the float64 exponential at every scale
    assert (e.double() - r).abs().max() <= T * u
    assert (e.double().mT @ e.double() - torch.eye(T, dtype=F64)).abs().max() <= 2 * T * u
    if scale <= 3:  # the eager route's squarings cost orthogonality at large norms (Note [large norms])
        assert (e - ee).abs().max() <= 4 * T * u
    # the backward is the printed VJP kernel: the skew projection of the eager route's gradient (Note [exp_skew
    # Triton kernel]), computed in float64 and rounded once, so within the float32 Taylor/eigh error of the eager
    # one (which grows like u ||S||: the squarings' rounding amplified by the norm) and a few u of float64's
    norm = float(s.double().abs().sum(-2).amax())
    assert (gs.double() - (gse.double() - gse.double().mT) / 2).abs().max() <= 16 * T * u * (1 + norm) * float(
        g.abs().max())
    assert (gs.double() - (rg - rg.mT) / 2).abs().max() <= 4 * T * u * float(g.abs().max().clamp_min(1))


def test_batched_incoming_gradients_take_the_differentiable_adjoint():
    s = skews(3, 3, 1.0, 5).requires_grad_()
    with K.backend("triton"):
        e = K.exp_skew(s)
    gs = torch.randn(2, 3, 3, 3, generator=torch.Generator().manual_seed(2))
    (g,) = torch.autograd.grad(e, s, gs, is_grads_batched=True, retain_graph=True)
    for i in range(2):
        (gi,) = torch.autograd.grad(e, s, gs[i], retain_graph=True)
        assert (g[i] - gi).abs().max() <= 16 * 3 * eps(F32) * (1 + float(gi.abs().max()))


def test_rank_deficient_and_zero_inputs_take_the_sinc_limit():
    s = torch.zeros(B, 4, 4)
    s[1, 0, 1], s[1, 1, 0] = 0.5, -0.5  # rank 2: one half-turn angle is the other, K+ = K- up to sign
    w = torch.randn(4, 1, dtype=F64)
    s[2] = (w @ torch.randn(1, 4, dtype=F64)).to(F32)
    s[2] = s[2] - s[2].mT  # rank 2 again
    s[3, :3, :3] = skews(1, 3, 2.0, 3)[0]  # so(3) inside so(4): K+ and K- of equal norm
    e, _ = run(s, "triton")
    r = torch.linalg.matrix_exp(s.double())
    assert torch.equal(e[0], torch.eye(4)) and not torch.isnan(e).any()
    assert (e.double() - r).abs().max() <= 4 * eps(F32)


def test_half_inputs_are_computed_in_float32_and_rounded():
    s = skews(B, 3, 1.0, 5, F16)
    e, _ = run(s, "triton")
    assert e.dtype == F16
    assert (e.double() - torch.linalg.matrix_exp(s.double())).abs().max() <= 3 * eps(F16)


def test_double_backward_is_the_eager_one_projected():
    s = skews(5, 4, 1.0, 6)
    g = torch.randn(5, 4, 4, generator=torch.Generator().manual_seed(2))
    out = []
    for backend in ("triton", "eager"):
        x = s.clone().requires_grad_()
        with K.backend(backend):
            (gx,) = torch.autograd.grad(K.exp_skew(x), x, g, create_graph=True)
        if backend == "eager":  # the Triton route's gradient is the skew projection of the eager one
            gx = (gx - gx.mT) / 2
        out.append(torch.autograd.grad((gx * gx).sum(), x)[0])
    assert (out[0] - out[1]).abs().max() <= 64 * 4 * eps(F32) * (1 + out[1].abs().max())


# -- batch independence and per-sample decisions ------------------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
def test_a_nan_or_huge_sample_changes_nothing_else(bad):
    s = skews(B, 4, 1.0, 7)
    s[BLOCK, 0, 2], s[BLOCK, 2, 0] = bad, -bad  # in the tail block
    g = torch.randn(B, 4, 4, generator=torch.Generator().manual_seed(3))
    e, gs = run(s, "triton", g)
    keep = [i for i in range(B) if i != BLOCK]
    ec, gc = run(s[keep], "triton", g[keep])
    assert torch.equal(e[keep], ec) and torch.equal(gs[keep], gc)
    if bad != bad:
        assert torch.isnan(e[BLOCK]).all()
    else:
        r = torch.linalg.matrix_exp(s[BLOCK].double())
        # one rounding to float32, and the float64 forms' own error, which grows like eps64 ||S|| (angles of 1e6)
        norm = float(s[BLOCK].double().abs().sum(-2).amax())
        assert (e[BLOCK].double() - r).abs().max() <= 4 * 4 * eps(F32) + 64 * eps(F64) * norm
        assert (e[BLOCK].double().mT @ e[BLOCK].double() - torch.eye(4, dtype=F64)).abs().max() <= 8 * eps(F32)


def test_non_skew_samples_raise_or_take_the_eager_path():
    s = skews(B, 3, 1.0, 8)
    s[4, 0, 0] = 0.3
    with K.backend("triton"), pytest.raises(StructureError, match="Expected S to be skew-symmetric"):
        K.exp_skew(s)
    e, _ = run(s, "triton", check=False)
    ee, _ = run(s, "eager", check=False)
    assert torch.equal(e[4], ee[4])  # the eager auto path's value for the matrix given
    k = 0.5 * (s[4] - s[4].mT)
    assert (e[4].double() - torch.linalg.matrix_exp(k.double())).abs().max() > 0.1  # not the skew part's exp
    assert torch.equal(e[:4], run(s[:4], "triton")[0])  # its neighbours keep the kernel's values


# -- negative control: a kernel printed from broken bindings is caught ---------------------------------------------


def _with(spec, name, expr):
    return NativeKernelSpec(**{**spec.__dict__, "bindings": [(n, expr if n == name else e) for n, e in spec.bindings]})


@pytest.mark.parametrize("name", ["Sm", "E"])
def test_negative_control_a_broken_kernel_is_caught(tmp_path, name):
    K4, H4, Ep, Em = (MatrixSymbol(n, 4, 4) for n in ("K", "H", "Ep", "Em"))
    expr = {"Sm": (K4 + H4) / 2, "E": Em * Ep.T}[name]  # the wrong self-dual half; a transposed factor
    header = generate.TRITON_HEADER.format(hash="-", version="-", sources="", names="")
    path = tmp_path / f"exp_{name}.py"
    path.write_text(header + "\n\n" + tritonprinter.print_triton_kernel(_with(EXP, name, expr), 4))
    module = _triton.kernels(path=str(path))
    s = skews(B, 4, 1.0, 9)
    e = _exp_triton.exp_small_forward(s, module=module)[0]
    assert (e.double() - torch.linalg.matrix_exp(s.double())).abs().max() > 4 * eps(F32)  # the check above


def test_bad_arrays_are_refused():
    with pytest.raises(ValueError, match=r"Expected S as a contiguous tensor \(B, T, T\) with 1 <= T <= 4 .* "
                                         r"Got torch.float64 \(2, 3, 3\)"):
        _exp_triton.exp_small_forward(torch.zeros(2, 3, 3, dtype=F64))
    with pytest.raises(ValueError, match=r"Got torch.float32 \(2, 5, 5\)"):
        _exp_triton.exp_small_forward(torch.zeros(2, 5, 5))


# -- the printed kernel compiles for a GPU (Triton's compiler runs without a device) ---------------------------------


def test_the_kernel_compiles_for_sm90_with_libdevice_float64_sin_and_cos(monkeypatch):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    fn = _triton.kernels(EXP.name, 4).exp_skew_small_fwd_d4
    signature = {"B": "i32", "T": "i32", "S_ptr": "*fp32", "E_ptr": "*fp32", "Skew_ptr": "*fp64",
                 "Size_ptr": "*fp64", "BLOCK": "constexpr"}
    try:
        compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs={"BLOCK": 128}),
                                  target=GPUTarget("cuda", 90, 32))
    except (ImportError, FileNotFoundError) as err:  # a triton without its CUDA backend or ptxas
        pytest.skip(f"Triton's CUDA compiler is not available here: {err}")
    ptx = compiled.asm["ptx"]
    assert ".target sm_90" in ptx and "ld.global" in ptx and "st.global" in ptx
    assert "sqrt.rn.f64" in ptx and ".approx" not in ptx  # correctly rounded sqrt; no approximate sin or cos
