"""The closed-form Gram kernels for d <= 4 (vp.gram_closed_form, vp.gram_closed_form_vjp) and their runtime
(geoattn.kernels._gram)."""

from __future__ import annotations

import pytest
import sympy as sp
import torch

from geoattn.kernels import dispatch
from conftest import full64

import geoattn.kernels as K
from geoattn.codegen.printer import CodegenError
from geoattn.codegen.soa import SoAKernelPrinter
from geoattn.kernels import _generated as gen
from geoattn.kernels import _gram, _native
from geoattn.symbolic import expressions as ex
from geoattn.symbolic.claims import vp_gram
from geoattn.symbolic.strategies import search_counterexample

F32, F64 = torch.float32, torch.float64


def skew(d, dtype=F32, scale=1.0):
    w = torch.randn(d, d, dtype=dtype) * scale
    return w - w.mT


def inputs(B, T, d, rank1=False, dtype=F32):
    if rank1:  # every token a multiple of the first
        return (torch.randn(B, T, 1) * torch.randn(B, 1, d)).to(dtype)
    return torch.randn(B, T, d, dtype=dtype)


# -- the claims and their negative controls ---------------------------------------------------------------------


def test_closed_form_identity_holds_up_to_d4_and_fails_at_d5():
    ident = vp_gram.closed_form_identity()
    assert search_counterexample(ident, [{"d": 2}, {"d": 3}, {"d": 4}], seed=0, points=2) is None
    # negative control: at d = 5 the Cayley--Hamilton relation has a fifth-order term; the form is wrong
    assert search_counterexample(ident, [{"d": 5}], seed=0, points=1) is not None


@pytest.mark.parametrize("mutant", ["J = G A", "J = -A G", "N without 1/D", "N transposed"])
def test_negative_control_broken_forward_bindings_are_refuted(mutant, monkeypatch):
    """A wrong sign convention for J or a wrong binding for N must fail the identity, not only a broken N_u."""
    ident = vp_gram.closed_form_identity()
    sizes = [{"d": 2}, {"d": 3}]
    binds = dict(ex.GRAM_CLOSED)
    Nu = sp.MatrixSymbol("Nu", ex.d, ex.d)
    if mutant == "J = G A":
        binds["J"] = ex.Gram * ex.A
    elif mutant == "J = -A G":
        binds["J"] = -ex.A * ex.Gram
    elif mutant == "N without 1/D":
        binds["N"] = 2 * Nu
    else:
        binds["N"] = Nu.T * (1 / ex.GRAM_CLOSED_DET)
    assert list(binds.items()) != ex.GRAM_CLOSED  # the mutant changed a binding
    monkeypatch.setattr(ex, "GRAM_CLOSED", list(binds.items()))
    assert search_counterexample(ident, sizes, seed=0, points=1) is not None


@pytest.mark.parametrize("name", ["H", "gx", "gA", "y"])
def test_negative_control_a_broken_layer_binding_is_refuted(monkeypatch, name):
    # the claim evaluates the layer bindings (the native kernels' sources): a wrong sign in any of the backward's
    # bindings or in the forward's output must be refuted
    ident = vp_gram.closed_vjp_identity()
    sizes = [{"T": 3, "d": 2}, {"T": 5, "d": 4}]
    assert search_counterexample(ident, sizes, seed=1, points=1) is None
    A, Mbar = ex.A, sp.MatrixSymbol("Mbar", ex.d, ex.d)
    P, H, Gram = (sp.MatrixSymbol(n, ex.d, ex.d) for n in ("P", "H", "Gram"))
    broken = {"H": A * Mbar.T + Mbar * A, "gx": ex.Gy * P.T - ex.x * H, "gA": Gram * Mbar.T, "y": -ex.x * P}[name]
    table = "GRAM_CLOSED_LAYER" if name == "y" else "GRAM_CLOSED_LAYER_VJP"
    monkeypatch.setattr(ex, table, [(n, broken if n == name else e) for n, e in getattr(ex, table)])
    assert search_counterexample(ident, sizes, seed=1, points=1) is not None


# -- the structure-of-arrays printer ----------------------------------------------------------------------------


def test_soa_printer_prints_products_traces_and_refuses_inverses():
    P, Q = sp.MatrixSymbol("P", ex.d, ex.d), sp.MatrixSymbol("Q", ex.d, ex.d)
    pr = SoAKernelPrinter({P: "P", Q: "Q"}, {ex.d: ("P", 0)}, "P")
    assert pr.doprint(P * Q.T) == "soa_mm(P, Q.transpose(0, 1))"
    assert pr.coefficient(sp.Trace(P * Q)) == "soa_tr_mm(P, Q)"
    with pytest.raises(CodegenError, match="structure-of-arrays"):
        pr.doprint(P * sp.Inverse(Q))


