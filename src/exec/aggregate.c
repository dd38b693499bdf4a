/* Aggregation over clients: sum, mean and weighted mean, in a fixed order: a
 * running sum over each leaf, then a binary tree over the leaves.
 *
 * Floating-point addition is not associative, so the order of a sum decides its
 * bits. fedc fixes the order by the cohort's size and the client indices alone.
 * The cohort [0, n) is cut into L = min(n, 64) leaves of consecutive clients
 * (leaf j = [n j / L, n (j+1) / L), exec.h); a leaf's sum is its clients' values
 * added in index order; the sum of the aligned block of leaves [k 2^j, (k+1) 2^j)
 * is the sum of its left half plus the sum of its right half, and the total is
 * the sum of the blocks that tile [0, L) (the binary digits of L, largest first),
 * added left to right. A stream of leaves in increasing order computes it with a
 * stack: push each closed leaf as a block of one, and while the two blocks on top
 * are siblings, replace them by their sum (a binary counter).
 *
 * Why this shape. Ranks of an MPI run sum different leaves at the same time: a
 * leaf is the unit a rank runs, and a rank's stack holds complete blocks of the
 * tree, which it hands to rank 0, who pushes every rank's blocks in leaf order
 * (fedc__agg_push) and so rebuilds exactly the stack one process would have had:
 * the result is bitwise the same for any number of threads and ranks, and for any
 * assignment of leaves to ranks. Memory is bounded whatever the cohort: the open
 * leaf and at most log2(64) + 1 waiting blocks, the first of them summed in place
 * in the aggregation's own output. (A binary tree over clients, as before, needed
 * log2(clients) partial sums; one running sum over all clients could not be split
 * among ranks without waiting.) Pairwise sums over the leaves are also more
 * accurate than one running sum. */
#include <string.h>

#include "exec/exec.h"

void fedc__agg_release(fedc__agg *a, void *data) {
    if (data && data != a->out) a->spare[a->nspare++] = data;
}

/* Forgets the tree in progress and starts one over `clients` into `out`. */
static void restart(fedc__agg *a, int64_t clients, void *out) {
    for (int k = 0; k < a->depth; k++) fedc__agg_release(a, a->stack[k].data);
    if (a->open) fedc__agg_release(a, a->leaf.data);
    a->out = out;
    a->clients = clients;
    a->open = false;
    a->depth = 0;
    a->touched = false;
}

/* The hierarchy's aggregations up a level run the flat op's arithmetic. */
static fedc__op flat_op(fedc__op op) {
    switch (op) {
    case FEDC_OP_SUM_UP: return FEDC_OP_SUM;
    case FEDC_OP_MEAN_UP: return FEDC_OP_MEAN;
    case FEDC_OP_WEIGHTED_MEAN_UP: return FEDC_OP_WEIGHTED_MEAN;
    default: return op;
    }
}

void fedc__agg_begin(fedc__agg *a, const fedc__node *n, int64_t clients, void *out) {
    a->grouped = n->op != flat_op(n->op) && n->type.placement == FEDC_GROUPS;
    if (a->grouped) { /* group 0 first; fedc__agg_add moves on to the next groups */
        a->group = 0;
        a->out_base = out;
        clients = a->group_start[1];
    }
    fedc__agg_begin_as(a, flat_op(n->op), n->type.dtype, fedc_type_count(&n->type), clients, out);
    if (n->op == FEDC_OP_ROBUST_AGGREGATE) a->robust_settings = fedc__robust_of(n);
    a->robust_attack = n->op == FEDC_OP_ROBUST_AGGREGATE ? fedc__robust_attack_of(n, &a->robust_attack_value)
                                                         : FEDC__ROBUST_ATTACK_NONE;
}

void fedc__agg_begin_as(fedc__agg *a, fedc__op op, fedc_dtype dt, int64_t count, int64_t clients, void *out) {
    restart(a, clients, out);
    a->op = op;
    a->dtype = dt;
    a->count = count;
    size_t bytes = (size_t)a->count * fedc_dtype_size(a->dtype);
    if (bytes != a->bytes) { /* buffers of another size are of no use */
        for (int k = 0; k < a->nspare; k++) fedc_free(a->spare[k]);
        a->nspare = 0;
    }
    a->bytes = bytes;
    fedc__agg_robust_free(a);
}

void fedc__agg_free(fedc__agg *a) {
    for (int k = 0; k < a->depth; k++) fedc__agg_release(a, a->stack[k].data);
    if (a->open) fedc__agg_release(a, a->leaf.data);
    for (int k = 0; k < a->nspare; k++) fedc_free(a->spare[k]);
    a->depth = a->nspare = 0;
    a->open = false;
    fedc__agg_robust_free(a);
    fedc_free(a->robust_kept);
    a->robust_kept = NULL, a->robust_nkept = 0;
}

