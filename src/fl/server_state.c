/* A server state held between rounds for programs that drive round programs by
 * hand (fedc/fl.h): the outputs of fedc_algorithm_server_init, which are named as
 * the round's server inputs and outputs are, so one buffer per name serves all. */
#include "fl/fl.h"

struct fedc_server_state {
    const fedc_model *model;
    int n;
    char **name;   /* server/<leaf> */
    void **data;
    size_t *bytes;
};

void fedc_server_state_destroy(fedc_server_state *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) fedc_free(s->name[i]), fedc_free(s->data[i]);
    fedc_free(s->name), fedc_free(s->data), fedc_free(s->bytes);
    fedc_free(s);
}

/* Copies ex's outputs named as s's leaves into them. */
static fedc_status take(fedc_server_state *s, const fedc_executor *ex) {
    for (int i = 0; i < s->n; i++) {
        const void *v;
        fedc_status st = fedc_executor_output(ex, s->name[i], &v, NULL);
        if (st) return st;
        memcpy(s->data[i], v, s->bytes[i]);
    }
    return FEDC_OK;
}

static fedc_status fill(fedc_server_state *s, const fedc_program *init, const float *params) {
    int n = fedc_program_num_outputs(init);
    s->name = fedc_calloc((size_t)n + 1, sizeof *s->name);
    s->data = fedc_calloc((size_t)n + 1, sizeof *s->data);
    s->bytes = fedc_calloc((size_t)n + 1, sizeof *s->bytes);
    if (!s->name || !s->data || !s->bytes) return fedc_error(FEDC_ENOMEM, "server_state: out of memory");
    for (; s->n < n; s->n++) {
        const char *name = fedc_program_output_name(init, s->n);
        fedc_type t = fedc_value_type(init, fedc_program_output_value(init, s->n));
        s->bytes[s->n] = fedc_type_bytes(&t);
        s->name[s->n] = fedc_malloc(strlen(name) + 1);
        s->data[s->n] = fedc_malloc(s->bytes[s->n] ? s->bytes[s->n] : 1);
        if (!s->name[s->n] || !s->data[s->n]) return fedc_error(FEDC_ENOMEM, "server_state: out of memory");
        strcpy(s->name[s->n], name);
    }
    fedc_executor *ex = NULL;
    fedc_status st = fedc_executor_create(&ex, init, &(fedc_exec_options){.clients = 1});
    for (int i = 0; !st && i < fedc_model_num_params(s->model); i++) {
        char name[600];
        snprintf(name, sizeof name, "params/%s", fedc_model_param_name(s->model, i));
        st = fedc_executor_bind(ex, name, params + fedc_model_param_offset(s->model, i));
    }
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = take(s, ex);
    fedc_executor_destroy(ex);
    return st;
}

fedc_status fedc_server_state_create(fedc_server_state **out, const fedc_model *m, const fedc_algorithm *a,
                                     const float *params) {
    *out = NULL;
    fedc_server_state *s = fedc_calloc(1, sizeof *s);
    if (!s) return fedc_error(FEDC_ENOMEM, "server_state: out of memory");
    s->model = m;
    fedc_program *init = NULL;
    fedc_status st = fedc_algorithm_server_init(m, a, &init);
    if (!st) st = fill(s, init, params);
    fedc_program_destroy(init);
    if (st) fedc_server_state_destroy(s);
    else *out = s;
    return st;
}

fedc_status fedc_server_state_bind(fedc_server_state *s, fedc_executor *round) {
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < s->n; i++) st = fedc_executor_bind(round, s->name[i], s->data[i]);
    return st;
}

fedc_status fedc_server_state_update(fedc_server_state *s, const fedc_executor *round) { return take(s, round); }

fedc_status fedc_server_state_params(const fedc_server_state *s, float *params) {
    for (int i = 0; i < fedc_model_num_params(s->model); i++) {
        char name[600];
        snprintf(name, sizeof name, "server/params/%s", fedc_model_param_name(s->model, i));
        int k = 0;
        while (k < s->n && strcmp(s->name[k], name)) k++;
        if (k == s->n) return fedc_error(FEDC_ENOTFOUND, "server_state: no \"%s\"", name);
        memcpy(params + fedc_model_param_offset(s->model, i), s->data[k], s->bytes[k]);
    }
    return FEDC_OK;
}
