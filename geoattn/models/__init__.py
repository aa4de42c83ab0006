r"""Models built from the layers: structure-preserving transformer integrators and their baselines.

An integrator maps a window of ``seq_len`` states, ``(batch, seq_len, sys_dim)``,
to the next window of the same shape; :func:`rollout` iterates it far past
the training horizon. Each class docstring states what its whole map
preserves; the tests check it with :mod:`geoattn.testing`, untrained and
trained.

What each model's whole map preserves:

* :class:`VolumePreservingTransformer`: volume with ``skew_sym=True``; nothing with ``skew_sym=False``;
* :class:`LinearSymplecticTransformer`, :class:`SymplecticTransformer`: the symplectic product structure (and volume);
* :class:`SympNetIntegrator`: the symplectic structure (and volume);
* :class:`VolumePreservingFeedForwardIntegrator`: volume;
* :class:`StandardTransformerIntegrator`, :class:`ResNetIntegrator`: nothing.
"""

from ._common import ACTIVATIONS, make_activation
from .feedforward import TriangularResidual, VolumePreservingFeedForward
from .baselines import ResNetIntegrator, StandardTransformerIntegrator
from .integrators import Integrator, LinearSymplecticTransformer, VolumePreservingTransformer, rollout
from .per_step import SympNetIntegrator, VolumePreservingFeedForwardIntegrator
from .symplectic import SymplecticTransformer
from .sympnet import GradientLayer, SympNet

__all__ = [
    "TriangularResidual",
    "VolumePreservingFeedForward",
    "GradientLayer",
    "SympNet",
    "Integrator",
    "VolumePreservingTransformer",
    "LinearSymplecticTransformer",
    "SymplecticTransformer",
    "StandardTransformerIntegrator",
    "ResNetIntegrator",
    "SympNetIntegrator",
    "VolumePreservingFeedForwardIntegrator",
    "rollout",
    "make_activation",
    "ACTIVATIONS",
]
