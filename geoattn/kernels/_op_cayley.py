r"""The operations ``cayley`` and ``cayley_apply``: their checks, routes and public functions.

``cayley(C)`` computes :math:`(I - C)(I + C)^{-1}` batched; its routes, in order:

0. ``closed-small/triton``: ``T <= 3``, the same closed form and VJP as Triton kernels printed from the same
   bindings, float32 or half inputs on CUDA (Note [Triton backend] in :mod:`geoattn.kernels._triton`);
1. ``closed-small/native``: ``T <= 3``, the closed form ``kernels.cayley_skew_small`` and the VJP ``cayley.vjp`` as
   C kernels (Note [native Cayley kernels] in :mod:`geoattn.kernels._functions`);
2. ``closed-small/eager``: the same closed form in torch operations (Note [Cayley of small skew matrices]);
3. ``solve/native``: ``4 <= T <= 32``, float32 or float64 on the CPU: elimination without pivoting in double, several
   samples side by side (``kernels.cayley_unpivoted``; Note [native Cayley solve] in
   :mod:`geoattn.kernels._native_cayley_solve`), the samples it does not keep taking the forms of ``solve/eager``;
4. ``solve/eager``: one batched solve; skew samples of norm above ``8 T`` get two Newton--Schulz steps
   (``cayley.polish``), and the few that the measured defect still rejects take the eigendecomposition, per sample
   (Note [Cayley at large norms]).

``cayley_apply(C, x)`` computes :math:`(x^T\,\mathrm{Cayley}(C))^T`: ``solve/eager`` (:math:`2(I - C)^{-1}x - x`,
``cayley.apply_form``) when ``d < T``, its skew samples of norm above ``8 T`` taking the polished matrix (per sample),
else ``matrix/eager`` (the ``cayley`` operation, then a product).
"""

from __future__ import annotations

import torch

from ..errors import OptionError
from . import _generated as gen
from . import _triton
from ._backends import EAGER, NATIVE, TRITON
from ._checks import check_float, check_matmul, check_same, check_skew, check_square, half_in_float32
from ._functions import (CAYLEY_SOLVE_NORM_PER_T, NATIVE_SOLVE_DEFECT_PER_T, SMALL_MAX, _Cayley, _large_skew, _traced,
                         native_small_reason, native_solve_reason, solve_each)
from .dispatch import Call, Operation, Route, dispatch, register_operation

__all__ = ["cayley", "cayley_apply", "CAYLEY", "CAYLEY_APPLY"]


def _bind_cayley(C: torch.Tensor) -> Call:
    check_square("C", C)
    return Call(C=C, T=C.shape[-1], device=C.device, traced=_traced(C))


def _small(call: Call) -> str | None:
    if call.T > SMALL_MAX:
        return f"T={call.T} > {SMALL_MAX}: no closed form (C^3 = -aC holds for T <= 3)"
    if call.C.numel() == 0:
        return "an empty input"
    if call.traced:
        return "traced (torch.func, torch.compile or meta): the per-sample skew check branches on the data"
    return None


def _small_triton(call: Call) -> str | None:
    if call.C.dtype not in _triton.REALS:
        return f"{call.C.dtype}: the Triton kernels take float32, float16 or bfloat16"
    return _small(call)


CAYLEY = register_operation(Operation(
    "cayley",
    _bind_cayley,
    (
        Route("closed-small", TRITON.name, _small_triton, lambda c: _triton.cayley_small(c.C),
              per_sample="non-skew samples are solved", claims=("kernels.cayley_skew_small", "cayley.vjp")),
        Route("closed-small", NATIVE.name, lambda c: _small(c) or native_small_reason(c.C),
              lambda c: _Cayley.apply(c.C, None, True),
              per_sample="non-skew samples are solved; float64 skew samples beyond double's range take the "
                         "eigendecomposition", claims=("kernels.cayley_skew_small", "cayley.vjp")),
        Route("closed-small", EAGER.name, _small, lambda c: _Cayley.apply(c.C, None, False),
              per_sample="non-skew samples are solved; samples whose C^2 would overflow take the eigendecomposition",
              claims=("kernels.cayley_skew_small", "cayley.vjp")),
        Route("solve", NATIVE.name, lambda c: native_solve_reason(c.C), lambda c: _Cayley.apply(c.C, None, True),
              per_sample=f"samples that are not skew, not finite, of norm above {CAYLEY_SOLVE_NORM_PER_T:g} T or of "
                         f"measured defect above {NATIVE_SOLVE_DEFECT_PER_T:g} T eps take the solve/eager route's "
                         "forms (the pivoted solve, the polish, the eigendecomposition)",
              claims=("kernels.cayley_unpivoted", "cayley.orthogonal", "cayley.polish", "cayley.eigh_form",
                      "cayley.vjp")),
        Route("solve", EAGER.name, lambda c: None, lambda c: _Cayley.apply(c.C, _large_skew(c.C), False),
              per_sample=f"skew samples of norm above {CAYLEY_SOLVE_NORM_PER_T:g} T get two Newton-Schulz steps and "
                         "a measured defect; those above 8 T eps after them, and skew samples whose I + C is singular "
                         "in floating point, take the eigendecomposition; a non-skew singular sample gets NaN (not "
                         "when traced)",
              claims=("cayley.orthogonal", "cayley.polish", "cayley.eigh_form", "cayley.vjp")),
    ),
    claims=("cayley.orthogonal", "cayley.det_one", "cayley.vjp"),
    doc="(I - C)(I + C)^-1, batched",
))


