r"""The Cayley transform's autograd Function and its design Notes, and the helpers the kernels share.

The exponential's Functions live in :mod:`geoattn.kernels._exp`; which one serves a call is the dispatch
table's choice (:mod:`geoattn.kernels.dispatch`).

Note [custom backward passes]
-----------------------------
``cayley`` uses the derived vector-Jacobian product

.. math:: \frac{\partial L}{\partial C} = -\tfrac12 (I + \Lambda)^T G (I + \Lambda)^T,
   \qquad \Lambda = \mathrm{Cayley}(C),

(ledger claim ``cayley.vjp``), two batched products instead of triangular
solves. It is built from differentiable operations on the saved output, so
double backward works. ``exp_skew`` computes :math:`\exp(S)` by scaling
and squaring a Taylor polynomial, with the backward derived from the same
scheme (see Note [scaling and squaring] in ``_exp``), or from the Hermitian
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
from . import _native, _native_cayley_solve
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
    # The LU solve is backward stable: (I + C + E) L = I - C with ||E|| <= c_T rho u ||I + C||, and for skew C every
    # singular value of I + C is sqrt(1 + lambda^2) >= 1, so ||(I + C)^-1|| <= 1 and the orthogonality defect
    # starts growing like u ||C||; where C has an eigenvalue near 0 (always for odd T) it grows faster, up to
    # u ||C||^2. Measured in float32 (20,000 samples at log-uniform scales, T = 4, 5, 7, 8, 9, 16, 17, 32; max
    # |L^T L - I| in units of T eps, by ||C||_1 / T): at most 2.3 up to 4, 5 up to 8, 6.9 up to 16, 12 up to 32, 48
    # up to 128; at entry scale 1e4, T = 15: 2.4e3 (float64 alike). The reliability bar is 64 T eps. The solve alone
    # serves skew samples with max(||C||_1, ||C||_inf) <= CAYLEY_SOLVE_NORM_PER_T T = 8 T: within 5 T eps measured,
    # inside the suite's 8 T eps and a twelfth of the bar. Unit-normal and 3x entries never leave it (||C||_1 / T
    # about 1.4 and 4.2 at T = 16). Above 8 T the solve's result gets two Newton--Schulz steps E (3I - E^T E)/2
    # (kernel orthogonal_polish, claim cayley.polish: a defect D becomes -3/4 D^2 + 1/4 D^3), four batched
    # products; measured after them: at most 5 eps for even T at every entry scale up to 1e8, and for odd T up to
    # 1e4 in float32 and 1e8 in float64. The defect is then measured (one more product), and a sample above 8 T eps
    # takes the eigendecomposition i C = U diag(theta) U^H, Cayley(C) = Re(U diag((1 + i theta)/(1 - i theta))
    # U^H) (cayley.eigh_form), with the antisymmetrised theta and a Newton--Schulz step as exp_skew (Note [real
    # part at large norms]). That happens for odd T from entries of 1e6 in float32 (3.6e6 eps before the steps at
    # T = 5) and 1e15 in float64, and for skew samples whose I + C is singular in floating point (solve_each). The
    # polish moves E to its orthogonal polar factor, within 2 ||E - Cayley(C)|| of Cayley(C): the solve's forward
    # error, of the size u ||C|| that rounding C already costs (the derivative of Cayley is bounded by 2 for skew
    # C). Before, every skew sample above norm 16 took the complex eigendecomposition matrix by matrix: 3.1-6.1x the
    # naive solve at unit-normal entries, T = 8-32. The decisions are per sample (``big``, the measured defect),
    # so a sample's result never depends on the rest of the batch; inside torch.func transforms, torch.compile and
    # on the meta device the solve serves every sample. The backward needs only the output: every form shares it.
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
    # the kernel when no graph of it is asked for; double backward keeps the torch form. backend("eager"), or
    # GEOATTN_NATIVE=0 in the environment, turns the kernels off.
    generate_vmap_rule = True

    @staticmethod
    def forward(c, big=None, native=False):
        if c.shape[-1] <= SMALL_MAX and c.numel() and not _traced(c):
            return _cayley_small_native(c) if native else _cayley_small(c)
        if native and c.numel() and not _traced(c):
            return cayley_solve_native(c)
        return cayley_routed(c, big, gen.cayley_matrix)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.native = inputs[2] if len(inputs) > 2 else False
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad):
        (lam,) = ctx.saved_tensors
        if (not torch.is_grad_enabled() and ctx.native and lam.shape[-1] <= SMALL_MAX and grad.dtype == lam.dtype
                and not _traced(grad)):
            # no graph of the backward is asked for (double backward takes the torch form below), and the
            # incoming gradient is a plain tensor (not vmapped by is_grads_batched or jacobian(vectorize=True))
            T = lam.shape[-1]
            gc = _native.cayley_backward(lam.reshape(-1, T, T).contiguous(), grad.reshape(-1, T, T).contiguous())
            return gc.reshape(lam.shape), None, None
        if _constant(grad):
            return _cayley_vjp_constant(lam, grad), None, None
        # an expanded gradient that is not constant: batched products of expanded operands take
        # a slow path, so it is copied first
        return gen.cayley_vjp(lam, grad.contiguous()), None, None


# Note [constant incoming gradient]
# -------------------------------
# loss = out.sum() (or out.mean()) hands the backward one number expanded to the output's shape:
# every stride is zero. The Cayley VJP -1/2 P G P (P = I + Lam^T) with G = c 1 1^T is then the
# rank-one matrix -c/2 (P 1)(1^T P): two row/column sums and an outer product instead of two
# batched products (the same expression, associated differently: cayley.vjp).
def merge_samples(idx_a: torch.Tensor, a: torch.Tensor, idx_b: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The results ``a`` of the samples ``idx_a`` and ``b`` of ``idx_b`` (two index tensors that split the batch)
    back in the batch's order, along the first dimension (differentiable)."""
    return torch.cat([a, b])[torch.argsort(torch.cat([idx_a, idx_b]))]


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


