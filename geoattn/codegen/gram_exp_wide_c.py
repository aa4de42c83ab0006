r"""The C source of the exponential layer's ``d x d`` stage for ``17 <= d <= 64``: the batched Taylor exponential
of :mod:`geoattn.kernels._taylor_exp` one sample at a time.

The stage computes, per sample and in double, exactly the steps of Note [batched Taylor exponential]: the powers
:math:`X^2, X^3, X^4` of :math:`X = 2^{-s}M`, the Paterson--Stockmeyer blocks :math:`B_j = \sum_{i<4} c_{4j+i}X^i`
and the Horner steps :math:`S_j = S_{j+1}X^4 + B_j`, then ``s`` squarings (ledger ``vp.gram_exp_native_truncation``),
and the backward the reverse mode of those steps (ledger ``vp.gram_exp_native_reverse``). The caller chooses ``s``
per sample (the same rule as the batched form: :func:`geoattn.kernels._taylor_exp.shifts`), so the two forms run the
same operations on the same numbers; only the order of the additions inside a product may differ.

Note [wide exponential stage]
-----------------------------
The batched form spends about 40 % of its time outside the products: the scaled additions of the blocks, the
copies and the transposed operands each make a pass over ``n d^2`` doubles, far out of the cache at
``n = 1024, d = 32``. Here every ``d x d`` matrix of a sample is a row-padded array (rows of ``DP``, a multiple of
eight doubles, zero past column ``d``) in a record of ``9 + s`` matrices (the powers, the Horner iterates, the
squarings' results) that one scratch holds for one sample at a time, so a sample's work stays in the cache. The
backward recomputes its sample's record before the reverse mode (``7 + s`` products more than storing it): storing
it measured slower, the forward writing ``(9 + s) d^2`` doubles per sample (142 MB at ``n = 1024, d = 32``, about
80 % of its time, most of it the first touch of fresh memory). Products accumulate blocks of rows in vector
registers (eight doubles with AVX-512, four with AVX2), with fused multiply-adds (stage alone, d = 32, n = 1024, s = 7 or 8, one thread: about
13 ms forward and 48 ms backward on a quiet moment of a shared machine, near 70 GFLOP/s in the forward's
products). ``negate_backward`` prints a deliberately wrong backward (the transpose dropped from the squarings'
adjoint) for the tests' negative control. The last Paterson--Stockmeyer block is :math:`c_{16}I` (degree 16), so its
Horner step is a scaled addition and its reverse mode two products fewer: the same fused multiply-adds as the product
with :math:`c_{16}I`, whose other terms are exact zeros.

Note [fused wide exponential]
-----------------------------
Up to ``d = 32`` (``FUSED_MAX_DIM`` of :mod:`geoattn.kernels._native_exp_wide`) and for one shared ``A`` the token
products run in the same C call as the stage, one sample at a time (:mod:`geoattn.codegen._gram_exp_wide_fused`,
over the token products of :mod:`geoattn.codegen._gram_lu_big_tokens`), as the wide Cayley route does; no float64
copy of the tokens is made. Forward: ``G = x^Tx`` accumulated in double from the tokens (float32 squares and
products are exact in double), the scale bound :math:`\mathrm{Tr}\,G\,\|A_s\|_F \le` ``GRAM_MAX_SCALE``,
``M = -A_sG``, the shift (the rule of :func:`geoattn.kernels._taylor_exp.shifts`), the exponential, the structure
check :math:`\max|E^TGE - G| \le` ``d eps / 16`` :math:`\mathrm{Tr}\,G` in double, and ``y = xE`` with ``E``
rounded to float32 and the sum in float32 (sixteen lanes). Backward: ``G``, ``M`` and the record recomputed from
the tokens (bit for bit the forward's: the same operations in the same order), :math:`\bar E = x^T\bar y` in
float32, the reverse mode in double, :math:`\bar x = \bar yE^T + x(\bar G + \bar G^T)` in float32, and
:math:`-\bar MG` summed over the call's samples in double.

The float32 products' error, per entry, with :math:`u = 2^{-24}` and ``k`` the length of the sum (``k = d`` for
``y`` and :math:`\bar x`'s two products, ``k = T`` for :math:`\bar E`): rounding ``E`` to float32 adds :math:`u|x||E|`
and the sum :math:`\gamma_k|x||E|` (:math:`\gamma_k = ku/(1 - ku)`), so
:math:`|\hat y - xE| \le \gamma_{d+1}|x||E|` entrywise. For invertible ``G``, :math:`E^TGE = G` makes
:math:`G^{1/2}EG^{-1/2}` orthogonal, so :math:`\|E\|_2 \le \mathrm{cond}(G)^{1/2}`: for well-spread tokens the
bound is a few units of float32 rounding of each column's norm; the layer's tests hold the fused result to the
same ``8 T eps32`` of each column's norm as the float64
path (:func:`conftest.assert_layer_matches_full64`); :math:`\bar E` is within :math:`\gamma_T|x|^T|\bar y|`, a
relative float32 rounding of the incoming gradient's product. The structure check, the shift and the decision to
keep a sample stay in double, so every per-sample decision is the unfused path's up to the order of additions in
``G``.

Measured (one thread, float32, B*T = 65,536 unit-normal tokens, default-initialised
``VolumePreservingAttention(32, activation="exp")``, T = 64, forward+backward, thread CPU time on a shared machine):
the fused forward about 20 ms and backward about 50 ms, all but 2 ms of the layer's 79 ms; the C stage with the token
products in torch 2.3 to 2.5 times SDPA, the fused kernels 1.3 to 1.5 times (benchmarks/results/exp-wide-ab-cpu.txt).
The backward recomputes its record: with the forward storing each sample's squarings (``s d^2`` doubles a sample)
into one buffer allocated once and reused, and the backward reading them instead of its ``s`` squarings, the same
run measured the forward 33.7 ms against 24.2 ms and the backward 64.3 ms against 57.2 ms (thread CPU time, d = 32,
T = 64, ``s`` up to 8, the same gradients bit for bit): the stored matrices (67 MB) cost more to write and read back
than the products they save, even without page faults.
"""

