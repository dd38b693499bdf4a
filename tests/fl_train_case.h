/* Training jobs for an algorithm's tests: a short fedc_train run on the heart-disease
 * silos or FEMNIST (the real sets of ../shared/data where present, else the small
 * ones of data_fixtures.h) or Fashion-MNIST (SKIP when absent), and whether two
 * runs' checkpoints hold the same tensors bit for bit (a resumed run against an
 * uninterrupted one). */
#ifndef FEDC_TEST_FL_TRAIN_CASE_H
#define FEDC_TEST_FL_TRAIN_CASE_H

#include <string.h>
#include <sys/stat.h>

#include "data_fixtures.h"
#include "fedc/fedc.h"
#include "harness.h"

#define HEART_DATA fedc_test_data("heart-disease-uci")
#define FASHION_DATA "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"

/* Whether `path` exists; if not, the current test is skipped, naming it (NULL: a
 * small set could not be written, a failure). */
static inline bool have_data(const char *path) {
    struct stat s;
    CHECK_MSG(path != NULL, "a small data set could not be written");
    if (!path) return false;
    if (stat(path, &s) == 0) return true;
    fedc_test_skip("%s is absent", path);
    return false;
}

static inline fedc_train_config heart_job(const fedc_algorithm_def *def, const char *out) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = HEART_DATA;
    c.model = "heart";
    c.rounds = 6;
    c.clients_per_round = 2;
    c.algorithm.def = def;
    c.algorithm.batch_size = 16;
    c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1);
    c.steps = 5;
    c.eval_every = 3;
    c.out_dir = fedc_test_tmp(out);
    c.quiet = true;
    c.threads = 1;
    return c;
}

/* Fashion-MNIST's logistic model over 20 clients of Dirichlet(0.1) labels, where
 * the clients' drift is strong. */
static inline fedc_train_config fashion_job(const fedc_algorithm_def *def, const char *out) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = FASHION_DATA;
    c.partition = "dirichlet:0.1";
    c.num_clients = 20;
    c.model = "logistic";
    c.algorithm.def = def;
    c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.05);
    c.rounds = 6;
    c.clients_per_round = 5;
    c.steps = 10;
    c.eval_every = 6;
    c.eval_clients = 10;
    c.out_dir = fedc_test_tmp(out);
    c.quiet = true;
    return c;
}

/* FEMNIST-LEAF's training writers, tested on their test splits, with the logistic
 * model and 10 clients a round; false if the sets are not there. The paths are
 * kept in the caller's train and test buffers. */
static inline bool femnist_job(const fedc_algorithm_def *def, const char *out, char train[512], char test[512],
                               fedc_train_config *c) {
    const char *tr = fedc_test_data("femnist-leaf/train"), *te = fedc_test_data("femnist-leaf/test");
    if (!have_data(tr) || !have_data(te)) return false;
    snprintf(train, 512, "%s", tr);
    snprintf(test, 512, "%s", te);
    fedc_train_defaults(c);
    c->data = train, c->test_data = test;
    c->model = "logistic";
    c->algorithm.def = def;
    c->clients_per_round = 10, c->eval_every = 0, c->quiet = true;
    c->out_dir = fedc_test_tmp(out);
    return true;
}

/* Whether the two jobs' checkpoints hold the same tensors, bit for bit (their
 * metadata differ: seconds, ...). */
static inline bool same_checkpoints(const char *dir_a, const char *dir_b) {
    char pa[700], pb[700];
    snprintf(pa, sizeof pa, "%s/checkpoint.safetensors", dir_a);
    snprintf(pb, sizeof pb, "%s/checkpoint.safetensors", dir_b);
    fedc_safetensors *a = NULL, *b = NULL;
    bool same = fedc_safetensors_read(pa, &a) == FEDC_OK && fedc_safetensors_read(pb, &b) == FEDC_OK &&
                fedc_safetensors_count(a) == fedc_safetensors_count(b) && fedc_safetensors_count(a) > 0;
    for (int i = 0; same && i < fedc_safetensors_count(a); i++) {
        fedc_tensor_entry x = fedc_safetensors_tensor(a, i), y = fedc_safetensors_tensor(b, i);
        size_t n = fedc_type_bytes(&x.type);
        same = !strcmp(x.name, y.name) && n == fedc_type_bytes(&y.type) && memcmp(x.data, y.data, n) == 0;
    }
    fedc_safetensors_destroy(a);
    fedc_safetensors_destroy(b);
    return same;
}

/* A job of 6 rounds, checkpointed every 3, run whole and as 3 rounds then a
 * resume: the two end with the same bits (the client state comes back from the
 * store as it was at the checkpoint). `c` is the whole job's config. */
/* c with out_dir `dir` under the test's directory: rounds whole, then rounds/2
 * and a resume to rounds in another: whether the two end with the same bits. */
static inline bool resume_matches(fedc_train_config c, const char *dir) {
    char whole[512], part[600];
    snprintf(whole, sizeof whole, "%s", fedc_test_tmp(dir));
    snprintf(part, sizeof part, "%s-resumed", whole);
    int rounds = c.rounds;
    fedc_train_result r;
    c.checkpoint_every = rounds / 2, c.out_dir = whole;
    CHECK_OK(fedc_train(&c, &r));
    c.out_dir = part, c.rounds = rounds / 2;
    CHECK_OK(fedc_train(&c, &r));
    c.rounds = rounds, c.resume = true;
    CHECK_OK(fedc_train(&c, &r));
    return same_checkpoints(whole, part);
}

static inline void check_resume_is_bitwise(fedc_train_config c, const char *tag) {
    char name[64], whole[600], part[600]; /* fedc_test_tmp's buffers rotate: keep copies */
    snprintf(name, sizeof name, "%s-whole", tag);
    snprintf(whole, sizeof whole, "%s", fedc_test_tmp(name));
    snprintf(name, sizeof name, "%s-part", tag);
    snprintf(part, sizeof part, "%s", fedc_test_tmp(name));
    fedc_train_config w = c, p = c;
    w.out_dir = whole, p.out_dir = part;
    w.rounds = 6, w.checkpoint_every = p.checkpoint_every = 3;
    fedc_train_result r;
    CHECK_OK(fedc_train(&w, &r));
    p.rounds = 3;
    CHECK_OK(fedc_train(&p, &r));
    CHECK_MSG(!same_checkpoints(w.out_dir, p.out_dir), "%s: 3 rounds and 6 rounds end alike", tag);
    p.rounds = 6;
    p.resume = true;
    CHECK_OK(fedc_train(&p, &r));
    CHECK_EQ_INT(r.rounds_run, 3);
    CHECK_MSG(same_checkpoints(w.out_dir, p.out_dir), "%s: the resumed run does not end where the whole one does", tag);
    /* a resume whose client state is gone is refused, naming the file (it used to
     * start every client afresh, silently) */
    char lost[600], store[700];
    snprintf(name, sizeof name, "%s-lost", tag);
    snprintf(lost, sizeof lost, "%s", fedc_test_tmp(name));
    fedc_train_config q = c;
    q.out_dir = lost, q.rounds = 3, q.checkpoint_every = 3;
    CHECK_OK(fedc_train(&q, &r));
    snprintf(store, sizeof store, "%s/client_state.fcs", lost);
    CHECK(remove(store) == 0);
    q.rounds = 6, q.resume = true;
    CHECK_ERR(fedc_train(&q, &r), FEDC_EIO, "client_state.fcs: the clients' state that the checkpoint needs is missing");
}

#endif
