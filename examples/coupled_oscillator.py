r"""
Linear symplectic transformers on coupled oscillators
=====================================================

Train the linear symplectic transformer, the standard transformer integrator
and a SympNet on trajectories of two coupled harmonic oscillators, roll each
one out to :math:`t = 200`, ten times past the training window, and measure
the rollout error, the energy drift and the symplecticity of the trained maps.

Run it (defaults: a few minutes on 2 CPU cores)::

    python examples/coupled_oscillator.py               # writes examples/results/coupled_oscillator/
    python examples/coupled_oscillator.py --budget 4    # four times the epochs
    torchrun --nproc_per_node 2 examples/coupled_oscillator.py

It resumes from ``checkpoints/`` when interrupted.
"""

from __future__ import annotations

import torch

from geoattn.experiments import TrainConfig, invariant_drift
from geoattn.experiments.plots import plot_phase_trajectories
from geoattn.experiments.runner import compare, experiment_parser, result_columns, setup, write_results
from geoattn.models import LinearSymplecticTransformer, StandardTransformerIntegrator, SympNetIntegrator
from geoattn.systems import CoupledOscillator

SEQ_LEN = 4
DT = 0.1


def models(seq_len: int) -> dict:
    """The three models of the comparison (float32)."""
    return {
        "LST": lambda: LinearSymplecticTransformer(4, seq_len, n_sympnet=2, depth=2, upscaling_dim=16),
        "standard transformer": lambda: StandardTransformerIntegrator(4, seq_len, transformer_dim=16, n_heads=2,
                                                                      depth=2),
        "SympNet": lambda: SympNetIntegrator(4, 1, n_layers=4, upscaling_dim=16),
    }


def main(argv=None) -> dict | None:
    args = experiment_parser(__doc__.strip().splitlines()[0], "examples/results/coupled_oscillator").parse_args(argv)
    device, out, distributed = setup(args)

    osc = CoupledOscillator()
    t_train, t_test = (2.0, 4.0) if args.quick else (20.0, 200.0)
    train_traj = osc.trajectories(osc.initial_conditions(4 if args.quick else 24, seed=0), t_end=t_train, dt=DT)
    test_traj = osc.trajectories(osc.initial_conditions(2 if args.quick else 6, seed=1), t_end=t_test, dt=DT)
    epochs = 2 if args.quick else max(1, round(300 * args.budget))
    config = TrainConfig(epochs=epochs, batch_size=128, lr=5e-3, checkpoint_every=25)

    cmp = compare(models(SEQ_LEN), train_traj, test_traj, dt=DT, invariant=osc.energy, symplectic=True,
                  config=config, out=out, args=args, device=device)
    if cmp is None:  # not the main process
        return None
    table = write_results(
        out, "coupled_oscillator", cmp,
        system={"m1": osc.m1, "m2": osc.m2, "k1": osc.k1, "k2": osc.k2, "k": osc.k, "dt": DT,
                "t_train": t_train, "t_test": t_test, "train_trajectories": train_traj.shape[0],
                "test_trajectories": test_traj.shape[0],
                "stormer_verlet_energy_drift": float(invariant_drift(test_traj, osc.energy).max())},
        config={"epochs": epochs, "batch_size": config.batch_size, "lr": config.lr, "seq_len": SEQ_LEN,
                "distributed": distributed, "device": str(device)},
        columns=result_columns(t_test, "max rel. energy drift", symplectic=True),
        dt=DT, t_train=t_train, drift_label="relative energy drift",
    )
    t = torch.arange(test_traj.shape[1]) * DT
    plot_phase_trajectories(t, test_traj[0], {k: v[0] for k, v in cmp.pred.items()}, out / "trajectories.png")
    print(table)
    return {"rows": cmp.rows}


if __name__ == "__main__":
    main()
