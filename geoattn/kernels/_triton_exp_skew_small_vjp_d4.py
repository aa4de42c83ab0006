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
  exp_skew_small_vjp: K = (1/2)*S - (1/2)*S.T; H = Hodge4(K); Sp = (1/2)*H + (1/2)*K; Sm = -(1/2)*H + (1/2)*K; Sp2 = Sp**2; Sm2 = Sm**2; Ep = cos(sqrt(-Trace(Sp2))/2)*I + sinc(sqrt(-Trace(Sp2))/2)*Sp; Em = cos(sqrt(-Trace(Sm2))/2)*I + sinc(sqrt(-Trace(Sm2))/2)*Sm; Gp = G*Em.T; Gm = Ep.T*G; Xp = (-Piecewise((-(((((Trace(Sp2)/720 + 1)*Trace(Sp2)/520 + 1)*Trace(Sp2)/352 + 1)*Trace(Sp2)/216 + 1)*Trace(Sp2)/112 + 1)*Trace(Sp2)/120 - 1/3, Trace(Sp2) > -1), (-4*(cos(sqrt(-Trace(Sp2))/2) - sinc(sqrt(-Trace(Sp2))/2))/Trace(Sp2), True))*Trace(Gp.T*Sp)/4 + sinc(sqrt(-Trace(Sp2))/2)*Trace(Gp)/4)*Sp.T + sinc(sqrt(-Trace(Sp2))/2)*Gp; Xm = (-Piecewise((-(((((Trace(Sm2)/720 + 1)*Trace(Sm2)/520 + 1)*Trace(Sm2)/352 + 1)*Trace(Sm2)/216 + 1)*Trace(Sm2)/112 + 1)*Trace(Sm2)/120 - 1/3, Trace(Sm2) > -1), (-4*(cos(sqrt(-Trace(Sm2))/2) - sinc(sqrt(-Trace(Sm2))/2))/Trace(Sm2), True))*Trace(Gm.T*Sm)/4 + sinc(sqrt(-Trace(Sm2))/2)*Trace(Gm)/4)*Sm.T + sinc(sqrt(-Trace(Sm2))/2)*Gm; Kb = (1/2)*Hodge4(-Xm + Xp) + (1/2)*Xm + (1/2)*Xp; gS = (1/2)*Kb - (1/2)*Kb.T  [exp_skew.hodge_vjp, exp_skew.hodge_vjp_series]
