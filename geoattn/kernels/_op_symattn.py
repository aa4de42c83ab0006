r"""The operations ``symattn_update`` and ``symattn_potential``: nonlinear symplectic attention, its checks and
its routes (Note [symplectic attention backward] in :mod:`geoattn.kernels._symattn`)."""

from __future__ import annotations

import torch

from ..errors import OptionError, ShapeError
from ._backends import EAGER, TRITON
from ._checks import check_float, check_same, check_square, half_in_float32
from ._functions import _traced
from ._gram import _dual
from ._symattn import SYMATTN_ACTIVATIONS, symattn_forward, symattn_potential_value
from ._symattn_flash import flash_reason, symattn_flash
from ._symattn_dense import dense_reason, shear_dense, symattn_dense
from ._symattn_fused import symattn_fused
from ._symattn_native import native_reason, shear_native, symattn_native
from ._symattn_sdpa import sdpa_reason, shear_sdpa, symattn_sdpa
from .dispatch import Call, Operation, Route, dispatch, explain, register_operation

__all__ = ["symattn_update", "symattn_shear", "symattn_potential", "SYMATTN_UPDATE", "SYMATTN_SHEAR",
           "SYMATTN_POTENTIAL"]


def _bind(z: torch.Tensor, A: torch.Tensor, activation: str = "matrix_softmax") -> Call:
    if activation not in SYMATTN_ACTIVATIONS:
        raise OptionError(f"Expected activation in {tuple(SYMATTN_ACTIVATIONS)}. Got {activation!r}.")
    check_float("z", z)
    check_float("A", A)
    check_square("A", A)
    if z.dim() < 2:
        raise ShapeError(f"Expected z of shape (..., T, n). Got shape {tuple(z.shape)}.")
    if A.shape[-1] != z.shape[-1]:
        raise ShapeError(f"Expected A of shape ({z.shape[-1]}, {z.shape[-1]}) for z with n = {z.shape[-1]} "
                         f"features. Got shape {tuple(A.shape)}.")
    check_same(("z", z), ("A", A))
    return Call(z=z, A=A, activation=activation, T=z.shape[-2], n=z.shape[-1], device=z.device,
                traced=_traced(z) or _traced(A))


def _fused_when(c: Call) -> str | None:
    """The fused route serves one weighting for the batch, on the CPU, outside transforms and compilation."""
    if c.device.type != "cpu":
        return (f"device {c.device.type}: the fused route's blocks are sized for CPU caches, and its symmetry test "
                f"of A would synchronise the device")
    if c.traced:
        return "traced (torch.func transform, torch.compile or meta tensors): the generated forward is traced"
    if c.A.dim() != 2:
        return f"A batched (shape {tuple(c.A.shape)}): the fused route takes one (n, n) weighting"
    if _dual(c.z) or _dual(c.A):
        return "a forward-mode tangent: the fused route has no jvp"
    return None


def _flash_when(c: Call) -> str | None:
    """The ``flash`` route (Triton, Note [flash symplectic attention] in :mod:`geoattn.kernels._triton_symattn`): a
    symmetric weighting, the softmaxes over all entries; the Triton backend's check says on which devices."""
    return flash_reason(c.z, c.A, c.activation)


def _sdpa_when(c: Call) -> str | None:
    """The ``sdpa`` route: a symmetric weighting, the softmaxes over all entries, CPU, outside transforms."""
    if c.traced:
        return "traced (torch.func transform, torch.compile or meta tensors): the generated forward is traced"
    return sdpa_reason(c.z, c.A, c.activation)


def _native_when(c: Call) -> str | None:
    """The ``native`` route: the compiled kernel for a symmetric weighting, the softmaxes over all entries, CPU,
    ``T`` of at least :func:`~geoattn.kernels._symattn_native.native_min_t` of the head size."""
    if c.traced:
        return "traced (torch.func transform, torch.compile or meta tensors): the generated forward is traced"
    if _dual(c.z) or _dual(c.A):
        return "a forward-mode tangent: the route has no jvp"
    return native_reason(c.z, c.A, c.activation)


def _dense_when(c: Call) -> str | None:
    """The ``dense`` route: a short sequence, a symmetric weighting, the softmaxes over all entries, CPU."""
    if c.traced:
        return "traced (torch.func transform, torch.compile or meta tensors): the generated forward is traced"
    if _dual(c.z) or _dual(c.A):
        return "a forward-mode tangent: the route has no jvp"
    return dense_reason(c.z, c.A, c.activation)


