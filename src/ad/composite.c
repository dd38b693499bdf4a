/* The derivatives of the transformer layers' ops by their composite forms
 * (composite.h; the forms themselves are src/ir/decompose.c). */
#include "ad/composite.h"

#include <stdio.h>

/* b(a0, ..., ak) = composite of n: its vjp, inlined with n's operands and ct. */
fedc_status fedc__composite_vjp(fedc__ad *ad, fedc_value v, fedc_value ct, unsigned which) {
    const fedc__node *n = &ad->src->nodes[v];
    const char *wrt[8];
    char names[8][8];
    int slot[8], nwrt = 0;
    fedc_program *b = NULL, *d = NULL;
    fedc_status st = fedc_program_create(&b);
    if (st) return st;
    fedc_value args[8] = {0}; /* the first n->nin are set below */
    for (int i = 0; i < n->nin && i < 8; i++) {
        snprintf(names[i], sizeof names[i], "a%d", i);
        args[i] = fedc_input(b, names[i], ad->src->nodes[n->in[i]].type);
        if ((which >> i & 1) && ad->active[n->in[i]] && fedc_dtype_is_float(ad->src->nodes[n->in[i]].type.dtype)) {
            wrt[nwrt] = names[i];
            slot[nwrt++] = i;
        }
    }
    st = fedc_program_output(b, "y", fedc__composite(b, n, args));
    if (!st && nwrt) st = fedc_vjp(b, wrt, nwrt, &d);
    if (!st && nwrt) {
        fedc_value in[9], res[16];
        for (int i = 0; i < n->nin; i++) in[i] = ad->primal[n->in[i]];
        in[n->nin] = ct;
        st = fedc_program_inline(ad->g, d, in, res);
        for (int j = 0; !st && j < nwrt; j++) fedc__ad_accum(ad, n->in[slot[j]], res[1 + j]);
    }
    fedc_program_destroy(b);
    fedc_program_destroy(d);
    return st;
}
