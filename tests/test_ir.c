/*
 * Tests for programs (fedc/program.h): every builder function's result type
 * (matmul with transposes and batched/shared operands, broadcasting, reductions,
 * shape ops, indexing, convolution and pooling with VALID/SAME padding, losses,
 * dropout, cast, iota); builder errors and their messages; the sticky first
 * error; unique input/output names. The whole-program checks and transforms are
 * test_ir_passes.c's.
 */
#include "ir_check.h"

#include <string.h>

#include "ir/ir.h"

/* ------------------------------------------------------------- sources -- */

static void test_sources(void) {
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3, 4));
        fedc_type st = TY(FEDC_F64, 5);
        st.placement = FEDC_SERVER;
        fedc_value s = fedc_input(p, "s", st);
        float data[6] = {1, 2, 3, 4, 5, 6};
        fedc_value c = fedc_constant(p, TY(FEDC_F32, 2, 3), data);
        fedc_value k = fedc_scalar(p, FEDC_I32, 7);
        fedc_value kl = fedc_scalar_like(p, s, 2.5);
        fedc_value f = fedc_full(p, TY(FEDC_U8, 2, 2), 3);
        fedc_value io = fedc_iota(p, TY(FEDC_I32, 3, 4), 1);
        fedc_value iof = fedc_iota(p, TY(FEDC_F64, 5), -1);
        CHECK_TYPE(p, x, "f32[3,4]");
        CHECK_TYPE(p, s, "f64[5]@server");
        CHECK_TYPE(p, c, "f32[2,3]");
        CHECK_TYPE(p, k, "i32[]");
        CHECK_TYPE(p, kl, "f64[]@server");
        CHECK_TYPE(p, f, "u8[2,2]");
        CHECK_TYPE(p, io, "i32[3,4]");
        CHECK_TYPE(p, iof, "f64[5]");
        CHECK_OK(fedc_program_status(p));
        CHECK_EQ_INT(fedc_program_size(p), 8);
        CHECK_EQ_INT(fedc_program_num_inputs(p), 2);
        CHECK_EQ_INT(fedc_program_input(p, 0), x);
        CHECK_EQ_INT(fedc_program_input(p, 1), s);
        CHECK_EQ_INT(fedc_program_input(p, 2), FEDC_NONE);
        CHECK(strcmp(fedc_program_input_name(p, 1), "s") == 0);
        CHECK(fedc_program_input_name(p, 2) == NULL);
        CHECK_EQ_INT(fedc_program_find_input(p, "s"), s);
        CHECK_EQ_INT(fedc_program_find_input(p, "nope"), FEDC_NONE);
        CHECK(strcmp(fedc_value_op_name(p, x), "input") == 0);
        CHECK(strcmp(fedc_value_op_name(p, c), "constant") == 0);
        CHECK(strcmp(fedc_value_op_name(p, io), "iota") == 0);
        /* The constant keeps a copy of the data. */
        data[0] = 100;
        CHECK(((const float *)fedc__node_at(p, c)->data)[0] == 1.0f);
        CHECK(((const float *)fedc__node_at(p, c)->data)[5] == 6.0f);
        CHECK(((const int32_t *)fedc__node_at(p, k)->data)[0] == 7);
        CHECK(((const double *)fedc__node_at(p, kl)->data)[0] == 2.5);
        CHECK(((const uint8_t *)fedc__node_at(p, f)->data)[3] == 3);
    });
    WITH_PROGRAM(p, { /* iota's axis must be in range */
        fedc_value v = fedc_iota(p, TY(FEDC_F32, 3, 4), 2);
        CHECK_BUILD_FAILS(p, v, FEDC_EINVAL, "iota", "axis 2");
    });
    WITH_PROGRAM(p, {
        fedc_value v = fedc_iota(p, TY(FEDC_BOOL, 3), 0);
        CHECK_BUILD_FAILS(p, v, FEDC_ETYPE, "iota", "bool");
    });
    WITH_PROGRAM(p, {
        fedc_value v = fedc_constant(p, TY(FEDC_F32, 3), NULL);
        CHECK_BUILD_FAILS(p, v, FEDC_EINVAL, "constant");
    });
    WITH_PROGRAM(p, { /* a negative dimension is refused by the builder, not left for verify */
        fedc_value v = fedc_input(p, "neg", TY(FEDC_F32, 3, -2));
        CHECK_BUILD_FAILS(p, v, FEDC_ESHAPE, "input", "f32[3,-2]", "negative");
    });
    WITH_PROGRAM(p, { /* ... and not reported as out of memory for a constant */
        float data[1] = {0};
        fedc_value v = fedc_constant(p, TY(FEDC_F32, 1, -1), data);
        CHECK_BUILD_FAILS(p, v, FEDC_ESHAPE, "constant", "negative");
    });
    WITH_PROGRAM(p, {
        fedc_value v = fedc_full(p, TY(FEDC_F32, -5), 1.0);
        CHECK_BUILD_FAILS(p, v, FEDC_ESHAPE, "negative");
    });
    WITH_PROGRAM(p, {
        fedc_value v = fedc_iota(p, TY(FEDC_I32, 2, -5), 0);
        CHECK_BUILD_FAILS(p, v, FEDC_ESHAPE, "iota", "negative");
    });
    WITH_PROGRAM(p, {
        fedc_type t = TY(FEDC_F32, 3);
        t.rank = 7;
        CHECK_BUILD_FAILS(p, fedc_input(p, "big", t), FEDC_ESHAPE, "input");
    });
}

/* ------------------------------------------------------------- matmul -- */

