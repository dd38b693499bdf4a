/*
 * fedc program — programs in the text format (docs/text-format.md):
 *
 *   fedc program check FILE      verify it, and list a federated program's segments
 *   fedc program print FILE      print it in canonical form
 *   fedc program grad FILE --of OUTPUT --wrt INPUT[,INPUT...]   its gradient program
 *   fedc program jvp FILE --wrt INPUT[,INPUT...]                its forward-mode program
 *   fedc program export FILE --to mlir|stablehlo [-o OUT] [--clients N] [--groups G] [--shard ...]
 *                                [--entry-main --input ...]
 *                                write it as an MLIR module, or as StableHLO (docs/export.md)
 *   fedc program run FILE --input NAME=PATH.npy ... [--out DIR] [--clients N]
 *                    [--threads N] [--device NAME | --reference]
 *                                run it on .npy inputs, write each output to DIR/NAME.npy
 *   fedc program split FILE [--out DIR]
 *                                cut it into its deployment form (cli/program_split.c)
 *   fedc program import MODEL.onnx --out FILE [--params FILE.safetensors] [--batch N]
 *                                an ONNX model as a program (cli/program_import.c)
 *
 * FILE may be "-" for standard input. Errors go to stderr with the file name and,
 * for parse errors, the line and column; the exit status is 1 for bad input (a
 * program or data file that is wrong, or that does not fit the other) and 2 for
 * bad usage (the command line itself).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"

/* A program's text: far more than any real one, far less than the memory. */
#define MAX_PROGRAM_BYTES ((size_t)256 << 20)
/* More clients than this is surely a typo. */
#define MAX_CLIENTS (1 << 20)

static const char check_usage[] =
    "usage: fedc program check FILE\n"
    "  verify a program written in the text format, and list a federated program's\n"
    "  segments (server, broadcast, clients, aggregate) in order\n";
static const char print_usage[] =
    "usage: fedc program print FILE\n"
    "  parse a program and print it in canonical form\n";
static const char grad_usage[] =
    "usage: fedc program grad FILE --of OUTPUT --wrt INPUT[,INPUT...]\n"
    "  print the program that computes OUTPUT and the gradients of the scalar OUTPUT\n"
    "  with respect to each INPUT (any number of them; --wrt may be repeated)\n";
static const char jvp_usage[] =
    "usage: fedc program jvp FILE --wrt INPUT[,INPUT...]\n"
    "  print the forward-mode program: it takes a tangent_INPUT per INPUT and returns\n"
    "  tangent_OUTPUT per float output (any number of INPUTs; --wrt may be repeated)\n";
static const char run_usage[] =
    "usage: fedc program run FILE --input NAME=PATH.npy ... [--out DIR] [--clients N]\n"
    "                        [--threads N] [--device NAME | --reference]\n"
    "  run the program: every input is read from a .npy file (a @clients input holds\n"
    "  [clients, ...] of its type), and every output is written to DIR/NAME.npy\n"
    "  --out DIR      where the outputs go (default ., created if missing)\n"
    "  --clients N    the cohort size, 1 to 1048576 (default: the leading dimension of\n"
    "                 the @clients inputs)\n"
    "  --threads N    worker threads that run the clients, 0 to 256 (default 0: the\n"
    "                 calling thread)\n"
    "  --device NAME  the compute device that runs the kernels: cpu (the fast\n"
    "                 kernels, the default) or cpu-reference (the plain-C reference\n"
    "                 kernels, the oracle)\n"
    "  --reference    the same as --device cpu-reference\n";
