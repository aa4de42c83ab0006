r"""The claims behind ``exp_skew_action``: the Chebyshev expansion of ``exp(S) x`` (:mod:`geoattn.kernels._exp_action`).

* ``exp_action.chebyshev_recurrence``: the real vectors of the kernel, ``w_0 = x``, ``w_1 = Xx``,
  ``w_{k+1} = 2Xw_k + w_{k-1}``, are :math:`w_k = i^kT_k(-iX)x`, the terms of the Jacobi--Anger expansion of
  :math:`\exp(S)x` at :math:`X = S/\rho`. Every ``w_k`` is a polynomial in the one matrix ``X`` applied to ``x``, and
  :math:`t \mapsto X` is an algebra homomorphism from :math:`\mathbb{Q}(i)[t]`, so the polynomial identity in ``t``
  holds for every square ``X`` (Note [free-algebra images] in :mod:`.taylor`); the engine checks it exactly for
  every degree the kernel can use (``k <= 160``).
* ``exp_action.chebyshev_adjoint``: the backward of ``y = sum_{k<=m} c_k w_k`` (the eager form's
  :func:`~geoattn.kernels._exp_action._adjoint` and the native kernel of :mod:`geoattn.codegen.exp_action_c`): with
  ``a_m = c_m g``, ``a_k = c_k g + 2X^Ta_{k+1} + a_{k+2}``, ``a_0 = c_0 g + X^Ta_1 + a_2``, the gradients of
  ``<g, y>`` are ``d/dx = a_0`` and ``d/dX = a_1 w_0^T + 2 sum_{k=2}^{m} a_k w_{k-1}^T``; checked exactly against
  SymPy's derivatives with every entry of ``X``, ``x``, ``g`` and every ``c_k`` a symbol, at ``n = 2, m <= 5`` and
  ``n = 3, m = 3`` (a negative control doubles the ``a_1`` term).
* ``exp_action.truncation_bound``: for skew ``S``, :math:`\rho \ge \|S\|_2` and the degree ``m`` of the rule
  (the smallest whose bound is at most ``u``; ``tests/test_exp_action.py`` checks the kernel's degree table
  against the rule),
  :math:`\|\exp(S)x - \sum_{k\le m}c_kw_k\|_2 \le 2(\rho/2)^{m+1}/(m+1)!\,/(1 - \rho/(2(m+2)))\,\|x\|_2 < u`: the
  Jacobi--Anger expansion with :math:`\|T_k(H/\rho)\|_2 \le 1`, the bound :math:`|J_k(\rho)| \le (\rho/2)^k/k!`,
  the geometric tail, and an exact rational comparison at representative norms for float32 and float64.
* ``exp_action.skew_square_norm_bound``: for real skew ``S``, :math:`\|S\|_2^4 \le \tfrac12\|S^2\|_F^2`, the
  bound :func:`~geoattn.kernels._exp_action.norm_bound` computes. The eigenvalues of :math:`S^TS = -S^2` are
  :math:`\ge 0` and come in equal pairs (one more zero when ``n`` is odd): :math:`\det(tI - S^2) = t^{n \bmod 2}
  P(t)^2` with :math:`P(t) = \sum_k e_kt^{\lfloor n/2\rfloor - k}` read off :math:`\det(zI - S) = \sum_k
  e_kz^{n-2k}`, an exact polynomial identity in the entries of ``S`` the engine checks at ``n = 2 .. 5`` (a negative
  control takes a general matrix for ``S``); so the largest, :math:`\|S\|_2^2`, has its square at most half of
  :math:`\mathrm{Tr}(S^TS)^2 = \|S^2\|_F^2`.
* ``exp_action.uta_factor_vjp``: the factored kernel's :math:`S = \mathrm{uta}(qk^T)^T` (``q``, ``k``: ``T x K``) has
  the entries :math:`S_{il} = q_l\cdot k_i` (:math:`i > l`), :math:`-q_i\cdot k_l` (:math:`i < l`), 0 on the
  diagonal, and for any ``G`` the gradients of :math:`\langle G, S\rangle` are
  :math:`\mathrm{striu}(G^T - G)\,k` in ``q`` and :math:`\mathrm{striu}(G^T - G)^Tq` in ``k``; checked exactly
  against SymPy's derivatives with every entry a symbol at ``T = 2 .. 4``, ``K = 1 .. 3`` (a negative control
  drops the ``G^T`` term).
"""

