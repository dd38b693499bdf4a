/* The MPI backend, and the process group it runs on (fedc_mpi_*; docs/mpi.md).
 *
 * Every rank runs the same program on the same server values; a map's clients are
 * split by leaves of the aggregations' tree (split.h), and each rank runs its
 * clients on its own threads (a threads backend inside). After them, the ranks:
 *  - agree: the lowest failing rank's status and message reach every rank, so all
 *    return the same error and none waits for a rank that gave up;
 *  - gather the clients' stored results and dropped flags (one MPI_Bcast per
 *    rank, of an indexed type that picks its clients' items in place);
 *  - join each aggregation: ranks 1.. send rank 0 the blocks of the tree they
 *    completed (src/exec/aggregate.c), headers first; rank 0 pushes its own and
 *    theirs in leaf order, which rebuilds the stack one process would have had,
 *    completes the aggregation and broadcasts it. So every rank gets the
 *    single-process bits, whichever rank ran which leaf. A robust aggregation
 *    (src/exec/aggregate_robust.c) keeps values, not sums: ranks 1.. send rank 0
 *    each of their clients' values, which it adds to its store in their places.
 *
 * MPI errors are returned as fedc errors (the communicator is a duplicate of
 * MPI_COMM_WORLD with MPI_ERRORS_RETURN), never aborted on. MPI is called only by
 * the thread that runs the executor (MPI_THREAD_FUNNELED), never by workers. The
 * ranks are assumed to share one byte order and type sizes (one kind of host). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend.h"
#include "fedc/exec.h"

#ifdef FEDC_HAVE_MPI
#include <mpi.h>

static MPI_Comm comm = MPI_COMM_NULL;
static int my_rank, my_size = 1;
static bool we_initialized;

static fedc_status mpi_error(int rc, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
    return fedc_error(FEDC_EIO, "MPI: %s failed: %s", what, text);
}

#define MPI_TRY(call, what)                                  \
    do {                                                     \
        int rc_ = (call);                                    \
        if (rc_ != MPI_SUCCESS) return mpi_error(rc_, what); \
    } while (0)

bool fedc_mpi_built(void) { return true; }
int fedc_mpi_rank(void) { return my_rank; }
int fedc_mpi_size(void) { return my_size; }

fedc_status fedc_mpi_init(void) {
    if (comm != MPI_COMM_NULL) return FEDC_OK;
    int ready = 0, provided = 0;
    MPI_Initialized(&ready);
    if (!ready) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) return fedc_error(FEDC_EIO, "MPI: MPI_Init_thread failed (error %d)", rc);
        we_initialized = true;
        if (provided < MPI_THREAD_FUNNELED)
            return fedc_error(FEDC_EUNSUPPORTED, "MPI: the library gives thread level %d; fedc needs FUNNELED", provided);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_TRY(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    MPI_TRY(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    MPI_TRY(MPI_Comm_rank(comm, &my_rank), "MPI_Comm_rank");
    MPI_TRY(MPI_Comm_size(comm, &my_size), "MPI_Comm_size");
    return FEDC_OK;
}

fedc_status fedc_mpi_finalize(void) {
    if (comm == MPI_COMM_NULL) return FEDC_OK;
    MPI_Comm_free(&comm);
    comm = MPI_COMM_NULL;
    my_rank = 0, my_size = 1;
    if (we_initialized) MPI_TRY(MPI_Finalize(), "MPI_Finalize");
    we_initialized = false;
    return FEDC_OK;
}

fedc_status fedc_mpi_agree(fedc_status st) {
    if (comm == MPI_COMM_NULL || my_size == 1) return st;
    int mine = st ? my_rank : INT_MAX, first = INT_MAX;
    MPI_TRY(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (agreeing on failures)");
    if (first == INT_MAX) return FEDC_OK;
    struct {
        int status;
        char msg[1000];
    } failure = {(int)st, ""};
    if (my_rank == first) snprintf(failure.msg, sizeof failure.msg, "%s", fedc_errmsg());
    MPI_TRY(MPI_Bcast(&failure, (int)sizeof failure, MPI_BYTE, first, comm), "MPI_Bcast (a failure)");
    return fedc_error((fedc_status)failure.status, "rank %d of %d: %s", first, my_size, failure.msg);
}

/* data from rank `root` to every rank, in pieces that an int counts. */
static fedc_status broadcast_from(void *data, size_t bytes, int root) {
    for (size_t done = 0; done < bytes;) {
        int n = bytes - done > INT_MAX / 2 ? INT_MAX / 2 : (int)(bytes - done);
        MPI_TRY(MPI_Bcast((char *)data + done, n, MPI_BYTE, root, comm), "MPI_Bcast");
        done += (size_t)n;
    }
    return FEDC_OK;
}

