/*
 * Tests of the task preprocessings (fedc/tasks.h) as hooks on the data sets'
 * files: FEMNIST and Shakespeare from LEAF, Shakespeare's raw text, heart disease
 * from CSV; the small ones of data_fixtures.h, and the real ones of
 * ../shared/data where they are present.
 */
#include "core/internal.h"
#include "data_fixtures.h"
#include "harness.h"
#include "tasks_check.h"

#include <string.h>

#include "fedc/tasks.h"

/* ------------------------------------------------------------- real data -- */

/* Each check runs on the small set of data_fixtures.h, with the numbers it wrote,
 * and on the real set where ../shared/data has it, with the real numbers. */

static void check_femnist(const char *path, int64_t examples) {
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc_dataset_open(&ds, path, FEDC_FORMAT_AUTO));
    if (!ds) return;
    fedc_dataset_set_preprocess(ds, fedc_emnist_hook, &(fedc_emnist_options){.domain_id = true});
    int64_t total = 0, dark = 0, count = 0;
    for (int64_t i = 0; i < fedc_dataset_num_clients(ds); i++) {
        fedc_client_data *c = NULL;
        CHECK_OK(fedc_dataset_client(ds, i, &c));
        if (!c) break;
        const float *x = array(c, "x", TY(FEDC_F32, c->num_examples, 28, 28, 1));
        array(c, "y", TY(FEDC_I32, c->num_examples));
        array(c, "domain_id", TY(FEDC_I32, c->num_examples));
        for (int64_t k = 0; x && k < c->num_examples * 784; k++) {
            CHECK(x[k] >= 0.0f && x[k] <= 1.0f);
            dark += x[k] < 0.5f, count++;
        }
        total += c->num_examples;
        fedc_client_data_destroy(c);
    }
    CHECK_EQ_INT(total, examples);
    /* LEAF stores white backgrounds as 1; after 1 - x most pixels are dark. */
    CHECK_MSG(dark > count / 2, "%lld of %lld pixels below 0.5", (long long)dark, (long long)count);
    fedc_dataset_destroy(ds);
}

static void test_real_femnist(void) {
    const char *set = "femnist-leaf/train";
    check_femnist(fedc_test_fixture(set), fedc_test_fixture_facts_of(set).examples);
    const char *real = fedc_test_real_data(set);
    if (real) check_femnist(real, 7935);
}

/* LEAF's test file counts the 79 windows its split dropped at each role's
 * train/test seam in "num_samples"; the reader accepts exactly that, and the
 * windows become next-character sequences. */
static void check_shakespeare_test_split(const char *path, int64_t examples) {
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc_dataset_open(&ds, path, FEDC_FORMAT_AUTO));
    if (!ds) return;
    fedc_shakespeare_options o = {.leaf_sequences = true};
    fedc_dataset_set_preprocess(ds, fedc_shakespeare_hook, &o);
    int64_t total = 0;
    for (int64_t i = 0; i < fedc_dataset_num_clients(ds); i++) {
        fedc_client_data *c = NULL;
        CHECK_OK(fedc_dataset_client(ds, i, &c));
        if (!c) break;
        const int32_t *x = array(c, "x", TY(FEDC_I32, c->num_examples, 80));
        const int32_t *y = array(c, "y", TY(FEDC_I32, c->num_examples, 80));
        for (int64_t k = 0; x && y && k < 79; k++) CHECK_EQ_INT(y[k], x[k + 1]);
        total += c->num_examples;
        fedc_client_data_destroy(c);
    }
    CHECK_EQ_INT(total, examples);
    fedc_dataset_destroy(ds);
}

static void test_real_shakespeare_test_split(void) {
    const char *set = "shakespeare-leaf/test";
    fedc_test_fixture_facts f = fedc_test_fixture_facts_of(set);
    CHECK_EQ_INT(f.counted, f.examples + f.clients * 79);
    check_shakespeare_test_split(fedc_test_fixture(set), f.examples);
    const char *real = fedc_test_real_data(set);
    if (real) check_shakespeare_test_split(real, 3881); /* "num_samples" adds up to 4,671 = 3,881 + 10 * 79 */
}

static void check_shakespeare(const char *path, int64_t examples) {
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc_dataset_open(&ds, path, FEDC_FORMAT_AUTO));
    if (!ds) return;
    fedc_dataset_set_preprocess(ds, fedc_shakespeare_hook, NULL);
    int64_t total = 0, oov = 0;
    for (int64_t i = 0; i < fedc_dataset_num_clients(ds); i++) {
        fedc_client_data *c = NULL;
        CHECK_OK(fedc_dataset_client(ds, i, &c));
        if (!c) break;
        const int32_t *x = array(c, "x", TY(FEDC_I32, c->num_examples, 80));
        const int32_t *y = array(c, "y", TY(FEDC_I32, c->num_examples));
        for (int64_t k = 0; x && k < c->num_examples * 80; k++) {
            CHECK(x[k] >= 3 && x[k] <= FEDC_SHAKESPEARE_OOV);
            oov += x[k] == FEDC_SHAKESPEARE_OOV;
        }
        for (int64_t k = 0; y && k < c->num_examples; k++) CHECK(y[k] >= 3 && y[k] <= FEDC_SHAKESPEARE_OOV);
        /* LEAF's x are a sliding window: row k+1 is row k moved by one, with y[k] last. */
        for (int64_t k = 0; x && y && k + 1 < c->num_examples && k < 50; k++)
            if (memcmp(x + k * 80 + 1, x + (k + 1) * 80, 79 * 4) == 0) CHECK_EQ_INT(x[(k + 1) * 80 + 79], y[k]);
        total += c->num_examples;
        fedc_client_data_destroy(c);
    }
    CHECK_EQ_INT(total, examples);
    CHECK_MSG(oov * 1000 < total * 80, "%lld OOV ids", (long long)oov); /* the vocabulary covers the text */
    fedc_dataset_destroy(ds);
}

