/*
 * fedc/export.h — a program leaves fedc as MLIR.
 *
 * fedc_program_to_mlir writes a program as an MLIR module in the upstream
 * dialects that LLVM's own tools parse, verify, lower and run (func, arith, math,
 * tensor, linalg, scf, bufferization): one func.func named after the program,
 * whose arguments are the program's inputs and whose results are its outputs, in
 * order. Federated values are laid out as DrJAX lays them out: a @clients value
 * is a tensor with a leading clients axis of the cohort's size (fixed at export),
 * broadcast is a broadcast along it, sum/mean/weighted_mean are reductions over
 * it, and a map is its body applied along it.
 *
 *     char *text;
 *     fedc_mlir_options o = {.clients = 4};
 *     if (fedc_program_to_mlir(p, &o, &text)) fprintf(stderr, "%s\n", fedc_errmsg());
 *     else fputs(text, stdout), fedc_free(text);
 *
 * With entry_main, the module also gets a @main that holds the given inputs as
 * constants, calls the program and prints every output with MLIR's runner
 * utilities, so `mlir-opt-19 ... | mlir-cpu-runner-19 -e main` runs it as it
 * stands (docs/export.md has the exact pipeline). An op that has no lowering yet
 * fails the export with an error naming it; nothing is dropped silently.
 */
#ifndef FEDC_EXPORT_H
#define FEDC_EXPORT_H

#include "fedc/program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fedc_mlir_options {
    int clients;            /* the cohort's size: required (>= 1) for a federated program */
    const char *func_name;  /* the function's name; NULL: "program" */
    int shard_clients;      /* D >= 2: the clients axis split over a mesh of D devices (the
                               mesh dialect, for --sharding-propagation --mesh-spmdization;
                               D divides clients); 0: no sharding */
    bool entry_main;        /* add @main: inputs as constants, outputs printed */
    int ninputs;            /* with entry_main: one datum per program input, by name */
    const char *const *input_names;
    const void *const *input_data; /* row-major, the input's dtype; @clients: all clients' copies */
    int groups;             /* a program with @groups values: the number of groups G, each of
                               clients / G clients (G divides clients); @groups values have a
                               leading groups axis of G, @clients ones stay [clients, ...]
                               ordered by group */
    int shard_groups;       /* Dg >= 2: a 2-D mesh of Dg x shard_clients
                               devices (groups x clients): the groups axis split over its Dg
                               rows (Dg divides G), the clients axis over all its devices.
                               MLIR with a groups level (either shard_*): the function is one
                               device's, with its own mesh.all_reduce per aggregation, and
                               shard_clients divides each group's clients */
} fedc_mlir_options;

/* Writes `p` as an MLIR module into a NUL-terminated string the caller frees with
 * fedc_free. The program is verified first; errors name the op (%index and name)
 * that cannot be lowered, or the input that entry_main lacks. */
FEDC_API fedc_status fedc_program_to_mlir(const fedc_program *p, const fedc_mlir_options *options, char **out);

/* The names of the ops fedc_program_to_mlir lowers, for the docs and the tests. */
FEDC_API bool fedc_mlir_lowers(const char *op_name);

/* Writes `p` as StableHLO for XLA or IREE: one func.func (default @main) of ops
 * in MLIR's generic form ("stablehlo.add"(...), dot_general, reduce with its
 * region, broadcast_in_dim, ...), the clients axis dim 0 of a @clients value.
 * With shard_clients = D, every argument and result carries an mhlo.sharding
 * (the clients axis tiled over D devices, server values replicated). Checked
 * here only structurally (mlir-opt-19 --allow-unregistered-dialect parses it).
 * entry_main is refused; an op without a StableHLO lowering fails naming it. */
FEDC_API fedc_status fedc_program_to_stablehlo(const fedc_program *p, const fedc_mlir_options *options, char **out);

/* The names of the ops fedc_program_to_stablehlo lowers. */
FEDC_API bool fedc_stablehlo_lowers(const char *op_name);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_EXPORT_H */
