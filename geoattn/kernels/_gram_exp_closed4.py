r"""The coefficients of :math:`\exp(M) = c_0I + c_1M + c_2M^2 + c_3M^3` at ``d = 4`` and their derivatives in
:math:`p, q`, for the closed-form exponential Gram route (:mod:`geoattn.kernels._gram_exp_closed`).

Note [closed-form exponential at d = 4]
---------------------------------------
:math:`M = -AG` (``A`` skew, ``G = x^Tx``) has the eigenvalues :math:`\pm it_1, \pm it_2` of the skew matrix
:math:`-G^{1/2}AG^{1/2}`, so :math:`\mathrm{Tr}\,M = 0`, :math:`e_3(M) = 0` and Cayley--Hamilton reads
:math:`M^4 + pM^2 + qI = 0` with :math:`p = -\mathrm{Tr}(M^2)/2 = t_1^2 + t_2^2` and :math:`q = \det M =
(2p^2 - \mathrm{Tr}(M^4))/4 = t_1^2t_2^2` (Newton's identities; ledger ``vp.gram_exp_closed_quartic``). Every
polynomial in :math:`M` reduces to degree 3, in the ring :math:`\mathbb{R}[z]/(z^4 + pz^2 + q)`, and
:math:`\exp(M) = \sum_i c_i(p, q)M^i` with :math:`c_i` entire in :math:`(p, q)`: the divided differences of
:math:`\cos\sqrt s` and :math:`\sin\sqrt s/\sqrt s` at :math:`s = t_1^2, t_2^2`, which lose digits in their
trigonometric forms when :math:`t_1 \approx t_2` and when :math:`t_2 \approx 0` (a rank-deficient ``x``).

They are computed instead with no division at all, by scaling and squaring in that ring: with the smallest
:math:`s \ge 0` such that :math:`p' = p/4^s \le 1/16` (so both :math:`t_i/2^s \le 1/4`), the coefficients of
:math:`\exp(M/2^s)` in powers of :math:`M/2^s` are the Taylor polynomial of degree 12 evaluated by Horner's scheme
in the ring of :math:`(p', q/16^s)` (multiplication by ``z`` is a shift and :math:`z^4 = -p'z^2 - q'`; truncation
below :math:`0.25^{13}/13! < 10^{-17}`); they are rescaled to powers of ``M``
(:math:`c_i/2^{si}`) and squared ``s`` times in the ring of :math:`(p, q)`. The derivatives in ``p`` and ``q``,
which the backward needs, are carried through the same steps (forward-mode, exact rules for the product and the
reduction), so the coefficients are smooth at :math:`t_1 = t_2` and at :math:`q = 0` by construction. Each sample
squares its own ``s`` times (the others keep their values), and every step is elementwise, so no sample's
coefficients depend on the batch.
"""

from __future__ import annotations


import torch

__all__ = ["exp4_coefficients", "ring_mul", "TAYLOR_DEGREE", "SCALED_MAX_P"]

#: the degree of the Taylor polynomial of exp evaluated at the scaled M
TAYLOR_DEGREE = 12
#: p is scaled by 4^-s below this bound before the Taylor polynomial
SCALED_MAX_P = 1 / 16


