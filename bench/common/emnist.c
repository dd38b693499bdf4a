/* The EMNIST CNN jobs of the end-to-end benchmarks (emnist.h). */
#include "emnist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void bench_cnn_create(bench_cnn *m, uint64_t seed) {
    BENCH_FAIL_IF(fedc_model_create(&m->model, "cnn", &(fedc_model_options){.num_classes = 62}));
    m->params = malloc((size_t)fedc_model_size(m->model) * sizeof *m->params);
    BENCH_FAIL_IF(!m->params || fedc_model_init(m->model, seed, m->params));
}

void bench_cnn_destroy(bench_cnn *m) {
    fedc_model_destroy(m->model);
    free(m->params);
}

fedc_status bench_cnn_bind(const bench_cnn *m, fedc_executor *ex) {
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < fedc_model_num_params(m->model); i++)
        st = fedc_executor_bind(ex, fedc_model_param_name(m->model, i), m->params + fedc_model_param_offset(m->model, i));
    return st;
}

/* conv 3x3 1->32 (28 -> 26), conv 3x3 32->64 (26 -> 24), dense 9216->128, 128->62 */
static const double CONV1 = 2.0 * 26 * 26 * 9 * 1 * 32, CONV2 = 2.0 * 24 * 24 * 9 * 32 * 64;
static const double DENSE1 = 2.0 * 9216 * 128, DENSE2 = 2.0 * 128 * 62;

double bench_cnn_forward_flops(void) { return CONV1 + CONV2 + DENSE1 + DENSE2; }

double bench_cnn_train_flops(void) {
    /* forward, then weight gradients of all four layers, input gradients of the last three */
    return bench_cnn_forward_flops() + (CONV1 + CONV2 + DENSE1 + DENSE2) + (CONV2 + DENSE1 + DENSE2);
}

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

void bench_fill_client(cohort_buffers *cb, int j, uint64_t client, int64_t n, uint64_t seed, uint32_t round) {
    int64_t batch = cb->batch, per_x = cb->x_elems / (cb->max_steps * batch);
    int64_t steps = (n + batch - 1) / batch;
    if (steps > cb->max_steps) steps = cb->max_steps;
    if (n > steps * batch) n = steps * batch;
    float *x = cb->x + (size_t)j * (size_t)cb->x_elems, *mask = cb->mask + (size_t)j * (size_t)(cb->max_steps * batch);
    int32_t *y = cb->y + (size_t)j * (size_t)(cb->max_steps * batch);
    uint64_t s = 0x9E3779B97F4A7C15u ^ (client * 0xD1B54A32D192ED03u + seed + round);
    for (int64_t i = 0; i < steps * batch * per_x; i++) x[i] = (float)(xorshift(&s) >> 40) * 0x1p-24f;
    for (int64_t e = 0; e < steps * batch; e++) {
        y[e] = (int32_t)(xorshift(&s) % 62);
        mask[e] = e < n ? 1.0f : 0.0f;
    }
    cb->steps[j] = (int32_t)steps;
    fedc_rng_stream k = fedc_rng_stream_make(seed, round, (uint32_t)client, 0);
    int32_t *key = cb->key ? cb->key + 4 * j : NULL;
    if (key) key[0] = (int32_t)k.key.k[0], key[1] = (int32_t)k.key.k[1], key[2] = (int32_t)k.c2, key[3] = 0;
}

double bench_cnn_evaluate(const bench_cnn *m, const int64_t *sizes, int64_t nclients, int64_t batch, int threads,
                          double *examples) {
    int64_t most = 1;
    for (int64_t i = 0; i < nclients; i++)
        if (sizes[i] > most) most = sizes[i];
    int k = nclients < 16 ? (int)nclients : 16;
    int64_t steps = (most + batch - 1) / batch;
    fedc_program *p;
    fedc_executor *ex;
    cohort_buffers cb = {0};
    BENCH_FAIL_IF(fedc_evaluation_program(m->model, batch, steps, &p));
    BENCH_FAIL_IF(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = k, .threads = threads, .profile = getenv("BENCH_PROFILE") != NULL}));
    BENCH_FAIL_IF(fedc__cohort_buffers_init(&cb, m->model, k, batch, steps, false) ||
                  fedc__cohort_buffers_bind(&cb, ex, false) || bench_cnn_bind(m, ex));
    double seconds = 0, count = 0;
    for (int64_t first = 0; first < nclients; first += k) {
        for (int j = 0; j < k; j++) {
            if (first + j < nclients) bench_fill_client(&cb, j, (uint64_t)(first + j), sizes[first + j], 1, 0);
            else cb.steps[j] = 0; /* a short last cohort: empty clients */
        }
        double t0 = bench_now();
        BENCH_FAIL_IF(fedc_executor_run(ex));
        seconds += bench_now() - t0;
        const float *c;
        BENCH_FAIL_IF(fedc_executor_output(ex, "count", (const void **)&c, NULL));
        count += *c;
    }
    if (getenv("BENCH_PROFILE")) BENCH_FAIL_IF(fedc_executor_profile(ex, stdout));
    fedc__cohort_buffers_free(&cb);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    *examples = count;
    return seconds;
}

void bench_leaf_shaped_sizes(const char *leaf_dir, int64_t nclients, int64_t total, int64_t *sizes) {
    fedc_dataset *ds;
    BENCH_FAIL_IF(fedc_dataset_open(&ds, leaf_dir, FEDC_FORMAT_AUTO));
    int64_t writers = fedc_dataset_num_clients(ds), leaf_total = 0, sum = 0;
    BENCH_FAIL_IF(writers < 1);
    for (int64_t c = 0; c < nclients; c++) leaf_total += fedc_dataset_client_examples(ds, c % writers);
    for (int64_t c = 0; c < nclients; c++) {
        int64_t n = (int64_t)llround((double)fedc_dataset_client_examples(ds, c % writers) * (double)total / (double)leaf_total);
        sizes[c] = n < 1 ? 1 : n;
        sum += sizes[c];
    }
    /* rounding leaves the sum a few off: spread the difference over the first clients */
    for (int64_t c = 0; sum != total; c = (c + 1) % nclients)
        if (sum < total) sizes[c]++, sum++;
        else if (sizes[c] > 1) sizes[c]--, sum--;
    fedc_dataset_destroy(ds);
}
