"""The float64 route ``taylor-batched/eager`` of ``exp_skew`` (Note [exp_skew in float64]): against float64
references, gradients, batch independence, orthogonality, the route table and negative controls."""

from __future__ import annotations

import pytest
import torch

from geoattn import kernels as K
from geoattn.kernels import _exp_batched
from geoattn.kernels._exp import _norms
from geoattn.kernels._taylor_exp import taylor_exp_adjoint

F64 = torch.float64
EPS = torch.finfo(F64).eps


def skews(B: int, T: int, scale: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(B, T, T, generator=g, dtype=F64) * scale
    return m - m.mT


def scaled_to(B: int, T: int, norm: float, seed: int) -> torch.Tensor:
    """Skew matrices with max(||S||_1, ||S||_inf) = norm."""
    s = skews(B, T, 1.0, seed)
    return s * (norm / _norms(s))[:, None, None]


def reference(s: torch.Tensor) -> torch.Tensor:
    """exp(S) of the float64 T x T matrices by the eigendecomposition iS = U diag(theta) U^H (no squarings)."""
    theta, u = torch.linalg.eigh(s.to(torch.complex128) * 1j)
    return ((u * torch.exp(-1j * theta)[..., None, :]) @ u.mH).real


def defect(e: torch.Tensor) -> torch.Tensor:
    """max |E^T E - I| per sample."""
    eye = torch.eye(e.shape[-1], dtype=e.dtype)
    return (e.mT @ e - eye).abs().amax((-2, -1))


@pytest.mark.parametrize("T", [1, 2, 3, 4, 8, 9, 12, 16, 32])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0, 100.0])
def test_against_float64_reference(T, scale):
    s = skews(64, T, scale, T)
    if T >= _exp_batched.MIN_T:
        assert K.explain("exp_skew", s).route.name == "taylor-batched/eager"
    e = K.exp_skew(s)
    norm = _norms(s)[:, None, None]
    # rounding grows with the norm through the squarings (and the eigenvalues' error at large norms)
    tol = 16 * T * EPS * torch.clamp(norm, min=1.0)
    assert ((e - reference(s)).abs() <= tol).all()
    assert (e - torch.linalg.matrix_exp(s)).abs().max() <= float(tol.max())


@pytest.mark.parametrize("T", [2, 3, 4, 8, 12, 16, 32])
def test_orthogonal_up_to_the_eigh_threshold(T):
    """Within 64 T eps at every norm the route keeps on its Taylor path (up to 512), and above."""
    for norm in (0.3, 4.0 * T, 8.0 * T - 0.5, 8.0 * T + 0.5, 16.0 * T - 0.5, 511.0, 2000.0):
        e = K.exp_skew(scaled_to(256, T, norm, 1))
        assert defect(e).max() <= 64 * T * EPS, norm


def test_polish_is_what_keeps_large_norms_orthogonal(monkeypatch):
    """Negative control: without the Newton--Schulz step the defect at T = 8, norm 511 exceeds 64 T eps."""
    s = scaled_to(512, 8, 511.0, 2)
    assert defect(K.exp_skew(s)).max() <= 64 * 8 * EPS
    monkeypatch.setattr(_exp_batched, "POLISH_PER_T", 10**9)
    assert defect(K.exp_skew(s)).max() > 64 * 8 * EPS


@pytest.mark.parametrize("T", [8, 16, 32])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0])
def test_gradient_against_matrix_exp(T, scale):
    """The gradient is the Frechet adjoint, unprojected, as matrix_exp with autograd (and the taylor path) give."""
    s = skews(16, T, scale, 3)
    g = torch.randn(16, T, T, generator=torch.Generator().manual_seed(4), dtype=F64)
    a = s.clone().requires_grad_()
    b = s.clone().requires_grad_()
    ga = torch.autograd.grad(K.exp_skew(a), a, g)[0]
    gb = torch.autograd.grad(torch.linalg.matrix_exp(b), b, g)[0]
    gt = torch.autograd.grad(K.exp_skew(b, method="taylor"), b, g)[0]
    tol = 64 * T * EPS * float(_norms(s).clamp_min(1.0).max()) * float(gb.abs().max())
    assert (ga - gb).abs().max() <= tol
    assert (ga - gt).abs().max() <= tol


@pytest.mark.parametrize("T", [3, 8])
def test_gradient_of_polished_samples(T):
    """Samples above norm 8 T (one Newton--Schulz step, treated as the identity backward): the gradient stays
    within the rounding of matrix_exp's at that norm."""
    s = scaled_to(8, T, 20.0 * T, 10)
    g = torch.randn(8, T, T, generator=torch.Generator().manual_seed(11), dtype=F64)
    a, b = s.clone().requires_grad_(), s.clone().requires_grad_()
    ga = torch.autograd.grad(K.exp_skew(a), a, g)[0]
    gb = torch.autograd.grad(torch.linalg.matrix_exp(b), b, g)[0]
    assert (ga - gb).abs().max() <= 64 * T * EPS * 20.0 * T * float(gb.abs().max())


