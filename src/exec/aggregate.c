/* Aggregation over clients: sum, mean and weighted mean, as a fixed binary tree
 * over client indices.
 *
 * Floating-point addition is not associative, so the order of a sum decides its
 * bits. fedc fixes the order by the client indices alone: the sum of the aligned
 * block of clients [k 2^j, (k+1) 2^j) is the sum of its left half plus the sum of
 * its right half, and the total is the sum of the blocks that tile [0, n) (the
 * binary digits of n, largest first), added left to right. A stream of clients in
 * increasing order computes it with a stack: push each client as a block of one,
 * and while the two blocks on top are siblings, replace them by their sum (a
 * binary counter), so at most one block per level waits: O(log2 clients) partial
 * sums, whatever the cohort's size otherwise.
 *
 * Why a tree and not one running sum: the ranks of an MPI run each sum a
 * contiguous block of clients at the same time. A running sum would make rank r
 * wait for rank r-1's total (or keep all its clients' values); with the tree, a
 * rank's stack holds only complete blocks of the tree, which it hands on, and
 * pushing every rank's blocks in order (fedc__agg_push) yields exactly the stack
 * one process would have had. So the result is bitwise the same for any number of
 * threads and ranks. Pairwise sums are also more accurate than a running sum. */
#include <string.h>

#include "exec/exec.h"

void fedc__agg_begin(fedc__agg *a, const fedc__node *n, void *out) {
    for (int k = 0; k < a->depth; k++)
        if (a->stack[k].data) a->spare[a->nspare++] = a->stack[k].data;
    a->op = n->op;
    a->dtype = n->type.dtype;
    a->count = fedc_type_count(&n->type);
    size_t bytes = (size_t)a->count * fedc_dtype_size(a->dtype);
    if (bytes != a->bytes) { /* buffers of another size are of no use */
        for (int k = 0; k < a->nspare; k++) fedc_free(a->spare[k]);
        a->nspare = 0;
    }
    a->bytes = bytes;
    a->out = out;
    a->depth = 0;
}

void fedc__agg_free(fedc__agg *a) {
    for (int k = 0; k < a->depth; k++) fedc_free(a->stack[k].data);
    for (int k = 0; k < a->nspare; k++) fedc_free(a->spare[k]);
    a->depth = a->nspare = 0;
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
        a->spare[a->nspare++] = right->data;
    }
    left->clients += right->clients;
    left->weight += right->weight;
    left->level++;
}

fedc_status fedc__agg_push(fedc__agg *a, fedc__partial p) {
    while (a->depth > 0 && siblings(&a->stack[a->depth - 1], &p)) {
        fedc__partial left = a->stack[--a->depth];
        merge(a, &left, &p);
        p = left;
    }
    if (a->depth == FEDC__AGG_MAX_DEPTH) {
        if (p.data) a->spare[a->nspare++] = p.data;
        return fedc_error(FEDC_EINTERNAL, "%s: more than %d partial sums", fedc__ops[a->op].name, FEDC__AGG_MAX_DEPTH);
    }
    a->stack[a->depth++] = p;
    return FEDC_OK;
}

fedc_status fedc__agg_add(fedc__agg *a, int64_t i, const void *x, const void *w) {
    fedc__partial leaf = {i, 0, 0, 0, NULL};
    double scale = 1;
    if (x) {
        if (a->op == FEDC_OP_WEIGHTED_MEAN) scale = scalar_at(a->dtype, w);
        leaf.clients = 1;
        leaf.weight = a->op == FEDC_OP_WEIGHTED_MEAN ? scale : 0;
    }
    fedc__partial *top = a->depth ? &a->stack[a->depth - 1] : NULL;
    if (x && top && top->clients && siblings(top, &leaf)) { /* the usual case: add into the left sibling */
        accumulate(a->dtype, a->count, top->data, x, scale);
        top->clients++;
        top->weight += leaf.weight;
        top->level++;
        return fedc__agg_push(a, a->stack[--a->depth]);
    }
    if (x) {
        if (!(leaf.data = fedc__agg_buffer(a)))
            return fedc_error(FEDC_ENOMEM, "%s: out of memory for a partial sum of %zu bytes", fedc__ops[a->op].name,
                              a->bytes);
        scaled_copy(a->dtype, a->count, leaf.data, x, scale);
    }
    return fedc__agg_push(a, leaf);
}

fedc_status fedc__agg_end(fedc__agg *a) {
    int clients = 0;
    double weight = 0;
    for (int k = 0; k < a->depth; k++) { /* the blocks that tile the cohort, left to right */
        const fedc__partial *b = &a->stack[k];
        if (b->clients && !clients) memcpy(a->out, b->data, a->bytes);
        else if (b->clients) accumulate(a->dtype, a->count, a->out, b->data, 1);
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
