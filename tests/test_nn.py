"""Layers: every preservation property a docstring claims is confirmed with geoattn.testing, and every
property the ledger refutes for that layer is shown to fail (negative controls)."""

import math

import pytest
import torch
import torch.nn.functional as F

from geoattn.errors import OptionError
from geoattn.kernels import dispatch
from geoattn import testing as T
from geoattn.nn import (
    Attention,
    LayerDtypeError,
    LayerShapeError,
    LinearSymplecticAttention,
    MultiHeadAttention,
    OrthonormalAttention,
    Skew,
    VolumePreservingAttention,
    attention_weights,
)

f64 = torch.float64


def eps(dtype):
    return torch.finfo(dtype).eps


def close(a, b, k=64):
    """|a - b| <= k * n * eps(dtype) * max(1, |b|_max), n the last dimension."""
    a, b = a.detach(), b.detach()
    tol = k * a.shape[-1] * eps(a.dtype) * max(1.0, float(b.abs().max()))
    return bool((a - b).abs().max() <= tol)


def layers(dim=4, seq_len=5):
    return {
        "vp_skew": VolumePreservingAttention(dim),
        "vp_arbitrary": VolumePreservingAttention(dim, skew_sym=False),
        "orthonormal": OrthonormalAttention(dim),
        "lsa_p": LinearSymplecticAttention(seq_len),
        "lsa_q": LinearSymplecticAttention(seq_len, update="q"),
        "attention": Attention(dim, bias=True),
        "mha": MultiHeadAttention(dim, 2, add_connection=True),
        "mha_stiefel": MultiHeadAttention(dim, 2, stiefel=True),
    }


def scale_weight(layer, s):
    with torch.no_grad():
        if layer.skew_sym:
            layer.weight = s * layer.weight  # through the Skew parametrization
        else:
            layer.weight.mul_(s)


# -- shapes, dtypes, state ------------------------------------------------------------

@pytest.mark.parametrize("name", list(layers()))
@pytest.mark.parametrize("dtype", [torch.float32, f64])
def test_batched_unbatched_and_dtype(name, dtype):
    torch.manual_seed(0)
    layer = layers()[name].to(dtype)
    x = torch.randn(3, 5, 4, dtype=dtype)
    y = layer(x)
    assert y.shape == x.shape and y.dtype == dtype
    assert close(layer(x[1]), y[1])
    assert close(layer(x.reshape(3, 1, 5, 4)).reshape(3, 5, 4), y)  # any leading dims


@pytest.mark.parametrize("name", list(layers()))
def test_state_dict_round_trip_weights_only(name, tmp_path):
    torch.manual_seed(1)
    layer = layers()[name]
    path = tmp_path / "layer.pt"
    torch.save(layer.state_dict(), path)
    fresh = layers()[name]
    fresh.load_state_dict(torch.load(path, weights_only=True))
    x = torch.randn(2, 5, 4)
    assert torch.equal(fresh(x), layer(x))


@pytest.mark.parametrize("name", list(layers()))
def test_reset_parameters_and_repr(name):
    layer = layers()[name]
    x = torch.randn(2, 5, 4)
    before = layer(x).detach()
    torch.manual_seed(123)
    layer.reset_parameters()
    assert not torch.equal(layer(x), before)
    text = repr(layer)
    assert ("dim=4" in text) or ("seq_len=5" in text)


def test_factory_kwargs():
    for layer in (VolumePreservingAttention(3, dtype=f64), OrthonormalAttention(3, dtype=f64),
                  LinearSymplecticAttention(3, dtype=f64), Attention(3, dtype=f64),
                  MultiHeadAttention(4, 2, stiefel=True, dtype=f64)):
        assert all(p.dtype == f64 and p.device.type == "cpu" for p in layer.parameters())


# -- structure: volume-preserving attention -------------------------------------------

@pytest.mark.parametrize("dim,seq_len", [(1, 2), (2, 3), (3, 3), (4, 2), (2, 6)])
def test_vp_skew_map_is_volume_preserving(dim, seq_len):
    """vp.map_volume_preserving.skew, on both the solve (dim < T) and the matrix (dim >= T) paths."""
    torch.manual_seed(dim * 10 + seq_len)
    layer = VolumePreservingAttention(dim)
    scale_weight(layer, 3)  # correlations of order one and above
    x = torch.randn(6, seq_len, dim)
    T.assert_volume_preserving(layer, x)
    T.assert_orthogonal(layer.to(f64).attention_matrix(x.double()))


