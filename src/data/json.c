/* json.c — the streaming JSON tokenizer behind json.h (RFC 8259).
 *
 * The file is read through zlib's gz* functions (which pass a plain file through)
 * in 256 KiB blocks; tokens are scanned straight out of the block. Only a string's
 * contents are copied, into one reusable buffer (and a number's spelling when it
 * straddles two blocks). Numbers are converted here, in one pass over their digits: a spelling with at most 2^53 as its digits and a power of ten up to 22 is
 * converted exactly with one multiplication or division (Clinger's fast path: both
 * operands are exact doubles, so the one rounding gives the correctly rounded
 * result); any other spelling goes to strtod under a "C" locale, so a program that
 * set a locale with a decimal comma still reads "0.5" as a half. */
#include "data/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define BLOCK (256 * 1024)    /* bytes read from the file at a time */
#define MAX_SKIP_DEPTH 512    /* nesting a skipped value may have */
#define MAX_EXACT (1ull << 53) /* integers up to this are exact doubles */

/* ------------------------------------------------------------- errors -- */

static fedc_status error_at(const fedc__json *j, fedc_status status, int64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static fedc_status error_at(const fedc__json *j, fedc_status status, int64_t offset, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fedc_error(status, "%s: byte %lld: %s", j->name, (long long)offset, what);
}

static fedc_status out_of_memory(const fedc__json *j) {
    return fedc_error(FEDC_ENOMEM, "%s: out of memory reading byte %lld", j->name,
                      (long long)j->base + (long long)j->pos);
}

const char *fedc__json_describe(const fedc__json *j) {
    switch (j->kind) {
    case FEDC__JSON_EOF: return "end of file";
    case FEDC__JSON_BEGIN_OBJECT: return "'{'";
    case FEDC__JSON_END_OBJECT: return "'}'";
    case FEDC__JSON_BEGIN_ARRAY: return "'['";
    case FEDC__JSON_END_ARRAY: return "']'";
    case FEDC__JSON_COLON: return "':'";
    case FEDC__JSON_COMMA: return "','";
    case FEDC__JSON_STRING: return "a string";
    case FEDC__JSON_NUMBER: return "a number";
    case FEDC__JSON_TRUE: return "true";
    case FEDC__JSON_FALSE: return "false";
    case FEDC__JSON_NULL: return "null";
    }
    return "?";
}

fedc_status fedc__json_unexpected(const fedc__json *j, const char *what) {
    return error_at(j, FEDC_EPARSE, j->offset, "expected %s, found %s", what, fedc__json_describe(j));
}

fedc_status fedc__json_expect(const fedc__json *j, fedc__json_kind kind, const char *what) {
    return j->kind == kind ? FEDC_OK : fedc__json_unexpected(j, what);
}

/* ------------------------------------------------------------- source -- */

fedc_status fedc__json_open(fedc__json *j, const char *path) {
    memset(j, 0, sizeof *j);
    j->name = path;
    j->buf = fedc_malloc(BLOCK + 1); /* + a NUL after the data, which ends a number */
    j->text = fedc_malloc(256);
    j->text_cap = 256;
    if (!j->buf || !j->text) {
        fedc__json_close(j);
        return fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    }
    j->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (j->c_locale == (locale_t)0) {
        fedc__json_close(j);
        return fedc_error(FEDC_ENOMEM, "%s: out of memory (for a \"C\" locale)", path);
    }
    j->gz = gzopen(path, "rb");
    if (!j->gz) {
        int err = errno;
        fedc__json_close(j);
        return fedc_error(err == ENOMEM ? FEDC_ENOMEM : FEDC_EIO, "%s: cannot open (%s)", path, strerror(err));
    }
    gzbuffer(j->gz, BLOCK); /* zlib's input buffer: fewer, larger reads */
    return FEDC_OK;
}

void fedc__json_close(fedc__json *j) {
    if (j->gz) gzclose_r(j->gz);
    if (j->c_locale != (locale_t)0) freelocale(j->c_locale);
    fedc_free(j->buf);
    fedc_free(j->text);
    memset(j, 0, sizeof *j);
}

/* Reads the next block; false at the end of the text or on a read error (then
 * io_status says which). zlib reports a truncated stream as a short read with
 * Z_BUF_ERROR, so a zero-byte read is checked with gzerror before it counts as
 * the end. */
static bool refill(fedc__json *j) {
    if (j->eof || j->io_status) return false;
    j->base += (int64_t)j->end;
    j->pos = j->end = 0;
    int n = gzread(j->gz, j->buf, BLOCK);
    int errnum = Z_OK;
    const char *msg = n <= 0 ? gzerror(j->gz, &errnum) : NULL;
    if (n < 0 || (n == 0 && errnum != Z_OK)) {
        size_t name_len = strlen(j->name);
        if (msg && strncmp(msg, j->name, name_len) == 0 && strncmp(msg + name_len, ": ", 2) == 0)
            msg += name_len + 2; /* zlib's message repeats the path */
        j->io_status = error_at(j, FEDC_EIO, j->base, "cannot read the data (%s)",
                                errnum == Z_ERRNO ? strerror(errno) : msg ? msg : "gzip error");
        return false;
    }
    j->end = (size_t)n;
    j->buf[n] = '\0';
    j->eof = n == 0;
    return n > 0;
}

/* The next byte without consuming it, or -1 at the end (or on a read error). */
static inline int peek(fedc__json *j) {
    if (j->pos < j->end) return j->buf[j->pos];
    return refill(j) ? j->buf[j->pos] : -1;
}

/* ------------------------------------------------------------ text buffer -- */

static fedc_status reserve_text(fedc__json *j, size_t more) {
    if (j->len + more + 1 <= j->text_cap) return FEDC_OK;
    size_t cap = j->text_cap;
    while (cap < j->len + more + 1) cap *= 2;
    char *grown = fedc_realloc(j->text, cap);
    if (!grown) return out_of_memory(j);
    j->text = grown;
    j->text_cap = cap;
    return FEDC_OK;
}

static fedc_status append(fedc__json *j, const void *bytes, size_t n) {
    fedc_status st = reserve_text(j, n);
    if (st) return st;
    memcpy(j->text + j->len, bytes, n);
    j->len += n;
    j->text[j->len] = '\0';
    return FEDC_OK;
}

/* ------------------------------------------------------------- numbers -- */

typedef struct number_parts {
    uint64_t digits;     /* the significant digits as an integer */
    bool overflow;       /* more digits than fit in `digits` */
    bool negative, integer;
    int64_t exponent;    /* value = digits * 10^exponent */
} number_parts;

static bool is_digit(int c) { return c >= '0' && c <= '9'; }

static const char *take_digits(const char *p, number_parts *n, int64_t *count) {
    for (; is_digit(*p); p++, ++*count) {
        if (n->digits <= (UINT64_MAX - 9) / 10) n->digits = n->digits * 10 + (uint64_t)(*p - '0');
        else n->overflow = true;
    }
    return p;
}

/* Reads a number by JSON's grammar, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?,
 * from s; returns where it ends, or NULL when s does not start with one. */
static const char *split_number(const char *s, number_parts *n) {
    const char *p = s;
    int64_t count = 0, frac = 0, e = 0;
    *n = (number_parts){.negative = *p == '-', .integer = true};
    p += n->negative;
    if (*p == '0') p++;
    else if (is_digit(*p)) p = take_digits(p, n, &count);
    else return NULL;
    if (*p == '.') {
        if (!is_digit(*++p)) return NULL;
        p = take_digits(p, n, &frac);
        n->integer = false;
    }
    if (*p == 'e' || *p == 'E') {
        bool minus = *++p == '-';
        p += *p == '-' || *p == '+';
        if (!is_digit(*p)) return NULL;
        for (; is_digit(*p); p++)
            if (e < 100000) e = e * 10 + (*p - '0'); /* beyond that it is 0 or infinity anyway */
        n->exponent = minus ? -e : e;
        n->integer = false;
    }
    n->exponent -= frac;
    return p;
}

/* `spelling` ends at a byte that cannot continue a number (strtod stops there). */
static double exact_or_strtod(fedc__json *j, const number_parts *n, const char *spelling) {
    static const double powers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (!n->overflow && n->digits <= MAX_EXACT && n->exponent >= -22 && n->exponent <= 22) {
        double m = (double)n->digits;
        double v = n->exponent < 0 ? m / powers[-n->exponent] : m * powers[n->exponent];
        return n->negative ? -v : v;
    }
    locale_t old = uselocale(j->c_locale);
    double v = strtod(spelling, NULL);
    uselocale(old);
    return v;
}

/* Bytes that may continue a number: one followed by any of them is malformed
 * ("01", "1.5.2") or, at the end of a block, may go on in the next. */
static bool is_number_byte(int c) { return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

/* A number that runs to the end of the block: copied into text across reads. */
static fedc_status copy_number(fedc__json *j) {
    j->len = 0;
    for (int c = peek(j); is_number_byte(c); c = peek(j)) {
        if (j->len + 1 >= j->text_cap) {
            fedc_status st = reserve_text(j, 1);
            if (st) return st;
        }
        j->text[j->len++] = (char)c;
        j->pos++;
    }
    j->text[j->len] = '\0';
    return j->io_status;
}

static fedc_status malformed(const fedc__json *j, const char *s) {
    int len = 0;
    while (len < 40 && is_number_byte(s[len])) len++;
    return error_at(j, FEDC_EPARSE, j->offset, "malformed number \"%.*s\"", len, s);
}

/* Numbers are parsed in one pass where they lie in the block (the NUL after the
 * data ends the last one); only one that reaches the end of the block, and so may
 * go on in the next, is copied out first. */
static fedc_status scan_number(fedc__json *j) {
    const char *s = (const char *)j->buf + j->pos, *block_end = (const char *)j->buf + j->end;
    number_parts n;
    const char *e = split_number(s, &n);
    const char *stop = e ? e : s;
    while (stop < block_end && is_number_byte(*stop)) stop++; /* only when malformed */
    if (stop == block_end && !j->eof) {
        fedc_status st = copy_number(j);
        if (st) return st;
        s = j->text;
        e = split_number(s, &n);
    } else {
        j->pos = (size_t)(stop - (const char *)j->buf);
    }
    if (!e || is_number_byte(*e)) return malformed(j, s);
    j->kind = FEDC__JSON_NUMBER;
    j->number = exact_or_strtod(j, &n, s);
    j->integer = n.integer && !n.overflow && n.digits <= (uint64_t)INT64_MAX;
    j->int_value = j->integer ? (n.negative ? -(int64_t)n.digits : (int64_t)n.digits) : 0;
    return FEDC_OK;
}

/* ------------------------------------------------------------- strings -- */

static int hex_value(int c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The 4 hex digits after "\u"; -1 when they are not. */
static long read_hex4(fedc__json *j) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_value(peek(j));
        if (d < 0) return -1;
        j->pos++;
        v = v * 16 + d;
    }
    return v;
}

static fedc_status append_utf8(fedc__json *j, unsigned long cp) {
    static const unsigned char lead[] = {0, 0, 0xC0, 0xE0, 0xF0}; /* by the encoding's length */
    unsigned char b[4];
    int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (int i = n - 1; i > 0; i--, cp >>= 6) b[i] = (unsigned char)(0x80 | (cp & 0x3F));
    b[0] = (unsigned char)(lead[n] | cp);
    return append(j, b, (size_t)n);
}

/* "\uXXXX" (the "\u" read), with a UTF-16 surrogate pair spelt as two of them. */
static fedc_status unicode_escape(fedc__json *j, int64_t at) {
    long cp = read_hex4(j), low = -1;
    bool high = cp >= 0xD800 && cp <= 0xDBFF;
    if (high && peek(j) == '\\') {
        j->pos++;
        if (peek(j) == 'u') j->pos++, low = read_hex4(j);
    }
    if (j->io_status) return j->io_status;
    if (cp < 0) return error_at(j, FEDC_EPARSE, at, "\\u is not followed by 4 hex digits");
    if (high && (low < 0xDC00 || low > 0xDFFF))
        return error_at(j, FEDC_EPARSE, at, "a \\u escape of a high surrogate without its low surrogate");
    if (!high && cp >= 0xDC00 && cp <= 0xDFFF)
        return error_at(j, FEDC_EPARSE, at, "a \\u escape of a lone low surrogate");
    if (high) cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    return append_utf8(j, (unsigned long)cp);
}

static fedc_status escape(fedc__json *j) {
    int64_t at = j->base + (int64_t)j->pos;
    j->pos++; /* the backslash */
    int c = peek(j);
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = c > 0 ? strchr(from, c) : NULL;
    if (c > 0) j->pos++;
    if (hit) return append(j, &to[hit - from], 1);
    if (c == 'u') return unicode_escape(j, at);
    if (c < 0 && j->io_status) return j->io_status;
    return error_at(j, FEDC_EPARSE, at, "invalid escape in a string");
}

/* After the opening quote: copies runs of plain bytes a block at a time. */
static fedc_status scan_string(fedc__json *j) {
    j->len = 0;
    j->text[0] = '\0';
    for (;;) {
        size_t start = j->pos;
        while (j->pos < j->end && j->buf[j->pos] != '"' && j->buf[j->pos] != '\\' && j->buf[j->pos] >= 0x20) j->pos++;
        fedc_status st = append(j, j->buf + start, j->pos - start);
        if (st) return st;
        int c = peek(j);
        if (c == '"') {
            j->pos++;
            j->kind = FEDC__JSON_STRING;
            return FEDC_OK;
        }
        if (c == '\\') st = escape(j);
        else if (c < 0) st = j->io_status ? j->io_status : error_at(j, FEDC_EPARSE, j->offset, "unterminated string");
        else if (c < 0x20)
            st = error_at(j, FEDC_EPARSE, j->base + (int64_t)j->pos, "control character 0x%02x in a string", c);
        if (st) return st;
    }
}

/* ------------------------------------------------------------- tokens -- */

static fedc_status scan_word(fedc__json *j, const char *word, fedc__json_kind kind) {
    for (const char *w = word; *w; w++) {
        if (peek(j) != *w) {
            if (j->io_status) return j->io_status;
            return error_at(j, FEDC_EPARSE, j->offset, "invalid literal (expected \"%s\")", word);
        }
        j->pos++;
    }
    j->kind = kind;
    return FEDC_OK;
}

static fedc_status punctuation(fedc__json *j, fedc__json_kind kind) {
    j->pos++;
    j->kind = kind;
    return FEDC_OK;
}

static fedc_status bad_character(fedc__json *j, int c) {
    if (c > 0x20 && c < 0x7F) return error_at(j, FEDC_EPARSE, j->offset, "unexpected character '%c'", c);
    return error_at(j, FEDC_EPARSE, j->offset, "unexpected byte 0x%02x", c);
}

fedc_status fedc__json_next(fedc__json *j) {
    int c = peek(j);
    while (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        j->pos++;
        c = j->pos < j->end ? j->buf[j->pos] : peek(j);
    }
    j->offset = j->base + (int64_t)j->pos;
    switch (c) {
    case -1:
        if (j->io_status) return j->io_status;
        j->kind = FEDC__JSON_EOF;
        return FEDC_OK;
    case '{': return punctuation(j, FEDC__JSON_BEGIN_OBJECT);
    case '}': return punctuation(j, FEDC__JSON_END_OBJECT);
    case '[': return punctuation(j, FEDC__JSON_BEGIN_ARRAY);
    case ']': return punctuation(j, FEDC__JSON_END_ARRAY);
    case ':': return punctuation(j, FEDC__JSON_COLON);
    case ',': return punctuation(j, FEDC__JSON_COMMA);
    case '"': j->pos++; return scan_string(j);
    case 't': return scan_word(j, "true", FEDC__JSON_TRUE);
    case 'f': return scan_word(j, "false", FEDC__JSON_FALSE);
    case 'n': return scan_word(j, "null", FEDC__JSON_NULL);
    default: return c == '-' || is_digit(c) ? scan_number(j) : bad_character(j, c);
    }
}

/* ------------------------------------------------------------ iteration -- */

fedc_status fedc__json_each_element(fedc__json *j, const char *what, fedc__json_element_fn fn, void *ctx) {
    fedc_status st = fedc__json_expect(j, FEDC__JSON_BEGIN_ARRAY, what);
    if (!st) st = fedc__json_next(j);
    if (st || j->kind == FEDC__JSON_END_ARRAY) return st;
    for (;;) {
        if ((st = fn(j, ctx)) || (st = fedc__json_next(j))) return st;
        if (j->kind == FEDC__JSON_END_ARRAY) return FEDC_OK;
        if ((st = fedc__json_expect(j, FEDC__JSON_COMMA, "',' or ']'")) || (st = fedc__json_next(j))) return st;
    }
}

/* The key is copied: reading the value reuses j->text. */
static fedc_status member(fedc__json *j, fedc__json_member_fn fn, void *ctx) {
    int64_t at = j->offset;
    fedc_status st = fedc__json_expect(j, FEDC__JSON_STRING, "a key string");
    if (st) return st;
    if (strlen(j->text) != j->len) return error_at(j, FEDC_EPARSE, at, "a key holds a NUL character");
    char *key = fedc_malloc(j->len + 1);
    if (!key) return out_of_memory(j);
    memcpy(key, j->text, j->len + 1);
    if (!st) st = fedc__json_next(j);
    if (!st) st = fedc__json_expect(j, FEDC__JSON_COLON, "':'");
    if (!st) st = fedc__json_next(j);
    if (!st) st = fn(j, ctx, key, at);
    fedc_free(key);
    return st;
}

fedc_status fedc__json_each_member(fedc__json *j, const char *what, fedc__json_member_fn fn, void *ctx) {
    fedc_status st = fedc__json_expect(j, FEDC__JSON_BEGIN_OBJECT, what);
    if (!st) st = fedc__json_next(j);
    if (st || j->kind == FEDC__JSON_END_OBJECT) return st;
    for (;;) {
        if ((st = member(j, fn, ctx)) || (st = fedc__json_next(j))) return st;
        if (j->kind == FEDC__JSON_END_OBJECT) return FEDC_OK;
        if ((st = fedc__json_expect(j, FEDC__JSON_COMMA, "',' or '}'")) || (st = fedc__json_next(j))) return st;
    }
}

/* ------------------------------------------------------------ skipping -- */

static bool is_scalar(fedc__json_kind k) {
    return k == FEDC__JSON_STRING || k == FEDC__JSON_NUMBER || k == FEDC__JSON_TRUE || k == FEDC__JSON_FALSE ||
           k == FEDC__JSON_NULL;
}

/* Inside an object, a member starts with its key and ':'; leaves the current
 * token at the member's value. */
static fedc_status member_start(fedc__json *j, fedc__json_kind closer) {
    if (closer != FEDC__JSON_END_OBJECT) return FEDC_OK;
    fedc_status st = fedc__json_expect(j, FEDC__JSON_STRING, "a key string");
    if (!st) st = fedc__json_next(j);
    if (!st) st = fedc__json_expect(j, FEDC__JSON_COLON, "':'");
    if (!st) st = fedc__json_next(j);
    return st;
}

/* After a value: reads ',' (and the next member's start) or closes containers.
 * *done when the outermost one closed. */
static fedc_status after_value(fedc__json *j, fedc__json_kind *closer, int *depth, bool *done) {
    while (*depth > 0) {
        fedc_status st = fedc__json_next(j);
        if (st) return st;
        fedc__json_kind want = closer[*depth - 1];
        if (j->kind == FEDC__JSON_COMMA) {
            st = fedc__json_next(j);
            return st ? st : member_start(j, want);
        }
        if (j->kind != want)
            return fedc__json_unexpected(j, want == FEDC__JSON_END_OBJECT ? "',' or '}'" : "',' or ']'");
        --*depth;
    }
    *done = true;
    return FEDC_OK;
}

/* Validates what it skips (a malformed value is an error wherever it is), with an
 * explicit stack so that deep nesting cannot exhaust the C stack. */
fedc_status fedc__json_skip_value(fedc__json *j) {
    fedc__json_kind closer[MAX_SKIP_DEPTH];
    int depth = 0;
    bool done = false;
    while (!done) {
        fedc_status st = FEDC_OK;
        if (j->kind == FEDC__JSON_BEGIN_OBJECT || j->kind == FEDC__JSON_BEGIN_ARRAY) {
            if (depth == MAX_SKIP_DEPTH)
                return error_at(j, FEDC_EPARSE, j->offset, "nested deeper than %d levels", MAX_SKIP_DEPTH);
            closer[depth++] = j->kind == FEDC__JSON_BEGIN_OBJECT ? FEDC__JSON_END_OBJECT : FEDC__JSON_END_ARRAY;
            if ((st = fedc__json_next(j))) return st;
            if (j->kind != closer[depth - 1]) {
                if ((st = member_start(j, closer[depth - 1]))) return st;
                continue; /* at the first member's value */
            }
            depth--; /* an empty container */
        } else if (!is_scalar(j->kind)) {
            return fedc__json_unexpected(j, "a value");
        }
        if ((st = after_value(j, closer, &depth, &done))) return st;
    }
    return FEDC_OK;
}
