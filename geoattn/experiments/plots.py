"""Figures of the experiments (matplotlib, imported only here)."""

from __future__ import annotations

from pathlib import Path

import torch

__all__ = ["plot_band", "plot_sphere_trajectories", "plot_phase_trajectories"]


def pyplot():
    """``matplotlib.pyplot`` with the non-interactive Agg backend (matplotlib is imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_axes(fig, ax, path: str | Path, *, xlabel: str, ylabel: str, title: str, title_size: int = 9,
              log: bool = False) -> None:
    """Label one figure's axes (a logarithmic y axis with ``log``), add the legend, save it to ``path`` and close it.

    Parameters
    ----------
    fig, ax :
        the matplotlib figure and its axes.
    path : str or Path
        where the image goes (its format from the suffix).
    xlabel, ylabel, title : str
    title_size : int
        font size of the title.
    log : bool
        logarithmic y axis.
    """
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=title_size)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    pyplot().close(fig)


def _finish(fig, ax, path, *, ylabel: str, title: str, log: bool, train_end: float | None) -> None:
    """Axes over time: the end of the training data, labels, legend; saved as PNG and closed."""
    if train_end is not None:
        ax.axvline(train_end, color="0.5", ls=":", lw=1, label="end of training data")
    save_axes(fig, ax, path, xlabel="t", ylabel=ylabel, title=title, log=log)


def plot_band(t: torch.Tensor, curves: dict[str, torch.Tensor], path: str | Path, *, ylabel: str, title: str,
              log: bool = True, train_end: float | None = None, clip: tuple[float, float] | None = None) -> None:
    """Per model, the median over seeds of a curve ``(seeds, n)`` with a band from its minimum to its maximum.

    Infinite values (a diverged rollout) are drawn at the top of the axis
    (``clip``'s upper end, or the largest finite value).
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    finite = [c[torch.isfinite(c)] for c in curves.values()]
    top = clip[1] if clip else max((float(f.max()) for f in finite if f.numel()), default=1.0)
    for name, c in curves.items():
        c = c.double().nan_to_num(nan=top, posinf=top)
        c = c.clamp(*clip) if clip else c.clamp(max=top)
        n = c.shape[-1]
        line, = ax.plot(t[:n].numpy(), c.median(0).values.numpy(), label=name, lw=1.2)
        if c.shape[0] > 1:
            ax.fill_between(t[:n].numpy(), c.amin(0).numpy(), c.amax(0).numpy(), color=line.get_color(), alpha=0.2,
                            lw=0)
    _finish(fig, ax, path, ylabel=ylabel, title=title, log=log, train_end=train_end)


def plot_sphere_trajectories(ref: torch.Tensor, preds: dict[str, torch.Tensor], path: str | Path) -> None:
    """Reference and predicted rigid-body trajectories on the unit sphere, one panel per model."""
    plt = pyplot()
    k = len(preds)
    fig = plt.figure(figsize=(3.2 * k, 3.4), dpi=120)
    u, v = torch.meshgrid(torch.linspace(0, 2 * torch.pi, 40), torch.linspace(0, torch.pi, 20), indexing="ij")
    for i, (name, z) in enumerate(preds.items()):
        ax = fig.add_subplot(1, k, i + 1, projection="3d")
        ax.plot_wireframe((u.cos() * v.sin()).numpy(), (u.sin() * v.sin()).numpy(), v.cos().numpy(),
                          color="0.85", lw=0.3)
        for j in range(ref.shape[0]):
            ax.plot(*ref[j].T.numpy(), color="k", lw=0.8)
            ax.plot(*z[j].T.clamp(-1.5, 1.5).numpy(), lw=0.8)
        ax.set_title(name, fontsize=9)
        ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_phase_trajectories(t: torch.Tensor, ref: torch.Tensor, preds: dict[str, torch.Tensor],
                            path: str | Path) -> None:
    """:math:`q_1(t)` of one trajectory: the reference and each model."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=120)
    ax.plot(t[: ref.shape[0]].numpy(), ref[:, 0].numpy(), color="k", lw=1.5, label="reference")
    for name, z in preds.items():
        ax.plot(t[: z.shape[0]].numpy(), z[:, 0].numpy(), lw=0.9, label=name)
    ax.set_xlabel("t")
    ax.set_ylabel("$q_1$")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
