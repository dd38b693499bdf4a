/* train.h — the training job's state, shared by its files (internal). */
#ifndef FEDC_FL_TRAIN_H
#define FEDC_FL_TRAIN_H

#include "fedc/exec.h"
#include "fedc/safetensors.h"
#include "fedc/tasks.h"
#include "fl/clock.h"
#include "fl/fl.h"
#include "fl/task.h"
#include "fl/train_state.h"

/* A cohort's batches, laid out as the round's @clients inputs want them. */
typedef struct cohort_buffers {
    int clients;
    int64_t batch, max_steps, x_elems, y_elems; /* of one client's x and y */
    fedc_dtype x_dtype;  /* f32, or i32 token ids (stored in x's 4-byte elements) */
    float *x, *mask;
    int32_t *y, *steps, *key;
    uint8_t *failed;     /* per client: its data could not be loaded (it was dropped, with a warning) */
    int32_t *segment;    /* packed evaluation: each row's client, its place in the slot; else NULL */
} cohort_buffers;

typedef struct eval_result {
    double loss, accuracy;
    double quantiles[3]; /* of the clients' accuracies: 10th, 50th, 90th percentile */
    int64_t clients;     /* with examples: how many accuracies the quantiles are of */
} eval_result;

/* The aggregators' side of the job (src/fl/train_privacy.c). */
typedef struct train_privacy {
    int32_t key[4];          /* FEDC_AGGREGATE_KEY: this round's server noise stream */
    double clip, noise_stddev, zeroed, fraction; /* the last round's aggregator outputs (NAN: none) */
    double bits;             /* with compression: the bits a client sends a round (NAN: none) */
    double attackers;        /* with --attack: the last round's malicious clients (NAN: none) */
    double q, delta;         /* the accountant's sampling rate and δ */
    double z_update, z_count; /* the noise multipliers of the update and of the unclipped count (0: none) */
} train_privacy;

typedef struct trainer {
    const fedc_train_config *c;
    fedc_data_format source_format;
    fedc_dataset *train, *test, *train_central;
    fedc_dataset *holdout_source; /* with --holdout: what train and test split */
    char task[16];          /* its name, as the metrics, plans and checkpoints record it */
    const fedc__task *task_def; /* src/fl/task.c's row */
    fedc_heart_disease_options heart;
    fedc_shakespeare_options shakespeare;
    fedc_stackoverflow_options stackoverflow;
    fedc_stackoverflow_vocab *so_vocab;
    bool synthetic;         /* synthetic:zipf:... data (word ranks) */
    bool synthetic_images;  /* synthetic:cifar10:... training data */
    float heart_mean[FEDC_HEART_DISEASE_FEATURES], heart_std[FEDC_HEART_DISEASE_FEATURES];
    fedc__cifar10_stats cifar10;
    fedc_model *model;
    fedc_algorithm alg;
    float *params;          /* the model, flat (the server state's params leaves) */
    state_set server;       /* the algorithm's server state (src/fl/train_state.c) */
    state_set client;       /* the cohort's client state: each leaf clients x its type */
    void *client_default;   /* a never-seen client's record */
    void *records;          /* the cohort's records, as the store reads and writes them */
    float *meta_examples;   /* meta/num_examples: the cohort's dataset sizes */
    float meta_population;  /* meta/population: the training data's clients */
    float *meta_seen;       /* meta/seen: whether each of the cohort's clients had a stored state */
    float *meta_index;      /* meta/index: 0, 1, ..., the cohort's places */
    float *meta_malicious;  /* meta/malicious: 1 for the cohort's malicious clients (--attack) */
    float *meta_domain;     /* meta/domain: the cohort's domains (when the round reads them) */
    float *client_domain;   /* every training client's domain (src/fl/train_domains.c) */
    /* An algorithm's evaluation that reads the client state (APFL's personal models):
     * the evaluation cohort's, its records, its meta/seen, and for every test client
     * the training client of its id (-1: none, so it is evaluated as never seen). */
    state_set eval_client;
    void *eval_records;
    float *eval_seen;
    int64_t *eval_train_client;
    fedc__client_store *store; /* rank 0's: every client's state between rounds */
    fedc_program *round, *eval;
    int eval_segments;      /* test clients per slot of a packed evaluation; 0: one (not packed) */
    fedc_executor *round_ex, *eval_ex;
    cohort_buffers cohort, eval_cohort;
    int64_t *sampled;
    double *work;        /* per sampled client: its SGD steps (balances the ranks) */
    const char **client_ids; /* the round's sampled clients' ids, for the executor's messages */
    int first_round;        /* 0, or where a resumed run starts */
    /* Carried over by checkpoints, so that a resumed run's metrics continue the
     * interrupted one's: training seconds, examples seen and clients dropped so far. */
    double seconds_before, examples_before;
    int64_t dropped;
    FILE *jsonl, *csv;
    bool have_last;         /* last: the last evaluation's row (a resumed run reads it back) */
    double last_train_loss; /* the metrics' last row's */
    eval_result last;
    double *curve;          /* per round: round, train_loss, test_loss, test_accuracy (NaN if not evaluated) */
    double *client_accuracy; /* per evaluated client, for the quantiles */
    int ncurve, cap_curve;
    train_privacy privacy;
    /* The cohort's slots k (the round executor's clients): --clients-per-round, or
     * with Poisson sampling room for all but a vanishing chance of its draws; the
     * round's present clients fill the first ones, the rest are absent. */
    int k, present;
    uint8_t *absent;
    double sampling_q, expected_clients; /* the rate of each client's sampling and the mean cohort */
    fedc__clock *clock;     /* --clock's profiles (NULL: none; src/fl/train_clock.c) */
    double vtime;           /* the virtual seconds the rounds so far took (a checkpoint carries it) */
    struct train_async *async; /* fedbuff, fedasync: the clients in flight (NULL: synchronous rounds) */
    /* --groups (src/fl/train_groups.c): the partition's groups (0: none, one group),
     * each training client's, and each group's clients (group_members[group_start[g]
     * .. group_start[g + 1]), in increasing order); the groups with clients; per
     * level, the groups and clients a group a round draws and the slots they make
     * (0: not per level); and the round's groups, their ids and their clients in
     * the cohort, in slot order. */
    int groups;
    int32_t *group_of;
    int64_t *group_start, *group_members;
    int *nonempty, nnonempty;
    int level_groups, level_clients, group_slots;
    int round_groups;
    int *round_group_id, *round_group_sizes;
    int64_t *group_scratch; /* k */
    int *group_first;       /* groups + 1: the round's runs of each group's clients */
    struct train_group_state *group_state; /* the groups' own state (group_init; NULL: none; train_group_state.c) */
} trainer;

