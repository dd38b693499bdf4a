/* Running an exported module with LLVM 19's tools and the program with fedc's
 * executor on the same inputs (tests/export_cases.h). */
#include "export_cases.h"

static const char *const PIPELINE =
    "--one-shot-bufferize=\"bufferize-function-boundaries allow-return-allocs-from-loops\" --convert-linalg-to-loops --expand-strided-metadata "
    "--lower-affine --convert-scf-to-cf --convert-math-to-llvm --convert-math-to-libm --convert-arith-to-llvm "
    "--finalize-memref-to-llvm --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts";
static const char *const RUNNER_LIBS =
    "/usr/lib/llvm-19/lib/libmlir_runner_utils.so.19.1,/usr/lib/llvm-19/lib/libmlir_c_runner_utils.so.19.1";

const char *lowering_pipeline(void) { return PIPELINE; }

bool tools_present(void) {
    return system("mlir-opt-19 --version >/dev/null 2>&1") == 0 &&
           system("mlir-cpu-runner-19 --version >/dev/null 2>&1") == 0 &&
           system("test -f /usr/lib/llvm-19/lib/libmlir_c_runner_utils.so.19.1") == 0;
}

int64_t elements(const fedc_type *t, int clients) {
    return fedc_type_count(t) * (t->placement == FEDC_CLIENTS ? clients : 1);
}

void make_inputs(const fedc_program *p, const export_case *c, inputs *in) {
    in->n = fedc_program_num_inputs(p);
    in->names = calloc((size_t)in->n + 1, sizeof *in->names);
    in->data = calloc((size_t)in->n + 1, sizeof *in->data);
    for (int i = 0; i < in->n; i++) {
        fedc_type t = fedc_value_type(p, fedc_program_input(p, i));
        /* a @groups input: as many copies as clients, room for every group's (there are fewer) */
        int64_t count = t.placement == FEDC_GROUPS ? fedc_type_count(&t) * c->clients : elements(&t, c->clients);
        in->names[i] = fedc_program_input_name(p, i);
        double *d = malloc((size_t)(count ? count : 1) * sizeof *d); /* room for f64 */
        for (int64_t k = 0; k < count; k++) {
            if (t.dtype == FEDC_I32) ((int32_t *)d)[k] = (int32_t)((7 * k + 3) % (c->imod ? c->imod : 1));
            else if (t.dtype == FEDC_F64) d[k] = fedc_test_uniform(c->lo, c->hi);
            else ((float *)d)[k] = (float)fedc_test_uniform(c->lo, c->hi);
        }
        in->data[i] = d;
    }
}

void free_inputs(inputs *in) {
    for (int i = 0; i < in->n; i++) free(in->data[i]);
    free(in->data);
    free(in->names);
}

/* The number of values all of p's outputs hold. */
int64_t output_values(const fedc_program *p, int clients) {
    int64_t n = 0;
    for (int k = 0; k < fedc_program_num_outputs(p); k++) {
        fedc_type t = fedc_value_type(p, fedc_program_output_value(p, k));
        n += t.placement == FEDC_GROUPS ? fedc_type_count(&t) * clients : elements(&t, clients); /* G <= clients */
    }
    return n;
}

/* Every output's values, in order, as the executor computes them. */
int64_t run_fedc(const fedc_program *p, int clients, const inputs *in, bool reference, double *out, int64_t *bits) {
    fedc_executor *ex = NULL;
    int groups = case_groups(p), sizes[2] = {clients / 2, clients - clients / 2}; /* equal, as exported */
    fedc_exec_options o = {.clients = clients, .reference_kernels = reference, .groups = groups,
                           .group_sizes = groups ? sizes : NULL};
    int64_t n = 0;
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    for (int i = 0; ex && i < in->n; i++) CHECK_OK(fedc_executor_bind(ex, in->names[i], in->data[i]));
    if (ex) CHECK_OK(fedc_executor_run(ex));
    for (int k = 0; ex && k < fedc_program_num_outputs(p); k++) {
        const void *y = NULL;
        fedc_type t;
        CHECK_OK(fedc_executor_output(ex, fedc_program_output_name(p, k), &y, &t));
        int64_t count = t.placement == FEDC_GROUPS ? fedc_type_count(&t) * groups : elements(&t, clients);
        for (int64_t e = 0; y && e < count; e++, n++) {
            if (bits && t.dtype == FEDC_F64) memcpy(&bits[n], (const double *)y + e, 8);
            else if (bits) bits[n] = ((const int32_t *)y)[e]; /* f32's bits, or an i32 */
            else out[n] = t.dtype == FEDC_F32   ? ((const float *)y)[e]
                          : t.dtype == FEDC_F64 ? ((const double *)y)[e]
                          : t.dtype == FEDC_I32 ? ((const int32_t *)y)[e]
                                                : ((const uint8_t *)y)[e]; /* bool and u8: bytes */
        }
    }
    fedc_executor_destroy(ex);
    return n;
}

