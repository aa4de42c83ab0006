"""torch.compile(fullgraph=True) of every layer and model, forward and backward, against eager.

The cases are the layers' and models' own example constructions (geoattn.nn._cases, geoattn.models._cases), one
per code path: every activation, update, weighting and option that changes what runs. Each case is compiled with
``aot_eager`` on its own (a failure names the case); ``inductor``, whose compiles are the slow part on a CPU, compiles
one module that holds every case, so that all of them share one compile. Both compare the output and the gradients of
the input and of every parameter with eager, within ``K * n * eps(float32)`` relative to the largest reference entry,
``n`` the numbers per sample.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from geoattn.models._cases import all_cases

CASES = {c.label: c for c in all_cases()}
#: rounding of float32 compositions reordered by the compiler (measured: at most 0.66 n eps max|eager| with
#: aot_eager and 0.55 with inductor over every case, output and gradient)
K = 16


def _run(module: nn.Module, x: torch.Tensor, cotangent: torch.Tensor):
    """The output, and the gradients of ``<output, cotangent>`` in the input and every parameter."""
    x = x.detach().requires_grad_(True)
    y = module(x)
    grads = torch.autograd.grad((y * cotangent).sum(), [x, *module.parameters()], allow_unused=True)
    return y.detach(), grads


def _mismatch(got, want) -> str | None:
    """None when ``got`` agrees with ``want`` within the tolerance, else what differs and by how much."""
    (y, gy), (y0, g0) = got, want
    names = ["output", "input gradient", *(f"gradient {i}" for i in range(len(g0) - 1))]
    for name, a, b in zip(names, (y, *gy), (y0, *g0)):
        if (a is None) != (b is None):
            return f"{name}: one of compiled and eager is None"
        if a is None:
            continue
        n = y0[0].numel()  # numbers per sample
        tol = K * n * torch.finfo(b.dtype).eps * max(1.0, float(b.abs().max()))
        err = float((a - b).abs().max())
        if not err <= tol:  # also catches nan
            return f"{name}: max |compiled - eager| = {err:.3g} > {tol:.3g}"
    return None


def _inputs(label: str):
    case = CASES[label]
    torch.manual_seed(sorted(CASES).index(label))
    module = case.build()
    x = torch.randn(case.shape)
    return module, x, torch.randn_like(module(x))


def _fresh() -> None:
    """A fresh dynamo cache (no recompile limit carried over from other instances of a class) and counters."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()


def _graphs() -> int:
    """How many graphs dynamo compiled since :func:`_fresh`."""
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


@pytest.mark.parametrize("label", list(CASES))
def test_fullgraph_aot_eager_matches_eager(label):
    _fresh()
    module, x, w = _inputs(label)
    want = _run(module, x, w)
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager", dynamic=False)
    got = _run(compiled, x, w)
    assert _graphs() == 1, f"{label}: expected one compiled graph, got {_graphs()}"
    assert _mismatch(got, want) is None, f"{label}: {_mismatch(got, want)}"


class _Every(nn.Module):
    """Every case's module, each applied to its own input: one graph, one inductor compile."""

    def __init__(self, modules):
        super().__init__()
        self.cases = nn.ModuleList(modules)

    def forward(self, xs):
        return [m(x) for m, x in zip(self.cases, xs)]


@pytest.mark.slow
def test_fullgraph_inductor_matches_eager_for_every_case():
    """Every case in one inductor compile (about 2.5 min cold on 2 cores; ``-m 'not slow'`` skips it, and every case
    is still compiled fullgraph, forward and backward, by the aot_eager test above, which captures the same graph)."""
    _fresh()
    labels = list(CASES)
    built = [_inputs(label) for label in labels]
    want = [_run(m, x, w) for m, x, w in built]
    every = _Every([m for m, _, _ in built])
    compiled = torch.compile(every, fullgraph=True, backend="inductor", dynamic=False)
    xs = [x.detach().requires_grad_(True) for _, x, _ in built]
    ys = compiled(xs)
    params = [list(m.parameters()) for m in every.cases]
    loss = sum((y * w).sum() for y, (_, _, w) in zip(ys, built))
    flat = torch.autograd.grad(loss, [*xs, *(p for ps in params for p in ps)], allow_unused=True)
    assert _graphs() == 1, f"expected one compiled graph, got {_graphs()}"
    rest = iter(flat[len(xs):])
    bad = {}
    for label, y, gx, ps, ref in zip(labels, ys, flat, params, want):
        why = _mismatch((y.detach(), (gx, *(next(rest) for _ in ps))), ref)
        if why is not None:
            bad[label] = why
    assert not bad, bad


def test_the_comparison_catches_a_wrong_result():
    """Negative controls: a gradient off by a few tolerances, a missing gradient, a nan output."""
    module, x, w = _inputs("OrthonormalAttention")
    y, grads = _run(module, x, w)
    assert _mismatch((y, grads), (y, grads)) is None
    g = grads[1]
    off = g + 4 * K * y[0].numel() * torch.finfo(g.dtype).eps * max(1.0, float(g.abs().max()))
    assert "gradient 0" in _mismatch((y, (grads[0], off, *grads[2:])), (y, grads))
    assert "None" in _mismatch((y, (grads[0], None, *grads[2:])), (y, grads))
    assert "output" in _mismatch((y * float("nan"), grads), (y, grads))


@pytest.mark.filterwarnings("ignore:Dynamo does not know how to trace")
def test_the_compile_test_catches_the_functorch_query(monkeypatch):
    """Negative control: with the functorch query traced again (the reported failure), fullgraph refuses."""
    from geoattn.kernels import _symattn

    def query(t):
        return bool(torch._C._functorch.is_functorch_wrapped_tensor(t))

    monkeypatch.setattr(_symattn, "_under_functorch", query)
    _fresh()
    module, x, _ = _inputs("SymplecticAttention(dim)")
    with pytest.raises(torch._dynamo.exc.Unsupported, match="skipped"):
        torch.compile(module, fullgraph=True, backend="aot_eager")(x)
