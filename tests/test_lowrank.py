"""Linear-time volume-preserving attention: the low-rank form against an independent T x T reference,
its derived backward passes in both gradient layouts, the inverse, structure, memory and batch independence."""

import pytest
import torch

from conftest import ShapeRecorder
from geoattn import kernels as K
from geoattn import testing as T
from geoattn.nn import VolumePreservingAttention

f64 = torch.float64


def eps(dtype):
    return torch.finfo(dtype).eps


def tol(dtype, n, scale=1.0, k=32):
    """k * n * eps(dtype), times the size of the values compared."""
    return k * n * eps(dtype) * max(1.0, scale)


def skew(d, dtype=f64, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(d, d, generator=g, dtype=dtype) * scale / d
    return a - a.mT


def reference(x, A, activation):
    """Independent float64 reference: Lambda = f(x A x^T) formed as a T x T matrix with torch.linalg."""
    x, A = x.to(f64), A.to(f64)
    C = x @ A @ x.mT
    eye = torch.eye(C.shape[-1], dtype=f64)
    lam = torch.linalg.solve(eye + C, eye - C) if activation == "cayley" else torch.linalg.matrix_exp(C)
    return lam.mT @ x


def inputs(kind, B, T_, d, dtype=f64, seed=0):
    g = torch.Generator().manual_seed(seed)
    if kind == "random":
        return torch.randn(B, T_, d, generator=g, dtype=dtype)
    if kind == "rank1":  # every token a multiple of one vector
        return torch.randn(B, T_, 1, generator=g, dtype=dtype) @ torch.randn(B, 1, d, generator=g, dtype=dtype)
    if kind == "zero_column":  # a feature that is zero at every token
        x = torch.randn(B, T_, d, generator=g, dtype=dtype)
        x[..., 0] = 0
        return x
    raise ValueError(kind)


SHAPES = [(7, 3), (9, 4), (4, 4), (3, 5), (1, 3)]  # d < T, d = T, d > T, T = 1


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("T_,d", SHAPES)
@pytest.mark.parametrize("kind", ["random", "rank1", "zero_column"])
def test_lowrank_and_full_forms_agree_with_the_reference(activation, T_, d, kind):
    x = inputs(kind, 3, T_, d)
    A = skew(d, scale=2.0)
    ref = reference(x, A, activation)
    scale = float(x.abs().max())
    for method in ("lowrank", "full", "auto"):
        y = K.vp_attention(x, A, activation=activation, method=method)
        assert (y - ref).abs().max() <= tol(f64, T_ * d, scale), (method, (y - ref).abs().max())


def test_auto_picks_the_low_rank_form_exactly_when_d_is_below_T():
    def form(T, d, **kw):
        return K.explain("vp_attention", torch.randn(2, T, d, dtype=f64), skew(d), **kw)

    e = form(16, 4)
    assert e.route.form == "lowrank" and "d=4 < T=16" in dict((r.name, w) for r, w in e.rejected)["full/eager"]
    assert form(4, 4).route.form == "full" and form(3, 5).route.form == "full"
    assert form(3, 5, method="lowrank").route.form == "lowrank"


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("T_,d", [(6, 3), (3, 4)])
def test_gradcheck_of_the_low_rank_backward(activation, T_, d):
    x = torch.randn(2, T_, d, dtype=f64, requires_grad=True)
    A = skew(d, scale=2.0).requires_grad_()
    fn = lambda x, A: K.vp_attention(x, A, activation=activation, method="lowrank", check=False)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, A))
    assert torch.autograd.gradgradcheck(fn, (x, A))


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("kind", ["random", "rank1"])
def test_low_rank_gradients_equal_autograd_of_the_reference_in_both_layouts(activation, kind):
    """Dense random incoming gradient and the expanded one of out.sum(): both give autograd's answer."""
    x0 = inputs(kind, 4, 12, 3)
    A0 = skew(3, scale=2.0)
    g = torch.randn(4, 12, 3, dtype=f64)
    xr, Ar = x0.clone().requires_grad_(), A0.clone().requires_grad_()
    want_dense = torch.autograd.grad(reference(xr, Ar, activation), (xr, Ar), g)
    want_sum = torch.autograd.grad(reference(xr, Ar, activation).sum(), (xr, Ar))
    for want, loss in ((want_dense, lambda y: (y * g).sum()), (want_sum, lambda y: y.sum())):
        x, A = x0.clone().requires_grad_(), A0.clone().requires_grad_()
        loss(K.vp_attention(x, A, activation=activation, method="lowrank")).backward()
        for got, ref in ((x.grad, want[0]), (A.grad, 0.5 * (want[1] - want[1].mT))):
            assert (got - ref).abs().max() <= tol(f64, 36, float(ref.abs().max()), k=64), (got - ref).abs().max()