from __future__ import annotations

import sympy as sp
from sympy.polys.matrices import DomainMatrix

from .. import algebra as alg
from ..claim import Claim, Level
from ..evidence import Derivation, Step
from ..lemmas import LEMMAS, register
from ..proof import identity
from ..strategies import MatrixIdentity
from ._common import Policy, at_sizes

__all__ = ["CLAIMS", "MAX_DEGREE", "recurrence_identity", "make_recurrence_claim", "adjoint_identity",
           "make_adjoint_claim", "tail_bound", "degree_for", "make_truncation_claim", "pairing_identity",
           "make_square_norm_claim", "uta_factor_identity", "make_uta_factor_claim"]

#: the largest degree of the kernel (geoattn.kernels._exp_action.MAX_DEGREE; a test keeps the two equal)
MAX_DEGREE = 160
#: unit roundoff of the dtypes the kernel serves
UNIT_ROUNDOFF = {"float64": sp.Rational(1, 2**53), "float32": sp.Rational(1, 2**24)}
#: the norms at which the truncation claim compares the bound with the unit roundoff exactly
RHOS = (sp.Rational(1, 64), sp.Integer(1), sp.Integer(8), sp.Integer(32), sp.Integer(64))

_A_S = "Abramowitz and Stegun, Handbook of Mathematical Functions (1964)"
if "jacobi_anger" not in LEMMAS:
    register("jacobi_anger", r"e^{i\rho y} = J_0(\rho) + 2\sum_{k\ge1} i^kJ_k(\rho)T_k(y) for y \in [-1, 1] "
             r"(y = \cos\varphi in the generating function of J_k); applied to a Hermitian H with \|H\|_2 \le \rho "
             r"through its spectral decomposition, where \|T_k(H/\rho)\|_2 \le 1", _A_S + ", 9.1.44-9.1.45")
if "skew_spectrum_pairs" not in LEMMAS:
    register("skew_spectrum_pairs", r"for real skew S the eigenvalues of S^TS = -S^2 are real and non-negative, the "
             r"nonzero ones of even multiplicity, zero of multiplicity n mod 2 plus an even number (S is normal with "
             r"eigenvalues \pm i\lambda_j); "
             r"\|S\|_2^2 is the largest", "Horn and Johnson, Matrix Analysis, 2nd ed. (2013), 2.5")
if "bessel_power_bound" not in LEMMAS:
    register("bessel_power_bound", r"|J_k(\rho)| \le (\rho/2)^k/k! for real \rho and integer k \ge 0",
             _A_S + ", 9.1.62")


def _target(k: int, t: sp.Symbol) -> sp.Poly:
    r""":math:`i^kT_k(-it)` as a polynomial in ``t`` over :math:`\mathbb{Q}(i)` (SymPy's Chebyshev polynomial)."""
    T = sp.chebyshevt_poly(k, t, polys=True)
    n = T.degree()
    # T_k(-it): the coefficient of t^j times (-i)^j; then times i^k
    coeffs = [c * (-sp.I) ** (n - a) * sp.I ** k for a, c in enumerate(T.all_coeffs())]
    return sp.Poly.from_list(coeffs, t, domain=sp.ZZ_I)


def recurrence_identity(sign: int = 1) -> MatrixIdentity:
    r"""``[w_k(t) - i^k T_k(-it)]_{k \le K}`` with the kernel's recurrence ``w_{k+1} = 2t w_k + sign * w_{k-1}``
    (``sign = -1`` is the plain Chebyshev recurrence: a negative control)."""

    def residual(size, Xm):
        # polynomials in a fresh symbol, then evaluated at the entry (a symbol, or a rational point)
        t = sp.Dummy("t")
        w_prev, w = sp.Poly(1, t, domain=sp.ZZ_I), sp.Poly(t, t, domain=sp.ZZ_I)
        rows = [sp.Poly(0, t, domain=sp.ZZ_I), w - _target(1, t)]
        for k in range(1, size["K"]):
            w_prev, w = w, 2 * sp.Poly(t, t, domain=sp.ZZ_I) * w + sign * w_prev
            rows.append(w - _target(k + 1, t))
        return sp.Matrix([r.as_expr().subs(t, Xm[0, 0]) for r in rows])

    return MatrixIdentity("w_k(X) - i^k T_k(-iX), w_0 = 1, w_1 = X, w_{k+1} = 2X w_k + w_{k-1} (image in Q(i)[t])",
                          variables=lambda s: {"Xm": alg.general("t", 1, 1)}, residual=residual)


