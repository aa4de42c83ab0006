r"""The C source of the Gram form's ``d x d`` stage for ``17 <= d <= 64``, one sample at a time.

Past ``d = 32`` (``FUSED_MAX_DIM`` of :mod:`geoattn.kernels._native_lu_big`) the token products (``Gram = x^T x``,
``y = xP``, ``Pbar = x^T\bar y``, ``gx = \bar yP^T + xH``) are batched products of matrices large enough for
torch's ``bmm``; up to it they run in C in the same call as the stage, one sample at a time. What is left for C
is the per-sample ``d x d`` work that a batched LAPACK call does slowly (one small factorisation per call, with its
overhead):

* forward (``vp_gram_lu_big_fwd``): the Cholesky factor ``L`` of ``Gram`` (a column set to zero where its pivot is
  not positive), ``V = AL``, the skew ``K = L^TV``, the LU factors of ``I - K`` without pivoting (every pivot is at
  least 1: its symmetric part is ``I``), ``N = I + V(I - K)^{-1}L^T`` (ledger ``vp.gram_lu_woodbury``), ``P = 2N - I``
  and an upper bound on the largest entry of the residual :math:`R = (I + GA)^TN - I` from the measured error of
  the solve, :math:`X - L^TN` (an upper triangular product, ``d^3 / 2``), and the backward errors of the other steps
  (ledger ``vp.gram_lu_measured_bound``, :mod:`geoattn.codegen._gram_lu_big_bound`); a sample whose bound exceeds
  the token type's tolerance (``eps / 16``, as :func:`geoattn.kernels._gram.residual_tolerance`) or is NaN is
  recomputed by an LU with partial pivoting of :math:`M^T = I - AG`, whose ``N`` and full residual (``2 d^3``) it
  returns;
* backward (``vp_gram_lu_big_bwd``): :math:`\bar M = -2N\bar P^TN`, :math:`H = A\bar M^T - \bar MA`, the
  per-sample :math:`G\bar M` and ``P = 2N - I`` (ledger ``vp.gram_lu_vjp``).

Every matrix is row-major ``D x D`` double; every product runs over rows, its innermost loop along a row of fixed
length ``D`` (a compile-time constant), which the compiler vectorises. ``D`` is the compiler's ``-DGEOATTN_D``: one
text serves every width. ``fault_fast`` prints ``I + K`` in place of ``I - K`` and ``retry=False`` leaves the
pivoted recomputation out (the bound is then returned as it is); ``perturb`` adds a rank-one ``E`` to the
residual; ``negate_backward`` flips the sign of :math:`\bar M` (the tests' negative controls).
"""

from __future__ import annotations

from ._gram_lu_big_bound import BOUND
from ._gram_lu_big_entries import ENTRIES
from ._gram_lu_big_tokens import TOKENS
from .cprinter import VECTOR_PRELUDE

__all__ = ["MIN_DIM", "MAX_DIM", "generate_gram_lu_big_module", "target_name"]

#: the widths the stage serves: past the printed LU kernels' ``d <= 16``, up to 64
MIN_DIM, MAX_DIM = 17, 64

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
#define PERTURB {perturb}
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
{vector}
#if defined(__GNUC__) && !defined(__clang__)
/* a*b + c as one fused multiply-add where the CPU has one (a rounding less, never a reassociation) */
#pragma GCC optimize ("fp-contract=fast")
#endif
"""

BODY = r"""
/* Every d x d matrix of the stage lives in a local array of D rows padded to DP = VW NV doubles (zero past column
   D), read and written a row at a time as NV vectors of VW doubles (one register of the target: 8 with AVX-512, 4 with
   AVX2); rows of products are accumulated in registers. */
#define VW (GEOATTN_VBYTES / 8)
#define NV ((D + VW - 1) / VW)
#define DP (VW * NV)
/* rows of a product per block: (RB + 1) NV vector registers at most (16 accumulators with AVX-512) */
#define RB (GEOATTN_VREGS >= 32 ? (NV <= 4 ? 4 : 2) : (NV <= 2 ? 4 : NV <= 4 ? 2 : 1))
typedef double vd __attribute__((vector_size(GEOATTN_VBYTES), may_alias));
typedef long long vl __attribute__((vector_size(GEOATTN_VBYTES), may_alias));
typedef double mat[D][DP] __attribute__((aligned(64)));
#define V(M, i) ((vd *)(M)[i])
#define UNROLL _Pragma("GCC unroll 8")
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

/* the vectors of a row of C per pass: the whole row where its NV sums and a broadcast fit in the registers, else
   half of it (d > 56 with 16 registers); each entry's sum runs in the same order either way */
