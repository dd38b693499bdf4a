/* The MLIR emitter: a growing text with sticky errors, types and names, splat
 * constants and linalg.generic, which most lowerings are. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "export/mlir.h"

void fedc__mlir_printf(fedc__mlir *m, const char *fmt, ...) {
    if (m->st) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = m->cap - m->len;
        int n = vsnprintf(m->buf ? m->buf + m->len : NULL, m->buf ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            m->st = fedc_error(FEDC_EINVAL, "export: cannot format the module text");
            return;
        }
        if (m->buf && (size_t)n < room) {
            m->len += (size_t)n;
            return;
        }
        size_t cap = m->cap ? m->cap : 1 << 16;
        while (cap - m->len <= (size_t)n) cap *= 2;
        char *grown = fedc_realloc(m->buf, cap);
        if (!grown) {
            m->st = fedc_error(FEDC_ENOMEM, "export: out of memory for %zu bytes of MLIR", cap);
            return;
        }
        m->buf = grown, m->cap = cap;
    }
}

fedc_status fedc__mlir_fail(fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v, fedc_status st, const char *fmt,
                            ...) {
    if (m->st) return m->st;
    char what[512], label[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    m->st = fedc_error(st, "export to %s: %s%s: %s", m->target ? m->target : "mlir", fedc__node_label(s->p, v, label, sizeof label),
                       s->id ? " (in a body)" : "", what);
    return m->st;
}

void fedc__mlir_hex(const uint8_t *data, size_t n, char *out) {
    static const char digits[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) out[2 * i] = digits[data[i] >> 4], out[2 * i + 1] = digits[data[i] & 15];
    out[2 * n] = 0;
}

const char *fedc__mlir_tmp(fedc__mlir *m, char *buf) {
    snprintf(buf, 24, "%%t%d", m->tmp++);
    return buf;
}

const char *fedc__mlir_elem(fedc_dtype dt) {
    switch (dt) {
    case FEDC_F32: return "f32";
    case FEDC_F64: return "f64";
    case FEDC_I32: return "i32";
    case FEDC_U8: return "i8";
    case FEDC_BOOL: return "i1";
    default: return "?";
    }
}

const char *fedc__mlir_tensor(const fedc__mlir *m, const fedc_type *t, bool clients, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "tensor<");
    if (clients) n += (size_t)snprintf(buf + n, size - n, "%dx", m->clients);
    for (int i = 0; i < t->rank && n < size; i++) n += (size_t)snprintf(buf + n, size - n, "%lldx", (long long)t->dims[i]);
    if (n < size) snprintf(buf + n, size - n, "%s>", fedc__mlir_elem(t->dtype));
    return buf;
}

bool fedc__mlir_has_clients(const fedc__mlir_scope *s, fedc_value v) {
    fedc_placement pl = s->p->nodes[v].type.placement;
    return s->batched || pl == FEDC_CLIENTS || pl == FEDC_GROUPS;
}

bool fedc__mlir_level_is_groups(const fedc__mlir_scope *s, fedc_value v) {
    const fedc__node *n = &s->p->nodes[v];
    fedc_placement pl = n->type.placement;
    if (pl != FEDC_CLIENTS && pl != FEDC_GROUPS && n->nin > 0) pl = s->p->nodes[n->in[0]].type.placement;
    return pl == FEDC_GROUPS;
}

int fedc__mlir_level(const fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v) {
    return fedc__mlir_level_is_groups(s, v) ? m->groups : m->cohort;
}

const char *fedc__mlir_type_of(const fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v, char *buf, size_t size) {
    fedc__mlir at = *m; /* outside a map's body, v's own level's axis (the node lowered may be a level's step) */
    if (!s->batched) at.clients = s->p->nodes[v].type.placement == FEDC_GROUPS ? m->groups : m->cohort;
    return fedc__mlir_tensor(&at, &s->p->nodes[v].type, fedc__mlir_has_clients(s, v), buf, size);
}

