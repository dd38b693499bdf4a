/* exec.h — what the executor, the cohort runner and the per-op dispatch share
 * (internal). */
#ifndef FEDC_EXEC_INTERNAL_H
#define FEDC_EXEC_INTERNAL_H

#include "fedc/exec.h"
#include "ir/ir.h"
#include "kernels/kernels.h"

/* One step of a run: a node with its operand and result memory, for one client
 * when the node computes on clients values. */
typedef struct fedc__step {
    const fedc_program *p;
    fedc_value v;
    const fedc__node *n;
    const fedc__kernels *k;
    void *out;
    const void *const *in; /* n->nin operand pointers */
    void *scratch;         /* fedc__step_scratch(...) bytes */
    int clients;           /* the cohort's size */
    const size_t *in_stride; /* per operand: bytes from one client's value to the next (0: shared) */
    const uint8_t *dropped;  /* per client: left out of aggregates in this run */
    struct fedc__agg *agg;   /* sum, mean, weighted_mean: the node's accumulator */
} fedc__step;

/* Has the program's output j computed straight into `to` at the next runs when
 * the executor computes it into memory of its own (not an input passed through,
 * not a map's or fold's result, not fused into another node's computation; then
 * the caller copies it from fedc_executor_output as before). A fold's body writes
 * its new carries into the next step's carries, a map's body its results into the
 * cohort's result slot: for the EMNIST CNN each saves copying 4.8 MB of
 * parameters, at every SGD step and for every client. */
void fedc__executor_compute_into(fedc_executor *ex, int j, void *to);

/* Runs one node's kernel. */
fedc_status fedc__step_run(const fedc__step *s);

/* Runs a conv2d node s with the kernels' conv2d_bias_relu epilogue (pool: the
 * chain's max_pool2d node, or NULL): s->out is where the chain's last value goes. */
fedc_status fedc__step_run_conv_epilogue(const fedc__step *s, const void *bias, int relu, const fedc__node *pool);

/* Runs node s with saved bytes (fedc__saved_bytes of the saving node): save, s
 * writes them (a dropout its mask, a max_pool2d its argmax, a softmax_xent its
 * rows' max and sum, a causal_attention its softmax weights: the kernels'
 * dropout_save, max_pool2d_save, softmax_xent_save, causal_attention_save);
 * otherwise s reads what an earlier node saved (dropout_apply on the same mask,
 * max_pool2d_grad_apply, softmax_xent_grad_apply, causal_attention_grad_apply). */
fedc_status fedc__step_run_saved(const fedc__step *s, uint8_t *bytes, bool save);

/* Runs a matmul node s that is one product (a 2-D b; a 2-D a or a batched,
 * untransposed one) with the kernels' matmul_bias: s->out = the product + bias,
 * and act = gelu(s->out) unless act is NULL (executor.c, plan_epilogues). */
fedc_status fedc__step_run_matmul_bias(const fedc__step *s, const void *bias, void *act);

/* Runs a 2-D matmul node s with the kernels' matmul_sub_scaled: s->out = w -
 * scale * (the product), an SGD step on a weight gradient (executor.c, plan_pairs). */
fedc_status fedc__step_run_matmul_sub_scaled(const fedc__step *s, const void *w, const void *scale);
/* Runs a max_pool2d_grad node s from its saved argmax inside a select pair
 * (max_pool2d_grad_select_gt): s->out = x > *gt ? the gradient : *otherwise. */
fedc_status fedc__step_run_pool_grad_select(const fedc__step *s, const uint8_t *arg, const void *x, const void *gt,
                                           const void *otherwise);

/* Scratch bytes the node's kernel needs (0 for most ops). */
size_t fedc__step_scratch(const fedc__kernels *k, const fedc_program *p, const fedc__node *n);

fedc__kshape fedc__kshape_of(const fedc_type *t);

/* The leaves of every sum over clients (src/exec/aggregate.c): min(clients,
 * FEDC__AGG_LEAVES) blocks of consecutive clients, leaf j = [n j / L, n (j+1) / L). */
enum { FEDC__AGG_LEAVES = 64 };