static const char export_usage[] =
    "usage: fedc program export FILE --to mlir|stablehlo [-o OUT] [--clients N] [--groups G]\n"
    "                           [--shard clients=D | --shard groups=DG,clients=D]\n"
    "                           [--entry-main --input NAME=PATH.npy ...]\n"
    "  write the program as an MLIR module (func, arith, math, tensor, linalg), which\n"
    "  mlir-opt-19 verifies and mlir-cpu-runner-19 runs (docs/export.md)\n"
    "  --to mlir       upstream MLIR that LLVM 19's tools verify and run\n"
    "  --to stablehlo  StableHLO ops in generic form, for XLA or IREE (with --shard:\n"
    "                  mhlo.sharding on the clients axis); checked here only by parsing\n"
    "  -o OUT          where the module goes (default: standard output)\n"
    "  --clients N     the cohort size, the length of the @clients axis, 1 to 1048576\n"
    "                  (needed by a federated program unless --input gives it)\n"
    "  --groups G      a program with a groups level (@groups): G groups of N / G\n"
    "                  clients each (--to stablehlo; docs/federated.md, \"Hierarchies\")\n"
    "  --shard clients=D  split the clients axis over a mesh of D devices (D divides N):\n"
    "                  mlir-opt-19's sharding-propagation and mesh-spmdization passes then\n"
    "                  turn the aggregations into mesh.all_reduce (docs/export.md)\n"
    "  --shard groups=DG,clients=D  (with --groups) a DG x D mesh of\n"
    "                  devices: the groups axis over its DG rows, the clients over all\n"
    "                  DG x D devices, a row holding its groups' clients; --to mlir\n"
    "                  writes one device's function with its own all-reduces\n"
    "                  (D divides each group's clients)\n"
    "  --entry-main    add @main, which runs the program on the --input arrays (as\n"
    "                  constants) and prints every output\n";
static const char file_note[] =
    "FILE may be - for standard input; the text format is docs/text-format.md.\n"
    "Exit status: 0 done, 1 the program or an input is wrong, 2 bad usage.\n";

fedc_program *cli_program_load(const char *cmd, const char *path) {
    char *text = cli_read_text(cmd, path, MAX_PROGRAM_BYTES);
    if (!text) return NULL;
    fedc_program *p = NULL;
    fedc_status st = fedc_program_parse(text, &p);
    free(text);
    if (st) {
        fprintf(stderr, "%s: %s: %s\n", cmd, path, fedc_errmsg());
        return NULL;
    }
    return p;
}

/* FILE is a path or - (stdin); anything else that starts with - is an option. */
static bool is_file_arg(const char *arg) { return arg[0] && (arg[0] != '-' || !strcmp(arg, "-")); }

/* The one FILE of check and print; NULL (having said why) otherwise. */
static const char *only_file(const char *cmd, int argc, char **argv) {
    if (argc == 1 && is_file_arg(argv[0])) return argv[0];
    if (argc == 0) fprintf(stderr, "%s: needs FILE (see %s --help)\n", cmd, cmd);
    else fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", cmd, argv[argc > 1 && is_file_arg(argv[0])],
                 cmd);
    return NULL;
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

static int cmd_check(int argc, char **argv) {
    const char *cmd = "fedc program check", *path = only_file(cmd, argc, argv);
    if (!path) return CLI_USAGE;
    fedc_program *p = cli_program_load(cmd, path);
    if (!p) return CLI_FAILED;
    printf("%s: ok (%d operations, %d inputs, %d outputs)\n", path, fedc_program_size(p), fedc_program_num_inputs(p),
           fedc_program_num_outputs(p));
    print_segments(p);
    fedc_program_destroy(p);
    return CLI_OK;
}

static int cmd_print(int argc, char **argv) {
    const char *cmd = "fedc program print", *path = only_file(cmd, argc, argv);
    if (!path) return CLI_USAGE;
    fedc_program *p = cli_program_load(cmd, path);
    if (!p) return CLI_FAILED;
    fedc_status st = fedc_program_print(p, stdout);
    if (st) fprintf(stderr, "%s: %s\n", cmd, fedc_errmsg());
    fedc_program_destroy(p);
    return st ? CLI_FAILED : CLI_OK;
}

/* ---------------------------------------------------------- grad and jvp -- */

/* The inputs of --wrt, from every --wrt given. */
typedef struct name_list {
    const char **names;
    int count, cap;
} name_list;

