"""The row form of the Gram kernels' token passes (geoattn.codegen.rowprinter, d = 8 and 16): each pass against a
float64 reference, bit-identical reductions to the lane form for float32 tokens, samples independent of their
batch, a gradcheck of the native backward in float64, unsupported bindings refused, and a wrongly printed pass
caught."""

from __future__ import annotations

import ctypes

import pytest
import sympy as sp
import torch

from geoattn.codegen import cprinter, gram_lu_c, rowprinter
from geoattn.errors import CodegenError
from geoattn.kernels import _native_lu
from geoattn.symbolic import expressions as ex

F32, F64 = torch.float32, torch.float64


def _lib(d, real, tmp_path=None, text=None):
    if text is None:
        lib = _native_lu._library(d, F32 if real == "f32" else F64)
    else:
        path = tmp_path / f"lu_{d}_{real}.c"
        path.write_text(text)
        lib = _native_lu.build(d, real, str(path))
    if isinstance(lib, str):
        pytest.skip(f"the native LU kernels cannot run here: {lib}")
    return lib


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr())


def _passes(lib, d, x, gy, P, H, real):
    """Gram, y, Pbar and gx of the four printed passes of ``lib``."""
    B, T, _ = x.shape
    n, t = ctypes.c_int64(B), ctypes.c_int64(T)
    G, Pb = (torch.full((B, d, d), float("nan"), dtype=F64) for _ in range(2))
    y, gx = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    f = lambda name: getattr(lib, f"geoattn_vp_gram_lu_{name}_d{d}_{real}")  # noqa: E731
    f("gram")(n, t, _ptr(x), _ptr(G))
    f("out")(n, t, _ptr(x), _ptr(P), _ptr(y))
    f("pbar")(n, t, _ptr(x), _ptr(gy), _ptr(Pb))
    f("gx")(n, t, _ptr(x), _ptr(gy), _ptr(P), _ptr(H), _ptr(gx))
    return G, y, Pb, gx


def _inputs(B, T, d, dtype, rank=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, d, generator=g, dtype=F64)
    if rank is not None:  # rank-deficient samples: x = U V with U (T, rank)
        x = torch.randn(B, T, rank, generator=g, dtype=F64) @ torch.randn(B, rank, d, generator=g, dtype=F64)
    gy = torch.randn(B, T, d, generator=g, dtype=F64)
    P, H = torch.randn(B, d, d, generator=g, dtype=F64), torch.randn(B, d, d, generator=g, dtype=F64)
    return x.to(dtype).contiguous(), gy.to(dtype).contiguous(), P, H


def _check_against_float64(d, T, dtype, rank=None):
    real = "f32" if dtype == F32 else "f64"
    lib = _lib(d, real)
    x, gy, P, H = _inputs(5, T, d, dtype, rank)
    G, y, Pb, gx = _passes(lib, d, x, gy, P, H, real)
    xd, gyd = x.double(), gy.double()
    eps64, eps = torch.finfo(F64).eps, torch.finfo(dtype).eps
    # double sums of T terms (exact products for float32 tokens): error below T eps64 sum |a||b|
    for got, a, b in ((G, xd, xd), (Pb, xd, gyd)):
        ref, scale = a.mT @ b, a.abs().mT @ b.abs()
        assert ((got - ref).abs() <= 2 * T * eps64 * scale).all()
    # row maps of d (2d) terms in double, rounded once to the token type
    for got, ref, scale in ((y, xd @ P, xd.abs() @ P.abs()),
                            (gx, gyd @ P.mT + xd @ H, gyd.abs() @ P.abs().mT + xd.abs() @ H.abs())):
        assert ((got.double() - ref).abs() <= eps * ref.abs() + 4 * d * eps64 * scale).all()
    return G, y, Pb, gx


