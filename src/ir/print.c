/* The text format, printing side: turns a program into text that
 * fedc_program_parse (src/ir/parse.c) reads back into the same program, node
 * for node and bit for bit. The format is specified here and in
 * docs/text-format.md; the two must agree.
 *
 *     fedc program
 *     %0 = input "x" : f32[4,3]
 *     %1 = input "w" : f32[3,2]
 *     %2 = matmul(%0, %1) {transpose_a=0, transpose_b=0} : f32[4,2]
 *     %3 = constant [0.5] : f32[]
 *     %4 = iota() {shape=[2, 3], axis=1, dtype=i32} : i32[2,3]
 *     %5 = input "round" : i32[]@server
 *     output "y" = %2
 *
 * and a federated program, whose map runs body 0 on every client:
 *
 *     fedc program
 *     body 0 {
 *       %0 = input "w" : f32[2]
 *       %1 = input "x" : f32[2]
 *       %2 = mul(%0, %1) : f32[2]
 *       output "y" = %2
 *     }
 *     %0 = input "w" : f32[2]@server
 *     %1 = input "x" : f32[2]@clients
 *     %2 = broadcast(%0) : f32[2]@clients
 *     %3 = map(%2, %1) {body=0} : (f32[2]@clients)
 *     %4 = result(%3) {index=0} : f32[2]@clients
 *     %5 = mean(%4) : f32[2]@server
 *     output "y" = %5
 *
 *  - The first line is the header "fedc program". Then the bodies, if any (see
 *    below), then one line per node, in program order: "%i = " where i is the
 *    node's index, then the node, then " : " and its type as fedc_type_str
 *    writes it ("f32[4,2]", "f32[]" for a scalar, "@server"/"@clients" after
 *    the brackets for those placements).
 *  - An input is `input "name"`; a constant is `constant [v, v, ...]` with every
 *    value, row-major; any other op is `name(%a, %b, ...)`, its operands in order
 *    (empty parentheses for none), then `{key=value, ...}` with the node's
 *    attributes in the order it stores them (no braces when it has none).
 *  - Attribute values by kind (src/ir/attrs.def): INTS as [1, 2], INT as 1,
 *    FLOAT as a double, DTYPE as its name (f32, f64, i32, u8, bool).
 *  - Numbers round-trip exactly: a double is the shortest of %.15g, %.16g and
 *    %.17g that strtod reads back to the same bits, an f32 the shortest of %.6g
 *    to %.9g that strtof reads back. Infinities are "inf" and "-inf". The NaN
 *    that strtod("nan") gives (0x7fc00000 as f32, 0x7ff8000000000000 as f64) is
 *    "nan"; any other NaN is "nan:0x" and its bits in hex, so payloads and signs
 *    survive. Integers print in decimal, bool as 0 or 1.
 *  - Names are double-quoted; \" \\ \n \t and \xHH (other control bytes) are the
 *    escapes. Bytes from 0x80 up (UTF-8) print as they are.
 *  - The outputs come last, one line each: `output "name" = %i`.
 *  - A program that runs bodies (map, fold) writes each body first, in order,
 *    as a block: `body i {`, the body's own lines (its bodies, nodes and
 *    outputs, numbered from %0, indented two more spaces), then `}`. Body i is
 *    the program's i-th body; an op names the body it runs as {body=i}.
 *  - The value of an op with a body is a tuple; its type is written as the list
 *    of its results' types, `(f32[]@clients, f32[2]@clients)`: what
 *    `result(%i) {index=k}` has, for each output k of the body.
 *  - The parser also takes blank lines, comments from '#' to the end of a line,
 *    any indentation, output lines anywhere after the value they name, and body
 *    blocks anywhere before the ops that run them.
 * Numbers are printed and read in the C locale whatever the caller's locale is,
 * so text written in one locale reads back in another. A program holding a
 * sticky builder error is not printed: the error is returned instead. */
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text.h"

/* ---------------------------------------------------------------- buffer -- */

/* A growable string. Growth goes through fedc_realloc so that allocation-failure
 * injection reaches it; the first failure is kept and later appends do nothing,
 * so the printing code checks once at the end. */
