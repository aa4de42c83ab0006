"""Nonlinear symplectic attention: kernels, layer, model, the claims' counterexamples and negative controls."""

from __future__ import annotations

import itertools

import pytest
import sympy as sp
import torch

import geoattn.kernels as K
from geoattn.errors import OptionError
from geoattn.models import GradientLayer, SymplecticTransformer
from geoattn.nn import LayerShapeError, LinearSymplecticAttention, SymplecticAttention
from geoattn.symbolic import get_claim
from geoattn.symbolic.claims import _symattn_exact as S
from geoattn.symbolic.claims._exp_exact import ExpField
from geoattn.symbolic.symattn import ACTIVATIONS
from geoattn.testing import assert_symplectic, assert_volume_preserving, jacobian, symplecticity_error

ACTS = list(K.SYMATTN_ACTIVATIONS)
F64 = torch.float64


def tol(dtype, n, k=16.0):
    return k * n * torch.finfo(dtype).eps


def test_runtime_table_matches_the_symbolic_one():
    assert K.SYMATTN_ACTIVATIONS == ACTIVATIONS


@pytest.mark.parametrize("act", ACTS)
def test_update_is_the_gradient_of_the_potential(act):
    torch.manual_seed(0)
    z = torch.randn(4, 6, 3, dtype=F64, requires_grad=True)
    A = torch.randn(3, 3, dtype=F64)
    (g,) = torch.autograd.grad(K.symattn_potential(z, A, act).sum(), z)
    u = K.symattn_update(z, A, act)
    assert (u - g).abs().max() <= tol(F64, 6 * 3) * (1 + g.abs().max())


@pytest.mark.parametrize("act", ACTS)
def test_generated_backward_gradcheck(act):
    torch.manual_seed(1)
    z = torch.randn(2, 4, 2, dtype=F64, requires_grad=True)
    A = torch.randn(2, 2, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda z, A: K.symattn_update(z, A, act), (z, A))


@pytest.mark.parametrize("act,layout", list(itertools.product(ACTS, ["dense", "sum"])))
def test_backward_matches_autograd_for_both_gradient_layouts(act, layout):
    """The custom backward against autograd through the same forward, for a dense random incoming gradient and
    the expanded one of ``out.sum()``; the shared A gets the sum over the batch."""
    torch.manual_seed(2)
    z = torch.randn(5, 7, 3, dtype=F64, requires_grad=True)
    A = torch.randn(3, 3, dtype=F64, requires_grad=True)
    gen = getattr(K._generated, f"symattn_update_{act}")
    ref = gen(z, A)[0]
    g = torch.randn_like(ref) if layout == "dense" else torch.ones((), dtype=F64).expand_as(ref)  # strides 0
    want = torch.autograd.grad(ref, (z, A), g)
    got = torch.autograd.grad(K.symattn_update(z, A, act), (z, A), g)
    for w, h in zip(want, got):
        assert h.shape == w.shape
        assert (w - h).abs().max() <= tol(F64, 7 * 3 * 5) * (1 + w.abs().max())


def test_batch_independence():
    torch.manual_seed(3)
    layer = SymplecticAttention(4, activation="matrix_softmax", dtype=F64)
    x = torch.randn(6, 5, 4, dtype=F64)
    y = layer(x)
    x2 = x.clone()
    x2[1:] = torch.randn(5, 5, 4, dtype=F64) * 10
    assert torch.equal(layer(x2)[0], y[0]) or (layer(x2)[0] - y[0]).abs().max() <= tol(F64, 5)


