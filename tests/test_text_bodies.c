/* Tests for bodies and tuples in the text format (src/ir/print.c, parse.c):
 * the exact text of a federated program (the example of docs/text-format.md);
 * two bodies and a body inside a body; bodies written by hand with any
 * indentation; the nesting limit; every error about bodies, maps, results and
 * tuple types with its line and column; and a parsed federated round, and its
 * gradient, computing the same bits as the programs they were printed from.
 * Every op's round trip and allocation failure are in test_text.c. */
#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "text_check.h"

/* ------------------------------------------------------------- bodies -- */

/* The example of docs/text-format.md: the mean over the clients of a body's loss. */
static fedc_program *build_mean_loss(void) {
    fedc_program *body, *p;
    if (fedc_program_create(&body)) return NULL;
    fedc_value bx = fedc_input(body, "x", T(FEDC_F32, 2)), by = fedc_input(body, "y", T(FEDC_F32, 2));
    fedc_value sq = fedc_square(body, fedc_sub(body, bx, by));
    fedc_value sum = fedc_reduce_sum(body, sq, NULL, -1, false); /* before the 0.5: nodes print in order */
    fedc_program_output(body, "loss", fedc_mul(body, sum, fedc_scalar(body, FEDC_F32, 0.5)));
    if (fedc_program_create(&p)) {
        fedc_program_destroy(body);
        return NULL;
    }
    fedc_value x = fedc_input(p, "x", SERVER(FEDC_F32, 2)), y = fedc_input(p, "y", CLIENTS(FEDC_F32, 2)), loss;
    fedc_map(p, body, (fedc_value[]){fedc_broadcast(p, x), y}, 2, &loss);
    fedc_program_output(p, "loss", fedc_mean(p, loss));
    fedc_program_destroy(body);
    return p;
}

static void test_print_federated_example(void) {
    fedc_program *p = build_mean_loss();
    CHECK(p != NULL);
    if (!p) return;
    const char *want = "fedc program\n"
                       "body 0 {\n"
                       "  %0 = input \"x\" : f32[2]\n"
                       "  %1 = input \"y\" : f32[2]\n"
                       "  %2 = sub(%0, %1) : f32[2]\n"
                       "  %3 = square(%2) : f32[2]\n"
                       "  %4 = reduce_sum(%3) {axes=[0], keepdims=0} : f32[]\n"
                       "  %5 = constant [0.5] : f32[]\n"
                       "  %6 = mul(%4, %5) : f32[]\n"
                       "  output \"loss\" = %6\n"
                       "}\n"
                       "%0 = input \"x\" : f32[2]@server\n"
                       "%1 = input \"y\" : f32[2]@clients\n"
                       "%2 = broadcast(%0) : f32[2]@clients\n"
                       "%3 = map(%2, %1) {body=0} : (f32[]@clients)\n"
                       "%4 = result(%3) {index=0} : f32[]@clients\n"
                       "%5 = mean(%4) : f32[]@server\n"
                       "output \"loss\" = %5\n";
    char *text = to_text(p);
    CHECK_MSG(text && strcmp(text, want) == 0, "got:\n%s", text);
    check_round_trip(p);
    fedc_free(text);
    fedc_program_destroy(p);
}

/* Two maps, two bodies; the second body folds, so it holds a body of its own,
 * printed one level deeper. */
static void test_two_bodies_and_nesting(void) {
    fedc_program *p, *first = build_mean_loss(), *client = client_body();
    CHECK_OK(fedc_program_create(&p));
    CHECK(first && client);
    if (first && client) {
        fedc_value x = fedc_input(p, "x", CLIENTS(FEDC_F32, 2)), xs = fedc_input(p, "xs", CLIENTS(FEDC_F32, 3, 2));
        fedc_value loss, r[2];
        CHECK_OK(fedc_map(p, first->bodies[0], (fedc_value[]){x, x}, 2, &loss));
        CHECK_OK(fedc_map(p, client, (fedc_value[]){x, xs}, 2, r));
        fedc_program_output(p, "loss", fedc_sum(p, loss));
        fedc_program_output(p, "delta", fedc_mean(p, r[0]));
    }
    CHECK_EQ_INT(p->nbodies, 2);
    char *text = to_text(p);
    CHECK(text && strstr(text, "fedc program\nbody 0 {\n  %0 = input \"x\" : f32[2]\n"));
    CHECK(text && strstr(text, "  output \"loss\" = %6\n}\nbody 1 {\n  body 0 {\n    %0 = input \"c\" : f32[2]\n"));
    CHECK(text && strstr(text, "    output \"y\" = %2\n  }\n  %0 = input \"w\" : f32[2]\n"));
    CHECK(text && strstr(text, "  %3 = fold(%0, %1, %2) {body=0, carries=1, reverse=0} : (f32[2], f32[3,2])\n"));
    CHECK(text && strstr(text, "  output \"loss\" = %7\n}\n%0 = input \"x\" : f32[2]@clients\n"));
    CHECK(text && strstr(text, "%2 = map(%0, %0) {body=0} : (f32[]@clients)\n"));
    CHECK(text && strstr(text, "%4 = map(%0, %1) {body=1} : (f32[2]@clients, f32[]@clients)\n"));
    fedc_free(text);
    check_round_trip(p);
    fedc_program_destroy(p);
    fedc_program_destroy(first);
    fedc_program_destroy(client);
}

