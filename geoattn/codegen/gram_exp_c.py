r"""The C source of the exponential layer's Gram form for ``3 <= d <= 16``: printed token passes around a
scaling-and-squaring template.

The layer output is :math:`y = xE`, :math:`E = \exp(M)`, :math:`M = -AG`, :math:`G = x^Tx` (ledger
``vp.exp_push_through``); its backward (ledger ``vp.gram_exp_vjp``) is :math:`\bar E = x^T\bar y`, :math:`\bar M`
the adjoint of the Fréchet derivative of ``exp`` at ``M`` applied to :math:`\bar E`, :math:`\bar G = A\bar M`,
:math:`H = \bar G + \bar G^T`, :math:`\bar x = \bar yE^T + xH` and the per-sample :math:`-\bar MG` (the gradient in
``A`` is the skew part of its sum). These are the token passes of the LU kernels with :math:`P := E`, so:

* the token passes are the specifications of :data:`geoattn.codegen.gram_lu_c.SPECS` (``Gram = x^T x``,
  ``y = x P``, ``Gram`` and ``Pbar = x^T Gy``, ``gx = Gy P^T + x H``), renamed and printed at every ``d`` by the
  same C printer;
* the ``d x d`` stage is a template in double, ``SL`` samples at a time: :math:`X = 2^{-s}M` with the least
  ``s`` such that :math:`\min(\|X\|_1, \|X\|_F) \le` :data:`THETA`, the Taylor polynomial of degree :data:`DEGREE` of
  :math:`\exp(X)` by the Paterson--Stockmeyer scheme (powers :math:`X^2 .. X^p`, then a Horner scheme in
  :math:`X^p`), ``s`` squarings (ledger ``vp.gram_exp_native_truncation``: the truncation relative to the result is
  below float64's unit roundoff), the structure check's :math:`\max|E^TGE - G| / \mathrm{Tr}\,G` per sample;
* the backward's ``d x d`` stage recomputes that algorithm and runs its reverse mode (ledger
  ``vp.gram_exp_native_reverse``: :math:`\bar X = \bar YX^T + X^T\bar Y` for a squaring :math:`Y = X^2`, and the
  rules of the products and sums of the Horner steps), so :math:`\bar M` is the exact gradient of the computed
  ``E``, not of the exact exponential: the two differ by the truncation error.

Samples whose scale :math:`\mathrm{Tr}\,G\,\|A\|_F` exceeds the bound the caller passes, or is not finite, or
that need more than ``SMAX`` squarings, report NaN as their residual: the caller recomputes them by another form.
``negate_backward`` prints a deliberately wrong kernel (the transpose dropped from the squarings' adjoint) for the
tests' negative control.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

from .cprinter import LANES, REAL_PRELUDE, print_native_kernel
from .gram_lu_c import BLOCK, CHUNK, SPECS as LU_SPECS

__all__ = ["MIN_DIM", "MAX_DIM", "THETA", "DEGREE", "BLOCKS", "SMAX", "SPECS", "generate_gram_exp_module",
           "target_name", "truncation_bound"]

#: the widths the kernels are printed for (d <= 2 keep the other routes)
MIN_DIM, MAX_DIM = 3, 16
#: the scaled matrix's 1-norm bound
THETA = 1
#: the Taylor degree: the least whose truncation bound (:func:`truncation_bound`) at THETA is below 2^-53
DEGREE = 18
#: the Paterson--Stockmeyer block length p: powers X^2 .. X^p, then ceil((DEGREE + 1)/p) - 1 Horner products
BLOCKS = 4
#: the most squarings a sample may take (|x|_F^2 |A|_F <= 1e6 needs at most 25 at d = 16)
SMAX = 40
_CLAIMS = ["vp.exp_push_through", "vp.gram_exp_vjp", "vp.gram_exp_native_truncation", "vp.gram_exp_native_reverse"]

#: the printed token passes: the LU kernels' specifications under this module's names
SPECS = {k: dataclasses.replace(s, name=s.name.replace("vp_gram_lu_", "vp_gram_exp_"), claims=list(_CLAIMS))
         for k, s in LU_SPECS.items()}


def truncation_bound(theta: Fraction, m: int) -> Fraction:
    r"""A rational upper bound of :math:`\|\sum_{k>m}X^k/k!\|\,\|\exp(X)^{-1}\|` for :math:`\|X\| \le \theta`
    (any submultiplicative norm): :math:`e^\theta\,\theta^{m+1}/(m+1)!\,/(1 - \theta/(m+2))`, with :math:`e^\theta`
    bounded by :math:`3^\theta` for :math:`\theta \le 1` (ledger ``vp.gram_exp_native_truncation``).

    Parameters
    ----------
    theta : Fraction
        the norm bound, ``0 < theta <= 1``
    m : int
        the Taylor degree

    Returns
    -------
    Fraction
    """
    theta = Fraction(theta)
    if not 0 < theta <= 1 or m < 1:
        raise ValueError(f"Expected 0 < theta <= 1 and m >= 1. Got theta={theta}, m={m}.")
    tail = theta ** (m + 1) / math.factorial(m + 1) / (1 - theta / (m + 2))
    return 3 * tail  # e^theta <= e < 3


HEADER = """/* Native CPU kernels of the exponential layer's Gram form y = x exp(-A x^T x) for {lo} <= d <= {hi}.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/gram_exp_c.py); `geoattn codegen
   --check` fails when it is stale. The token passes are printed from the verified bindings of
   geoattn/symbolic/expressions.py (Note [the closed-form Gram layer]); the d x d stage (scaling and squaring of
   a Taylor polynomial of degree {m} by Paterson-Stockmeyer, its reverse mode, the structure check) is the
   template of geoattn.codegen.gram_exp_c [ledger: {claims}]. Compiled at first use by
   geoattn.kernels._native_exp, one library per d and real type; never with -ffast-math.
*/

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define LANES {lanes}
#define TOKEN_CHUNK {chunk}
#define BLOCK {block}
#define SMAX {smax}
#define THETA {theta}.0
#define NPOW {p}
#define NBLK {q}

