"""The native route of symplectic attention (Note [native symplectic attention]): the route table, the compiled
kernel's update and backward against a float64 T x T reference, gradcheck, the shear, batch independence, the claim
and negative controls (broken kernels, a wrong shift)."""

import pytest
import torch

from geoattn import kernels as K
from geoattn.codegen import symattn_c as C
from geoattn.kernels import _native_symattn as NS
from geoattn.kernels import _symattn_native as N
from geoattn.nn import SymplecticAttention
from geoattn.symbolic import algebra as alg
from geoattn.symbolic import get_claim
from geoattn.symbolic.claims._exp_exact import ExpField
from geoattn.symbolic.claims._symattn_exact import variables
from geoattn.symbolic.claims._symattn_native_exact import NATIVE_FAULTS, native_vjp_residual

F32, F64 = torch.float32, torch.float64
ALL = ("matrix_softmax", "matrix_one_softmax")
pytestmark = pytest.mark.skipif(not NS.symattn_native_status(2)[0], reason="the native kernel cannot be built here")


def _tol(dtype, T, n, k=4.0, spread=0.0):
    """``k * (size + spread) * eps``: the update sums ``T`` terms of ``n``-products, the backward two such layers;
    ``spread`` (the largest ``max C - min C`` of a sample's scores) bounds ``|C_ij - L|`` up to ``log T^2``, the
    condition number of ``e^(C_ij - L)``, which dominates at short sequences of large (rank-one) tokens."""
    return k * (T * n + spread) * torch.finfo(dtype).eps


def _inputs(B, T, n, dtype, seed=0, rank=None):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(B, T, n, generator=g, dtype=dtype)
    if rank is not None:  # rank-deficient tokens: z = u v^T
        z = torch.randn(B, T, rank, generator=g, dtype=dtype) @ torch.randn(rank, n, generator=g, dtype=dtype)
    W = torch.randn(n, n, generator=g, dtype=dtype) / n ** 0.5
    return z, 0.5 * (W + W.T), torch.randn(B, T, n, generator=g, dtype=dtype)


def _reference(z, A, V, act):
    """The T x T form in float64 by autograd: ``U = 2 G z A``, G the softmax over all entries (with one extra zero
    logit for the one softmax); returns ``U``, ``dz`` and ``dA``: the symmetric part of the one-product form's
    gradient, which is the update's gradient in every entry of A (``symattn.transpose_invariant``)."""
    z64 = z.detach().to(F64).requires_grad_()
    A64 = A.detach().to(F64).requires_grad_()
    a = z64 @ A64
    flat = (a @ z64.mT).flatten(-2)
    if act == "matrix_one_softmax":
        flat = torch.cat([flat, torch.zeros_like(flat[..., :1])], -1)
    T = z.shape[-2]
    G = torch.softmax(flat, -1)[..., :T * T].unflatten(-1, (T, T))
    U = 2 * G @ a
    gz, gA = torch.autograd.grad(U, (z64, A64), V.to(F64))
    return U.detach(), gz, 0.5 * (gA + gA.mT)


def _route(z, A, V, act):
    z = z.detach().requires_grad_()
    A = A.detach().requires_grad_()
    U = N.symattn_native(z, A, act)
    return (U.detach(), *torch.autograd.grad(U, (z, A), V))


def _errors(got, want):
    return [((h.to(F64) - w).abs().max() / (1 + w.abs().max())).item() for h, w in zip(got, want)]


def test_route_table(monkeypatch):
    """The native route from native_min_t(n) tokens on (per head size), the dense one below it."""
    for n, T in ((2, 4), (4, 4), (5, 32), (8, 32), (9, N.NATIVE_MIN_T), (16, N.NATIVE_MIN_T)):
        assert N.native_min_t(n) == T
        z, A, _ = _inputs(2, T, n, F32)
        assert K.explain("symattn_update", z, A, "matrix_softmax").route.name == "native/eager", (n, T)
        e = K.explain("symattn_update", z[:, :-1], A, "matrix_softmax")
        assert e.route.name == "dense/eager", (n, T)
        assert f"T = {T - 1} < {T} (n = {n})" in dict((r.name, w) for r, w in e.rejected)["native/eager"]
    z, A, _ = _inputs(2, N.NATIVE_MIN_T, 4, F32)
    e = K.explain("symattn_update", z, A, "vector_softmax")
    assert "symmetric only over all entries" in dict((r.name, w) for r, w in e.rejected)["native/eager"]
    e = K.explain("symattn_update", z, A + torch.triu(torch.ones_like(A), 1), "matrix_softmax")
    assert e.route.name == "fused/eager" and "not symmetric" in dict((r.name, w) for r, w in e.rejected)["native/eager"]
    layer = SymplecticAttention(8)
    assert layer.explain(torch.randn(3, 256, 8)).route.name == "native/eager"  # the default layer
    assert K.explain("symattn_shear", torch.randn(3, 256, 8), layer.weighting().detach()).route.name == "native/eager"
    monkeypatch.setenv("GEOATTN_NATIVE", "0")
    e = K.explain("symattn_update", z, A, "matrix_softmax")
    assert e.route.name == "sdpa/eager" and "GEOATTN_NATIVE" in dict((r.name, w) for r, w in e.rejected)["native/eager"]


