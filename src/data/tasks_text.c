/* Task preprocessing for the text tasks, as FedJAX defines them: Shakespeare
 * (fedjax/datasets/shakespeare.py: _build_look_up_table, TABLE, preprocess_client)
 * and Stack Overflow (fedjax/datasets/stackoverflow.py: default_vocab and
 * StackoverflowTokenizer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tasks.h"

static fedc_status fail(fedc_client_data **out, fedc_status st) {
    fedc_client_data_destroy(*out);
    *out = NULL;
    return st;
}

/* A new client named like `in` holding "x" and "y" (taken over: freed on failure). */
static fedc_status make_xy(const fedc_client_data *in, fedc_type xt, int32_t *x, fedc_type yt, int32_t *y,
                           fedc_client_data **out) {
    fedc_status st = fedc_client_data_create(out, in->id, xt.dims[0]);
    if (st) {
        fedc_free(x);
        fedc_free(y);
        return st;
    }
    st = fedc__task_adopt(*out, "x", xt, x);
    if (st) {
        fedc_free(y);
        return fail(out, st);
    }
    st = fedc__task_adopt(*out, "y", yt, y);
    return st ? fail(out, st) : FEDC_OK;
}

/* Example i of a strings feature: its bytes and length. */
static const char *string_at(const fedc_feature *f, int64_t i, size_t *len) {
    *len = (size_t)(f->offsets[i + 1] - f->offsets[i]);
    return (const char *)f->data + f->offsets[i];
}

/* -------------------------------------------------------- Shakespeare -- */

#define SHAKESPEARE "Shakespeare"

/* FedJAX's vocabulary, "re-used from the Federated Learning for Text Generation
 * tutorial": byte k of it is id 3 + k. */
static const char vocab86[] = "dhlptx@DHLPTX $(,048cgkoswCGKOSW[_#'/37;?bfjnrvzBFJNRVZ\"&*.26:\n"
                              "aeimquyAEIMQUY]!%)-159\r";
_Static_assert(sizeof vocab86 - 1 == 86, "FedJAX's Shakespeare vocabulary has 86 characters");

const char *fedc_shakespeare_vocab(void) { return vocab86; }

int32_t fedc_shakespeare_char_id(unsigned char c) {
    const char *p = memchr(vocab86, c, sizeof vocab86 - 1); /* never the terminating NUL */
    return p ? (int32_t)(3 + (p - vocab86)) : FEDC_SHAKESPEARE_OOV;
}

/* FedJAX's TABLE: the id of every byte, built per call (it is 256 entries) so
 * there is no shared state to initialize. */
static void build_table(int32_t table[256]) {
    for (int b = 0; b < 256; b++) table[b] = FEDC_SHAKESPEARE_OOV;
    for (int k = 0; k < 86; k++) table[(unsigned char)vocab86[k]] = 3 + k;
}

/* preprocess_client: snippets joined as BOS + ids + EOS into J; x = J[:-1] and
 * y = J[1:], padded with PAD to rows of `length`. */
static fedc_status shakespeare_snippets(const fedc_client_data *in, const fedc_feature *snippets, int64_t length,
                                        fedc_client_data **out) {
    int64_t n = in->num_examples, joined = snippets->offsets[n] - snippets->offsets[0] + 2 * n;
    /* FedJAX's padded_length = (joined - 1 + L - 1) // L * L; no snippets, no rows. */
    int64_t rows = joined ? (joined - 1 + length - 1) / length : 0;
    int32_t *j = fedc__task_alloc(in, joined, sizeof *j), *x = fedc__task_alloc(in, rows * length, sizeof *x),
            *y = fedc__task_alloc(in, rows * length, sizeof *y);
    if (!j || !x || !y) {
        fedc_free(j), fedc_free(x), fedc_free(y);
        return FEDC_ENOMEM;
    }
    int32_t table[256];
    build_table(table);
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        const unsigned char *s = (const unsigned char *)string_at(snippets, i, &len);
        j[at++] = FEDC_SHAKESPEARE_BOS;
        for (size_t k = 0; k < len; k++) j[at++] = table[s[k]];
        j[at++] = FEDC_SHAKESPEARE_EOS;
    }
    for (int64_t k = 0; k < rows * length; k++) {
        x[k] = k < joined - 1 ? j[k] : FEDC_SHAKESPEARE_PAD;
        y[k] = k < joined - 1 ? j[k + 1] : FEDC_SHAKESPEARE_PAD;
    }
    fedc_free(j);
    fedc_type t = fedc_type_make(FEDC_I32, 2, (int64_t[]){rows, length});
    return make_xy(in, t, x, t, y, out);
}

