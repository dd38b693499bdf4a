/* The LEAF JSON reader (and src/data/json.c under it): the input is one .json
 * file, or with a leading byte 'z', the rest gzip-compressed as .json.gz. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size && data[0] == 'z') fuzz_dataset(fedc__open_leaf, fuzz_write_gz("x.json.gz", data + 1, size - 1));
    else fuzz_dataset(fedc__open_leaf, fuzz_write("x.json", data, size));
    return 0;
}
