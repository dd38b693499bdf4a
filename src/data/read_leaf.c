/* read_leaf.c — LEAF JSON datasets (github.com/TalwalkarLab/leaf): one .json or
 * .json.gz file, or a directory of them read in sorted name order with their
 * clients concatenated. A file is
 *
 *     {"users": [id, ...], "num_samples": [n, ...],
 *      "user_data": {id: {"x": [example, ...], "y": [example, ...]}, ...}}
 *
 * with its keys in any order and others ("hierarchies") skipped. An example is a
 * string (a STRINGS feature), a number or nested lists of numbers of one shape (an
 * f32 array [n, ...] of up to 5 more axes; a "y" of integers is i32).
 *
 * Memory: a JSON file cannot be read one client at a time without scanning all of
 * it (user_data is in no order and has no offsets), so each file is tokenized once
 * when the dataset is opened and every client is kept, parsed, in memory (FEMNIST's
 * 7,935 training images take 25 MB as floats); loading a client copies it. Numbers
 * go from the tokenizer straight into the float arrays, which are sized from
 * num_samples once the first example gives the per-example size, so the file text
 * is never held and no array is over-allocated when num_samples precedes user_data,
 * as LEAF writes it. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"
#include "data/json.h"

#define MAX_AXES (FEDC_MAX_RANK - 1) /* an example's axes; the feature adds the example axis */
#define F32_LIMIT 0x1.ffffffp127     /* doubles from here on round to an infinite float */
/* The most elements reserved from num_samples (a count that claims more is read by
 * doubling, so a corrupt count cannot ask for gigabytes up front). */
#define MAX_RESERVE ((int64_t)1 << 28)

/* ---------------------------------------------------------------- helpers -- */

/* Grows the array that the pointer at `pp` points to, to hold `need` elements:
 * doubling, or exactly `need` when that is more (which is how a known size is
 * reserved). The pointer is read and written with memcpy, as any T * may be. */
static bool grow(void *pp, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return true;
    int64_t c = *cap < 8 ? 16 : 2 * *cap;
    if (c < need) c = need;
    void *p;
    memcpy(&p, pp, sizeof p);
    void *q = fedc_realloc(p, (size_t)c * elem);
    if (!q) return false;
    memcpy(pp, &q, sizeof q);
    *cap = c;
    return true;
}

static fedc_status no_memory(const fedc__json *j) {
    return fedc_error(FEDC_ENOMEM, "%s: out of memory at byte %lld", j->name, (long long)j->offset);
}