/* LEAF: x is n strings of one length L, y n strings of one byte. */
static fedc_status leaf_check(const fedc_client_data *in, const fedc_feature *xs, const fedc_feature *ys,
                              int64_t *length) {
    *length = in->num_examples ? xs->offsets[1] - xs->offsets[0] : FEDC_SHAKESPEARE_SEQUENCE_LENGTH;
    for (int64_t i = 0; i < in->num_examples; i++) {
        int64_t lx = xs->offsets[i + 1] - xs->offsets[i], ly = ys->offsets[i + 1] - ys->offsets[i];
        if (lx != *length)
            return fedc_error(FEDC_ESHAPE, "client \"%s\": " SHAKESPEARE " \"x\" of example %lld has %lld bytes, "
                              "example 0 has %lld", in->id, (long long)i, (long long)lx, (long long)*length);
        if (ly != 1)
            return fedc_error(FEDC_ESHAPE, "client \"%s\": " SHAKESPEARE " \"y\" of example %lld has %lld bytes, "
                              "not 1", in->id, (long long)i, (long long)ly);
    }
    return FEDC_OK;
}

/* With `sequences`, each window becomes one next-character sequence of `want`
 * positions (0: the window's length L): the last `want` characters of the window
 * and their next characters when want <= L, else the whole window followed by
 * PAD (which the models leave out). */
static fedc_status shakespeare_leaf(const fedc_client_data *in, bool sequences, int64_t want, fedc_client_data **out) {
    const fedc_feature *xs, *ys;
    int64_t n = in->num_examples, length = 0;
    fedc_status st = fedc__task_input(in, SHAKESPEARE, "x", NULL, FEDC_FEATURE_STRINGS, FEDC_U8, &xs);
    if (!st) st = fedc__task_input(in, SHAKESPEARE, "y", NULL, FEDC_FEATURE_STRINGS, FEDC_U8, &ys);
    if (!st) st = leaf_check(in, xs, ys, &length);
    if (st) return st;
    int64_t len_x = sequences && want ? want : length, per_y = sequences ? len_x : 1;
    int64_t skip = sequences && want && want < length ? length - want : 0; /* characters dropped from the front */
    int32_t *x = fedc__task_alloc(in, n * len_x, sizeof *x), *y = fedc__task_alloc(in, n * per_y, sizeof *y);
    if (!x || !y) {
        fedc_free(x), fedc_free(y);
        return FEDC_ENOMEM;
    }
    int32_t table[256];
    build_table(table);
    const unsigned char *xb = xs->data, *yb = ys->data;
    for (int64_t i = 0; i < n; i++) {
        int32_t *xi = x + i * len_x, *yi = y + i * per_y, next = table[yb[ys->offsets[i]]];
        for (int64_t k = 0; k < len_x; k++)
            xi[k] = skip + k < length ? table[xb[xs->offsets[i] + skip + k]] : FEDC_SHAKESPEARE_PAD;
        if (!sequences) {
            yi[0] = next;
            continue;
        }
        /* the window's next characters: x shifted by one, then y, then PAD */
        for (int64_t k = 0; k < per_y; k++)
            yi[k] = skip + k + 1 < length ? xi[k + 1] : skip + k + 1 == length ? next : FEDC_SHAKESPEARE_PAD;
    }
    fedc_type yt = sequences ? fedc_type_make(FEDC_I32, 2, (int64_t[]){n, per_y}) : fedc_type_make(FEDC_I32, 1, &n);
    return make_xy(in, fedc_type_make(FEDC_I32, 2, (int64_t[]){n, len_x}), x, yt, y, out);
}

