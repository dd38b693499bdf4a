/* An asynchronous run's arrival log, and replaying one (fedbuff, fedasync;
 * docs/algorithms.md, "Asynchronous").
 *
 * RUN/arrivals.jsonl has a line per report, in the order the server took them:
 *
 *     {"step": 3, "client": 5, "dispatch": 9, "version": 1, "arrival_version": 2, "time": 12.5}
 *
 * step: the server step (from 1) that took it; client: its population index;
 * dispatch: its start's number (its batches are round dispatch / C's); version:
 * the model version it trained on; arrival_version: the version when it reported
 * (step - 1); time: its virtual time (%.17g, exact).
 *
 * `--replay LOG` takes the reports from LOG instead of the clock: step r's K
 * reports are lines rK + 1 to rK + K, each trained on its version (kept from the
 * step that made it until its last report is in). Those are all the run's
 * inputs, so replaying a run's own log gives its bits. A log that cannot be a
 * run's (a field missing or out of range, a step or version that does not follow,
 * time going back, more versions held than C clients can hold) is refused, naming
 * the line and the field. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fl/fedbuff.h"
#include "fl/train_async.h"

struct arrival {
    int64_t step, client;
    uint64_t dispatch;
    int version;
    double time;
};

/* ----------------------------------------------------------------- log -- */

/* A resume's log keeps the checkpoint's steps: the lines up to the first of a
 * later step (the killed run's), cut there. */
fedc_status fedc__arrivals_cut_back(const char *path, int steps, fedc_arrivals_kept *kept) {
    memset(kept, 0, sizeof *kept);
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT ? FEDC_OK : fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    char line[512];
    long keep = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"step\":"), *d = strstr(line, "\"dispatch\":"), *time = strstr(line, "\"time\":");
        if (!p || !d || !time || strchr(line, '\n') == NULL || strtoll(p + 7, NULL, 10) > steps) break;
        keep = ftell(f);
        uint64_t dispatch = strtoull(d + 11, NULL, 10);
        kept->lines++, kept->time = strtod(time + 7, NULL);
        if (dispatch > kept->max_dispatch) kept->max_dispatch = dispatch;
    }
    fclose(f);
    if (truncate(path, keep) != 0) return fedc_error(FEDC_EIO, "%s: cannot cut back: %s", path, strerror(errno));
    return FEDC_OK;
}

