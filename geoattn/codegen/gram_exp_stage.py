r"""The ``d x d`` stage of the native exponential kernels (printed into ``_native_gram_exp.c`` by
:mod:`geoattn.codegen.gram_exp_c`, once per width, between its token passes and its drivers).

Per group of ``SL`` samples (one vector register of doubles, ``GEOATTN_VBYTES / 8``: 8 with AVX-512, 4 with AVX2,
Note [vector width] in :mod:`geoattn.codegen.cprinter`), one sample per lane of a GCC vector (each lane's arithmetic that
of a scalar loop, no sum reassociated; ``a*b + c`` fused where the CPU has a fused multiply-add):

* forward (``ex_forward``): :math:`M = -A\,\mathrm{Gram}`, the least ``s`` per lane with
  :math:`\min(\|2^{-s}M\|_1, \|2^{-s}M\|_F) \le` ``THETA``, the Taylor polynomial of degree ``DEGREE`` of
  :math:`\exp(X)`, :math:`X = 2^{-s}M`, by the Paterson--Stockmeyer scheme (powers :math:`X^2 .. X^p`, Horner
  steps in :math:`X^p`), ``s`` squarings (a lane past its own ``s`` keeps its value: blended by a mask), and the
  structure check :math:`\max|E^T\mathrm{Gram}\,E - \mathrm{Gram}| / \mathrm{Tr}\,\mathrm{Gram}`;
* backward (``ex_backward``): the forward recomputed (every squaring's input kept), then its reverse mode (ledger
  ``vp.gram_exp_native_reverse``);
* every product holds one row of its result in ``D`` vector accumulators; the per-sample arrays are moved in and
  out of lanes by 8 x 8 transposes of vectors (GCC's ``__builtin_shuffle``; element by element elsewhere).

Note [the exponential stage's degree]
-------------------------------------
With the bound of ledger ``vp.gram_exp_native_truncation`` (:math:`3\theta^{m+1}/(m+1)!/(1 - \theta/(m+2)) <
2^{-53}`), the largest :math:`\theta = k/64` per degree and the Paterson--Stockmeyer products (a top block of the
constant alone costs none): m = 9: 3/32, 4 products; m = 12: 19/64, 5; m = 14: 1/2, 6; m = 15: 5/8, 6; m = 16:
49/64, 6; m = 17: 29/32, 7; m = 18: 1, 7 (the form before this one); m = 19, 20 gain nothing at :math:`\theta
\le 1`. A group of eight lanes pays the products plus its largest ``s``. With the norms the default-initialised
layer sees (unit-normal x; :math:`\min(\|M\|_1, \|M\|_F)` medians 15 and 57 at d = 4, T = 16 and 64; 16 and 56
at d = 8; 22 and 70 at d = 16), the mean of products plus the group's largest ``s`` over 8,192 groups was least at
m = 16 everywhere: 11.1-11.9 (T = 16) and 13.0-13.2 (T = 64) against 12.0-12.2 and 13.6-14.0 at m = 18.

Keeping the forward's intermediates for the backward (the powers, the Horner iterates and the squarings' inputs:
about ``(s + 9) d^2`` doubles per sample, 27 MB at d = 8, T = 16 and 31 MB at d = 16, T = 64 for 65,536 tokens)
was not taken: writing and reading that much memory costs about what the ``7 + s`` recomputed products cost
(an estimate from the sizes, not a measurement).

Tried and not kept (the thread's CPU time, kernels at T = d + 1 where the stage dominates, alternating): blocks of
two or three rows of the result sharing each load of the right factor (d = 8: forward 2.8-3.0 ms either way,
backward 5.1-5.3 against 5.3-5.8 ms; d = 16: 4.8-5.1 against 5.1-5.2 ms, 10.9-11.2 against 10.9 ms) and the right
factor's transpose copied out before the products with it (no gain at d = 8, backward 11.6 -> 12.3-12.5 ms at
d = 16). The backward's products run at about a third of the CPU's fused multiply-add peak (1.9 against 5.6 vectors
of eight per ns in a register-only loop), the forward's at about a fifth: what remains is spread over the stage
(loads and stores of the lanes, the Horner steps' sums, the masks, the shifts), with no single hot spot in a
profile.

``EX_NEGATE`` set to 1 prints the squarings' adjoint without its transpose: the tests' negative control.
"""