@pytest.mark.parametrize("dim,seq_len", [(1, 2), (2, 3), (3, 4)])
def test_vp_arbitrary_map_is_not_volume_preserving(dim, seq_len):
    """vp.map_volume_preserving.arbitrary is refuted: the check must fail on the layer."""
    torch.manual_seed(dim + seq_len)
    layer = VolumePreservingAttention(dim, skew_sym=False)
    scale_weight(layer, 3 * dim)
    x = torch.randn(6, seq_len, dim)
    with pytest.raises(AssertionError, match=r"\|det J - 1\|"):
        T.assert_volume_preserving(layer, x)
    # what does hold: Lambda(Z) is orthogonal and the frozen map is volume-preserving and symplectic
    layer = layer.to(f64)
    Lam = layer.attention_matrix(x.double())
    T.assert_orthogonal(Lam)
    frozen = Lam[:1].detach()
    T.assert_volume_preserving(lambda y: frozen.mT @ y, x)


@pytest.mark.parametrize("skew_sym", [True, False])
def test_vp_frozen_map_symplectic_but_layer_map_not(skew_sym):
    torch.manual_seed(7)
    layer = VolumePreservingAttention(4, skew_sym=skew_sym, dtype=f64)
    scale_weight(layer, 4)
    x = torch.randn(3, 5, 4, dtype=f64)
    frozen = layer.attention_matrix(x[:1]).detach()
    T.assert_symplectic(lambda y: frozen.mT @ y, x)  # lift.symplectic
    with pytest.raises(AssertionError, match="Omega"):
        T.assert_symplectic(layer, x)


def test_vp_skew_weight_stays_skew():
    layer = VolumePreservingAttention(5)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    layer(torch.randn(4, 3, 5)).square().sum().backward()
    opt.step()
    A = layer.weight
    assert torch.equal(A, -A.mT)


# -- structure: orthonormal attention ---------------------------------------------------

def test_orthonormal_activation_orthogonal_det_one_frozen_symplectic():
    torch.manual_seed(3)
    layer = OrthonormalAttention(4, dtype=f64)
    x = 2 * torch.randn(5, 6, 4, dtype=f64)
    Lam = layer.attention_matrix(x)
    T.assert_orthogonal(Lam)  # exp.orthogonal
    assert torch.allclose(torch.linalg.det(Lam), torch.ones(5, dtype=f64), atol=64 * 6 * eps(f64))  # exp.det_one
    frozen = Lam[:1].detach()
    T.assert_symplectic(lambda y: frozen.mT @ y, x)  # exp.map_symplectic.frozen
    T.assert_volume_preserving(lambda y: frozen.mT @ y, x)  # exp.map_volume_preserving.frozen


def test_orthonormal_layer_map_neither_symplectic_nor_volume_preserving():
    """exp.map_symplectic and exp.map_volume_preserving are refuted: the checks must fail."""
    torch.manual_seed(4)
    layer = OrthonormalAttention(4)
    x = torch.randn(4, 5, 4)
    with pytest.raises(AssertionError, match="Omega"):
        T.assert_symplectic(layer, x)
    with pytest.raises(AssertionError, match="det J"):
        T.assert_volume_preserving(layer, x)


@pytest.mark.parametrize("dtype", [torch.float32, f64])
def test_orthonormal_formed_operand_is_the_generated_uta_bit_for_bit(dtype):
    """The formed route's uta(q k^T)^T from the layer's factors is the generated kernel's uta(C).mT exactly, with the
    same gradients, under torch.func too; a negative control: the untransposed uta(C) is caught."""
    from geoattn import kernels as K
    from geoattn.kernels._native_exp_action import _uta_t

    torch.manual_seed(8)
    layer = OrthonormalAttention(4, dtype=dtype)
    x = torch.randn(6, 9, 4, dtype=dtype, requires_grad=True)
    got = _uta_t(*layer.factors(x))
    want = K.upper_triangular_asymmetrize(layer.correlation(x)).mT
    assert torch.equal(got, want)
    assert not torch.equal(got, want.mT)
    g = torch.randn_like(got)
    params = (x, layer.weight_q, layer.weight_k)
    for a, b in zip(torch.autograd.grad(got, params, g), torch.autograd.grad(want, params, g)):
        assert torch.equal(a, b)
    mapped = torch.func.vmap(lambda y: _uta_t(*layer.factors(y)))(x.detach()[:, None])
    assert torch.equal(mapped[:, 0], want.detach())