{prelude}

/* the Taylor coefficients 1/k!, k = 0 .. NPOW*NBLK - 1 (zero past the degree {m}) */
static const double TAYLOR[NPOW*NBLK] = {{{coefs}}};
"""

# the d x d stage at D = GEOATTN_D; matrices [D][DP][SL], every value an array over SL lanes (samples)
TEMPLATE = r"""
#define D {d}
#define DP (D + 1)
#define SL {sl}
#define LOOP_L for (int l = 0; l < SL; l++)
typedef double mat_t[D][DP][SL];

static void ex_load(const double *restrict S, int nl, mat_t out)
{{
    for (int l = 0; l < SL; l++) {{
        const double *s = S + (l < nl ? l : nl - 1)*D*D;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) out[i][j][l] = s[i*D + j];
    }}
}}

static void ex_store(const mat_t in, int nl, double *restrict S)
{{
    for (int l = 0; l < nl; l++)
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) S[l*D*D + i*D + j] = in[i][j][l];
}}

{products}
/* M = -A Gram, the shift s per lane (the least with min(|2^-s M|_1, |2^-s M|_F) <= THETA; SMAX + 1 when none,
   or not finite), X = 2^-s M, the powers X^1 .. X^NPOW into Pw[1 ..], and the Horner iterates S_j (S[0]: the
   Taylor polynomial) */
static void ex_taylor(const mat_t Gm, const double *restrict A, int s[SL], mat_t Pw[NPOW + 1], mat_t S[NBLK])
{{
    double nrm[SL], c[SL];
    LOOP_L nrm[l] = 0.0;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            LOOP_L Pw[1][i][j][l] = 0.0;
            for (int k = 0; k < D; k++) {{
                const double a = -A[i*D + k];
                LOOP_L Pw[1][i][j][l] += a*Gm[k][j][l];
            }}
        }}
    double fro[SL];
    LOOP_L fro[l] = 0.0;
    for (int j = 0; j < D; j++) {{
        double col[SL];
        LOOP_L col[l] = 0.0;
        for (int i = 0; i < D; i++)
            LOOP_L {{ col[l] += fabs(Pw[1][i][j][l]); fro[l] += Pw[1][i][j][l]*Pw[1][i][j][l]; }}
        LOOP_L nrm[l] = col[l] > nrm[l] || col[l] != col[l] ? col[l] : nrm[l];
    }}
    /* both norms are submultiplicative: the smaller bounds the truncation as well (NaN stays NaN) */
    LOOP_L {{ const double f = sqrt(fro[l]); nrm[l] = f < nrm[l] ? f : nrm[l]; }}
    for (int l = 0; l < SL; l++) {{
        int k = 0;
        double v = nrm[l], f = 1.0;
        if (!(v <= 1e300)) k = SMAX + 1;  /* NaN or infinite */
        while (k <= SMAX && v > THETA) {{ v *= 0.5; f *= 0.5; k++; }}
        s[l] = k;
        c[l] = f;
    }}
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) LOOP_L Pw[1][i][j][l] *= c[l];
    for (int k = 2; k <= NPOW; k++) ex_mm_000(Pw[k], Pw[k - 1], Pw[1]);
    /* S_j = S_(j+1) X^NPOW + B_j, B_j = sum_i TAYLOR[NPOW j + i] X^i; S_(NBLK-1) = B_(NBLK-1) */
    for (int j = NBLK - 1; j >= 0; j--) {{
        if (j < NBLK - 1) ex_mm_000(S[j], S[j + 1], Pw[NPOW]);
        for (int i = 0; i < D; i++)
            for (int jj = 0; jj < D; jj++) {{
                double b[SL];
                LOOP_L b[l] = j < NBLK - 1 ? S[j][i][jj][l] : 0.0;
                if (i == jj) LOOP_L b[l] += TAYLOR[NPOW*j];
                for (int p = 1; p < NPOW; p++) {{
                    const double t = TAYLOR[NPOW*j + p];
                    LOOP_L b[l] += t*Pw[p][i][jj][l];
                }}
                LOOP_L S[j][i][jj][l] = b[l];
            }}
    }}
}}

