/* The export's op table (lowerings.def): each op's spelling per target, read
 * by both targets' scope lowerings and by fedc_mlir_lowers and
 * fedc_stablehlo_lowers. */
#include <string.h>

#include "export/mlir_lower.h"
#include "export/stablehlo.h"

#define COMPOSITE NULL
#define NONE NULL

/* Each row stands at its op's place: a row missing or out of ops.def's order
 * fails to compile. */
enum {
#define FEDC_LOWERING(id, mlir, stablehlo) ROW_##id,
#include "export/lowerings.def"
#undef FEDC_LOWERING
    ROW_COUNT
};
#define FEDC_LOWERING(id, mlir, stablehlo) \
    _Static_assert((int)ROW_##id == (int)FEDC_OP_##id, "export/lowerings.def: row " #id " is not at ops.def's place");
#include "export/lowerings.def"
#undef FEDC_LOWERING
_Static_assert((int)ROW_COUNT == (int)FEDC_OP_COUNT, "export/lowerings.def: an op of ops.def has no row");

static const lower_fn rows[FEDC_OP_COUNT][FEDC__EXPORT_TARGETS] = {
#define FEDC_LOWERING(id, mlir, stablehlo) [FEDC_OP_##id] = {[FEDC__TO_MLIR] = mlir, [FEDC__TO_STABLEHLO] = stablehlo},
#include "export/lowerings.def"
#undef FEDC_LOWERING
};

lower_fn fedc__lowering(fedc__export_target target, fedc__op op) { return rows[op][target]; }

/* Whether the op named op_name exports to target: it has a spelling, or is
 * decomposed into ops that have. */
static bool lowers(fedc__export_target target, const char *op_name) {
    for (int op = 0; op < FEDC_OP_COUNT; op++)
        if (strcmp(fedc__ops[op].name, op_name) == 0)
            return rows[op][target] != NULL || fedc__op_is_composite((fedc__op)op);
    return false;
}

bool fedc_mlir_lowers(const char *op_name) { return lowers(FEDC__TO_MLIR, op_name); }
bool fedc_stablehlo_lowers(const char *op_name) { return lowers(FEDC__TO_STABLEHLO, op_name); }
