"""A/B timing of two builds of the native LU kernels inside one process: the Cayley layer with each library in
turn (alternating, one thread, float32, unit-normal x, default-initialised VolumePreservingAttention) and SDPA as
one head with the dense gradient, best of the repeats; ratios to that SDPA time (the layer with a dense
incoming gradient and with that of ``out.sum()``).

    python benchmarks/lu_stage_ab.py OLD.c NEW.c [--tokens 65536] [--shapes 8:16 8:64 16:64] [--reps 15]

OLD.c and NEW.c are generated sources (``geoattn.codegen.gram_lu_c.generate_gram_lu_module()``), e.g. the file of
an older commit (``git show REV:geoattn/kernels/_native_gram_lu.c``) and the current one. Both must print the
backward that takes the forward's Gram matrices (the layer passes them); ``benchmarks/lu_passes_ab.py`` times
older builds, the kernels alone.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from geoattn.kernels import _native_lu
from geoattn.nn import VolumePreservingAttention


def _best(fn, reps):
    out = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main(argv=None):
    """Print, per shape, the best forward+backward time of SDPA and of the layer with each library."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--shapes", nargs="+", default=["8:16", "8:64", "16:64"])
    p.add_argument("--reps", type=int, default=15)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    for shape in a.shapes:
        d, T = (int(v) for v in shape.split(":"))
        B = a.tokens // T
        for k, src in (("old", a.old), ("new", a.new)):  # the layer hands its backward the forward's Gram
            with open(src) as fh:
                if f"vp_gram_lu_pbar_d{d}" not in fh.read():
                    raise SystemExit(f"Expected the {k} source to print the backward that takes the forward's Gram "
                                     f"(vp_gram_lu_pbar_d{d}). Got {src} without it: time it with lu_passes_ab.py.")
        libs = {k: _native_lu.build(d, "f32", src) for k, src in (("old", a.old), ("new", a.new))}
        for k, lib in libs.items():
            if isinstance(lib, str):
                raise SystemExit(f"Expected the {k} library to build. Got: {lib}")
        torch.manual_seed(0)
        layer = VolumePreservingAttention(d)
        x = torch.randn(B, T, d, requires_grad=True)
        gy = torch.randn(B, T, d)

        def sdpa():
            h = x.unsqueeze(-3)
            F.scaled_dot_product_attention(h, h, h).squeeze(-3).backward(gy)

        def run(lib, dense):
            def go():
                _native_lu._libraries[(d, "f32")] = lib
                out = layer(x)
                out.backward(gy if dense else torch.ones_like(out))
            return go

        best = {k: float("inf") for k in ("sdpa", "old", "new", "old_sum", "new_sum")}
        for _ in range(a.reps):
            best["sdpa"] = min(best["sdpa"], _best(sdpa, 1))
            for k in ("old", "new"):
                best[k] = min(best[k], _best(run(libs[k], True), 1))
                best[k + "_sum"] = min(best[k + "_sum"], _best(run(libs[k], False), 1))
        s = best["sdpa"]
        print(f"d={d:>2} T={T:>3} B={B:>5}  sdpa {s * 1e3:7.2f} ms | f+b old {best['old'] * 1e3:7.2f} "
              f"({best['old'] / s:.2f}x) new {best['new'] * 1e3:7.2f} ({best['new'] / s:.2f}x) | sum old "
              f"{best['old_sum'] * 1e3:7.2f} ({best['old_sum'] / s:.2f}x) new {best['new_sum'] * 1e3:7.2f} "
              f"({best['new_sum'] / s:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
