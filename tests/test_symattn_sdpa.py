"""The sdpa route of symplectic attention (Note [symplectic attention through SDPA]): the route table, the update
and its backward against the generated form in float64, batch independence, the claims and their float
confirmations, negative controls."""

import pytest
import torch

from geoattn import kernels as K
from geoattn.kernels import _symattn_sdpa as S
from geoattn.nn import SymplecticAttention
from geoattn.symbolic import algebra as alg
from geoattn.symbolic import get_claim
from geoattn.symbolic.claims._exp_exact import ExpField
from geoattn.symbolic.claims._symattn_exact import variables
from geoattn.symbolic.claims._symattn_sdpa_exact import FAULTS, _fixed_v, sdpa_vjp_residual

F32, F64 = torch.float32, torch.float64
ALL = ("matrix_softmax", "matrix_one_softmax")
pytestmark = pytest.mark.skipif(not S.HAVE_FLASH, reason="this torch has no fused CPU attention kernel")


def _tol(dtype, T, n, k=32.0):
    """``k * size * eps``: the update sums ``T`` terms of ``n``-products, the backward two such layers."""
    return k * T * n * torch.finfo(dtype).eps


def _inputs(B, T, n, dtype, seed=0, symmetric=True):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(B, T, n, generator=g, dtype=dtype)
    W = torch.randn(n, n, generator=g, dtype=dtype) / n ** 0.5
    A = 0.5 * (W + W.T) if symmetric else W
    return z, A, torch.randn(B, T, n, generator=g, dtype=dtype)


def _generated(z, A, V, act):
    """The generated forward differentiated by autograd, in float64: ``U``, ``dz``, ``dA`` (A a general leaf)."""
    z64 = z.detach().to(F64).requires_grad_()
    A64 = A.detach().to(F64).requires_grad_()
    U = getattr(K._generated, f"symattn_update_{act}")(z64, A64)[0]
    return (U.detach(), *torch.autograd.grad(U, (z64, A64), V.to(F64)))


def _route(z, A, V, act):
    z = z.detach().requires_grad_()
    A = A.detach().requires_grad_()
    U = S.symattn_sdpa(z, A, act)
    return (U.detach(), *torch.autograd.grad(U, (z, A), V))


def _errors(got, want):
    return [((h.to(F64) - w).abs().max() / (1 + w.abs().max())).item() for h, w in zip(got, want)]


def test_route_table(monkeypatch):
    monkeypatch.setenv("GEOATTN_NATIVE", "0")  # the native route serves these first (tests/test_symattn_native.py)
    z, A, _ = _inputs(2, 72, 4, F32)  # longer than the dense route's sequences
    assert K.explain("symattn_update", z, A, "matrix_softmax").route.name == "sdpa/eager"
    e = K.explain("symattn_update", z, A + torch.triu(torch.ones_like(A), 1), "matrix_softmax")
    assert e.route.name == "fused/eager" and "not symmetric" in dict((r.name, w) for r, w in e.rejected)["sdpa/eager"]
    e = K.explain("symattn_update", z, A, "vector_softmax")
    assert e.route.name == "fused/eager" and "column softmax" in dict((r.name, w) for r, w in e.rejected)["sdpa/eager"]
    assert SymplecticAttention(8).explain(torch.randn(3, 72, 8)).route.name == "sdpa/eager"  # the default layer
    general = SymplecticAttention(8, symmetric=False).explain(torch.randn(3, 72, 8))
    assert general.route.name == "fused/eager"


@pytest.mark.parametrize("act", ALL)
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("T,n", [(1, 3), (2, 5), (7, 3), (16, 4), (33, 8), (64, 2)])
def test_against_the_generated_form(act, dtype, T, n):
    z, A, V = _inputs(3, T, n, dtype, seed=T + n)
    errs = _errors(_route(z, A, V, act), _generated(z, A, V, act))
    assert max(errs) <= _tol(dtype, T, n), errs


@pytest.mark.parametrize("act", ALL)
def test_gradcheck(act):
    z, A, _ = _inputs(2, 5, 3, F64, seed=3)
    W = torch.randn(3, 3, dtype=F64)
    assert torch.autograd.gradcheck(lambda z, W: S.symattn_sdpa(z, 0.5 * (W + W.T), act),
                                    (z.requires_grad_(), W.requires_grad_()))


