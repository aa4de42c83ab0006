"""The fused route of symplectic attention (Note [fused symplectic attention]): forward and gradients against a
float64 reference, both VJP forms, blocks, per-sample independence, negative controls, its claims and dispatch."""

from __future__ import annotations

import itertools

import pytest
import torch

import geoattn.kernels as K
from geoattn.kernels import _symattn_fused as F
from geoattn.kernels._symattn_dense import dense_reason
from geoattn.kernels._symattn_native import native_reason
from geoattn.nn import SymplecticAttention
from geoattn.symbolic import algebra as alg
from geoattn.symbolic import get_claim
from geoattn.symbolic.claims._exp_exact import ExpField
from geoattn.symbolic.claims._symattn_exact import variables
from geoattn.symbolic.claims._symattn_fused_exact import FAULTS, fused_vjp_residual

ACTS = list(K.SYMATTN_ACTIVATIONS)
F64, F32 = torch.float64, torch.float32


def _tol(dtype, T, n, k=32.0):
    """``k * size * eps``: the update sums ``T`` terms of ``n``-products, the backward two such layers."""
    return k * T * n * torch.finfo(dtype).eps


def _reference(z, A, V, act):
    """The generated forward differentiated by autograd, in float64: ``U``, ``dz``, ``dA``."""
    z64 = z.detach().to(F64).requires_grad_()
    A64 = A.detach().to(F64).requires_grad_()
    U = getattr(K._generated, f"symattn_update_{act}")(z64, A64)[0]
    gz, gA = torch.autograd.grad(U, (z64, A64), V.to(F64))
    return U.detach(), gz, gA


def _errors(z, A, V, act, update=None):
    """Relative max errors of the fused route's ``U``, ``dz``, ``dA`` (or of ``update(z, A, act)``) against
    :func:`_reference`."""
    z = z.detach().requires_grad_()
    A = A.detach().requires_grad_()
    U = (update or K.symattn_update)(z, A, act)
    gz, gA = torch.autograd.grad(U, (z, A), V)
    return [((h.to(F64) - w).abs().max() / (1 + w.abs().max())).item()
            for h, w in zip((U, gz, gA), _reference(z, A, V, act))]


