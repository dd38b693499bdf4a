/*
 * bench_program_call.c — the cost of one run of a small program from C: the
 * program is read from a text file, its inputs bound once to zeroed buffers, and
 * fedc_executor_run timed over many calls. bench/python_call.py runs the same
 * program from Python and compares the two: what a call through the Python package
 * adds.
 *
 *     ./build/bench_program_call PROGRAM.fedc [calls] [sets] [clients]
 *
 * Prints one JSON line: {"bench": "program_call", "us_per_call": median over sets}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bench.h"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = size >= 0 ? malloc((size_t)size + 1) : NULL;
    *n = s ? fread(s, 1, (size_t)size, f) : 0;
    fclose(f);
    if (s) s[*n] = 0;
    return s;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_program_call PROGRAM.fedc [calls] [sets] [clients]\n");
        return 2;
    }
    int calls = argc > 2 ? atoi(argv[2]) : 20000, sets = argc > 3 ? atoi(argv[3]) : 5;
    int clients = argc > 4 ? atoi(argv[4]) : 0;
    if (calls < 1 || sets < 1 || sets > 100 || clients < 0) {
        fprintf(stderr, "bench_program_call: calls >= 1, sets in 1..100, clients >= 0\n");
        return 2;
    }
    size_t n;
    char *text = slurp(argv[1], &n);
    if (!text) {
        fprintf(stderr, "bench_program_call: cannot read %s\n", argv[1]);
        return 1;
    }
    fedc_program *p;
    BENCH_FAIL_IF(fedc_program_parse_n(text, n, &p));
    free(text);
    fedc_executor *ex;
    BENCH_FAIL_IF(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = clients}));
    int ninputs = fedc_program_num_inputs(p);
    void **bufs = calloc((size_t)ninputs + 1, sizeof *bufs);
    for (int i = 0; i < ninputs; i++) {
        fedc_type t = fedc_value_type(p, fedc_program_input(p, i));
        size_t bytes = fedc_type_bytes(&t) * (t.placement == FEDC_CLIENTS ? (size_t)clients : 1);
        BENCH_FAIL_IF(!(bufs[i] = calloc(bytes ? bytes : 1, 1)));
        BENCH_FAIL_IF(fedc_executor_bind(ex, fedc_program_input_name(p, i), bufs[i]));
    }
    double *us = malloc((size_t)sets * sizeof *us);
    for (int i = 0; i < 1000; i++) BENCH_FAIL_IF(fedc_executor_run(ex)); /* warm-up */
    for (int s = 0; s < sets; s++) {
        double t0 = bench_now();
        for (int i = 0; i < calls; i++) BENCH_FAIL_IF(fedc_executor_run(ex));
        us[s] = (bench_now() - t0) / calls * 1e6;
    }
    bench_json("program_call", "\"us_per_call\": %.4f, \"calls\": %d, \"sets\": %d", bench_median(us, sets),
               calls, sets);
    for (int i = 0; i < ninputs; i++) free(bufs[i]);
    free(bufs);
    free(us);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    return 0;
}
