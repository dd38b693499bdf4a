/* Text reader: a directory of .txt files, one client per file (named by the file
 * name without ".txt"), with one example per non-blank line in feature "text"
 * (FEDC_FEATURE_STRINGS). This is how TFF builds Shakespeare from LEAF's raw
 * by_play_and_character files: a client per speaking role, its examples that
 * role's lines. The index (a pass over every file counting its lines) is built at
 * open; a client's file is read again when it is loaded. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"

/* -------------------------------------------------------------- lines -- */

/* Blank = nothing but spaces, tabs and CRs: such a line carries no text. */
static bool blank(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\v' && s[i] != '\f') return false;
    return true;
}

/* Compacts the non-blank lines of buf[0, len) to its front, each without its
 * "\n" (or "\r\n"), and writes their offsets (if `offsets`); returns how many.
 * Lines are kept verbatim otherwise: the raw Shakespeare text indents some
 * lines and that is part of the text. */
static int64_t compact_lines(char *buf, size_t len, int64_t *offsets) {
    int64_t count = 0;
    size_t w = 0;
    if (offsets) offsets[0] = 0;
    for (size_t start = 0; start < len;) {
        const char *nl = memchr(buf + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - buf) : len, next = nl ? end + 1 : len;
        size_t line = end - start;
        if (line > 0 && buf[end - 1] == '\r') line--;
        if (!blank(buf + start, line)) {
            if (offsets) {
                memmove(buf + w, buf + start, line);
                w += line;
                offsets[count + 1] = (int64_t)w;
            }
            count++;
        }
        start = next;
    }
    return count;
}

/* ------------------------------------------------------------- reader -- */

typedef struct text_source {
    char *dir;
    char **files;
    int64_t n;
} text_source;

static void text_destroy(void *impl) {
    text_source *s = impl;
    if (!s) return;
    fedc__free_names(s->files, s->n);
    fedc_free(s->dir);
    fedc_free(s);
}

/* Reads a file and builds its "text" feature in the file's own buffer. */
static fedc_status text_feature(const char *path, fedc_feature *f, int64_t *count) {
    char *buf;
    size_t len;
    fedc_status st = fedc__read_file(path, &buf, &len);
    if (st) return st;
    *count = compact_lines(buf, len, NULL);
    int64_t n = *count;
    *f = (fedc_feature){fedc__strdup("text"), FEDC_FEATURE_STRINGS, fedc_type_make(FEDC_U8, 1, &n), buf,
                        fedc_malloc((size_t)(n + 1) * sizeof(int64_t))};
    if (!f->name || !f->offsets) {
        fedc_free(f->name), fedc_free(f->data), fedc_free(f->offsets);
        return fedc_error(FEDC_ENOMEM, "%s: out of memory for %lld lines", path, (long long)n);
    }
    compact_lines(buf, len, f->offsets);
    return FEDC_OK;
}

static fedc_status text_load(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    const text_source *s = ds->impl;
    char *path = fedc__path_join(s->dir, s->files[i]);
    if (!path) return fedc_error(FEDC_ENOMEM, "%s: out of memory", s->dir);
    fedc_feature f;
    int64_t n;
    fedc_status st = text_feature(path, &f, &n);
    fedc_free(path);
    if (st) return st;
    st = fedc_client_data_create(out, ds->ids[i], n);
    if (st) {
        fedc_free(f.name), fedc_free(f.data), fedc_free(f.offsets);
        return st;
    }
    st = fedc_client_adopt_feature(*out, &f);
    if (st) {
        fedc_client_data_destroy(*out);
        *out = NULL;
    }
    return st;
}

static const fedc__dataset_ops text_ops = {text_load, text_destroy};

/* Counts a file's non-blank lines for the index. */
static fedc_status count_lines(const char *dir, const char *name, int64_t *count) {
    char *path = fedc__path_join(dir, name), *buf = NULL;
    size_t len = 0;
    fedc_status st = path ? fedc__read_file(path, &buf, &len) : fedc_error(FEDC_ENOMEM, "%s: out of memory", dir);
    if (!st) *count = compact_lines(buf, len, NULL);
    fedc_free(buf);
    fedc_free(path);
    return st;
}

/* Adds the files to the index, each named by its file name less ".txt". */
static fedc_status index_files(fedc_dataset *ds, const text_source *s) {
    fedc_status st = FEDC_OK;
    for (int64_t i = 0; !st && i < s->n; i++) {
        int64_t lines = 0;
        st = count_lines(s->dir, s->files[i], &lines);
        size_t stem = strlen(s->files[i]) - strlen(".txt");
        char *id = st ? NULL : fedc__strdup(s->files[i]);
        if (!st && !id) st = fedc_error(FEDC_ENOMEM, "%s: out of memory", s->dir);
        if (id) id[stem] = '\0';
        if (!st) st = fedc__dataset_add_client(ds, id, lines);
        fedc_free(id);
    }
    return st;
}

fedc_status fedc__open_text(fedc_dataset **out, const char *dir) {
    *out = NULL;
    static const char *const suffixes[] = {".txt", NULL};
    text_source *s = fedc_calloc(1, sizeof *s);
    if (!s) return fedc_error(FEDC_ENOMEM, "%s: out of memory", dir);
    s->dir = fedc__strdup(dir);
    fedc_status st = s->dir ? fedc__dir_files(dir, suffixes, ".txt", &s->files, &s->n)
                            : fedc_error(FEDC_ENOMEM, "%s: out of memory", dir);
    if (st) {
        text_destroy(s);
        return st;
    }
    st = fedc__dataset_create(out, &text_ops, FEDC_FORMAT_TEXT, dir, s);
    if (!st) st = index_files(*out, s);
    if (st) {
        fedc_dataset_destroy(*out);
        *out = NULL;
    }
    return st;
}
