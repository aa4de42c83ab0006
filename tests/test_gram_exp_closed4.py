"""The exponential layer's closed-form Gram route at d = 4 (geoattn.kernels._gram_exp_closed4; ledger
vp.gram_exp_closed_quartic, vp.gram_exp_closed_quartic_vjp): forward and gradients against the float64 T x T form at
d < T, d = T, d > T, rank-deficient x (q = 0) and t1 = t2, tiny and large norms; gradcheck of the explicit backward
at generic and degenerate points; the coefficients against matrix_exp; batch independence; the route; negative
controls."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from geoattn.kernels import _gram_exp_closed as C
from geoattn.kernels import _gram_exp_closed4 as C4
from geoattn.kernels._op_vp import CLOSED_EXP_MAX_T
from conftest import eps
from test_gram_exp_closed import _eager_exp_routes, errors, grads, reference  # noqa: F401 (the d = 3 module's)

F32, F64 = torch.float32, torch.float64
ROUTE = "gram-exp-closed/eager"


def layer_weight(d=4, dtype=F32, batch=(), scale=1.0):
    """A skew weighting drawn like VolumePreservingAttention's default (entries N(0, 1/d^2), minus the transpose)."""
    w = torch.randn(*batch, d, d, dtype=dtype) * scale / d
    return w - w.mT


def equal_planes(a=1.3, dtype=F32):
    """The rotation generator a (e01 + e23): with G = k I, M = -k A has t1 = t2 = k a (M^2 = -(k a)^2 I)."""
    A = torch.zeros(4, 4, dtype=dtype)
    A[0, 1] = A[2, 3] = a
    return A - A.mT


def tolerance(dtype, T, d=4, k=8.0):
    """k * n * eps(dtype), n = T + d."""
    return k * (T + d) * eps(dtype)


def close(x, A, gy, dtype=F32, fn=C.vp_gram_exp_closed):
    errs = errors(grads(fn, x, A, gy), reference(x, A, gy))
    return all(e <= tolerance(dtype, x.shape[-2]) for e in errs), errs


def low_rank(n, T, r, dtype=F32):
    """``(n, T, 4)`` inputs of rank ``r`` (G = x^T x singular below r = 4: q = det M = 0)."""
    return torch.randn(n, T, r, dtype=F64) @ torch.randn(n, r, 4, dtype=F64) / r ** 0.5


@pytest.mark.parametrize("T", [3, 4, 8, 16, 64])
@pytest.mark.parametrize("shared", [True, False])
def test_matches_full_form_float32(T, shared):
    # T = 3: d > T (G of rank 3); T = 4: d = T; the auto route serves d < T < CLOSED_EXP_MAX_T[4] only
    torch.manual_seed(T + 100 * shared)
    x, gy = torch.randn(5, T, 4), torch.randn(5, T, 4)
    A = layer_weight(batch=() if shared else (5,))
    assert (K.explain("vp_attention", x, A, activation="exp").route.name == ROUTE) == (4 < T < CLOSED_EXP_MAX_T[4])
    ok, errs = close(x, A, gy)
    assert ok, f"Expected errors within {tolerance(F32, T):.2e} of the float64 T x T form. Got {errs}."


@pytest.mark.parametrize("r", [1, 2, 3])
@pytest.mark.parametrize("T", [16, 64])
def test_rank_deficient_inputs(r, T):
    torch.manual_seed(10 * r + T)
    x, gy, A = low_rank(4, T, r).float(), torch.randn(4, T, 4), layer_weight()
    ok, errs = close(x, A, gy)
    assert ok, f"Expected errors within {tolerance(F32, T):.2e} at rank {r}. Got {errs}."


@pytest.mark.parametrize("k", [0.05, 1.0, 4.0, 30.0])
def test_equal_angles(k):
    # x with orthogonal columns of squared norm k: G = k I, so t1 = t2 = 1.3 k exactly (up to x's rounding)
    T = 8
    x = torch.zeros(3, T, 4)
    x[:, :4] = k ** 0.5 * torch.eye(4)
    gy = torch.randn(3, T, 4)
    ok, errs = close(x, equal_planes(), gy)
    assert ok, f"Expected errors within {tolerance(F32, T):.2e} at t1 = t2. Got {errs}."


@pytest.mark.parametrize("a_scale,x_scale", [(1e-9, 1.0), (1e-4, 1e-3), (10.0, 1.0), (1.0, 8.0)])
def test_tiny_and_large_norms(a_scale, x_scale):
    torch.manual_seed(int(a_scale * 100) + int(x_scale))
    T = 16
    x, gy, A = torch.randn(4, T, 4) * x_scale, torch.randn(4, T, 4), layer_weight(scale=a_scale)
    ok, errs = close(x, A, gy)
    assert ok, f"Expected errors within {tolerance(F32, T):.2e}. Got {errs}."