@pytest.mark.parametrize("act,symmetric,update", list(itertools.product(ACTS, [True, False], ["p", "q"])))
def test_layer_is_symplectic_and_invertible(act, symmetric, update):
    torch.manual_seed(4)
    layer = SymplecticAttention(6, activation=act, symmetric=symmetric, update=update, dtype=F64)
    with torch.no_grad():
        layer.weight.mul_(3.0)  # away from the near-linear regime
    x = torch.randn(3, 5, 6, dtype=F64)
    assert_symplectic(layer, x)
    assert_volume_preserving(layer, x)  # the docstring's "hence volume-preserving"
    assert (layer.inverse(layer(x)) - x).abs().max() <= tol(F64, 5 * 6) * (1 + x.abs().max())
    assert (layer(layer.inverse(x)) - x).abs().max() <= tol(F64, 5 * 6) * (1 + x.abs().max())
    assert layer.potential(x).shape == (3,)
    (g,) = torch.autograd.grad(layer.potential(x.requires_grad_()).sum(), x)
    upd = (layer(x) - x)[..., 3:] if update == "p" else (layer(x) - x)[..., :3]
    read = g[..., :3] if update == "p" else g[..., 3:]
    assert (upd - read).abs().max() <= tol(F64, 30) * (1 + read.abs().max())


class _PackageSymmetricVectorSoftmax(torch.nn.Module):
    """GeometricMachineLearning.jl's symmetric VectorSoftmax layer as its code computes it: p + 2 A q softmax(C)
    (row layout: 2 S^T q A with S normalised over columns)."""

    def __init__(self, A):
        super().__init__()
        self.A = A

    def forward(self, x):
        q, p = x[..., :2], x[..., 2:]
        C = q @ self.A @ q.mT
        Sm = torch.softmax(C, dim=-2)
        return torch.cat([q, p + 2 * Sm.mT @ q @ self.A], dim=-1)


class _HandSimplified(_PackageSymmetricVectorSoftmax):
    """The page's symmetric shortcut A Z softmax_1(C) (one softmax, no transpose term)."""

    def forward(self, x):
        q, p = x[..., :2], x[..., 2:]
        C = q @ self.A @ q.mT
        Sm = torch.softmax(torch.nn.functional.pad(C, (0, 0, 0, 1)), dim=-2)[..., :-1, :]
        return torch.cat([q, p + Sm.mT @ q @ self.A], dim=-1)


@pytest.mark.parametrize("cls", [_PackageSymmetricVectorSoftmax, _HandSimplified])
def test_negative_control_non_gradient_updates_are_not_symplectic(cls):
    torch.manual_seed(5)
    W = torch.randn(2, 2, dtype=F64)
    module = cls(W + W.T)
    x = torch.randn(2, 4, 4, dtype=F64)
    assert symplecticity_error(module, x).max() > 1e-3
    with pytest.raises(AssertionError):
        assert_symplectic(module, x)


def test_the_packages_symmetric_layer_is_symplectic_for_the_matrix_softmax():
    """The claim symattn.gml.layer_symplectic.matrix_softmax_symmetric, numerically: 2 A q S with the matrix
    softmax is the gradient (S is symmetric)."""
    torch.manual_seed(6)
    W = torch.randn(2, 2, dtype=F64)
    A = W + W.T

    def layer(x):
        q, p = x[..., :2], x[..., 2:]
        C = q @ A @ q.mT
        Sm = torch.softmax(C.flatten(-2), -1).view_as(C)
        return torch.cat([q, p + 2 * Sm.mT @ q @ A], dim=-1)

    assert_symplectic(layer, torch.randn(2, 4, 4, dtype=F64))


# -- the refuted claims' counterexamples, confirmed in float64 -----------------------------------------------


def _potential_torch(kind, Q, A):
    C = Q.T @ A @ Q
    if kind == "gml_matrix_as_written":
        return torch.log1p(torch.exp(C.sum()))
    if kind == "gml_vector_as_written":
        return torch.log1p(torch.exp(C.sum(0))).sum()
    over, one = ACTIVATIONS[kind]
    flat = C.flatten() if over == "all" else C
    pad = torch.nn.functional.pad(flat, (0, 1) if over == "all" else (0, 0, 0, 1)) if one else flat
    return torch.logsumexp(pad, 0).sum()


