r"""The operation ``vp_attention``: volume-preserving attention, its checks and its routes.

The layer output in the row layout is :math:`y = f(C)^T x`, :math:`C = xAx^T`, for ``x`` of shape ``(..., T, d)``,
``A`` skew ``d x d`` and :math:`f` the Cayley transform or the exponential. Routes, in order (Note [choice of form]
in :mod:`geoattn.kernels._lowrank`):

0. ``gram-closed/triton``: the closed-form Gram layer as Triton kernels printed from the same bindings as the C
   ones: Cayley, ``d <= 4``, one weighting, float32 or half inputs, CUDA (Note [Triton backend] in
   :mod:`geoattn.kernels._triton`); at every ``T``, ``d >= T`` included, since the fused ``O(T d^2)`` kernel
   beats the ``T x T`` form there too;
0b. ``gram-lu/triton``: the Gram form as Triton kernels for ``5 <= d <= 16`` (the token passes printed from the
   verified bindings, an LU with partial pivoting per lane: Note [Triton LU blocks] in
   :mod:`geoattn.codegen.gram_lu_triton`), one weighting, float32 or half inputs, CUDA, ``T > d``; the backward
   ``vp.gram_lu_vjp`` from the forward's ``N``; not timed on a GPU;
0c. ``gram-exp/triton``: the exponential's Gram form as Triton kernels for ``3 <= d <= 16`` (the token passes
   printed from the verified bindings, the C kernels' scaling and squaring per lane and its reverse mode: Note
   [Triton exponential blocks] in :mod:`geoattn.codegen.gram_exp_triton`), one weighting, float32 or half inputs,
   CUDA, ``T > d``; the same per-sample decisions as ``gram-exp/native``; not timed on a GPU;
1. ``full/eager``: the ``T x T`` matrices, when ``d >= T`` (or requested);
2. ``gram-closed/native``: the Gram form with the closed-form ``d x d`` factor (``vp.gram_closed_form``,
   ``vp.gram_closed_form_vjp``) as C kernels: Cayley, ``d <= 4``, one weighting, float32 or half inputs, CPU;
3. ``gram-closed/eager``: the same closed form in torch operations (structure of arrays);
4. ``gram-lu/native``: the Gram form as C kernels for ``4 < d <= 16`` (:mod:`geoattn.kernels._native_lu`: the
   token passes printed from the verified bindings, ``N`` by Cholesky and an LU of ``I - K`` without pivoting,
   ``vp.gram_lu_woodbury``, with partial pivoting for the samples whose residual fails), one weighting, float32
   or half inputs, CPU, at every ``T > d`` (measured 2 to 3.5x as fast as ``gram-lu/eager`` at d = 8 and 16,
   T = 16, 64, 256: Note [native LU kernels] in :mod:`geoattn.kernels._native_lu`); the backward
   ``vp.gram_lu_vjp`` from the forward's ``N``;
5. ``gram-lu/eager``: the Gram form with the structure-of-arrays LU and its explicit backward
   (:mod:`geoattn.kernels._gram_lu`) for ``4 < d <= 16`` and ``T >= 32``;
5b. ``gram-lu-wide/native``: the Gram form for ``17 <= d <= 64`` with the per-sample ``d x d`` stage in C, the
   token products in the same C call up to ``d = 32`` and ``torch.bmm`` above (:mod:`geoattn.kernels._native_lu_big`:
   ``N`` by Cholesky and an LU of ``I - K`` without pivoting, ``vp.gram_lu_woodbury``, partial pivoting for the
   samples whose residual fails; the backward
   ``vp.gram_lu_vjp``), one weighting, float32 or half inputs, CPU, ``T > d``;
6. ``gram-solve/eager``: the Gram form with a pivoted float64 solve (``vp.gram_form``), the Cayley layer's float32
   and half inputs otherwise (not on MPS, which has no float64);
7. ``gram-exp/native``: the exponential's Gram form as C kernels for ``3 <= d <= 16``
   (:mod:`geoattn.kernels._native_exp`: the token passes printed from the verified bindings, scaling and squaring
   of a Taylor polynomial per sample and its reverse mode, ``vp.gram_exp_native_truncation``,
   ``vp.gram_exp_native_reverse``), one weighting, float32 or half inputs, CPU, every ``T > d`` (measured 0.1 to
   0.8x the time of the eager routes below at d = 3, 4, 8, 16: Note [native exponential Gram kernels]);
8. ``gram-exp-closed/eager``: the exponential's Gram form at ``d = 3`` and ``d = 4`` (``T < 96``)
   in closed form, :math:`\exp(-AG) = I + aM + bM^2` at ``d = 3`` (``vp.gram_exp_closed_form``,
   ``vp.gram_exp_closed_form_vjp``) and :math:`c_0I + c_1M + c_2M^2 + c_3M^3` at ``d = 4``
   (``vp.gram_exp_closed_quartic``, ``vp.gram_exp_closed_quartic_vjp``) in the structure-of-arrays layout, float32
   and half inputs (Note [closed-form exponential Gram form] in :mod:`geoattn.kernels._gram_exp_closed`);
9. ``gram-exp/eager``: the exponential's Gram form :math:`y = x\exp(-Ax^Tx)` (``vp.exp_push_through``,
   ``vp.gram_exp_vjp``), float32 and half inputs, ``d > 4``: the native kernels' scaling and squaring of the
   degree-16 Taylor polynomial and its reverse mode (``vp.gram_exp_native_truncation``,
   ``vp.gram_exp_native_reverse``) in batched float64 products (Note [batched Taylor exponential] in
   :mod:`geoattn.kernels._taylor_exp`; Note [Gram form of the exponential] in :mod:`geoattn.kernels._gram_exp`),
   served first by ``gram-exp-wide/native`` for ``17 <= d <= 64`` (the same algorithm, its ``d x d`` stage in C one
   sample at a time: :mod:`geoattn.kernels._native_exp_wide`; up to ``d = 32`` with float32 tokens and a shared
   ``A``, the token products in the same C call: :mod:`geoattn.kernels._gram_exp_fused`);
10. ``lowrank/eager``: the thin QR form (``vp.lowrank_form``) with its derived backward passes, every other ``d < T``.

Per sample, inside the Gram routes: a sample failing the closed form's residual check is solved (Note [closed-form
residual check] in :mod:`geoattn.kernels._gram`), and a sample with :math:`\|x\|_F^2\|A\|_F > 10^6` takes the QR
form in float64 (Note [why QR and not the Gram matrix]); in the exponential's Gram route, a sample failing the
structure check :math:`E^TGE = G`, non-finite, or as large takes the QR form in float64.
"""

