"""geoattn.systems: the integrators conserve what they should, converge at their order, and window correctly."""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils.data import DataLoader

from geoattn.systems import CoupledOscillator, RigidBody, TrajectoryWindows
from geoattn.testing import assert_symplectic

EPS = torch.finfo(torch.float64).eps


def test_rigid_body_stays_on_sphere():
    body = RigidBody()
    assert body.conserves_sphere
    z = body.trajectories(body.initial_conditions(6), t_end=120.0)
    assert z.shape == (12, 601, 3)
    drift = (body.invariant(z) - 1).abs().max()
    # Newton tolerance 4 eps per step, 600 steps, 3 components
    assert drift <= 4 * 3 * 600 * EPS


def test_rigid_body_quoted_constants_leave_sphere():
    """Negative control (ledger rigid_body.sphere_invariant refuted): A + B + C = 1 does not keep |z|^2."""
    body = RigidBody(1.0, 0.5, -0.5)
    assert not body.conserves_sphere
    z = body.trajectories(body.initial_conditions(4), t_end=12.0)
    assert (body.invariant(z) - 1).abs().max() > 1e-2


def test_from_inertia():
    body = RigidBody.from_inertia(2.0, 1.0, 2.0 / 3.0)
    assert body.conserves_sphere
    assert math.isclose(body.A, 0.5) and math.isclose(body.B, -1.0) and math.isclose(body.C, 0.5)
    with pytest.raises(ValueError, match="positive moments"):
        RigidBody.from_inertia(1.0, 0.0, 1.0)


def test_initial_conditions_on_sphere_families():
    z = RigidBody().initial_conditions(5)
    torch.testing.assert_close(z.norm(dim=-1), torch.ones(10, dtype=torch.float64))
    assert (z[:5, 1] == 0).all() and (z[5:, 0] == 0).all()


def _order(errors, dts):
    return [math.log(errors[i] / errors[i + 1]) / math.log(dts[i] / dts[i + 1]) for i in range(len(errors) - 1)]


def test_implicit_midpoint_second_order():
    body = RigidBody()
    z0 = body.initial_conditions(3)
    t_end = 2.0
    ref = body.trajectories(z0, t_end=t_end, dt=t_end / 1024)[:, -1]
    dts = [0.2, 0.1, 0.05]
    errs = [float((body.trajectories(z0, t_end=t_end, dt=h)[:, -1] - ref).norm(dim=-1).max()) for h in dts]
    for p in _order(errs, dts):
        assert 1.9 < p < 2.1, errs


def test_implicit_midpoint_refuses_to_diverge():
    body = RigidBody()
    with pytest.raises(RuntimeError, match="converge"):
        body.trajectories(body.initial_conditions(2) * 1e3, t_end=1.0, dt=0.5)


def test_oscillator_exact_flow_conserves_energy():
    osc = CoupledOscillator()
    z0 = osc.initial_conditions(4)
    t = torch.linspace(0, 50, 11, dtype=torch.float64)
    z = osc.exact(z0, t)
    e = osc.energy(z)
    assert (e - e[:, :1]).abs().max() <= 64 * EPS * e.abs().max() * 11


def test_stormer_verlet_second_order():
    osc = CoupledOscillator()
    z0 = osc.initial_conditions(4)
    t_end = 5.0
    exact = osc.exact(z0, torch.tensor([t_end]))[:, 0]
    dts = [0.1, 0.05, 0.025]
    errs = [float((osc.trajectories(z0, t_end=t_end, dt=h)[:, -1] - exact).norm(dim=-1).max()) for h in dts]
    for p in _order(errs, dts):
        assert 1.9 < p < 2.1, errs


def test_stormer_verlet_energy_bounded_without_drift():
    """Energy error O(dt^2), the same over t = 100 and t = 1000 (no secular drift)."""
    osc = CoupledOscillator()
    z0 = osc.initial_conditions(4)
    errs = {}
    for h in (0.1, 0.05):
        z = osc.trajectories(z0, t_end=1000.0, dt=h)
        e = (osc.energy(z) - osc.energy(z0)[:, None]).abs()
        n100 = round(100 / h)
        errs[h] = float(e.max())
        assert float(e.max()) <= 1.5 * float(e[:, : n100 + 1].max())
    assert 3.0 < errs[0.1] / errs[0.05] < 5.0


