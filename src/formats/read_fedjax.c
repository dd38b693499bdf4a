/*
 * read_fedjax.c — FedJAX's SQLite datasets (fedjax.core.SQLiteFederatedData).
 *
 * The file holds one table,
 *
 *     CREATE TABLE federated_data (client_id BLOB NOT NULL PRIMARY KEY,
 *                                  data BLOB NOT NULL, num_examples INTEGER NOT NULL);
 *
 * one row per client; `data` is a zlib-compressed msgpack record of the client's
 * features (decoded by fedjax_records.c). Opening reads the index — ids and sizes —
 * in FedJAX's order, ORDER BY rowid, which is the order the rows were inserted in
 * (fedjax/core/sqlite_federated_data.py: client_ids(), client_sizes() and
 * clients() all order by rowid; client_id is a BLOB key, so the table has rowids).
 * A client's record is read when it is loaded, by id as FedJAX's get_client() does.
 *
 * Thread safety: the dataset keeps one sqlite3 connection and one prepared
 * statement, so a FedJAX dataset (with its slices) must not be used from two
 * threads at once; open one per thread instead.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "data/dataset.h"
#include "formats/fedjax_records.h"

#define INDEX_SQL "SELECT client_id, num_examples FROM federated_data ORDER BY rowid"
#define LOAD_SQL "SELECT data FROM federated_data WHERE client_id = ?1"

typedef struct fedjax_source {
    sqlite3 *db;
    sqlite3_stmt *load;       /* LOAD_SQL, prepared once */
    unsigned char *id_is_text; /* per client: its id is stored as TEXT, not BLOB */
    int64_t cap;
} fedjax_source;

static void fedjax_destroy(void *impl) {
    fedjax_source *src = impl;
    if (!src) return;
    sqlite3_finalize(src->load); /* harmless on NULL */
    sqlite3_close(src->db);
    fedc_free(src->id_is_text);
    fedc_free(src);
}

/* An SQLite failure as a fedc status, with SQLite's own message. */
static fedc_status sql_fail(const char *path, sqlite3 *db, int rc, const char *doing) {
    int primary = rc & 0xff;
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    switch (primary) {
    case SQLITE_NOMEM: return fedc_error(FEDC_ENOMEM, "%s: %s: %s", path, doing, msg);
    case SQLITE_NOTADB: return fedc_error(FEDC_EPARSE, "%s: not an SQLite database (%s)", path, msg);
    case SQLITE_CORRUPT: return fedc_error(FEDC_EPARSE, "%s: %s: the database is corrupt (%s)", path, doing, msg);
    case SQLITE_ERROR: /* what preparing a query on another schema gives */
        return fedc_error(FEDC_EPARSE, "%s: not a FedJAX database: %s (expected a table "
                          "federated_data(client_id, data, num_examples))", path, msg);
    default: return fedc_error(FEDC_EIO, "%s: %s: %s", path, doing, msg);
    }
}

/* --------------------------------------------------------------- index -- */

static fedc_status remember_id_kind(fedc_dataset *ds, fedjax_source *src, bool is_text) {
    if (ds->n == src->cap) {
        int64_t cap = src->cap ? 2 * src->cap : 64;
        unsigned char *grown = fedc_realloc(src->id_is_text, (size_t)cap);
        if (!grown) return fedc_error(FEDC_ENOMEM, "%s: out of memory for %lld clients", ds->path, (long long)cap);
        src->id_is_text = grown;
        src->cap = cap;
    }
    src->id_is_text[ds->n] = is_text;
    return FEDC_OK;
}

static const char *sql_type(int type) {
    switch (type) {
    case SQLITE_INTEGER: return "an integer";
    case SQLITE_FLOAT: return "a real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "a blob";
    default: return "NULL";
    }
}

/* One row of the index: FedJAX's ids are bytes; fedc's are C strings, so an id
 * holding a NUL byte cannot be one. */
static fedc_status add_row(fedc_dataset *ds, fedjax_source *src, sqlite3_stmt *q) {
    long long row = (long long)ds->n;
    int id_type = sqlite3_column_type(q, 0), n_type = sqlite3_column_type(q, 1);
    if (id_type != SQLITE_BLOB && id_type != SQLITE_TEXT)
        return fedc_error(FEDC_EPARSE, "%s: client %lld: client_id is %s, not bytes", ds->path, row, sql_type(id_type));
    const char *id = (const char *)sqlite3_column_text(q, 0); /* NUL-terminates a BLOB too */
    if (!id) return fedc_error(FEDC_ENOMEM, "%s: client %lld: out of memory reading client_id", ds->path, row);
    if (strlen(id) != (size_t)sqlite3_column_bytes(q, 0))
        return fedc_error(FEDC_EPARSE, "%s: client %lld: client_id \"%s...\" holds a NUL byte", ds->path, row, id);
    if (n_type != SQLITE_INTEGER || sqlite3_column_int64(q, 1) < 0)
        return fedc_error(FEDC_EPARSE, "%s: client \"%s\": num_examples is %s, not a count", ds->path, id,
                          n_type == SQLITE_INTEGER ? "negative" : sql_type(n_type));
    fedc_status st = remember_id_kind(ds, src, id_type == SQLITE_TEXT);
    return st ? st : fedc__dataset_add_client(ds, id, sqlite3_column_int64(q, 1));
}