from __future__ import annotations

import torch

from ..errors import OptionError
from . import _triton
from ._backends import EAGER, NATIVE, TRITON
from ._checks import check_skew, check_tokens_and_weighting, half_in_float32
from ._functions import _traced
from ._gram import (GRAM_MAX_SCALE, _dual, closed_form_reason, nan_isolated, native_dtype, vp_gram_closed,
                    vp_gram_solve)
from ._gram_exp import gram_exp_reason, vp_gram_exp
from ._gram_exp_fused import vp_gram_exp_wide
from ._gram_exp_closed import CLOSED_EXP_DIMS, gram_exp_closed_reason, vp_gram_exp_closed
from ._gram_lu import lu_reason, vp_gram_lu
from ._lowrank import ACTIVATIONS, METHODS, vp_full, vp_lowrank
from ._native import native_status
from . import _native_exp, _native_exp_wide, _native_lu, _native_lu_big
from .dispatch import Call, Operation, Route, dispatch, register_operation

__all__ = ["vp_attention", "VP_ATTENTION"]


def _bind(x: torch.Tensor, A: torch.Tensor, *, activation: str = "cayley", method: str = "auto",
          check: bool = True) -> Call:
    check_tokens_and_weighting(x, A)
    if activation not in ACTIVATIONS:
        raise OptionError(f"Expected activation in {ACTIVATIONS}. Got {activation!r}.")
    if method not in METHODS:
        raise OptionError(f"Expected method in {METHODS}. Got {method!r}.")
    if method == "gram" and activation != "cayley":
        raise OptionError(f"Expected activation 'cayley' for method 'gram' (the Gram form is the Cayley layer's). "
                          f"Got {activation!r}.")
    return Call(x=x, A=A, activation=activation, method=method, check=check, T=x.shape[-2], d=x.shape[-1],
                dtype=x.dtype, device=x.device, traced=_traced(x) or _traced(A))


