r"""LU factorisation with partial pivoting of a batch of small ``d x d`` matrices, in the structure-of-arrays
layout, and the solves with :math:`M` and :math:`M^T` that reuse its factors.

Note [structure-of-arrays LU]
-----------------------------
A batched LAPACK call (``torch.linalg.solve``, ``lu_factor``) factors one matrix after another, and for a
``d x d`` matrix with small ``d`` the fixed cost of each call (a few microseconds) dwarfs its :math:`2d^3/3`
flops. Here the matrices are stored as ``(d, d, B)`` with the batch innermost and contiguous, and the
factorisation is a loop over the ``d`` columns in which every step is a handful of vectorised operations over
all ``B`` samples at once:

1. the pivot row of column ``k``: per sample, the row ``p >= k`` of largest :math:`|M_{pk}|` (``argmax`` over
   the rows, ``p`` of shape ``(B,)``);
2. rows ``k`` and ``p`` swapped per sample (a ``gather`` of row ``p`` and a ``scatter`` of row ``k``; samples with
   ``p = k`` write their row back unchanged), and the same swap recorded in the permutation ``perm``;
3. the multipliers :math:`L_{ik} = M_{ik} / M_{kk}` for ``i > k`` and the rank-one update
   :math:`M_{ij} \mathrel{-}= L_{ik}M_{kj}` of the trailing block, one ``addcmul_`` over ``(d-k-1, d-k-1, B)``.

The result satisfies :math:`M_{\mathrm{perm}[i], :} = (LU)_{i, :}` with ``L`` unit lower and ``U`` upper
triangular, stored in one array as LAPACK's ``getrf`` stores them. The same operations run for every sample
whatever its data, so a sample's result never depends on its batch, and a sample with a NaN (or a zero pivot)
gives NaN or infinities in its own slice only.

From :math:`PM = LU`, :math:`M = P^TLU` and :math:`M^T = U^TL^TP`: a solve with :math:`M` permutes the
right-hand side, then substitutes forward with ``L`` and backward with ``U``; a solve with :math:`M^T`
substitutes forward with :math:`U^T`, backward with :math:`L^T` and applies :math:`P^T` last. Each substitution
is ``d`` steps of one ``addcmul_`` over all right-hand sides and samples.
"""

from __future__ import annotations

import torch

from ..errors import ShapeError

__all__ = ["soa_lu", "soa_lu_solve", "batched_solve"]


def _check_soa_square(name: str, M: torch.Tensor) -> None:
    if M.dim() != 3 or M.shape[0] != M.shape[1]:
        raise ShapeError(f"Expected {name} of shape (d, d, B) (structure of arrays). Got shape {tuple(M.shape)}.")


