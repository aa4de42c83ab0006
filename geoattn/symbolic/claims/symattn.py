r"""Nonlinear symplectic attention: potentials, their gradients, and the Julia package's statements of them.

With :math:`Q \in \mathbb{R}^{n\times T}` (the seeds' column layout) and :math:`C = Q^TAQ`, a layer
:math:`(q, p) \mapsto (q, p + \nabla_Q\Sigma(Q))` is symplectic whenever the update really is the gradient
of a scalar :math:`\Sigma`. The four potentials of :data:`geoattn.symbolic.symattn.ACTIVATIONS` are
log-sum-exps of :math:`C`, over all entries or per column, with or without the one softmax's extra 1.

The claims with ids ``symattn.gml.*`` transcribe the Julia package GeometricMachineLearning.jl at commit
edb632b3 (its page ``docs/src/layers/symplectic_attention.md`` and its code
``src/layers/symplectic_attention.jl``, ``src/activations/softmax.jl``) exactly as written.
"""

from __future__ import annotations

import sympy as sp
from sympy.matrices.expressions import BlockMatrix, Identity, MatrixSymbol, Trace, ZeroMatrix

from ..claim import Claim, corrected
from ..proof import identity
from ..evidence import Derivation, Level, Step
from ..symattn import ACTIVATIONS
from ._common import T, at_sizes, grid, n, same
from ._symattn_exact import (
    ExpPolicy,
    code_update,
    gradient,
    layer_residual,
    model_gradient,
    softmax,
    stack,
    stated_matrix_gradient,
    stated_vector_gradient,
    vjp_residual,
)

__all__ = ["CLAIMS", "gradient_derivation", "symmetric_gradient_derivation", "shear_derivation"]

PAGE = "GeometricMachineLearning.jl@edb632b3 docs/src/layers/symplectic_attention.md"
CODE = "GeometricMachineLearning.jl@edb632b3 src/layers/symplectic_attention.jl, src/activations/softmax.jl"


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
        Step(r"d\Sigma", r"\mathrm{Tr}(G^T\,dC),\ G_{ij} = \partial f/\partial C_{ij}", "chain rule for Sigma = f(C)", lemma='chain_rule'),
        Step(fixed.diff(Qm), GRAD, "matrix calculus with G held fixed (dC = dQ^T A Q + Q^T A dQ)",
             identity()),
    ]
    for act in activations:
        over, one = ACTIVATIONS[act]
        rule = f"{act}: differentiate f in one entry of a generic T x T matrix"
        if over == "columns":
            rule += " (only the term of column j depends on C_ij)"
        label = act.replace("_", r"\_")
        steps.append(Step(rf"\partial f_{{\mathrm{{{label}}}}}/\partial C_{{ij}}",
                          _softmax_latex(over, one), rule, identity()))
    return Derivation(
        assumptions=[r"Q\in\mathbb{R}^{n\times T},\ A\in\mathbb{R}^{n\times n},\ C = Q^TAQ,\ \Sigma(Q) = f(C)"],
        steps=steps,
        remark=r"\nabla_Q\Sigma = AQG^T + A^TQG,\ G = \mathrm{softmax}(C)\ \text{of the potential}",
        conclusion=None,  # TODO
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
            Step(r"\partial(q, p + \nabla V(q))/\partial(q, p)", jp, "differentiate the p-update", lemma='chain_rule'),
            Step(H.T, H, "the Hessian of a C^2 function is symmetric (Schwarz)", lemma='hessian_symmetric'),
            Step(jp.T * om * jp, om, "block multiplication with H^T = H", identity()),
            Step(jq.T * om * jq, om, "the q-update (q + grad V(p), p), likewise", identity()),
        ],
        remark=r"\text{a shear by the gradient of a scalar potential is symplectic}",
        conclusion=None,  # TODO
    )


