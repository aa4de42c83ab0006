r"""The Triton source of the Gram form's kernels for ``d <= 16``: printed token passes around a blocked LU.

The Triton counterpart of :mod:`geoattn.codegen.gram_lu_c` (the same layer, the same ledger claims
``vp.gram_form`` and ``vp.gram_lu_vjp``): :math:`y = x(2N - I)`, :math:`N = M^{-T}`, :math:`M = I + GA`,
:math:`G = x^Tx`, and the backward :math:`\bar M = -2N\bar P^TN`, :math:`H = -(K + K^T)` with :math:`K = \bar MA`,
:math:`\bar x = \bar y(2N - I)^T + xH`, per sample :math:`G\bar M`.

Note [Triton LU blocks]
-----------------------
One program handles ``BLOCK`` samples, one lane each (Note [Triton lanes] in :mod:`geoattn.codegen.tritonprinter`),
and ONE source serves every width: ``D`` (the width) and ``DP`` (the next power of two, at least 2) are
``tl.constexpr`` arguments, so each width is its own compiled specialisation of the same two kernels.

* Each lane's ``d x d`` matrices are blocks of shape ``(BLOCK, DP, DP)`` in float64; the entries past ``D`` are
  those of the identity in ``M^T`` and ``N`` (zero in the Gram matrix and ``A``), so the LU stays regular and the
  padding never reaches the real entries.
* The token passes are printed from the verified matrix-level bindings of ``gram_lu_c.SPECS`` by
  :func:`print_pass`, which knows three shapes only and refuses any other: ``a.T*b`` (an accumulated outer product
  of two token rows), ``a*S`` and ``a*S.T`` (a row times a per-sample matrix, a sum over one axis), and sums
  of the last two. The token rows are ``(BLOCK, DP)`` loads masked past ``D``.
* The ``d x d`` stage is a fixed template (:data:`STAGE`): ``M^T = I + A^T G``, its LU with partial pivoting
  (the pivot row is each lane's masked argmax of ``|column k|``, the smallest index among equal magnitudes, a NaN
  never chosen, as the C kernels pick it; rows exchanged by ``tl.where`` on the row index), ``N`` by the two
  triangular solves, the largest residual entry :math:`|M^TN - I|` (NaN when an entry is) and the backward's
  products; every loop runs over ``k < D`` as a loop, not unrolled, and a product is a sum of ``D`` outer products
  of a column and a row taken out of the blocks by masked sums. No branch depends on the data, and a lane's values
  never depend on another lane's.

The forward writes ``N`` per sample and the backward reads it, as the C kernels do: the layer's autograd function
replaces ``N`` of the samples that fail the residual check by a pivoted solve (Note [closed-form residual check]
in :mod:`geoattn.kernels._gram`), which a backward recomputing ``N`` would not see. The results agree with the C
kernels to rounding, not to the bit: the sums run in another order. ``negate_backward`` prints a deliberately
wrong kernel (the sign of :math:`\bar M` flipped) for the tests' negative control.

Compiling for sm_90 with Triton 3.9 without a device (a shared two-core CPU, one run each): d = 8 forward 5.6 s,
backward 3.5 s; d = 16 forward 3.7 s, backward 3.9 s. The same template with its ``d x d`` loops as
``tl.static_range`` (unrolled): d = 8 forward 93 s, backward 32 s, d = 16 forward 325 s; hence the loops.
"""

from __future__ import annotations

import hashlib

import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, MatrixSymbol, Transpose

from ..errors import CodegenError
from .gram_lu_c import MAX_DIM, SPECS, _CLAIMS

__all__ = ["MIN_DIM", "MAX_DIM", "print_pass", "HELPERS", "MAXABS", "HEAD", "generate_triton_lu_module", "TARGET",
           "FUNCTIONS", "specs_hash"]

#: the widths the kernels take (the route serves 5 and above: the closed form keeps d <= 4)
MIN_DIM = 1
#: the generated module, in geoattn.kernels
TARGET = "_triton_gram_lu.py"
#: the forward and backward ``@triton.jit`` functions
FUNCTIONS = ("vp_gram_lu_fwd", "vp_gram_lu_bwd")
_IND = "    "

