"""A DistributedDataParallel training step (two gloo processes on CPU) equals the single-process step."""

import os
import subprocess
import sys

import torch

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)

import ddp_worker  # noqa: E402


def test_two_process_ddp_step_matches_single_process(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(HERE, "ddp_worker.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    states = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(ddp_worker.WORLD)]
    model = ddp_worker.build_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ddp_worker.step(model, *ddp_worker.batch())
    reference = model.state_dict()
    eps = torch.finfo(torch.float32).eps
    moved = False
    for key, ref in reference.items():
        for state in states:
            assert torch.equal(state[key], states[0][key]), key  # ranks agree exactly
            tol = 64 * ref.shape[-1] * eps * max(1.0, float(ref.abs().max()))
            assert float((state[key] - ref).abs().max()) <= tol, key
        moved |= not torch.equal(ref, before[key])
    assert moved  # the step changed the parameters

