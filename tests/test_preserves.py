"""Every public layer and model declares what it preserves; the declarations hold, the refuted ones fail, and each
cited ledger id exists with a matching verdict."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import geoattn.models as M
import geoattn.nn as N
from geoattn.symbolic import all_claims
from geoattn.testing import PROPERTIES, assert_preserves

# one instance per public module class (and per declared variant), with an input of the right shape
CASES = {
    "VolumePreservingAttention": (lambda: N.VolumePreservingAttention(3), (2, 5, 3)),
    "VolumePreservingAttention(exp)": (lambda: N.VolumePreservingAttention(3, activation="exp"), (2, 5, 3)),
    "VolumePreservingAttention(arbitrary)": (lambda: N.VolumePreservingAttention(3, skew_sym=False), (2, 5, 3)),
    "OrthonormalAttention": (lambda: N.OrthonormalAttention(4), (2, 5, 4)),
    "LinearSymplecticAttention": (lambda: N.LinearSymplecticAttention(3), (2, 3, 4)),
    "MultiHeadAttention": (lambda: N.MultiHeadAttention(4, 2), (2, 3, 4)),
    "Attention": (lambda: N.Attention(4), (2, 3, 4)),
    "Skew": None,  # a parametrization, not a map of sequences
    "TriangularResidual": (lambda: M.TriangularResidual(3), (2, 4, 3)),
    "VolumePreservingFeedForward": (lambda: M.VolumePreservingFeedForward(3, n_blocks=2), (2, 4, 3)),
    "GradientLayer": (lambda: M.GradientLayer(4, 8), (2, 3, 4)),
    "SympNet": (lambda: M.SympNet(4), (2, 3, 4)),
    "Integrator": None,  # the abstract base
    "VolumePreservingTransformer": (lambda: M.VolumePreservingTransformer(3, 3, depth=2), (2, 3, 3)),
    "VolumePreservingTransformer(arbitrary)": (lambda: M.VolumePreservingTransformer(3, 3, skew_sym=False),
                                               (2, 3, 3)),
    "LinearSymplecticTransformer": (lambda: M.LinearSymplecticTransformer(4, 3), (2, 3, 4)),
    "StandardTransformerIntegrator": (lambda: M.StandardTransformerIntegrator(4, 3), (2, 3, 4)),
    "ResNetIntegrator": (lambda: M.ResNetIntegrator(3), (2, 1, 3)),
    "SympNetIntegrator": (lambda: M.SympNetIntegrator(4), (2, 1, 4)),
    "VolumePreservingFeedForwardIntegrator": (lambda: M.VolumePreservingFeedForwardIntegrator(3), (2, 1, 3)),
}
LEDGER = {c.id: c.expected.value for c in all_claims()}
HOLDS = {"proved", "checked", "certified"}


def _public_module_classes():
    for mod in (N, M):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if isinstance(obj, type) and issubclass(obj, nn.Module):
                yield name


def test_every_public_module_class_has_a_case():
    names = set(_public_module_classes())
    covered = {k.split("(")[0] for k in CASES}
    assert names <= covered, f"public modules without a preserves case: {sorted(names - covered)}"


@pytest.mark.parametrize("name", [k for k, v in CASES.items() if v is not None])
def test_declarations_hold_and_cite_the_ledger(name):
    build, shape = CASES[name]
    torch.manual_seed(0)
    module = build().double()
    for prop, ids in module.preserves.items():
        assert prop in PROPERTIES and ids
        for cid in ids:
            assert LEDGER.get(cid) in HOLDS, f"{name}: {prop} cites {cid} with verdict {LEDGER.get(cid)}"
    for prop, ids in module.does_not_preserve.items():
        assert prop in PROPERTIES and ids
        assert any(LEDGER.get(cid) == "refuted" for cid in ids), f"{name}: {prop} cites no refuted claim"
    assert not set(module.preserves) & set(module.does_not_preserve)
    assert_preserves(module, torch.randn(*shape, dtype=torch.float64))


def test_assert_preserves_catches_a_false_declaration():
    """Negative controls: a module that claims what it does not have, and one that disclaims what it has."""
    liar = M.ResNetIntegrator(3).double()
    liar.preserves = {"volume": ("models.triangular_residual_det_one",)}
    with pytest.raises(AssertionError, match="declares 'volume'.*fails at x"):
        assert_preserves(liar, torch.randn(2, 1, 3, dtype=torch.float64))
    modest = M.VolumePreservingFeedForwardIntegrator(3).double()
    modest.does_not_preserve = {"volume": ("vp.map_volume_preserving.arbitrary",)}
    with pytest.raises(AssertionError, match="refuted .* but it holds at x"):
        assert_preserves(modest, torch.randn(2, 1, 3, dtype=torch.float64))
    odd = M.ResNetIntegrator(3)
    odd.preserves = {"energy": ("x",)}
    with pytest.raises(ValueError, match="Expected properties among"):
        assert_preserves(odd, torch.randn(2, 1, 3))
    with pytest.raises(TypeError, match="preserves and does_not_preserve"):
        assert_preserves(nn.Linear(3, 3), torch.randn(2, 3))


def test_class_level_declarations_are_read_only():
    """Shared by every instance (and by subclasses that inherit them): nobody may change them in place."""
    with pytest.raises(TypeError):
        M.ResNetIntegrator.preserves["volume"] = ("x",)
    with pytest.raises(TypeError):
        N.OrthonormalAttention.does_not_preserve["volume"] = ()
