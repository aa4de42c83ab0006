"""The structure-of-arrays LU (geoattn.kernels._batched_solve) and the gram-lu route of vp_attention
(geoattn.kernels._gram_lu): against LAPACK and the T x T form, with negative controls."""

import pytest
import torch

from geoattn import kernels as K
from geoattn.errors import ShapeError
from geoattn.kernels import _batched_solve, _gram, _gram_lu
from geoattn.kernels._batched_solve import batched_solve, soa_lu, soa_lu_solve
from geoattn.kernels._gram_lu import vp_gram_lu

F64 = torch.float64
EPS = torch.finfo(F64).eps
DIMS = (5, 6, 8, 11, 16, 23, 32)


def _backward_error(M, X, R):
    """max |M X - R| / (|M| |X| + |R|), per entry: a stable solve keeps it near d eps whatever the conditioning."""
    return ((M @ X - R).abs() / (M.abs() @ X.abs() + R.abs())).max().item()


def _matrices(kind, B, d, gen):
    M = torch.randn(B, d, d, dtype=F64, generator=gen)
    if kind == "ill":  # singular values from 1 down to 1e-10
        U, _, V = torch.linalg.svd(M)
        M = U @ torch.diag_embed(torch.logspace(0, -10, d, dtype=F64).expand(B, d)) @ V
    if kind == "zero-lead":  # a diagonally dominant matrix with its rows rolled, and a zero leading entry
        M = (torch.randn(B, d, d, dtype=F64, generator=gen) + 2 * d * torch.eye(d, dtype=F64)).roll(1, dims=-2)
        M[:, 0, 0] = 0
    return M


def _check_solver(solve, d, kind, transpose, seed=0):
    gen = torch.Generator().manual_seed(seed * 100 + d)
    M = _matrices(kind, 64, d, gen)
    R = torch.randn(64, d, 3, dtype=F64, generator=gen)
    X = solve(M, R, transpose)
    Mt = M.mT if transpose else M
    ref = torch.linalg.solve(Mt, R)
    cond = torch.linalg.cond(M).max().item()
    back = _backward_error(Mt, X, R)
    fwd = ((X - ref).abs().max() / ref.abs().max()).item()
    return back, fwd, cond


@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("kind", ["random", "ill", "zero-lead"])
@pytest.mark.parametrize("transpose", [False, True])
def test_solver_matches_lapack(d, kind, transpose):
    back, fwd, cond = _check_solver(batched_solve, d, kind, transpose)
    assert back <= 4 * d * EPS, back  # backward stable, like LAPACK's pivoted solve
    assert fwd <= 4 * d * EPS * cond, (fwd, cond)


def test_solver_needs_pivoting_and_the_unpivoted_control_fails():
    """Negative control: elimination without row exchanges divides by the zero leading entry; the same check
    that passes the pivoted solver above must reject it."""
    def unpivoted(M, R, transpose):
        LU, perm = soa_lu(M.permute(1, 2, 0), pivot=False)
        return soa_lu_solve(LU, perm, R.permute(1, 2, 0), transpose).permute(2, 0, 1)

    for d in (5, 16):
        back, _, _ = _check_solver(unpivoted, d, "zero-lead", False)
        assert not back <= 4 * d * EPS  # NaN or large
        back, _, _ = _check_solver(unpivoted, d, "random", False, seed=3)
        ok, _, _ = _check_solver(batched_solve, d, "random", False, seed=3)
        assert ok <= 4 * d * EPS and back > ok  # small pivots: the unpivoted error is larger


def test_factors_reproduce_the_permuted_matrix():
    gen = torch.Generator().manual_seed(1)
    d, B = 9, 32
    M = torch.randn(d, d, B, dtype=F64, generator=gen)
    LU, perm = soa_lu(M)
    L = torch.tril(LU.permute(2, 0, 1), -1) + torch.eye(d, dtype=F64)
    U = torch.triu(LU.permute(2, 0, 1))
    PM = M.permute(2, 0, 1).gather(1, perm.t()[:, :, None].expand(B, d, d))
    assert ((L @ U - PM).abs().max() <= 4 * d * EPS * PM.abs().max())
    assert (L.abs() <= 1 + EPS).all()  # partial pivoting bounds the multipliers by 1
    assert sorted(perm[:, 0].tolist()) == list(range(d))


def test_solver_shape_errors():
    with pytest.raises(ShapeError, match="Expected M of shape .* Got shape"):
        soa_lu(torch.zeros(3, 4, 2))
    with pytest.raises(ShapeError, match="Expected rhs of shape .* Got shape"):
        batched_solve(torch.zeros(2, 3, 3), torch.zeros(2, 4, 1))


