"""Exact evaluation for the low-rank claims: orthonormal rational points, chain-rule references by exact
dual numbers, and the Taylor polynomials that stand in for ``exp``."""

from __future__ import annotations

from typing import Callable

import sympy as sp
from sympy.matrices.expressions import MatrixSymbol

from .. import algebra as alg
from .. import expressions as ex
from ..proof import Check
from ..evidence import Evidence, Level
from ..strategies import MatrixIdentity, search_counterexample
from ._common import Policy, at_sizes, run_bindings
from ._free_algebra import ORTHONORMAL, nc_equal

T, d, k = ex.T, ex.d, ex.k
x, A, Gy = ex.x, ex.A, ex.Gy
Qf, Rf, Sd, Wd = ex.Qf, ex.Rf, ex.Sd, ex.Wd
I_k = ex.I_k
Lam = MatrixSymbol("Lam", T, T)
Cbar = MatrixSymbol("Cbar", T, T)

SOURCE = "kernel {} (geoattn.symbolic.expressions, Note [low-rank form])"


# ---------------------------------------------------------------------------
# explicit points: orthonormal Q, bindings, references
# ---------------------------------------------------------------------------


def _sizes(size: dict) -> dict:
    return {T: size["T"], d: size["d"], k: size["k"]}


def _orthonormal(Km: sp.Matrix, kk: int) -> sp.Matrix:
    """The first ``kk`` columns of Cayley(K) for skew ``K``: exactly orthonormal (rational if ``K`` is)."""
    return alg.cayley(Km)[:, :kk]


def _project(size: dict, **v) -> dict:
    """Replace the skew ``K`` by ``Q`` and zero the rows of ``R`` from ``size["r"]`` on (rank-deficient ``R``)."""
    out = dict(v)
    out["Q"] = _orthonormal(out.pop("K"), size["k"])
    rank = size.get("r", size["k"])
    out["R"] = sp.Matrix(size["k"], size["d"], lambda i, j: out["R"][i, j] if i < rank else 0)
    return out


def _q_of(size: dict, Q=None, K=None) -> sp.Matrix:
    return Q if Q is not None else _orthonormal(K, size["k"])


def _skew_part(m: sp.Matrix) -> sp.Matrix:
    return (m - m.T) / 2


def _vec(*mats) -> sp.Matrix:
    return sp.Matrix.vstack(*[alg.vec_rows(m) for m in mats])


def _cancel(m: sp.Matrix) -> sp.Matrix:
    return m.applyfunc(lambda e: sp.cancel(sp.together(e)) if e.free_symbols else e)


def kernel_small_factors(Rm, Am, size, W_of: Callable[[sp.Matrix], sp.Matrix] | None = None):
    """The small factors of the low-rank form as the kernels compute them.

    Parameters
    ----------
    Rm, Am:
        explicit ``k x d`` and ``d x d`` matrices.
    size:
        the sizes ``{"T", "k", "d"}``.
    W_of:
        ``S -> W`` in place of the kernel cayley_minus_identity (e.g. ``p(S) - I``).

    Returns
    -------
    tuple
        ``S`` (kernel vp_lowrank_skew) and ``W``.
    """
    n = _sizes(size)
    S_ = run_bindings(ex.LOWRANK_S, {Rf: Rm, A: Am}, n)["S"]
    W_ = ex.evaluate(ex.CAYLEY_MINUS_I, {Sd: S_}, n) if W_of is None else W_of(S_)
    return S_, W_


def chain_rule_gradient(xm, Am, Gm, lam, Cb) -> tuple[sp.Matrix, sp.Matrix]:
    r"""``(x̄, Ā)`` of :math:`\langle\bar y, \Lambda^Tx\rangle`, :math:`\Lambda = f(xAx^T)`, from
    :math:`\Lambda` and :math:`\bar C`: :math:`\bar x = \Lambda\bar y + \bar CxA^T + \bar C^TxA`,
    :math:`\bar A = \mathrm{skew}(x^T\bar Cx)`."""
    return lam * Gm + Cb * xm * Am.T + Cb.T * xm * Am, _skew_part(xm.T * Cb * xm)


