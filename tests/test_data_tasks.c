/*
 * Tests of the task preprocessings (fedc/tasks.h) on clients built by hand, with
 * outputs worked out exactly: EMNIST's 1 - x and reshape, label checks and
 * domain ids; Shakespeare's character ids, BOS/EOS placement, chunking and
 * padding (FedJAX's own test case among them) and LEAF's x/y strings; Stack
 * Overflow's vocabulary files, OOV, truncation and padding (FedJAX's test cases);
 * CIFAR-100's normalisation bit for bit, crops and flips checked pixel by pixel
 * and reproducible per seed; heart disease's labels and standardisation. The
 * hooks on the data sets' files are in test_data_tasks_files.c.
 */
#include "core/internal.h"
#include "data_fixtures.h"
#include "harness.h"
#include "tasks_check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fedc/tasks.h"

/* ------------------------------------------------------------------ EMNIST -- */

static void test_emnist_leaf(void) {
    float x[2 * 784];
    for (int i = 0; i < 2 * 784; i++) x[i] = (float)(i % 256) / 255.0f;
    fedc_client_data *c = new_client("f0000_14", 2);
    CHECK_OK(fedc_client_add_array(c, "x", TY(FEDC_F32, 2, 784), x));
    CHECK_OK(fedc_client_add_array(c, "y", TY(FEDC_I32, 2), (int32_t[]){7, 61}));
    fedc_client_data *out = NULL;
    CHECK_OK(fedc_emnist_preprocess(c, NULL, &out));
    const float *ox = array(out, "x", TY(FEDC_F32, 2, 28, 28, 1));
    for (int i = 0; ox && i < 2 * 784; i++)
        if (ox[i] != 1.0f - x[i]) {
            CHECK_MSG(false, "x[%d] = %g, expected %g", i, ox[i], 1.0f - x[i]);
            break;
        }
    check_ints(array(out, "y", TY(FEDC_I32, 2)), (int32_t[]){7, 61}, 2, "y");
    CHECK_EQ_INT(out ? out->num_features : 0, 2);
    CHECK(out && strcmp(out->id, "f0000_14") == 0);
    fedc_client_data_destroy(out);
    fedc_client_data_destroy(c);
}

static void test_emnist_tff_and_domain(void) {
    float px[28 * 28] = {0};
    px[0] = 1.0f, px[783] = 0.25f;
    const char *ids[] = {"f2100_01", "f2599_99", "f0000_14", "0123456789abcdef:f2345_67", "0123456789abcdef:f3000_00"};
    const int32_t domains[] = {0, 0, 1, 0, 1};
    for (int k = 0; k < 5; k++) {
        fedc_client_data *c = new_client(ids[k], 1), *out = NULL;
        CHECK_OK(fedc_client_add_array(c, "pixels", TY(FEDC_F32, 1, 28, 28), px));
        CHECK_OK(fedc_client_add_array(c, "label", TY(FEDC_I32, 1), (int32_t[]){3}));
        CHECK_OK(fedc_client_add_array(c, "extra", TY(FEDC_I32, 1), (int32_t[]){9}));
        CHECK_OK(fedc_emnist_preprocess(c, &(fedc_emnist_options){.domain_id = true}, &out));
        const float *ox = array(out, "x", TY(FEDC_F32, 1, 28, 28, 1));
        if (ox) CHECK(ox[0] == 0.0f && ox[1] == 1.0f && ox[783] == 0.75f);
        check_ints(array(out, "domain_id", TY(FEDC_I32, 1)), &domains[k], 1, ids[k]);
        CHECK(out && !fedc_client_feature(out, "extra") && !fedc_client_feature(out, "pixels"));
        fedc_client_data_destroy(out);
        fedc_client_data_destroy(c);
    }
    fedc_client_data *c = new_client("writer7", 1), *out = NULL;
    CHECK_OK(fedc_client_add_array(c, "pixels", TY(FEDC_F32, 1, 28, 28), px));
    CHECK_OK(fedc_client_add_array(c, "label", TY(FEDC_I32, 1), (int32_t[]){3}));
    CHECK_ERR(fedc_emnist_preprocess(c, &(fedc_emnist_options){.domain_id = true}, &out), FEDC_EINVAL,
              "client \"writer7\": EMNIST domain_id needs an id");
    CHECK(out == NULL);
    CHECK_OK(fedc_emnist_preprocess(c, NULL, &out)); /* no domain_id asked for: any id */
    fedc_client_data_destroy(out);
    fedc_client_data_destroy(c);
}

static void test_emnist_errors(void) {
    float x[3 * 784] = {0};
    fedc_client_data *c = new_client("w1", 3), *out = NULL;
    CHECK_OK(fedc_client_add_array(c, "x", TY(FEDC_F32, 3, 784), x));
    CHECK_ERR(fedc_emnist_preprocess(c, NULL, &out), FEDC_ENOTFOUND,
              "client \"w1\": EMNIST needs a feature \"label\" or \"y\" (it has \"x\")");
    CHECK_OK(fedc_client_add_array(c, "y", TY(FEDC_I32, 3), (int32_t[]){0, 62, 5}));
    CHECK_ERR(fedc_emnist_preprocess(c, NULL, &out), FEDC_ERANGE,
              "client \"w1\": EMNIST label 62 of example 1 (\"y\") is outside [0, 62)");
    CHECK(out == NULL);
    fedc_client_data_destroy(c);

    c = new_client("w2", 1);
    CHECK_OK(fedc_client_add_array(c, "pixels", TY(FEDC_F32, 1, 27, 28), x));
    CHECK_OK(fedc_client_add_array(c, "label", TY(FEDC_I32, 1), (int32_t[]){-1}));
    CHECK_ERR(fedc_emnist_preprocess(c, NULL, &out), FEDC_ESHAPE, "784 pixels per example");
    fedc_client_data_destroy(c);

    c = new_client("w3", 1);
    CHECK_OK(fedc_client_add_array(c, "pixels", TY(FEDC_U8, 1, 28, 28), x));
    CHECK_ERR(fedc_emnist_preprocess(c, NULL, &out), FEDC_ETYPE,
              "EMNIST needs feature \"pixels\" to be f32, it is u8[1,28,28]");
    fedc_client_data_destroy(c);
}

/* The hook through a dataset: the dataset hands out preprocessed clients, and an
 * error of the hook is the load's error. */
