/* peers_cases DIR: writes every program of export_cases.c (the cases every export
 * target takes) for the peer tests (tests/peers_xla.py, tests/peers_iree.py) to
 * compile and run on XLA and IREE: DIR/NN/ (DIR/rNN/ for the rounds below) holds
 *   case.txt      the case's name, cohort size and which outputs are normal variates
 *                 ("name=...", "clients=N", "normal=K ...")
 *   program.fedc  the program as text (fedc_program_print), for `fedc program export`
 *   in_K.npy      its K-th input, the random data test_export_mlir feeds it
 *   out_K.npy     its K-th output as fedc's executor (fast kernels) computes it
 * for every case of export_cases.c (00, 01, ...), then for a round of each built-in
 * algorithm (fedc_algorithm_at) on a small MLP (r00, r01, ...).
 * A @clients value is one array whose leading axis is the cohort, as the export lays it out;
 * a @groups value one whose leading axis is the groups (case.txt's "groups=G": G groups of
 * clients / G each, the clients ordered by group).
 * `peers_cases DIR shard` writes the cases tests/peers_xla_shard.py runs sharded instead. */
#include <errno.h>
#include <sys/stat.h>

#include "export_cases.h"
#include "fedc/npy.h"

/* t as an array: a @clients value gets the cohort as its leading axis, a @groups
 * one the groups. */
static fedc_type as_array(fedc_type t, int clients, int groups) {
    if (t.placement == FEDC_CLIENTS || t.placement == FEDC_GROUPS) {
        memmove(t.dims + 1, t.dims, (size_t)t.rank * sizeof t.dims[0]);
        t.dims[0] = t.placement == FEDC_GROUPS ? groups : clients;
        t.rank++;
    }
    t.placement = FEDC_LOCAL;
    return t;
}

/* Per node of p: whether its value is computed from a random_normal (through a
 * map's or fold's body: from the body's output that a result reads, or from the
 * node's operands). Its variates are Box-Muller over log and cosine, which a backend
 * rounds its own way (docs/export.md), where every other draw must be fedc's bits. */
static bool *from_normal(const fedc_program *p) {
    bool *f = calloc((size_t)p->n + 1, 1);
    for (int v = 0; f && v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        f[v] = n->op == FEDC_OP_RANDOM_NORMAL;
        for (int k = 0; k < n->nin; k++) f[v] |= f[n->in[k]];
        const fedc__node *m = n->op == FEDC_OP_RESULT ? &p->nodes[n->in[0]] : NULL;
        if (m && fedc__op_has_body(m->op)) {
            const fedc_program *body = fedc__body(p, m);
            bool *b = from_normal(body);
            f[v] |= b && b[body->outputs[fedc__attr_int(n, FEDC_ATTR_INDEX, 0)].value];
            free(b);
        }
    }
    return f;
}

static int write_npy(const char *dir, const char *kind, int k, fedc_type t, int clients, int groups, const void *data) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s_%d.npy", dir, kind, k);
    if ((t.placement == FEDC_CLIENTS || t.placement == FEDC_GROUPS) && t.rank == FEDC_MAX_RANK) {
        fprintf(stderr, "peers_cases: %s: a @clients value of rank %d has no room for the cohort's axis\n", path, t.rank);
        return 1;
    }
    fedc_type a = as_array(t, clients, groups);
    if (fedc_npy_write(path, &a, data) == FEDC_OK) return 0;
    fprintf(stderr, "peers_cases: %s: %s\n", path, fedc_errmsg());
    return 1;
}

/* The sharded runs' extra lines of case.txt ("shard=clients=8"), "" for none. */
static const char *case_extra = "";

