/* Which group each training client is in (fedc_train_client_groups; fedc train
 * --groups N, --groups dirichlet:N:ALPHA, --groups-file FILE):
 *
 *   contiguous   client i of the data's order in group g when start_g <= i <
 *                start_{g+1}, the sizes as equal as can be, the first P mod N
 *                groups one client larger
 *   dirichlet    the groups' shares of the clients Dir(ALPHA) (src/data/partition.c)
 *   file         "client_id,group" lines: every training client exactly once, the
 *                groups whole numbers in [0, N) (N: --groups, or the largest + 1);
 *                a first line "client_id,group" and lines starting with '#' are
 *                skipped
 *
 * A file's errors say FILE:LINE, so that a partition of thousands of clients is
 * fixed where it is wrong. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl/fl.h"

typedef struct line_entry {
    const char *id; /* into the file's text */
    long group;
    size_t line;
} line_entry;

static int by_id(const void *a, const void *b) {
    return strcmp(((const line_entry *)a)->id, ((const line_entry *)b)->id);
}

fedc_status fedc__parse_client_line(const char *path, size_t line, char *text, const char *what, long top,
                                    const char *hint, const char **id, long *value) {
    char *comma = strrchr(text, ',');
    if (!comma || comma == text)
        return fedc_error(FEDC_EPARSE, "%s:%zu: expected \"client_id,%s\", not \"%s\"", path, line, what, text);
    *comma = 0;
    char *end;
    errno = 0;
    long v = strtol(comma + 1, &end, 10);
    while (*end == ' ' || *end == '\t') end++;
    if (errno || end == comma + 1 || *end || v < 0 || v > top)
        return fedc_error(FEDC_EPARSE, "%s:%zu: client \"%s\": the %s \"%s\" is not a whole number in [0, %ld]%s",
                          path, line, text, what, comma + 1, top, hint);
    *id = text, *value = v;
    return FEDC_OK;
}

/* One "client_id,group" line into e. `groups` 0: any whole number from 0. */
static fedc_status parse_line(const char *path, size_t line, char *text, int groups, line_entry *e) {
    *e = (line_entry){.line = line};
    return fedc__parse_client_line(path, line, text, "group", groups ? groups - 1 : INT_MAX - 1,
                                   groups ? " (--groups)" : "", &e->id, &e->group);
}

/* The whole file into *text (NUL-terminated), its bytes in *size. */
static fedc_status read_text(const char *path, char **text, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return fedc_error(FEDC_EIO, "--groups-file %s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0, got;
    char *buf = fedc_malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *bigger = fedc_realloc(buf, cap *= 2);
            if (!bigger) fedc_free(buf);
            buf = bigger;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf) return fedc_error(FEDC_ENOMEM, "--groups-file %s: out of memory", path);
    if (bad) return fedc_free(buf), fedc_error(FEDC_EIO, "--groups-file %s: cannot read", path);
    buf[n] = 0;
    *text = buf, *size = n;
    return FEDC_OK;
}

/* The file's lines, sorted by id, pointing into *text (which the caller frees). */
static fedc_status read_lines(const char *path, int groups, char **text, line_entry **out, size_t *count) {
    size_t size = 0;
    fedc_status st = read_text(path, text, &size);
    if (st) return st;
    size_t cap = 1;
    for (size_t i = 0; i < size; i++) cap += (*text)[i] == '\n';
    line_entry *e = fedc_malloc(cap * sizeof *e);
    if (!e) return fedc_error(FEDC_ENOMEM, "--groups-file %s: out of memory for %zu lines", path, cap);
    size_t n = 0, line = 0;
    for (char *at = *text, *next; !st && at < *text + size; at = next) {
        line++;
        char *nl = memchr(at, '\n', (size_t)(*text + size - at));
        next = nl ? nl + 1 : *text + size;
        char *stop = nl ? nl : *text + size;
        while (stop > at && (stop[-1] == '\r' || stop[-1] == ' ')) stop--;
        *stop = 0;
        if (at == stop || at[0] == '#' || (line == 1 && !strcmp(at, "client_id,group"))) continue;
        st = parse_line(path, line, at, groups, &e[n]);
        if (!st) n++;
    }
    if (st) return fedc_free(e), st;
    qsort(e, n, sizeof *e, by_id);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(e[i].id, e[i - 1].id)) {
            size_t first = e[i].line < e[i - 1].line ? e[i].line : e[i - 1].line;
            size_t again = e[i].line < e[i - 1].line ? e[i - 1].line : e[i].line;
            st = fedc_error(FEDC_EINVAL, "%s:%zu: client \"%s\" again (its first line is %zu); a client is in one "
                            "group", path, again, e[i].id, first);
            fedc_free(e);
            return st;
        }
    *out = e, *count = n;
    return FEDC_OK;
}

