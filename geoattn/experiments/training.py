"""A small, resumable training loop for window-to-window integrators, single process or DDP."""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

__all__ = ["TrainConfig", "train", "relative_l2_loss", "init_distributed", "close_distributed", "is_main_process",
           "world_size", "load_checkpoint"]

_LOSSES = ("mse", "relative")
_SCHEDULES = ("cosine", "exponential")


def relative_l2_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    r"""Mean over the batch of :math:`\lVert y - \hat y\rVert_2 / \lVert y\rVert_2`, each norm over a whole window.

    The loss of the volume-preserving transformer paper: every sample counts
    in proportion to its own size, whatever the scale of the state.
    ``pred`` and ``target`` are ``(batch, ...)``.
    """
    if pred.shape != target.shape:
        raise ValueError(f"Expected pred and target of the same shape. Got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}.")
    norm = target.flatten(1).norm(dim=1)
    if not torch.compiler.is_compiling() and bool((norm == 0).any()):
        raise ValueError("Expected every target window to be nonzero (the loss divides by its norm). Got a zero one.")
    return ((pred - target).flatten(1).norm(dim=1) / norm).mean()


def _loss(name: str, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if name == "relative":
        return relative_l2_loss(pred, target)
    return torch.mean((pred - target) ** 2)


def _chain(net: nn.Module, x: torch.Tensor, k: int) -> torch.Tensor:
    """``k`` windows predicted by feeding the model its own output, concatenated along time."""
    outs = []
    for _ in range(k):
        x = net(x)
        outs.append(x)
    return outs[0] if k == 1 else torch.cat(outs, dim=1)


@dataclasses.dataclass
class TrainConfig:
    r"""Hyperparameters of :func:`train`.

    The learning rate goes from ``lr`` to ``lr * final_lr_fraction`` over
    ``epochs``, along a cosine (``schedule="cosine"``) or geometrically
    (``"exponential"``, the decay of the volume-preserving transformer
    paper). It is computed from the epoch alone, so a resumed run sees the
    same schedule as an uninterrupted one. ``loss`` is ``"mse"`` (mean
    squared error) or ``"relative"`` (:func:`relative_l2_loss`); ``betas``
    are Adam's. ``input_noise`` adds Gaussian noise of that many times the
    inputs' root mean square to every input window (the targets stay
    clean): it trains the map on windows that are not exact pieces of a
    trajectory, which a rollout meets as soon as it makes an error. The
    noise is drawn from a generator of (seed, epoch, rank), so resuming reproduces it.
    ``rollout_windows`` :math:`K > 1` trains on :math:`K` windows predicted
    in a row, each from the previous prediction (targets of
    :math:`K\cdot T` states): the loss then sees how errors grow in a
    rollout.
    """

    epochs: int = 100
    batch_size: int = 128
    lr: float = 1e-2
    final_lr_fraction: float = 0.05
    weight_decay: float = 0.0
    seed: int = 0
    checkpoint_every: int = 10
    loss: str = "mse"
    schedule: str = "cosine"
    betas: tuple[float, float] = (0.9, 0.999)
    input_noise: float = 0.0
    rollout_windows: int = 1

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "checkpoint_every", "rollout_windows"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Expected {name} to be a positive int. Got {v!r}.")
        if not self.lr > 0:
            raise ValueError(f"Expected a positive lr. Got {self.lr!r}.")
        if not 0 < self.final_lr_fraction <= 1:
            raise ValueError(f"Expected final_lr_fraction in (0, 1]. Got {self.final_lr_fraction!r}.")
        if self.loss not in _LOSSES:
            raise ValueError(f"Expected loss to be one of {_LOSSES}. Got {self.loss!r}.")
        if not (self.input_noise >= 0 and math.isfinite(self.input_noise)):
            raise ValueError(f"Expected a finite nonnegative input_noise. Got {self.input_noise!r}.")
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"Expected two Adam betas in [0, 1). Got {self.betas!r}.")
        if self.schedule not in _SCHEDULES:
            raise ValueError(f"Expected schedule to be one of {_SCHEDULES}. Got {self.schedule!r}.")

    def lr_at(self, epoch: int) -> float:
        """The learning rate of ``epoch`` (0-based)."""
        s = epoch / max(self.epochs - 1, 1)
        if self.schedule == "exponential":
            return self.lr * self.final_lr_fraction ** s
        frac = 0.5 * (1 + math.cos(math.pi * s))
        return self.lr * (self.final_lr_fraction + (1 - self.final_lr_fraction) * frac)


