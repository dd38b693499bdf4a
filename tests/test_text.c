/* Tests for the text format (src/ir/print.c, src/ir/parse.c, parse_lex.c): the
 * exact text of a small program; print -> parse -> print over a program that uses
 * every op in ops.def, bodies (nested ones too) included; bit-exact constants and
 * float attributes with awkward values (denormals, -0, infinities, NaN payloads);
 * quoted names with escapes; comments and blank lines; every parse error of the
 * line grammar with its line and words; and allocation failure at each
 * allocation of parse and print, federated programs included, with a counting
 * allocator proving that no failure leaks. Bodies, tuples and running parsed
 * federated programs are tested in test_text_bodies.c; the helpers shared by
 * both are in text_check.h. */
#include <float.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "fedc/ad.h"
#include "text_check.h"

/* ---------------------------------------------------------- exact text -- */

static void test_print_example(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", T(FEDC_F32, 4, 3));
    fedc_value w = fedc_input(p, "w", T(FEDC_F32, 3, 2));
    fedc_value y = fedc_matmul(p, x, w, false, false);
    fedc_value half = fedc_scalar(p, FEDC_F32, 0.5);
    int32_t ints[4] = {1, 2, -3, 4};
    fedc_constant(p, T(FEDC_I32, 2, 2), ints);
    fedc_value loss = fedc_reduce_sum(p, fedc_mul(p, y, half), NULL, -1, false);
    fedc_value key = fedc_input(p, "key", T(FEDC_I32, 4));
    fedc_dropout(p, y, key, 0.25);
    fedc_iota(p, T(FEDC_I32, 2, 3), 1);
    fedc_program_output(p, "loss", loss);
    const char *want = "fedc program\n"
                       "%0 = input \"x\" : f32[4,3]\n"
                       "%1 = input \"w\" : f32[3,2]\n"
                       "%2 = matmul(%0, %1) {transpose_a=0, transpose_b=0} : f32[4,2]\n"
                       "%3 = constant [0.5] : f32[]\n"
                       "%4 = constant [1, 2, -3, 4] : i32[2,2]\n"
                       "%5 = mul(%2, %3) : f32[4,2]\n"
                       "%6 = reduce_sum(%5) {axes=[0, 1], keepdims=0} : f32[]\n"
                       "%7 = input \"key\" : i32[4]\n"
                       "%8 = dropout(%2, %7) {rate=0.25} : f32[4,2]\n"
                       "%9 = iota() {shape=[2, 3], axis=1, dtype=i32} : i32[2,3]\n"
                       "output \"loss\" = %6\n";
    char *text = to_text(p);
    CHECK_MSG(text && strcmp(text, want) == 0, "got:\n%s", text);
    check_round_trip(p);
    fedc_free(text);
    fedc_program_destroy(p);
}

static void test_print_file_matches_string(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_program_output(p, "t", fedc_tanh(p, fedc_input(p, "x", T(FEDC_F64, 2))));
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) {
        fedc_program_destroy(p);
        return;
    }
    CHECK_OK(fedc_program_print(p, f));
    char read[256] = {0};
    rewind(f);
    size_t n = fread(read, 1, sizeof read - 1, f);
    fclose(f);
    char *text = to_text(p);
    CHECK(text && n == strlen(text) && strcmp(read, text) == 0);
    fedc_free(text);
    fedc_program_destroy(p);
}

static void test_empty_and_failed_programs(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    char *text = to_text(p);
    CHECK(text && strcmp(text, "fedc program\n") == 0);
    fedc_free(text);
    check_round_trip(p);
    /* A program with a sticky builder error has no text; its error comes back. */
    fedc_matmul(p, fedc_input(p, "a", T(FEDC_F32, 2, 3)), fedc_input(p, "b", T(FEDC_F32, 2, 3)), false, false);
    text = (char *)"unchanged";
    CHECK_ERR(fedc_program_to_string(p, &text), FEDC_ESHAPE, "inner dimensions");
    CHECK(text == NULL);
    fedc_program_destroy(p);
}

/* ------------------------------------------------------------- all ops -- */

