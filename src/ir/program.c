/* Programs: node storage, the sticky builder error, outputs, inspection, and the
 * whole-program transforms that only move nodes around (inline, clone, dce). */
#include <stdarg.h>
#include <string.h>

#include "ir/ir.h"

const fedc__op_info fedc__ops[FEDC_OP_COUNT] = {
#define FEDC_OP(id, name, min_in, max_in) [FEDC_OP_##id] = {name, min_in, max_in},
#include "ir/ops.def"
#undef FEDC_OP
};

const fedc__attr_info fedc__attr_infos[FEDC_ATTR_KEY_COUNT] = {
#define FEDC_ATTR(id, name, kind) [FEDC_ATTR_##id] = {name, FEDC_KIND_##kind},
#include "ir/attrs.def"
#undef FEDC_ATTR
};

/* ------------------------------------------------------------- lifecycle -- */

fedc_status fedc_program_create(fedc_program **out) {
    *out = NULL;
    fedc_program *p = fedc_calloc(1, sizeof *p);
    if (!p) return fedc_error(FEDC_ENOMEM, "program_create: out of memory");
    fedc_arena_init(&p->arena, 16 * 1024);
    *out = p;
    return FEDC_OK;
}

void fedc_program_destroy(fedc_program *p) {
    if (!p) return;
    for (int i = 0; i < p->nbodies; i++) fedc_program_destroy(p->bodies[i]);
    fedc_free(p->bodies);
    fedc_free(p->nodes);
    fedc_free(p->outputs);
    fedc_arena_release(&p->arena);
    fedc_free(p);
}

fedc_status fedc_program_status(const fedc_program *p) {
    if (p->status) fedc_error(p->status, "%s", p->errmsg);
    return p->status;
}

fedc_value fedc__program_fail(fedc_program *p, fedc_status status) {
    if (!p->status) {
        p->status = status;
        snprintf(p->errmsg, sizeof p->errmsg, "%s", fedc_errmsg());
    }
    return FEDC_NONE;
}

fedc_value fedc_program_fail(fedc_program *p, fedc_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fedc_verror(status, fmt, ap);
    va_end(ap);
    return fedc__program_fail(p, status);
}

void *fedc__program_copy(fedc_program *p, const void *src, size_t bytes) {
    void *dst = fedc_arena_alloc(&p->arena, bytes ? bytes : 1, 16);
    if (dst && bytes) memcpy(dst, src, bytes);
    return dst;
}

const char *fedc__program_strdup(fedc_program *p, const char *s) {
    return fedc__program_copy(p, s, strlen(s) + 1);
}

/* ---------------------------------------------------------------- nodes -- */

int fedc__program_add_body(fedc_program *p, fedc_program *body) {
    if (p->nbodies == p->cap_bodies) {
        int cap = p->cap_bodies ? 2 * p->cap_bodies : 4;
        fedc_program **bodies = fedc_realloc(p->bodies, (size_t)cap * sizeof *bodies);
        if (!bodies) {
            fedc_program_destroy(body);
            fedc_error(FEDC_ENOMEM, "program: cannot hold %d bodies", cap);
            return -1;
        }
        p->bodies = bodies;
        p->cap_bodies = cap;
    }
    p->bodies[p->nbodies] = body;
    return p->nbodies++;
}

bool fedc__op_is_federated(fedc__op op) {
    return op == FEDC_OP_BROADCAST || op == FEDC_OP_SUM || op == FEDC_OP_MEAN || op == FEDC_OP_WEIGHTED_MEAN ||
           op == FEDC_OP_MAP || op == FEDC_OP_NUM_CLIENTS || op == FEDC_OP_ROBUST_AGGREGATE ||
           op == FEDC_OP_BROADCAST_DOWN || op == FEDC_OP_SUM_UP || op == FEDC_OP_MEAN_UP ||
           op == FEDC_OP_WEIGHTED_MEAN_UP || op == FEDC_OP_NUM_GROUPS || op == FEDC_OP_GROUP_SIZE;
}

