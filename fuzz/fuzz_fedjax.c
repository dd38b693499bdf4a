/* The FedJAX SQLite reader: the input is the database file. */
#include "formats/formats.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_dataset(fedc__open_fedjax, fuzz_write("x.sqlite", data, size));
    return 0;
}
