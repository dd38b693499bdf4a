/* Plans (fedc/deploy.h): written by fedc_plan_build, read back by the server
 * and, from the files it is sent, by each client. Reading is the parse of
 * untrusted input: every line of the manifest is checked, every file it names
 * is bounded in size, and the programs must hash to the manifest's hash and be
 * the round's own deployment form, split again here, byte for byte. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy.h"

enum {
    MAX_EXCHANGES = 16,
    MAX_FILES = FEDC__PLAN_MAX_FILES, /* plan.txt, round.fedc, the phases, warm_start.fedc and its phases,
                                         client_init.fedc, domains.txt */
    MAX_SETTINGS = 32,
    MAX_TENSORS = 4096
};
#define MAX_MANIFEST ((size_t)1 << 20)
#define MAX_PROGRAM ((size_t)256 << 20)

typedef struct owned_file {
    char name[64];
    char *data;
    size_t size;
} owned_file;

typedef struct tensor_line {
    char *name;
    char type[64]; /* as fedc_type_str prints the round's input */
} tensor_line;

struct fedc_plan {
    char hash[65];
    char settings_hash[65]; /* fedc__plan_settings_hash */
    fedc_program *round;
    fedc_deployment_form *form;
    owned_file file[MAX_FILES]; /* [0] plan.txt, [1] round.fedc, then the phases, then the warm start's program
                                   and phases, client_init, domains */
    int nfiles, exchanges;
    bool has_client_init, has_domains;
    int client_init_at;        /* client_init's file, when there is one */
    int warm_at, warm_exchanges, warm_clients; /* the warm start's program file (0: none), its form's exchanges
                                                  and the cohort it runs on */
    fedc_program *client_init; /* a never-seen client's state (NULL: the round keeps none) */
    fedc_program *warm;        /* the warm start (NULL: none), and its form */
    fedc_deployment_form *warm_form;
    char model_file[64];
    char key[MAX_SETTINGS][32];
    fedc__plan_setting setting[MAX_SETTINGS];
    int nsettings;
    tensor_line *tensor;
    int ntensors;
    fedc_tensor_entry *entry; /* per tensor: name, type, data (NULL without the model) */
    fedc_safetensors *model;
};

void fedc_plan_destroy(fedc_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->nfiles; i++) fedc_free(p->file[i].data);
    for (int i = 0; i < p->ntensors; i++) fedc_free(p->tensor[i].name);
    fedc_free(p->tensor), fedc_free(p->entry);
    fedc_safetensors_destroy(p->model);
    fedc_deployment_form_destroy(p->form);
    fedc_program_destroy(p->round);
    fedc_program_destroy(p->client_init);
    fedc_deployment_form_destroy(p->warm_form);
    fedc_program_destroy(p->warm);
    fedc_free(p);
}

const char *fedc_plan_hash(const fedc_plan *p) { return p->hash; }
const fedc_program *fedc_plan_round(const fedc_plan *p) { return p->round; }
const fedc_program *fedc_plan_client_init(const fedc_plan *p) { return p->client_init; }
const fedc_deployment_form *fedc_plan_form(const fedc_plan *p) { return p->form; }
const fedc_program *fedc_plan_warm_start(const fedc_plan *p) { return p->warm; }
const fedc_deployment_form *fedc_plan_warm_form(const fedc_plan *p) { return p->warm_form; }
int fedc_plan_warm_clients(const fedc_plan *p) { return p->warm ? p->warm_clients : 0; }
int fedc_plan_num_tensors(const fedc_plan *p) { return p->ntensors; }
fedc_tensor_entry fedc_plan_tensor(const fedc_plan *p, int i) { return p->entry[i]; }

const char *fedc_plan_setting(const fedc_plan *p, const char *key) {
    for (int i = 0; i < p->nsettings; i++)
        if (!strcmp(p->key[i], key)) return p->setting[i].value;
    return NULL;
}

const char *fedc__plan_settings_hash(const fedc_plan *p) { return p->settings_hash; }

const char *fedc__plan_domains(const fedc_plan *p, size_t *size) {
    if (!p->has_domains) return NULL;
    *size = p->file[p->nfiles - 1].size;
    return p->file[p->nfiles - 1].data;
}

int fedc_plan_files(const fedc_plan *p, fedc_plan_file *files, int max) {
    for (int i = 0; i < p->nfiles && i < max; i++) files[i] = (fedc_plan_file){p->file[i].name, p->file[i].data, p->file[i].size};
    return p->nfiles;
}

/* ------------------------------------------------------------- the hash -- */

static void hash_programs(const owned_file *files, int n, char hex[65]) {
    fedc__sha256 c;
    fedc__sha256_init(&c);
    for (int i = 0; i < n; i++) {
        char size[32];
        int k = snprintf(size, sizeof size, "%zu", files[i].size);
        fedc__sha256_add(&c, files[i].name, strlen(files[i].name) + 1);
        fedc__sha256_add(&c, size, (size_t)k + 1);
        fedc__sha256_add(&c, files[i].data, files[i].size);
    }
    fedc__sha256_hex(&c, hex);
}

