r"""The C source of symplectic attention's native CPU kernel (the ``native`` route of ``symattn_update``).

With a symmetric :math:`A` and the softmax over all entries, :math:`C = az^T` (:math:`a = zA`) is symmetric, so is
:math:`G = e^{C - L}` (:math:`L` the sample's log-sum-exp, with the one softmax's extra zero logit), and the update
is :math:`U = 2Ga` (ledger ``symattn.sdpa_form``). The kernel takes one sample at a time and a block of
``VL`` rows side by side (one vector register of ``VL`` reals, ``GEOATTN_VBYTES`` bytes: Note [vector width] in
:mod:`geoattn.codegen.cprinter`), its ``T`` columns one at a time, so a
row's sums stay in one lane and no horizontal reduction is needed:

* forward: per row block, the scores :math:`C_{ij}` (the head size :math:`n` unrolled by the compiler) into a
  ``T x VL`` buffer (16 KB at ``T = 256`` with 16 lanes) with the row maxima :math:`m_i`, then :math:`l_i = \sum_j e^{C_{ij} -
  m_i}` and :math:`O_i = \sum_j e^{C_{ij} - m_i}a_j`; per sample, in double, :math:`L = \log(\epsilon +
  \sum_i e^{m_i} l_i)` and :math:`U_i = 2e^{m_i - L}O_i`;
* backward (ledger ``symattn.native_vjp``): with :math:`s = \tfrac12\sum_i V_i\cdot U_i` (:math:`= \langle G,
  Va^T\rangle`) the rows of ``symattn.dense_vjp``'s :math:`h` and :math:`\bar C'^Ta` are

  .. math::

      h_i = \sum_j G_{ij}\bigl(V_j + (V_i\cdot a_j - s)z_j\bigr),\qquad
      (\bar C'^Ta)_i = \sum_j G_{ij}(a_i\cdot V_j - s)\,a_j,

  :math:`G_{ij} = e^{C_{ij} - L}` recomputed from the scores (no ``T x T`` array is stored).

The exponential is a polynomial written here (:func:`exp_coefficients`): :math:`e^x = 2^k e^r`, :math:`k` the
nearest integer to :math:`x/\ln 2`, :math:`r = x - k\ln 2` (Cody--Waite: :math:`\ln 2` split in two so
:math:`k\ln 2_{hi}` is exact), :math:`|r| \le \tfrac12\ln 2`, and :math:`e^r` its Taylor polynomial of degree
``DEGREE[real]``, whose truncation error is at most :math:`\frac{|r|^{N+1}}{(N+1)!}e^{|r|}`:
:func:`exp_error_bound` (float32, degree 7: 7.4e-9, 0.06 of float32's unit roundoff 6.0e-8; float64, degree 13:
5.6e-18, 0.05 of 1.1e-16); Horner's rounding adds a few units in the last place. Arguments below
``EXP_LOW[real]`` give 0 (:math:`e^{-87} = 1.6\cdot10^{-38}` in float32: the flushed entries change a sum of at
least 1 by less than :math:`T^2 \cdot 1.6\cdot10^{-38}`), above ``EXP_HIGH`` infinity, NaN stays NaN. The template
is one text compiled with ``-DGEOATTN_D=<n>`` and ``-DGEOATTN_F32`` or ``-DGEOATTN_F64``; GCC's vector extension
types keep it portable, at the width of the machine's registers (Note [vector width] in
:mod:`geoattn.codegen.cprinter`). ``broken`` prints a
deliberately wrong kernel for the tests' negative controls.

Every broadcast of a scalar is written ``x - 0``, which the compiler folds into the multiply-add's memory operand;
``0 + x`` is not ``x`` for ``x = -0``, so it cost one scalar addition and one broadcast per operand, half the
backward's instructions at ``n = 8``. Measured (one thread, float32, ``T = 256``, thread CPU time per score entry,
the two builds alternated in one process on a shared machine), forward | backward in ns: ``n = 2`` 0.66 | 0.84 ->
0.65 | 0.73, ``n = 4`` 0.77 | 1.27 -> 0.70 | 0.85, ``n = 8`` 0.98 | 2.21 -> 0.80 | 1.30. The backward's remaining
cost over the forward is its work: per column ``3n`` multiply-adds for the three dot products and ``3n`` for the
sums, against ``2n`` forward, with one exponential each.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .cprinter import REAL_PRELUDE

__all__ = ["MAX_N", "DEGREE", "EXP_LOW", "EXP_HIGH", "exp_coefficients", "exp_error_bound",
           "generate_symattn_module", "target_name"]

#: the largest head size ``n`` (``dim = 2n``) the kernel is compiled for
MAX_N = 16
#: degree of the exponential's Taylor polynomial per real type
DEGREE = {"f32": 7, "f64": 13}
#: arguments below which the exponential is 0, above which infinity
EXP_LOW = {"f32": -87.0, "f64": -708.0}
EXP_HIGH = {"f32": 88.0, "f64": 709.0}
_CLAIMS = ["symattn.sdpa_form", "symattn.dense_vjp", "symattn.native_vjp"]
#: the ways ``broken`` can break the kernel (the tests' negative controls)
BROKEN = ("exp_scale", "vjp_shift")


def target_name() -> str:
    """The generated file's name next to the other native kernels."""
    return "_native_symattn.c"


