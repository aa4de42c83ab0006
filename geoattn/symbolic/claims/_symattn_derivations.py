r"""The derivations behind the nonlinear symplectic attention claims (:mod:`geoattn.symbolic.claims.symattn`):
the gradients of the four potentials, the gradient shear's symplecticity, the symmetric shortcuts, the layer and
its vector-Jacobian product, all dimension-generic."""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import BlockMatrix, Identity, MatrixSymbol, Trace, ZeroMatrix

from ..evidence import Derivation, Step
from ..symattn import ACTIVATIONS
from ._common import T, n, same
from ._symattn_exact import softmax

__all__ = ["gradient_derivation", "symmetric_gradient_derivation", "shear_derivation", "symmetric_shortcut_derivation",
           "symmetric_matrix_softmax_derivation", "symmetric_vector_layer_derivation", "sym_vector_update",
           "arbitrary_derivation", "layer_derivation", "vjp_derivation"]


# ---------------------------------------------------------------------------
# derivations (dimension-generic)
# ---------------------------------------------------------------------------

Qm = MatrixSymbol("Q", n, T)
Am = MatrixSymbol("A", n, n)
Gm = MatrixSymbol("G", T, T)
GRAD = Am * Qm * Gm.T + Am.T * Qm * Gm

_c = sp.IndexedBase("c")
_i, _j, _m, _k = sp.symbols("i j m k", integer=True)


def _entry_derivative_ok(over: str, one: bool) -> bool:
    """SymPy differentiates ``f`` in one entry ``c_ij`` of a generic T x T matrix and gets the softmax entry."""
    eps = 1 if one else 0
    if over == "all":
        total = eps + sp.Sum(sp.exp(_c[_m, _k]), (_m, 1, T), (_k, 1, T))
        got = sp.log(total).diff(_c[_i, _j]).doit()
        want = sp.exp(_c[_i, _j]) / total
    else:  # only column j depends on c_ij; its term is log(eps + sum_m exp(c_mj))
        total = eps + sp.Sum(sp.exp(_c[_m, _j]), (_m, 1, T))
        got = sp.log(total).diff(_c[_i, _j]).doit()
        want = sp.exp(_c[_i, _j]) / total
    inside = {_i: 1, _j: 1}
    got = sp.piecewise_fold(got)
    if isinstance(got, sp.Piecewise):  # the nonzero branch holds for 1 <= i, j <= T
        branch = next(e for e, cond in got.args if cond.subs(inside).subs(T, 1) is sp.true)
        got = branch
    return sp.simplify(got - want) == 0


def _softmax_latex(over: str, one: bool, arg: str = "C") -> str:
    eps = "1 + " if one else ""
    if over == "all":
        return rf"\frac{{e^{{{arg}_{{ij}}}}}}{{{eps}\sum_{{mk}} e^{{{arg}_{{mk}}}}}}"
    return rf"\frac{{e^{{{arg}_{{ij}}}}}}{{{eps}\sum_{{m}} e^{{{arg}_{{mj}}}}}}"


def gradient_derivation(activations=tuple(ACTIVATIONS)) -> Derivation:
    r""":math:`\nabla_Q f(Q^TAQ) = AQG^T + A^TQG` with :math:`G = \nabla_C f` the softmax of each activation."""
    fixed = Trace(Gm.T * Qm.T * Am * Qm)
    steps = [
        Step(r"d\Sigma", r"\mathrm{Tr}(G^T\,dC),\ G_{ij} = \partial f/\partial C_{ij}", "chain rule for Sigma = f(C)"),
        Step(fixed.diff(Qm), GRAD, "matrix calculus with G held fixed (dC = dQ^T A Q + Q^T A dQ)",
             lambda: same(fixed.diff(Qm), GRAD)),
    ]
    for act in activations:
        over, one = ACTIVATIONS[act]
        rule = f"{act}: differentiate f in one entry of a generic T x T matrix"
        if over == "columns":
            rule += " (only the term of column j depends on C_ij)"
        label = act.replace("_", r"\_")
        steps.append(Step(rf"\partial f_{{\mathrm{{{label}}}}}/\partial C_{{ij}}",
                          _softmax_latex(over, one), rule, lambda o=over, e=one: _entry_derivative_ok(o, e)))
    return Derivation(
        assumptions=[r"Q\in\mathbb{R}^{n\times T},\ A\in\mathbb{R}^{n\times n},\ C = Q^TAQ,\ \Sigma(Q) = f(C)"],
        steps=steps,
        conclusion=r"\nabla_Q\Sigma = AQG^T + A^TQG,\ G = \mathrm{softmax}(C)\ \text{of the potential}",
    )