/* ------------------------------------------------------------ the manifest -- */

typedef struct reader {
    fedc_plan *p;
    const char *what; /* the plan's directory, or what the files came from */
    int line;
} reader;

static fedc_status bad_line(const reader *r, const char *fmt, const char *arg) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg);
    return fedc_error(FEDC_EPARSE, "%s/plan.txt:%d: %s", r->what, r->line, msg);
}

/* A file name the plan may use: letters, digits, '_', '-', '.', not starting
 * with '.', so that no name reaches outside the plan's directory. */
static bool safe_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n >= 64 || s[0] == '.') return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || s[i] == '-' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z')))
            return false;
    return true;
}

static fedc_status add_file(reader *r, const char *name) {
    if (!safe_name(name)) return bad_line(r, "file name \"%.100s\" is not a plain name in the plan's directory", name);
    if (r->p->nfiles == MAX_FILES) return bad_line(r, "more than %s program files", "164");
    for (int i = 0; i < r->p->nfiles; i++)
        if (!strcmp(r->p->file[i].name, name)) return bad_line(r, "file \"%s\" is named twice", name);
    snprintf(r->p->file[r->p->nfiles++].name, 64, "%s", name);
    return FEDC_OK;
}

/* The next space-separated word of *s (NUL-terminated in place), or NULL. */
static char *word(char **s) {
    while (**s == ' ') (*s)++;
    if (!**s) return NULL;
    char *w = *s;
    while (**s && **s != ' ') (*s)++;
    if (**s) *(*s)++ = '\0';
    return w;
}

static fedc_status phase_line(reader *r, char *rest) {
    fedc_plan *p = r->p;
    char *e = word(&rest), *kind = word(&rest), *file = word(&rest);
    if (!e || !kind || !file || word(&rest)) return bad_line(r, "%s", "phase needs EXCHANGE KIND FILE");
    int k = p->nfiles - 2, want_e = k / FEDC_PHASE_COUNT;
    char num[16];
    snprintf(num, sizeof num, "%d", want_e);
    if (p->exchanges < 1) return bad_line(r, "%s", "phase before exchanges");
    if (p->has_client_init || p->warm_at) return bad_line(r, "%s", "phase after warm_start or client_init");
    if (want_e >= p->exchanges) return bad_line(r, "%s", "more phases than the exchanges hold");
    if (strcmp(e, num)) return bad_line(r, "phase's exchange should be %s here", num);
    if (strcmp(kind, fedc_phase_name((fedc_phase_kind)(k % FEDC_PHASE_COUNT))))
        return bad_line(r, "phase should be %s here", fedc_phase_name((fedc_phase_kind)(k % FEDC_PHASE_COUNT)));
    return add_file(r, file);
}

/* The files up to the warm start's last phase: where client_init comes. */
static int files_before_client_init(const fedc_plan *p) {
    return 2 + p->exchanges * FEDC_PHASE_COUNT + (p->warm_at ? 1 + p->warm_exchanges * FEDC_PHASE_COUNT : 0);
}

