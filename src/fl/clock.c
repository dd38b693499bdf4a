/* The virtual clock's spec (fedc/clock.h) and each client's profile from it:
 * seconds per step, bandwidth and availability, drawn from the run's seed and the
 * client's place in the training data (so a client's profile does not depend on
 * the round, the cohort or the thread count), or read from trace files. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl/clock.h"

/* The clock's streams: fedc_rng_stream_make(seed, tag, client, client >> 32). */
enum { SPEED_TAG = 0x53504544u, BANDWIDTH_TAG = 0x42414e44u, PHASE_TAG = 0x50484153u, CHECKIN_TAG = 0x43484b49u };

fedc_clock_spec fedc_clock_defaults(void) {
    fedc_clock_spec s;
    memset(&s, 0, sizeof s);
    s.bandwidth_a = INFINITY;
    return s;
}

/* ---------------------------------------------------------------- spec -- */

/* A finite number that is all of [text, text + n). */
static bool number(const char *text, size_t n, double *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, text, n);
    buf[n] = 0;
    char *end;
    *out = strtod(buf, &end);
    return end == buf + n && isfinite(*out);
}

/* "A:B" (two numbers) of [v, v + n). */
static bool two_numbers(const char *v, size_t n, double *a, double *b) {
    const char *colon = memchr(v, ':', n);
    return colon && number(v, (size_t)(colon - v), a) && number(colon + 1, n - (size_t)(colon - v) - 1, b);
}

static bool starts(const char *v, size_t n, const char *prefix) {
    size_t k = strlen(prefix);
    return n >= k && !strncmp(v, prefix, k);
}

static fedc_status trace_path(const char *item, const char *v, size_t n, char *dst) {
    if (n == 0 || n >= FEDC_CLOCK_PATH_MAX)
        return fedc_error(FEDC_EINVAL, "--clock %s: trace:FILE needs a file name (under %d bytes)", item,
                          FEDC_CLOCK_PATH_MAX);
    memcpy(dst, v, n);
    dst[n] = 0;
    return FEDC_OK;
}

/* speed=... or bandwidth=...: a positive number, lognormal:MU:SIGMA or trace:FILE. */
static fedc_status parse_dist(const char *item, const char *v, size_t n, bool trace, fedc_clock_dist *kind, double *a,
                              double *b, char *path) {
    if (starts(v, n, "lognormal:")) {
        if (!two_numbers(v + 10, n - 10, a, b) || !(*b >= 0))
            return fedc_error(FEDC_EINVAL, "--clock %s=lognormal:MU:SIGMA needs two numbers, SIGMA >= 0, not '%.*s'",
                              item, (int)(n - 10), v + 10);
        *kind = FEDC_CLOCK_LOGNORMAL;
        return FEDC_OK;
    }
    if (trace && starts(v, n, "trace:")) {
        *kind = FEDC_CLOCK_TRACE;
        *a = *b = 0;
        return trace_path(item, v + 6, n - 6, path);
    }
    *kind = FEDC_CLOCK_FIXED, *b = 0;
    if (!trace && n == 3 && !strncmp(v, "inf", 3)) return *a = INFINITY, FEDC_OK;
    bool ok = number(v, n, a) && (trace ? *a >= 0 : *a > 0);
    if (!ok)
        return fedc_error(FEDC_EINVAL, "--clock %s takes %s, lognormal:MU:SIGMA%s, not '%.*s'", item,
                          trace ? "seconds per step S >= 0" : "bytes per second B > 0, inf", trace ? " or trace:FILE" : "",
                          (int)n, v);
    return FEDC_OK;
}

static fedc_status parse_availability(const char *v, size_t n, fedc_clock_spec *s) {
    s->availability_a = s->availability_b = 0;
    if (n == 6 && !strncmp(v, "always", 6)) return s->availability = FEDC_AVAILABLE_ALWAYS, FEDC_OK;
    if (starts(v, n, "bernoulli:")) {
        s->availability = FEDC_AVAILABLE_BERNOULLI;
        if (number(v + 10, n - 10, &s->availability_a) && s->availability_a > 0 && s->availability_a <= 1)
            return FEDC_OK;
        return fedc_error(FEDC_EINVAL, "--clock availability=bernoulli:P needs P in (0, 1], not '%.*s'", (int)(n - 10),
                          v + 10);
    }
    if (starts(v, n, "diurnal:")) {
        s->availability = FEDC_AVAILABLE_DIURNAL;
        double *p = &s->availability_a, *on = &s->availability_b;
        if (two_numbers(v + 8, n - 8, p, on) && *p > 0 && *on > 0 && *on <= 1) return FEDC_OK;
        return fedc_error(FEDC_EINVAL, "--clock availability=diurnal:PERIOD:ON needs PERIOD > 0 seconds and ON in "
                          "(0, 1], not '%.*s'", (int)(n - 8), v + 8);
    }
    if (starts(v, n, "trace:")) {
        s->availability = FEDC_AVAILABLE_TRACE;
        return trace_path("availability", v + 6, n - 6, s->availability_trace);
    }
    return fedc_error(FEDC_EINVAL, "--clock availability takes always, bernoulli:P, diurnal:PERIOD:ON or trace:FILE, "
                      "not '%.*s'", (int)n, v);
}

