"""The scaling-and-squaring Taylor scheme of the ``exp_skew`` kernel.

The kernel computes :math:`\\exp(S) = p_m(X)^{2^k}`, :math:`X = S/2^k`, with the
Paterson--Stockmeyer evaluation of the Taylor polynomial :math:`p_m` bound in
:mod:`geoattn.symbolic.expressions`, and its backward as the derivative of the
same scheme. The claims here check those very bindings:

* ``exp_skew.taylor_form``: the bindings compose to :math:`\\sum_{j\\le m} X^j/j!`;
* ``exp_skew.taylor_vjp``: the backward bindings give the gradient of
  :math:`\\langle G, p_m(X)\\rangle`, as SymPy's matrix calculus computes it;
* ``exp_skew.taylor_remainder``: for :math:`\\|X\\|_1 \\le \\tfrac12` the truncation
  error of :math:`p_m` and of its Frechet derivative is below the unit roundoff
  of the dtype the degree is used for (an exact rational inequality);
* ``exp_skew.square_vjp``: the gradient of :math:`\\langle G, E^2\\rangle`;
* ``exp_skew.scaling_squaring``: :math:`\\exp(S) = \\exp(S/2^k)^{2^k}`.

Note [free-algebra images]
--------------------------
Every binding of the forward scheme is a polynomial in the single matrix
:math:`X` with rational coefficients, and :math:`x \\mapsto X` is an algebra
homomorphism from :math:`\\mathbb{Q}[x]`, so an identity of the images in
:math:`\\mathbb{Q}[x]` holds for every square matrix of every size. The
backward bindings are polynomials in :math:`A = X^T` and :math:`G`, which do not
commute; their images are taken in the free algebra :math:`\\mathbb{Q}\\langle a, g\\rangle`
(SymPy non-commutative symbols), from which every pair of matrices is again a
homomorphic image. Evaluating the bindings on ``1 x 1`` matrices whose entries are
those symbols computes exactly these images (a ``1 x 1`` transpose is the
identity map, matching :math:`(X^j)^T = A^j` and :math:`H_j(X)^T = H_j(A)`).
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import BlockDiagMatrix, Identity, MatPow, MatrixSymbol, Trace

from .. import algebra as alg
from .. import expressions as ex
from ..claim import Claim
from ..proof import identity, in_algebra
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes, same
from ._kernel_checks import Gradient, blockwise, compose, free_algebra, matrix_derivative, matrix_diff

__all__ = [
    "CLAIMS",
    "run_scheme",
    "scheme_polynomial",
    "scheme_vjp_polynomial",
    "make_taylor_form_claim",
    "make_taylor_vjp_claim",
    "remainder_bounds",
    "make_remainder_claim",
]

T = ex.T
X, G, E = ex.X, ex.G, ex.Ek
_x, _a, _g = sp.Symbol("x"), sp.Symbol("a", commutative=False), sp.Symbol("g", commutative=False)

#: unit roundoff of the dtypes the schemes serve
UNIT_ROUNDOFF = {"float64": sp.Rational(1, 2**53), "float32": sp.Rational(1, 2**24)}


def run_scheme(m: int, r: int, x: sp.Matrix, g: sp.Matrix | None = None, *, bindings=None, vjp_bindings=None):
    """Evaluate the generated bindings of the degree-``m`` scheme at an explicit ``n x n`` matrix ``x``.

    Returns ``(E, gX)``: the forward output and, when ``g`` is given, the backward output
    fed with the forward intermediates (``gX`` is ``None`` otherwise). ``bindings`` and
    ``vjp_bindings`` replace the generated ones (negative controls). With ``1 x 1``
    matrices of symbols this computes the images of Note [free-algebra images].
    """
    n = {T: x.rows}
    env = {X: x}
    for name, expr in bindings or ex.taylor_ps_bindings(m, r):
        env[MatrixSymbol(name, T, T)] = ex.evaluate(expr, env, n)
    out = env[MatrixSymbol("E", T, T)]
    if g is None:
        return out, None
    back = {X: x, G: g, **{MatrixSymbol(k, T, T): env[MatrixSymbol(k, T, T)] for k in ex.taylor_names(m, r)[:-1]}}
    for name, expr in vjp_bindings or ex.taylor_ps_vjp_bindings(m, r):
        back[MatrixSymbol(name, T, T)] = ex.evaluate(expr, back, n)
    return out, back[MatrixSymbol("gX", T, T)]


def scheme_polynomial(m: int, r: int, bindings=None) -> sp.Expr:
    """The image in Q[x] of the forward bindings (``E``)."""
    return sp.expand(run_scheme(m, r, sp.Matrix([[_x]]), bindings=bindings)[0][0])


def scheme_vjp_polynomial(m: int, r: int, vjp_bindings=None) -> sp.Expr:
    """The image in Q<a, g> of the backward bindings (``gX``), with the forward
    intermediates evaluated at ``a`` (see Note [free-algebra images])."""
    return sp.expand(run_scheme(m, r, sp.Matrix([[_a]]), sp.Matrix([[_g]]), vjp_bindings=vjp_bindings)[1][0])


def _nc_image(expr) -> sp.Expr:
    """Image of a SymPy matrix-calculus result in ``X^T`` and ``G`` in Q<a, g>."""
    return sp.expand(ex.evaluate(expr, {X.T: sp.Matrix([[_a]]), G: sp.Matrix([[_g]])}, {T: 1})[0])


def _powers(x: sp.Matrix, m: int) -> list[sp.Matrix]:
    pows = [sp.eye(x.rows)]
    for _ in range(m):
        pows.append(pows[-1] * x)
    return pows


def _form_identity(bindings_for) -> MatrixIdentity:
    """At a rational X: every scheme's E(X) minus the Taylor sum (stacked)."""

    def residual(size, Xm):
        out = []
        for m, r in ex.TAYLOR_SCHEMES.values():
            got, _ = run_scheme(m, r, Xm, bindings=bindings_for(m, r))
            out.append(got - sum((p / sp.factorial(j) for j, p in enumerate(_powers(Xm, m))), sp.zeros(*Xm.shape)))
        return sp.Matrix.vstack(*out)

    return MatrixIdentity("E_m(X) - sum_j X^j/j!", variables=lambda s: {"Xm": alg.general("x", s["T"], s["T"])}, residual=residual)


