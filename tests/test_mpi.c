/* The MPI backend: run under mpirun with 1, 2 or 3 ranks (CMakeLists.txt registers
 * test_mpi_ranks1..3), every rank runs federated programs split over the ranks
 * (options.mpi) and, alone, the same programs in one process; the outputs must be
 * the same bits on every rank: streamed and stored aggregations, clients' stored
 * results, dropped clients. A failing client or a failing rank gives every rank the
 * same error. Run plainly (no mpirun) it is a job of one rank; built without MPI,
 * it checks that fedc_mpi_init says how to enable MPI. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "harness.h"

static fedc_type placed(int dim, fedc_placement pl) {
    fedc_type t = fedc_type_make(FEDC_F32, 1, (int64_t[]){dim});
    t.placement = pl;
    return t;
}

/* body(w, d) = (delta = tanh(w * d + d), weight = exp(mean(d))); the program takes
 * the weighted mean and mean of delta and the sum of the weights. keep_deltas
 * stores every client's delta (an output), so the means read stored values. */
static fedc_program *cohort_program(int dim, bool keep_deltas) {
    fedc_program *body, *p;
    if (fedc_program_create(&body) || fedc_program_create(&p)) return NULL;
    fedc_type v = fedc_type_make(FEDC_F32, 1, (int64_t[]){dim});
    fedc_value w = fedc_input(body, "w", v), d = fedc_input(body, "d", v);
    fedc_program_output(body, "delta", fedc_tanh(body, fedc_add(body, fedc_mul(body, w, d), d)));
    fedc_program_output(body, "weight", fedc_exp(body, fedc_reduce_mean(body, d, NULL, -1, false)));
    fedc_value pw = fedc_input(p, "w", placed(dim, FEDC_SERVER)), pd = fedc_input(p, "d", placed(dim, FEDC_CLIENTS));
    fedc_value r[2];
    fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, pw), pd}, 2, r);
    fedc_program_output(p, "wmean", fedc_weighted_mean(p, r[0], r[1]));
    fedc_program_output(p, "mean", fedc_mean(p, r[0]));
    fedc_program_output(p, "total", fedc_sum(p, r[1]));
    if (keep_deltas) fedc_program_output(p, "deltas", r[0]);
    fedc_program_destroy(body);
    return p;
}

/* Runs p on the cohort, split over the ranks or not, and returns its outputs'
 * bytes one after another (malloc'd). */
static fedc_status run(const fedc_program *p, int clients, bool mpi, int threads, const double *work, const float *w,
                       const float *d, char **out, size_t *bytes) {
    fedc_executor *ex;
    fedc_exec_options o = {.clients = clients, .threads = threads, .mpi = mpi};
    fedc_status st = fedc_executor_create(&ex, p, &o);
    if (!st && work) st = fedc_executor_balance(ex, work);
    if (st) {
        fedc_executor_destroy(ex);
        return st;
    }
    fedc_executor_bind(ex, "w", w);
    fedc_executor_bind(ex, "d", d);
    st = fedc_executor_run(ex);
    *bytes = 0;
    *out = NULL;
    for (int k = 0; !st && k < fedc_program_num_outputs(p); k++) {
        const void *data;
        fedc_type t;
        st = fedc_executor_output(ex, fedc_program_output_name(p, k), &data, &t);
        size_t n = fedc_type_bytes(&t) * (t.placement == FEDC_CLIENTS ? (size_t)clients : 1);
        *out = realloc(*out, *bytes + n);
        memcpy(*out + *bytes, data, n);
        *bytes += n;
    }
    fedc_executor_destroy(ex);
    return st;
}

/* Cohorts of 1 (fewer clients than ranks), 10, 102, 203 and 1001 clients (leaves
 * of one client; of 1 or 2, 3 or 4, 15 or 16: none divides evenly), each split
 * evenly and balanced by uneven work (a FEMNIST round's batches, repeated), on 1,
 * 2 and 8 threads per rank, against one process on 2 threads. */