fedc_status fedc_mpi_broadcast(void *data, size_t bytes) {
    if (comm == MPI_COMM_NULL || my_size == 1) return FEDC_OK;
    return broadcast_from(data, bytes, 0);
}

/* ------------------------------------------------------------- backend -- */

typedef struct mpi_backend {
    fedc__backend base; /* first */
    fedc__backend *threads;
} mpi_backend;

static void run_block(fedc__backend *b, int64_t n, fedc_pool_task task, void *ctx) {
    fedc__backend *t = ((mpi_backend *)b)->threads;
    t->run(t, n, task, ctx);
}

static fedc_status agree(fedc__backend *b, fedc_status st) {
    (void)b;
    return fedc_mpi_agree(st);
}

/* The items of rank r's clients within n items of `bytes`: runs of leaves. */
static int owned_type(const fedc__split *s, int r, size_t bytes, MPI_Datatype *type) {
    int lens[FEDC__AGG_LEAVES], starts[FEDC__AGG_LEAVES], runs = 0;
    for (int j = 0; j < s->leaves; j++) {
        if (s->owner[j] != r) continue;
        int first = (int)fedc__agg_leaf_start(s->clients, j), end = (int)fedc__agg_leaf_start(s->clients, j + 1);
        if (runs && starts[runs - 1] + lens[runs - 1] == first) lens[runs - 1] += end - first;
        else starts[runs] = first, lens[runs] = end - first, runs++;
    }
    if (!runs) return -1;
    MPI_Datatype item;
    int rc = MPI_Type_contiguous((int)bytes, MPI_BYTE, &item);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_indexed(runs, lens, starts, item, type);
        MPI_Type_free(&item);
    }
    if (rc == MPI_SUCCESS && (rc = MPI_Type_commit(type)) != MPI_SUCCESS) MPI_Type_free(type);
    return rc;
}

