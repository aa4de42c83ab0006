"""The table of native kernels: the bindings printed as C (:mod:`geoattn.codegen.cprinter`) and Triton
(:mod:`geoattn.codegen.tritonprinter`) through one lowering, and the hash the generated files record."""

from __future__ import annotations

import hashlib

from sympy.matrices.expressions import MatrixSymbol

from .expressions import (C, CAYLEY_SKEW_SMALL, CAYLEY_VJP_BINDINGS, EXP_SO4, GRAM_CLOSED_LAYER, GRAM_CLOSED_LAYER_VJP,
                          S4, T, d)
from .kernel_spec import NativeKernelSpec

__all__ = ["NATIVE_KERNELS", "native_hash", "TRITON_KERNELS", "triton_hash", "EXP_SKEW_SMALL_FWD"]


def _sized(value):
    """``value`` (an expression, or a list of ``(name, expression)`` bindings) with the size ``T`` renamed ``d``: the
    native printer reads per-sample matrices as ``d x d`` (the Cayley kernels' ``C`` is ``T x T``)."""
    if isinstance(value, list):
        return [(n, e.subs(T, d)) for n, e in value]
    return value.subs(T, d)


#: the native CPU kernels (C, printed by :mod:`geoattn.codegen.cprinter` into ``geoattn/kernels/_native_gram.c``;
#: Note [the closed-form Gram layer] in :mod:`geoattn.symbolic.expressions`)
NATIVE_KERNELS: list[NativeKernelSpec] = [
    NativeKernelSpec(
        name="vp_gram_fwd",
        doc="The closed-form Gram layer's forward for d <= 4: Gram = x^T x, N = (I + Gram A)^{-T} in closed form, "
        "the largest entry of its residual R = (I + Gram A)^T N - I, and y = x (2N - I).",
        bindings=GRAM_CLOSED_LAYER,
        token_inputs=("x",),
        shared_inputs={"A": "skew"},
        token_outputs=("y",),
        sample_outputs=("Gram", "N"),
        maxabs_outputs=("R",),
        claims=["vp.gram_closed_form", "vp.gram_closed_form_vjp"],
    ),
    NativeKernelSpec(
        name="vp_gram_bwd",
        doc="The closed-form Gram layer's backward for d <= 4: x_bar = y_bar P^T + x H and the per-sample "
        "Gram M_bar (A_bar is the skew part of its sum over the batch), from x, y_bar and the forward's N.",
        bindings=GRAM_CLOSED_LAYER_VJP,
        token_inputs=("x", "Gy"),
        sample_inputs={"N": "general"},
        shared_inputs={"A": "skew"},
        token_outputs=("gx",),
        sample_outputs=("gA",),
        claims=["vp.gram_closed_form_vjp"],
    ),
    NativeKernelSpec(
        name="cayley_small_fwd",
        doc="Cayley(C) = I + 2 (C^2 - C)/(1 - Tr(C^2)/2) of T x T matrices with T <= 3 (T renamed d), with the largest "
        "entries of C + C^T and of C (the caller's skew check: the form holds for skew C only).",
        bindings=[*_sized(CAYLEY_SKEW_SMALL), ("Skew", _sized(C + C.T)), ("Size", _sized(C))],
        token_inputs=(),
        sample_inputs={"C": "general"},
        sample_outputs=("Lam",),
        maxabs_outputs=("Skew", "Size"),
        claims=["kernels.cayley_skew_small"],
        max_dim=3,
        sample_real=True,
    ),
    NativeKernelSpec(
        name="cayley_vjp",
        doc="The Cayley transform's vector-Jacobian product -1/2 (I + Lam^T) G (I + Lam^T) from the output Lam, "
        "for T <= 3 (T renamed d).",
        bindings=_sized(CAYLEY_VJP_BINDINGS),
        token_inputs=(),
        sample_inputs={"Lam": "general", "G": "general"},
        sample_outputs=("gC",),
        claims=["cayley.vjp"],
        max_dim=3,
        sample_real=True,
    ),
]


def native_hash() -> str:
    """SHA-256 of every native kernel's source bindings (the generated C file records it)."""
    text = "\n".join(spec.source_text() for spec in NATIVE_KERNELS)
    return hashlib.sha256(text.encode()).hexdigest()


#: the skew part K = (S - S^T)/2 of the 4 x 4 input (exactly skew in floating point: a - b = -(b - a)), the closed
#: form exp_skew_so4 of K (exp_skew.hodge_form; K = S for skew S), and the caller's per-sample skew check on S
_K4 = MatrixSymbol("K", 4, 4)
EXP_SKEW_SMALL_FWD = [("K", (S4 - S4.T) / 2), *((n, e.subs(S4, _K4)) for n, e in EXP_SO4), ("Skew", S4 + S4.T),
                      ("Size", S4)]

#: kernels printed as Triton only (no C form): the exponential of skew matrices of size <= 4, padded to 4 x 4 by the
#: caller, printed at d = 4 alone (its bindings have the fixed size 4; Note [exp of a 4 x 4 skew matrix])
TRITON_KERNELS: list[NativeKernelSpec] = [
    NativeKernelSpec(
        name="exp_skew_small_fwd",
        doc="exp(S) of 4 x 4 matrices (smaller skew ones padded with zeros) by the closed form of the skew part "
        "K = (S - S^T)/2: (cos t+ I + sinc t+ K+)(cos t- I + sinc t- K-) with K+- = (K +- *K)/2 and "
        "t+-^2 = -Tr(K+-^2)/4, with the largest entries of S + S^T and of S (the caller's skew check).",
        bindings=EXP_SKEW_SMALL_FWD,
        token_inputs=(),
        sample_inputs={"S": "general"},
        sample_outputs=("E",),
        maxabs_outputs=("Skew", "Size"),
        claims=["exp_skew.hodge_form"],
        max_dim=4,
        sample_real=True,
    ),
]


def triton_hash() -> str:
    """SHA-256 of the Triton-only kernels' source bindings (their generated modules record it)."""
    text = "\n".join(spec.source_text() for spec in TRITON_KERNELS)
    return hashlib.sha256(text.encode()).hexdigest()