def make_recurrence_claim(sign: int = 1, claim_id: str = "exp_action.chebyshev_recurrence",
                          expected: Level = Level.CHECKED) -> Claim:
    """The recurrence claim; ``sign = -1`` gives the negative control."""
    return Claim(
        id=claim_id,
        title="the real Chebyshev recurrence of the exponential's action",
        statement="For every square X: the vectors w_0 = x, w_1 = X x, w_{k+1} = 2 X w_k + w_{k-1} equal "
        "i^k T_k(-i X) x, the terms of exp(S) x = sum_k c_k i^k T_k(H / rho) x with H = -i S, X = S / rho, "
        "c_0 = J_0(rho), c_k = 2 J_k(rho) (kernel exp_skew_action, Note [the Chebyshev action]).",
        latex=r"w_0 = x,\ w_1 = Xx,\ w_{k+1} = 2Xw_k + w_{k-1} \implies w_k = i^kT_k(-iX)\,x",
        source="kernel exp_skew_action (Note [the Chebyshev action] in geoattn.kernels._exp_action)",
        expected=expected,
        checker=Policy(
            identity=recurrence_identity(sign),
            search=at_sizes({"K": 6}),
            points=2,
            exact=at_sizes({"K": MAX_DEGREE}),
            exact_method=f"exact polynomial identity in Q(i)[t] for every k <= {MAX_DEGREE} (the largest degree of "
            "the kernel); t -> X is an algebra homomorphism, so it holds for every square X",
        ),
    )


def adjoint_identity(first: int = 1) -> MatrixIdentity:
    r"""The adjoint recurrence's ``(d/dX, d/dx)`` of ``<g, sum_k c_k w_k>`` minus SymPy's derivatives, stacked;
    ``first`` is the factor of the ``a_1 w_0^T`` term (1; ``first = 2`` is a negative control)."""

    def residual(size, X, x, g, c):
        m = size["K"]
        # the derivatives are taken in fresh symbols, then evaluated at X, x (symbols, or a rational point)
        Xs = sp.Matrix(*X.shape, lambda i, j: sp.Dummy(f"X{i}{j}"))
        xs = sp.Matrix(*x.shape, lambda i, j: sp.Dummy(f"x{i}{j}"))
        at = {**dict(zip(Xs, X)), **dict(zip(xs, x))}
        w = [xs, Xs * xs]
        for k in range(1, m):
            w.append(2 * Xs * w[k] + w[k - 1])
        loss = (g.T * sum((c[k, 0] * w[k] for k in range(m + 1)), sp.zeros(*x.shape)))[0, 0]
        a = [None] * (m + 3)
        a[m + 1] = a[m + 2] = sp.zeros(*x.shape)
        for k in range(m, 0, -1):
            a[k] = c[k, 0] * g + 2 * Xs.T * a[k + 1] + a[k + 2]
        a0 = c[0, 0] * g + Xs.T * a[1] + a[2]
        gX = first * a[1] * w[0].T
        for k in range(2, m + 1):
            gX += 2 * a[k] * w[k - 1].T
        dX = sp.Matrix(*X.shape, lambda i, j: sp.diff(loss, Xs[i, j]))
        dx = sp.Matrix(*x.shape, lambda i, j: sp.diff(loss, xs[i, j]))
        r = (gX - dX).reshape(X.shape[0] * X.shape[1], 1).col_join(a0 - dx)
        return r.applyfunc(lambda e: sp.expand(sp.expand(e).xreplace(at)))

    return MatrixIdentity("adjoint recurrence of sum_k c_k w_k minus the derivatives of <g, y> in X and x",
                          variables=lambda s: {"X": alg.general("X", s["n"], s["n"]), "x": alg.general("x", s["n"], 1),
                                               "g": alg.general("g", s["n"], 1), "c": alg.general("c", s["K"] + 1, 1)},
                          residual=residual)


