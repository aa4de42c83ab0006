"""Every claim of the ledger reaches its recorded verdict, with the evidence its level requires."""

import re

import pytest
import sympy as sp

from geoattn import symbolic
from geoattn.symbolic import Level

CLAIMS = symbolic.all_claims()
REQUIRED_IDS = """
cayley.orthogonal cayley.well_defined cayley.det_one orthogonal.det_one vp.skew_weighting
vp.lower_assign_skew vp.arbitrary_weighting_shape vec.seed_formula vec.right_multiplication
lift.orthogonal lift.symplectic vp.map_volume_preserving.skew vp.map_volume_preserving.arbitrary
exp.orthogonal exp.lift_symplectic exp.map_symplectic exp.map_volume_preserving lsa.gradient
lsa.reweighting lsa.map_symplectic symplectic.product_structure mha.projection_shapes
mha.output_shape softmax.stochastic softmax.can_be_singular attention.multiplicative_matrix
attention.row_column_equivalence cayley.vjp exp_skew.vjp exp_skew.taylor_form exp_skew.taylor_vjp
exp_skew.taylor_remainder exp_skew.square_vjp exp_skew.scaling_squaring
vp.push_through vp.push_through_invertible vp.exp_push_through vp.map_invariant vp.map_invariant.exp
vp.map_inverse vp.map_volume_preserving.exp_skew
vp.lowrank_form vp.lowrank_cayley_vjp vp.lowrank_exp_vjp
""".split()


@pytest.fixture(scope="module")
def verdicts():
    return {c.id: symbolic.check(c) for c in CLAIMS}


def test_required_ids_present():
    ids = {c.id for c in CLAIMS}
    missing = [i for i in REQUIRED_IDS if i not in ids]
    assert not missing, f"ledger lacks {missing}"


def test_ids_unique_and_well_formed():
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids))
    for i in ids:
        assert re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", i), i


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_verdict_matches_expectation(claim, verdicts):
    v = verdicts[claim.id]
    assert v.level is claim.expected, f"{claim.id}: {v.level.value} ({v.error})"


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_evidence_fits_level(claim, verdicts):
    v = verdicts[claim.id]
    ev = v.strongest
    assert ev is not None and ev.level is v.level
    if v.level is Level.PROVED:
        d = v.derivation
        assert d is not None and d.steps
        assert all(s.verified is not False for s in d.steps)
        # at least one step is machine-verified, not only stated
        assert any(s.verified for s in d.steps)
    elif v.level is Level.CHECKED:
        assert ev.sizes, "checked evidence must state its sizes"
    elif v.level is Level.CERTIFIED:
        assert ev.points and ev.failure_bound is not None
    elif v.level is Level.REFUTED:
        ce = ev.counterexample
        assert ce is not None
        assert ce.sizes
        r = ce.residual
        if isinstance(r, sp.MatrixBase):
            assert any(x != 0 for x in r)
        else:
            assert sp.sympify(r) != 0


def test_every_refuted_seed_claim_has_a_proved_correction(verdicts):
    corrections = {c.corrects: c for c in CLAIMS if c.corrects}
    for c in CLAIMS:
        if c.expected is Level.REFUTED:
            assert c.id in corrections, f"{c.id} is refuted but has no corrected claim"
            fix = corrections[c.id]
            assert fix.source == f"corrected form of {c.id}"
            assert verdicts[fix.id].level in (Level.PROVED, Level.CHECKED, Level.CERTIFIED)


def test_corrections_point_at_refuted_claims():
    by_id = {c.id: c for c in CLAIMS}
    for c in CLAIMS:
        if c.corrects:
            assert by_id[c.corrects].expected is Level.REFUTED


def test_counterexamples_reproducible_from_seed(verdicts):
    """Re-running a refuted claim gives the same counterexample."""
    for c in CLAIMS:
        if c.expected is Level.REFUTED:
            again = symbolic.check(c).counterexample
            first = verdicts[c.id].counterexample
            assert again.seed == first.seed
            assert sp.sstr(again.residual) == sp.sstr(first.residual)


def test_different_seed_still_refutes():
    for cid in ("vp.map_volume_preserving.arbitrary", "exp.map_symplectic", "vec.seed_formula"):
        v = symbolic.get_claim(cid).check(seed=7)
        assert v.level is Level.REFUTED


def test_certified_bound_is_small(verdicts):
    v = verdicts["vp.map_volume_preserving.skew"]
    cert = [e for e in v.evidence if e.level is Level.CERTIFIED]
    assert cert, "the skew map claim is certified beyond its exact sizes (as corroboration of its derivation)"
    assert sp.Rational(cert[0].failure_bound) < sp.Rational(1, 10**12)
    assert all("degree_bound" in s for s in cert[0].sizes)


