/* The INI reader behind `fedc train --config` (cli/config.c): the input is the
 * file. Every setting it hands out is read whole; a bad line is an error with its
 * line number, never a crash. */
#include <stdlib.h>
#include <string.h>

#include "../cli/cli.h"
#include "fuzz.h"

static bool take(void *user, const char *name, const char *value, int line) {
    (void)user;
    fuzz_sink += (unsigned)strlen(name) + (unsigned)strlen(value) + (unsigned)line;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = NULL;
    (void)cli_config_read("fuzz", fuzz_write("config.ini", data, size), take, NULL, &text);
    free(text);
    return 0;
}
