r"""The C source of the Gram form's ``d x d`` stage for ``17 <= d <= 64``, one sample at a time.

Past ``d = 32`` (``FUSED_MAX_DIM`` of :mod:`geoattn.kernels._native_lu_big`) the token products (``Gram = x^T x``,
``y = xP``, ``Pbar = x^T\bar y``, ``gx = \bar yP^T + xH``) are batched products of matrices large enough for
torch's ``bmm``; up to it they run in C in the same call as the stage, one sample at a time. What is left for C
is the per-sample ``d x d`` work that a batched LAPACK call does slowly (one small factorisation per call, with its
overhead):

* forward (``vp_gram_lu_big_fwd``): the Cholesky factor ``L`` of ``Gram`` (a column set to zero where its pivot is
  not positive), ``V = AL``, the skew ``K = L^TV``, the LU factors of ``I - K`` without pivoting (every pivot is at
  least 1: its symmetric part is ``I``), ``N = I + V(I - K)^{-1}L^T`` (ledger ``vp.gram_lu_woodbury``), ``P = 2N - I``
  and an upper bound on the largest entry of the residual :math:`R = (I + GA)^TN - I`: a first-order a posteriori
  bound from the steps' backward errors (``14 d^2``, ledger ``vp.gram_lu_residual_bound``), where that exceeds the
  token type's tolerance (``eps / 16``, as :func:`geoattn.kernels._gram.residual_tolerance`) a second one from the
  measured error of the solve (``d^3 / 2``, ``vp.gram_lu_measured_bound``; both in
  :mod:`geoattn.codegen._gram_lu_big_bound`), and never less than :math:`\max|RV|` on eight fixed sign vectors
  (``V`` from :func:`probe_signs`, ``vp.gram_probe_residual``: a guard against a departure of the code from the
  analysed steps, which the bounds trust); a sample whose value exceeds the tolerance or is NaN is recomputed by an
  LU with partial pivoting of :math:`M^T = I - AG`, whose ``N`` and full residual (``2 d^3``; at least the probes')
  it returns;
* backward (``vp_gram_lu_big_bwd``): :math:`\bar M = -2N\bar P^TN`, :math:`H = A\bar M^T - \bar MA`, the
  per-sample :math:`G\bar M` and ``P = 2N - I`` (ledger ``vp.gram_lu_vjp``).

Every matrix is row-major ``D x D`` double; every product runs over rows, its innermost loop along a row of fixed
length ``D`` (a compile-time constant), which the compiler vectorises. ``D`` is the compiler's ``-DGEOATTN_D``: one
text serves every width. ``fault_fast`` prints ``I + K`` in place of ``I - K`` and ``retry=False`` leaves the
pivoted recomputation out; ``negate_backward`` flips the sign of :math:`\bar M` (the tests' negative controls).
"""

from __future__ import annotations

import random

from ._gram_lu_big_bound import BOUND
from ._gram_lu_big_entries import ENTRIES
from ._gram_lu_big_tokens import TOKENS

__all__ = ["MIN_DIM", "MAX_DIM", "PROBE_SEED", "probe_signs", "generate_gram_lu_big_module", "target_name"]

#: the widths the stage serves: past the printed LU kernels' ``d <= 16``, up to 64
MIN_DIM, MAX_DIM = 17, 64
#: the seed of the residual check's table of signs (``probe_signs``)
PROBE_SEED = 20240917

HEADER = """/* The d x d stage of the Gram form y = 2 x (I + x^T x A)^{{-T}} - x for {lo} <= d <= {hi}, per sample.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/gram_lu_big_c.py); `geoattn codegen
   --check` fails when it is stale. N = M^{{-T}}, M = I + Gram A, by Cholesky and an unpivoted LU of I - K
   (K = L^T A L skew), the residual, an LU with partial pivoting for the samples it fails, and the backward's
   products [ledger: vp.gram_form, vp.gram_lu_woodbury, vp.gram_lu_vjp]. Compiled at first use by
   geoattn.kernels._native_lu_big, one library per d and real type (-DGEOATTN_D=<d> -DGEOATTN_F32 or
   -DGEOATTN_F64); never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#if !defined(GEOATTN_D) || GEOATTN_D < {lo} || GEOATTN_D > {hi}
#error "compile with -DGEOATTN_D=<d>, {lo} <= d <= {hi}"
#endif
#define D GEOATTN_D
#define KSIGN {ksign}
#define RETRY {retry}
#define BOUND_ONLY {bound_only}
#ifndef FIRST_BOUND
#define FIRST_BOUND {first_bound}
#endif
#define MBAR_SCALE ({sign}2.0)
#if defined(GEOATTN_F32)
typedef float real_t;
#define NAME3(a, b) geoattn_##a##_d##b##_f32
#elif defined(GEOATTN_F64)
typedef double real_t;
#define NAME3(a, b) geoattn_##a##_d##b##_f64
#else
#error "compile with -DGEOATTN_F32 or -DGEOATTN_F64"
#endif
#define NAME2(a, b) NAME3(a, b)
#define NAME(a) NAME2(a, D)
#if defined(__GNUC__) && !defined(__clang__)
/* a*b + c as one fused multiply-add where the CPU has one (a rounding less, never a reassociation) */
#pragma GCC optimize ("fp-contract=fast")
#endif
"""