from __future__ import annotations

import math

from ._gram_exp_wide_fused import FUSED
from ._gram_lu_big_tokens import TOKENS
from .cprinter import VECTOR_PRELUDE

__all__ = ["MIN_DIM", "MAX_DIM", "SLOTS", "generate_gram_exp_wide_module", "target_name"]

#: the widths the stage is built for
MIN_DIM, MAX_DIM = 17, 64
#: the matrices of a sample's record before its squarings: the four powers and the five Horner iterates
SLOTS = 9

_HEADER = """/* The d x d stage of the exponential layer's Gram form for {lo} <= d <= {hi}, per sample, in double.
   Generated by geoattn.codegen.gram_exp_wide_c ({target}); do not edit.
   Ledger: vp.gram_exp_native_truncation, vp.gram_exp_native_reverse. */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef GEOATTN_D
#error "GEOATTN_D must be defined"
#endif
#define D GEOATTN_D
#if defined(GEOATTN_F32)
typedef float real_t;  /* the tokens' type of the fused kernels; the stage is double throughout */
#define REAL f32
#else
typedef double real_t;
#define REAL f64
#endif
#define CAT_(a, b, c) a##_d##b##_##c
#define CAT(a, b, c) CAT_(a, b, c)
#define FN(name) CAT(geoattn_##name, D, REAL)
"""