/* Bodies as a person might write them: any indentation, comments, blank lines,
 * a body defined between the program's own lines, outputs out of order. */
static void test_parse_bodies_by_hand(void) {
    const char *text = "fedc program\n"
                       "%0 = input \"w\" : f32[2]@server   # the model\n"
                       "body 0 {   # w, x -> w * x\n"
                       "%0 = input \"w\" : f32[2]\n"
                       "\n"
                       "\t  %1 = input \"x\" : f32[2]\n"
                       "        %2 = mul(%0, %1) : f32[2]\n"
                       "    output \"wx\" = %2\n"
                       "  }   # end of body 0\n"
                       "%1 = input \"x\" : f32[2]@clients\n"
                       "%2 = broadcast(%0) : f32[2]@clients\n"
                       "%3 = map( %2 , %1 ) { body = 0 } : ( f32[ 2 ] @clients )\n"
                       "%4 = result(%3) {index=0} : f32[2]@clients\n"
                       "body 1 {\n"
                       "}\n"
                       "%5 = sum(%4) : f32[2]@server\n"
                       "output \"s\" = %5\n";
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_parse(text, &p));
    if (!p) return;
    CHECK_EQ_INT(p->nbodies, 2);
    CHECK_EQ_INT(p->n, 6);
    CHECK_EQ_INT(p->bodies[0]->n, 3);
    CHECK_EQ_INT(p->bodies[1]->n, 0);
    CHECK(fedc_program_find_output(p->bodies[0], "wx") == 2);
    char *printed = to_text(p);
    CHECK(printed && strstr(printed, "body 0 {\n  %0 = input \"w\" : f32[2]\n  %1 = input \"x\" : f32[2]\n"));
    CHECK(printed && strstr(printed, "  output \"wx\" = %2\n}\nbody 1 {\n}\n%0 = input \"w\" : f32[2]@server\n"));
    CHECK(printed && strstr(printed, "%3 = map(%2, %1) {body=0} : (f32[2]@clients)\n"));
    fedc_free(printed);
    check_round_trip(p);
    fedc_program_destroy(p);
}

/* Bodies nest (a map's body folds, a fold's body folds again) up to 16 deep. */
static void test_nesting_depth(void) {
    char text[2048];
    for (int depth = 16; depth <= 17; depth++) {
        int len = snprintf(text, sizeof text, "fedc program\n");
        for (int i = 0; i < depth; i++)
            len += snprintf(text + len, sizeof text - (size_t)len, "%*sbody 0 {\n", 2 * i, "");
        for (int i = depth - 1; i >= 0; i--) len += snprintf(text + len, sizeof text - (size_t)len, "%*s}\n", 2 * i, "");
        fedc_program *p = NULL;
        fedc_status st = fedc_program_parse(text, &p);
        if (depth == 16) {
            CHECK_OK(st);
            char *again = p ? to_text(p) : NULL;
            CHECK_MSG(again && strcmp(again, text) == 0, "got:\n%s", again);
            fedc_free(again);
        } else {
            CHECK_ERR(st, FEDC_EPARSE, "line 18, column 33: bodies nest at most 16 deep");
        }
        fedc_program_destroy(p);
    }
}

/* ------------------------------------------------------- parse errors -- */


/* A body (lines 2-6) and a clients input (line 7): the line under test is 8. */
#define FED_HEAD                                                                                                       \
    "fedc program\nbody 0 {\n  %0 = input \"x\" : f32[2]\n  %1 = neg(%0) : f32[2]\n  output \"y\" = %1\n}\n"          \
    "%0 = input \"x\" : f32[2]@clients\n"