typedef struct text_buf {
    char *data;
    size_t len, cap;
    fedc_status status;
} text_buf;

static bool buf_reserve(text_buf *b, size_t extra) {
    if (b->status) return false;
    if (b->len + extra < b->cap) return true;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap <= b->len + extra) cap *= 2;
    char *data = fedc_realloc(b->data, cap);
    if (!data) {
        b->status = fedc_error(FEDC_ENOMEM, "program_print: cannot grow the text to %zu bytes", cap);
        return false;
    }
    b->data = data;
    b->cap = cap;
    return true;
}

static void buf_printf(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(text_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_reserve(b, (size_t)n + 1)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void buf_putc(text_buf *b, char c) {
    if (!buf_reserve(b, 2)) return;
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

static void buf_puts(text_buf *b, const char *s) {
    size_t n = strlen(s);
    if (!buf_reserve(b, n + 1)) return;
    memcpy(b->data + b->len, s, n + 1);
    b->len += n;
}

/* --------------------------------------------------------------- numbers -- */

/* The NaNs that print as a bare "nan": what the parser makes of "nan". */
#define CANONICAL_NAN32 UINT32_C(0x7fc00000)
#define CANONICAL_NAN64 UINT64_C(0x7ff8000000000000)

/* Writes inf/-inf/nan/nan:0x... for a non-finite value; false for a finite one. */
static bool format_nonfinite(char *out, size_t size, double x, uint64_t bits, uint64_t canonical, int hex_digits) {
    if (isinf(x)) {
        snprintf(out, size, "%s", x < 0 ? "-inf" : "inf");
        return true;
    }
    if (!isnan(x)) return false;
    if (bits == canonical) snprintf(out, size, "nan");
    else snprintf(out, size, "nan:0x%0*llx", hex_digits, (unsigned long long)bits);
    return true;
}

/* The shortest %g form that strtof reads back to the same bits; %.9g always does. */
static void format_f32(char *out, size_t size, float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if (format_nonfinite(out, size, x, bits, CANONICAL_NAN32, 8)) return;
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(out, size, "%.*g", prec, (double)x);
        float back = strtof(out, NULL);
        if (memcmp(&back, &x, sizeof x) == 0) return;
    }
}

/* The shortest %g form that strtod reads back to the same bits; %.17g always does. */
static void format_f64(char *out, size_t size, double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    if (format_nonfinite(out, size, x, bits, CANONICAL_NAN64, 16)) return;
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, size, "%.*g", prec, x);
        double back = strtod(out, NULL);
        if (memcmp(&back, &x, sizeof x) == 0) return;
    }
}

/* ----------------------------------------------------------------- parts -- */

static void print_type(text_buf *b, const fedc_type *t) {
    char s[64];
    buf_puts(b, fedc_type_str(t, s, sizeof s));
}

/* The type of the tuple value v: its parts, as the result rule types them. */
static void print_tuple(text_buf *b, const fedc_program *p, fedc_value v) {
    buf_puts(b, "(");
    for (int k = 0; k < fedc__tuple_size(p, &p->nodes[v]) && !b->status; k++) {
        fedc_type t;
        fedc_status st = fedc__tuple_part(p, v, k, &t);
        if (st) {
            char msg[768];
            snprintf(msg, sizeof msg, "%s", fedc_errmsg());
            b->status = fedc_error(st, "program_print: %%%d: %s", (int)v, msg);
            return;
        }
        if (k) buf_puts(b, ", ");
        print_type(b, &t);
    }
    buf_puts(b, ")");
}

static void print_string(text_buf *b, const char *s) {
    buf_putc(b, '"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') buf_printf(b, "\\%c", *c);
        else if (*c == '\n') buf_puts(b, "\\n");
        else if (*c == '\t') buf_puts(b, "\\t");
        else if (*c < 0x20 || *c == 0x7f) buf_printf(b, "\\x%02x", *c);
        else buf_putc(b, (char)*c);
    }
    buf_putc(b, '"');
}

