"""The spectral forms of the kernels: ``exp_skew.eigh_form``, ``cayley.eigh_form``, the Daleckii--Krein
backward ``exp_skew.vjp``, the closed form ``exp_skew.hodge_form`` of the exponential of a 4 x 4 skew
matrix, and the Newton--Schulz step ``cayley.polish`` that the Cayley transform takes at large norms instead of
an eigendecomposition (family ``kernels``; the expressions are the ones ``geoattn codegen`` prints, as in
:mod:`geoattn.symbolic.claims.kernels`)."""

from __future__ import annotations

import sympy as sp

from .. import algebra as alg
from .. import expressions as ex
from ..claim import Claim
from sympy.matrices.expressions import MatAdd, MatMul

from ..proof import Check, identity, relation
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity, exact_evidence
from ._exp_frechet import exp_vjp_derivation as _exp_vjp_derivation
from ._kernel_checks import free_algebra
from ._common import Grows, Policy, at_sizes, grid, run_bindings
from ._common import kernel_eval as _ev

__all__ = ["CLAIMS", "exp_vjp_identity", "so4_identity", "so4_derivation", "polish_identity", "polish_derivation"]

T, G = ex.T, ex.G


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


def _symbolic_small(ident: MatrixIdentity):
    """The exact symbolic identity at ``T = 1, 2`` (at T = 2, S = [[0, s], [-s, 0]]: i S has eigenvalues -s, s)."""

    def evidence(ctx) -> Evidence:
        return exact_evidence(
            ident, [{"T": 1}, {"T": 2}], method="exact symbolic identity at explicit sizes", seed=ctx.seed_for("x")
        )

    return evidence


def _eigh_form_policy(ident: MatrixIdentity) -> Policy:
    """The policy of the eigendecomposition forms: one rational point at T = 2, 3, then exact at T <= 2."""
    return Policy(identity=ident, search=at_sizes({"T": 2}, {"T": 3}), points=1, extra=(_symbolic_small(ident),))


def _check_eigh_form(ctx, ident: MatrixIdentity | None = None) -> list[Evidence]:
    """Run :func:`_eigh_form_policy` for ``ident`` (default: the ``exp`` form); negative controls call it."""
    return _eigh_form_policy(ident or _eigh_form_identity())(ctx)


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
        res = _unsinc(res)  # sinc(0) = 1 is already evaluated
        return sp.simplify(sp.expand_complex(res))

    return MatrixIdentity(
        "<G, Dexp(S)[H]> - <VJP, H> (T = 2)",
        variables=lambda sz: {"s": alg.general("s", 1, 1), "Gm": alg.general("g", 2, 2), "Hm": alg.general("h", 2, 2)},
        residual=residual,
    )


# ---------------------------------------------------------------------------
# exp_skew.hodge_form (Note [exp of a 4 x 4 skew matrix] in geoattn.symbolic.expressions)
# ---------------------------------------------------------------------------


def _unsinc(e):
    return e.replace(sp.sinc, lambda z: sp.sin(z) / z)


def so4_identity(bindings=None) -> MatrixIdentity:
    r"""The kernel's ``E`` minus :math:`\exp(S)` at :math:`S = Q\,\mathrm{diag}((u + v)J, (u - v)J)\,Q^T`, with ``Q``
    the Cayley transform of a skew 4 x 4 matrix ``q`` (special orthogonal, and rational at a rational point) and
    angles ``u, v`` (rational at the search's points); every skew 4 x 4 matrix has this form. There
    :math:`\exp(S) = Q\,\mathrm{diag}(R(u)R(v),
    R(u)R(v)^T)\,Q^T` (``R`` the plane rotation), so at a rational point both sides are polynomials in ``cos u``,
    ``sin u``, ``cos v``, ``sin v`` with rational coefficients (the kernel's angles are ``|u|`` and ``|v|``), and the
    residual is exactly zero; a nonzero one is a counterexample. ``bindings`` replaces the kernel's (negative
    controls)."""
    bindings = ex.EXP_SO4 if bindings is None else bindings
    J = sp.Matrix([[0, 1], [-1, 0]])

    def rot(t):
        return sp.Matrix([[sp.cos(t), sp.sin(t)], [-sp.sin(t), sp.cos(t)]])

    def residual(size, q, w):
        u, v = w[0], w[1]
        Q = alg.cayley(q)
        S = (Q * sp.diag((u + v) * J, (u - v) * J) * Q.T).applyfunc(sp.expand)
        got = run_bindings(bindings, {ex.S4: S}, {}, post=sp.expand)["E"]
        want = Q * sp.diag(rot(u) * rot(v), rot(u) * rot(v).T) * Q.T
        return (got.applyfunc(_unsinc) - want).applyfunc(sp.expand)

    return MatrixIdentity("E(S) - exp(S), S = Q diag((u+v)J, (u-v)J) Q^T",
                          variables=lambda s: {"q": alg.skew("q", 4), "w": alg.general("w", 2, 1)},
                          residual=residual)