static void test_matmul_shapes(void) {
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 32, 784));
        fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 784, 10));
        fedc_value xt = fedc_input(p, "xt", TY(FEDC_F32, 784, 32));
        fedc_value wt = fedc_input(p, "wt", TY(FEDC_F32, 10, 784));
        fedc_value y = fedc_matmul(p, x, w, false, false);
        CHECK_TYPE(p, y, "f32[32,10]");
        CHECK(strcmp(fedc_value_op_name(p, y), "matmul") == 0);
        CHECK_TYPE(p, fedc_matmul(p, xt, w, true, false), "f32[32,10]");
        CHECK_TYPE(p, fedc_matmul(p, x, wt, false, true), "f32[32,10]");
        CHECK_TYPE(p, fedc_matmul(p, xt, wt, true, true), "f32[32,10]");
        CHECK_TYPE(p, fedc_matmul(p, w, x, true, true), "f32[10,32]");
        /* batched, both operands */
        fedc_value a = fedc_input(p, "a", TY(FEDC_F64, 5, 3, 4));
        fedc_value b = fedc_input(p, "b", TY(FEDC_F64, 5, 4, 2));
        fedc_value bt = fedc_input(p, "bt", TY(FEDC_F64, 5, 2, 4));
        fedc_value shared = fedc_input(p, "shared", TY(FEDC_F64, 4, 2));
        fedc_value shared_a = fedc_input(p, "shared_a", TY(FEDC_F64, 3, 4));
        fedc_value a4 = fedc_input(p, "a4", TY(FEDC_F64, 2, 5, 3, 4));
        CHECK_TYPE(p, fedc_matmul(p, a, b, false, false), "f64[5,3,2]");
        CHECK_TYPE(p, fedc_matmul(p, a, bt, false, true), "f64[5,3,2]");
        fedc_value c = fedc_input(p, "c", TY(FEDC_F64, 5, 2, 3));
        CHECK_TYPE(p, fedc_matmul(p, a, c, true, true), "f64[5,4,2]"); /* [5,3,4]^T @ [5,2,3]^T */
        /* a rank-2 operand is shared by every batch */
        CHECK_TYPE(p, fedc_matmul(p, a, shared, false, false), "f64[5,3,2]");
        CHECK_TYPE(p, fedc_matmul(p, shared_a, b, false, false), "f64[5,3,2]");
        CHECK_TYPE(p, fedc_matmul(p, a, shared_a, true, false), "f64[5,4,4]");
        CHECK_TYPE(p, fedc_matmul(p, a4, shared, false, false), "f64[2,5,3,2]");
    });
}

static void test_matmul_errors(void) {
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 32, 784));
        fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 785, 10));
        fedc_value y = fedc_matmul(p, x, w, false, false);
        CHECK_BUILD_FAILS(p, y, FEDC_ESHAPE, "matmul", "f32[32,784]", "f32[785,10]");
    });
    WITH_PROGRAM(p, { /* transposed operands: the message says which */
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 32, 784));
        fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 784, 10));
        fedc_value y = fedc_matmul(p, x, w, true, false);
        CHECK_BUILD_FAILS(p, y, FEDC_ESHAPE, "matmul", "f32[32,784] (transposed)", "f32[784,10]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3, 4));
        fedc_value w = fedc_input(p, "w", TY(FEDC_F64, 4, 2));
        CHECK_BUILD_FAILS(p, fedc_matmul(p, x, w, false, false), FEDC_ETYPE, "matmul", "f32[3,4]", "f64[4,2]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_I32, 3, 4));
        fedc_value w = fedc_input(p, "w", TY(FEDC_I32, 4, 2));
        CHECK_BUILD_FAILS(p, fedc_matmul(p, x, w, false, false), FEDC_ETYPE, "matmul", "i32[3,4]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 4));
        fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 4, 2));
        CHECK_BUILD_FAILS(p, fedc_matmul(p, x, w, false, false), FEDC_ESHAPE, "matmul", "f32[4]");
    });
    WITH_PROGRAM(p, {
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 5, 3, 4));
        fedc_value b = fedc_input(p, "b", TY(FEDC_F32, 6, 4, 2));
        CHECK_BUILD_FAILS(p, fedc_matmul(p, a, b, false, false), FEDC_ESHAPE, "matmul", "batch", "f32[5,3,4]",
                          "f32[6,4,2]");
    });
}

/* ----------------------------------------------------------- elementwise -- */