FEDC_INTERNAL_API fedc_status fedc__train_open_data(trainer *t);
/* The local steps client `id` of the training data takes in a round. */
int64_t fedc__train_client_steps(const trainer *t, int64_t id);
/* Time (src/fl/train_clock.c): the clock made from the config and checked; the
 * cohort's slots with over-selection; round r's cohort drawn from the clients
 * available then (into t->sampled, *n of them); and the cohort cut to the
 * clients that report in time, the first clients_per_round of them, compacted
 * into the first slots (the others absent and counted as dropped), the virtual
 * clock advanced by the round's duration. */
fedc_status fedc__train_clock_setup(trainer *t);
int fedc__train_clock_slots(const trainer *t, int k);
bool fedc__train_clock_samples(const trainer *t);
fedc_status fedc__train_clock_sample(trainer *t, int r, int64_t *n);
fedc_status fedc__train_clock_round(trainer *t, int r);
/* Asynchronous runs (src/fl/train_async.c): whether t's algorithm is one; its
 * state made and checked (before the cohort's slots, which are its K reports a
 * step); bound to the round; freed; round r's K reports taken into t->sampled,
 * each with its model version and staleness weight, and the round each one's
 * batches are drawn for (NULL when synchronous). */
bool fedc__train_is_async(const trainer *t);
fedc_status fedc__train_async_setup(trainer *t);
int fedc__train_async_slots(const trainer *t);
fedc_status fedc__train_async_bind(trainer *t, fedc_executor *ex);
void fedc__train_async_free(trainer *t);
fedc_status fedc__train_async_next(trainer *t, int r);
const uint32_t *fedc__train_async_rounds(const trainer *t);
/* Its clients in flight in a checkpoint (src/fl/train_async_checkpoint.c): the
 * number of tensors it adds, the tensors and metadata (into e, returning how
 * many; valid until the next call), and reading them back on a resume. */
int fedc__train_async_num_entries(const trainer *t);
int fedc__train_async_entries(const trainer *t, fedc_tensor_entry *e);
int fedc__train_async_metadata(const trainer *t, fedc_metadata_entry *e);
fedc_status fedc__train_async_restore(trainer *t, const char *path, const fedc_safetensors *s);
/* The aggregators (src/fl/train_privacy.c): checked and completed (the expected
 * clients k) before the programs are built; the noise key bound to the round;
 * drawn before and read after each round (r counted from 0); the metrics' fields
 * (with the ε of `rounds` rounds) as JSON members, ", \"name\": value...", or "". */
fedc_status fedc__train_privacy_setup(trainer *t);
/* --groups (src/fl/train_groups.c): the partition, checked against the algorithm
 * and the sampling (before the cohort's slots, which per-level sampling sets);
 * the round's groups' buffers, once t->k is known; round r's cohort drawn per
 * level into t->sampled (*n clients); the round's present clients ordered by
 * group and its groups given to the executor; and freeing. */
