/* A robust aggregator in a real round (fedc_algorithm_round; src/fl/robust_round.c):
 * each client's update is flattened inside the clients' map (src/ir/map_extend.c),
 * with cclip's centre taken off and a per-client attack (sign_flip, scale,
 * gaussian) made there too, and streams into the aggregator's store; ALIE and IPM,
 * which need the honest clients' statistics, are made in the store
 * (src/exec/aggregate_attack.c), with a zeroing after them, for the plain mean
 * too. So the round's planned memory does not grow by an update a client, a small
 * memory=MB spills to the file, and the model is the bits of the round that holds
 * every update in memory, of the round that zeroes them (--robust-zero, in the
 * map, or in the store after ALIE or IPM) with a bound that zeroes nothing, and
 * of 1 and 3 threads, with clients absent or not. That ALIE and IPM with a
 * zeroing in the store are the bits of their ops over the cohort,
 * test_robust_zero.c checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "exec/exec.h"
#include "harness.h"

enum { STEPS = 2, BATCH = 4, CLASSES = 62 };

static fedc_model *logistic(void) {
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "logistic", &(fedc_model_options){0})); /* 784 -> 62: 195 kB an update */
    return m;
}

/* FedAvg with `aggregator`, and "+ATTACK" after it the attack of the clients
 * bind_data makes malicious. */
static fedc_algorithm algorithm(const char *spec) {
    fedc_algorithm a = {.def = &fedc_algorithm_fedavg, .client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0), .batch_size = BATCH,
                        .max_steps = STEPS};
    char aggregator[64];
    snprintf(aggregator, sizeof aggregator, "%.*s", (int)strcspn(spec, "+"), spec);
    CHECK_OK(fedc_robust_parse(aggregator, &a.aggregation.robust));
    if (strchr(spec, '+')) CHECK_OK(fedc_attack_parse(strchr(spec, '+') + 1, &a.aggregation.attack));
    return a;
}

/* The executor's planned bytes for a's round over `clients`. */
static size_t planned(const fedc_model *m, const fedc_algorithm *a, int clients) {
    fedc_program *round = NULL;
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_algorithm_round(m, a, &round));
    if (round) CHECK_OK(fedc_executor_create(&ex, round, &(fedc_exec_options){.clients = clients, .threads = 2}));
    size_t bytes = ex ? fedc_executor_planned_bytes(ex) : 0;
    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
    return bytes;
}

/* Every input of the round but the server state, for `clients`, from a fixed
 * stream: pixels in [0, 1), labels mod 62, every example real, every step run,
 * keys drawn, every third client malicious. */
static void bind_data(fedc_executor *ex, const fedc_program *round, int clients, void **hold) {
    uint64_t s = 12345;
    for (int i = 0, k = 0; i < fedc_program_num_inputs(round); i++) {
        const char *name = fedc_program_input_name(round, i);
        if (!strncmp(name, "server/", 7)) continue;
        fedc_type t = fedc_value_type(round, fedc_program_input(round, i));
        int64_t n = fedc_type_count(&t) * clients;
        void *buf = hold[k++] = calloc((size_t)n, 4);
        for (int64_t j = 0; j < n; j++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            if (!strcmp(name, "x")) ((float *)buf)[j] = (float)(s >> 40) / (float)(1 << 24);
            else if (!strcmp(name, "y")) ((int32_t *)buf)[j] = (int32_t)((s >> 33) % CLASSES);
            else if (!strcmp(name, "mask")) ((float *)buf)[j] = 1;
            else if (!strcmp(name, "steps")) ((int32_t *)buf)[j] = STEPS;
            else if (!strcmp(name, "key")) ((int32_t *)buf)[j] = (int32_t)(s >> 33);
            else if (!strcmp(name, FEDC_ATTACK_MALICIOUS)) ((float *)buf)[j] = j % 3 == 0;
        }
        CHECK_OK(fedc_executor_bind(ex, name, buf));
    }
}

/* One round of a over `clients` on `threads` from the model's seed-1 start, the
 * clients `absent` marks (NULL: none) left out: the new model in w. */