def _sym_vector_update(f):
    """The corrected symmetric VectorSoftmax update as stated, A Q (S + S^T) with S the column softmax of C."""
    s = softmax(f, "columns", False)
    return f.A * f.Q * (s + s.T)


def _symmetric_matrix_softmax_derivation() -> Derivation:
    """The package's symmetric matrix-softmax update 2 A Q sigma(C) is the gradient AQ sigma^T + A^T Q sigma."""
    S = MatrixSymbol("S", T, T)
    C = Qm.T * Am * Qm
    code = 2 * Am * Qm * S
    grad = Am * Qm * S.T + Am.T * Qm * S
    return Derivation(
        assumptions=[r"A^T = A", r"S = \exp.(C)/\sum_{mk}e^{C_{mk}}\ \text{(MatrixSoftmax)}"],
        steps=[
            Step(C.T, C, "A^T = A", identity((Am.T, Am))),
            Step(S.T, S, "an entrywise function of a symmetric matrix divided by a scalar is symmetric", lemma='entrywise_symmetric'),
            Step(grad, code, "S^T = S, A^T = A", identity()),
            Step(grad, r"\nabla_Q \log\sum_{mk}e^{C_{mk}}", "symattn.potential_gradient (matrix_softmax)", lemma='ledger:symattn.potential_gradient'),
            Step(r"(q, p)\mapsto(q, p + 2AQS)", r"\text{symplectic}", "symattn.gradient_shear_symplectic", lemma='ledger:symattn.gradient_shear_symplectic',
                 relation="=>"),
        ],
        remark=r"\text{the package's symmetric MatrixSoftmax layer is symplectic}",
        conclusion=sp.Eq(C.T, r"\text{symplectic}", evaluate=False),
    )


def _symmetric_shortcut_derivation() -> Derivation:
    """The page's symmetric shortcut of its matrix-softmax gradient: (AZE^T + A^TZE)/(1 + s) = 2AZE/(1 + s)."""
    E = MatrixSymbol("E", T, T)
    C = Qm.T * Am * Qm
    stated = Am * Qm * E.T + Am.T * Qm * E
    return Derivation(
        assumptions=[r"A^T = A", r"E = \exp.(C),\ s = \textstyle\sum_{mn}e^{C_{mn}}"],
        steps=[
            Step(C.T, C, "A^T = A", identity((Am.T, Am))),
            Step(E.T, E, "an entrywise function of a symmetric matrix is symmetric", lemma='entrywise_symmetric'),
            Step(stated, 2 * Am * Qm * E, "E^T = E, A^T = A", identity()),
        ],
        remark=r"\frac{AZ\exp.(C)^T + A^TZ\exp.(C)}{1 + s} = \frac{2AZ\exp.(C)}{1 + s}",
        conclusion=sp.Eq(C.T, 2 * Am * Qm * E, evaluate=False),
    )


def symmetric_gradient_derivation(activation: str) -> Derivation:
    r"""The gradient of :func:`gradient_derivation` for a symmetric :math:`A`: :math:`AQ(G + G^T)`."""
    base = gradient_derivation((activation,))
    sym = Am * Qm * (Gm + Gm.T)
    base.steps.append(Step(GRAD, sym, "A^T = A", identity((Am.T, Am))))
    base.assumptions.append(r"A^T = A")
    base.conclusion = r"\nabla_Q\Sigma = AQ(G + G^T),\ G = \mathrm{softmax}(C)\ \text{of the potential}"
    return base


def _symmetric_vector_layer_derivation() -> Derivation:
    S = MatrixSymbol("S", T, T)
    upd = Am * Qm * (S + S.T)
    grad = Am * Qm * S.T + Am.T * Qm * S
    return Derivation(
        assumptions=[r"A^T = A", r"S = \mathrm{VectorSoftmax}(C)\ \text{(softmax over each column)}"],
        steps=[
            Step(upd, grad, "A^T = A", identity((Am.T, Am))),
            Step(grad, r"\nabla_Q\Sigma", "symattn.potential_gradient with vector_softmax", lemma='ledger:symattn.potential_gradient'),
            Step(r"(q, p)\mapsto(q, p + \nabla_Q\Sigma)", r"\text{symplectic}", "symattn.gradient_shear_symplectic", lemma='ledger:symattn.gradient_shear_symplectic',
                 relation="=>"),
        ],
        remark=r"(q, p)\mapsto(q, p + AQ(S + S^T))\ \text{is symplectic}",
        conclusion=sp.Eq(upd, r"\text{symplectic}", evaluate=False),
    )


