"""The table of native kernels: the bindings printed as C (:mod:`geoattn.codegen.cprinter`) and Triton
(:mod:`geoattn.codegen.tritonprinter`) through one lowering, and the hash the generated files record."""

from __future__ import annotations

import hashlib

import sympy as sp
from sympy.matrices.expressions import Identity, MatrixSymbol, Trace

from .expressions import (C, CAYLEY_SKEW_SMALL, CAYLEY_VJP_BINDINGS, EXP_SO4, GRAM_CLOSED_LAYER, GRAM_CLOSED_LAYER_VJP,
                          S4, T, d)
from .kernel_spec import NativeKernelSpec
from .nodes import Hodge4

__all__ = ["NATIVE_KERNELS", "native_hash", "TRITON_KERNELS", "triton_hash", "EXP_SKEW_SMALL_FWD", "EXP_SKEW_SMALL_VJP",
           "Q_SWITCH", "Q_TERMS", "q_series", "q_direct", "exp_so4_vjp_bindings"]


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

# Note [the half-turn VJP]
# Each half-turn E = cos t I + sinc t X (X = K_+ or K_-, X^2 = -t^2 I, t^2 = w = -Tr(X^2)/4) has, for an incoming
# gradient Gb, the gradient Xb = sinc t Gb + c X^T in X, c = sinc t Tr(Gb)/4 - q(w) <Gb, X>/4 with
# q(w) = (cos t - sinc t)/w (sinc' (t) = t q). The product E = E+ E- sends G to Gb+ = G E-^T and Gb- = E+^T G; with
# K+- = (K +- *K)/2 and the star self-adjoint, Kb = (Xb+ + Xb-)/2 + *((Xb+ - Xb-)/2) and Sb = (Kb - Kb^T)/2
# (claim exp_skew.hodge_vjp). The direct q cancels as w -> 0 (relative error about 3 eps/w), so below w = 1/4
# (t = 1/2) the kernel takes the alternating series q(w) = sum_{n>=1} (-1)^n 2n/(2n+1)! w^(n-1) cut after Q_TERMS
# terms (claim exp_skew.hodge_vjp_series bounds what is cut off).
#: the switch point in w = t^2 and the number of series terms of q
Q_SWITCH = sp.Rational(1, 4)
Q_TERMS = 7


def q_series(w, terms: int = Q_TERMS):
    r"""The first ``terms`` terms of :math:`q(w) = \sum_{n\ge1} (-1)^n\,2n/(2n+1)!\,w^{n-1}` in Horner form: the
    ratio of consecutive terms is :math:`-w/(2n(2n+3))`, so every printed constant is a small fraction."""
    inner = sp.Integer(1)
    for n in range(terms - 1, 0, -1):
        inner = 1 - w * inner / (2 * n * (2 * n + 3))
    return -inner / 3


def q_direct(w):
    r""":math:`q(w) = (\cos t - \mathrm{sinc}\,t)/w` with :math:`t = \sqrt w` (undefined at ``w = 0``)."""
    t = sp.sqrt(w)
    return (sp.cos(t) - sp.sinc(t)) / w


def _q(w, terms: int, switch):
    return sp.Piecewise((q_series(w, terms), w < switch), (q_direct(w), True))


_N4 = {n: MatrixSymbol(n, 4, 4) for n in ("G", "H", "Sp", "Sm", "Sp2", "Sm2", "Ep", "Em", "Gp", "Gm", "Xp", "Xm", "Kb")}


def exp_so4_vjp_bindings(star=sp.Rational(1, 2), terms: int = Q_TERMS, switch=Q_SWITCH) -> list:
    """The VJP bindings of ``EXP_SKEW_SMALL_FWD`` (Note [the half-turn VJP]); ``star`` (the factor of the star term),
    ``terms`` and ``switch`` are the kernel's unless a negative control changes them."""
    n, I4 = _N4, Identity(4)

    def turn(X, X2):
        t = sp.sqrt(-Trace(X2)) / 2
        return sp.cos(t) * I4 + sp.sinc(t) * X

    def turn_vjp(X, X2, Gb):
        w, t = -Trace(X2) / 4, sp.sqrt(-Trace(X2)) / 2
        c = sp.sinc(t) * Trace(Gb) / 4 - _q(w, terms, switch) * Trace(Gb.T * X) / 4
        return sp.sinc(t) * Gb + c * X.T

    return [("K", (S4 - S4.T) / 2), ("H", Hodge4(_K4)), ("Sp", (_K4 + n["H"]) / 2), ("Sm", (_K4 - n["H"]) / 2),
            ("Sp2", n["Sp"] ** 2), ("Sm2", n["Sm"] ** 2), ("Ep", turn(n["Sp"], n["Sp2"])),
            ("Em", turn(n["Sm"], n["Sm2"])), ("Gp", n["G"] * n["Em"].T), ("Gm", n["Ep"].T * n["G"]),
            ("Xp", turn_vjp(n["Sp"], n["Sp2"], n["Gp"])), ("Xm", turn_vjp(n["Sm"], n["Sm2"], n["Gm"])),
            ("Kb", (n["Xp"] + n["Xm"]) / 2 + star * Hodge4(n["Xp"] - n["Xm"])), ("gS", (n["Kb"] - n["Kb"].T) / 2)]


#: the gradient gS of <G, exp(K)> in S, K = (S - S^T)/2 (the skew projection; claim exp_skew.hodge_vjp)
EXP_SKEW_SMALL_VJP = exp_so4_vjp_bindings()

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
    NativeKernelSpec(
        name="exp_skew_small_vjp",
        doc="The gradient of <G, exp(K)> in S for 4 x 4 S, K = (S - S^T)/2 (the skew projection): per half-turn "
        "Xb = sinc t Gb + (sinc t Tr(Gb)/4 - q(t^2) <Gb, X>/4) X^T, q(w) = (cos t - sinc t)/w or its series below "
        "w = 1/4, Gb+ = G E-^T, Gb- = E+^T G, Kb = (Xb+ + Xb-)/2 + *(Xb+ - Xb-)/2, gS = (Kb - Kb^T)/2.",
        bindings=EXP_SKEW_SMALL_VJP,
        token_inputs=(),
        sample_inputs={"S": "general", "G": "general"},
        sample_outputs=("gS",),
        claims=["exp_skew.hodge_vjp", "exp_skew.hodge_vjp_series"],
        max_dim=4,
        sample_real=True,
    ),
]


def triton_hash() -> str:
    """SHA-256 of the Triton-only kernels' source bindings (their generated modules record it)."""
    text = "\n".join(spec.source_text() for spec in TRITON_KERNELS)
    return hashlib.sha256(text.encode()).hexdigest()