const char *fedc__mlir_stacked_type(const fedc__mlir *m, const fedc_program *body, int output, int64_t steps, bool clients,
                                    char *buf) {
    fedc_type t = body->nodes[body->outputs[output].value].type;
    memmove(t.dims + 1, t.dims, sizeof t.dims - sizeof t.dims[0]);
    t.dims[0] = steps, t.rank++;
    return fedc__mlir_tensor(m, &t, clients, buf, 160);
}

/* A scalar literal of dtype dt in MLIR's syntax (floats exactly, in hex). */
const char *fedc__mlir_literal(fedc_dtype dt, double value, char *buf, size_t size) {
    if (dt == FEDC_F32) {
        float f = (float)value;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        snprintf(buf, size, "0x%08X", bits);
    } else if (dt == FEDC_F64) {
        uint64_t bits;
        memcpy(&bits, &value, 8);
        snprintf(buf, size, "0x%016llX", (unsigned long long)bits);
    } else if (dt == FEDC_BOOL) {
        snprintf(buf, size, "%s", value != 0 ? "true" : "false");
    } else {
        snprintf(buf, size, "%lld", (long long)value);
    }
    return buf;
}

const char *fedc__mlir_tensor_const(fedc__mlir *m, char *name, const char *literal, const char *type) {
    if (!m->hoisted) {
        fedc__mlir_tmp(m, name);
        fedc__mlir_printf(m, "    %s = arith.constant dense<%s> : %s\n", name, literal, type);
        return name;
    }
    snprintf(name, 24, "%%const%d", m->nhoisted++);
    fedc__mlir_printf(m->hoisted, ", %s: %s", name, type);
    fedc__mlir_printf(m->values, "  //   %s = dense<%s> : %s\n", name, literal, type);
    m->st = m->st ? m->st : m->hoisted->st ? m->hoisted->st : m->values->st;
    return name;
}

void fedc__mlir_all_reduce(fedc__mlir *m, const char *x, const char *type, const char *axes, const char *result) {
    fedc__mlir_printf(m, "    %s = mesh.all_reduce %s on @clients_mesh mesh_axes = [%s] : %s -> %s\n", result, x, axes,
                      type, type);
}

int fedc__mlir_whole_count(const fedc__mlir *m, bool groups) {
    if (!m->mesh_rows) return groups ? m->groups : m->cohort;
    return groups ? m->groups * m->mesh_rows : m->cohort * m->mesh_rows * m->mesh_cols;
}

const char *fedc__mlir_annotate_use(fedc__mlir *m, const char *x, const char *type, const char *axes, char *out) {
    if (!m->hoisted) return x; /* not sharded */
    fedc__mlir_tmp(m, out);
    fedc__mlir_printf(m, "    %s = mesh.shard %s to <@clients_mesh, [[%s]]> annotate_for_users : %s\n", out, x, axes, type);
    return out;
}

const char *fedc__mlir_split_use(fedc__mlir *m, const char *x, const char *type, char *out) {
    return fedc__mlir_annotate_use(m, x, type, "0", out);
}

const char *fedc__mlir_replicated_use(fedc__mlir *m, const char *x, const char *type, char *out) {
    return fedc__mlir_annotate_use(m, x, type, "", out);
}

const char *fedc__mlir_splat(fedc__mlir *m, const fedc__mlir_scope *s, fedc_value v, double value, char *name) {
    char type[160], lit[32];
    fedc_dtype dt = s->p->nodes[v].type.dtype;
    if (isinf(value) && value < 0 && dt == FEDC_I32) value = INT32_MIN;
    return fedc__mlir_tensor_const(m, name, fedc__mlir_literal(dt, value, lit, sizeof lit),
                                   fedc__mlir_type_of(m, s, v, type, sizeof type));
}

/* "affine_map<(d0, d1) -> (d1)>" for `rank` loops and the results `exprs`. */
static void print_map(fedc__mlir *m, int rank, const char *exprs) {
    fedc__mlir_printf(m, "affine_map<(");
    for (int i = 0; i < rank; i++) fedc__mlir_printf(m, "%sd%d", i ? ", " : "", i);
    fedc__mlir_printf(m, ") -> (%s)>", exprs);
}

