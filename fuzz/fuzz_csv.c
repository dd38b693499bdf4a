/* The CSV silos reader: a directory of up to 4 .data files (fuzz_split.h). */
#include "fuzz_split.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *dir = fuzz_split_dir(data, size, ".data");
    fuzz_dataset(fedc__open_csv, dir);
    return 0;
}
