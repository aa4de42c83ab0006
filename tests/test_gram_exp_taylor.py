"""The batched Taylor exponential of the eager exponential Gram route (geoattn.kernels._taylor_exp; ledger
vp.gram_exp_native_truncation, vp.gram_exp_native_reverse) at the widths above the native kernels': forward and
gradients against the float64 T x T form, gradcheck, batch independence, the per-sample shifts, the route, and a
negative control (the transpose dropped from the squarings' adjoint)."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from geoattn.codegen import gram_exp_c
from geoattn.kernels import _gram_exp, _native_exp_wide, _taylor_exp
from geoattn.kernels._taylor_exp import taylor_exp, taylor_exp_adjoint
from conftest import eps

F32, F64 = torch.float32, torch.float64


@pytest.fixture(autouse=True)
def _eager_stage(monkeypatch):
    """This module tests the batched torch form: the C stage of the same algorithm (tests/test_native_exp_wide.py)
    is set aside."""
    monkeypatch.setattr(_native_exp_wide, "exp_wide_status", lambda d: (False, "set aside by the test"))


def layer_weight(d, dtype=F32, batch=()):
    """A skew weighting drawn like VolumePreservingAttention's default (entries N(0, 1/d^2), minus the transpose)."""
    w = torch.randn(*batch, d, d, dtype=dtype) / d
    return w - w.mT


def tolerance(dtype, T, d, k=8.0):
    """k * n * eps(dtype) with n = T + d (each entry of y and of the gradients sums over T and d terms)."""
    return k * (T + d) * eps(dtype)


def errors(x, A, gy, fn=_gram_exp.vp_gram_exp):
    """y, gx, gA of ``fn`` against the float64 T x T form: each largest error relative to the reference's largest."""
    ref_x, ref_A = x.detach().double().requires_grad_(), A.detach().double().requires_grad_()
    ref = K.vp_attention(ref_x, ref_A, activation="exp", method="full")
    ref = (ref.detach(), *torch.autograd.grad(ref, (ref_x, ref_A), gy.double()))
    xs, As = x.detach().clone().requires_grad_(), A.detach().clone().requires_grad_()
    y = fn(xs, As)
    got = (y.detach(), *torch.autograd.grad(y, (xs, As), gy))
    return [((g.double() - r).abs().max() / r.abs().max().clamp_min(1e-300)).item() for g, r in zip(got, ref)]


def test_constants_are_the_native_kernels():
    # the same algorithm as geoattn.codegen.gram_exp_c, so that its ledger claims cover this form
    assert (_taylor_exp.THETA, _taylor_exp.DEGREE, _taylor_exp.BLOCKS, _taylor_exp.SMAX) == (
        gram_exp_c.THETA, gram_exp_c.DEGREE, gram_exp_c.BLOCKS, gram_exp_c.SMAX)


@pytest.mark.parametrize("d", [17, 20, 32])
@pytest.mark.parametrize("T_of", ["d+1", 40, 70])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0])
def test_matches_full_form_float32(d, T_of, scale):
    T = d + 1 if T_of == "d+1" else T_of
    if T <= d:
        pytest.skip(f"T={T} <= d={d}")
    torch.manual_seed(100 * d + T + int(10 * scale))
    x, A, gy = torch.randn(3, T, d) * scale, layer_weight(d), torch.randn(3, T, d)
    assert K.explain("vp_attention", x, A, activation="exp").route.name == "gram-exp/eager"
    errs = errors(x, A, gy)
    assert max(errs) <= tolerance(F32, T, d), f"Expected errors within {tolerance(F32, T, d):.2e}. Got {errs}."


@pytest.mark.parametrize("d,T", [(17, 40), (32, 40)])
def test_batched_weighting_and_rank_deficient_x(d, T):
    torch.manual_seed(d + T)
    x = torch.randn(3, T, d)
    x[1] = torch.randn(T, 5) @ torch.randn(5, d)  # rank 5 < d: G singular
    A, gy = layer_weight(d, batch=(3,)), torch.randn(3, T, d)
    errs = errors(x, A, gy)
    assert max(errs) <= tolerance(F32, T, d), f"Expected errors within {tolerance(F32, T, d):.2e}. Got {errs}."


def test_exponential_and_adjoint_against_matrix_exp():
    # mixed shifts in one batch (the samples reordered by s), float64 against torch's matrix_exp and its derivative
    torch.manual_seed(5)
    n, d = 9, 20
    M = torch.randn(n, d, d, dtype=F64) * torch.logspace(-3, 1.5, n, dtype=F64)[:, None, None]
    t = taylor_exp(M)
    assert len(set(t.shift.tolist())) > 3
    Mr = M.clone().requires_grad_()
    ref = torch.linalg.matrix_exp(Mr)
    gE = torch.randn_like(M)
    (gref,) = torch.autograd.grad(ref, Mr, gE)
    # each squaring can double the relative error: per sample 2^s times the rounding of one product chain
    tol = 64 * d * eps(F64) * 2.0 ** t.shift.to(F64)[:, None, None]
    scale = ref.detach().abs().amax((-2, -1), keepdim=True)
    assert bool(((t.E - ref.detach()).abs() <= tol * scale).all())
    g = taylor_exp_adjoint(t, gE)
    gscale = gref.abs().amax((-2, -1), keepdim=True)
    assert bool(((g - gref).abs() <= tol * gscale).all())


