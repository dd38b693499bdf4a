/* The TensorFlow Federated HDF5 reader: /examples/<client>/<feature>.
 *
 * TFF's simulation datasets (EMNIST, Shakespeare, Stack Overflow, CIFAR-100) are
 * one HDF5 file with a group per client under /examples holding one dataset per
 * feature, each with a leading example axis. Opening reads metadata only: the
 * client groups, and the shape of every feature, to count each client's examples
 * and check that its features agree. A client's data is read when it is loaded, so
 * memory stays O(cohort data).
 *
 * Order: clients are listed, and a client's features added, in the order HDF5
 * iterates a group by name (H5Literate with H5_INDEX_NAME, H5_ITER_INC): increasing
 * byte-wise order of the names, so client "10" comes before client "2".
 *
 * Types: float32 (and IEEE float16) -> f32, float64 -> f64 (other float layouts,
 * such as bfloat16, are refused), uint8 -> u8, the other
 * integers -> i32 (64-bit and uint32 values are range-checked), h5py's bool enum
 * -> bool, and strings (variable or fixed length, ASCII or UTF-8, one per example)
 * -> a strings feature of the bytes as stored.
 *
 * Locking: every HDF5 call of this reader runs under one global mutex, so loads
 * run one at a time, across all TFF datasets of the process. Not every HDF5 build
 * is thread-safe (Debian's 1.10 serial build happens to be, H5_HAVE_THREADSAFE; a
 * default source build is not), and in a build without thread safety the error
 * printing the reader switches off (and restores) around its calls is a global
 * setting. Code elsewhere in the process that calls HDF5 is not covered by this
 * lock; with a thread-safe HDF5 that is fine, with another it must not overlap.
 *
 * Damage: a truncated file, a bad superblock and the like fail with an error that
 * carries HDF5's reason; a dataset whose shape declares more elements than the
 * file could hold compressed is refused before anything is allocated. libhdf5
 * (1.10.8 at least) can itself crash, hang or leak on some corrupt metadata deeper
 * in a file, which no caller of it can prevent (docs/fuzzing.md).
 */
#include <errno.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"

static pthread_mutex_t tff_lock = PTHREAD_MUTEX_INITIALIZER;

/* What the reader keeps open between loads. */
typedef struct tff_source {
    hid_t file, examples;
    uint64_t file_bytes; /* the file's size, which bounds what its datasets can hold */
} tff_source;

/* What the iteration callbacks share: where they are, and what went wrong. */
typedef struct walk {
    const char *path;
    const char *client;
    fedc_dataset *ds;      /* open: the index being built */
    fedc_client_data *out; /* load: the client being filled */
    int64_t examples;      /* the client's examples; -1 until its first feature */
    uint64_t max_elements; /* per dataset: what the file could hold compressed */
    char first[64];        /* the feature that set `examples`, for messages */
    int features;
    fedc_status st;
} walk;

/* ------------------------------------------------------ HDF5 plumbing -- */

/* HDF5 prints its error stack to stderr by default; a library must not, so the
 * printing is off while the reader works and the caller's handler comes back
 * after. A handler installed through the old H5Eset_auto1 is left alone. */
typedef struct h5_quiet {
    bool saved;
    H5E_auto2_t func;
    void *data;
} h5_quiet;

static h5_quiet h5_enter(void) {
    h5_quiet q = {false, NULL, NULL};
    pthread_mutex_lock(&tff_lock);
    unsigned v2 = 0;
    q.saved = H5Eauto_is_v2(H5E_DEFAULT, &v2) >= 0 && v2 && H5Eget_auto2(H5E_DEFAULT, &q.func, &q.data) >= 0;
    if (q.saved) H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return q;
}

static void h5_leave(h5_quiet q) {
    if (q.saved) H5Eset_auto2(H5E_DEFAULT, q.func, q.data);
    pthread_mutex_unlock(&tff_lock);
}

typedef struct h5_text {
    char s[248]; /* outer + ": " + inner */
    char outer[80], inner[160];
} h5_text;

/* Frame 0 is the API call ("can't read data"), frame 1 what it was doing ("unable
 * to read superblock"), the deepest frame the cause ("truncated file: eof = ...").
 * Frames of the plugin search (H5PL*) are left out: its failure to find a plugin
 * directory is incidental to "required filter 'lzf' is not registered". */
