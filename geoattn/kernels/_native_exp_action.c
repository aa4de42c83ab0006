/* Native CPU kernel of the Chebyshev action exp(S) x of skew S (T x T) on K = GEOATTN_D columns, 1 <= K <= 16.

   DO NOT EDIT: this file is written by `geoattn codegen` (geoattn/codegen/exp_action_c.py); `geoattn codegen
   --check` fails when it is stale. One sample at a time, VL rows side by side, each to its own degree
   [ledger: exp_action.chebyshev_recurrence, exp_action.chebyshev_adjoint, exp_action.uta_factor_vjp].
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

#if defined(GEOATTN_F32)
typedef float real_t;
#define GEOATTN_NAME(name) geoattn_##name##_f32
#elif defined(GEOATTN_F64)
typedef double real_t;
#define GEOATTN_NAME(name) geoattn_##name##_f64
#else
#error "compile with -DGEOATTN_F32 or -DGEOATTN_F64"
#endif
/* one vector register of the target: GCC keeps a wider vector type in memory (Note [vector width]);
   a definition given before this one (the tests' other widths) is kept */
#if defined(GEOATTN_VBYTES)
#elif defined(__AVX512F__)
#define GEOATTN_VBYTES 64
#define GEOATTN_VREGS 32
#elif defined(__AVX__)
#define GEOATTN_VBYTES 32
#define GEOATTN_VREGS 16
#else
#define GEOATTN_VBYTES 16
#define GEOATTN_VREGS 16
#endif
#if GEOATTN_D >= 1 && GEOATTN_D <= 16

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
    for (int64_t q = 0; q < K * TP; q += VL) store(vn + q, load(vn + q) * splat(2) + load(vp + q));
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
            store(Bs + (k - 1) * KT + q, k > 1 ? t * splat(2) : t);
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


/* The factored form S = uta(q k^T)^T of OrthonormalAttention (q, k: T x K), never stored as a T x T tensor
   [ledger: exp_action.uta_factor_vjp]: S[i, l] = q_l . k_i for i > l, -(q_i . k_l) for i < l, 0 for i = l.

   Xt[l, i] = S[i, l] / r and, when Xr is not NULL, Xr[l, i] = S[l, i] / r (T x TP, padding zero); qt and kt are
   the row forms of q and k (K x TP); each entry is the sum over j in order, one multiply-add per term */
static void factored(int64_t T, int64_t TP, const real_t *q, const real_t *k, const real_t *qt, const real_t *kt,
                     real_t r, real_t *Xt, real_t *Xr)
{
    for (int64_t l = 0; l < T; l++) {
        for (int64_t ib = 0; ib < TP; ib += VL) {
            vr lo = load(kt + ib) * splat(q[l * K]), up = load(qt + ib) * splat(k[l * K]);
            for (int j = 1; j < K; j++) {
                lo += load(kt + j * TP + ib) * splat(q[l * K + j]);
                up += load(qt + j * TP + ib) * splat(k[l * K + j]);
            }
            real_t a[VL], u[VL];
            store(a, lo);
            store(u, up);
            for (int e = 0; e < VL; e++) {
                int64_t i = ib + e;
                real_t s = i > l ? a[e] : i < l ? -u[e] : 0;
                Xt[l * TP + i] = i < T ? s / r : 0;
            }
        }
    }
    if (Xr != NULL)
        for (int64_t l = 0; l < T; l++) {
            for (int64_t i = 0; i < T; i++) Xr[l * TP + i] = Xt[i * TP + l];
            for (int64_t i = T; i < TP; i++) Xr[l * TP + i] = 0;
        }
}

/* dL/dq = striu(gS^T - gS) k and dL/dk = striu(gS^T - gS)^T q (T x K each) from dL/dS (T x T) of
   S = uta(q k^T)^T: dL/dU[a, b] = gS[b, a] - gS[a, b] for the strict upper triangle U of C = q k^T */
