/*
 * Tests of the reference kernels (fedc__kernels_ref) against small hand-computed
 * values, against independent naive formulas (conv2d on a zero-padded copy), and
 * against identities that must hold whatever the shapes: the convolution and pooling
 * gradients are the adjoints of the forward maps, softmax rows sum to one, and the
 * cross-entropy is minus the log-softmax at the label. The reference is the oracle
 * for the fast kernels, so it is checked here on its own. First, both tables are
 * checked against kernels.def, the list of their entries. Here the elementwise,
 * reduction, data-movement, index, dropout, cast and iota kernels; matmul,
 * convolution, pooling and softmax in test_kernels_ref_nn.c.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernels/fast.h"
#include "kernels/ref.h"
#include "kernels_ref_check.h"

/* ------------------------------------------------------------ table, shape -- */

/* Both tables against kernels.def, row by row (a failure names the row): the
 * reference table holds fedc__ref_<field> (NULL for the optional entries), the fast
 * one fedc__fast_<field> or, where its column says REF, the reference function; and
 * the struct has no field that is not a row (its size is the name and one pointer
 * per row). A fast column of NONE, or a function a column names that does not
 * exist, does not compile. */
typedef void (*any_fn)(void); /* compares function pointers of any type */

static void test_table_complete(void) {
    const fedc__kernels *F = &fedc__kernels_fast;
    CHECK(strcmp(K->name, "ref") == 0);
    CHECK(strcmp(F->name, "fast") == 0);
    int entries = 0;
#define FEDC_KERNEL(ret, field, ref, fast, params)                                                      \
    CHECK_MSG((any_fn)K->field == (any_fn)FEDC__KERNEL_IMPL_##ref(field),                                 \
              "ref.%s is not what kernels.def's ref column says (%s)", #field, #ref);                     \
    CHECK_MSG((any_fn)F->field == (any_fn)FEDC__KERNEL_IMPL_##fast(field),                                \
              "fast.%s is not what kernels.def's fast column says (%s)", #field, #fast);                  \
    entries++;
#include "kernels/kernels.def"
#undef FEDC_KERNEL
    CHECK_EQ_INT(sizeof(const char *) + (size_t)entries * sizeof(any_fn), sizeof(fedc__kernels));
}

static void test_kshape_count(void) {
    CHECK_EQ_INT(fedc__kshape_count(&SCALAR), 1);
    fedc__kshape a = KS(2, 3, 4), z = KS(3, 0, 2);
    CHECK_EQ_INT(fedc__kshape_count(&a), 24);
    CHECK_EQ_INT(fedc__kshape_count(&z), 0);
}

/* ----------------------------------------------------------------- unary -- */

static void test_unary(void) {
    const double x[] = {-2, -0.5, 0, 0.5, 3};
    const double px[] = {0.25, 1, 2, 4, 9}; /* positive, for log, sqrt, pow */
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        void *a = make(dt, 5, x), *p = make(dt, 5, px), *y = make(dt, 5, NULL);
        double want[5];
        CHECK_OK(K->unary(FEDC_U_NEG, dt, 5, a, y, 0));
        for (int i = 0; i < 5; i++) want[i] = -x[i];
        CHECK_ARR(dt, y, want, 5, 0);
        CHECK_OK(K->unary(FEDC_U_EXP, dt, 5, a, y, 0));
        for (int i = 0; i < 5; i++) want[i] = exp(x[i]);
        CHECK_ARR(dt, y, want, 5, tol_of(dt));
        CHECK_OK(K->unary(FEDC_U_TANH, dt, 5, a, y, 0));
        for (int i = 0; i < 5; i++) want[i] = tanh(x[i]);
        CHECK_ARR(dt, y, want, 5, tol_of(dt));
        CHECK_OK(K->unary(FEDC_U_SIGMOID, dt, 5, a, y, 0));
        for (int i = 0; i < 5; i++) want[i] = 1 / (1 + exp(-x[i]));
        CHECK_ARR(dt, y, want, 5, tol_of(dt));
        CHECK_OK(K->unary(FEDC_U_RELU, dt, 5, a, y, 0));
        CHECK_ARR(dt, y, ((double[]){0, 0, 0, 0.5, 3}), 5, 0);
        CHECK_OK(K->unary(FEDC_U_SQUARE, dt, 5, a, y, 0));
        CHECK_ARR(dt, y, ((double[]){4, 0.25, 0, 0.25, 9}), 5, 0);
        CHECK_OK(K->unary(FEDC_U_LOG, dt, 5, p, y, 0));
        for (int i = 0; i < 5; i++) want[i] = log(px[i]);
        CHECK_ARR(dt, y, want, 5, tol_of(dt));
        CHECK_OK(K->unary(FEDC_U_SQRT, dt, 5, p, y, 0));
        CHECK_ARR(dt, y, ((double[]){0.5, 1, sqrt(2), 2, 3}), 5, tol_of(dt));
        CHECK_OK(K->unary(FEDC_U_POW, dt, 5, p, y, 1.5));
        CHECK_ARR(dt, y, ((double[]){0.125, 1, pow(2, 1.5), 8, 27}), 5, tol_of(dt));
        free(a), free(p), free(y);
    }
}

static void test_unary_edges(void) {
    /* sigmoid saturates without NaN or overflow at large |x| */
    double s[3];
    CHECK_OK(K->unary(FEDC_U_SIGMOID, FEDC_F64, 3, (double[]){-1000, 1000, -40}, s, 0));
    CHECK(s[0] == 0 && s[1] == 1 && s[2] > 0);
    /* i32 NEG, wrapping at INT32_MIN; other i32 ops are unsupported */
    int32_t xi[] = {5, -7, 0, INT32_MIN}, yi[4];
    CHECK_OK(K->unary(FEDC_U_NEG, FEDC_I32, 4, xi, yi, 0));
    CHECK(yi[0] == -5 && yi[1] == 7 && yi[2] == 0 && yi[3] == INT32_MIN);
    CHECK_ERR(K->unary(FEDC_U_EXP, FEDC_I32, 4, xi, yi, 0), FEDC_EUNSUPPORTED, "i32");
    CHECK_ERR(K->unary(FEDC_U_NEG, FEDC_BOOL, 0, xi, yi, 0), FEDC_EUNSUPPORTED, "unary");
    /* in place */
    float f[2] = {1, -1};
    CHECK_OK(K->unary(FEDC_U_RELU, FEDC_F32, 2, f, f, 0));
    CHECK(f[0] == 1 && f[1] == 0);
}

/* ---------------------------------------------------------------- binary -- */

static void test_binary_broadcast(void) {
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        /* rank mismatch: [2,3] + [3] */
        fedc__kshape s23 = KS(2, 3), s3 = KS(3), s21 = KS(2, 1), s13 = KS(1, 3);
        void *a = make(dt, 6, (double[]){1, 2, 3, 4, 5, 6});
        void *b = make(dt, 3, (double[]){10, 20, 30});
        void *y = make(dt, 6, NULL);
        CHECK_OK(K->binary(FEDC_B_ADD, dt, &s23, a, &s3, b, &s23, y));
        CHECK_ARR(dt, y, ((double[]){11, 22, 33, 14, 25, 36}), 6, 0);
        /* both sides broadcast size-1 dims: [2,1] * [1,3] -> [2,3] */
        void *c = make(dt, 2, (double[]){2, 3});
        CHECK_OK(K->binary(FEDC_B_MUL, dt, &s21, c, &s13, b, &s23, y));
        CHECK_ARR(dt, y, ((double[]){20, 40, 60, 30, 60, 90}), 6, 0);
        /* scalar on the left, [2,1] on the right */
        void *sc = make(dt, 1, (double[]){12});
        CHECK_OK(K->binary(FEDC_B_DIV, dt, &SCALAR, sc, &s21, c, &s23, y));
        CHECK_ARR(dt, y, ((double[]){6, 6, 6, 4, 4, 4}), 6, 0);
        CHECK_OK(K->binary(FEDC_B_SUB, dt, &s23, a, &SCALAR, sc, &s23, y));
        CHECK_ARR(dt, y, ((double[]){-11, -10, -9, -8, -7, -6}), 6, 0);
        CHECK_OK(K->binary(FEDC_B_MAX, dt, &s23, a, &s21, c, &s23, y));
        CHECK_ARR(dt, y, ((double[]){2, 2, 3, 4, 5, 6}), 6, 0);
        CHECK_OK(K->binary(FEDC_B_MIN, dt, &s23, a, &s21, c, &s23, y));
        CHECK_ARR(dt, y, ((double[]){1, 2, 2, 3, 3, 3}), 6, 0);
        free(a), free(b), free(c), free(sc), free(y);
    }
}