GML_AT_0_4_8 = "GeometricMachineLearning.jl/blob/edb632b3211411e3d1cc42cbce4f7f174815bd1c/"


def test_statements_have_sources_and_latex():
    from geoattn.symbolic.claims._sources import ORIGINS

    for c in CLAIMS:
        assert c.statement and c.latex and c.source and c.title
        if c.family == "kernels":  # claims about the expressions the kernels are generated from
            assert c.source.startswith("kernel"), c.source
        elif c.family in ("models", "systems"):  # claims the models and the training data rest on
            assert c.source.startswith(("geoattn.", "rigid-body benchmark", "corrected form of")), c.source
        elif c.family == "symattn" and not c.corrects:  # the Julia package as written, or geoattn's own layer
            assert c.source.startswith("geoattn.") or GML_AT_0_4_8 in c.source, c.source
        elif not c.corrects:  # a public origin of a seed text: a documentation page at a commit, or the paper
            assert any(o.url in c.source for o in ORIGINS.values()), c.source
        assert not re.search(r"\d{3}_[0-9a-f]{16}\.txt", c.source), c.source  # never a local file name


def test_ledger_order_is_pinned():
    """The order of the ledger (the CLI's table, the JSON and the docs list claims in it); a change is a decision."""
    ids = [c.id for c in symbolic.all_claims()]
    kernels = [c.id for c in symbolic.all_claims("kernels")]
    assert kernels[:3] == ["kernels.cayley_left_solve", "cayley.apply_form", "cayley.vjp"]
    assert kernels[-24:] == ["vp.lowrank_form", "vp.lowrank_cayley_vjp", "vp.lowrank_exp_vjp", "vp.gram_closed_form",
                             "vp.gram_closed_form_vjp", "vp.gram_exp_vjp", "vp.gram_exp_closed_form",
                             "vp.gram_exp_closed_form_vjp", "vp.gram_lu_vjp", "vp.gram_lu_woodbury",
                             "vp.gram_lu_measured_bound",
                             "vp.gram_exp_closed_quartic", "vp.gram_exp_closed_quartic_vjp",
                             "vp.gram_exp_native_truncation", "vp.gram_exp_native_reverse", "vp_lower.offdiag_blocks",
                             "vp_lower.merge", "exp_action.chebyshev_recurrence", "exp_action.chebyshev_adjoint",
                             "exp_action.truncation_bound", "exp_action.skew_square_norm_bound",
                             "exp_action.uta_factor_vjp", "exp_skew.hodge_vjp",
                             "exp_skew.hodge_vjp_series"]
    assert ids[0] == "cayley.well_defined" and len(ids) == len(set(ids)) == 125
    assert [f for f in symbolic.families()] == ["cayley", "vectorisation", "volume_preserving", "exponential",
                                                "linear_symplectic", "multihead", "kernels", "models", "systems",
                                                "symattn"]


def test_every_claims_module_is_in_the_family_table():
    import importlib
    import pkgutil

    import geoattn.symbolic.claims as C

    listed = [m.__name__ for mods in C.FAMILIES.values() for m in mods]
    assert len(listed) == len(set(listed))
    declaring = {info.name for info in pkgutil.iter_modules(C.__path__, C.__name__ + ".")
                 if hasattr(importlib.import_module(info.name), "CLAIMS")}
    assert declaring == set(listed)


@pytest.mark.parametrize("defect, match", [
    ("duplicate", "Expected unique claim ids"),
    ("family", "to declare no family"),
    ("corrects", "Expected .* to correct a claim of the ledger"),
    ("source", "to name its source"),
])
def test_ledger_builder_refuses_a_broken_table(defect, match, monkeypatch):
    """Negative controls: a duplicated id, a claim that names its own family, a correction of nothing, no source."""
    import dataclasses
    import types

    import geoattn.symbolic.claims as C
    from geoattn.symbolic import ledger

    claim = symbolic.get_claim("cayley.orthogonal")
    bad = {"duplicate": [dataclasses.replace(claim, family="")] * 2,
           "family": [dataclasses.replace(claim, family="cayley")],
           "corrects": [dataclasses.replace(claim, family="", corrects="no.such.claim")],
           "source": [dataclasses.replace(claim, family="", source="")]}[defect]
    monkeypatch.setattr(C, "FAMILIES", {"cayley": (types.SimpleNamespace(__name__="fake", CLAIMS=bad),)})
    ledger._ledger.cache_clear()
    ledger._build.cache_clear()  # _ledger reads the cached _build
    try:
        with pytest.raises(ValueError, match=match):
            ledger.all_claims()
    finally:
        monkeypatch.undo()
        ledger._ledger.cache_clear()
        ledger._build.cache_clear()
    assert len(symbolic.all_claims()) == 125
