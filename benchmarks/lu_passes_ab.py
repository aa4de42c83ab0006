"""A/B timing of two builds of the native LU kernels alone, called through ctypes inside one process (alternating,
one thread, float32, unit-normal x and incoming gradient, A the skew part of a normal matrix scaled by 0.1, best of
the repeats): the forward kernel, and the backward kernel with the forward's Gram matrices where the build takes
them (its source prints ``vp_gram_lu_pbar``), else recomputing them in its pass over the tokens.

    python benchmarks/lu_passes_ab.py OLD.c NEW.c [--tokens 65536] [--shapes 8:16 8:64 16:64] [--reps 30] [--clock cpu]

``--clock cpu`` times the calling thread's CPU time (the kernels run on that one thread): on a machine shared with
other work it leaves out the time other processes held the core.

OLD.c and NEW.c are generated sources, e.g. ``git show REV:geoattn/kernels/_native_gram_lu.c`` and the current one.
"""

from __future__ import annotations

import argparse
import ctypes
import time

import torch

from geoattn.kernels import _native_lu


def _ptr(t: torch.Tensor) -> ctypes.c_void_p:
    return ctypes.c_void_p(t.data_ptr())


def _kernels(src: str, d: int, x, gy, A):
    """``(forward, backward)`` closures of the build of ``src`` at ``d`` on the given arrays."""
    lib = _native_lu.build(d, "f32", src)
    if isinstance(lib, str):
        raise SystemExit(f"Expected {src} to build. Got: {lib}")
    with open(src) as fh:
        saved = f"vp_gram_lu_pbar_d{d}" in fh.read()
    B, T, _ = x.shape
    y, gx = torch.empty_like(x), torch.empty_like(x)
    G, N, gA = (torch.empty(B, d, d, dtype=torch.float64) for _ in range(3))
    R = torch.empty(B, dtype=torch.float64)
    fwd = getattr(lib, f"geoattn_vp_gram_lu_fwd_d{d}_f32")
    bwd = getattr(lib, f"geoattn_vp_gram_lu_bwd_d{d}_f32")
    n, t = ctypes.c_int64(B), ctypes.c_int64(T)

    def forward():
        fwd(n, t, _ptr(x), _ptr(A), _ptr(y), _ptr(G), _ptr(N), _ptr(R))

    def backward():
        args = [_ptr(x), _ptr(gy)] + ([_ptr(G)] if saved else []) + [_ptr(N), _ptr(A), _ptr(gx), _ptr(gA)]
        bwd(n, t, *args)

    forward()
    return forward, backward, gx


def main(argv=None):
    """Print, per shape, the best time of each build's forward and backward kernels."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--shapes", nargs="+", default=["8:16", "8:64", "16:64"])
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    a = p.parse_args(argv)
    clock = time.thread_time if a.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    for shape in a.shapes:
        d, T = (int(v) for v in shape.split(":"))
        B = a.tokens // T
        torch.manual_seed(0)
        x, gy = torch.randn(B, T, d), torch.randn(B, T, d)
        W = 0.1 * torch.randn(d, d, dtype=torch.float64)
        A = (0.5 * (W - W.mT)).contiguous()
        ks = {k: _kernels(src, d, x, gy, A) for k, src in (("old", a.old), ("new", a.new))}
        best = {(k, j): float("inf") for k in ks for j in (0, 1)}
        for _ in range(a.reps):
            for k, fns in ks.items():
                for j in (0, 1):
                    t0 = clock()
                    fns[j]()
                    best[k, j] = min(best[k, j], clock() - t0)
        same = torch.equal(ks["old"][2], ks["new"][2])
        ms = {key: v * 1e3 for key, v in best.items()}
        print(f"d={d:>2} T={T:>3} B={B:>5}  forward old {ms['old', 0]:6.2f} new {ms['new', 0]:6.2f} ms "
              f"({best['new', 0] / best['old', 0]:.2f}x) | backward old "
              f"{ms['old', 1]:6.2f} new {ms['new', 1]:6.2f} ms ({best['new', 1] / best['old', 1]:.2f}x) | gx "
              f"{'bit-identical' if same else 'differs'}", flush=True)


if __name__ == "__main__":
    main()