static void test_binary_rank3(void) {
    /* [2,1,3] + [4,1] -> [2,4,3]: out[i,j,k] = a[i,0,k] + b[j,0] */
    double a[6], b[4], y[24], want[24];
    for (int i = 0; i < 6; i++) a[i] = 100 * i;
    for (int j = 0; j < 4; j++) b[j] = j;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 3; k++) want[(i * 4 + j) * 3 + k] = a[i * 3 + k] + b[j];
    fedc__kshape as = KS(2, 1, 3), bs = KS(4, 1), os = KS(2, 4, 3);
    CHECK_OK(K->binary(FEDC_B_ADD, FEDC_F64, &as, a, &bs, b, &os, y));
    CHECK_ARR(FEDC_F64, y, want, 24, 0);
    /* incompatible shapes name both */
    fedc__kshape bad = KS(3, 3);
    CHECK_ERR(K->binary(FEDC_B_ADD, FEDC_F64, &as, a, &bad, b, &os, y), FEDC_ESHAPE, "[3,3]");
    /* an operand of higher rank than out */
    fedc__kshape s3 = KS(3);
    CHECK_ERR(K->binary(FEDC_B_ADD, FEDC_F64, &as, a, &s3, b, &s3, y), FEDC_ESHAPE, "broadcast");
}

