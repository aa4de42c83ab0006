"""The C stage of the exponential Gram form for 17 <= d <= 64 (geoattn.kernels._native_exp_wide, printed by
geoattn.codegen.gram_exp_wide_c; ledger vp.gram_exp_native_truncation, vp.gram_exp_native_reverse): the stage
against the batched torch form of the same algorithm and torch's matrix_exp, the layer against the float64 T x T
form, gradcheck, batch independence, the route, and a negative control (a stage printed with the transpose dropped
from the squarings' adjoint)."""

from __future__ import annotations

import os

import pytest
import torch

import geoattn.kernels as K
from geoattn.codegen import gram_exp_wide_c
from geoattn.kernels import _gram_exp, _gram_exp_fused, _native, _native_exp_wide as W, _taylor_exp
from conftest import assert_layer_matches_full64, eps

F32, F64 = torch.float32, torch.float64

pytestmark = pytest.mark.skipif(not W.exp_wide_status(32)[0], reason="the native wide stage cannot be built here")


def layer_weight(d, dtype=F32, batch=()):
    """A skew weighting drawn like VolumePreservingAttention's default (entries N(0, 1/d^2), minus the transpose)."""
    w = torch.randn(*batch, d, d, dtype=dtype) / d
    return w - w.mT


def test_constants_and_source_are_the_generators():
    assert (W.MIN_DIM, W.MAX_DIM, W.SLOTS) == (gram_exp_wide_c.MIN_DIM, gram_exp_wide_c.MAX_DIM, gram_exp_wide_c.SLOTS)
    with open(W.SOURCE) as fh:
        assert fh.read() == gram_exp_wide_c.generate_gram_exp_wide_module()


@pytest.mark.parametrize("d", [17, 32, 64])
def test_stage_matches_the_batched_form_and_matrix_exp(d):
    # mixed shifts in one batch; float64 against the torch form (the same operations) and torch's matrix_exp
    torch.manual_seed(d)
    n = 7
    M = torch.randn(n, d, d, dtype=F64) * torch.logspace(-3, 1.5, n, dtype=F64)[:, None, None] / d ** 0.5
    t, ref = W.stage_exp(M), _taylor_exp.taylor_exp(M)
    assert torch.equal(t.shift.long(), _taylor_exp.shifts(M)[0].long()) and len(set(t.shift.tolist())) > 2
    gE = torch.randn_like(M)
    g, gref = W.stage_exp_adjoint(t, gE), _taylor_exp.taylor_exp_adjoint(ref, gE)
    # the two differ only in the order of the additions inside a product: each squaring can double that
    tol = 16 * d * eps(F64) * 2.0 ** t.shift.to(F64)[:, None, None]
    scale = ref.E.abs().amax((-2, -1), keepdim=True)
    assert bool(((t.E - ref.E).abs() <= tol * scale).all())
    assert bool(((g - gref).abs() <= tol * gref.abs().amax((-2, -1), keepdim=True)).all())
    assert bool(((t.E - torch.linalg.matrix_exp(M)).abs() <= 4 * tol * scale).all())


@pytest.mark.parametrize("d,T", [(17, 18), (17, 40), (32, 33), (32, 64), (64, 65), (64, 96)])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0])
def test_layer_matches_full_form(d, T, scale):
    torch.manual_seed(10 * d + T + int(10 * scale))
    x, A, g = torch.randn(2, T, d) * scale, layer_weight(d), torch.randn(2, T, d)
    assert K.explain("vp_attention", x, A, activation="exp").route.name == "gram-exp-wide/native"
    xs, As = x.clone().requires_grad_(), A.clone().requires_grad_()
    y = K.vp_attention(xs, As, activation="exp")
    gx, gA = torch.autograd.grad(y, (xs, As), g)
    assert_layer_matches_full64(x, A, y, gx, gA, g, activation="exp")


