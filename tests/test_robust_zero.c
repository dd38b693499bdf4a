/* ALIE and IPM made in robust_aggregate's store with the zeroing after them
 * (fedc__robust_aggregate_attacked with a bound and the update's leaf sizes;
 * src/exec/aggregate_attack.c), against the ops over the cohort a round built
 * for them before: fedc_attack_update, fedc_aggregate_zero of each client's
 * attacked update, then the weighted mean, or the flattened updates less cclip's
 * centre into the robust aggregator. The aggregate and the count zeroed are the
 * same bits, with the attack's norm above the bound (the attackers zeroed, the
 * honest kept) or within it (honest clients zeroed), in memory or spilled, on 1
 * or 3 threads, with clients absent. The update is two leaves; a block of the
 * store's (4096 coordinates) holds the end of one and the start of the other,
 * so the attack's norm pauses a leaf's sum at block ends and closes it inside
 * one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "exec/exec.h"
#include "ir/ir.h"
#include "harness.h"

enum { N = 12, A = 90000, B = 300, D = A + B }; /* 12 x 361 kB: more than memory=1 */

static fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

/* The inputs: leaves "a" f32[A] and "b" f32[B], weights "w", the flags, the centre. */
typedef struct round_inputs {
    fedc_tree *update;
    fedc_value w, bad, center;
} round_inputs;

static round_inputs declare(fedc_program *p) {
    fedc_type one = fedc_type_scalar(FEDC_F32);
    round_inputs in = {fedc_tree_new(p), fedc_input(p, "w", placed(one, FEDC_CLIENTS)),
                       fedc_input(p, FEDC_ATTACK_MALICIOUS, placed(one, FEDC_CLIENTS)),
                       fedc_input(p, "center", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){D}), FEDC_SERVER))};
    fedc_type a = fedc_type_make(FEDC_F32, 1, (int64_t[]){A}), b = fedc_type_make(FEDC_F32, 1, (int64_t[]){B});
    fedc_tree_set(p, in.update, "a", fedc_input(p, "a", placed(a, FEDC_CLIENTS)));
    fedc_tree_set(p, in.update, "b", fedc_input(p, "b", placed(b, FEDC_CLIENTS)));
    return in;
}

static fedc_value concat2(fedc_program *p, const fedc_tree *t) {
    return fedc_concat(p, (fedc_value[]){fedc_tree_value(t, 0), fedc_tree_value(t, 1)}, 2, 0);
}

/* The ops over the cohort: outputs "agg" (f32[D]), "zeroed" and "attackers_zeroed". */
static fedc_program *reference(const fedc_attack *at, const fedc_robust *r, double bound) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    round_inputs in = declare(p);
    fedc_tree *t = fedc_attack_update(p, at, in.update, in.bad, FEDC_NONE);
    fedc_value flag;
    fedc_tree *z = fedc_aggregate_zero(p, t, fedc_aggregate_norm(p, t), fedc_scalar(p, FEDC_F32, bound), &flag);
    fedc_program_output(p, "zeroed", fedc_sum(p, flag));
    fedc_program_output(p, "attackers_zeroed", fedc_sum(p, fedc_mul(p, flag, in.bad)));
    fedc_program_output(p, "norms", fedc_aggregate_norm(p, t));
    fedc_value agg;
    if (r->kind == FEDC_ROBUST_MEAN) {
        agg = concat2(p, fedc_tree_weighted_mean(p, z, in.w));
    } else {
        fedc_value x = concat2(p, z);
        if (r->kind == FEDC_ROBUST_CCLIP) x = fedc_sub(p, x, fedc_broadcast(p, in.center));
        agg = fedc_robust_aggregate(p, x, in.w, r);
    }
    fedc_program_output(p, "agg", agg);
    CHECK_OK(fedc_program_status(p));
    return p;
}