static fedc_status grow_nodes(fedc_program *p) {
    if (p->n < p->cap) return FEDC_OK;
    int cap = p->cap ? p->cap * 2 : 64;
    fedc__node *nodes = fedc_realloc(p->nodes, (size_t)cap * sizeof *nodes);
    if (!nodes) return fedc_error(FEDC_ENOMEM, "program: cannot grow to %d operations", cap);
    p->nodes = nodes;
    p->cap = cap;
    return FEDC_OK;
}

/* Operands must be values already in the program: this is what keeps every
 * program acyclic and free of dangling references by construction. */
static fedc_status check_operands(const fedc_program *p, fedc__op op, const fedc_value *in, int nin) {
    const fedc__op_info *info = &fedc__ops[op];
    if (nin < info->min_inputs || nin > info->max_inputs) {
        return fedc_error(FEDC_EINVAL, "%s: takes %d to %d operands, got %d", info->name,
                          info->min_inputs, info->max_inputs, nin);
    }
    for (int i = 0; i < nin; i++) {
        if (in[i] < 0 || in[i] >= p->n) {
            return fedc_error(FEDC_EINVAL, "%s: operand %d is %%%d, which is not a value of this program (it has %d)",
                              info->name, i, in[i], p->n);
        }
    }
    return FEDC_OK;
}

fedc_value fedc__emit(fedc_program *p, fedc__op op, const fedc_value *in, int nin,
                      const fedc__attr *attrs, int nattr, const fedc_type *type) {
    if (p->status) return FEDC_NONE;
    for (int i = 0; i < nin; i++)
        if (in[i] == FEDC_NONE) return FEDC_NONE; /* an earlier call failed; keep its error */
    if (check_operands(p, op, in, nin)) return fedc__program_fail(p, FEDC_EINVAL);
    fedc_status st = grow_nodes(p);
    if (st) return fedc__program_fail(p, st);

    fedc__node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.nin = nin;
    n.nattr = nattr;
    if (nattr) memcpy(n.attr, attrs, (size_t)nattr * sizeof *attrs);
    if (nin) {
        n.in = fedc__program_copy(p, in, (size_t)nin * sizeof *in);
        if (!n.in) return fedc__program_fail(p, FEDC_ENOMEM);
    }
    if (type) n.type = *type;
    if (op != FEDC_OP_INPUT && op != FEDC_OP_CONSTANT) {
        st = fedc__infer(p, &n, &n.type);
        if (st) return fedc__program_fail(p, st);
    }
    p->nodes[p->n] = n;
    return p->n++;
}

/* -------------------------------------------------------------- outputs -- */

fedc_status fedc_program_output(fedc_program *p, const char *name, fedc_value v) {
    if (p->status) return fedc_program_status(p);
    if (v < 0 || v >= p->n)
        return fedc_error(FEDC_EINVAL, "program_output \"%s\": %%%d is not a value of this program", name, v);
    if (fedc_program_find_output(p, name) != FEDC_NONE)
        return fedc_error(FEDC_EINVAL, "program_output: an output is already named \"%s\"", name);
    if (p->nodes[v].type.dtype == FEDC__TUPLE)
        return fedc_error(FEDC_ETYPE, "program_output \"%s\": %%%d is a %s's tuple of results; output its results",
                          name, v, fedc__ops[p->nodes[v].op].name);
    if (p->noutputs == p->cap_outputs) {
        int cap = p->cap_outputs ? 2 * p->cap_outputs : 8;
        fedc__output *o = fedc_realloc(p->outputs, (size_t)cap * sizeof *o);
        if (!o) return fedc_error(FEDC_ENOMEM, "program_output: out of memory");
        p->outputs = o;
        p->cap_outputs = cap;
    }
    const char *copy = fedc__program_strdup(p, name);
    if (!copy) return fedc_error(FEDC_ENOMEM, "program_output: out of memory");
    p->outputs[p->noutputs++] = (fedc__output){copy, v};
    return FEDC_OK;
}

/* ----------------------------------------------------------- inspection -- */

int fedc_program_size(const fedc_program *p) { return p->n; }
int fedc_program_num_outputs(const fedc_program *p) { return p->noutputs; }