static herr_t note_frame(unsigned n, const H5E_error2_t *e, void *arg) {
    h5_text *t = arg;
    if (!e->desc || (e->func_name && strncmp(e->func_name, "H5PL", 4) == 0)) return 0;
    if (n == 1) snprintf(t->outer, sizeof t->outer, "%s", e->desc);
    snprintf(t->inner, sizeof t->inner, "%s", e->desc);
    return 0;
}

/* What HDF5's error stack says went wrong, for our own message. Every HDF5 API
 * call clears the stack, so this must come right after the call that failed. */
static h5_text h5_detail(void) {
    h5_text t = {.s = "no detail from HDF5"};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, note_frame, &t);
    H5Eclear2(H5E_DEFAULT);
    if (t.outer[0] && strcmp(t.outer, t.inner) != 0) snprintf(t.s, sizeof t.s, "%s: %s", t.outer, t.inner);
    else if (t.inner[0]) snprintf(t.s, sizeof t.s, "%s", t.inner);
    return t;
}

/* Opens loc/name whatever it is; *kind says what (H5I_BADID if it cannot). */
static hid_t open_object(hid_t loc, const char *name, H5I_type_t *kind) {
    hid_t id = H5Oopen(loc, name, H5P_DEFAULT);
    *kind = id < 0 ? H5I_BADID : H5Iget_type(id);
    return id;
}

static void close_object(hid_t id) {
    if (id >= 0) H5Oclose(id);
}

/* ------------------------------------------------------------ messages -- */

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static fedc_status feature_error(const walk *w, const char *feature, fedc_status st, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fedc_error(st, "%s: client \"%s\", feature \"%s\": %s", w->path, w->client, feature, what);
}

/* A failed HDF5 call on a feature; call it before any other HDF5 call. */
static fedc_status feature_h5_error(const walk *w, const char *feature, const char *doing) {
    return feature_error(w, feature, FEDC_EIO, "%s: %s", doing, h5_detail().s);
}

static fedc_status client_h5_error(const walk *w, const char *doing) {
    return fedc_error(FEDC_EIO, "%s: client \"%s\": %s: %s", w->path, w->client, doing, h5_detail().s);
}

/* An object under a client that is not a dataset (a nested group, a named type). */
static fedc_status not_dataset(const walk *w, const char *name, hid_t id) {
    if (id < 0) return feature_h5_error(w, name, "cannot open");
    return feature_error(w, name, FEDC_EPARSE, "is not a dataset (TFF's layout is /examples/<client>/<feature>)");
}

/* -------------------------------------------------------------- shapes -- */

/* Deflate compresses at most 1032:1, so a dataset stored in a file of B bytes
 * holds at most about 1032 B elements (each at least a byte); the slack covers
 * tiny files. */
enum { MAX_RATIO = 1100, MAX_SLACK = 1 << 20 };

static uint64_t max_elements(uint64_t file_bytes) {
    return file_bytes > (UINT64_MAX - MAX_SLACK) / MAX_RATIO ? UINT64_MAX : file_bytes * MAX_RATIO + MAX_SLACK;
}

/* The dataset's shape as a type (dtype set later by the caller). */
static fedc_status feature_shape(const walk *w, hid_t d, const char *name, fedc_type *type) {
    hsize_t h[FEDC_MAX_RANK];
    fedc_status st = FEDC_OK;
    hid_t space = H5Dget_space(d);
    int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
    if (rank < 0 || (rank >= 1 && rank <= FEDC_MAX_RANK && H5Sget_simple_extent_dims(space, h, NULL) < 0))
        st = feature_h5_error(w, name, "cannot read its shape");
    else if (rank == 0)
        st = feature_error(w, name, FEDC_EPARSE, "is a scalar; a feature needs a leading example axis");
    else if (rank > FEDC_MAX_RANK)
        st = feature_error(w, name, FEDC_EUNSUPPORTED, "has rank %d; at most %d dimensions are supported", rank,
                           FEDC_MAX_RANK);
    if (space >= 0) H5Sclose(space);
    if (st) return st;
    int64_t dims[FEDC_MAX_RANK];
    /* Elements are kept below limit, so that their bytes (at most 8 each) fit a size_t. */
    const uint64_t limit = ((uint64_t)SIZE_MAX < (uint64_t)INT64_MAX ? (uint64_t)SIZE_MAX : (uint64_t)INT64_MAX) / 8;
    uint64_t count = 1;
    for (int i = 0; i < rank; i++) {
        if (h[i] > (hsize_t)INT64_MAX || (h[i] && count > limit / h[i]))
            return feature_error(w, name, FEDC_EPARSE, "is too large (dimension %d is %llu)", i,
                                 (unsigned long long)h[i]);
        count *= h[i];
        dims[i] = (int64_t)h[i];
    }
    /* A shape that the file's bytes cannot hold, even compressed, is damage: read,
     * it would allocate and fill (with HDF5's fill value) that many elements. */
    if (count > w->max_elements)
        return feature_error(w, name, FEDC_EPARSE,
                             "declares %llu elements (%llu rows), more than a file of %llu bytes can hold",
                             (unsigned long long)count, (unsigned long long)h[0],
                             (unsigned long long)((w->max_elements - MAX_SLACK) / MAX_RATIO));
    *type = fedc_type_make(FEDC_U8, rank, dims);
    return FEDC_OK;
}

