"""The exponential layer's Gram form y = x exp(-A x^T x) (geoattn.kernels._gram_exp; ledger vp.exp_push_through,
vp.gram_exp_vjp): forward and gradients against the float64 T x T form, gradcheck of the explicit backward, the
per-sample structure check and its fallback, the route, and negative controls."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from geoattn.kernels import _native_exp, _native_exp_wide
from geoattn.kernels import _gram
from geoattn.kernels import _gram_exp
from geoattn.kernels._op_vp import CLOSED_EXP_MAX_T, GRAM_EXP_MIN_DIM
from conftest import eps


@pytest.fixture(autouse=True)
def _eager_exp_routes(monkeypatch):
    """This module tests the eager exponential routes: the native one (tests/test_native_gram_exp.py) is set aside."""
    monkeypatch.setattr(_native_exp, "exp_native_status", lambda d, dtype=None: (False, "set aside by the test"))
    monkeypatch.setattr(_native_exp_wide, "exp_wide_status", lambda d: (False, "set aside by the test"))

F32, F64 = torch.float32, torch.float64


def layer_weight(d, dtype=F32, batch=()):
    """A skew weighting drawn like VolumePreservingAttention's default (entries N(0, 1/d^2), minus the transpose)."""
    w = torch.randn(*batch, d, d, dtype=dtype) / d
    return w - w.mT


def reference(x, A, gy):
    """y, gx, gA of the float64 T x T form (method="full")."""
    x64 = x.detach().double().requires_grad_()
    A64 = A.detach().double().requires_grad_()
    y = K.vp_attention(x64, A64, activation="exp", method="full")
    gx, gA = torch.autograd.grad(y, (x64, A64), gy.double())
    return y.detach(), gx, gA


def computed(x, A, gy, fn=None):
    """y, gx, gA of the Gram form (``fn``: the function under test, by default vp_attention's auto route)."""
    x = x.detach().clone().requires_grad_()
    A = A.detach().clone().requires_grad_()
    y = fn(x, A) if fn is not None else K.vp_attention(x, A, activation="exp")
    gx, gA = torch.autograd.grad(y, (x, A), gy)
    return y.detach(), gx, gA


def errors(got, ref):
    """Each of y, gx, gA: its largest error relative to the largest entry of the reference."""
    return [((g.double() - r).abs().max() / r.abs().max().clamp_min(1e-300)).item() for g, r in zip(got, ref)]


def tolerance(dtype, T, d, k=8.0):
    """k * n * eps(dtype) with n = T + d (each entry of y and of the gradients sums over T and d terms)."""
    return k * (T + d) * eps(dtype)


def auto_route(d, T=16):
    """The route vp_attention's auto choice takes for the exponential of float32 inputs at width ``d < T``."""
    if d in CLOSED_EXP_MAX_T and T < CLOSED_EXP_MAX_T[d]:
        return "gram-exp-closed/eager"
    return "gram-exp/eager" if d > GRAM_EXP_MIN_DIM else "lowrank/eager"


def close(x, A, gy, dtype, fn=None):
    errs = errors(computed(x, A, gy, fn), reference(x, A, gy))
    return all(e <= tolerance(dtype, x.shape[-2], x.shape[-1]) for e in errs), errs


# -- forward and gradients against the T x T form ------------------------------------------------------------------


@pytest.mark.parametrize("d", [3, 4, 8, 16])
@pytest.mark.parametrize("T_of", ["d+1", 33, 100])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0])
def test_matches_full_form_float32(d, T_of, scale):
    torch.manual_seed(1000 * d + int(10 * scale))
    T = d + 1 if T_of == "d+1" else T_of
    x = torch.randn(3, T, d) * scale
    A = layer_weight(d)
    gy = torch.randn(3, T, d)
    assert K.explain("vp_attention", x, A, activation="exp").route.name == auto_route(d, T)
    ok, errs = close(x, A, gy, F32, fn=_gram_exp.vp_gram_exp)
    assert ok, f"Expected errors within {tolerance(F32, T, d):.2e} of the float64 T x T form. Got {errs}."


@pytest.mark.parametrize("d,T", [(3, 4), (4, 33), (8, 33)])
def test_batched_weighting_and_extra_leading_dims(d, T):
    torch.manual_seed(d)
    x = torch.randn(2, 3, T, d)
    A = layer_weight(d, batch=(3,))  # broadcasts against x's (2, 3) leading dims
    gy = torch.randn(2, 3, T, d)
    assert K.explain("vp_attention", x, A, activation="exp").route.name == auto_route(d, T)
    ok, errs = close(x, A, gy, F32, fn=_gram_exp.vp_gram_exp)
    assert ok, f"Expected errors within {tolerance(F32, T, d):.2e}. Got {errs}."


