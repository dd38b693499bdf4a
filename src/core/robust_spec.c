/* A robust aggregator's settings (fedc/robust.h): the names, the defaults, the
 * --aggregator spec parsed and printed, and the checks with the numbers. Plain
 * data, below every module that names an aggregator: the op's attributes (ir),
 * its kernels and the trainer's options.
 *
 * The checks are the papers' conditions: Krum's score needs n − f − 2 > f
 * (n > 2f + 2, Blanchard et al.'s condition), Bulyan n ≥ 4f + 3; a trimmed mean's
 * beta < 0.5 always keeps a value (2 floor(beta n) < n). Flower clamps Krum's
 * n − f − 2 to at least 1 and so accepts f = 1 with 3 clients; fedc refuses a
 * setting that tolerates none of the f it names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/robust.h"

static const char *const names[] = {"mean", "median", "trimmed_mean", "krum", "multikrum", "bulyan", "geomed", "cclip"};

const char *fedc_robust_name(fedc_robust_kind kind) {
    return kind >= 0 && kind < (int)(sizeof names / sizeof *names) ? names[kind] : "?";
}

fedc_robust fedc_robust_defaults(fedc_robust_kind kind) {
    bool cclip = kind == FEDC_ROBUST_CCLIP;
    return (fedc_robust){.kind = kind, .beta = 0.1, .f = 1, .m = 0, .nu = 1e-6, .iterations = cclip ? 1 : 3,
                         .tolerance = 1e-6, .tau = 1};
}

bool fedc_robust_selects(fedc_robust_kind kind) {
    return kind == FEDC_ROBUST_KRUM || kind == FEDC_ROBUST_MULTIKRUM || kind == FEDC_ROBUST_BULYAN;
}

/* ------------------------------------------------------------- the spec -- */

/* The settings each kind takes, as the spec names them. */
static const char *settings_of(fedc_robust_kind k) {
    switch (k) {
    case FEDC_ROBUST_TRIMMED_MEAN: return "beta=B";
    case FEDC_ROBUST_KRUM: case FEDC_ROBUST_BULYAN: return "f=F";
    case FEDC_ROBUST_MULTIKRUM: return "f=F, m=M";
    case FEDC_ROBUST_GEOMED: return "nu=V, iterations=R, tolerance=T";
    case FEDC_ROBUST_CCLIP: return "tau=T, iterations=L";
    case FEDC_ROBUST_MEDIAN: return "memory=MB"; /* the budget alone, as every robust kind takes */
    case FEDC_ROBUST_MEAN: return "memory=MB";   /* its store's, where ALIE and IPM are made */
    default: return NULL;
    }
}

static bool takes(fedc_robust_kind k, const char *setting) {
    const char *s = settings_of(k);
    if (s && !strcmp(setting, "memory")) return true; /* every robust kind's */
    size_t n = strlen(setting);
    for (; s && *s; s += strcspn(s, ",") + (s[strcspn(s, ",")] == ',')) {
        s += *s == ' ';
        if (!strncmp(s, setting, n) && s[n] == '=') return true;
    }
    return false;
}

/* One "name=value" item of kind k's spec into r. */
static fedc_status parse_item(const char *item, size_t len, fedc_robust *r) {
    char name[32], num[64], *end;
    size_t eq = strcspn(item, "=");
    if (eq >= len || eq >= sizeof name || len - eq - 1 >= sizeof num || eq + 1 == len)
        return fedc_error(FEDC_EINVAL, "aggregator %s: '%.*s' is not name=value (%s takes %s)", fedc_robust_name(r->kind),
                          (int)len, item, fedc_robust_name(r->kind), settings_of(r->kind));
    snprintf(name, sizeof name, "%.*s", (int)eq, item);
    snprintf(num, sizeof num, "%.*s", (int)(len - eq - 1), item + eq + 1);
    if (!takes(r->kind, name))
        return fedc_error(FEDC_EINVAL, "aggregator %s has no setting '%s' (it takes %s)", fedc_robust_name(r->kind), name,
                          settings_of(r->kind));
    bool integer = !strcmp(name, "f") || !strcmp(name, "m") || !strcmp(name, "iterations") || !strcmp(name, "memory");
    double v = integer ? (double)strtol(num, &end, 10) : strtod(num, &end);
    if (*end || !isfinite(v) || (integer && fabs(v) > 1e9))
        return fedc_error(FEDC_EINVAL, "aggregator %s: %s needs %s, not '%s'", fedc_robust_name(r->kind), name,
                          integer ? "an integer of at most 1e9 in size" : "a finite number", num);
    if (!strcmp(name, "beta")) r->beta = v;
    else if (!strcmp(name, "f")) r->f = (int)v;
    else if (!strcmp(name, "m")) r->m = (int)v;
    else if (!strcmp(name, "nu")) r->nu = v;
    else if (!strcmp(name, "iterations")) r->iterations = (int)v;
    else if (!strcmp(name, "memory")) r->memory_mb = (int)v;
    else if (!strcmp(name, "tolerance")) r->tolerance = v;
    else r->tau = v;
    return FEDC_OK;
}

