r"""The flow argument for the volume of the layer map (seed 000).

Derivations and exact corroborations used by :mod:`.vp_map` (this module
declares no ``CLAIMS``); the argument is Note [map versus frozen matrix] there. The
divergence formula for ``Z -> Z C^m`` (``C = Z^T A Z``) is a stated lemma of
the derivations (not verified by SymPy for general sizes) and is checked exactly
at explicit sizes by :func:`divergence_identity`. Every use of the formula (the
lemma, the odd-power case split, ``m = 1`` for the exponential map and the
explicit-size check) is built by :func:`div_formula`; at even ``m`` the sign ``(-1)^k`` is tested
non-vacuously (at odd ``m`` every trace in it vanishes).

Note [exact points for exp at T = 2]
------------------------------------
For ``T = 2`` the skew ``C`` is ``c [[0, 1], [-1, 0]]`` with ``c = C_12`` and
``exp(C) = [[cos c, sin c], [-sin c, cos c]]``. Writing ``x = cos c``,
``y = sin c`` (so ``dx = -y dc``, ``dy = x dc``), the Jacobian determinant of
``Z -> Z exp(C(Z))`` and the invariance residual are polynomials in ``Z``,
``A``, ``x`` and ``y``; their remainder modulo ``x^2 + y^2 - 1`` is 0 exactly
when they vanish on the circle, which is where ``(cos c, sin c)`` lies. This
gives exact symbolic checks for the exponential at ``T = 2``.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import MatPow, MatrixSymbol, Trace, ZeroMatrix
from sympy.polys.matrices import DomainMatrix
from sympy.polys.rings import ring

from .. import algebra as alg
from ..proof import identity, in_algebra
from ..evidence import Derivation, Evidence, Level, Step
from ..strategies import MatrixIdentity, exact_check
from ._common import T, d, same

__all__ = [
    "volume_flow_derivation",
    "exp_flow_derivation",
    "div_formula",
    "odd_trace_steps",
    "divergence_identity",
    "divergence_sign_step",
    "divergence_evidence",
    "exp_map_circle_identity",
    "circle_evidence",
]

Zm, Am = MatrixSymbol("Z", d, T), MatrixSymbol("A", d, d)
Cs, Kc, dZ = MatrixSymbol("C", T, T), MatrixSymbol("K", T, T), MatrixSymbol(r"\delta Z", d, T)
Cz = Zm.T * Am * Zm
ZERO = ZeroMatrix(T, T)
k = sp.Symbol("k", integer=True, nonnegative=True)
j = sp.Symbol("j", integer=True, nonnegative=True)
m = sp.Symbol("m", integer=True, positive=True)
m_odd = 2 * j + 1
c = sp.Symbol("c", real=True)


def div_formula(dim, n, mm, trace, sign=-1):
    r"""The divergence formula of ``Z -> Z C^m``, the single source of every use of it.

    ``dim Tr(C^m) + sum_{k=0}^{m-1} [sign^k Tr(C^m) + Tr(C^{k+1}) Tr(C^{m-1-k})]`` with
    ``Tr(C^i) = trace(i)`` and ``Tr(C^0) = n`` (the size ``T``). An integer ``mm`` gives the
    expanded sum (so ``trace`` may return ring elements); a symbolic ``mm`` gives a ``Sum`` over
    ``k``. ``sign = -1`` is the right formula; other values are negative controls.
    """

    def tr_(e):
        return n if e == 0 else trace(e)

    def summand(q):
        return sign**q * tr_(mm) + tr_(q + 1) * tr_(mm - 1 - q)

    if isinstance(mm, (int, sp.Integer)):
        total = dim * tr_(int(mm))
        for q in range(int(mm)):
            total = total + summand(q)
        return total
    return dim * tr_(mm) + sp.Sum(summand(k), (k, 0, mm - 1))


def trace_power(e):
    """``Tr(C^e)`` as a SymPy expression (``C`` the ``T x T`` symbol)."""
    return Trace(Cs**e)


def _power_of_c(x):
    """The exponent ``e`` when ``x`` is ``Tr(C^e)``, else ``None``."""
    if not isinstance(x, Trace):
        return None
    if x.arg == Cs:
        return sp.Integer(1)
    if isinstance(x.arg, MatPow) and x.arg.base == Cs:
        return x.arg.exp
    return None


def _drop_odd_traces(e):
    """Replace each ``Tr(C^e)`` whose exponent SymPy knows to be odd by 0."""
    return e.replace(lambda x: _power_of_c(x) is not None and _power_of_c(x).is_odd is True, lambda x: sp.S.Zero)


DIV_LEMMA = (
    r"stated lemma, not verified by SymPy for general d, T, m (it is checked exactly against the divergence "
    r"of Z\mapsto ZC^m at explicit sizes d, T, m, see divergence\_evidence): "
    r"\delta(C^m)=\sum_kC^k\,\delta C\,C^{m-1-k} at \delta Z=e_af_i^T; "
    r"\sum_{a,i}[X]_{ai}[Y]_{ai}=\mathrm{Tr}(X^TY) with the previous step; "
    r"\sum_{a,i}(e_a^TXe_a)(f_i^TYf_i)=\mathrm{Tr}X\,\mathrm{Tr}Y "
    r"and \mathrm{Tr}(ZC^kZ^TA)=\mathrm{Tr}(C^{k+1})"
)
LIOUVILLE = r"Liouville: \tfrac{d}{dt}\det D\Phi_t=(\operatorname{div}V)\det D\Phi_t=0"


def _algebra(lhs, rhs) -> bool:
    return alg.equal_in_algebra(lhs, rhs, Cs, -1)


def _series_ok() -> bool:
    s = sp.piecewise_fold(sp.summation(c ** (2 * j + 1) / (2 * j + 1), (j, 0, sp.oo)))
    pieces = s.args if isinstance(s, sp.Piecewise) else ()
    return any(
        cond is not sp.true and cond.as_set() == sp.Interval.open(-1, 1) and sp.simplify(e - sp.atanh(c)) == 0
        for e, cond in pieces
    )


def divergence_sign_step(sign: int = -1) -> Step:
    r"""``(ZC^k)^T A Z C^{m-1-k} = sign^k C^m`` for skew ``C = Z^T A Z``: the sign in the divergence formula.

    ``sign = -1`` is right; ``+1`` gives a step that fails to verify (a negative control).
    """
    lhs = (Zm * MatPow(Cz, k)).T * Am * Zm * MatPow(Cz, m - 1 - k)
    mid = MatPow(Cs, k).T * Cs * MatPow(Cs, m - 1 - k)
    rhs = sp.Integer(sign) ** k * MatPow(Cs, m)
    return Step(
        r"(ZC^k)^TAZ\,C^{m-1-k}", rhs, r"(ZC^k)^TAZ=(C^k)^TC and (C^k)^T=(C^T)^k=(-C)^k",
        identity(),
    )


def _divergence_steps() -> list[Step]:
    first_order = dZ.T * Am * Zm + Zm.T * Am * dZ
    return [
        Step(r"\delta C", first_order, r"first-order part of (Z+\delta Z)^TA(Z+\delta Z)-Z^TAZ",
             identity()),
        divergence_sign_step(),
        Step(r"\operatorname{div}(Z\mapsto ZC^m)", div_formula(d, T, m, trace_power), DIV_LEMMA, lemma='TODO'),
    ]


def odd_trace_steps(mexp=m_odd) -> list[Step]:
    """The steps showing that the divergence formula vanishes at the exponent ``mexp`` (odd: ``2j + 1``).

    The formula is :func:`div_formula`, looked up when the steps run. With an even ``mexp`` (``2j``) every
    step fails to verify (a negative control).
    """
    X, t = MatrixSymbol("X", T, T), sp.Symbol("t")
    r, s = sp.Symbol("r", integer=True), sp.Symbol("s", integer=True)
    i = sp.Symbol("i", integer=True, nonnegative=True)
    power = MatPow(Cs, mexp)
    explicit = [mexp.subs(j, q) for q in range(3)]  # 1, 3, 5 for the odd exponent

    def trace_zero():  # Tr X = Tr X^T and (C^m)^T = -C^m give t = -t; exact at explicit skew C
        generic = Trace(X.T).doit() == Trace(X) and _algebra(power.T, -power)
        flipped = Trace(-power).doit()  # Tr((C^m)^T) after (C^m)^T = -C^m
        solved = sp.solve(sp.Eq(t, flipped.subs(Trace(power), t)), t) == [0]
        sizes_ok = all(
            sp.expand((alg.skew("c", n) ** e).trace()) == 0 for n in (2, 3, 4) for e in explicit
        )
        return generic and solved and sizes_ok

    def parity():  # the exponents add up to m; an odd m is no sum of two even integers
        total = sp.simplify((k + 1) + (mexp - 1 - k) - mexp) == 0
        no_even_pair = sp.diophantine(2 * r + 2 * s - mexp) == set()
        enumerated = all((q + 1) % 2 or (int(e) - 1 - q) % 2 for e in explicit for q in range(int(e)))
        return total and no_even_pair and enumerated

    def cases():  # the shared formula: drop traces of odd powers, case split on the parity of k
        formula = div_formula(d, T, mexp, trace_power)
        sums = list(formula.atoms(sp.Sum))
        if len(sums) != 1:
            return False
        summand, (var, *_) = sums[0].function, sums[0].limits[0]
        outer = _drop_odd_traces(formula.subs(sums[0], 0)) == 0
        split = all(_drop_odd_traces(summand.subs(var, kk)) == 0 for kk in (2 * i, 2 * i + 1))
        return outer and split

    return [
        Step(Trace(power), 0, r"\mathrm{Tr}X=\mathrm{Tr}X^T and (C^m)^T=-C^m for odd m=2j+1 (also checked for "
             r"an explicit skew C, T=2..4, m=1,3,5)", trace_zero),
        Step(r"k+1 \text{ or } m-1-k", r"\text{odd}", r"(k+1)+(m-1-k)=m is odd and 2r+2s=m has no integer solution",
             parity, relation=r"\ \text{is}\ "),
        Step(div_formula(d, T, mexp, trace_power), 0,
             r"\mathrm{Tr}(C^m)=0; in each term one factor is a trace of an odd power (case split k=2i, 2i+1)",
             cases),
    ]


def volume_flow_derivation() -> Derivation:
    """``det J_F = 1`` for ``F(Z) = Z Cayley(Z^T A Z)``, every ``d`` and ``T`` (Note [map versus frozen matrix])."""
    mp = MatPow(Cs, m_odd)
    return Derivation(
        assumptions=[
            r"A^T=-A,\ C(Z)=Z^TAZ \text{ skew (vp.skew\_weighting)},\ F(Z)=Z\,\mathrm{Cayley}(C(Z)) \text{ for all } Z",
            r"U=\{Z: \|C(Z)\|_2<1\} \text{ (open, } 0\in U),\ K(C)=-2\,\mathrm{artanh}(C),\ V(Z)=Z\,K(C(Z))",
        ],
        steps=[
            Step(r"-2\,\mathrm{artanh}(c)", r"-2\sum_{j\ge0}\frac{c^{2j+1}}{2j+1}", r"power series, |c|<1", _series_ok),
            Step(sp.exp(-2 * sp.atanh(c)), (1 - c) / (1 + c), r"\mathrm{artanh}\,c=\tfrac12\log\tfrac{1+c}{1-c}",
                 identity()),
            Step(r"-2\,\mathrm{artanh}(-c)", 2 * sp.atanh(c), "K is an odd power series",
                 identity()),
            Step(r"\exp(K(C))", r"(I-C)(I+C)^{-1}=\mathrm{Cayley}(C)",
                 r"functional calculus of power series for \|C\|<1, applied to step 2", lemma='power_series_calculus'),
            Step(r"\tfrac{d}{dt}C(Z)", Kc.T * Cz + Cz * Kc, r"along \dot Z=V(Z)=ZK: \dot Z^TAZ+Z^TA\dot Z",
                 identity()),
            Step(mp.T * Cs + Cs * mp, ZERO, r"(C^m)^T=(-1)^mC^m=-C^m for odd m=2j+1, and C^mC=CC^m",
                 identity()),
            Step(Kc.T * Cs + Cs * Kc, ZERO, r"K=-2\sum_jC^{2j+1}/(2j+1) converges for \|C\|<1; step 6 termwise", lemma='power_series_calculus'),
            Step(r"Z(t)", r"Z_0\exp(tK(C_0)),\quad C(Z(t))=C_0",
                 r"\dot C=0 keeps Z(t) in U, so \dot Z=ZK(C_0) is linear with a constant coefficient "
                 r"(uniqueness of solutions)", lemma='ode_uniqueness'),
            Step(r"\Phi_1(Z_0)", r"Z_0\exp(K(C_0))=Z_0\,\mathrm{Cayley}(C_0)=F(Z_0)",
                 r"steps 4 and 8: F is the time-1 flow of V on U", lemma='flow_time_one'),
            *_divergence_steps(),
            *odd_trace_steps(),
            Step(r"\operatorname{div}V", 0,
                 r"V=-2\sum_jZC^{2j+1}/(2j+1): termwise differentiation of a convergent power series; step 15", lemma='power_series_calculus'),
            Step(r"\det J_F(Z)", 1, LIOUVILLE + r" along the flow; Z\in U", lemma='TODO'),
            Step(r"\det J_F(Z)-1", r"\frac{P(Z,A)}{\det(I+C)^{2dT}}",
                 r"F=N/\delta with N=Z(I-C)\,\mathrm{adj}(I+C) and \delta=\det(I+C)\neq0 (cayley.well_defined); "
                 r"J_F=J_{\mathrm{num}}/\delta^2 with J_{\mathrm{num}}=(\partial N)\delta-N\,\partial\delta "
                 r"polynomial", lemma='ledger:cayley.well_defined'),
            Step(r"P(Z,A)", 0, r"P(\cdot,A) is a polynomial vanishing on the nonempty open set U, so it is zero", lemma='identity_theorem_polynomials'),
        ],
        remark=r"\det J_F(Z) = 1 \text{ for every } Z\in\mathbb{R}^{d\times T},\ \text{every skew } A,"
        r"\ \text{all } d, T",
        conclusion=None,  # TODO
    )


def exp_flow_derivation() -> Derivation:
    """``det J = 1`` for ``Z -> Z exp(Z^T A Z)``: the flow of ``V(Z) = Z C(Z)``, no series or continuation."""
    cc = Zm.T * Am * Zm * Zm.T * Am * Zm  # CC, kept as a product of the factors
    return Derivation(
        assumptions=[r"A^T=-A,\ C(Z)=Z^TAZ \text{ skew (vp.skew\_weighting)},\ V(Z)=Z\,C(Z) \text{ (polynomial)}"],
        steps=[
            Step(r"\tfrac{d}{dt}C(Z)", r"C^TC+CC", r"along \dot Z=ZC: (ZC)^TAZ+Z^TAZC",
                 identity()),
            Step(Cs.T * Cs + Cs * Cs, ZERO, r"C^T=-C", identity()),
            Step(r"Z(t)", r"Z_0\exp(tC_0)",
                 r"\dot C=0, so \dot Z=ZC_0 is linear with a constant coefficient, for all t and Z_0", lemma='ode_uniqueness'),
            Step(r"\Phi_1(Z_0)", r"Z_0\exp(C(Z_0))",
                 r"step 3 at t=1: the map is the time-1 flow of V on all of \mathbb{R}^{d\times T}", lemma='flow_time_one'),
            *_divergence_steps(),
            Step(r"\operatorname{div}(Z\mapsto ZC)", (d + 1 + T) * Trace(Cs), r"step 7 at m=1 with \mathrm{Tr}(C^0)=T",
                 identity()),
            Step(Trace(Cs), 0, r"\mathrm{Tr}C=\mathrm{Tr}C^T=-\mathrm{Tr}C",
                 identity((Cs.T, -Cs))),
            Step(r"\det J(Z)", 1, r"\operatorname{div}V=0 by steps 8-9; " + LIOUVILLE + "; step 4", lemma='TODO'),
        ],
        remark=r"\det\frac{\partial\,\mathrm{vec}_r(Z\exp(Z^TAZ))}{\partial\,\mathrm{vec}_r(Z)} = 1"
        r" \text{ for every } Z,\ \text{all } d, T",
        conclusion=None,  # TODO
    )


def divergence_identity(sign: int = -1) -> MatrixIdentity:
    """``[div(Z -> Z C^m) - formula, div (odd m)]`` at size ``{"d", "T", "m"}``, ``A`` skew.

    ``sign`` is the base of ``sign^k Tr(C^m)`` in the formula (``-1`` is right). The divergence is
    taken in fresh symbols and evaluated at ``Z``, so exact points work as well as symbols.
    """

    def residual(size, Z, A):
        W = alg.general("w", Z.rows, Z.cols)
        R, *_ = ring(sorted(W.free_symbols | A.free_symbols, key=lambda x: x.name), sp.QQ)  # QQ[w, a]

        def mul(X, Y):
            cols, inner = range(len(Y[0])), range(len(Y))
            return [[sum((X[i][q] * Y[q][jj] for q in inner), R.zero) for jj in cols] for i in range(len(X))]

        w = [[R(W[i, jj]) for jj in range(W.cols)] for i in range(W.rows)]
        a = [[R(A[i, jj]) for jj in range(A.cols)] for i in range(A.rows)]
        cc = mul(mul([list(col) for col in zip(*w)], a), w)
        powers = [[[R.one if i == jj else R.zero for jj in range(Z.cols)] for i in range(Z.cols)]]
        for _ in range(size["m"]):
            powers.append(mul(powers[-1], cc))
        mm, v = size["m"], mul(w, powers[size["m"]])
        div = sum((v[p][i].diff(R(W[p, i])) for p in range(W.rows) for i in range(W.cols)), R.zero)
        trs = [sum((pw[i][i] for i in range(Z.cols)), R.zero) for pw in powers]
        formula = div_formula(size["d"], trs[0], mm, lambda e: trs[e], sign)
        out = sp.Matrix([(div - formula).as_expr(), div.as_expr() if mm % 2 else 0])
        return out.xreplace(dict(zip(W, Z))).applyfunc(sp.expand)

    return MatrixIdentity(
        f"[div(Z -> Z C^m) - formula (sign {sign}), div for odd m]", residual=residual,
        variables=lambda s: {"Z": alg.general("z", s["d"], s["T"]), "A": alg.skew("a", s["d"])},
    )


def divergence_evidence(ctx, ms) -> Evidence:
    """``checked`` evidence for the divergence lemma at explicit sizes (``error`` if it fails)."""
    shapes = [(2, 2), (2, 3), (3, 2), (3, 3)] + ([(2, 4), (4, 2), (3, 4)] if ctx.depth > 1 else [])
    want = [{"d": a, "T": b, "m": q} for a, b in shapes for q in ms]
    ok, done = exact_check(divergence_identity(), want)
    method = "exact divergence of Z -> Z C^m, symbolic, against the formula of the derivation (and div = 0 for odd m)"
    if ok:
        return Evidence(Level.CHECKED, method, sizes=done)
    return Evidence(Level.ERROR, method, sizes=want[len(done):][:1], detail="the divergence lemma fails at this size")


def exp_map_circle_identity(kind: str = "det") -> MatrixIdentity:
    """``det J - 1`` (``kind="det"``) or ``C(Z exp(C)) - C`` (``"invariant"``) for ``Z -> Z exp(Z^T A Z)``
    at ``T = 2``, reduced modulo ``cos^2 c + sin^2 c - 1`` (Note [exact points for exp at T = 2])."""
    x, y = sp.symbols("x y", real=True)

    def residual(size, Z, A):
        cc = sp.expand((Z.T * A * Z)[0, 1])
        R = sp.Matrix([[x, y], [-y, x]])
        if kind == "invariant":
            res = ((Z * R).T * A * (Z * R) - Z.T * A * Z).applyfunc(sp.expand)
        else:
            out, zv = alg.vec_rows(Z * R), alg.vec_rows(Z)

            def dd(e, v):  # chain rule with x = cos c, y = sin c
                return sp.expand(sp.diff(e, v) + (sp.diff(e, y) * x - sp.diff(e, x) * y) * sp.diff(cc, v))

            jac = sp.Matrix(len(out), len(zv), lambda p, q: dd(out[p], zv[q]))
            ring_ = sp.QQ[tuple(sorted(jac.free_symbols | {x, y}, key=lambda s: s.name))]
            res = sp.Matrix([ring_.to_sympy(DomainMatrix.from_Matrix(jac).convert_to(ring_).det()) - 1])
        return res.applyfunc(lambda p: sp.reduced(p, [x**2 + y**2 - 1], x, y)[1] if p != 0 else p)

    name = "det J - 1" if kind == "det" else "C(Z exp(C)) - C"
    return MatrixIdentity(
        f"{name} mod cos^2 + sin^2 - 1 (T = 2)", residual=residual,
        variables=lambda s: {"Z": alg.general("z", s["d"], 2), "A": alg.skew("a", s["d"])},
    )


def circle_evidence(ctx, kind: str) -> Evidence:
    """``checked`` evidence from :func:`exp_map_circle_identity` at ``T = 2`` (``error`` if it fails)."""
    rot = sp.Matrix([[sp.cos(c), sp.sin(c)], [-sp.sin(c), sp.cos(c)]])
    rotation = alg.is_zero((sp.Matrix([[0, c], [-c, 0]]).exp() - rot).applyfunc(sp.simplify))
    want = [{"d": 2, "T": 2}, {"d": 3, "T": 2}] + ([{"d": 4, "T": 2}] if ctx.depth > 1 else [])
    ok, done = exact_check(exp_map_circle_identity(kind), want)
    method = (
        "exact symbolic identity at T = 2 with exp(C) = [[cos c, sin c], [-sin c, cos c]] (checked by SymPy), "
        "reduced modulo cos^2 c + sin^2 c - 1"
    )
    if ok and rotation:
        return Evidence(Level.CHECKED, method, sizes=done)
    return Evidence(Level.ERROR, method, sizes=want[len(done):][:1], detail="the T = 2 exact check failed")