def _half_turn_check() -> Check:
    r"""``exp(X) = cos(theta) I + sinc(theta) X`` read from the sides: the lhs is ``exp(X)`` of an explicit square
    matrix ``X``; the check confirms ``X^2 = -theta^2 I`` with ``theta^2 = -Tr(X^2)/n`` (entries expanded), that the
    even and odd parts of the exponential series then sum to ``cos(theta)`` and ``sinc(theta)`` (SymPy's summation
    of ``(-theta^2)^m/(2m)!`` and ``(-theta^2)^m/(2m+1)!``), and that the rhs is ``cos(theta) I + sinc(theta) X``."""
    th, m = sp.symbols("theta m", positive=True)
    even = sp.summation((-th**2) ** m / sp.factorial(2 * m), (m, 0, sp.oo))
    odd = sp.summation((-th**2) ** m / sp.factorial(2 * m + 1), (m, 0, sp.oo))
    series = sp.simplify(even - sp.cos(th)) == 0 and sp.simplify(odd - sp.sin(th) / th) == 0

    def decide(lhs, rhs):
        if not (series and isinstance(lhs, alg.MatExp) and isinstance(lhs.arg, sp.MatrixBase)):
            return False
        X = sp.Matrix(lhs.arg)
        size = X.rows
        sq = (X * X).applyfunc(sp.expand)
        minus_trace = sp.expand(-sq.trace())  # n theta^2
        if (size * sq + minus_trace * sp.eye(size)).applyfunc(sp.expand) != sp.zeros(size):
            return False
        theta = sp.sqrt(minus_trace) / sp.sqrt(size)
        want = sp.cos(theta) * sp.eye(size) + sp.sinc(theta) * X
        return isinstance(rhs, sp.MatrixBase) and (sp.Matrix(rhs) - want).applyfunc(sp.expand) == sp.zeros(size)

    return relation(decide, "X^2 = -theta^2 I, so the even and odd series give cos(theta) I + sinc(theta) X")


def _exp_args_equal(lhs, rhs) -> bool:
    """Both sides are ``exp`` of explicit matrices with equal (expanded) arguments."""
    return (isinstance(lhs, alg.MatExp) and isinstance(rhs, alg.MatExp)
            and (sp.Matrix(lhs.arg.doit()) - sp.Matrix(rhs.arg.doit())).applyfunc(sp.expand) == sp.zeros(*lhs.shape))


def _entrywise(*subs) -> Check:
    """Both sides, after the substitutions ``subs`` (``(old, new)`` pairs, e.g. earlier steps) and evaluation, are
    explicit matrices of one shape whose entries agree after expansion (no ``simplify``: the entries are
    polynomials in cosines, sines and square roots, which expansion compares exactly as written)."""

    def decide(lhs, rhs, pairs):
        lv, rv = lhs.xreplace(dict(subs)).doit(), rhs.doit()
        if not (isinstance(lv, sp.MatrixBase) and isinstance(rv, sp.MatrixBase) and lv.shape == rv.shape):
            return False
        diffs = [a - b for a, b in zip(lv, rv)]
        point = {v: sp.Rational(k + 2, 7) for k, v in enumerate(sorted(set().union(*(e.free_symbols for e in diffs)),
                                                                        key=str))}
        # a clearly nonzero value at one point rejects at once; acceptance needs every entry to expand to 0
        if any(abs(complex(sp.N(e.xreplace(point), 30))) > 1e-12 for e in diffs):
            return False
        return all(e == 0 or sp.expand(e) == 0 for e in diffs)

    shown = ", ".join(f"{sp.sstr(a)[:20]}... -> ..." for a, _ in subs)
    return Check("entries equal after expansion" + (f" with {shown}" if shown else ""), decide, (), tuple(subs))