def init_distributed() -> bool:
    """Join the process group when launched by ``torchrun`` (``WORLD_SIZE > 1``); gloo on CPU, nccl on CUDA.

    Returns whether the run is distributed.
    """
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return False
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    return True


def close_distributed() -> None:
    """Wait for every rank, then leave and destroy the process group (no-op without one).

    Note [leaving the process group before exit]: a collective launched during ``backward()`` (DDP's
    gradient all-reduce) captures the autograd call's thread-local state, which holds a Python object
    (torch stashes the ``contextvars`` context there for the duration of the backward). gloo's worker
    thread drops its reference to a finished work a moment *after* the waiting thread has been
    released, and dropping it needs the GIL. If the interpreter has begun finalising by then, the worker
    thread cannot take the GIL, exits inside a C++ destructor, and the process aborts ("terminate called
    without an active exception", SIGABRT). Seen in a two-process test that exited right after its
    training step (about one run in three on 2 cores). Destroying the group does not join gloo's threads
    (``DistributedDataParallel`` keeps references to the group after the wrapper is freed, torch 2.13),
    so a process that may exit right after a backward must not finalise the interpreter while a worker
    thread still holds such a work: the test worker leaves with ``os._exit`` after this call. Training
    runs end with a barrier and other work after their last backward, which gives the worker threads
    the GIL long before exit.
    """
    if not dist.is_initialized():
        return
    dist.barrier()
    gc.collect()
    dist.destroy_process_group()


def is_main_process() -> bool:
    """Whether this process writes outputs: rank 0 under ``torchrun``, always without a process group."""
    return not dist.is_initialized() or dist.get_rank() == 0


def world_size() -> int:
    """The number of processes training together (1 without a process group)."""
    return _world()[1]


def _world() -> tuple[int, int]:
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def load_checkpoint(path: str | os.PathLike, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                    map_location=None) -> dict:
    """Load a checkpoint written by :func:`train` into ``model`` (and ``optimizer``); returns its dict."""
    state = torch.load(path, map_location=map_location, weights_only=True)
    _apply_checkpoint(state, model, optimizer)
    return state


def _apply_checkpoint(state: dict, model: nn.Module, optimizer) -> None:
    model.load_state_dict(state["model"])
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])


def _data_shape(inputs: torch.Tensor, targets: torch.Tensor) -> list[int]:
    return [*inputs.shape, *targets.shape]


def _check_resumable(path: Path, state: dict, config: TrainConfig, inputs: torch.Tensor, targets: torch.Tensor) -> None:
    """Refuse a checkpoint written by a different recipe or on different data (resuming it would mix two runs).

    Fields a checkpoint lacks take their defaults (checkpoints of older versions); ``checkpoint_every`` may differ.
    """
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    stored = TrainConfig(**{k: v for k, v in state.get("config", {}).items() if k in known})
    diffs = [f"{f.name}: {getattr(stored, f.name)!r} != {getattr(config, f.name)!r}"
             for f in dataclasses.fields(TrainConfig) if f.name != "checkpoint_every"
             and _plain(getattr(stored, f.name)) != _plain(getattr(config, f.name))]
    shape = state.get("data_shape")
    if shape is not None and list(shape) != _data_shape(inputs, targets):
        diffs.append(f"data shape: {list(shape)} != {_data_shape(inputs, targets)}")
    if diffs:
        raise ValueError(f"Expected the checkpoint {os.fspath(path)!r} to come from the same recipe and data. Got "
                         f"{'; '.join(diffs)}. Pass resume=False (--no-resume) or another output folder.")


def _plain(v):
    return list(v) if isinstance(v, (tuple, list)) else v


def _save(path: Path, model: nn.Module, optimizer, epoch: int, history: dict, config: TrainConfig,
          data_shape: list[int]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": epoch,
            "history": history,
            "config": dataclasses.asdict(config),
            "data_shape": data_shape,
        },
        tmp,
    )
    os.replace(tmp, path)