static void test_binary_compare_and_i32(void) {
    fedc__kshape s4 = KS(4);
    uint8_t m[4];
    CHECK_OK(K->binary(FEDC_B_LT, FEDC_F32, &s4, (float[]){1, 2, 3, NAN}, &SCALAR, (float[]){2},
                       &s4, m));
    CHECK(m[0] == 1 && m[1] == 0 && m[2] == 0 && m[3] == 0);
    CHECK_OK(K->binary(FEDC_B_GE, FEDC_F64, &s4, (double[]){1, 2, 3, 4}, &SCALAR, (double[]){2},
                       &s4, m));
    CHECK(m[0] == 0 && m[1] == 1 && m[2] == 1 && m[3] == 1);
    CHECK_OK(K->binary(FEDC_B_NE, FEDC_I32, &s4, (int32_t[]){1, 2, 3, 4}, &SCALAR, (int32_t[]){2},
                       &s4, m));
    CHECK(m[0] == 1 && m[1] == 0 && m[2] == 1 && m[3] == 1);
    int32_t yi[4];
    CHECK_OK(K->binary(FEDC_B_ADD, FEDC_I32, &s4, (int32_t[]){INT32_MAX, -5, 7, 0}, &s4,
                       (int32_t[]){1, 3, -9, 0}, &s4, yi));
    CHECK(yi[0] == INT32_MIN && yi[1] == -2 && yi[2] == -2 && yi[3] == 0);
    CHECK_OK(K->binary(FEDC_B_DIV, FEDC_I32, &s4, (int32_t[]){7, -7, 5, INT32_MIN}, &s4,
                       (int32_t[]){2, 2, 0, -1}, &s4, yi));
    CHECK(yi[0] == 3 && yi[1] == -3 && yi[2] == 0 && yi[3] == INT32_MIN);
    /* MAX propagates NaN from either side */
    double d[2];
    fedc__kshape s2 = KS(2);
    CHECK_OK(K->binary(FEDC_B_MAX, FEDC_F64, &s2, (double[]){NAN, 1}, &s2, (double[]){1, NAN},
                       &s2, d));
    CHECK(isnan(d[0]) && isnan(d[1]));
    CHECK_ERR(K->binary(FEDC_B_ADD, FEDC_U8, &s2, m, &s2, m, &s2, m), FEDC_EUNSUPPORTED, "u8");
}

static void test_select(void) {
    /* cond [2,1], a [3], b scalar -> [2,3] */
    fedc__kshape cs = KS(2, 1), as = KS(3), os = KS(2, 3);
    uint8_t cond[] = {1, 0};
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        void *a = make(dt, 3, (double[]){1, 2, 3}), *b = make(dt, 1, (double[]){-1});
        void *y = make(dt, 6, NULL);
        CHECK_OK(K->select(dt, &cs, cond, &as, a, &SCALAR, b, &os, y));
        CHECK_ARR(dt, y, ((double[]){1, 2, 3, -1, -1, -1}), 6, 0);
        free(a), free(b), free(y);
    }
    int32_t yi[6];
    fedc__kshape c3 = KS(3);
    CHECK_OK(K->select(FEDC_I32, &c3, (uint8_t[]){0, 1, 0}, &SCALAR, (int32_t[]){7}, &os,
                       (int32_t[]){1, 2, 3, 4, 5, 6}, &os, yi));
    CHECK(yi[0] == 1 && yi[1] == 7 && yi[2] == 3 && yi[3] == 4 && yi[4] == 7 && yi[5] == 6);
}

