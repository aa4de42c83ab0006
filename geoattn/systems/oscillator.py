r"""Two coupled harmonic oscillators, integrated with the Störmer–Verlet scheme."""

from __future__ import annotations

import torch

from ._solvers import implicit_midpoint_step, integrate, stormer_verlet_step

__all__ = ["CoupledOscillator", "NonlinearCoupledOscillator"]


class _TwoMasses:
    """Two masses ``m1, m2`` on springs ``k1, k2`` to the walls and ``k`` between them, state ``(q1, q2, p1, p2)``;
    a subclass supplies ``step(z, dt)``."""

    sys_dim = 4

    def __init__(self, m1: float, m2: float, k1: float, k2: float, k: float, *, dtype, device) -> None:
        self.m1, self.m2, self.k1, self.k2, self.k = map(float, (m1, m2, k1, k2, k))
        self.dtype, self.device = dtype, device

    def _integrate(self, z0: torch.Tensor, t_end: float, dt: float) -> torch.Tensor:
        """``n = round(t_end / dt)`` steps from ``z0`` ``(batch, 4)``: ``(batch, n + 1, 4)``."""
        if z0.dim() != 2 or z0.shape[-1] != 4:
            raise ValueError(f"Expected initial conditions of shape (batch, 4). Got {tuple(z0.shape)}.")
        return integrate(lambda z: self.step(z, dt), z0.to(self.dtype), round(t_end / dt))