/* A whole number in [lo, hi], all of w. */
static bool whole(const char *w, long lo, long hi, int *out) {
    char *end = NULL;
    long v = w ? strtol(w, &end, 10) : 0;
    if (!w || *end || end == w || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* warm_start FILE clients K exchanges E: after every phase of the round. */
static fedc_status warm_start_line(reader *r, char *rest) {
    fedc_plan *p = r->p;
    char *f = word(&rest), *kc = word(&rest), *k = word(&rest), *ke = word(&rest), *e = word(&rest);
    if (!f || !kc || strcmp(kc, "clients") || !whole(k, 1, 1 << 20, &p->warm_clients) || !ke || strcmp(ke, "exchanges") ||
        !whole(e, 1, MAX_EXCHANGES, &p->warm_exchanges) || word(&rest))
        return bad_line(r, "%s", "warm_start needs FILE clients K exchanges E (K from 1 to 1048576, E from 1 to 16)");
    if (p->warm_at || !p->exchanges || p->nfiles != 2 + p->exchanges * FEDC_PHASE_COUNT || p->has_client_init)
        return bad_line(r, "%s", "warm_start comes once, after every phase of the round and before client_init");
    p->warm_at = p->nfiles;
    return add_file(r, f);
}

/* warm_phase EXCHANGE KIND FILE: the warm start's form, in its order. */
static fedc_status warm_phase_line(reader *r, char *rest) {
    fedc_plan *p = r->p;
    char *e = word(&rest), *kind = word(&rest), *file = word(&rest);
    if (!e || !kind || !file || word(&rest)) return bad_line(r, "%s", "warm_phase needs EXCHANGE KIND FILE");
    if (!p->warm_at || p->has_client_init) return bad_line(r, "%s", "warm_phase comes after warm_start, before client_init");
    int k = p->nfiles - p->warm_at - 1;
    char num[16];
    snprintf(num, sizeof num, "%d", k / FEDC_PHASE_COUNT);
    const char *want = fedc_phase_name((fedc_phase_kind)(k % FEDC_PHASE_COUNT));
    if (k / FEDC_PHASE_COUNT >= p->warm_exchanges) return bad_line(r, "%s", "more warm phases than the warm start's exchanges hold");
    if (strcmp(e, num)) return bad_line(r, "warm_phase's exchange should be %s here", num);
    if (strcmp(kind, want)) return bad_line(r, "warm_phase should be %s here", want);
    return add_file(r, file);
}

static fedc_status setting_line(reader *r, char *rest) {
    fedc_plan *p = r->p;
    char *key = word(&rest);
    while (*rest == ' ') rest++;
    if (!key || !*rest) return bad_line(r, "%s", "setting needs KEY VALUE");
    if (strlen(key) >= sizeof p->key[0] || strlen(rest) >= sizeof p->setting[0].value)
        return bad_line(r, "setting \"%.40s\": key or value too long", key);
    if (fedc_plan_setting(p, key)) return bad_line(r, "setting \"%s\" is given twice", key);
    if (p->nsettings == MAX_SETTINGS) return bad_line(r, "more than %s settings", "32");
    snprintf(p->key[p->nsettings], sizeof p->key[0], "%s", key);
    p->setting[p->nsettings].key = p->key[p->nsettings];
    snprintf(p->setting[p->nsettings].value, sizeof p->setting[0].value, "%s", rest);
    p->nsettings++;
    return FEDC_OK;
}

/* tensor "NAME" TYPE */
static fedc_status tensor_line_read(reader *r, char *rest) {
    fedc_plan *p = r->p;
    while (*rest == ' ') rest++;
    char *end = *rest == '"' ? strchr(rest + 1, '"') : NULL;
    if (!end || end == rest + 1) return bad_line(r, "%s", "tensor needs \"NAME\" TYPE");
    *end = '\0';
    char *name = rest + 1, *after = end + 1, *type = word(&after);
    if (!type || word(&after) || strlen(type) >= 64) return bad_line(r, "tensor \"%.200s\" needs one TYPE", name);
    if (p->ntensors == MAX_TENSORS) return bad_line(r, "more than %s tensors", "4096");
    if (p->ntensors % 64 == 0) {
        tensor_line *t = fedc_realloc(p->tensor, (size_t)(p->ntensors + 64) * sizeof *t);
        if (!t) return fedc_error(FEDC_ENOMEM, "plan: out of memory");
        p->tensor = t;
    }
    tensor_line *t = &p->tensor[p->ntensors];
    if (!(t->name = fedc_malloc(strlen(name) + 1))) return fedc_error(FEDC_ENOMEM, "plan: out of memory");
    strcpy(t->name, name);
    snprintf(t->type, sizeof t->type, "%s", type);
    p->ntensors++;
    return FEDC_OK;
}

static fedc_status manifest_line(reader *r, char *s) {
    fedc_plan *p = r->p;
    char *kw = word(&s);
    if (!kw) return FEDC_OK; /* a blank line */
    if (!strcmp(kw, "hash")) {
        char *alg = word(&s), *hex = word(&s);
        if (!alg || strcmp(alg, "sha256") || !hex || strlen(hex) != 64 || strspn(hex, "0123456789abcdef") != 64 || word(&s))
            return bad_line(r, "%s", "hash needs \"sha256\" and 64 lowercase hex digits");
        memcpy(p->hash, hex, 65);
        return FEDC_OK;
    }
    if (!strcmp(kw, "round")) {
        char *f = word(&s);
        if (!f || word(&s) || p->nfiles != 1) return bad_line(r, "%s", "round needs FILE, once, before the phases");
        return add_file(r, f);
    }
    if (!strcmp(kw, "exchanges")) {
        char *n = word(&s), *end = NULL;
        long v = n ? strtol(n, &end, 10) : 0;
        if (!n || *end || v < 1 || v > MAX_EXCHANGES || word(&s) || p->exchanges)
            return bad_line(r, "%s", "exchanges needs a number from 1 to 16, once");
        p->exchanges = (int)v;
        return FEDC_OK;
    }
    if (!strcmp(kw, "phase")) return phase_line(r, s);
    if (!strcmp(kw, "warm_start")) return warm_start_line(r, s);
    if (!strcmp(kw, "warm_phase")) return warm_phase_line(r, s);
    if (!strcmp(kw, "client_init")) {
        char *f = word(&s);
        if (!f || word(&s) || p->has_client_init || p->nfiles != files_before_client_init(p) || !p->exchanges)
            return bad_line(r, "%s", "client_init needs FILE, once, after every phase");
        p->has_client_init = true;
        p->client_init_at = p->nfiles;
        return add_file(r, f);
    }
    if (!strcmp(kw, "domains")) {
        char *f = word(&s);
        if (!f || word(&s) || p->has_domains || !p->exchanges || p->nfiles != files_before_client_init(p) + p->has_client_init)
            return bad_line(r, "%s", "domains needs FILE, once, after every phase and client_init");
        p->has_domains = true;
        return add_file(r, f);
    }
    if (!strcmp(kw, "setting")) return setting_line(r, s);
    if (!strcmp(kw, "tensor")) return tensor_line_read(r, s);
    if (!strcmp(kw, "model")) {
        char *f = word(&s);
        if (!f || word(&s) || !safe_name(f) || p->model_file[0]) return bad_line(r, "%s", "model needs one plain FILE, once");
        snprintf(p->model_file, sizeof p->model_file, "%s", f);
        return FEDC_OK;
    }
    return bad_line(r, "unknown field \"%.100s\" (hash, round, exchanges, phase, warm_start, warm_phase, client_init, "
                    "domains, setting, tensor, model)", kw);
}

/* plan.txt, already in p->file[0]: its lines, then what must be there. */
static fedc_status read_manifest(reader *r) {
    fedc_plan *p = r->p;
    const owned_file *f = &p->file[0];
    if (memchr(f->data, '\0', f->size)) return fedc_error(FEDC_EPARSE, "%s/plan.txt: holds a NUL byte", r->what);
    char *text = fedc_malloc(f->size + 1);
    if (!text) return fedc_error(FEDC_ENOMEM, "plan: out of memory");
    memcpy(text, f->data, f->size);
    text[f->size] = '\0';
    fedc_status st = FEDC_OK;
    char *line = text;
    for (r->line = 1; !st && line; r->line++) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        if (r->line == 1) {
            int version = 0, used = 0;
            if (sscanf(line, "fedc plan %d%n", &version, &used) != 1 || line[used])
                st = bad_line(r, "%s", "not a plan manifest (the first line should be \"fedc plan 2\")");
            else if (version != FEDC_PLAN_VERSION)
                st = fedc_error(FEDC_EUNSUPPORTED, "%s/plan.txt:1: plan format %d; this fedc reads format %d (build the "
                                "plan again with this fedc's fedc plan build)", r->what, version, FEDC_PLAN_VERSION);
        } else {
            st = manifest_line(r, line);
        }
        line = nl ? nl + 1 : NULL;
    }
    fedc_free(text);
    r->line = 0;
    if (st) return st;
    const char *missing = !p->hash[0] ? "hash" : p->nfiles < 2 ? "round" : !p->exchanges ? "exchanges" : NULL;
    if (!missing && p->warm_at && p->nfiles < files_before_client_init(p))
        missing = "warm_phase (one per phase of each of the warm start's exchanges)";
    if (!missing && p->nfiles != files_before_client_init(p) + p->has_client_init + p->has_domains)
        missing = "phase (one per phase of each exchange)";
    if (missing) return fedc_error(FEDC_EPARSE, "%s/plan.txt: no %s line", r->what, missing);
    return FEDC_OK;
}

/* ------------------------------------------------------------ the checks -- */

/* The client state's initial value: no inputs, and exactly the round's
 * client/<leaf> inputs as outputs, of their (one client's) types. A round with
 * client/ inputs needs it. */
static fedc_status check_client_init(reader *r) {
    fedc_plan *p = r->p;
    const fedc_program *q = p->round;
    int state = 0;
    for (int i = 0; i < fedc_program_num_inputs(q); i++) state += !strncmp(fedc_program_input_name(q, i), "client/", 7);
    if (!p->has_client_init)
        return state ? fedc_error(FEDC_EPARSE, "%s/plan.txt: the round keeps client state, but there is no client_init "
                                  "line", r->what) : FEDC_OK;
    const owned_file *f = &p->file[p->client_init_at];
    fedc_status st = fedc_program_parse_n(f->data, f->size, &p->client_init);
    if (st) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", fedc_errmsg());
        return fedc_error(st, "%s/%s: %s", r->what, f->name, msg);
    }
    const fedc_program *c = p->client_init;
    if (fedc_program_num_inputs(c) || fedc_program_num_outputs(c) != state)
        return fedc_error(FEDC_EPARSE, "%s/%s: %d inputs and %d outputs; the client state's initial value has no inputs "
                          "and the round's %d client/ inputs as outputs", r->what, f->name, fedc_program_num_inputs(c),
                          fedc_program_num_outputs(c), state);
    for (int i = 0; i < state; i++) {
        const char *name = fedc_program_output_name(c, i);
        fedc_value v = fedc_program_find_input(q, name);
        fedc_type a = fedc_value_type(c, fedc_program_output_value(c, i)), b;
        if (v != FEDC_NONE) b = fedc_value_type(q, v);
        if (v == FEDC_NONE || strncmp(name, "client/", 7) || a.dtype != b.dtype || !fedc_type_same_shape(&a, &b))
            return fedc_error(FEDC_EPARSE, "%s/%s: output \"%s\" is not one of the round's client/ inputs, of its type",
                              r->what, f->name, name);
    }
    return FEDC_OK;
}

