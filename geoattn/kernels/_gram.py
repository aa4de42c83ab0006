r"""The Gram form of the Cayley layer for ``d <= 4`` without a solve: closed-form ``d x d`` factors in the
structure-of-arrays layout.

For ``x`` of shape ``(B, T, d)`` and skew ``A`` the layer output is
:math:`y = xP` with :math:`P = 2N - I`, :math:`N = (I + GA)^{-T}` and the Gram matrix
:math:`G = x^Tx` (ledger ``vp.gram_form``). For ``d <= 4``, ``N`` has a closed form (ledger
``vp.gram_closed_form``, kernel ``vp_gram_closed``; Note [closed-form Gram solve] in
:mod:`geoattn.symbolic.expressions`), and so does the backward (``vp.gram_closed_form_vjp``, kernel
``vp_gram_closed_vjp``). On CPU, where a C compiler is found, the whole layer runs as the native kernels
printed from the same bindings (:mod:`geoattn.kernels._native`, Note [native kernels]); the torch form below
serves everywhere else (other devices, no compiler, ``GEOATTN_NATIVE=0``), and the residual check, the solved
samples and the large-input fallback are the same on both. On CUDA devices the Triton kernels printed from the
same bindings serve (:mod:`geoattn.kernels._triton`), through the same autograd function.

Note [structure-of-arrays runtime]
----------------------------------
On CPU a batched GEMM of 4096 products of a ``16 x 4`` by a ``4 x 4`` matrix costs about 1 ms on one thread,
almost all of it per-matrix overhead, and a batched LAPACK solve of 4096 ``4 x 4`` systems about as much.
Here every tensor keeps the batch as its innermost, contiguous dimension: ``x`` is copied once to
``(T, d, B)`` (a 2-D transpose of ``(B, T d)``), the ``d x d`` matrices are ``(d, d, B)``, and every product
is a handful of elementwise multiply-adds over whole slices. The copy is float64, as in the float64 Gram
form: mixing a float32 copy into float64 accumulations made every ``addcmul_`` cast its operands first and
cost more than the wider copy. The ``d x d`` stage (``vp_gram_closed``, ``vp_gram_closed_vjp``) is always in
this layout; the token-sized work (the Gram matrix, ``xP`` and the backward's products) is in it only for
``T < SOA_MAX_T = 32``: it loops over the ``T`` tokens, and from ``T = 32`` on batched products with their
larger matrices were as fast or faster. Forward and backward on one thread, structure of arrays against
batched products, measured back to back in one ad-hoc run on a noisy machine (absolute times there ran up to
1.5 times the benchmark's): T = 32, B = 4096: 11.0 ms against 10.7; T = 64, B = 512: 2.7 against 1.4;
T = 16, B = 4096: 6.7 against 10.4. The choice depends only on the sample's shape, never on the batch, and
both compute in float64.

Note [closed-form residual check]
---------------------------------
The closed form evaluates :math:`(cI + J^2)(I + J)` over :math:`D = \det(I + GA) \ge 1`; when ``J`` is large and ``I + GA`` badly conditioned (nearly parallel tokens of
large norm) its rounding error grows faster than a pivoted solve's. Every sample's result is therefore
checked a posteriori. With :math:`R = (I + GA)^TN - I`, :math:`N - (I + GA)^{-T} = (I + GA)^{-T}R`, so the
relative error of ``N`` is at most about :math:`\|R\|`: the same bound a pivoted solve has, as both multiply
by :math:`N` in :math:`y = x(2N - I)`. The largest entry of ``R`` must not exceed ``eps(dtype) / 16`` of the
input's dtype (float32: 7e-9); the native stage for ``17 <= d <= 64`` holds an upper bound on it (first order
in the unit roundoff) from the measured error of its solve in place of ``R`` itself (ledger
``vp.gram_lu_measured_bound``, ``d^3 / 2`` against ``2 d^3``). For the samples that fail, ``N`` is recomputed by a
pivoted float64 solve of the ``d x d`` system, per sample, and they stay on the same path: the backward formulas
hold for any exact ``N``. On the seeds' trajectory windows (rigid body, ``T = 3, 8, 16``; coupled oscillator,
``T = 4, 8, 16``) every sample passed; on synthetic nearly parallel windows of scale 10
(``x = 10 (b + 10^{-3} n)``) 97 % failed. Samples with :math:`\|x\|_F^2\|A\|_F > 10^6` take the QR form of Note
[why QR and not the Gram matrix], also per sample, so no result depends on the rest of its batch.
"""

