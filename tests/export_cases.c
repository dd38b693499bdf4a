/* The programs every export target takes (tests/export_cases.h): each op of
 * src/ir/ops.def on small random inputs, federated programs, folds, gradients of
 * fused ops, and whole rounds of fedc's algorithms on its own models. */
#include "export_cases.h"
#include "../examples/hypergradient_round.h"

fedc_program *start(fedc_value *x, int n, const fedc_type *types) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    for (int i = 0; p && i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        x[i] = fedc_input(p, name, types[i]);
    }
    return p;
}
fedc_program *finish(fedc_program *p, fedc_value y) {
    fedc_program_output(p, "y", y);
    return p;
}

#define UNARY(fn, call)                                                                                             \
    static fedc_program *fn(void) {                                                                                 \
        fedc_value x[1];                                                                                            \
        fedc_program *p = start(x, 1, (fedc_type[]){T(3, 4)});                                                       \
        return finish(p, call);                                                                                     \
    }
UNARY(m_neg, fedc_neg(p, x[0]))
UNARY(m_exp, fedc_exp(p, x[0]))
UNARY(m_log, fedc_log(p, x[0]))
UNARY(m_tanh, fedc_tanh(p, x[0]))
UNARY(m_sigmoid, fedc_sigmoid(p, x[0]))
UNARY(m_relu, fedc_relu(p, x[0]))
UNARY(m_sqrt, fedc_sqrt(p, x[0]))
UNARY(m_square, fedc_square(p, x[0]))
UNARY(m_pow, fedc_pow(p, x[0], -1.5))
UNARY(m_sum1, fedc_reduce_sum(p, x[0], (int[]){1}, 1, false))
UNARY(m_sum_keep, fedc_reduce_sum(p, x[0], (int[]){0}, 1, true))
UNARY(m_sum_all, fedc_reduce_sum(p, x[0], NULL, -1, false))
UNARY(m_mean, fedc_reduce_mean(p, x[0], (int[]){0}, 1, false))
UNARY(m_max, fedc_reduce_max(p, x[0], (int[]){1}, 1, false))
UNARY(m_reshape, fedc_reshape(p, x[0], 3, (int64_t[]){2, 3, 2}))
UNARY(m_bcast, fedc_broadcast_to(p, x[0], 3, (int64_t[]){2, 3, 4}))
UNARY(m_transpose, fedc_transpose(p, x[0], (int[]){1, 0}))
UNARY(m_slice, fedc_slice(p, x[0], (int64_t[]){1, 1}, (int64_t[]){2, 2}))
UNARY(m_pad, fedc_pad(p, x[0], (int64_t[]){1, 0}, (int64_t[]){0, 2}))
UNARY(m_cast_f64, fedc_cast(p, fedc_cast(p, x[0], FEDC_F64), FEDC_F32))
UNARY(m_cast_i32, fedc_cast(p, fedc_cast(p, fedc_mul(p, x[0], fedc_scalar(p, FEDC_F32, 3e9)), FEDC_I32), FEDC_F32))
UNARY(m_cast_bool, fedc_cast(p, fedc_cast(p, fedc_relu(p, x[0]), FEDC_BOOL), FEDC_F32))
UNARY(m_iota, fedc_add(p, x[0], fedc_iota(p, T(3, 4), 1)))
UNARY(m_log_softmax, fedc_log_softmax(p, x[0]))
UNARY(m_concat, fedc_concat(p, (fedc_value[]){x[0], fedc_neg(p, x[0])}, 2, 1))

#define BINARY(fn, call, ta, tb)                                                                                    \
    static fedc_program *fn(void) {                                                                                 \
        fedc_value x[2];                                                                                            \
        fedc_program *p = start(x, 2, (fedc_type[]){ta, tb});                                                        \
        return finish(p, call);                                                                                     \
    }
