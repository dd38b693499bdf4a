/* The text format's tokens: errors with line and column, spaces and comments,
 * words, numbers (exactly as src/ir/print.c writes them), value references,
 * quoted names and types. The lines, nodes and bodies made of them are parsed in
 * src/ir/parse.c; text.h declares what is shared. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text.h"

/* Elements a type may have: its size in bytes must fit in an int64 whatever the
 * dtype, and so must every partial product of its dims. */
#define MAX_ELEMENTS (INT64_MAX / 8)

/* ---------------------------------------------------------------- errors -- */

fedc_status fedc__lex_error_at(const fedc__parser *ps, const char *at, const char *fmt, ...) {
    char detail[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return fedc_error(FEDC_EPARSE, "line %d, column %d: %s", ps->lineno, (int)(at - ps->line) + 1, detail);
}

static bool is_hex(char c) { return fedc__lex_is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
/* Characters of a number token: digits, exponents, signs, inf, nan:0x... */
static bool is_number_char(char c) {
    return fedc__lex_is_alpha(c) || fedc__lex_is_digit(c) || c == '.' || c == '+' || c == '-' || c == ':';
}

/* What stands at `at`, quoted, for "found ..." (a word or number whole). */
static void describe(const char *at, char *buf, size_t size) {
    if (fedc__lex_is_eol(*at)) {
        snprintf(buf, size, *at ? "end of line" : "end of input");
        return;
    }
    int n = 1;
    if (is_number_char(*at) || *at == '%')
        while (n < 24 && is_number_char(at[n])) n++;
    snprintf(buf, size, "'%.*s'", n, at);
}

fedc_status fedc__lex_expected(const fedc__parser *ps, const char *what) {
    char found[40];
    describe(ps->pos, found, sizeof found);
    return fedc__lex_error_at(ps, ps->pos, "expected %s, found %s", what, found);
}

fedc_status fedc__lex_out_of_memory(const fedc__parser *ps) {
    return fedc_error(FEDC_ENOMEM, "line %d: out of memory", ps->lineno);
}

/* Puts the line number before the current message of a failed library call,
 * keeping its words (a type rule's names the op and the types). */
fedc_status fedc__lex_with_line(const fedc__parser *ps, fedc_status st) {
    char msg[768];
    snprintf(msg, sizeof msg, "%s", fedc_errmsg());
    return fedc_error(st == FEDC_ENOMEM ? FEDC_ENOMEM : FEDC_EPARSE, "line %d: %s", ps->lineno, msg);
}

/* ----------------------------------------------------------------- lexing -- */

/* Spaces, tabs, the \r of a CRLF, and a comment running to the end of the line. */
void fedc__lex_skip_space(fedc__parser *ps) {
    for (;;) {
        char c = *ps->pos;
        if (c == ' ' || c == '\t' || c == '\r') {
            ps->pos++;
        } else if (c == '#') {
            while (!fedc__lex_is_eol(*ps->pos)) ps->pos++;
        } else {
            return;
        }
    }
}

bool fedc__lex_accept(fedc__parser *ps, char c) {
    fedc__lex_skip_space(ps);
    if (*ps->pos != c) return false;
    ps->pos++;
    return true;
}

fedc_status fedc__lex_expect(fedc__parser *ps, char c, const char *what) {
    return fedc__lex_accept(ps, c) ? FEDC_OK : fedc__lex_expected(ps, what);
}

fedc_status fedc__lex_expect_eol(fedc__parser *ps) {
    fedc__lex_skip_space(ps);
    return fedc__lex_is_eol(*ps->pos) ? FEDC_OK : fedc__lex_expected(ps, "end of line");
}

/* An identifier; returns its length (0 if none) and leaves *start at it. */
size_t fedc__lex_word(fedc__parser *ps, const char **start) {
    fedc__lex_skip_space(ps);
    *start = ps->pos;
    if (!fedc__lex_is_alpha(*ps->pos)) return 0;
    while (fedc__lex_is_alpha(*ps->pos) || fedc__lex_is_digit(*ps->pos)) ps->pos++;
    return (size_t)(ps->pos - *start);
}

/* Copies the number token at the cursor, NUL-terminated, into buf[FEDC__MAX_NUMBER]
 * and moves past it; *start is where it began. Conversion is the caller's. */
fedc_status fedc__lex_number(fedc__parser *ps, char *buf, const char **start, const char *what) {
    fedc__lex_skip_space(ps);
    size_t n = 0;
    while (is_number_char(ps->pos[n])) n++;
    if (n == 0 || n >= FEDC__MAX_NUMBER) return fedc__lex_expected(ps, what);
    memcpy(buf, ps->pos, n);
    buf[n] = '\0';
    *start = ps->pos;
    ps->pos += n;
    return FEDC_OK;
}

/* A decimal integer. `at` (may be NULL) receives where it began, for range errors. */
fedc_status fedc__lex_int(fedc__parser *ps, int64_t *out, const char *what, const char **at) {
    *out = 0;
    if (at) *at = ps->pos;
    char buf[FEDC__MAX_NUMBER];
    const char *start;
    fedc_status st = fedc__lex_number(ps, buf, &start, what);
    if (st) return st;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (end == buf || *end) {
        ps->pos = start;
        return fedc__lex_expected(ps, what);
    }
    if (errno == ERANGE) return fedc__lex_error_at(ps, start, "integer '%s' is out of range", buf);
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
static fedc_status parse_nan(fedc__parser *ps, const char *buf, const char *start, fedc_dtype dt, void *out,
                             const char *what) {
    uint64_t bits;
    if (!nan_bits(buf, dt, &bits)) {
        ps->pos = start;
        return fedc__lex_expected(ps, what);
    }
    if (dt == FEDC_F32) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof f);
        if (!isnan(f)) return fedc__lex_error_at(ps, start, "'%s' is not the bit pattern of a NaN", buf);
        memcpy(out, &f, sizeof f);
    } else {
        double d;
        memcpy(&d, &bits, sizeof d);
        if (!isnan(d)) return fedc__lex_error_at(ps, start, "'%s' is not the bit pattern of a NaN", buf);
        memcpy(out, &d, sizeof d);
    }
    return FEDC_OK;
}

/* A floating-point number stored as dt (f32 or f64) at out: decimal (as strtod
 * reads it), inf, -inf, nan or nan:0x<bits>. Hex floats are not part of the
 * format. f32 is read with strtof, so it is rounded once, exactly as printed. */
fedc_status fedc__lex_float(fedc__parser *ps, fedc_dtype dt, void *out, const char *what) {
    char buf[FEDC__MAX_NUMBER];
    const char *start;
    fedc_status st = fedc__lex_number(ps, buf, &start, what);
    if (st) return st;
    const char *unsigned_part = buf + (buf[0] == '+' || buf[0] == '-');
    if (*unsigned_part == 'n' || *unsigned_part == 'N') return parse_nan(ps, buf, start, dt, out, what);
    if (strchr(buf, 'x') || strchr(buf, 'X')) {
        ps->pos = start;
        return fedc__lex_expected(ps, what);
    }
    char *end;
    errno = 0;
    float f = dt == FEDC_F32 ? strtof(buf, &end) : 0;
    double d = dt == FEDC_F32 ? f : strtod(buf, &end);
    if (end == buf || *end) {
        ps->pos = start;
        return fedc__lex_expected(ps, what);
    }
    /* Underflow to a denormal or zero is the nearest value, so it stands;
     * overflow of a finite literal to infinity does not. */
    if (errno == ERANGE && isinf(d))
        return fedc__lex_error_at(ps, start, "'%s' is out of range for %s", buf, fedc_dtype_name(dt));
    if (dt == FEDC_F32) memcpy(out, &f, sizeof f);
    else memcpy(out, &d, sizeof d);
    return FEDC_OK;
}

/* A value reference %N, syntax only: *n is N, *start where the '%' is. */
fedc_status fedc__lex_scan_ref(fedc__parser *ps, int64_t *n, const char **start) {
    fedc__lex_skip_space(ps);
    *n = 0;
    *start = ps->pos;
    if (ps->pos[0] != '%' || !fedc__lex_is_digit(ps->pos[1])) return fedc__lex_expected(ps, "a value like %3");
    ps->pos++;
    while (fedc__lex_is_digit(*ps->pos)) {
        *n = *n * 10 + (*ps->pos++ - '0');
        if (*n > INT32_MAX) return fedc__lex_error_at(ps, *start, "value number is too large");
    }
    return FEDC_OK;
}

/* A reference to a value defined on an earlier line. */
fedc_status fedc__lex_ref(fedc__parser *ps, fedc_value *out) {
    int64_t n;
    const char *start;
    fedc_status st = fedc__lex_scan_ref(ps, &n, &start);
    if (st) return st;
    if (n >= ps->p->n)
        return fedc__lex_error_at(ps, start,
                                  "%%%lld is used before it is defined (values must be defined on an earlier line)",
                                  (long long)n);
    *out = (fedc_value)n;
    return FEDC_OK;
}

/* One escape after a backslash in a quoted name; *s is past the backslash. */
static fedc_status parse_escape(fedc__parser *ps, const char **s, char *out) {
    const char *at = *s - 1;
    char c = **s;
    if (c == '"' || c == '\\') *out = c;
    else if (c == 'n') *out = '\n';
    else if (c == 't') *out = '\t';
    else if (c == 'x' && is_hex((*s)[1]) && is_hex((*s)[2])) {
        char hex[3] = {(*s)[1], (*s)[2], '\0'};
        *out = (char)strtol(hex, NULL, 16);
        if (*out == '\0') return fedc__lex_error_at(ps, at, "a name cannot contain \\x00");
        *s += 2;
    } else {
        return fedc__lex_error_at(ps, at, "unknown escape in a name (the escapes are \\\" \\\\ \\n \\t \\xHH)");
    }
    (*s)++;
    return FEDC_OK;
}

/* A double-quoted name, into a fedc_malloc'd string the caller frees. */
fedc_status fedc__lex_string(fedc__parser *ps, char **out) {
    *out = NULL;
    fedc__lex_skip_space(ps);
    if (*ps->pos != '"') return fedc__lex_expected(ps, "a quoted name");
    const char *s = ps->pos + 1;
    /* Escapes only shrink the text, so the rest of the line bounds the name. */
    char *name = fedc_malloc(strcspn(s, "\n") + 1);
    if (!name) return fedc__lex_out_of_memory(ps);
    size_t n = 0;
    fedc_status st = FEDC_OK;
    while (!st && *s != '"') {
        if (fedc__lex_is_eol(*s)) st = fedc__lex_error_at(ps, s, "expected '\"' to end the name, found end of line");
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

fedc_status fedc__lex_dtype(fedc__parser *ps, fedc_dtype *out, const char *what) {
    const char *start;
    size_t n = fedc__lex_word(ps, &start);
    if (!n) return fedc__lex_expected(ps, what);
    for (int dt = 0; dt < FEDC_DTYPE_COUNT; dt++) {
        if (fedc__lex_word_is(start, n, fedc_dtype_name((fedc_dtype)dt))) {
            *out = (fedc_dtype)dt;
            return FEDC_OK;
        }
    }
    return fedc__lex_error_at(ps, start, "unknown dtype '%.*s' (the dtypes are f32, f64, i32, u8, bool)", (int)n,
                              start);
}

static fedc_status parse_placement(fedc__parser *ps, fedc_placement *out) {
    const char *start;
    size_t n = fedc__lex_word(ps, &start);
    if (!n) return fedc__lex_expected(ps, "a placement (server, groups or clients)");
    for (int pl = 0; pl < FEDC_PLACEMENT_COUNT; pl++) {
        if (fedc__lex_word_is(start, n, fedc_placement_name((fedc_placement)pl))) {
            *out = (fedc_placement)pl;
            return FEDC_OK;
        }
    }
    return fedc__lex_error_at(ps, start, "unknown placement '%.*s' (the placements are local, server, groups, clients)",
                              (int)n, start);
}

static fedc_status parse_dims(fedc__parser *ps, fedc_type *t) {
    if (fedc__lex_accept(ps, ']')) return FEDC_OK;
    int64_t product = 1; /* of the nonzero dims, which bounds every partial product */
    for (;;) {
        int64_t d;
        const char *at;
        fedc_status st = fedc__lex_int(ps, &d, "a dimension", &at);
        if (st) return st;
        if (d < 0) return fedc__lex_error_at(ps, at, "a dimension cannot be negative (%lld)", (long long)d);
        if (t->rank == FEDC_MAX_RANK)
            return fedc__lex_error_at(ps, at, "a type has at most %d dimensions", FEDC_MAX_RANK);
        if (d > 0 && product > MAX_ELEMENTS / d) return fedc__lex_error_at(ps, at, "the type has too many elements");
        if (d > 0) product *= d;
        t->dims[t->rank++] = d;
        if (fedc__lex_accept(ps, ',')) continue;
        return fedc__lex_expect(ps, ']', "',' or ']'");
    }
}

/* dtype[dims] with an optional @placement. */
fedc_status fedc__lex_type(fedc__parser *ps, fedc_type *t) {
    memset(t, 0, sizeof *t);
    fedc_status st = fedc__lex_dtype(ps, &t->dtype, "a type like f32[4,3]");
    if (!st) st = fedc__lex_expect(ps, '[', "'[' after the dtype");
    if (!st) st = parse_dims(ps, t);
    if (!st && fedc__lex_accept(ps, '@')) st = parse_placement(ps, &t->placement);
    return st;
}
