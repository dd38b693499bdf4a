/*
 * fedc — the command-line tool. It uses only the public API.
 *
 *   fedc program check FILE              verify a program in the text format
 *   fedc program print FILE              parse and print it (canonical form)
 *   fedc program grad FILE --of OUTPUT --wrt INPUT[,INPUT...]
 *                                        print the gradient program
 *   fedc program jvp FILE --wrt INPUT[,INPUT...]
 *                                        print the forward-mode program
 *   fedc program run FILE --input NAME=PATH.npy ... [--out DIR] [--clients N]
 *                    [--threads N] [--reference]
 *                                        run it on inputs read from .npy files and
 *                                        write each output to DIR/NAME.npy
 *   fedc data info PATH [--format leaf|tff|fedjax|idx|csv|text]
 *                                        describe a federated dataset
 *   fedc --version | --help
 *
 * FILE may be "-" for standard input. Errors go to stderr with the file name and,
 * for parse errors, the line and column; the exit status is 1 for bad input (a
 * program or data file that is wrong, or that does not fit the other) and 2 for
 * bad usage (the command line itself).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "fedc/fedc.h"

static const char usage[] =
    "usage: fedc <command> [options]\n"
    "\n"
    "commands:\n"
    "  train --data PATH [options]  federated training (fedc train --help lists the options)\n"
    "  eval --checkpoint FILE --data PATH [options]  evaluate a trained model\n"
    "  program check FILE      verify a program written in the text format, and list a\n"
    "                          federated program's segments (server, broadcast,\n"
    "                          clients, aggregate) in order\n"
    "  program print FILE      parse a program and print it in canonical form\n"
    "  program grad FILE --of OUTPUT --wrt INPUT[,INPUT...]\n"
    "                          print the program that computes OUTPUT and the gradients\n"
    "                          of the scalar OUTPUT with respect to each INPUT\n"
    "  program jvp FILE --wrt INPUT[,INPUT...]\n"
    "                          print the forward-mode program: it takes a tangent_INPUT\n"
    "                          per INPUT and returns tangent_OUTPUT per float output\n"
    "  program run FILE --input NAME=PATH.npy ... [--out DIR] [--clients N] [--threads N]\n"
    "                  [--reference]\n"
    "                          run the program: every input is read from a .npy file\n"
    "                          (a @clients input holds [clients, ...] of its type), and\n"
    "                          every output is written to DIR/NAME.npy (DIR defaults to\n"
    "                          ., and is created if missing). --clients sets the cohort\n"
    "                          size (default: the leading dimension of the @clients\n"
    "                          inputs), --threads the worker threads that run clients,\n"
    "                          --reference uses the plain-C reference kernels\n"
    "  data info PATH [--format leaf|tff|fedjax|idx|csv|text]\n"
    "                          describe a federated dataset: its format (detected\n"
    "                          unless given), clients, examples, examples per client\n"
    "                          (with a histogram) and the first client's features\n"
    "\n"
    "options:\n"
    "  --help                  show this help\n"
    "  --version               show the version\n"
    "\n"
    "FILE may be - for standard input. The text format is described in docs/text-format.md.\n";

/* Reads a whole file (or stdin for "-") into a NUL-terminated string. */
static char *read_file(const char *path) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fedc: cannot open %s\n", path);
        return NULL;
    }
    size_t size = 0, cap = 1 << 16;
    char *text = malloc(cap);
    while (text) {
        size += fread(text + size, 1, cap - size - 1, f);
        if (size < cap - 1) break;
        char *bigger = realloc(text, cap *= 2);
        if (!bigger) free(text);
        text = bigger;
    }
    if (f != stdin) fclose(f);
    if (!text) fprintf(stderr, "fedc: out of memory reading %s\n", path);
    else text[size] = '\0';
    return text;
}

static fedc_program *load(const char *path) {
    char *text = read_file(path);
    if (!text) return NULL;
    fedc_program *p = NULL;
    fedc_status st = fedc_program_parse(text, &p);
    free(text);
    if (st) {
        fprintf(stderr, "fedc: %s: %s\n", path, fedc_errmsg());
        return NULL;
    }
    return p;
}

/* Prints a federated program's phases, e.g. "broadcast %2, clients %3-%5, aggregate %6". */
static void print_segments(const fedc_program *p) {
    fedc_segment seg[256];
    int n = fedc_program_segments(p, seg, 256);
    bool federated = false;
    for (int i = 0; i < n && i < 256; i++) federated |= seg[i].kind != FEDC_SEGMENT_SERVER;
    if (!federated) return;
    printf("segments:");
    for (int i = 0; i < n && i < 256; i++) {
        printf("%s %s %%%d", i ? "," : "", fedc_segment_name(seg[i].kind), seg[i].first);
        if (seg[i].last != seg[i].first) printf("-%%%d", seg[i].last);
    }
    printf("\n");
}

