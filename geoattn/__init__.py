"""geoattn: structure-preserving attention with machine-checked mathematics.

The package is layered; each layer imports only the ones before it:

``geoattn.symbolic``
    the claims engine (SymPy): every claim of the seed documents with a
    computed verdict and its evidence;
``geoattn.codegen``
    prints batched torch source from the expressions of the symbolic layer;
``geoattn.kernels``
    the generated kernels with their autograd wrappers (torch only);
``geoattn.nn``
    the attention layers: volume-preserving, orthonormal, linear
    symplectic, multi-head and single-head attention;
``geoattn.models``
    integrators built from the layers (transformers, feed-forward networks,
    SympNets) and their baselines;
``geoattn.systems``
    the physical systems that generate training data;
``geoattn.experiments``
    training, rollouts, metrics and model files of the experiments;
``geoattn.testing``
    structure checks (``assert_volume_preserving``, ``assert_preserves``, ...);
``geoattn.cli``
    the ``geoattn`` command.

Every layer and model declares what it preserves (``preserves``) and what
the ledger refutes for it (``does_not_preserve``).

Importing :mod:`geoattn` itself loads neither SymPy nor torch.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
