"""The Cayley transform at every magnitude (Note [Cayley at large norms]): the solve up to norm 8 T, two
Newton--Schulz steps above (claim cayley.polish) with a measured defect, the eigendecomposition for what they
leave; a singular sample stays its own."""

import math

import pytest
import sympy as sp
import torch

from geoattn import kernels as K
from geoattn.kernels import _functions as F
from geoattn.kernels import _generated as gen
from geoattn.nn import VolumePreservingAttention

DTYPES = [torch.float32, torch.float64]
SCALES = [0.1, 1.0, 3.0, 10.0, 1e3, 1e6]


def skew(shape, T, dtype, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(*shape, T, T, generator=g, dtype=torch.float64) * scale
    return (m - m.mT).to(dtype)


def defect(q):
    """max |Q^T Q - I| per matrix, computed in float64."""
    q = q.double()
    return (q.mT @ q - torch.eye(q.shape[-1], dtype=torch.float64)).abs().flatten(-2).amax(-1)


def bar(T, dtype, k=64):
    """The reliability bar ``k T eps``."""
    return k * T * torch.finfo(dtype).eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T", [5, 8, 12, 16, 32])
def test_orthogonal_at_every_entry_scale(dtype, T):
    for scale in SCALES:
        C = skew([16], T, dtype, scale, seed=T)
        lam = K.cayley(C)
        assert torch.isfinite(lam).all(), scale
        err = float(defect(lam).max())
        assert err <= bar(T, dtype, 8), (scale, err / (T * torch.finfo(dtype).eps))  # the suite's 8 T eps too


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_solve_serves_ordinary_magnitudes_and_the_polish_large_ones(dtype, monkeypatch):
    """Unit-normal and 3x entries never leave the solve (no polish, no eigendecomposition); 1e3x entries are
    polished and not decomposed (T even)."""
    calls = {"polish": 0, "eigh": 0}
    polish, eigh = gen.orthogonal_polish, F._cayley_eigh
    monkeypatch.setattr(gen, "orthogonal_polish", lambda e: calls.__setitem__("polish", calls["polish"] + 1)
                        or polish(e))
    monkeypatch.setattr(F, "_cayley_eigh", lambda c: calls.__setitem__("eigh", calls["eigh"] + 1) or eigh(c))
    for T in (8, 12, 16, 32):
        for scale in (0.1, 1.0, 3.0):
            K.cayley(skew([64], T, dtype, scale))
    assert calls == {"polish": 0, "eigh": 0}
    K.cayley(skew([64], 16, dtype, 1e3))
    assert calls["polish"] == 2 and calls["eigh"] == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_negative_control_without_the_polish_the_solve_misses_the_bar(dtype, monkeypatch):
    C = skew([16], 15, dtype, 1e4)  # odd T: the solve's defect grows fastest
    assert float(defect(K.cayley(C)).max()) <= bar(15, dtype, 8)
    monkeypatch.setattr(F, "CAYLEY_SOLVE_NORM_PER_T", math.inf)  # every sample on the solve alone
    monkeypatch.setenv("GEOATTN_NATIVE", "0")  # the LAPACK solve (the native route's elimination is in double)
    assert F._large_skew(C) is None
    assert float(defect(K.cayley(C)).max()) > bar(15, dtype)


def test_negative_control_a_broken_polish_is_caught_by_the_measured_defect(monkeypatch):
    """The defect after the steps is measured, not assumed: a step that does nothing leaves the solve's defect,
    and the samples go to the eigendecomposition."""
    C = skew([8], 15, torch.float32, 1e4)
    taken = []
    eigh = F._cayley_eigh
    monkeypatch.setattr(gen, "orthogonal_polish", lambda e: e)
    monkeypatch.setattr(F, "_cayley_eigh", lambda c: taken.append(c.shape[0]) or eigh(c))
    lam = K.cayley(C)
    assert sum(taken) > 0
    assert float(defect(lam).max()) <= bar(15, torch.float32, 8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T", [5, 16])
def test_a_nan_or_huge_sample_changes_nothing_else(dtype, T):
    C = skew([6], T, dtype, 1.0)
    alone = K.cayley(C[1:])
    for poison in (float("nan"), 1e6, 1e30 if dtype == torch.float64 else 1e15):
        P = C.clone()
        P[0] = skew([], T, dtype, 1.0, seed=9) * poison if poison == poison else poison
        P[3] *= 1e3  # a polished neighbour too
        leaf = P.clone().requires_grad_()
        out = K.cayley(leaf)
        assert torch.equal(out[1:3], alone[:2]) and torch.equal(out[4:], alone[3:]), poison
        if poison == poison:
            assert float(defect(out[0])) <= bar(T, dtype)
        g = torch.randn_like(out)
        (gl,) = torch.autograd.grad(out, leaf, g)
        ref_leaf = C[1:3].clone().requires_grad_()
        (gr,) = torch.autograd.grad(K.cayley(ref_leaf), ref_leaf, g[1:3])
        assert torch.equal(gl[1:3], gr)


def test_gradcheck_on_polished_samples():
    C = skew([3], 5, torch.float64, 30.0)  # norm above 8 T = 40: the polished route
    assert F._large_skew(C) is not None and bool(F._large_skew(C).all())

    def f(m):
        return K.cayley(m - m.mT)

    assert torch.autograd.gradcheck(f, (0.5 * C.clone().requires_grad_(),))


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_singular_sample_gets_nan_and_fails_nothing_else(dtype):
    """A non-skew sample with I + C singular made LAPACK raise for the whole batch."""
    C = skew([4], 6, dtype, 1.0)
    M = C.clone()
    M[2] = -torch.eye(6, dtype=dtype)  # I + M = 0
    out = K.cayley(M)
    assert torch.isnan(out[2]).all()
    assert torch.equal(out[[0, 1, 3]], K.cayley(C[[0, 1, 3]]))
    x = torch.randn(4, 6, 2, dtype=dtype)
    N = C.clone()
    N[1] = torch.eye(6, dtype=dtype)  # I - N = 0: the apply form's solve
    y = K.cayley_apply(N, x, method="solve", check=False)
    assert torch.isnan(y[1]).all()
    assert torch.equal(y[[0, 2, 3]], K.cayley_apply(C[[0, 2, 3]], x[[0, 2, 3]], method="solve"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T", [4, 16, 17])
def test_arbitrary_weighting_layer_keeps_a_huge_or_nan_sample_to_itself(dtype, T):
    torch.manual_seed(0)
    layer = VolumePreservingAttention(4, skew_sym=False, dtype=dtype)
    x = torch.randn(5, T, 4, dtype=dtype)
    ref_x = x[1:].clone().requires_grad_()
    ref = layer(ref_x)
    gref = torch.autograd.grad(ref.sum(), ref_x)[0]
    for poison in (1e6, float("nan")):
        xp = x.clone()
        xp[0] = xp[0] * poison
        leaf = xp.requires_grad_()
        y = layer(leaf)
        assert torch.equal(y[1:], ref), poison
        (g,) = torch.autograd.grad(y.sum(), leaf)
        assert torch.equal(g[1:], gref), poison
        if poison == 1e6:  # the attention matrix is orthogonal: every column of x keeps its norm
            rel = ((y[0].double().norm(dim=0) - xp[0].double().norm(dim=0)).abs() / xp[0].double().norm(dim=0))
            assert float(rel.max()) <= bar(T, dtype)


def test_polish_claim_is_proved_and_a_wrong_step_is_refuted():
    from geoattn.symbolic import expressions as ex
    from geoattn.symbolic import get_claim
    from geoattn.symbolic.claim import CheckContext
    from geoattn.symbolic.claims._common import Policy, grid, prove_evidence
    from geoattn.symbolic.claims.kernels_spectral import polish_derivation, polish_identity
    from geoattn.symbolic.evidence import ProofFailed

    assert get_claim("cayley.polish").check().level.value == "proved"
    E, I = ex.Eo, ex.I_T
    wrong = [("R", (2 * I - E.T * E)), ("N", E * sp.MatrixSymbol("R", ex.T, ex.T))]  # E(2I - E^T E): not the step
    ev = Policy(identity=polish_identity(wrong), search=grid(T=[2, 3]))(CheckContext(claim_id="control"))
    assert any(e.level.value == "refuted" for e in ev)
    with pytest.raises(ProofFailed):
        prove_evidence(lambda: polish_derivation(wrong))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [3, 16, 17, 18, 33, 63])
def test_aligned_solve_does_not_depend_on_the_batch(dtype, n):
    """Note [aligned batches]: a sample's solution is the same bits alone, in its batch and at another place in it;
    and it solves the system."""
    from geoattn.kernels._lapack import padded_size, solve
    g = torch.Generator().manual_seed(n)
    A = (torch.randn(9, n, n, generator=g) + n * torch.eye(n)).to(dtype)
    B = torch.randn(9, n, 4, generator=g).to(dtype)
    full = solve(A, B)
    alone = torch.stack([solve(A[i], B[i]) for i in range(9)])
    assert torch.equal(full, alone) and torch.equal(full[3:], solve(A[3:], B[3:]))
    right = solve(A, B.mT, left=False)
    assert torch.equal(right[3:], solve(A[3:], B[3:].mT, left=False))
    eps = torch.finfo(dtype).eps
    assert (A @ full - B).abs().max() <= 8 * n * eps * (A.abs() @ full.abs()).max()
    assert (right @ A - B.mT).abs().max() <= 8 * n * eps * (right.abs() @ A.abs()).max()
    vec = solve(A, B[..., 0])  # a vector right-hand side, as torch.linalg.solve takes it
    assert vec.shape == B[..., 0].shape and torch.equal(vec[3:], solve(A[3:], B[3:, :, 0]))
    assert padded_size(n) >= n and (padded_size(n) == n) == (n <= 16 or n % 4 == 0)