static void run_round_on(const fedc_model *m, const fedc_algorithm *a, int clients, int threads, const uint8_t *absent,
                         float *w) {
    fedc_program *round = NULL;
    fedc_executor *ex = NULL;
    fedc_server_state *s = NULL;
    void *hold[16] = {0};
    CHECK_OK(fedc_model_init(m, 1, w));
    CHECK_OK(fedc_algorithm_round(m, a, &round));
    if (round) CHECK_OK(fedc_executor_create(&ex, round, &(fedc_exec_options){.clients = clients, .threads = threads}));
    if (ex && absent) CHECK_OK(fedc_executor_set_absent(ex, absent));
    if (ex) CHECK_OK(fedc_server_state_create(&s, m, a, w));
    if (s) CHECK_OK(fedc_server_state_bind(s, ex));
    if (s) bind_data(ex, round, clients, hold);
    if (s) CHECK_OK(fedc_executor_run(ex));
    if (s) CHECK_OK(fedc_server_state_update(s, ex));
    if (s) CHECK_OK(fedc_server_state_params(s, w));
    for (int k = 0; k < 16; k++) free(hold[k]);
    fedc_server_state_destroy(s);
    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
}

static void run_round(const fedc_model *m, const fedc_algorithm *a, int clients, float *w) {
    run_round_on(m, a, clients, 2, NULL, w);
}

/* The round's memory plan grows with the cohort by what a client's scalars and
 * data take, not by its update: 32 more clients add less than 8 updates' bytes,
 * with a zeroing too. ALIE with the plain mean and a DP clip is still ops over
 * the cohort, whose updates are held for the whole cohort: the check sees that. */
static void test_planned_memory_flat_in_cohort(void) {
    fedc_model *m = logistic();
    size_t update = (size_t)fedc_model_size(m) * sizeof(float);
    const char *specs[] = {"median", "krum:f=2", "trimmed_mean:beta=0.2", "geomed", "cclip:tau=0.1",
                           "median+sign_flip", "krum:f=2+scale:s=-3", "trimmed_mean:beta=0.2+gaussian:sigma=0.5",
                           "median+alie", "krum:f=2+ipm", "cclip:tau=0.1+alie:z=1.5", "mean+alie", "mean+ipm"};
    for (int i = 0; m && i < FEDC_COUNT_OF(specs); i++) {
        fedc_algorithm a = algorithm(specs[i]);
        size_t small = planned(m, &a, 8), large = planned(m, &a, 40);
        CHECK_MSG(large < small + 8 * update, "%s: 32 more clients planned %zu more bytes (an update is %zu)", specs[i],
                  large - small, update);
    }
    const char *zeroed[] = {"median", "krum:f=2+sign_flip", "median+alie", "mean+ipm", "cclip:tau=0.1+alie"};
    for (int i = 0; m && i < FEDC_COUNT_OF(zeroed); i++) {
        fedc_algorithm zeroing = algorithm(zeroed[i]);
        zeroing.aggregation.zero_norm = 1e30;
        size_t small = planned(m, &zeroing, 8), large = planned(m, &zeroing, 40);
        CHECK_MSG(large < small + 8 * update, "%s with zeroing: 32 more clients planned %zu more bytes (an update is "
                  "%zu)", zeroed[i], large - small, update);
    }
    fedc_algorithm clipped = algorithm("mean+alie"); /* a DP clip needs the attack's ops */
    clipped.aggregation.clip = 1e30;
    size_t small = planned(m, &clipped, 8), large = planned(m, &clipped, 40);
    CHECK_MSG(large >= small + 32 * update, "alie with a DP clip: 32 more clients planned only %zu more bytes (is the "
              "check blind?)", large - small);
    fedc_model_destroy(m);
}

/* 12 clients' updates (2.3 MB) with 1 MiB: most go to the file, and the model is
 * the bits of the round that keeps them all in memory, and of the one that
 * zeroes nothing (a norm bound of 1e30; after ALIE and IPM, in the store). An
 * attack moves the model. */
