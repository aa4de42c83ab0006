r"""The operation ``exp_skew``: the exponential of skew-symmetric matrices, its checks and routes.

Routes, in order: ``empty`` (``T = 0``), ``closed-small/triton`` (``T <= 4``, ``method="auto"``, float32 or half on
CUDA: the closed form ``exp_skew.hodge_form`` and its VJP ``exp_skew.hodge_vjp`` as printed Triton kernels, Note
[exp_skew Triton kernel] in
:mod:`geoattn.kernels._exp_triton`), ``taylor/eager`` (``method="taylor"``: scaling and squaring of a Taylor
polynomial), ``eigh/eager`` (``method="eigh"``, and every call traced by ``torch.func``, ``torch.compile`` or on the
meta device), ``taylor-batched/eager`` (``method="auto"``, float64 on the CPU, ``T >= 2``: the batched scaling
and squaring of the native exponential stage, per sample up to norm 512, the eigendecomposition above; Note
[exp_skew in float64] in :mod:`geoattn.kernels._exp_batched`), ``taylor-or-eigh/eager`` (``method="auto"``: per
sample, Taylor up to norm 512, the eigendecomposition above; Note [large norms] in :mod:`geoattn.kernels._exp`).
"""

from __future__ import annotations

import torch

from ..errors import OptionError
from . import _triton
from ._backends import EAGER, TRITON
from ._checks import check_skew, check_square, half_in_float32
from ._exp import EXP_CLOSED_MAX, TAYLOR_MAX_NORM, run_exp_skew
from ._exp_batched import MIN_T as BATCHED_MIN_T
from ._exp_batched import exp_skew_batched
from ._functions import _traced
from .dispatch import Call, Operation, Route, dispatch, register_operation

__all__ = ["exp_skew", "EXP_SKEW"]

_METHODS = ("auto", "taylor", "eigh")


def _bind(S: torch.Tensor, *, method: str = "auto", check: bool = True) -> Call:
    check_square("S", S)
    if method not in _METHODS:
        raise OptionError(f"Expected method in {_METHODS}. Got {method!r}.")
    traced = _traced(S)
    if method == "taylor" and traced and S.shape[-1] > 0:
        raise OptionError(
            "Expected method 'auto' or 'eigh' inside torch.func transforms, torch.compile or on the meta device "
            "(the Taylor path's number of squarings depends on the data). Got method='taylor'."
        )
    return Call(S=S, method=method, check=check, device=S.device, traced=traced)


def _checked(path: str):
    def run(c: Call) -> torch.Tensor:
        if c.check and not c.traced:
            check_skew("S", c.S)
        return run_exp_skew(c.S, path)
    return run


def _empty(c: Call) -> str | None:
    return None if c.S.shape[-1] == 0 else "T > 0"


def _requested(name: str):
    def when(c: Call) -> str | None:
        if c.method == name:
            return None
        if name == "eigh" and c.method == "auto" and c.traced:
            return None
        return f"method {c.method!r}" + (" (untraced: decided per sample)" if name == "eigh" else "")
    return when


def _closed_triton(c: Call) -> str | None:
    if c.method != "auto":
        return f"method {c.method!r}"
    if c.S.dtype not in _triton.REALS:
        return f"{c.S.dtype}: the Triton kernels take float32, float16 or bfloat16"
    if c.S.shape[-1] > EXP_CLOSED_MAX:
        return f"T={c.S.shape[-1]} > {EXP_CLOSED_MAX}: no closed form (exp_skew.hodge_form is of 4 x 4 matrices)"
    if c.S.numel() == 0:
        return "an empty input"
    if c.traced:
        return "traced (torch.func, torch.compile or meta): the per-sample skew check branches on the data"
    return None


def _run_closed_triton(c: Call) -> torch.Tensor:
    from ._exp_triton import exp_skew_small

    if c.check:
        check_skew("S", c.S)
    return exp_skew_small(c.S)


def _batched(c: Call) -> str | None:
    if c.method != "auto":
        return f"method {c.method!r}"
    if c.S.dtype != torch.float64:
        return f"{c.S.dtype}: the batched degree-16 scheme is float64's"
    if c.S.shape[-1] < BATCHED_MIN_T:
        return f"T={c.S.shape[-1]} < {BATCHED_MIN_T}: nothing to square"
    if c.device.type != "cpu":
        return f"{c.device.type}: measured on the CPU only"
    if c.traced:
        return "traced (torch.func, torch.compile or meta): the number of squarings depends on the data"
    return None


def _run_batched(c: Call) -> torch.Tensor:
    if c.check:
        check_skew("S", c.S)
    return exp_skew_batched(c.S)


