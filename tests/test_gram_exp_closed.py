"""The exponential layer's closed-form Gram route at d = 3 (geoattn.kernels._gram_exp_closed; d = 4 in
test_gram_exp_closed4.py; ledger
vp.gram_exp_closed_form, vp.gram_exp_closed_form_vjp): forward and gradients against the float64 T x T form,
gradcheck of the explicit backward, the Rodrigues coefficients, per-sample fallback and independence, the route,
and negative controls."""

from __future__ import annotations

import math

import pytest
import torch

import geoattn.kernels as K
from geoattn.kernels import _native_exp
from geoattn.kernels import _gram
from geoattn.kernels import _gram_exp_closed as C
from geoattn.kernels._op_vp import CLOSED_EXP_MAX_T
from conftest import eps


@pytest.fixture(autouse=True)
def _eager_exp_routes(monkeypatch):
    """This module tests the eager exponential routes: the native one (tests/test_native_gram_exp.py) is set aside."""
    monkeypatch.setattr(_native_exp, "exp_native_status", lambda d, dtype=None: (False, "set aside by the test"))

F32, F64 = torch.float32, torch.float64
ROUTE = "gram-exp-closed/eager"


def layer_weight(d=3, dtype=F32, batch=(), scale=1.0):
    """A skew weighting drawn like VolumePreservingAttention's default (entries N(0, 1/d^2), minus the transpose)."""
    w = torch.randn(*batch, d, d, dtype=dtype) * scale / d
    return w - w.mT


def grads(fn, x, A, gy):
    x = x.detach().clone().requires_grad_()
    A = A.detach().clone().requires_grad_()
    y = fn(x, A)
    gx, gA = torch.autograd.grad(y, (x, A), gy)
    return y.detach(), gx, gA


def reference(x, A, gy):
    return grads(lambda a, b: K.vp_attention(a, b, activation="exp", method="full"), x.double(), A.double(),
                 gy.double())


def errors(got, ref):
    return [((g.double() - r).abs().max() / r.abs().max().clamp_min(1e-300)).item() for g, r in zip(got, ref)]


def tolerance(dtype, T, d=3, k=8.0):
    """k * n * eps(dtype), n = T + d."""
    return k * (T + d) * eps(dtype)


def close(x, A, gy, dtype, fn=None):
    fn = fn or (lambda a, b: K.vp_attention(a, b, activation="exp"))
    errs = errors(grads(fn, x, A, gy), reference(x, A, gy))
    return all(e <= tolerance(dtype, x.shape[-2]) for e in errs), errs


@pytest.mark.parametrize("T", [4, 16, 64])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("shared", [True, False])
def test_matches_full_form_float32(T, scale, shared):
    torch.manual_seed(T + int(10 * scale) + 100 * shared)
    x = torch.randn(5, T, 3) * scale
    A = layer_weight(batch=() if shared else (5,))
    gy = torch.randn(5, T, 3)
    # T >= CLOSED_EXP_MAX_T[3]: the auto route is the QR form (measured faster); the closed form is called directly
    assert (K.explain("vp_attention", x, A, activation="exp").route.name == ROUTE) == (T < CLOSED_EXP_MAX_T[3])
    ok, errs = close(x, A, gy, F32, fn=C.vp_gram_exp_closed)
    assert ok, f"Expected errors within {tolerance(F32, T):.2e} of the float64 T x T form. Got {errs}."


@pytest.mark.parametrize("a_scale,T", [(1e-6, 16), (1e-9, 64), (40.0, 16), (40.0, 64)])
def test_theta_near_zero_and_large(a_scale, T):
    # A tiny: theta^2 near 0, the series; A large: theta of tens to hundreds, the trigonometric forms
    torch.manual_seed(5)
    x, gy = torch.randn(4, T, 3), torch.randn(4, T, 3)
    A = layer_weight(scale=a_scale)
    with torch.no_grad():
        M = -A.double() @ (x.double().mT @ x.double())
        theta2 = -(M @ M).diagonal(dim1=-2, dim2=-1).sum(-1) / 2
    assert bool((theta2 < 1e-6).all()) if a_scale < 1 else bool((theta2 > 100).all())
    ok, errs = close(x, A, gy, F32, fn=C.vp_gram_exp_closed)
    assert ok, f"Expected errors within {tolerance(F32, T):.2e}. Got {errs}."