BODY = r"""
/* Every d x d matrix of the stage lives in a local array of D rows padded to DP = 8 NV doubles (zero past column D),
   read and written a row at a time as NV vectors of eight doubles; rows of products are accumulated in registers. */
#define NV ((D + 7) / 8)
#define DP (8 * NV)
#define RB (NV <= 4 ? 4 : 2)  /* rows of a product per block: 16 vector accumulators */
typedef double vd __attribute__((vector_size(64), may_alias));
typedef long long vl __attribute__((vector_size(64), may_alias));
typedef double mat[D][DP] __attribute__((aligned(64)));
#define V(M, i) ((vd *)(M)[i])
#define UNROLL _Pragma("GCC unroll 8")
{probe}
/* S (D x D, row-major) into M, zero padded; transposed when t */
static void load(const double *restrict S, int t, mat M)
{
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) M[i][j] = t ? S[j*D + i] : S[i*D + j];
        for (int j = D; j < DP; j++) M[i][j] = 0.0;
    }
}

static void store(mat M, double *restrict S)
{
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) S[i*D + j] = M[i][j];
}

/* C = X Y (+ C when add) for X of n padded rows, Y a matrix; RB rows of C at a time in vector accumulators; upper
   says X is upper triangular (the sums of a block of rows start at its first row) */
static void mul_n(int n, const double (*restrict X)[DP], mat Y, double (*C)[DP], int add, int upper)
{
    int i = 0;
    for (; i + RB <= n; i += RB) {
        vd acc[RB][NV];
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) acc[r][v] = add ? V(C, i + r)[v]
                                                                                                   : (vd){0};
        for (int k = upper ? i : 0; k < D; k++) {
            vd y[NV];
            UNROLL for (int v = 0; v < NV; v++) y[v] = V(Y, k)[v];
            UNROLL for (int r = 0; r < RB; r++) {
                const double a = X[i + r][k];
                UNROLL for (int v = 0; v < NV; v++) acc[r][v] += a*y[v];
            }
        }
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) V(C, i + r)[v] = acc[r][v];
    }
    for (; i < n; i++) {
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = add ? V(C, i)[v] : (vd){0};
        for (int k = upper ? i : 0; k < D; k++) {
            const double a = X[i][k];
            UNROLL for (int v = 0; v < NV; v++) acc[v] += a*V(Y, k)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) V(C, i)[v] = acc[v];
    }
}

static void mul(mat X, mat Y, mat C)
{
    mul_n(D, (const double (*)[DP])X, Y, C, 0, 0);
}

/* C = X^T Y for X and Y of n padded rows (the Gram matrix and Pbar: sums over the tokens) */
static void mul_tn(int n, const double (*X)[DP], const double (*Y)[DP], mat C)
{
    int i = 0;
    for (; i + RB <= D; i += RB) {
        vd acc[RB][NV];
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) acc[r][v] = (vd){0};
        for (int t = 0; t < n; t++) {
            vd y[NV];
            UNROLL for (int v = 0; v < NV; v++) y[v] = V(Y, t)[v];
            UNROLL for (int r = 0; r < RB; r++) {
                const double a = X[t][i + r];
                UNROLL for (int v = 0; v < NV; v++) acc[r][v] += a*y[v];
            }
        }
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) V(C, i + r)[v] = acc[r][v];
    }
    for (; i < D; i++) {
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = (vd){0};
        for (int t = 0; t < n; t++) {
            const double a = X[t][i];
            UNROLL for (int v = 0; v < NV; v++) acc[v] += a*V(Y, t)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) V(C, i)[v] = acc[v];
    }
}

/* n padded rows aligned to 64 bytes from malloc (C99 has no aligned allocation); *base is what to free */
static double (*rows(int64_t n, void **base))[DP]
{
    *base = malloc(sizeof(double[DP]) * (size_t)n + 64);
    if (*base == NULL) return NULL;
    return (double (*)[DP])(((uintptr_t)*base + 63) & ~(uintptr_t)63);
}

/* the n x D tokens at S into n padded double rows */
static void load_tokens(const real_t *restrict S, int n, double (*restrict X)[DP])
{
    for (int t = 0; t < n; t++) {
        for (int j = 0; j < D; j++) X[t][j] = S[t*D + j];
        for (int j = D; j < DP; j++) X[t][j] = 0.0;
    }
}

/* y = M x for eight vectors at once (x, y of D rows of eight lanes), four rows of y at a time (four independent
   sums); y may be x: every row of y is written after all of x is read (y is kept in a local array first) */
static void matvec(mat M, const vd *x, vd *y)
{
    vd out[D];
    int i = 0;
    for (; i + 4 <= D; i += 4) {
        vd a0 = (vd){0}, a1 = (vd){0}, a2 = (vd){0}, a3 = (vd){0};
        for (int k = 0; k < D; k++) {
            const vd v = x[k];
            a0 += M[i][k]*v; a1 += M[i + 1][k]*v; a2 += M[i + 2][k]*v; a3 += M[i + 3][k]*v;
        }
        out[i] = a0; out[i + 1] = a1; out[i + 2] = a2; out[i + 3] = a3;
    }
    for (; i < D; i++) {
        vd a = (vd){0};
        for (int k = 0; k < D; k++) a += M[i][k]*x[k];
        out[i] = a;
    }
    for (int r = 0; r < D; r++) y[r] = out[r];
}

/* the largest |R V| with R = (I - A G) N - I and V the D x 8 table PROBE of signs, NaN when one entry is (sign bits
   cleared, masks blended): three matrix-vector passes of eight lanes, U = N V, W = A (G U), R V = U - W - V, in place
   of the two d x d products of R itself [ledger: vp.gram_probe_residual] */
static double probe_residual(mat G, mat A, mat N)
{
    vd U[D], W[D];
    matvec(N, (const vd *)PROBE, U);
    matvec(G, U, W);
    matvec(A, W, W);  /* A (G U), in place: matvec reads all of its x before it writes y */
    vd m = (vd){0};
    for (int i = 0; i < D; i++) {
        const vd acc = U[i] - W[i] - PV(i);
        const vd a = (vd)((vl)acc & 0x7fffffffffffffffLL);
        const vl take = (a > m) | (a != a);
        m = (vd)(((vl)a & take) | ((vl)m & ~take));
    }
    double r = 0.0;
    for (int l = 0; l < 8; l++) {
        if (m[l] != m[l]) return m[l];
        if (m[l] > r) r = m[l];
    }
    return r;
}

/* N = MT^{-1} by an LU with partial pivoting (a zero pivot leaves non-finite entries, which the residual sees) */
static void pivoted(mat MT, mat N)
{
    mat U;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < DP; j++) { U[i][j] = MT[i][j]; N[i][j] = i == j ? 1.0 : 0.0; }
    for (int k = 0; k < D; k++) {
        int r = k;
        for (int i = k + 1; i < D; i++) if (fabs(U[i][k]) > fabs(U[r][k])) r = i;
        if (r != k)
            for (int v = 0; v < NV; v++) {
                vd t = V(U, k)[v]; V(U, k)[v] = V(U, r)[v]; V(U, r)[v] = t;
                t = V(N, k)[v]; V(N, k)[v] = V(N, r)[v]; V(N, r)[v] = t;
            }
        const double inv = 1.0/U[k][k];
        for (int i = k + 1; i < D; i++) {
            const double f = U[i][k]*inv;
            for (int j = k + 1; j < D; j++) U[i][j] -= f*U[k][j];
            UNROLL for (int v = 0; v < NV; v++) V(N, i)[v] -= f*V(N, k)[v];
        }
    }
    for (int i = D - 1; i >= 0; i--) {
        for (int k = i + 1; k < D; k++) {
            const double f = U[i][k];
            UNROLL for (int v = 0; v < NV; v++) V(N, i)[v] -= f*V(N, k)[v];
        }
        const double inv = 1.0/U[i][i];
        UNROLL for (int v = 0; v < NV; v++) V(N, i)[v] *= inv;
    }
}

{bound}
/* N = M^{-T} of one sample by the Cholesky-Woodbury form (vp.gram_lu_woodbury), P = 2N - I, the largest entry of
   the residual on the probes; the pivoted form where it exceeds tol or is NaN */
static double factor(mat G, mat A, double tol, mat N, mat P)
{
    mat Z, L, W, Bm, C;  /* L holds L^T A, then the multipliers of the elimination; C = L^T */
    double rinv[D];
    int deficient = 0;
    for (int k = 0; k < D; k++) {  /* Gram = Z^T Z, Z = L^T upper, row k from the rows above it */
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = V(G, k)[v];
        for (int j = 0; j < k; j++) {
            const double f = Z[j][k];
            UNROLL for (int v = 0; v < NV; v++) acc[v] -= f*V(Z, j)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) V(Z, k)[v] = acc[v];
        const double s = Z[k][k];
        deficient |= !(s > 0.0);
        const double q = s > 0.0 ? sqrt(s) : 0.0, r = s > 0.0 ? 1.0/q : 0.0;  /* a zero row where s <= 0 or NaN */
        UNROLL for (int v = 0; v < NV; v++) V(Z, k)[v] *= r;
        for (int j = 0; j < k; j++) Z[k][j] = 0.0;
        Z[k][k] = q;
    }
    mul_n(D, (const double (*)[DP])Z, A, L, 0, 1);  /* L^T A (Z = L^T upper: half the products), in L */
    for (int i = 0; i < D; i++) {  /* W = A L = -(L^T A)^T as A^T = -A */
        for (int j = 0; j < D; j++) W[i][j] = -L[j][i];
        for (int j = D; j < DP; j++) W[i][j] = 0.0;
    }
    mul_n(D, (const double (*)[DP])Z, W, Bm, 0, 1);  /* K = L^T A L (Z = L^T upper); Bm = I - K from K's upper part */
    for (int i = 0; i < D; i++) {
        for (int j = i + 1; j < D; j++) { Bm[i][j] = KSIGN Bm[i][j]; Bm[j][i] = -Bm[i][j]; }
        Bm[i][i] = 1.0;
    }
    /* the elimination of Bm without pivoting (its U in Bm's upper part) applied to Z = L^T at the same time, so Z
       becomes the unit lower factor's solve; right-looking: the updates of the rows below pivot k are independent
       of each other (no chain through one row), each in place */
    for (int i = 0; i < D; i++) UNROLL for (int v = 0; v < NV; v++) V(C, i)[v] = V(Z, i)[v];
    for (int k = 0; k < D; k++) {
        const double rk = 1.0/Bm[k][k];
        rinv[k] = rk;
        for (int i = k + 1; i < D; i++) {
            const double f = Bm[i][k]*rk;
            L[i][k] = f;
            for (int v = k >> 3; v < NV; v++) V(Bm, i)[v] -= f*V(Bm, k)[v];
            UNROLL for (int v = 0; v < NV; v++) V(Z, i)[v] -= f*V(Z, k)[v];
        }
    }
    /* then the upper factor's solve from the last row up, two rows at a time (two independent sums) */
    int i = D - 1;
    for (; i >= 1; i -= 2) {
        vd a0[NV], a1[NV];
        UNROLL for (int v = 0; v < NV; v++) { a0[v] = V(Z, i)[v]; a1[v] = V(Z, i - 1)[v]; }
        for (int k = i + 1; k < D; k++) {
            const double f0 = Bm[i][k], f1 = Bm[i - 1][k];
            UNROLL for (int v = 0; v < NV; v++) { a0[v] -= f0*V(Z, k)[v]; a1[v] -= f1*V(Z, k)[v]; }
        }
        const double f = Bm[i - 1][i];
        UNROLL for (int v = 0; v < NV; v++) {
            a0[v] *= rinv[i];
            V(Z, i)[v] = a0[v];
            V(Z, i - 1)[v] = (a1[v] - f*a0[v])*rinv[i - 1];
        }
    }
    if (i == 0) {
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = V(Z, 0)[v];
        for (int k = 1; k < D; k++) {
            const double f = Bm[0][k];
            UNROLL for (int v = 0; v < NV; v++) acc[v] -= f*V(Z, k)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) V(Z, 0)[v] = acc[v]*rinv[0];
    }
    mul(W, Z, N);  /* N - I */
    for (int i = 0; i < D; i++) N[i][i] += 1.0;
    /* accepted on the first bound (vp.gram_lu_residual_bound, 14 d^2) where it is within tol, else on the second
       (vp.gram_lu_measured_bound, d^3 / 2), else recomputed with pivoting; the probes guard against a departure of
       the code from the analysed steps (the bounds trust them) */
    const double probe = probe_residual(G, A, N);
    double m = FIRST_BOUND ? residual_bound(G, A, C, Z, L, Bm, N, deficient) : INFINITY;
    if (!(m <= tol)) m = measured_bound(G, A, C, Z, N, W, deficient);
#if BOUND_ONLY
    return BOUND_ONLY == 1 ? residual_bound(G, A, C, Z, L, Bm, N, deficient) : m;
#endif
    if (probe != probe || probe > m) m = probe;
#if RETRY
    if (!(m <= tol)) {
        mul(A, G, Bm);  /* M^T = I - A Gram, in Bm */
        for (int i = 0; i < D; i++) {
            UNROLL for (int v = 0; v < NV; v++) V(Bm, i)[v] = -V(Bm, i)[v];
            Bm[i][i] += 1.0;
        }
        pivoted(Bm, N);
        const double pr = probe_residual(G, A, N);
        m = full_residual(G, A, N, W, Bm);
        if (pr != pr || pr > m) m = pr;
    }
#endif
    for (int i = 0; i < D; i++) {
        UNROLL for (int v = 0; v < NV; v++) V(P, i)[v] = 2.0*V(N, i)[v];
        P[i][i] -= 1.0;
    }
    return m;
}

/* the backward's d x d stage: Mbar = -2 N Pbar^T N from PbT = Pbar^T, H = A Mbar^T - Mbar A, gA = Gram Mbar,
   P = 2N - I; PbT is overwritten */
static void vjp(mat G, mat PbT, mat N, mat A, mat P, mat H, mat gA)
{
    mat W, Mb;
    mul(N, PbT, W);  /* W = N Pbar^T */
    mul(W, N, Mb);  /* Mbar = -2 W N */
    for (int i = 0; i < D; i++) UNROLL for (int v = 0; v < NV; v++) V(Mb, i)[v] *= MBAR_SCALE;
    mul(Mb, A, W);  /* K = Mbar A; H = A Mbar^T - Mbar A = -(K + K^T) as A^T = -A */
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) H[i][j] = -(W[i][j] + W[j][i]);
        for (int j = D; j < DP; j++) H[i][j] = 0.0;
    }
    mul(G, Mb, gA);
    for (int i = 0; i < D; i++) {
        UNROLL for (int v = 0; v < NV; v++) V(P, i)[v] = 2.0*V(N, i)[v];
        P[i][i] -= 1.0;
    }
}

"""


