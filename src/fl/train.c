/* The training job: data, model, the round and evaluation programs, and the loop
 *
 *     for round r:  clients = sample(seed, r)
 *                   load their batches (shuffled by (seed, r, client))
 *                   run the round program -> new model, server state, train loss
 *                   every eval_every rounds: evaluate on the test clients
 *                   every checkpoint_every rounds: checkpoint
 *
 * Everything random is keyed by (seed, round, client), so a run resumed from a
 * checkpoint continues exactly as it would have.
 *
 * Under MPI (docs/mpi.md) every rank runs this loop on the same model: the
 * executors split each cohort's clients over the ranks, each rank loads only its
 * own clients' batches, and every rank gets the same new model. Rank 0 alone
 * prints and writes (metrics, curves, checkpoints) and reads a checkpoint to resume
 * from, which it broadcasts. Whatever can fail on some ranks only is followed by
 * fedc_mpi_agree, so all ranks stop with the same error and none waits. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/fault.h"
#include "fedc/secure_sum.h"
#include "fl/train.h"

size_t fedc_train_config_size(void) { return sizeof(fedc_train_config); }
size_t fedc_train_result_size(void) { return sizeof(fedc_train_result); }

void fedc_train_defaults(fedc_train_config *c) {
    memset(c, 0, sizeof *c);
    c->format = FEDC_FORMAT_AUTO;
    c->num_clients = 100;
    c->model = "cnn";
    c->algorithm.def = &fedc_algorithm_fedavg;
    c->algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1);
    c->algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0);
    c->algorithm.batch_size = 20;
    c->algorithm.dropout = true;
    c->epochs = 1;
    c->rounds = 100;
    c->clients_per_round = 10;
    c->threads = 2;
    c->eval_every = 10;
    c->eval_batch_size = 100;
    c->out_dir = "fedc-run";
}

static bool is_root(void) { return fedc_mpi_rank() == 0; }

/* FEDC_FAULT=metrics:R (core/fault.h): the process stopped as kill -9 would (no
 * buffer flushed, nothing cleaned up) right after round R's metrics row. */
static void fault_kill(int round) {
    if (fedc__fault_at(FEDC__FAULT_METRICS, round, -1)) raise(SIGKILL);
}


/* ---------------------------------------------------------------- setup -- */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t max_examples(const fedc_dataset *ds) {
    int64_t m = 0;
    for (int64_t i = 0; i < fedc_dataset_num_clients(ds); i++)
        if (fedc_dataset_client_examples(ds, i) > m) m = fedc_dataset_client_examples(ds, i);
    return m;
}

/* The task's model: fitting it, with the task's options; a sequence task's rows
 * then follow the model's length (Shakespeare's rows, LEAF windows cut or padded,
 * and Stack Overflow's max length become the model's tokens per example). */
fedc_status fedc__train_create_model(trainer *t) {
    fedc_model_options o = {0};
    const fedc__task *k = t->task_def;
    fedc_status st = fedc__task_model_options(k, t, t->c->model, &o);
    o.frozen_batchnorm = t->c->frozen_batchnorm;
    if (!st) st = fedc_model_create(&t->model, t->c->model, &o);
    if (st) return st;
    if (k->follow_length) k->follow_length(t, fedc_model_label_type(t->model, 1).dims[1]);
    size_t n = (size_t)fedc_model_size(t->model);
    t->params = fedc_malloc(n * sizeof *t->params);
    if (!t->params) return fedc_error(FEDC_ENOMEM, "train: out of memory for %zu parameters", n);
    return fedc_model_init(t->model, t->c->seed, t->params);
}

/* The evaluation program takes the model by its parameters' names. */
static fedc_status bind_model(trainer *t, fedc_executor *ex) {
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < fedc_model_num_params(t->model); i++)
        st = fedc_executor_bind(ex, fedc_model_param_name(t->model, i), t->params + fedc_model_param_offset(t->model, i));
    return st;
}

/* Why FedJAX's draws (--rng fedjax) cannot pick this run's clients, or NULL: they
 * are UniformGetClientSampler's, a fixed number of clients a round from a NumPy
 * RandomState seeded by a 32-bit seed. */
static const char *cannot_draw_as_fedjax(const trainer *t) {
    const fedc_train_config *c = t->c;
    if (c->seed > UINT32_MAX) return "a --seed of 2^32 or more (NumPy's RandomState takes 32 bits)";
    if (c->poisson) return "--sampling poisson";
    if (t->group_slots) return "sampling per level (--groups-per-round, --clients-per-group)";
    if (c->clock) return "--clock";
    if (t->async) return "an asynchronous algorithm";
    return NULL;
}

/* The cohort's slots and sampling rate. Poisson's cohort is Binomial(N, q), of
 * mean m = qN and sd below sqrt(m): m + 8 sqrt(m) + 8 slots hold every draw but
 * one in about 10^15 (a round that draws more fails, naming it). */
