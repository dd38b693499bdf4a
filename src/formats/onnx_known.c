/* Which float initializers are constants known at import rather than trained
 * parameters (onnx_import.h): those whose every use is an input that a
 * translator needs known at import (an LSTM's or GRU's initial state, a shape, axes),
 * directly or through ops that fold their constant inputs.
 *
 * PyTorch's torch.export-based exporter (torch.onnx.export(dynamo=True), the
 * default from PyTorch 2.9) writes an LSTM's zero initial state as a float
 * initializer, a scalar Expanded to [1, batch, hidden] and Sliced when the
 * batch is dynamic. Taken as a parameter it would be a program input the LSTM
 * cannot read as zeros; taken as a constant it folds to them at import.
 *
 * The uses are counted by name and the nodes walked backwards (the graph is
 * in topological order), so an op's outputs are judged before its inputs. */
#include <stdlib.h>
#include <string.h>

#include "formats/onnx_import.h"

typedef struct name_uses {
    const char *name;
    int uses;  /* node inputs and graph outputs that read the name */
    int known; /* of those, the ones that need it known at import */
} name_uses;

typedef struct uses_table {
    name_uses *rows;
    size_t n;
} uses_table;

/* The inputs of op_type that its translator reads with fedc__onnx_const_in:
 * a bit per input index. */
static unsigned import_time_inputs(const char *op_type) {
    static const struct {
        const char *op;
        unsigned inputs;
    } table[] = {
        {"LSTM", 0xF0u},  /* sequence_lens, initial_h, initial_c, peephole */
        {"GRU", 0x30u},   /* sequence_lens, initial_h */
        {"Reshape", 0x2u}, {"Expand", 0x2u}, {"Unsqueeze", 0x2u}, {"Squeeze", 0x2u},
        {"Slice", 0x1Eu}, {"ConstantOfShape", 0x1u}, {"ReduceMean", 0x2u}, {"ReduceSum", 0x2u},
        {"ReduceMax", 0x2u},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].op, op_type)) return table[i].inputs;
    return 0;
}

/* Ops whose translators fold when every input is a constant, so a use of their
 * output at import is a use of their inputs at import. */
static bool folds(const char *op_type) {
    static const char *const ops[] = {"Expand", "Slice", "Reshape", "Unsqueeze", "Squeeze", "Cast",
                                      "Concat", "Identity", "Add", "Sub", "Mul", "Div"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i], op_type)) return true;
    return false;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const name_uses *)a)->name, ((const name_uses *)b)->name);
}

static name_uses *row(uses_table *t, const char *name) {
    name_uses key = {.name = name};
    return bsearch(&key, t->rows, t->n, sizeof *t->rows, by_name);
}

static const char *str(const char *s) { return s ? s : ""; }

/* One row per name that a node reads or the graph outputs, sorted. */
static fedc_status build(const Onnx__GraphProto *g, uses_table *t) {
    size_t cap = g->n_output;
    for (size_t i = 0; i < g->n_node; i++) cap += g->node[i]->n_input;
    t->rows = fedc_calloc(cap ? cap : 1, sizeof *t->rows);
    if (!t->rows) return fedc_error(FEDC_ENOMEM, "onnx: out of memory");
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++) t->rows[t->n++].name = str(g->node[i]->input[k]);
    for (size_t i = 0; i < g->n_output; i++) t->rows[t->n++].name = str(g->output[i]->name);
    qsort(t->rows, t->n, sizeof *t->rows, by_name);
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (!n || strcmp(t->rows[n - 1].name, t->rows[i].name)) t->rows[n++] = t->rows[i];
    t->n = n;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++) row(t, str(g->node[i]->input[k]))->uses++;
    for (size_t i = 0; i < g->n_output; i++) row(t, str(g->output[i]->name))->uses++;
    return FEDC_OK;
}

static bool only_known(uses_table *t, const char *name) {
    const name_uses *r = row(t, name);
    return r && r->uses > 0 && r->known == r->uses;
}

static void count_known_uses(const Onnx__GraphProto *g, uses_table *t) {
    for (size_t i = g->n_node; i-- > 0;) {
        const Onnx__NodeProto *n = g->node[i];
        unsigned known = import_time_inputs(str(n->op_type));
        bool outputs_known = folds(str(n->op_type)) && n->n_output > 0;
        for (size_t k = 0; outputs_known && k < n->n_output; k++) outputs_known = only_known(t, str(n->output[k]));
        for (size_t k = 0; k < n->n_input; k++)
            if (outputs_known || (k < 32 && (known >> k) & 1u)) row(t, str(n->input[k]))->known++;
    }
}

fedc_status fedc__onnx_known_initializers(const Onnx__GraphProto *g, bool *known) {
    uses_table t = {0};
    fedc_status st = build(g, &t);
    if (st) return st;
    count_known_uses(g, &t);
    for (size_t i = 0; i < g->n_initializer; i++) known[i] = only_known(&t, str(g->initializer[i]->name));
    fedc_free(t.rows);
    return FEDC_OK;
}
