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

import time
from pathlib import Path

import torch

from geoattn.experiments import (
    TrainConfig,
    diverged,
    init_distributed,
    invariant_drift,
    is_main_process,
    relative_error,
    rollout_trajectories,
    structure_report,
    valid_time,
)
from geoattn.experiments.runner import environment, experiment_parser, fit, markdown_table, write_json
from geoattn.models import ResNetIntegrator, StandardTransformerIntegrator, VolumePreservingTransformer
from geoattn.systems import RigidBody, TrajectoryWindows

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
    distributed = init_distributed()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    body = RigidBody()
    quick = args.quick
    t_train, t_test = (4.0, 8.0) if quick else (24.0, 120.0)
    train_ics = body.initial_conditions(3 if quick else 10)
    test_ics = body.initial_conditions(2 if quick else 4, alpha_min=0.17, alpha_max=1.4)
    train_traj = body.trajectories(train_ics, t_end=t_train, dt=DT)
    test_traj = body.trajectories(test_ics, t_end=t_test, dt=DT)
    epochs = 2 if quick else max(1, round(600 * args.budget))
    config = TrainConfig(epochs=epochs, batch_size=64, lr=5e-3, checkpoint_every=25)

    rows, curves, drifts, preds, histories = [], {}, {}, {}, {}
    for name, build in models(SEQ_LEN).items():
        if args.models and name not in args.models:
            continue
        torch.manual_seed(0)
        model = build().to(device)
        T = model.seq_len
        x, y = TrajectoryWindows(train_traj, T, dtype=torch.float32).tensors()
        hist = fit(name, model, x, y, config, out, args)
        histories[name] = hist
        if not is_main_process():
            continue
        model.eval()
        n_steps = test_traj.shape[1] - T
        t0 = time.perf_counter()
        pred = rollout_trajectories(model, test_traj, n_steps)
        rollout_s = time.perf_counter() - t0
        err = relative_error(pred, test_traj)
        drift = invariant_drift(pred, body.invariant)
        struct = structure_report(model.cpu(), test_traj[:, :T], symplectic=False)
        curves[name], drifts[name], preds[name] = err.mean(0), drift.mean(0), pred
        rows.append({
            "model": name,
            "parameters": sum(p.numel() for p in model.parameters()),
            "final_train_loss": hist["loss"][-1],
            "train_seconds": hist["seconds"],
            "rollout_seconds": rollout_s,
            "rel_error_final": float(err[:, -1].mean()),
            "rel_error_mean": float(err.mean()),
            "valid_time_median": float(valid_time(err, DT).median()),
            "invariant_drift_max": float(drift.max()),
            "diverged": f"{int(diverged(pred).sum())}/{pred.shape[0]}",
            **struct,
        })
    if not is_main_process():
        return None

    metrics = {
        "experiment": "rigid_body",
        "system": {"A": body.A, "B": body.B, "C": body.C, "dt": DT, "t_train": t_train, "t_test": t_test,
                   "train_trajectories": train_traj.shape[0], "test_trajectories": test_traj.shape[0]},
        "config": {"epochs": epochs, "batch_size": config.batch_size, "lr": config.lr, "seq_len": SEQ_LEN,
                   "distributed": distributed, "device": str(device)},
        "environment": environment(torch.get_num_threads()),
        "models": rows,
        "loss_history": {k: v["loss"] for k, v in histories.items()},
    }
    write_json(out / "metrics.json", metrics)
    table = markdown_table(rows, [
        ("model", "model", ""),
        ("parameters", "parameters", "d"),
        ("final_train_loss", "final train loss", ".2e"),
        ("valid_time_median", "median time to 50% error", ".1f"),
        ("rel_error_final", f"rel. error at t={t_test:g}", ".3f"),
        ("rel_error_mean", f"mean rel. error on [0, {t_test:g}]", ".3f"),
        ("invariant_drift_max", "max drift of ‖z‖²", ".2e"),
        ("max_abs_det_minus_one", "max abs(det J − 1), float64", ".1e"),
        ("diverged", "diverged rollouts", ""),
        ("train_seconds", "train s", ".0f"),
    ])
    (out / "table.md").write_text(table)

    from geoattn.experiments.plots import plot_curves, plot_sphere_trajectories

    t = torch.arange(test_traj.shape[1]) * DT
    plot_curves(t, curves, out / "rollout_error.png", ylabel="relative error", train_end=t_train,
                title="rigid body: rollout error (mean over test trajectories)")
    plot_curves(t, {k: v.clamp_min(1e-17) for k, v in drifts.items()}, out / "invariant_drift.png",
                ylabel="abs(‖z(t)‖² − ‖z(0)‖²)", train_end=t_train, title="rigid body: drift of ‖z‖²")
    plot_sphere_trajectories(test_traj, preds, out / "trajectories.png")
    print(table)
    return metrics


if __name__ == "__main__":
    main()
