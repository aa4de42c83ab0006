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

The backward is the eager route's: without a graph of it, the gradient of the eager ``auto`` forward recomputed on
the saved input (the Taylor path's ``exp_skew.taylor_vjp`` and ``exp_skew.square_vjp`` up to norm 512, the
Daleckii--Krein ``exp_skew.vjp`` above); with one (double backward), the Frechet adjoint
``[exp([[S^T, G], [0, S^T]])]_{12}``. The closed form is not differentiated: the gradient of ``exp`` is asked for
in every direction of ``T x T`` matrices, symmetric ones included, where the closed form of the skew part says
nothing, and its derivative divides by a half-turn angle that is zero at ``S = 0`` and on every sample whose
``K_+`` or ``K_-`` vanishes (``(cos t - sinc t)/t^2`` in float64 cancels as ``t -> 0``).
"""

from __future__ import annotations

import torch

from . import _triton
from ._checks import tolerance_at
from ._exp import EXP_CLOSED_MAX, _exp_frechet_adjoint, run_exp_skew
from ._functions import _under_functorch

__all__ = ["exp_small_forward", "exp_skew_small", "KERNEL"]

#: the printed kernel's name (its one width is EXP_CLOSED_MAX)
KERNEL = "exp_skew_small_fwd"


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
        ctx.save_for_backward(s)
        return e.reshape(s.shape)

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        if torch.is_grad_enabled() or _under_functorch(grad):
            # a graph of the backward, or a vmapped incoming gradient (is_grads_batched): the differentiable
            # Frechet adjoint, built from torch operations that vmap and differentiate
            return _exp_frechet_adjoint(s, grad)
        with torch.enable_grad():
            x = s.detach().requires_grad_()
            (g,) = torch.autograd.grad(run_exp_skew(x, "auto"), x, grad)
        return g


def exp_skew_small(s: torch.Tensor) -> torch.Tensor:
    """``exp(S)`` of ``(..., T, T)`` matrices with ``T <= 4`` (float32, float16 or bfloat16) by the printed kernel,
    with the eager backward (Note [exp_skew Triton kernel]).

    Parameters
    ----------
    s : Tensor ``(..., T, T)``, skew-symmetric

    Returns
    -------
    Tensor ``(..., T, T)``
    """
    return _ExpSkewSmall.apply(s)
