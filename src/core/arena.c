/* Bump allocation in chained blocks, with marks and resets.
 *
 * Blocks survive resets, so a step that allocates the same sizes each time
 * reaches a steady state where it never calls the system allocator. */
#include "fedc/core.h"

#include <stdint.h>

struct fedc_arena_block {
    fedc_arena_block *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    /* data follows, aligned to max_align_t */
};

#define BLOCK_HEADER ((sizeof(fedc_arena_block) + 63) & ~(size_t)63)

static unsigned char *block_data(fedc_arena_block *b) { return (unsigned char *)b + BLOCK_HEADER; }

void fedc_arena_init(fedc_arena *a, size_t block_size) {
    a->head = a->first = NULL;
    a->block_size = block_size ? block_size : 64 * 1024;
}

void fedc_arena_release(fedc_arena *a) {
    fedc_arena_block *b = a->first;
    while (b) {
        fedc_arena_block *next = b->next;
        fedc_free(b);
        b = next;
    }
    a->head = a->first = NULL;
}

/* Offset in `b` at which `size` bytes aligned to `align` fit, or SIZE_MAX. */
static size_t fit(const fedc_arena_block *b, size_t size, size_t align) {
    uintptr_t base = (uintptr_t)block_data((fedc_arena_block *)b);
    size_t off = (size_t)(((base + b->used + align - 1) & ~(uintptr_t)(align - 1)) - base);
    if (off > b->size || size > b->size - off) return SIZE_MAX;
    return off;
}

void *fedc_arena_alloc(fedc_arena *a, size_t size, size_t align) {
    if (align < 16) align = 16;
    /* Reuse kept blocks after the current one before asking the system. */
    for (fedc_arena_block *b = a->head; b; b = b->next) {
        size_t off = fit(b, size, align);
        if (off != SIZE_MAX) {
            a->head = b;
            b->used = off + size;
            return block_data(b) + off;
        }
    }
    size_t want = size + align;
    if (want < size || want > SIZE_MAX - BLOCK_HEADER) goto oom; /* overflow */
    if (want < a->block_size) want = a->block_size;
    fedc_arena_block *b = fedc_malloc(BLOCK_HEADER + want);
    if (!b) goto oom;
    b->next = NULL;
    b->size = want;
    b->used = 0;
    if (!a->first) {
        a->first = b;
    } else {
        fedc_arena_block *last = a->head ? a->head : a->first;
        while (last->next) last = last->next;
        last->next = b;
    }
    a->head = b;
    size_t off = fit(b, size, align);
    b->used = off + size;
    return block_data(b) + off;
oom:
    fedc_error(FEDC_ENOMEM, "arena: cannot allocate %zu bytes", size);
    return NULL;
}

fedc_arena_mark fedc_arena_mark_get(const fedc_arena *a) {
    fedc_arena_mark m = {a->head, a->head ? a->head->used : 0};
    return m;
}

void fedc_arena_reset_to(fedc_arena *a, fedc_arena_mark mark) {
    if (!mark.block) {
        fedc_arena_reset(a);
        return;
    }
    a->head = mark.block;
    mark.block->used = mark.used;
    for (fedc_arena_block *b = mark.block->next; b; b = b->next) b->used = 0;
}

void fedc_arena_reset(fedc_arena *a) {
    for (fedc_arena_block *b = a->first; b; b = b->next) b->used = 0;
    a->head = a->first;
}

size_t fedc_arena_capacity(const fedc_arena *a) {
    size_t total = 0;
    for (const fedc_arena_block *b = a->first; b; b = b->next) total += b->size;
    return total;
}
