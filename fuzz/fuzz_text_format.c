/* The program text format (src/ir/parse*.c): the input is the text, NUL bytes
 * and all. A program that parses must print, and its printed text must parse
 * again to the same text (what docs/text-format.md promises). */
#include "fuzz.h"

#include <string.h>

#include "fedc/program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fedc_program *p = NULL, *again = NULL;
    if (fedc_program_parse_n((const char *)data, size, &p) != FEDC_OK) return 0;
    char *text = NULL, *text2 = NULL;
    if (fedc_program_to_string(p, &text) != FEDC_OK) __builtin_trap();
    if (fedc_program_parse(text, &again) != FEDC_OK) __builtin_trap();
    if (fedc_program_to_string(again, &text2) != FEDC_OK || strcmp(text, text2) != 0) __builtin_trap();
    fedc_free(text), fedc_free(text2);
    fedc_program_destroy(again);
    fedc_program_destroy(p);
    return 0;
}