fedc_status fedc_shakespeare_preprocess(const fedc_client_data *in, const fedc_shakespeare_options *o,
                                        fedc_client_data **out) {
    *out = NULL;
    int64_t length = o && o->sequence_length ? o->sequence_length : FEDC_SHAKESPEARE_SEQUENCE_LENGTH;
    if (length < 1 || length > FEDC_TASK_MAX_LENGTH)
        return fedc_error(FEDC_EINVAL, "client \"%s\": " SHAKESPEARE " sequence length %lld is not in [1, %d]", in->id,
                          (long long)length, FEDC_TASK_MAX_LENGTH);
    /* TFF's and FedJAX's "snippets" and the text reader's "text" are both a
     * role's lines; LEAF has x and y instead. */
    const fedc_feature *snippets = fedc_client_feature(in, "snippets");
    if (!snippets && !fedc_client_feature(in, "text"))
        return shakespeare_leaf(in, o && o->leaf_sequences, o ? o->sequence_length : 0, out);
    fedc_status st = fedc__task_input(in, SHAKESPEARE, "snippets", "text", FEDC_FEATURE_STRINGS, FEDC_U8, &snippets);
    return st ? st : shakespeare_snippets(in, snippets, length, out);
}

fedc_status fedc_shakespeare_hook(void *ctx, fedc_client_data **client) {
    fedc_client_data *made;
    fedc_status st = fedc_shakespeare_preprocess(*client, ctx, &made);
    return fedc__task_replace(client, st, made);
}

/* ----------------------------------------------------- Stack Overflow -- */

#define SO "Stack Overflow"

/* Words packed in one buffer and an open-addressing hash table of their ranks,
 * the part of tf.lookup.StaticVocabularyTable that FedJAX uses. */
struct fedc_stackoverflow_vocab {
    int64_t n, cap_words;
    char *bytes;
    size_t used, cap_bytes;
    int64_t *start;  /* word k is bytes[start[k] .. start[k + 1]) */
    int64_t *slots;  /* rank + 1, 0 empty */
    uint64_t mask;   /* slots - 1, a power of two minus one */
};

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 14695981039346656037u; /* FNV-1a, 64-bit */
    for (size_t k = 0; k < len; k++) h = (h ^ (unsigned char)s[k]) * 1099511628211u;
    return h;
}

/* The slot holding word[0 .. len), or the empty slot where it would go. */
static uint64_t find_slot(const fedc_stackoverflow_vocab *v, const char *word, size_t len) {
    for (uint64_t s = hash_bytes(word, len) & v->mask;; s = (s + 1) & v->mask) {
        int64_t r = v->slots[s] - 1;
        if (r < 0) return s;
        size_t rlen = (size_t)(v->start[r + 1] - v->start[r]);
        if (rlen == len && memcmp(v->bytes + v->start[r], word, len) == 0) return s;
    }
}

/* Doubles the table when it would pass half full (probes stay short). */
static fedc_status grow_slots(fedc_stackoverflow_vocab *v) {
    if (v->slots && (uint64_t)(v->n + 1) * 2 <= v->mask + 1) return FEDC_OK;
    uint64_t size = v->slots ? 2 * (v->mask + 1) : 1024;
    int64_t *slots = fedc_calloc(size, sizeof *slots), *old = v->slots;
    if (!slots) return fedc_error(FEDC_ENOMEM, SO " vocabulary: out of memory");
    v->slots = slots;
    v->mask = size - 1;
    for (int64_t r = 0; old && r < v->n; r++) {
        const char *w = v->bytes + v->start[r];
        v->slots[find_slot(v, w, (size_t)(v->start[r + 1] - v->start[r]))] = r + 1;
    }
    fedc_free(old);
    return FEDC_OK;
}

