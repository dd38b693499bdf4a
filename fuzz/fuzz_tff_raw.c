/* The TensorFlow Federated HDF5 reader on raw bytes: the input is the .h5 file.
 * Damaged HDF5 metadata reaches libhdf5's own parser, which (1.10) hangs, leaks
 * or crashes on some of it by itself, so this harness finds libhdf5's bugs as
 * well as fedc's and is not in the default set of fuzz/run (docs/fuzzing.md):
 * run it by name. fuzz_tff covers fedc's reader on well-formed files. */
#include "formats/formats.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_dataset(fedc__open_tff, fuzz_write("x.h5", data, size));
    return 0;
}
