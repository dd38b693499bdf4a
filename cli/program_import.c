/*
 * fedc program import MODEL.onnx --out FILE.fedc [--params FILE.safetensors]
 * [--batch N] — an ONNX model as a program in the text format
 * (fedc_program_from_onnx, docs/onnx.md). With --params the initializers are
 * written to a safetensors file by their ONNX names (PyTorch's state_dict names)
 * and the program takes them as inputs params/<name>; without it they are
 * constants of the program, which then runs on the graph's inputs alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"
#ifdef FEDC_HAVE_FORMATS
#include "fedc/formats.h"
#endif

#define IMPORT "fedc program import"

const char cli_import_usage[] =
    "usage: fedc program import MODEL.onnx --out FILE.fedc [--params FILE.safetensors] [--batch N]\n"
    "  import an ONNX model (a forward graph, opsets 13 to 18, as torch.onnx.export\n"
    "  writes it) as a program in the text format; docs/onnx.md lists the ops\n"
    "  --out FILE      where the program goes\n"
    "  --params FILE   write the initializers there (safetensors, by their ONNX names)\n"
    "                  and make them the program's inputs params/<name>; without it\n"
    "                  they are constants of the program\n"
    "  --batch N       the size of every symbolic dimension (dim_param) of the graph's\n"
    "                  inputs, 1 to 1048576 (default 1)\n";

typedef struct import_args {
    const char *model, *out, *params;
    uint64_t batch;
} import_args;

static int parse_args(int argc, char **argv, import_args *a) {
    *a = (import_args){.batch = 1};
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        bool value = !strcmp(arg, "--out") || !strcmp(arg, "--params") || !strcmp(arg, "--batch");
        if (value && i + 1 >= argc) {
            fprintf(stderr, IMPORT ": %s needs a value\n", arg);
            return CLI_USAGE;
        }
        if (!strcmp(arg, "--out")) {
            if (!cli_text(IMPORT, arg, a->out = argv[++i])) return CLI_USAGE;
        } else if (!strcmp(arg, "--params")) {
            if (!cli_text(IMPORT, arg, a->params = argv[++i])) return CLI_USAGE;
        } else if (!strcmp(arg, "--batch")) {
            if (!cli_uint(IMPORT, arg, argv[++i], 1, 1 << 20, &a->batch)) return CLI_USAGE;
        } else if (!a->model && arg[0] && arg[0] != '-') {
            a->model = arg;
        } else {
            fprintf(stderr, IMPORT ": unexpected argument '%s' (see " IMPORT " --help)\n", arg);
            return CLI_USAGE;
        }
    }
    const char *missing = !a->model ? "MODEL.onnx" : !a->out ? "--out FILE" : NULL;
    if (missing) {
        fprintf(stderr, IMPORT ": needs %s (see " IMPORT " --help)\n", missing);
        return CLI_USAGE;
    }
    return 0;
}

#ifdef FEDC_HAVE_FORMATS
/* What was imported, on standard output: the program's inputs and outputs and
 * the parameters' count. */
static void summary(const import_args *a, const fedc_onnx_model *m) {
    char type[128];
    printf("%s: opset %lld, %d ops\n", a->model, (long long)m->opset, fedc_program_size(m->program));
    for (int k = 0; k < 2; k++) {
        int n = k ? fedc_program_num_outputs(m->program) : fedc_program_num_inputs(m->program);
        for (int i = 0; i < n; i++) {
            const char *name = k ? fedc_program_output_name(m->program, i) : fedc_program_input_name(m->program, i);
            if (!k && !strncmp(name, "params/", 7)) continue;
            fedc_value v = k ? fedc_program_output_value(m->program, i) : fedc_program_input(m->program, i);
            fedc_type t = fedc_value_type(m->program, v);
            fedc_type_str(&t, type, sizeof type);
            printf("  %s %s %s\n", k ? "output" : "input", name, type);
        }
    }
    int64_t floats = 0;
    for (int i = 0; i < m->num_params; i++) floats += fedc_type_count(&m->param_values[i].type);
    if (a->params) printf("  %d parameters (%lld values) in %s, inputs params/<name>\n", m->num_params, (long long)floats, a->params);
    else printf("  initializers as constants (--params FILE makes them inputs)\n");
}

int cli_program_import(int argc, char **argv) {
    import_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc;
    fedc_onnx_model *m = NULL;
    fedc_onnx_options o = {.batch = (int64_t)a.batch, .frozen = a.params == NULL};
    if (fedc_program_from_onnx(a.model, &o, &m)) {
        fprintf(stderr, IMPORT ": %s\n", fedc_errmsg());
        return CLI_FAILED;
    }
    char *text = NULL;
    rc = CLI_FAILED;
    if (fedc_program_to_string(m->program, &text)) fprintf(stderr, IMPORT ": %s\n", fedc_errmsg());
    else if (a.params && fedc_safetensors_write(a.params, m->param_values, m->num_params, NULL, 0))
        fprintf(stderr, IMPORT ": %s\n", fedc_errmsg());
    else if (cli_write_text(IMPORT, a.out, text)) rc = CLI_OK;
    if (!rc) summary(&a, m);
    fedc_free(text);
    fedc_onnx_model_destroy(m);
    return rc;
}
#else
int cli_program_import(int argc, char **argv) {
    import_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc;
    fprintf(stderr, IMPORT ": this fedc was built without libfedc_formats (cmake -DFEDC_FORMATS=ON), "
                    "which imports ONNX models\n");
    return CLI_FAILED;
}
#endif