static void factor_grads(int64_t T, const real_t *gS, const real_t *q, const real_t *k, real_t *gq, real_t *gk)
{
    memset(gq, 0, sizeof(real_t) * (size_t)(T * K));
    memset(gk, 0, sizeof(real_t) * (size_t)(T * K));
    for (int64_t a = 0; a < T; a++)
        for (int64_t b = a + 1; b < T; b++) {
            real_t h = gS[b * T + a] - gS[a * T + b];
            for (int j = 0; j < K; j++) {
                gq[a * K + j] += h * k[b * K + j];
                gk[b * K + j] += h * q[a * K + j];
            }
        }
}

/* ||S||_F^2 and ||fl(S S^T)||_F^2 (= ||S^2||_F^2 in exact arithmetic: S S^T = -S^2) of one sample from Xt
   (Xt[l, i] = S[i, l], padding zero): squares and sums in real_t vectors, the lanes added in double;
   (S S^T)[a, b] = sum_l Xt[l, a] Xt[l, b], four rows a at a time for independent sums */
static void frobenius_norms(int64_t T, int64_t TP, const real_t *Xt, double *f, double *f2)
{
    real_t t[VL];
    vr acc = splat(0);
    for (int64_t q = 0; q < T * TP; q += VL) {
        vr v = load(Xt + q);
        acc += v * v;
    }
    store(t, acc);
    double s = 0, s2 = 0;
    for (int e = 0; e < VL; e++) s += t[e];
    for (int64_t a0 = 0; a0 < T; a0 += 4) {
        for (int64_t ib = 0; ib < TP; ib += VL) {
            vr g[4] = {splat(0), splat(0), splat(0), splat(0)};
            for (int64_t l = 0; l < T; l++) {
                vr m = load(Xt + l * TP + ib);
                for (int u = 0; u < 4; u++) g[u] += m * splat(a0 + u < T ? Xt[l * TP + a0 + u] : 0);
            }
            vr sq = g[0] * g[0] + g[1] * g[1] + g[2] * g[2] + g[3] * g[3];
            store(t, sq);
            for (int e = 0; e < VL; e++) s2 += t[e];
        }
    }
    *f = s;
    *f2 = s2;
}

/* per sample, ||S||_F^2 and ||fl(S S^T)||_F^2 into out[2 b], out[2 b + 1] (frobenius_norms) for S = uta(q k^T)^T:
   the bound rho of the caller */
int GEOATTN_NAME(exp_action_qk_norms)(int64_t B, int64_t T, const real_t *qs, const real_t *ks, double *out)
{
    int64_t TP = (T + VL - 1) / VL * VL, KT = K * TP;
    real_t *Xt = malloc(sizeof(real_t) * (size_t)(T * TP + 2 * KT));
    if (Xt == NULL) return 1;
    real_t *qt = Xt + T * TP, *kt = qt + KT;
    for (int64_t b = 0; b < B; b++) {
        const real_t *q = qs + b * T * K, *k = ks + b * T * K;
        rows(T, TP, q, qt);
        rows(T, TP, k, kt);
        factored(T, TP, q, k, qt, kt, 1, Xt, NULL);
        frobenius_norms(T, TP, Xt, out + 2 * b, out + 2 * b + 1);
    }
    free(Xt);
    return 0;
}

/* Miller's backward recurrence for J_k(r) / norm, k = 0 .. meta[0], per sample from k = meta[1] (even) down, the
   operations of geoattn.kernels._exp_action._miller_cpu in its order with no contraction (the same bits): 1 / r,
   J_{k-1} = (2k / r) J_k - J_{k+1}, every value kept so far scaled by 1e-250 when |J_{k-1}| > 1e250, the norm
   J_0 + 2 sum J_{2k}; out (B x (meta[0] + 1)) */
