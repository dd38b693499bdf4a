/* philox.h — Philox4x32-10, the block function of fedc's counter stream
 * (src/core/rng.c, Random123's rounds), written once for both export targets
 * (internal). A target spells the few operations on unsigned 32- and 64-bit
 * words the rounds need: MLIR as arith ops on scalars in a loop body
 * (mlir_random.c), StableHLO as ops on whole ui32/ui64 tensors
 * (stablehlo_random.c). Names are SSA values, at most 23 characters. */
#ifndef FEDC_EXPORT_PHILOX_H
#define FEDC_EXPORT_PHILOX_H

#include <stdbool.h>
#include <stdint.h>

typedef enum fedc__word_op { FEDC__WORD_ADD, FEDC__WORD_MUL, FEDC__WORD_XOR, FEDC__WORD_SHR } fedc__word_op;

/* A target's spelling of word operations; `wide`: on 64-bit words, else 32.
 * A target embeds it as the first member of its own context. */
typedef struct fedc__words fedc__words;
struct fedc__words {
    /* The constant v, into out (of 24). */
    const char *(*constant)(const fedc__words *w, uint64_t v, bool wide, char *out);
    /* out = a op b (a logical shift right for SHR; wrapping add and mul). */
    const char *(*binary)(const fedc__words *w, fedc__word_op op, const char *a, const char *b, bool wide, char *out);
    /* x zero-extended to 64 bits, or (from_wide) x's low 32 bits. */
    const char *(*convert)(const fedc__words *w, const char *x, bool from_wide, char *out);
};

/* Philox4x32-10 on the counter c (four 32-bit words, replaced by the block's
 * words) with the key k0, k1. */
void fedc__philox(const fedc__words *w, char c[4][24], const char *k0, const char *k1);

#endif
