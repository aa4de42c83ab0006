"""The backends of :mod:`geoattn.kernels.dispatch`: ``eager`` (torch operations, every device), ``native`` (the C
kernels printed from the verified bindings, compiled at first use on the CPU; Note [native kernels] in
:mod:`geoattn.kernels._native`) and ``triton`` (the Triton kernels printed from the same bindings, on CUDA
devices; Note [Triton backend] in :mod:`geoattn.kernels._triton`)."""

from __future__ import annotations

from . import _native, _triton
from .dispatch import Backend, Call, forced_backend, register_backend

__all__ = ["EAGER", "NATIVE", "TRITON"]


def _native_check(call: Call) -> str | None:
    """Whether the native backend can run at all for ``call``: on the CPU, switched on, not traced."""
    if call.device.type != "cpu":
        return f"device {call.device.type}: the native kernels run on the CPU"
    if not _native.enabled():
        return "switched off (GEOATTN_NATIVE=0)"
    if call.traced:
        return "traced (torch.func, torch.compile or meta): the C kernels cannot be traced"
    return None


EAGER = register_backend(Backend("eager", "torch operations (generated from the verified expressions), every device"))
NATIVE = register_backend(Backend("native", "C kernels printed from the verified bindings, compiled at first use (CPU)",
                                  _native_check))


def _triton_check(call: Call) -> str | None:
    """Whether the Triton backend can run at all for ``call`` (Note [Triton backend] in :mod:`geoattn.kernels._triton`):
    triton imports, the call is not traced, and the tensors are on a CUDA device, or on the CPU in Triton's
    interpreter with the backend forced."""
    if call.device.type == "cpu":
        if not _triton.interpreting():
            return "device cpu: the Triton kernels run on CUDA devices (on the CPU only in Triton's interpreter)"
        if forced_backend() != "triton":
            return "device cpu: Triton's interpreter (TRITON_INTERPRET=1) serves only inside backend('triton')"
    elif call.device.type != "cuda":
        return f"device {call.device.type}: the Triton kernels run on CUDA devices"
    ok, why = _triton.triton_status()  # imported only for a call it could serve
    if not ok:
        return why
    if call.traced:
        return "traced (torch.func, torch.compile or meta): the kernels' per-sample checks branch on the data"
    return None


TRITON = register_backend(Backend("triton", "Triton kernels printed from the verified bindings (CUDA; the CPU in "
                                  "Triton's interpreter when forced)", _triton_check))
