/* Resuming a training job: the job's configuration as its checkpoints record it,
 * reading a checkpoint back with every check a resume needs, and cutting the
 * metrics back to the checkpoint's rounds.
 *
 * A checkpoint (format "fedc checkpoint 2") records every setting that changes the
 * model as "config.<flag>" metadata. A resume that changes one of them is refused
 * with the differences named; one that changes what may change (the rounds, to
 * extend a run; threads; evaluation and checkpoint cadence) goes on and says so. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fl/train.h"

/* ------------------------------------------------------------ settings -- */

static void setting(train_setting *out, int *n, int max, const char *flag, bool may_change, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void setting(train_setting *out, int *n, int max, const char *flag, bool may_change, const char *fmt, ...) {
    if (*n >= max) return;
    train_setting *s = &out[(*n)++];
    s->flag = flag;
    s->may_change = may_change;
    s->unrecorded = NULL; /* known to every checkpoint, unless the caller says otherwise */
    s->default_unwritten = false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->value, sizeof s->value, fmt, ap);
    va_end(ap);
    for (char *p = s->value; *p; p++) /* safetensors metadata has no escapes */
        if (*p == '"' || *p == '\\' || *p == '\n') *p = '?';
}

/* The shortest of %.15g, %.16g and %.17g that reads back as x: exact, and short for
 * the values people type. */
static const char *exact(double x, char *buf) {
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, 32, "%.*g", digits, x);
        if (strtod(buf, NULL) == x) break;
    }
    return buf;
}

static void optimizer_value(const fedc_optimizer *o, char *buf, size_t size) {
    char m[32], b1[32], b2[32], eps[32], acc[32];
    snprintf(buf, size, "%s momentum=%s nesterov=%d b1=%s b2=%s eps=%s initial_accumulator=%s",
             fedc_optimizer_name(o->kind), exact(o->momentum, m), o->nesterov, exact(o->b1, b1), exact(o->b2, b2),
             exact(o->eps, eps), exact(o->initial_accumulator, acc));
    size_t used = strlen(buf); /* only when set: checkpoints from before weight decay still match */
    if (o->weight_decay != 0 && used < size) snprintf(buf + used, size - used, " weight_decay=%s", exact(o->weight_decay, m));
}

void fedc__train_setting_key(const train_setting *s, char *key, size_t size) {
    /* a hyperparameter's key names it: config.set.mu = "mu=0.01" */
    size_t name = strcmp(s->flag, "--set") ? 0 : strcspn(s->value, "=");
    if (name) snprintf(key, size, "config.set.%.*s", (int)name, s->value);
    else snprintf(key, size, "config.%s", s->flag + 2);
}

/* The virtual clock's settings (src/fl/train_clock.c); a checkpoint from before
 * them had none. */
static int clock_settings(const fedc_train_config *c, train_setting *out, int n, int max) {
    char spec[2 * FEDC_CLOCK_PATH_MAX + 128] = "off", x[2][32];
    fedc_clock_spec s;
    if (c->clock && !fedc_clock_parse(c->clock, &s)) fedc_clock_format(&s, spec, sizeof spec);
    setting(out, &n, max, "--clock", false, "%s", spec);
    if (n > 0) out[n - 1].unrecorded = "off";
    setting(out, &n, max, "--round-deadline", false, "%s", exact(c->round_deadline, x[0]));
    if (n > 0) out[n - 1].unrecorded = "0";
    setting(out, &n, max, "--over-select", false, "%s", exact(c->over_select, x[1]));
    if (n > 0) out[n - 1].unrecorded = "0";
    setting(out, &n, max, "--replay", false, "%s", c->replay ? c->replay : ""); /* a replay's steps go on from its log */
    if (n > 0) out[n - 1].unrecorded = "";
    return n;
}

/* The aggregators' settings (docs/privacy.md); a checkpoint from before them had
 * them off. */
