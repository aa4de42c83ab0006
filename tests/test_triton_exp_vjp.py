"""The printed backward of exp_skew for T <= 4 (kernel exp_skew_small_vjp, claims exp_skew.hodge_vjp and
exp_skew.hodge_vjp_series) in Triton's interpreter (TRITON_INTERPRET=1) on CPU tensors: against matrix_exp's
gradient in float64 (its skew projection, Note [exp_skew Triton kernel]), near the series' switch point, at zero and
large angles, per sample; gradcheck in float64; the printer's Piecewise; broken bindings caught; the claims and their
negative controls. The CUDA variant is in tests/test_triton_cuda.py."""

from __future__ import annotations

import math

import pytest
import sympy as sp
import torch

pytest.importorskip("triton")

import geoattn.kernels as K  # noqa: E402
from conftest import eps  # noqa: E402
from geoattn.codegen import generate, tritonprinter  # noqa: E402
from geoattn.codegen.printer import CodegenError  # noqa: E402
from geoattn.kernels import _exp_triton, _triton  # noqa: E402
from geoattn.symbolic.kernel_spec import NativeKernelSpec  # noqa: E402
from geoattn.symbolic.native_table import TRITON_KERNELS, exp_so4_vjp_bindings  # noqa: E402

F32, F64 = torch.float32, torch.float64
(VJP,) = [k for k in TRITON_KERNELS if k.name == "exp_skew_small_vjp"]
B = _triton.BLOCK["cpu"] + 3  # a tail block


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def skews(n, T, scale, seed):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n, T, T, generator=g, dtype=F64) * scale
    return w - w.mT


def reference(s, g):
    """The skew part of matrix_exp's gradient in float64 (Pade and squaring: shares nothing with the kernel)."""
    s64 = s.double().requires_grad_()
    (r,) = torch.autograd.grad(torch.linalg.matrix_exp(s64), s64, g.double())
    return (r - r.mT) / 2


def scale_of(g):
    return g.double().abs().amax(dim=(-2, -1), keepdim=True).clamp_min(1.0)


@pytest.mark.parametrize("T", [1, 2, 3, 4])
@pytest.mark.parametrize("scale", [0.0, 1e-3, 0.3, 1.0, 30.0])
def test_the_kernel_is_the_skew_gradient_of_exp(T, scale):
    s, g = skews(B, T, scale, T), torch.randn(B, T, T, dtype=F64, generator=torch.Generator().manual_seed(1))
    got = _exp_triton.exp_small_vjp(s.contiguous(), g)
    err = ((got - reference(s, g)) / scale_of(g)).abs().max().item()
    assert err <= 64 * T * eps(F64) * max(1.0, scale)


@pytest.mark.parametrize("side", [-1, 1])
def test_angles_near_the_series_switch_point(side):
    # one self-dual half at angle t = 1/2 (1 +- 1e-9): K = t (E_01 + E_23) - transposes, so K_- = 0 and K_+ has t
    t = 0.5 * (1 + side * 1e-9) * torch.linspace(0.98, 1.02, B, dtype=F64) ** side
    s = torch.zeros(B, 4, 4, dtype=F64)
    s[:, 0, 1], s[:, 2, 3] = t, t
    s = s - s.mT
    g = torch.randn(B, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(2))
    err = ((_exp_triton.exp_small_vjp(s, g) - reference(s, g)) / scale_of(g)).abs().max().item()
    assert err <= 64 * 4 * eps(F64)


def test_the_route_float32_agrees_with_eager_and_matrix_exp():
    s = skews(B, 4, 1.0, 5).float()
    g = torch.randn(B, 4, 4, generator=torch.Generator().manual_seed(3))
    x = s.clone().requires_grad_()
    with K.backend("triton"):
        assert "closed-small/triton" in str(K.explain("exp_skew", x))
        (got,) = torch.autograd.grad(K.exp_skew(x), x, g)
    x = s.clone().requires_grad_()
    with K.backend("eager"):
        (eager,) = torch.autograd.grad(K.exp_skew(x), x, g)
    tol = 64 * 4 * eps(F32)
    assert (got.double() - reference(s, g)).abs().max() <= tol * scale_of(g).max()
    assert (got - (eager - eager.mT) / 2).abs().max() <= tol * scale_of(g).max()  # the eager gradient, projected
    # through a skew parametrisation S = C - C^T both routes give the same gradient in C
    c = torch.randn(B, 4, 4, generator=torch.Generator().manual_seed(4))
    grads = []
    for backend in ("triton", "eager"):
        cc = c.clone().requires_grad_()
        with K.backend(backend):
            (gc,) = torch.autograd.grad(K.exp_skew(cc - cc.mT), cc, g)
        grads.append(gc)
    assert (grads[0] - grads[1]).abs().max() <= 2 * tol * scale_of(g).max()


