r"""Batched torch kernels generated from the verified SymPy expressions.

The numerical work lives in :mod:`geoattn.kernels._generated`, which
``geoattn codegen`` prints from :mod:`geoattn.symbolic.expressions`; this
module adds argument checks, the dtype policy and the custom backward passes.
It never imports SymPy.

All kernels are batched over leading dimensions. float32 and float64 run
natively; float16 and bfloat16 inputs are computed in float32 and cast back.
Sequences use the row layout of the layers: ``x`` is ``(..., T, d)``, the
transpose of the seeds' ``Z`` (``d x T``).

The autograd Functions, their Notes and the choice of method live in
:mod:`geoattn.kernels._functions`; this module holds the public functions.
"""

from __future__ import annotations

import torch

from . import _generated as gen
from ._checks import (
    KernelDtypeError,
    KernelShapeError,
    check_float,
    check_matmul,
    check_skew,
    check_square,
    half_in_float32,
)
# The thresholds (CAYLEY_MAX_NORM, TAYLOR_MAX_NORM, POLISH_SQUARINGS) live in kernels._functions, where they are read.
from ._functions import (
    _Cayley,
    _large_skew,
    _traced,
    cayley_apply_path,
    exp_skew_path,
    run_exp_skew,
)

from ._lowrank import ACTIVATIONS as _VP_ACTIVATIONS
from ._native import native_status
from ._symattn import SYMATTN_ACTIVATIONS, symattn_forward, symattn_potential_value

#: the activations of :func:`vp_attention` (and of :class:`geoattn.nn.VolumePreservingAttention`)
VP_ACTIVATIONS = _VP_ACTIVATIONS

__all__ = [
    "VP_ACTIVATIONS",
    "SYMATTN_ACTIVATIONS",
    "KernelShapeError",
    "KernelDtypeError",
    "cayley",
    "cayley_apply",
    "skew_from_lower",
    "upper_triangular_asymmetrize",
    "vp_correlation",
    "vp_correlation_lower",
    "exp_skew",
    "lsa_update",
    "symattn_update",
    "symattn_potential",
    "lift",
    "vp_attention",
    "native_status",
]


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

    Examples
    --------
    >>> C = torch.randn(4, 3, 3, dtype=torch.float64); C = C - C.mT
    >>> Q = cayley(C)
    >>> torch.allclose(Q.mT @ Q, torch.eye(3, dtype=torch.float64).expand(4, 3, 3))
    True
    """
    check_square("C", C)
    return _Cayley.apply(C, None if C.shape[-1] <= 3 else _large_skew(C))  # T <= 3: Note [Cayley of small skew...]


@half_in_float32
def cayley_apply(C: torch.Tensor, x: torch.Tensor, method: str = "auto", *, check: bool = True) -> torch.Tensor:
    r"""The layer output :math:`(x^T\,\mathrm{Cayley}(C))^T` for skew ``C``, in the row layout.

    ``method="solve"`` computes :math:`2(I - C)^{-1}x - x` without forming
    :math:`\mathrm{Cayley}(C)` (valid because :math:`(I + C)^T = I - C`,
    ledger ``cayley.apply_form``); ``"matrix"`` forms it and multiplies;
    ``"auto"`` picks ``"solve"`` when ``d < T`` (fewer right-hand sides than
    columns of the matrix) and ``"matrix"`` otherwise, and ``"matrix"`` when a
    sample's norm is large enough for the matrix to come from its
    eigendecomposition (Note [Cayley at large norms]). Inside ``torch.func``
    transforms, ``torch.compile`` and on the meta device ``check`` is skipped
    (it would branch on the data).

    Parameters
    ----------
    C : Tensor ``(..., T, T)``, skew-symmetric
    x : Tensor ``(..., T, d)``
    method : ``"auto"``, ``"solve"`` or ``"matrix"``
    check : bool
        verify skew-symmetry of ``C`` when the solve form is used (it would
        silently give a wrong result for a non-skew ``C``).
    """
    check_square("C", C)
    check_float("x", x)
    check_matmul("C", C, "x", x)
    big = _large_skew(C)
    method, _ = cayley_apply_path(C.shape[-1], x.shape[-1], method, large=big is not None)
    if method == "solve":
        if check and not _traced(C):
            check_skew("C", C)
        return gen.cayley_apply_solve(C, x)
    return gen.cayley_apply_matrix(_Cayley.apply(C, big), x)


@half_in_float32
def skew_from_lower(C: torch.Tensor) -> torch.Tensor:
    """Copy the strict lower triangle of ``C`` to the upper one, negated (zero diagonal)."""
    check_square("C", C)
    return gen.skew_from_lower(C)


@half_in_float32
def upper_triangular_asymmetrize(C: torch.Tensor) -> torch.Tensor:
    r"""``[uta(C)]_ij = c_ij (i < j), -c_ji (i > j), 0 (i = j)`` (seed 003)."""
    check_square("C", C)
    return gen.upper_triangular_asymmetrize(C)


@half_in_float32
def vp_correlation(x: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""Correlations :math:`Z^TAZ` in the row layout: ``x @ A @ x.mT`` for ``x`` of shape ``(..., T, d)``."""
    check_float("x", x)
    check_square("A", A)
    check_matmul("x", x, "A", A)
    return gen.vp_correlation(x, A)


