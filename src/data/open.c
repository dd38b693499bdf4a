/* Opening a dataset: the table of readers, which drives format names, detection
 * from a path, the dispatch to the readers, and the list the CLI's help shows.
 * A new format is one row here, its reader (src/data/read_<name>.c, declared in
 * data/dataset.h) and its value in fedc_data_format (fedc/data.h). The rows of
 * formats whose readers need libraries of their own (HDF5, SQLite) name a library
 * and have no reader until that library gives it (fedc__data_set_reader), so
 * that libfedc needs none of those libraries. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"

typedef struct reader {
    fedc_data_format format;
    const char *name;             /* as --format takes it */
    const char *suffixes[3];      /* a file of this format ends so (NULL-terminated) */
    const char *name_contains[3]; /* ... or its name holds one of these */
    bool directory;               /* tried in table order on a directory */
    fedc_status (*open)(fedc_dataset **out, const char *path);
    const char *library;          /* the reader's, when it is not libfedc's (NULL until it registers) */
} reader;

/* Not const: the optional libraries fill in their rows' readers. */
static reader readers[] = {
    {FEDC_FORMAT_LEAF, "leaf", {".json", ".json.gz"}, {NULL}, true, fedc__open_leaf, NULL},
    {FEDC_FORMAT_TFF, "tff", {".h5", ".hdf5"}, {NULL}, false, NULL, "libfedc_formats"},
    {FEDC_FORMAT_FEDJAX, "fedjax", {".sqlite", ".db"}, {NULL}, false, NULL, "libfedc_formats"},
    {FEDC_FORMAT_IDX, "idx", {NULL}, {"idx", "ubyte"}, false, fedc__open_idx, NULL},
    {FEDC_FORMAT_CSV, "csv", {NULL}, {NULL}, true, fedc__open_csv, NULL},
    {FEDC_FORMAT_TEXT, "text", {NULL}, {NULL}, true, fedc__open_text, NULL},
    {FEDC_FORMAT_CIFAR10, "cifar10", {NULL}, {"data_batch", "test_batch"}, true, fedc__open_cifar10, NULL},
};
enum { NREADERS = (int)(sizeof readers / sizeof *readers) };

static reader *reader_of(fedc_data_format f) {
    for (int i = 0; i < NREADERS; i++)
        if (readers[i].format == f) return &readers[i];
    return NULL;
}

void fedc__data_set_reader(fedc_data_format format, fedc_status (*open)(fedc_dataset **out, const char *path)) {
    reader *r = reader_of(format);
    if (r) r->open = open;
}

/* Opens path with r's reader, or says which library has it. */
static fedc_status open_with(const reader *r, fedc_dataset **out, const char *path) {
    if (r->open) return r->open(out, path);
    return fedc_error(FEDC_EUNSUPPORTED, "%s: the %s reader is in %s, which this program lacks: this fedc was built "
                      "without it (cmake -DFEDC_FORMATS=ON builds it), or the program did not call "
                      "fedc_formats_register() (fedc/formats.h)", path, r->name, r->library);
}

const char *fedc_data_format_name(fedc_data_format f) {
    if (f == FEDC_FORMAT_AUTO) return "auto";
    if (f == FEDC_FORMAT_MEMORY) return "memory";
    const reader *r = reader_of(f);
    return r ? r->name : "?";
}

/* The readers' names joined by sep, the last two by last ("a|b|c", "a, b or c"). */
static const char *joined_names(char *buf, size_t size, const char *sep, const char *last) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < NREADERS && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i == 0 ? "" : i == NREADERS - 1 ? last : sep, readers[i].name);
    return buf;
}

const char *fedc_data_formats(void) {
    static _Thread_local char list[128]; /* per thread: no race to fill it */
    return list[0] ? list : joined_names(list, sizeof list, "|", "|");
}

fedc_status fedc_data_format_parse(const char *name, fedc_data_format *out) {
    if (strcmp(name, "auto") == 0) {
        *out = FEDC_FORMAT_AUTO;
        return FEDC_OK;
    }
    for (int i = 0; i < NREADERS; i++)
        if (strcmp(name, readers[i].name) == 0) {
            *out = readers[i].format;
            return FEDC_OK;
        }
    char names[128];
    return fedc_error(FEDC_EINVAL, "unknown data format \"%s\" (use %s)", name,
                      joined_names(names, sizeof names, ", ", " or "));
}

/* ----------------------------------------------------------- detection -- */

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool names_file(const reader *r, const char *path) {
    for (int k = 0; k < 3 && r->suffixes[k]; k++)
        if (has_suffix(path, r->suffixes[k])) return true;
    for (int k = 0; k < 3 && r->name_contains[k]; k++)
        if (strstr(path, r->name_contains[k])) return true;
    return false;
}

/* What a file's name may look like, for the error that cannot tell. */
static const char *file_names(char *buf, size_t size) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < NREADERS; i++) {
        for (int k = 0; k < 3 && readers[i].suffixes[k] && n < size; k++)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", readers[i].suffixes[k]);
        for (int k = 0; k < 3 && readers[i].name_contains[k] && n < size; k++)
            n += (size_t)snprintf(buf + n, size - n, "%sa name with \"%s\" (%s)", n ? ", " : "",
                                  readers[i].name_contains[k], readers[i].name);
    }
    return buf;
}

/* The reader for a file, from its name; NULL with the message set if no name fits. */
static const reader *detect_file(const char *path) {
    for (int i = 0; i < NREADERS; i++)
        if (names_file(&readers[i], path)) return &readers[i];
    char names[256];
    fedc_error(FEDC_EUNSUPPORTED, "%s: cannot tell the format from the name (expected %s); pass the format", path,
               file_names(names, sizeof names));
    return NULL;
}

/* A directory: each directory reader in turn, until one finds its files. */
static fedc_status open_directory(fedc_dataset **out, const char *path) {
    for (int i = 0; i < NREADERS; i++) {
        if (!readers[i].directory || !readers[i].open) continue;
        fedc_status st = readers[i].open(out, path);
        if (st != FEDC_ENOTFOUND) return st;
    }
    return fedc_error(FEDC_EUNSUPPORTED, "%s: a directory without LEAF .json[.gz], .csv or .txt files or CIFAR-10's "
                      "data_batch_1; pass the format", path);
}

fedc_status fedc_dataset_open(fedc_dataset **out, const char *path, fedc_data_format format) {
    *out = NULL;
    if (format == FEDC_FORMAT_AUTO) {
        struct stat st;
        if (stat(path, &st) != 0) return fedc_error(FEDC_EIO, "%s: no such file or directory", path);
        if (!S_ISREG(st.st_mode)) return open_directory(out, path);
        const reader *r = detect_file(path);
        return r ? open_with(r, out, path) : FEDC_EUNSUPPORTED;
    }
    const reader *r = reader_of(format);
    if (!r) return fedc_error(FEDC_EINVAL, "%s: cannot open a dataset of format %s", path, fedc_data_format_name(format));
    return open_with(r, out, path);
}