class CoupledOscillator(_TwoMasses):
    r"""Two masses on springs, each tied to a wall and to each other:

    .. math::

        H(q, p) = \frac{p_1^2}{2m_1} + \frac{p_2^2}{2m_2} + \frac{k_1}{2}q_1^2 + \frac{k_2}{2}q_2^2
        + \frac{k}{2}(q_1 - q_2)^2,

    with state :math:`z = (q_1, q_2, p_1, p_2)` (positions first, as the
    symplectic layers expect). The energy :math:`H` is conserved by the flow;
    Störmer–Verlet is symplectic and of order 2, so its energy error stays
    bounded by :math:`O(\Delta t^2)` without drift. The system is linear,
    :math:`\dot z = Lz`, so :meth:`exact` gives the flow as
    :math:`e^{tL}z_0`.

    Parameters
    ----------
    m1, m2 : float
        the masses.
    k1, k2 : float
        stiffnesses of the springs that tie the masses to the walls.
    k : float
        stiffness of the spring between the masses.
    dtype, device :
        of the trajectories (float64 by default).

    Examples
    --------
    >>> osc = CoupledOscillator()
    >>> z0 = osc.initial_conditions(3, seed=0)
    >>> z = osc.trajectories(z0, t_end=20.0, dt=0.1)
    >>> z.shape
    torch.Size([3, 201, 4])
    >>> bool((osc.energy(z) - osc.energy(z0)[:, None]).abs().max() < 1e-2)
    True
    """

    def __init__(self, m1: float = 2.0, m2: float = 1.0, k1: float = 1.5, k2: float = 0.3, k: float = 0.2, *,
                 dtype=torch.float64, device=None) -> None:
        super().__init__(m1, m2, k1, k2, k, dtype=dtype, device=device)
        self.inv_mass = torch.tensor([1 / self.m1, 1 / self.m2], dtype=dtype, device=device)

    def grad_potential(self, q: torch.Tensor) -> torch.Tensor:
        """:math:`\\nabla V(q)` for positions ``(..., 2)``."""
        q1, q2 = q.unbind(-1)
        return torch.stack([self.k1 * q1 + self.k * (q1 - q2), self.k2 * q2 - self.k * (q1 - q2)], dim=-1)

    def energy(self, z: torch.Tensor) -> torch.Tensor:
        """:math:`H(z)` for states ``(..., 4)``."""
        q1, q2, p1, p2 = z.unbind(-1)
        return (p1**2 / (2 * self.m1) + p2**2 / (2 * self.m2) + 0.5 * self.k1 * q1**2 + 0.5 * self.k2 * q2**2
                + 0.5 * self.k * (q1 - q2) ** 2)

    invariant = energy

    def generator(self) -> torch.Tensor:
        r"""The matrix :math:`L` of :math:`\dot z = Lz`."""
        m1, m2, k1, k2, k = self.m1, self.m2, self.k1, self.k2, self.k
        return torch.tensor(
            [[0, 0, 1 / m1, 0], [0, 0, 0, 1 / m2], [-(k1 + k), k, 0, 0], [k, -(k2 + k), 0, 0]],
            dtype=self.dtype, device=self.device,
        )

    def exact(self, z0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        r""":math:`e^{tL}z_0` for times ``t`` of shape ``(n,)``: ``(batch, n, 4)``."""
        E = torch.linalg.matrix_exp(t.to(self.dtype)[:, None, None] * self.generator())
        return torch.einsum("nij,bj->bni", E, z0.to(self.dtype))

    def initial_conditions(self, n: int, *, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
        """``(n, 4)`` states with entries uniform in ``[-scale, scale]``, reproducible from ``seed``."""
        g = torch.Generator().manual_seed(seed)
        z = (2 * torch.rand(n, 4, generator=g, dtype=self.dtype) - 1) * scale
        return z.to(self.device)

    def step(self, z: torch.Tensor, dt: float = 0.1) -> torch.Tensor:
        """One Störmer–Verlet step of size ``dt`` for a batch ``(batch, 4)``."""
        q, p = stormer_verlet_step(self.grad_potential, self.inv_mass, z[..., :2], z[..., 2:], dt)
        return torch.cat([q, p], dim=-1)

    def trajectories(self, z0: torch.Tensor, *, t_end: float, dt: float = 0.1) -> torch.Tensor:
        """``(batch, n + 1, 4)`` states at :math:`t = 0, dt, \\dots, n\\,dt` with :math:`n = \\mathrm{round}(t_\\mathrm{end}/dt)`."""
        return self._integrate(z0, t_end, dt)


class NonlinearCoupledOscillator(_TwoMasses):
    r"""Two masses on springs coupled through a spring whose stiffness switches on with :math:`q_1`:

    .. math::

        H(q, p) = \frac{p_1^2}{2m_1} + \frac{p_2^2}{2m_2} + \frac{k_1}{2}q_1^2 + \frac{k_2}{2}q_2^2
        + \frac{k}{2}\,\sigma(q_1)\,(q_2 - q_1)^2,\qquad \sigma(x) = \frac{1}{1 + e^{-x}},

    with state :math:`z = (q_1, q_2, p_1, p_2)`, integrated with the implicit
    midpoint rule (symplectic; it keeps quadratic invariants, and this
    :math:`H` is not quadratic, so its energy error is bounded, not zero).
    The defaults :math:`m = (2, 1)`, :math:`k_1 = 1.5`, :math:`k_2 = 0.3`,
    :math:`k = 1` are the coupled-oscillator tutorial of
    GeometricMachineLearning.jl, which integrates this Hamiltonian (its page
    prints the kinetic terms with :math:`q` in place of :math:`p`).

    Parameters
    ----------
    m1, m2 : float
        the masses (positive).
    k1, k2 : float
        stiffnesses of the springs to the walls.
    k : float
        stiffness of the coupling spring once switched fully on (:math:`\sigma(q_1) = 1`).
    dtype, device :
        of the trajectories (float64 by default).

    Examples
    --------
    >>> osc = NonlinearCoupledOscillator()
    >>> z = osc.trajectories(osc.initial_conditions(3, seed=0), t_end=30.0, dt=0.3)
    >>> z.shape
    torch.Size([3, 101, 4])
    >>> bool((osc.energy(z) - osc.energy(z[:, :1])).abs().max() < 1e-2)
    True
    """

    def __init__(self, m1: float = 2.0, m2: float = 1.0, k1: float = 1.5, k2: float = 0.3, k: float = 1.0, *,
                 dtype=torch.float64, device=None) -> None:
        super().__init__(m1, m2, k1, k2, k, dtype=dtype, device=device)
        if min(self.m1, self.m2) <= 0:
            raise ValueError(f"Expected positive masses. Got {(self.m1, self.m2)}.")

    def energy(self, z: torch.Tensor) -> torch.Tensor:
        """:math:`H(z)` for states ``(..., 4)``."""
        q1, q2, p1, p2 = z.unbind(-1)
        return (p1**2 / (2 * self.m1) + p2**2 / (2 * self.m2) + 0.5 * self.k1 * q1**2 + 0.5 * self.k2 * q2**2
                + 0.5 * self.k * torch.sigmoid(q1) * (q2 - q1) ** 2)

    invariant = energy

    def vector_field(self, z: torch.Tensor) -> torch.Tensor:
        r""":math:`\dot z = (\partial_p H, -\partial_q H)` for states ``(..., 4)``."""
        q1, q2, p1, p2 = z.unbind(-1)
        s, u = torch.sigmoid(q1), q2 - q1
        ds = s * (1 - s)
        dv1 = self.k1 * q1 + 0.5 * self.k * ds * u**2 - self.k * s * u
        dv2 = self.k2 * q2 + self.k * s * u
        return torch.stack([p1 / self.m1, p2 / self.m2, -dv1, -dv2], dim=-1)

    def jacobian(self, z: torch.Tensor) -> torch.Tensor:
        """The Jacobians of :meth:`vector_field`, ``(..., 4, 4)`` (for the Newton iteration)."""
        q1, q2, _, _ = z.unbind(-1)
        s, u = torch.sigmoid(q1), q2 - q1
        ds = s * (1 - s)
        d2s = ds * (1 - 2 * s)
        v11 = self.k1 + 0.5 * self.k * d2s * u**2 - 2 * self.k * ds * u + self.k * s
        v12 = self.k * ds * u - self.k * s
        v22 = self.k2 + self.k * s
        zero = torch.zeros_like(q1)
        rows = [
            torch.stack([zero, zero, zero + 1 / self.m1, zero], -1),
            torch.stack([zero, zero, zero, zero + 1 / self.m2], -1),
            torch.stack([-v11, -v12, zero, zero], -1),
            torch.stack([-v12, -v22, zero, zero], -1),
        ]
        return torch.stack(rows, dim=-2)

    def initial_conditions(self, n: int, *, seed: int = 0) -> torch.Tensor:
        """``(n, 4)`` states with :math:`q, p` uniform in :math:`[0, 1)` (the tutorial's draw), reproducible from ``seed``."""
        g = torch.Generator().manual_seed(seed)
        return torch.rand(n, 4, generator=g, dtype=self.dtype).to(self.device)

    def step(self, z: torch.Tensor, dt: float = 0.3) -> torch.Tensor:
        """One implicit midpoint step of size ``dt`` for a batch ``(batch, 4)``."""
        return implicit_midpoint_step(self.vector_field, self.jacobian, z, dt)

    def trajectories(self, z0: torch.Tensor, *, t_end: float, dt: float = 0.3) -> torch.Tensor:
        """``(batch, n + 1, 4)`` states at :math:`t = 0, dt, \\dots, n\\,dt` with :math:`n = \\mathrm{round}(t_\\mathrm{end}/dt)`."""
        return self._integrate(z0, t_end, dt)
