"""SymplecticAttention forward+backward against SDPA at a fixed number of tokens B*T, one thread, float32.

    python benchmarks/symattn_tokens.py [--tokens 65536] [--dims 4 8 16] [--lengths 16 64 256]
                                        [--activations NAME ...] [--reps 3]

Each row: the layer (default initialisation, symmetric and general weighting) with a dense random incoming
gradient | with ``out.sum()`` (``benchmarks/mha.py``'s timed calls, the median of ``--reps``), and its ratios
against scaled_dot_product_attention as one head on ``(B, 1, T, dim)`` and on ``(B, 1, T, dim/2)`` (the positions
alone) measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from geoattn.nn import SymplecticAttention  # noqa: E402
from layers import sdpa, timeit  # noqa: E402
from mha import timed_calls  # noqa: E402

ACTIVATIONS = ["matrix_softmax", "vector_softmax", "matrix_one_softmax", "vector_one_softmax"]


def main(argv=None) -> None:
    """Print the SDPA references and one row per layer for each (dim, T)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--dims", type=int, nargs="+", default=[4, 8, 16])
    p.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--activations", nargs="+", choices=ACTIVATIONS, default=ACTIVATIONS)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    grads = ("fwd_bwd", "fwd_bwd_sum")
    print(f"{'dim':>4}{'T':>5} {'activation':<20}{'sym':>6}{'ms dense|sum':>16}{'x sdpa(d)':>14}{'x sdpa(d/2)':>14}")
    for dim in args.dims:
        for T in args.lengths:
            torch.manual_seed(0)
            x = torch.randn(max(1, args.tokens // T), T, dim)
            ref = {}
            for w in (dim, dim // 2):
                calls = timed_calls(sdpa, x[..., :w].contiguous())
                ref[w] = [timeit(calls[g], args.reps, x.device) for g in grads]
            print(f"{dim:>4}{T:>5} sdpa: d {1e3 * ref[dim][0]:.2f}|{1e3 * ref[dim][1]:.2f} ms, "
                  f"d/2 {1e3 * ref[dim // 2][0]:.2f}|{1e3 * ref[dim // 2][1]:.2f} ms", flush=True)
            for act in args.activations:
                for symmetric in (True, False):
                    calls = timed_calls(SymplecticAttention(dim, activation=act, symmetric=symmetric), x)
                    t = [timeit(calls[g], args.reps, x.device) for g in grads]
                    full = "|".join(f"{a / b:.2f}" for a, b in zip(t, ref[dim]))
                    half = "|".join(f"{a / b:.2f}" for a, b in zip(t, ref[dim // 2]))
                    print(f"{dim:>4}{T:>5} {act:<20}{str(symmetric):>6}{1e3 * t[0]:>9.2f}|{1e3 * t[1]:<6.2f}"
                          f"{full:>14}{half:>14}", flush=True)


if __name__ == "__main__":
    main()
