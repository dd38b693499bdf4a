/* CSV reader: a directory of numeric CSV files, one client per file — the shape
 * of cross-silo data such as UCI Heart Disease (processed.<hospital>.data).
 *
 *   - Files: every regular file whose name ends in ".csv" or ".data", sorted
 *     bytewise; the client id is the name less that suffix and less a leading
 *     "processed." ("processed.cleveland.data" is "cleveland").
 *   - Rows: comma-separated numbers; blank lines are skipped; a first row with a
 *     field that is not a number (nor "?") is a header and is skipped.
 *   - Features: "x" f32[n, cols-1] (every column but the last), "y" i32[n] (the
 *     last column, an integer, kept as it is) and "missing" u8[n, cols-1] (1
 *     where the field was "?" or empty).
 *   - Missing values in x are the mean of that column over the client's own
 *     non-missing values (0 if there are none): each silo imputes from its own
 *     data, nothing crosses clients. A missing label is an error.
 *
 * Every file is parsed when the dataset is opened (so errors come early, with
 * file and line) and again when its client is loaded. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"

/* One parsed file. */
typedef struct csv_table {
    int64_t rows, cols; /* data rows; fields per row */
    int64_t cols_line;  /* the line that set cols */
    float *x;           /* rows x (cols - 1) */
    uint8_t *missing;   /* rows x (cols - 1) */
    int32_t *y;         /* rows */
    double *sum;        /* per feature column: sum and count of the present values */
    int64_t *present;
} csv_table;

static void table_free(csv_table *t) {
    fedc_free(t->x), fedc_free(t->missing), fedc_free(t->y), fedc_free(t->sum), fedc_free(t->present);
    memset(t, 0, sizeof *t);
}

/* -------------------------------------------------------------- lexing -- */

/* A line of the file: text[begin, end) without its newline, and its number. */
typedef struct csv_line {
    const char *begin, *end;
    int64_t number;
} csv_line;

/* The next line at or after *pos (NULL at the end of the text). */
static bool next_line(const char *text, size_t len, size_t *pos, int64_t *number, csv_line *line) {
    if (*pos >= len) return false;
    const char *start = text + *pos, *nl = memchr(start, '\n', len - *pos);
    const char *end = nl ? nl : text + len;
    *pos = (size_t)(end - text) + (nl ? 1 : 0);
    *line = (csv_line){start, end > start && end[-1] == '\r' ? end - 1 : end, ++*number};
    return true;
}

static bool line_blank(const csv_line *l) {
    for (const char *p = l->begin; p < l->end; p++)
        if (!isspace((unsigned char)*p)) return false;
    return true;
}

static int64_t count_fields(const csv_line *l) {
    int64_t n = 1;
    for (const char *p = l->begin; p < l->end; p++) n += *p == ',';
    return n;
}

typedef enum field_kind { FIELD_NUMBER, FIELD_MISSING, FIELD_TEXT } field_kind;

/* Classifies the field [b, e) (surrounding spaces ignored) and parses a number.
 * strtod stops at the ',' or newline that ends the field, so it never reads past
 * it; "nan" and "inf" parse but are not data, so they count as text. */
static field_kind parse_field(const char *b, const char *e, double *value) {
    while (b < e && isspace((unsigned char)*b)) b++;
    while (e > b && isspace((unsigned char)e[-1])) e--;
    if (b == e || (e - b == 1 && *b == '?')) return FIELD_MISSING;
    char *stop;
    *value = strtod(b, &stop);
    return stop == e && isfinite(*value) ? FIELD_NUMBER : FIELD_TEXT;
}

/* True if some field of the line is text: then a first line is a header. */
static bool has_text_field(const csv_line *l) {
    for (const char *b = l->begin; b <= l->end;) {
        const char *e = memchr(b, ',', (size_t)(l->end - b));
        if (!e) e = l->end;
        double v;
        if (parse_field(b, e, &v) == FIELD_TEXT) return true;
        b = e + 1;
    }
    return false;
}

/* ------------------------------------------------------------- parsing -- */

static fedc_status table_alloc(csv_table *t, int64_t max_rows, int64_t cols, const char *path) {
    size_t f = (size_t)(cols - 1), r = (size_t)(max_rows ? max_rows : 1);
    t->cols = cols;
    t->x = fedc_malloc(r * f * sizeof *t->x);
    t->missing = fedc_malloc(r * f);
    t->y = fedc_malloc(r * sizeof *t->y);
    t->sum = fedc_calloc(f, sizeof *t->sum);
    t->present = fedc_calloc(f, sizeof *t->present);
    if (t->x && t->missing && t->y && t->sum && t->present) return FEDC_OK;
    table_free(t);
    return fedc_error(FEDC_ENOMEM, "%s: out of memory for %lld rows of %lld columns", path, (long long)max_rows,
                      (long long)cols);
}