/* The same made in the store: each client's leaves and its own zeroing flag. */
static fedc_program *in_store(const fedc_attack *at, const fedc_robust *r, double bound) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    round_inputs in = declare(p);
    fedc_value kept = fedc_le(p, fedc_aggregate_norm(p, in.update), fedc_scalar(p, FEDC_F32, bound));
    fedc_value flag = fedc_select(p, kept, fedc_scalar(p, FEDC_F32, 0), fedc_scalar(p, FEDC_F32, 1));
    fedc_value x = fedc_concat(p, (fedc_value[]){concat2(p, in.update), fedc_reshape(p, flag, 1, (int64_t[]){1})}, 2, 0);
    fedc_value limit = fedc_full(p, placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER), bound);
    fedc_value sizes = fedc_constant(p, placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){2}), FEDC_SERVER),
                                     (int32_t[]){A, B});
    fedc_value agg = fedc__robust_aggregate_attacked(
        p, x, in.w, r, at->kind == FEDC_ATTACK_ALIE ? FEDC__ROBUST_ATTACK_ALIE : FEDC__ROBUST_ATTACK_IPM, at->value,
        in.bad, r->kind == FEDC_ROBUST_CCLIP ? in.center : FEDC_NONE, limit, sizes);
    int64_t at0[1] = {0}, atd[1] = {D}, end[1] = {D + 1};
    fedc_program_output(p, "agg", fedc_slice(p, agg, at0, atd));
    fedc_program_output(p, "zeroed", fedc_reshape(p, fedc_slice(p, agg, atd, end), 0, NULL));
    CHECK_OK(fedc_program_status(p));
    return p;
}

/* The cohort: client i's numbers uniform in ±0.2 (i + 1) (norms about 35 to
 * 420), weights 1 to 4, clients 3, 7 and 10 malicious. */
typedef struct cohort {
    float *a, *b, w[N], bad[N], *center;
} cohort;

static cohort make_cohort(void) {
    cohort c = {malloc((size_t)N * A * sizeof(float)), malloc((size_t)N * B * sizeof(float)), {0}, {0},
                malloc((size_t)D * sizeof(float))};
    fedc_test_seed(38);
    for (int i = 0; i < N; i++) {
        double s = 0.2 * (i + 1);
        for (int k = 0; k < A; k++) c.a[(size_t)i * A + k] = (float)fedc_test_uniform(-s, s);
        for (int k = 0; k < B; k++) c.b[(size_t)i * B + k] = (float)fedc_test_uniform(-s, s);
        c.w[i] = (float)(1 + i % 4), c.bad[i] = i == 3 || i == 7 || i == 10;
    }
    for (int k = 0; k < D; k++) c.center[k] = (float)fedc_test_uniform(-0.1, 0.1);
    return c;
}

/* Runs p over the cohort (absent: NULL or N flags): its outputs into agg and
 * *zeroed; the reference's into *attackers and *norm (client 7's, an attacker's). */
static void run(fedc_program *p, const cohort *c, int threads, const uint8_t *absent, float *agg, float *zeroed,
                float *attackers, float *norm) {
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = N, .threads = threads}));
    if (!ex) return;
    if (absent) CHECK_OK(fedc_executor_set_absent(ex, absent));
    CHECK_OK(fedc_executor_bind(ex, "a", c->a));
    CHECK_OK(fedc_executor_bind(ex, "b", c->b));
    CHECK_OK(fedc_executor_bind(ex, "w", c->w));
    CHECK_OK(fedc_executor_bind(ex, FEDC_ATTACK_MALICIOUS, c->bad));
    CHECK_OK(fedc_executor_bind(ex, "center", c->center));
    CHECK_OK(fedc_executor_run(ex));
    const float *v = NULL;
    CHECK_OK(fedc_executor_output(ex, "agg", (const void **)&v, NULL));
    if (v) memcpy(agg, v, D * sizeof *agg);
    CHECK_OK(fedc_executor_output(ex, "zeroed", (const void **)&v, NULL));
    if (v) *zeroed = *v;
    if (attackers && !fedc_executor_output(ex, "attackers_zeroed", (const void **)&v, NULL)) *attackers = *v;
    if (norm && !fedc_executor_output(ex, "norms", (const void **)&v, NULL)) *norm = v[7];
    fedc_executor_destroy(ex);
}

