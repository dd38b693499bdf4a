/* The IDX reader (MNIST's images + labels pair). Input: a mode byte, a 16-bit
 * little-endian length of the images file, the images file, then the labels
 * file. Mode % 3: 0 plain files, 1 the same gzip-compressed (.gz names), 2 the
 * bytes as they are under .gz names (damaged gzip streams). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    int mode = data[0] % 3;
    size_t split = (size_t)(data[1] | data[2] << 8);
    data += 3, size -= 3;
    if (split > size) split = size;
    const char *images;
    if (mode == 0) {
        images = "x-images-idx3-ubyte";
        fuzz_write("x-labels-idx1-ubyte", data + split, size - split);
        fuzz_write(images, data, split);
    } else {
        images = "x-images-idx3-ubyte.gz";
        const char *(*put)(const char *, const void *, size_t) = mode == 1 ? fuzz_write_gz : fuzz_write;
        put("x-labels-idx1-ubyte.gz", data + split, size - split);
        put(images, data, split);
    }
    fuzz_dataset(fedc__open_idx, fuzz_path(images));
    return 0;
}