def _stated(kind, Q, A):
    C = Q.T @ A @ Q
    E = torch.exp(C)
    if kind == "matrix":
        return (A @ Q @ E.T + A.T @ Q @ E) / (1 + E.sum())
    col = 1 + E.sum(0)
    term1 = (A @ Q) @ (E / col).T
    term2 = (A.T @ Q @ E) / col
    return term1 + term2


def _ce(claim_id):
    verdict = get_claim(claim_id).check()
    assert verdict.level.value == "refuted"
    ce = verdict.counterexample
    to = {k: torch.tensor([[float(x) for x in row] for row in v.tolist()], dtype=F64) for k, v in ce.values.items()}
    return ce, to["Q"], to["A"]


@pytest.mark.parametrize("claim_id,kind,stated", [
    ("symattn.gml.matrix_softmax_gradient", "gml_matrix_as_written", "matrix"),
    ("symattn.gml.vector_softmax_gradient", "gml_vector_as_written", "vector"),
])
def test_refuted_gradient_counterexamples_in_float64(claim_id, kind, stated):
    ce, Q, A = _ce(claim_id)
    Qg = Q.clone().requires_grad_()
    (g,) = torch.autograd.grad(_potential_torch(kind, Qg, A), Qg)
    diff = (g - _stated(stated, Q, A)).abs().max().item()
    assert diff > 1e-6
    assert diff == pytest.approx(ce.residual_float(), rel=1e-9)


def test_refuted_symmetric_shortcut_counterexample_in_float64():
    ce, Q, A = _ce("symattn.gml.vector_softmax_symmetric_gradient")
    Qg = Q.clone().requires_grad_()
    (g,) = torch.autograd.grad(_potential_torch("vector_one_softmax", Qg, A), Qg)
    C = Q.T @ A @ Q
    S1 = torch.exp(C) / (1 + torch.exp(C).sum(0))
    diff = (g - A @ Q @ S1).abs().max().item()
    assert diff == pytest.approx(ce.residual_float(), rel=1e-9) and diff > 1e-6


def test_refuted_layer_counterexample_in_float64():
    ce, Q, A = _ce("symattn.gml.layer_symplectic.vector_softmax_symmetric")

    def update(v):
        Qv = v.reshape(Q.shape)
        C = Qv.T @ A @ Qv
        return (2 * A @ Qv @ torch.softmax(C, dim=0)).reshape(-1)

    J = torch.autograd.functional.jacobian(update, Q.reshape(-1))
    diff = (J - J.T).abs().max().item()
    assert diff == pytest.approx(ce.residual_float(), rel=1e-9) and diff > 1e-6


# -- the verifier must catch broken kernels (negative controls) ----------------------------------------------


def _field(n=1, T=2):
    v = S.variables("general")({"n": n, "T": T})
    return ExpField(v["Q"], v["A"])


def _nonzero(m):
    return any(sp.cancel(sp.together(x)) != 0 for x in m)


def test_layer_check_passes_and_catches_a_wrong_update(monkeypatch):
    f = _field()
    assert not _nonzero(S.layer_residual(f))
    import geoattn.symbolic.symattn as E

    def broken(activation):
        b = E.update_bindings(activation)
        return b[:2] + [("U", 2 * E.Gw.T * E.z * E.Aw)]  # the package's symmetric shortcut

    monkeypatch.setattr(S, "update_bindings", broken)
    assert _nonzero(S.layer_residual(_field()))


def test_vjp_check_passes_and_catches_a_dropped_term(monkeypatch):
    assert not _nonzero(S.vjp_residual(_field()))
    import geoattn.symbolic.symattn as E

    def broken(over):  # H = G^T V dropped from R: the term G^T V A of the z-gradient is lost
        return [(name, E._K.T * E.z if name == "R" else expr) for name, expr in E.vjp_bindings(over)]

    monkeypatch.setattr(S, "vjp_bindings", broken)
    assert _nonzero(S.vjp_residual(_field()))


