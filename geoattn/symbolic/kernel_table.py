"""The table of generated kernels: every :class:`~geoattn.symbolic.kernel_spec.KernelSpec`, built from the
expressions of :mod:`geoattn.symbolic.expressions`, and the hash the generated module records."""

from __future__ import annotations

import hashlib

from sympy.matrices.expressions import MatrixSymbol

from .expressions import (  # the expressions the kernels print
    CAYLEY,
    CAYLEY_APPLY_MATRIX,
    CAYLEY_APPLY_SOLVE,
    CAYLEY_FROM_EIGH,
    CAYLEY_MINUS_I,
    CAYLEY_MINUS_I_SKEW_SMALL,
    EXP_SO4,
    S4,
    CAYLEY_SKEW_SMALL,
    GRAM_CAYLEY,
    GRAM_CLOSED,
    GRAM_CLOSED_VJP,
    Gram,
    Pbar,
    CAYLEY_VJP_BINDINGS,
    ORTHOGONAL_POLISH,
    Eo,
    EXP_SKEW_FROM_EIGH,
    EXP_SKEW_VJP,
    K1,
    K2,
    LIFT,
    LOWRANK_APPLY,
    LOWRANK_CAYLEY_VJP,
    LOWRANK_EXP_VJP,
    LOWRANK_K,
    LOWRANK_S,
    LSA_UPDATE,
    SQUARE_VJP,
    TAYLOR_SCHEMES,
    VP_CORRELATION,
    VP_CORRELATION_LOWER,
    Y1,
    A,
    C,
    Ek,
    G,
    Gy,
    Lam,
    Qf,
    Rf,
    Sd,
    T,
    U,
    W,
    Wd,
    X,
    d,
    k,
    q,
    skew_from_lower_expr,
    taylor_names,
    taylor_ps_bindings,
    taylor_ps_vjp_bindings,
    theta,
    uta_expr,
    x,
)
from .kernel_spec import KernelSpec
from .native_table import NATIVE_KERNELS, native_hash  # noqa: F401  (the native kernels: their own table)
from .symattn import ACTIVATIONS as SYMATTN_ACTIVATIONS
from .symattn import Aw, Gw, V, update_bindings, vjp_bindings, z

__all__ = ["KERNELS", "NATIVE_KERNELS", "kernel", "expressions_hash", "native_hash"]


def _taylor_specs() -> list["KernelSpec"]:
    specs = []
    for dtype, (m, r) in TAYLOR_SCHEMES.items():
        fwd = taylor_ps_bindings(m, r)
        specs.append(
            KernelSpec(
                name=f"exp_taylor{m}",
                doc=f"Taylor polynomial of exp of degree {m} (the {dtype} scheme), Paterson--Stockmeyer with "
                f"X^2..X^{r}; returns the intermediates the backward needs, then p(X).",
                inputs={"X": X},
                bindings=fwd,
                dims={T: ("X", -1)},
                claims=["exp_skew.taylor_form", "exp_skew.taylor_remainder"],
                accumulate=True,
            )
        )
        saved = {"X": X, **{n: MatrixSymbol(n, T, T) for n in taylor_names(m, r)[:-1]}, "G": G}
        specs.append(
            KernelSpec(
                name=f"exp_taylor{m}_vjp",
                doc=f"Gradient of <G, p(X)> for the degree-{m} scheme, from the forward intermediates.",
                inputs=saved,
                bindings=taylor_ps_vjp_bindings(m, r),
                dims={T: ("X", -1)},
                claims=["exp_skew.taylor_vjp", "exp_skew.taylor_remainder"],
                accumulate=True,
                returns=("gX",),
            )
        )
    return specs


