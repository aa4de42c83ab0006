r"""The action ``exp(S) x`` of the exponential of skew ``S`` on a few columns, by its Chebyshev expansion.

Note [the Chebyshev action]
---------------------------
For skew ``S`` (``T x T``) the matrix ``H = -iS`` is Hermitian, so with any ``rho >= ||S||_2`` the spectrum of
``H / rho`` lies in ``[-1, 1]`` and the Jacobi--Anger expansion ``e^{i rho y} = J_0(rho) + 2 sum_{k>=1} i^k J_k(rho)
T_k(y)`` gives ``exp(S) = exp(iH) = sum_k c_k i^k T_k(H / rho)`` with ``c_0 = J_0(rho)``, ``c_k = 2 J_k(rho)``.
The vectors ``w_k = i^k T_k(H / rho) x`` are real: with ``X = S / rho`` they obey

    w_0 = x,    w_1 = X x,    w_{k+1} = 2 X w_k + w_{k-1}            (ledger exp_action.chebyshev_recurrence)

and ``exp(S) x = sum_{k=0}^{m} c_k w_k`` up to the tail ``sum_{k>m} c_k w_k``. Since ``||T_k(H / rho)||_2 <= 1``
and ``|J_k(rho)| <= (rho / 2)^k / k!``, each column's truncation error is at most

    2 sum_{k>m} (rho/2)^k / k!  <=  2 (rho/2)^{m+1} / (m+1)!  /  (1 - rho / (2 (m + 2)))      (rho < 2 (m + 2))

times that column's 2-norm (ledger exp_action.truncation_bound). The degree ``m`` of each sample is the smallest with
that bound below the unit roundoff of the dtype; ``rho`` is :func:`norm_bound`, ``(||S^2||_F^2 / 2)^{1/4}``
enlarged for its rounding (a bound on ``||S||_2`` for skew ``S``). A polynomial of degree about ``rho + O(log(1/u))``
(the Bessel coefficients fall off past ``k = rho``), against about ``4 rho`` products for Taylor with scaling at
float32 accuracy. No polynomial of degree much below ``||S||_2`` can do it (``e^{i rho y}`` oscillates ``rho / pi``
times on ``[-1, 1]``): that, not the implementation, sets the floor of this form.

The batch runs to the largest degree among its samples, and a sample's coefficients past its own degree are zero,
so ``y += 0 * w_k`` leaves its result unchanged bit for bit: a sample's result never depends on its batch. The
coefficients are computed in float64 by Miller's backward recurrence for ``J_k``, normalised by
``J_0 + 2 sum J_{2k} = 1``. Samples whose degree exceeds ``MAX_DEGREE``, or whose norm is not finite, are not
served here (the caller sends them to ``exp(S)`` formed densely).

The backward is the adjoint (Clenshaw) recurrence: with ``a_k = dL/dw_k``,
``a_k = c_k g + 2 X^T a_{k+1} + a_{k+2}`` (``X^T a_1`` once for ``k = 0``), ``dL/dx = a_0`` and
``dL/dX = a_1 w_0^T + 2 sum_{k=1}^{m-1} a_{k+1} w_k^T``, the sum as one batched product of the stacked columns.
``rho`` is treated as a constant: the expansion is exact for every ``rho >= ||S||_2``. A graph of the backward
(double backward) re-runs the forward under autograd.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

__all__ = ["MAX_DEGREE", "RHO_MIN", "chebyshev_degree", "chebyshev_coefficients", "norm_bound", "bound_from_norms",
           "working_rho", "sample_degrees", "exp_skew_action_chebyshev"]

#: samples that need a higher degree are not served by the Chebyshev form (Note [the Chebyshev action])
MAX_DEGREE = 160
#: the smallest bound used for ``||S||_2`` (any ``rho >= ||S||_2`` is exact; this keeps ``2k / rho`` finite)
RHO_MIN = 2.0 ** -6

# Note [degree groups]
# --------------------
# The batch runs to the largest degree among its samples; the degrees of one batch spread (T = 16, d = 4, unit-normal
# x: median 21, largest 36). Sorted by degree and cut into GROUPS groups, each group runs to its own largest degree:
# fewer products, at the price of gathering S and x once. A sample's result is the same in any group (its
# coefficients past its own degree are zero), so the grouping never changes a result.
GROUPS = 4
#: batches of at most GROUPS * GROUP_MIN samples run as one group
GROUP_MIN = 64


def norm_bound(s: torch.Tensor) -> torch.Tensor:
    r"""An upper bound on ``||S||_2`` per skew matrix, float64: :math:`(\|S^2\|_F^2/2)^{1/4}`, computed in the
    dtype of ``S`` and enlarged to cover its rounding.

    The eigenvalues of :math:`S^TS = -S^2` (all :math:`\ge 0`) come in equal pairs for skew ``S`` (ledger
    ``exp_action.skew_square_norm_bound``), so the largest, :math:`\|S\|_2^2`, is at most half their sum of squares:
    :math:`\|S\|_2^4 \le \tfrac12\mathrm{Tr}\,S^4 = \tfrac12\|S^2\|_F^2`. Rounding: with
    ``gamma_n = n u / (1 - n u)``, ``|fl(S^2) - S^2| <= gamma_T |S| |S|`` entrywise, so
    :math:`\|S^2\|_F \le \|fl(S^2)\|_F + \gamma_T\|S\|_F^2`; each computed Frobenius norm (``T^2`` squares, their
    sum and a square root) is enlarged by ``1 + 2 gamma_{T^2 + 2}``, the last operations are in float64 with a further
    ``1 + 1e-12``.

    It replaced the lesser of ``||S||_1`` and ``sqrt(||S^2||_1)``: on the layer's inputs it is 0.65 to 0.76 times
    that bound (medians, unit-normal x, default initialisation, T = 16 and 64, d = 3 to 32), against 0.63 to 0.73
    for ``||S||_2`` itself, so the Chebyshev degrees fall by 14 to 30 %, and it costs one ``T x T`` product and two
    single-pass norms instead of a product and four reductions (T = 64, B = 1024, one thread: about 10 ms against
    11). It can exceed the old bound, by at most :math:`(T/2)^{1/4}` (``S`` with all its eigenvalue pairs equal);
    the layer's matrices are far from that.

    Parameters
    ----------
    s : Tensor ``(B, T, T)``

    Returns
    -------
    Tensor ``(B,)``, float64
    """
    s = s.detach()
    T = s.shape[-1]
    if not _frobenius_allowance_valid(T, s.dtype):  # ||S||_1 (a column sum of T terms) still bounds it
        u = torch.finfo(s.dtype).eps / 2
        if 2 * T * u >= 1:
            return torch.full(s.shape[:1], float("inf"), dtype=torch.float64, device=s.device)
        grow = (1 + 2 * T * u / (1 - T * u)) * (1 + 1e-12)
        return s.abs().sum(-2).amax(-1).to(torch.float64) * grow
    return bound_from_norms(torch.linalg.vector_norm(s, dim=(-2, -1)).to(torch.float64),
                            torch.linalg.vector_norm(torch.bmm(s, s), dim=(-2, -1)).to(torch.float64),
                            T, s.dtype)


def _frobenius_allowance_valid(T: int, dtype: torch.dtype) -> bool:
    """Whether ``gamma_{T^2 + 2}`` of ``dtype`` is a valid allowance (``(T^2 + 2) u <= 1/2``): float32 up to
    T = 2896; beyond it (and for half types) :func:`norm_bound` falls back to ``||S||_1``."""
    return 2 * (T * T + 2) * torch.finfo(dtype).eps / 2 <= 1


def working_rho(rho: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``rho`` (float64) rounded up to the nearest value of ``dtype``, as float64: the kernels divide ``S`` by
    ``rho`` in ``dtype``, so the degree and the coefficients are taken at that same value (a rounded-down ``rho``
    could fall below ``||S||_2``)."""
    r = rho.to(dtype)
    low = r.to(torch.float64) < rho
    if bool(low.any()):
        r = torch.where(low, torch.nextafter(r, torch.full_like(r, float("inf"))), r)
    return r.to(torch.float64)