int fedc_program_num_inputs(const fedc_program *p) {
    int count = 0;
    for (int i = 0; i < p->n; i++) count += p->nodes[i].op == FEDC_OP_INPUT;
    return count;
}

fedc_value fedc_program_input(const fedc_program *p, int i) {
    for (int v = 0; v < p->n; v++)
        if (p->nodes[v].op == FEDC_OP_INPUT && i-- == 0) return v;
    return FEDC_NONE;
}

const char *fedc_program_input_name(const fedc_program *p, int i) {
    fedc_value v = fedc_program_input(p, i);
    return v == FEDC_NONE ? NULL : p->nodes[v].name;
}

fedc_value fedc_program_output_value(const fedc_program *p, int i) {
    return i >= 0 && i < p->noutputs ? p->outputs[i].value : FEDC_NONE;
}

const char *fedc_program_output_name(const fedc_program *p, int i) {
    return i >= 0 && i < p->noutputs ? p->outputs[i].name : NULL;
}

fedc_value fedc_program_find_input(const fedc_program *p, const char *name) {
    for (int v = 0; v < p->n; v++)
        if (p->nodes[v].op == FEDC_OP_INPUT && strcmp(p->nodes[v].name, name) == 0) return v;
    return FEDC_NONE;
}

fedc_value fedc_program_find_output(const fedc_program *p, const char *name) {
    for (int i = 0; i < p->noutputs; i++)
        if (strcmp(p->outputs[i].name, name) == 0) return p->outputs[i].value;
    return FEDC_NONE;
}

fedc_type fedc_value_type(const fedc_program *p, fedc_value v) {
    if (v < 0 || v >= p->n) return fedc_type_scalar(FEDC_F32);
    return p->nodes[v].type;
}

const char *fedc_value_op_name(const fedc_program *p, fedc_value v) {
    if (v < 0 || v >= p->n) return "?";
    return fedc__ops[p->nodes[v].op].name;
}

const char *fedc__node_label(const fedc_program *p, fedc_value v, char *buf, size_t size) {
    snprintf(buf, size, "%%%d (%s)", v, fedc_value_op_name(p, v));
    return buf;
}

/* ------------------------------------------------------------ attributes -- */

const fedc__attr *fedc__attr_find(const fedc__node *n, fedc__attr_key key) {
    for (int i = 0; i < n->nattr; i++)
        if (n->attr[i].key == key) return &n->attr[i];
    return NULL;
}

int64_t fedc__attr_int(const fedc__node *n, fedc__attr_key key, int64_t dflt) {
    const fedc__attr *a = fedc__attr_find(n, key);
    return a && a->n ? a->v[0] : dflt;
}

double fedc__attr_float(const fedc__node *n, fedc__attr_key key, double dflt) {
    const fedc__attr *a = fedc__attr_find(n, key);
    return a ? a->f : dflt;
}

const int64_t *fedc__attr_ints(const fedc__node *n, fedc__attr_key key, int *count) {
    const fedc__attr *a = fedc__attr_find(n, key);
    *count = a ? a->n : 0;
    return a ? a->v : NULL;
}

fedc__attr fedc__attr_make_int(fedc__attr_key key, int64_t v) {
    fedc__attr a;
    memset(&a, 0, sizeof a);
    a.key = (uint8_t)key;
    a.n = 1;
    a.v[0] = v;
    return a;
}

fedc__attr fedc__attr_make_ints(fedc__attr_key key, int n, const int64_t *v) {
    fedc__attr a;
    memset(&a, 0, sizeof a);
    a.key = (uint8_t)key;
    a.n = (uint8_t)(n < 0 ? 0 : n > FEDC_MAX_RANK ? FEDC_MAX_RANK : n);
    for (int i = 0; i < a.n; i++) a.v[i] = v[i];
    return a;
}

fedc__attr fedc__attr_make_float(fedc__attr_key key, double f) {
    fedc__attr a;
    memset(&a, 0, sizeof a);
    a.key = (uint8_t)key;
    a.f = f;
    return a;
}

