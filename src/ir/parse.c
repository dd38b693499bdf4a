/* The text format, parsing side: a hand-written line parser for the format that
 * src/ir/print.c writes and specifies (also docs/text-format.md); its tokens are
 * read by src/ir/parse_lex.c. Each line is parsed completely, then turned into a
 * node through the same calls a builder makes (fedc_input, fedc_constant,
 * fedc__emit, fedc_program_output), so the type rules check parsed programs
 * exactly as they check built ones; the type the text declares must then equal
 * the type the rule computed. A `body N {` ... `}` block is read with the same
 * grammar into a program of its own, which becomes body N of the program around
 * it. The first error stops the parse: syntax errors read "line L, column C:
 * expected X, found 'Y'", errors from a type rule "line L: <the rule's message>".
 * Every error is FEDC_EPARSE except running out of memory, which stays
 * FEDC_ENOMEM, and no error path leaks. */
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text.h"

/* How deep bodies may nest (a map's body may fold, a fold's body fold again).
 * Each level is a recursion of the parser, so deeper text is refused rather than
 * followed without bound. */
#define MAX_BODY_DEPTH 16

/* A builder call failed: its error is sticky in the program. */
static fedc_status builder_error(const fedc__parser *ps) {
    return fedc__lex_with_line(ps, fedc_program_status(ps->p));
}

/* ------------------------------------------------------------- attributes -- */

static fedc_status parse_int_list(fedc__parser *ps, fedc__attr_key key, fedc__attr *a) {
    int64_t v[FEDC_MAX_RANK];
    int n = 0;
    bool more = !fedc__lex_accept(ps, ']');
    while (more) {
        const char *at;
        int64_t x;
        fedc_status st = fedc__lex_int(ps, &x, "an integer", &at);
        if (st) return st;
        if (n == FEDC_MAX_RANK) return fedc__lex_error_at(ps, at, "a list has at most %d integers", FEDC_MAX_RANK);
        v[n++] = x;
        more = fedc__lex_accept(ps, ',');
        if (!more && (st = fedc__lex_expect(ps, ']', "',' or ']'")) != FEDC_OK) return st;
    }
    *a = fedc__attr_make_ints(key, n, v);
    return FEDC_OK;
}

/* The value of attribute `key`, in the syntax of the key's kind. */
static fedc_status parse_attr_value(fedc__parser *ps, fedc__attr_key key, fedc__attr *a) {
    const fedc__attr_info *info = &fedc__attr_infos[key];
    char what[64];
    int64_t v = 0;
    double f = 0;
    fedc_dtype dt;
    fedc_status st;
    switch (info->kind) {
    case FEDC_KIND_INTS:
        snprintf(what, sizeof what, "a list of integers for '%s'", info->name);
        return fedc__lex_accept(ps, '[') ? parse_int_list(ps, key, a) : fedc__lex_expected(ps, what);
    case FEDC_KIND_INT:
        snprintf(what, sizeof what, "an integer for '%s'", info->name);
        st = fedc__lex_int(ps, &v, what, NULL);
        *a = fedc__attr_make_int(key, v);
        return st;
    case FEDC_KIND_FLOAT:
        snprintf(what, sizeof what, "a number for '%s'", info->name);
        st = fedc__lex_float(ps, FEDC_F64, &f, what);
        *a = fedc__attr_make_float(key, f);
        return st;
    case FEDC_KIND_DTYPE:
        snprintf(what, sizeof what, "a dtype name for '%s'", info->name);
        st = fedc__lex_dtype(ps, &dt, what);
        *a = fedc__attr_make_int(key, st ? 0 : dt);
        return st;
    }
    return fedc_error(FEDC_EINTERNAL, "program_parse: attribute kind %d", (int)info->kind);
}

static int find_attr_key(const char *s, size_t n) {
    for (int k = 0; k < FEDC_ATTR_KEY_COUNT; k++)
        if (fedc__lex_word_is(s, n, fedc__attr_infos[k].name)) return k;
    return -1;
}

/* A node's attributes as read, with where each value begins, so that an error
 * about a value (an unknown body) can point at it. */
typedef struct attr_list {
    fedc__attr a[FEDC__MAX_ATTRS];
    const char *at[FEDC__MAX_ATTRS];
    int n;
} attr_list;

