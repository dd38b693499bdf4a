/* The placement hierarchy's derivatives (issue 36): the one-group program against
 * the flat one (values and derivatives, bit for bit, also as a map at the groups),
 * and reverse and forward derivatives against known answers and finite
 * differences, to second order. Its rules and run time are tests/test_hierarchy.c. */
#include <math.h>
#include <string.h>

#include "fedc/ad.h"
#include "hierarchy_case.h"

/* ------------------------------------------------------ one group = flat -- */

/* A FedAvg-like round, flat (broadcast, map, mean) or with a level between
 * (broadcast_down twice, map, mean_up twice). */
static fedc_program *round_forward(bool hierarchical) {
    fedc_program *p, *b;
    if (fedc_program_create(&p) || fedc_program_create(&b)) return NULL;
    fedc_value w = fedc_input(p, "w", VEC(FEDC_F32, FEDC_SERVER, 4));
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F32, FEDC_CLIENTS, 4));
    fedc_value bw = fedc_input(b, "w", VEC(FEDC_F32, FEDC_LOCAL, 4)), bx = fedc_input(b, "x", VEC(FEDC_F32, FEDC_LOCAL, 4));
    fedc_value e = fedc_sub(b, fedc_tanh(b, fedc_mul(b, bw, bx)), bx);
    fedc_program_output(b, "l", fedc_reduce_sum(b, fedc_mul(b, e, e), NULL, -1, false));
    fedc_value wc = hierarchical ? fedc_broadcast_down(p, fedc_broadcast_down(p, w)) : fedc_broadcast(p, w), l;
    fedc_map(p, b, (fedc_value[]){wc, x}, 2, &l);
    fedc_value loss = hierarchical ? fedc_mean_up(p, fedc_mean_up(p, l)) : fedc_mean(p, l);
    fedc_program_output(p, "loss", loss);
    fedc_program_destroy(b);
    return p;
}

/* p's gradient in w (p is destroyed). */
static fedc_program *grad_of(fedc_program *p) {
    fedc_program *g = NULL;
    if (p && fedc_grad(p, "loss", (const char *[]){"w"}, 1, &g)) g = NULL;
    fedc_program_destroy(p);
    return g;
}

static fedc_program *round_program(bool hierarchical) { return grad_of(round_forward(hierarchical)); }

static void test_one_group_is_flat_bit_for_bit(void) {
    enum { N = 37 };
    float w[4] = {0.5f, -1.25f, 0.3f, 2.0f}, x[N * 4];
    fedc_test_seed(36);
    for (int i = 0; i < N * 4; i++) x[i] = (float)((i * 7919 % 1000) / 500.0 - 1.0) * 1.7f;
    fedc_program *flat = round_program(false), *hier = round_program(true);
    CHECK(flat && hier);
    if (!flat || !hier) return fedc_program_destroy(flat), fedc_program_destroy(hier);
    const char *names[] = {"w", "x"};
    const void *data[] = {w, x};
    const char *outs[] = {"loss", "grad_w"};
    float lf = 0, gf[4] = {0}, lh = 0, gh[4] = {0};
    run_spec r = {N, 0, 3, NULL, 2, names, data};
    CHECK_OK(run(flat, &r, 2, outs, (void *[]){&lf, gf}, 16));
    CHECK_OK(run(hier, &r, 2, outs, (void *[]){&lh, gh}, 16));
    CHECK(lf != 0 && gf[0] != 0);
    CHECK_MSG(!memcmp(&lf, &lh, sizeof lf), "loss %.9g (flat) vs %.9g (one group)", lf, lh);
    CHECK_MSG(!memcmp(gf, gh, sizeof gf), "grad_w[0] %.9g (flat) vs %.9g (one group)", gf[0], gh[0]);
    /* one group given explicitly is the same */
    r.groups = 1, r.sizes = (int[]){N};
    CHECK_OK(run(hier, &r, 2, outs, (void *[]){&lh, gh}, 16));
    CHECK(!memcmp(&lf, &lh, sizeof lf) && !memcmp(gf, gh, sizeof gf));
    fedc_program_destroy(flat);
    fedc_program_destroy(hier);
}

