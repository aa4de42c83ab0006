"""The factored Chebyshev action exp(uta(q k^T)^T) x (operation exp_uta_action, route chebyshev-factored/native):
against the float64 dense exponential for d < T, d = T, d > T and rank-deficient factors, gradcheck, batch
independence, the kernel's norms and Miller coefficients, negative controls, the claim, and the layer's route."""

from __future__ import annotations

import pytest
import torch

from geoattn import kernels as K
from geoattn.codegen import exp_action_c
from geoattn.kernels import _exp_action as ea
from geoattn.kernels import _native_exp_action as na
from geoattn.nn import OrthonormalAttention

pytestmark = pytest.mark.skipif(not na.exp_action_native_status(4)[0], reason="native kernel not built")


def _factors(B, T, r, d=None, scale=1.0, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, T, r, generator=g, dtype=torch.float64) * scale for _ in range(2))
    x = torch.randn(B, T, r if d is None else d, generator=g, dtype=torch.float64)
    return q.to(dtype), k.to(dtype), x.to(dtype)


def _reference(q, k, x):
    return torch.linalg.matrix_exp(na._uta_t(q.double(), k.double())) @ x.double()


def _degree(q, k, dtype):
    rho = ea.norm_bound(na._uta_t(q.double(), k.double()))
    return int(ea.chebyshev_degree(rho, torch.finfo(dtype).eps / 2).max())


def _err(y, ref, x):
    return ((y.double() - ref).norm(dim=-2) / x.double().norm(dim=-2).clamp_min(1e-300)).max().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T,d", [(16, 3), (64, 4), (5, 5), (3, 7), (24, 1), (40, 16)])  # d < T, d = T, d > T
def test_matches_dense_float64(dtype, T, d):
    q, k, x = _factors(6, T, d, scale=1.5 / d ** 0.5, dtype=dtype)
    assert K.explain("exp_uta_action", q, k, x).route.name == "chebyshev-factored/native"
    y = K.exp_uta_action(q, k, x)
    m = _degree(q, k, dtype)
    assert y.dtype == dtype and _err(y, _reference(q, k, x), x) <= 4 * m * T * torch.finfo(dtype).eps


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rank_deficient_factors(dtype):
    """q of rank one and k with a zero column: S is still uta(q k^T)^T, the result still the exponential's."""
    q, k, x = _factors(5, 20, 3, dtype=dtype)
    q = q[..., :1] * torch.tensor([1.0, -2.0, 0.5], dtype=dtype)
    k[..., 1] = 0
    y = K.exp_uta_action(q, k, x)
    assert _err(y, _reference(q, k, x), x) <= 4 * _degree(q, k, dtype) * 20 * torch.finfo(dtype).eps


def test_gradients_match_the_formed_route_and_gradcheck():
    q, k, x = _factors(3, 9, 3, scale=0.7)
    args = [t.clone().requires_grad_() for t in (q, k, x)]
    assert torch.autograd.gradcheck(K.exp_uta_action, args)
    assert torch.autograd.gradgradcheck(K.exp_uta_action, [t.clone().requires_grad_() for t in (q[:1, :5], k[:1, :5],
                                                                                               x[:1, :5])])
    g = torch.randn_like(x)
    native = torch.autograd.grad(K.exp_uta_action(*args), args, g)
    ref = [t.clone().requires_grad_() for t in (q, k, x)]
    dense = torch.autograd.grad(_reference(*ref), ref, g)
    for a, b in zip(native, dense):
        assert (a - b).abs().max() <= 64 * 9 * torch.finfo(torch.float64).eps * b.abs().max()


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
def test_batch_independence(bad):
    """A NaN or a huge entry in one sample's q changes no other sample's result or gradient (the huge one takes the
    formed route on its own), and each sample's result equals the sample alone, bit for bit."""
    q, k, x = _factors(7, 16, 4, scale=0.5, seed=3, dtype=torch.float32)
    q[4] *= 3  # a different degree in the middle of the batch
    g = torch.randn_like(x)

    def run(q, k, x):
        args = [t.clone().requires_grad_() for t in (q, k, x)]
        y = K.exp_uta_action(*args)
        return (y, *torch.autograd.grad(y, args, g[: len(q)] if len(q) == len(g) else g[4:5]))

    clean = run(q, k, x)
    qb = q.clone()
    qb[2, 5, 1] = bad
    dirty = run(qb, k, x)
    keep = [i for i in range(7) if i != 2]
    for a, b in zip(clean, dirty):
        assert torch.equal(a[keep], b[keep])
    if bad != bad:
        assert torch.isnan(dirty[0][2]).any()
    alone = run(q[4:5], k[4:5], x[4:5])
    for a, b in zip(clean, alone):
        assert torch.equal(a[4:5], b)


