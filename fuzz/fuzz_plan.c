/* The plan reader (fedc_plan_from_files, what a client runs on what a server
 * sends): the input is plan.txt; the programs are those of a fixed plan
 * (HypCluster on the heart model, with its warm start: k-means++ on 3 clients,
 * so the warm_start and warm_phase lines and their checks are reached) made on
 * the first call, so that inputs close to the seed's manifest (fuzz/corpus/plan)
 * get past the hash to the later checks. */
#include "fuzz.h"

#include <string.h>

#include "fuzz_plan_base.h"

static fedc_plan_file files[FEDC__PLAN_MAX_FILES];
static int nfiles;
static fedc_plan *base;

static void make_base(void) {
    base = fuzz_plan_base(fuzz_dir("plan"));
    nfiles = fedc_plan_files(base, files, FEDC__PLAN_MAX_FILES);
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