static int write_case(const char *dir, const export_case *c) {
    fedc_program *p = c->make();
    if (!p || fedc_program_status(p)) {
        fprintf(stderr, "peers_cases: %s: build: %s\n", c->name, fedc_errmsg());
        fedc_program_destroy(p);
        return 1;
    }
    int bad = 0, groups = case_groups(p), sizes[2] = {c->clients / 2, c->clients - c->clients / 2};
    char path[1024];
    snprintf(path, sizeof path, "%s/case.txt", dir);
    FILE *f = fopen(path, "w");
    bool *normal = from_normal(p);
    if (f) {
        fprintf(f, "name=%s\nclients=%d\n%s", c->name, c->clients, case_extra);
        if (groups) fprintf(f, "groups=%d\n", groups);
        fprintf(f, "normal=");
        for (int k = 0; normal && k < fedc_program_num_outputs(p); k++)
            if (normal[fedc_program_output_value(p, k)]) fprintf(f, " %d", k);
        fputc('\n', f);
    }
    free(normal);
    if (!f || fclose(f) != 0) bad = 1, fprintf(stderr, "peers_cases: %s: %s\n", path, strerror(errno));
    snprintf(path, sizeof path, "%s/program.fedc", dir);
    FILE *g = fopen(path, "w");
    if (g) bad |= fedc_program_print(p, g) != FEDC_OK;
    if (!g || fclose(g) != 0) bad = 1, fprintf(stderr, "peers_cases: %s: %s\n", path, strerror(errno));

    inputs in = {0};
    make_inputs(p, c, &in);
    for (int i = 0; i < in.n; i++)
        bad |= write_npy(dir, "in", i, fedc_value_type(p, fedc_program_input(p, i)), c->clients, groups, in.data[i]);
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = c->clients, .groups = groups, .group_sizes = groups ? sizes : NULL};
    fedc_status s = fedc_executor_create(&ex, p, &o);
    for (int i = 0; !s && i < in.n; i++) s = fedc_executor_bind(ex, in.names[i], in.data[i]);
    if (!s) s = fedc_executor_run(ex);
    for (int k = 0; !s && k < fedc_program_num_outputs(p); k++) {
        const void *y = NULL;
        fedc_type t;
        s = fedc_executor_output(ex, fedc_program_output_name(p, k), &y, &t);
        if (!s) bad |= write_npy(dir, "out", k, t, c->clients, groups, y);
    }
    if (s) bad = 1, fprintf(stderr, "peers_cases: %s: run: %s\n", c->name, fedc_errmsg());
    fedc_executor_destroy(ex);
    free_inputs(&in);
    fedc_program_destroy(p);
    return bad;
}

/* A round of algorithm `def` (its default hyperparameters, client SGD, server
 * SGD at 1) on a 784-16-10 MLP, 3 clients of 2 batches of 2. DiLoCo's replicas
 * keep their optimizer's state, so its clients run Adam. */
static const fedc_algorithm_def *round_def;
static fedc_program *algorithm_round(void) {
    fedc_model *m = NULL;
    fedc_program *round = NULL;
    fedc_model_options mo = {.hidden = 16, .num_classes = 10};
    bool diloco = strcmp(round_def->name, "diloco") == 0;
    fedc_algorithm a = {.def = round_def, .client_opt = fedc_optimizer_defaults(diloco ? FEDC_OPT_ADAM : FEDC_OPT_SGD, 0.1),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0), .batch_size = 2, .max_steps = 2};
    if (fedc_model_create(&m, "dense", &mo) == FEDC_OK) fedc_algorithm_round(m, &a, &round);
    fedc_model_destroy(m);
    return round;
}

static int write_case_in(const char *root, const char *kind, int i, const export_case *c) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s%02d", root, kind, i);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "peers_cases: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    return write_case(dir, c);
}

/* The number of aggregations in p (sum, mean, weighted_mean and their steps up),
 * each at least one array all-reduced once sharded (XLA may merge a sum and a
 * mean of one value; a weighted mean is two: the weighted sum, the weights'). */
static int aggregations(const fedc_program *p) {
    int n = 0;
    for (int v = 0; v < p->n; v++) {
        fedc__op op = p->nodes[v].op;
        n += op == FEDC_OP_SUM || op == FEDC_OP_MEAN || op == FEDC_OP_WEIGHTED_MEAN || op == FEDC_OP_SUM_UP ||
             op == FEDC_OP_MEAN_UP || op == FEDC_OP_WEIGHTED_MEAN_UP;
    }
    return n;
}

/* FedJAX's EMNIST CNN in a FedAvg round of 8 clients of 2 batches of 2, for
 * XLA's partitioner over 8 devices (tests/peers_xla_shard.py). */
static fedc_program *cnn_round_8(void) { return model_round("cnn", NULL, FEDC_OPT_SGD, 2, 2); }

