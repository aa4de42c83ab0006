"""Layer benchmark: the structure-preserving layers against scaled_dot_product_attention at the same shape.

    python benchmarks/layers.py [--quick] [--json PATH] [--threads N] [--device cpu|cuda]

For input ``x`` of shape ``(B, T, dim)`` the reference is
``torch.nn.functional.scaled_dot_product_attention(x, x, x)`` (no projections),
measured in the same run. Reported: forward and forward+backward times
(median of repeats), their ratios to the reference (below 1: faster than
SDPA), and memory: on CPU the bytes of tensors saved for backward plus the
output (activation memory, counted with ``saved_tensors_hooks``); on CUDA the
peak allocated memory of forward+backward.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from geoattn.nn import LinearSymplecticAttention, OrthonormalAttention, VolumePreservingAttention  # noqa: E402
from targets import summarise  # noqa: E402


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timeit(fn, reps, device):
    fn()
    sync(device)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def activation_bytes(fn, x, device):
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn(x).sum().backward()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(x)
    return total + out.numel() * out.element_size()


def measure(fn, x, reps, device):
    leaf = x.clone().requires_grad_()

    def fwd():
        with torch.no_grad():
            fn(x)

    def fwd_bwd():
        leaf.grad = None
        fn(leaf).sum().backward()

    return {"fwd": timeit(fwd, reps, device), "fwd_bwd": timeit(fwd_bwd, reps, device),
            "memory": activation_bytes(fn, leaf, device)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="B = 256, dim = 4, T in {3, 8}, one repetition")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", help="write the results to PATH")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    batches, dims, lengths = ([256], [4], [3, 8]) if args.quick else ([256, 4096], [4, 32], [3, 8, 16, 32])
    reps = 1 if args.quick else args.reps
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device {device}, "
          f"{platform.processor() or platform.machine()}; float32; ratios = layer / SDPA in the same run")
    print(f"{'layer':<27}{'B':>5}{'dim':>4}{'T':>4}{'fwd ms':>9}{'fwd x':>7}{'f+b ms':>9}{'f+b x':>7}"
          f"{'mem KiB':>10}{'mem x':>7}")
    rows = []
    for B in batches:
        for dim in dims:
            for T in lengths:
                torch.manual_seed(0)
                x = torch.randn(B, T, dim, device=device)
                ref = measure(lambda y: F.scaled_dot_product_attention(y, y, y), x, reps, device)
                layers = [("VolumePreservingAttention", VolumePreservingAttention(dim, device=device)),
                          ("OrthonormalAttention", OrthonormalAttention(dim, device=device))]
                if dim % 2 == 0:
                    layers.append(("LinearSymplecticAttention", LinearSymplecticAttention(T, device=device)))
                rows.append({"layer": "sdpa", "B": B, "dim": dim, "T": T, **ref})
                print(f"{'sdpa (reference)':<27}{B:>5}{dim:>4}{T:>4}{ref['fwd'] * 1e3:>9.2f}{'':>7}"
                      f"{ref['fwd_bwd'] * 1e3:>9.2f}{'':>7}{ref['memory'] / 1024:>10.0f}{'':>7}")
                for name, layer in layers:
                    m = measure(layer, x, reps, device)
                    row = {"layer": name, "B": B, "dim": dim, "T": T, **m,
                           "ratio_fwd": m["fwd"] / ref["fwd"], "ratio_fwd_bwd": m["fwd_bwd"] / ref["fwd_bwd"],
                           "ratio_memory": m["memory"] / ref["memory"]}
                    rows.append(row)
                    print(f"{row['layer']:<27}{B:>5}{dim:>4}{T:>4}{m['fwd'] * 1e3:>9.2f}{row['ratio_fwd']:>7.2f}"
                          f"{m['fwd_bwd'] * 1e3:>9.2f}{row['ratio_fwd_bwd']:>7.2f}{m['memory'] / 1024:>10.0f}"
                          f"{row['ratio_memory']:>7.2f}")
    print("\ntargets:")
    for line in summarise("layers", rows):
        print("  " + line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(), "device": str(device),
                       "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
