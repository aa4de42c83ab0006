"""A Triton kernel generated from the verified SymPy bindings: one native kernel at one width.

DO NOT EDIT: this file is written by ``geoattn codegen`` from ``geoattn/symbolic/expressions.py`` (the bindings of
``geoattn.symbolic.kernel_table.NATIVE_KERNELS``, which the C kernels of ``_native_gram.c`` are printed from too);
``geoattn codegen --check`` fails when it is stale. It is imported by ``geoattn.kernels._triton`` only where
``triton`` is installed. Every kernel is printed from one scalar program (``geoattn.codegen.lowering``): one
program per ``BLOCK`` samples, one lane per sample, loops over the tokens for the reductions and the row maps,
every value in float64 (Note [Triton lanes] in ``geoattn.codegen.tritonprinter``).

bindings-sha256: d15444b020b7751f106078d724d6d15b536cb6fce96adf6d5aaec8c82e12bc64
printer-version: 5

Sources (kernel: bindings  [ledger claims]):
  exp_skew_small_fwd: K = (1/2)*S - (1/2)*S.T; H = Hodge4(K); Sp = (1/2)*H + (1/2)*K; Sm = -(1/2)*H + (1/2)*K; Sp2 = Sp**2; Sm2 = Sm**2; Ep = cos(sqrt(-Trace(Sp2))/2)*I + sinc(sqrt(-Trace(Sp2))/2)*Sp; Em = cos(sqrt(-Trace(Sm2))/2)*I + sinc(sqrt(-Trace(Sm2))/2)*Sm; E = Ep*Em; Skew = S + S.T; Size = S  [exp_skew.hodge_form]
"""

import triton
import triton.language as tl

__all__ = ["exp_skew_small_fwd_d4"]


