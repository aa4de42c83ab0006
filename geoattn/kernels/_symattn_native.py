r"""The ``native`` route of symplectic attention: a symmetric ``A``, the softmaxes over all entries, on the CPU, by
the compiled kernel of :mod:`geoattn.kernels._native_symattn`.

Note [native symplectic attention]
----------------------------------
With :math:`A = A^T` the softmax over all entries :math:`G = e^{C - L}` of :math:`C = az^T`, :math:`a = zA`, is
symmetric and the update is :math:`U = 2Ga` (ledger ``symattn.sdpa_form``). The kernel
(:mod:`geoattn.codegen.symattn_c`) computes it one sample at a time, a block of rows side by side in one vector
register and the columns one at a time, its ``T x VL`` scores in a first-level-cache buffer, the exponential a
polynomial with a stated error bound; it never forms a ``T x T`` matrix. The backward recomputes the scores: with
the incoming gradient :math:`V` of :math:`U` and :math:`s = \tfrac12\sum_i V_i\cdot U_i = \langle G, Va^T\rangle`,

.. math::

    h_i = \sum_j G_{ij}\bigl(V_j + (V_i\cdot a_j - s)z_j\bigr),\qquad
    y_i = \sum_j G_{ij}(a_i\cdot V_j - s)\,a_j,\qquad \bar z = 2(y + hA),\qquad \bar A = z^Th + h^Tz,

the rows of Note [dense symplectic attention]'s :math:`h` and :math:`\bar C'^Ta` (ledger ``symattn.native_vjp``:
the second uses :math:`G = G^T`, the first :math:`\langle G, Va^T\rangle = \tfrac12\langle V, U\rangle`). Storing
each sample's :math:`G` instead would cost :math:`4T^2` bytes per sample (256 KB at ``T = 256``) written and read
once: the kernel's backward recomputes a score in :math:`n` multiply-adds and its exponential, about the cost of
those loads.

The route serves CPU float32 and float64 inputs with one weighting equal to its transpose, head sizes up to
:data:`~geoattn.kernels._native_symattn.MAX_N`, sequences of at least :func:`native_min_t` tokens, where a C
compiler built the kernel, outside functorch transforms and ``torch.compile``; a graph of the backward
(``create_graph=True``) is the VJP of the generated forward, as on the other routes. Each sample is computed alone:
no result depends on the rest of the batch. The shear is one call (Note [the shear in one call]).
"""

from __future__ import annotations

import torch

from . import _native
from ._functions import _under_functorch
from ._native_symattn import MAX_N, native_backward, native_forward, symattn_native_status
from ._symattn import SYMATTN_ACTIVATIONS
from ._symattn_sdpa import _generated_vjp

__all__ = ["symattn_native", "shear_native", "native_reason", "native_min_t", "NATIVE_MIN_T",
           "NATIVE_MIN_T_BY_N"]

#: the shortest sequence the route serves for head sizes above 8 (below it the ``dense`` route measured as fast or
#: faster); :func:`native_min_t` gives the threshold of each head size
NATIVE_MIN_T = 65
#: ``(largest n, shortest T)``: the route serves head sizes up to ``n`` from ``T`` on. Measured with
#: ``benchmarks/symattn_crossover.py`` (results: benchmarks/results/symattn-crossover-cpu.txt): the layer's
#: forward+backward (dense random gradient | out.sum()) by the native route over the dense route, one thread, float32,
#: B * T = 65,536, thread CPU time on a shared machine: dim 4 (n = 2) 0.82|0.75 at T = 4, 0.68|0.65 at T = 32,
#: 0.57|0.56 at T = 64; dim 8 (n = 4) 0.71|0.65 at T = 4, 0.92|0.85 at T = 16, 0.65|0.67 at T = 64; dim 16 (n = 8)
#: 1.04|1.05 at T = 8, 1.03|0.99 at T = 16, 0.98|0.99 at T = 24, 0.96|0.87 at T = 32, 0.85|0.71 at T = 64; dim 24
#: (n = 12) 1.09|0.99 at T = 32, 0.98|0.94 at T = 64; dim 32 (n = 16) 1.16|0.98 at T = 32, 1.13|1.01 at T = 64. In
#: float64 the native route measured faster at every T from 4 to 64 for dim 4, 8, 16 (0.39-0.86).
NATIVE_MIN_T_BY_N = ((4, 4), (8, 32))


def native_min_t(n: int) -> int:
    """The shortest sequence the ``native`` route serves for head size ``n`` (:data:`NATIVE_MIN_T_BY_N`, else
    :data:`NATIVE_MIN_T`).

    Examples
    --------
    >>> native_min_t(2), native_min_t(8), native_min_t(16)
    (4, 32, 65)
    """
    for top, T in NATIVE_MIN_T_BY_N:
        if n <= top:
            return T
    return NATIVE_MIN_T


