"""Exact objects, residuals and the evidence policy of the symattn family (not public).

Everything here works in an :class:`~._exp_exact.ExpField`: rational functions of the entries of ``Q``, ``A``
and of symbols standing for :math:`e^{C_{mn}}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp

from .. import algebra as alg
from ..algebra import NotInAlgebra
from ..evidence import Derivation, Evidence, Level, ProofFailed
from ..expressions import T as _T
from ..expressions import d as _D
from ..nodes import Softmax
from ..symattn import ACTIVATIONS, Aw, Gw, V, update_bindings, vjp_bindings, z
from ._common import NOWHERE, Sizes, prove_evidence, run_bindings
from ._exp_exact import ExpField, search_exp_counterexample

__all__ = ["ExpPolicy", "potential", "gradient", "softmax", "variables", "stack", "stated_matrix_gradient",
           "stated_vector_gradient", "model_gradient", "code_update", "layer_residual", "vjp_residual"]

# ---------------------------------------------------------------------------
# explicit objects (column layout: Q is n x T, C = Q^T A Q)
# ---------------------------------------------------------------------------


def variables(structure: str):
    """``size -> {"Q": n x T symbols, "A": n x n symbols}``, ``A`` symmetric or general as ``structure`` says."""

    if structure not in ("general", "symmetric"):
        raise ValueError(f"Expected structure 'general' or 'symmetric'. Got {structure!r}.")

    def variables(size):
        k, t = size["n"], size["T"]
        a = alg.symmetric("a", k) if structure == "symmetric" else alg.general("a", k, k)
        return {"Q": alg.general("q", k, t), "A": a}

    return variables


def softmax(f: ExpField, over: str, one: bool) -> sp.Matrix:
    """The softmax of ``C`` in the field's exponential symbols (:meth:`~geoattn.symbolic.nodes.Softmax.normalise`)."""
    return Softmax.normalise(f.E, over, one)


def potential(activation: str, f: ExpField):
    r"""The potential :math:`f(C)` of an activation of :data:`~geoattn.symbolic.symattn.ACTIVATIONS`, or of the
    package's page as written (``"gml_matrix_as_written"``: :math:`\log(1 + \exp\sum_{mn}C_{mn})`,
    ``"gml_vector_as_written"``: :math:`\sum_n\log(1 + \exp\sum_m C_{mn})`), in the field's symbols
    (:math:`\exp\sum C_{mn} = \prod e_{mn}`)."""
    e = f.E
    if activation == "gml_matrix_as_written":
        return sp.log(1 + sp.Mul(*e))
    if activation == "gml_vector_as_written":
        return sum(sp.log(1 + sp.Mul(*e[:, j])) for j in range(e.cols))
    over, one = ACTIVATIONS[activation]
    eps = 1 if one else 0
    if over == "all":
        return sp.log(eps + sum(e))
    return sum(sp.log(eps + sum(e[:, j])) for j in range(e.cols))


def gradient(activation: str, f: ExpField) -> sp.Matrix:
    """The gradient in ``Q`` of :func:`potential`."""
    return f.grad(potential(activation, f))


@dataclass(frozen=True, kw_only=True)
class ExpPolicy:
    """The evidence policy of a claim whose residual contains exponentials of the entries of ``C`` (the
    counterpart of :class:`~._common.Policy` for residuals in an :class:`~._exp_exact.ExpField`).

    Stages, in order: a search for an exact counterexample at ``search`` sizes (``points`` random rational
    points each; a nonzero rational function of e^{1/L} refutes), the derivation ``prove``, and the exact
    symbolic identity at ``exact`` sizes with every e^{C_mn} a free symbol (run even when proved; a nonzero
    residual there is searched for its exact counterexample at that size). ``structure`` says whether ``A`` is ``"general"`` or ``"symmetric"``.
    """

    residual: Callable[[ExpField], sp.Matrix] | None = None
    name: str = ""
    structure: str = "general"
    search: Sizes = NOWHERE
    points: int = 2
    prove: Callable[[], Derivation] | None = None
    exact: Sizes = NOWHERE

    def __call__(self, ctx) -> list[Evidence]:
        """The stages at the depth and seed of ``ctx``."""
        build = variables(self.structure)
        search = self.search.at(ctx)
        if search:
            ce = search_exp_counterexample(self.residual, build, search, seed=ctx.seed_for("search"),
                                           points=self.points, name=self.name)
            if ce is not None:
                return [Evidence(Level.REFUTED, "exact evaluation at random rational points", counterexample=ce)]
        evidence = []
        if self.prove is not None:
            try:
                evidence.append(prove_evidence(self.prove))
            except (ProofFailed, NotInAlgebra) as exc:
                evidence.append(Evidence(Level.ERROR, "derivation", detail=f"derivation failed: {exc}"))
        exact = self.exact.at(ctx)
        if exact:
            for size in exact:
                mats = build(size)
                res = self.residual(ExpField(mats["Q"], mats["A"]))
                if not alg.is_zero(res):
                    # a nonzero symbolic residual: search that size for the exact counterexample
                    ce = search_exp_counterexample(self.residual, build, [size], seed=ctx.seed_for("exact"),
                                                   points=20, name=self.name)
                    if ce is not None:
                        return [Evidence(Level.REFUTED, "exact evaluation at random rational points",
                                         counterexample=ce)]
                    return [Evidence(Level.ERROR, "exact symbolic identity", sizes=[size],
                                     detail="symbolic residual nonzero but no rational counterexample found in "
                                     "20 points at this size")]
            evidence.append(Evidence(Level.CHECKED, "exact symbolic identity at explicit sizes, every e^{C_mn} "
                                     "a free symbol", sizes=[dict(s) for s in exact]))
        return evidence