"""

import triton
import triton.language as tl

__all__ = ["exp_skew_small_vjp_d4"]


@triton.jit
def exp_skew_small_vjp_d4(B, T, S_ptr, G_ptr, gS_ptr, BLOCK: tl.constexpr):
    # The gradient of <G, exp(K)> in S for 4 x 4 S, K = (S - S^T)/2 (the skew projection): per half-turn
    # Xb = sinc t Gb + (sinc t Tr(Gb)/4 - q(t^2) <Gb, X>/4) X^T, q(w) = (cos t - sinc t)/w or its series
    # below w = 1/4, Gb+ = G E-^T, Gb- = E+^T G, Kb = (Xb+ + Xb-)/2 + *(Xb+ - Xb-)/2, gS = (Kb - Kb^T)/2.
    # from: K = (1/2)*S - (1/2)*S.T
    # from: H = Hodge4(K)
    # from: Sp = (1/2)*H + (1/2)*K
    # from: Sm = -(1/2)*H + (1/2)*K
    # from: Sp2 = Sp**2
    # from: Sm2 = Sm**2
    # from: Ep = cos(sqrt(-Trace(Sp2))/2)*I + sinc(sqrt(-Trace(Sp2))/2)*Sp
    # from: Em = cos(sqrt(-Trace(Sm2))/2)*I + sinc(sqrt(-Trace(Sm2))/2)*Sm
    # from: Gp = G*Em.T
    # from: Gm = Ep.T*G
    # from: Xp = (-Piecewise((-(((((Trace(Sp2)/720 + 1)*Trace(Sp2)/520 + 1)*Trace(Sp2)/352 + 1)*Trace(Sp2)/216 + 1)*Trace(Sp2)/112 + 1)*Trace(Sp2)/120 - 1/3, Trace(Sp2) > -1), (-4*(cos(sqrt(-Trace(Sp2))/2) - sinc(sqrt(-Trace(Sp2))/2))/Trace(Sp2), True))*Trace(Gp.T*Sp)/4 + sinc(sqrt(-Trace(Sp2))/2)*Trace(Gp)/4)*Sp.T + sinc(sqrt(-Trace(Sp2))/2)*Gp
    # from: Xm = (-Piecewise((-(((((Trace(Sm2)/720 + 1)*Trace(Sm2)/520 + 1)*Trace(Sm2)/352 + 1)*Trace(Sm2)/216 + 1)*Trace(Sm2)/112 + 1)*Trace(Sm2)/120 - 1/3, Trace(Sm2) > -1), (-4*(cos(sqrt(-Trace(Sm2))/2) - sinc(sqrt(-Trace(Sm2))/2))/Trace(Sm2), True))*Trace(Gm.T*Sm)/4 + sinc(sqrt(-Trace(Sm2))/2)*Trace(Gm)/4)*Sm.T + sinc(sqrt(-Trace(Sm2))/2)*Gm
    # from: Kb = (1/2)*Hodge4(-Xm + Xp) + (1/2)*Xm + (1/2)*Xp
    # from: gS = (1/2)*Kb - (1/2)*Kb.T
    # verified by: exp_skew.hodge_vjp, exp_skew.hodge_vjp_series
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
    G_0_0 = tl.load(G_ptr + _b*16 + 0, mask=_live, other=0.0).to(tl.float64)
    G_0_1 = tl.load(G_ptr + _b*16 + 1, mask=_live, other=0.0).to(tl.float64)
    G_0_2 = tl.load(G_ptr + _b*16 + 2, mask=_live, other=0.0).to(tl.float64)
    G_0_3 = tl.load(G_ptr + _b*16 + 3, mask=_live, other=0.0).to(tl.float64)
    G_1_0 = tl.load(G_ptr + _b*16 + 4, mask=_live, other=0.0).to(tl.float64)
    G_1_1 = tl.load(G_ptr + _b*16 + 5, mask=_live, other=0.0).to(tl.float64)
    G_1_2 = tl.load(G_ptr + _b*16 + 6, mask=_live, other=0.0).to(tl.float64)
    G_1_3 = tl.load(G_ptr + _b*16 + 7, mask=_live, other=0.0).to(tl.float64)
    G_2_0 = tl.load(G_ptr + _b*16 + 8, mask=_live, other=0.0).to(tl.float64)
    G_2_1 = tl.load(G_ptr + _b*16 + 9, mask=_live, other=0.0).to(tl.float64)
    G_2_2 = tl.load(G_ptr + _b*16 + 10, mask=_live, other=0.0).to(tl.float64)
    G_2_3 = tl.load(G_ptr + _b*16 + 11, mask=_live, other=0.0).to(tl.float64)
    G_3_0 = tl.load(G_ptr + _b*16 + 12, mask=_live, other=0.0).to(tl.float64)
    G_3_1 = tl.load(G_ptr + _b*16 + 13, mask=_live, other=0.0).to(tl.float64)
    G_3_2 = tl.load(G_ptr + _b*16 + 14, mask=_live, other=0.0).to(tl.float64)
    G_3_3 = tl.load(G_ptr + _b*16 + 15, mask=_live, other=0.0).to(tl.float64)
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
    Gp_0_0 = Em_0_0*G_0_0 + Em_0_1*G_0_1 + Em_0_2*G_0_2 + Em_0_3*G_0_3
    Gp_0_1 = Em_0_0*G_0_1 + Em_1_0*G_0_0 + Em_1_2*G_0_2 + Em_1_3*G_0_3
    Gp_0_2 = Em_0_0*G_0_2 + Em_2_0*G_0_0 + Em_2_1*G_0_1 + Em_2_3*G_0_3
    Gp_0_3 = Em_0_0*G_0_3 + Em_3_0*G_0_0 + Em_3_1*G_0_1 + Em_3_2*G_0_2
    Gp_1_0 = Em_0_0*G_1_0 + Em_0_1*G_1_1 + Em_0_2*G_1_2 + Em_0_3*G_1_3
    Gp_1_1 = Em_0_0*G_1_1 + Em_1_0*G_1_0 + Em_1_2*G_1_2 + Em_1_3*G_1_3
    Gp_1_2 = Em_0_0*G_1_2 + Em_2_0*G_1_0 + Em_2_1*G_1_1 + Em_2_3*G_1_3
    Gp_1_3 = Em_0_0*G_1_3 + Em_3_0*G_1_0 + Em_3_1*G_1_1 + Em_3_2*G_1_2
    Gp_2_0 = Em_0_0*G_2_0 + Em_0_1*G_2_1 + Em_0_2*G_2_2 + Em_0_3*G_2_3
    Gp_2_1 = Em_0_0*G_2_1 + Em_1_0*G_2_0 + Em_1_2*G_2_2 + Em_1_3*G_2_3
    Gp_2_2 = Em_0_0*G_2_2 + Em_2_0*G_2_0 + Em_2_1*G_2_1 + Em_2_3*G_2_3
    Gp_2_3 = Em_0_0*G_2_3 + Em_3_0*G_2_0 + Em_3_1*G_2_1 + Em_3_2*G_2_2
    Gp_3_0 = Em_0_0*G_3_0 + Em_0_1*G_3_1 + Em_0_2*G_3_2 + Em_0_3*G_3_3
    Gp_3_1 = Em_0_0*G_3_1 + Em_1_0*G_3_0 + Em_1_2*G_3_2 + Em_1_3*G_3_3
    Gp_3_2 = Em_0_0*G_3_2 + Em_2_0*G_3_0 + Em_2_1*G_3_1 + Em_2_3*G_3_3
    Gp_3_3 = Em_0_0*G_3_3 + Em_3_0*G_3_0 + Em_3_1*G_3_1 + Em_3_2*G_3_2
    Gm_0_0 = Ep_0_0*G_0_0 + Ep_1_0*G_1_0 + Ep_2_0*G_2_0 + Ep_3_0*G_3_0
    Gm_0_1 = Ep_0_0*G_0_1 + Ep_1_0*G_1_1 + Ep_2_0*G_2_1 + Ep_3_0*G_3_1
    Gm_0_2 = Ep_0_0*G_0_2 + Ep_1_0*G_1_2 + Ep_2_0*G_2_2 + Ep_3_0*G_3_2
    Gm_0_3 = Ep_0_0*G_0_3 + Ep_1_0*G_1_3 + Ep_2_0*G_2_3 + Ep_3_0*G_3_3
    Gm_1_0 = Ep_0_0*G_1_0 + Ep_0_1*G_0_0 + Ep_2_1*G_2_0 + Ep_3_1*G_3_0
    Gm_1_1 = Ep_0_0*G_1_1 + Ep_0_1*G_0_1 + Ep_2_1*G_2_1 + Ep_3_1*G_3_1
    Gm_1_2 = Ep_0_0*G_1_2 + Ep_0_1*G_0_2 + Ep_2_1*G_2_2 + Ep_3_1*G_3_2
    Gm_1_3 = Ep_0_0*G_1_3 + Ep_0_1*G_0_3 + Ep_2_1*G_2_3 + Ep_3_1*G_3_3
    Gm_2_0 = Ep_0_0*G_2_0 + Ep_0_2*G_0_0 + Ep_1_2*G_1_0 + Ep_3_2*G_3_0
    Gm_2_1 = Ep_0_0*G_2_1 + Ep_0_2*G_0_1 + Ep_1_2*G_1_1 + Ep_3_2*G_3_1
    Gm_2_2 = Ep_0_0*G_2_2 + Ep_0_2*G_0_2 + Ep_1_2*G_1_2 + Ep_3_2*G_3_2
    Gm_2_3 = Ep_0_0*G_2_3 + Ep_0_2*G_0_3 + Ep_1_2*G_1_3 + Ep_3_2*G_3_3
    Gm_3_0 = Ep_0_0*G_3_0 + Ep_0_3*G_0_0 + Ep_1_3*G_1_0 + Ep_2_3*G_2_0
    Gm_3_1 = Ep_0_0*G_3_1 + Ep_0_3*G_0_1 + Ep_1_3*G_1_1 + Ep_2_3*G_2_1
    Gm_3_2 = Ep_0_0*G_3_2 + Ep_0_3*G_0_2 + Ep_1_3*G_1_2 + Ep_2_3*G_2_2
    Gm_3_3 = Ep_0_0*G_3_3 + Ep_0_3*G_0_3 + Ep_1_3*G_1_3 + Ep_2_3*G_2_3
    sXp_0 = Sp2_0_0 + Sp2_1_1 + Sp2_2_2 + Sp2_3_3
    sXp_1 = ((1.0/2.0))*tl.sqrt(-sXp_0)
    sXp_2 = tl.where(sXp_1 == 0.0, 1.0, tl.sin(sXp_1)/tl.where(sXp_1 == 0.0, 1.0, sXp_1))
    sXp_3 = ((1.0/4.0))*sXp_2*(Gp_0_0 + Gp_1_1 + Gp_2_2 + Gp_3_3) - (1.0/4.0)*(Gp_0_1*Sp_0_1 + Gp_0_2*Sp_0_2 + Gp_0_3*Sp_0_3 + Gp_1_0*Sp_1_0 + Gp_1_2*Sp_1_2 + Gp_1_3*Sp_1_3 + Gp_2_0*Sp_2_0 + Gp_2_1*Sp_2_1 + Gp_2_3*Sp_2_3 + Gp_3_0*Sp_3_0 + Gp_3_1*Sp_3_1 + Gp_3_2*Sp_3_2)*tl.where((sXp_0 > -1.0), -(_one*1.0/120.0)*sXp_0*(((_one*1.0/112.0))*sXp_0*(((_one*1.0/216.0))*sXp_0*(((_one*1.0/352.0))*sXp_0*(((_one*1.0/520.0))*sXp_0*(((_one*1.0/720.0))*Sp2_0_0 + ((_one*1.0/720.0))*Sp2_1_1 + ((_one*1.0/720.0))*Sp2_2_2 + ((_one*1.0/720.0))*Sp2_3_3 + 1.0) + 1.0) + 1.0) + 1.0) + 1.0) + (_one*-1.0/3.0), -4.0*(-sXp_2 + tl.cos(sXp_1))/sXp_0)
    Xp_0_0 = Gp_0_0*sXp_2
    Xp_0_1 = Gp_0_1*sXp_2 + Sp_1_0*sXp_3
    Xp_0_2 = Gp_0_2*sXp_2 + Sp_2_0*sXp_3
    Xp_0_3 = Gp_0_3*sXp_2 + Sp_3_0*sXp_3
    Xp_1_0 = Gp_1_0*sXp_2 + Sp_0_1*sXp_3
    Xp_1_1 = Gp_1_1*sXp_2
    Xp_1_2 = Gp_1_2*sXp_2 + Sp_2_1*sXp_3
    Xp_1_3 = Gp_1_3*sXp_2 + Sp_3_1*sXp_3
    Xp_2_0 = Gp_2_0*sXp_2 + Sp_0_2*sXp_3
    Xp_2_1 = Gp_2_1*sXp_2 + Sp_1_2*sXp_3
    Xp_2_2 = Gp_2_2*sXp_2
    Xp_2_3 = Gp_2_3*sXp_2 + Sp_3_2*sXp_3
    Xp_3_0 = Gp_3_0*sXp_2 + Sp_0_3*sXp_3
    Xp_3_1 = Gp_3_1*sXp_2 + Sp_1_3*sXp_3
    Xp_3_2 = Gp_3_2*sXp_2 + Sp_2_3*sXp_3
    Xp_3_3 = Gp_3_3*sXp_2
    sXm_0 = Sm2_0_0 + Sm2_1_1 + Sm2_2_2 + Sm2_3_3
    sXm_1 = ((1.0/2.0))*tl.sqrt(-sXm_0)
    sXm_2 = tl.where(sXm_1 == 0.0, 1.0, tl.sin(sXm_1)/tl.where(sXm_1 == 0.0, 1.0, sXm_1))
    sXm_3 = ((1.0/4.0))*sXm_2*(Gm_0_0 + Gm_1_1 + Gm_2_2 + Gm_3_3) - (1.0/4.0)*(Gm_0_1*Sm_0_1 + Gm_0_2*Sm_0_2 + Gm_0_3*Sm_0_3 + Gm_1_0*Sm_1_0 + Gm_1_2*Sm_1_2 + Gm_1_3*Sm_1_3 + Gm_2_0*Sm_2_0 + Gm_2_1*Sm_2_1 + Gm_2_3*Sm_2_3 + Gm_3_0*Sm_3_0 + Gm_3_1*Sm_3_1 + Gm_3_2*Sm_3_2)*tl.where((sXm_0 > -1.0), -(_one*1.0/120.0)*sXm_0*(((_one*1.0/112.0))*sXm_0*(((_one*1.0/216.0))*sXm_0*(((_one*1.0/352.0))*sXm_0*(((_one*1.0/520.0))*sXm_0*(((_one*1.0/720.0))*Sm2_0_0 + ((_one*1.0/720.0))*Sm2_1_1 + ((_one*1.0/720.0))*Sm2_2_2 + ((_one*1.0/720.0))*Sm2_3_3 + 1.0) + 1.0) + 1.0) + 1.0) + 1.0) + (_one*-1.0/3.0), -4.0*(-sXm_2 + tl.cos(sXm_1))/sXm_0)
    Xm_0_0 = Gm_0_0*sXm_2
    Xm_0_1 = Gm_0_1*sXm_2 + Sm_1_0*sXm_3
    Xm_0_2 = Gm_0_2*sXm_2 + Sm_2_0*sXm_3
    Xm_0_3 = Gm_0_3*sXm_2 + Sm_3_0*sXm_3
    Xm_1_0 = Gm_1_0*sXm_2 + Sm_0_1*sXm_3
    Xm_1_1 = Gm_1_1*sXm_2
    Xm_1_2 = Gm_1_2*sXm_2 + Sm_2_1*sXm_3
    Xm_1_3 = Gm_1_3*sXm_2 + Sm_3_1*sXm_3
    Xm_2_0 = Gm_2_0*sXm_2 + Sm_0_2*sXm_3
    Xm_2_1 = Gm_2_1*sXm_2 + Sm_1_2*sXm_3
    Xm_2_2 = Gm_2_2*sXm_2
    Xm_2_3 = Gm_2_3*sXm_2 + Sm_3_2*sXm_3
    Xm_3_0 = Gm_3_0*sXm_2 + Sm_0_3*sXm_3
    Xm_3_1 = Gm_3_1*sXm_2 + Sm_1_3*sXm_3
    Xm_3_2 = Gm_3_2*sXm_2 + Sm_2_3*sXm_3
    Xm_3_3 = Gm_3_3*sXm_2
    sKb_0 = ((1.0/4.0))*Xm_2_3
    sKb_1 = ((1.0/4.0))*Xm_3_2
    sKb_2 = ((1.0/4.0))*Xp_2_3
    sKb_3 = ((1.0/4.0))*Xp_3_2
    sKb_4 = ((1.0/4.0))*Xm_1_3
    sKb_5 = ((1.0/4.0))*Xm_3_1
    sKb_6 = ((1.0/4.0))*Xp_1_3
    sKb_7 = ((1.0/4.0))*Xp_3_1
    sKb_8 = ((1.0/4.0))*Xm_1_2
    sKb_9 = ((1.0/4.0))*Xm_2_1
    sKb_10 = ((1.0/4.0))*Xp_1_2
    sKb_11 = ((1.0/4.0))*Xp_2_1
    sKb_12 = ((1.0/4.0))*Xm_0_3
    sKb_13 = ((1.0/4.0))*Xm_3_0
    sKb_14 = ((1.0/4.0))*Xp_0_3
    sKb_15 = ((1.0/4.0))*Xp_3_0
    sKb_16 = ((1.0/4.0))*Xm_0_2
    sKb_17 = ((1.0/4.0))*Xm_2_0
    sKb_18 = ((1.0/4.0))*Xp_0_2
    sKb_19 = ((1.0/4.0))*Xp_2_0
    sKb_20 = ((1.0/4.0))*Xm_0_1
    sKb_21 = ((1.0/4.0))*Xm_1_0
    sKb_22 = ((1.0/4.0))*Xp_0_1
    sKb_23 = ((1.0/4.0))*Xp_1_0
    Kb_0_0 = ((1.0/2.0))*Xm_0_0 + ((1.0/2.0))*Xp_0_0
    Kb_0_1 = ((1.0/2.0))*Xm_0_1 + ((1.0/2.0))*Xp_0_1 - sKb_0 + sKb_1 + sKb_2 - sKb_3
    Kb_0_2 = ((1.0/2.0))*Xm_0_2 + ((1.0/2.0))*Xp_0_2 + sKb_4 - sKb_5 - sKb_6 + sKb_7
    Kb_0_3 = ((1.0/2.0))*Xm_0_3 + ((1.0/2.0))*Xp_0_3 + sKb_10 - sKb_11 - sKb_8 + sKb_9
    Kb_1_0 = ((1.0/2.0))*Xm_1_0 + ((1.0/2.0))*Xp_1_0 + sKb_0 - sKb_1 - sKb_2 + sKb_3
    Kb_1_1 = ((1.0/2.0))*Xm_1_1 + ((1.0/2.0))*Xp_1_1
    Kb_1_2 = ((1.0/2.0))*Xm_1_2 + ((1.0/2.0))*Xp_1_2 - sKb_12 + sKb_13 + sKb_14 - sKb_15
    Kb_1_3 = ((1.0/2.0))*Xm_1_3 + ((1.0/2.0))*Xp_1_3 + sKb_16 - sKb_17 - sKb_18 + sKb_19
    Kb_2_0 = ((1.0/2.0))*Xm_2_0 + ((1.0/2.0))*Xp_2_0 - sKb_4 + sKb_5 + sKb_6 - sKb_7
    Kb_2_1 = ((1.0/2.0))*Xm_2_1 + ((1.0/2.0))*Xp_2_1 + sKb_12 - sKb_13 - sKb_14 + sKb_15
    Kb_2_2 = ((1.0/2.0))*Xm_2_2 + ((1.0/2.0))*Xp_2_2
    Kb_2_3 = ((1.0/2.0))*Xm_2_3 + ((1.0/2.0))*Xp_2_3 - sKb_20 + sKb_21 + sKb_22 - sKb_23
    Kb_3_0 = ((1.0/2.0))*Xm_3_0 + ((1.0/2.0))*Xp_3_0 - sKb_10 + sKb_11 + sKb_8 - sKb_9
    Kb_3_1 = ((1.0/2.0))*Xm_3_1 + ((1.0/2.0))*Xp_3_1 - sKb_16 + sKb_17 + sKb_18 - sKb_19
    Kb_3_2 = ((1.0/2.0))*Xm_3_2 + ((1.0/2.0))*Xp_3_2 + sKb_20 - sKb_21 - sKb_22 + sKb_23
    Kb_3_3 = ((1.0/2.0))*Xm_3_3 + ((1.0/2.0))*Xp_3_3
    sgS_0 = ((1.0/2.0))*Kb_0_1 - (1.0/2.0)*Kb_1_0
    sgS_1 = ((1.0/2.0))*Kb_0_2 - (1.0/2.0)*Kb_2_0
    sgS_2 = ((1.0/2.0))*Kb_0_3 - (1.0/2.0)*Kb_3_0
    sgS_3 = ((1.0/2.0))*Kb_1_2 - (1.0/2.0)*Kb_2_1
    sgS_4 = ((1.0/2.0))*Kb_1_3 - (1.0/2.0)*Kb_3_1
    sgS_5 = ((1.0/2.0))*Kb_2_3 - (1.0/2.0)*Kb_3_2
    gS_0_1 = sgS_0
    gS_0_2 = sgS_1
    gS_0_3 = sgS_2
    gS_1_0 = -sgS_0
    gS_1_2 = sgS_3
    gS_1_3 = sgS_4
    gS_2_0 = -sgS_1
    gS_2_1 = -sgS_3
    gS_2_3 = sgS_5
    gS_3_0 = -sgS_2
    gS_3_1 = -sgS_4
    gS_3_2 = -sgS_5
    tl.store(gS_ptr + _b*16 + 0, (_one*0.0).to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 1, gS_0_1.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 2, gS_0_2.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 3, gS_0_3.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 4, gS_1_0.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 5, (_one*0.0).to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 6, gS_1_2.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 7, gS_1_3.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 8, gS_2_0.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 9, gS_2_1.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 10, (_one*0.0).to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 11, gS_2_3.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 12, gS_3_0.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 13, gS_3_1.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 14, gS_3_2.to(gS_ptr.dtype.element_ty), mask=_live)
    tl.store(gS_ptr + _b*16 + 15, (_one*0.0).to(gS_ptr.dtype.element_ty), mask=_live)