@triton.jit
def exp_skew_small_fwd_d4(B, T, S_ptr, E_ptr, Skew_ptr, Size_ptr, BLOCK: tl.constexpr):
    # exp(S) of 4 x 4 matrices (smaller skew ones padded with zeros) by the closed form of the skew part K
    # = (S - S^T)/2: (cos t+ I + sinc t+ K+)(cos t- I + sinc t- K-) with K+- = (K +- *K)/2 and t+-^2 =
    # -Tr(K+-^2)/4, with the largest entries of S + S^T and of S (the caller's skew check).
    # from: K = (1/2)*S - (1/2)*S.T
    # from: H = Hodge4(K)
    # from: Sp = (1/2)*H + (1/2)*K
    # from: Sm = -(1/2)*H + (1/2)*K
    # from: Sp2 = Sp**2
    # from: Sm2 = Sm**2
    # from: Ep = cos(sqrt(-Trace(Sp2))/2)*I + sinc(sqrt(-Trace(Sp2))/2)*Sp
    # from: Em = cos(sqrt(-Trace(Sm2))/2)*I + sinc(sqrt(-Trace(Sm2))/2)*Sm
    # from: E = Ep*Em
    # from: Skew = S + S.T
    # from: Size = S
    # verified by: exp_skew.hodge_form
    _b = (tl.program_id(0)*BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
    _live = _b < B
    _one = tl.full((BLOCK,), 1.0, tl.float64)
    S_0_0 = tl.load(S_ptr + _b*16 + 0, mask=_live, other=0.0).to(tl.float64)
    S_0_1 = tl.load(S_ptr + _b*16 + 1, mask=_live, other=0.0).to(tl.float64)
    S_0_2 = tl.load(S_ptr + _b*16 + 2, mask=_live, other=0.0).to(tl.float64)
    S_0_3 = tl.load(S_ptr + _b*16 + 3, mask=_live, other=0.0).to(tl.float64)
    S_1_0 = tl.load(S_ptr + _b*16 + 4, mask=_live, other=0.0).to(tl.float64)
    S_1_1 = tl.load(S_ptr + _b*16 + 5, mask=_live, other=0.0).to(tl.float64)
    S_1_2 = tl.load(S_ptr + _b*16 + 6, mask=_live, other=0.0).to(tl.float64)
    S_1_3 = tl.load(S_ptr + _b*16 + 7, mask=_live, other=0.0).to(tl.float64)
    S_2_0 = tl.load(S_ptr + _b*16 + 8, mask=_live, other=0.0).to(tl.float64)
    S_2_1 = tl.load(S_ptr + _b*16 + 9, mask=_live, other=0.0).to(tl.float64)
    S_2_2 = tl.load(S_ptr + _b*16 + 10, mask=_live, other=0.0).to(tl.float64)
    S_2_3 = tl.load(S_ptr + _b*16 + 11, mask=_live, other=0.0).to(tl.float64)
    S_3_0 = tl.load(S_ptr + _b*16 + 12, mask=_live, other=0.0).to(tl.float64)
    S_3_1 = tl.load(S_ptr + _b*16 + 13, mask=_live, other=0.0).to(tl.float64)
    S_3_2 = tl.load(S_ptr + _b*16 + 14, mask=_live, other=0.0).to(tl.float64)
    S_3_3 = tl.load(S_ptr + _b*16 + 15, mask=_live, other=0.0).to(tl.float64)
    sK_0 = ((1.0/2.0))*S_0_1 - (1.0/2.0)*S_1_0
    sK_1 = ((1.0/2.0))*S_0_2 - (1.0/2.0)*S_2_0
    sK_2 = ((1.0/2.0))*S_0_3 - (1.0/2.0)*S_3_0
    sK_3 = ((1.0/2.0))*S_1_2 - (1.0/2.0)*S_2_1
    sK_4 = ((1.0/2.0))*S_1_3 - (1.0/2.0)*S_3_1
    sK_5 = ((1.0/2.0))*S_2_3 - (1.0/2.0)*S_3_2
    K_0_1 = sK_0
    K_0_2 = sK_1
    K_0_3 = sK_2
    K_1_0 = -sK_0
    K_1_2 = sK_3
    K_1_3 = sK_4
    K_2_0 = -sK_1
    K_2_1 = -sK_3
    K_2_3 = sK_5
    K_3_0 = -sK_2
    K_3_1 = -sK_4
    K_3_2 = -sK_5
    sH_0 = ((1.0/2.0))*K_2_3 - (1.0/2.0)*K_3_2
    sH_1 = ((1.0/2.0))*K_1_3 - (1.0/2.0)*K_3_1
    sH_2 = ((1.0/2.0))*K_1_2 - (1.0/2.0)*K_2_1
    sH_3 = ((1.0/2.0))*K_0_3 - (1.0/2.0)*K_3_0
    sH_4 = ((1.0/2.0))*K_0_2 - (1.0/2.0)*K_2_0
    sH_5 = ((1.0/2.0))*K_0_1 - (1.0/2.0)*K_1_0
    H_0_1 = sH_0
    H_0_2 = -sH_1
    H_0_3 = sH_2
    H_1_0 = -sH_0
    H_1_2 = sH_3
    H_1_3 = -sH_4
    H_2_0 = sH_1
    H_2_1 = -sH_3
    H_2_3 = sH_5
    H_3_0 = -sH_2
    H_3_1 = sH_4
    H_3_2 = -sH_5
    Sp_0_1 = ((1.0/2.0))*H_0_1 + ((1.0/2.0))*K_0_1
    Sp_0_2 = ((1.0/2.0))*H_0_2 + ((1.0/2.0))*K_0_2
    Sp_0_3 = ((1.0/2.0))*H_0_3 + ((1.0/2.0))*K_0_3
    Sp_1_0 = ((1.0/2.0))*H_1_0 + ((1.0/2.0))*K_1_0
    Sp_1_2 = ((1.0/2.0))*H_1_2 + ((1.0/2.0))*K_1_2
    Sp_1_3 = ((1.0/2.0))*H_1_3 + ((1.0/2.0))*K_1_3
    Sp_2_0 = ((1.0/2.0))*H_2_0 + ((1.0/2.0))*K_2_0
    Sp_2_1 = ((1.0/2.0))*H_2_1 + ((1.0/2.0))*K_2_1
    Sp_2_3 = ((1.0/2.0))*H_2_3 + ((1.0/2.0))*K_2_3
    Sp_3_0 = ((1.0/2.0))*H_3_0 + ((1.0/2.0))*K_3_0
    Sp_3_1 = ((1.0/2.0))*H_3_1 + ((1.0/2.0))*K_3_1
    Sp_3_2 = ((1.0/2.0))*H_3_2 + ((1.0/2.0))*K_3_2
    Sm_0_1 = -(1.0/2.0)*H_0_1 + ((1.0/2.0))*K_0_1
    Sm_0_2 = -(1.0/2.0)*H_0_2 + ((1.0/2.0))*K_0_2
    Sm_0_3 = -(1.0/2.0)*H_0_3 + ((1.0/2.0))*K_0_3
    Sm_1_0 = -(1.0/2.0)*H_1_0 + ((1.0/2.0))*K_1_0
    Sm_1_2 = -(1.0/2.0)*H_1_2 + ((1.0/2.0))*K_1_2
    Sm_1_3 = -(1.0/2.0)*H_1_3 + ((1.0/2.0))*K_1_3
    Sm_2_0 = -(1.0/2.0)*H_2_0 + ((1.0/2.0))*K_2_0
    Sm_2_1 = -(1.0/2.0)*H_2_1 + ((1.0/2.0))*K_2_1
    Sm_2_3 = -(1.0/2.0)*H_2_3 + ((1.0/2.0))*K_2_3
    Sm_3_0 = -(1.0/2.0)*H_3_0 + ((1.0/2.0))*K_3_0
    Sm_3_1 = -(1.0/2.0)*H_3_1 + ((1.0/2.0))*K_3_1
    Sm_3_2 = -(1.0/2.0)*H_3_2 + ((1.0/2.0))*K_3_2
    sSp2_0 = Sp_0_1*Sp_1_0
    sSp2_1 = Sp_0_2*Sp_2_0
    sSp2_2 = Sp_0_3*Sp_3_0
    sSp2_3 = Sp_1_2*Sp_2_1
    sSp2_4 = Sp_1_3*Sp_3_1
    sSp2_5 = Sp_2_3*Sp_3_2
    Sp2_0_0 = sSp2_0 + sSp2_1 + sSp2_2
    Sp2_0_1 = Sp_0_2*Sp_2_1 + Sp_0_3*Sp_3_1
    Sp2_0_2 = Sp_0_1*Sp_1_2 + Sp_0_3*Sp_3_2
    Sp2_0_3 = Sp_0_1*Sp_1_3 + Sp_0_2*Sp_2_3
    Sp2_1_0 = Sp_1_2*Sp_2_0 + Sp_1_3*Sp_3_0
    Sp2_1_1 = sSp2_0 + sSp2_3 + sSp2_4
    Sp2_1_2 = Sp_0_2*Sp_1_0 + Sp_1_3*Sp_3_2
    Sp2_1_3 = Sp_0_3*Sp_1_0 + Sp_1_2*Sp_2_3
    Sp2_2_0 = Sp_1_0*Sp_2_1 + Sp_2_3*Sp_3_0
    Sp2_2_1 = Sp_0_1*Sp_2_0 + Sp_2_3*Sp_3_1
    Sp2_2_2 = sSp2_1 + sSp2_3 + sSp2_5
    Sp2_2_3 = Sp_0_3*Sp_2_0 + Sp_1_3*Sp_2_1
    Sp2_3_0 = Sp_1_0*Sp_3_1 + Sp_2_0*Sp_3_2
    Sp2_3_1 = Sp_0_1*Sp_3_0 + Sp_2_1*Sp_3_2
    Sp2_3_2 = Sp_0_2*Sp_3_0 + Sp_1_2*Sp_3_1
    Sp2_3_3 = sSp2_2 + sSp2_4 + sSp2_5
    sSm2_0 = Sm_0_1*Sm_1_0
    sSm2_1 = Sm_0_2*Sm_2_0
    sSm2_2 = Sm_0_3*Sm_3_0
    sSm2_3 = Sm_1_2*Sm_2_1
    sSm2_4 = Sm_1_3*Sm_3_1
    sSm2_5 = Sm_2_3*Sm_3_2
    Sm2_0_0 = sSm2_0 + sSm2_1 + sSm2_2
    Sm2_0_1 = Sm_0_2*Sm_2_1 + Sm_0_3*Sm_3_1
    Sm2_0_2 = Sm_0_1*Sm_1_2 + Sm_0_3*Sm_3_2
    Sm2_0_3 = Sm_0_1*Sm_1_3 + Sm_0_2*Sm_2_3
    Sm2_1_0 = Sm_1_2*Sm_2_0 + Sm_1_3*Sm_3_0
    Sm2_1_1 = sSm2_0 + sSm2_3 + sSm2_4
    Sm2_1_2 = Sm_0_2*Sm_1_0 + Sm_1_3*Sm_3_2
    Sm2_1_3 = Sm_0_3*Sm_1_0 + Sm_1_2*Sm_2_3
    Sm2_2_0 = Sm_1_0*Sm_2_1 + Sm_2_3*Sm_3_0
    Sm2_2_1 = Sm_0_1*Sm_2_0 + Sm_2_3*Sm_3_1
    Sm2_2_2 = sSm2_1 + sSm2_3 + sSm2_5
    Sm2_2_3 = Sm_0_3*Sm_2_0 + Sm_1_3*Sm_2_1
    Sm2_3_0 = Sm_1_0*Sm_3_1 + Sm_2_0*Sm_3_2
    Sm2_3_1 = Sm_0_1*Sm_3_0 + Sm_2_1*Sm_3_2
    Sm2_3_2 = Sm_0_2*Sm_3_0 + Sm_1_2*Sm_3_1
    Sm2_3_3 = sSm2_2 + sSm2_4 + sSm2_5
    sEp_0 = ((1.0/2.0))*tl.sqrt(-Sp2_0_0 - Sp2_1_1 - Sp2_2_2 - Sp2_3_3)
    sEp_1 = tl.where(sEp_0 == 0.0, 1.0, tl.sin(sEp_0)/tl.where(sEp_0 == 0.0, 1.0, sEp_0))
    Ep_0_0 = tl.cos(sEp_0)
    Ep_0_1 = Sp_0_1*sEp_1
    Ep_0_2 = Sp_0_2*sEp_1
    Ep_0_3 = Sp_0_3*sEp_1
    Ep_1_0 = Sp_1_0*sEp_1
    Ep_1_2 = Sp_1_2*sEp_1
    Ep_1_3 = Sp_1_3*sEp_1
    Ep_2_0 = Sp_2_0*sEp_1
    Ep_2_1 = Sp_2_1*sEp_1
    Ep_2_3 = Sp_2_3*sEp_1
    Ep_3_0 = Sp_3_0*sEp_1
    Ep_3_1 = Sp_3_1*sEp_1
    Ep_3_2 = Sp_3_2*sEp_1
    sEm_0 = ((1.0/2.0))*tl.sqrt(-Sm2_0_0 - Sm2_1_1 - Sm2_2_2 - Sm2_3_3)
    sEm_1 = tl.where(sEm_0 == 0.0, 1.0, tl.sin(sEm_0)/tl.where(sEm_0 == 0.0, 1.0, sEm_0))
    Em_0_0 = tl.cos(sEm_0)
    Em_0_1 = Sm_0_1*sEm_1
    Em_0_2 = Sm_0_2*sEm_1
    Em_0_3 = Sm_0_3*sEm_1
    Em_1_0 = Sm_1_0*sEm_1
    Em_1_2 = Sm_1_2*sEm_1
    Em_1_3 = Sm_1_3*sEm_1
    Em_2_0 = Sm_2_0*sEm_1
    Em_2_1 = Sm_2_1*sEm_1
    Em_2_3 = Sm_2_3*sEm_1
    Em_3_0 = Sm_3_0*sEm_1
    Em_3_1 = Sm_3_1*sEm_1
    Em_3_2 = Sm_3_2*sEm_1
    sE_0 = Em_0_0*Ep_0_0
    E_0_0 = Em_1_0*Ep_0_1 + Em_2_0*Ep_0_2 + Em_3_0*Ep_0_3 + sE_0
    E_0_1 = Em_0_0*Ep_0_1 + Em_0_1*Ep_0_0 + Em_2_1*Ep_0_2 + Em_3_1*Ep_0_3
    E_0_2 = Em_0_0*Ep_0_2 + Em_0_2*Ep_0_0 + Em_1_2*Ep_0_1 + Em_3_2*Ep_0_3
    E_0_3 = Em_0_0*Ep_0_3 + Em_0_3*Ep_0_0 + Em_1_3*Ep_0_1 + Em_2_3*Ep_0_2
    E_1_0 = Em_0_0*Ep_1_0 + Em_1_0*Ep_0_0 + Em_2_0*Ep_1_2 + Em_3_0*Ep_1_3
    E_1_1 = Em_0_1*Ep_1_0 + Em_2_1*Ep_1_2 + Em_3_1*Ep_1_3 + sE_0
    E_1_2 = Em_0_0*Ep_1_2 + Em_0_2*Ep_1_0 + Em_1_2*Ep_0_0 + Em_3_2*Ep_1_3
    E_1_3 = Em_0_0*Ep_1_3 + Em_0_3*Ep_1_0 + Em_1_3*Ep_0_0 + Em_2_3*Ep_1_2
    E_2_0 = Em_0_0*Ep_2_0 + Em_1_0*Ep_2_1 + Em_2_0*Ep_0_0 + Em_3_0*Ep_2_3
    E_2_1 = Em_0_0*Ep_2_1 + Em_0_1*Ep_2_0 + Em_2_1*Ep_0_0 + Em_3_1*Ep_2_3
    E_2_2 = Em_0_2*Ep_2_0 + Em_1_2*Ep_2_1 + Em_3_2*Ep_2_3 + sE_0
    E_2_3 = Em_0_0*Ep_2_3 + Em_0_3*Ep_2_0 + Em_1_3*Ep_2_1 + Em_2_3*Ep_0_0
    E_3_0 = Em_0_0*Ep_3_0 + Em_1_0*Ep_3_1 + Em_2_0*Ep_3_2 + Em_3_0*Ep_0_0
    E_3_1 = Em_0_0*Ep_3_1 + Em_0_1*Ep_3_0 + Em_2_1*Ep_3_2 + Em_3_1*Ep_0_0
    E_3_2 = Em_0_0*Ep_3_2 + Em_0_2*Ep_3_0 + Em_1_2*Ep_3_1 + Em_3_2*Ep_0_0
    E_3_3 = Em_0_3*Ep_3_0 + Em_1_3*Ep_3_1 + Em_2_3*Ep_3_2 + sE_0
    Skew_0_0 = 2.0*S_0_0
    Skew_0_1 = S_0_1 + S_1_0
    Skew_0_2 = S_0_2 + S_2_0
    Skew_0_3 = S_0_3 + S_3_0
    Skew_1_1 = 2.0*S_1_1
    Skew_1_2 = S_1_2 + S_2_1
    Skew_1_3 = S_1_3 + S_3_1
    Skew_2_2 = 2.0*S_2_2
    Skew_2_3 = S_2_3 + S_3_2
    Skew_3_3 = 2.0*S_3_3
    Size_0_0 = S_0_0
    Size_0_1 = S_0_1
    Size_0_2 = S_0_2
    Size_0_3 = S_0_3
    Size_1_0 = S_1_0
    Size_1_1 = S_1_1
    Size_1_2 = S_1_2
    Size_1_3 = S_1_3
    Size_2_0 = S_2_0
    Size_2_1 = S_2_1
    Size_2_2 = S_2_2
    Size_2_3 = S_2_3
    Size_3_0 = S_3_0
    Size_3_1 = S_3_1
    Size_3_2 = S_3_2
    Size_3_3 = S_3_3
    tl.store(E_ptr + _b*16 + 0, E_0_0.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 1, E_0_1.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 2, E_0_2.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 3, E_0_3.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 4, E_1_0.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 5, E_1_1.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 6, E_1_2.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 7, E_1_3.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 8, E_2_0.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 9, E_2_1.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 10, E_2_2.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 11, E_2_3.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 12, E_3_0.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 13, E_3_1.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 14, E_3_2.to(E_ptr.dtype.element_ty), mask=_live)
    tl.store(E_ptr + _b*16 + 15, E_3_3.to(E_ptr.dtype.element_ty), mask=_live)
    _m = _one*0.0
    _a = tl.abs(Skew_0_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_0_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_0_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_0_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_1_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_1_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_1_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_2_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_2_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Skew_3_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    tl.store(Skew_ptr + _b, _m, mask=_live)
    _m = _one*0.0
    _a = tl.abs(Size_0_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_0_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_0_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_0_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_1_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_1_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_1_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_1_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_2_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_2_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_2_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_2_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_3_0)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_3_1)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_3_2)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    _a = tl.abs(Size_3_3)
    _m = tl.where((_a > _m) | (_a != _a), _a, _m)
    tl.store(Size_ptr + _b, _m, mask=_live)