static void test_emnist_hook(void) {
    float x[784] = {0};
    fedc_client_data **cs = fedc_malloc(2 * sizeof *cs);
    cs[0] = new_client("a", 1), cs[1] = new_client("b", 1);
    CHECK_OK(fedc_client_add_array(cs[0], "x", TY(FEDC_F32, 1, 784), x));
    CHECK_OK(fedc_client_add_array(cs[0], "y", TY(FEDC_I32, 1), (int32_t[]){4}));
    CHECK_OK(fedc_client_add_array(cs[1], "x", TY(FEDC_F32, 1, 784), x));
    CHECK_OK(fedc_client_add_array(cs[1], "y", TY(FEDC_I32, 1), (int32_t[]){99}));
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc_dataset_from_clients(cs, 2, &ds));
    fedc_dataset_set_preprocess(ds, fedc_emnist_hook, NULL);
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_dataset_client(ds, 0, &c));
    const float *ox = array(c, "x", TY(FEDC_F32, 1, 28, 28, 1));
    CHECK(ox && ox[100] == 1.0f);
    fedc_client_data_destroy(c);
    CHECK_ERR(fedc_dataset_client(ds, 1, &c), FEDC_ERANGE, "client \"b\": EMNIST label 99 of example 0");
    CHECK(c == NULL);
    fedc_dataset_destroy(ds);
}

/* ------------------------------------------------------------- Shakespeare -- */

static void test_shakespeare_vocab(void) {
    const char *v = fedc_shakespeare_vocab();
    CHECK_EQ_INT(strlen(v), 86);
    CHECK_EQ_INT(fedc_shakespeare_char_id('d'), 3);
    CHECK_EQ_INT(fedc_shakespeare_char_id('h'), 4);
    CHECK_EQ_INT(fedc_shakespeare_char_id(' '), 16);
    CHECK_EQ_INT(fedc_shakespeare_char_id('e'), 67);
    CHECK_EQ_INT(fedc_shakespeare_char_id('\n'), 65);
    CHECK_EQ_INT(fedc_shakespeare_char_id('\r'), 88);
    CHECK_EQ_INT(fedc_shakespeare_char_id('~'), FEDC_SHAKESPEARE_OOV);
    CHECK_EQ_INT(fedc_shakespeare_char_id(0), FEDC_SHAKESPEARE_OOV);
    CHECK_EQ_INT(fedc_shakespeare_char_id(0xE2), FEDC_SHAKESPEARE_OOV);
    for (int k = 0; k < 86; k++) CHECK_EQ_INT(fedc_shakespeare_char_id((unsigned char)v[k]), 3 + k);
}

/* FedJAX's shakespeare_test.py, sequence_length = 10. */
static void test_shakespeare_fedjax_case(void) {
    fedc_client_data *c = new_client("role", 2), *out = NULL;
    CHECK_OK(fedc_client_add_strings(c, "snippets", (const char *[]){"hello", "hi there"}, NULL));
    CHECK_OK(fedc_shakespeare_preprocess(c, &(fedc_shakespeare_options){.sequence_length = 10}, &out));
    static const int32_t x[] = {1, 4, 67, 5, 5, 26, 2, 1, 4, 68, 16, 7, 4, 67, 48, 67, 0, 0, 0, 0};
    static const int32_t y[] = {4, 67, 5, 5, 26, 2, 1, 4, 68, 16, 7, 4, 67, 48, 67, 2, 0, 0, 0, 0};
    check_ints(array(out, "x", TY(FEDC_I32, 2, 10)), x, 20, "x");
    check_ints(array(out, "y", TY(FEDC_I32, 2, 10)), y, 20, "y");
    CHECK_EQ_INT(out ? out->num_examples : -1, 2);
    fedc_client_data_destroy(out);
    fedc_client_data_destroy(c);
}

/* The docs' example, L = 3: ["ABCD", "E"]; and the default L = 80 on a 100-byte
 * snippet: 102 ids, x = the first 101, 2 rows, the rest PAD. */
static void test_shakespeare_chunks(void) {
    fedc_client_data *c = new_client("r", 2), *out = NULL;
    CHECK_OK(fedc_client_add_strings(c, "text", (const char *[]){"ABCD", "E"}, NULL));
    CHECK_OK(fedc_shakespeare_preprocess(c, &(fedc_shakespeare_options){.sequence_length = 3}, &out));
    int32_t A = fedc_shakespeare_char_id('A'), B = fedc_shakespeare_char_id('B'), C = fedc_shakespeare_char_id('C'),
            D = fedc_shakespeare_char_id('D'), E = fedc_shakespeare_char_id('E');
    check_ints(array(out, "x", TY(FEDC_I32, 3, 3)), (int32_t[]){1, A, B, C, D, 2, 1, E, 0}, 9, "x");
    check_ints(array(out, "y", TY(FEDC_I32, 3, 3)), (int32_t[]){A, B, C, D, 2, 1, E, 2, 0}, 9, "y");
    fedc_client_data_destroy(out);
    fedc_client_data_destroy(c);

    char text[101];
    for (int k = 0; k < 100; k++) text[k] = "to be or not "[k % 13];
    text[100] = '\0';
    c = new_client("r", 1);
    CHECK_OK(fedc_client_add_strings(c, "snippets", (const char *[]){text}, NULL));
    CHECK_OK(fedc_shakespeare_hook(NULL, &c));
    const int32_t *x = array(c, "x", TY(FEDC_I32, 2, 80)), *y = array(c, "y", TY(FEDC_I32, 2, 80));
    for (int k = 0; x && y && k < 160; k++) {
        int32_t wx = k == 0 ? 1 : k <= 100 ? fedc_shakespeare_char_id((unsigned char)text[k - 1]) : 0;
        int32_t wy = k < 100 ? fedc_shakespeare_char_id((unsigned char)text[k]) : k == 100 ? 2 : 0;
        CHECK_MSG(x[k] == wx && y[k] == wy, "position %d: x %d y %d, expected %d %d", k, x[k], y[k], wx, wy);
    }
    fedc_client_data_destroy(c);

    /* Exactly L + 1 ids fill one row; no snippets make no rows. */
    c = new_client("r", 1);
    CHECK_OK(fedc_client_add_strings(c, "snippets", (const char *[]){"ab"}, NULL));
    CHECK_OK(fedc_shakespeare_preprocess(c, &(fedc_shakespeare_options){.sequence_length = 3}, &out));
    check_ints(array(out, "y", TY(FEDC_I32, 1, 3)), (int32_t[]){fedc_shakespeare_char_id('a'),
                                                                fedc_shakespeare_char_id('b'), 2}, 3, "y");
    fedc_client_data_destroy(out);
    fedc_client_data_destroy(c);
    c = new_client("quiet", 0);
    CHECK_OK(fedc_client_add_strings(c, "snippets", NULL, NULL));
    CHECK_OK(fedc_shakespeare_preprocess(c, NULL, &out));
    array(out, "x", TY(FEDC_I32, 0, 80));
    fedc_client_data_destroy(out);
    CHECK_ERR(fedc_shakespeare_preprocess(c, &(fedc_shakespeare_options){.sequence_length = -2}, &out), FEDC_EINVAL,
              "sequence length -2 is not in [1, 1048576]");
    CHECK_ERR(fedc_shakespeare_preprocess(c, &(fedc_shakespeare_options){.sequence_length = INT64_MAX}, &out), FEDC_EINVAL, "is not in");
    fedc_client_data_destroy(c);
}

