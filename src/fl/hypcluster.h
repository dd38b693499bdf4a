/* hypcluster.h — the pieces HypCluster's round and evaluation are built from
 * (src/fl/hypcluster.c), internal: the round calls them on the model's
 * objective, and tests/test_hypcluster.c on FedJAX's tiny problems with its own.
 *
 * An objective here is a program with inputs w/<param>, x, y, mask, key (one
 * batch, as fedc_round_objective's) and outputs loss (the batch's mean) and count
 * (its real examples), and for evaluation correct. Cluster j's stream for its
 * losses is the step's key + [0, 0, 1 + j, 0] (FedJAX splits a key per cluster). */
#ifndef FEDC_FL_HYPCLUSTER_H
#define FEDC_FL_HYPCLUSTER_H

#include "fl/fl.h"

enum { FEDC__HYPCLUSTER_MAX_CLUSTERS = 8 };

/* The state's prefix of cluster j's "params" and "opt": "" for cluster 0 (the
 * model fedc evaluates without the clusters), "clusters/<j>/" for the others. */
void fedc__hypcluster_prefix(int j, const char *leaf, char *out, size_t size);
/* FedJAX's maximization_step (_cluster_losses, _cluster_assignment) over each
 * client's batches at the k clusters of r->server, @clients: loss_sum f32[k],
 * correct f32[k] (when the objective has it), count f32[], losses f32[k] (the
 * means) and cluster i32[] (the least mean loss, the first of equals). */
fedc_tree *fedc__hypcluster_assign(fedc_round *r, const fedc_program *objective, int k);
/* FedJAX's expectation_step: each client trains from its cluster's params on
 * grad's gradient (grad_w), and each cluster gets the mean of its clients' deltas
 * weighted by fedc_round_weight: @server delta/<j>/<param> and weight/<j> (their
 * sum; 0: no client, FedJAX's None); @clients loss and examples. */
fedc_tree *fedc__hypcluster_expectation(fedc_round *r, const fedc_program *grad, fedc_value cluster, int k);
/* The whole round, and the evaluation (each client evaluated at the cluster of
 * least loss on the data evaluated), on r with `objective`. */
fedc_status fedc__hypcluster_round_with(fedc_round *r, const fedc_program *objective);
fedc_status fedc__hypcluster_evaluation_with(fedc_round *r, const fedc_program *objective);
/* FedJAX's kmeans_init as a warm start on r (r->cohort clients) for k clusters,
 * with `objective` (correct may be 0); the first center is client `first`
 * (i32[]@server) of the cohort, or FEDC_NONE: one drawn at random
 * (src/fl/hypcluster_kmeans.c). */
fedc_status fedc__hypcluster_kmeans_with(fedc_round *r, const fedc_program *objective, int k, fedc_value first);

#endif
