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
  vp_gram_fwd: Gram = x.T*x; J = A*Gram; J2 = J**2; Nu = ((1 - Trace(J2)/2)*I + J2)*(I + J); N = 1/(-Trace(J2**2)/4 + Trace(J2)**2/8 - Trace(J2)/2 + 1)*Nu; P = -I + 2*N; R = -I - J*N + N; y = x*P  [vp.gram_closed_form, vp.gram_closed_form_vjp]
"""

import triton
import triton.language as tl

__all__ = ["vp_gram_fwd_d4"]


@triton.jit
def vp_gram_fwd_d4(B, T, x_ptr, A_ptr, y_ptr, Gram_ptr, N_ptr, R_ptr, BLOCK: tl.constexpr):
    # The closed-form Gram layer's forward for d <= 4: Gram = x^T x, N = (I + Gram A)^{-T} in closed form,
    # the largest entry of its residual R = (I + Gram A)^T N - I, and y = x (2N - I).
    # from: Gram = x.T*x
    # from: J = A*Gram
    # from: J2 = J**2
    # from: Nu = ((1 - Trace(J2)/2)*I + J2)*(I + J)
    # from: N = 1/(-Trace(J2**2)/4 + Trace(J2)**2/8 - Trace(J2)/2 + 1)*Nu
    # from: P = -I + 2*N
    # from: R = -I - J*N + N
    # from: y = x*P
    # verified by: vp.gram_closed_form, vp.gram_closed_form_vjp
    _b = (tl.program_id(0)*BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
    _live = _b < B
    _one = tl.full((BLOCK,), 1.0, tl.float64)
    A_1_0 = tl.load(A_ptr + 4).to(tl.float64)
    A_2_0 = tl.load(A_ptr + 8).to(tl.float64)
    A_3_0 = tl.load(A_ptr + 12).to(tl.float64)
    A_2_1 = tl.load(A_ptr + 9).to(tl.float64)
    A_3_1 = tl.load(A_ptr + 13).to(tl.float64)
    A_3_2 = tl.load(A_ptr + 14).to(tl.float64)
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
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*4 + 0, mask=_live, other=0.0).to(tl.float64)
        x_1 = tl.load(x_ptr + (_b*T + _t)*4 + 1, mask=_live, other=0.0).to(tl.float64)
        x_2 = tl.load(x_ptr + (_b*T + _t)*4 + 2, mask=_live, other=0.0).to(tl.float64)
        x_3 = tl.load(x_ptr + (_b*T + _t)*4 + 3, mask=_live, other=0.0).to(tl.float64)
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
    sJ_0 = A_1_0*Gram_0_1
    sJ_1 = A_2_0*Gram_0_2
    sJ_2 = A_3_0*Gram_0_3
    sJ_3 = A_2_1*Gram_1_2
    sJ_4 = A_3_1*Gram_1_3
    sJ_5 = A_3_2*Gram_2_3
    J_0_0 = -sJ_0 - sJ_1 - sJ_2
    J_0_1 = -A_1_0*Gram_1_1 - A_2_0*Gram_1_2 - A_3_0*Gram_1_3
    J_0_2 = -A_1_0*Gram_1_2 - A_2_0*Gram_2_2 - A_3_0*Gram_2_3
    J_0_3 = -A_1_0*Gram_1_3 - A_2_0*Gram_2_3 - A_3_0*Gram_3_3
    J_1_0 = A_1_0*Gram_0_0 - A_2_1*Gram_0_2 - A_3_1*Gram_0_3
    J_1_1 = sJ_0 - sJ_3 - sJ_4
    J_1_2 = A_1_0*Gram_0_2 - A_2_1*Gram_2_2 - A_3_1*Gram_2_3
    J_1_3 = A_1_0*Gram_0_3 - A_2_1*Gram_2_3 - A_3_1*Gram_3_3
    J_2_0 = A_2_0*Gram_0_0 + A_2_1*Gram_0_1 - A_3_2*Gram_0_3
    J_2_1 = A_2_0*Gram_0_1 + A_2_1*Gram_1_1 - A_3_2*Gram_1_3
    J_2_2 = sJ_1 + sJ_3 - sJ_5
    J_2_3 = A_2_0*Gram_0_3 + A_2_1*Gram_1_3 - A_3_2*Gram_3_3
    J_3_0 = A_3_0*Gram_0_0 + A_3_1*Gram_0_1 + A_3_2*Gram_0_2
    J_3_1 = A_3_0*Gram_0_1 + A_3_1*Gram_1_1 + A_3_2*Gram_1_2
    J_3_2 = A_3_0*Gram_0_2 + A_3_1*Gram_1_2 + A_3_2*Gram_2_2
    J_3_3 = sJ_2 + sJ_4 + sJ_5
    sJ2_0 = J_0_1*J_1_0
    sJ2_1 = J_0_2*J_2_0
    sJ2_2 = J_0_3*J_3_0
    sJ2_3 = J_1_2*J_2_1
    sJ2_4 = J_1_3*J_3_1
    sJ2_5 = J_2_3*J_3_2
    J2_0_0 = (J_0_0*J_0_0) + sJ2_0 + sJ2_1 + sJ2_2
    J2_0_1 = J_0_0*J_0_1 + J_0_1*J_1_1 + J_0_2*J_2_1 + J_0_3*J_3_1
    J2_0_2 = J_0_0*J_0_2 + J_0_1*J_1_2 + J_0_2*J_2_2 + J_0_3*J_3_2
    J2_0_3 = J_0_0*J_0_3 + J_0_1*J_1_3 + J_0_2*J_2_3 + J_0_3*J_3_3
    J2_1_0 = J_0_0*J_1_0 + J_1_0*J_1_1 + J_1_2*J_2_0 + J_1_3*J_3_0
    J2_1_1 = (J_1_1*J_1_1) + sJ2_0 + sJ2_3 + sJ2_4
    J2_1_2 = J_0_2*J_1_0 + J_1_1*J_1_2 + J_1_2*J_2_2 + J_1_3*J_3_2
    J2_1_3 = J_0_3*J_1_0 + J_1_1*J_1_3 + J_1_2*J_2_3 + J_1_3*J_3_3
    J2_2_0 = J_0_0*J_2_0 + J_1_0*J_2_1 + J_2_0*J_2_2 + J_2_3*J_3_0
    J2_2_1 = J_0_1*J_2_0 + J_1_1*J_2_1 + J_2_1*J_2_2 + J_2_3*J_3_1
    J2_2_2 = (J_2_2*J_2_2) + sJ2_1 + sJ2_3 + sJ2_5
    J2_2_3 = J_0_3*J_2_0 + J_1_3*J_2_1 + J_2_2*J_2_3 + J_2_3*J_3_3
    J2_3_0 = J_0_0*J_3_0 + J_1_0*J_3_1 + J_2_0*J_3_2 + J_3_0*J_3_3
    J2_3_1 = J_0_1*J_3_0 + J_1_1*J_3_1 + J_2_1*J_3_2 + J_3_1*J_3_3
    J2_3_2 = J_0_2*J_3_0 + J_1_2*J_3_1 + J_2_2*J_3_2 + J_3_2*J_3_3
    J2_3_3 = (J_3_3*J_3_3) + sJ2_2 + sJ2_4 + sJ2_5
    sNu_0 = J_0_0 + 1.0
    sNu_1 = ((1.0/2.0))*J2_1_1
    sNu_2 = ((1.0/2.0))*J2_0_0
    sNu_3 = ((1.0/2.0))*J2_2_2
    sNu_4 = ((1.0/2.0))*J2_3_3
    sNu_5 = sNu_3 + sNu_4 - 1.0
    sNu_6 = -sNu_1 + sNu_2 - sNu_5
    sNu_7 = J_1_1 + 1.0
    sNu_8 = J_2_2 + 1.0
    sNu_9 = J_3_3 + 1.0
    sNu_10 = sNu_1 - sNu_2 - sNu_5
    sNu_11 = sNu_1 + sNu_2 - 1.0
    sNu_12 = -sNu_11 + sNu_3 - sNu_4
    sNu_13 = -sNu_11 - sNu_3 + sNu_4
    Nu_0_0 = J2_0_1*J_1_0 + J2_0_2*J_2_0 + J2_0_3*J_3_0 + sNu_0*sNu_6
    Nu_0_1 = J2_0_1*sNu_7 + J2_0_2*J_2_1 + J2_0_3*J_3_1 + J_0_1*sNu_6
    Nu_0_2 = J2_0_1*J_1_2 + J2_0_2*sNu_8 + J2_0_3*J_3_2 + J_0_2*sNu_6
    Nu_0_3 = J2_0_1*J_1_3 + J2_0_2*J_2_3 + J2_0_3*sNu_9 + J_0_3*sNu_6
    Nu_1_0 = J2_1_0*sNu_0 + J2_1_2*J_2_0 + J2_1_3*J_3_0 + J_1_0*sNu_10
    Nu_1_1 = J2_1_0*J_0_1 + J2_1_2*J_2_1 + J2_1_3*J_3_1 + sNu_10*sNu_7
    Nu_1_2 = J2_1_0*J_0_2 + J2_1_2*sNu_8 + J2_1_3*J_3_2 + J_1_2*sNu_10
    Nu_1_3 = J2_1_0*J_0_3 + J2_1_2*J_2_3 + J2_1_3*sNu_9 + J_1_3*sNu_10
    Nu_2_0 = J2_2_0*sNu_0 + J2_2_1*J_1_0 + J2_2_3*J_3_0 + J_2_0*sNu_12
    Nu_2_1 = J2_2_0*J_0_1 + J2_2_1*sNu_7 + J2_2_3*J_3_1 + J_2_1*sNu_12
    Nu_2_2 = J2_2_0*J_0_2 + J2_2_1*J_1_2 + J2_2_3*J_3_2 + sNu_12*sNu_8
    Nu_2_3 = J2_2_0*J_0_3 + J2_2_1*J_1_3 + J2_2_3*sNu_9 + J_2_3*sNu_12
    Nu_3_0 = J2_3_0*sNu_0 + J2_3_1*J_1_0 + J2_3_2*J_2_0 + J_3_0*sNu_13
    Nu_3_1 = J2_3_0*J_0_1 + J2_3_1*sNu_7 + J2_3_2*J_2_1 + J_3_1*sNu_13
    Nu_3_2 = J2_3_0*J_0_2 + J2_3_1*J_1_2 + J2_3_2*sNu_8 + J_3_2*sNu_13
    Nu_3_3 = J2_3_0*J_0_3 + J2_3_1*J_1_3 + J2_3_2*J_2_3 + sNu_13*sNu_9
    sN_0 = (1.0/(-(1.0/4.0)*(J2_0_0*J2_0_0) - (1.0/2.0)*J2_0_0 - (1.0/2.0)*J2_0_1*J2_1_0 - (1.0/2.0)*J2_0_2*J2_2_0 - (1.0/2.0)*J2_0_3*J2_3_0 - (1.0/4.0)*(J2_1_1*J2_1_1) - (1.0/2.0)*J2_1_1 - (1.0/2.0)*J2_1_2*J2_2_1 - (1.0/2.0)*J2_1_3*J2_3_1 - (1.0/4.0)*(J2_2_2*J2_2_2) - (1.0/2.0)*J2_2_2 - (1.0/2.0)*J2_2_3*J2_3_2 - (1.0/4.0)*(J2_3_3*J2_3_3) - (1.0/2.0)*J2_3_3 + ((1.0/8.0))*((J2_0_0 + J2_1_1 + J2_2_2 + J2_3_3)*(J2_0_0 + J2_1_1 + J2_2_2 + J2_3_3)) + 1.0))
    N_0_0 = Nu_0_0*sN_0
    N_0_1 = Nu_0_1*sN_0
    N_0_2 = Nu_0_2*sN_0
    N_0_3 = Nu_0_3*sN_0
    N_1_0 = Nu_1_0*sN_0
    N_1_1 = Nu_1_1*sN_0
    N_1_2 = Nu_1_2*sN_0
    N_1_3 = Nu_1_3*sN_0
    N_2_0 = Nu_2_0*sN_0
    N_2_1 = Nu_2_1*sN_0
    N_2_2 = Nu_2_2*sN_0
    N_2_3 = Nu_2_3*sN_0
    N_3_0 = Nu_3_0*sN_0
    N_3_1 = Nu_3_1*sN_0
    N_3_2 = Nu_3_2*sN_0
    N_3_3 = Nu_3_3*sN_0
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
    R_0_0 = -J_0_0*N_0_0 - J_0_1*N_1_0 - J_0_2*N_2_0 - J_0_3*N_3_0 + N_0_0 - 1.0
    R_0_1 = -J_0_0*N_0_1 - J_0_1*N_1_1 - J_0_2*N_2_1 - J_0_3*N_3_1 + N_0_1
    R_0_2 = -J_0_0*N_0_2 - J_0_1*N_1_2 - J_0_2*N_2_2 - J_0_3*N_3_2 + N_0_2
    R_0_3 = -J_0_0*N_0_3 - J_0_1*N_1_3 - J_0_2*N_2_3 - J_0_3*N_3_3 + N_0_3
    R_1_0 = -J_1_0*N_0_0 - J_1_1*N_1_0 - J_1_2*N_2_0 - J_1_3*N_3_0 + N_1_0
    R_1_1 = -J_1_0*N_0_1 - J_1_1*N_1_1 - J_1_2*N_2_1 - J_1_3*N_3_1 + N_1_1 - 1.0
    R_1_2 = -J_1_0*N_0_2 - J_1_1*N_1_2 - J_1_2*N_2_2 - J_1_3*N_3_2 + N_1_2
    R_1_3 = -J_1_0*N_0_3 - J_1_1*N_1_3 - J_1_2*N_2_3 - J_1_3*N_3_3 + N_1_3
    R_2_0 = -J_2_0*N_0_0 - J_2_1*N_1_0 - J_2_2*N_2_0 - J_2_3*N_3_0 + N_2_0
    R_2_1 = -J_2_0*N_0_1 - J_2_1*N_1_1 - J_2_2*N_2_1 - J_2_3*N_3_1 + N_2_1
    R_2_2 = -J_2_0*N_0_2 - J_2_1*N_1_2 - J_2_2*N_2_2 - J_2_3*N_3_2 + N_2_2 - 1.0
    R_2_3 = -J_2_0*N_0_3 - J_2_1*N_1_3 - J_2_2*N_2_3 - J_2_3*N_3_3 + N_2_3
    R_3_0 = -J_3_0*N_0_0 - J_3_1*N_1_0 - J_3_2*N_2_0 - J_3_3*N_3_0 + N_3_0
    R_3_1 = -J_3_0*N_0_1 - J_3_1*N_1_1 - J_3_2*N_2_1 - J_3_3*N_3_1 + N_3_1
    R_3_2 = -J_3_0*N_0_2 - J_3_1*N_1_2 - J_3_2*N_2_2 - J_3_3*N_3_2 + N_3_2
    R_3_3 = -J_3_0*N_0_3 - J_3_1*N_1_3 - J_3_2*N_2_3 - J_3_3*N_3_3 + N_3_3 - 1.0
    tl.store(Gram_ptr + _b*16 + 0, Gram_0_0, mask=_live)
    tl.store(Gram_ptr + _b*16 + 1, Gram_0_1, mask=_live)
    tl.store(Gram_ptr + _b*16 + 2, Gram_0_2, mask=_live)
    tl.store(Gram_ptr + _b*16 + 3, Gram_0_3, mask=_live)
    tl.store(Gram_ptr + _b*16 + 4, Gram_0_1, mask=_live)
    tl.store(Gram_ptr + _b*16 + 5, Gram_1_1, mask=_live)
    tl.store(Gram_ptr + _b*16 + 6, Gram_1_2, mask=_live)
    tl.store(Gram_ptr + _b*16 + 7, Gram_1_3, mask=_live)
    tl.store(Gram_ptr + _b*16 + 8, Gram_0_2, mask=_live)
    tl.store(Gram_ptr + _b*16 + 9, Gram_1_2, mask=_live)
    tl.store(Gram_ptr + _b*16 + 10, Gram_2_2, mask=_live)
    tl.store(Gram_ptr + _b*16 + 11, Gram_2_3, mask=_live)
    tl.store(Gram_ptr + _b*16 + 12, Gram_0_3, mask=_live)
    tl.store(Gram_ptr + _b*16 + 13, Gram_1_3, mask=_live)
    tl.store(Gram_ptr + _b*16 + 14, Gram_2_3, mask=_live)
    tl.store(Gram_ptr + _b*16 + 15, Gram_3_3, mask=_live)
    tl.store(N_ptr + _b*16 + 0, N_0_0, mask=_live)
    tl.store(N_ptr + _b*16 + 1, N_0_1, mask=_live)
    tl.store(N_ptr + _b*16 + 2, N_0_2, mask=_live)
    tl.store(N_ptr + _b*16 + 3, N_0_3, mask=_live)
    tl.store(N_ptr + _b*16 + 4, N_1_0, mask=_live)
    tl.store(N_ptr + _b*16 + 5, N_1_1, mask=_live)
    tl.store(N_ptr + _b*16 + 6, N_1_2, mask=_live)
    tl.store(N_ptr + _b*16 + 7, N_1_3, mask=_live)
    tl.store(N_ptr + _b*16 + 8, N_2_0, mask=_live)
    tl.store(N_ptr + _b*16 + 9, N_2_1, mask=_live)
    tl.store(N_ptr + _b*16 + 10, N_2_2, mask=_live)
    tl.store(N_ptr + _b*16 + 11, N_2_3, mask=_live)
    tl.store(N_ptr + _b*16 + 12, N_3_0, mask=_live)
    tl.store(N_ptr + _b*16 + 13, N_3_1, mask=_live)
    tl.store(N_ptr + _b*16 + 14, N_3_2, mask=_live)
    tl.store(N_ptr + _b*16 + 15, N_3_3, mask=_live)
    _m = _one*0.0
    _a = tl.abs(R_0_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_0_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_0_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_0_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_1_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_1_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_1_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_1_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_2_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_2_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_2_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_2_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_3_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_3_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_3_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_3_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    tl.store(R_ptr + _b, _m, mask=_live)
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*4 + 0, mask=_live, other=0.0).to(tl.float64)
        x_1 = tl.load(x_ptr + (_b*T + _t)*4 + 1, mask=_live, other=0.0).to(tl.float64)
        x_2 = tl.load(x_ptr + (_b*T + _t)*4 + 2, mask=_live, other=0.0).to(tl.float64)
        x_3 = tl.load(x_ptr + (_b*T + _t)*4 + 3, mask=_live, other=0.0).to(tl.float64)
        y_0_0 = P_0_0*x_0 + P_1_0*x_1 + P_2_0*x_2 + P_3_0*x_3
        y_0_1 = P_0_1*x_0 + P_1_1*x_1 + P_2_1*x_2 + P_3_1*x_3
        y_0_2 = P_0_2*x_0 + P_1_2*x_1 + P_2_2*x_2 + P_3_2*x_3
        y_0_3 = P_0_3*x_0 + P_1_3*x_1 + P_2_3*x_2 + P_3_3*x_3
        tl.store(y_ptr + (_b*T + _t)*4 + 0, y_0_0.to(y_ptr.dtype.element_ty), mask=_live)
        tl.store(y_ptr + (_b*T + _t)*4 + 1, y_0_1.to(y_ptr.dtype.element_ty), mask=_live)
        tl.store(y_ptr + (_b*T + _t)*4 + 2, y_0_2.to(y_ptr.dtype.element_ty), mask=_live)
        tl.store(y_ptr + (_b*T + _t)*4 + 3, y_0_3.to(y_ptr.dtype.element_ty), mask=_live)
