"""Layer benchmark: the structure-preserving layers against scaled_dot_product_attention at the same shape.

    python benchmarks/layers.py [--quick] [--json PATH] [--threads N] [--device cpu|cuda]
                                [--batch B ... | --tokens N] [--lengths T ...] [--dims D ...] [--layers NAME ...]
                                [--sweep-tokens N] [--sweep T ...] [--no-gpu-table] [--peak-gbs G]
                                [--mha-tokens N] [--mha-lengths T ...] [--mha-dims D ...] [--mha-heads H]

With ``--device cuda`` a third table (``benchmarks/gpu.py``) times the fused Triton kernels at B * T = 2^20
tokens with CUDA events against SDPA and ``torch.compile`` of the eager form, with the route each call took and
the fraction of the memory bandwidth the VP layer reaches.

For input ``x`` of shape ``(B, T, dim)`` the reference is
``torch.nn.functional.scaled_dot_product_attention(h, h, h)`` with ``h = x`` as one
head, ``(B, 1, T, dim)`` (no projections; the fused kernels' layout, Note [the SDPA
reference is four-dimensional]), measured in the same run. Reported: forward and forward+backward times
(median of repeats) with two incoming gradients, a dense random one (``f+b``)
and the expanded one of ``loss = out.sum()`` (``f+b sum``); their ratios to the
reference (below 1: faster than SDPA); and memory: on CPU the bytes of tensors
saved for backward plus the output (activation memory, counted with
``saved_tensors_hooks``); on CUDA the peak allocated memory of forward+backward.

A second table sweeps the sequence length at a fixed number of tokens
``B * T`` (dim 4): VolumePreservingAttention (both activations) and SDPA, for the
time-against-T curves and the cost per token.

A third table (``benchmarks/mha.py``) compares ``MultiHeadAttention`` with ``torch.nn.MultiheadAttention`` at
``B * T = 65,536`` tokens (``--mha-tokens``), ``T`` in {16, 64, 256}, ``dim`` in {8, 16, 32, 64}, two heads, without a
mask and with each mask kind (causal, boolean, additive, key padding), the two modules timed alternately.
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

from geoattn.kernels import native_status  # noqa: E402
from geoattn.kernels._native import vector_bytes  # noqa: E402
from geoattn.nn import (  # noqa: E402
    LinearSymplecticAttention, OrthonormalAttention, SymplecticAttention, VolumePreservingAttention)
from gpu import gpu_rows, peak_bandwidth, print_gpu_table  # noqa: E402
from mha import mha_rows, timed_calls  # noqa: E402
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
    calls = timed_calls(fn, x)
    leaf = x.clone().requires_grad_()
    return {**{k: timeit(c, reps, device) for k, c in calls.items()}, "memory": activation_bytes(fn, leaf, device)}


def ratios(m, ref):
    """Each timing and the memory of ``m`` relative to the reference ``ref`` measured in the same run."""
    return {f"ratio_{k}": m[k] / ref[k] for k in ("fwd", "fwd_bwd", "fwd_bwd_sum", "memory")}


# Note [the SDPA reference is four-dimensional]
# torch's fused attention kernels (the flash kernel on CPU; flash and memory-efficient ones on CUDA) take
# (batch, heads, T, dim) inputs. A three-dimensional (B, T, dim) input falls back to the composite form, which on
# CPU took 2.5-3 times as long (B = 4096, dim = 4, T = 16 and 32, one thread) and on CUDA builds the B x T x T
# matrix. The reference is the fused path, as multi-head code calls it.
def sdpa(y):
    """The reference: torch's scaled dot-product self-attention of ``y`` as one head, ``(B, 1, T, dim)``."""
    h = y.unsqueeze(-3)
    return F.scaled_dot_product_attention(h, h, h).squeeze(-3)


def line(name, B, dim, T, m, r=None):
    """One row of the text table (timings in ms, ratios against the reference when ``r`` is given)."""
    cells = f"{name:<31}{B:>6}{dim:>4}{T:>5}{m['fwd'] * 1e3:>10.2f}"
    cells += f"{r['ratio_fwd']:>7.2f}" if r else f"{'':>7}"
    for k in ("fwd_bwd", "fwd_bwd_sum"):
        cells += f"{m[k] * 1e3:>10.2f}" + (f"{r['ratio_' + k]:>7.2f}" if r else f"{'':>7}")
    cells += f"{m['memory'] / 1024:>10.0f}" + (f"{r['ratio_memory']:>7.2f}" if r else f"{'':>7}")
    if r and r.get("route"):
        cells += f"  {r['route']}"
    print(cells, flush=True)