def _taylor(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``(3, 4, *p.shape)``: the reduced Taylor coefficients and their derivatives in ``p`` and ``q``, by Horner's
    scheme in the ring (multiplication by ``z``: a shift, with :math:`z^4 = -q - pz^2`)."""
    zero = torch.zeros_like(p)
    k4 = torch.stack([-q, zero, -p, zero])          # z^4 in the basis 1, z, z^2, z^3
    v = p.new_zeros((3, 4) + p.shape)
    v[0, 0] = 1.0
    for k in range(TAYLOR_DEGREE, 0, -1):
        top = v[:, 3:4]                                 # the coefficients of z^3, which z sends to z^4
        new = torch.cat([torch.zeros_like(top), v[:, :3]], dim=1).addcmul_(k4, top)
        new[1, 2].sub_(v[0, 3])                         # d(-p a3)/dp
        new[2, 0].sub_(v[0, 3])                         # d(-q a3)/dq
        v = new.div_(k)
        v[0, 0] += 1.0
    return v


def _ring(p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The reduction of :math:`z^4, z^5, z^6` in the basis ``1, z, z^2, z^3`` (``(4, ...)`` each) and their
    derivatives in ``p`` and ``q``."""
    zero, one = torch.zeros_like(p), torch.ones_like(p)
    k = (torch.stack([-q, zero, -p, zero]), torch.stack([zero, -q, zero, -p]),
         torch.stack([p * q, zero, p * p - q, zero]))
    kp = (torch.stack([zero, zero, -one, zero]), torch.stack([zero, zero, zero, -one]),
          torch.stack([q, zero, 2 * p, zero]))
    kq = (torch.stack([-one, zero, zero, zero]), torch.stack([zero, -one, zero, zero]),
          torch.stack([p, zero, -one, zero]))
    return k, kp, kq


def _conv(a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``(..., 7, B)``: the product of ``a`` (``(4, B)``) with each polynomial of ``v`` (``(..., 4, B)``)."""
    w = v.new_zeros(v.shape[:-2] + (7,) + v.shape[-1:])
    for i in range(4):
        w[..., i:i + 4, :].addcmul_(v, a[i])
    return w


def _reduce(w: torch.Tensor, k: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """``w_0 + ... + w_6 z^6`` (``(..., 7, B)``) modulo the characteristic polynomial (``k``: from :func:`_ring`)."""
    out = w[..., :4, :].clone()
    for j in range(3):
        out.addcmul_(k[j], w[..., 4 + j:5 + j, :])
    return out


def ring_mul(a: torch.Tensor, b: torch.Tensor, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r"""The product of :math:`\sum_i a_iM^i` and :math:`\sum_i b_iM^i` in the basis :math:`I, M, M^2, M^3` when
    :math:`M^4 + pM^2 + qI = 0`.

    Parameters
    ----------
    a, b : Tensor ``(4, B)``
        coefficients in the first index
    p, q : Tensor ``(B,)``
        the coefficients of the characteristic polynomial

    Returns
    -------
    Tensor ``(4, B)``
    """
    return _reduce(_conv(a, b), _ring(p, q)[0])


def _square(v: torch.Tensor, ring: tuple) -> torch.Tensor:
    """One squaring of ``v = (c, dc/dp, dc/dq)`` (``(3, 4, B)``) in the ring of ``(p, q)``."""
    k, kp, kq = ring
    w = _conv(v[0], v)
    out = _reduce(w, k)
    out[1:].mul_(2)  # d(c^2) = 2 c dc, reduced
    w0 = w[0]
    for j in range(3):  # the reduction's own derivative at the coefficients of c^2
        out[1].addcmul_(kp[j], w0[4 + j:5 + j])
        out[2].addcmul_(kq[j], w0[4 + j:5 + j])
    return out


def exp4_coefficients(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r""":math:`c_i` of :math:`\exp(M) = \sum_{i<4} c_iM^i` when :math:`M^4 + pM^2 + qI = 0`, and their derivatives.

    Scaling and squaring in the ring :math:`\mathbb{R}[z]/(z^4 + pz^2 + q)` (Note [closed-form exponential at
    d = 4]): no division, so the values are smooth where :math:`t_1 = t_2` or :math:`q = 0`. Elementwise in
    ``p`` and ``q``: a sample's coefficients depend on its own ``p``, ``q`` only.

    Parameters
    ----------
    p : Tensor
        :math:`-\mathrm{Tr}(M^2)/2` (float64, ``>= 0`` up to rounding)
    q : Tensor
        :math:`\det M` (float64, ``p``'s shape)

    Returns
    -------
    Tensor ``(3, 4, *p.shape)``
        ``[c, dc/dp, dc/dq]``, each ``(4, *p.shape)`` indexed by the power of ``M``

    Examples
    --------
    >>> c = exp4_coefficients(torch.tensor([0.0], dtype=torch.float64), torch.tensor([0.0], dtype=torch.float64))
    >>> [round(v, 12) for v in c[0, :, 0].tolist()]   # exp of a nilpotent M: I + M + M^2/2 + M^3/6
    [1.0, 1.0, 0.5, 0.166666666667]
    """
    finite = torch.isfinite(p) & torch.isfinite(q)
    pf = torch.where(finite, p, torch.zeros_like(p)).clamp_min(0)
    qf = torch.where(finite, q, torch.zeros_like(q))
    # s >= 0 with p / 4^s <= SCALED_MAX_P: from log2, then one exact correction (ldexp scales by powers of two)
    s = (pf / SCALED_MAX_P).log2().mul_(0.5).ceil_().clamp_min_(0).to(torch.int64)
    s = s + (torch.ldexp(pf, -2 * s) > SCALED_MAX_P).to(torch.int64)
    ps, qs = torch.ldexp(pf, -2 * s), torch.ldexp(qf, -4 * s)
    v = _taylor(ps, qs)
    # back to powers of M: c_i / 2^(s i); the derivatives also by d(p')/dp = 4^-s, d(q')/dq = 16^-s
    powers = torch.stack([torch.ldexp(torch.ones_like(pf), -i * s) for i in range(4)])
    v = v * powers
    v[1] = torch.ldexp(v[1], -2 * s)
    v[2] = torch.ldexp(v[2], -4 * s)
    steps = int(s.max()) if s.numel() else 0
    ring = _ring(pf, qf)
    every = int(s.min()) if s.numel() else 0  # squarings every sample takes: no selection needed
    for k in range(steps):
        v = _square(v, ring) if k < every else torch.where(k < s, _square(v, ring), v)
    return torch.where(finite, v, torch.full_like(v, float("nan")))