def test_exp_counterexample_machinery_refutes_and_accepts():
    """Values in exponentials of rationals become rational functions of x = e^{1/L}: (e^{1/3} + 1)(e^{1/3} - 1)
    - (e^{2/3} - 1) is (x + 1)(x - 1) - (x^2 - 1) = 0 with L = 3; e^{1/3} + e^{1/2} - 2 is x^2 + x^3 - 2 with
    L = 6, not zero, so the value is nonzero."""
    from geoattn.symbolic.claims._exp_exact import X_E, as_function_of_e, exp_residual_nonzero

    third, half = sp.exp(sp.Rational(1, 3)), sp.exp(sp.Rational(1, 2))
    zero = (third + 1) * (third - 1) - (sp.exp(sp.Rational(2, 3)) - 1)
    assert zero != 0  # not zero as SymPy writes it
    r, L = as_function_of_e(zero)
    assert L == 3 and r == 0 and not exp_residual_nonzero(zero)
    r, L = as_function_of_e(third + half - 2)
    assert L == 6 and sp.expand(r - (X_E**2 + X_E**3 - 2)) == 0 and exp_residual_nonzero(third + half - 2)
    with pytest.raises(ValueError, match="Expected exponentials of rational numbers"):
        as_function_of_e(sp.exp(sp.sqrt(2)))
    with pytest.raises(ValueError, match="Expected a finite residual"):  # NonFiniteResidual
        exp_residual_nonzero(sp.Integer(1) / (third - third))


# -- module conventions ---------------------------------------------------------------------------------------


def test_layer_errors_and_conventions():
    with pytest.raises(LayerShapeError, match="Expected an even dim"):
        SymplecticAttention(5)
    with pytest.raises(OptionError, match="Expected update"):
        SymplecticAttention(4, update="r")
    with pytest.raises(ValueError, match="Expected activation in"):
        SymplecticAttention(4, activation="softmax")
    with pytest.raises(TypeError, match="Expected symmetric to be a bool"):
        SymplecticAttention(4, symmetric=1)
    layer = SymplecticAttention(4, dtype=F64)
    with pytest.raises(LayerShapeError, match="expected x with 4 features"):
        layer(torch.randn(2, 3, 6, dtype=F64))
    assert "activation='matrix_softmax'" in repr(layer)
    other = SymplecticAttention(4, dtype=F64)
    other.load_state_dict(layer.state_dict())
    x = torch.randn(2, 3, 4, dtype=F64)
    assert torch.equal(other(x), layer(x))
    assert layer.free_parameters() == 3 and SymplecticAttention(4, symmetric=False).free_parameters() == 4
    before = layer.weight.detach().clone()
    layer.reset_parameters()
    assert not torch.equal(before, layer.weight)
    assert layer(x[0]).shape == (3, 4) and layer.potential(x[0]).shape == ()


def test_kernel_errors():
    z = torch.randn(2, 3, 2)
    with pytest.raises(OptionError, match="Expected activation in"):
        K.symattn_update(z, torch.randn(2, 2), "nope")
    with pytest.raises(K.KernelShapeError, match=r"Expected A of shape \(2, 2\)"):
        K.symattn_update(z, torch.randn(3, 3))
    with pytest.raises(K.KernelDtypeError):
        K.symattn_update(z.long(), torch.randn(2, 2))


def test_half_precision_runs_in_float32():
    z = torch.randn(2, 3, 2)
    A = torch.randn(2, 2)
    out = K.symattn_update(z.half(), A.half())
    assert out.dtype == torch.float16
    ref = K.symattn_update(z.half().float(), A.half().float())  # computed in float32, rounded once
    assert (out.float() - ref).abs().max() <= torch.finfo(torch.float16).eps * (1 + ref.abs().max())


