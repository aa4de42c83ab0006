r"""The C source of the native Chebyshev action ``exp(S) x`` (the ``chebyshev/native`` route of ``exp_skew_action``).

The kernel runs the expansion of Note [the Chebyshev action] (:mod:`geoattn.kernels._exp_action`) one sample at a
time, with ``X = S / rho`` (``T x T``) and the vectors ``w_k`` (``T x K``) of that sample in cache, each to the
sample's own degree; the degrees and the coefficients ``c_k`` are computed by the caller and passed in. Vectors are
held in row form, ``v_k = w_k^T`` (``K x TP``, ``TP`` the length ``T`` rounded up to ``VL`` lanes, the padding
zero), and a product ``v X^T`` is vectorised over the ``VL`` rows of one block of ``X`` (one vector register of
``VL`` reals: ``GEOATTN_VBYTES`` bytes, 16 float32 lanes with AVX-512 and 8 with AVX2, Note [vector width] in
:mod:`geoattn.codegen.cprinter`), its ``T`` columns taken one at a time, so every lane keeps its own sum:

* forward (ledger ``exp_action.chebyshev_recurrence``): ``v_0 = x^T``, ``v_1 = v_0 X^T``,
  ``v_{k+1} = 2 v_k X^T + v_{k-1}``, ``y^T = sum_k c_k v_k`` (the row form of :func:`~geoattn.kernels._exp_action.
  _series_list`, in the same order: the product's sum over the columns, then ``2 * sum + v_{k-1}``, then
  ``y + c_k v_k``);
* backward (ledger ``exp_action.chebyshev_adjoint``): the vectors ``v_0 .. v_{m-1}`` recomputed into a per-call
  buffer (``m K TP`` reals: 77 KB at ``T = 64``, ``K = 4``, ``m = 75``: storing them costs one forward, keeping
  them across calls would cost memory per sample), then the adjoint recurrence ``b_m = c_m g^T``,
  ``b_k = c_k g^T + b_{k+2} + 2 b_{k+1} X``, ``b_0 = c_0 g^T + b_2 + b_1 X``, and
  ``dL/dX = b_1^T v_0 + 2 sum_{k=2}^{m} b_k^T v_{k-1}`` as one sum over the ``m K`` stacked rows per entry,
  ``dL/dS = dL/dX / rho``, ``dL/dx = b_0^T``.

The factored entry points (``exp_action_qk_*``, OrthonormalAttention's route ``chebyshev-factored/native`` of
``exp_uta_action``) take ``q`` and ``k`` (``T x K``) instead of ``S`` and form ``X = S / rho`` with
:math:`S = \mathrm{uta}(qk^T)^T` in the per-call buffer, one sample at a time (ledger ``exp_action.uta_factor_vjp``):
``qk_norms`` returns the sums of squares of ``S`` and of ``fl(S S^T)`` behind the bound ``rho``
(``exp_action.skew_square_norm_bound``), ``qk_fwd`` runs the forward above, ``qk_bwd`` the backward, then
``dL/dq = striu(G^T - G) k`` and ``dL/dk = striu(G^T - G)^T q`` from ``G = dL/dS``. ``exp_action_miller`` runs
Miller's recurrence for the coefficients with the operations of the NumPy form in its order (no contraction), so
its bits are those of :func:`geoattn.kernels._exp_action.chebyshev_coefficients`.

The template is one text compiled with ``-DGEOATTN_D=<K>`` (the columns of ``x``) and ``-DGEOATTN_F32`` or
``-DGEOATTN_F64``. ``broken`` prints a deliberately wrong kernel for the tests' negative controls (:data:`BROKEN`:
the recurrence's sign, the adjoint's factor, the sign of ``S`` above the diagonal, the ``G^T`` term of the factors'
gradient).
"""

from __future__ import annotations

from ._exp_action_factored import FACTORED
from .cprinter import REAL_PRELUDE

__all__ = ["MAX_K", "BROKEN", "generate_exp_action_module", "target_name"]

#: the largest number of columns ``K`` the kernel is compiled for
MAX_K = 16
_CLAIMS = ["exp_action.chebyshev_recurrence", "exp_action.chebyshev_adjoint", "exp_action.uta_factor_vjp"]
#: the ways ``broken`` can break the kernel (the tests' negative controls)
BROKEN = ("recurrence_sign", "adjoint_factor", "uta_sign", "factor_transpose")