/* The label: present and an integer that fits i32. */
static fedc_status parse_label(field_kind kind, double v, const char *path, const csv_line *l, int32_t *y) {
    if (kind == FIELD_MISSING)
        return fedc_error(FEDC_EPARSE, "%s:%lld: the label (the last field) is missing", path, (long long)l->number);
    if (v != floor(v) || v < INT32_MIN || v > INT32_MAX)
        return fedc_error(FEDC_EPARSE, "%s:%lld: the label %g (the last field) is not a 32-bit integer", path,
                          (long long)l->number, v);
    *y = (int32_t)v;
    return FEDC_OK;
}

/* Parses one data row into row t->rows of the table. */
static fedc_status parse_row(csv_table *t, const csv_line *l, const char *path) {
    int64_t got = count_fields(l), f = t->cols - 1, r = t->rows;
    if (got != t->cols)
        return fedc_error(FEDC_EPARSE, "%s:%lld: %lld fields, but line %lld has %lld", path, (long long)l->number,
                          (long long)got, (long long)t->cols_line, (long long)t->cols);
    const char *b = l->begin;
    for (int64_t c = 0; c < t->cols; c++) {
        const char *e = memchr(b, ',', (size_t)(l->end - b));
        if (!e) e = l->end;
        double v = 0;
        field_kind kind = parse_field(b, e, &v);
        if (kind == FIELD_TEXT)
            return fedc_error(FEDC_EPARSE, "%s:%lld: field %lld (\"%.*s\") is not a number", path,
                              (long long)l->number, (long long)c + 1, (int)(e - b < 40 ? e - b : 40), b);
        if (c == f) return parse_label(kind, v, path, l, &t->y[r]);
        t->missing[r * f + c] = kind == FIELD_MISSING;
        t->x[r * f + c] = (float)v;
        if (kind == FIELD_NUMBER) t->sum[c] += v, t->present[c]++;
        b = e + 1;
    }
    return FEDC_OK;
}

/* Replaces each missing x by its column's mean over the present values. */
static void impute(csv_table *t) {
    int64_t f = t->cols - 1;
    for (int64_t c = 0; c < f; c++) {
        float mean = t->present[c] ? (float)(t->sum[c] / (double)t->present[c]) : 0.0f;
        for (int64_t r = 0; r < t->rows; r++)
            if (t->missing[r * f + c]) t->x[r * f + c] = mean;
    }
}

/* The first non-blank line sets the column count (and is skipped if a header). */
static fedc_status first_line(const char *text, size_t len, size_t *pos, int64_t *number, csv_line *l,
                              bool *header, const char *path) {
    bool found = false;
    while (!found && next_line(text, len, pos, number, l)) found = !line_blank(l);
    if (!found) return fedc_error(FEDC_EPARSE, "%s: empty file (no rows)", path);
    int64_t cols = count_fields(l);
    if (cols < 2)
        return fedc_error(FEDC_EPARSE, "%s:%lld: one column; need at least one feature and the label", path,
                          (long long)l->number);
    *header = has_text_field(l);
    return FEDC_OK;
}

/* Parses a whole file's text. */
static fedc_status parse_table(const char *text, size_t len, const char *path, csv_table *t) {
    memset(t, 0, sizeof *t);
    size_t pos = 0;
    int64_t number = 0, max_rows = 1;
    for (size_t i = 0; i < len; i++) max_rows += text[i] == '\n';
    csv_line l = {NULL, NULL, 0};
    bool header = false;
    fedc_status st = first_line(text, len, &pos, &number, &l, &header, path);
    if (!st) st = table_alloc(t, max_rows, count_fields(&l), path);
    t->cols_line = l.number;
    bool have = !st && !header; /* a first line that is data is row 0 */
    while (!st && (have || next_line(text, len, &pos, &number, &l))) {
        have = false;
        if (line_blank(&l)) continue;
        st = parse_row(t, &l, path);
        if (!st) t->rows++;
    }
    if (!st && t->rows == 0) st = fedc_error(FEDC_EPARSE, "%s: a header and no data rows", path);
    if (st) {
        table_free(t);
        return st;
    }
    impute(t);
    return FEDC_OK;
}

static fedc_status parse_file(const char *dir, const char *name, csv_table *t) {
    memset(t, 0, sizeof *t);
    char *path = fedc__path_join(dir, name), *text = NULL;
    size_t len = 0;
    fedc_status st = path ? fedc__read_file(path, &text, &len) : fedc_error(FEDC_ENOMEM, "%s: out of memory", dir);
    if (!st) st = parse_table(text, len, path, t);
    fedc_free(text);
    fedc_free(path);
    return st;
}

