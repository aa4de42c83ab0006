"""The claim ``vp.lowrank_cayley_vjp``: the Cayley backward of the low-rank form."""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import BlockDiagMatrix, Identity, Inverse, MatrixSymbol, Trace
from sympy.polys.matrices import DomainMatrix

from .. import algebra as alg
from .. import expressions as ex
from ..claim import Claim
from ..proof import Check, in_algebra, relation
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity, exact_evidence
from ._common import Policy, run_bindings
from ._free_algebra import ORTHONORMAL, An, At, Q, Qt, R, Rt, S, W, compose, nc, nc_equal, to_nc
from ._kernel_checks import Gradient, blockwise, matrix_derivative, matrix_diff
from ._lowrank_exact import Gy, Qf, Rf, SOURCE, Sd, Wd, _cancel, _project, _q_of, _sizes, _vec, backward_policy
from ._lowrank_exact import backward_variables, cayley_chain_reference, kernel_small_factors, nc_rules
from ._lowrank_exact import with_dual_check

# ---------------------------------------------------------------------------
# vp.lowrank_cayley_vjp
# ---------------------------------------------------------------------------


Minv, Minvt = nc("{(I + C)^{-1}}"), nc("{(I + C)^{-1}}^T")
Cn, Ct, St, Wt = nc("C"), nc("C^T"), nc("S^T"), nc("W^T")


def _image_at_qr(expr):
    """The free-algebra image of a matrix expression in ``x, A, Gy`` and inverses of ``I + C``, ``C = x skew(A) x^T``,
    at ``x = QR`` with ``A^T = -A``: an inverse whose argument is ``I + C`` (``I + C^T``) becomes the generator
    ``(I + C)^{-1}`` (its transpose); any other inverse is outside the algebra."""
    skew_a = {At: -An}
    c_img = Q * R * An * Rt * Qt

    def generator(node):
        arg = to_nc(node.arg, {"x": Q * R}).xreplace(skew_a)
        for sign, name in ((1, "{(I + C)^{-1}}"), (-1, "{(I + C)^{-1}}^T")):
            if nc_equal(arg, 1 + sign * c_img, ()):
                return MatrixSymbol(name, *node.shape)
        raise alg.NotInAlgebra(f"Expected the inverse of I + C or of its transpose. Got {node}.")

    return to_nc(expr.replace(lambda e: isinstance(e, Inverse), generator), {"x": Q * R}).xreplace(skew_a)


def _image_check(name: str = "image in the free algebra at x = QR, A^T = -A, (I + C)^{-1} a generator") -> Check:
    """The lhs is a block-diagonal matrix of matrix expressions, the rhs a column of free-algebra elements, and each
    block's image at ``x = QR`` (:func:`_image_at_qr`) equals its entry; ``name`` is the relation's name."""

    def decide(lhs, rhs):
        if not (isinstance(lhs, BlockDiagMatrix) and isinstance(rhs, sp.ImmutableMatrix)):
            return False
        if rhs.shape != (len(lhs.diag), 1):
            return False
        try:
            return all(nc_equal(_image_at_qr(b), e, ()) for b, e in zip(lhs.diag, rhs))
        except alg.NotInAlgebra:
            return False

    return relation(decide, name)


def _entrywise_nc(inner: Check) -> Check:
    """Both sides are columns of free-algebra elements of one length and ``inner`` accepts every pair of entries."""

    def decide(lhs, rhs, pairs):
        if not (isinstance(lhs, sp.ImmutableMatrix) and isinstance(rhs, sp.ImmutableMatrix) and lhs.shape == rhs.shape):
            return False
        return all(inner.decide(a, b, pairs) for a, b in zip(lhs, rhs))

    return Check(f"entrywise {inner.name}", decide, inner.facts, inner.subs)


#: the functional-calculus relations of S (skew) and W = Cayley(S) - I the low-rank chains use, as (lhs, rhs, eps):
#: each is a checked step of the derivation and then a rewriting rule of the free algebra
_W_RELATIONS = (
    (Wd * Sd, -2 * Sd - Wd, None),
    (Sd * Wd, -2 * Sd - Wd, None),
    (Sd * Wd.T, Wd.T - 2 * Sd, -1),
    (Wd.T * Sd, Wd.T - 2 * Sd, -1),
    (Wd.T * Wd, -Wd - Wd.T, -1),
    (Wd * Wd.T, -Wd - Wd.T, -1),
)


def _w_steps(w_kernel) -> tuple[list[Step], list, tuple]:
    """The checked steps of :data:`_W_RELATIONS` with ``W`` the kernel's expression ``w_kernel``, their left sides
    (for the derivation's subject) and the matching rewriting rules."""
    steps, lhs_all, rules = [], [], []
    for lhs, rhs, eps in _W_RELATIONS:
        show_l, show_r = (e.xreplace({Wd: w_kernel}) for e in (lhs, rhs))
        why = "S^T = -S (the binding is skew, vp.lowrank_form)" if eps == -1 else "no transpose"
        steps.append(Step(show_l, show_r, f"kernel cayley_minus_identity, functional calculus in S; {why}",
                          in_algebra(Sd, eps)))
        lhs_all.append(show_l)
        rules.append((tuple(to_nc(f) for f in lhs.args), to_nc(rhs)))
    return steps, lhs_all, tuple(rules)


