"""The expressions the torch kernels are generated from (``geoattn.symbolic.expressions``).

Every claim here imports the very expression objects that ``geoattn codegen``
prints, so what is verified is what runs.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import Identity, Inverse, MatrixSymbol, Trace, Transpose

from .. import algebra as alg
from .. import expressions as ex
from ..claim import Claim
from ..proof import identity, in_algebra
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._kernel_checks import Gradient, algebra_of, algebra_times, inside, matrix_derivative, sandwich
from ._common import Grows, Policy, at_sizes, grid, kernel_eval as _ev, run_bindings, same
from ._cayley_unpivoted import make_unpivoted_claim

__all__ = ["CLAIMS", "vjp_identity", "make_vjp_claim"]

T, d = ex.T, ex.d
I = Identity(T)
C, x, A, W, q, Lam, G = ex.C, ex.x, ex.A, ex.W, ex.q, ex.Lam, ex.G
H = MatrixSymbol("H", T, T)


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
                in_algebra(C, None),
            )
        ],
        remark=r"(I + C)^{-1}(I - C) = (I - C)(I + C)^{-1} = \mathrm{Cayley}(C)",
        conclusion=sp.Eq(ex.CAYLEY, ex.CAYLEY_RIGHT, evaluate=False),
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


def _apply_form_derivation() -> Derivation:
    out = Transpose(x.T * ex.CAYLEY_RIGHT)
    two = 2 * Inverse(I - C) - I
    kernel_lam = ex.CAYLEY_APPLY_MATRIX.subs(Lam, ex.CAYLEY)
    return Derivation(
        assumptions=[r"C^T = -C", r"x = Z^T\in\mathbb{R}^{T\times d}", r"I \pm C\ \text{invertible}"],
        subject=(ex.CAYLEY_APPLY_MATRIX,),
        steps=[
            Step(ex.CAYLEY_APPLY_MATRIX, kernel_lam, "the generated kernel cayley_apply_matrix binds Lam = "
                 "(I + C)^{-1}(I - C)", identity((Lam, ex.CAYLEY))),
            Step(kernel_lam, ex.CAYLEY_RIGHT.T * x, "functional calculus: the factors commute "
                 "(kernels.cayley_left_solve), transposed", algebra_times(C, -1, x)),
            Step(out, ex.CAYLEY_RIGHT.T * x, "transpose of a product", identity()),
            Step(ex.CAYLEY_RIGHT.T * x, two * x, "C^T = -C; functional calculus: (1 + c)/(1 - c) = 2/(1 - c) - 1",
                 algebra_times(C, -1, x)),
            Step(two * x, ex.CAYLEY_APPLY_SOLVE, "distribute over x (the generated kernel cayley_apply_solve)",
                 identity()),
        ],
        remark=r"(x^T\mathrm{Cayley}(C))^T = 2(I - C)^{-1}x - x = \Lambda^Tx,\ \Lambda = (I + C)^{-1}(I - C)",
        conclusion=sp.Eq(out, ex.CAYLEY_APPLY_SOLVE, evaluate=False),
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


# ---------------------------------------------------------------------------
# cayley.vjp
# ---------------------------------------------------------------------------


def _vjp_derivation() -> Derivation:
    cay = ex.CAYLEY_RIGHT
    inv = Inverse(I + C)
    dlam_sym = MatrixSymbol(r"D\Lambda[H]", T, T)
    grad_sym = MatrixSymbol(r"\partial L/\partial C", T, T)
    product_rule = -H * inv + (I - C) * (-inv * H * inv)
    dlam = -(I + cay) * H * inv
    linear_form = sp.Derivative(Trace(G.T * dlam), H)
    grad = Trace(G.T * dlam).diff(H)
    factored = -(I + cay).T * G * (I + cay).T / 2
    return Derivation(
        assumptions=[r"\Lambda = \mathrm{Cayley}(C) = (I - C)(I + C)^{-1},\ I + C \text{ invertible}",
                     r"L = \langle G, \Lambda\rangle = \mathrm{Tr}(G^T\Lambda)"],
        facts={r"Lam = Cayley(C)": {Lam: cay}},
        subject=(dlam_sym,),
        steps=[
            Step(dlam_sym, product_rule, r"product rule on (I - C)(I + C)^{-1} in direction H, with "
                 r"D(X^{-1})[H] = -X^{-1}HX^{-1}", lemma="product_rule"),
            Step(product_rule, dlam, "collect: -(I + (I - C)(I + C)^{-1}) H (I + C)^{-1}", identity(facts=())),
            Step(grad_sym, linear_form, r"the gradient is the H-derivative of DL[H] = \mathrm{Tr}(G^TD\Lambda[H]) "
                 "(steps 1-2)", lemma="definition"),
            Step(linear_form, grad, "matrix derivative of a trace linear in H (SymPy)", matrix_derivative()),
            Step(grad, factored, r"functional calculus in C^T on each side of G: "
                 r"-1 + (c - 1)/(1 + c) = -(1 + (1 - c)/(1 + c)),\ 1/(1 + c) = \tfrac12(1 + (1 - c)/(1 + c))",
                 sandwich(C, None, G, transposed=True)),
            Step(factored, ex.CAYLEY_VJP, r"the generated kernel cayley_vjp, -\tfrac12 PGP with P = I + \Lambda^T",
                 identity()),
        ],
        remark=r"\frac{\partial L}{\partial C} = -\tfrac12(I + \Lambda)^TG(I + \Lambda)^T",
        conclusion=sp.Eq(grad_sym, ex.CAYLEY_VJP, evaluate=False),
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
        expected=Level.PROVED if exact else Level.REFUTED,
        checker=Policy(
            identity=vjp_identity(form),
            search=grid(T=[1, 2, 3, 4]),
            prove=_vjp_derivation if exact else None,
        ),
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


def _row_layout_derivation() -> Derivation:
    Z = MatrixSymbol("Z", d, T)
    Lm = MatrixSymbol("Lambda", T, T)
    corr = Z.T * ex.A * Z
    out = Transpose(Z * Lm)
    return Derivation(
        assumptions=[r"x = Z^T\in\mathbb{R}^{T\times d}"],
        facts={"x = Z^T": {Z: x.T}},
        subject=(out,),
        steps=[
            Step(out, Lm.T * x, "transpose of a product; Z^T = x", identity()),
            Step(corr, ex.VP_CORRELATION, "substitute Z = x^T (the generated kernel vp_correlation)", identity()),
        ],
        remark=r"\text{vp\_correlation} = xAx^T = Z^TAZ;\ \text{the layer output } (Z\Lambda)^T = \Lambda^Tx "
        r"\text{ (step 1)}",
        conclusion=sp.Eq(corr, ex.VP_CORRELATION, evaluate=False),
    )


def _lsa_row_derivation() -> Derivation:
    Qc = MatrixSymbol("Q", d, T)
    grad_t = Transpose(Gradient(Trace(Qc * W * Qc.T) / 2, Qc))  # a Gradient prints inside the transpose
    row = ((W + W.T) / 2).T * q
    abar_q = (W + W.T) / 2 * q
    return Derivation(
        assumptions=[r"q = Q^T\in\mathbb{R}^{T\times n}"],
        facts={"Q = q^T": {Qc: q.T}},
        subject=(grad_t,),
        steps=[
            Step(grad_t, row, r"\partial_Q\tfrac12\mathrm{Tr}(QAQ^T) = \tfrac12Q(A + A^T) (SymPy's matrix derivative), "
                 "transposed at Q = q^T", identity()),
            Step(row, abar_q, r"\bar A = \tfrac12(A + A^T) is symmetric", identity(facts=())),
            Step(ex.LSA_UPDATE, abar_q, "the generated kernel lsa_update", identity(facts=())),
        ],
        remark=r"\text{lsa\_update}(q, A) = \bar Aq = (\nabla_Q F)^T|_{Q = q^T},\ F = \tfrac12\mathrm{Tr}(QAQ^T)",
        conclusion=sp.Eq(ex.LSA_UPDATE, abar_q, evaluate=False),
    )


def skew_small_identity() -> MatrixIdentity:
    """Both closed forms (Cayley(C) and Cayley(S) - I) minus the Cayley transform, for skew matrices."""

    def residual(size, Cm):
        t = size["T"]
        lam = run_bindings(ex.CAYLEY_SKEW_SMALL, {C: Cm}, {T: t})["Lam"]
        w = run_bindings(ex.CAYLEY_MINUS_I_SKEW_SMALL, {ex.Sd: Cm}, {ex.k: t})["W"]
        want = alg.cayley(Cm)
        return sp.Matrix.vstack(lam - want, w - (want - sp.eye(t))).applyfunc(sp.cancel)

    return MatrixIdentity(
        "[closed form - Cayley(C); closed form - (Cayley(C) - I)]",
        variables=lambda s: {"Cm": alg.skew("c", s["T"])},
        residual=residual,
    )


def gram_form_identity(sign: int = 1) -> MatrixIdentity:
    """The Gram-form kernel's output minus the layer output (x^T Cayley(x A x^T))^T, for skew A; ``sign=-1``
    flips A inside the kernel (a negative control: the wrong-sign form must be refuted)."""

    def residual(size, X, Am):
        got = run_bindings(ex.GRAM_CAYLEY, {x: X, A: sign * Am}, {T: size["T"], d: size["d"]})["y"]
        want = (X.T * alg.cayley(X * Am * X.T)).T
        return (got - want).applyfunc(sp.cancel)

    def variables(s):
        t, k = s["T"], s["d"]
        base = alg.general("x", t, k)
        if s.get("rank1"):  # every row a multiple of the first: rank one
            base = sp.Matrix(t, k, lambda i, j: sp.Symbol(f"r_{i}", real=True) * sp.Symbol(f"x_0_{j}", real=True))
        return {"X": base, "Am": alg.skew("a", k)}

    return MatrixIdentity("Gram-form kernel - (x^T Cayley(x A x^T))^T", variables=variables, residual=residual)


def _gram_form_derivation() -> Derivation:
    Id = Identity(d)

    def cay(m, eye):
        return (eye - m) * Inverse(eye + m)

    K = x.T * x * A  # Z Z^T A with Z = x^T
    out = Transpose(x.T * cay(x * A * x.T, I))
    pushed = cay(K, Id) * x.T
    two = 2 * Inverse(Id + K) - Id
    # the kernel's bindings, composed: y(G, M) with M = I + G A and G = x^T x
    (_, g_expr), (_, m_expr), (_, y_expr) = ex.GRAM_CAYLEY
    kernel = y_expr.subs(MatrixSymbol("M", d, d), m_expr).subs(MatrixSymbol("G", d, d), g_expr)
    return Derivation(
        assumptions=[r"A^T = -A", r"x = Z^T \in \mathbb{R}^{T\times d}",
                     r"I_d + x^Tx A\ \text{invertible (vp.push\_through\_invertible)}"],
        steps=[
            Step(x.T * cay(x * A * x.T, I), pushed, r"Z\,\mathrm{Cayley}(Z^TAZ) = \mathrm{Cayley}(ZZ^TA)\,Z at Z = x^T "
                 "(any d, T, rank of Z)", lemma="ledger:vp.push_through"),
            Step(out, Transpose(pushed), "step 1 inside the transpose", inside(x.T * cay(x * A * x.T, I), pushed)),
            Step(cay(K, Id), two, "functional calculus in K = x^T x A: (1 - k)/(1 + k) = 2/(1 + k) - 1",
                 algebra_of(K, "K")),
            Step(Transpose(pushed), Transpose(two * x.T), "step 3 inside the transpose", inside(cay(K, Id), two)),
            Step(Transpose(two * x.T), kernel, "transpose of a product: the generated kernel vp_gram_cayley, "
                 "its bindings G = x^T x, M = I + G A composed", identity()),
        ],
        remark=r"\texttt{vp\_gram\_cayley}(x, A) = 2x(I + x^Tx A)^{-T} - x = (x^T\mathrm{Cayley}(xAx^T))^T",
        conclusion=sp.Eq(out, kernel, evaluate=False),
    )


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    Claim(
        id="kernels.cayley_left_solve",
        title="Cayley as a left solve",
        statement="(I + C)^-1 (I - C) = (I - C)(I + C)^-1 for every C with I + C invertible.",
        latex=r"(I + C)^{-1}(I - C) = (I - C)(I + C)^{-1}",
        source="kernel cayley_matrix (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(identity=_left_solve_identity(), search=grid(T=[1, 2, 3, 4]), prove=_left_solve_derivation),
    ),
    Claim(
        id="cayley.apply_form",
        title="Cayley applied without forming it",
        statement="For skew C, Z Cayley(C) = 2 Z (I + C)^-1 - Z; in the row layout x = Z^T this is "
        "2 (I - C)^-1 x - x.",
        latex=r"Z(I - C)(I + C)^{-1} = 2Z(I + C)^{-1} - Z",
        source="kernel cayley_apply (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(
            identity=_apply_form_identity(), search=grid(T=[2, 3, 4], d=[1, 3]), prove=_apply_form_derivation
        ),
    ),
    make_vjp_claim(),
    make_unpivoted_claim(),
    Claim(
        id="kernels.triangle_forms",
        title="triangle maps as tril/triu expressions",
        statement="skew_from_lower(C) = tril(C, -1) - tril(C, -1)^T and "
        "upper_triangular_asymmetrize(C) = triu(C, 1) - triu(C, 1)^T.",
        latex=r"\mathrm{skew\_from\_lower}(C) = \mathrm{tril}_{-1}(C) - \mathrm{tril}_{-1}(C)^T",
        source="kernels skew_from_lower, upper_triangular_asymmetrize",
        expected=Level.CHECKED,
        checker=Policy(identity=_triangle_identity(), search=grid(T=[2, 3]), exact=grid(T=Grows(1, 8))),
    ),
    Claim(
        id="kernels.row_layout",
        title="row layout of the correlations",
        statement="With x = Z^T (batch-first layout), Z^T A Z = x A x^T and (Z Lambda)^T = Lambda^T x.",
        latex=r"Z^TAZ = xAx^T,\quad (Z\Lambda)^T = \Lambda^Tx",
        source="kernels vp_correlation, vp_correlation_lower",
        expected=Level.PROVED,
        checker=Policy(prove=_row_layout_derivation),
    ),
    Claim(
        id="kernels.lsa_row_layout",
        title="LSA update in the row layout",
        statement="The generated linear symplectic update, derived from the gradient of 1/2 Tr(Q A Q^T), is "
        "Abar q with q = Q^T.",
        latex=r"(\nabla_Q\tfrac12\mathrm{Tr}(QAQ^T))^T = \bar Aq",
        source="kernel lsa_update (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(prove=_lsa_row_derivation),
    ),
    Claim(
        id="kernels.cayley_skew_small",
        title="Cayley of a small skew matrix without a solve",
        statement="For skew C of size T <= 3, Cayley(C) = I + 2 (C^2 - C)/(1 - Tr(C^2)/2) (and Cayley(C) - I "
        "without the I): C^3 = -a C with a = -Tr(C^2)/2 >= 0, so (I + C)((1 + a) I - C + C^2) = (1 + a) I.",
        latex=r"C^T = -C,\ T \le 3 \implies \mathrm{Cayley}(C) = I + \frac{2(C^2 - C)}{1 - \mathrm{Tr}(C^2)/2}",
        source="kernels cayley_skew_small, cayley_minus_identity_skew_small (geoattn.symbolic.expressions)",
        expected=Level.CHECKED,
        checker=Policy(identity=skew_small_identity(), exact=grid(T=[1, 2, 3]),
                       exact_method="exact symbolic identity at every size the claim covers (T = 1, 2, 3)"),
        notes="False from T = 4 on (C^3 = -a C fails); the kernels take this form only for T <= 3.",
    ),
    Claim(
        id="vp.gram_form",
        title="the Cayley layer by its d x d Gram matrix",
        statement="For skew A, the kernel vp_gram_cayley, y = 2 x (I + x^T x A)^{-T} - x, equals the layer output "
        "(x^T Cayley(x A x^T))^T for every T, d and rank of x (vp.push_through in the row layout).",
        latex=r"y = 2x(I_d + x^Tx\,A)^{-T} - x = \bigl(x^T\mathrm{Cayley}(xAx^T)\bigr)^T",
        source="kernel vp_gram_cayley (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(
            identity=gram_form_identity(),
            search=at_sizes(*({"T": t, "d": k} for t in (1, 2, 3, 4) for k in (1, 2, 3)),
                            {"T": 4, "d": 3, "rank1": 1}),
            points=2,
            prove=_gram_form_derivation,
            exact=at_sizes({"T": 2, "d": 2}, {"T": 1, "d": 2}, {"T": 3, "d": 2, "rank1": 1}),
            always_exact=True,
        ),
    ),
]