@half_in_float32
def cayley(C: torch.Tensor) -> torch.Tensor:
    r"""The Cayley transform :math:`(I - C)(I + C)^{-1}`, batched.

    Parameters
    ----------
    C : Tensor of shape ``(..., T, T)``
        For skew-symmetric ``C`` the result is orthogonal with determinant 1
        (ledger: ``cayley.orthogonal``, ``cayley.det_one``).

    Returns
    -------
    Tensor of shape ``(..., T, T)``

    Notes
    -----
    ``geoattn.kernels.explain("cayley", C)`` says which route of :data:`CAYLEY` computes it.

    Examples
    --------
    >>> C = torch.randn(4, 3, 3, dtype=torch.float64); C = C - C.mT
    >>> Q = cayley(C)
    >>> torch.allclose(Q.mT @ Q, torch.eye(3, dtype=torch.float64).expand(4, 3, 3))
    True
    """
    return dispatch("cayley", C)


_APPLY_METHODS = ("auto", "solve", "matrix")


def _bind_apply(C: torch.Tensor, x: torch.Tensor, method: str = "auto", *, check: bool = True) -> Call:
    check_square("C", C)
    check_float("x", x)
    check_same(("C", C), ("x", x))
    check_matmul("C", C, "x", x)
    if method not in _APPLY_METHODS:
        raise OptionError(f"Expected method in {_APPLY_METHODS}. Got {method!r}.")
    call = Call(C=C, x=x, method=method, check=check, T=C.shape[-1], d=x.shape[-1], device=C.device,
                traced=_traced(C))
    call.big = _large_skew(C) if method != "solve" else None
    return call


def _solve_when(c: Call) -> str | None:
    if c.method == "matrix":
        return "method 'matrix' requested"
    if c.method == "solve":
        return None
    if c.d >= c.T:
        return f"d={c.d} >= T={c.T}: forming the T x T matrix is as cheap"
    return None


def _run_solve(c: Call) -> torch.Tensor:
    """The apply form on every sample but the large ones (``c.big``), which get the polished matrix: a per-sample
    decision, so a large sample never changes how the rest of its batch is computed."""
    if c.check and not _traced(c.C):
        check_skew("C", c.C)
    if c.big is None:
        return solve_each(c.C, lambda m: gen.cayley_apply_solve(m, c.x), sign=-1)[0]
    T, d = c.T, c.d
    batch = torch.broadcast_shapes(c.C.shape[:-2], c.x.shape[:-2])
    C = c.C.expand(*batch, T, T).reshape(-1, T, T)  # flat batch (an unbatched call too)
    x, big = c.x.expand(*batch, T, d).reshape(-1, T, d), c.big.expand(batch).reshape(-1)
    y = solve_each(C.masked_fill(big[:, None, None], 0), lambda m: gen.cayley_apply_solve(m, x), sign=-1)[0]
    lam = _Cayley.apply(C[big], torch.ones(int(big.sum()), dtype=torch.bool, device=big.device), False)
    return y.index_put((big,), gen.cayley_apply_matrix(lam, x[big])).reshape(*batch, T, d)


CAYLEY_APPLY = register_operation(Operation(
    "cayley_apply",
    _bind_apply,
    (
        Route("solve", EAGER.name, _solve_when, _run_solve,
              per_sample=f"skew samples of norm above {CAYLEY_SOLVE_NORM_PER_T:g} T take the polished matrix (the "
                         "cayley operation's solve route)",
              claims=("cayley.apply_form", "cayley.polish")),
        Route("matrix", EAGER.name, lambda c: "method 'solve' requested" if c.method == "solve" else None,
              lambda c: gen.cayley_apply_matrix(_Cayley.apply(c.C, c.big, False), c.x),
              per_sample=f"skew samples of norm above {CAYLEY_SOLVE_NORM_PER_T:g} T are polished (the cayley "
                         "operation's solve route)",
              claims=("cayley.orthogonal", "cayley.polish", "cayley.vjp")),
    ),
    claims=("cayley.apply_form",),
    doc="(x^T Cayley(C))^T for skew C",
))


@half_in_float32
def cayley_apply(C: torch.Tensor, x: torch.Tensor, method: str = "auto", *, check: bool = True) -> torch.Tensor:
    r"""The layer output :math:`(x^T\,\mathrm{Cayley}(C))^T` for skew ``C``, in the row layout.

    ``method="solve"`` computes :math:`2(I - C)^{-1}x - x` without forming
    :math:`\mathrm{Cayley}(C)` (valid because :math:`(I + C)^T = I - C`,
    ledger ``cayley.apply_form``); ``"matrix"`` forms it and multiplies;
    ``"auto"`` picks ``"solve"`` when ``d < T`` (fewer right-hand sides than
    columns of the matrix) and ``"matrix"`` otherwise; under ``"auto"`` a skew
    sample of norm above ``8 T`` takes the formed matrix, polished back to
    orthogonal, whatever the rest of its batch does (Note [Cayley at large
    norms]). Inside ``torch.func``
    transforms, ``torch.compile`` and on the meta device ``check`` is skipped
    (it would branch on the data).

    Parameters
    ----------
    C : Tensor ``(..., T, T)``, skew-symmetric
    x : Tensor ``(..., T, d)``, of ``C``'s dtype and device
    method : ``"auto"``, ``"solve"`` or ``"matrix"``
    check : bool
        verify skew-symmetry of ``C`` when the solve form is used (it would
        silently give a wrong result for a non-skew ``C``).
    """
    return dispatch("cayley_apply", C, x, method, check=check)