def cayley_vjp_derivation(bindings=None, w_kernel=None) -> Derivation:
    """The derivation for the Cayley backward; ``bindings`` replaces the generated ones and ``w_kernel`` the kernel
    cayley_minus_identity (negative controls)."""
    bindings = ex.LOWRANK_CAYLEY_VJP if bindings is None else bindings
    w_kernel = ex.CAYLEY_MINUS_I if w_kernel is None else w_kernel
    xs, As = ex.x, ex.A
    C = xs * ((As - As.T) / 2) * xs.T
    It = Identity(ex.T)
    loss = Trace(Gy.T * ((It - C) * Inverse(It + C)).T * xs)
    grads = BlockDiagMatrix(Gradient(loss, xs), Gradient(loss, As))
    sympy_grads = BlockDiagMatrix(matrix_diff(loss, xs), matrix_diff(loss, As))
    images = sp.ImmutableMatrix([[_image_at_qr(b)] for b in sympy_grads.diag])
    got = compose(bindings, {})
    kernel = sp.ImmutableMatrix([[got["gx"]], [got["gA"]]])
    N, Nt = 1 + Q * W * Qt / 2, 1 + Q * Wt * Qt / 2
    w_steps, w_lhs, w_rules = _w_steps(w_kernel)
    c_qsq = ((Cn, Q * S * Qt), (Ct, Q * St * Qt), (St, -S))
    inverse_steps = [
        Step(Minv, Minv * (1 + Cn) * N, "(I + C)(I + QWQ^T/2) = I: C = QSQ^T (vp.lowrank_form), WS and SW rules",
             nc_rules("C = QSQ^T and the W relations", subs=c_qsq, rules=ORTHONORMAL + w_rules)),
        Step(Minv * (1 + Cn) * N, N, "(I + C)^{-1}(I + C) = I", nc_rules("the inverse", facts=("inverse",))),
        Step(Minvt, Minvt * (1 + Ct) * Nt, "(I + C^T)(I + QW^TQ^T/2) = I: the same with S^T = -S",
             nc_rules("C = QSQ^T and the W relations", subs=c_qsq, rules=ORTHONORMAL + w_rules)),
        Step(Minvt * (1 + Ct) * Nt, Nt, "((I + C)^{-1})^T(I + C)^T = I", nc_rules("the inverse", facts=("inverse",))),
    ]
    final_subs = ((Minv, N), (Minvt, Nt))
    return Derivation(
        assumptions=[
            r"L = \langle\bar y, \mathrm{Cayley}(C)^Tx\rangle,\ C = x\,\tfrac12(A - A^T)\,x^T\ "
            r"\text{(the forward uses the skew part of } A)",
            r"x = QR,\ Q^TQ = I,\ A^T = -A,\ S = RAR^T,\ W = \mathrm{Cayley}(S) - I\ (\texttt{vp.lowrank\_form})",
            r"(I + C)^{-1}\ \text{exists (cayley.well\_defined)};\ \text{free algebra modulo } Q^TQ = I",
        ],
        facts={"A skew": {At: -An}, "inverse": {Minv * Cn: 1 - Minv, Minvt * Ct: 1 - Minvt}},
        subject=(*w_lhs, Minv, Minvt),
        steps=[
            *w_steps,
            *inverse_steps,
            Step(grads, sympy_grads, "SymPy's matrix derivatives of L in x and in A (term by term)",
                 blockwise(matrix_derivative())),
            Step(sympy_grads, images, "at x = QR with A^T = -A; the inverses of I + C and I + C^T as generators",
                 _image_check()),
            Step(images, kernel, "the bindings of vp_lowrank_cayley_vjp composed; (I + C)^{-1} = I + QWQ^T/2 "
                 "(steps 7-10), RAR^T = S, the W relations (steps 1-6), Q^TQ = I",
                 _entrywise_nc(nc_rules("(I + C)^{-1} = I + QWQ^T/2, RAR^T = S and the W relations",
                                        subs=final_subs, rules=ORTHONORMAL + (((R, An, Rt), S),) + w_rules,
                                        facts=("A skew",)))),
        ],
        remark=r"\texttt{vp\_lowrank\_cayley\_vjp}(Q, R, W, A, \bar y) = "
        r"\left(\nabla_x L,\ \nabla_A L = \mathrm{skew}(\nabla_A L)\right)",
        conclusion=sp.Eq(grads, kernel, evaluate=False),
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
        return with_dual_check(ctx, evidence, alg.cayley, cayley_chain_reference, DUAL_SIZE, what="Cayley")

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
            backward_policy(cayley_vjp_identity(bindings), lambda: cayley_vjp_derivation(bindings)), bindings),
        notes="The chain-rule reference is the T x T form (Cayley(C), cayley.vjp); it is itself checked "
        "against exact dual-number Jacobians at one rational point.",
    )