/* Elementwise, comparisons, reductions and shapes over x, y: f32[2,3]. */
static void build_basic_ops(fedc_program *p, fedc_value x, fedc_value y) {
    fedc_value (*binary[])(fedc_program *, fedc_value, fedc_value) = {fedc_add, fedc_sub, fedc_mul, fedc_div,
                                                                      fedc_maximum, fedc_minimum, fedc_eq, fedc_ne,
                                                                      fedc_lt, fedc_le, fedc_gt, fedc_ge};
    for (int i = 0; i < FEDC_COUNT_OF(binary); i++) binary[i](p, x, y);
    fedc_value (*unary[])(fedc_program *, fedc_value) = {fedc_neg, fedc_exp, fedc_log, fedc_tanh,
                                                         fedc_sigmoid, fedc_relu, fedc_sqrt, fedc_square};
    for (int i = 0; i < FEDC_COUNT_OF(unary); i++) unary[i](p, x);
    fedc_pow(p, x, 0.1);
    fedc_select(p, fedc_lt(p, x, y), x, y);
    int ax1[] = {1}, ax0[] = {-2};
    fedc_reduce_sum(p, x, ax1, 1, true);
    fedc_reduce_mean(p, x, NULL, -1, false);
    fedc_reduce_max(p, x, ax0, 1, false);
    fedc_argmax(p, x, 1);
    fedc_reshape(p, x, 2, (int64_t[]){3, -1});
    fedc_broadcast_to(p, x, 3, (int64_t[]){4, 2, 3});
    fedc_transpose(p, x, (int[]){1, 0});
    fedc_slice(p, x, (int64_t[]){0, 1}, (int64_t[]){2, 3});
    fedc_concat(p, (fedc_value[]){x, y, x}, 3, 1);
    fedc_pad(p, x, (int64_t[]){1, 0}, (int64_t[]){0, 2});
    fedc_log_softmax(p, x);
    fedc_cast(p, x, FEDC_I32);
    fedc_cast(p, x, FEDC_F64);
    fedc_iota(p, T(FEDC_F32, 2, 3), 1);
}

/* Algebra, indexing, losses and dropout. */
static void build_indexing_ops(fedc_program *p, fedc_value x) {
    fedc_value w = fedc_input(p, "w", T(FEDC_F32, 3, 4));
    fedc_matmul(p, x, w, false, false);
    fedc_matmul(p, x, x, true, false);
    fedc_value table = fedc_input(p, "table", T(FEDC_F32, 5, 3));
    fedc_value idx = fedc_input(p, "idx", T(FEDC_I32, 4));
    fedc_value rows = fedc_gather(p, table, idx);
    fedc_scatter_add(p, rows, idx, 5);
    fedc_one_hot(p, idx, 7, FEDC_F32);
    fedc_value labels = fedc_input(p, "labels", T(FEDC_I32, 2));
    fedc_value weight = fedc_input(p, "weight", T(FEDC_F32, 2));
    fedc_softmax_cross_entropy(p, x, labels, FEDC_NONE);
    fedc_softmax_cross_entropy(p, x, labels, weight);
    fedc_value key = fedc_input(p, "key", T(FEDC_I32, 4));
    fedc_dropout(p, x, key, 0.25);
    fedc_dropout(p, x, key, 1.0 / 3.0);
    fedc_random_normal(p, key, T(FEDC_F32, 2, 3));
    fedc_random_uniform(p, key, T(FEDC_F64, 1, 5));
}

/* Convolution, pooling and their gradient ops over 8x8 images. */
static void build_window_ops(fedc_program *p) {
    fedc_type img_t = T(FEDC_F32, 2, 8, 8, 3);
    fedc_value img = fedc_input(p, "img", img_t);
    fedc_value filt = fedc_input(p, "filt", T(FEDC_F32, 3, 3, 3, 4));
    const int64_t same[4] = {1, 1, 1, 1}, none[4] = {0, 0, 0, 0};
    fedc_value conv = fedc_conv2d(p, img, filt, 1, 1, FEDC_PAD_SAME);
    fedc_conv2d(p, img, filt, 2, 2, FEDC_PAD_VALID);
    fedc_conv2d_input_grad(p, conv, filt, &img_t, 1, 1, same);
    fedc_conv2d_filter_grad(p, img, conv, 3, 3, 1, 1, same);
    fedc_value mp = fedc_max_pool2d(p, img, 2, 2, 2, 2, FEDC_PAD_VALID);
    fedc_max_pool2d_grad(p, img, mp, 2, 2, 2, 2, none);
    fedc_value ap = fedc_avg_pool2d(p, img, 3, 3, 1, 1, FEDC_PAD_SAME);
    fedc_avg_pool2d_grad(p, ap, &img_t, 3, 3, 1, 1, same);
}

/* The recurrent ops. */
static void build_recurrent_ops(fedc_program *p) {
    fedc_value xw = fedc_input(p, "lstm_xw", T(FEDC_F32, 3, 2, 8)), wh = fedc_input(p, "lstm_wh", T(FEDC_F32, 2, 8));
    fedc_value trace = fedc_lstm(p, xw, wh);
    fedc_lstm_tangent(p, trace, fedc_lstm_grad(p, trace, trace, wh), wh);
}

