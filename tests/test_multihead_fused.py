"""MultiHeadAttention through scaled_dot_product_attention agrees with the explicit weights.

Without ``need_weights`` and without dropout at work the layer calls
:func:`torch.nn.functional.scaled_dot_product_attention`; these tests hold that path to the map the layer defines,
restated here independently of the module (per-head projections, scores over ``sqrt(dim / h)``, the masks combined
by AND, an additive mask added, a row with no key left all zero), and to the layer's own explicit path
(``need_weights=True``), in float64 with tolerances ``K * n * eps``, for every mask kind, rows with no key left,
unbatched input, dropout in evaluation mode and the gradients. A negative control swaps in a wrong mask
combination and checks that the comparison catches it.
"""

from __future__ import annotations

import math

import pytest
import torch

from geoattn.nn import LayerShapeError, MultiHeadAttention
from geoattn.nn import multihead as mh_module

f64 = torch.float64
#: rounding allowance per number (measured worst case of the fused-against-reference comparisons: 0.06 n eps)
K = 16
B, T, DIM, H = 3, 6, 8, 2


def reference(layer: MultiHeadAttention, x, mask=None, is_causal=False, key_padding_mask=None):
    """The layer's map written out: explicit weights, masks combined by AND (``-inf`` entries in an additive mask),
    all-zero weights for a query with no key left."""
    T = x.shape[-2]
    q, k, v = (x.unsqueeze(-3) @ w.mT for w in (layer.weight_q, layer.weight_k, layer.weight_v))
    scores = q @ k.mT / math.sqrt(layer.dim / layer.n_heads)  # (..., h, T, T)
    allowed = torch.ones(scores.shape, dtype=torch.bool)
    if mask is not None:
        if mask.dim() == 3:
            mask = mask[:, None]
        if mask.dtype == torch.bool:
            allowed = allowed & mask
        else:
            scores = scores + mask
            allowed = allowed & (mask != float("-inf"))
    if is_causal:
        allowed = allowed & torch.ones(T, T, dtype=torch.bool).tril()
    if key_padding_mask is not None:
        allowed = allowed & ~key_padding_mask[..., None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    empty = ~allowed.any(-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(empty, 0.0), -1).masked_fill(~allowed, 0.0)
    heads = weights @ v
    return heads.movedim(-3, -2).reshape(x.shape) + (x if layer.add_connection else 0)


def masks(gen: torch.Generator) -> dict[str, dict]:
    """The keyword arguments of every mask case for inputs of shape (B, T, DIM); the ``empty`` cases leave some query
    rows of some samples with no key."""
    keep = (torch.rand(T, T, generator=gen) < 0.6) | torch.eye(T, dtype=torch.bool)
    additive = torch.randn(T, T, generator=gen, dtype=f64)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[0, -2:] = True
    pad[2, 1] = True
    empty_keep = keep.clone()
    empty_keep[2] = False  # query 2 of every sample
    empty_pad = pad.clone()
    empty_pad[1] = True  # every key of sample 1
    return {
        "none": {},
        "causal": {"is_causal": True},
        "bool": {"mask": keep},
        "additive": {"mask": additive},
        "padding": {"key_padding_mask": pad},
        "bool+padding": {"mask": keep, "key_padding_mask": pad},
        "additive+padding": {"mask": additive, "key_padding_mask": pad},
        "causal+padding": {"is_causal": True, "key_padding_mask": pad},
        "causal+bool": {"is_causal": True, "mask": keep},
        "causal+additive": {"is_causal": True, "mask": additive},
        "per-sample": {"mask": (torch.rand(B, T, T, generator=gen) < 0.6) | torch.eye(T, dtype=torch.bool)},
        "per-head": {"mask": (torch.rand(B, H, T, T, generator=gen) < 0.6) | torch.eye(T, dtype=torch.bool)},
        "empty-bool": {"mask": empty_keep},
        "empty-additive": {"mask": additive.masked_fill(~empty_keep, float("-inf"))},
        "empty-padding": {"key_padding_mask": empty_pad},
        # key 0 of sample 0 padded: its first causal query has no key left
        "empty-causal+padding": {"is_causal": True, "key_padding_mask": pad | (torch.arange(B) == 0)[:, None]
                                 & (torch.arange(T) == 0)},
    }


CASES = list(masks(torch.Generator().manual_seed(0)))


def _setup(case: str, add_connection: bool = False, stiefel: bool = False):
    gen = torch.Generator().manual_seed(CASES.index(case))
    torch.manual_seed(CASES.index(case))
    layer = MultiHeadAttention(DIM, H, add_connection=add_connection, stiefel=stiefel, dtype=f64)
    x = torch.randn(B, T, DIM, dtype=f64, generator=gen)
    return layer, x, masks(gen)[case]


def _grads(layer, x, fn, cotangent):
    """The output of ``fn(x)`` and the gradients of ``<output, cotangent>`` in x and every parameter."""
    x = x.detach().requires_grad_(True)
    y = fn(x)
    return [y.detach(), *torch.autograd.grad((y * cotangent).sum(), [x, *layer.parameters()])]


def mismatch(got, want, n: int = T * DIM) -> str | None:
    """None when every tensor of ``got`` agrees with ``want`` within ``K * n * eps * max(1, max|want|)``, else which
    one differs and by how much (NaN counts as a difference)."""
    for i, (a, b) in enumerate(zip(got, want)):
        a, b = a.detach(), b.detach()
        tol = K * n * torch.finfo(b.dtype).eps * max(1.0, float(b.abs().max()))
        err = float((a - b).abs().max())
        if not err <= tol:
            return f"tensor {i} (0: output, 1: x, then parameters): max |difference| = {err:.3g} > {tol:.3g}"
    return None


def _fused_against_reference(layer, x, kw) -> str | None:
    cot = torch.randn(x.shape, dtype=x.dtype, generator=torch.Generator().manual_seed(7))
    got = _grads(layer, x, lambda z: layer(z, **kw), cot)
    want = _grads(layer, x, lambda z: reference(layer, z, **kw), cot)
    return mismatch(got, want)


def _uses_sdpa(layer, x, kw, monkeypatch) -> bool:
    calls = []
    sdpa = mh_module.F.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(kwargs.get("is_causal"))
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(mh_module.F, "scaled_dot_product_attention", counting)
    layer(x, **kw)
    monkeypatch.setattr(mh_module.F, "scaled_dot_product_attention", sdpa)
    return bool(calls)


@pytest.mark.parametrize("case", CASES)
def test_fused_output_and_gradients_match_the_explicit_map(case, monkeypatch):
    layer, x, kw = _setup(case)
    assert _uses_sdpa(layer, x, kw, monkeypatch), "the fused path did not serve"
    assert _fused_against_reference(layer, x, kw) is None, f"{case}: {_fused_against_reference(layer, x, kw)}"
    # the layer's own explicit path (need_weights=True) computes the same output
    out_explicit, weights = layer(x, need_weights=True, average_attn_weights=False, **kw)
    assert mismatch([layer(x, **kw)], [out_explicit]) is None
    assert not _uses_sdpa(layer, x, {**kw, "need_weights": True}, monkeypatch)
    if case.startswith("empty"):  # some rows have no key: zero weights, zero heads, finite gradients
        sums = weights.detach().sum(-1)
        empty = sums == 0
        assert empty.any() and mismatch([sums[~empty]], [torch.ones_like(sums[~empty])], n=T) is None
        heads = layer(x, **kw).unflatten(-1, (H, DIM // H)).movedim(-2, -3)  # (B, h, T, e)
        assert torch.equal(heads[empty], torch.zeros_like(heads[empty]))


@pytest.mark.parametrize("case", ["empty-bool", "empty-padding", "empty-causal+padding", "per-head"])
def test_each_sample_alone_gives_its_own_result(case):
    """A sample's output does not depend on the rest of the batch (rows with no key are decided per sample)."""
    layer, x, kw = _setup(case)
    out = layer(x, **kw)
    for i in range(B):
        alone = {k: (v[i:i + 1] if torch.is_tensor(v) and v.dim() in (2, 3, 4) and v.shape[0] == B
                     and not (k == "mask" and v.dim() == 2) else v) for k, v in kw.items()}
        assert mismatch([layer(x[i:i + 1], **alone)], [out[i:i + 1]]) is None, (case, i)


@pytest.mark.parametrize("case", ["none", "causal", "bool", "additive", "empty-bool", "empty-additive"])
def test_unbatched_input_is_a_batch_of_one(case):
    layer, x, kw = _setup(case)
    x1 = x[1]
    kw1 = {k: (v[1] if k == "key_padding_mask" else v) for k, v in kw.items()}
    assert mismatch([layer(x1, **kw1)], [reference(layer, x1, **kw1)]) is None
    kwb = {k: (v[1:2] if k == "key_padding_mask" else v) for k, v in kw.items()}
    assert mismatch([layer(x1, **kw1)], [layer(x[1:2], **kwb)[0]]) is None


def test_more_leading_dimensions():
    layer, x, kw = _setup("empty-causal+padding")
    x2 = torch.stack([x, x.flip(0)])  # (2, B, T, dim)
    kw2 = {"is_causal": True, "key_padding_mask": torch.stack([kw["key_padding_mask"], kw["key_padding_mask"].flip(0)])}
    assert _fused_against_reference(layer, x2, kw2) is None
    assert mismatch([layer(x2, **kw2)[0]], [layer(x, **kw)]) is None


@pytest.mark.parametrize("options", [{"add_connection": True}, {"stiefel": True}])
def test_connection_and_stiefel_projections(options):
    layer, x, kw = _setup("causal+padding", **options)
    assert _fused_against_reference(layer, x, kw) is None


def test_dropout_in_evaluation_mode_and_training_without_dropout_use_the_fused_map(monkeypatch):
    layer, x, kw = _setup("bool+padding")
    drop = MultiHeadAttention(DIM, H, dropout=0.5, dtype=f64)
    drop.load_state_dict(layer.state_dict())
    drop.eval()
    assert _uses_sdpa(drop, x, kw, monkeypatch)
    assert mismatch([drop(x, **kw)], [reference(layer, x, **kw)]) is None
    layer.train()  # dropout=0: training mode changes nothing
    assert _uses_sdpa(layer, x, kw, monkeypatch)
    assert mismatch([layer(x, **kw)], [reference(layer, x, **kw)]) is None
    drop.train()  # dropout at work: the explicit weights, dropped
    assert not _uses_sdpa(drop, x, kw, monkeypatch)
    torch.manual_seed(0)
    assert mismatch([drop(x, **kw)], [reference(layer, x, **kw)]) is not None


def test_float32_fused_path_within_float32_rounding():
    layer, x, kw = _setup("causal+additive")
    layer32 = MultiHeadAttention(DIM, H)
    layer32.load_state_dict({k: v.float() for k, v in layer.state_dict().items()})
    got = layer32(x.float(), **{k: (v.float() if v.is_floating_point() else v) if torch.is_tensor(v) else v
                                 for k, v in kw.items()})
    assert mismatch([got.double()], [reference(layer, x, **kw)], n=T * DIM * 2**29) is None  # eps32 / eps64 = 2^29


def test_gradcheck_with_rows_without_keys():
    torch.manual_seed(3)
    layer = MultiHeadAttention(4, 2, dtype=f64)
    x = torch.randn(2, 4, 4, dtype=f64, requires_grad=True)
    pad = torch.tensor([[False, True, True, False], [True, True, True, True]])
    assert torch.autograd.gradcheck(lambda z: layer(z, is_causal=True, key_padding_mask=pad), (x,))


def test_mask_not_broadcastable_says_expected_and_got():
    layer, x, _ = _setup("none")
    with pytest.raises(LayerShapeError, match=r"Expected masks broadcastable to the scores' shape \(3, 2, 6, 6\).*"
                                              r"Got a combined mask of shape \(3, 3, 6, 6\)"):
        layer(x, torch.ones(B, 3, T, T, dtype=torch.bool))


_COMBINE = mh_module._combine_masks


def _wrong_combination(layer, x, mask, is_causal, key_padding_mask):
    """A wrong combination: a boolean mask joined to the padding by OR instead of AND, an additive one without it."""
    keep = _COMBINE(layer, x, mask, is_causal, None)
    if key_padding_mask is None:
        return keep
    pad = ~key_padding_mask[..., None, None, :]
    return pad if keep is None else (keep | pad if keep.dtype == torch.bool else keep)


@pytest.mark.parametrize("case", ["bool+padding", "causal+padding", "additive+padding"])
def test_negative_control_a_wrong_mask_combination_is_caught(case, monkeypatch):
    layer, x, kw = _setup(case)
    assert _fused_against_reference(layer, x, kw) is None
    monkeypatch.setattr(mh_module, "_combine_masks", _wrong_combination)
    assert _fused_against_reference(layer, x, kw) is not None


def test_negative_control_rows_without_keys_left_unzeroed_are_caught(monkeypatch):
    layer, x, kw = _setup("empty-bool")
    monkeypatch.setattr(mh_module, "_open_empty_rows", lambda keep: (keep | ~keep.any(-1, keepdim=True), None))
    assert _fused_against_reference(layer, x, kw) is not None


@pytest.mark.parametrize("kw", [{"is_causal": True}, {"mask": "bool", "key_padding_mask": True}])
def test_compiled_fullgraph_with_masks(kw):
    torch._dynamo.reset()
    torch.manual_seed(0)
    layer = MultiHeadAttention(4, 2)
    x = torch.randn(2, 5, 4)
    if "mask" in kw:
        pad = torch.tensor([[False, False, True, False, False], [True] * 5])
        kw = {"mask": (torch.rand(5, 5) < 0.6) | torch.eye(5, dtype=torch.bool), "key_padding_mask": pad}
    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager", dynamic=False)
    cot = torch.randn_like(x)
    got = _grads(layer, x, lambda z: compiled(z, **kw), cot)
    want = _grads(layer, x, lambda z: layer(z, **kw), cot)
    assert mismatch(got, want, n=5 * 4) is None