def test_extra_leading_dims_and_broadcast_weighting():
    torch.manual_seed(2)
    x, gy = torch.randn(2, 3, 9, 3), torch.randn(2, 3, 9, 3)
    A = layer_weight(batch=(3,))
    assert K.explain("vp_attention", x, A, activation="exp").route.name == ROUTE
    ok, errs = close(x, A, gy, F32)
    assert ok, f"Expected errors within {tolerance(F32, 9):.2e}. Got {errs}."


def test_half_input():
    torch.manual_seed(3)
    x, A = torch.randn(2, 20, 3, dtype=torch.float16), layer_weight().to(torch.float16)
    assert K.explain("vp_attention", x, A, activation="exp").route.name == ROUTE
    y = K.vp_attention(x, A, activation="exp")
    ref = K.vp_attention(x.double(), A.double(), activation="exp", method="full")
    assert y.dtype == torch.float16
    assert (y.double() - ref).abs().max() <= tolerance(torch.float16, 20, k=1.0) * ref.abs().max()


def _closed(x, A):
    return C._VPGramExpClosed.apply(x, A)[0]


@pytest.mark.parametrize("T,shared", [(5, True), (4, False), (40, True), (33, False)])
def test_gradcheck_of_the_explicit_backward(T, shared):
    # the autograd Function alone (no sample can leave for the QR form unseen); T >= 32 takes batched products
    torch.manual_seed(T)
    x = torch.randn(2, T, 3, dtype=F64, requires_grad=True)
    A = layer_weight(dtype=F64, batch=() if shared else (2,)).requires_grad_()
    assert torch.autograd.gradcheck(_closed, (x, A))


def test_double_backward():
    torch.manual_seed(8)
    x = torch.randn(2, 9, 3, dtype=F64, requires_grad=True)
    A = layer_weight(dtype=F64).requires_grad_()
    assert torch.autograd.gradgradcheck(_closed, (x, A))


def test_rodrigues_coefficients_against_their_closed_forms():
    t = torch.tensor([0.0, 1e-12, 0.5, 3.9, 4.0, 4.1, 25.0, 1e4], dtype=F64)
    a, b, da, db = C.rodrigues_coefficients(t)
    # the references: the closed forms, and at t < 1e-6 (where 1 - cos loses every digit) two terms of the series
    ref_a = [1 - v / 6 if v < 1e-6 else math.sin(math.sqrt(v)) / math.sqrt(v) for v in t.tolist()]
    ref_b = [0.5 - v / 24 if v < 1e-6 else (1 - math.cos(math.sqrt(v))) / v for v in t.tolist()]
    tol = 64 * eps(F64)
    assert (a - torch.tensor(ref_a, dtype=F64)).abs().max() <= tol
    assert (b - torch.tensor(ref_b, dtype=F64)).abs().max() <= tol
    # derivatives: against central differences of the closed forms, away from 0 (and the series' value at 0)
    assert abs(da[0].item() + 1 / 6) <= tol and abs(db[0].item() + 1 / 24) <= tol
    h = 1e-6
    # central differences of functions bounded by 1 with bounded third derivatives: rounding eps/h, truncation h^2
    fd_tol = 8 * eps(F64) / h + h * h
    for i in (2, 3, 5, 6):
        tp, tm = t[i : i + 1] + h, t[i : i + 1] - h
        ap, bp, _, _ = C.rodrigues_coefficients(tp)
        am, bm, _, _ = C.rodrigues_coefficients(tm)
        assert abs(((ap - am) / (2 * h)).item() - da[i].item()) <= fd_tol
        assert abs(((bp - bm) / (2 * h)).item() - db[i].item()) <= fd_tol


def test_nan_and_huge_samples_do_not_touch_their_neighbours():
    torch.manual_seed(11)
    T = 16
    x, A = torch.randn(4, T, 3), layer_weight()
    x[1, 3, 2] = float("nan")
    x[2] *= 1e4  # |x|_F^2 |A|_F far above GRAM_MAX_SCALE: the QR form
    xg = x.clone().requires_grad_()
    y = K.vp_attention(xg, A, activation="exp")
    gx = torch.autograd.grad(y, xg, torch.ones_like(y))[0]
    assert bool(y[1].isnan().all())
    tol = tolerance(F32, T)
    for i in (0, 3):
        yi = K.vp_attention(x[i : i + 1], A, activation="exp")[0]
        assert (y[i] - yi).abs().max() <= tol * yi.abs().max()
        assert bool(gx[i].isfinite().all())
    ref = K.vp_attention(x[2].double(), A.double(), activation="exp", method="full")
    assert (y[2].double() - ref).abs().max() <= tol * ref.abs().max()