from __future__ import annotations

__all__ = ["STAGE"]

# plain C; its parameters are the macros D, SL, NPOW, NBLK, SMAX, THETA, EX_TOP_SCALAR, EX_NEGATE and the array
# TAYLOR
STAGE = r"""
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize ("fp-contract=fast")
#endif
typedef double exv __attribute__((vector_size(8*SL)));
typedef long long exl __attribute__((vector_size(8*SL)));
typedef exv exm[D][D];
#define EX_UNROLL _Pragma("GCC unroll 16")

#if (SL == 8 || SL == 4) && defined(__GNUC__) && !defined(__clang__)
#define EX_SHUFFLE 1
#if SL == 8
/* out[l][k] = in[k][l] for eight vectors of eight doubles: three rounds of pairwise interleaves */
static inline void ex_t8(const exv in[8], exv out[8])
{
    static const exl p1a = {0, 8, 2, 10, 4, 12, 6, 14}, p1b = {1, 9, 3, 11, 5, 13, 7, 15};
    static const exl p2a = {0, 1, 8, 9, 4, 5, 12, 13}, p2b = {2, 3, 10, 11, 6, 7, 14, 15};
    static const exl p4a = {0, 1, 2, 3, 8, 9, 10, 11}, p4b = {4, 5, 6, 7, 12, 13, 14, 15};
    exv a[8], b[8];
    for (int r = 0; r < 4; r++) {
        a[2*r] = __builtin_shuffle(in[2*r], in[2*r + 1], p1a);
        a[2*r + 1] = __builtin_shuffle(in[2*r], in[2*r + 1], p1b);
    }
    for (int r = 0; r < 2; r++)
        for (int h = 0; h < 2; h++) {
            b[4*r + h] = __builtin_shuffle(a[4*r + h], a[4*r + h + 2], p2a);
            b[4*r + h + 2] = __builtin_shuffle(a[4*r + h], a[4*r + h + 2], p2b);
        }
    for (int h = 0; h < 4; h++) {
        out[h] = __builtin_shuffle(b[h], b[h + 4], p4a);
        out[h + 4] = __builtin_shuffle(b[h], b[h + 4], p4b);
    }
}
#else
/* out[l][k] = in[k][l] for four vectors of four doubles (SL = 4): two rounds of pairwise interleaves */
static inline void ex_t8(const exv in[4], exv out[4])
{
    static const exl p1a = {0, 4, 2, 6}, p1b = {1, 5, 3, 7}, p2a = {0, 1, 4, 5}, p2b = {2, 3, 6, 7};
    const exv a0 = __builtin_shuffle(in[0], in[1], p1a), a1 = __builtin_shuffle(in[0], in[1], p1b);
    const exv a2 = __builtin_shuffle(in[2], in[3], p1a), a3 = __builtin_shuffle(in[2], in[3], p1b);
    out[0] = __builtin_shuffle(a0, a2, p2a);
    out[1] = __builtin_shuffle(a1, a3, p2a);
    out[2] = __builtin_shuffle(a0, a2, p2b);
    out[3] = __builtin_shuffle(a1, a3, p2b);
}
#endif
#else
#define EX_SHUFFLE 0
#endif

/* nl samples of D*D doubles at S into lanes (lanes past nl repeat sample nl - 1) */
static void ex_vload(const double *restrict S, int nl, exm out)
{
    const double *src[SL];
    exv *o = &out[0][0];
    int e = 0;
    for (int l = 0; l < SL; l++) src[l] = S + (l < nl ? l : nl - 1)*D*D;
#if EX_SHUFFLE
    for (; e + SL <= D*D; e += SL) {
        exv rows[SL];
        for (int l = 0; l < SL; l++) __builtin_memcpy(&rows[l], src[l] + e, sizeof(exv));
        ex_t8(rows, o + e);
    }
#endif
    for (; e < D*D; e++)
        for (int l = 0; l < SL; l++) o[e][l] = src[l][e];
}

/* the first nl lanes back to nl samples of D*D doubles at S */
static void ex_vstore(exm in, int nl, double *restrict S)
{
    const exv *v = &in[0][0];
    int e = 0;
#if EX_SHUFFLE
    if (nl == SL)
        for (; e + SL <= D*D; e += SL) {
            exv rows[SL];
            ex_t8(v + e, rows);
            for (int l = 0; l < SL; l++) __builtin_memcpy(S + l*D*D + e, &rows[l], sizeof(exv));
        }
#endif
    for (int l = 0; l < nl; l++)
        for (int k = e; k < D*D; k++) S[l*D*D + k] = v[k][l];
}

/* C = op(X) op(Y) (+ C when acc), op the transpose where ta / tb: row i of C in D accumulators; the constant
   flags of each call are folded by the compiler */
static inline __attribute__((always_inline)) void ex_mm(exm C, exm X, exm Y, int ta, int tb, int acc)
{
    for (int i = 0; i < D; i++) {
        exv r[D];
        EX_UNROLL for (int j = 0; j < D; j++) r[j] = acc ? C[i][j] : (exv){0};
        for (int k = 0; k < D; k++) {
            const exv a = ta ? X[k][i] : X[i][k];
            EX_UNROLL for (int j = 0; j < D; j++) r[j] += a*(tb ? Y[j][k] : Y[k][j]);
        }
        EX_UNROLL for (int j = 0; j < D; j++) C[i][j] = r[j];
    }
}

/* lanes of where(mask, a, b) */
static inline exv ex_blend(exl mask, exv a, exv b)
{
    return (exv)(((exl)a & mask) | ((exl)b & ~mask));
}

/* M = -A Gram; per lane the shift s (the least with min(|2^-s M|_1, |2^-s M|_F) <= THETA; SMAX + 1 when none
   or not finite) as doubles in sv; X = 2^-s M and its powers X^1 .. X^NPOW into Pw[1 ..]; the Horner iterates
   S_j (S[0]: the Taylor polynomial); returns the largest s <= SMAX of the lanes */
static int ex_taylor(exm G, const double *restrict A, exv *sv, exm Pw[NPOW + 1], exm S[NBLK])
{
    exv nrm = (exv){0}, fro = (exv){0}, c;
    for (int i = 0; i < D; i++) {
        exv r[D];
        EX_UNROLL for (int j = 0; j < D; j++) r[j] = (exv){0};
        for (int k = 0; k < D; k++) {
            const double a = A[i*D + k];
            EX_UNROLL for (int j = 0; j < D; j++) r[j] -= a*G[k][j];
        }
        EX_UNROLL for (int j = 0; j < D; j++) Pw[1][i][j] = r[j];
    }
    for (int j = 0; j < D; j++) {
        exv col = (exv){0};
        for (int i = 0; i < D; i++) {
            const exv v = Pw[1][i][j];
            col += (exv)((exl)v & 0x7fffffffffffffffLL);
            fro += v*v;
        }
        nrm = ex_blend((col > nrm) | (col != col), col, nrm);
    }
    int top = 0;
    /* both norms are submultiplicative: the smaller bounds the truncation as well (NaN stays NaN) */
    for (int l = 0; l < SL; l++) {
        const double f = sqrt(fro[l]);
        double v = f < nrm[l] ? f : nrm[l], h = 1.0;
        int k = 0;
        if (!(v <= 1e300)) k = SMAX + 1;
        while (k <= SMAX && v > THETA) { v *= 0.5; h *= 0.5; k++; }
        (*sv)[l] = k;
        c[l] = h;
        if (k <= SMAX && k > top) top = k;
    }
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) Pw[1][i][j] *= c;
    for (int k = 2; k <= NPOW; k++) ex_mm(Pw[k], Pw[k - 1], Pw[1], 0, 0, 0);
    /* S_j = S_(j+1) X^NPOW + B_j, B_j = sum_i TAYLOR[NPOW j + i] X^i; S_(NBLK-1) = B_(NBLK-1) */
    for (int j = NBLK - 1; j >= 0; j--) {
        /* a top block of the constant alone (EX_TOP_SCALAR): S_(NBLK-2) = c X^NPOW + B_(NBLK-2), no product */
        const int sc = EX_TOP_SCALAR && j == NBLK - 2;
        if (j < NBLK - 1 && !sc) ex_mm(S[j], S[j + 1], Pw[NPOW], 0, 0, 0);
        for (int i = 0; i < D; i++)
            for (int jj = 0; jj < D; jj++) {
                exv b = j == NBLK - 1 ? (exv){0} : sc ? TAYLOR[NPOW*(NBLK - 1)]*Pw[NPOW][i][jj] : S[j][i][jj];
                if (i == jj) b += TAYLOR[NPOW*j];
                for (int p = 1; p < NPOW; p++) b += TAYLOR[NPOW*j + p]*Pw[p][i][jj];
                S[j][i][jj] = b;
            }
    }
    return top;
}

/* Y[k + 1] = Y[k]^2 in the lanes with k < s, Y[k] in the others, k < top; Y[0] given; keep_all: every Y[k] kept,
   else two alternating buffers (the result in Y[top & 1]) */
static void ex_square(exm *Y, exv sv, int top, int keep_all)
{
    for (int k = 0; k < top; k++) {
        exv (*out)[D] = keep_all ? Y[k + 1] : Y[(k + 1) & 1], (*in)[D] = keep_all ? Y[k] : Y[k & 1];
        const exl live = (exv){0} + (double)k < sv;
        ex_mm(out, in, in, 0, 0, 0);
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) out[i][j] = ex_blend(live, out[i][j], in[i][j]);
    }
}

/* forward: E = exp(-A Gram) and R = max |E^T Gram E - Gram| / Tr Gram per sample (NaN: the sample failed) */
static void ex_forward(const double *restrict Gs, int nl, const double *restrict A, const double *restrict K,
                       double *restrict E, double *restrict R)
{
    exm G, Pw[NPOW + 1], S[NBLK], Y[2], W;
    exv sv, m = (exv){0}, tr = (exv){0};
    ex_vload(Gs, nl, G);
    const int top = ex_taylor(G, A, &sv, Pw, S);
    __builtin_memcpy(Y[0], S[0], sizeof(exm));
    ex_square(Y, sv, top, 0);
    exv (*Ef)[D] = Y[top & 1];
    ex_vstore(Ef, nl, E);
    ex_mm(W, G, Ef, 0, 0, 0);
    ex_mm(Pw[0], Ef, W, 1, 0, 0);
    for (int i = 0; i < D; i++) {
        tr += G[i][i];
        for (int j = 0; j < D; j++) {
            const exv a = (exv)((exl)(Pw[0][i][j] - G[i][j]) & 0x7fffffffffffffffLL);
            m = ex_blend((a > m) | (a != a), a, m);
        }
    }
    for (int l = 0; l < nl; l++) {
        const double scale = tr[l]*K[0];
        R[l] = sv[l] > SMAX || !(scale <= K[1]) ? NAN : (tr[l] > 0.0 ? m[l]/tr[l] : m[l]);
    }
}

/* backward: recompute the forward, then its reverse mode from Ebar = Pbar: Mbar, H = A Mbar + (A Mbar)^T,
   gA = -Mbar Gram, and P = E for the token pass; Y: SMAX + 1 matrices of scratch */
static void ex_backward(const double *restrict Gs, const double *restrict Pbar, int nl, const double *restrict A,
                        exm *Y, double *restrict P, double *restrict H, double *restrict gA)
{
    exm G, Pw[NPOW + 1], S[NBLK], gP[NPOW + 1], gY, W;
    exv sv, c;
    ex_vload(Gs, nl, G);
    const int top = ex_taylor(G, A, &sv, Pw, S);
    __builtin_memcpy(Y[0], S[0], sizeof(exm));
    ex_square(Y, sv, top, 1);
    ex_vstore(Y[top], nl, P);
    ex_vload(Pbar, nl, gY);
    /* squarings, last first: Ybar_k = Ybar_(k+1) Y_k^T + Y_k^T Ybar_(k+1) in the lanes with k < s */
    for (int k = top - 1; k >= 0; k--) {
        const exl live = (exv){0} + (double)k < sv;
        ex_mm(W, gY, Y[k], 0, !EX_NEGATE, 0);
        ex_mm(W, Y[k], gY, 1, 0, 1);
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) gY[i][j] = ex_blend(live, W[i][j], gY[i][j]);
    }
    /* the Horner scheme, first step first: Sbar_(j+1) = Sbar_j (X^p)^T, (X^p)bar += S_(j+1)^T Sbar_j, and the
       coefficients' share Xbar^i += TAYLOR[p j + i] Sbar_j */
    __builtin_memset(gP, 0, sizeof(gP));
    for (int j = 0; j < NBLK; j++) {
        for (int p = 1; p < NPOW; p++) {
            const double t = TAYLOR[NPOW*j + p];
            for (int i = 0; i < D; i++)
                for (int jj = 0; jj < D; jj++) gP[p][i][jj] += t*gY[i][jj];
        }
        if (j == NBLK - 1) break;
        if (EX_TOP_SCALAR && j == NBLK - 2) {  /* S_(j+1) = c I: (X^p)bar += c Sbar_j, and no coefficient left */
            const double t = TAYLOR[NPOW*(NBLK - 1)];
            for (int i = 0; i < D; i++)
                for (int jj = 0; jj < D; jj++) gP[NPOW][i][jj] += t*gY[i][jj];
            break;
        }
        ex_mm(gP[NPOW], S[j + 1], gY, 1, 0, 1);
        ex_mm(W, gY, Pw[NPOW], 0, 1, 0);
        __builtin_memcpy(gY, W, sizeof(exm));
    }
    /* the powers X^k = X^(k-1) X, last first */
    for (int k = NPOW; k >= 2; k--) {
        ex_mm(gP[k - 1], gP[k], Pw[1], 0, 1, 1);
        ex_mm(gP[1], Pw[k - 1], gP[k], 1, 0, 1);
    }
    /* Mbar = 2^-s Xbar; Gbar = A Mbar (M = -A Gram), H = Gbar + Gbar^T, gA = -Mbar Gram */
    for (int l = 0; l < SL; l++) c[l] = sv[l] <= SMAX ? ldexp(1.0, -(int)sv[l]) : NAN;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) gP[1][i][j] *= c;
    for (int i = 0; i < D; i++) {
        exv r[D];
        EX_UNROLL for (int j = 0; j < D; j++) r[j] = (exv){0};
        for (int k = 0; k < D; k++) {
            const double a = A[i*D + k];
            EX_UNROLL for (int j = 0; j < D; j++) r[j] += a*gP[1][k][j];
        }
        EX_UNROLL for (int j = 0; j < D; j++) W[i][j] = r[j];
    }
    for (int i = 0; i < D; i++)
        for (int j = 0; j <= i; j++) { const exv h = W[i][j] + W[j][i]; gY[i][j] = h; gY[j][i] = h; }
    ex_vstore(gY, nl, H);
    ex_mm(W, gP[1], G, 0, 0, 0);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) W[i][j] = -W[i][j];
    ex_vstore(W, nl, gA);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
#undef EX_UNROLL
#undef EX_SHUFFLE
"""
