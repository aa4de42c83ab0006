"""The arbitrary weighting of volume-preserving attention in linear time (geoattn.kernels._semisep; operation
vp_attention_lower; ledger vp_lower.offdiag_blocks, vp_lower.merge): against the float64 T x T form, gradcheck,
batch independence, the layer and its route, and negative controls."""

from __future__ import annotations

import math

import pytest
import torch

import geoattn.kernels as K
from geoattn.kernels._semisep import semisep_levels, vp_arbitrary_full, vp_arbitrary_linear
from geoattn.nn import VolumePreservingAttention
from geoattn.symbolic import Level

F32, F64 = torch.float32, torch.float64


def weight(d, dtype=F64):
    """An arbitrary weighting drawn like the layer's default (entries N(0, 1/d^2))."""
    return torch.randn(d, d, dtype=dtype) / d


def tol(T, dtype, scale=1.0, k=16):
    """``k T eps(dtype)`` times the size of the outputs (``|y|_max <= |x|_F`` column-wise: Cayley(C) is orthogonal)."""
    return k * T * torch.finfo(dtype).eps * scale


def max_err(a, b):
    return (a.double() - b.double()).abs().max().item()


@pytest.mark.parametrize("T,d,leaf", [(96, 4, 16), (128, 8, 32), (200, 3, 32), (300, 8, 16), (64, 64, 16),
                                      (40, 50, 8), (5, 2, 32), (33, 4, 32), (1, 3, 32)])
@pytest.mark.parametrize("scale", [1.0, 10.0])
def test_float64_equals_the_T_x_T_solve(T, d, leaf, scale):
    """d < T, d = T, d > T, T not a power of two, T below one leaf, a single row; unit-normal and 10x inputs."""
    torch.manual_seed(T * 100 + d)
    x, A = scale * torch.randn(3, T, d, dtype=F64), weight(d)
    y, ref = vp_arbitrary_linear(x, A, leaf=leaf), vp_arbitrary_full(x, A)
    # measured: at most 5 T eps |x|_max, at 10x scale and d > T
    assert max_err(y, ref) <= tol(T, F64, x.abs().max().item())


def test_rank_deficient_x():
    torch.manual_seed(1)
    T, d = 150, 6
    x = torch.randn(2, T, 2, dtype=F64) @ torch.randn(2, d, dtype=F64)  # rank 2 < d
    A = weight(d)
    assert max_err(vp_arbitrary_linear(x, A, leaf=16), vp_arbitrary_full(x, A)) <= tol(T, F64, x.abs().max().item())


def test_zero_rows_decouple():
    """The padding the solver relies on: appended zero rows leave the other rows' output unchanged and give zero."""
    torch.manual_seed(2)
    x, A = torch.randn(2, 37, 4, dtype=F64), weight(4)
    xp = torch.cat((x, torch.zeros(2, 27, 4, dtype=F64)), 1)
    yp = vp_arbitrary_full(xp, A)
    assert max_err(yp[:, :37], vp_arbitrary_full(x, A)) <= tol(64, F64, x.abs().max().item())
    assert torch.equal(yp[:, 37:], torch.zeros_like(yp[:, 37:]))


def test_levels_cover_T():
    for T in (1, 5, 32, 33, 64, 65, 1000, 4096):
        m, L = semisep_levels(T, 32)
        assert m * 2 ** L >= T and (L == 0 or m * 2 ** (L - 1) < T)


def test_float32_inputs_computed_in_float64():
    torch.manual_seed(3)
    x, A = torch.randn(4, 512, 8), weight(8, F32)
    y = vp_arbitrary_linear(x, A)
    assert y.dtype == F32
    ref = vp_arbitrary_full(x.double(), A.double())
    assert max_err(y, ref) <= 4 * torch.finfo(F32).eps * ref.abs().max().item()
    assert K.vp_attention_lower(x.half(), A.half()).dtype == torch.float16


def test_gradcheck_float64():
    torch.manual_seed(4)
    x = torch.randn(2, 11, 3, dtype=F64, requires_grad=True)
    A = weight(3).requires_grad_()
    assert torch.autograd.gradcheck(lambda u, a: vp_arbitrary_linear(u, a, leaf=4), (x, A))
    # and the gradient equals the T x T form's
    gy = torch.randn(2, 11, 3, dtype=F64)
    g1 = torch.autograd.grad(vp_arbitrary_linear(x, A, leaf=4), (x, A), gy)
    g2 = torch.autograd.grad(vp_arbitrary_full(x, A), (x, A), gy)
    for a, b in zip(g1, g2):
        assert max_err(a, b) <= tol(11, F64, gy.abs().max().item() * 8)


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
def test_one_bad_sample_changes_nothing_else(bad):
    torch.manual_seed(5)
    x, A = torch.randn(4, 200, 4), weight(4, F32).requires_grad_()
    xb = x.clone()
    xb[2] = x[2] * bad if bad == bad else torch.full_like(x[2], bad)
    xs, xbs = x.clone().requires_grad_(), xb.clone().requires_grad_()
    y, yb = vp_arbitrary_linear(xs, A, leaf=16), vp_arbitrary_linear(xbs, A, leaf=16)
    keep = [0, 1, 3]
    assert torch.equal(yb[keep], y[keep])
    if bad != bad:
        assert torch.isnan(yb[2]).all()
    else:
        assert torch.isfinite(yb[2]).all()
    gy = torch.randn_like(y)
    gx = torch.autograd.grad(y, xs, gy)[0]
    gxb = torch.autograd.grad(yb, xbs, gy)[0]
    assert torch.equal(gxb[keep], gx[keep])


