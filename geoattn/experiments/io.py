"""Trained models on disk: architecture and weights in one file that ``torch.load(weights_only=True)`` accepts.

A model file is a plain dictionary of strings, numbers and tensors::

    {"format": "geoattn.model", "version": 1,
     "class": "VolumePreservingTransformer",          # a name in geoattn.models
     "kwargs": {"sys_dim": 3, "seq_len": 3, ...},      # its constructor arguments
     "dtype": "float32", "state_dict": {...}, "metadata": {...}}

:func:`load_model` rebuilds the model only from classes that
:mod:`geoattn.models` exports, so a file cannot name arbitrary code.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import torch

from .. import models as _models

__all__ = ["ModelSpec", "save_model", "load_model", "ModelFileError"]

_FORMAT, _VERSION = "geoattn.model", 1


class ModelFileError(ValueError):
    """A file that is not a geoattn model file, or names something :mod:`geoattn.models` does not export."""


def _model_class(name: str) -> type[torch.nn.Module]:
    cls = getattr(_models, name, None) if name in _models.__all__ else None
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        known = sorted(n for n in _models.__all__ if isinstance(getattr(_models, n), type))
        raise ModelFileError(f"Expected a model class exported by geoattn.models ({', '.join(known)}). Got {name!r}.")
    return cls


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A model as data: the name of a class in :mod:`geoattn.models` and its constructor arguments.

    Parameters
    ----------
    cls : str
        e.g. ``"VolumePreservingTransformer"``.
    kwargs : dict
        constructor arguments made of strings, numbers, booleans and ``None``
        (they are stored in the model file).

    Examples
    --------
    >>> spec = ModelSpec("ResNetIntegrator", {"sys_dim": 3, "width": 8})
    >>> type(spec.build()).__name__
    'ResNetIntegrator'
    """

    cls: str
    kwargs: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        _model_class(self.cls)
        for k, v in self.kwargs.items():
            if not (v is None or isinstance(v, (str, int, float, bool))):
                raise ModelFileError(f"Expected constructor arguments of plain types (str, int, float, bool, None). "
                                     f"Got {k}={v!r}.")

    def build(self, *, device=None, dtype=None) -> torch.nn.Module:
        """A freshly initialised model (initialisation draws from torch's global generator)."""
        return _model_class(self.cls)(**self.kwargs, device=device, dtype=dtype)


def save_model(path: str | os.PathLike, model: torch.nn.Module, spec: ModelSpec, *,
               metadata: dict[str, Any] | None = None) -> None:
    """Write ``model`` (built from ``spec``) and ``metadata`` to ``path``, atomically, with CPU tensors."""
    if type(model).__name__ != spec.cls:
        raise ModelFileError(f"Expected a {spec.cls} (the spec's class). Got {type(model).__name__}.")
    dtype = next(model.parameters()).dtype
    data = {
        "format": _FORMAT,
        "version": _VERSION,
        "class": spec.cls,
        "kwargs": dict(spec.kwargs),
        "dtype": str(dtype).removeprefix("torch."),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "metadata": dict(metadata or {}),
    }
    path = os.fspath(path)
    tmp = path + ".tmp"
    torch.save(data, tmp)
    os.replace(tmp, path)


def load_model(path: str | os.PathLike, *, map_location=None) -> torch.nn.Module:
    """The model stored at ``path`` by :func:`save_model`, in eval mode, its metadata as ``model.metadata``.

    The file is read with ``torch.load(weights_only=True)``; the class must be
    one :mod:`geoattn.models` exports.

    Examples
    --------
    >>> import tempfile, os, torch
    >>> spec = ModelSpec("VolumePreservingTransformer", {"sys_dim": 3, "seq_len": 3, "depth": 1})
    >>> model = spec.build()
    >>> path = os.path.join(tempfile.mkdtemp(), "vpt.pt")
    >>> save_model(path, model, spec, metadata={"seed": 0})
    >>> again = load_model(path)
    >>> x = torch.randn(2, 3, 3)
    >>> torch.equal(again(x), model(x)), again.metadata["seed"]
    (True, 0)
    """
    data = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ModelFileError(f"Expected a geoattn model file (format {_FORMAT!r}). Got {os.fspath(path)!r}.")
    if data.get("version") != _VERSION:
        raise ModelFileError(f"Expected model file version {_VERSION}. Got {data.get('version')!r}.")
    dtype = getattr(torch, data["dtype"], None)
    if not isinstance(dtype, torch.dtype):
        raise ModelFileError(f"Expected a torch dtype name. Got {data['dtype']!r}.")
    model = ModelSpec(data["class"], data["kwargs"]).build(dtype=dtype)
    model.load_state_dict(data["state_dict"])
    if map_location is not None:
        model.to(map_location)
    model.metadata = data["metadata"]
    return model.eval()