static int cmd_check(const char *path) {
    fedc_program *p = load(path);
    if (!p) return 1;
    printf("%s: ok (%d operations, %d inputs, %d outputs)\n", path, fedc_program_size(p), fedc_program_num_inputs(p),
           fedc_program_num_outputs(p));
    print_segments(p);
    fedc_program_destroy(p);
    return 0;
}

static int cmd_print(const char *path) {
    fedc_program *p = load(path);
    if (!p) return 1;
    fedc_status st = fedc_program_print(p, stdout);
    if (st) fprintf(stderr, "fedc: %s\n", fedc_errmsg());
    fedc_program_destroy(p);
    return st ? 1 : 0;
}

/* Splits "a,b,c" in place into at most `max` names. */
static int split_names(char *list, const char **names, int max) {
    int n = 0;
    for (char *tok = strtok(list, ","); tok && n < max; tok = strtok(NULL, ",")) names[n++] = tok;
    return n;
}

/* grad (reverse mode, --of OUTPUT) and jvp (forward mode) print a derived program. */
static int cmd_derive(int argc, char **argv, bool forward) {
    const char *cmd = forward ? "jvp" : "grad", *path = NULL, *of = NULL;
    char *wrt_list = NULL;
    for (int i = 0; i < argc; i++) {
        if (!forward && strcmp(argv[i], "--of") == 0 && i + 1 < argc) of = argv[++i];
        else if (strcmp(argv[i], "--wrt") == 0 && i + 1 < argc) wrt_list = argv[++i];
        else if (!path && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) path = argv[i];
        else {
            fprintf(stderr, "fedc program %s: unexpected argument '%s'\n%s", cmd, argv[i], usage);
            return 2;
        }
    }
    if (!path || (!forward && !of) || !wrt_list) {
        fprintf(stderr, "fedc program %s: needs FILE, %s--wrt INPUT[,INPUT...]\n", cmd, forward ? "" : "--of OUTPUT and ");
        return 2;
    }
    const char *wrt[64];
    int nwrt = split_names(wrt_list, wrt, 64);
    fedc_program *p = load(path);
    if (!p) return 1;
    fedc_program *d = NULL;
    fedc_status st = forward ? fedc_jvp(p, wrt, nwrt, &d) : fedc_grad(p, of, wrt, nwrt, &d);
    if (!st) st = fedc_program_print(d, stdout);
    if (st) fprintf(stderr, "fedc: %s: %s\n", path, fedc_errmsg());
    fedc_program_destroy(d);
    fedc_program_destroy(p);
    return st ? 1 : 0;
}

/* ------------------------------------------------------------ program run -- */

/* One --input NAME=PATH and the array read from it. */
typedef struct run_input {
    const char *name, *path;
    fedc_type type; /* the file's */
    void *data;     /* fedc_malloc'd by fedc_npy_read */
} run_input;

typedef struct run_args {
    const char *file, *out_dir;
    run_input *inputs;
    int ninputs;
    int clients; /* 0: the leading dimension of the first @clients input */
    int threads;
    bool reference;
} run_args;

/* More clients or threads than this is surely a typo. */
#define MAX_COUNT (1 << 20)

static bool parse_count(const char *flag, const char *text, int min, int *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > MAX_COUNT) {
        fprintf(stderr, "fedc program run: %s needs an integer from %d to %d, not '%s'\n", flag, min, MAX_COUNT,
                text);
        return false;
    }
    *out = (int)v;
    return true;
}

/* Splits "NAME=PATH" in place at its first '='. */
static bool add_input(run_args *a, char *spec) {
    char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1]) {
        fprintf(stderr, "fedc program run: --input needs NAME=PATH.npy, not '%s'\n", spec);
        return false;
    }
    *eq = '\0';
    for (int i = 0; i < a->ninputs; i++)
        if (strcmp(a->inputs[i].name, spec) == 0) {
            fprintf(stderr, "fedc program run: input \"%s\" is given twice\n", spec);
            return false;
        }
    a->inputs[a->ninputs++] = (run_input){.name = spec, .path = eq + 1};
    return true;
}

static bool set_out_dir(run_args *a, const char *dir) {
    if (!*dir) fprintf(stderr, "fedc program run: --out needs a directory\n");
    a->out_dir = dir;
    return *dir != '\0';
}