static void print_ints(text_buf *b, const int64_t *v, int n) {
    buf_puts(b, "[");
    for (int i = 0; i < n; i++) buf_printf(b, i ? ", %lld" : "%lld", (long long)v[i]);
    buf_puts(b, "]");
}

static void print_attr(text_buf *b, const fedc__attr *a) {
    const fedc__attr_info *info = &fedc__attr_infos[a->key];
    char num[48];
    buf_printf(b, "%s=", info->name);
    switch (info->kind) {
    case FEDC_KIND_INTS: print_ints(b, a->v, a->n); break;
    case FEDC_KIND_INT: buf_printf(b, "%lld", (long long)a->v[0]); break;
    case FEDC_KIND_FLOAT:
        format_f64(num, sizeof num, a->f);
        buf_puts(b, num);
        break;
    case FEDC_KIND_DTYPE:
        /* A dtype out of range prints as its number; the parser rejects it, as
         * the verifier would. */
        if (a->v[0] >= 0 && a->v[0] < FEDC_DTYPE_COUNT) buf_puts(b, fedc_dtype_name((fedc_dtype)a->v[0]));
        else buf_printf(b, "%lld", (long long)a->v[0]);
        break;
    }
}

/* Element i of constant data of dtype dt, as the parser reads it back. */
static void format_element(char *out, size_t size, fedc_dtype dt, const void *data, int64_t i) {
    switch (dt) {
    case FEDC_F32: format_f32(out, size, ((const float *)data)[i]); break;
    case FEDC_F64: format_f64(out, size, ((const double *)data)[i]); break;
    case FEDC_I32: snprintf(out, size, "%ld", (long)((const int32_t *)data)[i]); break;
    case FEDC_U8:
    case FEDC_BOOL: snprintf(out, size, "%u", (unsigned)((const uint8_t *)data)[i]); break;
    default: snprintf(out, size, "?"); break;
    }
}

static void print_constant(text_buf *b, const fedc__node *n) {
    int64_t count = fedc_type_count(&n->type);
    char num[48];
    buf_puts(b, "constant [");
    for (int64_t i = 0; i < count && !b->status; i++) {
        format_element(num, sizeof num, n->type.dtype, n->data, i);
        if (i) buf_puts(b, ", ");
        buf_puts(b, num);
    }
    buf_puts(b, "]");
}

static void print_op(text_buf *b, const fedc__node *n) {
    buf_printf(b, "%s(", fedc__ops[n->op].name);
    for (int i = 0; i < n->nin; i++) buf_printf(b, i ? ", %%%d" : "%%%d", (int)n->in[i]);
    buf_puts(b, ")");
    if (!n->nattr) return;
    buf_puts(b, " {");
    for (int i = 0; i < n->nattr; i++) {
        if (i) buf_puts(b, ", ");
        print_attr(b, &n->attr[i]);
    }
    buf_puts(b, "}");
}

static void print_node(text_buf *b, const fedc_program *p, fedc_value v) {
    const fedc__node *n = &p->nodes[v];
    buf_printf(b, "%%%d = ", (int)v);
    if (n->op == FEDC_OP_INPUT) {
        buf_puts(b, "input ");
        print_string(b, n->name);
    } else if (n->op == FEDC_OP_CONSTANT) {
        print_constant(b, n);
    } else {
        print_op(b, n);
    }
    buf_puts(b, " : ");
    if (n->type.dtype == FEDC__TUPLE) print_tuple(b, p, v);
    else print_type(b, &n->type);
    buf_puts(b, "\n");
}

/* The tables are indexed by op, dtype and attribute key, and a body by its
 * number, so a node from a corrupted program is refused rather than read out of
 * bounds. Only an op with a body has a tuple value. */