/* Adds the names of "a,b,c" (split in place): each one non-empty, none twice. */
static bool add_names(const char *cmd, char *list, name_list *w) {
    size_t len = strlen(list);
    if (!len || list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,")) {
        fprintf(stderr, "%s: --wrt needs input names separated by commas, not '%s'\n", cmd, list);
        return false;
    }
    for (char *name = list, *next; name; name = next) {
        if ((next = strchr(name, ','))) *next++ = '\0';
        for (int i = 0; i < w->count; i++)
            if (!strcmp(w->names[i], name)) {
                fprintf(stderr, "%s: --wrt names input \"%s\" twice\n", cmd, name);
                return false;
            }
        if (w->count == w->cap) {
            const char **bigger = realloc(w->names, (size_t)(w->cap = 2 * w->cap + 8) * sizeof *bigger);
            if (!bigger) {
                fprintf(stderr, "%s: out of memory\n", cmd);
                return false;
            }
            w->names = bigger;
        }
        w->names[w->count++] = name;
    }
    return true;
}

/* FILE, --of and the --wrt names; 0, or the exit status of a bad command line. */
static int derive_args(const char *cmd, bool forward, int argc, char **argv, const char **path, const char **of,
                       name_list *wrt) {
    for (int i = 0; i < argc; i++) {
        bool value = (!strcmp(argv[i], "--wrt") || (!forward && !strcmp(argv[i], "--of")));
        if (value && i + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", cmd, argv[i]);
            return CLI_USAGE;
        }
        if (value && !strcmp(argv[i], "--of")) {
            if (!cli_text(cmd, "--of", *of = argv[++i])) return CLI_USAGE;
        } else if (value) {
            if (!add_names(cmd, argv[++i], wrt)) return CLI_USAGE;
        } else if (!*path && is_file_arg(argv[i])) {
            *path = argv[i];
        } else {
            fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", cmd, argv[i], cmd);
            return CLI_USAGE;
        }
    }
    if (*path && (forward || *of) && wrt->count) return 0;
    fprintf(stderr, "%s: needs FILE, %s--wrt INPUT[,INPUT...] (see %s --help)\n", cmd,
            forward ? "" : "--of OUTPUT and ", cmd);
    return CLI_USAGE;
}

/* grad (reverse mode, --of OUTPUT) and jvp (forward mode) print a derived program. */
static int derive(int argc, char **argv, bool forward) {
    const char *cmd = forward ? "fedc program jvp" : "fedc program grad", *path = NULL, *of = NULL;
    name_list wrt = {0};
    int rc = derive_args(cmd, forward, argc, argv, &path, &of, &wrt);
    fedc_program *p = rc ? NULL : cli_program_load(cmd, path), *d = NULL;
    if (!rc && !p) rc = CLI_FAILED;
    if (!rc) {
        fedc_status st = forward ? fedc_jvp(p, wrt.names, wrt.count, &d) : fedc_grad(p, of, wrt.names, wrt.count, &d);
        if (!st) st = fedc_program_print(d, stdout);
        if (st) fprintf(stderr, "%s: %s: %s\n", cmd, path, fedc_errmsg());
        rc = st ? CLI_FAILED : CLI_OK;
    }
    fedc_program_destroy(d);
    fedc_program_destroy(p);
    free(wrt.names);
    return rc;
}

static int cmd_grad(int argc, char **argv) { return derive(argc, argv, false); }
static int cmd_jvp(int argc, char **argv) { return derive(argc, argv, true); }

/* ------------------------------------------------------------ program run -- */

#define RUN "fedc program run"

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
    int groups;  /* export's --groups: the leading dimension of a @groups input; 0: none */
    int threads;
    const char *device; /* NULL: the default */
} run_args;

static bool parse_count(const char *flag, const char *text, int min, int max, int *out) {
    uint64_t v;
    if (!cli_uint(RUN, flag, text, (uint64_t)min, (uint64_t)max, &v)) return false;
    *out = (int)v;
    return true;
}

/* --device NAME: one of the library's devices (fedc_device_name). */
static bool set_device(run_args *a, const char *name) {
    for (int i = 0; fedc_device_name(i); i++)
        if (strcmp(fedc_device_name(i), name) == 0) {
            a->device = name;
            return true;
        }
    fprintf(stderr, RUN ": --device: no device '%s'; the devices are", name);
    for (int i = 0; fedc_device_name(i); i++) fprintf(stderr, "%s %s", i ? "," : "", fedc_device_name(i));
    fputc('\n', stderr);
    return false;
}

