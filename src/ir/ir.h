/*
 * ir.h — the inside of a program: nodes, attributes and the op table, shared by the
 * layers that read programs (ad, exec, the text format). Not part of the public API.
 */
#ifndef FEDC_IR_H
#define FEDC_IR_H

#include "core/internal.h"
#include "fedc/program.h"
#include "fedc/robust.h"

/* The most operands a map or fold takes (ops.def): a round of a large model passes
 * one per parameter tensor and optimizer slot, several hundred. Code that handles
 * the operands of any node sizes its scratch from the node, never from this. */
#define FEDC__MAX_OPERANDS 4096

typedef enum fedc__op {
#define FEDC_OP(id, name, min_in, max_in) FEDC_OP_##id,
#include "ir/ops.def"
#undef FEDC_OP
    FEDC_OP_COUNT
} fedc__op;

typedef enum fedc__attr_kind { FEDC_KIND_INTS, FEDC_KIND_INT, FEDC_KIND_FLOAT, FEDC_KIND_DTYPE } fedc__attr_kind;

typedef enum fedc__attr_key {
#define FEDC_ATTR(id, name, kind) FEDC_ATTR_##id,
#include "ir/attrs.def"
#undef FEDC_ATTR
    FEDC_ATTR_KEY_COUNT
} fedc__attr_key;

typedef struct fedc__op_info {
    const char *name;
    int min_inputs, max_inputs;
} fedc__op_info;

typedef struct fedc__attr_info {
    const char *name;
    fedc__attr_kind kind;
} fedc__attr_info;

extern const fedc__op_info fedc__ops[FEDC_OP_COUNT];
extern const fedc__attr_info fedc__attr_infos[FEDC_ATTR_KEY_COUNT];

/* An attribute: a key and its value (ints for INTS/INT/DTYPE, f for FLOAT). */
typedef struct fedc__attr {
    uint8_t key;
    uint8_t n; /* number of ints (1 for INT and DTYPE, 0 for FLOAT) */
    double f;
    int64_t v[FEDC_MAX_RANK];
} fedc__attr;

#define FEDC__MAX_ATTRS 4

typedef struct fedc__node {
    fedc__op op;
    fedc_type type;
    int nin;
    fedc_value *in;   /* nin operands, program-owned */
    int nattr;
    fedc__attr attr[FEDC__MAX_ATTRS];
    const void *data; /* CONSTANT: the values, program-owned */
    const char *name; /* INPUT: the input's name, program-owned */
} fedc__node;

typedef struct fedc__output {
    const char *name;
    fedc_value value;
} fedc__output;

/* The dtype of a node whose value is a tuple (map): its parts are read by
 * "result" nodes. Never the type of a program input or output. */
#define FEDC__TUPLE ((fedc_dtype)FEDC_DTYPE_COUNT)

struct fedc_program {
    fedc__node *nodes;
    int n, cap;
    fedc__output *outputs;
    int noutputs, cap_outputs;
    fedc_program **bodies; /* programs run by map nodes (attribute body = index) */
    int nbodies, cap_bodies;
    fedc_arena arena; /* names, operand lists and constant data */
    fedc_status status; /* first builder error, sticky */
    char errmsg[512];
};

/* Attribute accessors. A missing attribute reads as `dflt` (ints: count 0). */
const fedc__attr *fedc__attr_find(const fedc__node *n, fedc__attr_key key);
int64_t fedc__attr_int(const fedc__node *n, fedc__attr_key key, int64_t dflt);
double fedc__attr_float(const fedc__node *n, fedc__attr_key key, double dflt);
const int64_t *fedc__attr_ints(const fedc__node *n, fedc__attr_key key, int *count);

/* Attribute constructors for builders. */
fedc__attr fedc__attr_make_int(fedc__attr_key key, int64_t v);
fedc__attr fedc__attr_make_ints(fedc__attr_key key, int n, const int64_t *v);
fedc__attr fedc__attr_make_float(fedc__attr_key key, double f);

