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