def test_kernel_bound_holds_for_the_kernels_own_float32_s():
    """With K = 1 each entry of the kernel's S is one rounded product, the bits of the same S formed by torch in
    float32: the kernel's bound is at least the spectral norm of exactly that matrix."""
    q, k, _ = _factors(300, 24, 1, dtype=torch.float32)
    S = na._uta_t(q, k)
    norms = na.qk_norms(q, k)
    rho = ea.bound_from_norms(norms[:, 0].sqrt(), norms[:, 1].sqrt(), 24, torch.float32)
    assert (rho >= torch.linalg.matrix_norm(S.double(), 2)).all()


@pytest.mark.parametrize("T", [1, 2])
def test_shortest_sequences(T):
    q, k, x = _factors(3, T, 2)
    args = [t.clone().requires_grad_() for t in (q, k, x)]
    y = K.exp_uta_action(*args)
    assert K.explain("exp_uta_action", q, k, x).route.name == "chebyshev-factored/native"
    assert _err(y, _reference(q, k, x), x) <= 64 * torch.finfo(torch.float64).eps
    assert torch.autograd.gradcheck(K.exp_uta_action, args)


def test_float32_gradients_against_float64():
    """The float32 backward (the kernel's dL/dS and the factors' gradients) against the float64 dense reference."""
    q, k, x = _factors(8, 40, 4, scale=0.5, dtype=torch.float32)
    g = torch.randn_like(x)
    args = [t.clone().requires_grad_() for t in (q, k, x)]
    got = torch.autograd.grad(K.exp_uta_action(*args), args, g)
    ref = [t.double().requires_grad_() for t in (q, k, x)]
    want = torch.autograd.grad(_reference(*ref), ref, g.double())
    m = _degree(q, k, torch.float32)
    for a, b in zip(got, want):
        assert (a.double() - b).abs().max() <= 4 * m * 40 * torch.finfo(torch.float32).eps * b.abs().max()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_kernel_norms_and_bound(dtype):
    """The kernel's ||S||_F^2 and ||fl(S S^T)||_F^2 agree with float64 sums of the same S, and the bound they give
    is above ||S||_2 and within its allowance of the formula."""
    q, k, _ = _factors(40, 33, 4, dtype=dtype)
    S = na._uta_t(q.double(), k.double())
    norms = na.qk_norms(q, k)
    f = torch.linalg.matrix_norm(S) ** 2
    f2 = torch.linalg.matrix_norm(S @ S) ** 2
    eps = torch.finfo(dtype).eps
    assert ((norms[:, 0] - f).abs() <= 8 * 4 * eps * f).all()
    assert ((norms[:, 1] - f2).abs() <= 8 * 33 * 4 * eps * f2).all()
    rho = ea.bound_from_norms(norms[:, 0].sqrt(), norms[:, 1].sqrt(), 33, dtype)
    assert (rho >= torch.linalg.matrix_norm(S, 2)).all()
    assert (rho <= (f2 / 2) ** 0.25 * (1 + 8 * 33 * 33 * eps + 1e-11)).all()  # and the 1e-12 margins


def test_native_miller_is_bitwise_numpy():
    r = torch.cat([torch.rand(500, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 150,
                   torch.tensor([1e-300, 1e-5, 2.0 ** -6, 160.0, float("inf"), float("nan")], dtype=torch.float64)])
    a = na.miller(r, 60, 200)
    b = torch.from_numpy(ea._miller_cpu(r.numpy(), 60, 200))
    assert torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))
    rho, deg = r[:500] / 10, torch.randint(0, 30, (500,), generator=torch.Generator().manual_seed(1))
    c = ea.chebyshev_coefficients(rho, int(deg.max()), start=88)
    kk = torch.arange(c.shape[1])
    lib = na._library(3, torch.float32)  # a float32 library: its own Miller symbol, the same bits
    assert torch.equal(na._coefficients(rho, deg, 48, torch.float64, lib), torch.where(kk <= deg[:, None], c, 0.0))
    with pytest.raises(ValueError, match="Expected an even start"):
        na.miller(r, 60, 59)


