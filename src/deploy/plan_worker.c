/* One client of a plan run by another system's client (deploy.h, "A plan's
 * client_work"; Flower's ClientApp in python/fedc/flower.py): the plan's data
 * opened with its settings, and client_work run on the client's batches, loaded
 * as fedc train loads them, with the other inputs and the outputs as
 * safetensors bytes, the values fedc's own wire carries (src/deploy/wire.c). */
#include <string.h>

#include "deploy/plan_data.h"

struct fedc_plan_worker {
    const fedc_plan *plan;
    fedc__plan_data *data;
    fedc__plan_client *client; /* the last run's, kept for the next run of the same client */
    fedc_executor **work; /* per exchange of the round's form, made on first use */
    int exchanges;
    void **copies; /* the given inputs, aligned copies, kept while the executor may read them */
    int ncopies;
};

fedc_status fedc_plan_worker_create(const fedc_plan *p, const char *data, fedc_plan_worker **out) {
    *out = NULL;
    if (!p || !data) return fedc_error(FEDC_EINVAL, "plan worker: no plan or no data");
    if (fedc_plan_warm_form(p))
        return fedc_error(FEDC_EINVAL, "plan worker: the plan has a warm start (%s), which only fedc's own server runs",
                          fedc_plan_setting(p, "algorithm"));
    fedc_plan_worker *w = fedc_calloc(1, sizeof *w);
    if (!w) return fedc_error(FEDC_ENOMEM, "plan worker: out of memory");
    w->plan = p;
    w->exchanges = fedc_deployment_form_exchanges(fedc_plan_form(p));
    w->work = fedc_calloc((size_t)w->exchanges, sizeof *w->work);
    fedc_status st = w->work ? fedc__plan_data_open(p, data, &w->data)
                             : fedc_error(FEDC_ENOMEM, "plan worker: out of memory");
    if (st) fedc_plan_worker_destroy(w);
    else *out = w;
    return st;
}

static void drop_copies(fedc_plan_worker *w) {
    for (int i = 0; i < w->ncopies; i++) fedc_free(w->copies[i]);
    fedc_free(w->copies);
    w->copies = NULL, w->ncopies = 0;
}

void fedc_plan_worker_destroy(fedc_plan_worker *w) {
    if (!w) return;
    for (int e = 0; w->work && e < w->exchanges; e++) fedc_executor_destroy(w->work[e]);
    fedc_free(w->work);
    drop_copies(w);
    fedc__plan_client_destroy(w->client);
    fedc__plan_data_destroy(w->data);
    fedc_free(w);
}

/* Binds client_work's input `name` from the given tensors: of its type, copied
 * (a safetensors' data need not be aligned). */
static fedc_status bind_given(fedc_plan_worker *w, fedc_executor *ex, const fedc_program *q, int i,
                              const fedc_safetensors *in) {
    const char *name = fedc_program_input_name(q, i);
    fedc_type t = fedc_value_type(q, fedc_program_input(q, i));
    fedc_tensor_entry e;
    char a[64], b[64];
    if (fedc_safetensors_find(in, name, &e))
        return fedc_error(FEDC_EINVAL, "plan worker: client_work reads \"%s\", which the inputs do not hold", name);
    if (e.type.dtype != t.dtype || !fedc_type_same_shape(&e.type, &t))
        return fedc_error(FEDC_EINVAL, "plan worker: input \"%s\" is %s; client_work takes %s", name,
                          fedc_type_str(&e.type, a, sizeof a), fedc_type_str(&t, b, sizeof b));
    size_t bytes = fedc_type_bytes(&t);
    void *copy = fedc_malloc(bytes ? bytes : 1);
    if (!copy) return fedc_error(FEDC_ENOMEM, "plan worker: out of memory for \"%s\"", name);
    memcpy(copy, e.data, bytes);
    w->copies[w->ncopies++] = copy;
    return fedc_executor_bind(ex, name, copy);
}

