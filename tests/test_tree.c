/* Value trees (fedc/tree.h): building and reading them, programs' inputs and
 * outputs as trees, calling, mapping and folding by name, the leaf-by-leaf and
 * federated operations, gradients and optimizer steps on trees, run and checked
 * against the same programs written on flat values. */
#include <math.h>
#include <string.h>

#include "fedc/fedc.h"
#include "harness.h"

static fedc_type f32v(int64_t n, fedc_placement pl) {
    fedc_type t = fedc_type_make(FEDC_F32, 1, (int64_t[]){n});
    t.placement = pl;
    return t;
}

static void test_build_and_read(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_tree *t = fedc_tree_new(p);
    fedc_value a = fedc_input(p, "a", f32v(2, FEDC_LOCAL)), b = fedc_input(p, "b", f32v(3, FEDC_LOCAL));
    CHECK_OK(fedc_tree_set(p, t, "w/dense/w", a));
    CHECK_OK(fedc_tree_set(p, t, "w/dense/b", b));
    CHECK_OK(fedc_tree_set(p, t, "count", b));
    CHECK_EQ_INT(fedc_tree_size(t), 3);
    CHECK_OK(fedc_tree_set(p, t, "count", a)); /* replaces */
    CHECK_EQ_INT(fedc_tree_size(t), 3);
    CHECK_EQ_INT(fedc_tree_get(p, t, "count"), a);
    fedc_tree *w = fedc_tree_subtree(p, t, "w");
    CHECK_EQ_INT(fedc_tree_size(w), 2);
    CHECK(!strcmp(fedc_tree_name(w, 0), "dense/w") && fedc_tree_value(w, 1) == b);
    CHECK(fedc_tree_has(t, "w") && fedc_tree_has(t, "w/dense") && !fedc_tree_has(t, "w/den") && !fedc_tree_has(t, "x"));
    fedc_tree *c = fedc_tree_copy(p, w);
    CHECK_OK(fedc_tree_set(p, c, "dense/w", b));
    CHECK_EQ_INT(fedc_tree_get(p, w, "dense/w"), a); /* the copy is its own */
    fedc_tree *u = fedc_tree_new(p);
    CHECK_OK(fedc_tree_set_tree(p, u, "outer", w));
    CHECK(!strcmp(fedc_tree_name(u, 1), "outer/dense/b"));
    CHECK_OK(fedc_program_status(p));
    /* a missing leaf is a sticky error naming it and what there is */
    CHECK_EQ_INT(fedc_tree_get(p, t, "w/dense/k"), FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_EINVAL, "no leaf \"w/dense/k\" (the tree has w/dense/w, w/dense/b, count)");
    CHECK(fedc_tree_add(p, w, w) == NULL); /* and later calls return NULL */
    fedc_program_destroy(p);

    CHECK_OK(fedc_program_create(&p));
    t = fedc_tree_new(p);
    CHECK_OK(fedc_tree_set(p, t, "a", fedc_input(p, "a", f32v(2, FEDC_LOCAL))));
    CHECK(fedc_tree_subtree(p, t, "b") == NULL);
    CHECK_ERR(fedc_program_status(p), FEDC_EINVAL, "nothing under \"b\"");
    fedc_program_destroy(p);

    /* combining trees of different leaves, or of another program, is refused */
    fedc_program *q;
    CHECK_OK(fedc_program_create(&p));
    CHECK_OK(fedc_program_create(&q));
    fedc_tree *x = fedc_tree_new(p), *y = fedc_tree_new(p), *z = fedc_tree_new(q);
    fedc_tree_set(p, x, "a", fedc_input(p, "a", f32v(2, FEDC_LOCAL)));
    fedc_tree_set(p, y, "b", fedc_input(p, "b", f32v(2, FEDC_LOCAL)));
    fedc_tree_set(q, z, "a", fedc_input(q, "a", f32v(2, FEDC_LOCAL)));
    CHECK(fedc_tree_add(q, z, x) == NULL);
    CHECK_ERR(fedc_program_status(q), FEDC_EINVAL, "belongs to another program");
    CHECK(fedc_tree_sub(p, x, y) == NULL);
    CHECK_ERR(fedc_program_status(p), FEDC_EINVAL, "the second tree has no leaf \"a\"");
    fedc_program_destroy(p);
    fedc_program_destroy(q);
}

