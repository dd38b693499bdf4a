/*
 * accountant.c — the composing accountant (RDP curves summed order by order, as
 * dp_accounting's RdpAccountant and Opacus's RDPAccountant compose) and the
 * search for the noise multiplier that meets a target ε (Opacus's
 * get_noise_multiplier).
 */
#include <math.h>
#include <string.h>

#include "privacy/privacy.h"

struct fedc_privacy_accountant {
    int n;
    fedc_rdp_series series;
    double *orders; /* n, then the n composed RDP values, in one block */
    double *rdp;
};

fedc_status fedc_privacy_accountant_create(fedc_privacy_accountant **out, const double *orders, int n) {
    static const char fn[] = "fedc_privacy_accountant_create";
    if (!out) return fedc_error(FEDC_EINVAL, "%s: out is NULL", fn);
    *out = NULL;
    if (!orders && n == 0) n = fedc_rdp_orders(FEDC_ORDERS_DP_ACCOUNTING, &orders);
    fedc_status st = fedc__rdp_check_orders(fn, orders, n);
    if (st) return st;
    fedc_privacy_accountant *acc = fedc_malloc(sizeof *acc);
    double *values = fedc_calloc(2 * (size_t)n, sizeof *values);
    if (!acc || !values) {
        fedc_free(acc);
        fedc_free(values);
        return fedc_error(FEDC_ENOMEM, "%s: out of memory for %d orders", fn, n);
    }
    memcpy(values, orders, (size_t)n * sizeof *values);
    *acc = (fedc_privacy_accountant){n, FEDC_RDP_SERIES_ABSOLUTE, values, values + n};
    *out = acc;
    return FEDC_OK;
}

void fedc_privacy_accountant_destroy(fedc_privacy_accountant *acc) {
    if (!acc) return;
    fedc_free(acc->orders);
    fedc_free(acc);
}

fedc_status fedc_privacy_accountant_set_series(fedc_privacy_accountant *acc, fedc_rdp_series series) {
    if (!acc) return fedc_error(FEDC_EINVAL, "fedc_privacy_accountant_set_series: acc is NULL");
    if (!fedc_rdp_series_name(series))
        return fedc_error(FEDC_EINVAL, "fedc_privacy_accountant_set_series: series %d is neither "
                          "FEDC_RDP_SERIES_ABSOLUTE nor FEDC_RDP_SERIES_SIGNED", (int)series);
    acc->series = series;
    return FEDC_OK;
}

/* The mechanism's curve is computed whole before any of it is added, so that a
 * bad argument leaves the sum as it was. */
fedc_status fedc_privacy_accountant_add(fedc_privacy_accountant *acc, double q, double z, int64_t steps) {
    if (!acc) return fedc_error(FEDC_EINVAL, "fedc_privacy_accountant_add: acc is NULL");
    double *curve = fedc_malloc((size_t)acc->n * sizeof *curve);
    if (!curve) return fedc_error(FEDC_ENOMEM, "fedc_privacy_accountant_add: out of memory for %d orders", acc->n);
    fedc_status st = fedc_rdp_subsampled_gaussian_series(q, z, steps, acc->orders, acc->n, acc->series, curve);
    if (!st)
        for (int k = 0; k < acc->n; k++) acc->rdp[k] += curve[k];
    fedc_free(curve);
    return st;
}

int fedc_privacy_accountant_rdp(const fedc_privacy_accountant *acc, const double **orders, const double **rdp) {
    if (orders) *orders = acc ? acc->orders : NULL;
    if (rdp) *rdp = acc ? acc->rdp : NULL;
    return acc ? acc->n : 0;
}

fedc_status fedc_privacy_accountant_epsilon(const fedc_privacy_accountant *acc, double delta,
                                            fedc_rdp_conversion conversion, double *epsilon, double *best_order) {
    if (!acc) return fedc_error(FEDC_EINVAL, "fedc_privacy_accountant_epsilon: acc is NULL");
    return fedc_rdp_epsilon(acc->orders, acc->rdp, acc->n, delta, conversion, epsilon, best_order);
}

fedc_status fedc_privacy_accountant_delta(const fedc_privacy_accountant *acc, double epsilon,
                                          fedc_rdp_conversion conversion, double *delta, double *best_order) {
    if (!acc) return fedc_error(FEDC_EINVAL, "fedc_privacy_accountant_delta: acc is NULL");
    return fedc_rdp_delta(acc->orders, acc->rdp, acc->n, epsilon, conversion, delta, best_order);
}

/* ------------------------------------------------------ the noise search -- */

/* What one probe of the search needs: the accountant's curve so far, and
 * scratch for n values. */