/* client_work's outputs as safetensors bytes, and the client's own inputs that the
 * exchange's aggregation reads (meta/num_examples, a weight): what fedc client
 * reports besides client_work's values (client_report.c). */
static fedc_status encode_outputs(const fedc_plan_worker *w, const fedc_executor *ex, const fedc_program *q,
                                  const fedc_program *agg, void **out, size_t *size) {
    int n = fedc_program_num_outputs(q), m = fedc_program_num_inputs(agg), k = 0;
    fedc_tensor_entry *t = fedc_calloc((size_t)(n + m + 1), sizeof *t);
    if (!t) return fedc_error(FEDC_ENOMEM, "plan worker: out of memory");
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < n; i++, k++) {
        t[k].name = fedc_program_output_name(q, i);
        st = fedc_executor_output(ex, t[k].name, &t[k].data, &t[k].type);
    }
    for (int i = 0; !st && i < m; i++) {
        const char *name = fedc_program_input_name(agg, i);
        const void *own = fedc__plan_client_input(w->client, name);
        if (!own || fedc_program_find_output(q, name) != FEDC_NONE) continue;
        fedc_type type = fedc_value_type(agg, fedc_program_input(agg, i));
        type.placement = FEDC_LOCAL;
        t[k++] = (fedc_tensor_entry){name, type, own};
    }
    if (!st) st = fedc_safetensors_encode(t, k, NULL, 0, out, size);
    fedc_free(t);
    return st;
}

/* The client's batches and metadata: client `id` of the data. */
static fedc_status client_of(fedc_plan_worker *w, int64_t id) {
    if (w->client && fedc__plan_client_id(w->client) == id) return FEDC_OK;
    fedc__plan_client_destroy(w->client);
    w->client = NULL;
    return fedc__plan_client_create(w->data, id, &w->client);
}

fedc_status fedc_plan_worker_run(fedc_plan_worker *w, int64_t client, int64_t round, int exchange, bool seen,
                                 const void *inputs, size_t size, void **out, size_t *out_size) {
    *out = NULL, *out_size = 0;
    if (round < 0 || round > INT32_MAX || exchange < 0 || exchange >= w->exchanges)
        return fedc_error(FEDC_EINVAL, "plan worker: round %lld, exchange %d; the plan's rounds count from 0 and it has "
                          "%d exchanges", (long long)round, exchange, w->exchanges);
    const fedc_program *q = fedc_deployment_form_phase(fedc_plan_form(w->plan), exchange, FEDC_PHASE_CLIENT_WORK);
    fedc_status st = client_of(w, client);
    if (!st && !w->work[exchange]) st = fedc_executor_create(&w->work[exchange], q, NULL);
    fedc_safetensors *in = NULL;
    if (!st) st = fedc_safetensors_parse(inputs, size, "client_work's inputs", &in);
    drop_copies(w);
    int n = fedc_program_num_inputs(q);
    if (!st && !(w->copies = fedc_calloc((size_t)(n ? n : 1), sizeof *w->copies)))
        st = fedc_error(FEDC_ENOMEM, "plan worker: out of memory");
    fedc_executor *ex = w->work[exchange];
    if (!st) fedc__plan_client_seen(w->client, seen);
    if (!st) st = fedc__plan_client_load(w->client, (uint32_t)round, ex, q); /* batches and meta/ */
    for (int i = 0; !st && i < n; i++)
        if (!fedc__plan_client_input(w->client, fedc_program_input_name(q, i))) st = bind_given(w, ex, q, i, in);
    if (!st) st = fedc_executor_run(ex);
    const fedc_program *agg = fedc_deployment_form_phase(fedc_plan_form(w->plan), exchange, FEDC_PHASE_AGGREGATION);
    if (!st) st = encode_outputs(w, ex, q, agg, out, out_size);
    fedc_safetensors_destroy(in);
    return st;
}
