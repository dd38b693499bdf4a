/* What rounds are built from (fedc/fl.h, "building a round"): the client's
 * objective, local training over a client's batches, the clients' weights and
 * metadata, and the round's outputs. */
#include <math.h>
#include <string.h>

#include "fl/fl.h"

fedc_value fedc__fl_step_key(fedc_program *p, fedc_value key, fedc_value t) {
    fedc_value unit = fedc_constant(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), (int32_t[]){0, 0, 0, 1});
    return fedc_add(p, key, fedc_mul(p, unit, t));
}

double fedc_round_hparam(const fedc_round *r, const char *name) {
    double v = fedc_algorithm_hparam(r->alg, name);
    if (isnan(v) && !fedc_program_status(r->p)) fedc_program_fail(r->p, FEDC_EINVAL, "%s", fedc_errmsg());
    return v;
}

/* ------------------------------------------------------------ metadata -- */

/* What the training job knows of its clients, by name, and where it lives. */
static const struct {
    const char *name;
    fedc_placement placement;
} meta[] = {
    {"num_examples", FEDC_CLIENTS}, /* f32[]: the client's dataset size */
    {"population", FEDC_SERVER},    /* f32[]: the clients in the training data (SCAFFOLD's N) */
    {"seen", FEDC_CLIENTS},         /* f32[]: 1 if the client's state was stored, 0 if it is client_init's */
    {"domain", FEDC_CLIENTS},       /* f32[]: the client's domain, a whole number (src/fl/train_domains.c) */
    {"index", FEDC_CLIENTS},        /* f32[]: the client's place in the cohort, 0, 1, ... */
};
enum { NMETA = sizeof meta / sizeof meta[0] };

fedc_value fedc_round_meta(fedc_round *r, const char *name) {
    int k = 0;
    while (k < NMETA && (!name || strcmp(name, meta[k].name))) k++;
    if (k == NMETA)
        return fedc_program_fail(r->p, FEDC_EINVAL, "round_meta: no metadata \"%s\" (there is: num_examples, population, seen, domain, index)",
                                 name ? name : "(null)");
    char input[64];
    snprintf(input, sizeof input, "meta/%s", name);
    fedc_value v = fedc_program_find_input(r->p, input);
    return v != FEDC_NONE ? v : fedc_input(r->p, input, fedc__placed(fedc_type_scalar(FEDC_F32), meta[k].placement));
}

fedc_value fedc_round_weight(fedc_round *r, fedc_value examples) {
    switch (r->alg->weighting) {
    case FEDC_WEIGHT_EXAMPLES: return examples;
    case FEDC_WEIGHT_DATASET: return fedc_round_meta(r, "num_examples");
    case FEDC_WEIGHT_UNIFORM: return fedc_full(r->p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 1);
    }
    return fedc_program_fail(r->p, FEDC_EINVAL, "round_weight: unknown weighting %d", (int)r->alg->weighting);
}

static const char *const weighting_names[] = {"examples", "dataset", "uniform"};

const char *fedc_weighting_name(fedc_weighting w) { return (unsigned)w < 3 ? weighting_names[w] : "unknown"; }

fedc_status fedc_weighting_parse(const char *name, fedc_weighting *out) {
    for (int i = 0; name && i < 3; i++)
        if (!strcmp(name, weighting_names[i])) {
            *out = (fedc_weighting)i;
            return FEDC_OK;
        }
    return fedc_error(FEDC_EINVAL, "unknown client weighting \"%s\"; known: examples, dataset, uniform",
                      name ? name : "(null)");
}

/* ----------------------------------------------------------- objective -- */

fedc_status fedc__model_on_batch(const fedc_round *r, fedc_program *p, bool training, fedc_tree **w,
                                 fedc_model_outputs *o) {
    const fedc_model *m = r->model;
    int64_t b = r->alg->batch_size;
    *w = fedc_model_input_tree(m, p, "w", FEDC_LOCAL);
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, b));
    fedc_value y = fedc_input(p, "y", fedc_model_label_type(m, b));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &b));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    *o = (fedc_model_outputs){.loss = FEDC_NONE, .count = FEDC_NONE};
    fedc_status st = fedc_program_status(p);
    if (st) return st;
    fedc_value dropout = r->alg->dropout ? key : FEDC_NONE;
    return training ? fedc_model_apply_tree_training(m, p, *w, x, y, mask, dropout, o)
                    : fedc_model_apply_tree(m, p, *w, x, y, mask, dropout, o);
}

