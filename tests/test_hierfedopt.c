/* hierfedopt, FedAvg with per-group server optimizers (src/fl/hierfedopt.c): two
 * rounds by hand on the heart model in two groups, each with its own Adam, against
 * the same rounds in plain C; the group state's interface (group_init, r->group,
 * fedc_round_group_state) and the settings it refuses; and through fedc_train:
 * plain SGD at rate 1 is hierfavg bit for bit, one group with Adam is FedAdam bit
 * for bit (its state as the server's), a group that a round does not draw keeps
 * its state, and a resumed run ends bitwise where an uninterrupted one does. */
#include "fl_round_case.h"
#include "fl_train_case.h"

enum { GROUPS = 2 };
static const int GROUP_OF[CLIENTS] = {0, 0, 1}, GROUP_SIZES[GROUPS] = {2, 1};
static const double CLIENT_LR = 0.1, GROUP_LR = 0.05;

static fedc_algorithm hierfedopt(fedc_optimizer_kind group_opt, double lr) {
    fedc_algorithm a = heart_algorithm(&fedc_algorithm_hierfedopt, fedc_optimizer_defaults(FEDC_OPT_SGD, CLIENT_LR));
    a.server_opt = fedc_optimizer_defaults(group_opt, lr);
    return a;
}

/* The round on GROUPS groups (GROUP_SIZES) with group_init's values for every
 * group, bound as group/<leaf> (k->leaf*: GROUPS x each leaf). */
static fedc_status open_groups(round_case *k, const fedc_algorithm *a) {
    memset(k, 0, sizeof *k);
    fedc_program *init = NULL;
    fedc_status st = fedc_model_create(&k->m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES});
    if (!st) st = fedc_model_init(k->m, 1, k->w0);
    if (!st) st = fedc_algorithm_round(k->m, a, &k->round);
    fedc_exec_options o = {.clients = CLIENTS, .groups = GROUPS, .group_sizes = GROUP_SIZES};
    if (!st) st = fedc_executor_create(&k->ex, k->round, &o);
    if (!st) st = fedc_server_state_create(&k->s, k->m, a, k->w0);
    if (!st) st = fedc_server_state_bind(k->s, k->ex);
    if (!st) st = fedc_algorithm_group_init(k->m, a, &init);
    return st ? st : case_state(k, init, GROUPS);
}

/* The reference: the server's model and each group's Adam, in double. */
typedef struct ref_state {
    double w[SIZE];
    double mu[GROUPS][SIZE], nu[GROUPS][SIZE], count[GROUPS];
} ref_state;

static void ref_adam(ref_state *s, int g, double *w, const double *update) {
    double t = ++s->count[g];
    for (int i = 0; i < SIZE; i++) {
        s->mu[g][i] = 0.1 * update[i] + 0.9 * s->mu[g][i];
        s->nu[g][i] = 0.001 * update[i] * update[i] + 0.999 * s->nu[g][i];
        w[i] -= GROUP_LR * (s->mu[g][i] / (1 - pow(0.9, t)) / (sqrt(s->nu[g][i] / (1 - pow(0.999, t))) + 1e-8));
    }
}

/* One round of E group rounds in plain C: each client's SGD steps from its
 * group's model, each group's Adam on its clients' mean delta weighted by their
 * examples, then the groups' models weighted by their examples. */
static void ref_round(const round_data *d, ref_state *s, int E) {
    double wg[GROUPS][SIZE], weight[GROUPS] = {0}, grad[SIZE];
    for (int g = 0; g < GROUPS; g++) memcpy(wg[g], s->w, sizeof s->w);
    for (int e = 0; e < E; e++) {
        double mean[GROUPS][SIZE] = {{0}};
        memset(weight, 0, sizeof weight);
        for (int c = 0; c < CLIENTS; c++) {
            int g = GROUP_OF[c];
            double w[SIZE], n = d->steps[c] * BATCH;
            memcpy(w, wg[g], sizeof w);
            for (int t = 0; t < d->steps[c]; t++) {
                ref_grad(d, c, t, w, grad);
                for (int i = 0; i < SIZE; i++) w[i] -= CLIENT_LR * grad[i];
            }
            for (int i = 0; i < SIZE; i++) mean[g][i] += n * (wg[g][i] - w[i]);
            weight[g] += n;
        }
        for (int g = 0; g < GROUPS; g++) {
            for (int i = 0; i < SIZE; i++) mean[g][i] /= weight[g];
            ref_adam(s, g, wg[g], mean[g]);
        }
    }
    for (int i = 0; i < SIZE; i++)
        s->w[i] = (weight[0] * wg[0][i] + weight[1] * wg[1][i]) / (weight[0] + weight[1]);
}

