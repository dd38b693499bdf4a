/*
 * epsilon.c — RDP curves to (ε, δ)-DP, both ways, by the classic bound (Mironov
 * 2017, "Rényi Differential Privacy", Prop. 3) and the improved one (Balle et al.
 * 2020, "Hypothesis Testing Interpretations and Rényi DP", Thm. 21), the latter
 * ported from dp_accounting's compute_epsilon and compute_delta.
 */
#include <math.h>

#include "privacy/privacy.h"

const char *fedc_rdp_conversion_name(fedc_rdp_conversion conversion) {
    switch (conversion) {
    case FEDC_RDP_CLASSIC: return "classic";
    case FEDC_RDP_IMPROVED: return "improved";
    }
    return NULL;
}

/* The curve and the conversion both valid. */
static fedc_status check_curve(const char *fn, const double *orders, const double *rdp, int n,
                               fedc_rdp_conversion conversion) {
    fedc_status st = fedc__rdp_check_orders(fn, orders, n);
    if (st) return st;
    if (!rdp) return fedc_error(FEDC_EINVAL, "%s: rdp is NULL", fn);
    for (int k = 0; k < n; k++)
        if (isnan(rdp[k])) return fedc_error(FEDC_EINVAL, "%s: rdp[%d] is NaN", fn, k);
    if (!fedc_rdp_conversion_name(conversion))
        return fedc_error(FEDC_EINVAL, "%s: conversion %d is neither FEDC_RDP_CLASSIC nor FEDC_RDP_IMPROVED", fn,
                          (int)conversion);
    return FEDC_OK;
}

/* ε at one order. Improved: as dp_accounting computes it. A negative RDP (only
 * from rounding at extreme settings) gives 0; where δ² > 1 − e^−RDP the KL bound
 * δ ≤ sqrt(1 − e^−KL) already gives ε = 0; the bound is unstable as α → 1, so
 * orders up to 1.01 give +∞. */
static double epsilon_at(double a, double r, double delta, fedc_rdp_conversion conversion) {
    if (conversion == FEDC_RDP_CLASSIC) return r - log(delta) / (a - 1);
    if (r < 0) return 0;
    if (delta * delta + expm1(-r) > 0) return 0;
    if (a > 1.01) return r + log1p(-1 / a) - log(delta * a) / (a - 1);
    return INFINITY;
}

/* The order where bound(order, rdp, x) is least, the first of equals as numpy's
 * argmin, and that least value. */
typedef double (*bound_fn)(double a, double r, double x, fedc_rdp_conversion conversion);
static int argmin(const double *orders, const double *rdp, int n, double x, fedc_rdp_conversion conversion,
                  bound_fn bound, double *least) {
    int at = 0;
    *least = bound(orders[0], rdp[0], x, conversion);
    for (int k = 1; k < n; k++) {
        double b = bound(orders[k], rdp[k], x, conversion);
        if (b < *least) {
            *least = b;
            at = k;
        }
    }
    return at;
}

fedc_status fedc_rdp_epsilon(const double *orders, const double *rdp, int n, double delta,
                             fedc_rdp_conversion conversion, double *epsilon, double *best_order) {
    static const char fn[] = "fedc_rdp_epsilon";
    fedc_status st = check_curve(fn, orders, rdp, n, conversion);
    if (st) return st;
    if (!(delta > 0 && delta < 1)) return fedc_error(FEDC_EINVAL, "%s: delta = %g must be in (0, 1)", fn, delta);
    double best;
    int at = argmin(orders, rdp, n, delta, conversion, epsilon_at, &best);
    if (epsilon) *epsilon = fmax(0, best);
    if (best_order) *best_order = orders[at];
    return FEDC_OK;
}

/* log δ at one order, for a given ε. Improved: dp_accounting's compute_delta,
 * the KL bound 0.5 log(1 − e^−RDP) and, past order 1.01, the RDP bound. */
static double log_delta_at(double a, double r, double eps, fedc_rdp_conversion conversion) {
    if (conversion == FEDC_RDP_CLASSIC) return (a - 1) * (r - eps);
    double log_delta = r <= 0 ? -INFINITY : 0.5 * log1p(-exp(-r));
    if (a > 1.01) log_delta = fmin(log_delta, (a - 1) * (r - eps + log1p(-1 / a)) - log(a));
    return log_delta;
}

fedc_status fedc_rdp_delta(const double *orders, const double *rdp, int n, double epsilon,
                           fedc_rdp_conversion conversion, double *delta, double *best_order) {
    static const char fn[] = "fedc_rdp_delta";
    fedc_status st = check_curve(fn, orders, rdp, n, conversion);
    if (st) return st;
    if (!(epsilon >= 0)) return fedc_error(FEDC_EINVAL, "%s: epsilon = %g must be >= 0 (not NaN)", fn, epsilon);
    double best;
    int at = argmin(orders, rdp, n, epsilon, conversion, log_delta_at, &best);
    if (delta) *delta = fmin(exp(best), 1.0);
    if (best_order) *best_order = orders[at];
    return FEDC_OK;
}
