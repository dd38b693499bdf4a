/* device.h — the compute devices: what runs a program's kernels, and in what
 * memory (internal).
 *
 * The executor plans a program once (its memory, its fused chains) and then calls
 * one kernel per step. A device is everything it needs to know about where those
 * kernels run, as ggml's backends are:
 *  - a kernel table (kernels.def): the functions the steps call;
 *  - supports_op: whether it can run a node at all. The executor asks it for every
 *    node of a program, maps' and folds' bodies included, when it is created, and
 *    refuses the program, naming the node, its op and the device, if one is not.
 *    There is no fallback to another device: a program runs on one device, because
 *    the plan has one block of memory and moving values between devices in the
 *    middle of a run is not something it can express. (A device can delegate ops it
 *    lacks to another's kernels inside its own table, as "cpu" runs the reference
 *    kernel where it has no faster one.)
 *  - a buffer type: how the plan's block, its scratch and a fold's carries are
 *    allocated, and whether the executor may touch that memory itself;
 *  - init and synchronize hooks: before the first plan, and at the end of every run
 *    (a device that queues its work would wait for it there; the CPU runs it on the
 *    calling thread, so there is nothing to wait for).
 *
 * Not to be confused with backend.h, which says how clients are spread over threads
 * and MPI ranks: every client runs on the same device.
 *
 * The devices are found by name (options.device): "cpu", the fast kernels (the
 * default), and "cpu-reference", the plain-C reference kernels, the oracle
 * (device_cpu.c). A new device is a fedc__device in a file of its own, added to
 * the list in device.c (docs/devices.md). */
#ifndef FEDC_EXEC_DEVICE_H
#define FEDC_EXEC_DEVICE_H

#include "fedc/exec.h"
#include "ir/ir.h"
#include "kernels/kernels.h"

/* How a device's memory is allocated (ggml's buffer type). */
typedef struct fedc__buffer_type {
    const char *name;
    /* The memory is the host's: the executor binds the caller's arrays, copies
     * results and aggregates clients' values in it directly. The executor runs
     * only devices whose memory is the host's for now; a device with memory of its
     * own will need copies in and out of the plan. */
    bool host;
    void *(*alloc)(size_t bytes); /* NULL when out of memory */
    void (*free)(void *memory);   /* safe on NULL */
} fedc__buffer_type;

typedef struct fedc__device fedc__device;

struct fedc__device {
    const char *name; /* how options.device names it: lower case, no spaces */
    /* The kernels its steps call. Every entry that kernels.def's ref column marks
     * REF is set (the executor calls them unguarded; fedc__device_register checks);
     * the optional ones (NONE) may be NULL, and the executor then runs the ops
     * they would fuse one by one. */
    const fedc__kernels *kernels;
    const fedc__buffer_type *buffers;
    /* Whether node n of program p (its op, attributes and operand types) can run
     * here. Asked for every node, inputs and results included. */
    bool (*supports_op)(const fedc__device *d, const fedc_program *p, const fedc__node *n);
    /* Before an executor plans on it (idempotent, thread-safe). */
    fedc_status (*init)(const fedc__device *d);
    /* After every run, before its results are read: waits for queued work. */
    fedc_status (*synchronize)(const fedc__device *d);
};

/* The CPU devices (device_cpu.c). */
extern const fedc__device fedc__device_cpu;
extern const fedc__device fedc__device_cpu_reference;
/* fedc_malloc's memory, the CPU devices' buffer type. */
extern const fedc__buffer_type fedc__buffer_host;

/* The device named `name`, or NULL. */
const fedc__device *fedc__device_find(const char *name);

/* The device options ask for: options->device by name, NULL meaning "cpu", and
 * reference_kernels (deprecated) meaning "cpu-reference". An unknown name, or a
 * name that contradicts reference_kernels, is an error that names it. */
fedc_status fedc__device_of(const fedc_exec_options *options, const fedc__device **out);

/* Adds a device to the list (after the built-in ones; at most 16 in all) for the
 * whole process; `d` must outlive every executor on it. Fails on a name already
 * listed, or a kernel table without one of its required entries. */
fedc_status fedc__device_register(const fedc__device *d);

/* Whether d can run every node of p and of the bodies in it: the first node it
 * does not support is an error naming the node, its op and the device. */
fedc_status fedc__device_check(const fedc__device *d, const fedc_program *p);

#endif