static int aggregation_settings(const fedc_train_config *c, const fedc_algorithm *alg, train_setting *out, int n,
                                int max) {
    const fedc_aggregation *a = &alg->aggregation;
    char x[4][32];
    int first = n;
    setting(out, &n, max, "--robust-zero", false, "%s", exact(a->zero_norm, x[0]));
    setting(out, &n, max, "--dp-clip", false, "%s", exact(a->clip, x[1]));
    setting(out, &n, max, "--dp-noise", false, "%s", exact(a->noise_multiplier, x[2]));
    if (a->adaptive)
        setting(out, &n, max, "--dp-adaptive", false, "quantile=%s,lr=%s,count-stddev=%s", exact(a->target_quantile, x[0]),
                exact(a->clip_learning_rate, x[1]), exact(a->count_stddev, x[3]));
    else setting(out, &n, max, "--dp-adaptive", false, "off");
    for (int i = first; i < n; i++) out[i].unrecorded = i == n - 1 ? "off" : "0";
    if (a->compress_bits > 0) /* --compress's own text (checkpoints from before it: off) */
        setting(out, &n, max, "--compress", false, "uniform:%d%s", a->compress_bits, a->compress_rotate ? ",rotate" : "");
    else setting(out, &n, max, "--compress", false, "off");
    if (n > 0) out[n - 1].unrecorded = "off";
    setting(out, &n, max, "--dp-delta", true, "%s", exact(c->dp_delta, x[0]));
    if (c->poisson) setting(out, &n, max, "--sampling", false, "poisson:%s", exact(c->sampling_rate, x[0]));
    else setting(out, &n, max, "--sampling", false, "fixed");
    if (n > 0) out[n - 1].unrecorded = "fixed";
    setting(out, &n, max, "--secure-sum", false, "%d", a->secure_sum_bits); /* a checkpoint before it: off */
    if (n > 0) out[n - 1].unrecorded = "0";
    setting(out, &n, max, "--secure-bound", false, "%s", exact(a->secure_sum_bound, x[0]));
    if (n > 0) out[n - 1].unrecorded = "0";
    char robust[160];
    fedc_robust_format(&a->robust, robust, sizeof robust);
    setting(out, &n, max, "--aggregator", false, "%s", robust); /* a checkpoint before it: the mean */
    if (n > 0) out[n - 1].unrecorded = "mean";
    setting(out, &n, max, "--attack", false, "%s:%s", fedc_attack_name(a->attack.kind), exact(a->attack.value, x[0]));
    if (n > 0) out[n - 1].unrecorded = "none:0";
    setting(out, &n, max, "--attackers", false, "%s", exact(a->attack.fraction, x[1]));
    if (n > 0) out[n - 1].unrecorded = "0";
    n = clock_settings(c, out, n, max);
    /* whose draws sample and shuffle (a checkpoint without it: fedc's) */
    setting(out, &n, max, "--rng", false, "%s", c->rng == FEDC_RNG_FEDJAX ? "fedjax" : "counter");
    if (n > 0) out[n - 1].unrecorded = "counter", out[n - 1].default_unwritten = true;
    return n;
}

