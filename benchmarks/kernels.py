"""Kernel benchmark: generated kernels with derived backward passes against the naive
compositions with autograd, measured in one run.

    python benchmarks/kernels.py [--quick] [--json PATH] [--threads N]

Inputs are skew matrices M - M^T with unit-normal M scaled by 0.1, 1 and 3 (``scale``): the
magnitudes a layer meets, not divided by sqrt(T). Every row records the route that served the
call (``geoattn.kernels.explain``). Forward+backward is timed with two incoming gradients: a dense
random one (``f+b``) and the expanded one of ``loss = out.sum()`` (``f+b sum``).

Cayley: ``geoattn.kernels.cayley`` (custom VJP) against
``torch.linalg.solve(I + C, I - C, left=False)`` + autograd. Skew exponential:
``geoattn.kernels.exp_skew`` (scaling and squaring of a Taylor polynomial, derived backward) against
``torch.linalg.matrix_exp`` + autograd. Ratios below 1 mean the kernel is faster.
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

from geoattn import kernels as K  # noqa: E402
from geoattn.kernels._native import vector_bytes  # noqa: E402
from targets import summarise  # noqa: E402


def timeit_pair(fn_a, fn_b, reps: int, warmup: int = 1) -> tuple[float, float]:
    """Median times of ``fn_a`` and ``fn_b``, run alternately so that drift of the machine
    (frequency, memory state) affects both alike."""
    for _ in range(warmup):
        fn_a()
        fn_b()
    ta, tb = [], []
    for _ in range(reps):
        for fn, times in ((fn_a, ta), (fn_b, tb)):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return statistics.median(ta), statistics.median(tb)


def write_json(path: str, rows: list[dict]) -> None:
    """The rows of a run, with the torch version and thread count, as JSON at ``path``."""
    with open(path, "w") as fh:
        json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(), "vector_bytes": vector_bytes(),
                   "rows": rows}, fh, indent=2)


def naive_cayley(c):
    eye = torch.eye(c.shape[-1], dtype=c.dtype)
    return torch.linalg.solve(eye + c, eye - c, left=False)


def fast_exp(s):
    return K.exp_skew(s, check=False)


def case(kernel, naive, B, T, dtype, reps, scale=1.0):
    g = torch.Generator().manual_seed(0)
    m = torch.randn(B, T, T, generator=g, dtype=dtype) * scale
    c = m - m.mT
    grad = torch.randn(B, T, T, generator=g, dtype=dtype)
    x = c.clone()
    out = {}
    out["kernel_fwd"], out["naive_fwd"] = timeit_pair(lambda: kernel(x), lambda: naive(x), reps)
    leaves = {"kernel": c.clone().requires_grad_(), "naive": c.clone().requires_grad_()}

    def fwd_bwd(fn, leaf):
        def run():
            leaf.grad = None
            fn(leaf).backward(grad)

        return run

    def fwd_bwd_sum(fn, leaf):
        def run():
            leaf.grad = None
            fn(leaf).sum().backward()  # the expanded incoming gradient of a sum() loss
        return run

    out["kernel_fwd_bwd"], out["naive_fwd_bwd"] = timeit_pair(
        fwd_bwd(kernel, leaves["kernel"]), fwd_bwd(naive, leaves["naive"]), reps
    )
    out["kernel_fwd_bwd_sum"], out["naive_fwd_bwd_sum"] = timeit_pair(
        fwd_bwd_sum(kernel, leaves["kernel"]), fwd_bwd_sum(naive, leaves["naive"]), reps
    )
    out["ratio_fwd"] = out["kernel_fwd"] / out["naive_fwd"]
    out["ratio_fwd_bwd"] = out["kernel_fwd_bwd"] / out["naive_fwd_bwd"]
    out["ratio_fwd_bwd_sum"] = out["kernel_fwd_bwd_sum"] / out["naive_fwd_bwd_sum"]
    return out


#: entry scales of the unit-normal M in C = M - M^T
SCALES = (0.1, 1.0, 3.0)


def served(kname, B, T, dtype, scale) -> dict:
    """The route that serves the case's input (``explain``) and the result's orthogonality defect
    max |Q^T Q - I| in units of T eps."""
    g = torch.Generator().manual_seed(0)
    m = torch.randn(B, T, T, generator=g, dtype=dtype) * scale
    c = m - m.mT
    route = K.explain(kname, c).route.name
    q = (K.cayley(c) if kname == "cayley" else fast_exp(c)).double()
    orth = float((q.mT @ q - torch.eye(T, dtype=torch.float64)).abs().max()) / (T * torch.finfo(dtype).eps)
    return {"route": route, "orth_T_eps": orth}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="B = 256 only, one repetition")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="write the results to PATH")
    parser.add_argument("--only", choices=["cayley", "exp_skew"], help="one kernel only")
    parser.add_argument("--dtypes", nargs="+", choices=["float32", "float64"], default=["float32", "float64"],
                        help="the real types measured")
    parser.add_argument("--sizes", nargs="+", type=int, help="the sizes T (default 8 12 16 32; --quick: 8 16)")
    parser.add_argument("--scales", nargs="+", type=float, help="the entry scales (default 0.1 1 3)")
    parser.add_argument("--reps", type=int, help="repetitions per case (default 15, or 7 for large cases)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    batches = [256] if args.quick else [4096]
    sizes = args.sizes or ((8, 16) if args.quick else (8, 12, 16, 32))
    scales = args.scales or SCALES
    dtypes = [getattr(torch, name) for name in args.dtypes]
    rows = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {platform.processor() or platform.machine()}, "
          f"native kernels' vectors: {vector_bytes()} bytes")
    header = (f"{'kernel':8s} {'dtype':8s} {'B':>5s} {'T':>3s} {'scale':>5s} {'fwd ms':>9s} {'naive':>9s} {'ratio':>6s} {'f+b ms':>9s} "
              f"{'naive':>9s} {'ratio':>6s} {'f+b sum':>9s} {'naive':>9s} {'ratio':>6s} {'orth/Teps':>9s} route")
    print(header)
    print("-" * len(header))
    for kname, kernel, naive in (("cayley", K.cayley, naive_cayley), ("exp_skew", fast_exp, torch.linalg.matrix_exp)):
        if args.only and kname != args.only:
            continue
        for dtype in dtypes:
            for B in batches:
                for T in sizes:
                    for scale in scales:
                        reps = args.reps or (1 if args.quick else (15 if B * T * T < 300_000 else 7))
                        r = case(kernel, naive, B, T, dtype, reps, scale)
                        r.update(kernel_name=kname, dtype=str(dtype).replace("torch.", ""), B=B, T=T, scale=scale,
                                 **served(kname, B, T, dtype, scale))
                        rows.append(r)
                        print(
                            f"{kname:8s} {r['dtype']:8s} {B:5d} {T:3d} {scale:5g} {1e3 * r['kernel_fwd']:9.2f} "
                            f"{1e3 * r['naive_fwd']:9.2f} {r['ratio_fwd']:6.2f} {1e3 * r['kernel_fwd_bwd']:9.2f} "
                            f"{1e3 * r['naive_fwd_bwd']:9.2f} {r['ratio_fwd_bwd']:6.2f} {1e3 * r['kernel_fwd_bwd_sum']:9.2f} "
                            f"{1e3 * r['naive_fwd_bwd_sum']:9.2f} {r['ratio_fwd_bwd_sum']:6.2f} {r['orth_T_eps']:9.2f} "
                            f"{r['route']}",
                            flush=True,
                        )
    print("\ntargets:")
    for line in summarise("kernels", rows):
        print("  " + line)
    if args.json:
        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
