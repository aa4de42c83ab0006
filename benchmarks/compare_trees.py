"""Two checkouts of geoattn timed on the same cases, alternately, in one run.

    python benchmarks/compare_trees.py BASE NEW [--tokens N] [--rounds N] [--reps N] [--threads N] [--quick]
                                       [--json PATH]

``BASE`` and ``NEW`` are the roots of two checkouts (e.g. a ``git worktree`` of an older commit and
this one). Each round starts one child process per checkout, base first then new, each timing every
case of :data:`CASES` (the median of ``--reps`` calls after a warm-up); the rounds alternate so that
drift of the machine affects both alike. A case's figure is the median over rounds of its time, and the
ratio new / base of those medians is reported: below 1 the new checkout is faster.

The cases call public functions present in both checkouts (``geoattn.kernels.vp_attention``,
``cayley``, ``exp_skew``, the layers of ``geoattn.nn``) at unit-normal inputs and default-initialised
layers, forward and backward of ``out.sum()``, float32, one thread by default; every case holds
``--tokens`` tokens (B * T, default 16,384).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

#: (name, T, code): the code defines ``run()``, one timed call, from ``torch``, ``K`` (kernels), ``nn``, ``skew`` and
#: the batch size ``B`` (``--tokens`` divided by ``T``)
CASES: list[tuple[str, int, str]] = [
    ("vp_attention cayley d=3", 16,
     "x = torch.randn(B, 16, 3, requires_grad=True); A = skew(3)\n"
     "def run(): K.vp_attention(x, A).sum().backward()"),
    ("vp_attention cayley d=4", 64,
     "x = torch.randn(B, 64, 4, requires_grad=True); A = skew(4)\n"
     "def run(): K.vp_attention(x, A).sum().backward()"),
    ("vp_attention cayley d=8", 64,
     "x = torch.randn(B, 64, 8, requires_grad=True); A = skew(8)\n"
     "def run(): K.vp_attention(x, A).sum().backward()"),
    ("vp_attention exp d=4", 16,
     "x = torch.randn(B, 16, 4, requires_grad=True); A = skew(4)\n"
     "def run(): K.vp_attention(x, A, activation='exp').sum().backward()"),
    ("cayley scale 0.1", 8,
     "C = (0.1 * skew(8, B)).requires_grad_()\n"
     "def run(): K.cayley(C).sum().backward()"),
    ("exp_skew", 8,
     "C = skew(8, B).requires_grad_()\n"
     "def run(): K.exp_skew(C).sum().backward()"),
    ("VolumePreservingAttention(4)", 64,
     "layer = nn.VolumePreservingAttention(4); x = torch.randn(B, 64, 4, requires_grad=True)\n"
     "def run(): layer(x).sum().backward()"),
    ("SymplecticAttention(4)", 16,
     "layer = nn.SymplecticAttention(4); x = torch.randn(B, 16, 4, requires_grad=True)\n"
     "def run(): layer(x).sum().backward()"),
    ("LinearSymplecticAttention(16) d=4", 16,
     "layer = nn.LinearSymplecticAttention(16); x = torch.randn(B, 16, 4, requires_grad=True)\n"
     "def run(): layer(x).sum().backward()"),
]


def cases_at(tokens: int, cases=None) -> list[tuple[str, str]]:
    """The cases with ``B = tokens // T`` (at least 1): ``(name with T and B, code)``."""
    out = []
    for name, T, code in cases if cases is not None else CASES:
        B = max(1, tokens // T)
        out.append((f"{name} T={T} B={B}", f"B = {B}\n" + code))
    return out


_CHILD = r"""
import json, statistics, sys, time
import torch
torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
from geoattn import kernels as K, nn
def skew(d, *batch):
    m = torch.randn(*batch, d, d)
    return m - m.mT
reps = int(sys.argv[2])
out = {}
for name, code in json.loads(sys.argv[3]):
    scope = {"torch": torch, "K": K, "nn": nn, "skew": skew}
    exec(code, scope)
    run = scope["run"]
    run()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    out[name] = statistics.median(times)
print(json.dumps(out))
"""


def time_tree(root: str, cases: list, threads: int, reps: int) -> dict[str, float]:
    """Seconds per case (median of ``reps`` calls) with the checkout at ``root`` first on the path."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(threads), str(reps), json.dumps(cases)],
                          env=env, capture_output=True, text=True, cwd=os.path.abspath(root), check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"Expected the cases to run in {root}. Got exit {proc.returncode}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(base: str, new: str, cases: list, rounds: int, reps: int, threads: int) -> list[dict]:
    """One row per case: the median over rounds of each checkout's time and their ratio new / base."""
    runs = {"base": [], "new": []}
    for r in range(rounds):
        for label, root in (("base", base), ("new", new)):
            runs[label].append(time_tree(root, cases, threads, reps))
        print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    rows = []
    for name, _ in cases:
        tb = statistics.median(run[name] for run in runs["base"])
        tn = statistics.median(run[name] for run in runs["new"])
        rows.append({"case": name, "base_ms": 1e3 * tb, "new_ms": 1e3 * tn, "ratio": tn / tb})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=16384, help="B * T of every case (default 16,384)")
    parser.add_argument("--quick", action="store_true", help="one round, two repetitions, the first two cases")
    parser.add_argument("--json", help="write the rows to PATH")
    args = parser.parse_args(argv)
    cases, rounds, reps = cases_at(args.tokens), args.rounds, args.reps
    if args.quick:
        cases, rounds, reps = cases[:2], 1, 2
    rows = compare(args.base, args.new, cases, rounds, reps, args.threads)
    print(f"{'case':48s} {'base ms':>9s} {'new ms':>9s} {'new/base':>9s}   ({args.threads} thread(s), "
          f"{rounds} rounds x {reps} reps)")
    for r in rows:
        print(f"{r['case']:48s} {r['base_ms']:9.2f} {r['new_ms']:9.2f} {r['ratio']:9.3f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"threads": args.threads, "tokens": args.tokens, "rounds": rounds, "reps": reps, "rows": rows},
                      fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
