/* The TensorFlow Federated HDF5 reader on files that libhdf5 itself writes, the
 * input choosing what is in them: up to 3 clients of up to 4 datasets each, of
 * every type class the reader meets (integers of each size, sign and byte order,
 * IEEE and other float layouts, h5py's bool and other enums, fixed and variable
 * strings, compound, array and sequence types), ranks 0 to 7, empty dimensions,
 * huge ones (chunked and never written: only the fill value is there), names with
 * '/' (nested groups) and the values themselves. The metadata stays well formed,
 * so what is fuzzed is fedc's reader, not libhdf5's parser (fuzz_tff_raw). */
#include "formats/formats.h"
#include "fuzz.h"

#include <hdf5.h>
#include <stdio.h>
#include <string.h>

typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

static unsigned take(input *in) {
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

/* 1 to 6 bytes of the input, NULs replaced. */
static void take_name(input *in, char *name) {
    size_t len = 1 + take(in) % 6;
    for (size_t i = 0; i < len; i++) {
        unsigned c = take(in);
        name[i] = c ? (char)c : (char)('a' + i);
    }
    name[len] = '\0';
}

static hid_t float_type(size_t spos, size_t epos, size_t esize, size_t msize, size_t size, size_t bias) {
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(t, spos, epos, esize, 0, msize);
    H5Tset_precision(t, 8 * size);
    H5Tset_size(t, size);
    H5Tset_ebias(t, bias);
    return t;
}

static hid_t enum_type(input *in) {
    hid_t t = H5Tenum_create(H5T_NATIVE_SCHAR);
    bool h5py_bool = take(in) % 2;
    signed char no = h5py_bool ? 0 : (signed char)take(in), yes = h5py_bool ? 1 : (signed char)take(in);
    H5Tenum_insert(t, "FALSE", &no);
    if (yes != no) H5Tenum_insert(t, "TRUE", &yes);
    return t;
}

static hid_t string_type(input *in, bool variable) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, variable ? H5T_VARIABLE : 1 + take(in) % 8);
    H5Tset_strpad(t, (H5T_str_t)(take(in) % 3));
    H5Tset_cset(t, take(in) % 2 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
    return t;
}

static hid_t other_type(input *in) {
    unsigned k = take(in) % 3;
    if (k == 0) {
        hid_t t = H5Tcreate(H5T_COMPOUND, 8);
        H5Tinsert(t, "a", 0, H5T_STD_I32LE);
        H5Tinsert(t, "b", 4, H5T_IEEE_F32LE);
        return t;
    }
    if (k == 1) return H5Tarray_create2(H5T_STD_I16LE, 1, (hsize_t[]){2});
    return H5Tvlen_create(H5T_STD_I32LE);
}

/* A copy of a type of the file, chosen by the input. */
static hid_t make_type(input *in) {
    switch (take(in) % 16) { /* HDF5's type names are calls (they open the library), not constants */
    case 0: return H5Tcopy(H5T_STD_I8LE);
    case 1: return H5Tcopy(H5T_STD_U8LE);
    case 2: return H5Tcopy(H5T_STD_I16BE);
    case 3: return H5Tcopy(H5T_STD_U16LE);
    case 4: return H5Tcopy(H5T_STD_I32LE);
    case 5: return H5Tcopy(H5T_STD_U32BE);
    case 6: return H5Tcopy(H5T_STD_I64LE);
    case 7: return H5Tcopy(H5T_STD_U64LE);
    case 8: return H5Tcopy(H5T_IEEE_F32LE);
    case 9: return H5Tcopy(H5T_IEEE_F64BE);
    case 10: return float_type(15, 10, 5, 10, 2, 15); /* IEEE half */
    case 11: return float_type(15, 7, 8, 7, 2, 127);  /* bfloat16 */
    case 12: return enum_type(in);
    case 13: return string_type(in, true);
    case 14: return string_type(in, false);
    default: return other_type(in);
    }
}

/* Values for `count` elements of `t` from the input (zeros once it runs out);
 * variable-length strings point into `text`. */
static void fill(input *in, hid_t t, size_t count, unsigned char *buf, char *text) {
    if (H5Tis_variable_str(t) > 0) {
        char **s = (char **)(void *)buf;
        for (size_t i = 0; i < count; i++) {
            size_t len = take(in) % 8;
            s[i] = text;
            for (size_t c = 0; c < len; c++) *text++ = (char)(take(in) | 1);
            *text++ = '\0';
        }
        return;
    }
    for (size_t i = 0, size = count * H5Tget_size(t); i < size; i++) buf[i] = (unsigned char)take(in);
}

enum { MAX_WRITTEN = 1024 };

/* One dataset at loc/name: small ones written with values, large ones chunked
 * and left unwritten, empty and scalar ones contiguous. */
static void make_dataset(hid_t file, const char *path, input *in) {
    hid_t t = make_type(in);
    int rank = (int)(take(in) % 8);
    hsize_t dims[8], chunk[8];
    bool huge = take(in) % 8 == 0, empty = false;
    uint64_t count = 1;
    for (int i = 0; i < rank; i++) {
        dims[i] = huge && i == 0 ? (hsize_t)1 << (10 + take(in) % 40) : take(in) % 5;
        empty |= dims[i] == 0;
        count = dims[i] && count > UINT64_MAX / dims[i] ? UINT64_MAX : count * dims[i];
        chunk[i] = dims[i] < 64 ? (dims[i] ? dims[i] : 1) : 64;
    }
    bool vlen = H5Tget_class(t) == H5T_VLEN;
    bool write = !empty && count <= MAX_WRITTEN && !vlen;
    hid_t space = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    if (rank && !empty && !write) H5Pset_chunk(dcpl, rank, chunk);
    hid_t d = H5Dcreate2(file, path, t, space, lcpl, dcpl, H5P_DEFAULT);
    if (d >= 0 && write) {
        static unsigned char buf[MAX_WRITTEN * 16];
        static char text[MAX_WRITTEN * 9];
        fill(in, t, (size_t)count, buf, text);
        H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    }
    if (d >= 0) H5Dclose(d);
    H5Pclose(dcpl), H5Pclose(lcpl), H5Sclose(space), H5Tclose(t);
}

static void make_file(const char *path, input *in) {
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return;
    if (take(in) % 32 == 0) { /* /examples itself a dataset */
        make_dataset(f, "examples", in);
    } else {
        H5Gclose(H5Gcreate2(f, "examples", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        for (unsigned c = 0, clients = 1 + take(in) % 3; c < clients; c++) {
            char client[8], feature[8], where[64];
            take_name(in, client);
            for (unsigned k = 0, features = take(in) % 5; k < features; k++) {
                take_name(in, feature);
                snprintf(where, sizeof where, "examples/%s/%s", client, feature);
                make_dataset(f, where, in);
            }
        }
    }
    H5Fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool quiet;
    if (!quiet) H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* invalid names fail, quietly */
    quiet = true;
    input in = {data, size};
    const char *path = fuzz_path("x.h5");
    remove(path);
    make_file(path, &in);
    fuzz_dataset(fedc__open_tff, path);
    return 0;
}
