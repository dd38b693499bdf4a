/* The faults tests inject (core/fault.h): FEDC_FAULT parsed once into a table
 * of the faults on, each with its argument, checked as it is read so that a
 * mistyped fault is said at once instead of silently injecting nothing. The
 * table is behind a lock: a fleet's client threads ask while a test may set. */
#include "core/fault.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum arg_kind { ARG_NONE, ARG_ROUND, ARG_ROUNDS, ARG_SECONDS } arg_kind;

static const struct {
    const char *name;
    arg_kind arg;
} faults[FEDC__FAULT_COUNT] = {
    [FEDC__FAULT_METRICS] = {"metrics", ARG_ROUNDS},
    [FEDC__FAULT_LOAD] = {"load", ARG_ROUNDS},
    [FEDC__FAULT_SLOW] = {"slow", ARG_SECONDS},
    [FEDC__FAULT_REPORT_TWICE] = {"report-twice", ARG_NONE},
    [FEDC__FAULT_REPORT_REPLAY] = {"report-replay", ARG_NONE},
    [FEDC__FAULT_EXIT_AFTER_REPORT] = {"exit-after-report", ARG_ROUND},
    [FEDC__FAULT_SECAGG_EXIT] = {"secagg-exit", ARG_ROUND},
    [FEDC__FAULT_SECAGG_GARBLE] = {"secagg-garble", ARG_ROUND},
    [FEDC__FAULT_SECAGG_FORGE_UNMASK] = {"secagg-forge-unmask", ARG_NONE},
};

/* What each kind of argument is, for the message that refuses one. */
static const char *const arg_text[] = {
    [ARG_NONE] = "nothing (it takes no argument)",
    [ARG_ROUND] = "a round (0 or more)",
    [ARG_ROUNDS] = "rounds (R:C,C/R:C..., R a round or *, C a client)",
    [ARG_SECONDS] = "seconds (0 or more)",
};

/* The faults on: each one's argument as given ("" for one without), or NULL
 * when it is off. The arguments point into `spec`, the table's own copy of the
 * value, split in place. */
typedef struct table {
    char *spec;
    const char *arg[FEDC__FAULT_COUNT];
} table;

static table on;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* A round at s (a non-negative decimal integer), *end past it; false if none. */
static bool parse_round(const char *s, const char **end, int64_t *round) {
    char *e;
    if (*s < '0' || *s > '9') return false;
    errno = 0;
    long long v = strtoll(s, &e, 10);
    if (errno) return false;
    *round = v, *end = e;
    return true;
}

static bool is_round(const char *s) {
    int64_t r;
    return parse_round(s, &s, &r) && !*s;
}

static bool is_rounds(const char *s) {
    int64_t x;
    for (;;) {
        if (*s == '*') s++;
        else if (!parse_round(s, &s, &x)) return false;
        while (*s == ':' || *s == ',')
            if (!parse_round(s + 1, &s, &x)) return false;
        if (!*s) return true;
        if (*s++ != '/') return false;
    }
}

static bool is_seconds(const char *s) {
    char *end;
    if ((*s < '0' || *s > '9') && *s != '.') return false; /* no sign, no "inf" or "nan" */
    double v = strtod(s, &end);
    return !*end && isfinite(v);
}

static bool arg_valid(arg_kind kind, const char *arg) {
    switch (kind) {
    case ARG_NONE: return !arg;
    case ARG_ROUND: return arg && is_round(arg);
    case ARG_ROUNDS: return arg && is_rounds(arg);
    case ARG_SECONDS: return arg && is_seconds(arg);
    }
    return false;
}

/* Whether the (well-formed) rounds `s` name `round` and, client >= 0, `client`
 * in that round. */
static bool rounds_name(const char *s, int64_t round, int64_t client) {
    while (s) {
        int64_t r = round, x = -1;
        if (*s == '*') s++;
        else parse_round(s, &s, &r);
        if (r == round && client < 0) return true;
        while (*s == ':' || *s == ',') {
            parse_round(s + 1, &s, &x);
            if (r == round && x == client) return true;
        }
        s = *s == '/' ? s + 1 : NULL;
    }
    return false;
}