/* Runs p (no clients) with inputs bound in order and returns output `name`. */
static const float *run1(fedc_executor **ex, const fedc_program *p, int clients, const char *const *names,
                         const float *const *data, int n, const char *name) {
    fedc_exec_options o = {.clients = clients};
    const void *out = NULL;
    if (fedc_executor_create(ex, p, &o)) return NULL;
    for (int i = 0; i < n; i++)
        if (fedc_executor_bind(*ex, names[i], data[i])) return NULL;
    if (fedc_executor_run(*ex) || fedc_executor_output(*ex, name, &out, NULL)) return NULL;
    return out;
}

/* A body with its outputs in an order unlike its inputs': the fold pairs them by
 * name. w += x * s; t += 1; ys = the step's w. */
static void test_fold_and_map_by_name(void) {
    fedc_program *body, *p;
    CHECK_OK(fedc_program_create(&body));
    fedc_value x = fedc_input(body, "x", f32v(2, FEDC_LOCAL));
    fedc_value t = fedc_input(body, "t", fedc_type_scalar(FEDC_F32));
    fedc_value w = fedc_input(body, "w/v", f32v(2, FEDC_LOCAL));
    fedc_value nw = fedc_add(body, w, fedc_mul(body, x, t));
    CHECK_OK(fedc_program_output(body, "seen", nw));
    CHECK_OK(fedc_program_output(body, "t", fedc_add(body, t, fedc_scalar(body, FEDC_F32, 1))));
    CHECK_OK(fedc_program_output(body, "w/v", nw));

    CHECK_OK(fedc_program_create(&p));
    fedc_type xs_t = fedc_type_make(FEDC_F32, 2, (int64_t[]){3, 2});
    fedc_tree *carries = fedc_tree_new(p), *xs = fedc_tree_new(p);
    fedc_tree_set(p, carries, "w/v", fedc_input(p, "w0", f32v(2, FEDC_LOCAL)));
    fedc_tree_set(p, carries, "t", fedc_scalar(p, FEDC_F32, 1));
    fedc_tree_set(p, xs, "x", fedc_input(p, "xs", xs_t));
    fedc_tree *res = fedc_tree_fold(p, body, carries, xs, fedc_scalar(p, FEDC_I32, 3));
    CHECK_OK(fedc_tree_output(p, "out", res));
    CHECK_OK(fedc_program_status(p));
    /* w0 = [1, 2], xs = [[1, 1], [2, 2], [3, 3]], t = 1, 2, 3: w = w0 + 1 + 4 + 9 */
    float w0[2] = {1, 2}, xsd[6] = {1, 1, 2, 2, 3, 3};
    fedc_executor *ex = NULL;
    const float *v = run1(&ex, p, 0, (const char *[]){"w0", "xs"}, (const float *[]){w0, xsd}, 2, "out/w/v");
    CHECK_MSG(v, "%s", fedc_errmsg());
    if (v) CHECK(v[0] == 15 && v[1] == 16);
    const void *seen = NULL, *tt = NULL;
    CHECK_OK(fedc_executor_output(ex, "out/seen", &seen, NULL));
    CHECK_OK(fedc_executor_output(ex, "out/t", &tt, NULL));
    if (seen) CHECK(((const float *)seen)[2] == 6 && ((const float *)seen)[4] == 15);
    if (tt) CHECK(*(const float *)tt == 4);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);

    /* a carry without its output, and a body input with no argument, are named */
    CHECK_OK(fedc_program_create(&p));
    carries = fedc_tree_new(p), xs = fedc_tree_new(p);
    fedc_tree_set(p, carries, "t", fedc_scalar(p, FEDC_F32, 1));
    fedc_tree_set(p, xs, "x", fedc_input(p, "xs", xs_t));
    CHECK(fedc_tree_fold(p, body, carries, xs, fedc_scalar(p, FEDC_I32, 3)) == NULL);
    CHECK_ERR(fedc_program_status(p), FEDC_EINVAL, "no argument for the input \"w/v\"");
    fedc_program_destroy(p);

    /* map by name: mean over 3 clients of (w + x * t) with w broadcast */
    CHECK_OK(fedc_program_create(&p));
    fedc_tree *server = fedc_tree_new(p), *args = fedc_tree_new(p);
    fedc_tree_set(p, server, "w/v", fedc_input(p, "w", f32v(2, FEDC_SERVER)));
    fedc_tree_set_tree(p, args, "", fedc_tree_broadcast(p, server));
    fedc_tree_set(p, args, "x", fedc_input(p, "x", f32v(2, FEDC_CLIENTS)));
    fedc_type tc = fedc_type_scalar(FEDC_F32);
    tc.placement = FEDC_CLIENTS;
    fedc_tree_set(p, args, "t", fedc_input(p, "t", tc));
    fedc_tree *out = fedc_tree_map(p, body, args);
    fedc_tree *mean = fedc_tree_mean(p, fedc_tree_subtree(p, out, "w"));
    fedc_tree *wm = fedc_tree_weighted_mean(p, fedc_tree_subtree(p, out, "w"), fedc_tree_get(p, args, "t"));
    CHECK_OK(fedc_tree_output(p, "mean", mean));
    CHECK_OK(fedc_tree_output(p, "wmean", wm));
    CHECK_OK(fedc_program_output(p, "norm", fedc_tree_sq_norm(p, server)));
    CHECK_OK(fedc_program_status(p));
    float ws[2] = {1, 2}, xc[6] = {1, 0, 0, 1, 2, 2}, tcs[3] = {1, 2, 3};
    v = run1(&ex, p, 3, (const char *[]){"w", "x", "t"}, (const float *[]){ws, xc, tcs}, 3, "mean/v");
    CHECK_MSG(v, "%s", fedc_errmsg());
    /* clients: [2, 2], [1, 4], [7, 8]; mean [10/3, 14/3]; weighted (1, 2, 3): [25/6, 34/6] */
    if (v) {
        CHECK_NEAR(v[0], 10.0 / 3, 1e-6);
        CHECK_NEAR(v[1], 14.0 / 3, 1e-6);
    }
    const void *wv = NULL, *nv = NULL;
    CHECK_OK(fedc_executor_output(ex, "wmean/v", &wv, NULL));
    CHECK_OK(fedc_executor_output(ex, "norm", &nv, NULL));
    if (wv) {
        CHECK_NEAR(((const float *)wv)[0], 25.0 / 6, 1e-6);
        CHECK_NEAR(((const float *)wv)[1], 34.0 / 6, 1e-6);
    }
    if (nv) CHECK(*(const float *)nv == 5);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    fedc_program_destroy(body);
}