def _inputs(B, T, n, symmetric, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(B, T, n, generator=g, dtype=dtype)
    W = torch.randn(n, n, generator=g, dtype=dtype) / n ** 0.5
    A = 0.5 * (W + W.T) if symmetric else W
    return z, A, torch.randn(B, T, n, generator=g, dtype=dtype)


@pytest.fixture(params=["outer", "direct"])
def vjp_form(request, monkeypatch):
    """Both VJP forms at every size: the outer-product columns or ``Cd`` and ``K`` formed."""
    monkeypatch.setattr(F, "OUTER_MIN_T", 1 if request.param == "outer" else 10 ** 9)
    monkeypatch.setattr(F, "OUTER_MAX_N", 8 if request.param == "outer" else 0)
    return request.param


@pytest.fixture(params=["kept", "recomputed"])
def softmax_kept(request, monkeypatch):
    """Both ways the backward gets ``G``: kept from the forward, or recomputed block by block."""
    monkeypatch.setattr(F, "KEEP_ENTRIES", 2 ** 40 if request.param == "kept" else 0)
    return request.param


@pytest.mark.parametrize("act,symmetric,T,n,dtype", list(itertools.product(
    ACTS, [True, False], [1, 5, 16, 64], [1, 2, 4], [F32, F64])))
def test_forward_and_gradients_match_float64(act, symmetric, T, n, dtype, vjp_form, softmax_kept):
    z, A, V = _inputs(3, T, n, symmetric, dtype)
    want = "fused"
    if torch.equal(A, A.T) and act.startswith("matrix"):  # the routes of a symmetric A over all entries
        want = ("native" if native_reason(z, A, act) is None
                else "dense" if dense_reason(z, A, act) is None else "sdpa")
    assert K.explain("symattn_update", z, A, act).route.form == want
    errs = _errors(z, A, V, act, update=F.symattn_fused)
    assert max(errs) <= _tol(dtype, T, n), errs


@pytest.mark.parametrize("act,symmetric", list(itertools.product(ACTS, [True, False])))
def test_blocks_give_the_same_result(act, symmetric, monkeypatch, vjp_form, softmax_kept):
    """Blocks of one and of three samples (the last one short) against one block of all seven."""
    z, A, V = _inputs(7, 9, 2, symmetric, F64, seed=1)
    whole = _errors(z, A, V, act)
    for entries in (81, 3 * 81):
        monkeypatch.setattr(F, "BLOCK_ENTRIES", entries)
        assert F._block(7, 9) == entries // 81
        errs = _errors(z, A, V, act)
        assert max(errs) <= _tol(F64, 9, 2) and max(whole) <= _tol(F64, 9, 2), (errs, whole)


@pytest.mark.parametrize("act,dim,symmetric", list(itertools.product(ACTS, [2, 4, 8], [True, False])))
def test_layer_gradients_match_float64(act, dim, symmetric):
    """The layer as a user calls it (float32, default initialisation), input and weight gradients, T odd."""
    torch.manual_seed(2)
    layer = SymplecticAttention(dim, activation=act, symmetric=symmetric)
    ref = SymplecticAttention(dim, activation=act, symmetric=symmetric, dtype=F64)
    ref.load_state_dict({k: v.to(F64) for k, v in layer.state_dict().items()})
    x = torch.randn(4, 7, dim)
    g = torch.randn(4, 7, dim)
    xs = [x.clone().requires_grad_(), x.to(F64).requires_grad_()]
    outs = []
    for m, xi in zip((layer, ref), xs):
        y = m(xi) if m is layer else _generated_layer(m, xi)
        outs.append((y, *torch.autograd.grad(y, (xi, m.weight), g.to(xi.dtype))))
    for h, w in zip(outs[0], outs[1]):
        assert ((h.to(F64) - w).abs().max() / (1 + w.abs().max())) <= _tol(F32, 7, dim)


def _generated_layer(m, x):
    """The float64 reference layer through the generated forward with autograd (no fused route)."""
    n = m.dim // 2
    q, p = x[..., :n], x[..., n:]
    U = getattr(K._generated, f"symattn_update_{m.activation}")(q, m.weighting())[0]
    return torch.cat([q, p + U], -1)


@pytest.mark.parametrize("act", ACTS)
def test_per_sample_independence(act, monkeypatch, softmax_kept):
    """Changing the other samples (in the same block and in other blocks) leaves sample 0's results."""
    monkeypatch.setattr(F, "BLOCK_ENTRIES", 2 * 36)  # blocks of two samples
    z, A, V = _inputs(5, 6, 2, False, F64, seed=3)
    z2 = z.clone()
    z2[1:] = 5 * torch.randn(4, 6, 2, dtype=F64)

    def sample0(zz):
        zz = zz.requires_grad_()
        U = K.symattn_update(zz, A, act)
        (gz,) = torch.autograd.grad(U, zz, V)
        return U[0], gz[0]

    for h, w in zip(sample0(z.clone()), sample0(z2)):
        assert (h - w).abs().max() <= _tol(F64, 6, 2) * (1 + w.abs().max())


@pytest.mark.parametrize("act", [a for a in ACTS if a.startswith("matrix")])
def test_negative_control_one_product_with_a_general_weighting(act, monkeypatch):
    """The one-product form (G for G^T, right for a symmetric A only) forced on a general A: the same comparison
    that passes the route catches it, in the forward and in the backward."""
    monkeypatch.setattr(F, "OUTER_MIN_T", 1)  # the one-product form is the outer-product VJP's
    z, A, V = _inputs(3, 16, 2, False, F32, seed=4)
    assert max(_errors(z, A, V, act)) <= _tol(F32, 16, 2)

    class Forced(F._FusedUpdate):
        @staticmethod
        def forward(ctx, z, A, act):
            out = F._FusedUpdate.forward(ctx, z, A, act)
            ctx.symmetric = True  # the backward takes the one-product form
            return out

    errs = _errors(z, A, V, act, update=lambda z, A, act: Forced.apply(z, A, act))
    assert errs[0] <= _tol(F32, 16, 2) and max(errs[1:]) > 100 * _tol(F32, 16, 2), errs
    with torch.no_grad():
        wrong = F.fused_update(z, A, act, True)  # 2 G z A for a general A
    want = _reference(z, A, V, act)[0]
    assert (wrong.to(F64) - want).abs().max() / (1 + want.abs().max()) > 100 * _tol(F32, 16, 2)


def test_negative_control_dropped_term_in_the_backward(monkeypatch):
    """The fused VJP with the ``- s F`` term of ``R`` dropped is caught by the same float64 comparison."""
    z, A, V = _inputs(3, 16, 2, False, F32, seed=5)
    assert max(_errors(z, A, V, "vector_softmax")) <= _tol(F32, 16, 2)
    right = F.fused_vjp

    def faulty(z, A, V, act, symmetric, S, work=None):
        gz, gA = right(z, A, V, act, symmetric, S, work)
        Fz, H = S @ z, S @ V  # S is G^T for the column softmax
        s = ((H @ A) * z + (Fz @ A) * V).sum(-1, keepdim=True)
        return gz + (s * Fz) @ A, gA  # gz of R + s F

    monkeypatch.setattr(F, "fused_vjp", faulty)
    errs = _errors(z, A, V, "vector_softmax")
    assert max(errs[1:]) > 100 * _tol(F32, 16, 2), errs


def test_dispatch_and_double_backward():
    """Batched weightings and transforms take the generated route; create_graph differentiates again."""
    z, A, V = _inputs(2, 5, 2, False, F64, seed=6)
    assert K.explain("symattn_update", z, A.expand(2, 2, 2)).route.form == "generated"
    assert "fused" in str(K.route_table())
    z = z.requires_grad_()
    A = A.requires_grad_()
    for fn in (K.symattn_update, lambda z, A: getattr(K._generated, "symattn_update_matrix_softmax")(z, A)[0]):
        (gz,) = torch.autograd.grad(fn(z, A), z, V, create_graph=True)
        (ggA,) = torch.autograd.grad(gz.square().sum(), A)
        if fn is K.symattn_update:
            first = ggA
    assert (first - ggA).abs().max() <= _tol(F64, 5, 2) * (1 + ggA.abs().max())
    jac = torch.func.jacrev(lambda q: K.symattn_update(q, A.detach()))(z.detach())
    assert jac.shape == (2, 5, 2, 2, 5, 2)


def test_unbatched_and_half_inputs():
    z, A, V = _inputs(1, 6, 2, True, F32, seed=7)
    assert max(_errors(z[0], A, V[0], "vector_one_softmax")) <= _tol(F32, 6, 2)
    h = K.symattn_update(z.half(), A.half(), "matrix_softmax")
    assert h.dtype == torch.float16
    # against float32 on the same half-rounded inputs: what is left is the half output's rounding (relative)
    ref = K.symattn_update(z.half().float(), A.half().float(), "matrix_softmax")
    assert (h.float() - ref).abs().max() <= _tol(torch.float16, 6, 2) * ref.abs().max()


# -- the claims behind the route ---------------------------------------------------------------------------------


@pytest.mark.parametrize("claim_id,verdict", [("symattn.fused_vjp", "checked"),
                                              ("symattn.fused_vjp.symmetric", "checked"),
                                              ("symattn.fused_vjp.shared_general", "refuted")])
def test_fused_claims(claim_id, verdict):
    assert get_claim(claim_id).check().level.value == verdict


@pytest.mark.parametrize("fault", FAULTS)
def test_fused_claim_catches_injected_faults(fault):
    """The residual behind symattn.fused_vjp is exactly zero for the route's form and nonzero for each fault."""
    m = variables("general")({"n": 1, "T": 2})
    f = ExpField(m["Q"], m["A"])
    assert alg.is_zero(fused_vjp_residual()(f))
    assert not alg.is_zero(fused_vjp_residual(fault=fault)(f))


@pytest.mark.parametrize("dtype,over_all,shift", list(itertools.product(
    [F32, F64], [True, False], [0.0, -50.0, -1000.0, 60.0, 1000.0])))
def test_one_softmax_scaling_at_extreme_logits(dtype, over_all, shift):
    """The one softmax as the softmax times sigma(L): finite, and within k*n*eps of the padded softmax in float64
    for logits far below and above the extra zero logit."""
    C = torch.randn(3, 5, 5, dtype=dtype, generator=torch.Generator().manual_seed(8)) + shift
    flat = C.to(F64).flatten(-2) if over_all else C.to(F64)
    want = torch.softmax(torch.nn.functional.pad(flat, (0, 1)), -1)[..., :-1].view_as(C)
    got = F._softmax_rows_(C.clone(), over_all, True)
    assert torch.isfinite(got).all()
    assert (got.to(F64) - want).abs().max() <= _tol(dtype, 5, 5) * want.abs().max().clamp_min(torch.finfo(dtype).tiny)
    wrong = torch.softmax(flat, -1).view_as(C)  # negative control: without the extra logit
    if shift <= 0:
        assert (wrong - want).abs().max() > _tol(dtype, 5, 5) * want.abs().max()
