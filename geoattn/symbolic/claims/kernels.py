"""The expressions the torch kernels are generated from (``geoattn.symbolic.expressions``).

Every claim here imports the very expression objects that ``geoattn codegen``
prints, so what is verified is what runs.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import Identity, Inverse, MatrixSymbol, Trace, Transpose

from .. import algebra as alg
from .. import expressions as ex
from ..claim import Claim, register
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity, exact_evidence
from ._common import same, sizes, standard

T, d = ex.T, ex.d
I = Identity(T)
C, x, A, W, q, Lam, G = ex.C, ex.x, ex.A, ex.W, ex.q, ex.Lam, ex.G
H = MatrixSymbol("H", T, T)


def _ev(expr, values, size):
    return ex.evaluate(expr, values, {T: size["T"], d: size.get("d", 1)})


# ---------------------------------------------------------------------------
# cayley.apply_form
# ---------------------------------------------------------------------------


def _left_solve_derivation() -> Derivation:
    return Derivation(
        assumptions=[r"I + C \text{ invertible}"],
        steps=[
            Step(
                ex.CAYLEY,
                ex.CAYLEY_RIGHT,
                "functional calculus: (1 - c)/(1 + c) either way round",
                lambda: alg.equal_in_algebra(ex.CAYLEY, ex.CAYLEY_RIGHT, C, None),
            )
        ],
        conclusion=r"(I + C)^{-1}(I - C) = (I - C)(I + C)^{-1} = \mathrm{Cayley}(C)",
    )


def _left_solve_identity() -> MatrixIdentity:
    def residual(size, Cm):
        got = _ev(ex.CAYLEY, {C: Cm}, size)
        return (got - alg.cayley(Cm)).applyfunc(sp.cancel)

    return MatrixIdentity(
        "(I + C)^-1 (I - C) - (I - C)(I + C)^-1",
        variables=lambda s: {"Cm": alg.general("c", s["T"], s["T"])},
        residual=residual,
        valid=lambda s, Cm: (sp.eye(s["T"]) + Cm).det() != 0,
    )


register(
    Claim(
        id="kernels.cayley_left_solve",
        title="Cayley as a left solve",
        statement="(I + C)^-1 (I - C) = (I - C)(I + C)^-1 for every C with I + C invertible.",
        latex=r"(I + C)^{-1}(I - C) = (I - C)(I + C)^{-1}",
        source="kernel cayley_matrix (geoattn.symbolic.expressions)",
        family="kernels",
        expected=Level.PROVED,
        checker=lambda ctx: standard(
            ctx, ident=_left_solve_identity(), random_sizes=sizes(T=[1, 2, 3, 4]), prove=_left_solve_derivation
        ),
    )
)


def _apply_form_derivation() -> Derivation:
    out = Transpose(x.T * ex.CAYLEY_RIGHT)
    cay_t = Inverse(I - C) * (I + C)
    return Derivation(
        assumptions=[r"C^T = -C", r"x = Z^T\in\mathbb{R}^{T\times d}"],
        steps=[
            Step(out, ex.CAYLEY_RIGHT.T * x, "transpose of a product", lambda: same(out.doit(), ex.CAYLEY_RIGHT.T * x)),
            Step(ex.CAYLEY_RIGHT.T, cay_t, "C^T = -C", lambda: same(ex.CAYLEY_RIGHT.T.subs(C.T, -C), cay_t)),
            Step(
                cay_t,
                2 * Inverse(I - C) - I,
                "functional calculus: (1 + c)/(1 - c) = 2/(1 - c) - 1",
                lambda: alg.equal_in_algebra(cay_t, 2 * Inverse(I - C) - I, C, None),
            ),
            Step(
                (2 * Inverse(I - C) - I) * x,
                ex.CAYLEY_APPLY_SOLVE,
                "distribute over x (the generated kernel cayley_apply_solve)",
                lambda: same(((2 * Inverse(I - C) - I) * x).expand(), ex.CAYLEY_APPLY_SOLVE),
            ),
            Step(
                ex.CAYLEY_APPLY_MATRIX.subs(Lam, ex.CAYLEY_RIGHT),
                ex.CAYLEY_RIGHT.T * x,
                "the generated kernel cayley_apply_matrix with Lam = Cayley(C) (kernels.cayley_left_solve)",
                lambda: same(ex.CAYLEY_APPLY_MATRIX.subs(Lam, ex.CAYLEY_RIGHT), ex.CAYLEY_RIGHT.T * x),
            ),
        ],
        conclusion=r"(x^T\mathrm{Cayley}(C))^T = 2(I - C)^{-1}x - x = \mathrm{Cayley}(C)^Tx",
    )


def _apply_form_identity() -> MatrixIdentity:
    def residual(size, Cm, X):
        want = (X.T * alg.cayley(Cm)).T
        vals = {C: Cm, x: X}
        a = _ev(ex.CAYLEY_APPLY_SOLVE, vals, size)
        b = _ev(ex.CAYLEY_APPLY_MATRIX, {**vals, Lam: _ev(ex.CAYLEY, vals, size)}, size)
        return sp.Matrix.vstack(a - want, b - want).applyfunc(sp.cancel)

    return MatrixIdentity(
        "[apply_solve - (x^T Cayley(C))^T; apply_matrix - (x^T Cayley(C))^T]",
        variables=lambda s: {"Cm": alg.skew("c", s["T"]), "X": alg.general("x", s["T"], s["d"])},
        residual=residual,
    )


register(
    Claim(
        id="cayley.apply_form",
        title="Cayley applied without forming it",
        statement="For skew C, Z Cayley(C) = 2 Z (I + C)^-1 - Z; in the row layout x = Z^T this is "
        "2 (I - C)^-1 x - x.",
        latex=r"Z(I - C)(I + C)^{-1} = 2Z(I + C)^{-1} - Z",
        source="kernel cayley_apply (geoattn.symbolic.expressions)",
        family="kernels",
        expected=Level.PROVED,
        checker=lambda ctx: standard(
            ctx, ident=_apply_form_identity(), random_sizes=sizes(T=[2, 3, 4], d=[1, 3]), prove=_apply_form_derivation
        ),
    )
)


# ---------------------------------------------------------------------------
# cayley.vjp
# ---------------------------------------------------------------------------


def _vjp_derivation() -> Derivation:
    cay = ex.CAYLEY_RIGHT
    dlam = -(I + cay) * H * Inverse(I + C)
    grad = Trace(G.T * dlam).diff(H)
    D = MatrixSymbol("D", T, T)  # stands for C^T
    left_want = -(I + cay).T
    right_want = sp.Rational(1, 2) * (I + cay).T
    left, _, right = grad.args[0], grad.args[1], grad.args[2]

    def in_ct(expr):
        return expr.doit().subs(C.T, D)

    def grad_layout_ok() -> bool:
        # SymPy's matrix derivative against entrywise derivatives at an explicit size
        Cm = sp.Matrix([[1, sp.Rational(2, 3)], [-3, sp.Rational(1, 2)]])
        Gm = sp.Matrix([[2, -1], [sp.Rational(1, 5), 3]])
        Hm = alg.general("h", 2, 2)
        e2 = sp.eye(2)
        f = (Gm.T * (-(e2 + alg.cayley(Cm)) * Hm * (e2 + Cm).inv())).trace()
        entrywise = sp.Matrix(2, 2, lambda a, b: sp.diff(f, Hm[a, b]))
        symbolic = ex.evaluate(grad, {C: Cm, G: Gm}, {T: 2})
        return (entrywise - symbolic).applyfunc(sp.cancel).is_zero_matrix

    return Derivation(
        assumptions=[r"\Lambda = \mathrm{Cayley}(C),\ I + C \text{ invertible}", r"L = \langle G, \Lambda\rangle = \mathrm{Tr}(G^T\Lambda)"],
        steps=[
            Step(
                r"D\Lambda[H]",
                dlam,
                r"differentiate \Lambda(I + C) = I - C: D\Lambda[H](I + C) + \Lambda H = -H",
                lambda: same(sp.expand(dlam * (I + C) + cay * H + H).doit(), sp.ZeroMatrix(T, T)),
            ),
            Step(
                r"\nabla_H\,\mathrm{Tr}(G^TD\Lambda[H])",
                grad,
                "matrix calculus (SymPy), cross-checked entrywise at an explicit size",
                grad_layout_ok,
            ),
            Step(
                left,
                left_want,
                "functional calculus in C^T: -1 + (c - 1)/(1 + c) = -(1 + (1 - c)/(1 + c))",
                lambda: alg.equal_in_algebra(in_ct(left), in_ct(left_want), D, None),
            ),
            Step(
                right,
                right_want,
                "functional calculus in C^T: 1/(1 + c) = (1/2)(1 + (1 - c)/(1 + c))",
                lambda: alg.equal_in_algebra(in_ct(right), in_ct(right_want), D, None),
            ),
            Step(
                left_want * G * right_want,
                ex.CAYLEY_VJP.subs(Lam, cay),
                "the generated kernel cayley_vjp with Lam = Cayley(C)",
                lambda: same(sp.expand(left_want * G * right_want), sp.expand(ex.CAYLEY_VJP.subs(Lam, cay))),
            ),
        ],
        conclusion=r"\frac{\partial L}{\partial C} = -\tfrac12(I + \Lambda)^TG(I + \Lambda)^T",
    )


def vjp_identity(form: str = "exact") -> MatrixIdentity:
    """``<G, DLambda[H]> - <VJP, H>`` exactly (dual numbers); ``form="input"`` uses
    ``-1/2 (I + C)^T G (I + C)^T`` (the input in place of the output), a false
    variant kept as a negative control."""

    def residual(size, Cm, Gm, Hm):
        lam = alg.cayley(Cm)
        dlam = alg.cayley(alg.Dual(Cm, Hm)).dv
        if form == "exact":
            vjp = _ev(ex.CAYLEY_VJP, {Lam: lam, G: Gm}, size)
        else:
            e = sp.eye(size["T"])
            vjp = -sp.Rational(1, 2) * (e + Cm).T * Gm * (e + Cm).T
        return sp.cancel((Gm.T * dlam).trace() - (vjp.T * Hm).trace())

    return MatrixIdentity(
        "<G, DLambda[H]> - <VJP(G), H>",
        variables=lambda s: {
            "Cm": alg.general("c", s["T"], s["T"]),
            "Gm": alg.general("g", s["T"], s["T"]),
            "Hm": alg.general("h", s["T"], s["T"]),
        },
        residual=residual,
        valid=lambda s, Cm, Gm, Hm: (sp.eye(s["T"]) + Cm).det() != 0,
    )


def make_vjp_claim(form: str = "exact", claim_id: str = "cayley.vjp") -> Claim:
    """The Cayley VJP claim; ``form="input"`` is its false variant (see :func:`vjp_identity`)."""
    exact = form == "exact"
    return Claim(
        id=claim_id,
        title="vector-Jacobian product of Cayley" + ("" if exact else " (with I + C)"),
        statement="For Lambda = Cayley(C) and output gradient G, dL/dC = -1/2 (I + Lambda)^T G (I + Lambda)^T."
        if exact
        else "dL/dC = -1/2 (I + C)^T G (I + C)^T.",
        latex=r"\frac{\partial L}{\partial C} = -\tfrac12(I + \Lambda)^TG(I + \Lambda)^T"
        if exact
        else r"\frac{\partial L}{\partial C} = -\tfrac12(I + C)^TG(I + C)^T",
        source="kernel cayley backward (geoattn.symbolic.expressions)",
        family="kernels",
        expected=Level.PROVED if exact else Level.REFUTED,
        checker=lambda ctx: standard(
            ctx,
            ident=vjp_identity(form),
            random_sizes=sizes(T=[1, 2, 3, 4]),
            prove=_vjp_derivation if exact else None,
        ),
    )


register(make_vjp_claim())


# ---------------------------------------------------------------------------
# exp_skew.eigh_form, exp_skew.vjp
# ---------------------------------------------------------------------------


def _eig_data(S: sp.Matrix):
    """Exact ``U, theta`` with ``i S = U diag(theta) U^H`` (U unitary)."""
    Hm = sp.I * S
    cols, thetas = [], []
    for val, _, vecs in Hm.eigenvects():
        for v in sp.GramSchmidt(vecs, orthonormal=True):
            cols.append(v)
            thetas.append(val)
    U = sp.Matrix.hstack(*cols).applyfunc(sp.simplify)
    return U, sp.Matrix(thetas)


def _eigh_form_identity(expr=None, reference=None, name: str = "E(U, theta) - exp(S)") -> MatrixIdentity:
    expr = ex.EXP_SKEW_FROM_EIGH if expr is None else expr
    reference = (lambda S: S.exp()) if reference is None else reference

    def residual(size, S):
        U, th = _eig_data(S)
        got = _ev(expr, {ex.U: U, ex.theta: th}, size)
        return (got - reference(S)).applyfunc(lambda v: sp.simplify(sp.expand_complex(v)))

    return MatrixIdentity(name, variables=lambda s: {"S": alg.skew("s", s["T"])}, residual=residual)


def _check_eigh_form(ctx, ident: MatrixIdentity | None = None) -> list[Evidence]:
    ident = ident or _eigh_form_identity()
    ev = standard(ctx, ident=ident, random_sizes=[{"T": 2}, {"T": 3}], points=1)
    if ev and ev[0].level is Level.REFUTED:
        return ev
    # symbolic at T = 2: S = [[0, s], [-s, 0]], i S has eigenvalues -s, s
    return [exact_evidence(ident, [{"T": 1}, {"T": 2}], method="exact symbolic identity at explicit sizes", seed=ctx.seed_for("x"))]


register(
    Claim(
        id="exp_skew.eigh_form",
        title="exp of skew S from the eigendecomposition of iS",
        statement="For skew S with i S = U diag(theta) U^H (U unitary, theta real), "
        "exp(S) = Re(U diag(exp(-i theta)) U^H).",
        latex=r"iS = U\,\mathrm{diag}(\theta)\,U^H \implies \exp(S) = \operatorname{Re}\left(U\,\mathrm{diag}(e^{-i\theta})\,U^H\right)",
        source="kernel exp_skew (geoattn.symbolic.expressions)",
        family="kernels",
        expected=Level.CHECKED,
        checker=_check_eigh_form,
        notes="Exact symbolic identity at T <= 2 and exact evaluation at a rational 3 x 3 point; for all T it "
        "is exp(U D U^H) = U exp(D) U^H, which is not mechanised here.",
    )
)

register(
    Claim(
        id="cayley.eigh_form",
        title="Cayley of skew C from the eigendecomposition of iC",
        statement="For skew C with i C = U diag(theta) U^H (U unitary, theta real), "
        "Cayley(C) = Re(U diag((1 + i theta)/(1 - i theta)) U^H).",
        latex=r"iC = U\,\mathrm{diag}(\theta)\,U^H \implies \mathrm{Cayley}(C) = "
        r"\operatorname{Re}\left(U\,\mathrm{diag}\left(\tfrac{1 + i\theta}{1 - i\theta}\right)U^H\right)",
        source="kernel cayley at large norms (geoattn.symbolic.expressions)",
        family="kernels",
        expected=Level.CHECKED,
        checker=lambda ctx: _check_eigh_form(
            ctx, _eigh_form_identity(ex.CAYLEY_FROM_EIGH, alg.cayley, "L(U, theta) - Cayley(S)")
        ),
        notes="Exact symbolic identity at T <= 2 and exact evaluation at a rational 3 x 3 point; for all T it "
        "is f(U D U^H) = U f(D) U^H for f(z) = (1 - z)/(1 + z) at the eigenvalues -i theta of C.",
    )
)


def _exp_vjp_derivation() -> Derivation:
    t, lj, lk = sp.symbols("t lambda_j lambda_k")
    integral = sp.integrate(sp.exp(t * lj) * sp.exp((1 - t) * lk), (t, 0, 1))
    phi = (sp.exp(lj) - sp.exp(lk)) / (lj - lk)
    a, b = sp.symbols("a b", real=True)
    stable = ex.expm_divided_difference(conj=False)(a, b)
    lhs = (sp.exp(-sp.I * a) - sp.exp(-sp.I * b)) / (-sp.I * (a - b))

    def integral_ok():
        generic = integral.args[0][0] if isinstance(integral, sp.Piecewise) else integral
        return sp.simplify(generic - phi) == 0

    def stable_ok():
        sinc_arg = (a - b) / 2
        as_sin = stable.subs(sp.sinc(sinc_arg), sp.sin(sinc_arg) / sinc_arg)
        off = sp.simplify(sp.expand((lhs - as_sin).rewrite(sp.exp))) == 0
        diag = sp.simplify(stable.subs(b, a) - sp.exp(-sp.I * a)) == 0
        return off and diag

    return Derivation(
        assumptions=[r"iS = U\,\mathrm{diag}(\theta)U^H,\ S = U\,\mathrm{diag}(\lambda)U^H,\ \lambda_j = -i\theta_j",
                     r"\hat X := U^HXU"],
        steps=[
            Step(r"D\exp(S)[H]", r"\int_0^1 e^{tS}He^{(1-t)S}\,dt", "integral representation of the derivative of exp"),
            Step(r"U^H D\exp(S)[H]\,U", r"\int_0^1 e^{tD}\hat He^{(1-t)D}\,dt", r"e^{tS} = Ue^{tD}U^H"),
            Step(
                r"\left[\int_0^1 e^{tD}\hat He^{(1-t)D}dt\right]_{jk}",
                sp.Symbol(r"\hat H_{jk}") * phi,
                r"SymPy integration, \lambda_j \ne \lambda_k (e^{\lambda_j} at \lambda_j = \lambda_k)",
                integral_ok,
            ),
            Step(lhs, stable, r"stable form with \lambda = -i\theta (both branches)", stable_ok),
            Step(
                r"\frac{\partial\langle G, \exp(S)\rangle}{\partial S}",
                ex.EXP_SKEW_VJP,
                r"adjoint of H \mapsto U(\hat H\circ\Phi)U^H under \mathrm{Re}\,\mathrm{Tr}(X^HY): "
                r"G \mapsto \mathrm{Re}\,U(\hat G\circ\bar\Phi)U^H",
            ),
        ],
        conclusion=r"\frac{\partial L}{\partial S} = \operatorname{Re}\left(U\,(U^HGU\circ\bar\Phi)\,U^H\right),\quad "
        r"\Phi_{jk} = e^{-i(\theta_j + \theta_k)/2}\,\mathrm{sinc}\tfrac{\theta_j - \theta_k}{2}",
    )


def exp_vjp_identity(conj: bool = True) -> MatrixIdentity:
    """At T = 2: <G, Dexp(S)[H]> (integral formula, closed-form rotations) - <VJP, H>.

    ``conj=False`` uses Phi instead of its conjugate: a false variant (negative control).
    """
    expr = ex.EXP_SKEW_VJP
    if not conj:
        expr = expr.replace(
            lambda e: isinstance(e, ex.PairMatrix), lambda e: ex.PairMatrix(e.vec, ex.expm_divided_difference(False))
        )

    def residual(size, s, Gm, Hm):
        sv = s[0, 0]
        tt = sp.Symbol("t", real=True)

        def rot(a):
            return sp.Matrix([[sp.cos(a), sp.sin(a)], [-sp.sin(a), sp.cos(a)]])

        dexp = (rot(tt * sv) * Hm * rot((1 - tt) * sv)).applyfunc(lambda e: sp.integrate(e, (tt, 0, 1)))
        U = sp.Matrix([[1, 1], [sp.I, -sp.I]]) / sp.sqrt(2)
        th = sp.Matrix([-sv, sv])
        vjp = _ev(expr, {ex.U: U, ex.theta: th, G: Gm}, size)
        res = (Gm.T * dexp).trace() - (vjp.T * Hm).trace()
        res = res.replace(sp.sinc, lambda z: sp.sin(z) / z)  # sinc(0) = 1 is already evaluated
        return sp.simplify(sp.expand_complex(res))

    return MatrixIdentity(
        "<G, Dexp(S)[H]> - <VJP, H> (T = 2)",
        variables=lambda sz: {"s": alg.general("s", 1, 1), "Gm": alg.general("g", 2, 2), "Hm": alg.general("h", 2, 2)},
        residual=residual,
    )


register(
    Claim(
        id="exp_skew.vjp",
        title="vector-Jacobian product of exp on skew matrices",
        statement="For i S = U diag(theta) U^H, the gradient of <G, exp(S)> is Re(U (U^H G U o conj(Phi)) U^H) with "
        "Phi_jk = exp(-i(theta_j + theta_k)/2) sinc((theta_j - theta_k)/2).",
        latex=r"\frac{\partial\langle G, e^S\rangle}{\partial S} = \operatorname{Re}\left(U(U^HGU\circ\bar\Phi)U^H\right)",
        source="kernel exp_skew backward (geoattn.symbolic.expressions)",
        family="kernels",
        expected=Level.PROVED,
        checker=lambda ctx: standard(
            ctx,
            ident=exp_vjp_identity(),
            random_sizes=[{"T": 2}],
            points=1,
            prove=_exp_vjp_derivation,
        ),
    )
)


# ---------------------------------------------------------------------------
# layout and triangle forms
# ---------------------------------------------------------------------------


def _triangle_identity() -> MatrixIdentity:
    def residual(size, M):
        a = _ev(ex.skew_from_lower_expr(C), {C: M}, size) - alg.skew_from_lower(M)
        b = _ev(ex.uta_expr(C), {C: M}, size) - alg.upper_triangular_asymmetrize(M)
        return sp.Matrix.vstack(a, b)

    return MatrixIdentity(
        "[L(C) - L(C)^T - skew_from_lower(C); U(C) - U(C)^T - uta(C)]",
        variables=lambda s: {"M": alg.general("m", s["T"], s["T"])},
        residual=residual,
    )


register(
    Claim(
        id="kernels.triangle_forms",
        title="triangle maps as tril/triu expressions",
        statement="skew_from_lower(C) = tril(C, -1) - tril(C, -1)^T and "
        "upper_triangular_asymmetrize(C) = triu(C, 1) - triu(C, 1)^T.",
        latex=r"\mathrm{skew\_from\_lower}(C) = \mathrm{tril}_{-1}(C) - \mathrm{tril}_{-1}(C)^T",
        source="kernels skew_from_lower, upper_triangular_asymmetrize",
        family="kernels",
        expected=Level.CHECKED,
        checker=lambda ctx: standard(
            ctx,
            ident=_triangle_identity(),
            random_sizes=sizes(T=[2, 3]),
            exact_sizes=sizes(T=range(1, ctx.bound(8) + 1)),
        ),
    )
)


def _row_layout_derivation() -> Derivation:
    Z = MatrixSymbol("Z", d, T)
    Am = MatrixSymbol("A", d, d)
    Lm = MatrixSymbol("Lambda", T, T)
    corr = (Z.T * Am * Z).subs(Z, x.T).doit()
    out = Transpose(Z * Lm).subs(Z, x.T).doit()
    return Derivation(
        assumptions=[r"x = Z^T\in\mathbb{R}^{T\times d}"],
        steps=[
            Step(r"Z^TAZ", corr, "substitute Z = x^T", lambda: same(corr, ex.VP_CORRELATION.subs(ex.A, Am))),
            Step(r"(Z\Lambda)^T", out, "substitute Z = x^T; transpose of a product", lambda: same(out, Lm.T * x)),
        ],
        conclusion=r"\text{vp\_correlation} = xAx^T,\ \text{layer output } (Z\Lambda)^T = \Lambda^Tx",
    )


register(
    Claim(
        id="kernels.row_layout",
        title="row layout of the correlations",
        statement="With x = Z^T (batch-first layout), Z^T A Z = x A x^T and (Z Lambda)^T = Lambda^T x.",
        latex=r"Z^TAZ = xAx^T,\quad (Z\Lambda)^T = \Lambda^Tx",
        source="kernels vp_correlation, vp_correlation_lower",
        family="kernels",
        expected=Level.PROVED,
        checker=lambda ctx: standard(ctx, prove=_row_layout_derivation),
    )
)


def _lsa_row_derivation() -> Derivation:
    Qc = MatrixSymbol("Q", d, T)
    grad = (Trace(Qc * W * Qc.T) / 2).diff(Qc)
    abar_q = (W + W.T) / 2 * q
    return Derivation(
        assumptions=[r"q = Q^T\in\mathbb{R}^{T\times n}"],
        steps=[
            Step(r"\nabla_Q\tfrac12\mathrm{Tr}(QAQ^T)", grad, "matrix calculus (SymPy)", lambda: same(grad.expand(), ((Qc * (W + W.T)) / 2).expand())),
            Step(
                r"(\nabla_Q F)^T|_{Q = q^T}",
                ex.LSA_UPDATE,
                "transpose, substitute Q = q^T (the generated kernel lsa_update)",
                lambda: same(grad.subs(Qc, q.T).T.doit(), ex.LSA_UPDATE),
            ),
            Step(ex.LSA_UPDATE, abar_q, r"\bar A = \tfrac12(A + A^T)", lambda: same(sp.expand(ex.LSA_UPDATE), sp.expand(abar_q))),
        ],
        conclusion=r"\text{lsa\_update}(q, A) = \bar Aq = (Q\bar A)^T",
    )


register(
    Claim(
        id="kernels.lsa_row_layout",
        title="LSA update in the row layout",
        statement="The generated linear symplectic update, derived from the gradient of 1/2 Tr(Q A Q^T), is "
        "Abar q with q = Q^T.",
        latex=r"(\nabla_Q\tfrac12\mathrm{Tr}(QAQ^T))^T = \bar Aq",
        source="kernel lsa_update (geoattn.symbolic.expressions)",
        family="kernels",
        expected=Level.PROVED,
        checker=lambda ctx: standard(ctx, prove=_lsa_row_derivation),
    )
)
