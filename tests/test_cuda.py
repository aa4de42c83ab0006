"""The layers and kernels on a CUDA device, against the CPU in float64 (skipped where no CUDA device is present).

Every test here runs the same call on CUDA and on the CPU and compares; tolerances scale with the dtype's epsilon
and the sizes involved.
"""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from geoattn.nn import (
    LinearSymplecticAttention,
    OrthonormalAttention,
    SymplecticAttention,
    VolumePreservingAttention,
)
from geoattn.testing import assert_volume_preserving

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

F32, F64 = torch.float32, torch.float64


def eps(dtype):
    return torch.finfo(dtype).eps


def tol(dtype, n, k=64):
    return k * n * eps(dtype)


def skew(d, dtype=F64):
    w = torch.randn(d, d, dtype=dtype)
    return w - w.mT


def rel_err(a, b):
    return ((a.double().cpu() - b.double().cpu()).norm() / b.double().cpu().norm().clamp_min(1e-300)).item()


# (T, d, form expected): d < T takes the d x d forms (the Gram closed form for d <= 4 in float32), d >= T the T x T one
SHAPES = [(16, 4, "d < T"), (33, 3, "d < T"), (12, 6, "d < T, d > 4"), (4, 4, "d = T"), (3, 5, "d > T")]


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("T,d,_", SHAPES)
@pytest.mark.parametrize("dtype", [F32, F64])
def test_vp_attention_forward_and_backward_match_cpu(activation, T, d, _, dtype):
    torch.manual_seed(T * 10 + d)
    x = torch.randn(37, T, d, dtype=dtype) / d
    A = skew(d, dtype)
    g = torch.randn_like(x)
    out = {}
    for dev in ("cpu", "cuda"):
        xs = x.to(dev).detach().clone().requires_grad_()
        As = A.to(dev).detach().clone().requires_grad_()
        y = K.vp_attention(xs, As, activation=activation)
        assert y.device.type == dev and y.dtype == dtype
        y.backward(g.to(dev))
        out[dev] = (y.detach(), xs.grad, As.grad)
    n = T * d
    for a, b in zip(out["cuda"], out["cpu"]):
        assert rel_err(a, b) <= tol(dtype, n), rel_err(a, b)


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("T,d", [(16, 4), (3, 5)])
def test_vp_attention_matches_the_float64_full_form(activation, T, d):
    """An independent reference: the T x T form in float64 on the CPU."""
    torch.manual_seed(1)
    x = torch.randn(64, T, d) / d
    A = skew(d, F32)
    ref = K.vp_attention(x.double(), A.double(), activation=activation, method="full")
    got = K.vp_attention(x.cuda(), A.cuda(), activation=activation)
    assert rel_err(got, ref) <= tol(F32, T * d)


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("T,d", [(9, 3), (3, 4)])
def test_vp_attention_gradcheck_on_cuda(activation, T, d):
    torch.manual_seed(2)
    x = (torch.randn(2, T, d, dtype=F64, device="cuda") / d).requires_grad_()
    A = skew(d).cuda().requires_grad_()
    assert torch.autograd.gradcheck(lambda x, A: K.vp_attention(x, A - A.mT, activation=activation), (x, A))


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_vp_sample_does_not_depend_on_its_batch_on_cuda(dtype, activation):
    """A rank-deficient or large neighbour must not change another sample's result (beyond the rounding of the
    batched products, whose CUDA kernels depend on the batch size)."""
    torch.manual_seed(3)
    x = torch.randn(5, 16, 4, dtype=dtype, device="cuda") / 4
    A = skew(4, dtype).cuda()
    alone = K.vp_attention(x[:1], A, activation=activation)
    x2 = x.clone()
    x2[1] = x2[1, :1] * torch.arange(16, dtype=dtype, device="cuda")[:, None]  # rank one
    x2[2] *= 1e4  # past GRAM_MAX_SCALE: the QR form on its own
    x2[3] = 0
    both = K.vp_attention(x2, A, activation=activation)
    assert torch.allclose(both[:1], alone, rtol=0, atol=tol(dtype, 16 * 4))
    assert torch.isfinite(both).all()


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("T", [3, 24])
def test_vp_layer_inverse_and_volume_on_cuda(activation, T):
    torch.manual_seed(4)
    layer = VolumePreservingAttention(4, activation=activation, device="cuda", dtype=F64)
    with torch.no_grad():
        layer.weight.mul_(3)
    x = torch.randn(8, T, 4, dtype=F64, device="cuda") / 2
    y = layer(x)
    assert y.device.type == "cuda"
    assert torch.allclose(layer.inverse(y), x, rtol=0, atol=tol(F64, T * 4))
    assert_volume_preserving(layer, x[0])
    # negative control: the wrong-sign inverse is not the inverse
    wrong = K.vp_attention(y, layer.weight, activation=activation)
    assert (wrong - x).abs().max() > 1e3 * tol(F64, T * 4)


