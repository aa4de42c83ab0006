"""Vectorisation and lifts (seed 000 'How is Structure Preserved?', seed 003).

Rows of ``Z`` (``d x T``) are stacked into ``Z_vec``; right multiplication
``Z -> Z Lambda`` becomes a left multiplication on ``Z_vec``.
"""

from __future__ import annotations

import dataclasses

import sympy as sp
from sympy import KroneckerDelta, Sum
from sympy.matrices.expressions import Identity, KroneckerProduct, MatrixSymbol
from sympy.matrices.expressions.kronecker import combine_kronecker

from .. import algebra as alg
from ..claim import Claim, corrected
from ..proof import identity
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import NOWHERE, Grows, Policy, T, at_sizes, d, grid
from ._derivations import canon_sums, lift_symplectic_derivation

__all__ = ["CLAIMS", "vec_identity", "make_vec_claim", "lift_identity", "make_lift_claim"]

SRC0 = "000_a6b1d30a66a64c9f.txt"
SRC3 = "003_cbccd72b407c9f4d.txt"

k, j, i, kp = sp.symbols("k j i k'", integer=True, nonnegative=True)
Z = MatrixSymbol("Z", d, T)
L = MatrixSymbol("Lambda", T, T)


def _in_range(expr):
    """Evaluate ``expr`` and drop Piecewise branches whose condition holds for
    every row index ``0 <= k <= d-1`` (checked by writing ``d = k + 1 + m``,
    ``m >= 0``)."""
    m = sp.Symbol("m", integer=True, nonnegative=True)

    def always(cond) -> bool:
        return bool(cond.subs(d, k + 1 + m) == sp.true)

    def fold(pw):
        expr0, cond0 = pw.args[0]
        return expr0 if always(cond0) else pw

    return expr.doit().replace(lambda e: isinstance(e, sp.Piecewise), fold)


# ---------------------------------------------------------------------------
# vec.right_multiplication and vec.seed_formula
# ---------------------------------------------------------------------------


def _right_mult_derivation() -> Derivation:
    lhs_entry = (Z * L)[k, j]
    kron_entry = Sum(KroneckerDelta(k, kp) * L.T[j, i] * Z[kp, i], (kp, 0, d - 1), (i, 0, T - 1))
    target = Sum(L[i, j] * Z[k, i], (i, 0, T - 1))
    return Derivation(
        assumptions=[r"Z\in\mathbb{R}^{d\times T},\ \Lambda\in\mathbb{R}^{T\times T}", r"0\le k<d,\ 0\le j<T"],
        steps=[
            Step(
                r"[\mathrm{vec}_r(Z\Lambda)]_{kT+j}",
                lhs_entry,
                "row-stacking puts entry (k, j) at position kT + j; matrix product",
                identity(),
            ),
            Step(
                r"[(\mathbb{I}_d\otimes\Lambda^T)\,\mathrm{vec}_r(Z)]_{kT+j}",
                kron_entry,
                r"Kronecker entries: [A\otimes B]_{aT+b,\,cT+e} = A_{ac}B_{be}", lemma='kronecker_entries',
            ),
            Step(
                kron_entry,
                target,
                "sum over k' of a Kronecker delta (k < d)",
                identity(),
            ),
        ],
        remark=r"\mathrm{vec}_r(Z\Lambda) = (\mathbb{I}_d\otimes\Lambda^T)\,\mathrm{vec}_r(Z)",
        conclusion=None,  # TODO
    )


