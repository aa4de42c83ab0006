"""Triton kernels of the layer y = x exp(-A x^T x) by its Gram form, 3 <= d <= 16: forward, backward.

DO NOT EDIT: this file is written by ``geoattn codegen`` (``geoattn/codegen/gram_exp_triton.py``); ``geoattn codegen
--check`` fails when it is stale. The token passes are printed from the verified bindings of
``geoattn.codegen.gram_exp_c.SPECS``; the d x d stage (scaling and squaring of the Taylor polynomial of degree 16
by Paterson-Stockmeyer with 4 powers, theta = 49/64, at most 40 squarings, its reverse mode, the structure
check) is that of Note [Triton exponential blocks] in ``geoattn.codegen.gram_exp_triton``.
Ledger: vp.exp_push_through, vp.gram_exp_vjp, vp.gram_exp_native_truncation, vp.gram_exp_native_reverse.
Imported by ``geoattn.kernels._triton`` only where ``triton`` is installed.

bindings-sha256: 2f1a917299a5abb2a65f93af93d844634810d7519674c877b7ead719c0619ee0
"""

import triton
import triton.language as tl

__all__ = ["vp_gram_exp_fwd", "vp_gram_exp_bwd"]


_add = tl.standard._sum_combine
_larger = tl.standard._elementwise_max
_smaller = tl.standard._elementwise_min


@triton.jit
def _col(X, C3, k):
    """Column k of each lane's block, (BLOCK, DP) indexed by row."""
    return tl.reduce(tl.where(C3 == k, X, 0.0), 2, _add)


@triton.jit
def _row(X, R3, k):
    """Row k of each lane's block, (BLOCK, DP) indexed by column."""
    return tl.reduce(tl.where(R3 == k, X, 0.0), 1, _add)


@triton.jit
def _mm(X, Y, R3, C3, D: tl.constexpr):
    """X Y per lane as D outer products of a column of X and a row of Y (either may be one block for all)."""
    acc = _col(X, C3, 0)[:, :, None] * _row(Y, R3, 0)[:, None, :]
    for k in range(1, D):
        acc += _col(X, C3, k)[:, :, None] * _row(Y, R3, k)[:, None, :]
    return acc


@triton.jit
def _mm_t(X, Y, C3, D: tl.constexpr):
    """X Y^T per lane as D outer products of a column of X and a column of Y."""
    acc = _col(X, C3, 0)[:, :, None] * _col(Y, C3, 0)[:, None, :]
    for k in range(1, D):
        acc += _col(X, C3, k)[:, :, None] * _col(Y, C3, k)[:, None, :]
    return acc


@triton.jit
def _maxabs(E, real):
    """The largest |entry| of each lane's block where real, NaN when one is."""
    a = tl.where(real, tl.abs(E), 0.0)
    top = tl.reduce(tl.reduce(tl.where(a != a, 0.0, a), 2, _larger), 1, _larger)
    return top + tl.reduce(tl.reduce(tl.where(a != a, a, 0.0), 2, _add), 1, _add)  # + 0, or NaN


@triton.jit
def _mm_tn(X, Y, R3, D: tl.constexpr):
    """X^T Y per lane as D outer products of a row of X and a row of Y."""
    acc = _row(X, R3, 0)[:, :, None] * _row(Y, R3, 0)[:, None, :]
    for k in range(1, D):
        acc += _row(X, R3, k)[:, :, None] * _row(Y, R3, k)[:, None, :]
    return acc


@triton.jit
def _shift(nrm, SMAX: tl.constexpr, THETA: tl.constexpr):
    """The least s <= SMAX with 2^-s nrm <= THETA and 2^-s, per lane; s = SMAX + 1 when none or nrm is not finite."""
    s = tl.full(nrm.shape, 0, tl.int32)
    c = tl.full(nrm.shape, 1.0, tl.float64)
    v = nrm
    for _k in range(0, SMAX):
        big = v > THETA
        s += big.to(tl.int32)
        v = tl.where(big, v * 0.5, v)
        c = tl.where(big, c * 0.5, c)
    return tl.where((v <= THETA) & (nrm <= 1e300), s, SMAX + 1), c



