"""The ``geoattn prove`` command: exit codes, progress, table and JSON ledger."""

import json
import os
import resource
import subprocess
import sys

import pytest

from geoattn import symbolic
from geoattn.cli import main
from geoattn.symbolic import _parallel as symbolic_parallel
from geoattn.symbolic import Level


def test_prove_selected_ids(capsys):
    assert main(["prove", "cayley.orthogonal", "orthogonal.det_one"]) == 0
    out, err = capsys.readouterr()
    assert "cayley.orthogonal" in out and "proved" in out
    assert "orthogonal.det_one" in out and "refuted" in out
    assert "[1/2] cayley.orthogonal ... proved" in err  # progress on stderr
    assert "2 claims in" in out


def test_unknown_id_exits_2_and_says_where_to_look_without_printing_the_ledger(capsys):
    assert main(["prove", "no.such.claim"]) == 2
    err = capsys.readouterr().err
    assert "Expected a known claim id. Got 'no.such.claim'" in err
    assert "cayley" in err and "lsa" in err and "geoattn prove --list" in err  # the prefixes, and where the ids are
    assert "cayley.orthogonal" not in err
    assert main(["prove", "cayley.no_such_claim"]) == 2
    err = capsys.readouterr().err
    assert "cayley.orthogonal" in err and "lsa.gradient" not in err  # the family's ids only


@pytest.mark.parametrize(
    "argv",
    [["prove", "--depth", "0"], ["prove", "--family", "nope"], ["prove", "--bogus"], ["frobnicate"], []],
)
def test_bad_usage_exits_2(argv, capsys):
    assert main(argv) == 2


def test_list(capsys):
    assert main(["prove", "--list", "--family", "linear_symplectic"]) == 0
    out = capsys.readouterr().out
    assert "lsa.gradient" in out and "cayley.orthogonal" not in out


def test_json_ledger(tmp_path, capsys):
    path = tmp_path / "ledger.json"
    assert main(["prove", "-q", "--family", "volume_preserving", "--json", str(path)]) == 0
    data = json.loads(path.read_text())
    assert data["geoattn_ledger"] == 1 and data["seed"] == 0
    records = {r["id"]: r for r in data["claims"]}
    keys = {"id", "statement", "latex", "source", "verdict", "evidence_level", "method", "sizes", "counterexample", "seconds"}
    for r in records.values():
        assert keys <= set(r)
    bad = records["vp.map_volume_preserving.arbitrary"]
    assert bad["verdict"] == "refuted" and bad["counterexample"]["residual"] != "0"
    assert bad["counterexample"]["values"]["Z"]  # rational entries as strings
    good = records["vp.map_volume_preserving.skew"]
    assert good["verdict"] == good["expected"] == good["evidence_level"]
    assert good["verdict"] == "checked" and good["derivation"] is None  # the engine refuses its flow argument
    assert any(e["level"] == "certified" and e["failure_bound"] for e in good["evidence"])
    invariant = records["vp.map_invariant"]
    assert invariant["verdict"] == "proved" and invariant["evidence"][0]["derivation"]["steps"]
    counts = invariant["derivation"]
    assert counts["n_verified"] == counts["n_steps"] - counts["n_lemmas"]
    assert records["vp.skew_weighting"]["evidence"][0]["derivation"]["steps"]


def test_mismatch_exits_1(monkeypatch, capsys):
    claim = symbolic.get_claim("cayley.det_one")
    monkeypatch.setattr(claim, "expected", Level.REFUTED)
    assert main(["prove", "-q", "cayley.det_one"]) == 1
    assert "expected refuted, got proved" in capsys.readouterr().err


def test_error_exits_1(monkeypatch, capsys):
    claim = symbolic.get_claim("cayley.det_one")

    def broken(ctx):
        raise RuntimeError("checker broke")

    monkeypatch.setattr(claim, "checker", broken)
    assert main(["prove", "-q", "cayley.det_one"]) == 1
    assert "checker broke" in capsys.readouterr().err


def test_module_entry_point_runs_whole_ledger(tmp_path):
    """The default run, as the README invokes it: every verdict as recorded, with the default workers. Its time
    against the 60 s budget depends on the machine and is measured by ``benchmarks/prove_budget.py``."""
    path = tmp_path / "l.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-m", "geoattn", "prove", "--json", str(path)], capture_output=True, text=True, timeout=300
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(path.read_text())
    assert len(data["claims"]) == len(symbolic.all_claims())
    assert all(r["matches_expected"] for r in data["claims"])
    assert data["jobs"] == (symbolic_parallel.default_jobs() if symbolic_parallel.can_fork() else 1)
    # the CPU seconds the ledger records (those of the budget) are the workers' own, within what the process and
    # its children used
    assert 0 < data["cpu_seconds"] <= cpu, (data["cpu_seconds"], cpu)


def test_unknown_id_suggests_the_closest(capsys):
    assert main(["prove", "cayley.orthogonl"]) == 2
    err = capsys.readouterr().err
    assert "Did you mean 'cayley.orthogonal'" in err
    assert len(err.splitlines()) == 1  # the close matches, not the 91 ids after them


@pytest.mark.parametrize("bad", ["missing-folder/ledger.json", "."])
def test_unwritable_json_path_exits_2_before_any_claim(bad, tmp_path, capsys, monkeypatch):
    import geoattn.symbolic as S

    def fail(*a, **k):  # no claim may run when the output cannot be written
        raise AssertionError("claims ran")

    monkeypatch.setattr(S, "run", fail)
    path = str(tmp_path / bad) if bad != "." else str(tmp_path)  # a folder is not a file
    assert main(["prove", "cayley.orthogonal", "--json", path]) == 2
    assert "Expected --json to name a file that can be written" in capsys.readouterr().err


def test_where_prints_the_file_that_declares_each_claim(capsys):
    """A claim id finds its file: cayley.vjp is declared with the kernels' claims, not in claims/cayley.py."""
    assert main(["prove", "--where", "cayley.vjp", "cayley.orthogonal"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[0] == "cayley.vjp" and out[0].endswith(os.path.join("claims", "kernels.py"))
    assert out[1].endswith(os.path.join("claims", "cayley.py"))
    from geoattn.symbolic import all_claims
    from geoattn.symbolic.ledger import declared_in

    for c in all_claims():  # every id names a module whose CLAIMS holds it
        import importlib

        assert c.id in {k.id for k in importlib.import_module(declared_in(c.id)).CLAIMS}