static inline const fedc__node *fedc__node_at(const fedc_program *p, fedc_value v) { return &p->nodes[v]; }

/* Appends a node after checking its operands and computing its type with the op's
 * rule. For INPUT and CONSTANT, `type` is the declared type (ignored otherwise).
 * Records the error in the program (sticky) and returns FEDC_NONE on failure. */
fedc_value fedc__emit(fedc_program *p, fedc__op op, const fedc_value *in, int nin,
                      const fedc__attr *attrs, int nattr, const fedc_type *type);
/* A robust_aggregate node's aggregator and settings (fedc_robust_aggregate). */
fedc_robust fedc__robust_of(const fedc__node *n);

/* What robust_aggregate's flagged clients send in place of their values, made
 * in its store from the other clients' values (src/exec/aggregate_attack.c):
 * ALIE's μ − z σ and IPM's −ε μ, μ and σ coordinate-wise over the unflagged
 * clients (fedc/attack.h, which the fl module maps to these). */
typedef enum fedc__robust_attack {
    FEDC__ROBUST_ATTACK_NONE = 0,
    FEDC__ROBUST_ATTACK_ALIE,
    FEDC__ROBUST_ATTACK_IPM,
} fedc__robust_attack;
/* robust_aggregate with an attack: flags f32[]@clients (a client whose flag is
 * above 0.5 sends the attack; the others' weight in μ and σ is 1 − flag), value
 * z or ε, and center (f32[d]@server, or FEDC_NONE) taken off every client's value
 * once the attack is in (cclip's step off its centre). The same bits as the
 * attack computed by fedc_attack_update's ops over the cohort, then the centre
 * taken off, then fedc_robust_aggregate; r's kind mean is the weighted_mean op's
 * tree over the clients (src/exec/aggregate.c), as fedc_tree_weighted_mean.
 *
 * With a zeroing (bound f32[]@server and sizes i32[L]@server, constants; both
 * FEDC_NONE: none) each client's value is its update's leaves flattened (sizes:
 * their counts, in order) and then one more number, 1 if the client's own update
 * has a norm above the bound (fedc_aggregate_zero's flag): once the attack is in,
 * a value is zeroed when that flag is 1 for an unflagged client and when the
 * attack's norm (over the leaves as fedc_aggregate_norm sums them) is not within
 * the bound for a flagged one, before the centre. The result has that layout
 * too: the aggregate, then the count of the clients zeroed. */
fedc_value fedc__robust_aggregate_attacked(fedc_program *p, fedc_value x, fedc_value w, const fedc_robust *r,
                                           fedc__robust_attack attack, double value, fedc_value flags,
                                           fedc_value center, fedc_value bound, fedc_value sizes);
/* A robust_aggregate node's attack, and its setting in *value. */
fedc__robust_attack fedc__robust_attack_of(const fedc__node *n, double *value);
/* Where a robust_aggregate node's operands past x and w are (-1: not there):
 * x, w, flags, then the centre, then the zeroing's bound and sizes. */
typedef struct fedc__robust_operands {
    int flags, center, bound, sizes;
} fedc__robust_operands;
fedc__robust_operands fedc__robust_operands_of(const fedc__node *n);

/* Records `status` with the current fedc_errmsg() in the program if it has no error
 * yet; returns FEDC_NONE, for builders' error paths. */
fedc_value fedc__program_fail(fedc_program *p, fedc_status status);

/* Copies `bytes` into the program's arena (NULL on out of memory). */
void *fedc__program_copy(fedc_program *p, const void *src, size_t bytes);
const char *fedc__program_strdup(fedc_program *p, const char *s);

/* fedc_program_inline, writing the dst value of every src value to map[src->n]. */
fedc_status fedc__program_inline_map(fedc_program *dst, const fedc_program *src, const fedc_value *args,
                                     fedc_value *map);

/* Appends a copy of src's node n (not an input) to dst, its operands read
 * through `map` (src value -> dst value); a body it runs is cloned into dst, and
 * its type is computed anew from the operands (a constant keeps n's type). */