static void test_elementwise(void) {
    WITH_PROGRAM(p, {
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 4, 1, 3));
        fedc_value b = fedc_input(p, "b", TY(FEDC_F32, 5, 1));
        fedc_value v = fedc_input(p, "v", TY(FEDC_F32, 3));
        fedc_value s = fedc_scalar(p, FEDC_F32, 2);
        fedc_value i = fedc_input(p, "i", TY(FEDC_I32, 2, 3));
        CHECK_TYPE(p, fedc_add(p, a, b), "f32[4,5,3]");
        CHECK_TYPE(p, fedc_sub(p, b, a), "f32[4,5,3]");
        CHECK_TYPE(p, fedc_mul(p, v, s), "f32[3]");
        CHECK_TYPE(p, fedc_div(p, s, s), "f32[]");
        CHECK_TYPE(p, fedc_maximum(p, a, v), "f32[4,1,3]");
        CHECK_TYPE(p, fedc_minimum(p, b, v), "f32[5,3]");
        CHECK_TYPE(p, fedc_add(p, i, i), "i32[2,3]");
        CHECK_TYPE(p, fedc_neg(p, i), "i32[2,3]");
        CHECK_TYPE(p, fedc_exp(p, a), "f32[4,1,3]");
        CHECK_TYPE(p, fedc_log(p, b), "f32[5,1]");
        CHECK_TYPE(p, fedc_tanh(p, v), "f32[3]");
        CHECK_TYPE(p, fedc_sigmoid(p, v), "f32[3]");
        CHECK_TYPE(p, fedc_relu(p, v), "f32[3]");
        CHECK_TYPE(p, fedc_sqrt(p, v), "f32[3]");
        CHECK_TYPE(p, fedc_square(p, v), "f32[3]");
        CHECK_TYPE(p, fedc_pow(p, v, 3), "f32[3]");
        fedc_value lt = fedc_lt(p, a, b);
        CHECK_TYPE(p, lt, "bool[4,5,3]");
        CHECK_TYPE(p, fedc_eq(p, i, i), "bool[2,3]");
        CHECK_TYPE(p, fedc_ne(p, v, s), "bool[3]");
        CHECK_TYPE(p, fedc_le(p, v, v), "bool[3]");
        CHECK_TYPE(p, fedc_gt(p, v, v), "bool[3]");
        CHECK_TYPE(p, fedc_ge(p, v, v), "bool[3]");
        fedc_value cond = fedc_lt(p, b, s); /* bool[5,1] */
        CHECK_TYPE(p, fedc_select(p, cond, v, s), "f32[5,3]");
        CHECK_TYPE(p, fedc_select(p, lt, a, b), "f32[4,5,3]");
        CHECK_OK(fedc_program_status(p));
    });
    WITH_PROGRAM(p, { /* placements propagate; local values join either; server and clients never meet */
        fedc_type ts = TY(FEDC_F32, 3), tsrv = TY(FEDC_F32, 3);
        ts.placement = FEDC_CLIENTS;
        tsrv.placement = FEDC_SERVER;
        fedc_value a = fedc_input(p, "a", ts);
        fedc_value b = fedc_input(p, "b", ts);
        fedc_value l = fedc_input(p, "l", TY(FEDC_F32, 3));
        fedc_value s = fedc_input(p, "s", tsrv);
        CHECK_TYPE(p, fedc_add(p, a, b), "f32[3]@clients");
        CHECK_TYPE(p, fedc_add(p, a, l), "f32[3]@clients");
        CHECK_TYPE(p, fedc_add(p, l, s), "f32[3]@server");
        CHECK_BUILD_FAILS(p, fedc_add(p, a, s), FEDC_ETYPE, "add", "f32[3]@server", "f32[3]@clients");
    });
    WITH_PROGRAM(p, {
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 2, 3));
        fedc_value b = fedc_input(p, "b", TY(FEDC_F32, 3, 2));
        CHECK_BUILD_FAILS(p, fedc_add(p, a, b), FEDC_ESHAPE, "add", "f32[2,3]", "f32[3,2]");
    });
    WITH_PROGRAM(p, {
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 3));
        fedc_value b = fedc_input(p, "b", TY(FEDC_F64, 3));
        CHECK_BUILD_FAILS(p, fedc_add(p, a, b), FEDC_ETYPE, "add", "f32[3]", "f64[3]", "cast");
    });
    WITH_PROGRAM(p, {
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 3));
        fedc_value b = fedc_input(p, "b", TY(FEDC_I32, 3));
        CHECK_BUILD_FAILS(p, fedc_mul(p, a, b), FEDC_ETYPE, "mul", "cast");
    });
    WITH_PROGRAM(p, {
        fedc_value i = fedc_input(p, "i", TY(FEDC_I32, 3));
        CHECK_BUILD_FAILS(p, fedc_exp(p, i), FEDC_ETYPE, "exp", "i32[3]");
    });
    WITH_PROGRAM(p, {
        fedc_value i = fedc_input(p, "i", TY(FEDC_I32, 3));
        CHECK_BUILD_FAILS(p, fedc_div(p, i, i), FEDC_ETYPE, "div", "i32[3]");
    });
    WITH_PROGRAM(p, {
        fedc_value u = fedc_input(p, "u", TY(FEDC_BOOL, 3));
        CHECK_BUILD_FAILS(p, fedc_add(p, u, u), FEDC_ETYPE, "add", "bool[3]");
    });
    WITH_PROGRAM(p, { /* select: condition must be bool, branches share a dtype */
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 3));
        CHECK_BUILD_FAILS(p, fedc_select(p, a, a, a), FEDC_ETYPE, "select", "bool");
    });
    WITH_PROGRAM(p, {
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 3));
        fedc_value d = fedc_input(p, "d", TY(FEDC_F64, 3));
        CHECK_BUILD_FAILS(p, fedc_select(p, fedc_lt(p, a, a), a, d), FEDC_ETYPE, "select", "f32[3]", "f64[3]");
    });
    WITH_PROGRAM(p, { /* an operand that is not a value of the program */
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 3));
        CHECK_BUILD_FAILS(p, fedc_add(p, a, 99), FEDC_EINVAL, "add", "%99");
    });
}

/* ------------------------------------------------------------ reductions -- */