/* Every feature of a client has the client's number of examples. */
static fedc_status agree(walk *w, const char *name, int64_t n) {
    if (w->examples < 0) {
        w->examples = n;
        snprintf(w->first, sizeof w->first, "%s", name);
    } else if (n != w->examples) {
        const char *other = w->first[0] ? w->first : "the index";
        return feature_error(w, name, FEDC_EPARSE,
                             "has %lld examples, \"%s\" has %lld (a client's features must agree)", (long long)n,
                             other, (long long)w->examples);
    }
    w->features++;
    return FEDC_OK;
}

/* ------------------------------------------------------------- numbers -- */

/* Reads the whole dataset, converted by HDF5 to `mem`, into a new buffer. */
static fedc_status read_all(const walk *w, hid_t d, const char *name, hid_t mem, size_t bytes, void **out) {
    *out = fedc_malloc(bytes);
    if (!*out) return feature_error(w, name, FEDC_ENOMEM, "out of memory for %zu bytes", bytes);
    if (H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) >= 0) return FEDC_OK;
    fedc_status st = feature_h5_error(w, name, "cannot read");
    fedc_free(*out);
    *out = NULL;
    return st;
}

static fedc_status read_array(const walk *w, hid_t d, const char *name, fedc_dtype dt, hid_t mem, fedc_feature *f) {
    f->kind = FEDC_FEATURE_ARRAY;
    f->type.dtype = dt;
    return read_all(w, d, name, mem, fedc_type_bytes(&f->type), &f->data);
}

/* 64-bit values (and uint32) read exactly, then narrowed to i32 in place: element
 * k's four bytes land at or before where its eight were read, so nothing unread is
 * overwritten. HDF5's own conversion would clamp out-of-range values silently. */
static fedc_status narrow_to_i32(const walk *w, const char *name, fedc_feature *f, bool is_unsigned) {
    int64_t count = fedc_type_count(&f->type), per = count / (f->type.dims[0] ? f->type.dims[0] : 1);
    unsigned char *b = f->data;
    for (int64_t k = 0; k < count; k++) {
        int64_t v;
        uint64_t u;
        memcpy(&u, b + 8 * k, 8);
        memcpy(&v, b + 8 * k, 8);
        if (is_unsigned ? u > INT32_MAX : (v < INT32_MIN || v > INT32_MAX)) {
            char text[32];
            if (is_unsigned) snprintf(text, sizeof text, "%llu", (unsigned long long)u);
            else snprintf(text, sizeof text, "%lld", (long long)v);
            return feature_error(w, name, FEDC_ERANGE,
                                 "value %s at index %lld (example %lld) is outside the int32 range", text,
                                 (long long)k, (long long)(k / per));
        }
        int32_t x = (int32_t)v;
        memcpy(b + 4 * k, &x, 4);
    }
    void *shrunk = fedc_realloc(f->data, fedc_type_bytes(&f->type));
    if (shrunk) f->data = shrunk; /* if not, the larger buffer does as well */
    return FEDC_OK;
}

