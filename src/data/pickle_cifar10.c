/* A bounded reader of exactly one kind of Python pickle: a batch of the CIFAR-10
 * python tarball (cifar-10-batches-py/data_batch_1..5, test_batch), which
 * Python 2's cPickle wrote with protocol 2:
 *
 *     {'data': numpy.ndarray uint8 [n, 3072], 'labels': [int] * n,
 *      'batch_label': str, 'filenames': [str] * n}
 *
 * The ndarray is pickled as numpy's __reduce__ gives it: REDUCE of
 * numpy.core.multiarray._reconstruct on (numpy.ndarray, (0,), 'b'), then BUILD
 * with the state (1, (n, 3072), dtype, False, <the bytes>), the dtype itself a
 * REDUCE of numpy.dtype on ('u1', 0, 1) and a BUILD with its state
 * (3, '|', None, None, None, -1, -1, 0).
 *
 * This is no general unpickler: it runs the few opcodes that structure uses on a
 * small stack of plain values, and never calls anything — the only globals it
 * accepts are those three numpy names, which it recognises, not imports. Any
 * other opcode, global, shape, dtype or key type is refused with the file and
 * the byte offset. Every length is checked against the bytes left before it is
 * used; the stack, the tuples and the memo indices are bounded; the pixels stay
 * in the caller's buffer (no copy), and only the labels are allocated, at most
 * one int per byte of the file. Keys other than 'data' and 'labels' (and their
 * values) are read and dropped. */
#include <string.h>

#include "data/pickle_cifar10.h"

/* Python 2's pickler appends and sets items in batches of 1,000 (pickle.py's
 * _BATCHSIZE), so a batch of labels or file names is 1,002 values on the stack. */
enum { MAX_STACK = 1100, MAX_POOL = 64, ROW = 3072 };

typedef enum kind {
    V_MARK, V_NONE, V_BOOL, V_INT, V_STR, V_TUPLE, V_LIST, V_DICT,
    V_RECONSTRUCT, V_NDARRAY, V_DTYPE_CLASS, /* the three globals */
    V_ARRAY, V_DTYPE /* what REDUCE made of them */
} kind;

typedef struct value {
    kind k;
    int64_t i;            /* V_INT, V_BOOL; V_LIST: its list (0 or 1); V_ARRAY: 1 once built */
    const uint8_t *s;     /* V_STR */
    int64_t len;          /* V_STR: bytes; V_TUPLE: items */
    int first;            /* V_TUPLE: its items in the pool */
} value;

/* A list being filled: ints (the labels), or anything else, only counted. */
typedef struct list {
    int32_t *ints;
    int64_t n, cap;
    bool other; /* a non-int was appended */
} list;

typedef struct vm {
    const char *path;
    const uint8_t *buf;
    size_t len, at, op_at; /* op_at: the current opcode's offset, for errors */
    value stack[MAX_STACK], pool[MAX_POOL];
    int top, pooled, lists;
    list list[2];
    bool dict, have_data, have_labels;
    fedc__cifar10_batch *out;
} vm;

static fedc_status bad(vm *v, const char *what) {
    return fedc_error(FEDC_EPARSE, "%s: byte %zu: %s (not a CIFAR-10 python batch: a pickled dict of \"data\", uint8 "
                      "[n, 3072], and \"labels\")", v->path, v->op_at, what);
}

/* ------------------------------------------------------------ reading -- */

static fedc_status need(vm *v, size_t n) {
    if (v->len - v->at >= n) return FEDC_OK;
    return fedc_error(FEDC_EPARSE, "%s: truncated at byte %zu: the opcode at byte %zu needs %zu more bytes, %zu left",
                      v->path, v->len, v->op_at, n, v->len - v->at);
}

static uint32_t le(const uint8_t *p, int n) {
    uint32_t x = 0;
    for (int i = n - 1; i >= 0; i--) x = x << 8 | p[i];
    return x;
}

