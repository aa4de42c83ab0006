r"""The exponential layer's Gram form at ``d = 3`` and ``d = 4`` in closed form: :math:`y = xE`, :math:`E =
I + aM + bM^2` at ``d = 3`` and :math:`E = c_0I + c_1M + c_2M^2 + c_3M^3` at ``d = 4`` (Note [closed-form
exponential at d = 4] in :mod:`geoattn.kernels._gram_exp_closed4`), :math:`M = -AG`, :math:`G = x^Tx`, evaluated
across the batch in the structure-of-arrays layout.

Note [closed-form exponential Gram form]
----------------------------------------
:math:`M = -AG` (``A`` skew, ``G`` symmetric positive semi-definite) has the eigenvalues of the skew matrix
:math:`-G^{1/2}AG^{1/2}`, so at ``d = 3`` they are :math:`0, \pm i\theta` with :math:`\theta^2 = -\mathrm{Tr}(M^2)/2
\ge 0`, and Cayley--Hamilton gives :math:`M^3 = -\theta^2M` (ledger ``vp.gram_exp_closed_form``). Hence Rodrigues'
formula :math:`\exp(M) = I + a M + b M^2` with the entire functions of :math:`t = \theta^2`

.. math::
   a(t) = \frac{\sin\theta}{\theta} = \sum_{k\ge0}\frac{(-t)^k}{(2k+1)!},\qquad
   b(t) = \frac{1 - \cos\theta}{\theta^2} = \sum_{k\ge0}\frac{(-t)^k}{(2k+2)!},

evaluated by their Taylor series for :math:`t \le 4` (``SERIES_MAX_T``; 13 terms, truncation below float64's
rounding: :math:`4^{13}/27! < 10^{-20}`) and by the trigonometric forms above it, where they lose no digits to
cancellation. The backward (ledger
``vp.gram_exp_closed_form_vjp``): with :math:`\bar E = x^T\bar y` and :math:`dt = -\mathrm{Tr}(M\,dM)`,

.. math::
   \bar M = a\bar E + b(\bar EM^T + M^T\bar E) - \big(a'(t)\langle\bar E, M\rangle + b'(t)\langle\bar E, M^2\rangle
   \big)M^T,

and at ``d = 4``, with :math:`\gamma_i = \langle\bar E, M^i\rangle`, :math:`\bar p = \sum_i\gamma_i\,\partial c_i/
\partial p`, :math:`\bar q = \sum_i\gamma_i\,\partial c_i/\partial q` (ledger ``vp.gram_exp_closed_quartic_vjp``),

.. math::
   \bar M = \sum_{i\ge1}c_i\sum_{j<i}(M^j)^T\bar E(M^{i-1-j})^T - \bar pM^T - \bar q(M^3 + pM)^T

(:math:`dp = -\mathrm{Tr}(M\,dM)` and :math:`dq = -\mathrm{Tr}((M^3 + pM)\,dM)`, the adjugate of ``M`` by
Cayley--Hamilton); then :math:`\bar G = A\bar M`, :math:`\bar x = \bar yE^T + x(\bar G + \bar G^T)`, :math:`\bar A =
\mathrm{skew}(-\bar MG)` as in Note [Gram form of the exponential] of :mod:`geoattn.kernels._gram_exp`. No
``matrix_exp``, no QR, no LAPACK call: a few dozen elementwise operations over ``(3, 3, B)`` float64 arrays, and
the token-sized products in the layout of Note [structure-of-arrays runtime] (:mod:`geoattn.kernels._gram`).

The per-sample safety is that of the ``matrix_exp`` Gram form: every sample is checked against
:math:`E^TGE = G` (:func:`geoattn.kernels._gram_exp.structure_ok`); samples that fail it, have a non-finite entry,
or have :math:`\|x\|_F^2\|A_s\|_F >` ``GRAM_MAX_SCALE`` take the QR form in float64 on their own. Every
operation of the closed form acts on each sample alone; the one sum over the batch, the gradient of a shared ``A``,
takes the samples not computed here as zeros, so no result depends on the other samples of the batch.
"""

from __future__ import annotations

import math

import torch

from ..errors import ShapeError
from . import _generated as gen
from ._gram import GRAM_MAX_SCALE, _aos, _flat_batch, _outer_sum, _qr_for_failed, _skew64, _soa
from ._gram_exp import _gram_exp_form, exp_residual_tolerance, gram_exp_reason
from ._gram_exp_closed4 import exp4_coefficients

