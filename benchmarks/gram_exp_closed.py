"""Forward+backward of the exponential layer at d = 3: the closed-form Gram route (gram-exp-closed) against the QR
form (method="lowrank"), with torch's scaled_dot_product_attention on the same (B, T, d) input as a reference.

One thread, float32, a fixed number of tokens B*T, unit-normal x, a skew A drawn like VolumePreservingAttention's
default (entries N(0, 1/d^2), minus the transpose) that requires a gradient. Each entry is the median of a few
repetitions; ratios are to SDPA in the same run.

    python benchmarks/gram_exp_closed.py [--tokens 65536] [--dims 3] [--lengths 16 64 256] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from geoattn.kernels import explain, vp_attention  # noqa: E402

from layers import timeit  # noqa: E402  (benchmarks/ is on the path: run as python benchmarks/<name>.py)
from mha import timed_calls  # noqa: E402


def main(argv=None) -> None:
    """Print one row per (d, T) with ``d < T``: milliseconds for a dense incoming gradient and for ``out.sum()``."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--dims", type=int, nargs="+", default=[3])
    p.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{'d':>3} {'T':>4} {'grad':>5} {'auto ms':>8} {'qr ms':>8} {'sdpa ms':>8} {'auto/sdpa':>10} "
          f"{'qr/sdpa':>8}  auto route")
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
                "auto": timed_calls(lambda z: vp_attention(z, A, activation="exp"), x),
                "qr": timed_calls(lambda z: vp_attention(z, A, activation="exp", method="lowrank"), x),
                "sdpa": timed_calls(lambda z: torch.nn.functional.scaled_dot_product_attention(z, z, z), x),
            }
            for grad in ("fwd_bwd", "fwd_bwd_sum"):
                ms = {k: 1e3 * timeit(calls[grad], args.reps, x.device) for k, calls in forms.items()}
                print(f"{d:3d} {T:4d} {'dense' if grad == 'fwd_bwd' else 'sum':>5} {ms['auto']:8.2f} {ms['qr']:8.2f} "
                      f"{ms['sdpa']:8.2f} {ms['auto'] / ms['sdpa']:10.2f} {ms['qr'] / ms['sdpa']:8.2f}  {route}",
                      flush=True)


if __name__ == "__main__":
    main()
