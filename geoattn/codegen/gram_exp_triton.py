r"""The Triton source of the exponential layer's Gram form for ``3 <= d <= 16``: printed token passes around the
scaling-and-squaring stage of :mod:`geoattn.codegen.gram_exp_c`, on padded blocks.

The Triton counterpart of the C kernels of :mod:`geoattn.codegen.gram_exp_c`, the same algorithm under the same
ledger claims (``vp.exp_push_through``, ``vp.gram_exp_vjp``, ``vp.gram_exp_native_truncation``,
``vp.gram_exp_native_reverse``): :math:`y = xE`, :math:`E = \exp(M)`, :math:`M = -AG`, per sample the least ``s``
with :math:`\min(\|2^{-s}M\|_1, \|2^{-s}M\|_F) \le` ``THETA``, the Taylor polynomial of degree ``DEGREE`` of
:math:`\exp(2^{-s}M)` by Paterson--Stockmeyer with ``BLOCKS`` powers, ``s`` squarings, and the reverse mode of all
of it in the backward. ``THETA``, ``DEGREE``, ``BLOCKS`` and ``SMAX`` are imported from
:mod:`geoattn.codegen.gram_exp_c`, so a retuned C template and these kernels print the same polynomial.

Note [Triton exponential blocks]
--------------------------------
The layout is that of Note [Triton LU blocks] in :mod:`geoattn.codegen.gram_lu_triton`, whose helpers (column,
row, the products as ``D`` outer products in a runtime loop, the NaN-propagating largest entry) and token-pass
printer (:func:`~geoattn.codegen.gram_lu_triton.print_pass`, fed :data:`gram_exp_c.SPECS`) this module imports:
one lane per sample, ``(BLOCK, DP, DP)`` float64 blocks, ``D`` and ``DP`` constexpr, one source for every width.

* The powers :math:`X^1 .. X^p` and the Horner iterates :math:`S_j` are printed as named blocks (``p`` and the
  number of iterates follow from ``BLOCKS`` and ``DEGREE``), the Taylor coefficients as literals, zero ones
  omitted; the padding of :math:`X` is zero, that of every :math:`S_j` the identity's, so ``E``'s padding is the
  identity and never reaches a real entry.
* ``s`` is found per lane by a loop of ``SMAX`` halvings (``tl.where`` keeps the lanes that are done), so
  :math:`2^{-s}` is exact; a lane whose norm is not finite or needs more than ``SMAX`` halvings gets
  ``s = SMAX + 1``, a NaN residual, and a NaN gradient scale (the caller replaces such samples).
* The squarings run to the block's largest ``s <= SMAX`` as a runtime loop; ``tl.where(k < s, Y^2, Y)`` keeps
  the lanes that are done. The backward needs every :math:`Y_k` in reverse order; rather than storing
  ``SMAX + 1`` blocks per lane (the C kernels' scratch), it recomputes :math:`Y_k` from :math:`Y_0` by ``k``
  squarings: :math:`s(s+1)/2` products in place of ``s``, about 15 against 5 at ``s = 5`` (unit-normal tokens,
  ``d = 8``, ``T = 16``), and no memory past the registers.
* The structure check is the C kernels': :math:`\max|E^TGE - G| / \mathrm{Tr}\,G` per lane (``G`` alone when the
  trace is zero), NaN when an entry is, when ``s > SMAX``, or when :math:`\mathrm{Tr}\,G\,\|A\|_F` exceeds the
  bound in ``K`` (``K = [|A|_F, GRAM_MAX_SCALE]``, float64, as the C kernels read it).

Compiling for sm_90 with Triton 3.9 without a device, a fresh cache, on a shared two-core CPU at load average
about 5 (timings noisy by 2x), one run each: d = 8 forward 10.7 s, backward 42.0 s; d = 16 forward 10.9 s,
backward 40.1 s. A first build that kept every Horner adjoint live took 7.2, 27.7, 13.1 and 70.2 s in a quieter
moment; keeping one adjoint live (as printed now) cut the d = 16 backward to 35-40 s. The backward's cost is its
some thirty inlined products and the recomputation of :math:`Y_k` (a loop inside the loop over the squarings).
Not run on a GPU.

``negate_backward`` prints a deliberately wrong backward (the transpose dropped from the squarings' adjoint, the
C generator's fault) for the tests' negative control.
"""

