"""The Triton LU kernels of the Gram form, one module for every d <= 16 (geoattn.codegen.gram_lu_triton,
geoattn.kernels._triton.gram_lu_forward/backward, route gram-lu/triton for 5 <= d <= 16) without a GPU: Triton's
interpreter (TRITON_INTERPRET=1) runs them on CPU tensors inside backend("triton"), against the eager Gram form, a
float64 T x T reference, a float64 finite difference and the C kernels; a kernel printed with a wrong sign is
caught, and the printer refuses bindings of other shapes. Shapes are tiny: the interpreter is slow. The same cases
on a CUDA device are in tests/test_triton_cuda.py."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton")

import geoattn.kernels as K  # noqa: E402
from conftest import assert_layer_matches_full64, eps, full64, skew64  # noqa: E402
from geoattn.codegen import generate, gram_lu_c, gram_lu_triton  # noqa: E402
from geoattn.errors import CodegenError  # noqa: E402
from geoattn.errors import BackendError  # noqa: E402
from geoattn.kernels import _native_lu, _triton  # noqa: E402
from geoattn.kernels._gram import GRAM_MAX_SCALE  # noqa: E402

F32, F64 = torch.float32, torch.float64
BLOCK = _triton.BLOCK["cpu"]
EPS32 = eps(F32)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def layer(x, A, backend, g=None):
    """y, x_bar, A_bar of the Cayley layer on one backend for the incoming gradient g (seeded when None)."""
    x, A = x.clone().requires_grad_(), A.clone().requires_grad_()
    with K.backend(backend):
        y = K.vp_attention(x, A, method="gram")
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(7), dtype=y.dtype) if g is None else g
    y.backward(g)
    return y.detach(), x.grad, A.grad, g


def assert_matches_reference(x, A, y, gx, gA, g):
    assert_layer_matches_full64(x, A, y, gx, gA, g, "cayley")


# -- the generator ---------------------------------------------------------------------------------------------------


def test_the_module_records_its_bindings_and_claims_and_fits_the_line_width():
    src = gram_lu_triton.generate_triton_lu_module()
    for fn in gram_lu_triton.FUNCTIONS:
        assert f"def {fn}(" in src
    assert src.count("verified by: vp.gram_form, vp.gram_lu_vjp") == 2
    for spec in gram_lu_c.SPECS.values():
        for name, expr in spec.bindings:
            assert f"from: {name} = {expr}" in src
    assert max(len(line) for line in src.splitlines()) <= 120
    assert "if " not in src.split("@triton.jit", 1)[1]  # no branch on the data: lanes select by tl.where
    assert "static_range" not in src  # the d x d loops are loops: unrolled, they compile for minutes
    assert len(src.splitlines()) <= 450  # one compact module for every width


def test_the_pass_printer_refuses_other_binding_shapes():
    # negative control: the printer knows a.T*b, a*S, a*S.T and sums of the last two, and nothing else
    from dataclasses import replace

    from geoattn.symbolic import expressions as ex

    spec = gram_lu_c.SPECS["gx"]
    before, body = gram_lu_triton.print_pass(spec)
    assert before == [] and "tl.reduce(Gy_t[:, None, :]*P, 2, _add) + tl.reduce(x_t[:, :, None]*H, 1, _add)" in body[-2]
    bad = [("gx", ex.x * gram_lu_c._P * gram_lu_c._H), ("gx", gram_lu_c._P * ex.x.T), ("gx", ex.x * ex.Gy.T)]
    for binding in bad:
        with pytest.raises(CodegenError, match="Expected .* Got"):
            gram_lu_triton.print_pass(replace(spec, bindings=[binding]))
    with pytest.raises(CodegenError, match="Expected a token input"):
        gram_lu_triton.print_pass(replace(gram_lu_c.SPECS["gram"], bindings=[("Gram", ex.x.T * ex.Gy)]))


def test_codegen_check_covers_the_lu_module(tmp_path):
    # the checked-in module is fresh, codegen writes and checks it, and a changed one shows in the diff
    targets = {path: make for path, make in generate._triton_outputs(str(tmp_path))}
    src = gram_lu_triton.generate_triton_lu_module()
    assert targets[str(tmp_path / gram_lu_triton.TARGET)]() == src
    here = generate.triton_target_path("vp_gram_fwd", 1).replace("_triton_vp_gram_fwd_d1.py", gram_lu_triton.TARGET)
    assert generate._diff(here, src) == ""
    path = tmp_path / gram_lu_triton.TARGET
    assert "-2.0*_mm(" in src
    path.write_text(src.replace("-2.0*_mm(", "2.0*_mm(", 1))
    assert "2.0*_mm(" in generate._diff(str(path), src)
    path.unlink()
    assert "does not exist" in generate._diff(str(path), src)


# -- the route -------------------------------------------------------------------------------------------------------


def test_explain_shows_the_route_and_why_it_does_not_serve(monkeypatch):
    x, A = torch.randn(3, 9, 8), skew64(8).float()
    why = dict((r.name, w) for r, w in K.explain("vp_attention", x, A).rejected)
    assert "inside backend('triton')" in why["gram-lu/triton"]
    with K.backend("triton"):
        assert K.explain("vp_attention", x, A).route.name == "gram-lu/triton"
        assert K.explain("vp_attention", torch.randn(3, 13, 12), skew64(12).float()).route.name == "gram-lu/triton"
        why = dict((r.name, w) for r, w in K.explain("vp_attention", torch.randn(3, 20, 17), skew64(17).float())
                   .rejected)
        assert "serves 5 <= d <= 16" in why["gram-lu/triton"]
        with pytest.raises(BackendError, match="float64"):
            K.vp_attention(x.double(), A.double())


# -- the layer against the eager form and float64 --------------------------------------------------------------------


# T = d + 1 (odd at d = 8, 12: DP = 16 with 4 padded rows); more tokens than lanes
@pytest.mark.parametrize("d,T", [(5, 6), (8, 9), (12, 13), (5, BLOCK + 3)])
def test_layer_matches_the_eager_form_and_float64(d, T):
    torch.manual_seed(10 * d + T)
    B = BLOCK + 3  # a tail block
    x, A = torch.randn(B, T, d), skew64(d).float()
    y, gx, gA, g = layer(x, A, "triton")
    ye, gxe, gAe, _ = layer(x, A, "eager")
    for a, b in ((y, ye), (gx, gxe), (gA, gAe)):  # both compute in float64 and round once
        assert (a - b).abs().max() <= 4 * T * EPS32 * (1 + b.abs().max())
    assert_matches_reference(x, A, y, gx, gA, g)


def test_d16_matches_float64():
    torch.manual_seed(16)
    x, A = torch.randn(2, 17, 16), skew64(16, 0.1).float()
    assert_matches_reference(x, A, *layer(x, A, "triton"))


def test_rank_deficient_tokens():
    torch.manual_seed(4)
    d, T = 5, 7
    u, v = torch.randn(4, T, 2), torch.randn(4, 2, d)
    x = u @ v  # rank 2 < d: the Gram matrix is singular, I + Gram A is not (det >= 1)
    A = skew64(d).float()
    assert_matches_reference(x, A, *layer(x, A, "triton"))


@pytest.mark.parametrize("d", [5, 12])
def test_kernels_agree_with_the_c_kernels_to_rounding(d):
    # the same LU with partial pivoting, the sums in another order: N within k*d*eps of float64 times the
    # condition of M, y and gx (rounded once to float32) within one float32 rounding
    ok, why = _native_lu.lu_native_status(d)
    if not ok:
        pytest.skip(why)
    torch.manual_seed(d)
    B, T = 5, d + 3
    x, A, gy = torch.randn(B, T, d), skew64(d), torch.randn(B, T, d)
    y, G, N, R = _triton.gram_lu_forward(x, A)
    yc, Gc, Nc, Rc = _native_lu.gram_forward(x, A)
    gx, gA = _triton.gram_lu_backward(x, gy, N, A)
    gxc, gAc = _native_lu.gram_backward(x, gy, Nc, A)
    e64 = eps(F64)
    M = torch.eye(d, dtype=F64) + Gc @ A
    cond = torch.linalg.cond(M).max()
    assert (G - Gc).abs().max() <= 4 * T * e64 * Gc.abs().max()
    assert (N - Nc).abs().max() <= 8 * d * e64 * cond * Nc.abs().max()
    assert R.max() <= 8 * d * e64 * cond and Rc.max() <= 8 * d * e64 * cond
    for a, b in ((y, yc), (gx, gxc)):
        assert (a - b).abs().max() <= 2 * EPS32 * b.abs().max()
    assert (gA - gAc).abs().max() <= 16 * d * T * e64 * cond**2 * gAc.abs().max()


def test_the_kernels_serve_d_up_to_4_too():
    # the route keeps the closed form at d <= 4, but the same kernels take those widths (DP = 2 or 4)
    torch.manual_seed(3)
    for d in (1, 3):
        B, T = 3, d + 2
        x, A, gy = torch.randn(B, T, d), skew64(d), torch.randn(B, T, d)
        y, _, N, R = _triton.gram_lu_forward(x, A)
        gx, gA = _triton.gram_lu_backward(x, gy, N, A)
        S = gA.sum(0)  # the layer's gradient in a skew A: the skew part
        assert_matches_reference(x, A, y, gx, 0.5 * (S - S.mT), gy)
        xd = x.double()
        cond = torch.linalg.cond(torch.eye(d, dtype=F64) + xd.mT @ xd @ A).max()
        assert R.max() <= 8 * d * eps(F64) * cond


def test_backward_against_a_float64_finite_difference():
    # the VJP kernel against the directional derivative of the float64 T x T form (the kernels take no float64
    # tokens, so torch.autograd.gradcheck cannot drive them; the inputs are exact in float32)
    torch.manual_seed(5)
    d, T, B = 5, 8, 3
    x, A, g = torch.randn(B, T, d), skew64(d).float(), torch.randn(B, T, d)
    dx, dA = torch.randn(B, T, d, dtype=F64), skew64(d)
    _, gx, gA, _ = layer(x, A, "triton", g)
    h = 1e-5

    def f(t):
        return (g.double() * full64(x.double() + t * dx, A.double() + t * dA)).sum()

    fd, fd2 = (f(h) - f(-h)) / (2 * h), (f(2 * h) - f(-2 * h)) / (4 * h)
    kernel = (gx.double() * dx).sum() + (gA.double() * dA).sum()
    scale = gx.double().abs().sum() * dx.abs().max() + gA.double().abs().sum() * dA.abs().max()
    # the kernel's float32 rounding (T*eps per entry); the central difference's truncation, h^2 f3 / 6 with f3 the
    # third derivative, estimated by Richardson from the step 2h (fd2 - fd = 3 h^2 f3 / 6 + O(h^4)), twice for
    # safety; its rounding, eps |f| / h, with |f| bounded by the sum of the absolute terms and a factor T d for
    # the float64 T x T solve
    terms = (g.double() * full64(x.double(), A.double())).abs().sum()
    truncation = 2 * (fd2 - fd).abs() / 3
    rounding = T * d * eps(F64) * terms / h
    assert (kernel - fd).abs() <= 16 * T * EPS32 * scale + truncation + rounding


def test_a_nan_or_huge_sample_does_not_touch_its_neighbours():
    torch.manual_seed(2)
    d, T = 5, 6
    x, A = torch.randn(BLOCK + 3, T, d), skew64(d).float()
    g = torch.randn(x.shape)
    y, gx, _, _ = layer(x, A, "triton", g)
    keep = torch.ones(BLOCK + 3, dtype=torch.bool)
    keep[BLOCK], keep[3] = False, False
    xb = x.clone()
    xb[BLOCK, 2, 1] = float("nan")  # in the tail block
    xb[3] *= 1e6  # past GRAM_MAX_SCALE: the QR form for that sample alone
    assert float((xb[3].double() ** 2).sum() * A.double().norm()) > GRAM_MAX_SCALE
    yb, gxb, _, _ = layer(xb, A, "triton", g)
    assert torch.isnan(yb[BLOCK]).all() and torch.isnan(gxb[BLOCK]).all()
    assert torch.equal(yb[keep], y[keep]) and torch.equal(gxb[keep], gx[keep])
    # the huge sample (the QR form) keeps the norm of each feature column, as the layer does
    n, nb = yb[3].double().norm(dim=-2), xb[3].double().norm(dim=-2)
    assert ((n - nb).abs() / nb).max() <= 8 * T * EPS32
    _, _, _, rmax = _triton.gram_lu_forward(xb.contiguous(), skew64(d))
    assert torch.isnan(rmax[BLOCK]) and not torch.isnan(rmax[keep]).any()


def test_a_sample_failing_the_residual_check_is_solved(monkeypatch):
    # the pivoted LU passes the check on nearly parallel tokens that fail the closed form's, so a failure is forced:
    # a wrong N for one sample, which its residual shows, must be replaced by the solve in both directions
    torch.manual_seed(3)
    d, T = 5, 8
    x, A = torch.randn(4, T, d), skew64(d).float()
    real = _triton.LU.gram_forward

    def spoiled(x, A, module=None):
        y, G, N, R = real(x, A, module)
        N[2] += 1.0
        R[2] = float("nan")
        return y, G, N, R

    monkeypatch.setattr(_triton.LU, "gram_forward", spoiled)
    assert_matches_reference(x, A, *layer(x, A, "triton"))  # a kept wrong N would spoil sample 2


def test_negative_control_a_wrong_sign_in_the_backward_is_caught(tmp_path):
    src = tmp_path / "broken_lu.py"
    src.write_text(gram_lu_triton.generate_triton_lu_module(negate_backward=True))
    broken = _triton.kernels(path=str(src))
    torch.manual_seed(8)
    d, T = 5, 6
    x, A, gy = torch.randn(3, T, d), skew64(d), torch.randn(3, T, d)
    _, _, N, _ = _triton.gram_lu_forward(x, A)
    x64 = x.double().requires_grad_()
    rx = torch.autograd.grad(full64(x64, A), x64, gy.double())[0]
    tol = 64 * T * EPS32 * (1 + rx.abs().max())
    bad = _triton.gram_lu_backward(x, gy, N, A, module=broken)[0]
    good = _triton.gram_lu_backward(x, gy, N, A)[0]
    assert (bad.double() - rx).abs().max() > tol  # the check the good kernel passes fails on the broken one
    assert (good.double() - rx).abs().max() <= tol


def test_bad_arrays_are_refused():
    x = torch.randn(2, 6, 9)
    x = torch.randn(2, 6, 17)
    with pytest.raises(ValueError, match=r"Expected x as a contiguous tensor \(B, T, d\) with d in 1..16"):
        _triton.gram_lu_forward(x, skew64(17))
    x = torch.randn(2, 6, 5)
    with pytest.raises(ValueError, match="Expected A as a contiguous float64"):
        _triton.gram_lu_forward(x, skew64(5).float())


def test_the_lu_kernels_compile_for_sm90_at_d16(monkeypatch):
    # Triton's compiler runs without a device (tests/test_triton.py); D and DP are constexpr, the d x d loops stay
    # loops (compiled in seconds: Note [Triton LU blocks])
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    module = _triton.kernels("gram_lu", 16)
    dp, block = _triton.lu_shape(16, "cuda")
    assert (dp, block) == (16, 8) and _triton.lu_shape(5, "cuda")[0] == 8 and _triton.lu_shape(1, "cpu")[0] == 2
    arrays = [("x", "*fp32"), ("A", "*fp64"), ("y", "*fp32"), ("Gram", "*fp64"), ("N", "*fp64"), ("R", "*fp64")]
    signature = {"B": "i32", "T": "i32", **{f"{n}_ptr": t for n, t in arrays}, "D": "constexpr", "DP": "constexpr",
                 "BLOCK": "constexpr"}
    try:
        compiled = triton.compile(ASTSource(fn=module.vp_gram_lu_fwd, signature=signature,
                                            constexprs={"D": 16, "DP": dp, "BLOCK": block}),
                                  target=GPUTarget("cuda", 90, 32))
    except (ImportError, FileNotFoundError) as err:  # a triton without its CUDA backend or ptxas
        pytest.skip(f"Triton's CUDA compiler is not available here: {err}")
    ptx = compiled.asm["ptx"]
    assert ".target sm_90" in ptx and "ld.global" in ptx and "st.global" in ptx and "f64" in ptx
