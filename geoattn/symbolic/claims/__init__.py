"""The claim families of the ledger; importing this package registers them."""

from . import (  # noqa: F401
    cayley,
    exponential,
    kernels,
    kernels_spectral,
    linear_symplectic,
    models,
    multihead,
    systems,
    taylor,
    vectorisation,
    volume_preserving,
    vp_linear,
    vp_map,
)
from . import lowrank  # noqa: E402,F401