int fedc__train_settings(const trainer *t, train_setting *out, int max) {
    const fedc_train_config *c = t->c;
    const fedc_algorithm *a = &t->alg;
    int n = 0;
    char client[256], server[256], x[3][32];
    optimizer_value(&a->client_opt, client, sizeof client);
    optimizer_value(&a->server_opt, server, sizeof server);
    setting(out, &n, max, "--data", false, "%s", c->data ? c->data : "");
    setting(out, &n, max, "--test-data", false, "%s", c->test_data ? c->test_data : "");
    setting(out, &n, max, "--holdout", false, "%s", exact(c->holdout, x[0]));
    setting(out, &n, max, "--format", false, "%s", fedc_data_format_name(t->source_format));
    setting(out, &n, max, "--task", false, "%s", t->task);
    setting(out, &n, max, "--vocab", false, "%s", c->vocab ? c->vocab : "");
    setting(out, &n, max, "--vocab-size", false, "%lld", (long long)t->stackoverflow.vocab_size);
    setting(out, &n, max, "--client-domains", false, "%s", c->client_domains ? c->client_domains : "");
    setting(out, &n, max, "--partition", false, "%s", c->partition ? c->partition : "");
    setting(out, &n, max, "--num-clients", false, "%lld", (long long)c->num_clients);
    setting(out, &n, max, "--model", false, "%s", fedc_model_name(t->model));
    setting(out, &n, max, "--algorithm", false, "%s", fedc_algorithm_name(a));
    const fedc_algorithm_def *def = fedc__algorithm_def(a);
    for (int i = 0; i < def->nhparams && i < FEDC_MAX_HPARAMS; i++) /* config.set.<name> */
        setting(out, &n, max, "--set", false, "%s=%s", def->hparams[i].name,
                exact(fedc_algorithm_hparam(a, def->hparams[i].name), x[0]));
    setting(out, &n, max, "--weighting", false, "%s", fedc_weighting_name(a->weighting));
    setting(out, &n, max, "--client-opt", false, "%s", client);
    setting(out, &n, max, "--client-lr", false, "%s", exact(a->client_opt.learning_rate, x[1]));
    setting(out, &n, max, "--server-opt", false, "%s", server);
    setting(out, &n, max, "--server-lr", false, "%s", exact(a->server_opt.learning_rate, x[2]));
    setting(out, &n, max, "--batch-size", false, "%lld", (long long)a->batch_size);
    setting(out, &n, max, "--epochs", false, "%d", c->epochs);
    setting(out, &n, max, "--steps", false, "%lld", (long long)a->max_steps); /* what --steps and the data give */
    setting(out, &n, max, "--clients-per-round", false, "%d", c->clients_per_round);
    /* the groups' settings in one metadata entry (a checkpoint holds at most 64):
     * "N" as before them, then the Dirichlet draw, the file and sampling per level */
    char groups[256]; /* a setting holds 255 characters */
    int used = c->groups_alpha > 0 ? snprintf(groups, sizeof groups, "dirichlet:%d:%s", c->groups, exact(c->groups_alpha, x[0]))
                                   : snprintf(groups, sizeof groups, "%d", c->groups);
    if (c->groups_file && used < (int)sizeof groups)
        used += snprintf(groups + used, sizeof groups - (size_t)used, ",--groups-file=%s", c->groups_file);
    if ((c->groups_per_round || c->clients_per_group) && used < (int)sizeof groups)
        snprintf(groups + used, sizeof groups - (size_t)used, ",--groups-per-round=%d,--clients-per-group=%d",
                 c->groups_per_round, c->clients_per_group);
    setting(out, &n, max, "--groups", false, "%s", groups);
    if (n > 0) out[n - 1].unrecorded = "0"; /* a checkpoint from before groups had one */
    setting(out, &n, max, "--seed", false, "%llu", (unsigned long long)c->seed);
    setting(out, &n, max, "--no-dropout", false, "%s", a->dropout ? "no" : "yes");
    setting(out, &n, max, "--rounds", true, "%d", c->rounds);
    setting(out, &n, max, "--threads", true, "%d", c->threads);
    setting(out, &n, max, "--eval-every", true, "%d", c->eval_every);
    setting(out, &n, max, "--eval-clients", true, "%lld", (long long)c->eval_clients);
    setting(out, &n, max, "--eval-batch-size", true, "%lld", (long long)c->eval_batch_size);
    setting(out, &n, max, "--checkpoint-every", true, "%d", c->checkpoint_every);
    setting(out, &n, max, "--strict", true, "%s", c->strict ? "yes" : "no");
    n = aggregation_settings(c, a, out, n, max);
    return n;
}

/* Appends ", FLAG NOW (the checkpoint's: THEN)" to buf. */
static void note(char *buf, size_t size, const train_setting *s, const char *then) {
    size_t used = strlen(buf);
    if (used + 1 >= size) return;
    snprintf(buf + used, size - used, "%s%s %s (the checkpoint's: %s)", used ? ", " : "", s->flag,
             s->value[0] ? s->value : "none", then && then[0] ? then : then ? "none" : "not recorded");
}

/* Refuses a checkpoint whose job differs in what changes the result; says
 * aloud what differs and may. */
static fedc_status compare_settings(const trainer *t, const char *path, const fedc_safetensors *s) {
    train_setting now[FEDC__MAX_SETTINGS];
    int n = fedc__train_settings(t, now, FEDC__MAX_SETTINGS);
    char refused[3000] = "", changed[1000] = "";
    for (int i = 0; i < n; i++) {
        char key[96];
        fedc__train_setting_key(&now[i], key, sizeof key);
        const char *then = fedc_safetensors_metadata(s, key);
        if (!then && now[i].default_unwritten) then = now[i].unrecorded; /* left out as the default */
        if (then && !strcmp(then, now[i].value)) continue;
        if (!then && now[i].unrecorded && !strcmp(now[i].unrecorded, now[i].value)) continue;
        if (now[i].may_change) note(changed, sizeof changed, &now[i], then);
        else note(refused, sizeof refused, &now[i], then);
    }
    if (refused[0])
        return fedc_error(FEDC_EINVAL, "%s: this run differs from the checkpoint's in what changes the result: %s; "
                          "resume with the checkpoint's settings, or train afresh in another --out", path, refused);
    if (changed[0]) fprintf(stderr, "fedc train: resuming %s with %s\n", path, changed);
    return FEDC_OK;
}