def _gram_only(x, A):
    """The Gram form's autograd Function alone, every sample kept (no structure-check fallback)."""
    keep = torch.ones(x.shape[0], dtype=torch.bool)
    return _gram_exp._VPGramExp.apply(x, A, keep, None)[0]


@pytest.mark.parametrize("d,T", [(3, 4), (4, 33), (8, 100), (16, 33)])
@pytest.mark.parametrize("fn", [_gram_only, _gram_exp.vp_gram_exp])
def test_float64(d, T, fn):
    # the Gram form itself in float64, and vp_gram_exp, whose float64 samples fail the structure check's
    # d eps(float64) / 16 (the computation has no wider precision) and take the QR form
    torch.manual_seed(d + T)
    x = torch.randn(2, T, d, dtype=F64)
    A = layer_weight(d, F64)
    gy = torch.randn(2, T, d, dtype=F64)
    ok, errs = close(x, A, gy, F64, fn=fn)
    assert ok, f"Expected errors within {tolerance(F64, T, d):.2e}. Got {errs}."


def test_half_input_takes_the_route_and_matches():
    torch.manual_seed(3)
    x = torch.randn(2, 20, 8, dtype=torch.float16)
    A = layer_weight(8).to(torch.float16)
    assert K.explain("vp_attention", x, A, activation="exp").route.name == "gram-exp/eager"
    y = K.vp_attention(x, A, activation="exp")
    ref = K.vp_attention(x.double(), A.double(), activation="exp", method="full")
    assert y.dtype == torch.float16
    tol = tolerance(torch.float16, 20, 8, k=1.0)
    assert (y.double() - ref).abs().max() <= tol * ref.abs().max()


def test_gradcheck_of_the_explicit_backward():
    # the autograd Function itself, so that no sample can leave for the QR form unseen
    torch.manual_seed(7)
    for d, T, shared in [(3, 5, True), (4, 6, False), (2, 3, True)]:
        x = torch.randn(2, T, d, dtype=F64, requires_grad=True)
        A = layer_weight(d, F64, batch=() if shared else (2,)).requires_grad_()
        keep = torch.ones(2, dtype=torch.bool)
        assert torch.autograd.gradcheck(lambda a, b: _gram_exp._VPGramExp.apply(a, b, keep, None)[0], (x, A))


def test_double_backward_matches_full_form():
    torch.manual_seed(8)
    x = torch.randn(2, 9, 3, dtype=F64, requires_grad=True)
    A = layer_weight(3, F64).requires_grad_()
    keep = torch.ones(2, dtype=torch.bool)
    assert torch.autograd.gradgradcheck(lambda a, b: _gram_exp._VPGramExp.apply(a, b, keep, None)[0], (x, A))


# -- the structure check, per-sample fallback and independence -------------------------------------------------------


def test_structure_check_negative_control():
    torch.manual_seed(9)
    x = torch.randn(4, 20, 4, dtype=F64)
    G = x.mT @ x
    E = torch.linalg.matrix_exp(-layer_weight(4, F64) @ G)
    assert bool(_gram_exp.structure_ok(G, E, F32).all())
    bad = E.clone()
    bad[2, 0, 1] += 1e-5 * E.abs().max()  # one entry off by 1e-5 of the largest
    got = _gram_exp.structure_ok(G, bad, F32)
    assert got.tolist() == [True, True, False, True]


def test_failing_samples_take_the_qr_form(monkeypatch):
    # every sample failing the check (tolerance 0) must still give the layer and its gradients, by the QR form
    torch.manual_seed(10)
    x, A, gy = torch.randn(3, 17, 4), layer_weight(4), torch.randn(3, 17, 4)
    calls = []
    real = _gram.vp_lowrank  # the QR fallback of failed samples (_gram._qr_for_failed)
    monkeypatch.setattr(_gram_exp, "exp_residual_tolerance", lambda dtype, d: 0.0)
    monkeypatch.setattr(_gram, "vp_lowrank", lambda *a: calls.append(a[0].shape) or real(*a))
    ok, errs = close(x, A, gy, F32, fn=_gram_exp.vp_gram_exp)
    assert calls == [torch.Size([3, 17, 4])]
    assert ok, f"Expected errors within {tolerance(F32, 17, 4):.2e}. Got {errs}."