def so4_derivation(bindings=None) -> Derivation:
    """The proof of ``exp_skew.hodge_form`` for the kernel's bindings (or ``bindings``, negative controls), at the
    generic skew 4 x 4 matrix (six independent symbols: the claim is about 4 x 4 matrices only): the split
    ``S = S_+ + S_-``, the commutator and the half-turns are checked on the bindings' values; ``exp`` of a sum of
    commuting matrices is the cited lemma."""
    bindings = ex.EXP_SO4 if bindings is None else bindings
    Sg = sp.ImmutableMatrix(alg.skew("s", 4))
    out = {k: sp.ImmutableMatrix(v) for k, v in run_bindings(bindings, {ex.S4: Sg}, {}, post=sp.expand).items()}
    Sp, Sm, E = out["Sp"], out["Sm"], out["E"]
    halves = MatAdd(Sp, Sm, evaluate=False)
    commutator = MatAdd(MatMul(Sp, Sm, evaluate=False), -MatMul(Sm, Sp, evaluate=False), evaluate=False)
    turns = []
    for X in (Sp, Sm):
        theta = sp.sqrt(-(X * X).applyfunc(sp.expand).trace()) / 2  # as the kernel writes it
        turns.append(sp.ImmutableMatrix(sp.cos(theta) * sp.eye(4) + sp.sinc(theta) * X))
    exp_p, exp_m = alg.MatExp(Sp), alg.MatExp(Sm)
    return Derivation(
        assumptions=[r"S \in \mathfrak{so}(4)\ \text{generic (six independent entries)},\ "
                     r"(\star S)_{ij} = \tfrac12\textstyle\sum_{kl}\varepsilon_{ijkl}S_{kl},\ "
                     r"S_\pm = \tfrac12(S \pm \star S)\ \text{(the kernel's bindings)}"],
        subject=(commutator,),
        steps=[
            Step(alg.MatExp(Sg), alg.MatExp(halves), "S = S_+ + S_-: the kernel's bindings (SymPy, entries expanded)",
                 relation(_exp_args_equal, "exp of equal arguments")),
            Step(commutator, sp.ZeroMatrix(4, 4), "the halves commute: a polynomial identity in the six entries",
                 identity()),
            Step(alg.MatExp(halves), MatMul(exp_p, exp_m), "step 2: S_+S_- = S_-S_+",
                 lemma="exp_commuting"),
            Step(exp_p, turns[0], r"S_+^2 = -\theta_+^2I (checked), then the series of exp", _half_turn_check()),
            Step(exp_m, turns[1], r"S_-^2 = -\theta_-^2I (checked), then the series of exp", _half_turn_check()),
            Step(MatMul(exp_p, exp_m), MatMul(*turns, evaluate=False), "steps 4-5",
                 _entrywise((exp_p, turns[0]), (exp_m, turns[1]))),
            Step(MatMul(*turns, evaluate=False), E,
                 "the kernel's E is the product of the two half-turns (its bindings)",
                 _entrywise()),
        ],
        remark=r"\exp(S) = (\cos\theta_+I + \mathrm{sinc}\,\theta_+S_+)(\cos\theta_-I + \mathrm{sinc}\,\theta_-S_-)",
        conclusion=sp.Eq(alg.MatExp(Sg), E, evaluate=False),
    )


# ---------------------------------------------------------------------------
# cayley.polish: one Newton--Schulz step squares the orthogonality defect
# ---------------------------------------------------------------------------