static void test_split_equals_one_process(void) {
    static const int sizes[] = {1, 10, 102, 203, 1001};
    static const double batches[10] = {9, 8, 5, 9, 1, 9, 8, 7, 8, 7};
    const int dim = 16;
    float w[16];
    for (int j = 0; j < dim; j++) w[j] = 0.3f * (float)j - 2;
    for (int keep = 0; keep <= 1; keep++) {
        for (size_t c = 0; c < FEDC_COUNT_OF(sizes); c++) {
            int clients = sizes[c];
            float *d = malloc((size_t)clients * dim * sizeof *d);
            double *work = malloc((size_t)clients * sizeof *work);
            for (int i = 0; i < clients * dim; i++) d[i] = ((float)((i * 37) % 101) / 101.0f - 0.5f) * (float)(1 + (i / dim) % 7);
            for (int i = 0; i < clients; i++) work[i] = batches[i % 10] * (i % 23 == 3 ? 40 : 1);
            fedc_program *p = cohort_program(dim, keep);
            char *a = NULL;
            size_t na = 0;
            CHECK_OK(run(p, clients, false, 2, NULL, w, d, &a, &na));
            for (int threads = 1; threads <= 8; threads *= threads == 2 ? 4 : 2) {
                for (int balanced = 0; balanced <= 1; balanced++) {
                    char *b = NULL;
                    size_t nb = 0;
                    CHECK_OK(run(p, clients, true, threads, balanced ? work : NULL, w, d, &b, &nb));
                    CHECK_MSG(na == nb && na > 0 && memcmp(a, b, na) == 0,
                              "rank %d of %d: %d clients (deltas %s, %d threads, %s): the split run differs from one "
                              "process", fedc_mpi_rank(), fedc_mpi_size(), clients, keep ? "stored" : "streamed",
                              threads, balanced ? "balanced" : "even");
                    free(b);
                }
            }
            free(a), free(d), free(work);
            fedc_program_destroy(p);
        }
    }
}

/* Balancing FEMNIST's batches over 2 ranks: each runs 35 or 36 of 71 (37 or more
 * for any contiguous cut), and every client once. */
