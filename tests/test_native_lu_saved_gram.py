"""The native LU backward with the forward's Gram matrices (``G=``, :data:`geoattn.kernels._native_lu.SAVED_GRAM`):
its pass over the tokens computes ``Pbar = x^T Gy`` alone."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from conftest import full64, skew64
from geoattn.kernels import _native_lu

F32, F64 = torch.float32, torch.float64
EPS32 = torch.finfo(F32).eps


def _native_or_skip(d, dtype=F32):
    ok, why = _native_lu.lu_native_status(d, dtype)
    if not ok:
        pytest.skip(f"the native LU kernels cannot run here: {why}")


def _reference(x, A, gy):
    """The float64 autograd gradients in ``x`` and (skew) ``A`` of the full ``T x T`` form."""
    x64, a = x.double().requires_grad_(), A.clone().requires_grad_()
    return torch.autograd.grad(full64(x64, 0.5 * (a - a.mT)), (x64, a), gy.double())


def _close(got, want, k):
    """Within ``k`` float32 roundings of the reference's scale (``k`` already scaled by the size)."""
    return float((got.double() - want).abs().max()) <= k * EPS32 * (1 + float(want.abs().max()))


@pytest.mark.parametrize("d,T", [(8, 16), (16, 64), (8, 8), (12, 5)])
def test_the_saved_gram_gives_the_same_bits_as_recomputing_it_and_matches_the_full_form(d, T):
    _native_or_skip(d)
    torch.manual_seed(d * T)
    B = 11
    x, A, gy = torch.randn(B, T, d), skew64(d, 0.3), torch.randn(B, T, d)
    _, G, N, _ = _native_lu.gram_forward(x, A)
    gx, gA = _native_lu.gram_backward(x, gy, N, A, G=G)
    gx0, gA0 = _native_lu.gram_backward(x, gy, N, A)  # G recomputed by the forward's printed pass
    assert torch.equal(gx, gx0) and torch.equal(gA, gA0)
    rx, ra = _reference(x, A, gy)
    assert _close(gx, rx, 64 * max(T, d))
    ga = gA.sum(0)
    assert _close(0.5 * (ga - ga.mT), ra, 64 * B * max(T, d))


def test_rank_deficient_tokens_with_the_saved_gram():
    _native_or_skip(8)
    torch.manual_seed(3)
    d, T, B = 8, 16, 6
    x = torch.randn(B, T, 3) @ torch.randn(B, 3, d)  # rank 3 < d
    A, gy = skew64(d, 0.3), torch.randn(B, T, d)
    _, G, N, _ = _native_lu.gram_forward(x, A)
    gx, _ = _native_lu.gram_backward(x, gy, N, A, G=G)
    assert _close(gx, _reference(x, A, gy)[0], 64 * T * d)


def test_negative_control_a_wrong_gram_is_seen_in_the_gradient_of_A():
    """The kernel reads ``G``: the forward's Gram plus the identity gives a gradient in ``A`` the check rejects."""
    _native_or_skip(8)
    torch.manual_seed(5)
    d, T, B = 8, 16, 9
    x, A, gy = torch.randn(B, T, d), skew64(d, 0.3), torch.randn(B, T, d)
    _, G, N, _ = _native_lu.gram_forward(x, A)
    ra = _reference(x, A, gy)[1]
    wrong = G + torch.eye(d, dtype=F64)
    ga = _native_lu.gram_backward(x, gy, N, A, G=wrong)[1].sum(0)
    assert not _close(0.5 * (ga - ga.mT), ra, 64 * B * T)
    ga = _native_lu.gram_backward(x, gy, N, A, G=G)[1].sum(0)
    assert _close(0.5 * (ga - ga.mT), ra, 64 * B * T)


def test_a_gram_of_the_wrong_shape_or_type_is_refused():
    _native_or_skip(8)
    x, A, gy = torch.randn(4, 16, 8), skew64(8, 0.3), torch.randn(4, 16, 8)
    _, G, N, _ = _native_lu.gram_forward(x, A)
    for bad in (G[:3], G.float(), G.mT):
        with pytest.raises(ValueError, match=r"Expected G .*Got"):
            _native_lu.gram_backward(x, gy, N, A, G=bad)


@pytest.mark.parametrize("block", [True, False])
def test_the_layer_hands_the_forwards_gram_to_the_backward_unless_block_local(monkeypatch, block):
    """Under BLOCK_GRAM (the default, Note [block-local Gram]) the backward gets no Gram matrix and forms each
    block's again; without it the layer hands the forward's to the backward (SAVED_GRAM)."""
    _native_or_skip(8)
    torch.manual_seed(11)
    d, T, B = 8, 16, 5
    x, A, gy = torch.randn(B, T, d), skew64(d, 0.3).float(), torch.randn(B, T, d)
    seen, real = [], _native_lu.gram_backward

    def spy(*args, **kwargs):
        seen.append(kwargs.get("G"))
        return real(*args, **kwargs)

    monkeypatch.setattr(_native_lu, "gram_backward", spy)
    monkeypatch.setattr(_native_lu, "BLOCK_GRAM", block)
    assert "-> gram-lu/native" in str(K.explain("vp_attention", x, A))
    xr = x.clone().requires_grad_()
    K.vp_attention(xr, A).backward(gy)
    assert len(seen) == 1
    if block:
        assert seen[0] is None
    else:
        gram = x.double().mT @ x.double()
        assert float((seen[0] - gram).abs().max()) <= 4 * T * torch.finfo(F64).eps * float(gram.abs().max())
    assert _close(xr.grad, _reference(x, A.double(), gy)[0], 64 * T)


def test_one_nan_or_huge_sample_leaves_the_others_and_the_saved_gram_alone():
    _native_or_skip(8)
    torch.manual_seed(13)
    d, T, B = 8, 16, 12
    x, A, gy = torch.randn(B, T, d), skew64(d, 0.3).float(), torch.randn(B, T, d)
    xa = x.clone().requires_grad_()
    K.vp_attention(xa, A).backward(gy)
    for k, scale in ((2, float("nan")), (7, 1e6)):
        xb = x.clone()
        xb[k] = x[k] * scale
        xb.requires_grad_()
        K.vp_attention(xb, A).backward(gy)
        keep = torch.arange(B) != k
        assert torch.equal(xb.grad[keep], xa.grad[keep])


class _Layer(torch.autograd.Function):
    """The native LU kernels as a function of ``x`` (``A`` fixed), the backward with the forward's Gram."""

    @staticmethod
    def forward(ctx, x, A):
        y, G, N, _ = _native_lu.gram_forward(x.contiguous(), A)
        ctx.save_for_backward(x, G, N, A)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, G, N, A = ctx.saved_tensors
        return _native_lu.gram_backward(x.contiguous(), gy.contiguous(), N, A, G=G)[0], None


@pytest.mark.parametrize("d,T", [(6, 9), (8, 5)])
def test_gradcheck_with_the_saved_gram_in_float64(d, T):
    _native_or_skip(d, F64)
    torch.manual_seed(d + T)
    x = torch.randn(2, T, d, dtype=F64, requires_grad=True)
    A = skew64(d, 0.3)
    assert torch.autograd.gradcheck(lambda t: _Layer.apply(t, A), (x,))
