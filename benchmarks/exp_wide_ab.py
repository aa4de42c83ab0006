"""A/B of the exponential layer's d x d stage for 17 <= d <= 64: the C stage with its token products (route
gram-exp-wide/native with the fused kernels, d <= 32), the C stage alone (token products in torch) and the batched
torch form (gram-exp/eager), with torch's SDPA as one head in the same run, timed alternately: on ``(B, T, d)``
(torch's composite form) and, last on each row, on ``(B, 1, T, d)`` (its fused flash kernel, the reference of
benchmarks/layers.py).

One thread, float32, ``--tokens`` unit-normal tokens, a default-initialised
``VolumePreservingAttention(d, activation="exp")``, forward+backward with a dense random incoming gradient and with
``out.sum()``; the median of ``--reps`` rounds. Usage::

    python benchmarks/exp_wide_ab.py --shapes 32x64 32x256 64x256
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from geoattn.kernels import _native_exp_wide
from geoattn.nn import VolumePreservingAttention


def _time(fn) -> tuple[float, float]:
    """Wall-clock and this thread's CPU seconds of ``fn()`` (the CPU time is steadier on a shared machine)."""
    t0, c0 = time.perf_counter(), time.thread_time()
    fn()
    return time.perf_counter() - t0, time.thread_time() - c0


def main() -> None:
    """Parse the arguments, time each shape and print one row per form."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--shapes", nargs="+", default=["32x64", "32x256", "64x256"])
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(1)
    status, fused_max = _native_exp_wide.exp_wide_status, _native_exp_wide.FUSED_MAX_DIM
    for shape in args.shapes:
        d, T = (int(v) for v in shape.split("x"))
        B = args.tokens // T
        torch.manual_seed(0)
        layer = VolumePreservingAttention(d, activation="exp")
        x = torch.randn(B, T, d, requires_grad=True)
        g = torch.randn(B, T, d)

        def run(kind, wide, fused=True):
            _native_exp_wide.exp_wide_status = status if wide else (lambda d: (False, "set aside"))
            _native_exp_wide.FUSED_MAX_DIM = fused_max if fused else 0
            try:
                out = layer(x)
                (out.sum() if kind == "sum" else out).backward(None if kind == "sum" else g)
            finally:
                _native_exp_wide.exp_wide_status = status
                _native_exp_wide.FUSED_MAX_DIM = fused_max
            x.grad = None

        def sdpa(kind, heads=False):
            q = x.detach().clone().requires_grad_()
            h = q.unsqueeze(-3) if heads else q  # (B, 1, T, d): torch's fused flash kernel, as benchmarks/layers.py
            out = F.scaled_dot_product_attention(h, h, h).squeeze(-3)
            (out.sum() if kind == "sum" else out).backward(None if kind == "sum" else g)

        forms = ("fused", "stage", "torch")
        times = {f"{f} {k}": [] for f in ("sdpa", "sdpa4") + forms for k in ("f+b", "sum")}
        run("f+b", True), run("f+b", True, False), run("f+b", False)
        for _ in range(args.reps):
            for kind in ("f+b", "sum"):
                times[f"sdpa {kind}"].append(_time(lambda: sdpa(kind)))
                times[f"sdpa4 {kind}"].append(_time(lambda: sdpa(kind, True)))
                times[f"fused {kind}"].append(_time(lambda: run(kind, True)))
                times[f"stage {kind}"].append(_time(lambda: run(kind, True, False)))
                times[f"torch {kind}"].append(_time(lambda: run(kind, False)))
        med = {k: statistics.median(w for w, _ in v) * 1e3 for k, v in times.items()}
        cpu = {k: statistics.median(c for _, c in v) * 1e3 for k, v in times.items()}
        for form in forms:
            f, s = form + " f+b", form + " sum"
            print(f"d={d:3d} T={T:4d} B={B:5d} {form:6s} f+b {med[f]:8.1f} ms {med[f] / med['sdpa f+b']:5.2f}x  "
                  f"sum {med[s]:8.1f} ms {med[s] / med['sdpa sum']:5.2f}x  (sdpa {med['sdpa f+b']:.1f} / "
                  f"{med['sdpa sum']:.1f} ms)  thread CPU {cpu[f] / cpu['sdpa f+b']:5.2f}x / "
                  f"{cpu[s] / cpu['sdpa sum']:5.2f}x; against (B, 1, T, d) {med[f] / med['sdpa4 f+b']:5.2f}x / "
                  f"{med[s] / med['sdpa4 sum']:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