@triton.jit
def vp_gram_exp_fwd(B, T, x_ptr, A_ptr, K_ptr, y_ptr, Gram_ptr, E_ptr, R_ptr,
        D: tl.constexpr, DP: tl.constexpr, BLOCK: tl.constexpr):
    """Forward: y, and per sample Gram, E = exp(-A Gram) and
    R = max |E^T Gram E - Gram| / Tr Gram (NaN: the sample failed).
    from: Gram = x.T*x  (printed: gram_exp_c.SPECS['gram'])
    from: y = x*P  (printed: gram_exp_c.SPECS['out'])
    verified by: vp.exp_push_through, vp.gram_exp_vjp, vp.gram_exp_native_truncation, vp.gram_exp_native_reverse
    """
    _b = (tl.program_id(0)*BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
    _live = _b < B
    _r = tl.arange(0, DP)
    Rr = _r[None, :]
    R3 = _r[None, :, None]
    C3 = _r[None, None, :]
    _real = (R3 < D) & (C3 < D)
    _eye = tl.where(R3 == C3, 1.0, 0.0).to(tl.float64)
    _o2 = _b[:, None]*T*D + Rr
    _m2 = _live[:, None] & (Rr < D)
    _o3 = _b[:, None, None]*(D*D) + R3*D + C3
    _m3 = _live[:, None, None] & _real
    At3 = tl.load(A_ptr + C3*D + R3, mask=_real, other=0.0).to(tl.float64)
    SMAXC = 40
    A3 = tl.load(A_ptr + R3*D + C3, mask=_real, other=0.0).to(tl.float64)
    Gram = tl.full((BLOCK, DP, DP), 0.0, tl.float64)
    for _t in range(0, T):
        x_t = tl.load(x_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        Gram += x_t[:, :, None]*x_t[:, None, :]
    M = -_mm(A3, Gram, R3, C3, D)
    Ma = tl.where(_real, tl.abs(M), 0.0)
    one = tl.reduce(tl.reduce(Ma, 1, _add), 1, _larger)  # the 1-norm (a NaN shows in fro)
    fro = tl.sqrt(tl.reduce(tl.reduce(Ma * Ma, 2, _add), 1, _add))
    nrm = tl.where(fro != fro, fro, tl.where(fro < one, fro, one))
    s, c = _shift(nrm, 40, 49/64.0)
    P1 = M * c[:, None, None]
    P2 = _mm(P1, P1, R3, C3, D)
    P3 = _mm(P2, P1, R3, C3, D)
    P4 = _mm(P3, P1, R3, C3, D)
    S4 = 4.779477332387385e-14*_eye
    S4_P = _mm(S4, P4, R3, C3, D)
    S3 = S4_P + 2.08767569878681e-09*_eye + 1.6059043836821613e-10*P1
    S3 += 1.1470745597729725e-11*P2 + 7.647163731819816e-13*P3
    S3_P = _mm(S3, P4, R3, C3, D)
    S2 = S3_P + 2.48015873015873e-05*_eye + 2.7557319223985893e-06*P1
    S2 += 2.755731922398589e-07*P2 + 2.505210838544172e-08*P3
    S2_P = _mm(S2, P4, R3, C3, D)
    S1 = S2_P + 0.041666666666666664*_eye + 0.008333333333333333*P1
    S1 += 0.001388888888888889*P2 + 0.0001984126984126984*P3
    S1_P = _mm(S1, P4, R3, C3, D)
    S0 = S1_P + 1.0*_eye + 1.0*P1
    S0 += 0.5*P2 + 0.16666666666666666*P3
    top = tl.reduce(tl.where(s <= SMAXC, s, 0), 0, _larger)
    E = S0
    for k in range(0, top):
        E = tl.where(k < s[:, None, None], _mm(E, E, R3, C3, D), E)
    W = _mm_tn(E, _mm(Gram, E, R3, C3, D), R3, D) - Gram
    m = _maxabs(W, _real)
    tr = tl.reduce(tl.reduce(tl.where(_real & (R3 == C3), Gram, 0.0), 2, _add), 1, _add)
    ok = (s <= SMAXC) & (tr * tl.load(K_ptr) <= tl.load(K_ptr + 1))
    tl.store(R_ptr + _b, tl.where(ok, m / tl.where(tr > 0.0, tr, 1.0), float('nan')), mask=_live)
    tl.store(Gram_ptr + _o3, Gram, mask=_m3)
    tl.store(E_ptr + _o3, E, mask=_m3)
    P = E
    for _t in range(0, T):
        x_t = tl.load(x_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        y_t = tl.reduce(x_t[:, :, None]*P, 1, _add)
        tl.store(y_ptr + _o2 + _t*D, y_t.to(y_ptr.dtype.element_ty), mask=_m2)


@triton.jit
def vp_gram_exp_bwd(B, T, x_ptr, Gy_ptr, A_ptr, gx_ptr, gA_ptr,
        D: tl.constexpr, DP: tl.constexpr, BLOCK: tl.constexpr):
    """Backward: the gradient gx and per sample gA = -Mbar Gram, the
    forward's stage recomputed and run in reverse from Ebar = Pbar.
    from: Gram = x.T*x  (printed: gram_exp_c.SPECS['grams'])
    from: Pbar = x.T*Gy  (printed: gram_exp_c.SPECS['grams'])
    from: gx = Gy*P.T + x*H  (printed: gram_exp_c.SPECS['gx'])
    verified by: vp.exp_push_through, vp.gram_exp_vjp, vp.gram_exp_native_truncation, vp.gram_exp_native_reverse
    """
    _b = (tl.program_id(0)*BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
    _live = _b < B
    _r = tl.arange(0, DP)
    Rr = _r[None, :]
    R3 = _r[None, :, None]
    C3 = _r[None, None, :]
    _real = (R3 < D) & (C3 < D)
    _eye = tl.where(R3 == C3, 1.0, 0.0).to(tl.float64)
    _o2 = _b[:, None]*T*D + Rr
    _m2 = _live[:, None] & (Rr < D)
    _o3 = _b[:, None, None]*(D*D) + R3*D + C3
    _m3 = _live[:, None, None] & _real
    At3 = tl.load(A_ptr + C3*D + R3, mask=_real, other=0.0).to(tl.float64)
    SMAXC = 40
    A3 = tl.load(A_ptr + R3*D + C3, mask=_real, other=0.0).to(tl.float64)
    Gram = tl.full((BLOCK, DP, DP), 0.0, tl.float64)
    Pbar = tl.full((BLOCK, DP, DP), 0.0, tl.float64)
    for _t in range(0, T):
        x_t = tl.load(x_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        Gy_t = tl.load(Gy_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        Gram += x_t[:, :, None]*x_t[:, None, :]
        Pbar += x_t[:, :, None]*Gy_t[:, None, :]
    M = -_mm(A3, Gram, R3, C3, D)
    Ma = tl.where(_real, tl.abs(M), 0.0)
    one = tl.reduce(tl.reduce(Ma, 1, _add), 1, _larger)  # the 1-norm (a NaN shows in fro)
    fro = tl.sqrt(tl.reduce(tl.reduce(Ma * Ma, 2, _add), 1, _add))
    nrm = tl.where(fro != fro, fro, tl.where(fro < one, fro, one))
    s, c = _shift(nrm, 40, 49/64.0)
    P1 = M * c[:, None, None]
    P2 = _mm(P1, P1, R3, C3, D)
    P3 = _mm(P2, P1, R3, C3, D)
    P4 = _mm(P3, P1, R3, C3, D)
    S4 = 4.779477332387385e-14*_eye
    S4_P = _mm(S4, P4, R3, C3, D)
    S3 = S4_P + 2.08767569878681e-09*_eye + 1.6059043836821613e-10*P1
    S3 += 1.1470745597729725e-11*P2 + 7.647163731819816e-13*P3
    S3_P = _mm(S3, P4, R3, C3, D)
    S2 = S3_P + 2.48015873015873e-05*_eye + 2.7557319223985893e-06*P1
    S2 += 2.755731922398589e-07*P2 + 2.505210838544172e-08*P3
    S2_P = _mm(S2, P4, R3, C3, D)
    S1 = S2_P + 0.041666666666666664*_eye + 0.008333333333333333*P1
    S1 += 0.001388888888888889*P2 + 0.0001984126984126984*P3
    S1_P = _mm(S1, P4, R3, C3, D)
    S0 = S1_P + 1.0*_eye + 1.0*P1
    S0 += 0.5*P2 + 0.16666666666666666*P3
    top = tl.reduce(tl.where(s <= SMAXC, s, 0), 0, _larger)
    E = S0
    for k in range(0, top):
        E = tl.where(k < s[:, None, None], _mm(E, E, R3, C3, D), E)
    gY = Pbar
    for j in range(0, top):
        k = top - 1 - j
        Yk = S0
        for i in range(0, k):
            Yk = tl.where(i < s[:, None, None], _mm(Yk, Yk, R3, C3, D), Yk)
        W = _mm_t(gY, Yk, C3, D) + _mm_tn(Yk, gY, R3, D)
        gY = tl.where(k < s[:, None, None], W, gY)
    gS = gY
    gP1 = 1.0*gS
    gP2 = 0.5*gS
    gP3 = 0.16666666666666666*gS
    gP4 = _mm_tn(S1, gS, R3, D)
    gS = _mm_t(gS, P4, C3, D)
    gP1 += 0.008333333333333333*gS
    gP2 += 0.001388888888888889*gS
    gP3 += 0.0001984126984126984*gS
    gP4 += _mm_tn(S2, gS, R3, D)
    gS = _mm_t(gS, P4, C3, D)
    gP1 += 2.7557319223985893e-06*gS
    gP2 += 2.755731922398589e-07*gS
    gP3 += 2.505210838544172e-08*gS
    gP4 += _mm_tn(S3, gS, R3, D)
    gS = _mm_t(gS, P4, C3, D)
    gP1 += 1.6059043836821613e-10*gS
    gP2 += 1.1470745597729725e-11*gS
    gP3 += 7.647163731819816e-13*gS
    gP4 += _mm_tn(S4, gS, R3, D)
    gS = _mm_t(gS, P4, C3, D)
    gP3 += _mm_t(gP4, P1, C3, D)
    gP1 += _mm_tn(P3, gP4, R3, D)
    gP2 += _mm_t(gP3, P1, C3, D)
    gP1 += _mm_tn(P2, gP3, R3, D)
    gP1 += _mm_t(gP2, P1, C3, D)
    gP1 += _mm_tn(P1, gP2, R3, D)
    Mbar = gP1 * tl.where(s <= SMAXC, c, float('nan'))[:, None, None]
    W = _mm(A3, Mbar, R3, C3, D)
    H = W + _mm_t(_eye, W, C3, D)  # W + W^T
    tl.store(gA_ptr + _o3, -_mm(Mbar, Gram, R3, C3, D), mask=_m3)
    P = E
    for _t in range(0, T):
        x_t = tl.load(x_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        Gy_t = tl.load(Gy_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        gx_t = tl.reduce(Gy_t[:, None, :]*P, 2, _add) + tl.reduce(x_t[:, :, None]*H, 1, _add)
        tl.store(gx_ptr + _o2 + _t*D, gx_t.to(gx_ptr.dtype.element_ty), mask=_m2)
