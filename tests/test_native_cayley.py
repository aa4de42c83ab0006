"""The native CPU kernels of the T <= 3 Cayley transform and its VJP (Note [native Cayley kernels]): printed from the
bindings of kernels.cayley_skew_small and cayley.vjp, compiled, and checked against the float64 solve."""

from __future__ import annotations

import pytest
import torch

from geoattn.kernels import dispatch
from conftest import build_native_library, native_or_skip
from sympy.matrices.expressions import MatrixSymbol

import geoattn.kernels as K
from geoattn.codegen import cprinter
from geoattn.kernels import _functions, _native
from geoattn.kernels import _generated as gen
from geoattn.kernels._checks import skew_defect, skew_tolerance
from geoattn.symbolic import expressions as ex
from geoattn.symbolic.kernel_spec import NativeKernelSpec
from geoattn.symbolic.kernel_table import NATIVE_KERNELS

F32, F64 = torch.float32, torch.float64
SPECS = {k.name: k for k in NATIVE_KERNELS}
CFWD, CBWD = SPECS["cayley_small_fwd"], SPECS["cayley_vjp"]


def _native_or_skip(T=3, dtype=F32):
    native_or_skip(T, dtype)


def skew(*shape, scale=1.0, dtype=F64):
    a = torch.randn(*shape, dtype=F64) * scale
    return ((a - a.mT) / 2).to(dtype)


def solve_ref(c):
    eye = torch.eye(c.shape[-1], dtype=F64)
    c = c.double()
    return torch.linalg.solve(eye + c, eye - c)


# -- the table and the printer -------------------------------------------------------------------------------------


def test_the_runtime_table_of_functions_is_that_of_the_specs():
    assert _native.FUNCTIONS == {k.name: k.max_dim for k in NATIVE_KERNELS}
    assert _native.CAYLEY_MAX == CFWD.max_dim == CBWD.max_dim


def test_real_sample_arrays_are_converted_on_load_and_rounded_on_store():
    src = cprinter.print_native_kernel(CFWD, 3)
    assert "const real_t *restrict C, real_t *restrict Lam, double *restrict Skew, double *restrict Size" in src
    assert "C_2_1[l] = (double)C[(int64_t)bl*9 + 7];" in src
    assert "Lam[(int64_t)(b0 + l)*9 + 8] = (real_t)(Lam_2_2[l]);" in src
    assert "nchunks" not in src  # no token inputs: no token loop
    gram = cprinter.print_native_kernel(SPECS["vp_gram_bwd"], 3)
    assert "const double *restrict N" in gram and "(double)N[" not in gram  # double sample arrays stay double


def test_the_bindings_are_those_of_the_verified_kernels_with_T_renamed():
    assert [n for n, _ in CFWD.bindings][:2] == [n for n, _ in ex.CAYLEY_SKEW_SMALL]
    for (_, got), (_, want) in zip(CFWD.bindings, ex.CAYLEY_SKEW_SMALL):
        assert got == want.subs(ex.T, ex.d)
    for (_, got), (_, want) in zip(CBWD.bindings, ex.CAYLEY_VJP_BINDINGS):
        assert got == want.subs(ex.T, ex.d)


# -- the compiled kernels --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 2, 3])
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("B", [1, 19])  # one sample, a tail block
def test_forward_matches_the_float64_solve(T, dtype, B):
    _native_or_skip(T, dtype)
    torch.manual_seed(10 * T + B)
    c = skew(B, T, T, scale=2.0, dtype=dtype).contiguous()
    lam, defect, size = _native.cayley_forward(c)
    assert lam.dtype == dtype
    # computed in double and rounded once: a few units of the dtype's rounding
    assert (lam.double() - solve_ref(c)).abs().max() <= 4 * T * torch.finfo(dtype).eps
    assert torch.equal(defect, skew_defect(c.double()))
    assert torch.equal(size, c.double().abs().amax((-2, -1)))


@pytest.mark.parametrize("T", [1, 2, 3])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_backward_matches_the_vjp_in_float64(T, dtype):
    _native_or_skip(T, dtype)
    torch.manual_seed(T)
    c = skew(19, T, T, dtype=dtype).contiguous()
    g = torch.randn(19, T, T, dtype=dtype)
    lam = _native.cayley_forward(c)[0]
    got = _native.cayley_backward(lam, g)
    want = gen.cayley_vjp(lam.double(), g.double())
    assert (got.double() - want).abs().max() <= 8 * T * torch.finfo(dtype).eps * (1 + want.abs().max())


def test_non_skew_and_nan_samples_are_flagged():
    _native_or_skip()
    c = skew(4, 3, 3).float().contiguous()
    c[1, 0, 1] += 0.5
    c[2, 2, 0] = float("nan")
    _, defect, size = _native.cayley_forward(c)
    assert defect[0] == 0 and defect[3] == 0 and defect[1] == (c[1, 0, 1].double() + c[1, 1, 0].double()).abs() > 0.4
    assert torch.isnan(defect[2]) and torch.isnan(size[2]) and not torch.isnan(size[[0, 1, 3]]).any()


