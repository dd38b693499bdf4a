/*
 * rdp.c — the Rényi DP of the Poisson-subsampled Gaussian mechanism, a port of
 * dp_accounting's _compute_rdp_poisson_subsampled_gaussian (rdp_privacy_accountant.py)
 * with its log-space helpers, and the standard lists of orders.
 *
 * RDP(α) = log(A_α) / (α − 1), A_α = E_{x∼N(0,z²)} [(1 − q + q exp((2x − 1)/(2z²)))^α]
 * (Mironov, Talwar, Zhang 2019, arXiv:1908.10530, Sec. 3.3). Everything is summed
 * in log space: the terms reach exp((α² − α)/(2z²)), far beyond a double.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>

#include "privacy/privacy.h"

/* ---------------------------------------------------- the order lists -- */

/* 1.1, ..., 10.9 as Python computes 1 + x / 10.0 (constant-folded in the same
 * double arithmetic), then integers, then powers of two. */
#define T(x) (1 + (x) / 10.0)
#define TENTHS_10(d) T(d##0), T(d##1), T(d##2), T(d##3), T(d##4), T(d##5), T(d##6), T(d##7), T(d##8), T(d##9)
#define TENTHS                                                                                              \
    T(1), T(2), T(3), T(4), T(5), T(6), T(7), T(8), T(9), TENTHS_10(1), TENTHS_10(2), TENTHS_10(3),           \
        TENTHS_10(4), TENTHS_10(5), TENTHS_10(6), TENTHS_10(7), TENTHS_10(8), TENTHS_10(9)
#define INTS_12_63                                                                                          \
    12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38,  \
        39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63
static const double dp_accounting_orders[] = {TENTHS, 11, INTS_12_63, 128, 256, 512, 1024};
static const double opacus_orders[] = {TENTHS, INTS_12_63};
static const double tf_privacy_orders[] = {1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 11,
                                           INTS_12_63, 128, 256, 512};
#undef T

int fedc_rdp_orders(fedc_rdp_order_set set, const double **orders) {
    static const struct {
        const double *list;
        int n;
    } sets[] = {{dp_accounting_orders, (int)(sizeof dp_accounting_orders / sizeof(double))},
                {opacus_orders, (int)(sizeof opacus_orders / sizeof(double))},
                {tf_privacy_orders, (int)(sizeof tf_privacy_orders / sizeof(double))}};
    if ((unsigned)set >= sizeof sets / sizeof *sets) {
        *orders = NULL;
        return 0;
    }
    *orders = sets[set].list;
    return sets[set].n;
}

fedc_status fedc__rdp_check_orders(const char *fn, const double *orders, int n) {
    if (!orders || n < 1) return fedc_error(FEDC_EINVAL, "%s: orders: needs at least one order, got %d", fn, n);
    for (int k = 0; k < n; k++) {
        double a = orders[k];
        if (!(a > 1) || (a > FEDC_RDP_MAX_ORDER && !isinf(a)))
            return fedc_error(FEDC_EINVAL, "%s: orders[%d] = %g: an order must be in (1, %g] or +inf", fn, k, a,
                              FEDC_RDP_MAX_ORDER);
        if (k > 0 && !(a > orders[k - 1]))
            return fedc_error(FEDC_EINVAL, "%s: orders[%d] = %g is not above orders[%d] = %g: orders must increase",
                              fn, k, a, k - 1, orders[k - 1]);
    }
    return FEDC_OK;
}

const char *fedc_rdp_series_name(fedc_rdp_series series) {
    switch (series) {
    case FEDC_RDP_SERIES_ABSOLUTE: return "absolute";
    case FEDC_RDP_SERIES_SIGNED: return "signed";
    }
    return NULL;
}

/* ------------------------------------------------- log-space arithmetic -- */

/* log(e^x + e^y); −∞ is zero. */
static double log_add(double x, double y) {
    double a = fmin(x, y), b = fmax(x, y);
    if (a == -INFINITY) return b;
    return log1p(exp(a - b)) + b;
}

