r"""The ``flash`` route of symplectic attention: the update over all entries with a symmetric ``A`` by the Triton
kernels of :mod:`geoattn.kernels._triton_symattn` (Note [flash symplectic attention] there), on CUDA tensors, or on
CPU tensors in Triton's interpreter with the backend forced (Note [Triton backend] in
:mod:`geoattn.kernels._triton`).

The kernels return the attention output :math:`O` and the row log-sum-exps :math:`\ell` of queries and values
:math:`a = zA`, keys :math:`z`; here :math:`w = \mathrm{softmax}(\ell)` and :math:`U = 2w\odot O`
(``symattn.sdpa_form``). The backward (``symattn.sdpa_vjp``) forms :math:`\bar O = 2w\odot\bar U`,
:math:`\bar w_i = 2\bar U_i\cdot O_i`, :math:`\bar\ell_i = w_i(\bar w_i - \sum_k w_k\bar w_k)` and
:math:`D_i = \bar O_i\cdot O_i`, lets the kernels recompute the probabilities block by block, and adds the
queries' and the values' gradients into :math:`\bar a`: :math:`\bar z = \bar k + \bar aA^T`,
:math:`\bar A = \tfrac12(z^T\bar a + \bar a^Tz)` (symmetric, ``symattn.transpose_invariant``). Everything is
float32 inside; the result has ``z``'s dtype. A graph of the backward (``create_graph=True``) or a functorch
transform of it takes the VJP of the generated forward, as on the ``sdpa`` route.
"""

from __future__ import annotations

import torch

from . import _triton
from ._functions import _under_functorch
from ._gram import _dual
from ._symattn import SYMATTN_ACTIVATIONS
from ._symattn_sdpa import _generated_vjp, _weights

__all__ = ["symattn_flash", "flash_reason", "flash_forward", "flash_backward", "MAX_WIDTH", "BLOCKS"]

#: the widest z the kernels take (the feature axis is padded to a power of two, held in registers)
MAX_WIDTH = 64
#: (query rows, keys) per block: on a GPU, and in the interpreter (small, so that the tests' T crosses blocks)
BLOCKS = {"cuda": (64, 64), "cpu": (8, 8)}


def flash_reason(z: torch.Tensor, A: torch.Tensor, activation: str) -> str | None:
    """None when the ``flash`` route serves the (checked) arguments, else why not (the Triton backend's own check,
    device and interpreter, comes first)."""
    if SYMATTN_ACTIVATIONS[activation][0] != "all":
        return f"activation {activation!r}: the column softmax's transpose is not an attention call"
    if z.dtype not in _triton.REALS:
        return f"{z.dtype}: the Triton kernels take float32, float16 or bfloat16 (float64 keeps the eager forms)"
    if A.dim() != 2:
        return f"A batched (shape {tuple(A.shape)}): the route takes one (n, n) weighting"
    if z.shape[-1] > MAX_WIDTH:
        return f"n = {z.shape[-1]} > {MAX_WIDTH}: the kernels hold a block of tokens' features in registers"
    if _dual(z) or _dual(A):
        return "a forward-mode tangent: the route has no jvp"
    if not torch.equal(A, A.mT):  # one (n, n) comparison
        return "A is not symmetric: G z A^T + G^T z A is two attention calls, not one"
    return None


def _setup(x: torch.Tensor):
    B, T, n = x.shape
    bm, bn = BLOCKS["cuda" if x.device.type == "cuda" else "cpu"]
    return B, T, n, bm, bn, max(16, _triton.next_pow2(n))


def _check(name: str, t: torch.Tensor, like: torch.Tensor, dtypes) -> None:
    if t.shape != like.shape or not t.is_contiguous() or t.dtype not in dtypes or t.device != like.device:
        raise ValueError(f"Expected {name} contiguous, of shape {tuple(like.shape)}, dtype in {tuple(dtypes)} and "
                         f"on {like.device}. Got {t.dtype} {tuple(t.shape)} on {t.device} "
                         f"({'' if t.is_contiguous() else 'not '}contiguous).")


def _run(fn, grid, device, *args, **consts) -> None:
    if device.type == "cuda":
        with torch.cuda.device(device):
            fn[grid](*args, **consts)
    else:
        fn[grid](*args, **consts)