/* Every training client's group from the file; each line's client must be one of
 * the data's (each of which has a line). */
static fedc_status from_file(const fedc_train_config *c, const fedc_dataset *train, int32_t *group_of, int *groups) {
    const char *path = c->groups_file;
    char *text = NULL;
    line_entry *e = NULL;
    size_t n = 0;
    fedc_status st = read_lines(path, c->groups, &text, &e, &n);
    int64_t clients = fedc_dataset_num_clients(train);
    uint8_t *used = st ? NULL : fedc_calloc(n ? n : 1, 1);
    if (!st && !used) st = fedc_error(FEDC_ENOMEM, "--groups-file %s: out of memory", path);
    long top = -1;
    for (int64_t i = 0; !st && i < clients; i++) {
        line_entry key = {.id = fedc_dataset_client_id(train, i)};
        const line_entry *hit = n ? bsearch(&key, e, n, sizeof *e, by_id) : NULL;
        if (!hit) {
            st = fedc_error(FEDC_EINVAL, "%s: client \"%s\" of the data has no line; every training client needs a "
                            "group", path, key.id);
            break;
        }
        used[hit - e] = 1;
        group_of[i] = (int32_t)hit->group;
        if (hit->group > top) top = hit->group;
    }
    for (size_t k = 0; !st && k < n; k++)
        if (!used[k]) { /* the first in the file of the lines no client took */
            size_t first = k;
            for (size_t j = k + 1; j < n; j++)
                if (!used[j] && e[j].line < e[first].line) first = j;
            st = fedc_error(FEDC_EINVAL, "%s:%zu: client \"%s\" is not a client of the training data", path,
                            e[first].line, e[first].id);
        }
    if (!st) *groups = c->groups ? c->groups : (int)top + 1;
    fedc_free(used), fedc_free(e), fedc_free(text);
    return st;
}

fedc_status fedc_train_client_groups(const fedc_train_config *c, const fedc_dataset *train, int32_t *group_of,
                                     int *groups) {
    int64_t clients = fedc_dataset_num_clients(train);
    *groups = 0;
    if (c->groups < 0) return fedc_error(FEDC_EINVAL, "train: --groups %d; use 1 or more", c->groups);
    if (c->groups_file) {
        if (c->groups_alpha > 0)
            return fedc_error(FEDC_EINVAL, "train: --groups-file gives the groups; a Dirichlet draw (--groups "
                              "dirichlet:N:ALPHA) cannot as well");
        return from_file(c, train, group_of, groups);
    }
    if (c->groups == 0) return FEDC_OK;
    fedc_status st = fedc__client_groups_drawn(clients, c->groups, c->groups_alpha, c->seed, group_of);
    if (!st) *groups = c->groups;
    return st;
}

fedc_status fedc__client_groups_drawn(int64_t clients, int n, double alpha, uint64_t seed, int32_t *group_of) {
    if (n < 1) return fedc_error(FEDC_EINVAL, "train: --groups %d; use 1 or more", n);
    if (n > clients)
        return fedc_error(FEDC_EINVAL, "train: --groups %d is more groups than the training data's %lld clients", n,
                          (long long)clients);
    if (alpha > 0) return fedc_partition_groups_dirichlet(clients, n, alpha, seed, group_of);
    for (int g = 0, i = 0; g < n; g++)
        for (int64_t k = 0; k < clients / n + (g < clients % n); k++) group_of[i++] = g;
    return FEDC_OK;
}

void fedc__order_by_group(const int32_t *group_of, int groups, int64_t *clients, int n, int64_t *scratch, int *first) {
    memset(first, 0, ((size_t)groups + 1) * sizeof *first);
    for (int i = 0; i < n; i++) first[group_of[clients[i]] + 1]++;
    for (int g = 0; g < groups; g++) first[g + 1] += first[g];
    for (int i = 0; i < n; i++) scratch[first[group_of[clients[i]]]++] = clients[i];
    for (int g = groups; g > 0; g--) first[g] = first[g - 1]; /* each moved to its group's end: back by one */
    first[0] = 0;
    memcpy(clients, scratch, (size_t)n * sizeof *clients);
}
