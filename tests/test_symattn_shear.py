"""The shear of symplectic attention (Note [the shear in one call]) by the sdpa and dense routes: the route table,
the map and its gradients against the composition in float64, gradcheck, batch independence, the graph of the
backward, negative controls."""

import pytest
import torch

from geoattn import kernels as K
from geoattn.kernels import _symattn_dense as D
from geoattn.kernels import _symattn_sdpa as S
from geoattn.kernels._native_symattn import symattn_native_status
from geoattn.kernels._symattn_dense import DENSE_MAX_T
from geoattn.kernels._symattn_native import native_reason
from geoattn.nn import SymplecticAttention

F32, F64 = torch.float32, torch.float64
ALL = ("matrix_softmax", "matrix_one_softmax")
T_SDPA = DENSE_MAX_T + 8  # a sequence the sdpa route serves
pytestmark = pytest.mark.skipif(not S.HAVE_FLASH, reason="this torch has no fused CPU attention kernel")


def _tol(dtype, T, n, k=32.0):
    return k * T * n * torch.finfo(dtype).eps


def _inputs(B, T, n, dtype, seed=0, rank=None):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, 2 * n, generator=g, dtype=dtype)
    if rank is not None:  # both halves of rank ``rank`` over the tokens
        x = torch.randn(B, T, rank, generator=g, dtype=dtype) @ torch.randn(rank, 2 * n, generator=g, dtype=dtype)
    W = torch.randn(n, n, generator=g, dtype=dtype) / n ** 0.5
    return x, 0.5 * (W + W.T), torch.randn(B, T, 2 * n, generator=g, dtype=dtype)


def _composed(x, A, G, act, update, sign):
    """The shear composed from the generated update in float64, differentiated by autograd: ``y, dx, dA``."""
    x64 = x.detach().to(F64).requires_grad_()
    A64 = A.detach().to(F64).requires_grad_()
    n = A.shape[-1]
    q, p = x64.split(n, -1)
    f = getattr(K._generated, f"symattn_update_{act}")
    y = torch.cat([q, p + sign * f(q, A64)[0]] if update == "p" else [q + sign * f(p, A64)[0], p], -1)
    return (y.detach(), *torch.autograd.grad(y, (x64, A64), G.to(F64)))


def _shear(x, A, G, act, update, sign):
    x = x.detach().requires_grad_()
    A = A.detach().requires_grad_()
    y = K.symattn_shear(x, A, act, update, sign)
    return (y.detach(), *torch.autograd.grad(y, (x, A), G))


def _errors(got, want):
    return [((h.to(F64) - w).abs().max() / (1 + w.abs().max())).item() for h, w in zip(got, want)]


def test_route_table(monkeypatch):
    monkeypatch.setenv("GEOATTN_NATIVE", "0")  # the sdpa route (the native one: tests/test_symattn_native.py)
    x, A, _ = _inputs(2, T_SDPA, 3, F32)
    assert K.explain("symattn_shear", x, A).route.name == "sdpa/eager"
    short = K.explain("symattn_shear", x[:, :16], A)
    assert short.route.name == "dense/eager"
    assert "sdpa" in dict((r.name, w) for r, w in K.explain("symattn_shear", x, A).rejected)["dense/eager"]
    general = K.explain("symattn_shear", x[:, :16], A + torch.triu(torch.ones_like(A), 1))
    assert general.route.name == "update/eager"
    assert K.explain("symattn_shear", x[:, :16], A, "vector_softmax").route.name == "update/eager"
    with pytest.raises(K.KernelShapeError, match="Expected x of shape"):
        K.symattn_shear(torch.randn(2, 5, 5), A)


@pytest.mark.parametrize("act", ALL)
@pytest.mark.parametrize("update,sign", [("p", 1.0), ("q", 1.0), ("p", -1.0), ("q", -1.0)])
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("T,n,rank", [(T_SDPA, 2, None), (T_SDPA, 8, None), (T_SDPA, 3, 2), (T_SDPA + 20, 5, None),
                                      (16, 3, None), (16, 4, 1), (DENSE_MAX_T, 2, None), (3, 5, None)])
