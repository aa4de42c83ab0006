r"""Nonlinear symplectic attention: potentials, their gradients, and the Julia package's statements of them.

With :math:`Q \in \mathbb{R}^{n\times T}` (the seeds' column layout) and :math:`C = Q^TAQ`, a layer
:math:`(q, p) \mapsto (q, p + \nabla_Q\Sigma(Q))` is symplectic whenever the update really is the gradient
of a scalar :math:`\Sigma`. The four potentials of :data:`geoattn.symbolic.symattn.ACTIVATIONS` are
log-sum-exps of :math:`C`, over all entries or per column, with or without the one softmax's extra 1.
The derivations are in :mod:`geoattn.symbolic.claims._symattn_proofs`.

The claims with ids ``symattn.gml.*`` transcribe the Julia package GeometricMachineLearning.jl at commit
edb632b3 (its page ``docs/src/layers/symplectic_attention.md`` and its code
``src/layers/symplectic_attention.jl``, ``src/activations/softmax.jl``) exactly as written.
"""

from __future__ import annotations

from ..claim import Claim, corrected
from ..evidence import Level
from ..symattn import ACTIVATIONS
from ._common import at_sizes, grid
from ._symattn_proofs import (
    arbitrary_derivation,
    gradient_derivation,
    layer_derivation,
    shear_derivation,
    symmetric_gradient_derivation,
    symmetric_matrix_softmax_derivation,
    symmetric_shortcut_derivation,
    symmetric_vector_layer_derivation,
    vjp_derivation,
)
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
from ._sources import gml_file
from ._symattn_dense_exact import dense_vjp_residual
from ._symattn_fused_exact import fused_vjp_residual
from ._symattn_native_exact import native_vjp_residual
from ._symattn_sdpa_exact import sdpa_form_residual, sdpa_vjp_residual, transpose_residual

__all__ = ["CLAIMS", "gradient_derivation", "symmetric_gradient_derivation", "shear_derivation"]

_GML = "edb632b3211411e3d1cc42cbce4f7f174815bd1c"  # version 0.4.8
_PAGE_PATH = "docs/src/layers/symplectic_attention.md"
PAGE = f"GeometricMachineLearning.jl docs, 'Symplectic Attention' <{gml_file(_GML, _PAGE_PATH)}>"
CODE = (f"GeometricMachineLearning.jl <{gml_file(_GML, 'src/layers/symplectic_attention.jl')}>, "
        f"<{gml_file(_GML, 'src/activations/softmax.jl')}>")


