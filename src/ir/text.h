/*
 * text.h — shared by the files of the text format: print.c (which specifies the
 * format), parse.c (lines, nodes, bodies) and parse_lex.c (tokens, numbers,
 * names, types). Not part of the public API.
 */
#ifndef FEDC_IR_TEXT_H
#define FEDC_IR_TEXT_H

#include <string.h>

#include "ir/ir.h"

/* ------------------------------------------------------------- tuples -- */

/* How many parts the tuple value of node n has: one per output of its body. */
static inline int fedc__tuple_size(const fedc_program *p, const fedc__node *n) {
    return fedc__body(p, n)->noutputs;
}

/* The type of part k of tuple value v: the type that result(v) {index=k} has.
 * It is asked of the result rule, so that every op with a body (map, fold) prints
 * and parses its tuple the way its results are typed. */
static inline fedc_status fedc__tuple_part(const fedc_program *p, fedc_value v, int k, fedc_type *out) {
    fedc__node r;
    memset(&r, 0, sizeof r);
    r.op = FEDC_OP_RESULT;
    r.nin = 1;
    r.in = &v;
    r.nattr = 1;
    r.attr[0] = fedc__attr_make_int(FEDC_ATTR_INDEX, k);
    return fedc__infer(p, &r, out);
}

/* ------------------------------------------------------------- parser -- */

/* Where the parser stands. `p` is the program the current line adds to: the
 * program itself, or a body while its block is read. */
typedef struct fedc__parser {
    fedc_program *p;
    const char *line; /* first character of the current line */
    const char *pos;  /* next character to read */
    int lineno;       /* 1-based */
} fedc__parser;

#define FEDC__MAX_NUMBER 128 /* longest number token, with its NUL */

static inline bool fedc__lex_is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static inline bool fedc__lex_is_digit(char c) { return c >= '0' && c <= '9'; }
static inline bool fedc__lex_is_eol(char c) { return c == '\n' || c == '\0'; }
static inline bool fedc__lex_word_is(const char *s, size_t n, const char *word) {
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* Errors. Every one is FEDC_EPARSE except running out of memory (FEDC_ENOMEM).
 * error_at: "line L, column C: <message>", the column being `at`'s.
 * expected: "line L, column C: expected <what>, found <what stands at the cursor>".
 * with_line: "line L: " before the message of a failed library call. */
fedc_status fedc__lex_error_at(const fedc__parser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
fedc_status fedc__lex_expected(const fedc__parser *ps, const char *what);
fedc_status fedc__lex_out_of_memory(const fedc__parser *ps);
fedc_status fedc__lex_with_line(const fedc__parser *ps, fedc_status st);

/* Tokens. Each skips spaces, tabs, a '\r' and a '#' comment before it; none
 * passes the end of the line. */
void fedc__lex_skip_space(fedc__parser *ps);
bool fedc__lex_accept(fedc__parser *ps, char c);
fedc_status fedc__lex_expect(fedc__parser *ps, char c, const char *what);
fedc_status fedc__lex_expect_eol(fedc__parser *ps);
/* An identifier: returns its length (0 if none), *start where it is. */
size_t fedc__lex_word(fedc__parser *ps, const char **start);
/* A number token copied into buf[FEDC__MAX_NUMBER], unconverted. */
fedc_status fedc__lex_number(fedc__parser *ps, char *buf, const char **start, const char *what);

/* Values. `what` names the expected thing in an error; `at` (may be NULL) gets
 * where the token began, for the caller's range errors. */
fedc_status fedc__lex_int(fedc__parser *ps, int64_t *out, const char *what, const char **at);
fedc_status fedc__lex_float(fedc__parser *ps, fedc_dtype dt, void *out, const char *what);
fedc_status fedc__lex_scan_ref(fedc__parser *ps, int64_t *n, const char **start); /* %N, syntax only */
fedc_status fedc__lex_ref(fedc__parser *ps, fedc_value *out);                     /* %N defined above */
fedc_status fedc__lex_string(fedc__parser *ps, char **out); /* fedc_malloc'd; the caller frees */
fedc_status fedc__lex_dtype(fedc__parser *ps, fedc_dtype *out, const char *what);
fedc_status fedc__lex_type(fedc__parser *ps, fedc_type *t); /* dtype[dims]@placement */

#endif /* FEDC_IR_TEXT_H */
