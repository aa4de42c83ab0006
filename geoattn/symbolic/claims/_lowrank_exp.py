"""The claim ``vp.lowrank_exp_vjp``: the exponential backward of the low-rank form."""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import BlockDiagMatrix, Trace

from .. import algebra as alg
from .. import expressions as ex
from ..kernel_table import kernel as kernel_spec
from ..claim import Claim
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity
from ._common import Policy, run_bindings
from ._exp_frechet import FrechetExp, Phi, beta_step, block_exp_step, block_power_step
from ._free_algebra import K1, K2, PROJECTED, An, At, G, Gt, Q, Qt, R, Rt, W, Y1n, compose, nc, nc_check
from ._free_algebra import nc_transpose
from ._kernel_checks import Gradient, blockwise, matrix_derivative, matrix_diff
from ._lowrank_cayley import DUAL_SIZE, _entrywise_nc, _image_at_qr, _image_check
from ._lowrank_exact import Cbar, Gy, Lam, Qf, Rf, SOURCE, Sd, Wd, _cancel, _poly, _poly_frechet, _poly_phi, _project
from ._lowrank_exact import _q_of, _sizes, _taylor_coeffs, _vec, backward_policy, backward_variables
from ._lowrank_exact import chain_rule_gradient, kernel_small_factors, nc_rules, with_dual_check

# ---------------------------------------------------------------------------
# vp.lowrank_exp_vjp
# ---------------------------------------------------------------------------


def _cbar_steps() -> tuple[list[Step], object]:
    r"""The side steps that give :math:`\bar C = L_{\exp}(C^T, x\bar y^T) = QK_1Q^T + QK_2(\bar y - QY_1)^T` at
    ``x = QR``, and that right side (a free-algebra element)."""
    Es, Fs = nc("e^{-sS}"), nc("e^{-(1-s)S}")
    eCs, eCt = nc("e^{-sC}"), nc("e^{-(1-s)C}")
    Y1t = nc_transpose(Y1n)
    c_img = Q * R * An * Rt * Qt
    cbar = Q * K1 * Qt + Q * K2 * nc_transpose(G - Q * Y1n)
    lowrank = "vp.lowrank_form with f(z) = {} (a power series with f(0) = 1)"
    return [
        Step(nc_transpose(c_img), -c_img, "C^T = -C at x = QR for skew A", nc_rules("A^T = -A", facts=("A skew",))),
        Step(eCs, 1 + Q * (Es - 1) * Qt, lowrank.format("e^{-sz}"), lemma="ledger:vp.lowrank_form"),
        Step(eCt, 1 + Q * (Fs - 1) * Qt, lowrank.format("e^{-(1-s)z}"), lemma="ledger:vp.lowrank_form"),
        Step(eCs * Q * R * Gt * eCt, Q * (Es * R * Y1t * Fs) * Qt + Q * Es * R * nc_transpose(G - Q * Y1n),
             "the integrand e^{-sC} x Gy^T e^{-(1-s)C} at x = QR: the two steps before, Q^T Q = I, Gy^T Q = Y1^T",
             nc_rules("the two steps before", subs=((eCs, 1 + Q * (Es - 1) * Qt), (eCt, 1 + Q * (Fs - 1) * Qt)),
                      rules=PROJECTED)),
        Step(nc("Cbar"), cbar, r"Cbar = L_exp(C^T, x Gy^T) = int_0^1 e^{-sC} x Gy^T e^{-(1-s)C} ds (C^T = -C); the "
             "integrand above integrated term by term: int e^{-sS} R Y1^T e^{-(1-s)S} ds = L_exp(-S, R Y1^T) = K1, "
             "int e^{-sS} ds R = phi(-S) R = K2", lemma="exp_frechet_integral"),
    ], cbar