/* The attack's norm as the ops compute it (alie:z=1, every client there). */
static float attack_norm(const cohort *c, float *scratch) {
    fedc_attack at = {.fraction = 0.25};
    fedc_robust r = fedc_robust_defaults(FEDC_ROBUST_MEAN);
    CHECK_OK(fedc_attack_parse("alie:z=1", &at));
    fedc_program *p = reference(&at, &r, 1e30);
    float zeroed, attackers, norm = 0;
    run(p, c, 1, NULL, scratch, &zeroed, &attackers, &norm);
    fedc_program_destroy(p);
    return norm;
}

static void test_zero_after_attack_in_store(void) {
    cohort c = make_cohort();
    float *want = malloc(D * sizeof *want), *got = malloc(D * sizeof *got);
    uint8_t absent[N] = {[3] = 1, [5] = 1}; /* a malicious client and an honest one */
    float norm = want ? attack_norm(&c, want) : 0;
    struct {
        const char *attack;
        double bound;
        bool attackers, honest; /* zeroed: every attacker (or none); some honest clients (or none) */
    } cases[] = {{"alie:z=1", 1e30, false, false}, {"alie:z=4", 500, true, false}, {"alie:z=0.1", 200, false, true},
                 {"ipm:eps=2", 200, false, true},  {"ipm:eps=8", 500, true, false},  {"alie:z=1", norm, false, true},
                 {"alie:z=1", nextafterf(norm, 0), true, true}};
    const char *aggregators[] = {"mean", "cclip:tau=50"};
    for (int i = 0; want && got && i < FEDC_COUNT_OF(cases); i++) {
        fedc_attack at = {.fraction = 0.25};
        CHECK_OK(fedc_attack_parse(cases[i].attack, &at));
        for (int g = 0; g < FEDC_COUNT_OF(aggregators); g++) {
            fedc_robust r;
            CHECK_OK(fedc_robust_parse(aggregators[g], &r));
            fedc_program *ref = reference(&at, &r, cases[i].bound);
            for (int gone = 0; gone <= 1; gone++) {
                float zw = -1, zg = -1, bad = -1;
                run(ref, &c, 2, gone ? absent : NULL, want, &zw, &bad, NULL);
                int attackers = gone ? 2 : 3;
                if (!gone || i + 2 < FEDC_COUNT_OF(cases)) /* the last two: the norm of the whole cohort's attack */
                    CHECK_MSG(bad == (cases[i].attackers ? attackers : 0) && (zw > bad) == cases[i].honest,
                              "%s, bound %.9g: the ops zeroed %g clients, %g attackers (not the case it tests)",
                              cases[i].attack, cases[i].bound, zw, bad);
                for (int t = 1; t <= 3; t += 2) {
                    r.memory_mb = t == 3 || gone; /* 1 MiB: spilled */
                    fedc_program *store = in_store(&at, &r, cases[i].bound);
                    int64_t spilled = fedc__robust_spilled;
                    run(store, &c, t, gone ? absent : NULL, got, &zg, NULL, NULL);
                    CHECK_MSG(!r.memory_mb || fedc__robust_spilled > spilled, "memory=1 spilled nothing");
                    CHECK_MSG(!memcmp(want, got, D * sizeof *got) && zg == zw,
                              "%s, %s, bound %.9g, %d threads, memory=%d%s: not the ops' bits (zeroed %g, the ops %g)",
                              cases[i].attack, aggregators[g], cases[i].bound, t, r.memory_mb,
                              gone ? ", 2 absent" : "", zg, zw);
                    fedc_program_destroy(store);
                }
            }
            fedc_program_destroy(ref);
        }
    }
    free(want), free(got), free(c.a), free(c.b), free(c.center);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"zero_after_attack_in_store", test_zero_after_attack_in_store},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
