"""Argument checks and the dtype policy shared by the kernels."""

from __future__ import annotations

import functools

import torch

from ..errors import DeviceError, DtypeError, ShapeError, StructureError

__all__ = [
    "KernelShapeError",
    "KernelDtypeError",
    "check_square",
    "check_same",
    "check_float",
    "check_matmul",
    "half_in_float32",
    "skew_tolerance",
    "tolerance_at",
    "check_skew",
]


#: the names these classes had before :mod:`geoattn.errors` (the same classes)
KernelShapeError = ShapeError
KernelDtypeError = DtypeError


_HALF = (torch.float16, torch.bfloat16)


def check_float(name: str, t: torch.Tensor) -> None:
    if not isinstance(t, torch.Tensor):
        raise DtypeError(f"Expected {name} to be a torch.Tensor. Got {type(t).__name__}.")
    if not t.is_floating_point():
        raise DtypeError(f"Expected {name} to have a floating dtype. Got {t.dtype}.")


def check_same(*named: tuple[str, torch.Tensor], dtype: bool = True) -> None:
    """Raise unless the tensors ``(name, tensor)`` share one device (and, with ``dtype=True``, one dtype).

    The meta device is no exception: a meta tensor beside a CPU one would give a result of made-up values.
    """
    (n0, t0), rest = named[0], named[1:]
    for name, t in rest:
        if t.device != t0.device:
            raise DeviceError(f"Expected {n0} and {name} on one device. Got {n0} on {t0.device} and {name} on "
                              f"{t.device}.")
        if dtype and t.dtype != t0.dtype:
            raise DtypeError(f"Expected {n0} and {name} of one dtype. Got {n0} {t0.dtype} and {name} {t.dtype}.")


def check_square(name: str, t: torch.Tensor) -> None:
    check_float(name, t)
    if t.dim() < 2 or t.shape[-1] != t.shape[-2]:
        raise ShapeError(
            f"Expected {name} to be square in its last two dimensions, (..., n, n). Got shape {tuple(t.shape)}."
        )


def check_matmul(left: str, a: torch.Tensor, right: str, b: torch.Tensor) -> None:
    if b.dim() < 2 or a.shape[-1] != b.shape[-2]:
        raise ShapeError(
            f"Expected {right} to have {a.shape[-1]} rows to match {left} of shape {tuple(a.shape)}. "
            f"Got shape {tuple(b.shape)}."
        )


def half_in_float32(fn):
    """Decorator: float16/bfloat16 tensor arguments are computed in float32; the result
    is cast back to the first argument's half dtype."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        dtypes = [a.dtype for a in args if isinstance(a, torch.Tensor)]
        if dtypes and dtypes[0] in _HALF:
            out_dtype = dtypes[0]
            args = tuple(a.float() if isinstance(a, torch.Tensor) and a.dtype in _HALF else a for a in args)
            out = fn(*args, **kwargs)
            if isinstance(out, tuple):
                return tuple(o.to(out_dtype) for o in out)
            return out.to(out_dtype)
        return fn(*args, **kwargs)

    return wrapper


def skew_tolerance(t: torch.Tensor, k: float = 8.0) -> torch.Tensor:
    """``k * n * eps(dtype) * max(1, |t|_max)`` per matrix."""
    return tolerance_at(t.shape[-1], t.dtype, t.detach().abs().amax(dim=(-2, -1)), k)


def tolerance_at(n: int, dtype: torch.dtype, size: torch.Tensor, k: float = 8.0) -> torch.Tensor:
    """:func:`skew_tolerance` of ``n x n`` matrices of ``dtype`` whose largest entries ``|t|_max`` are ``size``."""
    return (k * n * torch.finfo(dtype).eps) * size.clamp_min(1.0)


def skew_defect(t: torch.Tensor) -> torch.Tensor:
    """Per matrix, ``max |t + t^T|`` (zero exactly for skew-symmetric matrices)."""
    return (t.detach() + t.detach().mT).abs().amax(dim=(-2, -1))


def check_skew(name: str, t: torch.Tensor) -> None:
    """Raise unless ``t + t^T`` vanishes up to :func:`skew_tolerance` (nothing to check when empty)."""
    if t.numel() == 0:
        return
    defect = skew_defect(t)
    tol = skew_tolerance(t)
    # an infinite defect (a pair c_ij, c_ji of one sign, at least one infinite) is never skew, whatever the
    # tolerance of an infinite matrix; a NaN defect is not flagged: NaN propagates, sample by sample
    bad = (defect > tol) | torch.isposinf(defect)
    if bool(bad.any()):
        raise StructureError(
            f"Expected {name} to be skew-symmetric (|{name} + {name}^T| <= {float(tol[bad].max()):.3g}). "
            f"Got |{name} + {name}^T| = {float(defect[bad].max()):.3g}."
        )


def check_tokens_and_weighting(x: torch.Tensor, A: torch.Tensor) -> None:
    """Check ``x`` of shape ``(..., T, d)`` and a square weighting ``A`` of ``x``'s ``d``, dtype and device (the
    volume-preserving operations' arguments)."""
    check_float("x", x)
    check_square("A", A)
    check_same(("x", x), ("A", A))
    if x.dim() < 2:
        raise ShapeError(f"Expected x of shape (..., T, d). Got shape {tuple(x.shape)}.")
    if x.shape[-1] != A.shape[-1]:
        raise ShapeError(f"Expected x with d = {A.shape[-1]} features to match A of shape {tuple(A.shape)}. "
                         f"Got x of shape {tuple(x.shape)}.")
