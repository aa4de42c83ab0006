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
from ..proof import identity, relation, same
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import NOWHERE, Grows, Policy, T, at_sizes, d, grid
from ._derivations import canon_sums, lift_symplectic_derivation
from ._sources import ORIGINS

__all__ = ["CLAIMS", "vec_identity", "make_vec_claim", "lift_identity", "make_lift_claim"]

SRC0 = ORIGINS["000"]
SRC3 = ORIGINS["003"]

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


def _same_sum(lhs, rhs, sub=None) -> bool:
    """Whether two sums run over the same limits with equal summands, after the substitution ``sub``
    (``(old, new)``, in the summand of ``lhs``, whose bound variables it may name)."""
    if not (isinstance(lhs, Sum) and isinstance(rhs, Sum)) or lhs.limits != rhs.limits:
        return False
    term = lhs.function if sub is None else lhs.function.subs(*sub)
    return sp.simplify(term - rhs.function) == 0


# ---------------------------------------------------------------------------
# vec.right_multiplication and vec.seed_formula
# ---------------------------------------------------------------------------


def _right_mult_derivation() -> Derivation:
    kron = KroneckerProduct(Identity(d), L.T)
    entry = kron[k * T + j, kp * T + i]  # SymPy's own entry rule of the Kronecker product
    delta_entry = KroneckerDelta(k, kp, (0, d - 1)) * L.T[j, i]
    zl_entry = (Z * L)[k, j]  # built once: SymPy writes it as a sum over a fresh dummy index
    # [(I_d (x) Lambda^T) vec_r(Z)]_{kT+j}: the column index runs over k'T + i, where vec_r(Z) holds Z[k', i]
    product_entry = Sum(entry * Z[kp, i], (kp, 0, d - 1), (i, 0, T - 1))
    kron_entry = Sum(delta_entry * Z[kp, i], (kp, 0, d - 1), (i, 0, T - 1))
    target = Sum(L[i, j] * Z[k, i], (i, 0, T - 1))
    ranges = {
        sp.floor((T * k + j) / T): k, sp.floor((T * kp + i) / T): kp,
        sp.Mod(j, T): j, sp.Mod(i, T): i, sp.Mod(k, d): k, sp.Mod(kp, d): kp,
    }
    return Derivation(
        assumptions=[r"Z\in\mathbb{R}^{d\times T},\ \Lambda\in\mathbb{R}^{T\times T}", r"0\le k,k'<d,\ 0\le i,j<T",
                     r"[\mathrm{vec}_r(Z)]_{k'T+i} = Z_{k'i},\ [\mathrm{vec}_r(Z\Lambda)]_{kT+j} = (Z\Lambda)_{kj}"],
        facts={"0 <= i, j < T and 0 <= k, k' < d": ranges},
        subject=(product_entry,),
        steps=[
            Step(entry, delta_entry, r"entry (kT+j, k'T+i) of \mathbb{I}_d\otimes\Lambda^T, indices in range",
                 identity()),
            Step(product_entry, kron_entry, "substitute step 1 in every term",
                 relation(lambda l, r: _same_sum(l, r, (entry, delta_entry)),
                          "term-by-term substitution of step 1")),
            Step(kron_entry, target, "sum over k' of a Kronecker delta (k < d)",
                 relation(lambda l, r: same(_in_range(l), _in_range(r)), "evaluated for 0 <= k < d")),
            Step(target, zl_entry, "matrix product", relation(
                lambda l, r: same(canon_sums(l.doit()), canon_sums(r.doit())), "entry of a product")),
        ],
        remark=r"\mathrm{vec}_r(Z\Lambda) = (\mathbb{I}_d\otimes\Lambda^T)\,\mathrm{vec}_r(Z) \text{ entrywise}",
        conclusion=sp.Eq(product_entry, zl_entry, evaluate=False),
    )


_FORMS = {"seed": "Lambda (x) I_T", "blockdiag": "I_d (x) Lambda", "exact": "I_d (x) Lambda^T",
          "column_major": "Lambda^T (x) I_d"}


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
        f"vec_r(Z Lambda) - ({_FORMS[form]}) vec_r(Z)",
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
        source=str(SRC0),
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
    source=SRC0.at("'How is Structure Preserved?'"),
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


def _kronecker_same(lhs, rhs) -> bool:
    """Equality after SymPy's transpose rule and mixed-product rule of Kronecker products."""
    return same(combine_kronecker(lhs.doit()), combine_kronecker(rhs.doit()))


#: the check of a step that uses (A (x) B)^T = A^T (x) B^T and (A (x) B)(C (x) D) = AC (x) BD
KRONECKER_RULES = relation(_kronecker_same, "Kronecker transpose and mixed-product rules")


def _lift_orthogonal_derivation(block_name: str = r"\Lambda", cite: str = "cayley.orthogonal") -> Derivation:
    M = KroneckerProduct(Identity(d), L)
    return Derivation(
        assumptions=[r"\Lambda^T\Lambda = \mathbb{I}_T" + rf"\ \text{{({cite})}}",
                     r"\tilde\Lambda = \mathbb{I}_d\otimes\Lambda"],
        steps=[
            Step(
                M.T * M,
                KroneckerProduct(Identity(d), L.T * L),
                r"(A\otimes B)^T = A^T\otimes B^T,\ (A\otimes B)(C\otimes D) = AC\otimes BD",
                KRONECKER_RULES,
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
        source=SRC0.at("'How is Structure Preserved?'") + f"; {SRC3}",
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
