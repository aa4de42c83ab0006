"""Text and JSON renderings of verdicts (used by ``geoattn prove`` and ``proofs/``)."""

from __future__ import annotations

import json
import platform
import sys
import textwrap
from typing import Iterable, TextIO

import sympy as sp

from .claim import Claim, run
from .ledger import all_claims
from .evidence import Level, Verdict
from .proof import validate

__all__ = [
    "short_source",
    "evidence_summary",
    "claim_record",
    "ledger_json",
    "format_table",
    "format_derivation",
    "print_family",
    "family_main",
]


def short_source(claim: Claim) -> str:
    """A short label of the claim's source for narrow tables: the page and commit of a GeometricMachineLearning.jl
    address, the arXiv id of a paper, ``fixes <id>`` for a corrected claim, else the source's first characters."""
    import re

    if claim.corrects:
        return f"fixes {claim.corrects}"
    pages = re.findall(r"GeometricMachineLearning\.jl/blob/([0-9a-f]{7})[0-9a-f]*/(?:[\w./-]*/)?([\w-]+)\.(?:md|jl)",
                       claim.source)
    papers = re.findall(r"arxiv\.org/abs/([\d.]+)", claim.source)
    labels = list(dict.fromkeys([f"GML.jl {name}@{sha}" for sha, name in pages] + [f"arXiv:{p}" for p in papers]))
    return "; ".join(labels) if labels else claim.source[:20]


def evidence_summary(verdict: Verdict) -> str:
    """One line: what backs the verdict."""
    if verdict.level is Level.ERROR:
        return f"ERROR: {(verdict.error or '').splitlines()[0] if verdict.error else ''}"
    parts = []
    for ev in sorted(verdict.evidence, key=lambda e: -e.level.rank):
        if ev.level is Level.PROVED:
            parts.append("derivation, " + validate(ev.derivation).summary() if ev.derivation else "derivation")
        elif ev.level is Level.CHECKED:
            parts.append(f"exact at {len(ev.sizes)} sizes up to {_max_size(ev.sizes)}")
        elif ev.level is Level.CERTIFIED:
            parts.append(
                f"{ev.points} pts/size at {len(ev.sizes)} sizes up to {_max_size(ev.sizes)}, "
                f"P<={_bound(ev.failure_bound)}"
            )
        elif ev.level is Level.REFUTED and ev.counterexample is not None:
            ce = ev.counterexample
            r = ce.residual
            shown = sp.sstr(r) if not isinstance(r, sp.MatrixBase) else f"|max|={ce.residual_float():.4g}"
            if len(shown) > 40:
                shown = f"~{ce.residual_float():.4g}"
            sizes = ",".join(f"{k}={v}" for k, v in ce.sizes.items())
            parts.append(f"{ce.residual_name} = {shown} at {sizes}")
    return "; ".join(parts)


def _max_size(sizes: list[dict]) -> str:
    if not sizes:
        return "-"
    keys = [k for k in sizes[0] if k != "degree_bound"]
    return ",".join(f"{k}={max(s[k] for s in sizes)}" for k in keys)


def _bound(b) -> str:
    from .evidence import _fmt_bound

    return _fmt_bound(b)


def claim_record(claim: Claim, verdict: Verdict) -> dict:
    """The machine-readable ledger entry of one claim."""
    strongest = verdict.strongest
    ce = verdict.counterexample
    return {
        "id": claim.id,
        "title": claim.title,
        "statement": claim.statement,
        "latex": claim.latex,
        "source": claim.source,
        "family": claim.family,
        "corrects": claim.corrects,
        "expected": claim.expected.value,
        "verdict": verdict.level.value,
        "matches_expected": verdict.level is claim.expected,
        "evidence_level": None if strongest is None else strongest.level.value,
        "method": None if strongest is None else strongest.method,
        "sizes": [] if strongest is None else strongest.sizes,
        "counterexample": None if ce is None else ce.to_json(),
        "seconds": round(verdict.seconds, 4),
        "error": verdict.error,
        "notes": claim.notes,
        "evidence": [e.to_json() for e in verdict.evidence],
        # the engine's account of the derivation: n_steps, n_verified, n_lemmas, lemma_names, summary, problems
        "derivation": None if verdict.derivation is None else validate(verdict.derivation).to_json(),
    }


def ledger_json(claims: list[Claim], verdicts: list[Verdict], *, seed: int, depth: int, seconds: float,
                cpu_seconds: float | None = None, jobs: int = 1) -> dict:
    """The JSON ledger: the run's settings and timings (``cpu_seconds`` counts every worker process of ``jobs``)
    and one record per claim (:func:`claim_record`)."""
    return {
        "geoattn_ledger": 1,
        "seed": seed,
        "depth": depth,
        "seconds": round(seconds, 3),
        "cpu_seconds": None if cpu_seconds is None else round(cpu_seconds, 3),
        "jobs": jobs,
        "python": platform.python_version(),
        "sympy": sp.__version__,
        "claims": [claim_record(c, v) for c, v in zip(claims, verdicts)],
    }