from __future__ import annotations

import torch

from . import _generated as gen
from . import _native, _scratch
from ._functions import _traced, _under_functorch
from ._lapack import solve
from ._lowrank import vp_lowrank

__all__ = ["closed_form_reason", "residual_tolerance", "vp_gram_closed", "vp_gram_solve", "nan_isolated",
           "GRAM_MAX_SCALE", "CLOSED_MAX_DIM"]

#: samples with |x|_F^2 |A|_F above this take the QR form in the Gram routes (Note [why QR and not the Gram matrix]
#: in geoattn.kernels._lowrank)
GRAM_MAX_SCALE = 1e6

#: the largest d the closed form covers (vp.gram_closed_form); the native kernels are printed up to it
CLOSED_MAX_DIM = _native.MAX_DIM
#: sequences shorter than this do the token-sized work in the structure-of-arrays layout, longer ones by
#: batched products (Note [structure-of-arrays runtime])
SOA_MAX_T = 32


def closed_form_reason(x: torch.Tensor, A: torch.Tensor) -> str | None:
    """None when :func:`vp_gram_closed` can compute the Gram form of ``x`` and ``A``, else why not."""
    d = x.shape[-1]
    if d > CLOSED_MAX_DIM:
        return f"d={d} > {CLOSED_MAX_DIM}: no closed form (K^4 + c2 K^2 + c4 I = 0 needs d <= 4)"
    if A.dim() != 2:
        return "a batched weighting A: the closed form takes one A for the whole batch"
    if x.numel() == 0:
        return "an empty input"
    if x.dtype == torch.float64:
        return "float64 input: float64 inputs keep the solve"
    if _traced(x) or _traced(A):
        return "traced (torch.func, torch.compile or meta): the residual check branches on the data"
    if _dual(x) or _dual(A):
        return "a forward-mode tangent: the closed form has no jvp"
    return None


def _soa(x: torch.Tensor) -> torch.Tensor:
    """``(B, T, d)`` -> ``(T, d, B)`` contiguous float64."""
    B, T, d = x.shape
    out = torch.empty(T * d, B, dtype=torch.float64, device=x.device)
    out.copy_(x.reshape(B, T * d).t())
    return out.view(T, d, B)