EXP_SKEW = register_operation(Operation(
    "exp_skew",
    _bind,
    (
        Route("empty", EAGER.name, _empty, lambda c: c.S.clone()),
        Route("closed-small", TRITON.name, _closed_triton, _run_closed_triton,
              per_sample="samples not skew up to the tolerance (NaN and infinite ones included) take the eager auto "
                         "path and its backward; the skew samples' backward is the printed VJP kernel (the skew "
                         "projection of the gradient)",
              claims=("exp_skew.hodge_form", "exp_skew.hodge_vjp", "exp_skew.hodge_vjp_series", "exp_skew.taylor_vjp",
                      "exp_skew.square_vjp", "exp_skew.vjp")),
        Route("taylor", EAGER.name, _requested("taylor"), _checked("taylor"),
              claims=("exp_skew.taylor_form", "exp_skew.taylor_remainder", "exp_skew.scaling_squaring",
                      "exp_skew.taylor_vjp", "exp_skew.square_vjp")),
        Route("eigh", EAGER.name, _requested("eigh"), _checked("eigh"), claims=("exp_skew.eigh_form", "exp_skew.vjp")),
        Route("taylor-batched", EAGER.name, _batched, _run_batched,
              per_sample=f"Taylor up to norm {TAYLOR_MAX_NORM:g}, the eigendecomposition above (Note [large norms]); "
                         "non-finite samples NaN",
              claims=("vp.gram_exp_native_truncation", "vp.gram_exp_native_reverse", "exp_skew.eigh_form",
                      "exp_skew.vjp")),
        Route("taylor-or-eigh", EAGER.name, lambda c: None, _checked("auto"),
              per_sample=f"Taylor up to norm {TAYLOR_MAX_NORM:g}, the eigendecomposition above (Note [large norms])",
              claims=("exp_skew.taylor_form", "exp_skew.eigh_form")),
    ),
    claims=("exp.orthogonal", "exp.det_one"),
    doc="exp(S) of skew S, batched",
))


@half_in_float32
def exp_skew(S: torch.Tensor, *, method: str = "auto", check: bool = True) -> torch.Tensor:
    r"""The matrix exponential of a skew-symmetric matrix, batched.

    The result is orthogonal with determinant 1 (ledger ``exp.orthogonal``,
    ``exp.det_one``). Two exact methods, each with its own derived backward:

    * ``"taylor"``: scaling and squaring, :math:`\exp(S) = p_m(S/2^k)^{2^k}`
      with :math:`\|S/2^k\|_1 \le \tfrac12` and the Taylor polynomial
      :math:`p_m` of degree 16 (float64) or 9 (float32), whose truncation
      error is below the unit roundoff (ledger ``exp_skew.taylor_form``,
      ``exp_skew.taylor_remainder``, ``exp_skew.scaling_squaring``). Only
      batched products run, forward and backward (``exp_skew.taylor_vjp``,
      ``exp_skew.square_vjp``).
    * ``"eigh"``: the Hermitian eigendecomposition :math:`iS = U\,\mathrm{diag}(\theta)U^H`,
      :math:`\exp(S) = \operatorname{Re}(U\,\mathrm{diag}(e^{-i\theta})U^H)`
      (``exp_skew.eigh_form``) with the Daleckii--Krein backward
      (``exp_skew.vjp``). No squarings, so no rounding grows with
      :math:`\|S\|` through them; slower on CPU for small matrices.
    * ``"auto"`` (default): per sample, ``"taylor"`` up to
      :math:`\max(\|S\|_1, \|S\|_\infty) = 512` (with one Newton--Schulz
      step after more than three squarings; on the ``taylor-batched`` route
      below, above norm :math:`8T`) and ``"eigh"`` above, where the
      squarings would cost orthogonality (Note [large norms]); ``"eigh"``
      for the whole batch inside ``torch.func`` transforms (``vmap``,
      ``jacrev``), under ``torch.compile`` and on the meta device, where the
      number of squarings may not depend on the data. On the CPU in float64 with
      ``T >= 2`` the Taylor samples take the batched degree-16 scheme of the
      native exponential stage instead, with its exact reverse mode (route
      ``taylor-batched``, Note [exp_skew in float64]).

    Each sample has its own number of squarings, so its result does not depend
    on the rest of the batch (Note [scaling and squaring]). Double backward is
    supported by both methods. What composes: ``vmap``, ``jacrev``/``vjp``,
    ``torch.compile`` and the meta device take the eigendecomposition path;
    ``check`` is skipped there (it would branch on the data).
    On CUDA, float32 and half inputs with ``T <= 4`` under ``"auto"`` take a
    Triton kernel of the closed form ``exp_skew.hodge_form`` instead (route
    ``closed-small/triton``; Note [exp_skew Triton kernel]), whose backward
    returns the skew part :math:`(\bar E - \bar E^T)/2` of the gradient
    (``exp_skew.hodge_vjp``), where the other routes return the whole Fréchet
    adjoint: the two agree through a skew parametrisation such as
    :math:`S = C - C^T`, and a step along the skew gradient keeps a skew
    leaf skew.
    ``geoattn.kernels.explain("exp_skew", S)`` says which route computes it.

    Parameters
    ----------
    S : Tensor ``(..., T, T)``, skew-symmetric
    method : ``"auto"``, ``"taylor"`` or ``"eigh"``
    check : bool
        verify skew-symmetry (up to ``8 n eps`` relative); for a non-skew
        input the eigendecomposition would silently use one triangle only.

    Examples
    --------
    >>> S = torch.randn(5, 4, 4, dtype=torch.float64); S = S - S.mT
    >>> E = exp_skew(S)
    >>> torch.allclose(E, torch.linalg.matrix_exp(S))
    True
    >>> torch.allclose(E.mT @ E, torch.eye(4, dtype=torch.float64).expand(5, 4, 4))
    True
    """
    return dispatch("exp_skew", S, method=method, check=check)