def _vjp_identity(vjp_bindings_for) -> MatrixIdentity:
    """At rational X, G, H: <vjp(X, G), H> minus <G, D p_m(X)[H]> with the product-rule derivative."""

    def residual(size, Xm, Gm, Hm):
        out = []
        for m, r in ex.TAYLOR_SCHEMES.values():
            _, vjp = run_scheme(m, r, Xm, Gm, vjp_bindings=vjp_bindings_for(m, r))
            pows = _powers(Xm, m)
            deriv = sp.zeros(*Xm.shape)
            for j in range(1, m + 1):
                deriv += sum((pows[i] * Hm * pows[j - 1 - i] for i in range(j)), sp.zeros(*Xm.shape)) / sp.factorial(j)
            out.append((vjp.T * Hm).trace() - (Gm.T * deriv).trace())
        return sp.Matrix(out)

    return MatrixIdentity(
        "<vjp_m(X, G), H> - <G, Dp_m(X)[H]>",
        variables=lambda s: {k: alg.general(k.lower()[0], s["T"], s["T"]) for k in ("Xm", "Gm", "Hm")},
        residual=residual,
    )


def _taylor(m: int) -> sp.Expr:
    return sum(_x**j / sp.factorial(j) for j in range(m + 1))


# ---------------------------------------------------------------------------
# exp_skew.taylor_form
# ---------------------------------------------------------------------------


