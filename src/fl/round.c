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

/* num_examples: the client's dataset size; num_clients: the population's size (the
 * training data's clients, the same for every client: FedDyn's m). */
const char *const fedc__round_meta_names[] = {"num_examples", "num_clients", NULL};

fedc_value fedc_round_meta(fedc_round *r, const char *name) {
    bool known = false;
    for (int i = 0; fedc__round_meta_names[i]; i++) known |= name && !strcmp(name, fedc__round_meta_names[i]);
    if (!known)
        return fedc_program_fail(r->p, FEDC_EINVAL, "round_meta: no client metadata \"%s\" (there are: num_examples, num_clients)",
                                 name ? name : "(null)");
    char input[64];
    snprintf(input, sizeof input, "meta/%s", name);
    fedc_value v = fedc_program_find_input(r->p, input);
    return v != FEDC_NONE ? v : fedc_input(r->p, input, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
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

fedc_status fedc_round_objective(const fedc_round *r, const fedc_tree *extra, fedc_loss_term term, bool grad,
                                 fedc_program **out) {
    *out = NULL;
    const fedc_model *m = r->model;
    int64_t b = r->alg->batch_size;
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_model_input_tree(m, p, "w", FEDC_LOCAL);
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, b));
    fedc_value y = fedc_input(p, "y", fedc_model_label_type(m, b));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &b));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_tree *more = extra ? fedc_tree_input(p, NULL, extra, FEDC_LOCAL) : NULL;
    fedc_model_outputs o = {.loss = FEDC_NONE, .count = FEDC_NONE};
    st = fedc_program_status(p);
    if (!st) st = fedc_model_apply_tree(m, p, w, x, y, mask, r->alg->dropout ? key : FEDC_NONE, &o);
    fedc_value loss = term && !st ? fedc_add(p, o.loss, term(p, r, w, more)) : o.loss;
    if (!st) st = fedc_program_output(p, "loss", loss);
    if (!st) st = fedc_program_output(p, "count", o.count);
    if (!st && grad) {
        fedc_program *g;
        st = fedc_grad_tree(p, "loss", "w", &g);
        fedc_program_destroy(p);
        p = st ? NULL : g;
    }
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

/* ------------------------------------------------------ local training -- */

/* The fold's body, one local step:
 *     g = grad objective(w, batch, extras); w, opt = client_opt(w, g, opt)
 * carrying w/..., opt/..., loss_sum, count, t, key and the extras (unchanged). */
