/* executor_plan.h — the executor's state, shared by the files that plan it
 * (internal).
 *
 * The executor plans a program's memory once, then runs it without allocating:
 *  - plan_memory.c decides where every value lives (its placement and an offset in
 *    one block, by liveness);
 *  - plan_fusion.c finds the chains that run as one kernel (a conv2d with its
 *    bias, relu and pool; elementwise pairs and an SGD step fused with its matmul)
 *    and the forward ops that save bytes for their derivatives (dropout's mask,
 *    max-pool's argmax);
 *  - executor.c creates, runs and reads the executor (maps, folds, results). */
#ifndef FEDC_EXEC_EXECUTOR_PLAN_H
#define FEDC_EXEC_EXECUTOR_PLAN_H

#include "exec/cohort.h"
#include "exec/device.h"

#define ALIGN 64

typedef enum mem_kind { MEM_NONE, MEM_BOUND, MEM_CONSTANT, MEM_BLOCK, MEM_ALIAS, MEM_STREAMED } mem_kind;

/* A conv2d node that runs with an epilogue (kernels' conv2d_bias_relu): it writes
 * `out`, the last value of its chain conv2d -> add(bias) [-> relu] [-> max_pool2d];
 * or a matmul node (kernels' matmul_bias) that writes `out`, its add(bias), and
 * `act`, a gelu of that add, when set. */
typedef struct epilogue {
    fedc_value out; /* FEDC_NONE: the node heads no chain */
    fedc_value bias;
    int relu, pool; /* pool: out is a max_pool2d */
    fedc_value act; /* a matmul's: the gelu it writes too, or FEDC_NONE */
} epilogue;

typedef struct value_plan {
    mem_kind kind;
    size_t offset;         /* MEM_BLOCK */
    size_t stride;         /* clients values: bytes from one client's copy to the next */
    fedc_value fused_into; /* an aggregation computed by this map, or FEDC_NONE */
    fedc_value def;        /* the step that writes it */
    fedc_value pair;       /* the elementwise operand computed in this node's pass (plan_pairs), or FEDC_NONE */
    fedc_value product;    /* a pair's matmul or max-pool gradient computed in the same pass (plan_pairs,
                              plan_pool_select), or FEDC_NONE */
    fedc_value saved;      /* the node whose saved bytes it reads (itself: it saves them; plan_saved), or FEDC_NONE */
    size_t saved_offset;   /* a node that saves bytes (fedc__saved_bytes): where, in the block */
    bool by_group;         /* a broadcast_down to the clients read only by maps: an alias of the groups
                              value, client i reading its group's copy (hierarchy.c) */
} value_plan;

/* The per-node lists of a map or a fold (arguments, result memory, the fused
 * aggregations) and a per-client op's operands for client 0, sized when the
 * executor is created for its widest node, so runs never allocate. */
typedef struct node_lists {
    int width;
    const void **base, **args;
    size_t *arg_stride, *dest_bytes;
    void **dest, **agg_out;
    fedc__agg **aggs; /* the map's aggregations' accumulators (fedc_executor.aggs) */
    const fedc__node **agg_nodes;
    fedc__source *x_src, *w_src;
    uint8_t *by_group; /* a map's: per argument, read by group (value_plan.by_group) */
} node_lists;

