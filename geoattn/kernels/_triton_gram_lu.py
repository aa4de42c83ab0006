"""Triton kernels of the Gram form y = 2 x (I + x^T x A)^(-T) - x for 1 <= d <= 16: forward, backward.

DO NOT EDIT: this file is written by ``geoattn codegen`` (``geoattn/codegen/gram_lu_triton.py``); ``geoattn codegen
--check`` fails when it is stale. The token passes are printed from the verified bindings of
``geoattn.codegen.gram_lu_c.SPECS``; the d x d stage (M^T = I + A^T Gram, LU with partial pivoting per lane,
N = M^(-T), the residual, the backward's products) is the template of Note [Triton LU blocks] in
``geoattn.codegen.gram_lu_triton``, on (BLOCK, DP, DP) blocks [ledger: vp.gram_form, vp.gram_lu_vjp]. Imported by
``geoattn.kernels._triton`` only where ``triton`` is installed.

bindings-sha256: 2f1a917299a5abb2a65f93af93d844634810d7519674c877b7ead719c0619ee0
"""

import triton
import triton.language as tl

__all__ = ["vp_gram_lu_fwd", "vp_gram_lu_bwd"]


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
def _inverse_t(MT, R3, C3, Rr, D: tl.constexpr, DP: tl.constexpr, BLOCK: tl.constexpr):
    """N with M^T N = I per lane: P M^T = L U with partial pivoting, then L Z = P and U N = Z."""
    LU = MT
    q = tl.broadcast_to(Rr, (BLOCK, DP))  # row i of P M^T is row q_i of M^T
    for k in range(0, D):
        a = tl.abs(_col(LU, C3, k))
        a = tl.where((Rr >= k) & (a == a), a, -1.0)
        best = tl.reduce(a, 1, _larger)
        p = tl.reduce(tl.where(a == best[:, None], Rr, DP), 1, _smaller)
        p2 = p[:, None]
        p3 = p2[:, :, None]
        rk = _row(LU, R3, k)
        rp = tl.reduce(tl.where(R3 == p3, LU, 0.0), 1, _add)
        LU = tl.where(R3 == k, rp[:, None, :], tl.where(R3 == p3, rk[:, None, :], LU))
        qk = tl.reduce(tl.where(Rr == k, q, 0), 1, _add)
        qp = tl.reduce(tl.where(Rr == p2, q, 0), 1, _add)
        q = tl.where(Rr == k, qp[:, None], tl.where(Rr == p2, qk[:, None], q))
        piv = tl.reduce(tl.where(Rr == k, rp, 0.0), 1, _add)
        lk = _col(LU, C3, k) / piv[:, None]
        below = R3 > k
        LU = tl.where(below & (C3 == k), lk[:, :, None],
                      tl.where(below & (C3 > k), LU - lk[:, :, None] * rp[:, None, :], LU))
    Z = tl.where(q[:, :, None] == C3, 1.0, 0.0).to(tl.float64)
    for k in range(0, D):
        zk = _row(Z, R3, k)
        Z = tl.where(R3 > k, Z - _col(LU, C3, k)[:, :, None] * zk[:, None, :], Z)
    for j in range(0, D):
        k = D - 1 - j
        ukk = tl.reduce(tl.where(Rr == k, _row(LU, R3, k), 0.0), 1, _add)
        zk = _row(Z, R3, k) / ukk[:, None]
        Z = tl.where(R3 == k, zk[:, None, :], Z)
        Z = tl.where(R3 < k, Z - _col(LU, C3, k)[:, :, None] * zk[:, None, :], Z)
    return Z


@triton.jit
def _maxabs(E, real):
    """The largest |entry| of each lane's block where real, NaN when one is."""
    a = tl.where(real, tl.abs(E), 0.0)
    top = tl.reduce(tl.reduce(tl.where(a != a, 0.0, a), 2, _larger), 1, _larger)
    return top + tl.reduce(tl.reduce(tl.where(a != a, a, 0.0), 2, _add), 1, _add)  # + 0, or NaN