static fedc_status cohort_slots(trainer *t) {
    const fedc_train_config *c = t->c;
    int64_t n = fedc_dataset_num_clients(t->train), k = t->group_slots ? t->group_slots : c->clients_per_round;
    const char *why = c->rng == FEDC_RNG_FEDJAX ? cannot_draw_as_fedjax(t) : NULL;
    if (why)
        return fedc_error(FEDC_EINVAL, "train: --rng fedjax cannot go with %s: it draws as FedJAX does, a fixed "
                          "number of clients a round from NumPy's RandomState of a 32-bit seed", why);
    if (k < 1 || k > n)
        return fedc_error(FEDC_EINVAL, "train: %lld clients per round, but the data has %lld clients", (long long)k,
                          (long long)n);
    t->sampling_q = c->poisson && c->sampling_rate > 0 ? c->sampling_rate : (double)k / (double)n;
    if (!(t->sampling_q > 0 && t->sampling_q <= 1))
        return fedc_error(FEDC_EINVAL, "train: the sampling rate %g must be in (0, 1]", t->sampling_q);
    t->expected_clients = c->poisson ? t->sampling_q * (double)n : (double)k;
    double slots = ceil(t->expected_clients + 8 * sqrt(t->expected_clients) + 8);
    t->k = t->group_slots ? t->group_slots /* per level: G x K, some absent when a group has fewer than K */
         : !c->poisson ? fedc__train_clock_slots(t, (int)k) : slots < (double)n ? (int)slots : (int)n;
    if (t->async) t->k = fedc__train_async_slots(t); /* a step's K reports */
    int bits = c->algorithm.aggregation.secure_sum_bits;
    if (bits && t->k > fedc_secure_sum_max_clients(bits))
        return fedc_error(FEDC_EINVAL, "train: --secure-sum %d sums at most %lld clients without wrapping modulo 2^32, "
                          "but a round has up to %d%s; use fewer bits", bits,
                          (long long)fedc_secure_sum_max_clients(bits), t->k,
                          c->poisson ? " (Poisson sampling's slots: the mean plus 8 standard deviations)" : "");
    t->present = t->k;
    t->absent = fedc_calloc((size_t)t->k, 1);
    return t->absent ? FEDC_OK : fedc_error(FEDC_ENOMEM, "train: out of memory");
}

int64_t fedc__train_max_steps(const trainer *t) {
    const fedc_train_config *c = t->c;
    int64_t per_epoch = ceil_div(max_examples(t->train), c->algorithm.batch_size);
    int64_t steps = c->steps > 0 ? c->steps : per_epoch * (c->epochs > 0 ? c->epochs : 1);
    return steps < 1 ? 1 : steps;
}

/* How a round-shaped program (the round, the warm start) runs on k clients:
 * under the failing-client policy (docs/federated.md), a client whose update is
 * not finite, or whose computation fails, is dropped from the round, or with
 * --strict fails the job, named. */
static fedc_exec_options round_options(const trainer *t, int k) {
    const fedc_train_config *c = t->c;
    return (fedc_exec_options){.clients = k, .threads = c->threads, .mpi = true, .check_finite = true,
                               .on_client_failure = c->strict ? FEDC_FAIL_ROUND : FEDC_DROP_CLIENT,
                               .client_ids = t->client_ids, .groups = t->groups ? t->round_groups : 0,
                               .group_sizes = t->round_group_sizes};
}

static fedc_status create_programs(trainer *t) {
    const fedc_train_config *c = t->c;
    t->alg = c->algorithm;
    int64_t batch = t->alg.batch_size;
    t->alg.max_steps = fedc__train_max_steps(t);
    fedc_status st = fedc__train_clock_setup(t);
    if (!st && c->replay && !fedc__train_is_async(t))
        st = fedc_error(FEDC_EINVAL, "train: --replay is for the asynchronous algorithms (fedbuff, fedasync)");
    if (!st && fedc__train_is_async(t)) st = fedc__train_async_setup(t);
    if (!st) st = fedc__train_groups_setup(t);
    if (!st) st = cohort_slots(t);
    if (!st) st = fedc__train_groups_cohort(t);
    int k = t->k;
    if (!st) st = fedc__train_privacy_setup(t); /* before the state: an adaptive clip is part of it */
    if (!st) st = fedc__train_state_create(t, k);
    if (!st) st = fedc_algorithm_round(t->model, &t->alg, &t->round);
    t->client_ids = st ? NULL : fedc_calloc((size_t)k, sizeof *t->client_ids);
    if (!st && !t->client_ids) st = fedc_error(FEDC_ENOMEM, "train: out of memory");
    fedc_exec_options o = round_options(t, k);
    o.profile = c->profile;
    if (!st) st = fedc_executor_create(&t->round_ex, t->round, &o);
    if (!st) st = fedc__cohort_buffers_init(&t->cohort, t->model, k, batch, t->alg.max_steps, false);
    if (!st) st = fedc__cohort_buffers_bind(&t->cohort, t->round_ex, true);
    if (!st) st = fedc__train_state_bind(t, t->round_ex, t->round);
    if (!st && t->async) st = fedc__train_async_bind(t, t->round_ex);
    if (!st) st = fedc__train_privacy_bind(t);
    t->sampled = st ? NULL : fedc_malloc((size_t)k * sizeof *t->sampled);
    t->work = st ? NULL : fedc_malloc((size_t)k * sizeof *t->work);
    if (!st && (!t->sampled || !t->work)) st = fedc_error(FEDC_ENOMEM, "train: out of memory");
    return st;
}