static void test_shakespeare_leaf(void) {
    char a[81], b[81];
    for (int k = 0; k < 80; k++) a[k] = "When shall we three meet again "[k % 30], b[k] = (char)('a' + k % 26);
    a[80] = b[80] = '\0';
    fedc_client_data *c = new_client("THE_TEMPEST_ARIEL", 2), *out = NULL;
    CHECK_OK(fedc_client_add_strings(c, "x", (const char *[]){a, b}, NULL));
    CHECK_OK(fedc_client_add_strings(c, "y", (const char *[]){"n", "~"}, NULL));
    CHECK_OK(fedc_shakespeare_preprocess(c, NULL, &out));
    const int32_t *x = array(out, "x", TY(FEDC_I32, 2, 80));
    for (int k = 0; x && k < 80; k++) {
        CHECK_EQ_INT(x[k], fedc_shakespeare_char_id((unsigned char)a[k]));
        CHECK_EQ_INT(x[80 + k], fedc_shakespeare_char_id((unsigned char)b[k]));
    }
    check_ints(array(out, "y", TY(FEDC_I32, 2)), (int32_t[]){fedc_shakespeare_char_id('n'), 89}, 2, "y");
    fedc_client_data_destroy(out);
    fedc_client_data_destroy(c);

    /* as next-character sequences: y = x[1:] then y, per window */
    c = new_client("THE_TEMPEST_ARIEL", 2);
    CHECK_OK(fedc_client_add_strings(c, "x", (const char *[]){a, b}, NULL));
    CHECK_OK(fedc_client_add_strings(c, "y", (const char *[]){"n", "~"}, NULL));
    CHECK_OK(fedc_shakespeare_preprocess(c, &(fedc_shakespeare_options){.leaf_sequences = true}, &out));
    const int32_t *ys = array(out, "y", TY(FEDC_I32, 2, 80));
    for (int k = 0; ys && k < 79; k++) {
        CHECK_EQ_INT(ys[k], fedc_shakespeare_char_id((unsigned char)a[k + 1]));
        CHECK_EQ_INT(ys[80 + k], fedc_shakespeare_char_id((unsigned char)b[k + 1]));
    }
    if (ys) {
        CHECK_EQ_INT(ys[79], fedc_shakespeare_char_id((unsigned char)'n'));
        CHECK_EQ_INT(ys[159], 89);
    }
    fedc_client_data_destroy(out);

    /* a model's length: the last 5 positions of each window, or the window and PAD */
    CHECK_OK(fedc_shakespeare_preprocess(c, &(fedc_shakespeare_options){.leaf_sequences = true, .sequence_length = 5},
                                         &out));
    const int32_t *x5 = array(out, "x", TY(FEDC_I32, 2, 5)), *y5 = array(out, "y", TY(FEDC_I32, 2, 5));
    for (int k = 0; x5 && y5 && k < 5; k++) {
        CHECK_EQ_INT(x5[k], fedc_shakespeare_char_id((unsigned char)a[75 + k]));
        CHECK_EQ_INT(x5[5 + k], fedc_shakespeare_char_id((unsigned char)b[75 + k]));
        CHECK_EQ_INT(y5[k], k < 4 ? fedc_shakespeare_char_id((unsigned char)a[76 + k]) : fedc_shakespeare_char_id('n'));
        CHECK_EQ_INT(y5[5 + k], k < 4 ? fedc_shakespeare_char_id((unsigned char)b[76 + k]) : 89);
    }
    fedc_client_data_destroy(out);
    CHECK_OK(fedc_shakespeare_preprocess(c, &(fedc_shakespeare_options){.leaf_sequences = true, .sequence_length = 83},
                                         &out));
    const int32_t *x83 = array(out, "x", TY(FEDC_I32, 2, 83)), *y83 = array(out, "y", TY(FEDC_I32, 2, 83));
    for (int k = 0; x83 && y83 && k < 83; k++) {
        CHECK_EQ_INT(x83[83 + k], k < 80 ? fedc_shakespeare_char_id((unsigned char)b[k]) : FEDC_SHAKESPEARE_PAD);
        CHECK_EQ_INT(y83[k], k < 79   ? fedc_shakespeare_char_id((unsigned char)a[k + 1])
                             : k == 79 ? fedc_shakespeare_char_id('n')
                                       : FEDC_SHAKESPEARE_PAD);
    }
    fedc_client_data_destroy(out);
    fedc_client_data_destroy(c);

    c = new_client("R", 2);
    CHECK_OK(fedc_client_add_strings(c, "x", (const char *[]){a, "short"}, NULL));
    CHECK_OK(fedc_client_add_strings(c, "y", (const char *[]){"n", "o"}, NULL));
    CHECK_ERR(fedc_shakespeare_preprocess(c, NULL, &out), FEDC_ESHAPE,
              "client \"R\": Shakespeare \"x\" of example 1 has 5 bytes, example 0 has 80");
    fedc_client_data_destroy(c);
    c = new_client("R", 1);
    CHECK_OK(fedc_client_add_strings(c, "x", (const char *[]){a}, NULL));
    CHECK_OK(fedc_client_add_strings(c, "y", (const char *[]){"no"}, NULL));
    CHECK_ERR(fedc_shakespeare_preprocess(c, NULL, &out), FEDC_ESHAPE, "\"y\" of example 0 has 2 bytes, not 1");
    fedc_client_data_destroy(c);
    c = new_client("R", 1);
    CHECK_OK(fedc_client_add_array(c, "x", TY(FEDC_I32, 1), (int32_t[]){1}));
    CHECK_ERR(fedc_shakespeare_preprocess(c, NULL, &out), FEDC_ETYPE,
              "Shakespeare needs feature \"x\" to be strings, it is i32[1]");
    fedc_client_data_destroy(c);
}