def route_of(layer, x) -> str:
    """The kernel route the layer takes for ``x`` (its ``explain``), or ``""`` for a layer without one."""
    explain = getattr(layer, "explain", None)
    if explain is None:
        return ""
    e = explain(x)
    return e.route.name if e.route is not None else "none"


def common_parser(doc: str, quick: str) -> argparse.ArgumentParser:
    """The options the layer benchmarks share: ``--quick`` (help ``quick``), ``--threads``, ``--reps``,
    ``--device``, ``--json``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", help="write the results to PATH")
    return parser


def native_note(device) -> str:
    """Whether the native CPU kernels of the closed-form Gram layer serve this run, and why not."""
    if torch.device(device).type != "cpu":
        return "not used (not a CPU run)"
    ok, why = native_status(4, torch.float32)
    return f"built, {vector_bytes()}-byte vectors" if ok else f"not used: {why}"


def print_preamble(device) -> None:
    """The first lines of a table: versions, threads, device, what the columns mean, the header."""
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device {device}, "
          f"{platform.processor() or platform.machine()}; float32; ratios = layer / SDPA in the same run; "
          "f+b: dense random incoming gradient, sum: gradient of out.sum(); "
          f"native Gram kernels: {native_note(device)}")
    print(HEADER)


def write_results(path: str, device, rows: list[dict], **extra) -> None:
    """The rows as JSON with the torch version, thread count and device (and ``extra`` fields)."""
    with open(path, "w") as fh:
        json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(), "device": str(device),
                   "native": native_note(device), **extra,
                   "rows": rows}, fh, indent=1)


#: the layers of the main table: name -> (dim, T, device) -> module
LAYERS = {
    "VolumePreservingAttention": lambda dim, T, device: VolumePreservingAttention(dim, device=device),
    "VolumePreservingAttention(exp)": lambda dim, T, device: VolumePreservingAttention(dim, activation="exp",
                                                                                       device=device),
    "OrthonormalAttention": lambda dim, T, device: OrthonormalAttention(dim, device=device),
    "LinearSymplecticAttention": lambda dim, T, device: LinearSymplecticAttention(T, device=device),
    "SymplecticAttention": lambda dim, T, device: SymplecticAttention(dim, device=device),
}

HEADER = (f"{'layer':<31}{'B':>6}{'dim':>4}{'T':>5}{'fwd ms':>10}{'fwd x':>7}{'f+b ms':>10}{'f+b x':>7}"
          f"{'sum ms':>10}{'sum x':>7}{'mem KiB':>10}{'mem x':>7}")


def main(argv=None) -> int:
    parser = common_parser(__doc__, "B = 256, dim = 4, T in {3, 8}, a small sweep, one repetition")
    parser.add_argument("--batch", type=int, nargs="+", help="batch sizes of the main table")
    parser.add_argument("--tokens", type=int, help="B * T of every row of the main table (B = N // T; instead of "
                        "--batch)")
    parser.add_argument("--lengths", type=int, nargs="+", help="sequence lengths of the main table")
    parser.add_argument("--dims", type=int, nargs="+", help="feature sizes of the main table")
    parser.add_argument("--layers", nargs="+", choices=sorted(LAYERS), help="layers of the main table (default: all)")
    parser.add_argument("--sweep-tokens", type=int, default=None, help="B * T of the length sweep")
    parser.add_argument("--sweep", type=int, nargs="*", help="sequence lengths of the sweep (none: no sweep)")
    parser.add_argument("--no-gpu-table", action="store_true", help="skip the GPU table of a CUDA run")
    parser.add_argument("--peak-gbs", type=float, help="the device's peak memory bandwidth in GB/s (default: from "
                        "its memory clock and bus width)")
    parser.add_argument("--mha-tokens", type=int, help="B * T of the MultiHeadAttention table")
    parser.add_argument("--mha-lengths", type=int, nargs="*", help="sequence lengths of the MultiHeadAttention "
                        "table (none: no such table)")
    parser.add_argument("--mha-dims", type=int, nargs="+", help="feature sizes of the MultiHeadAttention table")
    parser.add_argument("--mha-heads", type=int, default=2, help="heads of the MultiHeadAttention table")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    batches, dims, lengths = ([256], [4], [3, 8]) if args.quick else ([256, 4096], [4, 32], [3, 8, 16, 32])
    batches, dims, lengths = args.batch or batches, args.dims or dims, args.lengths or lengths
    tokens = args.sweep_tokens or (1024 if args.quick else 32768)
    sweep = args.sweep if args.sweep is not None else ([16, 64] if args.quick else
                                                       [16, 32, 64, 128, 256, 512, 1024, 2048, 4096])
    reps = 1 if args.quick else args.reps
    print_preamble(device)
    rows = []
    shapes = ([(max(1, args.tokens // T), dim, T) for dim in dims for T in lengths] if args.tokens else
              [(B, dim, T) for B in batches for dim in dims for T in lengths])
    for B, dim, T in shapes:
        torch.manual_seed(0)
        x = torch.randn(B, T, dim, device=device)
        ref = measure(sdpa, x, reps, device)
        layers = [(name, make(dim, T, device)) for name, make in LAYERS.items()
                  if (args.layers is None or name in args.layers)
                  and (dim % 2 == 0 or "Symplectic" not in name)]
        rows.append({"layer": "sdpa", "B": B, "dim": dim, "T": T, **ref})
        line("sdpa (reference)", B, dim, T, ref)
        for name, layer in layers:
            m = measure(layer, x, reps, device)
            row = {"layer": name, "B": B, "dim": dim, "T": T, **m, **ratios(m, ref),
                   "route": route_of(layer, x)}
            rows.append(row)
            line(name, B, dim, T, m, row)
    if sweep:
        print(f"\nlength sweep at B * T = {tokens} tokens, dim = 4")
        print(HEADER)
        for T in sweep:
            B = max(1, tokens // T)
            torch.manual_seed(0)
            x = torch.randn(B, T, 4, device=device)
            ref = measure(sdpa, x, reps if T < 2048 else max(1, reps // 2), device)
            rows.append({"layer": "sdpa", "B": B, "dim": 4, "T": T, "sweep": True, **ref})
            line("sdpa (reference)", B, 4, T, ref)
            for name, act in (("VolumePreservingAttention", "cayley"), ("VolumePreservingAttention(exp)", "exp")):
                m = measure(VolumePreservingAttention(4, activation=act, device=device), x, reps, device)
                row = {"layer": name, "B": B, "dim": 4, "T": T, "sweep": True, **m, **ratios(m, ref),
                       "memory_per_token_dim": m["memory"] / (B * T * 4)}
                rows.append(row)
                line(name, B, 4, T, m, row)
    mha_lengths = args.mha_lengths if args.mha_lengths is not None else ([16] if args.quick else [16, 64, 256])
    if mha_lengths:
        mha_tokens = args.mha_tokens or (1024 if args.quick else 65536)
        print(f"\nMultiHeadAttention against torch.nn.MultiheadAttention at B * T = {mha_tokens} tokens, "
              f"{args.mha_heads} heads; ratios = ours / torch's, median of alternating repeats")
        print(HEADER)
        rows += mha_rows(device, tokens=mha_tokens, lengths=mha_lengths,
                         dims=args.mha_dims or ([8] if args.quick else [8, 16, 32, 64]), heads=args.mha_heads,
                         reps=max(reps, 3), memory=activation_bytes, line=line)
    gpu = []
    if device.type == "cuda" and not args.no_gpu_table:
        gpu = gpu_rows(device, reps=max(reps, 3) if not args.quick else 1,
                       tokens=2**14 if args.quick else 2**20)
        print_gpu_table(gpu, args.peak_gbs * 1e9 if args.peak_gbs else peak_bandwidth(device))
    print("\ntargets:")
    for text in summarise("layers", rows):
        print("  " + text)
    if args.json:
        write_results(args.json, device, rows, tokens=tokens, gpu=gpu)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