def _closed(x, A):
    return C._VPGramExpClosed.apply(x, A)[0]


def _points():
    torch.manual_seed(3)
    generic = torch.randn(2, 6, 4, dtype=F64)
    rank3 = low_rank(2, 6, 3)  # q = 0
    equal = torch.zeros(2, 6, 4, dtype=F64)
    equal[:, :4] = 1.5 * torch.eye(4, dtype=F64)  # G = 2.25 I with the equal-plane A: t1 = t2
    return [("generic", generic, layer_weight(dtype=F64)), ("q = 0", rank3, layer_weight(dtype=F64, batch=(2,))),
            ("t1 = t2", equal, equal_planes(dtype=F64))]


@pytest.mark.parametrize("case", range(3))
def test_gradcheck_of_the_explicit_backward(case):
    name, x, A = _points()[case]
    x = x.clone().requires_grad_()
    A = A.clone().requires_grad_()
    assert torch.autograd.gradcheck(_closed, (x, A)), name


def test_gradcheck_batched_products():
    # T >= EXP_SOA_MAX_T: the token-sized work by batched products
    torch.manual_seed(4)
    x = torch.randn(2, C.EXP_SOA_MAX_T, 4, dtype=F64, requires_grad=True)
    A = (layer_weight(dtype=F64) / 8).requires_grad_()
    assert torch.autograd.gradcheck(_closed, (x, A))


def _matrix_exp_coefficients(M):
    """exp(M) by torch.linalg.matrix_exp and the coefficients' combination, both float64."""
    M2 = M @ M
    p = -M2.diagonal(dim1=-2, dim2=-1).sum(-1) / 2
    q = (2 * p * p - (M2 * M2.mT).sum((-2, -1))) / 4
    c = C4.exp4_coefficients(p, q)[0]
    eye = torch.eye(4, dtype=F64)
    E = sum(c[i][:, None, None] * P for i, P in enumerate([eye, M, M2, M2 @ M]))
    return E, torch.linalg.matrix_exp(M)


@pytest.mark.parametrize("r,scale", [(4, 1.0), (4, 1e-4), (3, 1.0), (2, 3.0), (1, 1.0), (4, 6.0)])
def test_coefficients_against_matrix_exp(r, scale):
    torch.manual_seed(r)
    x = low_rank(64, 16, r)
    M = -layer_weight(dtype=F64, scale=scale) @ (x.mT @ x)
    E, ref = _matrix_exp_coefficients(M)
    # relative to |M|^3 |c_3|-sized terms: the combination's rounding grows with the norm of M's powers
    norm = M.abs().amax((-2, -1)).clamp_min(1)
    assert ((E - ref).abs().amax((-2, -1)) <= 64 * 16 * eps(F64) * norm ** 3).all()


def test_coefficients_at_zero_and_their_derivatives():
    z = torch.zeros(1, dtype=F64)
    v = C4.exp4_coefficients(z, z)
    assert torch.allclose(v[0, :, 0], torch.tensor([1, 1, 1 / 2, 1 / 6], dtype=F64), rtol=0, atol=4 * eps(F64))
    # derivatives against central differences at p, q on both sides of SCALED_MAX_P and far above it
    h = 1e-6
    for p0, q0 in [(0.01, 0.0), (0.5, 0.05), (40.0, 300.0), (40.0, 400.0)]:  # (40, 400): t1 = t2
        p, q = torch.tensor([p0], dtype=F64), torch.tensor([q0], dtype=F64)
        v = C4.exp4_coefficients(p, q)
        for j, (dp, dq) in enumerate([(h, 0.0), (0.0, h)]):
            fd = (C4.exp4_coefficients(p + dp, q + dq)[0] - C4.exp4_coefficients(p - dp, q - dq)[0]) / (2 * h)
            scale = v[0].abs().max() * max(1.0, p0)
            # rounding eps/h (times the values' scale), truncation h^2 (bounded third derivatives)
            assert (fd - v[1 + j]).abs().max() <= 64 * eps(F64) / h * scale + h * h * scale


def test_nan_and_huge_samples_do_not_touch_their_neighbours():
    torch.manual_seed(11)
    T = 16
    x, A = torch.randn(4, T, 4), layer_weight()
    x[1, 3, 2] = float("nan")
    x[2] *= 1e3  # |x|_F^2 |A|_F far above GRAM_MAX_SCALE: the QR form
    xg = x.clone().requires_grad_()
    y = K.vp_attention(xg, A, activation="exp")
    gx = torch.autograd.grad(y, xg, torch.ones_like(y))[0]
    assert bool(y[1].isnan().all())
    for i in (0, 3):
        yi = K.vp_attention(x[i : i + 1], A, activation="exp")[0]
        assert torch.equal(y[i], yi)  # bit for bit: every step of the closed form acts on its sample alone
        assert bool(gx[i].isfinite().all())
    ref = K.vp_attention(x[2].double(), A.double(), activation="exp", method="full")
    assert (y[2].double() - ref).abs().max() <= tolerance(F32, T) * ref.abs().max()