def target_name() -> str:
    """The generated file's name next to the other native kernels."""
    return "_native_exp_action.c"


HEADER = """/* Native CPU kernel of the Chebyshev action exp(S) x of skew S (T x T) on K = GEOATTN_D columns, 1 <= K <= {top}.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/exp_action_c.py); `geoattn codegen
   --check` fails when it is stale. One sample at a time, VL rows side by side, each to its own degree
   [ledger: {claims}].
   Compiled at first use by geoattn.kernels._native_exp_action, one library per K and real type
   (-DGEOATTN_D=<K> -DGEOATTN_F32 or -DGEOATTN_F64); never with -ffast-math.
*/

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#elif defined(__clang__)
#pragma clang fp contract(fast)
#endif

{prelude}
"""

TEMPLATE = r"""
#define K GEOATTN_D
#define VL ((int)(GEOATTN_VBYTES / sizeof(real_t)))
typedef real_t vr __attribute__((vector_size(GEOATTN_VBYTES)));
/* two blocks of rows per product where their 2 K sums and two rows of M fit in the registers */
#define TWO_BLOCKS (K <= 8 && 2 * K + 2 <= GEOATTN_VREGS)
/* four blocks of columns per outer product (16 sums) only with 32 registers */
#define FOUR_COLUMNS (GEOATTN_VREGS >= 32)

static inline __attribute__((always_inline)) vr splat(real_t x)
{
    vr zero = {0};
    return x - zero;  /* x - (+0) is x for every x (-0 and NaN included): folded into the broadcast */
}

static inline vr load(const real_t *p)
{
    vr v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store(real_t *p, vr v)
{
    memcpy(p, &v, sizeof v);
}

/* out[j, i] = sum_l M[l, i] v[j, l] for the K rows j of v (K x TP) and M (T x TP), NB blocks of VL i at a time
   (independent sums for the multiply-add units); the sum over l in order, as the columns of one product */
#define PRODUCT_BLOCKS(NB)                                                                                   \
    static void product_##NB(int64_t T, int64_t TP, int64_t ib, const real_t *M, const real_t *v, real_t *out) \
    {                                                                                                        \
        vr acc[NB][K];                                                                                       \
        for (int u = 0; u < NB; u++)                                                                         \
            for (int j = 0; j < K; j++) acc[u][j] = load(M + ib + u * VL) * splat(v[j * TP]);                \
        for (int64_t l = 1; l < T; l++) {                                                                    \
            for (int u = 0; u < NB; u++) {                                                                   \
                vr m = load(M + l * TP + ib + u * VL);                                                       \
                for (int j = 0; j < K; j++) acc[u][j] += m * splat(v[j * TP + l]);                           \
            }                                                                                                \
        }                                                                                                    \
        for (int u = 0; u < NB; u++)                                                                         \
            for (int j = 0; j < K; j++) store(out + j * TP + ib + u * VL, acc[u][j]);                        \
    }
PRODUCT_BLOCKS(1)
PRODUCT_BLOCKS(2)

static void product(int64_t T, int64_t TP, const real_t *M, const real_t *v, real_t *out)
{
    int64_t ib = 0;
    if (TWO_BLOCKS)
        for (; ib + 2 * VL <= TP; ib += 2 * VL) product_2(T, TP, ib, M, v, out);
    for (; ib < TP; ib += VL) product_1(T, TP, ib, M, v, out);
}

/* G[p, q] = sum_{r < R} Bs[r, p] V[r, q] for NP rows p from p0 and NQ blocks of VL columns q from qb: each row
   of V read once per NP rows p */
#define OUTER_BLOCK(NP, NQ)                                                                                  \
    static void outer_##NP##_##NQ(int64_t R, int64_t TP, const real_t *V, const real_t *Bs, int64_t p0,       \
                                  int64_t qb, vr out[8][4])                                                  \
    {                                                                                                        \
        vr acc[NP][NQ];                                                                                      \
        for (int a = 0; a < NP; a++)                                                                         \
            for (int e = 0; e < NQ; e++) acc[a][e] = splat(0);                                               \
        for (int64_t r = 0; r < R; r++) {                                                                    \
            vr w[NQ];                                                                                        \
            for (int e = 0; e < NQ; e++) w[e] = load(V + r * TP + qb + e * VL);                              \
            for (int a = 0; a < NP; a++) {                                                                   \
                vr bb = splat(Bs[r * TP + p0 + a]);                                                          \
                for (int e = 0; e < NQ; e++) acc[a][e] += w[e] * bb;                                         \
            }                                                                                                \
        }                                                                                                    \
        for (int a = 0; a < NP; a++)                                                                         \
            for (int e = 0; e < NQ; e++) out[a][e] = acc[a][e];                                              \
    }
OUTER_BLOCK(8, 1)
OUTER_BLOCK(4, 1)
OUTER_BLOCK(4, 2)
OUTER_BLOCK(4, 4)

/* Xt[l, i] = S[i, l] / r and, when Xr is not NULL, Xr[l, i] = S[l, i] / r (T x TP, padding zero) */
static void scaled(int64_t T, int64_t TP, const real_t *S, real_t r, real_t *Xt, real_t *Xr)
{
    for (int64_t l = 0; l < T; l++) {
        for (int64_t i = 0; i < T; i++) {
            Xt[l * TP + i] = S[i * T + l] / r;
            if (Xr) Xr[l * TP + i] = S[l * T + i] / r;
        }
        for (int64_t i = T; i < TP; i++) {
            Xt[l * TP + i] = 0;
            if (Xr) Xr[l * TP + i] = 0;
        }
    }
}

/* a (T x K, rows of K) into its row form at (K x TP), the padding zero */
static void rows(int64_t T, int64_t TP, const real_t *a, real_t *at)
{
    memset(at, 0, sizeof(real_t) * (size_t)(K * TP));
    for (int64_t i = 0; i < T; i++)
        for (int j = 0; j < K; j++) at[j * TP + i] = a[i * K + j];
}

static void unrows(int64_t T, int64_t TP, const real_t *at, real_t *a)
{
    for (int64_t i = 0; i < T; i++)
        for (int j = 0; j < K; j++) a[i * K + j] = at[j * TP + i];
}

/* vn = 2 p + vp (p = v X^T already in vn); the Chebyshev step of the ledger's recurrence */
static void step(int64_t TP, real_t *vn, const real_t *vp)
{
    for (int64_t q = 0; q < K * TP; q += VL) store(vn + q, load(vn + q) * splat(2)@SIGN@ load(vp + q));
}

static void axpy(int64_t TP, real_t c, const real_t *v, real_t *y)
{
    for (int64_t q = 0; q < K * TP; q += VL) store(y + q, load(y + q) + load(v + q) * splat(c));
}

/* the recurrence to degree m into y (y^T = sum c_k v_k) */
static void series(int64_t T, int64_t TP, int64_t m, const real_t *Xt, const real_t *c, real_t *v0, real_t *v1,
                   real_t *v2, real_t *y)
{
    for (int64_t q = 0; q < K * TP; q += VL) store(y + q, load(v0 + q) * splat(c[0]));
    if (m == 0) return;
    product(T, TP, Xt, v0, v1);
    axpy(TP, c[1], v1, y);
    for (int64_t k = 1; k < m; k++) {
        product(T, TP, Xt, v1, v2);
        step(TP, v2, v0);
        axpy(TP, c[k + 1], v2, y);
        real_t *t = v0;
        v0 = v1;
        v1 = v2;
        v2 = t;
    }
}

/* V[k] = v_k for k = 0 .. m - 1 (V[0] given), in the order of series */
static void basis(int64_t T, int64_t TP, int64_t m, const real_t *Xt, real_t *V)
{
    int64_t KT = K * TP;
    if (m > 1) product(T, TP, Xt, V, V + KT);
    for (int64_t k = 1; k + 1 < m; k++) {
        product(T, TP, Xt, V + k * KT, V + (k + 1) * KT);
        step(TP, V + (k + 1) * KT, V + (k - 1) * KT);
    }
}

/* the forward of one sample (X^T = Xt formed by the caller) from x (T x K) into out (T x K) */
static void forward_sample(int64_t T, int64_t TP, int64_t m, const real_t *Xt, const real_t *x, const real_t *c,
                           real_t *v0, real_t *v1, real_t *v2, real_t *y, real_t *out)
{
    rows(T, TP, x, v0);
    series(T, TP, m, Xt, c, v0, v1, v2, y);
    unrows(T, TP, y, out);
}

/* the reals of backward_sample's workspace past its OB guard reals */
static size_t backward_reals(int64_t CM, int64_t KT)
{
    return (size_t)(6 * KT + 2 * (CM > 1 ? CM - 1 : 1) * KT);
}

/* (dL/dS into gS, T x T; dL/dx into gx, T x K) of one sample for the incoming gradient g (T x K), with Xt and Xr
   formed by the caller when m > 0; w: backward_reals(CM, KT) + OB reals, its last OB zero */
static void backward_sample(int64_t T, int64_t TP, int64_t CM, int64_t m, const real_t *Xt, const real_t *Xr,
                            const real_t *x, real_t rho, const real_t *c, const real_t *g, real_t *gS, real_t *gx,
                            real_t *w)
{
    int64_t KT = K * TP;
    real_t *v0 = w, *v1 = v0 + KT, *v2 = v1 + KT, *y = v2 + KT, *gt = y + KT;
    real_t *bx = gt + KT, *V = bx + KT, *Bs = V + (CM > 1 ? CM - 1 : 1) * KT;
    rows(T, TP, g, gt);
    if (m == 0) {
        memset(gS, 0, sizeof(real_t) * (size_t)(T * T));
        for (int64_t q = 0; q < KT; q += VL) store(v0 + q, load(gt + q) * splat(c[0]));
        unrows(T, TP, v0, gx);
        return;
    }
    rows(T, TP, x, V);
    basis(T, TP, m, Xt, V);
    /* the adjoint recurrence: bn = b_{k+1}, bn2 = b_{k+2}; Bs[k - 1] = (k > 1 ? 2 : 1) b_k */
    real_t *bn = NULL, *bn2 = NULL, *bufs[3] = {v0, v1, v2};
    for (int64_t k = m; k >= 1; k--) {
        real_t *bk = bufs[k % 3];
        if (bn != NULL) product(T, TP, Xr, bn, bx);
        for (int64_t q = 0; q < KT; q += VL) {
            vr t = load(gt + q) * splat(c[k]);
            if (bn2 != NULL) t = load(bn2 + q) + t;
            if (bn != NULL) t = load(bx + q) * splat(2) + t;
            store(bk + q, t);
            store(Bs + (k - 1) * KT + q, k > 1 ? t * splat(2) : t@FACTOR@);
        }
        bn2 = bn;
        bn = bk;
    }
    product(T, TP, Xr, bn, bx);
    for (int64_t q = 0; q < KT; q += VL) {
        vr t = load(gt + q) * splat(c[0]) + load(bx + q);
        if (bn2 != NULL) t += load(bn2 + q);
        store(y + q, t);
    }
    unrows(T, TP, y, gx);
    /* dL/dS[p, q] = (sum_r Bs[r, p] V[r, q]) / rho over the m K stacked rows r (Bs zero past T) */
    int64_t R = m * K;
    int np = TP == VL ? 8 : 4;  /* one block of columns: eight rows p at a time, for independent sums */
    for (int64_t p0 = 0; p0 < T; p0 += np) {
        for (int64_t qb = 0; qb < TP;) {
            vr out[8][4];
            int nq = np == 8 ? 1 : FOUR_COLUMNS && TP - qb >= 4 * VL ? 4 : TP - qb >= 2 * VL ? 2 : 1;
            if (np == 8) outer_8_1(R, TP, V, Bs, p0, qb, out);
            else if (nq == 4) outer_4_4(R, TP, V, Bs, p0, qb, out);
            else if (nq == 2) outer_4_2(R, TP, V, Bs, p0, qb, out);
            else outer_4_1(R, TP, V, Bs, p0, qb, out);
            for (int a = 0; a < np && p0 + a < T; a++) {
                for (int e = 0; e < nq; e++) {
                    real_t tmp[VL];
                    store(tmp, out[a][e] / splat(rho));
                    int64_t q = qb + e * VL, wd = T - q < VL ? T - q : VL;
                    if (wd > 0) memcpy(gS + (p0 + a) * T + q, tmp, sizeof(real_t) * (size_t)wd);
                }
            }
            qb += nq * VL;
        }
    }
}

/* y (B x T x K) = exp(S) x per sample by its own degree deg[b] <= meta[0] - 1 with coefficients c (B x meta[0])
   and bound rho (B); returns 1 when its buffer could not be allocated (the loader raises), 0 otherwise */
int GEOATTN_NAME(exp_action_fwd)(int64_t B, int64_t T, const real_t *Ss, const real_t *xs, const real_t *rho,
                                 const real_t *cs, const int64_t *deg, const int64_t *meta, real_t *ys)
{
    int64_t TP = (T + VL - 1) / VL * VL, CM = meta[0];
    real_t *Xt = malloc(sizeof(real_t) * (size_t)(T * TP + 4 * K * TP));
    if (Xt == NULL) return 1;
    real_t *v0 = Xt + T * TP, *v1 = v0 + K * TP, *v2 = v1 + K * TP, *y = v2 + K * TP;
    for (int64_t b = 0; b < B; b++) {
        scaled(T, TP, Ss + b * T * T, rho[b], Xt, NULL);
        forward_sample(T, TP, deg[b], Xt, xs + b * T * K, cs + b * CM, v0, v1, v2, y, ys + b * T * K);
    }
    free(Xt);
    return 0;
}

/* OB reals past the stacked rows: the outer products read a block of 8 or 4 rows p from every row of Bs, past its
   TP entries where TP < 8 (float64 with 4 or 2 lanes a vector); those rows p >= T are never stored */
#define OB 8

/* (dL/dS, dL/dx) per sample for the incoming gradient g (B x T x K) of y = exp(S) x (the forward's arguments);
   returns 1 when its buffers could not be allocated, 0 otherwise */
int GEOATTN_NAME(exp_action_bwd)(int64_t B, int64_t T, const real_t *Ss, const real_t *xs, const real_t *rho,
                                 const real_t *cs, const int64_t *deg, const int64_t *meta, const real_t *gs,
                                 real_t *gSs, real_t *gxs)
{
    int64_t TP = (T + VL - 1) / VL * VL, CM = meta[0], KT = K * TP;
    size_t nw = backward_reals(CM, KT) + OB;
    real_t *Xt = malloc(sizeof(real_t) * ((size_t)(2 * T * TP) + nw));
    if (Xt == NULL) return 1;
    real_t *Xr = Xt + T * TP, *w = Xr + T * TP;
    memset(w + nw - OB, 0, sizeof(real_t) * OB);
    for (int64_t b = 0; b < B; b++) {
        if (deg[b] > 0) scaled(T, TP, Ss + b * T * T, rho[b], Xt, Xr);
        backward_sample(T, TP, CM, deg[b], Xt, Xr, xs + b * T * K, rho[b], cs + b * CM, gs + b * T * K,
                        gSs + b * T * T, gxs + b * T * K, w);
    }
    free(Xt);
    return 0;
}

"""

def generate_exp_action_module(broken: str | None = None) -> str:
    """The text of ``_native_exp_action.c`` (``broken``: one of :data:`BROKEN`, a deliberately wrong kernel)."""
    if broken is not None and broken not in BROKEN:
        raise ValueError(f"Expected broken in {BROKEN} or None. Got {broken!r}.")
    head = HEADER.format(top=MAX_K, claims=", ".join(_CLAIMS), prelude=REAL_PRELUDE)
    body = (TEMPLATE + FACTORED).replace("@SIGN@", " -" if broken == "recurrence_sign" else " +")
    body = body.replace("@FACTOR@", " * splat(2)" if broken == "adjoint_factor" else "")
    body = body.replace("@USIGN@", "" if broken == "uta_sign" else "-")
    body = body.replace("@GST@", "-" if broken == "factor_transpose" else "gS[b * T + a] - ")
    return head + f"#if GEOATTN_D >= 1 && GEOATTN_D <= {MAX_K}\n" + body + "#endif\n"
