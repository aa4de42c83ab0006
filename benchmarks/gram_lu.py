"""Forward+backward of the Cayley layer's Gram form at d > 4: the structure-of-arrays LU route (gram-lu) against
the LAPACK route (gram-solve), with torch's scaled_dot_product_attention on the same input as a reference.

One thread, float32, a fixed number of tokens B*T, unit-normal x, a skew A of unit-normal entries / sqrt(d) that
requires a gradient. Each entry is the median of a few repetitions; ratios are to SDPA in the same run.

    python benchmarks/gram_lu.py [--tokens 16384] [--dims 8 16 32] [--lengths 16 64 256] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from geoattn.kernels._gram import vp_gram_solve  # noqa: E402
from geoattn.kernels._gram_lu import _VPGramLU  # noqa: E402

from layers import timeit  # noqa: E402  (benchmarks/ is on the path: run as python benchmarks/<name>.py)
from mha import timed_calls  # noqa: E402


def main(argv=None) -> None:
    """Print one row per (d, T) with ``d < T``: milliseconds for a dense incoming gradient and for ``out.sum()``."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--dims", type=int, nargs="+", default=[8, 16, 32])
    p.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{'d':>3} {'T':>4} {'grad':>5} {'lu ms':>8} {'solve ms':>9} {'sdpa ms':>8} {'solve/lu':>9} "
          f"{'lu/sdpa':>8} {'solve/sdpa':>10}")
    for d in args.dims:
        for T in args.lengths:
            if d >= T:
                continue
            torch.manual_seed(0)
            x = torch.randn(args.tokens // T, T, d)
            A = torch.randn(d, d) / d ** 0.5
            A = (A - A.T).requires_grad_()
            forms = {
                "lu": timed_calls(lambda z: _VPGramLU.apply(z, A), x),
                "solve": timed_calls(lambda z: vp_gram_solve(z, A), x),
                "sdpa": timed_calls(lambda z: torch.nn.functional.scaled_dot_product_attention(
                    z[:, None], z[:, None], z[:, None])[:, 0], x),
            }
            for grad in ("fwd_bwd", "fwd_bwd_sum"):
                ms = {k: 1e3 * timeit(calls[grad], args.reps, x.device) for k, calls in forms.items()}
                print(f"{d:3d} {T:4d} {'dense' if grad == 'fwd_bwd' else 'sum':>5} {ms['lu']:8.2f} {ms['solve']:9.2f} "
                      f"{ms['sdpa']:8.2f} {ms['solve'] / ms['lu']:9.2f} {ms['lu'] / ms['sdpa']:8.2f} "
                      f"{ms['solve'] / ms['sdpa']:10.2f}", flush=True)


if __name__ == "__main__":
    main()