/* Takes the option at argv[*i] (and its value); false on a usage error. */
static bool run_option(run_args *a, int argc, char **argv, int *i) {
    const char *arg = argv[*i];
    static const char *const with_value[] = {"--input", "--out", "--clients", "--threads"};
    for (int k = 0; k < 4; k++)
        if (strcmp(arg, with_value[k]) == 0 && *i + 1 >= argc) {
            fprintf(stderr, "fedc program run: %s needs a value\n", arg);
            return false;
        }
    if (strcmp(arg, "--reference") == 0) {
        a->reference = true;
        return true;
    }
    if (strcmp(arg, "--input") == 0) return add_input(a, argv[++*i]);
    if (strcmp(arg, "--out") == 0) return set_out_dir(a, argv[++*i]);
    if (strcmp(arg, "--clients") == 0) return parse_count(arg, argv[++*i], 1, &a->clients);
    if (strcmp(arg, "--threads") == 0) return parse_count(arg, argv[++*i], 0, &a->threads);
    if (!a->file && (arg[0] != '-' || strcmp(arg, "-") == 0)) {
        a->file = arg;
        return true;
    }
    fprintf(stderr, "fedc program run: unexpected argument '%s'\n%s", arg, usage);
    return false;
}

/* 0, or the exit status of a bad command line. */
static int parse_run_args(int argc, char **argv, run_args *a) {
    *a = (run_args){.out_dir = "."};
    a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
    if (!a->inputs) {
        fprintf(stderr, "fedc: out of memory\n");
        return 1;
    }
    for (int i = 0; i < argc; i++)
        if (!run_option(a, argc, argv, &i)) return 2;
    if (!a->file) {
        fprintf(stderr, "fedc program run: needs FILE\n%s", usage);
        return 2;
    }
    return 0;
}

static run_input *given(const run_args *a, const char *name) {
    for (int i = 0; i < a->ninputs; i++)
        if (strcmp(a->inputs[i].name, name) == 0) return &a->inputs[i];
    return NULL;
}

static fedc_type input_type(const fedc_program *p, const char *name) {
    return fedc_value_type(p, fedc_program_find_input(p, name));
}

/* Every --input names an input of the program, and every input is given. */
static bool inputs_match(const fedc_program *p, const run_args *a) {
    bool ok = true;
    for (int i = 0; i < a->ninputs; i++) {
        if (fedc_program_find_input(p, a->inputs[i].name) != FEDC_NONE) continue;
        fprintf(stderr, "fedc: %s: the program has no input \"%s\"; its inputs are", a->file, a->inputs[i].name);
        for (int k = 0; k < fedc_program_num_inputs(p); k++)
            fprintf(stderr, "%s \"%s\"", k ? "," : "", fedc_program_input_name(p, k));
        fputc('\n', stderr);
        ok = false;
    }
    for (int i = 0; i < fedc_program_num_inputs(p); i++) {
        const char *name = fedc_program_input_name(p, i);
        if (given(a, name)) continue;
        char t[64];
        fedc_type ty = input_type(p, name);
        fprintf(stderr, "fedc: %s: input \"%s\" (%s) is missing: give it with --input %s=PATH.npy\n", a->file,
                name, fedc_type_str(&ty, t, sizeof t), name);
        ok = false;
    }
    return ok;
}

/* The shape of the .npy file of a value of type `t`: the type's own, with the
 * clients in front for a @clients value. False if that needs too many dims. */
static bool file_type(const fedc_type *t, int clients, fedc_type *out) {
    *out = fedc_type_make(t->dtype, 0, NULL);
    if (t->placement == FEDC_CLIENTS) out->dims[out->rank++] = clients;
    if (out->rank + t->rank > FEDC_MAX_RANK) return false;
    for (int i = 0; i < t->rank; i++) out->dims[out->rank++] = t->dims[i];
    return true;
}

/* Without --clients, the cohort is as big as the first @clients input says. */
static void infer_clients(run_args *a, const fedc_type *want, const run_input *in) {
    if (a->clients || want->placement != FEDC_CLIENTS || in->type.rank == 0) return;
    if (in->type.dims[0] >= 1 && in->type.dims[0] <= MAX_COUNT) a->clients = (int)in->type.dims[0];
}