def test_results_do_not_depend_on_the_batch_or_the_thread_split(monkeypatch):
    _native_or_skip()
    torch.manual_seed(2)
    c = skew(2 * _native._MIN_PER_THREAD + 5, 3, 3, dtype=F32).contiguous()
    g = torch.randn_like(c)
    monkeypatch.setattr(_native, "_threads", lambda: 1)
    one = _native.cayley_forward(c)
    back_one = _native.cayley_backward(one[0], g)
    monkeypatch.setattr(_native, "_threads", lambda: 2)
    two = _native.cayley_forward(c)
    back_two = _native.cayley_backward(one[0], g)
    for a, b in zip((*one, back_one), (*two, back_two)):
        assert torch.equal(a, b)
    for i in (0, 7, 1000):
        for batch in (c[i : i + 1], c[i : i + 9], torch.cat([c[:3] * 1e3, c[i : i + 1]])):
            k = 0 if batch.shape[0] != 4 else 3
            assert torch.equal(_native.cayley_forward(batch.contiguous())[0][k], one[0][i])


def test_inputs_are_checked():
    _native_or_skip()
    with pytest.raises(ValueError, match=r"Expected C as a contiguous CPU tensor \(B, T, T\) with T <= 3"):
        _native.cayley_forward(torch.zeros(2, 4, 4))
    with pytest.raises(ValueError, match="Expected C as a contiguous"):
        _native.cayley_forward(torch.zeros(2, 3, 3).mT)
    with pytest.raises(ValueError, match="Expected G contiguous, of Lam's shape"):
        _native.cayley_backward(torch.zeros(2, 3, 3), torch.zeros(2, 3, 3, dtype=F64))


# -- cayley() takes them -------------------------------------------------------------------------------------------