/* ------------------------------------------------------------ transforms -- */

/* A map or fold node with operands `in`: its body is cloned into dst. */
static fedc_value copy_body_node(fedc_program *dst, const fedc_program *src, const fedc__node *n, const fedc_value *in) {
    if (dst->status) return FEDC_NONE;
    fedc_program *body;
    fedc_status st = fedc_program_clone(fedc__body(src, n), &body);
    if (st) return fedc__program_fail(dst, st);
    int index = fedc__program_add_body(dst, body);
    if (index < 0) return fedc__program_fail(dst, FEDC_ENOMEM);
    fedc__attr attrs[FEDC__MAX_ATTRS];
    for (int i = 0; i < n->nattr; i++)
        attrs[i] = n->attr[i].key == FEDC_ATTR_BODY ? fedc__attr_make_int(FEDC_ATTR_BODY, index) : n->attr[i];
    return fedc__emit(dst, n->op, in, n->nin, attrs, n->nattr, NULL);
}

/* Appends a copy of node `n` of `src` whose operands are already mapped to dst
 * values by `map`. Inputs are never copied (callers map them). A map node's body
 * is cloned into dst. */
fedc_value fedc__program_copy_node(fedc_program *dst, const fedc_program *src, const fedc__node *n,
                            const fedc_value *map) {
    if (n->op == FEDC_OP_CONSTANT) return fedc_constant(dst, n->type, n->data);
    fedc_value small[16], *in = fedc__values_scratch(small, 16, n->nin);
    if (!in) {
        fedc_error(FEDC_ENOMEM, "program: out of memory for %d operands", n->nin);
        return fedc__program_fail(dst, FEDC_ENOMEM);
    }
    for (int i = 0; i < n->nin; i++) in[i] = map[n->in[i]];
    fedc_value v = fedc__op_has_body(n->op) ? copy_body_node(dst, src, n, in)
                                            : fedc__emit(dst, n->op, in, n->nin, n->attr, n->nattr, &n->type);
    fedc__values_release(in, small);
    return v;
}

fedc_status fedc__program_inline_map(fedc_program *dst, const fedc_program *src, const fedc_value *args,
                                     fedc_value *map) {
    if (dst->status) return fedc_program_status(dst);
    /* dst may be src itself: copy what src holds now, reading each node by value
     * since appending may move the node array. */
    int count = src->n, input_index = 0;
    for (int v = 0; v < count; v++) {
        const fedc__node node = src->nodes[v], *n = &node;
        if (n->op != FEDC_OP_INPUT) {
            map[v] = fedc__program_copy_node(dst, src, n, map);
            continue;
        }
        fedc_value a = args[input_index++];
        map[v] = a;
        if (a < 0 || a >= dst->n) {
            if (a == FEDC_NONE && dst->status) continue; /* an earlier builder error */
            fedc_error(FEDC_EINVAL, "program_inline: argument for input \"%s\" is not a value of the program", n->name);
            fedc__program_fail(dst, FEDC_EINVAL);
            continue;
        }
        fedc_type at = dst->nodes[a].type;
        if (!fedc_type_equal(&at, &n->type)) {
            char want[64], got[64];
            fedc_error(FEDC_ETYPE, "program_inline: argument for input \"%s\" is %s, expected %s", n->name,
                       fedc_type_str(&at, got, sizeof got), fedc_type_str(&n->type, want, sizeof want));
            fedc__program_fail(dst, FEDC_ETYPE);
        }
    }
    return fedc_program_status(dst);
}

fedc_status fedc_program_inline(fedc_program *dst, const fedc_program *src, const fedc_value *args,
                                fedc_value *results) {
    for (int i = 0; i < src->noutputs; i++) results[i] = FEDC_NONE;
    if (dst->status) return fedc_program_status(dst);
    fedc_value *map = fedc_malloc((size_t)(src->n ? src->n : 1) * sizeof *map);
    if (!map) {
        fedc_error(FEDC_ENOMEM, "program_inline: out of memory");
        fedc__program_fail(dst, FEDC_ENOMEM);
        return FEDC_ENOMEM;
    }
    fedc_status st = fedc__program_inline_map(dst, src, args, map);
    for (int i = 0; i < src->noutputs; i++) results[i] = st ? FEDC_NONE : map[src->outputs[i].value];
    fedc_free(map);
    return st;
}