/* An n-byte little-endian unsigned operand. */
static fedc_status operand(vm *v, int n, uint32_t *x) {
    fedc_status st = need(v, (size_t)n);
    if (st) return st;
    *x = le(v->buf + v->at, n);
    v->at += (size_t)n;
    return FEDC_OK;
}

/* -------------------------------------------------------------- stack -- */

static fedc_status push(vm *v, value x) {
    if (v->top >= MAX_STACK) return bad(v, "the stack is deeper than this structure needs");
    v->stack[v->top++] = x;
    return FEDC_OK;
}

static fedc_status pop(vm *v, value *x) {
    if (v->top == 0 || v->stack[v->top - 1].k == V_MARK) return bad(v, "pops an empty stack or a mark");
    *x = v->stack[--v->top];
    return FEDC_OK;
}

/* The index of the topmost mark. */
static fedc_status find_mark(vm *v, int *at) {
    for (int i = v->top - 1; i >= 0; i--)
        if (v->stack[i].k == V_MARK) {
            *at = i;
            return FEDC_OK;
        }
    return bad(v, "no mark on the stack");
}

/* The top n values become a tuple (its items copied to the pool). */
static fedc_status make_tuple(vm *v, int n) {
    if (v->top < n) return bad(v, "a tuple of more values than the stack holds");
    if (v->pooled + n > MAX_POOL) return bad(v, "more tuple items than this structure needs");
    for (int i = 0; i < n; i++) {
        if (v->stack[v->top - n + i].k == V_MARK) return bad(v, "a mark inside a tuple");
        v->pool[v->pooled + i] = v->stack[v->top - n + i];
    }
    value t = {.k = V_TUPLE, .len = n, .first = v->pooled};
    v->pooled += n;
    v->top -= n;
    return push(v, t);
}

static const value *item(const vm *v, const value *t, int i) { return &v->pool[t->first + i]; }

static bool is_int(const value *x, int64_t want) { return x->k == V_INT && x->i == want; }

static bool is_str(const value *x, const char *want) {
    size_t n = strlen(want);
    return x->k == V_STR && (size_t)x->len == n && memcmp(x->s, want, n) == 0;
}

/* ------------------------------------------------------------- globals -- */

/* GLOBAL "module\nname\n": one of the three numpy names, recognised by text. */
static fedc_status global(vm *v) {
    const uint8_t *p = v->buf + v->at, *end = v->buf + v->len;
    const uint8_t *nl1 = memchr(p, '\n', (size_t)(end - p));
    const uint8_t *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(end - nl1 - 1)) : NULL;
    if (!nl2) return fedc_error(FEDC_EPARSE, "%s: truncated: the global at byte %zu has no end", v->path, v->op_at);
    size_t mlen = (size_t)(nl1 - p), nlen = (size_t)(nl2 - nl1 - 1);
    v->at = (size_t)(nl2 + 1 - v->buf);
#define NAMED(m, n) (mlen == sizeof m - 1 && !memcmp(p, m, mlen) && nlen == sizeof n - 1 && !memcmp(nl1 + 1, n, nlen))
    kind k;
    if (NAMED("numpy.core.multiarray", "_reconstruct") || NAMED("numpy._core.multiarray", "_reconstruct"))
        k = V_RECONSTRUCT;
    else if (NAMED("numpy", "ndarray")) k = V_NDARRAY;
    else if (NAMED("numpy", "dtype")) k = V_DTYPE_CLASS;
    else
        return fedc_error(FEDC_EUNSUPPORTED, "%s: byte %zu: global %.*s.%.*s is not one of numpy's array globals "
                          "(a CIFAR-10 batch holds only numpy.core.multiarray._reconstruct, numpy.ndarray and "
                          "numpy.dtype)", v->path, v->op_at, (int)(mlen < 64 ? mlen : 64), (const char *)p,
                          (int)(nlen < 64 ? nlen : 64), (const char *)(nl1 + 1));
#undef NAMED
    return push(v, (value){.k = k});
}