fedc_status fedc_round_objective(const fedc_round *r, const fedc_tree *extra, fedc_loss_term term, bool grad,
                                 fedc_program **out) {
    *out = NULL;
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w, *more = extra ? fedc_tree_input(p, NULL, extra, FEDC_LOCAL) : NULL;
    fedc_model_outputs o;
    st = fedc__model_on_batch(r, p, true, &w, &o);
    fedc_value loss = term && !st ? fedc_add(p, o.loss, term(p, r, w, more)) : o.loss;
    if (!st) st = fedc_program_output(p, "loss", loss);
    if (!st) st = fedc_program_output(p, "count", o.count);
    if (!st && o.updates) st = fedc_tree_output(p, "update", o.updates);
    if (!st && grad) {
        fedc_program *g;
        st = fedc_grad_tree(p, "loss", "w", &g);
        fedc_program_destroy(p);
        p = st ? NULL : g;
    }
    return fedc__fl_done(p, st, out);
}

/* ------------------------------------------------------ local training -- */

/* The fold's body, one local step:
 *     g = grad objective(w, batch, extras) [+ offset]; w, opt = client_opt(w, g, opt)
 * carrying w/..., opt/..., the counters, the extras and the offset (unchanged). */
static fedc_status local_step(const fedc_round *r, const fedc_program *objective, const fedc_tree *opt_like,
                              bool frozen, const fedc_tree *offset_like, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input_same(p, "w", fedc_tree_of_inputs(objective, "w"));
    fedc_tree *opt = fedc_tree_size(opt_like) ? fedc_tree_input(p, "opt", opt_like, FEDC_LOCAL) : fedc_tree_new(p);
    fedc__step s;
    fedc__step_inputs(p, &s);
    fedc_tree *args = fedc__step_batch(p, objective), *extras = fedc_tree_new(p);
    for (int i = 0; i < fedc_program_num_inputs(objective); i++) { /* the extras: not w/, x, y, mask, key */
        const char *name = fedc_program_input_name(objective, i);
        if (strncmp(name, "w/", 2) && !fedc_tree_has(args, name) && strcmp(name, "key"))
            fedc_tree_set(p, extras, name, fedc_input(p, name, fedc_value_type(objective, fedc_program_input(objective, i))));
    }
    fedc_tree_set_tree(p, args, "w", w);
    fedc_tree_set_tree(p, args, NULL, extras);
    fedc_tree_set(p, args, "key", fedc__fl_step_key(p, s.key, s.t));
    fedc_tree *res = fedc_tree_call(p, objective, args), *next_w = NULL, *next_opt = NULL;
    fedc_tree *grad = fedc_tree_subtree(p, res, "grad_w"), *offset = NULL;
    if (offset_like) { /* carried along, added to the gradient */
        offset = fedc_tree_input(p, "offset", offset_like, FEDC_LOCAL);
        grad = fedc_tree_add(p, grad, offset);
    }
    st = fedc_optimizer_step_tree(&r->alg->client_opt, p, FEDC_NONE, w, grad, opt, &next_w, &next_opt);
    if (!st && fedc_tree_has(res, "update")) /* the model's state: its new value, not the optimizer's step */
        st = fedc_tree_set_tree(p, next_w, NULL, fedc_tree_subtree(p, res, "update"));
    if (!st && offset) st = fedc_tree_output(p, "offset", offset);
    if (!st) st = fedc_tree_output(p, "w", next_w);
    if (!st) st = fedc_tree_output(p, "opt", frozen ? opt : next_opt);
    if (!st) st = fedc_tree_output(p, NULL, extras);
    if (!st) st = fedc__step_outputs(p, &s, fedc_tree_get(p, res, "loss"), fedc_tree_get(p, res, "count"));
    return fedc__fl_done(p, st, out);
}

/* Whether the step reads start/<param>, the model the client started from. */
static bool reads_start(const fedc_program *step) {
    for (int i = 0; i < fedc_program_num_inputs(step); i++)
        if (!strncmp(fedc_program_input_name(step, i), "start/", 6)) return true;
    return false;
}

