/* The deployment form (fedc/deploy.h): round programs cut into server_prepare,
 * broadcast, client_work, aggregation and server_result, each phase a valid
 * program on the right placements, and the phases run in turn (one client at a
 * time, aggregations in client order) give the bits of the whole program run by
 * the simulator. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "fedc/deploy.h"
#include "fedc/fl.h"
#include "core/internal.h" /* fault injection */
#include "ir/ir.h"        /* to build programs the builders refuse */

enum { CLIENTS = 5, STEPS = 3, BATCH = 4, FEATURES = 13 };

/* ------------------------------------------------------ inputs by name -- */

typedef struct inputs {
    int n;
    const char *name[64];
    void *data[64];
} inputs;

static void free_inputs(inputs *in) {
    for (int i = 0; i < in->n; i++) free(in->data[i]);
    in->n = 0;
}

/* Data for input `name` of type t: features, labels, masks with a padded tail,
 * between 1 and STEPS real batches per client, keys, and random client state and
 * metadata (so SCAFFOLD's c_i differ). */
static void *make_input(const char *name, const fedc_type *t, int clients) {
    size_t copies = t->placement == FEDC_CLIENTS ? (size_t)clients : 1, count = (size_t)fedc_type_count(t) * copies;
    void *data = calloc(count + 1, fedc_dtype_size(t->dtype));
    for (size_t i = 0; data && i < count; i++) {
        if (t->dtype == FEDC_F32) {
            float *f = data;
            if (!strcmp(name, "mask")) f[i] = i % BATCH == BATCH - 1 && i % 3 == 0 ? 0.0f : 1.0f;
            else if (!strncmp(name, "meta/", 5)) f[i] = (float)fedc_test_uniform(1, 50);
            else if (!strncmp(name, "client/", 7)) f[i] = (float)fedc_test_uniform(-0.05, 0.05);
            else f[i] = (float)fedc_test_uniform(-1, 1);
        } else if (t->dtype == FEDC_I32) {
            int32_t *k = data;
            if (!strcmp(name, "steps")) k[i] = (int32_t)(STEPS - i % STEPS);
            else if (!strcmp(name, "y")) k[i] = (int32_t)((i * 7 + i / 5) % 2);
            else k[i] = (int32_t)(i * 2654435761u % 1000);
        }
    }
    return data;
}

/* Every input of `round`: server/<leaf> from the algorithm's server_init on the
 * model's initialisation, the rest from make_input. */
static fedc_status fill_inputs(const fedc_program *round, const fedc_program *init, const float *params,
                               const fedc_model *m, int clients, inputs *in) {
    fedc_executor *ex = NULL;
    fedc_status st = init ? fedc_executor_create(&ex, init, &(fedc_exec_options){.clients = 1}) : FEDC_OK;
    for (int i = 0; !st && init && i < fedc_model_num_params(m); i++) {
        char name[256];
        snprintf(name, sizeof name, "params/%s", fedc_model_param_name(m, i));
        st = fedc_executor_bind(ex, name, params + fedc_model_param_offset(m, i));
    }
    if (!st && ex) st = fedc_executor_run(ex);
    for (int i = 0; !st && i < fedc_program_num_inputs(round) && i < 64; i++) {
        const char *name = fedc_program_input_name(round, i);
        fedc_type t = fedc_value_type(round, fedc_program_input(round, i));
        in->name[in->n] = name;
        in->data[in->n] = make_input(name, &t, clients);
        const void *state;
        if (ex && !strncmp(name, "server/", 7) && !fedc_executor_output(ex, name, &state, NULL))
            memcpy(in->data[in->n], state, fedc_type_bytes(&t));
        in->n++;
    }
    fedc_executor_destroy(ex);
    return st;
}

/* ------------------------------------------------- the check of a form -- */

static size_t output_bytes(const fedc_type *t, int clients) {
    return fedc_type_bytes(t) * (t->placement == FEDC_CLIENTS ? (size_t)clients : 1);
}

/* Every phase holds what its kind allows: client_work only local values, the
 * server phases no @clients value. */
