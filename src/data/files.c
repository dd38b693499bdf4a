/* Files and directories for the readers: joining paths, reading a whole file,
 * and listing a directory's files by suffix in sorted order. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"

char *fedc__path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = fedc_malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* The whole file, NUL-terminated (the NUL not counted in *len), so parsers can
 * stop at it. */
fedc_status fedc__read_file(const char *path, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = fedc_malloc(cap + 1);
    fedc_status st = buf ? FEDC_OK : fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    while (!st) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *grown = fedc_realloc(buf, 2 * cap + 1);
        if (!grown) st = fedc_error(FEDC_ENOMEM, "%s: out of memory for %zu bytes", path, 2 * cap);
        else buf = grown, cap *= 2;
    }
    if (!st && ferror(f)) st = fedc_error(FEDC_EIO, "%s: read error after %zu bytes", path, n);
    fclose(f);
    if (st) {
        fedc_free(buf);
        return st;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return FEDC_OK;
}

void fedc__free_names(char **names, int64_t count) {
    for (int64_t i = 0; names && i < count; i++) fedc_free(names[i]);
    fedc_free(names);
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0; /* ".txt" alone is not a name */
}

/* 1 if `name` is a regular file of `dir` ending in one of `suffixes`, 0 if not,
 * -1 when out of memory (which must not pass for "not wanted"). */
static int wanted(const char *dir, const char *name, const char *const *suffixes) {
    bool match = false;
    for (int i = 0; suffixes[i] && !match; i++) match = has_suffix(name, suffixes[i]);
    if (!match || name[0] == '.') return 0; /* hidden files (editor backups, ._ forks) are not data */
    char *path = fedc__path_join(dir, name);
    if (!path) return -1;
    struct stat st;
    bool regular = stat(path, &st) == 0 && S_ISREG(st.st_mode); /* stat: a link to a file counts */
    fedc_free(path);
    return regular;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static fedc_status append_name(char ***names, int64_t *count, int64_t *cap, const char *name, const char *dir) {
    if (*count == *cap) {
        int64_t grown_cap = *cap ? 2 * *cap : 64;
        char **grown = fedc_realloc(*names, (size_t)grown_cap * sizeof *grown);
        if (!grown) return fedc_error(FEDC_ENOMEM, "%s: out of memory listing the directory", dir);
        *names = grown;
        *cap = grown_cap;
    }
    char *copy = fedc__strdup(name);
    if (!copy) return fedc_error(FEDC_ENOMEM, "%s: out of memory listing the directory", dir);
    (*names)[(*count)++] = copy;
    return FEDC_OK;
}

/* The regular files of `dir` whose names end in one of `suffixes` (a NULL-ended
 * list), sorted bytewise (strcmp), so the client order does not depend on the
 * file system or the locale. FEDC_ENOTFOUND when there are none (the
 * auto-detection in open.c tries the next reader then); `what` names them in
 * that message. */
fedc_status fedc__dir_files(const char *dir, const char *const *suffixes, const char *what, char ***names,
                            int64_t *count) {
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return fedc_error(FEDC_EIO, "%s: cannot read the directory: %s", dir, strerror(errno));
    int64_t cap = 0;
    fedc_status st = FEDC_OK;
    for (struct dirent *e; !st && (e = readdir(d));) {
        int w = wanted(dir, e->d_name, suffixes);
        if (w < 0) st = fedc_error(FEDC_ENOMEM, "%s: out of memory listing the directory", dir);
        else if (w) st = append_name(names, count, &cap, e->d_name, dir);
    }
    closedir(d);
    if (!st && *count == 0) st = fedc_error(FEDC_ENOTFOUND, "%s: no %s files", dir, what);
    if (st) {
        fedc__free_names(*names, *count);
        *names = NULL;
        *count = 0;
        return st;
    }
    qsort(*names, (size_t)*count, sizeof **names, compare_names);
    return FEDC_OK;
}
