/*
 * fedc/robust.h — Byzantine-robust aggregators over a cohort's update vectors
 * (docs/privacy.md, "Byzantine-robust aggregation").
 *
 * Each takes the n clients' updates as n flat f32 vectors of d numbers (x[i]:
 * client i's, in client-index order) and writes one aggregate of d numbers:
 *
 *     median         coordinate-wise median (even n: the mean of the middle two)
 *     trimmed_mean   coordinate-wise: cut floor(beta n) values from each end, mean the rest
 *     krum           the update whose score (the sum of squared distances to its n - f - 2
 *                    nearest others) is least (Blanchard et al. 2017)
 *     multikrum      the weighted mean of the m updates of least score
 *     bulyan         Krum, repeated on the rest, selects theta = n - 2f updates; each
 *                    coordinate is the mean of the beta = theta - 2f selected values nearest
 *                    their median (El Mhamdi et al. 2018)
 *     geomed         the weighted geometric median by smoothed Weiszfeld (RFA, Pillutla et
 *                    al. 2019, Algorithm 2)
 *     cclip          centered clipping (Karimireddy et al. 2021): v += mean_i clip_tau(x_i - v),
 *                    `iterations` times from a centre the caller gives (a round: the
 *                    previous round's aggregate)
 *
 * Results depend on the updates and the settings only: every sum runs in client
 * order (or coordinate order) in double, every sort breaks ties by client index,
 * and a pool splits work only into pieces each computed whole by one worker, so
 * the bits are the same for any number of threads and for any order in which the
 * pieces run. NaN sorts above +Inf.
 *
 * Flower's FedMedian, FedTrimmedAvg, Krum, MultiKrum and Bulyan
 * (flwr/server/strategy/aggregate.py) agree with these; where fedc differs (it
 * refuses n <= 2f + 2 for Krum where Flower clamps n - f - 2 to 1; ties) the doc says.
 */
#ifndef FEDC_ROBUST_H
#define FEDC_ROBUST_H

#include "fedc/core.h"
#include "fedc/program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fedc_robust_kind {
    FEDC_ROBUST_MEAN = 0, /* the weighted mean: no robust aggregator */
    FEDC_ROBUST_MEDIAN,
    FEDC_ROBUST_TRIMMED_MEAN,
    FEDC_ROBUST_KRUM,
    FEDC_ROBUST_MULTIKRUM,
    FEDC_ROBUST_BULYAN,
    FEDC_ROBUST_GEOMED,
    FEDC_ROBUST_CCLIP,
} fedc_robust_kind;

/* A robust aggregator and its settings; fedc_robust_defaults gives each kind's. */
typedef struct fedc_robust {
    fedc_robust_kind kind;
    double beta;     /* trimmed_mean: the fraction cut from each end, in [0, 0.5) (0.1) */
    int f;           /* krum, multikrum, bulyan: the Byzantine clients tolerated, >= 0 (1) */
    int m;           /* multikrum: the updates kept, 1 to n; 0: n - f */
    double nu;       /* geomed: the smoothing nu > 0 of Weiszfeld's weights (1e-6) */
    int iterations;  /* geomed: at most this many Weiszfeld steps (3); cclip: clipping steps (1) */
    double tolerance; /* geomed: stop once the objective changes by less than this fraction (1e-6) */
    double tau;      /* cclip: the clipping radius > 0 (1) */
    /* In a round (the robust_aggregate op): the MiB of the cohort's updates kept in
     * memory; the rest wait in a temporary file, read back a block at a time. 0: no
     * limit. The result is the same bits whatever it is. The mean keeps updates
     * only after ALIE or IPM, which it makes there. (0) */
    int memory_mb;
} fedc_robust;

FEDC_API fedc_robust fedc_robust_defaults(fedc_robust_kind kind);
FEDC_API const char *fedc_robust_name(fedc_robust_kind kind);
/* Parses an --aggregator spec: "mean", "median", "trimmed_mean:beta=B", "krum:f=F",
 * "multikrum:f=F,m=M", "bulyan:f=F", "geomed:nu=V,iterations=R,tolerance=T",
 * "cclip:tau=T,iterations=L"; every kind also takes memory=MB (a round's budget;
 * mean's is that of the store ALIE and IPM are made in); unset settings are the
 * kind's defaults. EINVAL naming
 * the bad part and what would do; *out unchanged then. */
FEDC_API fedc_status fedc_robust_parse(const char *spec, fedc_robust *out);
/* r as a spec fedc_robust_parse reads back to the same settings (the kind's
 * settings only, each number in the fewest digits that give its bits; not the
 * memory budget, which changes no bit): "mean",
 * "krum:f=2", "trimmed_mean:beta=0.1". Writes at most size bytes, NUL-ended. */
FEDC_API void fedc_robust_format(const fedc_robust *r, char *buf, size_t size);
/* Whether r can aggregate n updates: EINVAL with the numbers when not (Krum and
 * Multi-Krum need n > 2f + 2, Bulyan n >= 4f + 3, Multi-Krum m <= n, every kind
 * n >= 1); n = 0: the settings alone. */
FEDC_API fedc_status fedc_robust_check(const fedc_robust *r, int n);
/* Whether the kind selects whole clients (krum, multikrum, bulyan), so that a
 * round can say which it kept (metrics.jsonl's "kept"). */
FEDC_API bool fedc_robust_selects(fedc_robust_kind kind);

/* The aggregate of x[0..n) (each d floats) into out (d floats). w: the clients'
 * weights (>= 0, n of them; NULL: all 1), used by multikrum's mean of the kept
 * updates and geomed's (as Flower and RFA weight them) and by mean; the others are
 * unweighted. center: cclip's starting point (d floats; NULL: zeros). kept (NULL,
 * or room for n): the clients a selecting aggregator kept (krum, multikrum,
 * bulyan), in increasing index, and *nkept their count (0 for the others). pool:
 * NULL or a thread pool to share the work (same bits either way). */
FEDC_API fedc_status fedc_robust_aggregate_vectors(const fedc_robust *r, const float *const *x, int n, int64_t d,
                                           const double *w, const float *center, float *out, int *kept,
                                           int *nkept, fedc_pool *pool);

/* The robust_aggregate op: x f32[d]@clients (each client's update, flat), w
 * f32[]@clients (its weight) to f32[d]@server by r, which the executor runs over
 * the cohort's values kept together (fedc_robust_aggregate_vectors on them, in
 * client order; clients dropped in a run are left out). Not differentiable;
 * r's settings are checked when the op is built, the cohort's size when it runs. */
FEDC_API fedc_value fedc_robust_aggregate(fedc_program *p, fedc_value x, fedc_value w, const fedc_robust *r);

#ifdef __cplusplus
}
#endif

#endif
