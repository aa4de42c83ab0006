"""Checking claims in worker processes (``geoattn prove --jobs N``, :func:`geoattn.symbolic.run` with ``jobs``).

Note [claims in worker processes]
---------------------------------
Claims are independent: each is checked from its own seed (:class:`~geoattn.symbolic.claim.CheckContext`), so the
verdict of one does not depend on which process checks it or in what order. The workers are forked (they inherit
the claims, which hold closures that do not pickle) and take one claim at a time, so the long claims spread over
the processes. A verdict comes back pickled, with each derivation step's check replaced by a
:class:`CheckRecord` of its name (the check has run: ``verified`` and ``problem`` record its outcome; closures do
not pickle) and its sides printed (:class:`Rendered`). The engine's report of each derivation comes back beside
the verdict and is registered in the calling process as the report of the copy (:func:`restore`); a derivation
carries nothing a checker could set to pass for validated. A claim whose verdict does not come back (it does not
pickle, its checker exits, its worker dies) is checked again in the calling process, as a run in one process would
check it. Where ``fork`` is not a start method (Windows, and macOS by choice) the claims are checked in the calling
process.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import signal
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

import sympy as sp

from .evidence import Verdict
from .proof import _REPORTS, validate

__all__ = ["CheckRecord", "Rendered", "portable", "restore", "default_jobs", "can_fork", "run_parallel"]


@dataclasses.dataclass(frozen=True)
class CheckRecord:
    """A derivation step's check after it ran, as a worker sends it back: its name (printed by the JSON ledger)."""

    name: str


class Rendered:
    """A side of a step, a conclusion or a fact as the worker printed it: SymPy rebuilds an unpickled expression
    by evaluating it, so ``Eq(x, x, evaluate=False)`` would come back as ``True`` and an unevaluated derivative as
    its value. SymPy's printers print it as it was (``_sympystr``, ``_latex``)."""

    def __init__(self, expr):
        self.text, self.tex = sp.sstr(expr), sp.latex(expr)

    def _sympystr(self, printer) -> str:
        return self.text

    def _latex(self, printer) -> str:
        return self.tex

    def __str__(self) -> str:
        return self.text


def _rendered(obj):
    return obj if isinstance(obj, str) else Rendered(obj)


def portable(verdict: Verdict) -> tuple[Verdict, list]:
    """``verdict`` with every derivation step's check replaced by its :class:`CheckRecord` (picklable) and its
    sides, conclusion and facts :class:`Rendered`; and, per evidence, the engine's report of its derivation (what
    :func:`geoattn.symbolic.proof.validate` returned while the checks could still run; None without one). The
    caller registers those reports for the copies (:func:`restore`): a copy's checks can no longer run."""
    evidence, reports = [], []
    for e in verdict.evidence:
        d, report = e.derivation, None
        if d is not None:
            report = validate(d)  # run (or remembered) while the checks are still there
            steps = [dataclasses.replace(s, lhs=_rendered(s.lhs), rhs=_rendered(s.rhs), check=None if s.check is None
                                         else CheckRecord(getattr(s.check, "name", "relation"))) for s in d.steps]
            facts = {k: {Rendered(a): Rendered(b) for a, b in v.items()} for k, v in d.facts.items()}
            d = dataclasses.replace(d, steps=steps, conclusion=_rendered(d.conclusion), facts=facts)
        evidence.append(dataclasses.replace(e, derivation=d))
        reports.append(report)
    return dataclasses.replace(verdict, evidence=evidence), reports


def restore(verdict: Verdict, reports: list) -> Verdict:
    """Register, in this process, the worker's report of each derivation of ``verdict`` (see :func:`portable`)."""
    for e, report in zip(verdict.evidence, reports):
        if e.derivation is not None and report is not None:
            _REPORTS[e.derivation] = report
    return verdict


def default_jobs() -> int:
    """The processors this process may run on (at most 8): the default of ``geoattn prove --jobs``."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(8, n))


def can_fork() -> bool:
    """Whether worker processes can be forked here (Linux); elsewhere claims are checked in this process."""
    import sys

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


_CLAIMS: list = []
_CHECK: Callable | None = None


def _quiet_worker() -> None:
    """Workers leave Ctrl-C to the caller, which stops them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _work(i: int) -> tuple[int, bytes | None]:
    try:
        return i, pickle.dumps(portable(_CHECK(_CLAIMS[i])))
    except BaseException:  # evidence that does not pickle, or a checker that exits: the caller checks it itself
        return i, None


def run_parallel(claims: list, check: Callable, *, jobs: int, progress: Callable | None = None) -> list[Verdict]:
    """Verdicts ``check(claim)`` of ``claims`` (in their order) computed by ``jobs`` forked workers (Note [claims
    in worker processes]); ``progress(i, n, claim, verdict)`` is called before and after each claim as its
    verdict arrives. A claim whose verdict does not come back (it does not pickle or unpickle, its checker
    exits, or its worker dies) is checked again here, as a run in one process would check it."""
    global _CLAIMS, _CHECK
    _CLAIMS, _CHECK = list(claims), check
    n = len(_CLAIMS)
    out: list = [None] * n

    def settle(i: int, blob: bytes | None) -> None:
        verdict = None
        if blob is not None:
            try:
                verdict = restore(*pickle.loads(blob))
            except Exception:
                verdict = None
        out[i] = verdict if verdict is not None else check(_CLAIMS[i])
        if progress is not None:
            progress(i, n, _CLAIMS[i], None)
            progress(i, n, _CLAIMS[i], out[i])

    pool = ProcessPoolExecutor(min(jobs, n), mp_context=multiprocessing.get_context("fork"),
                               initializer=_quiet_worker)
    try:
        futures = [pool.submit(_work, i) for i in range(n)]
        try:
            for future in as_completed(futures):
                settle(*future.result())
        except BrokenProcessPool:  # a worker died: the claims without a verdict are checked here
            for i in range(n):
                if out[i] is None:
                    settle(i, None)
    except BaseException:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)  # reaped: the workers' CPU time counts in RUSAGE_CHILDREN
        _CLAIMS, _CHECK = [], None
    return out
