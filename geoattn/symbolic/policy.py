r"""Evidence policies: the public way to declare how a claim is checked.

A :class:`Policy` names the identity a claim asserts (a :class:`~geoattn.symbolic.strategies.MatrixIdentity`)
and the stages that produce evidence for it: a counterexample search at random rational points, a
dimension-generic derivation, exact symbolic checks at explicit sizes, Schwartz--Zippel certification,
and any further evidence. :class:`Sizes` values say where each stage runs (:func:`grid`,
:func:`at_sizes`, :class:`Grows` for a range that grows with ``--depth``).

Every built-in claim is checked by a ``Policy``; a claim of one's own is declared the same way (docs
guide "Write your own claim").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import sympy as sp

from .algebra import NotInAlgebra
from .evidence import Derivation, Evidence, Level, ProofFailed
from .proof import validate
from .strategies import MatrixIdentity, certify, exact_evidence, search_counterexample

__all__ = ["Policy", "Sizes", "Grows", "grid", "at_sizes", "sizes", "NOWHERE", "prove_evidence"]


def prove_evidence(build: Callable[[], Derivation], method: str = "dimension-generic derivation") -> Evidence:
    """``proved`` evidence for the derivation ``build()``, validated by the engine.

    Parameters
    ----------
    build : callable
        returns the :class:`~geoattn.symbolic.proof.Derivation`.
    method : str
        how the evidence is described in the verdict table.

    Returns
    -------
    Evidence
        level ``proved``, with the derivation and the engine's count ``"n steps: k verified, m lemmas (...)"``.

    Raises
    ------
    ProofFailed
        when :func:`geoattn.symbolic.proof.validate` does not accept the derivation.
    """
    derivation = build().run()
    return Evidence(Level.PROVED, method, derivation=derivation, detail=validate(derivation).summary())


@dataclass(frozen=True)
class Grows:
    """An integer range ``lo..hi`` (inclusive) whose upper end grows with the run's depth.

    At depth 1 it is ``range(lo, hi + 1)``; at depth ``k`` the upper end is ``hi + k - 1``
    (:meth:`~geoattn.symbolic.claim.CheckContext.bound`).
    """

    lo: int
    hi: int

    def at(self, ctx) -> range:
        """The range at the depth of ``ctx``."""
        return range(self.lo, ctx.bound(self.hi) + 1)


@dataclass(frozen=True)
class Sizes:
    """Where a stage of a :class:`Policy` runs: explicit size dicts, or a grid of per-symbol values.

    Build it with :func:`grid` (cartesian product, smallest total first; a :class:`Grows` value
    grows with depth) or :func:`at_sizes` (the dicts as given, then the ``deep`` ones above depth 1).
    """

    fixed: tuple[dict, ...] = ()
    ranges: tuple[tuple[str, object], ...] = ()
    deep: tuple[dict, ...] = ()

    def at(self, ctx) -> list[dict]:
        """The size dicts at the depth of ``ctx``."""
        if not self.ranges:
            return [dict(s) for s in self.fixed + (self.deep if ctx.depth > 1 else ())]
        resolved = {k: (v.at(ctx) if isinstance(v, Grows) else v) for k, v in self.ranges}
        return sizes(**resolved)



def grid(**ranges) -> Sizes:
    """Every combination of the given values (a :class:`Grows` grows with depth).

    Examples
    --------
    >>> grid(d=[1, 2], T=[2]).at(type("Ctx", (), {"depth": 1})())
    [{'d': 1, 'T': 2}, {'d': 2, 'T': 2}]
    """
    return Sizes(ranges=tuple((k, v if isinstance(v, Grows) else tuple(v)) for k, v in ranges.items()))


def at_sizes(*dicts: dict, deep: Sequence[dict] = ()) -> Sizes:
    """Exactly these sizes, in this order; above depth 1 followed by the ``deep`` ones.

    Examples
    --------
    >>> at_sizes({"d": 1, "T": 2}, deep=[{"d": 2, "T": 3}]).at(type("Ctx", (), {"depth": 2})())
    [{'d': 1, 'T': 2}, {'d': 2, 'T': 3}]
    """
    return Sizes(fixed=tuple(dicts), deep=tuple(deep))


#: the empty :class:`Sizes`: a stage declared with it does not run
NOWHERE = Sizes()


# Note [evidence policy]
# Every claim's checker is a Policy value, declared beside the claim: which identity to evaluate,
# where to search for a counterexample (exact evaluation at random rational points), which
# derivation proves it, where to check the symbolic identity exactly, where to certify it
# (Schwartz--Zippel), and which independent evidence to add. The stages run in that order:
# a counterexample ends the run; an exact check runs only while the claim is unproved unless
# ``always_exact``; certification runs only while it is unproved and a degree bound is given.
# Nothing is decided by keyword defaults hidden in a helper: a stage that is not declared does
# not run.


@dataclass(frozen=True, kw_only=True)
class Policy:
    r"""The evidence policy of one claim: what to evaluate and where; calling it with a check context runs it.

    A claim's ``checker`` is usually a ``Policy``. It returns evidence only; the engine decides the verdict
    from it (:mod:`geoattn.symbolic.earn`): ``refuted`` needs an exactly nonzero residual, ``proved`` a
    derivation the engine validates itself, so no policy (and no user checker) can declare its own level.

    Parameters
    ----------
    identity : MatrixIdentity, optional
        the identity ``residual == 0`` that the search, exact and certification stages evaluate.
    search : Sizes
        sizes for exact evaluation at ``points`` random rational points; a nonzero residual is an exact
        counterexample, the verdict is ``refuted`` and no other stage runs.
    points : int or callable
        random points per search size, or a function of the check context.
    prove : callable, optional
        builds the dimension-generic :class:`~geoattn.symbolic.proof.Derivation` (``proved`` when the
        engine accepts it: every step checked from its sides and mutation-tested, or a registered lemma;
        the chain connected; the last step at the conclusion).
    exact : Sizes
        sizes for the exact symbolic identity (``checked``), run while the claim is unproved.
    exact_method : str
        how the exact stage is described.
    always_exact : bool
        run the exact stage even when proved.
    certify : Sizes
        sizes for certification at ``certify_points`` random integer points with the Schwartz--Zippel
        ``degree_bound`` (``certified``), run only while unproved.
    certify_points : int
        random integer points per certification size.
    degree_bound : callable, optional
        ``degree_bound(size) -> int``, a bound on the degree of the residual's numerator.
    certify_method : str
        how the certification stage is described.
    extra : tuple of callables
        further checkers ``f(ctx) -> Evidence | list[Evidence]`` whose evidence is appended.

    Notes
    -----
    The stages run in this order: search, prove, exact, certify, extra. See Note [evidence policy].

    Examples
    --------
    A false claim, "Cayley(A) is orthogonal for every A", refuted at the first random point:

    >>> import sympy as sp
    >>> from geoattn.symbolic import Claim, Level, MatrixIdentity, Policy, algebra, at_sizes
    >>> ident = MatrixIdentity(
    ...     "Cayley(A)^T Cayley(A) - I",
    ...     variables=lambda s: {"A": algebra.general("a", s["n"], s["n"])},
    ...     residual=lambda s, A: algebra.cayley(A).T * algebra.cayley(A) - sp.eye(s["n"]),
    ...     valid=lambda s, A: (sp.eye(s["n"]) + A).det() != 0,
    ... )
    >>> claim = Claim(id="mine.cayley_any", title="Cayley of any A", statement="Cayley(A) is orthogonal.",
    ...               latex=r"\mathrm{Cayley}(A)^T\mathrm{Cayley}(A) = I", source="a test", expected=Level.REFUTED,
    ...               checker=Policy(identity=ident, search=at_sizes({"n": 2})))
    >>> claim.check().level.value
    'refuted'
    """

    identity: MatrixIdentity | None = None
    search: Sizes = NOWHERE
    points: int | Callable[[object], int] = 3
    prove: Callable[[], Derivation] | None = None
    exact: Sizes = NOWHERE
    exact_method: str = "exact symbolic identity at explicit sizes"
    always_exact: bool = False
    certify: Sizes = NOWHERE
    certify_points: int = 6
    degree_bound: Callable[[dict], int] | None = None
    certify_method: str = "exact evaluation at random integer points"
    extra: tuple[Callable[[object], Evidence | list[Evidence]], ...] = ()

    def __call__(self, ctx) -> list[Evidence]:
        """The stages, then the ``extra`` evidence, at the depth and seed of ``ctx``."""
        evidence = self.run(ctx)
        if evidence and evidence[0].level is Level.REFUTED and len(evidence) == 1:
            return evidence
        for more in self.extra:
            got = more(ctx)
            evidence.extend(got if isinstance(got, list) else [got])
        return evidence

    def run(self, ctx) -> list[Evidence]:
        """The search, prove, exact and certify stages (without ``extra``)."""
        points = self.points(ctx) if callable(self.points) else self.points
        return _run_stages(
            ctx,
            ident=self.identity,
            random_sizes=self.search.at(ctx),
            points=points,
            prove=self.prove,
            exact_sizes=self.exact.at(ctx),
            exact_method=self.exact_method,
            certify_sizes=self.certify.at(ctx),
            certify_points=self.certify_points,
            degree_bound=self.degree_bound,
            certify_method=self.certify_method,
            always_exact=self.always_exact,
        )


def _run_stages(
    ctx,
    *,
    ident: MatrixIdentity | None,
    random_sizes: Sequence[dict],
    points: int,
    prove: Callable[[], Derivation] | None,
    exact_sizes: Sequence[dict],
    exact_method: str,
    certify_sizes: Sequence[dict],
    certify_points: int,
    degree_bound: Callable[[dict], int] | None,
    certify_method: str,
    always_exact: bool,
) -> list[Evidence]:
    """See Note [evidence policy]."""
    evidence: list[Evidence] = []
    if ident is not None and random_sizes:
        ce = search_counterexample(ident, list(random_sizes), seed=ctx.seed_for("search"), points=points)
        if ce is not None:
            return [Evidence(Level.REFUTED, "exact evaluation at random rational points", counterexample=ce)]
    proved = False
    failure = ""
    if prove is not None:
        try:
            ev = prove_evidence(prove)
            if ident is not None and random_sizes:
                ev.detail += (
                    f"; consistent with exact evaluation at {points} random rational points per size "
                    + "; ".join(",".join(f"{k}={v}" for k, v in s.items()) for s in random_sizes)
                )
            evidence.append(ev)
            proved = True
        except (ProofFailed, NotInAlgebra, sp.SympifyError, TypeError, ValueError) as exc:
            failure = f"derivation not accepted by the engine: {exc}"
    if ident is not None and exact_sizes and (always_exact or not proved):
        ev = exact_evidence(ident, list(exact_sizes), method=exact_method, seed=ctx.seed_for("exact"), detail=failure)
        evidence.append(ev)
        if ev.level is Level.REFUTED:
            return [ev]
    if ident is not None and certify_sizes and not proved and degree_bound is not None:
        ev = certify(
            ident,
            list(certify_sizes),
            seed=ctx.seed_for("certify"),
            points=certify_points,
            degree_bound=degree_bound,
            method=certify_method,
        )
        evidence.append(ev)
        if ev.level is Level.REFUTED:
            return [ev]
    if not evidence and failure:
        evidence.append(Evidence(Level.ERROR, "derivation", detail=failure))
    return evidence


def sizes(**ranges) -> list[dict]:
    """Cartesian product of size ranges, smallest total first.

    Examples
    --------
    >>> sizes(n=[2, 1], m=[1])
    [{'n': 1, 'm': 1}, {'n': 2, 'm': 1}]
    """
    import itertools

    keys = list(ranges)
    combos = [dict(zip(keys, vals)) for vals in itertools.product(*(ranges[k] for k in keys))]
    return sorted(combos, key=lambda s: (sum(v for v in s.values() if isinstance(v, int)), list(s.values())))