def test_vp_layer_skew_sym_false_on_cuda():
    torch.manual_seed(5)
    layer = VolumePreservingAttention(3, skew_sym=False, device="cpu", dtype=F64)
    x = torch.randn(4, 7, 3, dtype=F64)
    ref = layer(x)
    got = layer.to("cuda")(x.cuda())
    assert rel_err(got, ref) <= tol(F64, 21)


@pytest.mark.parametrize("make,shape", [
    (lambda: OrthonormalAttention(4, dtype=F64), (6, 16, 4)),
    (lambda: LinearSymplecticAttention(8, dtype=F64), (6, 8, 4)),
    (lambda: SymplecticAttention(4, dtype=F64), (6, 8, 4)),
])
def test_other_layers_match_cpu(make, shape):
    torch.manual_seed(6)
    layer = make()
    x = torch.randn(*shape, dtype=F64)
    g = torch.randn(*shape, dtype=F64)
    out = {}
    for dev in ("cpu", "cuda"):
        layer.to(dev).zero_grad()
        xs = x.to(dev).detach().clone().requires_grad_()
        y = layer(xs)
        y.backward(g.to(dev))
        out[dev] = [y.detach(), xs.grad] + [p.grad for p in layer.parameters()]
    n = shape[-2] * shape[-1]
    for a, b in zip(out["cuda"], out["cpu"]):
        assert rel_err(a, b) <= tol(F64, n)


def test_native_kernels_are_not_used_on_cuda(monkeypatch):
    """The CPU kernels never receive CUDA tensors: the torch form serves, and agrees with the kernels' results."""
    from geoattn.kernels import _native

    torch.manual_seed(7)
    x = torch.randn(16, 32, 4)
    A = skew(4, F32)
    cpu = K.vp_attention(x, A)

    def refuse(*args):
        raise AssertionError("a native CPU kernel was called with CUDA tensors")

    monkeypatch.setattr(_native, "gram_forward", refuse)
    monkeypatch.setattr(_native, "gram_backward", refuse)
    xs = x.cuda().requires_grad_()
    gpu = K.vp_attention(xs, A.cuda())
    gpu.sum().backward()
    assert rel_err(gpu, cpu) <= tol(F32, 32 * 4)


def test_half_inputs_on_cuda():
    """Half inputs are computed in float32 and cast back: within one rounding of the result (half an ulp per entry)
    of the float64 layer at the rounded inputs, and within the inputs' rounding (x and A, half an ulp each, through
    a map that keeps row norms) of the float64 layer at the original ones."""
    torch.manual_seed(8)
    x = torch.randn(4, 16, 4) / 4
    A = skew(4, F32)
    ref = K.vp_attention(x.double(), A.double(), method="full")
    for dtype in (torch.float16, torch.bfloat16):
        y = K.vp_attention(x.to("cuda", dtype), A.to("cuda", dtype))
        assert y.dtype == dtype
        xr = x.to(dtype).double()
        assert rel_err(y, K.vp_attention(xr, A.to(dtype).double(), method="full")) <= eps(dtype)
        assert rel_err(y, ref) <= 4 * eps(dtype)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_householder_qr_on_cuda(dtype):
    """The low-rank form's QR off the CPU (Note [batched Householder QR on CUDA]) against LAPACK on the CPU."""
    from geoattn.kernels._householder import householder_qr, thin_qr

    torch.manual_seed(9)
    x = torch.randn(257, 16, 4, dtype=dtype)
    x[1] = x[1, :, :1] * torch.randn(1, 4, dtype=dtype)
    x[2] = 0
    Q, R = thin_qr(x.cuda())
    Qh, Rh = householder_qr(x)
    assert Q.device.type == "cuda"
    tol = 4 * 16 * 4 * eps(dtype)
    assert (Q.mT @ Q - torch.eye(4, dtype=dtype, device="cuda")).abs().max() <= tol
    assert ((Q @ R).cpu() - x).abs().max() <= tol * x.abs().max()
    assert (R.cpu().abs() - torch.linalg.qr(x)[1].abs()).abs().max() <= 16 * tol * x.abs().max()
    assert (R.cpu() - Rh).abs().max() <= 16 * tol * x.abs().max()  # the same reflections on both devices


@pytest.mark.parametrize("dtype", [F32, F64])
def test_exp_closed_form_on_cuda(dtype):
    from geoattn.kernels._exp import exp_skew_closed

    torch.manual_seed(10)
    for k in (2, 3, 4):
        S = torch.randn(64, k, k, dtype=dtype) * 30
        S = S - S.mT
        E = exp_skew_closed(S.cuda())
        assert (E.mT @ E - torch.eye(k, dtype=dtype, device="cuda")).abs().max() <= 8 * k * eps(dtype)
        norm = S.flatten(-2).norm(dim=-1).max().item()  # exp moves by about |S| eps under rounding of S
        assert (E.cpu() - exp_skew_closed(S)).abs().max() <= 64 * k * norm * eps(dtype)
