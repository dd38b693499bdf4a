/*
 * fedc_test_onnx_train — the files of tests/cli_onnx_train.sh, which trains ONNX
 * models with fedc train --model onnx:FILE against fedc's built-in models.
 *
 *   fedc_test_onnx_train write DIR SEED   writes DIR/femnist-leaf/{train,test}
 *       (the small FEMNIST of data_fixtures.h) and ONNX models whose
 *       initializers are the built-in models' initial parameters at SEED
 *       (fedc_model_init), as PyTorch would name them:
 *         dense.onnx   NCHW x [batch,1,28,28] -> Flatten -> (MatMul + Add ->
 *                      Relu) x 2 -> MatMul + Add: "dense"'s ops in its order
 *         logistic_gemm.onnx  Flatten -> Gemm(transB=1), the weight [62, 784] as
 *                      nn.Linear stores it: "logistic" with its weight transposed
 *         ten.onnx     "logistic" with 10 outputs (a task of 62 classes refuses it)
 *         cnn.onnx     "cnn" (FedJAX's EMNIST CNN) as PyTorch writes it: Conv (OIHW
 *                      filters), Relu, Conv, Relu, MaxPool, Flatten (NCHW order),
 *                      Gemm(transB=1), Relu, Gemm(transB=1); no Dropout nodes
 *         bn.onnx      BatchNormalization of the one channel (running mean 0, var 1),
 *                      then logistic_gemm.onnx's Flatten and Gemm
 *   fedc_test_onnx_train compare A B TOL  compares two safetensors files tensor by
 *       tensor in their order (names may differ), a 2-D tensor of B taken
 *       transposed where its shape is A's swapped; exits 1 where an element
 *       differs by more than TOL (0: the same bits); with SKIP after TOL, the
 *       tensors whose names begin with SKIP are left out.
 *   fedc_test_onnx_train value FILE NAME  prints the first value of tensor NAME.
 *   fedc_test_onnx_train records STORE ROUND  prints every client's record in a
 *       client store (OUT/client_state.fcs) as of ROUND, one line each, its floats
 *       in hexadecimal (the bits), "-" for a client without one.
 *   fedc_test_onnx_train fedbn DATA STORE ROUNDS SEED BATCH  checks fedbn's
 *       client state for bn.onnx after ROUNDS rounds (of --seed SEED) in which
 *       every client of DATA trained one batch of BATCH: each running mean and
 *       variance is the one computed by hand from the client's own batches alone,
 *       running = 0.9 running + 0.1 batch's from the file's 0 and 1 (the variance
 *       unbiased; within 1e-5 relative, f32 sums against double), and the
 *       clients' scales and biases moved away from the file's and apart.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_fixtures.h"
#include "fl/client_store.h"
#include "fedc/fedc.h"
#include "onnx_write.h"

enum { ELEM_FLOAT = 1, OPSET = 17, CLASSES = 62, PIXELS = 784 };

static int save(onnx_writer *w, const char *dir, const char *file) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    size_t size = 0;
    uint8_t *bytes = ow_pack(w, OPSET, &size);
    FILE *f = fopen(path, "wb");
    int rc = f && bytes && fwrite(bytes, 1, size, f) == size ? 0 : -1;
    if (f && fclose(f)) rc = -1;
    if (rc) fprintf(stderr, "onnx_train: cannot write %s\n", path);
    free(bytes);
    ow_free(w);
    return rc;
}

/* The built-in model `name`'s initial parameters (fedc_free them). */
static float *builtin_init(const char *name, int classes, uint64_t seed, fedc_model **m) {
    if (fedc_model_create(m, name, &(fedc_model_options){.num_classes = classes})) return NULL;
    float *p = fedc_malloc((size_t)fedc_model_size(*m) * sizeof *p);
    if (p) fedc_model_init(*m, seed, p);
    return p;
}

static void input_nchw(onnx_writer *w) {
    ow_init(w);
    ow_input(w, "x", ELEM_FLOAT, 4, (int64_t[]){-1, 1, 28, 28});
    ow_output(w, "logits");
    ow_node(w, "Flatten", "/Flatten", "x", "f", 1, ow_int(w, "axis", 1));
}

