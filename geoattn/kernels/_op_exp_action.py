r"""The operation ``exp_skew_action``: ``exp(S) x`` for skew ``S`` (``T x T``) and ``x`` (``T x d``), batched.

Routes, in order: ``empty`` (``T = 0`` or ``d = 0``), ``chebyshev/native`` (the same expansion by the generated C
kernel of :mod:`geoattn.kernels._native_exp_action`: CPU, float32 or float64, ``T <= 256``, ``d <= 16``, the kernel
built), ``chebyshev/eager`` (the Chebyshev expansion of the action,
Note [the Chebyshev action] in :mod:`geoattn.kernels._exp_action`; per sample, samples whose degree would exceed
the limit, or whose norm is not finite, take ``exp_skew`` formed densely), ``dense/eager`` (``exp_skew(S) @ x``:
``method="dense"``, and every call traced by ``torch.func``, ``torch.compile`` or on the meta device).
"""

from __future__ import annotations

import math

import torch

from ..errors import OptionError, ShapeError
from ._backends import EAGER, NATIVE
from ._checks import check_float, check_matmul, check_same, check_skew, check_square, half_in_float32
from ._exp import run_exp_skew
from ._exp_action import MAX_DEGREE, exp_skew_action_chebyshev, norm_bound, sample_degrees
from ._functions import _traced, merge_samples
from ._native_exp_action import MAX_K, MAX_T, exp_action_native_status, exp_skew_action_native
from .dispatch import Call, Operation, Route, dispatch, register_operation

__all__ = ["exp_skew_action", "EXP_SKEW_ACTION", "degree_limit", "native_reason", "DENSE_RATIO"]

_METHODS = ("auto", "chebyshev", "dense")


# Note [the action or the dense exponential]
# -------------------------------------------
# The action costs about m T^2 d multiply-adds forward (m the degree, d the columns) and three times that with the
# backward; exp(S) formed by scaling and squaring about (6 + s) T^3, whatever d. So a sample whose m d is large
# against T is cheaper dense. Measured (one thread, float32, the layer's S, forward+backward, the action against
# exp_skew(S) @ x with autograd; ratio action / dense at m d / T): native kernel 0.26 at 7.5 (d = 8, T = 64), 0.37
# at 6.8 (8, 128), 0.55 at 13.2 (16, 128), 0.63 at 18.1 (16, 64), 0.54 at 21.0 (16, 32); eager form 0.90 at 6.9
# (8, 64), 1.20 at 16.0 (16, 64), 1.79 at 21.7 (16, 32), 2.24 at 36.5 (32, 128); at d = 32, T = 64 (m d / T = 42)
# the layer took 1446 ms through the eager action and 776 ms dense. The eager threshold lies between measured points;
# no measured native point reached the crossover (0.63 at 18.1 is the closest), so its 32 extrapolates the ratio's
# growth, about 0.03 per unit of m d / T. Both were measured on one CPU thread; the eager one serves CUDA calls
# too, unmeasured there. Per sample, a degree with m d above
# DENSE_RATIO[backend] * T takes the dense form (a decision on the sample's own norm: batch independent) under
# method="auto"; method="chebyshev" keeps the action up to the degree limit.
#: per route backend, the m d / T above which a sample takes exp(S) formed densely (Note [the action or the dense
#: exponential])
DENSE_RATIO = {"native": 32, "eager": 10}


def degree_limit(T: int) -> int:
    """The largest Chebyshev degree served at sequence length ``T`` before the dense exponential is cheaper
    (measured: Note [the Chebyshev action] and the operation's docstring)."""
    return min(MAX_DEGREE, max(48, 2 * T))


