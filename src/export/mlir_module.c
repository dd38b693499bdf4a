/* The module: the program's function (its inputs as arguments, its outputs as
 * results) and, with entry_main, a @main that runs it on constants and prints
 * every output with MLIR's runner utilities (printMemrefF32, ...). */
#include <string.h>

#include "export/mlir.h"
#include "ir/decompose.h"

static bool federated(const fedc_program *p) {
    for (int v = 0; v < p->n; v++)
        if (p->nodes[v].type.placement != FEDC_LOCAL || fedc__op_is_federated(p->nodes[v].op)) return true;
    return false;
}

/* Whether p uses the groups level: a @groups value, or a step between levels. */
static bool hierarchical(const fedc_program *p) {
    for (int v = 0; v < p->n; v++) {
        fedc__op op = p->nodes[v].op;
        if (p->nodes[v].type.placement == FEDC_GROUPS || op == FEDC_OP_BROADCAST_DOWN || op == FEDC_OP_SUM_UP ||
            op == FEDC_OP_MEAN_UP || op == FEDC_OP_WEIGHTED_MEAN_UP || op == FEDC_OP_NUM_GROUPS || op == FEDC_OP_GROUP_SIZE)
            return true;
    }
    return false;
}

static void print_results(fedc__mlir *m, const fedc__mlir_scope *s) {
    char type[160];
    fedc__mlir_printf(m, "(");
    for (int i = 0; i < s->p->noutputs; i++)
        fedc__mlir_printf(m, "%s%s", i ? ", " : "", fedc__mlir_type_of(m, s, s->p->outputs[i].value, type, sizeof type));
    fedc__mlir_printf(m, ")");
}

/* The mesh axes v is split over when LLVM's partitioner shards the module
 * (a 1-D mesh over the clients): a @clients value's leading axis, "0"; a
 * server value whole on every device, "". */
static const char *axes_of(const fedc__mlir_scope *s, fedc_value v) { return fedc__mlir_has_clients(s, v) ? "0" : ""; }

/* `v = mesh.shard x to <@clients_mesh, [[axes]]>`; for a function argument also
 * its users' annotation, which sharding propagation starts from. */
static void shard(fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v, const char *x, bool for_users, char *out) {
    char first[24], type[160];
    fedc__mlir_type_of(m, s, v, type, sizeof type);
    const char *axes = axes_of(s, v);
    fedc__mlir_tmp(m, first);
    fedc__mlir_printf(m, "    %s = mesh.shard %s to <@clients_mesh, [[%s]]> : %s\n", first, x, axes, type);
    if (!for_users) {
        snprintf(out, 24, "%s", first);
        return;
    }
    fedc__mlir_tmp(m, out);
    fedc__mlir_printf(m, "    %s = mesh.shard %s to <@clients_mesh, [[%s]]> annotate_for_users : %s\n", out, first,
                      axes, type);
}

/* Whether v can be annotated: LLVM 19 writes no sharding of a rank-0 tensor
 * (`[[]]` names one dim, which crashes mesh-spmdization in shardShapedType, and
 * its parser takes no `[]`), so a rank-0 server value is left to propagation. */
static bool whole_rank(const fedc__mlir_scope *s, fedc_value v) {
    return fedc__mlir_has_clients(s, v) || s->p->nodes[v].type.rank > 0;
}

/* A server output copied (a generic over its shape; of one unit step for rank
 * 0) before it is returned. A rank-0 one, unannotated, would be returned as
 * each device's part of a sum over the clients; and an aggregation's result,
 * even annotated whole, is returned by LLVM 19's mesh-spmdization as each
 * device's partial sum, its mesh.all_reduce left unused. Copied, the copy reads
 * the all-reduce. */
static void whole_copy(fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v, char *out) {
    char type[160], init[24], map[160] = "";
    const fedc_type *t = &s->p->nodes[v].type;
    const char *elem = fedc__mlir_elem(t->dtype);
    for (int i = 0; i < t->rank; i++) {
        size_t n = strlen(map);
        snprintf(map + n, sizeof map - n, "%sd%d", i ? ", " : "", i);
    }
    fedc__mlir_type_of(m, s, v, type, sizeof type);
    fedc__mlir_splat(m, s, v, 0, init);
    fedc__mlir_generic g = {.rank = t->rank, .iters = "pppppppp", .nin = 1, .in = {s->name[v]}, .in_type = {type},
                            .in_elem = {elem}, .maps = {map}, .out_map = map, .out_type = type, .out_elem = elem,
                            .init = init, .result_name = fedc__mlir_tmp(m, out)};
    fedc__mlir_generic_begin(m, &g);
    fedc__mlir_generic_end(m, &g, "%in0");
}

