"""Rollout errors, drift of conserved quantities and measured structure of trained integrators."""

from __future__ import annotations

from typing import Callable

import torch

from ..models import Integrator
from ..testing import jacobian, symplectic_form

__all__ = ["rollout_trajectories", "diverged", "relative_error", "valid_time", "invariant_drift", "structure_report"]


@torch.no_grad()
def rollout_trajectories(model: Integrator, trajectories: torch.Tensor, n_steps: int, *,
                         bound_factor: float = 100.0) -> torch.Tensor:
    """Predict from the first ``seq_len`` states of each reference trajectory: ``(batch, seq_len + n_steps, d)``.

    The model runs in its own dtype; the result is float64 and begins with the
    given window, so it aligns with ``trajectories`` step by step. A rollout
    that leaves ``bound_factor`` times the largest reference state norm is
    marked diverged (NaN from there on).
    """
    p = next(model.parameters())
    window = trajectories[:, : model.seq_len]
    bound = bound_factor * float(trajectories.norm(dim=-1).max())
    pred = model.rollout(window.to(p.device, p.dtype), n_steps, bound=bound)
    return torch.cat([window.double(), pred.double().cpu()], dim=1)


def diverged(pred: torch.Tensor) -> torch.Tensor:
    """Per trajectory, whether a rollout diverged (has non-finite states), ``(batch,)``."""
    return ~torch.isfinite(pred).all(-1).all(-1)


def relative_error(pred: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    r""":math:`|\hat z(t) - z(t)| / |z(t)|` per trajectory and step, ``(batch, n)``."""
    n = min(pred.shape[1], ref.shape[1])
    return (pred[:, :n] - ref[:, :n]).norm(dim=-1) / ref[:, :n].norm(dim=-1).clamp_min(1e-300)


def valid_time(error: torch.Tensor, dt: float, threshold: float = 0.5) -> torch.Tensor:
    """Per trajectory, the time until the relative ``error`` ``(batch, n)`` first exceeds ``threshold`` (or is NaN).

    A trajectory that never exceeds it gets the full horizon ``n * dt``.
    """
    bad = ~(error <= threshold)
    first = torch.where(bad.any(-1), bad.float().argmax(-1), torch.full(bad.shape[:-1], error.shape[-1]))
    return first.double() * dt


def invariant_drift(states: torch.Tensor, invariant: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    r""":math:`|I(z(t)) - I(z(0))| / |I(z(0))|` per trajectory and step, ``(batch, n)``."""
    values = invariant(states)
    return (values - values[:, :1]).abs() / values[:, :1].abs().clamp_min(1e-300)


def structure_report(model: torch.nn.Module, windows: torch.Tensor, *, symplectic: bool) -> dict:
    r"""Measured structure of ``model`` at ``windows`` (float64 Jacobians, :mod:`geoattn.testing`).

    Returns ``{"max_abs_det_minus_one", "median_abs_det_minus_one",
    "max_spectral_radius"}`` and, with ``symplectic=True``,
    ``"max_symplecticity_error"``. The spectral radius is the largest
    :math:`|\lambda|` of the window map's Jacobian at the given windows: an
    eigenvalue above 1 is a direction in which the linearised map expands
    near them (a volume-preserving or symplectic map whose eigenvalues are
    not all on the unit circle has one, since their product is 1); whether a
    rollout grows depends on the product of the Jacobians along it.
    """
    J = jacobian(model, windows)  # once, for every figure below
    if J.shape[-1] != J.shape[-2]:
        raise ValueError(f"Expected a window-to-window model (square Jacobian). Got {J.shape[-2]} outputs for "
                         f"{J.shape[-1]} inputs.")
    det = torch.linalg.det(J)
    out = {
        "max_abs_det_minus_one": float((det - 1).abs().max()),
        "median_abs_det_minus_one": float((det - 1).abs().median()),
        "max_spectral_radius": float(torch.linalg.eigvals(J).abs().amax()),
    }
    if symplectic:
        omega = symplectic_form(J.shape[-1], dim=windows.shape[-1])
        out["max_symplecticity_error"] = float(torch.linalg.matrix_norm(J.mT @ omega @ J - omega).max())
    return out