static int write_dense(const char *dir, uint64_t seed) {
    fedc_model *m = NULL;
    float *p = builtin_init("dense", CLASSES, seed, &m);
    if (!p) return -1;
    onnx_writer w;
    input_nchw(&w);
    static const char *const names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
    for (int i = 0; i < 6; i++) {
        fedc_type t = fedc_model_param_type(m, i);
        ow_init_f32(&w, names[i], t.rank, t.dims, p + fedc_model_param_offset(m, i));
    }
    ow_node(&w, "MatMul", "/fc1/MatMul", "f,fc1.weight", "m1", 0);
    ow_node(&w, "Add", "/fc1/Add", "m1,fc1.bias", "a1", 0);
    ow_node(&w, "Relu", "/relu1", "a1", "h1", 0);
    ow_node(&w, "MatMul", "/fc2/MatMul", "h1,fc2.weight", "m2", 0);
    ow_node(&w, "Add", "/fc2/Add", "m2,fc2.bias", "a2", 0);
    ow_node(&w, "Relu", "/relu2", "a2", "h2", 0);
    ow_node(&w, "MatMul", "/fc3/MatMul", "h2,fc3.weight", "m3", 0);
    ow_node(&w, "Add", "/fc3/Add", "m3,fc3.bias", "logits", 0);
    fedc_free(p);
    fedc_model_destroy(m);
    return save(&w, dir, "dense.onnx");
}

/* "logistic" at `classes`, its weight [classes, 784] as nn.Linear keeps it. */
static int write_gemm(const char *dir, const char *file, int classes, uint64_t seed) {
    fedc_model *m = NULL;
    float *p = builtin_init("logistic", classes, seed, &m);
    float *wt = fedc_malloc((size_t)classes * PIXELS * sizeof *wt);
    if (!p || !wt) return fedc_free(p), fedc_free(wt), fedc_model_destroy(m), -1;
    for (int i = 0; i < PIXELS; i++)
        for (int j = 0; j < classes; j++) wt[(size_t)j * PIXELS + i] = p[(size_t)i * classes + j];
    onnx_writer w;
    input_nchw(&w);
    ow_init_f32(&w, "fc.weight", 2, (int64_t[]){classes, PIXELS}, wt);
    ow_init_f32(&w, "fc.bias", 1, (int64_t[]){classes}, p + fedc_model_param_offset(m, 1));
    ow_node(&w, "Gemm", "/fc/Gemm", "f,fc.weight,fc.bias", "logits", 1, ow_int(&w, "transB", 1));
    fedc_free(p);
    fedc_free(wt);
    fedc_model_destroy(m);
    return save(&w, dir, file);
}

/* "cnn"'s initial parameters in PyTorch's layouts: HWIO filters as OIHW, the
 * dense weights [out, in] with the first one's inputs in NCHW's flatten order
 * (c, h, w) where "cnn" flattens NHWC (h, w, c). */