def _requested(form: str):
    """The ``method`` filter every route applies first: None when ``form`` may serve the requested method."""
    def why(c: Call) -> str | None:
        return None if c.method in ("auto", form) else f"method {c.method!r} requested"
    return why


def _full(c: Call) -> str | None:
    if c.method == "full":
        return None
    if c.method != "auto":
        return f"method {c.method!r} requested"
    return None if c.d >= c.T else f"d={c.d} < T={c.T}: a d x d form avoids the T x T matrices"


def _gram(c: Call) -> str | None:
    if c.method == "gram":
        return None
    if c.method != "auto":
        return f"method {c.method!r} requested"
    if c.activation != "cayley":
        return f"activation {c.activation!r}: the Gram form is the Cayley layer's"
    if c.d >= c.T:
        return f"d={c.d} >= T={c.T}"
    if c.dtype == torch.float64:
        return "float64 input: the QR form's float64 error does not grow with the Gram matrix's conditioning"
    if c.device.type == "mps":
        return "MPS has no float64, in which the Gram form computes"
    return None


def _gram_closed(c: Call) -> str | None:
    return _gram(c) or closed_form_reason(c.x, c.A)


def _gram_lu(c: Call) -> str | None:
    return _gram(c) or lu_reason(c.x, c.A)


def _gram_lu_native(c: Call) -> str | None:
    why = _gram(c)
    if why is not None:
        return why
    if c.dtype == torch.float64:
        return "float64 input: its residual check is held to the input's eps, which a float64 LU cannot meet"
    if c.device.type != "cpu":
        return f"device {c.device.type}: the native kernels run on the CPU"
    if not _native_lu.MIN_DIM <= c.d <= _native_lu.MAX_DIM:
        return f"d={c.d}: the native LU kernels cover {_native_lu.MIN_DIM} <= d <= {_native_lu.MAX_DIM}"
    if c.A.dim() != 2:
        return "a batched weighting A: the native kernels take one A for the whole batch"
    if c.x.numel() == 0:
        return "an empty input"
    if c.traced:
        return "traced (torch.func, torch.compile or meta): the residual check branches on the data"
    if _dual(c.x) or _dual(c.A):
        return "a forward-mode tangent: the native kernels have no jvp"
    ok, reason = _native_lu.lu_native_status(c.d, native_dtype(c.x))
    return None if ok else reason


def _gram_lu_big_native(c: Call) -> str | None:
    why = _gram(c)
    if why is not None:
        return why
    if c.dtype == torch.float64:
        return "float64 input: its residual check is held to the input's eps, which a float64 LU cannot meet"
    if c.device.type != "cpu":
        return f"device {c.device.type}: the native stage runs on the CPU"
    if not _native_lu_big.MIN_DIM <= c.d <= _native_lu_big.MAX_DIM:
        return f"d={c.d}: the native LU stage covers {_native_lu_big.MIN_DIM} <= d <= {_native_lu_big.MAX_DIM}"
    if c.A.dim() != 2:
        return "a batched weighting A: the native stage takes one A for the whole batch"
    if c.x.numel() == 0:
        return "an empty input"
    if c.traced:
        return "traced (torch.func, torch.compile or meta): the residual check branches on the data"
    if _dual(c.x) or _dual(c.A):
        return "a forward-mode tangent: the native stage has no jvp"
    ok, reason = _native_lu_big.lu_big_status(c.d)
    return None if ok else reason


def _gram_closed_native(c: Call) -> str | None:
    why = _gram_closed(c)
    if why is not None:
        return why
    ok, reason = native_status(c.d, native_dtype(c.x))
    return None if ok else reason


def _gram_closed_triton(c: Call) -> str | None:
    if c.method not in ("auto", "gram"):
        return f"method {c.method!r} requested"
    if c.activation != "cayley":
        return f"activation {c.activation!r}: the Gram kernels are the Cayley layer's"
    if c.dtype not in _triton.REALS:
        return f"{c.dtype}: the Triton kernels take float32, float16 or bfloat16 (float64 keeps the eager forms)"
    return closed_form_reason(c.x, c.A)


