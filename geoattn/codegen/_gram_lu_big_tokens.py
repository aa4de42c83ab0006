r"""The token products of the wide stage's fused kernels in the tokens' own type (printed by
:mod:`geoattn.codegen.gram_lu_big_c` between the ``d x d`` stage and the exported functions).

``y = xP``, ``Pbar^T = \bar y^Tx`` and ``gx = \bar yP^T + xH`` take ``P``, ``H`` rounded to the tokens' type and
accumulate in it, as the batched products of the unfused path above ``FUSED_MAX_DIM`` do: in a float32 library
twice as many lanes per vector as in double (16 and 8 with AVX-512, 8 and 4 with AVX2); in a float64 library the
same text runs in double.
``Gram = x^Tx`` stays in double (the residual check holds ``N`` to it). Token rows are padded to ``TP`` entries
(zero past column ``D``).
"""

from __future__ import annotations

__all__ = ["TOKENS"]

#: the C text (over the stage's macros: D, real_t, mat, DP, NV)
TOKENS = r"""
/* token rows of real_t in vectors of TL lanes, NT vectors a row, TP = TL NT entries (zero padded) */
#define TL ((int)(GEOATTN_VBYTES / sizeof(real_t)))
#define NT ((D + TL - 1) / TL)
#define TP (TL * NT)
/* rows per block: 16 vector accumulators with AVX-512, 8 with 16 registers */
#define TRB (GEOATTN_VREGS >= 32 ? (NT <= 2 ? 8 : NT <= 4 ? 4 : 2) : (NT <= 2 ? 4 : NT <= 4 ? 2 : 1))
typedef real_t vt __attribute__((vector_size(GEOATTN_VBYTES), may_alias));
typedef real_t tmat[D][TP] __attribute__((aligned(64)));
#define VT(M, i) ((vt *)(M)[i])

/* n padded token rows of real_t, aligned to 64 bytes; *base is what to free */
static real_t (*trows(int64_t n, void **base))[TP]
{
    *base = malloc(sizeof(real_t[TP]) * (size_t)n + 64);
    if (*base == NULL) return NULL;
    return (real_t (*)[TP])(((uintptr_t)*base + 63) & ~(uintptr_t)63);
}

static void tload(const real_t *restrict S, int n, real_t (*restrict X)[TP])
{
    for (int t = 0; t < n; t++) {
        for (int j = 0; j < D; j++) X[t][j] = S[t*D + j];
        for (int j = D; j < TP; j++) X[t][j] = 0;
    }
}

/* the same from n rows of S at element strides st (rows) and sj (entries): an expanded incoming gradient (the one of
   out.sum(), every stride 0) is read where it lies, never materialised */
static void tload_strided(const real_t *restrict S, int n, int64_t st, int64_t sj, real_t (*restrict X)[TP])
{
    for (int t = 0; t < n; t++) {
        for (int j = 0; j < D; j++) X[t][j] = S[t*st + j*sj];
        for (int j = D; j < TP; j++) X[t][j] = 0;
    }
}

static void tstore(const real_t (*restrict X)[TP], int n, real_t *restrict S)
{
    for (int t = 0; t < n; t++)
        for (int j = 0; j < D; j++) S[t*D + j] = X[t][j];
}

/* M (double, padded) rounded into Mt, transposed when tr */
static void to_tmat(mat M, int tr, tmat Mt)
{
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++) Mt[i][j] = (real_t)(tr ? M[j][i] : M[i][j]);
        for (int j = D; j < TP; j++) Mt[i][j] = 0;
    }
}

/* C = X Y (+ C when add) for n token rows X and Y of D rows; TRB rows of C at a time in vector accumulators */
static void tmul_n(int n, const real_t (*restrict X)[TP], tmat Y, real_t (*C)[TP], int add)
{
    int i = 0;
    for (; TRB > 1 && i + TRB <= n; i += TRB) {
        vt acc[TRB][NT];
        UNROLL for (int r = 0; r < TRB; r++) UNROLL for (int v = 0; v < NT; v++) acc[r][v] = add ? VT(C, i + r)[v]
                                                                                                     : (vt){0};
        for (int k = 0; k < D; k++) {
            vt y[NT];
            UNROLL for (int v = 0; v < NT; v++) y[v] = VT(Y, k)[v];
            UNROLL for (int r = 0; r < TRB; r++) {
                const real_t a = X[i + r][k];
                UNROLL for (int v = 0; v < NT; v++) acc[r][v] += a*y[v];
            }
        }
        UNROLL for (int r = 0; r < TRB; r++) UNROLL for (int v = 0; v < NT; v++) VT(C, i + r)[v] = acc[r][v];
    }
    for (; i < n; i++) {
        vt acc[NT];
        UNROLL for (int v = 0; v < NT; v++) acc[v] = add ? VT(C, i)[v] : (vt){0};
        for (int k = 0; k < D; k++) {
            const real_t a = X[i][k];
            UNROLL for (int v = 0; v < NT; v++) acc[v] += a*VT(Y, k)[v];
        }
        UNROLL for (int v = 0; v < NT; v++) VT(C, i)[v] = acc[v];
    }
}

/* C = X^T Y (D x D, a sum over n token rows) into the double matrix Cd */
static void tmul_tn(int n, const real_t (*X)[TP], const real_t (*Y)[TP], mat Cd)
{
    tmat C;
    int i = 0;
    for (; TRB > 1 && i + TRB <= D; i += TRB) {
        vt acc[TRB][NT];
        UNROLL for (int r = 0; r < TRB; r++) UNROLL for (int v = 0; v < NT; v++) acc[r][v] = (vt){0};
        for (int t = 0; t < n; t++) {
            vt y[NT];
            UNROLL for (int v = 0; v < NT; v++) y[v] = VT(Y, t)[v];
            UNROLL for (int r = 0; r < TRB; r++) {
                const real_t a = X[t][i + r];
                UNROLL for (int v = 0; v < NT; v++) acc[r][v] += a*y[v];
            }
        }
        UNROLL for (int r = 0; r < TRB; r++) UNROLL for (int v = 0; v < NT; v++) VT(C, i + r)[v] = acc[r][v];
    }
    for (; i < D; i++) {
        vt acc[NT];
        UNROLL for (int v = 0; v < NT; v++) acc[v] = (vt){0};
        for (int t = 0; t < n; t++) {
            const real_t a = X[t][i];
            UNROLL for (int v = 0; v < NT; v++) acc[v] += a*VT(Y, t)[v];
        }
        UNROLL for (int v = 0; v < NT; v++) VT(C, i)[v] = acc[v];
    }
    for (int r = 0; r < D; r++) {
        for (int j = 0; j < D; j++) Cd[r][j] = C[r][j];
        for (int j = D; j < DP; j++) Cd[r][j] = 0.0;
    }
}

"""
