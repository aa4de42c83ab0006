r"""The autograd Functions behind :mod:`geoattn.kernels`, their design Notes, and the choice of method.

Note [custom backward passes]
-----------------------------
``cayley`` uses the derived vector-Jacobian product

.. math:: \frac{\partial L}{\partial C} = -\tfrac12 (I + \Lambda)^T G (I + \Lambda)^T,
   \qquad \Lambda = \mathrm{Cayley}(C),

(ledger claim ``cayley.vjp``), two batched products instead of triangular
solves. It is built from differentiable operations on the saved output, so
double backward works. ``exp_skew`` computes :math:`\exp(S)` by scaling
and squaring a Taylor polynomial, with the backward derived from the same
scheme (see Note [scaling and squaring]), or from the Hermitian
eigendecomposition :math:`iS = U\,\mathrm{diag}(\theta)\,U^H` with the
Daleckii--Krein backward (``exp_skew.vjp``); when a graph of the backward is
requested (double backward) both use the block-exponential form of the
Frechet derivative instead (see Note [exp_skew backward]).

``cayley`` and the eigendecomposition path of ``exp_skew`` define
``setup_context`` and ``generate_vmap_rule``, so ``torch.func`` transforms
(``vmap``, ``vjp``, ``jacrev``) compose with them; ``exp_skew`` takes the
eigendecomposition path inside those transforms.
"""

from __future__ import annotations

import math

import torch

from . import _generated as gen
from . import _native
from ._checks import skew_defect, skew_tolerance, tolerance_at


