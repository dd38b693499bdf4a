/*
 * fedc program split FILE [--out DIR] — a round program's deployment form
 * (fedc/deploy.h, docs/deployment.md): each phase of each exchange written to
 * DIR/E_PHASE.fedc in the text format, and DIR/manifest.txt naming the phases and
 * every value that crosses between them (its type, who writes it, who reads it);
 * a summary goes to standard output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"

#define SPLIT "fedc program split"

const char cli_split_usage[] =
    "usage: fedc program split FILE [--out DIR]\n"
    "  cut a federated program into its deployment form: per exchange, the phases\n"
    "  server_prepare, server_to_client_broadcast, client_work (one client's program),\n"
    "  client_to_server_aggregation and server_result (docs/deployment.md); write each\n"
    "  to DIR/E_PHASE.fedc and the values crossing between them to DIR/manifest.txt\n"
    "  --out DIR      where the files go (default ., created if missing)\n";

/* One value crossing phases: who writes it ("input" for the round's inputs) and
 * who reads it ("output" for the round's outputs), as "E/phase" words. */
typedef struct crossing {
    const char *name;
    bool output;  /* one of the round's outputs (server/<leaf> may be named as an input is) */
    char from[64];
    char *to;     /* space-separated, malloc'd */
} crossing;

typedef struct manifest {
    crossing *v;
    int n, cap;
} manifest;

static crossing *crossing_of(manifest *m, const char *name, bool output) {
    for (int i = 0; i < m->n; i++)
        if (m->v[i].output == output && !strcmp(m->v[i].name, name)) return &m->v[i];
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 64;
        crossing *v = realloc(m->v, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        m->v = v, m->cap = cap;
    }
    crossing *c = &m->v[m->n++];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->output = output;
    return c;
}

static bool add_reader(crossing *c, const char *who) {
    size_t had = c->to ? strlen(c->to) : 0;
    char *to = realloc(c->to, had + strlen(who) + 2);
    if (!to) return false;
    if (had) to[had++] = ' ';
    strcpy(to + had, who);
    c->to = to;
    return true;
}

/* Who writes and reads every name of every phase. */
static bool collect(const fedc_deployment_form *f, const fedc_program *round, manifest *m) {
    for (int x = 0; x < fedc_deployment_form_exchanges(f); x++)
        for (int k = 0; k < FEDC_PHASE_COUNT; k++) {
            const fedc_program *q = fedc_deployment_form_phase(f, x, (fedc_phase_kind)k);
            char who[64];
            snprintf(who, sizeof who, "%d/%s", x, fedc_phase_name((fedc_phase_kind)k));
            for (int i = 0; i < fedc_program_num_inputs(q); i++) {
                const char *name = fedc_program_input_name(q, i);
                crossing *c = crossing_of(m, name, false);
                if (!c || !add_reader(c, who)) return false;
                if (!c->from[0] && fedc_program_find_input(round, name) != FEDC_NONE) strcpy(c->from, "input");
            }
            for (int i = 0; i < fedc_program_num_outputs(q); i++) {
                const char *name = fedc_program_output_name(q, i);
                crossing *c = crossing_of(m, name, fedc_program_find_output(round, name) != FEDC_NONE);
                if (!c) return false;
                snprintf(c->from, sizeof c->from, "%s", who);
            }
        }
    return true;
}

static void free_manifest(manifest *m) {
    for (int i = 0; i < m->n; i++) free(m->v[i].to);
    free(m->v);
}

/* Writes `text` to DIR/NAME whole, or removes what it began. */
static bool write_file(const char *dir, const char *name, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *out = fopen(path, "wb");
    bool ok = out && fputs(text, out) >= 0;
    if (out && fclose(out) != 0) ok = false;
    if (!ok) {
        fprintf(stderr, SPLIT ": %s: cannot write: %s\n", path, strerror(errno));
        remove(path);
    }
    return ok;
}

static bool write_phases(const fedc_deployment_form *f, const char *dir) {
    for (int x = 0; x < fedc_deployment_form_exchanges(f); x++)
        for (int k = 0; k < FEDC_PHASE_COUNT; k++) {
            char name[96], *text = NULL;
            snprintf(name, sizeof name, "%d_%s.fedc", x, fedc_phase_name((fedc_phase_kind)k));
            if (fedc_program_to_string(fedc_deployment_form_phase(f, x, (fedc_phase_kind)k), &text)) {
                fprintf(stderr, SPLIT ": %s\n", fedc_errmsg());
                return false;
            }
            bool ok = write_file(dir, name, text);
            fedc_free(text);
            if (!ok) return false;
        }
    return true;
}

