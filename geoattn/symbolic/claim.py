"""Claims, the ledger that holds them, and the runner that computes verdicts."""

from __future__ import annotations

import dataclasses
import time
import traceback
import zlib
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..errors import UnknownClaimError
from .earn import earn
from .evidence import Evidence, Level, Verdict

__all__ = [
    "Claim",
    "CheckContext",
    "UnknownClaimError",
    "check",
    "corrected",
    "run",
]


@dataclass
class CheckContext:
    """What a checker may vary: the random seed and how deep to go.

    ``depth`` 1 is the default budget (the whole ledger in well under a
    minute); larger values raise the explicit sizes and the number of points.
    """

    seed: int = 0
    depth: int = 1
    claim_id: str = ""

    def seed_for(self, tag: str = "") -> int:
        """A seed derived from the run seed, the claim id and ``tag``."""
        return (self.seed * 1_000_003 + zlib.crc32(f"{self.claim_id}/{tag}".encode())) % (2**32)

    def bound(self, base: int) -> int:
        """A size bound that grows with ``depth``."""
        return base + self.depth - 1


@dataclass(kw_only=True)
class Claim:
    """A mathematical claim with a checker that computes its verdict.

    Parameters
    ----------
    id:
        stable identifier, e.g. ``"cayley.orthogonal"``.
    title:
        a few words for tables.
    statement:
        the claim as the source states it, in plain text.
    latex:
        the same statement in LaTeX.
    source:
        seed file and section, or ``"corrected form of <id>"``.
    family:
        the family it belongs to (``cayley``, ``vectorisation``, ...): set by
        the ledger from the table :data:`geoattn.symbolic.claims.FAMILIES`,
        not where the claim is declared.
    expected:
        the verdict recorded as a regression guard. The verdict itself is
        always computed by ``checker``; a mismatch makes ``geoattn prove``
        fail.
    checker:
        ``checker(ctx) -> list[Evidence]``.
    corrects:
        for a corrected claim, the id of the refuted claim it replaces.
    """

    id: str
    title: str
    statement: str
    latex: str
    expected: Level
    checker: Callable[[CheckContext], list[Evidence]] = field(repr=False)
    source: str = ""  # a corrected claim gets it from corrected(); the ledger requires one
    corrects: str | None = None
    notes: str = ""
    family: str = ""

    def check(self, seed: int = 0, depth: int = 1) -> Verdict:
        """Compute this claim's verdict (see :func:`check`)."""
        return check(self, CheckContext(seed=seed, depth=depth))


def corrected(original: Claim, claim: Claim, **changes) -> Claim:
    """``claim`` (with ``changes``) declared as the corrected form of ``original``: its ``source`` and ``corrects``
    are derived from ``original`` rather than repeated."""
    return dataclasses.replace(claim, source=f"corrected form of {original.id}", corrects=original.id, **changes)


def check(claim: Claim, ctx: CheckContext | None = None) -> Verdict:
    """Run ``claim``'s checker and turn its evidence into a :class:`Verdict`."""
    ctx = CheckContext() if ctx is None else ctx
    ctx = CheckContext(seed=ctx.seed, depth=ctx.depth, claim_id=claim.id)
    start = time.perf_counter()
    try:
        evidence = earn(list(claim.checker(ctx)))
    except Exception as exc:  # a crashing checker is a verdict of its own
        tb = traceback.format_exc(limit=4)
        return Verdict(claim.id, Level.ERROR, [], time.perf_counter() - start, error=f"{exc!r}\n{tb}")
    verdict = Verdict.from_evidence(claim.id, evidence, time.perf_counter() - start)
    if any(e.level is Level.ERROR for e in evidence) and verdict.level is not Level.REFUTED:
        errs = "; ".join(e.detail for e in evidence if e.level is Level.ERROR)
        verdict = Verdict(claim.id, Level.ERROR, evidence, verdict.seconds, error=errs)
    return verdict


def run(
    claims: Iterable[Claim],
    *,
    seed: int = 0,
    depth: int = 1,
    progress: Callable[[int, int, Claim, Verdict | None], None] | None = None,
    jobs: int = 1,
) -> list[Verdict]:
    """Check each claim; ``progress(i, n, claim, verdict)`` is called before (``verdict=None``) and after each
    claim. With ``jobs > 1`` (and where processes can be forked) ``jobs`` worker processes check the claims, one at
    a time each, and the verdicts come back in the claims' order (Note [claims in worker processes] in
    ``geoattn.symbolic._parallel``); each claim's verdict is the same either way."""
    claims = list(claims)
    if jobs > 1 and len(claims) > 1:
        from . import _parallel

        if _parallel.can_fork():
            return _parallel.run_parallel(claims, lambda c: check(c, CheckContext(seed=seed, depth=depth)),
                                          jobs=jobs, progress=progress)
    out = []
    for i, claim in enumerate(claims):
        if progress is not None:
            progress(i, len(claims), claim, None)
        verdict = check(claim, CheckContext(seed=seed, depth=depth))
        out.append(verdict)
        if progress is not None:
            progress(i, len(claims), claim, verdict)
    return out
