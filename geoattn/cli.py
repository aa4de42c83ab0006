"""The ``geoattn`` command.

``geoattn codegen [--check]``
    regenerate ``geoattn/kernels/_generated.py`` (torch), ``_native_gram.c`` (C) and
    ``_triton_<kernel>.py`` (Triton, one module per kernel) from the SymPy expressions and ``geoattn/_ledger_ids.py`` from the
    ledger; with ``--check``, exit 1 when a checked-in file is stale.

``geoattn prove [ID ...] [--claims PATH]``
    check claims (all by default), show progress, print a summary table;
    ``--json PATH`` writes the ledger; ``--claims PATH`` checks the claims that a Python file or
    module declares in ``CLAIMS`` instead of the ledger's, with the same table, JSON and exit codes.
    Exit status: 0 when every verdict was reached and equals the recorded expectation, 1 on a mismatch
    or an error, 2 on bad usage (an unknown id lists the known ones).
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="geoattn", description="Structure-preserving attention, machine-checked.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    prove = sub.add_parser("prove", help="check the claims of the ledger and print their verdicts")
    prove.add_argument("ids", nargs="*", metavar="ID", help="claim ids (default: all)")
    prove.add_argument("--family", help="only the claims of this family")
    prove.add_argument("--claims", metavar="PATH",
                       help="check the claims declared in CLAIMS by this Python file or module instead of the ledger")
    prove.add_argument("--json", metavar="PATH", help="write the ledger as JSON to PATH")
    prove.add_argument("--seed", type=int, default=0, help="random seed for points and counterexamples (default 0)")
    prove.add_argument(
        "--depth", type=int, default=1, help="raise explicit sizes and point counts (default 1: the quick run)"
    )
    prove.add_argument("--list", action="store_true", help="list the claim ids and exit")
    prove.add_argument("--where", action="store_true", help="print the file that declares each claim and exit")
    prove.add_argument("--verbose", "-v", action="store_true", help="print every derivation")
    prove.add_argument("--quiet", "-q", action="store_true", help="no progress lines")
    prove.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                       help="worker processes checking claims (default: the processors available, at most 8; 1: "
                       "in this process)")
    codegen = sub.add_parser("codegen", help="regenerate the torch kernels and the native C kernels from the SymPy "
                                               "expressions, and the ledger's claim ids")
    codegen.add_argument("--check", action="store_true",
                         help="exit 1 if the checked-in kernels or ledger ids are stale")
    codegen.add_argument("--path", help="the torch module's file (default: geoattn/kernels/_generated.py); "
                         "given, only that file is written")
    return parser


def _progress(stream, quiet: bool):
    def report(i, n, claim, verdict):
        if quiet:
            return
        if verdict is None:
            stream.write(f"[{i + 1:>{len(str(n))}}/{n}] {claim.id} ... ")
            stream.flush()
        else:
            flag = "" if verdict.level is claim.expected else f"  (expected {claim.expected.value})"
            stream.write(f"{verdict.level.value} ({verdict.seconds:.2f} s){flag}\n")
            stream.flush()

    return report


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its reaped children (the workers of ``--jobs``)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _writable(path: str) -> bool:
    """Whether ``path`` can be created or overwritten, checked before any claim runs."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder):
        return False
    if os.path.exists(path):
        return os.access(path, os.W_OK)
    return os.access(folder, os.W_OK)


def _unknown_id_message(claim_id: str, known: list[str]) -> str:
    """What ``geoattn prove`` says of an unknown id: the closest ids if any are close, else the ids of the family its
    prefix names, else the families; never the whole ledger (``geoattn prove --list`` prints it)."""
    close = difflib.get_close_matches(claim_id, known, n=3, cutoff=0.5)
    head = f"geoattn prove: Expected a known claim id. Got {claim_id!r}."
    if close:
        return f"{head} Did you mean {', '.join(repr(c) for c in close)}? ({len(known)} ids: geoattn prove --list)"
    prefix = claim_id.split(".")[0] + "."
    same = [k for k in known if k.startswith(prefix)]
    if same:
        return f"{head} The ids beginning with {prefix!r}:\n" + "\n".join(f"  {k}" for k in same)
    prefixes = sorted({k.split(".")[0] for k in known})
    return (f"{head} Ids begin with one of {', '.join(prefixes)} ({len(known)} ids: geoattn prove --list).")


def _user_claims(args):
    """The claims of ``--claims PATH`` (filtered by the ids and ``--family``), or None after printing why not."""
    from .symbolic.user import UserClaimsError, load_claims

    try:
        claims = load_claims(args.claims)
    except UserClaimsError as exc:
        print(f"geoattn prove: {exc}", file=sys.stderr)
        return None
    except Exception as exc:  # noqa: BLE001 - the user's file failed while loading: say so, exit 2
        print(f"geoattn prove: Expected {args.claims!r} to load. Got {exc!r} while importing it.", file=sys.stderr)
        return None
    known = [c.id for c in claims]
    unknown = [i for i in args.ids if i not in known]
    if unknown:
        print(f"geoattn prove: Expected ids declared in {args.claims} ({', '.join(known)}). Got {unknown}.",
              file=sys.stderr)
        return None
    fams = sorted({c.family for c in claims})
    if args.family is not None and args.family not in fams:
        print(f"geoattn prove: Expected --family in {fams}. Got {args.family!r}.", file=sys.stderr)
        return None
    if args.ids:
        claims = [c for c in claims if c.id in args.ids]
    if args.family is not None:
        claims = [c for c in claims if c.family == args.family]
    return claims