def _arbitrary_derivation() -> Derivation:
    S = MatrixSymbol("S", T, T)
    code = Am * Qm * S.T + Am.T * Qm * S
    return Derivation(
        assumptions=[r"S = \mathrm{MatrixSoftmax}(C)\ \text{or}\ \mathrm{VectorSoftmax}(C)\ \text{(softmax over each column)}"],
        steps=[
            Step(code, GRAD.subs(Gm, S), "the code's update is AQS^T + A^TQS", identity((Gm, S))),
            Step(GRAD.subs(Gm, S), r"\nabla_Q\Sigma", "symattn.potential_gradient with matrix_softmax or vector_softmax", lemma='ledger:symattn.potential_gradient'),
            Step(r"(q, p)\mapsto(q, p + \nabla_Q\Sigma)", r"\text{symplectic}", "symattn.gradient_shear_symplectic", lemma='ledger:symattn.gradient_shear_symplectic',
                 relation="=>"),
        ],
        remark=r"\text{the package's arbitrary-weighting layer is symplectic for both softmaxes}",
        conclusion=sp.Eq(code, r"\text{symplectic}", evaluate=False),
    )


def _layer_derivation() -> Derivation:
    z = MatrixSymbol("z", T, n)
    G = MatrixSymbol("G", T, T)
    row = G * z * Am.T + G.T * z * Am
    return Derivation(
        assumptions=[r"z = Q^T\ \text{(tokens as rows)},\ G = \mathrm{softmax}(zAz^T)\ \text{of the activation}",
                     r"A\ \text{arbitrary, or}\ A = \tfrac12(W + W^T)\ \text{for symmetric=True}"],
        steps=[
            Step(row.T, GRAD.subs(Qm, z.T).subs(Gm, G), "the kernel's update is the transposed column-layout gradient",
                 identity((Qm, z.T), (Gm, G))),
            Step(GRAD, r"\nabla_Q\Sigma", "symattn.potential_gradient", lemma='ledger:symattn.potential_gradient'),
            Step(r"(q, p)\mapsto(q, p + \nabla\Sigma(q))", r"\text{symplectic}", "symattn.gradient_shear_symplectic", lemma='ledger:symattn.gradient_shear_symplectic',
                 relation="=>"),
        ],
        remark=r"\text{SymplecticAttention is symplectic for every activation and weighting}",
        conclusion=sp.Eq(row.T, r"\text{symplectic}", evaluate=False),
    )


def _vjp_derivation() -> Derivation:
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
                 "same gradient U)", identity()),
            Step(r"\partial_C\langle G(C), \dot C\rangle", K, "the Hessian of f is symmetric, so this is DG[Cdot]", lemma='hessian_symmetric'),
            Step(through_c.diff(z) + pairing.diff(z), gz, "matrix calculus: through C (K fixed) and through Cdot",
                 identity()),
            Step(through_c.diff(Am) + pairing.diff(Am), gA, "likewise in A",
                 identity()),
            Step(K, r"G\odot\dot C - G\langle G, \dot C\rangle\ \text{(all)},\ G\odot(\dot C - \mathbf{1}\mathbf{1}^T"
                 r"(G\odot\dot C))\ \text{(columns)}", "the derivative of a softmax (checked exactly at explicit sizes)", lemma='softmax_derivative'),
        ],
        remark=r"\bar z = KzA^T + K^TzA + GVA^T + G^TVA,\ \bar A = z^TKz + V^TGz + z^TGV",
        conclusion=sp.Eq(Trace(V.T * U), r"G\odot\dot C - G\langle G, \dot C\rangle\ \text{(all)},\ G\odot(\dot C - \mathbf{1}\mathbf{1}^T"
                 r"(G\odot\dot C))\ \text{(columns)}", evaluate=False),
    )