/* log |C(n, k)| for real n, k, as scipy's gammaln does it (lgamma is log |Γ|). */
static double log_comb(double n, double k) { return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1); }

/* log(erfc(x)), accurate where erfc(x) underflows: dp_accounting uses scipy's
 * log_ndtr; past x = 26 (erfc < 6e-296) this is its fallback, the Laurent series
 * of log erfc at infinity, whose first omitted term is below 1e-13 there. */
static double log_erfc(double x) {
    if (x < 26) return log(erfc(x));
    double x2 = x * x;
    return -0.57236494292470008707 /* log(pi) / 2 */ - log(x) - x2 - 0.5 / x2 + 0.625 / (x2 * x2) - 37.0 / 24.0 / (x2 * x2 * x2) +
           353.0 / 64.0 / (x2 * x2 * x2 * x2);
}

/* ------------------------------------------------------------- log(A_α) -- */

/* Integer α, 0 < q < 1: the binomial expansion of A_α. */
static double log_a_int(double q, double z, int64_t alpha) {
    double log_a = -INFINITY, log_q = log(q), log1mq = log1p(-q);
    for (int64_t i = 0; i <= alpha; i++) {
        double di = (double)i;
        double log_coef = log_comb((double)alpha, di) + di * log_q + (double)(alpha - i) * log1mq;
        log_a = log_add(log_a, log_coef + (di * di - di) / (2 * z * z));
    }
    return log_a;
}

/* dp_accounting's _MAX_STEPS_LOG_A_FRAC: a series that has not converged by then
 * gives +inf, which leaves that order out of the minimum over orders. */
enum { MAX_STEPS_LOG_A_FRAC = 1000 };

/* log(e^x - e^y) for x >= y, as Opacus's _log_sub; NaN where y > x (the signed
 * series went negative in rounding: the caller gives up on the order). */
static double log_sub(double x, double y) {
    if (x < y) return NAN;
    if (y == -INFINITY) return x;
    if (x == y) return -INFINITY;
    double d = expm1(x - y);
    return isinf(d) ? x : log(d) + y;
}

/* The sign of C(alpha, i) for fractional alpha > 0: the factors alpha - k, k < i,
 * are negative for k > alpha. */
static bool binomial_negative(double alpha, int i) {
    int negative = i - 1 - (int)floor(alpha);
    return negative > 0 && negative % 2 == 1;
}

/* The two series' terms at index i (Sec. 3.3 of the paper): A_alpha split at z0,
 * where the two densities cross; log |term| each. */
static void frac_terms(double q, double z, double alpha, double z0, int step, double *log_s0, double *log_s1) {
    double i = step, j = alpha - i, log_coef = log_comb(alpha, i), log_q = log(q), log1mq = log1p(-q);
    double log_t0 = log_coef + i * log_q + j * log1mq;
    double log_t1 = log_coef + j * log_q + i * log1mq;
    double log_e0 = log(0.5) + log_erfc((i - z0) / (sqrt(2) * z));
    double log_e1 = log(0.5) + log_erfc((z0 - j) / (sqrt(2) * z));
    *log_s0 = log_t0 + (i * i - i) / (2 * z * z) + log_e0;
    *log_s1 = log_t1 + (j * j - j) / (2 * z * z) + log_e1;
}

/* Fractional alpha, 0 < q < 1, dp_accounting's way (since its April 2024
 * "numerical stability" change): the terms' magnitudes are all added, which
 * bounds A_alpha from above, until both terms fall and are e^30 below the total. */