static fedc_status parse_item(const char *item, size_t n, fedc_clock_spec *s) {
    const char *eq = memchr(item, '=', n);
    size_t key = eq ? (size_t)(eq - item) : n;
    const char *v = eq ? eq + 1 : item + n;
    size_t vn = eq ? n - key - 1 : 0;
    if (key == 5 && !strncmp(item, "speed", 5) && eq)
        return parse_dist("speed", v, vn, true, &s->speed, &s->speed_a, &s->speed_b, s->speed_trace);
    if (key == 9 && !strncmp(item, "bandwidth", 9) && eq)
        return parse_dist("bandwidth", v, vn, false, &s->bandwidth, &s->bandwidth_a, &s->bandwidth_b, NULL);
    if (key == 12 && !strncmp(item, "availability", 12) && eq) return parse_availability(v, vn, s);
    return fedc_error(FEDC_EINVAL, "--clock: unknown item '%.*s' (there are speed=, bandwidth=, availability=)",
                      (int)n, item);
}

fedc_status fedc_clock_parse(const char *spec, fedc_clock_spec *out) {
    if (!spec || !*spec) return fedc_error(FEDC_EINVAL, "--clock needs a spec, e.g. speed=lognormal:-2:0.5");
    fedc_clock_spec s = fedc_clock_defaults();
    for (const char *at = spec;;) {
        size_t n = strcspn(at, ",");
        fedc_status st = parse_item(at, n, &s);
        if (st) return st;
        if (!at[n]) break;
        at += n + 1;
    }
    *out = s;
    return FEDC_OK;
}

static void format_dist(char *buf, size_t size, const char *item, fedc_clock_dist kind, double a, double b,
                        const char *path) {
    if (kind == FEDC_CLOCK_LOGNORMAL) snprintf(buf, size, "%s=lognormal:%.17g:%.17g", item, a, b);
    else if (kind == FEDC_CLOCK_TRACE) snprintf(buf, size, "%s=trace:%s", item, path);
    else if (isinf(a)) snprintf(buf, size, "%s=inf", item);
    else snprintf(buf, size, "%s=%.17g", item, a);
}

void fedc_clock_format(const fedc_clock_spec *s, char *buf, size_t size) {
    char speed[FEDC_CLOCK_PATH_MAX + 64], bw[128], av[FEDC_CLOCK_PATH_MAX + 64];
    format_dist(speed, sizeof speed, "speed", s->speed, s->speed_a, s->speed_b, s->speed_trace);
    format_dist(bw, sizeof bw, "bandwidth", s->bandwidth, s->bandwidth_a, s->bandwidth_b, "");
    switch (s->availability) {
    case FEDC_AVAILABLE_BERNOULLI: snprintf(av, sizeof av, "availability=bernoulli:%.17g", s->availability_a); break;
    case FEDC_AVAILABLE_DIURNAL:
        snprintf(av, sizeof av, "availability=diurnal:%.17g:%.17g", s->availability_a, s->availability_b);
        break;
    case FEDC_AVAILABLE_TRACE: snprintf(av, sizeof av, "availability=trace:%s", s->availability_trace); break;
    default: snprintf(av, sizeof av, "availability=always");
    }
    snprintf(buf, size, "%s,%s,%s", speed, bw, av);
}

/* -------------------------------------------------------------- traces -- */

struct fedc__clock {
    fedc_clock_spec spec;
    uint64_t seed;
    int64_t n;
    double *seconds_per_step; /* speed=trace: per client (NAN: no line, an error at creation) */
    int64_t *window_at;       /* availability=trace: client i's windows are [window_at[i], window_at[i + 1]) */
    double *windows;          /* start, end pairs, by client, in file order */
};

typedef struct id_index {
    const char *id;
    int64_t index;
} id_index;

static int by_id(const void *a, const void *b) { return strcmp(((const id_index *)a)->id, ((const id_index *)b)->id); }

