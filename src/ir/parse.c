/* The text format, parsing side: a hand-written line parser for the format that
 * src/ir/print.c writes and specifies (also docs/text-format.md). Each line is
 * parsed completely, then turned into a node through the same calls a builder
 * makes (fedc_input, fedc_constant, fedc__emit, fedc_program_output), so the
 * type rules check parsed programs exactly as they check built ones; the type
 * the text declares must then equal the type the rule computed. The first error
 * stops the parse: syntax errors read "line L, column C: expected X, found 'Y'",
 * errors from a type rule "line L: <the rule's message>". Every error is
 * FEDC_EPARSE except running out of memory, which stays FEDC_ENOMEM, and no
 * error path leaks. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

#define MAX_OPERANDS 64  /* the widest op (concat) takes 64 */
#define MAX_NUMBER 128   /* longest number token, with its NUL */
/* Elements a type may have: its size in bytes must fit in an int64 whatever the
 * dtype, and so must every partial product of its dims. */
#define MAX_ELEMENTS (INT64_MAX / 8)

typedef struct parser {
    fedc_program *p;
    const char *line; /* first character of the current line */
    const char *pos;  /* next character to read */
    int lineno;       /* 1-based */
} parser;

/* ---------------------------------------------------------------- errors -- */

static fedc_status error_at(const parser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static fedc_status error_at(const parser *ps, const char *at, const char *fmt, ...) {
    char detail[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return fedc_error(FEDC_EPARSE, "line %d, column %d: %s", ps->lineno, (int)(at - ps->line) + 1, detail);
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static bool is_eol(char c) { return c == '\n' || c == '\0'; }
/* Characters of a number token: digits, exponents, signs, inf, nan:0x... */
static bool is_number_char(char c) { return is_alpha(c) || is_digit(c) || c == '.' || c == '+' || c == '-' || c == ':'; }

/* What stands at `at`, quoted, for "found ..." (a word or number whole). */
static void describe(const char *at, char *buf, size_t size) {
    if (is_eol(*at)) {
        snprintf(buf, size, *at ? "end of line" : "end of input");
        return;
    }
    int n = 1;
    if (is_number_char(*at) || *at == '%')
        while (n < 24 && is_number_char(at[n])) n++;
    snprintf(buf, size, "'%.*s'", n, at);
}

static fedc_status expected(const parser *ps, const char *what) {
    char found[40];
    describe(ps->pos, found, sizeof found);
    return error_at(ps, ps->pos, "expected %s, found %s", what, found);
}

static fedc_status out_of_memory(const parser *ps) {
    return fedc_error(FEDC_ENOMEM, "line %d: out of memory", ps->lineno);
}

/* Puts the line number before the current message of a failed library call,
 * keeping its words (a type rule's names the op and the types). */
static fedc_status with_line(const parser *ps, fedc_status st) {
    char msg[768];
    snprintf(msg, sizeof msg, "%s", fedc_errmsg());
    return fedc_error(st == FEDC_ENOMEM ? FEDC_ENOMEM : FEDC_EPARSE, "line %d: %s", ps->lineno, msg);
}

/* A builder call failed: its error is sticky in the program. */
static fedc_status builder_error(const parser *ps) { return with_line(ps, fedc_program_status(ps->p)); }

/* ----------------------------------------------------------------- lexing -- */

/* Spaces, tabs, the \r of a CRLF, and a comment running to the end of the line. */
static void skip_space(parser *ps) {
    for (;;) {
        char c = *ps->pos;
        if (c == ' ' || c == '\t' || c == '\r') {
            ps->pos++;
        } else if (c == '#') {
            while (!is_eol(*ps->pos)) ps->pos++;
        } else {
            return;
        }
    }
}

static bool accept(parser *ps, char c) {
    skip_space(ps);
    if (*ps->pos != c) return false;
    ps->pos++;
    return true;
}

static fedc_status expect(parser *ps, char c, const char *what) { return accept(ps, c) ? FEDC_OK : expected(ps, what); }

static fedc_status expect_eol(parser *ps) {
    skip_space(ps);
    return is_eol(*ps->pos) ? FEDC_OK : expected(ps, "end of line");
}

/* An identifier; returns its length (0 if none) and leaves *start at it. */
static size_t scan_word(parser *ps, const char **start) {
    skip_space(ps);
    *start = ps->pos;
    if (!is_alpha(*ps->pos)) return 0;
    while (is_alpha(*ps->pos) || is_digit(*ps->pos)) ps->pos++;
    return (size_t)(ps->pos - *start);
}

static bool word_is(const char *s, size_t n, const char *word) { return strlen(word) == n && memcmp(s, word, n) == 0; }

/* Copies the number token at the cursor, NUL-terminated, into buf[MAX_NUMBER]
 * and moves past it; *start is where it began. Conversion is the caller's. */
static fedc_status scan_number(parser *ps, char *buf, const char **start, const char *what) {
    skip_space(ps);
    size_t n = 0;
    while (is_number_char(ps->pos[n])) n++;
    if (n == 0 || n >= MAX_NUMBER) return expected(ps, what);
    memcpy(buf, ps->pos, n);
    buf[n] = '\0';
    *start = ps->pos;
    ps->pos += n;
    return FEDC_OK;
}

/* A decimal integer. `at` (may be NULL) receives where it began, for range errors. */
static fedc_status parse_int(parser *ps, int64_t *out, const char *what, const char **at) {
    *out = 0;
    if (at) *at = ps->pos;
    char buf[MAX_NUMBER];
    const char *start;
    fedc_status st = scan_number(ps, buf, &start, what);
    if (st) return st;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (end == buf || *end) {
        ps->pos = start;
        return expected(ps, what);
    }
    if (errno == ERANGE) return error_at(ps, start, "integer '%s' is out of range", buf);
    *out = v;
    if (at) *at = start;
    return FEDC_OK;
}

/* The bits a NaN token stands for: "nan" is the NaN strtod("nan") gives, and
 * "nan:0x<up to `digits` hex digits>" spells the bits out. False if neither. */
static bool nan_bits(const char *buf, fedc_dtype dt, uint64_t *bits) {
    *bits = dt == FEDC_F32 ? UINT64_C(0x7fc00000) : UINT64_C(0x7ff8000000000000);
    if (strcmp(buf, "nan") == 0) return true;
    if (strncmp(buf, "nan:0x", 6) != 0) return false;
    size_t n = strlen(buf + 6);
    if (n == 0 || n > (dt == FEDC_F32 ? 8u : 16u)) return false;
    for (size_t i = 0; i < n; i++)
        if (!is_hex(buf[6 + i])) return false;
    *bits = strtoull(buf + 6, NULL, 16);
    return true;
}

/* A NaN token (a sign makes it no number: the bits carry the sign). */
static fedc_status parse_nan(parser *ps, const char *buf, const char *start, fedc_dtype dt, void *out,
                             const char *what) {
    uint64_t bits;
    if (!nan_bits(buf, dt, &bits)) {
        ps->pos = start;
        return expected(ps, what);
    }
    if (dt == FEDC_F32) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof f);
        if (!isnan(f)) return error_at(ps, start, "'%s' is not the bit pattern of a NaN", buf);
        memcpy(out, &f, sizeof f);
    } else {
        double d;
        memcpy(&d, &bits, sizeof d);
        if (!isnan(d)) return error_at(ps, start, "'%s' is not the bit pattern of a NaN", buf);
        memcpy(out, &d, sizeof d);
    }
    return FEDC_OK;
}

/* A floating-point number stored as dt (f32 or f64) at out: decimal (as strtod
 * reads it), inf, -inf, nan or nan:0x<bits>. Hex floats are not part of the
 * format. f32 is read with strtof, so it is rounded once, exactly as printed. */
static fedc_status parse_float(parser *ps, fedc_dtype dt, void *out, const char *what) {
    char buf[MAX_NUMBER];
    const char *start;
    fedc_status st = scan_number(ps, buf, &start, what);
    if (st) return st;
    const char *unsigned_part = buf + (buf[0] == '+' || buf[0] == '-');
    if (*unsigned_part == 'n' || *unsigned_part == 'N') return parse_nan(ps, buf, start, dt, out, what);
    if (strchr(buf, 'x') || strchr(buf, 'X')) {
        ps->pos = start;
        return expected(ps, what);
    }
    char *end;
    errno = 0;
    float f = dt == FEDC_F32 ? strtof(buf, &end) : 0;
    double d = dt == FEDC_F32 ? f : strtod(buf, &end);
    if (end == buf || *end) {
        ps->pos = start;
        return expected(ps, what);
    }
    /* Underflow to a denormal or zero is the nearest value, so it stands;
     * overflow of a finite literal to infinity does not. */
    if (errno == ERANGE && isinf(d)) return error_at(ps, start, "'%s' is out of range for %s", buf, fedc_dtype_name(dt));
    if (dt == FEDC_F32) memcpy(out, &f, sizeof f);
    else memcpy(out, &d, sizeof d);
    return FEDC_OK;
}

/* A value reference %N, syntax only: *n is N, *start where the '%' is. */
static fedc_status scan_ref(parser *ps, int64_t *n, const char **start) {
    skip_space(ps);
    *n = 0;
    *start = ps->pos;
    if (ps->pos[0] != '%' || !is_digit(ps->pos[1])) return expected(ps, "a value like %3");
    ps->pos++;
    while (is_digit(*ps->pos)) {
        *n = *n * 10 + (*ps->pos++ - '0');
        if (*n > INT32_MAX) return error_at(ps, *start, "value number is too large");
    }
    return FEDC_OK;
}

/* A reference to a value defined on an earlier line. */
static fedc_status parse_ref(parser *ps, fedc_value *out) {
    int64_t n;
    const char *start;
    fedc_status st = scan_ref(ps, &n, &start);
    if (st) return st;
    if (n >= ps->p->n)
        return error_at(ps, start, "%%%lld is used before it is defined (values must be defined on an earlier line)",
                        (long long)n);
    *out = (fedc_value)n;
    return FEDC_OK;
}

/* One escape after a backslash in a quoted name; *s is past the backslash. */
static fedc_status parse_escape(parser *ps, const char **s, char *out) {
    const char *at = *s - 1;
    char c = **s;
    if (c == '"' || c == '\\') *out = c;
    else if (c == 'n') *out = '\n';
    else if (c == 't') *out = '\t';
    else if (c == 'x' && is_hex((*s)[1]) && is_hex((*s)[2])) {
        char hex[3] = {(*s)[1], (*s)[2], '\0'};
        *out = (char)strtol(hex, NULL, 16);
        if (*out == '\0') return error_at(ps, at, "a name cannot contain \\x00");
        *s += 2;
    } else {
        return error_at(ps, at, "unknown escape in a name (the escapes are \\\" \\\\ \\n \\t \\xHH)");
    }
    (*s)++;
    return FEDC_OK;
}

/* A double-quoted name, into a fedc_malloc'd string the caller frees. */
static fedc_status parse_string(parser *ps, char **out) {
    *out = NULL;
    skip_space(ps);
    if (*ps->pos != '"') return expected(ps, "a quoted name");
    const char *s = ps->pos + 1;
    /* Escapes only shrink the text, so the rest of the line bounds the name. */
    char *name = fedc_malloc(strcspn(s, "\n") + 1);
    if (!name) return out_of_memory(ps);
    size_t n = 0;
    fedc_status st = FEDC_OK;
    while (!st && *s != '"') {
        if (is_eol(*s)) st = error_at(ps, s, "expected '\"' to end the name, found end of line");
        else if (*s != '\\') name[n++] = *s++;
        else {
            s++;
            st = parse_escape(ps, &s, &name[n++]);
        }
    }
    if (st) {
        fedc_free(name);
        return st;
    }
    name[n] = '\0';
    ps->pos = s + 1;
    *out = name;
    return FEDC_OK;
}

/* ------------------------------------------------------------------ types -- */

static fedc_status parse_dtype(parser *ps, fedc_dtype *out, const char *what) {
    const char *start;
    size_t n = scan_word(ps, &start);
    if (!n) return expected(ps, what);
    for (int dt = 0; dt < FEDC_DTYPE_COUNT; dt++) {
        if (word_is(start, n, fedc_dtype_name((fedc_dtype)dt))) {
            *out = (fedc_dtype)dt;
            return FEDC_OK;
        }
    }
    return error_at(ps, start, "unknown dtype '%.*s' (the dtypes are f32, f64, i32, u8, bool)", (int)n, start);
}

static fedc_status parse_placement(parser *ps, fedc_placement *out) {
    const char *start;
    size_t n = scan_word(ps, &start);
    if (!n) return expected(ps, "a placement (server or clients)");
    for (int pl = 0; pl < FEDC_PLACEMENT_COUNT; pl++) {
        if (word_is(start, n, fedc_placement_name((fedc_placement)pl))) {
            *out = (fedc_placement)pl;
            return FEDC_OK;
        }
    }
    return error_at(ps, start, "unknown placement '%.*s' (the placements are local, server, clients)", (int)n, start);
}

static fedc_status parse_dims(parser *ps, fedc_type *t) {
    if (accept(ps, ']')) return FEDC_OK;
    int64_t product = 1; /* of the nonzero dims, which bounds every partial product */
    for (;;) {
        int64_t d;
        const char *at;
        fedc_status st = parse_int(ps, &d, "a dimension", &at);
        if (st) return st;
        if (d < 0) return error_at(ps, at, "a dimension cannot be negative (%lld)", (long long)d);
        if (t->rank == FEDC_MAX_RANK) return error_at(ps, at, "a type has at most %d dimensions", FEDC_MAX_RANK);
        if (d > 0 && product > MAX_ELEMENTS / d) return error_at(ps, at, "the type has too many elements");
        if (d > 0) product *= d;
        t->dims[t->rank++] = d;
        if (accept(ps, ',')) continue;
        return expect(ps, ']', "',' or ']'");
    }
}

/* dtype[dims] with an optional @placement. */
static fedc_status parse_type(parser *ps, fedc_type *t) {
    memset(t, 0, sizeof *t);
    fedc_status st = parse_dtype(ps, &t->dtype, "a type like f32[4,3]");
    if (!st) st = expect(ps, '[', "'[' after the dtype");
    if (!st) st = parse_dims(ps, t);
    if (!st && accept(ps, '@')) st = parse_placement(ps, &t->placement);
    return st;
}

/* ------------------------------------------------------------- attributes -- */

static fedc_status parse_int_list(parser *ps, fedc__attr_key key, fedc__attr *a) {
    int64_t v[FEDC_MAX_RANK];
    int n = 0;
    bool more = !accept(ps, ']');
    while (more) {
        const char *at;
        int64_t x;
        fedc_status st = parse_int(ps, &x, "an integer", &at);
        if (st) return st;
        if (n == FEDC_MAX_RANK) return error_at(ps, at, "a list has at most %d integers", FEDC_MAX_RANK);
        v[n++] = x;
        more = accept(ps, ',');
        if (!more && (st = expect(ps, ']', "',' or ']'")) != FEDC_OK) return st;
    }
    *a = fedc__attr_make_ints(key, n, v);
    return FEDC_OK;
}

/* The value of attribute `key`, in the syntax of the key's kind. */
static fedc_status parse_attr_value(parser *ps, fedc__attr_key key, fedc__attr *a) {
    const fedc__attr_info *info = &fedc__attr_infos[key];
    char what[64];
    int64_t v = 0;
    double f = 0;
    fedc_dtype dt;
    fedc_status st;
    switch (info->kind) {
    case FEDC_KIND_INTS:
        snprintf(what, sizeof what, "a list of integers for '%s'", info->name);
        return accept(ps, '[') ? parse_int_list(ps, key, a) : expected(ps, what);
    case FEDC_KIND_INT:
        snprintf(what, sizeof what, "an integer for '%s'", info->name);
        st = parse_int(ps, &v, what, NULL);
        *a = fedc__attr_make_int(key, v);
        return st;
    case FEDC_KIND_FLOAT:
        snprintf(what, sizeof what, "a number for '%s'", info->name);
        st = parse_float(ps, FEDC_F64, &f, what);
        *a = fedc__attr_make_float(key, f);
        return st;
    case FEDC_KIND_DTYPE:
        snprintf(what, sizeof what, "a dtype name for '%s'", info->name);
        st = parse_dtype(ps, &dt, what);
        *a = fedc__attr_make_int(key, st ? 0 : dt);
        return st;
    }
    return fedc_error(FEDC_EINTERNAL, "program_parse: attribute kind %d", (int)info->kind);
}

static int find_attr_key(const char *s, size_t n) {
    for (int k = 0; k < FEDC_ATTR_KEY_COUNT; k++)
        if (word_is(s, n, fedc__attr_infos[k].name)) return k;
    return -1;
}

static fedc_status parse_one_attr(parser *ps, fedc__attr *attrs, int *nattr) {
    const char *start;
    size_t n = scan_word(ps, &start);
    if (!n) return expected(ps, "an attribute name");
    int key = find_attr_key(start, n);
    if (key < 0) return error_at(ps, start, "unknown attribute '%.*s'", (int)n, start);
    for (int i = 0; i < *nattr; i++)
        if (attrs[i].key == key) return error_at(ps, start, "attribute '%.*s' is given twice", (int)n, start);
    if (*nattr == FEDC__MAX_ATTRS) return error_at(ps, start, "a node has at most %d attributes", FEDC__MAX_ATTRS);
    fedc_status st = expect(ps, '=', "'=' after the attribute name");
    if (!st) st = parse_attr_value(ps, (fedc__attr_key)key, &attrs[*nattr]);
    if (!st) (*nattr)++;
    return st;
}

/* An optional {key=value, ...} block. */
static fedc_status parse_attrs(parser *ps, fedc__attr *attrs, int *nattr) {
    *nattr = 0;
    if (!accept(ps, '{') || accept(ps, '}')) return FEDC_OK;
    for (;;) {
        fedc_status st = parse_one_attr(ps, attrs, nattr);
        if (st) return st;
        if (accept(ps, ',')) continue;
        return expect(ps, '}', "',' or '}'");
    }
}

/* ------------------------------------------------------------------ nodes -- */

static fedc_status parse_input(parser *ps) {
    char *name;
    fedc_type t;
    fedc_status st = parse_string(ps, &name);
    if (st) return st;
    st = expect(ps, ':', "':' before the type");
    if (!st) st = parse_type(ps, &t);
    if (!st) st = expect_eol(ps);
    if (!st && fedc_input(ps->p, name, t) == FEDC_NONE) st = builder_error(ps);
    fedc_free(name);
    return st;
}

/* Skips the values of a constant (just their tokens) to count them. */
static fedc_status count_values(parser *ps, int64_t *count) {
    char buf[MAX_NUMBER];
    const char *start;
    *count = 0;
    if (accept(ps, ']')) return FEDC_OK;
    for (;;) {
        fedc_status st = scan_number(ps, buf, &start, "a number");
        if (st) return st;
        ++*count;
        if (accept(ps, ',')) continue;
        return expect(ps, ']', "',' or ']'");
    }
}

/* Reads one value of dtype dt into element i of data. */
static fedc_status parse_element(parser *ps, fedc_dtype dt, void *data, int64_t i) {
    static const int64_t lo[FEDC_DTYPE_COUNT] = {[FEDC_I32] = INT32_MIN, [FEDC_U8] = 0, [FEDC_BOOL] = 0};
    static const int64_t hi[FEDC_DTYPE_COUNT] = {[FEDC_I32] = INT32_MAX, [FEDC_U8] = 255, [FEDC_BOOL] = 1};
    if (dt == FEDC_F32) return parse_float(ps, dt, (float *)data + i, "a number");
    if (dt == FEDC_F64) return parse_float(ps, dt, (double *)data + i, "a number");
    int64_t v;
    const char *at;
    fedc_status st = parse_int(ps, &v, "an integer", &at);
    if (st) return st;
    if (v < lo[dt] || v > hi[dt]) return error_at(ps, at, "%lld is out of range for %s", (long long)v, fedc_dtype_name(dt));
    if (dt == FEDC_I32) ((int32_t *)data)[i] = (int32_t)v;
    else ((uint8_t *)data)[i] = (uint8_t)v;
    return FEDC_OK;
}

/* Converts `count` values from `values` (just past the '[') into data. */
static fedc_status parse_values(parser *ps, const char *values, fedc_dtype dt, void *data, int64_t count) {
    const char *end = ps->pos;
    ps->pos = values;
    for (int64_t i = 0; i < count; i++) {
        fedc_status st = parse_element(ps, dt, data, i);
        if (st) return st;
        accept(ps, ',');
    }
    ps->pos = end;
    return FEDC_OK;
}

/* The values come before the type that says how to read them, so they are
 * counted first, then read once the type is known. */
static fedc_status parse_constant(parser *ps) {
    fedc_status st = expect(ps, '[', "'[' before the values");
    if (st) return st;
    const char *values = ps->pos;
    int64_t count;
    fedc_type t;
    st = count_values(ps, &count);
    if (!st) st = expect(ps, ':', "':' before the type");
    if (!st) st = parse_type(ps, &t);
    if (!st) st = expect_eol(ps);
    if (st) return st;
    if (count != fedc_type_count(&t)) {
        char s[64];
        return error_at(ps, values - 1, "a constant of type %s needs %lld values, found %lld",
                        fedc_type_str(&t, s, sizeof s), (long long)fedc_type_count(&t), (long long)count);
    }
    void *data = fedc_malloc(fedc_type_bytes(&t));
    if (!data) return out_of_memory(ps);
    st = parse_values(ps, values, t.dtype, data, count);
    if (!st && fedc_constant(ps->p, t, data) == FEDC_NONE) st = builder_error(ps);
    fedc_free(data);
    return st;
}

static fedc_status find_op(parser *ps, const char *start, size_t n, fedc__op *out) {
    for (int op = 0; op < FEDC_OP_COUNT; op++) {
        if (op != FEDC_OP_INPUT && op != FEDC_OP_CONSTANT && word_is(start, n, fedc__ops[op].name)) {
            *out = (fedc__op)op;
            return FEDC_OK;
        }
    }
    return error_at(ps, start, "unknown op '%.*s'", (int)n, start);
}

static fedc_status parse_operands(parser *ps, fedc_value *in, int *nin) {
    *nin = 0;
    fedc_status st = expect(ps, '(', "'(' after the op name");
    if (st || accept(ps, ')')) return st;
    for (;;) {
        skip_space(ps);
        if (*nin == MAX_OPERANDS) return error_at(ps, ps->pos, "an op takes at most %d operands", MAX_OPERANDS);
        st = parse_ref(ps, &in[(*nin)++]);
        if (st) return st;
        if (accept(ps, ',')) continue;
        return expect(ps, ')', "',' or ')'");
    }
}

/* name(%a, ...) {attrs} : type — the rule checks arity and operands, and the
 * declared type must be the one it computes. */
static fedc_status parse_op(parser *ps, const char *name, size_t n) {
    fedc__op op = FEDC_OP_INPUT; /* set by find_op; initialized for the compiler */
    fedc_value in[MAX_OPERANDS];
    fedc__attr attrs[FEDC__MAX_ATTRS];
    int nin, nattr;
    fedc_type declared;
    fedc_status st = find_op(ps, name, n, &op);
    if (!st) st = parse_operands(ps, in, &nin);
    if (!st) st = parse_attrs(ps, attrs, &nattr);
    if (!st) st = expect(ps, ':', "':' before the type");
    if (st) return st;
    skip_space(ps);
    const char *type_at = ps->pos;
    st = parse_type(ps, &declared);
    if (!st) st = expect_eol(ps);
    if (st) return st;
    fedc_value v = fedc__emit(ps->p, op, in, nin, attrs, nattr, NULL);
    if (v == FEDC_NONE) return builder_error(ps);
    const fedc_type *computed = &ps->p->nodes[v].type;
    if (!fedc_type_equal(&declared, computed)) {
        char want[64], got[64];
        return error_at(ps, type_at, "declared type %s but %s gives %s", fedc_type_str(&declared, got, sizeof got),
                        fedc__ops[op].name, fedc_type_str(computed, want, sizeof want));
    }
    return FEDC_OK;
}

/* %N = ..., where N must be the next value's number. */
static fedc_status parse_value_line(parser *ps) {
    int64_t n;
    const char *start;
    fedc_status st = scan_ref(ps, &n, &start);
    if (st) return st;
    if (n != ps->p->n) {
        char want[48];
        snprintf(want, sizeof want, "%%%d (values are numbered in order)", ps->p->n);
        ps->pos = start;
        return expected(ps, want);
    }
    st = expect(ps, '=', "'='");
    if (st) return st;
    const char *word;
    size_t len = scan_word(ps, &word);
    if (!len) return expected(ps, "an op name");
    if (word_is(word, len, "input")) return parse_input(ps);
    if (word_is(word, len, "constant")) return parse_constant(ps);
    return parse_op(ps, word, len);
}

/* output "name" = %N */
static fedc_status parse_output_line(parser *ps) {
    char *name;
    fedc_value v;
    skip_space(ps);
    const char *name_at = ps->pos;
    fedc_status st = parse_string(ps, &name);
    if (st) return st;
    st = expect(ps, '=', "'='");
    if (!st) st = parse_ref(ps, &v);
    if (!st) st = expect_eol(ps);
    if (!st && fedc_program_find_output(ps->p, name) != FEDC_NONE)
        st = error_at(ps, name_at, "duplicate output name \"%s\"", name);
    if (!st && (st = fedc_program_output(ps->p, name, v)) != FEDC_OK) st = with_line(ps, st);
    fedc_free(name);
    return st;
}

static fedc_status parse_line(parser *ps) {
    if (*ps->pos == '%') return parse_value_line(ps);
    const char *word;
    size_t n = scan_word(ps, &word);
    if (n && word_is(word, n, "output")) return parse_output_line(ps);
    ps->pos = word;
    return expected(ps, "'%N = ...' or 'output'");
}

static fedc_status parse_header(parser *ps) {
    const char *word;
    size_t n = scan_word(ps, &word);
    bool ok = word_is(word, n, "fedc");
    if (ok) {
        n = scan_word(ps, &word);
        ok = word_is(word, n, "program");
    }
    if (!ok) {
        ps->pos = word;
        return expected(ps, "the header 'fedc program'");
    }
    return expect_eol(ps);
}

/* The header, then every line; blank and comment-only lines are skipped. */
static fedc_status parse_lines(parser *ps) {
    bool header = false;
    for (;;) {
        skip_space(ps);
        if (!is_eol(*ps->pos)) {
            fedc_status st = header ? parse_line(ps) : parse_header(ps);
            if (st) return st;
            header = true;
        }
        const char *next = strchr(ps->pos, '\n');
        if (!next) break;
        ps->line = ps->pos = next + 1;
        ps->lineno++;
    }
    if (!header) return expected(ps, "the header 'fedc program'");
    return FEDC_OK;
}

/* ---------------------------------------------------------------- public -- */

static fedc_status parse_program(const char *text, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    parser ps = {p, text, text, 1};
    st = parse_lines(&ps);
    /* The lines were checked one by one as they were built; the verifier is the
     * last word on the whole program. */
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