/* grad_tree and an Adam step on trees give the bits of fedc_grad and
 * fedc_optimizer_step on the same values. */
static void test_grad_and_optimizer(void) {
    fedc_program *loss, *g;
    CHECK_OK(fedc_program_create(&loss));
    fedc_value a = fedc_input(loss, "w/a", f32v(3, FEDC_LOCAL)), b = fedc_input(loss, "w/b", f32v(2, FEDC_LOCAL));
    fedc_value x = fedc_input(loss, "x", f32v(3, FEDC_LOCAL));
    fedc_value l = fedc_add(loss, fedc_reduce_sum(loss, fedc_square(loss, fedc_mul(loss, a, x)), NULL, -1, false),
                            fedc_reduce_sum(loss, fedc_exp(loss, b), NULL, -1, false));
    CHECK_OK(fedc_program_output(loss, "loss", l));
    CHECK_OK(fedc_grad_tree(loss, "loss", "w", &g));
    CHECK_ERR(fedc_grad_tree(loss, "loss", "v", &(fedc_program *){NULL}), FEDC_ENOTFOUND, "no input under \"v\"");

    fedc_optimizer o = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.1);
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_tree *w = fedc_tree_input_same(p, "w", fedc_tree_of_inputs(g, "w"));
    fedc_tree *args = fedc_tree_new(p);
    fedc_tree_set_tree(p, args, "w", w);
    fedc_tree_set(p, args, "x", fedc_input(p, "x", f32v(3, FEDC_LOCAL)));
    fedc_tree *res = fedc_tree_call(p, g, args);
    fedc_tree *state = fedc_optimizer_init_tree(&o, p, w), *nw, *ns;
    CHECK_EQ_INT(fedc_tree_size(state), 5); /* mu/a, mu/b, nu/a, nu/b, count */
    CHECK(state && !strcmp(fedc_tree_name(state, 2), "nu/a") && !strcmp(fedc_tree_name(state, 4), "count"));
    CHECK_OK(fedc_optimizer_step_tree(&o, p, FEDC_NONE, w, fedc_tree_subtree(p, res, "grad_w"), state, &nw, &ns));
    CHECK_OK(fedc_optimizer_step_tree(&o, p, FEDC_NONE, nw, fedc_tree_subtree(p, res, "grad_w"), ns, &nw, &ns));
    CHECK_OK(fedc_tree_output(p, "new", nw));
    CHECK_OK(fedc_tree_output(p, "state", ns));
    CHECK_OK(fedc_program_status(p));

    /* the same two steps on flat values */
    fedc_program *q;
    CHECK_OK(fedc_program_create(&q));
    fedc_value wq[2] = {fedc_input(q, "w/a", f32v(3, FEDC_LOCAL)), fedc_input(q, "w/b", f32v(2, FEDC_LOCAL))};
    fedc_value xq = fedc_input(q, "x", f32v(3, FEDC_LOCAL)), rq[3], s[5], ns1[5], ns2[5], w1[2], w2[2];
    CHECK_OK(fedc_program_inline(q, g, (fedc_value[]){wq[0], wq[1], xq}, rq));
    for (int k = 0; k < 4; k++) s[k] = fedc_full(q, fedc_value_type(q, wq[k % 2]), 0);
    s[4] = fedc_scalar(q, FEDC_F32, 0);
    CHECK_OK(fedc_optimizer_step(&o, q, FEDC_NONE, 2, wq, rq + 1, s, w1, ns1));
    CHECK_OK(fedc_optimizer_step(&o, q, FEDC_NONE, 2, w1, rq + 1, ns1, w2, ns2));
    CHECK_OK(fedc_program_output(q, "a", w2[0]));
    CHECK_OK(fedc_program_output(q, "b", w2[1]));

    float av[3] = {0.5f, -1, 2}, bv[2] = {0.25f, -0.75f}, xv[3] = {1, 2, -3};
    fedc_executor *e1, *e2;
    const float *t1 = run1(&e1, p, 0, (const char *[]){"w/a", "w/b", "x"}, (const float *[]){av, bv, xv}, 3, "new/b");
    const float *t2 = run1(&e2, q, 0, (const char *[]){"w/a", "w/b", "x"}, (const float *[]){av, bv, xv}, 3, "b");
    CHECK_MSG(t1 && t2, "%s", fedc_errmsg());
    if (t1 && t2) CHECK(!memcmp(t1, t2, 2 * sizeof *t1));
    const void *a1 = NULL, *a2 = NULL, *count = NULL;
    CHECK_OK(fedc_executor_output(e1, "new/a", &a1, NULL));
    CHECK_OK(fedc_executor_output(e2, "a", &a2, NULL));
    CHECK_OK(fedc_executor_output(e1, "state/count", &count, NULL));
    if (a1 && a2) CHECK(!memcmp(a1, a2, 3 * sizeof(float)));
    if (count) CHECK(*(const float *)count == 2);
    if (t1) CHECK(t1[0] != bv[0]); /* it moved */
    fedc_executor_destroy(e1);
    fedc_executor_destroy(e2);
    fedc_program_destroy(p);
    fedc_program_destroy(q);
    fedc_program_destroy(g);
    fedc_program_destroy(loss);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"build and read", test_build_and_read},
        {"fold and map by name", test_fold_and_map_by_name},
        {"grad and optimizer on trees", test_grad_and_optimizer},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