/* The cases tests/peers_xla_shard.py runs sharded: DIR/sNN/, case.txt saying
 * how to shard ("shard=clients=8"), how many aggregations it holds, and the device
 * groups its all-reduces must run over ("across=..."). */

/* case.txt of p on a 2 x 4 mesh of groups x clients: the device groups of the
 * levels p aggregates, each of which must have an all-reduce: the clients' steps
 * up to their groups along each row, the groups' up to the server across the
 * rows, and a flat aggregation of the clients over the whole mesh (hierfedopt's
 * plain-SGD round is one: it computes the round flat, as HierFAVG does). */
static void mesh_2x4(const fedc_program *p, char *out, size_t size) {
    bool rows = false, columns = false, all = false;
    for (int v = 0; v < p->n; v++) {
        fedc__op op = p->nodes[v].op;
        fedc_placement to = p->nodes[v].type.placement;
        bool up = op == FEDC_OP_SUM_UP || op == FEDC_OP_MEAN_UP || op == FEDC_OP_WEIGHTED_MEAN_UP;
        bool flat = op == FEDC_OP_SUM || op == FEDC_OP_MEAN || op == FEDC_OP_WEIGHTED_MEAN;
        rows |= up && to == FEDC_GROUPS, columns |= up && to == FEDC_SERVER, all |= flat;
    }
    snprintf(out, size, "shard=groups=2,clients=4\naggregations=%d\nacross=%s%s%s\n", aggregations(p),
             rows ? "{{0,1,2,3},{4,5,6,7}} " : "", columns ? "{{0,4},{1,5},{2,6},{3,7}} " : "",
             all ? "{{0,1,2,3,4,5,6,7}}" : "");
}

static int write_sharded(const char *root) {
    int bad = 0;
    char extra[256];
    fedc_program *cnn = cnn_round_8();
    snprintf(extra, sizeof extra, "shard=clients=8\naggregations=%d\nacross={{0,1,2,3,4,5,6,7}}\n", aggregations(cnn));
    fedc_program_destroy(cnn);
    case_extra = extra;
    bad |= write_case_in(root, "s", 0, &(export_case){"FedAvg round of the EMNIST CNN, 8 clients", cnn_round_8, 8, -0.1, 0.1, 3});
    fedc_program *levels = m_levels();
    mesh_2x4(levels, extra, sizeof extra);
    fedc_program_destroy(levels);
    bad |= write_case_in(root, "s", 1, &(export_case){"the groups level, 2 groups of 4 clients", m_levels, 8, 0.1, 1, 0});
    for (int i = 0; i < fedc_algorithm_count(); i++) /* HierFAVG's round of the MLP on the same mesh */
        if (fedc_algorithm_at(i)->grouped) {
            round_def = fedc_algorithm_at(i);
            fedc_program *r = algorithm_round();
            mesh_2x4(r, extra, sizeof extra);
            fedc_program_destroy(r);
            char name[128];
            snprintf(name, sizeof name, "%s round of an MLP, 2 groups of 4 clients", round_def->name);
            bad |= write_case_in(root, "s", 2 + i, &(export_case){name, algorithm_round, 8, 0.01, 0.1, 3});
        }
    printf("peers_cases: wrote the sharded cases to %s\n", root);
    return bad;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[2], "shard") == 0) return write_sharded(argv[1]);
    if (argc != 2) {
        fprintf(stderr, "usage: peers_cases DIR [shard]\n");
        return 2;
    }
    int bad = 0, written = 0;
    for (int i = 0; i < EXPORT_NCASES; i++) bad |= write_case_in(argv[1], "", i, &EXPORT_CASES[i]);
    for (int i = 0; i < fedc_algorithm_count(); i++) {
        char name[128];
        round_def = fedc_algorithm_at(i);
        /* a grouped algorithm (hierfavg): 2 groups of 2 clients */
        snprintf(name, sizeof name, "%s round of an MLP%s", round_def->name, round_def->grouped ? ", 2 groups" : "");
        bad |= write_case_in(argv[1], "r", i, &(export_case){name, algorithm_round, round_def->grouped ? 4 : 3, 0.01, 0.1, 3});
        written++;
    }
    printf("peers_cases: wrote %d cases and %d algorithms' rounds to %s\n", EXPORT_NCASES, written, argv[1]);
    return bad;
}
