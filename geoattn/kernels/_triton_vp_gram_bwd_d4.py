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

__all__ = ["vp_gram_bwd_d4"]


@triton.jit
def vp_gram_bwd_d4(B, T, x_ptr, Gy_ptr, N_ptr, A_ptr, gx_ptr, gA_ptr, BLOCK: tl.constexpr):
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
    A_1_0 = tl.load(A_ptr + 4).to(tl.float64)
    A_2_0 = tl.load(A_ptr + 8).to(tl.float64)
    A_3_0 = tl.load(A_ptr + 12).to(tl.float64)
    A_2_1 = tl.load(A_ptr + 9).to(tl.float64)
    A_3_1 = tl.load(A_ptr + 13).to(tl.float64)
    A_3_2 = tl.load(A_ptr + 14).to(tl.float64)
    N_0_0 = tl.load(N_ptr + _b*16 + 0, mask=_live, other=0.0).to(tl.float64)
    N_0_1 = tl.load(N_ptr + _b*16 + 1, mask=_live, other=0.0).to(tl.float64)
    N_0_2 = tl.load(N_ptr + _b*16 + 2, mask=_live, other=0.0).to(tl.float64)
    N_0_3 = tl.load(N_ptr + _b*16 + 3, mask=_live, other=0.0).to(tl.float64)
    N_1_0 = tl.load(N_ptr + _b*16 + 4, mask=_live, other=0.0).to(tl.float64)
    N_1_1 = tl.load(N_ptr + _b*16 + 5, mask=_live, other=0.0).to(tl.float64)
    N_1_2 = tl.load(N_ptr + _b*16 + 6, mask=_live, other=0.0).to(tl.float64)
    N_1_3 = tl.load(N_ptr + _b*16 + 7, mask=_live, other=0.0).to(tl.float64)
    N_2_0 = tl.load(N_ptr + _b*16 + 8, mask=_live, other=0.0).to(tl.float64)
    N_2_1 = tl.load(N_ptr + _b*16 + 9, mask=_live, other=0.0).to(tl.float64)
    N_2_2 = tl.load(N_ptr + _b*16 + 10, mask=_live, other=0.0).to(tl.float64)
    N_2_3 = tl.load(N_ptr + _b*16 + 11, mask=_live, other=0.0).to(tl.float64)
    N_3_0 = tl.load(N_ptr + _b*16 + 12, mask=_live, other=0.0).to(tl.float64)
    N_3_1 = tl.load(N_ptr + _b*16 + 13, mask=_live, other=0.0).to(tl.float64)
    N_3_2 = tl.load(N_ptr + _b*16 + 14, mask=_live, other=0.0).to(tl.float64)
    N_3_3 = tl.load(N_ptr + _b*16 + 15, mask=_live, other=0.0).to(tl.float64)
    Gram_0_0 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_0_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_0_2 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_0_3 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_1_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_1_2 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_1_3 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_2_2 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_2_3 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_3_3 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_0_0 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_0_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_0_2 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_0_3 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_1_0 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_1_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_1_2 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_1_3 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_2_0 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_2_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_2_2 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_2_3 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_3_0 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_3_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_3_2 = tl.full((BLOCK,), 0.0, tl.float64)
    Pbar_3_3 = tl.full((BLOCK,), 0.0, tl.float64)
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*4 + 0, mask=_live, other=0.0).to(tl.float64)
        x_1 = tl.load(x_ptr + (_b*T + _t)*4 + 1, mask=_live, other=0.0).to(tl.float64)
        x_2 = tl.load(x_ptr + (_b*T + _t)*4 + 2, mask=_live, other=0.0).to(tl.float64)
        x_3 = tl.load(x_ptr + (_b*T + _t)*4 + 3, mask=_live, other=0.0).to(tl.float64)
        Gy_0 = tl.load(Gy_ptr + (_b*T + _t)*4 + 0, mask=_live, other=0.0).to(tl.float64)
        Gy_1 = tl.load(Gy_ptr + (_b*T + _t)*4 + 1, mask=_live, other=0.0).to(tl.float64)
        Gy_2 = tl.load(Gy_ptr + (_b*T + _t)*4 + 2, mask=_live, other=0.0).to(tl.float64)
        Gy_3 = tl.load(Gy_ptr + (_b*T + _t)*4 + 3, mask=_live, other=0.0).to(tl.float64)
        Gram_0_0 += (x_0*x_0)
        Gram_0_1 += x_0*x_1
        Gram_0_2 += x_0*x_2
        Gram_0_3 += x_0*x_3
        Gram_1_1 += (x_1*x_1)
        Gram_1_2 += x_1*x_2
        Gram_1_3 += x_1*x_3
        Gram_2_2 += (x_2*x_2)
        Gram_2_3 += x_2*x_3
        Gram_3_3 += (x_3*x_3)
        Pbar_0_0 += Gy_0*x_0
        Pbar_0_1 += Gy_1*x_0
        Pbar_0_2 += Gy_2*x_0
        Pbar_0_3 += Gy_3*x_0
        Pbar_1_0 += Gy_0*x_1
        Pbar_1_1 += Gy_1*x_1
        Pbar_1_2 += Gy_2*x_1
        Pbar_1_3 += Gy_3*x_1
        Pbar_2_0 += Gy_0*x_2
        Pbar_2_1 += Gy_1*x_2
        Pbar_2_2 += Gy_2*x_2
        Pbar_2_3 += Gy_3*x_2
        Pbar_3_0 += Gy_0*x_3
        Pbar_3_1 += Gy_1*x_3
        Pbar_3_2 += Gy_2*x_3
        Pbar_3_3 += Gy_3*x_3
    P_0_0 = 2.0*N_0_0 - 1.0
    P_0_1 = 2.0*N_0_1
    P_0_2 = 2.0*N_0_2
    P_0_3 = 2.0*N_0_3
    P_1_0 = 2.0*N_1_0
    P_1_1 = 2.0*N_1_1 - 1.0
    P_1_2 = 2.0*N_1_2
    P_1_3 = 2.0*N_1_3
    P_2_0 = 2.0*N_2_0
    P_2_1 = 2.0*N_2_1
    P_2_2 = 2.0*N_2_2 - 1.0
    P_2_3 = 2.0*N_2_3
    P_3_0 = 2.0*N_3_0
    P_3_1 = 2.0*N_3_1
    P_3_2 = 2.0*N_3_2
    P_3_3 = 2.0*N_3_3 - 1.0
    sMbar_0 = 2.0*N_0_0*Pbar_0_0 + 2.0*N_0_1*Pbar_0_1 + 2.0*N_0_2*Pbar_0_2 + 2.0*N_0_3*Pbar_0_3
    sMbar_1 = 2.0*N_0_0*Pbar_1_0 + 2.0*N_0_1*Pbar_1_1 + 2.0*N_0_2*Pbar_1_2 + 2.0*N_0_3*Pbar_1_3
    sMbar_2 = 2.0*N_0_0*Pbar_2_0 + 2.0*N_0_1*Pbar_2_1 + 2.0*N_0_2*Pbar_2_2 + 2.0*N_0_3*Pbar_2_3
    sMbar_3 = 2.0*N_0_0*Pbar_3_0 + 2.0*N_0_1*Pbar_3_1 + 2.0*N_0_2*Pbar_3_2 + 2.0*N_0_3*Pbar_3_3
    sMbar_4 = 2.0*N_1_0*Pbar_0_0 + 2.0*N_1_1*Pbar_0_1 + 2.0*N_1_2*Pbar_0_2 + 2.0*N_1_3*Pbar_0_3
    sMbar_5 = 2.0*N_1_0*Pbar_1_0 + 2.0*N_1_1*Pbar_1_1 + 2.0*N_1_2*Pbar_1_2 + 2.0*N_1_3*Pbar_1_3
    sMbar_6 = 2.0*N_1_0*Pbar_2_0 + 2.0*N_1_1*Pbar_2_1 + 2.0*N_1_2*Pbar_2_2 + 2.0*N_1_3*Pbar_2_3
    sMbar_7 = 2.0*N_1_0*Pbar_3_0 + 2.0*N_1_1*Pbar_3_1 + 2.0*N_1_2*Pbar_3_2 + 2.0*N_1_3*Pbar_3_3
    sMbar_8 = 2.0*N_2_0*Pbar_0_0 + 2.0*N_2_1*Pbar_0_1 + 2.0*N_2_2*Pbar_0_2 + 2.0*N_2_3*Pbar_0_3
    sMbar_9 = 2.0*N_2_0*Pbar_1_0 + 2.0*N_2_1*Pbar_1_1 + 2.0*N_2_2*Pbar_1_2 + 2.0*N_2_3*Pbar_1_3
    sMbar_10 = 2.0*N_2_0*Pbar_2_0 + 2.0*N_2_1*Pbar_2_1 + 2.0*N_2_2*Pbar_2_2 + 2.0*N_2_3*Pbar_2_3
    sMbar_11 = 2.0*N_2_0*Pbar_3_0 + 2.0*N_2_1*Pbar_3_1 + 2.0*N_2_2*Pbar_3_2 + 2.0*N_2_3*Pbar_3_3
    sMbar_12 = 2.0*N_3_0*Pbar_0_0 + 2.0*N_3_1*Pbar_0_1 + 2.0*N_3_2*Pbar_0_2 + 2.0*N_3_3*Pbar_0_3
    sMbar_13 = 2.0*N_3_0*Pbar_1_0 + 2.0*N_3_1*Pbar_1_1 + 2.0*N_3_2*Pbar_1_2 + 2.0*N_3_3*Pbar_1_3
    sMbar_14 = 2.0*N_3_0*Pbar_2_0 + 2.0*N_3_1*Pbar_2_1 + 2.0*N_3_2*Pbar_2_2 + 2.0*N_3_3*Pbar_2_3
    sMbar_15 = 2.0*N_3_0*Pbar_3_0 + 2.0*N_3_1*Pbar_3_1 + 2.0*N_3_2*Pbar_3_2 + 2.0*N_3_3*Pbar_3_3
    Mbar_0_0 = -N_0_0*sMbar_0 - N_1_0*sMbar_1 - N_2_0*sMbar_2 - N_3_0*sMbar_3
    Mbar_0_1 = -N_0_1*sMbar_0 - N_1_1*sMbar_1 - N_2_1*sMbar_2 - N_3_1*sMbar_3
    Mbar_0_2 = -N_0_2*sMbar_0 - N_1_2*sMbar_1 - N_2_2*sMbar_2 - N_3_2*sMbar_3
    Mbar_0_3 = -N_0_3*sMbar_0 - N_1_3*sMbar_1 - N_2_3*sMbar_2 - N_3_3*sMbar_3
    Mbar_1_0 = -N_0_0*sMbar_4 - N_1_0*sMbar_5 - N_2_0*sMbar_6 - N_3_0*sMbar_7
    Mbar_1_1 = -N_0_1*sMbar_4 - N_1_1*sMbar_5 - N_2_1*sMbar_6 - N_3_1*sMbar_7
    Mbar_1_2 = -N_0_2*sMbar_4 - N_1_2*sMbar_5 - N_2_2*sMbar_6 - N_3_2*sMbar_7
    Mbar_1_3 = -N_0_3*sMbar_4 - N_1_3*sMbar_5 - N_2_3*sMbar_6 - N_3_3*sMbar_7
    Mbar_2_0 = -N_0_0*sMbar_8 - N_1_0*sMbar_9 - N_2_0*sMbar_10 - N_3_0*sMbar_11
    Mbar_2_1 = -N_0_1*sMbar_8 - N_1_1*sMbar_9 - N_2_1*sMbar_10 - N_3_1*sMbar_11
    Mbar_2_2 = -N_0_2*sMbar_8 - N_1_2*sMbar_9 - N_2_2*sMbar_10 - N_3_2*sMbar_11
    Mbar_2_3 = -N_0_3*sMbar_8 - N_1_3*sMbar_9 - N_2_3*sMbar_10 - N_3_3*sMbar_11
    Mbar_3_0 = -N_0_0*sMbar_12 - N_1_0*sMbar_13 - N_2_0*sMbar_14 - N_3_0*sMbar_15
    Mbar_3_1 = -N_0_1*sMbar_12 - N_1_1*sMbar_13 - N_2_1*sMbar_14 - N_3_1*sMbar_15
    Mbar_3_2 = -N_0_2*sMbar_12 - N_1_2*sMbar_13 - N_2_2*sMbar_14 - N_3_2*sMbar_15
    Mbar_3_3 = -N_0_3*sMbar_12 - N_1_3*sMbar_13 - N_2_3*sMbar_14 - N_3_3*sMbar_15
    sH_0 = 2.0*A_2_0
    sH_1 = 2.0*A_3_0
    sH_2 = 2.0*A_2_1
    sH_3 = 2.0*A_3_1
    sH_4 = 2.0*A_3_2
    H_0_0 = -2.0*A_1_0*Mbar_0_1 - Mbar_0_2*sH_0 - Mbar_0_3*sH_1
    H_0_1 = A_1_0*Mbar_0_0 - A_1_0*Mbar_1_1 - A_2_0*Mbar_1_2 - A_2_1*Mbar_0_2 - A_3_0*Mbar_1_3 - A_3_1*Mbar_0_3
    H_0_2 = -A_1_0*Mbar_2_1 + A_2_0*Mbar_0_0 - A_2_0*Mbar_2_2 + A_2_1*Mbar_0_1 - A_3_0*Mbar_2_3 - A_3_2*Mbar_0_3
    H_0_3 = -A_1_0*Mbar_3_1 - A_2_0*Mbar_3_2 + A_3_0*Mbar_0_0 - A_3_0*Mbar_3_3 + A_3_1*Mbar_0_1 + A_3_2*Mbar_0_2
    H_1_1 = 2.0*A_1_0*Mbar_1_0 - Mbar_1_2*sH_2 - Mbar_1_3*sH_3
    H_1_2 = A_1_0*Mbar_2_0 + A_2_0*Mbar_1_0 + A_2_1*Mbar_1_1 - A_2_1*Mbar_2_2 - A_3_1*Mbar_2_3 - A_3_2*Mbar_1_3
    H_1_3 = A_1_0*Mbar_3_0 - A_2_1*Mbar_3_2 + A_3_0*Mbar_1_0 + A_3_1*Mbar_1_1 - A_3_1*Mbar_3_3 + A_3_2*Mbar_1_2
    H_2_2 = Mbar_2_0*sH_0 + Mbar_2_1*sH_2 - Mbar_2_3*sH_4
    H_2_3 = A_2_0*Mbar_3_0 + A_2_1*Mbar_3_1 + A_3_0*Mbar_2_0 + A_3_1*Mbar_2_1 + A_3_2*Mbar_2_2 - A_3_2*Mbar_3_3
    H_3_3 = Mbar_3_0*sH_1 + Mbar_3_1*sH_3 + Mbar_3_2*sH_4
    gA_0_0 = Gram_0_0*Mbar_0_0 + Gram_0_1*Mbar_1_0 + Gram_0_2*Mbar_2_0 + Gram_0_3*Mbar_3_0
    gA_0_1 = Gram_0_0*Mbar_0_1 + Gram_0_1*Mbar_1_1 + Gram_0_2*Mbar_2_1 + Gram_0_3*Mbar_3_1
    gA_0_2 = Gram_0_0*Mbar_0_2 + Gram_0_1*Mbar_1_2 + Gram_0_2*Mbar_2_2 + Gram_0_3*Mbar_3_2
    gA_0_3 = Gram_0_0*Mbar_0_3 + Gram_0_1*Mbar_1_3 + Gram_0_2*Mbar_2_3 + Gram_0_3*Mbar_3_3
    gA_1_0 = Gram_0_1*Mbar_0_0 + Gram_1_1*Mbar_1_0 + Gram_1_2*Mbar_2_0 + Gram_1_3*Mbar_3_0
    gA_1_1 = Gram_0_1*Mbar_0_1 + Gram_1_1*Mbar_1_1 + Gram_1_2*Mbar_2_1 + Gram_1_3*Mbar_3_1
    gA_1_2 = Gram_0_1*Mbar_0_2 + Gram_1_1*Mbar_1_2 + Gram_1_2*Mbar_2_2 + Gram_1_3*Mbar_3_2
    gA_1_3 = Gram_0_1*Mbar_0_3 + Gram_1_1*Mbar_1_3 + Gram_1_2*Mbar_2_3 + Gram_1_3*Mbar_3_3
    gA_2_0 = Gram_0_2*Mbar_0_0 + Gram_1_2*Mbar_1_0 + Gram_2_2*Mbar_2_0 + Gram_2_3*Mbar_3_0
    gA_2_1 = Gram_0_2*Mbar_0_1 + Gram_1_2*Mbar_1_1 + Gram_2_2*Mbar_2_1 + Gram_2_3*Mbar_3_1
    gA_2_2 = Gram_0_2*Mbar_0_2 + Gram_1_2*Mbar_1_2 + Gram_2_2*Mbar_2_2 + Gram_2_3*Mbar_3_2
    gA_2_3 = Gram_0_2*Mbar_0_3 + Gram_1_2*Mbar_1_3 + Gram_2_2*Mbar_2_3 + Gram_2_3*Mbar_3_3
    gA_3_0 = Gram_0_3*Mbar_0_0 + Gram_1_3*Mbar_1_0 + Gram_2_3*Mbar_2_0 + Gram_3_3*Mbar_3_0
    gA_3_1 = Gram_0_3*Mbar_0_1 + Gram_1_3*Mbar_1_1 + Gram_2_3*Mbar_2_1 + Gram_3_3*Mbar_3_1
    gA_3_2 = Gram_0_3*Mbar_0_2 + Gram_1_3*Mbar_1_2 + Gram_2_3*Mbar_2_2 + Gram_3_3*Mbar_3_2
    gA_3_3 = Gram_0_3*Mbar_0_3 + Gram_1_3*Mbar_1_3 + Gram_2_3*Mbar_2_3 + Gram_3_3*Mbar_3_3
    tl.store(gA_ptr + _b*16 + 0, gA_0_0, mask=_live)
    tl.store(gA_ptr + _b*16 + 1, gA_0_1, mask=_live)
    tl.store(gA_ptr + _b*16 + 2, gA_0_2, mask=_live)
    tl.store(gA_ptr + _b*16 + 3, gA_0_3, mask=_live)
    tl.store(gA_ptr + _b*16 + 4, gA_1_0, mask=_live)
    tl.store(gA_ptr + _b*16 + 5, gA_1_1, mask=_live)
    tl.store(gA_ptr + _b*16 + 6, gA_1_2, mask=_live)
    tl.store(gA_ptr + _b*16 + 7, gA_1_3, mask=_live)
    tl.store(gA_ptr + _b*16 + 8, gA_2_0, mask=_live)
    tl.store(gA_ptr + _b*16 + 9, gA_2_1, mask=_live)
    tl.store(gA_ptr + _b*16 + 10, gA_2_2, mask=_live)
    tl.store(gA_ptr + _b*16 + 11, gA_2_3, mask=_live)
    tl.store(gA_ptr + _b*16 + 12, gA_3_0, mask=_live)
    tl.store(gA_ptr + _b*16 + 13, gA_3_1, mask=_live)
    tl.store(gA_ptr + _b*16 + 14, gA_3_2, mask=_live)
    tl.store(gA_ptr + _b*16 + 15, gA_3_3, mask=_live)
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*4 + 0, mask=_live, other=0.0).to(tl.float64)
        x_1 = tl.load(x_ptr + (_b*T + _t)*4 + 1, mask=_live, other=0.0).to(tl.float64)
        x_2 = tl.load(x_ptr + (_b*T + _t)*4 + 2, mask=_live, other=0.0).to(tl.float64)
        x_3 = tl.load(x_ptr + (_b*T + _t)*4 + 3, mask=_live, other=0.0).to(tl.float64)
        Gy_0 = tl.load(Gy_ptr + (_b*T + _t)*4 + 0, mask=_live, other=0.0).to(tl.float64)
        Gy_1 = tl.load(Gy_ptr + (_b*T + _t)*4 + 1, mask=_live, other=0.0).to(tl.float64)
        Gy_2 = tl.load(Gy_ptr + (_b*T + _t)*4 + 2, mask=_live, other=0.0).to(tl.float64)
        Gy_3 = tl.load(Gy_ptr + (_b*T + _t)*4 + 3, mask=_live, other=0.0).to(tl.float64)
        gx_0_0 = Gy_0*P_0_0 + Gy_1*P_0_1 + Gy_2*P_0_2 + Gy_3*P_0_3 + H_0_0*x_0 + H_0_1*x_1 + H_0_2*x_2 + H_0_3*x_3
        gx_0_1 = Gy_0*P_1_0 + Gy_1*P_1_1 + Gy_2*P_1_2 + Gy_3*P_1_3 + H_0_1*x_0 + H_1_1*x_1 + H_1_2*x_2 + H_1_3*x_3
        gx_0_2 = Gy_0*P_2_0 + Gy_1*P_2_1 + Gy_2*P_2_2 + Gy_3*P_2_3 + H_0_2*x_0 + H_1_2*x_1 + H_2_2*x_2 + H_2_3*x_3
        gx_0_3 = Gy_0*P_3_0 + Gy_1*P_3_1 + Gy_2*P_3_2 + Gy_3*P_3_3 + H_0_3*x_0 + H_1_3*x_1 + H_2_3*x_2 + H_3_3*x_3
        tl.store(gx_ptr + (_b*T + _t)*4 + 0, gx_0_0.to(gx_ptr.dtype.element_ty), mask=_live)
        tl.store(gx_ptr + (_b*T + _t)*4 + 1, gx_0_1.to(gx_ptr.dtype.element_ty), mask=_live)
        tl.store(gx_ptr + (_b*T + _t)*4 + 2, gx_0_2.to(gx_ptr.dtype.element_ty), mask=_live)
        tl.store(gx_ptr + (_b*T + _t)*4 + 3, gx_0_3.to(gx_ptr.dtype.element_ty), mask=_live)