BINARY(m_add, fedc_add(p, x[0], x[1]), T(3, 4), T(4))
BINARY(m_sub, fedc_sub(p, x[0], x[1]), T(3, 1), T(1, 4))
BINARY(m_mul, fedc_mul(p, x[0], x[1]), T(3, 4), T0)
BINARY(m_div, fedc_div(p, x[0], x[1]), T(2, 3, 4), T(3, 1))
BINARY(m_maximum, fedc_maximum(p, x[0], x[1]), T(3, 4), T(3, 4))
BINARY(m_minimum, fedc_minimum(p, x[0], x[1]), T(3, 4), T(4))
BINARY(m_compare, fedc_cast(p, fedc_gt(p, x[0], x[1]), FEDC_F32), T(3, 4), T(4))
BINARY(m_compares,
       fedc_add(p, fedc_add(p, fedc_cast(p, fedc_eq(p, x[0], x[0]), FEDC_F32), fedc_cast(p, fedc_ne(p, x[0], x[1]), FEDC_F32)),
                fedc_add(p, fedc_cast(p, fedc_lt(p, x[0], x[1]), FEDC_F32),
                         fedc_add(p, fedc_cast(p, fedc_le(p, x[0], x[1]), FEDC_F32), fedc_cast(p, fedc_ge(p, x[0], x[1]), FEDC_F32)))),
       T(3, 4), T(3, 4))
BINARY(m_select, fedc_select(p, fedc_gt(p, x[0], fedc_scalar(p, FEDC_F32, 1.0)), x[0], x[1]), T(3, 4), T(3, 4))
BINARY(m_matmul, fedc_matmul(p, x[0], x[1], false, false), T(3, 5), T(5, 2))
BINARY(m_matmul_ta, fedc_matmul(p, x[0], x[1], true, false), T(5, 3), T(5, 2))
BINARY(m_matmul_tb, fedc_matmul(p, x[0], x[1], false, true), T(3, 5), T(2, 5))
BINARY(m_matmul_batched, fedc_matmul(p, x[0], x[1], false, false), T(2, 3, 5), T(5, 2))

/* Softmax cross-entropy with integer labels, weighted, and its gradient program
 * (which holds softmax_cross_entropy_grad). */
static fedc_program *m_xent(void) {
    fedc_value x[3];
    fedc_program *p = start(x, 3, (fedc_type[]){T(2, 3, 5), fedc_type_make(FEDC_I32, 2, (int64_t[]){2, 3}), T(2, 3)});
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_softmax_cross_entropy(p, x[0], x[1], x[2]), NULL, -1, false));
    fedc_program *g = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x0", "x2"}, 2, &g));
    fedc_program_destroy(p);
    return g;
}

static fedc_program *m_gather(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){T(5, 3), fedc_type_make(FEDC_I32, 2, (int64_t[]){2, 3})});
    return finish(p, fedc_gather(p, x[0], x[1]));
}

/* An embedding's gradient: rows 0..4 of a table, with repeated indices summed. */
static fedc_program *m_scatter_add(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){T(2, 3, 4), fedc_type_make(FEDC_I32, 2, (int64_t[]){2, 3})});
    return finish(p, fedc_scatter_add(p, x[0], x[1], 5));
}

static fedc_program *m_one_hot(void) {
    fedc_value x[1];
    fedc_program *p = start(x, 1, (fedc_type[]){fedc_type_make(FEDC_I32, 2, (int64_t[]){2, 3})});
    fedc_program_output(p, "i32", fedc_one_hot(p, x[0], 5, FEDC_I32));
    return finish(p, fedc_one_hot(p, x[0], 5, FEDC_F32));
}

/* argmax along each axis; a tied row (every element 0.5 after a max with 0.5)
 * takes its first position. */
static fedc_program *m_argmax(void) {
    fedc_value x[1];
    fedc_program *p = start(x, 1, (fedc_type[]){T(3, 4)});
    fedc_program_output(p, "rows", fedc_argmax(p, x[0], 1));
    fedc_program_output(p, "ties", fedc_argmax(p, fedc_maximum(p, x[0], fedc_scalar(p, FEDC_F32, 0.5)), 1));
    return finish(p, fedc_argmax(p, x[0], 0));
}

static fedc_program *m_gelu(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){T(3, 4), T(3, 4)});
    fedc_program_output(p, "dx", fedc_gelu_grad(p, x[0], x[1]));
    return finish(p, fedc_gelu(p, x[0]));
}