def _gram_lu_triton(c: Call) -> str | None:
    why = _gram(c)
    if why is not None:
        return why
    if c.dtype not in _triton.REALS:
        return f"{c.dtype}: the Triton kernels take float32, float16 or bfloat16"
    if not 5 <= c.d <= _triton.LU_DIMS[-1]:
        return f"d={c.d}: the Triton LU route serves 5 <= d <= {_triton.LU_DIMS[-1]} (d <= 4: the closed form)"
    if c.A.dim() != 2:
        return "a batched weighting A: the Triton kernels take one A for the whole batch"
    if c.x.numel() == 0:
        return "an empty input"
    if _dual(c.x) or _dual(c.A):
        return "a forward-mode tangent: the Triton kernels have no jvp"
    return None


def _gram_exp_triton(c: Call) -> str | None:
    if c.method != "auto":
        return f"method {c.method!r} requested"
    if c.activation != "exp":
        return f"activation {c.activation!r}: this Gram form is the exponential's"
    if c.dtype not in _triton.REALS:
        return f"{c.dtype}: the Triton kernels take float32, float16 or bfloat16"
    if c.d not in _triton.EXP_DIMS:
        return f"d={c.d}: the Triton exponential kernels cover {_triton.EXP_DIMS[0]} <= d <= {_triton.EXP_DIMS[-1]}"
    if c.d >= c.T:
        return f"d={c.d} >= T={c.T}"
    if c.A.dim() != 2:
        return "a batched weighting A: the Triton kernels take one A for the whole batch"
    if c.x.numel() == 0:
        return "an empty input"
    if c.traced:
        return "traced (torch.func, torch.compile or meta): the structure check branches on the data"
    if _dual(c.x) or _dual(c.A):
        return "a forward-mode tangent: the Triton kernels have no jvp"
    return None


#: the exponential's Gram form serves above this width: forward+backward measured against the QR form (one thread,
#: float32, 16,384 tokens) 0.8-0.9x as fast at d = 3, 0.96-1.2x at d = 4, 1.1-1.7x at d = 8 and 16
GRAM_EXP_MIN_DIM = 4


def _gram_exp(c: Call) -> str | None:
    if c.method != "auto":
        return f"method {c.method!r} requested"
    if c.activation != "exp":
        return f"activation {c.activation!r}: this Gram form is the exponential's"
    if c.d <= GRAM_EXP_MIN_DIM:
        return (f"d={c.d} <= {GRAM_EXP_MIN_DIM}: the QR form measured as fast (its 3d x 3d block exponential is "
                f"small there)")
    if c.d >= c.T:
        return f"d={c.d} >= T={c.T}"
    if c.dtype == torch.float64:
        return "float64 input: the QR form's float64 error does not grow with the Gram matrix's conditioning"
    return gram_exp_reason(c.x, c.A)


#: the closed-form exponential Gram route serves below this length, per width: forward+backward (dense gradient /
#: out.sum()) against the QR form, one thread, float32, 65,536 tokens, the layer's default weighting, the forms timed
#: alternately on a shared two-core machine, two runs: d = 3: 0.18-0.20x at T = 16, 0.28x at T = 32, 0.62-0.93x at
#: T = 64, 0.65-1.16x at T = 96, 0.98-1.47x at T = 128, 1.2-2.2x at T = 256; d = 4: 0.31-0.37x at T = 16, 0.50x at
#: T = 32, 0.64-0.86x at T = 64, 1.23-1.32x at T = 96, 1.19-1.46x at T = 128, 1.6-1.7x at T = 256
CLOSED_EXP_MAX_T = {3: 96, 4: 96}


