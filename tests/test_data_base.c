/*
 * Tests of the base data layer every reader stands on (src/data/client.c and
 * src/data/dataset.c): client data (create, add_array, add_strings, adopt_feature,
 * feature lookup, and each refusal with its message), datasets held in memory
 * (counts, ids, lookups, loads that are deep copies), slices and slices of slices,
 * the preprocessing hook (applied on load, replacing the client, failing without a
 * leak), the format names, and allocation failures injected into from_clients,
 * slice and load. Runs under ASan/LSan in the sanitizer build, which checks that
 * every failure path frees what it took.
 */
#include "core/internal.h"
#include "harness.h"

#include <math.h>
#include <string.h>

#include "fedc/data.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define TY(dt, ...) fedc_type_make((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* --------------------------------------------------------------- fixtures -- */

/* Client `id` with n examples: x f32[n, 2] = {base + e, -(base + e)} and words
 * "w<base + e>" (NULL on failure, with the status in *st). */
static fedc_client_data *make_client(const char *id, int64_t n, int base, fedc_status *st) {
    fedc_client_data *c = NULL;
    *st = fedc_client_data_create(&c, id, n);
    if (*st) return NULL;
    float x[16][2];
    char text[16][8];
    const char *words[16];
    for (int64_t e = 0; e < n && e < 16; e++) {
        x[e][0] = (float)(base + e), x[e][1] = -(float)(base + e);
        snprintf(text[e], sizeof text[e], "w%d", (int)(base + e));
        words[e] = text[e];
    }
    *st = fedc_client_add_array(c, "x", TY(FEDC_F32, n, 2), x);
    if (!*st) *st = fedc_client_add_strings(c, "words", words, NULL);
    if (*st) {
        fedc_client_data_destroy(c);
        return NULL;
    }
    return c;
}

/* A memory dataset of clients "a" (2 examples), "b" (3), "c" (1), "d" (4), "e" (0);
 * client i's first x is 10 i. */
static fedc_status make_dataset(fedc_dataset **out) {
    static const char *ids[] = {"a", "b", "c", "d", "e"};
    static const int64_t counts[] = {2, 3, 1, 4, 0};
    *out = NULL;
    fedc_client_data **clients = fedc_calloc(5, sizeof *clients);
    if (!clients) return FEDC_ENOMEM;
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < 5; i++) clients[i] = make_client(ids[i], counts[i], 10 * i, &st);
    if (st) {
        for (int i = 0; i < 5; i++) fedc_client_data_destroy(clients[i]);
        fedc_free(clients);
        return st;
    }
    return fedc_dataset_from_clients(clients, 5, out);
}

/* Loads client i of ds and checks that it is `id` with n examples (NULL if it
 * does not load; the caller destroys it). */
static fedc_client_data *load_checked(fedc_dataset *ds, int64_t i, const char *id, int64_t n) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_dataset_client(ds, i, &c));
    if (!c) return NULL;
    CHECK_MSG(strcmp(c->id, id) == 0, "client %lld is \"%s\", want \"%s\"", (long long)i, c->id, id);
    CHECK_EQ_INT(c->num_examples, n);
    return c;
}

/* Client i of ds has `id`, n examples and x[0][0] = first (loaded). */
static void check_load(fedc_dataset *ds, int64_t i, const char *id, int64_t n, float first) {
    fedc_client_data *c = load_checked(ds, i, id, n);
    if (!c) return;
    const fedc_feature *x = fedc_client_feature(c, "x");
    CHECK(x != NULL);
    if (x && n > 0) CHECK_NEAR(((const float *)x->data)[0], first, 0);
    fedc_client_data_destroy(c);
}

/* ------------------------------------------------------------ client data -- */