/* Federated placements: inputs on the server and the clients. */
static void build_placed_ops(fedc_program *p) {
    fedc_type s = T(FEDC_F32, 3), c = T(FEDC_F64, 5, 2);
    s.placement = FEDC_SERVER;
    c.placement = FEDC_CLIENTS;
    fedc_value sv = fedc_input(p, "server_w", s);
    fedc_program_output(p, "server_out", fedc_neg(p, sv));
    fedc_value cv = fedc_input(p, "client_x", c);
    int ax[] = {1};
    fedc_program_output(p, "client_out", fedc_reduce_sum(p, cv, ax, 1, false));
    fedc_type u = T(FEDC_F32, 4), w = fedc_type_scalar(FEDC_F32); /* a robust aggregate and its settings */
    u.placement = w.placement = FEDC_CLIENTS;
    fedc_value uv = fedc_input(p, "client_u", u), wv = fedc_input(p, "client_w", w);
    fedc_robust geomed = fedc_robust_defaults(FEDC_ROBUST_GEOMED), trimmed = fedc_robust_defaults(FEDC_ROBUST_TRIMMED_MEAN);
    geomed.memory_mb = 3, trimmed.beta = 0.25;
    fedc_program_output(p, "robust_geomed", fedc_robust_aggregate(p, uv, wv, &geomed));
    fedc_program_output(p, "robust_trimmed", fedc_robust_aggregate(p, uv, wv, &trimmed));
}

/* The hierarchy's levels: server -> groups -> clients and back up. */
static void build_level_ops(fedc_program *p) {
    fedc_type s = T(FEDC_F32, 3);
    s.placement = FEDC_SERVER;
    fedc_value g = fedc_broadcast_down(p, fedc_input(p, "level_w", s));
    fedc_value c = fedc_broadcast_down(p, g), size = fedc_group_size(p, FEDC_F32);
    fedc_value ws = fedc_broadcast_down(p, size);
    fedc_value up = fedc_weighted_mean_up(p, fedc_mean_up(p, c), size);
    fedc_program_output(p, "level_sum", fedc_sum_up(p, fedc_weighted_mean_up(p, c, ws)));
    fedc_program_output(p, "level_top", fedc_mul(p, up, fedc_num_groups(p, FEDC_F32)));
}

/* A fold outside any map, on local values, stepping backwards (reverse=1). */
static void build_reverse_fold(fedc_program *p) {
    fedc_program *step = step_body();
    fedc_value c0 = fedc_input(p, "c0", T(FEDC_F32, 2)), cs = fedc_input(p, "cs", T(FEDC_F32, 4, 2));
    fedc_value len = fedc_input(p, "len", fedc_type_scalar(FEDC_I32)), r[2];
    fedc_value in[3] = {c0, cs, len};
    CHECK(step != NULL);
    if (step) fedc__fold(p, step, in, 3, 1, true, r);
    fedc_program_destroy(step);
    fedc_num_clients(p, FEDC_F64);
}

/* The transformer layers' ops. */
static void build_transformer_ops(fedc_program *p) {
    fedc_value x = fedc_input(p, "tokens_h", T(FEDC_F32, 2, 3, 6)), g = fedc_input(p, "ln_g", T(FEDC_F32, 6));
    fedc_value h = fedc_layer_norm(p, x, g, g, 1e-5);
    fedc_value a = fedc_causal_attention(p, h, 1);
    fedc_program_output(p, "gelu", fedc_gelu_grad(p, a, fedc_gelu(p, a)));
    fedc_program_output(p, "ln_dx", fedc_layer_norm_grad(p, x, g, h, 1e-5));
    fedc_program_output(p, "ln_dgb", fedc_layer_norm_param_grad(p, x, h, 1e-5));
    fedc_program_output(p, "attn_d", fedc_causal_attention_grad(p, h, a, 1));
    fedc_value labels = fedc_input(p, "next_tokens", T(FEDC_I32, 2, 3)), scale = fedc_input(p, "scale", T(FEDC_F32, 2, 3));
    fedc_program_output(p, "xent_d", fedc_softmax_cross_entropy_grad(p, h, labels, scale));
}

static fedc_program *build_all_ops(void) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value x = fedc_input(p, "x", T(FEDC_F32, 2, 3));
    fedc_value y = fedc_input(p, "y", T(FEDC_F32, 2, 3));
    build_basic_ops(p, x, y);
    build_indexing_ops(p, x);
    build_window_ops(p);
    build_recurrent_ops(p);
    build_placed_ops(p);
    build_level_ops(p);
    build_round(p);
    build_reverse_fold(p);
    build_transformer_ops(p);
    fedc_value c = fedc_full(p, T(FEDC_F32, 2, 3), 0.1);
    fedc_program_output(p, "sum", fedc_add(p, x, c));
    fedc_program_output(p, "x again", x);
    return p;
}