/* Sharded, a generic without loops gets one: LLVM 19's sharding interface
 * rejects a linalg.generic of no loops ("invalid sharding interface
 * implementation"), so it runs one reduction step over a unit operand, its last
 * input, that the body never reads. */
void fedc__mlir_generic_begin(fedc__mlir *m, const fedc__mlir_generic *g) {
    bool dummy = m->hoisted && g->rank == 0;
    char one[24] = "";
    if (dummy) { /* whole on every device: unannotated, LLVM 19's propagation gives it a broken sharding */
        char hoisted[24];
        fedc__mlir_replicated_use(m, fedc__mlir_tensor_const(m, hoisted, "1", "tensor<1xi8>"), "tensor<1xi8>", one);
    }
    fedc__mlir_printf(m, "    %s = linalg.generic {indexing_maps = [", g->result_name);
    for (int i = 0; i < g->nin; i++) {
        print_map(m, g->rank + dummy, g->maps[i]);
        fedc__mlir_printf(m, ", ");
    }
    if (dummy) print_map(m, 1, "d0"), fedc__mlir_printf(m, ", ");
    print_map(m, g->rank + dummy, g->out_map);
    fedc__mlir_printf(m, "], iterator_types = [");
    for (int i = 0; i < g->rank; i++)
        fedc__mlir_printf(m, "%s\"%s\"", i ? ", " : "", g->iters[i] == 'r' ? "reduction" : "parallel");
    fedc__mlir_printf(m, "%s]}", dummy ? "\"reduction\"" : "");
    if (g->nin || dummy) {
        fedc__mlir_printf(m, " ins(");
        for (int i = 0; i < g->nin; i++) fedc__mlir_printf(m, "%s%s", i ? ", " : "", g->in[i]);
        if (dummy) fedc__mlir_printf(m, "%s%s", g->nin ? ", " : "", one);
        fedc__mlir_printf(m, " : ");
        for (int i = 0; i < g->nin; i++) fedc__mlir_printf(m, "%s%s", i ? ", " : "", g->in_type[i]);
        if (dummy) fedc__mlir_printf(m, "%stensor<1xi8>", g->nin ? ", " : "");
        fedc__mlir_printf(m, ")");
    }
    fedc__mlir_printf(m, " outs(%s : %s) {\n    ^bb0(", g->init, g->out_type);
    for (int i = 0; i < g->nin; i++) fedc__mlir_printf(m, "%%in%d: %s, ", i, g->in_elem[i]);
    if (dummy) fedc__mlir_printf(m, "%%unit: i8, ");
    fedc__mlir_printf(m, "%%out: %s):\n", g->out_elem);
}

void fedc__mlir_generic_end(fedc__mlir *m, const fedc__mlir_generic *g, const char *result) {
    fedc__mlir_printf(m, "      linalg.yield %s : %s\n    } -> %s\n", result, g->out_elem, g->out_type);
}

void fedc__mlir_fold_needed(const fedc_program *body, int k, bool *want, bool *live) {
    for (bool grew = true; grew;) {
        grew = false;
        fedc__mlir_liveness(body, want, live, true);
        for (int i = 0; i < k; i++)
            if (!want[i] && live[fedc_program_input(body, i)]) want[i] = grew = true;
    }
}

/* Marks the inputs of map or fold node v of p that its live results need: a
 * map's that its body reads for them; an unrolled fold's the carries' first
 * values that a step needs, the sequences its body reads, and the lengths. */
