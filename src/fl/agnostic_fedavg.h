/* agnostic_fedavg.h — the pieces AgnosticFedAvg's round is built from
 * (src/fl/agnostic_fedavg.c), internal: the round calls them on the model's
 * per-batch domain statistics, and tests/test_agnostic_fedavg.c calls them on
 * FedJAX's tiny problems with its own statistics program.
 *
 * A statistics program computes one batch's sums by domain: inputs w/<param>
 * (the model), x, y, mask, key (one batch, as fedc_round_objective's) and domain
 * (i32[]: the client's domain); outputs domain_loss f32[D] (the sum of the real
 * examples' losses in each domain) and domain_num f32[D] (their counts). The
 * model's (fedc__agnostic_model_stats) puts the whole batch in the client's
 * domain; a test's may read a domain per example from x. */
#ifndef FEDC_FL_AGNOSTIC_FEDAVG_H
#define FEDC_FL_AGNOSTIC_FEDAVG_H

#include "fl/fl.h"

enum { FEDC__AGNOSTIC_MAX_DOMAINS = 8 };

/* The model's statistics program for num_domains domains. */
fedc_status fedc__agnostic_model_stats(const fedc_round *r, int num_domains, fedc_program **out);
/* FedJAX's create_domain_metrics_for_each_client at the server's params: each
 * client's sums over its batches (@clients): domain_loss, domain_num, and beta =
 * sum(alpha * domain_num) for the @server f32[D] alpha. */
fedc_tree *fedc__agnostic_metrics(fedc_round *r, const fedc_program *stats, fedc_value alpha, fedc_value domain);
/* FedJAX's create_train_for_each_client: local training from the server's params
 * on the scaled loss sum(alpha * domain_loss) / beta (alpha @server, beta and
 * domain @clients); the result is fedc_round_local_training's. */
fedc_status fedc__agnostic_train(fedc_round *r, const fedc_program *stats, fedc_value alpha, fedc_value beta,
                                 fedc_value domain, fedc_tree **out);
/* FedJAX's update_domain_weights: eg, w * exp(lr * loss) normalised; or (eg
 * false) w unchanged. */
fedc_value fedc__agnostic_update_weights(fedc_program *p, fedc_value weights, fedc_value loss, double lr, bool eg);
/* The whole round on r with `stats` (the real round passes the model's). */
fedc_status fedc__agnostic_round_with(fedc_round *r, const fedc_program *stats);

#endif