/* The training data's clients sorted by id, for the traces' lookups. */
static fedc_status sorted_ids(const fedc_dataset *ds, id_index **out) {
    int64_t n = fedc_dataset_num_clients(ds);
    id_index *ids = fedc_malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    if (!ids) return fedc_error(FEDC_ENOMEM, "clock: out of memory");
    for (int64_t i = 0; i < n; i++) ids[i] = (id_index){fedc_dataset_client_id(ds, i), i};
    qsort(ids, (size_t)n, sizeof *ids, by_id);
    *out = ids;
    return FEDC_OK;
}

/* A trace's lines: "client_id,v1[,v2]", a header line "client_id,..." and '#'
 * lines skipped; each line's client and values to `row`. */
typedef fedc_status (*trace_row)(fedc__clock *c, const char *path, size_t line, int64_t client, const double *v);

static fedc_status read_trace(fedc__clock *c, const char *path, const id_index *ids, int nvalues, trace_row row) {
    FILE *f = fopen(path, "r");
    if (!f) return fedc_error(FEDC_EIO, "--clock: %s: cannot open: %s", path, strerror(errno));
    char text[1024];
    fedc_status st = FEDC_OK;
    for (size_t line = 1; !st && fgets(text, sizeof text, f); line++) {
        text[strcspn(text, "\r\n")] = 0;
        if (!text[0] || text[0] == '#' || (line == 1 && !strncmp(text, "client_id,", 10))) continue;
        char *comma = strchr(text, ','), *at = comma;
        double v[2];
        for (int k = 0; at && k < nvalues; k++) {
            char *end;
            v[k] = strtod(at + 1, &end);
            bool last = k + 1 == nvalues;
            at = end != at + 1 && isfinite(v[k]) && (last ? !*end : *end == ',') ? end : NULL;
        }
        if (!comma || !at)
            st = fedc_error(FEDC_EPARSE, "%s:%zu: expected \"client_id,%s\" with numbers, not \"%s\"", path, line,
                            nvalues == 1 ? "seconds_per_step" : "start,end", text);
        if (st) break;
        *comma = 0;
        id_index key = {text, 0}, *hit = bsearch(&key, ids, (size_t)c->n, sizeof *ids, by_id);
        st = hit ? row(c, path, line, hit->index, v)
                 : fedc_error(FEDC_EINVAL, "%s:%zu: client \"%s\" is not in the training data", path, line, text);
    }
    fclose(f);
    return st;
}

static fedc_status speed_row(fedc__clock *c, const char *path, size_t line, int64_t client, const double *v) {
    if (!(v[0] >= 0)) return fedc_error(FEDC_EPARSE, "%s:%zu: seconds per step %g < 0", path, line, v[0]);
    c->seconds_per_step[client] = v[0];
    return FEDC_OK;
}

/* The first pass counts each client's windows (window_at[i + 1]); the second
 * stores them (window_at[i] moving up to its end). */
static fedc_status count_row(fedc__clock *c, const char *path, size_t line, int64_t client, const double *v) {
    if (!(v[0] <= v[1])) return fedc_error(FEDC_EPARSE, "%s:%zu: a window's end %g is before its start %g", path, line,
                                           v[1], v[0]);
    c->window_at[client + 1]++;
    return FEDC_OK;
}

static fedc_status window_row(fedc__clock *c, const char *path, size_t line, int64_t client, const double *v) {
    (void)path, (void)line;
    int64_t at = c->window_at[client]++;
    c->windows[2 * at] = v[0], c->windows[2 * at + 1] = v[1];
    return FEDC_OK;
}

static fedc_status read_speeds(fedc__clock *c, const id_index *ids, const fedc_dataset *ds) {
    c->seconds_per_step = fedc_malloc((size_t)(c->n > 0 ? c->n : 1) * sizeof *c->seconds_per_step);
    if (!c->seconds_per_step) return fedc_error(FEDC_ENOMEM, "clock: out of memory");
    for (int64_t i = 0; i < c->n; i++) c->seconds_per_step[i] = NAN;
    fedc_status st = read_trace(c, c->spec.speed_trace, ids, 1, speed_row);
    for (int64_t i = 0; !st && i < c->n; i++)
        if (isnan(c->seconds_per_step[i]))
            st = fedc_error(FEDC_EINVAL, "--clock speed=trace:%s has no line for client \"%s\"", c->spec.speed_trace,
                            fedc_dataset_client_id(ds, i));
    return st;
}