def test_one_nan_or_huge_sample_touches_nothing_else():
    s = skews(B, 3, 1.0, 6).float()
    g = torch.randn(B, 3, 3, generator=torch.Generator().manual_seed(5))
    with K.backend("triton"):
        x = s.clone().requires_grad_()
        (clean,) = torch.autograd.grad(K.exp_skew(x), x, g)
        bad = s.clone()
        bad[2, 0, 1], bad[2, 1, 0] = float("nan"), float("nan")
        bad[5] = bad[5] * 1e6
        x = bad.requires_grad_()
        (dirty,) = torch.autograd.grad(K.exp_skew(x), x, g)
    keep = torch.ones(B, dtype=torch.bool)
    keep[[2, 5]] = False
    assert torch.equal(clean[keep], dirty[keep])
    assert dirty[2].isnan().any() and dirty[5].isfinite().all()


def test_gradcheck_float64():
    c = torch.randn(3, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(7)).requires_grad_()
    g = torch.randn(3, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(8))

    def f(cc):  # the kernel's gradient of <g, exp(skew)> is linear in g; its own derivative in S is checked too
        s = cc - cc.mT
        return _exp_triton.exp_small_vjp(s, g)

    def loss(cc):
        return (torch.linalg.matrix_exp(cc - cc.mT) * g).sum()

    (want,) = torch.autograd.grad(loss(c), c)
    got = f(c.detach())
    assert ((got - got.mT) - want).abs().max() <= 64 * eps(F64) * 4  # d/dC of <g, exp(C - C^T)> = gS - gS^T
    x = c.detach().requires_grad_()
    # the float32 forward's entries (each at most 1: exp(S) is orthogonal) carry a few eps32 of rounding, which the
    # central difference with step h divides by h: atol = 4 eps32 / h (its truncation, of order h^2, is smaller)
    h = 1e-3
    with K.backend("triton"):
        assert torch.autograd.gradcheck(lambda cc: K.exp_skew((cc - cc.mT).float()).double(), (x,), eps=h,
                                        atol=4 * eps(F32) / h, rtol=0, fast_mode=True)


def test_printer_piecewise_is_a_select_and_refuses_other_conditions():
    t, u = sp.symbols("t u", real=True)
    printer = tritonprinter._ScalarTriton({t: "t", u: "u"})
    got = printer.doprint(sp.Piecewise((t, t < sp.Rational(1, 4)), (u, True)))
    assert got == "tl.where((t < (1.0/4.0)), t, u)"
    with pytest.raises(CodegenError, match="Expected a condition .* Got"):
        printer.doprint(sp.Piecewise((t, sp.Eq(t, 1)), (u, True)))
    with pytest.raises(CodegenError, match="Expected a Piecewise whose last branch holds otherwise"):
        printer.doprint(sp.Piecewise((t, t < 1), (u, u > 2)))


def _module(tmp_path, bindings, name):
    spec = NativeKernelSpec(**{**VJP.__dict__, "bindings": bindings})
    header = generate.TRITON_HEADER.format(hash="-", version="-", sources="", names="")
    path = tmp_path / f"vjp_{name}.py"
    path.write_text(header + "\n\n" + tritonprinter.print_triton_kernel(spec, 4))
    return _triton.kernels(path=str(path))


@pytest.mark.parametrize("name", ["star", "series"])
def test_negative_control_a_broken_kernel_is_caught(tmp_path, name):
    bad = {"star": exp_so4_vjp_bindings(star=1), "series": exp_so4_vjp_bindings(terms=3)}[name]
    module = _module(tmp_path, bad, name)
    scale = {"star": 1.0, "series": 0.2}[name]  # the series branch serves angles below 1/2
    s, g = skews(B, 4, scale, 9), torch.randn(B, 4, 4, dtype=F64, generator=torch.Generator().manual_seed(9))
    err = ((_exp_triton.exp_small_vjp(s, g, module=module) - reference(s, g)) / scale_of(g)).abs().max().item()
    assert err > 64 * 4 * eps(F64)


def test_bad_arrays_are_refused():
    with pytest.raises(ValueError, match=r"Expected S as a tensor \(B, T, T\) with 1 <= T <= 4 .* Got torch.float32 "
                                         r"\(2, 5, 5\)"):
        _exp_triton.exp_small_vjp(torch.zeros(2, 5, 5), torch.zeros(2, 5, 5))
    with pytest.raises(ValueError, match=r"Expected G of the shape, dtype and device of S .* Got \(2, 3, 3\)"):
        _exp_triton.exp_small_vjp(torch.zeros(2, 2, 2), torch.zeros(2, 3, 3))


def test_claims_and_negative_controls():
    from geoattn.symbolic.claim import Level
    from geoattn.symbolic.claims import exp_so4_vjp as claims

    assert [c.check().level for c in claims.CLAIMS] == [Level.CHECKED, Level.PROVED]
    v = claims.make_vjp_claim(exp_so4_vjp_bindings(star=1), "neg.hodge_vjp_star", Level.REFUTED).check()
    assert v.level is Level.REFUTED and v.counterexample is not None
    v = claims.make_series_claim(6, "neg.hodge_vjp_series").check()
    assert v.level is Level.ERROR and "does not confirm the step" in v.error
    assert claims.series_bound() < sp.Rational(1, 2**53) < claims.series_bound(6)
    assert math.isclose(float(claims.series_bound()), 8.45e-18, rel_tol=1e-2)