def exp_vjp_derivation(bindings=None) -> Derivation:
    r"""The derivation for the exponential backward; ``bindings`` replaces the generated ones (negative controls).

    Main chain: the chain rule through :math:`\Lambda = e^C` and :math:`\bar C = L_{\exp}(C^T, x\bar y^T)` (cited),
    SymPy's matrix derivatives of the resulting trace form, its image at ``x = QR``, and the kernel's bindings
    modulo :math:`Q^TQ = I`, :math:`Q^T\bar y = Y_1`, :math:`\Lambda = I + QWQ^T` and the side steps' value of
    :math:`\bar C`. Side steps: :math:`\bar C` at ``x = QR`` (its integrand checked), and the block formula for
    ``K1, K2`` (cited, with its induction step and the Beta integral checked)."""
    bindings = ex.LOWRANK_EXP_VJP if bindings is None else bindings
    xs, As = ex.x, ex.A
    C = xs * ((As - As.T) / 2) * xs.T
    loss = Trace(Gy.T * alg.MatExp(C).T * xs)
    grads = BlockDiagMatrix(Gradient(loss, xs), Gradient(loss, As))
    surrogate = Trace(Gy.T * Lam.T * xs) + Trace(Cbar.T * C)
    chain = BlockDiagMatrix(Gradient(surrogate, xs), Gradient(surrogate, As))
    sympy_chain = BlockDiagMatrix(matrix_diff(surrogate, xs), matrix_diff(surrogate, As))
    images = sp.ImmutableMatrix([[_image_at_qr(b)] for b in sympy_chain.diag])
    got = compose(bindings)
    kernel = sp.ImmutableMatrix([[got["gx"]], [got["gA"]]])
    project = compose(kernel_spec("vp_lowrank_project").bindings)["Y1"]
    cbar_steps, cbar = _cbar_steps()
    lam_n, cbar_n = nc("Lam"), nc("Cbar")
    lam_step = Step(lam_n, 1 + Q * W * Qt, "vp.lowrank_form with f = exp: e^C = I + Q(e^S - I)Q^T, W = e^S - I",
                    lemma="ledger:vp.lowrank_form")
    final_subs = ((lam_n, 1 + Q * W * Qt), (nc_transpose(lam_n), 1 + Q * nc_transpose(W) * Qt),
                  (cbar_n, cbar), (nc_transpose(cbar_n), nc_transpose(cbar)))
    side = [*cbar_steps, lam_step, block_power_step(), beta_step(), block_exp_step(ex.k, ex.d)]
    return Derivation(
        assumptions=[
            r"L = \langle\bar y, (e^C)^Tx\rangle,\ C = x\,\tfrac12(A - A^T)\,x^T\ "
            r"\text{(the forward uses the skew part of } A)",
            r"x = QR,\ Q^TQ = I,\ A^T = -A,\ S = RAR^T,\ W = e^S - I\ (\texttt{vp.lowrank\_form})",
            r"Y_1 = Q^T\bar y\ (\texttt{vp\_lowrank\_project}),\ K_1 = L_{\exp}(-S, RY_1^T),\ K_2 = \varphi(-S)R,\ "
            r"\varphi(X) = \int_0^1 e^{sX}ds",
        ],
        facts={
            "A skew": {At: -An},
            "chain rule": {Lam: alg.MatExp(C), Cbar: FrechetExp(C.T, xs * Gy.T)},
            "the kernel's inputs": {ex.K1: FrechetExp(-Sd, Rf * ex.Y1.T), ex.K2: Phi(-Sd) * Rf},
        },
        subject=tuple(s.lhs for s in side) + (project,),
        steps=[
            Step(project, Y1n, "the kernel vp_lowrank_project; the rewriting rules Q^T Gy -> Y1, Gy^T Q -> Y1^T",
                 nc_check(PROJECTED)),
            *side,
            Step(grads, chain, "chain rule through Lambda = e^C and C: the gradient of <Lambar, e^C> in C is "
                 "L_exp(C^T, Lambar) (the adjoint of L_exp, exp_frechet_integral), Lambar = x Gy^T; "
                 "Lam and Cbar held fixed in the trace form", lemma="chain_rule"),
            Step(chain, sympy_chain, "SymPy's matrix derivatives of the trace form in x and in A (term by term)",
                 blockwise(matrix_derivative())),
            Step(sympy_chain, images, "at x = QR with A^T = -A",
                 _image_check("image in the free algebra at x = QR, A^T = -A")),
            Step(images, kernel, "the bindings of vp_lowrank_exp_vjp composed; Lam = I + QWQ^T and Cbar = "
                 "Q K1 Q^T + Q K2 (Gy - Q Y1)^T (the side steps) and their transposes, Q^T Q = I, Q^T Gy = Y1",
                 _entrywise_nc(nc_rules("Lam, Cbar (side steps), Q^T Gy = Y1", subs=final_subs, rules=PROJECTED,
                                        facts=("A skew",)))),
        ],
        remark=r"\texttt{vp\_lowrank\_exp\_vjp}(Q, R, W, A, \bar y, Y_1, K_1, K_2) = "
        r"\left(\nabla_x L,\ \nabla_A L = \mathrm{skew}(\nabla_A L)\right)",
        conclusion=sp.Eq(grads, kernel, evaluate=False),
    )