/* What replaces node n: replace() applied to its operands read through map. */
static fedc_value replace_node(fedc_program *dst, const fedc__node *n, const fedc_value *map, fedc__replace_fn replace) {
    fedc_value small[16], *in = fedc__values_scratch(small, 16, n->nin);
    if (!in) {
        fedc_error(FEDC_ENOMEM, "program: out of memory for %d operands", n->nin);
        return fedc__program_fail(dst, FEDC_ENOMEM);
    }
    for (int i = 0; i < n->nin; i++) in[i] = map[n->in[i]];
    fedc_value v = replace(dst, n, in);
    fedc__values_release(in, small);
    return v;
}

fedc_status fedc__program_rewrite(const fedc_program *src, bool (*replaces)(fedc__op), fedc__replace_fn replace,
                                  fedc_program **out) {
    *out = NULL;
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_value *map = fedc_malloc((size_t)(src->n ? src->n : 1) * sizeof *map);
    if (!map) {
        fedc_program_destroy(p);
        return fedc_error(FEDC_ENOMEM, "program_clone: out of memory");
    }
    for (int v = 0; v < src->n; v++) {
        const fedc__node *n = &src->nodes[v];
        if (n->op == FEDC_OP_INPUT) map[v] = fedc_input(p, n->name, n->type);
        else if (replaces && replaces(n->op)) map[v] = replace_node(p, n, map, replace);
        else map[v] = fedc__program_copy_node(p, src, n, map);
    }
    st = fedc_program_status(p);
    for (int i = 0; !st && i < src->noutputs; i++)
        st = fedc_program_output(p, src->outputs[i].name, map[src->outputs[i].value]);
    fedc_free(map);
    /* the bodies were cloned whole by their map and fold nodes: rewrite them too */
    for (int b = 0; !st && replaces && b < p->nbodies; b++) {
        fedc_program *body;
        st = fedc__program_rewrite(p->bodies[b], replaces, replace, &body);
        if (!st) fedc_program_destroy(p->bodies[b]), p->bodies[b] = body;
    }
    if (st) {
        fedc_program_destroy(p);
        return st;
    }
    *out = p;
    return FEDC_OK;
}

fedc_status fedc_program_clone(const fedc_program *src, fedc_program **out) {
    return fedc__program_rewrite(src, NULL, NULL, out);
}

fedc_status fedc_program_dce(fedc_program *p) {
    if (p->status) return fedc_program_status(p);
    if (p->n == 0) return FEDC_OK;
    fedc_value *map = fedc_malloc((size_t)p->n * sizeof *map);
    if (!map) return fedc_error(FEDC_ENOMEM, "program_dce: out of memory");
    /* Mark live nodes backwards from the outputs (operands always come earlier). */
    for (int v = 0; v < p->n; v++) map[v] = p->nodes[v].op == FEDC_OP_INPUT;
    for (int i = 0; i < p->noutputs; i++) map[p->outputs[i].value] = 1;
    for (int v = p->n - 1; v >= 0; v--)
        if (map[v])
            for (int i = 0; i < p->nodes[v].nin; i++) map[p->nodes[v].in[i]] = 1;
    /* Compact in place and renumber operands. */
    int kept = 0;
    for (int v = 0; v < p->n; v++) {
        if (!map[v]) {
            map[v] = FEDC_NONE;
            continue;
        }
        fedc__node n = p->nodes[v];
        for (int i = 0; i < n.nin; i++) n.in[i] = map[n.in[i]];
        p->nodes[kept] = n;
        map[v] = kept++;
    }
    for (int i = 0; i < p->noutputs; i++) p->outputs[i].value = map[p->outputs[i].value];
    p->n = kept;
    fedc_free(map);
    return FEDC_OK;
}