def _bind(S: torch.Tensor, x: torch.Tensor, *, method: str = "auto", check: bool = True) -> Call:
    check_float("S", S)
    check_square("S", S)
    check_matmul("S", S, "x", x)
    check_same(("S", S), ("x", x))
    if S.shape[:-2] != x.shape[:-2]:
        raise ShapeError(f"Expected S and x with the same batch shape. Got S {tuple(S.shape)} and x "
                          f"{tuple(x.shape)}.")
    if method not in _METHODS:
        raise OptionError(f"Expected method in {_METHODS}. Got {method!r}.")
    traced = _traced(S) or _traced(x)
    if method == "chebyshev" and traced:
        raise OptionError("Expected method 'auto' or 'dense' inside torch.func transforms, torch.compile or on the "
                          "meta device (the Chebyshev degree depends on the data). Got method='chebyshev'.")
    return Call(S=S, x=x, method=method, check=check, traced=traced, device=S.device)


def _empty(c: Call) -> str | None:
    return None if c.S.shape[-1] == 0 or c.x.shape[-1] == 0 else "T > 0 and d > 0"


def _dense(S: torch.Tensor, x: torch.Tensor, traced: bool = False) -> torch.Tensor:
    # traced calls take the eigendecomposition, as exp_skew does (the Taylor path's squarings depend on the data)
    return run_exp_skew(S, "eigh" if traced else "auto") @ x


def _run_dense(c: Call) -> torch.Tensor:
    if c.check and not c.traced:
        check_skew("S", c.S)
    return _dense(c.S, c.x, c.traced)


def _run_chebyshev(c: Call, native: bool = False) -> torch.Tensor:
    if c.check:
        check_skew("S", c.S)
    T, d = c.S.shape[-1], c.x.shape[-1]
    S = c.S.reshape(-1, T, T)
    x = c.x.reshape(-1, T, d)
    ratio = DENSE_RATIO["native" if native else "eager"] if c.method == "auto" else math.inf
    # the cost rule only under "auto"; method="chebyshev" keeps the action wherever it is exact
    rho, degree, served = sample_degrees(norm_bound(S), T, d, S.dtype, degree_limit(T), ratio)
    action = exp_skew_action_native if native else exp_skew_action_chebyshev
    if bool(served.all()):
        return action(S, x, rho, degree, degree_limit(T)).reshape(c.x.shape)
    idx, rest = served.nonzero().squeeze(-1), (~served).nonzero().squeeze(-1)
    dense = _dense(S[rest], x[rest])
    if not idx.numel():
        return dense.reshape(c.x.shape)
    return merge_samples(idx, action(S[idx], x[idx], rho[idx], degree[idx], degree_limit(T)), rest,
                         dense).reshape(c.x.shape)


def _chebyshev_when(c: Call) -> str | None:
    if c.method == "dense":
        return "method 'dense'"
    if c.traced:
        return "traced (torch.func, torch.compile or meta): the degree depends on the data"
    return None


def _native_when(c: Call) -> str | None:
    why = _chebyshev_when(c)
    if why is not None:
        return why
    return native_reason(c.device, c.S.dtype, c.S.shape[-1], c.x.shape[-1])


def native_reason(device: torch.device, dtype: torch.dtype, T: int, d: int) -> str | None:
    """None when the native Chebyshev kernels serve ``T x T`` matrices on ``d`` columns of ``dtype`` on ``device``
    (and are built), else why not; shared by ``exp_skew_action`` and ``exp_uta_action``."""
    if device.type != "cpu":
        return f"device {device.type}: the native kernel runs on the CPU"
    if dtype not in (torch.float32, torch.float64):
        return f"{dtype}: the native kernel takes float32 or float64"
    if T > MAX_T:
        return f"T={T}: the native kernel serves T <= {MAX_T}"
    if d > MAX_K:
        return f"d={d}: the native kernel serves at most {MAX_K} columns"
    ok, why = exp_action_native_status(d, dtype)
    return None if ok else why