# -- structure: linear symplectic attention ---------------------------------------------

@pytest.mark.parametrize("update", ["p", "q"])
@pytest.mark.parametrize("seq_len,n", [(1, 1), (3, 2), (6, 3)])
def test_lsa_symplectic_and_volume_preserving(update, seq_len, n):
    torch.manual_seed(seq_len + n)
    layer = LinearSymplecticAttention(seq_len, update=update)
    x = torch.randn(4, seq_len, 2 * n)
    T.assert_symplectic(layer, x)  # lsa.map_symplectic
    T.assert_volume_preserving(layer, x)
    if seq_len > 1:  # a nonzero shear is not orthogonal
        with pytest.raises(AssertionError):
            T.assert_orthogonal(T.jacobian(layer, x))


def test_lsa_without_symmetrisation_is_caught():
    """Negative control: the update with A in place of (A + A^T)/2 is not symplectic, and the check says so."""
    torch.manual_seed(5)
    layer = LinearSymplecticAttention(4)
    A = layer.weight.detach()

    def broken(x):
        q, p = x[..., :2], x[..., 2:]
        return torch.cat([q, p + A.to(x.dtype) @ q], -1)

    x = torch.randn(3, 4, 4)
    with pytest.raises(AssertionError, match="Omega"):
        T.assert_symplectic(broken, x)
    assert float(T.symplecticity_error(layer, x).max()) == 0.0


def test_lsa_formula():
    layer = LinearSymplecticAttention(3, dtype=f64)
    x = torch.randn(2, 3, 4, dtype=f64)
    Abar = 0.5 * (layer.weight + layer.weight.mT)
    y = layer(x)
    assert torch.equal(y[..., :2], x[..., :2])
    assert close(y[..., 2:], x[..., 2:] + Abar @ x[..., :2])


# -- agreement with torch ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, f64])
def test_attention_agrees_with_sdpa(dtype):
    torch.manual_seed(0)
    layer = Attention(6, bias=True, dtype=dtype)
    x = torch.randn(3, 5, 6, dtype=dtype)
    c = torch.randn(3, 7, 6, dtype=dtype)
    q, k, v = layer.q_proj(x), layer.k_proj(c), layer.v_proj(c)
    bool_mask = torch.rand(3, 5, 7) > 0.4
    bool_mask[0, 1] = False  # a query with no key left
    add_mask = torch.randn(5, 7, dtype=dtype)
    cases = [
        (layer(x, c), F.scaled_dot_product_attention(q, k, v)),
        (layer(x, c, mask=bool_mask), F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask)),
        (layer(x, c, mask=add_mask), F.scaled_dot_product_attention(q, k, v, attn_mask=add_mask)),
        (layer(x, c, is_causal=True), F.scaled_dot_product_attention(q, k, v, is_causal=True)),
    ]
    qs, ks, vs = layer.q_proj(x), layer.k_proj(x), layer.v_proj(x)
    cases.append((layer(x), F.scaled_dot_product_attention(qs, ks, vs)))
    cases.append((layer(x[0], mask=bool_mask[0, :, :5]),
                  F.scaled_dot_product_attention(qs[0], ks[0], vs[0], attn_mask=bool_mask[0, :, :5])))
    for ours, ref in cases:
        assert close(ours, ref)
    assert torch.equal(layer(x, c, mask=bool_mask)[0, 1], torch.zeros(6, dtype=dtype))


@pytest.mark.parametrize("add_connection", [False, True])
@pytest.mark.parametrize("stiefel", [False, True])
def test_mha_agrees_with_torch(add_connection, stiefel):
    torch.manual_seed(1)
    dim, h = 8, 4
    layer = MultiHeadAttention(dim, h, add_connection=add_connection, stiefel=stiefel, dtype=f64)
    ref = torch.nn.MultiheadAttention(dim, h, bias=False, batch_first=True, dtype=f64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([w.reshape(dim, dim) for w in (layer.weight_q, layer.weight_k,
                                                                          layer.weight_v)]))
        ref.out_proj.weight.copy_(torch.eye(dim, dtype=f64))
    x = torch.randn(3, 6, dim, dtype=f64)
    expected = ref(x, x, x, need_weights=False)[0] + (x if add_connection else 0)
    assert close(layer(x), expected)


