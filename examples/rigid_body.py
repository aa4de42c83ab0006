r"""
Volume-preserving transformers on the rigid body
================================================

The experiment of the volume-preserving transformer paper (Brantner et al.,
arXiv 2312.11166): the free rigid body with moments of inertia
:math:`(2, 1, \tfrac23)`, integrated with the implicit midpoint rule at
:math:`\Delta t = 0.2` on :math:`t \in [0, 12]` from the 1,238 initial
conditions :math:`(\sin v, 0, \cos v)` and :math:`(0, \sin v, \cos v)`,
:math:`v = 0.1, 0.11, \dots, 2\pi`. Windows of three states predict the next
three; the loss is the relative error :math:`\lVert y - \mathcal N(x)\rVert_2 /
\lVert y\rVert_2` of each window; Adam's learning rate decays geometrically.
The models have the paper's sizes in free parameters: the volume-preserving
transformer (skew weighting, 162; arbitrary weighting, 180), the
volume-preserving feed-forward network (135) and the standard transformer.

Every model is trained with several seeds and rolled out to :math:`t = 100`
from held-out initial conditions (values of :math:`v` halfway between the
training grid's, both families): relative error at :math:`t = 12, 50, 100`,
time to 50 % error, the range of :math:`|z|` (exactly 1 for the true flow),
diverged rollouts and the measured volume preservation of the trained maps.

Run it::

    python examples/rigid_body.py                  # the default recipe, 3 seeds, writes examples/results/rigid_body/
    python examples/rigid_body.py --budget 2       # twice the optimiser steps
    python examples/rigid_body.py --paper          # the paper's schedule: batch 16384, 5e5 epochs (a GPU, hours)
    python examples/rigid_body.py --quick          # seconds: every step on a tiny problem

It resumes from ``checkpoints/`` when interrupted, and writes the trained
models to ``models/`` (read them back with
:func:`geoattn.experiments.load_model`).
"""

from __future__ import annotations

import math

import torch

from geoattn.experiments import ModelSpec, TrainConfig
from geoattn.experiments.plots import plot_band, plot_sphere_trajectories
from geoattn.experiments.runner import Experiment, experiment_parser, run, setup, write_results
from geoattn.systems import RigidBody

SEQ_LEN = 3
DT = 0.2
T_TRAIN, T_TEST = 12.0, 100.0
EVAL_TIMES = (12.0, 50.0, 100.0)

#: the paper's architectures; the counts are free parameters (see ``count_parameters``)
MODELS = {
    "VPT (skew)": ModelSpec("VolumePreservingTransformer", {
        "sys_dim": 3, "seq_len": SEQ_LEN, "n_blocks": 2, "n_linear": 1, "depth": 3, "skew_sym": True}),
    "VPT (arbitrary)": ModelSpec("VolumePreservingTransformer", {
        "sys_dim": 3, "seq_len": SEQ_LEN, "n_blocks": 2, "n_linear": 1, "depth": 3, "skew_sym": False}),
    "VPFF": ModelSpec("VolumePreservingFeedForwardIntegrator", {"sys_dim": 3, "n_blocks": 6, "n_linear": 1}),
    "standard transformer": ModelSpec("StandardTransformerIntegrator", {
        "sys_dim": 3, "seq_len": SEQ_LEN, "transformer_dim": 3, "n_heads": 1, "depth": 3, "n_blocks": 2,
        "positional": False}),
}

#: default recipe: optimiser steps, batch, learning rate from LR to LR * LR_DECAY (see the experiments page)
STEPS, BATCH, LR, LR_DECAY = 40_000, 1024, 1e-2, 1e-2


def initial_conditions(v: torch.Tensor) -> torch.Tensor:
    """``(2 len(v), 3)``: :math:`(\\sin v, 0, \\cos v)` then :math:`(0, \\sin v, \\cos v)`."""
    s, c, o = v.sin(), v.cos(), torch.zeros_like(v)
    return torch.cat([torch.stack([s, o, c], -1), torch.stack([o, s, c], -1)])


