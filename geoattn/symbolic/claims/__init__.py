"""The claim families of the ledger; importing this package registers them."""

from . import cayley, exponential, kernels, linear_symplectic, multihead, vectorisation, volume_preserving  # noqa: F401