static fedc_status parse_one_attr(fedc__parser *ps, attr_list *attrs) {
    const char *start;
    size_t n = fedc__lex_word(ps, &start);
    if (!n) return fedc__lex_expected(ps, "an attribute name");
    int key = find_attr_key(start, n);
    if (key < 0) return fedc__lex_error_at(ps, start, "unknown attribute '%.*s'", (int)n, start);
    for (int i = 0; i < attrs->n; i++)
        if (attrs->a[i].key == key)
            return fedc__lex_error_at(ps, start, "attribute '%.*s' is given twice", (int)n, start);
    if (attrs->n == FEDC__MAX_ATTRS)
        return fedc__lex_error_at(ps, start, "a node has at most %d attributes", FEDC__MAX_ATTRS);
    fedc_status st = fedc__lex_expect(ps, '=', "'=' after the attribute name");
    if (st) return st;
    fedc__lex_skip_space(ps);
    attrs->at[attrs->n] = ps->pos;
    st = parse_attr_value(ps, (fedc__attr_key)key, &attrs->a[attrs->n]);
    if (!st) attrs->n++;
    return st;
}

/* An optional {key=value, ...} block. */
static fedc_status parse_attrs(fedc__parser *ps, attr_list *attrs) {
    attrs->n = 0;
    if (!fedc__lex_accept(ps, '{') || fedc__lex_accept(ps, '}')) return FEDC_OK;
    for (;;) {
        fedc_status st = parse_one_attr(ps, attrs);
        if (st) return st;
        if (fedc__lex_accept(ps, ',')) continue;
        return fedc__lex_expect(ps, '}', "',' or '}'");
    }
}

/* ------------------------------------------------------------------ nodes -- */

static fedc_status parse_input(fedc__parser *ps) {
    char *name;
    fedc_type t;
    fedc_status st = fedc__lex_string(ps, &name);
    if (st) return st;
    st = fedc__lex_expect(ps, ':', "':' before the type");
    if (!st) st = fedc__lex_type(ps, &t);
    if (!st) st = fedc__lex_expect_eol(ps);
    if (!st && fedc_input(ps->p, name, t) == FEDC_NONE) st = builder_error(ps);
    fedc_free(name);
    return st;
}

/* Skips the values of a constant (just their tokens) to count them. */
static fedc_status count_values(fedc__parser *ps, int64_t *count) {
    char buf[FEDC__MAX_NUMBER];
    const char *start;
    *count = 0;
    if (fedc__lex_accept(ps, ']')) return FEDC_OK;
    for (;;) {
        fedc_status st = fedc__lex_number(ps, buf, &start, "a number");
        if (st) return st;
        ++*count;
        if (fedc__lex_accept(ps, ',')) continue;
        return fedc__lex_expect(ps, ']', "',' or ']'");
    }
}

/* Reads one value of dtype dt into element i of data. */
static fedc_status parse_element(fedc__parser *ps, fedc_dtype dt, void *data, int64_t i) {
    static const int64_t lo[FEDC_DTYPE_COUNT] = {[FEDC_I32] = INT32_MIN, [FEDC_U8] = 0, [FEDC_BOOL] = 0};
    static const int64_t hi[FEDC_DTYPE_COUNT] = {[FEDC_I32] = INT32_MAX, [FEDC_U8] = 255, [FEDC_BOOL] = 1};
    if (dt == FEDC_F32) return fedc__lex_float(ps, dt, (float *)data + i, "a number");
    if (dt == FEDC_F64) return fedc__lex_float(ps, dt, (double *)data + i, "a number");
    int64_t v;
    const char *at;
    fedc_status st = fedc__lex_int(ps, &v, "an integer", &at);
    if (st) return st;
    if (v < lo[dt] || v > hi[dt])
        return fedc__lex_error_at(ps, at, "%lld is out of range for %s", (long long)v, fedc_dtype_name(dt));
    if (dt == FEDC_I32) ((int32_t *)data)[i] = (int32_t)v;
    else ((uint8_t *)data)[i] = (uint8_t)v;
    return FEDC_OK;
}

/* Converts `count` values from `values` (just past the '[') into data. */
static fedc_status parse_values(fedc__parser *ps, const char *values, fedc_dtype dt, void *data, int64_t count) {
    const char *end = ps->pos;
    ps->pos = values;
    for (int64_t i = 0; i < count; i++) {
        fedc_status st = parse_element(ps, dt, data, i);
        if (st) return st;
        fedc__lex_accept(ps, ',');
    }
    ps->pos = end;
    return FEDC_OK;
}