# ---------------------------------------------------------------------------
# residuals
# ---------------------------------------------------------------------------


def stated_matrix_gradient(f: ExpField) -> sp.Matrix:
    """The page: (A Q exp.(C)^T + A^T Q exp.(C)) / (1 + sum exp(C_mn))."""
    Q, A, e = f.Q, f.A, f.E
    return (A * Q * e.T + A.T * Q * e) / (1 + sum(e))


def stated_vector_gradient(f: ExpField) -> sp.Matrix:
    """The page: sum_n e^{C_jn}/(1 + sum_m e^{C_mn}) [AQ]_in + 1/(1 + sum_m e^{C_mj}) [A^T Q exp(C)]_ij."""
    Q, A, e = f.Q, f.A, f.E
    T = e.cols
    col = [1 + sum(e[:, j]) for j in range(T)]
    aq, atqe = A * Q, A.T * Q * e
    return sp.Matrix(Q.rows, T, lambda i, j: sum(e[j, k] / col[k] * aq[i, k] for k in range(T)) + atqe[i, j] / col[j])


def model_gradient(activation: str, f: ExpField) -> sp.Matrix:
    """A Q G^T + A^T Q G with G the activation's softmax."""
    g = softmax(f, *ACTIVATIONS[activation])
    return f.A * f.Q * g.T + f.A.T * f.Q * g


def code_update(over: str, symmetric: bool):
    """The package's update on Q from its code: 2 A Q sigma(C) (symmetric) or A Q sigma^T + A^T Q sigma."""

    def update(f: ExpField) -> sp.Matrix:
        s = softmax(f, over, False)
        return 2 * f.A * f.Q * s if symmetric else f.A * f.Q * s.T + f.A.T * f.Q * s

    return update


def _run_bindings(bindings, env: dict, f: ExpField) -> dict:
    """Kernel bindings at explicit matrices of ``f``'s sizes, every e^{C_mn} frozen as it appears."""
    return run_bindings(bindings, env, {_T: f.Q.cols, _D: f.Q.rows}, post=f.freeze)


def _layer_update(activation: str, f: ExpField) -> sp.Matrix:
    """geoattn's generated kernel expression at explicit matrices (row layout, transposed back to columns)."""
    return _run_bindings(update_bindings(activation), {z: f.Q.T, Aw: f.A}, f)["U"].T


def stack(parts) -> sp.Matrix:
    """The entries of matrices stacked in one column (one residual of several identities)."""
    return sp.Matrix.vstack(*[p.reshape(len(p), 1) for p in parts])


def layer_residual(f: ExpField) -> sp.Matrix:
    """Kernel update minus the potential's gradient, and the Jacobian asymmetry, for every activation."""
    parts = []
    for act in ACTIVATIONS:
        upd = _layer_update(act, f)
        parts += [upd - gradient(act, f), f.jacobian_asymmetry(upd)]
    return stack(parts)


def vjp_residual(f: ExpField) -> sp.Matrix:
    """Generated VJP kernel minus d<V, U>/dz and d<V, U>/dA computed by SymPy, for every activation."""
    Vm = alg.general("v", f.Q.cols, f.Q.rows)
    parts = []
    for act in ACTIVATIONS:
        over, one = ACTIVATIONS[act]
        pairing = sum(Vm.T.multiply_elementwise(_layer_update(act, f)))
        want_z = f.grad(pairing).T
        want_A = sp.Matrix(f.A.rows, f.A.cols, lambda i, j, p=pairing: f.d(p, f.A[i, j]))
        vals = _run_bindings(vjp_bindings(over), {z: f.Q.T, Aw: f.A, V: Vm, Gw: softmax(f, over, one)}, f)
        parts += [vals["gz"] - want_z, vals["gA"] - want_A]
    return stack(parts)


