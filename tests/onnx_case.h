/*
 * One ONNX node test as a fedc program (tests/test_onnx.c runs them; the
 * builders are in tests/onnx_cases.c and onnx_cases_nn.c, one per ONNX op type;
 * their shared helpers in onnx_case.c).
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

typedef struct onnx_expected {
    fedc_value v;
    onnx_tensor want; /* the ONNX output in the layout of v (owned) */
} onnx_expected;

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
    onnx_expected expect[ONNX_CASE_MAX_EXPECT];
    double rtol, atol;
    char unsupported[160]; /* set: fedc cannot run this test, and why */
    char note[240];        /* how fedc's semantics differ here, and what is checked */
    bool failed;           /* the builder found the test data inconsistent */
} onnx_case;

typedef void (*onnx_build_fn)(onnx_case *c);

/* The builder for an ONNX op type, or NULL: the op has no fedc counterpart. */
onnx_build_fn onnx_builder(const char *op_type);

/* The builders, by op type, each table ended by {NULL, NULL}: onnx_cases.c
 * (elementwise, reductions, shapes, indexing) and onnx_cases_nn.c (layers). */
typedef struct onnx_builder_entry {
    const char *op_type;
    onnx_build_fn build;
} onnx_builder_entry;
extern const onnx_builder_entry onnx_builders_basic[], onnx_builders_nn[];

/* ------------------------------------------- for builders (onnx_case.c) -- */

/* fedc cannot run this test, and why (the first reason is kept). */
void onnx_unsupported(onnx_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* How fedc's semantics differ here (appended; printed with FEDC_ONNX_VERBOSE). */
void onnx_note(onnx_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The test data is not what the builder expects: the test fails. */
void onnx_bad_data(onnx_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool onnx_stop(const onnx_case *c); /* unsupported or failed: build no further */
/* Only the attributes in `known` (comma-separated) are understood; any other
 * could change the semantics, so it makes the test unsupported. */
void onnx_known_attrs(onnx_case *c, const char *known);
/* fedc's dtype for an ONNX data type (int64 -> i32); false and unsupported if none. */
bool onnx_dtype_of(onnx_case *c, int onnx_dt, fedc_dtype *dt);
/* A malloc'd copy of t with its axes permuted: y.dims[i] = t.dims[perm[i]]. */
void onnx_permute(const onnx_tensor *t, const int *perm, onnx_tensor *y);
/* A fedc input holding `data` (values of `dims`) as dtype dt, bound when run. */
fedc_value onnx_input_data(onnx_case *c, fedc_dtype dt, int rank, const int64_t *dims, const double *data);
const onnx_tensor *onnx_need(onnx_case *c, int k); /* node input k; a failure if absent */
/* Node input k as a fedc input of its own shape, or permuted on the host. */
fedc_value onnx_arg(onnx_case *c, int k);
fedc_value onnx_arg_perm(onnx_case *c, int k, const int *perm);
/* The values of a small integer input (shapes, axes, pads), at most max; a scalar input. */
int onnx_const_ints(onnx_case *c, int k, int64_t *out, int max);
double onnx_const_scalar(onnx_case *c, int k, double dflt);
/* Node output k must equal v (after the host permutation perm; NULL: none). */
void onnx_expect(onnx_case *c, int k, fedc_value v);
void onnx_expect_perm(onnx_case *c, int k, fedc_value v, const int *perm);
int onnx_axis_of(onnx_case *c, int64_t axis, int rank); /* negative axes from the end */
fedc_type onnx_type_of(onnx_case *c, fedc_value v);
/* The permutation that moves axis a of a rank-r value last, and its inverse. */
void onnx_axis_last(int a, int r, int *perm, int *inverse);

#endif