/* All a command prints, NUL-terminated (NULL if it cannot run); *rc its status. */
char *run_command(const char *cmd, int *rc) {
    FILE *pipe = popen(cmd, "r");
    if (!pipe) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len - 1, pipe)) > 0;) {
        len += got;
        if (cap - len - 1 == 0) buf = realloc(buf, cap *= 2);
    }
    *rc = pclose(pipe);
    if (buf) buf[len] = 0;
    return buf;
}

/* Runs `module` through mlir-opt-19 and mlir-cpu-runner-19 and parses the numbers
 * after each "data =" the runner prints into out (max values); -1 if the tools
 * failed, with what they said in `log`. */
/* What the runner printed of `module` (NULL if the tools failed: what they said
 * is in `log`). */
static char *run_module(const char *module, char *log, size_t logsize) {
    const char *path = fedc_test_tmp("module.mlir");
    FILE *f = fopen(path, "w");
    if (!f) return NULL;
    fputs(module, f);
    fclose(f);
    char cmd[4096], lowered[512];
    snprintf(lowered, sizeof lowered, "%s", fedc_test_tmp("lowered.mlir"));
    snprintf(cmd, sizeof cmd, "mlir-opt-19 %s %s -o %s 2>&1 && mlir-cpu-runner-19 %s -e main -entry-point-result=void "
             "-shared-libs=%s 2>&1", path, PIPELINE, lowered, lowered, RUNNER_LIBS);
    int rc = -1;
    char *text = run_command(cmd, &rc);
    snprintf(log, logsize, "%s", text ? text : "(the tools could not be started)");
    if (rc != 0) free(text);
    return rc == 0 ? text : NULL;
}

/* The numbers after each "data =" in text, as doubles (into d) or exact
 * integers (into i); how many there are. */
static int64_t parse_data(const char *text, double *d, int64_t *i, int64_t max) {
    int64_t n = 0;
    for (const char *s = strstr(text, "data ="); s; s = strstr(s, "data =")) {
        s += 6;
        const char *end = strstr(s, "Unranked");
        for (const char *q = s; *q && (!end || q < end);) {
            if (strchr("[], \n\t", *q)) { q++; continue; }
            char *next;
            double v = d ? strtod(q, &next) : 0;
            long long k = i ? strtoll(q, &next, 10) : 0;
            if (next == q) break;
            if (n < max && d) d[n] = v;
            if (n < max && i) i[n] = k;
            n++, q = next;
        }
        s = end ? end : s + strlen(s);
    }
    return n;
}

int64_t run_mlir(const char *module, double *out, int64_t max, char *log, size_t logsize) {
    char *text = run_module(module, log, logsize);
    int64_t n = text ? parse_data(text, out, NULL, max) : -1;
    free(text);
    return n;
}

int64_t run_mlir_ints(const char *module, int64_t *out, int64_t max, char *log, size_t logsize) {
    char *text = run_module(module, log, logsize);
    int64_t n = text ? parse_data(text, NULL, out, max) : -1;
    free(text);
    return n;
}

void mark_ops(const fedc_program *p, bool *used) {
    for (int v = 0; v < p->n; v++) {
        used[p->nodes[v].op] = true;
        if (fedc__op_has_body(p->nodes[v].op)) mark_ops(fedc__body(p, &p->nodes[v]), used);
    }
}

bool listed(const char *const *list, const char *op) {
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], op) == 0) return true;
    return false;
}

/* Whether `module` parses (mlir-opt-19 with the stablehlo dialect unregistered). */
bool parses(const char *module, char *log, size_t logsize) {
    const char *path = fedc_test_tmp("module.shlo.mlir");
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fputs(module, f), fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mlir-opt-19 --allow-unregistered-dialect %s -o /dev/null 2>&1", path);
    int rc = -1;
    char *said = run_command(cmd, &rc);
    snprintf(log, logsize, "%s", said ? said : "");
    free(said);
    return rc == 0;
}

