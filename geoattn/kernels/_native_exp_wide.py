r"""The exponential layer's ``d x d`` stage for ``17 <= d <= 64`` in C: the batched Taylor exponential of
:mod:`geoattn.kernels._taylor_exp` and its reverse mode, one sample at a time (Note [wide exponential stage] in
:mod:`geoattn.codegen.gram_exp_wide_c`, which prints ``_native_gram_exp_wide.c``).

:func:`stage_exp` and :func:`stage_exp_adjoint` take and return what :func:`geoattn.kernels._taylor_exp.taylor_exp`
and :func:`~geoattn.kernels._taylor_exp.taylor_exp_adjoint` do, with the same per-sample ``s`` and the same failed
samples, so :func:`geoattn.kernels._gram_exp.vp_gram_exp` runs either under the same structure check and fallbacks.
Libraries are built, cached and loaded as those of :mod:`geoattn.kernels._native` (Note [native kernels]), one per
``d``.
"""

from __future__ import annotations

import ctypes
import os
import threading

import torch

from . import _native
from ._taylor_exp import shifts

__all__ = ["SOURCE", "MIN_DIM", "MAX_DIM", "SLOTS", "FUSED_MAX_DIM", "build", "library",
           "exp_wide_status", "route_reason", "StageExp", "stage_exp", "stage_exp_adjoint"]

#: the generated C source
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native_gram_exp_wide.c")
#: the widths the stage covers and the matrices of a sample's record before its squarings
#: (geoattn.codegen.gram_exp_wide_c.MIN_DIM, MAX_DIM, SLOTS: a test keeps them equal)
MIN_DIM, MAX_DIM, SLOTS = 17, 64, 9
#: the widths up to which the token products run in C with the stage (geoattn.kernels._gram_exp_fused)
FUSED_MAX_DIM = 32
_RESTYPES = {"vp_gram_exp_wide_fwd": ctypes.c_int, "vp_gram_exp_wide_bwd": ctypes.c_int,
             "vp_gram_exp_wide_tok_fwd": ctypes.c_int, "vp_gram_exp_wide_tok_bwd": ctypes.c_int}
_lock = threading.Lock()
_libraries: dict = {}  # (d, real) -> CDLL, or the reason it could not be built


def build(d: int, source: str = SOURCE, real: str = "f64") -> ctypes.CDLL | str:
    """Compile (or find in the cache) and load the stage of width ``d`` from the C file ``source``; a string says
    why not. The tests build a broken stage with it.

    Parameters
    ----------
    d : int
    source : str
    real : str
        the tokens' type of the fused kernels, ``"f32"`` or ``"f64"`` (the stage is double in both)

    Returns
    -------
    ctypes.CDLL or str
    """
    return _native.bind(_native.build(d, real, source), d, real, source, _RESTYPES)


def library(d: int, real: str = "f64") -> ctypes.CDLL | str:
    """The stage of width ``d`` whose fused kernels take tokens of type ``real`` (built once), or why not.

    Parameters
    ----------
    d : int
    real : str
        ``"f32"`` or ``"f64"``

    Returns
    -------
    ctypes.CDLL or str
    """
    if not MIN_DIM <= d <= MAX_DIM:
        return f"d={d}: the native wide exponential stage covers {MIN_DIM} <= d <= {MAX_DIM}"
    return _native.load(_libraries, _lock, (d, real), lambda dd, rr: build(dd, real=rr))


def _library(d: int) -> ctypes.CDLL | str:
    return library(d, "f64")


def exp_wide_status(d: int) -> tuple[bool, str]:
    """Whether the native wide exponential stage of width ``d`` can run here, and why not.

    Parameters
    ----------
    d : int
        the feature size (17 to 64)

    Returns
    -------
    (bool, str)

    Examples
    --------
    >>> exp_wide_status(8)
    (False, 'd=8: the native wide exponential stage covers 17 <= d <= 64')
    """
    lib = _library(d)
    return (True, "native stage built") if not isinstance(lib, str) else (False, lib)