/* Room for one more word of `len` bytes. */
static fedc_status reserve_word(fedc_stackoverflow_vocab *v, size_t len) {
    if (v->n + 2 > v->cap_words) {
        int64_t cap = v->cap_words ? 2 * v->cap_words : 1024;
        int64_t *start = fedc_realloc(v->start, (size_t)cap * sizeof *start);
        if (!start) return fedc_error(FEDC_ENOMEM, SO " vocabulary: out of memory");
        if (!v->start) start[0] = 0;
        v->start = start;
        v->cap_words = cap;
    }
    if (v->used + len > v->cap_bytes) {
        size_t cap = v->cap_bytes ? 2 * v->cap_bytes : 8192;
        while (cap < v->used + len) cap *= 2;
        char *bytes = fedc_realloc(v->bytes, cap);
        if (!bytes) return fedc_error(FEDC_ENOMEM, SO " vocabulary: out of memory");
        v->bytes = bytes;
        v->cap_bytes = cap;
    }
    return grow_slots(v);
}

/* Adds a word as the next rank; *repeat = the rank it already has, else -1. */
static fedc_status add_word(fedc_stackoverflow_vocab *v, const char *word, size_t len, int64_t *repeat) {
    fedc_status st = reserve_word(v, len);
    if (st) return st;
    uint64_t s = find_slot(v, word, len);
    *repeat = v->slots[s] - 1;
    if (*repeat >= 0) return FEDC_OK;
    if (len) memcpy(v->bytes + v->used, word, len);
    v->used += len;
    v->slots[s] = ++v->n;
    v->start[v->n] = (int64_t)v->used;
    return FEDC_OK;
}

static fedc_stackoverflow_vocab *vocab_new(void) {
    fedc_stackoverflow_vocab *v = fedc_calloc(1, sizeof *v);
    if (!v) fedc_error(FEDC_ENOMEM, SO " vocabulary: out of memory");
    return v;
}

void fedc_stackoverflow_vocab_destroy(fedc_stackoverflow_vocab *v) {
    if (!v) return;
    fedc_free(v->bytes);
    fedc_free(v->start);
    fedc_free(v->slots);
    fedc_free(v);
}

int64_t fedc_stackoverflow_vocab_size(const fedc_stackoverflow_vocab *v) { return v->n; }

