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

__all__ = ["vp_gram_fwd_d1"]


@triton.jit
def vp_gram_fwd_d1(B, T, x_ptr, A_ptr, y_ptr, Gram_ptr, N_ptr, R_ptr, BLOCK: tl.constexpr):
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
    Gram_0_0 = tl.full((BLOCK,), 0.0, tl.float64)
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*1 + 0, mask=_live, other=0.0).to(tl.float64)
        Gram_0_0 += (x_0*x_0)
    tl.store(Gram_ptr + _b*1 + 0, Gram_0_0, mask=_live)
    tl.store(N_ptr + _b*1 + 0, (_one*1.0), mask=_live)
    _m = _one*0.0
    tl.store(R_ptr + _b, _m, mask=_live)
    for _t in range(0, T):
        x_0 = tl.load(x_ptr + (_b*T + _t)*1 + 0, mask=_live, other=0.0).to(tl.float64)
        y_0_0 = x_0
        tl.store(y_ptr + (_b*T + _t)*1 + 0, y_0_0.to(y_ptr.dtype.element_ty), mask=_live)