# ---------------------------------------------------------------------------
# claims
# ---------------------------------------------------------------------------

_SMALL = grid(n=(1, 2), T=(1, 2))
_SEARCH = at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 2})

_GML_MATRIX_GRADIENT = Claim(
    id="symattn.gml.matrix_softmax_gradient",
    title="package: gradient of its matrix-softmax potential",
    statement="For Sigma(Z) = log(1 + exp(sum_{m,n} C_mn)), C = Z^T A Z: grad Sigma = (A Z exp.(C)^T + A^T Z exp.(C)) "
    "/ (1 + sum_{m,n} exp(C_mn)).",
    latex=r"\Sigma = \log\bigl(1 + \exp(\textstyle\sum_{m,n}C_{mn})\bigr) \implies \nabla_Z\Sigma = "
    r"\frac{AZ\exp.(C)^T + A^TZ\exp.(C)}{1 + \sum_{m,n}\exp(C_{mn})}",
    source=f"{PAGE}, 'Matrix Softmax'",
    expected=Level.REFUTED,
    checker=ExpPolicy(name="grad Sigma - stated gradient", search=_SEARCH,
                      residual=lambda f: gradient("gml_matrix_as_written", f) - stated_matrix_gradient(f)),
    notes="The potential as printed has exp and the sum swapped; its stated gradient is that of "
    "log(1 + sum exp(C_mn)) (symattn.gml.matrix_softmax_gradient.corrected).",
)

_GML_VECTOR_GRADIENT = Claim(
    id="symattn.gml.vector_softmax_gradient",
    title="package: gradient of its vector-softmax potential",
    statement="For Sigma(Z) = sum_n log(1 + exp(sum_m C_mn)): dSigma/dZ_ij = sum_n exp(C_jn)/(1 + sum_m exp(C_mn)) "
    "[AZ]_in + 1/(1 + sum_m exp(C_mj)) [A^T Z exp(C)]_ij.",
    latex=r"\Sigma = \sum_n\log\bigl(1 + \exp(\textstyle\sum_m C_{mn})\bigr) \implies \frac{\partial\Sigma}"
    r"{\partial Z_{ij}} = \sum_n\frac{e^{C_{jn}}[AZ]_{in}}{1 + \sum_m e^{C_{mn}}} + \frac{[A^TZ\exp(C)]_{ij}}"
    r"{1 + \sum_m e^{C_{mj}}}",
    source=f"{PAGE}, 'Vector Softmax'",
    expected=Level.REFUTED,
    checker=ExpPolicy(name="grad Sigma - stated gradient", search=_SEARCH,
                      residual=lambda f: gradient("gml_vector_as_written", f) - stated_vector_gradient(f)),
    notes="As for the matrix softmax, exp and the inner sum are swapped in the printed potential.",
)

_GML_VECTOR_SYMMETRIC = Claim(
    id="symattn.gml.vector_softmax_symmetric_gradient",
    title="package: symmetric-A shortcut of the vector-softmax gradient",
    statement="If A is symmetric, the gradient of the vector-softmax potential simplifies to A Z softmax_1(C).",
    latex=r"A^T = A \implies \nabla_Z\Sigma = AZ\,\mathrm{softmax}_1(C)",
    source=f"{PAGE}, 'Vector Softmax'",
    expected=Level.REFUTED,
    checker=ExpPolicy(name="grad Sigma - A Z softmax_1(C)", structure="symmetric", search=at_sizes({"n": 1, "T": 1}, {"n": 1, "T": 2}, {"n": 2, "T": 2}),
                      residual=lambda f: gradient("vector_one_softmax", f) - f.A * f.Q * softmax(f, "columns", True)),
    notes="softmax_1(C) normalises columns, so it is not symmetric even when C is; the gradient is "
    "A Z (softmax_1(C) + softmax_1(C)^T), twice A Z softmax_1(C) already at T = 1.",
)