@half_in_float32
def vp_correlation_lower(x: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""``skew_from_lower(x @ A @ x.mT)``: the arbitrary weighting of volume-preserving attention.

    The full product is formed, then masked.
    """
    check_float("x", x)
    check_square("A", A)
    check_matmul("x", x, "A", A)
    return gen.vp_correlation_lower(x, A)


@half_in_float32
def exp_skew(S: torch.Tensor, *, method: str = "auto", check: bool = True) -> torch.Tensor:
    r"""The matrix exponential of a skew-symmetric matrix, batched.

    The result is orthogonal with determinant 1 (ledger ``exp.orthogonal``,
    ``exp.det_one``). Two exact methods, each with its own derived backward:

    * ``"taylor"``: scaling and squaring, :math:`\exp(S) = p_m(S/2^k)^{2^k}`
      with :math:`\|S/2^k\|_1 \le \tfrac12` and the Taylor polynomial
      :math:`p_m` of degree 16 (float64) or 9 (float32), whose truncation
      error is below the unit roundoff (ledger ``exp_skew.taylor_form``,
      ``exp_skew.taylor_remainder``, ``exp_skew.scaling_squaring``). Only
      batched products run, forward and backward (``exp_skew.taylor_vjp``,
      ``exp_skew.square_vjp``).
    * ``"eigh"``: the Hermitian eigendecomposition :math:`iS = U\,\mathrm{diag}(\theta)U^H`,
      :math:`\exp(S) = \operatorname{Re}(U\,\mathrm{diag}(e^{-i\theta})U^H)`
      (``exp_skew.eigh_form``) with the Daleckii--Krein backward
      (``exp_skew.vjp``). No squarings, so no rounding grows with
      :math:`\|S\|` through them; slower on CPU for small matrices.
    * ``"auto"`` (default): per sample, ``"taylor"`` up to
      :math:`\max(\|S\|_1, \|S\|_\infty) = 512` (with one Newton--Schulz
      step after more than three squarings) and ``"eigh"`` above, where the
      squarings would cost orthogonality (Note [large norms]); ``"eigh"``
      for the whole batch inside ``torch.func`` transforms (``vmap``,
      ``jacrev``), under ``torch.compile`` and on the meta device, where the
      number of squarings may not depend on the data.

    Each sample has its own number of squarings, so its result does not depend
    on the rest of the batch (Note [scaling and squaring]). Double backward is
    supported by both methods. What composes: ``vmap``, ``jacrev``/``vjp``,
    ``torch.compile`` and the meta device take the eigendecomposition path;
    ``check`` is skipped there (it would branch on the data).

    Parameters
    ----------
    S : Tensor ``(..., T, T)``, skew-symmetric
    method : ``"auto"``, ``"taylor"`` or ``"eigh"``
    check : bool
        verify skew-symmetry (up to ``8 n eps`` relative); for a non-skew
        input the eigendecomposition would silently use one triangle only.

    Examples
    --------
    >>> S = torch.randn(5, 4, 4, dtype=torch.float64); S = S - S.mT
    >>> E = exp_skew(S)
    >>> torch.allclose(E, torch.linalg.matrix_exp(S))
    True
    >>> torch.allclose(E.mT @ E, torch.eye(4, dtype=torch.float64).expand(5, 4, 4))
    True
    """
    check_square("S", S)
    path, _ = exp_skew_path(S, method)
    if check and not _traced(S):
        check_skew("S", S)
    return S.clone() if path == "empty" else run_exp_skew(S, path)


@half_in_float32
def lsa_update(q: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    r"""The linear symplectic attention update :math:`\bar A q`, :math:`\bar A = \tfrac12(A + A^T)`.

    This is the gradient of :math:`\tfrac12\mathrm{Tr}(QAQ^T)` (ledger ``lsa.gradient``) in the row
    layout ``q = Q^T`` of shape ``(..., T, n)``; ``A`` is ``(T, T)``.
    """
    check_float("q", q)
    check_square("A", A)
    check_matmul("A", A, "q", q)
    return gen.lsa_update(q, A)


def _check_symattn(z: torch.Tensor, A: torch.Tensor, activation: str) -> None:
    if activation not in SYMATTN_ACTIVATIONS:
        raise KernelShapeError(f"Expected activation in {tuple(SYMATTN_ACTIVATIONS)}. Got {activation!r}.")
    check_float("z", z)
    check_float("A", A)
    check_square("A", A)
    if z.dim() < 2:
        raise KernelShapeError(f"Expected z of shape (..., T, n). Got shape {tuple(z.shape)}.")
    if A.shape[-1] != z.shape[-1]:
        raise KernelShapeError(f"Expected A of shape ({z.shape[-1]}, {z.shape[-1]}) for z with n = {z.shape[-1]} "
                               f"features. Got shape {tuple(A.shape)}.")
    if z.dtype != A.dtype:
        raise KernelDtypeError(f"Expected z and A of one dtype. Got {z.dtype} and {A.dtype}.")


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
    _check_symattn(z, A, activation)
    return symattn_forward(z, A, activation)


@half_in_float32
def symattn_potential(z: torch.Tensor, A: torch.Tensor, activation: str = "matrix_softmax") -> torch.Tensor:
    r"""The potential :math:`\Sigma(z)` of :func:`symattn_update`, one value per sequence: shape ``z.shape[:-2]``.

    .. math::

        \text{matrix}:\ \log\bigl(\epsilon + \textstyle\sum_{mn} e^{C_{mn}}\bigr),\qquad
        \text{vector}:\ \sum_n\log\bigl(\epsilon + \textstyle\sum_{m} e^{C_{mn}}\bigr),\qquad C = zAz^T,

    with :math:`\epsilon = 1` for the one softmax and 0 otherwise.
    """
    _check_symattn(z, A, activation)
    return symattn_potential_value(z, A, activation)


def lift(Lam: torch.Tensor, d: int) -> torch.Tensor:
    r"""The matrix :math:`\tilde\Lambda = I_d \otimes \Lambda^T` with
    :math:`\mathrm{vec}_r(Z\Lambda) = \tilde\Lambda\,\mathrm{vec}_r(Z)` (analysis and tests only;
    layers never build it)."""
    check_square("Lam", Lam)
    if not isinstance(d, int) or d < 1:
        raise ValueError(f"Expected d to be a positive int. Got {d!r}.")
    return gen.lift(Lam, d)


@half_in_float32
def vp_attention(
    x: torch.Tensor, A: torch.Tensor, *, activation: str = "cayley", method: str = "auto", check: bool = True
) -> torch.Tensor:
    r"""Volume-preserving attention in the row layout: :math:`y = f(C)^T x`, :math:`C = x A x^T`.

    ``x`` is ``(..., T, d)`` (the seeds' :math:`Z = x^T`), ``A`` a skew ``d x d``
    matrix and :math:`f` the Cayley transform (``activation="cayley"``) or the
    exponential (``"exp"``); :math:`f(C)` is orthogonal, so :math:`Z \mapsto
    Z f(C(Z))` keeps the norm of every row of ``Z``. Two exact forms
    (see :mod:`geoattn.kernels._lowrank`), chosen by size:

    * ``"lowrank"``: thin QR ``x = Q R``, :math:`S = RAR^T`,
      :math:`y = x + Q(f(S) - I)^T R` (ledger ``vp.lowrank_form``), with the
      derived backward passes ``vp.lowrank_cayley_vjp`` and
      ``vp.lowrank_exp_vjp``; :math:`O(T d^2)` time and memory, no ``T x T``
      tensor;
    * ``"gram"`` (Cayley only): :math:`y = 2x(I + x^Tx\,A)^{-T} - x` with the
      ``d x d`` Gram matrix (ledger ``vp.gram_form``), computed in float64; no
      ``T x T`` tensor, no QR. For ``d <= 4`` and one weighting ``A`` the
      ``d x d`` inverse and the backward are closed forms
      (``vp.gram_closed_form``, ``vp.gram_closed_form_vjp``,
      :mod:`geoattn.kernels._gram`): no LAPACK call for the samples that pass
      their residual check, a ``d x d`` solve for the others; on CPU they run
      as C kernels printed from the same bindings (:func:`native_status`);
      otherwise a pivoted solve differentiated by autograd;
    * ``"full"``: the ``T x T`` matrices, as the seeds write the layer;
    * ``"auto"`` (default): when ``d < T``, ``"gram"`` for the Cayley transform of
      float32 or half inputs and ``"lowrank"`` otherwise; ``"full"`` when
      ``d >= T`` (Note [choice of form]).

    Skew samples of large norm take the eigendecomposition for the Cayley
    transform (Note [Cayley at large norms]) and :func:`exp_skew`'s per-sample
    choice for the exponential, so :math:`f(C)` stays orthogonal at every
    magnitude. Double backward and nested ``torch.func`` gradients recompute
    through the ``"full"`` form (``T x T`` matrices); ``loss.backward()`` does
    not.

    Parameters
    ----------
    x : Tensor ``(..., T, d)``
    A : Tensor ``(d, d)`` or batched ``(..., d, d)``, skew-symmetric
    activation : ``"cayley"`` or ``"exp"``
    method : ``"auto"``, ``"lowrank"``, ``"gram"`` or ``"full"``
    check : bool
        verify that ``A`` is skew-symmetric (both forms assume it).

    Examples
    --------
    >>> x = torch.randn(2, 50, 3, dtype=torch.float64)
    >>> A = torch.randn(3, 3, dtype=torch.float64); A = A - A.T
    >>> y = vp_attention(x, A)                       # no 50 x 50 matrix is formed
    >>> torch.allclose(y, vp_attention(x, A, method="full"))
    True
    >>> torch.allclose(y.norm(dim=-2), x.norm(dim=-2))   # rows of Z keep their norms
    True
    """
    from ._lowrank import ACTIVATIONS, choose_method, vp_full, vp_gram, vp_lowrank

    check_float("x", x)
    check_square("A", A)
    if x.dim() < 2:
        raise KernelShapeError(f"Expected x of shape (..., T, d). Got shape {tuple(x.shape)}.")
    if x.shape[-1] != A.shape[-1]:
        raise KernelShapeError(
            f"Expected x with d = {A.shape[-1]} features to match A of shape {tuple(A.shape)}. Got x of shape {tuple(x.shape)}."
        )
    if x.dtype != A.dtype:
        raise KernelDtypeError(f"Expected x and A of one dtype. Got x {x.dtype} and A {A.dtype}.")
    if activation not in ACTIVATIONS:
        raise ValueError(f"Expected activation in {ACTIVATIONS}. Got {activation!r}.")
    if check and not _traced(A):
        check_skew("A", A)
    # the Gram form computes in float64, which MPS does not have: there auto keeps the QR form
    dtype = None if x.device.type == "mps" else x.dtype
    form, _ = choose_method(x.shape[-2], x.shape[-1], method, activation=activation, dtype=dtype)
    if form == "lowrank":
        return vp_lowrank(x, A, activation)
    if form == "gram":
        return vp_gram(x, A)
    return vp_full(x, A, activation)
