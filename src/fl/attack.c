/* Byzantine clients (fedc/attack.h): which clients are malicious, and what they
 * send, as ops of the round program. ALIE's and IPM's statistics are the honest
 * clients' (the weight 1 − malicious_i, unweighted by examples), as the papers'
 * omniscient attackers know them: a mean over the clients and the mean of the
 * squared deviations, at the server, broadcast back to the malicious ones. */
#include <math.h>
#include <stdlib.h>

#include "fedc/attack.h"
#include "fl/fl.h"

static const char *const names[] = {"none", "sign_flip", "scale", "gaussian", "alie", "ipm", "label_flip"};
static const char *const settings[] = {NULL, NULL, "s", "sigma", "z", "eps", NULL};
static const double defaults[] = {0, 0, -1, 1, 1, 0.5, 0};

const char *fedc_attack_name(fedc_attack_kind kind) {
    return kind >= 0 && kind < (int)(sizeof names / sizeof *names) ? names[kind] : "?";
}

fedc_status fedc_attack_parse(const char *spec, fedc_attack *out) {
    size_t len = strcspn(spec ? spec : "none", ":");
    if (!spec) spec = "none";
    for (int k = 0; k < (int)(sizeof names / sizeof *names); k++) {
        if (strlen(names[k]) != len || strncmp(spec, names[k], len)) continue;
        fedc_attack a = {.kind = (fedc_attack_kind)k, .value = defaults[k], .fraction = out->fraction};
        if (spec[len] == ':') {
            const char *item = spec + len + 1, *name = settings[k];
            size_t n = name ? strlen(name) : 0;
            char *end;
            if (!name || strncmp(item, name, n) || item[n] != '=')
                return fedc_error(FEDC_EINVAL, "attack %s takes %s%s, not '%s'", names[k], name ? name : "no settings",
                                  name ? "=X" : "", item);
            a.value = strtod(item + n + 1, &end);
            if (end == item + n + 1 || *end || !isfinite(a.value))
                return fedc_error(FEDC_EINVAL, "attack %s: %s needs a number, not '%s'", names[k], name, item + n + 1);
            if (k == FEDC_ATTACK_GAUSSIAN && !(a.value >= 0))
                return fedc_error(FEDC_EINVAL, "attack gaussian: sigma %g must be >= 0", a.value);
        }
        *out = a;
        return FEDC_OK;
    }
    return fedc_error(FEDC_EINVAL, "unknown attack '%.*s' (there are: sign_flip, scale:s=S, gaussian:sigma=S, alie:z=Z, "
                      "ipm:eps=E, label_flip, none)", (int)len, spec);
}

bool fedc_attack_malicious(const fedc_attack *a, uint64_t seed, int64_t client) {
    if (a->kind == FEDC_ATTACK_NONE || !(a->fraction > 0)) return false;
    /* a stream of its own: round 0x41545441 ("ATTA"), the client, step 0 */
    fedc_rng_stream s = fedc_rng_stream_make(seed, 0x41545441u, (uint32_t)client, (uint32_t)((uint64_t)client >> 32));
    return fedc_rng_uniform_f64(s, 0) < a->fraction;
}

void fedc_attack_labels(const fedc_attack *a, int classes, int32_t *y, int64_t n) {
    if (a->kind != FEDC_ATTACK_LABEL_FLIP) return;
    for (int64_t i = 0; i < n; i++)
        if (y[i] >= 0 && y[i] < classes) y[i] = classes - 1 - y[i];
}

fedc_value fedc__attack_malicious(fedc_program *p) {
    fedc_value v = fedc_program_find_input(p, FEDC_ATTACK_MALICIOUS);
    return v != FEDC_NONE ? v : fedc_input(p, FEDC_ATTACK_MALICIOUS, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
}

bool fedc__attack_per_client(const fedc_attack *a) {
    return a->kind == FEDC_ATTACK_SIGN_FLIP || a->kind == FEDC_ATTACK_SCALE || a->kind == FEDC_ATTACK_GAUSSIAN;
}

bool fedc__attack_from_honest(const fedc_attack *a) { return a->kind == FEDC_ATTACK_ALIE || a->kind == FEDC_ATTACK_IPM; }

/* Each leaf's malicious value, from the leaf v (@clients), the honest clients'
 * weights h and their count. */
static fedc_value attacked(fedc_program *p, const fedc_attack *a, fedc_value v, fedc_value h, fedc_value key, int leaf) {
    fedc_value s = fedc_scalar(p, FEDC_F32, a->value);
    switch (a->kind) {
    case FEDC_ATTACK_SIGN_FLIP: return fedc_neg(p, v);
    case FEDC_ATTACK_SCALE: return fedc_mul(p, s, v);
    case FEDC_ATTACK_GAUSSIAN:
        return fedc_mul(p, s, fedc_random_normal(p, fedc__key_plus(p, key, (1 << 30) + leaf), fedc_value_type(p, v)));
    default: break;
    }
    fedc_value mean = fedc_weighted_mean(p, v, h); /* the honest clients' */
    if (a->kind == FEDC_ATTACK_IPM) return fedc_broadcast(p, fedc_mul(p, fedc_neg(p, s), mean));
    fedc_value dev = fedc_sub(p, v, fedc_broadcast(p, mean));
    fedc_value sd = fedc_sqrt(p, fedc_weighted_mean(p, fedc_mul(p, dev, dev), h));
    return fedc_broadcast(p, fedc_sub(p, mean, fedc_mul(p, s, sd)));
}

fedc_tree *fedc_attack_update(fedc_program *p, const fedc_attack *a, const fedc_tree *update, fedc_value malicious,
                              fedc_value key) {
    if (a->kind == FEDC_ATTACK_NONE || a->kind == FEDC_ATTACK_LABEL_FLIP) return (fedc_tree *)update; /* data, not update */
    fedc_value one = fedc_scalar(p, FEDC_F32, 1), bad = fedc_gt(p, malicious, fedc_scalar(p, FEDC_F32, 0.5));
    fedc_value honest = fedc_sub(p, one, malicious);
    fedc_tree *t = fedc_tree_new(p);
    for (int i = 0; t && i < fedc_tree_size(update); i++) {
        fedc_value v = fedc_tree_value(update, i);
        fedc_tree_set(p, t, fedc_tree_name(update, i), fedc_select(p, bad, attacked(p, a, v, honest, key, i), v));
    }
    return fedc_program_status(p) ? NULL : t;
}
