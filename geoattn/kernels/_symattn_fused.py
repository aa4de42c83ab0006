r"""The fused route of symplectic attention: the update and its VJP in a few batched products, block by block.

Note [fused symplectic attention]
---------------------------------
The generated forward and VJP (Note [symplectic attention backward]) are exact but make about a dozen passes
over ``T x T`` matrices per sample (``C``, ``G``, ``Cd``, ``G * Cd``, ``K`` and six products with them) and keep
``G`` between the passes. This route computes the same functions with fewer and cheaper passes:

* the batch is cut into blocks whose ``T x T`` matrices stay in cache; ``C`` of a block is written straight
  into the buffer that holds ``G`` and its softmax overwrites it in place. Up to :data:`KEEP_ENTRIES` entries
  for the batch, ``G`` is kept for the backward; above, one block's buffer serves every block and the backward
  recomputes ``G`` of a block (one product and one softmax), which measured faster at ``T = 256``,
  ``B T = 65,536`` than keeping ``B T^2`` numbers (the fresh pages of a large buffer cost more than the
  recomputation, as did fresh ``T x T`` temporaries per block);
* the column softmax of ``C`` (``vector_*``) is the row softmax of :math:`C^T = zA^Tz^T`, so every softmax runs
  along the last dimension;
* with :math:`a = VA`, :math:`b = zA` the VJP's :math:`\dot C = az^T + bV^T` is never formed: with
  :math:`W = G \odot \dot C` and :math:`s` the sums of :math:`W` (per column, or of all entries),

  .. math::

      (Wz)_i = M^{zz}_i a_i + M^{zv}_i b_i,\quad M^{zz}_i = \textstyle\sum_j G_{ij} z_j z_j^T,\
      M^{zv}_i = \textstyle\sum_j G_{ij} z_j v_j^T,\qquad
      (W^Tz)_j = N^{za}_j z_j + N^{zb}_j v_j,\quad N^{za}_j = \textstyle\sum_i G_{ij} z_i a_i^T,\
      N^{zb}_j = \textstyle\sum_i G_{ij} z_i b_i^T,

  :math:`s_j = (G^TVA)_j\cdot z_j + (G^TzA)_j\cdot v_j`, and with :math:`K = W - G\,\mathrm{diag}(s)`
  (:math:`K = W - sG` over all entries) the generated VJP's :math:`P = GV + Kz = G(V - s\odot z) + Wz`,
  :math:`H = G^TV`, :math:`R = H + K^Tz = H + W^Tz - s\odot G^Tz`, :math:`\bar z = PA^T + RA`,
  :math:`\bar A = z^TP + H^Tz` (ledger ``symattn.fused_vjp``). The ``T x T`` matrix is read twice, by one
  product with ``G^T`` and one with ``G``, each against ``O(n^2)`` columns built from ``z``, ``V``, ``a``, ``b``;
  over all entries with a symmetric :math:`A` (then :math:`G = G^T`) once.
* over all entries with a symmetric :math:`A` the forward's :math:`GzA^T + G^TzA` is :math:`2GzA`.

Every form is the same function as the generated one up to rounding (``tests/test_symattn_fused.py`` compares
both with a float64 reference). The route serves a two-dimensional ``A`` (one weighting for the batch) outside
functorch transforms and ``torch.compile``; a graph of the backward (``create_graph=True``) is the VJP of the
generated forward, as on the generated route.
"""

from __future__ import annotations

import torch

from ._symattn import SYMATTN_ACTIVATIONS
from ._symattn_sdpa import _generated_vjp

__all__ = ["symattn_fused", "fused_update", "fused_vjp", "use_outer", "BLOCK_ENTRIES", "KEEP_ENTRIES", "OUTER_MAX_N",
           "OUTER_MIN_T"]

#: the ``T x T`` entries of one block of samples (``2**18`` float32 numbers: 1 MiB, about a core's L2 cache)
BLOCK_ENTRIES = 2 ** 18
#: the most ``T x T`` entries of a whole batch whose softmax the forward keeps for the backward (16 MiB of
#: float32); above it the backward recomputes each block's
KEEP_ENTRIES = 2 ** 22
#: the largest ``n`` for which the VJP uses the outer-product columns; above it ``Cd`` and ``K`` are formed
OUTER_MAX_N = 4
#: the shortest sequence for which it does
OUTER_MIN_T = 64


