"""The fast form of the native LU kernels' d x d stage (Cholesky of Gram and an LU factorisation of I - K without
pivoting, ledger vp.gram_lu_woodbury) on its own, printed without the pivoted recomputation: against the float64
T x T form for d < T and d = T; rank-deficient x; its fault flag caught by the residual check and repaired by the
recomputation; gradcheck of the backward in float64; the claim and its negative control."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from conftest import full64, skew64
from geoattn.codegen import gram_lu_c
from geoattn.kernels import _native_lu

F32, F64 = torch.float32, torch.float64
EPS32 = torch.finfo(F32).eps
TOL32 = EPS32 / 16  # residual_tolerance(float32): the bound the kernel keeps a fast sample under


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """``build(d, **kw)``: the library of ``generate_gram_lu_module((d,), **kw)`` (float32 tokens), built once per
    module in a private cache."""
    ok, why = _native_lu.lu_native_status(8, F32)
    if not ok:
        pytest.skip(f"the native LU kernels cannot run here: {why}")
    root, made = tmp_path_factory.mktemp("lu_fast"), {}

    def get(d, **kw):
        key = (d, tuple(sorted(kw.items())))
        if key not in made:
            src = root / f"lu_{d}_{len(made)}.c"
            src.write_text(gram_lu_c.generate_gram_lu_module((d,), **kw))
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("GEOATTN_CACHE", str(root / "cache"))
                made[key] = _native_lu.build(d, "f32", str(src))
        if isinstance(made[key], str):
            pytest.skip(f"cannot build: {made[key]}")
        return made[key]

    return get


def _rel(y, ref, x):
    """The largest error relative to each sample's column norms of x."""
    return ((y.double() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max()


def _residual(G, A, N):
    eye = torch.eye(G.shape[-1], dtype=F64)
    return ((eye + G @ A).mT @ N - eye).abs().amax((-2, -1))


@pytest.mark.parametrize("d", [5, 8, 16])
@pytest.mark.parametrize("dT", [0, 1, 3 * 16])  # d = T, d < T with a tail lane group, many tiles
def test_the_fast_form_alone_matches_the_full_form(build, d, dT):
    lib = build(d, retry=False)
    T, B = d + dT, 9
    torch.manual_seed(d * 1000 + T)
    x, A = torch.randn(B, T, d), skew64(d, 0.3)
    y, G, N, rmax = _native_lu.gram_forward(x, A, library=lib)
    Rtrue = _residual(G, A, N)
    assert (Rtrue <= TOL32).all() and (rmax <= TOL32).all()  # the fast form keeps every sample
    scale = 1 + torch.linalg.matrix_norm(torch.eye(d, dtype=F64) + G @ A) * torch.linalg.matrix_norm(N)
    assert ((rmax - Rtrue).abs() <= 16 * d * torch.finfo(F64).eps * scale).all()
    assert _rel(y, full64(x, A), x) <= 8 * T * EPS32


@pytest.mark.parametrize("d,T", [(8, 24), (16, 40), (16, 9)])  # T > d, and d > T (rank at most T)
def test_rank_deficient_x_keeps_the_fast_form(build, d, T):
    """Rank-one and rank-three windows (and every window when d > T): the columns of the Cholesky factor whose
    pivot is not positive are zero. The fast form alone keeps most samples within the tolerance (those it keeps are
    right, its residual is the true one, so the others are flagged); the shipped kernel, whose pivoted
    recomputation takes the flagged ones, gives the same for the kept samples and is right for all."""
    fast = build(d, retry=False)
    torch.manual_seed(11 + d + T)
    x = torch.cat([torch.randn(4, T, 1) * torch.randn(4, 1, d), torch.randn(4, T, 3) @ torch.randn(4, 3, d),
                   torch.randn(2, T, d)])
    A = skew64(d, 0.3)
    ref = full64(x, A)
    y, G, N, rmax = _native_lu.gram_forward(x, A, library=fast)
    Rtrue = _residual(G, A, N)
    scale = 1 + torch.linalg.matrix_norm(torch.eye(d, dtype=F64) + G @ A) * torch.linalg.matrix_norm(N)
    assert ((rmax - Rtrue).abs() <= 16 * d * torch.finfo(F64).eps * scale).all()
    kept = rmax <= TOL32
    assert kept.sum() >= len(x) // 2
    assert _rel(y[kept], ref[kept], x[kept]) <= 8 * T * EPS32
    y2, _, _, rmax2 = _native_lu.gram_forward(x, A)
    assert torch.equal(y2[kept], y[kept]) and torch.equal(rmax2[kept], rmax[kept])
    assert _rel(K.vp_attention(x, A.float()), ref, x) <= 8 * T * EPS32


def test_negative_control_a_wrong_sign_of_k_is_caught_by_the_residual(build):
    d, T, B = 8, 16, 11
    torch.manual_seed(3)
    x, A = torch.randn(B, T, d), skew64(d, 0.3)
    ref = full64(x, A)
    broken = build(d, fault_fast=True, retry=False)
    y, G, N, rmax = _native_lu.gram_forward(x, A, library=broken)
    assert (rmax > 1e3 * TOL32).all() and (_residual(G, A, N) > 1e3 * TOL32).all()
    assert _rel(y, ref, x) > 1e3 * T * EPS32
    repaired = build(d, fault_fast=True, retry=True)
    y2, G2, N2, rmax2 = _native_lu.gram_forward(x, A, library=repaired)
    assert (rmax2 <= TOL32).all() and (_residual(G2, A, N2) <= TOL32).all()
    assert _rel(y2, ref, x) <= 8 * T * EPS32


class _Layer(torch.autograd.Function):
    """The native LU kernels as a function of x (A fixed) for gradcheck."""

    @staticmethod
    def forward(ctx, x, A):
        y, _, N, _ = _native_lu.gram_forward(x.contiguous(), A)
        ctx.save_for_backward(x, N, A)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, N, A = ctx.saved_tensors
        return _native_lu.gram_backward(x.contiguous(), gy.contiguous(), N, A)[0], None


@pytest.mark.parametrize("d,T", [(5, 7), (8, 8)])
def test_gradcheck_of_the_backward_in_float64(d, T):
    ok, why = _native_lu.lu_native_status(d, F64)
    if not ok:
        pytest.skip(f"the native LU kernels cannot run here: {why}")
    torch.manual_seed(d + T)
    x = torch.randn(3, T, d, dtype=F64, requires_grad=True)
    A = skew64(d, 0.3)
    assert torch.autograd.gradcheck(lambda t: _Layer.apply(t, A), (x,))
    y = _Layer.apply(x, A)
    assert _rel(y.detach(), full64(x.detach(), A), x.detach()) <= 64 * T * torch.finfo(F64).eps


def test_the_woodbury_claim_holds_and_its_sign_flip_is_refuted():
    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims._gram_lu_woodbury import make_woodbury_claim

    assert make_woodbury_claim().check().level is Level.CERTIFIED
    wrong = make_woodbury_claim(+1, "neg.vp_gram_lu_woodbury_sign", Level.REFUTED).check()
    assert wrong.level is Level.REFUTED