/* ---------------------------------------------------------- Stack Overflow -- */

static const char *tmp_file(const char *name, const char *contents) {
    const char *path = fedc_test_tmp(name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(contents, f);
        fclose(f);
    }
    return path;
}

/* FedJAX's stackoverflow_test.py: vocab [three, four, five]. */
static void test_stackoverflow_fedjax_case(void) {
    fedc_stackoverflow_vocab *v = NULL;
    CHECK_OK(fedc_stackoverflow_vocab_create(&v, (const char *[]){"three", "four", "five"}, 3));
    if (!v) return;
    CHECK_EQ_INT(fedc_stackoverflow_vocab_size(v), 3);
    fedc_client_data *c = new_client("u1", 2), *out = NULL;
    CHECK_OK(fedc_client_add_strings(c, "tokens", (const char *[]){"three four five", "five three four five six"},
                                     NULL));
    CHECK_OK(fedc_client_add_strings(c, "type", (const char *[]){"answer", "question"}, NULL));
    CHECK_OK(fedc_client_add_strings(c, "title", (const char *[]){"t", "u"}, NULL));
    static const struct {
        int64_t length;
        int32_t x[14], y[14];
    } cases[] = {
        {2, {1, 3, 1, 5}, {3, 4, 5, 3}},
        {5, {1, 3, 4, 5, 0, 1, 5, 3, 4, 5}, {3, 4, 5, 2, 0, 5, 3, 4, 5, 6}},
        {7, {1, 3, 4, 5, 0, 0, 0, 1, 5, 3, 4, 5, 6, 0}, {3, 4, 5, 2, 0, 0, 0, 5, 3, 4, 5, 6, 2, 0}},
    };
    for (int k = 0; k < 3; k++) {
        fedc_stackoverflow_options o = {.vocab = v, .max_length = cases[k].length};
        CHECK_OK(fedc_stackoverflow_preprocess(c, &o, &out));
        check_ints(array(out, "x", TY(FEDC_I32, 2, cases[k].length)), cases[k].x, 2 * cases[k].length, "x");
        check_ints(array(out, "y", TY(FEDC_I32, 2, cases[k].length)), cases[k].y, 2 * cases[k].length, "y");
        check_ints(array(out, "domain_id", TY(FEDC_I32, 2)), (int32_t[]){1, 0}, 2, "domain_id");
        CHECK(out && !fedc_client_feature(out, "title") && !fedc_client_feature(out, "tokens"));
        fedc_client_data_destroy(out);
    }
    fedc_client_data_destroy(c);
    fedc_stackoverflow_vocab_destroy(v);
}

/* Split on each ' ' as Python's str.split(' '): empty words are words (OOV). */
static void test_stackoverflow_split(void) {
    fedc_stackoverflow_vocab *v = NULL;
    CHECK_OK(fedc_stackoverflow_vocab_create(&v, (const char *[]){"a", "b"}, 2));
    if (!v) return;
    int32_t x[6], y[6];
    fedc_stackoverflow_tokenize(v, "a  b", 4, 6, x, y); /* a, "", b */
    check_ints(x, (int32_t[]){1, 3, 5, 4, 0, 0}, 6, "x");
    check_ints(y, (int32_t[]){3, 5, 4, 2, 0, 0}, 6, "y");
    fedc_stackoverflow_tokenize(v, "", 0, 6, x, y); /* one empty word */
    check_ints(x, (int32_t[]){1, 5, 0, 0, 0, 0}, 6, "x");
    check_ints(y, (int32_t[]){5, 2, 0, 0, 0, 0}, 6, "y");
    fedc_stackoverflow_tokenize(v, "b a", 3, 1, x, y);
    CHECK(x[0] == 1 && y[0] == 4);
    CHECK_EQ_INT(fedc_stackoverflow_word_id(v, "ab", 1), 3); /* the length counts, not the NUL */
    CHECK_EQ_INT(fedc_stackoverflow_word_id(v, "ab", 2), 5);

    /* 20 words are cut to max_length 20: x is BOS + 19 words, y 20 words, no EOS. */
    char text[64];
    for (int k = 0; k < 20; k++) memcpy(text + 2 * k, k % 2 ? "b " : "a ", 2);
    fedc_client_data *c = new_client("long", 1), *out = NULL;
    CHECK_OK(fedc_client_add_strings(c, "tokens", (const char *[]){text}, (size_t[]){39}));
    CHECK_OK(fedc_stackoverflow_preprocess(c, &(fedc_stackoverflow_options){.vocab = v}, &out));
    const int32_t *ox = array(out, "x", TY(FEDC_I32, 1, 20)), *oy = array(out, "y", TY(FEDC_I32, 1, 20));
    for (int k = 0; ox && oy && k < 20; k++) {
        CHECK_EQ_INT(ox[k], k == 0 ? 1 : (k - 1) % 2 ? 4 : 3);
        CHECK_EQ_INT(oy[k], k % 2 ? 4 : 3);
    }
    CHECK(out && !fedc_client_feature(out, "domain_id")); /* no "type" */
    fedc_client_data_destroy(out);
    CHECK_ERR(fedc_stackoverflow_preprocess(c, &(fedc_stackoverflow_options){.vocab = NULL}, &out), FEDC_EINVAL,
              "needs a vocabulary");
    fedc_client_data_destroy(c);
    fedc_stackoverflow_vocab_destroy(v);

    /* word ranks (synthetic data): rank r is id r + 3, ranks outside a vocabulary of 5
     * are OOV (8); BOS first, EOS after the words, PAD after that */
    c = new_client("ranks", 2);
    CHECK_OK(fedc_client_add_array(c, "tokens", TY(FEDC_I32, 2, 3), (int32_t[]){0, 4, 5, 2, -1, 1}));
    CHECK_OK(fedc_stackoverflow_preprocess(c, &(fedc_stackoverflow_options){.vocab_size = 5, .max_length = 6}, &out));
    check_ints(array(out, "x", TY(FEDC_I32, 2, 6)), (int32_t[]){1, 3, 7, 8, 2, 0, 1, 5, 8, 4, 2, 0}, 12, "x");
    check_ints(array(out, "y", TY(FEDC_I32, 2, 6)), (int32_t[]){3, 7, 8, 2, 0, 0, 5, 8, 4, 2, 0, 0}, 12, "y");
    fedc_client_data_destroy(out);
    CHECK_OK(fedc_stackoverflow_preprocess(c, &(fedc_stackoverflow_options){.max_length = 2}, &out));
    check_ints(array(out, "x", TY(FEDC_I32, 2, 2)), (int32_t[]){1, 3, 1, 5}, 4, "x cut");
    check_ints(array(out, "y", TY(FEDC_I32, 2, 2)), (int32_t[]){3, 7, 5, 10003}, 4, "y cut");
    fedc_client_data_destroy(out);
    fedc_client_data_destroy(c);
}

