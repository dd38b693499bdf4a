/*
 * fedc/program.h — programs: typed dataflow graphs built op by op.
 *
 * A program is a list of operations in SSA form. Each operation produces one value,
 * named by a fedc_value (its index in the program). Inputs are named; outputs are
 * named values. The builder functions below append one operation each and return
 * its value:
 *
 *     fedc_program *p;
 *     fedc_program_create(&p);
 *     fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){32, 784}));
 *     fedc_value w = fedc_input(p, "w", fedc_type_make(FEDC_F32, 2, (int64_t[]){784, 10}));
 *     fedc_value y = fedc_tanh(p, fedc_matmul(p, x, w, false, false));
 *     fedc_program_output(p, "y", y);
 *     if (fedc_program_status(p)) fprintf(stderr, "%s\n", fedc_errmsg());
 *
 * Errors are sticky, as in a stream: a builder call that fails (shapes that do not
 * match, a bad axis, out of memory) records the first error in the program and
 * returns FEDC_NONE, and every later call that receives FEDC_NONE returns FEDC_NONE
 * too. So a whole model is built without checks, and fedc_program_status() is asked
 * once at the end; fedc_errmsg() then names the op, the operand and the types, e.g.
 *     "matmul: inner dimensions differ: a is f32[32,784], b is f32[785,10]".
 *
 * The order of the calls is the order of the ops, and so the program's text, its
 * plan hash and its export. C leaves the order in which a call's arguments are
 * evaluated unspecified (gcc and clang differ), so give a call at most one argument
 * that builds an op, as above, and build the others in statements of their own:
 *     fedc_value one = fedc_scalar_like(p, x, 1);
 *     fedc_value y = fedc_sub(p, one, fedc_square(p, x));
 * rather than fedc_sub(p, fedc_scalar_like(p, x, 1), fedc_square(p, x)).
 * (`make test-compilers` checks that fedc's own programs come out the same from both.)
 *
 * Conventions of the ops:
 *  - Binary arithmetic and comparisons broadcast as numpy does. Operands must have
 *    the same dtype (no implicit promotion; use fedc_cast). fedc_scalar_like makes a
 *    constant of another value's dtype.
 *  - Images are NHWC ([batch, height, width, channels]); conv filters are HWIO
 *    ([kh, kw, in_channels, out_channels]).
 *  - Axes may be negative (counted from the end).
 *  - Integer labels and indices are i32. Comparisons produce bool.
 */
#ifndef FEDC_PROGRAM_H
#define FEDC_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fedc/core.h"
#include "fedc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fedc_program fedc_program;
typedef int32_t fedc_value;
#define FEDC_NONE ((fedc_value)-1)

/* Padding of convolution and pooling windows: VALID uses only in-image positions;
 * SAME pads so that the output has ceil(in / stride) positions (TensorFlow's rule,
 * with the odd padding row/column at the bottom/right). */
typedef enum fedc_padding { FEDC_PAD_VALID, FEDC_PAD_SAME } fedc_padding;

/* ------------------------------------------------------------- lifecycle -- */

FEDC_API fedc_status fedc_program_create(fedc_program **out);
FEDC_API void fedc_program_destroy(fedc_program *p); /* safe on NULL */
/* The first error recorded by a builder call (FEDC_OK if none); also makes it this
 * thread's fedc_errmsg(). */
FEDC_API fedc_status fedc_program_status(const fedc_program *p);

/* Fails a program being built, as a builder of the library would: records
 * `status` with the formatted message as the program's sticky error (if it has
 * none yet; also this thread's fedc_errmsg()) and returns FEDC_NONE, so a builder
 * of your own can `return fedc_program_fail(p, FEDC_ENOMEM, "my_layer: ...")`. */