/* The evaluation program over cohorts of up to 16 slots at a time: the
 * algorithm's own (reading the server state by name) if it has one and the job
 * has a server state, one test client a slot; else the model's
 * (fedc_evaluate_checkpoint's), packed: up to EVAL_SEGMENTS test clients share a
 * slot's batches (src/fl/evaluate_packed.c). */
enum { EVAL_SEGMENTS = 64 };
static fedc_status create_evaluation(trainer *t) {
    const fedc_train_config *c = t->c;
    fedc_dataset *ds = t->test ? t->test : t->train;
    int64_t n = fedc_dataset_num_clients(ds);
    int ek = (int)(n < 16 ? n : 16);
    if (ek < 1) return fedc_error(FEDC_EINVAL, "evaluate: the data has no clients");
    int64_t eb = c->eval_batch_size > 0 ? c->eval_batch_size : c->algorithm.batch_size;
    int64_t es = ceil_div(max_examples(ds), eb);
    if (es < 1) es = 1;
    fedc_status st = t->server.n ? fedc_algorithm_evaluation(t->model, &t->alg, eb, es, &t->eval) : FEDC_OK;
    bool own = t->eval != NULL;
    t->eval_segments = own || c->eval_unpacked ? 0 : EVAL_SEGMENTS;
    if (!st && !own)
        st = t->eval_segments ? fedc_evaluation_program_packed(t->model, eb, es, t->eval_segments, &t->eval)
                              : fedc_evaluation_program(t->model, eb, es, &t->eval);
    fedc_exec_options eo = {.clients = ek, .threads = c->threads, .mpi = true};
    if (!st) st = fedc_executor_create(&t->eval_ex, t->eval, &eo);
    if (!st) st = fedc__cohort_buffers_init(&t->eval_cohort, t->model, ek, eb, es, t->eval_segments > 0);
    if (!st) st = fedc__cohort_buffers_bind(&t->eval_cohort, t->eval_ex, false);
    if (!st && t->eval_segments) st = fedc_executor_bind(t->eval_ex, "segment", t->eval_cohort.segment);
    if (!st) st = own ? fedc__train_state_bind_eval(t, t->eval_ex, ds, ek) : bind_model(t, t->eval_ex);
    t->client_accuracy = st ? NULL : fedc_malloc((size_t)n * sizeof *t->client_accuracy);
    if (!st && !t->client_accuracy) st = fedc_error(FEDC_ENOMEM, "evaluate: out of memory");
    return st;
}

void fedc__train_destroy(trainer *t) {
    fedc_executor_destroy(t->round_ex);
    fedc_executor_destroy(t->eval_ex);
    fedc_program_destroy(t->round);
    fedc_program_destroy(t->eval);
    fedc__cohort_buffers_free(&t->cohort);
    fedc__cohort_buffers_free(&t->eval_cohort);
    fedc__train_state_free(t);
    fedc__clock_destroy(t->clock);
    fedc__train_async_free(t);
    fedc_free(t->params);
    fedc_free(t->sampled);
    fedc_free(t->work);
    fedc__train_groups_free(t);
    fedc_free(t->client_ids);
    fedc_free(t->absent);
    fedc_free(t->curve);
    fedc_free(t->client_accuracy);
    fedc_model_destroy(t->model);
    fedc_stackoverflow_vocab_destroy(t->so_vocab);
    fedc_dataset_destroy(t->test);
    fedc_dataset_destroy(t->train);
    fedc_dataset_destroy(t->holdout_source);
    fedc_dataset_destroy(t->train_central);
    if (t->jsonl) fclose(t->jsonl);
    if (t->csv) fclose(t->csv);
}

/* ---------------------------------------------------------------- rounds -- */

/* Loads the batches of the clients that this rank runs (ex's local clients, in
 * runs of consecutive ones), and agrees with the other ranks on whether that
 * worked. An asynchronous step's clients each draw theirs for a round of their own. */