static inline int fedc__agg_leaves(int64_t clients) {
    return clients < FEDC__AGG_LEAVES ? (int)clients : FEDC__AGG_LEAVES;
}
static inline int64_t fedc__agg_leaf_start(int64_t clients, int j) {
    return clients * j / fedc__agg_leaves(clients);
}
static inline int fedc__agg_leaf_of(int64_t clients, int64_t i) {
    return (int)(((i + 1) * fedc__agg_leaves(clients) - 1) / clients);
}

/* One block of an aggregation's tree: the leaves [first, first + 2^level), of
 * whose clients `clients` were added (the others were dropped or are not there). */
typedef struct fedc__partial {
    int64_t first;
    int level;
    int clients;
    double weight; /* weighted_mean: the sum of their weights */
    void *data;    /* the sum of their values; NULL when clients == 0; the
                    * aggregation's `out` for the block that starts at leaf 0 */
} fedc__partial;

/* The blocks a process holds at once: a binary counter over at most 64 leaves,
 * or one block per leaf of a rank's (FEDC__AGG_LEAVES at most). */
enum { FEDC__AGG_MAX_DEPTH = FEDC__AGG_LEAVES + 8 };

/* An aggregation in progress (sum, mean or weighted_mean of one node): a fixed
 * tree over client indices (src/exec/aggregate.c), kept as the leaf being summed
 * and a stack of the blocks that still wait for their sibling. */
typedef struct fedc__agg {
    fedc__op op;
    fedc_dtype dtype;
    int64_t count; /* elements of the value */
    size_t bytes;  /* of the value */
    void *out;     /* the server value it ends in */
    int64_t clients;      /* the cohort's size */
    fedc__partial leaf;   /* the open leaf, when open */
    bool open;
    int64_t next;         /* the open leaf's next client */
    fedc__partial stack[FEDC__AGG_MAX_DEPTH];
    int depth;
    void *spare[FEDC__AGG_MAX_DEPTH + 2]; /* buffers for partial sums, kept for the next run */
    int nspare;
    fedc_robust robust_settings;       /* robust_aggregate: its aggregator */
    fedc__robust_attack robust_attack; /* and its attack (none, ALIE, IPM), with its setting */
    double robust_attack_value;
    struct fedc__robust_rows *robust; /* and every client's value, kept (aggregate_robust.c) */
    int *robust_kept;                 /* the clients its last run's Krum, Multi-Krum or Bulyan kept */
    int robust_nkept;
    /* robust_aggregate with an attack (ALIE, IPM: fedc__robust_aggregate_attacked):
     * its flags (client i's f32 at robust_flags + i * robust_flags_stride) and its
     * centre (d floats, or NULL), for the whole cohort, set by whoever runs the node
     * before each run (fedc__agg_robust_attackers) and read at its end. */
    const void *robust_flags;
    size_t robust_flags_stride;
    const float *robust_center;
    /* and its zeroing, if it has one: the bound, the update's leaves' sizes and their count */
    const float *robust_zero_bound;
    const int32_t *robust_zero_sizes;
    int64_t robust_zero_leaves;
    /* An aggregation up from the clients to the groups (sum_up, mean_up,
     * weighted_mean_up of a @clients value) is one aggregation per group, run in
     * turn as the clients come: group g's clients [group_start[g], group_start[g +
     * 1]) into out_base + g * bytes (hierarchy.c). The executor sets group_start
     * and groups; `group` is the group being summed. A group no client of this
     * process reached (`touched` false: under MPI, another rank's group) is not
     * ended here: its owner ends it and the backend sends it on. */
    const int *group_start;
    int groups, group;
    bool grouped, touched;
    unsigned char *out_base;
} fedc__agg;

/* Begins an aggregation of node n over a cohort of `clients`, into `out`. */
FEDC_INTERNAL_API void fedc__agg_begin(fedc__agg *a, const fedc__node *n, int64_t clients, void *out);
/* Begins a sum, mean or weighted_mean of `count` elements of dt that is no node's
 * (a statistic robust_aggregate's store computes: the same tree, the same bits). */
void fedc__agg_begin_as(fedc__agg *a, fedc__op op, fedc_dtype dt, int64_t count, int64_t clients, void *out);
/* Adds client i's value x (and its weight w, for weighted_mean); x NULL: client i
 * is left out. Clients come in increasing order, every client of a leaf, and the
 * leaves whole (a process may skip whole leaves: another rank sums them). */
