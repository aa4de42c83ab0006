"""Every public layer and model declares what it preserves; the declarations hold, the refuted ones fail, and each
cited ledger id exists with a matching verdict."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import geoattn.models as M
import geoattn.nn as N
from geoattn.symbolic import all_claims
from geoattn.testing import PROPERTIES, assert_preserves, preserves_cases

# one instance per public module class (and per declared variant), with an input of the right shape
CASES = {label: (build, shape) for label, build, shape in preserves_cases()}
NOT_MAPS = {"Skew", "Integrator"}  # a parametrization, not a map of sequences; the abstract base
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
    covered = {k.split("(")[0] for k in CASES} | NOT_MAPS
    assert names <= covered, f"public modules without a preserves case: {sorted(names - covered)}"


@pytest.mark.parametrize("name", list(CASES))
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
