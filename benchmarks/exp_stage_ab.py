"""A/B timing of two builds of the native exponential kernels inside one process: the exponential layer with each
library in turn (alternating, one thread, float32, unit-normal x, default-initialised
``VolumePreservingAttention(d, activation="exp")``) and SDPA as one head with the dense gradient, best of the
repeats; ratios to that SDPA time (the layer with a dense incoming gradient and with that of ``out.sum()``), and the
kernels alone (forward, backward).

    python benchmarks/exp_stage_ab.py OLD.c NEW.c [--tokens 65536] [--shapes 8:16 16:64] [--reps 10] [--clock cpu]

``--clock cpu`` times the calling thread's CPU time instead of the wall clock: everything runs on that one thread,
and on a machine shared with other work its CPU time leaves out the time other processes held the core.

OLD.c and NEW.c are generated sources (``geoattn.codegen.gram_exp_c.generate_gram_exp_module()``), e.g. the file of
an older commit (``git show REV:geoattn/kernels/_native_gram_exp.c``) and the current one.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from geoattn.kernels import _native_exp
from geoattn.kernels._gram import _skew64
from geoattn.nn import VolumePreservingAttention


_CLOCK = {"wall": time.perf_counter, "cpu": time.thread_time}
_clock = time.perf_counter


def _time(fn):
    t0 = _clock()
    fn()
    return _clock() - t0


def main(argv=None):
    """Print, per shape, the best times of SDPA, of the layer with each library and of the kernels alone."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--shapes", nargs="+", default=["8:16", "16:64"])
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--clock", choices=sorted(_CLOCK), default="wall")
    a = p.parse_args(argv)
    global _clock
    _clock = _CLOCK[a.clock]
    torch.set_num_threads(1)
    for shape in a.shapes:
        d, T = (int(v) for v in shape.split(":"))
        B = a.tokens // T
        libs = {k: _native_exp.build(d, "f32", src) for k, src in (("old", a.old), ("new", a.new))}
        for k, lib in libs.items():
            if isinstance(lib, str):
                raise SystemExit(f"Expected the {k} library to build. Got: {lib}")
        torch.manual_seed(0)
        layer = VolumePreservingAttention(d, activation="exp")
        x = torch.randn(B, T, d, requires_grad=True)
        gy = torch.randn(B, T, d)
        xd = x.detach().contiguous()
        As = _skew64(layer.weight.detach()).contiguous()

        def sdpa():
            h = x.unsqueeze(-3)
            F.scaled_dot_product_attention(h, h, h).squeeze(-3).backward(gy)

        def run(lib, dense):
            def go():
                _native_exp._libraries[(d, "f32")] = lib
                out = layer(x)
                out.backward(gy if dense else torch.ones_like(out))
            return go

        def fwd(lib):
            return lambda: _native_exp.gram_exp_forward(xd, As, library=lib)

        def bwd(lib):
            return lambda: _native_exp.gram_exp_backward(xd, gy, As, library=lib)

        best: dict = {}
        for _ in range(a.reps):
            best["sdpa"] = min(best.get("sdpa", 1e9), _time(sdpa))
            for k in ("old", "new"):
                for name, fn in ((k, run(libs[k], True)), (k + "_sum", run(libs[k], False)),
                                 (k + "_fk", fwd(libs[k])), (k + "_bk", bwd(libs[k]))):
                    best[name] = min(best.get(name, 1e9), _time(fn))
        s = best["sdpa"]
        ms = {k: v * 1e3 for k, v in best.items()}
        print(f"d={d:>2} T={T:>3} B={B:>5}  sdpa {ms['sdpa']:6.2f} ms | f+b old {ms['old']:6.2f} "
              f"({best['old'] / s:.2f}x) new {ms['new']:6.2f} ({best['new'] / s:.2f}x) | sum old "
              f"{best['old_sum'] / s:.2f}x new {best['new_sum'] / s:.2f}x | kernels fwd {ms['old_fk']:.1f} -> "
              f"{ms['new_fk']:.1f} ms, bwd {ms['old_bk']:.1f} -> {ms['new_bk']:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