static int write_cnn(const char *dir, uint64_t seed) {
    enum { C1 = 32, C2 = 64, SIDE = 12, DENSE = 128 };
    fedc_model *m = NULL;
    float *p = builtin_init("cnn", CLASSES, seed, &m);
    int64_t n = p ? fedc_model_size(m) : 0;
    float *t = p ? fedc_malloc((size_t)n * sizeof *t) : NULL;
    if (!t) return fedc_free(p), fedc_model_destroy(m), -1;
    const float *src[8];
    float *dst[8];
    for (int i = 0; i < 8; i++) src[i] = p + fedc_model_param_offset(m, i), dst[i] = t + fedc_model_param_offset(m, i);
    for (int c = 0; c < 2; c++) { /* HWIO -> OIHW */
        int in = c ? C1 : 1, out = c ? C2 : C1;
        for (int k = 0; k < 9; k++)
            for (int i = 0; i < in; i++)
                for (int o = 0; o < out; o++) dst[2 * c][((size_t)o * in + i) * 9 + k] = src[2 * c][((size_t)k * in + i) * out + o];
    }
    for (int h = 0; h < SIDE * SIDE; h++) /* [h w c, 128] -> [128, c h w] */
        for (int c = 0; c < C2; c++)
            for (int j = 0; j < DENSE; j++)
                dst[4][(size_t)j * C2 * SIDE * SIDE + (size_t)c * SIDE * SIDE + h] = src[4][((size_t)h * C2 + c) * DENSE + j];
    for (int i = 0; i < DENSE; i++)
        for (int j = 0; j < CLASSES; j++) dst[6][(size_t)j * DENSE + i] = src[6][(size_t)i * CLASSES + j];
    onnx_writer w;
    ow_init(&w);
    ow_input(&w, "x", ELEM_FLOAT, 4, (int64_t[]){-1, 1, 28, 28});
    ow_output(&w, "logits");
    ow_init_f32(&w, "conv1.weight", 4, (int64_t[]){C1, 1, 3, 3}, dst[0]);
    ow_init_f32(&w, "conv1.bias", 1, (int64_t[]){C1}, src[1]);
    ow_init_f32(&w, "conv2.weight", 4, (int64_t[]){C2, C1, 3, 3}, dst[2]);
    ow_init_f32(&w, "conv2.bias", 1, (int64_t[]){C2}, src[3]);
    ow_init_f32(&w, "dense1.weight", 2, (int64_t[]){DENSE, C2 * SIDE * SIDE}, dst[4]);
    ow_init_f32(&w, "dense1.bias", 1, (int64_t[]){DENSE}, src[5]);
    ow_init_f32(&w, "dense2.weight", 2, (int64_t[]){CLASSES, DENSE}, dst[6]);
    ow_init_f32(&w, "dense2.bias", 1, (int64_t[]){CLASSES}, src[7]);
    const int64_t k3[2] = {3, 3}, k2[2] = {2, 2};
    ow_node(&w, "Conv", "/conv1/Conv", "x,conv1.weight,conv1.bias", "c1", 1, ow_ints(&w, "kernel_shape", 2, k3));
    ow_node(&w, "Relu", "/relu1", "c1", "r1", 0);
    ow_node(&w, "Conv", "/conv2/Conv", "r1,conv2.weight,conv2.bias", "c2", 1, ow_ints(&w, "kernel_shape", 2, k3));
    ow_node(&w, "Relu", "/relu2", "c2", "r2", 0);
    ow_node(&w, "MaxPool", "/pool", "r2", "mp", 2, ow_ints(&w, "kernel_shape", 2, k2), ow_ints(&w, "strides", 2, k2));
    ow_node(&w, "Flatten", "/Flatten", "mp", "f", 1, ow_int(&w, "axis", 1));
    ow_node(&w, "Gemm", "/dense1/Gemm", "f,dense1.weight,dense1.bias", "d1", 1, ow_int(&w, "transB", 1));
    ow_node(&w, "Relu", "/relu3", "d1", "r3", 0);
    ow_node(&w, "Gemm", "/dense2/Gemm", "r3,dense2.weight,dense2.bias", "logits", 1, ow_int(&w, "transB", 1));
    fedc_free(p);
    fedc_free(t);
    fedc_model_destroy(m);
    return save(&w, dir, "cnn.onnx");
}

/* logistic_gemm.onnx's head after a BatchNormalization of the image's channel,
 * whose running statistics the task's pixels (mean about 0.9) move. */
static int write_bn(const char *dir, uint64_t seed) {
    fedc_model *m = NULL;
    float *p = builtin_init("logistic", CLASSES, seed, &m), *wt = fedc_malloc((size_t)CLASSES * PIXELS * sizeof *wt);
    if (!p || !wt) return fedc_free(p), fedc_free(wt), fedc_model_destroy(m), -1;
    for (int i = 0; i < PIXELS; i++)
        for (int j = 0; j < CLASSES; j++) wt[(size_t)j * PIXELS + i] = p[(size_t)i * CLASSES + j];
    onnx_writer w;
    ow_init(&w);
    ow_input(&w, "x", ELEM_FLOAT, 4, (int64_t[]){-1, 1, 28, 28});
    ow_output(&w, "logits");
    const int64_t one[1] = {1};
    ow_init_f32(&w, "bn.weight", 1, one, (float[]){1});
    ow_init_f32(&w, "bn.bias", 1, one, (float[]){0});
    ow_init_f32(&w, "bn.running_mean", 1, one, (float[]){0});
    ow_init_f32(&w, "bn.running_var", 1, one, (float[]){1});
    ow_init_f32(&w, "fc.weight", 2, (int64_t[]){CLASSES, PIXELS}, wt);
    ow_init_f32(&w, "fc.bias", 1, (int64_t[]){CLASSES}, p + fedc_model_param_offset(m, 1));
    ow_node(&w, "BatchNormalization", "/bn/BatchNormalization", "x,bn.weight,bn.bias,bn.running_mean,bn.running_var",
            "n", 1, ow_float(&w, "momentum", 0.9f));
    ow_node(&w, "Flatten", "/Flatten", "n", "f", 1, ow_int(&w, "axis", 1));
    ow_node(&w, "Gemm", "/fc/Gemm", "f,fc.weight,fc.bias", "logits", 1, ow_int(&w, "transB", 1));
    fedc_free(p);
    fedc_free(wt);
    fedc_model_destroy(m);
    return save(&w, dir, "bn.onnx");
}