def _form_derivation(schemes: dict, bindings_for=None) -> Derivation:
    bindings_for = bindings_for or (lambda m, r: ex.taylor_ps_bindings(m, r))
    kernels, sums, shown = [], [], []
    for dtype, (m, r) in schemes.items():
        kernels.append(compose(bindings_for(m, r))["E"])
        sums.append(sp.MatAdd(*(X**j / sp.factorial(j) for j in range(1, m + 1)), Identity(T)))
        shown.append(f"{dtype}: degree {m}, powers up to X^{r}")
    lhs, rhs = BlockDiagMatrix(*kernels), BlockDiagMatrix(*sums)
    return Derivation(
        assumptions=[r"X\in\mathbb{R}^{T\times T}\ \text{(any } T)", r"\text{bindings of } \texttt{exp\_taylor}m"],
        steps=[
            Step(lhs, rhs, "the kernels' bindings composed (" + "; ".join(shown) + r"), equal to \sum_j X^j/j! as "
                 "polynomials in X", blockwise(free_algebra())),
        ],
        remark=r"\texttt{exp\_taylor}m(X) = \sum_{j=0}^{m} X^j/j!\ \text{for each scheme (one block each)}",
        conclusion=sp.Eq(lhs, rhs, evaluate=False),
    )


def make_taylor_form_claim(bindings_for=None, claim_id: str = "exp_skew.taylor_form") -> Claim:
    """The claim; ``bindings_for(m, r)`` replaces the generated bindings (for negative controls)."""
    return Claim(
        id=claim_id,
        title="Paterson--Stockmeyer form of the Taylor polynomial",
        statement="The bindings of the generated kernels exp_taylor16 and exp_taylor9 compute the Taylor "
        "polynomials sum_{j<=16} X^j/j! and sum_{j<=9} X^j/j!.",
        latex=r"\texttt{exp\_taylor}m(X) = \sum_{j=0}^{m} \frac{X^j}{j!},\quad m \in \{16, 9\}",
        source="kernels exp_taylor16, exp_taylor9 (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(
            identity=_form_identity(bindings_for or ex.taylor_ps_bindings),
            search=at_sizes({"T": 3}),
            points=1,
            prove=lambda: _form_derivation(ex.TAYLOR_SCHEMES, bindings_for),
        ),
    )


# ---------------------------------------------------------------------------
# exp_skew.taylor_vjp
# ---------------------------------------------------------------------------


def _vjp_derivation(schemes: dict, vjp_bindings_for=None) -> Derivation:
    vjp_bindings_for = vjp_bindings_for or (lambda m, r: ex.taylor_ps_vjp_bindings(m, r))
    derivs, grads, kernels = [], [], []
    for m, r in schemes.values():
        forward = compose(ex.taylor_ps_bindings(m, r))
        table = {MatrixSymbol(nm, T, T): e for nm, e in forward.items()}
        kernels.append(compose(vjp_bindings_for(m, r), table)["gX"])
        pm = sum((Trace(G.T * X**j) / sp.factorial(j) for j in range(1, m + 1)), Trace(G.T))
        derivs.append(Gradient(pm, X))
        grads.append(matrix_diff(pm, X))
    deriv, grad, kernel = (BlockDiagMatrix(*b) for b in (derivs, grads, kernels))
    return Derivation(
        assumptions=[r"X, G\in\mathbb{R}^{T\times T}\ \text{(any } T),\ p_m(X) = \sum_{j\le m}X^j/j!"],
        steps=[
            Step(deriv, grad, r"SymPy's matrix derivative of \langle G, p_m(X)\rangle = \sum_j\mathrm{Tr}(G^TX^j)/j!: "
                 r"\sum_{j}\frac{1}{j!}\sum_{i<j}(X^T)^iG(X^T)^{j-1-i}", blockwise(matrix_derivative())),
            Step(grad, kernel, "the backward bindings composed with the forward ones, equal as polynomials in the "
                 "noncommuting X^T and G", blockwise(free_algebra())),
        ],
        remark=r"\texttt{exp\_taylor}m\texttt{\_vjp}(X, \ldots, G) = \nabla_X \langle G, p_m(X)\rangle"
        r"\ \text{for each scheme (one block each)}",
        conclusion=sp.Eq(deriv, kernel, evaluate=False),
    )