def test_wrong_square_adjoint_is_caught(monkeypatch):
    """Negative control: the squarings' adjoint without its transpose gives a gradient the comparison rejects."""
    s = skews(16, 8, 1.0, 5)
    g = torch.randn(16, 8, 8, generator=torch.Generator().manual_seed(6), dtype=F64)
    b = s.clone().requires_grad_()
    want = torch.autograd.grad(torch.linalg.matrix_exp(b), b, g)[0]
    monkeypatch.setattr(_exp_batched, "taylor_exp_adjoint",
                        lambda t, gE: taylor_exp_adjoint(t, gE, drop_square_transpose=True))
    a = s.clone().requires_grad_()
    got = torch.autograd.grad(K.exp_skew(a), a, g)[0]
    assert (got - want).abs().max() > 1e3 * 64 * 8 * EPS * float(want.abs().max())


def test_gradcheck():
    """Full gradcheck of one 8 x 8 sample with squarings; random-projection gradchecks (fast_mode) of batches with
    and without squarings at T = 8 and 9; the double backward's graph."""
    p = (torch.randn(1, 8, 8, generator=torch.Generator().manual_seed(0), dtype=F64) * 2.0).requires_grad_()
    assert torch.autograd.gradcheck(lambda q: K.exp_skew(q - q.mT, check=False), (p,))
    for T in (8, 9):
        for scale in (0.3, 2.0):
            p = (torch.randn(2, T, T, generator=torch.Generator().manual_seed(T), dtype=F64) * scale).requires_grad_()
            assert K.explain("exp_skew", (p - p.mT).detach()).route.name == "taylor-batched/eager"
            assert torch.autograd.gradcheck(lambda q: K.exp_skew(q - q.mT, check=False), (p,), fast_mode=True)
    p = torch.randn(1, 8, 8, dtype=F64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda q: K.exp_skew(q - q.mT, check=False), (p,), fast_mode=True)


def test_sample_does_not_depend_on_its_batch():
    """A NaN sample and a sample of entries near 1e6 (the eigendecomposition's) change nothing else and raise
    nothing; the NaN sample's result and gradient are NaN."""
    s = skews(6, 12, 1.0, 7)
    s[4] = s[4] * 1e6
    g = torch.randn(6, 12, 12, generator=torch.Generator().manual_seed(8), dtype=F64)
    clean = s.clone().requires_grad_()
    e = K.exp_skew(clean)
    ge = torch.autograd.grad(e, clean, g)[0]
    bad = s.clone()
    bad[1, 2, 3], bad[1, 3, 2] = float("nan"), float("nan")
    bad.requires_grad_()
    f = K.exp_skew(bad, check=False)
    gf = torch.autograd.grad(f, bad, g)[0]
    keep = [0, 2, 3, 4, 5]
    assert torch.equal(f[keep], e[keep]) and torch.equal(gf[keep], ge[keep])
    assert torch.isnan(f[1]).all() and torch.isnan(gf[1]).all()
    assert torch.isfinite(f[keep]).all() and torch.isfinite(gf[keep]).all()
    for i in range(6):
        alone = s[i:i + 1].clone().requires_grad_()
        ea = K.exp_skew(alone)
        assert torch.equal(ea, e[i:i + 1])
        assert torch.equal(torch.autograd.grad(ea, alone, g[i:i + 1])[0], ge[i:i + 1])


def test_route_table_and_reasons():
    s = skews(2, 8, 1.0, 9)
    assert K.explain("exp_skew", s).route.name == "taylor-batched/eager"
    assert "taylor-batched" in K.route_table("exp_skew")
    assert "float32" in str(K.explain("exp_skew", s.float()))
    assert K.explain("exp_skew", s.float()).route.name == "taylor-or-eigh/eager"
    assert "T=1 < 2" in str(K.explain("exp_skew", skews(2, 1, 1.0, 9)))
    assert K.explain("exp_skew", s.to("meta")).route.form == "eigh"
    from geoattn.kernels import _op_exp
    from geoattn.kernels.dispatch import Call
    on_cuda = Call(S=s, method="auto", check=True, device=torch.device("cuda"), traced=False)
    assert _op_exp._batched(on_cuda) == "cuda: measured on the CPU only"
    assert K.explain("exp_skew", s, method="taylor").route.form == "taylor"
    with pytest.raises(ValueError, match="Expected S to be skew-symmetric"):
        K.exp_skew(s + torch.eye(8, dtype=F64))
    with pytest.raises(ValueError, match="Expected a float64 tensor"):
        _exp_batched.exp_skew_batched(s.float())
