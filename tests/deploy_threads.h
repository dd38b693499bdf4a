/* What the deployment tests that run a server and its clients as threads of
 * the test share: a scratch directory holding the case's data (deploy_case.h),
 * the server on a thread, and the checks of what it wrote. Included by one
 * test file each; everything is static inline, so a test uses what it needs. */
#ifndef FEDC_TEST_DEPLOY_THREADS_H
#define FEDC_TEST_DEPLOY_THREADS_H

#include <stdio.h>
#include <string.h>

#include "deploy_case.h"
#include "fedc/deploy.h"
#include "fedc/safetensors.h"
#include "harness.h"

static char dir[400], data_path[400];

/* `name` in the scratch directory: 4 buffers in turn, so copy what must last. */
static inline const char *path(const char *name) {
    static char buf[4][600];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", dir, name);
    return b;
}

/* The scratch directory (named after `what`) and the case's data in it, once. */
static inline bool deploy_setup(const char *what) {
    if (dir[0]) return true;
    const char *d = fedc_test_tmpdir(what);
    if (!d) return false;
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(data_path, sizeof data_path, "%s", path("case.json"));
    return write_case_data(data_path);
}

/* Every tensor of the deployed checkpoint is in the trained one, bit for bit. */
static inline void check_same_bits(const char *deployed, const char *trained, int tensors) {
    fedc_safetensors *a = NULL, *b = NULL;
    CHECK_OK(fedc_safetensors_read(deployed, &a));
    CHECK_OK(fedc_safetensors_read(trained, &b));
    if (!a || !b) goto out;
    CHECK_EQ_INT(fedc_safetensors_count(a), tensors);
    for (int i = 0; i < fedc_safetensors_count(a); i++) {
        fedc_tensor_entry x = fedc_safetensors_tensor(a, i), y;
        CHECK_OK(fedc_safetensors_find(b, x.name, &y));
        CHECK_MSG(fedc_type_bytes(&x.type) == fedc_type_bytes(&y.type) && !memcmp(x.data, y.data, fedc_type_bytes(&x.type)),
                  "%s: the deployed run's bits differ from fedc_train's", x.name);
    }
out:
    fedc_safetensors_destroy(a);
    fedc_safetensors_destroy(b);
}

/* A server run on a thread: its options, and how it ended. */
typedef struct job {
    fedc_server_options s;
    fedc_status st;
    char err[1024];
} job;

static inline void *server_main(void *arg) {
    job *j = arg;
    j->st = fedc_server_run(&j->s);
    if (j->st) snprintf(j->err, sizeof j->err, "%s", fedc_errmsg());
    return NULL;
}

/* The lines of `file` that hold `needle`. */
static inline int count_lines(const char *file, const char *needle) {
    FILE *f = fopen(file, "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) n += strstr(line, needle) != NULL;
    if (f) fclose(f);
    return n;
}

#endif