#: the Taylor polynomial of exp standing for f in the exact end-to-end check
POLY = _taylor_coeffs(3)


def _poly_chain_reference(xm, Am, Gm, coeffs=POLY):
    r"""``T x T`` chain rule for :math:`\Lambda = p(C)`: :math:`\bar C = L_p(C^T, x\bar y^T)`."""
    C_ = xm * Am * xm.T
    return chain_rule_gradient(xm, Am, Gm, _poly(coeffs, C_), _poly_frechet(coeffs, C_.T, xm * Gm.T))


def exp_vjp_identity(bindings=None) -> MatrixIdentity:
    """Exact checks of the exponential backward's algebra at points with orthonormal ``Q``.

    Stacks (i) the kernel outputs minus the chain rule with ``Lambda = I + Q W Q^T`` and
    ``Cbar = Q K1 Q^T + Q K2 (Gy - Q Y1)^T`` for arbitrary rational ``W, K1, K2``; (ii) for the
    Taylor polynomial ``p`` of degree 3 in place of ``exp`` (``W = p(S) - I``,
    ``K1 = L_p(-S, R Y1^T)``, ``K2 = ((p - 1)/z)(-S) R``), the kernel outputs minus the ``T x T``
    chain rule with ``Cbar = L_p(C^T, x Gy^T)``; (iii) the blocks (1,2), (1,3) of ``p(B)`` for the
    front end's block matrix ``B`` minus those ``K1, K2``.
    """
    bindings = ex.LOWRANK_EXP_VJP if bindings is None else bindings
    project_expr = kernel_spec("vp_lowrank_project").bindings[0][1]

    def kernel(Qm, R, W_, A, G, K1m, K2m, n):
        Y1m = ex.evaluate(project_expr, {Qf: Qm, Gy: G}, n)
        vals = {Qf: Qm, Rf: R, Wd: W_, ex.A: A, Gy: G, ex.Y1: Y1m, ex.K1: K1m, ex.K2: K2m}
        return run_bindings(bindings, vals, n), Y1m

    def residual(size, R, A, G, W, K1, K2, Q=None, K=None):
        Qm = _q_of(size, Q, K)
        n = _sizes(size)
        xm = Qm * R
        # (i) the assembly, for arbitrary W, K1, K2
        out, Y1m = kernel(Qm, R, W, A, G, K1, K2, n)
        lam = sp.eye(size["T"]) + Qm * W * Qm.T
        Cb = Qm * K1 * Qm.T + Qm * K2 * (G - Qm * Y1m).T
        gx, ga = chain_rule_gradient(xm, A, G, lam, Cb)
        parts = [out["gx"] - gx, out["gA"] - ga]
        # (ii) end to end with p in place of exp
        S_, Wp = kernel_small_factors(R, A, size, W_of=lambda s: _poly(POLY, s) - sp.eye(s.rows))
        E_ = R * Y1m.T
        K1p = _poly_frechet(POLY, -S_, E_)
        K2p = _poly_phi(POLY, -S_) * R
        outp, _ = kernel(Qm, R, Wp, A, G, K1p, K2p, n)
        gxp, gap = _poly_chain_reference(xm, A, G)
        parts += [outp["gx"] - gxp, outp["gA"] - gap]
        # (iii) the front end's block matrix, with p in place of exp
        kk, dd = size["k"], size["d"]
        B = sp.zeros(2 * kk + dd, 2 * kk + dd)
        B[:kk, :kk] = -S_
        B[kk : 2 * kk, kk : 2 * kk] = -S_
        B[:kk, kk : 2 * kk] = E_
        B[:kk, 2 * kk :] = R
        PB = _poly(POLY, B)
        parts += [PB[:kk, kk : 2 * kk] - K1p, PB[:kk, 2 * kk :] - K2p]
        return _cancel(_vec(*parts))

    return MatrixIdentity(
        "[vp_lowrank_exp_vjp - chain rule (any W, K1, K2); the same with p = Taylor_3 end to end; "
        "blocks of p(B) - (K1, K2)] at x = QR",
        variables=lambda s: backward_variables(
            s, W=alg.general("w", s["k"], s["k"]), K1=alg.general("u", s["k"], s["k"]),
            K2=alg.general("v", s["k"], s["d"])),
        residual=residual,
        project=_project,
    )


