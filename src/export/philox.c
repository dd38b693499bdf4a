/* Philox4x32-10 for both export targets (philox.h): the rounds of
 * src/core/rng.c, spelled through the target's word operations. */
#include "export/philox.h"

#include <stdio.h>

/* hi and lo 32 bits of the 64-bit product m * x (x a 32-bit word). */
static void mul_hi_lo(const fedc__words *w, uint32_t m, const char *x, char *hi, char *lo) {
    char a[24], k[24], p[24], s[24], h[24];
    w->convert(w, x, false, a);
    w->binary(w, FEDC__WORD_MUL, a, w->constant(w, m, true, k), true, p);
    w->convert(w, w->binary(w, FEDC__WORD_SHR, p, w->constant(w, 32, true, s), true, h), true, hi);
    w->convert(w, p, true, lo);
}

void fedc__philox(const fedc__words *w, char c[4][24], const char *k0, const char *k1) {
    char key0[24], key1[24], w0[24], w1[24];
    snprintf(key0, sizeof key0, "%s", k0), snprintf(key1, sizeof key1, "%s", k1);
    w->constant(w, 0x9E3779B9u, false, w0), w->constant(w, 0xBB67AE85u, false, w1);
    for (int round = 0; round < 10; round++) {
        if (round > 0) { /* Random123 bumps the key between rounds */
            char n0[24], n1[24];
            w->binary(w, FEDC__WORD_ADD, key0, w0, false, n0), w->binary(w, FEDC__WORD_ADD, key1, w1, false, n1);
            snprintf(key0, sizeof key0, "%s", n0), snprintf(key1, sizeof key1, "%s", n1);
        }
        char hi0[24], lo0[24], hi1[24], lo1[24], a[24], y0[24], b[24], y2[24];
        mul_hi_lo(w, 0xD2511F53u, c[0], hi0, lo0);
        mul_hi_lo(w, 0xCD9E8D57u, c[2], hi1, lo1);
        w->binary(w, FEDC__WORD_XOR, w->binary(w, FEDC__WORD_XOR, hi1, c[1], false, a), key0, false, y0);
        w->binary(w, FEDC__WORD_XOR, w->binary(w, FEDC__WORD_XOR, hi0, c[3], false, b), key1, false, y2);
        snprintf(c[0], 24, "%s", y0), snprintf(c[1], 24, "%s", lo1);
        snprintf(c[2], 24, "%s", y2), snprintf(c[3], 24, "%s", lo0);
    }
}
