"""Claim sources name public origins a reader can open, never a local seed file."""

import re

import pytest

from geoattn import symbolic
from geoattn.symbolic.claims._sources import ORIGINS
from geoattn.symbolic.report import short_source

SEED_FILE = re.compile(r"\b\d{3}_[0-9a-f]{16}\.txt\b")


def local_file_named(source: str) -> str | None:
    """The local seed file a source names, if any."""
    m = SEED_FILE.search(source)
    return m.group(0) if m else None


def test_no_source_names_a_local_seed_file():
    offenders = {c.id: c.source for c in symbolic.all_claims() if local_file_named(c.source)}
    assert not offenders, offenders


def test_the_check_catches_a_seed_file_name():
    # negative control: the old form of a source is caught
    assert local_file_named("000_a6b1d30a66a64c9f.txt, 'The Cayley Transform'") == "000_a6b1d30a66a64c9f.txt"
    assert local_file_named(ORIGINS["000"].at("'The Cayley Transform'")) is None


def test_every_origin_is_an_address_with_a_full_commit_or_a_paper():
    for key, origin in ORIGINS.items():
        assert origin.url.startswith("https://"), key
        gml = re.fullmatch(r"https://github\.com/JuliaGNI/GeometricMachineLearning\.jl/blob/([0-9a-f]{40})/[\w./-]+",
                           origin.url)
        assert gml or origin.url.startswith("https://arxiv.org/abs/"), origin.url
        assert origin.url in str(origin) and origin.url in origin.at("a section")


def test_sources_from_the_seeds_cite_their_origin():
    from geoattn.symbolic.ledger import declared_in

    seeded = ("cayley", "vectorisation", "volume_preserving", "vp_linear", "vp_map", "exponential",
              "linear_symplectic", "multihead")
    uncited = [c.id for c in symbolic.all_claims() if declared_in(c.id).rsplit(".", 1)[-1] in seeded
               and not c.corrects and not any(o.url in c.source for o in ORIGINS.values())]
    assert not uncited, uncited
    assert "GML.jl attention_layer@913a58c" in short_source(symbolic.get_claim("cayley.orthogonal"))
    assert short_source(symbolic.get_claim("lsa.gradient")).startswith("GML.jl linear_symplectic_attention@68ddaa5")


@pytest.mark.parametrize("claim_id", ["cayley.orthogonal", "mha.output_shape", "exp.orthogonal", "lsa.gradient"])
def test_a_source_is_named_by_page_and_section(claim_id):
    claim = symbolic.get_claim(claim_id)
    assert "GeometricMachineLearning.jl docs, '" in claim.source