def test_mha_scaling_is_head_size():
    layer = MultiHeadAttention(4, 4, dtype=f64)
    x = torch.randn(1, 3, 4, dtype=f64)
    q, k, v = (x @ w[0].mT for w in (layer.weight_q, layer.weight_k, layer.weight_v))
    head0 = torch.softmax(q @ k.mT / math.sqrt(1), -1) @ v
    assert close(layer(x)[..., :1], head0)


def test_mha_stiefel_stays_on_manifold_during_training():
    torch.manual_seed(2)
    layer = MultiHeadAttention(6, 2, stiefel=True)
    opt = torch.optim.Adam(layer.parameters(), lr=0.05)
    x = torch.randn(8, 4, 6)
    for _ in range(5):
        opt.zero_grad()
        layer(x).square().mean().backward()
        opt.step()
    for w in (layer.weight_q, layer.weight_k, layer.weight_v):
        # P P^T = I for each head: orthonormal rows
        assert close(w @ w.mT, torch.eye(3).expand(2, 3, 3))


# -- bad input ----------------------------------------------------------------------------

def test_bad_inputs_say_expected_and_got():
    x = torch.randn(2, 5, 4)
    cases = [
        (lambda: VolumePreservingAttention(4)(torch.randn(2, 5, 3)), LayerShapeError, "expected x with 4 features"),
        (lambda: OrthonormalAttention(4)(torch.randn(5)), LayerShapeError, "Got shape \\(5,\\)"),
        (lambda: LinearSymplecticAttention(5)(torch.randn(2, 5, 3)), LayerShapeError, "even number of features"),
        (lambda: LinearSymplecticAttention(4)(x), LayerShapeError, "seq_len = 4"),
        (lambda: MultiHeadAttention(6, 4), LayerShapeError, "n_heads to divide dim = 6. Got n_heads = 4"),
        (lambda: Attention(4)(x.long()), LayerDtypeError, "floating dtype. Got torch.int64"),
        (lambda: Attention(4)(x.double()), LayerDtypeError, "parameters' dtype torch.float32. Got torch.float64"),
        (lambda: Attention(4)(x, mask=torch.ones(3, 3, dtype=torch.bool)), LayerShapeError, "broadcastable"),
        (lambda: Attention(4)(x, mask=torch.ones(5, 5, dtype=torch.int32)), LayerDtypeError, "boolean or floating"),
        (lambda: Attention(4)(x, mask=torch.ones(5, 5, dtype=torch.bool), is_causal=True), ValueError, "not both"),
        (lambda: VolumePreservingAttention(0), LayerShapeError, "positive int. Got 0"),
        (lambda: LinearSymplecticAttention(3, update="z"), OptionError, "'p' or 'q'. Got 'z'"),
        (lambda: OrthonormalAttention(3, dtype=torch.int64), LayerDtypeError, "floating torch.dtype"),
        (lambda: Attention(4)(x, context=torch.randn(2, 5, 3)), LayerShapeError, "expected context with 4"),
    ]
    for fn, err, msg in cases:
        with pytest.raises(err, match=msg):
            fn()
    assert issubclass(LayerShapeError, ValueError) and issubclass(LayerDtypeError, TypeError)