/* ---------------------------------------------------------------- reduce -- */

static void test_reduce(void) {
    fedc__kshape xs = KS(2, 3, 4);
    double x[24], want[24];
    for (int i = 0; i < 24; i++) x[i] = i;
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        void *a = make(dt, 24, x), *y = make(dt, 24, NULL);
        CHECK_OK(K->reduce(FEDC_R_SUM, dt, &xs, 0, a, y)); /* no axes: a copy */
        CHECK_ARR(dt, y, x, 24, 0);
        CHECK_OK(K->reduce(FEDC_R_SUM, dt, &xs, 7, a, y)); /* all axes */
        CHECK_ARR(dt, y, ((double[]){276}), 1, 0);
        CHECK_OK(K->reduce(FEDC_R_SUM, dt, &xs, 2, a, y)); /* axis 1 -> [2,4] */
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 4; k++)
                want[i * 4 + k] = x[i * 12 + k] + x[i * 12 + 4 + k] + x[i * 12 + 8 + k];
        CHECK_ARR(dt, y, want, 8, 0);
        CHECK_OK(K->reduce(FEDC_R_MEAN, dt, &xs, 5, a, y)); /* axes 0 and 2 -> [3] */
        for (int j = 0; j < 3; j++) {
            want[j] = 0;
            for (int i = 0; i < 2; i++)
                for (int k = 0; k < 4; k++) want[j] += x[i * 12 + j * 4 + k] / 8;
        }
        CHECK_ARR(dt, y, want, 3, tol_of(dt));
        CHECK_OK(K->reduce(FEDC_R_MAX, dt, &xs, 6, a, y)); /* axes 1 and 2 -> [2] */
        CHECK_ARR(dt, y, ((double[]){11, 23}), 2, 0);
        free(a), free(y);
    }
}

static void test_reduce_edges(void) {
    /* MAX over an empty axis is -inf; the kept axis survives */
    fedc__kshape e = KS(2, 0);
    float y[2];
    CHECK_OK(K->reduce(FEDC_R_MAX, FEDC_F32, &e, 2, (float[]){0}, y));
    CHECK(isinf(y[0]) && y[0] < 0 && isinf(y[1]));
    /* f32 sums accumulate in double: 2^24 + 1 + 1 + 1 + 1 is exact */
    fedc__kshape s5 = KS(5);
    CHECK_OK(K->reduce(FEDC_R_SUM, FEDC_F32, &s5, 1, (float[]){16777216.0f, 1, 1, 1, 1}, y));
    CHECK(y[0] == 16777220.0f);
    /* i32: SUM wraps, MAX; MEAN is floats only */
    fedc__kshape s23 = KS(2, 3);
    int32_t xi[] = {1, -5, 3, INT32_MAX, 1, 0}, yi[3];
    CHECK_OK(K->reduce(FEDC_R_SUM, FEDC_I32, &s23, 2, xi, yi));
    CHECK(yi[0] == -1 && yi[1] == INT32_MIN);
    CHECK_OK(K->reduce(FEDC_R_MAX, FEDC_I32, &s23, 1, xi, yi));
    CHECK(yi[0] == INT32_MAX && yi[1] == 1 && yi[2] == 3);
    CHECK_ERR(K->reduce(FEDC_R_MEAN, FEDC_I32, &s23, 1, xi, yi), FEDC_EUNSUPPORTED, "i32");
    CHECK_ERR(K->reduce(FEDC_R_SUM, FEDC_F32, &s23, 4, xi, yi), FEDC_EINVAL, "axes");
}

/* ---------------------------------------------------------- data movement -- */

