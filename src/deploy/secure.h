/* secure.h — secure aggregation in a deployment (internal;
 * docs/deployment-secagg.md): the SecAgg library (secagg.h) run between `fedc
 * server --secure-agg T` and its clients, around each exchange's reports; with
 * `--groups N`, between each aggregator and its group's clients (groups.h):
 * the aggregator unmasks its group's sum and forwards it, the server adds the
 * groups' sums. The clients cannot tell the two apart.
 *
 * What it covers: the aggregation's i32 inputs, each summed over the clients
 * (a plan built with --secure-sum BITS: the clients' fixed-point u32 words),
 * concatenated in input order into one vector per client. The other values of
 * a report (weights, loss, example counts) are sent and added as before.
 *
 * The rounds of one exchange, for the clients of its slots (SecAgg id: slot + 1):
 *
 *     task    carries "secagg": "T K SEED SESSION LENGTH" (threshold, neighbours,
 *             graph seed, the exchange's session number, words)
 *     0       client: secagg step 0 with its advertise message -> ack
 *     1       client polls step 1 -> wait | the keys; sends step 1, its shares -> ack
 *     2       client polls step 2 -> wait | its forwarded shares; works; its report's
 *             i32 tensors hold the masked words y (ready, go, report as before)
 *     3       client polls step 3 -> wait | the unmask request (U3: the added
 *             reports' clients; reject to the others); sends step 3, its reveal
 *             -> ack; the server unmasks the sum
 *
 * A SECAGG request: token, client, round, exchange, slot, session, step; a
 * tensor "secagg" (u8) holds the client's message, none for a poll. Any answer
 * may be reject (the exchange is over, the client was left out of the secure
 * round, the message is refused), after which the client goes back to its
 * check-ins. */
#ifndef FEDC_DEPLOY_SECURE_H
#define FEDC_DEPLOY_SECURE_H

#include <stdio.h>

#include "deploy/collect.h"
#include "deploy/secagg.h"
#include "deploy/wire.h"

enum { FEDC__SECURE_MAX_INPUTS = 4096 };

/* The aggregation's inputs that secure aggregation covers (its i32 inputs),
 * their indices into idx (at most FEDC__SECURE_MAX_INPUTS), their number in *n
 * and their words in all in *length. EUNSUPPORTED if one is used other than by
 * a sum over the clients, or the words exceed what SecAgg takes. */
fedc_status fedc__secure_inputs(const fedc_program *agg, int *idx, int *n, uint64_t *length);

/* ------------------------------------------------------------- server -- */

typedef struct fedc__secure fedc__secure;

/* Who runs a secure aggregation, and over which clients: a server over the
 * `slots` clients a round selects, the first `commit` reports in slot order of
 * which are added (over-selection when fewer: U3 is theirs, the others'
 * masked inputs are left out, unmasked as dropped); or an aggregator over its
 * group's slots (groups.h: commit = slots). Threshold t (0: half of each
 * neighbourhood and one more), neighbours k (0: every other client). */
typedef struct fedc__secure_setup {
    int threshold, neighbours, slots, commit;
    double heartbeat_timeout; /* rounds 0, 1 and 3 last at most this */
    FILE *log;
    const char *name;         /* its log lines' prefix: "fedc server", "fedc aggregator G" */
    const char *per;          /* whose the slots are, in messages: "round" or "group" */
} fedc__secure_setup;

/* EINVAL naming the option when the plan has nothing to aggregate securely, or
 * the numbers do not fit: t must also be at most the summed neighbours a
 * summed client is sure to have, which rebuild its seed. */
fedc_status fedc__secure_create(fedc__secure **out, const fedc_deployment_form *form, const fedc__secure_setup *o);
void fedc__secure_destroy(fedc__secure *x); /* safe on NULL */
/* Exchange e of round r begins at `now`, collected by c, its clients in their
 * slots (ids of the population); c hands it each report it adds (U3). Not
 * active when e's aggregation has no i32 input. */
fedc_status fedc__secure_begin(fedc__secure *x, fedc__collect *c, int round, int exchange, uint64_t seed,
                               const int64_t *sampled, double now);
bool fedc__secure_active(const fedc__secure *x);
/* The task's "secagg" field ("" when not active). */
const char *fedc__secure_field(const fedc__secure *x);

