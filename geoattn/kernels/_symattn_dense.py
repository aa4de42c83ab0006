r"""The ``dense`` route of symplectic attention: short sequences, a symmetric ``A``, the softmaxes over all entries,
with the ``T x T`` softmax of each sample formed and kept.

Note [dense symplectic attention]
---------------------------------
With :math:`A = A^T` the softmax :math:`G` over all entries of :math:`C = az^T`, :math:`a = zA`, is symmetric and
the update is :math:`U = 2Ga` (ledger ``symattn.sdpa_form``'s premise, Note [symplectic attention through SDPA]).
For short sequences the fused attention kernel's blocking costs more than the ``T x T`` matrices themselves, so
this route forms them: one product for :math:`C`, one softmax over each sample's :math:`T^2` entries (written
over :math:`C`), one product for :math:`Ga`; :math:`G` is kept for the backward. The backward (ledger
``symattn.dense_vjp``) is the chain rule of that form: with :math:`\bar G' = Va^T` (half the gradient of
:math:`G`),

.. math::

    \bar C' = G\odot\bar G' - \langle G, \bar G'\rangle\,G,\qquad h = GV + \bar C'z,\qquad
    \bar z = 2(\bar C'^Ta + hA),\qquad \bar A = z^Th + h^Tz,

the softmax's backward being the same for the one softmax (its extra zero logit has no gradient). :math:`\bar
A` is the symmetric part of the one-product form's gradient, which is the update's gradient at a symmetric
:math:`A` (``symattn.transpose_invariant``). Per sample: two products in the forward, four in the backward, and
one elementwise pass over the ``T x T`` matrices each way.

The batch runs in blocks whose ``T x T`` matrices stay in cache (those of the fused route,
:func:`~geoattn.kernels._symattn_fused._block`); up to :data:`~geoattn.kernels._symattn_fused.KEEP_ENTRIES`
entries for the batch every block's :math:`G` is kept for the backward, above it the backward recomputes it
(one product and one softmax per block). Measured on one thread at ``B T = 65,536``, float32 (a shared
machine, the two routes alternated in one process), the layer's forward+backward took 0.86, 0.95 and 0.73 of
SDPA's time at ``T = 64`` for ``dim`` 4, 8, 16 with :math:`G` kept, against 1.04, 1.16, 1.54 by the ``sdpa``
route; with :math:`G` recomputed 1.02 and 1.22 (``dim`` 4, 16); at ``T = 128`` (kept or recomputed) and 256
(recomputed) the ``sdpa`` route was as fast or faster. At ``T = 16`` and 32 even with :math:`G` recomputed the
route took 0.92 to 1.08 of SDPA's time against 1.37 to 1.84 by the ``sdpa`` route (``dim`` 4, 16). So the
route serves :math:`T \le` :data:`DENSE_MAX_T` whatever the batch: the choice depends on ``T`` alone, and keeping
or recomputing :math:`G` runs the same operations on the same blocks, so a sample's numbers do not depend on how
many other samples the batch holds.

It serves CPU float32 and float64 with one symmetric weighting, outside functorch transforms and
``torch.compile``; a graph of the backward (``create_graph=True``) is the VJP of the generated forward, as on the
other routes. Each sample's numbers are its own: no result depends on the other samples of the batch. Where the
``native`` route's kernel is built it comes first and serves head sizes up to 8 from
:func:`~geoattn.kernels._symattn_native.native_min_t` tokens on (measured faster than this route there), so this
route serves the shorter sequences, larger heads, and machines without a C compiler or with ``GEOATTN_NATIVE=0``.
"""

from __future__ import annotations

import torch

from ._functions import _under_functorch
from ._symattn import SYMATTN_ACTIVATIONS
from ._symattn_fused import KEEP_ENTRIES, _block, _softmax_rows_
from ._symattn_sdpa import _generated_vjp

__all__ = ["symattn_dense", "shear_dense", "dense_reason", "DENSE_MAX_T"]

#: the longest sequence the route serves, whatever the batch (the backward recomputes each block's ``G`` when the
#: batch's ``B T^2`` entries exceed :data:`~geoattn.kernels._symattn_fused.KEEP_ENTRIES`); above it the ``sdpa``
#: route measured as fast or faster
DENSE_MAX_T = 64


def dense_reason(z: torch.Tensor, A: torch.Tensor, activation: str) -> str | None:
    """None when the ``dense`` route serves the (checked) arguments, else why not."""
    if z.device.type != "cpu":
        return f"device {z.device.type}: the route keeps B T^2 entries, sized for the CPU"
    if SYMATTN_ACTIVATIONS[activation][0] != "all":
        return f"activation {activation!r}: the route's G is symmetric only over all entries"
    T = z.shape[-2]
    if T > DENSE_MAX_T:
        return f"T = {T} > {DENSE_MAX_T}: the sdpa route is as fast or faster there"
    if z.dtype not in (torch.float32, torch.float64):
        return f"{z.dtype}: the route takes float32 and float64"
    if A.dim() != 2:
        return f"A batched (shape {tuple(A.shape)}): the route takes one (n, n) weighting"
    if not torch.equal(A, A.mT):
        return "A is not symmetric: the update is G z A^T + G^T z A, not 2 G z A"
    return None