static fedc_status read_index(fedc_dataset *ds, fedjax_source *src) {
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(src->db, INDEX_SQL, -1, &q, NULL);
    if (rc != SQLITE_OK) return sql_fail(ds->path, src->db, rc, "reading the client index");
    fedc_status st = FEDC_OK;
    while (!st && (rc = sqlite3_step(q)) == SQLITE_ROW) st = add_row(ds, src, q);
    if (!st && rc != SQLITE_DONE) st = sql_fail(ds->path, src->db, rc, "reading the client index");
    sqlite3_finalize(q);
    return st;
}

/* ---------------------------------------------------------------- load -- */

static fedc_status fedjax_load(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    *out = NULL;
    fedjax_source *src = ds->impl;
    const char *id = ds->ids[i];
    sqlite3_stmt *q = src->load;
    /* SQLite never finds a BLOB equal to TEXT, so bind the id as it was stored. */
    int rc = src->id_is_text[i] ? sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC)
                                : sqlite3_bind_blob(q, 1, id, (int)strlen(id), SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    fedc_status st = FEDC_OK;
    if (rc == SQLITE_DONE)
        st = fedc_error(FEDC_ENOTFOUND, "%s: client \"%s\" is no longer in the file", ds->path, id);
    else if (rc != SQLITE_ROW)
        st = sql_fail(ds->path, src->db, rc, "reading a client");
    else if (sqlite3_column_type(q, 0) != SQLITE_BLOB)
        st = fedc_error(FEDC_EPARSE, "%s: client \"%s\": data is %s, not a blob", ds->path, id,
                        sql_type(sqlite3_column_type(q, 0)));
    else
        st = fedc__fedjax_decode(ds->path, id, ds->examples[i], sqlite3_column_blob(q, 0),
                                 (size_t)sqlite3_column_bytes(q, 0), out);
    sqlite3_reset(q); /* ends the read, so the file is not held locked between loads */
    sqlite3_clear_bindings(q);
    return st;
}

static const fedc__dataset_ops fedjax_ops = {fedjax_load, fedjax_destroy};

/* ---------------------------------------------------------------- open -- */

static uint32_t be(const unsigned char *p, int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* SQLite reads the pages past the end of a truncated file as zeros, so a cut
 * file opens and then loses clients or reads empty records. The header says how
 * big the database is (bytes 28-31, pages; valid when bytes 92-95 match the change
 * counter at 24-27, https://www.sqlite.org/fileformat2.html): a shorter file is
 * refused here. With a -wal file beside it the header may lag, so it is trusted
 * only without one. */
static fedc_status check_size(const char *path) {
    unsigned char h[100];
    FILE *f = fopen(path, "rb");
    if (!f) return FEDC_OK; /* SQLite says why */
    size_t got = fread(h, 1, sizeof h, f);
    long long size = fseek(f, 0, SEEK_END) == 0 ? (long long)ftell(f) : -1;
    fclose(f);
    if (got < sizeof h || memcmp(h, "SQLite format 3", 16) != 0 || size < 0) return FEDC_OK;
    char wal[4096];
    snprintf(wal, sizeof wal, "%s-wal", path);
    FILE *w = fopen(wal, "rb");
    if (w) {
        fclose(w);
        return FEDC_OK;
    }
    uint32_t page = be(h + 16, 2), pages = be(h + 28, 4);
    unsigned long long want = (unsigned long long)(page == 1 ? 65536 : page) * pages;
    if (pages && be(h + 24, 4) == be(h + 92, 4) && (unsigned long long)size < want)
        return fedc_error(FEDC_EPARSE, "%s: truncated: its header says %u pages of %u bytes (%llu bytes), the file "
                          "has %lld", path, pages, page == 1 ? 65536 : page, want, size);
    return FEDC_OK;
}

fedc_status fedc__open_fedjax(fedc_dataset **out, const char *path) {
    *out = NULL;
    fedc_status st = check_size(path);
    if (st) return st;
    fedjax_source *src = fedc_calloc(1, sizeof *src);
    if (!src) return fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    int rc = sqlite3_open_v2(path, &src->db, SQLITE_OPEN_READONLY, NULL);
    if (rc != SQLITE_OK)
        st = rc == SQLITE_NOMEM && !src->db ? fedc_error(FEDC_ENOMEM, "%s: out of memory", path)
                                            : fedc_error(FEDC_EIO, "%s: cannot open: %s", path, sqlite3_errmsg(src->db));
    if (!st && (rc = sqlite3_prepare_v2(src->db, LOAD_SQL, -1, &src->load, NULL)) != SQLITE_OK)
        st = sql_fail(path, src->db, rc, "opening"); /* no table, no data column, not SQLite */
    if (st) {
        fedjax_destroy(src);
        return st;
    }
    fedc_dataset *ds;
    st = fedc__dataset_create(&ds, &fedjax_ops, FEDC_FORMAT_FEDJAX, path, src); /* destroys src if it fails */
    if (!st) st = read_index(ds, src);
    if (st) {
        fedc_dataset_destroy(ds);
        return st;
    }
    *out = ds;
    return FEDC_OK;
}
