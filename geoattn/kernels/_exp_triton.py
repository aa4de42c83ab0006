r"""The exponential of skew matrices of size <= 4 as a Triton kernel: the route ``closed-small/triton`` of
``exp_skew``.

Note [exp_skew Triton kernel]
-----------------------------
The kernel ``exp_skew_small_fwd`` (``geoattn/kernels/_triton_exp_skew_small_fwd_d4.py``, printed by
``geoattn codegen`` from ``TRITON_KERNELS`` in :mod:`geoattn.symbolic.native_table`) reads one ``4 x 4`` matrix
``S`` per lane, forms its skew part ``K = (S - S^T)/2`` (exactly skew in floating point) and evaluates the closed
form of ``exp_skew.hodge_form`` on ``K`` (Note [exp of a 4 x 4 skew matrix] in
:mod:`geoattn.symbolic.expressions`): two square roots, two cosines and two ``sin(t)/t``, in float64, rounded once
when stored. It also stores the largest entries of ``S + S^T`` and of ``S`` for the skew check. A ``T x T`` input
with ``T < 4`` is padded with zeros first and cut back (``exp(diag(S, 0)) = diag(exp(S), 1)``), as
:func:`geoattn.kernels._exp.exp_skew_closed` does.

Per sample, as the eager routes: a sample whose ``S + S^T`` exceeds the skew tolerance (possible with
``check=False``), or is NaN or infinite, is computed again by the eager ``auto`` path (Taylor or eigendecomposition,
Note [large norms] in :mod:`geoattn.kernels._exp`), so a NaN stays in its sample and a non-skew sample gets
``exp(S)`` of the matrix given, not of its skew part. A skew sample within the tolerance gets ``exp(K)``, which
differs from ``exp(S)`` by at most that tolerance. The closed form has no squarings, so its orthogonality does not
degrade with the norm; ``Tr(K_pm^2)`` is summed in float64, which holds the squares of every float32 entry
(``3.4e38^2 < 1.8e308``), so no finite float32 or half sample overflows.

The backward of the skew samples is the printed kernel ``exp_skew_small_vjp`` (Note [the half-turn VJP] in
:mod:`geoattn.symbolic.native_table`, claims ``exp_skew.hodge_vjp`` and ``exp_skew.hodge_vjp_series``): the gradient
of ``<G, exp(K)>`` in ``S``, in float64 per lane. It is the **skew projection** ``(g - g^T)/2`` of the eager route's
gradient ``g`` (the Frechet adjoint of ``exp`` at ``S`` in every direction of ``T x T`` matrices, symmetric ones
included): the forward reads a skew sample through its skew part only. The two agree on the gradient of anything
computed from a skew parametrisation (``S = C - C^T``, ``skew_from_lower``, ``uta``), whose backward projects
anyway; a caller that differentiates with respect to a skew leaf ``S`` gets a gradient that keeps it skew. Samples
that are not skew up to the tolerance (NaN and infinite ones included) had the eager forward and get its
gradient. With a graph of the backward (double backward), or a vmapped incoming gradient, the skew samples get the
skew part of the differentiable Frechet adjoint ``[exp([[S^T, G], [0, S^T]])]_{12}``, the others all of it.
The kernel's ``q(t) = (cos t - sinc t)/t^2`` cancels as ``t -> 0``: below ``t = 1/2`` it takes the series (a
``tl.where`` per lane), so a zero angle (``S = 0``, or a vanishing ``K_+`` or ``K_-``) is exact.
"""

from __future__ import annotations

import torch

from . import _triton
from ._checks import tolerance_at
from ._exp import EXP_CLOSED_MAX, _exp_frechet_adjoint, run_exp_skew
from ._functions import _under_functorch

__all__ = ["exp_small_forward", "exp_small_vjp", "exp_skew_small", "KERNEL", "VJP_KERNEL"]

#: the printed kernel's name (its one width is EXP_CLOSED_MAX)
KERNEL = "exp_skew_small_fwd"
#: the printed backward (the same width)
VJP_KERNEL = "exp_skew_small_vjp"


def exp_small_forward(s: torch.Tensor, module=None):
    """``(E, skew, size)`` for ``s`` of shape ``(B, T, T)`` with ``1 <= T <= 4`` (contiguous, float32, float16 or
    bfloat16): the closed form of the skew part's exponential in ``s``'s dtype, and per sample the float64
    ``max |S + S^T|`` and ``max |S|``. ``module`` (default: the generated one) is for the tests' broken kernels.

    Parameters
    ----------
    s : Tensor ``(B, T, T)``
    module : module or None

    Returns
    -------
    (Tensor, Tensor, Tensor)
    """
    if (s.dim() != 3 or not s.is_contiguous() or s.dtype not in _triton.REALS or s.shape[-1] != s.shape[-2]
            or not 1 <= s.shape[-1] <= EXP_CLOSED_MAX):
        raise ValueError(f"Expected S as a contiguous tensor (B, T, T) with 1 <= T <= {EXP_CLOSED_MAX} of float32, "
                         f"float16 or bfloat16. Got {s.dtype} {tuple(s.shape)}.")
    B, T, _ = s.shape
    n = EXP_CLOSED_MAX
    padded = s if T == n else torch.nn.functional.pad(s, (0, n - T, 0, n - T)).contiguous()
    e = torch.empty_like(padded)
    skew, size = (torch.empty(B, dtype=torch.float64, device=s.device) for _ in range(2))
    if B:
        _triton._launch(module or _triton.kernels(KERNEL, n), KERNEL, n, B, n, [padded, e, skew, size], s.device)
    return (e if T == n else e[:, :T, :T].contiguous()), skew, size


