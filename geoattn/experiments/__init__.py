"""Training, evaluation and figures for the experiments in ``examples/``.

:func:`train` is a resumable Adam loop over window pairs that runs in one
process or under ``torchrun`` (DistributedDataParallel); :mod:`.evaluation`
measures rollout error, drift of conserved quantities and the structure of
trained models; :mod:`.plots` draws the figures (needs matplotlib);
:func:`save_model` and :func:`load_model` store a trained model's
architecture and weights in one ``weights_only``-safe file; :mod:`.runner`
runs a comparison over seeds for the scripts in ``examples/``.
"""

from .evaluation import (
    diverged,
    invariant_drift,
    relative_error,
    rollout_trajectories,
    structure_report,
    valid_time,
)
from .io import ModelFileError, ModelSpec, load_model, save_model
from .training import (
    TrainConfig,
    close_distributed,
    init_distributed,
    is_main_process,
    load_checkpoint,
    relative_l2_loss,
    train,
)

__all__ = [
    "TrainConfig",
    "train",
    "relative_l2_loss",
    "ModelSpec",
    "save_model",
    "load_model",
    "ModelFileError",
    "init_distributed",
    "close_distributed",
    "is_main_process",
    "load_checkpoint",
    "rollout_trajectories",
    "diverged",
    "relative_error",
    "valid_time",
    "invariant_drift",
    "structure_report",
]
