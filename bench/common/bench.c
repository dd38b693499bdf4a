/* Timing, medians and the FedAvg round the benchmarks share (bench.h). */
#include "bench.h"

#include "kernels/kernels.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

double bench_now(void) { return fedc_seconds(); }

double bench_cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

const char *bench_share_blas_core(void) {
    const char *core = fedc__kernels_blas_core();
    setenv("OPENBLAS_CORETYPE", core, 0);
    return core;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n ? v[n / 2] : 0;
}

void bench_json(const char *name, const char *fields, ...) {
    va_list ap;
    va_start(ap, fields);
    printf("json: {\"bench\": \"%s\", ", name);
    vprintf(fields, ap);
    printf("}\n");
    va_end(ap);
    fflush(stdout);
}

fedc_type bench_param_type(const bench_param *p) { return fedc_type_make(FEDC_F32, p->rank, p->dims); }

fedc_type bench_placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

static int output_index(const fedc_program *p, const char *name) {
    for (int k = 0; k < fedc_program_num_outputs(p); k++)
        if (!strcmp(fedc_program_output_name(p, k), name)) return k;
    return -1;
}

/* The fold's step: (params..., x, labels) -> (params - lr * grad..., loss). The
 * gradient program is inlined; carries come first, as fedc_fold wants. */
static fedc_program *sgd_step(const fedc_program *model, const bench_fedavg *f) {
    const char *wrt[16];
    for (int i = 0; i < f->nparams; i++) wrt[i] = f->params[i].name;
    fedc_program *grad, *step;
    BENCH_FAIL_IF(fedc_grad(model, "loss", wrt, f->nparams, &grad));
    BENCH_FAIL_IF(fedc_program_create(&step));
    fedc_value args[32], res[32], w[16];
    for (int i = 0; i < f->nparams; i++) w[i] = fedc_input(step, f->params[i].name, bench_param_type(&f->params[i]));
    for (int j = 0; j < fedc_program_num_inputs(grad); j++) {
        const char *name = fedc_program_input_name(grad, j);
        int k = 0;
        while (k < f->nparams && strcmp(name, f->params[k].name)) k++;
        args[j] = k < f->nparams ? w[k] : fedc_input(step, name, fedc_value_type(grad, fedc_program_input(grad, j)));
    }
    BENCH_FAIL_IF(fedc_program_inline(step, grad, args, res));
    fedc_value lr = fedc_scalar(step, FEDC_F32, f->client_lr);
    for (int i = 0; i < f->nparams; i++) {
        char name[40];
        snprintf(name, sizeof name, "grad_%s", f->params[i].name);
        fedc_value g = res[output_index(grad, name)];
        fedc_program_output(step, f->params[i].name, fedc_sub(step, w[i], fedc_mul(step, lr, g)));
    }
    fedc_program_output(step, "loss", res[output_index(grad, "loss")]);
    BENCH_FAIL_IF(fedc_program_status(step) || fedc_program_dce(step));
    fedc_program_destroy(grad);
    return step;
}

/* A client: local SGD over its batches (a fold of the step), then
 * (delta_<p> = p - p_local..., weight = batches, loss = mean step loss). The delta
 * is computed in the body, so its aggregation streams. */
static fedc_program *client(const fedc_program *step, const bench_fedavg *f) {
    fedc_program *b;
    BENCH_FAIL_IF(fedc_program_create(&b));
    fedc_value w[16], r[17];
    for (int i = 0; i < f->nparams; i++) w[i] = fedc_input(b, f->params[i].name, bench_param_type(&f->params[i]));
    fedc_value xs = fedc_input(b, "xs", f->xs), ys = fedc_input(b, "ys", f->ys);
    fedc_value n = fedc_input(b, "batches", fedc_type_scalar(FEDC_I32));
    BENCH_FAIL_IF(fedc_fold(b, step, w, f->nparams, (fedc_value[]){xs, ys}, 2, n, r));
    for (int i = 0; i < f->nparams; i++) {
        char name[40];
        snprintf(name, sizeof name, "delta_%s", f->params[i].name);
        fedc_program_output(b, name, fedc_sub(b, w[i], r[i]));
    }
    fedc_program_output(b, "weight", fedc_cast(b, n, FEDC_F32));
    fedc_program_output(b, "loss", fedc_reduce_mean(b, r[f->nparams], NULL, -1, false));
    BENCH_FAIL_IF(fedc_program_status(b));
    return b;
}

fedc_program *bench_fedavg_round(const fedc_program *model, const bench_fedavg *f) {
    BENCH_FAIL_IF(f->nparams > 16);
    fedc_program *step = sgd_step(model, f), *body = client(step, f), *p;
    BENCH_FAIL_IF(fedc_program_create(&p));
    fedc_value w[16], args[19], r[18];
    int np = f->nparams;
    for (int i = 0; i < np; i++) {
        w[i] = fedc_input(p, f->params[i].name, bench_placed(bench_param_type(&f->params[i]), FEDC_SERVER));
        args[i] = fedc_broadcast(p, w[i]);
    }
    args[np] = fedc_input(p, "xs", bench_placed(f->xs, FEDC_CLIENTS));
    args[np + 1] = fedc_input(p, "ys", bench_placed(f->ys, FEDC_CLIENTS));
    args[np + 2] = fedc_input(p, "batches", bench_placed(fedc_type_scalar(FEDC_I32), FEDC_CLIENTS));
    BENCH_FAIL_IF(fedc_map(p, body, args, np + 3, r));
    for (int i = 0; i < np; i++) {
        char name[40];
        snprintf(name, sizeof name, "new_%s", f->params[i].name);
        fedc_program_output(p, name, fedc_sub(p, w[i], fedc_weighted_mean(p, r[i], r[np])));
    }
    fedc_program_output(p, "loss", fedc_weighted_mean(p, r[np + 1], r[np]));
    BENCH_FAIL_IF(fedc_program_status(p));
    fedc_program_destroy(step);
    fedc_program_destroy(body);
    return p;
}

/* Forward: 2 FLOPs per multiply-add of every weight matrix per token (12 C^2 per
 * block: qkv 3, proj 1, fc 4, fc2 4; and the head C V), plus causal attention (q k^T
 * and p v: 2 x 2 C per attended pair, (T+1)/2 pairs per token on average); the
 * backward twice the forward. */
double bench_transformer_flops(int64_t layers, int64_t width, int64_t context, int64_t vocab, int64_t sequences) {
    double tokens = (double)(sequences * context), c = (double)width;
    double dense = 2.0 * ((double)layers * 12.0 * c * c + c * (double)vocab);
    double attention = (double)layers * 2.0 * 2.0 * c * (double)(context + 1) / 2.0;
    return 3.0 * tokens * (dense + attention);
}

static fedc_status timer_on_round(void *ctx, int round, bool evaluated, const fedc_train_result *so_far) {
    (void)evaluated, (void)so_far;
    bench_round_timer *t = ctx;
    double now = bench_now();
    if (round >= 1 && round <= BENCH_MAX_ROUNDS) t->seconds[round - 1] = now - t->last;
    t->rounds = round;
    t->last = now;
    return FEDC_OK;
}

void bench_round_timer_install(bench_round_timer *t, fedc_train_config *c) {
    memset(t, 0, sizeof *t);
    t->last = bench_now();
    c->on_round = timer_on_round;
    c->on_round_ctx = t;
}
