"""The time of ``geoattn prove`` against its budget: every claim of the ledger in under 60 s on 2 cores.

    python benchmarks/prove_budget.py [--quick] [--json PATH] [--top N]

Runs ``python -m geoattn prove -q --json`` as the README does (default ``--jobs``) and reports its wall time, the
CPU seconds of checking the claims shared among at most two workers (the budget is stated for 2 cores, so more
workers do not loosen it), the slowest claims and whether the budget is met. The time depends on the machine:
it is a benchmark, not a unit test. ``--quick`` checks one family (``cayley``) only, for the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

#: seconds of checking per core, at most two cores counted
BUDGET = 60.0


def run(quick: bool = False) -> dict:
    """One run of the prover: its JSON ledger's totals, the wall time and the budget's verdict."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ledger.json")
        cmd = [sys.executable, "-m", "geoattn", "prove", "-q", "--json", path] + (["--family", "cayley"] if quick
                                                                                   else [])
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"Expected geoattn prove to exit 0. Got {proc.returncode}: {proc.stderr[-2000:]}")
        with open(path) as fh:
            data = json.load(fh)
    per_core = data["cpu_seconds"] / min(data["jobs"], 2)
    claims = sorted(data["claims"], key=lambda c: -c.get("seconds", 0.0))
    return {"claims": len(data["claims"]), "jobs": data["jobs"], "wall_seconds": wall,
            "cpu_seconds": data["cpu_seconds"], "per_core_seconds": per_core, "budget": BUDGET,
            "met": per_core < BUDGET, "quick": quick, "machine": platform.processor() or platform.machine(),
            "slowest": [(c["id"], c.get("seconds", 0.0)) for c in claims]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one family only (the tests' run)")
    parser.add_argument("--json", help="write the result to PATH")
    parser.add_argument("--top", type=int, default=10, help="the slowest claims to print")
    args = parser.parse_args(argv)
    r = run(args.quick)
    print(f"geoattn prove{' --family cayley' if args.quick else ''}: {r['claims']} claims, {r['jobs']} worker(s), "
          f"wall {r['wall_seconds']:.1f} s, {r['cpu_seconds']:.1f} s of CPU; per core (at most 2 counted) "
          f"{r['per_core_seconds']:.1f} s; budget {BUDGET:.0f} s [{'met' if r['met'] else 'missed'}]"
          + (" (one family: not the budget's run)" if args.quick else ""))
    for cid, sec in r["slowest"][:args.top]:
        print(f"  {sec:7.2f} s  {cid}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(r, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
