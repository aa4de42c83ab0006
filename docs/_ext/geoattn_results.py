"""Tables and plots of the benchmark results, generated at build time from their JSON files.

On ``builder-inited`` every ``benchmarks/results/<name>-<device>.json`` written by the benchmark
scripts becomes ``_generated/bench-<name>-<device>.md`` (a Markdown table) and
``_generated/bench-<name>-<device>.png`` (ratios against the reference, forward + backward, at the
largest batch; the Cayley forms get a table only), which ``benchmarks.md`` includes. Nothing is typed by hand, so the page shows
exactly what the last benchmark run measured. ``_generated/preserves.md`` is the table of what each
public layer and model preserves, read from their ``preserves`` / ``does_not_preserve``
declarations (``api.md`` includes it).
"""

from __future__ import annotations

import json
from pathlib import Path

import sys

from geoattn.experiments.plots import pyplot, save_axes
from geoattn.experiments.runner import markdown_table

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))
from targets import summarise  # noqa: E402


def _layers(data: dict) -> tuple[str, list]:
    rows, sweep, multihead = [], [], []
    for r in data["rows"]:
        r = dict(r)
        for k in ("fwd", "fwd_bwd", "fwd_bwd_sum"):
            r[k + "_ms"] = 1e3 * r[k]
        r["mem_kib"] = r["memory"] / 1024
        r["name"] = "SDPA (reference)" if r["layer"] == "sdpa" else r["layer"]
        if "mask" in r:  # the multi-head table (benchmarks/mha.py): against torch.nn.MultiheadAttention
            r["name"] = f"{r['layer']} ({r['mask']})"
        (sweep if r.get("sweep") else multihead if "mask" in r else rows).append(r)
    cols = [("name", "layer", ""), ("B", "B", "d"), ("dim", "dim", "d"), ("T", "T", "d"),
            ("fwd_ms", "fwd ms", ".2f"), ("ratio_fwd", "fwd ×", ".2f"),
            ("fwd_bwd_ms", "fwd+bwd ms (dense)", ".2f"), ("ratio_fwd_bwd", "×", ".2f"),
            ("fwd_bwd_sum_ms", "fwd+bwd ms (sum)", ".2f"), ("ratio_fwd_bwd_sum", "×", ".2f"),
            ("mem_kib", "memory KiB", ".0f"), ("ratio_memory", "memory ×", ".2f")]
    table = markdown_table(rows, cols)
    B = max(r["B"] for r in rows)
    dim = min(r["dim"] for r in rows)
    series = {}
    for r in rows:
        if r["layer"] != "sdpa" and r["B"] == B and r["dim"] == dim:
            series.setdefault(r["layer"], []).append((r["T"], r["ratio_fwd_bwd"]))
    plots = [("", f"forward+backward time / SDPA (B={B}, dim={dim}, dense gradient)", series, "ratio")]
    if sweep:
        table += (f"\n\nLength sweep at {data.get('tokens', '?')} tokens (`B * T` fixed), dim 4:\n\n"
                  + markdown_table(sweep, cols))
        curves = {}
        for r in sweep:
            curves.setdefault(r["name"], []).append((r["T"], r["fwd_bwd_ms"]))
        plots.append(("-sweep", f"forward+backward time at {data.get('tokens', '?')} tokens (dim 4, dense gradient)",
                      curves, "ms"))
    if multihead:
        table += (f"\n\nMultiHeadAttention against torch.nn.MultiheadAttention at {multihead[0]['tokens']} tokens, "
                  f"{multihead[0]['heads']} heads (ratios: ours / torch's, median of alternating repeats):\n\n"
                  + markdown_table(multihead, cols))
    return table, plots


