"""A Triton kernel generated from the verified SymPy bindings: one native kernel at one width.

DO NOT EDIT: this file is written by ``geoattn codegen`` from ``geoattn/symbolic/expressions.py`` (the bindings of
``geoattn.symbolic.kernel_table.NATIVE_KERNELS``, which the C kernels of ``_native_gram.c`` are printed from too);
``geoattn codegen --check`` fails when it is stale. It is imported by ``geoattn.kernels._triton`` only where
``triton`` is installed. Every kernel is printed from one scalar program (``geoattn.codegen.lowering``): one
program per ``BLOCK`` samples, one lane per sample, loops over the tokens for the reductions and the row maps,
every value in float64 (Note [Triton lanes] in ``geoattn.codegen.tritonprinter``).

bindings-sha256: f69bc26d9100dfde54a7eeda2161211cb8aa9b6685ac59e2fb7a9008030964ca
printer-version: 5

Sources (kernel: bindings  [ledger claims]):
  cayley_small_fwd: C2 = C**2; Lam = (2/(1 - Trace(C2)/2))*(-C + C2) + I; Skew = C + C.T; Size = C  [kernels.cayley_skew_small]
"""

import triton
import triton.language as tl

__all__ = ["cayley_small_fwd_d2"]


@triton.jit
def cayley_small_fwd_d2(B, T, C_ptr, Lam_ptr, Skew_ptr, Size_ptr, BLOCK: tl.constexpr):
    # Cayley(C) = I + 2 (C^2 - C)/(1 - Tr(C^2)/2) of T x T matrices with T <= 3 (T renamed d), with the
    # largest entries of C + C^T and of C (the caller's skew check: the form holds for skew C only).
    # from: C2 = C**2
    # from: Lam = (2/(1 - Trace(C2)/2))*(-C + C2) + I
    # from: Skew = C + C.T
    # from: Size = C
    # verified by: kernels.cayley_skew_small
    _b = (tl.program_id(0)*BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
    _live = _b < B
    _one = tl.full((BLOCK,), 1.0, tl.float64)
    C_0_0 = tl.load(C_ptr + _b*4 + 0, mask=_live, other=0.0).to(tl.float64)
    C_0_1 = tl.load(C_ptr + _b*4 + 1, mask=_live, other=0.0).to(tl.float64)
    C_1_0 = tl.load(C_ptr + _b*4 + 2, mask=_live, other=0.0).to(tl.float64)
    C_1_1 = tl.load(C_ptr + _b*4 + 3, mask=_live, other=0.0).to(tl.float64)
    sC2_0 = C_0_1*C_1_0
    C2_0_0 = (C_0_0*C_0_0) + sC2_0
    C2_0_1 = C_0_0*C_0_1 + C_0_1*C_1_1
    C2_1_0 = C_0_0*C_1_0 + C_1_0*C_1_1
    C2_1_1 = (C_1_1*C_1_1) + sC2_0
    sLam_0 = 2.0/(-(1.0/2.0)*C2_0_0 - (1.0/2.0)*C2_1_1 + 1.0)
    Lam_0_0 = sLam_0*(C2_0_0 - C_0_0) + 1.0
    Lam_0_1 = sLam_0*(C2_0_1 - C_0_1)
    Lam_1_0 = sLam_0*(C2_1_0 - C_1_0)
    Lam_1_1 = sLam_0*(C2_1_1 - C_1_1) + 1.0
    Skew_0_0 = 2.0*C_0_0
    Skew_0_1 = C_0_1 + C_1_0
    Skew_1_1 = 2.0*C_1_1
    Size_0_0 = C_0_0
    Size_0_1 = C_0_1
    Size_1_0 = C_1_0
    Size_1_1 = C_1_1
    tl.store(Lam_ptr + _b*4 + 0, Lam_0_0.to(Lam_ptr.dtype.element_ty), mask=_live)
    tl.store(Lam_ptr + _b*4 + 1, Lam_0_1.to(Lam_ptr.dtype.element_ty), mask=_live)
    tl.store(Lam_ptr + _b*4 + 2, Lam_1_0.to(Lam_ptr.dtype.element_ty), mask=_live)
    tl.store(Lam_ptr + _b*4 + 3, Lam_1_1.to(Lam_ptr.dtype.element_ty), mask=_live)
    _m = _one*0.0
    _a = tl.abs(Skew_0_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_0_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_1_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    tl.store(Skew_ptr + _b, _m, mask=_live)
    _m = _one*0.0
    _a = tl.abs(Size_0_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_0_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_1_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_1_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    tl.store(Size_ptr + _b, _m, mask=_live)