/* The map's body: one client's local training from the model it is sent. */
static fedc_status client_update(fedc_round *r, const fedc_program *step, const fedc_local_training *how,
                                 fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input(p, "w", fedc_tree_subtree(r->p, r->server, "params"), FEDC_LOCAL);
    fedc_tree *data = fedc_tree_input(p, NULL, r->data, FEDC_LOCAL);
    fedc_tree *opt = how->opt_state ? fedc_tree_input(p, "opt", how->opt_state, FEDC_LOCAL)
                                    : fedc_optimizer_init_tree(&r->alg->client_opt, p, w);
    fedc_tree *carries = fedc_tree_new(p);
    fedc_tree_set_tree(p, carries, "w", w);
    fedc_tree_set_tree(p, carries, "opt", opt);
    if (how->extra) fedc_tree_set_tree(p, carries, NULL, fedc_tree_input(p, NULL, how->extra, FEDC_LOCAL));
    if (how->gradient_offset)
        fedc_tree_set_tree(p, carries, "offset", fedc_tree_input(p, "offset", how->gradient_offset, FEDC_LOCAL));
    if (reads_start(step)) fedc_tree_set_tree(p, carries, "start", w);
    fedc_tree *res = fedc__fold_batches(p, step, carries, data);
    st = fedc_tree_output(p, "delta", fedc_tree_sub(p, w, fedc_tree_subtree(p, res, "w")));
    if (!st) st = fedc__fold_outputs(p, res);
    if (!st) st = fedc_program_output(p, "steps", fedc_cast(p, fedc_tree_get(p, res, "t"), FEDC_F32));
    if (!st && !how->frozen_opt_state && fedc_tree_size(opt)) st = fedc_tree_output(p, "opt", fedc_tree_subtree(p, res, "opt"));
    if (!st && how->with_model) st = fedc_tree_output(p, "model", fedc_tree_subtree(p, res, "w"));
    return fedc__fl_done(p, st, out);
}

fedc_status fedc_round_local_training(fedc_round *r, const fedc_local_training *how, fedc_tree **out) {
    *out = NULL;
    fedc_local_training fedavg = {0};
    if (!how) how = &fedavg;
    fedc_program *objective = NULL, *step = NULL, *client = NULL;
    fedc_status st = how->objective ? FEDC_OK : fedc_round_objective(r, NULL, NULL, true, &objective);
    const fedc_program *obj = how->objective ? how->objective : objective;
    fedc_program *p = r->p, *scratch = NULL;
    fedc_tree *w = st ? NULL : fedc_tree_subtree(p, r->server, "params");
    if (!st) st = fedc_program_status(p);
    /* the optimizer state's leaves, to type the step's carries: built in a scratch
     * program, so that the round holds no unused constants of the model's size */
    if (!st) st = fedc_program_create(&scratch);
    const fedc_tree *opt_like = how->opt_state;
    if (!st && !opt_like) opt_like = fedc_optimizer_init_tree(&r->alg->client_opt, scratch, fedc_tree_input(scratch, "w", w, FEDC_LOCAL));
    if (!st) st = fedc_program_status(scratch);
    if (!st) st = local_step(r, obj, opt_like, how->frozen_opt_state, how->gradient_offset, &step);
    fedc_program_destroy(scratch);
    if (!st) st = client_update(r, step, how, &client);
    fedc_tree *args = st ? NULL : fedc_tree_new(p);
    if (args) {
        fedc_tree_set_tree(p, args, "w", how->start ? how->start : fedc_tree_broadcast(p, w));
        fedc_tree_set_tree(p, args, NULL, r->data);
        if (how->extra) fedc_tree_set_tree(p, args, NULL, how->extra);
        if (how->opt_state) fedc_tree_set_tree(p, args, "opt", how->opt_state);
        if (how->gradient_offset) fedc_tree_set_tree(p, args, "offset", how->gradient_offset);
        *out = fedc_tree_map(p, client, args);
    }
    if (!st) st = fedc_program_status(p);
    if (st) *out = NULL;
    fedc_program_destroy(objective);
    fedc_program_destroy(step);
    fedc_program_destroy(client);
    return st;
}

/* -------------------------------------------------------------- finish -- */