_GML_LAYER_VECTOR_SYMMETRIC = Claim(
    id="symattn.gml.layer_symplectic.vector_softmax_symmetric",
    title="package: symmetric VectorSoftmax layer is symplectic",
    statement="SymplecticAttention with symmetric A and VectorSoftmax, q <- q + A p (2 softmax(P^T A P)) (and the "
    "p-update likewise), is symplectic: its update is the gradient of a potential.",
    latex=r"(q, p)\mapsto\bigl(q,\ p + 2AQ\,\mathrm{softmax}(Q^TAQ)\bigr)\ \text{symplectic}",
    source=f"{CODE}, SymplecticAttention{{..., :symmetric}} with VectorSoftmax",
    expected=Level.REFUTED,
    checker=ExpPolicy(name="J - J^T of the update", structure="symmetric", search=_SEARCH,
                      residual=lambda f: f.jacobian_asymmetry(code_update("columns", True)(f))),
    notes="2 A Q S is not a gradient when S normalises columns: the Jacobian of the update is not symmetric. "
    "The arbitrary-weighting code path, A Q S^T + A^T Q S, is (symattn.gml.layer_symplectic.arbitrary).",
)

CLAIMS = [
    Claim(
        id="symattn.potential_gradient",
        title="gradients of the softmax potentials",
        statement="For C = Q^T A Q and each of the four potentials (log-sum-exp over all entries or per column, with "
        "or without the extra 1): grad_Q Sigma = A Q G^T + A^T Q G with G the matching softmax of C.",
        latex=r"\Sigma = f(Q^TAQ) \implies \nabla_Q\Sigma = AQG^T + A^TQG,\ G = \nabla_C f = \mathrm{softmax}(C)",
        source="geoattn.symbolic.symattn",
        expected=Level.PROVED,
        checker=ExpPolicy(
            name="grad Sigma - (A Q G^T + A^T Q G)",
            prove=gradient_derivation,
            exact=_SMALL,
            residual=lambda f: stack([gradient(a, f) - model_gradient(a, f) for a in ACTIVATIONS]),
        ),
    ),
    Claim(
        id="symattn.gradient_shear_symplectic",
        title="a gradient shear is symplectic",
        statement="(q, p) -> (q, p + grad V(q)) and (q, p) -> (q + grad V(p), p) are symplectic for every C^2 "
        "potential V.",
        latex=r"(q, p)\mapsto(q, p + \nabla V(q))\ \text{is symplectic}",
        source="geoattn.models.GradientLayer and geoattn.nn.SymplecticAttention (the premise of the Julia page)",
        expected=Level.PROVED,
        checker=ExpPolicy(prove=shear_derivation),
    ),
    _GML_MATRIX_GRADIENT,
    corrected(_GML_MATRIX_GRADIENT, Claim(
        id="symattn.gml.matrix_softmax_gradient.corrected",
        title="gradient of log(1 + sum exp C)",
        statement="For Sigma(Z) = log(1 + sum_{m,n} exp(C_mn)): grad Sigma = (A Z exp.(C)^T + A^T Z exp.(C)) "
        "/ (1 + sum_{m,n} exp(C_mn)), the page's stated gradient.",
        latex=r"\Sigma = \log\bigl(1 + \textstyle\sum_{m,n}e^{C_{mn}}\bigr) \implies \nabla_Z\Sigma = "
        r"\frac{AZ\exp.(C)^T + A^TZ\exp.(C)}{1 + \sum_{m,n}e^{C_{mn}}}",
        expected=Level.PROVED,
        checker=ExpPolicy(name="grad Sigma - stated gradient", prove=lambda: gradient_derivation(("matrix_one_softmax",)),
                          search=_SEARCH, exact=_SMALL,
                          residual=lambda f: gradient("matrix_one_softmax", f) - stated_matrix_gradient(f)),
    )),
    Claim(
        id="symattn.gml.matrix_softmax_symmetric_gradient",
        title="package: symmetric-A shortcut of the matrix-softmax gradient",
        statement="If A is symmetric, the matrix-softmax gradient simplifies to 2/(1 + sum exp(C_mn)) A Z exp.(C).",
        latex=r"A^T = A \implies \nabla_Z\Sigma = \frac{2}{1 + \sum_{m,n}e^{C_{mn}}}AZ\exp.(C)",
        source=f"{PAGE}, 'Matrix Softmax'",
        expected=Level.PROVED,
        checker=ExpPolicy(
            name="stated gradient - 2 A Z exp.(C) / (1 + sum exp C)", structure="symmetric", search=_SEARCH,
            exact=_SMALL, prove=_symmetric_shortcut_derivation,
            residual=lambda f: stated_matrix_gradient(f) - 2 * f.A * f.Q * f.E / (1 + sum(f.E)),
        ),
    ),
    _GML_VECTOR_GRADIENT,
    corrected(_GML_VECTOR_GRADIENT, Claim(
        id="symattn.gml.vector_softmax_gradient.corrected",
        title="gradient of sum_n log(1 + sum_m exp C_mn)",
        statement="For Sigma(Z) = sum_n log(1 + sum_m exp(C_mn)) the page's stated gradient holds; it is "
        "A Z softmax_1(C)^T + A^T Z softmax_1(C) (Term I + Term II).",
        latex=r"\Sigma = \sum_n\log\bigl(1 + \textstyle\sum_m e^{C_{mn}}\bigr) \implies \nabla_Z\Sigma = "
        r"AZ\,\mathrm{softmax}_1(C)^T + A^TZ\,\mathrm{softmax}_1(C)",
        expected=Level.PROVED,
        checker=ExpPolicy(name="grad Sigma - stated gradient", prove=lambda: gradient_derivation(("vector_one_softmax",)),
                          search=_SEARCH, exact=_SMALL,
                          residual=lambda f: gradient("vector_one_softmax", f) - stated_vector_gradient(f)),
    )),
    _GML_VECTOR_SYMMETRIC,
    corrected(_GML_VECTOR_SYMMETRIC, Claim(
        id="symattn.gml.vector_softmax_symmetric_gradient.corrected",
        title="symmetric-A vector-softmax gradient",
        statement="If A is symmetric, the gradient of sum_n log(1 + sum_m exp(C_mn)) is A Z (softmax_1(C) + "
        "softmax_1(C)^T).",
        latex=r"A^T = A \implies \nabla_Z\Sigma = AZ\bigl(\mathrm{softmax}_1(C) + \mathrm{softmax}_1(C)^T\bigr)",
        expected=Level.PROVED,
        checker=ExpPolicy(
            name="grad Sigma - A Z (S + S^T)", structure="symmetric", search=_SEARCH, exact=_SMALL,
            prove=lambda: symmetric_gradient_derivation("vector_one_softmax"),
            residual=lambda f: gradient("vector_one_softmax", f)
            - f.A * f.Q * (softmax(f, "columns", True) + softmax(f, "columns", True).T),
        ),
    )),
    Claim(
        id="symattn.gml.layer_symplectic.matrix_softmax_symmetric",
        title="package: symmetric MatrixSoftmax layer is symplectic",
        statement="SymplecticAttention with symmetric A and MatrixSoftmax, q <- q + A p (2 softmax(P^T A P)) (and the "
        "p-update likewise), is symplectic.",
        latex=r"(q, p)\mapsto\bigl(q,\ p + 2AQ\,\mathrm{softmax}(Q^TAQ)\bigr)\ \text{symplectic}",
        source=f"{CODE}, SymplecticAttention{{..., :symmetric}} with MatrixSoftmax",
        expected=Level.PROVED,
        checker=ExpPolicy(name="J - J^T of the update", structure="symmetric", search=_SEARCH, exact=_SMALL,
                          prove=_symmetric_matrix_softmax_derivation,
                          residual=lambda f: f.jacobian_asymmetry(code_update("all", True)(f))),
    ),
    _GML_LAYER_VECTOR_SYMMETRIC,
    corrected(_GML_LAYER_VECTOR_SYMMETRIC, Claim(
        id="symattn.gml.layer_symplectic.vector_softmax_symmetric.corrected",
        title="symmetric VectorSoftmax layer with the true gradient",
        statement="With symmetric A and VectorSoftmax, the update A Q (softmax(C) + softmax(C)^T), the gradient of "
        "sum_n log sum_m exp(C_mn), makes the layer symplectic.",
        latex=r"A^T = A:\ (q, p)\mapsto\bigl(q,\ p + AQ(S + S^T)\bigr),\ S = \mathrm{softmax}(Q^TAQ)\ "
        r"\text{symplectic}",
        expected=Level.PROVED,
        checker=ExpPolicy(name="J - J^T of the update", structure="symmetric", search=_SEARCH, exact=_SMALL,
                          prove=_symmetric_vector_layer_derivation,
                          residual=lambda f: f.jacobian_asymmetry(_sym_vector_update(f))),
        notes="For symmetric A the arbitrary-weighting path A Q S^T + A^T Q S is exactly A Q (S + S^T).",
    )),
    Claim(
        id="symattn.gml.layer_symplectic.arbitrary",
        title="package: arbitrary-weighting layer is symplectic",
        statement="SymplecticAttention with arbitrary A, q <- q + A p softmax(C)^T + A^T p softmax(C), is symplectic "
        "for MatrixSoftmax and VectorSoftmax.",
        latex=r"(q, p)\mapsto\bigl(q,\ p + AQS^T + A^TQS\bigr),\ S = \mathrm{softmax}(Q^TAQ)\ \text{symplectic}",
        source=f"{CODE}, SymplecticAttention{{..., :arbitrary}}",
        expected=Level.PROVED,
        checker=ExpPolicy(
            name="J - J^T of the update", search=_SEARCH, exact=_SMALL, prove=_arbitrary_derivation,
            residual=lambda f: stack([f.jacobian_asymmetry(code_update(o, False)(f)) for o in ("all", "columns")]),
        ),
    ),
    Claim(
        id="symattn.layer_symplectic",
        title="SymplecticAttention is symplectic",
        statement="geoattn's SymplecticAttention update (the generated kernel) equals grad Sigma for each of its four "
        "potentials and both weightings, so the layer is symplectic.",
        latex=r"U_{\mathrm{kernel}} = \nabla\Sigma \implies (q, p)\mapsto(q, p + U)\ \text{symplectic}",
        source="geoattn.nn.SymplecticAttention (kernels symattn_update_*)",
        expected=Level.PROVED,
        checker=ExpPolicy(name="kernel update - grad Sigma; J - J^T", search=_SEARCH, exact=_SMALL,
                          prove=_layer_derivation, residual=layer_residual),
    ),
    Claim(
        id="symattn.layer_vjp",
        title="backward of the symplectic-attention update",
        statement="The generated VJP kernels return d<V, U>/dz and d<V, U>/dA of the update U for every potential.",
        latex=r"\bar z = KzA^T + K^TzA + GVA^T + G^TVA,\ \bar A = z^TKz + V^TGz + z^TGV",
        source="geoattn.kernels (symattn_vjp_*)",
        expected=Level.PROVED,
        checker=ExpPolicy(name="generated VJP - SymPy VJP", search=at_sizes({"n": 1, "T": 2}),
                          exact=at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 1}), prove=_vjp_derivation, residual=vjp_residual),
    ),
]