def _gram_exp_closed(c: Call) -> str | None:
    if c.method != "auto":
        return f"method {c.method!r} requested"
    if c.activation != "exp":
        return f"activation {c.activation!r}: this Gram form is the exponential's"
    if c.d not in CLOSED_EXP_DIMS:
        return f"d={c.d}: the closed form of exp(M) as a polynomial in M covers d in {CLOSED_EXP_DIMS}"
    if c.d >= c.T:
        return f"d={c.d} >= T={c.T}"
    if c.T >= CLOSED_EXP_MAX_T[c.d]:
        return (f"T={c.T} >= {CLOSED_EXP_MAX_T[c.d]}: the QR form measured as fast or faster at d = {c.d} "
                f"(forward+backward, one thread, 65,536 tokens: 0.65-1.3x at T = 96, 1.0-1.5x at T = 128, 1.2-2.2x at "
                f"T = 256)")
    if c.dtype == torch.float64:
        return "float64 input: the QR form's float64 error does not grow with the Gram matrix's conditioning"
    return gram_exp_closed_reason(c.x, c.A)


def _gram_exp_native(c: Call) -> str | None:
    if c.method != "auto":
        return f"method {c.method!r} requested"
    if c.activation != "exp":
        return f"activation {c.activation!r}: this Gram form is the exponential's"
    if not _native_exp.MIN_DIM <= c.d <= _native_exp.MAX_DIM:
        return f"d={c.d}: the native exponential kernels cover {_native_exp.MIN_DIM} <= d <= {_native_exp.MAX_DIM}"
    if c.d >= c.T:
        return f"d={c.d} >= T={c.T}"
    if c.dtype == torch.float64:
        return "float64 input: the structure check is held to the input's eps, which E from the Gram matrix cannot meet"
    if c.device.type != "cpu":
        return f"device {c.device.type}: the native kernels run on the CPU"
    if c.A.dim() != 2:
        return "a batched weighting A: the native kernels take one A for the whole batch"
    why = gram_exp_reason(c.x, c.A)
    if why is not None:
        return why
    ok, reason = _native_exp.exp_native_status(c.d, native_dtype(c.x))
    return None if ok else reason


def _lowrank(c: Call) -> str | None:
    if c.method == "lowrank":
        return None
    return _requested("lowrank")(c) or (None if c.d < c.T else f"d={c.d} >= T={c.T}")


def _checked(run):
    def go(c: Call) -> torch.Tensor:
        if c.check and not _traced(c.A):
            check_skew("A", c.A)
        return run(c)
    return go