def _polish_result(bindings, E: sp.Matrix, k: int) -> sp.Matrix:
    """The kernel's bindings (default: ``orthogonal_polish``'s) evaluated at the explicit ``k x k`` matrix ``E``."""
    return run_bindings(bindings, {ex.Eo: E}, {T: k})["N"]


def polish_identity(bindings=None) -> "MatrixIdentity":
    r"""``N^T N - I - (-3/4 D^2 + 1/4 D^3)`` with ``D = E^T E - I`` and ``N`` the kernel's step at a general ``E``.

    ``bindings`` replaces the kernel's (a negative control passes a wrong step)."""
    bindings = ex.ORTHOGONAL_POLISH if bindings is None else bindings

    def residual(size, E):
        k = size["T"]
        N = _polish_result(bindings, E, k)
        D = E.T * E - sp.eye(k)
        return (N.T * N - sp.eye(k) - (-sp.Rational(3, 4) * D**2 + sp.Rational(1, 4) * D**3)).applyfunc(sp.expand)

    return MatrixIdentity("N^T N - I + 3/4 D^2 - 1/4 D^3", variables=lambda s: {"E": alg.general("e", s["T"], s["T"])},
                          residual=residual)


def polish_derivation(bindings=None) -> Derivation:
    r"""Dimension-generic proof of ``cayley.polish`` for the kernel's bindings (or ``bindings``, negative controls).

    The conclusion is read with ``N`` and ``R`` the kernel's bound names: the bindings (a fact) give
    ``N^T N - I = R^T E^T E R - I`` with ``R = (3I - E^TE)/2`` symmetric, and that is a polynomial in the free
    algebra of ``E`` and ``E^T`` whose expansion equals the one of ``-3/4 D^2 + 1/4 D^3``, ``D = E^TE - I``
    (both sides mapped to noncommuting generators ``E``, ``E^T`` and expanded: an identity for every size)."""
    bindings = ex.ORTHOGONAL_POLISH if bindings is None else bindings
    E, I = ex.Eo, ex.I_T
    (r_name, r_expr), (n_name, n_expr) = bindings
    Rs, Ns = sp.MatrixSymbol(r_name, T, T), sp.MatrixSymbol(n_name, T, T)
    R_E = (3 * I - E.T * E) / 2
    gram = MatMul(R_E, E.T, E, R_E, evaluate=False) - I

    def defect(D):  # products kept as written: the transpose of each power is then visibly itself
        return -sp.Rational(3, 4) * MatMul(D, D, evaluate=False) + sp.Rational(1, 4) * MatMul(D, D, D, evaluate=False)

    return Derivation(
        assumptions=[r"E \in \mathbb{R}^{T\times T}",
                     r"R = \tfrac12(3I - E^TE),\ N = ER\ \text{(the kernel's bindings)}",
                     r"D := E^TE - I"],
        facts={"the kernel's bindings": {Ns: n_expr, Rs: r_expr}},
        steps=[
            Step(Ns.T * Ns - I, gram, "the bindings, (XY)^T = Y^TX^T and R^T = R",
                 identity(facts=("the kernel's bindings",))),
            Step(gram, defect(E.T * E - I), "expansion in the free algebra of E and E^T (no relations)",
                 free_algebra()),
        ],
        remark=r"E^TE = I \implies N = E;\ \|N^TN - I\|_2 \le \tfrac34\|D\|_2^2 + \tfrac14\|D\|_2^3",
        conclusion=sp.Eq(Ns.T * Ns - I, defect(E.T * E - I), evaluate=False),
    )


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    Claim(
        id="exp_skew.eigh_form",
        title="exp of skew S from the eigendecomposition of iS",
        statement="For skew S with i S = U diag(theta) U^H (U unitary, theta real), "
        "exp(S) = Re(U diag(exp(-i theta)) U^H).",
        latex=r"iS = U\,\mathrm{diag}(\theta)\,U^H \implies "
        r"\exp(S) = \operatorname{Re}\left(U\,\mathrm{diag}(e^{-i\theta})\,U^H\right)",
        source="kernel exp_skew (geoattn.symbolic.expressions)",
        expected=Level.CHECKED,
        checker=_eigh_form_policy(_eigh_form_identity()),
        notes="Exact symbolic identity at T <= 2 and exact evaluation at a rational 3 x 3 point; for all T it "
        "is exp(U D U^H) = U exp(D) U^H, which is not mechanised here.",
    ),
    Claim(
        id="cayley.eigh_form",
        title="Cayley of skew C from the eigendecomposition of iC",
        statement="For skew C with i C = U diag(theta) U^H (U unitary, theta real), "
        "Cayley(C) = Re(U diag((1 + i theta)/(1 - i theta)) U^H).",
        latex=r"iC = U\,\mathrm{diag}(\theta)\,U^H \implies \mathrm{Cayley}(C) = "
        r"\operatorname{Re}\left(U\,\mathrm{diag}\left(\tfrac{1 + i\theta}{1 - i\theta}\right)U^H\right)",
        source="kernel cayley at large norms (geoattn.symbolic.expressions)",
        expected=Level.CHECKED,
        checker=_eigh_form_policy(_eigh_form_identity(ex.CAYLEY_FROM_EIGH, alg.cayley, "L(U, theta) - Cayley(S)")),
        notes="Exact symbolic identity at T <= 2 and exact evaluation at a rational 3 x 3 point; for all T it "
        "is f(U D U^H) = U f(D) U^H for f(z) = (1 - z)/(1 + z) at the eigenvalues -i theta of C.",
    ),
    Claim(
        id="exp_skew.hodge_form",
        title="exp of a 4 x 4 skew matrix in closed form",
        statement="For skew 4 x 4 S with S+- = (S +- *S)/2 (* the Hodge star) and theta+-^2 = -Tr(S+-^2)/4, "
        "exp(S) = (cos(theta+) I + sinc(theta+) S+)(cos(theta-) I + sinc(theta-) S-).",
        latex=r"\exp(S) = (\cos\theta_+I + \mathrm{sinc}\,\theta_+S_+)(\cos\theta_-I + \mathrm{sinc}\,\theta_-S_-),\ "
        r"S_\pm = \tfrac12(S \pm \star S)",
        source="kernel exp_skew_so4 (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(identity=so4_identity(), search=at_sizes({"T": 4}), points=2, prove=so4_derivation),
        notes="Skew matrices of size k < 4 are padded with zeros (exp(diag(S, 0)) = diag(exp(S), 1)). The exact "
        "check at random rational rotations Q and rational angles corroborates the proof.",
    ),
    Claim(
        id="exp_skew.vjp",
        title="vector-Jacobian product of exp on skew matrices",
        statement="For i S = U diag(theta) U^H, the gradient of <G, exp(S)> is Re(U (U^H G U o conj(Phi)) U^H) with "
        "Phi_jk = exp(-i(theta_j + theta_k)/2) sinc((theta_j - theta_k)/2).",
        latex=r"\frac{\partial\langle G, e^S\rangle}{\partial S} = "
        r"\operatorname{Re}\left(U(U^HGU\circ\bar\Phi)U^H\right)",
        source="kernel exp_skew backward (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(identity=exp_vjp_identity(), search=at_sizes({"T": 2}), points=1, prove=_exp_vjp_derivation),
    ),
    Claim(
        id="cayley.polish",
        title="a Newton-Schulz step squares the orthogonality defect",
        statement="For any square E with D = E^T E - I, N = E (3I - E^T E)/2 satisfies N^T N - I = -3/4 D^2 + 1/4 D^3; "
        "an orthogonal E is left unchanged.",
        latex=r"N = \tfrac12E(3I - E^TE),\ D = E^TE - I \implies N^TN - I = -\tfrac34D^2 + \tfrac14D^3",
        source="kernel orthogonal_polish: the Cayley transform at large norms (geoattn.symbolic.expressions)",
        expected=Level.PROVED,
        checker=Policy(identity=polish_identity(), search=grid(T=[1, 2, 3]), prove=polish_derivation,
                       exact=grid(T=Grows(1, 2))),
        notes="Used on the solve's result for skew samples of norm above 8 T (Note [Cayley at large norms]); with "
        "||D|| of the solve's size u ||C|| two steps leave a defect of a few rounding errors.",
    ),
]
