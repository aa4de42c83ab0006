"""The batched Householder QR (geoattn.kernels._householder) that the low-rank form takes off the CPU."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from geoattn.kernels import _lowrank
from geoattn.kernels._householder import householder_qr, thin_qr

F32, F64 = torch.float32, torch.float64


def eps(dtype):
    return torch.finfo(dtype).eps


def batch(T, d, dtype):
    torch.manual_seed(T * 7 + d)
    x = torch.randn(9, T, d, dtype=dtype)
    x[1] = x[1, :, :1] * torch.randn(1, d, dtype=dtype)  # rank one
    x[2] = 0
    x[3, :, d // 2] = 0  # a zero column
    x[4] *= 1e6
    x[5] *= 1e-6
    x[6, 1:] = 0  # only the first token
    big, tiny = (1e20, 1e-25) if dtype == F32 else (1e200, 1e-200)
    x[7] *= big  # near overflow: the norms are taken after scaling by a power of two
    x[8] *= tiny  # near underflow
    return x


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("T,d", [(16, 4), (4, 4), (33, 3), (5, 1), (12, 6), (2, 2)])
def test_factors_reproduce_x_with_orthonormal_q(T, d, dtype):
    x = batch(T, d, dtype)
    Q, R = householder_qr(x)
    assert Q.shape == x.shape and R.shape == (9, d, d)
    assert torch.equal(R, R.triu())
    xd = x.double()  # the reconstruction in float64: no overflow at 1e20, no rounding of its own
    scale = xd.abs().flatten(-2).amax(dim=-1).clamp_min(torch.finfo(F64).tiny)[:, None, None]
    tol = 4 * T * d * eps(dtype)
    assert ((Q.double() @ R.double() - xd).abs() / scale).max() <= tol
    assert (Q.mT @ Q - torch.eye(d, dtype=dtype)).abs().max() <= tol  # also for the rank-deficient samples


@pytest.mark.parametrize("dtype", [F32, F64])
def test_r_agrees_with_lapack_up_to_signs(dtype):
    x = batch(16, 4, dtype)
    R = householder_qr(x)[1]
    Rl = torch.linalg.qr(x)[1]
    scale = x.abs().flatten(-2).amax(dim=-1)[:, None, None].clamp_min(torch.finfo(dtype).tiny)
    assert ((R.abs() - Rl.abs()).abs() / scale).max() <= 64 * 16 * eps(dtype)


def test_signs_follow_lapack():
    """The docstring's promise: not only |R|, the signs too, on generic samples."""
    torch.manual_seed(11)
    x = torch.randn(64, 16, 4, dtype=F64)
    Q, R = householder_qr(x)
    Ql, Rl = torch.linalg.qr(x)
    assert (R - Rl).abs().max() <= 64 * 16 * eps(F64) * x.abs().max()
    assert (Q - Ql).abs().max() <= 64 * 16 * eps(F64)


def test_subnormal_samples_factor_accurately():
    """A float32 sample at 1e-40 is scaled by 2**132, a power of two float32 cannot hold."""
    torch.manual_seed(12)
    x = torch.randn(2, 8, 3) * 1e-40
    Q, R = householder_qr(x)
    assert torch.isfinite(Q).all() and torch.isfinite(R).all()
    assert (Q.mT @ Q - torch.eye(3)).abs().max() <= 4 * 8 * 3 * eps(F32)
    spacing = torch.finfo(F32).smallest_normal * eps(F32)  # the spacing of subnormals: R itself is rounded to it
    err = (Q.double() @ R.double() - x.double()).abs().max()
    assert err <= 4 * 8 * 3 * (eps(F32) * x.abs().max() + spacing)


def test_a_sample_does_not_depend_on_its_batch():
    x = batch(16, 4, F64)
    Q, R = householder_qr(x)
    for i in range(x.shape[0]):
        q, r = householder_qr(x[i : i + 1])
        assert torch.equal(q[0], Q[i]) and torch.equal(r[0], R[i])


def test_shapes_and_errors():
    Q, R = householder_qr(torch.randn(2, 3, 8, 3))
    assert Q.shape == (2, 3, 8, 3) and R.shape == (2, 3, 3, 3)
    x = torch.randn(3, 2, 4, dtype=F64)  # T < d: Q is T x T, R is T x d, as torch.linalg.qr's reduced form
    Q, R = householder_qr(x)
    Ql, Rl = torch.linalg.qr(x)
    assert Q.shape == Ql.shape and R.shape == Rl.shape
    assert (Q @ R - x).abs().max() <= 16 * eps(F64) * x.abs().max()
    assert (R.abs() - Rl.abs()).abs().max() <= 16 * eps(F64) * x.abs().max()


def test_thin_qr_dispatch():
    x = torch.randn(3, 8, 2)
    assert all(torch.equal(a, b) for a, b in zip(thin_qr(x), torch.linalg.qr(x)))  # LAPACK on CPU
    Q, R = thin_qr(x.to("meta"))  # elsewhere the batched reflections (shapes only on meta)
    assert Q.shape == x.shape and R.shape == (3, 2, 2)


@pytest.mark.parametrize("activation", ["cayley", "exp"])
def test_lowrank_layer_with_the_batched_qr_matches_lapack(activation, monkeypatch):
    """The low-rank form with the reflections (the CUDA path), forward and backward, against the LAPACK path."""
    torch.manual_seed(3)
    x = torch.randn(6, 16, 4, dtype=F64) / 2
    A = torch.randn(4, 4, dtype=F64)
    A = A - A.mT
    g = torch.randn_like(x)
    out = []
    for qr in (torch.linalg.qr, householder_qr):
        monkeypatch.setattr(_lowrank, "thin_qr", qr)
        xs, As = x.clone().requires_grad_(), A.clone().requires_grad_()
        y = K.vp_attention(xs, As, activation=activation, method="lowrank")
        y.backward(g)
        out.append((y.detach(), xs.grad, As.grad))
    tol = 64 * 16 * 4 * eps(F64)
    for a, b in zip(*out):
        assert ((a - b).abs().max() / b.abs().max()) <= tol