def test_shared_weight_gradient_ignores_samples_not_computed():
    # a huge (finite) sample goes to the QR form; the gradient in A must equal the sum of the per-sample ones
    torch.manual_seed(12)
    x, A, gy = torch.randn(3, 16, 3), layer_weight(), torch.randn(3, 16, 3)
    x[1] *= 1e4
    _, _, gA = grads(lambda a, b: K.vp_attention(a, b, activation="exp"), x, A, gy)
    parts = [grads(lambda a, b: K.vp_attention(a, b, activation="exp"), x[i : i + 1], A, gy[i : i + 1])[2]
             for i in range(3)]
    total = sum(parts)
    assert (gA - total).abs().max() <= tolerance(F32, 16) * total.abs().max()


def test_failing_samples_take_the_qr_form(monkeypatch):
    torch.manual_seed(10)
    x, A, gy = torch.randn(3, 17, 3), layer_weight(), torch.randn(3, 17, 3)
    calls = []
    real = _gram.vp_lowrank  # the QR fallback of failed samples (_gram._qr_for_failed)
    monkeypatch.setattr(C, "exp_residual_tolerance", lambda dtype, d: 0.0)
    monkeypatch.setattr(_gram, "vp_lowrank", lambda *a: calls.append(a[0].shape) or real(*a))
    ok, errs = close(x, A, gy, F32, fn=C.vp_gram_exp_closed)
    assert calls == [torch.Size([3, 17, 3])]
    assert ok, f"Expected errors within {tolerance(F32, 17):.2e}. Got {errs}."


def test_result_does_not_depend_on_the_batch():
    torch.manual_seed(13)
    x, A = torch.randn(6, 40, 3), layer_weight()
    x[4] *= 20
    y = C.vp_gram_exp_closed(x, A)
    for i in range(6):
        yi = C.vp_gram_exp_closed(x[i], A)
        assert (y[i] - yi).abs().max() <= tolerance(F32, 40) * yi.abs().max()


def test_explain_names_the_route_and_its_reasons():
    x, A = torch.randn(2, 16, 3), layer_weight()
    e = K.explain("vp_attention", x, A, activation="exp")
    assert e.route.name == ROUTE
    assert {"vp.exp_push_through", "vp.gram_exp_closed_form", "vp.gram_exp_closed_form_vjp"} <= set(e.route.claims)
    f64 = K.explain("vp_attention", x.double(), A.double(), activation="exp")
    assert f64.route.name == "lowrank/eager" and "float64 input" in str(f64)
    assert K.explain("vp_attention", torch.randn(2, 64, 3), A, activation="exp").route.name == ROUTE
    T = CLOSED_EXP_MAX_T[3]
    long = K.explain("vp_attention", torch.randn(2, T, 3), A, activation="exp")
    assert long.route.name == "lowrank/eager" and f"T={T} >= {T}: the QR form measured as fast" in str(long)
    wide = K.explain("vp_attention", torch.randn(2, 16, 5), layer_weight(5), activation="exp")
    assert wide.route.name != ROUTE and "d=5: the closed form of exp(M) as a polynomial in M" in str(wide)
    short = K.explain("vp_attention", torch.randn(2, 3, 3), A, activation="exp")
    assert short.route.name == "full/eager"
    with pytest.raises(Exception, match="Expected x with d in"):
        C.vp_gram_exp_closed(torch.randn(2, 8, 5), layer_weight(5))


def test_wrong_sign_in_the_backward_is_caught(monkeypatch):
    torch.manual_seed(14)
    x, A, gy = torch.randn(3, 16, 3), layer_weight(), torch.randn(3, 16, 3)
    assert close(x, A, gy, F32)[0]
    real = C._inner
    monkeypatch.setattr(C, "_inner", lambda u, v: -real(u, v))  # flips the sign of the a', b' term
    ok, errs = close(x, A, gy, F32)
    assert not ok, f"Expected the sign fault to exceed the tolerance. Got errors {errs}."


def test_claims_checked_and_refuted_when_broken():
    import sympy as sp

    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims import _gram_exp_closed as claim

    assert claim.make_closed_form_claim().check().level is Level.CHECKED
    v = claim.make_closed_form_claim(sp.Integer(1), "neg.gram_exp_closed_form", Level.REFUTED).check()
    assert v.level is Level.REFUTED and v.counterexample is not None

    def sign(X, Am, Gy, ca, cb):
        return claim.closed_backward(X, Am, Gy, ca, cb, sign=1)

    v = claim.make_closed_vjp_claim(sign, "neg.gram_exp_closed_form_vjp", Level.REFUTED).check()
    assert v.level is Level.REFUTED and v.counterexample is not None