def route_reason(c, gram_exp_reason) -> str | None:
    """None when the route ``gram-exp-wide/native`` of ``vp_attention`` serves the call ``c``, else why not.

    Parameters
    ----------
    c : geoattn.kernels.dispatch.Call
    gram_exp_reason : callable
        :func:`geoattn.kernels._gram_exp.gram_exp_reason` (the Gram form's own conditions)

    Returns
    -------
    str or None
    """
    if c.method != "auto":
        return f"method {c.method!r} requested"
    if c.activation != "exp":
        return f"activation {c.activation!r}: this Gram form is the exponential's"
    if not MIN_DIM <= c.d <= MAX_DIM:
        return f"d={c.d}: the native wide exponential stage covers {MIN_DIM} <= d <= {MAX_DIM}"
    if c.d >= c.T:
        return f"d={c.d} >= T={c.T}"
    if c.dtype == torch.float64:
        return "float64 input: the QR form's float64 error does not grow with the Gram matrix's conditioning"
    why = gram_exp_reason(c.x, c.A)
    return why if why is not None else (None if exp_wide_status(c.d)[0] else exp_wide_status(c.d)[1])


class StageExp:
    """What :func:`stage_exp` computed and :func:`stage_exp_adjoint` needs.

    Attributes
    ----------
    E : Tensor ``(n, d, d)``
        the exponentials (the identity for failed samples)
    failed : Tensor ``(n,)`` of bool
        samples with a non-finite norm or too many squarings
    """

    def __init__(self, E, failed, shift, M, lib):
        self.E, self.failed, self.shift, self.M, self.lib = E, failed, shift, M, lib


def _fn(lib, name: str, d: int, real: str = "f64"):
    return getattr(lib, f"geoattn_{name}_d{d}_{real}")


def stage_exp(M: torch.Tensor, library: ctypes.CDLL | None = None) -> StageExp:
    r""":math:`\exp(M)` per sample by the algorithm of :func:`geoattn.kernels._taylor_exp.taylor_exp`, in C.

    Parameters
    ----------
    M : Tensor ``(n, d, d)``, float64, CPU, ``17 <= d <= 64``
    library : ctypes.CDLL, optional
        a stage built by :func:`build` (the tests' broken stage); by default that of ``d``

    Returns
    -------
    StageExp
    """
    if M.dim() != 3 or M.shape[-1] != M.shape[-2] or M.dtype != torch.float64 or M.device.type != "cpu":
        raise ValueError(f"Expected a float64 CPU tensor of shape (n, d, d). Got {M.dtype} on {M.device} of shape "
                         f"{tuple(M.shape)}.")
    n, d = M.shape[0], M.shape[-1]
    lib = library if library is not None else _library(d)
    if isinstance(lib, str):
        raise RuntimeError(f"Expected the native wide exponential stage to be available. Got: {lib}.")
    s, failed = shifts(M)
    if bool(failed.any()):
        M = torch.where(failed[:, None, None], torch.zeros((), dtype=M.dtype), M)
    M = M.contiguous()
    s32 = s.to(torch.int32).contiguous()
    smax = int(s.max()) if n else 0
    E = torch.empty(n, d, d, dtype=torch.float64)
    if n:
        _native.run_checked(_fn(lib, "vp_gram_exp_wide_fwd", d), n, smax, [(M, True), (s32, True), (E, True)])
    return StageExp(E, failed, s32, M, lib)


def stage_exp_adjoint(t: StageExp, gE: torch.Tensor) -> torch.Tensor:
    r"""The reverse mode of :func:`stage_exp`: :math:`\bar M` from :math:`\bar E` (ledger
    ``vp.gram_exp_native_reverse``), the exact gradient of the computed ``E`` (zero for failed samples).

    Parameters
    ----------
    t : StageExp
        the forward's record
    gE : Tensor ``(n, d, d)``, float64
        the gradient in ``E``

    Returns
    -------
    Tensor ``(n, d, d)``
    """
    n, d = t.E.shape[0], t.E.shape[-1]
    if gE.shape != t.E.shape or gE.dtype != torch.float64:
        raise ValueError(f"Expected a float64 gradient of shape {tuple(t.E.shape)}. Got {gE.dtype} of shape "
                         f"{tuple(gE.shape)}.")
    gE = gE.contiguous()
    gM = torch.empty_like(t.E)
    if n:
        _native.run_checked(_fn(t.lib, "vp_gram_exp_wide_bwd", d), n, int(t.shift.max()),
                            [(t.M, True), (t.shift, True), (gE, True), (gM, True)])
    if bool(t.failed.any()):
        gM = torch.where(t.failed[:, None, None], torch.zeros((), dtype=gM.dtype), gM)
    return gM