static void check_placements(const fedc_deployment_form *f) {
    for (int x = 0; x < fedc_deployment_form_exchanges(f); x++)
        for (int k = 0; k < FEDC_PHASE_COUNT; k++) {
            const fedc_program *q = fedc_deployment_form_phase(f, x, (fedc_phase_kind)k);
            CHECK(q != NULL);
            for (int v = 0; q && v < fedc_program_size(q); v++) {
                fedc_placement pl = fedc_value_type(q, v).placement;
                if (k == FEDC_PHASE_CLIENT_WORK) CHECK_MSG(pl == FEDC_LOCAL, "client_work %%%d is not local", v);
                if (k == FEDC_PHASE_SERVER_PREPARE || k == FEDC_PHASE_SERVER_RESULT)
                    CHECK_MSG(pl != FEDC_CLIENTS, "%s %%%d is @clients", fedc_phase_name((fedc_phase_kind)k), v);
            }
        }
}

/* Runs `round` whole and as its deployment form on the same inputs; every output
 * must have the same bits. Returns the number of exchanges (0 on failure). */
static int check_bitwise(const fedc_program *round, const inputs *in, int clients, int threads) {
    fedc_executor *ex = NULL;
    fedc_deployment_form *f = NULL;
    fedc_deployment_run *run = NULL;
    fedc_exec_options o = {.clients = clients, .threads = threads};
    CHECK_OK(fedc_executor_create(&ex, round, &o));
    CHECK_OK(fedc_program_deployment_form(round, &f));
    if (f) CHECK_OK(fedc_deployment_run_create(&run, f, &o));
    int exchanges = f ? fedc_deployment_form_exchanges(f) : 0;
    if (!ex || !run) goto done;
    check_placements(f);
    for (int i = 0; i < in->n; i++) {
        CHECK_OK(fedc_executor_bind(ex, in->name[i], in->data[i]));
        CHECK_OK(fedc_deployment_run_bind(run, in->name[i], in->data[i]));
    }
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_deployment_run_run(run));
    for (int i = 0; i < fedc_program_num_outputs(round); i++) {
        const char *name = fedc_program_output_name(round, i);
        const void *a = NULL, *b = NULL;
        fedc_type ta, tb;
        CHECK_OK(fedc_executor_output(ex, name, &a, &ta));
        CHECK_OK(fedc_deployment_run_output(run, name, &b, &tb));
        if (!a || !b) continue;
        CHECK_MSG(fedc_type_equal(&ta, &tb), "output %s: the types differ", name);
        CHECK_MSG(!memcmp(a, b, output_bytes(&ta, clients)), "output %s: the deployed bits differ", name);
    }
done:
    fedc_deployment_run_destroy(run);
    fedc_deployment_form_destroy(f);
    fedc_executor_destroy(ex);
    return exchanges;
}

/* One round of `def` on model `name`, whole and deployed. */
static void check_model(const char *name, const fedc_model_options *mo, bool dropout, const fedc_algorithm_def *def,
                        fedc_optimizer server_opt) {
    fedc_test_seed(42);
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, name, mo));
    if (!m) return;
    fedc_algorithm a = {.def = def, .client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5), .server_opt = server_opt,
                        .batch_size = BATCH, .max_steps = STEPS, .dropout = dropout};
    float *w = calloc((size_t)fedc_model_size(m), sizeof *w);
    fedc_program *round = NULL, *init = NULL;
    inputs in = {0};
    CHECK_OK(fedc_model_init(m, 1, w));
    CHECK_OK(fedc_algorithm_round(m, &a, &round));
    CHECK_OK(fedc_algorithm_server_init(m, &a, &init));
    if (round && init) CHECK_OK(fill_inputs(round, init, w, m, CLIENTS, &in));
    if (round && init) {
        CHECK_EQ_INT(check_bitwise(round, &in, CLIENTS, 0), 1);
        CHECK_EQ_INT(check_bitwise(round, &in, CLIENTS, 3), 1); /* the simulator's threads change no bit */
    }
    free_inputs(&in);
    free(w);
    fedc_program_destroy(init);
    fedc_program_destroy(round);
    fedc_model_destroy(m);
}

static void check_algorithm(const fedc_algorithm_def *def, fedc_optimizer server_opt) {
    check_model("heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}, false, def, server_opt);
}

/* The CNN (on 8 x 8 images, 4 classes) with dropout: convolutions, pooling, the
 * fused conv epilogues and the dropout keys in client work. */
static void test_fedavg_cnn(void) {
    fedc_model_options mo = {.num_classes = 4, .input_height = 8, .input_width = 8, .input_channels = 1};
    check_model("cnn", &mo, true, &fedc_algorithm_fedavg, fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0));
}