def cayley_chain_reference(xm, Am, Gm):
    r"""The chain rule of proved pieces for the Cayley activation, in ``T x T`` form:
    :math:`\Lambda = \mathrm{Cayley}(xAx^T)`, :math:`\bar\Lambda = x\bar y^T`,
    :math:`\bar C = -\tfrac12(I + \Lambda)^T\bar\Lambda(I + \Lambda)^T` (``cayley.vjp``)."""
    e = sp.eye(xm.rows)
    lam = alg.cayley(xm * Am * xm.T)
    Cb = -sp.Rational(1, 2) * (e + lam).T * (xm * Gm.T) * (e + lam).T
    return chain_rule_gradient(xm, Am, Gm, lam, Cb)


def dual_gradient(xm, Am, Gm, f: Callable) -> tuple[sp.Matrix, sp.Matrix]:
    r"""``(x̄, skew(Ā))`` of :math:`\langle\bar y, f(xAx^T)^Tx\rangle` from exact Jacobians (dual numbers),
    independent of any chain-rule formula. ``f`` maps a ``T x T`` matrix (or a
    :class:`~geoattn.symbolic.algebra.Dual`) to one."""
    Tn, dn = xm.shape
    gv = alg.vec_rows(Gm)
    jx = alg.jacobian_rows(lambda z: f(z * Am * z.T).T * z, xm)
    ja = alg.jacobian_rows(lambda a: f(xm * a * xm.T).T * xm, Am)
    gx = alg.unvec_rows(jx.T * gv, Tn, dn)
    gA = alg.unvec_rows(ja.T * gv, dn, dn)
    return gx, _skew_part(gA)


def _taylor_coeffs(m: int) -> list[sp.Rational]:
    return [1 / sp.factorial(j) for j in range(m + 1)]


def _poly(coeffs, X):
    """``sum_j a_j X^j`` for an explicit matrix or a :class:`~geoattn.symbolic.algebra.Dual`."""
    out = sp.eye(X.rows) * coeffs[0]
    P = None
    for a in coeffs[1:]:
        P = X if P is None else P * X
        out = out + P * a
    return out


def _poly_frechet(coeffs, X, E):
    """``L_p(X, E) = sum_j a_j sum_{i<j} X^i E X^{j-1-i}`` for explicit matrices."""
    pw = [sp.eye(X.rows)]
    for _ in range(len(coeffs)):
        pw.append(pw[-1] * X)
    out = sp.zeros(E.rows, E.cols)
    for j, a in enumerate(coeffs):
        for i in range(j):
            out += a * pw[i] * E * pw[j - 1 - i]
    return out


def _poly_phi(coeffs, X):
    """``((p(z) - p(0))/z)(X) = sum_{j>=1} a_j X^{j-1}``, the polynomial analogue of phi."""
    return _poly(list(coeffs[1:]), X)



def _tokens_of(word) -> tuple | None:
    """The generators of a monomial ``word`` (a product of noncommutative symbols, coefficient 1), else ``None``."""
    c, ncs = sp.sympify(word).args_cnc()
    if c or len(ncs) < 2 or not all(f.is_Symbol for f in ncs):
        return None
    return tuple(ncs)


def nc_rules(name: str, subs=(), rules=ORTHONORMAL, facts: tuple[str, ...] | None = ()) -> Check:
    r"""Equality in the free algebra (Note [free-algebra reduction]) after substitutions and rewriting.

    Parameters
    ----------
    name:
        what the check uses, as shown.
    subs:
        ``(old, new)`` pairs of the check itself (earlier steps: ``C^T -> QS^TQ^T``, ``S^T -> -S``); with the
        named ``facts`` of the derivation they are applied to both sides. A pair whose ``old`` is a product of
        generators (``S W^T``) becomes a rewriting rule ``word -> new``; a generator is replaced everywhere.
    rules:
        the rewriting rules besides those (default: ``Q^T Q -> 1``).
    facts:
        names of the derivation's facts used (``None``: all).

    Returns
    -------
    Check
        accepts when the two sides reduce to the same normal form. Every rule is an equality the derivation
        has shown or assumed, so a reduction to zero proves the step whether or not the rules are confluent.
    """

    def decide(lhs, rhs, pairs):
        words, repl = list(rules), {}
        for old, new in pairs:
            toks = _tokens_of(old)
            if toks is None:
                repl[old] = new
            else:
                words.append((toks, new))
        sides = [sp.sympify(lhs), sp.sympify(rhs)]
        for _ in range(4):
            sides = [s.xreplace(repl) for s in sides]
        return nc_equal(sides[0], sides[1], tuple(words))

    return Check(f"free algebra modulo Q^T Q = I with {name}", decide, facts, tuple(subs))


