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
