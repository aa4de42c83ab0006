r"""The ``sdpa`` route of symplectic attention: the update over all entries with a symmetric ``A`` as one call of
torch's fused CPU attention, which never forms a ``T x T`` matrix.

Note [symplectic attention through SDPA]
----------------------------------------
With a symmetric :math:`A` the matrix :math:`C = zAz^T` is symmetric, so is the softmax :math:`G` over all its
entries, and the update :math:`GzA^T + G^TzA` is :math:`2GzA`. The softmax over all entries is the softmax of each
row rescaled: with :math:`a = zA`, :math:`C = az^T`, :math:`P` the row softmax of :math:`C` and
:math:`\ell_i = \log\sum_j e^{C_{ij}}` its log-sum-exp,

.. math::

    G = \mathrm{diag}(w)\,P,\qquad w_i = \frac{e^{\ell_i}}{\epsilon + \sum_k e^{\ell_k}},\qquad
    U = 2\,w \odot O,\qquad O = P\,a

(:math:`\epsilon = 1` for the one softmax, else 0; ledger ``symattn.sdpa_form``). :math:`O` and :math:`\ell` are
what the fused CPU attention kernel of torch returns for queries :math:`a`, keys :math:`z`, values :math:`a` at
scale 1: one pass over key blocks per query block, no ``T x T`` matrix in memory.

The backward (ledger ``symattn.sdpa_vjp``): with :math:`\bar O = 2w\odot\bar U`, :math:`\bar w_i = 2\bar U_i\cdot
O_i` and :math:`\bar\ell_i = w_i(\bar w_i - \sum_k w_k\bar w_k)`, the attention's backward with the extra
gradient :math:`\bar\ell` of its log-sum-exp is :math:`\bar C = P\odot(\bar Oa^T - (D - \bar\ell)\mathbf 1^T)`,
:math:`D_i = \bar O_i\cdot O_i`. Torch's backward kernel computes :math:`D` from the output and its gradient it
is given; passing the values with one more column of zeros, the output with a column of ones and the output's
gradient with the column :math:`-\bar\ell` makes it compute :math:`D - \bar\ell` and leaves every other product
unchanged (queries and keys get a zero column too: the kernel wants one head size). Then
:math:`\bar a = \bar q + \bar v`, :math:`\bar z = \bar k + \bar aA^T` and :math:`\bar A =
\tfrac12(z^T\bar a + \bar a^Tz)`: the update over all entries is the same function of :math:`A` and
:math:`A^T` (the sum over all entries of :math:`C` does not see the transpose), so its gradient at a symmetric
:math:`A` is symmetric, and the symmetric part of the one-product form's gradient is that gradient.

The route serves CPU float32 and float64 inputs with one weighting ``A`` equal to its transpose, the softmaxes
over all entries, outside functorch transforms and ``torch.compile``, when torch has the kernel. A graph of the
backward (``create_graph=True``) and a batch of incoming gradients (``is_grads_batched=True``) take the VJP of
the generated forward, as on the other routes. Each sample is one
attention call of its own: no result depends on the other samples of the batch.

Note [the shear in one call]
----------------------------
The layer's map :math:`(q, p) \mapsto (q, p + sU(q))` (:func:`geoattn.kernels.symattn_shear`, :math:`s = \pm1`)
composed from the update would add :math:`U` to :math:`p` and concatenate the halves, and its backward would
concatenate the halves' gradients and add the update's gradient to that of :math:`q`: passes over the tokens
around the attention call that cost a tenth of the layer's time at ``dim = 4``. Where the update takes this route,
the shear is one autograd function: the forward writes :math:`q` and :math:`p + 2s\,w\odot O` (one ``addcmul``)
into the two halves of one output; the backward reads the incoming gradient's :math:`p` half as
:math:`\bar U/s` (the sign carried by the ``(B, T)`` factors :math:`w` and :math:`\bar w`), copies it to the
:math:`p` half of the input's gradient and writes :math:`\bar q + \bar z` into the :math:`q` half, the product
:math:`\bar aA^T` added in place. The functions are those of the composition (same claims), with fewer passes.
The ``dense`` route (Note [dense symplectic attention]) has the same one-call shear.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import _generated as gen
from ._functions import _under_functorch
from ._gram import _dual
from ._symattn import SYMATTN_ACTIVATIONS

__all__ = ["symattn_sdpa", "shear_sdpa", "sdpa_reason", "HAVE_FLASH"]

_FLASH = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_FLASH_BACKWARD = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)
#: whether this torch has the fused CPU attention kernel and its backward
HAVE_FLASH = _FLASH is not None and _FLASH_BACKWARD is not None


def sdpa_reason(z: torch.Tensor, A: torch.Tensor, activation: str) -> str | None:
    """None when the ``sdpa`` route serves the (checked) arguments, else why not."""
    if not HAVE_FLASH:
        return "this torch has no fused CPU attention kernel with its log-sum-exp"
    if z.device.type != "cpu":
        return f"device {z.device.type}: the route calls torch's CPU attention kernel"
    if SYMATTN_ACTIVATIONS[activation][0] != "all":
        return f"activation {activation!r}: the column softmax's transpose is not an attention call"
    if z.dtype not in (torch.float32, torch.float64):
        return f"{z.dtype}: the route takes float32 and float64"
    if A.dim() != 2:
        return f"A batched (shape {tuple(A.shape)}): the route takes one (n, n) weighting"
    if _dual(z) or _dual(A):
        return "a forward-mode tangent: the route has no jvp"
    if not torch.equal(A, A.mT):
        return "A is not symmetric: G z A^T + G^T z A is two attention calls, not one"
    return None


def _weights(lse: torch.Tensor, one: bool) -> torch.Tensor:
    """:math:`w_i = e^{\\ell_i} / (\\epsilon + \\sum_k e^{\\ell_k})`, computed as a softmax (``(B, T)``)."""
    if not one:
        return torch.softmax(lse, dim=-1)
    return torch.softmax(F.pad(lse, (0, 1)), dim=-1)[..., :-1]  # the extra 1 is a zero logit


def _attend(zf: torch.Tensor, A: torch.Tensor, T: int):
    """One attention call for the rows ``zf`` (``(N, n)``, any row stride): queries and values ``a = zA`` and keys
    ``z``, each with a zero column, in one buffer ``qk`` (``(2, N, n + 1)``); returns ``qk``, the output and lse."""
    n = zf.shape[-1]
    qk = zf.new_empty(2, zf.shape[0], n + 1)
    torch.mm(zf, A, out=qk[0, :, :n])
    qk[1, :, :n] = zf
    qk[:, :, n] = 0
    q, k = (t.view(-1, 1, T, n + 1) for t in qk)
    out, lse = _FLASH(q, k, q, 0.0, False, scale=1.0)
    return qk, out, lse[:, 0]


def _backward(qk, out, lse, w, A, V: torch.Tensor, sign: float, base=None, into=None):
    """``(gz, gA)`` for the incoming gradient ``sign * V`` of the update (``V`` ``(B, T, n)``, any token stride):
    the sign rides on the ``(B, T)`` factors, so no pass over ``V`` scales it. With ``base`` and ``into`` (both
    ``(B, T, n)``, any token stride), ``base + gz`` is written into ``into``, which is returned as ``gz``."""
    B, T, n = V.shape
    O = out[:, 0, :, :n]
    gw = (V * O).sum(-1).mul_(2 * sign)
    glse = w * (gw - (w * gw).sum(-1, keepdim=True))
    g_out = torch.empty_like(out)
    torch.mul(V, (2 * sign) * w.unsqueeze(-1), out=g_out[:, 0, :, :n])
    g_out[:, 0, :, n] = -glse
    out[..., n] = 1  # the output's extra column: the kernel then computes D - glse (idempotent)
    q, k = (t.view(-1, 1, T, n + 1) for t in qk)
    gq, gk, gv = _FLASH_BACKWARD(g_out, q, k, q, out, lse.unsqueeze(1), 0.0, False, scale=1.0)
    ga = torch.add(gq[:, 0, :, :n], gv[:, 0, :, :n]).view(-1, n)
    if base is None:
        gz = gk[:, 0, :, :n].clone(memory_format=torch.contiguous_format)
    else:
        gz = torch.add(base, gk[:, 0, :, :n], out=into)
    gz.flatten(0, 1).addmm_(ga, A.mT)  # in place: the rows of a (B, T, 2n) buffer are a strided matrix
    gA = qk[1, :, :n].mT @ ga
    return gz, 0.5 * (gA + gA.mT)


def _generated_vjp(ctx, args, grad):
    """The VJP of the generated form (a graph of the backward, or a batch of incoming gradients); for the shear
    ``args`` holds the half read, and the kept half's gradient passes through."""
    forward = getattr(gen, f"symattn_update_{ctx.activation}")
    _, pullback = torch.func.vjp(lambda a, b: forward(a, b)[0], *args)
    shear = getattr(ctx, "shear", None)  # the update's routes without a shear form set none
    if shear is None:
        return pullback(grad)
    (first, sign), n = shear, args[1].shape[-1]
    keep, other = (grad[..., :n], grad[..., n:]) if first else (grad[..., n:], grad[..., :n])
    gr, gA = pullback(sign * other)
    keep = keep + gr
    return torch.cat([keep, other] if first else [other, keep], dim=-1), gA