def training_grid(quick: bool) -> torch.Tensor:
    """The paper's :math:`v = 0.1, 0.11, \\dots` up to :math:`2\\pi` (619 values; 9 with ``quick``)."""
    n = math.floor((2 * math.pi - 0.1) / 0.01 + 1e-9) + 1
    v = 0.1 + 0.01 * torch.arange(n, dtype=torch.float64)
    return v[:: n // 8][:9] if quick else v


def held_out(n: int) -> torch.Tensor:
    """``n`` values of :math:`v` halfway between grid points, spread over the grid."""
    k = torch.linspace(0, 617, n, dtype=torch.float64).round()
    return 0.105 + 0.01 * k


def norm_range(pred: torch.Tensor, ref: torch.Tensor) -> dict:
    """The smallest and largest :math:`|z|` over every rollout that did not diverge (the flow keeps 1)."""
    norms = pred.norm(dim=-1)
    ok = torch.isfinite(norms).all(-1)
    norms = norms[ok]
    return {"norm_min": float(norms.min()) if norms.numel() else math.nan,
            "norm_max": float(norms.max()) if norms.numel() else math.nan}


def config(args) -> TrainConfig:
    """The training recipe of ``args``: ``--quick``, ``--paper`` or the default (whose epochs the runner sets per
    model from :func:`steps`)."""
    if args.quick:
        return TrainConfig(epochs=2, batch_size=64, lr=LR, final_lr_fraction=LR_DECAY, loss="relative",
                           schedule="exponential", checkpoint_every=1)
    if args.paper:
        return TrainConfig(epochs=max(1, round(500_000 * args.budget)), batch_size=16384, lr=1e-2,
                           final_lr_fraction=1e-4, loss="relative", schedule="exponential", betas=(0.9, 0.99),
                           checkpoint_every=500)
    return TrainConfig(epochs=1, batch_size=BATCH, lr=LR, final_lr_fraction=LR_DECAY, loss="relative",
                       schedule="exponential", checkpoint_every=25)


def steps(args) -> int | None:
    """Optimiser steps per model in the default recipe (``--budget`` scales them); None for --quick and --paper."""
    return None if args.quick or args.paper else round(args.budget * STEPS)


def parser():
    """The options of every experiment, and ``--paper``."""
    p = experiment_parser(__doc__.strip().splitlines()[0], "examples/results/rigid_body")
    p.add_argument("--paper", action="store_true", help="the paper's full training schedule (hours; for a GPU)")
    return p


def main(argv=None) -> dict | None:
    """Train, evaluate and write the results (``argv`` as on the command line)."""
    args = parser().parse_args(argv)
    device, out, distributed = setup(args)

    body = RigidBody.from_inertia(2.0, 1.0, 2.0 / 3.0)
    train_traj = body.trajectories(initial_conditions(training_grid(args.quick)), t_end=T_TRAIN, dt=DT)
    t_test = 14.0 if args.quick else T_TEST
    test_traj = body.trajectories(initial_conditions(held_out(2 if args.quick else 8)), t_end=t_test, dt=DT)
    exp = Experiment(
        name="rigid_body", models=MODELS, train_traj=train_traj, test_traj=test_traj, dt=DT, config=config(args),
        eval_times=tuple(t for t in EVAL_TIMES if t <= t_test), symplectic=False, rollout_metrics=norm_range,
        steps=steps(args),
    )
    res = run(exp, args, device)
    if res is None:  # not the main process
        return None
    columns = [("parameters_free", "free parameters", "d"), ("final_train_loss", "final train loss", ".2e")]
    columns += [(f"rel_error_t{t:g}", f"median rel. error at t={t:g}", ".3f") for t in exp.eval_times]
    columns += [("valid_time_median", "median time to 50% error", ".1f"), ("norm_min", "min ‖z‖", ".3f"),
                ("norm_max", "max ‖z‖", ".3f"), ("diverged", "diverged rollouts", "d"),
                ("max_abs_det_minus_one", "max abs(det J − 1), float64", ".1e"),
                ("max_spectral_radius", "max abs(λ) of J", ".2f"), ("train_seconds", "train s", ".0f")]
    table = write_results(
        out, exp, res, columns=columns, args=args,
        system={"inertia": [2.0, 1.0, 2.0 / 3.0], "A": body.A, "B": body.B, "C": body.C, "dt": DT,
                "t_train": T_TRAIN, "t_test": t_test, "train_trajectories": train_traj.shape[0],
                "test_trajectories": test_traj.shape[0], "held_out_v": held_out(2 if args.quick else 8).tolist()},
        extra_config={"distributed": distributed, "device": str(device), "seq_len": SEQ_LEN},
    )
    t = torch.arange(test_traj.shape[1]) * DT
    plot_band(t, res["error"], out / "rollout_error.png", ylabel="median relative error over rollouts",
              title="rigid body: rollout error (median over seeds, band: min–max)", train_end=T_TRAIN)
    plot_band(t, {k: (v - 1).abs().nan_to_num(nan=math.inf).amax(1) for k, v in res["states"].items()},  # nan: diverged
              out / "norm_deviation.png", ylabel="max over rollouts of abs(‖z‖ − 1)", clip=(1e-4, 10.0),
              title="rigid body: distance from the sphere (median over seeds, band: min–max)", train_end=T_TRAIN)
    plot_sphere_trajectories(test_traj[::max(1, test_traj.shape[0] // 4)],
                             {k: v[::max(1, v.shape[0] // 4)] for k, v in res["pred"].items()},
                             out / "trajectories.png")
    print(table)
    return res


if __name__ == "__main__":
    main()
