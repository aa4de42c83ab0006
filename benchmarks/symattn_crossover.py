"""The crossover of SymplecticAttention's native route against its dense (and sdpa) route, one thread.

    python benchmarks/symattn_crossover.py [--quick] [--json PATH] [--tokens 65536] [--dims 4 8 16]
                                           [--lengths 32 48 64 96 128] [--reps 5]
                                           [--dtype float32|float64]

For each ``(dim, T)`` (float32 unless ``--dtype``): unit-normal ``x`` of shape ``(B, T, dim)``,
``B = tokens // T``, a default-initialised layer's weighting, and the shear of
:class:`geoattn.nn.SymplecticAttention` computed by each route's function directly (``shear_dense``,
``shear_native``, ``shear_sdpa``: every ``T`` measured on every route, whatever the routing constants say),
forward+backward with a dense random incoming gradient and with ``out.sum()``, the routes alternated within each
repeat, thread CPU time (the median of ``--reps``: robust to a shared machine's other work). Each row also gives
the route the layer takes now and the largest difference of the native output from the dense one, relative to the
dense output's largest entry. The last lines give, per ``dim``, the shortest measured ``T`` from which the native
route is faster than the dense one at every measured ``T`` the dense route serves (``DENSE_MAX_T``): the figures
behind :func:`~geoattn.kernels._symattn_native.native_min_t` (results: benchmarks/results/symattn-crossover-cpu.txt).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from geoattn.kernels import explain  # noqa: E402
from geoattn.kernels._symattn_dense import DENSE_MAX_T, shear_dense  # noqa: E402
from geoattn.kernels._symattn_native import native_min_t, shear_native, symattn_native_status  # noqa: E402
from geoattn.kernels._symattn_sdpa import shear_sdpa  # noqa: E402
from geoattn.nn import SymplecticAttention  # noqa: E402

FORMS = {"dense": shear_dense, "native": shear_native, "sdpa": shear_sdpa}
GRADS = ("fwd_bwd", "fwd_bwd_sum")


def _calls(form, layer: SymplecticAttention, x: torch.Tensor) -> dict:
    """The two timed calls of one route: forward+backward with a dense random gradient and with ``out.sum()``."""
    leaf = x.clone().requires_grad_()
    grad = torch.randn_like(x)

    def run():
        return FORMS[form](leaf, layer.weighting(), layer.activation, True, 1.0)

    def fwd_bwd():
        leaf.grad = layer.weight.grad = None
        run().backward(grad)

    def fwd_bwd_sum():
        leaf.grad = layer.weight.grad = None
        run().sum().backward()

    return {"fwd_bwd": fwd_bwd, "fwd_bwd_sum": fwd_bwd_sum}


def measure(dim: int, T: int, tokens: int, reps: int, dtype: torch.dtype = torch.float32) -> dict:
    """One row: each route's median thread CPU time per timed call (seconds), routes alternated per repeat."""
    torch.manual_seed(0)
    x = torch.randn(max(1, tokens // T), T, dim, dtype=dtype)
    layer = SymplecticAttention(dim, dtype=dtype)
    forms = [f for f in FORMS if f != "native" or symattn_native_status(dim // 2, dtype)[0]]
    calls = {f: _calls(f, layer, x) for f in forms}
    times = {(f, g): [] for f in forms for g in GRADS}
    for f in forms:  # one untimed call each: the kernels built, the allocator warm
        for g in GRADS:
            calls[f][g]()
    for _ in range(reps):
        for g in GRADS:
            for f in forms:
                t0 = time.thread_time()
                calls[f][g]()
                times[f, g].append(time.thread_time() - t0)
    row = {"dim": dim, "T": T, "B": x.shape[0], "route": explain("symattn_update", x[..., :dim // 2],
                                                                 layer.weighting().detach()).route.name}
    for (f, g), ts in times.items():
        row[f"{f}_{g}"] = statistics.median(ts)
    if "native" in forms:
        with torch.no_grad():
            dense = shear_dense(x, layer.weighting(), layer.activation, True, 1.0)
            native = shear_native(x, layer.weighting(), layer.activation, True, 1.0)
        row["native_rel_diff"] = float((native - dense).abs().max() / dense.abs().max())
        for g in GRADS:
            row[f"ratio_{g}"] = row[f"native_{g}"] / row[f"dense_{g}"]
    return row


def _cell(row: dict, form: str) -> str:
    """``f+b|sum`` milliseconds of one route in one row, ``-`` where it was not measured."""
    if f"{form}_{GRADS[0]}" not in row:
        return "-"
    return "|".join(f"{1e3 * row[f'{form}_{g}']:.2f}" for g in GRADS)


def thresholds(rows: list[dict]) -> dict:
    """Per ``dim``: the shortest measured ``T <= DENSE_MAX_T`` from which the native route was faster than the dense
    one (both gradients) at every longer measured ``T <= DENSE_MAX_T``; None where it never was."""
    out = {}
    for dim in sorted({r["dim"] for r in rows}):
        ts = sorted((r["T"], max(r.get(f"ratio_{g}", float("inf")) for g in GRADS)) for r in rows
                    if r["dim"] == dim and r["T"] <= DENSE_MAX_T)
        best = None
        for T, ratio in reversed(ts):
            if ratio >= 1.0:
                break
            best = T
        out[dim] = best
    return out


def main(argv=None) -> None:
    """Print one row per ``(dim, T)`` and the crossover per ``dim``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (the tests' end-to-end run)")
    p.add_argument("--json", help="write the rows and crossovers to PATH")
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--dims", type=int, nargs="+", default=[4, 8, 16])
    p.add_argument("--lengths", type=int, nargs="+", default=[32, 48, 64, 96, 128])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    args = p.parse_args(argv)
    if args.quick:
        args.tokens, args.dims, args.lengths, args.reps = 512, [4], [32, 96], 1
    for dim in args.dims:
        if dim % 2:
            p.error(f"Expected even dims (dim = 2n). Got {dim}.")
    torch.set_num_threads(1)
    mins = ", ".join(f"{dim}: {native_min_t(dim // 2)}" for dim in args.dims)
    print(f"torch {torch.__version__}, 1 thread, {args.dtype}, B * T = {args.tokens}, thread CPU time (median of "
          f"{args.reps}), routes alternated; the native route's shortest T per dim {{{mins}}}, DENSE_MAX_T = "
          f"{DENSE_MAX_T}")
    print(f"{'dim':>4}{'T':>5}{'B':>6}  {'layer route':<12}" + "".join(f"{f + ' ms f+b|sum':>22}" for f in FORMS)
          + f"{'native/dense':>16}{'rel diff':>10}")
    rows = []
    for dim in args.dims:
        for T in args.lengths:
            r = measure(dim, T, args.tokens, args.reps, getattr(torch, args.dtype))
            rows.append(r)
            cells = "".join(f"{_cell(r, f):>22}" for f in FORMS)
            ratio = (f"{r['ratio_fwd_bwd']:.2f}|{r['ratio_fwd_bwd_sum']:.2f}" if "ratio_fwd_bwd" in r else "-")
            diff = f"{r['native_rel_diff']:.1e}" if "native_rel_diff" in r else "-"
            print(f"{dim:>4}{T:>5}{r['B']:>6}  {r['route']:<12}{cells}{ratio:>16}{diff:>10}", flush=True)
    cross = thresholds(rows)
    for dim, T in cross.items():
        print(f"dim {dim}: native faster than dense (both gradients) at every measured T from {T} to DENSE_MAX_T = "
              f"{DENSE_MAX_T}" if T is not None else
              f"dim {dim}: native not faster than dense at the longest measured T <= DENSE_MAX_T = {DENSE_MAX_T}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"dtype": args.dtype, "rows": rows, "crossover": {str(k): v for k, v in cross.items()}}, fh,
                      indent=1)


if __name__ == "__main__":
    main()