static fedc_status fill_block(trainer *t, fedc_dataset *ds, const int64_t *clients, int present, cohort_buffers *cb,
                              const fedc_executor *ex, bool shuffle, uint32_t round, const uint32_t *rounds) {
    int *local = fedc_malloc((size_t)cb->clients * sizeof *local);
    int n = local ? fedc_executor_local_clients(ex, local, cb->clients) : 0;
    size_t rows = (size_t)(cb->max_steps * cb->batch);
    fedc_status st = local ? FEDC_OK : fedc_error(FEDC_ENOMEM, "train: out of memory");
    memset(cb->failed, 0, (size_t)cb->clients); /* this round's, for this rank's clients */
    while (n > 0 && local[n - 1] >= present) n--; /* absent slots: nothing to load */
    for (int k = 0, end; !st && k < n; k = end) {
        for (end = k + 1; !rounds && end < n && local[end] == local[end - 1] + 1;) end++;
        int first = local[k];
        cohort_buffers run = *cb; /* a view of the run's slots */
        run.x += (size_t)first * (size_t)cb->x_elems;
        run.y += (size_t)first * (size_t)cb->y_elems; /* a text model has several labels a row */
        run.mask += (size_t)first * rows;
        run.steps += first;
        run.key += 4 * (size_t)first;
        run.failed += first;
        st = fedc__train_fill(t, ds, clients + first, end - k, &run, shuffle, rounds ? rounds[first] : round);
    }
    fedc_free(local);
    return fedc_mpi_agree(st);
}

int64_t fedc__train_client_steps(const trainer *t, int64_t id) {
    int64_t epochs = t->c->epochs; /* epochs < 0: repeated up to max_steps */
    int64_t steps = epochs < 0 ? t->alg.max_steps
                               : ceil_div(fedc_dataset_client_examples(t->train, id) * epochs, t->alg.batch_size);
    return steps < t->alg.max_steps ? steps : t->alg.max_steps;
}

/* Each sampled client's SGD steps this round: the ranks' work, balanced. */
static fedc_status balance(trainer *t, int k) {
    for (int i = 0; i < k; i++) /* absent slots: none */
        t->work[i] = i < t->present ? (double)fedc__train_client_steps(t, t->sampled[i]) : 0;
    return fedc_executor_balance(t->round_ex, t->work);
}

static fedc_status copy_output(fedc_executor *ex, const char *name, float *dst) {
    const void *data;
    fedc_type type;
    fedc_status st = fedc_executor_output(ex, name, &data, &type);
    if (!st) memcpy(dst, data, fedc_type_bytes(&type));
    return st;
}

/* st's message with the round that failed, counted as the metrics count, after
 * the "rank R of N: " that an MPI job's agreement puts first. */
static fedc_status in_round(fedc_status st, int r) {
    const char *m = fedc_errmsg(), *after = !strncmp(m, "rank ", 5) ? strstr(m, ": ") : NULL;
    size_t head = after ? (size_t)(after + 2 - m) : 0;
    if (!strncmp(m + head, "round ", 6)) return st;
    char msg[900];
    snprintf(msg, sizeof msg, "%s", m);
    return fedc_error(st, "%.*sround %d: %s", (int)head, msg, r + 1, msg + head);
}

/* The clients dropped from round r (docs/federated.md), said and counted; an
 * error if none is left. Those whose data could not be loaded were named when
 * they were (by the rank that loads them). */
static fedc_status count_dropped(trainer *t, int r, fedc_status run) {
    int k = t->k, *which = fedc_malloc((size_t)k * sizeof *which);
    if (!which) return fedc_error(FEDC_ENOMEM, "train: out of memory");
    int n = fedc_executor_dropped(t->round_ex, which, k);
    if (run && n < k) { /* the round failed for another reason */
        fedc_free(which);
        return run;
    }
    for (int i = 0; i < n && is_root(); i++)
        if (!t->cohort.failed[which[i]])
            fprintf(stderr, "fedc train: warning: round %d: client %lld (\"%s\") dropped: its update is not finite or "
                    "its computation failed (--strict stops the run there, with the error)\n", r + 1,
                    (long long)t->sampled[which[i]], t->client_ids[which[i]]);
    fedc_free(which);
    t->dropped += n;
    if (n == t->present && n > 0)
        return fedc_error(FEDC_ENONFINITE, "round %d: all %d clients were dropped (their updates are not finite or "
                          "their data could not be loaded); lower the learning rates or check the data", r + 1, n);
    return FEDC_OK;
}

/* A diverged model is never saved: the run stops at the first round whose model
 * or server state is not finite, and the last checkpoint stays as it was. */
static fedc_status check_finite_model(const trainer *t, int r, double loss) {
    char what[96];
    int64_t at;
    if (!isfinite(loss) && t->present > 0) /* a Poisson round may have no clients, and no loss */
        return fedc_error(FEDC_ENONFINITE, "round %d: the training loss is %g; lower the learning rates", r + 1, loss);
    if (fedc__train_nonfinite(t, what, sizeof what, &at))
        return fedc_error(FEDC_ENONFINITE, "round %d: the model diverged: \"%s\" is not finite (element %lld) after "
                          "the server's step; lower the learning rates (this round is not saved)", r + 1, what,
                          (long long)at);
    return FEDC_OK;
}