def vec_identity(form: str) -> MatrixIdentity:
    """``vec_r(Z Lambda) - M vec_r(Z)`` with ``M`` given by ``form``.

    ``form``: ``"seed"`` (Lambda (x) I_T), ``"blockdiag"`` (I_d (x) Lambda),
    ``"exact"`` (I_d (x) Lambda^T), ``"column_major"`` (Lambda^T (x) I_d).
    Lambda is an orthogonal Cayley matrix, as in the layer.
    """

    def residual(size, Z, S):
        lam = alg.cayley(S)
        dd, tt = size["d"], size["T"]
        m = {
            "seed": lambda: alg.kron(lam, sp.eye(tt)),
            "blockdiag": lambda: alg.kron(sp.eye(dd), lam),
            "exact": lambda: alg.kron(sp.eye(dd), lam.T),
            "column_major": lambda: alg.kron(lam.T, sp.eye(dd)),
        }[form]()
        return (alg.vec_rows(Z * lam) - m * alg.vec_rows(Z)).applyfunc(sp.cancel)

    return MatrixIdentity(
        f"vec_r(Z Lambda) - ({ {'seed': 'Lambda (x) I_T', 'blockdiag': 'I_d (x) Lambda', 'exact': 'I_d (x) Lambda^T', 'column_major': 'Lambda^T (x) I_d'}[form] }) vec_r(Z)",
        variables=lambda s: {"Z": alg.general("z", s["d"], s["T"]), "S": alg.skew("s", s["T"])},
        residual=residual,
    )


def make_vec_claim(form: str, claim_id: str | None = None) -> Claim:
    """Kronecker form of right multiplication; ``form`` as in :func:`vec_identity`."""
    true = form == "exact"
    return Claim(
        id=claim_id or f"vec.{form}",
        title=f"vec form of Z Lambda: {form}",
        statement=f"vec_r(Z Lambda) = M vec_r(Z) with M the '{form}' Kronecker form",
        latex=r"\mathrm{vec}_r(Z\Lambda) = M\,\mathrm{vec}_r(Z)",
        source=SRC0,
        expected=Level.PROVED if true else Level.REFUTED,
        checker=Policy(
            identity=vec_identity(form),
            # where d != T the seed's form is not even well-formed (T^2 x T^2
            # against a vector of length dT): search where the shapes agree.
            search=at_sizes({"d": 2, "T": 2}, {"d": 3, "T": 3}) if form == "seed" else grid(d=[1, 2], T=[2, 3]),
            prove=_right_mult_derivation if true else None,
            exact=grid(d=Grows(1, 3), T=Grows(1, 3)) if true else NOWHERE,
        ),
    )


_seed = dataclasses.replace(
    make_vec_claim("seed", "vec.seed_formula"),
    title="Z Lambda as (Lambda (x) I_T) Z_vec",
    statement="With the rows of Z stacked into Z_vec, the layer output Z Lambda(Z) is (Lambda(Z) (x) I_T) Z_vec "
    "(drawn as block-diag(Lambda, ..., Lambda)).",
    latex=r"\mathrm{vec}_r(Z\Lambda(Z)) = (\Lambda(Z)\otimes\mathbb{I}_T)\,Z_\mathrm{vec}",
    source=f"{SRC0}, 'How is Structure Preserved?'",
    notes="Lambda (x) I_T is T^2 x T^2 while Z_vec has dT entries, so the formula is ill-formed unless d = T; "
    "even then it is wrong. The block-diagonal drawing is I_d (x) Lambda, also wrong: the blocks are Lambda^T "
    "(vec.right_multiplication).",
)

_exact = corrected(
    _seed,
    make_vec_claim("exact", "vec.right_multiplication"),
    title="Z Lambda as (I_d (x) Lambda^T) Z_vec",
    statement="With the rows of Z stacked into Z_vec, vec_r(Z Lambda) = (I_d (x) Lambda^T) Z_vec.",
    latex=r"\mathrm{vec}_r(Z\Lambda) = (\mathbb{I}_d\otimes\Lambda^T)\,\mathrm{vec}_r(Z)",
)


# ---------------------------------------------------------------------------
# lift.orthogonal, lift.symplectic
# ---------------------------------------------------------------------------