def native_reason(z: torch.Tensor, A: torch.Tensor, activation: str) -> str | None:
    """None when the ``native`` route serves the (checked) arguments, else why not."""
    if z.device.type != "cpu":
        return f"device {z.device.type}: the native kernel runs on the CPU"
    if SYMATTN_ACTIVATIONS[activation][0] != "all":
        return f"activation {activation!r}: the kernel's G is symmetric only over all entries"
    T, n = z.shape[-2], z.shape[-1]
    if T < native_min_t(n):
        return f"T = {T} < {native_min_t(n)} (n = {n}): the dense route is as fast or faster there"
    if n > MAX_N:
        return f"n = {n} > {MAX_N}: the kernel is compiled for head sizes up to {MAX_N}"
    if z.dtype not in (torch.float32, torch.float64):
        return f"{z.dtype}: the kernel takes float32 and float64"
    if A.dim() != 2:
        return f"A batched (shape {tuple(A.shape)}): the route takes one (n, n) weighting"
    if not torch.equal(A, A.mT):
        return "A is not symmetric: the update is G z A^T + G^T z A, not 2 G z A"
    if not _native.enabled():
        return "GEOATTN_NATIVE=0 in the environment"
    ok, why = symattn_native_status(n, z.dtype)
    return None if ok else why


class _NativeUpdate(torch.autograd.Function):
    """See Note [native symplectic attention]; ``shear`` as in :mod:`geoattn.kernels._symattn_sdpa` (Note [the shear
    in one call]): None for the update of ``z``, else ``(first, sign)`` for the shear of a phase-space ``z``."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, A: torch.Tensor, activation: str, shear=None) -> torch.Tensor:
        shape = z.shape
        T, n = shape[-2], A.shape[-1]
        xb = z.reshape(-1, T, shape[-1])
        zb = (xb if shear is None else xb.narrow(-1, 0 if shear[0] else n, n)).contiguous()
        Ac = A.contiguous()
        U, L = native_forward(zb, Ac, SYMATTN_ACTIVATIONS[activation][1])
        half = z if shear is None else z.narrow(-1, 0 if shear[0] else n, n)  # the half read: a view of z
        ctx.save_for_backward(half, A, zb, U, L)
        ctx.activation, ctx.shear = activation, shear
        if shear is None:
            return U.view(shape)
        first, sign = shear
        y = torch.empty_like(xb)
        keep_at, other = (0, n) if first else (n, 0)
        y.narrow(-1, keep_at, n).copy_(zb)
        torch.add(xb.narrow(-1, other, n), U, alpha=sign, out=y.narrow(-1, other, n))
        return y.view(shape)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        half, A, zb, U, L = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(grad):
            return (*_generated_vjp(ctx, (half, A), grad), None, None)
        shape = grad.shape
        T, n = shape[-2], A.shape[-1]
        if ctx.shear is None:
            V, sign = grad.reshape(-1, T, n), 1.0
        else:
            first, sign = ctx.shear
            g = grad.reshape(-1, T, 2 * n)
            keep_at, other = (0, n) if first else (n, 0)
            V = g.narrow(-1, other, n)
        Ac = A.contiguous()
        h, y = native_backward(zb, Ac, V.contiguous(), U, L)
        gz = y.view(-1, n).addmm_(h.view(-1, n), Ac).view_as(y)
        gA = zb.view(-1, n).mT @ h.view(-1, n)
        gA = (gA + gA.mT).mul_(sign)
        if ctx.shear is None:
            return gz.mul_(2).view(shape), gA, None, None
        gx = torch.empty_like(g)
        gx.narrow(-1, other, n).copy_(V)
        torch.add(g.narrow(-1, keep_at, n), gz, alpha=2 * sign, out=gx.narrow(-1, keep_at, n))
        return gx.view(shape), gA, None, None


def symattn_native(z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
    """The update through the ``native`` route (arguments checked, :func:`native_reason` None)."""
    return _NativeUpdate.apply(z, A, activation)


def shear_native(x: torch.Tensor, A: torch.Tensor, activation: str, first: bool, sign: float) -> torch.Tensor:
    """The shear of ``x`` (``(..., T, 2n)``) by ``sign`` times the update of its ``first`` (or last) half through
    the ``native`` route (arguments checked, :func:`native_reason` None for that half)."""
    return _NativeUpdate.apply(x, A, activation, (bool(first), float(sign)))