def make_taylor_vjp_claim(vjp_bindings_for=None, claim_id: str = "exp_skew.taylor_vjp") -> Claim:
    """The claim; ``vjp_bindings_for(m, r)`` replaces the generated bindings (for negative controls)."""
    return Claim(
        id=claim_id,
        title="backward of the Taylor scheme",
        statement="The generated kernels exp_taylor16_vjp and exp_taylor9_vjp compute the gradient of "
        "<G, p_m(X)> with respect to X, p_m the Taylor polynomial of exp of degree m.",
        latex=r"\texttt{exp\_taylor}m\texttt{\_vjp} = \nabla_X\langle G, p_m(X)\rangle"
        r" = \sum_{j=1}^{m}\frac{1}{j!}\sum_{i=0}^{j-1}(X^T)^iG(X^T)^{j-1-i}",
        source="kernels exp_taylor16_vjp, exp_taylor9_vjp (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(
            identity=_vjp_identity(vjp_bindings_for or ex.taylor_ps_vjp_bindings),
            search=at_sizes({"T": 3}),
            points=1,
            prove=lambda: _vjp_derivation(ex.TAYLOR_SCHEMES, vjp_bindings_for),
        ),
    )


# ---------------------------------------------------------------------------
# exp_skew.taylor_remainder
# ---------------------------------------------------------------------------


def remainder_bounds(m: int, theta=ex.TAYLOR_THETA) -> tuple[sp.Rational, sp.Rational]:
    """Exact rational majorants of the tails of exp and of its Frechet derivative for ||X|| <= theta.

    ``sum_{j>m} theta^j/j! <= theta^{m+1}/(m+1)! (m+2)/(m+2-theta)`` and
    ``sum_{j>m} j theta^{j-1}/j! <= theta^m/m! (m+1)/(m+1-theta)`` (geometric majorants).
    """
    theta = sp.Rational(theta)
    value = theta ** (m + 1) / sp.factorial(m + 1) * (m + 2) / (m + 2 - theta)
    frechet = theta**m / sp.factorial(m) * (m + 1) / (m + 1 - theta)
    return value, frechet


def _remainder_derivation(schemes: dict, theta=ex.TAYLOR_THETA) -> Derivation:
    theta = sp.Rational(theta)
    steps, subject, signs = [], [], []
    for dtype, (m, _) in schemes.items():
        value, frechet = remainder_bounds(m, theta)
        tail = sp.Symbol(rf"\|e^X - p_{{{m}}}(X)\|_1")
        ftail = sp.Symbol(rf"\|L_{{\exp}}(X, E) - L_{{p_{{{m}}}}}(X, E)\|_1/\|E\|_1")
        subject += [tail, ftail]
        steps += [
            Step(tail, value, rf"\sum_{{j>{m}}}\theta^j/j! with \|X\|_1\le\theta, submultiplicativity; ratio of "
                 rf"successive terms \le \theta/(m+2)", lemma="taylor_remainder_bound", relation="<="),
            Step(ftail, frechet, r"L_{X^j}(X, E) = \sum_i X^iEX^{j-1-i} has j terms of norm \le \theta^{j-1}\|E\|_1",
                 lemma="taylor_remainder_bound", relation="<="),
        ]
        largest = sp.Max(value, frechet, evaluate=False)
        signs.append(sp.sign(sp.Add(UNIT_ROUNDOFF[dtype], -largest, evaluate=False), evaluate=False))
    total = sp.Add(*signs, evaluate=False)
    steps.append(Step(total, len(signs), r"exact rational comparison: each bound is below the unit roundoff u of its "
                      r"dtype (\mathrm{sign}(u - \text{bound}) = 1 for every scheme)", identity()))
    return Derivation(
        assumptions=[rf"\|X\|_1 \le \theta = {sp.latex(theta)}\ \text{{(also }}\|X^T\|_1\le\theta\text{{)}}"],
        subject=tuple(subject),
        steps=steps,
        remark=r"\text{truncation errors of } p_m \text{ and of its derivative} < u \text{ of the dtype "
        r"(float64: } m = 16,\ \text{float32: } m = 9)",
        conclusion=sp.Eq(total, len(signs), evaluate=False),
    )


