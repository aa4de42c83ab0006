"""exp_skew_action: the Chebyshev expansion of exp(S) x against float64 references, its backward, its batch
independence, its coefficients and degree rule, the layer routed through it, and its claims."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from geoattn.kernels._native_exp_action import _uta_t

from geoattn import kernels as K
from geoattn.kernels import _exp_action as ea
from geoattn.kernels._op_exp_action import degree_limit
from geoattn.nn import OrthonormalAttention


def _skew(B, T, scale=1.0, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(B, T, T, generator=g, dtype=dtype) * scale
    return a - a.mT


def _err(y, ref, x):
    """Per column, ||y - ref||_2 / ||x||_2, largest over the batch."""
    return ((y.double() - ref).norm(dim=-2) / x.double().norm(dim=-2).clamp_min(1e-300)).max().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T,d", [(16, 4), (5, 5), (3, 7), (24, 2)])  # d < T, d = T, d > T
def test_matches_matrix_exp(dtype, T, d):
    S = _skew(40, T, scale=2.0)
    x = torch.randn(40, T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    ref = torch.linalg.matrix_exp(S) @ x
    assert K.explain("exp_skew_action", S.to(dtype), x.to(dtype)).route.form == "chebyshev"
    y = K.exp_skew_action(S.to(dtype), x.to(dtype))
    assert y.dtype == dtype
    # rounding grows with the degree m (three-term recurrence); the truncation is below u by the degree rule
    m = int(ea.chebyshev_degree(ea.norm_bound(S), torch.finfo(dtype).eps / 2).max())
    assert _err(y, ref, x) <= 4 * m * T * torch.finfo(dtype).eps


def test_rank_deficient_correlation():
    """The layer's S = uta(q k^T) of rank <= 2d from a rank-1 x, against the float64 T x T exponential."""
    torch.manual_seed(0)
    layer = OrthonormalAttention(3, dtype=torch.float64)
    x = torch.randn(6, 20, 1, dtype=torch.float64) * torch.randn(1, 1, 3, dtype=torch.float64)
    lam = torch.linalg.matrix_exp(K.upper_triangular_asymmetrize(layer.correlation(x)))
    ref = lam.mT @ x
    m = int(ea.chebyshev_degree(ea.norm_bound(_uta_t(*layer.factors(x)).reshape(-1, 20, 20)), 2.0**-53).max())
    assert _err(layer(x), ref, x) <= 4 * m * 20 * torch.finfo(torch.float64).eps
    assert layer.explain(x).route.form == "chebyshev-factored"


def test_gradcheck_float64():
    torch.manual_seed(0)
    S = _skew(3, 6).requires_grad_()
    x = torch.randn(3, 6, 2, dtype=torch.float64, requires_grad=True)
    fn = lambda S, x: K.exp_skew_action(S, x, check=False)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (S, x))
    assert torch.autograd.gradgradcheck(fn, (S, x))


def test_gradient_matches_dense_route():
    torch.manual_seed(0)
    S = _skew(8, 12, scale=1.5).requires_grad_()
    x = torch.randn(8, 12, 3, dtype=torch.float64, requires_grad=True)
    g = torch.randn(8, 12, 3, dtype=torch.float64)
    got = torch.autograd.grad(K.exp_skew_action(S, x), (S, x), g)
    ref = torch.autograd.grad(torch.linalg.matrix_exp(S) @ x, (S, x), g)
    tol = 64 * 12 * torch.finfo(torch.float64).eps * 40
    for a, b in zip(got, ref):
        assert (a - b).abs().max() <= tol * b.abs().max()