/* The body: the program's nodes, then the return (results annotated when sharded). */
static fedc_status body(fedc__mlir *m, fedc__mlir_scope *s, bool sharded) {
    const fedc_program *p = s->p;
    char type[160];
    if (sharded)
        for (int i = 0; i < fedc_program_num_inputs(p); i++) {
            fedc_value v = fedc_program_input(p, i);
            if (!whole_rank(s, v)) continue;
            shard(m, s, v, s->name[v], true, s->name[v]);
        }
    fedc_status st = fedc__mlir_lower_scope(m, s);
    if (st) return st;
    char (*result)[24] = fedc__list(p->noutputs, sizeof *result);
    if (!result) return m->st = FEDC_ENOMEM;
    for (int i = 0; i < p->noutputs; i++) {
        fedc_value v = p->outputs[i].value;
        fedc__op op = p->nodes[v].op;
        bool aggregate = op == FEDC_OP_SUM || op == FEDC_OP_MEAN || op == FEDC_OP_WEIGHTED_MEAN;
        if (sharded && whole_rank(s, v) && aggregate) {
            char copy[24];
            whole_copy(m, s, v, copy);
            shard(m, s, v, copy, false, result[i]);
        } else if (sharded && whole_rank(s, v)) {
            shard(m, s, v, s->name[v], false, result[i]);
        } else if (sharded) {
            whole_copy(m, s, v, result[i]);
        }
        else snprintf(result[i], 24, "%.23s", s->name[v]);
    }
    fedc__mlir_printf(m, "    return");
    for (int i = 0; i < p->noutputs; i++) fedc__mlir_printf(m, "%s %s", i ? "," : "", result[i]);
    if (p->noutputs) fedc__mlir_printf(m, " : ");
    for (int i = 0; i < p->noutputs; i++)
        fedc__mlir_printf(m, "%s%s", i ? ", " : "", fedc__mlir_type_of(m, s, p->outputs[i].value, type, sizeof type));
    fedc__mlir_printf(m, "\n  }\n");
    fedc_free(result);
    return m->st;
}

/* The program's function. Sharded, its tensor constants become its last
 * arguments (%const<k>, their values listed in a comment above it), because the
 * body is written before the signature is known, into a buffer of its own. */
static fedc_status function(fedc__mlir *m, fedc__mlir_scope *s, const char *fname, bool sharded) {
    const fedc_program *p = s->p;
    char type[160];
    for (int v = 0; v < p->n; v++) snprintf(s->name[v], sizeof s->name[v], "%%v%d", v);
    for (int i = 0; i < fedc_program_num_inputs(p); i++)
        snprintf(s->name[fedc_program_input(p, i)], sizeof s->name[0], "%%arg%d", i);
    fedc__mlir inner = {.clients = m->clients, .cohort = m->cohort, .groups = m->groups, .tmp = m->tmp,
                           .mesh_rows = m->mesh_rows, .mesh_cols = m->mesh_cols},
               hoisted = {.clients = m->clients},
               values = {.clients = m->clients};
    if (sharded) inner.hoisted = &hoisted, inner.values = &values;
    fedc_status st = body(&inner, s, sharded);
    m->tmp = inner.tmp;
    if (!st) {
        fedc__mlir_printf(m, "  // fedc program: %d operations, %d inputs, %d outputs\n", p->n, fedc_program_num_inputs(p),
                          p->noutputs);
        if (sharded && inner.nhoisted)
            fedc__mlir_printf(m, "  // its constants, passed as arguments (sharding propagation takes no "
                              "arith.constant):\n%s", values.buf);
        fedc__mlir_printf(m, "  func.func @%s(", fname);
        for (int i = 0; i < fedc_program_num_inputs(p); i++)
            fedc__mlir_printf(m, "%s%%arg%d: %s", i ? ", " : "", i,
                              fedc__mlir_type_of(m, s, fedc_program_input(p, i), type, sizeof type));
        /* the hoisted constants follow the inputs; each is written ", %const<k>: type" */
        const char *extra = hoisted.buf ? hoisted.buf + (fedc_program_num_inputs(p) ? 0 : 2) : "";
        fedc__mlir_printf(m, "%s) -> ", extra);
        print_results(m, s);
        fedc__mlir_printf(m, " {\n%s", inner.buf);
    }
    fedc_free(inner.buf), fedc_free(hoisted.buf), fedc_free(values.buf);
    return st ? st : m->st;
}

