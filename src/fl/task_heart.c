/* UCI Heart Disease silos: fedc_heart_disease_hook standardises every client
 * with the statistics of the training clients, computed here once. */
#include "fl/train.h"

fedc_status fedc__heart_prepare(trainer *t, void **ctx) {
    int64_t n = fedc_dataset_num_clients(t->train);
    fedc_client_data **clients = fedc_calloc((size_t)(n ? n : 1), sizeof *clients);
    if (!clients) return fedc_error(FEDC_ENOMEM, "train: out of memory");
    fedc_status st = FEDC_OK;
    for (int64_t i = 0; !st && i < n; i++) st = fedc_dataset_client(t->train, i, &clients[i]);
    if (!st) st = fedc_heart_disease_stats((const fedc_client_data *const *)clients, n, t->heart_mean, t->heart_std);
    for (int64_t i = 0; i < n; i++) fedc_client_data_destroy(clients[i]);
    fedc_free(clients);
    t->heart.mean = t->heart_mean;
    t->heart.std = t->heart_std;
    t->heart.impute_missing = true;
    *ctx = &t->heart;
    return st;
}
