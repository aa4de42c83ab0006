r"""Linear-time volume-preserving attention: the low-rank form and its backward passes.

The layer output in the row layout is :math:`y = \Lambda^T x` with
:math:`\Lambda = f(C)`, :math:`C = x A x^T` (``x`` of shape ``(..., T, d)``,
``A`` skew ``d x d``) and ``f`` the Cayley transform or the exponential. Two
exact forms compute it:

* ``"full"``: form the ``T x T`` matrices ``C`` and :math:`\Lambda`;
  :math:`O(T^2 d + T^3)` work;
* ``"lowrank"``: factor ``x = Q R`` (thin QR, ``Q`` of shape ``(..., T, d)``
  with orthonormal columns), so that :math:`C = Q S Q^T` with the ``d x d``
  skew matrix :math:`S = R A R^T`, and :math:`f(C) = I + Q(f(S) - I)Q^T`
  (ledger ``vp.lowrank_form``); then :math:`y = x + Q(f(S) - I)^T R`:
  :math:`O(T d^2)` work and memory, no ``T x T`` tensor.

Note [choice of form]
---------------------
``method="auto"`` takes ``"full"`` when ``d >= T``: the ``T x T`` matrices are
no larger than the ``d x d`` ones and a factorisation is pure overhead. When
``d < T`` it takes, for the Cayley transform of float32 (or half) inputs, the
Gram form ``"gram"`` computed in float64 (Note [why QR and not the Gram
matrix]); for the exponential of float32 (or half) inputs, its own Gram form
(:mod:`geoattn.kernels._gram_exp`); for float64 inputs, the QR form ``"lowrank"``.
The routes of the operation ``vp_attention`` (:mod:`geoattn.kernels._op_vp`) encode
this order; :func:`geoattn.kernels.explain` returns the route a call takes and why
every other did not serve.

Note [why QR and not the Gram matrix]
-------------------------------------
The push-through identity :math:`Z\,\mathrm{Cayley}(Z^TAZ) = \mathrm{Cayley}(ZZ^TA)\,Z`
(``vp.push_through``) needs only the Gram matrix :math:`ZZ^T = x^Tx`, but it
solves with :math:`I + ZZ^TA`, whose condition number grows with that of the
Gram matrix. Measured in float32 on inputs whose ``T`` tokens are nearly
parallel (``x`` close to rank one, as for consecutive states of a trajectory),
its error relative to the row norms of ``Z`` is 9e-2 at unit scale and
diverges at scale 10, where the ``T x T`` form stays at 4e-6 and 3e-4. The QR
form only solves with :math:`I + S`, ``S`` skew (:math:`\|(I+S)^{-1}\|_2 \le 1`),
and its orthonormal factor comes from Householder reflections, so its error
stays within a small factor of the ``T x T`` form's (measured: 4e-5 and 2e-3
on the same inputs). Rank-deficient ``x`` is no special case: Householder QR
still returns orthonormal columns.

Computed in float64 for float32 inputs, the Gram form (``vp.gram_form``, kernel
``vp_gram_cayley``) is both faster and more accurate than either float32 form:
one ``d x d`` Gram matrix, one ``d x d`` solve (for ``d <= 4`` a closed form), no LAPACK QR per sample.
Measured (B = 2048, T = 16, d = 4, error relative to the row norms of ``Z``)
on windows ``scale (b + eps N)``: at scale 1 and eps 1e-3, 2e-8 against 4e-6
(``T x T``, float32) and 3e-5 (QR, float32); at scale 10 and eps 1e-6, 4e-8
against 6e-4 and 7e-3; at scale 100 and eps 1e-6, 1e-4 against 3e-2 and 0.24.
Forward and backward at B = 4096, T = 16 took about half the QR form's time in
the benchmark runs (9.8 ms against 17 to 21 ms, one thread) with a pivoted
solve; for ``d <= 4`` the closed form of :mod:`geoattn.kernels._gram` replaces
the solve and autograd's backward (about 4 ms there).
Its error still grows with the condition number of ``I + GA``, which for nearly
parallel tokens grows like ``(|x|_F^2 |A|_F)^2`` (G = diag(g, 0), A = aJ give
``[[1, ag], [0, 1]]``): at scale 30 to 100 on such windows it is 1e-6 to 1e-5 of
the row norms (the float32 forms: 1e-4 to 0.2), and at inputs of size 1e6 it
reached 8e-5 on random windows. Samples with ``|x|_F^2 |A|_F > GRAM_MAX_SCALE =
1e6`` take the QR form computed in float64, per sample. Float64 inputs keep the
QR form, whose float64 error does not grow with the conditioning of the Gram
matrix. Under torch.func transforms and torch.compile every sample takes the
Gram form (no data-dependent branch), so a sample above the bound can differ
from its eager result by that form's error.

Note [low-rank backward]
------------------------
With :math:`\bar y` the incoming gradient and :math:`Y_1 = Q^T\bar y`, the
Cayley backward (``vp.lowrank_cayley_vjp``) uses
:math:`(I - C)^{-1}x = \tfrac12(x + y)` and :math:`(I + C)^{-1}\bar y =
\tfrac12(\bar y + \Lambda\bar y)`, which turn the rank-``d`` gradient
:math:`\bar C = -2(I - C)^{-1}x\,\bar y^T(I - C)^{-1}` into ``d x d``
factors; the exponential backward (``vp.lowrank_exp_vjp``) splits
:math:`\bar y` into its parts in and orthogonal to the range of ``Q`` and needs
the Frechet derivative :math:`K_1 = L_{\exp}(-S, RY_1^T)` and
:math:`K_2 = \varphi(-S)R`, :math:`\varphi(X) = \int_0^1 e^{sX}ds`, both read
off one exponential of a ``3d x 3d`` block matrix. Either way the backward
runs three products of a ``T x d`` by a ``d x d`` matrix. The incoming
gradient is made contiguous first: the gradient of ``out.sum()`` arrives
expanded (all strides zero), and batched products of expanded tensors take a
slow path. With ``create_graph=True`` (double backward), and inside ``torch.func``
transforms that nest gradients (``grad``, ``vjp``, ``jacrev``), the backward is
recomputed through the full form, which is built from differentiable
operations: there it costs :math:`O(T^2 d + T^3)` and forms ``T x T`` matrices.
The plain ``loss.backward()`` of training never does.
"""