/* The answer to a request: ACK, WAIT (retry_ms), REJECT (reason) or
 * SECAGG_REPLY (the server's message in bytes). */
typedef struct fedc__secure_answer {
    fedc__msg_type type;
    char reason[400];
    int retry_ms;
    void *bytes;
    size_t size;
    bool current; /* the request was of the open exchange's session */
} fedc__secure_answer;
/* A SECAGG request from slot's client (its token and slot checked). A refusal
 * within the open session gives the slot up in the collection. */
void fedc__secure_request(fedc__secure *x, int slot, const fedc__msg *m, fedc__secure_answer *a);
void fedc__secure_answer_free(fedc__secure_answer *a);
/* A report of slot's client, checked before the collection takes it: NULL, or
 * why it is refused. Its masked words go to SecAgg as round 2's message when
 * the collection adds the report (never, if it is left out). */
const char *fedc__secure_admit(fedc__secure *x, int slot, char *why, size_t size);
/* The timers: rounds 0, 1 and 3 close when each of their clients has sent, or
 * the heartbeat timeout after they opened (round 0: after its first client's
 * message, so that the clients' start is not counted); round 2 when the collection ends
 * (fedc__secure_close_masked). Slots left out of U1 or U2 are given up in c;
 * every open slot is when the secure round fails (fewer than t). */
fedc_status fedc__secure_tick(fedc__secure *x, fedc__collect *c, double now);
/* After the collection: round 2 closed, round 3 (unmask) opened. */
void fedc__secure_close_masked(fedc__secure *x, double now);
/* Round 3 closed, or the secure round failed: nothing more to wait for. */
bool fedc__secure_settled(const fedc__secure *x);
/* Why the secure round failed (fewer than t at some round), or NULL. */
const char *fedc__secure_failed(const fedc__secure *x);
/* The unmasked sum of the exchange's aggregation output j, when it is a sum
 * that secure aggregation covers and the sum is unmasked; else NULL. */
const uint32_t *fedc__secure_sum_of(const fedc__secure *x, int j);
/* The unmasked sums into the aggregates of run's exchange (after the
 * aggregation's end, before server_result). */
fedc_status fedc__secure_end(fedc__secure *x, fedc_deployment_run *run);
/* The secure round's counts as a JSON object, nothing when not active; and
 * metrics.jsonl's "secure_agg": that object (after a comma). */
void fedc__secure_summary(const fedc__secure *x, FILE *f);
void fedc__secure_metrics(const fedc__secure *x, FILE *f);

/* ------------------------------------------------------------- client -- */

/* How a client speaks to its server: a request and its answer. */
typedef fedc_status (*fedc__secure_call)(void *ctx, fedc__msg_type type, const fedc_metadata_entry *f, int nf,
                                         const fedc_tensor_entry *t, int nt, fedc__msg *reply);
typedef struct fedc__secure_client {
    fedc__secure_call call;
    void *ctx;
    const char *token, *id;
    FILE *log;
    double max_seconds, start;
    fedc__sa_client *sa;
    char round[32], exchange[32], slot[32], session[32];
} fedc__secure_client;

/* Rounds 0 and 1 of the task's exchange (agg: its aggregation), before its
 * work: advertise, share. Nothing when the task has no "secagg" field. *go
 * false: the server left this client out (logged); it does no work. */
fedc_status fedc__secure_client_share(fedc__secure_client *c, const fedc__msg *task, const fedc_program *agg, bool *go);
/* Round 2, after the work, before the report: the words of the i32 inputs
 * (inputs[i]: the client's value of the aggregation's input i) replaced by the
 * masked words. *go false: left out (logged); it sends no report. */
fedc_status fedc__secure_client_mask(fedc__secure_client *c, const fedc_program *agg, void *const *inputs, bool *go);
/* Round 3, after the report's ack: the reveal (or nothing, if the server
 * ended the exchange without one). Frees c's SecAgg state either way. */
fedc_status fedc__secure_client_unmask(fedc__secure_client *c);
void fedc__secure_client_free(fedc__secure_client *c);
/* client.c: a wait a server asks for (ms, 30 s at most), never past `deadline`
 * (fedc_seconds()): the end of the client's max_seconds. */
void fedc__client_nap(int64_t ms, double deadline);

#endif