static void test_adam_per_group_by_hand(void) {
    fedc_algorithm a = hierfedopt(FEDC_OPT_ADAM, GROUP_LR);
    CHECK_OK(fedc_algorithm_set(&a, "group_rounds", 2));
    round_case k;
    CHECK_OK(open_groups(&k, &a));
    if (fedc_test_failures()) return case_close(&k);
    static ref_state ref;
    memset(&ref, 0, sizeof ref);
    for (int i = 0; i < SIZE; i++) ref.w[i] = k.w0[i];
    for (int r = 0; r < 2; r++) {
        static round_data d;
        make_data(&d, 300 + (uint32_t)r, (int[]){6, 3, 2 + 2 * r});
        float w[SIZE];
        CHECK_OK(case_run(&k, &d, w));
        ref_round(&d, &ref, 2);
        double err = max_abs_diff(w, ref.w, SIZE), moved = max_abs_diff(k.w0, ref.w, SIZE);
        printf("    round %d: |w - plain C| %.2g (the model moved %.3g)\n", r + 1, err, moved);
        CHECK_MSG(err < 1e-5, "round %d: the model differs from the plain C round by %g", r + 1, err);
        CHECK(moved > 1e-2);
        for (int g = 0; g < GROUPS; g++) {
            const float *count = case_leaf(&k, "opt/count", g), *mu = case_leaf(&k, "opt/mu/dense1/w", g);
            const float *nu = case_leaf(&k, "opt/nu/dense1/b", g);
            CHECK_MSG(count && *count == (float)ref.count[g], "round %d, group %d: Adam's count %g, not %g", r + 1, g,
                      count ? *count : -1, ref.count[g]);
            CHECK(mu && fabs(mu[5] - ref.mu[g][5]) < 1e-6 && nu && fabs(nu[1] - ref.nu[g][FEATURES * CLASSES + 1]) < 1e-9);
        }
    }
    CHECK(ref.count[0] == 4 && ref.count[1] == 4); /* 2 rounds of 2 group rounds, each group its own */
    const float *mu0 = case_leaf(&k, "opt/mu/dense1/w", 0);
    CHECK(mu0 && max_abs_diff(mu0, ref.mu[1], FEATURES * CLASSES) > 1e-4); /* the groups' states differ */
    case_close(&k);
}

/* FedAvg's round, which returns no group state. */
static fedc_status no_group_output(fedc_round *r) {
    fedc_program *p = r->p;
    fedc_tree *out, *next = fedc_tree_copy(p, r->server);
    fedc_status st = fedc_round_local_training(r, NULL, &out);
    if (st) return st;
    fedc_value n = fedc_tree_get(p, out, "examples");
    fedc_tree *delta = fedc_tree_weighted_mean(p, fedc_tree_subtree(p, out, "delta"), n);
    fedc_tree_set_tree(p, next, "params", fedc_tree_sub(p, fedc_tree_subtree(p, r->server, "params"), delta));
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), n);
}

