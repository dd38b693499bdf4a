/* Aggregation over clients: sum, mean and weighted mean, one client at a time in
 * client order. The same accumulator serves a materialised clients value (a loop
 * over the cohort) and a map whose results stream straight into it (one client
 * per commit, in order), so both give the same bits whatever the thread count. */
#include <string.h>

#include "exec/exec.h"

void fedc__agg_begin(fedc__agg *a, const fedc__node *n, void *out) {
    a->op = n->op;
    a->dtype = n->type.dtype;
    a->count = fedc_type_count(&n->type);
    a->out = out;
    a->clients = 0;
    a->weight = 0;
    memset(out, 0, (size_t)a->count * fedc_dtype_size(a->dtype));
}

/* out += scale * x, in the element type. */
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

static double scalar_at(fedc_dtype dt, const void *w) {
    return dt == FEDC_F32 ? (double)*(const float *)w : *(const double *)w;
}

void fedc__agg_add(fedc__agg *a, const void *x, const void *w) {
    double scale = 1;
    if (a->op == FEDC_OP_WEIGHTED_MEAN) {
        scale = scalar_at(a->dtype, w);
        a->weight += scale;
    }
    accumulate(a->dtype, a->count, a->out, x, scale);
    a->clients++;
}

fedc_status fedc__agg_end(fedc__agg *a) {
    double divisor = a->op == FEDC_OP_MEAN ? (double)a->clients : a->op == FEDC_OP_WEIGHTED_MEAN ? a->weight : 1;
    if (a->op == FEDC_OP_SUM) return FEDC_OK;
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
