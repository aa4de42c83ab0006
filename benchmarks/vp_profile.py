"""Where the time of VolumePreservingAttention's forward+backward goes on CPU: the layer against its native kernels
alone and SDPA as one head, alternating in one process, then the per-call pieces outside the kernels, and the
minor page faults per call (one thread, float32, unit-normal x and incoming gradient, default-initialised layer,
thread CPU time, best of the repeats).

    python benchmarks/vp_profile.py [--dim 8] [--length 16] [--tokens 65536] [--reps 20] [--activation cayley]

The kernels are timed on the layer's own arrays (its skew weighting, the forward's Gram and N). Start the process
with ``GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432`` to see the
layer and SDPA without the page faults of their fresh 2 MiB tensors (glibc returning freed memory to the system).
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from geoattn.kernels import _native_lu
from geoattn.kernels._gram import _skew64
from geoattn.nn import VolumePreservingAttention


def _best(fns: dict, reps: int) -> dict:
    """Per name, the best thread CPU time in ms of ``reps`` calls, the callables alternating."""
    for f in fns.values():
        f()
    res = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t = time.thread_time()
            f()
            res[k].append(time.thread_time() - t)
    return {k: min(v) * 1e3 for k, v in res.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dim", type=int, default=8)
    p.add_argument("--length", type=int, default=16)
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--activation", choices=("cayley", "exp"), default="cayley")
    a = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    d, T = a.dim, a.length
    B = a.tokens // T
    m = VolumePreservingAttention(d, activation=a.activation)
    x, g = torch.randn(B, T, d), torch.randn(B, T, d)
    xr, xs = x.clone().requires_grad_(), x.clone().requires_grad_()

    def layer(dense):
        out = m(xr)
        out.backward(g) if dense else out.sum().backward()
        xr.grad = None
        m.zero_grad(set_to_none=True)

    def sdpa():
        torch.nn.functional.scaled_dot_product_attention(xs, xs, xs).backward(g)
        xs.grad = None

    fns = {"layer f+b dense": lambda: layer(True), "layer f+b sum": lambda: layer(False), "sdpa f+b dense": sdpa}
    if a.activation == "cayley" and _native_lu.MIN_DIM <= d <= _native_lu.MAX_DIM:
        As = _skew64(m.weight.detach()).contiguous()
        _, G, N, _ = _native_lu.gram_forward(x, As)
        gA = torch.empty(B, d, d, dtype=torch.float64)
        fns["kernels f+b"] = lambda: (_native_lu.gram_forward(x, As), _native_lu.gram_backward(x, g, N, As, G=G,
                                                                                                gA_out=gA))
        fns["gA.sum(0)"] = lambda: gA.sum(0)
        fns["Gram trace"] = lambda: G.diagonal(dim1=-2, dim2=-1).sum(-1)
    xt, gt = x[:1].clone().requires_grad_(), g[:1].clone()

    def one():
        m(xt).backward(gt)
        xt.grad = None
        m.zero_grad(set_to_none=True)

    fns["layer f+b, one sample"] = one
    ms = _best(fns, a.reps)
    print(f"d={d} T={T} B={B} {a.activation}: thread CPU ms, best of {a.reps}, alternating in one process")
    for k, v in ms.items():
        print(f"  {k:24s} {v:7.3f}")
    s = ms["sdpa f+b dense"]
    print(f"  ratio to SDPA: dense {ms['layer f+b dense'] / s:.3f}, sum {ms['layer f+b sum'] / s:.3f}"
          + (f"; outside the kernels: {ms['layer f+b dense'] - ms['kernels f+b']:.3f} ms" if "kernels f+b" in ms
             else ""))
    for dense in (True, False):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(a.reps):
            layer(dense)
        f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        print(f"  minor page faults per layer f+b ({'dense' if dense else 'sum'}): {(f1 - f0) / a.reps:.0f}")


if __name__ == "__main__":
    main()