static void test_client_arrays(void) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_client_data_create(&c, "alice", 3));
    if (!c) return;
    CHECK(strcmp(c->id, "alice") == 0);
    CHECK_EQ_INT(c->num_examples, 3);
    CHECK_EQ_INT(c->num_features, 0);
    int32_t y[3] = {4, 5, 6};
    fedc_type t = TY(FEDC_I32, 3);
    t.placement = FEDC_SERVER; /* features are local values whatever the caller says */
    CHECK_OK(fedc_client_add_array(c, "y", t, y));
    y[0] = 99; /* a copy was taken */
    const fedc_feature *f = fedc_client_feature(c, "y");
    CHECK(f && f->kind == FEDC_FEATURE_ARRAY && f->offsets == NULL);
    if (f) {
        fedc_type want = TY(FEDC_I32, 3);
        CHECK(fedc_type_equal(&f->type, &want));
        CHECK_EQ_INT(((const int32_t *)f->data)[0], 4);
    }
    CHECK(fedc_client_feature(c, "z") == NULL);
    /* refusals name the client and the feature */
    CHECK_ERR(fedc_client_add_array(c, "y", TY(FEDC_I32, 3), y), FEDC_EINVAL, "two features are named \"y\"");
    CHECK_ERR(fedc_client_add_array(c, "w", TY(FEDC_F32, 4, 2), (float[8]){0}), FEDC_ESHAPE,
              "client \"alice\": feature \"w\" has 4 examples, the client 3");
    CHECK_ERR(fedc_client_add_array(c, "s", fedc_type_scalar(FEDC_F32), (float[1]){0}), FEDC_ESHAPE, "\"s\"");
    CHECK_EQ_INT(c->num_features, 1);
    /* an example of zero size is still an example */
    CHECK_OK(fedc_client_add_array(c, "empty", TY(FEDC_F32, 3, 0), NULL));
    CHECK_EQ_INT(c->num_features, 2);
    fedc_client_data_destroy(c);
    fedc_client_data_destroy(NULL);
    fedc_client_data *bad = (fedc_client_data *)&bad;
    CHECK_ERR(fedc_client_data_create(&bad, "bob", -1), FEDC_EINVAL, "client \"bob\": negative");
    CHECK(bad == NULL);
}

static void test_client_strings(void) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_client_data_create(&c, "carol", 3));
    if (!c) return;
    const char *words[] = {"to", "", "be"};
    CHECK_OK(fedc_client_add_strings(c, "words", words, NULL));
    const char *raw[] = {"a\0b", "xyz", "q"}; /* with lengths, NUL bytes are data */
    size_t lengths[] = {3, 2, 0};
    CHECK_OK(fedc_client_add_strings(c, "raw", raw, lengths));
    const fedc_feature *w = fedc_client_feature(c, "words"), *r = fedc_client_feature(c, "raw");
    CHECK(w && r);
    if (w && r) {
        fedc_type want = TY(FEDC_U8, 3);
        CHECK(w->kind == FEDC_FEATURE_STRINGS && fedc_type_equal(&w->type, &want));
        int64_t wo[] = {0, 2, 2, 4}, ro[] = {0, 3, 5, 5};
        CHECK(memcmp(w->offsets, wo, sizeof wo) == 0);
        CHECK(memcmp(w->data, "tobe", 4) == 0);
        CHECK(memcmp(r->offsets, ro, sizeof ro) == 0);
        CHECK(memcmp(r->data, "a\0bxy", 5) == 0);
    }
    CHECK_ERR(fedc_client_add_strings(c, "raw", words, NULL), FEDC_EINVAL, "two features are named \"raw\"");
    CHECK_EQ_INT(c->num_features, 2);
    fedc_client_data_destroy(c);
}

static void test_client_adopt(void) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_client_data_create(&c, "dave", 2));
    if (!c) return;
    double *data = fedc_malloc(2 * sizeof *data);
    char *name = fedc_malloc(2);
    if (data && name) {
        data[0] = 1.5, data[1] = 2.5;
        memcpy(name, "v", 2);
        fedc_feature f = {name, FEDC_FEATURE_ARRAY, TY(FEDC_F64, 2), data, NULL};
        CHECK_OK(fedc_client_adopt_feature(c, &f));
        const fedc_feature *g = fedc_client_feature(c, "v");
        CHECK(g && g->data == data); /* taken over, not copied */
    }
    /* a refused feature is freed by the call (LeakSanitizer checks) */
    fedc_feature bad = {fedc_malloc(2), FEDC_FEATURE_ARRAY, TY(FEDC_F64, 3), fedc_malloc(24), NULL};
    if (bad.name) memcpy(bad.name, "u", 2);
    if (bad.name && bad.data) CHECK_ERR(fedc_client_adopt_feature(c, &bad), FEDC_ESHAPE, "has 3 examples");
    CHECK_EQ_INT(c->num_features, 1);
    fedc_client_data_destroy(c);
}