def _prove(args) -> int:
    from .symbolic import UnknownClaimError, all_claims, families, get_claim, run
    from .symbolic._parallel import can_fork, default_jobs
    from .symbolic.report import dump, format_derivation, format_table

    if args.depth < 1:
        print(f"geoattn prove: Expected --depth >= 1. Got {args.depth}.", file=sys.stderr)
        return 2
    if args.jobs is not None and args.jobs < 1:
        print(f"geoattn prove: Expected --jobs >= 1. Got {args.jobs}.", file=sys.stderr)
        return 2
    if args.claims is not None:
        claims = _user_claims(args)
        if claims is None:
            return 2
    else:
        if args.family is not None and args.family not in families():
            print(f"geoattn prove: Expected --family in {families()}. Got {args.family!r}.", file=sys.stderr)
            return 2
        try:
            claims = [get_claim(i) for i in args.ids] if args.ids else all_claims(args.family)
        except UnknownClaimError as exc:
            print(_unknown_id_message(exc.claim_id, exc.known), file=sys.stderr)
            return 2
    if args.json and not _writable(args.json):
        print(f"geoattn prove: Expected --json to name a file that can be written. Got {args.json!r} "
              f"(its folder does not exist or is not writable).", file=sys.stderr)
        return 2
    if args.ids and args.family:
        claims = [c for c in claims if c.family == args.family]
    if args.list:
        for c in claims:
            print(f"{c.id:48s} {c.family:18s} {c.title}")
        return 0
    if args.where:
        import importlib

        from .symbolic.ledger import declared_in

        if args.claims is not None:
            for c in claims:
                print(f"{c.id:48s} {args.claims}")
            return 0
        for c in claims:
            module = declared_in(c.id)
            path = os.path.relpath(importlib.import_module(module).__file__)
            print(f"{c.id:48s} {path}")
        return 0
    jobs = default_jobs() if args.jobs is None else args.jobs
    jobs = max(1, min(jobs, len(claims))) if can_fork() else 1  # the processes that really check
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    verdicts = run(claims, seed=args.seed, depth=args.depth, progress=_progress(sys.stderr, args.quiet), jobs=jobs)
    total, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
    if args.verbose:
        for c, v in zip(claims, verdicts):
            print(format_derivation(c, v))
            print()
    print(format_table(claims, verdicts))
    mismatches = [(c, v) for c, v in zip(claims, verdicts) if v.level is not c.expected]
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.level.value] = counts.get(v.level.value, 0) + 1
    levels = ("proved", "checked", "certified", "refuted", "error")
    summary = ", ".join(f"{k} {counts[k]}" for k in levels if k in counts)
    workers = f", {jobs} processes" if jobs > 1 else ""
    print(f"\n{len(claims)} claims in {total:.1f} s ({cpu:.1f} s of CPU{workers}): {summary}")
    if args.json:
        dump(claims, verdicts, args.json, seed=args.seed, depth=args.depth, seconds=total,
             cpu_seconds=cpu, jobs=jobs)
        print(f"ledger written to {args.json}")
    if mismatches:
        print(f"{len(mismatches)} verdict(s) differ from the recorded expectation:", file=sys.stderr)
        for c, v in mismatches:
            detail = f": {v.error.splitlines()[0]}" if v.error else ""
            print(f"  {c.id}: expected {c.expected.value}, got {v.level.value}{detail}", file=sys.stderr)
        return 1
    return 0


def _codegen(args) -> int:
    from . import codegen

    if args.check:
        fresh, diff = codegen.check(args.path)
        if fresh:
            print("geoattn codegen: kernels and ledger ids are up to date")
            return 0
        print("geoattn codegen: the checked-in generated files differ from fresh ones; run `geoattn codegen`")
        print(diff)
        return 1
    if args.path:  # the torch module alone, where asked: the checked-in files stay as they are
        path = codegen.write(args.path, native_path=False, triton_dir=False, ledger_path=False)
        print(f"geoattn codegen: wrote {path}")
        return 0
    path = codegen.write()
    print(f"geoattn codegen: wrote {path}, {codegen.native_target_path()}, the Triton modules "
          f"{os.path.dirname(path)}/_triton_*.py and {codegen.ledger_ids_target_path()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The ``geoattn`` command: parse ``argv`` (default: the process's) and run a subcommand; its exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "prove":
        return _prove(args)
    if args.command == "codegen":
        return _codegen(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