def test_shift_is_the_least_power_of_two():
    # min(1-norm, Frobenius) of 2^-s M at most THETA, and of 2^-(s-1) M above THETA
    theta = _taylor_exp.THETA
    torch.manual_seed(6)
    M = torch.randn(50, 17, 17, dtype=F64) * torch.logspace(-2, 3, 50, dtype=F64)[:, None, None]
    M[0] = torch.eye(17, dtype=F64) / 17 * 4  # 1-norm exactly 4/17, Frobenius 4/sqrt(17) ... s = 0
    M[1] = torch.eye(17, dtype=F64) * 0.25  # 1-norm exactly 1/4: s = 0
    M[2] = torch.eye(17, dtype=F64) * (2 * theta)  # 1-norm exactly 2 THETA (exact in binary): s = 1, the boundary
    s, failed = _taylor_exp.shifts(M)
    nrm = torch.minimum(M.abs().sum(-2).amax(-1), M.norm(dim=(-2, -1)))
    assert not bool(failed.any())
    assert bool((nrm * 2.0 ** -s.double() <= theta).all())
    assert bool(((s == 0) | (nrm * 2.0 ** (1 - s.double()) > theta)).all())
    assert s[:3].tolist() == [0, 0, 1]


def test_gradcheck_float64():
    torch.manual_seed(7)
    for d, T, shared in [(5, 8, True), (17, 19, False)]:
        x = torch.randn(2, T, d, dtype=F64, requires_grad=True)
        A = (layer_weight(d, F64, batch=() if shared else (2,)) * 3).requires_grad_()
        keep = torch.ones(2, dtype=torch.bool)
        assert torch.autograd.gradcheck(lambda a, b: _gram_exp._VPGramExp.apply(a, b, keep, None)[0], (x, A))


def test_double_backward_through_the_differentiable_form():
    torch.manual_seed(8)
    x = torch.randn(1, 7, 5, dtype=F64, requires_grad=True)
    A = (layer_weight(5, F64) * 3).requires_grad_()
    keep = torch.ones(1, dtype=torch.bool)
    assert torch.autograd.gradgradcheck(lambda a, b: _gram_exp._VPGramExp.apply(a, b, keep, None)[0], (x, A))


def test_nan_and_huge_samples_change_nothing_else():
    torch.manual_seed(11)
    T, d = 40, 32
    x, A, gy = torch.randn(4, T, d), layer_weight(d), torch.randn(4, T, d)
    clean = x.clone()
    x[1, 3, 2] = float("nan")
    x[2] *= 1e6
    xg = x.clone().requires_grad_()
    y = K.vp_attention(xg, A, activation="exp")
    gx = torch.autograd.grad(y, xg, gy)[0]
    assert bool(y[1].isnan().all())
    xc = clean[[0, 3]].clone().requires_grad_()
    yc = K.vp_attention(xc, A, activation="exp")
    gc = torch.autograd.grad(yc, xc, gy[[0, 3]])[0]
    assert torch.equal(y[[0, 3]], yc) and torch.equal(gx[[0, 3]], gc)
    # the 1e6 sample (|x|_F^2 |A|_F about 1e15: the QR form; its value is as ill-conditioned as exp at that norm):
    # finite, with the columns' norms kept
    assert bool(y[2].isfinite().all()) and bool(gx[2].isfinite().all())
    norms = x[2].double().norm(dim=-2)
    assert ((y[2].double().norm(dim=-2) - norms).abs() <= tolerance(F32, T, d) * norms).all()


def test_result_does_not_depend_on_the_batch():
    torch.manual_seed(12)
    x, A = torch.randn(5, 40, 20), layer_weight(20)
    x[3] *= 8  # more squarings than its neighbours: the batch is reordered by shift
    y = K.vp_attention(x, A, activation="exp")
    for i in range(5):
        assert torch.equal(y[i], K.vp_attention(x[i], A, activation="exp"))


def test_explain_names_the_route_and_its_claims():
    e = K.explain("vp_attention", torch.randn(2, 64, 32), layer_weight(32), activation="exp")
    assert e.route.name == "gram-exp/eager"
    for claim in ("vp.exp_push_through", "vp.gram_exp_vjp", "vp.gram_exp_native_truncation",
                  "vp.gram_exp_native_reverse"):
        assert claim in e.route.claims
    assert "gram-exp/eager" in str(e)


def test_dropped_transpose_in_the_squaring_adjoint_is_caught(monkeypatch):
    torch.manual_seed(13)
    T, d = 40, 32
    x, A, gy = torch.randn(3, T, d), layer_weight(d), torch.randn(3, T, d)
    assert max(errors(x, A, gy)) <= tolerance(F32, T, d)
    monkeypatch.setattr(_gram_exp, "_NEGATE_SQUARE_ADJOINT", True)
    errs = errors(x, A, gy)
    assert errs[0] <= tolerance(F32, T, d)  # the forward is untouched
    assert max(errs[1:]) > tolerance(F32, T, d), f"Expected the fault to exceed the tolerance. Got {errs}."


def test_bad_input_says_expected_and_got():
    with pytest.raises(ValueError, match="Expected a float64 tensor of shape .n, d, d.. Got torch.float32"):
        taylor_exp(torch.zeros(2, 3, 3))
