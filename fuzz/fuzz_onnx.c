/* The ONNX importer (fedc_program_from_onnx, libfedc_formats): the input is the
 * model's bytes. A model that imports must print as a program in the text format
 * (which verifies it), and its parameters' bytes are all read. Seeds: the models
 * test_onnx_import writes (FEDC_ONNX_WRITE_DIR=fuzz/corpus/onnx build/test_onnx_import,
 * then the .npy files removed). */
#include "fuzz.h"

#include "fedc/formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fedc_onnx_model *m = NULL;
    fedc_onnx_options o = {.batch = 2};
    if (fedc_program_from_onnx_bytes(data, size, "fuzz.onnx", &o, &m) != FEDC_OK) return 0;
    char *text = NULL;
    if (fedc_program_to_string(m->program, &text) != FEDC_OK) __builtin_trap(); /* an import is a valid program */
    fuzz_sink += (unsigned)text[0];
    fedc_free(text);
    for (int i = 0; i < m->num_params; i++) {
        const fedc_tensor_entry *e = &m->param_values[i];
        for (size_t k = 0; k < fedc_type_bytes(&e->type); k++) fuzz_sink += ((const unsigned char *)e->data)[k];
    }
    fedc_onnx_model_destroy(m);
    return 0;
}
