"""The native kernels of the exponential layer's Gram form for 3 <= d <= 16 (geoattn.kernels._native_exp, generated
by geoattn.codegen.gram_exp_c) and the route gram-exp/native: against the float64 T x T form (values and
gradients), finite differences of the float64 form, float64 gradcheck; per-sample fallbacks and batch
independence; a broken kernel caught."""

from __future__ import annotations

import os
from fractions import Fraction

import pytest
import torch

import geoattn.kernels as K
from conftest import skew64
from geoattn.codegen import gram_exp_c
from geoattn.kernels import _native, _native_exp
from geoattn.kernels._gram import GRAM_MAX_SCALE
from geoattn.kernels._gram_exp import exp_residual_tolerance
from geoattn.nn import VolumePreservingAttention

F32, F64 = torch.float32, torch.float64
EPS32 = torch.finfo(F32).eps
ROUTE = "-> gram-exp/native"


def _native_or_skip(d=8):
    ok, why = _native_exp.exp_native_status(d, F32)
    if not ok:
        pytest.skip(f"the native exponential kernels cannot run here: {why}")


def full64(x, A):
    """The exponential layer's T x T form in float64 (an independent reference: exp of the T x T matrix)."""
    return K.vp_attention(x.double(), A.double(), activation="exp", method="full")


def _rel(y, ref, x):
    """The largest error relative to each sample's column norms of x."""
    return ((y.double() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max()


def _grads(f, x, A, gy):
    x, A = x.clone().requires_grad_(), A.clone().requires_grad_()
    y = f(x, A)
    return (y,) + torch.autograd.grad(y, (x, A), gy.to(y.dtype))


def test_generated_source_is_up_to_date():
    with open(_native_exp.SOURCE) as fh:
        assert fh.read() == gram_exp_c.generate_gram_exp_module()
    assert (gram_exp_c.MIN_DIM, gram_exp_c.MAX_DIM) == (_native_exp.MIN_DIM, _native_exp.MAX_DIM)
    from geoattn.kernels import _triton  # imports without triton installed

    assert _triton.EXP_DIMS == range(gram_exp_c.MIN_DIM, gram_exp_c.MAX_DIM + 1)


def test_status_and_bad_arguments_say_why():
    assert _native_exp.exp_native_status(2) == (False, "d=2: the native exponential kernels cover 3 <= d <= 16")
    assert not _native_exp.exp_native_status(17)[0]
    assert "float16" in _native_exp.exp_native_status(8, torch.float16)[1]
    with pytest.raises(ValueError, match="Expected .* Got 2"):
        gram_exp_c.generate_gram_exp_module((2,))
    with pytest.raises(ValueError, match="Expected one weighting .* Got"):
        _native_exp.vp_gram_exp_native(torch.randn(2, 6, 3), torch.zeros(2, 3, 3))
    _native_or_skip(3)
    with pytest.raises(ValueError, match="Expected gy contiguous.* Got"):
        _native_exp.gram_exp_backward(torch.randn(2, 6, 3), torch.randn(2, 6, 4), skew64(3))


def test_the_truncation_bound_is_below_float64_rounding():
    assert gram_exp_c.truncation_bound(gram_exp_c.THETA, gram_exp_c.DEGREE) < 2 ** -53
    assert gram_exp_c.truncation_bound(gram_exp_c.THETA, gram_exp_c.DEGREE - 1) > 2 ** -53  # the least degree
    # the largest bound k/64 at that degree
    assert gram_exp_c.truncation_bound(gram_exp_c.THETA + Fraction(1, 64), gram_exp_c.DEGREE) > 2 ** -53
    assert gram_exp_c.THETA.denominator == 64 and gram_exp_c.TOP_SCALAR == ((gram_exp_c.DEGREE + 1) % 4 == 1)


@pytest.mark.parametrize("d", [3, 4, 5, 8, 16])
@pytest.mark.parametrize("T", ["d+1", 17, 40])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0])
def test_values_and_gradients_match_the_float64_full_form(d, T, scale):
    _native_or_skip(d)
    T = d + 1 if T == "d+1" else T
    if T <= d:
        pytest.skip("d >= T: the T x T form serves")
    B = 37 if d == 3 else 11  # not a multiple of the block (32) or of the lanes (8)
    torch.manual_seed(1000 * d + T + int(10 * scale))
    x, A, gy = scale * torch.randn(B, T, d), skew64(d, 0.3 / d ** 0.5), torch.randn(B, T, d)
    assert ROUTE in str(K.explain("vp_attention", x, A.float(), activation="exp"))
    _, _, _, R = _native_exp.gram_exp_forward(x, A)
    assert bool((R <= exp_residual_tolerance(F32, d)).all())  # every sample kept by the kernel here
    y, gx, gA = _grads(lambda a, b: K.vp_attention(a, b, activation="exp"), x, A.float(), gy)
    ry, rgx, rgA = _grads(full64, x.double(), A, gy)
    assert _rel(y, ry, x) <= 16 * T * EPS32
    tol = 64 * T * EPS32
    assert (gx.double() - rgx).abs().max() <= tol * rgx.abs().max()
    assert (gA.double() - rgA).abs().max() <= tol * rgA.abs().max()