/* ---------------------------------------------------------------- datasets -- */

static void test_memory_dataset(void) {
    fedc_dataset *ds = NULL;
    CHECK_OK(make_dataset(&ds));
    if (!ds) return;
    CHECK(fedc_dataset_format(ds) == FEDC_FORMAT_MEMORY);
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 5);
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), 10);
    CHECK(strcmp(fedc_dataset_client_id(ds, 3), "d") == 0);
    CHECK_EQ_INT(fedc_dataset_client_examples(ds, 1), 3);
    CHECK(fedc_dataset_client_id(ds, 5) == NULL && fedc_dataset_client_id(ds, -1) == NULL);
    CHECK_EQ_INT(fedc_dataset_client_examples(ds, 5), -1);
    int64_t index = -1;
    CHECK_OK(fedc_dataset_find(ds, "c", &index));
    CHECK_EQ_INT(index, 2);
    CHECK_ERR(fedc_dataset_find(ds, "zed", &index), FEDC_ENOTFOUND, "no client \"zed\" (it has 5 clients)");
    for (int64_t i = 0; i < 5; i++)
        check_load(ds, i, fedc_dataset_client_id(ds, i), fedc_dataset_client_examples(ds, i), 10.0f * (float)i);
    fedc_client_data *c = (fedc_client_data *)&c;
    CHECK_ERR(fedc_dataset_client(ds, 5, &c), FEDC_ERANGE, "client index 5 is outside [0, 5)");
    CHECK(c == NULL);
    CHECK_ERR(fedc_dataset_client(ds, -1, &c), FEDC_ERANGE, "client index -1");
    fedc_dataset_destroy(ds);
    fedc_dataset_destroy(NULL);
    /* no clients at all */
    fedc_client_data **none = fedc_malloc(sizeof *none);
    CHECK_OK(fedc_dataset_from_clients(none, 0, &ds));
    if (ds) CHECK(fedc_dataset_num_clients(ds) == 0 && fedc_dataset_total_examples(ds) == 0);
    fedc_dataset_destroy(ds);
}

/* A load is the caller's to change: the next load is unaffected. */
static void test_loads_are_copies(void) {
    fedc_dataset *ds = NULL;
    CHECK_OK(make_dataset(&ds));
    if (!ds) return;
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_dataset_client(ds, 1, &c));
    if (c) {
        ((float *)fedc_client_feature(c, "x")->data)[0] = -7;
        ((char *)fedc_client_feature(c, "words")->data)[0] = 'X';
        fedc_free(c->id);
        c->id = NULL;
        fedc_client_data_destroy(c);
    }
    CHECK_OK(fedc_dataset_client(ds, 1, &c));
    if (c) {
        const fedc_feature *w = fedc_client_feature(c, "words");
        CHECK(strcmp(c->id, "b") == 0);
        CHECK_NEAR(((const float *)fedc_client_feature(c, "x")->data)[0], 10, 0);
        CHECK(w && w->kind == FEDC_FEATURE_STRINGS && memcmp(w->data, "w10w11w12", 9) == 0);
        int64_t offsets[] = {0, 3, 6, 9};
        CHECK(w && memcmp(w->offsets, offsets, sizeof offsets) == 0);
    }
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