def cayley_routed(c: torch.Tensor, big: torch.Tensor | None, solve, shift: float = 0.0,
                  polish: bool = True) -> torch.Tensor:
    """``solve(c)`` (a generated Cayley kernel, minus ``shift`` times I) on every sample; the samples in ``big``
    (skew, of norm above :func:`cayley_solve_bound`) then get two Newton--Schulz steps (``cayley.polish``) and their
    defect measured, and those still above ``8 T eps``, with the skew samples whose solve failed, take the
    eigendecomposition (Note [Cayley at large norms]). With ``polish=False`` (a closed form that would overflow on
    them) the samples in ``big`` take the eigendecomposition at once. Every decision is per sample."""
    if not polish:
        out, failed = solve_each(c if big is None else c.masked_fill(big[..., None, None], 0), solve)
    else:
        out, failed = solve_each(c, solve)
    redo = big if not polish else None
    if big is not None and polish:
        lam = out[big]
        if shift:
            lam.diagonal(dim1=-2, dim2=-1).add_(shift)
        lam = gen.orthogonal_polish(gen.orthogonal_polish(lam))
        bad = ~(orthogonality_defect(lam) <= polish_tolerance(lam))  # NaN: bad
        if shift:
            lam.diagonal(dim1=-2, dim2=-1).sub_(shift)
        out[big] = lam  # boolean-mask assignment: any memory layout of out
        redo = torch.zeros_like(big)
        redo[big] = bad
    if failed is not None:
        finite = torch.isfinite(c).flatten(-2).all(-1)
        stuck = failed & finite & (skew_defect(c) <= skew_tolerance(c))
        redo = stuck if redo is None else redo | stuck
    if redo is not None and bool(redo.any()):
        lam = _cayley_eigh(c[redo])
        if shift:
            lam.diagonal(dim1=-2, dim2=-1).sub_(shift)
        out[redo] = lam
    return out