@pytest.mark.parametrize("d,T", [(17, 40), (32, 40)])
def test_batched_weighting_and_rank_deficient_x(d, T):
    torch.manual_seed(d + T)
    x = torch.randn(3, T, d)
    x[1] = torch.randn(T, 5) @ torch.randn(5, d)  # rank 5 < d: G singular
    A, g = layer_weight(d, batch=(3,)), torch.randn(3, T, d)
    xs, As = x.clone().requires_grad_(), A.clone().requires_grad_()
    y = _gram_exp_fused.vp_gram_exp_wide(xs, As)
    gx, gA = torch.autograd.grad(y, (xs, As), g)
    x64, A64 = x.double().requires_grad_(), A.double().requires_grad_()
    y64 = K.vp_attention(x64, A64, activation="exp", method="full")
    rx, rA = torch.autograd.grad(y64, (x64, A64), g.double())
    tol = 64 * T * eps(F32)
    assert ((y.double() - y64.detach()).abs() / x.double().norm(dim=-2, keepdim=True).clamp_min(1e-30)).max() <= tol
    assert (gx.double() - rx).abs().max() <= tol * (1 + rx.abs().max())
    assert (gA.double() - rA).abs().max() <= tol * (1 + rA.abs().max())


def test_gradcheck_float64():
    torch.manual_seed(7)
    for d, T, shared in [(17, 19, True), (18, 20, False)]:
        x = torch.randn(2, T, d, dtype=F64, requires_grad=True)
        A = (layer_weight(d, F64, batch=() if shared else (2,)) * 3).requires_grad_()
        keep = torch.ones(2, dtype=torch.bool)
        assert torch.autograd.gradcheck(lambda a, b: _gram_exp._VPGramExp.apply(a, b, keep, W)[0], (x, A))


def test_nan_and_huge_samples_change_nothing_else():
    torch.manual_seed(11)
    T, d = 40, 32
    x, A, gy = torch.randn(4, T, d), layer_weight(d), torch.randn(4, T, d)
    clean = x.clone()
    x[1, 3, 2] = float("nan")
    x[2] *= 1e6
    assert K.explain("vp_attention", x, A, activation="exp").route.name == "gram-exp-wide/native"
    xg = x.clone().requires_grad_()
    y = K.vp_attention(xg, A, activation="exp")
    gx = torch.autograd.grad(y, xg, gy)[0]
    assert bool(y[1].isnan().all())
    xc = clean[[0, 3]].clone().requires_grad_()
    yc = K.vp_attention(xc, A, activation="exp")
    gc = torch.autograd.grad(yc, xc, gy[[0, 3]])[0]
    assert torch.equal(y[[0, 3]], yc) and torch.equal(gx[[0, 3]], gc)
    assert bool(y[2].isfinite().all()) and bool(gx[2].isfinite().all())


def test_result_does_not_depend_on_the_batch():
    torch.manual_seed(12)
    x, A = torch.randn(5, 40, 20), layer_weight(20)
    x[3] *= 8  # more squarings than its neighbours
    y = K.vp_attention(x, A, activation="exp")
    for i in range(5):
        assert torch.equal(y[i], K.vp_attention(x[i], A, activation="exp"))


def test_explain_names_the_route_and_its_claims():
    e = K.explain("vp_attention", torch.randn(2, 64, 32), layer_weight(32), activation="exp")
    assert e.route.name == "gram-exp-wide/native"
    for claim in ("vp.exp_push_through", "vp.gram_exp_vjp", "vp.gram_exp_native_truncation",
                  "vp.gram_exp_native_reverse"):
        assert claim in e.route.claims
    assert "gram-exp-wide/native" in str(e)
    e = K.explain("vp_attention", torch.randn(2, 80, 65), layer_weight(65), activation="exp")
    assert e.route.name == "gram-exp/eager" and "17 <= d <= 64" in str(e)


def test_dropped_transpose_in_the_squaring_adjoint_is_caught(tmp_path):
    torch.manual_seed(13)
    d = 20
    path = os.path.join(tmp_path, "broken_exp_wide.c")
    with open(path, "w") as fh:
        fh.write(gram_exp_wide_c.generate_gram_exp_wide_module(negate_backward=True))
    broken = W.build(d, path)
    assert not isinstance(broken, str), broken
    M = -(layer_weight(d, F64) @ (lambda x: x.mT @ x)(torch.randn(3, 40, d, dtype=F64)))
    gE = torch.randn_like(M)
    good = W.stage_exp_adjoint(W.stage_exp(M), gE)
    bad_t = W.stage_exp(M, broken)
    assert torch.equal(bad_t.E, W.stage_exp(M).E)  # the forward is untouched
    bad = W.stage_exp_adjoint(bad_t, gE)
    err = ((bad - good).abs().max() / good.abs().max()).item()
    assert err > 1e3 * d * eps(F64), f"Expected the fault to change the gradient. Got a relative change of {err:.2e}."