# ---------------------------------------------------------------------------
# the backward passes: shared pieces
# ---------------------------------------------------------------------------


def reference_dual_evidence(ctx, f: Callable, reference: Callable, size: dict, *, what: str) -> Evidence | None:
    """Confirm a ``T x T`` chain-rule reference against exact dual-number Jacobians at one rational point.

    Parameters
    ----------
    ctx:
        the :class:`~geoattn.symbolic.claim.CheckContext` (its seed picks the point).
    f:
        the activation on ``T x T`` matrices (and :class:`~geoattn.symbolic.algebra.Dual`).
    reference:
        ``reference(x, A, Gy) -> (gx, gA)``, the chain rule to confirm.
    size:
        ``{"T", "k", "d", "r"}``; the point is ``x = QR`` with orthonormal ``Q``.
    what:
        a name for the messages.

    Returns
    -------
    Evidence or None
        ``None`` when the reference equals :func:`dual_gradient` of ``f``; otherwise ``error``
        evidence with the exact point (the checker itself would be wrong).
    """

    def residual(size, R, A, G, Q=None, K=None):
        xm = _q_of(size, Q, K) * R
        gx, ga = reference(xm, A, G)
        dx, da = dual_gradient(xm, A, G, f)
        return _vec(gx - dx, ga - da)

    ident = MatrixIdentity(
        f"{what} chain-rule reference - dual-number gradient",
        variables=backward_variables,
        residual=residual,
        project=_project,
    )
    ce = search_counterexample(ident, [size], seed=ctx.seed_for("dual"), points=1)
    if ce is None:
        return None
    return Evidence(
        Level.ERROR,
        "chain-rule reference against dual numbers",
        counterexample=ce,
        detail=f"the {what} chain-rule reference disagrees with the exact dual-number gradient",
    )


def with_dual_check(ctx, evidence: list[Evidence], f: Callable, reference: Callable, size: dict, *,
                    what: str) -> list[Evidence]:
    """``evidence`` and the check of :func:`reference_dual_evidence`: its error evidence appended, or, when the
    reference agrees, a note saying so added to the first evidence's detail."""
    bad = reference_dual_evidence(ctx, f, reference, size, what=what)
    if bad is not None:
        return evidence + [bad]
    evidence[0].detail += _dual_note(size)
    return evidence


def _dual_note(size: dict) -> str:
    return "; the chain-rule reference agrees with the exact dual-number gradient at a rational point (" + ",".join(
        f"{k_}={v}" for k_, v in size.items()
    ) + ")"


#: (T, k, d, rank of R): k < T, T < d, k < min(T, d), rank-deficient R
FORM_SIZES = [
    {"T": 3, "k": 2, "d": 2, "r": 2},
    {"T": 4, "k": 3, "d": 3, "r": 2},
    {"T": 2, "k": 2, "d": 3, "r": 2},
    {"T": 4, "k": 2, "d": 3, "r": 1},
]
DEEP_SIZES = [{"T": 5, "k": 3, "d": 4, "r": 3}, {"T": 6, "k": 4, "d": 4, "r": 3}]


#: where the low-rank claims search for counterexamples: ``FORM_SIZES``, and ``DEEP_SIZES`` too above depth 1
SEARCH_SIZES = at_sizes(*FORM_SIZES, deep=DEEP_SIZES)


def backward_policy(identity: MatrixIdentity, derivation: Callable) -> Policy:
    """The policy of a low-rank backward claim: ``identity`` searched at :data:`SEARCH_SIZES` (``1 + depth`` points
    each) and ``derivation()`` as the proof."""
    return Policy(identity=identity, search=SEARCH_SIZES, points=lambda ctx: 1 + ctx.depth, prove=derivation)


def backward_variables(s: dict, **extra) -> dict:
    """The symbolic inputs of a low-rank backward identity at sizes ``s``: ``Q`` from a skew ``K``, ``R``, a skew
    ``A``, the incoming gradient ``G``, and ``extra`` (name -> matrix)."""
    return {"K": alg.skew("q", s["T"]), "R": alg.general("r", s["k"], s["d"]), "A": alg.skew("a", s["d"]),
            "G": alg.general("g", s["T"], s["d"]), **extra}
