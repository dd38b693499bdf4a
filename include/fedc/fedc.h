/*
 * fedc.h — federated computation and federated learning in C. This header is the
 * manual: it includes the whole public API and shows how the pieces fit.
 *
 *   fedc/core.h     status codes and messages, allocation, arenas, thread pool, RNG
 *   fedc/types.h    dtypes, shapes, placements
 *   fedc/program.h  programs: the builder, verifier, text format
 *   fedc/ad.h       derivatives of programs (grad, vjp)
 *   fedc/exec.h     running programs
 *   fedc/data.h     federated datasets: readers, partitioners, batching, sampling
 *   fedc/tasks.h    the standard tasks' preprocessing (EMNIST, Shakespeare, ...)
 *   fedc/nn.h       models and optimizers as program builders
 *   fedc/fl.h       federated learning algorithms, and the training job
 *   fedc/npy.h      reading and writing numpy .npy files
 *   fedc/safetensors.h  reading and writing .safetensors files (checkpoints)
 *   fedc/privacy.h  the RDP privacy accountant: epsilon of DP-SGD / DP-FedAvg noise
 *
 * ---------------------------------------------------------------------------------
 * Worked example: an MLP, its gradient, and SGD (examples/mlp.c is the full program)
 * ---------------------------------------------------------------------------------
 *
 * 1. Build the model as a program. Builder calls return values; errors are sticky,
 *    so the status is checked once at the end.
 *
 *     fedc_program *model;
 *     fedc_program_create(&model);
 *     fedc_value x      = fedc_input(model, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){300, 2}));
 *     fedc_value labels = fedc_input(model, "labels", fedc_type_make(FEDC_I32, 1, (int64_t[]){300}));
 *     fedc_value w1 = fedc_input(model, "w1", fedc_type_make(FEDC_F32, 2, (int64_t[]){2, 64}));
 *     fedc_value b1 = fedc_input(model, "b1", fedc_type_make(FEDC_F32, 1, (int64_t[]){64}));
 *     fedc_value w2 = fedc_input(model, "w2", fedc_type_make(FEDC_F32, 2, (int64_t[]){64, 3}));
 *     fedc_value h = fedc_tanh(model, fedc_add(model, fedc_matmul(model, x, w1, false, false), b1));
 *     fedc_value logits = fedc_matmul(model, h, w2, false, false);
 *     fedc_value loss = fedc_reduce_mean(model,
 *         fedc_softmax_cross_entropy(model, logits, labels, FEDC_NONE), NULL, -1, false);
 *     fedc_program_output(model, "loss", loss);
 *     if (fedc_program_status(model)) fprintf(stderr, "%s\n", fedc_errmsg());
 *
 * 2. Differentiate. The gradient is another program, with outputs "loss",
 *    "grad_w1", "grad_b1", "grad_w2". It can be printed (fedc_program_print),
 *    differentiated again, or composed into bigger programs.
 *
 *     const char *wrt[] = {"w1", "b1", "w2"};
 *     fedc_program *grad;
 *     fedc_grad(model, "loss", wrt, 3, &grad);
 *
 * 3. Write the SGD step as a program too: inline the gradient program and add
 *    w - lr * grad_w for each parameter (fedc_program_inline; see examples/mlp.c).
 *
 * 4. Run it. The executor plans all buffers once; a run allocates nothing.
 *
 *     fedc_executor *ex;
 *     fedc_executor_create(&ex, step, NULL);
 *     fedc_executor_bind(ex, "x", x_data);   // caller's memory, borrowed
 *     ...
 *     for (int s = 0; s < steps; s++) {
 *         fedc_executor_run(ex);
 *         const float *new_w1;
 *         fedc_executor_output(ex, "new_w1", (const void **)&new_w1, NULL);
 *         memcpy(w1_data, new_w1, sizeof w1_data);
 *     }
 *     fedc_executor_destroy(ex);
 *
 * Every fallible call returns a fedc_status (FEDC_OK is 0); fedc_errmsg() says what
 * failed and where. The library never exits or aborts on bad input.
 */
#ifndef FEDC_H
#define FEDC_H

#include "fedc/core.h"
#include "fedc/types.h"
#include "fedc/program.h"
#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/data.h"
#include "fedc/formats.h"
#include "fedc/tasks.h"
#include "fedc/tree.h"
#include "fedc/nn.h"
#include "fedc/fl.h"
#include "fedc/npy.h"
#include "fedc/safetensors.h"
#include "fedc/export.h"
#include "fedc/privacy.h"
#include "fedc/secure_sum.h"
#include "fedc/form.h"
#include "fedc/robust.h"
#include "fedc/clock.h"
#include "fedc/deploy.h"

#define FEDC_VERSION "0.1.0"

#endif /* FEDC_H */