def make_adjoint_claim(first: int = 1, claim_id: str = "exp_action.chebyshev_adjoint",
                       expected: Level = Level.CHECKED) -> Claim:
    """The adjoint claim; ``first = 2`` gives the negative control."""
    return Claim(
        id=claim_id,
        title="the adjoint (Clenshaw) recurrence of the Chebyshev action",
        statement="For y = sum_{k<=m} c_k w_k with w_0 = x, w_1 = X x, w_{k+1} = 2 X w_k + w_{k-1} and an incoming "
        "gradient g: with a_m = c_m g, a_k = c_k g + 2 X^T a_{k+1} + a_{k+2} (k >= 1), a_0 = c_0 g + X^T a_1 + a_2, "
        "the gradients of <g, y> are a_0 in x and a_1 w_0^T + 2 sum_{k=2}^m a_k w_{k-1}^T in X (kernel "
        "exp_skew_action, its eager and native backward); checked exactly at n = 2, m <= 5 and n = 3, m = 3.",
        latex=r"\frac{\partial\langle g, y\rangle}{\partial X} = a_1w_0^T + 2\sum_{k=2}^m a_kw_{k-1}^T,\ "
        r"\frac{\partial\langle g, y\rangle}{\partial x} = a_0",
        source="kernel exp_skew_action (Note [the Chebyshev action]; geoattn.codegen.exp_action_c)",
        expected=expected,
        checker=Policy(
            identity=adjoint_identity(first),
            search=at_sizes({"n": 2, "K": 3}),
            points=2,
            exact=at_sizes({"n": 2, "K": 1}, {"n": 2, "K": 2}, {"n": 2, "K": 5}, {"n": 3, "K": 3}),
            exact_method="exact polynomial identity in the entries of X, x, g and the c_k (SymPy derivatives)",
        ),
    )


def tail_bound(rho, m: int) -> sp.Expr:
    r"""``2 (rho/2)^{m+1} / (m+1)! / (1 - rho / (2 (m + 2)))``, exact (``oo`` where ``rho >= 2 (m + 2)``)."""
    rho = sp.nsimplify(rho)
    q = rho / (2 * (m + 2))
    if q >= 1:
        return sp.oo
    return 2 * (rho / 2) ** (m + 1) / sp.factorial(m + 1) / (1 - q)


def degree_for(rho, u) -> int:
    """The smallest degree whose tail bound at ``rho`` is at most ``u`` (exact rational arithmetic)."""
    for m in range(MAX_DEGREE + 1):
        if tail_bound(rho, m) <= u:
            return m
    raise ValueError(f"Expected a norm whose degree is at most {MAX_DEGREE}. Got rho = {rho}.")


def _truncation_derivation(offset: int) -> Derivation:
    subject, steps, signs = [], [], []
    for dtype, u in UNIT_ROUNDOFF.items():
        for rho in RHOS:
            m = degree_for(rho, u) + offset
            tag = rf"{dtype},\rho={sp.latex(rho)},m={m}"
            err = sp.Symbol(rf"\|e^Sx - \sum_{{k\le m}}c_kw_k\|_2/\|x\|_2[{tag}]")
            bessel = sp.Symbol(rf"\sum_{{k>m}}2|J_k(\rho)|[{tag}]")
            powers = sp.Symbol(rf"2\sum_{{k>m}}(\rho/2)^k/k![{tag}]")
            value = tail_bound(rho, m)
            subject.append(err)
            steps += [
                Step(err, bessel, r"Jacobi--Anger at H = -iS, \|H\|_2 \le \rho: the omitted terms have "
                     r"\|T_k(H/\rho)\|_2 \le 1", lemma="jacobi_anger", relation="<="),
                Step(bessel, powers, r"|J_k(\rho)| \le (\rho/2)^k/k!", lemma="bessel_power_bound", relation="<="),
                Step(powers, value, r"the tail of the exponential series at \rho/2 after m terms: first omitted "
                     r"term times 1/(1 - \rho/(2(m+2)))", lemma="taylor_remainder_bound", relation="<="),
            ]
            signs.append(sp.sign(sp.Add(u, -value, evaluate=False), evaluate=False))
    total = sp.Add(*signs, evaluate=False)
    steps.append(Step(total, len(signs), r"exact rational comparison: at each norm the bound at the rule's degree "
                      r"is at most the unit roundoff u of its dtype (\mathrm{sign}(u - \text{bound}) = 1)",
                      identity()))
    return Derivation(
        assumptions=[r"S^T = -S,\ \rho \ge \|S\|_2,\ m \text{ the smallest degree with the bound} \le u"],
        subject=tuple(subject),
        steps=steps,
        remark=r"\text{truncation error of the Chebyshev action below } u \text{ at } \rho \in \{1/64, 1, 8, 32, 64\}",
        conclusion=sp.Eq(total, len(signs), evaluate=False),
    )


