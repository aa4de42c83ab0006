"""The benchmark scripts run end to end (tiny sizes) and write well-formed JSON. No timing is asserted."""

import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..")


def _run(script, tmp_path):
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, json.loads(out.read_text())


def test_layers_benchmark_runs(tmp_path):
    stdout, data = _run("layers.py", tmp_path)
    assert "1 thread" in stdout
    names = {r["layer"] for r in data["rows"]}
    assert names == {"sdpa", "VolumePreservingAttention", "OrthonormalAttention", "LinearSymplecticAttention"}
    for r in data["rows"]:
        assert r["fwd"] > 0 and r["fwd_bwd"] > 0 and r["memory"] > 0
        if r["layer"] != "sdpa":
            assert r["ratio_fwd_bwd"] > 0


def test_kernels_benchmark_runs(tmp_path):
    stdout, data = _run("kernels.py", tmp_path)
    assert "thread" in stdout and data
