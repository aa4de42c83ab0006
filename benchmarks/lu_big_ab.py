r"""The Cayley layer at 17 <= d <= 64: the route ``gram-lu-wide/native`` against ``gram-solve/eager`` and SDPA.

    python benchmarks/lu_big_ab.py [--tokens N] [--lengths T ...] [--dims D ...] [--reps R] [--split]

One thread, float32, unit-normal ``x`` of shape ``(N // T, T, d)``, a default-initialised
:class:`geoattn.nn.VolumePreservingAttention`, forward+backward with a dense random incoming gradient; the three
(the new route, the route it replaces, forced by putting the new one out of range, and SDPA as one head on
``(B, T, d)``) timed alternately in one process, the median of ``R`` rounds. ``--split`` also times the new route's
kernels alone (the fused C kernels, forward and backward), their ``d x d`` stages alone, and the same token products
as ``torch.bmm`` calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from geoattn.kernels import _native_lu_big  # noqa: E402
from geoattn.nn import VolumePreservingAttention  # noqa: E402


def _clock(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def layer_step(layer, x, g):
    """A closure running one forward+backward of ``layer`` at ``x`` with the incoming gradient ``g``."""
    def go():
        xr = x.detach().requires_grad_()
        layer(xr).backward(g)
    return go


def sdpa_step(x, g):
    """A closure running one forward+backward of SDPA (one head, q = k = v = x) with the incoming gradient ``g``."""
    def go():
        xr = x.detach().requires_grad_()
        h = xr.unsqueeze(1)
        F.scaled_dot_product_attention(h, h, h).squeeze(1).backward(g)
    return go


def split_steps(x, A):
    """The route's kernels and their parts alone: the fused C kernels (token products in C, per sample), the
    ``d x d`` stages alone, and the same token products as torch.bmm calls (float64 Gram, the rest float32)."""
    B, T, d = x.shape
    gy = torch.randn_like(x)
    _, G, N, _ = _native_lu_big.gram_forward(x, A)
    xd = x.double()
    Pbar = (xd.transpose(1, 2) @ gy.double()).contiguous()
    P, H, _ = _native_lu_big.stage_backward(G, Pbar, N, A)

    def bmm_fwd():
        x64 = x.double()
        torch.bmm(x64.transpose(1, 2), x64)
        torch.bmm(x, P.float())

    def bmm_bwd():
        xt = x.transpose(1, 2)
        torch.bmm(xt, gy).double()
        torch.baddbmm(torch.bmm(gy, P.transpose(1, 2).float()), x, H.float())

    return {
        "C fwd": lambda: _native_lu_big.gram_forward(x, A),
        "C bwd": lambda: _native_lu_big.gram_backward(x, gy, N, A, G=G),
        "stage fwd": lambda: _native_lu_big.stage_forward(G, A),
        "stage bwd": lambda: _native_lu_big.stage_backward(G, Pbar, N, A),
        "bmm fwd": bmm_fwd,
        "bmm bwd": bmm_bwd,
    }


def main(argv=None) -> int:
    """Time the route, the old route and SDPA alternately and print the table; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=65536)
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--dims", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--split", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    top = _native_lu_big.MAX_DIM
    print("d    T     B  new ms  old ms  sdpa ms  new/sdpa  old/sdpa  new/old")
    for d in args.dims:
        for T in args.lengths:
            B = args.tokens // T
            layer = VolumePreservingAttention(d)
            x, g = torch.randn(B, T, d), torch.randn(B, T, d)
            steps = {"new": layer_step(layer, x, g), "old": layer_step(layer, x, g), "sdpa": sdpa_step(x, g)}
            times = {k: [] for k in steps}
            for _ in range(args.reps + 1):  # the first round warms up and is dropped
                for k, fn in steps.items():
                    _native_lu_big.MAX_DIM = 0 if k == "old" else top
                    times[k].append(_clock(fn))
            _native_lu_big.MAX_DIM = top
            m = {k: 1e3 * statistics.median(v[1:]) for k, v in times.items()}
            print(f"{d:<3} {T:>4} {B:>5} {m['new']:7.1f} {m['old']:7.1f} {m['sdpa']:8.1f} {m['new'] / m['sdpa']:9.2f} "
                  f"{m['old'] / m['sdpa']:9.2f} {m['new'] / m['old']:8.2f}")
            if args.split:
                A = torch.randn(d, d, dtype=torch.float64) * 0.1
                A = (A - A.T).contiguous()
                parts = split_steps(x, A)
                pt = {k: [] for k in parts}
                for _ in range(args.reps + 1):
                    for k, fn in parts.items():
                        pt[k].append(_clock(fn))
                print("    " + ", ".join(f"{k} {1e3 * statistics.median(v[1:]):.1f} ms" for k, v in pt.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
