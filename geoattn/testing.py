r"""Structure checks that users can run on their own modules and functions.

Every check works on batch-first inputs ``x`` of shape ``(batch, *event)`` and
treats ``fn`` as a map of one sample, :math:`\mathbb{R}^N \to \mathbb{R}^N` with
:math:`N = \prod \text{event}`, flattened in row-major order (for a sequence
``(seq_len, dim)`` that is time step after time step). Jacobians are computed
with :mod:`torch.func` in float64: a :class:`torch.nn.Module` is copied and
cast to float64 first, and ``x`` is cast too, so the float32 parameters of a
model are checked without float32 rounding in the way.

The quantities:

.. math::

    \det J(x), \qquad \|J^T \Omega J - \Omega\|_F, \qquad \|M^T M - I\|_F,

with :math:`\Omega = I_{N/2n} \otimes \mathbb{J}_{2n}`,
:math:`\mathbb{J}_{2n} = \begin{pmatrix} 0 & I_n \\ -I_n & 0\end{pmatrix}`:
the symplectic product structure :math:`\hat{\mathbb{J}}(z, \tilde z) =
\sum_i (z^{(i)})^T \mathbb{J}_{2n} \tilde z^{(i)}` of a sequence of phase-space
points whose last dimension is :math:`2n = (q, p)`.

The ``assert_*`` functions raise :class:`AssertionError` saying by how much a
check failed. Their tolerances follow rounding-error bounds:
``k * N * eps * cond(J)`` for the determinant, ``k * N * eps * max(1, |J|_2)^2``
for symplecticity and ``k * n * eps * max(1, |M|_2)^2`` for orthogonality, with
``eps`` of the dtype the quantity was computed in.

Examples
--------
>>> import torch
>>> from geoattn.nn import VolumePreservingAttention
>>> from geoattn.testing import assert_volume_preserving, jacobian_determinant
>>> layer = VolumePreservingAttention(3)
>>> x = torch.randn(2, 4, 3)
>>> assert_volume_preserving(layer, x)
>>> jacobian_determinant(layer, x).sub(1).abs().max() < 1e-12
tensor(True)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Callable

import torch

__all__ = [
    "jacobian",
    "jacobian_determinant",
    "symplectic_form",
    "symplecticity_error",
    "orthogonality_error",
    "assert_volume_preserving",
    "assert_symplectic",
    "assert_orthogonal",
    "PROPERTIES",
    "assert_preserves",
]

Fn = Callable[[torch.Tensor], torch.Tensor]
_DEFAULT_K = 32.0


def _as_float64(fn: Fn) -> Fn:
    if isinstance(fn, torch.nn.Module):
        return copy.deepcopy(fn).to(torch.float64)
    return fn


def _check_batch(x: torch.Tensor, min_event_dims: int = 1) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"Expected x to be a torch.Tensor. Got {type(x).__name__}.")
    if not x.is_floating_point():
        raise TypeError(f"Expected x to have a floating dtype. Got {x.dtype}.")
    if x.dim() < 1 + min_event_dims:
        raise ValueError(
            f"Expected a batch-first x of shape (batch, *event) with at least {min_event_dims} event "
            f"dimension(s). Got shape {tuple(x.shape)}."
        )


def jacobian(fn: Fn, x: torch.Tensor, *, vectorize: bool = True) -> torch.Tensor:
    r"""Per-sample Jacobians of ``fn`` at the batch ``x``, in float64.

    Parameters
    ----------
    fn : callable or Module
        maps a batch ``(B, *event)`` to ``(B, *event_out)``, one sample
        independently of the others.
    x : Tensor ``(B, *event)``
    vectorize : bool
        use :func:`torch.func.vmap` over the batch (``fn`` must then be
        vmap-compatible); ``False`` loops over the samples.

    Returns
    -------
    Tensor ``(B, N_out, N)`` in float64, ``N = prod(event)``.
    """
    _check_batch(x)
    f = _as_float64(fn)
    xs = x.detach().to(torch.float64)
    event = xs.shape[1:]

    def single(v: torch.Tensor) -> torch.Tensor:
        return f(v.reshape(1, *event)).reshape(-1)

    flat = xs.reshape(xs.shape[0], -1)
    jac = torch.func.jacrev(single)
    if vectorize:
        return torch.func.vmap(jac)(flat).detach()
    return torch.stack([jac(v) for v in flat]).detach()


def _square_jacobian(fn: Fn, x: torch.Tensor, vectorize: bool) -> torch.Tensor:
    J = jacobian(fn, x, vectorize=vectorize)
    if J.shape[-1] != J.shape[-2]:
        raise ValueError(
            f"Expected fn to map each sample to as many numbers as it takes ({J.shape[-1]}). "
            f"Got {J.shape[-2]} outputs."
        )
    return J


def jacobian_determinant(fn: Fn, x: torch.Tensor, *, vectorize: bool = True) -> torch.Tensor:
    r"""Per-sample :math:`\det J(x)` in float64, shape ``(B,)``.

    ``fn`` is volume-preserving exactly when this is 1 everywhere.
    """
    return torch.linalg.det(_square_jacobian(fn, x, vectorize))


def symplectic_form(N: int, *, dtype: torch.dtype = torch.float64, device=None, dim: int | None = None) -> torch.Tensor:
    r"""The product structure :math:`\Omega = I_{N/2n} \otimes \mathbb{J}_{2n}` for samples of ``N``
    numbers whose last dimension is ``dim = 2n`` (default ``dim = N``)."""
    dim = N if dim is None else dim
    if dim % 2 or dim <= 0 or N % dim:
        raise ValueError(
            f"Expected an even phase-space dimension 2n dividing N = {N}. Got dim = {dim}."
        )
    n = dim // 2
    eye = torch.eye(n, dtype=dtype, device=device)
    zero = torch.zeros(n, n, dtype=dtype, device=device)
    J = torch.cat([torch.cat([zero, eye], 1), torch.cat([-eye, zero], 1)], 0)
    return torch.kron(torch.eye(N // dim, dtype=dtype, device=device), J)


def _symplectic_residual(fn: Fn, x: torch.Tensor, vectorize: bool):
    _check_batch(x)
    dim = x.shape[-1]
    J = _square_jacobian(fn, x, vectorize)
    omega = symplectic_form(J.shape[-1], dim=dim, device=J.device)
    return J, J.mT @ omega @ J - omega


def symplecticity_error(fn: Fn, x: torch.Tensor, *, vectorize: bool = True) -> torch.Tensor:
    r"""Per-sample :math:`\|J^T\Omega J - \Omega\|_F` in float64, shape ``(B,)``.

    The last dimension of ``x`` is the phase space :math:`(q, p)` of size
    :math:`2n`; :math:`\Omega` is the symplectic product structure over the
    other event dimensions (seed 004). Zero exactly when ``fn`` is symplectic
    at ``x``.
    """
    _, R = _symplectic_residual(fn, x, vectorize)
    return torch.linalg.matrix_norm(R)


def orthogonality_error(M: torch.Tensor) -> torch.Tensor:
    r""":math:`\|M^T M - I\|_F` per matrix of a batch ``(..., n, n)``, in the dtype of ``M``."""
    if not isinstance(M, torch.Tensor) or not M.is_floating_point():
        raise TypeError(f"Expected a floating torch.Tensor. Got {getattr(M, 'dtype', type(M).__name__)}.")
    if M.dim() < 2 or M.shape[-1] != M.shape[-2]:
        raise ValueError(f"Expected square matrices (..., n, n). Got shape {tuple(M.shape)}.")
    eye = torch.eye(M.shape[-1], dtype=M.dtype, device=M.device)
    return torch.linalg.matrix_norm(M.detach().mT @ M.detach() - eye)


def _fail(what: str, err: torch.Tensor, tol: torch.Tensor, extra: str = "") -> None:
    bad = err > tol
    if bool(bad.any()):
        i = int(torch.argmax(torch.where(bad, err / tol, torch.zeros_like(err))))
        flat_err, flat_tol = err.reshape(-1), tol.expand_as(err).reshape(-1)
        raise AssertionError(
            f"Expected {what} <= {float(flat_tol[i]):.3g}. Got {float(flat_err[i]):.3g} "
            f"({float(flat_err[i] / flat_tol[i]):.3g} times the tolerance) at sample {i}; "
            f"{int(bad.sum())} of {bad.numel()} samples fail{extra}."
        )


def assert_volume_preserving(fn: Fn, x: torch.Tensor, *, k: float = _DEFAULT_K, atol: float | None = None,
                             vectorize: bool = True) -> None:
    r"""Assert :math:`|\det J(x) - 1| \le` ``k * N * eps64 * cond(J)`` for every sample (or ``atol``)."""
    J = _square_jacobian(fn, x, vectorize)
    det = torch.linalg.det(J)
    err = (det - 1).abs()
    if atol is None:
        s = torch.linalg.svdvals(J)
        cond = s[..., 0] / s[..., -1]
        tol = k * J.shape[-1] * torch.finfo(torch.float64).eps * cond
        if bool((tol >= 1).any()):  # the rounding bound says nothing: refuse rather than pass
            i = int(torch.argmax(cond))
            raise AssertionError(
                f"Expected a Jacobian conditioned well enough to check |det J - 1| in float64 "
                f"(cond(J) < {1 / (k * J.shape[-1] * torch.finfo(torch.float64).eps):.3g}). "
                f"Got cond(J) = {float(cond[i]):.3g} at sample {i} (det J = {float(det[i])!r}); pass atol= to decide."
            )
    else:
        tol = torch.full_like(err, atol)
    # repr: the shortest decimal that reads back as the same float, so a det of 1 + 2e-6 never prints as 1
    _fail("|det J - 1|", err, tol, f" (det J ranges over [{float(det.min())!r}, {float(det.max())!r}])")


def assert_symplectic(fn: Fn, x: torch.Tensor, *, k: float = _DEFAULT_K, atol: float | None = None,
                      vectorize: bool = True) -> None:
    r"""Assert :math:`\|J^T\Omega J - \Omega\|_F \le` ``k * N * eps64 * max(1, |J|_2)^2`` for every sample."""
    J, R = _symplectic_residual(fn, x, vectorize)
    err = torch.linalg.matrix_norm(R)
    if atol is None:
        norm = torch.linalg.matrix_norm(J, ord=2).clamp_min(1.0)
        tol = k * J.shape[-1] * torch.finfo(torch.float64).eps * norm**2
    else:
        tol = torch.full_like(err, atol)
    _fail("|J^T Omega J - Omega|_F", err, tol)


def assert_orthogonal(M: torch.Tensor, *, k: float = _DEFAULT_K, atol: float | None = None) -> None:
    r"""Assert :math:`\|M^TM - I\|_F \le` ``k * n * eps(M.dtype) * max(1, |M|_2)^2`` for every matrix."""
    err = orthogonality_error(M).reshape(-1)
    if atol is None:
        norm = torch.linalg.matrix_norm(M.detach(), ord=2).reshape(-1).clamp_min(1.0)
        tol = k * M.shape[-1] * torch.finfo(M.dtype).eps * norm**2
    else:
        tol = torch.full_like(err, atol)
    _fail("|M^T M - I|_F", err.detach(), tol)


def _check_orthogonal_attention(module, x: torch.Tensor, k: float) -> None:
    assert_orthogonal(module.attention_matrix(x.detach().to(next(module.parameters()).dtype)), k=k)


#: the properties a module can declare in ``preserves`` / ``does_not_preserve``, and how each is checked at ``x``
PROPERTIES: dict[str, Callable] = {
    "volume": lambda module, x, k: assert_volume_preserving(module, x, k=k),
    "symplectic": lambda module, x, k: assert_symplectic(module, x, k=k),
    "orthogonal_attention": _check_orthogonal_attention,
}


_HOLDS = ("proved", "checked", "certified")


def _check_ledger_ids(module: torch.nn.Module, declared: Mapping, refuted: Mapping) -> None:
    """Every cited id is a claim of the ledger (the generated table :mod:`geoattn._ledger_ids`); a preserved
    property cites claims that hold, a refuted one cites at least one refuted claim."""
    from ._ledger_ids import CLAIMS

    name = type(module).__name__
    for kind, table in (("preserves", declared), ("does_not_preserve", refuted)):
        for prop, ids in table.items():
            if isinstance(ids, str) or not ids:
                raise ValueError(f"Expected {name}.{kind}[{prop!r}] to be a non-empty tuple of ledger ids. "
                                 f"Got {ids!r}.")
            unknown = [i for i in ids if i not in CLAIMS]
            if unknown:
                raise ValueError(f"Expected ledger claim ids in {name}.{kind}[{prop!r}] (see `geoattn prove "
                                 f"--list`). Got unknown {', '.join(map(repr, unknown))}.")
    for prop, ids in declared.items():
        weak = [f"{i} ({CLAIMS[i][1]})" for i in ids if CLAIMS[i][1] not in _HOLDS]
        if weak:
            raise ValueError(f"Expected {name}.preserves[{prop!r}] to cite claims with verdict among {_HOLDS}. "
                             f"Got {', '.join(weak)}.")
    for prop, ids in refuted.items():
        if not any(CLAIMS[i][1] == "refuted" for i in ids):
            raise ValueError(f"Expected {name}.does_not_preserve[{prop!r}] to cite a refuted claim. Got "
                             f"{', '.join(f'{i} ({CLAIMS[i][1]})' for i in ids)}.")


def assert_preserves(module: torch.nn.Module, x: torch.Tensor, *, k: float = _DEFAULT_K) -> None:
    r"""Check at ``x`` every property ``module.preserves`` declares, and that every property in
    ``module.does_not_preserve`` fails.

    Layers and models of geoattn declare ``preserves`` and ``does_not_preserve``:
    mappings from a property of :data:`PROPERTIES` (``"volume"``,
    ``"symplectic"``, ``"orthogonal_attention"``) to the ledger ids that
    establish it (a ``proved``/``checked`` verdict) or refute it (a
    ``refuted`` verdict with an exact counterexample). A refuted property
    must fail at ``x``; pick a generic ``x`` (random, full rank) for that.

    Every cited id must be a claim of the ledger, read from the generated
    table :mod:`geoattn._ledger_ids` (no SymPy at run time): the claims
    cited for a preserved property must have a ``proved``, ``checked`` or
    ``certified`` verdict, and those cited for a refuted one must include
    a ``refuted`` verdict.

    Raises
    ------
    AssertionError
        naming the property, the ledger ids and by how much it failed (or
        that a refuted property held at ``x``).
    ValueError
        for a property not in :data:`PROPERTIES`, an id the ledger does not
        have, or an id whose verdict does not match the declaration.

    Examples
    --------
    >>> import torch
    >>> from geoattn.nn import VolumePreservingAttention
    >>> layer = VolumePreservingAttention(3, skew_sym=False)
    >>> layer.preserves, layer.does_not_preserve
    ({'orthogonal_attention': ('cayley.orthogonal',)}, {'volume': ('vp.map_volume_preserving.arbitrary',)})
    >>> assert_preserves(layer, torch.randn(2, 4, 3))
    """
    declared = getattr(module, "preserves", None)
    refuted = getattr(module, "does_not_preserve", None)
    if not isinstance(declared, Mapping) or not isinstance(refuted, Mapping):
        raise TypeError(f"Expected a module with preserves and does_not_preserve mappings. Got "
                        f"{type(module).__name__}.")
    for prop in (*declared, *refuted):
        if prop not in PROPERTIES:
            raise ValueError(f"Expected properties among {sorted(PROPERTIES)}. Got {prop!r} on "
                             f"{type(module).__name__}.")
    _check_ledger_ids(module, declared, refuted)
    for prop, ids in declared.items():
        try:
            PROPERTIES[prop](module, x, k)
        except AssertionError as e:
            raise AssertionError(f"{type(module).__name__} declares {prop!r} ({', '.join(ids)}), which fails at x: "
                                 f"{e}") from None
    for prop, ids in refuted.items():
        try:
            PROPERTIES[prop](module, x, k)
        except AssertionError:
            continue
        raise AssertionError(f"{type(module).__name__} declares {prop!r} refuted ({', '.join(ids)}), but it holds "
                             f"at x; pass a generic x (random, full rank).")