static void test_slices(void) {
    fedc_dataset *ds = NULL, *s = NULL, *ss = NULL, *empty = NULL;
    CHECK_OK(make_dataset(&ds));
    if (!ds) return;
    CHECK_OK(fedc_dataset_slice(ds, 1, 4, &s)); /* b c d */
    if (s) CHECK_OK(fedc_dataset_slice(s, 1, 3, &ss)); /* c d */
    if (!s || !ss) goto done;
    CHECK_EQ_INT(fedc_dataset_num_clients(s), 3);
    CHECK_EQ_INT(fedc_dataset_total_examples(s), 8);
    CHECK(fedc_dataset_format(s) == FEDC_FORMAT_MEMORY);
    CHECK(strcmp(fedc_dataset_client_id(s, 0), "b") == 0);
    CHECK_EQ_INT(fedc_dataset_client_examples(s, 2), 4);
    CHECK(fedc_dataset_client_id(s, 3) == NULL);
    check_load(s, 0, "b", 3, 10);
    check_load(s, 2, "d", 4, 30);
    CHECK_EQ_INT(fedc_dataset_num_clients(ss), 2);
    CHECK_EQ_INT(fedc_dataset_total_examples(ss), 5);
    check_load(ss, 0, "c", 1, 20);
    check_load(ss, 1, "d", 4, 30);
    int64_t index = -1;
    CHECK_OK(fedc_dataset_find(ss, "d", &index));
    CHECK_EQ_INT(index, 1); /* an index of the slice, not of the parent */
    CHECK_ERR(fedc_dataset_find(ss, "b", &index), FEDC_ENOTFOUND, "\"b\"");
    fedc_client_data *c = NULL;
    CHECK_ERR(fedc_dataset_client(ss, 2, &c), FEDC_ERANGE, "outside [0, 2)");
    CHECK_ERR(fedc_dataset_slice(ds, 2, 6, &empty), FEDC_ERANGE, "slice [2, 6) is outside [0, 5]");
    CHECK_ERR(fedc_dataset_slice(ds, -1, 2, &empty), FEDC_ERANGE, NULL);
    CHECK_ERR(fedc_dataset_slice(ds, 3, 2, &empty), FEDC_ERANGE, NULL);
    CHECK_ERR(fedc_dataset_slice(s, 0, 4, &empty), FEDC_ERANGE, "outside [0, 3]");
    CHECK(empty == NULL);
    CHECK_OK(fedc_dataset_slice(ds, 5, 5, &empty));
    if (empty) CHECK_EQ_INT(fedc_dataset_num_clients(empty), 0);
    /* a slice outlives nothing but its root: destroy the middle one first */
    fedc_dataset_destroy(s);
    s = NULL;
    check_load(ss, 1, "d", 4, 30);
done:
    fedc_dataset_destroy(empty), fedc_dataset_destroy(ss), fedc_dataset_destroy(s), fedc_dataset_destroy(ds);
}

/* ----------------------------------------------------------- preprocessing -- */

/* EMNIST's x = 1 - x, in place; counts its calls. */
static fedc_status invert(void *ctx, fedc_client_data **client) {
    ++*(int *)ctx;
    fedc_feature *x = (fedc_feature *)fedc_client_feature(*client, "x");
    for (int64_t i = 0; x && i < fedc_type_count(&x->type); i++) ((float *)x->data)[i] = 1 - ((float *)x->data)[i];
    return FEDC_OK;
}

/* Replaces the client with a new one holding only its first example's x. */
static fedc_status replace(void *ctx, fedc_client_data **client) {
    (void)ctx;
    fedc_client_data *old = *client, *fresh = NULL;
    fedc_status st = fedc_client_data_create(&fresh, "new", 1);
    if (!st) st = fedc_client_add_array(fresh, "x", TY(FEDC_F32, 1, 2), fedc_client_feature(old, "x")->data);
    if (st) {
        fedc_client_data_destroy(fresh);
        return st;
    }
    fedc_client_data_destroy(old);
    *client = fresh;
    return FEDC_OK;
}

static fedc_status refuse(void *ctx, fedc_client_data **client) {
    (void)ctx;
    return fedc_error(FEDC_EINVAL, "client \"%s\": refused by the hook", (*client)->id);
}