static void test_interface_and_refusals(void) {
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
    fedc_algorithm a = hierfedopt(FEDC_OPT_ADAM, GROUP_LR);
    CHECK(fedc_algorithm_hparam(&a, "group_rounds") == 1);
    fedc_program *round = NULL;
    CHECK_OK(fedc_algorithm_round(m, &a, &round));
    const char *in[] = {"group/opt/mu/dense1/w", "group/opt/nu/dense1/b", "group/opt/count"};
    for (int i = 0; round && i < 3; i++) {
        int at = fedc_program_find_input(round, in[i]);
        CHECK_MSG(at != FEDC_NONE && fedc_value_type(round, fedc_program_input(round, at)).placement == FEDC_GROUPS,
                  "the round has no input %s@groups", in[i]);
        CHECK_MSG(fedc_program_find_output(round, in[i]) != FEDC_NONE, "the round has no output %s", in[i]);
    }
    CHECK(round && fedc_program_find_input(round, "server/opt/count") == FEDC_NONE); /* the server only averages */
    fedc_program_destroy(round);
    /* plain SGD keeps no state: no group inputs */
    fedc_algorithm sgd = hierfedopt(FEDC_OPT_SGD, 1);
    fedc_program *init = NULL;
    CHECK_OK(fedc_algorithm_group_init(m, &sgd, &init));
    CHECK(init == NULL);
    CHECK_OK(fedc_algorithm_round(m, &sgd, &round));
    CHECK(round && fedc_program_find_input(round, "group/opt/count") == FEDC_NONE);
    fedc_program_destroy(round);
    /* settings it refuses */
    CHECK_ERR(fedc_algorithm_set(&a, "group_rounds", 0), FEDC_EINVAL, "group_rounds must be in [1, 1000], not 0");
    CHECK_OK(fedc_algorithm_set(&a, "group_rounds", 1.5));
    CHECK_ERR(fedc_algorithm_round(m, &a, &round), FEDC_EINVAL, "hierfedopt: group_rounds must be a whole number, not 1.5");
    a = hierfedopt(FEDC_OPT_ADAM, GROUP_LR);
    a.aggregation.clip = 1;
    CHECK_ERR(fedc_algorithm_round(m, &a, &round), FEDC_EINVAL,
              "apply with plain SGD groups (--server-opt sgd) and group_rounds=1 only");
    sgd.aggregation.clip = 1; /* where the round is fedavg's, they apply */
    CHECK_OK(fedc_algorithm_round(m, &sgd, &round));
    fedc_program_destroy(round);
    /* the interface: a round that drops its group state, and group state without groups */
    fedc_algorithm_def forgetful = fedc_algorithm_hierfedopt;
    forgetful.name = "forgetful", forgetful.round = no_group_output;
    a = hierfedopt(FEDC_OPT_ADAM, GROUP_LR);
    a.def = &forgetful;
    CHECK_ERR(fedc_algorithm_round(m, &a, &round), FEDC_EINVAL, "forgetful: the round returns no new group state");
    forgetful.grouped = false;
    CHECK_ERR(fedc_algorithm_group_init(m, &a, &init), FEDC_EINVAL, "forgetful: group_init needs a grouped algorithm");
    fedc_model_destroy(m);
}

/* ------------------------------------------------------------ fedc train -- */

static fedc_train_config grouped_job(const fedc_algorithm_def *def, const char *out) {
    fedc_train_config c = heart_job(def, out);
    c.groups = 2, c.clients_per_round = 4, c.rounds = 4, c.eval_every = 0, c.checkpoint_every = 4;
    return c;
}

/* Whether the two checkpoints hold tensors of the same bits, `a`'s named by
 * `b`'s with prefix from replaced by to ("server/" by "group/"). */
static bool same_tensors_renamed(const char *dir_a, const char *dir_b, const char *from, const char *to) {
    char pa[700], pb[700];
    snprintf(pa, sizeof pa, "%s/checkpoint.safetensors", dir_a);
    snprintf(pb, sizeof pb, "%s/checkpoint.safetensors", dir_b);
    fedc_safetensors *a = NULL, *b = NULL;
    bool same = fedc_safetensors_read(pa, &a) == FEDC_OK && fedc_safetensors_read(pb, &b) == FEDC_OK &&
                fedc_safetensors_count(a) == fedc_safetensors_count(b);
    for (int i = 0; same && i < fedc_safetensors_count(b); i++) {
        fedc_tensor_entry y = fedc_safetensors_tensor(b, i), x;
        char name[512];
        size_t k = strlen(from);
        snprintf(name, sizeof name, "%s%s", strncmp(y.name, from, k) ? "" : to, y.name + (strncmp(y.name, from, k) ? 0 : k));
        same = fedc_safetensors_find(a, name, &x) == FEDC_OK && fedc_type_bytes(&x.type) == fedc_type_bytes(&y.type) &&
               memcmp(x.data, y.data, fedc_type_bytes(&y.type)) == 0;
        if (!same) printf("    %s: %s differs from %s's %s\n", dir_a, name, dir_b, y.name);
    }
    fedc_safetensors_destroy(a);
    fedc_safetensors_destroy(b);
    return same;
}