def _aos(xs: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``(T, d, B)`` -> ``(B, T, d)`` of ``dtype`` (cast first, then one transposing copy: faster than a casting
    one)."""
    T, d, B = xs.shape
    return xs.reshape(T * d, B).t().to(dtype).contiguous().view(B, T, d)


def _outer_sum(xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
    """``sum_t xs[t]^T ys[t]``, shape ``(d, d, B)``: the product ``xs^T ys`` of ``(T, d, B)`` token arrays."""
    return gen.soa_mm(xs.transpose(0, 1), ys)


def residual_tolerance(dtype: torch.dtype) -> float:
    """The largest residual entry :math:`|(I + GA)^TN - I|` the closed form may leave for inputs of ``dtype``:
    ``eps(dtype) / 16`` (Note [closed-form residual check])."""
    return torch.finfo(dtype).eps / 16


def _residual_ok(R: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Per sample: whether ``max |R| <= residual_tolerance(dtype)`` for the kernel's residual ``R = (I + G A)^T N - I``
    in the structure-of-arrays layout."""
    return R.abs().flatten(0, 1).amax(0) <= residual_tolerance(dtype)


class _VPGramClosed(torch.autograd.Function):
    # the native kernels when they can run (Note [native kernels] in geoattn.kernels._native); otherwise the token-
    # sized work in the structure-of-arrays layout for short sequences, by batched products for long ones (Note
    # [structure-of-arrays runtime]); the choice depends on the sample's shape and the machine, never on the batch.
    # Returns y, the per-sample residual check and the per-sample |x|_F^2 (the trace of the Gram matrix).
    @staticmethod
    def forward(ctx, x, A, native):
        B, T, d = x.shape
        As = _skew64(A)
        ctx.native = _kernel_module(native)
        if ctx.native is not None:
            xn = _native_tokens(x)
            # kernels that keep no Gram matrix of the batch (BLOCK_GRAM) return its traces instead
            block = bool(getattr(ctx.native, "BLOCK_GRAM", False))
            if block:
                y, sq, N, rmax = ctx.native.gram_forward_traces(xn, As.contiguous())
                G = None
            else:
                y, G, N, rmax = ctx.native.gram_forward(xn, As.contiguous())
                sq = G.diagonal(dim1=-2, dim2=-1).sum(-1)
            ok = rmax <= residual_tolerance(x.dtype)
            if not bool(ok.all()):
                bad = (~ok).nonzero().squeeze(-1)
                xb = xn.index_select(0, bad).double()
                Nb = _solve(G.index_select(0, bad) if G is not None else xb.mT @ xb, As)
                N = N.index_copy(0, bad, Nb)
                eye = torch.eye(d, dtype=torch.float64, device=x.device)
                y = y.index_copy(0, bad, (xb @ (2 * Nb - eye)).to(xn.dtype))
            # kernels that take the forward's Gram matrices (SAVED_GRAM) are spared recomputing them
            ctx.gram = not block and bool(getattr(ctx.native, "SAVED_GRAM", False))
            ctx.save_for_backward(x, A, N, As, *([G] if ctx.gram else []))
            ctx.sq = sq  # |x|_F^2 of a finite sample is finite in double (_finite_mask)
            ctx.mark_non_differentiable(ok, sq)
            return y.to(x.dtype), ok, sq
        As = As[..., None]  # (d, d, 1)
        soa = T < SOA_MAX_T
        xs = _soa(x) if soa else x.to(torch.float64)
        G = _outer_sum(xs, xs) if soa else (xs.mT @ xs).permute(1, 2, 0).contiguous()
        N, P, R = gen.vp_gram_closed(G, As)
        ok = _residual_ok(R, x.dtype)
        if not bool(ok.all()):
            bad = (~ok).nonzero().squeeze(-1)
            Nb = _solve(G.index_select(-1, bad).permute(2, 0, 1), As[..., 0])
            N = N.index_copy(-1, bad, Nb.permute(1, 2, 0).contiguous())
            P = 2 * N - gen.soa_eye(d, N)
        y = _aos(gen.soa_mm(xs, P), x.dtype) if soa else (xs @ P.permute(2, 0, 1).contiguous()).to(x.dtype)
        ctx.soa = soa
        ctx.save_for_backward(x, A, xs, G, N, P, As)
        sq = gen.soa_tr(G)
        ctx.sq = sq
        ctx.mark_non_differentiable(ok, sq)
        return y, ok, sq

    @staticmethod
    def backward(ctx, gy, _ok, _scale):
        x, A = ctx.saved_tensors[:2]
        if torch.is_grad_enabled() or (ctx.native is not None and _under_functorch(gy)):
            # double backward: through the float64 Gram form, built from differentiable operations; also a
            # batched incoming gradient (is_grads_batched, jacobian(vectorize=True)), which the C kernel cannot read
            def f(a, b):
                return gen.vp_gram_cayley(a.double(), _skew64(b)).to(a.dtype)

            _, pullback = torch.func.vjp(f, x, A)
            return (*pullback(gy), None)
        if ctx.native is not None:
            N, As = ctx.saved_tensors[2:4]
            xn = _native_tokens(x)
            kw = {"G": ctx.saved_tensors[4]} if ctx.gram else {}
            taken = []  # temporaries that never leave this call (Note [reused scratch] in geoattn.kernels._scratch)
            gyn = gy.to(xn.dtype)  # an expanded gradient stays expanded for kernels that read strides
            strided = getattr(ctx.native, "STRIDED_GY", False)
            if getattr(ctx.native, "GA_OUT", False):
                kw["gA_out"], gyn, taken = _scratch.backward_buffers(N.shape[0], N.shape[-1], gyn, strided)
            gx, gA = ctx.native.gram_backward(xn, gyn if strided else gyn.contiguous(), N, As, **kw)
            finite = _finite_mask(ctx.sq)
            if finite is not None:
                gA = torch.where(finite[:, None, None], gA, torch.zeros((), dtype=gA.dtype, device=gA.device))
            gAs = gA.sum(0)
            _scratch.release(*taken)
            return gx.to(x.dtype), (0.5 * (gAs - gAs.mT)).to(A.dtype), None
        _, _, xs, G, N, P, As = ctx.saved_tensors
        if ctx.soa:
            gys = _soa(gy)  # also makes the expanded gradient of out.sum() contiguous
            Mbar, H = gen.vp_gram_closed_vjp(N, _outer_sum(xs, gys), As)
            gxs = gen.soa_mm(gys, P.transpose(0, 1)).add_(gen.soa_mm(xs, H))
            gx = _aos(gxs, gy.dtype)
        else:
            gys = gy.to(torch.float64).contiguous()
            Mbar, H = gen.vp_gram_closed_vjp(N, (xs.mT @ gys).permute(1, 2, 0).contiguous(), As)
            gx = torch.baddbmm(gys @ P.permute(2, 1, 0).contiguous(), xs, H.permute(2, 0, 1).contiguous()).to(gy.dtype)
        d, B = G.shape[0], G.shape[2]
        finite = _finite_mask(ctx.sq)
        if finite is not None:
            zero = torch.zeros((), dtype=G.dtype, device=G.device)
            G, Mbar = torch.where(finite, G, zero), torch.where(finite, Mbar, zero)
        gAs = G.reshape(d, d * B) @ Mbar.permute(0, 2, 1).reshape(d * B, d)  # sum over the batch of G Mbar
        return gx, (0.5 * (gAs - gAs.mT)).to(A.dtype), None


def _kernel_module(native):
    """The module of printed kernels ``native`` names: None (the torch form) for False, the C kernels
    (:mod:`geoattn.kernels._native`) for True, else ``native`` itself (:mod:`geoattn.kernels._triton`, which takes
    and returns the same arrays)."""
    if native is False or native is None:
        return None
    return _native if native is True else native


def native_dtype(x: torch.Tensor) -> torch.dtype:
    """The real type the native kernels take ``x`` in: float64 stays float64, the rest is float32."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _native_tokens(x: torch.Tensor) -> torch.Tensor:
    """``x`` as the native kernels take it, contiguous; no copy when it is already."""
    return x.to(native_dtype(x)).contiguous()


def _flat_batch(x: torch.Tensor, A: torch.Tensor):
    """``(batch, xb, Ab)``: the broadcast batch shape of ``x`` ``(..., T, d)`` and ``A`` ``(d, d)`` or
    ``(..., d, d)``, ``x`` as ``(B, T, d)`` and ``A`` as one ``(d, d)`` or ``(B, d, d)``."""
    batch = torch.broadcast_shapes(x.shape[:-2], A.shape[:-2])
    T, d = x.shape[-2:]
    xb = x.expand(batch + (T, d)).reshape(-1, T, d)
    return batch, xb, (A if A.dim() == 2 else A.expand(batch + (d, d)).reshape(-1, d, d))


def _qr_for_failed(y: torch.Tensor, ok: torch.Tensor, xb: torch.Tensor, Ab: torch.Tensor, activation: str):
    """``y`` with the samples where ``ok`` is False recomputed by the QR form in float64, each on its own; a failed
    sample with a non-finite entry (in ``x``, or in its own ``A``) is NaN throughout instead, a constant: the QR
    form would return no more and send NaN into the gradient of a shared ``A`` even where the sample's incoming
    gradient is zero."""
    if bool(ok.all()):
        return y
    idx = (~ok).nonzero().squeeze(-1)
    with torch.no_grad():
        finite = torch.isfinite(xb.index_select(0, idx)).flatten(1).all(1)
        if Ab.dim() == 3:
            finite &= torch.isfinite(Ab.index_select(0, idx)).flatten(1).all(1)
    if not bool(finite.all()):
        nan = torch.full((), float("nan"), dtype=y.dtype, device=y.device)
        y = y.index_put((idx[~finite],), nan.expand((int((~finite).sum()),) + y.shape[1:]))
        idx = idx[finite]
        if idx.numel() == 0:
            return y
    Ai = Ab if Ab.dim() == 2 else Ab[idx]
    return y.index_put((idx,), vp_lowrank(xb[idx].double(), Ai.double(), activation).to(y.dtype))


def nan_isolated(form, x: torch.Tensor, A: torch.Tensor, *args) -> torch.Tensor:
    """``form(x, A, *args)`` with every sample that has a non-finite entry (in ``x``, or in its own ``A``) computed
    from zeros in its place and NaN throughout in the result, a constant: for the eager forms (the ``T x T`` form,
    the low-rank form) whose autograd would otherwise send NaN from such a sample into the gradient of a shared
    ``A`` (a zero sample adds exactly zero to it, and its incoming gradient is zero). The batch is not compacted:
    every other sample keeps its place, so a batched LAPACK call sees its matrix where it would without the
    non-finite one (Note [aligned batches] in :mod:`geoattn.kernels._lapack`: on an AVX2 machine a QR of a 9 x 3
    sample moved by one place changed its last bits). One pass over the tokens, taken by routes that cost far more
    than it."""
    if x.numel() == 0 or _traced(x) or _traced(A):
        return form(x, A, *args)
    with torch.no_grad():
        finite = torch.isfinite(x).flatten(-2).all(-1)
        if A.dim() > 2:
            finite = finite & torch.isfinite(A).flatten(-2).all(-1)
    if bool(finite.all()):
        return form(x, A, *args)
    batch = torch.broadcast_shapes(x.shape[:-2], A.shape[:-2])
    T, d = x.shape[-2:]
    keep = finite.expand(batch).reshape(-1)[:, None, None]
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    xb = torch.where(keep, x.expand(batch + (T, d)).reshape(-1, T, d), zero)
    Ab = A if A.dim() == 2 else torch.where(keep, A.expand(batch + (d, d)).reshape(-1, d, d), zero)
    out = torch.where(keep, form(xb, Ab, *args), torch.full((), float("nan"), dtype=x.dtype, device=x.device))
    return out.reshape(batch + (T, d))


def _finite_samples(G: torch.Tensor) -> torch.Tensor:
    r"""Per sample of the float64 Gram matrices ``G`` (``(B, d, d)``): whether the sample's tokens are finite
    (:math:`\mathrm{Tr}\,G = \|x\|_F^2` is finite in double exactly then); the samples whose kernel gradients enter
    the sum over the batch of a shared ``A`` (a non-finite sample's output is NaN and its own). One pass over
    ``B d`` numbers, not over the tokens."""
    return torch.isfinite(G.diagonal(dim1=-2, dim2=-1).sum(-1))


def _finite_mask(sq: torch.Tensor) -> torch.Tensor | None:
    """None when every sample's ``|x|_F^2`` (``sq``, float64, each at least 0 or NaN) is finite, else the mask of
    the finite samples. One reduction in the common case: a non-finite sum means a non-finite sample or an
    overflow of the sum (past about ``1e230`` float32 tokens, or float64 tokens near their range's end), and the
    exact mask is computed then."""
    if bool(torch.isfinite(sq.sum())):
        return None
    finite = torch.isfinite(sq)
    return None if bool(finite.all()) else finite


def _skew64(A: torch.Tensor) -> torch.Tensor:
    """The skew part of ``A`` in float64 (the layer's forms use it, so the gradient in ``A`` is skew)."""
    A = A.to(torch.float64)
    return 0.5 * (A - A.mT)


def _solve(G: torch.Tensor, As: torch.Tensor) -> torch.Tensor:
    """``N = (I + G A)^{-T}`` by a pivoted float64 solve, for ``G`` of shape ``(n, d, d)``: the samples that failed
    the residual check (Note [closed-form residual check]); the backward formulas hold for any exact ``N``, so
    those samples stay on the same path."""
    eye = torch.eye(G.shape[-1], dtype=G.dtype, device=G.device)
    M = eye + G @ As
    return solve(M.mT, eye.expand(M.shape))


def _dual(t: torch.Tensor) -> bool:
    """Whether ``t`` carries a forward-mode tangent (the closed form has no jvp: such inputs take the solve)."""
    from torch.autograd import forward_ad

    if getattr(forward_ad, "_current_level", 0) < 0:  # outside every dual_level: no tensor has a tangent
        return False
    return forward_ad.unpack_dual(t).tangent is not None


def vp_gram_closed(x: torch.Tensor, A: torch.Tensor, native) -> torch.Tensor:
    """The Gram form by its closed form (``x`` of shape ``(..., T, d)`` with ``d <= 4``, ``A`` of shape ``(d, d)``;
    :func:`closed_form_reason` is None), by printed kernels (``native``: True for the C kernels, or a module of
    kernels with the same functions, :mod:`geoattn.kernels._triton`) or the torch form (False); samples that
    fail the residual check are solved on the same path (Note [closed-form residual check]), and samples with
    ``|x|_F^2 |A|_F > GRAM_MAX_SCALE`` take the QR form on their own (Note [why QR and not the Gram matrix])."""
    shape = x.shape
    xb = x.reshape(-1, *shape[-2:])
    y, _, sq = _VPGramClosed.apply(xb, A, native)
    scale = sq * _skew64(A.detach()).norm()
    if bool((scale <= GRAM_MAX_SCALE).all()):  # one test for both below: a NaN or infinite scale fails it
        return y.reshape(shape)
    big = scale > GRAM_MAX_SCALE
    lost = ~torch.isfinite(sq)  # a non-finite entry: NaN throughout, a constant (see _qr_for_failed)
    if bool(lost.any()):
        idx = lost.nonzero().squeeze(-1)
        nan = torch.full((), float("nan"), dtype=y.dtype, device=y.device)
        y = y.index_put((idx,), nan.expand((idx.numel(),) + y.shape[1:]))
        big &= ~lost
    if bool(big.any()):
        idx = big.nonzero().squeeze(-1)
        y = y.index_put((idx,), vp_gram_solve(xb[idx], A))
    return y.reshape(shape)


def vp_gram_solve(x: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """The Gram form with a pivoted solve, computed in float64 and differentiated by autograd; per sample, inputs
    too large for it (``|x|_F^2 |A|_F > GRAM_MAX_SCALE``) take the QR form in float64 (Note [why QR and not the
    Gram matrix]); a sample with a non-finite entry (in ``x`` or its own ``A``) is NaN throughout, a constant, so
    that it sends nothing into the gradient of a shared ``A``."""
    xd, Ad = x.double(), A.double()
    Ad = 0.5 * (Ad - Ad.mT)  # the forms use the skew part of A, so the gradient in A is skew too
    if xd.numel() == 0 or _traced(x) or _traced(A):
        return gen.vp_gram_cayley(xd, Ad).to(x.dtype)
    scale = (xd.detach() * xd.detach()).sum((-2, -1)) * Ad.detach().norm(dim=(-2, -1))
    big = scale > GRAM_MAX_SCALE
    lost = ~torch.isfinite(scale)  # a non-finite entry (NaN throughout, a constant: see _qr_for_failed), or an
    if bool(lost.any()):  # overflow of the scale alone: finite tokens near 1e152 stay on the QR form
        with torch.no_grad():
            lost = ~torch.isfinite(xd).flatten(-2).all(-1) | ~torch.isfinite(Ad).flatten(-2).all(-1)
    if not bool((big | lost).any()):
        return gen.vp_gram_cayley(xd, Ad).to(x.dtype)
    batch = torch.broadcast_shapes(x.shape[:-2], A.shape[:-2])
    T, d = x.shape[-2:]
    xb = xd.expand(batch + (T, d)).reshape(-1, T, d)
    Ab = Ad.expand(batch + (d, d)).reshape(-1, d, d)
    big, lost = big.expand(batch).reshape(-1), lost.expand(batch).reshape(-1)
    big &= ~lost
    small = ~(big | lost)
    out = torch.full(xb.shape, float("nan"), dtype=torch.float64, device=x.device)
    if bool(small.any()):
        out = out.index_put((small,), gen.vp_gram_cayley(xb[small], Ab[small]))
    if bool(big.any()):
        out = out.index_put((big,), vp_lowrank(xb[big], Ab[big], "cayley"))
    return out.reshape(batch + (T, d)).to(x.dtype)