fedc_status fedc__train_groups_setup(trainer *t);
fedc_status fedc__train_groups_cohort(trainer *t);
fedc_status fedc__train_groups_sample(trainer *t, int r, int64_t *n);
fedc_status fedc__train_groups_round(trainer *t);
void fedc__train_groups_free(trainer *t);
/* The round's per-group figures as JSON members (", \"group_loss\": [...]"), or
 * "" for a round program without them. */
fedc_status fedc__train_groups_json(const trainer *t, char *buf, size_t size);
/* A grouped algorithm's per-group state (src/fl/train_group_state.c; none
 * unless its group_init makes one): every group's, from group_init's value,
 * made once the round's most groups are known; bound to a round program that
 * reads it; the round's groups' values copied in before a round and out after
 * it (the others untouched); the checkpoint's tensors group/<leaf> [groups,
 * ...] (*e NULL: how many) and reading them back; sent from rank 0; and where
 * a value is not finite, as fedc__train_nonfinite says. */
typedef struct train_group_state train_group_state;
fedc_status fedc__train_group_state_create(trainer *t);
void fedc__train_group_state_free(trainer *t);
fedc_status fedc__train_group_state_bind(trainer *t, fedc_executor *ex, const fedc_program *round);
void fedc__train_group_state_before_round(trainer *t);
fedc_status fedc__train_group_state_after_round(trainer *t);
int fedc__train_group_state_entries(const trainer *t, fedc_tensor_entry *e);
fedc_status fedc__train_group_state_restore(trainer *t, const fedc_safetensors *s);
fedc_status fedc__train_group_state_broadcast(trainer *t);
bool fedc__train_group_state_nonfinite(const trainer *t, char *what, size_t size, int64_t *at);
fedc_status fedc__train_privacy_bind(trainer *t);
void fedc__train_privacy_before_round(trainer *t, int r);
fedc_status fedc__train_privacy_after_round(trainer *t);
fedc_status fedc__train_privacy_json(const trainer *t, int rounds, char *buf, size_t size);
/* The model of t->c (t->model, and t->params initialised from the seed). */
FEDC_INTERNAL_API fedc_status fedc__train_create_model(trainer *t);
/* The batches per client the round program is padded to: --steps, or the
 * epochs' batches of the largest client. */
FEDC_INTERNAL_API int64_t fedc__train_max_steps(const trainer *t);
/* Frees all a trainer holds (not t itself). */
FEDC_INTERNAL_API void fedc__train_destroy(trainer *t);
/* A cohort's buffers. Only a packed evaluation reads the rows' segments (`packed`);
 * other cohorts leave them NULL, which saves a training cohort 4 bytes a row. */
FEDC_INTERNAL_API fedc_status fedc__cohort_buffers_init(cohort_buffers *cb, const fedc_model *m, int clients,
                                                        int64_t batch, int64_t max_steps, bool packed);
FEDC_INTERNAL_API void fedc__cohort_buffers_free(cohort_buffers *cb);
fedc_status fedc__cohort_buffers_bind(const cohort_buffers *cb, fedc_executor *ex, bool with_key);
/* Loads clients[0..k) of ds into cb (shuffled and repeated for training, in order
 * for evaluation). */
FEDC_INTERNAL_API fedc_status fedc__train_fill(trainer *t, fedc_dataset *ds, const int64_t *clients, int k,
                                               cohort_buffers *cb, bool shuffle, uint32_t round);

/* The i32[4] data key of training client `id` in `round` (counted from 0): its
 * dropout stream (seed, round, id), step 0. */
void fedc__train_client_key(const trainer *t, uint32_t round, int64_t id, int32_t key[4]);

/* Packed evaluation: the n clients of ds in slot j of cb, their real rows one
 * after another (segment: the client's place, 0 .. n-1); a client whose data
 * cannot be loaded is left out with a warning. */
fedc_status fedc__train_fill_packed(fedc_dataset *ds, const int64_t *clients, int n, cohort_buffers *cb, int j);
/* Metrics, curves and checkpoints (src/fl/train_io.c). */
fedc_status fedc__train_open_metrics(trainer *t);
/* A round's row of the metrics, and of the curve; e NULL: the round was not evaluated. */
fedc_status fedc__train_log_metrics(trainer *t, int round, double train_loss, const eval_result *e,
                                    double examples_per_s, double seconds);
/* Appends one row to the curve (for curves.svg); e NULL as above. */
fedc_status fedc__train_add_curve(trainer *t, int round, double train_loss, const eval_result *e);
fedc_status fedc__train_write_curves(const trainer *t);
const char *fedc__train_csv_header(void);
/* Writes the checkpoint after round next_round - 1; the caller has checked that the
 * model and state are finite. seconds and examples: the run's totals so far. */