def test_stormer_verlet_step_symplectic():
    osc = CoupledOscillator()
    assert_symplectic(lambda z: osc.step(z, 0.1), osc.initial_conditions(5))


def test_explicit_euler_not_symplectic():
    """Negative control for the check above: an explicit Euler step is not symplectic."""
    osc = CoupledOscillator()
    L = osc.generator()
    with pytest.raises(AssertionError, match="Omega"):
        assert_symplectic(lambda z: z + 0.1 * z @ L.mT, osc.initial_conditions(5))


def test_windows_align_and_load():
    traj = torch.arange(2 * 12 * 3, dtype=torch.float64).reshape(2, 12, 3)
    ds = TrajectoryWindows(traj, seq_len=3, prediction_window=2, stride=2)
    assert len(ds) == 2 * 4  # starts 0, 2, 4, 6 (the last needs 5 steps)
    x, y = ds[5]
    torch.testing.assert_close(x, traj[1, 2:5])
    torch.testing.assert_close(y, traj[1, 5:7])
    X, Y = ds.tensors()
    for i in range(len(ds)):
        torch.testing.assert_close(X[i], ds[i][0])
        torch.testing.assert_close(Y[i], ds[i][1])
    batches = list(DataLoader(ds, batch_size=3, shuffle=False))
    assert [b[0].shape[0] for b in batches] == [3, 3, 2]
    torch.testing.assert_close(torch.cat([b[0] for b in batches]), X)


@pytest.mark.parametrize(
    "args, match",
    [
        ((torch.zeros(5, 3), 2), "n_traj, n_steps, sys_dim"),
        ((torch.zeros(1, 5, 3), 3), "at least seq_len"),
        ((torch.zeros(1, 5, 3), 0), "seq_len"),
    ],
)
def test_windows_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        TrajectoryWindows(*args)


def test_trajectories_bad_input():
    with pytest.raises(ValueError, match=r"\(batch, 3\)"):
        RigidBody().trajectories(torch.zeros(3), t_end=1.0)
    with pytest.raises(ValueError, match=r"\(batch, 4\)"):
        CoupledOscillator().trajectories(torch.zeros(2, 3), t_end=1.0)


def test_nonlinear_oscillator_field_is_hamiltonian_and_its_jacobian_exact():
    from geoattn.systems import NonlinearCoupledOscillator

    osc = NonlinearCoupledOscillator()
    z = torch.randn(7, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    zz = z.clone().requires_grad_()
    (g,) = torch.autograd.grad(osc.energy(zz).sum(), zz)
    eps = torch.finfo(torch.float64).eps
    torch.testing.assert_close(osc.vector_field(z), torch.cat([g[:, 2:], -g[:, :2]], -1), rtol=0, atol=16 * eps)
    jac = torch.func.vmap(torch.func.jacrev(osc.vector_field))(z)
    torch.testing.assert_close(osc.jacobian(z), jac, rtol=0, atol=64 * eps)
    # the coupling is not the linear one: the sigmoid makes the force depend on q1 nonlinearly
    lin = torch.func.vmap(torch.func.jacrev(osc.vector_field))(2 * z)
    assert (lin - jac).abs().max() > 1e-3


def test_nonlinear_oscillator_energy_bounded_over_long_times():
    from geoattn.systems import NonlinearCoupledOscillator

    osc = NonlinearCoupledOscillator()
    z = osc.trajectories(osc.initial_conditions(4, seed=0), t_end=300.0, dt=0.3)
    drift = (osc.energy(z) - osc.energy(z[:, :1])).abs() / osc.energy(z[:, :1])
    # a symplectic scheme: O(dt^2) oscillation, no secular growth (the last third is no worse than the first)
    n = z.shape[1] // 3
    assert drift.max() < 0.05 and drift[:, -n:].max() < 2 * drift[:, :n].max()