def make_remainder_claim(theta=ex.TAYLOR_THETA, claim_id: str = "exp_skew.taylor_remainder") -> Claim:
    """The claim at scaling bound ``theta`` (a larger ``theta`` is a negative control)."""
    return Claim(
        id=claim_id,
        title="truncation error of the Taylor scheme",
        statement="For ||X||_1 <= 1/2 the Taylor polynomials of degree 16 and 9 approximate exp, and their "
        "Frechet derivatives approximate that of exp, to within the unit roundoff of float64 and float32.",
        latex=r"\|X\|_1\le\tfrac12 \implies \|e^X - p_m(X)\|_1,\ \|L_{\exp} - L_{p_m}\|_1 < u",
        source="kernel exp_skew (Note [Taylor scheme for exp_skew])",
        expected=Level.PROVED,
        checker=Policy(prove=lambda: _remainder_derivation(ex.TAYLOR_SCHEMES, theta)),
    )


# ---------------------------------------------------------------------------
# exp_skew.square_vjp, exp_skew.scaling_squaring
# ---------------------------------------------------------------------------


def _square_vjp_derivation() -> Derivation:
    form = sp.Derivative(Trace(G.T * E * E), E)
    grad = Trace(G.T * E * E).diff(E)
    return Derivation(
        assumptions=[r"E\in\mathbb{R}^{T\times T}"],
        steps=[
            Step(form, grad, r"SymPy's matrix derivative of \mathrm{Tr}(G^TE^2)", matrix_derivative()),
            Step(grad, ex.SQUARE_VJP, "the generated kernel square_vjp", identity()),
        ],
        remark=r"\nabla_E\langle G, E^2\rangle = GE^T + E^TG",
        conclusion=sp.Eq(form, ex.SQUARE_VJP, evaluate=False),
    )


def _scaling_derivation() -> Derivation:
    S = MatrixSymbol("S", T, T)
    k = sp.Symbol("k", integer=True, nonnegative=True)
    scaled = MatPow(alg.MatExp(S / 2**k), 2**k)
    return Derivation(
        assumptions=[r"S\in\mathbb{R}^{T\times T},\ k\ge 0 \text{ an integer}"],
        steps=[
            Step(alg.MatExp(S), scaled, r"functional calculus in S: e^s = (e^{s/2^k})^{2^k} for the integer 2^k",
                 in_algebra(S, None)),
        ],
        remark=r"\exp(S) = \exp(S/2^k)^{2^k};\ \text{the backward differentiates the squarings one by one "
        r"(exp\_skew.square\_vjp)}",
        conclusion=sp.Eq(alg.MatExp(S), scaled, evaluate=False),
    )


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    make_taylor_form_claim(),
    make_taylor_vjp_claim(),
    make_remainder_claim(),
    Claim(
        id="exp_skew.square_vjp",
        title="backward of a squaring",
        statement="The gradient of <G, E^2> with respect to E is G E^T + E^T G.",
        latex=r"\nabla_E\langle G, E^2\rangle = GE^T + E^TG",
        source="kernel square_vjp (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(prove=_square_vjp_derivation),
    ),
    Claim(
        id="exp_skew.scaling_squaring",
        title="scaling and squaring",
        statement="exp(S) = exp(S / 2^k)^(2^k) for every square S and k >= 0.",
        latex=r"\exp(S) = \exp(S/2^k)^{2^k}",
        source="kernel exp_skew (Note [scaling and squaring])",
        expected=Level.PROVED,
        checker=Policy(prove=_scaling_derivation),
    ),
]