static void test_errors_bodies(void) {
    PARSE_ERROR("fedc program\nbody 1 {\n}\n", "line 2, column 6: expected body 0 (bodies are numbered in order)",
                "found '1'");
    PARSE_ERROR(FED_HEAD "body 0 {\n}\n", "line 8, column 6: expected body 1 (bodies are numbered in order), found '0'",
                NULL);
    PARSE_ERROR("fedc program\nbody {\n}\n", "line 2, column 6: expected a body number, found '{'", NULL);
    PARSE_ERROR("fedc program\nbody 0\n}\n", "line 2, column 7: expected '{' after the body number, found end of line",
                NULL);
    PARSE_ERROR("fedc program\nbody 0 { %0 = input \"x\" : f32[2]\n}\n",
                "line 2, column 10: expected end of line, found '%0'", NULL);
    PARSE_ERROR("fedc program\nbody 0 {\n} extra\n", "line 3, column 3: expected end of line, found 'extra'", NULL);
    PARSE_ERROR("fedc program\nbody 0 {\n  %0 = input \"x\" : f32[2]\n",
                "line 4, column 1: expected '}' to close body 0 (opened on line 2), found end of input", NULL);
    PARSE_ERROR(FED_HEAD "body 1 {\n  body 0 {\n  }\n# no end", "line 11, column 9: expected '}' to close body 1 "
                "(opened on line 8), found end of input", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[2]\n}\n", "line 3, column 1: '}' but no body is open", NULL);
    /* A body numbers its values from %0 and sees only its own. */
    PARSE_ERROR("fedc program\nbody 0 {\n  %1 = input \"x\" : f32[2]\n}\n",
                "line 3, column 3: expected %0 (values are numbered in order), found '%1'", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[2]\nbody 0 {\n  %0 = neg(%0) : f32[2]\n}\n",
                "line 4, column 12: %0 is used before it is defined", NULL);
    PARSE_ERROR(FED_HEAD "output \"z\" = %1\n", "line 8, column 14: %1 is used before it is defined", NULL);
    /* What makes a body: verified with the whole program, after the last line. */
    PARSE_ERROR("fedc program\nbody 0 {\n  %0 = input \"x\" : f32[2]@server\n  output \"y\" = %0\n}\n",
                "the parsed program does not verify: body 0", "a body's values are local");
    PARSE_ERROR("fedc program\nbody 0 {\n  %0 = input \"x\" : f32[2]\n  %1 = broadcast(%0) : f32[2]@clients\n}\n",
                "the parsed program does not verify: body 0", "cannot communicate");
}

static void test_errors_maps_and_tuples(void) {
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=1} : (f32[2]@clients)\n",
                "line 8, column 20: unknown body 1 (1 defined so far", NULL);
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=-1} : (f32[2]@clients)\n", "line 8, column 20: unknown body -1", NULL);
    PARSE_ERROR("fedc program\n%0 = input \"x\" : f32[2]@clients\n%1 = map(%0) {body=0} : (f32[2]@clients)\n",
                "line 3, column 20: unknown body 0 (0 defined so far", NULL);
    PARSE_ERROR(FED_HEAD "%1 = map(%0) : (f32[2]@clients)\n",
                "line 8, column 6: map needs the attribute {body=N} naming the body it runs", NULL);
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=0} : (f32[3]@clients)\n",
                "line 8, column 26: declared type f32[3]@clients for result 0 but map gives f32[2]@clients", NULL);
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=0} : (f32[2]@clients, f32[]@clients)\n",
                "line 8, column 25: declared a tuple of 2 types but map gives 1, one per output of its body: "
                "(f32[2]@clients)", NULL);
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=0} : ()\n", "declared a tuple of 0 types but map gives 1", NULL);
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=0} : f32[2]@clients\n",
                "line 8, column 25: declared type f32[2]@clients but map gives (f32[2]@clients)", NULL);
    PARSE_ERROR(FED_HEAD "%1 = neg(%0) : (f32[2]@clients)\n",
                "line 8, column 16: declared a tuple but neg gives f32[2]@clients", NULL);
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=0} : (f32[2]@clients\n",
                "line 8, column 40: expected ',' or ')', found end of line", NULL);
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=0} : (f32[2]@clients,)\n", "line 8, column 41: expected a type", NULL);
    /* The rules' own checks, with the line. */
    PARSE_ERROR(FED_HEAD "%1 = map(%0, %0) {body=0} : (f32[2]@clients)\n",
                "line 8: map: the body takes 1 inputs, given 2 arguments", NULL);
    PARSE_ERROR("fedc program\nbody 0 {\n  %0 = input \"x\" : f32[2]\n  output \"y\" = %0\n}\n"
                "%0 = input \"x\" : f32[2]@server\n%1 = map(%0) {body=0} : (f32[2]@clients)\n",
                "line 7: map: argument 0 is f32[2]@server", "broadcast it first");
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=0} : (f32[2]@clients)\n%2 = result(%1) {index=1} : f32[2]@clients\n",
                "line 9: result: index 1 is outside the 1 results", NULL);
    PARSE_ERROR(FED_HEAD "%1 = map(%0) {body=0} : (f32[2]@clients)\n%2 = neg(%1) : f32[2]@clients\n",
                "line 9: neg: operand 0 is a map's tuple of results; take one with result", NULL);
    PARSE_ERROR(FED_HEAD "%1 = result(%0) {index=0} : f32[2]@clients\n", "line 8: result: operand is not a map", NULL);
    PARSE_ERROR(FED_HEAD "%1 = broadcast(%0) : f32[2]@clients\n", "line 8: broadcast: operand is f32[2]@clients", NULL);
    PARSE_ERROR(FED_HEAD "%1 = mean(%0) : f32[2]\n",
                "line 8, column 17: declared type f32[2] but mean gives f32[2]@server", NULL);
    PARSE_ERROR(FED_HEAD "%1 = num_clients() {dtype=u8} : u8[]@server\n", "line 8: num_clients: dtype must be", NULL);
}