HEADER = '''"""Triton kernels of the Gram form y = 2 x (I + x^T x A)^(-T) - x for {lo} <= d <= {hi}: forward, backward.

DO NOT EDIT: this file is written by ``geoattn codegen`` (``geoattn/codegen/gram_lu_triton.py``); ``geoattn codegen
--check`` fails when it is stale. The token passes are printed from the verified bindings of
``geoattn.codegen.gram_lu_c.SPECS``; the d x d stage (M^T = I + A^T Gram, LU with partial pivoting per lane,
N = M^(-T), the residual, the backward's products) is the template of Note [Triton LU blocks] in
``geoattn.codegen.gram_lu_triton``, on (BLOCK, DP, DP) blocks [ledger: {claims}]. Imported by
``geoattn.kernels._triton`` only where ``triton`` is installed.

bindings-sha256: {hash}
"""

import triton
import triton.language as tl

__all__ = [{names}]
'''

#: the d x d stage's helpers: R3, C3 are the row and column indices (1, DP, 1) and (1, 1, DP), Rr is (1, DP);
#: reductions are tl.reduce with the combining functions of tl.sum, tl.max and tl.min: those three are jit functions
#: that Triton's interpreter runs only when triton itself was imported with the interpreter on, while tl.reduce with
#: these combining functions is always interpreted, by numpy (a combining function of our own: element by element)
HELPERS = '''
_add = tl.standard._sum_combine
_larger = tl.standard._elementwise_max
_smaller = tl.standard._elementwise_min


@triton.jit
def _col(X, C3, k):
    """Column k of each lane's block, (BLOCK, DP) indexed by row."""
    return tl.reduce(tl.where(C3 == k, X, 0.0), 2, _add)


@triton.jit
def _row(X, R3, k):
    """Row k of each lane's block, (BLOCK, DP) indexed by column."""
    return tl.reduce(tl.where(R3 == k, X, 0.0), 1, _add)


@triton.jit
def _mm(X, Y, R3, C3, D: tl.constexpr):
    """X Y per lane as D outer products of a column of X and a row of Y (either may be one block for all)."""
    acc = _col(X, C3, 0)[:, :, None] * _row(Y, R3, 0)[:, None, :]
    for k in range(1, D):
        acc += _col(X, C3, k)[:, :, None] * _row(Y, R3, k)[:, None, :]
    return acc


@triton.jit
def _mm_t(X, Y, C3, D: tl.constexpr):
    """X Y^T per lane as D outer products of a column of X and a column of Y."""
    acc = _col(X, C3, 0)[:, :, None] * _col(Y, C3, 0)[:, None, :]
    for k in range(1, D):
        acc += _col(X, C3, k)[:, :, None] * _col(Y, C3, k)[:, None, :]
    return acc


'''

#: the LU with partial pivoting and the two triangular solves
_INVERSE = '''@triton.jit
def _inverse_t(MT, R3, C3, Rr, D: tl.constexpr, DP: tl.constexpr, BLOCK: tl.constexpr):
    """N with M^T N = I per lane: P M^T = L U with partial pivoting, then L Z = P and U N = Z."""
    LU = MT
    q = tl.broadcast_to(Rr, (BLOCK, DP))  # row i of P M^T is row q_i of M^T
    for k in range(0, D):
        a = tl.abs(_col(LU, C3, k))
        a = tl.where((Rr >= k) & (a == a), a, -1.0)
        best = tl.reduce(a, 1, _larger)
        p = tl.reduce(tl.where(a == best[:, None], Rr, DP), 1, _smaller)
        p2 = p[:, None]
        p3 = p2[:, :, None]
        rk = _row(LU, R3, k)
        rp = tl.reduce(tl.where(R3 == p3, LU, 0.0), 1, _add)
        LU = tl.where(R3 == k, rp[:, None, :], tl.where(R3 == p3, rk[:, None, :], LU))
        qk = tl.reduce(tl.where(Rr == k, q, 0), 1, _add)
        qp = tl.reduce(tl.where(Rr == p2, q, 0), 1, _add)
        q = tl.where(Rr == k, qp[:, None], tl.where(Rr == p2, qk[:, None], q))
        piv = tl.reduce(tl.where(Rr == k, rp, 0.0), 1, _add)
        lk = _col(LU, C3, k) / piv[:, None]
        below = R3 > k
        LU = tl.where(below & (C3 == k), lk[:, :, None],
                      tl.where(below & (C3 > k), LU - lk[:, :, None] * rp[:, None, :], LU))
    Z = tl.where(q[:, :, None] == C3, 1.0, 0.0).to(tl.float64)
    for k in range(0, D):
        zk = _row(Z, R3, k)
        Z = tl.where(R3 > k, Z - _col(LU, C3, k)[:, :, None] * zk[:, None, :], Z)
    for j in range(0, D):
        k = D - 1 - j
        ukk = tl.reduce(tl.where(Rr == k, _row(LU, R3, k), 0.0), 1, _add)
        zk = _row(Z, R3, k) / ukk[:, None]
        Z = tl.where(R3 == k, zk[:, None, :], Z)
        Z = tl.where(R3 < k, Z - _col(LU, C3, k)[:, :, None] * zk[:, None, :], Z)
    return Z


'''

