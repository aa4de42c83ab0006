"""Checking claims in worker processes (``geoattn prove --jobs N``, :func:`geoattn.symbolic.run` with ``jobs``).

Note [claims in worker processes]
---------------------------------
Claims are independent: each is checked from its own seed (:class:`~geoattn.symbolic.claim.CheckContext`), so the
verdict of one does not depend on which process checks it or in what order. The workers are forked (they inherit
the claims, which hold closures that do not pickle) and take one claim at a time, so the long claims spread over
the processes. A verdict comes back pickled, with each derivation step's check replaced by a
:class:`CheckRecord` of its name: the check has run (``verified`` and ``problem`` record its outcome) and closures
do not pickle. A verdict that still cannot be pickled is checked again in the calling process. Where ``fork`` is
not a start method (Windows, and macOS by choice) the claims are checked in the calling process.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
from typing import Callable

from .evidence import Verdict
from .proof import validate

__all__ = ["CheckRecord", "portable", "default_jobs", "can_fork", "run_parallel"]


@dataclasses.dataclass(frozen=True)
class CheckRecord:
    """A derivation step's check after it ran, as a worker sends it back: its name (printed by the JSON ledger)."""

    name: str


def portable(verdict: Verdict) -> Verdict:
    """``verdict`` with every derivation step's check replaced by its :class:`CheckRecord` (picklable), and each
    derivation carrying the engine's report of it (``validated``: what :func:`geoattn.symbolic.proof.validate`
    returns for the copy, whose checks can no longer run)."""
    evidence = []
    for e in verdict.evidence:
        d = e.derivation
        if d is not None:
            report = validate(d)  # run (or remembered) while the checks are still there
            steps = [dataclasses.replace(s, check=None if s.check is None else
                                         CheckRecord(getattr(s.check, "name", "relation"))) for s in d.steps]
            d = dataclasses.replace(d, steps=steps)
            d.validated = report
        evidence.append(dataclasses.replace(e, derivation=d))
    return dataclasses.replace(verdict, evidence=evidence)


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


def _work(task: tuple[int, int, int]) -> tuple[int, bytes | None]:
    from .claim import CheckContext, check

    i, seed, depth = task
    verdict = check(_CLAIMS[i], CheckContext(seed=seed, depth=depth))
    try:
        return i, pickle.dumps(portable(verdict))
    except Exception:  # something in the evidence does not pickle: the caller checks this claim itself
        return i, None


def run_parallel(claims: list, *, seed: int, depth: int, jobs: int,
                 progress: Callable | None = None) -> list[Verdict]:
    """Verdicts of ``claims`` (in their order) checked by ``jobs`` forked workers (Note [claims in worker
    processes]); ``progress(i, n, claim, verdict)`` is called before and after each claim as its verdict arrives."""
    from .claim import CheckContext, check

    global _CLAIMS
    _CLAIMS = list(claims)
    n = len(_CLAIMS)
    out: list = [None] * n
    pool = multiprocessing.get_context("fork").Pool(min(jobs, n))
    try:
        for i, blob in pool.imap_unordered(_work, [(i, seed, depth) for i in range(n)], chunksize=1):
            verdict = pickle.loads(blob) if blob is not None else check(_CLAIMS[i], CheckContext(seed, depth))
            out[i] = verdict
            if progress is not None:
                progress(i, n, _CLAIMS[i], None)
                progress(i, n, _CLAIMS[i], verdict)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()  # reaped: the workers' CPU time counts in RUSAGE_CHILDREN
        _CLAIMS = []
    return out