def test_shared_weight_gradient_ignores_samples_not_computed():
    torch.manual_seed(12)
    x, A, gy = torch.randn(3, 16, 4), layer_weight(), torch.randn(3, 16, 4)
    x[1] *= 1e3
    fn = lambda a, b: K.vp_attention(a, b, activation="exp")  # noqa: E731
    _, _, gA = grads(fn, x, A, gy)
    total = sum(grads(fn, x[i : i + 1], A, gy[i : i + 1])[2] for i in range(3))
    assert (gA - total).abs().max() <= tolerance(F32, 16) * total.abs().max()


def test_result_does_not_depend_on_the_batch():
    torch.manual_seed(13)
    x, A = torch.randn(6, 24, 4), layer_weight()
    x[4] *= 20  # more squarings for this sample: the others must not take them
    y = C.vp_gram_exp_closed(x, A)
    for i in range(6):
        assert torch.equal(y[i], C.vp_gram_exp_closed(x[i], A))


def test_explain_names_the_route_and_its_reasons():
    A = layer_weight()
    e = K.explain("vp_attention", torch.randn(2, 16, 4), A, activation="exp")
    assert e.route.name == ROUTE
    assert {"vp.gram_exp_closed_quartic", "vp.gram_exp_closed_quartic_vjp"} <= set(e.route.claims)
    T = CLOSED_EXP_MAX_T[4]
    long = K.explain("vp_attention", torch.randn(2, T, 4), A, activation="exp")
    assert long.route.name == "lowrank/eager" and f"T={T} >= {T}: the QR form measured as fast" in str(long)


def test_wrong_q_term_in_the_backward_is_caught(monkeypatch):
    # negative control: the q_bar term (M^3 + p M)^T with the wrong sign; rank 4, so q and its gradient matter
    torch.manual_seed(14)
    x, A, gy = torch.randn(3, 16, 4), layer_weight(), torch.randn(3, 16, 4)
    assert close(x, A, gy)[0]
    real = C._coefficient_adjoint

    def flipped(gE, p, coef, dcoef, powers):
        return real(gE, p, coef, torch.stack([dcoef[0], -dcoef[1]]), powers)

    monkeypatch.setattr(C, "_coefficient_adjoint", flipped)
    ok, errs = close(x, A, gy)
    assert not ok, f"Expected the sign fault to exceed the tolerance. Got errors {errs}."


def test_wrong_reduction_in_the_ring_is_caught(monkeypatch):
    # negative control: z^6 reduced with p^2 + q instead of p^2 - q (the squaring rule the claim checks)
    torch.manual_seed(15)
    x, A, gy = torch.randn(3, 16, 4), layer_weight(), torch.randn(3, 16, 4)
    real = C4._ring

    def wrong(p, q):
        k, kp, kq = real(p, q)
        return (k[0], k[1], k[2] + 2 * torch.stack([0 * q, 0 * q, q, 0 * q])), kp, kq

    monkeypatch.setattr(C4, "_ring", wrong)
    # the kernel alone is wrong, and its structure check E^T G E = G flags every sample (which the layer then
    # recomputes by the QR form)
    ok, errs = close(x, A, gy, fn=_closed)
    assert not ok, f"Expected the fault to exceed the tolerance. Got errors {errs}."
    assert not bool(C._VPGramExpClosed.apply(x, A)[1].any())
    assert close(x, A, gy)[0]


def test_claims_checked_and_refuted_when_broken():
    import sympy as sp

    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims import _gram_exp_closed4 as claim

    assert claim.make_closed_form4_claim().check().level is Level.CHECKED
    assert claim.make_closed4_vjp_claim().check().level is Level.CERTIFIED
    wrong_q = claim.make_closed_form4_claim(sp.Rational(1, 2), None, "neg.gram_exp_closed_quartic_q", Level.REFUTED)
    wrong_six = claim.make_closed_form4_claim(sp.Rational(1, 4), lambda p, q: [p * q, 0, p * p + q, 0],
                                              "neg.gram_exp_closed_quartic_z6", Level.REFUTED)

    def sign(X, Am, Gy, cf):
        return claim.closed4_backward(X, Am, Gy, cf, sign=1)

    wrong_vjp = claim.make_closed4_vjp_claim(sign, "neg.gram_exp_closed_quartic_vjp", Level.REFUTED)
    for c in (wrong_q, wrong_six, wrong_vjp):
        v = c.check()
        assert v.level is Level.REFUTED and v.counterexample is not None, c.id
