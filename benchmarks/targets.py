"""The performance targets of the benchmarks, and their summary from a results table.

Used by ``kernels.py`` and ``layers.py`` (printed after a run) and by the docs build (rendered
under the tables), so the targets are stated once. Every forward+backward target holds for both
incoming gradients the scripts time: a dense random one (``ratio_fwd_bwd``) and the expanded one
of ``loss = out.sum()`` (``ratio_fwd_bwd_sum``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

#: the two gradient layouts every forward+backward ratio is measured with
LAYOUTS = {"ratio_fwd_bwd": "dense", "ratio_fwd_bwd_sum": "sum"}


@dataclass(frozen=True)
class Target:
    """A bound on the forward+backward ratio of one kernel or layer over the rows ``keep`` selects."""

    kind: str
    name: str
    bound: float
    keep: Callable[[dict], bool]
    where: str


def _vp_at(T: int, B: int) -> Callable[[dict], bool]:
    return lambda r: r["B"] == B and r.get("dim") == 4 and r["T"] == T


TARGETS = [
    Target("kernels", "cayley", 1.0, lambda r: r["B"] == 4096 and r["T"] == 3, "naive, B=4096, T=3"),
    Target("kernels", "cayley", 0.8, lambda r: r["B"] == 4096 and r["T"] in (8, 12, 16, 32),
           "naive, B=4096, T in {8, 12, 16, 32}, every entry scale"),
    Target("kernels", "exp_skew", 0.5, lambda r: r["B"] == 4096 and r["T"] in (8, 12, 16, 32),
           "naive, B=4096, T in {8, 12, 16, 32}, every entry scale"),
    Target("layers", "VolumePreservingAttention", 0.25, _vp_at(16, 4096), "SDPA, B=4096, dim=4, T=16"),
    Target("layers", "VolumePreservingAttention", 0.15, _vp_at(32, 4096), "SDPA, B=4096, dim=4, T=32"),
    Target("layers", "VolumePreservingAttention", 0.05, _vp_at(512, 64), "SDPA, B=64, dim=4, T=512"),
    Target("layers", "LinearSymplecticAttention", 0.5, lambda r: r["B"] == 4096 and r.get("dim") == 4 and r["T"] <= 16,
           "SDPA, B=4096, dim=4, T <= 16"),
]


def _sweep(dims, lengths=(16, 64, 256)) -> Callable[[dict], bool]:
    """Rows of the main table at B*T = 65,536 tokens with ``dim`` in ``dims``, ``T`` in ``lengths`` and dim < T."""
    return lambda r: (r["B"] * r["T"] == 65536 and r.get("dim") in dims and r["T"] in lengths and r["dim"] < r["T"]
                      and not r.get("sweep"))


_SWEEP_TARGETS = [  # (layer, bound, dims, lengths)
    ("VolumePreservingAttention", 0.25, (3, 4, 8), (16, 64, 256)),
    ("VolumePreservingAttention", 0.5, (16,), (16, 64, 256)),
    ("VolumePreservingAttention", 1.0, (32, 64), (16, 64, 256)),
    ("VolumePreservingAttention(exp)", 0.3, (3, 4), (16, 64, 256)),
    ("VolumePreservingAttention(exp)", 0.5, (8,), (16, 64, 256)),
    ("VolumePreservingAttention(exp)", 0.75, (16,), (16, 64, 256)),
    ("VolumePreservingAttention(exp)", 1.5, (32, 64), (16, 64, 256)),
    ("SymplecticAttention", 1.0, (4, 8, 16), (16, 64, 256)),
    ("OrthonormalAttention", 3.0, (3, 4, 8, 16, 32, 64), (16, 64)),
]
TARGETS += [Target("layers", name, bound, _sweep(dims, lengths),
                   f"SDPA, B*T=65536, dim in {{{', '.join(map(str, dims))}}}, T in {{{', '.join(map(str, lengths))}}}, "
                   "dim < T")
            for name, bound, dims, lengths in _SWEEP_TARGETS]
TARGETS += [
    Target("layers", "MultiHeadAttention", 1.2,
           lambda r: r.get("reference") == "torch.nn.MultiheadAttention" and r["B"] * r["T"] == 65536
           and r["T"] in (16, 64, 256) and r.get("dim") in (8, 16, 32, 64),
           "torch.nn.MultiheadAttention, B*T=65536, T in {16, 64, 256}, dim in {8, 16, 32, 64}, every mask"),
]

#: cost per token at the longest sequence of the scaling sweep, over the cost per token at T=512
SCALING_BOUND = 1.6


def _name(kind: str, row: dict) -> str:
    return row.get("kernel_name") if kind == "kernels" else row.get("layer")


def _at_scale(row: dict) -> str:
    """`` x3`` for a row measured at entry scale 3, `` dim=8 causal`` for a row of the multi-head table (nothing
    for other rows)."""
    if "mask" in row:
        return f" dim={row['dim']} {row['mask']}"
    return f" x{row['scale']:g}" if "scale" in row else ""


def summarise(kind: str, rows: list[dict]) -> list[str]:
    """One line per target of ``kind`` and layout: the measured ratios and whether every one meets the bound."""
    lines = []
    for t in TARGETS:
        if t.kind != kind:
            continue
        sel = [r for r in rows if _name(kind, r) == t.name and t.keep(r)]
        for key, layout in LAYOUTS.items():
            have = [r for r in sel if key in r]
            if not have:
                continue
            cells = ", ".join(
                f"{r.get('dtype', 'float32')} T={r['T']}{_at_scale(r)}: {r[key]:.2f}"
                for r in sorted(have, key=lambda r: (r.get("dtype", ""), r["T"], r.get("scale", 0), r.get("dim", 0)))
            )
            met = all(r[key] <= t.bound for r in have)
            lines.append(f"{t.name} forward+backward ({layout} gradient) <= {t.bound}x {t.where}: {cells} "
                         f"[{'met' if met else 'missed'}]")
    if kind == "layers":
        lines += summarise_scaling(rows)
    return lines


def summarise_scaling(rows: list[dict], layer: str = "VolumePreservingAttention") -> list[str]:
    """Cost per token of ``layer`` at the longest swept T over that at T=512 (equal tokens), per layout."""
    sweep = {r["T"]: r for r in rows if r.get("sweep") and r.get("layer") == layer}
    if 512 not in sweep or max(sweep) <= 512:
        return []
    top = max(sweep)
    lines = []
    for key in ("fwd_bwd", "fwd_bwd_sum"):
        per = {T: r[key] / (r["B"] * T) for T, r in sweep.items()}
        ratio = per[top] / per[512]
        lines.append(f"{layer} cost per token at T={top} over T=512 ({LAYOUTS['ratio_' + key]} gradient, "
                     f"equal tokens) <= {SCALING_BOUND}: {ratio:.2f} [{'met' if ratio <= SCALING_BOUND else 'missed'}]")
    return lines