def test_solver_is_per_sample():
    """A NaN matrix gives NaN in its own slice only; every other sample is bitwise its lone result."""
    gen = torch.Generator().manual_seed(2)
    M = torch.randn(8, 6, 6, dtype=F64, generator=gen)
    R = torch.randn(8, 6, 2, dtype=F64, generator=gen)
    M[3, 2, 4] = float("nan")
    X = batched_solve(M, R, True)
    assert X[3].isnan().all()
    for b in (0, 4, 7):
        assert torch.equal(X[b], batched_solve(M[b:b + 1], R[b:b + 1], True)[0])


# ---- the layer ----


@pytest.fixture
def lu_in_float64(monkeypatch):
    """In float64 a residual of eps(float64)/16 is out of reach and every sample would take LAPACK's fallback;
    these tests hold the LU route to the float32 tolerance so that the LU's own N is the one compared."""
    monkeypatch.setattr(_gram_lu, "residual_tolerance", lambda dtype: torch.finfo(torch.float32).eps / 16)
    calls = []
    real = torch.linalg.solve
    monkeypatch.setattr(_gram_lu.torch.linalg, "solve", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def _layer_case(d, T, shared, scale, seed=0):
    gen = torch.Generator().manual_seed(seed + 1000 * d + T)
    x = scale * torch.randn(3, T, d, dtype=F64, generator=gen)
    A = torch.randn(*(() if shared else (3,)), d, d, dtype=F64, generator=gen) / d ** 0.5
    A = A - A.mT
    g = torch.randn(3, T, d, dtype=F64, generator=gen)
    M = torch.eye(d, dtype=F64) + x.mT @ x @ A
    return x, A, g, torch.linalg.cond(M).max().item()


def _value_and_grads(f, x, A, g):
    x, A = x.clone().requires_grad_(), A.clone().requires_grad_()
    y = f(x, A)
    return (y, *torch.autograd.grad(y, (x, A), g))


def _compare(f, d, T, shared, scale, calls=None):
    """Errors and tolerances of value, gradient in x and in A against the full form; ``calls`` (a fixture's
    counter of LAPACK solves) is cut to those of ``f``."""
    x, A, g, cond = _layer_case(d, T, shared, scale)
    got = _value_and_grads(f, x, A, g)
    n = None if calls is None else len(calls)
    ref = _value_and_grads(lambda a, b: K.vp_attention(a, b, method="full"), x, A, g)
    # the Cayley factor's error scales with cond(I + GA) (the T x T form's with the same number), gradients with
    # its square; both relative to the size of what is compared
    tols = [64 * T * EPS * cond * (1 + scale) ** k for k in (1, 2, 2)]
    errs = [((a - b).abs().max() / (1 + b.abs().max())).item() for a, b in zip(got, ref)]
    if calls is not None:
        del calls[n:]
    return errs, tols


@pytest.mark.parametrize("d", [5, 8, 16])
@pytest.mark.parametrize("T_of", ["d+1", 40, 100])
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0])
def test_layer_matches_the_full_form(d, T_of, shared, scale, lu_in_float64):
    T = d + 1 if T_of == "d+1" else T_of
    errs, tols = _compare(vp_gram_lu, d, T, shared, scale, lu_in_float64)
    assert all(e <= t for e, t in zip(errs, tols)), (errs, tols)
    assert not lu_in_float64 or scale == 3.0  # only the ill-conditioned scale may need LAPACK's fallback


def test_layer_fallback_samples_match_too():
    """At the float64 tolerance every sample fails the residual check: N and the backward's W come from the
    fallback (W = N gN^T), and results still match the full form."""
    errs, tols = _compare(vp_gram_lu, 8, 40, False, 1.0)
    assert all(e <= t for e, t in zip(errs, tols)), (errs, tols)


def test_negative_control_a_wrong_transpose_in_the_backward_is_caught(monkeypatch, lu_in_float64):
    real = _gram_lu.soa_lu_solve
    calls = []

    def flipped(LU, perm, rhs, transpose=False):  # the forward's solve right, the backward's with M, not M^T
        calls.append(transpose)
        return real(LU, perm, rhs, transpose if len(calls) == 1 else not transpose)

    monkeypatch.setattr(_gram_lu, "soa_lu_solve", flipped)
    errs, tols = _compare(vp_gram_lu, 8, 40, True, 1.0)
    assert errs[0] <= tols[0] and not (errs[1] <= tols[1] and errs[2] <= tols[2]), (errs, tols)


