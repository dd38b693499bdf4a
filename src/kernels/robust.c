/* Robust aggregators (fedc/robust.h): the dispatch to each family's file
 * (robust_coordinate.c, robust_krum.c, robust_geomed.c), over a cohort's values
 * (robust_rows.c). Their settings and checks are core/robust_spec.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/robust.h"

/* ------------------------------------------------------------ aggregate -- */

static fedc_status check_weights(const double *w, int n) {
    for (int i = 0; w && i < n; i++)
        if (!(w[i] >= 0 && isfinite(w[i])))
            return fedc_error(FEDC_EINVAL, "robust aggregation: client %d's weight %g must be finite and >= 0", i, w[i]);
    return FEDC_OK;
}

static fedc_status run(const fedc_robust *r, const fedc__robust_set *s, const float *center, float *out, int *sel,
                       int *nsel) {
    int n = s->n, f = r->f;
    *nsel = 0;
    switch (r->kind) {
    case FEDC_ROBUST_MEDIAN:
    case FEDC_ROBUST_TRIMMED_MEAN:
    case FEDC_ROBUST_MEAN:
        for (int i = 0; i < n; i++) sel[i] = i;
        if (r->kind == FEDC_ROBUST_MEAN) return fedc__robust_mean(s, sel, n, out);
        if (r->kind == FEDC_ROBUST_MEDIAN) return fedc__robust_coordinate(s, sel, n, FEDC__COORD_MEDIAN, 0, out);
        return fedc__robust_coordinate(s, sel, n, FEDC__COORD_TRIMMED, (int)floor(r->beta * n), out);
    case FEDC_ROBUST_KRUM:
    case FEDC_ROBUST_MULTIKRUM: {
        int keep = r->kind == FEDC_ROBUST_KRUM ? 1 : r->m ? r->m : n - f;
        fedc_status st = fedc__robust_krum(s, f, keep, sel);
        *nsel = keep;
        return st ? st : fedc__robust_mean(s, sel, keep, out);
    }
    case FEDC_ROBUST_BULYAN: {
        fedc_status st = fedc__robust_bulyan_select(s, f, sel);
        *nsel = n - 2 * f;
        return st ? st : fedc__robust_coordinate(s, sel, n - 2 * f, FEDC__COORD_NEAREST, n - 4 * f, out);
    }
    case FEDC_ROBUST_GEOMED: return fedc__robust_geomed(s, r, out);
    case FEDC_ROBUST_CCLIP: return fedc__robust_cclip(s, r, center, out);
    }
    return fedc_error(FEDC_EINVAL, "robust aggregation: no aggregator of kind %d", (int)r->kind);
}

fedc_status fedc__robust_aggregate_set(const fedc_robust *r, const fedc__robust_set *set, const float *center,
                                      float *out, int *kept, int *nkept) {
    int n = set->n;
    fedc_status st = fedc_robust_check(r, n < 1 ? -1 : n);
    if (!st) st = check_weights(set->w, n);
    if (!st && set->d < 0) st = fedc_error(FEDC_EINVAL, "robust aggregation: %lld coordinates", (long long)set->d);
    if (st) return st;
    int *sel = fedc_malloc((size_t)n * sizeof *sel), nsel = 0;
    if (!sel) return fedc_error(FEDC_ENOMEM, "robust aggregation: no memory for %d clients", n);
    fedc__robust_set s = *set;
    if (r->kind == FEDC_ROBUST_KRUM) s.w = NULL; /* the one update, as it is */
    st = run(r, &s, center, out, sel, &nsel);
    if (!st && kept) memcpy(kept, sel, (size_t)nsel * sizeof *sel);
    if (nkept) *nkept = st ? 0 : nsel;
    fedc_free(sel);
    return st;
}

fedc_status fedc_robust_aggregate_vectors(const fedc_robust *r, const float *const *x, int n, int64_t d, const double *w,
                                          const float *center, float *out, int *kept, int *nkept, fedc_pool *pool) {
    fedc__robust_set s = {.x = x, .n = n, .d = d, .w = w, .pool = pool};
    return fedc__robust_aggregate_set(r, &s, center, out, kept, nkept);
}