/* REDUCE: _reconstruct(ndarray, (0,), 'b') is an empty array; dtype('u1', 0, 1) the dtype. */
static fedc_status reduce(vm *v) {
    value args = {0}, f = {0};
    fedc_status st = pop(v, &args);
    if (!st) st = pop(v, &f);
    if (st) return st;
    if (args.k != V_TUPLE) return bad(v, "REDUCE's arguments are not a tuple");
    if (f.k == V_RECONSTRUCT) {
        if (args.len != 3 || item(v, &args, 0)->k != V_NDARRAY || item(v, &args, 1)->k != V_TUPLE)
            return bad(v, "_reconstruct's arguments are not (numpy.ndarray, shape, 'b')");
        return push(v, (value){.k = V_ARRAY});
    }
    if (f.k == V_DTYPE_CLASS) {
        if (args.len != 3 || !is_str(item(v, &args, 0), "u1"))
            return bad(v, "the array's dtype is not uint8 ('u1'): CIFAR-10's pixels are bytes");
        return push(v, (value){.k = V_DTYPE});
    }
    return bad(v, "REDUCE calls something other than numpy's _reconstruct or dtype");
}

/* BUILD: a dtype's state is checked loosely (its byte order is '|' for bytes);
 * an array's is (version, (n, 3072), dtype u1, False, the n*3072 bytes). */
static fedc_status build(vm *v) {
    value state = {0}, *obj;
    fedc_status st = pop(v, &state);
    if (st) return st;
    if (v->top == 0) return bad(v, "BUILD without an object");
    obj = &v->stack[v->top - 1];
    if (obj->k == V_DTYPE) {
        if (state.k != V_TUPLE || state.len < 2 || !is_str(item(v, &state, 1), "|"))
            return bad(v, "the uint8 dtype's state is not (3, '|', ...)");
        return FEDC_OK;
    }
    if (obj->k != V_ARRAY || obj->i) return bad(v, "BUILD of something other than a new numpy array");
    if (state.k != V_TUPLE || state.len != 5) return bad(v, "the array's state is not a tuple of 5");
    const value *shape = item(v, &state, 1), *raw = item(v, &state, 4);
    if (shape->k != V_TUPLE || shape->len != 2 || item(v, shape, 0)->k != V_INT || !is_int(item(v, shape, 1), ROW))
        return bad(v, "the array's shape is not (n, 3072): 32 x 32 pixels in 3 planes a row");
    if (item(v, &state, 2)->k != V_DTYPE) return bad(v, "the array's dtype is not uint8");
    const value *fortran = item(v, &state, 3);
    if (fortran->k != V_BOOL || fortran->i) return bad(v, "the array is not in C order");
    int64_t n = item(v, shape, 0)->i;
    if (raw->k != V_STR || n < 0 || raw->len / ROW != n || raw->len % ROW != 0)
        return bad(v, "the array's bytes are not n * 3072 for its shape");
    obj->i = 1, obj->s = raw->s, obj->len = n;
    return FEDC_OK;
}

/* ------------------------------------------------------- lists, dicts -- */

static fedc_status append(vm *v, value *to, const value *x) {
    if (to->k != V_LIST) return bad(v, "APPEND to something other than a list");
    list *l = &v->list[to->i];
    if (x->k != V_INT || l->other) {
        l->other = true, l->n++;
        return FEDC_OK;
    }
    if (x->i < INT32_MIN || x->i > INT32_MAX) return bad(v, "a label outside int32");
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 1024;
        int32_t *grown = fedc_realloc(l->ints, (size_t)cap * sizeof *grown);
        if (!grown) return fedc_error(FEDC_ENOMEM, "%s: out of memory for %lld labels", v->path, (long long)cap);
        l->ints = grown, l->cap = cap;
    }
    l->ints[l->n++] = (int32_t)x->i;
    return FEDC_OK;
}