def test_the_gradient_of_a_sum_loss_arrives_expanded_and_is_handled():
    """out.sum() gives an incoming gradient with zero strides; the backward must not depend on its layout."""
    x = torch.randn(5, 10, 3, dtype=f64, requires_grad=True)
    A = skew(3)
    y = K.vp_attention(x, A)
    seen = []
    y.register_hook(lambda grad: seen.append(grad.stride()))
    y.sum().backward()
    assert seen and all(s == 0 for s in seen[0])
    dense = torch.autograd.grad(K.vp_attention(x, A), x, torch.ones(5, 10, 3, dtype=f64))[0]
    assert torch.equal(x.grad, dense)


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("T_,d", [(9, 3), (3, 4)])
def test_inverse_round_trip_and_the_wrong_sign_fails(activation, T_, d):
    torch.manual_seed(1)
    layer = VolumePreservingAttention(d, activation=activation, dtype=f64)
    with torch.no_grad():
        layer.weight = 3 * layer.weight  # correlations of order one and above
    x = torch.randn(4, T_, d, dtype=f64)
    y = layer(x)
    scale = float(x.abs().max())
    assert (layer.inverse(y) - x).abs().max() <= tol(f64, T_ * d, scale, k=64)
    assert (y.norm(dim=-2) - x.norm(dim=-2)).abs().max() <= tol(f64, T_, scale)  # rows of Z keep their norms
    # negative control: applying the layer again (A instead of -A) does not undo it
    assert (layer(y) - x).abs().max() > 1e6 * tol(f64, T_ * d, scale, k=64)


def test_inverse_refuses_the_arbitrary_weighting():
    with pytest.raises(ValueError, match="Expected skew_sym=True"):
        VolumePreservingAttention(3, skew_sym=False).inverse(torch.randn(2, 5, 3))


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("dim,seq_len", [(2, 5), (4, 3)])
def test_both_activations_are_volume_preserving_below_and_above_d(activation, dim, seq_len):
    """vp.map_volume_preserving.skew and .exp_skew: det J = 1 at T > d (low-rank form) and T < d (full form)."""
    torch.manual_seed(dim + seq_len)
    layer = VolumePreservingAttention(dim, activation=activation)
    with torch.no_grad():
        layer.weight = 3 * layer.weight
    T.assert_volume_preserving(layer, torch.randn(4, seq_len, dim))


def test_a_non_skew_weighting_is_refused_and_its_skew_part_is_what_the_form_uses():
    """The identity needs A skew (negative control): check=True refuses a general A; check=False uses its skew
    part, which differs from Cayley(x A x^T)^T x with the general A."""
    x = torch.randn(2, 8, 3, dtype=f64)
    A = torch.randn(3, 3, dtype=f64)
    with pytest.raises(ValueError, match="skew"):
        K.vp_attention(x, A)
    y = K.vp_attention(x, A, check=False)
    assert (y - reference(x, 0.5 * (A - A.mT), "cayley")).abs().max() <= tol(f64, 24, float(x.abs().max()))
    assert (y - reference(x, A, "cayley")).abs().max() > 1e6 * tol(f64, 24, float(x.abs().max()))