@pytest.mark.parametrize("broken", ["uta_sign", "factor_transpose"])
def test_negative_controls(tmp_path, broken):
    """A kernel printed with the wrong sign above the diagonal (or without the G^T term of the factors' gradient)
    is caught by the comparisons above."""
    src = tmp_path / "broken.c"
    src.write_text(exp_action_c.generate_exp_action_module(broken))
    lib = na.build(3, "f64", str(src))
    assert not isinstance(lib, str), lib
    q, k, x = _factors(4, 8, 3)
    tol = 4 * _degree(q, k, torch.float64) * 8 * torch.finfo(torch.float64).eps
    args = [t.clone().requires_grad_() for t in (q, k, x)]
    y, served = na.exp_uta_action_native(*args, 48, library=lib)
    assert served.all()
    err = _err(y.detach(), _reference(q, k, x), x)
    if broken == "uta_sign":
        assert err > 1e3 * tol
    else:
        assert err <= tol
        assert not torch.autograd.gradcheck(lambda *a: na.exp_uta_action_native(*a, 48, library=lib)[0], args,
                                            raise_exception=False)


def test_checks_and_explain_reasons():
    q, k, x = _factors(2, 8, 3)
    with pytest.raises(ValueError, match="Expected q and k of one shape"):
        K.exp_uta_action(q, k[..., :2], x)
    with pytest.raises(ValueError, match="Expected q and x with the same batch shape"):
        K.exp_uta_action(q, k, x[:, :5])
    assert "one width" in str(K.explain("exp_uta_action", q[..., :2], k[..., :2], x))
    assert "at most 16 columns" in str(K.explain("exp_uta_action", *_factors(1, 20, 17)))
    assert K.explain("exp_uta_action", q[..., :0], k[..., :0], x[..., :0]).route.name == "empty/eager"
    # the formed route for a rank that differs from d, against the reference
    y = K.exp_uta_action(q[..., :2], k[..., :2], x)
    m = _degree(q[..., :2], k[..., :2], torch.float64)
    assert _err(y, _reference(q[..., :2], k[..., :2], x), x) <= 4 * m * 8 * torch.finfo(torch.float64).eps


def test_native_route_keeps_no_t_by_t_tensor():
    """What the layer's autograd graph keeps on the native route is of size T x d per sample (q, k, x and per-sample
    scalars), never T x T; the formed route, the control, keeps S."""
    torch.manual_seed(0)
    layer = OrthonormalAttention(4, dtype=torch.float64)
    x = torch.randn(5, 24, 4, dtype=torch.float64, requires_grad=True)

    def saved_shapes():
        shapes = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t, lambda t: t):
            layer(x)
        return shapes

    assert layer.explain(x).route.name == "chebyshev-factored/native"
    assert saved_shapes() and not any(s[-2:] == (24, 24) for s in saved_shapes())
    with K.backend("eager"):
        assert any(s[-2:] == (24, 24) for s in saved_shapes())


def test_factor_claim_and_negative_control():
    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims import exp_action as claim

    assert claim.make_uta_factor_claim().check().level is Level.CHECKED
    v = claim.make_uta_factor_claim(False, "neg.exp_action_uta_factor", Level.REFUTED).check()
    assert v.level is Level.REFUTED and v.counterexample is not None


@pytest.mark.parametrize("T,d", [(16, 4), (5, 8)])
def test_layer_takes_the_factored_route_and_equals_its_matrix(T, d):
    torch.manual_seed(0)
    layer = OrthonormalAttention(d, dtype=torch.float64)
    x = torch.randn(4, T, d, dtype=torch.float64)
    assert layer.explain(x).route.name == "chebyshev-factored/native"
    y = layer(x)
    ref = layer.attention_matrix(x).mT @ x
    assert (y - ref).abs().max() <= 64 * T * torch.finfo(torch.float64).eps * ref.abs().max()
    half = OrthonormalAttention(d, dtype=torch.float16)
    half.load_state_dict({n: p.half() for n, p in layer.state_dict().items()})
    yh = half(x.half())
    ref_h = OrthonormalAttention(d, dtype=torch.float64)
    ref_h.load_state_dict({n: p.half().double() for n, p in layer.state_dict().items()})
    want = ref_h(x.half().double())
    assert yh.dtype == torch.float16
    assert (yh.double() - want).abs().max() <= 64 * T * torch.finfo(torch.float16).eps * want.abs().max()
