/* json.h — a small streaming JSON tokenizer (internal), for readers of big JSON
 * files such as LEAF's: it pulls one token at a time from a plain or gzipped file
 * (read through zlib, which passes plain files through), builds no tree, and hands
 * numbers over already converted, so a reader can store them straight into its
 * arrays.
 *
 *     fedc__json j;
 *     if (fedc__json_open(&j, path)) return ...;
 *     st = fedc__json_next(&j);          // j.kind is FEDC__JSON_BEGIN_OBJECT, ...
 *     ...
 *     fedc__json_close(&j);
 *
 * Offsets are byte offsets into the JSON text (after decompression), which is what
 * error messages report as "byte N". */
#ifndef FEDC_DATA_JSON_H
#define FEDC_DATA_JSON_H

#include <locale.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fedc/core.h"

typedef enum fedc__json_kind {
    FEDC__JSON_EOF,
    FEDC__JSON_BEGIN_OBJECT, /* { */
    FEDC__JSON_END_OBJECT,   /* } */
    FEDC__JSON_BEGIN_ARRAY,  /* [ */
    FEDC__JSON_END_ARRAY,    /* ] */
    FEDC__JSON_COLON,
    FEDC__JSON_COMMA,
    FEDC__JSON_STRING,
    FEDC__JSON_NUMBER,
    FEDC__JSON_TRUE,
    FEDC__JSON_FALSE,
    FEDC__JSON_NULL
} fedc__json_kind;

typedef struct fedc__json {
    /* source */
    void *gz;         /* the zlib gzFile */
    const char *name; /* the path, for messages */
    unsigned char *buf;
    size_t pos, end;  /* unread bytes are buf[pos .. end) */
    int64_t base;     /* offset of buf[0] in the JSON text */
    bool eof;
    fedc_status io_status; /* set when a read failed */
    locale_t c_locale;     /* strtod's fallback path runs in it */

    /* the current token */
    fedc__json_kind kind;
    int64_t offset;       /* where it starts */
    char *text;           /* STRING: its bytes, unescaped (UTF-8), NUL-terminated */
    size_t len, text_cap; /* bytes in text (not counting the NUL), allocated */
    double number;        /* NUMBER: the value, correctly rounded */
    bool integer;         /* NUMBER: spelt without fraction or exponent and fits int64 */
    int64_t int_value;    /* NUMBER: the value when `integer` */
} fedc__json;

/* Opens a .json or .json.gz file (FEDC_EIO naming it when it cannot, FEDC_ENOMEM).
 * On failure nothing is left to close. */
fedc_status fedc__json_open(fedc__json *j, const char *path);
void fedc__json_close(fedc__json *j); /* safe on a zeroed or closed one */

/* Reads the next token into j->kind (and text, number, ...). At the end of the
 * text the kind is FEDC__JSON_EOF. FEDC_EPARSE on a malformed token, FEDC_EIO when
 * the file cannot be read (a corrupt or truncated gzip stream), with the file and
 * byte offset in the message. */
fedc_status fedc__json_next(fedc__json *j);

/* Skips the value whose first token is the current one: afterwards the current
 * token is the value's last ('}', ']' or the scalar itself). */
fedc_status fedc__json_skip_value(fedc__json *j);

/* Calls fn for each element of the list whose '[' is the current token, with the
 * current token at the element's first token; fn leaves it at the element's last.
 * `what` names the list in the message when the current token is not '['. */
typedef fedc_status (*fedc__json_element_fn)(fedc__json *j, void *ctx);
fedc_status fedc__json_each_element(fedc__json *j, const char *what, fedc__json_element_fn fn, void *ctx);

/* The same for the members of an object: fn gets the key (a NUL-terminated copy,
 * valid during the call) and the offset where it starts, with the current token at
 * the value's first token. */
typedef fedc_status (*fedc__json_member_fn)(fedc__json *j, void *ctx, const char *key, int64_t at);
fedc_status fedc__json_each_member(fedc__json *j, const char *what, fedc__json_member_fn fn, void *ctx);

/* The current token must be `kind`; FEDC_EPARSE "<file>: byte N: expected <what>,
 * found <token>" otherwise. */
fedc_status fedc__json_expect(const fedc__json *j, fedc__json_kind kind, const char *what);
/* FEDC_EPARSE "<file>: byte N: expected <what>, found <current token>". */
fedc_status fedc__json_unexpected(const fedc__json *j, const char *what);
/* Describes the current token for messages: "'}'", "a string", "end of file". */
const char *fedc__json_describe(const fedc__json *j);

#endif