static fedc_status allgather(fedc__backend *b, void *data, size_t bytes, const fedc__split *s) {
    if (bytes > INT_MAX) return fedc_error(FEDC_EUNSUPPORTED, "MPI: a client's result of %zu bytes is too large", bytes);
    for (int r = 0; r < b->ranks; r++) {
        MPI_Datatype type;
        int rc = owned_type(s, r, bytes, &type);
        if (rc < 0) continue; /* rank r runs no clients */
        if (rc == MPI_SUCCESS) {
            rc = MPI_Bcast(data, 1, type, r, comm);
            MPI_Type_free(&type);
        }
        if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Bcast (the clients' results)");
    }
    return FEDC_OK;
}

/* A tree block as it travels: where it is and what it holds; its sum follows. */
typedef struct block_header {
    int64_t first;
    int32_t level, clients;
    double weight;
} block_header;

static fedc_status send_blocks(const fedc__agg *a, int tag) {
    int depth = a->depth;
    block_header h[FEDC__AGG_MAX_DEPTH];
    for (int k = 0; k < depth; k++)
        h[k] = (block_header){a->stack[k].first, a->stack[k].level, a->stack[k].clients, a->stack[k].weight};
    MPI_TRY(MPI_Send(&depth, 1, MPI_INT, 0, tag, comm), "MPI_Send (partial sums)");
    MPI_TRY(MPI_Send(h, depth * (int)sizeof *h, MPI_BYTE, 0, tag, comm), "MPI_Send (partial sums)");
    for (int k = 0; k < depth; k++)
        if (a->stack[k].clients)
            MPI_TRY(MPI_Send(a->stack[k].data, (int)a->bytes, MPI_BYTE, 0, tag, comm), "MPI_Send (partial sums)");
    return FEDC_OK;
}

/* The blocks every rank holds for one aggregation, as rank 0 sees them. */
typedef struct blocks {
    int *depth, *next;  /* per rank: how many blocks, and the next to push */
    block_header *h;    /* rank r's at h + r * FEDC__AGG_MAX_DEPTH */
} blocks;

/* Rank 0: pushes rank `from`'s next block (its sum received into a buffer). A
 * failure is remembered, and the message still received, so no sender waits. */
static fedc_status receive_block(fedc__agg *a, const block_header *h, int from, int tag, fedc_status st) {
    fedc__partial p = {h->first, h->level, h->clients, h->weight, NULL};
    if (p.clients) {
        p.data = st ? NULL : fedc__agg_buffer(a);
        void *into = p.data ? p.data : a->out; /* after a failure: receive anyway, into out */
        MPI_TRY(MPI_Recv(into, (int)a->bytes, MPI_BYTE, from, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv (partial sums)");
        if (!p.data && !st) st = fedc_error(FEDC_ENOMEM, "MPI: out of memory for a partial sum of %zu bytes", a->bytes);
    }
    if (!st) return fedc__agg_push(a, p);
    fedc__agg_release(a, p.data);
    return st;
}

/* Rank 0: every rank's blocks, its own included, pushed in leaf order. */
static fedc_status gather_blocks(fedc__backend *b, fedc__agg *a, blocks *bl, int tag) {
    fedc__partial own[FEDC__AGG_MAX_DEPTH];
    int nown = a->depth;
    memcpy(own, a->stack, (size_t)nown * sizeof *own);
    bl->depth[0] = nown;
    for (int k = 0; k < nown; k++)
        bl->h[k] = (block_header){own[k].first, own[k].level, own[k].clients, own[k].weight};
    for (int r = 1; r < b->ranks; r++) {
        MPI_TRY(MPI_Recv(&bl->depth[r], 1, MPI_INT, r, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv (partial sums)");
        if (bl->depth[r] < 0 || bl->depth[r] > FEDC__AGG_MAX_DEPTH)
            return fedc_error(FEDC_EINTERNAL, "MPI: rank %d sent %d blocks", r, bl->depth[r]);
        MPI_TRY(MPI_Recv(bl->h + (size_t)r * FEDC__AGG_MAX_DEPTH, bl->depth[r] * (int)sizeof *bl->h, MPI_BYTE, r, tag,
                         comm, MPI_STATUS_IGNORE), "MPI_Recv (partial sums)");
    }
    fedc_status st = FEDC_OK;
    for (int r = 0; r < b->ranks; r++) bl->next[r] = 0;
    a->depth = 0; /* its own blocks are in `own`, to be pushed again in turn */
    for (;;) {
        int from = -1;
        for (int r = 0; r < b->ranks; r++)
            if (bl->next[r] < bl->depth[r] &&
                (from < 0 || bl->h[(size_t)r * FEDC__AGG_MAX_DEPTH + bl->next[r]].first <
                                 bl->h[(size_t)from * FEDC__AGG_MAX_DEPTH + bl->next[from]].first))
                from = r;
        if (from < 0) return st;
        int k = bl->next[from]++;
        if (from == 0) {
            if (!st) st = fedc__agg_push(a, own[k]);
            else fedc__agg_release(a, own[k].data);
        } else {
            st = receive_block(a, bl->h + (size_t)from * FEDC__AGG_MAX_DEPTH + k, from, tag, st);
        }
    }
}

/* A robust aggregation's client value as it travels: whose, and its weight; the
 * value follows. */
typedef struct row_header {
    int64_t client;
    double weight;
} row_header;

typedef struct row_send {
    size_t bytes;
    int tag;
} row_send;

static fedc_status send_row(void *ctx, int64_t i, const void *x, double w) {
    const row_send *s = ctx;
    row_header h = {i, w};
    MPI_TRY(MPI_Send(&h, (int)sizeof h, MPI_BYTE, 0, s->tag, comm), "MPI_Send (a client's value)");
    MPI_TRY(MPI_Send(x, (int)s->bytes, MPI_BYTE, 0, s->tag, comm), "MPI_Send (a client's value)");
    return FEDC_OK;
}

/* Ranks 1..: the counts, then every client value this rank's store holds. */
static fedc_status send_rows(fedc__agg *a, int tag) {
    int64_t n[2] = {0, 0}; /* seen, values */
    row_send s = {a->bytes, tag};
    fedc_status st = fedc__agg_robust_each(a, &n[0], &n[1], NULL, NULL);
    if (st) n[0] = n[1] = -1; /* rank 0 learns of it through the agreement */
    MPI_TRY(MPI_Send(n, 2, MPI_INT64_T, 0, tag, comm), "MPI_Send (the clients' values)");
    return st ? st : fedc__agg_robust_each(a, &n[0], &n[1], send_row, &s);
}

/* Rank 0: every other rank's client values, added in their places. A failure is
 * remembered, and the messages still received, so no sender waits. */
static fedc_status gather_rows(fedc__backend *b, fedc__agg *a, int tag) {
    fedc_status st = FEDC_OK;
    void *row = fedc__agg_buffer(a);
    if (!row) return fedc_error(FEDC_ENOMEM, "MPI: out of memory for a client's value of %zu bytes", a->bytes);
    for (int r = 1; r < b->ranks; r++) {
        int64_t n[2];
        MPI_TRY(MPI_Recv(n, 2, MPI_INT64_T, r, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv (the clients' values)");
        if (n[1] < 0 && !st) st = fedc_error(FEDC_EINTERNAL, "MPI: rank %d could not send its clients' values", r);
        for (int64_t j = 0; j < n[1]; j++) {
            row_header h;
            MPI_TRY(MPI_Recv(&h, (int)sizeof h, MPI_BYTE, r, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv (a client's value)");
            MPI_TRY(MPI_Recv(row, (int)a->bytes, MPI_BYTE, r, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv (a client's value)");
            float w = (float)h.weight;
            if (!st) st = fedc__agg_robust_add(a, h.client, row, &w);
        }
        if (!st && n[1] >= 0) st = fedc__agg_robust_holes(a, n[0] - n[1]);
    }
    fedc__agg_release(a, row);
    return st;
}

/* An aggregation up to the groups when the ranks run whole groups (split.h):
 * each rank ends the trees of its groups, the single-process bits, and each run
 * of one rank's groups goes from it to every rank. */
static fedc_status share_groups(fedc__agg *a, const fedc__split *s) {
    fedc_status st = fedc_mpi_agree(fedc__agg_end(a));
    for (int g = 0, end; !st && g < a->groups; g = end) {
        int from = fedc__split_group_owner(s, a->group_start, g);
        for (end = g + 1; end < a->groups && fedc__split_group_owner(s, a->group_start, end) == from;) end++;
        st = broadcast_from(a->out_base + (size_t)g * a->bytes, (size_t)(end - g) * a->bytes, from);
    }
    return st;
}

static fedc_status combine(fedc__backend *b, fedc__agg *const *aggs, int n, const fedc__split *s) {
    blocks bl = {NULL, NULL, NULL};
    if (b->rank == 0) {
        bl.h = fedc_malloc((size_t)b->ranks * (FEDC__AGG_MAX_DEPTH * sizeof *bl.h + 2 * sizeof(int)));
        bl.depth = bl.h ? (int *)(bl.h + (size_t)b->ranks * FEDC__AGG_MAX_DEPTH) : NULL;
        bl.next = bl.h ? bl.depth + b->ranks : NULL;
    }
    fedc_status st = fedc_mpi_agree(b->rank == 0 && !bl.h ? fedc_error(FEDC_ENOMEM, "MPI: out of memory") : FEDC_OK);
    for (int i = 0; !st && i < n; i++) {
        fedc__agg *a = aggs[i];
        if (a->bytes > INT_MAX) {
            st = fedc_error(FEDC_EUNSUPPORTED, "MPI: an aggregate of %zu bytes is too large", a->bytes);
            break;
        }
        if (s->by_group && a->grouped) {
            st = share_groups(a, s);
            continue;
        }
        if (a->op == FEDC_OP_ROBUST_AGGREGATE) st = b->rank != 0 ? send_rows(a, i) : gather_rows(b, a, i);
        else st = b->rank != 0 ? send_blocks(a, i) : gather_blocks(b, a, &bl, i);
        if (b->rank == 0 && !st) st = fedc__agg_end(a);
        /* rank 0's outcome, then its result, for everyone */
        st = fedc_mpi_agree(b->rank == 0 ? st : FEDC_OK);
        if (!st) {
            int rc = MPI_Bcast(a->out, (int)a->bytes, MPI_BYTE, 0, comm);
            if (rc != MPI_SUCCESS) st = mpi_error(rc, "MPI_Bcast (an aggregate)");
        }
    }
    fedc_free(bl.h);
    return st;
}

static void destroy_mpi(fedc__backend *b) {
    fedc__backend_destroy(((mpi_backend *)b)->threads);
    fedc_free(b);
}

fedc_status fedc__backend_mpi(fedc__backend **out, int workers) {
    *out = NULL;
    if (comm == MPI_COMM_NULL) return fedc_error(FEDC_EINVAL, "MPI backend: call fedc_mpi_init first");
    mpi_backend *m = fedc_calloc(1, sizeof *m);
    if (!m) return fedc_error(FEDC_ENOMEM, "backend: out of memory");
    fedc_status st = fedc__backend_threads(&m->threads, workers);
    if (st) {
        fedc_free(m);
        return st;
    }
    m->base = (fedc__backend){"mpi", workers, my_rank, my_size, run_block, agree, allgather, combine, destroy_mpi};
    *out = &m->base;
    return FEDC_OK;
}

#else /* built without MPI: one process, and a clear answer to anyone asking for more */

bool fedc_mpi_built(void) { return false; }
int fedc_mpi_rank(void) { return 0; }
int fedc_mpi_size(void) { return 1; }

fedc_status fedc_mpi_init(void) {
    return fedc_error(FEDC_EUNSUPPORTED, "fedc was built without MPI: install Open MPI (scripts/install-deps installs "
                                         "openmpi-bin and libopenmpi-dev) and rebuild (cmake -DFEDC_MPI=ON)");
}
fedc_status fedc_mpi_finalize(void) { return FEDC_OK; }
fedc_status fedc_mpi_agree(fedc_status st) { return st; }
fedc_status fedc_mpi_broadcast(void *data, size_t bytes) {
    (void)data, (void)bytes;
    return FEDC_OK;
}

fedc_status fedc__backend_mpi(fedc__backend **out, int workers) {
    (void)workers;
    *out = NULL;
    return fedc_mpi_init();
}

#endif