static void test_round_trip_every_op(void) {
    fedc_program *p = build_all_ops();
    CHECK(p != NULL);
    if (!p) return;
    CHECK_OK(fedc_program_status(p));
    /* The program must use every op, so that a new op cannot skip the format. */
    for (int op = 0; op < FEDC_OP_COUNT; op++) {
        bool used = false;
        for (int v = 0; v < p->n && !used; v++) used = p->nodes[v].op == (fedc__op)op;
        CHECK_MSG(used, "op %s is not covered", fedc__ops[op].name);
    }
    check_round_trip(p);
    fedc_program_destroy(p);
}

/* --------------------------------------------------------- numbers -- */

static void test_f32_constants_bit_exact(void) {
    uint32_t nan_bits[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fc12345u};
    float vals[16] = {0.1f, 1e-30f, FLT_MAX, -FLT_MAX, FLT_MIN, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1.17549421e-38f,
                      -0.0f, 0.0f, INFINITY, -INFINITY};
    for (int i = 0; i < 4; i++) memcpy(&vals[12 + i], &nan_bits[i], sizeof(float));
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_constant(p, T(FEDC_F32, 16), vals);
    fedc_constant(p, T(FEDC_F32, 1), (float[]){0.3f});
    char *text = to_text(p);
    /* Shortest forms, not %.9g everywhere. */
    CHECK(text && strstr(text, "[0.1, 1e-30, 3.4028235e+38, -3.4028235e+38, 1.1754944e-38, 1.4013e-45, -1.4013e-45, 1.1754942e-38, "));
    CHECK(text && strstr(text, "-0, 0, inf, -inf, nan, nan:0xffc00000, nan:0x7f800001, nan:0x7fc12345]"));
    CHECK(text && strstr(text, "[0.3] : f32[1]"));
    fedc_free(text);
    check_round_trip(p);
    fedc_program_destroy(p);
}

static void test_f64_and_int_constants_bit_exact(void) {
    uint64_t nan_bits = UINT64_C(0xfff0000000000001);
    double vals[12] = {0.1, 1e-300, DBL_MAX, DBL_MIN, DBL_TRUE_MIN, -0.0, INFINITY, -INFINITY, NAN, 1.0 / 3.0, 0.25};
    memcpy(&vals[11], &nan_bits, sizeof(double));
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_constant(p, T(FEDC_F64, 3, 4), vals);
    fedc_constant(p, T(FEDC_I32, 3), (int32_t[]){INT32_MIN, INT32_MAX, 0});
    fedc_constant(p, T(FEDC_U8, 3), (uint8_t[]){0, 255, 7});
    fedc_constant(p, T(FEDC_BOOL, 2), (uint8_t[]){1, 0});
    fedc_constant(p, T(FEDC_F32, 0, 3), vals); /* no elements */
    char *text = to_text(p);
    CHECK(text && strstr(text, "[0.1, 1e-300, 1.7976931348623157e+308, 2.2250738585072014e-308, 4.94065645841247e-324, -0, inf, -inf, nan, "));
    CHECK(text && strstr(text, "0.3333333333333333, 0.25, nan:0xfff0000000000001] : f64[3,4]"));
    CHECK(text && strstr(text, "[-2147483648, 2147483647, 0] : i32[3]"));
    CHECK(text && strstr(text, "[0, 255, 7] : u8[3]"));
    CHECK(text && strstr(text, "[1, 0] : bool[2]"));
    CHECK(text && strstr(text, "constant [] : f32[0,3]"));
    fedc_free(text);
    check_round_trip(p);
    fedc_program_destroy(p);
}

static void test_float_attributes_bit_exact(void) {
    double exps[] = {0.1, 1.0 / 3.0, 1e-320, -0.0, 2.5, INFINITY, NAN, 1e300};
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", T(FEDC_F64, 2));
    for (int i = 0; i < FEDC_COUNT_OF(exps); i++) fedc_pow(p, x, exps[i]);
    char *text = to_text(p);
    CHECK(text && strstr(text, "{exponent=0.1}"));
    CHECK(text && strstr(text, "{exponent=0.3333333333333333}"));
    CHECK(text && strstr(text, "{exponent=-0}"));
    CHECK(text && strstr(text, "{exponent=2.5}"));
    CHECK(text && strstr(text, "{exponent=inf}"));
    CHECK(text && strstr(text, "{exponent=nan}"));
    fedc_free(text);
    check_round_trip(p);
    fedc_program_destroy(p);
}

