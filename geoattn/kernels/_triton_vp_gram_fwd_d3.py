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

__all__ = ["vp_gram_fwd_d3"]


@triton.jit
def vp_gram_fwd_d3(B, T, x_ptr, A_ptr, y_ptr, Gram_ptr, N_ptr, R_ptr, BLOCK: tl.constexpr):
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
    A_1_0 = tl.load(A_ptr + 3).to(tl.float64)
    A_2_0 = tl.load(A_ptr + 6).to(tl.float64)
    A_2_1 = tl.load(A_ptr + 7).to(tl.float64)
    Gram_0_0 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_0_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_0_2 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_1_1 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_1_2 = tl.full((BLOCK,), 0.0, tl.float64)
    Gram_2_2 = tl.full((BLOCK,), 0.0, tl.float64)
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*3 + 0, mask=_live, other=0.0).to(tl.float64)
        x_1 = tl.load(x_ptr + (_b*T + _t)*3 + 1, mask=_live, other=0.0).to(tl.float64)
        x_2 = tl.load(x_ptr + (_b*T + _t)*3 + 2, mask=_live, other=0.0).to(tl.float64)
        Gram_0_0 += (x_0*x_0)
        Gram_0_1 += x_0*x_1
        Gram_0_2 += x_0*x_2
        Gram_1_1 += (x_1*x_1)
        Gram_1_2 += x_1*x_2
        Gram_2_2 += (x_2*x_2)
    sJ_0 = A_1_0*Gram_0_1
    sJ_1 = A_2_0*Gram_0_2
    sJ_2 = A_2_1*Gram_1_2
    J_0_0 = -sJ_0 - sJ_1
    J_0_1 = -A_1_0*Gram_1_1 - A_2_0*Gram_1_2
    J_0_2 = -A_1_0*Gram_1_2 - A_2_0*Gram_2_2
    J_1_0 = A_1_0*Gram_0_0 - A_2_1*Gram_0_2
    J_1_1 = sJ_0 - sJ_2
    J_1_2 = A_1_0*Gram_0_2 - A_2_1*Gram_2_2
    J_2_0 = A_2_0*Gram_0_0 + A_2_1*Gram_0_1
    J_2_1 = A_2_0*Gram_0_1 + A_2_1*Gram_1_1
    J_2_2 = sJ_1 + sJ_2
    sJ2_0 = J_0_1*J_1_0
    sJ2_1 = J_0_2*J_2_0
    sJ2_2 = J_1_2*J_2_1
    J2_0_0 = (J_0_0*J_0_0) + sJ2_0 + sJ2_1
    J2_0_1 = J_0_0*J_0_1 + J_0_1*J_1_1 + J_0_2*J_2_1
    J2_0_2 = J_0_0*J_0_2 + J_0_1*J_1_2 + J_0_2*J_2_2
    J2_1_0 = J_0_0*J_1_0 + J_1_0*J_1_1 + J_1_2*J_2_0
    J2_1_1 = (J_1_1*J_1_1) + sJ2_0 + sJ2_2
    J2_1_2 = J_0_2*J_1_0 + J_1_1*J_1_2 + J_1_2*J_2_2
    J2_2_0 = J_0_0*J_2_0 + J_1_0*J_2_1 + J_2_0*J_2_2
    J2_2_1 = J_0_1*J_2_0 + J_1_1*J_2_1 + J_2_1*J_2_2
    J2_2_2 = (J_2_2*J_2_2) + sJ2_1 + sJ2_2
    sNu_0 = J_0_0 + 1.0
    sNu_1 = ((1.0/2.0))*J2_2_2
    sNu_2 = -sNu_1
    sNu_3 = ((1.0/2.0))*J2_0_0
    sNu_4 = ((1.0/2.0))*J2_1_1
    sNu_5 = sNu_3 - sNu_4
    sNu_6 = sNu_2 + sNu_5 + 1.0
    sNu_7 = J_1_1 + 1.0
    sNu_8 = J_2_2 + 1.0
    sNu_9 = -sNu_1 - sNu_5 + 1.0
    sNu_10 = -sNu_2 - sNu_3 - sNu_4 + 1.0
    Nu_0_0 = J2_0_1*J_1_0 + J2_0_2*J_2_0 + sNu_0*sNu_6
    Nu_0_1 = J2_0_1*sNu_7 + J2_0_2*J_2_1 + J_0_1*sNu_6
    Nu_0_2 = J2_0_1*J_1_2 + J2_0_2*sNu_8 + J_0_2*sNu_6
    Nu_1_0 = J2_1_0*sNu_0 + J2_1_2*J_2_0 + J_1_0*sNu_9
    Nu_1_1 = J2_1_0*J_0_1 + J2_1_2*J_2_1 + sNu_7*sNu_9
    Nu_1_2 = J2_1_0*J_0_2 + J2_1_2*sNu_8 + J_1_2*sNu_9
    Nu_2_0 = J2_2_0*sNu_0 + J2_2_1*J_1_0 + J_2_0*sNu_10
    Nu_2_1 = J2_2_0*J_0_1 + J2_2_1*sNu_7 + J_2_1*sNu_10
    Nu_2_2 = J2_2_0*J_0_2 + J2_2_1*J_1_2 + sNu_10*sNu_8
    sN_0 = (1.0/(-(1.0/4.0)*(J2_0_0*J2_0_0) - (1.0/2.0)*J2_0_0 - (1.0/2.0)*J2_0_1*J2_1_0 - (1.0/2.0)*J2_0_2*J2_2_0 - (1.0/4.0)*(J2_1_1*J2_1_1) - (1.0/2.0)*J2_1_1 - (1.0/2.0)*J2_1_2*J2_2_1 - (1.0/4.0)*(J2_2_2*J2_2_2) - (1.0/2.0)*J2_2_2 + ((1.0/8.0))*((J2_0_0 + J2_1_1 + J2_2_2)*(J2_0_0 + J2_1_1 + J2_2_2)) + 1.0))
    N_0_0 = Nu_0_0*sN_0
    N_0_1 = Nu_0_1*sN_0
    N_0_2 = Nu_0_2*sN_0
    N_1_0 = Nu_1_0*sN_0
    N_1_1 = Nu_1_1*sN_0
    N_1_2 = Nu_1_2*sN_0
    N_2_0 = Nu_2_0*sN_0
    N_2_1 = Nu_2_1*sN_0
    N_2_2 = Nu_2_2*sN_0
    P_0_0 = 2.0*N_0_0 - 1.0
    P_0_1 = 2.0*N_0_1
    P_0_2 = 2.0*N_0_2
    P_1_0 = 2.0*N_1_0
    P_1_1 = 2.0*N_1_1 - 1.0
    P_1_2 = 2.0*N_1_2
    P_2_0 = 2.0*N_2_0
    P_2_1 = 2.0*N_2_1
    P_2_2 = 2.0*N_2_2 - 1.0
    R_0_0 = -J_0_0*N_0_0 - J_0_1*N_1_0 - J_0_2*N_2_0 + N_0_0 - 1.0
    R_0_1 = -J_0_0*N_0_1 - J_0_1*N_1_1 - J_0_2*N_2_1 + N_0_1
    R_0_2 = -J_0_0*N_0_2 - J_0_1*N_1_2 - J_0_2*N_2_2 + N_0_2
    R_1_0 = -J_1_0*N_0_0 - J_1_1*N_1_0 - J_1_2*N_2_0 + N_1_0
    R_1_1 = -J_1_0*N_0_1 - J_1_1*N_1_1 - J_1_2*N_2_1 + N_1_1 - 1.0
    R_1_2 = -J_1_0*N_0_2 - J_1_1*N_1_2 - J_1_2*N_2_2 + N_1_2
    R_2_0 = -J_2_0*N_0_0 - J_2_1*N_1_0 - J_2_2*N_2_0 + N_2_0
    R_2_1 = -J_2_0*N_0_1 - J_2_1*N_1_1 - J_2_2*N_2_1 + N_2_1
    R_2_2 = -J_2_0*N_0_2 - J_2_1*N_1_2 - J_2_2*N_2_2 + N_2_2 - 1.0
    tl.store(Gram_ptr + _b*9 + 0, Gram_0_0, mask=_live)
    tl.store(Gram_ptr + _b*9 + 1, Gram_0_1, mask=_live)
    tl.store(Gram_ptr + _b*9 + 2, Gram_0_2, mask=_live)
    tl.store(Gram_ptr + _b*9 + 3, Gram_0_1, mask=_live)
    tl.store(Gram_ptr + _b*9 + 4, Gram_1_1, mask=_live)
    tl.store(Gram_ptr + _b*9 + 5, Gram_1_2, mask=_live)
    tl.store(Gram_ptr + _b*9 + 6, Gram_0_2, mask=_live)
    tl.store(Gram_ptr + _b*9 + 7, Gram_1_2, mask=_live)
    tl.store(Gram_ptr + _b*9 + 8, Gram_2_2, mask=_live)
    tl.store(N_ptr + _b*9 + 0, N_0_0, mask=_live)
    tl.store(N_ptr + _b*9 + 1, N_0_1, mask=_live)
    tl.store(N_ptr + _b*9 + 2, N_0_2, mask=_live)
    tl.store(N_ptr + _b*9 + 3, N_1_0, mask=_live)
    tl.store(N_ptr + _b*9 + 4, N_1_1, mask=_live)
    tl.store(N_ptr + _b*9 + 5, N_1_2, mask=_live)
    tl.store(N_ptr + _b*9 + 6, N_2_0, mask=_live)
    tl.store(N_ptr + _b*9 + 7, N_2_1, mask=_live)
    tl.store(N_ptr + _b*9 + 8, N_2_2, mask=_live)
    _m = _one*0.0
    _a = tl.abs(R_0_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_0_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_0_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_1_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_1_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_1_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_2_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_2_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(R_2_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    tl.store(R_ptr + _b, _m, mask=_live)
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*3 + 0, mask=_live, other=0.0).to(tl.float64)
        x_1 = tl.load(x_ptr + (_b*T + _t)*3 + 1, mask=_live, other=0.0).to(tl.float64)
        x_2 = tl.load(x_ptr + (_b*T + _t)*3 + 2, mask=_live, other=0.0).to(tl.float64)
        y_0_0 = P_0_0*x_0 + P_1_0*x_1 + P_2_0*x_2
        y_0_1 = P_0_1*x_0 + P_1_1*x_1 + P_2_1*x_2
        y_0_2 = P_0_2*x_0 + P_1_2*x_1 + P_2_2*x_2
        tl.store(y_ptr + (_b*T + _t)*3 + 0, y_0_0.to(y_ptr.dtype.element_ty), mask=_live)
        tl.store(y_ptr + (_b*T + _t)*3 + 1, y_0_1.to(y_ptr.dtype.element_ty), mask=_live)
        tl.store(y_ptr + (_b*T + _t)*3 + 2, y_0_2.to(y_ptr.dtype.element_ty), mask=_live)