def _kernels(data: dict) -> tuple[str, list]:
    rows = []
    for r in data["rows"]:
        r = dict(r)
        for k in ("kernel_fwd", "naive_fwd", "kernel_fwd_bwd", "naive_fwd_bwd", "kernel_fwd_bwd_sum", "naive_fwd_bwd_sum"):
            r[k + "_ms"] = 1e3 * r[k]
        rows.append(r)
    table = markdown_table(rows, [("kernel_name", "kernel", ""), ("dtype", "dtype", ""), ("B", "B", "d"), ("T", "T", "d"),
                          ("kernel_fwd_ms", "fwd ms", ".2f"), ("naive_fwd_ms", "naive fwd ms", ".2f"),
                          ("ratio_fwd", "fwd ×", ".2f"), ("kernel_fwd_bwd_ms", "fwd+bwd ms (dense)", ".2f"),
                          ("naive_fwd_bwd_ms", "naive", ".2f"), ("ratio_fwd_bwd", "×", ".2f"),
                          ("kernel_fwd_bwd_sum_ms", "fwd+bwd ms (sum)", ".2f"),
                          ("naive_fwd_bwd_sum_ms", "naive", ".2f"), ("ratio_fwd_bwd_sum", "×", ".2f")])
    B = max(r["B"] for r in rows)
    series = {}
    for r in rows:
        if r["B"] == B:
            series.setdefault(f"{r['kernel_name']} {r['dtype']}", []).append((r["T"], r["ratio_fwd_bwd"]))
    return table, [("", f"forward+backward time / naive autograd (B={B}, dense gradient)", series, "ratio")]


def _cayley_forms(data: dict) -> tuple[str, list]:
    rows = []
    for r in data["rows"]:
        r = dict(r)
        r["form_ms"], r["solve_ms"] = 1e3 * r["form_fwd"], 1e3 * r["solve_fwd"]
        rows.append(r)
    table = markdown_table(rows, [("form", "form", ""), ("dtype", "dtype", ""), ("B", "B", "d"), ("T", "T", "d"),
                          ("form_ms", "fwd ms", ".2f"), ("solve_ms", "solve fwd ms", ".2f"), ("ratio_fwd", "fwd ×", ".2f"),
                          ("err_scale_1", "error, scale 1", ".2f"), ("err_scale_100", "error, scale 100", ".2f")])
    return table, []


def _plot(title: str, series: dict, path: Path, ylabel: str = "ratio") -> None:
    fig, ax = pyplot().subplots(figsize=(6.4, 3.4), dpi=110)
    for name, pts in series.items():
        pts = sorted(pts)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    if ylabel == "ratio":
        ax.axhline(1.0, color="0.5", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    save_axes(fig, ax, path, xlabel="T", ylabel=ylabel, title=title, title_size=10, log=True)


def _preserves_table() -> str:
    """What each public layer and model preserves, read from its ``preserves`` / ``does_not_preserve``."""
    import torch

    import geoattn.models as M
    import geoattn.nn as N
    from geoattn.models._cases import preserves_cases

    variants = [(label, build()) for label, build, _ in preserves_cases()]

    public = {name for mod in (N, M) for name in mod.__all__
              if isinstance(getattr(mod, name), type) and issubclass(getattr(mod, name), torch.nn.Module)}
    covered = {label.split("(")[0] for label, _ in variants} | {"Skew", "Integrator"}  # a parametrization; the base
    if public - covered:
        raise RuntimeError(f"Expected the preserves table to cover every public layer and model. Missing "
                           f"{sorted(public - covered)}.")

    def cell(d: dict) -> str:
        return "; ".join(f"{prop} ({', '.join(f'`{i}`' for i in ids)})" for prop, ids in d.items()) or "–"

    rows = [{"m": f"`{label}`", "p": cell(m.preserves), "n": cell(m.does_not_preserve)} for label, m in variants]
    return markdown_table(rows, [("m", "layer or model", ""), ("p", "preserves (ledger ids)", ""),
                                 ("n", "refuted (ledger ids)", "")])


def generate(app) -> None:
    out = Path(app.srcdir) / "_generated"
    out.mkdir(exist_ok=True)
    (out / "preserves.md").write_text(_preserves_table())
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        kind = path.stem.split("-")[0]
        render = {"layers": _layers, "symattn": _layers, "kernels": _kernels, "cayley": _cayley_forms}.get(kind)
        if render is None:
            continue
        table, plots = render(data)
        head = (f"Measured with torch {data.get('torch')}, {data.get('threads')} thread(s), "
                f"device {data.get('device', 'cpu')}; from `benchmarks/results/{path.name}`.\n\n")
        targets = "".join(f"- {line}\n" for line in summarise(kind, data["rows"]))
        if targets:
            targets = "\nTargets:\n\n" + targets
        (out / f"bench-{path.stem}.md").write_text(head + table + targets)
        for suffix, title, series, ylabel in plots:
            _plot(title, series, out / f"bench-{path.stem}{suffix}.png", ylabel)


def setup(app):
    app.connect("builder-inited", generate)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