/* manifest.txt: "fedc deployment form 1", the exchanges, one line per phase
 * (its file, inputs, outputs and operations), then one per value read by a phase
 * and one per output of the round:
 *     value "NAME" TYPE from WRITER to READER...    (WRITER "input": the round's)
 *     output "NAME" TYPE from WRITER                                              */
static char *manifest_text(const fedc_deployment_form *f, const fedc_program *round, const manifest *m) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out) return NULL;
    fprintf(out, "fedc deployment form 1\nexchanges %d\n", fedc_deployment_form_exchanges(f));
    for (int x = 0; x < fedc_deployment_form_exchanges(f); x++)
        for (int k = 0; k < FEDC_PHASE_COUNT; k++) {
            const fedc_program *q = fedc_deployment_form_phase(f, x, (fedc_phase_kind)k);
            fprintf(out, "phase %d %s %d_%s.fedc inputs %d outputs %d ops %d\n", x, fedc_phase_name((fedc_phase_kind)k),
                    x, fedc_phase_name((fedc_phase_kind)k), fedc_program_num_inputs(q), fedc_program_num_outputs(q),
                    fedc_program_size(q) - fedc_program_num_inputs(q));
        }
    for (int i = 0; i < m->n; i++) {
        const crossing *c = &m->v[i];
        fedc_type t;
        char type[64] = "?";
        fedc_value out_value = c->output ? fedc_program_find_output(round, c->name) : FEDC_NONE;
        if (c->output) t = fedc_value_type(round, out_value);
        if (c->output || fedc_deployment_form_value_type(f, c->name, &t)) fedc_type_str(&t, type, sizeof type);
        if (c->output) fprintf(out, "output \"%s\" %s from %s\n", c->name, type, c->from);
        else fprintf(out, "value \"%s\" %s from %s to %s\n", c->name, type, c->from[0] ? c->from : "-", c->to ? c->to : "-");
    }
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static void print_summary(const char *path, const fedc_deployment_form *f, const manifest *m, const char *dir) {
    int x = fedc_deployment_form_exchanges(f);
    int values = 0;
    for (int i = 0; i < m->n; i++) values += !m->v[i].output;
    printf("%s: %d exchange%s, %d values read by phases\n", path, x, x == 1 ? "" : "s", values);
    for (int e = 0; e < x; e++)
        for (int k = 0; k < FEDC_PHASE_COUNT; k++) {
            const fedc_program *q = fedc_deployment_form_phase(f, e, (fedc_phase_kind)k);
            printf("  %d %-29s %5d ops, %4d inputs, %4d outputs\n", e, fedc_phase_name((fedc_phase_kind)k),
                   fedc_program_size(q) - fedc_program_num_inputs(q), fedc_program_num_inputs(q),
                   fedc_program_num_outputs(q));
        }
    printf("wrote %d phase files and %s/manifest.txt\n", x * FEDC_PHASE_COUNT, dir);
}

static int split(const char *path, const char *dir) {
    fedc_program *round = cli_program_load(SPLIT, path);
    if (!round) return CLI_FAILED;
    fedc_deployment_form *f = NULL;
    manifest m = {0};
    char *text = NULL;
    int rc = CLI_FAILED;
    if (fedc_program_deployment_form(round, &f)) fprintf(stderr, SPLIT ": %s: %s\n", path, fedc_errmsg());
    else if (!collect(f, round, &m) || !(text = manifest_text(f, round, &m))) fprintf(stderr, SPLIT ": out of memory\n");
    else if (fedc_make_dirs(dir)) fprintf(stderr, SPLIT ": %s\n", fedc_errmsg());
    else if (write_phases(f, dir) && write_file(dir, "manifest.txt", text)) rc = CLI_OK;
    if (rc == CLI_OK) print_summary(path, f, &m, dir);
    free(text);
    free_manifest(&m);
    fedc_deployment_form_destroy(f);
    fedc_program_destroy(round);
    return rc;
}

int cli_program_split(int argc, char **argv) {
    const char *path = NULL, *dir = ".";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--out")) {
            if (i + 1 == argc) {
                fprintf(stderr, SPLIT ": --out needs a value (see " SPLIT " --help)\n");
                return CLI_USAGE;
            }
            if (!cli_text(SPLIT, "--out", dir = argv[++i])) return CLI_USAGE;
        } else if (!path && (argv[i][0] != '-' || !strcmp(argv[i], "-"))) {
            path = argv[i];
        } else {
            fprintf(stderr, SPLIT ": unexpected argument '%s' (see " SPLIT " --help)\n", argv[i]);
            return CLI_USAGE;
        }
    }
    if (!path) {
        fprintf(stderr, SPLIT ": needs FILE (see " SPLIT " --help)\n");
        return CLI_USAGE;
    }
    return split(path, dir);
}