/* Y[k + 1] = Y[k]^2 for the lanes with k < s, Y[k] otherwise; Y[0] given; returns the largest s <= SMAX */
static int ex_square(mat_t *Y, const int s[SL], int keep_all)
{{
    int top = 0;
    for (int l = 0; l < SL; l++) if (s[l] <= SMAX && s[l] > top) top = s[l];
    for (int k = 0; k < top; k++) {{
        mat_t *out = keep_all ? &Y[k + 1] : &Y[(k + 1) & 1], *in = keep_all ? &Y[k] : &Y[k & 1];
        ex_mm_000(*out, *in, *in);
        for (int l = 0; l < SL; l++)
            if (k >= s[l])
                for (int i = 0; i < D; i++)
                    for (int j = 0; j < D; j++) (*out)[i][j][l] = (*in)[i][j][l];
    }}
    return top;
}}

/* forward: E = exp(-A Gram) and R = max |E^T Gram E - Gram| / Tr Gram per sample (NaN: the sample failed) */
static void ex_forward(const double *restrict G, int nl, const double *restrict A, const double *restrict K,
                       double *restrict E, double *restrict R)
{{
    mat_t Gm, Pw[NPOW + 1], S[NBLK], Y[2], W;
    int s[SL];
    double tr[SL], m[SL];
    ex_load(G, nl, Gm);
    ex_taylor(Gm, A, s, Pw, S);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) LOOP_L Y[0][i][j][l] = S[0][i][j][l];
    const int top = ex_square(Y, s, 0);
    mat_t *Ef = &Y[top & 1];
    ex_store(*Ef, nl, E);
    ex_mm_000(W, Gm, *Ef);
    ex_mm_100(Pw[0], *Ef, W);
    LOOP_L {{ m[l] = 0.0; tr[l] = 0.0; }}
    for (int i = 0; i < D; i++) {{
        LOOP_L tr[l] += Gm[i][i][l];
        for (int j = 0; j < D; j++)
            for (int l = 0; l < SL; l++) {{
                const double a = fabs(Pw[0][i][j][l] - Gm[i][j][l]);
                if (a > m[l] || a != a) m[l] = a;
            }}
    }}
    for (int l = 0; l < nl; l++) {{
        const double scale = tr[l]*K[0];
        R[l] = s[l] > SMAX || !(scale <= K[1]) ? NAN : (tr[l] > 0.0 ? m[l]/tr[l] : m[l]);
    }}
}}

/* backward: recompute the forward, then its reverse mode from Ebar = Pbar: Mbar, H = A Mbar + (A Mbar)^T,
   gA = -Mbar Gram, and P = E for the token pass; Y: SMAX + 1 matrices of scratch */
