"""The backends of :mod:`geoattn.kernels.dispatch`: ``eager`` (torch operations, every device) and ``native`` (the C
kernels printed from the verified bindings, compiled at first use on the CPU; Note [native kernels] in
:mod:`geoattn.kernels._native`)."""

from __future__ import annotations

from . import _native
from .dispatch import Backend, Call, register_backend

__all__ = ["EAGER", "NATIVE"]


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