static void test_fedavg(void) { check_algorithm(&fedc_algorithm_fedavg, fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01)); }
static void test_fedsgd(void) { check_algorithm(&fedc_algorithm_fedsgd, fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0)); }
static void test_fedprox(void) { check_algorithm(&fedc_algorithm_fedprox, fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0)); }
static void test_scaffold(void) { check_algorithm(&fedc_algorithm_scaffold, fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0)); }
static void test_apfl(void) { check_algorithm(&fedc_algorithm_apfl, fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0)); }

/* FedAvg's form: one exchange whose client_work is one client's program (its
 * inputs at local types, the model broadcast to it among them) and whose
 * aggregation holds only weighted means and sums of client_work's outputs. */
static void test_fedavg_phases(void) {
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
    fedc_algorithm a = {.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0), .batch_size = BATCH, .max_steps = STEPS};
    fedc_program *round = NULL;
    fedc_deployment_form *f = NULL;
    if (m) CHECK_OK(fedc_algorithm_round(m, &a, &round));
    if (round) CHECK_OK(fedc_program_deployment_form(round, &f));
    if (!f) goto done;
    CHECK_EQ_INT(fedc_deployment_form_exchanges(f), 1);
    const fedc_program *work = fedc_deployment_form_phase(f, 0, FEDC_PHASE_CLIENT_WORK);
    const fedc_program *agg = fedc_deployment_form_phase(f, 0, FEDC_PHASE_AGGREGATION);
    const fedc_program *bcast = fedc_deployment_form_phase(f, 0, FEDC_PHASE_BROADCAST);
    CHECK(fedc_deployment_form_phase(f, 1, FEDC_PHASE_CLIENT_WORK) == NULL);
    CHECK(fedc_deployment_form_phase(f, 0, FEDC_PHASE_COUNT) == NULL);
    fedc_value x = fedc_program_find_input(work, "x");
    CHECK(x != FEDC_NONE);
    if (x != FEDC_NONE) {
        fedc_type t = fedc_value_type(work, x);
        CHECK(t.placement == FEDC_LOCAL && t.rank == 3 && t.dims[0] == STEPS && t.dims[1] == BATCH);
    }
    int broadcasts = 0;
    for (int i = 0; i < fedc_program_num_inputs(work); i++)
        broadcasts += !strncmp(fedc_program_input_name(work, i), "broadcast/%", 11);
    CHECK_EQ_INT(broadcasts, fedc_program_num_outputs(bcast));
    CHECK(broadcasts >= 2); /* the model's w and b */
    for (int i = 0; i < fedc_program_num_outputs(agg); i++) {
        const char *op = fedc_value_op_name(agg, fedc_program_output_value(agg, i));
        CHECK_MSG(!strcmp(op, "weighted_mean") || !strcmp(op, "sum"), "aggregation by %s", op);
        CHECK(!strncmp(fedc_program_output_name(agg, i), "aggregate/%", 11));
    }
    for (int i = 0; i < fedc_program_num_inputs(agg); i++) {
        const char *name = fedc_program_input_name(agg, i);
        CHECK_MSG(fedc_program_find_output(work, name) != FEDC_NONE, "the aggregation reads %s, not client work", name);
        fedc_type t;
        CHECK(fedc_deployment_form_value_type(f, name, &t) && t.placement == FEDC_CLIENTS);
    }
    const fedc_program *result = fedc_deployment_form_phase(f, 0, FEDC_PHASE_SERVER_RESULT);
    CHECK(fedc_program_find_output(result, "server/params/dense1/w") != FEDC_NONE);
    CHECK(fedc_program_find_output(result, "train_loss") != FEDC_NONE);
    fedc_type t;
    CHECK(!fedc_deployment_form_value_type(f, "no such value", &t));
    /* the phases print and parse back to the same text */
    char *text = NULL, *again = NULL;
    fedc_program *parsed = NULL;
    CHECK_OK(fedc_program_to_string(work, &text));
    if (text) CHECK_OK(fedc_program_parse(text, &parsed));
    if (parsed) CHECK_OK(fedc_program_to_string(parsed, &again));
    CHECK(text && again && !strcmp(text, again));
    fedc_free(text), fedc_free(again);
    fedc_program_destroy(parsed);
    /* the round read back from its text has the same form */
    fedc_deployment_form *g = NULL;
    text = again = NULL;
    parsed = NULL;
    CHECK_OK(fedc_program_to_string(round, &text));
    if (text) CHECK_OK(fedc_program_parse(text, &parsed));
    if (parsed) CHECK_OK(fedc_program_deployment_form(parsed, &g));
    fedc_free(text);
    text = NULL;
    if (g) CHECK_OK(fedc_program_to_string(fedc_deployment_form_phase(g, 0, FEDC_PHASE_CLIENT_WORK), &text));
    CHECK_OK(fedc_program_to_string(work, &again));
    CHECK(text && again && !strcmp(text, again));
    fedc_free(text), fedc_free(again);
    fedc_program_destroy(parsed);
    fedc_deployment_form_destroy(g);