static fedc_status read_windows(fedc__clock *c, const id_index *ids) {
    c->window_at = fedc_calloc((size_t)c->n + 1, sizeof *c->window_at);
    if (!c->window_at) return fedc_error(FEDC_ENOMEM, "clock: out of memory");
    fedc_status st = read_trace(c, c->spec.availability_trace, ids, 2, count_row);
    for (int64_t i = 0; i < c->n; i++) c->window_at[i + 1] += c->window_at[i];
    c->windows = st ? NULL : fedc_malloc((size_t)(2 * c->window_at[c->n] + 1) * sizeof *c->windows);
    if (!st && !c->windows) st = fedc_error(FEDC_ENOMEM, "clock: out of memory");
    if (!st) st = read_trace(c, c->spec.availability_trace, ids, 2, window_row);
    for (int64_t i = c->n; i > 0; i--) c->window_at[i] = c->window_at[i - 1]; /* back to the starts */
    c->window_at[0] = 0;
    return st;
}

fedc_status fedc__clock_create(const fedc_clock_spec *spec, uint64_t seed, const fedc_dataset *ds, fedc__clock **out) {
    *out = NULL;
    fedc__clock *c = fedc_calloc(1, sizeof *c);
    if (!c) return fedc_error(FEDC_ENOMEM, "clock: out of memory");
    c->spec = *spec, c->seed = seed, c->n = fedc_dataset_num_clients(ds);
    id_index *ids = NULL;
    bool traces = spec->speed == FEDC_CLOCK_TRACE || spec->availability == FEDC_AVAILABLE_TRACE;
    fedc_status st = traces ? sorted_ids(ds, &ids) : FEDC_OK;
    if (!st && spec->speed == FEDC_CLOCK_TRACE) st = read_speeds(c, ids, ds);
    if (!st && spec->availability == FEDC_AVAILABLE_TRACE) st = read_windows(c, ids);
    fedc_free(ids);
    if (st) fedc__clock_destroy(c);
    else *out = c;
    return st;
}

void fedc__clock_destroy(fedc__clock *c) {
    if (!c) return;
    fedc_free(c->seconds_per_step);
    fedc_free(c->window_at);
    fedc_free(c->windows);
    fedc_free(c);
}

/* ------------------------------------------------------------ profiles -- */

static fedc_rng_stream client_stream(const fedc__clock *c, uint32_t tag, int64_t client) {
    return fedc_rng_stream_make(c->seed, tag, (uint32_t)client, (uint32_t)((uint64_t)client >> 32));
}

static double draw(const fedc__clock *c, uint32_t tag, int64_t client, fedc_clock_dist kind, double a, double b) {
    if (kind != FEDC_CLOCK_LOGNORMAL) return a;
    return exp(a + b * fedc_rng_normal(client_stream(c, tag, client), 0));
}

double fedc__clock_seconds_per_step(const fedc__clock *c, int64_t client) {
    if (c->spec.speed == FEDC_CLOCK_TRACE) return c->seconds_per_step[client];
    return draw(c, SPEED_TAG, client, c->spec.speed, c->spec.speed_a, c->spec.speed_b);
}

double fedc__clock_bandwidth(const fedc__clock *c, int64_t client) {
    return draw(c, BANDWIDTH_TAG, client, c->spec.bandwidth, c->spec.bandwidth_a, c->spec.bandwidth_b);
}

double fedc__clock_task_seconds(const fedc__clock *c, int64_t client, double steps, double bytes) {
    double bw = fedc__clock_bandwidth(c, client), network = isinf(bw) || bytes == 0 ? 0 : bytes / bw;
    return steps * fedc__clock_seconds_per_step(c, client) + network;
}

bool fedc__clock_has_availability(const fedc__clock *c) { return c->spec.availability != FEDC_AVAILABLE_ALWAYS; }

bool fedc__clock_available(const fedc__clock *c, int64_t client, uint32_t round, double time) {
    const fedc_clock_spec *s = &c->spec;
    switch (s->availability) {
    case FEDC_AVAILABLE_BERNOULLI: /* a draw of (seed, round, client) */
        return fedc_rng_uniform_f64(fedc_rng_stream_make(c->seed, round, (uint32_t)client, CHECKIN_TAG), 0) <
               s->availability_a;
    case FEDC_AVAILABLE_DIURNAL: { /* online in the first ON of each period, from the client's phase */
        double period = s->availability_a, phase = period * fedc_rng_uniform_f64(client_stream(c, PHASE_TAG, client), 0);
        return fmod(time + phase, period) < s->availability_b * period;
    }
    case FEDC_AVAILABLE_TRACE:
        for (int64_t w = c->window_at[client]; w < c->window_at[client + 1]; w++)
            if (c->windows[2 * w] <= time && time < c->windows[2 * w + 1]) return true;
        return false;
    default: return true;
    }
}
