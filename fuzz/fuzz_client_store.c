/* The per-client state store (src/fl/client_store.c): the input is the store
 * file. The shape passed to open is the one the file's header claims (when in
 * range), so that inputs get past the shape check to the state block, the index
 * and the records; then every client (at most 64) is read at a few rounds, the
 * store is counted, resumed from its protected round and written once. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "fl/client_store.h"

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t clients = 4;
    size_t bytes = 16;
    char layout[256] = "fuzz";
    if (size >= 64) { /* the header's claims, where a store of this size could hold them */
        uint64_t c = le(data + 16, 8), b = le(data + 24, 8), len = le(data + 12, 4);
        if (c >= 1 && c <= 1 << 20) clients = (int64_t)c;
        if (b >= 1 && b <= size) bytes = (size_t)b;
        if (len < sizeof layout && 64 + len <= size) memcpy(layout, data + 64, len), layout[len] = '\0';
    }
    fedc__client_store *s = NULL;
    if (fedc__client_store_open(&s, fuzz_write("x.store", data, size), clients, bytes, layout) != FEDC_OK) return 0;
    unsigned char *rec = malloc(bytes);
    if (!rec) abort();
    uint32_t protect = fedc__client_store_protected_round(s);
    const uint32_t rounds[] = {0, 1, 3, protect, protect + 1, UINT32_MAX};
    for (int64_t c = 0; c < clients && c < 64; c++)
        for (size_t r = 0; r < sizeof rounds / sizeof rounds[0]; r++) {
            void *dst = rec;
            bool found = false;
            if (fedc__client_store_read(s, rounds[r], 1, &c, &dst, &found) == FEDC_OK && found)
                for (size_t k = 0; k < bytes; k++) fuzz_sink += rec[k];
        }
    fuzz_sink += (unsigned)fedc__client_store_count(s);
    if (fedc__client_store_resume(s, protect) == FEDC_OK) {
        int64_t c = 0;
        const void *src = rec;
        memset(rec, 0x5a, bytes);
        if (fedc__client_store_write(s, protect, 1, &c, &src) == FEDC_OK) {
            void *dst = rec;
            bool found = false;
            if (fedc__client_store_read(s, protect + 1, 1, &c, &dst, &found) != FEDC_OK || !found || rec[0] != 0x5a)
                __builtin_trap(); /* a record written reads back */
        }
    }
    free(rec);
    fedc__client_store_close(s);
    return 0;
}