static fedc_status read_integer(const walk *w, hid_t d, hid_t t, const char *name, fedc_feature *f) {
    size_t size = H5Tget_size(t);
    H5T_sign_t sign = H5Tget_sign(t);
    if (size == 0 || sign == H5T_SGN_ERROR) return feature_h5_error(w, name, "cannot read its integer type");
    if (size == 1 && sign == H5T_SGN_NONE) return read_array(w, d, name, FEDC_U8, H5T_NATIVE_UINT8, f);
    if (size <= 2 || (size == 4 && sign == H5T_SGN_2))
        return read_array(w, d, name, FEDC_I32, H5T_NATIVE_INT32, f); /* exact conversions */
    if (size > 8)
        return feature_error(w, name, FEDC_EUNSUPPORTED, "unsupported HDF5 type: %zu-byte integer", size);
    bool is_unsigned = sign == H5T_SGN_NONE;
    f->kind = FEDC_FEATURE_ARRAY;
    f->type.dtype = FEDC_I32;
    fedc_status st = read_all(w, d, name, is_unsigned ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64,
                              (size_t)fedc_type_count(&f->type) * 8, &f->data);
    return st ? st : narrow_to_i32(w, name, f, is_unsigned);
}

/* The IEEE binary16, 32 and 64 layouts (sign, exponent and mantissa positions,
 * bias): HDF5 converts any float layout it is told, so a 2-byte float that is not
 * IEEE half (bfloat16, or a damaged type) would come out as other numbers. */
static const struct ieee_layout {
    size_t size, spos, epos, esize, mpos, msize, ebias;
} ieee[] = {{2, 15, 10, 5, 0, 10, 15}, {4, 31, 23, 8, 0, 23, 127}, {8, 63, 52, 11, 0, 52, 1023}};

static bool is_ieee(hid_t t, size_t size) {
    size_t spos, epos, esize, mpos, msize;
    if (H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) < 0 || H5Tget_offset(t) != 0 ||
        H5Tget_precision(t) != 8 * size || H5Tget_norm(t) != H5T_NORM_IMPLIED)
        return false;
    for (size_t i = 0; i < sizeof ieee / sizeof *ieee; i++)
        if (ieee[i].size == size)
            return spos == ieee[i].spos && epos == ieee[i].epos && esize == ieee[i].esize && mpos == ieee[i].mpos &&
                   msize == ieee[i].msize && H5Tget_ebias(t) == ieee[i].ebias;
    return false;
}

static fedc_status read_float(const walk *w, hid_t d, hid_t t, const char *name, fedc_feature *f) {
    size_t size = H5Tget_size(t);
    if (size == 0) return feature_h5_error(w, name, "cannot read its float type");
    if (size != 2 && size != 4 && size != 8)
        return feature_error(w, name, FEDC_EUNSUPPORTED, "unsupported HDF5 type: %zu-bit float", 8 * size);
    if (!is_ieee(t, size))
        return feature_error(w, name, FEDC_EUNSUPPORTED,
                             "unsupported HDF5 type: a %zu-bit float that is not IEEE binary%zu (e.g. bfloat16)",
                             8 * size, 8 * size);
    if (size == 8) return read_array(w, d, name, FEDC_F64, H5T_NATIVE_DOUBLE, f);
    return read_array(w, d, name, FEDC_F32, H5T_NATIVE_FLOAT, f); /* binary16 widens exactly */
}

/* h5py stores numpy's bool as an enum of int8 {FALSE = 0, TRUE = 1}. */
static bool is_bool_enum(hid_t t) {
    signed char no = -1, yes = -1;
    return H5Tget_size(t) == 1 && H5Tget_nmembers(t) == 2 && H5Tenum_valueof(t, "FALSE", &no) >= 0 &&
           H5Tenum_valueof(t, "TRUE", &yes) >= 0 && no == 0 && yes == 1;
}

/* Read as the file's own enum type: the stored bytes are the values. */
static fedc_status read_bool(const walk *w, hid_t d, hid_t t, const char *name, fedc_feature *f) {
    fedc_status st = read_array(w, d, name, FEDC_BOOL, t, f);
    const unsigned char *b = f->data;
    for (int64_t k = 0, n = st ? 0 : fedc_type_count(&f->type); k < n; k++)
        if (b[k] > 1) return feature_error(w, name, FEDC_EPARSE, "bool value %d at index %lld", b[k], (long long)k);
    return st;
}