/* Text typed by a person need not be the shortest form; it reads to the nearest value. */
static void test_parse_numbers_by_hand(void) {
    const char *text = "fedc program\n"
                       "%0 = constant [0.100000001, +1, 1e-46, 3.4028235e38, -inf, nan:0x7fc00001] : f32[6]\n"
                       "%1 = constant [0.1000000000000000055511151231257827, 5e-324] : f64[2]\n";
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_parse(text, &p));
    if (!p) return;
    const float *f = p->nodes[0].data;
    uint32_t nan_bits;
    memcpy(&nan_bits, &f[5], sizeof nan_bits);
    CHECK(f[0] == 0.1f && f[1] == 1.0f && f[2] == 0.0f && f[3] == FLT_MAX && f[4] == -INFINITY);
    CHECK(nan_bits == 0x7fc00001u);
    const double *d = p->nodes[1].data;
    CHECK(d[0] == 0.1 && d[1] == DBL_TRUE_MIN);
    fedc_program_destroy(p);
}

/* The decimal point stays '.' under a locale whose point is ','. */
static void test_numbers_ignore_locale(void) {
    const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"};
    const char *set = NULL;
    for (int i = 0; i < FEDC_COUNT_OF(names) && !set; i++) set = setlocale(LC_NUMERIC, names[i]);
    if (!set) {
        fedc_test_skip("no locale with a decimal comma is installed");
        return;
    }
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_pow(p, fedc_scalar(p, FEDC_F32, 0.5), 2.5);
    char *text = to_text(p);
    CHECK(text && strstr(text, "[0.5]") && strstr(text, "exponent=2.5"));
    fedc_free(text);
    check_round_trip(p);
    fedc_program_destroy(p);
    setlocale(LC_NUMERIC, "C");
}

/* ------------------------------------------------------ names, syntax -- */

static void test_names_with_escapes(void) {
    const char *names[] = {"quote\"d", "back\\slash", "new\nline", "tab\there", "bell\a", "caf\xc3\xa9 #1"};
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    for (int i = 0; i < FEDC_COUNT_OF(names); i++) {
        fedc_value v = fedc_input(p, names[i], T(FEDC_F32, 1));
        fedc_program_output(p, names[i], v);
    }
    char *text = to_text(p);
    CHECK(text && strstr(text, "input \"quote\\\"d\""));
    CHECK(text && strstr(text, "\"back\\\\slash\""));
    CHECK(text && strstr(text, "\"new\\nline\""));
    CHECK(text && strstr(text, "\"tab\\there\""));
    CHECK(text && strstr(text, "\"bell\\x07\""));
    CHECK(text && strstr(text, "output \"caf\xc3\xa9 #1\" = %5"));
    fedc_free(text);
    check_round_trip(p);
    fedc_program_destroy(p);
}

static void test_comments_blank_lines_and_spacing(void) {
    const char *text = "# a model\r\n"
                       "\n"
                       "  fedc   program   # header\r\n"
                       "%0=input \"x\":f32[ 4 , 3 ]@local\n"
                       "\t\n"
                       "%1 = input \"s\" : f32[3]@server  # on the server\n"
                       "output \"early\" = %0\n"
                       "%2 = reduce_sum( %0 ){ axes = [ 1 ] , keepdims = 0 } : f32[4]\n"
                       "%3 = iota {} "; /* not valid: iota needs parentheses */
    fedc_program *p = NULL;
    CHECK_ERR(fedc_program_parse(text, &p), FEDC_EPARSE, "line 9, column 11: expected '(' after the op name, found '{'");
    CHECK(p == NULL);
    char ok[512];
    snprintf(ok, sizeof ok, "%.*s", (int)(strstr(text, "%3 = iota") - text), text);
    CHECK_OK(fedc_program_parse(ok, &p));
    if (!p) return;
    CHECK_EQ_INT(p->n, 3);
    CHECK(p->nodes[1].type.placement == FEDC_SERVER);
    CHECK(fedc_program_find_output(p, "early") == 0);
    char *printed = to_text(p);
    CHECK(printed && strstr(printed, "%2 = reduce_sum(%0) {axes=[1], keepdims=0} : f32[4]\noutput \"early\" = %0\n"));
    fedc_free(printed);
    check_round_trip(p);
    fedc_program_destroy(p);
}

/* -------------------------------------------------------- parse errors -- */

#define HEAD "fedc program\n%0 = input \"x\" : f32[4,3]\n%1 = input \"w\" : f32[3,2]\n"

