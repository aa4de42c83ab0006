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

import sympy as sp

from .evidence import Verdict
from .proof import validate

__all__ = ["CheckRecord", "Rendered", "portable", "default_jobs", "can_fork", "run_parallel"]


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


def portable(verdict: Verdict) -> Verdict:
    """``verdict`` with every derivation step's check replaced by its :class:`CheckRecord` (picklable), its sides,
    conclusion and facts :class:`Rendered`, and each derivation carrying the engine's report of it
    (``validated``: what :func:`geoattn.symbolic.proof.validate` returns for the copy, whose checks can no longer
    run)."""
    evidence = []
    for e in verdict.evidence:
        d = e.derivation
        if d is not None:
            report = validate(d)  # run (or remembered) while the checks are still there
            steps = [dataclasses.replace(s, lhs=_rendered(s.lhs), rhs=_rendered(s.rhs), check=None if s.check is None
                                         else CheckRecord(getattr(s.check, "name", "relation"))) for s in d.steps]
            facts = {k: {Rendered(a): Rendered(b) for a, b in v.items()} for k, v in d.facts.items()}
            d = dataclasses.replace(d, steps=steps, conclusion=_rendered(d.conclusion), facts=facts)
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
_CHECK: Callable | None = None


def _work(i: int) -> tuple[int, bytes | None]:
    verdict = _CHECK(_CLAIMS[i])
    try:
        return i, pickle.dumps(portable(verdict))
    except Exception:  # something in the evidence does not pickle: the caller checks this claim itself
        return i, None


def run_parallel(claims: list, check: Callable, *, jobs: int, progress: Callable | None = None) -> list[Verdict]:
    """Verdicts ``check(claim)`` of ``claims`` (in their order) computed by ``jobs`` forked workers (Note [claims
    in worker processes]); ``progress(i, n, claim, verdict)`` is called before and after each claim as its
    verdict arrives."""
    global _CLAIMS, _CHECK
    _CLAIMS, _CHECK = list(claims), check
    n = len(_CLAIMS)
    out: list = [None] * n
    pool = multiprocessing.get_context("fork").Pool(min(jobs, n))
    try:
        for i, blob in pool.imap_unordered(_work, range(n), chunksize=1):
            verdict = pickle.loads(blob) if blob is not None else check(_CLAIMS[i])
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
        _CLAIMS, _CHECK = [], None
    return out