class _SdpaUpdate(torch.autograd.Function):
    """See Note [symplectic attention through SDPA]. ``shear`` None: the update of ``z``; else ``(first, sign)``
    and ``z`` is a phase-space ``x`` (``(..., T, 2n)``): the map that keeps the half ``first`` says (the first
    ``n`` features when True) and adds ``sign`` times the update of it to the other half, written in one output
    (Note [the shear in one call])."""

    @staticmethod
    def forward(ctx, z: torch.Tensor, A: torch.Tensor, activation: str, shear=None) -> torch.Tensor:
        shape = z.shape
        T, n = shape[-2], A.shape[-1]
        zf = z.reshape(-1, T, shape[-1])
        read = zf if shear is None else zf.narrow(-1, 0 if shear[0] else n, n)
        qk, out, lse = _attend(read.reshape(-1, n) if shear is None else read.flatten(0, 1), A, T)
        w = _weights(lse, SYMATTN_ACTIVATIONS[activation][1])
        half = z if shear is None else z.narrow(-1, 0 if shear[0] else n, n)  # the half read: a view of z
        ctx.save_for_backward(half, A, qk, lse, w)
        ctx.out = out  # not saved: the backward writes its extra column (a buffer of this function alone)
        ctx.activation, ctx.shear = activation, shear
        if shear is None:
            return (2 * w.unsqueeze(-1) * out[:, 0, :, :n]).view(shape)
        y = torch.empty_like(zf)
        first, sign = shear
        y.narrow(-1, 0 if first else n, n).copy_(read)
        other = 1 if first else 0
        torch.addcmul(zf.narrow(-1, other * n, n), w.unsqueeze(-1), out[:, 0, :, :n], value=2 * sign,
                      out=y.narrow(-1, other * n, n))
        return y.view(shape)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        z, A, qk, lse, w = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(grad):
            return (*_generated_vjp(ctx, (z, A), grad), None, None)
        shape = grad.shape
        T, n = shape[-2], A.shape[-1]
        if ctx.shear is None:
            gz, gA = _backward(qk, ctx.out, lse, w, A, grad.reshape(-1, T, n), 1.0)
            return gz.view(shape), gA, None, None
        first, sign = ctx.shear
        g = grad.reshape(-1, T, 2 * n)
        keep, other = (0, n) if first else (n, 0)
        gx = torch.empty_like(g)
        gx.narrow(-1, other, n).copy_(g.narrow(-1, other, n))
        _, gA = _backward(qk, ctx.out, lse, w, A, g.narrow(-1, other, n), sign, base=g.narrow(-1, keep, n),
                          into=gx.narrow(-1, keep, n))
        return gx.view(shape), gA, None, None


def symattn_sdpa(z: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
    """The update through the ``sdpa`` route (arguments checked, :func:`sdpa_reason` None)."""
    return _SdpaUpdate.apply(z, A, activation)


def shear_sdpa(x: torch.Tensor, A: torch.Tensor, activation: str, first: bool, sign: float) -> torch.Tensor:
    """The shear of ``x`` (``(..., T, 2n)``) by ``sign`` times the update of its ``first`` (or last) half through
    the ``sdpa`` route (arguments checked, :func:`sdpa_reason` None for that half)."""
    return _SdpaUpdate.apply(x, A, activation, (bool(first), float(sign)))