static void test_stackoverflow_vocab_file(void) {
    fedc_stackoverflow_vocab *v = NULL;
    const char *path = tmp_file("words", "the 100\nto\t90\r\na 80\nof 70\n");
    CHECK_OK(fedc_stackoverflow_vocab_read(path, 3, &v));
    if (v) {
        CHECK_EQ_INT(fedc_stackoverflow_vocab_size(v), 3);
        CHECK_EQ_INT(fedc_stackoverflow_word_id(v, "the", 3), 3);
        CHECK_EQ_INT(fedc_stackoverflow_word_id(v, "to", 2), 4);
        CHECK_EQ_INT(fedc_stackoverflow_word_id(v, "a", 1), 5);
        CHECK_EQ_INT(fedc_stackoverflow_word_id(v, "of", 2), 6); /* past the size: OOV */
    }
    fedc_stackoverflow_vocab_destroy(v);
    CHECK_OK(fedc_stackoverflow_vocab_read(path, 0, &v)); /* 10000 asked, 4 there */
    CHECK_EQ_INT(v ? fedc_stackoverflow_vocab_size(v) : 0, 4);
    fedc_stackoverflow_vocab_destroy(v);

    /* Enough words to grow the table several times. */
    char *big = malloc(5000 * 8);
    size_t used = 0;
    for (int k = 0; k < 5000; k++) used += (size_t)sprintf(big + used, "w%d\n", k);
    CHECK_OK(fedc_stackoverflow_vocab_read(tmp_file("big", big), 0, &v));
    free(big);
    CHECK_EQ_INT(v ? fedc_stackoverflow_vocab_size(v) : 0, 5000);
    if (v) {
        CHECK_EQ_INT(fedc_stackoverflow_word_id(v, "w4321", 5), 4321 + 3);
        CHECK_EQ_INT(fedc_stackoverflow_word_id(v, "w5000", 5), 5003);
    }
    fedc_stackoverflow_vocab_destroy(v);

    CHECK_ERR(fedc_stackoverflow_vocab_read(tmp_file("empty", ""), 0, &v), FEDC_EPARSE, "empty: the vocabulary "
              "file has no words");
    CHECK_ERR(fedc_stackoverflow_vocab_read(tmp_file("blank", "a\n\nb\n"), 0, &v), FEDC_EPARSE,
              "blank: line 2 has no word");
    CHECK_ERR(fedc_stackoverflow_vocab_read(tmp_file("dup", "a 3\nb 2\na 1\n"), 0, &v), FEDC_EPARSE,
              "dup: line 3: word \"a\" repeats line 1");
    CHECK_ERR(fedc_stackoverflow_vocab_read("/nonexistent/words", 0, &v), FEDC_EIO,
              "/nonexistent/words: cannot open the vocabulary file");
    CHECK(v == NULL);
    CHECK_ERR(fedc_stackoverflow_vocab_create(&v, (const char *[]){"x", "x"}, 2), FEDC_EINVAL, "repeats");
}

/* --------------------------------------------------------------- CIFAR-100 -- */

/* Images whose pixel (e, r, c, ch) is a function of its place, so a crop can be
 * traced back: values 1..254, never the padding's 0. */
static uint8_t pixel_of(int e, int r, int c, int ch) { return (uint8_t)(1 + (e * 7 + r * 32 + c * 3 + ch) % 253); }

static fedc_client_data *cifar_client(const char *id, int n) {
    uint8_t *img = malloc((size_t)n * 32 * 32 * 3);
    int32_t *labels = malloc((size_t)n * sizeof *labels);
    for (int e = 0; e < n; e++) {
        labels[e] = e % 100;
        for (int r = 0; r < 32; r++)
            for (int c = 0; c < 32; c++)
                for (int ch = 0; ch < 3; ch++) img[((e * 32 + r) * 32 + c) * 3 + ch] = pixel_of(e, r, c, ch);
    }
    fedc_client_data *cl = new_client(id, n);
    CHECK_OK(fedc_client_add_array(cl, "image", TY(FEDC_U8, n, 32, 32, 3), img));
    CHECK_OK(fedc_client_add_array(cl, "label", TY(FEDC_I32, n), labels));
    CHECK_OK(fedc_client_add_array(cl, "coarse_label", TY(FEDC_I32, n), labels));
    free(img);
    free(labels);
    return cl;
}

/* FedJAX's normalisation in f32: (v / 255 - mean) * (1 / std). The expected
 * values were worked out in f32 arithmetic (each step rounded); 0 gives FedJAX's
 * test's padding values [-2.4290657, -2.4182549, -2.221393]. */
static float fedjax_norm(int v, int ch) {
    static const float table[4][3] = {
        {-0x1.36eba0p+1f, -0x1.358960p+1f, -0x1.1c569cp+1f}, /* 0 */
        {-0x1.86044cp-8f, 0x1.48814ap-5f, 0x1.bd38c2p-3f},   /* 125 */
        {0x1.00874ep+0f, 0x1.101222p+0f, 0x1.3b5faep+0f},    /* 177 */
        {0x1.41cda4p+1f, 0x1.4c63a0p+1f, 0x1.607a44p+1f},    /* 255 */
    };
    int row = v == 0 ? 0 : v == 125 ? 1 : v == 177 ? 2 : 3;
    return table[row][ch];
}

