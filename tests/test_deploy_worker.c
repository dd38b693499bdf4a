/* A plan's client_work run for another system's client (fedc_plan_worker,
 * fedc/deploy.h; python/fedc/flower.py runs plans on Flower with it): the
 * outputs are client_work's and what the aggregation reads of the client's own,
 * of their types; a client's run does not depend on the clients run before it
 * on the worker; the round shuffles its batches; and what client_work cannot take
 * (a missing or mistyped input, bytes that are no safetensors, a client, round
 * or exchange out of range, a plan with a warm start) is refused, naming it.
 * fedc_plan_worker's bits against fedc train's are checked through Python
 * (python/tests/test_plan.py, peers_flower). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "deploy_case.h"
#include "fedc/deploy.h"

static char data_path[400], plan_dir[400];

static bool setup(fedc_plan **plan) {
    if (!data_path[0]) {
        if (!fedc_test_tmpdir("deploy-worker")) return false;
        snprintf(data_path, sizeof data_path, "%s", fedc_test_tmp("case.json"));
        snprintf(plan_dir, sizeof plan_dir, "%s", fedc_test_tmp("plan"));
        fedc_train_config c;
        case_config(&c, data_path, plan_dir, 2, 3);
        if (!write_case_data(data_path) || fedc_plan_build(&c, plan_dir)) return false;
    }
    return fedc_plan_read(plan_dir, plan) == FEDC_OK;
}

/* client_work's inputs but its batches: each of its type, filled with small
 * values (a model of 0.01s trains as well as any), as safetensors bytes. */
static bool given_inputs(const fedc_program *q, const char *skip, fedc_dtype as, void **out, size_t *size) {
    int n = fedc_program_num_inputs(q), k = 0;
    fedc_tensor_entry t[64];
    void *data[64];
    static const char *const loaded[] = {"x", "y", "mask", "steps", "key", "meta/num_examples", "meta/seen"};
    for (int i = 0; i < n && k < 64; i++) {
        const char *name = fedc_program_input_name(q, i);
        bool own = false;
        for (size_t j = 0; j < FEDC_COUNT_OF(loaded); j++) own |= !strcmp(name, loaded[j]);
        if (own || (skip && !strcmp(name, skip))) continue;
        fedc_type type = fedc_value_type(q, fedc_program_input(q, i));
        if (skip == NULL && as != FEDC_F32 && k == 0) type.dtype = as;
        size_t bytes = fedc_type_bytes(&type), count = bytes / fedc_dtype_size(type.dtype);
        data[k] = calloc(1, bytes ? bytes : 1);
        for (size_t e = 0; type.dtype == FEDC_F32 && e < count; e++) ((float *)data[k])[e] = 0.01f;
        t[k] = (fedc_tensor_entry){name, type, data[k]};
        k++;
    }
    bool ok = fedc_safetensors_encode(t, k, NULL, 0, out, size) == FEDC_OK;
    for (int i = 0; i < k; i++) free(data[i]);
    return ok;
}

static void *run(fedc_plan_worker *w, int64_t client, int64_t round, const void *in, size_t n, size_t *size) {
    void *out = NULL;
    fedc_status st = fedc_plan_worker_run(w, client, round, 0, false, in, n, &out, size);
    if (st) fprintf(stderr, "plan worker: %s\n", fedc_errmsg());
    CHECK(st == FEDC_OK);
    return out;
}