/* ---------------------------------------------------------------- main -- */

static const void *input_data(const fedc_mlir_options *o, const char *name) {
    for (int i = 0; i < o->ninputs; i++)
        if (o->input_names[i] && strcmp(o->input_names[i], name) == 0) return o->input_data[i];
    return NULL;
}

/* The runner's print function for an element type (booleans print as i32). */
static const char *printer(fedc_dtype dt) {
    return dt == FEDC_F32 ? "printMemrefF32" : dt == FEDC_F64 ? "printMemrefF64" : "printMemrefI32";
}

static fedc_status print_output(fedc__mlir *m, const fedc__mlir_scope *s, int k, const char *value) {
    const fedc_type *t = &s->p->nodes[s->p->outputs[k].value].type;
    bool c = fedc__mlir_has_clients(s, s->p->outputs[k].value);
    char type[160], mem[160], v[24], buf[24], un[24];
    fedc__mlir_type_of(m, s, s->p->outputs[k].value, type, sizeof type);
    const char *shown = value;
    if (t->dtype == FEDC_BOOL || t->dtype == FEDC_U8) { /* widen to i32, which the runner prints */
        fedc_type wide = *t;
        wide.dtype = FEDC_I32;
        char wt[160], map[160] = {0}, init[24];
        fedc__mlir_tensor(m, &wide, c, wt, sizeof wt);
        for (int i = 0; i < t->rank + c; i++) snprintf(map + strlen(map), sizeof map - strlen(map), "%sd%d", i ? ", " : "", i);
        fedc__mlir_tmp(m, init);
        fedc__mlir_printf(m, "    %s = arith.constant dense<0> : %s\n", init, wt);
        fedc__mlir_generic g = {.rank = t->rank + c, .iters = "pppppppp", .nin = 1, .in = {value}, .in_type = {type},
                                .in_elem = {fedc__mlir_elem(t->dtype)}, .maps = {map}, .out_map = map, .out_type = wt,
                                .out_elem = "i32", .init = init, .result_name = fedc__mlir_tmp(m, v)};
        char w[24];
        fedc__mlir_generic_begin(m, &g);
        fedc__mlir_printf(m, "      %s = arith.extui %%in0 : %s to i32\n", fedc__mlir_tmp(m, w), fedc__mlir_elem(t->dtype));
        fedc__mlir_generic_end(m, &g, w);
        snprintf(type, sizeof type, "%s", wt);
        shown = v;
    }
    snprintf(mem, sizeof mem, "memref%s", strchr(type, '<'));
    const char *elem = t->dtype == FEDC_F32 ? "f32" : t->dtype == FEDC_F64 ? "f64" : "i32";
    fedc__mlir_printf(m, "    %s = bufferization.to_memref %s : %s\n", fedc__mlir_tmp(m, buf), shown, mem);
    fedc__mlir_printf(m, "    %s = memref.cast %s : %s to memref<*x%s>\n", fedc__mlir_tmp(m, un), buf, mem, elem);
    fedc__mlir_printf(m, "    call @%s(%s) : (memref<*x%s>) -> ()\n", printer(t->dtype), un, elem);
    return m->st;
}