def test_bad_input_says_expected_and_got():
    with pytest.raises(ValueError, match="Expected a float64 CPU tensor of shape .n, d, d.. Got torch.float32"):
        W.stage_exp(torch.zeros(2, 20, 20))
    t = W.stage_exp(torch.zeros(2, 20, 20, dtype=F64))
    with pytest.raises(ValueError, match="Expected a float64 gradient of shape .2, 20, 20.. Got torch.float32"):
        W.stage_exp_adjoint(t, torch.zeros(2, 20, 20))


# the fused kernels (d <= 32: the token products in C with the stage; geoattn.kernels._gram_exp_fused)

def test_fused_kernels_serve_float32_and_a_shared_weighting_up_to_32():
    assert _gram_exp_fused.fused_reason(torch.randn(2, 40, 32), layer_weight(32)) is None
    assert _gram_exp_fused.fused_reason(torch.randn(2, 40, 17, dtype=F64), layer_weight(17, F64)) is None
    assert "33" in _gram_exp_fused.fused_reason(torch.randn(2, 40, 33), layer_weight(33))
    assert "shared" in _gram_exp_fused.fused_reason(torch.randn(2, 40, 20), layer_weight(20, batch=(2,)))
    assert "bfloat16" in _gram_exp_fused.fused_reason(torch.randn(2, 40, 20, dtype=torch.bfloat16), layer_weight(20))


@pytest.mark.parametrize("d,T", [(17, 12), (17, 17), (32, 20), (32, 32), (32, 64)])
def test_fused_matches_full_form_below_at_and_above_d(d, T):
    torch.manual_seed(d * T)
    x, A, g = torch.randn(3, T, d), layer_weight(d), torch.randn(3, T, d)
    x[1] = torch.randn(T, 5) @ torch.randn(5, d)  # rank 5 < d: G singular
    xs, As = x.clone().requires_grad_(), A.clone().requires_grad_()
    y = _gram_exp_fused.vp_gram_exp_wide(xs, As)
    gx, gA = torch.autograd.grad(y, (xs, As), g)
    assert_layer_matches_full64(x, A, y, gx, gA, g, activation="exp")


def test_fused_gradcheck_float64():
    torch.manual_seed(17)
    for d, T in [(17, 19), (18, 12)]:
        x = torch.randn(2, T, d, dtype=F64, requires_grad=True)
        A = (layer_weight(d, F64) * 3).requires_grad_()
        assert _gram_exp_fused.fused_reason(x, A) is None
        assert torch.autograd.gradcheck(lambda a, b: _gram_exp_fused.VPGramExpFused.apply(a, b)[0], (x, A))


def _fused_forward(x, A, lib):
    """The fused forward's (y, s, ok) of float64 tokens from the library ``lib``."""
    n, T, d = x.shape
    As = (0.5 * (A - A.mT)).double().contiguous()
    bound = torch.tensor([float(As.norm()), _gram_exp.GRAM_MAX_SCALE, _gram_exp.exp_residual_tolerance(F32, d)],
                         dtype=F64)
    y, s, ok = torch.empty_like(x), torch.empty(n, dtype=torch.int32), torch.empty(n, dtype=torch.uint8)
    _native.run_checked(W._fn(lib, "vp_gram_exp_wide_tok_fwd", d, "f64"), n, T,
                        [(x, True), (As, False), (bound, False), (y, True), (s, True), (ok, True)])
    return y, s, ok.bool()


