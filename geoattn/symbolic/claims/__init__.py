"""The claim families of the ledger; importing this package registers them."""

from . import cayley, exponential, linear_symplectic, multihead, vectorisation, volume_preserving  # noqa: F401