#: the largest real entry of a block, NaN when one is (the residual and structure checks)
MAXABS = '''@triton.jit
def _maxabs(E, real):
    """The largest |entry| of each lane's block where real, NaN when one is."""
    a = tl.where(real, tl.abs(E), 0.0)
    top = tl.reduce(tl.reduce(tl.where(a != a, 0.0, a), 2, _larger), 1, _larger)
    return top + tl.reduce(tl.reduce(tl.where(a != a, a, 0.0), 2, _add), 1, _add)  # + 0, or NaN
'''
#: the whole d x d stage of the LU kernels
STAGE = HELPERS + _INVERSE + MAXABS

_HEAD = [
    "_b = (tl.program_id(0)*BLOCK + tl.arange(0, BLOCK)).to(tl.int64)",
    "_live = _b < B",
    "_r = tl.arange(0, DP)",
    "Rr = _r[None, :]",
    "R3 = _r[None, :, None]",
    "C3 = _r[None, None, :]",
    "_real = (R3 < D) & (C3 < D)",
    "_eye = tl.where(R3 == C3, 1.0, 0.0).to(tl.float64)",
    "_o2 = _b[:, None]*T*D + Rr",
    "_m2 = _live[:, None] & (Rr < D)",
    "_o3 = _b[:, None, None]*(D*D) + R3*D + C3",
    "_m3 = _live[:, None, None] & _real",
    "At3 = tl.load(A_ptr + C3*D + R3, mask=_real, other=0.0).to(tl.float64)",
]
#: the kernels' first statements (lanes, indices, masks, offsets, A^T as a block), shared with the exponential's
HEAD = _HEAD


def specs_hash() -> str:
    """The sha256 of the printed bindings (``gram_lu_c.SPECS``), recorded in the module's header."""
    text = "\n".join(f"{k}: {s.binding_text()}" for k, s in SPECS.items())
    return hashlib.sha256(text.encode()).hexdigest()


def _name(e, allowed, what: str) -> str:
    if isinstance(e, MatrixSymbol) and e.name in allowed:
        return e.name
    raise CodegenError(f"Expected {what} (one of {tuple(allowed)}). Got {sp.sstr(e)}.")


def _term(e, spec) -> str:
    """``a*S`` or ``a*S.T``: a token row times a per-sample matrix, as a ``(BLOCK, DP)`` reduction."""
    if not isinstance(e, MatMul) or len(e.args) != 2:
        raise CodegenError(f"Expected a row map a*S or a*S.T. Got {sp.sstr(e)}.")
    a, S = e.args
    row = _name(a, spec.token_inputs, "a token input") + "_t"
    if isinstance(S, Transpose):
        return f"tl.reduce({row}[:, None, :]*{_name(S.arg, spec.sample_inputs, 'a per-sample matrix')}, 2, _add)"
    return f"tl.reduce({row}[:, :, None]*{_name(S, spec.sample_inputs, 'a per-sample matrix')}, 1, _add)"


def print_pass(spec) -> tuple[list[str], list[str]]:
    r"""The block operations of one token pass printed from its matrix-level bindings.

    Parameters
    ----------
    spec : NativeKernelSpec
        one of ``gram_lu_c.SPECS``: reductions ``name = a.T*b`` of token inputs, or row maps ``name = a*S``,
        ``a*S.T`` or sums of them, ``S`` a per-sample input.

    Returns
    -------
    (list of str, list of str)
        the statements before the loop over the tokens (the accumulators) and the loop's body (loads, the
        accumulation or the row and its masked store).

    Raises
    ------
    CodegenError
        for a binding of any other shape.
    """
    before = []
    body = [f"{n}_t = tl.load({n}_ptr + _o2 + _t*D, mask=_m2, other=0.0).to(tl.float64)" for n in spec.token_inputs]
    for name, e in spec.bindings:
        if isinstance(e, MatMul) and len(e.args) == 2 and isinstance(e.args[0], Transpose):
            a = _name(e.args[0].arg, spec.token_inputs, "a token input")
            b = _name(e.args[1], spec.token_inputs, "a token input")
            before.append(f"{name} = tl.full((BLOCK, DP, DP), 0.0, tl.float64)")
            body.append(f"{name} += {a}_t[:, :, None]*{b}_t[:, None, :]")
        else:
            terms = e.args if isinstance(e, MatAdd) else (e,)
            body.append(f"{name}_t = " + " + ".join(_term(t, spec) for t in terms))
            body.append(f"tl.store({name}_ptr + _o2 + _t*D, {name}_t.to({name}_ptr.dtype.element_ty), mask=_m2)")
    return before, body