def probe_signs() -> list[list[int]]:
    r"""The residual check's probes: ``MAX_DIM`` rows of eight signs :math:`\pm 1` (row ``k`` holds entry ``k`` of
    the eight probe vectors; a width ``d`` uses the first ``d`` rows), drawn once from ``PROBE_SEED``.

    Returns
    -------
    list of list of int
        ``MAX_DIM`` lists of eight entries, each 1 or -1.
    """
    rng = random.Random(PROBE_SEED)
    return [[rng.choice((1, -1)) for _ in range(8)] for _ in range(MAX_DIM)]


def _probe_table() -> str:
    rows = ",\n".join("    {" + ", ".join(f"{v:.1f}" for v in row) + "}" for row in probe_signs())
    return ("/* the residual check's probes: entry k of eight sign vectors in row k (geoattn.codegen.gram_lu_big_c."
            "probe_signs) */\n"
            f"static const double PROBE[{MAX_DIM}][8] __attribute__((aligned(64))) = {{\n{rows}\n}};\n"
            "#define PV(k) (*(const vd *)PROBE[k])\n")


def target_name() -> str:
    """The generated file's name, beside ``_native_gram_lu.c`` in :mod:`geoattn.kernels`."""
    return "_native_gram_lu_big.c"


def generate_gram_lu_big_module(negate_backward: bool = False, fault_fast: bool = False, retry: bool = True,
                                bound_only: int = 0) -> str:
    r"""The C source of the ``d x d`` stage for every ``MIN_DIM <= d <= MAX_DIM`` (the width is the compiler's
    ``-DGEOATTN_D``).

    Parameters
    ----------
    negate_backward : bool
        print :math:`\bar M` with the wrong sign: a broken kernel for the tests' negative control.
    fault_fast : bool
        print ``I + K`` in place of ``I - K`` in the fast forward (``vp.gram_lu_woodbury``'s negative control).
    retry : bool
        recompute with partial pivoting the samples whose fast residual fails (``False`` exposes the fast form).
    bound_only : int
        1: return the first a posteriori bound of the fast form as the residual; 2: the first, else the second;
        no pivoted recomputation (the measurement of how often each bound decides; never for results).

    Returns
    -------
    str
        the C text.
    """
    head = HEADER.format(lo=MIN_DIM, hi=MAX_DIM, ksign="" if fault_fast else "-", retry=int(retry),
                         bound_only=int(bound_only), first_bound=1, sign="" if negate_backward else "-")
    return head + BODY.replace("{probe}", _probe_table()).replace("{bound}", BOUND) + TOKENS + ENTRIES
