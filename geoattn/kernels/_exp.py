r"""The autograd Functions of the exponential of skew-symmetric matrices, and their Notes.

The operation ``exp_skew`` (:mod:`geoattn.kernels._op_exp`) runs them: scaling and squaring of a Taylor
polynomial (:class:`_ExpSkewTaylor`), the Hermitian eigendecomposition (:class:`_ExpSkewEigh`), per sample between
the two (:func:`run_exp_skew`), and the closed form of size <= 4 (:func:`exp_skew_closed`) that the low-rank layer
takes for its ``d x d`` factor.
"""

from __future__ import annotations

import torch

from . import _generated as gen
from ._functions import _eigh_skew, _newton_schulz, merge_samples

#: the largest size of skew matrix whose exponential has the closed form exp_skew_so4 (smaller ones are padded)
EXP_CLOSED_MAX = 4


def exp_skew_closed(s: torch.Tensor) -> torch.Tensor:
    """``exp(S)`` of exactly skew ``S`` of size ``k <= 4`` by the closed form of ``exp_skew.hodge_form``: the
    matrices are padded with zeros to ``4 x 4`` (``exp(diag(S, 0)) = diag(exp(S), 1)``) and cut back. One formula at
    every norm up to where ``Tr(S_pm^2)`` overflows (entries of about 1e18 in float32): no series, no squarings,
    no eigendecomposition (Note [exp of a 4 x 4 skew matrix]). ``S`` must be skew in floating point, as the low-rank
    form's ``S`` is (a diagonal entry can make the square root's argument negative). No backward of its own: the
    callers differentiate the layer, not this factor (autograd through it gives NaN where a half is zero)."""
    k = s.shape[-1]
    if k > EXP_CLOSED_MAX:
        raise ValueError(f"Expected skew matrices of size at most {EXP_CLOSED_MAX} for the closed-form exponential. "
                         f"Got size {k}.")
    if k == EXP_CLOSED_MAX:
        return gen.exp_skew_so4(s)
    padded = torch.nn.functional.pad(s, (0, EXP_CLOSED_MAX - k, 0, EXP_CLOSED_MAX - k))
    return gen.exp_skew_so4(padded)[..., :k, :k]


class _ExpSkewEigh(torch.autograd.Function):
    # Note [exp_skew backward]
    # The first-order backward is the Daleckii--Krein formula on the saved
    # eigendecomposition (ledger exp_skew.vjp): O(T^3) in complex arithmetic.
    # That formula is not differentiable as written (U and theta are saved
    # without a graph), so when a graph of the backward is requested
    # (create_graph=True, or a torch.func transform that nests gradients) the
    # backward switches to the exact identity
    #     vjp(S, G) = [exp([[S^T, G], [0, S^T]])]_{12},
    # the Frechet derivative of exp at S^T in direction G, which is the adjoint
    # of the Frechet derivative at S.  It costs a 2T x 2T exponential, but it
    # is built from differentiable torch operations, so double backward works.
    # The Taylor path (_ExpSkewTaylor) does the same.
    generate_vmap_rule = True

    # Note [real part at large norms]
    # The eigenvalues of iS come in pairs +-theta (sorted: theta_i = -theta_{n+1-i}), and
    # exp(S) is real because the phases e^{-i theta} of a pair conjugate each other. The
    # computed eigenvalues pair only up to rounding of size u ||S||, so at large norms the
    # phases drift apart (float32, ||S|| = 1e4: the imaginary part of U diag(e^{-i theta}) U^H
    # reaches 3e-3, and dropping it costs orthogonality 1e-4; at 1e6 it is lost entirely).
    # theta is therefore antisymmetrised, (theta - flip(theta)) / 2: the phases of a pair are
    # then exact conjugates and the imaginary part is of the size of the eigenvector error.
    # One Newton--Schulz step E (3I - E^T E) / 2 towards the orthogonal polar factor squares
    # what remains away; at small norms both change E by rounding only.
    @staticmethod
    def forward(s):
        theta, u = _eigh_skew(s)
        e = gen.exp_skew_from_eigh(u, theta).to(s.dtype)
        return _newton_schulz(e), u, theta

    @staticmethod
    def setup_context(ctx, inputs, output):
        (s,) = inputs
        _, u, theta = output
        ctx.mark_non_differentiable(u, theta)
        ctx.save_for_backward(s, u, theta)

    @staticmethod
    def backward(ctx, grad, _grad_u=None, _grad_theta=None):
        s, u, theta = ctx.saved_tensors
        if torch.is_grad_enabled():
            return _exp_frechet_adjoint(s, grad)
        return gen.exp_skew_vjp(u, theta, grad.to(u.dtype)).to(grad.dtype)


# Note [scaling and squaring]
# ---------------------------
# exp(S) = exp(X)^(2^k) with X = S / 2^k, k the smallest integer with
# ||X||_1, ||X||_inf <= 1/2 (ledger exp_skew.scaling_squaring); exp(X) is the Taylor
# polynomial of the degree fixed per dtype (exp_skew.taylor_form,
# exp_skew.taylor_remainder), so only batched products and in-place sums run.
# Each sample has its own k, so its result does not depend on the rest of the batch:
# the batch is squared max(k) times and a sample keeps its square only while
# step < k (torch.where), in the backward likewise. The backward runs the squarings
# in reverse with the generated square_vjp (exp_skew.square_vjp) and ends with the
# derivative of the Taylor scheme (exp_skew.taylor_vjp); every intermediate is saved
# by the forward. Division by 2^k is exact in binary floating point.
#
# Note [large norms]
# ------------------
# Each squaring adds rounding: the orthogonality error of the Taylor path grows about
# linearly with ||S|| (measured in float32: 0.5, 2.2, 5.8, 20, 81, 380 T eps at
# ||S||_1 = 0.5, 2, 8, 32, 128, 1000, T = 4). Samples that needed more than
# POLISH_SQUARINGS = 3 squarings get one Newton--Schulz step E (3I - E^T E) / 2 towards
# the orthogonal polar factor, which squares that error (two batched products; the
# backward treats the step as the identity, an error of the size of the defect it
# removes). Above TAYLOR_MAX_NORM = 512 (float32: a defect near sqrt(T eps), beyond what
# one step repairs) a sample goes to the eigendecomposition, which stays orthogonal at
# every norm (Note [real part at large norms]). Both decisions are per sample, so they
# never change a sample's result through its batch. Non-finite samples stay on the
# Taylor path, where inf and nan propagate.
_TAYLOR = {
    torch.float64: (gen.exp_taylor16, gen.exp_taylor16_vjp),
    torch.float32: (gen.exp_taylor9, gen.exp_taylor9_vjp),
}