/* One key and value of the dict: "data" and "labels" are kept, the rest dropped. */
static fedc_status set_item(vm *v, const value *key, const value *x) {
    if (key->k != V_STR) return bad(v, "a dict key that is not a (Python 2) byte string");
    bool data = is_str(key, "data"), labels = is_str(key, "labels");
    if ((data && v->have_data) || (labels && v->have_labels)) return bad(v, "a key given twice");
    if (data) {
        if (x->k != V_ARRAY || !x->i) return bad(v, "\"data\" is not a built numpy array");
        v->out->pixels = x->s, v->out->n = x->len, v->have_data = true;
    } else if (labels) {
        if (x->k != V_LIST || v->list[x->i].other) return bad(v, "\"labels\" is not a list of ints");
        list *l = &v->list[x->i];
        v->out->labels = l->ints, v->out->labels_n = l->n, v->have_labels = true;
        l->ints = NULL, l->cap = 0, l->other = true; /* the batch owns it now */
    }
    return FEDC_OK;
}

/* SETITEMS / APPENDS: the values above the topmost mark go into the object below it. */
static fedc_status fill_from_mark(vm *v, bool dict) {
    int mark = 0;
    fedc_status st = find_mark(v, &mark);
    if (st) return st;
    int n = v->top - mark - 1;
    if (mark == 0) return bad(v, "no object below the mark");
    value *obj = &v->stack[mark - 1];
    if (dict && (obj->k != V_DICT || n % 2)) return bad(v, "SETITEMS on something other than a dict, or an odd count");
    for (int i = 0; !st && i < n; i += dict ? 2 : 1)
        st = dict ? set_item(v, &v->stack[mark + 1 + i], &v->stack[mark + 2 + i])
                  : append(v, obj, &v->stack[mark + 1 + i]);
    v->top = mark;
    return st;
}

static fedc_status new_container(vm *v, kind k) {
    if (k == V_DICT) {
        if (v->dict) return bad(v, "a second dict");
        v->dict = true;
        return push(v, (value){.k = V_DICT});
    }
    if (v->lists == 2) return bad(v, "more than two lists (labels and filenames)");
    return push(v, (value){.k = V_LIST, .i = v->lists++});
}

/* ------------------------------------------------------------ opcodes -- */

static fedc_status string(vm *v, int width) {
    uint32_t n;
    fedc_status st = operand(v, width, &n);
    if (!st && width == 4 && n > INT32_MAX) return bad(v, "a negative string length");
    if (!st) st = need(v, n);
    if (st) return st;
    value s = {.k = V_STR, .s = v->buf + v->at, .len = n};
    v->at += n;
    return push(v, s);
}

static fedc_status integer(vm *v, int width) {
    uint32_t x;
    fedc_status st = operand(v, width, &x);
    if (st) return st;
    int64_t i = width == 4 ? (int64_t)(int32_t)x : (int64_t)x; /* BININT is signed, BININT1/2 are not */
    return push(v, (value){.k = V_INT, .i = i});
}

/* The opcodes of the structure (pickletools' names); memo puts are skipped: a
 * CIFAR-10 batch never refers back, so a memo get is refused. */
