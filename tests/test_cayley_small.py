"""The solve-free Cayley transform of small skew matrices (Note [Cayley of small skew matrices])."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from geoattn.kernels import _generated as gen
from geoattn.kernels._lowrank import vp_full, vp_lowrank
from geoattn.symbolic.claims.kernels import skew_small_identity
from geoattn.symbolic.strategies import search_counterexample

F64 = torch.float64


def skew(*shape, scale=1.0, dtype=F64):
    a = torch.randn(*shape, dtype=dtype) * scale
    return (a - a.mT) / 2


def solve_ref(c):
    eye = torch.eye(c.shape[-1], dtype=torch.float64)
    c = c.double()
    return torch.linalg.solve(eye + c, eye - c)


@pytest.mark.parametrize("T", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_closed_form_matches_the_solve(T, dtype):
    torch.manual_seed(T)
    c = skew(512, T, T, dtype=dtype)
    got = K.cayley(c)
    assert got.dtype == dtype
    assert (got.double() - solve_ref(c)).abs().max() <= 16 * T * torch.finfo(dtype).eps


@pytest.mark.parametrize("scale", [1e2, 1e4])
def test_closed_form_stays_orthogonal_at_large_norms(scale):
    torch.manual_seed(0)
    c = skew(256, 3, 3, scale=scale, dtype=torch.float32)
    lam = gen.cayley_skew_small(c)
    err = (lam.mT @ lam - torch.eye(3)).abs().max()
    assert err <= 16 * 3 * torch.finfo(torch.float32).eps


def test_mixed_batch_each_sample_as_if_alone():
    """Skew samples take the closed form, the others the solve; no sample depends on the rest of the batch."""
    torch.manual_seed(1)
    c = skew(6, 3, 3)
    c[2] += torch.randn(3, 3, dtype=F64)  # not skew: solved
    batch = K.cayley(c)
    for i in range(6):
        alone = K.cayley(c[i : i + 1])[0]
        assert torch.equal(batch[i], alone)
    assert (batch.double() - solve_ref(c)).abs().max() <= 64 * 3 * torch.finfo(F64).eps


def test_gradients_are_those_of_the_cayley_transform():
    torch.manual_seed(2)
    c = skew(3, 3, 3).requires_grad_()
    assert torch.autograd.gradcheck(K.cayley, (c,))
    g = torch.randn(3, 3, 3, dtype=F64)
    (mine,) = torch.autograd.grad(K.cayley(c), c, g)
    ref_c = c.detach().clone().requires_grad_()
    (ref,) = torch.autograd.grad(solve_ref(ref_c), ref_c, g)
    assert (mine - ref).abs().max() <= 64 * 9 * torch.finfo(F64).eps * (1 + ref.abs().max())


@pytest.mark.parametrize("activation", ["cayley"])
def test_lowrank_path_with_three_features(activation):
    torch.manual_seed(3)
    x = torch.randn(4, 9, 3, dtype=F64, requires_grad=True)
    w = torch.randn(3, 3, dtype=F64)
    A = (w - w.T).requires_grad_()
    y_low = vp_lowrank(x, A, activation)
    y_full = vp_full(x, A, activation)
    assert (y_low - y_full).abs().max() <= 64 * 9 * torch.finfo(F64).eps
    g = torch.randn_like(y_low)
    low = torch.autograd.grad(y_low, (x, A), g)
    full = torch.autograd.grad(y_full, (x, A), g)
    for a, b in zip(low, full):
        assert (a - b).abs().max() <= 256 * 9 * torch.finfo(F64).eps * (1 + b.abs().max())


def test_negative_control_the_form_is_false_at_T4():
    """The verifier refutes the closed form where the claim does not cover it (C^3 = -aC fails at T = 4)."""
    assert search_counterexample(skew_small_identity(), [{"T": 4}], seed=0, points=2) is not None
    c = skew(8, 4, 4)
    assert (gen.cayley_skew_small(c) - solve_ref(c)).abs().max() > 1e-3


def test_second_derivatives_agree_with_the_solve_in_every_direction():
    """The backward is the Cayley VJP from the output, differentiable again: gradgradcheck passes and the
    Hessian-vector product equals the solve's, also in non-skew directions, whatever the rest of the batch."""
    torch.manual_seed(4)
    c = skew(2, 3, 3).requires_grad_()
    assert torch.autograd.gradgradcheck(K.cayley, (c,))
    v = torch.randn(2, 3, 3, dtype=F64)  # a general direction
    g = torch.randn(2, 3, 3, dtype=F64)

    def hvp(fn, x):
        x = x.detach().clone().requires_grad_()
        (gx,) = torch.autograd.grad(fn(x), x, g, create_graph=True)
        return torch.autograd.grad(gx, x, v)[0]

    ref = hvp(solve_ref, c)
    assert (hvp(K.cayley, c) - ref).abs().max() <= 256 * 9 * torch.finfo(F64).eps * (1 + ref.abs().max())
    mixed = torch.cat([c.detach(), torch.randn(1, 3, 3, dtype=F64)])  # a non-skew sample: the mixed route
    g, v = torch.cat([g, torch.randn(1, 3, 3, dtype=F64)]), torch.cat([v, torch.randn(1, 3, 3, dtype=F64)])
    assert (hvp(K.cayley, mixed)[:2] - ref).abs().max() <= 256 * 9 * torch.finfo(F64).eps * (1 + ref.abs().max())


@pytest.mark.parametrize("dtype,scales", [(torch.float32, [1e18, 1.3e19, 1.5e19, 1.8e19, 1e20]),
                                          (F64, [1e153, 4e153, 6e153, 1e160])])
def test_entries_near_overflow_take_the_eigendecomposition(dtype, scales):
    """Where C^2 or Tr(C^2) would overflow the sample is routed per sample; the value is checked against the
    exact 2 x 2 Cayley transform ((1 - x^2) I - 2 C)/(1 + x^2), written with 1/x so that it does not overflow."""
    for x in scales:
        c = torch.zeros(3, 2, 2, dtype=dtype)
        c[:, 0, 1], c[:, 1, 0] = 1.0, -1.0
        c[1] *= x
        out = K.cayley(c)
        u = 1.0 / x
        ref = torch.tensor([[(u * u - 1) / (u * u + 1), -2 * u / (u * u + 1)],
                            [2 * u / (u * u + 1), (u * u - 1) / (u * u + 1)]], dtype=F64)
        assert (out[1].double() - ref).abs().max() <= 16 * torch.finfo(dtype).eps, x
        assert torch.equal(out[0], K.cayley(c[:1])[0])  # the others unaffected
    c = skew(4, 3, 3, dtype=dtype) * scales[-1]
    out = K.cayley(c)
    assert (out.mT @ out - torch.eye(3, dtype=dtype)).abs().max() <= 64 * 3 * torch.finfo(dtype).eps
