"""The benchmark scripts run end to end (tiny sizes) and write well-formed JSON. No timing is asserted."""

import json
import os
import subprocess
import sys

import pytest
import torch

from geoattn.kernels import _native_exp, _native_lu

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
    assert names == {"sdpa", "VolumePreservingAttention", "VolumePreservingAttention(exp)", "OrthonormalAttention",
                     "LinearSymplecticAttention", "SymplecticAttention", "MultiHeadAttention",
                     "torch.nn.MultiheadAttention"}
    for r in data["rows"]:
        assert r["fwd"] > 0 and r["fwd_bwd"] > 0 and r["fwd_bwd_sum"] > 0 and r["memory"] > 0
        if r["layer"] not in ("sdpa", "torch.nn.MultiheadAttention"):
            assert r["ratio_fwd_bwd"] > 0 and r["ratio_fwd_bwd_sum"] > 0
        op = {"VolumePreservingAttention": "vp_attention", "VolumePreservingAttention(exp)": "vp_attention",
              "SymplecticAttention": "symattn_update", "OrthonormalAttention": "exp_uta_action"}.get(r["layer"])
        if op is not None and not r.get("sweep"):  # the route that served, a route of the layer's operation
            from geoattn.kernels.dispatch import OPERATIONS
            assert r["route"] in {route.name for route in OPERATIONS[op].routes}, r
    # the multi-head table: every mask kind, ours against torch's at the same shape, tokens and mask
    mha = [r for r in data["rows"] if r["layer"] == "MultiHeadAttention"]
    torch_mha = {(r["B"], r["T"], r["dim"], r["mask"]): r for r in data["rows"]
                 if r["layer"] == "torch.nn.MultiheadAttention"}
    assert {r["mask"] for r in mha} == {"none", "causal", "bool", "additive", "padding"}
    for r in mha:
        assert r["reference"] == "torch.nn.MultiheadAttention" and r["B"] * r["T"] == 1024
        assert r["ratio_memory"] == r["memory"] / torch_mha[(r["B"], r["T"], r["dim"], r["mask"])]["memory"]
    sweep = [r for r in data["rows"] if r.get("sweep")]
    assert {r["T"] for r in sweep} == {16, 64} and {r["B"] * r["T"] for r in sweep} == {data["tokens"]}


def test_symplectic_benchmark_runs(tmp_path):
    stdout, data = _run("symplectic.py", tmp_path)
    assert "1 thread" in stdout
    names = {r["layer"] for r in data["rows"]}
    assert names == {"sdpa", "SymplecticAttention(matrix_softmax)", "autograd (matrix_softmax)",
                     "SymplecticAttention(vector_softmax)", "autograd (vector_softmax)"}
    assert {r["T"] for r in data["rows"]} == {4, 16}
    for r in data["rows"]:
        assert r["fwd"] > 0 and r["fwd_bwd"] > 0 and r["fwd_bwd_sum"] > 0 and r["memory"] > 0
        if r["layer"] != "sdpa":
            assert r["ratio_fwd_bwd"] > 0 and r["ratio_memory"] > 0


def test_kernels_benchmark_runs(tmp_path):
    stdout, data = _run("kernels.py", tmp_path)
    assert "thread" in stdout and data
    rows = data["rows"]
    assert {r["scale"] for r in rows} == {0.1, 1.0, 3.0} and {r["kernel_name"] for r in rows} == {"cayley", "exp_skew"}
    for r in rows:  # every row says which route served it, and its result is orthogonal within the bar
        assert r["route"] and "/" in r["route"] and 0 <= r["orth_T_eps"] <= 64
        assert r["ratio_fwd_bwd"] > 0 and r["ratio_fwd_bwd_sum"] > 0