/* Round r's clients into the first slots, the others absent (Poisson sampling). */
static fedc_status sample(trainer *t, int r) {
    const fedc_train_config *c = t->c;
    int64_t n = t->k, clients = fedc_dataset_num_clients(t->train);
    fedc_status st = c->poisson ? fedc_sample_clients_poisson(clients, t->sampling_q, c->seed, (uint32_t)r, t->k, t->sampled, &n)
                     : t->group_slots ? fedc__train_groups_sample(t, r, &n)
                     : fedc__train_clock_samples(t) ? fedc__train_clock_sample(t, r, &n)
                     /* FedJAX's training loop counts rounds from 1 */
                     : c->rng == FEDC_RNG_FEDJAX ? fedc_sample_clients_fedjax(clients, t->k, (uint32_t)c->seed,
                                                                             (uint32_t)r + 1, t->sampled)
                                                    : fedc_sample_clients(clients, t->k, c->seed, (uint32_t)r, t->sampled);
    if (st) return st;
    t->present = (int)n;
    for (int i = 0; i < t->k; i++) {
        if (i >= n) t->sampled[i] = 0; /* a valid id, never run nor written */
        t->absent[i] = i >= n;
        t->client_ids[i] = fedc_dataset_client_id(t->train, t->sampled[i]);
    }
    return c->poisson || t->group_slots ? fedc_executor_set_absent(t->round_ex, t->absent) : FEDC_OK;
}