static int value(const char *path, const char *name) {
    fedc_safetensors *s = NULL;
    fedc_tensor_entry e;
    if (fedc_safetensors_read(path, &s) || fedc_safetensors_find(s, name, &e) || e.type.dtype != FEDC_F32) {
        fprintf(stderr, "onnx_train: %s: no f32 tensor %s\n", path, name);
        return fedc_safetensors_destroy(s), 1;
    }
    float x;
    memcpy(&x, e.data, sizeof x);
    printf("%.9g\n", x);
    fedc_safetensors_destroy(s);
    return 0;
}

static int write_all(const char *dir, uint64_t seed) {
    if (fedc_test_write_fixture(dir, "femnist-leaf/train") || fedc_test_write_fixture(dir, "femnist-leaf/test"))
        return 1;
    if (write_dense(dir, seed) || write_gemm(dir, "logistic_gemm.onnx", CLASSES, seed) ||
        write_gemm(dir, "ten.onnx", 10, seed) || write_bn(dir, seed) || write_cnn(dir, seed))
        return 1;
    return 0;
}

/* Tensor i of b as a's layout: itself, or a 2-D one transposed. */
static float element(const fedc_tensor_entry *a, const fedc_tensor_entry *b, int64_t k) {
    const float *v = b->data;
    float x;
    if (a->type.rank == 2 && fedc_type_same_shape(&a->type, &b->type) == false) {
        int64_t rows = a->type.dims[0], cols = a->type.dims[1];
        memcpy(&x, v + (k % cols) * rows + k / cols, sizeof x);
    } else {
        memcpy(&x, v + k, sizeof x);
    }
    return x;
}

static bool comparable(const fedc_tensor_entry *a, const fedc_tensor_entry *b) {
    if (a->type.dtype != FEDC_F32 || b->type.dtype != FEDC_F32) return false;
    if (fedc_type_same_shape(&a->type, &b->type)) return true;
    return a->type.rank == 2 && b->type.rank == 2 && a->type.dims[0] == b->type.dims[1] &&
           a->type.dims[1] == b->type.dims[0];
}

static int compare(const char *pa, const char *pb, double tol, const char *skip) {
    fedc_safetensors *a = NULL, *b = NULL;
    if (fedc_safetensors_read(pa, &a) || fedc_safetensors_read(pb, &b)) {
        fprintf(stderr, "onnx_train: %s\n", fedc_errmsg());
        return fedc_safetensors_destroy(a), 1;
    }
    int rc = 0, n = fedc_safetensors_count(a);
    if (n != fedc_safetensors_count(b)) {
        fprintf(stderr, "onnx_train: %s has %d tensors, %s %d\n", pa, n, pb, fedc_safetensors_count(b));
        rc = 1;
    }
    double worst = 0;
    int skipped = 0;
    for (int i = 0; !rc && i < n; i++) {
        fedc_tensor_entry ta = fedc_safetensors_tensor(a, i), tb = fedc_safetensors_tensor(b, i);
        if (skip && !strncmp(ta.name, skip, strlen(skip)) && ++skipped) continue;
        if (!comparable(&ta, &tb)) {
            fprintf(stderr, "onnx_train: %s and %s differ in shape\n", ta.name, tb.name);
            rc = 1;
            break;
        }
        for (int64_t k = 0; k < fedc_type_count(&ta.type); k++) {
            float x, y = element(&ta, &tb, k);
            memcpy(&x, (const float *)ta.data + k, sizeof x);
            double d = fabs((double)x - (double)y);
            if (!(d <= tol) || (tol == 0 && memcmp(&x, &y, sizeof x))) {
                fprintf(stderr, "onnx_train: %s[%lld] = %.9g, %s's %.9g\n", ta.name, (long long)k, x, tb.name, y);
                rc = 1;
                break;
            }
            if (d > worst) worst = d;
        }
    }
    if (!rc) printf("%d tensors agree (largest difference %.3g)\n", n - skipped, worst);
    fedc_safetensors_destroy(a);
    fedc_safetensors_destroy(b);
    return rc;
}

