r"""The arbitrary weighting of volume-preserving attention in linear time: a nested block solve.

Note [nested block solve of I minus a lower-assigned skew matrix]
-----------------------------------------------------------------
For ``x`` of shape ``(B, T, d)`` and an arbitrary ``d x d`` matrix :math:`A`, the layer with ``skew_sym=False``
returns :math:`y = \mathrm{Cayley}(C)^T x = 2M^{-1}x - x` with :math:`M = I - C`,
:math:`C = \mathrm{skew\_from\_lower}(xAx^T)/s`, :math:`s = \sqrt d` (ledger ``cayley.apply_form``). The lower
assignment breaks the low rank of :math:`xAx^T`, but not that of the off-diagonal blocks: split the rows of a block
:math:`p` into an earlier half 1 and a later half 2, with rows :math:`X_1, X_2`; then (``vp_lower.offdiag_blocks``)

.. math::

    C_{21} = X_2AX_1^T/s,\qquad C_{12} = -X_1A^TX_2^T/s,

so :math:`M_p = D + WGW^T` with :math:`D = \mathrm{diag}(M_1, M_2)`, :math:`W = \mathrm{diag}(X_1, X_2)` and the
:math:`2d\times 2d` matrix :math:`G = \begin{pmatrix}0 & A^T/s\\ -A/s & 0\end{pmatrix}`. Write
:math:`K_b = X_b^TM_b^{-1}X_b` (``d x d``), :math:`K_D = \mathrm{diag}(K_1, K_2)`, :math:`E = (I_d; I_d)` and
:math:`N = I_{2d} + GK_D`. Woodbury's identity gives :math:`M_p^{-1}X_p = D^{-1}W\,N^{-1}E`, hence
(``vp_lower.merge``)

.. math::

    K_p = E^TK_D\,R_p,\qquad R_p = N^{-1}E \in \mathbb{R}^{2d\times d},\qquad
    M_p^{-1}X_p\big|_{\text{child } j} = (M_j^{-1}X_j)\,[R_p]_j,

with :math:`[R_p]_j` the ``d x d`` block of rows :math:`j`. An upward pass over a binary tree of blocks computes
every :math:`K` and :math:`R` (``O(d^3)`` per node); the leaves are dense ``m x m`` blocks solved by LU, giving
:math:`U_\ell = M_\ell^{-1}X_\ell` and :math:`K_\ell = X_\ell^TU_\ell`. A downward pass multiplies the transfer
matrices, :math:`F_{\text{root}} = I_d`, :math:`F_j = [R_p]_jF_p`, and :math:`M^{-1}x` on leaf :math:`\ell` is
:math:`U_\ell F_\ell`. Total :math:`O(T(m^2 + md + d^2))` per sample, linear in ``T``. Rows are padded with zeros up
to :math:`m2^L`: a zero row has zero correlations, so :math:`M` is the identity there and the right-hand side zero
(the padded rows decouple and their solution is zero).

Every diagonal block is :math:`I` minus a skew matrix, so :math:`\|M_b^{-1}\|_2 \le 1` and the leaf solves are well
conditioned; :math:`\det N = \det M_p / (\det M_1\det M_2)` is nonzero. The computation is float64 throughout
(float32 inputs are cast back at the end), vectorised over the batch and over the blocks of a level, and
differentiated by autograd through its torch operations (the adjoint solves are with :math:`M^T = I + C`, the same
structure). Every operation is per sample: a non-finite or huge sample never touches the others.
"""

from __future__ import annotations

import math

import torch

from ._checks import check_float
from ._lapack import solve_ex

__all__ = ["vp_arbitrary_linear", "vp_arbitrary_full", "LEAF", "semisep_levels"]

#: rows of a leaf block (dense LU); the measured optimum at d = 8 lies between 16 and 64
LEAF = 32


def semisep_levels(T: int, leaf: int = LEAF) -> tuple[int, int]:
    """The leaf size ``m`` and the number of tree levels ``L`` with ``m * 2**L >= T`` for ``T`` rows.

    Parameters
    ----------
    T : int
        rows of the sequence
    leaf : int
        the largest leaf block

    Returns
    -------
    tuple of int
        ``(m, L)``: ``m = T`` and ``L = 0`` when ``T <= leaf``
    """
    if T <= leaf:
        return max(T, 1), 0
    return leaf, max(0, math.ceil(math.log2(math.ceil(T / leaf))))


def _lower_skew(x: torch.Tensor, A: torch.Tensor, scale: float) -> torch.Tensor:
    """``skew_from_lower(x A x^T) * scale`` over the last two axes of ``x`` (``(..., m, d)``)."""
    L = torch.tril(x @ A @ x.mT, diagonal=-1) * scale
    return L - L.mT