#: samples above this norm take the eigendecomposition path under method="auto" (Note [large norms])
TAYLOR_MAX_NORM = 512.0
#: samples with more squarings than this get one Newton--Schulz step (Note [large norms])
POLISH_SQUARINGS = 3


def _norms(s: torch.Tensor) -> torch.Tensor:
    """max(||S||_1, ||S||_inf) per matrix, shape ``s.shape[:-2]``."""
    a = s.abs()
    return torch.maximum(a.sum(-2).amax(-1), a.sum(-1).amax(-1))


def _squarings(s: torch.Tensor) -> torch.Tensor:
    """Per matrix, the smallest k >= 0 with max(||S||_1, ||S||_inf) / 2^k <= 1/2 (0 for non-finite norms).

    Both norms: the forward bound is on X, the backward's on X^T (equal for skew S).
    """
    norm = _norms(s)
    m, e = torch.frexp(norm)  # norm = m 2^e, 1/2 <= m < 1
    k = torch.where(m == 0.5, e, e + 1).clamp_min(0)
    return torch.where(torch.isfinite(norm) & (norm > 0.5), k, torch.zeros_like(k))


class _ExpSkewTaylor(torch.autograd.Function):
    @staticmethod
    def forward(s, k):
        fwd, _ = _TAYLOR[s.dtype]
        scale = torch.ldexp(torch.ones((), dtype=s.dtype), -k.to(s.dtype))[..., None, None]
        x = s * scale
        parts = fwd(x)
        e = parts[-1]
        squares = []
        kmax = int(k.max()) if k.numel() else 0
        for step in range(kmax):
            squares.append(e)
            e = torch.where((k > step)[..., None, None], e @ e, e)
        if kmax > POLISH_SQUARINGS:
            e = torch.where((k > POLISH_SQUARINGS)[..., None, None], _newton_schulz(e), e)
        return (e, x, scale, *parts[:-1], *squares)

    @staticmethod
    def setup_context(ctx, inputs, output):
        s, k = inputs
        e, x, scale, *rest = output
        ctx.n_parts = _n_intermediates(s.dtype)
        ctx.mark_non_differentiable(x, scale, *rest)
        ctx.save_for_backward(s, k, x, scale, *rest)

    @staticmethod
    def backward(ctx, grad, *_unused):
        s, k, x, scale, *rest = ctx.saved_tensors
        if torch.is_grad_enabled():
            return _exp_frechet_adjoint(s, grad), None
        parts, squares = rest[: ctx.n_parts], rest[ctx.n_parts :]
        g = grad.contiguous()  # out.sum() gives an expanded gradient: see _Cayley.backward
        for step in reversed(range(len(squares))):
            g = torch.where((k > step)[..., None, None], gen.square_vjp(squares[step], g), g)
        _, vjp = _TAYLOR[s.dtype]
        return vjp(x, *parts, g) * scale, None


def _n_intermediates(dtype: torch.dtype) -> int:
    """How many intermediates the forward Taylor kernel returns besides p(X) (a generated constant)."""
    return gen.N_OUTPUTS[_TAYLOR[dtype][0].__name__] - 1


def _exp_frechet_adjoint(s: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    n = s.shape[-1]
    st = s.mT
    top = torch.cat([st, g], dim=-1)
    bottom = torch.cat([torch.zeros_like(st), st], dim=-1)
    return torch.linalg.matrix_exp(torch.cat([top, bottom], dim=-2))[..., :n, n:]


def _exp_skew_auto(S: torch.Tensor) -> torch.Tensor:
    """Per sample: Taylor path up to TAYLOR_MAX_NORM, eigendecomposition above (Note [large norms])."""
    norm = _norms(S)
    big = torch.isfinite(norm) & (norm > TAYLOR_MAX_NORM)
    if not bool(big.any()):
        return _ExpSkewTaylor.apply(S, _squarings(S))[0]
    if bool(big.all()):
        return _ExpSkewEigh.apply(S)[0]
    flat = S.reshape(-1, *S.shape[-2:])
    big = big.reshape(-1)
    small_idx, big_idx = (~big).nonzero().squeeze(-1), big.nonzero().squeeze(-1)
    small = flat[small_idx]
    return merge_samples(small_idx, _ExpSkewTaylor.apply(small, _squarings(small))[0], big_idx,
                         _ExpSkewEigh.apply(flat[big_idx])[0]).reshape(S.shape)


def run_exp_skew(S: torch.Tensor, path: str) -> torch.Tensor:
    """``exp(S)`` along ``path``: ``"eigh"``, ``"taylor"``, or per sample (``"auto"``; Note [large norms])."""
    if path == "eigh":
        return _ExpSkewEigh.apply(S)[0]
    if path == "taylor":
        return _ExpSkewTaylor.apply(S, _squarings(S))[0]
    return _exp_skew_auto(S)
