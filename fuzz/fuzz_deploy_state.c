/* A deployed client's state file (src/deploy/client_state.c, what `fedc client
 * --state-dir` reads when it starts again): the input is the file of client
 * "0" of a plan hashed "aa11". A file that loads has every byte read. */
#include "deploy/client_state.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *dir = fuzz_dir("state");
    fuzz_write("state/client-0.safetensors", data, size);
    fedc__client_state k;
    if (fedc__client_state_load(dir, "0", "aa11", "cc33", &k) || !k.file) return 0;
    for (int i = 0; i < fedc_safetensors_count(k.file); i++) {
        fedc_tensor_entry e = fedc_safetensors_tensor(k.file, i);
        const unsigned char *b = e.data;
        for (size_t j = 0; j < fedc_type_bytes(&e.type); j++) fuzz_sink += b[j];
    }
    fuzz_sink += (unsigned)k.pending_round + k.seen;
    fedc_safetensors_destroy(k.file);
    return 0;
}