def test_weighting_gradient_is_the_general_one():
    """At a symmetric leaf A the route returns the gradient in every entry of A (symattn.transpose_invariant),
    not only its symmetric directions; the one-product form's own gradient differs from it (negative control)."""
    z, A, V = _inputs(2, 9, 4, F64, seed=5)
    _, _, gA = _route(z, A, V, "matrix_softmax")
    _, _, want = _generated(z, A, V, "matrix_softmax")
    assert (gA - want).abs().max() <= _tol(F64, 9, 4) * want.abs().max()
    A1 = A.clone().requires_grad_()
    z1 = z.clone().requires_grad_()
    q = z1 @ A1
    P = torch.softmax(q @ z1.mT, -1)
    w = torch.softmax(torch.logsumexp(q @ z1.mT, -1), -1)
    raw, = torch.autograd.grad(2 * w.unsqueeze(-1) * (P @ q), A1, V)
    assert (raw - want).abs().max() > 1e3 * _tol(F64, 9, 4) * want.abs().max()


def test_backward_twice_and_graph_of_the_backward():
    z, A, V = _inputs(2, 6, 3, F64, seed=2)
    z.requires_grad_()
    U = S.symattn_sdpa(z, A, "matrix_softmax")
    g1, = torch.autograd.grad(U, z, V, retain_graph=True)
    g2, = torch.autograd.grad(U, z, V, retain_graph=True)
    assert torch.equal(g1, g2)
    g3, = torch.autograd.grad(U, z, V, create_graph=True)
    assert g3.requires_grad and (g3 - g1).abs().max() <= _tol(F64, 6, 3) * g1.abs().max()


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
def test_batch_independence(bad):
    z, A, V = _inputs(4, 12, 3, F32, seed=9)
    zb = z.clone()
    zb[1] = bad
    U, gz, _ = _route(zb, A, V, "matrix_softmax")
    U0, gz0, _ = _route(z, A, V, "matrix_softmax")
    keep = [0, 2, 3]
    assert torch.equal(U[keep], U0[keep]) and torch.equal(gz[keep], gz0[keep])


def test_dropping_the_lse_gradient_is_caught():
    """Negative control: the attention backward without the log-sum-exp's gradient (the kernel as for its output
    alone) misses the comparison that the route passes."""
    z, A, V = _inputs(2, 10, 3, F64, seed=4)
    n = 3
    qk = torch.zeros(2, 20, n + 1, dtype=F64)
    qk[0, :, :n] = z.reshape(-1, n) @ A
    qk[1, :, :n] = z.reshape(-1, n)
    q, k = (t.view(2, 1, 10, n + 1) for t in qk)
    out, lse = S._FLASH(q, k, q, 0.0, False, scale=1.0)
    w = torch.softmax(lse[:, 0], -1)
    g_out = torch.zeros_like(out)
    g_out[:, 0, :, :n] = 2 * w.unsqueeze(-1) * V
    gq, gk, gv = S._FLASH_BACKWARD(g_out, q, k, q, out, lse, 0.0, False, scale=1.0)
    gz = gk[:, 0, :, :n] + (gq + gv)[:, 0, :, :n] @ A.mT
    _, want, _ = _generated(z, A, V, "matrix_softmax")
    _, good, _ = _route(z, A, V, "matrix_softmax")
    assert (good - want).abs().max() <= _tol(F64, 10, 3) * want.abs().max()
    assert (gz - want).abs().max() > 1e3 * _tol(F64, 10, 3) * want.abs().max()


# -- the claims behind the route ---------------------------------------------------------------------------------


@pytest.mark.parametrize("claim_id,verdict", [
    ("symattn.sdpa_form", "checked"), ("symattn.sdpa_form.general", "refuted"),
    ("symattn.sdpa_vjp", "checked"), ("symattn.sdpa_vjp.without_lse", "refuted"),
    ("symattn.transpose_invariant", "checked"), ("symattn.transpose_invariant.columns", "refuted")])
def test_claims(claim_id, verdict):
    assert get_claim(claim_id).check().level.value == verdict


