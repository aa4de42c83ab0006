"""The solve-free Cayley transform of small skew matrices (Note [Cayley of small skew matrices])."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from geoattn.kernels import _native_exp
from geoattn.kernels import dispatch
from geoattn.kernels import _native
from geoattn.kernels import _generated as gen
from geoattn.kernels._lowrank import vp_full, vp_lowrank
from geoattn.symbolic.claims.kernels import skew_small_identity
from geoattn.symbolic.strategies import search_counterexample

F64 = torch.float64


@pytest.fixture(autouse=True, params=["native", "torch"])
def path(request, monkeypatch):
    """Every test runs with the native T <= 3 kernels where they serve (Note [native Cayley kernels]) and with the
    torch forms alone."""
    if request.param == "native" and not _native.native_status(3, F64)[0]:
        pytest.skip(f"the native kernels cannot run here: {_native.native_status(3, F64)[1]}")
    monkeypatch.setattr(dispatch, "_FORCED", [] if request.param == "native" else ["eager"])
    return request.param


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
    exact 2 x 2 Cayley transform ((1 - x^2) I - 2 C)/(1 + x^2), written with 1/x so that it does not overflow.
    (The native kernels compute in double: there float32 samples keep the closed form, with the same values.)"""
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


# -- the Gram form of the Cayley layer (vp.gram_form, Note [why QR and not the Gram matrix]) -------------------


def test_auto_takes_the_gram_form_for_float32_cayley_only():
    def form(T, d, dtype, **kw):
        A = torch.randn(d, d, dtype=dtype)
        return K.explain("vp_attention", torch.randn(2, T, d, dtype=dtype), A - A.mT, **kw).route.form

    assert form(16, 4, torch.float32).startswith("gram")
    assert form(16, 5, torch.float32) in ("gram-lu", "gram-solve")  # d > 4: no closed form (native LU or solve)
    assert form(16, 4, F64) == "lowrank"
    # the exponential's Gram form: its native kernels, else its closed form
    want = "gram-exp" if _native_exp.exp_native_status(4)[0] and dispatch._FORCED != ["eager"] else "gram-exp-closed"
    assert form(16, 4, torch.float32, activation="exp") == want
    assert form(16, 4, F64, activation="exp") == "lowrank"
    assert form(3, 4, torch.float32) == "full"
    with pytest.raises(ValueError, match="Expected activation 'cayley' for method 'gram'"):
        form(16, 4, torch.float32, method="gram", activation="exp")


@pytest.mark.parametrize("T,d,rank1", [(9, 3, False), (16, 4, False), (12, 4, True), (5, 2, True)])
def test_gram_form_matches_the_full_form(T, d, rank1):
    torch.manual_seed(T + d)
    x = torch.randn(6, T, d, dtype=F64)
    if rank1:  # rank one: every token a multiple of the first
        x = torch.randn(6, T, 1, dtype=F64) * torch.randn(6, 1, d, dtype=F64)
    w = torch.randn(d, d, dtype=F64)
    A = w - w.T
    got = K.vp_attention(x, A, method="gram")
    ref = K.vp_attention(x, A, method="full")
    # float64 throughout; the error grows with cond(I + G A) <= 1 + |x|_F^2 |A|_F
    bound = 64 * T * torch.finfo(F64).eps * (1 + (x * x).sum((-2, -1)).max() * A.norm())
    assert (got - ref).abs().max() <= bound * x.abs().max()
    xg = x[:2].clone().requires_grad_()
    Ag = A.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: K.vp_attention(a, b - b.mT, method="gram", check=False), (xg, Ag))