struct fedc_executor {
    fedc_program *p; /* our own copy */
    const fedc__device *device; /* runs its kernels, and allocates the block, scratch and carries */
    const fedc__kernels *k;     /* the device's */
    fedc_exec_options opt;
    int clients;
    value_plan *plan;
    epilogue *epi; /* per value, or NULL when no chain was found */
    const void **bound;
    void **into; /* per value: where the caller has this output computed (fedc__executor_compute_into), or NULL */
    const void **operands;
    size_t *strides;
    node_lists lists;
    unsigned char *block;
    size_t block_bytes, unplanned_bytes;
    void *scratch;
    size_t scratch_bytes;
    fedc__backend *backend; /* runs clients in parallel */
    fedc__split split;      /* which rank runs which leaves of the cohort */
    int *local, nlocal;     /* the clients this process runs, in increasing order */
    double *work;           /* per client: its map body's work (fedc_executor_balance), or NULL */
    double *work_copy;      /* where work points when set; allocated once */
    fedc_pool *kernel_pool; /* threads no client uses, lent to the kernels (a program without maps) */
    fedc__cohort **cohorts; /* per value: the runner of a map node */
    fedc_executor **folds;  /* per value: the executor of a fold node's body */
    unsigned char **carries; /* per value: a fold's carries between steps */
    uint8_t *dropped;       /* per client, this run */
    uint8_t *absent;        /* per client: not in the cohort (fedc_executor_set_absent) */
    fedc__agg **aggs;       /* per value: the accumulator of an aggregation node */
    int groups;             /* the hierarchy (hierarchy.c): this run's groups; 1 when none are given */
    int max_groups;         /* the most a run has (options.groups, or 1): @groups values hold this many */
    int *group_start;       /* max_groups + 1: group g's clients are [group_start[g], group_start[g + 1]); the
                               clients from group_start[groups] on are in no group (absent) */
    int *group_local;       /* 0, 1, ..., max_groups - 1: the places a map at the groups runs */
    int *client_group;      /* clients: each client's group (the last one for those in none) */
    uint8_t *group_none;    /* max_groups zeros: no group is dropped or absent */
    double *op_seconds;     /* with options.profile: per op kind, over all runs */
    int64_t *op_calls;
};

/* ------------------------------------------------------------ planning -- */

static inline bool fedc__is_aggregation(fedc__op op) {
    return op == FEDC_OP_SUM || op == FEDC_OP_MEAN || op == FEDC_OP_WEIGHTED_MEAN || op == FEDC_OP_ROBUST_AGGREGATE ||
           op == FEDC_OP_SUM_UP || op == FEDC_OP_MEAN_UP || op == FEDC_OP_WEIGHTED_MEAN_UP;
}
static inline size_t fedc__round_up(size_t n) { return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1); }

bool fedc__is_output(const fedc_program *p, fedc_value v);
/* A value's bytes, all clients' copies for a clients value. */
size_t fedc__value_bytes(const fedc_executor *ex, fedc_value v);
/* u is one local element of dtype dt (a pair's scalar operand). */
bool fedc__scalar_of(const fedc_program *p, fedc_value u, fedc_dtype dt);

/* The bytes node v saves for its derivatives (plan_saved): one per element of its
 * value, a softmax cross-entropy's two floats per row, or an attention's weights
 * (a float per head, query and key). */
size_t fedc__saved_bytes(const fedc_program *p, fedc_value v);

/* Which clients this process runs (ex->split, ex->local): whole leaves of the
 * cohort's tree, balanced by ex->work when set; whole groups when the cohort is
 * in groups (split.h). Again whenever the groups or the work change. */
void fedc__executor_split(fedc_executor *ex);

/* The hierarchy (hierarchy.c): reads the groups from the options (at create),
 * frees them; checks before a run that the clients in no group are absent; runs a node of the hierarchy (a primitive of a level, or an array op
 * on @groups values: true in fedc__hier_runs) and prepares a map at the groups. */
fedc_status fedc__hier_create(fedc_executor *ex);
void fedc__hier_destroy(fedc_executor *ex);
fedc_status fedc__hier_check_run(const fedc_executor *ex);
bool fedc__hier_runs(const fedc__node *n);
fedc_status fedc__hier_run(fedc_executor *ex, fedc__step *s);
void fedc__hier_map_job(const fedc_executor *ex, fedc__map_job *job);
/* Plans broadcast_down to the clients as a by-group alias when only maps read it. */
void fedc__hier_plan_placement(fedc_executor *ex);

/* The passes, in order: placement (every value's kind and stride), epilogues,
 * pairs, saved bytes and pool gradients in pairs (fusion), then memory (offsets,
 * block and scratch sizes). */
void fedc__plan_placement(fedc_executor *ex);
fedc_status fedc__plan_epilogues(fedc_executor *ex);
void fedc__plan_pairs(fedc_executor *ex);
void fedc__plan_saved(fedc_executor *ex);
void fedc__plan_pool_select(fedc_executor *ex);
fedc_status fedc__plan_memory(fedc_executor *ex);

#endif