def shear_derivation() -> Derivation:
    r"""A gradient shear :math:`(q, p)\mapsto(q, p + \nabla V(q))` is symplectic (and so is the q-update)."""
    N = sp.Symbol("N", integer=True, positive=True)
    H = MatrixSymbol("H", N, N)
    I, O = Identity(N), ZeroMatrix(N, N)
    om = BlockMatrix([[O, I], [-I, O]])
    jp = BlockMatrix([[I, O], [H, I]])
    jq = BlockMatrix([[I, H], [O, I]])

    def symplectic(j):
        return isinstance(sp.block_collapse(sp.block_collapse(j.T * om * j).subs(H.T, H) - om), ZeroMatrix)

    return Derivation(
        assumptions=[r"V \in C^2(\mathbb{R}^N),\ H = \nabla^2 V(q)", r"\Omega = \begin{pmatrix}0 & I\\ -I & 0\end{pmatrix}"],
        steps=[
            Step(r"\partial(q, p + \nabla V(q))/\partial(q, p)", jp, "differentiate the p-update"),
            Step(H.T, H, "the Hessian of a C^2 function is symmetric (Schwarz)"),
            Step(jp.T * om * jp, om, "block multiplication with H^T = H", lambda: symplectic(jp)),
            Step(jq.T * om * jq, om, "the q-update (q + grad V(p), p), likewise", lambda: symplectic(jq)),
        ],
        conclusion=r"\text{a shear by the gradient of a scalar potential is symplectic}",
    )


def sym_vector_update(f):
    """The corrected symmetric VectorSoftmax update as stated, A Q (S + S^T) with S the column softmax of C."""
    s = softmax(f, "columns", False)
    return f.A * f.Q * (s + s.T)


def symmetric_matrix_softmax_derivation() -> Derivation:
    """The package's symmetric matrix-softmax update 2 A Q sigma(C) is the gradient AQ sigma^T + A^T Q sigma."""
    S = MatrixSymbol("S", T, T)
    C = Qm.T * Am * Qm
    code = 2 * Am * Qm * S
    grad = Am * Qm * S.T + Am.T * Qm * S
    return Derivation(
        assumptions=[r"A^T = A", r"S = \exp.(C)/\sum_{mk}e^{C_{mk}}\ \text{(MatrixSoftmax)}"],
        steps=[
            Step(C.T, C, "A^T = A", lambda: same(C.T.subs(Am.T, Am), C)),
            Step(S.T, S, "an entrywise function of a symmetric matrix divided by a scalar is symmetric"),
            Step(grad, code, "S^T = S, A^T = A", lambda: same(grad.subs({S.T: S, Am.T: Am}), code)),
            Step(grad, r"\nabla_Q \log\sum_{mk}e^{C_{mk}}", "symattn.potential_gradient (matrix_softmax)"),
            Step(r"(q, p)\mapsto(q, p + 2AQS)", r"\text{symplectic}", "symattn.gradient_shear_symplectic",
                 relation="=>"),
        ],
        conclusion=r"\text{the package's symmetric MatrixSoftmax layer is symplectic}",
    )


def symmetric_shortcut_derivation() -> Derivation:
    """The page's symmetric shortcut of its matrix-softmax gradient: (AZE^T + A^TZE)/(1 + s) = 2AZE/(1 + s)."""
    E = MatrixSymbol("E", T, T)
    C = Qm.T * Am * Qm
    stated = Am * Qm * E.T + Am.T * Qm * E
    return Derivation(
        assumptions=[r"A^T = A", r"E = \exp.(C),\ s = \textstyle\sum_{mn}e^{C_{mn}}"],
        steps=[
            Step(C.T, C, "A^T = A", lambda: same(C.T.subs(Am.T, Am), C)),
            Step(E.T, E, "an entrywise function of a symmetric matrix is symmetric"),
            Step(stated, 2 * Am * Qm * E, "E^T = E, A^T = A", lambda: same(stated.subs({E.T: E, Am.T: Am}), 2 * Am * Qm * E)),
        ],
        conclusion=r"\frac{AZ\exp.(C)^T + A^TZ\exp.(C)}{1 + s} = \frac{2AZ\exp.(C)}{1 + s}",
    )


def symmetric_gradient_derivation(activation: str) -> Derivation:
    r"""The gradient of :func:`gradient_derivation` for a symmetric :math:`A`: :math:`AQ(G + G^T)`."""
    base = gradient_derivation((activation,))
    sym = Am * Qm * (Gm + Gm.T)
    base.steps.append(Step(GRAD, sym, "A^T = A", lambda: same(GRAD.subs(Am.T, Am), sym.expand())))
    base.assumptions.append(r"A^T = A")
    base.conclusion = r"\nabla_Q\Sigma = AQ(G + G^T),\ G = \mathrm{softmax}(C)\ \text{of the potential}"
    return base