def solve_each(c: torch.Tensor, solve, sign: int = 1) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``solve(c)`` (a generated kernel that solves with ``I + sign C``), and None; or, where some sample's matrix is
    singular in floating point (LAPACK then raises for the whole batch), the result with NaN in those samples and
    their mask. The other samples are solved as they would be alone."""
    try:
        return solve(c), None
    except torch.linalg.LinAlgError:
        eye = torch.eye(c.shape[-1], dtype=c.dtype, device=c.device)
        failed = torch.linalg.lu_factor_ex(eye + sign * c.detach()).info != 0
        out = solve(c.masked_fill(failed[..., None, None], 0))  # I is invertible; the sample is overwritten
        out[failed] = float("nan")
        return out, failed


def orthogonality_defect(q: torch.Tensor) -> torch.Tensor:
    """``max |Q^T Q - I|`` per matrix, shape ``q.shape[:-2]``."""
    r = q.mT @ q
    r.diagonal(dim1=-2, dim2=-1).sub_(1)
    return r.abs().flatten(-2).amax(-1)


def polish_tolerance(q: torch.Tensor) -> float:
    """``8 T eps``: the defect a polished sample must reach (the eigendecomposition serves it otherwise)."""
    return 8.0 * q.shape[-1] * torch.finfo(q.dtype).eps


def cayley_closed(c: torch.Tensor, kernel=gen.cayley_skew_small, shift: float = 0.0) -> torch.Tensor:
    """The closed form ``kernel`` (Cayley(C), or with ``shift=1`` Cayley(C) - I) of skew samples with T <= 3. Its
    C^2 and Tr(C^2) overflow for entries near sqrt(max float) / T (1e18 in float32): samples with an entry above
    sqrt(max float) / (2T) take the eigendecomposition of Note [Cayley at large norms], per sample (inside
    transforms every sample takes the form)."""
    bound = math.sqrt(torch.finfo(c.dtype).max) / (2 * c.shape[-1])
    if _traced(c) or not bool(c.detach().abs().amax() > bound):  # one reduction (a nan stays on the form)
        return kernel(c)
    return cayley_routed(c, c.detach().abs().flatten(-2).amax(-1) > bound, kernel, shift, polish=False)


def _cayley_small(c: torch.Tensor) -> torch.Tensor:
    """Cayley(C) for T <= 3: the closed form on the skew samples, the solve on the others (Note [Cayley of small
    skew matrices]); non-skew samples never take the eigendecomposition (_large_skew flags skew ones only)."""
    if all_skew_small(c):
        return cayley_closed(c)
    flat = c.reshape(-1, *c.shape[-2:])
    skew = skew_defect(flat) <= skew_tolerance(flat)
    out = torch.empty_like(flat)
    out[~skew] = solve_each(flat[~skew], gen.cayley_matrix)[0]
    if bool(skew.any()):
        out[skew] = cayley_closed(flat[skew])
    return out.reshape(c.shape)


def native_small_reason(t: torch.Tensor) -> str | None:
    """None when the native kernels of the T <= 3 Cayley transform serve ``t`` (Note [native Cayley kernels]), else
    why not (the native backend's own conditions, CPU and not traced, are the dispatch table's)."""
    T = t.shape[-1]
    if not 1 <= T <= _native.CAYLEY_MAX:
        return f"T={T}: the native Cayley kernels cover 1 <= T <= {_native.CAYLEY_MAX}"
    if t.dtype not in _NATIVE_REALS:
        return f"{t.dtype}: the native Cayley kernels take float32 or float64"
    if t.numel() == 0:
        return "an empty input"
    ok, why = _native.native_status(T, t.dtype)
    return None if ok else why


_NATIVE_REALS = (torch.float32, torch.float64)
#: the largest T whose Cayley transform has the closed form kernels.cayley_skew_small (Note [Cayley of small skew
#: matrices]); the native kernels cover the same sizes (_native.CAYLEY_MAX, a generated constant)
SMALL_MAX = _native.CAYLEY_MAX


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
        lam[~skew] = solve_each(flat[~skew], gen.cayley_matrix)[0]
        if bool((skew & big).any()):
            lam[skew & big] = _cayley_eigh(flat[skew & big])
    return lam.reshape(c.shape)


#: the defect a sample of the native Cayley solve may have, in units of T eps of its dtype (Note [native Cayley
#: solve] in geoattn.kernels._native_cayley_solve): the reliability bar of Note [Cayley at large norms]
NATIVE_SOLVE_DEFECT_PER_T = 64.0


def cayley_solve_native(c: torch.Tensor) -> torch.Tensor:
    """Cayley(C) for 4 <= T <= 32 by the native elimination without pivoting (Note [native Cayley solve] in
    :mod:`geoattn.kernels._native_cayley_solve`) on the samples that are skew, finite, of norm at most
    :func:`cayley_solve_bound` and of measured defect at most ``64 T eps``; every other sample takes
    :func:`cayley_routed` (the pivoted solve, the polish, the eigendecomposition), sample by sample."""
    T = c.shape[-1]
    flat = c.detach().reshape(-1, T, T).contiguous()
    q, defect, size, norm, orth = _native_cayley_solve.cayley_solve_forward(flat)
    keep = ((defect <= tolerance_at(T, c.dtype, size)) & (norm <= cayley_solve_bound(T))
            & (orth <= NATIVE_SOLVE_DEFECT_PER_T * T * torch.finfo(c.dtype).eps))  # NaN: not kept
    if not bool(keep.all()):
        rest = flat[~keep]
        q[~keep] = cayley_routed(rest, _large_skew(rest), gen.cayley_matrix)
    return q.reshape(c.shape)


def native_solve_reason(t: torch.Tensor) -> str | None:
    """None when the native Cayley solve serves ``t`` (4 <= T <= 32, float32 or float64, not empty, the library
    built), else why not (the native backend's own conditions are the dispatch table's)."""
    T = t.shape[-1]
    if t.dtype not in _NATIVE_REALS:
        return f"{t.dtype}: the native Cayley solve takes float32 or float64"
    if t.numel() == 0:
        return "an empty input"
    ok, why = _native_cayley_solve.solve_native_status(T, t.dtype)
    return None if ok else why


def all_skew_small(c: torch.Tensor) -> bool:
    """Whether every matrix of a batch of T <= 3 matrices is skew up to its own tolerance (Note [Cayley of
    small skew matrices]): a sufficient screen on the few independent entries first (the smallest tolerance
    bounds every sample's), then the per-sample check. False inside transforms and for empty batches."""
    T = c.shape[-1]
    if T > SMALL_MAX or c.numel() == 0 or _traced(c):
        return False
    up, lo = (i.to(c.device) for i in _PAIRS[T])
    flat = c.detach().reshape(-1, T * T)
    defect = (flat.index_select(1, up) + flat.index_select(1, lo)).abs()
    if float(defect.max()) <= 8.0 * T * torch.finfo(c.dtype).eps:  # skew_tolerance is at least this
        return True
    return bool((skew_defect(c) <= skew_tolerance(c)).all())


#: T -> (flat indices of the entries on and above the diagonal, of their mirror images)
_PAIRS = {T: tuple(torch.tensor([i * T + j if k == 0 else j * T + i for i in range(T) for j in range(i, T)])
                   for k in (0, 1)) for T in range(1, SMALL_MAX + 1)}


def _cayley_eigh(c: torch.Tensor) -> torch.Tensor:
    """Cayley(C) of skew C from its eigendecomposition, polished (Note [Cayley at large norms])."""
    theta, u = _eigh_skew(c)
    return _newton_schulz(gen.cayley_from_eigh(u, theta).to(c.dtype))


#: skew samples of norm above this times T are polished in cayley (Note [Cayley at large norms])
CAYLEY_SOLVE_NORM_PER_T = 8.0


def cayley_solve_bound(T: int) -> float:
    """The norm up to which the solve alone keeps a skew sample's Cayley transform within ``8 T eps`` of
    orthogonal (measured: within 5 T eps): ``CAYLEY_SOLVE_NORM_PER_T * T`` (read at call time; Note [Cayley at
    large norms])."""
    return CAYLEY_SOLVE_NORM_PER_T * T


def _traced(t: torch.Tensor) -> bool:
    """Inside a torch.func transform, under torch.compile or on the meta device: no data-dependent branches."""
    # is_compiling first: dynamo cannot trace the functorch query
    return torch.compiler.is_compiling() or t.is_meta or _wrapped(t)


def _large_skew(c: torch.Tensor, bound: float | None = None) -> torch.Tensor | None:
    """Per matrix: skew (up to the check's tolerance), finite and of norm above ``bound`` (default
    :func:`cayley_solve_bound` of the size); None if none is.

    Screened cheaply: every matrix has norm <= T max|c_ij|, and for skew matrices ||C||_1 = ||C||_inf,
    so the row-sum norm decides; the skew check runs only on a batch that has a large matrix.
    """
    bound = cayley_solve_bound(c.shape[-1]) if bound is None else bound
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


def _under_functorch(t: torch.Tensor) -> bool:
    """Whether ``t`` is a functorch wrapper, or a legacy batched tensor (the incoming gradient under
    ``is_grads_batched=True`` or ``jacobian(vectorize=True)``): no data to branch on, no storage to hand to C.
    Under ``torch.compile`` the same holds for every tensor, and dynamo cannot trace the functorch queries: True."""
    return torch.compiler.is_compiling() or _wrapped(t)


#: torch's queries for a functorch wrapper and a legacy batched tensor, looked up once (a call of the layer asks
#: them several times; each lookup cost about as much as the query)
_WRAPPER_QUERIES = tuple(q for q in (getattr(getattr(torch._C, "_functorch", None), name, None)
                                     for name in ("is_functorch_wrapped_tensor", "is_legacy_batchedtensor"))
                         if q is not None)


def _wrapped(t: torch.Tensor) -> bool:
    for query in _WRAPPER_QUERIES:
        if query(t):
            return True
    return False