def test_layer_equals_the_previous_T_x_T_path():
    torch.manual_seed(6)
    layer = VolumePreservingAttention(4, skew_sym=False)
    x = torch.randn(3, 256, 4)
    assert layer.explain(x).route.name == "semisep/eager"
    old = K.cayley_apply(layer.correlation(x), x, check=False)  # the layer's forward before the nested solve
    y = layer(x)
    assert max_err(y, old) <= tol(256, F32, x.abs().max().item())
    y.sum().backward()
    assert torch.isfinite(layer.weight.grad).all()


def test_routes_and_explain():
    A = weight(4, F32)
    e = K.explain("vp_attention_lower", torch.randn(2, 256, 4), A)
    assert e.route.name == "semisep/eager" and "semisep/eager" in e.table() and "full/eager" in e.table()
    e = K.explain("vp_attention_lower", torch.randn(2, 16, 4), A)
    assert e.route.name == "full/eager" and "T=16 < 128" in dict((r.name, w) for r, w in e.rejected)["semisep/eager"]
    e = K.explain("vp_attention_lower", torch.randn(2, 100, 128), weight(128, F32))
    assert e.route.name == "full/eager" and "d=128 >= T=100" in e.table()
    assert K.explain("vp_attention_lower", torch.randn(2, 3, 8), weight(8, F32), method="semisep").route.form == \
        "semisep"
    with pytest.raises(ValueError, match="Expected method in"):
        K.vp_attention_lower(torch.randn(2, 3, 8), weight(8, F32), method="fast")
    with pytest.raises(ValueError, match="Expected x with d = 8 .* Got x of shape"):
        K.vp_attention_lower(torch.randn(2, 3, 7), weight(8, F32))


def test_both_routes_agree_through_the_operation():
    torch.manual_seed(7)
    x, A = torch.randn(2, 130, 5, dtype=F64), weight(5)
    ys, yf = (K.vp_attention_lower(x, A, method=m) for m in ("semisep", "full"))
    assert max_err(ys, yf) <= tol(130, F64, x.abs().max().item())


# -- negative controls ---------------------------------------------------------------------------------------------


def test_a_wrong_merge_sign_fails_the_comparison():
    torch.manual_seed(8)
    x, A = torch.randn(2, 100, 4, dtype=F64), weight(4)
    ref = vp_arbitrary_full(x, A)
    assert max_err(vp_arbitrary_linear(x, A, leaf=16, _sign=-1.0), ref) > 1e3 * tol(100, F64, x.abs().max().item())


def test_claims_refute_their_wrong_variants():
    from geoattn.symbolic.claims import vp_lower

    for make in (vp_lower.make_offdiag_claim, vp_lower.make_merge_claim):
        bad = make(-1, "neg." + make.__name__, Level.REFUTED).check()
        assert bad.level is Level.REFUTED and bad.counterexample is not None
        good = make().check()
        assert good.level is Level.CHECKED, good.error


def test_the_reference_is_the_cayley_form():
    """vp_arbitrary_full is the layer's Cayley(C)^T x with C = skew_from_lower(x A x^T)/sqrt(d), formed explicitly."""
    torch.manual_seed(9)
    x, A = torch.randn(2, 20, 3, dtype=F64), weight(3)
    C = K.skew_from_lower(x @ A @ x.mT) / math.sqrt(3)
    I = torch.eye(20, dtype=F64)
    lam = (I - C) @ torch.linalg.inv(I + C)
    assert max_err(vp_arbitrary_full(x, A), lam.mT @ x) <= tol(20, F64, x.abs().max().item())


def test_batched_weighting_takes_the_full_route():
    """A weighting per sample (``A`` of shape ``(B, d, d)``) is served by the T x T route, which takes it."""
    torch.manual_seed(3)
    x, A = torch.randn(2, 130, 3, dtype=F64), torch.randn(2, 3, 3, dtype=F64) / 3
    e = K.explain("vp_attention_lower", x, A)
    assert e.route.form == "full" and "batched" in dict((r.form, w) for r, w in e.rejected)["semisep"]
    y = K.vp_attention_lower(x, A)
    for b in range(2):
        assert max_err(y[b], vp_arbitrary_full(x[b], A[b])) <= tol(130, F64, x.abs().max().item())