/* Format 1 checkpoints recorded a few settings in one string. */
static fedc_status compare_legacy(const trainer *t, const char *path, const fedc_safetensors *s) {
    char how[512];
    snprintf(how, sizeof how, "model=%s task=%s algorithm=%s batch=%lld steps=%lld clients_per_round=%d seed=%llu",
             fedc_model_name(t->model), t->task, fedc_algorithm_name(&t->alg), (long long)t->alg.batch_size,
             (long long)t->alg.max_steps, t->c->clients_per_round, (unsigned long long)t->c->seed);
    const char *saved = fedc_safetensors_metadata(s, "settings");
    if (!saved) return fedc_error(FEDC_EINVAL, "%s: the metadata has no \"settings\": not a checkpoint of fedc train", path);
    if (strcmp(saved, how))
        return fedc_error(FEDC_EINVAL, "%s: written by another run (%s); this run is %s", path, saved, how);
    return FEDC_OK;
}

/* ---------------------------------------------------------- checkpoint -- */

static fedc_status parse_round(const char *path, const char *v, int *out) {
    if (!v) return fedc_error(FEDC_EINVAL, "%s: the metadata has no \"next_round\": not a checkpoint of fedc train", path);
    char *end;
    errno = 0;
    long long r = strtoll(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end || errno || r < 1 || r > INT_MAX)
        return fedc_error(FEDC_EPARSE, "%s: \"next_round\" is \"%s\", not a round number (an integer from 1 to %d)", path,
                          v, INT_MAX);
    *out = (int)r;
    return FEDC_OK;
}

/* A total the checkpoint carries (0 in format 1). */
static fedc_status parse_total(const char *path, const fedc_safetensors *s, const char *key, double *out) {
    const char *v = fedc_safetensors_metadata(s, key);
    *out = 0;
    if (!v) return FEDC_OK;
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= 0) || !isfinite(x))
        return fedc_error(FEDC_EPARSE, "%s: \"%s\" is \"%s\", not a count", path, key, v);
    *out = x;
    return FEDC_OK;
}

static fedc_status check_version(const char *path, const fedc_safetensors *s, bool *legacy) {
    const char *f = fedc_safetensors_metadata(s, "format");
    if (!f) return fedc_error(FEDC_EINVAL, "%s: the metadata has no \"format\": not a checkpoint of fedc train", path);
    *legacy = !strcmp(f, "fedc checkpoint 1");
    /* 2 kept the server optimizer's state as server_state<k>: its model still
     * reads, and a resume names the state it lacks */
    if (!*legacy && strcmp(f, "fedc checkpoint 2") && strcmp(f, "fedc checkpoint 3"))
        return fedc_error(FEDC_EUNSUPPORTED, "%s: format \"%s\" is not one this fedc reads (\"fedc checkpoint 1\" to 3)",
                          path, f);
    return FEDC_OK;
}

fedc_status fedc__train_load_checkpoint(trainer *t) {
    char path[4096], what[96];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", t->c->out_dir);
    fedc_safetensors *s;
    fedc_status st = fedc_safetensors_read(path, &s);
    if (st) return st;
    bool legacy = false;
    int round = 0;
    double dropped = 0;
    int64_t at;
    st = check_version(path, s, &legacy);
    if (!st) st = parse_round(path, fedc_safetensors_metadata(s, "next_round"), &round);
    if (!st) st = legacy ? compare_legacy(t, path, s) : compare_settings(t, path, s);
    if (!st) st = fedc__train_state_restore(t, s);
    if (!st && t->async) st = fedc__train_async_restore(t, path, s);
    if (!st && fedc__train_nonfinite(t, what, sizeof what, &at))
        st = fedc_error(FEDC_ENONFINITE, "%s: \"%s\" holds a non-finite value (element %lld): it cannot be trained on",
                        path, what, (long long)at);
    if (!st) st = parse_total(path, s, "seconds", &t->seconds_before);
    if (!st) st = parse_total(path, s, "examples", &t->examples_before);
    if (!st) st = parse_total(path, s, "dropped", &dropped);
    if (!st) st = parse_total(path, s, "virtual_time", &t->vtime);
    if (!st) st = fedc__train_state_resume(t, round);
    if (!st) t->first_round = round, t->dropped = (int64_t)dropped;
    fedc_safetensors_destroy(s);
    return st;
}

/* ------------------------------------------------------------- metrics -- */

