/* mlir.h — lowering a program to MLIR text (internal): the emitter that
 * mlir_emit.c implements (text, types, names, linalg.generic) and the per-op
 * lowerings of mlir_ops.c. */
#ifndef FEDC_EXPORT_MLIR_H
#define FEDC_EXPORT_MLIR_H

#include "fedc/export.h"
#include "ir/ir.h"

/* The module being written. Errors are sticky: after the first, nothing is added. */
typedef struct fedc__mlir {
    char *buf;
    size_t len, cap;
    fedc_status st;
    int clients; /* the leading axis' length at the level being lowered: the cohort's,
                    or the groups' for a @groups value (fedc__mlir_level) */
    int cohort, groups; /* the clients, and the groups they are in (1: no groups level) */
    int tmp;     /* the next temporary's number: %t<tmp> */
    /* With sharding: the function's tensor constants become arguments %const<k>
     * (LLVM 19's sharding propagation takes no arith.constant), their types
     * listed in `hoisted` (", %const0: tensor<...>") and their values in
     * `values` (comments); NULL otherwise. */
    struct fedc__mlir *hoisted, *values;
    int nhoisted;
    /* Sharded, a program with a groups level: the function is one device's of a
     * mesh_rows x mesh_cols mesh (groups x clients), partitioned here rather than
     * by LLVM's partitioner. cohort and groups are the device's: of each of its
     * row's groups, its column's share of the clients. Each aggregation is the
     * device's part followed by mesh.all_reduce over the mesh axes it spans
     * (fedc__mlir_all_reduce); a step down reads the row's own groups. 0: a 1-D
     * mesh over the clients for LLVM's partitioner (or not sharded). */
    int mesh_rows, mesh_cols;
    /* StableHLO, sharded: the devices a @clients value's leading axis is tiled
     * over (2 or more); 0 otherwise. */
    int shard_devices;
    bool at_groups; /* the node being lowered is at the groups level (fedc__mlir_level) */
    const char *target; /* what errors say is being exported to: NULL, "mlir"; "stablehlo" */
} fedc__mlir;

/* With sharding, an aggregation's operand x (a clients value) annotated for its
 * users as split along the clients axis, so that sharding propagation makes the
 * reduction over that axis a local one plus mesh.all_reduce (as XLA's partitioner
 * does with DrJAX's sums); x itself otherwise. */
const char *fedc__mlir_split_use(fedc__mlir *m, const char *x, const char *type, char *out);
/* Per device (m->mesh_rows): result = the sum over the mesh axes `axes` ("0, 1",
 * "1": a row's devices, "0": a column's) of x, each device's part of an
 * aggregation, of tensor type `type`: a mesh.all_reduce (an MPI_Allreduce on the
 * axes' communicator once LLVM 22 lowers it). */
void fedc__mlir_all_reduce(fedc__mlir *m, const char *x, const char *type, const char *axes, const char *result);
/* The length of a level's axis over the whole cohort (groups: the groups'),
 * where a device's function holds its share of it. */
int fedc__mlir_whole_count(const fedc__mlir *m, bool groups);
/* With sharding, x annotated for its users as split over the mesh axes `axes`
 * ("" whole); x itself otherwise. */
const char *fedc__mlir_annotate_use(fedc__mlir *m, const char *x, const char *type, const char *axes, char *out);
/* With sharding, a server value x (of rank 1 or more) annotated for its users as
 * whole on every device. LLVM 19's sharding propagation crashes (it builds a
 * sharding attribute that dangles) when it must infer the sharding of a server
 * value two elementwise ops after a reduction over the clients axis, so every
 * server value a node computes is annotated; x itself when not sharded. */
const char *fedc__mlir_replicated_use(fedc__mlir *m, const char *x, const char *type, char *out);

/* A program being lowered: the SSA name of each value, and whether every value
 * carries the clients axis (a map's body, lowered along it). */
typedef struct fedc__mlir_scope {
    const fedc_program *p;
    char (*name)[40];
    bool batched;
    int id; /* names this scope's values: %s<id>_<value> (0: the program, %v<value>) */
    /* Which outputs are wanted (NULL: all), and, while the scope is lowered,
     * which values they need: only those are written, because LLVM 19's
     * mesh-spmdization crashes on a linalg.generic whose result has no user. */
    const bool *out_live;
    bool *live;
} fedc__mlir_scope;

/* live[v]: whether value v of p is needed by the outputs that out_live marks
 * (NULL: all of them). Sharded (`unrolled`: folds written out step by step), a
 * map or fold needs only the inputs its needed results read, because LLVM 19's
 * mesh-spmdization crashes on a value nothing uses (a fold's unused carry's
 * first value); otherwise every input of a needed node is needed. On running out
 * of memory it falls back to the latter. */
void fedc__mlir_liveness(const fedc_program *p, const bool *out_live, bool *live, bool unrolled);
/* Grows want (a fold body's outputs) by the carries (the first k) that its
 * wanted outputs need from earlier steps; live: the body's values they need. */
void fedc__mlir_fold_needed(const fedc_program *body, int k, bool *want, bool *live);

