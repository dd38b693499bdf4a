/* The CPU devices: the fast kernels ("cpu") and the plain-C reference kernels
 * ("cpu-reference", the oracle the fast ones are tested against), both on the
 * calling thread, in host memory. They differ only in their kernel table. */
#include "exec/device.h"

static void *host_alloc(size_t bytes) { return fedc_malloc(bytes); }

/* fedc_malloc's, so that allocation-failure tests count the plan's memory. */
const fedc__buffer_type fedc__buffer_host = {.name = "host", .host = true, .alloc = host_alloc, .free = fedc_free};

/* Both tables run every op of ops.def: each has every entry the executor calls
 * unguarded (tests/test_kernels_ref.c checks them against kernels.def), and a
 * dtype a kernel does not take is refused by the op's type rule before a program
 * gets here. */
static bool cpu_supports_op(const fedc__device *d, const fedc_program *p, const fedc__node *n) {
    (void)d, (void)p;
    return n->op < FEDC_OP_COUNT;
}

static fedc_status cpu_init(const fedc__device *d) {
    (void)d;
    fedc__kernels_init();
    return FEDC_OK;
}

/* Kernels return when their work is done: nothing is queued. */
static fedc_status cpu_synchronize(const fedc__device *d) {
    (void)d;
    return FEDC_OK;
}

const fedc__device fedc__device_cpu = {
    .name = "cpu",
    .kernels = &fedc__kernels_fast,
    .buffers = &fedc__buffer_host,
    .supports_op = cpu_supports_op,
    .init = cpu_init,
    .synchronize = cpu_synchronize,
};

const fedc__device fedc__device_cpu_reference = {
    .name = "cpu-reference",
    .kernels = &fedc__kernels_ref,
    .buffers = &fedc__buffer_host,
    .supports_op = cpu_supports_op,
    .init = cpu_init,
    .synchronize = cpu_synchronize,
};
