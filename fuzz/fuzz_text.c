/* The text directory reader: up to 4 .txt files (fuzz_split.h). */
#include "fuzz_split.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *dir = fuzz_split_dir(data, size, ".txt");
    fuzz_dataset(fedc__open_text, dir);
    return 0;
}
