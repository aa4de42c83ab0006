"""A sample with a non-finite entry leaves the gradient of a shared weighting finite, on every route of the VP
layer: its output is NaN and its own (geoattn.kernels._gram._qr_for_failed, _gram.nan_isolated), its kernel gradients
stay out of the sum over the batch, and the weighting's gradient is that of the other samples (up to the sum's
rounding)."""

import contextlib

import pytest
import torch

import geoattn.kernels as K

CASES = [  # (d, T, activation, the route the case is about); float32 and one (d, d) weighting unless named
    (3, 16, "cayley", "gram-closed/native"),
    (8, 16, "cayley", "gram-lu/native"),
    (20, 40, "cayley", "gram-lu-wide/native"),
    (8, 40, "cayley", "gram-lu/eager"),
    (8, 16, "exp", "gram-exp/native"),
    (20, 40, "exp", "gram-exp/eager"),
    (20, 40, "cayley", "gram-solve/eager"),  # the weighting (1, d, d): broadcast over the batch
    (8, 6, "cayley", "full/eager"),
    (8, 6, "exp", "full/eager"),
    (8, 16, "cayley", "lowrank/eager"),  # float64
    (8, 16, "exp", "lowrank/eager"),
    (20, 40, "exp", "gram-exp-wide/native"),
]


def _weight(d, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(d, d, generator=g) / d
    return (w - w.T).float()


@pytest.mark.parametrize("d,T,activation,route", CASES)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("zero_gradient", [True, False])
def test_a_non_finite_sample_leaves_the_shared_gradient_finite(d, T, activation, route, bad, zero_gradient):
    torch.manual_seed(d + T)
    B, k = 5, 2
    dtype = torch.float64 if route == "lowrank/eager" else torch.float32
    x, gy = torch.randn(B, T, d, dtype=dtype), torch.randn(B, T, d, dtype=dtype)
    x[k, 1, 0] = bad
    if zero_gradient:
        gy[k] = 0
    forced = route in ("gram-lu/eager", "gram-exp/eager")  # native kernels serve these shapes unless forced
    A = _weight(d).to(dtype)
    A = (A[None] if route == "gram-solve/eager" else A).requires_grad_()
    with K.backend("eager") if forced else contextlib.nullcontext():
        e = K.explain("vp_attention", x, A, activation=activation)
        if e.route is None or e.route.name != route:
            pytest.skip(f"{route} does not serve here: {e.route.name if e.route else None}")
        y = K.vp_attention(x, A, activation=activation)
        (gA,) = torch.autograd.grad(y, A, gy)
        keep = torch.arange(B) != k
        A2 = A.detach().clone().requires_grad_()
        y2 = K.vp_attention(x[keep], A2, activation=activation)
        (gA2,) = torch.autograd.grad(y2, A2, gy[keep])
    assert bool(y[k].isnan().all()) and torch.equal(y[keep], y2)
    assert bool(gA.isfinite().all())
    tol = 8 * B * torch.finfo(dtype).eps * float(gA2.abs().max())
    assert float((gA - gA2).abs().max()) <= tol



def test_finite_tokens_whose_scale_overflows_keep_the_qr_form():
    # |x|_F^2 overflows in double for finite tokens near 1e152: such a sample is large, not lost (gram-solve/eager)
    torch.manual_seed(3)
    d, T = 20, 40
    x = torch.randn(3, T, d, dtype=torch.float64)
    x[1] *= 5e152
    A = _weight(d).double()[None]
    y = K.vp_attention(x, A, method="gram")
    assert bool(y.isfinite().all())
    assert torch.equal(y[0], K.vp_attention(x[:1], A, method="gram")[0])