/* Splits "NAME=PATH" in place at its first '='. */
static bool add_input(run_args *a, char *spec) {
    char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1]) {
        fprintf(stderr, RUN ": --input needs NAME=PATH.npy, not '%s'\n", spec);
        return false;
    }
    *eq = '\0';
    for (int i = 0; i < a->ninputs; i++)
        if (strcmp(a->inputs[i].name, spec) == 0) {
            fprintf(stderr, RUN ": input \"%s\" is given twice\n", spec);
            return false;
        }
    a->inputs[a->ninputs++] = (run_input){.name = spec, .path = eq + 1};
    return true;
}

static bool set_out_dir(run_args *a, const char *dir) {
    a->out_dir = dir;
    return cli_text(RUN, "--out", dir);
}

/* arg is one of the flags that take a value, and none follows (`last`): says so. */
static bool lacks_value(const char *cmd, const char *const *flags, const char *arg, bool last) {
    for (int k = 0; last && flags[k]; k++)
        if (strcmp(arg, flags[k]) == 0) {
            fprintf(stderr, "%s: %s needs a value\n", cmd, arg);
            return true;
        }
    return false;
}

/* Takes the option at argv[*i] (and its value); false on a usage error. */
static bool run_option(run_args *a, int argc, char **argv, int *i) {
    const char *arg = argv[*i];
    static const char *const with_value[] = {"--input", "--out", "--clients", "--threads", "--device", NULL};
    if (lacks_value(RUN, with_value, arg, *i + 1 >= argc)) return false;
    if (strcmp(arg, "--reference") == 0) return set_device(a, "cpu-reference");
    if (strcmp(arg, "--device") == 0) return set_device(a, argv[++*i]);
    if (strcmp(arg, "--input") == 0) return add_input(a, argv[++*i]);
    if (strcmp(arg, "--out") == 0) return set_out_dir(a, argv[++*i]);
    if (strcmp(arg, "--clients") == 0) return parse_count(arg, argv[++*i], 1, MAX_CLIENTS, &a->clients);
    if (strcmp(arg, "--threads") == 0) return parse_count(arg, argv[++*i], 0, CLI_MAX_THREADS, &a->threads);
    if (!a->file && is_file_arg(arg)) {
        a->file = arg;
        return true;
    }
    fprintf(stderr, RUN ": unexpected argument '%s' (see fedc program run --help)\n", arg);
    return false;
}

/* 0, or the exit status of a bad command line. */
static int parse_run_args(int argc, char **argv, run_args *a) {
    *a = (run_args){.out_dir = "."};
    a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
    if (!a->inputs) {
        fprintf(stderr, RUN ": out of memory\n");
        return CLI_FAILED;
    }
    for (int i = 0; i < argc; i++)
        if (!run_option(a, argc, argv, &i)) return CLI_USAGE;
    if (!a->file) {
        fprintf(stderr, RUN ": needs FILE (see fedc program run --help)\n");
        return CLI_USAGE;
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
        fprintf(stderr, RUN ": %s: the program has no input \"%s\"; its inputs are", a->file, a->inputs[i].name);
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
        fprintf(stderr, RUN ": %s: input \"%s\" (%s) is missing: give it with --input %s=PATH.npy\n", a->file,
                name, fedc_type_str(&ty, t, sizeof t), name);
        ok = false;
    }
    return ok;
}

/* The shape of the .npy file of a value of type `t`: the type's own, with the
 * clients in front for a @clients value (the groups for a @groups one). False
 * if that needs too many dims. */
static bool file_type(const fedc_type *t, const run_args *a, fedc_type *out) {
    *out = fedc_type_make(t->dtype, 0, NULL);
    if (t->placement == FEDC_CLIENTS) out->dims[out->rank++] = a->clients;
    if (t->placement == FEDC_GROUPS) out->dims[out->rank++] = a->groups;
    if (out->rank + t->rank > FEDC_MAX_RANK) return false;
    for (int i = 0; i < t->rank; i++) out->dims[out->rank++] = t->dims[i];
    return true;
}

/* Without --clients, the cohort is as big as the first @clients input says. */
static void infer_clients(run_args *a, const fedc_type *want, const run_input *in) {
    if (a->clients || want->placement != FEDC_CLIENTS || in->type.rank == 0) return;
    if (in->type.dims[0] >= 1 && in->type.dims[0] <= MAX_CLIENTS) a->clients = (int)in->type.dims[0];
}