/* The whole of a small file (NULL and *n 0 if it does not exist). */
static fedc_status read_small(const char *path, char **out, size_t *n) {
    *out = NULL, *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT ? FEDC_OK : fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 0;
    char *b = NULL;
    fedc_status st = FEDC_OK;
    for (;;) {
        if (*n + 4096 > cap) {
            char *nb = fedc_realloc(b, cap = 2 * cap + 4096);
            if (!nb) {
                st = fedc_error(FEDC_ENOMEM, "%s: out of memory to read it", path);
                break;
            }
            b = nb;
        }
        size_t k = fread(b + *n, 1, cap - *n - 1, f);
        *n += k;
        if (k == 0) break;
    }
    if (!st && ferror(f)) st = fedc_error(FEDC_EIO, "%s: cannot read: %s", path, strerror(errno));
    fclose(f);
    if (st) fedc_free(b);
    else b[*n] = '\0', *out = b;
    return st;
}

/* Replaces path's contents with head + body (a temporary file, renamed). */
static fedc_status rewrite(const char *path, const char *head, const char *body, size_t n) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return fedc_error(FEDC_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    bool ok = fputs(head, f) >= 0 && fwrite(body, 1, n, f) == n && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int err = errno;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0) return FEDC_OK;
    err = err ? err : errno;
    unlink(tmp);
    return fedc_error(FEDC_EIO, "%s: cannot rewrite: %s", path, strerror(err));
}

/* The round of a metrics line ("{\"round\": N" or "N,"), or -1. */
static long round_of(const char *line, bool json) {
    const char *p = json ? strstr(line, "\"round\":") : line;
    if (!p) return -1;
    char *end;
    long r = strtol(p + (json ? 8 : 0), &end, 10);
    return end == p + (json ? 8 : 0) ? -1 : r;
}

static double field(const char *line, const char *key) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(line, k);
    if (!p) return NAN;
    char *end;
    double v = strtod(p + strlen(k), &end);
    return end == p + strlen(k) ? NAN : v; /* null, as the metrics write a non-finite value */
}

/* The CSV's header line, if buf starts with one (ours, or an older fedc's): its
 * length, 0 if none. */
static size_t header_length(const char *buf, size_t n) {
    if (n < 6 || strncmp(buf, "round,", 6)) return 0;
    const char *nl = memchr(buf, '\n', n);
    return nl ? (size_t)(nl - buf) + 1 : n;
}

/* The length of the complete lines of buf[at..n) whose round is at most the
 * checkpoint's, from the first; JSON rows are read back into the curve. */
static fedc_status keep_rows(trainer *t, const char *buf, size_t at, size_t n, bool json, size_t *keep) {
    size_t from = at;
    while (at < n) {
        const char *nl = memchr(buf + at, '\n', n - at);
        if (!nl) break; /* a row cut short by the kill */
        long r = round_of(buf + at, json);
        if (r < 1 || r > t->first_round) break;
        if (json) {
            const char *l = buf + at, *no = strstr(l, "\"evaluated\": false");
            eval_result e = {field(l, "test_loss"), field(l, "test_accuracy"),
                             {field(l, "client_accuracy_p10"), field(l, "client_accuracy_p50"),
                              field(l, "client_accuracy_p90")},
                             0 /* not in the rows: the curve needs none */};
            bool evaluated = !(no && no < nl); /* an older fedc's rows, without the field, all were */
            fedc_status st = fedc__train_add_curve(t, (int)r, field(l, "train_loss"), evaluated ? &e : NULL);
            if (st) return st;
        }
        at = (size_t)(nl - buf) + 1;
    }
    *keep = at - from;
    return FEDC_OK;
}

/* Rewrites the file (this fedc's CSV header first) unless it is already just
 * the rows to keep. */
static fedc_status cut_back(trainer *t, const char *name, bool json) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", t->c->out_dir, name);
    char *buf;
    size_t n, keep = 0;
    fedc_status st = read_small(path, &buf, &n);
    const char *b = buf ? buf : "", *ours = json ? "" : fedc__train_csv_header();
    size_t head = json ? 0 : header_length(b, n);
    if (!st) st = keep_rows(t, b, head, n, json, &keep);
    bool same = head + keep == n && head == strlen(ours) && !strncmp(b, ours, head);
    if (!st && !same) st = rewrite(path, ours, b + head, keep);
    fedc_free(buf);
    return st;
}

fedc_status fedc__train_reopen_metrics(trainer *t) {
    fedc_status st = cut_back(t, "metrics.jsonl", true);
    return st ? st : cut_back(t, "metrics.csv", false);
}
