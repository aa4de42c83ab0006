"""Where the time of OrthonormalAttention goes, and the floors of its forms, against SDPA in the same run.

    python benchmarks/orthonormal_floors.py [--tokens N] [--cases T,d ...] [--reps R]

For each ``(T, d)`` at ``B * T = N`` tokens (unit-normal ``x``, default-initialised layer, float32, one thread):
the norms of ``S = uta(C)`` (spectral, and the bound the Chebyshev form uses) and the degrees they give; then
times, each the best of ``R`` alternating repeats, as multiples of SDPA forward+backward (dense random gradient):
SDPA forward; the layer forward and forward+backward on its route (``chebyshev``) and on the dense one
(``exp_skew`` of the ``T x T`` matrix, then the product); the correlation and ``uta``; ``exp_skew`` forward and
forward+backward; ``torch.linalg.matrix_exp`` forward and forward+backward (autograd); one product ``S @ x``
(the unit of the Chebyshev form: its forward costs ``m`` of them, its backward about ``2 m``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from geoattn import kernels as K  # noqa: E402
from geoattn.kernels._exp_action import chebyshev_degree, norm_bound  # noqa: E402
from geoattn.kernels._native_exp_action import _uta_t  # noqa: E402
from geoattn.nn import OrthonormalAttention  # noqa: E402
from layers import sdpa  # noqa: E402


def best(fn, reps: int) -> float:
    """The least of ``reps`` timings of ``fn`` (after one warm-up call)."""
    fn()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def calls(T: int, d: int, tokens: int) -> tuple[dict, str]:
    """The timed calls of one case and a line on its norms and degrees."""
    torch.manual_seed(0)
    B = max(1, tokens // T)
    x = torch.randn(B, T, d)
    layer = OrthonormalAttention(d)
    g = torch.randn_like(x)
    leaf = x.clone().requires_grad_()
    with torch.no_grad():
        S = _uta_t(*layer.factors(x)).contiguous()
    rho, exact = norm_bound(S), torch.linalg.matrix_norm(S.double(), 2)
    deg = chebyshev_degree(rho.clamp_min(2.0**-6), 2.0**-24)
    deg2 = chebyshev_degree(exact.clamp_min(2.0**-6), 2.0**-24)
    info = (f"T={T} d={d} B={B}: ||S||_2 median {exact.median():.1f} max {exact.max():.1f}; bound median "
            f"{rho.median():.1f}; degree median {int(deg.median())} max {int(deg.max())} (at ||S||_2: median "
            f"{int(deg2.median())} max {int(deg2.max())})")
    Sl = S.clone().requires_grad_()
    G = torch.randn_like(S)

    def fb(f):
        def run():
            leaf.grad = None
            f(leaf).backward(g)
        return run

    def fwd(f, *a):
        def run():
            with torch.no_grad():
                f(*a)
        return run

    def sfb(f):
        def run():
            Sl.grad = None
            f(Sl).backward(G)
        return run

    def dense(y):
        return K.exp_skew_action(_uta_t(*layer.factors(y)), y, method="dense", check=False)

    return {
        "sdpa f+b": fb(sdpa), "sdpa fwd": fwd(sdpa, x),
        "layer f+b (chebyshev)": fb(layer), "layer fwd (chebyshev)": fwd(layer, x),
        "layer f+b (dense)": fb(dense), "layer fwd (dense)": fwd(dense, x),
        "correlation + uta fwd": fwd(lambda y: _uta_t(*layer.factors(y)), x),
        "exp_skew fwd": fwd(lambda s: K.exp_skew(s, check=False), S),
        "exp_skew f+b": sfb(lambda s: K.exp_skew(s, check=False)),
        "matrix_exp fwd": fwd(torch.linalg.matrix_exp, S), "matrix_exp f+b": sfb(torch.linalg.matrix_exp),
        "one S @ x": fwd(torch.bmm, S, x),
    }, info


def main(argv=None) -> int:
    """Print the table of each case."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--cases", nargs="+", default=["16,4", "16,8", "64,4", "64,8"])
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, float32, B * T = {args.tokens}; times as multiples of SDPA f+b")
    for case in args.cases:
        T, d = (int(v) for v in case.split(","))
        fns, info = calls(T, d, args.tokens)
        print(info)
        times = {k: [] for k in fns}
        for _ in range(args.reps):  # alternating: every call once per round
            for k, f in fns.items():
                times[k].append(best(f, 1))
        ref = min(times["sdpa f+b"])
        for k, v in times.items():
            print(f"  {k:<24}{min(v) * 1e3:9.2f} ms {min(v) / ref:7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
