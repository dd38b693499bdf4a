/* SecAgg's message decoder (src/deploy/secagg_msg.c), what a server and its
 * clients run on every message of secure aggregation, and the client and server
 * that take decoded messages further: the input is the message. A message that
 * decodes must encode to the same bytes (the format has one spelling). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "deploy/secagg.h"

static void touch(const void *bytes, size_t size) {
    for (size_t i = 0; i < size; i++) fuzz_sink += ((const unsigned char *)bytes)[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fedc__sa_msg m;
    if (fedc__sa_decode(data, size, &m) == FEDC_OK) {
        void *again = NULL;
        size_t n = 0;
        if (fedc__sa_encode(&m, &again, &n) == FEDC_OK && (n != size || memcmp(again, data, size))) abort();
        fedc_free(again);
        fedc__sa_msg_free(&m);
    }
    /* a client at round 1 given the bytes as the keys message; a server at round 0 */
    const fedc__sa_params p = {.threshold = 2, .length = 4, .neighbours = 0, .graph_seed = 1};
    fedc__sa_client *c = NULL;
    fedc__sa_server *s = NULL;
    void *out = NULL;
    size_t n = 0;
    if (fedc__sa_client_create(&c, 5, &p) == FEDC_OK && fedc__sa_client_advertise(c, &out, &n) == FEDC_OK) {
        fedc_free(out), out = NULL;
        if (fedc__sa_client_share(c, data, size, &out, &n) == FEDC_OK) touch(out, n);
        fedc_free(out);
    }
    if (fedc__sa_server_create(&s, &p) == FEDC_OK) fuzz_sink += fedc__sa_server_receive(s, data, size);
    fedc__sa_client_destroy(c);
    fedc__sa_server_destroy(s);
    return 0;
}
