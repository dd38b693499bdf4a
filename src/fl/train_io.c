/* What a training job writes: metrics (one JSON object and one CSV row per
 * round, the test figures null where the round was not evaluated), the learning
 * curves as an SVG plot, and checkpoints (the model and the server optimizer's
 * state in one safetensors file, with the round and the run's settings as
 * metadata). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/safetensors.h"
#include "fl/train.h"

static void path_in(const trainer *t, const char *name, char *buf, size_t size) {
    snprintf(buf, size, "%s/%s", t->c->out_dir, name);
}

/* ------------------------------------------------------------- metrics -- */

static const char csv_header[] = "round,train_loss,test_loss,test_accuracy,client_accuracy_p10,client_accuracy_p50,"
                                 "client_accuracy_p90,dropped,time,examples_per_s,seconds\n";

/* A resumed run's files were cut back to the checkpoint's rounds
 * (fedc__train_reopen_metrics) and are appended to; a new run's start afresh. The
 * CSV header is flushed at once, so that a run killed before its first row leaves
 * it. */
fedc_status fedc__train_open_metrics(trainer *t) {
    fedc_status st = fedc_make_dirs(t->c->out_dir);
    if (!st && t->first_round > 0) st = fedc__train_reopen_metrics(t);
    if (st) return st;
    char path[4096];
    const char *mode = t->first_round > 0 ? "a" : "w";
    path_in(t, "metrics.jsonl", path, sizeof path);
    if (!(t->jsonl = fopen(path, mode))) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    path_in(t, "metrics.csv", path, sizeof path);
    if (!(t->csv = fopen(path, mode))) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (t->first_round == 0 && (fputs(csv_header, t->csv) < 0 || fflush(t->csv) != 0))
        return fedc_error(FEDC_EIO, "%s: cannot write: %s", path, strerror(errno));
    return FEDC_OK;
}

const char *fedc__train_csv_header(void) { return csv_header; }

/* v as the metrics write it: %.6g, or `nonfinite` (JSON has no NaN or Infinity:
 * null there, an empty field in the CSV). */
static const char *num(char *buf, double v, const char *nonfinite) {
    if (!isfinite(v)) return nonfinite;
    snprintf(buf, 32, "%.6g", v);
    return buf;
}

/* The test figures of a round that was not evaluated: null in the rows, gaps in the curves. */
static const eval_result not_evaluated = {NAN, NAN, {NAN, NAN, NAN}, 0};

fedc_status fedc__train_add_curve(trainer *t, int round, double train_loss, const eval_result *e) {
    if (t->ncurve == t->cap_curve) {
        int cap = t->cap_curve ? 2 * t->cap_curve : 64;
        double *c = fedc_realloc(t->curve, (size_t)cap * 4 * sizeof *c);
        if (!c) return fedc_error(FEDC_ENOMEM, "train: out of memory for the curves");
        t->curve = c;
        t->cap_curve = cap;
    }
    const eval_result *test = e ? e : &not_evaluated;
    double *row = t->curve + 4 * t->ncurve++;
    row[0] = round, row[1] = train_loss, row[2] = test->loss, row[3] = test->accuracy;
    t->last_train_loss = train_loss;
    if (e) t->have_last = true, t->last = *e; /* the last evaluation's */
    return FEDC_OK;
}

/* The clients a selecting aggregator (Krum, Multi-Krum, Bulyan: --aggregator)
 * kept in the round just run, as the member `, "kept": [i, ...]` (population
 * indices, increasing cohort order) in buf; "" for the other aggregators and for a
 * round that ran no client. */
static fedc_status kept_member(const trainer *t, char *buf, size_t size) {
    buf[0] = 0;
    if (!fedc_robust_selects(t->alg.aggregation.robust.kind)) return FEDC_OK;
    int *kept = fedc_malloc((size_t)(t->k > 0 ? t->k : 1) * sizeof *kept);
    if (!kept) return fedc_error(FEDC_ENOMEM, "train: out of memory for the kept clients");
    int n = t->present > 0 ? fedc_executor_robust_kept(t->round_ex, kept, t->k) : 0;
    size_t used = (size_t)snprintf(buf, size, ", \"kept\": [");
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)t->sampled[kept[i]]);
    if (used < size) used += (size_t)snprintf(buf + used, size - used, "]");
    fedc_free(kept);
    return used < size ? FEDC_OK : fedc_error(FEDC_EINVAL, "train: %d kept clients do not fit a metrics row", n);
}