def test_negative_control_an_unpivoted_factor_is_caught(monkeypatch, lu_in_float64):
    """M = I + GA with M[0, 0] = 0 up to rounding: A has only the entries (0, 1) = a, (1, 0) = -a with a = 1 / G[0, 1],
    so (GA)[0, 0] = -1. Without pivoting the factors blow up (or are NaN); the residual check must catch every such
    sample and send it to LAPACK (the output stays right); with pivoting no sample needs it."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(3, 9, 5, dtype=F64, generator=gen)
    G01 = (x[..., 0] * x[..., 1]).sum(-1)
    A = torch.zeros(3, 5, 5, dtype=F64)
    A[:, 0, 1], A[:, 1, 0] = 1 / G01, -1 / G01
    M = torch.eye(5, dtype=F64) + x.mT @ x @ A
    assert (M[:, 0, 0].abs() <= 16 * EPS).all()
    ref = K.vp_attention(x, A, method="full")
    lu_in_float64.clear()
    tol = 64 * 9 * EPS * torch.linalg.cond(M).max() * (1 + ref.abs().max())
    assert (vp_gram_lu(x, A) - ref).abs().max() <= tol
    assert len(lu_in_float64) == 0
    monkeypatch.setattr(_gram_lu, "soa_lu", lambda M: soa_lu(M, pivot=False))
    assert (vp_gram_lu(x, A) - ref).abs().max() <= tol
    assert len(lu_in_float64) == 1  # one LAPACK call for the failed samples


def test_gradcheck_small_case(lu_in_float64):
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(2, 7, 5, dtype=F64, generator=gen, requires_grad=True)
    A = torch.randn(5, 5, dtype=F64, generator=gen) / 3
    A = (A - A.T).requires_grad_()
    assert torch.autograd.gradcheck(vp_gram_lu, (x, A))
    assert not lu_in_float64  # the LU's own N and backward were checked
    assert torch.autograd.gradgradcheck(vp_gram_lu, (x, A))


def test_layer_is_per_sample_and_a_nan_sample_stays_nan():
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(6, 20, 8, generator=gen)
    A = torch.randn(8, 8, generator=gen) / 3
    A = A - A.T
    x[2, 5, 3] = float("nan")
    y = vp_gram_lu(x, A)
    assert y[2].isnan().any()
    for b in (0, 3, 5):
        assert torch.equal(y[b], vp_gram_lu(x[b:b + 1], A)[0])


def test_large_samples_take_the_qr_form(monkeypatch):
    calls = []
    real = _gram.vp_lowrank  # the QR form of the failed samples (_gram._qr_for_failed)
    monkeypatch.setattr(_gram, "vp_lowrank", lambda *a: calls.append(a[0].shape[0]) or real(*a))
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(4, 30, 6, generator=gen)
    x[1] *= 300  # |x|_F^2 |A|_F > 1e6
    A = torch.randn(6, 6, generator=gen) / 3
    A = A - A.T
    y = vp_gram_lu(x, A)
    assert calls == [1]
    ref = K.vp_attention(x.double(), A.double(), method="full")
    rel = ((y.double() - ref).abs().amax((-2, -1)) / ref.abs().amax((-2, -1))).max()
    assert rel <= 64 * 30 * torch.finfo(torch.float32).eps


@pytest.fixture
def no_native_lu(monkeypatch):
    """The native LU kernels off (GEOATTN_NATIVE=0): they are taken before the eager routes where they build."""
    from geoattn.kernels import _native_lu

    monkeypatch.setattr(_native_lu, "_libraries", {})
    monkeypatch.setenv("GEOATTN_NATIVE", "0")


def test_route_and_reasons(no_native_lu):
    x = torch.randn(4, 64, 8)
    A = torch.randn(8, 8)
    A = A - A.T
    text = str(K.explain("vp_attention", x, A))
    assert "-> gram-lu/eager" in text and "GEOATTN_NATIVE=0" in text
    big = torch.randn(2, 64, 32)
    A32 = torch.randn(32, 32)
    text = str(K.explain("vp_attention", big, A32 - A32.T))
    assert "-> gram-solve/eager" in text and f"d=32 > {_gram_lu.LU_MAX_DIM}" in text
    assert _batched_solve.__doc__ and "Note [structure-of-arrays LU]" in _batched_solve.__doc__


def test_short_sequences_keep_the_lapack_route(no_native_lu):
    x = torch.randn(4, 16, 8)
    A = torch.randn(8, 8)
    text = str(K.explain("vp_attention", x, A - A.T))
    assert "-> gram-solve/eager" in text and f"T=16 < {_gram_lu.LU_MIN_T}" in text
