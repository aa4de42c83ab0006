r"""The fused kernels of the wide exponential stage for ``d <= FUSED_MAX_DIM`` (printed by
:mod:`geoattn.codegen.gram_exp_wide_c` after the stage and the token products of
:mod:`geoattn.codegen._gram_lu_big_tokens`): per sample, the Gram matrix from the tokens, ``M = -A_sG``, the shift,
the exponential, the structure check and ``y = xE`` (``vp_gram_exp_wide_tok_fwd``), and the backward with its token
products (``vp_gram_exp_wide_tok_bwd``), in one pass over the batch (Note [fused wide exponential] in
:mod:`geoattn.codegen.gram_exp_wide_c`).
"""

from __future__ import annotations

__all__ = ["FUSED"]

#: the C text (over the stage's macros and static functions: D, DP, MS, RB, NV, mat, real_t, the token products)
FUSED = r"""
/* C = X^T X (double, padded) for n padded double rows X: a sum over the tokens, RB rows of C at a time */
static void gram(int n, const double *restrict X, double *restrict C)
{
    int i = 0;
    for (; RB > 1 && i + RB <= D; i += RB) {
        vd acc[RB][NV];
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) acc[r][v] = (vd){0};
        for (int t = 0; t < n; t++) {
            vd y[NV];
            UNROLL for (int v = 0; v < NV; v++) y[v] = ROW(X, t)[v];
            UNROLL for (int r = 0; r < RB; r++) {
                const double a = X[t * DP + i + r];
                UNROLL for (int v = 0; v < NV; v++) acc[r][v] += a * y[v];
            }
        }
        UNROLL for (int r = 0; r < RB; r++) UNROLL for (int v = 0; v < NV; v++) ROW(C, i + r)[v] = acc[r][v];
    }
    for (; (RB == 1 || D % RB) && i < D; i++) {
        vd acc[NV];
        UNROLL for (int v = 0; v < NV; v++) acc[v] = (vd){0};
        for (int t = 0; t < n; t++) {
            const double a = X[t * DP + i];
            UNROLL for (int v = 0; v < NV; v++) acc[v] += a * ROW(X, t)[v];
        }
        UNROLL for (int v = 0; v < NV; v++) ROW(C, i)[v] = acc[v];
    }
}

/* padded double rows of the n token rows Xt */
static void widen(int n, const real_t (*restrict Xt)[TP], double *restrict X)
{
    for (int t = 0; t < n; t++) {
        for (int j = 0; j < D; j++) X[t * DP + j] = Xt[t][j];
        for (int j = D; j < DP; j++) X[t * DP + j] = 0.0;
    }
}

/* the shift of geoattn.kernels._taylor_exp.shifts: the least s >= 0 with min(|M|_1, |M|_F) <= THETA 2^s; -1 for a
   sample whose norm is not finite or that needs more than SMAX squarings */
static int shift_of(const double *restrict M)
{
    double one = 0.0, fro = 0.0;
    int nan = 0;
    for (int j = 0; j < D; j++) {
        double c = 0.0;
        for (int i = 0; i < D; i++) c += fabs(M[i * DP + j]);
        if (c != c) nan = 1;
        else if (c > one) one = c;
    }
    for (int i = 0; i < D; i++) for (int j = 0; j < D; j++) fro += M[i * DP + j] * M[i * DP + j];
    fro = sqrt(fro);
    if (nan || fro != fro) return -1;
    const double nrm = fro < one ? fro : one;
    if (!isfinite(nrm)) return -1;
    int e;
    const double m = frexp(nrm / THETA_, &e);
    const int s = m == 0.5 ? e - 1 : e;
    return s < 0 ? 0 : s > SMAX_ ? -1 : s;
}

/* the call's work space: NMAT padded matrices, the record (SLOTS + SMAX_ matrices) and T double token rows */
#define NMAT 13
static double *workspace(int64_t T)
{
    double *w = NULL;
    if (posix_memalign((void **)&w, 64, sizeof(double) * ((NMAT + SLOTS + SMAX_) * MS + T * DP))) return NULL;
    return w;
}

/* one sample's M = -A_s G (nA = -A_s); returns the shift (-1: failed, M then zero) */
static int sample_m(const double *G, const double *nA, double *M)
{
    mul(nA, G, M, 0);
    const int s = shift_of(M);
    if (s < 0) memset(M, 0, sizeof(double) * MS);
    return s;
}

/* the record's first matrix: 2^-s M (padded) */
static void scaled(const double *restrict M, int s, double *restrict P)
{
    const double c = ldexp(1.0, -(s < 0 ? 0 : s));
    for (int i = 0; i < D; i++) UNROLL for (int v = 0; v < NV; v++) ROW(P, i)[v] = c * ROW(M, i)[v];
}

/* the forward per sample: G, the sample kept when Tr G |A_s|_F is finite and at most bound[1] (bound[0] = |A_s|_F),
   M = -A_s G, s, E = exp(M), the structure check max|E^T G E - G| <= bound[2] Tr G and y = xE (E rounded to the
   tokens' type); samples not kept get y = 0, s = -2 and ok = 0, failed shifts s = -1, E = I and ok = 0. Returns 1
   when the scratch could not be allocated. */
int FN(vp_gram_exp_wide_tok_fwd)(int64_t n, int64_t T, const real_t *restrict x, const double *restrict As,
                                 const double *restrict bound, real_t *restrict y, int32_t *restrict s,
                                 uint8_t *restrict ok)
{
    double *w = workspace(T);
    if (w == NULL) return 1;
    void *tbase;
    real_t (*Xt)[TP] = trows(2 * T, &tbase);
    if (Xt == NULL) { free(w); return 1; }
    real_t (*Yt)[TP] = Xt + T;
    double *nA = w, *G = w + MS, *M = w + 2 * MS, *W = w + 3 * MS, *R = w + 4 * MS, *tr = w + 5 * MS;
    double *rec = w + NMAT * MS, *Xd = rec + (SLOTS + SMAX_) * MS;
    tmat Et;
    load(As, -1.0, nA);
    for (int64_t b = 0; b < n; b++) {
        tload(x + b * T * D, (int)T, Xt);
        widen((int)T, (const real_t (*)[TP])Xt, Xd);
        gram((int)T, Xd, G);
        double trace = 0.0;
        for (int i = 0; i < D; i++) trace += G[i * DP + i];
        const double scale = trace * bound[0];
        if (!(isfinite(scale) && scale <= bound[1])) {
            memset(y + b * T * D, 0, sizeof(real_t) * T * D);
            s[b] = -2;
            ok[b] = 0;
            continue;
        }
        const int sb = sample_m(G, nA, M);
        scaled(M, sb, rec);
        const double *E = powers_and_squarings(sb < 0 ? 0 : sb, rec);
        mul(G, E, W, 0);
        transpose(E, tr);
        mul(tr, W, R, 0);
        double r = 0.0;
        for (int i = 0; i < D; i++) {
            for (int j = 0; j < D; j++) {
                const double e = fabs(R[i * DP + j] - G[i * DP + j]);
                r = e > r || e != e ? e : r;
            }
        }
        s[b] = sb;
        ok[b] = sb >= 0 && r <= bound[2] * trace;
        to_tmat((double (*)[DP])E, 0, Et);
        tmul_n((int)T, (const real_t (*)[TP])Xt, Et, Yt, 0);
        tstore((const real_t (*)[TP])Yt, (int)T, y + b * T * D);
    }
    free(tbase);
    free(w);
    return 0;
}

/* the backward per sample: G and M recomputed from the tokens, Ebar = x^T ybar, the record recomputed and its reverse
   mode (Mbar), Gbar = A_s Mbar, gx = ybar E^T + x (Gbar + Gbar^T), and the sum over the call's samples of -Mbar G
   into gA[0] (first[0] = 1 marks it: the caller sums the parts of a split batch; nothing else of gA is written);
   ybar at the element strides Gs[0] (samples), Gs[1] (tokens), Gs[2] (entries); a sample not kept (s = -2) gets gx = 0,
   one whose shift failed (s = -1) gx = ybar (E = I); neither adds to gA. Returns 1 when the scratch could not be
   allocated. */
int FN(vp_gram_exp_wide_tok_bwd)(int64_t n, int64_t T, const real_t *restrict x, const real_t *restrict Gy,
                                 const int64_t *restrict Gs, const double *restrict As, const int32_t *restrict s,
                                 real_t *restrict gx, double *restrict gA, uint8_t *restrict first)
{
    double *w = workspace(T);
    if (w == NULL) return 1;
    void *tbase;
    real_t (*Xt)[TP] = trows(3 * T, &tbase);
    if (Xt == NULL) { free(w); return 1; }
    real_t (*Gd)[TP] = Xt + T, (*Out)[TP] = Xt + 2 * T;
    double *nA = w, *G = w + MS, *M = w + 2 * MS, *gE = w + 3 * MS, *gM = w + 4 * MS, *H = w + 5 * MS;
    double *work = w + 6 * MS, *gS = w + 12 * MS, *rec = w + NMAT * MS, *Xd = rec + (SLOTS + SMAX_) * MS;
    tmat Et, Ht;
    load(As, -1.0, nA);
    memset(gS, 0, sizeof(double) * MS);
    for (int64_t b = 0; b < n; b++) {
        real_t *gxb = gx + b * T * D;
        if (s[b] == -2) {
            memset(gxb, 0, sizeof(real_t) * T * D);
            continue;
        }
        tload_strided(Gy + b * Gs[0], (int)T, Gs[1], Gs[2], Gd);
        if (s[b] < 0) {
            tstore((const real_t (*)[TP])Gd, (int)T, gxb);
            continue;
        }
        tload(x + b * T * D, (int)T, Xt);
        widen((int)T, (const real_t (*)[TP])Xt, Xd);
        gram((int)T, Xd, G);
        sample_m(G, nA, M);
        scaled(M, s[b], rec);
        const double *E = powers_and_squarings(s[b], rec);
        tmul_tn((int)T, (const real_t (*)[TP])Xt, (const real_t (*)[TP])Gd, (double (*)[DP])gE);
        reverse_one(rec, s[b], gE, work, gM);
        mul(nA, gM, H, 0);  /* -Gbar */
        for (int i = 0; i < D; i++)
            for (int j = 0; j <= i; j++) {
                const double h = -(H[i * DP + j] + H[j * DP + i]);
                H[i * DP + j] = h;
                H[j * DP + i] = h;
            }
        mul(gM, G, gS, 1);
        to_tmat((double (*)[DP])E, 1, Et);
        to_tmat((double (*)[DP])H, 0, Ht);
        tmul_n((int)T, (const real_t (*)[TP])Gd, Et, Out, 0);
        tmul_n((int)T, (const real_t (*)[TP])Xt, Ht, Out, 1);
        tstore((const real_t (*)[TP])Out, (int)T, gxb);
    }
    if (n > 0) {
        store(gS, -1.0, gA);
        first[0] = 1;
    }
    free(tbase);
    free(w);
    return 0;
}
"""