/* The gradient of a small MLP's loss: transposes, broadcasts and reductions. */
static fedc_program *m_mlp_grad(void) {
    fedc_value x[3];
    fedc_program *p = start(x, 3, (fedc_type[]){T(4, 3), T(3, 5), T(5)});
    fedc_value h = fedc_tanh(p, fedc_add(p, fedc_matmul(p, x[0], x[1], false, false), x[2]));
    fedc_program_output(p, "loss", fedc_reduce_mean(p, fedc_square(p, h), NULL, -1, false));
    fedc_program *g = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x1", "x2"}, 2, &g));
    fedc_program_destroy(p);
    return g;
}

/* ------------------------------------------------------- federated cases -- */

fedc_program *m_broadcast_sum(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){placed(T(3), FEDC_SERVER), placed(T(3), FEDC_CLIENTS)});
    fedc_value b = fedc_mul(p, fedc_broadcast(p, x[0]), x[1]);
    fedc_program_output(p, "stored", b);
    fedc_program_output(p, "mean", fedc_mean(p, b));
    return finish(p, fedc_mul(p, fedc_sum(p, b), fedc_num_clients(p, FEDC_F32)));
}

static fedc_program *m_weighted_mean(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){placed(T(2, 3), FEDC_CLIENTS), placed(T0, FEDC_CLIENTS)});
    return finish(p, fedc_weighted_mean(p, x[0], x[1]));
}

/* The executor's old bug: a @clients constant read by every client. */
static fedc_program *m_clients_constant(void) {
    fedc_value x[1];
    fedc_program *p = start(x, 1, (fedc_type[]){placed(T(3), FEDC_CLIENTS)});
    fedc_value c = fedc_scalar_like(p, x[0], 2.0);
    fedc_program_output(p, "c", c);
    return finish(p, fedc_sum(p, fedc_mul(p, fedc_exp(p, x[0]), c)));
}

/* A round in miniature: broadcast, a map of a body with a matmul, a weighted mean. */
fedc_program *m_map(void) {
    fedc_program *body = NULL;
    CHECK_OK(fedc_program_create(&body));
    fedc_value w = fedc_input(body, "w", T(3, 2)), xb = fedc_input(body, "x", T(4, 3));
    fedc_value h = fedc_tanh(body, fedc_matmul(body, xb, w, false, false));
    fedc_program_output(body, "h", h);
    fedc_program_output(body, "n", fedc_reduce_sum(body, fedc_square(body, h), NULL, -1, false));
    fedc_value x[2], r[2];
    fedc_program *p = start(x, 2, (fedc_type[]){placed(T(3, 2), FEDC_SERVER), placed(T(4, 3), FEDC_CLIENTS)});
    CHECK_OK(fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, x[0]), x[1]}, 2, r));
    fedc_program_destroy(body);
    fedc_program_output(p, "h", r[0]);
    return finish(p, fedc_weighted_mean(p, r[0], r[1]));
}

/* step(c, x) = (tanh(c) * w + x, c * x) with w a carry that never changes. */
static fedc_program *fold_step(void) {
    fedc_program *b = NULL;
    CHECK_OK(fedc_program_create(&b));
    fedc_value c = fedc_input(b, "c", T(2)), w = fedc_input(b, "w", T(2)), x = fedc_input(b, "x", T(2));
    fedc_program_output(b, "c", fedc_add(b, fedc_mul(b, fedc_tanh(b, c), w), x));
    fedc_program_output(b, "w", w);
    fedc_program_output(b, "y", fedc_mul(b, c, x));
    return b;
}

/* A fold on local values, run for a length of 3 of its 4 steps. */
static fedc_program *m_fold(void) {
    fedc_program *step = fold_step();
    fedc_value x[3], r[3];
    fedc_program *p = start(x, 3, (fedc_type[]){T(2), T(4, 2), fedc_type_make(FEDC_I32, 0, NULL)});
    CHECK_OK(fedc_fold(p, step, (fedc_value[]){x[0], x[0]}, 2, &x[1], 1, x[2], r));
    fedc_program_destroy(step);
    fedc_program_output(p, "ys", r[2]);
    return finish(p, r[0]);
}

