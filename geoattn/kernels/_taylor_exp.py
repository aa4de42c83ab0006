r"""Batched scaling and squaring of a Taylor polynomial, and its reverse mode, for ``(n, d, d)`` float64 matrices.

Note [batched Taylor exponential]
---------------------------------
The algorithm of the native exponential kernels (:mod:`geoattn.codegen.gram_exp_c`), written with batched products
(``torch.bmm`` / ``baddbmm``, whose batched GEMM is efficient at ``d >= 32``), so the same ledger claims cover it:

* per sample, :math:`X = 2^{-s}M` with the least ``s >= 0`` such that :math:`\min(\|X\|_1, \|X\|_F) \le`
  ``THETA`` ``= 1`` (both norms submultiplicative), the Taylor polynomial of degree ``DEGREE = 18`` of
  :math:`\exp(X)` by Paterson--Stockmeyer (powers :math:`X^2, X^3, X^4`, then five Horner steps
  :math:`S_j = S_{j+1}X^4 + B_j`, :math:`B_j = \sum_{i<4} c_{4j+i}X^i`, :math:`c_k = 1/k!` up to the degree and
  zero past it), then ``s`` squarings (ledger ``vp.gram_exp_native_truncation``: after scaling, the truncation
  relative to the result is below float64's unit roundoff);
* the reverse mode applies the adjoint rules of ``vp.gram_exp_native_reverse`` in reverse order:
  :math:`\bar X = \bar YX^T + X^T\bar Y` for a squaring :math:`Y = X^2`, :math:`\bar S_{j+1} = \bar S_jX^{4T}`,
  :math:`\overline{X^4} \mathrel{+}= S_{j+1}^T\bar S_j`, :math:`\overline{X^i} \mathrel{+}= c_{4j+i}\bar S_j` for
  the Horner steps, the powers :math:`X^k = X^{k-1}X` last first, and :math:`\bar M = 2^{-s}\bar X`. It is the exact
  gradient of the computed ``E`` (not of the exact exponential; they differ by the truncation).

Per-sample ``s``: the samples are ordered by decreasing ``s`` (no reordering when all are equal, the usual case of
one layer's batch), so the samples that still square at step ``k`` are a leading slice and every product acts on a
view, with no work for a sample past its own ``s`` and no copy. The forward keeps what its reverse mode needs: the
powers, the Horner iterates and the input of every squaring (``s d^2`` doubles per sample). A sample whose norm is
not finite, or that needs more than ``SMAX`` squarings, is computed as a zero matrix (``s = 0``) and reported as
failed, so it costs nothing and reaches no other sample.
"""

from __future__ import annotations

import math

import torch

__all__ = ["THETA", "DEGREE", "BLOCKS", "SMAX", "TaylorExp", "taylor_exp", "taylor_exp_adjoint"]