/* The file's dtype and shape are what the program's input needs. */
static bool check_input(const run_args *a, const fedc_type *want, const run_input *in) {
    fedc_type shape;
    char w[64], g[64], f[64];
    bool fits = file_type(want, a, &shape);
    bool sized = (want->placement != FEDC_CLIENTS || a->clients > 0) && /* else the leading dim is unknown */
                 (want->placement != FEDC_GROUPS || a->groups > 0);
    if (fits && sized && shape.dtype == in->type.dtype && fedc_type_same_shape(&shape, &in->type)) return true;
    fedc_type_str(&in->type, g, sizeof g);
    fedc_type_str(want, w, sizeof w);
    if (want->placement != FEDC_CLIENTS)
        fprintf(stderr, RUN ": input \"%s\" from %s: expected %s, got %s\n", in->name, in->path, w, g);
    else if (fits && sized)
        fprintf(stderr, RUN ": input \"%s\" from %s: expected %s (%d clients of %s), got %s\n", in->name, in->path,
                fedc_type_str(&shape, f, sizeof f), a->clients, w, g);
    else
        fprintf(stderr, RUN ": input \"%s\" from %s: a %s input needs an array of shape [clients, ...its dims], "
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
            fprintf(stderr, RUN ": input \"%s\": %s\n", name, fedc_errmsg());
            return false;
        }
        infer_clients(a, &want, in);
        if (!check_input(a, &want, in)) return false;
    }
    return true;
}

/* Creates the executor, binds the inputs and runs the program once. */
static fedc_executor *run_executor(const fedc_program *p, const run_args *a) {
    fedc_exec_options o = {.device = a->device, .clients = a->clients, .threads = a->threads};
    fedc_executor *ex = NULL;
    fedc_status st = fedc_executor_create(&ex, p, &o);
    for (int i = 0; !st && i < a->ninputs; i++) st = fedc_executor_bind(ex, a->inputs[i].name, a->inputs[i].data);
    if (!st) st = fedc_executor_run(ex);
    if (!st) return ex;
    fprintf(stderr, RUN ": %s: %s\n", a->file, fedc_errmsg());
    fedc_executor_destroy(ex);
    return NULL;
}

/* Output names become file names, so they must be one plain path component. */
static bool outputs_are_file_names(const fedc_program *p, const run_args *a) {
    for (int i = 0; i < fedc_program_num_outputs(p); i++) {
        const char *name = fedc_program_output_name(p, i);
        if (*name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..")) continue;
        fprintf(stderr, RUN ": %s: output \"%s\" cannot be written: its name is not a file name\n", a->file, name);
        return false;
    }
    return true;
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
        fprintf(stderr, RUN ": %s: %s\n", a->file, fedc_errmsg());
        return false;
    }
    if (!file_type(&t, a, &shape) || snprintf(path, sizeof path, "%s%s%s.npy", a->out_dir, sep, name) >=
                                                     (int)sizeof path) {
        fprintf(stderr, RUN ": output \"%s\" (%s) cannot be written as .npy\n", name, fedc_type_str(&t, ts, sizeof ts));
        return false;
    }
    if (fedc_npy_write(path, &shape, data)) {
        fprintf(stderr, RUN ": output \"%s\": %s\n", name, fedc_errmsg());
        return false;
    }
    printf("%s: %s", name, fedc_type_str(&t, ts, sizeof ts));
    if (t.rank == 0) print_scalars(&shape, data);
    printf(" -> %s\n", path);
    return true;
}

static bool write_outputs(const fedc_executor *ex, const fedc_program *p, const run_args *a) {
    if (fedc_make_dirs(a->out_dir)) {
        fprintf(stderr, RUN ": %s\n", fedc_errmsg());
        return false;
    }
    for (int i = 0; i < fedc_program_num_outputs(p); i++)
        if (!write_output(ex, p, i, a)) return false;
    return true;
}