/* The file's dtype and shape are what the program's input needs. */
static bool check_input(const run_args *a, const fedc_type *want, const run_input *in) {
    fedc_type shape;
    char w[64], g[64], f[64];
    bool fits = file_type(want, a->clients, &shape);
    bool sized = want->placement != FEDC_CLIENTS || a->clients > 0; /* else the leading dim is unknown */
    if (fits && sized && shape.dtype == in->type.dtype && fedc_type_same_shape(&shape, &in->type)) return true;
    fedc_type_str(&in->type, g, sizeof g);
    fedc_type_str(want, w, sizeof w);
    if (want->placement != FEDC_CLIENTS)
        fprintf(stderr, "fedc: input \"%s\" from %s: expected %s, got %s\n", in->name, in->path, w, g);
    else if (fits && sized)
        fprintf(stderr, "fedc: input \"%s\" from %s: expected %s (%d clients of %s), got %s\n", in->name, in->path,
                fedc_type_str(&shape, f, sizeof f), a->clients, w, g);
    else
        fprintf(stderr, "fedc: input \"%s\" from %s: a %s input needs an array of shape [clients, ...its dims], "
                "got %s\n", in->name, in->path, w, g);
    return false;
}

/* Reads every input, in the program's order, and checks it. */
static bool load_inputs(const fedc_program *p, run_args *a) {
    for (int i = 0; i < fedc_program_num_inputs(p); i++) {
        const char *name = fedc_program_input_name(p, i);
        run_input *in = given(a, name);
        fedc_type want = input_type(p, name);
        if (fedc_npy_read(in->path, &in->type, &in->data)) {
            fprintf(stderr, "fedc: input \"%s\": %s\n", name, fedc_errmsg());
            return false;
        }
        infer_clients(a, &want, in);
        if (!check_input(a, &want, in)) return false;
    }
    return true;
}

/* Creates the executor, binds the inputs and runs the program once. */
static fedc_executor *run_executor(const fedc_program *p, const run_args *a) {
    fedc_exec_options o = {.reference_kernels = a->reference, .clients = a->clients, .threads = a->threads};
    fedc_executor *ex = NULL;
    fedc_status st = fedc_executor_create(&ex, p, &o);
    for (int i = 0; !st && i < a->ninputs; i++) st = fedc_executor_bind(ex, a->inputs[i].name, a->inputs[i].data);
    if (!st) st = fedc_executor_run(ex);
    if (!st) return ex;
    fprintf(stderr, "fedc: %s: %s\n", a->file, fedc_errmsg());
    fedc_executor_destroy(ex);
    return NULL;
}

/* Output names become file names, so they must be one plain path component. */
static bool outputs_are_file_names(const fedc_program *p, const run_args *a) {
    for (int i = 0; i < fedc_program_num_outputs(p); i++) {
        const char *name = fedc_program_output_name(p, i);
        if (*name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..")) continue;
        fprintf(stderr, "fedc: %s: output \"%s\" cannot be written: its name is not a file name\n", a->file, name);
        return false;
    }
    return true;
}

/* mkdir -p DIR. */
static bool make_dirs(const char *dir) {
    char path[4096];
    if (strlen(dir) >= sizeof path) {
        errno = ENAMETOOLONG;
        return false;
    }
    strcpy(path, dir);
    for (char *s = path + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) return false;
        *s = '/';
    }
    struct stat st;
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return false;
    if (stat(path, &st) != 0) return false;
    if (!S_ISDIR(st.st_mode)) errno = ENOTDIR;
    return S_ISDIR(st.st_mode);
}

/* Element i, floats in the fewest digits that read back to the same bits. */
static void print_element(fedc_dtype dt, const void *data, int64_t i) {
    char b[40];
    int prec = dt == FEDC_F32 ? 6 : 15;
    switch (dt) {
    case FEDC_F32:
        do snprintf(b, sizeof b, "%.*g", prec, ((const float *)data)[i]);
        while (strtof(b, NULL) != ((const float *)data)[i] && ++prec <= 9);
        break;
    case FEDC_F64:
        do snprintf(b, sizeof b, "%.*g", prec, ((const double *)data)[i]);
        while (strtod(b, NULL) != ((const double *)data)[i] && ++prec <= 17);
        break;
    case FEDC_I32: snprintf(b, sizeof b, "%d", (int)((const int32_t *)data)[i]); break;
    default: snprintf(b, sizeof b, "%u", (unsigned)((const uint8_t *)data)[i]); break;
    }
    fputs(b, stdout);
}

/* " = v" for a scalar output, " = [v, ...]" for a scalar per client. */
static void print_scalars(const fedc_type *shape, const void *data) {
    int64_t n = fedc_type_count(shape);
    fputs(shape->rank ? " = [" : " = ", stdout);
    for (int64_t i = 0; i < n && i < 8; i++) {
        if (i) fputs(", ", stdout);
        print_element(shape->dtype, data, i);
    }
    if (shape->rank) fputs(n > 8 ? ", ...]" : "]", stdout);
}