@pytest.mark.parametrize("act", ALL)
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("T,n,rank", [(1, 3, None), (65, 2, None), (65, 8, 1), (256, 4, None), (300, 8, None),
                                      (17, 16, None), (5, 8, None), (4, 2, None), (4, 4, 1), (8, 4, None),
                                      (32, 8, None), (31, 8, 1)])
def test_against_the_reference(act, dtype, T, n, rank):
    """T = 1, a tail block (65, 300), d < T, d = T (n = 2 at T = 4, n = 4 at T = 8), d > T (n = 8 at T = 5, n = 16
    at T = 17), the shortest sequences the route serves (T = 4 for n <= 4, T = 32 for n = 8) and rank-one tokens."""
    z, A, V = _inputs(2, T, n, dtype, seed=T + n, rank=rank)
    errs = _errors(_route(z, A, V, act), _reference(z, A, V, act))
    C = z.to(F64) @ A.to(F64) @ z.to(F64).mT
    spread = (C.amax((-2, -1)) - C.amin((-2, -1))).max().item()
    assert max(errs) <= _tol(dtype, T, n, spread=spread), errs


@pytest.mark.parametrize("act", ALL)
def test_gradcheck(act):
    z, _, _ = _inputs(2, 5, 3, F64, seed=3)
    W = torch.randn(3, 3, dtype=F64)
    assert torch.autograd.gradcheck(lambda z, W: N.symattn_native(z, 0.5 * (W + W.T), act),
                                    (z.requires_grad_(), W.requires_grad_()))


@pytest.mark.parametrize("update,sign", [("p", 1.0), ("q", -1.0)])
def test_shear_against_the_composition(update, sign):
    """The one-call shear equals the update added to the other half, its gradients those of the composition."""
    n, T = 3, 70
    g = torch.Generator().manual_seed(11)
    x = torch.randn(2, T, 2 * n, generator=g, dtype=F64)
    W = torch.randn(n, n, generator=g, dtype=F64)
    A = 0.5 * (W + W.T)
    gy = torch.randn(2, T, 2 * n, generator=g, dtype=F64)
    assert K.explain("symattn_shear", x, A, "matrix_softmax", update, sign).route.name == "native/eager"
    xs, As = x.clone().requires_grad_(), A.clone().requires_grad_()
    y = K.symattn_shear(xs, As, "matrix_softmax", update, sign)
    got = (y.detach(), *torch.autograd.grad(y, (xs, As), gy))
    xr, Ar = x.clone().requires_grad_(), A.clone().requires_grad_()
    q, p = xr.split(n, -1)
    upd = getattr(K._generated, "symattn_update_matrix_softmax")
    yr = torch.cat([q, p + sign * upd(q, Ar)[0]], -1) if update == "p" else torch.cat([q + sign * upd(p, Ar)[0], p], -1)
    want = (yr.detach(), *torch.autograd.grad(yr, (xr, Ar), gy))
    assert max(_errors(got, want)) <= _tol(F64, T, n)


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
@pytest.mark.parametrize("T", [4, 80])
def test_batch_independence(bad, T):
    z, A, V = _inputs(4, T, 3, F32, seed=9)
    zb = z.clone()
    zb[1] = bad
    U, gz, gA = _route(zb, A, V, "matrix_softmax")
    U0, gz0, _ = _route(z, A, V, "matrix_softmax")
    keep = [0, 2, 3]
    assert torch.equal(U[keep], U0[keep]) and torch.equal(gz[keep], gz0[keep])
    if bad != bad:
        assert U[1].isnan().all()