static fedc_status body_inputs_live(const fedc_program *p, fedc_value v, bool *live) {
    const fedc__node *n = &p->nodes[v];
    const fedc_program *body = fedc__body(p, n);
    bool *want = fedc__list(body->noutputs + 1, sizeof *want), *inner = fedc__list(body->n + 1, sizeof *inner);
    if (!want || !inner) return fedc_free(want), fedc_free(inner), FEDC_ENOMEM;
    for (fedc_value u = v + 1; u < p->n; u++) {
        const fedc__node *r = &p->nodes[u];
        int k = (int)fedc__attr_int(r, FEDC_ATTR_INDEX, 0);
        if (r->op == FEDC_OP_RESULT && r->in[0] == v && live[u] && k >= 0 && k < body->noutputs) want[k] = true;
    }
    bool fold = n->op == FEDC_OP_FOLD;
    if (fold) fedc__mlir_fold_needed(body, (int)fedc__attr_int(n, FEDC_ATTR_CARRIES, 0), want, inner);
    else fedc__mlir_liveness(body, want, inner, true);
    for (int i = 0; i < n->nin; i++)
        if (fold && i == n->nin - 1) live[n->in[i]] = true; /* the lengths */
        else if (fold && i < (int)fedc__attr_int(n, FEDC_ATTR_CARRIES, 0)) live[n->in[i]] |= want[i];
        else live[n->in[i]] |= inner[fedc_program_input(body, i)];
    fedc_free(want), fedc_free(inner);
    return FEDC_OK;
}

void fedc__mlir_liveness(const fedc_program *p, const bool *out_live, bool *live, bool unrolled) {
    memset(live, 0, (size_t)p->n * sizeof *live);
    for (int i = 0; i < p->noutputs; i++)
        if (!out_live || out_live[i]) live[p->outputs[i].value] = true;
    for (int v = p->n - 1; v >= 0; v--) { /* operands come before their users */
        if (!live[v]) continue;
        if (unrolled && fedc__op_has_body(p->nodes[v].op) && !body_inputs_live(p, v, live)) continue;
        for (int i = 0; i < p->nodes[v].nin; i++) live[p->nodes[v].in[i]] = true;
    }
}

fedc_status fedc__mlir_scope_init(fedc__mlir_scope *s, const fedc_program *p, bool batched, int id) {
    s->p = p;
    s->batched = batched;
    s->id = id;
    s->out_live = NULL;
    s->live = NULL;
    s->name = fedc__list(p->n, sizeof *s->name);
    return s->name ? FEDC_OK : FEDC_ENOMEM;
}

void fedc__mlir_scope_free(fedc__mlir_scope *s) {
    fedc_free(s->name);
    s->name = NULL;
}

fedc_status fedc__mlir_finish(fedc__mlir *m, fedc__mlir_scope *s, fedc_status st, char **out) {
    st = st ? st : m->st;
    fedc__mlir_scope_free(s);
    if (st) {
        fedc_free(m->buf);
        return st;
    }
    *out = m->buf;
    return FEDC_OK;
}

void fedc__mlir_for_begin(fedc__mlir *m, int64_t steps, int n, const char *const *inits, const char *const *types,
                          char *result, char *t, char *ti, char (*iter)[24]) {
    char c0[24], c1[24], cs[24];
    fedc__mlir_tmp(m, c0), fedc__mlir_tmp(m, c1), fedc__mlir_tmp(m, cs);
    fedc__mlir_printf(m, "    %s = arith.constant 0 : index\n    %s = arith.constant 1 : index\n"
                      "    %s = arith.constant %lld : index\n", c0, c1, cs, (long long)steps);
    fedc__mlir_tmp(m, result), fedc__mlir_tmp(m, t);
    if (ti) fedc__mlir_tmp(m, ti);
    fedc__mlir_printf(m, "    %s:%d = scf.for %s = %s to %s step %s iter_args(", result, n, t, c0, cs, c1);
    for (int i = 0; i < n; i++) {
        fedc__mlir_tmp(m, iter[i]);
        fedc__mlir_printf(m, "%s%s = %s", i ? ", " : "", iter[i], inits[i]);
    }
    fedc__mlir_printf(m, ") -> (");
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, "%s%s", i ? ", " : "", types[i]);
    fedc__mlir_printf(m, ") {\n");
    if (ti) fedc__mlir_printf(m, "      %s = arith.index_cast %s : index to i32\n", ti, t);
}

void fedc__mlir_for_end(fedc__mlir *m, int n, char (*values)[24], const char *const *types) {
    fedc__mlir_printf(m, "      scf.yield");
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, "%s %s", i ? "," : "", values[i]);
    fedc__mlir_printf(m, " : ");
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, "%s%s", i ? ", " : "", types[i]);
    fedc__mlir_printf(m, "\n    }\n");
}