done:
    fedc_deployment_form_destroy(f);
    fedc_program_destroy(round);
    fedc_model_destroy(m);
}

/* ------------------------------------------------- hand-built programs -- */

static fedc_type f32(int64_t n, fedc_placement pl) {
    fedc_type t = fedc_type_make(FEDC_F32, 1, (int64_t[]){n});
    t.placement = pl;
    return t;
}

/* body(w, x) -> w * x + 1, or tanh(w + x). */
static fedc_program *body(bool second) {
    fedc_program *b = NULL;
    if (fedc_program_create(&b)) return NULL;
    fedc_value w = fedc_input(b, "w", f32(4, FEDC_LOCAL)), x = fedc_input(b, "x", f32(4, FEDC_LOCAL));
    fedc_value y = second ? fedc_tanh(b, fedc_add(b, w, x)) : fedc_add(b, fedc_mul(b, w, x), fedc_scalar(b, FEDC_F32, 1));
    fedc_program_output(b, "y", y);
    return b;
}

/* Two exchanges: broadcast -> map -> mean -> server step -> broadcast -> map -> sum,
 * with a clients output and a clients value of exchange 0 read in exchange 1. */
static fedc_program *two_exchanges(void) {
    fedc_program *p = NULL, *b1 = body(false), *b2 = body(true);
    fedc_program_create(&p);
    fedc_value w = fedc_input(p, "w", f32(4, FEDC_SERVER)), x = fedc_input(p, "x", f32(4, FEDC_CLIENTS));
    fedc_value g, h;
    fedc_map(p, b1, (fedc_value[]){fedc_broadcast(p, w), x}, 2, &g);
    fedc_value w2 = fedc_sub(p, w, fedc_mul(p, fedc_scalar(p, FEDC_F32, 0.5), fedc_mean(p, g)));
    fedc_map(p, b2, (fedc_value[]){fedc_broadcast(p, w2), g}, 2, &h);
    fedc_program_output(p, "w", w2);
    fedc_program_output(p, "t", fedc_sum(p, h));
    fedc_program_output(p, "h", h);
    /* a server value of stage 0 no broadcast needs: server_result of exchange 0, read in exchange 1 */
    fedc_program_output(p, "t2", fedc_add(p, fedc_sum(p, h), fedc_exp(p, w)));
    fedc_program_output(p, "n", fedc_num_clients(p, FEDC_F32));
    fedc_program_destroy(b1), fedc_program_destroy(b2);
    return p;
}

static void check_program(fedc_program *p, int want_exchanges) {
    CHECK_OK(fedc_program_status(p));
    inputs in = {0};
    fedc_test_seed(7);
    for (int i = 0; i < fedc_program_num_inputs(p); i++) {
        fedc_type t = fedc_value_type(p, fedc_program_input(p, i));
        in.name[in.n] = fedc_program_input_name(p, i);
        in.data[in.n] = make_input(in.name[in.n], &t, CLIENTS);
        in.n++;
    }
    CHECK_EQ_INT(check_bitwise(p, &in, CLIENTS, 0), want_exchanges);
    free_inputs(&in);
}

