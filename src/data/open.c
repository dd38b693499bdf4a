/* Opening a dataset: format detection and the dispatch to the readers. */
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Guesses a format from the path: file suffixes, or for a directory, what it holds
 * (decided by the readers, which are tried in turn). */
static fedc_status detect(const char *path, fedc_data_format *out) {
    struct stat st;
    if (stat(path, &st) != 0) return fedc_error(FEDC_EIO, "%s: no such file or directory", path);
    if (S_ISREG(st.st_mode)) {
        if (has_suffix(path, ".json") || has_suffix(path, ".json.gz")) *out = FEDC_FORMAT_LEAF;
        else if (has_suffix(path, ".h5") || has_suffix(path, ".hdf5")) *out = FEDC_FORMAT_TFF;
        else if (has_suffix(path, ".sqlite") || has_suffix(path, ".db")) *out = FEDC_FORMAT_FEDJAX;
        else if (strstr(path, "idx") || strstr(path, "ubyte")) *out = FEDC_FORMAT_IDX;
        else
            return fedc_error(FEDC_EUNSUPPORTED, "%s: cannot tell the format from the name (expected .json[.gz], "
                              ".h5, .sqlite or an IDX file); pass the format", path);
        return FEDC_OK;
    }
    *out = FEDC_FORMAT_AUTO; /* a directory: the caller tries the directory readers */
    return FEDC_OK;
}

typedef fedc_status (*open_fn)(fedc_dataset **out, const char *path);

static open_fn opener(fedc_data_format f) {
    switch (f) {
    case FEDC_FORMAT_LEAF: return fedc__open_leaf;
    case FEDC_FORMAT_TFF: return fedc__open_tff;
    case FEDC_FORMAT_FEDJAX: return fedc__open_fedjax;
    case FEDC_FORMAT_IDX: return fedc__open_idx;
    case FEDC_FORMAT_CSV: return fedc__open_csv;
    case FEDC_FORMAT_TEXT: return fedc__open_text;
    default: return NULL;
    }
}

fedc_status fedc_dataset_open(fedc_dataset **out, const char *path, fedc_data_format format) {
    *out = NULL;
    if (format == FEDC_FORMAT_MEMORY || (unsigned)format >= FEDC_FORMAT_COUNT)
        return fedc_error(FEDC_EINVAL, "%s: cannot open a dataset of format %s", path, fedc_data_format_name(format));
    if (format == FEDC_FORMAT_AUTO) {
        fedc_status st = detect(path, &format);
        if (st) return st;
    }
    if (format != FEDC_FORMAT_AUTO) return opener(format)(out, path);
    /* A directory: LEAF JSON files, then CSV files, then text files. */
    static const fedc_data_format order[] = {FEDC_FORMAT_LEAF, FEDC_FORMAT_CSV, FEDC_FORMAT_TEXT};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        fedc_status st = opener(order[i])(out, path);
        if (st != FEDC_ENOTFOUND) return st;
    }
    return fedc_error(FEDC_EUNSUPPORTED, "%s: a directory without LEAF .json[.gz], .csv or .txt files; pass the format",
                      path);
}