static void test_broadcast_to(void) {
    fedc__kshape s3 = KS(3), s21 = KS(2, 1), s23 = KS(2, 3), s223 = KS(2, 2, 3);
    double y[12];
    CHECK_OK(K->broadcast_to(8, &s3, (double[]){1, 2, 3}, &s23, y));
    CHECK_ARR(FEDC_F64, y, ((double[]){1, 2, 3, 1, 2, 3}), 6, 0);
    uint8_t yb[12];
    CHECK_OK(K->broadcast_to(1, &s21, (uint8_t[]){4, 9}, &s223, yb));
    for (int i = 0; i < 12; i++) CHECK_EQ_INT(yb[i], (i / 3) % 2 ? 9 : 4);
    CHECK_OK(K->broadcast_to(8, &SCALAR, (double[]){5}, &s23, y));
    CHECK_ARR(FEDC_F64, y, ((double[]){5, 5, 5, 5, 5, 5}), 6, 0);
    CHECK_ERR(K->broadcast_to(8, &s23, y, &s3, y), FEDC_ESHAPE, "broadcast_to");
}

/* y = transpose(x, perm) against the definition y[i...] = x[j...] with
 * j[perm[d]] = i[d], for x holding its own flat index. */
static void check_transpose(fedc__kshape xs, const int *perm) {
    int64_t n = fedc__kshape_count(&xs), xstr[FEDC_MAX_RANK];
    fedc__kshape ys = {.rank = xs.rank};
    for (int d = 0; d < xs.rank; d++) ys.dims[d] = xs.dims[perm[d]];
    for (int d = xs.rank - 1, step = 1; d >= 0; step *= (int)xs.dims[d], d--) xstr[d] = step;
    int32_t *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = (int32_t)i;
    CHECK_OK(K->transpose(4, &xs, perm, x, y));
    for (int64_t e = 0; e < n; e++) {
        int64_t rest = e, src = 0;
        for (int d = ys.rank - 1; d >= 0; d--) {
            src += (rest % ys.dims[d]) * xstr[perm[d]];
            rest /= ys.dims[d];
        }
        if (y[e] != src) {
            CHECK_MSG(0, "transpose rank %d: y[%lld] = %d, want %lld", xs.rank, (long long)e,
                      y[e], (long long)src);
            break;
        }
    }
    free(x), free(y);
}

static void test_transpose(void) {
    check_transpose(KS(2, 3, 4), (int[]){2, 0, 1});
    check_transpose(KS(2, 3, 4), (int[]){1, 2, 0});
    check_transpose(KS(2, 3, 4, 5), (int[]){3, 1, 0, 2});
    check_transpose(KS(3, 1, 2, 2), (int[]){0, 3, 2, 1});
    /* a hand case: [2,3] -> [3,2] */
    fedc__kshape s23 = KS(2, 3);
    double y[6];
    CHECK_OK(K->transpose(8, &s23, (int[]){1, 0}, (double[]){1, 2, 3, 4, 5, 6}, y));
    CHECK_ARR(FEDC_F64, y, ((double[]){1, 4, 2, 5, 3, 6}), 6, 0);
    CHECK_ERR(K->transpose(8, &s23, (int[]){1, 1}, y, y), FEDC_EINVAL, "permutation");
}

static void test_slice_pad(void) {
    fedc__kshape xs = KS(3, 4), ys = KS(2, 2);
    double x[12], y[20];
    for (int i = 0; i < 12; i++) x[i] = i;
    CHECK_OK(K->slice(8, &xs, (int64_t[]){1, 1}, x, &ys, y));
    CHECK_ARR(FEDC_F64, y, ((double[]){5, 6, 9, 10}), 4, 0);
    CHECK_ERR(K->slice(8, &xs, (int64_t[]){2, 1}, x, &ys, y), FEDC_ESHAPE, "axis 0");
    /* pad [2,2] into [4,5] at (1, 2) */
    fedc__kshape ps = KS(4, 5);
    for (int i = 0; i < 20; i++) y[i] = 99; /* pad must overwrite everything */
    CHECK_OK(K->pad(8, &ys, (int64_t[]){1, 2}, (double[]){1, 2, 3, 4}, &ps, y));
    CHECK_ARR(FEDC_F64, y,
              ((double[]){0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0}), 20, 0);
    CHECK_ERR(K->pad(8, &ys, (int64_t[]){3, 0}, x, &ps, y), FEDC_ESHAPE, "pad");
    /* slice then pad back is the identity on the window (rank 3) */
    fedc__kshape big = KS(2, 3, 4), win = KS(1, 2, 2);
    double w[4], back[24];
    double src[24] = {[18] = 7, [19] = 8, [22] = 9};
    CHECK_OK(K->slice(8, &big, (int64_t[]){1, 1, 2}, src, &win, w));
    CHECK_ARR(FEDC_F64, w, ((double[]){7, 8, 9, 0}), 4, 0);
    CHECK_OK(K->pad(8, &win, (int64_t[]){1, 1, 2}, w, &big, back));
    CHECK(back[18] == 7 && back[19] == 8 && back[22] == 9 && back[0] == 0 && back[23] == 0);
}