def exp_coefficients(real: str) -> list[Fraction]:
    """The Taylor coefficients :math:`1/k!`, :math:`k = 0..N`, of the kernel's exponential for ``real``."""
    return [Fraction(1, math.factorial(k)) for k in range(DEGREE[real] + 1)]


def exp_error_bound(real: str) -> float:
    r"""The relative truncation error bound :math:`\frac{h^{N+1}}{(N+1)!}e^{h}`, :math:`h = \tfrac12\ln 2`, of the
    polynomial (before rounding)."""
    h, N = 0.5 * math.log(2.0), DEGREE[real]
    return h ** (N + 1) / math.factorial(N + 1) * math.exp(h)


def _coefficient_lines() -> str:
    """The C lines that define ``EXP_DEG`` and ``EXP_C`` (the coefficients) for each real type."""
    lines = []
    for k, real in enumerate(DEGREE):
        coeffs = exp_coefficients(real)
        suffix = "f" if real == "f32" else ""
        lines.append(f"#{'if' if k == 0 else 'elif'} defined(GEOATTN_{real.upper()})")
        lines.append(f"#define EXP_DEG {len(coeffs) - 1}")
        lines.append("static const real_t EXP_C[] = {")
        lines += [f"    {float(c)!r}{suffix},  /* 1/{math.factorial(q)} */" for q, c in enumerate(coeffs)]
        lines.append("};")
    lines.append("#endif")
    return "\n".join(lines)


HEADER = """/* Native CPU kernel of nonlinear symplectic attention (symmetric A, softmax over all entries),
   1 <= n <= {top}.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/symattn_c.py); `geoattn codegen
   --check` fails when it is stale. One sample at a time, VL rows side by side
   [ledger: {claims}].
   Compiled at first use by geoattn.kernels._native_symattn, one library per n and real type (-DGEOATTN_D=<n>
   -DGEOATTN_F32 or -DGEOATTN_F64); never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* -std=c99 turns off the contraction of a * b + c into one fused multiply-add; this file's sums want it (one
   rounding instead of two: never less accurate). No other floating-point option changes. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#elif defined(__clang__)
#pragma clang fp contract(fast)
#endif

{prelude}
"""

