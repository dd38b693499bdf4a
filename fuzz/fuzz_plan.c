/* The plan reader (fedc_plan_from_files, what a client runs on what a server
 * sends): the input is plan.txt; the programs are those of a fixed plan
 * (HypCluster on the heart model, with its warm start: k-means++ on 3 clients,
 * so the warm_start and warm_phase lines and their checks are reached) made on
 * the first call, so that inputs close to the seed's manifest (fuzz/corpus/plan)
 * get past the hash to the later checks. */
#include "fuzz.h"

#include <string.h>

#include "deploy/deploy.h"

static fedc_plan_file files[FEDC__PLAN_MAX_FILES];
static int nfiles;
static fedc_plan *base;

/* The fixed plan: the round, its form, the warm start and its form and the
 * server state of HypCluster (2 clusters) on the heart model with batches of 4
 * and 2 steps. */
static void make_base(void) {
    fedc_model *m = NULL;
    fedc_algorithm a = {.def = &fedc_algorithm_hypcluster, .batch_size = 4, .max_steps = 2};
    a.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1);
    a.server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1);
    fedc_program *round = NULL, *warm = NULL;
    if (fedc_model_create(&m, "heart", NULL) || fedc_algorithm_round(m, &a, &round) ||
        fedc_algorithm_warm_start(m, &a, 3, &warm) || !warm)
        __builtin_trap();
    float zeros[64] = {0};
    fedc_tensor_entry t[64];
    int n = 0;
    for (int i = 0; i < fedc_program_num_inputs(round); i++) {
        const char *name = fedc_program_input_name(round, i);
        if (!strncmp(name, "server/", 7)) t[n++] = (fedc_tensor_entry){name, fedc_value_type(round, fedc_program_input(round, i)), zeros};
    }
    const char *dir = fuzz_dir("plan");
    fedc__plan_setting s[1] = {{"seed", "0"}};
    if (fedc__plan_write(dir, round, NULL, warm, 3, NULL, s, 1, t, n) || fedc_plan_read(dir, &base)) __builtin_trap();
    nfiles = fedc_plan_files(base, files, FEDC__PLAN_MAX_FILES);
    fedc_program_destroy(round);
    fedc_program_destroy(warm);
    fedc_model_destroy(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!base) make_base();
    fedc_plan_file f[FEDC__PLAN_MAX_FILES];
    memcpy(f, files, sizeof f);
    f[0].data = data, f[0].size = size;
    fedc_plan *p = NULL;
    if (fedc_plan_from_files(f, nfiles, "fuzz", &p) != FEDC_OK) return 0;
    for (int i = 0; i < fedc_plan_num_tensors(p); i++) fuzz_sink += (unsigned)fedc_plan_tensor(p, i).name[0];
    const char *seed = fedc_plan_setting(p, "seed");
    if (seed) fuzz_sink += (unsigned)seed[0];
    fuzz_sink += (unsigned)fedc_plan_hash(p)[0] + (unsigned)fedc_plan_warm_clients(p);
    fedc_plan_destroy(p);
    return 0;
}