/* ------------------------------------------------------------- strings -- */

/* Variable-length strings: HDF5 allocates each one; they are packed into the
 * feature and given back with H5free_memory (HDF5's allocator, not ours). */
static fedc_status read_vlen_strings(const walk *w, hid_t d, hid_t t, const char *name, fedc_feature *f) {
    int64_t n = f->type.dims[0];
    char **s = fedc_calloc((size_t)n ? (size_t)n : 1, sizeof *s);
    if (!s) return feature_error(w, name, FEDC_ENOMEM, "out of memory for %lld strings", (long long)n);
    fedc_status st = FEDC_OK;
    hid_t mem = H5Tcopy(H5T_C_S1);
    if (mem < 0 || H5Tset_size(mem, H5T_VARIABLE) < 0 || H5Tset_cset(mem, H5Tget_cset(t)) < 0 ||
        H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, s) < 0)
        st = feature_h5_error(w, name, "cannot read the strings");
    size_t total = 0;
    for (int64_t i = 0; !st && i < n; i++) total += s[i] ? strlen(s[i]) : 0;
    if (!st && !(f->data = fedc_malloc(total)))
        st = feature_error(w, name, FEDC_ENOMEM, "out of memory for %zu bytes of strings", total);
    f->offsets[0] = 0;
    for (int64_t i = 0; !st && i < n; i++) {
        size_t len = s[i] ? strlen(s[i]) : 0;
        if (len) memcpy((char *)f->data + f->offsets[i], s[i], len);
        f->offsets[i + 1] = f->offsets[i] + (int64_t)len;
    }
    for (int64_t i = 0; i < n; i++) H5free_memory(s[i]); /* NULL where the read stopped */
    if (mem >= 0) H5Tclose(mem);
    fedc_free(s);
    return st;
}

/* The length of a fixed-length string as its padding defines it. */
static size_t fixed_length(const char *s, size_t size, H5T_str_t pad) {
    if (pad != H5T_STR_SPACEPAD) {
        const char *nul = memchr(s, '\0', size);
        return nul ? (size_t)(nul - s) : size;
    }
    while (size && s[size - 1] == ' ') size--;
    return size;
}

/* Fixed-length strings, read as stored (the file's type as the memory type), then
 * packed in place: each string moves to an offset at or before where it was. */
static fedc_status read_fixed_strings(const walk *w, hid_t d, hid_t t, const char *name, fedc_feature *f) {
    size_t size = H5Tget_size(t);
    H5T_str_t pad = H5Tget_strpad(t);
    uint64_t n = (uint64_t)f->type.dims[0];
    if (size == 0 || pad == H5T_STR_ERROR) return feature_h5_error(w, name, "cannot read its string type");
    if (size > SIZE_MAX / (n ? n : 1)) return feature_error(w, name, FEDC_EPARSE, "is too large");
    fedc_status st = read_all(w, d, name, t, (size_t)n * size, &f->data);
    char *b = f->data;
    f->offsets[0] = 0;
    for (uint64_t i = 0; !st && i < n; i++) {
        size_t len = fixed_length(b + i * size, size, pad);
        memmove(b + f->offsets[i], b + i * size, len);
        f->offsets[i + 1] = f->offsets[i] + (int64_t)len;
    }
    return st;
}

static fedc_status read_strings(const walk *w, hid_t d, hid_t t, const char *name, fedc_feature *f) {
    if (f->type.rank != 1)
        return feature_error(w, name, FEDC_EUNSUPPORTED, "strings of rank %d (one string per example is supported)",
                             f->type.rank);
    htri_t vlen = H5Tis_variable_str(t);
    if (vlen < 0) return feature_h5_error(w, name, "cannot read its string type");
    f->kind = FEDC_FEATURE_STRINGS;
    f->offsets = fedc_malloc((size_t)(f->type.dims[0] + 1) * sizeof *f->offsets);
    if (!f->offsets) return feature_error(w, name, FEDC_ENOMEM, "out of memory");
    return vlen ? read_vlen_strings(w, d, t, name, f) : read_fixed_strings(w, d, t, name, f);
}

/* ------------------------------------------------------------ features -- */