def _sym_vector_update(f):
    """The corrected symmetric VectorSoftmax update as stated, A Q (S + S^T) with S the column softmax of C."""
    s = softmax(f, "columns", False)
    return f.A * f.Q * (s + s.T)


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
    checker=ExpPolicy(name="grad Sigma - A Z softmax_1(C)", structure="symmetric",
                      search=at_sizes({"n": 1, "T": 1}, {"n": 1, "T": 2}, {"n": 2, "T": 2}),
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
        checker=ExpPolicy(name="grad Sigma - stated gradient",
                          prove=lambda: gradient_derivation(("matrix_one_softmax",)),
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
            exact=_SMALL, prove=symmetric_shortcut_derivation,
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
        checker=ExpPolicy(name="grad Sigma - stated gradient",
                          prove=lambda: gradient_derivation(("vector_one_softmax",)),
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
                          prove=symmetric_matrix_softmax_derivation,
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
                          prove=symmetric_vector_layer_derivation,
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
            name="J - J^T of the update", search=_SEARCH, exact=_SMALL, prove=arbitrary_derivation,
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
                          prove=layer_derivation, residual=layer_residual),
    ),
    Claim(
        id="symattn.layer_vjp",
        title="backward of the symplectic-attention update",
        statement="The generated VJP kernels return d<V, U>/dz and d<V, U>/dA of the update U for every potential.",
        latex=r"\bar z = KzA^T + K^TzA + GVA^T + G^TVA,\ \bar A = z^TKz + V^TGz + z^TGV",
        source="geoattn.kernels (symattn_vjp_*)",
        expected=Level.PROVED,
        checker=ExpPolicy(name="generated VJP - SymPy VJP", search=at_sizes({"n": 1, "T": 2}),
                          exact=at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 1}), prove=vjp_derivation,
                          residual=vjp_residual),
    ),
    Claim(
        id="symattn.fused_vjp",
        title="fused backward of the symplectic-attention update",
        statement="With a = VA, b = zA, F = G^T z, H = G^T V, s_j = (HA)_j.z_j + (FA)_j.v_j (summed over j for the "
        "softmax over all entries), M_i = sum_j G_ij z_j [z_j, v_j]^T and N_j = sum_i G_ij z_i [a_i, b_i]^T: "
        "P = G(V - s z) + M [a, b], R = H + N [z, V] - s F, and PA^T + RA, z^T P + H^T z are d<V, U>/dz and "
        "d<V, U>/dA of the update for every potential.",
        latex=r"P = G(V - sz) + M_i[a_i; b_i],\ R = H + N_j[z_j; v_j] - sF \implies PA^T + RA = "
        r"\partial_z\langle V, U\rangle,\ z^TP + H^Tz = \partial_A\langle V, U\rangle",
        source="geoattn.kernels (the fused route of symattn_update)",
        expected=Level.CHECKED,
        checker=ExpPolicy(name="fused VJP - d<V, U>", search=at_sizes({"n": 1, "T": 2}),
                          exact=at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 1}, {"n": 2, "T": 2}),
                          residual=fused_vjp_residual()),
        notes="Note [fused symplectic attention]: the T x T matrix G is read by one product with G^T and one with G, "
        "against O(n^2) columns; Cd = VAz^T + zAV^T and K are never formed.",
    ),
    Claim(
        id="symattn.fused_vjp.symmetric",
        title="fused backward with one product (symmetric A, softmax over all entries)",
        statement="If A is symmetric, the fused backward of the matrix softmaxes holds with G in place of G^T in F, H "
        "and N (G is then symmetric), so one product with G gives every sum.",
        latex=r"A^T = A \implies \text{symattn.fused\_vjp with } G^T \to G",
        source="corrected form of symattn.fused_vjp.shared_general",
        corrects="symattn.fused_vjp.shared_general",
        expected=Level.CHECKED,
        checker=ExpPolicy(name="fused VJP (G for G^T) - d<V, U>", structure="symmetric",
                          search=at_sizes({"n": 1, "T": 2}), exact=at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 2}),
                          residual=fused_vjp_residual(shared=True)),
    ),
    Claim(
        id="symattn.fused_vjp.shared_general",
        title="one product for the fused backward with a general A",
        statement="The one-product fused backward of symattn.fused_vjp.symmetric (G in place of G^T) holds for a "
        "general A too.",
        latex=r"\text{symattn.fused\_vjp with } G^T \to G \text{ for every } A",
        source="geoattn.kernels (the condition of the one-product form of the fused route)",
        expected=Level.REFUTED,
        checker=ExpPolicy(name="fused VJP (G for G^T) - d<V, U>", search=at_sizes({"n": 2, "T": 2}),
                          residual=fused_vjp_residual(shared=True, symbolic_v=False)),
        notes="G is not symmetric when A is not, so the route takes the one product only when A equals A^T.",
    ),
    Claim(
        id="symattn.transpose_invariant",
        title="the update over all entries does not see the transpose of A",
        statement="For the softmaxes over all entries, the update at A^T equals the update at A; so at a symmetric A "
        "its gradient in A is symmetric.",
        latex=r"U(z, A^T) = U(z, A)\ \text{(softmax over all entries)}",
        source="corrected form of symattn.transpose_invariant.columns",
        corrects="symattn.transpose_invariant.columns",
        expected=Level.CHECKED,
        checker=ExpPolicy(name="U(z, A^T) - U(z, A)", exact=at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 2}),
                          residual=transpose_residual()),
        notes="The sum over all entries of e^{zAz^T} is that of its transpose.",
    ),
    Claim(
        id="symattn.transpose_invariant.columns",
        title="the column softmaxes' update does not see the transpose of A",
        statement="For the column softmaxes too, the update at A^T equals the update at A.",
        latex=r"U(z, A^T) = U(z, A)\ \text{(column softmax)}",
        source="geoattn.kernels (why the sdpa route serves the softmaxes over all entries only)",
        expected=Level.REFUTED,
        checker=ExpPolicy(name="U(z, A^T) - U(z, A)", search=at_sizes({"n": 2, "T": 2}),
                          residual=transpose_residual(("vector_softmax",))),
    ),
    Claim(
        id="symattn.sdpa_form",
        title="the update over all entries as one attention call",
        statement="If A is symmetric, with a = zA, P the row softmax of C = az^T, l its row log-sum-exps and "
        "w_i = e^{l_i} / (eps + sum_k e^{l_k}), the update over all entries is 2 w * (P a).",
        latex=r"A^T = A \implies GzA^T + G^TzA = 2\,\mathrm{diag}(w)\,P\,zA,\ w_i = \frac{e^{\ell_i}}{\epsilon + "
        r"\sum_k e^{\ell_k}}",
        source="corrected form of symattn.sdpa_form.general",
        corrects="symattn.sdpa_form.general",
        expected=Level.CHECKED,
        checker=ExpPolicy(name="2 w * (P a) - U", structure="symmetric", search=at_sizes({"n": 2, "T": 2}),
                          exact=at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 2}), residual=sdpa_form_residual),
        notes="Note [symplectic attention through SDPA]: O and l are one call of torch's fused CPU attention.",
    ),
    Claim(
        id="symattn.sdpa_form.general",
        title="the one-call form for a general A",
        statement="The form 2 w * (P zA) of symattn.sdpa_form is the update for a general A too.",
        latex=r"GzA^T + G^TzA = 2\,\mathrm{diag}(w)\,P\,zA \text{ for every } A",
        source="geoattn.kernels (the condition of the sdpa route)",
        expected=Level.REFUTED,
        checker=ExpPolicy(name="2 w * (P a) - U", search=at_sizes({"n": 2, "T": 2}), residual=sdpa_form_residual),
        notes="The route serves only an A equal to its transpose.",
    ),
    Claim(
        id="symattn.sdpa_vjp",
        title="backward of the one-call form",
        statement="If A is symmetric: with gO = 2 w * V, gw_i = 2 V_i.O_i, gl_i = w_i (gw_i - sum_k w_k gw_k), "
        "D_i = gO_i.O_i - gl_i, gC = P * (gO a^T - D 1^T), ga = gC z + P^T gO: d<V, U>/dz = gC^T a + ga A^T and "
        "d<V, U>/dA = (z^T ga + ga^T z)/2.",
        latex=r"\bar C = P\odot(\bar Oa^T - (D - \bar\ell)\mathbf 1^T),\ \bar z = \bar C^Ta + \bar aA^T,\ "
        r"\bar A = \tfrac12(z^T\bar a + \bar a^Tz)",
        source="corrected form of symattn.sdpa_vjp.without_lse",
        corrects="symattn.sdpa_vjp.without_lse",
        expected=Level.CHECKED,
        checker=ExpPolicy(name="sdpa VJP - d<V, U>", structure="symmetric",
                          exact=at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 2}), residual=sdpa_vjp_residual()),
        notes="The log-sum-exp's gradient gl enters the attention backward through its row term D.",
    ),
    Claim(
        id="symattn.sdpa_vjp.without_lse",
        title="backward of the one-call form without the log-sum-exp's gradient",
        statement="The backward of symattn.sdpa_vjp holds with gl = 0 (the attention backward as for its output "
        "alone).",
        latex=r"\bar C = P\odot(\bar Oa^T - D\mathbf 1^T)",
        source="geoattn.kernels (the sdpa route of symattn_update: why the backward passes gl)",
        expected=Level.REFUTED,
        checker=ExpPolicy(name="sdpa VJP (gl = 0) - d<V, U>", structure="symmetric", search=at_sizes({"n": 1, "T": 2}),
                          residual=sdpa_vjp_residual(fault="drop_lse", symbolic_v=False)),
        notes="The weights w depend on the row log-sum-exps, so their gradient reaches C through them.",
    ),
    Claim(
        id="symattn.dense_vjp",
        title="backward of the dense form 2 G a",
        statement="If A is symmetric, with a = zA, G the softmax over all entries of C = az^T, gG = V a^T, "
        "gC = G * gG - <G, gG> G and h = GV + gC z: d<V, U>/dz = 2 (gC^T a + hA) and d<V, U>/dA = z^T h + h^T z.",
        latex=r"\bar C' = G\odot Va^T - \langle G, Va^T\rangle G,\ h = GV + \bar C'z \implies "
        r"\partial_z\langle V, U\rangle = 2(\bar C'^Ta + hA),\ \partial_A\langle V, U\rangle = z^Th + h^Tz",
        source="corrected form of symattn.dense_vjp.unshifted",
        corrects="symattn.dense_vjp.unshifted",
        expected=Level.CHECKED,
        checker=ExpPolicy(name="dense VJP - d<V, U>", structure="symmetric",
                          exact=at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 2}), residual=dense_vjp_residual()),
        notes="Note [dense symplectic attention]: the route of short sequences forms and keeps G. Checked exactly "
        "at (n, T) = (1, 2) and (2, 2) only; the route serves every n and T <= 64, where tests/test_symattn_dense.py "
        "compares it in float64 with autograd of the T x T form.",
    ),
    Claim(
        id="symattn.dense_vjp.unshifted",
        title="backward of the dense form without the softmax's shift",
        statement="The backward of symattn.dense_vjp holds with gC = G * gG (the term <G, gG> G left out).",
        latex=r"\bar C' = G\odot Va^T",
        source="geoattn.kernels (the dense route of symattn_update: why the backward shifts by <G, gG>)",
        expected=Level.REFUTED,
        checker=ExpPolicy(name="dense VJP (no shift) - d<V, U>", structure="symmetric",
                          search=at_sizes({"n": 1, "T": 2}),
                          residual=dense_vjp_residual(fault="unshifted", symbolic_v=False)),
        notes="Every entry of the softmax over all entries depends on every entry of C through the normaliser.",
    ),
    Claim(
        id="symattn.native_vjp",
        title="backward of the native kernel, row by row",
        statement="If A is symmetric, with a = zA, G the softmax over all entries of C = az^T, U = 2Ga, "
        "s = (1/2) sum_i V_i . U_i, h_i = sum_j G_ij (V_j + (V_i . a_j - s) z_j) and "
        "y_i = sum_j G_ij (a_i . V_j - s) a_j: d<V, U>/dz = 2 (y + hA) and d<V, U>/dA = z^T h + h^T z.",
        latex=r"s = \tfrac12\langle V, U\rangle,\ h_i = \sum_j G_{ij}(V_j + (V_i\cdot a_j - s)z_j),\ "
        r"y_i = \sum_j G_{ij}(a_i\cdot V_j - s)a_j \implies \partial_z\langle V, U\rangle = 2(y + hA),\ "
        r"\partial_A\langle V, U\rangle = z^Th + h^Tz",
        source="corrected form of symattn.native_vjp.unhalved",
        corrects="symattn.native_vjp.unhalved",
        expected=Level.CHECKED,
        checker=ExpPolicy(name="native VJP - d<V, U>", structure="symmetric",
                          exact=at_sizes({"n": 1, "T": 2}, {"n": 2, "T": 2}), residual=native_vjp_residual()),
        notes="Note [native symplectic attention]: the compiled kernel's rows of symattn.dense_vjp, using G = G^T "
        "and <G, V a^T> = <V, U>/2. Checked exactly at (n, T) = (1, 2) and (2, 2) only; tests/test_symattn_native.py "
        "compares the kernel in float32 and float64 with autograd of the T x T form up to T = 300.",
    ),
    Claim(
        id="symattn.native_vjp.unhalved",
        title="backward of the native kernel with the whole pairing as its shift",
        statement="The backward of symattn.native_vjp holds with s = sum_i V_i . U_i.",
        latex=r"s = \langle V, U\rangle",
        source="geoattn.kernels (the native route of symattn_update: why the shift is half the pairing)",
        expected=Level.REFUTED,
        checker=ExpPolicy(name="native VJP (unhalved shift) - d<V, U>", structure="symmetric",
                          search=at_sizes({"n": 1, "T": 2}),
                          residual=native_vjp_residual(fault="unhalved", symbolic_v=False)),
        notes="U = 2Ga, so <G, V a^T> is half the pairing of V with U.",
    ),
]