static void test_balance(void) {
    double work[10] = {9, 8, 5, 9, 1, 9, 8, 7, 8, 7};
    fedc_program *p = cohort_program(4, false);
    fedc_executor *ex;
    fedc_exec_options o = {.clients = 10, .threads = 1, .mpi = true};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    int mine[10], n = fedc_executor_local_clients(ex, mine, 10), first, end;
    CHECK_EQ_INT(n, fedc_mpi_size() == 2 ? 5 : fedc_mpi_size() == 3 ? 3 + (fedc_mpi_rank() == 2) : 10);
    CHECK_OK(fedc_executor_balance(ex, work));
    n = fedc_executor_local_clients(ex, mine, 10);
    fedc_executor_block(ex, &first, &end);
    double mine_work = 0;
    for (int k = 0; k < n; k++) mine_work += work[mine[k]];
    CHECK(n > 0 && first == mine[0] && end == mine[n - 1] + 1);
    if (fedc_mpi_size() == 2) CHECK_MSG(mine_work >= 35 && mine_work <= 36, "rank %d: work %g", fedc_mpi_rank(), mine_work);
    if (fedc_mpi_size() == 1) CHECK(n == 10 && mine_work == 71);
    work[3] = -1;
    CHECK_ERR(fedc_executor_balance(ex, work), FEDC_EINVAL, "client 3's work is -1");
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

/* ---------------------------------------------------------------- groups -- */

/* The hierarchy over ranks: body(w, x) = (y = tanh(w * x + x), k = exp(mean(x)))
 * at the clients, from w sent down two levels; each group's mean_up, weighted
 * mean_up and sum_up of them (a tree per group), the cohort's weighted mean (one
 * tree over every client), a map at the groups (z = a^2 * the group's mean), and
 * the server's mean_up and weighted_mean_up (by group size) of the groups'. */
static fedc_program *grouped_program(int dim, bool keep) {
    fedc_program *p, *b, *gb;
    if (fedc_program_create(&p) || fedc_program_create(&b) || fedc_program_create(&gb)) return NULL;
    fedc_type v = fedc_type_make(FEDC_F32, 1, (int64_t[]){dim}), s = fedc_type_make(FEDC_F32, 0, NULL);
    fedc_value bw = fedc_input(b, "w", v), bx = fedc_input(b, "x", v);
    fedc_program_output(b, "y", fedc_tanh(b, fedc_add(b, fedc_mul(b, bw, bx), bx)));
    fedc_program_output(b, "k", fedc_exp(b, fedc_reduce_mean(b, bx, NULL, -1, false)));
    fedc_value ga = fedc_input(gb, "a", s), gm = fedc_input(gb, "m", v);
    fedc_program_output(gb, "z", fedc_mul(gb, fedc_square(gb, ga), gm));
    s.placement = FEDC_GROUPS;
    fedc_value w = fedc_input(p, "w", placed(dim, FEDC_SERVER)), x = fedc_input(p, "x", placed(dim, FEDC_CLIENTS));
    fedc_value a = fedc_input(p, "a", s), r[2], z;
    fedc_map(p, b, (fedc_value[]){fedc_broadcast_down(p, fedc_broadcast_down(p, w)), x}, 2, r);
    fedc_value m = fedc_mean_up(p, r[0]);
    fedc_map(p, gb, (fedc_value[]){a, m}, 2, &z);
    fedc_program_output(p, "mean", m);
    fedc_program_output(p, "wmean", fedc_weighted_mean_up(p, r[0], r[1]));
    fedc_program_output(p, "ksum", fedc_sum_up(p, r[1]));
    fedc_program_output(p, "flat", fedc_weighted_mean(p, r[0], r[1]));
    fedc_program_output(p, "z", z);
    fedc_program_output(p, "top", fedc_mean_up(p, z));
    fedc_program_output(p, "sized", fedc_weighted_mean_up(p, m, fedc_group_size(p, FEDC_F32)));
    if (keep) fedc_program_output(p, "y", r[0]);
    fedc_program_destroy(b);
    fedc_program_destroy(gb);
    return p;
}

typedef struct grouping {
    int clients, groups, sizes[8]; /* the clients after the groups are absent */
} grouping;

/* Whether each group's clients are all this rank's or none of them. */
static bool whole_groups_here(const fedc_executor *ex, const grouping *g) {
    int mine[256], n = fedc_executor_local_clients(ex, mine, 256), first = 0;
    for (int k = 0; k < g->groups; first += g->sizes[k++]) {
        int here = 0;
        for (int i = 0; i < n; i++) here += mine[i] >= first && mine[i] < first + g->sizes[k];
        if (here != 0 && here != g->sizes[k]) return false;
    }
    return true;
}

/* Runs p on the grouping; the MPI run's executor starts in 8 groups of its own
 * and takes g's with fedc_executor_set_groups (as fedc train's rounds do), the
 * other is created with g's. The outputs' bytes, one after another (malloc'd). */
static fedc_status run_grouped(const fedc_program *p, const grouping *g, bool mpi, int threads, const double *work,
                               const float *w, const float *x, char **out, size_t *bytes, int *nlocal) {
    fedc_executor *ex;
    int eight[8] = {1, 1, 1, 1, 1, 1, 1, g->clients - 7}, used = 0;
    uint8_t absent[256];
    for (int k = 0; k < g->groups; k++) used += g->sizes[k];
    for (int i = 0; i < g->clients; i++) absent[i] = i >= used;
    float a[8] = {1.5f, -0.5f, 2, 0.25f, -1, 0.75f, 3, -2};
    fedc_exec_options o = {.clients = g->clients, .threads = threads, .mpi = mpi, .groups = mpi ? 8 : g->groups,
                           .group_sizes = mpi ? eight : g->sizes};
    fedc_status st = fedc_executor_create(&ex, p, &o);
    if (st) return st;
    if (mpi) st = fedc_executor_set_groups(ex, g->groups, g->sizes);
    if (!st && work) st = fedc_executor_balance(ex, work);
    if (!st) st = fedc_executor_set_absent(ex, absent);
    if (!st && mpi) CHECK_MSG(whole_groups_here(ex, g), "rank %d: a group's clients are on two ranks", fedc_mpi_rank());
    *nlocal = fedc_executor_local_clients(ex, NULL, 0);
    fedc_executor_bind(ex, "w", w);
    fedc_executor_bind(ex, "x", x);
    fedc_executor_bind(ex, "a", a);
    if (!st) st = fedc_executor_run(ex);
    *bytes = 0;
    *out = NULL;
    for (int k = 0; !st && k < fedc_program_num_outputs(p); k++) {
        const void *data;
        fedc_type t;
        st = fedc_executor_output(ex, fedc_program_output_name(p, k), &data, &t);
        size_t n = fedc_type_bytes(&t) * (t.placement == FEDC_CLIENTS ? (size_t)g->clients
                                          : t.placement == FEDC_GROUPS ? (size_t)g->groups : 1);
        *out = realloc(*out, *bytes + n);
        memcpy(*out + *bytes, data, n);
        *bytes += n;
    }
    fedc_executor_destroy(ex);
    return st;
}

/* Groups of any sizes over 1, 2 and 3 ranks equal one process, bit for bit: 3 and
 * 7 groups of 10 clients (leaves of one client: each group whole on a rank), 5
 * groups of 150 clients whose edges are not all leaves' edges, 2 groups of more
 * than 64 clients (leaves of their own), clients in no group (absent), with the
 * ranks' work even (1 thread) or uneven (3 threads), the clients' values streamed
 * or stored. */
static void test_groups_equal_one_process(void) {
    static const grouping cases[] = {
        {10, 3, {4, 3, 3}},
        {10, 7, {2, 1, 2, 1, 1, 2, 1}},
        {12, 3, {3, 5, 1}},
        {150, 5, {40, 23, 37, 30, 20}},
        {150, 2, {100, 47}},
    };
    enum { DIM = 8 };
    float w[DIM], *x = malloc(150 * DIM * sizeof *x);
    double work[150];
    for (int j = 0; j < DIM; j++) w[j] = 0.3f * (float)j - 1;
    for (int i = 0; i < 150 * DIM; i++) x[i] = ((float)((i * 37) % 101) / 101.0f - 0.5f) * (float)(1 + (i / DIM) % 7);
    for (int i = 0; i < 150; i++) work[i] = 1 + (i % 23 == 3 ? 40 : i % 5);
    for (int keep = 0; keep <= 1; keep++) {
        fedc_program *p = grouped_program(DIM, keep);
        CHECK(p && !fedc_program_status(p));
        for (size_t c = 0; p && c < FEDC_COUNT_OF(cases); c++) {
            const grouping *g = &cases[c];
            char *a = NULL, *b = NULL;
            size_t na = 0, nb = 0;
            int nlocal = 0;
            CHECK_OK(run_grouped(p, g, false, 2, NULL, w, x, &a, &na, &nlocal));
            for (int balanced = 0; balanced <= 1; balanced++) {
                int threads = balanced ? 3 : 1;
                CHECK_OK(run_grouped(p, g, true, threads, balanced ? work : NULL, w, x, &b, &nb, &nlocal));
                CHECK_MSG(na == nb && na > 0 && memcmp(a, b, na) == 0,
                          "rank %d of %d: %d clients in %d groups (%s, %d threads, %s): differs from one process",
                          fedc_mpi_rank(), fedc_mpi_size(), g->clients, g->groups, keep ? "stored" : "streamed",
                          threads, balanced ? "balanced" : "even");
                /* the groups are shared out: no rank runs them all (the first case's 3 groups of 10) */
                if (c == 0 && fedc_mpi_size() > 1) CHECK_MSG(nlocal < g->clients, "rank %d runs every client", fedc_mpi_rank());
                free(b);
            }
            free(a);
        }
        fedc_program_destroy(p);
    }
    free(x);
}

/* mean(map(log(gather(table, idx)))) — a client whose index is out of range fails. */
static fedc_program *lookup_program(void) {
    fedc_program *body, *p;
    if (fedc_program_create(&body) || fedc_program_create(&p)) return NULL;
    fedc_value t = fedc_input(body, "table", fedc_type_make(FEDC_F32, 2, (int64_t[]){4, 2}));
    fedc_value i = fedc_input(body, "idx", fedc_type_make(FEDC_I32, 1, (int64_t[]){1}));
    fedc_program_output(body, "row", fedc_log(body, fedc_gather(body, t, i)));
    fedc_type tt = fedc_type_make(FEDC_F32, 2, (int64_t[]){4, 2}), it = fedc_type_make(FEDC_I32, 1, (int64_t[]){1});
    tt.placement = FEDC_SERVER, it.placement = FEDC_CLIENTS;
    fedc_value row;
    fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, fedc_input(p, "table", tt)), fedc_input(p, "idx", it)}, 2, &row);
    fedc_program_output(p, "mean", fedc_mean(p, row));
    fedc_program_destroy(body);
    return p;
}

