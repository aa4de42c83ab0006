r"""The native CPU kernels: compiled at first use, called through :mod:`ctypes`.

``_native_gram.c`` is generated from the verified bindings of the closed-form Gram layer, ``GRAM_CLOSED_LAYER`` and
``GRAM_CLOSED_LAYER_VJP`` (``geoattn codegen``; Note [the closed-form Gram layer] in
:mod:`geoattn.symbolic.expressions`), and of the Cayley transform of ``T x T`` matrices with ``T <= 3`` and its VJP,
``CAYLEY_SKEW_SMALL`` and ``CAYLEY_VJP_BINDINGS`` (Note [native Cayley kernels] in :mod:`geoattn.kernels._functions`;
their library is that of ``d = T``). It is plain C99
with no Python or torch headers: one library per ``d`` and real type is built from it with the system's C
compiler (about a second each) into a cache directory and reused by later processes.

Note [native kernels]
---------------------
On one CPU thread the eager structure-of-arrays form of the closed-form layer (:mod:`geoattn.kernels._gram`) is
bound by its memory passes: about forty elementwise torch calls over ``(T, d, B)`` and ``(d, d, B)`` arrays
and four transposing copies. The native kernels make one pass over the tokens for the Gram matrix and one for
the output, and hold every ``d x d`` value per block of one vector register of samples (eight with AVX-512, four with AVX2; in registers or small arrays on the
stack), never in a pass over the batch. Measured at ``B = 4096, T = 16, d = 4`` on one thread, the kernels
take about 0.3 ms forward and 0.5 ms backward, and the whole layer forward+backward, with torch's and autograd's
own overhead, 1.2 to 1.4 ms against 5.1 to 5.2 ms for the eager form in the same session. They are used when
all of these hold (otherwise the eager form serves, and :func:`native_status` says why):

* the input is on the CPU and of float32 or half type (half is converted to float32); the layer sends no
  float64 input to the closed form, which the tests call directly with float64 for gradcheck (the Cayley kernels
  take float32 and float64 inputs: Note [native Cayley kernels] in :mod:`geoattn.kernels._functions`);
* a C compiler is found (``$CC``, else ``cc``, ``gcc`` or ``clang`` on the ``PATH``) and the library built;
* the environment does not set ``GEOATTN_NATIVE=0``.

Whether a library can be built is decided once per process, at its first use. The compiler flags are
``-O3 -std=c99 -fPIC -shared``, with ``-march=native`` when it is accepted; never ``-ffast-math`` (the
residual check must see a NaN). The cache directory is ``$GEOATTN_CACHE`` or ``~/.cache/geoattn``. A library's
name carries a hash of the source bytes (the compiler reads a private copy of exactly those bytes), the
compiler, the flags and the CPU's model and flags, so a stale library or one built for another CPU is never
loaded. With more than one torch thread the batch is split into contiguous parts run on that many threads
(ctypes releases the GIL); every sample goes through the same operations whatever the split (Note [lanes] in
:mod:`geoattn.codegen.cprinter`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

import torch

from . import _generated as gen

__all__ = ["native_status", "gram_forward", "gram_backward", "cayley_forward", "cayley_backward", "build", "SOURCE",
           "vector_bytes"]

#: the generated C source
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native_gram.c")
#: the C functions (without ``geoattn_`` and the ``_d<d>_<real>`` suffix) and the largest d each is printed for:
#: a table printed by ``geoattn codegen`` from :data:`geoattn.symbolic.kernel_table.NATIVE_KERNELS`
FUNCTIONS = dict(gen.NATIVE_FUNCTIONS)
#: the largest d the Gram layer's kernels cover: that of the closed form (vp.gram_closed_form; _gram.CLOSED_MAX_DIM)
MAX_DIM = max(FUNCTIONS["vp_gram_fwd"], FUNCTIONS["vp_gram_bwd"])
#: the largest T of the Cayley kernels (Note [Cayley of small skew matrices] in geoattn.kernels._functions)
CAYLEY_MAX = min(FUNCTIONS["cayley_small_fwd"], FUNCTIONS["cayley_vjp"])
_REALS = {torch.float32: ("f32", ctypes.c_float), torch.float64: ("f64", ctypes.c_double)}
_lock = threading.Lock()
_libraries: dict = {}  # (d, real) -> CDLL, or the reason it could not be built
#: fewest samples per thread when the batch is split
_MIN_PER_THREAD = 512
#: seconds a compilation may take
_COMPILE_TIMEOUT = 300


def _compiler() -> list[str] | None:
    """The compiler's command: ``$CC`` split as a shell would (``"ccache gcc"``), else the first of ``cc``,
    ``gcc``, ``clang`` on the ``PATH``."""
    cc = shlex.split(os.environ.get("CC", ""))
    if cc and (shutil.which(cc[0]) or os.path.isfile(cc[0])):
        return cc
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return [path]
    return None


def _cpu_id() -> str:
    """What ``-march=native`` depends on: the CPU's model and instruction-set flags (a cache shared by machines
    with different CPUs never hands one the other's library)."""
    try:
        with open("/proc/cpuinfo") as fh:
            lines = [ln for ln in fh if ln.startswith(("model name", "flags", "Features", "CPU part"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return platform.machine() + platform.processor()


_vector_bytes: dict = {}


def vector_bytes() -> int | None:
    """The bytes of one vector register the native kernels are compiled for: what ``GEOATTN_VBYTES`` is in a
    library built here (64 with AVX-512, 32 with AVX, 16 otherwise: Note [vector width] in
    :mod:`geoattn.codegen.cprinter`), read from the compiler's predefined macros under ``-march=native``; None
    without a compiler. The benchmarks record it with their figures.

    Examples
    --------
    >>> vector_bytes() in (None, 16, 32, 64)
    True
    """
    cc = _compiler()
    if cc is None:
        return None
    key = tuple(cc)
    if key not in _vector_bytes:
        macros = ""
        for flags in (["-march=native"], []):
            try:
                proc = subprocess.run([*cc, *flags, "-dM", "-E", "-x", "c", os.devnull], capture_output=True,
                                      text=True, errors="replace", timeout=60)
            except (OSError, subprocess.SubprocessError):
                continue
            if proc.returncode == 0:
                macros = proc.stdout
                break
        names = {ln.split()[1] for ln in macros.splitlines() if ln.startswith("#define ")}
        _vector_bytes[key] = 64 if "__AVX512F__" in names else 32 if "__AVX__" in names else 16
    return _vector_bytes[key]


def _cache_dir() -> str:
    return os.environ.get("GEOATTN_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "geoattn")


def enabled() -> bool:
    """Whether the native kernels may serve at all: ``GEOATTN_NATIVE`` is not ``0`` (read at each call)."""
    return os.environ.get("GEOATTN_NATIVE", "1") != "0"


def load(libraries: dict, lock, key: tuple, make):
    """The library ``libraries[key]``, made by ``make(*key)`` at its first use under ``lock``: a library, or the
    reason it could not be built. ``GEOATTN_NATIVE=0`` is answered without building and is never remembered, so
    unsetting it later lets the kernels serve. The loaders of the generated C files share it."""
    if not enabled():
        return "GEOATTN_NATIVE=0 in the environment"
    with lock:
        if key not in libraries:
            libraries[key] = make(*key)
        return libraries[key]


def build(d: int, real: str, source: str = SOURCE, cache_dir: str | None = None) -> ctypes.CDLL | str:
    """Compile (or find in the cache) and load the library of one ``d`` and real type (``"f32"``, ``"f64"``) from
    the C file ``source``; a string says why it could not be built. The tests build broken kernels with it."""
    if not enabled():
        return "GEOATTN_NATIVE=0 in the environment"
    cc = _compiler()
    if cc is None:
        return "no C compiler found ($CC, cc, gcc or clang)"
    try:
        with open(source, "rb") as fh:
            text = fh.read()
    except OSError as err:
        return f"cannot read {source}: {err}"
    cache = cache_dir or _cache_dir()
    try:
        return _compile(cc, text, cache, d, real)
    except (OSError, subprocess.SubprocessError) as err:  # an unwritable cache, a compiler that hangs or fails
        return f"cannot build the native kernels: {err}"


def _compile(cc: list[str], text: bytes, cache: str, d: int, real: str) -> ctypes.CDLL | str:
    # the compiler reads a private copy of the bytes hashed into the library's name, so a source rewritten in
    # the meantime can never be cached under the old hash
    version = subprocess.run([*cc, "--version"], capture_output=True, text=True, errors="replace",
                             timeout=60).stdout.splitlines()[:1]
    base = ["-O3", "-std=c99", "-fPIC", "-shared", f"-DGEOATTN_D={d}", f"-DGEOATTN_{real.upper()}"]
    errors = []
    for flags in (base + ["-march=native"], base):
        key = hashlib.sha256(text + repr((cc, version, flags, _cpu_id())).encode()).hexdigest()[:16]
        path = os.path.join(cache, f"native_gram_d{d}_{real}_{key}.so")
        if not os.path.exists(path):
            error = _compile_to(cc, flags, text, cache, path)
            if error:
                errors.append(f"{' '.join(flags)}: {error}")
                continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as err:
            errors.append(f"loading {path}: {err}")
            continue
        for name, top in FUNCTIONS.items():
            fn = getattr(lib, f"geoattn_{name}_d{d}_{real}", None) if d <= top else None
            if fn is not None:  # a test's library may hold only some of them
                fn.restype = None
        return lib
    return "the C compiler failed: " + " | ".join(errors)


def _compile_to(cc: list[str], flags: list[str], text: bytes, cache: str, path: str) -> str:
    """Compile ``text`` into the library ``path`` (atomically: a concurrent process sees no library or the whole
    one); returns the compiler's error, or ``""``."""
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        src, out = os.path.join(tmp, "native_gram.c"), os.path.join(tmp, "native_gram.so")
        with open(src, "wb") as fh:
            fh.write(text)
        proc = subprocess.run([*cc, *flags, "-o", out, src, "-lm"], capture_output=True, text=True,
                              errors="replace", timeout=_COMPILE_TIMEOUT)
        if proc.returncode != 0 or not os.path.exists(out):
            return proc.stderr.strip()[:300] or f"exit status {proc.returncode}"
        os.chmod(out, 0o755)  # readable by the other users of a shared cache
        os.replace(out, path)
    return ""


def bind(lib: ctypes.CDLL | str, d: int | None, real: str, source: str, restypes: dict) -> ctypes.CDLL | str:
    """``lib`` (a library of :func:`build`, or why it could not be built) with the return type of each function
    ``geoattn_<name>_d<d>_<real>`` (``geoattn_<name>_<real>`` when ``d`` is None) of ``restypes`` (name -> ctypes
    type or None) set; a string when one is missing. The loaders of the other generated C files
    (:mod:`geoattn.kernels._native_lu`, :mod:`geoattn.kernels._native_exp`,
    :mod:`geoattn.kernels._native_cayley_solve`) share it."""
    if isinstance(lib, str):
        return lib
    for name, restype in restypes.items():
        symbol = f"geoattn_{name}_{real}" if d is None else f"geoattn_{name}_d{d}_{real}"
        fn = getattr(lib, symbol, None)
        if fn is None:
            return f"{source} has no {symbol}"
        fn.restype = restype
    return lib


def _library(d: int, dtype: torch.dtype) -> ctypes.CDLL | str:
    if not 1 <= d <= MAX_DIM:
        return f"d={d}: the native kernels cover d <= {MAX_DIM}"
    if dtype not in _REALS:
        return f"{dtype}: the native kernels take float32 or float64 tokens"
    key = (d, _REALS[dtype][0])
    return load(_libraries, _lock, key, build)


def native_status(d: int | None = None, dtype: torch.dtype | None = None):
    """Whether the native CPU kernels of size ``d`` can run here, and why not; with no arguments, every kernel.

    The Cayley layer (:func:`geoattn.kernels.vp_attention`, :class:`geoattn.nn.VolumePreservingAttention`) takes
    the closed-form Gram layer's kernels for CPU inputs with ``d <= 4`` when this returns ``True``; otherwise it
    computes the same closed form with torch operations. :func:`geoattn.kernels.cayley` takes the Cayley kernels
    of size ``d = T <= 3`` for float32 and float64 CPU inputs likewise. The first call for a ``d`` and ``dtype``
    compiles that library (about a second) or finds it in the cache (Note [native kernels]).

    Parameters
    ----------
    d : int, optional
        the feature size (1 to 4), or the size ``T`` of the Cayley transform's matrices (1 to 3).
    dtype : torch.dtype, optional
        ``torch.float32`` (the layer's float32 and half inputs; the default when ``d`` is given) or
        ``torch.float64`` (the Cayley transform's float64 inputs, and direct calls).

    Returns
    -------
    (bool, str)
        whether the kernels are available, and the reason when they are not (no C compiler, ``GEOATTN_NATIVE=0``,
        the compiler's error, a ``d`` or dtype they do not cover).
    dict
        with no arguments: ``{(kernel, d, dtype): (bool, str)}`` for every C function of :data:`FUNCTIONS`, every
        ``d`` it is printed for and both real types (building each library once).

    Examples
    --------
    >>> native_status(5)
    (False, 'd=5: the native kernels cover d <= 4')
    >>> native_status(4, torch.float16)[1]
    'torch.float16: the native kernels take float32 or float64 tokens'
    >>> sorted({name for name, _, _ in native_status()})
    ['cayley_small_fwd', 'cayley_vjp', 'vp_gram_bwd', 'vp_gram_fwd']
    """
    if d is None and dtype is None:
        report = {}
        for name, top in FUNCTIONS.items():
            for k in range(1, top + 1):
                for real in _REALS:
                    report[(name, k, real)] = native_status(k, real)
        return report
    d = MAX_DIM if d is None else d
    dtype = torch.float32 if dtype is None else dtype
    lib = _library(d, dtype)
    return (True, "native kernels built") if not isinstance(lib, str) else (False, lib)


def _ptr(t: torch.Tensor | None) -> ctypes.c_void_p:
    return ctypes.c_void_p(None if t is None else t.data_ptr())


def _threads() -> int:
    """The threads a kernel call may split its batch over: torch's thread count (the tests replace this function
    to compare splits: changing torch's own count in a running process derails MKL's threaded LU of large matrices
    in torch 2.13, which then reports "Parameter 6 was incorrect on entry to DLASWP" and spins)."""
    return torch.get_num_threads()


def _run(fn, B: int, T: int, args: list) -> None:
    """Call ``fn(B, T, *args)`` on the whole batch, or on contiguous parts of it on torch's thread count. ``args``
    are the C function's arrays in order, each ``(tensor, batched)``: a batched tensor has the batch as its
    first dimension and is split, a shared one is passed whole; ``(None, ...)`` passes NULL."""
    parts = max(1, min(_threads(), B // _MIN_PER_THREAD))
    if parts == 1:
        fn(ctypes.c_int64(B), ctypes.c_int64(T), *(_ptr(t) for t, _ in args))
        return
    bounds = [B * k // parts for k in range(parts + 1)]

    def call(k):
        lo, hi = bounds[k], bounds[k + 1]
        fn(ctypes.c_int64(hi - lo), ctypes.c_int64(T),
           *(_ptr(t[lo:hi] if batched and t is not None else t) for t, batched in args))

    with ThreadPoolExecutor(parts) as pool:
        list(pool.map(call, range(parts)))


def run_checked(fn, B: int, T: int, args: list, what: str = "its buffers") -> None:
    """:func:`_run` of a kernel that returns 1 when it could not allocate ``what`` (and 0 otherwise): a failed
    allocation raises ``MemoryError`` instead of leaving its outputs unwritten."""
    failed = []

    def call(*a):
        if fn(*a):
            failed.append(True)

    _run(call, B, T, args)
    if failed:
        raise MemoryError(f"Expected the native kernel to allocate {what}. Got a failed allocation.")


def _check_backward(x: torch.Tensor, A: torch.Tensor, gy: torch.Tensor, N: torch.Tensor) -> None:
    """The arguments of a Gram backward kernel: :func:`_check` of ``x`` and ``A``, ``gy`` like ``x``, ``N`` the
    forward's float64 ``(B, d, d)`` factors."""
    _check(x, A)
    B, _, d = x.shape
    if gy.shape != x.shape or gy.dtype != x.dtype or not gy.is_contiguous():
        raise ValueError(f"Expected gy contiguous, of x's shape {tuple(x.shape)} and dtype {x.dtype}. Got "
                         f"{gy.dtype} {tuple(gy.shape)}.")
    if N.shape != (B, d, d) or N.dtype != torch.float64 or not N.is_contiguous():
        raise ValueError(f"Expected N contiguous, float64, of shape {(B, d, d)}. Got {N.dtype} {tuple(N.shape)}.")


def _check(x: torch.Tensor, A: torch.Tensor) -> None:
    if x.device.type != "cpu" or x.dim() != 3 or not x.is_contiguous() or x.dtype not in _REALS:
        raise ValueError(f"Expected a contiguous CPU tensor (B, T, d) of float32 or float64. Got {x.dtype} "
                         f"{tuple(x.shape)} on {x.device}.")
    d = x.shape[-1]
    if A.dtype != torch.float64 or A.shape != (d, d) or not A.is_contiguous():
        raise ValueError(f"Expected A as a contiguous float64 ({d}, {d}) tensor. Got {A.dtype} {tuple(A.shape)}.")


def gram_forward(x: torch.Tensor, A: torch.Tensor, library: ctypes.CDLL | None = None):
    """``(y, Gram, N, rmax)`` of the closed-form Gram layer for ``x`` of shape ``(B, T, d)`` (contiguous, float32 or
    float64, CPU) and skew ``A`` (float64 ``(d, d)``; the kernel reads its strict lower triangle): ``y`` of ``x``'s
    dtype, the float64 ``Gram = x^T x`` and ``N = (I + Gram A)^{-T}`` of shape ``(B, d, d)``, and ``rmax`` ``(B,)``,
    the largest entry of :math:`|(I + GA)^TN - I|` (NaN when one is). ``library`` (default: the one built from
    :data:`SOURCE`) is for the tests' broken kernels."""
    _check(x, A)
    B, T, d = x.shape
    lib = library if library is not None else _library(d, x.dtype)
    if isinstance(lib, str):
        raise RuntimeError(f"Expected the native kernels to be available. Got: {lib}.")
    y = torch.empty_like(x)
    f64 = dict(dtype=torch.float64, device=x.device)
    G, N, R = torch.empty(B, d, d, **f64), torch.empty(B, d, d, **f64), torch.empty(B, **f64)
    # the C parameters: token input x; shared A; token output y; sample outputs Gram, N; maxabs output R
    _run(getattr(lib, f"geoattn_vp_gram_fwd_d{d}_{_REALS[x.dtype][0]}"), B, T,
         [(x, True), (A, False), (y, True), (G, True), (N, True), (R, True)])
    return y, G, N, R


def gram_backward(x: torch.Tensor, gy: torch.Tensor, N: torch.Tensor, A: torch.Tensor,
                  library: ctypes.CDLL | None = None):
    """``(gx, gA)``: the gradient in ``x`` (``x``'s dtype) and the per-sample ``Gram M_bar`` (float64 ``(B, d, d)``;
    the gradient in ``A`` is the skew part of its sum over the batch) for the incoming gradient ``gy``, from the
    forward's ``N`` (:func:`gram_forward`; the Gram matrix is recomputed in the pass over the tokens; ``library``
    likewise)."""
    _check_backward(x, A, gy, N)
    B, T, d = x.shape
    lib = library if library is not None else _library(d, x.dtype)
    if isinstance(lib, str):
        raise RuntimeError(f"Expected the native kernels to be available. Got: {lib}.")
    gx = torch.empty_like(x)
    gA = torch.empty(B, d, d, dtype=torch.float64, device=x.device)
    # the C parameters: token inputs x, Gy; sample input N; shared A; token output gx; sample output gA
    _run(getattr(lib, f"geoattn_vp_gram_bwd_d{d}_{_REALS[x.dtype][0]}"), B, T,
         [(x, True), (gy, True), (N, True), (A, False), (gx, True), (gA, True)])
    return gx, gA


def _check_small(name: str, t: torch.Tensor) -> None:
    if (t.device.type != "cpu" or t.dim() != 3 or not t.is_contiguous() or t.dtype not in _REALS
            or t.shape[-1] != t.shape[-2] or not 1 <= t.shape[-1] <= CAYLEY_MAX):
        raise ValueError(f"Expected {name} as a contiguous CPU tensor (B, T, T) with T <= {CAYLEY_MAX} of float32 "
                         f"or float64. Got {t.dtype} {tuple(t.shape)} on {t.device}.")


def _cayley_library(T: int, dtype: torch.dtype, library):
    lib = library if library is not None else _library(T, dtype)
    if isinstance(lib, str):
        raise RuntimeError(f"Expected the native kernels to be available. Got: {lib}.")
    return lib


def cayley_forward(c: torch.Tensor, library: ctypes.CDLL | None = None):
    """``(Lam, skew, size)`` for ``c`` of shape ``(B, T, T)``, ``T <= 3`` (contiguous, float32 or float64, CPU):
    ``Lam = I + 2 (C^2 - C)/(1 - Tr(C^2)/2)`` in ``c``'s dtype (computed in double, rounded once), which is
    Cayley(C) for skew ``C`` only, and per sample the float64 ``max |C + C^T|`` and ``max |C|`` (NaN when an entry
    is) from which the caller decides which samples are skew. ``library`` is for the tests' broken kernels."""
    _check_small("C", c)
    B, T, _ = c.shape
    lib = _cayley_library(T, c.dtype, library)
    lam = torch.empty_like(c)
    skew, size = torch.empty(B, dtype=torch.float64), torch.empty(B, dtype=torch.float64)
    # the C parameters: sample input C; sample output Lam; maxabs outputs Skew, Size
    _run(getattr(lib, f"geoattn_cayley_small_fwd_d{T}_{_REALS[c.dtype][0]}"), B, T,
         [(c, True), (lam, True), (skew, True), (size, True)])
    return lam, skew, size


def cayley_backward(lam: torch.Tensor, g: torch.Tensor, library: ctypes.CDLL | None = None) -> torch.Tensor:
    """The Cayley transform's vector-Jacobian product ``-1/2 (I + Lam^T) G (I + Lam^T)`` (``cayley.vjp``) for the
    output ``lam`` and the incoming gradient ``g``, both ``(B, T, T)`` with ``T <= 3``, contiguous, of one dtype
    (float32 or float64), on the CPU; computed in double, rounded once."""
    _check_small("Lam", lam)
    if g.shape != lam.shape or g.dtype != lam.dtype or not g.is_contiguous():
        raise ValueError(f"Expected G contiguous, of Lam's shape {tuple(lam.shape)} and dtype {lam.dtype}. Got "
                         f"{g.dtype} {tuple(g.shape)}.")
    B, T, _ = lam.shape
    lib = _cayley_library(T, lam.dtype, library)
    gc = torch.empty_like(lam)
    _run(getattr(lib, f"geoattn_cayley_vjp_d{T}_{_REALS[lam.dtype][0]}"), B, T, [(lam, True), (g, True), (gc, True)])
    return gc
