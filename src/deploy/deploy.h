/* deploy.h — what the deployment form's files share (internal). */
#ifndef FEDC_DEPLOY_INTERNAL_H
#define FEDC_DEPLOY_INTERNAL_H

#include "fedc/deploy.h"
#include "ir/form.h"

/* The server's use of a run (run.c): one phase of one exchange (not client_work,
 * which the clients run; an aggregation leaves out the clients not `present`,
 * NULL: none), and the buffer of a value a phase writes or the server fills in
 * (a clients value: clients x its bytes, client by client), with its type as
 * the round has it; NULL for a value bound from outside (an input of the round)
 * or one no phase reads or writes. `output`: the round's output of that name. */
/* A server's run: as fedc_deployment_run_create, but it holds no clients value
 * (the clients hold them) and runs neither the broadcast nor client_work: a
 * task carries the values broadcast (fedc__deployment_run_broadcasts) and the
 * aggregation takes one client's report at a time (fedc__deployment_agg_*), so
 * its memory does not grow with the cohort. */
fedc_status fedc__deployment_run_create_server(fedc_deployment_run **out, const fedc_deployment_form *f,
                                               const fedc_exec_options *options);
/* The values exchange e broadcasts, one client's copy each: the broadcast's
 * name and local type, and the server value's buffer (valid until the run is
 * destroyed). Returns how many (at most max). */
int fedc__deployment_run_broadcasts(fedc_deployment_run *r, int exchange, fedc_tensor_entry *t, int max);
/* Exchange e's aggregation streamed: begin, then every client slot 0 .. clients-1
 * in order, each with its values (inputs[i] for input i of the aggregation
 * phase, aligned; NULL: the slot is left out), then end, which writes the
 * aggregates. Slot order fixes the sums' bits (the simulator's tree). */
fedc_status fedc__deployment_agg_begin(fedc_deployment_run *r, int exchange);
fedc_status fedc__deployment_agg_add(fedc_deployment_run *r, int exchange, int slot, const void *const *inputs);
fedc_status fedc__deployment_agg_end(fedc_deployment_run *r, int exchange);
/* The slots (increasing) the last selecting robust aggregator (Krum, Multi-Krum,
 * Bulyan: fedc_robust_selects) of the run kept, in *slots (valid until the next
 * aggregation), and their count; -1 when the run has run none. */
int fedc__deployment_run_kept(const fedc_deployment_run *r, const int **slots);

/* One block of an aggregation's tree (src/exec/aggregate.c): the sum of the
 * clients added over the leaves [first, first + 2^level), their number and
 * weight; data NULL when clients is 0. A group's report carries its blocks. */
typedef struct fedc__group_block {
    int64_t first;
    int level, clients;
    double weight;
    const void *data;
} fedc__group_block;
enum { FEDC__GROUP_MAX_BLOCKS = 72 }; /* the blocks an aggregation holds at most (FEDC__AGG_MAX_DEPTH) */

/* Aggregators' partial sums (groups.h), the run's side (run.c): exchange e's aggregation outputs; output j's blocks
 * (its open leaf closed first), as an aggregator forwards them (at most
 * FEDC__GROUP_MAX_BLOCKS), and each one's bytes; a block summed by an
 * aggregator pushed into output j after those before it (its data copied);
 * the leaf of the aggregation's tree over a cohort of `clients` that holds
 * slot i, and the first slot of leaf j. */
int fedc__deployment_agg_outputs(fedc_deployment_run *r, int exchange);
fedc_status fedc__deployment_agg_blocks(fedc_deployment_run *r, int exchange, int j, fedc__group_block *out, int *n,
                                        size_t *bytes);
fedc_status fedc__deployment_agg_push(fedc_deployment_run *r, int exchange, int j, fedc__group_block b);
int64_t fedc__deployment_leaf_of(int64_t clients, int64_t i);
int64_t fedc__deployment_leaf_start(int64_t clients, int64_t j);

fedc_status fedc__deployment_run_phase(fedc_deployment_run *r, int exchange, fedc_phase_kind kind, const uint8_t *present);
void *fedc__deployment_run_buffer(fedc_deployment_run *r, const char *name, bool output, fedc_type *type);

/* SHA-256 (sha256.c): init, add bytes, and the digest as 64 hex digits. */
typedef struct fedc__sha256 {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char buf[64];
} fedc__sha256;
void fedc__sha256_init(fedc__sha256 *c);
void fedc__sha256_add(fedc__sha256 *c, const void *data, size_t n);
void fedc__sha256_hex(fedc__sha256 *c, char hex[65]);

/* A plan's setting (plan.c): the training job's choices a client and the server
 * need, as "key value" lines of the manifest. */
typedef struct fedc__plan_setting {
    const char *key;
    char value[256];
} fedc__plan_setting;

/* The most files a plan has: plan.txt, round.fedc and 16 exchanges' phases,
 * warm_start.fedc and as many, client_init.fedc, domains.txt. */
enum { FEDC__PLAN_MAX_FILES = 5 + 2 * 16 * FEDC_PHASE_COUNT };

/* Writes a plan into `dir` (made if missing): round.fedc, the phases of its
 * form, warm_start.fedc and its phases warm_E_PHASE.fedc (`warm`, the
 * algorithm's warm start on a cohort of `warm_clients`; NULL: none),
 * client_init.fedc (a never-seen client's state; NULL: the round keeps none),
 * model.safetensors (`tensors`, the initial server state named as the round's
 * server inputs), domains.txt (`domains`: "client_id,domain" lines; NULL: none)
 * and plan.txt. */
fedc_status fedc__plan_write(const char *dir, const fedc_program *round, const fedc_program *client_init,
                             const fedc_program *warm, int warm_clients, const char *domains,
                             const fedc__plan_setting *settings, int nsettings, const fedc_tensor_entry *tensors,
                             int ntensors);
/* SHA-256 of a plan's settings, in the manifest's order (hex). The plan's hash covers
 * its programs only, so two builds of one job with another seed (or population,
 * ...) share it: a server's checkpoint keeps this one too, so that it is not
 * resumed under other settings. */
const char *fedc__plan_settings_hash(const fedc_plan *p);
/* A plan's domains.txt ("client_id,domain" lines: each client's meta/domain,
 * as the job found them), or NULL when it has none. */
const char *fedc__plan_domains(const fedc_plan *p, size_t *size);

/* The setting "groups" that plan build writes for c's --groups (N or
 * dirichlet:N:ALPHA; "" without; --groups-file and sampling per level refused,
 * with the reason), checked against the population; fedc_plan_groups draws the
 * clients' groups again from it (plan_groups.c). */
fedc_status fedc__plan_groups_setting(const fedc_train_config *c, int64_t population, char *value, size_t size);

/* Which round last added each client's report (added.c), as a server's
 * checkpoint keeps it for clients that keep state: "CLIENT:ROUND,..." for the
 * clients added once or more (the others -1). Encode: fedc_malloc'd text.
 * Parse: untrusted text, every client below n and round below `rounds`. */
fedc_status fedc__added_encode(const int32_t *added, int64_t n, char **out);
fedc_status fedc__added_parse(const char *text, int32_t *added, int64_t n, int64_t rounds);

#endif
