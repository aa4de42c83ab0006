"""One-step schemes shared by the systems: implicit midpoint (Newton) and Stormer-Verlet."""

from __future__ import annotations

from typing import Callable

import torch

__all__ = ["implicit_midpoint_step", "stormer_verlet_step", "integrate"]

Field = Callable[[torch.Tensor], torch.Tensor]


def implicit_midpoint_step(f: Field, jac: Field, z: torch.Tensor, h: float, *, tol: float | None = None,
                           max_iter: int = 50) -> torch.Tensor:
    r"""One step of the implicit midpoint rule :math:`z_1 = z_0 + h f(\tfrac12(z_0 + z_1))`, solved by Newton.

    ``z`` is ``(batch, d)``; ``jac(m)`` returns the Jacobians ``(batch, d, d)``
    of ``f`` at ``m``. Iterates until the Newton increment is below ``tol``
    (default ``4 * eps`` of the dtype, relative to ``|z|``) and raises
    ``RuntimeError`` when it does not converge in ``max_iter`` iterations.
    """
    tol = 4 * torch.finfo(z.dtype).eps if tol is None else tol
    w = z + h * f(z)  # explicit Euler predictor
    eye = torch.eye(z.shape[-1], dtype=z.dtype, device=z.device)
    scale = z.abs().amax(dim=-1, keepdim=True).clamp_min(1.0)
    for _ in range(max_iter):
        m = 0.5 * (z + w)
        g = w - z - h * f(m)
        dw = torch.linalg.solve(eye - 0.5 * h * jac(m), g)
        w = w - dw
        if bool((dw.abs() <= tol * scale).all()):
            return w
    raise RuntimeError(
        f"Expected the implicit midpoint Newton iteration to converge within {max_iter} iterations. "
        f"Got a last increment of {float(dw.abs().max()):.3g}; reduce the step size."
    )


def stormer_verlet_step(grad_v: Field, inv_mass: torch.Tensor, q: torch.Tensor, p: torch.Tensor,
                        h: float) -> tuple[torch.Tensor, torch.Tensor]:
    r"""One Störmer–Verlet step for :math:`H = \tfrac12p^TM^{-1}p + V(q)` (symplectic, second order)."""
    p_half = p - 0.5 * h * grad_v(q)
    q1 = q + h * p_half * inv_mass
    p1 = p_half - 0.5 * h * grad_v(q1)
    return q1, p1


def integrate(step: Callable[[torch.Tensor], torch.Tensor], z0: torch.Tensor, n_steps: int) -> torch.Tensor:
    """``(batch, n_steps + 1, d)``: ``z0`` and ``n_steps`` applications of ``step``."""
    out = [z0]
    z = z0
    for _ in range(n_steps):
        z = step(z)
        out.append(z)
    return torch.stack(out, dim=-2)
