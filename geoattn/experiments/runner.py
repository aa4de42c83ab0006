"""Command-line plumbing shared by the experiment scripts in ``examples/``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import platform
import time
from pathlib import Path
from typing import Callable

import torch

from ..systems import TrajectoryWindows
from .evaluation import diverged, invariant_drift, relative_error, rollout_trajectories, structure_report, valid_time
from .training import TrainConfig, init_distributed, is_main_process, train

__all__ = [
    "experiment_parser",
    "setup",
    "fit",
    "Comparison",
    "compare",
    "result_columns",
    "write_results",
    "markdown_table",
    "write_json",
    "environment",
]


def experiment_parser(description: str, default_out: str) -> argparse.ArgumentParser:
    """The options every experiment takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default=default_out, help="output folder: metrics.json, table.md, PNGs, checkpoints/")
    p.add_argument("--budget", type=float, default=1.0,
                   help="scale the number of epochs (1.0: the default run, a few minutes on 2 CPU cores)")
    p.add_argument("--quick", action="store_true", help="a tiny run (seconds) that exercises every step")
    p.add_argument("--no-resume", action="store_true", help="ignore existing checkpoints and start over")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--models", nargs="*", default=None, help="train only these models (names as in the table)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def setup(args) -> tuple[torch.device, Path, bool]:
    """Join the process group under ``torchrun``, set the thread count, pick the device, create ``args.out``.

    Returns ``(device, out, distributed)``.
    """
    distributed = init_distributed()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return device, out, distributed


def fit(name: str, model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor, config: TrainConfig,
        out: Path, args) -> dict:
    """Train one model with a checkpoint ``out/checkpoints/<name>.pt``; returns the history."""
    slug = "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
    return train(model, inputs, targets, config, checkpoint=out / "checkpoints" / f"{slug}.pt",
                 resume=not args.no_resume, progress=not args.no_progress and is_main_process(), desc=name)


@dataclasses.dataclass
class Comparison:
    """What :func:`compare` measured: one table row per model, and per-model curves over time."""

    rows: list[dict]
    error: dict[str, torch.Tensor]  # mean relative error per step
    drift: dict[str, torch.Tensor]  # mean relative drift of the invariant per step
    pred: dict[str, torch.Tensor]  # rollouts, (n_test, n_steps, sys_dim)
    loss: dict[str, list[float]]  # per-epoch training loss


def compare(models: dict[str, Callable[[], torch.nn.Module]], train_traj: torch.Tensor, test_traj: torch.Tensor, *,
            dt: float, invariant: Callable[[torch.Tensor], torch.Tensor], symplectic: bool, config: TrainConfig,
            out: Path, args, device: torch.device) -> Comparison | None:
    """Train each model (seed 0) on the windows of ``train_traj``, roll it out from the first window of each
    test trajectory to its end, and measure error, valid time, divergence, invariant drift and structure.

    Every rank trains (DDP under ``torchrun``); only the main process evaluates, and the others get ``None``.
    """
    cmp = Comparison([], {}, {}, {}, {})
    for name, build in models.items():
        if args.models and name not in args.models:
            continue
        torch.manual_seed(0)
        model = build().to(device)
        T = model.seq_len
        x, y = TrajectoryWindows(train_traj, T, dtype=torch.float32).tensors()
        hist = fit(name, model, x, y, config, out, args)
        cmp.loss[name] = hist["loss"]
        if not is_main_process():
            continue
        model.eval()
        t0 = time.perf_counter()
        pred = rollout_trajectories(model, test_traj, test_traj.shape[1] - T)
        rollout_s = time.perf_counter() - t0
        err = relative_error(pred, test_traj)
        drift = invariant_drift(pred, invariant)
        cmp.error[name], cmp.drift[name], cmp.pred[name] = err.mean(0), drift.mean(0), pred
        cmp.rows.append({
            "model": name,
            "parameters": sum(p.numel() for p in model.parameters()),
            "final_train_loss": hist["loss"][-1],
            "train_seconds": hist["seconds"],
            "rollout_seconds": rollout_s,
            "rel_error_final": float(err[:, -1].mean()),
            "rel_error_mean": float(err.mean()),
            "valid_time_median": float(valid_time(err, dt).median()),
            "invariant_drift_max": float(drift.max()),
            "diverged": f"{int(diverged(pred).sum())}/{pred.shape[0]}",
            **structure_report(model.cpu(), test_traj[:, :T], symplectic=symplectic),
        })
    return cmp if is_main_process() else None


def result_columns(t_test: float, drift_header: str, *, symplectic: bool) -> list[tuple[str, str, str]]:
    """The columns of the results table (see :func:`markdown_table`)."""
    cols = [
        ("model", "model", ""),
        ("parameters", "parameters", "d"),
        ("final_train_loss", "final train loss", ".2e"),
        ("valid_time_median", "median time to 50% error", ".1f"),
        ("rel_error_final", f"rel. error at t={t_test:g}", ".3f"),
        ("rel_error_mean", f"mean rel. error on [0, {t_test:g}]", ".3f"),
        ("invariant_drift_max", drift_header, ".2e"),
        ("max_abs_det_minus_one", "max abs(det J − 1), float64", ".1e"),
    ]
    if symplectic:
        cols.append(("max_symplecticity_error", "max ‖JᵀΩJ − Ω‖, float64", ".1e"))
    return cols + [("diverged", "diverged rollouts", ""), ("train_seconds", "train s", ".0f")]


def write_results(out: Path, experiment: str, cmp: Comparison, *, system: dict, config: dict,
                  columns: list[tuple[str, str, str]], dt: float, t_train: float, drift_label: str) -> str:
    """Write ``metrics.json``, ``table.md``, ``rollout_error.png`` and ``invariant_drift.png``; return the table."""
    from .plots import plot_curves

    write_json(out / "metrics.json", {
        "experiment": experiment,
        "system": system,
        "config": config,
        "environment": environment(torch.get_num_threads()),
        "models": cmp.rows,
        "loss_history": cmp.loss,
    })
    table = markdown_table(cmp.rows, columns)
    (out / "table.md").write_text(table)
    n = max(v.shape[0] for v in cmp.error.values()) if cmp.error else 0
    t = torch.arange(n) * dt
    plot_curves(t, cmp.error, out / "rollout_error.png", ylabel="relative error", train_end=t_train,
                title=f"{experiment.replace('_', ' ')}: rollout error (mean over test trajectories)")
    plot_curves(t, {k: v.clamp_min(1e-17) for k, v in cmp.drift.items()}, out / "invariant_drift.png",
                ylabel=drift_label, train_end=t_train, title=f"{experiment.replace('_', ' ')}: {drift_label}")
    return table


def markdown_table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """A Markdown table; ``columns`` are ``(key, header, format)``; missing values print as ``–``, non-finite ones as ``diverged``."""
    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    rule = "| " + " | ".join("---" for _ in columns) + " |"
    lines = [head, rule]
    for r in rows:
        cells = []
        for key, _, fmt in columns:
            v = r.get(key)
            if v is None:
                cells.append("–")
            elif isinstance(v, float) and not math.isfinite(v):
                cells.append("diverged")
            else:
                cells.append(format(v, fmt) if fmt else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_json(path: Path, data: dict) -> None:
    """``data`` as indented JSON."""
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


def environment(threads: int) -> dict:
    """Versions, machine, thread count and GPU of the run, for the metrics file."""
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "threads": threads,
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
    }
