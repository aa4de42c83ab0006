r"""The Triton kernels: imported where ``triton`` is installed, launched on CUDA tensors (or on CPU tensors in
Triton's interpreter).

The modules ``_triton_<kernel>_d<d>.py`` are generated from the same verified bindings as the C kernels, one per
kernel and width (``geoattn codegen``; Note [Triton lanes] in :mod:`geoattn.codegen.tritonprinter`): the
closed-form Gram layer, ``GRAM_CLOSED_LAYER`` and
``GRAM_CLOSED_LAYER_VJP``, and the Cayley transform of ``T x T`` matrices with ``T <= 3`` and its VJP,
``CAYLEY_SKEW_SMALL`` and ``CAYLEY_VJP_BINDINGS``; and, printed as Triton only, the exponential of skew matrices
of size <= 4 (``EXP_SO4``, :mod:`geoattn.kernels._exp_triton`). The functions here take and return the same
arrays as those of :mod:`geoattn.kernels._native`, so the layer's autograd function and its per-sample decisions
(the residual check, the solved samples, the QR form of large inputs) are the same on both.

Note [Triton backend]
---------------------
The ``triton`` backend of :mod:`geoattn.kernels.dispatch` serves a call when ``triton`` imports and the call is
not traced, and either its tensors are on a CUDA device, or they are on the CPU, Triton's interpreter is
switched on (``TRITON_INTERPRET=1`` in the environment) and the backend is forced
(``with geoattn.kernels.backend("triton"):``): the interpreter runs the printed kernels with NumPy, so the tests
check them without a GPU, but it is far slower than the C kernels and never chosen by itself. Inputs are float32,
float16 or bfloat16 (the public functions compute half inputs in float32); every value is computed in float64
inside the kernel and rounded once when stored. Without ``triton`` the runtime imports as before and
:func:`triton_status` says why the backend does not serve.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import types

import torch

from . import _generated as gen

__all__ = ["triton_status", "interpreting", "kernels", "gram_forward", "gram_backward", "cayley_forward",
           "cayley_backward", "cayley_small", "written_kernels", "gram_lu_forward", "gram_lu_backward", "lu_shape", "next_pow2",
           "gram_exp_forward", "gram_exp_backward", "LU", "BLOCK", "FUNCTIONS", "TRITON_ONLY", "LU_DIMS",
           "EXP_DIMS", "REALS", "EXP_REALS"]

#: samples per program (Note [Triton lanes]); the interpreter's blocks are smaller so that a tail block shows
BLOCK = {"cuda": 128, "cpu": 16}
#: the printed kernels and the largest d of each: the native kernels' table, printed by ``geoattn codegen``
FUNCTIONS = dict(gen.NATIVE_FUNCTIONS)
#: the Triton-only kernels (no C form; ``TRITON_KERNELS`` of :mod:`geoattn.symbolic.native_table`) and the one width
#: each is printed at: the exponential of skew matrices padded to 4 x 4 (:mod:`geoattn.kernels._exp_triton`)
TRITON_ONLY = {"exp_skew_small_fwd": 4, "exp_skew_small_vjp": 4}
#: the widths of the Gram form's LU kernels, one module ``_triton_gram_lu.py`` for all (the route serves d >= 5)
LU_DIMS = range(1, 17)
#: the widths of the exponential Gram form's kernels, one module ``_triton_gram_exp.py`` for all
#: (geoattn.codegen.gram_exp_c.MIN_DIM .. MAX_DIM)
EXP_DIMS = range(3, 17)
#: the token types the kernels load (each is converted to float64 inside)
REALS = (torch.float32, torch.float16, torch.bfloat16)
#: the exponential kernels load float64 tokens too (direct calls; the route keeps float64 inputs on other forms)
EXP_REALS = REALS + (torch.float64,)
_loaded: dict = {}  # "triton" -> its import status; (path, interpreter flag) -> a module loaded from a file


def interpreting() -> bool:
    """Whether Triton's interpreter is switched on (``TRITON_INTERPRET=1``; read at each call)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def triton_status() -> tuple[bool, str]:
    """Whether ``triton`` can be imported here, and why not.

    Returns
    -------
    (bool, str)
        ``(True, "triton <version>")``, or ``(False, reason)``.

    Examples
    --------
    >>> ok, why = triton_status()
    >>> isinstance(ok, bool) and isinstance(why, str)
    True
    """
    if "triton" not in _loaded:
        try:
            import triton

            _loaded["triton"] = (True, f"triton {triton.__version__}")
        except ImportError as err:
            _loaded["triton"] = (False, f"triton is not installed ({err}; torch's CUDA builds include it)")
        except Exception as err:  # a broken install: the backend says why and the rest of geoattn works
            _loaded["triton"] = (False, f"triton does not import: {type(err).__name__}: {err}")
    return _loaded["triton"]


