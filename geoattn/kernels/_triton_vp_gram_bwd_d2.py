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
  vp_gram_bwd: Gram = x.T*x; Pbar = x.T*Gy; P = -I + 2*N; Mbar = -2*N*Pbar.T*N; H = A*Mbar.T - Mbar*A; gx = Gy*P.T + x*H; gA = Gram*Mbar  [vp.gram_closed_form_vjp]
"""

import triton
import triton.language as tl

__all__ = ["vp_gram_bwd_d2"]


@triton.jit
def vp_gram_bwd_d2(B, T, x_ptr, Gy_ptr, N_ptr, A_ptr, gx_ptr, gA_ptr, BLOCK: tl.constexpr):
    # The closed-form Gram layer's backward for d <= 4: x_bar = y_bar P^T + x H and the per-sample Gram
    # M_bar (A_bar is the skew part of its sum over the batch), from x, y_bar and the forward's N.
    # from: Gram = x.T*x
    # from: Pbar = x.T*Gy
    # from: P = -I + 2*N
    # from: Mbar = -2*N*Pbar.T*N
    # from: H = A*Mbar.T - Mbar*A
    # from: gx = Gy*P.T + x*H
    # from: gA = Gram*Mbar
    # verified by: vp.gram_closed_form_vjp
    _b = (tl.program_id(0)*BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
    _live = _b < B
    A_1_0 = tl.load(A_ptr + 2).to(tl.float64)
    N_0_0 = tl.load(N_ptr + _b*4 + 0, mask=_live, other=0.0).to(tl.float64)
    N_0_1 = tl.load(N_ptr + _b*4 + 1, mask=_live, other=0.0).to(tl.float64)
    N_1_0 = tl.load(N_ptr + _b*4 + 2, mask=_live, other=0.0).to(tl.float64)
    N_1_1 = tl.load(N_ptr + _b*4 + 3, mask=_live, other=0.0).to(tl.float64)
    Gram_0_0 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_0_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_1_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_0_0 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_0_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_1_0 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_1_1 = tl.full((BLOCK,), 0.0, tl.float64)
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*2 + 0, mask=_live, other=0.0).to(tl.float64)
        x_1 = tl.load(x_ptr + (_b*T + _t)*2 + 1, mask=_live, other=0.0).to(tl.float64)
        Gy_0 = tl.load(Gy_ptr + (_b*T + _t)*2 + 0, mask=_live, other=0.0).to(tl.float64)
        Gy_1 = tl.load(Gy_ptr + (_b*T + _t)*2 + 1, mask=_live, other=0.0).to(tl.float64)
        Gram_0_0 += (x_0*x_0)
        Gram_0_1 += x_0*x_1
        Gram_1_1 += (x_1*x_1)
        Pbar_0_0 += Gy_0*x_0
        Pbar_0_1 += Gy_1*x_0
        Pbar_1_0 += Gy_0*x_1
        Pbar_1_1 += Gy_1*x_1
    P_0_0 = 2.0*N_0_0 - 1.0
    P_0_1 = 2.0*N_0_1
    P_1_0 = 2.0*N_1_0
    P_1_1 = 2.0*N_1_1 - 1.0
    sMbar_0 = 2.0*N_0_0*Pbar_0_0 + 2.0*N_0_1*Pbar_0_1
    sMbar_1 = 2.0*N_0_0*Pbar_1_0 + 2.0*N_0_1*Pbar_1_1
    sMbar_2 = 2.0*N_1_0*Pbar_0_0 + 2.0*N_1_1*Pbar_0_1
    sMbar_3 = 2.0*N_1_0*Pbar_1_0 + 2.0*N_1_1*Pbar_1_1
    Mbar_0_0 = -N_0_0*sMbar_0 - N_1_0*sMbar_1
    Mbar_0_1 = -N_0_1*sMbar_0 - N_1_1*sMbar_1
    Mbar_1_0 = -N_0_0*sMbar_2 - N_1_0*sMbar_3
    Mbar_1_1 = -N_0_1*sMbar_2 - N_1_1*sMbar_3
    sH_0 = 2.0*A_1_0
    H_0_0 = -Mbar_0_1*sH_0
    H_0_1 = A_1_0*Mbar_0_0 - A_1_0*Mbar_1_1
    H_1_1 = Mbar_1_0*sH_0
    gA_0_0 = Gram_0_0*Mbar_0_0 + Gram_0_1*Mbar_1_0
    gA_0_1 = Gram_0_0*Mbar_0_1 + Gram_0_1*Mbar_1_1
    gA_1_0 = Gram_0_1*Mbar_0_0 + Gram_1_1*Mbar_1_0
    gA_1_1 = Gram_0_1*Mbar_0_1 + Gram_1_1*Mbar_1_1
    tl.store(gA_ptr + _b*4 + 0, gA_0_0, mask=_live)
    tl.store(gA_ptr + _b*4 + 1, gA_0_1, mask=_live)
    tl.store(gA_ptr + _b*4 + 2, gA_1_0, mask=_live)
    tl.store(gA_ptr + _b*4 + 3, gA_1_1, mask=_live)
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*2 + 0, mask=_live, other=0.0).to(tl.float64)
        x_1 = tl.load(x_ptr + (_b*T + _t)*2 + 1, mask=_live, other=0.0).to(tl.float64)
        Gy_0 = tl.load(Gy_ptr + (_b*T + _t)*2 + 0, mask=_live, other=0.0).to(tl.float64)
        Gy_1 = tl.load(Gy_ptr + (_b*T + _t)*2 + 1, mask=_live, other=0.0).to(tl.float64)
        gx_0_0 = Gy_0*P_0_0 + Gy_1*P_0_1 + H_0_0*x_0 + H_0_1*x_1
        gx_0_1 = Gy_0*P_1_0 + Gy_1*P_1_1 + H_0_1*x_0 + H_1_1*x_1
        tl.store(gx_ptr + (_b*T + _t)*2 + 0, gx_0_0.to(gx_ptr.dtype.element_ty), mask=_live)
        tl.store(gx_ptr + (_b*T + _t)*2 + 1, gx_0_1.to(gx_ptr.dtype.element_ty), mask=_live)
