"""The GPU table of ``benchmarks/layers.py --device cuda``: the fused kernels against SDPA and torch.compile.

At a fixed number of tokens ``B * T`` (2^20 by default), float32, for ``T`` in {16, 64, 256, 1024}: forward +
backward of the VP layer (both activations, ``dim`` 4, 8 and 16) and of the standalone Cayley transform, with
both incoming gradients (a dense random one, and the expanded one of ``out.sum()``), timed with CUDA events
(median of repeats after a warm-up), against

* SDPA of the same ``x`` as one head ``(B, 1, T, dim)`` (Note [the SDPA reference is four-dimensional] in
  ``layers.py``), and
* ``torch.compile`` (default mode) of the eager form: the same call with ``backend("eager")`` inside the compiled
  function (traced, so the eager forms' traceable routes serve).

Each row names the route the dispatch table took (``geoattn.kernels.explain``) and, for the memory-bound VP
layer, the fraction of the device's memory bandwidth: the bytes of ``x``, ``y``, ``dy`` and ``dx`` once each
over the measured time, against the peak from the device's memory clock and bus width (or ``--peak-gbs``).
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F

import geoattn.kernels as K

__all__ = ["LENGTHS", "TOKENS", "event_timer", "wall_timer", "peak_bandwidth", "gpu_rows", "print_gpu_table"]

#: the sequence lengths and the number of tokens of the table
LENGTHS = (16, 64, 256, 1024)
TOKENS = 2**20


def event_timer(fn, reps: int) -> float:
    """Median seconds of ``fn()`` over ``reps`` runs, timed with CUDA events (after one warm-up run)."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def wall_timer(fn, reps: int) -> float:
    """Median seconds of ``fn()`` by the wall clock (the CPU stand-in of :func:`event_timer`, for the tests)."""
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def peak_bandwidth(device) -> float | None:
    """Bytes per second the device's memory can move at most: ``2 * memory clock * bus width / 8`` (double data
    rate), from the device properties where torch reports them; None where it does not."""
    props = torch.cuda.get_device_properties(device)
    clock, bus = getattr(props, "memory_clock_rate", None), getattr(props, "memory_bus_width", None)
    if not clock or not bus:
        return None
    return 2.0 * clock * 1e3 * bus / 8


def _sdpa(y):
    h = y.unsqueeze(-3)
    return F.scaled_dot_product_attention(h, h, h).squeeze(-3)


def _vp(activation):
    def f(x, A):
        return K.vp_attention(x, A, activation=activation, check=False)
    return f


def _eager(fn):
    def f(*args):
        with K.backend("eager"):
            return fn(*args)
    return f


def _step(fn, args, grad):
    """One forward + backward of ``fn(*args)`` with the incoming gradient ``grad`` (None: that of ``out.sum()``)."""
    leaves = [a.detach().requires_grad_() for a in args]

    def run():
        out = fn(*leaves)
        if grad is None:
            out.sum().backward()
        else:
            out.backward(grad)
    return run


def _cases(device, lengths, tokens, dims):
    """(name, dim, T, fn, args, route) for every measured call."""
    for T in lengths:
        B = max(1, tokens // T)
        for dim in dims:
            gen = torch.Generator(device="cpu").manual_seed(T * 100 + dim)
            x = torch.randn(B, T, dim, generator=gen).to(device)
            w = torch.randn(dim, dim, generator=gen)
            A = ((w - w.T) * 0.3).to(device)
            yield "sdpa", dim, T, _sdpa, (x,), "-"
            for act in ("cayley", "exp"):
                route = K.explain("vp_attention", x, A, activation=act).route
                yield f"vp-{act}", dim, T, _vp(act), (x, A), route.name if route else "-"
    for Tc in (2, 3):  # the standalone Cayley transform of small matrices, as many matrices as tokens
        w = torch.randn(tokens, Tc, Tc, generator=torch.Generator().manual_seed(Tc)).to(device)
        c = w - w.mT
        yield "cayley", Tc, Tc, K.cayley, (c,), K.explain("cayley", c).route.name


def gpu_rows(device, reps: int = 20, lengths=LENGTHS, tokens: int = TOKENS, dims=(4, 8, 16), timer=None,
             compile: bool = True) -> list[dict]:
    """Measure every case (module docstring); returns one row per case and incoming gradient, with the times of
    the call, of SDPA at the same shape and of ``torch.compile`` of the eager form, their ratios, and for the VP
    layer the bytes it must move (x, y, dy, dx)."""
    timer = timer or event_timer
    rows, sdpa_time = [], {}
    for name, dim, T, fn, args, route in _cases(device, lengths, tokens, dims):
        x = args[0]
        for grad_kind in ("dense", "sum"):
            grad = torch.randn_like(x) if grad_kind == "dense" else None
            row = {"op": name, "dim": dim, "T": T, "B": x.shape[0], "grad": grad_kind, "route": route,
                   "time": timer(_step(fn, args, grad), reps)}
            if name == "sdpa":
                sdpa_time[(dim, T, grad_kind)] = row["time"]
            else:
                ref = sdpa_time.get((dim, T, grad_kind))
                row["ratio_sdpa"] = row["time"] / ref if ref else None
                if compile:
                    torch._dynamo.reset()
                    compiled = torch.compile(_eager(fn))
                    row["time_compile"] = timer(_step(compiled, args, grad), reps)
                    row["ratio_compile"] = row["time"] / row["time_compile"]
                if name.startswith("vp"):
                    row["bytes"] = 4 * x.numel() * x.element_size()
            rows.append(row)
    return rows


def print_gpu_table(rows: list[dict], peak: float | None) -> None:
    """The rows as a text table; the bandwidth fraction where the peak is known."""
    print("\nGPU table: forward + backward, float32, CUDA-event timing; x = time / SDPA's, xc = time / torch.compile's"
          + ("" if peak is None else f"; bw = (x, y, dy, dx bytes) / time / peak ({peak / 1e9:.0f} GB/s)"))
    print(f"{'op':<12}{'dim':>4}{'T':>6}{'B':>9}{'grad':>7}{'route':>22}{'ms':>9}{'x':>7}{'xc':>7}{'bw':>7}")
    for r in rows:
        bw = r["bytes"] / r["time"] / peak if peak and "bytes" in r else None
        r["bandwidth_fraction"] = bw
        cells = [f"{r['op']:<12}{r['dim']:>4}{r['T']:>6}{r['B']:>9}{r['grad']:>7}{r['route']:>22}"
                 f"{r['time'] * 1e3:>9.3f}"]
        for key in ("ratio_sdpa", "ratio_compile"):
            cells.append(f"{r[key]:>7.2f}" if r.get(key) is not None else f"{'':>7}")
        cells.append(f"{bw:>7.2f}" if bw is not None else f"{'':>7}")
        print("".join(cells), flush=True)
