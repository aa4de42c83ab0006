"""Integrators that apply one per-state network to every time step of the window: the volume-preserving
feed-forward network and the SympNet."""

from __future__ import annotations

from types import MappingProxyType

import torch

from ..nn._common import check_positive_int
from .feedforward import VolumePreservingFeedForward
from .integrators import Integrator
from .sympnet import SympNet

__all__ = ["VolumePreservingFeedForwardIntegrator", "SympNetIntegrator"]


class _PerStepIntegrator(Integrator):
    """An integrator that applies one per-state network ``net`` to every time step of the window."""

    def __init__(self, sys_dim: int, seq_len: int, build_net) -> None:
        super().__init__()
        self.sys_dim = check_positive_int("sys_dim", sys_dim)
        self.seq_len = check_positive_int("seq_len", seq_len)
        self.net = build_net()

    def _window_map(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class VolumePreservingFeedForwardIntegrator(_PerStepIntegrator):
    r"""A :class:`~geoattn.models.VolumePreservingFeedForward` on every time step, as an integrator.

    With ``seq_len=1`` (the default) it is a one-step map
    :math:`z^{(t)} \mapsto z^{(t+1)}`: the volume-preserving feed-forward
    baseline of the volume-preserving transformer paper. What it preserves:
    volume (unit triangular Jacobians); not symplectic.

    Parameters
    ----------
    sys_dim : int
    seq_len : int
    n_blocks, n_linear, activation, device, dtype :
        passed on to the :class:`~geoattn.models.VolumePreservingFeedForward`.

    Examples
    --------
    >>> import torch
    >>> from geoattn.testing import assert_volume_preserving
    >>> model = VolumePreservingFeedForwardIntegrator(3, n_blocks=6)
    >>> assert_volume_preserving(model, torch.randn(4, 1, 3))
    """

    preserves = MappingProxyType({"volume": ("models.triangular_residual_det_one",)})

    def __init__(self, sys_dim: int, seq_len: int = 1, *, n_blocks: int = 1, n_linear: int = 1, activation="tanh",
                 device=None, dtype=None) -> None:
        super().__init__(sys_dim, seq_len, lambda: VolumePreservingFeedForward(
            sys_dim, n_blocks=n_blocks, n_linear=n_linear, activation=activation, device=device, dtype=dtype))


class SympNetIntegrator(_PerStepIntegrator):
    r"""A :class:`~geoattn.models.SympNet` as a one-step integrator (``seq_len=1`` by default).

    What it preserves: the symplectic structure (every layer is a gradient shear), hence volume.

    Parameters
    ----------
    sys_dim : int
        even.
    seq_len : int
    n_layers, upscaling_dim, activation, device, dtype :
        passed on to the :class:`~geoattn.models.SympNet`.
    """

    preserves = MappingProxyType({"symplectic": ("models.gradient_layer_symplectic",)})

    def __init__(self, sys_dim: int, seq_len: int = 1, *, n_layers: int = 4, upscaling_dim: int | None = None,
                 activation="tanh", device=None, dtype=None) -> None:
        super().__init__(sys_dim, seq_len, lambda: SympNet(
            sys_dim, n_layers=n_layers, upscaling_dim=upscaling_dim, activation=activation, device=device, dtype=dtype))