def _empty(c: Call) -> str | None:
    """The ``empty`` route: a sequence of no tokens (or no samples), whose update is empty."""
    return None if c.z.numel() == 0 else "a non-empty input"


SYMATTN_UPDATE = register_operation(Operation(
    "symattn_update", _bind,
    (Route("empty", EAGER.name, _empty, lambda c: (c.z @ c.A) * 0, per_sample=""),
     Route("flash", TRITON.name, _flash_when, lambda c: symattn_flash(c.z, c.A, c.activation), per_sample="",
           claims=("symattn.potential_gradient", "symattn.sdpa_form", "symattn.sdpa_vjp",
                   "symattn.transpose_invariant")),
     Route("native", EAGER.name, _native_when, lambda c: symattn_native(c.z, c.A, c.activation),
           per_sample="", claims=("symattn.potential_gradient", "symattn.sdpa_form", "symattn.dense_vjp",
                                  "symattn.native_vjp")),
     Route("dense", EAGER.name, _dense_when, lambda c: symattn_dense(c.z, c.A, c.activation),
           per_sample="", claims=("symattn.potential_gradient", "symattn.sdpa_form", "symattn.dense_vjp")),
     Route("sdpa", EAGER.name, _sdpa_when, lambda c: symattn_sdpa(c.z, c.A, c.activation),
           per_sample="", claims=("symattn.potential_gradient", "symattn.sdpa_form", "symattn.sdpa_vjp")),
     Route("fused", EAGER.name, _fused_when, lambda c: symattn_fused(c.z, c.A, c.activation),
           per_sample="", claims=("symattn.potential_gradient", "symattn.fused_vjp", "symattn.fused_vjp.symmetric")),
     Route("generated", EAGER.name, lambda c: None, lambda c: symattn_forward(c.z, c.A, c.activation),
           per_sample="", claims=("symattn.potential_gradient", "symattn.layer_vjp")),),
    claims=("symattn.potential_gradient", "symattn.layer_symplectic"),
    doc="the gradient of the potential: G z A^T + G^T z A, G the softmax of z A z^T",
))
def _bind_shear(x: torch.Tensor, A: torch.Tensor, activation: str = "matrix_softmax", update: str = "p",
                sign: float = 1.0) -> Call:
    if update not in ("p", "q"):
        raise OptionError(f"Expected update to be 'p' or 'q'. Got {update!r}.")
    if x.dim() < 2 or A.dim() < 1 or x.shape[-1] != 2 * A.shape[-1]:
        raise ShapeError(f"Expected x of shape (..., T, 2n) for A of shape (n, n). Got x of shape {tuple(x.shape)} "
                         f"and A of shape {tuple(A.shape)}.")
    n = A.shape[-1]
    call = _bind(x[..., :n] if update == "p" else x[..., n:], A, activation)
    call.x, call.update, call.sign = x, update, float(sign)
    return call


def _shear_when(form: str):
    """``when`` of the shear's route ``form``: the shear in one call when ``symattn_update`` would take its route
    ``form`` for the half read."""

    def when(c: Call) -> str | None:
        route = explain("symattn_update", c.z, c.A, c.activation).route
        if route is None or route.form != form:
            return (f"symattn_update takes {route.name if route else 'no route'} for the half read: not the "
                    f"{form} shear")
        return None

    return when


def _shear_composed(c: Call) -> torch.Tensor:
    """``(q, p + sign U(q))`` (or ``(q + sign U(p), p)``) from :func:`symattn_update` and one concatenation."""
    q, p = c.x.split(c.A.shape[-1], dim=-1)
    if c.update == "p":
        return torch.cat([q, p + c.sign * dispatch("symattn_update", q, c.A, c.activation)], dim=-1)
    return torch.cat([q + c.sign * dispatch("symattn_update", p, c.A, c.activation), p], dim=-1)