/* Outputs prefix/<leaf> for each of want's leaves from got's, of the same type. */
static fedc_status state_outputs(fedc_round *r, const char *prefix, const fedc_tree *want, const fedc_tree *got) {
    fedc_program *p = r->p;
    for (int i = 0; i < fedc_tree_size(want); i++) {
        const char *name = fedc_tree_name(want, i);
        fedc_value v = fedc_tree_get(p, got, name);
        if (v == FEDC_NONE) return fedc_program_status(p);
        fedc_type a = fedc_value_type(p, fedc_tree_value(want, i)), b = fedc_value_type(p, v);
        if (!fedc_type_equal(&a, &b)) {
            char sa[64], sb[64];
            return fedc_program_fail(p, FEDC_ETYPE, "%s: the new %s state \"%s\" is %s, but the state is %s",
                                     fedc_algorithm_name(r->alg), prefix, name, fedc_type_str(&b, sb, sizeof sb),
                                     fedc_type_str(&a, sa, sizeof sa)), FEDC_ETYPE;
        }
        char out[512];
        snprintf(out, sizeof out, "%s/%s", prefix, name);
        if (!strncmp(name, "aggregator/", 10) && fedc_program_find_output(p, out) != FEDC_NONE)
            continue; /* the aggregator's new state (fedc_round_aggregate made it) */
        fedc_status st = fedc_program_output(p, out, v);
        if (st) return st;
    }
    if (fedc_tree_size(got) != fedc_tree_size(want))
        return fedc_program_fail(p, FEDC_EINVAL, "%s: the new %s state has %d leaves, the state %d",
                                 fedc_algorithm_name(r->alg), prefix, fedc_tree_size(got), fedc_tree_size(want)), FEDC_EINVAL;
    return FEDC_OK;
}

/* The aggregator's server state (aggregator/<leaf>) is the aggregator's to update:
 * an algorithm that builds its new state afresh leaves it out, and one that copies
 * r->server keeps the old value, which fedc_round_aggregate's output replaces. A
 * round with an aggregation must have called it. */
static fedc_tree *with_aggregator_state(fedc_round *r, const fedc_tree *server) {
    fedc_program *p = r->p;
    if (fedc_aggregation_active(&r->alg->aggregation) && fedc_program_find_output(p, FEDC_AGGREGATE_DONE) == FEDC_NONE)
        return fedc_program_fail(p, FEDC_EINVAL, "%s aggregates its clients' updates itself, so the robust and DP "
                                 "aggregators (--robust-zero, --dp-clip, --compress) cannot apply to it; use an algorithm whose "
                                 "round calls fedc_round_aggregate (docs/privacy.md lists them)",
                                 fedc_algorithm_name(r->alg)), NULL;
    if (!fedc_tree_has(r->server, "aggregator")) return (fedc_tree *)server;
    fedc_tree *next = fedc_tree_copy(p, server), *old = fedc_tree_subtree(p, r->server, "aggregator");
    for (int i = 0; i < fedc_tree_size(old); i++) {
        char name[512];
        snprintf(name, sizeof name, "aggregator/%s", fedc_tree_name(old, i));
        if (!fedc_tree_has(next, name)) fedc_tree_set(p, next, name, fedc_tree_value(old, i));
    }
    return next;
}

fedc_status fedc_round_finish(fedc_round *r, const fedc_tree *server, const fedc_tree *client, fedc_value loss,
                              fedc_value examples) {
    fedc_program *p = r->p;
    fedc_status st = fedc_program_status(p);
    if (st) return st;
    if (!server) return fedc_program_fail(p, FEDC_EINVAL, "round_finish: no server state"), FEDC_EINVAL;
    server = with_aggregator_state(r, server);
    if ((st = fedc_program_status(p))) return st;
    if (!r->client != !client)
        return fedc_program_fail(p, FEDC_EINVAL, "%s: %s", fedc_algorithm_name(r->alg),
                                 r->client ? "the round returns no new client state"
                                           : "the round returns client state, but client_init declares none"), FEDC_EINVAL;
    char first[512]; /* the group state's first output, which fedc_round_group_state made */
    snprintf(first, sizeof first, "group/%s", r->group ? fedc_tree_name(r->group, 0) : "");
    if (r->group && fedc_program_find_output(p, first) == FEDC_NONE)
        return fedc_program_fail(p, FEDC_EINVAL, "%s: the round returns no new group state (fedc_round_group_state)",
                                 fedc_algorithm_name(r->alg)), FEDC_EINVAL;
    st = state_outputs(r, "server", r->server, server);
    if (!st && client) st = state_outputs(r, "client", r->client, client);
    if (!st) st = fedc_program_output(p, "train_loss", fedc_weighted_mean(p, loss, examples));
    if (!st) st = fedc_program_output(p, "examples", fedc_sum(p, examples));
    return st;
}

fedc_status fedc_round_group_state(fedc_round *r, const fedc_tree *group) {
    fedc_program *p = r->p;
    fedc_status st = fedc_program_status(p);
    if (st) return st;
    if (!r->group || !group)
        return fedc_program_fail(p, FEDC_EINVAL, "%s: %s", fedc_algorithm_name(r->alg),
                                 r->group ? "round_group_state: no group state"
                                          : "the round returns group state, but group_init declares none"), FEDC_EINVAL;
    return state_outputs(r, "group", r->group, group);
}