/* The values come before the type that says how to read them, so they are
 * counted first, then read once the type is known. */
static fedc_status parse_constant(fedc__parser *ps) {
    fedc_status st = fedc__lex_expect(ps, '[', "'[' before the values");
    if (st) return st;
    const char *values = ps->pos;
    int64_t count;
    fedc_type t;
    st = count_values(ps, &count);
    if (!st) st = fedc__lex_expect(ps, ':', "':' before the type");
    if (!st) st = fedc__lex_type(ps, &t);
    if (!st) st = fedc__lex_expect_eol(ps);
    if (st) return st;
    if (count != fedc_type_count(&t)) {
        char s[64];
        return fedc__lex_error_at(ps, values - 1, "a constant of type %s needs %lld values, found %lld",
                        fedc_type_str(&t, s, sizeof s), (long long)fedc_type_count(&t), (long long)count);
    }
    void *data = fedc_malloc(fedc_type_bytes(&t));
    if (!data) return fedc__lex_out_of_memory(ps);
    st = parse_values(ps, values, t.dtype, data, count);
    if (!st && fedc_constant(ps->p, t, data) == FEDC_NONE) st = builder_error(ps);
    fedc_free(data);
    return st;
}

static fedc_status find_op(fedc__parser *ps, const char *start, size_t n, fedc__op *out) {
    for (int op = 0; op < FEDC_OP_COUNT; op++) {
        if (op != FEDC_OP_INPUT && op != FEDC_OP_CONSTANT && fedc__lex_word_is(start, n, fedc__ops[op].name)) {
            *out = (fedc__op)op;
            return FEDC_OK;
        }
    }
    return fedc__lex_error_at(ps, start, "unknown op '%.*s'", (int)n, start);
}

/* The operand list, grown on the heap: a map or fold may take thousands. The
 * caller frees *in, also on failure. */
static fedc_status parse_operands(fedc__parser *ps, fedc_value **in, int *nin) {
    *nin = 0;
    int cap = 0;
    fedc_status st = fedc__lex_expect(ps, '(', "'(' after the op name");
    if (st || fedc__lex_accept(ps, ')')) return st;
    for (;;) {
        fedc__lex_skip_space(ps);
        if (*nin == FEDC__MAX_OPERANDS)
            return fedc__lex_error_at(ps, ps->pos, "an op takes at most %d operands", FEDC__MAX_OPERANDS);
        if (*nin == cap) {
            cap = cap ? 2 * cap : 8;
            fedc_value *grown = fedc_realloc(*in, (size_t)cap * sizeof *grown);
            if (!grown) return fedc__lex_out_of_memory(ps);
            *in = grown;
        }
        st = fedc__lex_ref(ps, &(*in)[(*nin)++]);
        if (st) return st;
        if (fedc__lex_accept(ps, ',')) continue;
        return fedc__lex_expect(ps, ')', "',' or ')'");
    }
}

/* ------------------------------------------------------------ op nodes -- */

/* The type after ':' of an op's line, as written: one type, or for an op with a
 * body a tuple "(type, ...)", one per result. A tuple's parts are not stored:
 * they are read again when compared with the rule's (check_tuple). */
typedef struct declared {
    const char *at; /* where it begins */
    bool tuple;
    fedc_type type; /* not a tuple */
    int nparts;     /* a tuple */
} declared;

static fedc_status parse_declared(fedc__parser *ps, declared *d) {
    memset(d, 0, sizeof *d);
    fedc__lex_skip_space(ps);
    d->at = ps->pos;
    if (!fedc__lex_accept(ps, '(')) return fedc__lex_type(ps, &d->type);
    d->tuple = true;
    if (fedc__lex_accept(ps, ')')) return FEDC_OK;
    for (;;) {
        fedc_type part;
        fedc_status st = fedc__lex_type(ps, &part);
        if (st) return st;
        d->nparts++;
        if (fedc__lex_accept(ps, ',')) continue;
        return fedc__lex_expect(ps, ')', "',' or ')'");
    }
}

