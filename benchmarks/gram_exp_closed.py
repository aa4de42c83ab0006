"""Forward+backward of the exponential layer at d = 3 and 4: the closed-form Gram form (vp_gram_exp_closed, called
directly whatever the route), the QR form (method="lowrank") and the automatic route, with torch's
scaled_dot_product_attention on the same (B, T, d) input as a reference.

One thread, float32, a fixed number of tokens B*T, unit-normal x, a skew A drawn like VolumePreservingAttention's
default (entries N(0, 1/d^2), minus the transpose) that requires a gradient. The forms are timed alternately, one
call each per round, and each entry is the median over the rounds; ratios are to SDPA in the same run.

    python benchmarks/gram_exp_closed.py [--tokens 65536] [--dims 3 4] [--lengths 16 64 256] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from geoattn.kernels import explain, vp_attention  # noqa: E402
from geoattn.kernels._gram_exp_closed import vp_gram_exp_closed  # noqa: E402

from mha import timed_calls  # noqa: E402  (benchmarks/ is on the path: run as python benchmarks/<name>.py)


def alternating(calls: dict, reps: int) -> dict:
    """Median seconds of each call, timed in rounds of one call each (shared-machine noise hits all alike)."""
    for fn in calls.values():
        fn()
    times = {k: [] for k in calls}
    for _ in range(reps):
        for k, fn in calls.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv=None) -> None:
    """Print one row per (d, T) with ``d < T``: milliseconds for a dense incoming gradient and for ``out.sum()``."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--dims", type=int, nargs="+", default=[3, 4])
    p.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{'d':>3} {'T':>4} {'grad':>5} {'closed ms':>9} {'qr ms':>8} {'auto ms':>8} {'sdpa ms':>8} "
          f"{'closed/sdpa':>11} {'qr/sdpa':>8} {'auto/sdpa':>9} {'closed/qr':>9}  auto route")
    for d in args.dims:
        for T in args.lengths:
            if d >= T:
                continue
            torch.manual_seed(0)
            x = torch.randn(args.tokens // T, T, d)
            w = torch.randn(d, d) / d
            A = (w - w.T).requires_grad_()
            route = explain("vp_attention", x, A.detach(), activation="exp").route.name
            forms = {
                "closed": timed_calls(lambda z: vp_gram_exp_closed(z, A), x),
                "auto": timed_calls(lambda z: vp_attention(z, A, activation="exp"), x),
                "qr": timed_calls(lambda z: vp_attention(z, A, activation="exp", method="lowrank"), x),
                "sdpa": timed_calls(lambda z: torch.nn.functional.scaled_dot_product_attention(z, z, z), x),
            }
            for grad in ("fwd_bwd", "fwd_bwd_sum"):
                ms = {k: 1e3 * v for k, v in alternating({k: c[grad] for k, c in forms.items()}, args.reps).items()}
                print(f"{d:3d} {T:4d} {'dense' if grad == 'fwd_bwd' else 'sum':>5} {ms['closed']:9.2f} {ms['qr']:8.2f} "
                      f"{ms['auto']:8.2f} {ms['sdpa']:8.2f} {ms['closed'] / ms['sdpa']:11.2f} "
                      f"{ms['qr'] / ms['sdpa']:8.2f} {ms['auto'] / ms['sdpa']:9.2f} {ms['closed'] / ms['qr']:9.2f}  "
                      f"{route}", flush=True)


if __name__ == "__main__":
    main()