static void ex_backward(const double *restrict G, const double *restrict Pbar, int nl, const double *restrict A,
                        mat_t *Y, double *restrict P, double *restrict H, double *restrict gA)
{{
    mat_t Gm, Pw[NPOW + 1], S[NBLK], gP[NPOW + 1], gY, W;
    int s[SL];
    ex_load(G, nl, Gm);
    ex_taylor(Gm, A, s, Pw, S);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) LOOP_L Y[0][i][j][l] = S[0][i][j][l];
    const int top = ex_square(Y, s, 1);
    ex_store(Y[top], nl, P);
    ex_load(Pbar, nl, gY);
    /* squarings, last first: Ybar_k = Ybar_(k+1) Y_k^T + Y_k^T Ybar_(k+1) where k < s */
    for (int k = top - 1; k >= 0; k--) {{
        ex_mm_0{tb}0(W, gY, Y[k]);
        ex_mm_101(W, Y[k], gY);
        for (int l = 0; l < SL; l++)
            if (k < s[l])
                for (int i = 0; i < D; i++)
                    for (int j = 0; j < D; j++) gY[i][j][l] = W[i][j][l];
    }}
    /* the Horner scheme, first step first: Sbar_(j+1) = Sbar_j (X^p)^T, (X^p)bar += S_(j+1)^T Sbar_j, and the
       coefficients' share Xbar^i += TAYLOR[p j + i] Sbar_j */
    for (int p = 1; p <= NPOW; p++)
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) LOOP_L gP[p][i][j][l] = 0.0;
    for (int j = 0; j < NBLK; j++) {{
        for (int p = 1; p < NPOW; p++) {{
            const double t = TAYLOR[NPOW*j + p];
            for (int i = 0; i < D; i++)
                for (int jj = 0; jj < D; jj++) LOOP_L gP[p][i][jj][l] += t*gY[i][jj][l];
        }}
        if (j == NBLK - 1) break;
        ex_mm_101(gP[NPOW], S[j + 1], gY);
        ex_mm_010(W, gY, Pw[NPOW]);
        for (int i = 0; i < D; i++)
            for (int jj = 0; jj < D; jj++) LOOP_L gY[i][jj][l] = W[i][jj][l];
    }}
    /* the powers X^k = X^(k-1) X, last first */
    for (int k = NPOW; k >= 2; k--) {{
        ex_mm_011(gP[k - 1], gP[k], Pw[1]);
        ex_mm_101(gP[1], Pw[k - 1], gP[k]);
    }}
    /* Mbar = 2^-s Xbar; Gbar = A Mbar (M = -A Gram), H = Gbar + Gbar^T, gA = -Mbar Gram */
    for (int l = 0; l < SL; l++) {{
        const double c = s[l] <= SMAX ? ldexp(1.0, -s[l]) : NAN;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) gP[1][i][j][l] *= c;
    }}
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            LOOP_L W[i][j][l] = 0.0;
            for (int k = 0; k < D; k++) {{
                const double a = A[i*D + k];
                LOOP_L W[i][j][l] += a*gP[1][k][j][l];
            }}
        }}
    for (int i = 0; i < D; i++)
        for (int j = 0; j <= i; j++)
            LOOP_L {{ const double h = W[i][j][l] + W[j][i][l]; gY[i][j][l] = h; gY[j][i][l] = h; }}
    ex_store(gY, nl, H);
    ex_mm_000(W, gP[1], Gm);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) LOOP_L W[i][j][l] = -W[i][j][l];
    ex_store(W, nl, gA);
}}

/* forward: y = x E, and per sample Gram, E and R (A: the whole skew matrix; K: |A|_F and the largest scale) */
void GEOATTN_NAME(vp_gram_exp_fwd_d{d})(int64_t B, int64_t T, const real_t *restrict x, const double *restrict A,
                                      const double *restrict K, real_t *restrict y, double *restrict Gram,
                                      double *restrict E, double *restrict R)
{{
    for (int64_t b0 = 0; b0 < B; b0 += BLOCK) {{
        const int64_t nb = B - b0 < BLOCK ? B - b0 : BLOCK;
        GEOATTN_NAME(vp_gram_exp_gram_d{d})(nb, T, x + b0*T*D, Gram + b0*D*D);
        for (int64_t b = 0; b < nb; b += SL) {{
            const int nl = nb - b < SL ? (int)(nb - b) : SL;
            ex_forward(Gram + (b0 + b)*D*D, nl, A, K, E + (b0 + b)*D*D, R + b0 + b);
        }}
        GEOATTN_NAME(vp_gram_exp_out_d{d})(nb, T, x + b0*T*D, E + b0*D*D, y + b0*T*D);
    }}
}}

/* backward: gx, and per sample gA = -Mbar Gram (the gradient in A is the skew part of its sum); returns 0, or 1
   when the scratch could not be allocated (nothing written then) */