# -- gradients --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["vp_skew", "vp_arbitrary", "orthonormal", "lsa_p", "mha_stiefel"])
def test_gradcheck(name):
    torch.manual_seed(0)
    layer = layers(dim=4, seq_len=3)[name].to(f64)
    x = torch.randn(2, 3, 4, dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(layer, (x,))


# -- the layers never materialise the lift ----------------------------------------------------

@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("name", ["vp_skew", "vp_arbitrary", "orthonormal", "lsa_p", "mha"])
def test_layers_never_build_a_dT_sized_matrix(name, native, monkeypatch):
    """Record every tensor produced in forward and backward: none has a dimension of size d*T (the lift is a
    dT x dT matrix), except the closed-form Gram runtime's view of the tokens of a batch as a (dT, B) array and
    its transpose (Note [structure-of-arrays runtime]; O(B T d)), with the native kernels and without."""
    from conftest import ShapeRecorder

    monkeypatch.setattr(dispatch, "_FORCED", [] if native else ["eager"])
    dim, seq_len = 4, 7  # d*T = 28 differs from every size the layers should use

    layer = layers(dim=dim, seq_len=seq_len)[name]
    x = torch.randn(3, seq_len, dim, requires_grad=True)
    with ShapeRecorder() as sizes:
        layer(x).square().sum().backward()
    assert sizes, "nothing recorded"
    soa = {(dim * seq_len, 3), (3, dim * seq_len)}  # batch of 3
    lifted = [s for s in sizes if dim * seq_len in s and s not in soa]
    assert not lifted, lifted
    # the recorder does see a lift when one is built (negative control)
    from geoattn.kernels import lift
    with ShapeRecorder() as sizes:
        lift(torch.eye(seq_len), dim)
    assert any(list(s).count(dim * seq_len) >= 2 for s in sizes)


@pytest.mark.parametrize("name", ["attention", "mha"])
def test_softmax_layers_preserve_neither_volume_nor_symplectic_form(name):
    """Their docstrings claim no geometric structure; the checks confirm that none holds by accident."""
    torch.manual_seed(9)
    layer = layers()[name]
    x = torch.randn(3, 5, 4)
    with pytest.raises(AssertionError, match="det J"):
        T.assert_volume_preserving(layer, x)
    with pytest.raises(AssertionError, match="Omega"):
        T.assert_symplectic(layer, x)


def test_attention_weights_are_stochastic_rows():
    """Attention's docstring: each output row is a convex combination of value rows (softmax.stochastic)."""
    torch.manual_seed(11)
    q, k = torch.randn(4, 5, 3, dtype=f64), torch.randn(4, 6, 3, dtype=f64)
    for mask in (None, torch.rand(5, 6) > 0.3, torch.randn(5, 6, dtype=f64)):
        w = attention_weights(q, k, mask)
        live = w.sum(-1) > 0  # rows with at least one key left
        assert bool((w >= 0).all())
        assert close(w.sum(-1)[live], torch.ones_like(w.sum(-1)[live]))


def test_skew_parametrization_round_trips_an_assigned_skew_matrix():
    from torch.nn.utils import parametrize

    m = torch.nn.Module()
    m.weight = torch.nn.Parameter(torch.randn(4, 4, dtype=f64))
    parametrize.register_parametrization(m, "weight", Skew())
    S = torch.randn(4, 4, dtype=f64)
    S = S - S.mT
    with torch.no_grad():
        m.weight = S
    assert torch.equal(m.weight, S)


def test_orthonormal_and_volume_preserving_run_on_meta():
    """The meta device: the kernels take their data-independent paths there (torch.compile of every layer and
    model, fullgraph, is in test_compile.py)."""
    for cls, kw in ((OrthonormalAttention, {}), (VolumePreservingAttention, {}),
                    (VolumePreservingAttention, {"activation": "exp"})):
        out = cls(4, device="meta", **kw)(torch.empty(3, 6, 4, device="meta"))
        assert out.shape == (3, 6, 4) and out.device.type == "meta"


@pytest.mark.parametrize("dtype", [torch.float32, f64])
@pytest.mark.parametrize("dim,seq_len", [(4, 7), (3, 16), (5, 3), (3, 3)])  # even and odd k, T > d and T <= d
@pytest.mark.parametrize("scale", [1e2, 1e4, 1e6])
def test_orthogonal_layers_keep_row_norms_at_every_magnitude(dtype, dim, seq_len, scale):
    """Inputs of any size: no error, no NaN, and the rows of Z keep their norms (Lambda orthogonal)."""
    torch.manual_seed(0)
    x = torch.randn(4, seq_len, dim, dtype=dtype) * scale
    kw = {"dtype": dtype}
    for layer in (OrthonormalAttention(dim, **kw), VolumePreservingAttention(dim, **kw),
                  VolumePreservingAttention(dim, activation="exp", **kw)):
        y = layer(x)
        assert torch.isfinite(y).all()
        rel = ((y.norm(dim=-2) - x.norm(dim=-2)).abs() / x.norm(dim=-2)).max()
        assert rel <= 8 * seq_len * eps(dtype), (type(layer).__name__, rel)


def test_exponential_activation_needs_the_skew_weighting():
    with pytest.raises(ValueError, match="Expected skew_sym=True with activation='exp'"):
        VolumePreservingAttention(3, skew_sym=False, activation="exp")


def _torch_mha(layer):
    """A torch.nn.MultiheadAttention computing what ``layer`` computes (no biases, identity output projection)."""
    dim = layer.dim
    ref = torch.nn.MultiheadAttention(dim, layer.n_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([w.reshape(dim, dim) for w in
                                            (layer.weight_q, layer.weight_k, layer.weight_v)]))
        ref.out_proj.weight.copy_(torch.eye(dim, dtype=torch.float64))
    return ref.eval()


@pytest.mark.parametrize("case", ["none", "bool", "additive", "causal", "padding", "bool+padding", "heads",
                                  "additive+padding", "additive+causal"])
def test_multihead_masks_agree_with_torch(case):
    """Masks, is_causal, key_padding_mask and the returned weights agree with torch.nn.MultiheadAttention
    (whose boolean attn_mask is True where attention is *blocked*: the opposite of ours and of SDPA's)."""
    from geoattn.nn import MultiHeadAttention

    torch.manual_seed(0)
    B, T, dim, h = 3, 5, 6, 2
    layer = MultiHeadAttention(dim, h, dtype=torch.float64)
    ref = _torch_mha(layer)
    x = torch.randn(B, T, dim, dtype=torch.float64)
    keep = torch.rand(T, T) < 0.7
    keep |= torch.eye(T, dtype=torch.bool)  # no query without keys (torch returns NaN there, we return zeros)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[0, -2:] = True
    pad[2, 0] = True
    additive = torch.randn(T, T, dtype=torch.float64)
    ours_kw, ref_kw = {}, {}
    if case == "bool":
        ours_kw, ref_kw = {"mask": keep}, {"attn_mask": ~keep}
    elif case == "additive":
        ours_kw, ref_kw = {"mask": additive}, {"attn_mask": additive}
    elif case == "causal":
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        ours_kw, ref_kw = {"is_causal": True}, {"attn_mask": ~causal}
    elif case == "padding":
        ours_kw, ref_kw = {"key_padding_mask": pad}, {"key_padding_mask": pad}
    elif case == "bool+padding":
        ours_kw, ref_kw = {"mask": keep, "key_padding_mask": pad}, {"attn_mask": ~keep, "key_padding_mask": pad}
    elif case == "additive+padding":
        ours_kw, ref_kw = {"mask": additive, "key_padding_mask": pad}, {"attn_mask": additive, "key_padding_mask": pad}
    elif case == "additive+causal":
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        ours_kw = {"mask": additive, "is_causal": True}
        ref_kw = {"attn_mask": additive.masked_fill(~causal, float("-inf"))}
    elif case == "heads":
        per_head = torch.rand(B, h, T, T) < 0.7
        per_head |= torch.eye(T, dtype=torch.bool)
        ours_kw, ref_kw = {"mask": per_head}, {"attn_mask": ~per_head.reshape(B * h, T, T)}
    out, w = layer(x, need_weights=True, average_attn_weights=False, **ours_kw)
    ref_out, ref_w = ref(x, x, x, need_weights=True, average_attn_weights=False, **ref_kw)
    tol = 64 * T * torch.finfo(torch.float64).eps
    torch.testing.assert_close(out, ref_out, rtol=tol, atol=tol)
    torch.testing.assert_close(w, ref_w, rtol=tol, atol=tol)
    _, w_avg = layer(x, need_weights=True, **ours_kw)
    torch.testing.assert_close(w_avg, ref_w.mean(1), rtol=tol, atol=tol)


def test_multihead_mask_errors_and_dropout():
    from geoattn.nn import Attention, MultiHeadAttention

    layer = MultiHeadAttention(4, 2)
    x = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"MultiHeadAttention: Expected key_padding_mask of shape \(2, 3\)"):
        layer(x, key_padding_mask=torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="Expected a boolean key_padding_mask"):
        layer(x, key_padding_mask=torch.zeros(2, 3))
    with pytest.raises(TypeError, match="Expected a boolean or floating mask"):
        layer(x, mask=torch.ones(3, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="Expected dropout to be a probability"):
        MultiHeadAttention(4, 2, dropout=1.0)
    # dropout acts in training mode only, and only on the weights
    torch.manual_seed(0)
    drop = MultiHeadAttention(4, 2, dropout=0.5)
    plain = MultiHeadAttention(4, 2)
    plain.load_state_dict(drop.state_dict())
    torch.testing.assert_close(drop.eval()(x), plain(x), rtol=0, atol=0)
    drop.train()
    assert not torch.equal(drop(x), drop.eval()(x))
    att = Attention(4, dropout=0.5).eval()
    out, w = att(x, need_weights=True)
    torch.testing.assert_close(out, w @ att.v_proj(x))
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3))
    # in training mode the returned weights are those before dropout: still row-stochastic, not what was used
    for layer in (att.train(), drop.train()):
        torch.manual_seed(1)
        out, w = layer(x, need_weights=True)
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
        if layer is att:
            assert not torch.allclose(out, w @ att.v_proj(x))