def _block(B: int, T: int) -> int:
    """Samples per block: at least one, at most ``B``."""
    return max(1, min(B, BLOCK_ENTRIES // max(1, T * T)))


def _softmax_rows_(S: torch.Tensor, over_all: bool, one: bool) -> torch.Tensor:
    r"""``S`` overwritten by its softmax along the last dimension (or over its last two), with the one softmax's
    extra zero logit when ``one``; returns ``S``.

    The one softmax is the softmax scaled by :math:`\sigma(L) = 1/(1 + e^{-L})`, :math:`L` the log-sum-exp of the
    logits: with :math:`m` their largest, the softmax's largest entry is :math:`e^{m - L}`, so
    :math:`e^{-L} = \max(P)\,e^{-m}` (torch's softmax evaluates its exponentials faster than ``exp``). Where
    :math:`e^{-m}` overflows the result is 0 (its entries are below :math:`e^{m}`, under the smallest normal
    number)."""
    flat = S.view(S.shape[0], -1) if over_all else S
    m = flat.amax(-1, keepdim=True) if one else None
    torch.ops.aten._softmax.out(flat, -1, False, out=flat)  # in place: row by row, each entry read before written
    if one:
        flat.mul_(torch.reciprocal(torch.exp(-m).mul_(flat.amax(-1, keepdim=True)).add_(1)))
    return S


def _softmax(z: torch.Tensor, A: torch.Tensor, over_all: bool, one: bool, out: torch.Tensor) -> torch.Tensor:
    r"""The matrix whose rows a product with ``G`` reads, ``G`` (over all entries) or ``G^T`` (over columns),
    written into ``out`` (contiguous, ``(B, T, T)``)."""
    torch.matmul(z @ (A if over_all else A.mT), z.mT, out=out)  # C, or C^T = z A^T z^T
    return _softmax_rows_(out, over_all, one)


def _outer(u: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Per token the outer product ``u_i w_i^T``, flattened: ``(B, T, n*m)``."""
    return (u.unsqueeze(-1) * w.unsqueeze(-2)).flatten(-2)


def _apply(M: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Per token ``M_i x_i`` for flattened ``n x m`` matrices ``M`` and ``x`` of ``m`` features: ``(B, T, n)``."""
    return (M.unflatten(-1, (-1, x.shape[-1])) * x.unsqueeze(-2)).sum(-1)


def fused_update(z: torch.Tensor, A: torch.Tensor, activation: str, symmetric: bool,
                 S: torch.Tensor | None = None) -> torch.Tensor:
    r"""The update :math:`GzA^T + G^TzA` of one block ``z`` ``(B, T, n)``; ``symmetric``: :math:`A = A^T`.
    ``S`` (``(B, T, T)``, contiguous) receives the softmax the backward reads (:func:`fused_vjp`)."""
    over, one = SYMATTN_ACTIVATIONS[activation]
    over_all = over == "all"
    S = _softmax(z, A, over_all, one, z.new_empty(z.shape[0], z.shape[1], z.shape[1]) if S is None else S)
    b = z @ A
    if over_all and symmetric:
        return 2 * (S @ b)
    bt = z @ A.mT
    G, Gt = (S, S.mT) if over_all else (S.mT, S)
    return torch.baddbmm(G @ bt, Gt, b)


def use_outer(T: int, n: int) -> bool:
    """Whether the VJP takes the outer-product columns (Note [fused symplectic attention]): ``n`` small against
    ``T``, where ``O(n^2)`` columns cost less than the passes over ``Cd`` and ``K`` they replace."""
    return n <= OUTER_MAX_N and T >= OUTER_MIN_T


def fused_vjp(z: torch.Tensor, A: torch.Tensor, V: torch.Tensor, activation: str, symmetric: bool,
              S: torch.Tensor, work: torch.Tensor | None = None):
    r"""The gradients of :math:`\langle V, U\rangle` with respect to ``z`` and ``A`` of one block
    (Note [fused symplectic attention]) from the softmax ``S`` that :func:`fused_update` wrote; ``A``'s gradient
    is summed over the block. ``work``: a ``(B, T, T)`` buffer for ``Cd`` (allocated when None)."""
    over_all = SYMATTN_ACTIVATIONS[activation][0] == "all"
    G, Gt = (S, S.mT) if over_all else (S.mT, S)
    T, n = z.shape[-2:]
    if not use_outer(T, n):
        return _direct_vjp(z, A, V, G, Gt, over_all, torch.empty_like(S) if work is None else work)
    a, b = V @ A, z @ A
    ab, zv = torch.cat([a, b], -1), torch.cat([z, V], -1)
    col, row = [zv, _outer(z, ab)], [_outer(z, zv)]
    if over_all and symmetric:  # G = G^T: one product serves both sides
        F, H, N, M = (G @ torch.cat(col + row, -1)).split([n, n, 2 * n * n, 2 * n * n], -1)
        GV, Gz = H, F
    else:
        F, H, N = (Gt @ torch.cat(col, -1)).split([n, n, 2 * n * n], -1)
        if over_all:
            GV, Gz, M = (G @ torch.cat([V, z] + row, -1)).split([n, n, 2 * n * n], -1)
    s = ((H @ A) * z + (F @ A) * V).sum(-1, keepdim=True)  # (B, T, 1): s_j
    if over_all:
        s = s.sum(-2, keepdim=True)
        P = GV - s * Gz
    else:
        P, M = (G @ torch.cat([V - s * z] + row, -1)).split([n, 2 * n * n], -1)
    P = P + _apply(M, ab)
    R = H + _apply(N, zv) - s * F
    gz = torch.baddbmm(P @ A.mT, R, A.expand(R.shape[0], n, n))
    gA = (z.mT @ P + H.mT @ z).sum(0)
    return gz, gA


def _direct_vjp(z, A, V, G, Gt, over_all, work):
    """The generated VJP's bindings with ``Cd`` formed by one product into ``work`` and ``K`` overwriting it."""
    n = z.shape[-1]
    Cd = torch.matmul(torch.cat([V @ A, z @ A], -1), torch.cat([z, V], -1).mT, out=work)
    W = Cd.mul_(G)
    s = W.sum((-2, -1) if over_all else -2, keepdim=True)
    K = W.addcmul_(G, s, value=-1)
    P = G @ V + K @ z
    H = Gt @ V
    R = torch.baddbmm(H, K.mT, z)
    gz = torch.baddbmm(P @ A.mT, R, A.expand(R.shape[0], n, n))
    gA = (z.mT @ P + H.mT @ z).sum(0)
    return gz, gA


class _FusedUpdate(torch.autograd.Function):
    """See Note [fused symplectic attention]."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
        symmetric = bool(torch.equal(A, A.mT))
        shape = z.shape
        zb = z.reshape(-1, shape[-2], shape[-1])
        B, T = zb.shape[:2]
        step = _block(B, T)
        keep = any(ctx.needs_input_grad) and B * T * T <= KEEP_ENTRIES
        S = zb.new_empty(B if keep else min(B, step), T, T)  # all blocks' G kept, or one block's buffer reused
        out = torch.empty_like(zb)
        for i in range(0, B, step):
            m = min(step, B - i)
            out[i:i + m] = fused_update(zb[i:i + m], A, activation, symmetric, S[i:i + m] if keep else S[:m])
        ctx.save_for_backward(z, A, S if keep else None)
        ctx.activation, ctx.symmetric = activation, symmetric
        return out.view(shape)

    @staticmethod
    def backward(ctx, gU: torch.Tensor):
        z, A, kept = ctx.saved_tensors
        if torch.is_grad_enabled():
            return (*_generated_vjp(ctx, (z, A), gU), None)
        shape = z.shape
        zb, Vb = z.reshape(-1, shape[-2], shape[-1]), gU.reshape(-1, shape[-2], shape[-1])
        B, T = zb.shape[:2]
        step = _block(B, T)
        over, one = SYMATTN_ACTIVATIONS[ctx.activation]
        S = zb.new_empty(min(B, step), T, T) if kept is None else None
        work = None if use_outer(T, shape[-1]) else zb.new_empty(min(B, step), T, T)
        gz = torch.empty_like(zb)
        gA = torch.zeros_like(A)
        for i in range(0, B, step):
            m = min(step, B - i)
            G = kept[i:i + m] if kept is not None else _softmax(zb[i:i + m], A, over == "all", one, S[:m])
            g, ga = fused_vjp(zb[i:i + m], A, Vb[i:i + m], ctx.activation, ctx.symmetric, G,
                              None if work is None else work[:m])
            gz[i:i + m] = g
            gA += ga
        return gz.view(shape), gA, None


def symattn_fused(z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
    """The update through the fused route (arguments already checked; ``A`` two-dimensional)."""
    return _FusedUpdate.apply(z, A, activation)