static void test_reductions(void) {
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
        fedc_value i = fedc_input(p, "i", TY(FEDC_I32, 2, 3, 4));
        CHECK_TYPE(p, fedc_reduce_sum(p, x, (int[]){1}, 1, false), "f32[2,4]");
        CHECK_TYPE(p, fedc_reduce_sum(p, x, (int[]){1}, 1, true), "f32[2,1,4]");
        CHECK_TYPE(p, fedc_reduce_mean(p, x, (int[]){-1}, 1, false), "f32[2,3]");
        CHECK_TYPE(p, fedc_reduce_mean(p, x, (int[]){-1}, 1, true), "f32[2,3,1]");
        CHECK_TYPE(p, fedc_reduce_max(p, x, (int[]){0, -1}, 2, true), "f32[1,3,1]");
        CHECK_TYPE(p, fedc_reduce_max(p, x, (int[]){-3, 2}, 2, false), "f32[3]");
        CHECK_TYPE(p, fedc_reduce_sum(p, x, NULL, -1, false), "f32[]");
        CHECK_TYPE(p, fedc_reduce_mean(p, x, NULL, -1, true), "f32[1,1,1]");
        CHECK_TYPE(p, fedc_reduce_sum(p, x, NULL, 0, false), "f32[2,3,4]");
        CHECK_TYPE(p, fedc_reduce_sum(p, i, (int[]){2}, 1, false), "i32[2,3]");
        CHECK_TYPE(p, fedc_reduce_max(p, i, NULL, -1, false), "i32[]");
        CHECK_TYPE(p, fedc_argmax(p, x, -1), "i32[2,3]");
        CHECK_TYPE(p, fedc_argmax(p, x, 1), "i32[2,4]");
        CHECK_TYPE(p, fedc_argmax(p, i, 0), "i32[3,4]");
        /* a negative axis is stored as given and resolved by the rule */
        fedc_value r = fedc_reduce_sum(p, x, (int[]){-2}, 1, true);
        CHECK_TYPE(p, r, "f32[2,1,4]");
        int count = 0;
        const int64_t *axes = fedc__attr_ints(fedc__node_at(p, r), FEDC_ATTR_AXES, &count);
        CHECK_EQ_INT(count, 1);
        if (count == 1) CHECK(axes[0] == -2 || axes[0] == 1);
        CHECK_EQ_INT(fedc__attr_int(fedc__node_at(p, r), FEDC_ATTR_KEEPDIMS, -1), 1);
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
        CHECK_BUILD_FAILS(p, fedc_reduce_sum(p, x, (int[]){3}, 1, false), FEDC_EINVAL, "reduce_sum", "axis 3",
                          "range");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
        CHECK_BUILD_FAILS(p, fedc_reduce_mean(p, x, (int[]){-4}, 1, false), FEDC_EINVAL, "reduce_mean", "-4");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
        CHECK_BUILD_FAILS(p, fedc_reduce_max(p, x, (int[]){1, -2}, 2, false), FEDC_EINVAL, "reduce_max", "twice");
    });
    WITH_PROGRAM(p, {
        fedc_value i = fedc_input(p, "i", TY(FEDC_I32, 2, 3));
        CHECK_BUILD_FAILS(p, fedc_reduce_mean(p, i, NULL, -1, false), FEDC_ETYPE, "reduce_mean", "i32[2,3]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3));
        CHECK_BUILD_FAILS(p, fedc_argmax(p, x, 2), FEDC_EINVAL, "argmax", "f32[2,3]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3));
        CHECK_BUILD_FAILS(p, fedc_argmax(p, x, -3), FEDC_EINVAL, "argmax");
    });
}

/* ---------------------------------------------------------------- shapes -- */

static void test_shape_ops(void) {
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
        CHECK_TYPE(p, fedc_reshape(p, x, 2, DIMS(-1, 4)), "f32[6,4]");
        CHECK_TYPE(p, fedc_reshape(p, x, 2, DIMS(4, -1)), "f32[4,6]");
        CHECK_TYPE(p, fedc_reshape(p, x, 1, DIMS(-1)), "f32[24]");
        CHECK_TYPE(p, fedc_reshape(p, x, 4, DIMS(2, -1, 2, 3)), "f32[2,2,2,3]");
        CHECK_TYPE(p, fedc_reshape(p, x, 3, DIMS(1, 24, 1)), "f32[1,24,1]");
        fedc_value one = fedc_input(p, "one", TY(FEDC_F32, 1, 1));
        CHECK_TYPE(p, fedc_reshape(p, one, 0, NULL), "f32[]");
        CHECK_TYPE(p, fedc_transpose(p, x, (int[]){2, 0, 1}), "f32[4,2,3]");
        CHECK_TYPE(p, fedc_transpose(p, x, (int[]){0, 1, 2}), "f32[2,3,4]");
        CHECK_TYPE(p, fedc_broadcast_to(p, fedc_input(p, "c", TY(FEDC_F32, 3, 1)), 3, DIMS(2, 3, 4)), "f32[2,3,4]");
        fedc_value m = fedc_input(p, "m", TY(FEDC_I32, 5, 6));
        CHECK_TYPE(p, fedc_slice(p, m, DIMS(1, 2), DIMS(4, 6)), "i32[3,4]");
        CHECK_TYPE(p, fedc_slice(p, m, DIMS(0, 0), DIMS(5, 6)), "i32[5,6]");
        CHECK_TYPE(p, fedc_slice(p, m, DIMS(2, 3), DIMS(2, 3)), "i32[0,0]");
        fedc_value parts[3] = {fedc_input(p, "p0", TY(FEDC_F32, 2, 3)), fedc_input(p, "p1", TY(FEDC_F32, 2, 5)),
                               fedc_input(p, "p2", TY(FEDC_F32, 2, 1))};
        CHECK_TYPE(p, fedc_concat(p, parts, 3, 1), "f32[2,9]");
        CHECK_TYPE(p, fedc_concat(p, parts, 3, -1), "f32[2,9]");
        CHECK_TYPE(p, fedc_concat(p, parts, 1, 0), "f32[2,3]");
        fedc_value rows[2] = {parts[0], parts[0]};
        CHECK_TYPE(p, fedc_concat(p, rows, 2, 0), "f32[4,3]");
        CHECK_TYPE(p, fedc_pad(p, parts[0], DIMS(1, 0), DIMS(2, 3)), "f32[5,6]");
        CHECK_OK(fedc_program_status(p));
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
        CHECK_BUILD_FAILS(p, fedc_reshape(p, x, 2, DIMS(5, -1)), FEDC_ESHAPE, "reshape", "f32[2,3,4]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
        CHECK_BUILD_FAILS(p, fedc_reshape(p, x, 2, DIMS(2, 2)), FEDC_ESHAPE, "reshape", "f32[2,3,4]", "24");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
        CHECK_BUILD_FAILS(p, fedc_transpose(p, x, (int[]){0, 0, 1}), FEDC_EINVAL, "transpose", "perm");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 2, 3, 4));
        CHECK_BUILD_FAILS(p, fedc_transpose(p, x, (int[]){0, 1, 3}), FEDC_EINVAL, "transpose", "perm");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3, 2));
        CHECK_BUILD_FAILS(p, fedc_broadcast_to(p, x, 2, DIMS(3, 4)), FEDC_ESHAPE, "broadcast_to", "f32[3,2]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3, 2));
        CHECK_BUILD_FAILS(p, fedc_broadcast_to(p, x, 1, DIMS(2)), FEDC_ESHAPE, "broadcast_to");
    });
    WITH_PROGRAM(p, {
        fedc_value m = fedc_input(p, "m", TY(FEDC_F32, 5, 6));
        CHECK_BUILD_FAILS(p, fedc_slice(p, m, DIMS(1, 2), DIMS(6, 6)), FEDC_ESHAPE, "slice", "f32[5,6]", "axis 0");
    });
    WITH_PROGRAM(p, {
        fedc_value m = fedc_input(p, "m", TY(FEDC_F32, 5, 6));
        CHECK_BUILD_FAILS(p, fedc_slice(p, m, DIMS(-1, 0), DIMS(2, 6)), FEDC_ESHAPE, "slice");
    });
    WITH_PROGRAM(p, {
        fedc_value m = fedc_input(p, "m", TY(FEDC_F32, 5, 6));
        CHECK_BUILD_FAILS(p, fedc_slice(p, m, DIMS(0, 4), DIMS(5, 3)), FEDC_ESHAPE, "slice", "axis 1");
    });
    WITH_PROGRAM(p, {
        fedc_value parts[2] = {fedc_input(p, "a", TY(FEDC_F32, 2, 3)), fedc_input(p, "b", TY(FEDC_F32, 3, 3))};
        CHECK_BUILD_FAILS(p, fedc_concat(p, parts, 2, 1), FEDC_ESHAPE, "concat", "f32[3,3]", "f32[2,3]");
    });
    WITH_PROGRAM(p, {
        fedc_value parts[2] = {fedc_input(p, "a", TY(FEDC_F32, 2, 3)), fedc_input(p, "b", TY(FEDC_F64, 2, 3))};
        fedc_value v = fedc_concat(p, parts, 2, 0);
        CHECK(v == FEDC_NONE);
        CHECK(fedc_program_status(p) != FEDC_OK);
        CHECK(strstr(fedc_errmsg(), "concat") && strstr(fedc_errmsg(), "f64[2,3]"));
    });
    WITH_PROGRAM(p, {
        fedc_value parts[1] = {fedc_input(p, "a", TY(FEDC_F32, 2, 3))};
        CHECK_BUILD_FAILS(p, fedc_concat(p, parts, 1, 2), FEDC_EINVAL, "concat", "axis");
    });
    WITH_PROGRAM(p, {
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 2, 3));
        CHECK_BUILD_FAILS(p, fedc_concat(p, &a, 0, 0), FEDC_EINVAL, "concat");
    });
    WITH_PROGRAM(p, {
        fedc_value a = fedc_input(p, "a", TY(FEDC_F32, 2, 3));
        CHECK_BUILD_FAILS(p, fedc_pad(p, a, DIMS(0, -1), DIMS(0, 0)), FEDC_EINVAL, "pad", "axis 1");
    });
}

