/*
 * fedc/privacy.h — the privacy accountant: Rényi differential privacy (RDP) of the
 * Poisson-subsampled Gaussian mechanism, composed over steps and over mechanisms,
 * and converted to (ε, δ)-DP. docs/privacy.md is the longer manual.
 *
 * The algorithms are ports of dp_accounting's rdp_privacy_accountant.py (Google's
 * differential-privacy repository; Opacus and TF Privacy compute the same):
 *
 *   RDP(α) of one step, sampling rate q, noise multiplier z (noise stddev over the
 *   L2 sensitivity), following Mironov, Talwar and Zhang 2019 ("Rényi Differential
 *   Privacy of the Sampled Gaussian Mechanism", arXiv:1908.10530, Sec. 3.3):
 *     q = 0: 0;  z = 0 or α = ∞: ∞;  q = 1: α / (2 z²);
 *     otherwise log(A_α) / (α − 1), where for integer α
 *       A_α = Σ_{i=0..α} C(α, i) q^i (1 − q)^(α−i) exp((i² − i) / (2 z²))
 *     and for fractional α the two-series sum of the paper (dp_accounting's
 *     _compute_log_a_frac), all in log space.
 *   Composition: RDP adds, over the T steps of one mechanism and over different
 *   mechanisms at the same order.
 *   Conversion to ε at a given δ, the minimum over the orders of
 *     FEDC_RDP_CLASSIC:  RDP(α) − log δ / (α − 1)     (Mironov 2017, Prop. 3;
 *                        TF Privacy's old compute_eps, its "basic bound")
 *     FEDC_RDP_IMPROVED: RDP(α) + log(1 − 1/α) − log(δ α) / (α − 1)
 *                        (Balle et al. 2020, arXiv:1905.09982 Thm. 21; what
 *                        dp_accounting's compute_epsilon and Opacus's
 *                        get_privacy_spent compute), with dp_accounting's guards:
 *                        ε = 0 where δ² > 1 − exp(−RDP(α)), orders ≤ 1.01 unused.
 *
 * The accounting assumes Poisson sampling: each example (or client) joins each
 * step independently with probability q.
 *
 * Worked example: DP-SGD, 2,250 steps at q = 0.04 with z = 1.5 (Opacus's test):
 *
 *     const double *orders;
 *     int n = fedc_rdp_orders(FEDC_ORDERS_OPACUS, &orders);
 *     fedc_privacy_accountant *acc;
 *     if (fedc_privacy_accountant_create(&acc, orders, n)) fail(fedc_errmsg());
 *     fedc_privacy_accountant_set_series(acc, FEDC_RDP_SERIES_SIGNED);  // as Opacus sums
 *     fedc_privacy_accountant_add(acc, 0.04, 1.5, 2250);   // the update noise
 *     fedc_privacy_accountant_add(acc, 0.04, 10.0, 2250);  // another mechanism, e.g. clip estimation
 *     double eps, order;
 *     fedc_privacy_accountant_epsilon(acc, 1e-5, FEDC_RDP_IMPROVED, &eps, &order);
 *     fedc_privacy_accountant_destroy(acc);
 *
 * With the first mechanism alone ε = 7.32911117143 (at order 3.9). Every function
 * checks its arguments and returns FEDC_EINVAL with a message naming the argument
 * and its range (q in [0, 1], z ≥ 0, δ in (0, 1), orders > 1, increasing).
 */
#ifndef FEDC_PRIVACY_H
#define FEDC_PRIVACY_H

#include <stdint.h>

#include "fedc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How RDP becomes (ε, δ): see the header comment. */
typedef enum fedc_rdp_conversion {
    FEDC_RDP_CLASSIC = 0,
    FEDC_RDP_IMPROVED = 1
} fedc_rdp_conversion;

/* "classic" or "improved"; NULL for a value outside the enum. */
FEDC_API const char *fedc_rdp_conversion_name(fedc_rdp_conversion conversion);

/* The standard lists of orders, all increasing:
 *   DP_ACCOUNTING  1.1, 1.2, ..., 10.9, 11, ..., 63, 128, 256, 512, 1024 (156;
 *                  dp_accounting's DEFAULT_RDP_ORDERS, fedc's default)
 *   OPACUS         1.1, ..., 10.9, 12, ..., 63 (151; RDPAccountant.DEFAULT_ALPHAS)
 *   TF_PRIVACY     1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5, 5, ..., 63, 128,
 *                  256, 512 (72; compute_dp_sgd_privacy's) */
typedef enum fedc_rdp_order_set {
    FEDC_ORDERS_DP_ACCOUNTING = 0,
    FEDC_ORDERS_OPACUS = 1,
    FEDC_ORDERS_TF_PRIVACY = 2
} fedc_rdp_order_set;

/* Points *orders at the set's static list and returns its length (0 and NULL for
 * a value outside the enum). */
FEDC_API int fedc_rdp_orders(fedc_rdp_order_set set, const double **orders);

/* The largest finite order accepted: an integer order α sums α + 1 terms. +∞ is
 * accepted too (its RDP is ∞ unless q = 0). */
#define FEDC_RDP_MAX_ORDER 100000.0

/* rdp_out[k] = RDP at orders[k] of `steps` steps of the Poisson-subsampled
 * Gaussian mechanism with sampling rate q in [0, 1] and noise multiplier z ≥ 0
 * (may be +∞ where nothing can be bounded, e.g. z = 0). orders: n ≥ 1 values,
 * each > 1 and at most FEDC_RDP_MAX_ORDER or +∞, strictly increasing. */
FEDC_API fedc_status fedc_rdp_subsampled_gaussian(double q, double z, int64_t steps, const double *orders, int n,
                                                  double *rdp_out);