@pytest.mark.parametrize("layer", [
    LinearSymplecticAttention(3, update="q", dtype=F64),
    LinearSymplecticAttention(3, update="p", dtype=F64),
    GradientLayer(4, 8, update="q", dtype=F64),
])
def test_inverse_round_trips_of_the_other_shears(layer):
    x = torch.randn(2, 3, 4, dtype=F64)
    assert (layer.inverse(layer(x)) - x).abs().max() <= tol(F64, 12) * (1 + x.abs().max())


def test_model_symplectic_untrained_and_trained_and_invertible():
    torch.manual_seed(7)
    model = SymplecticTransformer(4, 3, depth=1, n_sympnet=2, upscaling_dim=8, activation="vector_one_softmax",
                                  symmetric=False, dtype=F64)
    x = torch.randn(2, 3, 4, dtype=F64)
    assert_symplectic(model, x)
    assert_volume_preserving(model, x)  # the docstring: symplectic, hence volume-preserving ...
    J = jacobian(model, x)
    eye = torch.eye(J.shape[-1], dtype=F64)
    assert ((J.mT @ J - eye).abs().amax((-2, -1)) > 1e3 * tol(F64, 12)).all()  # ... and not orthogonal
    assert (model.inverse(model(x)) - x).abs().max() <= tol(F64, 12, k=64) * (1 + x.abs().max())
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    data = torch.randn(32, 3, 4, dtype=F64)
    target = data.roll(1, dims=-1)
    first = None
    for _ in range(30):
        opt.zero_grad()
        loss = ((model(data) - target) ** 2).mean()
        first = loss.item() if first is None else first
        loss.backward()
        opt.step()
    assert loss.item() < first
    assert_symplectic(model, x)
    assert "activation='vector_one_softmax'" in repr(model)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("act", ACTS)
def test_cuda_matches_cpu(act):
    torch.manual_seed(8)
    z = torch.randn(4, 6, 3, dtype=F64)
    A = torch.randn(3, 3, dtype=F64)
    g = torch.randn(4, 6, 3, dtype=F64)
    out, grads = [], []
    for dev in ("cpu", "cuda"):
        zz, AA = z.to(dev).requires_grad_(), A.to(dev).requires_grad_()
        u = K.symattn_update(zz, AA, act)
        out.append(u.cpu())
        grads.append([t.cpu() for t in torch.autograd.grad(u, (zz, AA), g.to(dev))])
    assert (out[0] - out[1]).abs().max() <= tol(F64, 6 * 3) * (1 + out[0].abs().max())
    for a, b in zip(*grads):
        assert (a - b).abs().max() <= tol(F64, 6 * 3 * 4) * (1 + a.abs().max())
    c = torch.randn(8, 3, 3, dtype=F64, device="cuda")
    c = c - c.mT
    assert (K.cayley(c).cpu() - K.cayley(c.cpu())).abs().max() <= tol(F64, 3)


@pytest.mark.parametrize("act", ACTS)
def test_double_backward_and_batched_weighting(act):
    """gradgradcheck through the layer's kernel, and a weighting batched like z (its gradient summed per
    sample, not over the batch)."""
    torch.manual_seed(9)
    z = torch.randn(2, 3, 2, dtype=F64, requires_grad=True)
    A = torch.randn(2, 2, dtype=F64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda z, A: K.symattn_update(z, A, act), (z, A))
    Ab = torch.randn(2, 1, 2, 2, dtype=F64, requires_grad=True)  # broadcasts against a (2, 3, 3, 2) batch
    zb = torch.randn(2, 3, 3, 2, dtype=F64, requires_grad=True)
    g = torch.randn(2, 3, 3, 2, dtype=F64)
    got = torch.autograd.grad(K.symattn_update(zb, Ab, act), (zb, Ab), g)
    ref = torch.autograd.grad(getattr(K._generated, f"symattn_update_{act}")(zb, Ab)[0], (zb, Ab), g)
    for a, b in zip(got, ref):
        assert a.shape == b.shape
        assert (a - b).abs().max() <= tol(F64, 3 * 2 * 9) * (1 + b.abs().max())