def test_gram_form_in_float32_is_accurate_near_rank_one():
    """Consecutive states of a trajectory: nearly parallel tokens. The float32 layer (auto: the Gram form in
    float64) stays within a few float32 eps of the float64 T x T form, relative to the row norms of Z."""
    torch.manual_seed(5)
    for scale in (1.0, 10.0):
        x = (torch.randn(64, 1, 4) + 1e-4 * torch.randn(64, 16, 4)) * scale
        w = torch.randn(4, 4)
        A = (w - w.T) / 2
        y = K.vp_attention(x, A)
        ref = K.vp_attention(x.double(), A.double(), method="full")
        rel = ((y.double() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max()
        assert rel <= 8 * 16 * torch.finfo(torch.float32).eps, (scale, rel)


def test_gram_form_sends_large_samples_to_qr_per_sample():
    torch.manual_seed(6)
    x = torch.randn(4, 16, 3)
    x[2] *= 1e6  # |x|^2 |A| far above GRAM_MAX_SCALE
    w = torch.randn(3, 3)
    A = w - w.T
    y = K.vp_attention(x, A)
    for i in range(4):
        assert torch.equal(y[i], K.vp_attention(x[i : i + 1], A)[0])
    rel = ((y.norm(dim=-2) - x.norm(dim=-2)).abs() / x.norm(dim=-2)).max()
    assert rel <= 8 * 16 * torch.finfo(torch.float32).eps


def test_negative_control_the_wrong_sign_gram_form_is_refuted():
    from geoattn.symbolic.claims.kernels import gram_form_identity

    assert search_counterexample(gram_form_identity(-1), [{"T": 3, "d": 2}], seed=0, points=2) is not None
    assert search_counterexample(gram_form_identity(1), [{"T": 3, "d": 2}], seed=0, points=2) is None


def test_gram_form_unbatched_large_and_its_gradient_in_A_is_skew():
    """An unbatched input above the bound (the QR route), and the gradient in a non-skew leaf A: the layer uses
    A's skew part, so the gradient is the full form's (skew)."""
    torch.manual_seed(7)
    w = torch.randn(3, 3)
    A = w - w.T
    x = torch.randn(16, 3) * 1e3
    y = K.vp_attention(x, A)
    assert y.shape == x.shape and torch.isfinite(y).all()
    assert torch.equal(y, K.vp_attention(x[None], A)[0])
    xs = torch.randn(2, 9, 3, dtype=F64)
    A64 = torch.randn(3, 3, dtype=F64).requires_grad_()  # not skew: its symmetric part must get no gradient
    g = torch.randn(2, 9, 3, dtype=F64)
    got = torch.autograd.grad(K.vp_attention(xs, A64, method="gram", check=False), A64, g)[0]
    ref = torch.autograd.grad(K.vp_attention(xs, A64, method="full", check=False), A64, g)[0]
    assert (got - ref).abs().max() <= 64 * 9 * torch.finfo(F64).eps * (1 + ref.abs().max())
    assert (got + got.T).abs().max() <= 64 * torch.finfo(F64).eps * (1 + got.abs().max())


def test_gram_form_under_vmap_over_A():
    x = torch.randn(9, 3)
    w = torch.randn(5, 3, 3)
    As = w - w.mT
    out = torch.func.vmap(lambda a: K.vp_attention(x, a, check=False))(As)
    ref = torch.stack([K.vp_attention(x, a) for a in As])
    assert (out - ref).abs().max() <= 8 * 9 * torch.finfo(torch.float32).eps * (1 + ref.abs().max())


def test_skew_batches_take_the_closed_form_and_mixed_batches_solve_only_the_others(monkeypatch, path):
    """The routing itself (the values above agree whichever branch runs): an all-skew batch is exactly the
    closed form (generated torch, or native C); in a mixed batch the solve sees only the non-skew samples."""
    torch.manual_seed(11)
    c = skew(64, 3, 3)
    closed = (lambda m: _native.cayley_forward(m.contiguous())[0]) if path == "native" else gen.cayley_skew_small
    assert torch.equal(K.cayley(c), closed(c))
    mixed = c.clone()
    mixed[5] += torch.randn(3, 3, dtype=F64)  # not skew
    seen = []
    real = gen.cayley_matrix
    monkeypatch.setattr(gen, "cayley_matrix", lambda m: seen.append(m.shape[0]) or real(m))
    out = K.cayley(mixed)
    assert seen == [1]
    assert torch.equal(out[:5], closed(c[:5]))
    assert (out[5] - solve_ref(mixed[5])).abs().max() <= 64 * 3 * torch.finfo(F64).eps * (1 + solve_ref(mixed[5]).abs().max())


@pytest.mark.parametrize("scale", [1e10, 1e20])
def test_lowrank_path_with_three_features_at_large_norms(scale):
    """k = 3 low-rank factors of huge norm: S^2 and Tr(S^2) would overflow the closed form; the eigendecomposition
    takes those samples and the rows keep their norms."""
    torch.manual_seed(12)
    x = torch.randn(4, 9, 3) * scale ** 0.5
    w = torch.randn(3, 3)
    A = w - w.T
    y = K.vp_attention(x, A, method="lowrank")
    assert torch.isfinite(y).all()
    rel = ((y.norm(dim=-2) - x.norm(dim=-2)).abs() / x.norm(dim=-2)).max()
    assert rel <= 64 * 9 * torch.finfo(torch.float32).eps