/* -------------------------------------------------------------- indexing -- */

static void test_indexing(void) {
    WITH_PROGRAM(p, {
        fedc_value table = fedc_input(p, "table", TY(FEDC_F32, 10, 4));
        fedc_value idx = fedc_input(p, "idx", TY(FEDC_I32, 3, 5));
        fedc_value flat = fedc_input(p, "flat", TY(FEDC_F64, 10));
        fedc_value i7 = fedc_input(p, "i7", TY(FEDC_I32, 7));
        CHECK_TYPE(p, fedc_gather(p, table, idx), "f32[3,5,4]");
        CHECK_TYPE(p, fedc_gather(p, flat, i7), "f64[7]");
        CHECK_TYPE(p, fedc_gather(p, table, fedc_scalar(p, FEDC_I32, 2)), "f32[4]");
        fedc_value upd = fedc_input(p, "upd", TY(FEDC_F32, 3, 5, 4));
        CHECK_TYPE(p, fedc_scatter_add(p, upd, idx, 10), "f32[10,4]");
        CHECK_TYPE(p, fedc_scatter_add(p, fedc_input(p, "u7", TY(FEDC_F64, 7)), i7, 12), "f64[12]");
        CHECK_TYPE(p, fedc_one_hot(p, i7, 10, FEDC_F32), "f32[7,10]");
        CHECK_TYPE(p, fedc_one_hot(p, idx, 3, FEDC_F64), "f64[3,5,3]");
        CHECK_TYPE(p, fedc_one_hot(p, idx, 3, FEDC_I32), "i32[3,5,3]");
        CHECK_OK(fedc_program_status(p));
    });
    WITH_PROGRAM(p, {
        fedc_value table = fedc_input(p, "table", TY(FEDC_F32, 10, 4));
        fedc_value idx = fedc_input(p, "idx", TY(FEDC_F32, 3));
        CHECK_BUILD_FAILS(p, fedc_gather(p, table, idx), FEDC_ETYPE, "gather", "i32", "f32[3]");
    });
    WITH_PROGRAM(p, {
        fedc_value table = fedc_input(p, "table", TY(FEDC_F32, 10, 4));
        fedc_value idx = fedc_input(p, "idx", TY(FEDC_I32, 3, 5));
        fedc_value upd = fedc_input(p, "upd", TY(FEDC_F32, 3, 4, 4));
        (void)table;
        CHECK_BUILD_FAILS(p, fedc_scatter_add(p, upd, idx, 10), FEDC_ESHAPE, "scatter_add", "f32[3,4,4]", "i32[3,5]");
    });
    WITH_PROGRAM(p, {
        fedc_value idx = fedc_input(p, "idx", TY(FEDC_I32, 3));
        fedc_value upd = fedc_input(p, "upd", TY(FEDC_F32, 3));
        CHECK_BUILD_FAILS(p, fedc_scatter_add(p, upd, idx, -1), FEDC_EINVAL, "scatter_add", "rows");
    });
    WITH_PROGRAM(p, {
        fedc_value idx = fedc_input(p, "idx", TY(FEDC_F32, 3));
        CHECK_BUILD_FAILS(p, fedc_one_hot(p, idx, 4, FEDC_F32), FEDC_ETYPE, "one_hot", "f32[3]");
    });
    WITH_PROGRAM(p, {
        fedc_value idx = fedc_input(p, "idx", TY(FEDC_I32, 3));
        CHECK_BUILD_FAILS(p, fedc_one_hot(p, idx, -2, FEDC_F32), FEDC_EINVAL, "one_hot", "depth");
    });
}

/* --------------------------------------------------- convolution, pools -- */