@pytest.mark.parametrize("fault", FAULTS)
def test_vjp_residual_catches_injected_faults(fault):
    """The residual behind symattn.sdpa_vjp is zero for the route's form; each fault is nonzero for a general A
    (with a symmetric A's shared symbols the unsymmetrised gradient sums to the same entries)."""
    m = variables("symmetric")({"n": 2, "T": 2})
    assert alg.is_zero(sdpa_vjp_residual()(ExpField(m["Q"], m["A"])))
    g = variables("general")({"n": 1, "T": 2} if fault == "drop_lse" else {"n": 2, "T": 2})
    assert not alg.is_zero(sdpa_vjp_residual(fault=fault)(ExpField(g["Q"], g["A"])))


def _values(claim_id):
    v = get_claim(claim_id).check()
    ce = v.counterexample
    z = torch.tensor([[float(x) for x in ce.values["Q"].T.row(i)] for i in range(ce.values["Q"].cols)], dtype=F64)
    A = torch.tensor([[float(x) for x in ce.values["A"].row(i)] for i in range(ce.values["A"].rows)], dtype=F64)
    return z.unsqueeze(0), A


def _scale(*ts):
    return max(float(t.abs().max()) for t in ts)


def test_refuted_general_form_in_float64():
    z, A = _values("symattn.sdpa_form.general")
    U = getattr(K._generated, "symattn_update_matrix_softmax")(z, A)[0]
    q = z @ A
    form = 2 * torch.softmax(torch.logsumexp(q @ z.mT, -1), -1).unsqueeze(-1) * (torch.softmax(q @ z.mT, -1) @ q)
    one = getattr(K._generated, "symattn_update_matrix_one_softmax")(z, A)[0]
    assert max((U - form).abs().max(), (one - form).abs().max()) > 1e3 * _tol(F64, 2, 2) * _scale(U, one)


def test_refuted_vjp_without_lse_in_float64():
    z, A = _values("symattn.sdpa_vjp.without_lse")
    T, n = z.shape[-2:]
    V = torch.tensor([[float(x) for x in _fixed_v(T, n).row(i)] for i in range(T)], dtype=F64).unsqueeze(0)
    q = z @ A
    P = torch.softmax(q @ z.mT, -1)
    w = torch.softmax(torch.logsumexp(q @ z.mT, -1), -1)
    O, gO = P @ q, 2 * w.unsqueeze(-1) * V
    gC = P * (gO @ q.mT - (gO * O).sum(-1, keepdim=True))
    ga = gC @ z + P.mT @ gO
    gz = gC.mT @ q + ga @ A.mT
    _, want, _ = _generated(z, A, V, "matrix_softmax")
    assert (gz - want).abs().max() > 1e3 * _tol(F64, T, n) * _scale(want)


def test_refuted_column_transpose_invariance_in_float64():
    z, A = _values("symattn.transpose_invariant.columns")
    f = getattr(K._generated, "symattn_update_vector_softmax")
    U, Ut = f(z, A)[0], f(z, A.mT)[0]
    assert (U - Ut).abs().max() > 1e3 * _tol(F64, 2, 2) * _scale(U)


def test_batched_incoming_gradients_and_forward_mode():
    """``is_grads_batched=True`` takes the generated form's VJP; a forward-mode tangent takes another route."""
    z, A, V = _inputs(2, 7, 3, F64, seed=6)
    z.requires_grad_()
    U = K.symattn_update(z, A, "matrix_softmax")
    Vs = torch.stack([V, 2 * V])
    got, = torch.autograd.grad(U, z, Vs, is_grads_batched=True)
    _, want, _ = _generated(z, A, V, "matrix_softmax")
    assert (got[0] - want).abs().max() <= _tol(F64, 7, 3) * want.abs().max()
    assert (got[1] - 2 * want).abs().max() <= 2 * _tol(F64, 7, 3) * want.abs().max()
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        zd = fwAD.make_dual(z.detach(), V)
        assert K.explain("symattn_update", zd, A, "matrix_softmax").route.name != "sdpa/eager"
        tangent = fwAD.unpack_dual(K.symattn_update(zd, A, "matrix_softmax")).tangent
    generated = getattr(K._generated, "symattn_update_matrix_softmax")
    jvp = torch.func.jvp(lambda q: generated(q, A)[0], (z.detach(),), (V,))[1]
    assert (tangent - jvp).abs().max() <= _tol(F64, 7, 3) * jvp.abs().max()