_GRAM_PER_SAMPLE = f"|x|_F^2 |A|_F > {GRAM_MAX_SCALE:g}: the QR form in float64"
VP_ATTENTION = register_operation(Operation(
    "vp_attention",
    _bind,
    (
        Route("gram-closed", TRITON.name, _gram_closed_triton,
              _checked(lambda c: vp_gram_closed(c.x, c.A, _triton)),
              per_sample="residual check failed: a pivoted d x d solve; " + _GRAM_PER_SAMPLE,
              claims=("vp.gram_form", "vp.gram_closed_form", "vp.gram_closed_form_vjp")),
        Route("gram-lu", TRITON.name, _gram_lu_triton, _checked(lambda c: vp_gram_closed(c.x, c.A, _triton.LU)),
              per_sample="residual check failed (a zero or non-finite pivot included): a pivoted d x d solve; "
              + _GRAM_PER_SAMPLE, claims=("vp.gram_form", "vp.push_through_invertible", "vp.gram_lu_vjp")),
        Route("gram-exp", TRITON.name, _gram_exp_triton,
              _checked(lambda c: _native_exp.vp_gram_exp_native(c.x, c.A, _native_exp.TRITON)),
              per_sample="structure check E^T G E = G failed, a non-finite entry, or " + _GRAM_PER_SAMPLE,
              claims=("vp.exp_push_through", "vp.gram_exp_vjp", "vp.gram_exp_native_truncation",
                      "vp.gram_exp_native_reverse")),
        Route("full", EAGER.name, _full, _checked(lambda c: nan_isolated(vp_full, c.x, c.A, c.activation)),
              claims=("cayley.orthogonal", "exp.orthogonal")),
        Route("gram-closed", NATIVE.name, _gram_closed_native, _checked(lambda c: vp_gram_closed(c.x, c.A, True)),
              per_sample="residual check failed: a pivoted d x d solve; " + _GRAM_PER_SAMPLE,
              claims=("vp.gram_form", "vp.gram_closed_form", "vp.gram_closed_form_vjp")),
        Route("gram-closed", EAGER.name, _gram_closed, _checked(lambda c: vp_gram_closed(c.x, c.A, False)),
              per_sample="residual check failed: a pivoted d x d solve; " + _GRAM_PER_SAMPLE,
              claims=("vp.gram_form", "vp.gram_closed_form", "vp.gram_closed_form_vjp")),
        Route("gram-lu", NATIVE.name, _gram_lu_native, _checked(lambda c: vp_gram_closed(c.x, c.A, _native_lu)),
              per_sample="residual check failed (a zero or non-finite pivot included): a pivoted d x d solve; "
              + _GRAM_PER_SAMPLE,
              claims=("vp.gram_form", "vp.push_through_invertible", "vp.gram_lu_woodbury", "vp.gram_lu_vjp")),
        Route("gram-lu", EAGER.name, _gram_lu, _checked(lambda c: vp_gram_lu(c.x, c.A)),
              per_sample="residual check failed: a LAPACK d x d solve; " + _GRAM_PER_SAMPLE,
              claims=("vp.gram_form", "vp.push_through_invertible")),
        Route("gram-lu-wide", NATIVE.name, _gram_lu_big_native,
              _checked(lambda c: vp_gram_closed(c.x, c.A, _native_lu_big)),
              per_sample="residual check failed (a zero or non-finite pivot included): a pivoted d x d solve; "
              + _GRAM_PER_SAMPLE,
              claims=("vp.gram_form", "vp.push_through_invertible", "vp.gram_lu_woodbury", "vp.gram_lu_vjp")),
        Route("gram-solve", EAGER.name, _gram, _checked(lambda c: vp_gram_solve(c.x, c.A)),
              per_sample=_GRAM_PER_SAMPLE, claims=("vp.gram_form", "vp.push_through")),
        Route("gram-exp", NATIVE.name, _gram_exp_native, _checked(lambda c: _native_exp.vp_gram_exp_native(c.x, c.A)),
              per_sample="structure check E^T G E = G failed, a non-finite entry, or " + _GRAM_PER_SAMPLE,
              claims=("vp.exp_push_through", "vp.gram_exp_vjp", "vp.gram_exp_native_truncation",
                      "vp.gram_exp_native_reverse")),
        Route("gram-exp-closed", EAGER.name, _gram_exp_closed, _checked(lambda c: vp_gram_exp_closed(c.x, c.A)),
              per_sample="structure check E^T G E = G failed, a non-finite entry, or " + _GRAM_PER_SAMPLE,
              claims=("vp.exp_push_through", "vp.gram_exp_closed_form", "vp.gram_exp_closed_form_vjp",
                      "vp.gram_exp_closed_quartic", "vp.gram_exp_closed_quartic_vjp")),
        Route("gram-exp-wide", NATIVE.name, lambda c: _native_exp_wide.route_reason(c, gram_exp_reason),
              _checked(lambda c: vp_gram_exp_wide(c.x, c.A)),
              per_sample="structure check E^T G E = G failed, a non-finite entry, or " + _GRAM_PER_SAMPLE,
              claims=("vp.exp_push_through", "vp.gram_exp_vjp", "vp.gram_exp_native_truncation",
                      "vp.gram_exp_native_reverse")),
        Route("gram-exp", EAGER.name, _gram_exp, _checked(lambda c: vp_gram_exp(c.x, c.A)),
              per_sample="structure check E^T G E = G failed, a non-finite entry, or " + _GRAM_PER_SAMPLE,
              claims=("vp.exp_push_through", "vp.gram_exp_vjp", "vp.gram_exp_native_truncation",
                      "vp.gram_exp_native_reverse")),
        Route("lowrank", EAGER.name, _lowrank,
              _checked(lambda c: nan_isolated(vp_lowrank, c.x, c.A, c.activation)),
              per_sample="the d x d factor's own per-sample choices (large norms: the eigendecomposition)",
              claims=("vp.lowrank_form", "vp.lowrank_cayley_vjp", "vp.lowrank_exp_vjp")),
    ),
    claims=("vp.map_volume_preserving.skew", "vp.map_volume_preserving.exp_skew"),
    doc="y = f(x A x^T)^T x, f the Cayley transform or exp, A skew",
))