int GEOATTN_NAME(vp_gram_exp_bwd_d{d})(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy,
                                     const double *restrict A, real_t *restrict gx, double *restrict gA)
{{
    double G[BLOCK*D*D], Pbar[BLOCK*D*D], P[BLOCK*D*D], H[BLOCK*D*D];
    mat_t *Y = malloc(sizeof(mat_t)*(SMAX + 1));
    if (Y == NULL) return 1;
    for (int64_t b0 = 0; b0 < B; b0 += BLOCK) {{
        const int64_t nb = B - b0 < BLOCK ? B - b0 : BLOCK;
        GEOATTN_NAME(vp_gram_exp_grams_d{d})(nb, T, x + b0*T*D, Gy + b0*T*D, G, Pbar);
        for (int64_t b = 0; b < nb; b += SL) {{
            const int nl = nb - b < SL ? (int)(nb - b) : SL;
            ex_backward(G + b*D*D, Pbar + b*D*D, nl, A, Y, P + b*D*D, H + b*D*D, gA + (b0 + b)*D*D);
        }}
        GEOATTN_NAME(vp_gram_exp_gx_d{d})(nb, T, x + b0*T*D, Gy + b0*T*D, P, H, gx + b0*T*D);
    }}
    free(Y);
    return 0;
}}

#undef LOOP_L
#undef SL
#undef DP
#undef D
"""


_PRODUCT = """/* C {op} X{tx} Y{ty}, lane by lane */
static inline __attribute__((always_inline)) void ex_mm_{ta}{tb}{acc}(mat_t C, const mat_t X, const mat_t Y)
{{{{
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{{{
            double s[SL];
            LOOP_L s[l] = {init};
            for (int k = 0; k < D; k++)
                LOOP_L s[l] += X{x}[l]*Y{y}[l];
            LOOP_L C[i][j][l] = s[l];
        }}}}
}}}}
"""


def _products() -> str:
    """The C functions ``ex_mm_<ta><tb><acc>``: ``C = X Y`` or ``C += X Y`` with ``X`` (``ta``) or ``Y`` (``tb``)
    transposed, each a separate function so the compiler sees fixed strides."""
    out = []
    for ta, tb in ((0, 0), (1, 0), (0, 1)):
        for acc in (0, 1):
            out.append(_PRODUCT.format(
                op="+=" if acc else "=", tx="^T" if ta else "", ty="^T" if tb else "", ta=ta, tb=tb, acc=acc,
                init="C[i][j][l]" if acc else "0.0", x="[k][i]" if ta else "[i][k]", y="[j][k]" if tb else "[k][j]"))
    return "\n".join(out)


def target_name() -> str:
    """The generated file's name, beside ``_native_gram_lu.c`` in :mod:`geoattn.kernels`."""
    return "_native_gram_exp.c"


def _group(d: int, negate_backward: bool) -> str:
    printed = [print_native_kernel(SPECS[k], d) for k in ("gram", "out", "grams", "gx")]
    template = TEMPLATE.format(d=d, sl=LANES, tb=0 if negate_backward else 1, products=_products())
    return f"#if GEOATTN_D == {d}\n\n" + "\n".join(printed) + template + f"\n#endif  /* d = {d} */\n"


def generate_gram_exp_module(dims: tuple[int, ...] | None = None, negate_backward: bool = False) -> str:
    """The C source of the exponential Gram form's kernels at every ``d`` of ``dims`` (default ``MIN_DIM ..
    MAX_DIM``).

    Parameters
    ----------
    dims : tuple of int, optional
        the widths to print (each in ``MIN_DIM .. MAX_DIM``).
    negate_backward : bool
        print the squarings' adjoint without its transpose (:math:`\\bar X = \\bar YX + X^T\\bar Y`): a broken
        kernel for the tests' negative control.

    Returns
    -------
    str
        the C text: a header, then one ``#if GEOATTN_D == d`` group per width.
    """
    dims = tuple(range(MIN_DIM, MAX_DIM + 1)) if dims is None else tuple(dims)
    for d in dims:
        if not MIN_DIM <= d <= MAX_DIM:
            raise ValueError(f"Expected every d in {MIN_DIM} .. {MAX_DIM}. Got {d}.")
    q = -(-(DEGREE + 1) // BLOCKS)
    coefs = ", ".join(repr(1.0 / math.factorial(k)) if k <= DEGREE else "0.0" for k in range(BLOCKS * q))
    header = HEADER.format(lo=MIN_DIM, hi=MAX_DIM, m=DEGREE, claims=", ".join(_CLAIMS), lanes=LANES, chunk=CHUNK,
                           block=BLOCK, smax=SMAX, theta=THETA, p=BLOCKS, q=q, prelude=REAL_PRELUDE, coefs=coefs)
    return header + "\n" + "\n".join(_group(d, negate_backward) for d in dims)