/* --------------------------------------------------- running the text -- */

/* Runs a program of build_round's inputs on 3 clients and returns the bytes of
 * its outputs, one after another (malloc'd, *size of them). */
static unsigned char *run_outputs(const fedc_program *p, size_t *size) {
    static float w0[2] = {0.5f, -0.25f}, xs[3 * 3 * 2], n[3] = {1, 2, 3.5f};
    for (int i = 0; i < 3 * 3 * 2; i++) xs[i] = (float)((i * 7) % 5) / 5 - 0.4f;
    const char *names[] = {"w0", "xs", "n"};
    const void *data[] = {w0, xs, n};
    fedc_exec_options o = {.clients = 3};
    fedc_executor *ex = NULL;
    unsigned char *bytes = NULL;
    *size = 0;
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    for (int i = 0; ex && i < 3; i++)
        if (fedc_program_find_input(p, names[i]) != FEDC_NONE) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    if (ex) CHECK_OK(fedc_executor_run(ex));
    for (int i = 0; ex && i < fedc_program_num_outputs(p) && !fedc_test_failures(); i++) {
        const void *y = NULL;
        fedc_type t;
        CHECK_OK(fedc_executor_output(ex, fedc_program_output_name(p, i), &y, &t));
        size_t n_bytes = fedc_type_bytes(&t) * (t.placement == FEDC_CLIENTS ? 3 : 1);
        unsigned char *grown = realloc(bytes, *size + n_bytes);
        CHECK(grown != NULL);
        if (!grown || !y) break;
        bytes = grown;
        memcpy(bytes + *size, y, n_bytes);
        *size += n_bytes;
    }
    fedc_executor_destroy(ex);
    return bytes;
}

/* The parsed program computes the same bits as the one it was printed from. */
static void check_same_outputs(const fedc_program *p) {
    char *text = to_text(p);
    fedc_program *q = NULL;
    CHECK_OK(fedc_program_parse(text ? text : "", &q));
    fedc_free(text);
    if (!q) return;
    size_t n_p = 0, n_q = 0;
    unsigned char *a = run_outputs(p, &n_p), *b = run_outputs(q, &n_q);
    CHECK(n_p > 0 && n_p == n_q);
    CHECK_MSG(a && b && n_p == n_q && memcmp(a, b, n_p) == 0, "the parsed program computes other bits");
    free(a);
    free(b);
    fedc_program_destroy(q);
}

/* A round (a map whose body folds, every aggregation) and its gradient, whose
 * derivative bodies come from fedc_grad rather than from a builder. */
static void test_federated_runs_bit_exact(void) {
    fedc_program *p, *g = NULL;
    CHECK_OK(fedc_program_create(&p));
    build_round(p);
    CHECK_OK(fedc_program_status(p));
    check_same_outputs(p);
    CHECK_OK(fedc_grad(p, "loss", (const char *[]){"w0"}, 1, &g));
    if (g) {
        check_round_trip(g);
        check_same_outputs(g);
    }
    fedc_program_destroy(g);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"print_federated_example", test_print_federated_example},
        {"two_bodies_and_nesting", test_two_bodies_and_nesting},
        {"parse_bodies_by_hand", test_parse_bodies_by_hand},
        {"nesting_depth", test_nesting_depth},
        {"errors_bodies", test_errors_bodies},
        {"errors_maps_and_tuples", test_errors_maps_and_tuples},
        {"federated_runs_bit_exact", test_federated_runs_bit_exact},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
