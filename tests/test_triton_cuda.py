"""The Triton kernels on a CUDA device (skipped where there is none): the cases of tests/test_triton.py, compiled
for the GPU and taken by the dispatch table without forcing, against the eager form and the float64 T x T form on
the CPU."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

import geoattn.kernels as K  # noqa: E402
from conftest import eps, full64, skew64  # noqa: E402
from geoattn.kernels import _triton  # noqa: E402

F32, F16, BF16, F64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
BLOCK = _triton.BLOCK["cuda"]
CUDA = torch.device("cuda")


@pytest.fixture(autouse=True)
def compiled(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")


def layer(x, A, backend=None):
    x, A = x.clone().requires_grad_(), A.clone().requires_grad_()
    if backend is None:
        y = K.vp_attention(x, A)
    else:
        with K.backend(backend):
            y = K.vp_attention(x, A, method="gram")
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(7), dtype=y.dtype).to(y.device)
    y.backward(g)
    return y.detach(), x.grad, A.grad, g


@pytest.mark.parametrize("d", [3, 4])
@pytest.mark.parametrize("T", [1, 7, 33])
def test_layer_takes_the_triton_route_and_matches_float64(d, T):
    torch.manual_seed(10 * d + T)
    B = BLOCK + 3  # a tail block
    x, A = torch.randn(B, T, d), skew64(d).float()
    assert K.explain("vp_attention", x.to(CUDA), A.to(CUDA)).route.name == "gram-closed/triton"
    y, gx, gA, g = layer(x.to(CUDA), A.to(CUDA))
    ye, gxe, gAe, _ = layer(x.to(CUDA), A.to(CUDA), "eager")
    for a, b in ((y, ye), (gx, gxe), (gA, gAe)):
        assert (a - b).abs().max() <= 4 * T * eps(F32) * (1 + b.abs().max())
    x64, A64 = x.double().requires_grad_(), A.double().requires_grad_()
    y64 = full64(x64, 0.5 * (A64 - A64.mT))
    rx, rA = torch.autograd.grad(y64, (x64, A64), g.double().cpu())
    assert ((y.double().cpu() - y64).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 8 * T * eps(F32)
    tol = 64 * T * eps(F32)
    assert (gx.double().cpu() - rx).abs().max() <= tol * (1 + rx.abs().max())
    assert (gA.double().cpu() - rA).abs().max() <= tol * B * (1 + rA.abs().max())


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_half_tokens_are_loaded_and_computed_in_float64(dtype):
    torch.manual_seed(1)
    x, A = torch.randn(BLOCK + 5, 9, 3).to(dtype), skew64(3)
    y, _, _, _ = _triton.gram_forward(x.to(CUDA), A.to(CUDA))
    assert y.dtype == dtype
    ref = full64(x.double(), A)
    assert ((y.double().cpu() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 2 * eps(dtype)


def test_a_nan_sample_does_not_touch_its_neighbours():
    torch.manual_seed(2)
    x, A = torch.randn(BLOCK + 3, 5, 4), skew64(4).float()
    x[BLOCK, 2, 1] = float("nan")
    keep = [i for i in range(BLOCK + 3) if i != BLOCK]
    y, gx, _, _ = layer(x.to(CUDA), A.to(CUDA))
    yc, _, _, _ = layer(x[keep].to(CUDA), A.to(CUDA))
    assert torch.isnan(y[BLOCK]).all() and torch.isnan(gx[BLOCK]).all()
    assert torch.equal(y[keep], yc) and not torch.isnan(gx[keep]).any()


@pytest.mark.parametrize("T", [1, 2, 3])
def test_cayley_takes_the_triton_route_and_matches_float64(T):
    torch.manual_seed(T)
    w = torch.randn(BLOCK + 3, T, T)
    c = (w - w.mT).to(CUDA).requires_grad_()
    assert K.explain("cayley", c).route.name == "closed-small/triton"
    g = torch.randn(c.shape, device=CUDA)
    lam = K.cayley(c)
    lam.backward(g)
    c64 = c.detach().double().cpu().requires_grad_()
    eye = torch.eye(T, dtype=F64)
    ref = (eye - c64) @ torch.linalg.inv(eye + c64)
    (rc,) = torch.autograd.grad(ref, c64, g.double().cpu())
    assert (lam.double().cpu() - ref).abs().max() <= 16 * T * eps(F32)
    assert (c.grad.double().cpu() - rc).abs().max() <= 64 * T * eps(F32) * (1 + rc.abs().max())


# -- exp_skew: the closed-small route (tests/test_triton_exp.py in the interpreter) ------------------------------------


@pytest.mark.parametrize("T", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0, 1e3])
def test_exp_skew_takes_the_triton_route_and_matches_float64(T, scale):
    torch.manual_seed(T)
    w = torch.randn(BLOCK + 3, T, T, dtype=F64) * scale
    s = (w - w.mT).float().to(CUDA).requires_grad_()
    assert K.explain("exp_skew", s).route.name == "closed-small/triton"
    g = torch.randn(s.shape, device=CUDA)
    e = K.exp_skew(s)
    e.backward(g)
    s64 = s.detach().double().cpu().requires_grad_()
    ref = torch.linalg.matrix_exp(s64)
    (rs,) = torch.autograd.grad(ref, s64, g.double().cpu())
    rs = (rs - rs.mT) / 2  # the printed backward returns the skew projection (Note [exp_skew Triton kernel])
    assert (e.detach().double().cpu() - ref).abs().max() <= T * eps(F32)
    eye = torch.eye(T, dtype=F64)
    assert (e.detach().double().cpu().mT @ e.detach().double().cpu() - eye).abs().max() <= 2 * T * eps(F32)
    tol = 64 * T * eps(F32) * max(1.0, scale) ** 0.5 * float(g.abs().max())
    assert (s.grad.double().cpu() - rs).abs().max() <= tol * max(1.0, 1e-2 * scale)


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
def test_exp_skew_a_nan_or_huge_sample_does_not_touch_its_neighbours(bad):
    torch.manual_seed(3)
    w = torch.randn(BLOCK + 3, 4, 4)
    s = (w - w.mT).to(CUDA)
    s[BLOCK, 0, 2], s[BLOCK, 2, 0] = bad, -bad
    keep = [i for i in range(BLOCK + 3) if i != BLOCK]
    e, ec = K.exp_skew(s), K.exp_skew(s[keep])
    assert torch.equal(e[keep], ec)
    assert torch.isnan(e[BLOCK]).all() if bad != bad else not torch.isnan(e[BLOCK]).any()


@pytest.mark.parametrize("T", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", [0.0, 1e-3, 0.5, 1.0, 30.0])
def test_exp_skew_vjp_kernel_float64_matches_matrix_exp(T, scale):
    from geoattn.kernels import _exp_triton

    torch.manual_seed(T)
    w = torch.randn(BLOCK + 3, T, T, dtype=F64) * scale
    s, g = (w - w.mT), torch.randn(BLOCK + 3, T, T, dtype=F64)
    got = _exp_triton.exp_small_vjp(s.to(CUDA), g.to(CUDA)).cpu()
    s64 = s.clone().requires_grad_()
    (rs,) = torch.autograd.grad(torch.linalg.matrix_exp(s64), s64, g)
    scale_g = g.abs().amax(dim=(-2, -1), keepdim=True).clamp_min(1.0)
    assert (((got - (rs - rs.mT) / 2) / scale_g).abs().max() <= 64 * T * eps(F64) * max(1.0, scale))


# -- symplectic attention: the flash route (tests/test_triton_symattn.py in the interpreter) -------------------------


def _sym_inputs(B, T, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(B, T, n, generator=g)
    W = torch.randn(n, n, generator=g) / n ** 0.5
    return z, 0.5 * (W + W.T), torch.randn(B, T, n, generator=g)


def _sym_update(z, A, V, act="matrix_softmax", **kw):
    from geoattn.kernels import _symattn_flash as FL

    z, A = z.to(CUDA).requires_grad_(), A.to(CUDA).requires_grad_()
    U = FL.symattn_flash(z, A, act, **kw) if kw else K.symattn_update(z, A, act)
    return [t.detach().cpu() for t in (U, *torch.autograd.grad(U, (z, A), V.to(CUDA)))]


def _sym_reference(z, A, V, act):
    z64, A64 = z.double().requires_grad_(), A.double().requires_grad_()
    U = getattr(K._generated, f"symattn_update_{act}")(z64, A64)[0]
    return (U.detach(), *torch.autograd.grad(U, (z64, A64), V.double()))


def _sym_errors(got, want):
    return [((h.double() - w).abs().max() / (1 + w.abs().max())).item() for h, w in zip(got, want)]


@pytest.mark.parametrize("n", [2, 4, 8, 16])
@pytest.mark.parametrize("T", [1, 7, 65, 130])  # one token, odd, a tail block, three blocks of 64
@pytest.mark.parametrize("act", ["matrix_softmax", "matrix_one_softmax"])
def test_symattn_takes_the_flash_route_and_matches_float64(act, T, n):
    z, A, V = _sym_inputs(5, T, n, seed=10 * T + n)
    assert K.explain("symattn_update", z.to(CUDA), A.to(CUDA), act).route.name == "flash/triton"
    errors = _sym_errors(_sym_update(z, A, V, act), _sym_reference(z, A, V, act))
    tol = 32 * T * n * eps(F32)
    assert errors[0] <= tol and max(errors[1:]) <= 2 * tol, errors


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_symattn_half_tokens(dtype):
    z, A, V = _sym_inputs(3, 70, 8, seed=1)
    zh, Ah = z.to(dtype), A.to(dtype)
    U = K.symattn_update(zh.to(CUDA), Ah.to(CUDA))
    ref = _sym_reference(zh.float(), Ah.float(), V, "matrix_softmax")[0]
    assert U.dtype == dtype and _sym_errors([U.cpu()], [ref])[0] <= 4 * eps(dtype)


def test_symattn_a_nan_or_huge_sample_does_not_touch_its_neighbours():
    z, A, V = _sym_inputs(7, 70, 4, seed=4)
    z[2, 3, 1] = float("nan")
    z[5] *= 1e6
    keep = [0, 1, 3, 4, 6]
    U, gz, _ = _sym_update(z, A, V)
    Uc, gzc, _ = _sym_update(z[keep], A, V[keep])
    assert torch.isnan(U[2]).all() and torch.isnan(gz[2]).all()
    assert torch.equal(U[keep], Uc) and torch.equal(gz[keep], gzc)


def test_symattn_negative_control_the_backward_without_the_lse_gradient_is_caught():
    T, n = 70, 4
    z, A, V = _sym_inputs(3, T, n, seed=5)
    ref = _sym_reference(z, A, V, "matrix_softmax")
    good, bad = _sym_update(z, A, V), _sym_update(z, A, V, drop_lse=True)
    assert max(_sym_errors(good, ref)[1:]) <= 2 * 32 * T * n * eps(F32)
    assert min(_sym_errors(bad, ref)[1:]) > 2 * 32 * T * n * eps(F32)


def test_symattn_layer_benchmark_takes_the_flash_route():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import layers

    x = torch.randn(64, 16, 8, device=CUDA)
    assert layers.route_of(layers.LAYERS["SymplecticAttention"](8, 16, CUDA), x) == "flash/triton"


# -- the Gram form's LU kernels, one module for 5 <= d <= 16 (tests/test_triton_lu.py) --------------------------------


@pytest.mark.parametrize("d,T", [(5, 6), (8, 9), (8, 33), (12, 13), (16, 17)])  # T = d + 1, and a longer sequence
def test_lu_layer_takes_the_triton_route_and_matches_float64(d, T):
    torch.manual_seed(10 * d + T)
    B = BLOCK + 3  # a tail block
    x, A = torch.randn(B, T, d), skew64(d, 0.1).float()
    assert K.explain("vp_attention", x.to(CUDA), A.to(CUDA)).route.name == "gram-lu/triton"
    y, gx, gA, g = layer(x.to(CUDA), A.to(CUDA))
    ye, gxe, gAe, _ = layer(x.to(CUDA), A.to(CUDA), "eager")
    for a, b in ((y, ye), (gx, gxe), (gA, gAe)):
        assert (a - b).abs().max() <= 4 * T * eps(F32) * (1 + b.abs().max())
    x64, A64 = x.double().requires_grad_(), A.double().requires_grad_()
    y64 = full64(x64, 0.5 * (A64 - A64.mT))
    rx, rA = torch.autograd.grad(y64, (x64, A64), g.double().cpu())
    assert ((y.double().cpu() - y64).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 8 * T * eps(F32)
    tol = 64 * T * eps(F32)
    assert (gx.double().cpu() - rx).abs().max() <= tol * (1 + rx.abs().max())
    assert (gA.double().cpu() - rA).abs().max() <= tol * B * (1 + rA.abs().max())


def test_lu_rank_deficient_tokens_match_float64():
    torch.manual_seed(4)
    d, T = 8, 9
    x = torch.randn(BLOCK + 3, T, 2) @ torch.randn(BLOCK + 3, 2, d)  # rank 2 < d
    A = skew64(d).float()
    y, _, _, _ = layer(x.to(CUDA), A.to(CUDA))
    ref = full64(x.double(), A)
    assert ((y.double().cpu() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 8 * T * eps(F32)


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_lu_half_tokens_are_computed_in_float64(dtype):
    torch.manual_seed(1)
    x, A = torch.randn(BLOCK + 5, 9, 5).to(dtype), skew64(5)
    y, _, _, _ = _triton.gram_lu_forward(x.to(CUDA), A.to(CUDA))
    assert y.dtype == dtype
    ref = full64(x.double(), A)
    assert ((y.double().cpu() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 2 * eps(dtype)


def test_lu_a_nan_sample_does_not_touch_its_neighbours():
    torch.manual_seed(2)
    x, A = torch.randn(BLOCK + 3, 9, 8), skew64(8).float()
    x[BLOCK, 2, 1] = float("nan")
    keep = [i for i in range(BLOCK + 3) if i != BLOCK]
    y, gx, _, _ = layer(x.to(CUDA), A.to(CUDA))
    yc, _, _, _ = layer(x[keep].to(CUDA), A.to(CUDA))
    assert torch.isnan(y[BLOCK]).all() and torch.isnan(gx[BLOCK]).all()
    assert torch.equal(y[keep], yc) and not torch.isnan(gx[keep]).any()


def test_lu_negative_control_a_wrong_sign_in_the_backward_is_caught(tmp_path):
    from geoattn.codegen import gram_lu_triton

    src = tmp_path / "broken_lu.py"
    src.write_text(gram_lu_triton.generate_triton_lu_module(negate_backward=True))
    broken = _triton.kernels(path=str(src))
    torch.manual_seed(8)
    T = 6
    x, A, gy = torch.randn(BLOCK + 3, T, 5), skew64(5), torch.randn(BLOCK + 3, T, 5)
    xc, Ac, gyc = x.to(CUDA), A.to(CUDA), gy.to(CUDA)
    _, _, N, _ = _triton.gram_lu_forward(xc, Ac)
    x64 = x.double().requires_grad_()
    rx = torch.autograd.grad(full64(x64, A), x64, gy.double())[0]
    tol = 64 * T * eps(F32) * (1 + rx.abs().max())
    assert (_triton.gram_lu_backward(xc, gyc, N, Ac, module=broken)[0].double().cpu() - rx).abs().max() > tol
    assert (_triton.gram_lu_backward(xc, gyc, N, Ac)[0].double().cpu() - rx).abs().max() <= tol


# -- the exponential's Gram kernels, one module for 3 <= d <= 16 (tests/test_triton_gram_exp.py) ---------------------


def exp_layer(x, A):
    x, A = x.clone().requires_grad_(), A.clone().requires_grad_()
    y = K.vp_attention(x, A, activation="exp")
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(7), dtype=y.dtype).to(y.device)
    y.backward(g)
    return y.detach(), x.grad, A.grad, g


@pytest.mark.parametrize("d,T", [(3, 4), (4, 5), (8, 9), (8, 33), (16, 17)])  # T = d + 1, and a longer sequence
def test_exp_layer_takes_the_triton_route_and_matches_float64(d, T):
    torch.manual_seed(10 * d + T)
    B = BLOCK + 3  # a tail block
    x, A = torch.randn(B, T, d), skew64(d, 0.1).float()
    assert K.explain("vp_attention", x.to(CUDA), A.to(CUDA), activation="exp").route.name == "gram-exp/triton"
    y, gx, gA, g = exp_layer(x.to(CUDA), A.to(CUDA))
    x64, A64 = x.double().requires_grad_(), A.double().requires_grad_()
    y64 = K.vp_attention(x64, 0.5 * (A64 - A64.mT), activation="exp", method="full")
    rx, rA = torch.autograd.grad(y64, (x64, A64), g.double().cpu())
    assert ((y.double().cpu() - y64).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 8 * T * eps(F32)
    tol = 64 * T * eps(F32)
    assert (gx.double().cpu() - rx).abs().max() <= tol * (1 + rx.abs().max())
    assert (gA.double().cpu() - rA).abs().max() <= tol * B * (1 + rA.abs().max())


def test_exp_rank_deficient_tokens_match_float64():
    torch.manual_seed(4)
    d, T = 8, 9
    x = torch.randn(BLOCK + 3, T, 2) @ torch.randn(BLOCK + 3, 2, d)  # rank 2 < d
    A = skew64(d).float()
    y, _, _, _ = exp_layer(x.to(CUDA), A.to(CUDA))
    ref = K.vp_attention(x.double(), A.double(), activation="exp", method="full")
    assert ((y.double().cpu() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 8 * T * eps(F32)


def test_exp_a_nan_or_huge_sample_does_not_touch_its_neighbours():
    torch.manual_seed(2)
    x, A = torch.randn(BLOCK + 3, 9, 8), skew64(8).float()
    y, gx, _, _ = exp_layer(x.to(CUDA), A.to(CUDA))
    xb = x.clone()
    xb[BLOCK, 2, 1] = float("nan")
    xb[3] *= 1e6
    keep = [i for i in range(BLOCK + 3) if i not in (3, BLOCK)]
    yb, gxb, gAb, _ = exp_layer(xb.to(CUDA), A.to(CUDA))
    assert torch.isnan(yb[BLOCK]).all() and torch.isfinite(gAb).all()
    assert torch.equal(yb[keep], y[keep]) and torch.equal(gxb[keep], gx[keep])


def test_exp_negative_control_a_dropped_transpose_is_caught(tmp_path):
    from geoattn.codegen import gram_exp_triton

    src = tmp_path / "broken_exp.py"
    src.write_text(gram_exp_triton.generate_triton_exp_module(negate_backward=True))
    broken = _triton.kernels(path=str(src))
    torch.manual_seed(8)
    T = 6
    x, A, gy = torch.randn(BLOCK + 3, T, 5), skew64(5, 1.0), torch.randn(BLOCK + 3, T, 5)
    xc, Ac, gyc = x.to(CUDA), A.to(CUDA), gy.to(CUDA)
    x64 = x.double().requires_grad_()
    rx = torch.autograd.grad(K.vp_attention(x64, A, activation="exp", method="full"), x64, gy.double())[0]
    tol = 64 * T * eps(F32) * (1 + rx.abs().max())
    assert (_triton.gram_exp_backward(xc, gyc, Ac, module=broken)[0].double().cpu() - rx).abs().max() > tol
    assert (_triton.gram_exp_backward(xc, gyc, Ac)[0].double().cpu() - rx).abs().max() <= tol