def bound_from_norms(fro: torch.Tensor, sq_fro: torch.Tensor, T: int, dtype: torch.dtype) -> torch.Tensor:
    r"""The bound of :func:`norm_bound` from the computed Frobenius norms of ``S`` and of its computed square
    ``fl(S^2)`` (float64, ``(B,)``; each a sum of ``T^2`` squares taken in ``dtype`` or in float64, the entries of
    ``fl(S^2)`` sums of ``T`` products in ``dtype``): each enlarged by ``1 + 2 gamma_{T^2 + 2}``, then
    :math:`\|S^2\|_F \le \|fl(S^2)\|_F + \gamma_T\|S\|_F^2` and :math:`(\|S^2\|_F^2/2)^{1/4}` with margins of
    ``1 + 1e-12``. The native factored kernel (:func:`geoattn.kernels._native_exp_action.qk_norms`) computes its
    norms in float64 sums and comes here too.

    Parameters
    ----------
    fro, sq_fro : Tensor ``(B,)``, float64
    T : int
    dtype : torch.dtype
        the dtype of the entries of ``S`` and of the product ``S^2``

    Returns
    -------
    Tensor ``(B,)``, float64
    """
    if not _frobenius_allowance_valid(T, dtype):
        raise ValueError(f"Expected (T^2 + 2) u <= 1/2 for the rounding allowance. Got T = {T} in {dtype}.")
    u = torch.finfo(dtype).eps / 2
    gamma_t, gamma_f = T * u / (1 - T * u), (T * T + 2) * u / (1 - (T * T + 2) * u)
    grow = (1 + 2 * gamma_f) * (1 + 1e-12)
    fro, sq_fro = fro * grow, sq_fro * grow                     # >= ||S||_F, >= ||fl(S^2)||_F
    bound = (sq_fro + gamma_t * fro * fro) * (1 + 1e-12)        # >= ||S^2||_F
    return ((bound * bound / 2) * (1 + 1e-12)).sqrt().sqrt() * (1 + 1e-12)