def test_rank_deficient_windows_are_right():
    """Rank-one windows x = u v^T (a singular Gram matrix) at d = 5 and 8."""
    for d in (5, 8):
        _native_or_skip(d)
        torch.manual_seed(d)
        T = 24
        x = torch.randn(6, T, 1) * torch.randn(6, 1, d)
        A, gy = skew64(d, 0.1), torch.randn(6, T, d)
        assert ROUTE in str(K.explain("vp_attention", x, A.float(), activation="exp"))
        y, gx, gA = _grads(lambda a, b: K.vp_attention(a, b, activation="exp"), x, A.float(), gy)
        ry, rgx, rgA = _grads(full64, x.double(), A, gy)
        assert _rel(y, ry, x) <= 16 * T * EPS32
        assert (gx.double() - rgx).abs().max() <= 64 * T * EPS32 * rgx.abs().max()
        assert (gA.double() - rgA).abs().max() <= 64 * T * EPS32 * rgA.abs().max()


def test_finite_differences_of_the_float64_form_agree_with_the_kernel_gradients():
    """Directional derivatives by central differences of the float64 T x T form (step 1e-5: error about 1e-10)
    against the float32 kernel's gradients contracted with the same directions."""
    _native_or_skip(8)
    torch.manual_seed(11)
    d, T, B, h = 8, 16, 5, 1e-5
    x, A, gy = torch.randn(B, T, d), skew64(d, 0.1), torch.randn(B, T, d)
    _, gx, gA = _grads(_native_exp.vp_gram_exp_native, x, A.float(), gy)
    vx, vA = torch.randn(B, T, d, dtype=F64), skew64(d, 1.0)
    x64 = x.double()

    def f(xx, AA):
        return float((full64(xx, AA) * gy.double()).sum())

    dx = (f(x64 + h * vx, A) - f(x64 - h * vx, A)) / (2 * h)
    dA = (f(x64, A + h * vA) - f(x64, A - h * vA)) / (2 * h)
    n = B * T * d
    assert abs(float((gx.double() * vx).sum()) - dx) <= 8 * n * EPS32 * float(gx.norm() * vx.norm())
    assert abs(float((gA.double() * vA).sum()) - dA) <= 8 * n * EPS32 * float(gA.norm() * vA.norm())


class _Kernels(torch.autograd.Function):
    """The forward and backward kernels alone (no structure check, no fallback), for gradcheck."""

    @staticmethod
    def forward(ctx, x, A):
        ctx.save_for_backward(x, A)
        return _native_exp.gram_exp_forward(x.contiguous(), A.contiguous())[0]

    @staticmethod
    def backward(ctx, gy):
        x, A = ctx.saved_tensors
        gx, gA = _native_exp.gram_exp_backward(x.contiguous(), gy.contiguous(), A.contiguous())
        gA = gA.sum(0)
        return gx, 0.5 * (gA - gA.mT)


@pytest.mark.parametrize("d", [3, 5])
def test_float64_gradcheck_of_the_kernels(d):
    """torch.autograd.gradcheck of the float64 library's backward kernel against finite differences of its forward
    kernel (A varied along skew directions: the layer uses A's skew part)."""
    _native_or_skip(d)
    if not _native_exp.exp_native_status(d, F64)[0]:
        pytest.skip("no float64 library")
    torch.manual_seed(12 + d)
    x, w = torch.randn(3, d + 2, d, dtype=F64), 0.2 * torch.randn(d, d, dtype=F64)

    def f(x, w):
        return _Kernels.apply(x, w - w.mT)

    assert torch.autograd.gradcheck(f, (x.requires_grad_(), w.requires_grad_()))


def test_one_nan_or_huge_sample_changes_nothing_else():
    _native_or_skip(8)
    torch.manual_seed(7)
    d, T, B = 8, 20, 19
    x, A, gy = torch.randn(B, T, d), skew64(d, 0.3).float(), torch.randn(B, T, d)
    xa, Aa = x.clone().requires_grad_(), A.clone().requires_grad_()
    ya = K.vp_attention(xa, Aa, activation="exp")
    ya.backward(gy)
    for k, bad in ((3, float("nan")), (11, 1e6)):
        xb = x.clone()
        xb[k] = bad if bad != bad else x[k] * bad
        assert bad != bad or float((xb[k].double() ** 2).sum() * A.double().norm()) > GRAM_MAX_SCALE
        xb.requires_grad_()
        assert ROUTE in str(K.explain("vp_attention", xb, A, activation="exp"))
        yb = K.vp_attention(xb, A, activation="exp")
        yb.backward(gy)
        keep = torch.arange(B) != k
        assert torch.equal(yb[keep], ya[keep])
        assert torch.equal(xb.grad[keep], xa.grad[keep])
        if bad == bad:  # the huge sample (the QR form; exp of a skew matrix of norm 1e13 has no float64 reference
            # to the last digits) keeps its column norms
            xk, yk = xb[k].detach().double(), yb[k].detach().double()
            assert ((yk.norm(dim=0) - xk.norm(dim=0)).abs() / xk.norm(dim=0)).max() <= 16 * T * EPS32
        Ab = A.clone().requires_grad_()
        K.vp_attention(xb.detach(), Ab, activation="exp")[keep].backward(gy[keep])
        assert bool(torch.isfinite(Ab.grad).all())


