"""The reused scratch of the native Gram routes (Note [reused scratch] in geoattn.kernels._scratch): the pool hands a
released tensor back, never one still taken, and a poisoned scratch tensor changes no result of the layers."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from conftest import skew64
from geoattn.kernels import _native_exp, _native_lu, _scratch

F32 = torch.float32


def test_the_pool_reuses_a_released_tensor_and_never_one_still_taken():
    shape = (3, 5, 5)
    a = _scratch.scratch(shape, torch.float64)
    _scratch.release(a)
    b = _scratch.scratch(shape, torch.float64)
    assert b is a
    c = _scratch.scratch(shape, torch.float64)  # b is still taken
    assert c is not b and c.shape == shape and c.dtype == torch.float64
    _scratch.release(b, c)
    kept = [_scratch.scratch((k + 1, 2), F32) for k in range(_scratch.SCRATCH_KEPT + 3)]
    _scratch.release(*kept)
    assert sum(map(len, _scratch._scratch.values())) <= _scratch.SCRATCH_KEPT


def _route_or_skip(activation, d):
    ok, why = (_native_lu.lu_native_status(d, F32) if activation == "cayley"
               else _native_exp.exp_native_status(d, F32))
    if not ok:
        pytest.skip(why)


def _grads(x, A, activation, dense):
    xr, Ar = x.clone().requires_grad_(), A.clone().requires_grad_()
    y = K.vp_attention(xr, Ar, activation=activation)
    (y.backward(dense) if dense is not None else y.sum().backward())
    return y.detach(), xr.grad, Ar.grad


def _poison_pool():
    free = [t for ts in _scratch._scratch.values() for t in ts]
    for t in free:
        t.fill_(float("nan"))
    return {id(t) for t in free}


def _poisoned_scratch_changes_nothing(activation, dense) -> bool:
    """Whether the layer's output and gradients are bit-identical with fresh scratch and with a pool of NaN-filled
    scratch tensors left by a call on other inputs (asserting that the poisoned tensors were taken)."""
    d, T, B = 8, 16, 24
    torch.manual_seed(3)
    A = skew64(d).to(F32)
    xs = [torch.randn(B, T, d) for _ in range(2)]
    gys = [torch.randn(B, T, d) if dense else None for _ in range(2)]
    assert f"-> gram-{'lu' if activation == 'cayley' else 'exp'}/native" in str(
        K.explain("vp_attention", xs[0], A, activation=activation))
    _scratch._scratch.clear()
    fresh = [_grads(x, A, activation, gy) for x, gy in zip(xs, gys)]  # each call with fresh scratch
    same = True
    for k in range(2):
        _scratch._scratch.clear()
        _grads(xs[1 - k], A, activation, gys[1 - k])  # fills the pool from the other input
        poisoned = _poison_pool()
        assert poisoned, "the route took no scratch: the comparison below would test nothing"
        handed, take = [], _scratch.scratch

        def spy(*a, **kw):  # the tensors the route takes during the call
            t = take(*a, **kw)
            handed.append(id(t))
            return t

        _scratch.scratch = spy
        try:
            got = _grads(xs[k], A, activation, gys[k])
        finally:
            _scratch.scratch = take
        assert poisoned & set(handed), "no poisoned tensor reused: the comparison below would test nothing"
        same &= all(torch.equal(a, b) for a, b in zip(got, fresh[k]))
    return same


@pytest.mark.parametrize("activation", ["cayley", "exp"])
@pytest.mark.parametrize("dense", [True, False])
def test_a_poisoned_scratch_changes_no_result(activation, dense):
    _route_or_skip(activation, 8)
    assert _poisoned_scratch_changes_nothing(activation, dense)


def test_negative_control_a_scratch_the_kernel_does_not_write_is_seen(monkeypatch):
    # a backward that computes gA elsewhere and returns the scratch it was handed unwritten: the poisoned check fails
    _route_or_skip("cayley", 8)
    real = _native_lu.gram_backward

    def unwritten(*args, gA_out=None, **kwargs):
        gx, _ = real(*args, **kwargs)
        return gx, gA_out

    monkeypatch.setattr(_native_lu, "gram_backward", unwritten)
    assert not _poisoned_scratch_changes_nothing("cayley", True)


def test_a_scratch_of_the_wrong_shape_is_refused():
    d, T, B = 8, 16, 16
    _route_or_skip("cayley", d)
    x, gy = torch.randn(B, T, d), torch.randn(B, T, d)
    A = skew64(d)
    _, G, N, _ = _native_lu.gram_forward(x, A)
    with pytest.raises(ValueError, match="Expected gA_out contiguous"):
        _native_lu.gram_backward(x, gy, N, A, G=G, gA_out=torch.empty(B, d, 1, dtype=torch.float64))
    _, _, E, _ = _native_exp.gram_exp_forward(x, A)
    with pytest.raises(ValueError, match="Expected E contiguous"):
        _native_exp.gram_exp_forward(x, A, out=(G, E[:, :, :1]))
