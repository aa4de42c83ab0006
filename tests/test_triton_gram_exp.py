"""The Triton kernels of the exponential layer's Gram form, one module for every 3 <= d <= 16
(geoattn.codegen.gram_exp_triton, geoattn.kernels._triton.gram_exp_forward/backward, route gram-exp/triton) without a
GPU: Triton's interpreter (TRITON_INTERPRET=1) runs them on CPU tensors inside backend("triton"), against the C
kernels' route, a float64 T x T reference and gradcheck; a kernel printed with a dropped transpose is caught. Shapes
are tiny: the interpreter is slow. The same cases on a CUDA device are in tests/test_triton_cuda.py."""

from __future__ import annotations

import math
import time

import pytest
import torch

pytest.importorskip("triton")

import geoattn.kernels as K  # noqa: E402
from conftest import assert_layer_matches_full64, eps, skew64  # noqa: E402
from geoattn.codegen import gram_exp_c, gram_exp_triton, generate  # noqa: E402
from geoattn.errors import BackendError  # noqa: E402
from geoattn.kernels import _native_exp, _triton  # noqa: E402
from geoattn.kernels._gram import GRAM_MAX_SCALE  # noqa: E402

F32, F64 = torch.float32, torch.float64
BLOCK = _triton.BLOCK["cpu"]
EPS32, EPS64 = eps(F32), eps(F64)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def layer(x, A, backend, g=None):
    """y, x_bar, A_bar of the exponential layer on one backend for the incoming gradient g (seeded when None)."""
    x, A = x.clone().requires_grad_(), A.clone().requires_grad_()
    with K.backend(backend):
        y = K.vp_attention(x, A, activation="exp")
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(7), dtype=y.dtype) if g is None else g
    y.backward(g)
    return y.detach(), x.grad, A.grad, g


def assert_matches_reference(x, A, y, gx, gA, g):
    assert_layer_matches_full64(x, A, y, gx, gA, g, "exp")


# -- the generator ---------------------------------------------------------------------------------------------------


def test_the_module_records_its_bindings_claims_and_the_c_templates_constants():
    src = gram_exp_triton.generate_triton_exp_module()
    for fn in gram_exp_triton.FUNCTIONS:
        assert f"def {fn}(" in src
    claims = ", ".join(gram_exp_c._CLAIMS)
    assert src.count(f"verified by: {claims}") == 2
    for spec in gram_exp_c.SPECS.values():
        for name, expr in spec.bindings:
            assert f"from: {name} = {expr}" in src
    lines = src.splitlines()
    assert max(len(line) for line in lines) <= 120 and len(lines) <= 450
    assert "if " not in src.split("@triton.jit", 1)[1]  # no branch on the data: lanes select by tl.where
    assert "static_range" not in src
    # the polynomial is the C template's: its last coefficient printed, the next one not, SMAX and THETA passed
    m = gram_exp_c.DEGREE
    assert repr(1.0 / math.factorial(m)) in src and repr(1.0 / math.factorial(m + 1)) not in src
    assert f"_shift(nrm, {gram_exp_c.SMAX}, {gram_exp_c.THETA}.0)" in src
    assert f"P{gram_exp_c.BLOCKS} = _mm(" in src and f"P{gram_exp_c.BLOCKS + 1} = " not in src


def test_a_retuned_degree_reaches_the_printed_polynomial(monkeypatch):
    # the constants are imported, not copied: a degree retuned in gram_exp_c changes the kernels
    monkeypatch.setattr(gram_exp_triton, "DEGREE", 12)
    src = gram_exp_triton.generate_triton_exp_module()
    assert repr(1.0 / math.factorial(12)) in src and repr(1.0 / math.factorial(13)) not in src


def test_codegen_check_covers_the_exp_module(tmp_path):
    targets = {path: make for path, make in generate._triton_outputs(str(tmp_path))}
    src = gram_exp_triton.generate_triton_exp_module()
    assert targets[str(tmp_path / gram_exp_triton.TARGET)]() == src
    here = generate.triton_target_path("vp_gram_fwd", 1).replace("_triton_vp_gram_fwd_d1.py", gram_exp_triton.TARGET)
    assert generate._diff(here, src) == ""
    path = tmp_path / gram_exp_triton.TARGET
    broken = gram_exp_triton.generate_triton_exp_module(negate_backward=True)
    assert broken != src and "_mm(gY, Yk, R3, C3, D)" in broken and "_mm_t(gY, Yk, C3, D)" in src
    path.write_text(broken)
    assert "_mm(gY, Yk" in generate._diff(str(path), src)


# -- the route -------------------------------------------------------------------------------------------------------