static fedc_status local_step(const fedc_round *r, const fedc_program *objective, const fedc_tree *opt_like,
                              bool frozen, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input_same(p, "w", fedc_tree_of_inputs(objective, "w"));
    fedc_tree *opt = fedc_tree_size(opt_like) ? fedc_tree_input(p, "opt", opt_like, FEDC_LOCAL) : fedc_tree_new(p);
    fedc_value loss_sum = fedc_input(p, "loss_sum", fedc_type_scalar(FEDC_F32));
    fedc_value count = fedc_input(p, "count", fedc_type_scalar(FEDC_F32));
    fedc_value t = fedc_input(p, "t", fedc_type_scalar(FEDC_I32));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_tree *args = fedc_tree_new(p);
    fedc_tree_set_tree(p, args, "w", w);
    for (int i = 0; i < fedc_program_num_inputs(objective); i++) { /* x, y, mask and the extras */
        const char *name = fedc_program_input_name(objective, i);
        if (strncmp(name, "w/", 2) && strcmp(name, "key"))
            fedc_tree_set(p, args, name, fedc_input(p, name, fedc_value_type(objective, fedc_program_input(objective, i))));
    }
    fedc_tree_set(p, args, "key", fedc__fl_step_key(p, key, t));
    fedc_tree *res = fedc_tree_call(p, objective, args), *next_w = NULL, *next_opt = NULL;
    st = fedc_optimizer_step_tree(&r->alg->client_opt, p, FEDC_NONE, w, fedc_tree_subtree(p, res, "grad_w"), opt,
                                  &next_w, &next_opt);
    fedc_value l = fedc_tree_get(p, res, "loss"), n = fedc_tree_get(p, res, "count");
    if (!st) st = fedc_tree_output(p, "w", next_w);
    if (!st) st = fedc_tree_output(p, "opt", frozen ? opt : next_opt);
    if (!st) st = fedc_program_output(p, "loss_sum", fedc_add(p, loss_sum, fedc_mul(p, l, n)));
    if (!st) st = fedc_program_output(p, "count", fedc_add(p, count, n));
    if (!st) st = fedc_program_output(p, "t", fedc_add(p, t, fedc_scalar(p, FEDC_I32, 1)));
    if (!st) st = fedc_program_output(p, "key", key);
    for (int i = 0; !st && i < fedc_tree_size(args); i++) { /* the extras ride along */
        const char *name = fedc_tree_name(args, i);
        if (strncmp(name, "w/", 2) && strcmp(name, "key") && strcmp(name, "x") && strcmp(name, "y") && strcmp(name, "mask"))
            st = fedc_program_output(p, name, fedc_tree_value(args, i));
    }
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

/* The map's body: one client's local training from the model it is sent. */
static fedc_status client_update(fedc_round *r, const fedc_program *step, const fedc_local_training *how,
                                 fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input(p, "w", fedc_tree_subtree(r->p, r->server, "params"), FEDC_LOCAL);
    fedc_tree *data = fedc_tree_input(p, NULL, r->data, FEDC_LOCAL);
    fedc_tree *extra = how->extra ? fedc_tree_input(p, NULL, how->extra, FEDC_LOCAL) : NULL;
    fedc_tree *opt = how->opt_state ? fedc_tree_input(p, "opt", how->opt_state, FEDC_LOCAL)
                                    : fedc_optimizer_init_tree(&r->alg->client_opt, p, w);
    fedc_tree *carries = fedc_tree_new(p), *xs = fedc_tree_new(p);
    fedc_tree_set_tree(p, carries, "w", w);
    fedc_tree_set_tree(p, carries, "opt", opt);
    fedc_tree_set(p, carries, "loss_sum", fedc_scalar(p, FEDC_F32, 0));
    fedc_tree_set(p, carries, "count", fedc_scalar(p, FEDC_F32, 0));
    fedc_tree_set(p, carries, "t", fedc_scalar(p, FEDC_I32, 0));
    fedc_tree_set(p, carries, "key", fedc_tree_get(p, data, "key"));
    if (extra) fedc_tree_set_tree(p, carries, NULL, extra);
    if (fedc_tree_has(fedc_tree_of_inputs(step, NULL), "start")) fedc_tree_set_tree(p, carries, "start", w);
    const char *seq[3] = {"x", "y", "mask"};
    for (int i = 0; i < 3; i++) fedc_tree_set(p, xs, seq[i], fedc_tree_get(p, data, seq[i]));
    fedc_tree *res = fedc_tree_fold(p, step, carries, xs, fedc_tree_get(p, data, "steps"));
    fedc_value count = fedc_tree_get(p, res, "count");
    fedc_value mean = fedc_div(p, fedc_tree_get(p, res, "loss_sum"), fedc_maximum(p, count, fedc_scalar(p, FEDC_F32, 1)));
    st = fedc_tree_output(p, "delta", fedc_tree_sub(p, w, fedc_tree_subtree(p, res, "w")));
    if (!st) st = fedc_program_output(p, "examples", count);
    if (!st) st = fedc_program_output(p, "loss", mean);
    if (!st && !how->frozen_opt_state && fedc_tree_size(opt)) st = fedc_tree_output(p, "opt", fedc_tree_subtree(p, res, "opt"));
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
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
    if (!st) st = local_step(r, obj, opt_like, how->frozen_opt_state, &step);
    fedc_program_destroy(scratch);
    if (!st) st = client_update(r, step, how, &client);
    fedc_tree *args = st ? NULL : fedc_tree_new(p);
    if (args) {
        fedc_tree_set_tree(p, args, "w", fedc_tree_broadcast(p, w));
        fedc_tree_set_tree(p, args, NULL, r->data);
        if (how->extra) fedc_tree_set_tree(p, args, NULL, how->extra);
        if (how->opt_state) fedc_tree_set_tree(p, args, "opt", how->opt_state);
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
        fedc_status st = fedc_program_output(p, out, v);
        if (st) return st;
    }
    if (fedc_tree_size(got) != fedc_tree_size(want))
        return fedc_program_fail(p, FEDC_EINVAL, "%s: the new %s state has %d leaves, the state %d",
                                 fedc_algorithm_name(r->alg), prefix, fedc_tree_size(got), fedc_tree_size(want)), FEDC_EINVAL;
    return FEDC_OK;
}

fedc_status fedc_round_finish(fedc_round *r, const fedc_tree *server, const fedc_tree *client, fedc_value loss,
                              fedc_value examples) {
    fedc_program *p = r->p;
    fedc_status st = fedc_program_status(p);
    if (st) return st;
    if (!server) return fedc_program_fail(p, FEDC_EINVAL, "round_finish: no server state"), FEDC_EINVAL;
    if (!r->client != !client)
        return fedc_program_fail(p, FEDC_EINVAL, "%s: %s", fedc_algorithm_name(r->alg),
                                 r->client ? "the round returns no new client state"
                                           : "the round returns client state, but client_init declares none"), FEDC_EINVAL;
    st = state_outputs(r, "server", r->server, server);
    if (!st && client) st = state_outputs(r, "client", r->client, client);
    if (!st) st = fedc_program_output(p, "train_loss", fedc_weighted_mean(p, loss, examples));
    if (!st) st = fedc_program_output(p, "examples", fedc_sum(p, examples));
    return st;
}
