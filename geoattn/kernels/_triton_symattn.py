r"""Triton kernels of symplectic attention over all entries with a symmetric weighting: one attention with queries
and values :math:`a = zA` and keys :math:`z` at scale 1, flash-style, forward and backward (imported only where
``triton`` is; Note [Triton backend] in :mod:`geoattn.kernels._triton`).

Note [flash symplectic attention]
---------------------------------
The form is the one of Note [symplectic attention through SDPA] in :mod:`geoattn.kernels._symattn_sdpa` (ledger
``symattn.sdpa_form``, its backward ``symattn.sdpa_vjp``, the symmetric gradient in :math:`A` by
``symattn.transpose_invariant``): :math:`U = 2w\odot O`, :math:`O = Pa`, :math:`P` the row softmax of
:math:`S = az^T`, :math:`w` the softmax of the row log-sum-exps :math:`\ell` (with an extra zero logit for the one
softmax). The kernels compute the attention part, the only part of size :math:`T\times T`; the rest is
:math:`O(Tn)` torch operations in :mod:`geoattn.kernels._symattn_flash`.

* ``symattn_fwd``: one program per (sample, block of ``BLOCK_M`` query rows); a loop over blocks of ``BLOCK_N``
  keys keeps the running row maximum :math:`m`, the running sum :math:`l` and the unnormalised output (each
  rescaled by :math:`e^{m_\text{old} - m_\text{new}}` when the maximum grows). It stores :math:`O = \text{acc}/l`
  and :math:`\ell = m + \log l`.
* ``symattn_bwd_kv`` (one program per (sample, block of keys), a loop over query blocks) and ``symattn_bwd_q``
  (one program per (sample, block of queries), a loop over key blocks) recompute
  :math:`P_{ij} = e^{S_{ij} - \ell_i}` block by block and accumulate, with :math:`\bar O` the output's gradient,
  :math:`\bar P_{ij} = \bar O_i\cdot a_j` and :math:`\bar S = P\odot(\bar P - (D - \bar\ell)\mathbf 1^T)`:
  the values' gradient :math:`\bar v = P^T\bar O`, the keys' :math:`\bar k = \bar S^Ta` and the queries'
  :math:`\bar q = \bar Sz`. :math:`D_i = \bar O_i\cdot O_i` and the log-sum-exp's gradient :math:`\bar\ell` come
  in per row; ``DROP_LSE`` (a constant of the kernel, for the tests' negative control) leaves :math:`\bar\ell`
  out, the mistake refuted by ``symattn.sdpa_vjp.without_lse``.

The kernels call only Triton's builtins and their own ``@triton.jit`` functions (the row maximum and sum as
``tl.reduce`` with a combining function of this module), not ``tl.max``, ``tl.sum`` or ``tl.zeros``: those are
decorated when ``triton`` is imported, so in a process that imported it before switching the interpreter on
they are compiled-mode functions the interpreter cannot call, while this module is decorated again
(:func:`geoattn.kernels._triton.written_kernels`).

No :math:`T\times T` block leaves a program: global memory holds :math:`a`, :math:`z`, :math:`O`, :math:`\ell` and
the gradients, all :math:`O(Tn)`. Tokens are loaded in their dtype (float32, float16 or bfloat16) and every value
is computed in float32 (products in IEEE float32, not TF32). The feature axis is padded to ``D``, a power of two
of at least 16 (the smallest ``tl.dot`` operand on a GPU), with masked loads; rows and keys past ``T`` are masked
(a key past ``T`` gets the logit :math:`-\infty`, a query past ``T`` the probability 0). Each program reads one
sample: no result depends on another sample of the batch.
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["symattn_fwd", "symattn_bwd_kv", "symattn_bwd_q"]

#: the claims the kernels implement
CLAIMS = ("symattn.sdpa_form", "symattn.sdpa_vjp", "symattn.transpose_invariant")


@triton.jit
def _max2(a, b):
    return tl.maximum(a, b)


@triton.jit
def _add2(a, b):
    return a + b


@triton.jit
def _tile(ptr, base, rows, cols, T, N):
    """The ``(rows, cols)`` tile of a ``(T, N)`` sample at ``base``, zero outside, as float32."""
    mask = (rows[:, None] < T) & (cols[None, :] < N)
    return tl.load(ptr + base + rows[:, None] * N + cols[None, :], mask=mask, other=0.0).to(tl.float32)


@triton.jit
def symattn_fwd(a_ptr, z_ptr, o_ptr, lse_ptr, T, N,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr):
    """``O`` (float32 ``(B, T, N)``) and ``lse`` (float32 ``(B, T)``) of the attention with queries and values
    ``a`` and keys ``z`` at scale 1."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, D)
    base = b * T * N
    q = _tile(a_ptr, base, rows, cols, T, N)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.full([BLOCK_M], 0.0, tl.float32)
    acc = tl.full([BLOCK_M, D], 0.0, tl.float32)
    for start in range(0, T, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k = _tile(z_ptr, base, keys, cols, T, N)
        v = _tile(a_ptr, base, keys, cols, T, N)
        s = tl.dot(q, tl.trans(k), input_precision="ieee")
        s = tl.where(keys[None, :] < T, s, float("-inf"))
        m_new = tl.maximum(m, tl.reduce(s, 1, _max2))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        l = l * alpha + tl.reduce(p, 1, _add2)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m = m_new
    out = acc / l[:, None]
    omask = (rows[:, None] < T) & (cols[None, :] < N)
    tl.store(o_ptr + base + rows[:, None] * N + cols[None, :], out, mask=omask)
    tl.store(lse_ptr + b * T + rows, m + tl.log(l), mask=rows < T)


@triton.jit
def symattn_bwd_kv(a_ptr, z_ptr, go_ptr, lse_ptr, delta_ptr, glse_ptr, gk_ptr, gv_ptr, T, N,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr, DROP_LSE: tl.constexpr):
    """The keys' and the values' gradients (float32 ``(B, T, N)``) for the output's gradient ``go``."""
    b = tl.program_id(0).to(tl.int64)
    keys = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cols = tl.arange(0, D)
    base = b * T * N
    k = _tile(z_ptr, base, keys, cols, T, N)
    v = _tile(a_ptr, base, keys, cols, T, N)
    gk = tl.full([BLOCK_N, D], 0.0, tl.float32)
    gv = tl.full([BLOCK_N, D], 0.0, tl.float32)
    for start in range(0, T, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        rmask = rows < T
        q = _tile(a_ptr, base, rows, cols, T, N)
        go = _tile(go_ptr, base, rows, cols, T, N)
        lse = tl.load(lse_ptr + b * T + rows, mask=rmask, other=0.0)
        dm = tl.load(delta_ptr + b * T + rows, mask=rmask, other=0.0)
        if not DROP_LSE:
            dm -= tl.load(glse_ptr + b * T + rows, mask=rmask, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee")
        p = tl.where(rmask[:, None] & (keys[None, :] < T), tl.exp(s - lse[:, None]), 0.0)
        gv += tl.dot(tl.trans(p), go, input_precision="ieee")
        dp = tl.dot(go, tl.trans(v), input_precision="ieee")
        ds = p * (dp - dm[:, None])
        gk += tl.dot(tl.trans(ds), q, input_precision="ieee")
    kmask = (keys[:, None] < T) & (cols[None, :] < N)
    offs = base + keys[:, None] * N + cols[None, :]
    tl.store(gk_ptr + offs, gk, mask=kmask)
    tl.store(gv_ptr + offs, gv, mask=kmask)


@triton.jit
def symattn_bwd_q(a_ptr, z_ptr, go_ptr, lse_ptr, delta_ptr, glse_ptr, gq_ptr, T, N,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr, DROP_LSE: tl.constexpr):
    """The queries' gradient (float32 ``(B, T, N)``) for the output's gradient ``go``."""
    b = tl.program_id(0).to(tl.int64)
    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < T
    cols = tl.arange(0, D)
    base = b * T * N
    q = _tile(a_ptr, base, rows, cols, T, N)
    go = _tile(go_ptr, base, rows, cols, T, N)
    lse = tl.load(lse_ptr + b * T + rows, mask=rmask, other=0.0)
    dm = tl.load(delta_ptr + b * T + rows, mask=rmask, other=0.0)
    if not DROP_LSE:
        dm -= tl.load(glse_ptr + b * T + rows, mask=rmask, other=0.0)
    gq = tl.full([BLOCK_M, D], 0.0, tl.float32)
    for start in range(0, T, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k = _tile(z_ptr, base, keys, cols, T, N)
        v = _tile(a_ptr, base, keys, cols, T, N)
        s = tl.dot(q, tl.trans(k), input_precision="ieee")
        p = tl.where(keys[None, :] < T, tl.exp(s - lse[:, None]), 0.0)
        dp = tl.dot(go, tl.trans(v), input_precision="ieee")
        gq += tl.dot(p * (dp - dm[:, None]), k, input_precision="ieee")
    tl.store(gq_ptr + base + rows[:, None] * N + cols[None, :], gq, mask=rmask[:, None] & (cols[None, :] < N))
