"""Checking strategies shared by the claims.

A claim that is an identity ``residual(X) == 0`` over structured matrices
``X`` is described by a :class:`MatrixIdentity`. The strategies here turn it
into evidence:

* :func:`search_counterexample` evaluates the residual exactly at random
  rational points; a nonzero value is a rigorous counterexample;
* :func:`exact_check` evaluates it with symbolic entries at each explicit size
  and simplifies to zero (level ``checked``);
* :func:`certify` evaluates it at random integer points drawn from a large set
  and bounds the chance of a false pass by Schwartz--Zippel (level
  ``certified``).

Note [Schwartz--Zippel]
-----------------------
If ``P`` is a nonzero polynomial of total degree at most ``D`` and each
variable is drawn independently and uniformly from a finite set ``S``, then
``Pr[P(x) = 0] <= D/|S|``. A rational residual ``N/Q`` is zero exactly where
its numerator ``N`` is, so with ``k`` independent points the probability that
a nonzero residual vanishes at all of them is at most ``(D/|S|)^k``, where
``D`` bounds the degree of ``N``. Every certified claim states its own ``D``
(derived in its checker) and points whose denominator vanishes are redrawn
(the bound then uses ``D`` + degree of the denominator, which each claim's
degree bound already includes).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable

import sympy as sp

from .algebra import free_symbols, is_zero
from .evidence import Counterexample, Evidence, Level

__all__ = [
    "MatrixIdentity",
    "small_rational",
    "random_point",
    "search_counterexample",
    "exact_check",
    "certify",
    "CERTIFY_SET_SIZE",
]

#: size of the integer set S = {-2^20, ..., 2^20} used for certification
CERTIFY_HALF_WIDTH = 2**20
CERTIFY_SET_SIZE = 2 * CERTIFY_HALF_WIDTH + 1


@dataclass
class MatrixIdentity:
    """The statement ``residual(size, **variables) == 0``.

    ``variables(size)`` returns the structured symbolic matrices of the claim
    at an explicit ``size`` (a dict such as ``{"d": 2, "T": 3}``); their free
    symbols are the quantities the claim ranges over. ``residual`` computes the
    quantity that must vanish; it is called with symbolic matrices for exact
    checks and with rational ones for random points. ``valid`` (optional)
    rejects points outside the claim's domain (e.g. singular ``I + A``);
    ``project`` (optional) maps a random point to the point actually used
    (or ``None`` to redraw), so a stored counterexample is exactly the point
    that was evaluated.
    """

    def draw(self, size, mats, syms, rng, *, large: bool = False) -> dict | None:
        values = random_point(mats, syms, rng, large=large)
        if self.project is not None:
            values = self.project(size, **values)
            if values is None:
                return None
        if self.valid is not None and not self.valid(size, **values):
            return None
        return values

    name: str
    variables: Callable[[dict], dict[str, sp.Matrix]]
    residual: Callable[..., object]
    valid: Callable[..., bool] | None = None
    project: Callable[..., dict | None] | None = None

    def symbols(self, size: dict) -> tuple[dict[str, sp.Matrix], list[sp.Symbol]]:
        mats = self.variables(size)
        return mats, free_symbols(mats.values())

    def evaluate(self, size: dict, values: dict[str, sp.Matrix]):
        return self.residual(size, **values)


def small_rational(rng: random.Random, num: int = 9, den: int = 9) -> sp.Rational:
    """A random rational ``p/q`` with ``|p| <= num`` and ``1 <= q <= den``."""
    return sp.Rational(rng.randint(-num, num), rng.randint(1, den))


def random_point(
    mats: dict[str, sp.Matrix],
    syms: list[sp.Symbol],
    rng: random.Random,
    *,
    large: bool = False,
) -> dict[str, sp.Matrix]:
    if large:
        sub = {s: sp.Integer(rng.randint(-CERTIFY_HALF_WIDTH, CERTIFY_HALF_WIDTH)) for s in syms}
    else:
        sub = {s: small_rational(rng) for s in syms}
    return {k: (m.xreplace(sub) if hasattr(m, "xreplace") else m) for k, m in mats.items()}


def _nonzero(res) -> bool:
    if isinstance(res, sp.MatrixBase):
        return any(_nonzero(x) for x in res)
    res = sp.sympify(res)
    if res.free_symbols:
        raise ValueError(f"residual still has free symbols: {res.free_symbols}")
    if res.is_Rational:
        return res != 0
    return sp.simplify(res) != 0


def search_counterexample(
    ident: MatrixIdentity,
    sizes: list[dict],
    *,
    seed: int,
    points: int = 4,
    description: str = "",
) -> Counterexample | None:
    """Exact evaluation at ``points`` random rational points per size.

    The random generator is ``random.Random(seed)``, so a counterexample is
    reproduced by calling again with the same seed.
    """
    rng = random.Random(seed)
    for size in sizes:
        mats, syms = ident.symbols(size)
        tries = 0
        done = 0
        while done < points and tries < 10 * points:
            tries += 1
            values = ident.draw(size, mats, syms, rng)
            if values is None:
                continue
            done += 1
            res = ident.evaluate(size, values)
            if _nonzero(res):
                return Counterexample(
                    seed=seed,
                    sizes=dict(size),
                    values=values,
                    residual_name=ident.name,
                    residual=res,
                    description=description,
                )
    return None


def exact_check(ident: MatrixIdentity, sizes: list[dict], *, simplify: Callable | None = None) -> tuple[bool, list[dict]]:
    """Symbolic residual at each size; returns (all zero, sizes checked)."""
    checked = []
    for size in sizes:
        mats, _ = ident.symbols(size)
        res = ident.evaluate(size, mats)
        ok = simplify(res) if simplify is not None else is_zero(res)
        if not ok:
            return False, checked
        checked.append(dict(size))
    return True, checked


def exact_evidence(
    ident: MatrixIdentity,
    sizes: list[dict],
    *,
    method: str,
    seed: int,
    detail: str = "",
) -> Evidence:
    """``checked`` evidence, or ``refuted`` with a rational counterexample.

    If the symbolic residual is not identically zero at some size, random
    rational points at that size are searched for an exact counterexample (a
    nonzero polynomial identity fails at almost every point).
    """
    ok, checked = exact_check(ident, sizes)
    if ok:
        return Evidence(Level.CHECKED, method, sizes=checked, detail=detail)
    bad = [s for s in sizes if s not in checked][:1]
    ce = search_counterexample(ident, bad, seed=seed, points=20)
    if ce is None:
        return Evidence(
            Level.ERROR,
            method,
            sizes=bad,
            detail="symbolic residual nonzero but no rational counterexample found",
        )
    return Evidence(Level.REFUTED, "exact counterexample after failed symbolic check", counterexample=ce)


def certify(
    ident: MatrixIdentity,
    sizes: list[dict],
    *,
    seed: int,
    points: int,
    degree_bound: Callable[[dict], int],
    method: str,
    time_limit: float | None = None,
) -> Evidence:
    """Random large-integer points with a Schwartz--Zippel bound.

    Returns ``certified`` evidence whose ``failure_bound`` is the largest of
    the per-size bounds ``(D/|S|)^points``, or ``refuted`` with the point
    (an exact counterexample) when the residual is nonzero somewhere.
    """
    rng = random.Random(seed)
    start = time.perf_counter()
    worst = sp.Integer(0)
    done_sizes = []
    for size in sizes:
        if time_limit is not None and done_sizes and time.perf_counter() - start > time_limit:
            break
        mats, syms = ident.symbols(size)
        deg = degree_bound(size)
        ok_points = 0
        draws = 0
        while ok_points < points:
            draws += 1
            if draws > 10 * points:
                return Evidence(Level.ERROR, method, sizes=[size], detail="too many points outside the domain")
            values = ident.draw(size, mats, syms, rng, large=True)
            if values is None:
                continue
            res = ident.evaluate(size, values)
            if _nonzero(res):
                ce = Counterexample(seed, dict(size), values, ident.name, res, "large-integer point")
                return Evidence(Level.REFUTED, method, sizes=[size], counterexample=ce)
            ok_points += 1
        bound = (sp.Rational(deg, CERTIFY_SET_SIZE)) ** points
        worst = max(worst, bound)
        done_sizes.append({**size, "degree_bound": deg})
    return Evidence(
        Level.CERTIFIED,
        method,
        sizes=done_sizes,
        points=points,
        failure_bound=worst,
        detail=f"integers uniform in [-2^20, 2^20] (|S| = {CERTIFY_SET_SIZE}); "
        "per size, P(false pass) <= (D/|S|)^points",
    )