fedc_status fedc__train_arrivals_log(trainer *t, int r, const flight *f) {
    struct train_async *a = t->async;
    char path[4200];
    snprintf(path, sizeof path, "%s/arrivals.jsonl", t->c->out_dir);
    if (!a->arrivals) {
        fedc_arrivals_kept kept;
        fedc_status st = t->first_round > 0 ? fedc__arrivals_cut_back(path, t->first_round, &kept) : FEDC_OK;
        if (st) return st;
        if (!(a->arrivals = fopen(path, t->first_round > 0 ? "a" : "w")))
            return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    if (!fedc__arrival_write(a->arrivals, r + 1, f->client, f->dispatch, f->version, f->due))
        return fedc_error(FEDC_EIO, "%s: cannot write: %s", path, strerror(errno));
    return FEDC_OK;
}

bool fedc__arrival_write(FILE *f, int step, int64_t client, uint64_t dispatch, int version, double time) {
    fprintf(f, "{\"step\": %d, \"client\": %lld, \"dispatch\": %llu, \"version\": %d, \"arrival_version\": %d, "
            "\"time\": %.17g}\n", step, (long long)client, (unsigned long long)dispatch, version, step - 1, time);
    return fflush(f) == 0 && !ferror(f);
}

/* -------------------------------------------------------------- replay -- */

/* Field `key` of a log line, a number. */
static fedc_status number(const char *path, int64_t line, const char *text, const char *key, double *out) {
    char k[40];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(text, k);
    if (!p) return fedc_error(FEDC_EPARSE, "%s line %lld: no \"%s\"", path, (long long)line, key);
    char *end;
    *out = strtod(p + strlen(k), &end);
    if (end == p + strlen(k) || !isfinite(*out))
        return fedc_error(FEDC_EPARSE, "%s line %lld: \"%s\" is not a number", path, (long long)line, key);
    return FEDC_OK;
}

/* Field `key`, an integer in [lo, hi]. */
static fedc_status integer(const char *path, int64_t line, const char *text, const char *key, double lo, double hi,
                           double *out) {
    fedc_status st = number(path, line, text, key, out);
    if (!st && !(*out == floor(*out) && *out >= lo && *out <= hi))
        st = fedc_error(FEDC_EPARSE, "%s line %lld: \"%s\" is %.17g, not an integer from %.17g to %.17g", path,
                        (long long)line, key, *out, lo, hi);
    return st;
}

/* Line `line` (from 1), the log's n-th report (from 0), checked against the run
 * and the report before it. */
static fedc_status parse_arrival(const trainer *t, const char *path, int64_t line, const char *text, int64_t n,
                                 double last_time, struct arrival *out) {
    int64_t step = n / t->async->k + 1; /* K reports a step */
    double x[5];
    fedc_status st = integer(path, line, text, "step", step, step, &x[0]);
    if (!st) st = integer(path, line, text, "client", 0, (double)fedc_dataset_num_clients(t->train) - 1, &x[1]);
    if (!st) st = integer(path, line, text, "dispatch", 0, 9007199254740991.0, &x[2]);
    if (!st) st = integer(path, line, text, "version", 0, (double)step - 1, &x[3]);
    if (!st) st = integer(path, line, text, "arrival_version", (double)step - 1, (double)step - 1, &x[4]);
    if (!st) st = number(path, line, text, "time", &out->time);
    if (!st && !(out->time >= last_time))
        st = fedc_error(FEDC_EPARSE, "%s line %lld: \"time\" %.17g is before the last report's, %.17g", path,
                        (long long)line, out->time, last_time);
    out->step = step, out->client = (int64_t)x[1], out->dispatch = (uint64_t)x[2], out->version = (int)x[3];
    return st;
}

fedc_status fedc__train_replay_load(trainer *t) {
    struct train_async *a = t->async;
    const char *path = t->c->replay;
    if (t->c->resume)
        return fedc_error(FEDC_EINVAL, "train: --replay runs a log from its first step: it does not --resume");
    FILE *f = fopen(path, "rb");
    if (!f) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    char text[1024];
    int64_t line = 0, cap = 0;
    fedc_status st = FEDC_OK;
    while (!st && fgets(text, sizeof text, f)) {
        line++;
        if (strspn(text, " \t\r\n") == strlen(text)) continue;
        if (!strchr(text, '\n') && !feof(f)) {
            st = fedc_error(FEDC_EPARSE, "%s line %lld: longer than %zu bytes", path, (long long)line, sizeof text - 2);
            break;
        }
        if (a->nreplay == cap) {
            struct arrival *more = fedc_realloc(a->replay, (size_t)(cap = 2 * cap + 64) * sizeof *more);
            if (!more) {
                st = fedc_error(FEDC_ENOMEM, "%s: out of memory for its reports", path);
                break;
            }
            a->replay = more;
        }
        double last = a->nreplay ? a->replay[a->nreplay - 1].time : 0;
        st = parse_arrival(t, path, line, text, a->nreplay, last, &a->replay[a->nreplay]);
        a->nreplay += !st;
    }
    if (!st && ferror(f)) st = fedc_error(FEDC_EIO, "%s: cannot read: %s", path, strerror(errno));
    fclose(f);
    return st;
}

fedc_status fedc__train_replay_next(trainer *t, int r) {
    struct train_async *a = t->async;
    if (a->next + a->k > a->nreplay)
        return fedc_error(FEDC_EINVAL, "%s: %lld reports, step %d needs %lld (--rounds beyond the log's steps)",
                          t->c->replay, (long long)a->nreplay, r + 1, (long long)(a->next + a->k));
    int refs = 0; /* the reports yet to come that train on this step's model, version r */
    for (int64_t i = a->next; i < a->nreplay; i++) refs += a->replay[i].version == r;
    if (refs > 0) {
        int snap;
        bool fresh;
        fedc_status st = fedc__train_async_snapshot(t, r, &snap, &fresh);
        if (st) return fedc_error(st, "%s: at step %d, more model versions held at once than %d clients in flight "
                                  "can hold", t->c->replay, r + 1, a->c);
        memcpy(a->snaps[snap].params, t->params, (size_t)fedc_model_size(t->model) * sizeof(float));
        a->snaps[snap].refs = refs;
    }
    for (int slot = 0; slot < a->k; slot++) {
        const struct arrival *x = &a->replay[a->next++];
        flight f = {x->client, x->dispatch, x->version, -1, x->time};
        for (int i = 0; i <= a->c; i++)
            if (a->snaps[i].refs > 0 && a->snaps[i].version == x->version) f.snapshot = i;
        fedc_status st = fedc__train_async_take(t, r, slot, f); /* the version was kept: the log was checked */
        if (st) return st;
        t->client_ids[slot] = fedc_dataset_client_id(t->train, t->sampled[slot]);
    }
    t->present = a->k;
    return FEDC_OK;
}