def test_target_summary_says_met_and_missed():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from targets import summarise

    rows = [
        {"kernel_name": "cayley", "dtype": "float64", "B": 4096, "T": 8, "ratio_fwd_bwd": 0.5, "ratio_fwd_bwd_sum": 0.6},
        {"kernel_name": "cayley", "dtype": "float64", "B": 4096, "T": 16, "ratio_fwd_bwd": 0.7, "ratio_fwd_bwd_sum": 0.9},
        {"kernel_name": "cayley", "dtype": "float64", "B": 4096, "T": 64, "ratio_fwd_bwd": 5.0},  # outside the target
        {"kernel_name": "exp_skew", "dtype": "float64", "B": 4096, "T": 8, "ratio_fwd_bwd": 0.3, "ratio_fwd_bwd_sum": 0.4},
        {"kernel_name": "exp_skew", "dtype": "float64", "B": 256, "T": 8, "ratio_fwd_bwd": 9.0},  # other batch
    ]
    cay_dense, cay_sum, exp_dense, exp_sum = summarise("kernels", rows)
    assert "dense" in cay_dense and cay_dense.endswith("[met]") and "T=64" not in cay_dense
    assert "sum" in cay_sum and cay_sum.endswith("[missed]")  # 0.9 > 0.8 in the sum layout only
    assert exp_dense.endswith("[met]") and exp_sum.endswith("[met]") and "9.00" not in exp_dense
    assert summarise("layers", rows) == []
    # cost per token of the length sweep: flat is met, quadratic is missed
    sweep = [{"layer": "VolumePreservingAttention", "sweep": True, "B": 32768 // T, "T": T,
              "fwd_bwd": 1e-3, "fwd_bwd_sum": 1e-3} for T in (512, 4096)]
    assert all(line.endswith("[met]") for line in summarise("layers", sweep))
    sweep[1]["fwd_bwd"] = 8e-3  # 8x the time at equal tokens: cost per token no longer flat
    assert summarise("layers", sweep)[0].endswith("[missed]")
    # the multi-head target: every mask at 65,536 tokens within 1.2x torch's module; other token counts ignored
    mha = [{"layer": "MultiHeadAttention", "reference": "torch.nn.MultiheadAttention", "B": 65536 // T, "T": T,
            "dim": 8, "mask": m, "ratio_fwd_bwd": 1.1, "ratio_fwd_bwd_sum": 0.9} for T in (16, 256)
           for m in ("none", "causal")]
    mha.append({**mha[0], "B": 8, "ratio_fwd_bwd": 5.0})  # 128 tokens: outside the target
    dense, summed = summarise("layers", mha)
    assert dense.endswith("[met]") and "T=256 dim=8 causal: 1.10" in dense and "5.00" not in dense
    mha[1]["ratio_fwd_bwd_sum"] = 1.3  # the causal row at T=16 misses in the sum layout only
    dense, summed = summarise("layers", mha)
    assert dense.endswith("[met]") and summed.endswith("[missed]")


def test_cayley_forms_benchmark_runs_and_every_form_is_the_cayley_transform(tmp_path):
    stdout, data = _run("cayley_forms.py", tmp_path)
    assert "1 thread" in stdout
    rows = [r for r in data["rows"] if r["dtype"] == "float32"]
    assert {r["form"] for r in rows} == {"lu-chunked", "cholesky", "gauss-jordan", "block", "adjugate"}
    for r in rows:
        # the forms compute the same matrix: error within k*T*eps*(1 + |C|) with the tests' k = 32
        assert r["err_scale_1"] < 32, r
        assert r["ratio_fwd"] > 0
    # the documented trade: without pivoting the error grows with |C|, with the solve it does not
    at3 = {r["form"]: r["err_scale_100"] for r in rows if r["T"] == 3}
    for form in ("cholesky", "gauss-jordan", "block"):
        assert at3[form] > 10 * at3["lu-chunked"], at3


def test_gpu_table_rows_and_bandwidth_fraction(capsys):
    """The GPU table's code path on the CPU (wall-clock timer, no torch.compile): one row per case and incoming
    gradient, each naming its route, SDPA ratios from the same shape, the VP layer's bytes counted as x, y, dy, dx
    once each, and the bandwidth fraction computed from them."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import torch

    import gpu

    rows = gpu.gpu_rows(torch.device("cpu"), reps=1, lengths=(5,), tokens=40, dims=(3,), timer=gpu.wall_timer,
                        compile=False)
    assert [(r["op"], r["grad"]) for r in rows[:6]] == [(op, g) for op in ("sdpa", "vp-cayley", "vp-exp")
                                                        for g in ("dense", "sum")]
    assert {r["op"] for r in rows[6:]} == {"cayley"}
    for r in rows:
        assert r["time"] > 0 and r["route"]
        if r["op"] != "sdpa":
            assert r["ratio_sdpa"] is None if r["op"] == "cayley" else r["ratio_sdpa"] > 0
    vp = rows[2]
    assert vp["bytes"] == 4 * vp["B"] * 5 * 3 * 4
    gpu.print_gpu_table(rows, 1e9)
    assert vp["bandwidth_fraction"] == vp["bytes"] / vp["time"] / 1e9
    assert "GPU table" in capsys.readouterr().out


def test_compare_trees_runs_a_checkout_against_itself(tmp_path):
    """benchmarks/compare_trees.py --quick with this checkout on both sides: one row per case, both times measured,
    the ratio their quotient; a checkout that cannot run the cases is reported, not timed."""
    out = tmp_path / "out.json"
    script = os.path.join(ROOT, "benchmarks", "compare_trees.py")
    proc = subprocess.run([sys.executable, script, ROOT, ROOT, "--quick", "--tokens", "512", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["tokens"] == 512 and len(data["rows"]) == 2
    for r in data["rows"]:
        assert r["base_ms"] > 0 and r["new_ms"] > 0 and r["ratio"] == r["new_ms"] / r["base_ms"]
    broken = tmp_path / "broken" / "geoattn"  # a checkout whose package fails to import
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('a broken checkout')\n")
    bad = subprocess.run([sys.executable, script, str(broken.parent), ROOT, "--quick"], capture_output=True,
                         text=True, timeout=600)
    assert bad.returncode != 0 and "Expected the cases to run in" in bad.stderr


def test_route_benchmarks_run_at_tiny_sizes():
    """The benchmarks behind the routing constants (gram-lu, gram-exp-closed), the fused symplectic route and the
    orthonormal layer's floors run end to end at tiny sizes and print a row per case; no timing is asserted."""
    cases = [("gram_lu.py", ["--tokens", "256", "--dims", "5", "--lengths", "16", "--reps", "1"], "dense"),
             ("gram_exp_closed.py", ["--tokens", "256", "--dims", "3", "--lengths", "16", "--reps", "1"],
              "gram-exp"),  # the auto route: gram-exp/native, or gram-exp-closed/eager without a C compiler
             ("symattn_tokens.py", ["--tokens", "256", "--dims", "4", "--lengths", "8", "--activations",
                                    "matrix_softmax", "--reps", "1"], "matrix_softmax"),
             ("orthonormal_floors.py", ["--tokens", "256", "--cases", "8,3", "--reps", "1"], "layer f+b (chebyshev)")]
    lu_source = os.path.join(ROOT, "geoattn", "kernels", "_native_gram_lu.c")
    if _native_lu.lu_native_status(5)[0]:  # the A/B of two LU kernel builds (here the same source twice)
        cases.append(("lu_stage_ab.py", [lu_source, lu_source, "--tokens", "256", "--shapes", "5:16", "--reps", "1"],
                      "d= 5 T= 16"))
        cases.append(("lu_passes_ab.py", [lu_source, lu_source, "--tokens", "256", "--shapes", "5:16", "--reps", "1"],
                      "bit-identical"))
    for script, args, expect in cases:
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script), *args], capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert expect in proc.stdout, proc.stdout