def train(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, config: TrainConfig, *,
          checkpoint: str | os.PathLike | None = None, resume: bool = True, progress: bool = True,
          desc: str = "train", stop_after: int | None = None) -> dict:
    """Fit ``model(inputs) ~ targets`` with Adam and the loss of ``config``.

    Parameters
    ----------
    model : nn.Module
        on the device and dtype to train in; under ``torchrun`` it is wrapped
        in :class:`~torch.nn.parallel.DistributedDataParallel` here.
    inputs, targets : Tensor
        ``(N, seq_len, sys_dim)`` and the matching windows to predict (for
        instance :meth:`geoattn.systems.TrajectoryWindows.tensors`); moved to
        the model's device and dtype.
    config : TrainConfig
    checkpoint : path, optional
        written (by rank 0) every ``config.checkpoint_every`` epochs and at the
        end, atomically; with ``resume=True`` an existing file is loaded and
        training continues after its epoch (a file written with another
        recipe or other data is refused with a ``ValueError``). Shuffling depends only on
        ``(seed, epoch)``, so a resumed run continues exactly as an
        uninterrupted one.
    progress : bool
        show a progress bar (rank 0 only).
    stop_after : int, optional
        run at most this many epochs in this call (a time-sliced or
        interrupted run; the checkpoint lets the next call go on).

    Returns
    -------
    dict
        ``{"loss": [per-epoch mean loss], "seconds": wall time of this call,
        "seconds_total": wall time over every call that built this checkpoint, "epochs_run": ...}``.
    """
    if inputs.shape[0] != targets.shape[0]:
        raise ValueError(f"Expected as many targets as inputs. Got {inputs.shape[0]} and {targets.shape[0]}.")
    if targets.shape[1] != config.rollout_windows * inputs.shape[1]:
        raise ValueError(f"Expected targets of rollout_windows * seq_len = {config.rollout_windows * inputs.shape[1]} "
                         f"steps. Got {targets.shape[1]}.")
    p0 = next(model.parameters())
    inputs, targets = inputs.to(p0.device, p0.dtype), targets.to(p0.device, p0.dtype)
    rank, world = _world()
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, betas=tuple(config.betas),
                                 weight_decay=config.weight_decay)
    history: dict = {"loss": []}
    start = 0
    path = Path(checkpoint) if checkpoint is not None else None
    if path is not None and resume and path.exists():
        state = torch.load(path, map_location=p0.device, weights_only=True)
        _check_resumable(path, state, config, inputs, targets)
        _apply_checkpoint(state, model, optimizer)
        history = state["history"]
        start = state["epoch"] + 1
    net = model
    if dist.is_initialized():
        net = nn.parallel.DistributedDataParallel(model, device_ids=[p0.device.index] if p0.is_cuda else None)

    n = inputs.shape[0]
    scale = float(inputs.detach().pow(2).mean().sqrt())  # root mean square of the inputs
    per_rank = n // world  # equal shares keep the ranks' step counts equal
    bar = None
    if progress and rank == 0 and start < config.epochs:
        from tqdm.auto import tqdm

        bar = tqdm(total=config.epochs, initial=start, desc=desc, unit="epoch", leave=True)
    seconds_before = float(history.get("seconds_total", 0.0))
    t0 = time.perf_counter()
    end = config.epochs if stop_after is None else min(config.epochs, start + stop_after)
    for epoch in range(start, end):
        for group in optimizer.param_groups:
            group["lr"] = config.lr_at(epoch)
        g = torch.Generator().manual_seed(config.seed * 1_000_003 + epoch)
        order = torch.randperm(n, generator=g)[rank * per_rank:(rank + 1) * per_rank].to(p0.device)
        noise = torch.Generator().manual_seed((config.seed * 1_000_003 + epoch) * 1009 + rank)  # its own per rank
        total, count = torch.zeros((), dtype=torch.float64, device=p0.device), 0
        for i in range(0, per_rank, config.batch_size):
            idx = order[i:i + config.batch_size]
            x = inputs[idx]
            if config.input_noise:
                x = x + (config.input_noise * scale) * torch.randn(x.shape, generator=noise, dtype=x.dtype).to(x.device)
            loss = _loss(config.loss, _chain(net, x, config.rollout_windows), targets[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach().double() * idx.numel()
            count += idx.numel()
        mean = total / count
        if dist.is_initialized():
            dist.all_reduce(mean)
            mean /= world
        history["loss"].append(float(mean))
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{float(mean):.3e}")
        last = epoch == end - 1
        history["seconds_total"] = seconds_before + time.perf_counter() - t0
        if path is not None and rank == 0 and ((epoch + 1) % config.checkpoint_every == 0 or last):
            path.parent.mkdir(parents=True, exist_ok=True)
            _save(path, model, optimizer, epoch, history, config, _data_shape(inputs, targets))
    if bar is not None:
        bar.close()
    if dist.is_initialized():
        dist.barrier()
    history["seconds"] = time.perf_counter() - t0
    history["seconds_total"] = seconds_before + (history["seconds"] if end > start else 0.0)
    history["epochs_run"] = end - start
    return history