def _lowrank_specs() -> list["KernelSpec"]:
    return [
        KernelSpec(
            name="vp_lowrank_skew",
            doc="The small skew matrix S = R A R^T of the low-rank form (skew-symmetrised), from x = Q R.",
            inputs={"R": Rf, "A": A},
            bindings=LOWRANK_S,
            dims={},
            claims=["vp.lowrank_form"],
            returns=("S",),
        ),
        KernelSpec(
            name="cayley_minus_identity",
            doc="Cayley(S) - I = -2 (I + S)^{-1} S, batched.",
            inputs={"S": Sd},
            bindings=[("W", CAYLEY_MINUS_I)],
            dims={k: ("S", -1)},
            claims=["vp.lowrank_form"],
        ),
        KernelSpec(
            name="vp_gram_cayley",
            doc="Row-layout Cayley layer output by the Gram (push-through) form: y = 2 x (I + G A)^{-T} - x with "
            "G = x^T x (d x d), one d x d solve and no T x T matrix; run in float64 for float32 inputs.",
            inputs={"x": x, "A": A},
            bindings=GRAM_CAYLEY,
            dims={d: ("x", -1)},
            claims=["vp.gram_form"],
            returns=("y",),
        ),
        KernelSpec(
            name="vp_gram_closed",
            doc="N = (I + Gram A)^{-T} = (I - J)^{-1} (J = A Gram), P = 2N - I and the residual R = (I - J) N - I of "
            "the Gram form in closed form for d <= 4, no solve "
            "(Note [closed-form Gram solve]); structure-of-arrays layout: Gram (d, d, *batch), A (d, d, 1).",
            inputs={"Gram": Gram, "A": A},
            bindings=GRAM_CLOSED,
            dims={d: ("Gram", 0)},
            claims=["vp.gram_closed_form"],
            returns=("N", "P", "R"),
            layout="soa",
        ),
        KernelSpec(
            name="vp_gram_closed_vjp",
            doc="The small factors of the Gram form's backward: M_bar = -2 N P_bar^T N and H = A M_bar^T - M_bar A "
            "(x_bar = y_bar P^T + x H, A_bar = skew(sum of Gram M_bar)); structure-of-arrays layout.",
            inputs={"N": MatrixSymbol("N", d, d), "Pbar": Pbar, "A": A},
            bindings=GRAM_CLOSED_VJP,
            dims={},
            claims=["vp.gram_closed_form_vjp"],
            layout="soa",
        ),
        KernelSpec(
            name="cayley_minus_identity_skew_small",
            doc="Cayley(S) - I = 2 (S^2 - S)/(1 - Tr(S^2)/2) for skew S of size k <= 3, without a solve.",
            inputs={"S": Sd},
            bindings=CAYLEY_MINUS_I_SKEW_SMALL,
            dims={},
            claims=["kernels.cayley_skew_small"],
            returns=("W",),
        ),
        KernelSpec(
            name="exp_skew_so4",
            doc="exp(S) for skew 4 x 4 S in closed form: (cos t+ I + sinc t+ S+)(cos t- I + sinc t- S-) with "
            "S+- = (S +- *S)/2 and t+-^2 = -Tr(S+-^2)/4 (Note [exp of a 4 x 4 skew matrix]); no series, squaring or "
            "eigendecomposition.",
            inputs={"S": S4},
            bindings=EXP_SO4,
            dims={},
            claims=["exp_skew.hodge_form"],
            returns=("E",),
        ),
        KernelSpec(
            name="vp_lowrank_apply",
            doc="Row-layout layer output x + Q W^T R = Lambda^T x with Lambda = I + Q W Q^T (W = f(S) - I).",
            inputs={"x": x, "Q": Qf, "W": Wd, "R": Rf},
            bindings=[("K", LOWRANK_K), ("y", LOWRANK_APPLY)],
            dims={},
            claims=["vp.lowrank_form"],
            returns=("y",),
        ),
        KernelSpec(
            name="vp_lowrank_project",
            doc="Y1 = Q^T Gy: the incoming gradient in the basis of Q.",
            inputs={"Q": Qf, "Gy": Gy},
            bindings=[("Y1", Qf.T * Gy)],
            dims={},
            claims=["vp.lowrank_exp_vjp"],
        ),
        KernelSpec(
            name="vp_lowrank_cayley_vjp",
            doc="Gradients of <Gy, y> with respect to x and A for the Cayley activation, from Q, R, W = Cayley(S) - I.",
            inputs={"Q": Qf, "R": Rf, "W": Wd, "A": A, "Gy": Gy},
            bindings=LOWRANK_CAYLEY_VJP,
            dims={d: ("R", -1), k: ("R", -2)},
            claims=["vp.lowrank_cayley_vjp"],
            returns=("gx", "gA"),
        ),
        KernelSpec(
            name="vp_lowrank_exp_vjp",
            doc="Gradients of <Gy, y> with respect to x and A for the exponential activation, from Q, R, "
            "W = exp(S) - I, Y1 = Q^T Gy, K1 = L_exp(-S, R Y1^T) and K2 = phi(-S) R.",
            inputs={"Q": Qf, "R": Rf, "W": Wd, "A": A, "Gy": Gy, "Y1": Y1, "K1": K1, "K2": K2},
            bindings=LOWRANK_EXP_VJP,
            dims={d: ("R", -1)},
            claims=["vp.lowrank_exp_vjp"],
            returns=("gx", "gA"),
        ),
    ]