static fedc_status step(vm *v, uint8_t op, bool *stop) {
    uint32_t skip;
    value a = {0}, b = {0};
    fedc_status st;
    switch (op) {
    case 0x80: /* PROTO */
        if ((st = operand(v, 1, &skip))) return st;
        return skip == 2 && v->op_at == 0 ? FEDC_OK : bad(v, "not pickle protocol 2 at the start (the tarball's)");
    case '}': return new_container(v, V_DICT);      /* EMPTY_DICT */
    case ']': return new_container(v, V_LIST);      /* EMPTY_LIST */
    case '(': return push(v, (value){.k = V_MARK}); /* MARK */
    case 'q': return operand(v, 1, &skip);           /* BINPUT */
    case 'r': return operand(v, 4, &skip);           /* LONG_BINPUT */
    case 'U': return string(v, 1);                   /* SHORT_BINSTRING */
    case 'T': return string(v, 4);                   /* BINSTRING */
    case 'K': return integer(v, 1);                  /* BININT1 */
    case 'M': return integer(v, 2);                  /* BININT2 */
    case 'J': return integer(v, 4);                  /* BININT */
    case 'N': return push(v, (value){.k = V_NONE});  /* NONE */
    case 0x88: return push(v, (value){.k = V_BOOL, .i = 1}); /* NEWTRUE */
    case 0x89: return push(v, (value){.k = V_BOOL, .i = 0}); /* NEWFALSE */
    case 0x85: return make_tuple(v, 1);              /* TUPLE1 */
    case 0x86: return make_tuple(v, 2);              /* TUPLE2 */
    case 0x87: return make_tuple(v, 3);              /* TUPLE3 */
    case ')': return make_tuple(v, 0);               /* EMPTY_TUPLE */
    case 't': { /* TUPLE: the values above the mark */
        int mark = 0;
        if ((st = find_mark(v, &mark))) return st;
        int n = v->top - mark - 1;
        memmove(&v->stack[mark], &v->stack[mark + 1], (size_t)n * sizeof *v->stack);
        v->top--;
        return make_tuple(v, n);
    }
    case 'c': return global(v);                      /* GLOBAL */
    case 'R': return reduce(v);                      /* REDUCE */
    case 'b': return build(v);                       /* BUILD */
    case 'a':                                        /* APPEND */
        if ((st = pop(v, &a))) return st;
        return v->top ? append(v, &v->stack[v->top - 1], &a) : bad(v, "APPEND without a list");
    case 'e': return fill_from_mark(v, false);       /* APPENDS */
    case 's':                                        /* SETITEM */
        if ((st = pop(v, &b)) || (st = pop(v, &a))) return st;
        return v->top && v->stack[v->top - 1].k == V_DICT ? set_item(v, &a, &b) : bad(v, "SETITEM without a dict");
    case 'u': return fill_from_mark(v, true);        /* SETITEMS */
    case '.': *stop = true; return FEDC_OK;          /* STOP */
    default: break;
    }
    return fedc_error(FEDC_EUNSUPPORTED, "%s: byte %zu: pickle opcode 0x%02x is not one a CIFAR-10 python batch uses "
                      "(Python 2, protocol 2)", v->path, v->op_at, op);
}

fedc_status fedc__cifar10_parse(const char *path, const uint8_t *buf, size_t len, fedc__cifar10_batch *out) {
    memset(out, 0, sizeof *out);
    vm *v = fedc_calloc(1, sizeof *v);
    if (!v) return fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    *v = (vm){.path = path, .buf = buf, .len = len, .out = out};
    fedc_status st = FEDC_OK;
    bool stop = false;
    while (!st && !stop) {
        v->op_at = v->at;
        if (v->at == v->len) st = fedc_error(FEDC_EPARSE, "%s: truncated at byte %zu: no STOP opcode", path, v->len);
        else st = step(v, v->buf[v->at++], &stop);
    }
    if (!st && (v->top != 1 || v->stack[0].k != V_DICT)) st = bad(v, "the pickle is not one dict");
    if (!st && v->at != v->len) st = bad(v, "bytes after the pickle's STOP");
    if (!st && !v->have_data) st = bad(v, "no \"data\"");
    if (!st && !v->have_labels) st = bad(v, "no \"labels\"");
    if (!st && out->labels_n != out->n)
        st = fedc_error(FEDC_EPARSE, "%s: %lld images but %lld labels", path, (long long)out->n, (long long)out->labels_n);
    for (int64_t i = 0; !st && i < out->n; i++)
        if (out->labels[i] < 0 || out->labels[i] >= FEDC__CIFAR10_CLASSES)
            st = fedc_error(FEDC_EPARSE, "%s: label %lld is %d, outside CIFAR-10's classes 0..9", path, (long long)i,
                            out->labels[i]);
    fedc_free(v->list[0].ints), fedc_free(v->list[1].ints);
    fedc_free(v);
    if (st) fedc__cifar10_batch_free(out);
    return st;
}

void fedc__cifar10_batch_free(fedc__cifar10_batch *b) {
    fedc_free(b->labels);
    memset(b, 0, sizeof *b);
}