def sample_degrees(rho: torch.Tensor, T: int, d: int, dtype: torch.dtype, limit: int,
                   dense_ratio: float = math.inf) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per sample, from its bound ``rho`` (float64, ``(B,)``): the working bound (:func:`working_rho` of ``rho``
    clamped to :data:`RHO_MIN`; 1 where ``rho`` is not finite), its degree at the unit roundoff of ``dtype``, and
    whether the action serves the sample: a finite bound, a degree ``m`` at most ``limit`` and ``m d`` at most
    ``dense_ratio * T`` (Note [the action or the dense exponential] in :mod:`geoattn.kernels._op_exp_action`). Each
    decision reads the sample's own bound only.

    Returns
    -------
    (Tensor float64, Tensor int64, Tensor bool), each ``(B,)``
    """
    finite = torch.isfinite(rho)
    rho = torch.where(finite, working_rho(rho.clamp_min(RHO_MIN), dtype), torch.ones_like(rho))
    degree = chebyshev_degree(rho, torch.finfo(dtype).eps / 2)
    return rho, degree, finite & (degree <= limit) & (degree * d <= dense_ratio * T)


def _tail_bound(rho: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """``2 (rho/2)^{m+1} / (m+1)! / (1 - rho / (2 (m + 2)))``, inf where ``rho >= 2 (m + 2)`` (float64)."""
    m1 = m + 1.0
    log_term = m1 * torch.log(rho.clamp_min(1e-300) / 2) - torch.lgamma(m1 + 1)
    q = rho / (2 * (m + 2.0))
    return torch.where(q < 1, 2 * torch.exp(log_term) / (1 - q).clamp_min(1e-300), torch.full_like(rho, math.inf))


@functools.lru_cache(maxsize=None)
def _largest_rho(tol: float) -> torch.Tensor:
    """For each degree ``m = 0 .. MAX_DEGREE``, a ``rho`` at which the tail bound is at most ``tol`` and below
    which it is too (the bound increases with ``rho``): bisection in float64, the feasible end kept."""
    ms = torch.arange(MAX_DEGREE + 1, dtype=torch.float64)
    lo, hi = torch.zeros_like(ms), 2 * (ms + 2)
    for _ in range(80):
        mid = (lo + hi) / 2
        ok = _tail_bound(mid, ms) <= tol
        lo, hi = torch.where(ok, mid, lo), torch.where(ok, hi, mid)
    # a relative margin far above the rounding of the float64 bound (|log| <= 1e3, so <= 1e-13 relative), so that
    # the bound holds in exact arithmetic at every entry (a test checks each in rationals)
    return torch.cummax(lo * (1 - 1e-9), 0).values


def chebyshev_degree(rho: torch.Tensor, tol: float) -> torch.Tensor:
    r"""The smallest degree ``m`` per sample with the truncation bound of Note [the Chebyshev action] at most ``tol``.

    Read from a table of the largest admissible ``rho`` per degree (bisection of the bound, computed once per
    ``tol``); ``rho`` at or below the table's entry for ``m`` has a bound at most ``tol``.

    Parameters
    ----------
    rho : Tensor ``(B,)``, float64, finite and non-negative
    tol : float

    Returns
    -------
    Tensor ``(B,)``, int64; ``MAX_DEGREE + 1`` where no degree up to ``MAX_DEGREE`` reaches ``tol``
    """
    table = _largest_rho(float(tol)).to(rho.device)
    return torch.searchsorted(table, rho.contiguous(), side="left")


def chebyshev_coefficients(rho: torch.Tensor, degree: int, start: int | None = None,
                           recurrence=None) -> torch.Tensor:
    r"""``c_0 = J_0(rho)``, ``c_k = 2 J_k(rho)`` for ``k = 1 .. degree``, per sample, float64.

    Miller's backward recurrence ``J_{k-1} = (2k / rho) J_k - J_{k+1}`` from far above ``max(rho, degree)``,
    normalised by ``J_0 + 2 sum_{k>=1} J_{2k} = 1``; ``rho = 0`` gives ``c = (1, 0, ...)``. ``start`` (default:
    40 above ``max(degree, max(rho))``) fixes where the recurrence starts: a start that does not depend on the batch
    makes every sample's coefficients independent of the others, bit for bit.

    Parameters
    ----------
    rho : Tensor ``(B,)``, float64, finite and non-negative
    degree : int
    start : int, optional
    recurrence : callable, optional
        ``recurrence(r, degree, start) -> (B, degree + 1)`` float64 tensor of ``J_k(r) / norm`` in place of the
        NumPy or torch form (the native kernels' :func:`geoattn.kernels._native_exp_action.miller`, the same bits)

    Returns
    -------
    Tensor ``(B, degree + 1)``, float64
    """
    if start is None:
        start = int(max(degree, float(rho.detach().max()) if rho.numel() else 0.0)) + 40
    start += start % 2
    if start < degree:
        raise ValueError(f"Expected the recurrence to start at or above the degree {degree}. Got start={start}.")
    if recurrence is not None:
        c = recurrence(rho.detach().clamp_min(1e-300), degree, start)
    elif rho.device.type == "cpu" and rho.dtype == torch.float64 and not rho.requires_grad:
        c = torch.from_numpy(_miller_cpu(rho.clamp_min(1e-300).numpy(), degree, start))
    else:
        c = _miller_torch(rho.clamp_min(1e-300), degree, start)
    c[:, 1:] *= 2
    zero = rho == 0
    if bool(zero.any()):
        e0 = torch.zeros(degree + 1, dtype=c.dtype, device=c.device)
        e0[0] = 1
        c = torch.where(zero[:, None], e0, c)
    return c


def _miller_torch(r: torch.Tensor, degree: int, start: int) -> torch.Tensor:
    """``J_k(r) / norm``, ``k = 0 .. degree``, ``(B, degree + 1)``: Miller's recurrence in torch (any device)."""
    nxt, cur = torch.zeros_like(r), torch.ones_like(r)
    vals = [None] * (degree + 1)
    norm = torch.zeros_like(r)
    for k in range(start, 0, -1):
        # cur = J_k (unnormalised), nxt = J_{k+1}; J_{k-1} = (2k / rho) J_k - J_{k+1}
        if k <= degree:
            vals[k] = cur
        if k % 2 == 0:
            norm = norm + 2 * cur
        prev = (2 * k / r) * cur - nxt
        nxt, cur = cur, prev
        big = cur.abs() > 1e250  # rescale all kept values to stay finite
        if bool(big.any()):
            f = torch.where(big, cur.new_tensor(1e-250), cur.new_tensor(1.0))
            cur, nxt, norm = cur * f, nxt * f, norm * f
            vals = [v * f if v is not None else None for v in vals]
    vals[0] = cur
    norm = norm + cur
    return torch.stack(vals, -1) / norm[:, None]


def _miller_cpu(r: np.ndarray, degree: int, start: int) -> np.ndarray:
    """:func:`_miller_torch` in NumPy for CPU samples, the same operations in the same order (so the same bits:
    ``2k / r`` is torch's ``r.reciprocal() * 2k``), at a fraction of torch's cost per call on vectors of a few
    thousand samples (B = 4096, 88 steps: 3.5 ms against 9.2 ms, one thread)."""
    inv = np.reciprocal(r)
    nxt, cur = np.zeros_like(r), np.ones_like(r)
    vals = np.zeros((degree + 1, r.shape[0]))
    norm = np.zeros_like(r)
    with np.errstate(over="ignore", invalid="ignore"):  # as torch: inf and NaN propagate to the caller's checks
        for k in range(start, 0, -1):
            if k <= degree:
                vals[k] = cur
            if k % 2 == 0:
                norm = norm + 2 * cur
            prev = (inv * (2 * k)) * cur - nxt
            nxt, cur = cur, prev
            big = np.abs(cur) > 1e250
            if big.any():
                f = np.where(big, 1e-250, 1.0)
                cur, nxt, norm = cur * f, nxt * f, norm * f
                vals[k:] *= f  # the kept values: those of k .. degree
        vals[0] = cur
        norm = norm + cur
        return np.ascontiguousarray((vals / norm).T)


def _series(Xt: torch.Tensor, c: torch.Tensor, v0: torch.Tensor):
    """Row form of the recurrence (``v_k = w_k^T``, ``(B, d, T)``; ``Xt = X^T``): ``(sum_k c_k v_k, V)`` with ``V``
    the stacked ``v_0 .. v_{m-1}``, ``(B, m, d, T)`` (the backward's operands; ``m = 0``: empty)."""
    degree = c.shape[-1] - 1
    y = c[:, 0, None, None] * v0
    vs = [v0]
    if degree >= 1:
        v_prev, v = v0, torch.bmm(v0, Xt)
        y = y + c[:, 1, None, None] * v
        for k in range(1, degree):
            vs.append(v)
            v_prev, v = v, torch.baddbmm(v_prev, v, Xt, alpha=2)
            y = y + c[:, k + 1, None, None] * v
    return y, torch.stack(vs[:degree], 1) if degree else v0.new_empty(v0.shape[0], 0, *v0.shape[1:])


def _series_list(Xt: torch.Tensor, c: torch.Tensor, v0: torch.Tensor, keep: bool):
    """:func:`_series` without a graph and without stacking: ``(sum_k c_k v_k, [v_0 .. v_{m-1}] if keep)``."""
    degree = c.shape[-1] - 1
    y = c[:, 0, None, None] * v0
    vs = [v0]
    if degree >= 1:
        v_prev, v = v0, torch.bmm(v0, Xt)
        y.addcmul_(v, c[:, 1, None, None])
        for k in range(1, degree):
            if keep:
                vs.append(v)
            v_prev, v = v, torch.baddbmm(v_prev, v, Xt, alpha=2)
            y.addcmul_(v, c[:, k + 1, None, None])
    return y, vs if keep else None


def _adjoint_list(X: torch.Tensor, vs: list, c: torch.Tensor, gt: torch.Tensor, rho: torch.Tensor):
    """:func:`_adjoint` without a graph: ``dL/dX`` accumulated one product per step, nothing stacked."""
    degree = c.shape[-1] - 1
    gX = torch.zeros_like(X)
    if degree == 0:
        return gX, c[:, 0, None, None] * gt
    b_next, b_next2 = None, None  # b_{k+1}, b_{k+2}
    for k in range(degree, 0, -1):
        ck = c[:, k, None, None]
        bk = ck * gt if b_next2 is None else torch.addcmul(b_next2, gt, ck)
        if b_next is not None:
            bk.baddbmm_(b_next, X, alpha=2)
        # the term of v_k = 2 v_{k-1} X^T + ... (v_1 = v_0 X^T): dL/dX += (2 or 1) b_k^T v_{k-1}
        gX.baddbmm_(bk.mT, vs[k - 1], alpha=2 if k > 1 else 1)
        b_next, b_next2 = bk, b_next
    b0 = torch.baddbmm(c[:, 0, None, None] * gt, b_next, X)
    if b_next2 is not None:
        b0 += b_next2
    return gX.div_(rho[:, None, None]), b0


class _ChebyshevAction(torch.autograd.Function):
    @staticmethod
    def forward(s, x, rho, c):
        X = s / rho.to(s.dtype)[:, None, None]
        Xt = X.mT.contiguous()
        y, vs = _series_list(Xt, c.to(s.dtype), x.mT.contiguous(), keep=True)
        return y.mT, X.contiguous(), *(vs or ())

    @staticmethod
    def setup_context(ctx, inputs, output):
        s, x, rho, c = inputs
        _, X, *vs = output
        ctx.mark_non_differentiable(X, *vs)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(s, x, rho, c, X, *vs)

    @staticmethod
    def backward(ctx, g, *_unused):
        s, x, rho, c, X, *vs = ctx.saved_tensors
        if g is None:
            return None, None, None, None
        if torch.is_grad_enabled():  # a graph of the backward: the same adjoint on a forward re-run under autograd
            X = s / rho.to(s.dtype)[:, None, None]
            V = _series(X.mT, c.to(s.dtype), x.mT)[1]
            gs, gx = _adjoint(X, V, c.to(g.dtype), g.mT, rho.to(g.dtype))
        else:
            gs, gx = _adjoint_list(X, vs, c.to(g.dtype), g.mT.contiguous(), rho.to(g.dtype))
        return gs, gx.mT, None, None


def _adjoint(X: torch.Tensor, V: torch.Tensor, c: torch.Tensor, gt: torch.Tensor, rho: torch.Tensor):
    """``(dL/dS, (dL/dx)^T)`` by the adjoint recurrence of Note [the Chebyshev action] in row form: with
    ``b_k = dL/dv_k``, ``b_k = c_k g^T + 2 b_{k+1} X + b_{k+2}``, ``b_0 = c_0 g^T + b_1 X + b_2`` and
    ``dL/dX = (2 / rho) [b_1 / 2; b_2; ...; b_m]^T [v_0; ...; v_{m-1}]``."""
    degree = c.shape[-1] - 1
    if degree == 0:
        return torch.zeros_like(X), c[:, 0, None, None] * gt
    bs = [None] * (degree + 1)
    b_next, b_next2 = None, None  # b_{k+1}, b_{k+2}
    for k in range(degree, 0, -1):
        bk = c[:, k, None, None] * gt
        if b_next2 is not None:
            bk = bk + b_next2
        if b_next is not None:
            bk = torch.baddbmm(bk, b_next, X, alpha=2)
        bs[k] = bk
        b_next, b_next2 = bk, b_next
    b0 = torch.baddbmm(c[:, 0, None, None] * gt, b_next, X)
    if b_next2 is not None:
        b0 = b0 + b_next2
    bs[1] = bs[1] / 2
    Bc = torch.stack(bs[1:], 1).flatten(1, 2)
    Vc = V.flatten(1, 2)
    return torch.bmm(Bc.mT, Vc) * (2 / rho[:, None, None]), b0


def exp_skew_action_chebyshev(s: torch.Tensor, x: torch.Tensor, rho: torch.Tensor, degree: torch.Tensor,
                              limit: int = MAX_DEGREE):
    r"""``exp(S) x`` for samples ``(B, T, T)``, ``(B, T, d)`` with bounds ``rho >= ||S||_2`` and their degrees.

    Each sample's coefficients past its own degree are zero (Note [the Chebyshev action]); every degree must be at
    most :data:`MAX_DEGREE` and every ``rho`` finite.

    Parameters
    ----------
    s : Tensor ``(B, T, T)``, skew
    x : Tensor ``(B, T, d)``
    rho : Tensor ``(B,)``, float64
    degree : Tensor ``(B,)``, int64
    limit : int
        the largest degree any sample may have (the Bessel recurrence starts 40 above it, whatever the batch)

    Returns
    -------
    Tensor ``(B, T, d)``
    """
    if degree.numel() > GROUPS * GROUP_MIN:
        # Note [degree groups]: samples sorted by degree, each group run to its own largest degree
        order = torch.argsort(degree)
        parts = [_apply(s[i], x[i], rho[i], degree[i], limit) for i in order.chunk(GROUPS)]
        return torch.cat(parts)[torch.argsort(order)]
    return _apply(s, x, rho, degree, limit)


def _apply(s, x, rho, degree, limit):
    top = int(degree.max()) if degree.numel() else 0
    c = chebyshev_coefficients(rho, top, start=limit + 40)
    k = torch.arange(top + 1, device=c.device)
    c = torch.where(k[None, :] <= degree[:, None], c, torch.zeros_like(c))
    if torch.is_grad_enabled() and (s.requires_grad or x.requires_grad):
        return _ChebyshevAction.apply(s, x, rho, c)[0]
    Xt = (s / rho.to(s.dtype)[:, None, None]).mT.contiguous()
    return _series_list(Xt, c.to(s.dtype), x.mT.contiguous(), keep=False)[0].mT