static void test_equivalences(void) {
    if (!have_data(HEART_DATA)) return;
    fedc_train_result r;
    /* plain SGD at rate 1 in every group is HierFAVG */
    fedc_train_config hier = grouped_job(&fedc_algorithm_hierfavg, "hierfavg"), opt = hier;
    opt.algorithm.def = &fedc_algorithm_hierfedopt, opt.out_dir = fedc_test_tmp("sgd");
    CHECK_OK(fedc_algorithm_set(&opt.algorithm, "group_rounds", 2));
    CHECK_OK(fedc_train(&hier, &r));
    CHECK_OK(fedc_train(&opt, &r));
    CHECK_MSG(same_checkpoints(hier.out_dir, opt.out_dir), "hierfedopt with SGD at rate 1 is not hierfavg's bits");
    /* one group with Adam and E = 1 is FedAdam, its state the server's */
    fedc_train_config fedadam = grouped_job(NULL, "fedadam");
    fedadam.groups = 0, fedadam.algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, GROUP_LR);
    fedc_train_config one = fedadam;
    one.algorithm.def = &fedc_algorithm_hierfedopt, one.groups = 1, one.out_dir = fedc_test_tmp("one");
    fedc_train_result r_one;
    CHECK_OK(fedc_train(&fedadam, &r));
    CHECK_OK(fedc_train(&one, &r_one));
    CHECK_MSG(same_tensors_renamed(one.out_dir, fedadam.out_dir, "server/opt/", "group/opt/"),
              "hierfedopt with Adam in one group is not FedAdam's bits");
    /* and two groups are not */
    fedc_train_config two = one;
    two.groups = 2, two.out_dir = fedc_test_tmp("two");
    CHECK_OK(fedc_train(&two, &r));
    CHECK_MSG(r.train_loss != r_one.train_loss, "two groups train as one (loss %g)", r.train_loss);
}

/* Each group's Adam steps once a round it is drawn in, and not otherwise. */
static void test_absent_groups_keep_state(void) {
    if (!have_data(HEART_DATA)) return;
    fedc_train_config c = grouped_job(&fedc_algorithm_hierfedopt, "drawn");
    c.algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, GROUP_LR);
    c.groups_per_round = 1, c.rounds = 5, c.checkpoint_every = 5;
    fedc_train_result r;
    CHECK_OK(fedc_train(&c, &r));
    int drawn[GROUPS] = {0};
    char path[700], line[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", c.out_dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    while (f && fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "\"groups\": [");
        int g = at ? atoi(at + 11) : -1;
        CHECK(g == 0 || g == 1);
        if (g == 0 || g == 1) drawn[g]++;
    }
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", c.out_dir);
    fedc_safetensors *s = NULL;
    fedc_tensor_entry count;
    CHECK_OK(fedc_safetensors_read(path, &s));
    CHECK_OK(fedc_safetensors_find(s, "group/opt/count", &count));
    const float *n = count.data;
    printf("    5 rounds, one group a round: drawn %d and %d times, Adam's counts %g and %g\n", drawn[0], drawn[1],
           (double)n[0], (double)n[1]);
    CHECK(drawn[0] + drawn[1] == 5 && n[0] == (float)drawn[0] && n[1] == (float)drawn[1]);
    CHECK(drawn[0] > 0 && drawn[1] > 0); /* seed 0's draws: both groups, so both paths are seen */
    fedc_safetensors_destroy(s);
}

static void test_resume_is_bitwise(void) {
    if (!have_data(HEART_DATA)) return;
    fedc_train_config c = grouped_job(&fedc_algorithm_hierfedopt, "resume");
    c.algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_YOGI, GROUP_LR);
    c.groups_per_round = 1, c.rounds = 6;
    CHECK_MSG(resume_matches(c, "resume"), "a resumed run of per-group Yogi does not end where the whole one does");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"adam per group by hand", test_adam_per_group_by_hand},
        {"interface and refusals", test_interface_and_refusals},
        {"equivalences", test_equivalences},
        {"absent groups keep their state", test_absent_groups_keep_state},
        {"resume is bitwise", test_resume_is_bitwise},
    };
    if (!fedc_test_tmpdir("test-hierfedopt")) return 1;
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