static void test_cifar_normalize(void) {
    uint8_t img[32 * 32 * 3] = {0};
    const int values[4] = {0, 125, 177, 255};
    for (int k = 0; k < 4; k++)
        for (int ch = 0; ch < 3; ch++) img[k * 3 + ch] = (uint8_t)values[k];
    fedc_client_data *c = new_client("c", 1), *out = NULL;
    CHECK_OK(fedc_client_add_array(c, "x", TY(FEDC_U8, 1, 32, 32, 3), img));
    CHECK_OK(fedc_client_add_array(c, "y", TY(FEDC_I32, 1), (int32_t[]){42}));
    CHECK_OK(fedc_cifar100_preprocess(c, &(fedc_cifar100_options){0}, &out));
    const float *x = array(out, "x", TY(FEDC_F32, 1, 32, 32, 3));
    for (int k = 0; x && k < 4; k++)
        for (int ch = 0; ch < 3; ch++)
            CHECK_MSG(x[k * 3 + ch] == fedjax_norm(values[k], ch), "pixel %d channel %d: %a, expected %a", values[k],
                      ch, x[k * 3 + ch], fedjax_norm(values[k], ch));
    CHECK(x && x[3 * 100] == fedjax_norm(0, 0));
    check_ints(array(out, "y", TY(FEDC_I32, 1)), (int32_t[]){42}, 1, "y");
    fedc_client_data_destroy(out);
    fedc_client_data_destroy(c);
}

/* Recovers the crop of output image e: the offsets (i, j) in the 40x40 padded
 * image and the flip, from where its pixels came from; false if no crop fits. */
static bool find_crop(const float *x, int e, int pad, int range, int h, int w, int *ci, int *cj, bool *flip) {
    for (int i = 0; i < range; i++)
        for (int j = 0; j < range; j++)
            for (int f = 0; f < 2; f++) {
                bool ok = true;
                for (int r = 0; ok && r < h; r++)
                    for (int c = 0; ok && c < w; c++) {
                        int sr = r + i - pad, sc = (f ? w - 1 - c : c) + j - pad;
                        int v = sr >= 0 && sr < 32 && sc >= 0 && sc < 32 ? pixel_of(e, sr, sc, 1) : 0;
                        ok = x[((e * h + r) * w + c) * 3 + 1] == v;
                    }
                if (ok) {
                    *ci = i, *cj = j, *flip = f;
                    return true;
                }
            }
    return false;
}

/* Undoes FedJAX's normalisation of channel 1, to find where pixels came from. */
static void unnormalize(float *x, int64_t count) {
    for (int64_t k = 1; k < count; k += 3) {
        int best = 0;
        for (int v = 0; v < 256; v++) {
            float f = ((float)v / 255.0f - fedc_cifar100_mean[1]) * (1.0f / fedc_cifar100_std[1]);
            if (f == x[k]) best = v;
        }
        x[k] = (float)best;
    }
}