def test_nan_and_huge_samples_do_not_touch_their_neighbours():
    torch.manual_seed(11)
    T, d = 24, 8
    x = torch.randn(4, T, d)
    A = layer_weight(d)
    x[1, 3, 2] = float("nan")
    x[2] *= 1e3  # |x|_F^2 |A|_F about 1e8 > GRAM_MAX_SCALE: the QR form
    xg = x.clone().requires_grad_()
    y = K.vp_attention(xg, A, activation="exp")
    gx = torch.autograd.grad(y, xg, torch.ones_like(y))[0]
    assert bool(y[1].isnan().all())
    alone = [K.vp_attention(x[i : i + 1], A, activation="exp")[0] for i in (0, 3)]
    tol = tolerance(F32, T, d)
    for i, yi in zip((0, 3), alone):
        assert (y[i] - yi).abs().max() <= tol * yi.abs().max()
        assert bool(gx[i].isfinite().all())
    ref = K.vp_attention(x[2].double(), A.double(), activation="exp", method="full")
    assert (y[2].double() - ref).abs().max() <= tol * ref.abs().max()


def test_result_does_not_depend_on_the_batch():
    torch.manual_seed(12)
    x, A = torch.randn(6, 40, 8), layer_weight(8)
    x[4] *= 20  # a sample of larger norm (more squarings) in the same batch
    y = K.vp_attention(x, A, activation="exp")
    for i in range(6):
        yi = K.vp_attention(x[i], A, activation="exp")
        assert (y[i] - yi).abs().max() <= tolerance(F32, 40, 8) * yi.abs().max()


# -- the route and the negative control of the comparison ------------------------------------------------------------


def test_explain_names_the_route_and_its_reasons():
    x, A = torch.randn(2, 16, 8), layer_weight(8)
    e = K.explain("vp_attention", x, A, activation="exp")
    assert e.route.name == "gram-exp/eager"
    assert "vp.exp_push_through" in e.route.claims and "vp.gram_exp_vjp" in e.route.claims
    text = str(e)
    assert "gram-exp" in text
    cayley = str(K.explain("vp_attention", x.double(), A.double()))  # float64: the Cayley Gram routes pass too
    assert "activation 'cayley': this Gram form is the exponential's" in cayley
    f64 = K.explain("vp_attention", x.double(), A.double(), activation="exp")
    assert f64.route.name == "lowrank/eager"
    assert "float64 input" in str(f64)
    assert K.explain("vp_attention", x, A, activation="exp", method="lowrank").route.name == "lowrank/eager"
    narrow = K.explain("vp_attention", torch.randn(2, CLOSED_EXP_MAX_T[4], 4), layer_weight(4), activation="exp")
    assert narrow.route.name == "lowrank/eager" and f"d=4 <= {GRAM_EXP_MIN_DIM}" in str(narrow)


def test_wrong_sign_in_the_backward_is_caught(monkeypatch):
    torch.manual_seed(13)
    x, A, gy = torch.randn(3, 33, 4), layer_weight(4), torch.randn(3, 33, 4)
    assert close(x, A, gy, F32, fn=_gram_exp.vp_gram_exp)[0]
    real = _gram_exp.taylor_exp_adjoint
    monkeypatch.setattr(_gram_exp, "taylor_exp_adjoint", lambda t, gE, **kw: -real(t, gE, **kw))
    ok, errs = close(x, A, gy, F32, fn=_gram_exp.vp_gram_exp)
    assert not ok, f"Expected the sign fault to exceed the tolerance. Got errors {errs}."


# -- the ledger claim vp.gram_exp_vjp and its negative controls ------------------------------------------------------


def test_claim_checked_and_refuted_when_the_formulas_are_broken():
    import sympy as sp

    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims import _gram_exp as claim

    assert claim.make_gram_exp_vjp_claim().check().level is Level.CHECKED

    def sign(X, Am, Gy, f):  # A_bar with the wrong sign
        y, gx, ga = claim.gram_backward(X, Am, Gy, f)
        return y, gx, -ga

    def transposed(X, Am, Gy, f):  # M_bar read from the block with x^T y_bar transposed
        k = X.cols
        G = X.T * X
        M = -Am * G
        gE = (X.T * Gy).T
        gM = f(sp.Matrix(sp.BlockMatrix([[M.T, gE], [sp.zeros(k, k), M.T]])))[:k, k:]
        gG = Am * gM
        return X * f(M), Gy * f(M).T + X * (gG + gG.T), (-gM * G + (gM * G).T) / 2

    for i, bad in enumerate((sign, transposed)):
        v = claim.make_gram_exp_vjp_claim(bad, f"neg.gram_exp_vjp.{i}", Level.REFUTED).check()
        assert v.level is Level.REFUTED and v.counterexample is not None