static int run_program(const fedc_program *p, run_args *a) {
    if (!inputs_match(p, a) || !outputs_are_file_names(p, a) || !load_inputs(p, a)) return CLI_FAILED;
    fedc_executor *ex = run_executor(p, a);
    if (!ex) return CLI_FAILED;
    bool ok = write_outputs(ex, p, a);
    fedc_executor_destroy(ex);
    return ok ? CLI_OK : CLI_FAILED;
}

static int cmd_run(int argc, char **argv) {
    run_args a;
    int rc = parse_run_args(argc, argv, &a);
    if (!rc) {
        fedc_program *p = cli_program_load(RUN, a.file);
        rc = p ? run_program(p, &a) : CLI_FAILED;
        fedc_program_destroy(p);
    }
    for (int i = 0; i < a.ninputs; i++) fedc_free(a.inputs[i].data);
    free(a.inputs);
    return rc;
}


/* --------------------------------------------------------- program export -- */

#define EXPORT "fedc program export"

typedef struct export_args {
    run_args run; /* file, inputs, clients */
    const char *to, *out;
    int shard;    /* devices the clients axis is split over (a mesh row's, with shard_groups); 0: none */
    int shard_groups; /* the mesh's rows, which the groups axis is split over; 0: none */
    bool entry_main;
} export_args;

/* --shard clients=D, or groups=DG,clients=D (a mesh of DG rows of D devices). */
static bool parse_shard(export_args *e, const char *spec) {
    if (strncmp(spec, "clients=", 8) == 0) return parse_count("--shard clients", spec + 8, 2, MAX_CLIENTS, &e->shard);
    const char *comma = strchr(spec, ',');
    if (strncmp(spec, "groups=", 7) == 0 && comma && strncmp(comma + 1, "clients=", 8) == 0) {
        char rows[32];
        snprintf(rows, sizeof rows, "%.*s", (int)(comma - spec - 7) < 31 ? (int)(comma - spec - 7) : 31, spec + 7);
        return parse_count("--shard groups", rows, 2, MAX_CLIENTS, &e->shard_groups) &&
               parse_count("--shard clients", comma + 9, 1, MAX_CLIENTS, &e->shard);
    }
    fprintf(stderr, EXPORT ": --shard takes clients=D or groups=DG,clients=D, not '%s'\n", spec);
    return false;
}

static bool export_option(export_args *e, int argc, char **argv, int *i) {
    const char *arg = argv[*i];
    static const char *const with_value[] = {"--input", "--to", "-o", "--clients", "--groups", "--shard", NULL};
    if (lacks_value(EXPORT, with_value, arg, *i + 1 >= argc)) return false;
    if (strcmp(arg, "--entry-main") == 0) return e->entry_main = true;
    if (strcmp(arg, "--input") == 0) return add_input(&e->run, argv[++*i]);
    if (strcmp(arg, "--to") == 0) return (e->to = argv[++*i]) != NULL;
    if (strcmp(arg, "-o") == 0) return cli_text(EXPORT, "-o", e->out = argv[++*i]);
    if (strcmp(arg, "--clients") == 0) return parse_count(arg, argv[++*i], 1, MAX_CLIENTS, &e->run.clients);
    if (strcmp(arg, "--groups") == 0) return parse_count(arg, argv[++*i], 1, MAX_CLIENTS, &e->run.groups);
    if (strcmp(arg, "--shard") == 0) return parse_shard(e, argv[++*i]);
    if (!e->run.file && is_file_arg(arg)) return (e->run.file = arg) != NULL;
    fprintf(stderr, EXPORT ": unexpected argument '%s' (see fedc program export --help)\n", arg);
    return false;
}

static int parse_export_args(int argc, char **argv, export_args *e) {
    *e = (export_args){0};
    e->run.inputs = calloc((size_t)argc + 1, sizeof *e->run.inputs);
    if (!e->run.inputs) return fprintf(stderr, EXPORT ": out of memory\n"), CLI_FAILED;
    for (int i = 0; i < argc; i++)
        if (!export_option(e, argc, argv, &i)) return CLI_USAGE;
    const char *problem = !e->run.file ? "needs FILE" : !e->to ? "needs --to mlir" : NULL;
    if (!problem && strcmp(e->to, "mlir") != 0 && strcmp(e->to, "stablehlo") != 0) problem = "--to takes mlir or stablehlo";
    if (!problem && e->entry_main && strcmp(e->to, "stablehlo") == 0) problem = "--entry-main is for --to mlir";
    if (!problem && e->run.ninputs && !e->entry_main) problem = "--input is for --entry-main";
    if (problem) {
        fprintf(stderr, EXPORT ": %s (see fedc program export --help)\n", problem);
        return CLI_USAGE;
    }
    return 0;
}

