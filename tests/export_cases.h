/* export_cases.h — what the export tests share (test_export_mlir.c,
 * test_export_shard.c, test_export_stablehlo.c): the programs every target
 * exports (export_cases.c), and running LLVM 19's tools on a module and fedc's
 * executor on the same inputs (export_tools.c). */
#ifndef FEDC_TESTS_EXPORT_CASES_H
#define FEDC_TESTS_EXPORT_CASES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/export.h"
#include "fedc/fl.h"
#include "harness.h"
#include "ir/ir.h"

/* ------------------------------------------------------------- the cases -- */

typedef fedc_program *(*make_fn)(void);

typedef struct export_case {
    const char *name;
    make_fn make;
    int clients;      /* 0: not federated */
    double lo, hi;    /* random float inputs */
    int imod;         /* i32 inputs (labels) hold (7 k + 3) mod imod */
} export_case;

/* Every case of export_cases.c, which each target exports. */
extern const export_case EXPORT_CASES[];
extern const int EXPORT_NCASES;

static inline fedc_type F(int rank, const int64_t *dims) { return fedc_type_make(FEDC_F32, rank, dims); }
#define T(...) F(FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})
#define T0 fedc_type_scalar(FEDC_F32)
static inline fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

/* A program with inputs x0, x1, ... of `types`; finish names its output "y". */
fedc_program *start(fedc_value *x, int n, const fedc_type *types);
fedc_program *finish(fedc_program *p, fedc_value y);

/* Cases the sharding and StableHLO tests export again. */
fedc_program *m_broadcast_sum(void);
fedc_program *m_map(void);
fedc_program *fold_round_of(bool loss);
fedc_program *model_round(const char *model, const fedc_model_options *mo, fedc_optimizer_kind server, int64_t batch,
                          int64_t steps);
fedc_program *m_cnn_round(void);
fedc_program *m_lstm_round(void);
fedc_program *m_transformer_round(void);
fedc_program *m_random(void);
fedc_program *m_random_clients(void);
fedc_program *m_levels(void);
/* The groups a case's program p is run and exported with: 2 (of clients / 2
 * each) when it has a groups level, else 0. */
int case_groups(const fedc_program *p);

/* ------------------------------------------------------------ the tools -- */

/* Whether mlir-opt-19, mlir-cpu-runner-19 and the runner utilities are here. */
bool tools_present(void);
/* All a command prints, NUL-terminated (NULL if it cannot run); *rc its status. */
char *run_command(const char *cmd, int *rc);
/* The mlir-opt-19 passes that lower a module to LLVM for mlir-cpu-runner-19 (docs/export.md). */
const char *lowering_pipeline(void);
/* Runs `module` through mlir-opt-19 (docs/export.md's pipeline) and
 * mlir-cpu-runner-19 and parses the numbers after each "data =" the runner
 * prints into out (max values); -1 if the tools failed, with what they said in
 * `log`. */
int64_t run_mlir(const char *module, double *out, int64_t max, char *log, size_t logsize);
/* The same, the printed numbers integers (printMemrefI32 / I64), read exactly. */
int64_t run_mlir_ints(const char *module, int64_t *out, int64_t max, char *log, size_t logsize);
/* Whether `module` parses (mlir-opt-19 with unregistered dialects allowed). */
bool parses(const char *module, char *log, size_t logsize);
/* Marks in used[] every op of p and of its bodies. */
void mark_ops(const fedc_program *p, bool *used);
/* Whether op is in the NULL-ended list. */
bool listed(const char *const *list, const char *op);

/* A case's inputs: one datum per program input, by name. */
typedef struct inputs {
    int n;
    const char **names;
    void **data;
} inputs;

/* A value's element count, all clients' copies for a @clients value. */
int64_t elements(const fedc_type *t, int clients);
void make_inputs(const fedc_program *p, const export_case *c, inputs *in);
void free_inputs(inputs *in);
/* The number of values all of p's outputs hold (at most, with @groups outputs). */
int64_t output_values(const fedc_program *p, int clients); /* at most, with @groups outputs */
/* Every output's values, in order, as the executor computes them (with
 * `reference`, its reference kernels): as doubles into out, or (bits not NULL)
 * as bits into bits: an f32's as an i32, an f64's as an i64. */
int64_t run_fedc(const fedc_program *p, int clients, const inputs *in, bool reference, double *out, int64_t *bits);

#endif