from __future__ import annotations

import torch

from . import _generated as gen
from ._exp import EXP_CLOSED_MAX, exp_skew_closed
from ._functions import SMALL_MAX, _large_skew, cayley_closed, cayley_routed
from ._householder import thin_qr
from ._op_cayley import cayley
from ._op_exp import exp_skew

__all__ = ["vp_lowrank", "vp_full", "ACTIVATIONS", "METHODS"]

#: the activations of volume-preserving attention
ACTIVATIONS = ("cayley", "exp")


#: the forms of volume-preserving attention a caller may request (``"auto"``: the dispatch table chooses)
METHODS = ("auto", "lowrank", "gram", "full")


def _small_factors(x: torch.Tensor, A: torch.Tensor, activation: str):
    """``Q, R, W = f(S) - I`` of the low-rank form (``S`` too for the exponential)."""
    Q, R = thin_qr(x)  # Note [batched Householder QR on CUDA]
    S = gen.vp_lowrank_skew(R, A)
    if activation == "cayley" and S.shape[-1] <= SMALL_MAX:  # S is exactly skew: Note [Cayley of small skew matrices]
        W = cayley_closed(S, gen.cayley_minus_identity_skew_small, shift=1.0)
    elif activation == "cayley":
        W = cayley_routed(S, _large_skew(S), gen.cayley_minus_identity, shift=1.0)  # Note [Cayley at large norms]
    else:  # Note [exp of a 4 x 4 skew matrix]: for k <= 4 one formula at every norm
        W = exp_skew_closed(S) if S.shape[-1] <= EXP_CLOSED_MAX else exp_skew(S, check=False)
        W.diagonal(dim1=-2, dim2=-1).sub_(1)
    return Q, R, S, W


