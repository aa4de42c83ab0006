"""Data from physical systems, generated locally: the rigid body, coupled oscillators, and windowing.

Trajectories are ``(n_traj, n_steps + 1, sys_dim)`` float64 tensors;
:class:`TrajectoryWindows` turns them into ``(input window, prediction
window)`` pairs for a :class:`torch.utils.data.DataLoader`.
"""

from ._solvers import implicit_midpoint_step, integrate, stormer_verlet_step
from .oscillator import CoupledOscillator, NonlinearCoupledOscillator
from .rigid_body import RigidBody
from .windows import TrajectoryWindows

__all__ = [
    "RigidBody",
    "CoupledOscillator",
    "NonlinearCoupledOscillator",
    "TrajectoryWindows",
    "implicit_midpoint_step",
    "stormer_verlet_step",
    "integrate",
]
