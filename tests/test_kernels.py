"""Generated kernels against independent plain-torch references.

Tolerances scale with the dtype and the size: ``k * n * eps(dtype)`` times the
conditioning of the problem where it enters (``1 + |C|`` bounds the condition
number of ``I + C`` for skew ``C``).
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geoattn import kernels as K
from geoattn.kernels import _exp as E

DTYPES = [torch.float32, torch.float64]


def eps(dtype):
    return torch.finfo(dtype).eps


def cond_tol(m, dtype, k=32):
    """``k * n * eps * (1 + |M|_2)``: for skew C, cond(I + C) <= 1 + |C|_2 (its singular
    values are >= 1), and exp(S) has relative sensitivity of the same order."""
    n = m.shape[-1]
    norm = float(torch.linalg.matrix_norm(m.double(), ord=2).max()) if m.numel() else 0.0
    return k * n * eps(dtype) * (1 + norm)


def rand_skew(shape, n, dtype, scale=1.0, gen=None):
    m = torch.randn(*shape, n, n, dtype=torch.float64, generator=gen) * scale
    return (m - m.mT).to(dtype)


# -- references: written independently of the generated code ---------------------------


def ref_cayley(c):
    """(I - C)(I + C)^{-1} in float64 through a transposed left solve."""
    eye = torch.eye(c.shape[-1], dtype=torch.float64)
    return torch.linalg.solve((eye + c.double()).mT, (eye - c.double()).mT).mT


def ref_skew_from_lower(c):
    out = torch.zeros_like(c)
    n = c.shape[-1]
    for i in range(n):
        for j in range(i):
            out[..., i, j] = c[..., i, j]
            out[..., j, i] = -c[..., i, j]
    return out


def ref_uta(c):
    out = torch.zeros_like(c)
    n = c.shape[-1]
    for i in range(n):
        for j in range(i + 1, n):
            out[..., i, j] = c[..., i, j]
            out[..., j, i] = -c[..., i, j]
    return out


def ref_expm(s):
    """exp(S) in float64 by scaling and squaring with a 24-term Taylor series.

    torch.linalg.matrix_exp is not used as the reference: in float64 it is off by
    about 2e-12 for |S| near 0.02 (seen on torch 2.13, CPU), far above n*eps.
    """
    s = s.double()
    norm = float(s.abs().sum(dim=-1).amax()) if s.numel() else 0.0
    k = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0 else 0
    a = s / 2**k
    out = torch.eye(s.shape[-1], dtype=torch.float64).expand_as(s).clone()
    term = out.clone()
    for j in range(1, 25):
        term = term @ a / j
        out = out + term
    for _ in range(k):
        out = out @ out
    return out


shapes = st.tuples(
    st.lists(st.integers(1, 3), min_size=0, max_size=2),  # batch dims
    st.integers(1, 6),  # T
    st.integers(1, 4),  # d
)


@settings(max_examples=40, deadline=None)
@given(shape=shapes, dtype=st.sampled_from(DTYPES), scale=st.sampled_from([1e-2, 1.0, 10.0]), seed=st.integers(0, 2**16))
def test_cayley_against_reference(shape, dtype, scale, seed):
    batch, T, d = shape
    g = torch.Generator().manual_seed(seed)
    C = rand_skew(batch, T, dtype, scale, g)
    L = K.cayley(C)
    assert L.shape == C.shape and L.dtype == dtype
    tol = cond_tol(C, dtype)
    assert torch.allclose(L.double(), ref_cayley(C), atol=tol, rtol=0)
    eye = torch.eye(T, dtype=torch.float64)
    assert (L.double().mT @ L.double() - eye).abs().max() <= tol
    if L.numel():
        assert torch.allclose(torch.linalg.det(L.double()), torch.ones(batch, dtype=torch.float64), atol=tol)
    x = torch.randn(*batch, T, d, dtype=torch.float64, generator=g).to(dtype)
    want = ref_cayley(C).mT @ x.double()
    for method in ("solve", "matrix", "auto"):
        got = K.cayley_apply(C, x, method=method)
        assert torch.allclose(got.double(), want, atol=tol * (1 + float(x.abs().max())), rtol=0)


@settings(max_examples=40, deadline=None)
@given(
    shape=shapes,
    dtype=st.sampled_from(DTYPES),
    scale=st.sampled_from([1e-2, 1.0, 5.0]),
    seed=st.integers(0, 2**16),
    method=st.sampled_from(["taylor", "eigh"]),
)
def test_exp_skew_against_matrix_exp(shape, dtype, scale, seed, method):
    batch, T, _ = shape
    g = torch.Generator().manual_seed(seed)
    S = rand_skew(batch, T, dtype, scale, g)
    E = K.exp_skew(S, method=method)
    tol = cond_tol(S, dtype)
    assert torch.allclose(E.double(), ref_expm(S), atol=tol, rtol=0)
    eye = torch.eye(T, dtype=torch.float64)
    assert (E.double().mT @ E.double() - eye).abs().max() <= tol
    if T > 0 and E.numel():
        assert torch.allclose(torch.linalg.det(E.double()), torch.ones(batch, dtype=torch.float64), atol=tol)


@settings(max_examples=30, deadline=None)
@given(shape=shapes, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_elementwise_and_product_kernels(shape, dtype, seed):
    batch, T, d = shape
    g = torch.Generator().manual_seed(seed)
    C = torch.randn(*batch, T, T, generator=g, dtype=torch.float64).to(dtype)
    assert torch.equal(K.skew_from_lower(C), ref_skew_from_lower(C))
    assert torch.equal(K.upper_triangular_asymmetrize(C), ref_uta(C))
    x = torch.randn(*batch, T, d, generator=g, dtype=torch.float64).to(dtype)
    A = torch.randn(d, d, generator=g, dtype=torch.float64).to(dtype)
    want = torch.einsum("...ik,kl,...jl->...ij", x.double(), A.double(), x.double())
    tol = 16 * d * eps(dtype) * (1 + float(want.abs().max()))
    assert torch.allclose(K.vp_correlation(x, A).double(), want, atol=tol, rtol=0)
    assert torch.allclose(K.vp_correlation_lower(x, A).double(), ref_skew_from_lower(want), atol=tol, rtol=0)
    W = torch.randn(T, T, generator=g, dtype=torch.float64).to(dtype)
    want = torch.einsum("ij,...jk->...ik", 0.5 * (W.double() + W.double().T), x.double())
    tol = 16 * T * eps(dtype) * (1 + float(want.abs().max()))
    assert torch.allclose(K.lsa_update(x, W).double(), want, atol=tol, rtol=0)


def test_reference_expm_is_accurate():
    s = torch.tensor([[0.0, 0.0188536], [-0.0188536, 0.0]], dtype=torch.float64)
    c, sn = torch.cos(torch.tensor(0.0188536, dtype=torch.float64)), torch.sin(torch.tensor(0.0188536, dtype=torch.float64))
    exact = torch.stack([torch.stack([c, sn]), torch.stack([-sn, c])])
    assert (ref_expm(s) - exact).abs().max() <= 4 * eps(torch.float64)
    assert (K.exp_skew(s) - exact).abs().max() <= 4 * eps(torch.float64)


def test_cayley_apply_auto_picks_solve_when_d_below_T(monkeypatch):
    from geoattn.kernels import _generated as gen

    calls = []
    for name in ("cayley_apply_solve", "cayley_apply_matrix"):
        real = getattr(gen, name)
        monkeypatch.setattr(gen, name, lambda *a, _n=name, _f=real: calls.append(_n) or _f(*a))
    C = rand_skew([2], 5, torch.float64)
    K.cayley_apply(C, torch.randn(2, 5, 2, dtype=torch.float64))
    K.cayley_apply(C, torch.randn(2, 5, 7, dtype=torch.float64))
    assert calls == ["cayley_apply_solve", "cayley_apply_matrix"]


def test_skew_weighting_gives_skew_correlations():
    x = torch.randn(5, 4, 3, dtype=torch.float64)
    A = torch.randn(3, 3, dtype=torch.float64)
    A = A - A.T
    C = K.vp_correlation(x, A)
    assert (C + C.mT).abs().max() <= 16 * 3 * eps(torch.float64) * C.abs().max()


def test_lift_represents_right_multiplication():
    Lam = K.cayley(rand_skew([2], 4, torch.float64))
    Z = torch.randn(2, 3, 4, dtype=torch.float64)
    L = K.lift(Lam, 3)
    assert L.shape == (2, 12, 12)
    tol = 16 * 12 * eps(torch.float64)  # k * n * eps, n = 12 (entries of Z and Lam are O(1))
    assert torch.allclose((L @ Z.reshape(2, 12, 1)).reshape(2, 3, 4), Z @ Lam, atol=tol * float(Z.abs().max()), rtol=0)
    assert torch.allclose(L.mT @ L, torch.eye(12, dtype=torch.float64).expand(2, 12, 12), atol=tol, rtol=0)


# -- gradients -----------------------------------------------------------------------


def test_gradcheck_custom_backwards():
    torch.manual_seed(0)
    P = torch.randn(2, 4, 4, dtype=torch.float64, requires_grad=True)
    x = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p: K.cayley(p - p.mT), (P,))
    assert torch.autograd.gradcheck(K.cayley, (P,))  # the VJP holds for non-skew C too
    assert torch.autograd.gradcheck(lambda p, y: K.cayley_apply(p - p.mT, y, method="matrix"), (P, x))
    assert torch.autograd.gradcheck(lambda p, y: K.cayley_apply(p - p.mT, y, method="solve"), (P, x))
    assert torch.autograd.gradcheck(lambda p: K.exp_skew(K.upper_triangular_asymmetrize(p)), (P,))
    A = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    W = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(K.vp_correlation_lower, (x, A))
    assert torch.autograd.gradcheck(K.lsa_update, (x, W))


@pytest.mark.parametrize("method", ["taylor", "eigh"])
@pytest.mark.parametrize("scale", [0.1, 30.0])
def test_exp_skew_gradcheck_both_methods(method, scale):
    # scale 30 needs several squarings on the Taylor path
    torch.manual_seed(1)
    P = (scale * torch.randn(3, 4, 4, dtype=torch.float64)).requires_grad_()
    assert torch.autograd.gradcheck(lambda p: K.exp_skew(p - p.mT, method=method, check=False), (P,))


def test_exp_skew_taylor_matches_eigh_at_large_norm():
    S = rand_skew([16], 6, torch.float64, 50.0)
    k = int(E._squarings(S).max())
    assert k >= 8
    tol = 8 * 6 * 2**k * eps(torch.float64)  # rounding grows with the 2^k squarings
    assert torch.allclose(K.exp_skew(S, method="taylor"), K.exp_skew(S, method="eigh"), atol=tol, rtol=0)


def test_squarings_is_the_smallest_that_reaches_one_half():
    for norm in [0.0, 0.3, 0.5, 0.51, 1.0, 7.9, 8.0, 1e6]:
        S = torch.zeros(2, 2, 2, dtype=torch.float64)
        S[1, 0, 1], S[1, 1, 0] = norm, -norm
        k0, k = E._squarings(S).tolist()
        assert k0 == 0  # the zero matrix beside it needs none: each sample has its own k
        assert norm / 2**k <= 0.5
        assert k == 0 or norm / 2 ** (k - 1) > 0.5 or norm == 0
    assert E._squarings(torch.zeros(0, 3, 3)).numel() == 0


def test_exp_skew_non_finite_input_gives_non_finite_output():
    S = rand_skew([2], 3, torch.float64)
    S[0, 0, 1], S[0, 1, 0] = float("nan"), float("nan")
    assert not torch.isfinite(K.exp_skew(S, check=False)[0]).all()
    assert torch.isfinite(K.exp_skew(S, check=False)[1]).all()


def test_exp_skew_taylor_refused_inside_torch_func():
    S = rand_skew([2], 3, torch.float64)
    with pytest.raises(ValueError, match="Expected method 'auto' or 'eigh' inside torch.func"):
        torch.func.vmap(lambda s: K.exp_skew(s, method="taylor", check=False))(S)


@pytest.mark.parametrize("method", ["taylor", "eigh"])
def test_exp_skew_double_backward_both_methods(method):
    P = torch.randn(2, 3, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda p: K.exp_skew(p - p.mT, method=method, check=False), (P,))


def test_broken_taylor_backward_is_caught(monkeypatch):
    """Negative control: a squaring VJP missing one term fails gradcheck."""
    from geoattn.kernels import _generated as gen

    monkeypatch.setattr(gen, "square_vjp", lambda e, g: g @ e.mT)
    P = (10 * torch.randn(2, 3, 3, dtype=torch.float64)).requires_grad_()
    assert not torch.autograd.gradcheck(
        lambda p: K.exp_skew(p - p.mT, method="taylor", check=False), (P,), raise_exception=False
    )


def test_exp_skew_gradient_with_repeated_eigenvalues():
    # S = 0 and block-diagonal S with equal blocks have repeated eigenvalues
    S = torch.zeros(1, 4, 4, dtype=torch.float64)
    S[0, 0, 1], S[0, 1, 0], S[0, 2, 3], S[0, 3, 2] = 1.0, -1.0, 1.0, -1.0
    for base in (torch.zeros_like(S), S):
        P = base.clone().requires_grad_()
        G = torch.randn(1, 4, 4, dtype=torch.float64)
        (K.exp_skew(P, check=False) * G).sum().backward()
        Q = base.clone().requires_grad_()
        (torch.linalg.matrix_exp(Q) * G).sum().backward()
        tol = 64 * 4 * eps(torch.float64) * (1 + float(torch.linalg.matrix_norm(base, ord=2).max())) * float(G.abs().max())
        assert torch.allclose(P.grad, Q.grad, atol=tol, rtol=0)


def test_double_backward():
    P = torch.randn(2, 3, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda p: K.cayley(p - p.mT), (P,))
    # exp_skew switches to the block-exponential Frechet form when a graph is requested
    assert torch.autograd.gradgradcheck(lambda p: K.exp_skew(p - p.mT, check=False), (P,))
    S = (P - P.mT).detach()
    G = torch.randn_like(S)
    first = torch.autograd.grad(K.exp_skew(S.requires_grad_()), S, G)[0]
    S2 = S.detach().requires_grad_()
    graphed = torch.autograd.grad(K.exp_skew(S2), S2, G, create_graph=True)[0]
    tol = 64 * 3 * torch.finfo(torch.float64).eps
    assert graphed.requires_grad
    assert torch.allclose(first, graphed, atol=tol, rtol=0)


def test_torch_func_transforms():
    """vmap/jacrev through the custom functions equal the same transforms of plain torch."""
    S = torch.randn(3, 4, 4, dtype=torch.float64)
    S = S - S.mT
    J = torch.func.vmap(torch.func.jacrev(lambda s: K.cayley(s)))(S)
    eye = torch.eye(4, dtype=torch.float64)
    J_ref = torch.func.vmap(torch.func.jacrev(lambda s: torch.linalg.solve(eye + s, eye - s)))(S)
    tol = 64 * 4 * torch.finfo(torch.float64).eps
    assert torch.allclose(J, J_ref, atol=tol, rtol=0)
    J = torch.func.vmap(torch.func.jacrev(lambda s: K.exp_skew(s, check=False)))(S)
    J_ref = torch.func.vmap(torch.func.jacrev(torch.linalg.matrix_exp))(S)
    assert torch.allclose(J, J_ref, atol=tol, rtol=0)


class _WrongCayley(torch.autograd.Function):
    """A broken backward, -1/2 (I + C)^T G (I + C)^T: the negative control of the VJP tests."""

    @staticmethod
    def forward(ctx, c):
        ctx.save_for_backward(c)
        return K.cayley(c.detach())

    @staticmethod
    def backward(ctx, g):
        (c,) = ctx.saved_tensors
        e = torch.eye(c.shape[-1], dtype=c.dtype)
        return -0.5 * (e + c).mT @ g @ (e + c).mT


def test_gradcheck_catches_a_broken_backward():
    P = torch.randn(2, 3, 3, dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(_WrongCayley.apply, (P,), raise_exception=False)


def test_orthogonality_check_catches_a_broken_forward():
    C = rand_skew([3], 4, torch.float64)
    broken = torch.linalg.solve(torch.eye(4, dtype=torch.float64) + C, torch.eye(4, dtype=torch.float64) - C, left=False).mT @ C
    assert (broken.mT @ broken - torch.eye(4, dtype=torch.float64)).abs().max() > 1e3 * eps(torch.float64)


# -- dtypes, errors, compile, devices -------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_computed_in_float32(dtype):
    C = rand_skew([2], 4, torch.float32)
    out = K.cayley(C.to(dtype))
    assert out.dtype == dtype
    assert torch.allclose(out.float(), K.cayley(C.to(dtype).float()).to(dtype).float())
    assert K.exp_skew(C.to(dtype)).dtype == dtype


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: K.cayley(torch.zeros(3, 4)), K.KernelShapeError, "Expected C to be square"),
        (lambda: K.cayley(torch.zeros(3, 3, dtype=torch.int64)), K.KernelDtypeError, "Expected C to have a floating dtype"),
        (lambda: K.cayley_apply(torch.zeros(3, 3), torch.zeros(4, 2)), K.KernelShapeError, "Expected x to have 3 rows"),
        (lambda: K.cayley_apply(torch.zeros(3, 3), torch.zeros(3, 2), method="fast"), ValueError, "Expected method"),
        (lambda: K.cayley_apply(torch.ones(3, 3), torch.zeros(3, 2), method="solve"), ValueError, "Expected C to be skew"),
        (lambda: K.exp_skew(torch.ones(3, 3)), ValueError, "Expected S to be skew-symmetric"),
        (lambda: K.exp_skew(torch.zeros(3, 3), method="pade"), ValueError, "Expected method in"),
        (lambda: K.vp_correlation(torch.zeros(2, 5, 3), torch.zeros(4, 4)), K.KernelShapeError, "Expected A to have 3 rows"),
        (lambda: K.lsa_update(torch.zeros(2, 5, 3), torch.zeros(4, 4)), K.KernelShapeError, "Expected q to have 4 rows"),
        (lambda: K.lift(torch.eye(3), 0), ValueError, "Expected d to be a positive int"),
        (lambda: K.cayley([[0.0]]), K.KernelDtypeError, "Expected C to be a torch.Tensor"),
    ],
)
def test_bad_input_messages(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_errors_are_value_and_type_errors():
    assert issubclass(K.KernelShapeError, ValueError) and issubclass(K.KernelDtypeError, TypeError)


@pytest.mark.slow
def test_torch_compile_matches_eager():
    torch._dynamo.reset()
    C = rand_skew([8], 5, torch.float32)
    q = torch.randn(8, 5, 2)
    W = torch.randn(5, 5)
    fc = torch.compile(K.cayley, dynamic=False)
    fl = torch.compile(K.lsa_update, dynamic=False)
    tol = 64 * 5 * eps(torch.float32)
    assert torch.allclose(fc(C), K.cayley(C), atol=tol)
    assert torch.allclose(fl(q, W), K.lsa_update(q, W), atol=tol)
    P = C.clone().requires_grad_()
    fc(P).sum().backward()
    Q = C.clone().requires_grad_()
    K.cayley(Q).sum().backward()
    assert torch.allclose(P.grad, Q.grad, atol=tol)


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_matches_cpu(dtype):
    C = rand_skew([64], 8, dtype)
    x = torch.randn(64, 8, 4, dtype=dtype)
    tol = 64 * 8 * eps(dtype) * 10
    for fn, args in [
        (K.cayley, (C,)),
        (K.exp_skew, (C,)),
        (lambda c, y: K.cayley_apply(c, y, method="solve"), (C, x)),
        (K.upper_triangular_asymmetrize, (C,)),
    ]:
        cpu = fn(*args)
        gpu = fn(*(a.cuda() for a in args))
        assert gpu.device.type == "cuda"
        assert torch.allclose(gpu.cpu(), cpu, atol=tol)
    P = C.cuda().double().requires_grad_()
    assert torch.autograd.gradcheck(K.cayley, (P[:2],))
    assert torch.autograd.gradcheck(lambda p: K.exp_skew(p - p.mT, check=False), (P[:2],))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exp_skew_sample_does_not_depend_on_its_batch(dtype):
    """A large neighbour once forced extra squarings on every sample (error 2e-15 -> 9e-10 in float64)."""
    S = rand_skew([3], 5, dtype)
    alone = K.exp_skew(S[:1])
    for big in (30.0, 1e4):  # Taylor with more squarings, and the eigendecomposition route
        S2 = S.clone()
        S2[1:] *= big
        assert torch.equal(K.exp_skew(S2)[:1], alone)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("scale", [1e2, 1e4, 1e6])
def test_exp_skew_orthogonal_at_every_magnitude(dtype, scale):
    S = rand_skew([8], 6, dtype, scale)
    E = K.exp_skew(S)
    assert torch.isfinite(E).all()
    err = (E.mT @ E - torch.eye(6, dtype=dtype)).abs().max()
    assert err <= 8 * 6 * eps(dtype), err



@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exp_skew_polish_is_what_keeps_many_squarings_orthogonal(dtype, monkeypatch):
    """Negative control of Note [large norms]: without the Newton-Schulz step the Taylor path's
    orthogonality error grows with the squarings (here ||S|| ~ 300, eight or nine of them)."""
    S = rand_skew([8], 6, dtype, 100.0)
    assert int(E._squarings(S).max()) > E.POLISH_SQUARINGS
    eye = torch.eye(6, dtype=dtype)
    polished = K.exp_skew(S, method="taylor")
    monkeypatch.setattr(E, "POLISH_SQUARINGS", 10**6)  # where the Taylor Function reads it
    raw = K.exp_skew(S, method="taylor")
    assert (polished.mT @ polished - eye).abs().max() <= 8 * 6 * eps(dtype)
    assert (raw.mT @ raw - eye).abs().max() > 8 * 6 * eps(dtype)


def _close(a, b, n):
    """Within 8 n eps of the dtype, relative to the larger entry (the tolerance rule of the suite)."""
    tol = 8 * n * torch.finfo(a.dtype).eps * max(1.0, float(b.abs().max()))
    return bool((a - b).abs().max() <= tol)


def test_exp_skew_empty_meta_and_vmap():
    assert K.exp_skew(torch.zeros(2, 0, 0)).shape == (2, 0, 0)
    m = K.exp_skew(torch.empty(3, 4, 4, device="meta"))
    assert m.shape == (3, 4, 4) and m.device.type == "meta"
    S = rand_skew([3], 4, torch.float64)
    v = torch.func.vmap(K.exp_skew)(S)  # default arguments: the check is skipped inside the transform
    assert _close(v, K.exp_skew(S), 4)
    with pytest.raises(ValueError, match="inside torch.func"):
        torch.func.vmap(lambda s: K.exp_skew(s, method="taylor"))(S)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T", [3, 8])
@pytest.mark.parametrize("scale", [1e2, 1e4, 1e6])
def test_cayley_orthogonal_at_every_magnitude(dtype, T, scale):
    """Large-norm skew samples come from the eigendecomposition (Note [Cayley at large norms])."""
    C = rand_skew([8], T, dtype, scale)
    lam = K.cayley(C)
    assert (lam.mT @ lam - torch.eye(T, dtype=dtype)).abs().max() <= 8 * T * eps(dtype)
    x = torch.randn(8, T, 2, dtype=dtype) * scale
    y = K.cayley_apply(C, x)
    assert ((y.norm(dim=-2) - x.norm(dim=-2)).abs() / x.norm(dim=-2)).max() <= 8 * T * eps(dtype)
    if dtype == torch.float32 and T == 3 and scale == 1e6:  # negative control: the solve alone drifts
        from geoattn.kernels import _generated as gen

        solved = gen.cayley_matrix(C)
        assert (solved.mT @ solved - torch.eye(T)).abs().max() > 8 * T * eps(dtype)


def test_cayley_sample_does_not_depend_on_its_batch_and_non_skew_input_keeps_the_solve():
    C = rand_skew([3], 4, torch.float64)
    alone = K.cayley(C[:1])
    C2 = C.clone()
    C2[1:] *= 1e5  # neighbours routed to the eigendecomposition
    assert torch.equal(K.cayley(C2)[:1], alone)
    # a large non-skew matrix is not skew: it keeps the solve (the eigendecomposition form would be wrong)
    M = 100 * torch.randn(2, 4, 4, dtype=torch.float64)
    eye = torch.eye(4, dtype=torch.float64)
    ref = torch.linalg.solve(eye + M, eye - M)
    cond = float(torch.linalg.cond(eye + M).max())  # a general (non-normal) solve loses cond(I + M) digits
    assert bool((K.cayley(M) - ref).abs().max() <= 8 * 4 * eps(torch.float64) * cond * float(ref.abs().max()))


def test_cayley_and_cayley_apply_compose_with_vmap_and_meta():
    C = rand_skew([3], 5, torch.float64)
    x = torch.randn(3, 5, 2, dtype=torch.float64)
    assert _close(torch.func.vmap(K.cayley_apply)(C, x), K.cayley_apply(C, x), 5)
    assert _close(torch.func.vmap(K.cayley)(C), K.cayley(C), 5)
    meta = K.cayley_apply(torch.empty(3, 5, 5, device="meta"), torch.empty(3, 5, 2, device="meta"))
    assert meta.shape == (3, 5, 2) and meta.device.type == "meta"


def test_eigh_form_claims_and_a_wrong_mobius_map_is_refuted():
    import sympy as sp

    from geoattn.symbolic import get_claim
    from geoattn.symbolic import expressions as ex
    from geoattn.symbolic.claims.kernels_spectral import _check_eigh_form, _eigh_form_identity
    from geoattn.symbolic.claim import CheckContext
    from geoattn.symbolic import algebra as alg

    assert get_claim("cayley.eigh_form").check().level.value == "checked"
    a = sp.Symbol("a", real=True)
    wrong = ex.RealPart(ex.U * sp.DiagMatrix(ex.VectorMap(ex.theta, sp.Lambda(a, (1 - sp.I * a) / (1 + sp.I * a))))
                        * sp.Adjoint(ex.U))  # the inverse map: Cayley(-C)
    ev = _check_eigh_form(CheckContext(claim_id="control"), _eigh_form_identity(wrong, alg.cayley, "control"))
    assert ev[0].level.value == "refuted"


@pytest.mark.parametrize("T", [1, 3, 8])
def test_cayley_backward_of_sum_and_mean_losses_equals_the_dense_one(T):
    """out.sum() and out.mean() send one number expanded (Note [constant incoming gradient]): the rank-one
    shortcut must give what the dense incoming gradient of ones gives, first and second order."""
    C = rand_skew([5], T, torch.float64).requires_grad_()
    ones = torch.ones(5, T, T, dtype=torch.float64)
    dense = torch.autograd.grad(K.cayley(C), C, ones)[0]
    via_sum = torch.autograd.grad(K.cayley(C).sum(), C)[0]
    via_mean = torch.autograd.grad(K.cayley(C).mean(), C)[0]
    tol = 8 * T * eps(torch.float64) * float(dense.abs().max())
    assert (via_sum - dense).abs().max() <= tol
    assert (via_mean * C.numel() - dense).abs().max() <= tol
    assert torch.autograd.gradgradcheck(lambda c: K.cayley(c).sum(), (C,))
    # a non-constant expanded gradient (one number per sample) takes the general path
    per_sample = torch.arange(1.0, 6.0, dtype=torch.float64)[:, None, None].expand(5, T, T)
    got = torch.autograd.grad(K.cayley(C), C, per_sample)[0]
    want = torch.autograd.grad(K.cayley(C), C, per_sample.contiguous())[0]
    assert torch.equal(got, want)  # the backward copies an expanded gradient first: the same computation



def test_method_choices_return_their_reasons():
    """Each method is chosen by the operation's routes, and explain() says why (as torch records why a fast path
    was not taken)."""
    S = torch.randn(2, 4, 4, dtype=torch.float64)
    S = S - S.mT
    e = K.explain("exp_skew", S.float())
    assert e.route.form == "taylor-or-eigh" and "512" in e.reason
    assert K.explain("exp_skew", S).route.form == "taylor-batched"
    e = K.explain("exp_skew", S.to("meta"))
    assert e.route.form == "eigh"
    assert K.explain("exp_skew", S, method="taylor").route.form == "taylor"
    assert K.explain("exp_skew", torch.zeros(0, 0), method="taylor").route.form == "empty"
    assert K.explain("exp_skew", torch.zeros(2, 0, 0, device="meta"), method="taylor").route.form == "empty"
    with pytest.raises(ValueError, match="Expected method 'auto' or 'eigh' inside"):
        K.explain("exp_skew", S.to("meta"), method="taylor")
    with pytest.raises(ValueError, match="Expected method in"):
        K.explain("exp_skew", S, method="pade")
    C6 = torch.randn(6, 6, dtype=torch.float64)
    C6 = C6 - C6.mT
    C3 = C6[:3, :3]
    assert K.explain("cayley_apply", C6, torch.randn(6, 3, dtype=torch.float64)).route.form == "solve"
    e = K.explain("cayley_apply", C3, torch.randn(3, 6, dtype=torch.float64))
    assert e.route.form == "matrix" and "d=6 >= T=3" in dict((r.form, w) for r, w in e.rejected)["solve"]
    e = K.explain("cayley_apply", 100 * C6, torch.randn(6, 3, dtype=torch.float64))
    assert e.route.form == "solve" and "polished matrix" in e.route.per_sample  # the large sample's own decision
    e = K.explain("cayley_apply", C6, torch.randn(6, 3, dtype=torch.float64), "matrix")
    assert e.route.form == "matrix" and e.rejected[0][1] == "method 'matrix' requested"
    assert K.exp_skew(torch.zeros(2, 0, 0, device="meta"), method="taylor").shape == (2, 0, 0)
