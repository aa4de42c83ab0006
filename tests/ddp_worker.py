"""Two-process DistributedDataParallel training step on a model of geoattn layers (gloo, CPU).

Run by tests/test_distributed.py as ``python tests/ddp_worker.py OUT_DIR``; each rank saves its
parameters after one step to ``OUT_DIR/rank{r}.pt``.
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from geoattn.experiments import close_distributed  # noqa: E402
from geoattn.nn import LinearSymplecticAttention, MultiHeadAttention, VolumePreservingAttention  # noqa: E402

WORLD = 2


def build_model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        VolumePreservingAttention(4),
        LinearSymplecticAttention(5),
        MultiHeadAttention(4, 2, add_connection=True, stiefel=True),
    )


def batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(8, 5, 4, generator=g), torch.randn(8, 5, 4, generator=g)


def step(model, x, y):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


def worker(rank: int, out_dir: str, init_file: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    model = torch.nn.parallel.DistributedDataParallel(build_model())
    x, y = batch()
    half = x.shape[0] // WORLD
    step(model, x[rank * half:(rank + 1) * half], y[rank * half:(rank + 1) * half])
    torch.save(model.module.state_dict(), os.path.join(out_dir, f"rank{rank}.pt"))
    close_distributed()
    # The process ends without finalising the interpreter: a gloo worker thread may still be releasing
    # the backward's all-reduce, which needs the GIL (Note [leaving the process group before exit] in
    # geoattn.experiments.training); finalising under it aborts the process.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    out = sys.argv[1]
    mp.spawn(worker, args=(out, os.path.join(out, "init")), nprocs=WORLD, join=True)
