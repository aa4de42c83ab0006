"""A batched incoming gradient (``is_grads_batched=True``, as ``torch.func.jacobian(vectorize=True)`` sends) gives
each vector's gradient on every route with its own backward, the same as one call per vector (the stored-record
adjoints cannot read a batched gradient: those routes pull it back through their differentiable form)."""

import pytest
import torch

import geoattn.kernels as K


def _skew(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(*shape, generator=g, dtype=dtype)
    return a - a.mT


def _agree(f, inputs, route, name, **kw):
    e = K.explain(name, *[t.detach() for t in inputs], **kw)
    if e.route is None or f"{e.route.name}" != route:
        pytest.skip(f"{route} does not serve here: {e.route.name if e.route else None}")
    inputs = [t.detach().requires_grad_() for t in inputs]
    y = f(*inputs)
    V = torch.randn((3,) + y.shape, dtype=y.dtype, generator=torch.Generator().manual_seed(1))
    batched = torch.autograd.grad(y, inputs, V, is_grads_batched=True, retain_graph=True)
    for k in range(3):
        one = torch.autograd.grad(y, inputs, V[k], retain_graph=True)
        for b, o in zip(batched, one):
            tol = 16 * y.shape[-1] * torch.finfo(o.dtype).eps * float(o.abs().max())
            assert float((b[k] - o).abs().max()) <= tol


@pytest.mark.parametrize("T", [3, 8])
def test_exp_skew_float64(T):
    S = _skew(2, T, T, dtype=torch.float64)
    _agree(K.exp_skew, [S], "taylor-batched/eager", "exp_skew")


@pytest.mark.parametrize("d,T,route", [(20, 40, "gram-exp-wide/native"), (40, 64, "gram-exp-wide/native"),
                                       (8, 16, "gram-exp/native")])
def test_vp_attention_exp(d, T, route):
    x = torch.randn(2, T, d, generator=torch.Generator().manual_seed(2))
    A = _skew(d, d) / d
    _agree(lambda a, b: K.vp_attention(a, b, activation="exp"), [x, A], route, "vp_attention", activation="exp")
