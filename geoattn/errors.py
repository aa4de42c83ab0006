"""The exceptions of geoattn: one class per kind of mistake, the same class wherever the mistake is made.

Every message reads "Expected ... Got ...", naming what was expected and what was passed. Each class also derives
from the builtin exception a caller would catch without knowing geoattn (``ValueError`` for a wrong shape, value or
option, ``TypeError`` for a wrong dtype or type, ``RuntimeError`` for a backend that cannot serve), so
``except ValueError`` keeps working.

* :class:`ShapeError` (a ``ValueError``): a tensor or a size of the wrong shape (kernels, layers, models);
* :class:`DtypeError` (a ``TypeError``): a non-tensor, a non-floating dtype, two dtypes that must agree;
* :class:`DeviceError` (a ``ValueError``): tensors (or a tensor and a module's parameters) on two devices;
* :class:`OptionError` (a ``ValueError``): an unknown option: activation, method, update, backend, ledger id;
* :class:`StructureError` (a ``ValueError``): an input without the structure a form assumes (a non-skew matrix);
* :class:`BackendError` (a ``RuntimeError``): a forced backend (:func:`geoattn.kernels.backend`) that cannot serve;
* :class:`CodegenError` (a ``ValueError``): an expression a printer of :mod:`geoattn.codegen` does not support;
* :class:`UnknownClaimError` (an :class:`OptionError` and a ``KeyError``): a ledger id that names no claim;
* :class:`UserClaimsError` (a ``ValueError``): a file or module of claims that cannot be loaded or declares them
  wrongly (``geoattn prove --claims``, :func:`geoattn.symbolic.load_claims`);
* :class:`ModelFileError` (a ``ValueError``): a file that is not a geoattn model file
  (:func:`geoattn.experiments.load_model`).

The names the package used before (``KernelShapeError``, ``LayerShapeError``, ``KernelDtypeError``,
``LayerDtypeError``) are these classes under a second name.

Examples
--------
>>> import torch
>>> from geoattn import errors, kernels
>>> try:
...     kernels.cayley(torch.zeros(3, 4))
... except errors.ShapeError as e:
...     print(e)
Expected C to be square in its last two dimensions, (..., n, n). Got shape (3, 4).
"""

from __future__ import annotations

__all__ = ["GeoattnError", "ShapeError", "DtypeError", "DeviceError", "OptionError", "StructureError",
           "BackendError", "CodegenError", "UnknownClaimError", "UserClaimsError", "ModelFileError"]


class GeoattnError(Exception):
    """The base of every exception geoattn raises on purpose."""


class ShapeError(GeoattnError, ValueError):
    """A tensor or a size of the wrong shape."""


class DtypeError(GeoattnError, TypeError):
    """A non-tensor where a tensor is expected, a non-floating dtype, or two dtypes that must agree and differ."""


class DeviceError(GeoattnError, ValueError):
    """Tensors that must be on one device are on two (or a module's input is not on its parameters' device)."""


class OptionError(GeoattnError, ValueError):
    """An option outside its allowed values (an activation, a method, an update, a backend, a ledger id)."""


class StructureError(GeoattnError, ValueError):
    """An input without the structure the computation assumes (a matrix that is not skew-symmetric)."""


class BackendError(GeoattnError, RuntimeError):
    """A backend forced with :func:`geoattn.kernels.backend` cannot serve the call (the message says why)."""


class CodegenError(GeoattnError, ValueError):
    """An expression a kernel printer does not support (e.g. a bare inverse), declared as such."""


class UnknownClaimError(OptionError, KeyError):
    """An id that is not in the ledger (nor among the claims of a user's file)."""

    def __init__(self, claim_id: str, known):
        self.claim_id = claim_id
        self.known = sorted(known)
        super().__init__(claim_id)

    def __str__(self) -> str:
        return f"Expected one of the known claim ids ({', '.join(self.known)}). Got {self.claim_id!r}."


class UserClaimsError(GeoattnError, ValueError):
    """A file or module of claims that cannot be loaded or declares them wrongly."""


class ModelFileError(GeoattnError, ValueError):
    """A file that is not a geoattn model file, or names something :mod:`geoattn.models` does not export."""