def _padded(s: torch.Tensor) -> torch.Tensor:
    n, T = EXP_CLOSED_MAX, s.shape[-1]
    return s.contiguous() if T == n else torch.nn.functional.pad(s, (0, n - T, 0, n - T)).contiguous()


def exp_small_vjp(s: torch.Tensor, g: torch.Tensor, module=None) -> torch.Tensor:
    """The gradient of ``<g, exp(K)>`` in ``s``, ``K = (s - s^T)/2``, for ``s`` and ``g`` of shape ``(B, T, T)``
    with ``1 <= T <= 4`` (one dtype: float32, float16, bfloat16 or float64): the skew projection of ``exp``'s
    gradient (Note [exp_skew Triton kernel]), computed in float64 and returned in ``s``'s dtype. ``module``
    (default: the generated one) is for the tests' broken kernels.

    Parameters
    ----------
    s, g : Tensor ``(B, T, T)``
    module : module or None

    Returns
    -------
    Tensor ``(B, T, T)``
    """
    if (s.dim() != 3 or s.dtype not in _triton.EXP_REALS or s.shape[-1] != s.shape[-2]
            or not 1 <= s.shape[-1] <= EXP_CLOSED_MAX):
        raise ValueError(f"Expected S as a tensor (B, T, T) with 1 <= T <= {EXP_CLOSED_MAX} of float32, float16, "
                         f"bfloat16 or float64. Got {s.dtype} {tuple(s.shape)}.")
    if g.shape != s.shape or g.dtype != s.dtype or g.device != s.device:
        raise ValueError(f"Expected G of the shape, dtype and device of S ({tuple(s.shape)}, {s.dtype}, {s.device}). "
                         f"Got {tuple(g.shape)}, {g.dtype}, {g.device}.")
    B, T, _ = s.shape
    n = EXP_CLOSED_MAX
    sp_, gp = _padded(s), _padded(g)
    out = torch.empty_like(sp_)
    if B:
        _triton._launch(module or _triton.kernels(VJP_KERNEL, n), VJP_KERNEL, n, B, n, [sp_, gp, out], s.device)
    return out if T == n else out[:, :T, :T].contiguous()


class _ExpSkewSmall(torch.autograd.Function):
    # Note [exp_skew Triton kernel]: the kernel on the samples that are skew up to the tolerance, the eager auto path
    # on the others; the eager backward.
    @staticmethod
    def forward(ctx, s):
        T = s.shape[-1]
        flat = s.detach().reshape(-1, T, T).contiguous()
        e, defect, size = exp_small_forward(flat)
        skew = defect <= tolerance_at(T, s.dtype, size)  # NaN: not skew
        if not bool(skew.all()):
            e[~skew] = run_exp_skew(flat[~skew], "auto")
        ctx.save_for_backward(s, skew.reshape(s.shape[:-2]))
        return e.reshape(s.shape)

    @staticmethod
    def backward(ctx, grad):
        s, skew = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(grad):
            # a graph of the backward, or a vmapped incoming gradient (is_grads_batched): the differentiable
            # Frechet adjoint, built from torch operations that vmap and differentiate; its skew part on the skew
            # samples, as the kernel's
            g = _exp_frechet_adjoint(s, grad)
            return torch.where(skew[..., None, None], (g - g.mT) / 2, g)
        T = s.shape[-1]
        flat_s, flat_g = s.detach().reshape(-1, T, T), grad.reshape(-1, T, T).to(s.dtype)
        out = exp_small_vjp(flat_s.contiguous(), flat_g.contiguous())
        other = ~skew.reshape(-1)
        if bool(other.any()):  # the eager forward's samples: its gradient
            with torch.enable_grad():
                x = flat_s[other].requires_grad_()
                (out[other],) = torch.autograd.grad(run_exp_skew(x, "auto"), x, flat_g[other])
        return out.reshape(s.shape)


def exp_skew_small(s: torch.Tensor) -> torch.Tensor:
    """``exp(S)`` of ``(..., T, T)`` matrices with ``T <= 4`` (float32, float16 or bfloat16) by the printed kernel,
    with the printed backward on the skew samples: the skew projection of the gradient (Note [exp_skew Triton
    kernel]).

    Parameters
    ----------
    s : Tensor ``(..., T, T)``, skew-symmetric

    Returns
    -------
    Tensor ``(..., T, T)``
    """
    return _ExpSkewSmall.apply(s)