def _counting(monkeypatch):
    calls = []
    for name in ("cayley_forward", "cayley_backward"):
        real = getattr(_native, name)
        monkeypatch.setattr(_native, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    return calls


@pytest.mark.parametrize("T", [1, 2, 3])
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("incoming", ["dense", "sum"])
def test_cayley_takes_the_native_kernels_and_agrees_with_the_torch_forms(monkeypatch, T, dtype, incoming):
    _native_or_skip(T, dtype)
    torch.manual_seed(5 + T)
    c0 = skew(7, T, T, dtype=dtype)
    g = torch.randn(7, T, T, dtype=dtype)
    calls = _counting(monkeypatch)
    results = {}
    for native in (True, False):
        monkeypatch.setattr(dispatch, "_FORCED", [] if native else ["eager"])
        calls.clear()
        c = c0.clone().requires_grad_()
        out = K.cayley(c)
        out.backward(g) if incoming == "dense" else out.sum().backward()
        assert calls == (["cayley_forward", "cayley_backward"] if native else [])
        results[native] = (out.detach(), c.grad)
    tol = 16 * T * torch.finfo(dtype).eps
    for a, b in zip(results[True], results[False]):
        assert (a - b).abs().max() <= tol * (1 + b.abs().max())


def test_mixed_batch_each_sample_as_if_alone_and_the_others_solved():
    _native_or_skip(3, F64)
    torch.manual_seed(1)
    c = skew(6, 3, 3)
    c[2] += torch.randn(3, 3, dtype=F64)  # not skew: solved
    c[4] *= 1e160  # skew but C^2 overflows in double: the eigendecomposition
    batch = K.cayley(c)
    for i in range(6):
        assert torch.equal(batch[i], K.cayley(c[i : i + 1])[0])
    keep = [0, 1, 2, 3, 5]
    assert (batch[keep] - solve_ref(c[keep])).abs().max() <= 64 * 3 * torch.finfo(F64).eps
    eye = torch.eye(3, dtype=F64)
    assert (batch[4].mT @ batch[4] - eye).abs().max() <= 16 * 3 * torch.finfo(F64).eps


def test_large_float32_entries_stay_on_the_native_form_and_orthogonal(monkeypatch):
    """In double, C^2 of float32 entries cannot overflow: no sample needs the eigendecomposition."""
    _native_or_skip()
    monkeypatch.setattr(_functions, "_cayley_eigh", lambda c: pytest.fail("the eigendecomposition was taken"))
    torch.manual_seed(3)
    c = skew(64, 3, 3, dtype=F32) * 1e30
    lam = K.cayley(c)
    assert (lam.mT @ lam - torch.eye(3)).abs().max() <= 16 * 3 * torch.finfo(F32).eps


@pytest.mark.parametrize("T", [1, 2, 3])
@pytest.mark.parametrize("skew_input", [True, False])
def test_gradcheck_and_double_backward_through_the_native_path(monkeypatch, T, skew_input):
    """The native backward is the Cayley VJP of the output whichever form made it: the closed form (skew
    samples) or the solve (the others)."""
    _native_or_skip(T, F64)
    torch.manual_seed(4 + T)
    a = torch.randn(3, T, T, dtype=F64, requires_grad=True)
    calls = _counting(monkeypatch)

    def f(a):
        return K.cayley(a - a.mT if skew_input else a + 2 * torch.eye(T, dtype=F64))

    assert torch.autograd.gradcheck(f, (a,))
    assert calls.count("cayley_backward") > 0
    assert torch.autograd.gradgradcheck(f, (a,))  # the backward's graph takes the torch form


def test_vmapped_incoming_gradients_take_the_torch_form(monkeypatch):
    """is_grads_batched and jacobian(vectorize=True) hand the backward a vmapped gradient, which has no storage
    for the C kernel to read: the torch form serves it."""
    _native_or_skip(3, F64)
    torch.manual_seed(8)
    c = skew(2, 3, 3).requires_grad_()
    gs = torch.randn(4, 2, 3, 3, dtype=F64)
    (batched,) = torch.autograd.grad(K.cayley(c), c, gs, is_grads_batched=True)
    calls = _counting(monkeypatch)
    for k in range(4):
        (one,) = torch.autograd.grad(K.cayley(c), c, gs[k])
        assert (batched[k] - one).abs().max() <= 16 * 3 * torch.finfo(F64).eps * (1 + one.abs().max())
    assert calls.count("cayley_backward") == 4  # the reference took the native kernel
    jv = torch.autograd.functional.jacobian(K.cayley, c.detach(), vectorize=True)
    jl = torch.autograd.functional.jacobian(K.cayley, c.detach())
    assert (jv - jl).abs().max() <= 16 * 3 * torch.finfo(F64).eps * (1 + jl.abs().max())


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_the_skew_check_is_that_of_the_torch_path_at_its_boundary(monkeypatch, dtype, scale):
    """Samples whose defect |C + C^T| is just below and just above skew_tolerance (8 T eps max(1, |C|)) are routed
    alike by both paths: the closed form below, the solve above."""
    _native_or_skip(3, dtype)
    torch.manual_seed(9)
    base = skew(4, 3, 3, scale=scale, dtype=F64)
    tol = skew_tolerance(base.to(dtype))
    c = base.clone()
    for k, f in enumerate((0.5, 0.9, 1.1, 2.0)):
        c[k, 2, 0] += f * float(tol[k])  # the defect: f times the tolerance (before rounding to dtype)
    c = c.to(dtype)
    solved = skew_defect(c) > skew_tolerance(c)
    assert solved.tolist() == [False, False, True, True]  # the inputs straddle the boundary
    seen = []
    real = gen.cayley_matrix
    monkeypatch.setattr(gen, "cayley_matrix", lambda m: seen.append(m.shape[0]) or real(m))
    out = {}
    for native in (True, False):
        monkeypatch.setattr(dispatch, "_FORCED", [] if native else ["eager"])
        seen.clear()
        out[native] = K.cayley(c)
        assert seen == [2]  # the two samples above the tolerance, on either path
    assert torch.equal(out[True][2:], out[False][2:])  # both solved by the same call


# -- negative controls: kernels printed from broken bindings are caught ----------------------------------------------


def _with(spec, name, expr):
    return NativeKernelSpec(**{**spec.__dict__, "bindings": [(n, expr if n == name else e) for n, e in spec.bindings]})


C2, Cd, Lamd = (MatrixSymbol(n, ex.d, ex.d) for n in ("C2", "C", "Lam"))


@pytest.mark.parametrize("name,expr", [
    ("Lam", ex.Identity(ex.d) + (C2 + Cd) * 2),  # a sign and the denominator dropped
    ("Skew", Cd - Cd.T),  # the check would call every skew sample non-skew, and the reverse
    ("Size", Cd * 0),  # the tolerance would be absolute: large non-skew samples would pass as skew
])
def test_negative_control_a_broken_forward_kernel_is_caught(tmp_path, name, expr):
    _native_or_skip()
    torch.manual_seed(6)
    c = skew(9, 3, 3, dtype=F32).contiguous()
    lib = build_native_library(tmp_path, [_with(CFWD, name, expr), CBWD], 3)
    lam, defect, size = _native.cayley_forward(c, library=lib)
    # the checks of test_forward_matches_the_float64_solve
    assert ((lam.double() - solve_ref(c)).abs().max() > 4 * 3 * torch.finfo(F32).eps
            or not torch.equal(defect, skew_defect(c.double()))
            or not torch.equal(size, c.double().abs().amax((-2, -1))))


def test_negative_control_a_broken_backward_kernel_is_caught(tmp_path):
    _native_or_skip()
    torch.manual_seed(7)
    c, g = skew(9, 3, 3, dtype=F32).contiguous(), torch.randn(9, 3, 3)
    broken = _with(CBWD, "P", ex.Identity(ex.d) + Lamd)  # Lam for Lam^T
    lib = build_native_library(tmp_path, [CFWD, broken], 3)
    lam = _native.cayley_forward(c, library=lib)[0]
    got = _native.cayley_backward(lam, g, library=lib)
    want = gen.cayley_vjp(lam.double(), g.double())
    assert (got.double() - want).abs().max() > 8 * 3 * torch.finfo(F32).eps * (1 + want.abs().max())