static void test_outputs(void) {
    fedc_plan *p = NULL;
    fedc_plan_worker *w = NULL;
    CHECK(setup(&p));
    CHECK_OK(fedc_plan_worker_create(p, data_path, &w));
    const fedc_deployment_form *f = fedc_plan_form(p);
    const fedc_program *q = fedc_deployment_form_phase(f, 0, FEDC_PHASE_CLIENT_WORK);
    const fedc_program *agg = fedc_deployment_form_phase(f, 0, FEDC_PHASE_AGGREGATION);
    void *in = NULL;
    size_t n = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    CHECK(given_inputs(q, NULL, FEDC_F32, &in, &n));
    void *first = run(w, 1, 0, in, n, &s1), *other = run(w, 3, 0, in, n, &s2);
    void *again = run(w, 1, 0, in, n, &s3), *later = run(w, 1, 1, in, n, &s4);
    CHECK(s1 == s3 && !memcmp(first, again, s1));            /* client 3 in between changed nothing */
    CHECK(s1 != s2 || memcmp(first, other, s1));             /* another client's data */
    CHECK(s1 != s4 || memcmp(first, later, s1));             /* round 2's shuffle */
    fedc_safetensors *out = NULL;
    CHECK_OK(fedc_safetensors_parse(first, s1, "the worker's outputs", &out));
    int want = fedc_program_num_outputs(q);
    for (int i = 0; i < want; i++) {
        fedc_tensor_entry e;
        fedc_type t = fedc_value_type(q, fedc_program_output_value(q, i));
        CHECK_OK(fedc_safetensors_find(out, fedc_program_output_name(q, i), &e));
        CHECK(e.type.dtype == t.dtype && fedc_type_same_shape(&e.type, &t));
    }
    for (int i = 0; i < fedc_program_num_inputs(agg); i++) { /* the report can be made from them */
        fedc_tensor_entry e;
        CHECK_OK(fedc_safetensors_find(out, fedc_program_input_name(agg, i), &e));
        want += fedc_program_find_output(q, fedc_program_input_name(agg, i)) == FEDC_NONE;
    }
    CHECK(fedc_safetensors_count(out) == want);
    fedc_safetensors_destroy(out);
    free(in);
    fedc_free(first), fedc_free(other), fedc_free(again), fedc_free(later);
    fedc_plan_worker_destroy(w);
    fedc_plan_destroy(p);
}

static void test_refused(void) {
    fedc_plan *p = NULL;
    fedc_plan_worker *w = NULL;
    CHECK(setup(&p));
    CHECK_ERR(fedc_plan_worker_create(p, fedc_test_tmp("absent.json"), &w), FEDC_EIO, "absent.json");
    CHECK(w == NULL);
    CHECK_OK(fedc_plan_worker_create(p, data_path, &w));
    const fedc_program *q = fedc_deployment_form_phase(fedc_plan_form(p), 0, FEDC_PHASE_CLIENT_WORK);
    const char *bcast = NULL;
    for (int i = 0; i < fedc_program_num_inputs(q) && !bcast; i++)
        if (!strncmp(fedc_program_input_name(q, i), "broadcast/", 10)) bcast = fedc_program_input_name(q, i);
    CHECK(bcast != NULL);
    void *in = NULL, *missing = NULL, *mistyped = NULL, *out = NULL;
    size_t n = 0, nm = 0, nt = 0, size = 0;
    CHECK(given_inputs(q, NULL, FEDC_F32, &in, &n));
    CHECK(given_inputs(q, bcast, FEDC_F32, &missing, &nm));
    CHECK(given_inputs(q, NULL, FEDC_F64, &mistyped, &nt));
    char want[128];
    snprintf(want, sizeof want, "reads \"%s\", which the inputs do not hold", bcast);
    CHECK_ERR(fedc_plan_worker_run(w, 0, 0, 0, false, missing, nm, &out, &size), FEDC_EINVAL, want);
    CHECK_ERR(fedc_plan_worker_run(w, 0, 0, 0, false, mistyped, nt, &out, &size), FEDC_EINVAL, "is f64");
    CHECK_ERR(fedc_plan_worker_run(w, 0, 0, 0, false, "not safetensors", 15, &out, &size), FEDC_EPARSE,
              "client_work's inputs");
    CHECK_ERR(fedc_plan_worker_run(w, CASE_CLIENTS, 0, 0, false, in, n, &out, &size), FEDC_EINVAL, "clients 0 to 4");
    CHECK_ERR(fedc_plan_worker_run(w, 0, -1, 0, false, in, n, &out, &size), FEDC_EINVAL, "rounds count from 0");
    CHECK_ERR(fedc_plan_worker_run(w, 0, 0, 1, false, in, n, &out, &size), FEDC_EINVAL, "1 exchanges");
    CHECK(out == NULL && size == 0);
    out = run(w, 0, 0, in, n, &size); /* still usable */
    CHECK(out != NULL && size > 0);
    fedc_free(out);
    free(in), free(missing), free(mistyped);
    fedc_plan_worker_destroy(w);
    fedc_plan_destroy(p);

    fedc_train_config c; /* HypCluster's warm start runs only on fedc server */
    case_config(&c, data_path, plan_dir, 2, 3);
    c.algorithm.def = &fedc_algorithm_hypcluster;
    CHECK_OK(fedc_plan_build(&c, fedc_test_tmp("warm")));
    CHECK_OK(fedc_plan_read(fedc_test_tmp("warm"), &p));
    CHECK_ERR(fedc_plan_worker_create(p, data_path, &w), FEDC_EINVAL, "warm start (hypcluster)");
    fedc_plan_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {{"outputs", test_outputs}, {"refused", test_refused}};
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