/* How a fractional order's two series are summed. The references differ here:
 *   ABSOLUTE  every term's magnitude added: an upper bound on A_α, what
 *             dp_accounting computes since April 2024 (its commit "Improve
 *             numerical stability of RDP computation"); fedc's default
 *   SIGNED    the terms with their signs (C(α, i) < 0 for some i > α): the
 *             series' exact value, what Opacus and TF Privacy compute, and
 *             dp_accounting before 2024; an order whose sum goes negative in
 *             rounding gets RDP +∞ (left out)
 * Integer orders have one expansion; both give the same there. Opacus's known
 * answers (ε = 7.32911117143 at order 8 ...) need SIGNED where the best order is
 * fractional. */
typedef enum fedc_rdp_series {
    FEDC_RDP_SERIES_ABSOLUTE = 0,
    FEDC_RDP_SERIES_SIGNED = 1
} fedc_rdp_series;

/* "absolute" or "signed"; NULL for a value outside the enum. */
FEDC_API const char *fedc_rdp_series_name(fedc_rdp_series series);

/* fedc_rdp_subsampled_gaussian with the fractional orders' series chosen. */
FEDC_API fedc_status fedc_rdp_subsampled_gaussian_series(double q, double z, int64_t steps, const double *orders,
                                                         int n, fedc_rdp_series series, double *rdp_out);

/* The smallest ε over the orders for which the RDP curve gives (ε, δ)-DP, δ in
 * (0, 1), and the order that attains it (the first if several do). ε may be +∞
 * (no order bounds it: z = 0, or δ too small for the orders). */
FEDC_API fedc_status fedc_rdp_epsilon(const double *orders, const double *rdp, int n, double delta,
                                      fedc_rdp_conversion conversion, double *epsilon, double *best_order);

/* The inverse: the smallest δ for a given ε ≥ 0 (at most 1), and its order.
 * CLASSIC: min exp((α − 1)(RDP(α) − ε)); IMPROVED: dp_accounting's compute_delta
 * (Balle et al. 2020 bound with the KL bound sqrt(1 − exp(−RDP)) as a floor). */
FEDC_API fedc_status fedc_rdp_delta(const double *orders, const double *rdp, int n, double epsilon,
                                    fedc_rdp_conversion conversion, double *delta, double *best_order);

/* ---------------------------------------------------- the accountant -- */

/* A running sum of RDP curves over a fixed list of orders: add each mechanism
 * (the update noise of T rounds, the clip-estimation bits, ...) and ask for ε. */
typedef struct fedc_privacy_accountant fedc_privacy_accountant;

/* orders as for fedc_rdp_subsampled_gaussian, copied; NULL with n = 0 means
 * FEDC_ORDERS_DP_ACCOUNTING. */
FEDC_API fedc_status fedc_privacy_accountant_create(fedc_privacy_accountant **out, const double *orders, int n);
FEDC_API void fedc_privacy_accountant_destroy(fedc_privacy_accountant *acc); /* safe on NULL */

/* The series the accountant's adds use from now on (FEDC_RDP_SERIES_ABSOLUTE at
 * first). */
FEDC_API fedc_status fedc_privacy_accountant_set_series(fedc_privacy_accountant *acc, fedc_rdp_series series);

/* Composes `steps` steps of the subsampled Gaussian (q, z): their RDP is added at
 * every order. On an error nothing is added. */
FEDC_API fedc_status fedc_privacy_accountant_add(fedc_privacy_accountant *acc, double q, double z, int64_t steps);

/* The orders and the composed RDP at each (borrowed, valid until the next add or
 * destroy); returns n. */
FEDC_API int fedc_privacy_accountant_rdp(const fedc_privacy_accountant *acc, const double **orders,
                                         const double **rdp);

/* fedc_rdp_epsilon / fedc_rdp_delta of the composed curve. */
FEDC_API fedc_status fedc_privacy_accountant_epsilon(const fedc_privacy_accountant *acc, double delta,
                                                     fedc_rdp_conversion conversion, double *epsilon,
                                                     double *best_order);
FEDC_API fedc_status fedc_privacy_accountant_delta(const fedc_privacy_accountant *acc, double epsilon,
                                                   fedc_rdp_conversion conversion, double *delta,
                                                   double *best_order);

/* ---------------------------------------------------- the noise search -- */

/* The largest noise multiplier a search gives up at: a target that needs more is
 * reported as too small (Opacus's MAX_SIGMA). */
#define FEDC_PRIVACY_MAX_NOISE 1e6

/* The noise multiplier z of a further mechanism, `steps` steps at sampling rate
 * q, for which the accountant's curve plus that mechanism's gives at most
 * target_epsilon (> 0) at δ, and more than target_epsilon − tolerance (tolerance
 * > 0; Opacus uses 0.01). acc supplies the orders, the series and whatever is
 * composed already (the clip-estimation bits, say); it is not changed. NULL
 * means an empty accountant on the default orders. The search is Opacus's
 * get_noise_multiplier, step for step: z doubles from 20 until ε(z) ≤ target,
 * then [0, z] is bisected, keeping the upper end, until target − ε(upper) ≤
 * tolerance (or 200 halvings). *epsilon (may be NULL) gets ε(z). FEDC_ERANGE when
 * even FEDC_PRIVACY_MAX_NOISE gives more than the target. */
FEDC_API fedc_status fedc_privacy_noise_for_epsilon(const fedc_privacy_accountant *acc, double target_epsilon,
                                                    double tolerance, double q, int64_t steps, double delta,
                                                    fedc_rdp_conversion conversion, double *z, double *epsilon);

#ifdef __cplusplus
}
#endif

#endif /* FEDC_PRIVACY_H */