typedef struct noise_query {
    const fedc_privacy_accountant *acc;
    double q, delta;
    int64_t steps;
    fedc_rdp_conversion conversion;
    double *curve;
} noise_query;

static double epsilon_of(const noise_query *s, double z) {
    const fedc_privacy_accountant *acc = s->acc;
    double eps = INFINITY;
    if (fedc_rdp_subsampled_gaussian_series(s->q, z, s->steps, acc->orders, acc->n, acc->series, s->curve))
        return eps;
    for (int k = 0; k < acc->n; k++) s->curve[k] += acc->rdp[k];
    fedc_rdp_epsilon(acc->orders, s->curve, acc->n, s->delta, s->conversion, &eps, NULL);
    return eps;
}

/* Halvings after which [lo, hi] is a few ulps wide whatever it started as: the
 * search then stops even if epsilon never came within the tolerance. */
enum { MAX_HALVINGS = 200 };

/* Opacus's search, step for step, so that its answers come out to the digit:
 * doubling from 10 (the first probe is 20) until eps(hi) <= target, then bisection
 * of [0, hi] keeping the end below the target. */
static fedc_status search(const noise_query *s, double target, double tolerance, double *z, double *epsilon) {
    double lo = 0, hi = 10, eps_hi = INFINITY;
    while (eps_hi > target) {
        hi *= 2;
        eps_hi = epsilon_of(s, hi);
        if (hi > FEDC_PRIVACY_MAX_NOISE)
            return fedc_error(FEDC_ERANGE,
                              "fedc_privacy_noise_for_epsilon: target epsilon %g is too small: a noise multiplier of "
                              "%g gives %g",
                              target, hi, eps_hi);
    }
    for (int i = 0; i < MAX_HALVINGS && target - eps_hi > tolerance; i++) {
        double mid = (lo + hi) / 2, eps = epsilon_of(s, mid);
        if (eps < target) {
            hi = mid;
            eps_hi = eps;
        } else {
            lo = mid;
        }
    }
    *z = hi;
    if (epsilon) *epsilon = eps_hi;
    return FEDC_OK;
}

static fedc_status check_query(double target_epsilon, double tolerance, double q, int64_t steps, double delta,
                               fedc_rdp_conversion conversion) {
    static const char fn[] = "fedc_privacy_noise_for_epsilon";
    if (!(target_epsilon > 0) || isinf(target_epsilon))
        return fedc_error(FEDC_EINVAL, "%s: target epsilon %g must be a number > 0", fn, target_epsilon);
    if (!(tolerance > 0) || isinf(tolerance))
        return fedc_error(FEDC_EINVAL, "%s: tolerance %g must be a number > 0", fn, tolerance);
    if (!(q > 0 && q <= 1)) return fedc_error(FEDC_EINVAL, "%s: sampling rate q = %g must be in (0, 1]", fn, q);
    if (steps < 1) return fedc_error(FEDC_EINVAL, "%s: steps = %lld must be >= 1", fn, (long long)steps);
    if (!(delta > 0 && delta < 1)) return fedc_error(FEDC_EINVAL, "%s: delta = %g must be in (0, 1)", fn, delta);
    if (!fedc_rdp_conversion_name(conversion))
        return fedc_error(FEDC_EINVAL, "%s: conversion %d is neither FEDC_RDP_CLASSIC nor FEDC_RDP_IMPROVED", fn,
                          (int)conversion);
    return FEDC_OK;
}

fedc_status fedc_privacy_noise_for_epsilon(const fedc_privacy_accountant *acc, double target_epsilon,
                                           double tolerance, double q, int64_t steps, double delta,
                                           fedc_rdp_conversion conversion, double *z, double *epsilon) {
    fedc_status st = check_query(target_epsilon, tolerance, q, steps, delta, conversion);
    if (st) return st;
    if (!z) return fedc_error(FEDC_EINVAL, "fedc_privacy_noise_for_epsilon: z is NULL");
    fedc_privacy_accountant *empty = NULL;
    if (!acc) {
        if ((st = fedc_privacy_accountant_create(&empty, NULL, 0))) return st;
        acc = empty;
    }
    double *curve = fedc_malloc((size_t)acc->n * sizeof *curve);
    if (curve) {
        noise_query s = {acc, q, delta, steps, conversion, curve};
        st = search(&s, target_epsilon, tolerance, z, epsilon);
    } else {
        st = fedc_error(FEDC_ENOMEM, "fedc_privacy_noise_for_epsilon: out of memory for %d orders", acc->n);
    }
    fedc_free(curve);
    fedc_privacy_accountant_destroy(empty);
    return st;
}