def test_symattn_crossover_runs(tmp_path):
    """benchmarks/symattn_crossover.py --quick: one row per (dim, T) with every route timed where it is built, the
    native output equal to the dense one to rounding, and the crossover line; no timing is asserted."""
    stdout, data = _run("symattn_crossover.py", tmp_path)
    assert "1 thread" in stdout and "dim 4:" in stdout
    assert [(r["dim"], r["T"]) for r in data["rows"]] == [(4, 32), (4, 96)]
    for r in data["rows"]:
        assert r["dense_fwd_bwd"] > 0 and r["sdpa_fwd_bwd_sum"] > 0
        if "native_fwd_bwd" in r:  # the kernel built here
            assert r["native_rel_diff"] <= 64 * r["T"] * torch.finfo(torch.float32).eps, r
    assert set(data["crossover"]) == {"4"}


def test_exp_stage_ab_runs_at_tiny_sizes():
    """The A/B of two builds of the native exponential kernels (here the same source twice) runs on both clocks
    and prints a row per shape; no timing is asserted."""
    if not _native_exp.exp_native_status(3)[0]:
        pytest.skip("no native exponential kernels here")
    src = os.path.join(ROOT, "geoattn", "kernels", "_native_gram_exp.c")
    for clock in ("wall", "cpu"):
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "exp_stage_ab.py"), src, src,
                               "--tokens", "256", "--shapes", "3:16", "--reps", "1", "--clock", clock],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "d= 3 T= 16" in proc.stdout and "kernels fwd" in proc.stdout, proc.stdout


def test_vp_lower_benchmark_runs(tmp_path):
    stdout, data = _run("vp_lower.py", tmp_path)
    assert "1 thread" in stdout
    timed = [r for r in data["rows"] if r["form"] != "accuracy"]
    assert {r["form"] for r in timed} == {"semisep", "sdpa", "full"}
    assert {r["T"] for r in timed if r["form"] == "semisep"} == {128, 256}
    assert [r["route"] for r in timed if r["form"] == "semisep"] == ["semisep/eager"] * 2
    for r in timed:
        assert r["fwd_bwd"] > 0 and r["B"] * r["T"] == data["tokens"]
    acc = [r for r in data["rows"] if r["form"] == "accuracy"]
    assert len(acc) == 1 and 0 <= acc[0]["max_err_vs_float64"] < 256 * torch.finfo(torch.float32).eps


def test_prove_budget_benchmark_runs(tmp_path):
    stdout, data = _run("prove_budget.py", tmp_path)
    assert data["quick"] and data["claims"] >= 5 and data["cpu_seconds"] > 0
    assert data["per_core_seconds"] == data["cpu_seconds"] / min(data["jobs"], 2)
    assert ("[met]" if data["met"] else "[missed]") in stdout and "not the budget's run" in stdout
    assert [s for _, s in data["slowest"]] == sorted((s for _, s in data["slowest"]), reverse=True)