#define CB (NV + 2 <= GEOATTN_VREGS ? NV : (NV + 1) / 2)
#define SPLIT (CB < NV)

/* C = X Y (+ C when add) for X of n padded rows, Y a matrix; RB rows of C at a time in vector accumulators; upper
   says X is upper triangular (the sums of a block of rows start at its first row) */
static void mul_n(int n, const double (*restrict X)[DP], mat Y, double (*C)[DP], int add, int upper)
{
    int i = 0;
    for (; RB > 1 && !SPLIT && i + RB <= n; i += RB) {
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
        UNROLL for (int c0 = 0; c0 < NV; c0 += CB) {
            vd acc[CB];
            UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) acc[v] = add ? V(C, i)[c0 + v] : (vd){0};
            for (int k = upper ? i : 0; k < D; k++) {
                const double a = X[i][k];
                UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) acc[v] += a*V(Y, k)[c0 + v];
            }
            UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) V(C, i)[c0 + v] = acc[v];
        }
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
    for (; RB > 1 && !SPLIT && i + RB <= D; i += RB) {
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
        UNROLL for (int c0 = 0; c0 < NV; c0 += CB) {
            vd acc[CB];
            UNROLL for (int v = 0; v < CB; v++) acc[v] = (vd){0};
            for (int t = 0; t < n; t++) {
                const double a = X[t][i];
                UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) acc[v] += a*V(Y, t)[c0 + v];
            }
            UNROLL for (int v = 0; v < CB; v++) if (c0 + v < NV) V(C, i)[c0 + v] = acc[v];
        }
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
   the bound on its residual; the pivoted form where that exceeds tol or is NaN */
static double factor(mat G, mat A, double tol, mat N, mat P)
{
    mat Z, L, W, Bm, C;  /* L holds L^T A; C = L^T */
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
            for (int v = k / VW; v < NV; v++) V(Bm, i)[v] -= f*V(Bm, k)[v];
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
#if PERTURB
    perturb(N);
#endif
    double m = measured_bound(G, A, C, Z, N, W, deficient);  /* vp.gram_lu_measured_bound */
#if RETRY
    if (!(m <= tol)) {
        mul(A, G, Bm);  /* M^T = I - A Gram, in Bm */
        for (int i = 0; i < D; i++) {
            UNROLL for (int v = 0; v < NV; v++) V(Bm, i)[v] = -V(Bm, i)[v];
            Bm[i][i] += 1.0;
        }
        pivoted(Bm, N);
        m = full_residual(G, A, N, W, Bm);
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


def _perturb_table(perturb) -> str:
    if perturb is None:
        return ""
    u, w = perturb
    row = lambda v: ", ".join(repr(float(a)) for a in v) + ", 0.0" * (MAX_DIM - len(v))
    return ("/* the negative control's perturbation: N += (N u) w^T, so R gains E = u w^T */\n"
            f"static const double PU[{MAX_DIM}] = {{{row(u)}}}, PW[{MAX_DIM}] = {{{row(w)}}};\n"
            "static void perturb(mat N)\n{\n    double t[D];\n"
            "    for (int i = 0; i < D; i++) {\n        t[i] = 0.0;\n"
            "        for (int k = 0; k < D; k++) t[i] += N[i][k]*PU[k];\n    }\n"
            "    for (int i = 0; i < D; i++) for (int j = 0; j < D; j++) N[i][j] += t[i]*PW[j];\n}\n")


def target_name() -> str:
    """The generated file's name, beside ``_native_gram_lu.c`` in :mod:`geoattn.kernels`."""
    return "_native_gram_lu_big.c"


def generate_gram_lu_big_module(negate_backward: bool = False, fault_fast: bool = False, retry: bool = True,
                                perturb: tuple | None = None) -> str:
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
    perturb : (list of float, list of float), optional
        ``(u, w)`` of at most ``MAX_DIM`` entries: the fast form's ``N`` gets ``(N u) w^T`` added before its check,
        so its residual gains ``E = u w^T`` (the tests' negative control for the bound; ``None``: no change).

    Returns
    -------
    str
        the C text.
    """
    head = HEADER.format(lo=MIN_DIM, hi=MAX_DIM, vector=VECTOR_PRELUDE, ksign="" if fault_fast else "-", retry=int(retry),
                         perturb=int(perturb is not None), sign="" if negate_backward else "-")
    return head + BODY.replace("{bound}", BOUND + _perturb_table(perturb)) + TOKENS + ENTRIES