from __future__ import annotations

import hashlib
import math

from .gram_exp_c import BLOCKS, DEGREE, MAX_DIM, MIN_DIM, SMAX, SPECS, THETA, _CLAIMS
from .gram_lu_triton import HEAD, HELPERS, MAXABS, print_pass

__all__ = ["MIN_DIM", "MAX_DIM", "TARGET", "FUNCTIONS", "generate_triton_exp_module", "specs_hash"]

#: the generated module, in geoattn.kernels
TARGET = "_triton_gram_exp.py"
#: the forward and backward ``@triton.jit`` functions
FUNCTIONS = ("vp_gram_exp_fwd", "vp_gram_exp_bwd")
_IND = "    "

HEADER = '''"""Triton kernels of the layer y = x exp(-A x^T x) by its Gram form, {lo} <= d <= {hi}: forward, backward.

DO NOT EDIT: this file is written by ``geoattn codegen`` (``geoattn/codegen/gram_exp_triton.py``); ``geoattn codegen
--check`` fails when it is stale. The token passes are printed from the verified bindings of
``geoattn.codegen.gram_exp_c.SPECS``; the d x d stage (scaling and squaring of the Taylor polynomial of degree {m}
by Paterson-Stockmeyer with {p} powers, theta = {theta}, at most {smax} squarings, its reverse mode, the structure
check) is that of Note [Triton exponential blocks] in ``geoattn.codegen.gram_exp_triton``.
Ledger: {claims}.
Imported by ``geoattn.kernels._triton`` only where ``triton`` is installed.

bindings-sha256: {hash}
"""

import triton
import triton.language as tl

__all__ = [{names}]
'''

#: X^T Y per lane (the products of the reverse mode), in the helpers' style
_MM_TN = '''

@triton.jit
def _mm_tn(X, Y, R3, D: tl.constexpr):
    """X^T Y per lane as D outer products of a row of X and a row of Y."""
    acc = _row(X, R3, 0)[:, :, None] * _row(Y, R3, 0)[:, None, :]
    for k in range(1, D):
        acc += _row(X, R3, k)[:, :, None] * _row(Y, R3, k)[:, None, :]
    return acc


@triton.jit
def _shift(nrm, SMAX: tl.constexpr, THETA: tl.constexpr):
    """The least s <= SMAX with 2^-s nrm <= THETA and 2^-s, per lane; s = SMAX + 1 when none or nrm is not finite."""
    s = tl.full(nrm.shape, 0, tl.int32)
    c = tl.full(nrm.shape, 1.0, tl.float64)
    v = nrm
    for _k in range(0, SMAX):
        big = v > THETA
        s += big.to(tl.int32)
        v = tl.where(big, v * 0.5, v)
        c = tl.where(big, c * 0.5, c)
    return tl.where((v <= THETA) & (nrm <= 1e300), s, SMAX + 1), c

'''


def specs_hash() -> str:
    """The sha256 of the printed bindings (``gram_exp_c.SPECS``), recorded in the module's header."""
    text = "\n".join(f"{k}: {s.binding_text()}" for k, s in SPECS.items())
    return hashlib.sha256(text.encode()).hexdigest()


