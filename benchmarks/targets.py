"""The performance targets of the benchmarks, and their summary from a results table.

Used by ``kernels.py`` and ``layers.py`` (printed after a run) and by the docs build (rendered
under the tables), so the targets are stated once.
"""

from __future__ import annotations

#: (benchmark kind, name, bound on the forward+backward ratio, row filter, description)
TARGETS = [
    ("kernels", "cayley", 0.7, lambda r: r["B"] == 4096 and r["T"] <= 16, "naive, B=4096, T <= 16"),
    ("kernels", "exp_skew", 0.5, lambda r: r["B"] == 4096 and r["T"] in (8, 16), "naive, B=4096, T in {8, 16}"),
    ("layers", "VolumePreservingAttention", 1.5, lambda r: r["B"] == 4096 and r["dim"] == 4 and r["T"] <= 16,
     "SDPA, B=4096, dim=4, T <= 16"),
    ("layers", "OrthonormalAttention", 4.0, lambda r: r["B"] == 4096 and r["dim"] == 4 and r["T"] <= 16,
     "SDPA, B=4096, dim=4, T <= 16"),
    ("layers", "LinearSymplecticAttention", 0.5, lambda r: r["B"] == 4096 and r["dim"] == 4 and r["T"] <= 16,
     "SDPA, B=4096, dim=4, T <= 16"),
]


def _name(kind: str, row: dict) -> str:
    return row.get("kernel_name") if kind == "kernels" else row.get("layer")


def summarise(kind: str, rows: list[dict]) -> list[str]:
    """One line per target of ``kind``: the measured ratios and whether every one meets the bound."""
    lines = []
    for k, name, bound, keep, where in TARGETS:
        if k != kind:
            continue
        sel = [r for r in rows if _name(kind, r) == name and keep(r)]
        if not sel:
            continue
        cells = ", ".join(
            f"{r.get('dtype', 'float32')} T={r['T']}: {r['ratio_fwd_bwd']:.2f}" for r in sorted(sel, key=lambda r: (r.get("dtype", ""), r["T"]))
        )
        met = all(r["ratio_fwd_bwd"] <= bound for r in sel)
        lines.append(f"{name} forward+backward <= {bound}x {where}: {cells} [{'met' if met else 'missed'}]")
    return lines
