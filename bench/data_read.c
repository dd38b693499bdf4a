/*
 * bench_data_read — how fast each reader delivers examples: "read" is
 * fedc_dataset_open plus fedc_dataset_client (and destroy) for every client, and
 * "batched" is the same plus fedc_batch(batch 20) of every client, both as
 * examples per second of wall time (the median of the repeats).
 *
 * Real data: LEAF FEMNIST (../shared/data/femnist-leaf/train), IDX Fashion-MNIST
 * (/usr/share/datasets/fashion-mnist, one centralized client), CSV heart disease
 * (../shared/data/heart-disease-uci) and the raw Shakespeare text
 * (../shared/data/shakespeare-leaf/raw_data/by_play_and_character, 572 roles),
 * whichever are present. Synthetic data, written at start into a temporary
 * directory: the same 1,000 clients (10-50 examples each, "x" f32[n,60] and "y"
 * i32[n]) as LEAF JSON, a CSV directory, a TFF HDF5 file (written with libhdf5) and
 * a FedJAX SQLite file (zlib'd msgpack records, FedJAX's encoding), plus 1,000 text
 * files. Each figure is the median over the repeats of the time per pass, a
 * repeat running passes until it has taken a quarter of a second, after one
 * warm-up pass (so files are in the page cache: this measures parsing, not disk). Text has only strings, which fedc_batch skips, so its batched column runs
 * FedJAX's Shakespeare preprocessing (fedc_shakespeare_hook) before batching and
 * counts the lines read.
 *
 * usage: bench_data_read [repeats=3] [clients=1000]
 */
#include <dirent.h>
#include <hdf5.h>
#include <msgpack.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/bench.h"
#include "fedc/formats.h"
#include "fedc/tasks.h"

#define DIM 60

static int64_t nclients = 1000;
static char tmpdir[64];

/* ----------------------------------------------------- synthetic data -- */

/* Client i's examples and values: fixed functions of their place, so every format
 * holds the same numbers. */
static int64_t examples_of(int64_t i) { return 10 + (i * 7919) % 41; }
static float value_of(int64_t i, int64_t e, int k) { return (float)((i * 31 + e * 17 + k * 7) % 1000) / 1000.0f; }
static int32_t label_of(int64_t i, int64_t e) { return (int32_t)((i + e) % 10); }

static const char *tmp_path(const char *name) {
    static char buf[8][256];
    static int next;
    char *b = buf[next++ % 8];
    snprintf(b, sizeof buf[0], "%s/%s", tmpdir, name);
    return b;
}

static FILE *create(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    return f;
}

static void write_leaf(const char *dir) {
    char path[300];
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/synthetic.json", dir);
    FILE *f = create(path);
    fputs("{\"users\": [", f);
    for (int64_t i = 0; i < nclients; i++) fprintf(f, "%s\"c%05lld\"", i ? ", " : "", (long long)i);
    fputs("], \"num_samples\": [", f);
    for (int64_t i = 0; i < nclients; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)examples_of(i));
    fputs("], \"user_data\": {", f);
    for (int64_t i = 0; i < nclients; i++) {
        fprintf(f, "%s\"c%05lld\": {\"x\": [", i ? ", " : "", (long long)i);
        for (int64_t e = 0; e < examples_of(i); e++)
            for (int k = 0; k < DIM; k++) fprintf(f, "%s%g%s", k ? "" : e ? ", [" : "[", value_of(i, e, k), k < DIM - 1 ? ", " : "]");
        fputs("], \"y\": [", f);
        for (int64_t e = 0; e < examples_of(i); e++) fprintf(f, "%s%d", e ? ", " : "", label_of(i, e));
        fputs("]}", f);
    }
    fputs("}}\n", f);
    fclose(f);
}

static void write_csv(const char *dir) {
    mkdir(dir, 0777);
    for (int64_t i = 0; i < nclients; i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/c%05lld.csv", dir, (long long)i);
        FILE *f = create(path);
        for (int64_t e = 0; e < examples_of(i); e++) {
            for (int k = 0; k < DIM; k++) fprintf(f, "%g,", value_of(i, e, k));
            fprintf(f, "%d\n", label_of(i, e));
        }
        fclose(f);
    }
}

static void write_text(const char *dir) {
    static const char words[] = "to be or not to be that is the question whether tis nobler in the mind";
    mkdir(dir, 0777);
    for (int64_t i = 0; i < nclients; i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/ROLE_%05lld.txt", dir, (long long)i);
        FILE *f = create(path);
        for (int64_t e = 0; e < examples_of(i); e++) {
            size_t at = (size_t)((i + e) % 20), len = 20 + (size_t)((i * 3 + e) % 40);
            fprintf(f, "%.*s\n", (int)len, words + at);
        }
        fclose(f);
    }
}

/* Client i's x and y, for the binary writers. */
static void fill(int64_t i, float *x, int32_t *y) {
    for (int64_t e = 0; e < examples_of(i); e++) {
        for (int k = 0; k < DIM; k++) x[e * DIM + k] = value_of(i, e, k);
        y[e] = label_of(i, e);
    }
}