def test_against_the_composition(act, update, sign, dtype, T, n, rank, monkeypatch):
    """Both one-call routes: sdpa (``T > 64``, the native kernel switched off) and dense (``n < T``, ``n > T``,
    rank-deficient halves)."""
    monkeypatch.setenv("GEOATTN_NATIVE", "0")
    x, A, G = _inputs(3, T, n, dtype, seed=T + n, rank=rank)
    route = "dense/eager" if T <= DENSE_MAX_T else "sdpa/eager"
    assert K.explain("symattn_shear", x, A, act, update, sign).route.name == route
    errs = _errors(_shear(x, A, G, act, update, sign), _composed(x, A, G, act, update, sign))
    assert max(errs) <= _tol(dtype, T, n), errs


def test_n_above_T_and_unbatched():
    """A ``(T, 2n)`` input, and ``n > T`` through the route's function itself (dispatch sends ``T = 3`` to the
    dense route)."""
    x, A, G = _inputs(1, T_SDPA, 3, F64, seed=1)
    errs = _errors(_shear(x[0], A, G[0], "matrix_softmax", "p", 1.0), _composed(x[0], A, G[0], "matrix_softmax",
                                                                                 "p", 1.0))
    assert max(errs) <= _tol(F64, T_SDPA, 3), errs
    x, A, G = _inputs(2, 3, 5, F64, seed=2)
    y = S.shear_sdpa(x.requires_grad_(), A.requires_grad_(), "matrix_softmax", True, 1.0)
    gx, gA = torch.autograd.grad(y, (x, A), G)
    errs = _errors((y.detach(), gx, gA), _composed(x, A, G, "matrix_softmax", "p", 1.0))
    assert max(errs) <= _tol(F64, 3, 5), errs


@pytest.mark.parametrize("shear", [S.shear_sdpa, D.shear_dense])
@pytest.mark.parametrize("first", [True, False])
def test_gradcheck(first, shear):
    x, _, _ = _inputs(2, 5, 2, F64, seed=3)
    W = torch.randn(2, 2, dtype=F64)
    assert torch.autograd.gradcheck(lambda x, W: shear(x, 0.5 * (W + W.T), "matrix_one_softmax", first, -1.0),
                                    (x.requires_grad_(), W.requires_grad_()))


@pytest.mark.parametrize("shear", [S.shear_sdpa, D.shear_dense])
def test_graph_of_the_backward_and_batched_gradients(shear):
    x, A, G = _inputs(2, 6, 3, F64, seed=2)
    x.requires_grad_()
    y = shear(x, A, "matrix_softmax", False, 1.0)
    g1, = torch.autograd.grad(y, x, G, retain_graph=True)
    g2, = torch.autograd.grad(y, x, G, retain_graph=True)
    assert torch.equal(g1, g2)
    g3, = torch.autograd.grad(y, x, G, create_graph=True)
    assert g3.requires_grad and (g3 - g1).abs().max() <= _tol(F64, 6, 3) * g1.abs().max()
    gs, = torch.autograd.grad(y, x, torch.stack([G, -G]), is_grads_batched=True)
    assert (gs[0] - g1).abs().max() <= _tol(F64, 6, 3) * g1.abs().max()
    assert (gs[1] + g1).abs().max() <= _tol(F64, 6, 3) * g1.abs().max()


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
@pytest.mark.parametrize("T", [12, T_SDPA])
def test_batch_independence(bad, T):
    x, A, G = _inputs(4, T, 3, F32, seed=9)
    xb = x.clone()
    xb[1] = bad
    y, gx, _ = _shear(xb, A, G, "matrix_softmax", "p", 1.0)
    y0, gx0, _ = _shear(x, A, G, "matrix_softmax", "p", 1.0)
    keep = [0, 2, 3]
    assert torch.equal(y[keep], y0[keep]) and torch.equal(gx[keep], gx0[keep])