fedc_status fedc__train_save_checkpoint(trainer *t, int next_round, double seconds, double examples);
fedc_status fedc__restore_tensor(const fedc_safetensors *s, const char *name, float *dst, fedc_type want);
/* The model's parameters alone, from any checkpoint with the model's names. */
fedc_status fedc__train_load_params(trainer *t, const char *path);

/* Resuming (src/fl/train_resume.c): the job's configuration as a checkpoint
 * records it, and reading a checkpoint back with every check a resume needs. */
typedef struct train_setting {
    const char *flag;   /* the option that sets it, "--seed" (its metadata key is "config.seed") */
    char value[256];
    bool may_change;    /* a resume may change it (said aloud): it does not change the model */
    const char *unrecorded; /* the value a checkpoint that predates the setting had (NULL: unknown) */
    bool default_unwritten; /* at its unrecorded value, left out of the checkpoint (which has at most
                               64 metadata entries), so that the default run's checkpoint stays as it was */
} train_setting;
enum { FEDC__MAX_SETTINGS = 96 }; /* the job's ~55 settings and up to FEDC_MAX_HPARAMS hyperparameters, with room */
int fedc__train_settings(const trainer *t, train_setting *out, int max);
/* Its metadata key: config.<flag>, and config.set.<name> for a hyperparameter. */
void fedc__train_setting_key(const train_setting *s, char *key, size_t size);
fedc_status fedc__train_load_checkpoint(trainer *t);
/* On resume: cuts metrics.jsonl and metrics.csv back to the rows of the rounds the
 * checkpoint holds (a run killed after a row but before its checkpoint wrote
 * rows that the resumed run writes again) and reads those rows into the curve. */
fedc_status fedc__train_reopen_metrics(trainer *t);
/* The algorithm's state (src/fl/train_state.c): created once the model and the
 * cohort size (k) are known; bound to the round; the cohort's client state and
 * metadata loaded before each round (r counted from 0) and the new state taken
 * after it; the checkpoint's tensors (the server state, the model by its names)
 * written and restored; the store synced before a checkpoint is renamed into
 * place, told after it, and rewound on resume. */
fedc_status fedc__train_state_create(trainer *t, int k);
void fedc__train_state_free(trainer *t);
/* Binds what `round` (ex's program: the round, or the warm start) reads of it. */
fedc_status fedc__train_state_bind(trainer *t, fedc_executor *ex, const fedc_program *round);
/* Takes ex's outputs server/<leaf> as the server state (the warm start's). */
fedc_status fedc__train_state_take_server(trainer *t, const fedc_executor *ex);
/* An algorithm's own evaluation program on `test` in cohorts of ek: the server
 * state, server/<leaf>, and (if it reads them) the test clients' state,
 * client/<leaf> and meta/seen, loaded before each evaluation after round r. */
fedc_status fedc__train_state_bind_eval(trainer *t, fedc_executor *ex, const fedc_dataset *test, int ek);
fedc_status fedc__train_state_before_eval(trainer *t, int r, const int64_t *test_clients, int ek);
/* Every training client's domain into t->client_domain, and t->meta_domain
 * allocated (src/fl/train_domains.c). */
FEDC_INTERNAL_API fedc_status fedc__train_client_domains(trainer *t);
/* The same from "client_id,domain" lines in memory (a plan's domains.txt, named
 * `what`); a client of the data without a line is in domain -1. */
FEDC_INTERNAL_API fedc_status fedc__train_client_domains_text(trainer *t, const char *text, size_t size,
                                                              const char *what);
fedc_status fedc__train_state_before_round(trainer *t, int r);
fedc_status fedc__train_state_after_round(trainer *t, int r);
/* The checkpoint's tensors of the state (*e NULL: how many): the server's, then the groups'. */
int fedc__train_state_entries(const trainer *t, fedc_tensor_entry *e);
fedc_status fedc__train_state_restore(trainer *t, const fedc_safetensors *s);
fedc_status fedc__train_state_broadcast(trainer *t);
fedc_status fedc__train_state_sync(trainer *t);
fedc_status fedc__train_state_checkpointed(trainer *t, int next_round);
fedc_status fedc__train_state_resume(trainer *t, int next_round);
/* Where the first non-finite value of the model or the server state is (its
 * tensor's name in *what, the element in *at); false if all are finite. */
bool fedc__train_nonfinite(const trainer *t, char *what, size_t size, int64_t *at);

/* The clients of an algorithm's warm start (src/fl/train.c: fedc train's, and a
 * deployed server's, src/deploy/warm.c): k of n, drawn from a stream of `seed`'s
 * own, in out[0..k). */
FEDC_INTERNAL_API fedc_status fedc__warm_start_cohort(int64_t n, int64_t k, uint64_t seed, int64_t *out);

#endif
