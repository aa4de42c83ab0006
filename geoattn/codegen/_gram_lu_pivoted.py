"""The pivoted form of the native LU kernels' ``d x d`` stage: LU with partial pivoting in double, one lane at a
time (the form of the kernels before :mod:`geoattn.codegen.gram_lu_stage`'s pivot-free one, which recomputes with it
every sample whose residual fails). A ``str.format`` template in ``d`` and ``sl``."""

from __future__ import annotations

__all__ = ["PIVOTED"]

#: the pivoted form at D (the recomputation of the samples the fast form does not keep)
PIVOTED = r"""
#define D {d}
/* matrices are [D][DP][SL]: the padding keeps the stack arrays from lying 4 KiB apart (store-load aliasing) */
#define DP (D + 1)
/* samples per group of the d x d stage */
#define SL {sl}

/* The d x d stage runs SL samples at a time, every value an array over the lanes (Note [lanes] in
   geoattn.codegen.cprinter): the innermost loops are over the lanes, which the compiler vectorises without
   reassociating a sum (no -ffast-math); each lane's arithmetic is that of a scalar LU. The pivot search and the
   row exchanges are per lane. Lanes past nl repeat sample nl - 1 and are not stored. */
#define LOOP_L for (int l = 0; l < SL; l++)

/* the (nl, D, D) matrices at S as [D][DP][SL] */
static void gram_lu_load(const double *restrict S, int nl, double out[D][DP][SL])
{{
    for (int l = 0; l < SL; l++) {{
        const double *s = S + (l < nl ? l : nl - 1)*D*D;
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) out[i][j][l] = s[i*D + j];
    }}
}}

static void gram_lu_store(const double in[D][DP][SL], int nl, double *restrict S)
{{
    for (int l = 0; l < nl; l++)
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++) S[l*D*D + i*D + j] = in[i][j][l];
}}

/* M = I + Gram A; PM = LU with partial pivoting; N = M^{{-T}} from U^T L^T P N = I; P = 2N - I; R the largest
   entry of |M^T N - I| (NaN when one is: a zero or non-finite pivot shows there). */
static void gram_lu_factor(const double *restrict G, int nl, const double *restrict A, double *restrict N,
                           double *restrict P, double *restrict R)
{{
    double M[D][DP][SL], LU[D][DP][SL], Y[D][DP][SL], E[D][SL], m[SL];
    int piv[D][SL];
    gram_lu_load(G, nl, Y);
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{
            LOOP_L M[i][j][l] = i == j ? 1.0 : 0.0;
            for (int k = 0; k < D; k++) {{
                const double a = A[k*D + j];
                LOOP_L M[i][j][l] += Y[i][k][l]*a;
            }}
            LOOP_L LU[i][j][l] = M[i][j][l];
        }}
    for (int k = 0; k < D; k++) {{
        for (int l = 0; l < SL; l++) {{
            int p = k;
            double best = fabs(LU[k][k][l]);
            for (int i = k + 1; i < D; i++)
                if (fabs(LU[i][k][l]) > best) {{ best = fabs(LU[i][k][l]); p = i; }}
            piv[k][l] = p;
            if (p != k)
                for (int j = 0; j < D; j++) {{ double t = LU[k][j][l]; LU[k][j][l] = LU[p][j][l]; LU[p][j][l] = t; }}
        }}
        for (int i = k + 1; i < D; i++) {{
            LOOP_L LU[i][k][l] /= LU[k][k][l];
            for (int j = k + 1; j < D; j++)
                LOOP_L LU[i][j][l] -= LU[i][k][l]*LU[k][j][l];
        }}
    }}
    /* U^T Z = I (forward substitution), then L^T Y = Z (backward, unit diagonal), then N = P^T Y */
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {{  /* Z = U^{{-T}} is lower triangular: row k of it ends at column k */
            LOOP_L Y[i][j][l] = i == j ? 1.0 : 0.0;
            if (j > i) continue;
            for (int k = j; k < i; k++)
                LOOP_L Y[i][j][l] -= LU[k][i][l]*Y[k][j][l];
            LOOP_L Y[i][j][l] /= LU[i][i][l];
        }}
    for (int i = D - 2; i >= 0; i--)
        for (int j = 0; j < D; j++)
            for (int k = i + 1; k < D; k++)
                LOOP_L Y[i][j][l] -= LU[k][i][l]*Y[k][j][l];
    for (int k = D - 1; k >= 0; k--)
        for (int l = 0; l < SL; l++) {{
            const int p = piv[k][l];
            if (p != k)
                for (int j = 0; j < D; j++) {{ double t = Y[k][j][l]; Y[k][j][l] = Y[p][j][l]; Y[p][j][l] = t; }}
        }}
    LOOP_L m[l] = 0.0;
    for (int i = 0; i < D; i++) {{
        for (int j = 0; j < D; j++) {{
            LOOP_L E[j][l] = i == j ? -1.0 : 0.0;
            for (int k = 0; k < D; k++)
                LOOP_L E[j][l] += M[k][i][l]*Y[k][j][l];
            for (int l = 0; l < SL; l++) {{
                const double a = fabs(E[j][l]);
                if (a > m[l] || a != a) m[l] = a;
            }}
        }}
    }}
    gram_lu_store(Y, nl, N);
    for (int i = 0; i < D; i++) LOOP_L Y[i][i][l] -= 0.5;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) LOOP_L Y[i][j][l] *= 2.0;
    gram_lu_store(Y, nl, P);
    for (int l = 0; l < nl; l++) R[l] = m[l];
}}

"""