static void test_errors_syntax(void) {
    PARSE_ERROR("", "line 1, column 1: expected the header 'fedc program', found end of input", NULL);
    PARSE_ERROR("# only a comment\n\n", "expected the header 'fedc program'", NULL);
    PARSE_ERROR("fedc programme\n", "line 1, column 6: expected the header 'fedc program', found 'programme'", NULL);
    PARSE_ERROR(HEAD "%2 = matmull(%0, %1) : f32[4,2]\n", "line 4, column 6: unknown op 'matmull'", NULL);
    PARSE_ERROR(HEAD "%2 = matmul(%0, %1) {transpose_c=0} : f32[4,2]\n", "line 4", "unknown attribute 'transpose_c'");
    PARSE_ERROR(HEAD "%2 = matmul(%0, %1) {transpose_a=0, transpose_a=1} : f32[4,2]\n", "line 4",
                "attribute 'transpose_a' is given twice");
    PARSE_ERROR(HEAD "%2 = matmul(%0 %1) : f32[4,2]\n", "line 4, column 16: expected ',' or ')', found '%1'", NULL);
    PARSE_ERROR(HEAD "%2 : matmul(%0, %1) : f32[4,2]\n", "line 4, column 4: expected '=', found ':'", NULL);
    PARSE_ERROR(HEAD "%2 = matmul(%0, %1) : f32[4,2] extra\n", "line 4, column 32: expected end of line, found 'extra'",
                NULL);
    PARSE_ERROR(HEAD "%2 = neg(%0) : f32[4,3] }\n", "expected end of line, found '}'", NULL);
    PARSE_ERROR(HEAD "bogus\n", "line 4, column 1: expected '%N = ...', 'output' or 'body', found 'bogus'", NULL);
    PARSE_ERROR("fedc program\n%0 = input x : f32[2]\n", "line 2, column 12: expected a quoted name, found 'x'", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x : f32[2]\n", "line 2", "expected '\"' to end the name");
    PARSE_ERROR("fedc program\n%0 = input \"a\\qb\" : f32[2]\n", "line 2, column 14: unknown escape", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"a\\x00\" : f32[2]\n", "line 2", "cannot contain \\x00");
}

static void test_errors_attributes_and_types(void) {
    PARSE_ERROR(HEAD "%2 = reduce_sum(%0) {axes=1, keepdims=0} : f32[]\n", "line 4",
                "expected a list of integers for 'axes', found '1'");
    PARSE_ERROR(HEAD "%2 = reduce_sum(%0) {axes=[0, 1], keepdims=[0]} : f32[]\n", "line 4",
                "expected an integer for 'keepdims', found '['");
    PARSE_ERROR(HEAD "%2 = reduce_sum(%0) {axes=[0.5]} : f32[]\n", "expected an integer, found '0.5'", NULL);
    PARSE_ERROR(HEAD "%2 = cast(%0) {dtype=3} : i32[4,3]\n", "expected a dtype name for 'dtype', found '3'", NULL);
    PARSE_ERROR(HEAD "%2 = cast(%0) {dtype=f16} : i32[4,3]\n", "unknown dtype 'f16'", NULL);
    PARSE_ERROR(HEAD "%2 = pow(%0) {exponent=two} : f32[4,3]\n", "expected a number for 'exponent', found 'two'", NULL);
    PARSE_ERROR(HEAD "%2 = pow(%0) {exponent=0x1p3} : f32[4,3]\n", "expected a number for 'exponent'", NULL);
    PARSE_ERROR(HEAD "%2 = transpose(%0) {perm=[0, 1, 2, 3, 4, 5, 6]} : f32[4,3]\n", "line 4",
                "a list has at most 6 integers");
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f16[2]\n", "line 2, column 18: unknown dtype 'f16'", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32\n", "line 2, column 21: expected '[' after the dtype, found end of line", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[2,-1]\n", "line 2", "a dimension cannot be negative");
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[2,3\n", "line 2", "expected ',' or ']', found end of line");
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[1,1,1,1,1,1,1]\n", "at most 6 dimensions", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[4294967296,4294967296]\n", "too many elements", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[99999999999999999999]\n", "out of range", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[2]@mars\n", "line 2", "unknown placement 'mars'");
    PARSE_ERROR("fedc program\n%0 = input \"x\" : 7\n", "expected a type like f32[4,3], found '7'", NULL);
}

static void test_errors_values_and_rules(void) {
    PARSE_ERROR(HEAD "%2 = add(%0, %3) : f32[4,3]\n", "line 4, column 14: %3 is used before it is defined", NULL);
    PARSE_ERROR(HEAD "%2 = add(%2, %0) : f32[4,3]\n", "%2 is used before it is defined", NULL);
    PARSE_ERROR(HEAD "%5 = neg(%0) : f32[4,3]\n", "line 4, column 1: expected %2 (values are numbered in order), found '%5'",
                NULL);
    PARSE_ERROR(HEAD "%1 = neg(%0) : f32[4,3]\n", "expected %2", NULL);
    PARSE_ERROR(HEAD "%2 = add(%0) : f32[4,3]\n", "line 4: add: takes 2 to 2 operands, got 1", NULL);
    PARSE_ERROR(HEAD "%2 = matmul(%0, %1) : f32[4,3]\n", "line 4, column 23: declared type f32[4,3] but matmul gives f32[4,2]",
                NULL);
    PARSE_ERROR(HEAD "%2 = neg(%0) : f32[4,3]@server\n", "declared type f32[4,3]@server but neg gives f32[4,3]", NULL);
    PARSE_ERROR(HEAD "%2 = matmul(%1, %1) : f32[3,2]\n", "line 4: matmul: inner dimensions differ", NULL);
    PARSE_ERROR(HEAD "%2 = reduce_sum(%0) {axes=[5]} : f32[]\n", "line 4: reduce_sum: axis 5 is out of range", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[2]\n%1 = input \"x\" : f32[3]\n",
                "line 3: input: an input is already named \"x\"", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"\" : f32[2]\n", "line 2: input: an input needs a name", NULL);
}

static void test_errors_constants_and_outputs(void) {
    PARSE_ERROR("fedc program\n%0 = constant [1, 2, 3] : f32[2,2]\n",
                "line 2, column 15: a constant of type f32[2,2] needs 4 values, found 3", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [] : f32[]\n", "needs 1 values, found 0", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [1.5] : i32[]\n", "line 2, column 16: expected an integer, found '1.5'", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [2147483648] : i32[]\n", "2147483648 is out of range for i32", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [256] : u8[]\n", "256 is out of range for u8", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [2] : bool[]\n", "2 is out of range for bool", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [1e39] : f32[]\n", "'1e39' is out of range for f32", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [1e309] : f64[]\n", "'1e309' is out of range for f64", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [-nan] : f32[]\n", "expected a number, found '-nan'", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [nan:0x3f800000] : f32[]\n", "not the bit pattern of a NaN", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [nan:0x7fc000000] : f32[]\n", "expected a number", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [1, , 2] : f32[3]\n", "line 2, column 19: expected a number, found ','", NULL);
    PARSE_ERROR("fedc program\n%0 = constant [1, 2] f32[2]\n", "expected ':' before the type", NULL);
    PARSE_ERROR(HEAD "output \"y\" = %0\noutput \"y\" = %1\n", "line 5, column 8: duplicate output name \"y\"", NULL);
    PARSE_ERROR(HEAD "output \"y\" = %2\n", "line 4, column 14: %2 is used before it is defined", NULL);
    PARSE_ERROR(HEAD "output \"y\" %0\n", "expected '=', found '%0'", NULL);
}
/* ---------------------------------------------------- allocation failure -- */

/* Live allocations made through fedc_* while counting (single-threaded here). */
static long live;
static void *count_malloc(void *ctx, size_t n) {
    (void)ctx;
    void *p = malloc(n);
    live += p != NULL;
    return p;
}
static void *count_realloc(void *ctx, void *p, size_t n) {
    (void)ctx;
    void *q = realloc(p, n);
    live += q && !p;
    return q;
}
static void count_free(void *ctx, void *p) {
    (void)ctx;
    live -= p != NULL;
    free(p);
}
static const fedc_allocator counting = {count_malloc, count_realloc, count_free, NULL};

/* A federated round's gradient: bodies nested two deep, made by fedc_grad. */
static fedc_program *build_round_grad(void) {
    fedc_program *p, *g = NULL;
    if (fedc_program_create(&p)) return NULL;
    build_round(p);
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"w0"}, 1, &g));
    fedc_program_destroy(p);
    return g;
}

