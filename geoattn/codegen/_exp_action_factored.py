r"""The factored part of the Chebyshev action's C template (:mod:`geoattn.codegen.exp_action_c` appends it): ``S`` of
OrthonormalAttention formed from ``q`` and ``k`` in the kernel's buffer, the factors' gradients, the norms behind
``rho``, and Miller's recurrence for the coefficients. The text uses the helpers of the main template (``rows``,
``product``, ``forward_sample``, ``backward_sample``) and its ``@USIGN@`` and ``@GST@`` marks for the broken kernels.
"""

from __future__ import annotations

__all__ = ["FACTORED"]

FACTORED = r"""
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
                real_t s = i > l ? a[e] : i < l ? @USIGN@u[e] : 0;
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
            real_t h = @GST@gS[a * T + b];
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
"""
