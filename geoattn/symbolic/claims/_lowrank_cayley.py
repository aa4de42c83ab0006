"""The claim ``vp.lowrank_cayley_vjp``: the Cayley backward of the low-rank form."""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import (
    MatrixSymbol,
)
from sympy.polys.matrices import DomainMatrix

from .. import algebra as alg
from .. import expressions as ex
from ..claim import Claim
from ..proof import identity
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity, exact_evidence
from ._common import Policy, run_bindings
from ._free_algebra import Gt, Q, Qt, R, W, compose, nc_check, nc_equal, to_nc
from ._lowrank_exact import (
    SEARCH_SIZES,
    backward_variables,
    SOURCE,
    Gy,
    Qf,
    Rf,
    Sd,
    Wd,
    _calculus_steps,
    _cancel,
    _dual_note,
    _project,
    _q_of,
    _reference_images,
    _sizes,
    _vec,
    cayley_chain_reference,
    kernel_small_factors,
    reference_dual_evidence,
)

# ---------------------------------------------------------------------------
# vp.lowrank_cayley_vjp
# ---------------------------------------------------------------------------


def cayley_vjp_derivation(bindings=None) -> Derivation:
    """The derivation for the Cayley backward; ``bindings`` replaces the generated ones (negative controls)."""
    bindings = ex.LOWRANK_CAYLEY_VJP if bindings is None else bindings
    steps, grads = _calculus_steps()
    lam = 1 + Q * W * Qt
    # cayley.vjp at Lambda-bar = x Gy^T, the kernel's own expression
    cbar = to_nc(ex.CAYLEY_VJP, {"Lam": lam, "G": Q * R * Gt})
    ref_gx, ref_gA = _reference_images(grads, cbar, lam)
    got = compose(bindings, {})
    return Derivation(
        assumptions=[
            r"y = \Lambda^Tx,\ \Lambda = \mathrm{Cayley}(C),\ C = xAx^T,\ L = \langle\bar y, y\rangle",
            r"x = QR,\ Q^TQ = I,\ \Lambda = I + QWQ^T,\ W = \mathrm{Cayley}(S) - I\ (\texttt{vp.lowrank\_form})",
        ],
        steps=[
            *steps[:1],
            Step(
                r"\bar C",
                r"-\tfrac12(I + \Lambda)^T\bar\Lambda(I + \Lambda)^T",
                "lemma: cayley.vjp (proved in the ledger), kernel cayley_vjp", lemma='ledger:cayley.vjp',
            ),
            *steps[1:],
            Step(
                r"\Lambda",
                lam,
                "lemma: vp.lowrank_form (proved in the ledger)", lemma='ledger:vp.lowrank_form',
            ),
            Step(
                got["gx"],
                ref_gx,
                "compose the bindings of vp_lowrank_cayley_vjp; chain rule with Cbar = cayley_vjp(I + QWQ^T, QR Gy^T), "
                "x = QR; expand, Q^T Q = I (A arbitrary)",
                nc_check(),
            ),
            Step(
                got["gA"],
                ref_gA,
                "the same for the skew part of x^T Cbar x",
                nc_check(),
            ),
        ],
        remark=r"\texttt{vp\_lowrank\_cayley\_vjp}(Q, R, W, A, \bar y) = "
        r"\left(\nabla_x L,\ \mathrm{skew}(\nabla_A L)\right)",
        conclusion=None,  # TODO
    )


def cayley_vjp_identity(bindings=None) -> MatrixIdentity:
    """Kernel outputs (forward and backward kernels chained) minus the ``T x T`` chain-rule reference."""
    bindings = ex.LOWRANK_CAYLEY_VJP if bindings is None else bindings

    def residual(size, R, A, G, Q=None, K=None):
        Qm = _q_of(size, Q, K)
        n = _sizes(size)
        _, W_ = kernel_small_factors(R, A, size)
        out = run_bindings(bindings, {Qf: Qm, Rf: R, Wd: W_, ex.A: A, Gy: G}, n)
        gx, ga = cayley_chain_reference(Qm * R, A, G)
        return _cancel(_vec(out["gx"] - gx, out["gA"] - ga))

    return MatrixIdentity(
        "vp_lowrank_cayley_vjp - (grad_x, skew grad_A) of <Gy, Cayley(xAx^T)^T x>, x = QR",
        variables=backward_variables,
        residual=residual,
        project=_project,
    )