@half_in_float32
def vp_attention(
    x: torch.Tensor, A: torch.Tensor, *, activation: str = "cayley", method: str = "auto", check: bool = True
) -> torch.Tensor:
    r"""Volume-preserving attention in the row layout: :math:`y = f(C)^T x`, :math:`C = x A x^T`.

    ``x`` is ``(..., T, d)`` (the seeds' :math:`Z = x^T`), ``A`` a skew ``d x d``
    matrix and :math:`f` the Cayley transform (``activation="cayley"``) or the
    exponential (``"exp"``); :math:`f(C)` is orthogonal, so :math:`Z \mapsto
    Z f(C(Z))` keeps the norm of every row of ``Z``. Exact forms, chosen by the
    routes of :data:`VP_ATTENTION` (``geoattn.kernels.explain("vp_attention", x, A)``
    says which serves a call, and why the others do not):

    * ``"lowrank"``: thin QR ``x = Q R``, :math:`S = RAR^T`,
      :math:`y = x + Q(f(S) - I)^T R` (ledger ``vp.lowrank_form``), with the
      derived backward passes ``vp.lowrank_cayley_vjp`` and
      ``vp.lowrank_exp_vjp``; :math:`O(T d^2)` time and memory, no ``T x T``
      tensor;
    * ``"gram"`` (Cayley only): :math:`y = 2x(I + x^Tx\,A)^{-T} - x` with the
      ``d x d`` Gram matrix (ledger ``vp.gram_form``), computed in float64; no
      ``T x T`` tensor, no QR. For ``d <= 4`` and one weighting ``A`` the
      ``d x d`` inverse and the backward are closed forms
      (``vp.gram_closed_form``, ``vp.gram_closed_form_vjp``,
      :mod:`geoattn.kernels._gram`): no LAPACK call for the samples that pass
      their residual check, a ``d x d`` solve for the others; on CPU they run
      as C kernels printed from the same bindings (:func:`native_status`);
      otherwise a pivoted solve differentiated by autograd;
    * ``"full"``: the ``T x T`` matrices, as the seeds write the layer;
    * ``"auto"`` (default): when ``d < T``, ``"gram"`` for the Cayley transform of
      float32 or half inputs, the exponential's Gram form :math:`y = x\exp(-Ax^Tx)`
      (:mod:`geoattn.kernels._gram_exp`) for the exponential of float32 or half
      inputs (in closed form at ``d = 3, 4``, :mod:`geoattn.kernels._gram_exp_closed`), and ``"lowrank"``
      otherwise; ``"full"`` when ``d >= T`` (Note
      [choice of form]).

    Skew samples of large norm take the eigendecomposition for the Cayley
    transform (Note [Cayley at large norms]) and :func:`exp_skew`'s per-sample
    choice for the exponential, so :math:`f(C)` stays orthogonal at every
    magnitude. Double backward and nested ``torch.func`` gradients recompute
    through the ``"full"`` form (``T x T`` matrices); ``loss.backward()`` does
    not.

    Parameters
    ----------
    x : Tensor ``(..., T, d)``
    A : Tensor ``(d, d)`` or batched ``(..., d, d)``, skew-symmetric, of ``x``'s dtype and device
    activation : ``"cayley"`` or ``"exp"``
    method : ``"auto"``, ``"lowrank"``, ``"gram"`` or ``"full"``
    check : bool
        verify that ``A`` is skew-symmetric (both forms assume it).

    Examples
    --------
    >>> x = torch.randn(2, 50, 3, dtype=torch.float64)
    >>> A = torch.randn(3, 3, dtype=torch.float64); A = A - A.T
    >>> y = vp_attention(x, A)                       # no 50 x 50 matrix is formed
    >>> torch.allclose(y, vp_attention(x, A, method="full"))
    True
    >>> torch.allclose(y.norm(dim=-2), x.norm(dim=-2))   # rows of Z keep their norms
    True
    """
    return dispatch("vp_attention", x, A, activation=activation, method=method, check=check)
