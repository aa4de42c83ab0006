r"""
Volume-preserving transformers on the rigid body
================================================

Train the volume-preserving transformer (skew and arbitrary weighting), the
standard transformer integrator and a plain residual network on trajectories
of the free rigid body, then roll each one out to :math:`t = 120`, five times
past the training window, and measure the rollout error, the drift of
:math:`|z|^2` and the volume preservation of the trained maps.

Run it (defaults: a few minutes on 2 CPU cores)::

    python examples/rigid_body.py                 # writes examples/results/rigid_body/
    python examples/rigid_body.py --budget 4      # four times the epochs
    torchrun --nproc_per_node 2 examples/rigid_body.py   # the same under DistributedDataParallel

It resumes from ``checkpoints/`` when interrupted.
"""

from __future__ import annotations



from geoattn.experiments import TrainConfig
from geoattn.experiments.plots import plot_sphere_trajectories
from geoattn.experiments.runner import compare, experiment_parser, result_columns, setup, write_results
from geoattn.models import ResNetIntegrator, StandardTransformerIntegrator, VolumePreservingTransformer
from geoattn.systems import RigidBody

SEQ_LEN = 3
DT = 0.2


def models(seq_len: int) -> dict:
    """The four models of the comparison (float32)."""
    return {
        "VPT (skew)": lambda: VolumePreservingTransformer(3, seq_len, depth=2, n_blocks=1, n_linear=1, skew_sym=True),
        "VPT (arbitrary)": lambda: VolumePreservingTransformer(3, seq_len, depth=2, n_blocks=1, n_linear=1,
                                                               skew_sym=False),
        "standard transformer": lambda: StandardTransformerIntegrator(3, seq_len, transformer_dim=12, n_heads=2,
                                                                      depth=2),
        "ResNet": lambda: ResNetIntegrator(3, 1, width=32, depth=3),
    }


def main(argv=None) -> dict | None:
    args = experiment_parser(__doc__.strip().splitlines()[0], "examples/results/rigid_body").parse_args(argv)
    device, out, distributed = setup(args)

    body = RigidBody()
    t_train, t_test = (4.0, 8.0) if args.quick else (24.0, 120.0)
    train_ics = body.initial_conditions(3 if args.quick else 10)
    test_ics = body.initial_conditions(2 if args.quick else 4, alpha_min=0.17, alpha_max=1.4)
    train_traj = body.trajectories(train_ics, t_end=t_train, dt=DT)
    test_traj = body.trajectories(test_ics, t_end=t_test, dt=DT)
    epochs = 2 if args.quick else max(1, round(600 * args.budget))
    config = TrainConfig(epochs=epochs, batch_size=64, lr=5e-3, checkpoint_every=25)

    cmp = compare(models(SEQ_LEN), train_traj, test_traj, dt=DT, invariant=body.invariant, symplectic=False,
                  config=config, out=out, args=args, device=device)
    if cmp is None:  # not the main process
        return None
    table = write_results(
        out, "rigid_body", cmp,
        system={"A": body.A, "B": body.B, "C": body.C, "dt": DT, "t_train": t_train, "t_test": t_test,
                "train_trajectories": train_traj.shape[0], "test_trajectories": test_traj.shape[0]},
        config={"epochs": epochs, "batch_size": config.batch_size, "lr": config.lr, "seq_len": SEQ_LEN,
                "distributed": distributed, "device": str(device)},
        columns=result_columns(t_test, "max drift of ‖z‖²", symplectic=False),
        dt=DT, t_train=t_train, drift_label="drift of ‖z‖²",
    )
    plot_sphere_trajectories(test_traj, cmp.pred, out / "trajectories.png")
    print(table)
    return {"rows": cmp.rows}


if __name__ == "__main__":
    main()