static fedc_status check_node(const fedc_program *p, fedc_value v) {
    const fedc__node *n = &p->nodes[v];
    if ((unsigned)n->op >= FEDC_OP_COUNT)
        return fedc_error(FEDC_EINVAL, "program_print: %%%d has an unknown op %d", (int)v, (int)n->op);
    bool body = fedc__op_has_body(n->op);
    if ((unsigned)n->type.dtype >= FEDC_DTYPE_COUNT && !(body && n->type.dtype == FEDC__TUPLE))
        return fedc_error(FEDC_EINVAL, "program_print: %%%d (%s) has an unknown dtype %d", (int)v,
                          fedc__ops[n->op].name, (int)n->type.dtype);
    for (int i = 0; i < n->nattr; i++)
        if (n->attr[i].key >= FEDC_ATTR_KEY_COUNT)
            return fedc_error(FEDC_EINVAL, "program_print: %%%d has an unknown attribute key %d", (int)v,
                              n->attr[i].key);
    int64_t index = body ? fedc__attr_int(n, FEDC_ATTR_BODY, -1) : 0;
    if (body && (index < 0 || index >= p->nbodies))
        return fedc_error(FEDC_EINVAL, "program_print: %%%d (%s) runs body %lld, which the program does not have",
                          (int)v, fedc__ops[n->op].name, (long long)index);
    return FEDC_OK;
}

static fedc_status check_printable(const fedc_program *p) {
    for (fedc_value v = 0; v < p->n; v++) {
        fedc_status st = check_node(p, v);
        if (st) return st;
    }
    for (int i = 0; i < p->nbodies; i++) {
        fedc_status st = check_printable(p->bodies[i]);
        if (st) {
            char msg[768];
            snprintf(msg, sizeof msg, "%s", fedc_errmsg());
            return fedc_error(st, "body %d: %s", i, msg);
        }
    }
    return FEDC_OK;
}

static void print_indent(text_buf *b, int depth) {
    for (int i = 0; i < depth; i++) buf_puts(b, "  ");
}

static void print_lines(text_buf *b, const fedc_program *p, int depth);

/* Bodies come first: an op names its body by number, so the body is defined
 * before it, as a value is before its uses. */
static void print_bodies(text_buf *b, const fedc_program *p, int depth) {
    for (int i = 0; i < p->nbodies && !b->status; i++) {
        print_indent(b, depth);
        buf_printf(b, "body %d {\n", i);
        print_lines(b, p->bodies[i], depth + 1);
        print_indent(b, depth);
        buf_puts(b, "}\n");
    }
}

/* The lines of p (the program itself at depth 0, a body deeper), indented. */
static void print_lines(text_buf *b, const fedc_program *p, int depth) {
    print_bodies(b, p, depth);
    for (fedc_value v = 0; v < p->n && !b->status; v++) {
        print_indent(b, depth);
        print_node(b, p, v);
    }
    for (int i = 0; i < p->noutputs && !b->status; i++) {
        print_indent(b, depth);
        buf_puts(b, "output ");
        print_string(b, p->outputs[i].name);
        buf_printf(b, " = %%%d\n", (int)p->outputs[i].value);
    }
}

static void print_program(text_buf *b, const fedc_program *p) {
    buf_puts(b, "fedc program\n");
    print_lines(b, p, 0);
}

/* ---------------------------------------------------------------- public -- */

fedc_status fedc_program_to_string(const fedc_program *p, char **out) {
    *out = NULL;
    if (p->status) return fedc_program_status(p);
    fedc_status st = check_printable(p);
    if (st) return st;
    /* %g and strtod follow LC_NUMERIC; the format's decimal point is always '.'. */
    locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c_locale) return fedc_error(FEDC_ENOMEM, "program_print: cannot make the C locale");
    locale_t caller = uselocale(c_locale);
    text_buf b = {NULL, 0, 0, FEDC_OK};
    print_program(&b, p);
    uselocale(caller);
    freelocale(c_locale);
    if (b.status) {
        fedc_free(b.data);
        return b.status;
    }
    *out = b.data;
    return FEDC_OK;
}

fedc_status fedc_program_print(const fedc_program *p, FILE *out) {
    char *text;
    fedc_status st = fedc_program_to_string(p, &text);
    if (st) return st;
    int rc = fputs(text, out);
    fedc_free(text);
    if (rc == EOF || ferror(out)) return fedc_error(FEDC_EIO, "program_print: cannot write the text");
    return FEDC_OK;
}