/* The clients' domains ("client_id,domain" lines, which the client parses as
 * fedc train parses --client-domains): text, for a round that reads them. */
static fedc_status check_domains(reader *r) {
    fedc_plan *p = r->p;
    if (!p->has_domains) return FEDC_OK;
    const owned_file *f = &p->file[p->nfiles - 1];
    if (fedc_program_find_input(p->round, "meta/domain") == FEDC_NONE)
        return fedc_error(FEDC_EPARSE, "%s/plan.txt: a domains line, but the round reads no meta/domain", r->what);
    if (memchr(f->data, '\0', f->size)) return fedc_error(FEDC_EPARSE, "%s/%s: holds a NUL byte", r->what, f->name);
    return FEDC_OK;
}

/* A program file parsed; an error names the file. */
static fedc_status parse_file(const reader *r, const owned_file *f, fedc_program **out) {
    fedc_status st = fedc_program_parse_n(f->data, f->size, out);
    if (!st) return FEDC_OK;
    char msg[900];
    snprintf(msg, sizeof msg, "%s", fedc_errmsg());
    return fedc_error(st, "%s/%s: %s", r->what, f->name, msg);
}

/* The phase files from p->file[first] on: exactly form f's phases (split again
 * here), byte for byte; `what` names the program ("the round", "the warm start"). */