/* Local training in miniature: a map whose body folds over the client's
 * sequence for the client's own length (0 to 4 of 4 steps), averaged; and its
 * gradient, whose backward pass is a reversed fold in a map. */
fedc_program *fold_round_of(bool loss) {
    fedc_program *step = fold_step(), *client = NULL;
    CHECK_OK(fedc_program_create(&client));
    fedc_value w0 = fedc_input(client, "w", T(2)), xs = fedc_input(client, "xs", T(4, 2));
    fedc_value len = fedc_input(client, "len", fedc_type_scalar(FEDC_I32)), fr[3];
    CHECK_OK(fedc_fold(client, step, (fedc_value[]){w0, w0}, 2, &xs, 1, len, fr));
    fedc_program_output(client, "c", fr[0]);
    fedc_program_output(client, "ys", fr[2]);
    fedc_value x[3], out[2];
    fedc_program *p = start(x, 3, (fedc_type[]){placed(T(2), FEDC_SERVER), placed(T(4, 2), FEDC_CLIENTS),
                                                 placed(fedc_type_scalar(FEDC_I32), FEDC_CLIENTS)});
    CHECK_OK(fedc_map(p, client, (fedc_value[]){fedc_broadcast(p, x[0]), x[1], x[2]}, 3, out));
    fedc_program_destroy(step);
    fedc_program_destroy(client);
    fedc_program_output(p, "ys", out[1]);
    if (loss) fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_square(p, fedc_mean(p, out[0])), NULL, -1, false));
    else fedc_program_output(p, "mean", fedc_mean(p, out[0]));
    return p;
}
static fedc_program *fold_round(void) { return fold_round_of(true); }
static fedc_program *m_fold_in_map(void) { return fold_round(); }
static fedc_program *m_fold_gradient(void) {
    fedc_program *p = fold_round(), *g = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x0", "x1"}, 2, &g));
    fedc_program_destroy(p);
    return g;
}

/* A conv layer and pools, and the gradient of a loss through them: conv2d's input
 * and filter gradients, max_pool2d's gradient, avg_pool2d's gradient. SAME
 * padding with stride 2 pads unevenly (bottom and right). */
static fedc_program *cnn_layers(fedc_padding pad, int stride) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){T(2, 7, 6, 3), T(3, 3, 3, 4)});
    fedc_value y = fedc_relu(p, fedc_conv2d(p, x[0], x[1], stride, stride, pad));
    fedc_value m = fedc_max_pool2d(p, y, 2, 2, 2, 2, FEDC_PAD_SAME), a = fedc_avg_pool2d(p, y, 3, 3, 1, 2, FEDC_PAD_SAME);
    fedc_value loss = fedc_add(p, fedc_reduce_sum(p, fedc_square(p, m), NULL, -1, false),
                               fedc_reduce_sum(p, fedc_mul(p, a, a), NULL, -1, false));
    fedc_program_output(p, "y", y);
    fedc_program_output(p, "loss", loss);
    fedc_program *g = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x0", "x1"}, 2, &g));
    fedc_program_destroy(p);
    return g;
}
static fedc_program *m_cnn_same(void) { return cnn_layers(FEDC_PAD_SAME, 2); }
static fedc_program *m_cnn_valid(void) { return cnn_layers(FEDC_PAD_VALID, 1); }

/* Layer norm over the last axis of a rank-3 value, and the gradient through it
 * (layer_norm_grad, layer_norm_param_grad). */
static fedc_program *m_layer_norm(void) {
    fedc_value x[3];
    fedc_program *p = start(x, 3, (fedc_type[]){T(2, 3, 5), T(5), T(5)});
    fedc_value y = fedc_layer_norm(p, x[0], x[1], x[2], 1e-5);
    fedc_program_output(p, "y", y);
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_mul(p, y, fedc_tanh(p, x[0])), NULL, -1, false));
    fedc_program *g = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x0", "x1", "x2"}, 3, &g));
    fedc_program_destroy(p);
    return g;
}

/* Causal attention over 2 heads of width 3 at 4 positions, and the gradient
 * through it (causal_attention_grad). */
