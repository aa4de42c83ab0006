"""The dense route of symplectic attention (Note [dense symplectic attention]): the route table, the update and
its backward against a float64 reference, gradcheck, batch independence, the claims and their float confirmation,
negative controls."""

import pytest
import torch

from geoattn import kernels as K
from geoattn.kernels import _symattn_dense as D
from geoattn.kernels import _symattn_fused as F
from geoattn.kernels._symattn_fused import _softmax_rows_
from geoattn.nn import SymplecticAttention
from geoattn.symbolic import algebra as alg
from geoattn.symbolic import get_claim
from geoattn.symbolic.claims._exp_exact import ExpField
from geoattn.symbolic.claims._symattn_dense_exact import DENSE_FAULTS, dense_vjp_residual
from geoattn.symbolic.claims._symattn_exact import variables
from geoattn.symbolic.claims._symattn_sdpa_exact import _fixed_v

F32, F64 = torch.float32, torch.float64
ALL = ("matrix_softmax", "matrix_one_softmax")


def _tol(dtype, T, n, k=32.0):
    """``k * size * eps``: the update sums ``T^2`` terms of ``n``-products, the backward two such layers."""
    return k * T * n * torch.finfo(dtype).eps


def _inputs(B, T, n, dtype, seed=0, rank=None):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(B, T, n, generator=g, dtype=dtype)
    if rank is not None:  # rank-deficient rows: z = x y with x (T, rank)
        z = torch.randn(B, T, rank, generator=g, dtype=dtype) @ torch.randn(rank, n, generator=g, dtype=dtype)
    W = torch.randn(n, n, generator=g, dtype=dtype) / n ** 0.5
    return z, 0.5 * (W + W.T), torch.randn(B, T, n, generator=g, dtype=dtype)


def _reference(z, A, V, act):
    """The generated ``T x T`` forward differentiated by autograd in float64: ``U``, ``dz``, ``dA``."""
    z64 = z.detach().to(F64).requires_grad_()
    A64 = A.detach().to(F64).requires_grad_()
    U = getattr(K._generated, f"symattn_update_{act}")(z64, A64)[0]
    return (U.detach(), *torch.autograd.grad(U, (z64, A64), V.to(F64)))


def _route(z, A, V, act):
    z = z.detach().requires_grad_()
    A = A.detach().requires_grad_()
    U = D.symattn_dense(z, A, act)
    return (U.detach(), *torch.autograd.grad(U, (z, A), V))


def _errors(got, want):
    return [((h.to(F64) - w).abs().max() / (1 + w.abs().max())).item() for h, w in zip(got, want)]


