r"""The dimension-generic derivations of the symattn family (not public; the claims are in
:mod:`geoattn.symbolic.claims.symattn`).

Column layout: :math:`Q\in\mathbb{R}^{n\times T}`, :math:`C = Q^TAQ`, :math:`\Sigma(Q) = f(C)`; the kernels use
the row layout :math:`z = Q^T` (:mod:`geoattn.symbolic.symattn`). A layer is symplectic when its Jacobian
:math:`D` satisfies :math:`D^T\Omega D = \Omega`; the layer claims reach that conclusion by showing that the
update is the gradient :math:`\nabla_Q\Sigma` (ledger ``symattn.potential_gradient``) and citing the
gradient-shear claim (ledger ``symattn.gradient_shear_symplectic``).
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import BlockMatrix, Identity, MatrixSymbol, Trace, ZeroMatrix

from ..evidence import Derivation, Step
from ..nodes import SoftmaxJVP
from ..proof import identity, relation
from ..symattn import ACTIVATIONS, Aw, Gw, V, update_bindings, vjp_bindings, z
from ._common import T, n, same
from ._entrywise import BLOCKS, blocks_with, collapse

__all__ = ["gradient_derivation", "symmetric_gradient_derivation", "shear_derivation", "symmetric_shortcut_derivation",
           "symmetric_matrix_softmax_derivation", "symmetric_vector_layer_derivation", "arbitrary_derivation",
           "layer_derivation", "vjp_derivation"]

Qm = MatrixSymbol("Q", n, T)
Am = MatrixSymbol("A", n, n)
Gm = MatrixSymbol("G", T, T)
GRAD = Am * Qm * Gm.T + Am.T * Qm * Gm
GRAD_SIGMA = MatrixSymbol(r"\nabla_Q\Sigma", n, T)
SYMMETRIC = {"A symmetric": {Am.T: Am}}
POTENTIAL = "ledger:symattn.potential_gradient"
SHEAR = "ledger:symattn.gradient_shear_symplectic"

_c = sp.IndexedBase("c")
_i, _j, _m, _k = sp.symbols("i j m k", integer=True)


def _poisson(N):
    return BlockMatrix([[ZeroMatrix(N, N), Identity(N)], [-Identity(N), ZeroMatrix(N, N)]])


def _potential_entry(over: str, one: bool):
    """The terms of ``f`` that depend on ``c_ij`` (one column's for ``"columns"``) and their denominator."""
    eps = 1 if one else 0
    if over == "all":
        total = eps + sp.Sum(sp.exp(_c[_m, _k]), (_m, 1, T), (_k, 1, T))
    else:
        total = eps + sp.Sum(sp.exp(_c[_m, _j]), (_m, 1, T))
    return sp.log(total), total


def _derivative_is(lhs, rhs) -> bool:
    """``lhs`` is a derivative in one entry ``c_ij``: evaluated by SymPy, it equals ``rhs`` inside the index range
    1 <= i, j <= T (of a Piecewise result, the branch whose condition holds at two points of that range)."""
    if not isinstance(lhs, sp.Derivative):
        return False
    got = sp.piecewise_fold(lhs.doit().doit())
    if isinstance(got, sp.Piecewise):
        points = ({_i: 1, _j: 1, T: 1}, {_i: 2, _j: 3, T: 3})
        got = next((e for e, cond in got.args if all(cond.subs(p) is sp.true for p in points)), None)
        if got is None:
            return False
    return sp.simplify(got - rhs) == 0


def _matrix_diff(expr, var):
    """The gradient of a scalar expression in the matrix symbol ``var``, taken addend by addend (SymPy returns 0
    for some sums of traces taken whole)."""
    expr = sp.expand(expr)
    if expr.is_Add:
        return sp.Add(*[_matrix_diff(a, var) for a in expr.args])
    coeff, rest = expr.as_coeff_Mul()
    return coeff * rest.diff(var)


def _gradient_is(lhs, rhs) -> bool:
    """``lhs`` is a derivative of a scalar in a matrix symbol; SymPy's matrix calculus gives ``rhs``."""
    if not (isinstance(lhs, sp.Derivative) and len(lhs.variables) == 1):
        return False
    return same(_matrix_diff(lhs.expr, lhs.variables[0]), rhs)


def _linear_in(var):
    """Both sides vanish at ``var = 0`` and have one gradient in ``var`` that does not depend on ``var``: both are
    the same linear function of ``var``."""
    def decide(lhs, rhs) -> bool:
        zero = ZeroMatrix(*var.shape)
        if any(sp.simplify(side.subs(var, zero).doit()) != 0 for side in (lhs, rhs)):
            return False
        grad = _matrix_diff(lhs, var)
        return var not in grad.free_symbols and same(grad, _matrix_diff(rhs, var))

    return relation(decide, f"same linear function of {var}")


DERIVATIVE = relation(_derivative_is, "SymPy derivative in one entry c_ij")
GRADIENT = relation(_gradient_is, "matrix calculus (SymPy)")


def gradient_derivation(activations=tuple(ACTIVATIONS)) -> Derivation:
    r""":math:`\nabla_Q f(Q^TAQ) = AQG^T + A^TQG` with :math:`G = \nabla_C f` the softmax of each activation."""
    fixed = sp.Derivative(Trace(Gm.T * Qm.T * Am * Qm), Qm)
    steps, subject = [], [GRAD_SIGMA]
    for act in activations:
        over, one = ACTIVATIONS[act]
        f, total = _potential_entry(over, one)
        lhs = sp.Derivative(f, _c[_i, _j])
        rule = f"{act}: $G_{{ij}} = \\partial f / \\partial c_{{ij}}$, a softmax entry"
        rule += " (only column $j$ depends on $c_{ij}$)" if over == "columns" else ""
        steps.append(Step(lhs, sp.exp(_c[_i, _j]) / total, rule, DERIVATIVE))
        subject.append(lhs)
    steps += [
        Step(GRAD_SIGMA, fixed, r"chain rule: d\Sigma = \mathrm{Tr}(G^T dC) with G = \nabla_C f, so the gradient is "
             "that of Tr(G^T C(Q)) with G held fixed", lemma="chain_rule"),
        Step(fixed, GRAD, "matrix calculus (SymPy): dC = dQ^T A Q + Q^T A dQ", GRADIENT),
    ]
    return Derivation(
        assumptions=[r"Q\in\mathbb{R}^{n\times T},\ A\in\mathbb{R}^{n\times n},\ C = Q^TAQ,\ \Sigma(Q) = f(C)",
                     r"G_{ij} = \partial f/\partial C_{ij}"],
        subject=tuple(subject),
        steps=steps,
        remark=r"G = \mathrm{softmax}(C)\ \text{of the potential (the last steps)}",
        conclusion=sp.Eq(GRAD_SIGMA, GRAD, evaluate=False),
    )


def symmetric_gradient_derivation(activation: str) -> Derivation:
    r"""The gradient of :func:`gradient_derivation` for a symmetric :math:`A`: :math:`AQ(G + G^T)`."""
    base = gradient_derivation((activation,))
    sym = Am * Qm * (Gm + Gm.T)
    base.steps.append(Step(GRAD, sym, "A^T = A", identity()))
    base.facts = dict(SYMMETRIC)
    base.assumptions.append(r"A^T = A")
    base.conclusion = sp.Eq(GRAD_SIGMA, sym, evaluate=False)
    return base


def _shear_blocks():
    N = sp.Symbol("N", integer=True, positive=True)
    H = MatrixSymbol("H", N, N)
    I, O = Identity(N), ZeroMatrix(N, N)
    return N, H, _poisson(N), BlockMatrix([[I, O], [H, I]]), BlockMatrix([[I, H], [O, I]])


def shear_derivation() -> Derivation:
    r"""A gradient shear :math:`(q, p)\mapsto(q, p + \nabla V(q))` is symplectic (and so is the q-update)."""
    N, H, om, jp, jq = _shear_blocks()
    Dp, Dq = MatrixSymbol("D_p", 2 * N, 2 * N), MatrixSymbol("D_q", 2 * N, 2 * N)
    both = BlockMatrix([[Dp.T * om * Dp, Dq.T * om * Dq]])
    substituted = BlockMatrix([[jp.T * om * jp, jq.T * om * jq]])
    collapsed = collapse(substituted)
    target = BlockMatrix([[om, om]])
    return Derivation(
        assumptions=[r"V \in C^2(\mathbb{R}^N),\ H = \nabla^2 V",
                     r"\Omega = \begin{pmatrix}0 & I\\ -I & 0\end{pmatrix}",
                     r"D_p, D_q\ \text{the Jacobians of } (q, p + \nabla V(q)) \text{ and } (q + \nabla V(p), p)"],
        subject=(Dp, Dq),
        steps=[
            Step(Dp, jp, "differentiate the p-update: d(p + grad V(q)) = dp + H dq", lemma="chain_rule"),
            Step(Dq, jq, "differentiate the q-update: d(q + grad V(p)) = dq + H dp", lemma="chain_rule"),
            Step(H, H.T, "the Hessian of a C^2 function is symmetric (Schwarz)", lemma="hessian_symmetric"),
            Step(both, substituted, "steps 1-2", identity((Dp, jp), (Dq, jq))),
            Step(substituted, collapsed, "block multiplication", BLOCKS),
            Step(collapsed, target, "step 3: H^T = H", blocks_with((H.T, H))),
        ],
        remark=r"\text{a shear by the gradient of a scalar potential is symplectic}",
        conclusion=sp.Eq(both, target, evaluate=False),
    )


def _layer_jacobian():
    """The Jacobian symbol of a layer ``(q, p + U(q))`` in the coordinates (vec Q, vec P), and Omega."""
    N = n * T
    return MatrixSymbol(r"D_{(q,\,p + U(q))}", 2 * N, 2 * N), _poisson(N)


def _shear_step(D, om) -> Step:
    return Step(D.T * om * D, om, "(q, p + U(q)) with U = grad_Q Sigma is a gradient shear", lemma=SHEAR)


def _shear_derivation(steps: list[Step], D, om, **fields) -> Derivation:
    r"""``steps`` that end at the potential's gradient, then the gradient-shear step: the derivation that the layer
    with Jacobian ``D`` is symplectic, :math:`D^T\Omega D = \Omega` (``fields``: the rest of the derivation)."""
    return Derivation(steps=[*steps, _shear_step(D, om)], conclusion=sp.Eq(D.T * om * D, om, evaluate=False),
                      **fields)


def symmetric_shortcut_derivation() -> Derivation:
    """The page's symmetric shortcut of its matrix-softmax gradient: (AZE^T + A^TZE)/(1 + s) = 2AZE/(1 + s)."""
    E = MatrixSymbol("E", T, T)
    s = sp.Symbol("s", positive=True)
    C = Qm.T * Am * Qm
    stated = (Am * Qm * E.T + Am.T * Qm * E) / (1 + s)
    short = 2 * Am * Qm * E / (1 + s)
    return Derivation(
        assumptions=[r"A^T = A", r"E = \exp.(C),\ s = \textstyle\sum_{mn}e^{C_{mn}}"],
        facts=dict(SYMMETRIC),
        subject=(C,),
        steps=[
            Step(C, C.T, "A^T = A", identity()),
            Step(E, E.T, "step 1: an entrywise function of a symmetric matrix is symmetric",
                 lemma="entrywise_symmetric"),
            Step(stated, short, "step 2: E^T = E; A^T = A", identity((E.T, E))),
        ],
        conclusion=sp.Eq(stated, short, evaluate=False),
    )


def symmetric_matrix_softmax_derivation() -> Derivation:
    """The package's symmetric matrix-softmax update 2 A Q S is the gradient AQS^T + A^TQS, so the layer is
    symplectic."""
    S = MatrixSymbol("S", T, T)
    C = Qm.T * Am * Qm
    code = 2 * Am * Qm * S
    grad = Am * Qm * S.T + Am.T * Qm * S
    D, om = _layer_jacobian()
    return _shear_derivation(
        [
            Step(C, C.T, "A^T = A", identity()),
            Step(S, S.T, "step 1: an entrywise function of a symmetric matrix divided by a scalar is symmetric",
                 lemma="entrywise_symmetric"),
            Step(code, grad, "step 2: S^T = S; A^T = A", identity((S.T, S))),
            Step(grad, GRAD_SIGMA, "symattn.potential_gradient with matrix_softmax (G = S)", lemma=POTENTIAL),
        ],
        D, om,
        assumptions=[r"A^T = A", r"S = \exp.(C)/\sum_{mk}e^{C_{mk}}\ \text{(MatrixSoftmax)}", r"U(Q) = 2AQS"],
        facts=dict(SYMMETRIC),
        subject=(C, code, D),
        remark=r"\text{the package's symmetric MatrixSoftmax layer is symplectic}",
    )


def symmetric_vector_layer_derivation() -> Derivation:
    """The update A Q (S + S^T) with the column softmax S is the gradient of the vector-softmax potential."""
    S = MatrixSymbol("S", T, T)
    upd = Am * Qm * (S + S.T)
    grad = Am * Qm * S.T + Am.T * Qm * S
    D, om = _layer_jacobian()
    return _shear_derivation(
        [
            Step(upd, grad, "A^T = A", identity()),
            Step(grad, GRAD_SIGMA, "symattn.potential_gradient with vector_softmax (G = S)", lemma=POTENTIAL),
        ],
        D, om,
        assumptions=[r"A^T = A", r"S = \mathrm{VectorSoftmax}(C)\ \text{(softmax over each column)}",
                     r"U(Q) = AQ(S + S^T)"],
        facts=dict(SYMMETRIC),
        subject=(upd, D),
        remark=r"(q, p)\mapsto(q, p + AQ(S + S^T))\ \text{is symplectic}",
    )


def arbitrary_derivation() -> Derivation:
    """The package's arbitrary-weighting update A Q S^T + A^T Q S is the potential's gradient for both softmaxes."""
    S = MatrixSymbol("S", T, T)
    code = Am * Qm * S.T + Am.T * Qm * S
    fixed = sp.Derivative(Trace(S.T * Qm.T * Am * Qm), Qm)
    D, om = _layer_jacobian()
    return _shear_derivation(
        [
            Step(GRAD_SIGMA, fixed, "symattn.potential_gradient: the gradient of Tr(G^T C(Q)) with G = S held fixed "
                 "(matrix_softmax or vector_softmax)", lemma=POTENTIAL),
            Step(fixed, code, "matrix calculus (SymPy): the code's update", GRADIENT),
        ],
        D, om,
        assumptions=[r"S = \mathrm{MatrixSoftmax}(C)\ \text{or}\ \mathrm{VectorSoftmax}(C)",
                     r"U(Q) = AQS^T + A^TQS\ \text{(the code)}"],
        subject=(GRAD_SIGMA, D),
        remark=r"\text{the package's arbitrary-weighting layer is symplectic for both softmaxes}",
    )


def layer_derivation() -> Derivation:
    """geoattn's generated update (row layout), transposed, is the column-layout gradient for every activation."""
    column = Aw * z.T * Gw.T + Aw.T * z.T * Gw  # AQG^T + A^TQG with Q = z^T
    sigma = MatrixSymbol(r"\nabla_Q\Sigma", *column.shape)
    kernel = {}
    for act in ACTIVATIONS:
        kernel.setdefault(dict(update_bindings(act))["U"], []).append(act)
    N = column.shape[0] * column.shape[1]
    D, om = MatrixSymbol(r"D_{(q,\,p + U(q))}", 2 * N, 2 * N), _poisson(N)
    steps = [Step(upd.T, column, "the kernel binding U of " + ", ".join(acts) + " (G its softmax), transposed",
                  identity()) for upd, acts in kernel.items()]
    steps.append(Step(column, sigma, "symattn.potential_gradient in the column layout Q = z^T", lemma=POTENTIAL))
    return _shear_derivation(
        steps, D, om,
        assumptions=[r"z = Q^T\ \text{(tokens as rows)},\ G = \mathrm{softmax}(zAz^T)\ \text{of the activation}",
                     r"A\ \text{arbitrary, or}\ A = \tfrac12(W + W^T)\ \text{for symmetric=True}"],
        subject=tuple(upd.T for upd in kernel) + (D,),
        remark=r"\text{SymplecticAttention is symplectic for every activation and weighting}",
    )


def vjp_derivation() -> Derivation:
    r"""The generated VJP bindings are :math:`\partial\langle V, U\rangle/\partial z` and
    :math:`\partial\langle V, U\rangle/\partial A` of the update :math:`U = GzA^T + G^TzA`."""
    names = {name: MatrixSymbol(name, *expr.shape) for name, expr in vjp_bindings("all")}
    binds = dict(vjp_bindings("all"))
    K, Cd = names["K"], names["Cd"]
    U = Gw * z * Aw.T + Gw.T * z * Aw
    pairing = Trace(Gw.T * binds["Cd"])
    through_c = Trace(K.T * z * Aw * z.T)
    dz = sp.Derivative(through_c + pairing, z)
    dA = sp.Derivative(through_c + pairing, Aw)
    gz = K * z * Aw.T + K.T * z * Aw + Gw * V * Aw.T + Gw.T * V * Aw
    gA = z.T * K * z + V.T * Gw * z + z.T * Gw * V
    derived = BlockMatrix([[gz], [gA]])
    kernel = BlockMatrix([[binds["gz"]], [binds["gA"]]])
    bars = BlockMatrix([[MatrixSymbol(r"\bar z", *z.shape)], [MatrixSymbol(r"\bar A", *Aw.shape)]])
    adjoint = MatrixSymbol(r"\mathrm{D}G^*[\dot C]", *K.shape)
    inner = tuple((names[nm], binds[nm]) for nm in ("P", "H", "R"))
    return Derivation(
        assumptions=[r"U = \nabla_z\Sigma = GzA^T + G^TzA,\ G = \nabla_C f(zAz^T)",
                     r"\bar z = \partial\langle V, U\rangle/\partial z,\ "
                     r"\bar A = \partial\langle V, U\rangle/\partial A",
                     r"K = \mathrm{D}G[\dot C],\ \dot C = VAz^T + zAV^T\ \text{(the kernel's bindings K, Cd)}"],
        subject=(Trace(V.T * U), adjoint, Cd, dz, dA),
        steps=[
            Step(Trace(V.T * U), pairing, r"\langle V, U\rangle = \langle G, \dot C\rangle (cyclic traces)",
                 _linear_in(V)),
            Step(adjoint, K, "DG is the Hessian of f, hence self-adjoint", lemma="hessian_symmetric"),
            Step(K, SoftmaxJVP(Gw, Cd, "all"), "matrix softmax: G.Cdot - G<G, Cdot>", lemma="softmax_derivative"),
            Step(K, SoftmaxJVP(Gw, Cd, "columns"), "vector softmax: G.(Cdot - 1 1^T (G.Cdot))",
                 lemma="softmax_derivative"),
            Step(dz, gz, "through C with K fixed, through Cdot with G fixed", GRADIENT),
            Step(dA, gA, "likewise in A", GRADIENT),
            Step(bars, derived, "product and chain rule on <G(C), Cdot> (step 1): through C with K (step 2) fixed, "
                 "through Cdot with G fixed; the two gradients of steps 5-6", lemma="chain_rule"),
            Step(derived, kernel, "the kernel's grouping P = Kz + GV, H = G^T V, R = K^T z + H", blocks_with(*inner)),
        ],
        remark=r"\bar z = KzA^T + K^TzA + GVA^T + G^TVA,\ \bar A = z^TKz + V^TGz + z^TGV",
        conclusion=sp.Eq(bars, kernel, evaluate=False),
    )