static void test_failing_client(void) {
    fedc_program *p = lookup_program();
    float table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t idx[7] = {0, 1, 2, 3, 2, 9, 1}; /* client 5 fails: on the last rank of 2 or 3 */
    for (int drop = 0; drop <= 1; drop++) {
        fedc_executor *ex;
        fedc_exec_options o = {.clients = 7, .threads = 2, .mpi = true,
                               .on_client_failure = drop ? FEDC_DROP_CLIENT : FEDC_FAIL_ROUND};
        CHECK_OK(fedc_executor_create(&ex, p, &o));
        CHECK_OK(fedc_executor_bind(ex, "table", table));
        CHECK_OK(fedc_executor_bind(ex, "idx", idx));
        if (!drop) {
            CHECK_ERR(fedc_executor_run(ex), FEDC_ERANGE, "client 5: %2 (gather): gather: index 9");
        } else {
            CHECK_OK(fedc_executor_run(ex));
            int dropped[7];
            CHECK_EQ_INT(fedc_executor_dropped(ex, dropped, 7), 1);
            CHECK_EQ_INT(dropped[0], 5);
            const float *mean;
            CHECK_OK(fedc_executor_output(ex, "mean", (const void **)&mean, NULL));
            double want = 0;
            for (int i = 0; i < 7; i++) want += i == 5 ? 0 : log(table[2 * idx[i]]) / 6;
            CHECK_NEAR(mean[0], want, 1e-6);
        }
        fedc_executor_destroy(ex);
    }
    fedc_program_destroy(p);
}