fedc_status fedc__train_log_metrics(trainer *t, int round, double train_loss, const eval_result *e,
                                    double examples_per_s, double seconds) {
    const eval_result *test = e ? e : &not_evaluated;
    const double v[8] = {train_loss,         test->loss,         test->accuracy, test->quantiles[0],
                         test->quantiles[1], test->quantiles[2], examples_per_s, seconds};
    char b[8][32];
    const char *j[8], *c[8];
    for (int i = 0; i < 8; i++) j[i] = num(b[i], v[i], "null"), c[i] = isfinite(v[i]) ? b[i] : "";
    char privacy[512];
    fedc_status st = fedc__train_privacy_json(t, round, privacy, sizeof privacy);
    if (st) return st;
    char kept[8192], vtime[48] = "", vtime_csv[32] = ""; /* the virtual clock's seconds so far (--clock) */
    if ((st = kept_member(t, kept, sizeof kept))) return st;
    char groups[32768];
    if ((st = fedc__train_groups_json(t, groups, sizeof groups))) return st;
    if (t->clock) snprintf(vtime, sizeof vtime, ", \"time\": %s", num(vtime_csv, t->vtime, "null"));
    fprintf(t->jsonl,
            "{\"round\": %d, \"train_loss\": %s, \"test_loss\": %s, \"test_accuracy\": %s, "
            "\"client_accuracy_p10\": %s, \"client_accuracy_p50\": %s, \"client_accuracy_p90\": %s, "
            "\"evaluated\": %s, \"dropped\": %lld%s, \"examples_per_s\": %s, \"seconds\": %s%s%s%s}\n",
            round, j[0], j[1], j[2], j[3], j[4], j[5], e ? "true" : "false", (long long)t->dropped, vtime, j[6], j[7],
            privacy, kept, groups);
    fprintf(t->csv, "%d,%s,%s,%s,%s,%s,%s,%lld,%s,%s,%s\n", round, c[0], c[1], c[2], c[3], c[4], c[5],
            (long long)t->dropped, t->clock ? vtime_csv : "", c[6], c[7]);
    bool bad = fflush(t->jsonl) != 0 || fflush(t->csv) != 0 || ferror(t->jsonl) || ferror(t->csv);
    if (bad) return fedc_error(FEDC_EIO, "%s: cannot write the metrics: %s", t->c->out_dir, strerror(errno));
    return fedc__train_add_curve(t, round, train_loss, e);
}

/* -------------------------------------------------------------- curves -- */

/* One polyline of column `col` of the curve, scaled into the plot box. */
static void polyline(FILE *f, const trainer *t, int col, double lo, double hi, const char *color) {
    double last_round = t->curve[4 * (t->ncurve - 1)];
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    for (int i = 0; i < t->ncurve; i++) {
        double v = t->curve[4 * i + col];
        if (!isfinite(v)) continue;
        double x = 60 + 500 * t->curve[4 * i] / (last_round > 0 ? last_round : 1);
        double y = 320 - 280 * (v - lo) / (hi > lo ? hi - lo : 1);
        fprintf(f, "%.1f,%.1f ", x, y);
    }
    fprintf(f, "\"/>\n");
}

fedc_status fedc__train_write_curves(const trainer *t) {
    if (t->ncurve == 0) return FEDC_OK;
    char path[4096];
    path_in(t, "curves.svg", path, sizeof path);
    FILE *f = fopen(path, "w");
    if (!f) return fedc_error(FEDC_EIO, "%s: cannot write: %s", path, strerror(errno));
    double top = 0;
    for (int i = 0; i < t->ncurve; i++)
        for (int col = 1; col <= 2; col++)
            if (isfinite(t->curve[4 * i + col]) && t->curve[4 * i + col] > top) top = t->curve[4 * i + col];
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"380\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"640\" height=\"380\" fill=\"white\"/>\n"
               "<rect x=\"60\" y=\"40\" width=\"500\" height=\"280\" fill=\"none\" stroke=\"#888\"/>\n");
    fprintf(f, "<text x=\"60\" y=\"25\">fedc: %s on %s (left axis: loss 0 to %.3g; right: accuracy 0 to 100%%)</text>\n",
            fedc_algorithm_name(&t->alg), t->task, top);
    fprintf(f, "<text x=\"280\" y=\"350\">round (last: %.0f)</text>\n", t->curve[4 * (t->ncurve - 1)]);
    polyline(f, t, 1, 0, top, "#1f77b4");
    polyline(f, t, 2, 0, top, "#ff7f0e");
    polyline(f, t, 3, 0, 1, "#2ca02c");
    fprintf(f, "<text x=\"570\" y=\"60\" fill=\"#1f77b4\">train loss</text>\n"
               "<text x=\"570\" y=\"80\" fill=\"#ff7f0e\">test loss</text>\n"
               "<text x=\"570\" y=\"100\" fill=\"#2ca02c\">accuracy</text>\n</svg>\n");
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) return fedc_error(FEDC_EIO, "%s: cannot write", path);
    return FEDC_OK;
}