_BODY = r"""
/* products and scaled additions as fused multiply-adds (one rounding each; never fast-math: NaN must propagate) */
#pragma GCC optimize ("fp-contract=fast")
#define VW (GEOATTN_VBYTES / 8)
#define NV ((D + VW - 1) / VW)
#define DP (VW * NV)
#define MS (D * DP)
#define RB (GEOATTN_VREGS >= 32 ? (NV <= 4 ? 4 : 2) : (NV <= 2 ? 4 : NV <= 4 ? 2 : 1))
typedef double vd __attribute__((vector_size(GEOATTN_VBYTES), may_alias));
typedef double mat[D][DP] __attribute__((aligned(64)));
#define THETA_ {THETA}
#define SMAX_ {SMAX}
#define ROW(M, i) ((vd *)((M) + (i) * DP))
#define UNROLL _Pragma("GCC unroll 8")

static const double COEF[20] = {COEFS};
/* the last block S_4 is c_16 I (degree 16: c_17 = c_18 = c_19 = 0), so S_3 = S_4 X^4 + B_3 is B_3 + c_16 X^4 */
#define TOP_SCALAR (COEF[17] == 0.0 && COEF[18] == 0.0 && COEF[19] == 0.0)

/* C = X Y, or C += X Y when add; C is neither X nor Y. Blocks of RB rows of C in vector accumulators, then the
   rows left one at a time. */
/* the vectors of a row of C per pass over k: the whole row where its NV sums and a broadcast fit in the registers,
   else half of it (d > 56 with 16 registers); the sum of each entry runs over k in the same order either way */
#define CB (NV + 2 <= GEOATTN_VREGS ? NV : (NV + 1) / 2)
#define SPLIT (CB < NV)

static void mul(const double *restrict X, const double *restrict Y, double *restrict C, int add)
{
    int i = 0;
    for (; RB > 1 && !SPLIT && i + RB <= D; i += RB) {
        vd acc[RB][NV];
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++)
            acc[r][v] = add ? ROW(C, i + r)[v] : (vd){0};
        for (int k = 0; k < D; k++) {
            vd y[NV];
            UNROLL for (int v = 0; v < NV; v++) y[v] = ROW(Y, k)[v];
            UNROLL for (int r = 0; r < RB; r++) {
                const double a = X[(i + r) * DP + k];
                UNROLL for (int v = 0; v < NV; v++) acc[r][v] += a * y[v];
            }
        }
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) ROW(C, i + r)[v] = acc[r][v];
    }
    for (; (RB == 1 || SPLIT || D % RB) && i < D; i++) {
        UNROLL for (int c0 = 0; c0 < NV; c0 += CB) {
            vd acc[CB];
            UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) acc[v] = add ? ROW(C, i)[c0 + v] : (vd){0};
            for (int k = 0; k < D; k++) {
                const double a = X[i * DP + k];
                UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) acc[v] += a * ROW(Y, k)[c0 + v];
            }
            UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) ROW(C, i)[c0 + v] = acc[v];
        }
    }
}

/* B = X^T (padded) */
static void transpose(const double *restrict X, double *restrict B)
{
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) B[i * DP + j] = X[j * DP + i];
        for (int j = D; j < DP; j++) B[i * DP + j] = 0.0;
    }
}

/* dense D x D (row-major) times c into padded Z */
static void load(const double *restrict S, double c, double *restrict Z)
{
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) Z[i * DP + j] = c * S[i * D + j];
        for (int j = D; j < DP; j++) Z[i * DP + j] = 0.0;
    }
}

static void store(const double *restrict Z, double c, double *restrict S)
{
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) S[i * D + j] = c * Z[i * DP + j];
}

/* Z += c Y (padded) */
static void axpy(double c, const double *restrict Y, double *restrict Z)
{
    for (int i = 0; i < D; i++) UNROLL for (int v = 0; v < NV; v++) ROW(Z, i)[v] += c * ROW(Y, i)[v];
}

/* One sample: M (D x D) scaled by 2^-s; the record rec (SLOTS + s padded matrices: X, X^2, X^3, X^4, S_0 .. S_4,
   then the squarings' results); returns the last of S_0 and the squarings, exp(M) */
static const double *powers_and_squarings(int s, double *restrict rec);

static const double *forward_one(const double *restrict M, int s, double *restrict rec)
{
    load(M, ldexp(1.0, -s), rec);
    return powers_and_squarings(s, rec);
}

/* the record from its first matrix X = 2^-s M (already in rec); returns exp(M) */
static const double *powers_and_squarings(int s, double *restrict rec)
{
    double *P = rec, *H = rec + 4 * MS;
    for (int k = 1; k < 4; k++) mul(P + (k - 1) * MS, P, P + k * MS, 0);
    for (int j = 0; j < 5; j++) {
        double *Hj = H + j * MS;
        memset(Hj, 0, sizeof(double) * MS);
        for (int i = 1; i < 4; i++) if (COEF[4 * j + i] != 0.0) axpy(COEF[4 * j + i], P + (i - 1) * MS, Hj);
        for (int i = 0; i < D; i++) Hj[i * DP + i] += COEF[4 * j];
    }
    for (int j = 3; j >= 0; j--) {
        if (j == 3 && TOP_SCALAR) axpy(COEF[16], P + 3 * MS, H + 3 * MS);  /* S_4 = c_16 I: the same FMAs */
        else mul(H + (j + 1) * MS, P + 3 * MS, H + j * MS, 1);
    }
    const double *Y = H;
    for (int k = 0; k < s; k++) {
        double *Z = rec + (SLOTS + k) * MS;
        mul(Y, Y, Z, 0);
        Y = Z;
    }
    return Y;
}

/* Per sample b: E[b] = exp(M[b]) with s[b] squarings (the record in one scratch reused by every sample: it stays in
   the cache). Returns 1 when the scratch could not be allocated. */
int FN(vp_gram_exp_wide_fwd)(int64_t n, int64_t smax, const double *M, const int32_t *s, double *E)
{
    double *rec = NULL;
    if (posix_memalign((void **)&rec, 64, sizeof(double) * (SLOTS + smax) * MS)) return 1;
    for (int64_t b = 0; b < n; b++) store(forward_one(M + b * D * D, s[b], rec), 1.0, E + b * D * D);
    free(rec);
    return 0;
}

/* The reverse mode of one sample's record rec (s squarings) from Ebar in gY (padded, overwritten); work holds six
   matrices; gM = 2^-s Mbar (padded). */
static void reverse_one(const double *restrict rec, int s, double *gY, double *restrict work, double *restrict gM)
{
    double *tmp = work, *tr = work + MS, *gP = work + 2 * MS;
    const double *P = rec, *H = rec + 4 * MS;
    for (int k = s - 1; k >= 0; k--) {
        const double *Yk = k ? rec + (SLOTS + k - 1) * MS : H;
        transpose(Yk, tr);
        mul(gY, SQUARE_RIGHT, tmp, 0);
        mul(tr, gY, tmp, 1);
        double *t = gY; gY = tmp; tmp = t;
    }
    for (int j = 0; j < 5; j++) {
        for (int i = 1; i < 4; i++) {
            double *g = gP + (i - 1) * MS;
            if (j == 0) { memset(g, 0, sizeof(double) * MS); }
            if (COEF[4 * j + i] != 0.0) axpy(COEF[4 * j + i], gY, g);
        }
        if (j == 4) break;
        if (j == 0) memset(gP + 3 * MS, 0, sizeof(double) * MS);
        if (j == 3 && TOP_SCALAR) {  /* S_4 = c_16 I: its gradient reaches nothing else */
            axpy(COEF[16], gY, gP + 3 * MS);
            break;
        }
        transpose(H + (j + 1) * MS, tr);
        mul(tr, gY, gP + 3 * MS, 1);
        transpose(P + 3 * MS, tr);
        mul(gY, tr, tmp, 0);
        double *t = gY; gY = tmp; tmp = t;
    }
    transpose(P, tr);
    for (int k = 3; k >= 1; k--) {
        mul(gP + k * MS, tr, gP + (k - 1) * MS, 1);
        transpose(P + (k - 1) * MS, tmp);
        mul(tmp, gP + k * MS, gP, 1);
    }
    const double c = ldexp(1.0, -s);
    for (int i = 0; i < D; i++) UNROLL for (int v = 0; v < NV; v++) ROW(gM, i)[v] = c * ROW(gP, i)[v];
}

/* Per sample b: gM[b] from gE[b], the forward recomputed into a scratch record, then the reverse mode of its steps.
   Returns 1 when the scratch could not be allocated. */
int FN(vp_gram_exp_wide_bwd)(int64_t n, int64_t smax, const double *M, const int32_t *s, const double *gE,
                             double *gM)
{
    double *w = NULL;
    if (posix_memalign((void **)&w, 64, sizeof(double) * (8 + SLOTS + smax) * MS)) return 1;
    double *gY = w, *out = w + MS, *work = w + 2 * MS, *rec = w + 8 * MS;
    for (int64_t b = 0; b < n; b++) {
        forward_one(M + b * D * D, s[b], rec);
        load(gE + b * D * D, 1.0, gY);
        reverse_one(rec, s[b], gY, work, out);
        store(out, 1.0, gM + b * D * D);
    }
    free(w);
    return 0;
}
"""