class _Cayley(torch.autograd.Function):
    # Note [Cayley cost]
    # The forward is one batched LAPACK solve, as in the naive composition;
    # only the backward is cheaper (two batched products on the saved output
    # instead of a solve with the saved factorisation and a product). On CPU
    # a batched solve of small matrices costs a few microseconds per matrix
    # (per-matrix LAPACK calls), so the forward dominates and the saving is
    # largest where the naive backward's solve is (T around 8).
    # benchmarks/cayley_forms.py measures the exact alternatives against the
    # solve: Cholesky of the normal matrix (I - C)(I - C)^T, Gauss-Jordan
    # without pivoting, block inversion by Schur complements, the solve over
    # cache-sized chunks of the batch, and at T = 3 the adjugate. At T = 16
    # none is faster by a useful margin on one CPU thread, and the unpivoted
    # ones lose accuracy as |C| grows (error ~ |C|^2 u instead of |C| u), so
    # the solve stays.
    #
    # Note [Cayley at large norms]
    # The solve's orthogonality error grows like u ||C|| (float32, T = 3: 1, 9, 69, 607 T eps at
    # entries of size 1, 10, 100, 1000; 0.2 absolute at 1e6). Skew samples with
    # max(||C||_1, ||C||_inf) > CAYLEY_MAX_NORM = 16 are recomputed from the eigendecomposition
    # i C = U diag(theta) U^H, Cayley(C) = Re(U diag((1 + i theta)/(1 - i theta)) U^H)
    # (cayley.eigh_form), with the same antisymmetrised theta and Newton--Schulz polish as exp_skew
    # (Note [real part at large norms]): orthogonal to a few eps at every magnitude. The
    # decision is per sample (``big``), so it never depends on the rest of the batch; inside
    # torch.func transforms, torch.compile and on the meta device the solve serves every sample.
    # The backward needs only the output, so both forms share it.
    #
    # Note [Cayley of small skew matrices]
    # For T <= 3 a skew C satisfies C^3 = -a C with a = -Tr(C^2)/2, so Cayley(C) = I + 2 (C^2 - C)/(1 + a)
    # (kernels.cayley_skew_small): one batched product and a few elementwise passes instead of a LAPACK solve
    # per matrix, orthogonal to a few eps; samples with entries near where C^2 and Tr(C^2) would overflow
    # (above sqrt(max float) / (2T): 3e18 in float32 at T = 3) take the eigendecomposition, per sample (on the CPU
    # the native kernels compute in double: only float64 samples above sqrt(max double) / (2T) do; Note [native
    # Cayley kernels]). The form is taken per sample, for the samples that
    # are skew up to the check's tolerance; any other sample is solved, so a result never depends on the rest
    # of the batch. The backward is the Cayley VJP of cayley.vjp from the output, as for every T. Inside
    # torch.func transforms, torch.compile and on the meta device every sample is solved.
    #
    # Note [native Cayley kernels]
    # On the CPU, for float32 and float64 inputs with T <= 3, the forward and the backward are C kernels printed
    # from the same bindings (kernels.cayley_skew_small and cayley.vjp, with T renamed d; geoattn.codegen.cprinter)
    # and built with the Gram layer's (Note [native kernels] in geoattn.kernels._native). At this size torch's cost
    # is per call, not per flop: one batched product of 4096 3 x 3 matrices takes about 120 us on one thread, a
    # third of LAPACK's solve of the whole batch (330 us), for about 100 kflop. The kernel evaluates the closed
    # form in double in one pass over the batch, rounds once, and returns per sample max|C + C^T| and max|C|, so
    # the skew check (skew_tolerance) needs no pass of its own. Non-skew samples are solved; skew samples whose
    # C^2 would overflow in double (entries above sqrt(max double)/(2T), float64 inputs only) take the
    # eigendecomposition, per sample. The backward takes
    # the kernel when no graph of it is asked for; double backward keeps the torch form. USE_NATIVE = False, or
    # GEOATTN_NATIVE=0 in the environment, turns the kernels off.
    generate_vmap_rule = True

    @staticmethod
    def forward(c, big=None):
        if c.shape[-1] <= 3 and c.numel() and not _traced(c):
            return _cayley_small(c)
        return cayley_routed(c, big, gen.cayley_matrix)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad):
        (lam,) = ctx.saved_tensors
        if not torch.is_grad_enabled() and native_small(lam) and grad.dtype == lam.dtype and not _traced(grad):
            # no graph of the backward is asked for (double backward takes the torch form below), and the
            # incoming gradient is a plain tensor (not vmapped by is_grads_batched or jacobian(vectorize=True))
            T = lam.shape[-1]
            gc = _native.cayley_backward(lam.reshape(-1, T, T).contiguous(), grad.reshape(-1, T, T).contiguous())
            return gc.reshape(lam.shape), None
        if _constant(grad):
            return _cayley_vjp_constant(lam, grad), None
        # an expanded gradient that is not constant: batched products of expanded operands take
        # a slow path, so it is copied first
        return gen.cayley_vjp(lam, grad.contiguous()), None


# Note [constant incoming gradient]
# -------------------------------
# loss = out.sum() (or out.mean()) hands the backward one number expanded to the output's shape:
# every stride is zero. The Cayley VJP -1/2 P G P (P = I + Lam^T) with G = c 1 1^T is then the
# rank-one matrix -c/2 (P 1)(1^T P): two row/column sums and an outer product instead of two
# batched products (the same expression, associated differently: cayley.vjp).
def _constant(g: torch.Tensor) -> bool:
    """True when ``g`` is one number expanded (every stride zero), as the gradient of ``out.sum()`` is."""
    return g.dim() >= 2 and g.numel() > 0 and all(st == 0 for st in g.stride()) and not _traced(g)