__attribute__((optimize("fp-contract=off")))
int GEOATTN_NAME(exp_action_miller)(int64_t B, int64_t T, const double *rs, const int64_t *meta, double *out)
{
#if defined(__clang__)
#pragma clang fp contract(off)  /* clang ignores the optimize attribute */
#endif
    (void)T;
    int64_t degree = meta[0], start = meta[1];
    for (int64_t b = 0; b < B; b++) {
        double inv = 1.0 / rs[b], nxt = 0.0, cur = 1.0, norm = 0.0;
        double *vals = out + b * (degree + 1);
        for (int64_t j = 0; j <= degree; j++) vals[j] = 0.0;
        for (int64_t k = start; k > 0; k--) {
            if (k <= degree) vals[k] = cur;
            if (k % 2 == 0) norm = norm + 2.0 * cur;
            double prev = (inv * (double)(2 * k)) * cur - nxt;
            nxt = cur;
            cur = prev;
            if (cur > 1e250 || cur < -1e250) {  /* |cur| > 1e250, false for NaN as in NumPy */
                cur *= 1e-250;
                nxt *= 1e-250;
                norm *= 1e-250;
                for (int64_t j = k; j <= degree; j++) vals[j] *= 1e-250;
            }
        }
        vals[0] = cur;
        norm = norm + cur;
        for (int64_t j = 0; j <= degree; j++) vals[j] = vals[j] / norm;
    }
    return 0;
}

/* y = exp(S) x per sample for S = uta(q k^T)^T (q, k, x: B x T x K), the arguments of exp_action_fwd otherwise */
int GEOATTN_NAME(exp_action_qk_fwd)(int64_t B, int64_t T, const real_t *qs, const real_t *ks, const real_t *xs,
                                    const real_t *rho, const real_t *cs, const int64_t *deg, const int64_t *meta,
                                    real_t *ys)
{
    int64_t TP = (T + VL - 1) / VL * VL, CM = meta[0], KT = K * TP;
    real_t *Xt = malloc(sizeof(real_t) * (size_t)(T * TP + 6 * KT));
    if (Xt == NULL) return 1;
    real_t *v0 = Xt + T * TP, *v1 = v0 + KT, *v2 = v1 + KT, *y = v2 + KT, *qt = y + KT, *kt = qt + KT;
    for (int64_t b = 0; b < B; b++) {
        const real_t *q = qs + b * T * K, *k = ks + b * T * K;
        rows(T, TP, q, qt);
        rows(T, TP, k, kt);
        factored(T, TP, q, k, qt, kt, rho[b], Xt, NULL);
        forward_sample(T, TP, deg[b], Xt, xs + b * T * K, cs + b * CM, v0, v1, v2, y, ys + b * T * K);
    }
    free(Xt);
    return 0;
}

/* (dL/dq, dL/dk, dL/dx) per sample for the incoming gradient g of exp_action_qk_fwd (its arguments) */
int GEOATTN_NAME(exp_action_qk_bwd)(int64_t B, int64_t T, const real_t *qs, const real_t *ks, const real_t *xs,
                                    const real_t *rho, const real_t *cs, const int64_t *deg, const int64_t *meta,
                                    const real_t *gs, real_t *gqs, real_t *gks, real_t *gxs)
{
    int64_t TP = (T + VL - 1) / VL * VL, CM = meta[0], KT = K * TP;
    size_t nw = backward_reals(CM, KT) + OB;
    real_t *Xt = malloc(sizeof(real_t) * ((size_t)(2 * T * TP + T * T + 2 * KT) + nw));
    if (Xt == NULL) return 1;
    real_t *Xr = Xt + T * TP, *gS = Xr + T * TP, *qt = gS + T * T, *kt = qt + KT, *w = kt + KT;
    memset(w + nw - OB, 0, sizeof(real_t) * OB);
    for (int64_t b = 0; b < B; b++) {
        const real_t *q = qs + b * T * K, *k = ks + b * T * K;
        if (deg[b] > 0) {
            rows(T, TP, q, qt);
            rows(T, TP, k, kt);
            factored(T, TP, q, k, qt, kt, rho[b], Xt, Xr);
        }
        backward_sample(T, TP, CM, deg[b], Xt, Xr, xs + b * T * K, rho[b], cs + b * CM, gs + b * T * K, gS,
                        gxs + b * T * K, w);
        factor_grads(T, gS, q, k, gqs + b * T * K, gks + b * T * K);
    }
    free(Xt);
    return 0;
}
#endif