static void test_conv_pool_shapes(void) {
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 8, 28, 28, 1));
        fedc_value w5 = fedc_input(p, "w5", TY(FEDC_F32, 5, 5, 1, 32));
        fedc_value w3 = fedc_input(p, "w3", TY(FEDC_F32, 3, 3, 1, 16));
        fedc_value same2 = fedc_conv2d(p, x, w5, 2, 2, FEDC_PAD_SAME);
        CHECK_TYPE(p, same2, "f32[8,14,14,32]");
        CHECK(strcmp(fedc_value_op_name(p, same2), "conv2d") == 0);
        /* SAME for 28 with a 5-wide window and stride 2: 3 padding rows, the odd one at the bottom */
        int count = 0;
        const int64_t *pads = fedc__attr_ints(fedc__node_at(p, same2), FEDC_ATTR_PADS, &count);
        CHECK_EQ_INT(count, 4);
        if (count == 4) {
            CHECK_EQ_INT(pads[0], 1);
            CHECK_EQ_INT(pads[1], 2);
            CHECK_EQ_INT(pads[2], 1);
            CHECK_EQ_INT(pads[3], 2);
        }
        CHECK_TYPE(p, fedc_conv2d(p, x, w3, 1, 1, FEDC_PAD_VALID), "f32[8,26,26,16]");
        CHECK_TYPE(p, fedc_conv2d(p, x, w3, 2, 2, FEDC_PAD_VALID), "f32[8,13,13,16]");
        CHECK_TYPE(p, fedc_conv2d(p, x, w3, 1, 1, FEDC_PAD_SAME), "f32[8,28,28,16]");
        CHECK_TYPE(p, fedc_conv2d(p, x, w3, 2, 2, FEDC_PAD_SAME), "f32[8,14,14,16]");
        CHECK_TYPE(p, fedc_conv2d(p, x, w3, 2, 1, FEDC_PAD_SAME), "f32[8,14,28,16]");
        CHECK_TYPE(p, fedc_conv2d(p, x, w5, 3, 3, FEDC_PAD_SAME), "f32[8,10,10,32]");
        CHECK_TYPE(p, fedc_conv2d(p, x, w5, 1, 1, FEDC_PAD_VALID), "f32[8,24,24,32]");
        fedc_value x7 = fedc_input(p, "x7", TY(FEDC_F64, 2, 7, 7, 3));
        fedc_value w7 = fedc_input(p, "w7", TY(FEDC_F64, 3, 3, 3, 4));
        CHECK_TYPE(p, fedc_conv2d(p, x7, w7, 2, 2, FEDC_PAD_SAME), "f64[2,4,4,4]");
        CHECK_TYPE(p, fedc_conv2d(p, x7, w7, 2, 2, FEDC_PAD_VALID), "f64[2,3,3,4]");
        fedc_value h = fedc_input(p, "h", TY(FEDC_F32, 8, 28, 28, 32));
        CHECK_TYPE(p, fedc_max_pool2d(p, h, 2, 2, 2, 2, FEDC_PAD_VALID), "f32[8,14,14,32]");
        CHECK_TYPE(p, fedc_max_pool2d(p, h, 3, 3, 2, 2, FEDC_PAD_SAME), "f32[8,14,14,32]");
        CHECK_TYPE(p, fedc_max_pool2d(p, h, 3, 3, 2, 2, FEDC_PAD_VALID), "f32[8,13,13,32]");
        CHECK_TYPE(p, fedc_avg_pool2d(p, x7, 3, 3, 2, 2, FEDC_PAD_SAME), "f64[2,4,4,3]");
        CHECK_TYPE(p, fedc_avg_pool2d(p, x7, 3, 3, 2, 2, FEDC_PAD_VALID), "f64[2,3,3,3]");
        CHECK_TYPE(p, fedc_avg_pool2d(p, x7, 2, 3, 1, 2, FEDC_PAD_VALID), "f64[2,6,3,3]");
        /* the gradient ops give back the forward input and filter shapes */
        fedc_value dy = fedc_input(p, "dy", TY(FEDC_F32, 8, 14, 14, 32));
        const int64_t same_pads[4] = {1, 2, 1, 2};
        fedc_type xt = TY(FEDC_F32, 8, 28, 28, 1);
        CHECK_TYPE(p, fedc_conv2d_input_grad(p, dy, w5, &xt, 2, 2, same_pads), "f32[8,28,28,1]");
        CHECK_TYPE(p, fedc_conv2d_filter_grad(p, x, dy, 5, 5, 2, 2, same_pads), "f32[5,5,1,32]");
        const int64_t zero_pads[4] = {0, 0, 0, 0};
        fedc_value dp = fedc_input(p, "dp", TY(FEDC_F32, 8, 14, 14, 32));
        fedc_type ht = TY(FEDC_F32, 8, 28, 28, 32);
        CHECK_TYPE(p, fedc_max_pool2d_grad(p, h, dp, 2, 2, 2, 2, zero_pads), "f32[8,28,28,32]");
        CHECK_TYPE(p, fedc_avg_pool2d_grad(p, dp, &ht, 2, 2, 2, 2, zero_pads), "f32[8,28,28,32]");
        CHECK_OK(fedc_program_status(p));
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 8, 28, 28, 1));
        fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 3, 3, 2, 16));
        CHECK_BUILD_FAILS(p, fedc_conv2d(p, x, w, 1, 1, FEDC_PAD_SAME), FEDC_ESHAPE, "conv2d", "f32[3,3,2,16]",
                          "f32[8,28,28,1]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 28, 28, 1));
        fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 3, 3, 1, 16));
        CHECK_BUILD_FAILS(p, fedc_conv2d(p, x, w, 1, 1, FEDC_PAD_SAME), FEDC_ESHAPE, "conv2d", "rank 4",
                          "f32[28,28,1]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 1, 3, 3, 1));
        fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 5, 5, 1, 1));
        CHECK_BUILD_FAILS(p, fedc_conv2d(p, x, w, 1, 1, FEDC_PAD_VALID), FEDC_ESHAPE, "conv2d", "5x5",
                          "f32[1,3,3,1]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 1, 8, 8, 1));
        fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 3, 3, 1, 1));
        CHECK_BUILD_FAILS(p, fedc_conv2d(p, x, w, 0, 1, FEDC_PAD_VALID), FEDC_EINVAL, "conv2d", "strides");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 1, 8, 8, 1));
        CHECK_BUILD_FAILS(p, fedc_max_pool2d(p, x, 0, 2, 1, 1, FEDC_PAD_VALID), FEDC_EINVAL, "max_pool2d", "window");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 1, 2, 2, 1));
        CHECK_BUILD_FAILS(p, fedc_avg_pool2d(p, x, 3, 3, 1, 1, FEDC_PAD_VALID), FEDC_ESHAPE, "avg_pool2d",
                          "f32[1,2,2,1]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 8, 28, 28, 1));
        fedc_value dy = fedc_input(p, "dy", TY(FEDC_F32, 8, 13, 14, 32));
        const int64_t pads[4] = {1, 2, 1, 2};
        CHECK_BUILD_FAILS(p, fedc_conv2d_filter_grad(p, x, dy, 5, 5, 2, 2, pads), FEDC_ESHAPE,
                          "conv2d_filter_grad", "dy", "f32[8,13,14,32]");
    });
}

/* ------------------------------------------------------ losses and misc -- */