static void test_two_exchanges(void) {
    fedc_program *p = two_exchanges();
    check_program(p, 2);
    fedc_deployment_form *f = NULL;
    CHECK_OK(fedc_program_deployment_form(p, &f));
    if (f) {
        /* the second model is computed where the second broadcast needs it, and g
         * stays on each client from exchange 0 to exchange 1 */
        const fedc_program *prep1 = fedc_deployment_form_phase(f, 1, FEDC_PHASE_SERVER_PREPARE);
        const fedc_program *work0 = fedc_deployment_form_phase(f, 0, FEDC_PHASE_CLIENT_WORK);
        const fedc_program *work1 = fedc_deployment_form_phase(f, 1, FEDC_PHASE_CLIENT_WORK);
        CHECK(fedc_program_num_inputs(prep1) == 2 && fedc_program_find_input(prep1, "w") != FEDC_NONE);
        CHECK_EQ_INT(fedc_program_size(fedc_deployment_form_phase(f, 0, FEDC_PHASE_SERVER_PREPARE)), 0);
        int carried = 0;
        for (int i = 0; i < fedc_program_num_inputs(work1); i++) {
            const char *name = fedc_program_input_name(work1, i);
            carried += !strncmp(name, "client_work/%", 13) && fedc_program_find_output(work0, name) != FEDC_NONE;
        }
        CHECK_EQ_INT(carried, 1);
        CHECK(fedc_program_find_output(work1, "h") != FEDC_NONE);
        const fedc_program *result0 = fedc_deployment_form_phase(f, 0, FEDC_PHASE_SERVER_RESULT);
        const fedc_program *result1 = fedc_deployment_form_phase(f, 1, FEDC_PHASE_SERVER_RESULT);
        CHECK(fedc_program_find_output(result1, "t") != FEDC_NONE);
        CHECK_EQ_INT(fedc_program_num_outputs(result0), 2); /* exp(w) and n */
        const char *temp = fedc_program_num_outputs(result0) ? fedc_program_output_name(result0, 0) : "";
        CHECK_MSG(!strncmp(temp, "server_result/%", 15) && fedc_program_find_input(result1, temp) != FEDC_NONE,
                  "exchange 0's server_result passes %s to exchange 1's", temp);
    }
    fedc_deployment_form_destroy(f);
    fedc_program_destroy(p);
}

/* No map: per-client ops on a broadcast, summed; and a program with no
 * communication at all, only client work. */
static void test_no_map(void) {
    fedc_program *p = NULL;
    fedc_program_create(&p);
    fedc_value w = fedc_input(p, "w", f32(4, FEDC_SERVER)), x = fedc_input(p, "x", f32(4, FEDC_CLIENTS));
    fedc_value y = fedc_exp(p, fedc_mul(p, fedc_broadcast(p, w), x));
    fedc_program_output(p, "s", fedc_sum(p, y));
    fedc_program_output(p, "m", fedc_weighted_mean(p, y, fedc_reduce_sum(p, x, NULL, -1, false)));
    fedc_program_output(p, "w", w); /* passed through */
    check_program(p, 1);
    fedc_program_destroy(p);

    fedc_program_create(&p);
    x = fedc_input(p, "x", f32(4, FEDC_CLIENTS));
    fedc_program_output(p, "y", fedc_square(p, fedc_add(p, x, fedc_scalar(p, FEDC_F32, 2))));
    check_program(p, 1);
    fedc_program_destroy(p);
}

