/* Helpers shared by the text format's tests (test_text.c, test_text_bodies.c):
 * printing, the round trip with its node-by-node comparison, expected parse
 * errors, and a federated round to print, parse and run. Functions are static
 * inline so that a test using only some of them compiles without warnings. */
#ifndef FEDC_TEST_TEXT_CHECK_H
#define FEDC_TEST_TEXT_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "fedc/program.h"
#include "harness.h"
#include "ir/ir.h"

/* ------------------------------------------------------------- helpers -- */

static inline fedc_type ty(fedc_dtype dt, int rank, const int64_t *dims) { return fedc_type_make(dt, rank, dims); }
#define T(dt, ...) ty(dt, FEDC_COUNT_OF(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__})

static inline fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}
#define SERVER(dt, ...) placed(T(dt, __VA_ARGS__), FEDC_SERVER)
#define CLIENTS(dt, ...) placed(T(dt, __VA_ARGS__), FEDC_CLIENTS)

static inline char *to_text(const fedc_program *p) {
    char *s = NULL;
    CHECK_OK(fedc_program_to_string(p, &s));
    return s;
}

static inline bool same_attr(const fedc__attr *a, const fedc__attr *b) {
    if (a->key != b->key || a->n != b->n || memcmp(&a->f, &b->f, sizeof a->f) != 0) return false;
    return memcmp(a->v, b->v, (size_t)a->n * sizeof a->v[0]) == 0;
}

/* Node for node: op, type, operands, attributes (float bits too), names, data,
 * then body for body. */
static inline void check_same_program(const fedc_program *a, const fedc_program *b) {
    CHECK_EQ_INT(a->n, b->n);
    for (int v = 0; v < a->n && v < b->n; v++) {
        const fedc__node *x = &a->nodes[v], *y = &b->nodes[v];
        CHECK_MSG(x->op == y->op && fedc_type_equal(&x->type, &y->type), "%%%d differs in op or type", v);
        CHECK_MSG(x->nin == y->nin && x->nattr == y->nattr, "%%%d differs in operands or attributes", v);
        for (int i = 0; i < x->nin && i < y->nin; i++) CHECK_EQ_INT(x->in[i], y->in[i]);
        for (int i = 0; i < x->nattr && i < y->nattr; i++)
            CHECK_MSG(same_attr(&x->attr[i], &y->attr[i]), "%%%d: attribute %d differs", v, i);
        if (x->op == FEDC_OP_INPUT) CHECK(strcmp(x->name, y->name) == 0);
        if (x->op == FEDC_OP_CONSTANT)
            CHECK_MSG(memcmp(x->data, y->data, fedc_type_bytes(&x->type)) == 0, "%%%d: constant bits differ", v);
    }
    CHECK_EQ_INT(a->noutputs, b->noutputs);
    for (int i = 0; i < a->noutputs && i < b->noutputs; i++) {
        CHECK(strcmp(a->outputs[i].name, b->outputs[i].name) == 0);
        CHECK_EQ_INT(a->outputs[i].value, b->outputs[i].value);
    }
    CHECK_EQ_INT(a->nbodies, b->nbodies);
    for (int i = 0; i < a->nbodies && i < b->nbodies; i++) check_same_program(a->bodies[i], b->bodies[i]);
}

/* print -> parse -> print: the same text and the same program. */
static inline void check_round_trip(const fedc_program *p) {
    CHECK_OK(fedc_program_status(p));
    char *text = to_text(p);
    fedc_program *q = NULL;
    CHECK_OK(fedc_program_parse(text ? text : "", &q));
    if (q) {
        char *again = to_text(q);
        CHECK_MSG(again && text && strcmp(text, again) == 0, "text changed:\n%s\n--- became ---\n%s", text, again);
        check_same_program(p, q);
        fedc_free(again);
    }
    fedc_program_destroy(q);
    fedc_free(text);
}