/* A flat round run as the body of the one group is the flat round, bit for bit,
 * value and gradient. */
static void test_flat_round_in_one_group(void) {
    fedc_program *body = round_forward(false), *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value w = fedc_input(p, "w", VEC(FEDC_F32, FEDC_SERVER, 4));
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F32, FEDC_CLIENTS, 4)), l;
    CHECK_OK(fedc_map_groups(p, body, (fedc_value[]){fedc_broadcast_down(p, w), x}, 2, &l));
    fedc_program_output(p, "loss", fedc_mean_up(p, l));
    fedc_program *gf = grad_of(body), *gh = grad_of(p);
    CHECK(gf && gh);
    enum { N = 29 };
    float wv[4] = {0.25f, -0.5f, 1.5f, 0.75f}, xv[N * 4], lf = 0, lh = 0, df[4], dh[4];
    for (int i = 0; i < N * 4; i++) xv[i] = (float)((i * 6007 % 997) / 498.0 - 1.0);
    run_spec r = {N, 0, 2, NULL, 2, (const char *[]){"w", "x"}, (const void *[]){wv, xv}};
    const char *outs[] = {"loss", "grad_w"};
    if (gf && gh) {
        CHECK_OK(run(gf, &r, 2, outs, (void *[]){&lf, df}, sizeof df));
        CHECK_OK(run(gh, &r, 2, outs, (void *[]){&lh, dh}, sizeof dh));
        CHECK(lf > 0 && !memcmp(&lf, &lh, sizeof lf) && !memcmp(df, dh, sizeof df));
    }
    fedc_program_destroy(gf);
    fedc_program_destroy(gh);
}

/* ------------------------------------------------------------ derivatives -- */

static void test_reverse_known_answer(void) {
    /* loss = sum_up(sum_up(<broadcast_down^2(w), x>)): d loss / d w = sum_i x_i;
     * loss2 = sum over groups of mean_up: d / d x_i = 1 / |group(i)| */
    fedc_program *p, *g = NULL;
    CHECK_OK(fedc_program_create(&p));
    fedc_value w = fedc_input(p, "w", VEC(FEDC_F64, FEDC_SERVER, 2));
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F64, FEDC_CLIENTS, 2));
    fedc_value d = fedc_reduce_sum(p, fedc_mul(p, fedc_broadcast_down(p, fedc_broadcast_down(p, w)), x), NULL, -1, false);
    fedc_value loss = fedc_add(p, fedc_sum_up(p, fedc_sum_up(p, d)),
                               fedc_reduce_sum(p, fedc_sum_up(p, fedc_mean_up(p, x)), NULL, -1, false));
    fedc_program_output(p, "loss", loss);
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"w", "x"}, 2, &g));
    double wv[2] = {0.5, 2}, xv[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, gw[2], gx[10];
    run_spec r = {5, 2, 2, (int[]){1, 4}, 2, (const char *[]){"w", "x"}, (const void *[]){wv, xv}};
    if (g) CHECK_OK(run(g, &r, 2, (const char *[]){"grad_w", "grad_x"}, (void *[]){gw, gx}, sizeof gx));
    CHECK_NEAR(gw[0], 25, 0);
    CHECK_NEAR(gw[1], 30, 0);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 2; j++) CHECK_NEAR(gx[2 * i + j], wv[j] + (i == 0 ? 1.0 : 0.25), 1e-15);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

/* The worked program's derivatives in w, a and x against central differences,
 * reverse (grad) and forward (jvp along a direction). */