static void test_concat(void) {
    fedc__kshape s[2] = {KS(2, 2), KS(2, 3)};
    const void *x[2] = {(double[]){1, 2, 3, 4}, (double[]){5, 6, 7, 8, 9, 10}};
    double y[10];
    CHECK_OK(K->concat(8, 2, s, x, 1, y));
    CHECK_ARR(FEDC_F64, y, ((double[]){1, 2, 5, 6, 7, 3, 4, 8, 9, 10}), 10, 0);
    fedc__kshape r[2] = {KS(1, 3), KS(2, 3)};
    CHECK_OK(K->concat(8, 2, r, (const void *[]){(double[]){1, 2, 3}, (double[]){4, 5, 6, 7, 8, 9}},
                       0, y));
    CHECK_ARR(FEDC_F64, y, ((double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}), 9, 0);
    /* rank 3, middle axis, three inputs (one empty along the axis) */
    fedc__kshape t[3] = {KS(2, 1, 2), KS(2, 0, 2), KS(2, 2, 2)};
    int32_t yi[12];
    CHECK_OK(K->concat(4, 3, t,
                       (const void *[]){(int32_t[]){1, 2, 3, 4}, (int32_t[]){0},
                                        (int32_t[]){5, 6, 7, 8, 9, 10, 11, 12}},
                       1, yi));
    int32_t want[] = {1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12};
    for (int i = 0; i < 12; i++) CHECK_EQ_INT(yi[i], want[i]);
    CHECK_ERR(K->concat(8, 2, (fedc__kshape[]){KS(2, 2), KS(3, 3)}, x, 1, y), FEDC_ESHAPE, "concat");
}

/* ----------------------------------------------------------------- indices -- */

static void test_gather(void) {
    double table[] = {0, 1, 10, 11, 20, 21}, y[8];
    CHECK_OK(K->gather(8, 3, 2, table, 4, (int32_t[]){2, 0, 2, 1}, y));
    CHECK_ARR(FEDC_F64, y, ((double[]){20, 21, 0, 1, 20, 21, 10, 11}), 8, 0);
    CHECK_ERR(K->gather(8, 3, 2, table, 4, (int32_t[]){2, 0, 7, 1}, y), FEDC_ERANGE, "index 7");
    CHECK(strstr(fedc_errmsg(), "position 2") != NULL);
    CHECK_ERR(K->gather(8, 3, 2, table, 2, (int32_t[]){0, -1}, y), FEDC_ERANGE, "index -1");
    CHECK(strstr(fedc_errmsg(), "position 1") != NULL);
    CHECK_ERR(K->gather(8, 3, 2, table, 1, (int32_t[]){3}, y), FEDC_ERANGE, "[0, 3)");
}

static void test_scatter_add(void) {
    for (int t = 0; t < 2; t++) {
        fedc_dtype dt = FLOATS[t];
        void *u = make(dt, 8, (double[]){1, 2, 3, 4, 5, 6, 7, 8}), *y = make(dt, 6, NULL);
        fedc__ref_storef(dt, y, 0, 123); /* y is zeroed by the kernel */
        CHECK_OK(K->scatter_add(dt, 3, 2, 4, (int32_t[]){2, 1, 2, 2}, u, y));
        CHECK_ARR(dt, y, ((double[]){0, 0, 3, 4, 13, 16}), 6, 0);
        CHECK_ERR(K->scatter_add(dt, 3, 2, 4, (int32_t[]){2, 1, 3, 2}, u, y), FEDC_ERANGE,
                  "index 3");
        CHECK(strstr(fedc_errmsg(), "position 2") != NULL);
        free(u), free(y);
    }
    /* a width over the kernel's column chunk, and scatter_add is gather's transpose */
    enum { ROWS = 5, WIDTH = 70, NIDX = 6 };
    int32_t idx[NIDX] = {4, 0, 4, 2, 4, 0};
    double *tab = randoms(ROWS * WIDTH, 1), *g = randoms(NIDX * WIDTH, 2);
    double gathered[NIDX * WIDTH], scattered[ROWS * WIDTH];
    CHECK_OK(K->gather(8, ROWS, WIDTH, tab, NIDX, idx, gathered));
    CHECK_OK(K->scatter_add(FEDC_F64, ROWS, WIDTH, NIDX, idx, g, scattered));
    CHECK_NEAR(dot(gathered, g, NIDX * WIDTH), dot(tab, scattered, ROWS * WIDTH), 1e-13);
    free(tab), free(g);
    CHECK_ERR(K->scatter_add(FEDC_I32, 1, 1, 0, idx, idx, idx), FEDC_EUNSUPPORTED, "i32");
}