static void test_cifar_train_crops(void) {
    enum { N = 40 };
    fedc_client_data *c = cifar_client("client-1", N), *a = NULL, *b = NULL, *d = NULL;
    fedc_cifar100_options o = {.train = true, .seed = 7, .round = 3, .client = 11};
    CHECK_OK(fedc_cifar100_preprocess(c, &o, &a));
    CHECK_OK(fedc_cifar100_preprocess(c, &o, &b));
    o.seed = 8;
    CHECK_OK(fedc_cifar100_preprocess(c, &o, &d));
    const float *xa = array(a, "x", TY(FEDC_F32, N, 32, 32, 3)), *xb = array(b, "x", TY(FEDC_F32, N, 32, 32, 3)),
                *xd = array(d, "x", TY(FEDC_F32, N, 32, 32, 3));
    size_t bytes = (size_t)N * 32 * 32 * 3 * sizeof(float);
    CHECK(xa && xb && memcmp(xa, xb, bytes) == 0); /* the same key, the same crops */
    CHECK(xa && xd && memcmp(xa, xd, bytes) != 0); /* another seed, others */
    check_ints(array(a, "y", TY(FEDC_I32, N)), (int32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10, "y");
    CHECK(a && !fedc_client_feature(a, "coarse_label"));
    /* Every crop is a 32x32 window at offsets in [0, 8) of the zero-padded image,
     * flipped or not; over 40 draws every offset's half and both flips occur. */
    float *copy = xa ? malloc(bytes) : NULL;
    int seen_flip[2] = {0}, seen_low = 0, seen_high = 0;
    if (copy) {
        memcpy(copy, xa, bytes);
        unnormalize(copy, (int64_t)N * 32 * 32 * 3);
        for (int e = 0; e < N; e++) {
            int i, j;
            bool flip;
            CHECK_MSG(find_crop(copy, e, 4, 8, 32, 32, &i, &j, &flip), "example %d is no crop of its image", e);
            seen_flip[flip]++, seen_low += i < 4, seen_high += j >= 4;
        }
    }
    CHECK(seen_flip[0] > 0 && seen_flip[1] > 0 && seen_low > 0 && seen_high > 0);
    free(copy);
    fedc_client_data_destroy(a), fedc_client_data_destroy(b), fedc_client_data_destroy(d);
    fedc_client_data_destroy(c);
}

/* FedJAX draws once per batch: examples_per_draw = 4 gives runs of 4 equal crops;
 * client_from_id keys the stream by the id. */
static void test_cifar_draws(void) {
    enum { N = 12 };
    fedc_client_data *c = cifar_client("u", N), *a = NULL;
    fedc_cifar100_options o = {.train = true, .examples_per_draw = 4, .seed = 1};
    CHECK_OK(fedc_cifar100_preprocess(c, &o, &a));
    float *x = a ? a->features[0].data : NULL;
    int crops[N][3];
    if (x) unnormalize(x, (int64_t)N * 32 * 32 * 3);
    for (int e = 0; x && e < N; e++) {
        bool flip;
        CHECK(find_crop(x, e, 4, 8, 32, 32, &crops[e][0], &crops[e][1], &flip));
        crops[e][2] = flip;
        if (e % 4) CHECK_MSG(memcmp(crops[e], crops[e - 1], sizeof crops[e]) == 0, "example %d", e);
    }
    fedc_client_data_destroy(a);

    fedc_client_data *b = NULL;
    o = (fedc_cifar100_options){.train = true, .seed = 1, .client = fedc_client_key("u")};
    CHECK_OK(fedc_cifar100_preprocess(c, &o, &a));
    o.client = 0, o.client_from_id = true;
    fedc_client_data *h = cifar_client("u", N);
    CHECK_OK(fedc_cifar100_hook(&o, &h));
    b = h;
    CHECK(a && b && memcmp(a->features[0].data, b->features[0].data, (size_t)N * 32 * 32 * 3 * 4) == 0);
    CHECK_EQ_INT(fedc_client_key(""), 2166136261u);
    CHECK_EQ_INT(fedc_client_key("a"), 0xE40C292Cu);
    fedc_client_data_destroy(a), fedc_client_data_destroy(b);
    fedc_client_data_destroy(c);
}

/* The TFF style: the centre crop (offset (32-24)/2 = 4) and per-image
 * standardization; in training, 24x24 crops at offsets in [0, 8]. */
static void test_cifar_tff(void) {
    fedc_client_data *c = cifar_client("t", 3), *out = NULL;
    fedc_cifar100_options o = {.style = FEDC_CIFAR100_TFF};
    CHECK_OK(fedc_cifar100_preprocess(c, &o, &out));
    const float *x = array(out, "x", TY(FEDC_F32, 3, 24, 24, 3));
    for (int e = 0; x && e < 3; e++) {
        double sum = 0, sq = 0, raw_sum = 0, raw_sq = 0;
        for (int k = 0; k < 24 * 24 * 3; k++) {
            int r = k / 72, col = k / 3 % 24, ch = k % 3;
            double v = pixel_of(e, r + 4, col + 4, ch);
            raw_sum += v, raw_sq += v * v;
            sum += x[e * 1728 + k], sq += x[e * 1728 + k] * x[e * 1728 + k];
        }
        double mean = raw_sum / 1728, sd = sqrt(raw_sq / 1728 - mean * mean);
        double bound = sd > sqrt(1728.0) ? sd : sqrt(1728.0);
        CHECK_NEAR(x[e * 1728 + 5], (pixel_of(e, 4, 5, 2) - mean) / bound, 1e-5); /* row 0, col 1, ch 2 */
        CHECK_NEAR(sum / 1728, 0, 1e-5);
        CHECK_NEAR(sqrt(sq / 1728), sd / bound, 1e-4);
    }
    fedc_client_data_destroy(out);

    o = (fedc_cifar100_options){.style = FEDC_CIFAR100_TFF, .train = true, .crop_height = 30, .crop_width = 30};
    CHECK_OK(fedc_cifar100_preprocess(c, &o, &out));
    array(out, "x", TY(FEDC_F32, 3, 30, 30, 3));
    fedc_client_data_destroy(out);
    o.crop_height = 33;
    CHECK_ERR(fedc_cifar100_preprocess(c, &o, &out), FEDC_EINVAL, "the crop is 33x30; its sides must be from 1 to 32");
    CHECK_ERR(fedc_cifar100_preprocess(c, NULL, &out), FEDC_EINVAL, "needs its options");
    fedc_client_data_destroy(c);

    c = new_client("bad", 1);
    uint8_t img[32 * 32 * 3] = {0};
    CHECK_OK(fedc_client_add_array(c, "image", TY(FEDC_U8, 1, 32, 32, 3), img));
    CHECK_OK(fedc_client_add_array(c, "label", TY(FEDC_I32, 1), (int32_t[]){100}));
    CHECK_ERR(fedc_cifar100_preprocess(c, &(fedc_cifar100_options){0}, &out), FEDC_ERANGE,
              "client \"bad\": CIFAR-100 label 100 of example 0");
    fedc_client_data_destroy(c);
}

/* ----------------------------------------------------------- heart disease -- */

static void test_heart_disease(void) {
    float x[2 * 13], mean[13], std[13];
    for (int k = 0; k < 26; k++) x[k] = (float)k;
    x[13 + 4] = 999.0f; /* marked missing below */
    fedc_client_data *c = new_client("cleveland", 2), *out = NULL;
    CHECK_OK(fedc_client_add_array(c, "x", TY(FEDC_F32, 2, 13), x));
    CHECK_OK(fedc_client_add_array(c, "y", TY(FEDC_I32, 2), (int32_t[]){0, 3}));
    uint8_t missing[26] = {0};
    missing[13 + 4] = 1;
    CHECK_OK(fedc_client_add_array(c, "missing", TY(FEDC_U8, 2, 13), missing));
    for (int j = 0; j < 13; j++) mean[j] = 1.0f, std[j] = 2.0f;
    fedc_heart_disease_options o = {mean, std, false};
    CHECK_OK(fedc_heart_disease_preprocess(c, &o, &out));
    const float *z = array(out, "x", TY(FEDC_F32, 2, 13));
    CHECK(z && z[0] == -0.5f && z[3] == 1.0f && z[17] == 499.0f);
    check_ints(array(out, "y", TY(FEDC_I32, 2)), (int32_t[]){0, 1}, 2, "y");
    fedc_client_data_destroy(out);
    o.impute_missing = true;
    CHECK_OK(fedc_heart_disease_preprocess(c, &o, &out));
    z = array(out, "x", TY(FEDC_F32, 2, 13));
    CHECK(z && z[17] == 0.0f && z[16] == 7.5f);
    fedc_client_data_destroy(out);

    /* Statistics leave the missing value out: column 4 is {4} alone. */
    const fedc_client_data *cs[] = {c};
    CHECK_OK(fedc_heart_disease_stats(cs, 1, mean, std));
    CHECK(mean[0] == 6.5f && std[0] == 6.5f && mean[4] == 4.0f && std[4] == 1.0f);
    std[2] = 0;
    CHECK_ERR(fedc_heart_disease_preprocess(c, &o, &out), FEDC_EINVAL, "feature 2 has mean");
    fedc_client_data_destroy(c);

    c = new_client("va", 1);
    CHECK_OK(fedc_client_add_array(c, "x", TY(FEDC_F32, 1, 13), x));
    CHECK_OK(fedc_client_add_array(c, "y", TY(FEDC_I32, 1), (int32_t[]){5}));
    std[2] = 1;
    CHECK_ERR(fedc_heart_disease_hook(&o, &c), FEDC_ERANGE, "client \"va\": heart disease label 5 of example 0");
    CHECK(c && fedc_client_feature(c, "y")); /* a failing hook leaves the client alone */
    fedc_client_data_destroy(c);
    c = new_client("va", 1);
    CHECK_OK(fedc_client_add_array(c, "x", TY(FEDC_F32, 1, 12), x));
    CHECK_ERR(fedc_heart_disease_hook(&o, &c), FEDC_ESHAPE, "needs \"x\" of shape [n,13], not f32[1,12]");
    fedc_client_data_destroy(c);
}

/* ------------------------------------------------------ out of memory -- */

/* Every allocation of every preprocessing, failed in turn: the call says
 * FEDC_ENOMEM, leaves *out NULL and leaks nothing (LeakSanitizer in the ASan
 * build), until it needs fewer allocations than k and succeeds. */
typedef fedc_status (*task_fn)(const fedc_client_data *in, const void *o, fedc_client_data **out);

/* The preprocessings behind one signature (calling them through a cast pointer
 * would be undefined). */
static fedc_status emnist_fn(const fedc_client_data *in, const void *o, fedc_client_data **out) {
    return fedc_emnist_preprocess(in, o, out);
}
static fedc_status shakespeare_fn(const fedc_client_data *in, const void *o, fedc_client_data **out) {
    return fedc_shakespeare_preprocess(in, o, out);
}
static fedc_status stackoverflow_fn(const fedc_client_data *in, const void *o, fedc_client_data **out) {
    return fedc_stackoverflow_preprocess(in, o, out);
}
static fedc_status cifar_fn(const fedc_client_data *in, const void *o, fedc_client_data **out) {
    return fedc_cifar100_preprocess(in, o, out);
}
static fedc_status heart_fn(const fedc_client_data *in, const void *o, fedc_client_data **out) {
    return fedc_heart_disease_preprocess(in, o, out);
}

static void fail_each_allocation(const char *what, task_fn fn, const fedc_client_data *in, const void *o) {
    for (uint64_t k = 1; k < 1000; k++) {
        fedc_client_data *out = NULL;
        fedc__alloc_fail_after(0);
        fedc__alloc_fail_after(k);
        fedc_status st = fn(in, o, &out);
        uint64_t made = fedc__alloc_fail_after(0);
        fedc_client_data_destroy(out);
        if (!st) return;
        CHECK_MSG(st == FEDC_ENOMEM && out == NULL, "%s, allocation %llu: %s (%s)", what, (unsigned long long)k,
                  fedc_status_str(st), fedc_errmsg());
        if (made < k) {
            CHECK_MSG(false, "%s failed with %llu allocations, fewer than %llu", what, (unsigned long long)made,
                      (unsigned long long)k);
            return;
        }
    }
}

static void test_alloc_failures(void) {
    float x[784] = {0};
    fedc_client_data *e = new_client("f2100_00", 1);
    CHECK_OK(fedc_client_add_array(e, "x", TY(FEDC_F32, 1, 784), x));
    CHECK_OK(fedc_client_add_array(e, "y", TY(FEDC_I32, 1), (int32_t[]){1}));
    fail_each_allocation("emnist", emnist_fn, e, &(fedc_emnist_options){.domain_id = true});
    fedc_client_data_destroy(e);

    fedc_client_data *s = new_client("r", 2);
    CHECK_OK(fedc_client_add_strings(s, "snippets", (const char *[]){"hello", "hi there"}, NULL));
    fail_each_allocation("shakespeare", shakespeare_fn, s, NULL);
    fedc_client_data_destroy(s);

    fedc_stackoverflow_vocab *v = NULL;
    CHECK_OK(fedc_stackoverflow_vocab_create(&v, (const char *[]){"a", "b"}, 2));
    fedc_client_data *t = new_client("u", 1);
    CHECK_OK(fedc_client_add_strings(t, "tokens", (const char *[]){"a b c"}, NULL));
    CHECK_OK(fedc_client_add_strings(t, "type", (const char *[]){"answer"}, NULL));
    fail_each_allocation("stackoverflow", stackoverflow_fn, t,
                         &(fedc_stackoverflow_options){.vocab = v, .max_length = 4});
    fedc_client_data_destroy(t);
    fedc_stackoverflow_vocab_destroy(v);
    for (uint64_t k = 1; k < 100; k++) { /* the vocabulary itself */
        fedc__alloc_fail_after(0);
        fedc__alloc_fail_after(k);
        fedc_status st = fedc_stackoverflow_vocab_create(&v, (const char *[]){"a", "b"}, 2);
        fedc__alloc_fail_after(0);
        fedc_stackoverflow_vocab_destroy(v);
        if (!st) break;
        CHECK(st == FEDC_ENOMEM && v == NULL);
    }

    fedc_client_data *c = cifar_client("c", 2);
    fail_each_allocation("cifar", cifar_fn, c, &(fedc_cifar100_options){.train = true});
    fedc_client_data_destroy(c);

    float hx[13] = {0}, mean[13], std[13];
    for (int j = 0; j < 13; j++) mean[j] = 0, std[j] = 1;
    fedc_client_data *h = new_client("h", 1);
    CHECK_OK(fedc_client_add_array(h, "x", TY(FEDC_F32, 1, 13), hx));
    CHECK_OK(fedc_client_add_array(h, "y", TY(FEDC_I32, 1), (int32_t[]){2}));
    fail_each_allocation("heart", heart_fn, h,
                         &(fedc_heart_disease_options){mean, std, false});
    fedc_client_data_destroy(h);
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("tasks")) return 1;
    static const fedc_test tests[] = {
        {"emnist_leaf", test_emnist_leaf},
        {"emnist_tff_and_domain", test_emnist_tff_and_domain},
        {"emnist_errors", test_emnist_errors},
        {"emnist_hook", test_emnist_hook},
        {"shakespeare_vocab", test_shakespeare_vocab},
        {"shakespeare_fedjax_case", test_shakespeare_fedjax_case},
        {"shakespeare_chunks", test_shakespeare_chunks},
        {"shakespeare_leaf", test_shakespeare_leaf},
        {"stackoverflow_fedjax_case", test_stackoverflow_fedjax_case},
        {"stackoverflow_split", test_stackoverflow_split},
        {"stackoverflow_vocab_file", test_stackoverflow_vocab_file},
        {"cifar_normalize", test_cifar_normalize},
        {"cifar_train_crops", test_cifar_train_crops},
        {"cifar_draws", test_cifar_draws},
        {"cifar_tff", test_cifar_tff},
        {"heart_disease", test_heart_disease},
        {"alloc_failures", test_alloc_failures},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
