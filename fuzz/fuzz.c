/* The harnesses' shared helpers (fuzz.h). */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

volatile unsigned fuzz_sink;

static char dir[64];

static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void remove_dir(void) { remove_tree(dir); }

const char *fuzz_path(const char *name) {
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fedc-fuzz-XXXXXX");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(remove_dir);
    }
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

const char *fuzz_write(const char *name, const void *data, size_t size) {
    const char *path = fuzz_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

const char *fuzz_write_gz(const char *name, const void *data, size_t size) {
    const char *path = fuzz_path(name);
    gzFile f = gzopen(path, "wb1");
    if (!f || (size && gzwrite(f, data, (unsigned)size) != (int)size) || gzclose(f) != Z_OK) {
        perror(path);
        abort();
    }
    return path;
}

const char *fuzz_dir(const char *name) {
    static char path[4096]; /* its own: fuzz_path's buffer is reused for the files */
    snprintf(path, sizeof path, "%s", fuzz_path(name));
    remove_tree(path);
    if (mkdir(path, 0700) != 0) {
        perror(path);
        abort();
    }
    return path;
}

void fuzz_touch_client(const fedc_client_data *c) {
    fuzz_sink += (unsigned)c->num_examples;
    for (int i = 0; i < c->num_features; i++) {
        const fedc_feature *f = &c->features[i];
        bool strings = f->kind == FEDC_FEATURE_STRINGS;
        size_t bytes = strings ? (size_t)f->offsets[f->type.dims[0]] : fedc_type_bytes(&f->type);
        for (size_t k = 0; k < bytes; k++) fuzz_sink += ((const unsigned char *)f->data)[k];
        for (int64_t k = 0; strings && k <= f->type.dims[0]; k++) fuzz_sink += (unsigned)f->offsets[k];
    }
}

void fuzz_dataset(fedc_status (*open)(fedc_dataset **, const char *), const char *path) {
    fedc_dataset *ds = NULL;
    if (open(&ds, path) != FEDC_OK) {
        if (ds) abort(); /* a failed open leaves nothing behind */
        return;
    }
    int64_t n = fedc_dataset_num_clients(ds);
    for (int64_t i = 0; i < n && i < 64; i++) {
        fedc_client_data *c = NULL;
        fuzz_sink += (unsigned)fedc_dataset_client_examples(ds, i);
        fuzz_sink += (unsigned)strlen(fedc_dataset_client_id(ds, i));
        if (fedc_dataset_client(ds, i, &c) == FEDC_OK) fuzz_touch_client(c);
        fedc_client_data_destroy(c);
    }
    fedc_dataset_destroy(ds);
}