/* "(a, b, ...)" for tuple value v, or v's type; cut short if it does not fit. */
static const char *computed_str(const fedc_program *p, fedc_value v, char *buf, size_t size) {
    const fedc__node *n = &p->nodes[v];
    if (n->type.dtype != FEDC__TUPLE) return fedc_type_str(&n->type, buf, size);
    size_t len = (size_t)snprintf(buf, size, "(");
    for (int k = 0; k < fedc__tuple_size(p, n) && len < size; k++) {
        fedc_type t;
        char s[64];
        if (fedc__tuple_part(p, v, k, &t)) snprintf(s, sizeof s, "?");
        else fedc_type_str(&t, s, sizeof s);
        len += (size_t)snprintf(buf + len, size - len, k ? ", %s" : "%s", s);
    }
    if (len < size) snprintf(buf + len, size - len, ")");
    return buf;
}

/* Reads the tuple at d again, part by part, against the parts the rule gives. */
static fedc_status check_tuple(fedc__parser *ps, const declared *d, fedc_value v, const char *op) {
    const char *end = ps->pos;
    ps->pos = d->at + 1;
    fedc_status st = FEDC_OK;
    for (int k = 0; k < d->nparts && !st; k++) {
        fedc_type got, want;
        fedc__lex_skip_space(ps);
        const char *at = ps->pos;
        st = fedc__lex_type(ps, &got);
        fedc__lex_accept(ps, ',');
        if (!st && (st = fedc__tuple_part(ps->p, v, k, &want)) != FEDC_OK) st = fedc__lex_with_line(ps, st);
        if (!st && !fedc_type_equal(&got, &want)) {
            char g[64], w[64];
            st = fedc__lex_error_at(ps, at, "declared type %s for result %d but %s gives %s",
                                    fedc_type_str(&got, g, sizeof g), k, op, fedc_type_str(&want, w, sizeof w));
        }
    }
    ps->pos = end;
    return st;
}

/* The declared type must be the one the rule computed for node v: the same type,
 * or a tuple with as many parts as v's body has outputs, each the same type. */
static fedc_status check_declared(fedc__parser *ps, const declared *d, fedc_value v) {
    const fedc__node *n = &ps->p->nodes[v];
    const char *op = fedc__ops[n->op].name;
    bool tuple = n->type.dtype == FEDC__TUPLE;
    if (d->tuple && tuple && d->nparts == fedc__tuple_size(ps->p, n)) return check_tuple(ps, d, v, op);
    if (!d->tuple && !tuple && fedc_type_equal(&d->type, &n->type)) return FEDC_OK;
    char got[64], want[512];
    computed_str(ps->p, v, want, sizeof want);
    if (!d->tuple)
        return fedc__lex_error_at(ps, d->at, "declared type %s but %s gives %s",
                                  fedc_type_str(&d->type, got, sizeof got), op, want);
    if (!tuple) return fedc__lex_error_at(ps, d->at, "declared a tuple but %s gives %s", op, want);
    return fedc__lex_error_at(ps, d->at, "declared a tuple of %d types but %s gives %d, one per output of its body: "
                              "%s", d->nparts, op, fedc__tuple_size(ps->p, n), want);
}

/* An op with a body names one defined above it, {body=N}. Checked before the
 * rule runs, so that the error can point at N. */
static fedc_status check_body_attr(fedc__parser *ps, const char *name, size_t len, const attr_list *attrs) {
    for (int i = 0; i < attrs->n; i++) {
        if (attrs->a[i].key != FEDC_ATTR_BODY) continue;
        int64_t b = attrs->a[i].v[0];
        if (b >= 0 && b < ps->p->nbodies) return FEDC_OK;
        return fedc__lex_error_at(ps, attrs->at[i],
                                  "unknown body %lld (%d defined so far: a 'body N {' block defines body N before "
                                  "the nodes that run it)", (long long)b, ps->p->nbodies);
    }
    return fedc__lex_error_at(ps, name, "%.*s needs the attribute {body=N} naming the body it runs", (int)len, name);
}

/* name(%a, ...) {attrs} : type — the rule checks arity and operands, and the
 * declared type must be the one it computes. */
static fedc_status parse_op(fedc__parser *ps, const char *name, size_t len) {
    fedc__op op = FEDC_OP_INPUT; /* set by find_op; initialized for the compiler */
    fedc_value *in = NULL;
    attr_list attrs;
    declared d;
    int nin = 0;
    attrs.n = 0;
    fedc_status st = find_op(ps, name, len, &op);
    if (!st) st = parse_operands(ps, &in, &nin);
    if (!st) st = parse_attrs(ps, &attrs);
    if (!st) st = fedc__lex_expect(ps, ':', "':' before the type");
    if (!st) st = parse_declared(ps, &d);
    if (!st) st = fedc__lex_expect_eol(ps);
    if (!st && fedc__op_has_body(op)) st = check_body_attr(ps, name, len, &attrs);
    fedc_value v = st ? FEDC_NONE : fedc__emit(ps->p, op, in, nin, attrs.a, attrs.n, NULL);
    fedc_free(in);
    if (st) return st;
    if (v == FEDC_NONE) return builder_error(ps);
    return check_declared(ps, &d, v);
}

