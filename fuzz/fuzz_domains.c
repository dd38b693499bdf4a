/* The reader of each client's domain (src/fl/train_domains.c): the input is the
 * text of `fedc train --client-domains FILE` or a plan's domains.txt, "client_id,
 * domain" lines, looked up for a dataset of eight clients ids "0" to "7" under
 * agnostic_fedavg (num_domains 2, so the range check runs too). A bad line, a
 * domain out of range or a line too long is an error, never a crash. */
#include "fl/train.h"
#include "fuzz.h"

static fedc_dataset *clients(void) {
    static fedc_dataset *d;
    if (!d && fedc_synthetic_fedprox(0, 0, 8, 1, &d)) d = NULL;
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    trainer t = {.train = clients(), .k = 4};
    if (!t.train) return 0;
    t.alg.def = &fedc_algorithm_agnostic_fedavg;
    if (!fedc__train_client_domains_text(&t, (const char *)data, size, "fuzz domains.txt"))
        for (int64_t i = 0; i < fedc_dataset_num_clients(t.train); i++) fuzz_sink += (unsigned)(t.client_domain[i] + 1); /* -1: absent */
    fedc_free(t.client_domain);
    fedc_free(t.meta_domain);
    return 0;
}