@pytest.mark.parametrize("d", rowprinter.ROW_DIMS)
@pytest.mark.parametrize("dtype", [F32, F64])
def test_each_pass_matches_the_float64_reference(d, dtype):
    for T in (d // 2, d, 3 * d + 5):  # T < d, T = d, several chunks of ROW_CHUNK tokens with a tail
        _check_against_float64(d, T, dtype)
    G = _check_against_float64(d, 2 * d, dtype, rank=d // 2)[0]  # rank-deficient: Gram of rank d/2
    assert torch.linalg.matrix_rank(G[0]).item() == d // 2


@pytest.mark.parametrize("d", rowprinter.ROW_DIMS)
def test_float32_reductions_are_bit_identical_to_the_lane_form(d, tmp_path, monkeypatch):
    row = _lib(d, "f32")
    monkeypatch.setattr(gram_lu_c, "print_pass", cprinter.print_native_kernel)
    lane = _lib(d, "f32", tmp_path, gram_lu_c.generate_gram_lu_module((d,)))
    x, gy, P, H = _inputs(7, 2 * rowprinter.ROW_CHUNK + 3, d, F32, seed=1)
    got, want = _passes(row, d, x, gy, P, H, "f32"), _passes(lane, d, x, gy, P, H, "f32")
    assert torch.equal(got[0], want[0]) and torch.equal(got[2], want[2])
    eps = torch.finfo(F32).eps  # the row maps: each a correctly rounded float of a double sum, so within 1 ulp
    for k in (1, 3):
        assert ((got[k] - want[k]).abs() <= eps * want[k].abs()).all()


@pytest.mark.parametrize("d", rowprinter.ROW_DIMS)
def test_one_nan_or_huge_sample_changes_nothing_else(d):
    lib = _lib(d, "f32")
    x, gy, P, H = _inputs(6, 21, d, F32, seed=2)
    clean = _passes(lib, d, x, gy, P, H, "f32")
    x[1, 3, 2], x[4] = float("nan"), 1e6 * x[4]
    dirty = _passes(lib, d, x, gy, P, H, "f32")
    keep = [0, 2, 3, 5]
    for a, b in zip(clean, dirty):
        assert torch.equal(a[keep], b[keep])
    assert dirty[0][1].isnan().any() and dirty[0][4].isfinite().all()
    alone = _passes(lib, d, x[2:3].contiguous(), gy[2:3].contiguous(), P[2:3].contiguous(), H[2:3].contiguous(),
                    "f32")
    for a, b in zip(alone, dirty):  # a sample alone or in its batch: the same bits
        assert torch.equal(a[0], b[2])


class _NativeLU(torch.autograd.Function):
    """y of the native float64 LU kernels, with their backward in x."""

    @staticmethod
    def forward(ctx, x, A):
        y, G, N, _ = _native_lu.gram_forward(x, A)
        ctx.save_for_backward(x, A, G, N)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, A, G, N = ctx.saved_tensors
        return _native_lu.gram_backward(x, gy.contiguous(), N, A, G=G)[0], None


@pytest.mark.parametrize("d,T", [(8, 5), (8, 12), (16, 20)])
def test_gradcheck_of_the_float64_native_backward(d, T):
    _lib(d, "f64")
    g = torch.Generator().manual_seed(d + T)
    W = 0.3 * torch.randn(d, d, generator=g, dtype=F64)
    A = (W - W.T).contiguous()
    x = torch.randn(2, T, d, generator=g, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: _NativeLU.apply(x, A), (x,), fast_mode=d > 8)


def test_unsupported_bindings_and_widths_are_refused():
    spec = gram_lu_c.SPECS["gram"]
    with pytest.raises(CodegenError, match="Expected d in"):
        rowprinter.print_row_kernel(spec, 12)
    P = sp.MatrixSymbol("P", ex.d, ex.d)
    for bad in (2 * ex.x * P, ex.x * P * P, ex.x.T * ex.x * P):
        s = gram_lu_c.SPECS["out"].__class__(name="bad", doc="a binding the row form refuses.", bindings=[("y", bad)],
                                             token_inputs=("x",), sample_inputs={"P": "general"},
                                             token_outputs=("y",), max_dim=16)
        with pytest.raises(CodegenError, match="Expected .*Got"):
            rowprinter.print_row_kernel(s, 8)
    s = gram_lu_c.SPECS["out"].__class__(name="bad", doc="a skew input.", bindings=[("y", ex.x * P)],
                                         token_inputs=("x",), sample_inputs={"P": "skew"}, token_outputs=("y",),
                                         max_dim=16)
    with pytest.raises(CodegenError, match="general per-sample matrix"):
        rowprinter.print_row_kernel(s, 8)


def test_negative_control_a_dropped_transpose_is_caught(tmp_path, monkeypatch):
    d = 8
    _lib(d, "f32")
    real_terms = rowprinter.row_terms
    monkeypatch.setattr(rowprinter, "row_terms", lambda e, spec: [(a, S, False) for a, S, _ in real_terms(e, spec)])
    broken = _lib(d, "f32", tmp_path, gram_lu_c.generate_gram_lu_module((d,)))
    x, gy, P, H = _inputs(3, 2 * d, d, F32, seed=3)
    gx = _passes(broken, d, x, gy, P, H, "f32")[3].double()
    xd, gyd = x.double(), gy.double()
    ref, scale = gyd @ P.mT + xd @ H, gyd.abs() @ P.abs().mT + xd.abs() @ H.abs()
    eps, eps64 = torch.finfo(F32).eps, torch.finfo(F64).eps
    assert not ((gx - ref).abs() <= eps * ref.abs() + 4 * d * eps64 * scale).all()


@pytest.mark.parametrize("d", rowprinter.ROW_DIMS)
def test_two_tokens_a_step_are_bit_identical_to_one(d, tmp_path, monkeypatch):
    # Note [two tokens a step]: the same operations per token, so the same bits; an odd T takes the one-token tail
    two = _lib(d, "f32")
    monkeypatch.setattr(rowprinter, "ROW_UNROLL", 1)
    one = _lib(d, "f32", tmp_path, gram_lu_c.generate_gram_lu_module((d,)))
    for T in (2 * rowprinter.ROW_CHUNK + 3, d + 1, 1):
        x, gy, P, H = _inputs(6, T, d, F32, seed=2)
        got, want = _passes(two, d, x, gy, P, H, "f32"), _passes(one, d, x, gy, P, H, "f32")
        assert all(torch.equal(a, b) for a, b in zip(got, want))


def test_negative_control_the_second_token_of_a_step_misread_is_caught(tmp_path):
    # fault: the second token of each step reads the first token's row of x in y = xP
    text = gram_lu_c.generate_gram_lu_module((8,)).replace("x_b[(t + 1)*8 + 3]", "x_b[(t + 0)*8 + 3]")
    assert "x_b[(t + 0)*8 + 3]*(*(const row_u *)(P_s" in text
    lib = _lib(8, "f32", tmp_path, text)
    x, gy, P, H = _inputs(3, 6, 8, F32, seed=3)
    y = _passes(lib, 8, x, gy, P, H, "f32")[1]
    ref = (x.double() @ P).float()
    assert not ((y.double() - ref.double()).abs() <= 8 * torch.finfo(F32).eps * (x.double().abs() @ P.abs())).all()