/* ---------------------------------------------------------------- lines -- */

/* %N = ..., where N must be the next value's number. */
static fedc_status parse_value_line(fedc__parser *ps) {
    int64_t n;
    const char *start;
    fedc_status st = fedc__lex_scan_ref(ps, &n, &start);
    if (st) return st;
    if (n != ps->p->n) {
        char want[48];
        snprintf(want, sizeof want, "%%%d (values are numbered in order)", ps->p->n);
        ps->pos = start;
        return fedc__lex_expected(ps, want);
    }
    st = fedc__lex_expect(ps, '=', "'='");
    if (st) return st;
    const char *word;
    size_t len = fedc__lex_word(ps, &word);
    if (!len) return fedc__lex_expected(ps, "an op name");
    if (fedc__lex_word_is(word, len, "input")) return parse_input(ps);
    if (fedc__lex_word_is(word, len, "constant")) return parse_constant(ps);
    return parse_op(ps, word, len);
}

/* output "name" = %N */
static fedc_status parse_output_line(fedc__parser *ps) {
    char *name;
    fedc_value v;
    fedc__lex_skip_space(ps);
    const char *name_at = ps->pos;
    fedc_status st = fedc__lex_string(ps, &name);
    if (st) return st;
    st = fedc__lex_expect(ps, '=', "'='");
    if (!st) st = fedc__lex_ref(ps, &v);
    if (!st) st = fedc__lex_expect_eol(ps);
    if (!st && fedc_program_find_output(ps->p, name) != FEDC_NONE)
        st = fedc__lex_error_at(ps, name_at, "duplicate output name \"%s\"", name);
    if (!st && (st = fedc_program_output(ps->p, name, v)) != FEDC_OK) st = fedc__lex_with_line(ps, st);
    fedc_free(name);
    return st;
}

/* Moves to the first token of the next line that has one (past blank and
 * comment-only lines); false at the end of the text. */
static bool next_token(fedc__parser *ps) {
    for (;;) {
        fedc__lex_skip_space(ps);
        if (!fedc__lex_is_eol(*ps->pos)) return true;
        if (*ps->pos == '\0') return false;
        ps->line = ps->pos = ps->pos + 1;
        ps->lineno++;
    }
}

static fedc_status parse_body(fedc__parser *ps, const char *word, int depth);

static fedc_status parse_line(fedc__parser *ps, int depth) {
    if (*ps->pos == '%') return parse_value_line(ps);
    if (*ps->pos == '}') return fedc__lex_error_at(ps, ps->pos, "'}' but no body is open");
    const char *word;
    size_t n = fedc__lex_word(ps, &word);
    if (n && fedc__lex_word_is(word, n, "output")) return parse_output_line(ps);
    if (n && fedc__lex_word_is(word, n, "body")) return parse_body(ps, word, depth);
    ps->pos = word;
    return fedc__lex_expected(ps, "'%N = ...', 'output' or 'body'");
}

/* Where a block of lines ends: the end of the text for the program itself
 * (depth 0), the '}' of `body N {` (opened on line `opened`) for a body. */
typedef struct block {
    int depth, number, opened;
} block;

static fedc_status parse_block(fedc__parser *ps, block b) {
    while (next_token(ps)) {
        if (b.depth > 0 && fedc__lex_accept(ps, '}')) return fedc__lex_expect_eol(ps);
        fedc_status st = parse_line(ps, b.depth);
        if (st) return st;
    }
    if (b.depth == 0) return FEDC_OK;
    char what[96];
    snprintf(what, sizeof what, "'}' to close body %d (opened on line %d)", b.number, b.opened);
    return fedc__lex_expected(ps, what);
}

/* body N { ... }: the lines up to the '}' are a program of their own, read with
 * the same grammar, then added to the current program as its body N. */