def test_fused_shift_and_structure_check_are_the_torch_forms():
    torch.manual_seed(18)
    d, T = 24, 40
    x = torch.randn(6, T, d, dtype=F64) * torch.tensor([0.1, 0.5, 1.0, 2.0, 4.0, 1.0], dtype=F64)[:, None, None]
    x[5, 0, 0] = float("nan")
    A = layer_weight(d, F64)
    y, s, ok = _fused_forward(x, A, W.library(d, "f64"))
    G = x.mT @ x
    shift, failed = _taylor_exp.shifts(-(A @ G[:5]))
    assert torch.equal(s[:5].long(), shift.long()) and not bool(failed.any()) and len(set(s.tolist())) > 2
    E = torch.linalg.matrix_exp(-(A @ G[:5]))
    assert torch.equal(ok[:5], _gram_exp.structure_ok(G[:5], E, F32)) and bool(ok[:5].all())
    assert s[5].item() == -2 and not bool(ok[5]) and bool((y[5] == 0).all())  # not kept: never enters the stage


def test_faulty_structure_check_is_caught(tmp_path):
    # E G E in place of E^T G E: the check must reject every sample it accepted
    torch.manual_seed(19)
    d = 20
    path = os.path.join(tmp_path, "fault_check_exp_wide.c")
    with open(path, "w") as fh:
        fh.write(gram_exp_wide_c.generate_gram_exp_wide_module(fault_check=True))
    broken = W.build(d, path)
    assert not isinstance(broken, str), broken
    x, A = torch.randn(4, 40, d, dtype=F64), layer_weight(d, F64)
    assert bool(_fused_forward(x, A, W.library(d, "f64"))[2].all())
    assert not bool(_fused_forward(x, A, broken)[2].any())


def test_fused_backward_fault_is_caught(tmp_path, monkeypatch):
    torch.manual_seed(20)
    d, T = 20, 40
    path = os.path.join(tmp_path, "broken_fused_exp_wide.c")
    with open(path, "w") as fh:
        fh.write(gram_exp_wide_c.generate_gram_exp_wide_module(negate_backward=True))
    broken = W.build(d, path, real="f32")
    assert not isinstance(broken, str), broken
    x, A, g = torch.randn(3, T, d), layer_weight(d), torch.randn(3, T, d)

    def grads():
        xs, As = x.clone().requires_grad_(), A.clone().requires_grad_()
        return torch.autograd.grad(_gram_exp_fused.vp_gram_exp_wide(xs, As), (xs, As), g)

    good = grads()
    monkeypatch.setattr(W, "library", lambda d, real="f64": broken)
    bad = grads()
    err = max(((b - a).abs().max() / a.abs().max()).item() for a, b in zip(good, bad))
    assert err > 1e3 * T * eps(F32), f"Expected the fault to change the gradient. Got a relative change of {err:.2e}."


def test_fused_backward_reads_an_expanded_gradient_in_place():
    torch.manual_seed(21)
    x, A = torch.randn(4, 64, 32), layer_weight(32)
    xs = x.clone().requires_grad_()
    gx_sum = torch.autograd.grad(_gram_exp_fused.vp_gram_exp_wide(xs, A).sum(), xs)[0]
    gx_dense = torch.autograd.grad(_gram_exp_fused.vp_gram_exp_wide(xs, A), xs, torch.ones_like(x))[0]
    assert torch.equal(gx_sum, gx_dense)


def test_fused_kernels_split_over_threads_give_the_same_result(monkeypatch):
    # each part of a split batch sums its -Mbar G into its first scratch entry: the parts' sums must all be counted
    from geoattn.kernels import _native
    torch.manual_seed(22)
    x, A, g = torch.randn(1100, 20, 24), layer_weight(24), torch.randn(1100, 20, 24)

    def run(threads):
        monkeypatch.setattr(_native, "_threads", lambda: threads)
        xs, As = x.clone().requires_grad_(), A.clone().requires_grad_()
        y = _gram_exp_fused.vp_gram_exp_wide(xs, As)
        return (y, *torch.autograd.grad(y, (xs, As), g))

    one, two = run(1), run(2)
    assert torch.equal(one[0], two[0]) and torch.equal(one[1], two[1])
    assert x.shape[0] // _native._MIN_PER_THREAD == 2  # two parts with two threads
    # only the order of the float64 sum over the samples differs (a part left out would change gA by about half)
    tol = 64 * x.shape[0] * eps(F32) * one[2].abs().max()
    assert (one[2] - two[2]).abs().max() <= tol