__all__ = ["vp_gram_exp_closed", "gram_exp_closed_reason", "rodrigues_coefficients", "CLOSED_EXP_DIMS",
           "SERIES_MAX_T", "EXP_SOA_MAX_T"]

#: the widths the closed form covers (d = 3: M^3 = -theta^2 M; d = 4: M^4 + p M^2 + q I = 0; d <= 2 keep the other
#: routes)
CLOSED_EXP_DIMS = (3, 4)
#: sequences shorter than this do the token-sized work in the structure-of-arrays layout, longer ones by batched
#: products: forward+backward of out.sum(), one thread, float32, 65,536 tokens, the layer's default weighting, on a
#: shared two-core machine, structure of arrays against batched products: d = 3: 11 against 20 ms at T = 32, 13
#: against 27 at T = 64, 13 against 19 at T = 128; d = 4: 28 against 59, 20 against 30, 23 against 21
EXP_SOA_MAX_T = 128
#: t = theta^2 up to which a, b and their derivatives are summed as Taylor series
SERIES_MAX_T = 4.0
_TERMS = 13
# (2k+1)! and (2k+2)! for k < _TERMS, the series' denominators
_A_COEF = [(-1) ** k / math.factorial(2 * k + 1) for k in range(_TERMS)]
_B_COEF = [(-1) ** k / math.factorial(2 * k + 2) for k in range(_TERMS)]
# row j: the coefficient of t^j in a, b, da/dt, db/dt
_SERIES = [(_A_COEF[j], _B_COEF[j], (j + 1) * _A_COEF[j + 1] if j + 1 < _TERMS else 0.0,
            (j + 1) * _B_COEF[j + 1] if j + 1 < _TERMS else 0.0) for j in range(_TERMS)]


def gram_exp_closed_reason(x: torch.Tensor, A: torch.Tensor) -> str | None:
    """None when :func:`vp_gram_exp_closed` can compute the layer of ``x`` and ``A``, else why not.

    Parameters
    ----------
    x : Tensor ``(..., T, d)``
    A : Tensor ``(d, d)`` or ``(..., d, d)``

    Returns
    -------
    str or None
    """
    d = x.shape[-1]
    if d not in CLOSED_EXP_DIMS:
        return f"d={d}: the closed form of exp(M) as a polynomial in M covers d in {CLOSED_EXP_DIMS}"
    return gram_exp_reason(x, A)


def _series(t: torch.Tensor) -> torch.Tensor:
    """``a, b, da/dt, db/dt`` by their Taylor series, stacked ``(4, *t.shape)``: one Horner scheme for the four."""
    shape = (4,) + (1,) * t.dim()
    out = torch.tensor(_SERIES[-1], dtype=t.dtype, device=t.device).view(shape).expand((4,) + t.shape).clone()
    for c in reversed(_SERIES[:-1]):
        out.mul_(t).add_(torch.tensor(c, dtype=t.dtype, device=t.device).view(shape))
    return out