static fedc_status entry_main(fedc__mlir *m, const fedc__mlir_scope *s, const fedc_mlir_options *o, const char *fname) {
    const fedc_program *p = s->p;
    char type[160];
    fedc__mlir_printf(m, "  func.func private @printMemrefF32(memref<*xf32>)\n");
    fedc__mlir_printf(m, "  func.func private @printMemrefF64(memref<*xf64>)\n");
    fedc__mlir_printf(m, "  func.func private @printMemrefI32(memref<*xi32>)\n");
    fedc__mlir_printf(m, "  func.func @main() {\n");
    for (int i = 0; i < fedc_program_num_inputs(p); i++) {
        fedc_value v = fedc_program_input(p, i);
        const fedc_type *t = &p->nodes[v].type;
        const uint8_t *data = input_data(o, p->nodes[v].name);
        if (!data)
            return m->st = fedc_error(FEDC_EINVAL, "export to mlir: entry_main: no data for input \"%s\"", p->nodes[v].name);
        if (t->dtype == FEDC_BOOL)
            return m->st = fedc_error(FEDC_EUNSUPPORTED, "export to mlir: entry_main: bool input \"%s\"", p->nodes[v].name);
        size_t copies = t->placement == FEDC_GROUPS ? (size_t)m->groups : fedc__mlir_has_clients(s, v) ? (size_t)m->cohort : 1;
        size_t bytes = fedc_type_bytes(t) * copies;
        fedc__mlir_printf(m, "    %%input%d = arith.constant dense<\"0x", i);
        char hex[2 * 4096 + 1];
        for (size_t b = 0; b < bytes; b += 4096) { /* in chunks: inputs may be megabytes */
            size_t n = bytes - b < 4096 ? bytes - b : 4096;
            fedc__mlir_hex(data + b, n, hex);
            fedc__mlir_printf(m, "%s", hex);
        }
        fedc__mlir_printf(m, "\"> : %s\n", fedc__mlir_type_of(m, s, v, type, sizeof type));
    }
    fedc__mlir_printf(m, "    ");
    for (int k = 0; k < p->noutputs; k++) fedc__mlir_printf(m, "%s%%out%d", k ? ", " : "", k);
    fedc__mlir_printf(m, "%scall @%s(", p->noutputs ? " = " : "", fname);
    for (int i = 0; i < fedc_program_num_inputs(p); i++) fedc__mlir_printf(m, "%s%%input%d", i ? ", " : "", i);
    fedc__mlir_printf(m, ") : (");
    for (int i = 0; i < fedc_program_num_inputs(p); i++)
        fedc__mlir_printf(m, "%s%s", i ? ", " : "", fedc__mlir_type_of(m, s, fedc_program_input(p, i), type, sizeof type));
    fedc__mlir_printf(m, ") -> ");
    print_results(m, s);
    fedc__mlir_printf(m, "\n");
    for (int k = 0; !m->st && k < p->noutputs; k++) {
        char out[24];
        snprintf(out, sizeof out, "%%out%d", k);
        print_output(m, s, k, out);
    }
    fedc__mlir_printf(m, "    return\n  }\n");
    return m->st;
}

/* ---------------------------------------------------------------- entry -- */

