"""Command-line plumbing shared by the experiment scripts in ``examples/``: train every model for every seed,
roll it out, summarise over seeds, write ``metrics.json``, ``table.md``, the figures and the trained models.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import math
import platform
import time
from pathlib import Path
from typing import Callable

import torch

from ..systems import TrajectoryWindows
from .evaluation import diverged, relative_error, rollout_trajectories, structure_report, valid_time
from .io import ModelSpec, save_model
from .training import TrainConfig, init_distributed, is_main_process, train, world_size

__all__ = [
    "experiment_parser",
    "setup",
    "Experiment",
    "run",
    "summarise",
    "spread_cell",
    "spread_table",
    "write_results",
    "count_parameters",
    "markdown_table",
    "write_json",
    "environment",
]


def experiment_parser(description: str, default_out: str) -> argparse.ArgumentParser:
    """The options every experiment takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default=default_out, help="output folder: metrics.json, table.md, PNGs, models/, checkpoints/")
    p.add_argument("--budget", type=float, default=1.0,
                   help="scale the number of optimiser steps (1.0: the default run)")
    p.add_argument("--seeds", type=int, default=3, help="train every model with seeds 0, ..., K-1 (default 3)")
    p.add_argument("--quick", action="store_true", help="a tiny run (seconds) that exercises every step")
    p.add_argument("--no-resume", action="store_true", help="ignore existing checkpoints and start over")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--models", nargs="*", default=None,
                   help="train only these models (names as in the table); a later run without --models picks up "
                        "their finished checkpoints and writes the whole table")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def setup(args) -> tuple[torch.device, Path, bool]:
    """Join the process group under ``torchrun``, set the thread count, pick the device, create ``args.out``.

    Returns ``(device, out, distributed)``.
    """
    if args.seeds < 1:
        raise SystemExit(f"Expected --seeds >= 1. Got {args.seeds}.")
    if not args.budget > 0:
        raise SystemExit(f"Expected a positive --budget. Got {args.budget}.")
    distributed = init_distributed()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return device, out, distributed


def count_parameters(model: torch.nn.Module) -> tuple[int, int]:
    """``(stored, free)``: the entries of every parameter, and how many of them the map actually uses.

    A layer that stores more entries than it uses (a skew or triangular
    weight kept as a full square) says so through a ``free_parameters()``
    method that counts the parameters of its whole subtree; every other
    parameter counts in full.

    Examples
    --------
    >>> from geoattn.models import VolumePreservingTransformer
    >>> count_parameters(VolumePreservingTransformer(3, 3, depth=1, n_blocks=1, n_linear=1))
    (75, 33)
    
    """
    stored = sum(p.numel() for p in model.parameters())
    free, covered = 0, set()
    for module in model.modules():  # parents before children: a counting module covers its whole subtree
        own = getattr(module, "free_parameters", None)
        ids = {id(p) for p in module.parameters()}
        if callable(own) and not ids & covered:
            free += own()
            covered |= ids
    free += sum(p.numel() for p in model.parameters() if id(p) not in covered)
    return stored, free