def test_layer_gradcheck_float64():
    torch.manual_seed(0)
    layer = OrthonormalAttention(2, dtype=torch.float64)
    x = torch.randn(2, 5, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(layer, (x,))


@pytest.mark.parametrize("bad", [float("nan"), 1e6])
def test_batch_independence(bad):
    """One NaN or huge sample changes no other sample (bit for bit) and raises nothing; it takes the dense route."""
    torch.manual_seed(0)
    layer = OrthonormalAttention(4)
    x = torch.randn(600, 16, 4)  # more than GROUPS * GROUP_MIN samples: the degree groups act
    clean = layer(x)
    x2 = x.clone()
    x2[7] = bad if bad != bad else x2[7] * bad
    out = layer(x2)
    others = torch.arange(600) != 7
    assert torch.equal(out[others], clean[others])
    if bad == bad:
        assert torch.isfinite(out[7]).all()
    else:
        assert torch.isnan(out[7]).all()
    x2.requires_grad_()
    out = layer(x2)
    out[others].sum().backward()
    assert torch.isfinite(x2.grad[others]).all()


def test_result_does_not_depend_on_batch():
    """A sample alone and inside a batch of other norms gives the same bits (coefficients past its degree are 0)."""
    torch.manual_seed(0)
    S = torch.cat([_skew(1, 16, 0.1), _skew(299, 16, 3.0, seed=3)])
    x = torch.randn(300, 16, 4, dtype=torch.float64)
    assert torch.equal(K.exp_skew_action(S, x)[:1], K.exp_skew_action(S[:1], x[:1]))


def test_coefficients_are_bessel():
    mpmath = pytest.importorskip("mpmath")
    rho = torch.tensor([1 / 64, 0.5, 3.0, 17.3, 60.0, 120.0], dtype=torch.float64)
    c = ea.chebyshev_coefficients(rho, 150)
    for i, r in enumerate(rho.tolist()):
        for k in range(151):
            ref = float(mpmath.besselj(k, r)) * (1 if k == 0 else 2)
            assert abs(c[i, k].item() - ref) <= 16 * torch.finfo(torch.float64).eps


def test_coefficients_cpu_and_torch_recurrences_agree_bit_for_bit():
    # the NumPy recurrence of CPU samples against the torch one (every other device), rescaling and edge cases
    # included; a negative control: a recurrence started elsewhere gives other bits
    torch.manual_seed(5)
    rho = torch.cat([torch.tensor([0.0, 1e-310, 1e-200, 1e-5, 0.5, 88.0, float("inf")], dtype=torch.float64),
                     torch.rand(500, dtype=torch.float64) * 40])
    for degree, start in ((0, 40), (12, 88), (60, 130)):
        r = rho.clamp_min(1e-300)
        want = ea._miller_torch(r, degree, start)
        got = torch.from_numpy(ea._miller_cpu(r.numpy(), degree, start))
        assert got.shape == want.shape == (rho.numel(), degree + 1)
        assert torch.equal(got.nan_to_num(7.0, 8.0, 9.0), want.nan_to_num(7.0, 8.0, 9.0))
        if degree:
            other = torch.from_numpy(ea._miller_cpu(r.numpy(), degree, start + 2))
            assert not torch.equal(other, got)
    with pytest.raises(ValueError, match="start at or above"):
        ea.chebyshev_coefficients(rho, 20, start=10)
    # the NumPy path serves float64 only: other dtypes keep torch's, and their dtype
    assert ea.chebyshev_coefficients(rho[1:6].float(), 4, start=40).dtype == torch.float32


def _bound(rho: Fraction, m: int) -> Fraction | None:
    q = rho / (2 * (m + 2))
    if q >= 1:
        return None
    fact = 1
    for j in range(2, m + 2):
        fact *= j
    return 2 * (rho / 2) ** (m + 1) / fact / (1 - q)


@pytest.mark.parametrize("u", [Fraction(1, 2**24), Fraction(1, 2**53)])
def test_degree_rule_exact(u):
    """Each degree's largest admitted rho meets the bound in exact rationals; one degree less would not."""
    table = ea._largest_rho(float(u))
    for m in range(ea.MAX_DEGREE + 1):
        rho = Fraction(table[m].item())
        b = _bound(rho, m)
        assert b is not None and b <= u
    for r in (0.3, 5.0, 33.0, 90.0):
        m = int(ea.chebyshev_degree(torch.tensor([r], dtype=torch.float64), float(u)))
        assert _bound(Fraction(r), m) <= u
        assert m == 0 or _bound(Fraction(r), m - 1) is None or _bound(Fraction(r), m - 1) > u


def test_truncation_bound_negative_control():
    """Four degrees below the rule, the measured truncation error of the scalar expansion exceeds float32's u
    somewhere on the spectrum: the degree rule is not slack enough to hide a wrong degree."""
    rho = 20.0
    u = 2.0**-24
    m = int(ea.chebyshev_degree(torch.tensor([rho], dtype=torch.float64), u))
    y = torch.linspace(-1, 1, 2001, dtype=torch.float64)
    c = ea.chebyshev_coefficients(torch.tensor([rho], dtype=torch.float64), m + 30)[0]
    Tk = [torch.ones_like(y), y]
    for _ in range(m + 30):
        Tk.append(2 * y * Tk[-1] - Tk[-2])
    exact = torch.exp(1j * rho * y)

    def err(deg):
        s = sum(c[k] * (1j) ** k * Tk[k] for k in range(deg + 1))
        return (s - exact).abs().max().item()

    assert err(m) <= u
    assert err(m - 4) > u


def test_nan_and_dense_method():
    torch.manual_seed(0)
    S = _skew(4, 8)
    x = torch.randn(4, 8, 2, dtype=torch.float64)
    dense = K.exp_skew_action(S, x, method="dense")
    assert K.explain("exp_skew_action", S, x, method="dense").route.form == "dense"
    assert _err(dense, torch.linalg.matrix_exp(S) @ x, x) <= 1e3 * torch.finfo(torch.float64).eps
    assert degree_limit(16) == 48 and degree_limit(64) == 128


def test_bad_input_messages():
    S = _skew(2, 4)
    with pytest.raises(Exception, match="Expected .*Got"):
        K.exp_skew_action(S, torch.randn(2, 5, 2, dtype=torch.float64))
    with pytest.raises(Exception, match="Expected S and x with the same batch shape. Got"):
        K.exp_skew_action(S, torch.randn(3, 4, 2, dtype=torch.float64))
    with pytest.raises(Exception, match="Expected method in"):
        K.exp_skew_action(S, torch.randn(2, 4, 2, dtype=torch.float64), method="taylor")


def test_kernel_and_claim_limits_agree():
    from geoattn.symbolic.claims import exp_action as claim

    assert claim.MAX_DEGREE == ea.MAX_DEGREE


def test_claims_and_negative_controls():
    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims import exp_action as claim

    assert claim.make_truncation_claim().check().level is Level.PROVED
    v = claim.make_truncation_claim(-1, "neg.exp_action_truncation").check()
    assert v.level is Level.ERROR and "does not confirm the step" in v.error
    v = claim.make_recurrence_claim(-1, "neg.exp_action_recurrence", Level.REFUTED).check()
    assert v.level is Level.REFUTED and v.counterexample is not None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_norm_bound_bounds_the_spectral_norm(dtype):
    """rho >= ||S||_2 (float64 SVD of the same matrices) on random skew matrices, on the layer's, and on the
    extreme case of the pairing bound (all eigenvalue pairs equal: a multiple of the standard J, where
    (||S^2||_F^2 / 2)^(1/4) = (T/2)^(1/4) ||S||_2); within its rounding allowance of the exact float64 value of
    the formula; the allowance matters (a rank-2 S, where the formula is exact, falls below without it), and so
    does the fourth root."""
    torch.manual_seed(0)
    layer = OrthonormalAttention(8, dtype=dtype)
    J = torch.zeros(16, 16, dtype=torch.float64)
    J[torch.arange(0, 16, 2), torch.arange(1, 16, 2)] = 1.0
    J = (J - J.mT) * 3.0
    mats = [_skew(200, 16, 3.0).to(dtype), _uta_t(*layer.factors(torch.randn(200, 64, 8, dtype=dtype))),
            J.to(dtype)[None], _skew(50, 8, 1e-3).to(dtype)]
    for S in mats:
        exact = torch.linalg.matrix_norm(S.double(), 2)
        rho = ea.norm_bound(S)
        formula = (torch.linalg.matrix_norm(torch.bmm(S.double(), S.double())) ** 2 / 2) ** 0.25
        T = S.shape[-1]
        assert (rho >= exact).all()
        assert (rho <= formula * (1 + 4 * T * T * torch.finfo(dtype).eps + 1e-11)).all()  # and the 1e-12 margins
    assert torch.allclose(ea.norm_bound(J[None].to(dtype)), torch.tensor([3.0 * 8 ** 0.25], dtype=torch.float64),
                          rtol=64 * 16 * torch.finfo(dtype).eps)
    # the tight case: a rank-2 skew S = a b^T - b a^T has one eigenvalue pair, so (||S^2||_F^2 / 2)^(1/4) = ||S||_2;
    # in float32 the formula without its rounding allowance falls below ||S||_2 on about half the samples, with it
    # never (negative control of the allowance)
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(2000, 16, 1, generator=g), torch.randn(2000, 16, 1, generator=g)
    S = (a @ b.mT - b @ a.mT).to(dtype)
    exact = torch.linalg.matrix_norm(S.double(), 2)
    assert (ea.norm_bound(S) >= exact).all()
    raw = (torch.linalg.vector_norm(torch.bmm(S, S), dim=(-2, -1)).double() ** 2 / 2) ** 0.25
    if dtype == torch.float32:
        assert (raw < exact).sum() > 100
    # past (T^2 + 2) u = 1/2 the allowance is not valid and ||S||_1 serves (half precision here)
    H = _skew(3, 32, 1.0).to(torch.bfloat16)
    assert (ea.norm_bound(H) >= torch.linalg.matrix_norm(H.double(), 2)).all()
    with pytest.raises(ValueError, match="rounding allowance"):
        ea.bound_from_norms(torch.ones(1, dtype=torch.float64), torch.ones(1, dtype=torch.float64), 32, torch.bfloat16)
    # negative control: the square root of ||S^2||_F / sqrt(2) without the fourth root is not a bound when ||S|| < 1
    S = _skew(50, 8, 0.01).to(dtype)
    assert not ((torch.linalg.matrix_norm(torch.bmm(S, S)).double() / 2 ** 0.5)
                >= torch.linalg.matrix_norm(S.double(), 2)).all()


def test_working_rho_is_representable_and_not_below():
    rho = torch.tensor([1.0, 1 / 3, 2.0 ** -6, 7.123456789], dtype=torch.float64)
    r = ea.working_rho(rho, torch.float32)
    assert (r >= rho).all() and torch.equal(r, r.float().double())
    assert (r.float().double() - rho <= rho * torch.finfo(torch.float32).eps).all()
    assert torch.equal(ea.working_rho(rho, torch.float64), rho)


def test_square_norm_claim_and_its_control():
    """The pairing behind norm_bound is proved (the derivation accepted, the exact identity at n = 2 .. 5), and the
    same identity for a general matrix is refuted with an exact counterexample."""
    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims import exp_action as claim

    v = claim.make_square_norm_claim().check()
    assert v.level is Level.PROVED
    v = claim.make_square_norm_claim(True, "neg.exp_action_pairing", Level.REFUTED).check()
    assert v.level is Level.REFUTED and v.counterexample is not None