void *fedc__agg_buffer(fedc__agg *a) {
    if (a->nspare) return a->spare[--a->nspare];
    return fedc_malloc(a->bytes ? a->bytes : 1);
}

/* out = out + scale * x, in the element type (scale 1: out + x exactly). */
static void accumulate(fedc_dtype dt, int64_t n, void *out, const void *x, double scale) {
    if (dt == FEDC_F32) {
        float *o = out, s = (float)scale;
        const float *v = x;
        for (int64_t i = 0; i < n; i++) o[i] += s * v[i];
    } else if (dt == FEDC_F64) {
        double *o = out;
        const double *v = x;
        for (int64_t i = 0; i < n; i++) o[i] += scale * v[i];
    } else { /* i32 sums wrap, as integer arithmetic does everywhere in fedc */
        int32_t *o = out;
        const int32_t *v = x;
        for (int64_t i = 0; i < n; i++) o[i] = (int32_t)((uint32_t)o[i] + (uint32_t)v[i]);
    }
}

/* out = scale * x: one client's term of the sum. */
static void scaled_copy(fedc_dtype dt, int64_t n, void *out, const void *x, double scale) {
    if (dt == FEDC_F32) {
        float *o = out, s = (float)scale;
        const float *v = x;
        for (int64_t i = 0; i < n; i++) o[i] = s * v[i];
    } else if (dt == FEDC_F64) {
        double *o = out;
        const double *v = x;
        for (int64_t i = 0; i < n; i++) o[i] = scale * v[i];
    } else {
        memcpy(out, x, (size_t)n * sizeof(int32_t));
    }
}

static double scalar_at(fedc_dtype dt, const void *w) {
    return dt == FEDC_F32 ? (double)*(const float *)w : *(const double *)w;
}

/* Whether `right` is the right half of the block whose left half is `left`. */
static bool siblings(const fedc__partial *left, const fedc__partial *right) {
    return left->level == right->level && ((left->first >> left->level) & 1) == 0 &&
           left->first + ((int64_t)1 << left->level) == right->first;
}

/* left = left + right: the block one level up. */
static void merge(fedc__agg *a, fedc__partial *left, fedc__partial *right) {
    if (right->clients && !left->clients) {
        left->data = right->data;
    } else if (right->clients) {
        accumulate(a->dtype, a->count, left->data, right->data, 1);
        fedc__agg_release(a, right->data);
    }
    left->clients += right->clients;
    left->weight += right->weight;
    left->level++;
}

fedc_status fedc__agg_push(fedc__agg *a, fedc__partial p) {
    a->touched = true;
    if (a->op == FEDC_OP_ROBUST_AGGREGATE) {
        fedc__agg_release(a, p.data);
        return fedc__agg_robust_end(a); /* refused, with the reason */
    }
    while (a->depth > 0 && siblings(&a->stack[a->depth - 1], &p)) {
        fedc__partial left = a->stack[--a->depth];
        merge(a, &left, &p);
        p = left;
    }
    if (a->depth == FEDC__AGG_MAX_DEPTH) {
        fedc__agg_release(a, p.data);
        return fedc_error(FEDC_EINTERNAL, "%s: more than %d partial sums", fedc__ops[a->op].name, FEDC__AGG_MAX_DEPTH);
    }
    a->stack[a->depth++] = p;
    return FEDC_OK;
}

static fedc_status incomplete(const fedc__agg *a, int64_t i) {
    return fedc_error(FEDC_EINTERNAL, "%s: client %lld comes where a leaf of the sum is not whole (%lld clients)",
                      fedc__ops[a->op].name, (long long)i, (long long)a->clients);
}

fedc_status fedc__agg_close(fedc__agg *a) {
    if (!a->open || a->op == FEDC_OP_ROBUST_AGGREGATE) return FEDC_OK;
    a->open = false;
    if (a->next != fedc__agg_leaf_start(a->clients, (int)a->leaf.first + 1)) {
        fedc__agg_release(a, a->leaf.data);
        return incomplete(a, a->next);
    }
    return fedc__agg_push(a, a->leaf);
}

/* Opens the leaf that starts at client i (closing the one before). */
static fedc_status open_leaf(fedc__agg *a, int64_t i) {
    fedc_status st = fedc__agg_close(a);
    if (st) return st;
    int j = fedc__agg_leaf_of(a->clients, i);
    if (i < 0 || i >= a->clients || fedc__agg_leaf_start(a->clients, j) != i) return incomplete(a, i);
    a->leaf = (fedc__partial){j, 0, 0, 0, NULL};
    a->open = a->touched = true;
    a->next = i;
    return FEDC_OK;
}

