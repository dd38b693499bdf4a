/* What the deployment tests share: a small LEAF dataset of EMNIST-shaped
 * clients written by the test (so the tests need no downloaded data), and the
 * configuration of a training job on it that both fedc_train and a plan use. */
#ifndef FEDC_TEST_DEPLOY_CASE_H
#define FEDC_TEST_DEPLOY_CASE_H

#include <stdio.h>
#include <string.h>

#include "fedc/fl.h"

enum { CASE_CLIENTS = 5 };

/* CASE_CLIENTS writers with 3 to 9 examples of 784 pixels in [0, 1] and labels
 * in [0, 62), from a fixed formula; false if the file cannot be written. */
static bool write_case_data(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "{\"users\": [");
    for (int c = 0; c < CASE_CLIENTS; c++) fprintf(f, "%s\"w%d\"", c ? ", " : "", c);
    fprintf(f, "], \"num_samples\": [");
    for (int c = 0; c < CASE_CLIENTS; c++) fprintf(f, "%s%d", c ? ", " : "", 3 + (c * 5) % 7);
    fprintf(f, "], \"user_data\": {");
    for (int c = 0; c < CASE_CLIENTS; c++) {
        int n = 3 + (c * 5) % 7;
        fprintf(f, "%s\"w%d\": {\"x\": [", c ? ", " : "", c);
        for (int i = 0; i < n; i++) {
            fprintf(f, "%s[", i ? ", " : "");
            for (int k = 0; k < 784; k++) fprintf(f, "%s%d", k ? "," : "", (k * 7 + i * 13 + c * 31) % 101 > 60 ? 1 : 0);
            fprintf(f, "]");
        }
        fprintf(f, "], \"y\": [");
        for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? ", " : "", (i * 11 + c * 3) % 62);
        fprintf(f, "]}");
    }
    fprintf(f, "}}\n");
    return fclose(f) == 0;
}

/* FedAvg with a logistic model on that data: batches of 2, dropout-free model,
 * seed 7, `rounds` rounds of `k` clients, quiet, one thread. */
static void case_config(fedc_train_config *c, const char *data, const char *out, int rounds, int k) {
    fedc_train_defaults(c);
    c->data = data;
    c->model = "logistic";
    c->algorithm.batch_size = 2;
    c->seed = 7;
    c->rounds = rounds;
    c->clients_per_round = k;
    c->eval_every = 0;
    c->checkpoint_every = rounds;
    c->threads = 1;
    c->quiet = true;
    c->out_dir = out;
}

#endif