EXP_SKEW_ACTION = register_operation(Operation(
    "exp_skew_action",
    _bind,
    (
        Route("empty", EAGER.name, _empty, lambda c: c.x.clone()),
        Route("chebyshev", NATIVE.name, _native_when, lambda c: _run_chebyshev(c, native=True),
              per_sample="degree m from the Bessel tail bound at rho = (||S^2||_F^2 / 2)^(1/4), each sample run "
              "to its own degree; above the degree limit, m d > 32 T or a non-finite norm: exp_skew formed densely",
              claims=("exp_action.chebyshev_recurrence", "exp_action.chebyshev_adjoint",
                      "exp_action.truncation_bound", "exp_action.skew_square_norm_bound")),
        Route("chebyshev", EAGER.name, _chebyshev_when, _run_chebyshev,
              per_sample="degree m from the Bessel tail bound at rho = (||S^2||_F^2 / 2)^(1/4); above "
              "the degree limit, m d > 10 T or a non-finite norm: exp_skew formed densely",
              claims=("exp_action.chebyshev_recurrence", "exp_action.truncation_bound",
                      "exp_action.skew_square_norm_bound")),
        Route("dense", EAGER.name, lambda c: None, _run_dense,
              claims=("exp_skew.taylor_form", "exp_skew.eigh_form")),
    ),
    claims=("exp.orthogonal",),
    doc="exp(S) x of skew S (T x T) on the columns of x (T x d), batched",
))


@half_in_float32
def exp_skew_action(S: torch.Tensor, x: torch.Tensor, *, method: str = "auto", check: bool = True) -> torch.Tensor:
    r"""``exp(S) x`` for skew-symmetric ``S``, without forming ``exp(S)`` where the Chebyshev form serves.

    ``"auto"`` (default) and ``"chebyshev"``: per sample, the Chebyshev expansion
    :math:`\exp(S)x = \sum_{k\le m} c_k w_k`, :math:`c_0 = J_0(\rho)`, :math:`c_k = 2J_k(\rho)`,
    :math:`w_0 = x`, :math:`w_1 = Xx`, :math:`w_{k+1} = 2Xw_k + w_{k-1}`, :math:`X = S/\rho`, with
    :math:`\rho = (\|S^2\|_F^2/2)^{1/4} \ge \|S\|_2` (ledger ``exp_action.skew_square_norm_bound``) and the degree
    :math:`m` the smallest whose truncation bound
    :math:`2(\rho/2)^{m+1}/(m+1)!\,/(1 - \rho/(2(m+2)))` is below the unit roundoff (ledger
    ``exp_action.chebyshev_recurrence``, ``exp_action.truncation_bound``). ``m`` products of ``T x T`` by
    ``T x d`` forward, as many backward (Note [the Chebyshev action]). Samples whose degree exceeds
    :func:`degree_limit` (``max(48, 2T)``, at most 160), whose norm is not finite, or (``"auto"``) whose
    ``m d`` exceeds :data:`DENSE_RATIO` times ``T`` (Note [the action or the dense exponential]), take
    ``exp_skew(S) @ x``; so does the whole call with ``method="dense"`` and inside ``torch.func``,
    ``torch.compile`` or on the meta device.

    A sample's result does not depend on the rest of the batch (its coefficients past its own degree are zero).
    ``geoattn.kernels.explain("exp_skew_action", S, x)`` says which route computes it.

    Parameters
    ----------
    S : Tensor ``(..., T, T)``, skew-symmetric
    x : Tensor ``(..., T, d)``, the same batch shape
    method : ``"auto"``, ``"chebyshev"`` or ``"dense"``
    check : bool
        verify skew-symmetry (up to ``8 n eps`` relative)

    Returns
    -------
    Tensor ``(..., T, d)``

    Examples
    --------
    >>> S = torch.randn(5, 6, 6, dtype=torch.float64); S = S - S.mT
    >>> x = torch.randn(5, 6, 2, dtype=torch.float64)
    >>> torch.allclose(exp_skew_action(S, x), torch.linalg.matrix_exp(S) @ x)
    True
    """
    return dispatch("exp_skew_action", S, x, method=method, check=check)
