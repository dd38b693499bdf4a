/* The StableHLO module: one func.func @main whose arguments are the program's
 * inputs and whose results are its outputs, every op in MLIR's generic form.
 * With shard_clients = D each argument and result carries the mhlo.sharding
 * XLA's SPMD partitioner reads (the clients axis tiled over D devices, a server
 * value replicated), and the module declares mhlo.num_partitions = D. With
 * shard_groups = Dg too, the devices are a 2-D mesh, Dg rows (groups) of D
 * (clients), device g D + c at row g and column c: a @clients value is tiled
 * over all Dg D devices in that order, so that a row holds its groups' clients
 * (they are contiguous), and a @groups value is tiled over the rows and
 * replicated along each row. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "export/stablehlo.h"

void fedc__shlo_op(fedc__mlir *m, const char *result, const char *name, const char *attrs, int n, const char *const *ins,
                   const char *const *in_types, const char *out_type) {
    fedc__mlir_printf(m, "    %s = \"%s\"(", result, name);
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, "%s%s", i ? ", " : "", ins[i]);
    fedc__mlir_printf(m, ")%s%s%s : (", attrs[0] ? " {" : "", attrs, attrs[0] ? "}" : "");
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, "%s%s", i ? ", " : "", in_types[i]);
    fedc__mlir_printf(m, ") -> %s\n", out_type);
}

const char *fedc__shlo_splat(fedc__mlir *m, fedc_dtype dt, double value, const char *type, char *name) {
    char lit[40];
    if (isinf(value) && dt == FEDC_I32) value = value < 0 ? INT32_MIN : INT32_MAX;
    fedc__mlir_literal(dt, value, lit, sizeof lit);
    fedc__mlir_tmp(m, name);
    fedc__mlir_printf(m, "    %s = \"stablehlo.constant\"() {value = dense<%s> : %s} : () -> %s\n", name, lit, type, type);
    return name;
}

int fedc__shlo_while_begin(fedc__mlir *m, int64_t steps, int n, const char *const *inits, const char *const *types,
                           char *result) {
    int id = m->tmp++;
    char t0[24], k[24], lt[24];
    fedc__shlo_splat(m, FEDC_I32, 0, "tensor<i32>", t0);
    fedc__mlir_tmp(m, result);
    fedc__mlir_printf(m, "    %s:%d = \"stablehlo.while\"(%s", result, n + 1, t0);
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, ", %s", inits[i]);
    fedc__mlir_printf(m, ") ({\n");
    for (int pass = 0; pass < 2; pass++) { /* the condition's region, then the body's: the same block arguments */
        fedc__mlir_printf(m, "    ^bb0(%%w%d_0: tensor<i32>", id);
        for (int i = 0; i < n; i++) fedc__mlir_printf(m, ", %%w%d_%d: %s", id, i + 1, types[i]);
        fedc__mlir_printf(m, "):\n");
        if (pass == 1) break;
        fedc__shlo_splat(m, FEDC_I32, (double)steps, "tensor<i32>", k);
        fedc__mlir_tmp(m, lt);
        fedc__mlir_printf(m, "    %s = \"stablehlo.compare\"(%%w%d_0, %s) {comparison_direction = "
                          "#stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : "
                          "(tensor<i32>, tensor<i32>) -> tensor<i1>\n    \"stablehlo.return\"(%s) : (tensor<i1>) -> ()\n"
                          "    }, {\n", lt, id, k, lt);
    }
    return id;
}

void fedc__shlo_while_end(fedc__mlir *m, int id, int n, char (*values)[24], const char *const *types) {
    char t[24], one[24], t1[24];
    snprintf(t, sizeof t, "%%w%d_0", id);
    fedc__shlo_splat(m, FEDC_I32, 1, "tensor<i32>", one);
    fedc__shlo_op(m, fedc__mlir_tmp(m, t1), "stablehlo.add", "", 2, (const char *[]){t, one},
                  (const char *[]){"tensor<i32>", "tensor<i32>"}, "tensor<i32>");
    fedc__mlir_printf(m, "    \"stablehlo.return\"(%s", t1);
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, ", %s", values[i]);
    for (int pass = 0; pass < 3; pass++) { /* the return's operand types, the while's operands' and results' */
        fedc__mlir_printf(m, pass == 0 ? ") : (tensor<i32>" : pass == 1 ? ") -> ()\n    }) : (tensor<i32>" : ") -> (tensor<i32>");
        for (int i = 0; i < n; i++) fedc__mlir_printf(m, ", %s", types[i]);
    }
    fedc__mlir_printf(m, ")\n");
}

/* The devices: a mesh of rows (the groups axis' share; 1 when not split) by
 * columns (the clients'). */
typedef struct mesh {
    int rows, cols;
} mesh;

/* The HLO sharding of value v: a @clients value's leading axis (dim 0) tiled over
 * every device, a @groups value's over the mesh's rows (replicated along each
 * row), every other dim whole; a value without the axis replicated. */