def test_soa_printer_refuses_accumulation_and_compound_squares():
    P, Q = sp.MatrixSymbol("P", ex.d, ex.d), sp.MatrixSymbol("Q", ex.d, ex.d)
    with pytest.raises(CodegenError, match="accumulate=False"):
        SoAKernelPrinter({P: "P"}, {}, "P", accumulate=True)
    pr = SoAKernelPrinter({P: "P", Q: "Q"}, {}, "P")
    with pytest.raises(CodegenError, match="bound to a name"):
        pr.doprint(sp.MatPow(P + Q, 2))


def test_soa_helpers_match_batched_matrix_products():
    torch.manual_seed(0)
    a, b = torch.randn(7, 4, 4, dtype=F64), torch.randn(7, 4, 4, dtype=F64)
    soa = lambda m: m.permute(1, 2, 0).contiguous()  # noqa: E731
    eps = torch.finfo(F64).eps
    assert (gen.soa_mm(soa(a), soa(b)) - soa(a @ b)).abs().max() <= 16 * 4 * eps
    shared = soa(a[:1])  # (4, 4, 1): one matrix for the whole batch, the matrix-product path
    assert (gen.soa_mm(shared, soa(b)) - soa(a[:1] @ b)).abs().max() <= 16 * 4 * eps
    assert (gen.soa_tr_mm(soa(a), soa(b)) - (a @ b).diagonal(dim1=-2, dim2=-1).sum(-1)).abs().max() <= 64 * eps
    assert torch.equal(gen.soa_tr(soa(a)), a.diagonal(dim1=-2, dim2=-1).sum(-1))


def test_generated_closed_kernel_matches_the_inverse():
    torch.manual_seed(1)
    for d in (1, 2, 3, 4):
        x = torch.randn(64, 9, d, dtype=F64)
        A = skew(d, F64)
        G = x.mT @ x
        N, P, R = gen.vp_gram_closed(G.permute(1, 2, 0).contiguous(), A[..., None])
        ref = torch.linalg.inv(torch.eye(d, dtype=F64) + G @ A).mT
        cond = torch.linalg.cond(torch.eye(d, dtype=F64) + G @ A).max()
        assert (N.permute(2, 0, 1) - ref).abs().max() <= 64 * d * torch.finfo(F64).eps * cond * ref.abs().max()
        eye = torch.eye(d, dtype=F64)
        assert torch.equal(P, 2 * N - eye[..., None])
        want = ((eye + G @ A).mT @ N.permute(2, 0, 1) - eye).permute(1, 2, 0)
        assert (R - want).abs().max() <= 64 * d * torch.finfo(F64).eps * (1 + want.abs().max()) * cond


# -- the runtime ------------------------------------------------------------------------------------------------


def _closed(x, A):
    """The closed-form Function as the vp_attention routes call it: native where the table would take it."""
    native = (dispatch.forced_backend() != "eager" and x.device.type == "cpu"
              and _native.native_status(x.shape[-1])[0])
    return _gram._VPGramClosed.apply(x, A, native)


@pytest.fixture(params=["native", "eager"])
def path(request, monkeypatch):
    """Run a runtime test through the native kernels and through the eager structure-of-arrays form; ``calls``
    counts the native forward's calls, so a test can assert which one served."""
    if request.param == "native":
        ok, why = _native.native_status(4)
        if not ok:
            pytest.skip(f"the native kernels cannot run here: {why}")
    monkeypatch.setattr(dispatch, "_FORCED", [] if request.param == "native" else ["eager"])
    calls = []
    real = _native.gram_forward

    def counted(*args):
        calls.append(args[0].shape)
        return real(*args)

    monkeypatch.setattr(_native, "gram_forward", counted)
    path = type("Path", (), {})()
    path.name, path.calls = request.param, calls
    path.served = lambda: bool(calls) == (request.param == "native")
    return path


@pytest.mark.parametrize("T,d,rank1", [(9, 3, False), (16, 4, False), (12, 4, True), (5, 2, True), (2, 4, False),
                                       (4, 4, False), (1, 3, False), (40, 4, False)])
def test_closed_form_matches_the_full_form(T, d, rank1, path):
    """d < T, d = T and d > T, rank one, both layouts (batched products from SOA_MAX_T tokens on)."""
    torch.manual_seed(T * d)
    x = inputs(33, T, d, rank1)
    A = skew(d)
    y, ok, _ = _closed(x, A)
    assert bool(ok.all()) and path.served()
    ref = full64(x, A)
    rel = ((y.double() - ref).abs() / x.double().norm(dim=-2, keepdim=True).clamp_min(1e-30)).max()
    assert rel <= 8 * T * torch.finfo(F32).eps, rel