def make_truncation_claim(offset: int = 0, claim_id: str = "exp_action.truncation_bound") -> Claim:
    """The truncation claim; a negative ``offset`` lowers every degree (a negative control)."""
    return Claim(
        id=claim_id,
        title="truncation error of the Chebyshev action",
        statement="For skew S, rho >= ||S||_2 and the smallest degree m with 2 (rho/2)^(m+1) / (m+1)! / "
        "(1 - rho / (2 (m + 2))) <= u, the truncated expansion sum_{k<=m} c_k w_k is within that bound times "
        "||x||_2 of exp(S) x; at rho = 1/64, 1, 8, 32, 64 the bound is below the unit roundoff of float32 and float64.",
        latex=r"\|e^Sx - \textstyle\sum_{k\le m}c_kw_k\|_2 \le \frac{2(\rho/2)^{m+1}}{(m+1)!\,(1 - \rho/(2(m+2)))}"
        r"\|x\|_2 \le u\,\|x\|_2",
        source="kernel exp_skew_action (Note [the Chebyshev action] in geoattn.kernels._exp_action)",
        expected=Level.PROVED,
        checker=Policy(prove=lambda: _truncation_derivation(offset)),
    )


def pairing_identity(general: bool = False) -> MatrixIdentity:
    r"""The coefficients in ``t`` of :math:`\det(tI - S^2) - t^{n \bmod 2}P(t)^2` with ``P`` read off the even
    coefficients of :math:`\det(zI - S)`; ``general=True`` takes a general ``S`` (a negative control)."""

    def residual(size, S):
        n, half = size["n"], size["n"] // 2
        dS = DomainMatrix.from_Matrix(S)          # the polynomial ring (or QQ) of the entries
        dom = dS.domain
        char_s, char_sq = dS.charpoly(), (dS * dS).charpoly()  # coefficients, leading 1 first
        P = [char_s[2 * k] for k in range(half + 1)]
        square = [dom.zero] * (2 * half + 1 + n % 2)        # t^(n mod 2) P(t)^2, highest power first
        for i, a in enumerate(P):
            for j, b in enumerate(P):
                square[i + j] += a * b
        return sp.Matrix([dom.to_sympy(a - b) for a, b in zip(char_sq, square)])

    make = (lambda s: alg.general("s", s["n"], s["n"])) if general else (lambda s: alg.skew("s", s["n"]))
    return MatrixIdentity("det(tI - S^2) - t^(n mod 2) P(t)^2, P from the even coefficients of det(zI - S)",
                          variables=lambda s: {"S": make(s)}, residual=residual)