static fedc_status check_phases(const reader *r, const fedc_deployment_form *f, int exchanges, int first, const char *what) {
    if (fedc_deployment_form_exchanges(f) != exchanges)
        return fedc_error(FEDC_EPARSE, "%s/plan.txt: %d exchanges, but %s splits into %d", r->what, exchanges, what,
                          fedc_deployment_form_exchanges(f));
    for (int k = 0; k < exchanges * FEDC_PHASE_COUNT; k++) {
        const owned_file *file = &r->p->file[first + k];
        fedc_phase_kind kind = (fedc_phase_kind)(k % FEDC_PHASE_COUNT);
        char *text = NULL;
        fedc_status st = fedc_program_to_string(fedc_deployment_form_phase(f, k / FEDC_PHASE_COUNT, kind), &text);
        if (st) return st;
        bool same = strlen(text) == file->size && !memcmp(text, file->data, file->size);
        fedc_free(text);
        if (!same)
            return fedc_error(FEDC_EPARSE, "%s/%s: is not phase %s of exchange %d of %s's form", r->what, file->name,
                              fedc_phase_name(kind), k / FEDC_PHASE_COUNT, what);
    }
    return FEDC_OK;
}

/* Whether a and b have one dtype and shape. */
static bool same_type(fedc_type a, fedc_type b) { return a.dtype == b.dtype && fedc_type_same_shape(&a, &b); }

/* The warm start's interface: it reads the round's server state (server/
 * inputs of the round's types) and no client state, and writes the whole
 * server state, each leaf of its type, and no client state (fedc train keeps
 * only its server state). */
/* Whether a warm start may read or write `name` of type t: no client state,
 * and a server/ leaf only as the round has it. */
static bool warm_may_pass(const fedc_program *q, const char *name, fedc_type t) {
    fedc_value v = fedc_program_find_input(q, name);
    if (!strncmp(name, "client/", 7)) return false;
    return strncmp(name, "server/", 7) || (v != FEDC_NONE && same_type(t, fedc_value_type(q, v)));
}

static fedc_status check_warm_interface(const reader *r, const owned_file *f) {
    const fedc_program *w = r->p->warm, *q = r->p->round;
    for (int i = 0; i < fedc_program_num_inputs(w); i++)
        if (!warm_may_pass(q, fedc_program_input_name(w, i), fedc_value_type(w, fedc_program_input(w, i))))
            return fedc_error(FEDC_EPARSE, "%s/%s: input \"%s\" is not one of the round's server/ inputs, of its type (a warm "
                              "start reads the server state and the clients' data)", r->what, f->name,
                              fedc_program_input_name(w, i));
    for (int i = 0; i < fedc_program_num_outputs(w); i++)
        if (!warm_may_pass(q, fedc_program_output_name(w, i), fedc_value_type(w, fedc_program_output_value(w, i))))
            return fedc_error(FEDC_EPARSE, "%s/%s: output \"%s\" is not one of the round's server/ inputs, of its type (a "
                              "warm start writes the server state only)", r->what, f->name, fedc_program_output_name(w, i));
    for (int i = 0; i < fedc_program_num_inputs(q); i++) {
        const char *name = fedc_program_input_name(q, i);
        bool written = false;
        for (int j = 0; !written && j < fedc_program_num_outputs(w); j++) written = !strcmp(fedc_program_output_name(w, j), name);
        if (!strncmp(name, "server/", 7) && !written)
            return fedc_error(FEDC_EPARSE, "%s/%s: writes no \"%s\"; a warm start writes the whole server state", r->what,
                              f->name, name);
    }
    return FEDC_OK;
}

/* The warm start, when the plan has one: its program, its form (split again),
 * its interface. */
static fedc_status check_warm(reader *r) {
    fedc_plan *p = r->p;
    if (!p->warm_at) return FEDC_OK;
    const owned_file *f = &p->file[p->warm_at];
    fedc_status st = parse_file(r, f, &p->warm);
    if (!st) st = check_warm_interface(r, f);
    if (!st && (st = fedc_program_deployment_form(p->warm, &p->warm_form))) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", fedc_errmsg());
        st = fedc_error(st, "%s/%s: %s", r->what, f->name, msg);
    }
    return st ? st : check_phases(r, p->warm_form, p->warm_exchanges, p->warm_at + 1, "the warm start");
}