/* TFF's layout: /examples/<client>/<feature>, one dataset per feature. */
static void write_tff(const char *path) {
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t examples = H5Gcreate2(file, "examples", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    float x[50 * DIM];
    int32_t y[50];
    BENCH_FAIL_IF(file < 0 || examples < 0);
    for (int64_t i = 0; i < nclients; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%05lld", (long long)i);
        fill(i, x, y);
        hid_t g = H5Gcreate2(examples, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hsize_t dx[2] = {(hsize_t)examples_of(i), DIM}, dy[1] = {(hsize_t)examples_of(i)};
        hid_t sx = H5Screate_simple(2, dx, NULL), sy = H5Screate_simple(1, dy, NULL);
        hid_t ds_x = H5Dcreate2(g, "x", H5T_IEEE_F32LE, sx, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hid_t ds_y = H5Dcreate2(g, "y", H5T_STD_I32LE, sy, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        BENCH_FAIL_IF(H5Dwrite(ds_x, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) < 0 ||
                      H5Dwrite(ds_y, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, y) < 0);
        H5Dclose(ds_x), H5Dclose(ds_y), H5Sclose(sx), H5Sclose(sy), H5Gclose(g);
    }
    H5Gclose(examples);
    H5Fclose(file);
}

/* One numpy array as FedJAX's serialization packs it: ext 1 holding
 * msgpack([shape, dtype name, bytes]). */
static void pack_array(msgpack_packer *pk, const char *name, const char *dtype, int rank, const int64_t *dims,
                       const void *data, size_t bytes) {
    msgpack_sbuffer inner;
    msgpack_packer ip;
    msgpack_sbuffer_init(&inner);
    msgpack_packer_init(&ip, &inner, msgpack_sbuffer_write);
    msgpack_pack_array(&ip, 3);
    msgpack_pack_array(&ip, (size_t)rank);
    for (int d = 0; d < rank; d++) msgpack_pack_int64(&ip, dims[d]);
    msgpack_pack_str_with_body(&ip, dtype, strlen(dtype));
    msgpack_pack_bin_with_body(&ip, data, bytes);
    msgpack_pack_str_with_body(pk, name, strlen(name));
    msgpack_pack_ext_with_body(pk, inner.data, inner.size, 1);
    msgpack_sbuffer_destroy(&inner);
}

/* FedJAX's SQLiteFederatedDataBuilder: data = zlib.compress(msgpack record). */
static void write_fedjax(const char *path) {
    sqlite3 *db;
    sqlite3_stmt *ins;
    BENCH_FAIL_IF(sqlite3_open(path, &db) != SQLITE_OK);
    BENCH_FAIL_IF(sqlite3_exec(db, "CREATE TABLE federated_data (client_id BLOB NOT NULL PRIMARY KEY, data BLOB NOT "
                                   "NULL, num_examples INTEGER NOT NULL); BEGIN;", NULL, NULL, NULL) != SQLITE_OK);
    BENCH_FAIL_IF(sqlite3_prepare_v2(db, "INSERT INTO federated_data VALUES (?1, ?2, ?3)", -1, &ins, NULL) != SQLITE_OK);
    float x[50 * DIM];
    int32_t y[50];
    static unsigned char z[50 * DIM * 4 + 50 * 4 + 4096];
    for (int64_t i = 0; i < nclients; i++) {
        int64_t n = examples_of(i);
        char id[32];
        snprintf(id, sizeof id, "c%05lld", (long long)i);
        fill(i, x, y);
        msgpack_sbuffer buf;
        msgpack_packer pk;
        msgpack_sbuffer_init(&buf);
        msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
        msgpack_pack_map(&pk, 2);
        pack_array(&pk, "x", "float32", 2, (int64_t[]){n, DIM}, x, (size_t)(n * DIM) * sizeof *x);
        pack_array(&pk, "y", "int32", 1, &n, y, (size_t)n * sizeof *y);
        uLongf zlen = sizeof z;
        BENCH_FAIL_IF(compress2(z, &zlen, (const Bytef *)buf.data, buf.size, 6) != Z_OK);
        msgpack_sbuffer_destroy(&buf);
        sqlite3_bind_blob(ins, 1, id, (int)strlen(id), SQLITE_TRANSIENT);
        sqlite3_bind_blob(ins, 2, z, (int)zlen, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins, 3, n);
        BENCH_FAIL_IF(sqlite3_step(ins) != SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    BENCH_FAIL_IF(sqlite3_exec(db, "COMMIT;", NULL, NULL, NULL) != SQLITE_OK);
    sqlite3_close(db);
}

/* Removes the temporary directory: files, and directories of files. */
static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[512];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        remove_tree(child);
    }
    closedir(d);
    rmdir(path);
}

/* ---------------------------------------------------------- measuring -- */

typedef struct source {
    const char *format, *name, *path;
    fedc_data_format f;
    fedc_client_fn batch_hook; /* applied before batching only */
} source;

typedef struct result {
    int64_t clients, examples;
    double open_s, read_s, batch_s;
} result;

/* One pass: open, load every client (and batch it), close; seconds. */
static double pass(const source *s, bool batch, result *r, double *open_s) {
    double t0 = bench_now();
    fedc_dataset *ds;
    BENCH_FAIL_IF(fedc_dataset_open(&ds, s->path, s->f));
    *open_s = bench_now() - t0;
    if (batch && s->batch_hook) fedc_dataset_set_preprocess(ds, s->batch_hook, NULL);
    r->clients = fedc_dataset_num_clients(ds);
    r->examples = fedc_dataset_total_examples(ds);
    for (int64_t i = 0; i < r->clients; i++) {
        fedc_client_data *c;
        BENCH_FAIL_IF(fedc_dataset_client(ds, i, &c));
        if (batch) {
            fedc_batches *b;
            BENCH_FAIL_IF(fedc_batch(c, 20, false, &b));
            fedc_batches_destroy(b);
        }
        fedc_client_data_destroy(c);
    }
    fedc_dataset_destroy(ds);
    return bench_now() - t0;
}

/* Seconds per pass, over as many passes as fill a quarter of a second (small
 * datasets take milliseconds, too short to time once). */
static double timed(const source *s, bool batch, result *r, double *open_s) {
    double total = 0, opens = 0, open;
    int passes = 0;
    do {
        total += pass(s, batch, r, &open);
        opens += open;
        passes++;
    } while (total < 0.25);
    *open_s = opens / passes;
    return total / passes;
}

static result measure(const source *s, int repeats) {
    double read[16], batched[16], open[16], unused;
    result r = {0};
    pass(s, true, &r, &unused); /* warm-up: the page cache, the allocator */
    for (int k = 0; k < repeats; k++) {
        read[k] = timed(s, false, &r, &open[k]);
        batched[k] = timed(s, true, &r, &unused);
    }
    r.open_s = bench_median(open, repeats);
    r.read_s = bench_median(read, repeats);
    r.batch_s = bench_median(batched, repeats);
    return r;
}

static void report(const source *s, int repeats) {
    struct stat st;
    if (stat(s->path, &st) != 0) {
        printf("%-7s %-30s (skipped: %s is absent)\n", s->format, s->name, s->path);
        return;
    }
    result r = measure(s, repeats);
    printf("%-7s %-30s %8lld %9lld %9.4f %10.4f %11.0f %10.4f %11.0f\n", s->format, s->name, (long long)r.clients,
           (long long)r.examples, r.open_s, r.read_s, (double)r.examples / r.read_s, r.batch_s,
           (double)r.examples / r.batch_s);
    fflush(stdout);
}

int main(int argc, char **argv) {
    fedc_formats_register();
    int repeats = argc > 1 ? atoi(argv[1]) : 3;
    nclients = argc > 2 ? atoll(argv[2]) : 1000;
    if (repeats < 1 || repeats > 16 || nclients < 1) {
        fprintf(stderr, "usage: bench_data_read [repeats=3 (1-16)] [clients=1000]\n");
        return 2;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/fedc_bench_data_XXXXXX");
    BENCH_FAIL_IF(!mkdtemp(tmpdir));
    double t0 = bench_now();
    write_leaf(tmp_path("leaf"));
    write_csv(tmp_path("csv"));
    write_text(tmp_path("text"));
    write_tff(tmp_path("synthetic.h5"));
    write_fedjax(tmp_path("synthetic.sqlite"));
    printf("wrote the synthetic files (%lld clients each) in %.1f s; %d repeats, medians\n\n", (long long)nclients,
           bench_now() - t0, repeats);
    const source sources[] = {
        {"leaf", "femnist-leaf/train", "../shared/data/femnist-leaf/train", FEDC_FORMAT_LEAF, NULL},
        {"idx", "fashion-mnist train", "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz",
         FEDC_FORMAT_IDX, NULL},
        {"csv", "heart-disease-uci", "../shared/data/heart-disease-uci", FEDC_FORMAT_CSV, NULL},
        {"text", "shakespeare raw (572 roles)", "../shared/data/shakespeare-leaf/raw_data/by_play_and_character",
         FEDC_FORMAT_TEXT, fedc_shakespeare_hook},
        {"leaf", "synthetic x[60] (.json)", tmp_path("leaf"), FEDC_FORMAT_LEAF, NULL},
        {"csv", "synthetic x[60] (.csv)", tmp_path("csv"), FEDC_FORMAT_CSV, NULL},
        {"text", "synthetic lines (.txt)", tmp_path("text"), FEDC_FORMAT_TEXT, fedc_shakespeare_hook},
        {"tff", "synthetic x[60] (.h5)", tmp_path("synthetic.h5"), FEDC_FORMAT_TFF, NULL},
        {"fedjax", "synthetic x[60] (.sqlite)", tmp_path("synthetic.sqlite"), FEDC_FORMAT_FEDJAX, NULL},
    };
    printf("%-7s %-30s %8s %9s %9s %10s %11s %10s %11s\n", "format", "dataset", "clients", "examples", "open s",
           "read s", "read ex/s", "batch s", "batch ex/s");
    for (size_t k = 0; k < sizeof sources / sizeof *sources; k++) report(&sources[k], repeats);
    remove_tree(tmpdir);
    return 0;
}
