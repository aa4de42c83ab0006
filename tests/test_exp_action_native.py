"""The native Chebyshev action (route chebyshev/native of exp_skew_action): against the float64 dense exp(S) x, its
gradcheck, per-sample degrees and batch independence, its negative controls, and the generated file."""

from __future__ import annotations

import pytest
import torch

from geoattn.kernels._native_exp_action import _uta_t

from geoattn import kernels as K
from geoattn.codegen import exp_action_c
from geoattn.kernels import _exp_action as ea
from geoattn.kernels import _native_exp_action as na
from geoattn.nn import OrthonormalAttention

pytestmark = pytest.mark.skipif(not na.exp_action_native_status(4)[0], reason="native kernel not built")


def _skew(B, T, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(B, T, T, generator=g, dtype=torch.float64) * scale
    return a - a.mT


def _prepare(S, dtype=torch.float64):
    rho = ea.norm_bound(S)
    return rho, ea.chebyshev_degree(rho, torch.finfo(dtype).eps / 2)


def _err(y, ref, x):
    return ((y.double() - ref).norm(dim=-2) / x.double().norm(dim=-2).clamp_min(1e-300)).max().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T,d", [(16, 4), (64, 4), (5, 5), (3, 7), (24, 1), (40, 16)])  # d < T, d = T, d > T
def test_matches_dense_float64(dtype, T, d):
    S = _skew(12, T, scale=2.0)
    x = torch.randn(12, T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    ref = torch.linalg.matrix_exp(S) @ x
    assert K.explain("exp_skew_action", S.to(dtype), x.to(dtype)).route.name == "chebyshev/native"
    y = K.exp_skew_action(S.to(dtype), x.to(dtype))
    m = int(_prepare(S, dtype)[1].max())
    assert y.dtype == dtype and _err(y, ref, x) <= 4 * m * T * torch.finfo(dtype).eps


def test_rank_deficient_layer_input():
    torch.manual_seed(0)
    layer = OrthonormalAttention(3, dtype=torch.float64)
    x = torch.randn(6, 20, 1, dtype=torch.float64) * torch.randn(1, 1, 3, dtype=torch.float64)
    ref = torch.linalg.matrix_exp(K.upper_triangular_asymmetrize(layer.correlation(x))).mT @ x
    assert layer.explain(x).route.name == "chebyshev-factored/native"
    m = int(_prepare(_uta_t(*layer.factors(x)).reshape(-1, 20, 20))[1].max())
    assert _err(layer(x), ref, x) <= 4 * m * 20 * torch.finfo(torch.float64).eps


@pytest.mark.parametrize("T,d", [(6, 2), (9, 3)])
def test_gradcheck_float64(T, d):
    S = _skew(3, T, scale=0.8).requires_grad_()
    x = torch.randn(3, T, d, dtype=torch.float64, requires_grad=True)
    rho, deg = _prepare(S.detach())
    assert torch.autograd.gradcheck(lambda S, x: na.exp_skew_action_native(S, x, rho, deg, 48), (S, x))
    if T == 6:  # the double backward re-runs the eager form under autograd
        assert torch.autograd.gradgradcheck(lambda S, x: na.exp_skew_action_native(S, x, rho, deg, 48), (S, x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equals_eager_form(dtype):
    """The same coefficients and recurrence: the forward within a few units of the eager form, the gradients too."""
    S = _skew(50, 16, scale=1.5).to(dtype).requires_grad_()
    x = torch.randn(50, 16, 4, dtype=dtype, requires_grad=True)
    rho, deg = _prepare(S.detach().double(), dtype)
    g = torch.randn(50, 16, 4, dtype=dtype)
    outs = []
    for fn in (na.exp_skew_action_native, ea.exp_skew_action_chebyshev):
        y = fn(S, x, rho, deg, 48)
        outs.append((y, *torch.autograd.grad(y, (S, x), g)))
    m = int(deg.max())
    for a, b in zip(*outs):
        scale = b.abs().amax().item()
        assert (a - b).abs().amax().item() <= 4 * m * 16 * torch.finfo(dtype).eps * scale


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
def test_batch_independence(bad):
    """One sample with a NaN (or a huge entry) in x changes no other sample's result or gradient; each sample runs
    to its own degree, so results equal those of the sample alone, bit for bit."""
    S = _skew(9, 16, scale=1.0, seed=3).float()
    S[4] *= 3  # a different degree in the middle of the batch
    x = torch.randn(9, 16, 4, generator=torch.Generator().manual_seed(4))
    rho, deg = _prepare(S.double(), torch.float32)
    assert len(set(deg.tolist())) > 1
    g = torch.randn(9, 16, 4)

    def run(S, x, rho, deg, g):
        S, x = S.clone().requires_grad_(), x.clone().requires_grad_()
        y = na.exp_skew_action_native(S, x, rho, deg, 48)
        return (y, *torch.autograd.grad(y, (S, x), g))

    clean = run(S, x, rho, deg, g)
    xb = x.clone()
    xb[2, 5, 1] = bad
    dirty = run(S, xb, rho, deg, g)
    keep = [i for i in range(9) if i != 2]
    for a, b in zip(clean, dirty):
        assert torch.equal(a[keep], b[keep])
    alone = run(S[4:5], x[4:5], rho[4:5], deg[4:5], g[4:5])
    for a, b in zip(clean, alone):
        assert torch.equal(a[4:5], b)


def test_nan_norm_sample_goes_dense_without_touching_neighbours():
    S = _skew(4, 16).float()
    x = torch.randn(4, 16, 4)
    y = K.exp_skew_action(S, x)
    S2 = S.clone()
    S2[1, 0, 1], S2[1, 1, 0] = float("nan"), float("nan")
    y2 = K.exp_skew_action(S2, x, check=False)
    assert torch.isnan(y2[1]).any() and torch.equal(y2[[0, 2, 3]], y[[0, 2, 3]])


@pytest.mark.parametrize("broken,where", [("recurrence_sign", "forward"), ("adjoint_factor", "backward")])
def test_negative_controls(tmp_path, broken, where):
    """A kernel printed with a broken recurrence (or adjoint) is caught by the comparison the tests make."""
    src = tmp_path / "broken.c"
    src.write_text(exp_action_c.generate_exp_action_module(broken))
    lib = na.build(3, "f64", str(src))
    assert not isinstance(lib, str), lib
    S = _skew(4, 8).requires_grad_()
    x = torch.randn(4, 8, 3, dtype=torch.float64, requires_grad=True)
    rho, deg = _prepare(S.detach())
    ref = torch.linalg.matrix_exp(S.detach()) @ x.detach()
    y = na.exp_skew_action_native(S, x, rho, deg, 48, library=lib)
    tol = 4 * int(deg.max()) * 8 * torch.finfo(torch.float64).eps
    if where == "forward":
        assert _err(y.detach(), ref, x.detach()) > 1e3 * tol
    else:
        assert _err(y.detach(), ref, x.detach()) <= tol
        assert not torch.autograd.gradcheck(lambda S, x: na.exp_skew_action_native(S, x, rho, deg, 48, library=lib),
                                            (S, x), raise_exception=False)
    with pytest.raises(ValueError, match="Expected broken in"):
        exp_action_c.generate_exp_action_module("nonsense")


def test_generated_file_is_fresh_and_explain_reasons():
    with open(na.SOURCE) as fh:
        assert fh.read() == exp_action_c.generate_exp_action_module()
    assert exp_action_c.MAX_K == na.MAX_K
    S, x = _skew(2, 8), torch.randn(2, 8, 17, dtype=torch.float64)
    assert "at most 16 columns" in str(K.explain("exp_skew_action", S, x))
    assert "T <= 256" in str(K.explain("exp_skew_action", _skew(1, 257), torch.randn(1, 257, 2, dtype=torch.float64)))
    with pytest.raises(ValueError, match="Expected x as a contiguous CPU"):
        na.native_forward(S, torch.randn(2, 3, 8, dtype=torch.float64).mT, torch.ones(2, dtype=torch.float64),
                          torch.ones(2, 1, dtype=torch.float64), torch.zeros(2, dtype=torch.int64))


def test_adjoint_claim_and_negative_control():
    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims import exp_action as claim

    assert claim.make_adjoint_claim().check().level is Level.CHECKED
    v = claim.make_adjoint_claim(2, "neg.exp_action_adjoint", Level.REFUTED).check()
    assert v.level is Level.REFUTED and v.counterexample is not None


def test_samples_with_a_large_degree_per_token_take_the_dense_form():
    """Note [the action or the dense exponential]: under method="auto" a sample with m d > 32 T (native) is computed
    as exp(S) x formed densely, bit for bit the dense form of that sample alone; its neighbours keep the action, and
    method="chebyshev" keeps the action for every sample."""
    from geoattn.kernels._op_exp_action import DENSE_RATIO, _dense

    S = _skew(3, 8, scale=0.3, seed=5).float()
    S[1] *= 10  # degree about 35 (below the limit 48): m d = 560 > 32 * 8
    x = torch.randn(3, 8, 16, generator=torch.Generator().manual_seed(6))
    rho = ea.working_rho(ea.norm_bound(S), torch.float32)  # the route's own bound, from the float32 S
    deg = ea.chebyshev_degree(rho, torch.finfo(torch.float32).eps / 2)
    assert deg[1] <= 48 and deg[1] * 16 > DENSE_RATIO["native"] * 8 >= deg[0] * 16
    assert K.explain("exp_skew_action", S, x).route.name == "chebyshev/native"
    y = K.exp_skew_action(S, x)
    assert torch.equal(y[1], _dense(S[1:2], x[1:2])[0])
    assert torch.equal(y[0], na.exp_skew_action_native(S[:1], x[:1], rho[:1], deg[:1], 48)[0])
    yc = K.exp_skew_action(S, x, method="chebyshev")
    assert not torch.equal(yc[1], y[1])
    ref = torch.linalg.matrix_exp(S.double()) @ x.double()
    assert _err(yc, ref, x) <= 4 * int(deg.max()) * 8 * torch.finfo(torch.float32).eps