static void sharding(fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v, mesh d) {
    if (d.rows * d.cols < 2) return;
    bool groups = s->p->nodes[v].type.placement == FEDC_GROUPS;
    int tiles = groups ? d.rows : d.rows * d.cols;
    if (!fedc__mlir_has_clients(s, v) || tiles < 2) {
        fedc__mlir_printf(m, " {mhlo.sharding = \"{replicated}\"}");
        return;
    }
    fedc__mlir_printf(m, " {mhlo.sharding = \"{devices=[%d", tiles);
    for (int i = 0; i < s->p->nodes[v].type.rank; i++) fedc__mlir_printf(m, ",1");
    bool replicated = groups && d.cols > 1;
    if (replicated) fedc__mlir_printf(m, ",%d", d.cols);
    fedc__mlir_printf(m, "]");
    for (int k = 0; k < d.rows * d.cols; k++) fedc__mlir_printf(m, "%s%d", k ? "," : "", k);
    fedc__mlir_printf(m, "%s}\"}", replicated ? " last_tile_dim_replicate" : "");
}

static fedc_status function(fedc__mlir *m, fedc__mlir_scope *s, const char *fname, mesh devices) {
    const fedc_program *p = s->p;
    char type[160];
    for (int v = 0; v < p->n; v++) snprintf(s->name[v], sizeof s->name[v], "%%v%d", v);
    for (int i = 0; i < fedc_program_num_inputs(p); i++)
        snprintf(s->name[fedc_program_input(p, i)], sizeof s->name[0], "%%arg%d", i);
    fedc__mlir_printf(m, "  // fedc program: %d operations, %d inputs, %d outputs\n  func.func @%s(", p->n,
                      fedc_program_num_inputs(p), p->noutputs, fname);
    for (int i = 0; i < fedc_program_num_inputs(p); i++) {
        fedc_value v = fedc_program_input(p, i);
        fedc__mlir_printf(m, "%s%%arg%d: %s", i ? ", " : "", i, fedc__mlir_type_of(m, s, v, type, sizeof type));
        sharding(m, s, v, devices);
    }
    fedc__mlir_printf(m, ") -> (");
    for (int i = 0; i < p->noutputs; i++) {
        fedc__mlir_printf(m, "%s%s", i ? ", " : "", fedc__mlir_type_of(m, s, p->outputs[i].value, type, sizeof type));
        sharding(m, s, p->outputs[i].value, devices);
    }
    fedc__mlir_printf(m, ") {\n");
    if (fedc__shlo_lower_scope(m, s)) return m->st;
    fedc__mlir_printf(m, "    \"func.return\"(");
    for (int i = 0; i < p->noutputs; i++) fedc__mlir_printf(m, "%s%s", i ? ", " : "", s->name[p->outputs[i].value]);
    fedc__mlir_printf(m, ") : (");
    for (int i = 0; i < p->noutputs; i++)
        fedc__mlir_printf(m, "%s%s", i ? ", " : "", fedc__mlir_type_of(m, s, p->outputs[i].value, type, sizeof type));
    fedc__mlir_printf(m, ") -> ()\n  }\n");
    return m->st;
}

/* The module of the decomposed program p. */
static fedc_status to_stablehlo(const fedc_program *p, const fedc_mlir_options *o, char **out) {
    if (o->entry_main) /* refused after the program's checks, as their errors come first */
        return fedc_error(FEDC_EUNSUPPORTED, "export to stablehlo: no @main with inputs: a StableHLO module is run by "
                          "XLA or IREE, which take its inputs (export --to mlir to run it here)");
    fedc__mlir m = {.clients = o->clients ? o->clients : 1, .cohort = o->clients ? o->clients : 1,
                    .groups = o->groups ? o->groups : 1, .target = "stablehlo"};
    fedc__mlir_scope s;
    if (fedc__mlir_scope_init(&s, p, false, 0)) return FEDC_ENOMEM;
    mesh d = {o->shard_groups > 1 ? o->shard_groups : 1, o->shard_clients > 0 ? o->shard_clients : 1};
    if (d.rows * d.cols > 1) m.shard_devices = d.rows * d.cols;
    if (d.rows * d.cols > 1)
        fedc__mlir_printf(&m, "module @fedc attributes {mhlo.num_partitions = %d : i32, mhlo.num_replicas = 1 : i32} {\n",
                          d.rows * d.cols);
    else fedc__mlir_printf(&m, "module @fedc {\n");
    if (d.rows > 1)
        fedc__mlir_printf(&m, "  // a %d x %d mesh of devices, groups x clients: device g * %d + c is row g, column c\n",
                          d.rows, d.cols, d.cols);
    fedc_status st = function(&m, &s, o->func_name ? o->func_name : "main", d);
    fedc__mlir_printf(&m, "}\n");
    return fedc__mlir_finish(&m, &s, st, out);
}

fedc_status fedc_program_to_stablehlo(const fedc_program *p, const fedc_mlir_options *options, char **out) {
    *out = NULL;
    fedc_mlir_options defaults = {0};
    const fedc_mlir_options *o = options ? options : &defaults;
    return fedc__export(p, o, "stablehlo", to_stablehlo, out);
}