static fedc_program *m_attention(void) {
    fedc_value x[1];
    fedc_program *p = start(x, 1, (fedc_type[]){T(2, 4, 18)});
    fedc_value y = fedc_causal_attention(p, x[0], 2);
    fedc_program_output(p, "y", y);
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_square(p, y), NULL, -1, false));
    fedc_program *g = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x0"}, 1, &g));
    fedc_program_destroy(p);
    return g;
}

/* Dropout at rate 0.3 with a key of the test's random words, and its gradient:
 * the mask must be fedc's Philox mask bit for bit, or values differ by 1/(1-rate). */
static fedc_program *m_dropout(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){T(3, 5, 7), fedc_type_make(FEDC_I32, 1, (int64_t[]){4})});
    fedc_value y = fedc_dropout(p, x[0], x[1], 0.3);
    fedc_program_output(p, "y", y);
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_mul(p, y, y), NULL, -1, false));
    fedc_program *g = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x0"}, 1, &g));
    fedc_program_destroy(p);
    return g;
}

/* The random ops on one key: uniforms and normals in f32 and f64, of shapes
 * spanning several Philox blocks (their bits: test_export_mlir.c). */
fedc_program *m_random(void) {
    fedc_value x[1];
    fedc_program *p = start(x, 1, (fedc_type[]){fedc_type_make(FEDC_I32, 1, (int64_t[]){4})});
    fedc_program_output(p, "u32", fedc_random_uniform(p, x[0], T(3, 5, 7)));
    fedc_program_output(p, "u64", fedc_random_uniform(p, x[0], fedc_type_make(FEDC_F64, 2, (int64_t[]){5, 3})));
    fedc_program_output(p, "n32", fedc_random_normal(p, x[0], T(4, 9)));
    return finish(p, fedc_random_normal(p, x[0], fedc_type_make(FEDC_F64, 2, (int64_t[]){6, 7})));
}

/* Each client's own key: draws at the clients, and in a map's body (as DP noise
 * and stochastic rounding draw them). */
fedc_program *m_random_clients(void) {
    fedc_program *body = NULL;
    CHECK_OK(fedc_program_create(&body));
    fedc_value k = fedc_input(body, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_program_output(body, "n", fedc_random_normal(body, k, T(3, 4)));
    fedc_program_output(body, "u", fedc_random_uniform(body, k, fedc_type_make(FEDC_F64, 1, (int64_t[]){5})));
    fedc_value x[1], r[2];
    fedc_type key = placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS);
    fedc_program *p = start(x, 1, &key);
    CHECK_OK(fedc_map(p, body, x, 1, r));
    fedc_program_destroy(body);
    fedc_program_output(p, "n", r[0]);
    fedc_program_output(p, "u", r[1]);
    fedc_program_output(p, "u32", fedc_random_uniform(p, x[0], placed(T(2, 5), FEDC_CLIENTS)));
    return finish(p, fedc_random_normal(p, x[0], placed(fedc_type_make(FEDC_F64, 1, (int64_t[]){7}), FEDC_CLIENTS)));
}

/* A bool constant of rank 2 selecting between two values. */
static fedc_program *m_bool_constant(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){T(2, 3), T(2, 3)});
    uint8_t mask[6] = {1, 0, 0, 1, 1, 0};
    fedc_value m = fedc_constant(p, fedc_type_make(FEDC_BOOL, 2, (int64_t[]){2, 3}), mask);
    fedc_program_output(p, "mask", m);
    return finish(p, fedc_select(p, m, x[0], x[1]));
}

/* The fused LSTM over 3 steps of a batch of 2 with 4 hidden units (its trace
 * [h, c, i, g, f, o] per step), a loss on its hidden states, and the loss's
 * gradient (lstm_grad) and forward-mode derivative (lstm_tangent). */
static fedc_program *lstm_loss(void) {
    fedc_value x[2];
    fedc_program *p = start(x, 2, (fedc_type[]){T(3, 2, 16), T(4, 16)});
    fedc_value trace = fedc_lstm(p, x[0], x[1]);
    fedc_program_output(p, "trace", trace);
    fedc_value h = fedc_slice(p, trace, (int64_t[]){0, 0, 0}, (int64_t[]){3, 2, 4});
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_mul(p, h, fedc_tanh(p, h)), NULL, -1, false));
    return p;
}
static fedc_program *m_lstm_grad(void) {
    fedc_program *p = lstm_loss(), *g = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x0", "x1"}, 2, &g));
    fedc_program_destroy(p);
    return g;
}
static fedc_program *m_lstm_jvp(void) {
    fedc_program *p = lstm_loss(), *j = NULL;
    CHECK_OK(fedc_jvp(p, (const char *[]){"x0", "x1"}, 2, &j));
    fedc_program_destroy(p);
    return j;
}