/* SHA-256 of the settings, each key and value with its NUL ("a" "bc" is not
 * "ab" "c"). */
static void hash_settings(fedc_plan *p) {
    fedc__sha256 c;
    fedc__sha256_init(&c);
    for (int i = 0; i < p->nsettings; i++) {
        fedc__sha256_add(&c, p->key[i], strlen(p->key[i]) + 1);
        fedc__sha256_add(&c, p->setting[i].value, strlen(p->setting[i].value) + 1);
    }
    fedc__sha256_hex(&c, p->settings_hash);
}

/* The programs against the hash and the round's own form. */
static fedc_status check_programs(reader *r) {
    fedc_plan *p = r->p;
    char hex[65];
    hash_programs(p->file + 1, p->nfiles - 1, hex);
    if (strcmp(hex, p->hash))
        return fedc_error(FEDC_EPARSE, "%s: the programs hash to %s, but plan.txt says %s (a file was changed, or is "
                          "not this plan's)", r->what, hex, p->hash);
    fedc_status st = parse_file(r, &p->file[1], &p->round);
    if (!st) st = fedc_program_deployment_form(p->round, &p->form);
    if (!st) st = check_phases(r, p->form, p->exchanges, 2, "the round");
    if (!st) st = check_warm(r);
    if (!st) st = check_client_init(r);
    return st ? st : check_domains(r);
}

/* The tensors: exactly the round's server/<leaf> inputs, with their types. */
static fedc_status check_tensors(reader *r) {
    fedc_plan *p = r->p;
    const fedc_program *q = p->round;
    int server = 0;
    for (int i = 0; i < fedc_program_num_inputs(q); i++)
        server += !strncmp(fedc_program_input_name(q, i), "server/", 7);
    if (server != p->ntensors)
        return fedc_error(FEDC_EPARSE, "%s/plan.txt: %d tensors, but the round has %d server/ inputs", r->what,
                          p->ntensors, server);
    p->entry = fedc_calloc((size_t)p->ntensors + 1, sizeof *p->entry);
    if (!p->entry) return fedc_error(FEDC_ENOMEM, "plan: out of memory");
    for (int i = 0; i < p->ntensors; i++) {
        const tensor_line *t = &p->tensor[i];
        fedc_value v = strncmp(t->name, "server/", 7) ? FEDC_NONE : fedc_program_find_input(q, t->name);
        if (v == FEDC_NONE)
            return fedc_error(FEDC_EPARSE, "%s/plan.txt: tensor \"%s\" is not a server/ input of the round", r->what, t->name);
        fedc_type type = fedc_value_type(q, v);
        char want[64];
        fedc_type_str(&type, want, sizeof want);
        if (strcmp(want, t->type))
            return fedc_error(FEDC_EPARSE, "%s/plan.txt: tensor \"%s\" is %s, but the round's input is %s", r->what,
                              t->name, t->type, want);
        p->entry[i] = (fedc_tensor_entry){t->name, type, NULL};
    }
    return FEDC_OK;
}

/* The model file: the tensors, nothing else, each of its type. */
static fedc_status read_model(reader *r, const char *dir) {
    fedc_plan *p = r->p;
    if (!p->model_file[0]) return fedc_error(FEDC_EPARSE, "%s/plan.txt: no model line", r->what);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, p->model_file);
    fedc_status st = fedc_safetensors_read(path, &p->model);
    if (st) return st;
    if (fedc_safetensors_count(p->model) != p->ntensors)
        return fedc_error(FEDC_EPARSE, "%s: %d tensors, but plan.txt lists %d", path, fedc_safetensors_count(p->model),
                          p->ntensors);
    for (int i = 0; i < p->ntensors; i++) {
        fedc_tensor_entry e;
        if ((st = fedc_safetensors_find(p->model, p->entry[i].name, &e))) return st;
        if (e.type.dtype != p->entry[i].type.dtype || !fedc_type_same_shape(&e.type, &p->entry[i].type)) {
            char a[64];
            return fedc_error(FEDC_EPARSE, "%s: tensor \"%s\" is %s, not %s", path, e.name,
                              fedc_type_str(&e.type, a, sizeof a), p->tensor[i].type);
        }
        p->entry[i].data = e.data;
    }
    return FEDC_OK;
}

/* ---------------------------------------------------------------- reading -- */

/* Where the files come from: a directory, or an array in memory. */
typedef struct source {
    const char *dir;
    const fedc_plan_file *files;
    int n;
} source;