def test_route_table(monkeypatch):
    monkeypatch.setenv("GEOATTN_NATIVE", "0")  # above DENSE_MAX_T the native route serves first where it is built
    z, A, _ = _inputs(2, 16, 4, F32)
    assert K.explain("symattn_update", z, A, "matrix_softmax").route.name == "dense/eager"
    longer = K.explain("symattn_update", torch.randn(2, D.DENSE_MAX_T + 1, 4), A, "matrix_softmax")
    why = dict((r.name, w) for r, w in longer.rejected)["dense/eager"]
    assert longer.route.name == "sdpa/eager" and "T = 65" in why
    many = torch.randn(D.KEEP_ENTRIES // D.DENSE_MAX_T ** 2 + 1, D.DENSE_MAX_T, 1)  # G not kept: still dense
    assert K.explain("symattn_update", many, A[:1, :1]).route.name == "dense/eager"
    e = K.explain("symattn_update", z, A + torch.triu(torch.ones_like(A), 1), "matrix_softmax")
    assert e.route.name == "fused/eager" and "not symmetric" in dict((r.name, w) for r, w in e.rejected)["dense/eager"]
    e = K.explain("symattn_update", z, A, "vector_softmax")
    why = dict((r.name, w) for r, w in e.rejected)["dense/eager"]
    assert e.route.name == "fused/eager" and "over all entries" in why
    assert SymplecticAttention(8).explain(torch.randn(3, 16, 8)).route.name == "dense/eager"


@pytest.mark.parametrize("act", ALL)
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("T,n,rank", [(1, 3, None), (2, 5, None), (4, 4, None), (7, 3, None), (16, 4, None),
                                      (32, 8, None), (16, 6, 2), (64, 3, None)])
def test_against_the_float64_reference(act, dtype, T, n, rank):
    """``n`` below, equal to and above ``T``, and rank-deficient rows."""
    z, A, V = _inputs(3, T, n, dtype, seed=T + n, rank=rank)
    errs = _errors(_route(z, A, V, act), _reference(z, A, V, act))
    assert max(errs) <= _tol(dtype, T, n), errs


@pytest.fixture(params=["kept", "recomputed"])
def blocks(request, monkeypatch):
    """Blocks of two samples, with every block's ``G`` kept or each recomputed in the backward."""
    monkeypatch.setattr(F, "BLOCK_ENTRIES", 2 * 64 * 64)
    monkeypatch.setattr(D, "KEEP_ENTRIES", 2 ** 40 if request.param == "kept" else 0)
    return request.param


@pytest.mark.parametrize("act", ALL)
@pytest.mark.parametrize("T,n", [(64, 2), (64, 8), (5, 3)])
def test_blocks_against_the_float64_reference(act, T, n, blocks):
    z, A, V = _inputs(5, T, n, F32, seed=T * n)
    errs = _errors(_route(z, A, V, act), _reference(z, A, V, act))
    assert max(errs) <= _tol(F32, T, n), errs


@pytest.mark.parametrize("act", ALL)
def test_gradcheck(act):
    z, A, _ = _inputs(2, 5, 3, F64, seed=3)
    W = torch.randn(3, 3, dtype=F64)
    assert torch.autograd.gradcheck(lambda z, W: D.symattn_dense(z, 0.5 * (W + W.T), act),
                                    (z.requires_grad_(), W.requires_grad_()))


def test_backward_twice_and_graph_of_the_backward():
    z, A, V = _inputs(2, 6, 3, F64, seed=2)
    z.requires_grad_()
    U = D.symattn_dense(z, A, "matrix_one_softmax")
    g1, = torch.autograd.grad(U, z, V, retain_graph=True)
    g2, = torch.autograd.grad(U, z, V, retain_graph=True)
    assert torch.equal(g1, g2)
    g3, = torch.autograd.grad(U, z, V, create_graph=True)
    assert g3.requires_grad and (g3 - g1).abs().max() <= _tol(F64, 6, 3) * g1.abs().max()


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
def test_batch_independence(bad, blocks):
    z, A, V = _inputs(4, 12, 3, F32, seed=9)
    zb = z.clone()
    zb[1] = bad
    U, gz, _ = _route(zb, A, V, "matrix_softmax")
    U0, gz0, _ = _route(z, A, V, "matrix_softmax")
    keep = [0, 2, 3]
    assert torch.equal(U[keep], U0[keep]) and torch.equal(gz[keep], gz0[keep])


def _unshifted_gz(z, A, V, one):
    """The route's backward without the softmax backward's shift (symattn.dense_vjp.unshifted)."""
    a = z @ A
    G = _softmax_rows_(a @ z.mT, True, one)
    gC = G * (V @ a.mT)
    h = G @ V + gC @ z
    return 2 * (gC.mT @ a + h @ A)


def test_dropping_the_shift_is_caught(monkeypatch):
    """Negative control: the route with its softmax backward replaced by one without ``<G, gG> G`` misses the
    comparison that the shipped route passes."""
    z, A, V = _inputs(2, 10, 3, F64, seed=4)
    _, want, _ = _reference(z, A, V, "matrix_softmax")
    _, good, _ = _route(z, A, V, "matrix_softmax")
    assert (good - want).abs().max() <= _tol(F64, 10, 3) * want.abs().max()
    monkeypatch.setattr(D, "_softmax_backward_", lambda g, G: g.mul_(G))
    _, bad, _ = _route(z, A, V, "matrix_softmax")
    assert (bad - want).abs().max() > 1e3 * _tol(F64, 10, 3) * want.abs().max()
    assert (_unshifted_gz(z, A, V, False) - bad).abs().max() <= _tol(F64, 10, 3) * want.abs().max()


@pytest.mark.parametrize("claim_id,verdict", [("symattn.dense_vjp", "checked"),
                                              ("symattn.dense_vjp.unshifted", "refuted")])
def test_claims(claim_id, verdict):
    assert get_claim(claim_id).check().level.value == verdict


@pytest.mark.parametrize("fault", DENSE_FAULTS)
def test_vjp_residual_catches_injected_faults(fault):
    """The residual behind symattn.dense_vjp is zero for the route's form; each fault is nonzero for a general A
    (with a symmetric A's shared symbols the unsymmetrised gradient sums to the same entries)."""
    m = variables("symmetric")({"n": 2, "T": 2})
    assert alg.is_zero(dense_vjp_residual()(ExpField(m["Q"], m["A"])))
    g = variables("symmetric" if fault == "unshifted" else "general")({"n": 1 if fault == "unshifted" else 2, "T": 2})
    assert not alg.is_zero(dense_vjp_residual(fault=fault)(ExpField(g["Q"], g["A"])))


def test_refuted_unshifted_vjp_in_float64():
    """The counterexample of symattn.dense_vjp.unshifted, evaluated in float64, misses the true gradient."""
    ce = get_claim("symattn.dense_vjp.unshifted").check().counterexample
    Q, Am = ce.values["Q"], ce.values["A"]
    z = torch.tensor([[float(x) for x in Q.T.row(i)] for i in range(Q.cols)], dtype=F64).unsqueeze(0)
    A = torch.tensor([[float(x) for x in Am.row(i)] for i in range(Am.rows)], dtype=F64)
    T, n = z.shape[-2:]
    V = torch.tensor([[float(x) for x in _fixed_v(T, n).row(i)] for i in range(T)], dtype=F64).unsqueeze(0)
    _, want, _ = _reference(z, A, V, "matrix_softmax")
    assert (_unshifted_gz(z, A, V, False) - want).abs().max() > 1e3 * _tol(F64, T, n) * want.abs().max()


@pytest.mark.parametrize("shape", [(2, 0, 4), (0, 5, 4), (0, 0, 4)])
def test_empty_inputs_take_the_empty_route(shape):
    z = torch.randn(*shape, requires_grad=True)
    A = torch.eye(4, requires_grad=True)
    assert K.explain("symattn_update", z, A).route.name == "empty/eager"
    U = K.symattn_update(z, A)
    U.sum().backward()
    assert U.shape == shape and z.grad.shape == shape and not A.grad.any()
    x = torch.randn(*shape[:-1], 8, requires_grad=True)
    y = SymplecticAttention(8)(x)
    y.sum().backward()
    assert y.shape == x.shape and x.grad.shape == x.shape
