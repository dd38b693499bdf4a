/* The CIFAR-10 reader (the tarball's pickled python batches). Input: one batch
 * file, read on its own and as data_batch_1 of a directory (through the
 * directory's listing). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *dir = fuzz_dir("batches"); /* kept until the next fuzz_dir */
    fuzz_dataset(fedc__open_cifar10, fuzz_write("batches/data_batch_1", data, size));
    fuzz_dataset(fedc__open_cifar10, dir);
    return 0;
}
