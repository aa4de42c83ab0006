"""The native Cayley forward for 4 <= T <= 32 (Note [native Cayley solve]): elimination without pivoting in double,
checked against the float64 solve, its per-sample decisions, the route, the claim and a broken kernel."""

from __future__ import annotations

import pytest
import torch

import geoattn.kernels as K
from geoattn.codegen import cayley_solve_c
from geoattn.kernels import _native, _native_cayley_solve as NS
from geoattn.symbolic.claim import Level
from geoattn.symbolic.claims._cayley_unpivoted import make_unpivoted_claim

F32, F64 = torch.float32, torch.float64
SIZES = [4, 5, 8, 12, 16, 31, 32]


def _or_skip(T, dtype=F32):
    ok, why = NS.solve_native_status(T, dtype)
    if not ok:
        pytest.skip(f"the native Cayley solve cannot run here: {why}")


def skew(B, T, scale=1.0, dtype=F64, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(B, T, T, dtype=F64, generator=g) * scale
    return (a - a.mT).to(dtype)


def solve_ref(c):
    eye = torch.eye(c.shape[-1], dtype=F64)
    return torch.linalg.solve(eye + c.double(), eye - c.double())


def tol(T, dtype, k=64):
    return k * T * torch.finfo(dtype).eps


def orth(q):
    q = q.double()
    eye = torch.eye(q.shape[-1], dtype=F64)
    return (q.mT @ q - eye).abs().amax()


@pytest.mark.parametrize("T", SIZES)
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("scale", [0.1, 1.0, 3.0, 1e3])
def test_matches_the_float64_solve_and_is_orthogonal(T, dtype, scale):
    _or_skip(T, dtype)
    c = skew(21, T, scale, dtype, seed=T)  # 21: not a multiple of the lanes
    assert K.explain("cayley", c).route.backend == "native"
    q = K.cayley(c)
    assert q.dtype == dtype and q.shape == c.shape
    ref = solve_ref(c)
    # forward error of the Cayley map: u ||C|| (the derivative is bounded by 2 for skew C) plus the final rounding
    size = float(c.double().abs().sum(-1).amax())
    assert float((q.double() - ref).abs().amax()) <= tol(T, dtype) * max(1.0, size)
    assert float(orth(q)) <= tol(T, dtype)


@pytest.mark.parametrize("T", [4, 12, 32])
def test_the_kernel_alone_is_exact_in_double_for_float32(T):
    _or_skip(T, F32)
    c = skew(13, T, 3.0, F32, seed=1).contiguous()
    q, sk, size, norm, defect = NS.cayley_solve_forward(c)
    ref = solve_ref(c)
    assert float((q.double() - ref).abs().amax()) <= 2 * torch.finfo(F32).eps  # rounded once from double
    assert torch.equal(sk, torch.zeros(13, dtype=F64))  # c + c^T is exactly zero
    assert torch.allclose(size, c.double().abs().flatten(1).amax(1))
    assert torch.allclose(norm, c.double().abs().sum(-1).amax(-1))
    # elimination without pivoting: the defect grows like u ||C||^2 (Note [native Cayley solve])
    assert float(defect.max()) <= T * torch.finfo(F64).eps * (1 + float(norm.max())) ** 2


@pytest.mark.parametrize("dtype", [F32, F64])
def test_non_skew_nan_and_huge_samples_change_nothing_else(dtype):
    T = 12
    _or_skip(T, dtype)
    c = skew(19, T, 1.0, dtype, seed=3)
    alone = K.cayley(c)
    bad = c.clone()
    bad[2, 0, 0] = 0.7                       # not skew: the pivoted solve
    bad[5, 1, 3] = float("nan")              # NaN: stays in its sample
    bad[8] = c[8] * 1e6                      # norm far above 8T: the polish
    bad[9, 0, 1], bad[9, 1, 0] = 1.0, 1.0    # I + C singular for the unpivoted elimination's second pivot
    bad[9, 0, 0] = 0.0
    q = K.cayley(bad)
    keep = torch.ones(19, dtype=torch.bool)
    keep[[2, 5, 8, 9]] = False
    assert torch.equal(q[keep], alone[keep])
    assert bool(torch.isnan(q[5]).any())
    eye = torch.eye(T, dtype=F64)
    for i in (2, 9):  # solved with pivoting: forward error within u times the condition of I + C
        cond = float(torch.linalg.cond(eye + bad[i].double()))
        assert float((q[i].double() - solve_ref(bad[i])).abs().amax()) <= tol(T, dtype) * cond
    assert float(orth(q[8])) <= tol(T, dtype)


def test_backward_matches_autograd_of_the_solve_and_gradcheck():
    T = 5
    _or_skip(T, F64)
    c = skew(3, T, 1.0, F64, seed=4).requires_grad_(True)
    g = torch.randn(3, T, T, dtype=F64, generator=torch.Generator().manual_seed(5))
    q = K.cayley(c)
    (gc,) = torch.autograd.grad(q, c, g)
    c2 = c.detach().clone().requires_grad_(True)
    (gr,) = torch.autograd.grad(solve_ref(c2), c2, g)
    # the VJP of cayley.vjp holds on the skew tangent space: compare the skew parts
    assert torch.allclose(gc - gc.mT, gr - gr.mT, atol=tol(T, F64), rtol=0)
    assert torch.autograd.gradcheck(lambda x: K.cayley(x - x.mT), (c.detach().clone().requires_grad_(True),))


def test_batch_split_over_threads_gives_the_same_result(monkeypatch):
    T = 8
    _or_skip(T, F32)
    c = skew(1500, T, 1.0, F32, seed=6)
    one = K.cayley(c)
    monkeypatch.setattr(_native, "_threads", lambda: 2)
    assert torch.equal(K.cayley(c), one)


def test_explain_names_the_route_and_its_reasons():
    _or_skip(8, F32)
    e = K.explain("cayley", skew(2, 8, dtype=F32))
    assert (e.route.form, e.route.backend) == ("solve", "native")
    assert "kernels.cayley_unpivoted" in e.route.claims
    assert "native" in str(e)
    assert any("T=8 > 3" in w for _, w in e.rejected)  # the closed forms' reason
    e = K.explain("cayley", skew(2, 33, dtype=F32))
    assert e.route.backend == "eager"
    assert any("4 <= T <= 32" in w for _, w in e.rejected)
    e = K.explain("cayley", torch.zeros(0, 8, 8))
    assert e.route.backend == "eager" and any(w == "an empty input" for _, w in e.rejected)


def test_generated_source_is_fresh_and_the_broken_kernel_is_caught(tmp_path):
    T = 6
    _or_skip(T, F64)
    with open(NS.SOURCE) as fh:
        assert fh.read() == cayley_solve_c.generate_cayley_solve_module()
    src = tmp_path / "broken.c"
    src.write_text(cayley_solve_c.generate_cayley_solve_module(wrong_sign=True))
    lib = NS.build(T, "f64", str(src))
    if isinstance(lib, str):
        pytest.skip(lib)
    c = skew(9, T, 1.0, F64, seed=7).contiguous()
    good = NS.cayley_solve_forward(c)[0]
    assert float((good - solve_ref(c)).abs().amax()) <= tol(T, F64)
    q, _, _, _, defect = NS.cayley_solve_forward(c, library=lib)
    assert float((q - solve_ref(c)).abs().amax()) > 1.0  # 2 M^-1 + I is off by 2 I
    assert float(defect.min()) > tol(T, F64)  # and its own defect says so: the route would not keep it


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="Expected C as a contiguous CPU tensor"):
        NS.cayley_solve_forward(torch.zeros(2, 3, 3))
    assert NS.solve_native_status(33) == (False, "T=33: the native Cayley solve covers 4 <= T <= 32")