def format_table(claims: list[Claim], verdicts: list[Verdict], width: int = 160) -> str:
    """The verdict table of ``claims``: id, source, verdict, evidence summary and seconds, one row each."""
    rows = [("id", "source", "verdict", "evidence", "s")]
    for c, v in zip(claims, verdicts):
        mark = "" if v.level is c.expected else f" (expected {c.expected.value})"
        rows.append((c.id, short_source(c), v.level.value + mark, evidence_summary(v), f"{v.seconds:.2f}"))
    w0 = max(len(r[0]) for r in rows)
    w1 = min(max(len(r[1]) for r in rows), 44)
    w2 = max(len(r[2]) for r in rows)
    w4 = max(len(r[4]) for r in rows)
    w3 = max(20, width - w0 - w1 - w2 - w4 - 8)
    lines = []
    for idx, (a, b, c_, d_, e) in enumerate(rows):
        d_ = d_ if len(d_) <= w3 else d_[: w3 - 3] + "..."
        b = b if len(b) <= w1 else b[: w1 - 3] + "..."
        lines.append(f"{a:<{w0}}  {b:<{w1}}  {c_:<{w2}}  {d_:<{w3}}  {e:>{w4}}")
        if idx == 0:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


def format_derivation(claim: Claim, verdict: Verdict) -> str:
    """The readable account of one claim: statement, steps, verdict."""
    out = [f"== {claim.id}: {claim.title}", f"   source: {claim.source}"]
    out += textwrap.wrap(claim.statement, 100, initial_indent="   claim: ", subsequent_indent="          ")
    deriv = verdict.derivation
    if deriv is not None:
        for a in deriv.assumptions:
            out.append(f"   assume  {a}")
        for k, step in enumerate(deriv.steps, 1):
            mark = {True: "verified", False: "FAILED", None: f"lemma {step.lemma}"}[step.verified]
            out.append(f"   ({k}) {step.text()}")
            out.append(f"        [{step.rule}; {mark}]" + (f" {step.problem}" if step.problem else ""))
        out.append(f"   hence   {sp.sstr(deriv.conclusion)}" + (f"  ({deriv.remark})" if deriv.remark else ""))
        out.append(f"   engine: {validate(deriv).summary()}")
        for problem in validate(deriv).problems:
            out.append(f"   NOT A PROOF: {problem}")
    for ev in verdict.evidence:
        out.append(f"   {ev.level.value}: {ev.describe()}")
        if ev.detail:
            out += textwrap.wrap(ev.detail, 100, initial_indent="      ", subsequent_indent="      ")
        if ev.counterexample is not None:
            ce = ev.counterexample
            for name, value in ce.values.items():
                txt = sp.sstr(value) if isinstance(value, sp.Basic) else str(value)
                out.append(f"      {name} = {txt}")
            out.append(f"      {ce.residual_name} = {sp.sstr(ce.residual)}")
    if claim.notes:
        out += textwrap.wrap(claim.notes, 100, initial_indent="   note: ", subsequent_indent="         ")
    expected = "" if verdict.level is claim.expected else f"  (EXPECTED {claim.expected.value})"
    out.append(f"   VERDICT: {verdict.level.value}{expected}")
    if verdict.error:
        out.append("   " + verdict.error.replace("\n", "\n   "))
    return "\n".join(out)


def print_family(family: str, *, seed: int = 0, depth: int = 1, stream: TextIO | None = None) -> int:
    """Check and print every claim of ``family``; return 0 if all verdicts match."""
    stream = sys.stdout if stream is None else stream
    claims = all_claims(family)
    verdicts = run(claims, seed=seed, depth=depth)
    for c, v in zip(claims, verdicts):
        print(format_derivation(c, v), file=stream)
        print(file=stream)
    print(format_table(claims, verdicts), file=stream)
    return 0 if all(v.level is c.expected for c, v in zip(claims, verdicts)) else 1


def dump(claims: Iterable[Claim], verdicts: Iterable[Verdict], path: str, **meta) -> None:
    """Write the JSON ledger of ``claims`` and their ``verdicts`` to ``path`` (``meta``: see :func:`ledger_json`)."""
    with open(path, "w") as fh:
        json.dump(ledger_json(list(claims), list(verdicts), **meta), fh, indent=2)
        fh.write("\n")


def family_main(family: str, doc: str | None = None, argv: list[str] | None = None) -> int:
    """Entry point of the ``proofs/<family>.py`` scripts."""
    import argparse

    parser = argparse.ArgumentParser(description=(doc or family).strip().splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--depth", type=int, default=1, help="raise sizes and point counts (default 1)")
    args = parser.parse_args(argv)
    return print_family(family, seed=args.seed, depth=args.depth)