def test_a_sample_does_not_depend_on_the_rest_of_its_batch():
    x = torch.randn(3, 10, 4)
    A = skew(4, dtype=torch.float32)
    alone = K.vp_attention(x[:1], A)
    x2 = x.clone()
    x2[1:] *= 1e3
    assert torch.equal(K.vp_attention(x2, A)[:1], alone)


@pytest.mark.parametrize("activation", ["cayley", "exp"])
def test_no_T_by_T_tensor_and_memory_linear_in_T(activation):
    """With d < T the forward and backward never create a tensor with two dimensions of size T, and the
    activation memory (saved tensors plus output) grows linearly with T."""
    layer = VolumePreservingAttention(4, activation=activation)
    x = torch.randn(3, 37, 4, requires_grad=True)
    with ShapeRecorder() as shapes:
        layer(x).square().sum().backward()
    assert shapes and not [s for s in shapes if s.count(37) >= 2]
    # the recorder sees a T x T matrix when one is built (negative control)
    with ShapeRecorder() as shapes:
        layer.attention_matrix(x)
    assert [s for s in shapes if s.count(37) >= 2]

    def saved_bytes(T_):
        total = 0

        def pack(t):
            nonlocal total
            total += t.numel() * t.element_size()
            return t

        xx = torch.randn(8, T_, 4, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = layer(xx)
        return total + out.numel() * out.element_size()

    b1, b2 = saved_bytes(64), saved_bytes(256)
    assert b2 <= 4.2 * b1  # 4x the tokens: at most ~4x the memory (a T x T term would give 16x)


def test_vmap_and_bad_arguments():
    x = torch.randn(3, 8, 2, dtype=f64)
    A = skew(2)
    batched = torch.func.vmap(lambda v: K.vp_attention(v, A))(x)
    assert (batched - K.vp_attention(x, A)).abs().max() <= tol(f64, 16, float(x.abs().max()))
    with pytest.raises(ValueError, match="Expected activation"):
        K.vp_attention(x, A, activation="softmax")
    with pytest.raises(ValueError, match="Expected method"):
        K.vp_attention(x, A, method="qr")
    with pytest.raises(K.KernelShapeError, match="features"):
        K.vp_attention(x, skew(3))
    with pytest.raises(K.KernelDtypeError, match="one dtype"):
        K.vp_attention(x, A.float())
    with pytest.raises(ValueError, match="Expected activation"):
        VolumePreservingAttention(2, activation="softmax")


@pytest.mark.parametrize("activation", ["cayley", "exp"])
def test_gradcheck_when_A_broadcasts_against_x(activation):
    """x unbatched with a batch of weightings, and both batched with broadcasting leading dimensions."""
    fn = lambda x, A: K.vp_attention(x, A, activation=activation, method="lowrank", check=False)  # noqa: E731
    for xs, As in (((6, 3), (2, 3, 3)), ((2, 1, 6, 3), (3, 3, 3))):
        x = torch.randn(*xs, dtype=f64, requires_grad=True)
        A = torch.randn(*As, dtype=f64)
        A = (A - A.mT).requires_grad_()
        assert torch.autograd.gradcheck(fn, (x, A))


def test_a_nan_neighbour_changes_no_other_sample():
    """A nan in one sample must not switch the large-norm route of the others."""
    C = torch.randn(3, 4, 4, dtype=f64)
    C = C - C.mT
    C[1] *= 1e5
    alone = K.cayley(C[1:2])
    C[0, 0, 1] = C[0, 1, 0] = float("nan")
    assert torch.equal(K.cayley(C)[1:2], alone)
    x = torch.randn(3, 9, 3, dtype=f64)
    x[1:] *= 1e4
    A = skew(3)
    finite = K.vp_attention(x, A)
    x[0] = float("nan")
    assert torch.equal(K.vp_attention(x, A)[1:], finite[1:])


def test_vp_attention_on_the_meta_device_with_default_arguments():
    y = K.vp_attention(torch.empty(2, 8, 3, device="meta"), torch.empty(3, 3, device="meta"))
    assert y.shape == (2, 8, 3) and y.device.type == "meta"
