/*
 * fedc/attack.h — Byzantine clients, for evaluating the robust aggregators
 * (fedc/robust.h; docs/privacy.md, "Attacks").
 *
 * A seeded fraction of the population is malicious; in a round, each malicious
 * client of the cohort sends, in place of its update Δ_i:
 *
 *     sign_flip        −Δ_i
 *     scale:s=S        S Δ_i (S any real: a negative S flips and scales; model replacement)
 *     gaussian:sigma=σ N(0, σ² I), drawn from the client's own stream
 *     alie:z=Z         μ − Z σ, coordinate-wise, μ and σ the mean and standard deviation of
 *                      the honest clients' updates (Baruch et al. 2019, "A Little Is Enough")
 *     ipm:eps=E        −E μ (Xie et al. 2020, inner product manipulation)
 *
 * The attack is applied in fedc_round_aggregate, to the update as the client
 * would send it (before zeroing, the robust aggregator or the mean), so every
 * algorithm that calls it can be attacked. One attack poisons the data instead:
 *
 *     label_flip       the client trains on its examples with each label y in
 *                      [0, C) replaced by C − 1 − y (C the model's classes), and
 *                      sends the update it gets (fedc_attack_labels; Fang et al. 2020,
 *                      Tolpegin et al. 2020); its evaluation data is left as it is
 */
#ifndef FEDC_ATTACK_H
#define FEDC_ATTACK_H

#include "fedc/program.h"
#include "fedc/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fedc_attack_kind {
    FEDC_ATTACK_NONE = 0,
    FEDC_ATTACK_SIGN_FLIP,
    FEDC_ATTACK_SCALE,
    FEDC_ATTACK_GAUSSIAN,
    FEDC_ATTACK_ALIE,
    FEDC_ATTACK_IPM,
    FEDC_ATTACK_LABEL_FLIP,
} fedc_attack_kind;

typedef struct fedc_attack {
    fedc_attack_kind kind;
    double value;    /* scale: S (-1); gaussian: sigma (1); alie: z (1); ipm: eps (0.5) */
    double fraction; /* the malicious fraction of the population, in [0, 1] (--attackers) */
} fedc_attack;

FEDC_API const char *fedc_attack_name(fedc_attack_kind kind);
/* Parses an --attack spec: sign_flip, scale:s=S, gaussian:sigma=S, alie:z=Z,
 * ipm:eps=E, label_flip, or none; the fraction is left as it is. EINVAL naming the bad part. */
FEDC_API fedc_status fedc_attack_parse(const char *spec, fedc_attack *out);
/* Whether client `client` of the population is malicious: a uniform draw of its
 * own from (seed, client) below the fraction. */
FEDC_API bool fedc_attack_malicious(const fedc_attack *a, uint64_t seed, int64_t client);
/* The round input that marks the cohort's malicious clients (f32[]@clients, 1 or 0). */
#define FEDC_ATTACK_MALICIOUS "meta/malicious"
/* A label_flip attacker's training labels: each of y[0..n) in [0, classes)
 * becomes classes − 1 − y; others (padding, a label outside the model's) are
 * left as they are. Nothing for the other attacks. */
FEDC_API void fedc_attack_labels(const fedc_attack *a, int classes, int32_t *y, int64_t n);
/* `update` (@clients, f32 leaves) with each client whose `malicious` (f32[]@clients)
 * is 1 sending a's attack instead (label_flip: update as it is, the data having been
 * flipped); key: i32[4]@clients, each client's stream
 * (gaussian draws from it plus [0, 0, 0, 2^30 + leaf]). */
FEDC_API fedc_tree *fedc_attack_update(fedc_program *p, const fedc_attack *a, const fedc_tree *update,
                                       fedc_value malicious, fedc_value key);

#ifdef __cplusplus
}
#endif

#endif