def _exp_frechet_blocks(S: torch.Tensor, R: torch.Tensor, Y1: torch.Tensor):
    r"""``K1 = L_exp(-S, R Y1^T)`` and ``K2 = phi(-S) R`` from one block exponential:

    .. math:: \exp\begin{pmatrix} X & E & F\\ 0 & X & 0\\ 0 & 0 & 0\end{pmatrix}
       = \begin{pmatrix} e^X & L_{\exp}(X, E) & \varphi(X)F\\ \cdot & \cdot & \cdot\\ \cdot & \cdot & \cdot\end{pmatrix}.
    """
    k, d = R.shape[-2], R.shape[-1]
    batch = torch.broadcast_shapes(S.shape[:-2], R.shape[:-2], Y1.shape[:-2])  # A may broadcast against x
    X = (-S).expand(batch + (k, k))
    R = R.expand(batch + (k, d))
    zk = S.new_zeros(batch + (k, k))
    zkd = R.new_zeros(batch + (k, d))
    top = torch.cat([X, R @ Y1.mT, R], dim=-1)
    mid = torch.cat([zk, X, zkd], dim=-1)
    bot = R.new_zeros(batch + (d, 2 * k + d))
    E3 = torch.linalg.matrix_exp(torch.cat([top, mid, bot], dim=-2))
    return E3[..., :k, k : 2 * k], E3[..., :k, 2 * k :]


def _sum_to(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum ``g`` over the leading dimensions broadcasting added (the gradient of a broadcast parameter)."""
    extra = g.dim() - len(shape)
    if extra > 0:
        g = g.sum(dim=tuple(range(extra)))
    keep = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(dim=keep, keepdim=True) if keep else g


def vp_full(x: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
    """The ``T x T`` form: :math:`f(C)^T x` with ``C = x A x^T`` skew-symmetrised, differentiable by autograd."""
    C = gen.vp_correlation(x, A)
    C = 0.5 * (C - C.mT)
    lam = cayley(C) if activation == "cayley" else exp_skew(C, check=False)
    return gen.cayley_apply_matrix(lam, x)


class _VPLowRank(torch.autograd.Function):
    # See Note [low-rank backward].
    generate_vmap_rule = True

    @staticmethod
    def forward(x, A, activation):
        Q, R, S, W = _small_factors(x, A, activation)
        return gen.vp_lowrank_apply(x, Q, W, R), Q, R, S, W

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, A, activation = inputs
        _, Q, R, S, W = output
        ctx.activation = activation
        ctx.mark_non_differentiable(Q, R, S, W)
        ctx.save_for_backward(x, A, Q, R, S, W)

    @staticmethod
    def backward(ctx, gy, *_unused):
        x, A, Q, R, S, W = ctx.saved_tensors
        if torch.is_grad_enabled():
            # a graph of the backward is wanted (create_graph=True, or a torch.func transform that nests
            # gradients): go through the full form, built from differentiable operations
            _, pullback = torch.func.vjp(lambda a, b: vp_full(a, b, ctx.activation), x, A)
            gx, gA = pullback(gy)
            return gx, gA, None
        gy = gy.contiguous()
        A = 0.5 * (A - A.mT)  # the forward used the skew part of A (S is skew-symmetrised)
        if ctx.activation == "cayley":
            gx, gA = gen.vp_lowrank_cayley_vjp(Q, R, W, A, gy)
        else:
            Y1 = gen.vp_lowrank_project(Q, gy)
            K1, K2 = _exp_frechet_blocks(S, R, Y1)
            gx, gA = gen.vp_lowrank_exp_vjp(Q, R, W, A, gy, Y1, K1, K2)
        return gx, _sum_to(gA, A.shape), None


def vp_lowrank(x: torch.Tensor, A: torch.Tensor, activation: str) -> torch.Tensor:
    """The low-rank form ``x + Q (f(S) - I)^T R`` with its derived backward (Note [low-rank backward])."""
    return _VPLowRank.apply(x, A, activation)[0]