static void test_real_shakespeare(void) {
    const char *set = "shakespeare-leaf/train";
    check_shakespeare(fedc_test_fixture(set), fedc_test_fixture_facts_of(set).examples);
    const char *real = fedc_test_real_data(set);
    if (real) check_shakespeare(real, 41990);
}

/* The raw text of one role through the text reader ("text" lines) and FedJAX's
 * snippets preprocessing: rows = ceil((sum(len + 2) - 1) / 80). */
static void check_shakespeare_raw(const char *path) {
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc_dataset_open(&ds, path, FEDC_FORMAT_TEXT));
    if (!ds) return;
    int64_t step = fedc_dataset_num_clients(ds) > 40 ? 13 : 1;
    for (int64_t i = 0; i < fedc_dataset_num_clients(ds) && i < 40; i += step) {
        fedc_client_data *raw = NULL, *out = NULL;
        CHECK_OK(fedc_dataset_client(ds, i, &raw));
        const fedc_feature *text = raw ? fedc_client_feature(raw, "text") : NULL;
        CHECK(text != NULL);
        if (!text) {
            fedc_client_data_destroy(raw);
            break;
        }
        int64_t joined = text->offsets[raw->num_examples] - text->offsets[0] + 2 * raw->num_examples;
        CHECK_OK(fedc_shakespeare_preprocess(raw, NULL, &out));
        int64_t rows = joined ? (joined - 1 + 79) / 80 : 0;
        const int32_t *x = array(out, "x", TY(FEDC_I32, rows, 80));
        if (x && rows) CHECK_EQ_INT(x[0], FEDC_SHAKESPEARE_BOS);
        fedc_client_data_destroy(out);
        fedc_client_data_destroy(raw);
    }
    fedc_dataset_destroy(ds);
}

static void test_real_shakespeare_raw(void) {
    const char *set = "shakespeare-leaf/raw_data/by_play_and_character";
    check_shakespeare_raw(fedc_test_fixture(set));
    const char *real = fedc_test_real_data(set);
    if (real) check_shakespeare_raw(real);
}

static void check_heart_disease(const char *path, double mean_age, int64_t examples, int64_t sick_want) {
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc_dataset_open(&ds, path, FEDC_FORMAT_CSV));
    if (!ds) return;
    int64_t n = fedc_dataset_num_clients(ds), sick = 0, rows = 0;
    CHECK_EQ_INT(n, 4);
    fedc_client_data *cs[4] = {0};
    for (int64_t i = 0; i < n && i < 4; i++) CHECK_OK(fedc_dataset_client(ds, i, &cs[i]));
    float mean[13], std[13];
    CHECK_OK(fedc_heart_disease_stats((const fedc_client_data *const *)cs, 4, mean, std));
    CHECK_NEAR(mean[0], mean_age, 0.001);
    fedc_heart_disease_options o = {mean, std, true};
    for (int i = 0; i < 4 && cs[i]; i++) {
        CHECK_OK(fedc_heart_disease_hook(&o, &cs[i]));
        const int32_t *y = array(cs[i], "y", TY(FEDC_I32, cs[i]->num_examples));
        for (int64_t k = 0; y && k < cs[i]->num_examples; k++) sick += y[k];
        rows += cs[i]->num_examples;
        fedc_client_data_destroy(cs[i]);
    }
    CHECK_EQ_INT(rows, examples);
    CHECK_EQ_INT(sick, sick_want);
    fedc_dataset_destroy(ds);
}

static void test_real_heart_disease(void) {
    const char *set = "heart-disease-uci";
    fedc_test_fixture_facts f = fedc_test_fixture_facts_of(set);
    check_heart_disease(fedc_test_fixture(set), f.mean_age, f.examples, f.sick);
    const char *real = fedc_test_real_data(set);
    if (real) check_heart_disease(real, 53.51, 920, 509); /* age: 53.51 over the 920 patients; UCI: 411 of 920 have no disease */
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"real_femnist", test_real_femnist},
        {"real_shakespeare_test_split", test_real_shakespeare_test_split},
        {"real_shakespeare", test_real_shakespeare},
        {"real_shakespeare_raw", test_real_shakespeare_raw},
        {"real_heart_disease", test_real_heart_disease},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