/* The programs whose text the allocation-failure tests parse and print. */
static fedc_program *(*const alloc_programs[])(void) = {build_all_ops, build_round_grad};

/* Fails the k-th allocation of parse, for k = 1, 2, ... until parse succeeds:
 * every failure must be FEDC_ENOMEM with nothing left allocated. */
static void parse_alloc_failure(fedc_program *(*build)(void)) {
    fedc_program *p = build();
    char *text = p ? to_text(p) : NULL;
    fedc_program_destroy(p);
    CHECK(text != NULL);
    if (!text) return;
    fedc_set_allocator(&counting);
    int k;
    for (k = 1; k < 100000; k++) {
        live = 0;
        fedc__alloc_fail_after((uint64_t)k);
        fedc_program *q = (fedc_program *)&q;
        fedc_status st = fedc_program_parse(text, &q);
        fedc__alloc_fail_after(0);
        if (st == FEDC_OK) {
            fedc_program_destroy(q);
            CHECK_EQ_INT(live, 0);
            break;
        }
        CHECK_MSG(st == FEDC_ENOMEM, "allocation %d: %s: %s", k, fedc_status_str(st), fedc_errmsg());
        CHECK_MSG(q == NULL, "allocation %d: *out not NULL", k);
        CHECK_MSG(live == 0, "allocation %d: %ld allocations leaked", k, live);
        if (fedc_test_failures()) break;
    }
    fedc_set_allocator(NULL);
    CHECK(k > 3); /* the parse did allocate, so failures were exercised */
    fedc_free(text);
}