def _then_dual(policy: Policy):
    """``policy`` (search and derivation), then, unless it refutes, the dual-number check of the polynomial
    chain-rule reference (noted on the first evidence when it agrees)."""

    def check(ctx) -> list[Evidence]:
        evidence = policy(ctx)
        if any(e.level is Level.REFUTED for e in evidence):
            return evidence
        return with_dual_check(ctx, evidence, lambda c: _poly(POLY, c), _poly_chain_reference, DUAL_SIZE,
                               what="polynomial (Taylor_3)")

    return check


def make_exp_vjp_claim(bindings=None, claim_id: str = "vp.lowrank_exp_vjp", expected: Level = Level.PROVED) -> Claim:
    """The claim; ``bindings`` replaces ``LOWRANK_EXP_VJP`` (negative controls)."""
    return Claim(
        id=claim_id,
        title="low-rank exponential backward",
        statement="For y = exp(C)^T x, C = x A x^T, x = QR (Q^T Q = I), S = R A R^T, W = exp(S) - I, A skew, "
        "Y1 = Q^T Gy, K1 = L_exp(-S, R Y1^T) and K2 = phi(-S) R (phi(X) = int_0^1 exp(sX) ds), the outputs gx, "
        "gA of the bindings of vp_lowrank_exp_vjp are the gradient of <Gy, y> with respect to x and the skew "
        "part of its gradient with respect to A; K1 and K2 are the blocks (1,2) and (1,3) of "
        "exp([[-S, R Y1^T, R], [0, -S, 0], [0, 0, 0]]).",
        latex=r"\texttt{vp\_lowrank\_exp\_vjp}(Q, R, W, A, \bar y, Y_1, K_1, K_2) = "
        r"\left(\nabla_x\langle\bar y, y\rangle,\ \mathrm{skew}\,\nabla_A\langle\bar y, y\rangle\right),\ "
        r"K_1 = L_{\exp}(-S, RY_1^T),\ K_2 = \varphi(-S)R",
        source=SOURCE.format("vp_lowrank_exp_vjp, vp_lowrank_project"),
        expected=expected,
        checker=_then_dual(backward_policy(exp_vjp_identity(bindings), lambda: exp_vjp_derivation(bindings))),
        notes="The exponential enters through cited lemmas: the chain rule with the adjoint of L_exp, the integral "
        "representation of L_exp (exp_frechet_integral), vp.lowrank_form for e^C and e^{-sC}, and the block formula "
        "(exp_block_triangular, with its induction step and the Beta integral checked); SymPy's matrix derivatives, "
        "the image at x = QR and the kernel's bindings are checked for every size, and the whole backward exactly "
        "end to end with the Taylor polynomial of degree 3 in place of exp.",
    )
