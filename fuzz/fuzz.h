/* What the libFuzzer harnesses share (docs/fuzzing.md). Each fuzz_<target>.c
 * defines LLVMFuzzerTestOneInput for one reader; readers that take a path get
 * the input written to a file in a private temporary directory. A harness only
 * checks that the reader returns (a status, never a crash, a leak or undefined
 * behaviour, which the sanitizers report) and reads every byte it returns, so
 * that a result pointing outside its buffer shows. */
#ifndef FEDC_FUZZ_H
#define FEDC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The path of `name` in the process's temporary directory (made on first use,
 * removed at exit), in a buffer the next call reuses. */
const char *fuzz_path(const char *name);
/* Writes bytes to fuzz_path(name) and returns that path. */
const char *fuzz_write(const char *name, const void *data, size_t size);
/* Same, gzip-compressed. */
const char *fuzz_write_gz(const char *name, const void *data, size_t size);
/* A fresh empty directory fuzz_path(name) (its old files removed); the path is
 * kept until the next fuzz_dir. */
const char *fuzz_dir(const char *name);

/* Opens with `open` and loads every client (at most 64), touching every byte. */
void fuzz_dataset(fedc_status (*open)(fedc_dataset **, const char *), const char *path);
/* Where the harnesses add the bytes they read, so that no read is optimised away. */
extern volatile unsigned fuzz_sink;

/* Reads every byte of a client's features into fuzz_sink. */
void fuzz_touch_client(const fedc_client_data *c);

#endif
