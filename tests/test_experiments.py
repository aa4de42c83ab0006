"""geoattn.experiments and the example scripts: resumable training, DDP under torchrun, outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from geoattn.experiments import TrainConfig, load_checkpoint, train
from geoattn.experiments.runner import markdown_table
from geoattn.models import LinearSymplecticTransformer
from geoattn.systems import CoupledOscillator, TrajectoryWindows

ROOT = Path(__file__).resolve().parents[1]
EPS64 = torch.finfo(torch.float64).eps


def _data():
    osc = CoupledOscillator()
    traj = osc.trajectories(osc.initial_conditions(3), t_end=2.0)
    return TrajectoryWindows(traj, 3, dtype=torch.float32).tensors()


def _model(seed):
    torch.manual_seed(seed)
    return LinearSymplecticTransformer(4, 3, n_sympnet=1)


def test_resume_continues_exactly(tmp_path):
    x, y = _data()
    config = TrainConfig(epochs=6, batch_size=16, lr=1e-2, checkpoint_every=1)
    straight = _model(0)
    h1 = train(straight, x, y, config, progress=False)

    interrupted = _model(0)
    ckpt = tmp_path / "ckpt.pt"
    part = train(interrupted, x, y, config, checkpoint=ckpt, progress=False, stop_after=3)
    assert part["epochs_run"] == 3 and load_checkpoint(ckpt, _model(1))["epoch"] == 2
    resumed = _model(1)  # a different initialisation: everything must come from the checkpoint
    rest = train(resumed, x, y, config, checkpoint=ckpt, progress=False)
    assert rest["epochs_run"] == 3
    assert rest["loss"] == h1["loss"]
    for a, b in zip(straight.parameters(), resumed.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_resume_false_starts_over(tmp_path):
    x, y = _data()
    config = TrainConfig(epochs=2, batch_size=16, checkpoint_every=1)
    ckpt = tmp_path / "c.pt"
    train(_model(0), x, y, config, checkpoint=ckpt, progress=False)
    h = train(_model(0), x, y, config, checkpoint=ckpt, progress=False, resume=False)
    assert h["epochs_run"] == 2


@pytest.mark.parametrize(
    "kwargs, match",
    [({"epochs": 0}, "epochs"), ({"batch_size": 1.5}, "batch_size"), ({"lr": 0.0}, "lr")],
)
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_markdown_table_marks_divergence():
    t = markdown_table([{"a": "x", "b": float("nan")}, {"a": "y", "b": 0.5}], [("a", "A", ""), ("b", "B", ".2f")])
    assert t.splitlines()[2] == "| x | diverged |" and t.splitlines()[3] == "| y | 0.50 |"


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    return env


@pytest.mark.parametrize("script", ["rigid_body.py", "coupled_oscillator.py"])
def test_example_quick_run_writes_outputs(script, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), "--quick", "--out", str(out), "--no-progress",
         "--threads", "1"],
        env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(metrics["models"]) >= 3
    for row in metrics["models"]:
        assert "max_abs_det_minus_one" in row
    structured = [r for r in metrics["models"] if r["model"].startswith(("VPT (skew)", "LST"))]
    tol = 64 * 16 * EPS64  # k * N * eps with N = seq_len * sys_dim <= 16, well-conditioned untrained maps
    assert structured and all(r["max_abs_det_minus_one"] < tol for r in structured)
    for name in ("table.md", "rollout_error.png", "invariant_drift.png", "trajectories.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "checkpoints").is_dir()


def test_torchrun_two_processes(tmp_path):
    out = tmp_path / "ddp"
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29517",
         str(ROOT / "examples" / "coupled_oscillator.py"), "--quick", "--out", str(out), "--no-progress",
         "--models", "LST"],
        env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["config"]["distributed"] is True
    assert [r["model"] for r in metrics["models"]] == ["LST"]
    assert metrics["models"][0]["max_symplecticity_error"] < 64 * 16 * EPS64


def test_evaluation_metrics():
    from geoattn.experiments import diverged, invariant_drift, relative_error, valid_time

    ref = torch.ones(2, 5, 2, dtype=torch.float64)
    pred = ref.clone()
    pred[0, 2:] *= 2.0  # relative error 1 from step 2
    pred[1, 4] = float("nan")
    err = relative_error(pred, ref)
    torch.testing.assert_close(err[0], torch.tensor([0, 0, 1, 1, 1.0], dtype=torch.float64))
    torch.testing.assert_close(valid_time(err, 0.5), torch.tensor([1.0, 2.0], dtype=torch.float64))
    assert diverged(pred).tolist() == [False, True]
    torch.testing.assert_close(invariant_drift(pred[:1], lambda z: z.pow(2).sum(-1))[0, 2], torch.tensor(3.0,
                               dtype=torch.float64))