class _DenseUpdate(torch.autograd.Function):
    """See Note [dense symplectic attention]; ``shear`` as in :mod:`geoattn.kernels._symattn_sdpa` (Note [the shear
    in one call]): None for the update of ``z``, else ``(first, sign)`` for the shear of a phase-space ``z``."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, A: torch.Tensor, activation: str, shear=None) -> torch.Tensor:
        shape = z.shape
        T, n = shape[-2], A.shape[-1]
        xb = z.reshape(-1, T, shape[-1])
        zb = xb if shear is None else xb.narrow(-1, 0 if shear[0] else n, n)
        B = zb.shape[0]
        step = _block(B, T)
        keep = B * T * T <= KEEP_ENTRIES
        S = zb.new_empty(B if keep else step, T, T)
        a = zb @ A
        U = torch.empty_like(a)
        one = SYMATTN_ACTIVATIONS[activation][1]
        for i in range(0, B, step):
            m = min(step, B - i)
            G = torch.bmm(a[i:i + m], zb[i:i + m].mT, out=S[i:i + m] if keep else S[:m])
            _softmax_rows_(G, True, one)
            torch.bmm(G, a[i:i + m], out=U[i:i + m])
        half = z if shear is None else z.narrow(-1, 0 if shear[0] else n, n)  # the half read: a view of z
        ctx.save_for_backward(half, A, S if keep else None)
        ctx.activation, ctx.shear = activation, shear
        if shear is None:
            return U.mul_(2).view(shape)
        first, sign = shear
        y = torch.empty_like(xb)
        keep_at, other = (0, n) if first else (n, 0)
        y.narrow(-1, keep_at, n).copy_(zb)
        torch.add(xb.narrow(-1, other, n), U, alpha=2 * sign, out=y.narrow(-1, other, n))
        return y.view(shape)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        z, A, kept = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(grad):
            return (*_generated_vjp(ctx, (z, A), grad), None, None)
        shape = grad.shape
        T, n = shape[-2], A.shape[-1]
        zb = z.reshape(-1, T, n)
        grad = grad.contiguous()  # the gradient of a sum is expanded: batched products over zero strides are slow
        if ctx.shear is None:
            V, sign = grad.reshape(-1, T, n), 1.0
        else:
            first, sign = ctx.shear
            g = grad.reshape(-1, T, 2 * n)
            keep_at, other = (0, n) if first else (n, 0)
            V = g.narrow(-1, other, n)
        h, gz = _dense_vjp(zb, A, V, kept, SYMATTN_ACTIVATIONS[ctx.activation][1])
        hf = h.view(-1, n)
        gA = zb.reshape(-1, n).mT @ hf
        gA = (gA + gA.mT).mul_(sign)
        if ctx.shear is None:
            return gz.mul_(2).view(shape), gA, None, None
        gx = torch.empty_like(g)
        gx.narrow(-1, other, n).copy_(V)
        torch.add(g.narrow(-1, keep_at, n), gz, alpha=2 * sign, out=gx.narrow(-1, keep_at, n))
        return gx.view(shape), gA, None, None


def _softmax_backward_(g: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``g <- G * (g - <G, g>)`` per row of ``(m, T^2)`` arrays: the backward of the softmax over all entries, in
    place (the tests replace it by a wrong one to show the comparison catches it)."""
    return torch.ops.aten._softmax_backward_data.out(g, G, -1, G.dtype, grad_input=g)


def _dense_vjp(zb: torch.Tensor, A: torch.Tensor, V: torch.Tensor, kept, one: bool):
    """``(h, gz / 2)`` of Note [dense symplectic attention] for ``V`` (``(B, T, n)``, any token stride), block by
    block, ``G`` from ``kept`` or recomputed."""
    B, T, n = zb.shape
    step = _block(B, T)
    a = zb @ A
    work = zb.new_empty(min(B, step), T, T)
    S = zb.new_empty(min(B, step), T, T) if kept is None else None
    h, gz = torch.empty_like(a), torch.empty_like(a)
    for i in range(0, B, step):
        m = min(step, B - i)
        ab, zk, Vb = a[i:i + m], zb[i:i + m], V[i:i + m]
        G = _softmax_rows_(torch.bmm(ab, zk.mT, out=S[:m]), True, one) if kept is None else kept[i:i + m]
        gC = torch.bmm(Vb, ab.mT, out=work[:m])
        _softmax_backward_(gC.view(m, -1), G.reshape(m, -1))
        torch.bmm(G, Vb, out=h[i:i + m]).baddbmm_(gC, zk)
        torch.bmm(gC.mT, ab, out=gz[i:i + m])
    gz.view(-1, n).addmm_(h.view(-1, n), A)
    return h, gz


def symattn_dense(z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
    """The update through the ``dense`` route (arguments checked, :func:`dense_reason` None)."""
    return _DenseUpdate.apply(z, A, activation)


def shear_dense(x: torch.Tensor, A: torch.Tensor, activation: str, first: bool, sign: float) -> torch.Tensor:
    """The shear of ``x`` (``(..., T, 2n)``) by ``sign`` times the update of its ``first`` (or last) half through
    the ``dense`` route (arguments checked, :func:`dense_reason` None for that half)."""
    return _DenseUpdate.apply(x, A, activation, (bool(first), float(sign)))
