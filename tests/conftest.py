import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from hypothesis import settings

# CI runs are reproducible; local runs explore new examples.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


class ShapeRecorder:
    """Records the shape of every tensor an operator produces while active (``with ShapeRecorder() as shapes``)."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        shapes = self.shapes = []

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                import torch

                out = func(*args, **(kwargs or {}))
                for t in out if isinstance(out, (tuple, list)) else (out,):
                    if isinstance(t, torch.Tensor):
                        shapes.append(tuple(t.shape))
                return out

        self._mode = _Mode()

    def __enter__(self):
        self._mode.__enter__()
        return self.shapes

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)


def build_native_library(tmp_path, specs, d):
    """Print the native kernels ``specs`` at size ``d`` into one C file under ``tmp_path`` and build its float32
    library (the tests' broken kernels); skips the test where it cannot be built."""
    import pytest

    from geoattn.codegen import cprinter, generate
    from geoattn.kernels import _native

    src = tmp_path / "broken.c"
    header = generate.NATIVE_HEADER.format(hash="-", version="-", sources="", lanes=cprinter.LANES,
                                           chunk=cprinter.TOKEN_CHUNK, prelude=cprinter.REAL_PRELUDE)
    src.write_text(header + "\n".join(cprinter.print_native_kernel(k, d) for k in specs))
    lib = _native.build(d, "f32", str(src), str(tmp_path / "cache"))
    if isinstance(lib, str):
        pytest.skip(f"cannot build: {lib}")
    return lib


def native_or_skip(d, dtype):
    """Skip the test unless the native kernels of size ``d`` and ``dtype`` build here."""
    import pytest

    from geoattn.kernels import _native

    ok, why = _native.native_status(d, dtype)
    if not ok:
        pytest.skip(f"the native kernels cannot run here: {why}")


def full64(x, A, activation="cayley"):
    """The T x T form in float64 (an independent reference: it solves a T x T system, or forms exp of it)."""
    import geoattn.kernels as K

    return K.vp_attention(x.double(), A.double(), activation=activation, method="full")


def assert_layer_matches_full64(x, A, y, gx, gA, g, activation="cayley"):
    """The layer's output and its gradients in ``x`` and ``A`` for the incoming gradient ``g`` against
    :func:`full64` with autograd: the output to ``8 T eps32`` of each column's norm, the gradients to ``64 T eps32``
    (``A``'s also times the batch, whose sum it is)."""
    import torch

    x64, A64 = x.double().requires_grad_(), A.double().requires_grad_()
    y64 = full64(x64, 0.5 * (A64 - A64.mT), activation)
    rx, rA = torch.autograd.grad(y64, (x64, A64), g.double())
    T, B, e = x.shape[-2], x.shape[0], eps(torch.float32)
    assert ((y.double() - y64.detach()).abs() / x.double().norm(dim=-2, keepdim=True)).max() <= 8 * T * e
    tol = 64 * T * e
    assert (gx.double() - rx).abs().max() <= tol * (1 + rx.abs().max())
    assert (gA.double() - rA).abs().max() <= tol * B * (1 + rA.abs().max())


def eps(dtype):
    """The machine epsilon of ``dtype``."""
    import torch

    return torch.finfo(dtype).eps


def skew64(d, scale=0.3):
    """A contiguous random skew ``d x d`` float64 matrix of entries of about ``scale``."""
    import torch

    w = torch.randn(d, d, dtype=torch.float64) * scale
    return (w - w.mT).contiguous()