fedc_status fedc_stackoverflow_vocab_create(fedc_stackoverflow_vocab **out, const char *const *words, int64_t n) {
    *out = vocab_new();
    fedc_status st = *out ? FEDC_OK : FEDC_ENOMEM;
    if (!st && n < 1) st = fedc_error(FEDC_EINVAL, SO " vocabulary: no words");
    for (int64_t k = 0; !st && k < n; k++) {
        int64_t repeat;
        st = add_word(*out, words[k], strlen(words[k]), &repeat);
        if (!st && repeat >= 0)
            st = fedc_error(FEDC_EINVAL, SO " vocabulary: word %lld \"%s\" repeats word %lld", (long long)k, words[k],
                            (long long)repeat);
    }
    if (st) {
        fedc_stackoverflow_vocab_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* The first field of a line: what Python's line.split()[0] gives (FedJAX reads
 * "word count" lines that way). */
static const char *first_field(const char *line, size_t *len) {
    while (*line == ' ' || *line == '\t') line++;
    size_t k = 0;
    while (line[k] && line[k] != ' ' && line[k] != '\t' && line[k] != '\n' && line[k] != '\r') k++;
    *len = k;
    return line;
}

static fedc_status read_words(fedc_stackoverflow_vocab *v, FILE *f, const char *path, int64_t size) {
    char *line = NULL;
    size_t cap = 0;
    fedc_status st = FEDC_OK;
    for (int64_t lineno = 1; !st && v->n < size && getline(&line, &cap, f) >= 0; lineno++) {
        size_t len;
        const char *word = first_field(line, &len);
        int64_t repeat = -1;
        if (!len) st = fedc_error(FEDC_EPARSE, "%s: line %lld has no word", path, (long long)lineno);
        else st = add_word(v, word, len, &repeat);
        if (!st && repeat >= 0)
            st = fedc_error(FEDC_EPARSE, "%s: line %lld: word \"%.*s\" repeats line %lld", path, (long long)lineno,
                            (int)len, word, (long long)repeat + 1);
    }
    if (!st && ferror(f)) st = fedc_error(FEDC_EIO, "%s: read error", path);
    if (!st && v->n == 0) st = fedc_error(FEDC_EPARSE, "%s: the vocabulary file has no words", path);
    free(line); /* getline's buffer comes from the C library */
    return st;
}

fedc_status fedc_stackoverflow_vocab_read(const char *path, int64_t size, fedc_stackoverflow_vocab **out) {
    *out = NULL;
    if (size <= 0) size = FEDC_STACKOVERFLOW_VOCAB_SIZE;
    FILE *f = fopen(path, "r");
    if (!f) return fedc_error(FEDC_EIO, "%s: cannot open the vocabulary file", path);
    fedc_stackoverflow_vocab *v = vocab_new();
    fedc_status st = v ? read_words(v, f, path, size) : FEDC_ENOMEM;
    fclose(f);
    if (st) fedc_stackoverflow_vocab_destroy(v);
    else *out = v;
    return st;
}

int32_t fedc_stackoverflow_word_id(const fedc_stackoverflow_vocab *v, const char *word, size_t len) {
    int64_t r = v->slots[find_slot(v, word, len)] - 1;
    return (int32_t)(r >= 0 ? r + 3 : v->n + 3);
}

void fedc_stackoverflow_tokenize(const fedc_stackoverflow_vocab *v, const char *tokens, size_t len,
                                 int64_t max_length, int32_t *x, int32_t *y) {
    for (int64_t k = 0; k < max_length; k++) x[k] = y[k] = FEDC_STACKOVERFLOW_PAD;
    if (max_length < 1) return;
    /* ids = BOS w1 .. wm EOS; id p goes to x[p] and y[p - 1]. */
    x[0] = FEDC_STACKOVERFLOW_BOS;
    int64_t p = 1;
    size_t start = 0;
    for (size_t k = 0; k <= len && p - 1 < max_length; k++) {
        if (k < len && tokens[k] != ' ') continue;
        int32_t id = fedc_stackoverflow_word_id(v, tokens + start, k - start);
        if (p < max_length) x[p] = id;
        y[p - 1] = id;
        p++;
        start = k + 1;
    }
    if (p - 1 < max_length) y[p - 1] = FEDC_STACKOVERFLOW_EOS;
}

/* FedJAX's preprocess_client: domain_id = (type == "answer"). */
static fedc_status add_domain(const fedc_client_data *in, const fedc_feature *type, fedc_client_data *out) {
    int32_t *d = fedc__task_alloc(in, in->num_examples, sizeof *d);
    if (!d) return FEDC_ENOMEM;
    for (int64_t i = 0; i < in->num_examples; i++) {
        size_t len;
        const char *s = string_at(type, i, &len);
        d[i] = len == 6 && memcmp(s, "answer", 6) == 0;
    }
    return fedc__task_adopt(out, "domain_id", fedc_type_make(FEDC_I32, 1, &in->num_examples), d);
}

/* Word ranks (fedc_synthetic_zipf's "tokens" i32[n, W]) as the tokenizer would
 * give them: ids = [BOS] + (rank + 3, or OOV for a rank outside the vocabulary)
 * + [EOS], x = ids[:-1] and y = ids[1:], cut or padded with PAD to `length`. */
static int32_t rank_id(const int32_t *ranks, int64_t words, int64_t vocab, int64_t p) {
    if (p == 0) return FEDC_STACKOVERFLOW_BOS;
    if (p == words + 1) return FEDC_STACKOVERFLOW_EOS;
    if (p > words + 1) return FEDC_STACKOVERFLOW_PAD;
    int32_t r = ranks[p - 1];
    return r >= 0 && r < vocab ? r + 3 : (int32_t)vocab + 3;
}

static fedc_status stackoverflow_ranks(const fedc_client_data *in, const fedc_feature *tokens, int64_t vocab,
                                       int64_t length, fedc_client_data **out) {
    if (tokens->type.rank != 2)
        return fedc_error(FEDC_ETYPE, "client \"%s\": " SO " word ranks \"tokens\" must be i32[n, words], not rank %d",
                          in->id, tokens->type.rank);
    int64_t n = in->num_examples, words = tokens->type.dims[1];
    int32_t *x = fedc__task_alloc(in, n * length, sizeof *x), *y = fedc__task_alloc(in, n * length, sizeof *y);
    if (!x || !y) {
        fedc_free(x), fedc_free(y);
        return FEDC_ENOMEM;
    }
    const int32_t *ranks = tokens->data;
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = 0; p < length; p++) {
            x[i * length + p] = rank_id(ranks + i * words, words, vocab, p);
            y[i * length + p] = rank_id(ranks + i * words, words, vocab, p + 1);
        }
    fedc_type t = fedc_type_make(FEDC_I32, 2, (int64_t[]){n, length});
    return make_xy(in, t, x, t, y, out);
}