def test_numpy_integers_and_parametrized_names_in_messages():
    import numpy as np

    from geoattn.nn import MultiHeadAttention, VolumePreservingAttention

    assert MultiHeadAttention(np.int64(6), np.int32(3)).head_dim == 2
    layer = VolumePreservingAttention(np.int64(3))
    assert type(layer).__name__.startswith("Parametrized")  # what torch's parametrize does to the class
    with pytest.raises(ValueError, match=r"^VolumePreservingAttention: expected x with 3 features"):
        layer(torch.randn(2, 4, 5))
    with pytest.raises(TypeError, match=r"dtype torch.float32. Got torch.float64 \(convert"):
        layer(torch.randn(2, 4, 3, dtype=torch.float64))


def test_multihead_three_dimensional_and_unbatched_masks():
    from geoattn.nn import MultiHeadAttention

    torch.manual_seed(1)
    B, T, dim, h = 2, 4, 4, 2  # batch = n_heads: a per-head mask must not pass for a per-sample one
    layer = MultiHeadAttention(dim, h, dtype=torch.float64)
    ref = _torch_mha(layer)
    x = torch.randn(B, T, dim, dtype=torch.float64)
    keep = (torch.rand(B, T, T) < 0.6) | torch.eye(T, dtype=torch.bool)
    out = layer(x, keep)
    expected = ref(x, x, x, attn_mask=~keep.repeat_interleave(h, 0), need_weights=False)[0]
    tol = 64 * T * torch.finfo(torch.float64).eps
    torch.testing.assert_close(out, expected, rtol=tol, atol=tol)
    # unbatched input: the same as a batch of one
    torch.testing.assert_close(layer(x[0], keep[0]), out[0], rtol=tol, atol=tol)
    with pytest.raises(ValueError, match=r"Expected a 3-D mask of shape \(batch, T, T\) with batch = 2"):
        layer(x, torch.ones(3, T, T, dtype=torch.bool))
    with pytest.raises(ValueError, match="for a batched x"):
        layer(x[0], keep)