/* --------------------------------------------------------- checkpoints -- */

/* The metadata of a checkpoint: its format, the next round, the totals a resumed
 * run continues from, and the job's configuration (config.<flag>), which a resume
 * compares with its own (src/fl/train_resume.c). */
enum { MAX_SETTINGS = FEDC__MAX_SETTINGS };

typedef struct checkpoint_meta {
    fedc_metadata_entry e[9 + MAX_SETTINGS]; /* 2: an asynchronous run's counters */
    char round[32], seconds[40], examples[40], dropped[32], vtime[40];
    char keys[MAX_SETTINGS][96];
    train_setting s[MAX_SETTINGS];
    int n;
} checkpoint_meta;

static void describe(const trainer *t, checkpoint_meta *m, int next_round, double seconds, double examples) {
    snprintf(m->round, sizeof m->round, "%d", next_round);
    snprintf(m->seconds, sizeof m->seconds, "%.17g", seconds);
    snprintf(m->examples, sizeof m->examples, "%.17g", examples);
    snprintf(m->dropped, sizeof m->dropped, "%lld", (long long)t->dropped);
    m->n = 0;
    m->e[m->n++] = (fedc_metadata_entry){"format", "fedc checkpoint 3"};
    m->e[m->n++] = (fedc_metadata_entry){"next_round", m->round};
    m->e[m->n++] = (fedc_metadata_entry){"seconds", m->seconds};
    m->e[m->n++] = (fedc_metadata_entry){"examples", m->examples};
    m->e[m->n++] = (fedc_metadata_entry){"dropped", m->dropped};
    snprintf(m->vtime, sizeof m->vtime, "%.17g", t->vtime);
    if (t->clock) m->e[m->n++] = (fedc_metadata_entry){"virtual_time", m->vtime};
    m->n += fedc__train_async_metadata(t, m->e + m->n);
    int k = fedc__train_settings(t, m->s, MAX_SETTINGS);
    for (int i = 0; i < k; i++) {
        if (m->s[i].default_unwritten && !strcmp(m->s[i].value, m->s[i].unrecorded)) continue;
        fedc__train_setting_key(&m->s[i], m->keys[i], sizeof m->keys[i]);
        m->e[m->n++] = (fedc_metadata_entry){m->keys[i], m->s[i].value};
    }
}

fedc_status fedc__train_save_checkpoint(trainer *t, int next_round, double seconds, double examples) {
    fedc_tensor_entry *e = fedc_malloc((size_t)(fedc__train_state_entries(t, NULL) + fedc__train_async_num_entries(t) + 1) *
                                       sizeof *e);
    checkpoint_meta *meta = fedc_malloc(sizeof *meta);
    if (!e || !meta) {
        fedc_free(e), fedc_free(meta);
        return fedc_error(FEDC_ENOMEM, "checkpoint: out of memory");
    }
    int n = fedc__train_state_entries(t, e);
    n += fedc__train_async_entries(t, e + n); /* the clients in flight and their model versions */
    describe(t, meta, next_round, seconds, examples);
    char path[4096];
    path_in(t, "checkpoint.safetensors", path, sizeof path);
    /* the clients' records are durable before the checkpoint that needs them
     * exists, and protected once it does */
    fedc_status st = fedc__train_state_sync(t);
    if (!st) st = fedc_safetensors_write(path, e, n, meta->e, meta->n);
    if (!st) st = fedc__train_state_checkpointed(t, next_round);
    fedc_free(e);
    fedc_free(meta);
    return st;
}

fedc_status fedc__restore_tensor(const fedc_safetensors *s, const char *name, float *dst, fedc_type want) {
    fedc_tensor_entry e;
    fedc_status st = fedc_safetensors_find(s, name, &e);
    if (st) return st;
    if (e.type.dtype != FEDC_F32 || !fedc_type_same_shape(&e.type, &want)) {
        char a[64], b[64];
        return fedc_error(FEDC_EPARSE, "checkpoint: \"%s\" is %s, the model needs %s", name,
                          fedc_type_str(&e.type, a, sizeof a), fedc_type_str(&want, b, sizeof b));
    }
    memcpy(dst, e.data, fedc_type_bytes(&want));
    return FEDC_OK;
}

fedc_status fedc__train_load_params(trainer *t, const char *path) {
    fedc_safetensors *s;
    fedc_status st = fedc_safetensors_read(path, &s);
    for (int i = 0; !st && i < fedc_model_num_params(t->model); i++)
        st = fedc__restore_tensor(s, fedc_model_param_name(t->model, i), t->params + fedc_model_param_offset(t->model, i),
                     fedc_model_param_type(t->model, i));
    fedc_safetensors_destroy(s);
    return st;
}