def _lift_orthogonal_derivation(block_name: str = r"\Lambda", cite: str = "cayley.orthogonal") -> Derivation:
    M = KroneckerProduct(Identity(d), L)
    combined = combine_kronecker(M.T * M)
    return Derivation(
        assumptions=[r"\Lambda^T\Lambda = \mathbb{I}_T" + rf"\ \text{{({cite})}}", r"\tilde\Lambda = \mathbb{I}_d\otimes\Lambda"],
        steps=[
            Step(
                M.T * M,
                KroneckerProduct(Identity(d), L.T * L),
                r"(A\otimes B)^T = A^T\otimes B^T,\ (A\otimes B)(C\otimes D) = AC\otimes BD",
                identity(),
            ),
            Step(
                KroneckerProduct(Identity(d), L.T * L),
                Identity(d * T),
                r"\Lambda^T\Lambda = \mathbb{I}_T",
                identity((L.T * L, Identity(T))),
            ),
        ],
        remark=r"\tilde\Lambda^T\tilde\Lambda = \mathbb{I}_{dT}"
        + r"\ \text{(the same holds for } \mathbb{I}_d\otimes\Lambda^T\text{, since } \Lambda^T"
        + r"\text{ is orthogonal too)}",
        conclusion=sp.Eq(M.T * M, Identity(d * T), evaluate=False),
    )


def lift_identity(kind: str, block: str = "cayley") -> MatrixIdentity:
    """Residual of the lift property for ``block`` = ``"cayley"`` (orthogonal) or ``"general"``."""

    def block_matrix(size, S):
        return alg.cayley(S) if block == "cayley" else S

    def residual(size, S):
        lam = block_matrix(size, S)
        dd, tt = size["d"], size["T"]
        if kind == "orthogonal":
            lift = alg.kron(sp.eye(dd), lam)
            return (lift.T * lift - sp.eye(dd * tt)).applyfunc(sp.cancel)
        lift = alg.kron(sp.eye(2 * dd), lam)
        J = alg.poisson_matrix(dd * tt)
        return (lift.T * J * lift - J).applyfunc(sp.cancel)

    def variables(s):
        return {"S": alg.skew("s", s["T"]) if block == "cayley" else alg.general("s", s["T"], s["T"])}

    name = "Lift^T Lift - I" if kind == "orthogonal" else "Lift^T J Lift - J"
    return MatrixIdentity(name, variables=variables, residual=residual)


def make_lift_claim(kind: str, block: str = "cayley", claim_id: str | None = None) -> Claim:
    """``kind`` is ``"orthogonal"`` or ``"symplectic"``; ``block="general"`` is a
    negative control (a non-orthogonal Lambda)."""
    true = block == "cayley"
    derivation = _lift_orthogonal_derivation if kind == "orthogonal" else lift_symplectic_derivation
    if kind == "orthogonal":
        statement = "Lambda-tilde(Z) = block-diag(Lambda(Z), ..., Lambda(Z)) is an orthogonal matrix."
        latex = r"\tilde\Lambda(Z)^T\tilde\Lambda(Z) = \mathbb{I}"
    else:
        statement = (
            "Lambda-tilde(Z)^T J Lambda-tilde(Z) = J with J = [[0, I_dT], [-I_dT, 0]] in the q/p rearrangement."
        )
        latex = r"\tilde\Lambda(Z)^T\mathbb{J}\tilde\Lambda(Z) = \mathbb{J}"
    return Claim(
        id=claim_id or f"lift.{kind}.{block}",
        title=f"lift is {kind}" + ("" if true else f" ({block} block)"),
        statement=statement,
        latex=latex,
        source=f"{SRC0}, 'How is Structure Preserved?'; {SRC3}",
        expected=Level.PROVED if true else Level.REFUTED,
        checker=Policy(
            identity=lift_identity(kind, block),
            search=grid(d=[1, 2], T=[2, 3]),
            prove=derivation if true else None,
            exact=grid(d=[1], T=[2]),
        ),
    )


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    _seed,
    _exact,
    make_lift_claim("orthogonal", claim_id="lift.orthogonal"),
    make_lift_claim("symplectic", claim_id="lift.symplectic"),
]