fedc_status fedc_stackoverflow_preprocess(const fedc_client_data *in, const fedc_stackoverflow_options *o,
                                          fedc_client_data **out) {
    *out = NULL;
    int64_t n = in->num_examples, length = o && o->max_length ? o->max_length : FEDC_STACKOVERFLOW_MAX_LENGTH;
    if (length < 1 || length > FEDC_TASK_MAX_LENGTH)
        return fedc_error(FEDC_EINVAL, "client \"%s\": " SO " max length %lld is not in [1, %d]", in->id,
                          (long long)length, FEDC_TASK_MAX_LENGTH);
    const fedc_feature *tokens = fedc_client_feature(in, "tokens"), *type = NULL;
    if (tokens && tokens->kind == FEDC_FEATURE_ARRAY && tokens->type.dtype == FEDC_I32) {
        int64_t vocab = o && o->vocab ? fedc_stackoverflow_vocab_size(o->vocab)
                        : o && o->vocab_size ? o->vocab_size : FEDC_STACKOVERFLOW_VOCAB_SIZE;
        return stackoverflow_ranks(in, tokens, vocab, length, out);
    }
    if (!o || !o->vocab)
        return fedc_error(FEDC_EINVAL, "client \"%s\": " SO " needs a vocabulary to look its words up", in->id);
    fedc_status st = fedc__task_input(in, SO, "tokens", NULL, FEDC_FEATURE_STRINGS, FEDC_U8, &tokens);
    if (!st && fedc_client_feature(in, "type"))
        st = fedc__task_input(in, SO, "type", NULL, FEDC_FEATURE_STRINGS, FEDC_U8, &type);
    if (st) return st;
    int32_t *x = fedc__task_alloc(in, n * length, sizeof *x), *y = fedc__task_alloc(in, n * length, sizeof *y);
    if (!x || !y) {
        fedc_free(x), fedc_free(y);
        return FEDC_ENOMEM;
    }
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        const char *s = string_at(tokens, i, &len);
        fedc_stackoverflow_tokenize(o->vocab, s, len, length, x + i * length, y + i * length);
    }
    fedc_type t = fedc_type_make(FEDC_I32, 2, (int64_t[]){n, length});
    st = make_xy(in, t, x, t, y, out);
    if (!st && type) st = add_domain(in, type, *out);
    return st ? fail(out, st) : FEDC_OK;
}

fedc_status fedc_stackoverflow_hook(void *ctx, fedc_client_data **client) {
    fedc_client_data *made;
    fedc_status st = fedc_stackoverflow_preprocess(*client, ctx, &made);
    return fedc__task_replace(client, st, made);
}