def symmetric_vector_layer_derivation() -> Derivation:
    S = MatrixSymbol("S", T, T)
    upd = Am * Qm * (S + S.T)
    grad = Am * Qm * S.T + Am.T * Qm * S
    return Derivation(
        assumptions=[r"A^T = A", r"S = \mathrm{VectorSoftmax}(C)\ \text{(softmax over each column)}"],
        steps=[
            Step(upd, grad, "A^T = A", lambda: same(upd.expand(), grad.subs(Am.T, Am))),
            Step(grad, r"\nabla_Q\Sigma", "symattn.potential_gradient with vector_softmax"),
            Step(r"(q, p)\mapsto(q, p + \nabla_Q\Sigma)", r"\text{symplectic}", "symattn.gradient_shear_symplectic",
                 relation="=>"),
        ],
        conclusion=r"(q, p)\mapsto(q, p + AQ(S + S^T))\ \text{is symplectic}",
    )


def arbitrary_derivation() -> Derivation:
    S = MatrixSymbol("S", T, T)
    code = Am * Qm * S.T + Am.T * Qm * S
    return Derivation(
        assumptions=[r"S = \mathrm{MatrixSoftmax}(C)\ \text{or}\ \mathrm{VectorSoftmax}(C)\ \text{(softmax over each column)}"],
        steps=[
            Step(code, GRAD.subs(Gm, S), "the code's update is AQS^T + A^TQS", lambda: same(code, GRAD.subs(Gm, S))),
            Step(GRAD.subs(Gm, S), r"\nabla_Q\Sigma", "symattn.potential_gradient with matrix_softmax or vector_softmax"),
            Step(r"(q, p)\mapsto(q, p + \nabla_Q\Sigma)", r"\text{symplectic}", "symattn.gradient_shear_symplectic",
                 relation="=>"),
        ],
        conclusion=r"\text{the package's arbitrary-weighting layer is symplectic for both softmaxes}",
    )


def layer_derivation() -> Derivation:
    z = MatrixSymbol("z", T, n)
    G = MatrixSymbol("G", T, T)
    row = G * z * Am.T + G.T * z * Am
    return Derivation(
        assumptions=[r"z = Q^T\ \text{(tokens as rows)},\ G = \mathrm{softmax}(zAz^T)\ \text{of the activation}",
                     r"A\ \text{arbitrary, or}\ A = \tfrac12(W + W^T)\ \text{for symmetric=True}"],
        steps=[
            Step(row.T, GRAD.subs(Qm, z.T).subs(Gm, G), "the kernel's update is the transposed column-layout gradient",
                 lambda: same(row.T, GRAD.subs(Qm, z.T).subs(Gm, G))),
            Step(GRAD, r"\nabla_Q\Sigma", "symattn.potential_gradient"),
            Step(r"(q, p)\mapsto(q, p + \nabla\Sigma(q))", r"\text{symplectic}", "symattn.gradient_shear_symplectic",
                 relation="=>"),
        ],
        conclusion=r"\text{SymplecticAttention is symplectic for every activation and weighting}",
    )


def vjp_derivation() -> Derivation:
    z = MatrixSymbol("z", T, n)
    V = MatrixSymbol("V", T, n)
    G = MatrixSymbol("G", T, T)
    K = MatrixSymbol("K", T, T)
    Cd = V * Am * z.T + z * Am * V.T
    pairing = Trace(G.T * Cd)
    through_c = Trace(K.T * z * Am * z.T)
    gz = (K * z * Am.T + K.T * z * Am) + (G * V * Am.T + G.T * V * Am)
    gA = z.T * K * z + (V.T * G * z + z.T * G * V)
    U = G * z * Am.T + G.T * z * Am
    return Derivation(
        assumptions=[r"U = \nabla_z\Sigma = GzA^T + G^TzA,\ G = \nabla_C f(zAz^T)", r"K = \nabla^2 f(C)[\dot C]"],
        steps=[
            Step(Trace(V.T * U), pairing, "<V, U> = <G, Cdot> with Cdot = V A z^T + z A V^T (both linear in V, with the "
                 "same gradient U)", lambda: same(pairing.diff(V), U)),
            Step(r"\partial_C\langle G(C), \dot C\rangle", K, "the Hessian of f is symmetric, so this is DG[Cdot]"),
            Step(through_c.diff(z) + pairing.diff(z), gz, "matrix calculus: through C (K fixed) and through Cdot",
                 lambda: same(through_c.diff(z) + pairing.diff(z), gz)),
            Step(through_c.diff(Am) + pairing.diff(Am), gA, "likewise in A",
                 lambda: same(through_c.diff(Am) + pairing.diff(Am), gA)),
            Step(K, r"G\odot\dot C - G\langle G, \dot C\rangle\ \text{(all)},\ G\odot(\dot C - \mathbf{1}\mathbf{1}^T"
                 r"(G\odot\dot C))\ \text{(columns)}", "the derivative of a softmax (checked exactly at explicit sizes)"),
        ],
        conclusion=r"\bar z = KzA^T + K^TzA + GVA^T + G^TVA,\ \bar A = z^TKz + V^TGz + z^TGV",
    )
