/*
 * One ONNX node test as a fedc program (tests/test_onnx.c runs them; the
 * builders are in tests/onnx_cases.c, one per ONNX op type).
 *
 * A builder reads the node's attributes and the test's input tensors, declares
 * fedc inputs with data converted to fedc's dtypes and layouts (onnx_arg...), adds
 * the ops, and names which fedc value must equal which ONNX output
 * (onnx_expect...). The runner then runs the program with the reference and with
 * the fast kernels and compares. A builder that meets something fedc does not do
 * calls onnx_unsupported with the reason: the runner fails the test unless the
 * ONNX test is in its table of tests that are not applicable, so nothing is left
 * out silently.
 */
#ifndef FEDC_TEST_ONNX_CASE_H
#define FEDC_TEST_ONNX_CASE_H

#include <stdbool.h>

#include "fedc/program.h"
#include "onnx_tensor.h"

#define ONNX_CASE_MAX_BINDS 16
#define ONNX_CASE_MAX_EXPECT 4

typedef struct onnx_expect {
    fedc_value v;
    onnx_tensor want; /* the ONNX output in the layout of v (owned) */
} onnx_expect;

typedef struct onnx_case {
    const char *test;            /* e.g. "test_conv_with_strides_padding" */
    const onnx_model *model;
    const onnx_node *node;
    /* per node input / output (NULL where the node leaves it out) */
    const onnx_tensor *in[ONNX_MAX_IO];
    const onnx_tensor *out[ONNX_MAX_IO];
    fedc_program *p;
    int nbinds;
    char bind_name[ONNX_CASE_MAX_BINDS][16];
    void *bind_data[ONNX_CASE_MAX_BINDS]; /* owned */
    int nexpect;
    onnx_expect expect[ONNX_CASE_MAX_EXPECT];
    double rtol, atol;
    char unsupported[160]; /* set: fedc cannot run this test, and why */
    char note[240];        /* how fedc's semantics differ here, and what is checked */
    bool failed;           /* the builder found the test data inconsistent */
} onnx_case;

typedef void (*onnx_build_fn)(onnx_case *c);

/* The builder for an ONNX op type, or NULL: the op has no fedc counterpart. */
onnx_build_fn onnx_builder(const char *op_type);

#endif