/* Writes output i to DIR/NAME.npy and says so. */
static bool write_output(const fedc_executor *ex, const fedc_program *p, int i, const run_args *a) {
    const char *name = fedc_program_output_name(p, i);
    const void *data;
    fedc_type t, shape;
    char path[4096], ts[64];
    size_t len = strlen(a->out_dir);
    const char *sep = len && a->out_dir[len - 1] == '/' ? "" : "/";
    if (fedc_executor_output(ex, name, &data, &t)) {
        fprintf(stderr, "fedc: %s: %s\n", a->file, fedc_errmsg());
        return false;
    }
    if (!file_type(&t, a->clients, &shape) || snprintf(path, sizeof path, "%s%s%s.npy", a->out_dir, sep, name) >=
                                                     (int)sizeof path) {
        fprintf(stderr, "fedc: output \"%s\" (%s) cannot be written as .npy\n", name, fedc_type_str(&t, ts, sizeof ts));
        return false;
    }
    if (fedc_npy_write(path, &shape, data)) {
        fprintf(stderr, "fedc: output \"%s\": %s\n", name, fedc_errmsg());
        return false;
    }
    printf("%s: %s", name, fedc_type_str(&t, ts, sizeof ts));
    if (t.rank == 0) print_scalars(&shape, data);
    printf(" -> %s\n", path);
    return true;
}

static bool write_outputs(const fedc_executor *ex, const fedc_program *p, const run_args *a) {
    if (!make_dirs(a->out_dir)) {
        fprintf(stderr, "fedc: cannot create directory %s: %s\n", a->out_dir, strerror(errno));
        return false;
    }
    for (int i = 0; i < fedc_program_num_outputs(p); i++)
        if (!write_output(ex, p, i, a)) return false;
    return true;
}

static int run_program(const fedc_program *p, run_args *a) {
    if (!inputs_match(p, a) || !outputs_are_file_names(p, a) || !load_inputs(p, a)) return 1;
    fedc_executor *ex = run_executor(p, a);
    if (!ex) return 1;
    bool ok = write_outputs(ex, p, a);
    fedc_executor_destroy(ex);
    return ok ? 0 : 1;
}

static int cmd_run(int argc, char **argv) {
    run_args a;
    int rc = parse_run_args(argc, argv, &a);
    if (!rc) {
        fedc_program *p = load(a.file);
        rc = p ? run_program(p, &a) : 1;
        fedc_program_destroy(p);
    }
    for (int i = 0; i < a.ninputs; i++) fedc_free(a.inputs[i].data);
    free(a.inputs);
    return rc;
}

static int cmd_program(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "fedc program: needs a subcommand and a FILE\n%s", usage);
        return 2;
    }
    if (strcmp(argv[0], "check") == 0 && argc == 2) return cmd_check(argv[1]);
    if (strcmp(argv[0], "print") == 0 && argc == 2) return cmd_print(argv[1]);
    if (strcmp(argv[0], "grad") == 0) return cmd_derive(argc - 1, argv + 1, false);
    if (strcmp(argv[0], "jvp") == 0) return cmd_derive(argc - 1, argv + 1, true);
    if (strcmp(argv[0], "run") == 0) return cmd_run(argc - 1, argv + 1);
    fprintf(stderr, "fedc program: unknown subcommand or arguments '%s'\n%s", argv[0], usage);
    return 2;
}

/* OpenBLAS starts its own threads when it is loaded, before main, one per core
 * unless OPENBLAS_NUM_THREADS says otherwise, and each takes a 128 MB buffer at
 * once. fedc never uses them (it calls BLAS from its own threads, one BLAS thread
 * each), and under a memory limit one of them retries its allocation forever and
 * the process cannot exit. So fedc runs itself again with OPENBLAS_NUM_THREADS=1
 * when no thread count is set, before anything else; if that fails it goes on. */
static void without_blas_threads(char **argv) {
    if (getenv("OPENBLAS_NUM_THREADS")) return; /* it wins over GOTO_ and OMP_NUM_THREADS */
    if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0) return;
    execv("/proc/self/exe", argv);
}

int main(int argc, char **argv) {
    without_blas_threads(argv);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("fedc %s\n", FEDC_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "program") == 0) return cmd_program(argc - 2, argv + 2);
    if (strcmp(argv[1], "data") == 0) return fedc_cli_data(argc - 2, argv + 2);
    if (strcmp(argv[1], "train") == 0) return fedc_cli_train(argc - 2, argv + 2);
    if (strcmp(argv[1], "eval") == 0) return fedc_cli_eval(argc - 2, argv + 2);
    fprintf(stderr, "fedc: unknown command '%s'\n%s", argv[1], usage);
    return 2;
}