def test_exponential_error_bound():
    """The polynomial's truncation error is a small fraction of each type's unit roundoff."""
    for real, dtype in (("f32", F32), ("f64", F64)):
        assert C.exp_error_bound(real) <= 0.125 * torch.finfo(dtype).eps


def _broken(tmp_path, fault, n, real):
    path = tmp_path / f"broken_{fault}.c"
    path.write_text(C.generate_symattn_module(broken=fault))
    lib = NS.build(n, real, str(path))
    assert not isinstance(lib, str), lib
    return lib


def test_broken_exponential_is_caught(tmp_path):
    """Negative control: the kernel's exponential without its 2^k factor misses the forward comparison."""
    z, A, V = _inputs(2, 70, 4, F32, seed=5)
    want = _reference(z, A, V, "matrix_softmax")[0]
    good, _ = NS.native_forward(z, A, False)
    bad, _ = NS.native_forward(z, A, False, library=_broken(tmp_path, "exp_scale", 4, "f32"))
    scale = _tol(F32, 70, 4) * (1 + want.abs().max())
    assert (good.to(F64) - want).abs().max() <= scale
    assert (bad.to(F64) - want).abs().max() > 10 * scale


def test_broken_backward_shift_is_caught(tmp_path):
    """Negative control: the backward with a shifted s misses the gradient comparison the real one passes."""
    z, A, V = _inputs(2, 70, 4, F64, seed=6)
    _, want_gz, _ = _reference(z, A, V, "matrix_softmax")
    U, L = NS.native_forward(z, A, False)
    gz = {}
    for name, lib in (("good", None), ("bad", _broken(tmp_path, "vjp_shift", 4, "f64"))):
        h, y = NS.native_backward(z, A, V, U, L, library=lib)
        gz[name] = 2 * (y + h @ A)
    scale = _tol(F64, 70, 4) * (1 + want_gz.abs().max())
    assert (gz["good"] - want_gz).abs().max() <= scale
    assert (gz["bad"] - want_gz).abs().max() > 1e6 * scale


def _rows_vjp(z, A, V, halved=True):
    """The kernel's backward (Note [native symplectic attention]) in float64 matrices: ``h = GV + (G o (Va^T - s))z``,
    ``y = (G o (aV^T - s))a``, ``s`` half the pairing of ``V`` with ``U`` (the whole pairing when not ``halved``)."""
    z, A, V = z.to(F64), A.to(F64), V.to(F64)
    a = z @ A
    T = z.shape[-2]
    G = torch.softmax((a @ z.mT).flatten(-2), -1).unflatten(-1, (T, T))
    s = ((V * (2 * G @ a)).sum((-2, -1)) * (0.5 if halved else 1.0))[..., None, None]
    h = G @ V + (G * (V @ a.mT - s)) @ z
    y = (G * (a @ V.mT - s)) @ a
    gA = z.mT @ h
    return 2 * (y + h @ A), (gA + gA.mT).sum(0)


def test_refuted_unhalved_vjp_in_float64():
    """``symattn.native_vjp.unhalved`` in floating point: the rows' backward with ``s`` the whole pairing misses the
    autograd gradient by far more than rounding, the stated (halved) one meets it."""
    z, A, V = _inputs(3, 9, 3, F64, seed=12)
    _, want_gz, want_gA = _reference(z, A, V, "matrix_softmax")
    scale = _tol(F64, 9, 3) * (1 + want_gz.abs().max())
    for halved in (True, False):
        gz, gA = _rows_vjp(z, A, V, halved)
        err = max((gz - want_gz).abs().max(), (gA - want_gA).abs().max())
        assert err <= scale if halved else err > 1e6 * scale, (halved, err)


def test_bad_arguments_name_both_sides():
    z, A, _ = _inputs(1, 8, 3, F32)
    with pytest.raises(ValueError, match="Expected A .* Got torch.float64"):
        NS.native_forward(z, A.double(), False)


@pytest.mark.parametrize("claim_id,verdict", [("symattn.native_vjp", "checked"),
                                              ("symattn.native_vjp.unhalved", "refuted")])
def test_claims(claim_id, verdict):
    assert get_claim(claim_id).check().level.value == verdict


@pytest.mark.parametrize("fault", NATIVE_FAULTS)
def test_vjp_residual_catches_injected_faults(fault):
    m = variables("symmetric")({"n": 2, "T": 2})
    assert alg.is_zero(native_vjp_residual()(ExpField(m["Q"], m["A"])))
    assert not alg.is_zero(native_vjp_residual(fault=fault)(ExpField(m["Q"], m["A"])))