@pytest.mark.parametrize("T", [6, _gram.SOA_MAX_T])
def test_closed_form_gradcheck_and_double_backward(T, path):
    """Both layouts: structure of arrays below SOA_MAX_T tokens, batched products from there on."""
    torch.manual_seed(T)
    x = torch.randn(3, T, 4, dtype=F64, requires_grad=True)
    A = torch.randn(4, 4, dtype=F64, requires_grad=True)
    fn = lambda a, b: _closed(a, b)[0]  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, A)) and path.served()
    assert torch.autograd.gradgradcheck(fn, (x[:1, :5], A))


def test_gradcheck_through_the_closed_form_n(path, monkeypatch):
    """In float64 every sample fails the eps(float64)/16 residual check and takes the solved N, so the test above
    checks the backward formulas only; with float32's tolerance the closed-form N itself is differentiated."""
    monkeypatch.setattr(_gram, "residual_tolerance", lambda dtype: torch.finfo(F32).eps / 16)
    torch.manual_seed(11)
    x = (0.5 * torch.randn(3, 9, 4, dtype=F64)).requires_grad_()
    A = (0.5 * torch.randn(4, 4, dtype=F64)).requires_grad_()
    assert bool(_closed(x.detach(), A.detach())[1].all()) and path.served()
    assert torch.autograd.gradcheck(lambda a, b: _closed(a, b)[0], (x, A))


@pytest.mark.parametrize("T", [16, 40])
@pytest.mark.parametrize("incoming", ["dense", "sum"])
def test_closed_form_backward_matches_the_full_form(T, incoming, path):
    """Both incoming-gradient layouts a loss produces: dense, and the expanded one of out.sum()."""
    torch.manual_seed(T)
    B = 5
    x = torch.randn(B, T, 4, requires_grad=True)
    A = skew(4).requires_grad_()
    assert bool(_closed(x.detach(), A.detach())[1].all())  # the closed form serves every sample
    assert path.served()
    out = K.vp_attention(x, A)
    g = torch.randn_like(out) if incoming == "dense" else torch.ones(()).expand_as(out)
    gx, gA = torch.autograd.grad(out, (x, A), g)
    x64, A64 = x.detach().double().requires_grad_(), A.detach().double().requires_grad_()
    rx, rA = torch.autograd.grad(full64(x64, A64), (x64, A64), g.double())
    tol = 64 * T * torch.finfo(F32).eps
    assert (gx.double() - rx).abs().max() <= tol * (1 + rx.abs().max())
    assert (gA.double() - rA).abs().max() <= tol * B * (1 + rA.abs().max())


def test_results_do_not_depend_on_the_rest_of_the_batch(path):
    torch.manual_seed(3)
    x = torch.randn(40, 16, 4)
    x[5] = (torch.randn(1, 4) + 1e-6 * torch.randn(16, 4)) * 100  # fails the residual check: solved
    A = skew(4)
    y = K.vp_attention(x, A)
    for i in (0, 5, 7):
        for batch in (x[i : i + 1], torch.cat([x[i : i + 1], x[:4] * 1e3])):
            assert torch.equal(y[i], K.vp_attention(batch, A)[0])
    assert path.served()


