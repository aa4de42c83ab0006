"""One class per mistake (geoattn.errors), and mismatched devices and dtypes refused with "Expected ... Got ..."
naming both, by every public kernel function and every layer and model."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from geoattn import errors
from geoattn.models import (
    LinearSymplecticTransformer,
    StandardTransformerIntegrator,
    VolumePreservingFeedForwardIntegrator,
    VolumePreservingTransformer,
)
from geoattn.nn import (
    Attention,
    LinearSymplecticAttention,
    MultiHeadAttention,
    OrthonormalAttention,
    SymplecticAttention,
    VolumePreservingAttention,
)

META = torch.device("meta")


def skew(d, dtype=torch.float32, device="cpu"):
    a = torch.randn(d, d, dtype=dtype)
    return (a - a.mT).to(device)


def test_the_old_names_are_the_same_classes_and_builtin_bases_still_catch():
    from geoattn.kernels import KernelDtypeError, KernelShapeError
    from geoattn.nn._common import LayerDtypeError, LayerShapeError

    assert KernelShapeError is LayerShapeError is errors.ShapeError
    assert KernelDtypeError is LayerDtypeError is errors.DtypeError
    for cls, base in [(errors.ShapeError, ValueError), (errors.DtypeError, TypeError),
                      (errors.DeviceError, ValueError), (errors.OptionError, ValueError),
                      (errors.StructureError, ValueError), (errors.BackendError, RuntimeError)]:
        assert issubclass(cls, base) and issubclass(cls, errors.GeoattnError)


# the public kernel functions that take two tensors: (name, call with (first, second))
PAIRS = [
    ("vp_attention", lambda a, b: K.vp_attention(a, b), (2, 9, 4), (4, 4)),
    ("cayley_apply", lambda a, b: K.cayley_apply(b, a), (2, 9, 4), (9, 9)),
    ("vp_correlation", lambda a, b: K.vp_correlation(a, b), (2, 9, 4), (4, 4)),
    ("vp_correlation_lower", lambda a, b: K.vp_correlation_lower(a, b), (2, 9, 4), (4, 4)),
    ("lsa_update", lambda a, b: K.lsa_update(a, b), (2, 9, 4), (9, 9)),
    ("symattn_update", lambda a, b: K.symattn_update(a, b), (2, 9, 4), (4, 4)),
    ("symattn_potential", lambda a, b: K.symattn_potential(a, b), (2, 9, 4), (4, 4)),
]


@pytest.mark.parametrize("name,fn,xs,As", PAIRS, ids=[p[0] for p in PAIRS])
@pytest.mark.parametrize("which", ["first", "second"])
def test_a_meta_tensor_beside_a_cpu_one_is_refused(name, fn, xs, As, which):
    """Before: a CPU tensor of made-up values came back (vp_attention(x_cpu, A.to('meta')))."""
    x, A = torch.randn(xs), skew(As[0])
    if which == "first":
        x = x.to(META)
    else:
        A = A.to(META)
    with pytest.raises(errors.DeviceError, match=r"Expected .* on one device\. Got .* on (meta|cpu) and .* on "):
        fn(x, A)


@pytest.mark.parametrize("name,fn,xs,As", PAIRS, ids=[p[0] for p in PAIRS])
def test_two_dtypes_are_refused_by_name(name, fn, xs, As):
    """Before: cayley_apply gave torch's raw linalg.solve message."""
    x, A = torch.randn(xs), skew(As[0], torch.float64)
    with pytest.raises(errors.DtypeError, match=r"Expected \w+ and \w+ of one dtype\. Got \w+ torch\.float"):
        fn(x, A)


def test_same_device_and_dtype_still_serve():
    """The negative control of the two tests above: the same calls on one device and dtype run."""
    for _, fn, xs, As in PAIRS:
        assert torch.isfinite(fn(torch.randn(xs), skew(As[0]))).all()
        fn(torch.randn(xs, device=META), skew(As[0], device=META))  # both on meta: shapes only


def test_exp_skew_and_cayley_apply_refuse_an_infinite_non_skew_matrix():
    """Before: exp_skew of an all-inf matrix returned inf (its tolerance, scaled by max|S|, was inf too)."""
    S = torch.full((2, 3, 3), float("inf"))
    with pytest.raises(errors.StructureError, match=r"Expected S to be skew-symmetric .* Got \|S \+ S\^T\| = inf"):
        K.exp_skew(S)
    with pytest.raises(errors.StructureError, match="Expected C to be skew-symmetric"):
        K.cayley_apply(torch.full((9, 9), float("inf")), torch.randn(9, 2), "solve")
    # NaN propagates, sample by sample, as before (a NaN defect is not a verdict on the sample)
    S = skew(3).expand(2, 3, 3).clone()
    S[0, 0, 1] = float("nan")
    out = K.exp_skew(S)
    assert torch.isnan(out[0]).any() and torch.isfinite(out[1]).all()