static void test_preprocess(void) {
    fedc_dataset *ds = NULL, *s = NULL;
    CHECK_OK(make_dataset(&ds));
    if (!ds) return;
    int calls = 0;
    fedc_dataset_set_preprocess(ds, invert, &calls);
    check_load(ds, 1, "b", 3, 1 - 10.0f);
    check_load(ds, 1, "b", 3, 1 - 10.0f); /* applied to each fresh load, never twice to the source */
    CHECK_EQ_INT(calls, 2);
    CHECK_OK(fedc_dataset_slice(ds, 1, 3, &s)); /* a slice takes its parent's hook */
    if (s) check_load(s, 1, "c", 1, 1 - 20.0f);
    CHECK_EQ_INT(calls, 3);
    fedc_dataset_set_preprocess(ds, replace, NULL);
    check_load(ds, 3, "new", 1, 30);
    fedc_dataset_set_preprocess(ds, refuse, NULL);
    fedc_client_data *c = (fedc_client_data *)&c;
    CHECK_ERR(fedc_dataset_client(ds, 2, &c), FEDC_EINVAL, "client \"c\": refused by the hook");
    CHECK(c == NULL);
    fedc_dataset_set_preprocess(ds, NULL, NULL);
    check_load(ds, 2, "c", 1, 20);
    fedc_dataset_destroy(s);
    fedc_dataset_destroy(ds);
}

/* ------------------------------------------------------------- holdouts -- */

/* Client i of ds is `id` whose words are "w<first>", "w<first + 1>", ... (n of them). */
static void check_words(fedc_dataset *ds, int64_t i, const char *id, int64_t n, int first) {
    fedc_client_data *c = load_checked(ds, i, id, n);
    if (!c) return;
    const fedc_feature *w = fedc_client_feature(c, "words");
    for (int64_t e = 0; w && e < n; e++) {
        char want[16];
        snprintf(want, sizeof want, "w%d", first + (int)e);
        int64_t len = w->offsets[e + 1] - w->offsets[e];
        CHECK_MSG(len == (int64_t)strlen(want) && !memcmp((const char *)w->data + w->offsets[e], want, (size_t)len),
                  "client \"%s\" example %lld is not %s", id, (long long)e, want);
    }
    fedc_client_data_destroy(c);
}

static void test_holdout(void) {
    fedc_dataset *ds = NULL, *train = NULL, *test = NULL, *s = NULL;
    CHECK_OK(make_dataset(&ds)); /* a 2, b 3, c 1, d 4, e 0 examples */
    if (!ds) return;
    CHECK_OK(fedc_dataset_holdout(ds, 0.25, &train, &test));
    if (!train || !test) goto done;
    /* train keeps max(1, floor(0.75 n)): a 1, b 2, c 1, d 3; e has nothing on either side */
    CHECK_EQ_INT(fedc_dataset_num_clients(train), 4);
    CHECK_EQ_INT(fedc_dataset_total_examples(train), 7);
    CHECK_EQ_INT(fedc_dataset_client_examples(train, 3), 3);
    check_load(train, 1, "b", 2, 10);
    check_words(train, 3, "d", 3, 30);
    /* test holds the rest, in order: a's last, b's last, d's last; c (one example) trains */
    CHECK_EQ_INT(fedc_dataset_num_clients(test), 3);
    CHECK_EQ_INT(fedc_dataset_total_examples(test), 3);
    CHECK(strcmp(fedc_dataset_client_id(test, 2), "d") == 0);
    check_load(test, 0, "a", 1, 1);
    check_words(test, 1, "b", 1, 12);
    check_load(test, 2, "d", 1, 33);
    /* a split slices and takes a hook like any dataset: the hook sees the split's rows */
    CHECK_OK(fedc_dataset_slice(test, 1, 3, &s));
    if (s) check_load(s, 1, "d", 1, 33);
    int calls = 0;
    fedc_dataset_set_preprocess(test, invert, &calls);
    check_load(test, 1, "b", 1, 1 - 12.0f);
    CHECK_EQ_INT(calls, 1);
    fedc_dataset *t2 = NULL, *h2 = NULL;
    CHECK_ERR(fedc_dataset_holdout(ds, 0, &t2, &h2), FEDC_EINVAL, "held-out fraction 0 is not in (0, 1)");
    CHECK_ERR(fedc_dataset_holdout(ds, 1, &t2, &h2), FEDC_EINVAL, NULL);
    CHECK_ERR(fedc_dataset_holdout(ds, NAN, &t2, &h2), FEDC_EINVAL, NULL);
    CHECK(t2 == NULL && h2 == NULL);
    /* every client too small to hold anything out: an error, not an empty test split */
    fedc_dataset *one = NULL;
    CHECK_OK(fedc_dataset_slice(ds, 2, 3, &one)); /* c: 1 example */
    if (one) CHECK_ERR(fedc_dataset_holdout(one, 0.5, &t2, &h2), FEDC_EINVAL, "leaves no test example");
    fedc_dataset_destroy(one);
done:
    fedc_dataset_destroy(s), fedc_dataset_destroy(test), fedc_dataset_destroy(train), fedc_dataset_destroy(ds);
}