static void test_cannot_split(void) {
    fedc_deployment_form *f = (fedc_deployment_form *)1;
    fedc_program *p = NULL;
    /* only server ops: nothing for clients to do */
    fedc_program_create(&p);
    fedc_program_output(p, "y", fedc_exp(p, fedc_input(p, "w", f32(4, FEDC_SERVER))));
    CHECK_ERR(fedc_program_deployment_form(p, &f), FEDC_EINVAL, "no @clients value");
    CHECK(f == NULL);
    fedc_program_destroy(p);

    /* a name a phase value would have */
    fedc_program_create(&p);
    fedc_value x = fedc_input(p, "broadcast/%3", f32(4, FEDC_CLIENTS));
    fedc_program_output(p, "s", fedc_sum(p, x));
    CHECK_ERR(fedc_program_deployment_form(p, &f), FEDC_EINVAL, "input \"broadcast/%3\" is named as a value between");
    fedc_program_destroy(p);

    /* a clients value reaching a server op without an aggregation: the builders
     * refuse it, so it is made by hand here, as a hostile file could be */
    fedc_program_create(&p);
    fedc_value w = fedc_input(p, "w", f32(4, FEDC_SERVER));
    x = fedc_input(p, "x", f32(4, FEDC_CLIENTS));
    fedc_value y = fedc_exp(p, w);
    fedc_program_output(p, "y", y);
    p->nodes[y].in[0] = x;
    CHECK_ERR(fedc_program_deployment_form(p, &f), FEDC_EINVAL, "cannot be split");
    CHECK_ERR(fedc_program_deployment_form(p, &f), FEDC_EINVAL, "%2");
    fedc_program_destroy(p);

    /* a broadcast of a map's result */
    p = two_exchanges();
    for (int v = 0; v < p->n; v++)
        if (p->nodes[v].op == FEDC_OP_BROADCAST && p->nodes[p->nodes[v].in[0]].type.placement == FEDC_SERVER &&
            p->nodes[v].in[0] != 0) {
            fedc_value g = FEDC_NONE;
            for (int u = 0; u < v; u++)
                if (p->nodes[u].op == FEDC_OP_RESULT) g = u;
            p->nodes[v].in[0] = g;
            char needle[48];
            snprintf(needle, sizeof needle, "%%%d broadcast: operand is", v);
            CHECK_ERR(fedc_program_deployment_form(p, &f), FEDC_EINVAL, needle);
            break;
        }
    fedc_program_destroy(p);
}

/* The form and its run on the two-exchange program with the k-th allocation
 * failing: ENOMEM from some call (never a crash or a leak: the ASan build checks),
 * and once k passes the allocations made, the baseline's bits. */
static fedc_status form_and_run(const fedc_program *p, const inputs *in, float *t) {
    fedc_deployment_form *f = NULL;
    fedc_deployment_run *run = NULL;
    fedc_status st = fedc_program_deployment_form(p, &f);
    if (!st) st = fedc_deployment_run_create(&run, f, &(fedc_exec_options){.clients = CLIENTS});
    for (int i = 0; !st && i < in->n; i++) st = fedc_deployment_run_bind(run, in->name[i], in->data[i]);
    if (!st) st = fedc_deployment_run_run(run);
    const void *data = NULL;
    if (!st) st = fedc_deployment_run_output(run, "t", &data, NULL);
    if (!st) memcpy(t, data, 4 * sizeof *t);
    fedc_deployment_run_destroy(run);
    fedc_deployment_form_destroy(f);
    return st;
}

static void test_out_of_memory(void) {
    fedc_program *p = two_exchanges();
    inputs in = {0};
    for (int i = 0; i < fedc_program_num_inputs(p); i++) {
        fedc_type t = fedc_value_type(p, fedc_program_input(p, i));
        in.name[in.n] = fedc_program_input_name(p, i);
        in.data[in.n] = make_input(in.name[in.n], &t, CLIENTS);
        in.n++;
    }
    float base[4], t[4];
    fedc__alloc_fail_after(0);
    CHECK_OK(form_and_run(p, &in, base));
    uint64_t total = fedc__alloc_fail_after(0), k;
    for (k = 1; k <= total + 1; k++) {
        fedc__alloc_fail_after(k);
        fedc_status st = form_and_run(p, &in, t);
        fedc__alloc_fail_after(0);
        if (st == FEDC_OK) break;
        CHECK_MSG(st == FEDC_ENOMEM, "allocation %llu failed: %s: %s", (unsigned long long)k, fedc_status_str(st),
                  fedc_errmsg());
    }
    CHECK_EQ_INT(k, total + 1);
    CHECK(!memcmp(t, base, sizeof t));
    free_inputs(&in);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"fedavg", test_fedavg},           {"fedsgd", test_fedsgd},         {"fedprox", test_fedprox},
        {"scaffold", test_scaffold},       {"apfl", test_apfl},             {"fedavg_cnn", test_fedavg_cnn},             {"fedavg_phases", test_fedavg_phases},
        {"two_exchanges", test_two_exchanges}, {"no_map", test_no_map}, {"cannot_split", test_cannot_split},
        {"out_of_memory", test_out_of_memory},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