SYMATTN_SHEAR = register_operation(Operation(
    "symattn_shear", _bind_shear,
    (Route("native", EAGER.name, _shear_when("native"),
           lambda c: shear_native(c.x, c.A, c.activation, c.update == "p", c.sign),
           per_sample="", claims=("symattn.potential_gradient", "symattn.sdpa_form", "symattn.dense_vjp",
                                  "symattn.native_vjp")),
     Route("dense", EAGER.name, _shear_when("dense"),
           lambda c: shear_dense(c.x, c.A, c.activation, c.update == "p", c.sign),
           per_sample="", claims=("symattn.potential_gradient", "symattn.sdpa_form", "symattn.dense_vjp")),
     Route("sdpa", EAGER.name, _shear_when("sdpa"),
           lambda c: shear_sdpa(c.x, c.A, c.activation, c.update == "p", c.sign),
           per_sample="", claims=("symattn.potential_gradient", "symattn.sdpa_form", "symattn.sdpa_vjp")),
     Route("update", EAGER.name, lambda c: None, _shear_composed, per_sample="",
           claims=("symattn.potential_gradient",)),),
    claims=("symattn.layer_symplectic", "symattn.gradient_shear_symplectic"),
    doc="the shear (q, p + sign grad Sigma(q)) (or of q by grad Sigma(p)) of phase-space tokens",
))
SYMATTN_POTENTIAL = register_operation(Operation(
    "symattn_potential", _bind,
    (Route("logsumexp", EAGER.name, lambda c: None, lambda c: symattn_potential_value(c.z, c.A, c.activation)),),
    claims=("symattn.potential_gradient",),
    doc="the potential: a log-sum-exp of z A z^T per sequence",
))


@half_in_float32
def symattn_update(z: torch.Tensor, A: torch.Tensor, activation: str = "matrix_softmax") -> torch.Tensor:
    r"""The symplectic-attention update :math:`\nabla_z\Sigma(z) = GzA^T + G^TzA`, :math:`G = \mathrm{softmax}(zAz^T)`.

    ``z`` is ``(..., T, n)`` (tokens as rows: the transpose of the seeds' :math:`Q`), ``A`` is ``(n, n)``
    (or batched like ``z``); ``activation`` is one of :data:`SYMATTN_ACTIVATIONS`: the softmax over all
    entries of :math:`C` (``matrix_*``) or over each column (``vector_*``, the index :math:`m` of
    :math:`C_{mn}`), with the one softmax's extra 1 in the denominator for ``*_one_softmax``. The update is
    the gradient of :func:`symattn_potential` (ledger ``symattn.potential_gradient``); its backward is the
    generated VJP (``symattn.layer_vjp``).

    Examples
    --------
    >>> z = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    >>> A = torch.randn(3, 3, dtype=torch.float64)
    >>> grad, = torch.autograd.grad(symattn_potential(z, A).sum(), z)
    >>> torch.allclose(symattn_update(z, A), grad)
    True
    """
    return dispatch("symattn_update", z, A, activation)


@half_in_float32
def symattn_shear(x: torch.Tensor, A: torch.Tensor, activation: str = "matrix_softmax", update: str = "p",
                  sign: float = 1.0) -> torch.Tensor:
    r"""The shear of phase-space tokens by the update: :math:`(q, p) \mapsto (q, p + s\,\nabla\Sigma(q))` for
    ``update="p"``, :math:`(q + s\,\nabla\Sigma(p), p)` for ``update="q"``, :math:`s` = ``sign``.

    ``x`` is ``(..., T, 2n)`` (the first ``n`` features :math:`q`, the last ``n`` :math:`p`), ``A`` ``(n, n)``;
    the update is :func:`symattn_update` of the half read. Where that update takes its ``native``, ``sdpa`` or ``dense``
    route, the shear is one call that writes both halves of the output and of its gradient (Note [the shear in
    one call]); otherwise it is the update and a concatenation. This is the map of
    :class:`geoattn.nn.SymplecticAttention` (``sign = -1``: its inverse).

    Examples
    --------
    >>> x = torch.randn(2, 5, 6, dtype=torch.float64)
    >>> A = torch.eye(3, dtype=torch.float64)
    >>> y = symattn_shear(x, A)
    >>> torch.equal(y[..., :3], x[..., :3])
    True
    >>> torch.allclose(symattn_shear(y, A, sign=-1.0), x)
    True
    """
    return dispatch("symattn_shear", x, A, activation, update, sign)


@half_in_float32
def symattn_potential(z: torch.Tensor, A: torch.Tensor, activation: str = "matrix_softmax") -> torch.Tensor:
    r"""The potential :math:`\Sigma(z)` of :func:`symattn_update`, one value per sequence: shape ``z.shape[:-2]``.

    .. math::

        \text{matrix}:\ \log\bigl(\epsilon + \textstyle\sum_{mn} e^{C_{mn}}\bigr),\qquad
        \text{vector}:\ \sum_n\log\bigl(\epsilon + \textstyle\sum_{m} e^{C_{mn}}\bigr),\qquad C = zAz^T,

    with :math:`\epsilon = 1` for the one softmax and 0 otherwise.
    """
    return dispatch("symattn_potential", z, A, activation)