/* ------------------------------------------------------- whole programs -- */

/* A round of fedc's own algorithm on one of its models, small: a few clients of
 * `steps` batches of `batch`, the model's dropout on. */
fedc_program *model_round(const char *model, const fedc_model_options *mo, fedc_optimizer_kind server,
                                 int64_t batch, int64_t steps) {
    fedc_model *m = NULL;
    fedc_program *round = NULL;
    CHECK_OK(fedc_model_create(&m, model, mo));
    fedc_algorithm a = {.def = &fedc_algorithm_fedavg, .client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1),
                        .server_opt = fedc_optimizer_defaults(server, server == FEDC_OPT_SGD ? 1.0 : 1e-2),
                        .batch_size = batch, .max_steps = steps, .dropout = true};
    if (m) CHECK_OK(fedc_algorithm_round(m, &a, &round));
    fedc_model_destroy(m);
    return round;
}
/* FedJAX's EMNIST CNN (conv, pool, dropout, dense) in a FedAvg round. */
fedc_program *m_cnn_round(void) { return model_round("cnn", NULL, FEDC_OPT_SGD, 2, 2); }
/* The Shakespeare character LSTM (embedding, lstm, dense) in a FedAdam round, short sequences. */
fedc_program *m_lstm_round(void) {
    fedc_model_options mo = {.hidden = 8, .sequence_length = 5};
    return model_round("shakespeare_lstm", &mo, FEDC_OPT_ADAM, 2, 2);
}
/* A tiny transformer language model in a FedAdam round. */
fedc_program *m_transformer_round(void) {
    fedc_model_options mo = {.layers = 1, .width = 8, .heads = 2, .context = 4, .num_classes = 11};
    return model_round("transformer:tiny", &mo, FEDC_OPT_ADAM, 2, 2);
}

/* A Hessian-vector product: the gradient of <grad f(w), v> for f an MLP's loss. */
static fedc_program *m_hessian_vector(void) {
    fedc_value x[3];
    fedc_program *p = start(x, 3, (fedc_type[]){T(4, 3), T(3, 5), T(3, 5)});
    fedc_value h = fedc_tanh(p, fedc_matmul(p, x[0], x[1], false, false));
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_square(p, h), NULL, -1, false));
    fedc_program *g = NULL, *gv = NULL, *hv = NULL;
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"x1"}, 1, &g));
    if (g) { /* dot = <grad_x1, x2> */
        fedc_program_destroy(p);
        CHECK_OK(fedc_program_create(&gv));
        fedc_value in[3], out[2];
        for (int i = 0; i < 3; i++) in[i] = fedc_input(gv, fedc_program_input_name(g, i), fedc_value_type(g, fedc_program_input(g, i)));
        CHECK_OK(fedc_program_inline(gv, g, in, out));
        fedc_program_output(gv, "dot", fedc_reduce_sum(gv, fedc_mul(gv, out[1], in[2]), NULL, -1, false));
        CHECK_OK(fedc_grad(gv, "dot", (const char *[]){"x1"}, 1, &hv));
    }
    fedc_program_destroy(g);
    fedc_program_destroy(gv);
    return hv;
}

/* examples/hypergradient.c's own program: the loss after a FedAvg round of
 * linear regression (f64, local SGD as a fold over 3 batches) and its gradient
 * in both learning rates, the hypergradients. */
static fedc_program *m_hypergradient(void) {
    fedc_program *loss = round_loss(), *grad = NULL;
    CHECK_OK(fedc_grad(loss, "loss", (const char *[]){"server_lr", "client_lr"}, 2, &grad));
    fedc_program_destroy(loss);
    return grad;
}

