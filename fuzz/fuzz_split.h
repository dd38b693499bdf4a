/* For the directory readers: the input cut at each 0x1e byte (ASCII's record
 * separator) into up to 4 files of a fresh directory, named a, b, c, d plus a
 * suffix, so that the agreement between files is exercised too. */
#ifndef FEDC_FUZZ_SPLIT_H
#define FEDC_FUZZ_SPLIT_H

#include <stdio.h>
#include <string.h>

#include "fuzz.h"

static inline const char *fuzz_split_dir(const uint8_t *data, size_t size, const char *suffix) {
    const char *dir = fuzz_dir("d");
    char name[64];
    for (int k = 0; k < 4; k++) {
        const uint8_t *sep = k < 3 ? memchr(data, 0x1e, size) : NULL;
        size_t len = sep ? (size_t)(sep - data) : size;
        snprintf(name, sizeof name, "d/%c%s", 'a' + k, suffix);
        fuzz_write(name, data, len);
        if (!sep) break;
        data += len + 1, size -= len + 1;
    }
    return dir;
}

#endif