def flash_forward(a: torch.Tensor, z: torch.Tensor):
    """``(O, lse)``: the attention output (float32 ``(B, T, n)``) and the row log-sum-exps (float32 ``(B, T)``) of
    queries and values ``a``, keys ``z`` (both ``(B, T, n)``, contiguous, float32, float16 or bfloat16)."""
    if z.dim() != 3 or not 1 <= z.shape[-1] <= MAX_WIDTH:
        raise ValueError(f"Expected z of shape (B, T, n) with 1 <= n <= {MAX_WIDTH}. Got shape {tuple(z.shape)}.")
    _check("z", z, z, _triton.REALS)
    _check("a", a, z, _triton.REALS)
    B, T, n, bm, bn, D = _setup(z)
    O = torch.empty(B, T, n, dtype=torch.float32, device=z.device)
    lse = torch.empty(B, T, dtype=torch.float32, device=z.device)
    if B * T:
        k = _triton.written_kernels("_triton_symattn")
        _run(k.symattn_fwd, (B, _cdiv(T, bm)), z.device, a, z, O, lse, T, n, BLOCK_M=bm, BLOCK_N=bn, D=D)
    return O, lse


def _cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` of positive integers."""
    return -(-a // b)


def flash_backward(a, z, go, lse, delta, glse, drop_lse: bool = False):
    """``(ga, gk)``: the gradient in the queries plus the values (both ``a``) and in the keys ``z``, float32
    ``(B, T, n)``, for the output's gradient ``go`` (float32 ``(B, T, n)``), the forward's ``lse`` and the rows'
    ``delta = go . O`` and ``glse`` (float32 ``(B, T)``). ``drop_lse`` leaves ``glse`` out (the tests' negative
    control: ``symattn.sdpa_vjp.without_lse``)."""
    _check("z", z, z, _triton.REALS)
    _check("a", a, z, _triton.REALS)
    _check("go", go, z, (torch.float32,))
    for name, t in (("lse", lse), ("delta", delta), ("glse", glse)):
        _check(name, t, z[..., 0], (torch.float32,))
    B, T, n, bm, bn, D = _setup(z)
    gq, gk, gv = (torch.empty(B, T, n, dtype=torch.float32, device=z.device) for _ in range(3))
    if B * T:
        k = _triton.written_kernels("_triton_symattn")
        args = (a, z, go, lse, delta, glse)
        consts = dict(BLOCK_M=bm, BLOCK_N=bn, D=D, DROP_LSE=bool(drop_lse))
        _run(k.symattn_bwd_kv, (B, _cdiv(T, bn)), z.device, *args, gk, gv, T, n, **consts)
        _run(k.symattn_bwd_q, (B, _cdiv(T, bm)), z.device, *args, gq, T, n, **consts)
    return gq.add_(gv), gk


class _FlashUpdate(torch.autograd.Function):
    """See the module's docstring."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, A: torch.Tensor, activation: str, drop_lse: bool = False) -> torch.Tensor:
        shape = z.shape
        T, n = shape[-2], shape[-1]
        zf = z.detach().reshape(-1, T, n).contiguous()
        Af = A.detach().float()
        a = torch.matmul(zf.float(), Af)
        O, lse = flash_forward(a, zf)
        w = _weights(lse, SYMATTN_ACTIVATIONS[activation][1])
        ctx.save_for_backward(z, A, zf, a, O, lse, w)
        ctx.activation, ctx.drop_lse = activation, drop_lse
        return (2 * w.unsqueeze(-1) * O).to(z.dtype).view(shape)

    @staticmethod
    def backward(ctx, gU: torch.Tensor):
        z, A, zf, a, O, lse, w = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(gU):
            return (*_generated_vjp(ctx, (z, A), gU), None, None)
        g = gU.reshape(O.shape).float()
        gw = 2 * (g * O).sum(-1)
        glse = w * (gw - (w * gw).sum(-1, keepdim=True))
        go = (2 * w.unsqueeze(-1)) * g
        delta = (go * O).sum(-1)
        ga, gk = flash_backward(a, zf, go.contiguous(), lse, delta, glse.contiguous(), ctx.drop_lse)
        Af = A.float()
        gz = torch.addmm(gk.view(-1, gk.shape[-1]), ga.view(-1, ga.shape[-1]), Af.mT)
        gA = zf.float().reshape(-1, zf.shape[-1]).mT @ ga.view(-1, ga.shape[-1])
        return gz.to(z.dtype).view(z.shape), (0.5 * (gA + gA.mT)).to(A.dtype), None, None


def symattn_flash(z: torch.Tensor, A: torch.Tensor, activation: str, drop_lse: bool = False) -> torch.Tensor:
    """The update through the ``flash`` route (arguments checked, the backend's check and :func:`flash_reason`
    None); ``drop_lse`` is the tests' negative control (the backward without the log-sum-exp's gradient)."""
    return _FlashUpdate.apply(z, A, activation, drop_lse)