static fedc_status run_round(trainer *t, int r, double *loss, double *examples) {
    int k = t->k;
    fedc_status st = t->async ? fedc__train_async_next(t, r) : sample(t, r);
    if (!st && t->clock && !t->async) st = fedc__train_clock_round(t, r);
    if (!st && t->present == 0) { /* a Poisson round that drew no one: nothing changes (docs/privacy.md) */
        *loss = NAN, *examples = 0;
        return FEDC_OK;
    }
    if (!st && t->groups) st = fedc__train_groups_round(t);
    if (!st) st = balance(t, k);
    if (!st) st = fill_block(t, t->train, t->sampled, t->present, &t->cohort, t->round_ex, true, (uint32_t)r,
                             fedc__train_async_rounds(t));
    if (!st) st = fedc__train_state_before_round(t, r);
    if (!st) fedc__train_privacy_before_round(t, r);
    if (!st) st = count_dropped(t, r, fedc_executor_run(t->round_ex));
    if (!st) st = fedc__train_state_after_round(t, r);
    if (!st) st = fedc__train_privacy_after_round(t);
    if (st) st = in_round(st, r);
    float l = NAN, e = 0;
    if (!st) st = copy_output(t->round_ex, "train_loss", &l);
    if (!st) st = copy_output(t->round_ex, "examples", &e);
    if (!st) st = check_finite_model(t, r, l);
    *loss = l;
    *examples = e;
    return st;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* What an evaluation adds up over its cohorts. */
typedef struct eval_sums {
    double loss_sum, correct, count;
    int accuracies; /* clients with examples, their accuracies in t->client_accuracy */
} eval_sums;

/* Runs the evaluation cohort as filled: its sums, and the accuracy of each of
 * the first `used` slots' first clients[j] clients (one each when not packed). */
static fedc_status run_eval(trainer *t, int used, const int *clients, eval_sums *acc) {
    fedc_status st = fedc_executor_run(t->eval_ex);
    const float *per_correct = NULL, *per_count = NULL;
    float v[3];
    const char *names[3] = {"loss_sum", "correct", "count"};
    for (int i = 0; !st && i < 3; i++) st = copy_output(t->eval_ex, names[i], &v[i]);
    if (!st) st = fedc_executor_output(t->eval_ex, "client_correct", (const void **)&per_correct, NULL);
    if (!st) st = fedc_executor_output(t->eval_ex, "client_count", (const void **)&per_count, NULL);
    if (st) return st;
    acc->loss_sum += v[0], acc->correct += v[1], acc->count += v[2];
    int per_slot = t->eval_segments ? t->eval_segments : 1;
    for (int j = 0; j < used; j++)
        for (int s = 0; s < clients[j]; s++) {
            int at = j * per_slot + s;
            if (per_count[at] > 0) t->client_accuracy[acc->accuracies++] = per_correct[at] / per_count[at];
        }
    return FEDC_OK;
}

/* One test client a slot, in cohorts of the eval executor's size. */
static fedc_status evaluate_alone(trainer *t, fedc_dataset *ds, int round, const int64_t *which, int64_t use,
                                  eval_sums *acc) {
    int ek = t->eval_cohort.clients, ones[16];
    fedc_status st = FEDC_OK;
    for (int j = 0; j < ek; j++) ones[j] = 1;
    for (int64_t first = 0; !st && first < use; first += ek) {
        int64_t ids[16];
        int k = (int)(use - first < ek ? use - first : ek);
        for (int j = 0; j < ek; j++) { /* a short last cohort repeats a client with no steps */
            int64_t i = first + (j < k ? j : 0);
            ids[j] = which ? which[i] : i;
        }
        st = fill_block(t, ds, ids, ek, &t->eval_cohort, t->eval_ex, false, 0, NULL);
        if (!st) st = fedc__train_state_before_eval(t, round, ids, ek);
        for (int j = k; !st && j < ek; j++) t->eval_cohort.steps[j] = 0;
        if (!st) st = run_eval(t, k, ones, acc);
    }
    return st;
}

/* Packed: consecutive test clients share a slot while their examples fit its
 * rows and it has places left; the slots this rank runs are filled. */
static fedc_status evaluate_packed(trainer *t, fedc_dataset *ds, const int64_t *which, int64_t use, eval_sums *acc) {
    cohort_buffers *cb = &t->eval_cohort;
    int ek = cb->clients, S = t->eval_segments, local[16], count[16];
    int64_t rows = cb->max_steps * cb->batch, *ids = fedc_malloc((size_t)use * sizeof *ids);
    fedc_status st = fedc_mpi_agree(ids ? FEDC_OK : fedc_error(FEDC_ENOMEM, "evaluate: out of memory"));
    for (int64_t i = 0; !st && i < use; i++) ids[i] = which ? which[i] : i;
    int nlocal = st ? 0 : fedc_executor_local_clients(t->eval_ex, local, ek);
    for (int64_t next = 0; !st && next < use;) {
        int64_t start[16] = {0};
        int used = 0;
        for (; used < ek && next < use; used++) { /* the slots' clients */
            start[used] = next;
            int64_t filled = 0;
            for (count[used] = 0; next < use && count[used] < S; count[used]++, next++) {
                int64_t n = fedc_dataset_client_examples(ds, ids[next]);
                if (count[used] > 0 && filled + n > rows) break;
                filled += n;
            }
        }
        for (int l = 0; !st && l < nlocal; l++) {
            int j = local[l];
            if (j < used) st = fedc__train_fill_packed(ds, ids + start[j], count[j], cb, j);
            else cb->steps[j] = 0;
        }
        st = fedc_mpi_agree(st);
        if (!st) st = run_eval(t, used, count, acc);
    }
    fedc_free(ids);
    return st;
}

/* Evaluates on the test clients (all, or --eval-clients of them sampled by
 * (seed, round)): the example-weighted loss and accuracy, and the quantiles of
 * the clients' own accuracies. */
static fedc_status evaluate(trainer *t, int round, eval_result *out) {
    fedc_dataset *ds = t->test ? t->test : t->train;
    int64_t n = fedc_dataset_num_clients(ds), use = n;
    int64_t *which = NULL;
    if (t->c->eval_clients > 0 && t->c->eval_clients < n) {
        use = t->c->eval_clients;
        which = fedc_malloc((size_t)use * sizeof *which);
        fedc_status st = fedc_mpi_agree(which ? FEDC_OK : fedc_error(FEDC_ENOMEM, "evaluate: out of memory"));
        if (!st) st = fedc_sample_clients(n, use, t->c->seed ^ 0x65766131u, (uint32_t)round, which);
        if (st) {
            fedc_free(which);
            return st;
        }
    }
    eval_sums acc = {0};
    fedc_status st = t->eval_segments ? evaluate_packed(t, ds, which, use, &acc)
                                      : evaluate_alone(t, ds, round, which, use, &acc);
    fedc_free(which);
    if (st) return st;
    out->loss = acc.count > 0 ? acc.loss_sum / acc.count : NAN;
    out->accuracy = acc.count > 0 ? acc.correct / acc.count : NAN;
    out->clients = acc.accuracies;
    int nacc = acc.accuracies;
    qsort(t->client_accuracy, (size_t)nacc, sizeof *t->client_accuracy, cmp_double);
    for (int q = 0; q < 3; q++) /* 10th, 50th, 90th percentiles (nearest rank) */
        out->quantiles[q] = nacc ? t->client_accuracy[(int)((nacc - 1) * (0.1 + 0.4 * q) + 0.5)] : NAN;
    return FEDC_OK;
}

static void progress(const trainer *t, int r, double loss, double eps, double elapsed, bool tty) {
    if (t->c->quiet || !is_root()) return;
    FILE *log = t->c->log ? t->c->log : stdout;
    int done = r + 1, left = t->c->rounds - r - 1; /* elapsed counts the rounds before a resume too */
    double eta = done > 0 ? elapsed / done * left : 0;
    fprintf(log, "%sround %d/%d  train loss %.4f  %.0f examples/s  elapsed %.0fs  eta %.0fs%s", tty ? "\r" : "",
            r + 1, t->c->rounds, loss, eps, elapsed, eta, tty ? "   " : "\n");
    fflush(log);
}

static fedc_status evaluate_and_log(trainer *t, int r, double train_loss, double eps, double seconds,
                                    fedc_train_result *res) {
    const fedc_train_config *c = t->c;
    FILE *log = c->log ? c->log : stdout;
    bool tty = isatty(fileno(log)), quiet = c->quiet || !is_root();
    eval_result e;
    fedc_status st = evaluate(t, r, &e);
    if (st) return st;
    if (tty && !quiet) fprintf(log, "\n");
    if (!quiet) { /* the quantiles of one client's accuracy would be that accuracy three times */
        fprintf(log, "round %d: %s loss %.4f, accuracy %.2f%%", r + 1,
                t->test ? "test" : "(no test split: on the training clients)", e.loss, 100 * e.accuracy);
        if (e.clients > 1)
            fprintf(log, " (%lld clients: p10 %.1f%%, median %.1f%%, p90 %.1f%%)", (long long)e.clients,
                    100 * e.quantiles[0], 100 * e.quantiles[1], 100 * e.quantiles[2]);
        fprintf(log, "\n");
    }
    st = fedc_mpi_agree(is_root() ? fedc__train_log_metrics(t, r + 1, train_loss, &e, eps, seconds) : FEDC_OK);
    res->test_loss = e.loss, res->test_accuracy = e.accuracy;
    for (int q = 0; q < 3; q++) res->accuracy_quantiles[q] = e.quantiles[q];
    res->clients_evaluated = e.clients;
    return st;
}

/* The warm start's cohort: k of n clients from a stream of the seed's own
 * (a deployed server draws the same, fl/plan_data.h). */
fedc_status fedc__warm_start_cohort(int64_t n, int64_t k, uint64_t seed, int64_t *out) {
    return fedc_sample_clients(n, k, seed ^ 0x7761726du, 0, out);
}

/* An algorithm's start from the data (fl.h's warm_start), in a fresh run: its
 * program on a cohort drawn for it (a stream of its own), whose server state
 * replaces server_init's. */
static fedc_status warm_start(trainer *t) {
    const fedc_train_config *c = t->c;
    int k = c->clients_per_round;
    fedc_program *p = NULL;
    fedc_executor *ex = NULL;
    fedc_status st = fedc_algorithm_warm_start(t->model, &t->alg, k, &p);
    if (st || !p) return st;
    fedc_exec_options o = round_options(t, k);
    o.groups = 0, o.group_sizes = NULL; /* its cohort is its own, in one group */
    st = fedc_executor_create(&ex, p, &o);
    if (!st) st = fedc__cohort_buffers_bind(&t->cohort, ex, true);
    if (!st) st = fedc__train_state_bind(t, ex, p);
    if (!st) st = fedc__warm_start_cohort(fedc_dataset_num_clients(t->train), k, c->seed, t->sampled);
    for (int i = k; i < t->k; i++) t->sampled[i] = 0; /* the cohort's other slots (Poisson's): a valid id, unused */
    for (int i = 0; !st && i < k; i++) t->client_ids[i] = fedc_dataset_client_id(t->train, t->sampled[i]);
    if (!st) st = fill_block(t, t->train, t->sampled, k, &t->cohort, ex, true, UINT32_MAX, NULL);
    if (!st) st = fedc__train_state_before_round(t, 0);
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = fedc__train_state_take_server(t, ex);
    if (st) st = fedc_error(st, "%s's warm start: %s", fedc_algorithm_name(&t->alg), fedc_errmsg());
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    return st;
}

/* Round r's figures to the config's on_round callback: res as it stands, with
 * this round's train loss and the totals so far. */
static fedc_status report_round(const trainer *t, int r, bool evaluated, const fedc_train_result *res,
                                double train_loss, double eps, double seconds) {
    fedc_train_result now = *res;
    now.train_loss = train_loss, now.dropped = t->dropped;
    now.seconds = seconds, now.examples_per_s = eps;
    if (!t->have_last) {
        now.test_loss = now.test_accuracy = NAN;
        for (int q = 0; q < 3; q++) now.accuracy_quantiles[q] = NAN;
    }
    return t->c->on_round(t->c->on_round_ctx, r + 1, evaluated, &now);
}

/* The rounds. Seconds and examples continue the totals of the run a resume
 * continues, so its metrics are those of an uninterrupted run. */
static fedc_status loop(trainer *t, fedc_train_result *res) {
    const fedc_train_config *c = t->c;
    FILE *log = c->log ? c->log : stdout;
    bool tty = isatty(fileno(log));
    double run_start = fedc_seconds(), start = run_start - t->seconds_before;
    double examples_total = t->examples_before, examples_run = 0, train_loss = NAN;
    for (int r = t->first_round; r < c->rounds; r++) {
        double examples;
        fedc_status st = run_round(t, r, &train_loss, &examples);
        if (st) return st;
        examples_total += examples, examples_run += examples;
        double elapsed = fedc_seconds() - start, eps = examples_total / (elapsed > 0 ? elapsed : 1);
        progress(t, r, train_loss, eps, elapsed, tty);
        bool last = r + 1 == c->rounds;
        bool evaluated = last || (c->eval_every > 0 && (r + 1) % c->eval_every == 0);
        if (evaluated)
            st = evaluate_and_log(t, r, train_loss, eps, fedc_seconds() - start, res);
        else /* a row every round: the training curve, its test figures null */
            st = fedc_mpi_agree(is_root() ? fedc__train_log_metrics(t, r + 1, train_loss, NULL, eps,
                                                                    fedc_seconds() - start)
                                          : FEDC_OK);
        if (!st && is_root()) fault_kill(r + 1);
        if (!st && c->checkpoint_every > 0 && ((r + 1) % c->checkpoint_every == 0 || last))
            st = fedc_mpi_agree(is_root() ? fedc__train_save_checkpoint(t, r + 1, fedc_seconds() - start, examples_total)
                                          : FEDC_OK);
        if (st) return st;
        res->rounds_run++;
        if (c->on_round) st = fedc_mpi_agree(is_root() ? report_round(t, r, evaluated, res, train_loss, eps,
                                                                      fedc_seconds() - start)
                                                       : FEDC_OK);
        if (st) return st;
    }
    res->train_loss = train_loss;
    res->seconds = fedc_seconds() - run_start;
    res->examples_per_s = examples_run / (res->seconds > 0 ? res->seconds : 1);
    return FEDC_OK;
}

/* Rank 0 reads the checkpoint; every rank gets its model, state and round. */
static fedc_status resume(trainer *t) {
    fedc_status st = fedc_mpi_agree(is_root() ? fedc__train_load_checkpoint(t) : FEDC_OK);
    if (!st) st = fedc__train_state_broadcast(t);
    if (!st) st = fedc_mpi_broadcast(&t->first_round, sizeof t->first_round);
    if (!st) st = fedc_mpi_broadcast(&t->dropped, sizeof t->dropped);
    if (!st) st = fedc_mpi_broadcast(&t->seconds_before, sizeof t->seconds_before);
    if (!st) st = fedc_mpi_broadcast(&t->vtime, sizeof t->vtime);
    if (!st) st = fedc_mpi_broadcast(&t->examples_before, sizeof t->examples_before);
    if (!st && t->first_round > t->c->rounds)
        st = fedc_error(FEDC_EINVAL, "%s/checkpoint.safetensors is after round %d, beyond --rounds %d: resume with "
                        "--rounds %d or more", t->c->out_dir, t->first_round, t->c->rounds, t->first_round);
    return st;
}

/* A resumed run that had run all its rounds: nothing to train; its figures are
 * its metrics' last row. */
static void already_complete(const trainer *t, fedc_train_result *res) {
    res->already_complete = true;
    res->train_loss = t->have_last ? t->last_train_loss : NAN;
    res->test_loss = t->have_last ? t->last.loss : NAN;
    res->test_accuracy = t->have_last ? t->last.accuracy : NAN;
    for (int q = 0; q < 3; q++) res->accuracy_quantiles[q] = t->have_last ? t->last.quantiles[q] : NAN;
}

fedc_status fedc_train(const fedc_train_config *c, fedc_train_result *result) {
    trainer t;
    memset(&t, 0, sizeof t);
    t.c = c;
    fedc_train_result res = {0};
    if (c->rounds < 1) return fedc_error(FEDC_EINVAL, "train: rounds must be >= 1");
    fedc_status st = fedc__train_open_data(&t);
    if (!st) st = fedc__train_create_model(&t);
    if (!st) st = create_programs(&t);
    if (!st) st = create_evaluation(&t);
    st = fedc_mpi_agree(st);
    if (!st && c->resume) st = resume(&t);
    if (!st && t.first_round == 0) st = warm_start(&t);
    if (!st) st = fedc_mpi_agree(is_root() ? fedc__train_open_metrics(&t) : FEDC_OK);
    if (!st && t.first_round == c->rounds) already_complete(&t, &res);
    else if (!st) st = loop(&t, &res);
    res.dropped = t.dropped;
    if (!st) st = fedc_mpi_agree(is_root() ? fedc__train_write_curves(&t) : FEDC_OK);
    if (!st && c->profile && is_root()) {
        FILE *log = c->log ? c->log : stdout;
        fprintf(log, "time per op in the rounds (all clients and steps):\n");
        st = fedc_executor_profile(t.round_ex, log);
    }
    fedc__train_destroy(&t);
    if (result) *result = res;
    return st;
}

fedc_status fedc_evaluate_checkpoint(const fedc_train_config *c, const char *checkpoint, fedc_train_result *result) {
    trainer t;
    memset(&t, 0, sizeof t);
    t.c = c;
    eval_result e = {0};
    fedc_status st = fedc__train_open_data(&t);
    if (!st) st = fedc__train_create_model(&t);
    if (!st) st = fedc__train_load_params(&t, checkpoint);
    if (!st) st = create_evaluation(&t);
    if (!st) st = evaluate(&t, 0, &e);
    if (!st && result) {
        memset(result, 0, sizeof *result);
        result->test_loss = e.loss, result->test_accuracy = e.accuracy;
        for (int q = 0; q < 3; q++) result->accuracy_quantiles[q] = e.quantiles[q];
        result->clients_evaluated = e.clients;
    }
    fedc__train_destroy(&t);
    return st;
}