def soa_lu(M: torch.Tensor, pivot: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    r"""LU factorisation with partial pivoting of ``B`` matrices stored as ``(d, d, B)``.

    Parameters
    ----------
    M : Tensor ``(d, d, B)``
        the matrices, batch innermost (Note [structure-of-arrays LU]); not modified.
    pivot : bool
        partial pivoting (default); False eliminates without row exchanges, which fails on a zero leading entry
        and loses accuracy on small ones (kept for comparisons and the tests' negative controls).

    Returns
    -------
    LU : Tensor ``(d, d, B)`` (a view of a ``(d, d + 1, B)`` array)
        the unit lower factor ``L`` below the diagonal and the upper factor ``U`` on and above it.
    perm : Tensor ``(d, B)``, int64
        the row permutation: :math:`M_{\mathrm{perm}[i], :} = (LU)_{i, :}` per sample.
    """
    _check_soa_square("M", M)
    d, _, B = M.shape
    # the row index rides along as an extra column, so one swap per step moves the row and its index
    LU = torch.empty(d, d + 1, B, dtype=M.dtype, device=M.device)
    LU[:, :d] = M
    LU[:, d] = torch.arange(d, dtype=M.dtype, device=M.device).view(d, 1)
    for k in range(d - 1):  # the last column has one row: nothing to choose or eliminate
        if not pivot:
            LU[k + 1:, k].div_(LU[k, k])
            LU[k + 1:, k + 1:d].addcmul_(LU[k + 1:, k:k + 1], LU[k:k + 1, k + 1:d], value=-1)
            continue
        p = LU[k:, k].abs().max(0).indices.add_(k)  # (B,): the pivot row (max(0) is faster than argmax(0))
        rows = p.view(1, 1, B).expand(1, d + 1, B)
        row_k = LU[k:k + 1].clone()
        LU[k:k + 1] = LU.gather(0, rows)
        LU.scatter_(0, rows, row_k)
        LU[k + 1:, k].div_(LU[k, k])
        LU[k + 1:, k + 1:d].addcmul_(LU[k + 1:, k:k + 1], LU[k:k + 1, k + 1:d], value=-1)
    perm = LU[:, d].to(torch.int64)
    LU = LU[:, :d]
    return LU, perm


def soa_lu_solve(LU: torch.Tensor, perm: torch.Tensor, rhs: torch.Tensor, transpose: bool = False) -> torch.Tensor:
    r"""Solve :math:`MX = R` (or :math:`M^TX = R` with ``transpose=True``) from the factors of :func:`soa_lu`.

    Parameters
    ----------
    LU, perm : Tensors ``(d, d, B)`` and ``(d, B)``
        the factors of ``M`` returned by :func:`soa_lu`.
    rhs : Tensor ``(d, r, B)``
        ``r`` right-hand sides per sample, batch innermost; not modified.
    transpose : bool
        solve with :math:`M^T = U^TL^TP` instead of :math:`M = P^TLU` (Note [structure-of-arrays LU]).

    Returns
    -------
    Tensor ``(d, r, B)``
        the solutions ``X``.
    """
    _check_soa_square("LU", LU)
    d, _, B = LU.shape
    if rhs.dim() != 3 or rhs.shape[0] != d or rhs.shape[2] != B:
        raise ShapeError(f"Expected rhs of shape ({d}, r, {B}) to match LU of shape {tuple(LU.shape)}. "
                         f"Got shape {tuple(rhs.shape)}.")
    r = rhs.shape[1]
    rows = perm.view(d, 1, B).expand(d, r, B)
    if not transpose:
        X = rhs.gather(0, rows)  # row i of P R is row perm[i] of R
        for k in range(d - 1):  # L X = P R, L unit lower
            X[k + 1:].addcmul_(LU[k + 1:, k:k + 1], X[k:k + 1], value=-1)
        for k in range(d - 1, -1, -1):  # U X = ., U upper
            X[k].div_(LU[k, k])
            if k:
                X[:k].addcmul_(LU[:k, k:k + 1], X[k:k + 1], value=-1)
        return X
    Z = rhs.contiguous().clone()
    for k in range(d):  # U^T Z = R, U^T lower: (U^T)_{ik} = U_{ki}
        Z[k].div_(LU[k, k])
        if k < d - 1:
            Z[k + 1:].addcmul_(LU[k, k + 1:].unsqueeze(1), Z[k:k + 1], value=-1)
    for k in range(d - 1, 0, -1):  # L^T Z = ., L^T unit upper: (L^T)_{ik} = L_{ki}
        Z[:k].addcmul_(LU[k, :k].unsqueeze(1), Z[k:k + 1], value=-1)
    return torch.empty_like(Z).scatter_(0, rows, Z)  # P X = Z: row perm[i] of X is row i of Z


def batched_solve(M: torch.Tensor, rhs: torch.Tensor, transpose: bool = False) -> torch.Tensor:
    r"""Solve :math:`MX = R` (or :math:`M^TX = R`) for a batch of small matrices in the usual layout, by
    :func:`soa_lu` and :func:`soa_lu_solve` (Note [structure-of-arrays LU]).

    Parameters
    ----------
    M : Tensor ``(..., d, d)``
    rhs : Tensor ``(..., d, r)``, of ``M``'s batch shape, dtype and device
    transpose : bool
        solve with :math:`M^T`.

    Returns
    -------
    Tensor ``(..., d, r)``
    """
    if M.dim() < 2 or M.shape[-1] != M.shape[-2]:
        raise ShapeError(f"Expected M of shape (..., d, d). Got shape {tuple(M.shape)}.")
    if rhs.shape[:-1] != M.shape[:-1]:
        raise ShapeError(f"Expected rhs of shape {tuple(M.shape[:-1])} + (r,) to match M of shape "
                         f"{tuple(M.shape)}. Got shape {tuple(rhs.shape)}.")
    d, r = M.shape[-1], rhs.shape[-1]
    Ms = M.reshape(-1, d, d).permute(1, 2, 0)
    Rs = rhs.reshape(-1, d, r).permute(1, 2, 0)
    LU, perm = soa_lu(Ms)
    X = soa_lu_solve(LU, perm, Rs, transpose)
    return X.permute(2, 0, 1).reshape(rhs.shape)