def _docstring(keys: tuple[str, ...], what: str) -> list[str]:
    lines = ['"""' + what]
    for key in keys:
        for n, e in SPECS[key].bindings:
            lines.append(f"from: {n} = {e}  (printed: gram_lu_c.SPECS[{key!r}])")
    return lines + [f"verified by: {', '.join(_CLAIMS)}", '"""']


def _loop(spec) -> list[str]:
    before, body = print_pass(spec)
    return before + ["for _t in range(0, T):"] + [_IND + ln for ln in body]


def _kernel(forward: bool, negate_backward: bool) -> str:
    fwd, bwd = FUNCTIONS
    tail = f"\n{_IND * 2}D: tl.constexpr, DP: tl.constexpr, BLOCK: tl.constexpr):"
    if forward:
        sig = f"def {fwd}(B, T, x_ptr, A_ptr, y_ptr, Gram_ptr, N_ptr, R_ptr, {tail}"
        doc = _docstring(("gram", "out"), "Forward: y, and per sample Gram, N = (I + Gram A)^(-T) by an LU with "
                         "partial pivoting\nand R = max |M^T N - I| (NaN when an entry is).")
        stage = ["MT = _eye + _mm(At3, Gram, R3, C3, D)",
                 "N = _inverse_t(MT, R3, C3, Rr, D, DP, BLOCK)",
                 "tl.store(R_ptr + _b, _maxabs(_mm(MT, N, R3, C3, D) - _eye, _real), mask=_live)",
                 "tl.store(Gram_ptr + _o3, Gram, mask=_m3)",
                 "tl.store(N_ptr + _o3, N, mask=_m3)",
                 "P = 2.0*N - _eye"]
        body = doc + _HEAD + _loop(SPECS["gram"]) + stage + _loop(SPECS["out"])
    else:
        sig = f"def {bwd}(B, T, x_ptr, Gy_ptr, N_ptr, A_ptr, gx_ptr, gA_ptr, {tail}"
        what = "a deliberately WRONG kernel (Mbar's sign flipped)" if negate_backward else "the gradient"
        doc = _docstring(("grams", "gx"), f"Backward: {what} gx and per sample gA = Gram Mbar,\nMbar = -2 N Pbar^T "
                         "N, from x, Gy and the forward's N.")
        sign = "2.0" if negate_backward else "-2.0"
        stage = ["N = tl.where(_real, tl.load(N_ptr + _o3, mask=_m3, other=0.0), _eye)",
                 "A3 = tl.load(A_ptr + R3*D + C3, mask=_real, other=0.0).to(tl.float64)",
                 f"Mbar = {sign}*_mm(_mm_t(N, Pbar, C3, D), N, R3, C3, D)",
                 "K = _mm(Mbar, A3, R3, C3, D)",
                 "H = -(K + _mm_t(At3, Mbar, C3, D))  # K^T = A^T Mbar^T",
                 "tl.store(gA_ptr + _o3, _mm(Gram, Mbar, R3, C3, D), mask=_m3)",
                 "P = 2.0*N - _eye"]
        body = doc + _HEAD + _loop(SPECS["grams"]) + stage + _loop(SPECS["gx"])
    lines = [ln for b in body for ln in b.split("\n")]
    return "\n".join(["@triton.jit", sig] + [_IND + ln if ln else "" for ln in lines]) + "\n"


def generate_triton_lu_module(negate_backward: bool = False) -> str:
    r"""The Python source of the Triton module of the Gram form's LU kernels for every ``d <= 16``.

    Parameters
    ----------
    negate_backward : bool
        print :math:`\bar M` with the wrong sign: a broken kernel for the tests' negative control.

    Returns
    -------
    str
        the module's text; each kernel is called as ``f[grid](B, T, *arrays, D=d, DP=dp, BLOCK=...)``,
        ``dp`` the next power of two at least ``max(d, 2)``, ``grid = (cdiv(B, BLOCK),)``.
    """
    names = ", ".join(f'"{n}"' for n in FUNCTIONS)
    header = HEADER.format(lo=MIN_DIM, hi=MAX_DIM, claims=", ".join(_CLAIMS), hash=specs_hash(), names=names)
    return (header + "\n" + STAGE + "\n\n" + _kernel(True, negate_backward) + "\n\n"
            + _kernel(False, negate_backward))
