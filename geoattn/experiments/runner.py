"""Command-line plumbing shared by the experiment scripts in ``examples/``."""

from __future__ import annotations

import argparse
import json
import math
import platform
from pathlib import Path

import torch

from .training import TrainConfig, is_main_process, train

__all__ = ["experiment_parser", "fit", "markdown_table", "write_json", "environment"]


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


def fit(name: str, model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor, config: TrainConfig,
        out: Path, args) -> dict:
    """Train one model with a checkpoint ``out/checkpoints/<name>.pt``; returns the history."""
    slug = "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
    return train(model, inputs, targets, config, checkpoint=out / "checkpoints" / f"{slug}.pt",
                 resume=not args.no_resume, progress=not args.no_progress and is_main_process(), desc=name)


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
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


def environment(threads: int) -> dict:
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "threads": threads,
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
    }
