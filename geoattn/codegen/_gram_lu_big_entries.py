r"""The exported C functions of the Gram form's ``d x d`` stage for ``17 <= d <= 64``
(:mod:`geoattn.codegen.gram_lu_big_c` prints them after the stage): the stages alone on per-sample Gram matrices
(``vp_gram_lu_big_fwd``, ``vp_gram_lu_big_bwd``) and the fused kernels with the token products per sample
(``vp_gram_lu_big_tok_fwd``, ``vp_gram_lu_big_tok_bwd``).
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

/* the whole forward per sample, token products included: Gram = x^T x, N, R, y = x (2N - I) (products in double);
   returns 0, or 1 when the token buffers could not be allocated (nothing written then) */
int NAME(vp_gram_lu_big_tok_fwd)(int64_t B, int64_t T, const real_t *restrict x, const double *restrict As,
                                 const double *restrict tol, real_t *restrict y, double *restrict Gram,
                                 double *restrict Ns, double *restrict R)
{
    void *base;
    double (*X)[DP] = rows(2*T, &base);
    if (X == NULL) return 1;
    double (*Y)[DP] = X + T;
    mat A, G, N, P;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load_tokens(x + b*T*D, (int)T, X);
        mul_tn((int)T, (const double (*)[DP])X, (const double (*)[DP])X, G);
        store(G, Gram + b*D*D);
        R[b] = factor(G, A, *tol, N, P);
        store(N, Ns + b*D*D);
        mul_n((int)T, (const double (*)[DP])X, P, Y, 0, 0);
        store_tokens((const double (*)[DP])Y, (int)T, y + b*T*D);
    }
    free(base);
    return 0;
}

/* the whole backward per sample: Pbar^T = Gy^T x, the d x d stage on the forward's Gram (not recomputed from the
   tokens), gx = Gy P^T + x H (products in double), gA = Gram Mbar; returns 0, or 1 when the token buffers could not
   be allocated */
int NAME(vp_gram_lu_big_tok_bwd)(int64_t B, int64_t T, const real_t *restrict x, const real_t *restrict Gy,
                                 const double *restrict Gram, const double *restrict Ns, const double *restrict As,
                                 real_t *restrict gx, double *restrict gAs)
{
    void *base;
    double (*X)[DP] = rows(3*T, &base);
    if (X == NULL) return 1;
    double (*Gd)[DP] = X + T, (*Out)[DP] = X + 2*T;
    mat A, G, PbT, N, P, H, gA, PT;
    load(As, 0, A);
    for (int64_t b = 0; b < B; b++) {
        load_tokens(x + b*T*D, (int)T, X);
        load_tokens(Gy + b*T*D, (int)T, Gd);
        load(Gram + b*D*D, 0, G);
        mul_tn((int)T, (const double (*)[DP])Gd, (const double (*)[DP])X, PbT);
        load(Ns + b*D*D, 0, N);
        vjp(G, PbT, N, A, P, H, gA);
        store(gA, gAs + b*D*D);
        transpose(P, PT);
        mul_n((int)T, (const double (*)[DP])Gd, PT, Out, 0, 0);
        mul_n((int)T, (const double (*)[DP])X, H, Out, 1, 0);
        store_tokens((const double (*)[DP])Out, (int)T, gx + b*T*D);
    }
    free(base);
    return 0;
}
"""
