r"""The float64 route of ``exp_skew``: the batched scaling and squaring of :mod:`geoattn.kernels._taylor_exp`.

Note [exp_skew in float64]
--------------------------
Under ``method="auto"`` a float64 CPU input of size :math:`T \ge` ``MIN_T`` takes :func:`exp_skew_batched`: per sample
the algorithm of the native exponential stage (Note [batched Taylor exponential]: the least ``s`` with
:math:`\min(\|2^{-s}S\|_1, \|2^{-s}S\|_F) \le \theta = 49/64`, the degree-16 Taylor polynomial by
Paterson--Stockmeyer, ``s`` squarings, and the exact reverse mode of the computed result), so the ledger's
``vp.gram_exp_native_truncation`` and ``vp.gram_exp_native_reverse`` cover it as they cover that stage. Against
the ``taylor`` path it replaces (``max(\|S\|_1, \|S\|_\infty) \le 1/2``, one Newton--Schulz step past three
squarings) it takes one squaring fewer at the norms of random skew matrices (the Frobenius norm and the larger
:math:`\theta`), no polishing step below norm ``8 T``, products into preallocated buffers and no work for a
sample past its own ``s`` (the batch is ordered by ``s``). The backward returns the same gradient as the
``taylor`` path: the adjoint of the Frechet derivative, not projected on skew matrices (as
``torch.linalg.matrix_exp`` with autograd).

The per-sample decisions of ``taylor-or-eigh`` are kept: a sample of :math:`\max(\|S\|_1, \|S\|_\infty) >`
``TAYLOR_MAX_NORM`` takes the eigendecomposition (Note [large norms]); a non-finite sample gets NaN in its result and
its gradient and reaches no other sample. The orthogonality defect grows with the norm through the squarings:
measured at 4,096 samples scaled to :math:`\max(\|S\|_1, \|S\|_\infty) = fT`, its largest value was 9-19 T eps at
f = 8 and 18-41 T eps at f = 16 (T = 2 to 16 and 32; 41 at T = 4), and 104 T eps at T = 8, norm 511, past the
``64 T eps`` bar. A sample of norm above ``POLISH_PER_T T = 8 T`` therefore gets one Newton--Schulz step, which
squares its defect (measured after it: at most 1 T eps); the backward treats that step as the identity, an error
of the size of the defect it removes (as the ``taylor`` path does past three squarings). Of the benchmark's
4,096 random skew matrices with entries 3 times unit-normal, none takes the step at T >= 8 and one or two at
T = 3, 4. A graph of the backward
(``create_graph``) takes the block-exponential identity of Note [exp_skew backward].

Measured on one thread, B = 4096, unit-normal skew entries times 0.1, 1 and 3, forward+backward against
``torch.linalg.matrix_exp`` and autograd, alternating in one run (median of three), on a machine shared with other
work (load 5-10 on two cores; benchmarks/results/exp-skew-f64-cpu.txt): dense gradient 0.22-0.29 (T = 8),
0.23-0.28 (12), 0.20-0.25 (16), 0.24-0.35 (32); ``out.sum()`` 0.19-0.36; the previous default at T = 32 measured
0.53-0.71 on a quiet machine, and this route took 0.49-0.56 of its time in an A/B run. The forward alone is about
as fast as ``matrix_exp``'s (0.86-1.06): the gain is the backward, which reuses the forward's record instead of a
``2T x 2T`` exponential. Against the previous default in an A/B run (B = 4096, forward+backward): 0.74-0.88
(T = 2), 0.72-0.91 (3), 0.61-0.80 (4), 0.75-0.81 (6), 0.49-0.56 (32).
"""

from __future__ import annotations

import torch

from ._exp import TAYLOR_MAX_NORM, _ExpSkewEigh, _exp_frechet_adjoint, _norms
from ._functions import _newton_schulz, _under_functorch, merge_samples
from ._taylor_exp import taylor_exp, taylor_exp_adjoint

__all__ = ["MIN_T", "POLISH_PER_T", "exp_skew_batched"]

#: the least size the float64 route serves (``T = 1`` keeps the ``taylor-or-eigh`` route: nothing to gain)
MIN_T = 2
#: samples of max(||S||_1, ||S||_inf) above this times T get one Newton--Schulz step (Note [exp_skew in float64])
POLISH_PER_T = 8


class _ExpSkewBatched(torch.autograd.Function):
    """``exp(S)`` of ``(n, T, T)`` float64 ``S`` by :func:`taylor_exp`; backward :func:`taylor_exp_adjoint`."""

    @staticmethod
    def forward(ctx, s, polish):
        t = taylor_exp(s)
        e, t.E = t.E, None  # the record keeps no reference to the output (no cycle through ctx)
        ctx.record = t
        ctx.save_for_backward(s)
        if bool(polish.any()):
            idx = polish.nonzero().squeeze(-1)
            e = e.index_copy(0, idx, _newton_schulz(e[idx]))
        if bool(t.failed.any()):
            e = torch.where(t.failed[:, None, None], torch.full((), float("nan"), dtype=e.dtype, device=e.device), e)
        return e

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(grad):  # a graph of the backward, or a batched gradient
            return _exp_frechet_adjoint(s, grad), None
        t = ctx.record
        g = taylor_exp_adjoint(t, grad.contiguous())
        if bool(t.failed.any()):
            g = torch.where(t.failed[:, None, None], torch.full((), float("nan"), dtype=g.dtype, device=g.device), g)
        return g, None


def exp_skew_batched(S: torch.Tensor) -> torch.Tensor:
    r""":math:`\exp(S)` of float64 skew ``S`` per sample (Note [exp_skew in float64]): the batched Taylor scheme
    up to ``TAYLOR_MAX_NORM``, the eigendecomposition above.

    Parameters
    ----------
    S : Tensor ``(..., T, T)``, float64, skew-symmetric (not checked here)

    Returns
    -------
    Tensor ``(..., T, T)``
        the exponentials; NaN for a sample with a non-finite entry

    Examples
    --------
    >>> S = torch.randn(3, 8, 8, dtype=torch.float64); S = S - S.mT
    >>> torch.allclose(exp_skew_batched(S), torch.linalg.matrix_exp(S))
    True
    """
    if S.dtype != torch.float64 or S.dim() < 2 or S.shape[-1] != S.shape[-2]:
        raise ValueError(f"Expected a float64 tensor of shape (..., T, T). Got {S.dtype} of shape {tuple(S.shape)}.")
    shape = S.shape
    flat = S.reshape(-1, *shape[-2:])
    norm = _norms(flat)
    big = torch.isfinite(norm) & (norm > TAYLOR_MAX_NORM)
    polish = torch.isfinite(norm) & (norm > POLISH_PER_T * shape[-1])
    if not bool(big.any()):
        return _ExpSkewBatched.apply(flat, polish).reshape(shape)
    if bool(big.all()):
        return _ExpSkewEigh.apply(flat)[0].reshape(shape)
    small_idx, big_idx = (~big).nonzero().squeeze(-1), big.nonzero().squeeze(-1)
    return merge_samples(small_idx, _ExpSkewBatched.apply(flat[small_idx], polish[small_idx]), big_idx,
                         _ExpSkewEigh.apply(flat[big_idx])[0]).reshape(shape)
