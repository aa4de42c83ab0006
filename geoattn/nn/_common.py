"""Input checks and error classes shared by the layers of :mod:`geoattn.nn` and the models of :mod:`geoattn.models`."""

from __future__ import annotations

import numbers
from types import MappingProxyType

import torch
from torch import nn

from ..errors import DeviceError, DtypeError, OptionError, ShapeError

__all__ = ["LayerShapeError", "LayerDtypeError", "check_sequence", "check_option", "check_positive_int", "check_probability",
           "factory", "layer_name",
           "NOTHING_PRESERVED"]


#: an empty, read-only ``preserves`` / ``does_not_preserve`` mapping (see :func:`geoattn.testing.assert_preserves`)
NOTHING_PRESERVED = MappingProxyType({})


#: the names these classes had before :mod:`geoattn.errors` (the same classes)
LayerShapeError = ShapeError
LayerDtypeError = DtypeError


def layer_name(layer: nn.Module) -> str:
    """The name of the class the user created (a parametrized module's class is ``Parametrized<Name>``)."""
    cls = type(layer)
    if getattr(layer, "parametrizations", None) is not None and cls.__name__.startswith("Parametrized"):
        cls = cls.__bases__[0]
    return cls.__name__


def check_option(kind: str, name: str, value, allowed) -> None:
    """Raise :class:`~geoattn.errors.OptionError` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise OptionError(f"{kind}: expected {name} in {tuple(allowed)}. Got {value!r}.")


def check_positive_int(name: str, value) -> int:
    """``value`` as an int if it is an integer >= 1 (numpy integers included), else :class:`LayerShapeError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise LayerShapeError(f"Expected {name} to be a positive int. Got {value!r}.")
    return int(value)


def check_probability(name: str, value) -> float:
    """``value`` as a float if it is a real number in ``[0, 1)``, else :class:`ValueError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"Expected {name} to be a probability in [0, 1). Got {value!r}.")
    return float(value)


def factory(device, dtype) -> dict:
    """``{"device": device, "dtype": dtype}`` for parameter factories, after checking that ``dtype`` is floating."""
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise LayerDtypeError(f"Expected dtype to be a floating torch.dtype or None. Got {dtype!r}.")
    return {"device": device, "dtype": dtype}


def check_sequence(layer: nn.Module, name: str, x, *, dim: int | None = None, seq_len: int | None = None,
                   even: bool = False, dtype: torch.dtype | None = None,
                   device: torch.device | None = None) -> None:
    """Check a ``(*, seq_len, dim)`` input: a tensor, floating, of the layer's dtype and on its device, with the
    expected sizes."""
    kind = layer_name(layer)
    if not isinstance(x, torch.Tensor):
        raise LayerDtypeError(f"{kind}: expected {name} to be a torch.Tensor. Got {type(x).__name__}.")
    if not x.is_floating_point():
        raise LayerDtypeError(f"{kind}: expected {name} to have a floating dtype. Got {x.dtype}.")
    if dtype is not None and x.dtype != dtype:
        raise LayerDtypeError(
            f"{kind}: expected {name} to have the parameters' dtype {dtype}. Got {x.dtype} (convert one of the "
            f"two: {name}.to({dtype}) or the layer's .to({x.dtype}))."
        )
    if device is not None and x.device != device:
        raise DeviceError(
            f"{kind}: expected {name} on the parameters' device {device}. Got {name} on {x.device} (move one of the "
            f"two: {name}.to({str(device)!r}) or the layer's .to({str(x.device)!r}))."
        )
    if x.dim() < 2:
        raise LayerShapeError(
            f"{kind}: expected {name} of shape (batch, seq_len, dim) or (seq_len, dim). Got shape {tuple(x.shape)}."
        )
    if dim is not None and x.shape[-1] != dim:
        raise LayerShapeError(f"{kind}: expected {name} with {dim} features (last dim). Got shape {tuple(x.shape)}.")
    if seq_len is not None and x.shape[-2] != seq_len:
        raise LayerShapeError(
            f"{kind}: expected {name} with seq_len = {seq_len} (dim -2). Got shape {tuple(x.shape)}."
        )
    if even and x.shape[-1] % 2:
        raise LayerShapeError(
            f"{kind}: expected {name} with an even number of features 2n = (q, p). Got {x.shape[-1]}."
        )