def _cayley_vjp_constant(lam: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """``-1/2 P (c 1 1^T) P = -c/2 (P 1)(1^T P)`` with ``P = I + Lam^T`` (Note [constant incoming gradient])."""
    c = g[(0,) * g.dim()]
    rows = _sum_small(lam, -2) + 1  # P 1: row sums of I + Lam^T are the column sums of Lam, plus one
    cols = _sum_small(lam, -1) + 1  # 1^T P: column sums of I + Lam^T are the row sums of Lam, plus one
    return (rows * (-0.5 * c)).unsqueeze(-1) * cols.unsqueeze(-2)  # the scale on the small factor


def _sum_small(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``x.sum(dim)``; over a dimension of at most 4 entries as explicit additions (torch's reduction kernel
    costs about ten times more there on CPU: a 4096 x 3 x 3 batch, 90-230 us against 11-22 us)."""
    if x.shape[dim] > 4 or x.shape[dim] < 2:
        return x.sum(dim)
    parts = x.unbind(dim)
    out = parts[0] + parts[1]
    for part in parts[2:]:
        out = out + part
    return out


def _newton_schulz(e: torch.Tensor) -> torch.Tensor:
    """One Newton--Schulz step ``E (3I - E^T E) / 2`` towards the nearest orthogonal matrix."""
    r = e.mT @ e
    r.mul_(-0.5).diagonal(dim1=-2, dim2=-1).add_(1.5)
    return e @ r


def _complex_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.complex64 if dtype == torch.float32 else torch.complex128


def _eigh_skew(s: torch.Tensor):
    """``theta, U`` with ``i S = U diag(theta) U^H``, theta antisymmetrised (Note [real part at large norms])."""
    theta, u = torch.linalg.eigh(s.to(_complex_dtype(s.dtype)) * 1j)
    return 0.5 * (theta - theta.flip(-1)), u


def cayley_routed(c: torch.Tensor, big: torch.Tensor | None, solve, shift: float = 0.0) -> torch.Tensor:
    """``solve(c)`` (a generated Cayley kernel, minus ``shift`` times I) on the samples not in ``big``, the
    eigendecomposition on those in it. Large samples are not solved at all: I + C may round to a singular
    matrix for odd T (Note [Cayley at large norms])."""
    out = solve(c if big is None else c.masked_fill(big[..., None, None], 0))
    if big is not None:
        lam = _cayley_eigh(c[big])
        if shift:
            lam.diagonal(dim1=-2, dim2=-1).sub_(shift)
        out[big] = lam  # boolean-mask assignment: any memory layout of out
    return out


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


def cayley_closed(c: torch.Tensor, kernel=gen.cayley_skew_small, shift: float = 0.0) -> torch.Tensor:
    """The closed form ``kernel`` (Cayley(C), or with ``shift=1`` Cayley(C) - I) of skew samples with T <= 3. Its
    C^2 and Tr(C^2) overflow for entries near sqrt(max float) / T (1e18 in float32): samples with an entry above
    sqrt(max float) / (2T) take the eigendecomposition of Note [Cayley at large norms], per sample (inside
    transforms every sample takes the form)."""
    bound = math.sqrt(torch.finfo(c.dtype).max) / (2 * c.shape[-1])
    if _traced(c) or not bool(c.detach().abs().amax() > bound):  # one reduction (a nan stays on the form)
        return kernel(c)
    return cayley_routed(c, c.detach().abs().flatten(-2).amax(-1) > bound, kernel, shift)


def _cayley_small(c: torch.Tensor) -> torch.Tensor:
    """Cayley(C) for T <= 3: the closed form on the skew samples, the solve on the others (Note [Cayley of small
    skew matrices]); non-skew samples never take the eigendecomposition (_large_skew flags skew ones only)."""
    if native_small(c):
        return _cayley_small_native(c)
    if all_skew_small(c):
        return cayley_closed(c)
    flat = c.reshape(-1, *c.shape[-2:])
    skew = skew_defect(flat) <= skew_tolerance(flat)
    out = torch.empty_like(flat)
    out[~skew] = gen.cayley_matrix(flat[~skew])
    if bool(skew.any()):
        out[skew] = cayley_closed(flat[skew])
    return out.reshape(c.shape)


def native_small(t: torch.Tensor) -> bool:
    """Whether the native kernels of the T <= 3 Cayley transform serve ``t`` (Note [native Cayley kernels])."""
    return (USE_NATIVE and t.device.type == "cpu" and t.dtype in _NATIVE_REALS
            and 1 <= t.shape[-1] <= _native.CAYLEY_MAX and not _traced(t)
            and _native.native_status(t.shape[-1], t.dtype)[0])


_NATIVE_REALS = (torch.float32, torch.float64)
#: whether cayley takes the native kernels where they serve (the tests compare with the torch forms)
USE_NATIVE = True


def _cayley_small_native(c: torch.Tensor) -> torch.Tensor:
    """Cayley(C) for T <= 3 by the native kernel (Note [native Cayley kernels]): the closed form on the samples that
    are skew up to :func:`skew_tolerance` and small enough for double, the solve on the other samples, the
    eigendecomposition on the skew ones too large for it."""
    T = c.shape[-1]
    flat = c.detach().reshape(-1, T, T).contiguous()
    lam, defect, size = _native.cayley_forward(flat)
    skew = defect <= tolerance_at(T, c.dtype, size)  # skew_tolerance from the kernel's max|C|; NaN: not skew
    big = size > math.sqrt(torch.finfo(torch.float64).max) / (2 * T)  # C^2 overflows in double (float64 input)
    redo = ~skew | big
    if bool(redo.any()):
        lam[~skew] = gen.cayley_matrix(flat[~skew])
        if bool((skew & big).any()):
            lam[skew & big] = _cayley_eigh(flat[skew & big])
    return lam.reshape(c.shape)


def all_skew_small(c: torch.Tensor) -> bool:
    """Whether every matrix of a batch of T <= 3 matrices is skew up to its own tolerance (Note [Cayley of
    small skew matrices]): a sufficient screen on the few independent entries first (the smallest tolerance
    bounds every sample's), then the per-sample check. False inside transforms and for empty batches."""
    T = c.shape[-1]
    if T > 3 or c.numel() == 0 or _traced(c):
        return False
    up, lo = (i.to(c.device) for i in _PAIRS[T])
    flat = c.detach().reshape(-1, T * T)
    defect = (flat.index_select(1, up) + flat.index_select(1, lo)).abs()
    if float(defect.max()) <= 8.0 * T * torch.finfo(c.dtype).eps:  # skew_tolerance is at least this
        return True
    return bool((skew_defect(c) <= skew_tolerance(c)).all())


#: T -> (flat indices of the entries on and above the diagonal, of their mirror images)
_PAIRS = {T: tuple(torch.tensor([i * T + j if k == 0 else j * T + i for i in range(T) for j in range(i, T)])
                   for k in (0, 1)) for T in (1, 2, 3)}


def _cayley_eigh(c: torch.Tensor) -> torch.Tensor:
    """Cayley(C) of skew C from its eigendecomposition, polished (Note [Cayley at large norms])."""
    theta, u = _eigh_skew(c)
    return _newton_schulz(gen.cayley_from_eigh(u, theta).to(c.dtype))


#: skew samples above this norm take the eigendecomposition in cayley (Note [Cayley at large norms])
CAYLEY_MAX_NORM = 16.0


def _traced(t: torch.Tensor) -> bool:
    """Inside a torch.func transform, under torch.compile or on the meta device: no data-dependent branches."""
    # is_compiling first: dynamo cannot trace the functorch query
    return torch.compiler.is_compiling() or t.device.type == "meta" or _under_functorch(t)


def _large_skew(c: torch.Tensor, bound: float | None = None) -> torch.Tensor | None:
    """Per matrix: skew (up to the check's tolerance), finite and of norm above ``bound`` (default
    :data:`CAYLEY_MAX_NORM`, read at call time); None if none is.

    Screened cheaply: every matrix has norm <= T max|c_ij|, and for skew matrices ||C||_1 = ||C||_inf,
    so the row-sum norm decides; the skew check runs only on a batch that has a large matrix.
    """
    bound = CAYLEY_MAX_NORM if bound is None else bound
    if c.numel() == 0 or _traced(c):
        return None
    screen = float(torch.maximum(c.detach().max(), -c.detach().min()))
    if screen * c.shape[-1] <= bound:  # a nan anywhere makes the screen nan: then every sample is measured
        return None
    norm = c.abs().sum(-1).amax(-1)
    big = torch.isfinite(norm) & (norm > bound)
    if not bool(big.any()):
        return None
    big &= skew_defect(c) <= skew_tolerance(c)
    return big if bool(big.any()) else None


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


def _under_functorch(t: torch.Tensor) -> bool:
    """Whether ``t`` is a functorch wrapper, or a legacy batched tensor (the incoming gradient under
    ``is_grads_batched=True`` or ``jacobian(vectorize=True)``): no data to branch on, no storage to hand to C.
    Under ``torch.compile`` the same holds for every tensor, and dynamo cannot trace the functorch queries: True."""
    if torch.compiler.is_compiling():
        return True
    functorch = getattr(torch._C, "_functorch", None)
    for name in ("is_functorch_wrapped_tensor", "is_legacy_batchedtensor"):
        check = getattr(functorch, name, None)
        if check is not None and bool(check(t)):
            return True
    return False


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
    parts = torch.cat([_ExpSkewTaylor.apply(small, _squarings(small))[0], _ExpSkewEigh.apply(flat[big_idx])[0]])
    order = torch.argsort(torch.cat([small_idx, big_idx]))
    return parts[order].reshape(S.shape)


def exp_skew_path(S: torch.Tensor, method: str) -> tuple[str, str]:
    """How :func:`geoattn.kernels.exp_skew` computes ``S``: ``("taylor" | "eigh" | "per-sample" | "empty", reason)``.

    The one place the method is chosen; the reason says why, as torch records
    why a fast path was not taken.
    """
    if method not in ("auto", "taylor", "eigh"):
        raise ValueError(f"Expected method in ('auto', 'taylor', 'eigh'). Got {method!r}.")
    if S.shape[-1] == 0:
        return "empty", "T = 0: the empty matrix"
    traced = _traced(S)
    if method == "taylor" and traced:
        raise ValueError(
            "Expected method 'auto' or 'eigh' inside torch.func transforms, torch.compile or on the meta device "
            "(the Taylor path's number of squarings depends on the data). Got method='taylor'."
        )
    if method != "auto":
        return method, "requested"
    if traced:
        return "eigh", "traced (torch.func, torch.compile or meta): the number of squarings may not depend on the data"
    return "per-sample", f"Taylor up to norm {TAYLOR_MAX_NORM:g}, eigendecomposition above (Note [large norms])"


def cayley_apply_path(T: int, d: int, method: str, *, large: bool) -> tuple[str, str]:
    """How :func:`geoattn.kernels.cayley_apply` computes ``(x^T Cayley(C))^T``: ``("solve" | "matrix", reason)``."""
    if method not in ("auto", "solve", "matrix"):
        raise ValueError(f"Expected method in ('auto', 'solve', 'matrix'). Got {method!r}.")
    if method != "auto":
        return method, "requested"
    if large:
        return "matrix", f"a sample's norm exceeds {CAYLEY_MAX_NORM:g}: the Cayley matrix from the eigendecomposition"
    if d < T:
        return "solve", f"d = {d} < T = {T}: one solve with {d} right-hand sides instead of forming the T x T matrix"
    return "matrix", f"d = {d} >= T = {T}: forming the T x T matrix is as cheap"


def run_exp_skew(S: torch.Tensor, path: str) -> torch.Tensor:
    """``exp(S)`` along a path of :func:`exp_skew_path`."""
    if path == "eigh":
        return _ExpSkewEigh.apply(S)[0]
    if path == "taylor":
        return _ExpSkewTaylor.apply(S, _squarings(S))[0]
    return _exp_skew_auto(S)
