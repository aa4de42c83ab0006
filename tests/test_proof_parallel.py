"""Claims checked in worker processes (geoattn.symbolic._parallel, ``geoattn prove --jobs``): the same verdicts
and JSON ledger as in one process, in the claims' order, with a fallback for evidence that does not pickle."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from geoattn import symbolic
from geoattn.cli import main
from geoattn.symbolic import _parallel
from geoattn.symbolic.evidence import Level
from geoattn.symbolic.proof import DerivationReport, validate
from geoattn.symbolic.report import ledger_json

pytestmark = pytest.mark.skipif(not _parallel.can_fork(), reason="worker processes are forked on Linux only")

# a proved derivation, a refuted claim with an exact counterexample, checked claims; and derivations whose sides
# or conclusions SymPy would evaluate when unpickled (an unevaluated Eq of equal sides, a derivative, sign(...))
IDS = ["cayley.orthogonal", "cayley.det_one", "vp.map_volume_preserving.arbitrary", "orthogonal.det_pm_one",
       "cayley.well_defined", "vp.lower_assign_skew", "lsa.gradient", "softmax.stochastic", "exp_skew.square_vjp",
       "exp_skew.taylor_remainder"]


def _without_timings(obj):
    if isinstance(obj, dict):
        return {k: _without_timings(v) for k, v in obj.items() if k not in ("seconds", "cpu_seconds", "jobs")}
    if isinstance(obj, list):
        return [_without_timings(v) for v in obj]
    return obj


def test_workers_give_the_same_ledger_in_the_same_order():
    claims = [symbolic.get_claim(i) for i in IDS]
    one = symbolic.run(claims, jobs=1)
    two = symbolic.run(claims, jobs=2)
    assert [v.claim_id for v in two] == IDS
    assert {v.level for v in two} >= {Level.PROVED, Level.REFUTED}
    as_json = [_without_timings(ledger_json(claims, vs, seed=0, depth=1, seconds=0.0)) for vs in (one, two)]
    assert as_json[0] == as_json[1]
    # the workers' derivations were validated where their checks ran: the copies report the same counts
    d = next(e.derivation for e in two[0].evidence if e.derivation is not None)
    assert isinstance(d.steps[0].check, _parallel.CheckRecord) and validate(d).ok


def test_progress_is_called_before_and_after_each_claim():
    calls = []
    claims = [symbolic.get_claim(i) for i in IDS[:3]]
    symbolic.run(claims, jobs=2, progress=lambda i, n, c, v: calls.append((i, c.id, v is None)))
    for i, cid in enumerate(IDS[:3]):
        before, after = calls.index((i, cid, True)), calls.index((i, cid, False))
        assert before < after


def test_evidence_that_does_not_pickle_is_checked_again_here():
    base = symbolic.get_claim("cayley.det_one")

    def checker(ctx):  # evidence holding a closure: the worker cannot send it back
        return [dataclasses.replace(e, failure_bound=lambda: 0) for e in base.checker(ctx)]

    odd = dataclasses.replace(base, id="mine.unpicklable", checker=checker)
    got = symbolic.run([odd, symbolic.get_claim("cayley.orthogonal")], jobs=2)
    assert [v.claim_id for v in got] == ["mine.unpicklable", "cayley.orthogonal"]
    assert got[0].level is base.expected and callable(got[0].evidence[0].failure_bound)


def test_a_copy_without_its_report_is_caught_by_the_comparison():
    # negative control: a copy whose report is not registered fails its own validation (its checks cannot run)
    v = symbolic.check(symbolic.get_claim("cayley.orthogonal"))
    copy, reports = _parallel.portable(v)
    assert reports[0] is not None
    claim = symbolic.get_claim("cayley.orthogonal")
    assert _without_timings(ledger_json([claim], [v], seed=0, depth=1, seconds=0.0)) != \
        _without_timings(ledger_json([claim], [copy], seed=0, depth=1, seconds=0.0))


def test_cli_jobs(tmp_path, capsys):
    path = tmp_path / "l.json"
    assert main(["prove", "-q", "--jobs", "2", "--json", str(path), *IDS[:2]]) == 0
    data = json.loads(path.read_text())
    assert data["jobs"] == 2 and [c["id"] for c in data["claims"]] == IDS[:2]
    assert "2 processes" in capsys.readouterr().out
    assert main(["prove", "--jobs", "0", IDS[0]]) == 2
    assert "Expected --jobs >= 1. Got 0." in capsys.readouterr().err
    assert 1 <= _parallel.default_jobs() <= 8
    if hasattr(os, "sched_getaffinity"):
        assert _parallel.default_jobs() == min(8, len(os.sched_getaffinity(0)))


def test_a_derivation_cannot_carry_its_own_report():
    """A checker that attaches a passing report to a false derivation does not get it proved."""
    import sympy as sp

    from geoattn.symbolic import Claim, Derivation, Policy, Step, identity

    x = sp.Symbol("x")
    deriv = Derivation(steps=[Step(x, x + 1, "wrong", identity())], conclusion=sp.Eq(x, x + 1, evaluate=False))
    deriv.validated = DerivationReport(1, 1, [], [])
    claim = Claim(id="mine.forged", title="t", statement="x = x + 1", latex="x = x + 1", source="test",
                  expected=Level.PROVED, checker=Policy(prove=lambda: deriv))
    assert symbolic.check(claim).level is not Level.PROVED


def _in_worker(parent: int) -> bool:
    return os.getpid() != parent


@pytest.mark.parametrize("how", ["exit", "die"])
def test_a_claim_whose_worker_exits_or_dies_is_checked_here(how):
    base = symbolic.get_claim("cayley.det_one")
    parent = os.getpid()

    def checker(ctx):
        if _in_worker(parent):
            if how == "exit":
                raise SystemExit(3)
            os._exit(3)
        return base.checker(ctx)

    odd = dataclasses.replace(base, id="mine.leaves", checker=checker)
    got = symbolic.run([odd, symbolic.get_claim("cayley.orthogonal"), symbolic.get_claim("cayley.well_defined")],
                       jobs=2)
    assert [v.claim_id for v in got] == ["mine.leaves", "cayley.orthogonal", "cayley.well_defined"]
    assert got[0].level is base.expected and got[1].level is Level.PROVED