def test_a_split_over_threads_gives_the_same_bits(monkeypatch):
    _native_or_skip(3)
    torch.manual_seed(13)
    x, A, gy = torch.randn(1100, 5, 3), skew64(3), torch.randn(1100, 5, 3)
    one = _native_exp.gram_exp_forward(x, A) + _native_exp.gram_exp_backward(x, gy, A)
    monkeypatch.setattr(_native, "_threads", lambda: 2)
    two = _native_exp.gram_exp_forward(x, A) + _native_exp.gram_exp_backward(x, gy, A)
    assert all(torch.equal(a, b) for a, b in zip(one, two))


def test_explain_names_the_route_and_the_reasons_of_the_others():
    _native_or_skip(8)
    x = torch.randn(4, 16, 8)
    layer = VolumePreservingAttention(8, activation="exp")
    assert layer.explain(x).route.name == "gram-exp/native"
    A = skew64(8).float()
    assert "float64 input" in str(K.explain("vp_attention", x.double(), A.double(), activation="exp"))
    text = str(K.explain("vp_attention", x, A.expand(4, 8, 8), activation="exp"))
    assert ROUTE not in text and "a batched weighting A" in text
    assert ROUTE not in str(K.explain("vp_attention", torch.randn(4, 16, 2), skew64(2).float(), activation="exp"))


def test_batched_weighting_takes_an_eager_route_and_is_right():
    torch.manual_seed(14)
    x, A = torch.randn(3, 12, 5), torch.stack([skew64(5) for _ in range(3)])
    assert _rel(K.vp_attention(x, A.float(), activation="exp"), full64(x, A), x) <= 16 * 12 * EPS32


def test_negative_control_the_squarings_adjoint_without_its_transpose_is_caught(tmp_path, monkeypatch):
    _native_or_skip(8)
    monkeypatch.setenv("GEOATTN_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "broken_exp.c"
    src.write_text(gram_exp_c.generate_gram_exp_module((8,), negate_backward=True))
    lib = _native_exp.build(8, "f32", str(src))
    if isinstance(lib, str):
        pytest.skip(f"cannot build: {lib}")
    torch.manual_seed(8)
    T = 16
    x, A, gy = torch.randn(6, T, 8), skew64(8, 0.3), torch.randn(6, T, 8)
    x64 = x.double().requires_grad_()
    rx = torch.autograd.grad(full64(x64, A), x64, gy.double())[0]
    tol = 64 * T * EPS32 * rx.abs().max()
    bad = _native_exp.gram_exp_backward(x, gy, A, library=lib)[0]
    assert (bad.double() - rx).abs().max() > tol  # the comparison of the tests above fails
    good = _native_exp.gram_exp_backward(x, gy, A)[0]
    assert (good.double() - rx).abs().max() <= tol


def test_no_native_kernels_leaves_the_eager_routes(monkeypatch):
    monkeypatch.setattr(_native_exp, "_libraries", {})
    monkeypatch.setenv("GEOATTN_NATIVE", "0")
    x, A = torch.randn(3, 16, 8), skew64(8, 0.3)
    text = str(K.explain("vp_attention", x, A.float(), activation="exp"))
    assert "GEOATTN_NATIVE=0" in text and ROUTE not in text
    assert _rel(K.vp_attention(x, A.float(), activation="exp"), full64(x, A), x) <= 16 * 16 * EPS32
    assert os.environ["GEOATTN_NATIVE"] == "0"


def test_the_claims_hold_and_their_negative_controls_fail():
    import sympy as sp

    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims import _gram_exp_native as claim

    assert (claim.THETA, claim.DEGREE) == (gram_exp_c.THETA, gram_exp_c.DEGREE)
    assert claim.relative_tail_bound(1, 18) == gram_exp_c.truncation_bound(1, 18)
    assert claim.relative_tail_bound(claim.THETA, 16) == gram_exp_c.truncation_bound(gram_exp_c.THETA, 16)
    assert claim.make_truncation_claim().check().level is Level.PROVED
    v = claim.make_truncation_claim(gram_exp_c.DEGREE - 1, "neg.gram_exp_native_truncation").check()
    assert v.level is Level.ERROR and "does not confirm the step" in v.error
    v = claim.make_truncation_claim(claim_id="neg.gram_exp_native_theta", theta=claim.THETA + sp.Rational(1, 64))
    v = v.check()
    assert v.level is Level.ERROR and "does not confirm the step" in v.error
    with pytest.raises(ValueError, match="Expected a rational 0 < theta <= 1"):
        claim.relative_tail_bound(sp.Rational(5, 4), 16)
    assert claim.make_reverse_claim().check().level is Level.CHECKED
    v = claim.make_reverse_claim(claim.untransposed_square_adjoint, "neg.gram_exp_native_reverse",
                                 Level.REFUTED).check()
    assert v.level is Level.REFUTED and v.counterexample is not None