def _layers():
    return [
        ("Attention", lambda **kw: Attention(4, **kw), (2, 5, 4)),
        ("MultiHeadAttention", lambda **kw: MultiHeadAttention(4, 2, **kw), (2, 5, 4)),
        ("VolumePreservingAttention", lambda **kw: VolumePreservingAttention(4, **kw), (2, 5, 4)),
        ("VolumePreservingAttention-exp", lambda **kw: VolumePreservingAttention(4, activation="exp", **kw),
         (2, 5, 4)),
        ("OrthonormalAttention", lambda **kw: OrthonormalAttention(4, **kw), (2, 5, 4)),
        ("LinearSymplecticAttention", lambda **kw: LinearSymplecticAttention(5, **kw), (2, 5, 4)),
        ("SymplecticAttention", lambda **kw: SymplecticAttention(4, **kw), (2, 5, 4)),
        ("VolumePreservingTransformer", lambda **kw: VolumePreservingTransformer(3, 4, **kw), (2, 4, 3)),
        ("LinearSymplecticTransformer", lambda **kw: LinearSymplecticTransformer(4, 4, **kw), (2, 4, 4)),
        ("StandardTransformerIntegrator", lambda **kw: StandardTransformerIntegrator(4, 4, **kw), (2, 4, 4)),
        ("VolumePreservingFeedForwardIntegrator", lambda **kw: VolumePreservingFeedForwardIntegrator(3, **kw),
         (2, 1, 3)),
    ]


def _build(make, **kw):
    try:
        return make(**kw)
    except TypeError:  # a model without factory arguments: move it
        return make().to(kw.get("device", "cpu"), kw.get("dtype"))


@pytest.mark.parametrize("name,make,shape", _layers(), ids=[c[0] for c in _layers()])
def test_a_layer_refuses_an_input_on_another_device_or_of_another_dtype(name, make, shape):
    meta_layer = _build(make, device=META)
    with pytest.raises(errors.DeviceError, match=r"expected x on the parameters' device meta\. Got x on cpu"):
        meta_layer(torch.randn(shape))
    layer = _build(make)
    with pytest.raises(errors.DeviceError, match=r"Got x on meta"):
        layer(torch.randn(shape, device=META))
    with pytest.raises(errors.DtypeError, match=r"float64"):
        layer(torch.randn(shape, dtype=torch.float64))
    assert layer(torch.randn(shape)).shape[-2:] == shape[-2:]  # the negative control: the matching input runs


@pytest.mark.parametrize("kind", ["mask", "key_padding_mask"])
def test_multihead_masks_on_another_device_are_refused(kind):
    """Before: "Tensor on device cpu is not on the expected device meta!" from deep inside torch."""
    layer = MultiHeadAttention(4, 2)
    x = torch.randn(2, 5, 4)
    mask = torch.ones(5, 5, dtype=torch.bool) if kind == "mask" else torch.zeros(2, 5, dtype=torch.bool)
    with pytest.raises(errors.DeviceError, match=rf"Expected {kind} on the inputs' device cpu\. Got {kind} on meta"):
        layer(x, **{kind: mask.to(META)})
    assert layer(x, **{kind: mask}).shape == x.shape
    with pytest.raises(errors.DeviceError, match="Expected mask on the inputs' device cpu. Got mask on meta"):
        Attention(4)(x, mask=torch.ones(5, 5, dtype=torch.bool, device=META))


def test_the_same_mistake_raises_the_same_class_everywhere():
    x, A = torch.randn(2, 9, 4), skew(4)
    for call in (lambda: K.vp_attention(x, A, activation="softmax"),
                 lambda: K.symattn_update(x, A, activation="softmax"),
                 lambda: VolumePreservingAttention(4, activation="softmax"),
                 lambda: SymplecticAttention(4, activation="softmax"),
                 lambda: SymplecticAttention(4, update="x"),
                 lambda: LinearSymplecticAttention(5, update="x"),
                 lambda: K.exp_skew(A, method="pade"),
                 lambda: K.cayley_apply(skew(9), x, "pade")):
        with pytest.raises(errors.OptionError, match=r"Expected .* Got '(softmax|x|pade)'"):
            call()


def test_claim_and_file_errors_are_the_errors_modules():
    """The ledger's unknown id, a user's bad claims file and a bad model file raise classes of geoattn.errors (also
    importable where they are raised), each a GeoattnError with the builtin base a caller would catch."""
    from geoattn import experiments, symbolic
    from geoattn.symbolic import user

    assert symbolic.UnknownClaimError is errors.UnknownClaimError
    assert user.UserClaimsError is errors.UserClaimsError
    assert experiments.ModelFileError is errors.ModelFileError
    with pytest.raises(errors.OptionError, match="Expected one of the known claim ids") as info:
        symbolic.get_claim("cayley.no_such_claim")
    assert isinstance(info.value, KeyError)
    for cls in (errors.UserClaimsError, errors.ModelFileError):
        assert issubclass(cls, errors.GeoattnError) and issubclass(cls, ValueError)