static fedc_status read_whole(const char *path, size_t max, char **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = fedc_malloc(cap);
    fedc_status st = buf ? FEDC_OK : fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    while (!st) {
        if (n == cap) {
            char *b = cap > max ? NULL : fedc_realloc(buf, cap * 2);
            if (!b) st = cap > max ? fedc_error(FEDC_EPARSE, "%s: larger than %zu bytes", path, max)
                                   : fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
            else buf = b, cap *= 2;
            continue;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    if (!st && ferror(f)) st = fedc_error(FEDC_EIO, "%s: cannot read", path);
    if (!st && n > max) st = fedc_error(FEDC_EPARSE, "%s: larger than %zu bytes", path, max);
    fclose(f);
    if (st) {
        fedc_free(buf);
        return st;
    }
    *data = buf, *size = n;
    return FEDC_OK;
}

static fedc_status fetch(const reader *r, const source *s, owned_file *f, size_t max) {
    if (s->dir) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", s->dir, f->name);
        return read_whole(path, max, &f->data, &f->size);
    }
    for (int i = 0; i < s->n; i++) {
        if (!s->files[i].name || strcmp(s->files[i].name, f->name)) continue;
        if (s->files[i].size > max) return fedc_error(FEDC_EPARSE, "%s/%s: larger than %zu bytes", r->what, f->name, max);
        if (!(f->data = fedc_malloc(s->files[i].size + 1))) return fedc_error(FEDC_ENOMEM, "plan: out of memory");
        if (s->files[i].size) memcpy(f->data, s->files[i].data, s->files[i].size);
        f->size = s->files[i].size;
        return FEDC_OK;
    }
    return fedc_error(FEDC_ENOTFOUND, "%s: no file \"%s\"", r->what, f->name);
}

static fedc_status load(const source *s, const char *what, fedc_plan **out) {
    *out = NULL;
    fedc_plan *p = fedc_calloc(1, sizeof *p);
    if (!p) return fedc_error(FEDC_ENOMEM, "plan: out of memory");
    reader r = {p, what, 0};
    snprintf(p->file[0].name, 64, "plan.txt");
    p->nfiles = 1;
    fedc_status st = fetch(&r, s, &p->file[0], MAX_MANIFEST);
    int fetched = st ? 0 : 1;
    if (st) p->nfiles = 0; /* nothing to free */
    if (!st) st = read_manifest(&r);
    if (!st) hash_settings(p);
    for (; !st && fetched < p->nfiles; fetched++) st = fetch(&r, s, &p->file[fetched], MAX_PROGRAM);
    if (st) p->nfiles = fetched; /* the files with data */
    if (!st) st = check_programs(&r);
    if (!st) st = check_tensors(&r);
    if (!st && s->dir) st = read_model(&r, s->dir);
    if (st) fedc_plan_destroy(p);
    else *out = p;
    return st;
}

fedc_status fedc_plan_read(const char *dir, fedc_plan **out) {
    return load(&(source){.dir = dir}, dir, out);
}

fedc_status fedc_plan_from_files(const fedc_plan_file *files, int n, const char *what, fedc_plan **out) {
    return load(&(source){.files = files, .n = n}, what, out);
}

/* ---------------------------------------------------------------- writing -- */

/* DIR/NAME written under a temporary name and renamed, so that a reader sees
 * the whole file or none. */
static fedc_status write_file(const char *dir, const char *name, const char *data, size_t size) {
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(data, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) != 0) ok = false;
    if (!ok) {
        fedc_status st = fedc_error(FEDC_EIO, "%s: cannot write: %s", path, strerror(errno));
        remove(tmp);
        return st;
    }
    return FEDC_OK;
}

/* A program and its form's phases as files[*n...]: NAME.fedc (prefix "") or
 * PREFIX.fedc, and PREFIX E_PHASE.fedc for each phase. */
static fedc_status add_programs(const fedc_program *q, const fedc_deployment_form *f, const char *name, const char *prefix,
                                owned_file *files, int *n) {
    snprintf(files[*n].name, 64, "%s.fedc", name);
    fedc_status st = fedc_program_to_string(q, &files[*n].data);
    if (!st) (*n)++;
    for (int k = 0; !st && k < fedc_deployment_form_exchanges(f) * FEDC_PHASE_COUNT; k++) {
        fedc_phase_kind kind = (fedc_phase_kind)(k % FEDC_PHASE_COUNT);
        snprintf(files[*n].name, 64, "%s%d_%s.fedc", prefix, k / FEDC_PHASE_COUNT, fedc_phase_name(kind));
        st = fedc_program_to_string(fedc_deployment_form_phase(f, k / FEDC_PHASE_COUNT, kind), &files[*n].data);
        if (!st) (*n)++;
    }
    return st;
}

/* What a plan holds besides its settings and tensors, while it is written. */
typedef struct plan_parts {
    const fedc_program *round, *client_init, *warm;
    const fedc_deployment_form *form, *warm_form;
    int warm_clients;
    const char *domains;
} plan_parts;

static fedc_status write_programs(const char *dir, const plan_parts *pp, owned_file *files, int *n) {
    *n = 0;
    fedc_status st = add_programs(pp->round, pp->form, "round", "", files, n);
    if (!st && pp->warm) st = add_programs(pp->warm, pp->warm_form, "warm_start", "warm_", files, n);
    if (!st && pp->client_init) {
        snprintf(files[*n].name, 64, "client_init.fedc");
        st = fedc_program_to_string(pp->client_init, &files[*n].data);
        if (!st) (*n)++;
    }
    if (!st && pp->domains) {
        snprintf(files[*n].name, 64, "domains.txt");
        if (!(files[*n].data = fedc_malloc(strlen(pp->domains) + 1))) st = fedc_error(FEDC_ENOMEM, "plan: out of memory");
        else strcpy(files[(*n)++].data, pp->domains);
    }
    for (int i = 0; i < *n; i++) files[i].size = strlen(files[i].data);
    for (int i = 0; !st && i < *n; i++) st = write_file(dir, files[i].name, files[i].data, files[i].size);
    return st;
}

