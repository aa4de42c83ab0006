r"""Batched LAPACK solves whose result for a sample does not depend on its place in the batch.

Note [aligned batches]
----------------------
``torch.linalg.solve`` copies a batch of ``n x n`` matrices into one buffer and factors them one after another, the
matrix of sample ``i`` starting ``i n^2`` reals into it. On an AVX2 machine (torch 2.13 with MKL 2024.2, AMD EPYC),
for every odd ``n >= 17``, in float32 and float64, the solution of a sample depended on where its matrix lay: a
batch of nine gave, for some samples, results a few units in the last place away from the same sample solved
alone (``n = 17``: 1.5e-8 in float32), and every even ``n`` and every ``n <= 16`` gave the same bits (the LAPACK
kernels treat an aligned and a misaligned start differently). A layer's result must not depend on the rest of its
batch, so :func:`solve` pads each system with ``n > 16`` to a multiple of four, ``[[M, 0], [0, I]]`` with zero
right-hand-side rows: every matrix then starts at a multiple of 64 bytes from the buffer's start, and the padded
rows and columns take no part in the elimination (their entries in the first ``n`` columns are zero, so partial
pivoting never picks them, and their multipliers are zero). Measured on the same machine, every ``n`` from 2 to
69 then gave the same bits batched, one sample at a time, and from another place in the batch. The padding costs
at most ``((n + 3) / n)^3``, 1.6 at ``n = 17`` and 1.3 at ``n = 33``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["PAD_ABOVE", "PAD_TO", "padded_size", "solve", "solve_ex"]

#: systems of this size or less are solved as they are (no alignment dependence was seen at any of them)
PAD_ABOVE = 16
#: larger systems are padded to a multiple of this
PAD_TO = 4


def padded_size(n: int) -> int:
    """The size :func:`solve` factors an ``n x n`` system at (Note [aligned batches]).

    Examples
    --------
    >>> [padded_size(n) for n in (3, 16, 17, 20, 33)]
    [3, 16, 20, 20, 36]
    """
    return n if n <= PAD_ABOVE else -(-n // PAD_TO) * PAD_TO


def solve(A: torch.Tensor, B: torch.Tensor, *, left: bool = True) -> torch.Tensor:
    r"""``torch.linalg.solve(A, B, left=left)``, with every system of a batch factored at the same alignment.

    .. math::

        \begin{pmatrix} A & 0 \\ 0 & I \end{pmatrix}^{-1} \begin{pmatrix} B \\ 0 \end{pmatrix}
        = \begin{pmatrix} A^{-1}B \\ 0 \end{pmatrix}

    for ``A`` of size above :data:`PAD_ABOVE` (Note [aligned batches]); differentiable like the solve itself.

    Parameters
    ----------
    A : Tensor ``(..., n, n)``
    B : Tensor ``(..., n, k)`` (``left=True``) or ``(..., k, n)`` (``left=False``), or a batch of vectors
        ``(..., n)``
    left : bool
        solve ``A X = B`` (True) or ``X A = B`` (False)

    Returns
    -------
    Tensor, the shape of ``B``

    Examples
    --------
    >>> A = torch.randn(9, 17, 17, dtype=torch.float64) + 17 * torch.eye(17, dtype=torch.float64)
    >>> B = torch.randn(9, 17, 2, dtype=torch.float64)
    >>> torch.equal(solve(A, B)[4:], solve(A[4:], B[4:]))
    True
    """
    return _solve(torch.linalg.solve, A, B, left)


def solve_ex(A: torch.Tensor, B: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.linalg.solve_ex(A, B)`` (no error for a singular sample: its ``info`` is nonzero), with every
    system of a batch factored at the same alignment, as :func:`solve`.

    Parameters
    ----------
    A : Tensor ``(..., n, n)``
    B : Tensor ``(..., n, k)``

    Returns
    -------
    (Tensor, Tensor)
        the solution, the shape of ``B``, and LAPACK's ``info`` per system
    """
    return _solve(lambda a, b, left: torch.linalg.solve_ex(a, b), A, B, True, ex=True)


def _solve(fn, A, B, left, ex=False):
    n = A.shape[-1]
    p = padded_size(n) - n
    if p == 0:
        return fn(A, B, left=left)
    if B.dim() == A.dim() - 1:  # a batch of vectors (torch.linalg.solve's rule): one column
        out = _solve(fn, A, B.unsqueeze(-1 if left else -2), left, ex)
        return (out[0].squeeze(-1), out[1]) if ex else out.squeeze(-1 if left else -2)
    corner = torch.zeros(n + p, n + p, dtype=A.dtype, device=A.device)
    corner.diagonal()[n:] = 1
    Ap = F.pad(A, (0, p, 0, p)) + corner
    if left:
        out = fn(Ap, F.pad(B, (0, 0, 0, p)), left=True)
        return (out[0][..., :n, :], out[1]) if ex else out[..., :n, :]
    return fn(Ap, F.pad(B, (0, p)), left=False)[..., :n]
