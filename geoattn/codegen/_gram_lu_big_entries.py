r"""The exported C functions of the Gram form's ``d x d`` stage for ``17 <= d <= 64``
(:mod:`geoattn.codegen.gram_lu_big_c` prints them after the stage): the stages alone on per-sample Gram matrices
(``vp_gram_lu_big_fwd``, ``vp_gram_lu_big_bwd``) and the fused kernels with the token products per sample
(``vp_gram_lu_big_tok_fwd``, ``vp_gram_lu_big_tok_bwd``; their products with ``P`` and ``H`` in the tokens' type,
:mod:`geoattn.codegen._gram_lu_big_tokens`).
"""

from __future__ import annotations

__all__ = ["ENTRIES"]

#: the C text of the exported functions (plain C over the stage's static functions and macros)
ENTRIES = r"""/* forward stage: per sample N, P = 2N - I and R (the residual's largest entry) from Gram; As the whole
   skew matrix, *tol the largest residual entry kept (eps / 16 of the tokens' type) */
void NAME(vp_gram_lu_big_fwd)(int64_t B, int64_t T, const double *restrict Gram, const double *restrict As,
                              const double *restrict tol, double *restrict Ns, double *restrict Ps,
                              double *restrict R)
{
    (void)T;
    mat A, G, N, P;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load(Gram + b*D*D, 0, G);
        R[b] = factor(G, A, *tol, N, P);
        store(N, Ns + b*D*D);
        store(P, Ps + b*D*D);
    }
}

/* backward stage: per sample P = 2N - I, H = A Mbar^T - Mbar A and gA = Gram Mbar with Mbar = -2 N Pbar^T N */
void NAME(vp_gram_lu_big_bwd)(int64_t B, int64_t T, const double *restrict Gram, const double *restrict Pbar,
                              const double *restrict Ns, const double *restrict As, double *restrict Ps,
                              double *restrict Hs, double *restrict gAs)
{
    (void)T;
    mat A, G, X, N, P, H, gA;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load(Gram + b*D*D, 0, G);
        load(Pbar + b*D*D, 1, X);
        load(Ns + b*D*D, 0, N);
        vjp(G, X, N, A, P, H, gA);
        store(P, Ps + b*D*D);
        store(H, Hs + b*D*D);
        store(gA, gAs + b*D*D);
    }
}

/* the whole forward per sample, token products included: Gram = x^T x (in double), N, R, y = x (2N - I) (in the
   tokens' type, TOKENS of geoattn.codegen._gram_lu_big_tokens); returns 0, or 1 when the token buffers could not be
   allocated (nothing written then) */
int NAME(vp_gram_lu_big_tok_fwd)(int64_t B, int64_t T, const real_t *restrict x, const double *restrict As,
                                 const double *restrict tol, real_t *restrict y, double *restrict Gram,
                                 double *restrict Ns, double *restrict R)
{
    void *base, *tbase;
    double (*X)[DP] = rows(T, &base);
    if (X == NULL) return 1;
    real_t (*Xt)[TP] = trows(2*T, &tbase);
    if (Xt == NULL) {
        free(base);
        return 1;
    }
    real_t (*Yt)[TP] = Xt + T;
    mat A, G, N, P;
    tmat Pt;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load_tokens(x + b*T*D, (int)T, X);
        tload(x + b*T*D, (int)T, Xt);
        mul_tn((int)T, (const double (*)[DP])X, (const double (*)[DP])X, G);
        store(G, Gram + b*D*D);
        R[b] = factor(G, A, *tol, N, P);
        store(N, Ns + b*D*D);
        to_tmat(P, 0, Pt);
        tmul_n((int)T, (const real_t (*)[TP])Xt, Pt, Yt, 0);
        tstore((const real_t (*)[TP])Yt, (int)T, y + b*T*D);
    }
    free(tbase);
    free(base);
    return 0;
}

/* the whole backward per sample: Pbar^T = Gy^T x, the d x d stage on the forward's Gram (not recomputed from the
   tokens), gx = Gy P^T + x H (token products in the tokens' type), gA = Gram Mbar; Gy at the element strides
   Gs[0] (samples), Gs[1] (tokens), Gs[2] (entries); returns 0, or 1 when the token buffers could not be allocated */
int NAME(vp_gram_lu_big_tok_bwd)(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy,
                                 const int64_t *restrict Gs, const double *restrict Gram, const double *restrict Ns,
                                 const double *restrict As, real_t *restrict gx, double *restrict gAs)
{
    void *tbase;
    real_t (*Xt)[TP] = trows(3*T, &tbase);
    if (Xt == NULL) return 1;
    real_t (*Gd)[TP] = Xt + T, (*Out)[TP] = Xt + 2*T;
    mat A, G, PbT, N, P, H, gA;
    tmat PTt, Ht;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        tload(x + b*T*D, (int)T, Xt);
        tload_strided(Gy + b*Gs[0], (int)T, Gs[1], Gs[2], Gd);
        load(Gram + b*D*D, 0, G);
        tmul_tn((int)T, (const real_t (*)[TP])Gd, (const real_t (*)[TP])Xt, PbT);
        load(Ns + b*D*D, 0, N);
        vjp(G, PbT, N, A, P, H, gA);
        store(gA, gAs + b*D*D);
        to_tmat(P, 1, PTt);
        to_tmat(H, 0, Ht);
        tmul_n((int)T, (const real_t (*)[TP])Gd, PTt, Out, 0);
        tmul_n((int)T, (const real_t (*)[TP])Xt, Ht, Out, 1);
        tstore((const real_t (*)[TP])Out, (int)T, gx + b*T*D);
    }
    free(tbase);
    return 0;
}
"""