/* "<file>: byte N: client "id": ..." */
static fedc_status client_error(const fedc__json *j, int64_t offset, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static fedc_status client_error(const fedc__json *j, int64_t offset, const char *id, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fedc_error(FEDC_EPARSE, "%s: byte %lld: client \"%s\": %s", j->name, (long long)offset, id, what);
}

/* The current string token as an id: a copy, refusing a NUL inside it (ids are C
 * strings). */
static fedc_status copy_id(const fedc__json *j, char **out) {
    if (strlen(j->text) != j->len)
        return fedc_error(FEDC_EPARSE, "%s: byte %lld: a client id holds a NUL character", j->name,
                          (long long)j->offset);
    *out = fedc__strdup(j->text);
    return *out ? FEDC_OK : no_memory(j);
}

/* --------------------------------------------------------------- features -- */

/* One feature of one client as it is read. */
typedef struct feature_acc {
    const char *name, *id; /* "x" or "y"; the client */
    int64_t hint;          /* the examples num_samples announces, or -1 */
    bool seen, started, strings;
    bool ints;             /* numbers held as int32 so far (only "y" may be) */
    int64_t n;             /* examples read */
    int leaf_depth;        /* list depth of the numbers (-1 before the first) */
    int max_list_depth;    /* deepest list so far (-1 before the first) */
    int64_t dims[MAX_AXES]; /* list lengths by depth (-1 before the first) */
    void *vals;            /* 4-byte elements: float, or int32 while `ints` */
    int64_t nvals, vcap;
    char *chars; /* strings: their bytes and examples + 1 offsets */
    int64_t nchars, ccap, *offsets, ocap;
} feature_acc;

static void acc_init(feature_acc *a, const char *name, const char *id, int64_t hint) {
    *a = (feature_acc){.name = name, .id = id, .hint = hint, .ints = strcmp(name, "y") == 0, .leaf_depth = -1,
                       .max_list_depth = -1};
    for (int d = 0; d < MAX_AXES; d++) a->dims[d] = -1;
}

static void acc_free(feature_acc *a) {
    fedc_free(a->vals);
    fedc_free(a->chars);
    fedc_free(a->offsets);
}

static fedc_status shape_error(const fedc__json *j, const feature_acc *a, const char *what) {
    return client_error(j, j->offset, a->id, "\"%s\" example %lld %s", a->name, (long long)a->n, what);
}

static void ints_to_floats(feature_acc *a) {
    for (int64_t i = 0; i < a->nvals; i++) {
        int32_t v = ((int32_t *)a->vals)[i];
        ((float *)a->vals)[i] = (float)v;
    }
    a->ints = false;
}

static fedc_status push_number(fedc__json *j, feature_acc *a) {
    if (!grow(&a->vals, &a->vcap, a->nvals + 1, 4)) return no_memory(j);
    if (a->ints && j->integer && j->int_value >= INT32_MIN && j->int_value <= INT32_MAX) {
        ((int32_t *)a->vals)[a->nvals++] = (int32_t)j->int_value;
        return FEDC_OK;
    }
    if (a->ints) ints_to_floats(a);
    if (fabs(j->number) >= F32_LIMIT) return shape_error(j, a, "holds a number too large for f32");
    ((float *)a->vals)[a->nvals++] = (float)j->number;
    return FEDC_OK;
}

/* A number at list depth `depth`: every number must be at the same depth, and
 * none where a list was. */
static fedc_status leaf(fedc__json *j, feature_acc *a, int depth) {
    if (a->max_list_depth >= depth || (a->leaf_depth >= 0 && a->leaf_depth != depth))
        return shape_error(j, a, "mixes numbers and lists where earlier lists did not");
    a->leaf_depth = depth;
    return push_number(j, a);
}

typedef struct list_ctx {
    feature_acc *a;
    int depth;
    int64_t count;
} list_ctx;

static fedc_status array_value(fedc__json *j, feature_acc *a, int depth);

static fedc_status list_element(fedc__json *j, void *ctx) {
    list_ctx *l = ctx;
    l->count++;
    return array_value(j, l->a, l->depth + 1);
}

/* A number or a list of them at `depth` (0: the example itself). A list's length
 * must equal every earlier list's at its depth, which with the numbers all at one
 * depth makes the examples one shape. Recursion is bounded by MAX_AXES. */
static fedc_status array_value(fedc__json *j, feature_acc *a, int depth) {
    if (j->kind == FEDC__JSON_NUMBER) return leaf(j, a, depth);
    if (j->kind != FEDC__JSON_BEGIN_ARRAY)
        return client_error(j, j->offset, a->id, "\"%s\" example %lld: expected a number or a list, found %s",
                            a->name, (long long)a->n, fedc__json_describe(j));
    if (a->leaf_depth >= 0 && depth >= a->leaf_depth)
        return shape_error(j, a, "mixes numbers and lists where earlier lists did not");
    if (depth >= MAX_AXES) return shape_error(j, a, "nests lists deeper than 5 levels");
    if (depth > a->max_list_depth) a->max_list_depth = depth;
    list_ctx l = {a, depth, 0};
    int64_t at = j->offset;
    fedc_status st = fedc__json_each_element(j, "a list", list_element, &l);
    if (st) return st;
    if (a->dims[depth] < 0) a->dims[depth] = l.count;
    if (a->dims[depth] != l.count)
        return client_error(j, at, a->id, "\"%s\" example %lld: a list of %lld where earlier ones have %lld (ragged)",
                            a->name, (long long)a->n, (long long)l.count, (long long)a->dims[depth]);
    return FEDC_OK;
}

static fedc_status push_string(fedc__json *j, feature_acc *a) {
    if (!grow(&a->offsets, &a->ocap, a->n + 2, sizeof(int64_t)) ||
        !grow(&a->chars, &a->ccap, a->nchars + (int64_t)j->len, 1))
        return no_memory(j);
    a->offsets[0] = 0;
    if (j->len) memcpy(a->chars + a->nchars, j->text, j->len); /* chars is NULL until a string has bytes */
    a->nchars += (int64_t)j->len;
    a->offsets[a->n + 1] = a->nchars;
    return FEDC_OK;
}

/* After the first example: reserves room for all the examples num_samples
 * announces, each the size of the first. */
static fedc_status reserve(fedc__json *j, feature_acc *a) {
    int64_t per = a->strings ? a->nchars : a->nvals;
    if (a->hint <= 1 || a->hint > MAX_RESERVE || (per && a->hint > MAX_RESERVE / per)) return FEDC_OK;
    bool ok = a->strings ? grow(&a->offsets, &a->ocap, a->hint + 1, sizeof(int64_t)) &&
                               grow(&a->chars, &a->ccap, a->hint * per, 1)
                         : grow(&a->vals, &a->vcap, a->hint * per, 4);
    return ok ? FEDC_OK : no_memory(j);
}

static fedc_status example(fedc__json *j, void *ctx) {
    feature_acc *a = ctx;
    bool is_string = j->kind == FEDC__JSON_STRING;
    if (!is_string && j->kind != FEDC__JSON_NUMBER && j->kind != FEDC__JSON_BEGIN_ARRAY)
        return client_error(j, j->offset, a->id, "\"%s\" example %lld: expected a number, a list or a string, found %s",
                            a->name, (long long)a->n, fedc__json_describe(j));
    if (a->started && is_string != a->strings)
        return shape_error(j, a, is_string ? "is a string, earlier ones are not" : "is not a string, earlier ones are");
    a->started = true;
    a->strings = is_string;
    fedc_status st = is_string ? push_string(j, a) : array_value(j, a, 0);
    if (!st && a->n == 0) st = reserve(j, a);
    a->n++;
    return st;
}

static fedc_status read_feature(fedc__json *j, feature_acc *a) {
    if (a->seen) return client_error(j, j->offset, a->id, "two \"%s\" keys", a->name);
    a->seen = true;
    if (j->kind != FEDC__JSON_BEGIN_ARRAY)
        return client_error(j, j->offset, a->id, "\"%s\" must be a list of examples, found %s", a->name,
                            fedc__json_describe(j));
    return fedc__json_each_element(j, "a list", example, a);
}

/* Hands the accumulated arrays to a feature the client adopts. */
static fedc_status adopt(fedc__json *j, fedc_client_data *c, feature_acc *a) {
    fedc_feature f = {fedc__strdup(a->name), a->strings ? FEDC_FEATURE_STRINGS : FEDC_FEATURE_ARRAY, {0}, NULL,
                      NULL};
    if (a->strings) {
        f.type = fedc_type_make(FEDC_U8, 1, &a->n);
        f.data = a->chars, f.offsets = a->offsets;
        a->chars = NULL, a->offsets = NULL;
    } else {
        int axes = a->leaf_depth >= 0 ? a->leaf_depth : a->max_list_depth + 1;
        int64_t dims[FEDC_MAX_RANK] = {a->n};
        memcpy(dims + 1, a->dims, (size_t)axes * sizeof *dims);
        f.type = fedc_type_make(a->ints ? FEDC_I32 : FEDC_F32, axes + 1, dims);
        f.data = a->vals;
        a->vals = NULL;
    }
    if (!f.data) f.data = fedc_malloc(1); /* no examples: still a valid pointer */
    if (!f.offsets && a->strings) f.offsets = fedc_calloc(1, sizeof(int64_t));
    if (!f.name || !f.data || (a->strings && !f.offsets)) {
        fedc_free(f.name), fedc_free(f.data), fedc_free(f.offsets);
        return no_memory(j);
    }
    return fedc_client_adopt_feature(c, &f);
}

/* ------------------------------------------------------------------ files -- */

typedef struct user_ref {
    const char *id;
    int64_t index;
} user_ref;

static int compare_refs(const void *a, const void *b) {
    const user_ref *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

typedef struct parsed_client {
    fedc_client_data *client;
    int64_t at; /* where its user_data entry starts */
    bool listed;
} parsed_client;

/* What one file holds, as it is read. */
typedef struct leaf_file {
    fedc__json j;
    char **users;
    int64_t n_users, cap_users;
    int64_t *counts;
    int64_t n_counts, cap_counts;
    parsed_client *data;
    int64_t n_data, cap_data;
    user_ref *sorted; /* users by id, made when needed */
    bool seen_users, seen_counts, seen_data;
} leaf_file;

static void file_free(leaf_file *f) {
    fedc__json_close(&f->j);
    for (int64_t i = 0; i < f->n_users; i++) fedc_free(f->users[i]);
    fedc_free(f->users);
    fedc_free(f->counts);
    for (int64_t i = 0; i < f->n_data; i++) fedc_client_data_destroy(f->data[i].client);
    fedc_free(f->data);
    fedc_free(f->sorted);
}

static fedc_status sort_users(leaf_file *f) {
    if (f->sorted) return FEDC_OK;
    f->sorted = fedc_malloc((size_t)(f->n_users ? f->n_users : 1) * sizeof *f->sorted);
    if (!f->sorted) return no_memory(&f->j);
    for (int64_t i = 0; i < f->n_users; i++) f->sorted[i] = (user_ref){f->users[i], i};
    if (f->n_users) qsort(f->sorted, (size_t)f->n_users, sizeof *f->sorted, compare_refs);
    return FEDC_OK;
}

/* By id alone, for bsearch: an array sorted by (id, index) is sorted by id. */
static int compare_ref_ids(const void *a, const void *b) {
    return strcmp(((const user_ref *)a)->id, ((const user_ref *)b)->id);
}

/* The index of `id` in "users", or -1. */
static int64_t find_user(const leaf_file *f, const char *id) {
    user_ref key = {id, 0}, *hit = bsearch(&key, f->sorted, (size_t)f->n_users, sizeof key, compare_ref_ids);
    return hit ? hit->index : -1;
}

static fedc_status user_id(fedc__json *j, void *ctx) {
    leaf_file *f = ctx;
    if (j->kind != FEDC__JSON_STRING) return fedc__json_unexpected(j, "a client id string in \"users\"");
    if (!grow(&f->users, &f->cap_users, f->n_users + 1, sizeof *f->users)) return no_memory(j);
    fedc_status st = copy_id(j, &f->users[f->n_users]);
    if (!st) f->n_users++;
    return st;
}

static fedc_status sample_count(fedc__json *j, void *ctx) {
    leaf_file *f = ctx;
    if (j->kind != FEDC__JSON_NUMBER || !j->integer || j->int_value < 0)
        return fedc__json_unexpected(j, "a non-negative integer in \"num_samples\"");
    if (!grow(&f->counts, &f->cap_counts, f->n_counts + 1, sizeof *f->counts)) return no_memory(j);
    f->counts[f->n_counts++] = j->int_value;
    return FEDC_OK;
}

/* A member of a client's object: "x", "y" or something else, skipped. */
static fedc_status client_member(fedc__json *j, void *ctx, const char *key, int64_t at) {
    (void)at;
    feature_acc *xy = ctx;
    if (strcmp(key, "x") == 0) return read_feature(j, &xy[0]);
    if (strcmp(key, "y") == 0) return read_feature(j, &xy[1]);
    return fedc__json_skip_value(j);
}

static fedc_status build_client(fedc__json *j, feature_acc *xy, const char *id, int64_t at, fedc_client_data **out) {
    for (int k = 0; k < 2; k++)
        if (!xy[k].seen) return client_error(j, at, id, "no \"%s\"", xy[k].name);
    if (xy[0].n != xy[1].n)
        return client_error(j, at, id, "\"x\" has %lld examples, \"y\" %lld", (long long)xy[0].n, (long long)xy[1].n);
    fedc_status st = fedc_client_data_create(out, id, xy[0].n);
    for (int k = 0; !st && k < 2; k++) st = adopt(j, *out, &xy[k]);
    return st;
}

/* One member of "user_data": a client's id and its {"x": ..., "y": ...}. */
static fedc_status client_entry(fedc__json *j, void *ctx, const char *id, int64_t at) {
    leaf_file *f = ctx;
    int64_t u = f->sorted ? find_user(f, id) : -1, hint = u >= 0 ? f->counts[u] : -1;
    feature_acc xy[2];
    acc_init(&xy[0], "x", id, hint);
    acc_init(&xy[1], "y", id, hint);
    fedc_client_data *c = NULL;
    fedc_status st = j->kind == FEDC__JSON_BEGIN_OBJECT ? fedc__json_each_member(j, "'{'", client_member, xy)
                                                        : client_error(j, j->offset, id, "expected an object of "
                                                                       "\"x\" and \"y\", found %s",
                                                                       fedc__json_describe(j));
    if (!st) st = build_client(j, xy, id, at, &c);
    if (!st && !grow(&f->data, &f->cap_data, f->n_data + 1, sizeof *f->data)) st = no_memory(j);
    if (!st) f->data[f->n_data++] = (parsed_client){c, at, false};
    else fedc_client_data_destroy(c);
    acc_free(&xy[0]);
    acc_free(&xy[1]);
    return st;
}

static fedc_status top_member(fedc__json *j, void *ctx, const char *key, int64_t at) {
    leaf_file *f = ctx;
    bool *seen = strcmp(key, "users") == 0         ? &f->seen_users
                 : strcmp(key, "num_samples") == 0 ? &f->seen_counts
                 : strcmp(key, "user_data") == 0   ? &f->seen_data
                                                   : NULL;
    if (!seen) return fedc__json_skip_value(j);
    if (*seen) return fedc_error(FEDC_EPARSE, "%s: byte %lld: a second \"%s\"", j->name, (long long)at, key);
    *seen = true;
    if (seen == &f->seen_users) return fedc__json_each_element(j, "a list of client ids", user_id, f);
    if (seen == &f->seen_counts) return fedc__json_each_element(j, "a list of counts", sample_count, f);
    /* Sizes each client's arrays up front when the counts came first. */
    fedc_status st = f->seen_users && f->seen_counts && f->n_users == f->n_counts ? sort_users(f) : FEDC_OK;
    return st ? st : fedc__json_each_member(j, "an object of clients", client_entry, f);
}

static fedc_status parse_file(leaf_file *f) {
    fedc__json *j = &f->j;
    fedc_status st = fedc__json_next(j);
    if (!st) st = fedc__json_each_member(j, "'{' (a LEAF object)", top_member, f);
    if (!st) st = fedc__json_next(j);
    if (!st) st = fedc__json_expect(j, FEDC__JSON_EOF, "end of file");
    return st;
}

static int compare_parsed(const void *a, const void *b) {
    const parsed_client *x = a, *y = b;
    int c = strcmp(x->client->id, y->client->id);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static int compare_parsed_ids(const void *a, const void *b) {
    return strcmp(((const parsed_client *)a)->client->id, ((const parsed_client *)b)->client->id);
}

/* The entry of `id` in user_data (sorted), or NULL. */
static parsed_client *find_parsed(const leaf_file *f, const char *id) {
    parsed_client key = {&(fedc_client_data){.id = (char *)id}, 0, false};
    if (!f->n_data) return NULL; /* f->data may be NULL, which bsearch must not get */
    return bsearch(&key, f->data, (size_t)f->n_data, sizeof key, compare_parsed_ids);
}

/* The whole file is read: checks that users, num_samples and user_data agree. */
static fedc_status check_keys(const leaf_file *f) {
    const char *name = f->j.name;
    const char *missing = !f->seen_users    ? "users"
                          : !f->seen_counts ? "num_samples"
                          : !f->seen_data   ? "user_data"
                                            : NULL;
    if (missing) return fedc_error(FEDC_EPARSE, "%s: no \"%s\" (not a LEAF file?)", name, missing);
    if (f->n_users != f->n_counts)
        return fedc_error(FEDC_EPARSE, "%s: \"users\" lists %lld clients, \"num_samples\" %lld", name,
                          (long long)f->n_users, (long long)f->n_counts);
    for (int64_t i = 1; i < f->n_users; i++)
        if (strcmp(f->sorted[i - 1].id, f->sorted[i].id) == 0)
            return fedc_error(FEDC_EPARSE, "%s: client \"%s\" is listed twice in \"users\"", name, f->sorted[i].id);
    for (int64_t i = 1; i < f->n_data; i++)
        if (strcmp(f->data[i - 1].client->id, f->data[i].client->id) == 0)
            return client_error(&f->j, f->data[i].at, f->data[i].client->id, "appears twice in \"user_data\"");
    return FEDC_OK;
}

/* LEAF's Shakespeare split drops the L - 1 windows of L characters that straddle a
 * role's train/test boundary but keeps them in the test file's "num_samples", so a
 * count that exceeds the examples by exactly the window length minus one is
 * accepted for clients whose "x" are strings of that length. */
static bool leaf_seam_count(const fedc_client_data *c, int64_t count) {
    const fedc_feature *x = fedc_client_feature(c, "x");
    if (!x || x->kind != FEDC_FEATURE_STRINGS || c->num_examples < 1 || count <= c->num_examples) return false;
    return x->offsets[1] - x->offsets[0] == count - c->num_examples + 1;
}

static fedc_status match_clients(leaf_file *f) {
    for (int64_t i = 0; i < f->n_users; i++) {
        parsed_client *p = find_parsed(f, f->users[i]);
        if (!p)
            return fedc_error(FEDC_EPARSE, "%s: client \"%s\" is in \"users\" but has no \"user_data\"", f->j.name,
                              f->users[i]);
        if (p->client->num_examples != f->counts[i] && !leaf_seam_count(p->client, f->counts[i]))
            return client_error(&f->j, p->at, f->users[i],
                                "\"num_samples\" says %lld examples, \"x\" and \"y\" have %lld",
                                (long long)f->counts[i], (long long)p->client->num_examples);
        p->listed = true;
    }
    for (int64_t i = 0; i < f->n_data; i++)
        if (!f->data[i].listed)
            return client_error(&f->j, f->data[i].at, f->data[i].client->id,
                                "is in \"user_data\" but not in \"users\"");
    return FEDC_OK;
}

/* -------------------------------------------------------------- the source -- */

/* Every client of every file, parsed, in the dataset's order. */
typedef struct leaf_source {
    fedc_client_data **clients;
    int64_t n, cap;
    int64_t *file_of; /* while opening: the file each client came from */
    int64_t file_cap;
} leaf_source;

static void source_destroy(void *impl) {
    leaf_source *s = impl;
    if (!s) return;
    for (int64_t i = 0; i < s->n; i++) fedc_client_data_destroy(s->clients[i]);
    fedc_free(s->clients);
    fedc_free(s->file_of);
    fedc_free(s);
}

/* Moves a checked file's clients into the source, in "users" order. */
static fedc_status take_clients(leaf_file *f, leaf_source *s, int64_t file) {
    if (!grow(&s->clients, &s->cap, s->n + f->n_users, sizeof *s->clients) ||
        !grow(&s->file_of, &s->file_cap, s->n + f->n_users, sizeof *s->file_of))
        return fedc_error(FEDC_ENOMEM, "%s: out of memory", f->j.name);
    for (int64_t i = 0; i < f->n_users; i++) {
        s->file_of[s->n] = file;
        s->clients[s->n++] = find_parsed(f, f->users[i])->client;
    }
    /* every entry was listed (match_clients), so the source has them all now */
    for (int64_t i = 0; i < f->n_data; i++) f->data[i].client = NULL;
    return FEDC_OK;
}

static fedc_status read_file(const char *path, leaf_source *s, int64_t file) {
    leaf_file f = {0};
    fedc_status st = fedc__json_open(&f.j, path);
    if (st) return st;
    st = parse_file(&f);
    if (!st) st = sort_users(&f);
    if (!st && f.n_data) qsort(f.data, (size_t)f.n_data, sizeof *f.data, compare_parsed);
    if (!st) st = check_keys(&f);
    if (!st) st = match_clients(&f);
    if (!st) st = take_clients(&f, s, file);
    file_free(&f); /* what the source took is NULL in f.data */
    return st;
}

/* A client id in two files (a file's own duplicates are caught when it is read). */
static fedc_status check_across_files(const leaf_source *s, char *const *files) {
    user_ref *refs = fedc_malloc((size_t)(s->n ? s->n : 1) * sizeof *refs);
    if (!refs) return fedc_error(FEDC_ENOMEM, "%s: out of memory", files[0]);
    for (int64_t i = 0; i < s->n; i++) refs[i] = (user_ref){s->clients[i]->id, i};
    if (s->n) qsort(refs, (size_t)s->n, sizeof *refs, compare_refs);
    fedc_status st = FEDC_OK;
    for (int64_t i = 1; !st && i < s->n; i++)
        if (strcmp(refs[i - 1].id, refs[i].id) == 0)
            st = fedc_error(FEDC_EPARSE, "client \"%s\" is in both %s and %s", refs[i].id,
                            files[s->file_of[refs[i - 1].index]], files[s->file_of[refs[i].index]]);
    fedc_free(refs);
    return st;
}

/* A deep copy: the dataset keeps its clients, the caller owns what it gets. */
static fedc_status copy_feature(const fedc_feature *f, int64_t n, fedc_client_data *into) {
    size_t bytes = f->kind == FEDC_FEATURE_STRINGS ? (size_t)f->offsets[n] : fedc_type_bytes(&f->type);
    size_t offset_bytes = (size_t)(n + 1) * sizeof(int64_t);
    fedc_feature g = {fedc__strdup(f->name), f->kind, f->type, fedc_malloc(bytes ? bytes : 1),
                      f->offsets ? fedc_malloc(offset_bytes) : NULL};
    if (!g.name || !g.data || (f->offsets && !g.offsets)) {
        fedc_free(g.name), fedc_free(g.data), fedc_free(g.offsets);
        return fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory", into->id);
    }
    memcpy(g.data, f->data, bytes);
    if (f->offsets) memcpy(g.offsets, f->offsets, offset_bytes);
    return fedc_client_adopt_feature(into, &g);
}

static fedc_status leaf_load(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    const fedc_client_data *c = ((const leaf_source *)ds->impl)->clients[i];
    fedc_status st = fedc_client_data_create(out, c->id, c->num_examples);
    for (int k = 0; !st && k < c->num_features; k++) st = copy_feature(&c->features[k], c->num_examples, *out);
    if (st) {
        fedc_client_data_destroy(*out);
        *out = NULL;
    }
    return st;
}

static const fedc__dataset_ops leaf_ops = {leaf_load, source_destroy};

/* ------------------------------------------------------------------- files -- */

/* As a shell's *.json and *.json.gz: no hidden (editor) files. */
/* The directory's *.json and *.json.gz files, as paths, sorted by name. */
static fedc_status list_dir(const char *dir, char ***out, int64_t *count) {
    static const char *const suffixes[] = {".json", ".json.gz", NULL};
    fedc_status st = fedc__dir_files(dir, suffixes, ".json or .json.gz (LEAF)", out, count);
    for (int64_t i = 0; !st && i < *count; i++) {
        char *path = fedc__path_join(dir, (*out)[i]);
        if (!path) st = fedc_error(FEDC_ENOMEM, "%s: out of memory", dir);
        else fedc_free((*out)[i]), (*out)[i] = path;
    }
    if (st && *count) {
        fedc__free_names(*out, *count);
        *out = NULL, *count = 0;
    }
    return st;
}

/* `path` itself when it is a file, else the LEAF files in the directory. */
static fedc_status leaf_files(const char *path, char ***out, int64_t *count) {
    struct stat sb;
    if (stat(path, &sb) != 0) return fedc_error(FEDC_EIO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return list_dir(path, out, count);
    *out = fedc_malloc(sizeof **out);
    if (*out) **out = fedc__strdup(path);
    if (!*out || !**out) {
        fedc_free(*out);
        return fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    }
    *count = 1;
    return FEDC_OK;
}

fedc_status fedc__open_leaf(fedc_dataset **out, const char *path) {
    *out = NULL;
    char **files = NULL;
    int64_t nfiles = 0;
    fedc_status st = leaf_files(path, &files, &nfiles);
    if (st) return st;
    leaf_source *s = fedc_calloc(1, sizeof *s);
    if (!s) st = fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    for (int64_t i = 0; !st && i < nfiles; i++) st = read_file(files[i], s, i);
    if (!st) st = check_across_files(s, files);
    fedc__free_names(files, nfiles);
    if (st) {
        source_destroy(s);
        return st;
    }
    fedc_free(s->file_of); /* only the duplicate check needed it */
    s->file_of = NULL;
    if ((st = fedc__dataset_create(out, &leaf_ops, FEDC_FORMAT_LEAF, path, s))) return st;
    for (int64_t i = 0; !st && i < s->n; i++)
        st = fedc__dataset_add_client(*out, s->clients[i]->id, s->clients[i]->num_examples);
    if (st) {
        fedc_dataset_destroy(*out);
        *out = NULL;
    }
    return st;
}