static const char *class_name(H5T_class_t c) {
    switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_TIME: return "time";
    case H5T_STRING: return "string";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_COMPOUND: return "compound (a record or a complex number)";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum (other than h5py's bool)";
    case H5T_VLEN: return "variable-length sequence";
    case H5T_ARRAY: return "array";
    default: return "unknown";
    }
}

/* Reads dataset `d` into *f (its shape already in f->type) by its type. */
static fedc_status read_by_type(const walk *w, hid_t d, const char *name, fedc_feature *f) {
    hid_t t = H5Dget_type(d);
    if (t < 0) return feature_h5_error(w, name, "cannot read its type");
    H5T_class_t c = H5Tget_class(t);
    fedc_status st;
    if (c == H5T_INTEGER) st = read_integer(w, d, t, name, f);
    else if (c == H5T_FLOAT) st = read_float(w, d, t, name, f);
    else if (c == H5T_STRING) st = read_strings(w, d, t, name, f);
    else if (c == H5T_ENUM && is_bool_enum(t)) st = read_bool(w, d, t, name, f);
    else if (c == H5T_NO_CLASS) st = feature_h5_error(w, name, "cannot read its type");
    else
        st = feature_error(w, name, FEDC_EUNSUPPORTED, "unsupported HDF5 type: %s, %zu bytes", class_name(c),
                           H5Tget_size(t));
    H5Tclose(t);
    return st;
}

/* H5Literate callback of a load: one dataset of the client group -> a feature. */
static herr_t load_feature(hid_t group, const char *name, const H5L_info_t *info, void *arg) {
    (void)info;
    walk *w = arg;
    H5I_type_t kind;
    hid_t d = open_object(group, name, &kind);
    fedc_feature f = {.name = NULL};
    fedc_status st = kind == H5I_DATASET ? feature_shape(w, d, name, &f.type) : not_dataset(w, name, d);
    if (!st) st = agree(w, name, f.type.dims[0]);
    if (!st && !(f.name = fedc__strdup(name))) st = feature_error(w, name, FEDC_ENOMEM, "out of memory");
    if (!st) st = read_by_type(w, d, name, &f);
    close_object(d);
    if (!st) {
        st = fedc_client_adopt_feature(w->out, &f); /* frees f on failure */
    } else {
        fedc_free(f.name);
        fedc_free(f.data);
        fedc_free(f.offsets);
    }
    w->st = st;
    return st ? -1 : 0;
}

static fedc_status tff_load(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    const tff_source *s = ds->impl;
    walk w = {.path = ds->path, .client = ds->ids[i], .examples = ds->examples[i],
              .max_elements = max_elements(s->file_bytes)};
    fedc_status st = fedc_client_data_create(out, w.client, w.examples);
    if (st) return st;
    w.out = *out;
    h5_quiet q = h5_enter();
    H5I_type_t kind;
    hid_t g = open_object(s->examples, w.client, &kind);
    if (g < 0) st = client_h5_error(&w, "cannot open its group");
    else if (kind != H5I_GROUP) st = fedc_error(FEDC_EPARSE, "%s: client \"%s\" is not a group", w.path, w.client);
    else if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, load_feature, &w) < 0)
        st = w.st ? w.st : client_h5_error(&w, "cannot list its datasets");
    close_object(g);
    h5_leave(q);
    if (st) {
        fedc_client_data_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* --------------------------------------------------------------- index -- */

/* H5Literate callback of an open: one dataset of a client group, its shape. */
static herr_t index_feature(hid_t group, const char *name, const H5L_info_t *info, void *arg) {
    (void)info;
    walk *w = arg;
    H5I_type_t kind;
    hid_t d = open_object(group, name, &kind);
    fedc_type type;
    w->st = kind == H5I_DATASET ? feature_shape(w, d, name, &type) : not_dataset(w, name, d);
    if (!w->st) w->st = agree(w, name, type.dims[0]);
    close_object(d);
    return w->st ? -1 : 0;
}

/* H5Literate callback of an open: one client group under /examples. */
static herr_t index_client(hid_t examples, const char *name, const H5L_info_t *info, void *arg) {
    (void)info;
    walk *w = arg;
    w->client = name;
    w->examples = -1;
    w->features = 0;
    w->st = FEDC_OK;
    H5I_type_t kind;
    hid_t g = open_object(examples, name, &kind);
    if (g < 0) w->st = client_h5_error(w, "cannot open");
    else if (kind != H5I_GROUP)
        w->st = fedc_error(FEDC_EPARSE,
                           "%s: /examples/%s is not a group (TFF's layout is /examples/<client>/<feature>)", w->path,
                           name);
    else if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, index_feature, w) < 0 && !w->st)
        w->st = client_h5_error(w, "cannot list its datasets");
    else if (!w->st && !w->features)
        w->st = fedc_error(FEDC_EPARSE, "%s: client \"%s\" has no datasets", w->path, name);
    else if (!w->st)
        w->st = fedc__dataset_add_client(w->ds, name, w->examples);
    close_object(g);
    return w->st ? -1 : 0;
}