static void test_one_hot(void) {
    const fedc_dtype dts[] = {FEDC_F32, FEDC_F64, FEDC_I32, FEDC_U8, FEDC_BOOL};
    int32_t idx[] = {1, 3, -1, 0};
    double want[] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}; /* 3 and -1: rows of zeros */
    for (int t = 0; t < 5; t++) {
        void *y = make(dts[t], 12, NULL);
        CHECK_OK(K->one_hot(dts[t], 4, idx, 3, y));
        CHECK_ARR(dts[t], y, want, 12, 0);
        free(y);
    }
}

static void test_argmax(void) {
    /* x viewed [outer=2, len=3, inner=2]; ties keep the first */
    double x[] = {1, 5, 3, 5, 3, 2, /* o=0: i=0 -> {1,3,3}, i=1 -> {5,5,2} */
                  -1, 0, -2, 0, -1, 9};
    int32_t y[4];
    for (int t = 0; t < 2; t++) {
        void *a = make(FLOATS[t], 12, x);
        CHECK_OK(K->argmax(FLOATS[t], 2, 3, 2, a, y));
        CHECK(y[0] == 1 && y[1] == 0 && y[2] == 0 && y[3] == 2);
        free(a);
    }
    CHECK_OK(K->argmax(FEDC_I32, 1, 4, 1, (int32_t[]){-3, 7, 7, 1}, y));
    CHECK_EQ_INT(y[0], 1);
    CHECK_ERR(K->argmax(FEDC_U8, 1, 1, 1, x, y), FEDC_EUNSUPPORTED, "u8");
}

/* --------------------------------------------------------------- dropout -- */