def kernels(name: str | None = None, d: int | None = None, *, path: str | None = None):
    """The generated module of the Triton kernel of native kernel ``name`` at width ``d``
    (``geoattn.kernels._triton_<name>_d<d>``), or the module at ``path`` (the tests' broken kernels), imported under
    the current interpreter setting (``triton.jit`` reads it when the module is imported)."""
    ok, why = triton_status()
    if not ok:
        raise RuntimeError(f"Expected triton to be importable. Got: {why}.")
    flag = interpreting()
    if path is None:
        if name in ("gram_lu", "gram_exp"):  # one module for every width: D is a constexpr of its kernels
            module = importlib.import_module(f"{__package__}._triton_{name}")
        else:
            if name in TRITON_ONLY:
                if d != TRITON_ONLY[name]:
                    raise ValueError(f"Expected d = {TRITON_ONLY[name]} for {name}. Got {d!r}.")
            elif name not in FUNCTIONS:
                raise ValueError(f"Expected a kernel name in {(*FUNCTIONS, *TRITON_ONLY, 'gram_lu')}. Got {name!r}.")
            elif d not in range(1, FUNCTIONS[name] + 1):
                raise ValueError(f"Expected d in 1..{FUNCTIONS[name]} for {name}. Got {d!r}.")
            module = importlib.import_module(f"{__package__}._triton_{name}_d{d}")
        # decorated again unless it was imported here under the same setting: a module imported elsewhere (a test
        # reading the generated file, a doctest) carries no record of the setting its kernels were decorated under
        if getattr(module, "_interpreted", None) != flag:
            module = importlib.reload(module)  # the same module object
        module._interpreted = flag
        return module
    key = (path, flag)
    if key not in _loaded:
        spec = importlib.util.spec_from_file_location(f"_geoattn_triton_{len(_loaded)}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[key] = module
    return _loaded[key]


def next_pow2(n: int) -> int:
    """The smallest power of two ``>= n`` (``n >= 1``): the padded sizes of the Triton kernels' blocks."""
    return 1 << (n - 1).bit_length()


def lu_shape(d: int, device_type: str) -> tuple[int, int]:
    """The padded width and the samples per program of the LU kernels at width ``d``.

    Parameters
    ----------
    d : int
        the width, ``1 <= d <= 16``.
    device_type : str
        ``"cuda"``, or another device type (Triton's interpreter).

    Returns
    -------
    (int, int)
        ``(DP, BLOCK)``: the next power of two at least ``max(d, 2)``, and on CUDA ``2048 // DP**2`` samples (at
        least 8) so that one program's ``(BLOCK, DP, DP)`` float64 blocks stay near 2,048 entries (a choice that no
        GPU timing in the benchmark results has tuned yet); elsewhere ``BLOCK["cpu"]``.
    """
    dp = max(2, next_pow2(d))
    return dp, (max(8, 2048 // (dp * dp)) if device_type == "cuda" else BLOCK["cpu"])


def _launch(module, name: str, d: int, B: int, T: int, arrays: list, device: torch.device) -> None:
    block = BLOCK["cuda" if device.type == "cuda" else "cpu"]
    if name.startswith(("vp_gram_lu", "vp_gram_exp")):  # one kernel for every width
        fn, (dp, block) = getattr(module, name), lu_shape(d, device.type)
        extra = dict(D=d, DP=dp, BLOCK=block)
    else:
        fn, extra = getattr(module, f"{name}_d{d}"), dict(BLOCK=block)
    grid = ((B + block - 1) // block,)
    if device.type == "cuda":
        with torch.cuda.device(device):
            fn[grid](B, T, *arrays, **extra)
    else:
        fn[grid](B, T, *arrays, **extra)


def _check_tokens(name: str, x: torch.Tensor, widths=None, reals=REALS) -> None:
    widths = widths or range(1, FUNCTIONS["vp_gram_fwd"] + 1)
    if x.dim() != 3 or not x.is_contiguous() or x.dtype not in reals or x.shape[-1] not in widths:
        kinds = ", ".join(str(r).replace("torch.", "") for r in reals[:-1]) + " or " + str(reals[-1])[6:]
        raise ValueError(f"Expected {name} as a contiguous tensor (B, T, d) with d in {widths[0]}..{widths[-1]} of "
                         f"{kinds}. Got {x.dtype} {tuple(x.shape)} "
                         f"({'' if x.is_contiguous() else 'not '}contiguous).")


def _check_A(A: torch.Tensor, x: torch.Tensor) -> None:
    d = x.shape[-1]
    if A.dtype != torch.float64 or A.shape != (d, d) or not A.is_contiguous() or A.device != x.device:
        raise ValueError(f"Expected A as a contiguous float64 ({d}, {d}) tensor on {x.device}. Got {A.dtype} "
                         f"{tuple(A.shape)} on {A.device}.")


def _check_grad(x: torch.Tensor, gy: torch.Tensor, N: torch.Tensor) -> None:
    B, T, d = x.shape
    if gy.shape != x.shape or gy.dtype != x.dtype or not gy.is_contiguous() or gy.device != x.device:
        raise ValueError(f"Expected gy contiguous, of x's shape {tuple(x.shape)}, dtype {x.dtype} and device "
                         f"{x.device}. Got {gy.dtype} {tuple(gy.shape)} on {gy.device}.")
    if N.shape != (B, d, d) or N.dtype != torch.float64 or not N.is_contiguous() or N.device != x.device:
        raise ValueError(f"Expected N contiguous, float64, of shape {(B, d, d)} on {x.device}. Got {N.dtype} "
                         f"{tuple(N.shape)} on {N.device}.")


def gram_forward(x: torch.Tensor, A: torch.Tensor, module=None):
    """``(y, Gram, N, rmax)`` of the closed-form Gram layer, as :func:`geoattn.kernels._native.gram_forward`
    returns them, for ``x`` of shape ``(B, T, d)`` (contiguous, float32, float16 or bfloat16) and skew ``A``
    (float64 ``(d, d)`` on ``x``'s device; the kernel reads its strict lower triangle). ``module`` (default: the
    generated one, :func:`kernels`) is for the tests' broken kernels."""
    _check_tokens("x", x)
    _check_A(A, x)
    B, T, d = x.shape
    y = torch.empty_like(x)
    f64 = dict(dtype=torch.float64, device=x.device)
    G, N, R = torch.empty(B, d, d, **f64), torch.empty(B, d, d, **f64), torch.empty(B, **f64)
    if B:
        _launch(module or kernels("vp_gram_fwd", d), "vp_gram_fwd", d, B, T, [x, A, y, G, N, R], x.device)
    return y, G, N, R


def gram_backward(x: torch.Tensor, gy: torch.Tensor, N: torch.Tensor, A: torch.Tensor, module=None):
    """``(gx, gA)`` of the closed-form Gram layer, as :func:`geoattn.kernels._native.gram_backward` returns them:
    the gradient in ``x`` (``x``'s dtype) and the per-sample ``Gram M_bar`` (float64 ``(B, d, d)``), from the
    incoming gradient ``gy`` and the forward's ``N`` (the Gram matrix is recomputed in the pass over the
    tokens)."""
    _check_tokens("x", x)
    _check_A(A, x)
    B, T, d = x.shape
    _check_grad(x, gy, N)
    gx = torch.empty_like(x)
    gA = torch.empty(B, d, d, dtype=torch.float64, device=x.device)
    if B:
        _launch(module or kernels("vp_gram_bwd", d), "vp_gram_bwd", d, B, T, [x, gy, N, A, gx, gA], x.device)
    return gx, gA


def gram_lu_forward(x: torch.Tensor, A: torch.Tensor, module=None):
    """``(y, Gram, N, rmax)`` of the Gram form for ``d`` in :data:`LU_DIMS` by the printed LU kernels (Note
    [Triton LU blocks] in :mod:`geoattn.codegen.gram_lu_triton`), as :func:`geoattn.kernels._native_lu.gram_forward`
    returns them: ``x`` ``(B, T, d)`` contiguous float32, float16 or bfloat16, ``A`` skew float64 ``(d, d)`` on
    ``x``'s device (both triangles read). ``module`` (default: the generated one) is for the tests' broken
    kernels."""
    _check_tokens("x", x, LU_DIMS)
    _check_A(A, x)
    B, T, d = x.shape
    y = torch.empty_like(x)
    f64 = dict(dtype=torch.float64, device=x.device)
    G, N, R = torch.empty(B, d, d, **f64), torch.empty(B, d, d, **f64), torch.empty(B, **f64)
    if B:
        _launch(module or kernels("gram_lu", d), "vp_gram_lu_fwd", d, B, T, [x, A, y, G, N, R], x.device)
    return y, G, N, R


def gram_lu_backward(x: torch.Tensor, gy: torch.Tensor, N: torch.Tensor, A: torch.Tensor, module=None):
    """``(gx, gA)`` of the Gram form for ``d`` in :data:`LU_DIMS`, as
    :func:`geoattn.kernels._native_lu.gram_backward` returns them (``vp.gram_lu_vjp``), from the forward's ``N``."""
    _check_tokens("x", x, LU_DIMS)
    _check_A(A, x)
    B, T, d = x.shape
    _check_grad(x, gy, N)
    gx = torch.empty_like(x)
    gA = torch.empty(B, d, d, dtype=torch.float64, device=x.device)
    if B:
        _launch(module or kernels("gram_lu", d), "vp_gram_lu_bwd", d, B, T, [x, gy, N, A, gx, gA], x.device)
    return gx, gA


#: the LU kernels under the names the layer's autograd function calls (geoattn.kernels._gram.vp_gram_closed)
LU = types.SimpleNamespace(gram_forward=gram_lu_forward, gram_backward=gram_lu_backward)


def gram_exp_forward(x: torch.Tensor, A: torch.Tensor, module=None, *, max_scale: float):
    r"""``(y, Gram, E, R)`` of the exponential layer's Gram form for ``d`` in :data:`EXP_DIMS` by the printed
    kernels (Note [Triton exponential blocks] in :mod:`geoattn.codegen.gram_exp_triton`), as
    :func:`geoattn.kernels._native_exp.gram_exp_forward` returns them.

    Parameters
    ----------
    x : Tensor ``(B, T, d)``
        contiguous float32, float16 or bfloat16 (the route's), or float64 (direct calls: the tests' gradcheck).
    A : Tensor ``(d, d)``
        skew, float64, on ``x``'s device (both triangles read).
    module : module, optional
        a module to launch instead of the generated one (the tests' broken kernels).
    max_scale : float
        the largest :math:`\mathrm{Tr}\,\mathrm{Gram}\,\|A\|_F` a sample may have (the layer's
        ``GRAM_MAX_SCALE``, passed in: this module imports nothing of the layer).

    Returns
    -------
    tuple of Tensor
        ``y = x E`` of ``x``'s dtype; the float64 ``Gram`` and :math:`E = \exp(-A\,\mathrm{Gram})` ``(B, d, d)``;
        ``R`` ``(B,)``: :math:`\max|E^T\mathrm{Gram}\,E - \mathrm{Gram}| / \mathrm{Tr}\,\mathrm{Gram}`, NaN for
        a sample of non-finite or too large scale.
    """
    _check_tokens("x", x, EXP_DIMS, EXP_REALS)
    _check_A(A, x)
    B, T, d = x.shape
    y = torch.empty_like(x)
    f64 = dict(dtype=torch.float64, device=x.device)
    G, E, R = torch.empty(B, d, d, **f64), torch.empty(B, d, d, **f64), torch.empty(B, **f64)
    K = torch.tensor([float(A.norm()), float(max_scale)], **f64)
    if B:
        _launch(module or kernels("gram_exp", d), "vp_gram_exp_fwd", d, B, T, [x, A, K, y, G, E, R], x.device)
    return y, G, E, R


def gram_exp_backward(x: torch.Tensor, gy: torch.Tensor, A: torch.Tensor, module=None):
    r"""``(gx, gA)`` of the exponential layer's Gram form for ``d`` in :data:`EXP_DIMS`, as
    :func:`geoattn.kernels._native_exp.gram_exp_backward` returns them: the kernel recomputes ``E`` and runs the
    reverse mode of its scaling and squaring (``vp.gram_exp_native_reverse``).

    Parameters
    ----------
    x, gy : Tensor ``(B, T, d)``
        contiguous, of one dtype (float32, float16, bfloat16 or float64) and device.
    A : Tensor ``(d, d)``, float64
    module : module, optional

    Returns
    -------
    tuple of Tensor
        the gradient in ``x`` (``x``'s dtype) and the per-sample :math:`-\bar M\,\mathrm{Gram}` (float64
        ``(B, d, d)``; the gradient in ``A`` is the skew part of its sum over the batch).
    """
    _check_tokens("x", x, EXP_DIMS, EXP_REALS)
    _check_A(A, x)
    B, T, d = x.shape
    if gy.shape != x.shape or gy.dtype != x.dtype or not gy.is_contiguous() or gy.device != x.device:
        raise ValueError(f"Expected gy contiguous, of x's shape {tuple(x.shape)}, dtype {x.dtype} and device "
                         f"{x.device}. Got {gy.dtype} {tuple(gy.shape)} on {gy.device}.")
    gx = torch.empty_like(x)
    gA = torch.empty(B, d, d, dtype=torch.float64, device=x.device)
    if B:
        _launch(module or kernels("gram_exp", d), "vp_gram_exp_bwd", d, B, T, [x, gy, A, gx, gA], x.device)
    return gx, gA


def _check_small(name: str, t: torch.Tensor) -> None:
    top = FUNCTIONS["cayley_small_fwd"]
    if (t.dim() != 3 or not t.is_contiguous() or t.dtype not in REALS or t.shape[-1] != t.shape[-2]
            or not 1 <= t.shape[-1] <= top):
        raise ValueError(f"Expected {name} as a contiguous tensor (B, T, T) with T <= {top} of float32, float16 or "
                         f"bfloat16. Got {t.dtype} {tuple(t.shape)}.")


def cayley_forward(c: torch.Tensor, module=None):
    """``(Lam, skew, size)`` for ``c`` of shape ``(B, T, T)``, ``T <= 3``, as
    :func:`geoattn.kernels._native.cayley_forward` returns them: the closed form (Cayley(C) for skew ``C`` only) in
    ``c``'s dtype, and per sample the float64 ``max |C + C^T|`` and ``max |C|``."""
    _check_small("C", c)
    B, T, _ = c.shape
    lam = torch.empty_like(c)
    skew, size = (torch.empty(B, dtype=torch.float64, device=c.device) for _ in range(2))
    if B:
        _launch(module or kernels("cayley_small_fwd", T), "cayley_small_fwd", T, B, T, [c, lam, skew, size], c.device)
    return lam, skew, size


def cayley_backward(lam: torch.Tensor, g: torch.Tensor, module=None) -> torch.Tensor:
    """The Cayley transform's vector-Jacobian product ``-1/2 (I + Lam^T) G (I + Lam^T)`` (``cayley.vjp``) for the
    output ``lam`` and the incoming gradient ``g``, both ``(B, T, T)`` with ``T <= 3``, contiguous, of one dtype
    and device; computed in float64, rounded once."""
    _check_small("Lam", lam)
    if g.shape != lam.shape or g.dtype != lam.dtype or not g.is_contiguous() or g.device != lam.device:
        raise ValueError(f"Expected G contiguous, of Lam's shape {tuple(lam.shape)}, dtype {lam.dtype} and device "
                         f"{lam.device}. Got {g.dtype} {tuple(g.shape)} on {g.device}.")
    B, T, _ = lam.shape
    gc = torch.empty_like(lam)
    if B:
        _launch(module or kernels("cayley_vjp", T), "cayley_vjp", T, B, T, [lam, g, gc], lam.device)
    return gc


class _CayleySmall(torch.autograd.Function):
    # Cayley(C) for T <= 3 by the printed kernels (Note [Cayley of small skew matrices] and Note [native Cayley
    # kernels] in geoattn.kernels._functions: the same per-sample decisions): the closed form on the samples that
    # are skew up to skew_tolerance, the solve on the others. Float64 holds Tr(C^2) of every float32 or half
    # input, so no sample needs the eigendecomposition. The backward is the VJP kernel from the output when no
    # graph of it is asked for, the torch form otherwise (double backward).
    @staticmethod
    def forward(ctx, c):
        from . import _generated as gen
        from ._checks import tolerance_at

        T = c.shape[-1]
        flat = c.detach().reshape(-1, T, T).contiguous()
        lam, defect, size = cayley_forward(flat)
        skew = defect <= tolerance_at(T, c.dtype, size)  # NaN: not skew
        if not bool(skew.all()):
            lam[~skew] = gen.cayley_matrix(flat[~skew])
        ctx.save_for_backward(lam)
        return lam.reshape(c.shape)

    @staticmethod
    def backward(ctx, grad):
        from . import _generated as gen
        from ._functions import _under_functorch

        (lam,) = ctx.saved_tensors
        if not torch.is_grad_enabled() and grad.dtype == lam.dtype and not _under_functorch(grad):
            T = lam.shape[-1]
            return cayley_backward(lam, grad.reshape(-1, T, T).contiguous()).reshape(grad.shape)
        return gen.cayley_vjp(lam.reshape(grad.shape), grad.contiguous())


def cayley_small(c: torch.Tensor) -> torch.Tensor:
    """The Cayley transform of ``(..., T, T)`` matrices with ``T <= 3`` (float32, float16 or bfloat16) by the
    printed kernels, forward and backward (:class:`_CayleySmall`)."""
    return _CayleySmall.apply(c)


def written_kernels(name: str):
    """The hand-written Triton module ``geoattn.kernels.<name>`` (such as ``_triton_symattn``), imported, or decorated
    again, under the current interpreter setting as :func:`kernels` does for the generated ones."""
    ok, why = triton_status()
    if not ok:
        raise RuntimeError(f"Expected triton to be importable. Got: {why}.")
    flag = interpreting()
    module = importlib.import_module(f"{__package__}.{name}")
    if getattr(module, "_interpreted", None) != flag:
        module = importlib.reload(module)
    module._interpreted = flag
    return module