fedc_status fedc__mlir_check_options(const fedc_program *p, const fedc_mlir_options *o, const char *target) {
    fedc_status st = fedc_program_verify(p);
    if (st) return st;
    if (federated(p) && o->clients < 1)
        return fedc_error(FEDC_EINVAL, "export to %s: the program is federated; give the cohort's size (clients >= 1)",
                          target);
    if (o->clients < 0 || o->clients > (1 << 24))
        return fedc_error(FEDC_EINVAL, "export to %s: clients is %d; use 1 to %d", target, o->clients, 1 << 24);
    if (hierarchical(p) && (o->groups < 1 || o->clients % o->groups))
        return fedc_error(FEDC_EINVAL, "export to %s: the program has a groups level; give the number of groups (groups "
                          ">= 1, dividing the cohort's %d clients: the groups are of equal size)", target, o->clients);
    if (o->groups < 0 || (o->groups > 0 && (!hierarchical(p) || o->clients % o->groups)))
        return fedc_error(FEDC_EINVAL, "export to %s: %d groups: use 1 or more, dividing the cohort's %d clients, for a "
                          "program with a groups level", target, o->groups, o->clients);
    int mesh_groups = o->shard_groups > 1 ? o->shard_groups : 1, mesh_clients = o->shard_clients > 0 ? o->shard_clients : 1;
    int devices = mesh_groups * mesh_clients;
    if (o->shard_clients < 0 || (o->shard_clients == 1 && mesh_groups == 1) ||
        (o->shard_clients > 0 && (!federated(p) || o->clients % devices)))
        return fedc_error(FEDC_EINVAL, "export to %s: shard over %d devices: use 2 or more, dividing the cohort's %d "
                          "clients, for a federated program", target, devices, o->clients);
    if (o->shard_groups < 0 || o->shard_groups == 1 ||
        (o->shard_groups > 1 && (!hierarchical(p) || o->groups % o->shard_groups || o->clients % devices)))
        return fedc_error(FEDC_EINVAL, "export to %s: shard the groups over %d mesh rows: use 2 or more, dividing the %d "
                          "groups (and, times the clients' devices, the %d clients), for a program with a groups level",
                          target, o->shard_groups, o->groups, o->clients);
    const char *fname = o->func_name ? o->func_name : "program";
    for (const char *c = fname; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return fedc_error(FEDC_EINVAL, "export to %s: function name \"%s\": use letters, digits and _", target, fname);
    return FEDC_OK;
}

fedc_status fedc__export(const fedc_program *p, const fedc_mlir_options *o, const char *target, fedc__export_write write,
                         char **out) {
    fedc_program *lowered = NULL;
    fedc_status st = fedc__mlir_check_options(p, o, target);
    if (!st) st = fedc__decompose(p, &lowered);
    if (!st) st = write(lowered, o, out);
    fedc_program_destroy(lowered);
    return st;
}

/* Sharded, a program with a groups level: m becomes one device's of a rows x
 * cols mesh (groups x clients), its cohort and groups the device's, and the
 * module says so, with the whole cohort's signature. A device's clients are,
 * of each group of its row, its column's share, so that a group's sum is a
 * sum along its row. */
static fedc_status per_device(fedc__mlir *m, const fedc__mlir_scope *s, const fedc_mlir_options *o, const char *fname) {
    int rows = o->shard_groups > 1 ? o->shard_groups : 1, cols = o->shard_clients > 0 ? o->shard_clients : 1;
    int group = o->clients / o->groups;
    if (group % cols)
        return m->st = fedc_error(FEDC_EINVAL, "export to mlir: shard the clients over %d mesh columns: use a number "
                                  "dividing each group's %d clients (a device holds a share of each group of its row)",
                                  cols, group);
    char type[160];
    fedc__mlir_printf(m, "  // one device's function of a %d x %d mesh, groups x clients: device r * %d + c (row r, "
                      "column c)\n  // holds, of each of row r's %d groups, clients c * %d to c * %d + %d, and "
                      "computes each aggregation\n  // as its part and a mesh.all_reduce over the mesh axes it "
                      "spans. The whole cohort's signature:\n  // func.func @%s(", rows, cols, cols,
                      o->groups / rows, group / cols, group / cols, group / cols - 1, fname);
    for (int i = 0; i < fedc_program_num_inputs(s->p); i++)
        fedc__mlir_printf(m, "%s%%arg%d: %s", i ? ", " : "", i,
                          fedc__mlir_type_of(m, s, fedc_program_input(s->p, i), type, sizeof type));
    fedc__mlir_printf(m, ") -> ");
    print_results(m, s); /* m's counts are still the whole cohort's */
    fedc__mlir_printf(m, "\n  mesh.mesh @clients_mesh(shape = %dx%d)\n", rows, cols);
    m->mesh_rows = rows, m->mesh_cols = cols;
    m->clients = m->cohort = o->clients / (rows * cols), m->groups = o->groups / rows;
    return m->st;
}

/* The module of the decomposed program p. */
static fedc_status to_mlir(const fedc_program *p, const fedc_mlir_options *o, char **out) {
    const char *fname = o->func_name ? o->func_name : "program";
    fedc__mlir m = {.clients = o->clients ? o->clients : 1, .cohort = o->clients ? o->clients : 1,
                    .groups = o->groups ? o->groups : 1};
    fedc__mlir_scope s;
    if (fedc__mlir_scope_init(&s, p, false, 0)) return FEDC_ENOMEM;
    bool sharded = o->shard_clients > 0 || o->shard_groups > 1;
    fedc__mlir_printf(&m, "module {\n");
    if (sharded && hierarchical(p)) {
        if (per_device(&m, &s, o, fname)) return fedc__mlir_finish(&m, &s, m.st, out);
        sharded = false; /* partitioned here: no annotations for LLVM's partitioner */
    } else if (sharded) {
        fedc__mlir_printf(&m, "  mesh.mesh @clients_mesh(shape = %d)\n", o->shard_clients);
    }
    fedc_status st = function(&m, &s, fname, sharded);
    if (!st && o->entry_main) st = entry_main(&m, &s, o, fname);
    fedc__mlir_printf(&m, "}\n");
    return fedc__mlir_finish(&m, &s, st, out);
}

fedc_status fedc_program_to_mlir(const fedc_program *p, const fedc_mlir_options *options, char **out) {
    *out = NULL;
    fedc_mlir_options defaults = {0};
    const fedc_mlir_options *o = options ? options : &defaults;
    if ((o->shard_clients || o->shard_groups) && o->entry_main)
        return fedc_error(FEDC_EUNSUPPORTED, "export to mlir: a sharded module has no @main: LLVM 19 cannot run the mesh "
                          "dialect's collectives on one host (export without sharding to run it)");
    return fedc__export(p, o, "mlir", to_mlir, out);
}
