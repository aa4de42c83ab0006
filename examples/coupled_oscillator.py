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
from geoattn.models import LinearSymplecticTransformer, StandardTransformerIntegrator, SympNetIntegrator
from geoattn.systems import CoupledOscillator, TrajectoryWindows

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
    distributed = init_distributed()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    osc = CoupledOscillator()
    quick = args.quick
    t_train, t_test = (2.0, 4.0) if quick else (20.0, 200.0)
    train_traj = osc.trajectories(osc.initial_conditions(4 if quick else 24, seed=0), t_end=t_train, dt=DT)
    test_traj = osc.trajectories(osc.initial_conditions(2 if quick else 6, seed=1), t_end=t_test, dt=DT)
    epochs = 2 if quick else max(1, round(300 * args.budget))
    config = TrainConfig(epochs=epochs, batch_size=128, lr=5e-3, checkpoint_every=25)

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
        drift = invariant_drift(pred, osc.energy)
        struct = structure_report(model.cpu(), test_traj[:, :T], symplectic=True)
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

    reference_drift = float(invariant_drift(test_traj, osc.energy).max())
    metrics = {
        "experiment": "coupled_oscillator",
        "system": {"m1": osc.m1, "m2": osc.m2, "k1": osc.k1, "k2": osc.k2, "k": osc.k, "dt": DT,
                   "t_train": t_train, "t_test": t_test, "train_trajectories": train_traj.shape[0],
                   "test_trajectories": test_traj.shape[0], "stormer_verlet_energy_drift": reference_drift},
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
        ("invariant_drift_max", "max rel. energy drift", ".2e"),
        ("max_abs_det_minus_one", "max abs(det J − 1), float64", ".1e"),
        ("max_symplecticity_error", "max ‖JᵀΩJ − Ω‖, float64", ".1e"),
        ("diverged", "diverged rollouts", ""),
        ("train_seconds", "train s", ".0f"),
    ])
    (out / "table.md").write_text(table)

    from geoattn.experiments.plots import plot_curves, plot_phase_trajectories

    t = torch.arange(test_traj.shape[1]) * DT
    plot_curves(t, curves, out / "rollout_error.png", ylabel="relative error", train_end=t_train,
                title="coupled oscillators: rollout error (mean over test trajectories)")
    plot_curves(t, {k: v.clamp_min(1e-17) for k, v in drifts.items()}, out / "invariant_drift.png",
                ylabel="relative energy drift", train_end=t_train, title="coupled oscillators: energy drift")
    plot_phase_trajectories(t, test_traj[0], {k: v[0] for k, v in preds.items()}, out / "trajectories.png")
    print(table)
    return metrics


if __name__ == "__main__":
    main()