static void test_agree(void) {
    int last = fedc_mpi_size() - 1;
    fedc_status mine = fedc_mpi_rank() == last ? fedc_error(FEDC_EIO, "disk on fire") : FEDC_OK;
    CHECK_ERR(fedc_mpi_agree(mine), FEDC_EIO, "disk on fire");
    if (fedc_mpi_size() > 1) CHECK_MSG(strstr(fedc_errmsg(), "rank") != NULL, "no rank in \"%s\"", fedc_errmsg());
    CHECK_OK(fedc_mpi_agree(FEDC_OK));
    int value = fedc_mpi_rank() == 0 ? 42 : -1;
    CHECK_OK(fedc_mpi_broadcast(&value, sizeof value));
    CHECK_EQ_INT(value, 42);
}

static void test_without_mpi_says_how(void) {
    if (fedc_mpi_built()) return;
    CHECK_ERR(fedc_mpi_init(), FEDC_EUNSUPPORTED, "built without MPI");
}

int main(int argc, char **argv) {
    /* Only under a launcher: a plain run stays one process without touching MPI. */
    if (fedc_mpi_built() && getenv("OMPI_COMM_WORLD_SIZE") && fedc_mpi_init()) {
        fprintf(stderr, "test_mpi: %s\n", fedc_errmsg());
        return 1;
    }
    static const fedc_test tests[] = {
        {"split over ranks equals one process", test_split_equals_one_process},
        {"balancing the ranks' work", test_balance},
        {"groups over ranks equal one process", test_groups_equal_one_process},
        {"a failing client", test_failing_client},
        {"ranks agree on failures", test_agree},
        {"without MPI: says how to enable it", test_without_mpi_says_how},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_mpi_finalize();
    return rc;
}