static fedc_status end_tree(fedc__agg *a);

static fedc_status in_group(const fedc__agg *a, fedc_status st) {
    char msg[900];
    snprintf(msg, sizeof msg, "%s", fedc_errmsg());
    return fedc_error(st, "group %d: %s", a->group, msg);
}

/* A grouped aggregation: ends the groups before client i's (those this process
 * reached), and gives i's place in its group (past its end for a client after
 * the last group, in none). */
static fedc_status reach_group(fedc__agg *a, int64_t *i) {
    while (a->group + 1 < a->groups && *i >= a->group_start[a->group + 1]) {
        fedc_status st = a->touched ? end_tree(a) : FEDC_OK;
        if (st) return in_group(a, st);
        a->group++;
        restart(a, a->group_start[a->group + 1] - a->group_start[a->group], a->out_base + (size_t)a->group * a->bytes);
    }
    *i -= a->group_start[a->group];
    return FEDC_OK;
}

fedc_status fedc__agg_add(fedc__agg *a, int64_t i, const void *x, const void *w) {
    if (a->op == FEDC_OP_ROBUST_AGGREGATE) return fedc__agg_robust_add(a, i, x, w);
    if (a->grouped) {
        if (i >= a->group_start[a->groups]) return FEDC_OK; /* in no group: absent, left out */
        fedc_status st = reach_group(a, &i);
        if (st) return st;
    }
    if (!a->open || i != a->next || i >= fedc__agg_leaf_start(a->clients, (int)a->leaf.first + 1)) {
        fedc_status st = open_leaf(a, i);
        if (st) return st;
    }
    a->next = i + 1;
    if (!x) return FEDC_OK; /* left out */
    double scale = a->op == FEDC_OP_WEIGHTED_MEAN ? scalar_at(a->dtype, w) : 1;
    fedc__partial *leaf = &a->leaf;
    if (leaf->clients) {
        accumulate(a->dtype, a->count, leaf->data, x, scale);
    } else {
        /* the first leaf's sum (and all that joins it on the left) grows in out itself */
        leaf->data = leaf->first == 0 ? a->out : fedc__agg_buffer(a);
        if (!leaf->data)
            return fedc_error(FEDC_ENOMEM, "%s: out of memory for a partial sum of %zu bytes", fedc__ops[a->op].name,
                              a->bytes);
        scaled_copy(a->dtype, a->count, leaf->data, x, scale);
    }
    leaf->clients++;
    if (a->op == FEDC_OP_WEIGHTED_MEAN) leaf->weight += scale;
    return FEDC_OK;
}

fedc_status fedc__agg_end(fedc__agg *a) {
    if (a->op == FEDC_OP_ROBUST_AGGREGATE) return fedc__agg_robust_end(a);
    if (!a->grouped) return end_tree(a);
    int64_t past = a->group_start[a->groups]; /* every group ends, the last one here */
    fedc_status st = a->group + 1 < a->groups ? reach_group(a, &past) : FEDC_OK;
    if (!st && a->touched && (st = end_tree(a))) return in_group(a, st);
    return st;
}

/* Combines the current tree's blocks into its `out` (and divides, for the means). */
static fedc_status end_tree(fedc__agg *a) {
    fedc_status st = fedc__agg_close(a);
    if (st) return st;
    int clients = 0;
    double weight = 0;
    for (int k = 0; k < a->depth; k++) { /* the blocks that tile the cohort, left to right */
        const fedc__partial *b = &a->stack[k];
        if (b->clients && !clients) {
            if (b->data != a->out) memcpy(a->out, b->data, a->bytes);
        } else if (b->clients) {
            accumulate(a->dtype, a->count, a->out, b->data, 1);
        }
        clients += b->clients;
        weight += b->weight;
    }
    if (!clients) memset(a->out, 0, a->bytes);
    if (a->op == FEDC_OP_SUM) return FEDC_OK;
    double divisor = a->op == FEDC_OP_MEAN ? (double)clients : weight;
    if (divisor == 0)
        return fedc_error(FEDC_ERANGE, "%s: %s", fedc__ops[a->op].name,
                          a->op == FEDC_OP_MEAN ? "no clients to average" : "the clients' weights sum to zero");
    if (a->dtype == FEDC_F32) {
        float *o = a->out, inv = (float)(1.0 / divisor);
        for (int64_t i = 0; i < a->count; i++) o[i] *= inv;
    } else {
        double *o = a->out, inv = 1.0 / divisor;
        for (int64_t i = 0; i < a->count; i++) o[i] *= inv;
    }
    return FEDC_OK;
}