def test_vp_layer_explain_names_the_route_forward_takes(monkeypatch):
    """VolumePreservingAttention.explain(x) reports the route its forward runs (each route's run wrapped and
    recorded), for the skew weighting (vp_attention) and the arbitrary one (vp_attention_lower)."""
    import dataclasses

    from geoattn.kernels import dispatch

    ran = []
    for op_name in ("vp_attention", "vp_attention_lower"):
        op = dispatch.OPERATIONS[op_name]
        wrapped = tuple(dataclasses.replace(r, run=(lambda r: lambda c: ran.append(r.name) or r.run(c))(r))
                        for r in op.routes)
        monkeypatch.setitem(dispatch.OPERATIONS, op_name, dataclasses.replace(op, routes=wrapped))
    for layer, x in [(VolumePreservingAttention(4), torch.randn(3, 16, 4)),
                     (VolumePreservingAttention(4), torch.randn(3, 3, 4)),
                     (VolumePreservingAttention(8, activation="exp"), torch.randn(3, 16, 8)),
                     (VolumePreservingAttention(4, skew_sym=False), torch.randn(3, 16, 4)),
                     (VolumePreservingAttention(4, skew_sym=False), torch.randn(3, 128, 4))]:
        ran.clear()
        want = layer.explain(x).route.name
        layer(x)
        assert ran == [want]
