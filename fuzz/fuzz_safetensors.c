/* The .safetensors reader (checkpoints): the input is the file. */
#include "fuzz.h"

#include "fedc/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fedc_safetensors *s = NULL;
    if (fedc_safetensors_read(fuzz_write("x.safetensors", data, size), &s) != FEDC_OK) return 0;
    for (int i = 0; i < fedc_safetensors_count(s); i++) {
        fedc_tensor_entry e = fedc_safetensors_tensor(s, i), found;
        for (size_t k = 0; k < fedc_type_bytes(&e.type); k++) fuzz_sink += ((const unsigned char *)e.data)[k];
        if (fedc_safetensors_find(s, e.name, &found) != FEDC_OK) __builtin_trap(); /* a listed name is found */
    }
    const char *v = fedc_safetensors_metadata(s, "format");
    if (v) fuzz_sink += (unsigned)v[0];
    fedc_safetensors_destroy(s);
    return 0;
}
