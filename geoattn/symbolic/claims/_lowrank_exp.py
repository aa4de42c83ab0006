"""The claim ``vp.lowrank_exp_vjp``: the exponential backward of the low-rank form."""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from .. import expressions as ex
from ..kernel_table import kernel as kernel_spec
from ..claim import Claim
from ..proof import identity
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity
from ._common import Policy, run_bindings
from ._free_algebra import (
    K1, K2, PROJECTED, SKEW, An, G, Gt, Q, Qt, R, Rt, W, compose, nc, nc_check, nc_equal, nc_transpose,
)
from ._lowrank_cayley import DUAL_SIZE
from ._lowrank_exact import (
    SEARCH_SIZES,
    backward_variables,
    SOURCE,
    Gy,
    Qf,
    Rf,
    Wd,
    _calculus_steps,
    _cancel,
    _dual_note,
    _poly,
    _poly_frechet,
    _poly_phi,
    _project,
    _q_of,
    _reference_images,
    _sizes,
    _taylor_coeffs,
    _vec,
    chain_rule_gradient,
    kernel_small_factors,
    reference_dual_evidence,
)

# ---------------------------------------------------------------------------
# vp.lowrank_exp_vjp
# ---------------------------------------------------------------------------


def _block_power_step() -> Step:
    """Induction step for the blocks of B^j, B = [[X, E, F], [0, X, 0], [0, 0, 0]], in the free algebra."""
    X, E, F, L = nc("X"), nc("E"), nc("F"), nc("L_j")
    j = sp.Symbol("j", integer=True, positive=True)
    z = sp.Integer(0)
    B = sp.Matrix([[X, E, F], [z, X, z], [z, z, z]])
    Bj = sp.Matrix([[X**j, L, X ** (j - 1) * F], [z, X**j, z], [z, z, z]])
    want = sp.Matrix([[X ** (j + 1), X**j * E + L * X, X**j * F], [z, X ** (j + 1), z], [z, z, z]])
    got = Bj * B

    def ok():
        return all(nc_equal(a, b, ()) for a, b in zip(got, want))

    return Step(
        r"\begin{pmatrix}X^j & L_j & X^{j-1}F\\ 0 & X^j & 0\\ 0 & 0 & 0\end{pmatrix}"
        r"\begin{pmatrix}X & E & F\\ 0 & X & 0\\ 0 & 0 & 0\end{pmatrix}",
        r"\begin{pmatrix}X^{j+1} & X^jE + L_jX & X^jF\\ 0 & X^{j+1} & 0\\ 0 & 0 & 0\end{pmatrix}",
        "block product in the free algebra; so by induction L_j = sum_{i<j} X^i E X^{j-1-i}",
        ok,
    )


def _beta_step() -> Step:
    s, i, m = sp.symbols("s i m", integer=True, nonnegative=True)
    integral = sp.integrate(s**i * (1 - s) ** m, (s, 0, 1))
    want = sp.factorial(i) * sp.factorial(m) / sp.factorial(i + m + 1)

    def ok():
        val = integral.args[0][0] if isinstance(integral, sp.Piecewise) else integral
        return sp.simplify(sp.gammasimp(val - want)) == 0

    return Step(
        r"\int_0^1 \frac{s^i}{i!}\frac{(1-s)^m}{m!}\,ds",
        r"\frac{1}{(i+m+1)!}",
        "SymPy integration (Beta integral); so the series of int_0^1 e^{sX} E e^{(1-s)X} ds and of "
        "sum_j (1/j!) sum_{i<j} X^i E X^{j-1-i} agree termwise (m = 0: phi(X) = sum_m X^m/(m+1)!)",
        ok,
    )