void fedc__mlir_printf(fedc__mlir *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
fedc_status fedc__mlir_fail(fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v, fedc_status st, const char *fmt,
                            ...) __attribute__((format(printf, 5, 6)));
/* Writes the n bytes at data as hexadecimal digits, two per byte (the body of a
 * dense<"0x..."> literal), to out (2 n + 1 bytes, NUL-ended). */
void fedc__mlir_hex(const uint8_t *data, size_t n, char *out);

/* A fresh temporary's name, "%t<n>", in buf (of 24). */
const char *fedc__mlir_tmp(fedc__mlir *m, char *buf);

/* Types: "f32", "i1", ...; "tensor<4x3xf32>" with the clients axis first when
 * `clients`. */
const char *fedc__mlir_elem(fedc_dtype dt);
const char *fedc__mlir_tensor(const fedc__mlir *m, const fedc_type *t, bool clients, char *buf, size_t size);
/* The leading axis' length of node v's level: the groups' for a @groups value
 * or a node on @groups operands (a map at the groups, an aggregation up to the
 * server), else the cohort's. A scope's lowering sets m->clients to it before
 * each node (a map's body keeps its map's). */
bool fedc__mlir_level_is_groups(const fedc__mlir_scope *s, fedc_value v);
int fedc__mlir_level(const fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v);
/* Whether value v of scope s carries a leading federated axis (clients, or
 * groups), and its tensor type. */
bool fedc__mlir_has_clients(const fedc__mlir_scope *s, fedc_value v);
const char *fedc__mlir_type_of(const fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v, char *buf, size_t size);

/* The tensor type of a fold's stacked output: body output `output` with the
 * steps axis in front, [clients?, steps, ...]; into buf (of 160). */
const char *fedc__mlir_stacked_type(const fedc__mlir *m, const fedc_program *body, int output, int64_t steps, bool clients,
                                    char *buf);

/* A scalar literal of dtype dt (floats exactly, as their bits in hex). */
const char *fedc__mlir_literal(fedc_dtype dt, double value, char *buf, size_t size);

/* `name = arith.constant dense<literal> : type` for a tensor constant (name of
 * 24 is set); with sharding, a new argument %const<k> instead. */
const char *fedc__mlir_tensor_const(fedc__mlir *m, char *name, const char *literal, const char *type);

/* A zero (or -inf, for a max) splat constant of v's type: the outs of a generic.
 * LLVM 19's sharding propagation fails on tensor.empty and linalg.fill, so the
 * exporter never emits them. */
const char *fedc__mlir_splat(fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v, double value, char *name);

/* A linalg.generic: `rank` loops (iters: 'p' parallel, 'r' reduction per loop),
 * operands ins[i] read through the affine results maps[i] (e.g. "d0, 0, d2"), and
 * one output through out_map, starting from `init`. The body reads %in0, %in1,
 * ... and %out; fedc__mlir_generic_begin writes the head, the caller the body,
 * fedc__mlir_generic_end the yield of `result` (an SSA name in the body). */
typedef struct fedc__mlir_generic {
    int rank;
    const char *iters;
    int nin;
    const char *in[8];
    const char *in_type[8];
    const char *in_elem[8];
    const char *maps[8];
    const char *out_map;
    const char *out_type, *out_elem;
    const char *init;
    const char *result_name; /* the generic's SSA name */
} fedc__mlir_generic;

void fedc__mlir_generic_begin(fedc__mlir *m, const fedc__mlir_generic *g);
void fedc__mlir_generic_end(fedc__mlir *m, const fedc__mlir_generic *g, const char *result);

/* An scf.for over the steps 0 .. steps - 1 carrying n values from inits (of
 * types): the head. Names (of 24 each) the loop `result` (its result i is value
 * i), the step t (an index; with ti, also as an i32) and the carried values in
 * the body, iter. fedc__mlir_for_end yields values and ends the loop. */
void fedc__mlir_for_begin(fedc__mlir *m, int64_t steps, int n, const char *const *inits, const char *const *types,
                          char *result, char *t, char *ti, char (*iter)[24]);
void fedc__mlir_for_end(fedc__mlir *m, int n, char (*values)[24], const char *const *types);

/* The checks both targets make (mlir_module.c): the program verifies, a
 * federated one has a cohort size, the sharding divides it, the function's name
 * is an identifier; `target` names the export in the error. */
fedc_status fedc__mlir_check_options(const fedc_program *p, const fedc_mlir_options *o, const char *target);
/* An export to target: those checks, then `write` of what both targets lower,
 * p with its composite ops written out in elementary ones (ir/decompose.h), so
 * that a target spells only the elementary ops. */
typedef fedc_status (*fedc__export_write)(const fedc_program *lowered, const fedc_mlir_options *o, char **out);
fedc_status fedc__export(const fedc_program *p, const fedc_mlir_options *o, const char *target, fedc__export_write write,
                         char **out);

/* Lowers every node of scope s in order (mlir_ops.c). */
fedc_status fedc__mlir_lower_scope(fedc__mlir *m, fedc__mlir_scope *s);
/* Creates a scope over p: names for every value, none set. */
fedc_status fedc__mlir_scope_init(fedc__mlir_scope *s, const fedc_program *p, bool batched, int id);
void fedc__mlir_scope_free(fedc__mlir_scope *s);
/* Ends an export: frees the scope, and hands the text to *out or (on an error,
 * st's or the module's) frees it. */
fedc_status fedc__mlir_finish(fedc__mlir *m, fedc__mlir_scope *s, fedc_status st, char **out);

#endif