def _symattn_specs() -> list[KernelSpec]:
    specs = [
        KernelSpec(
            name=f"symattn_update_{activation}",
            doc=f"Symplectic-attention update grad Sigma(z) for the {activation} potential in the row layout "
            "(z: tokens as rows): C = z A z^T, G = the softmax of C, U = G z A^T + G^T z A; returns U and G.",
            inputs={"z": z, "A": Aw},
            bindings=update_bindings(activation),
            dims={},
            claims=["symattn.potential_gradient", "symattn.layer_symplectic"],
            returns=("U", "G"),
        )
        for activation in SYMATTN_ACTIVATIONS
    ]
    specs += [
        KernelSpec(
            name=f"symattn_vjp_{over}",
            doc=f"VJP of the symplectic-attention update along V (softmax over {over}), from the saved softmax G: "
            "the gradients of <V, U> with respect to z and A.",
            inputs={"z": z, "A": Aw, "V": V, "G": Gw},
            bindings=vjp_bindings(over),
            dims={},
            claims=["symattn.layer_vjp"],
            returns=("gz", "gA"),
        )
        for over in ("all", "columns")
    ]
    return specs


KERNELS: list[KernelSpec] = [
    KernelSpec(
        name="cayley_matrix",
        doc="Cayley transform Lambda = (I - C)(I + C)^{-1} = (I + C)^{-1}(I - C), batched over leading dims.",
        inputs={"C": C},
        bindings=[("Lam", CAYLEY)],
        dims={T: ("C", -1)},
        claims=["cayley.orthogonal", "kernels.cayley_left_solve"],
    ),
    KernelSpec(
        name="cayley_skew_small",
        doc="Cayley(C) = I + 2 (C^2 - C)/(1 - Tr(C^2)/2) for skew C of size T <= 3, without a solve.",
        inputs={"C": C},
        bindings=CAYLEY_SKEW_SMALL,
        dims={T: ("C", -1)},
        claims=["kernels.cayley_skew_small"],
        returns=("Lam",),
    ),
    KernelSpec(
        name="cayley_apply_solve",
        doc="Row-layout layer output (x^T Cayley(C))^T = 2 (I - C)^{-1} x - x for skew C, without forming Cayley(C).",
        inputs={"C": C, "x": x},
        bindings=[("y", CAYLEY_APPLY_SOLVE)],
        dims={T: ("C", -1)},
        claims=["cayley.apply_form"],
    ),
    KernelSpec(
        name="cayley_apply_matrix",
        doc="Row-layout layer output (x^T Lam)^T = Lam^T x from the formed matrix Lam = Cayley(C).",
        inputs={"Lam": Lam, "x": x},
        bindings=[("y", CAYLEY_APPLY_MATRIX)],
        dims={},
        claims=["cayley.orthogonal", "cayley.apply_form"],
    ),
    KernelSpec(
        name="cayley_vjp",
        doc="Gradient of <G, Cayley(C)> with respect to C, from the forward output Lam = Cayley(C).",
        inputs={"Lam": Lam, "G": G},
        bindings=CAYLEY_VJP_BINDINGS,
        dims={T: ("Lam", -1)},
        claims=["cayley.vjp"],
        accumulate=True,
        returns=("gC",),
    ),
    KernelSpec(
        name="orthogonal_polish",
        doc="One Newton-Schulz step E (3I - E^T E)/2 towards the orthogonal polar factor: squares the defect.",
        inputs={"E": Eo},
        bindings=ORTHOGONAL_POLISH,
        dims={T: ("E", -1)},
        claims=["cayley.polish"],
        returns=("N",),
    ),
    KernelSpec(
        name="skew_from_lower",
        doc="Copy the strict lower triangle to the upper one, negated (tensor_mat_skew_sym_assign).",
        inputs={"C": C},
        bindings=[("S", skew_from_lower_expr(C))],
        dims={},
        claims=["vp.lower_assign_skew", "kernels.triangle_forms"],
    ),
    KernelSpec(
        name="upper_triangular_asymmetrize",
        doc="Keep the strict upper triangle, put its negated transpose below (seed 003).",
        inputs={"C": C},
        bindings=[("S", uta_expr(C))],
        dims={},
        claims=["exp.uta_skew", "kernels.triangle_forms"],
    ),
    KernelSpec(
        name="vp_correlation",
        doc="Row-layout volume-preserving correlations Z^T A Z = x A x^T (Z = x^T).",
        inputs={"x": x, "A": A},
        bindings=[("C", VP_CORRELATION)],
        dims={},
        claims=["vp.skew_weighting", "kernels.row_layout"],
    ),
    KernelSpec(
        name="vp_correlation_lower",
        doc="Row-layout skew_from_lower(Z^T A Z) for the arbitrary weighting.",
        inputs={"x": x, "A": A},
        bindings=[("C", VP_CORRELATION_LOWER)],
        dims={},
        claims=["vp.lower_assign_skew", "kernels.row_layout"],
    ),
    KernelSpec(
        name="lsa_update",
        doc="Linear symplectic attention update in the row layout: the gradient of 1/2 Tr(Q A Q^T), q = Q^T.",
        inputs={"q": q, "A": W},
        bindings=[("dq", LSA_UPDATE)],
        dims={},
        claims=["lsa.gradient", "kernels.lsa_row_layout"],
    ),
    KernelSpec(
        name="exp_skew_from_eigh",
        doc="exp(S) for skew S from the eigendecomposition i S = U diag(theta) U^H.",
        inputs={"U": U, "theta": theta},
        bindings=[("E", EXP_SKEW_FROM_EIGH)],
        dims={},
        claims=["exp_skew.eigh_form"],
        complex_inputs=("U",),
    ),
    KernelSpec(
        name="cayley_from_eigh",
        doc="Cayley(C) for skew C from the eigendecomposition i C = U diag(theta) U^H (used at large norms).",
        inputs={"U": U, "theta": theta},
        bindings=[("Lam", CAYLEY_FROM_EIGH)],
        dims={},
        claims=["cayley.eigh_form"],
        complex_inputs=("U",),
    ),
    KernelSpec(
        name="exp_skew_vjp",
        doc="Gradient of <G, exp(S)> with respect to S (Daleckii-Krein), from i S = U diag(theta) U^H.",
        inputs={"U": U, "theta": theta, "G": G},
        bindings=[("gS", EXP_SKEW_VJP)],
        dims={},
        claims=["exp_skew.vjp"],
        complex_inputs=("U",),
    ),
    *_taylor_specs(),
    *_lowrank_specs(),
    KernelSpec(
        name="square_vjp",
        doc="Gradient of <G, E^2> with respect to E: one step of the squaring phase, backwards.",
        inputs={"E": Ek, "G": G},
        bindings=[("gE", SQUARE_VJP)],
        dims={},
        claims=["exp_skew.square_vjp"],
        accumulate=True,
    ),
    KernelSpec(
        name="lift",
        doc="The lift I_d (x) Lambda^T of Z -> Z Lambda to row-stacked vectors (for analysis and tests).",
        inputs={"Lam": Lam},
        bindings=[("L", LIFT)],
        dims={d: ("d", None)},
        claims=["vec.right_multiplication", "lift.orthogonal", "lift.symplectic"],
        size_args=("d",),
    ),
    *_symattn_specs(),
]


def kernel(name: str) -> KernelSpec:
    """The :class:`KernelSpec` called ``name``."""
    for spec in KERNELS:
        if spec.name == name:
            return spec
    raise KeyError(f"Expected a kernel name in {[spec.name for spec in KERNELS]}. Got {name!r}.")


def expressions_hash() -> str:
    """SHA-256 of every kernel's source expressions (the generated header records it)."""
    text = "\n".join(spec.source_text() for spec in KERNELS)
    return hashlib.sha256(text.encode()).hexdigest()
