"""Example constructions of every public model of :mod:`geoattn.models`, one per code path, and the joined list
of layers and models (see :mod:`geoattn.nn._cases`)."""

from __future__ import annotations

from ..nn._cases import CASES as LAYER_CASES
from ..nn._cases import Case
from .baselines import ResNetIntegrator, StandardTransformerIntegrator
from .feedforward import TriangularResidual, VolumePreservingFeedForward
from .integrators import LinearSymplecticTransformer, VolumePreservingTransformer
from .per_step import SympNetIntegrator, VolumePreservingFeedForwardIntegrator
from .symplectic import SymplecticTransformer
from .sympnet import GradientLayer, SympNet

__all__ = ["Case", "CASES", "all_cases", "preserves_cases"]

VPT = VolumePreservingTransformer
ST = SymplecticTransformer

#: the models' cases, in the order of the docs' preserves table
CASES: tuple[Case, ...] = (
    Case("TriangularResidual", lambda: TriangularResidual(3), (2, 4, 3)),
    Case("TriangularResidual(sys_dim, lower=False, activation=None, bias=False)",
         lambda: TriangularResidual(3, lower=False, activation=None, bias=False), (2, 4, 3), False),
    Case("VolumePreservingFeedForward", lambda: VolumePreservingFeedForward(3, n_blocks=2), (2, 4, 3)),
    Case("VolumePreservingFeedForward(sys_dim, n_linear=0, activation='relu')",
         lambda: VolumePreservingFeedForward(3, n_linear=0, activation="relu"), (2, 4, 3), False),
    Case("GradientLayer", lambda: GradientLayer(4, 8), (2, 3, 4)),
    Case("GradientLayer(sys_dim, upscaling_dim, update='q')", lambda: GradientLayer(4, 8, update="q"), (2, 3, 4),
         False),
    Case("SympNet", lambda: SympNet(4), (2, 3, 4)),
    Case("VolumePreservingTransformer(skew_sym=True)", lambda: VPT(3, 3, depth=2), (2, 3, 3)),
    Case("VolumePreservingTransformer(skew_sym=False)", lambda: VPT(3, 3, skew_sym=False), (2, 3, 3)),
    Case("LinearSymplecticTransformer", lambda: LinearSymplecticTransformer(4, 3), (2, 3, 4)),
    Case("SymplecticTransformer", lambda: ST(4, 3, activation="vector_softmax"), (2, 3, 4)),
    Case("SymplecticTransformer(activation='matrix_one_softmax', symmetric=False)",
         lambda: ST(4, 3, activation="matrix_one_softmax", symmetric=False), (2, 3, 4), False),
    Case("VolumePreservingFeedForwardIntegrator", lambda: VolumePreservingFeedForwardIntegrator(3), (2, 1, 3)),
    Case("SympNetIntegrator", lambda: SympNetIntegrator(4), (2, 1, 4)),
    Case("StandardTransformerIntegrator", lambda: StandardTransformerIntegrator(4, 3), (2, 3, 4)),
    Case("StandardTransformerIntegrator(positional=False)",
         lambda: StandardTransformerIntegrator(4, 3, positional=False), (2, 3, 4), False),
    Case("ResNetIntegrator", lambda: ResNetIntegrator(3), (2, 1, 3)),
)


def all_cases() -> list[Case]:
    """Every case of the layers and the models, one per code path (the compile tests run them all)."""
    return [*LAYER_CASES, *CASES]


def preserves_cases() -> list[tuple[str, object, tuple[int, ...]]]:
    """One ``(label, build, input_shape)`` per public layer and model of :mod:`geoattn.nn` and
    :mod:`geoattn.models` and per variant whose declarations differ (the preserves table of the docs and
    the parametrized preserves test both read it). ``Skew`` (a parametrization) and ``Integrator`` (the
    abstract base) have none."""
    return [(c.label, c.build, c.shape) for c in all_cases() if c.declared]