static double log_a_frac_absolute(double q, double z, double alpha) {
    double log_a0 = -INFINITY, log_a1 = -INFINITY, last_s0 = -INFINITY, last_s1 = -INFINITY;
    double z0 = z * z * log(1 / q - 1) + 0.5;
    for (int step = 0; step < MAX_STEPS_LOG_A_FRAC; step++) {
        double log_s0, log_s1;
        frac_terms(q, z, alpha, z0, step, &log_s0, &log_s1);
        log_a0 = log_add(log_a0, log_s0);
        log_a1 = log_add(log_a1, log_s1);
        double total = log_add(log_a0, log_a1);
        if (log_s0 < last_s0 && log_s1 < last_s1 && fmax(log_s0, log_s1) < total - 30) return total;
        last_s0 = log_s0;
        last_s1 = log_s1;
    }
    return INFINITY;
}

/* Fractional alpha the way Opacus (and TF Privacy and dp_accounting before 2024)
 * sums it: the terms with their signs, the series' exact value, until both terms
 * are below e^-30. */
static double log_a_frac_signed(double q, double z, double alpha) {
    double log_a0 = -INFINITY, log_a1 = -INFINITY;
    double z0 = z * z * log(1 / q - 1) + 0.5;
    for (int step = 0; step < MAX_STEPS_LOG_A_FRAC; step++) {
        double log_s0, log_s1;
        frac_terms(q, z, alpha, z0, step, &log_s0, &log_s1);
        bool negative = binomial_negative(alpha, step);
        log_a0 = negative ? log_sub(log_a0, log_s0) : log_add(log_a0, log_s0);
        log_a1 = negative ? log_sub(log_a1, log_s1) : log_add(log_a1, log_s1);
        if (isnan(log_a0) || isnan(log_a1)) return INFINITY;
        if (fmax(log_s0, log_s1) < -30) return log_add(log_a0, log_a1);
    }
    return INFINITY;
}

/* RDP of one step at order alpha (dp_accounting's compute_one_order). */
static double rdp_one_step(double q, double z, double alpha, fedc_rdp_series series) {
    if (q == 0) return 0;
    if (isinf(alpha) || z == 0) return INFINITY;
    if (q == 1) return alpha / (2 * z * z);
    double log_a = alpha == floor(alpha)            ? log_a_int(q, z, (int64_t)alpha)
                   : series == FEDC_RDP_SERIES_SIGNED ? log_a_frac_signed(q, z, alpha)
                                                      : log_a_frac_absolute(q, z, alpha);
    return log_a / (alpha - 1);
}

fedc_status fedc_rdp_subsampled_gaussian(double q, double z, int64_t steps, const double *orders, int n,
                                         double *rdp_out) {
    return fedc_rdp_subsampled_gaussian_series(q, z, steps, orders, n, FEDC_RDP_SERIES_ABSOLUTE, rdp_out);
}

fedc_status fedc_rdp_subsampled_gaussian_series(double q, double z, int64_t steps, const double *orders, int n,
                                                fedc_rdp_series series, double *rdp_out) {
    static const char fn[] = "fedc_rdp_subsampled_gaussian";
    if (!(q >= 0 && q <= 1)) return fedc_error(FEDC_EINVAL, "%s: sampling rate q = %g must be in [0, 1]", fn, q);
    if (!(z >= 0)) return fedc_error(FEDC_EINVAL, "%s: noise multiplier z = %g must be >= 0 (not NaN)", fn, z);
    if (steps < 0) return fedc_error(FEDC_EINVAL, "%s: steps = %lld must be >= 0", fn, (long long)steps);
    fedc_status st = fedc__rdp_check_orders(fn, orders, n);
    if (st) return st;
    if (!rdp_out) return fedc_error(FEDC_EINVAL, "%s: rdp_out is NULL", fn);
    if (!fedc_rdp_series_name(series))
        return fedc_error(FEDC_EINVAL, "%s: series %d is neither FEDC_RDP_SERIES_ABSOLUTE nor FEDC_RDP_SERIES_SIGNED", fn,
                          (int)series);
    for (int k = 0; k < n; k++) {
        double r = rdp_one_step(q, z, orders[k], series);
        rdp_out[k] = steps == 0 ? 0 : r * (double)steps; /* 0 steps cost nothing, even at z = 0 */
    }
    return FEDC_OK;
}