/* ------------------------------------------------------------- fedbn -- */

/* A client store as fedc train left it: opened with the layout its header holds. */
static int open_store(const char *path, fedc__client_store **s, int64_t *clients, size_t *record) {
    FILE *f = fopen(path, "rb");
    unsigned char h[64];
    char layout[4096];
    uint32_t len = 0;
    uint64_t n = 0, bytes = 0;
    bool ok = f && fread(h, 1, sizeof h, f) == sizeof h;
    if (ok) memcpy(&len, h + 12, 4), memcpy(&n, h + 16, 8), memcpy(&bytes, h + 24, 8);
    ok = ok && len < sizeof layout && fread(layout, 1, len, f) == len;
    if (f) fclose(f);
    if (!ok) return fprintf(stderr, "onnx_train: %s: not a client store\n", path), 1;
    layout[len] = 0;
    *clients = (int64_t)n, *record = (size_t)bytes;
    if (fedc__client_store_open(s, path, *clients, *record, layout))
        return fprintf(stderr, "onnx_train: %s\n", fedc_errmsg()), 1;
    return 0;
}

/* Client c's record as of `round` into rec (*found false: none). */
static int read_record(fedc__client_store *s, uint32_t round, int64_t c, void *rec, bool *found) {
    if (!fedc__client_store_read(s, round, 1, &c, (void *const[]){rec}, found)) return 0;
    return fprintf(stderr, "onnx_train: %s\n", fedc_errmsg()), 1;
}

static int records(const char *path, uint32_t round) {
    fedc__client_store *s = NULL;
    int64_t n;
    size_t bytes;
    if (open_store(path, &s, &n, &bytes)) return 1;
    float *rec = fedc_malloc(bytes + sizeof *rec);
    int rc = rec ? 0 : 1;
    for (int64_t c = 0; !rc && c < n; c++) {
        bool found;
        if ((rc = read_record(s, round, c, rec, &found))) break;
        printf("%lld:", (long long)c);
        for (size_t k = 0; found && k < bytes / sizeof *rec; k++) printf(" %a", rec[k]);
        printf("%s\n", found ? "" : " -");
    }
    fedc_free(rec);
    fedc__client_store_close(s);
    return rc;
}

/* The mean and unbiased variance of the pixels (as fedc feeds them, 1 - x) of
 * client c's one batch in round `round`, as fedc train draws it (every example,
 * then the next shuffle's first ones to fill the batch). */
static int batch_stats(fedc_dataset *ds, int64_t c, uint64_t seed, uint32_t round, int64_t batch, double *mean,
                       double *var) {
    fedc_client_data *cd = NULL;
    fedc_batches *b = NULL;
    if (fedc_dataset_client(ds, c, &cd) || fedc_shuffle_repeat_batch(cd, batch, 1, -1, false, seed, round, (uint32_t)c, &b))
        return fedc_client_data_destroy(cd), fprintf(stderr, "onnx_train: %s\n", fedc_errmsg()), 1;
    const fedc_feature *x = fedc_batches_feature(b, "x");
    int64_t count = x ? fedc_type_count(&x->type) : 0;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < count; i++) sum += 1.0f - ((const float *)x->data)[i];
    *mean = sum / (double)(count ? count : 1);
    for (int64_t i = 0; i < count; i++) {
        double d = (double)(1.0f - ((const float *)x->data)[i]) - *mean;
        sq += d * d;
    }
    *var = sq / (double)(count > 1 ? count - 1 : 1);
    bool one = x && x->type.dims[0] == 1;
    fedc_batches_destroy(b);
    fedc_client_data_destroy(cd);
    if (!one) return fprintf(stderr, "onnx_train: client %lld has not one batch of %lld\n", (long long)c, (long long)batch), 1;
    return 0;
}