def test_explain_shows_the_route_and_why_it_does_not_serve():
    x, A = torch.randn(3, 9, 8), skew64(8).float()
    why = dict((r.name, w) for r, w in K.explain("vp_attention", x, A, activation="exp").rejected)
    assert "inside backend('triton')" in why["gram-exp/triton"]
    with K.backend("triton"):
        assert K.explain("vp_attention", x, A, activation="exp").route.name == "gram-exp/triton"
        for xs, As, text in ((torch.randn(3, 9, 2), skew64(2).float(), "cover 3 <= d <= 16"),
                             (torch.randn(3, 20, 17), skew64(17).float(), "cover 3 <= d <= 16"),
                             (torch.randn(3, 5, 8), A, "d=8 >= T=5"),
                             (x, torch.stack([A] * 3), "batched weighting")):
            why = dict((r.name, w) for r, w in K.explain("vp_attention", xs, As, activation="exp").rejected)
            assert text in why["gram-exp/triton"]
        with pytest.raises(BackendError, match="float64"):
            K.vp_attention(x.double(), A.double(), activation="exp")


# -- the layer against the C kernels' route and float64 --------------------------------------------------------------


# T = d + 1 (d = 3: DP = 4 with a padded row); more tokens than lanes; a batch with a tail block
@pytest.mark.parametrize("d,T", [(3, 4), (4, 5), (8, 9), (3, BLOCK + 3)])
def test_layer_matches_the_native_route_and_float64(d, T):
    torch.manual_seed(10 * d + T)
    B = BLOCK + 3
    x, A = torch.randn(B, T, d), skew64(d).float()
    y, gx, gA, g = layer(x, A, "triton")
    yn, gxn, gAn, _ = layer(x, A, "native")
    for a, b in ((y, yn), (gx, gxn), (gA, gAn)):  # the same algorithm in float64, rounded once
        assert (a - b).abs().max() <= 4 * T * EPS32 * (1 + b.abs().max())
    assert_matches_reference(x, A, y, gx, gA, g)


def test_d16_matches_float64():
    torch.manual_seed(16)
    x, A = torch.randn(2, 17, 16), skew64(16, 0.1).float()
    assert_matches_reference(x, A, *layer(x, A, "triton"))


def test_rank_deficient_tokens():
    torch.manual_seed(4)
    d, T = 5, 7
    x = torch.randn(4, T, 2) @ torch.randn(4, 2, d)  # rank 2 < d: a singular Gram matrix, exp(-A G) is regular
    A = skew64(d).float()
    assert_matches_reference(x, A, *layer(x, A, "triton"))


def test_kernels_agree_with_the_c_kernels():
    # the same scaling and squaring, the sums in another order: the float64 E, R and gA within k d T eps64 scaled
    # by 2^s (each squaring can double a relative error) of the C kernels' values; y and gx within one float32
    # rounding
    torch.manual_seed(8)
    d, B, T = 5, 3, 9
    x, A, gy = torch.randn(B, T, d), skew64(d), torch.randn(B, T, d)
    y, G, E, R = _triton.gram_exp_forward(x, A, max_scale=GRAM_MAX_SCALE)
    yc, Gc, Ec, Rc = _native_exp.gram_exp_forward(x, A)
    gx, gA = _triton.gram_exp_backward(x, gy, A)
    gxc, gAc = _native_exp.gram_exp_backward(x, gy, A)
    s = math.ceil(math.log2(max(1.0, float((A @ Gc).norm(dim=(-2, -1)).max()))))
    tol = 16 * d * T * EPS64 * 2**s
    assert s >= 1  # the squarings run
    assert (G - Gc).abs().max() <= 4 * T * EPS64 * Gc.abs().max()
    assert (E - Ec).abs().max() <= tol * Ec.abs().max()
    assert R.max() <= tol and (R - Rc).abs().max() <= tol
    assert (gA - gAc).abs().max() <= tol * gAc.abs().max()
    for a, b in ((y, yc), (gx, gxc)):
        assert (a - b).abs().max() <= 2 * EPS32 * b.abs().max()


def test_gradcheck_of_the_kernels_in_float64():
    # the backward kernel is the exact derivative of the forward kernel (ledger vp.gram_exp_native_reverse)
    class Kernels(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, A):
            As = (0.5 * (A - A.mT)).contiguous()
            ctx.save_for_backward(x, As)
            return _triton.gram_exp_forward(x.contiguous(), As, max_scale=GRAM_MAX_SCALE)[0]

        @staticmethod
        def backward(ctx, gy):
            x, As = ctx.saved_tensors
            gx, gA = _triton.gram_exp_backward(x, gy.contiguous(), As)
            S = gA.sum(0)
            return gx, 0.5 * (S - S.mT)

    torch.manual_seed(6)
    x = torch.randn(3, 5, 4, dtype=F64, requires_grad=True)  # a block of 3 live lanes
    A = skew64(4).requires_grad_()
    assert torch.autograd.gradcheck(Kernels.apply, (x, A), fast_mode=True)


