"""Windowing trajectories into (input window, prediction window) pairs for a ``DataLoader``."""

from __future__ import annotations

import numbers

import torch
from torch.utils.data import Dataset

__all__ = ["TrajectoryWindows"]


class TrajectoryWindows(Dataset):
    r"""All pairs :math:`(z^{(s)}, \dots, z^{(s+T-1)}) \mapsto (z^{(s+T)}, \dots, z^{(s+T+P-1)})` of a set of trajectories.

    Parameters
    ----------
    trajectories : Tensor
        ``(n_traj, n_steps, sys_dim)``.
    seq_len : int
        :math:`T`, the input window.
    prediction_window : int, optional
        :math:`P`, default :math:`T` (what the transformer integrators predict).
    stride : int
        distance between consecutive start indices :math:`s`.
    dtype : torch.dtype, optional
        cast the windows (e.g. to float32 for training).

    Examples
    --------
    >>> z = torch.arange(2 * 10 * 3.0).reshape(2, 10, 3)
    >>> ds = TrajectoryWindows(z, seq_len=3)
    >>> len(ds), ds[0][0].shape, ds[0][1][0, 0].item()
    (10, torch.Size([3, 3]), 9.0)
    """

    def __init__(self, trajectories: torch.Tensor, seq_len: int, prediction_window: int | None = None, *,
                 stride: int = 1, dtype: torch.dtype | None = None) -> None:
        if not isinstance(trajectories, torch.Tensor) or trajectories.dim() != 3:
            raise ValueError(
                f"Expected trajectories of shape (n_traj, n_steps, sys_dim). Got "
                f"{tuple(trajectories.shape) if isinstance(trajectories, torch.Tensor) else type(trajectories).__name__}."
            )
        P = seq_len if prediction_window is None else prediction_window
        for name, v in (("seq_len", seq_len), ("prediction_window", P), ("stride", stride)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"Expected {name} to be a positive int. Got {v!r}.")
        n_steps = trajectories.shape[1]
        if seq_len + P > n_steps:
            raise ValueError(
                f"Expected trajectories with at least seq_len + prediction_window = {seq_len + P} steps. Got {n_steps}."
            )
        self.data = trajectories if dtype is None else trajectories.to(dtype)
        seq_len, P, stride = int(seq_len), int(P), int(stride)
        self.seq_len, self.prediction_window, self.stride = seq_len, P, stride
        self.starts = torch.arange(0, n_steps - seq_len - P + 1, stride)

    def __len__(self) -> int:
        return self.data.shape[0] * len(self.starts)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"Expected an index in [0, {len(self)}). Got {i}.")
        i %= len(self)
        traj, s = divmod(i, len(self.starts))
        s = int(self.starts[s])
        T, P = self.seq_len, self.prediction_window
        return self.data[traj, s:s + T], self.data[traj, s + T:s + T + P]

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every pair stacked: ``(len(self), T, d)`` and ``(len(self), P, d)``, in index order."""
        T, P = self.seq_len, self.prediction_window
        idx = self.starts[:, None] + torch.arange(T + P)[None]  # (n_starts, T + P)
        w = self.data[:, idx]  # (n_traj, n_starts, T + P, d)
        w = w.reshape(-1, T + P, self.data.shape[-1])
        return w[:, :T], w[:, T:]
