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
  cayley_vjp: P = I + Lam.T; gC = -(1/2)*P*G*P  [cayley.vjp]
"""

import triton
import triton.language as tl

__all__ = ["cayley_vjp_d3"]


@triton.jit
def cayley_vjp_d3(B, T, Lam_ptr, G_ptr, gC_ptr, BLOCK: tl.constexpr):
    # The Cayley transform's vector-Jacobian product -1/2 (I + Lam^T) G (I + Lam^T) from the output Lam,
    # for T <= 3 (T renamed d).
    # from: P = I + Lam.T
    # from: gC = -(1/2)*P*G*P
    # verified by: cayley.vjp
    _b = (tl.program_id(0)*BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
    _live = _b < B
    Lam_0_0 = tl.load(Lam_ptr + _b*9 + 0, mask=_live, other=0.0).to(tl.float64)
    Lam_0_1 = tl.load(Lam_ptr + _b*9 + 1, mask=_live, other=0.0).to(tl.float64)
    Lam_0_2 = tl.load(Lam_ptr + _b*9 + 2, mask=_live, other=0.0).to(tl.float64)
    Lam_1_0 = tl.load(Lam_ptr + _b*9 + 3, mask=_live, other=0.0).to(tl.float64)
    Lam_1_1 = tl.load(Lam_ptr + _b*9 + 4, mask=_live, other=0.0).to(tl.float64)
    Lam_1_2 = tl.load(Lam_ptr + _b*9 + 5, mask=_live, other=0.0).to(tl.float64)
    Lam_2_0 = tl.load(Lam_ptr + _b*9 + 6, mask=_live, other=0.0).to(tl.float64)
    Lam_2_1 = tl.load(Lam_ptr + _b*9 + 7, mask=_live, other=0.0).to(tl.float64)
    Lam_2_2 = tl.load(Lam_ptr + _b*9 + 8, mask=_live, other=0.0).to(tl.float64)
    G_0_0 = tl.load(G_ptr + _b*9 + 0, mask=_live, other=0.0).to(tl.float64)
    G_0_1 = tl.load(G_ptr + _b*9 + 1, mask=_live, other=0.0).to(tl.float64)
    G_0_2 = tl.load(G_ptr + _b*9 + 2, mask=_live, other=0.0).to(tl.float64)
    G_1_0 = tl.load(G_ptr + _b*9 + 3, mask=_live, other=0.0).to(tl.float64)
    G_1_1 = tl.load(G_ptr + _b*9 + 4, mask=_live, other=0.0).to(tl.float64)
    G_1_2 = tl.load(G_ptr + _b*9 + 5, mask=_live, other=0.0).to(tl.float64)
    G_2_0 = tl.load(G_ptr + _b*9 + 6, mask=_live, other=0.0).to(tl.float64)
    G_2_1 = tl.load(G_ptr + _b*9 + 7, mask=_live, other=0.0).to(tl.float64)
    G_2_2 = tl.load(G_ptr + _b*9 + 8, mask=_live, other=0.0).to(tl.float64)
    P_0_0 = Lam_0_0 + 1.0
    P_0_1 = Lam_1_0
    P_0_2 = Lam_2_0
    P_1_0 = Lam_0_1
    P_1_1 = Lam_1_1 + 1.0
    P_1_2 = Lam_2_1
    P_2_0 = Lam_0_2
    P_2_1 = Lam_1_2
    P_2_2 = Lam_2_2 + 1.0
    sgC_0 = ((1.0/2.0))*G_0_0*P_0_0 + ((1.0/2.0))*G_1_0*P_0_1 + ((1.0/2.0))*G_2_0*P_0_2
    sgC_1 = ((1.0/2.0))*G_0_1*P_0_0 + ((1.0/2.0))*G_1_1*P_0_1 + ((1.0/2.0))*G_2_1*P_0_2
    sgC_2 = ((1.0/2.0))*G_0_2*P_0_0 + ((1.0/2.0))*G_1_2*P_0_1 + ((1.0/2.0))*G_2_2*P_0_2
    sgC_3 = ((1.0/2.0))*G_0_0*P_1_0 + ((1.0/2.0))*G_1_0*P_1_1 + ((1.0/2.0))*G_2_0*P_1_2
    sgC_4 = ((1.0/2.0))*G_0_1*P_1_0 + ((1.0/2.0))*G_1_1*P_1_1 + ((1.0/2.0))*G_2_1*P_1_2
    sgC_5 = ((1.0/2.0))*G_0_2*P_1_0 + ((1.0/2.0))*G_1_2*P_1_1 + ((1.0/2.0))*G_2_2*P_1_2
    sgC_6 = ((1.0/2.0))*G_0_0*P_2_0 + ((1.0/2.0))*G_1_0*P_2_1 + ((1.0/2.0))*G_2_0*P_2_2
    sgC_7 = ((1.0/2.0))*G_0_1*P_2_0 + ((1.0/2.0))*G_1_1*P_2_1 + ((1.0/2.0))*G_2_1*P_2_2
    sgC_8 = ((1.0/2.0))*G_0_2*P_2_0 + ((1.0/2.0))*G_1_2*P_2_1 + ((1.0/2.0))*G_2_2*P_2_2
    gC_0_0 = -P_0_0*sgC_0 - P_1_0*sgC_1 - P_2_0*sgC_2
    gC_0_1 = -P_0_1*sgC_0 - P_1_1*sgC_1 - P_2_1*sgC_2
    gC_0_2 = -P_0_2*sgC_0 - P_1_2*sgC_1 - P_2_2*sgC_2
    gC_1_0 = -P_0_0*sgC_3 - P_1_0*sgC_4 - P_2_0*sgC_5
    gC_1_1 = -P_0_1*sgC_3 - P_1_1*sgC_4 - P_2_1*sgC_5
    gC_1_2 = -P_0_2*sgC_3 - P_1_2*sgC_4 - P_2_2*sgC_5
    gC_2_0 = -P_0_0*sgC_6 - P_1_0*sgC_7 - P_2_0*sgC_8
    gC_2_1 = -P_0_1*sgC_6 - P_1_1*sgC_7 - P_2_1*sgC_8
    gC_2_2 = -P_0_2*sgC_6 - P_1_2*sgC_7 - P_2_2*sgC_8
    tl.store(gC_ptr + _b*9 + 0, gC_0_0.to(gC_ptr.dtype.element_ty), mask=_live)
    tl.store(gC_ptr + _b*9 + 1, gC_0_1.to(gC_ptr.dtype.element_ty), mask=_live)
    tl.store(gC_ptr + _b*9 + 2, gC_0_2.to(gC_ptr.dtype.element_ty), mask=_live)
    tl.store(gC_ptr + _b*9 + 3, gC_1_0.to(gC_ptr.dtype.element_ty), mask=_live)
    tl.store(gC_ptr + _b*9 + 4, gC_1_1.to(gC_ptr.dtype.element_ty), mask=_live)
    tl.store(gC_ptr + _b*9 + 5, gC_1_2.to(gC_ptr.dtype.element_ty), mask=_live)
    tl.store(gC_ptr + _b*9 + 6, gC_2_0.to(gC_ptr.dtype.element_ty), mask=_live)
    tl.store(gC_ptr + _b*9 + 7, gC_2_1.to(gC_ptr.dtype.element_ty), mask=_live)
    tl.store(gC_ptr + _b*9 + 8, gC_2_2.to(gC_ptr.dtype.element_ty), mask=_live)
