r"""Batched scaling and squaring of a Taylor polynomial, and its reverse mode, for ``(n, d, d)`` float64 matrices.

Note [batched Taylor exponential]
---------------------------------
The algorithm of the native exponential kernels (:mod:`geoattn.codegen.gram_exp_c`), written with batched products
(``torch.bmm`` / ``baddbmm``, whose batched GEMM is efficient at ``d >= 32``), so the same ledger claims cover it:

* per sample, :math:`X = 2^{-s}M` with the least ``s >= 0`` such that :math:`\min(\|X\|_1, \|X\|_F) \le`
  ``THETA`` ``= 49/64`` (both norms submultiplicative), the Taylor polynomial of degree ``DEGREE = 16`` of
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

Measured (benchmarks/results/gram-exp-taylor-ab-cpu.txt: the layer ``VolumePreservingAttention(d, activation="exp")``
of the previous form and of this one alternating, one thread, float32, B*T = 65,536 unit-normal tokens,
forward+backward with a dense gradient against SDPA in the same run, two runs on a shared and heavily loaded
two-core machine): d = 32, T = 64: 18.5-22.4x -> 6.2-11.4x; d = 32, T = 256: 1.9-2.2x -> 0.92-1.15x;
d = 64, T = 256: 5.9-6.0x -> 1.9-2.3x. Each sample takes s = 7 (T = 64) or 9 (T = 256) squarings there, the same
for the whole batch, so no reordering happened. Products into preallocated buffers (``out=``, ``baddbmm_``) measured
1.1-1.4 ms per ``(1024, 32, 32)`` float64 product against 4-9 ms for ``torch.bmm`` returning a fresh tensor (the
first touch of fresh memory is part of it); the forward keeps ``(s + 9) d^2`` doubles per sample for the backward.
"""

from __future__ import annotations

import math

import torch

__all__ = ["THETA", "DEGREE", "BLOCKS", "SMAX", "TaylorExp", "shifts", "taylor_exp", "taylor_exp_adjoint"]