/* Every step between the levels (docs/federated.md, "Hierarchies"): the server's
 * w down to each client, tanh(w x) at the clients, each group's sum, mean and
 * weighted mean of it, a map at the groups (a^2 mean + sum), and up to the
 * server: the groups' mean weighted by their sizes, the sum of their weighted
 * means, their plain mean, and their number. */
static fedc_program *local_body(int n, const fedc_type *types, fedc_value (*f)(fedc_program *, const fedc_value *)) {
    fedc_program *b = NULL;
    fedc_value in[4];
    CHECK_OK(fedc_program_create(&b));
    for (int i = 0; b && i < n; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "i%d", i);
        in[i] = fedc_input(b, nm, types[i]);
    }
    if (b) fedc_program_output(b, "y", f(b, in));
    return b;
}
static fedc_value tanh_wx(fedc_program *b, const fedc_value *in) { return fedc_tanh(b, fedc_mul(b, in[0], in[1])); }
static fedc_value a2m_plus_s(fedc_program *b, const fedc_value *in) {
    return fedc_add(b, fedc_mul(b, fedc_square(b, in[0]), in[1]), in[2]);
}
fedc_program *m_levels(void) {
    fedc_value x[4], y, z;
    fedc_program *p = start(x, 4, (fedc_type[]){placed(T(3), FEDC_SERVER), placed(T(3), FEDC_CLIENTS),
                                                placed(T0, FEDC_CLIENTS), placed(T0, FEDC_GROUPS)});
    fedc_program *at_clients = local_body(2, (fedc_type[]){T(3), T(3)}, tanh_wx),
                 *at_groups = local_body(3, (fedc_type[]){T0, T(3), T(3)}, a2m_plus_s);
    CHECK_OK(fedc_map(p, at_clients, (fedc_value[]){fedc_broadcast_down(p, fedc_broadcast_down(p, x[0])), x[1]}, 2, &y));
    fedc_value s = fedc_sum_up(p, y), m = fedc_mean_up(p, y), wm = fedc_weighted_mean_up(p, y, x[2]);
    CHECK_OK(fedc_map(p, at_groups, (fedc_value[]){x[3], m, s}, 3, &z));
    fedc_program_destroy(at_clients), fedc_program_destroy(at_groups);
    fedc_program_output(p, "clients", y);
    fedc_program_output(p, "groups", z);
    fedc_program_output(p, "sized", fedc_weighted_mean_up(p, z, fedc_group_size(p, FEDC_F32)));
    fedc_program_output(p, "sum", fedc_sum_up(p, wm));
    fedc_program_output(p, "mean", fedc_mean_up(p, z));
    return finish(p, fedc_num_groups(p, FEDC_F32));
}

int case_groups(const fedc_program *p) {
    for (int v = 0; v < p->n; v++)
        if (p->nodes[v].type.placement == FEDC_GROUPS || p->nodes[v].op == FEDC_OP_NUM_GROUPS) return 2;
    return 0;
}