@triton.jit
def vp_gram_lu_fwd(B, T, x_ptr, A_ptr, y_ptr, Gram_ptr, N_ptr, R_ptr, 
        D: tl.constexpr, DP: tl.constexpr, BLOCK: tl.constexpr):
    """Forward: y, and per sample Gram, N = (I + Gram A)^(-T) by an LU with partial pivoting
    and R = max |M^T N - I| (NaN when an entry is).
    from: Gram = x.T*x  (printed: gram_lu_c.SPECS['gram'])
    from: y = x*P  (printed: gram_lu_c.SPECS['out'])
    verified by: vp.gram_form, vp.gram_lu_vjp
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
    Gram = tl.full((BLOCK, DP, DP), 0.0, tl.float64)
    for _t in range(0, T):
        x_t = tl.load(x_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        Gram += x_t[:, :, None]*x_t[:, None, :]
    MT = _eye + _mm(At3, Gram, R3, C3, D)
    N = _inverse_t(MT, R3, C3, Rr, D, DP, BLOCK)
    tl.store(R_ptr + _b, _maxabs(_mm(MT, N, R3, C3, D) - _eye, _real), mask=_live)
    tl.store(Gram_ptr + _o3, Gram, mask=_m3)
    tl.store(N_ptr + _o3, N, mask=_m3)
    P = 2.0*N - _eye
    for _t in range(0, T):
        x_t = tl.load(x_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        y_t = tl.reduce(x_t[:, :, None]*P, 1, _add)
        tl.store(y_ptr + _o2 + _t*D, y_t.to(y_ptr.dtype.element_ty), mask=_m2)


@triton.jit
def vp_gram_lu_bwd(B, T, x_ptr, Gy_ptr, N_ptr, A_ptr, gx_ptr, gA_ptr, 
        D: tl.constexpr, DP: tl.constexpr, BLOCK: tl.constexpr):
    """Backward: the gradient gx and per sample gA = Gram Mbar,
    Mbar = -2 N Pbar^T N, from x, Gy and the forward's N.
    from: Gram = x.T*x  (printed: gram_lu_c.SPECS['grams'])
    from: Pbar = x.T*Gy  (printed: gram_lu_c.SPECS['grams'])
    from: gx = Gy*P.T + x*H  (printed: gram_lu_c.SPECS['gx'])
    verified by: vp.gram_form, vp.gram_lu_vjp
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
    Gram = tl.full((BLOCK, DP, DP), 0.0, tl.float64)
    Pbar = tl.full((BLOCK, DP, DP), 0.0, tl.float64)
    for _t in range(0, T):
        x_t = tl.load(x_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        Gy_t = tl.load(Gy_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        Gram += x_t[:, :, None]*x_t[:, None, :]
        Pbar += x_t[:, :, None]*Gy_t[:, None, :]
    N = tl.where(_real, tl.load(N_ptr + _o3, mask=_m3, other=0.0), _eye)
    A3 = tl.load(A_ptr + R3*D + C3, mask=_real, other=0.0).to(tl.float64)
    Mbar = -2.0*_mm(_mm_t(N, Pbar, C3, D), N, R3, C3, D)
    K = _mm(Mbar, A3, R3, C3, D)
    H = -(K + _mm_t(At3, Mbar, C3, D))  # K^T = A^T Mbar^T
    tl.store(gA_ptr + _o3, _mm(Gram, Mbar, R3, C3, D), mask=_m3)
    P = 2.0*N - _eye
    for _t in range(0, T):
        x_t = tl.load(x_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        Gy_t = tl.load(Gy_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)
        gx_t = tl.reduce(Gy_t[:, None, :]*P, 2, _add) + tl.reduce(x_t[:, :, None]*H, 1, _add)
        tl.store(gx_ptr + _o2 + _t*D, gx_t.to(gx_ptr.dtype.element_ty), mask=_m2)