static void test_losses_misc(void) {
    WITH_PROGRAM(p, {
        fedc_value logits = fedc_input(p, "logits", TY(FEDC_F32, 4, 10));
        fedc_value labels = fedc_input(p, "labels", TY(FEDC_I32, 4));
        fedc_value weight = fedc_input(p, "weight", TY(FEDC_F32, 4));
        CHECK_TYPE(p, fedc_log_softmax(p, logits), "f32[4,10]");
        fedc_value loss = fedc_softmax_cross_entropy(p, logits, labels, FEDC_NONE);
        CHECK_TYPE(p, loss, "f32[4]");
        CHECK(strcmp(fedc_value_op_name(p, loss), "softmax_cross_entropy") == 0);
        CHECK_EQ_INT(fedc__node_at(p, loss)->nin, 2);
        fedc_value wl = fedc_softmax_cross_entropy(p, logits, labels, weight);
        CHECK_TYPE(p, wl, "f32[4]");
        CHECK_EQ_INT(fedc__node_at(p, wl)->nin, 3);
        fedc_value l3 = fedc_input(p, "l3", TY(FEDC_F64, 2, 3, 10));
        fedc_value lab3 = fedc_input(p, "lab3", TY(FEDC_I32, 2, 3));
        CHECK_TYPE(p, fedc_softmax_cross_entropy(p, l3, lab3, FEDC_NONE), "f64[2,3]");
        fedc_value key = fedc_input(p, "key", TY(FEDC_I32, 4));
        CHECK_TYPE(p, fedc_dropout(p, logits, key, 0.5), "f32[4,10]");
        CHECK_TYPE(p, fedc_dropout(p, l3, key, 0.0), "f64[2,3,10]");
        CHECK_TYPE(p, fedc_cast(p, logits, FEDC_I32), "i32[4,10]");
        CHECK_TYPE(p, fedc_cast(p, labels, FEDC_F64), "f64[4]");
        CHECK_TYPE(p, fedc_cast(p, labels, FEDC_BOOL), "bool[4]");
        CHECK_TYPE(p, fedc_cast(p, labels, FEDC_U8), "u8[4]");
        CHECK_OK(fedc_program_status(p));
    });
    WITH_PROGRAM(p, {
        fedc_value logits = fedc_input(p, "logits", TY(FEDC_F32, 4, 10));
        fedc_value labels = fedc_input(p, "labels", TY(FEDC_I32, 5));
        CHECK_BUILD_FAILS(p, fedc_softmax_cross_entropy(p, logits, labels, FEDC_NONE), FEDC_ESHAPE,
                          "softmax_cross_entropy", "i32[5]", "f32[4,10]");
    });
    WITH_PROGRAM(p, {
        fedc_value logits = fedc_input(p, "logits", TY(FEDC_F32, 4, 10));
        fedc_value labels = fedc_input(p, "labels", TY(FEDC_F32, 4));
        CHECK_BUILD_FAILS(p, fedc_softmax_cross_entropy(p, logits, labels, FEDC_NONE), FEDC_ETYPE,
                          "softmax_cross_entropy", "i32", "f32[4]");
    });
    WITH_PROGRAM(p, {
        fedc_value logits = fedc_input(p, "logits", TY(FEDC_F32, 4, 10));
        fedc_value labels = fedc_input(p, "labels", TY(FEDC_I32, 4));
        fedc_value weight = fedc_input(p, "weight", TY(FEDC_F64, 4));
        CHECK_BUILD_FAILS(p, fedc_softmax_cross_entropy(p, logits, labels, weight), FEDC_ESHAPE,
                          "softmax_cross_entropy", "f64[4]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 4, 10));
        fedc_value key = fedc_input(p, "key", TY(FEDC_I32, 3));
        CHECK_BUILD_FAILS(p, fedc_dropout(p, x, key, 0.5), FEDC_ETYPE, "dropout", "i32[4]", "i32[3]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 4, 10));
        fedc_value key = fedc_input(p, "key", TY(FEDC_F32, 4));
        CHECK_BUILD_FAILS(p, fedc_dropout(p, x, key, 0.5), FEDC_ETYPE, "dropout", "i32[4]", "f32[4]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 4, 10));
        fedc_value key = fedc_input(p, "key", TY(FEDC_I32, 2, 2));
        CHECK_BUILD_FAILS(p, fedc_dropout(p, x, key, 0.5), FEDC_ETYPE, "dropout", "i32[2,2]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 4, 10));
        fedc_value key = fedc_input(p, "key", TY(FEDC_I32, 4));
        CHECK_BUILD_FAILS(p, fedc_dropout(p, x, key, 1.0), FEDC_EINVAL, "dropout", "rate");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_I32, 4, 10));
        fedc_value key = fedc_input(p, "key", TY(FEDC_I32, 4));
        CHECK_BUILD_FAILS(p, fedc_dropout(p, x, key, 0.5), FEDC_ETYPE, "dropout", "i32[4,10]");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 4));
        CHECK_BUILD_FAILS(p, fedc_cast(p, x, (fedc_dtype)17), FEDC_EINVAL, "cast");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_I32, 4));
        CHECK_BUILD_FAILS(p, fedc_log_softmax(p, x), FEDC_ETYPE, "log_softmax", "i32[4]");
    });
}

/* ------------------------------------------------------- sticky errors -- */