#if H5_VERSION_GE(1, 12, 0)
#define IS_HDF5(path) H5Fis_accessible(path, H5P_DEFAULT)
#else
#define IS_HDF5(path) H5Fis_hdf5(path)
#endif

/* Opens the file and its /examples group into s. */
static fedc_status open_examples(const char *path, tff_source *s) {
    htri_t is = IS_HDF5(path);
    if (is == 0) return fedc_error(FEDC_EPARSE, "%s: not an HDF5 file", path);
    if (is < 0) return fedc_error(FEDC_EIO, "%s: cannot read: %s", path, h5_detail().s);
    s->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (s->file < 0)
        return fedc_error(FEDC_EPARSE, "%s: cannot open the HDF5 file (truncated or corrupt?): %s", path,
                          h5_detail().s);
    htri_t has = H5Lexists(s->file, "examples", H5P_DEFAULT);
    if (has < 0) return fedc_error(FEDC_EIO, "%s: cannot read the root group: %s", path, h5_detail().s);
    if (!has) return fedc_error(FEDC_EPARSE, "%s: no /examples group (not a TensorFlow Federated file)", path);
    H5I_type_t kind;
    s->examples = open_object(s->file, "examples", &kind);
    if (s->examples < 0) return fedc_error(FEDC_EIO, "%s: cannot open /examples: %s", path, h5_detail().s);
    if (kind != H5I_GROUP) return fedc_error(FEDC_EPARSE, "%s: /examples is not a group", path);
    hsize_t bytes = 0;
    if (H5Fget_filesize(s->file, &bytes) < 0)
        return fedc_error(FEDC_EIO, "%s: cannot read its size: %s", path, h5_detail().s);
    s->file_bytes = bytes;
    return FEDC_OK;
}

static void tff_destroy(void *impl) {
    tff_source *s = impl;
    if (!s) return;
    if (s->file >= 0 || s->examples >= 0) {
        h5_quiet q = h5_enter();
        close_object(s->examples);
        if (s->file >= 0) H5Fclose(s->file);
        h5_leave(q);
    }
    fedc_free(s);
}

static const fedc__dataset_ops tff_ops = {tff_load, tff_destroy};

/* A clear message for what HDF5 would only call "unable to open file". */
static fedc_status check_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return fedc_error(FEDC_EIO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return fedc_error(FEDC_EIO, "%s: is a directory, not an HDF5 file", path);
    return FEDC_OK;
}

fedc_status fedc__open_tff(fedc_dataset **out, const char *path) {
    *out = NULL;
    fedc_status st = check_path(path);
    if (st) return st;
    /* The dataset exists before any HDF5 object, so that one cleanup path
     * (fedc_dataset_destroy, which takes the lock) serves every failure. */
    tff_source *s = fedc_malloc(sizeof *s);
    if (!s) return fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    s->file = s->examples = H5I_INVALID_HID;
    s->file_bytes = 0;
    st = fedc__dataset_create(out, &tff_ops, FEDC_FORMAT_TFF, path, s);
    if (st) return st;
    walk w = {.path = (*out)->path, .ds = *out};
    h5_quiet q = h5_enter();
    st = open_examples(path, s);
    w.max_elements = max_elements(s->file_bytes);
    if (!st && H5Literate(s->examples, H5_INDEX_NAME, H5_ITER_INC, NULL, index_client, &w) < 0)
        st = w.st ? w.st : fedc_error(FEDC_EIO, "%s: cannot list /examples: %s", path, h5_detail().s);
    h5_leave(q);
    if (st) {
        fedc_dataset_destroy(*out);
        *out = NULL;
    }
    return st;
}