static fedc_status parse_body(fedc__parser *ps, const char *word, int depth) {
    int64_t n = 0;
    const char *at = NULL;
    fedc_status st = fedc__lex_int(ps, &n, "a body number", &at);
    if (!st && n != ps->p->nbodies) {
        char want[64];
        snprintf(want, sizeof want, "body %d (bodies are numbered in order)", ps->p->nbodies);
        ps->pos = at;
        return fedc__lex_expected(ps, want);
    }
    if (!st) st = fedc__lex_expect(ps, '{', "'{' after the body number");
    if (!st) st = fedc__lex_expect_eol(ps);
    if (!st && depth == MAX_BODY_DEPTH)
        st = fedc__lex_error_at(ps, word, "bodies nest at most %d deep", MAX_BODY_DEPTH);
    fedc_program *body = NULL;
    if (!st && (st = fedc_program_create(&body)) != FEDC_OK) st = fedc__lex_with_line(ps, st);
    if (st) return st;
    fedc_program *outer = ps->p;
    ps->p = body;
    st = parse_block(ps, (block){depth + 1, (int)n, ps->lineno});
    ps->p = outer;
    if (st) {
        fedc_program_destroy(body);
        return st;
    }
    int index = fedc__program_add_body(outer, body); /* which owns it now, even on failure */
    if (index < 0) return fedc__lex_with_line(ps, FEDC_ENOMEM);
    if (index != n)
        return fedc_error(FEDC_EINTERNAL, "line %d: body %lld was added as body %d", ps->lineno, (long long)n, index);
    return FEDC_OK;
}

/* The first line that is not blank or a comment. */
static fedc_status parse_header(fedc__parser *ps) {
    if (!next_token(ps)) return fedc__lex_expected(ps, "the header 'fedc program'");
    const char *word;
    size_t n = fedc__lex_word(ps, &word);
    bool ok = fedc__lex_word_is(word, n, "fedc");
    if (ok) {
        n = fedc__lex_word(ps, &word);
        ok = fedc__lex_word_is(word, n, "program");
    }
    if (!ok) {
        ps->pos = word;
        return fedc__lex_expected(ps, "the header 'fedc program'");
    }
    return fedc__lex_expect_eol(ps);
}

/* ---------------------------------------------------------------- public -- */

static fedc_status parse_program(const char *text, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc__parser ps = {p, text, text, 1};
    st = parse_header(&ps);
    if (!st) st = parse_block(&ps, (block){0, 0, 0});
    /* The lines were checked one by one as they were built; the verifier is the
     * last word on the whole program, bodies included. */
    if (!st && (st = fedc_program_verify(p)) != FEDC_OK) {
        char msg[768];
        snprintf(msg, sizeof msg, "%s", fedc_errmsg());
        st = fedc_error(FEDC_EPARSE, "the parsed program does not verify: %s", msg);
    }
    if (st) {
        fedc_program_destroy(p);
        return st;
    }
    *out = p;
    return FEDC_OK;
}

fedc_status fedc_program_parse(const char *text, fedc_program **out) {
    *out = NULL;
    if (!text) return fedc_error(FEDC_EINVAL, "program_parse: text is NULL");
    /* strtod follows LC_NUMERIC; the format's decimal point is always '.'. */
    locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c_locale) return fedc_error(FEDC_ENOMEM, "program_parse: cannot make the C locale");
    locale_t caller = uselocale(c_locale);
    fedc_status st = parse_program(text, out);
    uselocale(caller);
    freelocale(c_locale);
    return st;
}

/* A file's bytes: a NUL byte would end the C string early and the lines after it
 * would vanish unread, so it is refused where it stands. */
fedc_status fedc_program_parse_n(const char *text, size_t len, fedc_program **out) {
    *out = NULL;
    if (!text) return fedc_error(FEDC_EINVAL, "program_parse: text is NULL");
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line = 1;
        const char *start = text;
        for (const char *c = text; c < nul; c++)
            if (*c == '\n') line++, start = c + 1;
        return fedc_error(FEDC_EPARSE, "line %d, column %d: a NUL byte (a program's text holds none)", line,
                          (int)(nul - start) + 1);
    }
    char *copy = fedc_malloc(len + 1);
    if (!copy) return fedc_error(FEDC_ENOMEM, "program_parse: out of memory for %zu bytes", len);
    memcpy(copy, text, len);
    copy[len] = '\0';
    fedc_status st = fedc_program_parse(copy, out);
    fedc_free(copy);
    return st;
}