def exp_vjp_derivation(bindings=None) -> Derivation:
    """The derivation for the exponential backward; ``bindings`` replaces the generated ones."""
    bindings = ex.LOWRANK_EXP_VJP if bindings is None else bindings
    steps, grads = _calculus_steps()
    E, F = nc("e^{-sS}"), nc("e^{-(1-s)S}")
    Y1 = nc("Y1")
    Y1t = nc_transpose(Y1)
    project = compose(kernel_spec("vp_lowrank_project").outputs)["Y1"]
    lam = 1 + Q * W * Qt
    cbar = Q * K1 * Qt + Q * K2 * nc_transpose(G - Q * Y1)
    ref_gx, ref_gA = _reference_images(grads, cbar, lam)
    got = compose(bindings)
    C_img = Q * R * An * Rt * Qt
    integrand = (Q * E * R) * (Gt + Y1t * (F - 1) * Qt)
    return Derivation(
        assumptions=[
            r"y = \Lambda^Tx,\ \Lambda = e^C,\ C = xAx^T,\ A^T = -A,\ L = \langle\bar y, y\rangle",
            r"x = QR,\ Q^TQ = I,\ S = RAR^T,\ \Lambda = I + QWQ^T,\ W = e^S - I\ (\texttt{vp.lowrank\_form})",
            r"Y_1 = Q^T\bar y\ (\texttt{vp\_lowrank\_project}),\ \varphi(X) = \int_0^1 e^{sX}ds",
        ],
        steps=[
            Step(
                project,
                Y1,
                "the kernel vp_lowrank_project; the rewriting rules Q^T Gy -> Y1, Gy^T Q -> Y1^T",
                nc_check(PROJECTED),
            ),
            *steps[:1],
            Step(
                r"\bar C",
                r"L_{\exp}(C^T, \bar\Lambda)",
                "lemma: <G, L_exp(X, E)> = <L_exp(X^T, G), E> (adjoint of the Frechet derivative; termwise)", lemma='exp_frechet_integral',
            ),
            Step(
                nc_transpose(C_img),
                -C_img,
                "C^T = -C at x = QR for skew A",
                nc_check(()),
            ),
            Step(
                r"L_{\exp}(X, E)",
                r"\sum_{j\ge1}\frac1{j!}\sum_{i<j}X^iEX^{j-1-i}",
                "lemma: termwise derivative of the exponential series", lemma='power_series_calculus',
            ),
            _beta_step(),
            Step(
                r"e^{-sC}",
                1 + Q * (E - 1) * Qt,
                "vp.lowrank_form with f(z) = e^{-sz} (a power series with f(0) = I)", lemma='ledger:vp.lowrank_form',
            ),
            Step(
                (1 + Q * (E - 1) * Qt) * Q * R,
                Q * E * R,
                "e^{-sC} x at x = QR: Q^T Q = I",
                nc_check(),
            ),
            Step(
                Gt * (1 + Q * (F - 1) * Qt),
                Gt + Y1t * (F - 1) * Qt,
                "Gy^T e^{-(1-s)C}: Gy^T Q = Y1^T",
                nc_check(PROJECTED),
            ),
            Step(
                integrand,
                Q * (E * R * Y1t * F) * Qt + Q * (E * R) * nc_transpose(G - Q * Y1),
                "the integrand e^{-sC} x Gy^T e^{-(1-s)C}, regrouped",
                nc_check(),
            ),
            Step(
                r"\bar C = \int_0^1 e^{-sC}x\bar y^Te^{-(1-s)C}ds",
                cbar,
                "lemma: linearity of the integral, K1 = int e^{-sS} R Y1^T e^{-(1-s)S} ds = L_exp(-S, R Y1^T), "
                "K2 = int e^{-sS} ds R = phi(-S) R", lemma='exp_frechet_integral',
            ),
            *steps[1:],
            Step(
                got["gx"],
                ref_gx,
                "compose the bindings of vp_lowrank_exp_vjp; chain rule with Lambda = I + QWQ^T, "
                "Cbar = Q K1 Q^T + Q K2 (Gy - Q Y1)^T, x = QR; expand, Q^T Q = I, Q^T Gy = Y1 (any K1, K2, W, A)",
                nc_check(PROJECTED),
            ),
            Step(
                got["gA"],
                ref_gA,
                "the same for the skew part of x^T Cbar x",
                nc_check(PROJECTED),
            ),
            _block_power_step(),
            Step(
                r"\exp\begin{pmatrix}X & E & F\\ 0 & X & 0\\ 0 & 0 & 0\end{pmatrix}_{(1,2),\,(1,3)}",
                r"L_{\exp}(X, E),\ \varphi(X)F",
                "lemma: sum the blocks of B^j/j! (the block-product and Beta-integral steps); the front end's "
                "_exp_frechet_blocks with X = -S, E = R Y1^T, F = R gives K1, K2 (Mathias; Van Loan 1978)", lemma='exp_frechet_integral',
            ),
        ],
        remark=r"\texttt{vp\_lowrank\_exp\_vjp}(Q, R, W, A, \bar y, Y_1, K_1, K_2) = "
        r"\left(\nabla_x L,\ \mathrm{skew}(\nabla_A L)\right)",
        conclusion=sp.Eq(project, r"L_{\exp}(X, E),\ \varphi(X)F", evaluate=False),
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
    project_expr = kernel_spec("vp_lowrank_project").outputs[0][1]

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
        bad = reference_dual_evidence(
            ctx, lambda c: _poly(POLY, c), _poly_chain_reference, DUAL_SIZE, what="polynomial (Taylor_3)"
        )
        if bad is not None:
            return evidence + [bad]
        evidence[0].detail += _dual_note(DUAL_SIZE)
        return evidence

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
        checker=_then_dual(
            Policy(
                identity=exp_vjp_identity(bindings),
                search=SEARCH_SIZES,
                points=lambda ctx: 1 + ctx.depth,
                prove=lambda: exp_vjp_derivation(bindings),
            )
        ),
        notes="The exponential enters through stated lemmas (Frechet derivative, its adjoint, the integral "
        "representation by the verified Beta integral, the block-exponential formula); the algebra is verified "
        "for every size, and exactly end to end with the Taylor polynomial of degree 3 in place of exp.",
    )