def target_name() -> str:
    """The generated file's name in ``geoattn/kernels``."""
    return "_native_gram_exp_wide.c"


def generate_gram_exp_wide_module(negate_backward: bool = False, fault_check: bool = False) -> str:
    """The C source of the wide exponential stage (Note [wide exponential stage]).

    Parameters
    ----------
    negate_backward : bool
        print the squarings' adjoint as :math:`\\bar YX + X^T\\bar Y` (a deliberately wrong backward, for the tests'
        negative control)
    fault_check : bool
        print the fused forward's structure check with :math:`EGE` in place of :math:`E^TGE` (its negative control)

    Returns
    -------
    str
    """
    from ..kernels._taylor_exp import BLOCKS, DEGREE, SMAX, THETA
    coefs = [1.0 / math.factorial(k) if k <= DEGREE else 0.0 for k in range(5 * BLOCKS)]
    rows = [", ".join(repr(c) for c in coefs[k:k + 4]) for k in range(0, len(coefs), 4)]
    body = _BODY.replace("{COEFS}", "{\n    " + ",\n    ".join(rows) + "\n}")
    body = body.replace("{THETA}", repr(THETA)).replace("{SMAX}", str(SMAX)) + TOKENS + FUSED
    if fault_check:
        body = body.replace("transpose(E, tr);\n        mul(tr, W, R, 0);", "mul(E, W, R, 0);")
    body = body.replace("SQUARE_RIGHT", "Yk" if negate_backward else "tr").replace("SLOTS", str(SLOTS))
    return _HEADER.format(lo=MIN_DIM, hi=MAX_DIM, target=target_name()) + VECTOR_PRELUDE + "\n" + body
