"""Training, evaluation and figures for the experiments in ``examples/``.

:func:`train` is a resumable Adam loop over window pairs that runs in one
process or under ``torchrun`` (DistributedDataParallel); :mod:`.evaluation`
measures rollout error, drift of conserved quantities and the structure of
trained models; :mod:`.plots` draws the figures (needs matplotlib).
"""

from .evaluation import (
    diverged,
    invariant_drift,
    relative_error,
    rollout_trajectories,
    structure_report,
    valid_time,
)
from .training import TrainConfig, init_distributed, is_main_process, load_checkpoint, train

__all__ = [
    "TrainConfig",
    "train",
    "init_distributed",
    "is_main_process",
    "load_checkpoint",
    "rollout_trajectories",
    "diverged",
    "relative_error",
    "valid_time",
    "invariant_drift",
    "structure_report",
]