#: the scaled matrix's norm bound, the Taylor degree, the Paterson--Stockmeyer block length and the most squarings
#: (those of geoattn.codegen.gram_exp_c: a test keeps them equal)
THETA, DEGREE, BLOCKS, SMAX = 1, 18, 4, 40
_STEPS = -(-(DEGREE + 1) // BLOCKS)
_COEF = [1.0 / math.factorial(k) if k <= DEGREE else 0.0 for k in range(BLOCKS * _STEPS)]


class TaylorExp:
    """What :func:`taylor_exp` computed and its reverse mode needs.

    Attributes
    ----------
    E : Tensor ``(n, d, d)``
        the exponentials, in the input's order
    failed : Tensor ``(n,)`` of bool
        samples with a non-finite norm or more than ``SMAX`` squarings (their ``E`` is the identity)
    """

    def __init__(self, E, failed, order, inverse, shift, counts, powers, horner, squares):
        self.E, self.failed = E, failed
        self.order, self.inverse, self.shift = order, inverse, shift
        self.counts, self.powers, self.horner, self.squares = counts, powers, horner, squares


def _shifts(M: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The least ``s >= 0`` with ``min(|M|_1, |M|_F) <= THETA 2^s`` per sample, and the samples that fail."""
    one = M.abs().sum(-2).amax(-1)
    nrm = torch.minimum(one, M.square().sum((-2, -1)).sqrt())
    nrm = torch.where(torch.isnan(one), one, nrm)
    mant, expo = torch.frexp(nrm / THETA)   # nrm = mant 2^expo, 0.5 <= mant < 1: least s is expo, or expo - 1 at 0.5
    s = (expo - (mant == 0.5).to(expo.dtype)).clamp_min(0)
    failed = ~torch.isfinite(nrm) | (s > SMAX)
    return torch.where(failed, torch.zeros_like(s), s), failed


def taylor_exp(M: torch.Tensor) -> TaylorExp:
    r""":math:`\exp(M)` per sample by scaling and squaring of the degree-18 Taylor polynomial (Note [batched Taylor
    exponential]).

    Parameters
    ----------
    M : Tensor ``(n, d, d)``, float64

    Returns
    -------
    TaylorExp
        ``E`` (the exponentials), ``failed`` and what :func:`taylor_exp_adjoint` needs.

    Examples
    --------
    >>> M = torch.randn(5, 6, 6, dtype=torch.float64)
    >>> torch.allclose(taylor_exp(M).E, torch.linalg.matrix_exp(M))
    True
    """
    if M.dim() != 3 or M.shape[-1] != M.shape[-2] or M.dtype != torch.float64:
        raise ValueError(f"Expected a float64 tensor of shape (n, d, d). Got {M.dtype} of shape {tuple(M.shape)}.")
    s, failed = _shifts(M)
    M = torch.where(failed[:, None, None], torch.zeros((), dtype=M.dtype), M)
    order = inverse = None
    if s.numel() and bool((s != s[0]).any()):
        order = torch.argsort(s, descending=True, stable=True)
        inverse = torch.argsort(order)
        M, s = M[order], s[order]
    top = int(s.max()) if s.numel() else 0
    counts = [int(c) for c in (s[None, :] > torch.arange(top)[:, None]).sum(1)] if top else []
    X = torch.ldexp(M, (-s).to(M.dtype)[:, None, None])
    d = M.shape[-1]
    powers = [X]
    for _ in range(BLOCKS - 1):
        powers.append(torch.bmm(powers[-1], X))
    eye = torch.eye(d, dtype=M.dtype)
    horner = [None] * _STEPS
    for j in range(_STEPS - 1, -1, -1):
        c = _COEF[BLOCKS * j:BLOCKS * (j + 1)]
        B = powers[0] * c[1]
        for i in range(2, BLOCKS):
            B = B.add_(powers[i - 1], alpha=c[i])
        B = B.add_(eye, alpha=c[0])
        horner[j] = B if j == _STEPS - 1 else torch.baddbmm(B, horner[j + 1], powers[-1])
    Y, squares = horner[0], []
    for k, n in enumerate(counts):
        squares.append(Y[:n])
        Yn = torch.bmm(Y[:n], Y[:n])
        Y = Yn if n == Y.shape[0] else torch.cat([Yn, Y[n:]])
    E = Y if inverse is None else Y[inverse]
    return TaylorExp(E, failed, order, inverse, s, counts, powers, horner, squares)


def taylor_exp_adjoint(t: TaylorExp, gE: torch.Tensor, *, drop_square_transpose: bool = False) -> torch.Tensor:
    r"""The reverse mode of :func:`taylor_exp`: :math:`\bar M` from :math:`\bar E` (Note [batched Taylor
    exponential]; ledger ``vp.gram_exp_native_reverse``).

    Parameters
    ----------
    t : TaylorExp
        the forward's record
    gE : Tensor ``(n, d, d)``, float64
        the gradient in ``E``
    drop_square_transpose : bool
        apply :math:`\bar X = \bar YX + X^T\bar Y` to the squarings instead (a deliberately wrong rule, for the
        tests' negative control)

    Returns
    -------
    Tensor ``(n, d, d)``
        :math:`\bar M`, the exact gradient of the computed ``E`` (zero for failed samples)
    """
    gY = gE if t.order is None else gE[t.order]
    for k in range(len(t.counts) - 1, -1, -1):
        n, Yk = t.counts[k], t.squares[k]
        left = Yk if drop_square_transpose else Yk.mT
        g = torch.baddbmm(torch.bmm(gY[:n], left), Yk.mT, gY[:n])
        gY = g if n == gY.shape[0] else torch.cat([g, gY[n:]])
    X, X4 = t.powers[0], t.powers[-1]
    gP = [None] * BLOCKS
    for j in range(_STEPS):
        c = _COEF[BLOCKS * j:BLOCKS * (j + 1)]
        for i in range(1, BLOCKS):
            gP[i - 1] = gY * c[i] if gP[i - 1] is None else gP[i - 1].add_(gY, alpha=c[i])
        if j == _STEPS - 1:
            break
        upd = torch.bmm(t.horner[j + 1].mT, gY)
        gP[-1] = upd if gP[-1] is None else gP[-1].add_(upd)
        gY = torch.bmm(gY, X4.mT)
    for k in range(BLOCKS - 1, 0, -1):   # X^(k+1) = X^k X: the gradient of power k + 1 is gP[k]
        gP[k - 1] = torch.baddbmm(gP[k - 1], gP[k], X.mT)
        gP[0] = torch.baddbmm(gP[0], t.powers[k - 1].mT, gP[k])
    gM = torch.ldexp(gP[0], (-t.shift).to(gP[0].dtype)[:, None, None])
    gM = gM if t.inverse is None else gM[t.inverse]
    return torch.where(t.failed[:, None, None], torch.zeros((), dtype=gM.dtype), gM)