static void test_sticky_errors(void) {
    fedc_program *p = newp();
    if (!p) return;
    fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 32, 784));
    fedc_value w = fedc_input(p, "w", TY(FEDC_F32, 785, 10));
    fedc_value d = fedc_input(p, "d", TY(FEDC_F64, 32, 784));
    int size = fedc_program_size(p);
    CHECK_OK(fedc_program_status(p));
    fedc_value y = fedc_matmul(p, x, w, false, false); /* the first error */
    CHECK_EQ_INT(y, FEDC_NONE);
    /* Later calls return FEDC_NONE: with a FEDC_NONE operand, with good operands,
     * and ones that would fail for another reason. None adds a node. */
    CHECK_EQ_INT(fedc_tanh(p, y), FEDC_NONE);
    CHECK_EQ_INT(fedc_add(p, x, x), FEDC_NONE);
    CHECK_EQ_INT(fedc_add(p, x, d), FEDC_NONE);
    CHECK_EQ_INT(fedc_input(p, "z", TY(FEDC_F32, 3)), FEDC_NONE);
    CHECK_EQ_INT(fedc_input(p, "x", TY(FEDC_F32, 3)), FEDC_NONE);
    CHECK_EQ_INT(fedc_scalar(p, FEDC_F32, 1), FEDC_NONE);
    CHECK_EQ_INT(fedc_scalar_like(p, x, 1), FEDC_NONE);
    CHECK_EQ_INT(fedc_reshape(p, x, 1, DIMS(-1)), FEDC_NONE);
    CHECK_EQ_INT(fedc_transpose(p, x, (int[]){1, 0}), FEDC_NONE);
    CHECK_EQ_INT(fedc_reduce_sum(p, x, (int[]){7}, 1, false), FEDC_NONE);
    CHECK_EQ_INT(fedc_conv2d(p, x, w, 1, 1, FEDC_PAD_SAME), FEDC_NONE);
    CHECK_EQ_INT(fedc_slice(p, x, DIMS(0, 0), DIMS(1, 1)), FEDC_NONE);
    CHECK_EQ_INT(fedc_pad(p, x, DIMS(0, 0), DIMS(1, 1)), FEDC_NONE);
    CHECK_EQ_INT(fedc_iota(p, TY(FEDC_I32, 3), 0), FEDC_NONE);
    CHECK_EQ_INT(fedc_program_size(p), size);
    /* Another failure elsewhere replaces this thread's message ... */
    fedc_error(FEDC_EIO, "something unrelated");
    /* ... but the program still reports its first error. */
    CHECK_ERR(fedc_program_status(p), FEDC_ESHAPE, "matmul");
    CHECK(strstr(fedc_errmsg(), "f32[32,784]") != NULL);
    CHECK(strstr(fedc_errmsg(), "f32[785,10]") != NULL);
    CHECK(strstr(fedc_errmsg(), "cast") == NULL);
    CHECK(strstr(fedc_errmsg(), "unrelated") == NULL);
    /* Whole-program calls report it too. */
    CHECK_ERR(fedc_program_output(p, "y", x), FEDC_ESHAPE, "matmul");
    CHECK_EQ_INT(fedc_program_num_outputs(p), 0);
    CHECK_ERR(fedc_program_verify(p), FEDC_ESHAPE, "matmul");
    CHECK_ERR(fedc_program_dce(p), FEDC_ESHAPE, "matmul");
    fedc_executor *ex = NULL;
    CHECK_ERR(fedc_executor_create(&ex, p, NULL), FEDC_ESHAPE, "matmul");
    CHECK(ex == NULL);
    fedc_program_destroy(p);

    /* The first error wins even when it is a dtype error and a shape error follows
     * through a FEDC_NONE operand. */
    p = newp();
    if (!p) return;
    x = fedc_input(p, "x", TY(FEDC_F32, 3));
    d = fedc_input(p, "d", TY(FEDC_F64, 3));
    fedc_value s = fedc_add(p, x, d);
    fedc_value m = fedc_matmul(p, s, x, false, false);
    CHECK_EQ_INT(m, FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "cast");
    CHECK(strstr(fedc_errmsg(), "matmul") == NULL);
    fedc_program_destroy(p);
}

/* ----------------------------------------------------------------- names -- */

static void test_names(void) {
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3));
        fedc_value x2 = fedc_input(p, "x", TY(FEDC_F64, 3));
        CHECK_BUILD_FAILS(p, x2, FEDC_EINVAL, "input", "\"x\"");
        (void)x;
    });
    WITH_PROGRAM(p, {
        CHECK_BUILD_FAILS(p, fedc_input(p, "", TY(FEDC_F32, 3)), FEDC_EINVAL, "input", "name");
    });
    WITH_PROGRAM(p, {
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3));
        fedc_value y = fedc_tanh(p, x);
        CHECK_OK(fedc_program_output(p, "y", y));
        CHECK_OK(fedc_program_output(p, "x_again", x)); /* an input can be an output */
        CHECK_OK(fedc_program_output(p, "y2", y));      /* a value can have two names */
        CHECK_ERR(fedc_program_output(p, "y", x), FEDC_EINVAL, "\"y\"");
        CHECK_ERR(fedc_program_output(p, "z", 42), FEDC_EINVAL, "\"z\"");
        CHECK_ERR(fedc_program_output(p, "n", FEDC_NONE), FEDC_EINVAL, "\"n\"");
        /* Output errors are returned, not sticky: the program is still fine. */
        CHECK_OK(fedc_program_status(p));
        CHECK_EQ_INT(fedc_program_num_outputs(p), 3);
        CHECK(strcmp(fedc_program_output_name(p, 0), "y") == 0);
        CHECK(strcmp(fedc_program_output_name(p, 1), "x_again") == 0);
        CHECK(strcmp(fedc_program_output_name(p, 2), "y2") == 0);
        CHECK(fedc_program_output_name(p, 3) == NULL);
        CHECK_EQ_INT(fedc_program_output_value(p, 0), y);
        CHECK_EQ_INT(fedc_program_output_value(p, 1), x);
        CHECK_EQ_INT(fedc_program_output_value(p, -1), FEDC_NONE);
        CHECK_EQ_INT(fedc_program_find_output(p, "y2"), y);
        CHECK_EQ_INT(fedc_program_find_output(p, "nope"), FEDC_NONE);
        CHECK_OK(fedc_program_verify(p));
    });
    WITH_PROGRAM(p, { /* output names are copied */
        char name[8] = "out";
        fedc_value x = fedc_input(p, "x", TY(FEDC_F32, 3));
        CHECK_OK(fedc_program_output(p, name, x));
        name[0] = 'X';
        CHECK_EQ_INT(fedc_program_find_output(p, "out"), x);
    });
    WITH_PROGRAM(p, { /* so are input names */
        char name[8] = "in";
        fedc_value x = fedc_input(p, name, TY(FEDC_F32, 3));
        name[0] = 'X';
        CHECK_EQ_INT(fedc_program_find_input(p, "in"), x);
    });
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"sources", test_sources},
        {"matmul_shapes", test_matmul_shapes},
        {"matmul_errors", test_matmul_errors},
        {"elementwise", test_elementwise},
        {"reductions", test_reductions},
        {"shape_ops", test_shape_ops},
        {"indexing", test_indexing},
        {"conv_pool_shapes", test_conv_pool_shapes},
        {"losses_misc", test_losses_misc},
        {"sticky_errors", test_sticky_errors},
        {"names", test_names},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
