/* The .npy reader: the input is the file. */
#include "fuzz.h"

#include "fedc/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fedc_type type;
    void *values = NULL;
    if (fedc_npy_read(fuzz_write("x.npy", data, size), &type, &values) != FEDC_OK) return 0;
    for (size_t k = 0; k < fedc_type_bytes(&type); k++) fuzz_sink += ((const unsigned char *)values)[k];
    fedc_free(values);
    return 0;
}
