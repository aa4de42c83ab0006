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
from ..errors import ModelFileError

__all__ = ["ModelSpec", "save_model", "load_model", "ModelFileError"]

_FORMAT, _VERSION = "geoattn.model", 1


def _check_plain(where: str, v) -> None:
    """Refuse anything ``torch.load(weights_only=True)`` would not read back (numpy scalars, objects)."""
    if v is None or type(v) in (str, int, float, bool) or isinstance(v, torch.Tensor):  # numpy scalars subclass float
        return
    if isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            _check_plain(f"{where}[{i}]", x)
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if not isinstance(k, str):
                raise ModelFileError(f"Expected string keys in {where}. Got {k!r}.")
            _check_plain(f"{where}[{k!r}]", x)
        return
    raise ModelFileError(f"Expected plain data in {where} (str, int, float, bool, None, tensors, lists, dicts). "
                         f"Got {type(v).__name__}: {v!r}.")


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
        if not isinstance(self.kwargs, dict):
            raise ModelFileError(f"Expected kwargs to be a dict. Got {type(self.kwargs).__name__}.")
        for k, v in self.kwargs.items():
            if k in ("device", "dtype"):
                raise ModelFileError(f"Expected kwargs without {k!r} (build() and load_model() set it). Got {k}={v!r}.")
            if not (v is None or type(v) in (str, int, float, bool)):
                raise ModelFileError(f"Expected constructor arguments of plain types (str, int, float, bool, None). "
                                     f"Got {k}={v!r}.")

    def build(self, *, device=None, dtype=None) -> torch.nn.Module:
        """A freshly initialised model (initialisation draws from torch's global generator)."""
        return _model_class(self.cls)(**self.kwargs, device=device, dtype=dtype)


def save_model(path: str | os.PathLike, model: torch.nn.Module, spec: ModelSpec, *,
               metadata: dict[str, Any] | None = None) -> None:
    """Write ``model`` (built from ``spec``) and ``metadata`` to ``path``, atomically, with CPU tensors.

    The model must have the spec's class and parameter shapes, and ``metadata``
    must be plain data (what ``torch.load(weights_only=True)`` reads back):
    both are checked here rather than when the file is read.
    """
    if type(model).__name__ != spec.cls:
        raise ModelFileError(f"Expected a {spec.cls} (the spec's class). Got {type(model).__name__}.")
    fresh = {k: tuple(v.shape) for k, v in spec.build(device="meta").state_dict().items()}
    have = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    if fresh != have:
        raise ModelFileError(f"Expected a model built from the spec {spec}. Got parameters that differ from its "
                             f"(e.g. {sorted(set(fresh.items()) ^ set(have.items()))[:3]}).")
    _check_plain("metadata", metadata or {})
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
    if map_location is not None and not isinstance(map_location, (str, torch.device)):
        raise ModelFileError(f"Expected map_location to be a device (str or torch.device). Got {map_location!r}.")
    data = torch.load(path, map_location=map_location, weights_only=True)
    missing = [k for k in ("class", "kwargs", "dtype", "state_dict", "metadata")
               if not isinstance(data, dict) or k not in data]
    if not isinstance(data, dict) or data.get("format") != _FORMAT or missing:
        what = (f"a {type(data).__name__}" if not isinstance(data, dict)
                else f"format {data.get('format')!r}" + (f" without {missing}" if missing else ""))
        raise ModelFileError(f"Expected a geoattn model file (format {_FORMAT!r}). Got {what} in {os.fspath(path)!r}.")
    if data.get("version") != _VERSION:
        raise ModelFileError(f"Expected model file version {_VERSION}. Got {data.get('version')!r}.")
    dtype = getattr(torch, data["dtype"], None)
    if not isinstance(dtype, torch.dtype):
        raise ModelFileError(f"Expected a torch dtype name. Got {data['dtype']!r}.")
    model = ModelSpec(data["class"], data["kwargs"]).build(device=map_location, dtype=dtype)
    model.load_state_dict(data["state_dict"])
    model.metadata = data["metadata"]
    return model.eval()
