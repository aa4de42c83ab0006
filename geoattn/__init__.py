"""geoattn: structure-preserving attention with machine-checked mathematics.

The package is layered; each layer imports only the ones before it:

``geoattn.symbolic``
    the claims engine (SymPy): every claim of the seed documents with a
    computed verdict and its evidence;
``geoattn.codegen``
    prints batched torch source from the expressions of the symbolic layer;
``geoattn.kernels``
    the generated kernels with their autograd wrappers (torch only);
``geoattn.cli``
    the ``geoattn`` command.

Importing :mod:`geoattn` itself loads neither SymPy nor torch.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
