r"""The free rigid body, integrated with the implicit midpoint rule."""

from __future__ import annotations

import math

import torch

from ._solvers import implicit_midpoint_step, integrate

__all__ = ["RigidBody"]


class RigidBody:
    r"""Euler's equations of a free rigid body,

    .. math::

        \dot z = f(z) = \bigl(A\,z_2z_3,\ B\,z_1z_3,\ C\,z_1z_2\bigr),\qquad
        A = \frac{I_2 - I_3}{I_2I_3},\ B = \frac{I_3 - I_1}{I_3I_1},\ C = \frac{I_1 - I_2}{I_1I_2},

    for the angular momentum :math:`z` and moments of inertia :math:`I_i`.
    The flow is divergence-free for every :math:`A, B, C` (ledger
    ``rigid_body.divergence_free``) and conserves :math:`|z|^2` exactly when
    :math:`A + B + C = 0` (``rigid_body.sphere_invariant.corrected``), which
    Euler's coefficients always satisfy. The constants
    :math:`A = 1, B = \tfrac12, C = -\tfrac12` often quoted for this
    benchmark do not (``rigid_body.sphere_invariant`` is refuted): their
    trajectories leave the unit sphere, so they are accepted but flagged by
    :attr:`conserves_sphere`. The default is :math:`I = (2, 1, \tfrac23)`,
    :math:`(A, B, C) = (\tfrac12, -1, \tfrac12)`.

    The implicit midpoint rule keeps every quadratic invariant
    (``midpoint.quadratic_invariant``), so :math:`|z|^2` is kept to the Newton
    tolerance.

    Parameters
    ----------
    A, B, C : float
    dtype, device :
        of the trajectories (float64 by default).

    Examples
    --------
    >>> body = RigidBody()
    >>> z = body.trajectories(body.initial_conditions(4), t_end=12.0)
    >>> z.shape
    torch.Size([8, 61, 3])
    >>> bool((z.pow(2).sum(-1) - 1).abs().max() < 1e-13)
    True
    """

    sys_dim = 3

    def __init__(self, A: float = 0.5, B: float = -1.0, C: float = 0.5, *, dtype=torch.float64, device=None) -> None:
        self.A, self.B, self.C = float(A), float(B), float(C)
        self.dtype, self.device = dtype, device

    @classmethod
    def from_inertia(cls, I1: float, I2: float, I3: float, **kwargs) -> "RigidBody":
        """The body with moments of inertia ``I1, I2, I3`` (all positive)."""
        if min(I1, I2, I3) <= 0:
            raise ValueError(f"Expected positive moments of inertia. Got {(I1, I2, I3)}.")
        return cls((I2 - I3) / (I2 * I3), (I3 - I1) / (I3 * I1), (I1 - I2) / (I1 * I2), **kwargs)

    @property
    def conserves_sphere(self) -> bool:
        """Whether :math:`A + B + C = 0` (to rounding), i.e. whether :math:`|z|^2` is an invariant."""
        return abs(self.A + self.B + self.C) <= 8 * torch.finfo(torch.float64).eps * max(
            abs(self.A), abs(self.B), abs(self.C), 1.0)

    def vector_field(self, z: torch.Tensor) -> torch.Tensor:
        """:math:`f(z)` for states ``(..., 3)``."""
        z1, z2, z3 = z.unbind(-1)
        return torch.stack([self.A * z2 * z3, self.B * z1 * z3, self.C * z1 * z2], dim=-1)

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        """The Jacobians :math:`\\partial f/\\partial z`, ``(..., 3, 3)`` (used by the Newton iteration)."""
        z1, z2, z3 = z.unbind(-1)
        zero = torch.zeros_like(z1)
        rows = [
            torch.stack([zero, self.A * z3, self.A * z2], -1),
            torch.stack([self.B * z3, zero, self.B * z1], -1),
            torch.stack([self.C * z2, self.C * z1, zero], -1),
        ]
        return torch.stack(rows, dim=-2)

    @staticmethod
    def invariant(z: torch.Tensor) -> torch.Tensor:
        """:math:`|z|^2`, conserved by the flow and by the scheme."""
        return z.pow(2).sum(-1)

    def initial_conditions(self, n_alpha: int, *, alpha_min: float = 0.1, alpha_max: float = math.pi / 2 - 0.1
                           ) -> torch.Tensor:
        r"""``(2 n_alpha, 3)`` points of the two families :math:`(\sin\alpha, 0, \cos\alpha)` and :math:`(0, \sin\alpha, \cos\alpha)`.

        :math:`\alpha` runs over ``n_alpha`` evenly spaced values in
        ``[alpha_min, alpha_max]``; every point lies on the unit sphere.
        """
        alpha = torch.linspace(alpha_min, alpha_max, n_alpha, dtype=self.dtype, device=self.device)
        s, c, o = alpha.sin(), alpha.cos(), torch.zeros_like(alpha)
        return torch.cat([torch.stack([s, o, c], -1), torch.stack([o, s, c], -1)], dim=0)

    def step(self, z: torch.Tensor, dt: float = 0.2) -> torch.Tensor:
        """One implicit midpoint step of size ``dt`` for a batch ``(batch, 3)``."""
        return implicit_midpoint_step(self.vector_field, self.jacobian, z, dt)

    def trajectories(self, z0: torch.Tensor, *, t_end: float, dt: float = 0.2) -> torch.Tensor:
        """``(batch, n + 1, 3)`` states at :math:`t = 0, dt, \\dots, n\\,dt` with :math:`n = \\mathrm{round}(t_\\mathrm{end}/dt)`."""
        if z0.dim() != 2 or z0.shape[-1] != 3:
            raise ValueError(f"Expected initial conditions of shape (batch, 3). Got {tuple(z0.shape)}.")
        n = round(t_end / dt)
        return integrate(lambda z: self.step(z, dt), z0.to(self.dtype), n)