static void test_derivatives_match_finite_differences(void) {
    fedc_program *p = worked_program(FEDC_F64), *g = NULL, *j = NULL;
    CHECK(p && !fedc_program_status(p));
    if (!p) return;
    const char *wrt[] = {"w", "a", "x"};
    CHECK_OK(fedc_grad(p, "loss", wrt, 3, &g));
    CHECK_OK(fedc_jvp(p, wrt, 3, &j));
    if (!g || !j) return fedc_program_destroy(p), fedc_program_destroy(g), fedc_program_destroy(j);
    double gw[2], ga[3], gx[14];
    const char *names[] = {"w", "a", "x"};
    const void *data[] = {W, A, X};
    run_spec r = {7, 3, 2, (int[]){3, 1, 3}, 3, names, data};
    CHECK_OK(run(g, &r, 3, (const char *[]){"grad_w", "grad_a", "grad_x"}, (void *[]){gw, ga, gx}, sizeof gx));
    double h = 1e-6, per[6];
    double *all[3] = {gw, ga, gx};
    const double *at[3] = {W, A, X};
    int len[3] = {2, 3, 14};
    double dot = 0, tw[2] = {0.3, -0.7}, ta[3] = {1, 0.5, -2}, tx[14];
    double *tangent[3] = {tw, ta, tx};
    for (int i = 0; i < 14; i++) tx[i] = (i % 3 - 1) * 0.25;
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < len[k]; i++) {
            double up[14], down[14], lu = 0, ld = 0;
            const double *args[3] = {W, A, X};
            memcpy(up, at[k], (size_t)len[k] * sizeof *up);
            memcpy(down, at[k], (size_t)len[k] * sizeof *down);
            up[i] += h, down[i] -= h;
            args[k] = up;
            CHECK_OK(run_worked(p, 1, args[0], args[1], args[2], &lu, per));
            args[k] = down;
            CHECK_OK(run_worked(p, 1, args[0], args[1], args[2], &ld, per));
            double fd = (lu - ld) / (2 * h);
            CHECK_MSG(fabs(all[k][i] - fd) < 1e-7 * (1 + fabs(fd)), "d loss / d %s[%d]: %.12g, differences %.12g",
                      wrt[k], i, all[k][i], fd);
            dot += all[k][i] * tangent[k][i];
        }
    }
    const char *jn[] = {"w", "a", "x", "tangent_w", "tangent_a", "tangent_x"};
    const void *jd[] = {W, A, X, tw, ta, tx};
    run_spec rj = {7, 3, 2, (int[]){3, 1, 3}, 6, jn, jd};
    double tl = 0;
    CHECK_OK(run(j, &rj, 1, (const char *[]){"tangent_loss"}, (void *[]){&tl}, sizeof tl));
    CHECK_MSG(fabs(tl - dot) < 1e-12 * (1 + fabs(dot)), "forward %.15g vs reverse %.15g", tl, dot);
    CHECK(fabs(dot) > 1e-3);
    fedc_program_destroy(g);
    fedc_program_destroy(j);
    fedc_program_destroy(p);
}

/* A second order: the Hessian-vector product in w (forward mode over the
 * gradient) against central differences of the gradient. */
static void test_second_order(void) {
    fedc_program *p = worked_program(FEDC_F64), *g = NULL, *h = NULL;
    if (!p) return;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"w"}, 1, &g));
    if (g) CHECK_OK(fedc_jvp(g, (const char *[]){"w"}, 1, &h));
    if (!g || !h) return fedc_program_destroy(p), fedc_program_destroy(g), fedc_program_destroy(h);
    double t[2] = {0.6, -0.8}, hv[2], gu[2], gd[2], wu[2], wd[2], eps = 1e-6;
    run_spec r = {7, 3, 2, (int[]){3, 1, 3}, 4, (const char *[]){"w", "a", "x", "tangent_w"},
                  (const void *[]){W, A, X, t}};
    CHECK_OK(run(h, &r, 1, (const char *[]){"tangent_grad_w"}, (void *[]){hv}, sizeof hv));
    for (int j = 0; j < 2; j++) wu[j] = W[j] + eps * t[j], wd[j] = W[j] - eps * t[j];
    r.nin = 3;
    r.data = (const void *[]){wu, A, X};
    CHECK_OK(run(g, &r, 1, (const char *[]){"grad_w"}, (void *[]){gu}, sizeof gu));
    r.data = (const void *[]){wd, A, X};
    CHECK_OK(run(g, &r, 1, (const char *[]){"grad_w"}, (void *[]){gd}, sizeof gd));
    for (int j = 0; j < 2; j++) {
        double fd = (gu[j] - gd[j]) / (2 * eps);
        CHECK_MSG(fabs(hv[j] - fd) < 1e-6 * (1 + fabs(fd)) && fabs(fd) > 1e-4, "Hv[%d] %.12g, differences %.12g", j,
                  hv[j], fd);
    }
    fedc_program_destroy(h);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