def _merge(K: torch.Tensor, G: torch.Tensor, sign: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """One upward level: ``K`` of shape ``(B, 2n, d, d)`` -> ``(K_parent (B, n, d, d), R (B, n, 2d, d))``.

    ``sign`` is ``+1`` for the identity of the module Note; ``-1`` flips the coupling (the tests' negative control).
    """
    B, n2, d, _ = K.shape
    K1, K2 = K[:, 0::2], K[:, 1::2]
    Z = torch.zeros_like(K1)
    KD = torch.cat((torch.cat((K1, Z), -1), torch.cat((Z, K2), -1)), -2)  # (B, n, 2d, 2d)
    eye = torch.eye(2 * d, dtype=K.dtype, device=K.device)
    N = eye + sign * (G @ KD)
    E = torch.cat((torch.eye(d, dtype=K.dtype, device=K.device),) * 2, 0).expand(*N.shape[:-2], 2 * d, d)
    R = torch.linalg.solve_ex(N, E)[0]
    Kp = K1 @ R[..., :d, :] + K2 @ R[..., d:, :]
    return Kp, R


def vp_arbitrary_linear(x: torch.Tensor, A: torch.Tensor, *, leaf: int = LEAF, _sign: float = 1.0) -> torch.Tensor:
    r"""The layer output :math:`y = 2(I - C)^{-1}x - x`, :math:`C = \mathrm{skew\_from\_lower}(xAx^T)/\sqrt d`, in
    :math:`O(T)` time and memory per sample (Note [nested block solve of I minus a lower-assigned skew matrix]).

    Parameters
    ----------
    x : Tensor ``(..., T, d)``, float32 or float64
    A : Tensor ``(d, d)``, an arbitrary weighting of ``x``'s dtype and device
    leaf : int
        rows of a leaf block (dense float64 LU)

    Returns
    -------
    Tensor ``(..., T, d)`` of ``x``'s dtype: :math:`\mathrm{Cayley}(C)^Tx`, computed in float64

    Examples
    --------
    >>> x = torch.randn(2, 300, 4, dtype=torch.float64)
    >>> A = torch.randn(4, 4, dtype=torch.float64)
    >>> y = vp_arbitrary_linear(x, A)
    >>> ref = vp_arbitrary_full(x, A)
    >>> bool((y - ref).abs().max() < 1e-10)
    True
    """
    check_float("x", x)
    check_float("A", A)
    out_dtype = x.dtype
    *batch, T, d = x.shape
    B = math.prod(batch)
    xb = x.reshape(B, T, d).to(torch.float64)
    A64 = A.to(torch.float64)
    m, L = semisep_levels(T, leaf)
    Tp = m * 2 ** L
    if Tp > T:
        xb = torch.cat((xb, xb.new_zeros(B, Tp - T, d)), 1)
    scale = 1.0 / math.sqrt(d)
    xl = xb.reshape(B, 2 ** L, m, d)
    M = torch.eye(m, dtype=xb.dtype, device=xb.device) - _lower_skew(xl, A64, scale)
    U = solve_ex(M, xl)[0]                                    # (B, n, m, d): M_leaf^{-1} X_leaf
    K = xl.mT @ U                                             # (B, n, d, d)
    Zd = torch.zeros_like(A64)
    G = torch.cat((torch.cat((Zd, A64.mT * scale), -1), torch.cat((-A64 * scale, Zd), -1)), -2)
    Rs = []
    for _ in range(L):
        K, R = _merge(K, G, _sign)
        Rs.append(R)
    F = torch.eye(d, dtype=xb.dtype, device=xb.device).expand(B, 1, d, d)
    for R in reversed(Rs):                                    # transfer matrices, top down
        F = torch.stack((R[..., :d, :] @ F, R[..., d:, :] @ F), 2).reshape(B, 2 * F.shape[1], d, d)
    u = (U @ F).reshape(B, Tp, d)[:, :T]
    return (2 * u - xb[:, :T]).reshape(*batch, T, d).to(out_dtype)


def vp_arbitrary_full(x: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""The reference ``T x T`` form of :func:`vp_arbitrary_linear`: :math:`2(I - C)^{-1}x - x` by one dense solve
    per sample in float64 (:math:`O(T^3)`; tests and the ``full`` route of ``vp_attention_lower``).

    Parameters
    ----------
    x : Tensor ``(..., T, d)``
    A : Tensor ``(d, d)``

    Returns
    -------
    Tensor ``(..., T, d)`` of ``x``'s dtype
    """
    check_float("x", x)
    check_float("A", A)
    T, d = x.shape[-2:]
    x64 = x.to(torch.float64)
    M = torch.eye(T, dtype=torch.float64, device=x.device) - _lower_skew(x64, A.to(torch.float64), 1 / math.sqrt(d))
    return (2 * solve_ex(M, x64)[0] - x64).to(x.dtype)