/* -------------------------------------------------------------- reader -- */

typedef struct csv_source {
    char *dir;
    char **files;
    int64_t n;
} csv_source;

static void csv_destroy(void *impl) {
    csv_source *s = impl;
    if (!s) return;
    fedc__free_names(s->files, s->n);
    fedc_free(s->dir);
    fedc_free(s);
}

/* Hands an array to the client as a feature; it owns `data` after, even on failure. */
static fedc_status adopt(fedc_client_data *c, const char *name, fedc_dtype dt, int rank, int64_t cols, void *data) {
    fedc_feature f = {fedc__strdup(name), FEDC_FEATURE_ARRAY,
                      fedc_type_make(dt, rank, (int64_t[]){c->num_examples, cols}), data, NULL};
    if (!f.name) {
        fedc_free(data);
        return fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory", c->id);
    }
    return fedc_client_adopt_feature(c, &f);
}

/* Moves the table's arrays into the client as "x", "y" and "missing". */
static fedc_status adopt_table(fedc_client_data *c, csv_table *t) {
    void *x = t->x, *y = t->y, *missing = t->missing;
    t->x = NULL, t->y = NULL, t->missing = NULL;
    fedc_status st = adopt(c, "x", FEDC_F32, 2, t->cols - 1, x);
    if (st) fedc_free(y);
    if (!st) st = adopt(c, "y", FEDC_I32, 1, 0, y);
    if (st) fedc_free(missing);
    return st ? st : adopt(c, "missing", FEDC_U8, 2, t->cols - 1, missing);
}

static fedc_status csv_load(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    const csv_source *s = ds->impl;
    csv_table t;
    fedc_status st = parse_file(s->dir, s->files[i], &t);
    if (!st) st = fedc_client_data_create(out, ds->ids[i], t.rows);
    if (!st) st = adopt_table(*out, &t);
    table_free(&t);
    if (st) {
        fedc_client_data_destroy(*out);
        *out = NULL;
    }
    return st;
}

static const fedc__dataset_ops csv_ops = {csv_load, csv_destroy};

/* The client id of a file: its name less ".csv"/".data" and a leading "processed.". */
static char *client_id(const char *name) {
    char *id = fedc__strdup(name);
    if (!id) return NULL;
    *strrchr(id, '.') = '\0'; /* every listed name ends in one of the suffixes */
    static const char prefix[] = "processed.";
    size_t p = sizeof prefix - 1;
    if (strncmp(id, prefix, p) == 0 && id[p]) memmove(id, id + p, strlen(id + p) + 1);
    return id;
}

/* Parses every file for its row count, checks the files agree on the columns and
 * give distinct ids, and fills the index. */
static fedc_status index_files(fedc_dataset *ds, const csv_source *s) {
    int64_t cols = 0;
    fedc_status st = FEDC_OK;
    for (int64_t i = 0; !st && i < s->n; i++) {
        csv_table t;
        st = parse_file(s->dir, s->files[i], &t);
        if (!st && i > 0 && t.cols != cols)
            st = fedc_error(FEDC_EPARSE, "%s/%s: %lld columns, but %s has %lld", s->dir, s->files[i],
                            (long long)t.cols, s->files[0], (long long)cols);
        cols = t.cols;
        char *id = st ? NULL : client_id(s->files[i]);
        if (!st && !id) st = fedc_error(FEDC_ENOMEM, "%s: out of memory", s->dir);
        int64_t other;
        if (!st && fedc_dataset_find(ds, id, &other) == FEDC_OK)
            st = fedc_error(FEDC_EINVAL, "%s: %s and %s both name client \"%s\"", s->dir, s->files[other],
                            s->files[i], id);
        if (!st) st = fedc__dataset_add_client(ds, id, t.rows);
        fedc_free(id);
        table_free(&t);
    }
    return st;
}

fedc_status fedc__open_csv(fedc_dataset **out, const char *dir) {
    *out = NULL;
    static const char *const suffixes[] = {".csv", ".data", NULL};
    csv_source *s = fedc_calloc(1, sizeof *s);
    if (!s) return fedc_error(FEDC_ENOMEM, "%s: out of memory", dir);
    s->dir = fedc__strdup(dir);
    fedc_status st = s->dir ? fedc__dir_files(dir, suffixes, ".csv or .data", &s->files, &s->n)
                            : fedc_error(FEDC_ENOMEM, "%s: out of memory", dir);
    if (st) {
        csv_destroy(s);
        return st;
    }
    st = fedc__dataset_create(out, &csv_ops, FEDC_FORMAT_CSV, dir, s);
    if (!st) st = index_files(*out, s);
    if (st) {
        fedc_dataset_destroy(*out);
        *out = NULL;
    }
    return st;
}