/* weighted_mean_up's derivative in its weights, at both levels: loss =
 * <weighted_mean_up(weighted_mean_up(x, v), u), c> with v @clients and u @groups
 * computed from inputs, against central differences. */
static fedc_program *weights_program(void) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value x = fedc_input(p, "x", VEC(FEDC_F64, FEDC_CLIENTS, 2));
    fedc_value v = fedc_input(p, "v", SCALAR(FEDC_F64, FEDC_CLIENTS));
    fedc_value u = fedc_input(p, "u", SCALAR(FEDC_F64, FEDC_GROUPS));
    fedc_value g = fedc_weighted_mean_up(p, x, fedc_exp(p, v));
    fedc_value top = fedc_weighted_mean_up(p, fedc_tanh(p, g), fedc_square(p, u));
    fedc_value c = fedc_full(p, VEC(FEDC_F64, FEDC_LOCAL, 2), 0);
    c = fedc_add(p, c, fedc_scalar(p, FEDC_F64, 1.5));
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_mul(p, top, fedc_mul(p, top, c)), NULL, -1, false));
    return p;
}

static void test_weights_match_finite_differences(void) {
    fedc_program *p = weights_program(), *g = NULL;
    CHECK(p && !fedc_program_status(p));
    if (!p) return;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"v", "u"}, 2, &g));
    double v[5] = {0.1, -0.3, 0.8, 0.2, -0.5}, u[2] = {0.9, -1.3}, gv[5], gu[2];
    const char *names[] = {"x", "v", "u"};
    run_spec r = {5, 2, 1, (int[]){2, 3}, 3, names, (const void *[]){X, v, u}};
    if (g) CHECK_OK(run(g, &r, 2, (const char *[]){"grad_v", "grad_u"}, (void *[]){gv, gu}, sizeof gv));
    double h = 1e-6;
    for (int k = 0; k < 7; k++) {
        double *at = k < 5 ? &v[k] : &u[k - 5], keep = *at, lu = 0, ld = 0;
        *at = keep + h;
        CHECK_OK(run(p, &r, 1, (const char *[]){"loss"}, (void *[]){&lu}, sizeof lu));
        *at = keep - h;
        CHECK_OK(run(p, &r, 1, (const char *[]){"loss"}, (void *[]){&ld}, sizeof ld));
        *at = keep;
        double fd = (lu - ld) / (2 * h), got = k < 5 ? gv[k] : gu[k - 5];
        CHECK_MSG(fabs(got - fd) < 1e-7 * (1 + fabs(fd)) && fabs(fd) > 1e-6, "weight %d: %.12g, differences %.12g", k,
                  got, fd);
    }
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"one group is flat bit for bit", test_one_group_is_flat_bit_for_bit},
        {"flat round in one group", test_flat_round_in_one_group},
        {"reverse known answer", test_reverse_known_answer},
        {"derivatives match finite differences", test_derivatives_match_finite_differences},
        {"weights match finite differences", test_weights_match_finite_differences},
        {"second order", test_second_order},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