static void test_format_names(void) {
    fedc_data_format f = FEDC_FORMAT_AUTO;
    CHECK_OK(fedc_data_format_parse("tff", &f));
    CHECK(f == FEDC_FORMAT_TFF);
    CHECK_OK(fedc_data_format_parse("fedjax", &f));
    CHECK(f == FEDC_FORMAT_FEDJAX);
    CHECK(strcmp(fedc_data_format_name(FEDC_FORMAT_LEAF), "leaf") == 0);
    CHECK(strcmp(fedc_data_format_name(FEDC_FORMAT_MEMORY), "memory") == 0);
    CHECK(strcmp(fedc_data_format_name(FEDC_FORMAT_COUNT), "?") == 0);
    CHECK_ERR(fedc_data_format_parse("memory", &f), FEDC_EINVAL, "unknown data format \"memory\"");
    CHECK_ERR(fedc_data_format_parse("parquet", &f), FEDC_EINVAL, "use leaf, tff, fedjax, idx, csv, text or cifar10");
}

/* ------------------------------------------------------ allocation failure -- */

/* Builds the dataset, slices it twice and loads through the inner slice with the
 * hook on: the k-th allocation of all that fails. */
static fedc_status run_all(void) {
    fedc_dataset *ds = NULL, *s = NULL, *ss = NULL;
    fedc_client_data *c = NULL;
    int calls = 0;
    fedc_status st = make_dataset(&ds);
    if (!st) fedc_dataset_set_preprocess(ds, invert, &calls);
    if (!st) st = fedc_dataset_slice(ds, 1, 5, &s);
    if (!st) st = fedc_dataset_slice(s, 2, 4, &ss);
    if (!st) st = fedc_dataset_client(ss, 0, &c);
    CHECK(st || (c && c->num_examples == 4 && calls == 1));
    if (st) CHECK(c == NULL);
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ss), fedc_dataset_destroy(s), fedc_dataset_destroy(ds);
    return st;
}

static void test_alloc_failure(void) {
    uint64_t k;
    for (k = 1; k < 1000; k++) {
        fedc__alloc_fail_after(k);
        fedc_status st = run_all();
        fedc__alloc_fail_after(0);
        if (!st) break;
        CHECK_MSG(st == FEDC_ENOMEM, "allocation %llu: %s (%s)", (unsigned long long)k, fedc_status_str(st),
                  fedc_errmsg());
        if (st != FEDC_ENOMEM) break;
    }
    CHECK_MSG(k > 10 && k < 1000, "%llu allocation points", (unsigned long long)k);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"client_arrays", test_client_arrays},
        {"client_strings", test_client_strings},
        {"client_adopt", test_client_adopt},
        {"memory_dataset", test_memory_dataset},
        {"loads_are_copies", test_loads_are_copies},
        {"slices", test_slices},
        {"preprocess", test_preprocess},
        {"holdout", test_holdout},
        {"format_names", test_format_names},
        {"alloc_failure", test_alloc_failure},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