def test_a_nan_or_huge_sample_does_not_touch_its_neighbours():
    torch.manual_seed(2)
    d, T = 4, 6
    x, A = torch.randn(BLOCK + 3, T, d), skew64(d).float()
    g = torch.randn(x.shape)
    y, gx, gA, _ = layer(x, A, "triton", g)
    keep = torch.ones(BLOCK + 3, dtype=torch.bool)
    keep[BLOCK], keep[3] = False, False
    xb = x.clone()
    xb[BLOCK, 2, 1] = float("nan")  # in the tail block
    xb[3] *= 1e6  # past GRAM_MAX_SCALE: the QR form for that sample alone
    assert float((xb[3].double() ** 2).sum() * A.double().norm()) > GRAM_MAX_SCALE
    yb, gxb, gAb, _ = layer(xb, A, "triton", g)
    assert torch.isnan(yb[BLOCK]).all()
    assert torch.equal(yb[keep], y[keep]) and torch.equal(gxb[keep], gx[keep])
    assert torch.isfinite(gAb).all()  # the NaN sample reaches no other result, A's gradient included
    n, nb = yb[3].double().norm(dim=-2), xb[3].double().norm(dim=-2)
    assert ((n - nb).abs() / nb).max() <= 8 * T * EPS32  # the huge sample keeps its feature columns' norms
    _, _, _, R = _triton.gram_exp_forward(xb.contiguous(), skew64(d), max_scale=GRAM_MAX_SCALE)
    assert torch.isnan(R[BLOCK]) and torch.isnan(R[3]) and not torch.isnan(R[keep]).any()


def test_negative_control_a_dropped_transpose_in_the_backward_is_caught(tmp_path):
    src = tmp_path / "broken_exp.py"
    src.write_text(gram_exp_triton.generate_triton_exp_module(negate_backward=True))
    broken = _triton.kernels(path=str(src))
    torch.manual_seed(8)
    d, T = 5, 6
    x, A, gy = torch.randn(3, T, d), skew64(d, 1.0), torch.randn(3, T, d)  # s > 0: the squarings run
    x64 = x.double().requires_grad_()
    rx = torch.autograd.grad(K.vp_attention(x64, A, activation="exp", method="full"), x64, gy.double())[0]
    tol = 64 * T * EPS32 * (1 + rx.abs().max())
    bad = _triton.gram_exp_backward(x, gy, A, module=broken)[0]
    good = _triton.gram_exp_backward(x, gy, A)[0]
    assert (bad.double() - rx).abs().max() > tol  # the check the good kernel passes fails on the broken one
    assert (good.double() - rx).abs().max() <= tol


def test_bad_arrays_are_refused():
    with pytest.raises(ValueError, match=r"Expected x as a contiguous tensor \(B, T, d\) with d in 3..16.*Got"):
        _triton.gram_exp_forward(torch.randn(2, 6, 2), skew64(2), max_scale=GRAM_MAX_SCALE)
    with pytest.raises(ValueError, match="Expected A as a contiguous float64.*Got"):
        _triton.gram_exp_forward(torch.randn(2, 6, 5), skew64(5).float(), max_scale=GRAM_MAX_SCALE)
    with pytest.raises(ValueError, match="Expected gy contiguous.*Got"):
        _triton.gram_exp_backward(torch.randn(2, 6, 5), torch.randn(2, 6, 5).double(), skew64(5))


# -- compiled for a GPU without one ----------------------------------------------------------------------------------

_ARRAYS = {"vp_gram_exp_fwd": [("x", "*fp32"), ("A", "*fp64"), ("K", "*fp64"), ("y", "*fp32"), ("Gram", "*fp64"),
                               ("E", "*fp64"), ("R", "*fp64")],
           "vp_gram_exp_bwd": [("x", "*fp32"), ("Gy", "*fp32"), ("A", "*fp64"), ("gx", "*fp32"), ("gA", "*fp64")]}


# the d = 16 backward, the slowest to compile (about 40 s on the shared machine), is marked slow
@pytest.mark.parametrize("d,name", [(8, "vp_gram_exp_fwd"),
                                    pytest.param(16, "vp_gram_exp_bwd", marks=pytest.mark.slow)])
def test_the_exp_kernels_compile_for_sm90(monkeypatch, tmp_path, d, name):
    # Triton's compiler runs without a device; D and DP are constexpr, the d x d loops stay loops (Note [Triton
    # exponential blocks] records the times)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))  # a fresh cache: the time printed is a compile's
    module = _triton.kernels("gram_exp", d)
    dp, block = _triton.lu_shape(d, "cuda")
    signature = {"B": "i32", "T": "i32", **{f"{n}_ptr": t for n, t in _ARRAYS[name]}, "D": "constexpr",
                 "DP": "constexpr", "BLOCK": "constexpr"}
    start = time.perf_counter()
    try:
        compiled = triton.compile(ASTSource(fn=getattr(module, name), signature=signature,
                                            constexprs={"D": d, "DP": dp, "BLOCK": block}),
                                  target=GPUTarget("cuda", 90, 32))
    except (ImportError, FileNotFoundError) as err:  # a triton without its CUDA backend or ptxas
        pytest.skip(f"Triton's CUDA compiler is not available here: {err}")
    print(f"{name} d={d}: compiled for sm_90 in {time.perf_counter() - start:.1f} s")
    ptx = compiled.asm["ptx"]
    assert ".target sm_90" in ptx and "ld.global" in ptx and "st.global" in ptx and "f64" in ptx