FEDC_API fedc_value fedc_program_fail(fedc_program *p, fedc_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Names `v` as an output. Output names are unique. */
FEDC_API fedc_status fedc_program_output(fedc_program *p, const char *name, fedc_value v);

/* ------------------------------------------------------------ inspection -- */

FEDC_API int fedc_program_size(const fedc_program *p); /* number of operations */
FEDC_API int fedc_program_num_inputs(const fedc_program *p);
FEDC_API int fedc_program_num_outputs(const fedc_program *p);
FEDC_API fedc_value fedc_program_input(const fedc_program *p, int i); /* in order of creation */
FEDC_API const char *fedc_program_input_name(const fedc_program *p, int i);
FEDC_API fedc_value fedc_program_output_value(const fedc_program *p, int i);
FEDC_API const char *fedc_program_output_name(const fedc_program *p, int i);
/* Looks an input or output up by name; FEDC_NONE if there is none. */
FEDC_API fedc_value fedc_program_find_input(const fedc_program *p, const char *name);
FEDC_API fedc_value fedc_program_find_output(const fedc_program *p, const char *name);
FEDC_API fedc_type fedc_value_type(const fedc_program *p, fedc_value v);
FEDC_API const char *fedc_value_op_name(const fedc_program *p, fedc_value v); /* "matmul" */

/* ------------------------------------------------------ whole programs -- */

/* Checks every rule a program must keep: operands defined before use (no cycles, no
 * dangling values), arity, attributes, dtypes and shapes as each op's rule computes
 * them, unique input and output names. The message names the op (by its %index and
 * name), the operand, and the expected vs actual type. */
FEDC_API fedc_status fedc_program_verify(const fedc_program *p);

/* Dead-code elimination: removes operations no output depends on (inputs stay, as
 * they are the program's interface). Values are renumbered. */
FEDC_API fedc_status fedc_program_dce(fedc_program *p);

/* Appends a copy of `src`'s operations to `dst`, with src's inputs replaced by
 * `args` (one per input of src, in order, of the same types). Writes the values of
 * src's outputs, in order, to `results`. This is how programs call programs. */
FEDC_API fedc_status fedc_program_inline(fedc_program *dst, const fedc_program *src, const fedc_value *args,
                                fedc_value *results);

/* A deep copy. */
FEDC_API fedc_status fedc_program_clone(const fedc_program *src, fedc_program **out);

/* The text format: one operation per line,
 *     %3 = matmul(%1, %2) {transpose_a=0, transpose_b=1} : f32[32,10]
 * Printing then parsing then printing gives the same text, and the parsed program
 * computes the same bits. Parse errors say line:column and what was expected. */
FEDC_API fedc_status fedc_program_print(const fedc_program *p, FILE *out);
/* Prints into a fedc_malloc'd NUL-terminated string the caller frees with fedc_free. */
FEDC_API fedc_status fedc_program_to_string(const fedc_program *p, char **out);
FEDC_API fedc_status fedc_program_parse(const char *text, fedc_program **out);
/* The same for `len` bytes read from a file, which may hold a NUL byte: refused
 * with its line and column (fedc_program_parse would stop reading there). */
FEDC_API fedc_status fedc_program_parse_n(const char *text, size_t len, fedc_program **out);

/* -------------------------------------------------------------- builders -- */

FEDC_API fedc_value fedc_input(fedc_program *p, const char *name, fedc_type type);
/* A constant holding a copy of `data` (row-major, `type`'s dtype). */
FEDC_API fedc_value fedc_constant(fedc_program *p, fedc_type type, const void *data);
/* A rank-0 constant of dtype `dt` (or of the dtype of `like`). */
FEDC_API fedc_value fedc_scalar(fedc_program *p, fedc_dtype dt, double value);
FEDC_API fedc_value fedc_scalar_like(fedc_program *p, fedc_value like, double value);
/* A constant of `type` filled with `value`. */
FEDC_API fedc_value fedc_full(fedc_program *p, fedc_type type, double value);
/* y[i0, ..., in] = i_axis. */
FEDC_API fedc_value fedc_iota(fedc_program *p, fedc_type type, int axis);

/* Elementwise, with numpy broadcasting for the binary ones. */
FEDC_API fedc_value fedc_add(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_sub(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_mul(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_div(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_maximum(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_minimum(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_neg(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_exp(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_log(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_tanh(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_sigmoid(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_relu(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_sqrt(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_square(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_pow(fedc_program *p, fedc_value x, double exponent);

/* Comparisons give bool; select picks a where cond is true, else b (broadcasting). */
FEDC_API fedc_value fedc_eq(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_ne(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_lt(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_le(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_gt(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_ge(fedc_program *p, fedc_value a, fedc_value b);
FEDC_API fedc_value fedc_select(fedc_program *p, fedc_value cond, fedc_value a, fedc_value b);

/* Reductions over `naxes` axes (naxes == 0: none; pass NULL, -1 to reduce all). */
FEDC_API fedc_value fedc_reduce_sum(fedc_program *p, fedc_value x, const int *axes, int naxes, bool keepdims);
FEDC_API fedc_value fedc_reduce_mean(fedc_program *p, fedc_value x, const int *axes, int naxes, bool keepdims);
FEDC_API fedc_value fedc_reduce_max(fedc_program *p, fedc_value x, const int *axes, int naxes, bool keepdims);
FEDC_API fedc_value fedc_argmax(fedc_program *p, fedc_value x, int axis); /* i32, axis removed */

/* Shapes. reshape accepts one -1 dim, inferred. broadcast_to follows numpy. */
FEDC_API fedc_value fedc_reshape(fedc_program *p, fedc_value x, int rank, const int64_t *dims);
FEDC_API fedc_value fedc_broadcast_to(fedc_program *p, fedc_value x, int rank, const int64_t *dims);
FEDC_API fedc_value fedc_transpose(fedc_program *p, fedc_value x, const int *perm); /* y.dims[i] = x.dims[perm[i]] */
/* x[start[i] : limit[i]] along every axis (unit stride). */
FEDC_API fedc_value fedc_slice(fedc_program *p, fedc_value x, const int64_t *start, const int64_t *limit);
FEDC_API fedc_value fedc_concat(fedc_program *p, const fedc_value *xs, int n, int axis);
/* Zero padding: lo[i] before and hi[i] after axis i. */
FEDC_API fedc_value fedc_pad(fedc_program *p, fedc_value x, const int64_t *lo, const int64_t *hi);

/* Matrix product of the last two axes, batched over the leading ones: a is [..., m, k]
 * ([..., k, m] when transpose_a), b is [..., k, n] ([..., n, k] when transpose_b). A
 * rank-2 operand is shared by every batch; otherwise batch dims must agree. */
FEDC_API fedc_value fedc_matmul(fedc_program *p, fedc_value a, fedc_value b, bool transpose_a, bool transpose_b);

/* Rows of `table` ([rows, ...]) at i32 indices `idx` (any shape): the result has
 * shape idx.shape + table.shape[1:]. An index out of range fails at run time. */
FEDC_API fedc_value fedc_gather(fedc_program *p, fedc_value table, fedc_value idx);
/* The transpose of gather: a [rows, ...] array of zeros with updates[i] added at row
 * idx[i]. updates has shape idx.shape + row shape. */
FEDC_API fedc_value fedc_scatter_add(fedc_program *p, fedc_value updates, fedc_value idx, int64_t rows);
/* idx.shape + [depth] of dtype dt; an index outside [0, depth) gives zeros. */
FEDC_API fedc_value fedc_one_hot(fedc_program *p, fedc_value idx, int64_t depth, fedc_dtype dt);

/* Convolution of x [n,h,w,c] with filters w [kh,kw,c,o]: y is [n,oh,ow,o]. */
FEDC_API fedc_value fedc_conv2d(fedc_program *p, fedc_value x, fedc_value w, int stride_h, int stride_w,
                       fedc_padding padding);
FEDC_API fedc_value fedc_max_pool2d(fedc_program *p, fedc_value x, int window_h, int window_w, int stride_h,
                           int stride_w, fedc_padding padding);
FEDC_API fedc_value fedc_avg_pool2d(fedc_program *p, fedc_value x, int window_h, int window_w, int stride_h,
                           int stride_w, fedc_padding padding);

/* log_softmax over the last axis. */
FEDC_API fedc_value fedc_log_softmax(fedc_program *p, fedc_value x);
/* Per-example cross-entropy of logits [..., classes] against i32 labels [...],
 * computed stably as logsumexp(logits) - logits[label], times `weight` [...] when
 * weight is not FEDC_NONE (a mask: padded examples get weight 0). Result [...]. */
FEDC_API fedc_value fedc_softmax_cross_entropy(fedc_program *p, fedc_value logits, fedc_value labels,
                                      fedc_value weight);
/* Its gradient with respect to the logits, the op its derivative uses (one pass
 * over the logits): scale[..., None] * (softmax(logits) - one_hot(labels)), with
 * scale [...] the cotangent of the loss (times the weight). Differentiable. */
FEDC_API fedc_value fedc_softmax_cross_entropy_grad(fedc_program *p, fedc_value logits, fedc_value labels, fedc_value scale);

/* Inverted dropout: each element is kept with probability 1 - rate and scaled by
 * 1 / (1 - rate). `key` is an i32[4] value naming the random stream (see
 * fedc_rng_stream in core.h: key[0..1] the Philox key, key[2..3] the upper counter
 * words); element i uses the stream's i-th uniform, so the mask is a pure function
 * of (key, position) and the derivative reuses it. */
FEDC_API fedc_value fedc_dropout(fedc_program *p, fedc_value x, fedc_value key, double rate);

/* Standard normal variates of `type`'s shape and float dtype (its placement is the
 * key's): element i (row-major) is fedc_rng_normal(stream, i) of the stream that
 * `key` names (as dropout's), rounded once to the dtype. A pure function of (key,
 * i): the same bits for any number of threads. No derivative (a source). */
FEDC_API fedc_value fedc_random_normal(fedc_program *p, fedc_value key, fedc_type type);
/* Uniform variates in [0, 1) of `type`'s shape and float dtype, as random_normal:
 * element i is fedc_rng_uniform_f32 (f64: _f64) (stream, i), the draw dropout
 * compares with its rate (stochastic rounding: FedJAX's quantizers). */
FEDC_API fedc_value fedc_random_uniform(fedc_program *p, fedc_value key, fedc_type type);

FEDC_API fedc_value fedc_cast(fedc_program *p, fedc_value x, fedc_dtype dt);

/* The gradient ops that derivatives of conv2d and pooling are built from. They are
 * ordinary ops (printable, runnable, differentiable where stated in docs/ops.md). */
FEDC_API fedc_value fedc_conv2d_input_grad(fedc_program *p, fedc_value dy, fedc_value w, const fedc_type *x_type,
                                  int stride_h, int stride_w, const int64_t pads[4]);
FEDC_API fedc_value fedc_conv2d_filter_grad(fedc_program *p, fedc_value x, fedc_value dy, int kh, int kw,
                                   int stride_h, int stride_w, const int64_t pads[4]);
FEDC_API fedc_value fedc_max_pool2d_grad(fedc_program *p, fedc_value x, fedc_value dy, int window_h, int window_w,
                                int stride_h, int stride_w, const int64_t pads[4]);
FEDC_API fedc_value fedc_avg_pool2d_grad(fedc_program *p, fedc_value dy, const fedc_type *x_type, int window_h,
                                 int window_w, int stride_h, int stride_w, const int64_t pads[4]);

/* The LSTM over a whole sequence (Haiku's hk.LSTM cell, gates in the order i, g, f,
 * o, without the forget bias, which callers add to xw): xw [T, B, 4H] is the input
 * projection x[t] @ w_x + b of every step, computed beforehand as one GEMM, and wh
 * [H, 4H] the recurrent weights. With a = xw[t] + h[t-1] @ wh, i = sigmoid(a_i),
 * g = tanh(a_g), f = sigmoid(a_f), o = sigmoid(a_o), c[t] = f c[t-1] + i g and
 * h[t] = o tanh(c[t]) from h[-1] = c[-1] = 0, the result is the trace
 * [T, B, 6H]: per step and row [h, c, i, g, f, o]. Slice h (the first H) out of
 * it; the rest is what backpropagation through time reads. */
FEDC_API fedc_value fedc_lstm(fedc_program *p, fedc_value xw, fedc_value wh);
/* Backpropagation through time: the cotangent of xw [T, B, 4H] from the trace,
 * the trace's cotangent dtrace [T, B, 6H] and wh. */
FEDC_API fedc_value fedc_lstm_grad(fedc_program *p, fedc_value trace, fedc_value dtrace, fedc_value wh);
/* Forward mode: the trace's tangent [T, B, 6H] from a tangent dxw [T, B, 4H] of xw
 * (wh held fixed); the transpose of fedc_lstm_grad in its second operand. */
FEDC_API fedc_value fedc_lstm_tangent(fedc_program *p, fedc_value trace, fedc_value dxw, fedc_value wh);

/* ---------------------------------------------------- federated primitives -- */

/* A federated program computes on placed values: `server` ones held by the
 * coordinator, `clients` ones held one per client of the cohort (logically
 * [clients, ...shape]; the cohort's size is set when the program runs). Array ops
 * apply to server values, and to clients values client by client; a server value
 * and a clients value never meet in one op: communication is explicit.
 *
 *     fedc_value w = fedc_input(p, "w", server_type);          // placement FEDC_SERVER
 *     fedc_value y = fedc_input(p, "y", clients_type);         // placement FEDC_CLIENTS
 *     fedc_value loss_i;
 *     fedc_map(p, client_loss, (fedc_value[]){fedc_broadcast(p, w), y}, 2, &loss_i);
 *     fedc_value loss = fedc_mean(p, loss_i);                  // f32[]@server
 */

/* T@server -> T@clients: every client gets the value. */
FEDC_API fedc_value fedc_broadcast(fedc_program *p, fedc_value x);
/* T@clients -> T@server: the sum, the mean, and the mean weighted by one scalar
 * per client (w is T's dtype, []@clients). Sums run in client order, so results do
 * not depend on how many threads run the clients. */
FEDC_API fedc_value fedc_sum(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_mean(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_weighted_mean(fedc_program *p, fedc_value x, fedc_value w);
/* The cohort's size, as a server scalar of dtype dt (f32, f64 or i32). */
FEDC_API fedc_value fedc_num_clients(fedc_program *p, fedc_dtype dt);

/* The hierarchy server ⊃ groups ⊃ clients (docs/federated.md, "Hierarchies"): a
 * @groups value is one per group; the cohort's clients are ordered by group, each
 * group a contiguous range (sizes: fedc_exec_options.group_sizes; without them,
 * one group of every client). Each primitive moves a value one level:
 * broadcast_down T@server -> T@groups and T@groups -> T@clients (each client gets
 * its group's); sum_up, mean_up and weighted_mean_up T@clients -> T@groups (over
 * each group's clients, in client order) and T@groups -> T@server (over the
 * groups). w is one scalar per member, at x's placement. */
FEDC_API fedc_value fedc_broadcast_down(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_sum_up(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_mean_up(fedc_program *p, fedc_value x);
FEDC_API fedc_value fedc_weighted_mean_up(fedc_program *p, fedc_value x, fedc_value w);
/* The number of groups (a server scalar) and each group's number of clients (a
 * groups scalar), of dtype dt (f32, f64 or i32). */
FEDC_API fedc_value fedc_num_groups(fedc_program *p, fedc_dtype dt);
FEDC_API fedc_value fedc_group_size(fedc_program *p, fedc_dtype dt);
/* A map at the groups whose body maps over the group's clients: `body` is a flat
 * federated program, run for each group with the group as its server and the
 * group's clients as its clients. args: one per body input, @groups for a @server
 * input, @clients for a @clients one; results: @groups for a @server output,
 * @clients for a @clients one. Built by writing the body in place one level
 * down (broadcast -> broadcast_down, sum/mean/weighted_mean -> *_up,
 * num_clients -> group_size), so the result differentiates, prints and runs as
 * any program. Returns FEDC_OK or the sticky error. */
FEDC_API fedc_status fedc_map_groups(fedc_program *p, const fedc_program *body, const fedc_value *args, int nargs,
                                     fedc_value *results);
/* The level above / below pl in the tree (FEDC_LOCAL past either end). */
FEDC_API fedc_placement fedc_placement_up(fedc_placement pl);
FEDC_API fedc_placement fedc_placement_down(fedc_placement pl);

/* Runs `body` on each client. `body` is a program on local values whose inputs
 * match the args in order: args are @clients values whose per-client types are
 * the body's input types. Writes one @clients value per body output, in order, to
 * `results`. The body is copied into p. Returns FEDC_OK or the sticky error.
 * With @groups args (all of them), the body runs on each group instead and the
 * results are @groups values. */
FEDC_API fedc_status fedc_map(fedc_program *p, const fedc_program *body, const fedc_value *args, int nargs,
                     fedc_value *results);

/* Runs `body` over sequences, carrying state: the carries start as `init`, and
 * step t (0 <= t < length) computes
 *     body(carries..., xs[0][t], ..., xs[nxs-1][t]) -> (new carries..., ys...)
 * Writes the final carries (ncarries values), then each per-step output y stacked
 * along a new leading axis ([steps, ...]; rows at t >= length are zero) to
 * `results`. Every sequence has the same leading dimension `steps`; `length` is an
 * i32[] value in [0, steps], checked when the program runs, so one program serves
 * clients with different numbers of batches (pad the sequences to the longest).
 * Local training is a fold over a client's batches, inside a map's body. */
FEDC_API fedc_status fedc_fold(fedc_program *p, const fedc_program *body, const fedc_value *init, int ncarries,
                      const fedc_value *xs, int nxs, fedc_value length, fedc_value *results);

/* The phases of a federated program, in order: what a deployment splits apart. */
typedef enum fedc_segment_kind {
    FEDC_SEGMENT_SERVER,    /* server preparation or update: server and local values */
    FEDC_SEGMENT_BROADCAST, /* server -> clients */
    FEDC_SEGMENT_CLIENTS,   /* client work: map, and ops on clients values */
    FEDC_SEGMENT_AGGREGATE  /* clients -> server */
} fedc_segment_kind;

typedef struct fedc_segment {
    fedc_segment_kind kind;
    fedc_value first, last; /* the segment's operations are first..last, in program order */
} fedc_segment;

FEDC_API const char *fedc_segment_name(fedc_segment_kind kind); /* "server", "broadcast", ... */
/* Writes up to `max` segments to `out` and returns how many the program has
 * (inputs are not counted in any segment). */
FEDC_API int fedc_program_segments(const fedc_program *p, fedc_segment *out, int max);

/* ------------------------------------------------------ transformer layers -- */

/* GELU with the tanh approximation (GPT-2, BERT, PyTorch's approximate="tanh"):
 * x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))). */
FEDC_API fedc_value fedc_gelu(fedc_program *p, fedc_value x);
/* Layer normalisation over the last axis of x [..., C]: (x - mean) / sqrt(var +
 * eps) * gamma + beta, with gamma and beta [C] and var the biased variance (as
 * PyTorch's nn.LayerNorm; eps 1e-5 there). */
FEDC_API fedc_value fedc_layer_norm(fedc_program *p, fedc_value x, fedc_value gamma, fedc_value beta, double eps);
/* Causal multi-head self-attention on packed projections: qkv [batch, seq, 3 *
 * heads * d] holds q, k, v side by side (the last axis is [3, heads, d]), the
 * result is [batch, seq, heads * d] (heads side by side): position i of head h
 * gets sum_{j <= i} softmax_j(q_i . k_j / sqrt(d)) v_j. One fused op: the
 * attention matrix is never a program value. */
FEDC_API fedc_value fedc_causal_attention(fedc_program *p, fedc_value qkv, int heads);

/* The backward ops the derivatives of the three use (differentiable as well):
 * gelu_grad = dy * gelu'(x); layer_norm_grad = dx of layer_norm for cotangent dy;
 * layer_norm_param_grad = [d gamma; d beta] as a [2, C] array; causal_attention_grad
 * = d qkv for the output's cotangent dy. */
FEDC_API fedc_value fedc_gelu_grad(fedc_program *p, fedc_value x, fedc_value dy);
FEDC_API fedc_value fedc_layer_norm_grad(fedc_program *p, fedc_value x, fedc_value gamma, fedc_value dy, double eps);
FEDC_API fedc_value fedc_layer_norm_param_grad(fedc_program *p, fedc_value x, fedc_value dy, double eps);
FEDC_API fedc_value fedc_causal_attention_grad(fedc_program *p, fedc_value qkv, fedc_value dy, int heads);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_PROGRAM_H */