static void test_parse_alloc_failure(void) {
    for (int i = 0; i < FEDC_COUNT_OF(alloc_programs) && !fedc_test_failures(); i++)
        parse_alloc_failure(alloc_programs[i]);
}

static void print_alloc_failure(fedc_program *(*build)(void)) {
    fedc_set_allocator(&counting);
    live = 0;
    fedc_program *p = build();
    CHECK(p != NULL);
    int k;
    for (k = 1; p && k < 100000; k++) {
        long before = live;
        fedc__alloc_fail_after((uint64_t)k);
        char *text = (char *)&text;
        fedc_status st = fedc_program_to_string(p, &text);
        fedc__alloc_fail_after(0);
        if (st == FEDC_OK) {
            fedc_free(text);
            CHECK_EQ_INT(live, before);
            break;
        }
        CHECK_MSG(st == FEDC_ENOMEM, "allocation %d: %s: %s", k, fedc_status_str(st), fedc_errmsg());
        CHECK_MSG(text == NULL, "allocation %d: *out not NULL", k);
        CHECK_MSG(live == before, "allocation %d: %ld allocations leaked", k, live - before);
        if (fedc_test_failures()) break;
    }
    CHECK(k > 1);
    fedc_program_destroy(p);
    CHECK_EQ_INT(live, 0);
    fedc_set_allocator(NULL);
}

static void test_print_alloc_failure(void) {
    for (int i = 0; i < FEDC_COUNT_OF(alloc_programs) && !fedc_test_failures(); i++)
        print_alloc_failure(alloc_programs[i]);
}

/* A file's bytes with a NUL inside a line: fedc_program_parse would stop there
 * and drop the lines after it; the byte-counted parse names where it is. */
static void test_nul_byte_in_a_line(void) {
    static const char text[] = "fedc program\n%0 = input \"x\" : f32[4]\n%1 = neg(%0)\0junk : f32[4]\n"
                               "output \"y\" = %1\n";
    fedc_program *p = (fedc_program *)1;
    CHECK_ERR(fedc_program_parse_n(text, sizeof text - 1, &p), FEDC_EPARSE,
              "line 3, column 13: a NUL byte (a program's text holds none)");
    CHECK(p == NULL);
    CHECK_ERR(fedc_program_parse_n("\0", 1, &p), FEDC_EPARSE, "line 1, column 1: a NUL byte");
    /* Without the NUL the same bytes parse, and need no terminator of their own. */
    static const char good[] = "fedc program\n%0 = input \"x\" : f32[4]\n%1 = neg(%0) : f32[4]\n"
                               "output \"y\" = %1\nGARBAGE";
    CHECK_OK(fedc_program_parse_n(good, sizeof good - 1 - strlen("GARBAGE"), &p));
    if (p) CHECK_EQ_INT(p->n, 2);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"print_example", test_print_example},
        {"print_file_matches_string", test_print_file_matches_string},
        {"empty_and_failed_programs", test_empty_and_failed_programs},
        {"round_trip_every_op", test_round_trip_every_op},
        {"f32_constants_bit_exact", test_f32_constants_bit_exact},
        {"f64_and_int_constants_bit_exact", test_f64_and_int_constants_bit_exact},
        {"float_attributes_bit_exact", test_float_attributes_bit_exact},
        {"parse_numbers_by_hand", test_parse_numbers_by_hand},
        {"numbers_ignore_locale", test_numbers_ignore_locale},
        {"names_with_escapes", test_names_with_escapes},
        {"comments_blank_lines_and_spacing", test_comments_blank_lines_and_spacing},
        {"errors_syntax", test_errors_syntax},
        {"nul_byte_in_a_line", test_nul_byte_in_a_line},
        {"errors_attributes_and_types", test_errors_attributes_and_types},
        {"errors_values_and_rules", test_errors_values_and_rules},
        {"errors_constants_and_outputs", test_errors_constants_and_outputs},
        {"parse_alloc_failure", test_parse_alloc_failure},
        {"print_alloc_failure", test_print_alloc_failure},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