FEDC_INTERNAL_API fedc_status fedc__agg_add(fedc__agg *a, int64_t i, const void *x, const void *w);
/* Closes the open leaf: after it, the stack holds every block summed here. */
FEDC_INTERNAL_API fedc_status fedc__agg_close(fedc__agg *a);
/* Adds a block summed elsewhere (another rank), after the blocks before it; a
 * takes p.data, which must come from fedc__agg_buffer(a). */
FEDC_INTERNAL_API fedc_status fedc__agg_push(fedc__agg *a, fedc__partial p);
/* A buffer of the value's size for a partial sum (NULL when out of memory). */
FEDC_INTERNAL_API void *fedc__agg_buffer(fedc__agg *a);
/* Gives a partial sum's buffer back (never `out`). */
void fedc__agg_release(fedc__agg *a, void *data);
/* Combines the blocks into `out` (and divides, for the means). */
FEDC_INTERNAL_API fedc_status fedc__agg_end(fedc__agg *a);
FEDC_INTERNAL_API void fedc__agg_free(fedc__agg *a);

/* robust_aggregate's side of the above (src/exec/aggregate_robust.c): the values
 * are kept, not summed, and aggregated by the node's robust aggregator at the end. */
fedc_status fedc__agg_robust_add(fedc__agg *a, int64_t i, const void *x, const void *w);
fedc_status fedc__agg_robust_end(fedc__agg *a);
void fedc__agg_robust_free(fedc__agg *a);
/* Over MPI (src/exec/backend_mpi.c): *seen, the clients added here (values or
 * holes), *values, those with a value; and give(ctx, client, value, weight) for
 * each of those, in client order (give NULL: the counts only). */
fedc_status fedc__agg_robust_each(fedc__agg *a, int64_t *seen, int64_t *values,
                                  fedc_status (*give)(void *ctx, int64_t i, const void *x, double w), void *ctx);
/* Rank 0: `holes` clients another rank added without a value (dropped). */
fedc_status fedc__agg_robust_holes(fedc__agg *a, int64_t holes);
/* Node n's (of p) attack operands, if it has them (a robust_aggregate of 3 to 6
 * operands, fedc__robust_operands_of), where the cohort's copies are: in[k] at
 * stride[k] per client. */
void fedc__agg_robust_attackers(fedc__agg *a, const fedc_program *p, const fedc__node *n, const void *const *in,
                                const size_t *stride);

/* ALIE's or IPM's value for the flagged clients of a store's cohort, the
 * zeroing after it, and cclip's centre taken off every value
 * (src/exec/aggregate_attack.c). The store's rows are read through set (the
 * reported clients, client[j] the cohort place of the j-th, of `clients`) and
 * written back through write, a block at a time. */
typedef struct fedc__robust_attack_job {
    const struct fedc__robust_set *set;
    const int *client;
    int64_t clients;
    fedc__robust_attack attack;
    double value;
    const void *flags; /* f32, client i's at flags + i * flags_stride */
    size_t flags_stride;
    const float *center; /* or NULL */
    /* a zeroing (sizes NULL: none): the bound, and the leaves' sizes (`leaves` of
     * them, adding up to set->d); each row's flag is its number set->d */
    float bound;
    const int32_t *sizes;
    int64_t leaves;
    fedc_status (*write)(void *ctx, int j, int64_t lo, int64_t count, const float *from);
    void *write_ctx;
} fedc__robust_attack_job;
/* The attack (and zeroing, and centre) into the rows; *zeroed: the clients zeroed. */
fedc_status fedc__robust_attack_rows(const fedc__robust_attack_job *job, int *zeroed);
/* out (set->d floats) = the weighted mean of the rows by the set's weights, in
 * the weighted_mean op's tree over the cohort (a mean after an attack). */
fedc_status fedc__robust_mean_rows(const fedc__robust_attack_job *job, float *out);
/* The updates robust_aggregate's stores have written to their files, in this
 * process (for the tests: a budget that spills, and bits that do not change). */
extern int64_t fedc__robust_spilled;

#endif