static void test_dropout(void) {
    enum { N = 20000 };
    const double rate = 0.3;
    fedc_rng_stream s = fedc_rng_stream_make(42, 1, 2, 3);
    float *x = malloc(N * sizeof *x), *y1 = malloc(N * sizeof *y1), *y2 = malloc(N * sizeof *y2);
    for (int i = 0; i < N; i++) x[i] = (float)(1 + i % 7);
    CHECK_OK(K->dropout(FEDC_F32, N, x, s, rate, y1));
    CHECK_OK(K->dropout(FEDC_F32, N, x, s, rate, y2));
    CHECK(memcmp(y1, y2, N * sizeof *y1) == 0); /* same stream, same mask */
    int kept = 0, bad = 0;
    for (int i = 0; i < N; i++) {
        int keep = fedc_rng_uniform_f32(s, (uint64_t)i) >= rate;
        kept += y1[i] != 0;
        if (keep ? y1[i] != (float)(x[i] / (1 - rate)) : y1[i] != 0) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    /* binomial: sd = sqrt(N p (1-p)) ~ 65; allow 5 sd */
    CHECK_MSG(fabs(kept - N * (1 - rate)) < 5 * sqrt(N * rate * (1 - rate)), "kept %d of %d", kept,
              N);
    /* a different stream gives a different mask */
    CHECK_OK(K->dropout(FEDC_F32, N, x, fedc_rng_stream_make(42, 1, 2, 4), rate, y2));
    CHECK(memcmp(y1, y2, N * sizeof *y1) != 0);
    /* f64, rate 0 is the identity */
    double xd[3] = {1, -2, 3}, yd[3];
    CHECK_OK(K->dropout(FEDC_F64, 3, xd, s, 0, yd));
    CHECK_ARR(FEDC_F64, yd, xd, 3, 0);
    CHECK_ERR(K->dropout(FEDC_F64, 3, xd, s, 1.0, yd), FEDC_EINVAL, "rate");
    CHECK_ERR(K->dropout(FEDC_I32, 3, xd, s, 0.5, yd), FEDC_EUNSUPPORTED, "i32");
    free(x), free(y1), free(y2);
}

/* ------------------------------------------------------------ cast, iota -- */

static void test_cast(void) {
    float f[] = {0.0f, -0.0f, 0.5f, -2.7f, 2.7f, NAN, 3e9f, -3e9f, 300.0f, -5.0f};
    uint8_t b[10];
    CHECK_OK(K->cast(FEDC_F32, FEDC_BOOL, 10, f, b));
    const uint8_t wb[] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(b[i], wb[i]);
    int32_t yi[10];
    CHECK_OK(K->cast(FEDC_F32, FEDC_I32, 10, f, yi));
    const int32_t wi[] = {0, 0, 0, -2, 2, 0, INT32_MAX, INT32_MIN, 300, -5};
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(yi[i], wi[i]);
    CHECK_OK(K->cast(FEDC_F64, FEDC_U8, 4, (double[]){2.9, -1.5, 255.9, 1e6}, b));
    CHECK(b[0] == 2 && b[1] == 0 && b[2] == 255 && b[3] == 255);
    CHECK_OK(K->cast(FEDC_I32, FEDC_U8, 3, (int32_t[]){300, -1, 7}, b)); /* wraps */
    CHECK(b[0] == 44 && b[1] == 255 && b[2] == 7);
    float yf[3];
    CHECK_OK(K->cast(FEDC_BOOL, FEDC_F32, 3, (uint8_t[]){1, 0, 1}, yf));
    CHECK(yf[0] == 1 && yf[1] == 0 && yf[2] == 1);
    double yd[3];
    CHECK_OK(K->cast(FEDC_I32, FEDC_F64, 3, (int32_t[]){-7, INT32_MAX, 0}, yd));
    CHECK(yd[0] == -7 && yd[1] == 2147483647.0 && yd[2] == 0);
    CHECK_OK(K->cast(FEDC_F64, FEDC_F32, 2, (double[]){0.1, 1e300}, yf));
    CHECK(yf[0] == 0.1f && isinf(yf[1]));
    CHECK_OK(K->cast(FEDC_U8, FEDC_I32, 2, (uint8_t[]){200, 3}, yi));
    CHECK(yi[0] == 200 && yi[1] == 3);
    CHECK_OK(K->cast(FEDC_I32, FEDC_BOOL, 3, (int32_t[]){0, -4, 9}, b));
    CHECK(b[0] == 0 && b[1] == 1 && b[2] == 1);
}

static void test_iota(void) {
    fedc__kshape s = KS(2, 3);
    int32_t yi[6];
    CHECK_OK(K->iota(FEDC_I32, &s, 0, yi));
    CHECK(yi[0] == 0 && yi[2] == 0 && yi[3] == 1 && yi[5] == 1);
    CHECK_OK(K->iota(FEDC_I32, &s, 1, yi));
    CHECK(yi[0] == 0 && yi[1] == 1 && yi[2] == 2 && yi[3] == 0 && yi[5] == 2);
    for (int t = 0; t < 2; t++) {
        fedc__kshape r3 = KS(2, 3, 2);
        void *y = make(FLOATS[t], 12, NULL);
        CHECK_OK(K->iota(FLOATS[t], &r3, 1, y));
        CHECK_ARR(FLOATS[t], y, ((double[]){0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}), 12, 0);
        free(y);
    }
    CHECK_ERR(K->iota(FEDC_I32, &s, 2, yi), FEDC_EINVAL, "axis 2");
    CHECK_ERR(K->iota(FEDC_U8, &s, 0, yi), FEDC_EUNSUPPORTED, "u8");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"table_complete", test_table_complete},
        {"kshape_count", test_kshape_count},
        {"unary", test_unary},
        {"unary_edges", test_unary_edges},
        {"binary_broadcast", test_binary_broadcast},
        {"binary_rank3", test_binary_rank3},
        {"binary_compare_and_i32", test_binary_compare_and_i32},
        {"select", test_select},
        {"reduce", test_reduce},
        {"reduce_edges", test_reduce_edges},
        {"broadcast_to", test_broadcast_to},
        {"transpose", test_transpose},
        {"slice_pad", test_slice_pad},
        {"concat", test_concat},
        {"gather", test_gather},
        {"scatter_add", test_scatter_add},
        {"one_hot", test_one_hot},
        {"argmax", test_argmax},
        {"dropout", test_dropout},
        {"cast", test_cast},
        {"iota", test_iota},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