/* Writes the module to OUT (whole, or not at all) or standard output. */
static bool write_text(const char *out, const char *text) { return cli_write_text(EXPORT, out, text); }

static int export_program(const fedc_program *p, export_args *e) {
    if (e->entry_main && (!inputs_match(p, &e->run) || !load_inputs(p, &e->run))) return CLI_FAILED;
    const char **names = calloc((size_t)e->run.ninputs + 1, sizeof *names);
    const void **data = calloc((size_t)e->run.ninputs + 1, sizeof *data);
    for (int i = 0; names && data && i < e->run.ninputs; i++) names[i] = e->run.inputs[i].name, data[i] = e->run.inputs[i].data;
    fedc_mlir_options o = {.clients = e->run.clients, .shard_clients = e->shard, .entry_main = e->entry_main,
                           .ninputs = e->run.ninputs, .input_names = names, .input_data = data,
                           .groups = e->run.groups, .shard_groups = e->shard_groups};
    char *text = NULL;
    int rc = CLI_FAILED;
    if (!names || !data) fprintf(stderr, EXPORT ": out of memory\n");
    else if ((strcmp(e->to, "stablehlo") == 0 ? fedc_program_to_stablehlo : fedc_program_to_mlir)(p, &o, &text))
        fprintf(stderr, EXPORT ": %s: %s\n", e->run.file, fedc_errmsg());
    else rc = write_text(e->out, text) ? CLI_OK : CLI_FAILED;
    fedc_free(text);
    free(names), free(data);
    return rc;
}

static int cmd_export(int argc, char **argv) {
    export_args e;
    int rc = parse_export_args(argc, argv, &e);
    if (!rc) {
        fedc_program *p = cli_program_load(EXPORT, e.run.file);
        rc = p ? export_program(p, &e) : CLI_FAILED;
        fedc_program_destroy(p);
    }
    for (int i = 0; i < e.run.ninputs; i++) fedc_free(e.run.inputs[i].data);
    free(e.run.inputs);
    return rc;
}


/* -------------------------------------------------------------- dispatch -- */

typedef struct subcommand {
    const char *name, *usage;
    int (*run)(int argc, char **argv);
} subcommand;

static const subcommand subcommands[] = {{"check", check_usage, cmd_check}, {"print", print_usage, cmd_print},
                                         {"grad", grad_usage, cmd_grad},    {"jvp", jvp_usage, cmd_jvp},
                                         {"run", run_usage, cmd_run},       {"export", export_usage, cmd_export},
                                         {"split", cli_split_usage, cli_program_split},
                                         {"import", cli_import_usage, cli_program_import}};
enum { NSUB = sizeof subcommands / sizeof *subcommands };

int fedc_cli_program(int argc, char **argv) {
    if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        fputs("usage: fedc program SUBCOMMAND FILE [options]\n\n", stdout);
        for (int i = 0; i < NSUB; i++) printf("%s\n", subcommands[i].usage + strlen("usage: "));
        fputs(file_note, stdout);
        return CLI_OK;
    }
    for (int i = 0; argc > 0 && i < NSUB; i++) {
        if (strcmp(argv[0], subcommands[i].name)) continue;
        if (!cli_wants_help(argc - 1, argv + 1)) return subcommands[i].run(argc - 1, argv + 1);
        printf("%s\n%s", subcommands[i].usage, file_note);
        return CLI_OK;
    }
    if (argc == 0) fprintf(stderr, "fedc program: needs a subcommand: check, print, grad, jvp, run, export, split or import");
    else fprintf(stderr, "fedc program: unknown subcommand '%s' (check, print, grad, jvp, run, export, split or import)", argv[0]);
    fputs("; see fedc program --help\n", stderr);
    return CLI_USAGE;
}