#: the scaled matrix's norm bound, the Taylor degree, the Paterson--Stockmeyer block length and the most squarings
#: (those of geoattn.codegen.gram_exp_c: a test keeps them equal)
THETA, DEGREE, BLOCKS, SMAX = 49 / 64, 16, 4, 40
_STEPS = -(-(DEGREE + 1) // BLOCKS)
_COEF = [1.0 / math.factorial(k) if k <= DEGREE else 0.0 for k in range(BLOCKS * _STEPS)]


def _coefficients(dtype: torch.dtype, device=None) -> torch.Tensor:
    """The Taylor coefficients as a ``(steps, BLOCKS)`` matrix: row ``j`` holds ``c_(BLOCKS j + i)``."""
    return torch.tensor(_COEF, dtype=dtype, device=device).view(_STEPS, BLOCKS)


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


def shifts(M: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The least ``s >= 0`` with ``min(|M|_1, |M|_F) <= THETA 2^s`` per sample, and the samples that fail.

    Parameters
    ----------
    M : Tensor ``(n, d, d)``

    Returns
    -------
    (Tensor ``(n,)`` of int, Tensor ``(n,)`` of bool)
        ``s`` (zero for failed samples) and the samples with a non-finite norm or more than ``SMAX`` squarings
    """
    one = M.abs().sum(-2).amax(-1)
    nrm = torch.minimum(one, M.square().sum((-2, -1)).sqrt())
    nrm = torch.where(torch.isnan(one), one, nrm)
    mant, expo = torch.frexp(nrm / THETA)   # nrm = mant 2^expo, 0.5 <= mant < 1: least s is expo, or expo - 1 at 0.5
    s = (expo - (mant == 0.5).to(expo.dtype)).clamp_min(0)
    failed = ~torch.isfinite(nrm) | (s > SMAX)
    return torch.where(failed, torch.zeros_like(s), s), failed


def taylor_exp(M: torch.Tensor) -> TaylorExp:
    r""":math:`\exp(M)` per sample by scaling and squaring of the degree-16 Taylor polynomial (Note [batched Taylor
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
    s, failed = shifts(M)
    if bool(failed.any()):
        M = torch.where(failed[:, None, None], torch.zeros((), dtype=M.dtype, device=M.device), M)
    order = inverse = None
    if s.numel() and bool((s != s[0]).any()):
        order = torch.argsort(s, descending=True, stable=True)
        inverse = torch.argsort(order)
        M, s = M[order], s[order]
    top = int(s.max()) if s.numel() else 0
    counts = [int(c) for c in (s[None, :] > torch.arange(top)[:, None]).sum(1)] if top else []
    n, d = M.shape[0], M.shape[-1]
    # every product writes into a preallocated buffer (out= or in place): measured faster than fresh results
    P = torch.empty(BLOCKS, n, d, d, dtype=M.dtype, device=M.device)
    torch.mul(M, torch.ldexp(torch.ones((), dtype=M.dtype, device=M.device), -s.to(M.dtype))[:, None, None], out=P[0])
    for k in range(1, BLOCKS):
        torch.bmm(P[k - 1], P[0], out=P[k])
    # B_j = sum_i c_(4j+i) X^i for every j in one product of the coefficients with the stacked powers, then the
    # Horner steps S_j = S_(j+1) X^4 + B_j in place
    H = torch.empty(_STEPS, n, d, d, dtype=M.dtype, device=M.device)
    for j in range(_STEPS):
        c = _COEF[BLOCKS * j:BLOCKS * (j + 1)]
        torch.mul(P[0], c[1], out=H[j])
        for i in range(2, BLOCKS):
            if c[i]:
                H[j].add_(P[i - 1], alpha=c[i])
    H.diagonal(dim1=-2, dim2=-1).add_(_coefficients(M.dtype, M.device)[:, :1, None])
    for j in range(_STEPS - 2, -1, -1):
        H[j].baddbmm_(H[j + 1], P[-1])
    Y = torch.empty(top, n, d, d, dtype=M.dtype, device=M.device) if top else None
    squares = [H[0]] + ([Y[k] for k in range(top)] if top else [])
    for k, m in enumerate(counts):
        torch.bmm(squares[k][:m], squares[k][:m], out=squares[k + 1][:m])
        if m < n:
            squares[k + 1][m:].copy_(squares[k][m:])
    E = squares[-1]
    squares = squares[:-1]
    E = E if inverse is None else E[inverse]
    powers, horner = P, H
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
    gY = (gE if t.order is None else gE[t.order]).clone()
    W = torch.empty_like(gY)
    n = gY.shape[0]
    for k in range(len(t.counts) - 1, -1, -1):
        m, Yk = t.counts[k], t.squares[k][:t.counts[k]]
        torch.bmm(gY[:m], Yk if drop_square_transpose else Yk.mT, out=W[:m])
        W[:m].baddbmm_(Yk.mT, gY[:m])
        if m < n:
            W[m:].copy_(gY[m:])
        gY, W = W, gY
    P, H = t.powers, t.horner
    # the Horner steps, first first: (X^i)bar += c_(4j+i) Sbar_j, (X^4)bar += S_(j+1)^T Sbar_j and
    # Sbar_(j+1) = Sbar_j (X^4)^T (Sbar alternates between gY and W)
    gP = torch.empty_like(P)
    for j in range(_STEPS):
        c = _COEF[BLOCKS * j:BLOCKS * (j + 1)]
        for i in range(1, BLOCKS):
            if j == 0:
                torch.mul(gY, c[i], out=gP[i - 1])
            elif c[i]:
                gP[i - 1].add_(gY, alpha=c[i])
        if j == _STEPS - 1:
            break
        if j == 0:
            torch.bmm(H[1].mT, gY, out=gP[-1])
        else:
            gP[-1].baddbmm_(H[j + 1].mT, gY)
        torch.bmm(gY, P[-1].mT, out=W)
        gY, W = W, gY
    X = P[0]
    for k in range(BLOCKS - 1, 0, -1):   # X^(k+1) = X^k X: the gradient of power k + 1 is gP[k]
        gP[k - 1].baddbmm_(gP[k], X.mT)
        gP[0].baddbmm_(P[k - 1].mT, gP[k])
    gP = gP[0]
    gM = gP.mul_(torch.ldexp(torch.ones((), dtype=gP.dtype, device=gP.device), -t.shift.to(gP.dtype))[:, None, None])
    gM = gM if t.inverse is None else gM[t.inverse]
    if bool(t.failed.any()):
        gM = torch.where(t.failed[:, None, None], torch.zeros((), dtype=gM.dtype, device=gM.device), gM)
    return gM