/* Parses `text`, expects FEDC_EPARSE with each needle in the message. */
static inline void expect_parse_error(const char *text, const char *needle1, const char *needle2, const char *file,
                                      int line) {
    fedc_program *p = (fedc_program *)&p; /* must come back NULL */
    fedc_status st = fedc_program_parse(text, &p);
    if (st != FEDC_EPARSE || p != NULL) {
        fedc_test_fail(file, line, "expected a parse error, got %s: %s", fedc_status_str(st), fedc_errmsg());
        if (!st) fedc_program_destroy(p);
        return;
    }
    if (!strstr(fedc_errmsg(), needle1) || (needle2 && !strstr(fedc_errmsg(), needle2)))
        fedc_test_fail(file, line, "message \"%s\" lacks \"%s\" or \"%s\"", fedc_errmsg(), needle1,
                       needle2 ? needle2 : "");
}
#define PARSE_ERROR(text, n1, n2) expect_parse_error((text), (n1), (n2), __FILE__, __LINE__)

/* ------------------------------------------------------------ federated -- */

/* step(c, x) = (c - 0.1 tanh(c x), c x): a fold's body, one carry and one
 * per-step output. */
static inline fedc_program *step_body(void) {
    fedc_program *b;
    if (fedc_program_create(&b)) return NULL;
    fedc_value c = fedc_input(b, "c", T(FEDC_F32, 2)), x = fedc_input(b, "x", T(FEDC_F32, 2));
    fedc_value cx = fedc_mul(b, c, x);
    fedc_value rate = fedc_scalar(b, FEDC_F32, 0.1); /* one call per line: arguments have no order */
    fedc_program_output(b, "c", fedc_sub(b, c, fedc_mul(b, rate, fedc_tanh(b, cx))));
    fedc_program_output(b, "y", cx);
    return b;
}

/* client(w, xs) = (w - fold(step)(w, xs), the sum of the steps' c x): a map's
 * body with two inputs, two outputs and a body of its own. */
static inline fedc_program *client_body(void) {
    fedc_program *b = NULL, *step = step_body();
    if (step && fedc_program_create(&b) == FEDC_OK) {
        fedc_value w = fedc_input(b, "w", T(FEDC_F32, 2)), xs = fedc_input(b, "xs", T(FEDC_F32, 3, 2)), r[2];
        fedc_fold(b, step, &w, 1, &xs, 1, fedc_scalar(b, FEDC_I32, 3), r);
        fedc_program_output(b, "delta", fedc_sub(b, w, r[0]));
        fedc_program_output(b, "loss", fedc_reduce_sum(b, r[1], NULL, -1, false));
    }
    fedc_program_destroy(step);
    return b;
}

/* One round: broadcast w0, map client over the clients' xs, and aggregate:
 * w0 - weighted_mean(delta, n), the mean and sum of the losses, the cohort's
 * size. Every federated op, and a fold inside a map. */
static inline void build_round(fedc_program *p) {
    fedc_program *client = client_body();
    fedc_value w = fedc_input(p, "w0", SERVER(FEDC_F32, 2));
    fedc_value xs = fedc_input(p, "xs", CLIENTS(FEDC_F32, 3, 2));
    fedc_value n = fedc_input(p, "n", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
    fedc_value r[2] = {FEDC_NONE, FEDC_NONE};
    CHECK(client != NULL);
    if (client) fedc_map(p, client, (fedc_value[]){fedc_broadcast(p, w), xs}, 2, r);
    fedc_program_destroy(client);
    fedc_program_output(p, "w_new", fedc_sub(p, w, fedc_weighted_mean(p, r[0], n)));
    fedc_program_output(p, "loss", fedc_mean(p, r[1]));
    fedc_program_output(p, "total", fedc_sum(p, r[1]));
    fedc_program_output(p, "per_client", r[1]);
    fedc_program_output(p, "clients", fedc_num_clients(p, FEDC_I32));
}

#endif /* FEDC_TEST_TEXT_CHECK_H */