static void clear(table *t) {
    free(t->spec);
    memset(t, 0, sizeof *t);
}

static int find(const char *name) {
    for (int i = 0; i < FEDC__FAULT_COUNT; i++)
        if (!strcmp(faults[i].name, name)) return i;
    return -1;
}

/* The faults of `spec` into t; false, with t cleared and the reason in `why`,
 * when spec is malformed. The C library's allocator, not fedc_malloc: the table
 * outlives any allocator a program sets, and the allocation-failure tests count
 * fedc's allocations, which a first look at the environment would shift. */
static bool parse(const char *spec, table *t, char *why, size_t size) {
    memset(t, 0, sizeof *t);
    if (!spec || !*spec) return true;
    size_t n = strlen(spec) + 1;
    if (!(t->spec = malloc(n))) {
        snprintf(why, size, "out of memory");
        return false;
    }
    memcpy(t->spec, spec, n);
    for (char *f = t->spec, *next; f; f = next) {
        if ((next = strchr(f, ';'))) *next++ = '\0';
        char *arg = strchr(f, ':');
        if (arg) *arg++ = '\0';
        int id = find(f);
        if (id < 0)
            snprintf(why, size, "no fault \"%.64s\" (the faults: metrics, load, slow, report-twice, report-replay, "
                     "exit-after-report, secagg-exit, secagg-garble, secagg-forge-unmask)", f);
        else if (t->arg[id]) snprintf(why, size, "%s is named twice", f);
        else if (!arg_valid(faults[id].arg, arg))
            snprintf(why, size, "%s takes %s, not \"%.64s\"", f, arg_text[faults[id].arg], arg ? arg : "");
        else {
            t->arg[id] = arg ? arg : "";
            continue;
        }
        clear(t);
        return false;
    }
    return true;
}

/* FEDC_FAULT, once. A malformed value is said on stderr (there is no caller to
 * return it to) and injects nothing, as an unknown one always did. */
static void load_environment(void) {
    const char *spec = getenv("FEDC_FAULT");
    char why[512];
    if (!parse(spec, &on, why, sizeof why))
        fprintf(stderr, "fedc: FEDC_FAULT=\"%.200s\": %s; no fault is injected\n", spec, why);
}

fedc_status fedc__fault_set(const char *spec) {
    table t;
    char why[512];
    bool ok = parse(spec, &t, why, sizeof why);
    pthread_once(&once, load_environment); /* first, so that the environment never overrides a test's faults */
    pthread_mutex_lock(&lock);
    clear(&on);
    on = t;
    pthread_mutex_unlock(&lock);
    return ok ? FEDC_OK : fedc_error(FEDC_EINVAL, "fault \"%.200s\": %s", spec, why);
}

/* Fault id's argument, under the lock (held on return). */
static const char *locked_arg(fedc__fault_id id) {
    pthread_once(&once, load_environment);
    pthread_mutex_lock(&lock);
    return (unsigned)id < FEDC__FAULT_COUNT ? on.arg[id] : NULL;
}

bool fedc__fault_on(fedc__fault_id id) {
    bool set = locked_arg(id) != NULL;
    pthread_mutex_unlock(&lock);
    return set;
}

bool fedc__fault_at(fedc__fault_id id, int64_t round, int64_t client) {
    const char *arg = locked_arg(id);
    int64_t r;
    bool at = false;
    if (arg && faults[id].arg == ARG_ROUND) at = parse_round(arg, &arg, &r) && r == round;
    else if (arg && faults[id].arg == ARG_ROUNDS) at = rounds_name(arg, round, client);
    pthread_mutex_unlock(&lock);
    return at;
}

double fedc__fault_seconds(fedc__fault_id id) {
    const char *arg = locked_arg(id);
    double s = arg && faults[id].arg == ARG_SECONDS ? strtod(arg, NULL) : 0;
    pthread_mutex_unlock(&lock);
    return s;
}
