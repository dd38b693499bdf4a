/* FedJAX client records (zlib + msgpack, src/data/fedjax_records.c) without
 * SQLite around them: a 16-bit little-endian num_examples, then the blob. */
#include "fuzz.h"

#include "formats/fedjax_records.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    fedc_client_data *c = NULL;
    if (fedc__fedjax_decode("fuzz.sqlite", "c", data[0] | data[1] << 8, data + 2, size - 2, &c) == FEDC_OK)
        fuzz_touch_client(c);
    fedc_client_data_destroy(c);
    return 0;
}
