r"""Reused scratch tensors for the native kernels' call-local temporaries.

Note [reused scratch]
---------------------
A fresh CPU tensor of a few MiB is mapped anew by the allocator and every page is faulted in at first touch: at
B*T = 65,536 tokens, d = 8, T = 16, the float64 (B, d, d) arrays are 2 MiB each, and allocating and filling six
such tensors took 5.2 ms of thread time against 1.5 ms with the mapping kept (one run, one thread, a shared
machine), about as much as the kernels themselves. The layers' temporaries that never leave a call (the per-sample
gradients in A before their sum over the batch, a contiguous copy of the incoming gradient, the exponential's
Gram and E matrices in its forward) are therefore taken with scratch() and handed back with release(): a freed
tensor of the same shape and dtype is reused, never one still in use (it is removed from the pool while taken).
The contents of a scratch tensor are undefined; the kernels write every entry they return.
"""

from __future__ import annotations

import threading

import torch

__all__ = ["scratch", "release", "backward_buffers", "SCRATCH_KEPT"]

_scratch_lock = threading.Lock()
_scratch: dict = {}  # (shape, dtype) -> the free CPU tensors of that shape (Note [reused scratch])
#: the most scratch tensors kept free at once
SCRATCH_KEPT = 6


def scratch(shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    """A CPU tensor of ``shape`` and ``dtype`` for a temporary that does not outlive the caller's call, its contents
    undefined: a released one when one is free, else a new one (Note [reused scratch]).

    Parameters
    ----------
    shape : tuple of int
    dtype : torch.dtype

    Returns
    -------
    Tensor
        contiguous, on the CPU; hand it back with :func:`release` once no result refers to it.
    """
    key = (tuple(shape), dtype)
    with _scratch_lock:
        free = _scratch.get(key)
        t = free.pop() if free else None
    return t if t is not None else torch.empty(key[0], dtype=dtype)


def release(*tensors: torch.Tensor) -> None:
    """Hand tensors taken with :func:`scratch` back for reuse (at most :data:`SCRATCH_KEPT` are kept, the oldest
    dropped first; Note [reused scratch])."""
    with _scratch_lock:
        for t in tensors:
            key = (tuple(t.shape), t.dtype)
            _scratch[key] = _scratch.pop(key, []) + [t]  # the key becomes the newest
        while sum(map(len, _scratch.values())) > SCRATCH_KEPT:
            oldest = next(iter(_scratch))
            _scratch[oldest].pop(0)
            if not _scratch[oldest]:
                del _scratch[oldest]


def backward_buffers(batch: int, d: int, gy: torch.Tensor, strided: bool = False):
    """The scratch of a Gram backward kernel's call: the per-sample gradient in ``A`` (float64 ``(batch, d, d)``)
    and the incoming gradient as the kernel reads it (``gy`` itself when contiguous or when the kernel reads
    strides, else a scratch copy: the expanded gradient of ``out.sum()``).

    Returns
    -------
    (Tensor, Tensor, list of Tensor)
        ``(gA_out, gy, taken)``; hand ``taken`` back with :func:`release` once the call's results no longer refer
        to it.
    """
    taken = [scratch((batch, d, d), torch.float64)]
    if not strided and not gy.is_contiguous():
        taken.append(scratch(gy.shape, gy.dtype).copy_(gy))
        gy = taken[-1]
    return taken[0], gy, taken