fedc_value fedc__program_copy_node(fedc_program *dst, const fedc_program *src, const fedc__node *n,
                                   const fedc_value *map);

/* *out = a copy of src in which every node whose op `replaces` accepts is
 * replaced by what `replace` emits from its operands (dst values), in src's
 * bodies too; without `replaces`, fedc_program_clone. */
typedef fedc_value (*fedc__replace_fn)(fedc_program *dst, const fedc__node *n, const fedc_value *args);
fedc_status fedc__program_rewrite(const fedc_program *src, bool (*replaces)(fedc__op), fedc__replace_fn replace,
                                  fedc_program **out);

/* Extends the map m whose results `values` (n of them) are with fn, a
 * program of local values whose n inputs take them: m's body computes fn on
 * them too, as new outputs named as fn's, and results[i] (fn->noutputs of them)
 * are m's new results, @clients: what map(fn, values) would give, computed
 * within m, so that an aggregation reading them streams (src/ir/map_extend.c).
 * A value that is not a result of m but is defined before it, at its placement
 * (a per-client input, a broadcast), becomes an operand of m (a new last input
 * of its body) where it is not one. FEDC_EUNSUPPORTED, nothing recorded or
 * changed, when no value is a result of a map, the results are of several, or
 * another value comes after the map; a failure in the body is recorded in p. */
fedc_status fedc__map_extend(fedc_program *p, const fedc_value *values, int n, const fedc_program *fn,
                             fedc_value *results);

/* Takes ownership of `body` as one of p's bodies; returns its index, or -1 (and
 * destroys it) on failure. */
int fedc__program_add_body(fedc_program *p, fedc_program *body);
static inline const fedc_program *fedc__body(const fedc_program *p, const fedc__node *n) {
    return p->bodies[fedc__attr_int(n, FEDC_ATTR_BODY, 0)];
}

/* Scratch for n values: `small` (of `nsmall`) when they fit, else a heap list; NULL
 * when out of memory. Release with fedc__values_release(v, small). */
static inline fedc_value *fedc__values_scratch(fedc_value *small, int nsmall, int n) {
    return n <= nsmall ? small : fedc__values(n);
}
static inline void fedc__values_release(fedc_value *v, const fedc_value *small) {
    if (v != small) fedc_free(v);
}

/* Emits fold (reverse: steps from length-1 down to 0) on operands (carries...,
 * sequences..., length), then its result nodes. */
fedc_status fedc__fold(fedc_program *p, const fedc_program *body, const fedc_value *operands, int nin, int ncarries,
                       bool reverse, fedc_value *results);

/* Checks every body of p as a map body. */
fedc_status fedc__verify_bodies(const fedc_program *p);

/* True for the ops that run a body program (map, fold): their value is a tuple. */
static inline bool fedc__op_has_body(fedc__op op) { return op == FEDC_OP_MAP || op == FEDC_OP_FOLD; }

/* True for the ops that move values between placements. */
bool fedc__op_is_federated(fedc__op op);

/* Computes the result type of node `n` (its operands' types are read from p) and
 * checks its arity and attributes. The message names the op and the operands. */
fedc_status fedc__infer(const fedc_program *p, const fedc__node *n, fedc_type *out);

/* Resolves a possibly negative axis against `rank`; -1 if out of range. */
int fedc__axis(int64_t axis, int rank);

/* "%4 (matmul)" — how messages name a node. buf of 48 bytes suffices. */
const char *fedc__node_label(const fedc_program *p, fedc_value v, char *buf, size_t size);

/* SAME/VALID padding as explicit pads {top, bottom, left, right}, and the output
 * size of a window op. */
void fedc__same_pads(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                     fedc_padding padding, int64_t pads[4]);
int64_t fedc__window_out(int64_t in, int64_t k, int64_t stride, int64_t pad_lo, int64_t pad_hi);

#endif /* FEDC_IR_H */