/* The running mean and variance after `rounds` visits, each one step on the round's batch. */
static int by_hand(fedc_dataset *ds, int64_t c, uint64_t seed, int rounds, int64_t batch, double *mean, double *var) {
    *mean = 0, *var = 1; /* bn.onnx's */
    for (int r = 0; r < rounds; r++) {
        double m, v;
        if (batch_stats(ds, c, seed, (uint32_t)r, batch, &m, &v)) return 1;
        *mean = 0.9 * *mean + 0.1 * m;
        *var = 0.9 * *var + 0.1 * v;
    }
    return 0;
}

static int fedbn(const char *data, const char *path, int rounds, uint64_t seed, int64_t batch) {
    static const char want[] = "fedbn: bn/bn.weight f32[1]; bn/bn.bias f32[1]; bn/bn.running_mean f32[1]; "
                               "bn/bn.running_var f32[1];";
    fedc__client_store *s = NULL;
    fedc_dataset *ds = NULL;
    int64_t n;
    size_t bytes;
    if (open_store(path, &s, &n, &bytes)) return 1;
    int rc = bytes == 4 * sizeof(float) ? 0 : (fprintf(stderr, "onnx_train: the record is not bn.onnx's %s\n", want), 1);
    if (!rc && fedc_dataset_open(&ds, data, FEDC_FORMAT_AUTO)) rc = (fprintf(stderr, "onnx_train: %s\n", fedc_errmsg()), 1);
    if (!rc && fedc_dataset_num_clients(ds) != n) rc = (fprintf(stderr, "onnx_train: the store is not %s's\n", data), 1);
    double worst = 0;
    int moved = 0, distinct = 0;
    float first[2] = {0, 0};
    for (int64_t c = 0; !rc && c < n; c++) {
        float rec[4];
        bool found;
        double mean, var;
        if ((rc = read_record(s, (uint32_t)rounds, c, rec, &found) || by_hand(ds, c, seed, rounds, batch, &mean, &var)))
            break;
        if (!found) {
            fprintf(stderr, "onnx_train: client %lld has no BatchNorm kept\n", (long long)c);
            rc = 1;
            break;
        }
        double d = fmax(fabs(rec[2] - mean) / fabs(mean), fabs(rec[3] - var) / fabs(var));
        if (!(d <= 1e-5)) { /* f32 sums of some 10,000 pixels */
            fprintf(stderr, "onnx_train: client %lld's running mean %.9g, variance %.9g; by hand %.9g, %.9g\n",
                    (long long)c, rec[2], rec[3], mean, var);
            rc = 1;
        }
        worst = fmax(worst, d);
        moved += rec[0] != 1.0f && rec[1] != 0.0f;
        if (c == 0) memcpy(first, rec, sizeof first);
        else distinct += rec[0] != first[0] && rec[1] != first[1];
    }
    if (!rc && (moved != n || distinct != n - 1)) {
        fprintf(stderr, "onnx_train: %d of %lld clients' scale and bias moved, %d differ from client 0's\n", moved,
                (long long)n, distinct);
        rc = 1;
    }
    if (!rc) printf("%lld clients' BatchNorm: running statistics by hand (largest relative difference %.3g), scales and "
                    "biases their own\n", (long long)n, worst);
    fedc_dataset_destroy(ds);
    fedc__client_store_close(s);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "write")) return write_all(argv[2], strtoull(argv[3], NULL, 10));
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "compare"))
        return compare(argv[2], argv[3], atof(argv[4]), argc == 6 ? argv[5] : NULL);
    if (argc == 4 && !strcmp(argv[1], "value")) return value(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "records")) return records(argv[2], (uint32_t)atoi(argv[3]));
    if (argc == 7 && !strcmp(argv[1], "fedbn"))
        return fedbn(argv[2], argv[3], atoi(argv[4]), strtoull(argv[5], NULL, 10), atoll(argv[6]));
    fprintf(stderr, "usage: fedc_test_onnx_train write DIR SEED | compare A B TOL [SKIP] | value FILE NAME | "
                    "records STORE ROUND | fedbn DATA STORE ROUNDS SEED BATCH\n");
    return 2;
}