fedc_status fedc_robust_parse(const char *spec, fedc_robust *out) {
    if (!spec) spec = "mean";
    size_t nlen = strcspn(spec, ":");
    int kind = -1;
    for (int k = 0; k < (int)(sizeof names / sizeof *names); k++)
        if (strlen(names[k]) == nlen && !strncmp(spec, names[k], nlen)) kind = k;
    if (kind < 0)
        return fedc_error(FEDC_EINVAL, "unknown aggregator '%.*s' (there are: mean, median, trimmed_mean:beta=B, krum:f=F, "
                          "multikrum:f=F,m=M, bulyan:f=F, geomed, cclip:tau=T)", (int)nlen, spec);
    fedc_robust r = fedc_robust_defaults((fedc_robust_kind)kind);
    if (spec[nlen] == ':') { /* every kind takes settings (the store's memory=MB at least) */
        for (const char *s = spec + nlen + 1;;) {
            size_t len = strcspn(s, ",");
            fedc_status st = parse_item(s, len, &r);
            if (st) return st;
            if (!s[len]) break;
            s += len + 1;
        }
    }
    fedc_status st = fedc_robust_check(&r, 0);
    if (st) return st;
    *out = r;
    return FEDC_OK;
}

/* v in the fewest digits that read back as v. */
static const char *shortest(double v, char *buf, size_t size) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

void fedc_robust_format(const fedc_robust *r, char *buf, size_t size) {
    char a[32], b[32];
    const char *name = fedc_robust_name(r->kind);
    switch (r->kind) {
    case FEDC_ROBUST_TRIMMED_MEAN: snprintf(buf, size, "%s:beta=%s", name, shortest(r->beta, a, sizeof a)); break;
    case FEDC_ROBUST_KRUM: case FEDC_ROBUST_BULYAN: snprintf(buf, size, "%s:f=%d", name, r->f); break;
    case FEDC_ROBUST_MULTIKRUM: snprintf(buf, size, "%s:f=%d,m=%d", name, r->f, r->m); break;
    case FEDC_ROBUST_GEOMED:
        snprintf(buf, size, "%s:nu=%s,iterations=%d,tolerance=%s", name, shortest(r->nu, a, sizeof a), r->iterations,
                 shortest(r->tolerance, b, sizeof b));
        break;
    case FEDC_ROBUST_CCLIP:
        snprintf(buf, size, "%s:tau=%s,iterations=%d", name, shortest(r->tau, a, sizeof a), r->iterations);
        break;
    default: snprintf(buf, size, "%s", name);
    }
}

/* ----------------------------------------------------------- the checks -- */

static fedc_status check_settings(const fedc_robust *r) {
    const char *name = fedc_robust_name(r->kind);
    if (r->kind < FEDC_ROBUST_MEAN || r->kind > FEDC_ROBUST_CCLIP)
        return fedc_error(FEDC_EINVAL, "robust aggregation: no aggregator of kind %d", (int)r->kind);
    if (r->memory_mb < 0)
        return fedc_error(FEDC_EINVAL, "%s: memory %d MiB must be >= 0 (0: no limit)", name, r->memory_mb);
    if (r->kind == FEDC_ROBUST_TRIMMED_MEAN && !(r->beta >= 0 && r->beta < 0.5))
        return fedc_error(FEDC_EINVAL, "trimmed_mean: beta %g must be in [0, 0.5): it cuts floor(beta n) from each end",
                          r->beta);
    bool krums = r->kind == FEDC_ROBUST_KRUM || r->kind == FEDC_ROBUST_MULTIKRUM || r->kind == FEDC_ROBUST_BULYAN;
    if (krums && r->f < 0) return fedc_error(FEDC_EINVAL, "%s: f %d (the Byzantine clients) must be >= 0", name, r->f);
    if (r->kind == FEDC_ROBUST_MULTIKRUM && r->m < 0)
        return fedc_error(FEDC_EINVAL, "multikrum: m %d (the updates kept) must be >= 1, or 0 for n - f", r->m);
    if (r->kind == FEDC_ROBUST_GEOMED && !(r->nu > 0 && r->tolerance >= 0 && r->iterations >= 0))
        return fedc_error(FEDC_EINVAL, "geomed: nu %g must be > 0, tolerance %g >= 0 and iterations %d >= 0", r->nu,
                          r->tolerance, r->iterations);
    if (r->kind == FEDC_ROBUST_CCLIP && !(r->tau > 0 && r->iterations >= 1))
        return fedc_error(FEDC_EINVAL, "cclip: tau %g must be > 0 and iterations %d >= 1", r->tau, r->iterations);
    return FEDC_OK;
}

fedc_status fedc_robust_check(const fedc_robust *r, int n) {
    fedc_status st = check_settings(r);
    if (st || n == 0) return st;
    const char *name = fedc_robust_name(r->kind);
    if (n < 1) return fedc_error(FEDC_EINVAL, "%s: no clients to aggregate (%d)", name, n);
    /* 64-bit: f comes from the user and 4f + 3 must not wrap. */
    long long f = r->f;
    if ((r->kind == FEDC_ROBUST_KRUM || r->kind == FEDC_ROBUST_MULTIKRUM) && n <= 2 * f + 2)
        return fedc_error(FEDC_EINVAL, "%s with f = %lld needs more than 2f + 2 = %lld clients; the round has %d", name,
                          f, 2 * f + 2, n);
    if (r->kind == FEDC_ROBUST_BULYAN && n < 4 * f + 3)
        return fedc_error(FEDC_EINVAL, "bulyan with f = %lld needs at least 4f + 3 = %lld clients; the round has %d",
                          f, 4 * f + 3, n);
    if (r->kind == FEDC_ROBUST_MULTIKRUM && r->m > n)
        return fedc_error(FEDC_EINVAL, "multikrum: m = %d exceeds the round's %d clients", r->m, n);
    return FEDC_OK;
}