TEMPLATE = r"""
#define N GEOATTN_D
#if defined(GEOATTN_F32)
typedef int32_t int_t;
#define EXP_LOW @LOW32@f
#define EXP_HIGH @HIGH32@f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define ROUND_MAGIC 12582912.0f
#define MANT 23
#define BIAS 127
#else
typedef int64_t int_t;
#define EXP_LOW @LOW64@
#define EXP_HIGH @HIGH64@
#define LOG2E 1.4426950408889634074
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10
#define ROUND_MAGIC 6755399441055744.0
#define MANT 52
#define BIAS 1023
#endif
#define VL ((int)(GEOATTN_VBYTES / sizeof(real_t)))
typedef real_t vr __attribute__((vector_size(GEOATTN_VBYTES)));
typedef int_t vi __attribute__((vector_size(GEOATTN_VBYTES)));
@COEFFICIENTS@

static inline __attribute__((always_inline)) vr splat(real_t x)
{
    vr zero = {0};
    /* the scalar broadcast to every lane: x - (+0) is x for every x, -0 and NaN included, so the compiler folds it
       into the broadcast (into the multiply-add's memory operand where the scalar is loaded); zero + x is not x
       for x = -0 and cost one scalar addition per broadcast (half the backward's instructions at n = 8) */
    return x - zero;
}

static inline vr sel(vi m, vr a, vr b)  /* a where m, else b */
{
    return (vr)(((vi)a & m) | ((vi)b & ~m));
}

static inline vr load(const real_t *p)
{
    vr v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* e^x lane by lane: 2^k times the Taylor polynomial of e^r, r = x - k ln 2 (geoattn/codegen/symattn_c.py) */
static inline __attribute__((always_inline)) vr vexp(vr x)
{
    vi low = x < splat(EXP_LOW), high = x > splat(EXP_HIGH);
    x = sel(low, splat(EXP_LOW), sel(high, splat(EXP_HIGH), x));  /* NaN compares false: it stays */
    vr kf = (x * splat(LOG2E) + splat(ROUND_MAGIC)) - splat(ROUND_MAGIC);
    vr r = (x - kf * splat(LN2_HI)) - kf * splat(LN2_LO);
    vr p = splat(EXP_C[EXP_DEG]);
    for (int q = EXP_DEG - 1; q >= 0; q--) p = p * r + splat(EXP_C[q]);
    vi k = __builtin_convertvector(kf, vi);
    vr scale = (vr)((k + (int_t)BIAS) << MANT);
    vr y = p@SCALE@;
    y = sel(low, splat(0), y);
    return sel(high, splat(INFINITY), y);
}

/* a = z A (row-major, T x N) and its transpose aT (N x TP, the padding rows zero); zT likewise when asked */
static void prepare(int64_t T, int64_t TP, const real_t *z, const real_t *A, real_t *a, real_t *aT)
{
    for (int64_t i = 0; i < T; i++) {
        for (int k = 0; k < N; k++) {
            real_t s = 0;
            for (int l = 0; l < N; l++) s += z[i * N + l] * A[l * N + k];
            a[i * N + k] = s;
            aT[k * TP + i] = s;
        }
    }
    for (int k = 0; k < N; k++)
        for (int64_t i = T; i < TP; i++) aT[k * TP + i] = 0;
}

static void transpose(int64_t T, int64_t TP, const real_t *x, real_t *xT)
{
    for (int64_t i = 0; i < T; i++)
        for (int k = 0; k < N; k++) xT[k * TP + i] = x[i * N + k];
    for (int k = 0; k < N; k++)
        for (int64_t i = T; i < TP; i++) xT[k * TP + i] = 0;
}

/* U (B x T x N) = 2 G a and L (B) = log(one + sum_ij e^{C_ij}), per sample, C = a z^T, a = z A, A symmetric;
   returns 1 when its buffers could not be allocated (the loader raises), 0 otherwise */
int GEOATTN_NAME(symattn_fwd)(int64_t B, int64_t T, const real_t *zs, const real_t *A, const double *one,
                               real_t *Us, double *Ls)
{
    int64_t TP = (T + VL - 1) / VL * VL;
    real_t *a = malloc(sizeof(real_t) * (size_t)(T * N + N * TP + T * VL));
    double *ml = malloc(sizeof(double) * (size_t)(2 * T));
    if (a == NULL || ml == NULL) {
        free(a);
        free(ml);
        return 1;
    }
    real_t *aT = a + T * N, *buf = aT + N * TP;
    for (int64_t b = 0; b < B; b++) {
        const real_t *z = zs + b * T * N;
        real_t *U = Us + b * T * N;
        prepare(T, TP, z, A, a, aT);
        for (int64_t ib = 0; ib < TP; ib += VL) {
            vr aI[N];
            #pragma GCC unroll 16
            for (int k = 0; k < N; k++) aI[k] = load(aT + k * TP + ib);
            vr m = splat(-INFINITY);
            for (int64_t j = 0; j < T; j++) {
                vr s = aI[0] * splat(z[j * N]);
                #pragma GCC unroll 16
                for (int k = 1; k < N; k++) s += aI[k] * splat(z[j * N + k]);
                memcpy(buf + j * VL, &s, sizeof s);
                m = sel(s > m, s, m);
            }
            vr l = splat(0), acc[N];
            #pragma GCC unroll 16
            for (int k = 0; k < N; k++) acc[k] = splat(0);
            for (int64_t j = 0; j < T; j++) {
                vr e = vexp(load(buf + j * VL) - m);
                l += e;
                #pragma GCC unroll 16
                for (int k = 0; k < N; k++) acc[k] += e * splat(a[j * N + k]);
            }
            for (int q = 0; q < VL && ib + q < T; q++) {
                ml[ib + q] = m[q];
                ml[T + ib + q] = l[q];
                for (int k = 0; k < N; k++) U[(ib + q) * N + k] = acc[k][q];
            }
        }
        double M = -INFINITY, S = 0;
        for (int64_t i = 0; i < T; i++) M = (ml[i] > M || ml[i] != ml[i]) ? ml[i] : M;
        for (int64_t i = 0; i < T; i++) S += exp(ml[i] - M) * ml[T + i];
        double L = M + log(S);
        if (*one != 0) L = L > 0 ? L + log1p(exp(-L)) : log1p(exp(L));
        for (int64_t i = 0; i < T; i++) {
            double w = 2 * exp(ml[i] - L);
            for (int k = 0; k < N; k++) U[i * N + k] = (real_t)(w * U[i * N + k]);
        }
        Ls[b] = L;
    }
    free(a);
    free(ml);
    return 0;
}

/* h and y = (dC'^T a) of Note [native symplectic attention] for the incoming gradient V of the update, per sample:
   h_i = sum_j G_ij (V_j + (V_i . a_j - s) z_j), y_i = sum_j G_ij (a_i . V_j - s) a_j, s = (1/2) sum_i V_i . U_i;
   returns 1 when its buffer could not be allocated (the loader raises), 0 otherwise */
int GEOATTN_NAME(symattn_bwd)(int64_t B, int64_t T, const real_t *zs, const real_t *A, const real_t *Vs,
                               const real_t *Us, const double *Ls, real_t *hs, real_t *ys)
{
    int64_t TP = (T + VL - 1) / VL * VL;
    real_t *a = malloc(sizeof(real_t) * (size_t)(T * N + 2 * N * TP + 3 * T * VL));
    if (a == NULL) return 1;
    real_t *aT = a + T * N, *VT = aT + N * TP, *buf = VT + N * TP;
    for (int64_t b = 0; b < B; b++) {
        const real_t *z = zs + b * T * N, *V = Vs + b * T * N, *U = Us + b * T * N;
        real_t *h = hs + b * T * N, *y = ys + b * T * N;
        double s2 = 0;
        for (int64_t x = 0; x < T * N; x++) s2 += (double)V[x] * (double)U[x];
        vr sv = splat((real_t)(0.5 * s2)@SHIFT@), Lv = splat((real_t)Ls[b]);
        prepare(T, TP, z, A, a, aT);
        transpose(T, TP, V, VT);
        for (int64_t ib = 0; ib < TP; ib += VL) {
            /* two passes over the columns keep each pass's vectors in registers: the weights, then the sums */
            vr aI[N], VI[N];
            for (int k = 0; k < N; k++) {
                aI[k] = load(aT + k * TP + ib);
                VI[k] = load(VT + k * TP + ib);
            }
            for (int64_t j = 0; j < T; j++) {
                const real_t *zj = z + j * N, *aj = a + j * N, *Vj = V + j * N;
                vr c = aI[0] * splat(zj[0]), t1 = VI[0] * splat(aj[0]), t2 = aI[0] * splat(Vj[0]);
                for (int k = 1; k < N; k++) {
                    c += aI[k] * splat(zj[k]);
                    t1 += VI[k] * splat(aj[k]);
                    t2 += aI[k] * splat(Vj[k]);
                }
                vr g = vexp(c - Lv);
                vr g1 = g * (t1 - sv), g2 = g * (t2 - sv);
                memcpy(buf + 3 * j * VL, &g, sizeof g);
                memcpy(buf + (3 * j + 1) * VL, &g1, sizeof g);
                memcpy(buf + (3 * j + 2) * VL, &g2, sizeof g);
            }
            vr hI[N], yI[N];
            for (int k = 0; k < N; k++) hI[k] = yI[k] = splat(0);
            for (int64_t j = 0; j < T; j++) {
                const real_t *zj = z + j * N, *aj = a + j * N, *Vj = V + j * N;
                vr g = load(buf + 3 * j * VL), g1 = load(buf + (3 * j + 1) * VL), g2 = load(buf + (3 * j + 2) * VL);
                for (int k = 0; k < N; k++) {
                    hI[k] += g * splat(Vj[k]);  /* two multiply-adds, not a product, a multiply-add, a sum */
                    hI[k] += g1 * splat(zj[k]);
                    yI[k] += g2 * splat(aj[k]);
                }
            }
            for (int q = 0; q < VL && ib + q < T; q++) {
                for (int k = 0; k < N; k++) {
                    h[(ib + q) * N + k] = hI[k][q];
                    y[(ib + q) * N + k] = yI[k][q];
                }
            }
        }
    }
    free(a);
    return 0;
}
"""


def generate_symattn_module(broken: str | None = None) -> str:
    """The text of ``_native_symattn.c`` (``broken``: one of :data:`BROKEN`, a deliberately wrong kernel)."""
    if broken is not None and broken not in BROKEN:
        raise ValueError(f"Expected broken in {BROKEN} or None. Got {broken!r}.")
    head = HEADER.format(top=MAX_N, claims=", ".join(_CLAIMS), prelude=REAL_PRELUDE)
    body = TEMPLATE
    body = body.replace("@COEFFICIENTS@", _coefficient_lines())
    body = body.replace("@SCALE@", "" if broken == "exp_scale" else " * scale")  # e^r without its 2^k
    body = body.replace("@SHIFT@", " + (real_t)0.25" if broken == "vjp_shift" else "")
    for real in DEGREE:
        tag = real[1:]
        body = body.replace(f"@LOW{tag}@", repr(EXP_LOW[real])).replace(f"@HIGH{tag}@", repr(EXP_HIGH[real]))
    return head + f"#if GEOATTN_D >= 1 && GEOATTN_D <= {MAX_N}\n" + body + "#endif\n"