def test_the_claim_and_its_negative_control():
    assert make_unpivoted_claim().check().level is Level.CHECKED
    v = make_unpivoted_claim("general", "neg.cayley_unpivoted").check()
    assert v.level is Level.REFUTED and v.counterexample is not None


def test_the_sizes_are_the_generators():
    assert (NS.MIN_T, NS.MAX_T) == (cayley_solve_c.MIN_T, cayley_solve_c.MAX_T)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_the_defect_bar_sends_samples_to_the_pivoted_route(monkeypatch, dtype):
    # negative control of the kept samples' measured defect: with a bar no sample meets, every sample takes the
    # pivoted route (and gets its result); with the shipped bar, none of these does
    from geoattn.kernels import _functions as F

    T = 8
    _or_skip(T, dtype)
    c = skew(11, T, 1.0, dtype, seed=5)
    calls, real = [], F.cayley_routed
    monkeypatch.setattr(F, "cayley_routed", lambda x, big, form: calls.append(x.shape[0]) or real(x, big, form))
    q = K.cayley(c)
    assert calls == []
    monkeypatch.setattr(F, "NATIVE_SOLVE_DEFECT_PER_T", -1.0)
    q_bar = K.cayley(c)
    assert calls == [11]
    with K.backend("eager"):
        assert torch.equal(q_bar, K.cayley(c))
    assert float((q.double() - q_bar.double()).abs().amax()) <= tol(T, dtype)