def _pairing_expression(sizes=(2, 3, 4)) -> sp.Expr:
    r""":math:`\sum_n w^n(\det(tI - S_n^2) - t^{n \bmod 2}P_n(t)^2)` for symbolic skew :math:`S_n` (a fresh ``w``
    keeps the sizes apart), unexpanded: zero as a polynomial exactly when the pairing holds at every size."""
    t, z, w = sp.symbols("t z w")
    total = []
    for n in sizes:
        S = alg.skew("s", n)
        char_s = sp.Poly((z * sp.eye(n) - S).det(method="berkowitz"), z).all_coeffs()
        P = sp.Add(*[char_s[2 * k] * t ** (n // 2 - k) for k in range(n // 2 + 1)], evaluate=False)
        char_sq = (t * sp.eye(n) - S * S).det(method="berkowitz")
        total.append(sp.Mul(w ** n, char_sq - t ** (n % 2) * P ** 2, evaluate=False))
    return sp.Add(*total, evaluate=False)


def _square_norm_derivation() -> Derivation:
    pairing = _pairing_expression()
    n2, mu, half_sq, half_tr, fro = sp.symbols(r"\|S\|_2^4 \mu_{\max}^2 \tfrac12\sum_i\mu_i^2 "
                                              r"\tfrac12\mathrm{Tr}(S^TS)^2 \tfrac12\|S^2\|_F^2")
    steps = [
        Step(pairing, sp.Integer(0), r"the pairing of the eigenvalues at $n = 2, 3, 4$: $\det(tI - S^2) = "
             r"t^{n \bmod 2}P(t)^2$ with $P$ read off $\det(zI - S)$, expanded in $t$ and the entries of $S$",
             identity()),
        Step(n2, mu, r"$\|S\|_2^2$ is the largest eigenvalue $\mu_{\max}$ of $S^TS$", lemma="skew_spectrum_pairs"),
        Step(mu, half_sq, r"every $\mu_i \ge 0$ and the nonzero ones come in equal pairs, so $\mu_{\max}^2$ occurs "
             r"at least twice in $\sum_i \mu_i^2$ (the pairing $\det(tI - S^2) = t^{n \bmod 2} P(t)^2$ is checked "
             r"exactly at $n = 2, \dots, 5$)", lemma="skew_spectrum_pairs", relation="<="),
        Step(half_sq, half_tr, r"the eigenvalues of $(S^TS)^2$ are the $\mu_i^2$", lemma="eigendecomposition_normal"),
        Step(half_tr, fro, r"$S^TS = -S^2$ is symmetric: $\mathrm{Tr}(S^TS)^2 = \mathrm{Tr}(S^2)^TS^2 = \|S^2\|_F^2$",
             lemma="definition"),
    ]
    return Derivation(
        assumptions=[r"S \in \mathbb{R}^{n\times n},\ S^T = -S"],
        subject=(pairing,),
        steps=steps,
        remark=r"\|S\|_2 \le (\|S^2\|_F^2/2)^{1/4}\text{ for real skew } S",
        conclusion=(n2, fro),
    )


def make_square_norm_claim(general: bool = False, claim_id: str = "exp_action.skew_square_norm_bound",
                           expected: Level = Level.PROVED) -> Claim:
    """The norm bound of the Chebyshev degree; ``general=True`` (with ``expected=Level.REFUTED``) is the negative
    control: the pairing fails for a general matrix."""
    return Claim(
        id=claim_id,
        title="the spectral norm of a skew matrix from the Frobenius norm of its square",
        statement="For real skew S: ||S||_2^4 <= ||S^2||_F^2 / 2, since the eigenvalues of S^T S = -S^2 are "
        "non-negative and come in equal pairs, det(tI - S^2) = t^(n mod 2) P(t)^2 with P read off the even "
        "coefficients of det(zI - S) (checked exactly at n = 2 .. 5); the bound rho of the Chebyshev action "
        "(kernel exp_skew_action, geoattn.kernels._exp_action.norm_bound).",
        latex=r"\|S\|_2^4 \le \tfrac12\|S^2\|_F^2,\quad \det(tI - S^2) = t^{n \bmod 2}P(t)^2",
        source="kernel exp_skew_action (geoattn.kernels._exp_action.norm_bound)",
        expected=expected,
        checker=Policy(
            identity=pairing_identity(general),
            search=at_sizes({"n": 3}, {"n": 4}, {"n": 6}),
            points=2,
            prove=None if general else _square_norm_derivation,
            exact=at_sizes({"n": 2}, {"n": 3}, {"n": 4}, {"n": 5}),
            always_exact=True,
            exact_method="exact polynomial identity in t and the entries of S (characteristic polynomials over "
            "the ring of the entries)",
        ),
    )


def uta_factor_identity(transpose: bool = True) -> MatrixIdentity:
    r"""The kernel's entries of :math:`S = \mathrm{uta}(qk^T)^T` minus the algebra's, stacked over the kernel's
    gradients in ``q`` and ``k`` of :math:`\langle G, S\rangle` minus SymPy's; ``transpose=False`` drops the
    :math:`G^T` term (a negative control)."""

    def residual(size, q, k, G):
        T = size["T"]
        entry = lambda i, l: ((q[l, :] * k[i, :].T)[0, 0] if i > l else  # noqa: E731
                              -(q[i, :] * k[l, :].T)[0, 0] if i < l else sp.S.Zero)
        S = sp.Matrix(T, T, entry)
        ref = alg.upper_triangular_asymmetrize(q * k.T).T
        # the derivatives are taken in fresh symbols, then evaluated at q, k (symbols, or a rational point)
        qs = sp.Matrix(*q.shape, lambda i, j: sp.Dummy(f"q{i}{j}"))
        ks = sp.Matrix(*k.shape, lambda i, j: sp.Dummy(f"k{i}{j}"))
        at = {**dict(zip(qs, q)), **dict(zip(ks, k))}
        ref_s = alg.upper_triangular_asymmetrize(qs * ks.T).T
        loss = sum((G[i, j] * ref_s[i, j] for i in range(T) for j in range(T)), sp.S.Zero)
        H = (G.T - G) if transpose else -G
        U = sp.Matrix(T, T, lambda a, b: H[a, b] if a < b else sp.S.Zero)
        gq, gk = U * k, U.T * q
        dq = qs.applyfunc(lambda e: sp.diff(loss, e).xreplace(at))
        dk = ks.applyfunc(lambda e: sp.diff(loss, e).xreplace(at))
        blocks = [S - ref, gq - dq, gk - dk]
        return sp.Matrix.vstack(*[b.reshape(b.rows * b.cols, 1) for b in blocks]).applyfunc(sp.expand)

    return MatrixIdentity("S(q, k) - uta(q k^T)^T and the factored gradients of <G, S> minus the derivatives",
                          variables=lambda s: {"q": alg.general("q", s["T"], s["K"]),
                                               "k": alg.general("k", s["T"], s["K"]),
                                               "G": alg.general("g", s["T"], s["T"])},
                          residual=residual)


def make_uta_factor_claim(transpose: bool = True, claim_id: str = "exp_action.uta_factor_vjp",
                          expected: Level = Level.CHECKED) -> Claim:
    """The factored form's claim; ``transpose=False`` gives the negative control."""
    return Claim(
        id=claim_id,
        title="the factored skew matrix of the orthonormal activation and its gradients",
        statement="For q, k (T x K): S = uta(q k^T)^T has S_il = q_l . k_i (i > l), -(q_i . k_l) (i < l), 0 (i = l), "
        "and the gradients of <G, S> are striu(G^T - G) k in q and striu(G^T - G)^T q in k (the native factored "
        "Chebyshev action, Note [the factored Chebyshev action]); checked exactly at T = 2 .. 4, K = 1 .. 3.",
        latex=r"\frac{\partial\langle G, S\rangle}{\partial q} = \mathrm{striu}(G^T - G)\,k,\ "
        r"\frac{\partial\langle G, S\rangle}{\partial k} = \mathrm{striu}(G^T - G)^Tq,\ "
        r"S = \mathrm{uta}(qk^T)^T",
        source="kernel exp_uta_action (geoattn.codegen.exp_action_c, Note [the factored Chebyshev action])",
        expected=expected,
        checker=Policy(
            identity=uta_factor_identity(transpose),
            search=at_sizes({"T": 3, "K": 2}),
            points=2,
            exact=at_sizes({"T": 2, "K": 1}, {"T": 3, "K": 2}, {"T": 4, "K": 3}),
            exact_method="exact polynomial identity in the entries of q, k and G (SymPy derivatives)",
        ),
    )


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [make_recurrence_claim(), make_adjoint_claim(), make_truncation_claim(), make_square_norm_claim(),
          make_uta_factor_claim()]
