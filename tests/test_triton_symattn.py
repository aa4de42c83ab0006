"""The flash route of symplectic attention (Note [flash symplectic attention] in geoattn.kernels._triton_symattn)
without a GPU: Triton's interpreter (TRITON_INTERPRET=1) runs the kernels on CPU tensors inside backend("triton"),
against the sdpa route and the generated form in float64; a backward without the log-sum-exp's gradient is caught.
The same cases on a CUDA device are in tests/test_triton_cuda.py."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton")

import geoattn.kernels as K  # noqa: E402
from geoattn.errors import BackendError  # noqa: E402
from geoattn.kernels import _symattn_flash as FL  # noqa: E402
from geoattn.nn import SymplecticAttention  # noqa: E402

F16, F32, F64 = torch.float16, torch.float32, torch.float64
BM, BN = FL.BLOCKS["cpu"]


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _tol(dtype, T, n, k=32.0):
    """``k * T * n * eps``: the update sums ``T`` terms of ``n``-products, the backward two such layers."""
    return k * T * n * torch.finfo(dtype).eps


def _inputs(B, T, n, seed=0, rank=None):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(B, T, n, generator=g)
    if rank is not None:  # rank-deficient tokens: n columns spanned by `rank` of them
        z = z[..., :rank] @ torch.randn(rank, n, generator=g)
    W = torch.randn(n, n, generator=g) / n ** 0.5
    return z, 0.5 * (W + W.T), torch.randn(B, T, n, generator=g)


def _update(z, A, V, act="matrix_softmax", backend="triton", **kw):

    """``U``, ``dz``, ``dA`` of one route (the forced backend's) for the incoming gradient ``V``."""
    z, A = z.detach().clone().requires_grad_(), A.detach().clone().requires_grad_()
    with K.backend(backend):
        U = FL.symattn_flash(z, A, act, **kw) if kw else K.symattn_update(z, A, act)
    return (U.detach(), *torch.autograd.grad(U, (z, A), V))


def _reference(z, A, V, act):
    """The generated forward differentiated by autograd in float64 (its T x T softmax formed)."""
    z64, A64 = z.to(F64).requires_grad_(), A.to(F64).requires_grad_()
    U = getattr(K._generated, f"symattn_update_{act}")(z64, A64)[0]
    return (U.detach(), *torch.autograd.grad(U, (z64, A64), V.to(F64)))


def _errors(got, want):
    return [((h.to(F64) - w).abs().max() / (1 + w.abs().max())).item() for h, w in zip(got, want)]


# -- the route table -------------------------------------------------------------------------------------------------


def test_explain_gives_each_reason(monkeypatch):
    z, A, _ = _inputs(2, 9, 4)
    why = dict((r.name, w) for r, w in K.explain("symattn_update", z, A).rejected)
    assert "inside backend('triton')" in why["flash/triton"]
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    why = dict((r.name, w) for r, w in K.explain("symattn_update", z, A).rejected)
    assert "run on CUDA devices" in why["flash/triton"]
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with K.backend("triton"):
        assert K.explain("symattn_update", z, A).route.name == "flash/triton"
        assert SymplecticAttention(8).explain(torch.randn(3, 9, 8)).route.name == "flash/triton"
        for args, reason in (((z, A, "vector_softmax"), "column softmax"),
                             ((z, A + torch.triu(torch.ones_like(A), 1)), "not symmetric"),
                             ((z.double(), A.double()), "float64"),
                             ((z, A.expand(2, 4, 4)), "A batched"),
                             ((torch.randn(2, 3, 65), torch.eye(65)), "n = 65 > 64")):
            e = K.explain("symattn_update", *args)
            assert e.route is None and reason in dict((r.name, w) for r, w in e.rejected)["flash/triton"]
        with pytest.raises(BackendError, match="not symmetric"):
            K.symattn_update(z, A + torch.triu(torch.ones_like(A), 1))
    assert "symattn.sdpa_vjp" in next(ln for ln in K.route_table("symattn_update").splitlines() if "flash/triton" in ln)


# -- against the sdpa route and float64 ----------------------------------------------------------------------------


@pytest.mark.parametrize("T,n,rank", [
    (1, 2, None),  # one token
    (7, 4, None),  # an odd count, one block
    (BM + 3, 8, None),  # a tail block
    (2 * BM + 5, 16, None),  # three blocks, the widest width of the layer's defaults
    (3, 6, None),  # n > T, a width padded to 16
    (BM + 1, 8, 2),  # rank-deficient tokens
])
@pytest.mark.parametrize("act", ["matrix_softmax", "matrix_one_softmax"])
def test_update_and_gradients_match_sdpa_and_float64(T, n, rank, act):
    B = 5  # a batch size that is a multiple of nothing
    z, A, V = _inputs(B, T, n, seed=10 * T + n, rank=rank)
    got = _update(z, A, V, act)
    sdpa = _update(z, A, V, act, backend="eager")
    ref = _reference(z, A, V, act)
    tol = _tol(F32, T, n)
    assert max(_errors(got, [t.to(F64) for t in sdpa])) <= tol
    errors = _errors(got, ref)
    assert errors[0] <= tol and max(errors[1:]) <= 2 * tol, errors
    assert torch.equal(got[2], got[2].mT)  # symmetric, symattn.transpose_invariant


def test_half_tokens_are_computed_in_float32():
    z, A, V = _inputs(3, BM + 2, 4, seed=1)
    zh = z.half()
    a = (zh.float() @ A).half()
    O, lse = FL.flash_forward(a.contiguous(), zh.contiguous())
    S = a.double() @ zh.double().mT
    P = torch.softmax(S, -1)
    assert (O.double() - P @ a.double()).abs().max() <= _tol(F32, BM + 2, 4) * (1 + a.double().abs().max())
    assert (lse.double() - torch.logsumexp(S, -1)).abs().max() <= _tol(F32, BM + 2, 4) * (1 + S.abs().max())
    U = K.symattn_update(zh, A.half())  # the public function computes half in float32 (any route)
    with K.backend("triton"):
        Ut = K.symattn_update(zh, A.half())
    assert Ut.dtype == F16 and (Ut.double() - U.double()).abs().max() <= 4 * torch.finfo(F16).eps * (
        1 + U.double().abs().max())


def test_empty_batch_and_broadcast_batch_shapes():
    z, A, V = _inputs(1, 5, 4)
    with K.backend("triton"):
        assert K.symattn_update(torch.empty(0, 5, 4), A).shape == (0, 5, 4)
        U = K.symattn_update(z.view(5, 4), A)  # unbatched
    ref = _reference(z.view(5, 4), A, V.view(5, 4), "matrix_softmax")[0]
    assert U.shape == (5, 4) and _errors([U], [ref])[0] <= _tol(F32, 5, 4)


def test_a_graph_of_the_backward_takes_the_generated_vjp():
    z, A, V = _inputs(2, 6, 4, seed=3)
    z = z.requires_grad_()
    with K.backend("triton"):
        U = K.symattn_update(z, A)
    (gz,) = torch.autograd.grad(U, z, V, create_graph=True)
    (ggz,) = torch.autograd.grad((gz * gz).sum(), z)
    z64 = z.detach().double().requires_grad_()
    U64 = K._generated.symattn_update_matrix_softmax(z64, A.double())[0]
    (g64,) = torch.autograd.grad(U64, z64, V.double(), create_graph=True)
    (gg64,) = torch.autograd.grad((g64 * g64).sum(), z64)
    assert _errors([gz, ggz], [g64, gg64])[1] <= 4 * _tol(F32, 6, 4)


def test_the_gradient_of_a_sum_an_expanded_incoming_gradient():
    z, A, _ = _inputs(3, BM + 1, 4, seed=6)
    z = z.requires_grad_()
    with K.backend("triton"):
        K.symattn_update(z, A).sum().backward()
    ref = _reference(z.detach(), A, torch.ones_like(z), "matrix_softmax")[1]
    assert _errors([z.grad], [ref])[0] <= 2 * _tol(F32, BM + 1, 4)


# -- batch independence ----------------------------------------------------------------------------------------------


def test_a_nan_or_huge_sample_does_not_touch_its_neighbours():
    B, T, n = 7, BM + 3, 4
    z, A, V = _inputs(B, T, n, seed=4)
    z[2, 3, 1] = float("nan")
    z[5] *= 1e6
    keep = [0, 1, 3, 4, 6]
    U, gz, _ = _update(z, A, V)
    Uc, gzc, _ = _update(z[keep], A, V[keep])
    assert torch.isnan(U[2]).all() and torch.isnan(gz[2]).all()
    assert torch.equal(U[keep], Uc) and torch.equal(gz[keep], gzc)  # each sample is a program of its own


# -- negative control --------------------------------------------------------------------------------------------------


def test_negative_control_the_backward_without_the_lse_gradient_is_caught():
    T, n = BM + 3, 4
    z, A, V = _inputs(3, T, n, seed=5)
    good, bad = _update(z, A, V), _update(z, A, V, drop_lse=True)
    ref = _reference(z, A, V, "matrix_softmax")
    assert torch.equal(good[0], bad[0])  # the same forward
    assert max(_errors(good, ref)[1:]) <= 2 * _tol(F32, T, n)
    assert min(_errors(bad, ref)[1:]) > 2 * _tol(F32, T, n)  # the check of the test above fails it


def test_bad_arguments_say_what_was_expected():
    z = torch.randn(2, 5, 4)
    with pytest.raises(ValueError, match=r"Expected a contiguous, of shape \(2, 5, 4\).*Got .*\(not contiguous\)"):
        FL.flash_forward(z.mT.contiguous().mT, z)
    with pytest.raises(ValueError, match=r"Expected z of shape \(B, T, n\).*Got shape \(5, 4\)"):
        FL.flash_forward(z[0], z[0])


# -- the kernels compile for a GPU (Triton's compiler runs without a device) ----------------------------------------


def test_kernels_compile_for_sm90_in_ieee_float32(monkeypatch):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    k = K._triton.written_kernels("_triton_symattn")
    rows = {"lse_ptr": "*fp32", "delta_ptr": "*fp32", "glse_ptr": "*fp32"}
    ints = {"T": "i32", "N": "i32"}
    kernels = {  # the tokens in bfloat16 (loaded and converted), everything else float32
        k.symattn_fwd: {"a_ptr": "*bf16", "z_ptr": "*bf16", "o_ptr": "*fp32", "lse_ptr": "*fp32", **ints},
        k.symattn_bwd_kv: {"a_ptr": "*bf16", "z_ptr": "*bf16", "go_ptr": "*fp32", **rows, "gk_ptr": "*fp32",
                           "gv_ptr": "*fp32", **ints},
        k.symattn_bwd_q: {"a_ptr": "*bf16", "z_ptr": "*bf16", "go_ptr": "*fp32", **rows, "gq_ptr": "*fp32", **ints},
    }
    bm, bn = FL.BLOCKS["cuda"]
    for fn, signature in kernels.items():
        consts = {"BLOCK_M": bm, "BLOCK_N": bn, "D": 16, **({} if fn is k.symattn_fwd else {"DROP_LSE": False})}
        signature = {**signature, **{c: "constexpr" for c in consts}}
        try:
            compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=consts),
                                      target=GPUTarget("cuda", 90, 32))
        except (ImportError, FileNotFoundError) as err:  # a triton without its CUDA backend or ptxas
            pytest.skip(f"Triton's CUDA compiler is not available here: {err}")
        ptx = compiled.asm["ptx"]
        assert ".target sm_90" in ptx and "ld.global" in ptx and "st.global" in ptx
        assert "tf32" not in ptx  # the products in IEEE float32