def test_a_dropped_sign_in_the_backward_is_caught(monkeypatch):
    """Negative control: with the sign left off the update's gradient (a fault injected into the backward) the
    comparison that the function passes fails."""
    monkeypatch.setenv("GEOATTN_NATIVE", "0")  # the sdpa route's backward is the one patched
    x, A, G = _inputs(2, T_SDPA, 3, F64, seed=4)
    want = _composed(x, A, G, "matrix_softmax", "p", -1.0)
    assert max(_errors(_shear(x, A, G, "matrix_softmax", "p", -1.0), want)) <= _tol(F64, T_SDPA, 3)
    backward = S._backward
    monkeypatch.setattr(S, "_backward", lambda *a, **k: backward(*a[:6], 1.0, **k))
    _, gx, gA = _shear(x, A, G, "matrix_softmax", "p", -1.0)
    assert (gx - want[1]).abs().max() > 1e3 * _tol(F64, T_SDPA, 3) * want[1].abs().max()
    assert (gA - want[2]).abs().max() > 1e3 * _tol(F64, T_SDPA, 3) * want[2].abs().max()


def test_a_dropped_term_in_the_dense_backward_is_caught(monkeypatch):
    """Negative control: the dense shear's backward without the term ``h A`` (a fault injected) fails the
    comparison that it passes."""
    monkeypatch.setenv("GEOATTN_NATIVE", "0")  # the dense route (it serves n = 3 from T = native_min_t(3) where built)
    x, A, G = _inputs(2, 12, 3, F64, seed=5)
    want = _composed(x, A, G, "matrix_softmax", "q", -1.0)
    assert K.explain("symattn_shear", x, A, "matrix_softmax", "q", -1.0).route.name == "dense/eager"
    assert max(_errors(_shear(x, A, G, "matrix_softmax", "q", -1.0), want)) <= _tol(F64, 12, 3)
    vjp = D._dense_vjp

    def without_hA(zb, A, V, kept, one):
        h, gz = vjp(zb, A, V, kept, one)
        return h, gz.view(-1, A.shape[-1]).addmm_(h.view(-1, A.shape[-1]), A, alpha=-1).view(gz.shape)

    monkeypatch.setattr(D, "_dense_vjp", without_hA)
    _, gx, _ = _shear(x, A, G, "matrix_softmax", "q", -1.0)
    assert (gx - want[1]).abs().max() > 1e3 * _tol(F64, 12, 3) * want[1].abs().max()


@pytest.mark.parametrize("T", [16, T_SDPA])
def test_layer_takes_the_shear_and_inverts(T):
    layer = SymplecticAttention(6, update="q", dtype=F64)
    x = torch.randn(3, T, 6, dtype=F64)
    form = layer.explain(x).route.form
    if native_reason(x[..., 3:], layer.weighting().detach(), "matrix_softmax") is None:  # built, and T long enough
        assert form == "native"
    else:
        assert form == ("dense" if T <= DENSE_MAX_T else "sdpa")
    assert K.explain("symattn_shear", x, layer.weighting(), update="q").route.form == form
    y = layer(x)
    assert torch.equal(y[..., 3:], x[..., 3:])
    assert (layer.inverse(y) - x).abs().max() <= _tol(F64, T, 3) * x.abs().max()


@pytest.mark.parametrize("T", [12, T_SDPA])
def test_expanded_incoming_gradient(T):
    """The gradient of ``y.sum()`` arrives expanded (zero strides): the same result as a dense tensor of ones."""
    x, A, _ = _inputs(2, T, 3, F64, seed=7)
    ones = torch.ones((), dtype=F64).expand_as(x)
    got = _shear(x, A, ones, "matrix_softmax", "p", 1.0)
    want = _shear(x, A, torch.ones_like(x), "matrix_softmax", "p", 1.0)
    assert max(_errors(got, want)) <= _tol(F64, T, 3)