const export_case EXPORT_CASES[] = {
    {"neg", m_neg, 0, -2, 2, 0},           {"exp", m_exp, 0, -2, 2, 0},
    {"log", m_log, 0, 0.1, 3, 0},          {"tanh", m_tanh, 0, -2, 2, 0},
    {"sigmoid", m_sigmoid, 0, -4, 4, 0},   {"relu", m_relu, 0, -1, 1, 0},
    {"sqrt", m_sqrt, 0, 0.1, 3, 0},        {"square", m_square, 0, -2, 2, 0},
    {"pow", m_pow, 0, 0.1, 3, 0},          {"reduce_sum", m_sum1, 0, -1, 1, 0},
    {"reduce_sum keepdims", m_sum_keep, 0, -1, 1, 0},
    {"reduce_sum all", m_sum_all, 0, -1, 1, 0},
    {"reduce_mean", m_mean, 0, -1, 1, 0},  {"reduce_max", m_max, 0, -1, 1, 0},
    {"reshape", m_reshape, 0, -1, 1, 0},   {"broadcast_to", m_bcast, 0, -1, 1, 0},
    {"transpose", m_transpose, 0, -1, 1, 0}, {"slice", m_slice, 0, -1, 1, 0},
    {"pad", m_pad, 0, -1, 1, 0},           {"cast f64", m_cast_f64, 0, -1, 1, 0},
    {"cast i32 saturating", m_cast_i32, 0, -1, 1, 0},
    {"cast bool", m_cast_bool, 0, -1, 1, 0}, {"iota", m_iota, 0, -1, 1, 0},
    {"concat", m_concat, 0, -1, 1, 0},     {"add", m_add, 0, -1, 1, 0},
    {"sub", m_sub, 0, -1, 1, 0},           {"mul", m_mul, 0, -1, 1, 0},
    {"div", m_div, 0, 0.5, 2, 0},          {"maximum", m_maximum, 0, -1, 1, 0},
    {"minimum", m_minimum, 0, -1, 1, 0},   {"gt", m_compare, 0, -1, 1, 0},
    {"comparisons", m_compares, 0, -1, 1, 0},
    {"select", m_select, 0, 0, 2, 0},      {"matmul", m_matmul, 0, -1, 1, 0},
    {"matmul transpose_a", m_matmul_ta, 0, -1, 1, 0},
    {"matmul transpose_b", m_matmul_tb, 0, -1, 1, 0},
    {"matmul shared weight", m_matmul_batched, 0, -1, 1, 0},
    {"gradient of an mlp", m_mlp_grad, 0, -1, 1, 0},
    {"log_softmax", m_log_softmax, 0, -3, 3, 0},
    {"gather", m_gather, 0, -1, 1, 5},
    {"scatter_add", m_scatter_add, 0, -1, 1, 4},
    {"one_hot", m_one_hot, 0, -1, 1, 6},
    {"argmax", m_argmax, 0, -1, 1, 0},
    {"gelu and its gradient", m_gelu, 0, -3, 3, 0},
    {"softmax_cross_entropy and its gradient", m_xent, 0, -3, 3, 5},
    {"broadcast, sum, mean, num_clients", m_broadcast_sum, 5, -1, 1, 0},
    {"weighted_mean", m_weighted_mean, 4, 0.5, 2, 0},
    {"clients constant", m_clients_constant, 3, -1, 1, 0},
    {"map", m_map, 4, -1, 1, 0},
    {"fold", m_fold, 0, -1, 1, 4},
    {"layer_norm and its gradients", m_layer_norm, 0, -2, 2, 0},
    {"causal attention and its gradient", m_attention, 0, -1, 1, 0},
    {"bool constant of rank 2", m_bool_constant, 0, -1, 1, 0},
    {"lstm and its gradient", m_lstm_grad, 0, -1, 1, 0},
    {"lstm and its forward-mode derivative", m_lstm_jvp, 0, -1, 1, 0},
    {"hessian-vector product (a gradient of a gradient)", m_hessian_vector, 0, -1, 1, 0},
    {"FedAvg round of the EMNIST CNN", m_cnn_round, 2, -0.1, 0.1, 3},
    {"examples/hypergradient.c's round loss and hypergradients", m_hypergradient, CLIENTS, 0.02, 0.5, 0},
    {"FedAdam round of the Shakespeare LSTM", m_lstm_round, 3, 0.01, 0.1, 3}, /* Adam's state >= 0 */
    {"FedAdam round of a tiny transformer", m_transformer_round, 2, 0.01, 0.1, 3},
    {"dropout (fedc's Philox mask) and its gradient", m_dropout, 0, -1, 1, 1000003},
    {"random_uniform and random_normal, f32 and f64", m_random, 0, -1, 1, 1000003},
    {"random ops on each client's key, and in a map", m_random_clients, 3, -1, 1, 1000003},
    {"conv2d SAME stride 2, pools, and their gradients", m_cnn_same, 0, -1, 1, 0},
    {"conv2d VALID, pools, and their gradients", m_cnn_valid, 0, -1, 1, 0},
    {"fold in a map, lengths 3, 0, 2, 4", m_fold_in_map, 4, -1, 1, 5},
    {"gradient through a fold in a map (reversed fold)", m_fold_gradient, 4, -1, 1, 5},
    {"the groups level, 2 groups of 4 clients", m_levels, 8, 0.1, 1, 0},
};

const int EXPORT_NCASES = FEDC_COUNT_OF(EXPORT_CASES);