static void test_spilled_round_same_bits(void) {
    enum { N = 12 };
    fedc_model *m = logistic();
    int64_t size = m ? fedc_model_size(m) : 1;
    float *want = calloc((size_t)size, sizeof *want), *got = calloc((size_t)size, sizeof *got);
    float *start = calloc((size_t)size, sizeof *start);
    const char *specs[] = {"median", "multikrum:f=2,m=5", "bulyan:f=2", "cclip:tau=0.1", "median+sign_flip",
                           "multikrum:f=2,m=5+scale:s=-3", "cclip:tau=0.1+gaussian:sigma=0.5", "median+alie",
                           "trimmed_mean:beta=0.2+alie:z=1.5", "multikrum:f=2,m=5+ipm:eps=2", "cclip:tau=0.1+alie",
                           "geomed+ipm", "mean+alie:z=1.5", "mean+ipm"};
    for (int i = 0; m && i < FEDC_COUNT_OF(specs); i++) {
        fedc_algorithm a = algorithm(specs[i]);
        run_round(m, &a, N, want);
        CHECK_OK(fedc_model_init(m, 1, start));
        CHECK_MSG(memcmp(want, start, (size_t)size * sizeof *want), "%s: the round did not change the model", specs[i]);
        if (strchr(specs[i], '+')) {
            fedc_algorithm clean = algorithm(specs[i]);
            clean.aggregation.attack = (fedc_attack){0};
            run_round(m, &clean, N, got);
            CHECK_MSG(memcmp(want, got, (size_t)size * sizeof *got), "%s: the attack changed nothing", specs[i]);
        }
        int64_t before = fedc__robust_spilled;
        a.aggregation.robust.memory_mb = 1;
        run_round(m, &a, N, got);
        CHECK_MSG(fedc__robust_spilled - before >= N - 6, "%s with memory=1: %lld of %d updates spilled", specs[i],
                  (long long)(fedc__robust_spilled - before), N);
        CHECK_MSG(!memcmp(want, got, (size_t)size * sizeof *got), "%s: memory=1 is not the in-memory round's bits",
                  specs[i]);
        a.aggregation.robust.memory_mb = 0;
        a.aggregation.zero_norm = 1e30;
        run_round(m, &a, N, got);
        CHECK_MSG(!memcmp(want, got, (size_t)size * sizeof *got), "%s: zeroing nothing changed the bits", specs[i]);
    }
    free(want), free(got), free(start);
    fedc_model_destroy(m);
}

/* ALIE and IPM made in the store with two clients absent (holes in the honest
 * clients' statistics: a malicious one, 3, and an honest one, 7): the same bits
 * with 1, 2 or 3 threads, in memory or spilled, and with a zeroing that zeroes
 * nothing; the holes change the model. */
static void test_attack_in_store_absent_threads(void) {
    enum { N = 12 };
    fedc_model *m = logistic();
    int64_t size = m ? fedc_model_size(m) : 1;
    float *want = calloc((size_t)size, sizeof *want), *got = calloc((size_t)size, sizeof *got);
    uint8_t absent[N] = {[3] = 1, [7] = 1};
    const char *specs[] = {"median+alie", "cclip:tau=0.1+ipm:eps=2", "krum:f=2+alie:z=0.5", "mean+alie"};
    for (int i = 0; m && i < FEDC_COUNT_OF(specs); i++) {
        fedc_algorithm a = algorithm(specs[i]);
        run_round_on(m, &a, N, 2, absent, want);
        run_round_on(m, &a, N, 2, NULL, got);
        CHECK_MSG(memcmp(want, got, (size_t)size * sizeof *got), "%s: two absent clients changed nothing", specs[i]);
        for (int threads = 1; threads <= 3; threads += 2) {
            a.aggregation.robust.memory_mb = threads == 1; /* 1 MiB: spilled */
            run_round_on(m, &a, N, threads, absent, got);
            CHECK_MSG(!memcmp(want, got, (size_t)size * sizeof *got), "%s on %d threads, memory=%d: other bits",
                      specs[i], threads, a.aggregation.robust.memory_mb);
        }
        a.aggregation.robust.memory_mb = 0;
        a.aggregation.zero_norm = 1e30;
        run_round_on(m, &a, N, 2, absent, got);
        CHECK_MSG(!memcmp(want, got, (size_t)size * sizeof *got), "%s: zeroing nothing changed the bits", specs[i]);
    }
    free(want), free(got);
    fedc_model_destroy(m);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"planned_memory_flat_in_cohort", test_planned_memory_flat_in_cohort},
        {"spilled_round_same_bits", test_spilled_round_same_bits},
        {"attack_in_store_absent_threads", test_attack_in_store_absent_threads},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