def rodrigues_coefficients(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    r""":math:`a, b` of :math:`\exp(M) = I + aM + bM^2` and their derivatives in :math:`t = \theta^2`.

    Taylor series for :math:`t \le` ``SERIES_MAX_T``, trigonometric forms above (Note [closed-form exponential
    Gram form]); elementwise, so a sample's coefficients depend on its own ``t`` only.

    Parameters
    ----------
    t : Tensor
        :math:`\theta^2 = -\mathrm{Tr}(M^2)/2` (float64; slightly negative values from rounding take the series)

    Returns
    -------
    tuple of Tensor
        ``a, b, da/dt, db/dt``, each of ``t``'s shape
    """
    a_s, b_s, da_s, db_s = _series(t).unbind(0)
    big = t > SERIES_MAX_T
    if not bool(big.any()):
        return a_s, b_s, da_s, db_s
    tb = torch.where(big, t, torch.full_like(t, 2 * SERIES_MAX_T))  # the series' samples see a harmless value
    th = tb.sqrt()
    s, c = th.sin(), th.cos()
    a_t, b_t = s / th, (1 - c) / tb
    da_t = (th * c - s) / (2 * th * tb)
    db_t = (th * s - 2 * (1 - c)) / (2 * tb * tb)
    return (torch.where(big, a_t, a_s), torch.where(big, b_t, b_s), torch.where(big, da_t, da_s),
            torch.where(big, db_t, db_s))


def _soa_t(m: torch.Tensor) -> torch.Tensor:
    return m.transpose(0, 1)


def _inner(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``sum u * v`` per sample of ``(d, d, B)`` arrays."""
    return (u * v).flatten(0, 1).sum(0)


def _combine(coef: torch.Tensor, powers: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """``sum_i coef[i] M^i`` of ``(d, d, B)`` powers ``M, M^2, ...`` (``coef``: ``(k, B)``, ``k = len(powers) + 1``)."""
    E = coef[1] * powers[0]
    for c, P in zip(coef[2:], powers[1:]):
        E.addcmul_(c, P)
    for i in range(E.shape[0]):
        E[i, i] += coef[0]
    return E


def _coefficient_adjoint(gE: torch.Tensor, p: torch.Tensor, coef: torch.Tensor, dcoef: torch.Tensor,
                         powers: tuple[torch.Tensor, ...]) -> torch.Tensor:
    r""":math:`\bar M` of :math:`\langle\bar E, \sum_i c_i(p, q)M^i\rangle` (Note [closed-form exponential Gram
    form]): the powers' terms :math:`c_i\sum_{j<i}(M^j)^T\bar E(M^{i-1-j})^T`, and the coefficients' through
    :math:`\nabla_Mp = -M^T` and, at ``d = 4``, :math:`\nabla_Mq = -(M^3 + pM)^T` (``dcoef``: the derivatives in
    ``p`` and, at ``d = 4``, ``q``)."""
    Pt = [_soa_t(P) for P in powers]
    gamma = [gen.soa_tr(gE)] + [_inner(gE, P) for P in powers]  # <E_bar, M^i>
    bars = [sum(g * dc for g, dc in zip(gamma, row)) for row in dcoef]  # p_bar (and q_bar)
    gM = coef[1] * gE
    L = [gE] + [gen.soa_mm(P, gE) for P in Pt[:-1]]  # (M^j)^T E_bar
    for i in range(2, coef.shape[0]):
        term = L[i - 1].clone()
        for j in range(i - 1):
            term.add_(gen.soa_mm(L[j], Pt[i - 2 - j]))
        gM.addcmul_(coef[i], term)
    gM.addcmul_(bars[0], Pt[0], value=-1)
    if len(bars) > 1:
        gM.addcmul_(bars[1], Pt[2] + p * Pt[0], value=-1)
    return gM


class _VPGramExpClosed(torch.autograd.Function):
    # x: (n, T, d); A: (d, d) shared or (n, d, d). Returns y, the per-sample structure check and which samples were
    # computed here (finite, |x|_F^2 |A_s|_F <= GRAM_MAX_SCALE); the caller replaces the others. Every operation
    # acts on each sample alone (no sum over the batch but the shared A's gradient, where the samples not computed
    # enter as zeros), so no token array needs masking. The d x d stage is always in the structure-of-arrays layout
    # (d, d, n); the token-sized work in it for T < EXP_SOA_MAX_T, else by batched products.
    @staticmethod
    def forward(ctx, x, A):
        n, T, d = x.shape
        soa = T < EXP_SOA_MAX_T
        if soa:
            xs = _soa(x)
            G = _outer_sum(xs, xs)
        else:
            xs = x.to(torch.float64)
            G = (xs.mT @ xs).permute(1, 2, 0).contiguous()
        As = _skew64(A)
        if A.dim() == 2:
            norm_a = As.norm()
            As = As[..., None]
        else:
            norm_a = As.norm(dim=(-2, -1))
            As = As.permute(1, 2, 0).contiguous()
        trG = gen.soa_tr(G)
        scale = trG * norm_a
        keep = torch.isfinite(scale) & (scale <= GRAM_MAX_SCALE)
        M = gen.soa_mm(As, G).neg_()
        M2 = gen.soa_mm(M, M)
        if d == 4:
            M3 = gen.soa_mm(M2, M)
            p = gen.soa_tr(M2).mul_(-0.5)
            q = (2 * p * p - gen.soa_tr_mm(M2, M2)).mul_(0.25)  # det M by Newton's identities (Tr M = e_3 = 0)
            zero = torch.zeros((), dtype=p.dtype, device=p.device)  # the samples not kept must not lengthen the
            V = exp4_coefficients(torch.where(keep, p, zero), torch.where(keep, q, zero))  # others' squarings
            coef, dcoef, powers = V[0], V[1:], (M, M2, M3)
        else:
            p = gen.soa_tr(M2).mul_(-0.5)
            a, b, da, db = rodrigues_coefficients(p)
            coef = torch.stack([torch.ones_like(a), a, b])
            dcoef = torch.stack([torch.stack([torch.zeros_like(da), da, db])])
            powers = (M, M2)
        E = _combine(coef, powers)
        R = gen.soa_mm(gen.soa_mm(_soa_t(E), G), E).sub_(G)
        ok = (R.abs().flatten(0, 1).amax(0) <= exp_residual_tolerance(x.dtype, d) * trG) & keep
        y = _aos(gen.soa_mm(xs, E), x.dtype) if soa else (xs @ E.permute(2, 0, 1)).to(x.dtype)
        ctx.soa = soa
        ctx.save_for_backward(x, A, keep, xs, As, G, E, p, coef, dcoef, *powers)
        ctx.mark_non_differentiable(ok, keep)
        return y, ok, keep

    @staticmethod
    def backward(ctx, gy, _ok, _keep):
        x, A, keep, xs, As, G, E, p, coef, dcoef, *powers = ctx.saved_tensors
        if torch.is_grad_enabled():
            # a graph of the backward is wanted: through the differentiable Gram form (matrix_exp)
            _, pullback = torch.func.vjp(lambda u, v: _gram_exp_form(u, v, keep), x, A)
            return pullback(gy)
        if ctx.soa:
            gys = _soa(gy)
            gE = _outer_sum(xs, gys)
        else:
            gys = gy.to(torch.float64)
            gE = (xs.mT @ gys).permute(1, 2, 0).contiguous()
        gM = _coefficient_adjoint(gE, p, coef, dcoef, powers)
        zero = torch.zeros((), dtype=torch.float64, device=x.device)
        gM = torch.where(keep, gM, zero)  # the samples not computed here contribute nothing, NaN included
        gG = gen.soa_mm(As, gM)
        H = gG + _soa_t(gG)
        if ctx.soa:
            gx = _aos(gen.soa_mm(gys, _soa_t(E)).add_(gen.soa_mm(xs, H)), x.dtype)
        else:
            gx = torch.baddbmm(gys @ E.permute(2, 1, 0), xs, H.permute(2, 0, 1)).to(x.dtype)
        d = G.shape[0]
        Gk = torch.where(keep, G, zero)
        if A.dim() == 2:
            gAs = -(gM.reshape(d, -1) @ Gk.permute(0, 2, 1).reshape(-1, d))  # sum over the batch of -gM G
        else:
            gAs = -gen.soa_mm(gM, Gk).permute(2, 0, 1)
        return gx, (0.5 * (gAs - gAs.mT)).to(A.dtype)


def vp_gram_exp_closed(x: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""The exponential layer :math:`y = \exp(xAx^T)^Tx = x\exp(M)`, :math:`M = -Ax^Tx`, at ``d = 3`` and ``d = 4``.

    :math:`\exp(M) = I + aM + bM^2` at ``d = 3``, :math:`\sum_{i<4}c_iM^i` at ``d = 4``; computed in float64 and cast
    back, with an explicit backward (Note [closed-form exponential Gram form]); samples
    that fail the structure check :math:`E^TGE = G`, have a non-finite entry, or have
    :math:`\|x\|_F^2\|A_s\|_F >` ``GRAM_MAX_SCALE`` take the QR form in float64 on their own.

    Parameters
    ----------
    x : Tensor ``(..., T, d)``, ``d`` in ``CLOSED_EXP_DIMS``
    A : Tensor ``(d, d)`` or ``(..., d, d)`` broadcasting against ``x``'s leading dimensions; its skew part is used

    Returns
    -------
    Tensor of shape ``broadcast(x.shape[:-2], A.shape[:-2]) + (T, d)``, ``x``'s dtype

    Examples
    --------
    >>> x = torch.randn(4, 20, 3)
    >>> A = torch.randn(3, 3); A = A - A.T
    >>> y = vp_gram_exp_closed(x, A)
    >>> torch.allclose(y.norm(dim=-2), x.norm(dim=-2), atol=1e-4)   # columns of x keep their norms
    True
    """
    T, d = x.shape[-2:]
    if d not in CLOSED_EXP_DIMS:
        raise ShapeError(f"Expected x with d in {CLOSED_EXP_DIMS} features. Got x of shape {tuple(x.shape)}.")
    batch, xb, Ab = _flat_batch(x, A)
    y, ok, _ = _VPGramExpClosed.apply(xb, Ab)
    return _qr_for_failed(y, ok, xb, Ab, "exp").reshape(batch + (T, d))