def test_ill_conditioned_samples_are_solved_and_stay_accurate(path):
    """Nearly parallel tokens of large norm fail the residual check (Note [closed-form residual check]) and take
    the pivoted solve; the others keep the closed form."""
    torch.manual_seed(4)
    x = torch.randn(8, 16, 4)
    x[2:4] = (torch.randn(2, 1, 4) + 1e-6 * torch.randn(2, 16, 4)) * 100
    A = skew(4)
    _, ok, _ = _closed(x, A)
    assert ok.tolist() == [True, True, False, False, True, True, True, True] and path.served()
    y = K.vp_attention(x, A)
    ref = full64(x, A)
    rel = ((y.double() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).amax((-2, -1))
    # a float64 solve loses cond(I + G A) units of rounding (Note [why QR and not the Gram matrix])
    G = x.double().mT @ x.double()
    cond = torch.linalg.cond(torch.eye(4, dtype=F64) + G @ A.double())
    bound = 8 * 16 * torch.finfo(F32).eps + 64 * 16 * torch.finfo(F64).eps * cond
    assert (rel <= bound).all(), (rel, bound)
    x64, A64 = x.double().requires_grad_(), A.double()
    g = torch.randn(8, 16, 4)
    gx = torch.autograd.grad(K.vp_attention(x.requires_grad_(), A), x, g)[0]
    rx = torch.autograd.grad(full64(x64, A64), x64, g.double())[0]
    err = (gx.double() - rx).abs().amax((-2, -1)) / (1 + rx.abs().amax((-2, -1)))
    assert (err <= bound).all(), (err, bound)  # the forward's bound holds for the gradient (measured: below 2e-3 of it)


def test_negative_control_a_broken_closed_kernel_is_caught_by_the_residual_check(monkeypatch):
    monkeypatch.setattr(dispatch, "_FORCED", ["eager"])  # the eager kernel is broken here (the native one: test_native)
    torch.manual_seed(5)
    x, A = torch.randn(16, 16, 4), skew(4)
    good = K.vp_attention(x, A)
    real = gen.vp_gram_closed

    def broken(G, A_):  # N off by a relative 1e-6; its residual (I + GA)^T N - I follows
        N, P, R = real(G, A_)
        eye = torch.eye(N.shape[0], dtype=N.dtype)[..., None]
        return N * (1 + 1e-6), 2 * N * (1 + 1e-6) - eye, (1 + 1e-6) * R + 1e-6 * eye

    monkeypatch.setattr(gen, "vp_gram_closed", broken)
    y, ok, _ = _closed(x, A)
    assert not bool(ok.any())  # every sample fails the check ...
    assert (K.vp_attention(x, A) - good).abs().max() <= 8 * 16 * torch.finfo(F32).eps * x.abs().max()  # ... and is solved


def test_dispatch_records_why_the_closed_form_was_not_taken():
    def why(x, A):
        e = K.explain("vp_attention", x, A, method="gram")
        return dict((r.name, w) for r, w in e.rejected).get("gram-closed/eager"), e.route.name

    assert why(torch.randn(2, 9, 5), skew(5))[0].startswith("d=5 > 4")
    Ab = torch.randn(2, 3, 3)
    assert "batched weighting" in why(torch.randn(2, 9, 3), Ab - Ab.mT)[0]
    assert "float64" in why(torch.randn(2, 9, 3, dtype=F64), skew(3, F64))[0]
    assert why(torch.randn(2, 9, 3), skew(3))[1].startswith("gram-closed/")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs(dtype, path):
    torch.manual_seed(6)
    x = torch.randn(30, 16, 4).to(dtype)
    A = skew(4).to(dtype)
    assert bool(_closed(x, A)[1].all()) and path.served()
    y = K.vp_attention(x, A)
    assert y.dtype == dtype
    ref = full64(x, A)
    assert ((y.double() - ref).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= torch.finfo(dtype).eps


def test_shapes_through_vp_attention(path):
    """Unbatched, several batch dimensions, an empty batch and d = 1 take the closed form like a (B, T, d) batch."""
    torch.manual_seed(7)
    A = skew(3)
    x = torch.randn(2, 5, 9, 3)
    y = K.vp_attention(x, A)
    assert y.shape == x.shape and torch.equal(y[1, 2], K.vp_attention(x[1, 2], A))
    assert K.vp_attention(torch.randn(0, 9, 3), A).shape == (0, 9, 3)
    x1 = torch.randn(4, 6, 1)
    assert torch.equal(K.vp_attention(x1, torch.zeros(1, 1)), x1)  # A = 0 in d = 1: the identity map
    assert path.served()


def test_transforms_and_forward_mode_take_the_solve():
    """vmap (traced) and forward-mode tangents bypass the closed form, which has no batching or jvp rule of its
    own; both agree with the eager closed form."""
    torch.manual_seed(8)
    x, A = torch.randn(6, 16, 4), skew(4)
    y = K.vp_attention(x, A)
    tol = 16 * 16 * torch.finfo(F32).eps * (1 + x.abs().max())
    assert (torch.func.vmap(lambda z: K.vp_attention(z, A, check=False))(x) - y).abs().max() <= tol
    v = torch.randn_like(x)
    out, tangent = torch.func.jvp(lambda z: K.vp_attention(z, A, check=False), (x,), (v,))
    assert (out - y).abs().max() <= tol
    x64, v64 = x.double(), v.double()
    A64 = A.double()
    _, ref = torch.func.jvp(lambda z: gen.vp_gram_cayley(z, A64), (x64,), (v64,))  # the float64 Gram form's tangent
    assert (tangent.double() - ref).abs().max() <= 64 * 16 * torch.finfo(F32).eps * (1 + ref.abs().max())
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        dual = K.vp_attention(fwAD.make_dual(x, v), A)
        assert (fwAD.unpack_dual(dual).tangent.double() - ref).abs().max() <= 64 * 16 * torch.finfo(F32).eps * (
            1 + ref.abs().max())