def _coefs() -> tuple[int, list[float]]:
    q = -(-(DEGREE + 1) // BLOCKS)
    return q, [1.0 / math.factorial(k) if k <= DEGREE else 0.0 for k in range(BLOCKS * q)]


def _sum(name: str, terms: list[str]) -> list[str]:
    """``name = t0 + t1 + ...`` as statements of at most three terms each (the printed lines stay short)."""
    return [("" if k else f"{name} = ") + (f"{name} += " if k else "") + " + ".join(terms[k:k + 3])
            for k in range(0, len(terms), 3)]


def _taylor() -> list[str]:
    """M = -A Gram, the shift, the powers P1 .. Pp of X = 2^-s M and the Horner iterates S0 .. S(q-1)."""
    q, t = _coefs()
    p = BLOCKS
    out = ["M = -_mm(A3, Gram, R3, C3, D)",
           "Ma = tl.where(_real, tl.abs(M), 0.0)",
           "one = tl.reduce(tl.reduce(Ma, 1, _add), 1, _larger)  # the 1-norm (a NaN shows in fro)",
           "fro = tl.sqrt(tl.reduce(tl.reduce(Ma * Ma, 2, _add), 1, _add))",
           "nrm = tl.where(fro != fro, fro, tl.where(fro < one, fro, one))",
           f"s, c = _shift(nrm, {SMAX}, {THETA}.0)",
           "P1 = M * c[:, None, None]"]
    out += [f"P{k} = _mm(P{k - 1}, P1, R3, C3, D)" for k in range(2, p + 1)]
    for j in range(q - 1, -1, -1):
        terms = [f"S{j + 1}_P" if j < q - 1 else None, f"{t[p * j]!r}*_eye" if t[p * j] else None]
        terms += [f"{t[p * j + i]!r}*P{i}" for i in range(1, p) if t[p * j + i]]
        if j < q - 1:
            out.append(f"S{j + 1}_P = _mm(S{j + 1}, P{p}, R3, C3, D)")
        out += _sum(f"S{j}", [x for x in terms if x])
    return out


def _squarings() -> list[str]:
    return ["top = tl.reduce(tl.where(s <= SMAXC, s, 0), 0, _larger)",
            "E = S0",
            "for k in range(0, top):",
            _IND + "E = tl.where(k < s[:, None, None], _mm(E, E, R3, C3, D), E)"]


def _reverse(negate_backward: bool) -> list[str]:
    """The backward's reverse mode from gY = Pbar: the squarings, the Horner scheme, the powers; Mbar, H, gA."""
    q, t = _coefs()
    p = BLOCKS
    second = "_mm(gY, Yk, R3, C3, D)" if negate_backward else "_mm_t(gY, Yk, C3, D)"
    out = ["gY = Pbar",
           "for j in range(0, top):",
           _IND + "k = top - 1 - j",
           _IND + "Yk = S0",
           _IND + "for i in range(0, k):",
           _IND * 2 + "Yk = tl.where(i < s[:, None, None], _mm(Yk, Yk, R3, C3, D), Yk)",
           _IND + f"W = {second} + _mm_tn(Yk, gY, R3, D)",
           _IND + "gY = tl.where(k < s[:, None, None], W, gY)"]
    # the Horner steps, first first, one adjoint gS live: gS_(j+1) = gS_j (X^p)^T, (X^p)bar += S_(j+1)^T gS_j, and
    # the coefficients' share (X^i)bar += TAYLOR[p j + i] gS_j
    seen = set()
    for j in range(q):
        out.append("gS = gY" if j == 0 else f"gS = _mm_t(gS, P{p}, C3, D)")
        terms = [(i, f"{t[p * j + i]!r}*gS") for i in range(1, p) if t[p * j + i]]
        terms += [(p, f"_mm_tn(S{j + 1}, gS, R3, D)")] if j < q - 1 else []
        for i, term in terms:
            out.append(f"gP{i} {'+=' if i in seen else '='} {term}")
            seen.add(i)
    for i in range(1, p + 1):
        if i not in seen:
            out.append(f"gP{i} = tl.full((BLOCK, DP, DP), 0.0, tl.float64)")
    for k in range(p, 1, -1):
        out += [f"gP{k - 1} += _mm_t(gP{k}, P1, C3, D)", f"gP1 += _mm_tn(P{k - 1}, gP{k}, R3, D)"]
    out += ["Mbar = gP1 * tl.where(s <= SMAXC, c, float('nan'))[:, None, None]",
            "W = _mm(A3, Mbar, R3, C3, D)",
            "H = W + _mm_t(_eye, W, C3, D)  # W + W^T",
            "tl.store(gA_ptr + _o3, -_mm(Mbar, Gram, R3, C3, D), mask=_m3)",
            "P = E"]
    return out


def _docstring(keys: tuple[str, ...], what: str) -> list[str]:
    lines = ['"""' + what]
    for key in keys:
        for n, e in SPECS[key].bindings:
            lines.append(f"from: {n} = {e}  (printed: gram_exp_c.SPECS[{key!r}])")
    return lines + [f"verified by: {', '.join(_CLAIMS)}", '"""']


def _loop(spec) -> list[str]:
    before, body = print_pass(spec)
    return before + ["for _t in range(0, T):"] + [_IND + ln for ln in body]


_FIRST = [f"SMAXC = {SMAX}", "A3 = tl.load(A_ptr + R3*D + C3, mask=_real, other=0.0).to(tl.float64)"]


def _kernel(forward: bool, negate_backward: bool) -> str:
    fwd, bwd = FUNCTIONS
    tail = "\n" + _IND * 2 + "D: tl.constexpr, DP: tl.constexpr, BLOCK: tl.constexpr):"
    if forward:
        sig = f"def {fwd}(B, T, x_ptr, A_ptr, K_ptr, y_ptr, Gram_ptr, E_ptr, R_ptr,{tail}"
        doc = _docstring(("gram", "out"), "Forward: y, and per sample Gram, E = exp(-A Gram) and\nR = max |E^T "
                         "Gram E - Gram| / Tr Gram (NaN: the sample failed).")
        check = ["W = _mm_tn(E, _mm(Gram, E, R3, C3, D), R3, D) - Gram",
                 "m = _maxabs(W, _real)",
                 "tr = tl.reduce(tl.reduce(tl.where(_real & (R3 == C3), Gram, 0.0), 2, _add), 1, _add)",
                 "ok = (s <= SMAXC) & (tr * tl.load(K_ptr) <= tl.load(K_ptr + 1))",
                 "tl.store(R_ptr + _b, tl.where(ok, m / tl.where(tr > 0.0, tr, 1.0), float('nan')), mask=_live)",
                 "tl.store(Gram_ptr + _o3, Gram, mask=_m3)",
                 "tl.store(E_ptr + _o3, E, mask=_m3)",
                 "P = E"]
        body = doc + HEAD + _FIRST + _loop(SPECS["gram"]) + _taylor() + _squarings() + check + _loop(SPECS["out"])
    else:
        sig = f"def {bwd}(B, T, x_ptr, Gy_ptr, A_ptr, gx_ptr, gA_ptr,{tail}"
        what = "a deliberately WRONG kernel (a transpose dropped)" if negate_backward else "the gradient"
        doc = _docstring(("grams", "gx"), f"Backward: {what} gx and per sample gA = -Mbar Gram, the\nforward's "
                         "stage recomputed and run in reverse from Ebar = Pbar.")
        body = (doc + HEAD + _FIRST + _loop(SPECS["grams"]) + _taylor() + _squarings() + _reverse(negate_backward)
                + _loop(SPECS["gx"]))
    lines = [ln for b in body for ln in b.split("\n")]
    return "\n".join(["@triton.jit", sig] + [_IND + ln if ln else "" for ln in lines]) + "\n"


def generate_triton_exp_module(negate_backward: bool = False) -> str:
    r"""The Python source of the Triton module of the exponential Gram form's kernels for every ``3 <= d <= 16``.

    Parameters
    ----------
    negate_backward : bool
        print the squarings' adjoint without its transpose (:math:`\bar X = \bar YX + X^T\bar Y`): a broken kernel
        for the tests' negative control.

    Returns
    -------
    str
        the module's text; each kernel is called as ``f[grid](B, T, *arrays, D=d, DP=dp, BLOCK=...)`` with the
        arrays of :mod:`geoattn.kernels._native_exp`'s kernels, ``dp`` the next power of two at least ``d``.
    """
    names = ", ".join(f'"{n}"' for n in FUNCTIONS)
    header = HEADER.format(lo=MIN_DIM, hi=MAX_DIM, m=DEGREE, p=BLOCKS, theta=THETA, smax=SMAX,
                           claims=", ".join(_CLAIMS), hash=specs_hash(), names=names)
    return (header + "\n" + HELPERS + MAXABS + _MM_TN + "\n\n" + _kernel(True, negate_backward) + "\n\n"
            + _kernel(False, negate_backward))