/* The phase lines of a form whose files start at files[first]. */
static void phase_lines(FILE *out, const char *kw, const fedc_deployment_form *f, const owned_file *files, int first) {
    for (int k = 0; k < fedc_deployment_form_exchanges(f) * FEDC_PHASE_COUNT; k++)
        fprintf(out, "%s %d %s %s\n", kw, k / FEDC_PHASE_COUNT, fedc_phase_name((fedc_phase_kind)(k % FEDC_PHASE_COUNT)),
                files[first + k].name);
}

static char *manifest(const owned_file *files, int n, const plan_parts *pp, const fedc__plan_setting *settings, int nsettings,
                      const fedc_tensor_entry *tensors, int ntensors, size_t *size) {
    char *text = NULL, hex[65];
    FILE *out = open_memstream(&text, size);
    if (!out) return NULL;
    hash_programs(files, n, hex);
    int exchanges = fedc_deployment_form_exchanges(pp->form), at = 1 + exchanges * FEDC_PHASE_COUNT;
    fprintf(out, "fedc plan %d\nhash sha256 %s\nround %s\nexchanges %d\n", FEDC_PLAN_VERSION, hex, files[0].name, exchanges);
    phase_lines(out, "phase", pp->form, files, 1);
    if (pp->warm) {
        int we = fedc_deployment_form_exchanges(pp->warm_form);
        fprintf(out, "warm_start %s clients %d exchanges %d\n", files[at].name, pp->warm_clients, we);
        phase_lines(out, "warm_phase", pp->warm_form, files, at + 1);
        at += 1 + we * FEDC_PHASE_COUNT;
    }
    if (pp->client_init) fprintf(out, "client_init %s\n", files[at].name);
    if (pp->domains) fprintf(out, "domains %s\n", files[n - 1].name);
    for (int i = 0; i < nsettings; i++) fprintf(out, "setting %s %s\n", settings[i].key, settings[i].value);
    for (int i = 0; i < ntensors; i++) {
        char type[64];
        fedc_type t = tensors[i].type;
        t.placement = FEDC_SERVER;
        fprintf(out, "tensor \"%s\" %s\n", tensors[i].name, fedc_type_str(&t, type, sizeof type));
    }
    fprintf(out, "model model.safetensors\n");
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* Program q's form in *f, at most MAX_EXCHANGES exchanges. */
static fedc_status form_of(const fedc_program *q, const char *what, fedc_deployment_form **f) {
    fedc_status st = fedc_program_deployment_form(q, f);
    if (!st && fedc_deployment_form_exchanges(*f) > MAX_EXCHANGES)
        st = fedc_error(FEDC_EUNSUPPORTED, "plan: %s has %d exchanges; a plan holds at most %d", what,
                        fedc_deployment_form_exchanges(*f), MAX_EXCHANGES);
    return st;
}

fedc_status fedc__plan_write(const char *dir, const fedc_program *round, const fedc_program *client_init,
                             const fedc_program *warm, int warm_clients, const char *domains,
                             const fedc__plan_setting *settings, int nsettings, const fedc_tensor_entry *tensors,
                             int ntensors) {
    fedc_deployment_form *f = NULL, *wf = NULL;
    owned_file *files = fedc_calloc(MAX_FILES, sizeof *files);
    int n = 0;
    size_t size = 0;
    char *text = NULL, path[4200];
    fedc_status st = files ? fedc_make_dirs(dir) : fedc_error(FEDC_ENOMEM, "plan: out of memory");
    if (!st) st = form_of(round, "the round", &f);
    if (!st && warm) st = form_of(warm, "the warm start", &wf);
    if (!st && warm && (warm_clients < 1 || warm_clients > (1 << 20)))
        st = fedc_error(FEDC_EINVAL, "plan: a warm start on %d clients", warm_clients);
    plan_parts pp = {round, client_init, warm, f, wf, warm_clients, domains};
    if (!st) st = write_programs(dir, &pp, files, &n);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!st) st = fedc_safetensors_write(path, tensors, ntensors, NULL, 0);
    if (!st && !(text = manifest(files, n, &pp, settings, nsettings, tensors, ntensors, &size)))
        st = fedc_error(FEDC_ENOMEM, "plan: out of memory for the manifest");
    if (!st) st = write_file(dir, "plan.txt", text, size); /* last: a plan without it is no plan */
    free(text);
    for (int i = 0; files && i < n; i++) fedc_free(files[i].data);
    fedc_free(files);
    fedc_deployment_form_destroy(f);
    fedc_deployment_form_destroy(wf);
    return st;
}
