"""Every public layer and model declares what it preserves; the declarations hold, the refuted ones fail, and each
cited ledger id exists with a matching verdict."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import geoattn.models as M
import geoattn.nn as N
from geoattn.symbolic import all_claims
from geoattn.models._cases import preserves_cases
from geoattn.testing import PROPERTIES, assert_preserves

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


def test_assert_preserves_validates_ledger_ids():
    """Cited ids are checked against the generated table of the ledger: an id the ledger lacks, a preserved
    property resting on a refuted claim, and a refuted property citing none are refused before any Jacobian."""
    x = torch.randn(2, 1, 3, dtype=torch.float64)
    module = M.VolumePreservingFeedForwardIntegrator(3).double()
    assert_preserves(module, x)  # the declared, valid ids pass
    for preserves, refuted, match in (
        ({"volume": ("totally.made.up.id",)}, {}, "Got unknown 'totally.made.up.id'"),
        ({"volume": ("models.triangular_residual_det_one", "no.such")}, {}, "Got unknown 'no.such'"),
        ({}, {"symplectic": ("totally.made.up.id",)}, "does_not_preserve.*unknown 'totally.made.up.id'"),
        ({"volume": ("vp.map_volume_preserving.arbitrary",)}, {}, r"verdict among.*\(refuted\)"),
        ({"volume": ("models.triangular_residual_det_one",)}, {"symplectic": ("cayley.orthogonal",)},
         "to cite a refuted claim"),
        ({"volume": "models.triangular_residual_det_one"}, {}, "non-empty tuple of ledger ids"),
        ({"volume": ()}, {}, "non-empty tuple of ledger ids"),
    ):
        module.preserves, module.does_not_preserve = preserves, refuted
        with pytest.raises(ValueError, match=match):
            assert_preserves(module, x)


def test_generated_ledger_ids_match_the_ledger(tmp_path):
    """The runtime's table (geoattn/_ledger_ids.py, written by `geoattn codegen`) is the ledger's, and a stale
    table is caught by the freshness check (negative control)."""
    import geoattn._ledger_ids as L
    from geoattn import codegen
    from geoattn.symbolic import families

    assert L.CLAIMS == {c.id: (c.family, c.expected.value) for c in all_claims()}
    assert list(L.CLAIMS) == [c.id for c in all_claims()] and L.FAMILIES == tuple(families())
    assert L.CLAIM_IDS == set(LEDGER) and "totally.made.up.id" not in L.CLAIM_IDS
    fresh = codegen.generate_ledger_ids_module()
    assert fresh == open(codegen.ledger_ids_target_path()).read()
    for stale in (fresh.replace('("cayley", "proved")', '("cayley", "refuted")', 1),
                  fresh.replace('    "cayley.orthogonal"', '    "cayley.orthogonal.renamed"', 1)):
        assert stale != fresh
        path = tmp_path / "_ledger_ids.py"
        path.write_text(stale)
        ok, diff = codegen.check(ledger_path=str(path))
        assert not ok and "cayley" in diff
