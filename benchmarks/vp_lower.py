"""The arbitrary weighting of VolumePreservingAttention: forward+backward time per token against T.

    python benchmarks/vp_lower.py [--quick] [--json PATH] [--threads N] [--reps N]
                                  [--tokens N] [--lengths T ...] [--dims D ...] [--old-length T]

At ``B * T = tokens`` (default 32,768) and each ``dim``: the layer ``VolumePreservingAttention(dim,
skew_sym=False)`` (its ``vp_attention_lower`` route: the nested block solve) at each ``T``, the previous ``T x T``
path (``method="full"``, the ``cayley_apply`` solve) at ``--old-length`` only, and SDPA as one head
(``benchmarks/layers.py``'s reference) at each ``T``. Each layer and SDPA are timed alternately, repetition by
repetition, in one run (float32, unit-normal inputs, default-initialised layers, a dense random incoming gradient;
medians). Reported: forward+backward time per token, its ratio to the shortest length's and to SDPA's, the old
path's ratio, and the largest error of the float32 layer against the float64 ``T x T`` solve of one sample at the
longest length.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import geoattn.kernels as K  # noqa: E402
from geoattn.kernels._semisep import vp_arbitrary_full  # noqa: E402
from geoattn.nn import VolumePreservingAttention  # noqa: E402
from layers import common_parser, sdpa, write_results  # noqa: E402
from mha import timed_calls  # noqa: E402


def alternate(fns: dict, reps: int) -> dict:
    """Median seconds of each callable, the callables run in turn within every repetition (after one warm-up)."""
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def accuracy(layer, T: int, dim: int) -> float:
    """Largest error of the float32 layer against the float64 ``T x T`` solve, one unit-normal sample."""
    x = torch.randn(1, T, dim)
    with torch.no_grad():
        y = layer(x)
        ref = vp_arbitrary_full(x.double(), layer.weight.double())
    return (y.double() - ref).abs().max().item()


def rows_for(dim: int, args) -> list[dict]:
    torch.manual_seed(dim)
    layer = VolumePreservingAttention(dim, skew_sym=False)
    rows = []
    for T in sorted(set(args.lengths) | {args.old_length}):
        B = max(1, args.tokens // T)
        x = torch.randn(B, T, dim)
        fns = {"semisep": timed_calls(layer, x)["fwd_bwd"], "sdpa": timed_calls(sdpa, x)["fwd_bwd"]}
        if T == args.old_length:
            fns["full"] = timed_calls(lambda u: K.vp_attention_lower(u, layer.weight, method="full"), x)["fwd_bwd"]
        t = alternate(fns, args.reps)
        route = layer.explain(x).route.name
        for k, v in t.items():
            if k == "semisep" and T not in args.lengths:
                continue
            rows.append({"form": k, "route": route if k == "semisep" else k, "dim": dim, "T": T, "B": B,
                         "fwd_bwd": v, "per_token_us": v / (B * T) * 1e6, "ratio_sdpa": v / t["sdpa"]})
    base = {r["dim"]: r["per_token_us"] for r in rows if r["form"] == "semisep" and r["T"] == min(args.lengths)}
    old = [r for r in rows if r["form"] == "full"]
    for r in rows:
        if r["form"] == "semisep":
            r["ratio_shortest"] = r["per_token_us"] / base[r["dim"]]
            if old:
                r["ratio_old"] = r["per_token_us"] / old[0]["per_token_us"]
    T = max(args.lengths)
    rows.append({"form": "accuracy", "dim": dim, "T": T, "max_err_vs_float64": accuracy(layer, T, dim)})
    return rows


def main(argv=None) -> int:
    parser = common_parser(__doc__, "tiny sizes, one repetition (a smoke run)")
    parser.add_argument("--tokens", type=int, default=32768)
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 4096])
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--old-length", type=int, default=512)
    args = parser.parse_args(argv)
    if args.quick:
        args.tokens, args.lengths, args.dims, args.reps, args.old_length = 512, [128, 256], [4], 1, 128
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), float32, B * T = {args.tokens}; "
          "forward+backward (dense random incoming gradient), medians of alternated repetitions")
    print(f"{'form':<9}{'route':<15}{'dim':>4}{'T':>6}{'B':>6}{'f+b ms':>10}{'us/token':>10}{'x T0':>7}"
          f"{'x old':>7}{'x sdpa':>8}")
    rows = []
    for dim in args.dims:
        for r in rows_for(dim, args):
            rows.append(r)
            if r["form"] == "accuracy":
                print(f"accuracy dim {dim}, T = {r['T']}: max |y32 - y64| = {r['max_err_vs_float64']:.2e}")
                continue
            print(f"{r['form']:<9}{r['route']:<15}{dim:>4}{r['T']:>6}{r['B']:>6}{r['fwd_bwd'] * 1e3:>10.2f}"
                  f"{r['per_token_us']:>10.3f}{r.get('ratio_shortest', float('nan')):>7.2f}"
                  f"{r.get('ratio_old', float('nan')):>7.3f}{r['ratio_sdpa']:>8.2f}", flush=True)
    if args.json:
        write_results(args.json, torch.device("cpu"), rows, tokens=args.tokens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