def cayley_vjp_field_identity(bindings=None) -> MatrixIdentity:
    """:func:`cayley_vjp_identity` computed in the field ``Q(symbols)`` (for the exact symbolic check)."""
    bindings = ex.LOWRANK_CAYLEY_VJP if bindings is None else bindings
    table = {}
    for _, expr in bindings:
        for s_ in sp.sympify(expr).atoms(MatrixSymbol):
            table.setdefault(s_.name, s_)

    def residual(size, R, A, G, Q=None, K=None):
        syms = alg.free_symbols([m for m in (R, A, G, Q, K) if m is not None])
        F = sp.QQ.frac_field(*syms) if syms else sp.QQ

        def conv(m):
            return DomainMatrix.from_list_sympy(m.rows, m.cols, m.tolist()).convert_to(F)

        def half(m):
            return m * F.convert(sp.Rational(1, 2))

        n = _sizes(size)
        Tn, kk = size["T"], size["k"]
        eye = DomainMatrix.eye(Tn, F)
        if Q is None:
            Kd = conv(K)
            Qd = ((eye - Kd) * (eye + Kd).inv())[:, :kk]
        else:
            Qd = conv(Q)
        Rd, Ad, Gd = conv(R), conv(A), conv(G)
        S0 = ex.evaluate(ex.LOWRANK_S[0][1], {Rf: Rd, ex.A: Ad}, n, field=F)
        S_ = half(S0 - S0.transpose())
        W_ = ex.evaluate(ex.CAYLEY_MINUS_I, {Sd: S_}, n, field=F)
        env = {Qf: Qd, Rf: Rd, Wd: W_, ex.A: Ad, Gy: Gd}
        out = {}
        for name, expr in bindings:
            out[name] = ex.evaluate(expr, env, n, field=F)
            if name in table:
                env[table[name]] = out[name]
        xd = Qd * Rd
        C_ = xd * Ad * xd.transpose()
        lam = (eye - C_) * (eye + C_).inv()
        P = (eye + lam).transpose()
        Cb = -half(P * (xd * Gd.transpose()) * P)
        gx = lam * Gd + Cb * xd * Ad.transpose() + Cb.transpose() * xd * Ad
        ga = xd.transpose() * Cb * xd
        ga = half(ga - ga.transpose())
        return _vec((out["gx"] - gx).to_Matrix(), (out["gA"] - ga).to_Matrix())

    base = cayley_vjp_identity(bindings)
    name = base.name + " (in the field of rational functions)"
    return MatrixIdentity(name, base.variables, residual, project=_project)


DUAL_SIZE = {"T": 3, "k": 2, "d": 2, "r": 2}
#: the symbolic identity runs in about 2 s here; at T = 3 it takes minutes (T x T inverse of rational functions)
EXACT_SIZES = [{"T": 2, "k": 2, "d": 2, "r": 2}]


def _then_field_and_dual(policy: Policy, bindings=None):
    """``policy`` (search and derivation), then, unless it refutes, the exact identity in the field of rational
    functions (its counterexample replaces the evidence) and the dual-number check of the chain-rule reference
    (noted on the first evidence when it agrees)."""

    def check(ctx) -> list[Evidence]:
        evidence = policy(ctx)
        if any(e.level is Level.REFUTED for e in evidence):
            return evidence
        exact = exact_evidence(
            cayley_vjp_field_identity(bindings),
            EXACT_SIZES,
            method="exact symbolic identity at explicit sizes (symbolic R, A, Gy; Q from a symbolic skew K)",
            seed=ctx.seed_for("exact"),
        )
        if exact.level is Level.REFUTED:
            return [exact]
        evidence.append(exact)
        bad = reference_dual_evidence(ctx, alg.cayley, cayley_chain_reference, DUAL_SIZE, what="Cayley")
        if bad is not None:
            return evidence + [bad]
        evidence[0].detail += _dual_note(DUAL_SIZE)
        return evidence

    return check


def make_cayley_vjp_claim(
    bindings=None, claim_id: str = "vp.lowrank_cayley_vjp", expected: Level = Level.PROVED
) -> Claim:
    """The claim; ``bindings`` replaces ``LOWRANK_CAYLEY_VJP`` (negative controls)."""
    return Claim(
        id=claim_id,
        title="low-rank Cayley backward",
        statement="For y = Cayley(C)^T x, C = x A x^T, x = QR (Q^T Q = I), W = Cayley(S) - I, S = R A R^T and A "
        "skew, the outputs gx, gA of the bindings of vp_lowrank_cayley_vjp are the gradient of <Gy, y> with "
        "respect to x and the skew part of its gradient with respect to A.",
        latex=r"\texttt{vp\_lowrank\_cayley\_vjp}(Q, R, W, A, \bar y) = "
        r"\left(\nabla_x\langle\bar y, y\rangle,\ \mathrm{skew}\,\nabla_A\langle\bar y, y\rangle\right)",
        source=SOURCE.format("vp_lowrank_cayley_vjp"),
        expected=expected,
        checker=_then_field_and_dual(
            Policy(
                identity=cayley_vjp_identity(bindings),
                search=SEARCH_SIZES,
                points=lambda ctx: 1 + ctx.depth,
                prove=lambda: cayley_vjp_derivation(bindings),
            ),
            bindings,
        ),
        notes="The chain-rule reference is the T x T form (Cayley(C), cayley.vjp); it is itself checked "
        "against exact dual-number Jacobians at one rational point.",
    )
