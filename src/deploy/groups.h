/* groups.h — a deployment with aggregators: server ⊃ groups ⊃ clients (internal).
 *
 * With `fedc server --groups N` the round's slots are cut into N groups of
 * contiguous slots (the first k mod n groups one larger), and each group is
 * run by an aggregator (`fedc aggregator --group G`, aggregator.c): a client of
 * the server and a server to its group's clients. The aggregator takes the
 * server's group task, hands its clients their tasks, streams their reports in
 * slot order into the aggregation's tree (src/exec/aggregate.c) over its own
 * slots, and forwards one report: the tree's complete blocks over its leaves
 * (each a sum, its clients and weight). The server pushes every group's blocks
 * in group order, as rank 0 of an MPI run pushes its ranks' (fedc__agg_push),
 * which rebuilds exactly the tree one process would have had: the round has
 * the bits of fedc train's, whichever clients report. A group's first slot
 * must therefore begin a leaf of the tree (always so for 64 clients a round or
 * fewer). With groups the plan pins (plan build --groups), a group is its
 * clients among the round's, ordered by group as fedc train orders a grouped
 * cohort, and an aggregator refuses a client of another group.
 * docs/deployment-aggregators.md. */
#ifndef FEDC_DEPLOY_GROUPS_H
#define FEDC_DEPLOY_GROUPS_H

#include "deploy/server.h"

/* The server's side (server_groups.c). */
typedef struct fedc__groups fedc__groups;
/* The groups of s (s->o->groups), checked against its plan and options. */
fedc_status fedc__groups_create(server *s);
void fedc__groups_destroy(fedc__groups *g); /* safe on NULL */
/* A round's clients (s->sampled), drawn: with groups the plan pins
 * (plan_groups.c), ordered by group, stably, as fedc train --groups orders its
 * cohort, and each group's slots are its clients'; else the slots' groups. */
void fedc__groups_order(server *s);
/* An exchange opens: every group with clients waits for its aggregator's report. */
void fedc__groups_begin(server *s);
/* Answers an aggregator's request m, read from frame (its token checked by the caller). */
void fedc__groups_request(server *s, const fedc__msg *m, const void *frame, size_t size);
/* The timers: a group whose aggregator has been silent for the heartbeat
 * timeout is given up, as a client's slot is. */
fedc_status fedc__groups_tick(server *s);
/* The metrics row's "groups_dropped": [G, ...], the groups given up this round. */
void fedc__groups_metrics(const fedc__groups *g, FILE *f);
/* Message types between a server and its aggregators. */
static inline bool fedc__groups_message(fedc__msg_type t) {
    return t == FEDC__MSG_GROUP_CHECKIN || t == FEDC__MSG_GROUP_BEAT || t == FEDC__MSG_GROUP_REPORT;
}

/* Group g's first slot among k slots in n groups (the first k mod n groups
 * one larger). */
static inline int fedc__group_first(int k, int n, int g) { return g * (k / n) + (g < k % n ? g : k % n); }

#endif