def _slug(name: str) -> str:
    """``"VPT (skew)"`` -> ``"vpt_skew"``: a file-name stem."""
    return "_".join("".join(c if c.isalnum() else " " for c in name.lower()).split())


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One comparison: the models, the data, the training recipe and what to measure.

    ``rollout_metrics(pred, ref)`` adds system-specific figures per seed (for
    instance the range of :math:`|z|`); it gets float64 rollouts
    ``(n_test, n, d)`` with NaN after divergence, and their references.
    With ``steps``, each model trains for that many optimiser steps (its
    epochs follow from its own number of windows, which depends on its
    ``seq_len``) instead of ``config.epochs``.
    """

    name: str
    models: dict[str, ModelSpec]
    train_traj: torch.Tensor
    test_traj: torch.Tensor
    dt: float
    config: TrainConfig
    eval_times: tuple[float, ...]
    symplectic: bool
    rollout_metrics: Callable[[torch.Tensor, torch.Tensor], dict] = lambda pred, ref: {}
    steps: int | None = None

    def __post_init__(self) -> None:
        for t in self.eval_times:
            if abs(t / self.dt - round(t / self.dt)) > 1e-9:
                raise ValueError(f"Expected evaluation times on the grid of dt = {self.dt}. Got t = {t}.")


def _inf_if_nonfinite(x: torch.Tensor) -> torch.Tensor:
    """NaN (a diverged rollout) as +inf, so that it sorts last: the rule of every median and extreme here."""
    return torch.where(torch.isfinite(x), x, torch.full_like(x, math.inf))


def _median(x: torch.Tensor) -> float:
    """Median with non-finite entries counted as +inf (a diverged rollout has an infinite error)."""
    x = _inf_if_nonfinite(x)
    return float(x.median()) if x.numel() else math.nan


def _evaluate(exp: Experiment, model: torch.nn.Module) -> tuple[dict, torch.Tensor, torch.Tensor]:
    """Per-seed figures, the rollouts and their relative errors."""
    T = model.seq_len
    model.eval()
    t0 = time.perf_counter()
    pred = rollout_trajectories(model, exp.test_traj, exp.test_traj.shape[1] - T)
    seconds = time.perf_counter() - t0
    err = relative_error(pred, exp.test_traj)
    row = {f"rel_error_t{t:g}": _median(err[:, round(t / exp.dt)]) for t in exp.eval_times}
    row.update({
        "valid_time_median": float(valid_time(err, exp.dt).median()),
        "diverged": int(diverged(pred).sum()),
        "rollouts": int(pred.shape[0]),
        "rollout_seconds": seconds,
    })
    row.update(exp.rollout_metrics(pred, exp.test_traj))
    row.update(structure_report(model.cpu(), exp.test_traj[:, :T], symplectic=exp.symplectic))
    return row, pred, err


def run(exp: Experiment, args, device: torch.device) -> dict | None:
    """Train each model of ``exp`` for seeds ``0 .. args.seeds - 1``, evaluate, and save it under ``out/models``.

    Checkpoints (``out/checkpoints/<model>-seed<k>.pt``) make an interrupted
    run resume where it stopped. Returns ``{"runs": {model: [per-seed row]},
    "pred": {model: seed-0 rollouts}, "error": {model: (seeds, n) median error
    curves}, "states": {model: (seeds, n_test, n) norms of the rollout states},
    "loss": {model: [per-seed loss history]}}`` on the main process, ``None``
    on the others.
    """
    unknown = [m for m in args.models or () if m not in exp.models]
    if unknown:
        close = {m: difflib.get_close_matches(m, list(exp.models), n=1) for m in unknown}
        hints = ", ".join(f"{m!r}" + (f" (did you mean {c[0]!r}?)" if c else "") for m, c in close.items())
        raise SystemExit(f"Expected --models among {list(exp.models)}. Got {hints}.")
    out = Path(args.out)
    (out / "models").mkdir(parents=True, exist_ok=True)
    res: dict = {"runs": {}, "pred": {}, "error": {}, "states": {}, "loss": {}}
    for name, spec in exp.models.items():
        if args.models and name not in args.models:
            continue
        curves, states = [], []
        for seed in range(args.seeds):
            torch.manual_seed(seed)
            model = spec.build(device=device, dtype=torch.float32)
            config = dataclasses.replace(exp.config, seed=seed)
            x, y = TrajectoryWindows(exp.train_traj, model.seq_len, config.rollout_windows * model.seq_len,
                                     dtype=torch.float32).tensors()
            steps_per_epoch = math.ceil(x.shape[0] // world_size() / config.batch_size)
            if exp.steps is not None:
                config = dataclasses.replace(config, epochs=max(1, round(exp.steps / steps_per_epoch)))
            tag = f"{_slug(name)}-seed{seed}"
            hist = train(model, x, y, config, checkpoint=out / "checkpoints" / f"{tag}.pt",
                         resume=not args.no_resume, progress=not args.no_progress and is_main_process(),
                         desc=f"{name} (seed {seed})")
            if not is_main_process():
                continue
            stored, free = count_parameters(model)
            row = {"model": name, "seed": seed, "parameters_stored": stored, "parameters_free": free,
                   "final_train_loss": hist["loss"][-1], "epochs": config.epochs,
                   "optimiser_steps": config.epochs * steps_per_epoch,
                   "train_seconds": hist["seconds_total"]}
            ev, pred, err = _evaluate(exp, model)
            row.update(ev)
            save_model(out / "models" / f"{tag}.pt", model, spec,
                       metadata={"experiment": exp.name, "model": name, "seed": seed,
                                 "config": dataclasses.asdict(config), "final_train_loss": row["final_train_loss"]})
            res["runs"].setdefault(name, []).append(row)
            res["loss"].setdefault(name, []).append(hist["loss"])
            curves.append(_inf_if_nonfinite(err).median(0).values)
            states.append(pred.norm(dim=-1))
            if seed == 0:
                res["pred"][name] = pred
        if curves:
            res["error"][name] = torch.stack(curves)
            res["states"][name] = torch.stack(states)
    return res if is_main_process() else None


def summarise(runs: list[dict]) -> dict:
    """Per numeric figure of the per-seed ``runs``: ``{"median", "min", "max", "seeds"}``.

    NaN counts as :math:`+\\infty` (a diverged rollout); the median is the
    lower median (an observed value; integer figures stay integers).
    ``nonfinite_seeds`` counts the seeds whose value is not finite, which
    strict JSON writes as ``null``.
    """
    out: dict = {}
    for key in runs[0]:
        vals = [r.get(key) for r in runs]
        if key in ("model", "seed") or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            continue
        t = torch.tensor(vals, dtype=torch.float64)
        t_inf = _inf_if_nonfinite(t)
        cast = int if all(isinstance(v, int) for v in vals) else float
        out[key] = {"median": cast(t_inf.median()), "min": cast(t_inf.min()), "max": cast(t_inf.max()),
                    "nonfinite_seeds": int((~torch.isfinite(t)).sum()), "seeds": vals}
    return out


def spread_cell(s: dict | None, fmt: str) -> str:
    """``median [min, max]`` of a :func:`summarise` entry; infinite values print as ``diverged``."""
    if s is None:
        return "–"

    def f(v):
        if v is None or not math.isfinite(v):
            return "diverged"
        return format(round(v), fmt) if fmt.endswith("d") else format(v, fmt)

    if s["min"] == s["max"]:
        return f(s["median"])
    return f"{f(s['median'])} [{f(s['min'])}, {f(s['max'])}]"


def spread_table(summaries: dict[str, dict], columns: list[tuple[str, str, str]]) -> str:
    """A Markdown table with one row per model: each cell the ``median [min, max]`` over seeds (:func:`spread_cell`)."""
    rows = [{"model": name, **{key: spread_cell(s.get(key), fmt) for key, _, fmt in columns}}
            for name, s in summaries.items()]
    return markdown_table(rows, [("model", "model", "")] + [(key, head, "") for key, head, _ in columns])


def _recorded_config(exp: Experiment) -> dict:
    """The recipe as run: with ``exp.steps`` the epochs differ per model (see each run's ``epochs``), so the steps
    are recorded instead of the placeholder epochs."""
    config = dataclasses.asdict(exp.config)
    if exp.steps is not None:
        del config["epochs"]
        config["steps"] = exp.steps
    return config


def write_results(out: Path, exp: Experiment, res: dict, *, columns: list[tuple[str, str, str]], args,
                  system: dict, extra_config: dict) -> str:
    """Write ``metrics.json`` (strict JSON: per model the per-seed figures and their summary over seeds) and
    ``table.md``; return the table."""
    summaries = {name: summarise(runs) for name, runs in res["runs"].items()}
    seeds = {name: len(runs) for name, runs in res["runs"].items()}
    write_json(out / "metrics.json", {
        "experiment": exp.name,
        "system": system,
        "config": {**_recorded_config(exp), "seeds": args.seeds, "budget": args.budget,
                   "paper": bool(getattr(args, "paper", False)), "quick": bool(args.quick), **extra_config},
        "models_spec": {name: {"class": spec.cls, "kwargs": spec.kwargs} for name, spec in exp.models.items()},
        "environment": environment(torch.get_num_threads()),
        "seeds": seeds,
        "summary": summaries,
        "runs": res["runs"],
        "loss_history": res["loss"],
    })
    table = spread_table(summaries, columns)
    table += (f"\nEach cell: median over {min(seeds.values(), default=0)} seeds [min, max]; every figure per seed is "
              f"itself over {exp.test_traj.shape[0]} held-out rollouts.\n")
    (out / "table.md").write_text(table)
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


def _strict(v):
    """``v`` with every non-finite float replaced by None (strict JSON), recursively."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _strict(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_strict(x) for x in v]
    return v


def write_json(path: Path, data: dict) -> None:
    """``data`` as indented, strict JSON: NaN and infinities are written as ``null``."""
    path.write_text(json.dumps(_strict(data), indent=2, sort_keys=False, allow_nan=False) + "\n")


def environment(threads: int) -> dict:
    """Versions, machine, thread count and GPU of the run, for the metrics file."""
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "threads": threads,
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
    }
