/*
 * fedc/exec.h — running programs on the CPU.
 *
 * An executor is made once per program. It verifies the program, plans every
 * intermediate buffer by liveness into one block (values that are never alive at
 * the same time share memory) and allocates it; after that, running the program
 * allocates nothing. Inputs are bound by name to caller-owned memory; outputs are
 * read by name and stay valid until the next run.
 *
 *     fedc_executor *ex;
 *     if (fedc_executor_create(&ex, program, NULL)) { ... fedc_errmsg() ... }
 *     fedc_executor_bind(ex, "x", x_data);              // float[32*784], borrowed
 *     fedc_executor_bind(ex, "w", w_data);
 *     fedc_executor_run(ex);
 *     const float *y;
 *     fedc_executor_output(ex, "y", (const void **)&y, NULL);
 *     fedc_executor_destroy(ex);
 *
 * The kernels run on a compute device, by name (options.device; docs/devices.md):
 * "cpu", the fast kernels (the default), or "cpu-reference", the plain-C oracle.
 *
 * Parallelism comes first from running many clients at once (options.threads).
 * Each kernel runs on the thread that runs its step, with BLAS pinned to one
 * thread, except that threads no client uses are lent to the fast kernels: all of
 * them in a program without map, and threads / clients of them to each client's
 * steps when a cohort has fewer clients than threads. Then matmul, unary and binary
 * ops, reductions, slice and pad, the fused SGD steps, softmax cross-entropy,
 * GELU, layer norm, attention and the LSTM cut their work into blocks fixed by the
 * shapes alone (convolution, pooling and the reference kernels stay on one
 * thread). Results are deterministic: the same inputs give the same bits, whatever
 * the number of threads.
 */
#ifndef FEDC_EXEC_H
#define FEDC_EXEC_H

#include "fedc/program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fedc_executor fedc_executor;

/* What to do when one client's computation fails (a kernel error, or a NaN/Inf in
 * its results when check_finite is on). */
typedef enum fedc_client_failure {
    FEDC_FAIL_ROUND,  /* the run fails, naming the client (the default) */
    FEDC_DROP_CLIENT  /* the client is left out of every aggregate; the run goes on */
} fedc_client_failure;

typedef struct fedc_exec_options {
    /* Deprecated: the same as device = "cpu-reference" (the plain-C reference
     * kernels, the oracle); set device instead. */
    bool reference_kernels;
    /* Number of clients in the cohort: the leading extent of every @clients value.
     * Needed by programs with federated values; ignored by others. */
    int clients;
    /* Worker threads that run clients in parallel (0 or 1: the calling thread only).
     * Threads no client uses (a program without map, or a cohort smaller than
     * this) run blocks of each step's large kernels (GEMMs, the loss over the
     * classes), cut by shape alone. Results are bitwise identical for any number
     * of threads. */
    int threads;
    /* Check every client's results for NaN and Inf. */
    bool check_finite;
    fedc_client_failure on_client_failure;
    /* Optional names of the clients (clients entries, borrowed) used in messages. */
    const char *const *client_ids;
    /* Time every op (see fedc_executor_profile); off by default: it costs two clock
     * reads an op. */
    bool profile;
    /* Split every map's clients over the ranks of the MPI job (after fedc_mpi_init;
     * ignored in a job of one rank): each rank runs some of the clients on its own
     * `threads` workers (fedc_executor_local_clients; fedc_executor_balance says
     * how), and every rank gets the same outputs, bitwise identical to a run in one
     * process. Every rank must create the executor and run it the same number of
     * times, with the same server inputs; a @clients input that only maps read
     * needs values only for the rank's clients. */
    bool mpi;
    /* The compute device that runs the kernels, by name (fedc_device_name lists
     * them): "cpu", the fast kernels (NULL: the default), or "cpu-reference", the
     * plain-C reference kernels that the fast ones are tested against (they
     * accumulate in double and fuse nothing). The executor refuses an unknown name,
     * and a program with a node the device cannot run, naming it. */
    const char *device;
    /* The hierarchy (fedc/program.h, broadcast_down and the *_up aggregations):
     * the most groups a run has (a @groups value holds this many; memory is
     * groups x the values, whatever the clients) and the first runs' groups'
     * numbers of clients (`groups` entries of 1 or more summing to at most
     * `clients`; borrowed, read at create; fedc_executor_set_groups changes them
     * between runs). Group g's clients are the cohort places after the first g
     * groups': a job that maps clients to groups orders its cohort by group. The
     * places after the last group are in none and must be absent
     * (fedc_executor_set_absent). 0 groups: one group of every client (the flat
     * program is the one-group case). With `mpi`, the ranks run whole groups
     * (docs/mpi.md), with the same bits as one process. */
    int groups;
    const int *group_sizes;
} fedc_exec_options;

/* The name of compute device i (0 is the default), or NULL past the last. */
FEDC_API const char *fedc_device_name(int i);

/* Verifies `program` and plans it. The executor keeps its own copy of the program.
 * `options` may be NULL for the defaults. */
FEDC_API fedc_status fedc_executor_create(fedc_executor **out, const fedc_program *program,
                                 const fedc_exec_options *options);
FEDC_API void fedc_executor_destroy(fedc_executor *ex); /* safe on NULL */

/* Binds input `name` to `data`, which holds the input's type (row-major) and must
 * stay valid while the executor runs. Bindings persist across runs. A @clients
 * input holds one value per client, one after another: clients x the type. */
FEDC_API fedc_status fedc_executor_bind(fedc_executor *ex, const char *name, const void *data);

/* Runs the program once. Fails if an input is unbound, or a kernel meets bad data
 * (an index out of range, a label outside the classes), naming the op. */
FEDC_API fedc_status fedc_executor_run(fedc_executor *ex);

/* The value of output `name` from the last run; `type` may be NULL. A @clients
 * output holds one value per client, one after another. */
FEDC_API fedc_status fedc_executor_output(const fedc_executor *ex, const char *name, const void **data,
                                 fedc_type *type);

/* The clients left out of the last run (FEDC_DROP_CLIENT): writes up to `max`
 * client indices, in order, and returns how many there are. Absent ones are not
 * among them. */
FEDC_API int fedc_executor_dropped(const fedc_executor *ex, int *clients, int max);

/* The clients (cohort places, in order) that the program's first robust_aggregate
 * (fedc/robust.h) kept in the last run, where its aggregator selects (Krum,
 * Multi-Krum, Bulyan): writes up to `max` and returns how many; 0 for the others. */
FEDC_API int fedc_executor_robust_kept(const fedc_executor *ex, int *clients, int max);

/* Marks clients as absent from the next runs (absent[i] != 0; NULL: none), for a
 * cohort smaller than the executor's slots (Poisson sampling): an absent client's
 * map bodies and per-client ops do not run, its @clients values are zeros, and
 * every aggregate leaves it out as it does a dropped client. num_clients still
 * counts every slot. Under MPI every rank must mark the same clients. */
FEDC_API fedc_status fedc_executor_set_absent(fedc_executor *ex, const uint8_t *absent);

/* The groups of the next runs (a round's sampled groups, each with its sampled
 * clients): `groups` from 1 to options.groups, each of group_sizes[g] >= 1
 * clients, summing to at most the clients (the places after the last group must
 * be absent in each run, or the run fails naming the first), or 0 groups: one
 * group of every client. A run's @groups values hold its groups first (the
 * places after them are unspecified). Nothing is allocated: memory stays
 * options.groups x the values. A refused call leaves the groups as they were.
 * Under options.mpi it shares the groups out to the ranks again (see
 * fedc_executor_balance): every rank must pass the same groups, before filling
 * its clients' inputs. */
FEDC_API fedc_status fedc_executor_set_groups(fedc_executor *ex, int groups, const int *group_sizes);

/* With options.profile: writes to `out` the time spent in each kind of op over all
 * runs so far, summed over this executor and the bodies of its maps and folds (every
 * client, every step), most expensive first. FEDC_EINVAL if profiling is off. */
FEDC_API fedc_status fedc_executor_profile(const fedc_executor *ex, FILE *out);

/* How much work each client's map body is (work[i] >= 0 for client i, e.g. its
 * examples or SGD steps), for the next runs; NULL: the same for all. Results do
 * not depend on it. On 2 or more threads, clients start largest first (in chunks
 * of up to 8 consecutive clients a thread whose results fit in 64 MiB), so that a large client
 * does not finish alone at the end of the round; they still commit in client
 * order. Under options.mpi the cohort is cut into min(clients, 64) leaves of
 * consecutive clients; each rank runs whole leaves, chosen so that the ranks'
 * work is about equal (the default: equal numbers of clients, contiguous). With
 * groups (options.groups), each rank runs a contiguous run of whole groups, cut
 * only where a group's edge is a leaf's (every edge up to 64 clients), so that
 * every group's sums are one rank's; fedc_executor_set_groups cuts again. Every
 * rank must pass the same work, before filling its clients' inputs. */
FEDC_API fedc_status fedc_executor_balance(fedc_executor *ex, const double *work);

/* The clients whose map bodies this process runs, in increasing order: writes up
 * to `max` of them and returns how many there are. All of them unless
 * options.mpi splits them over ranks. */
FEDC_API int fedc_executor_local_clients(const fedc_executor *ex, int *clients, int max);

/* The span of clients [*first, *end) from this process's first client to its last
 * (every client of the span is its own when the split is contiguous, the default;
 * after fedc_executor_balance it may also hold other ranks' clients: filling their
 * inputs too does no harm). */
FEDC_API void fedc_executor_block(const fedc_executor *ex, int *first, int *end);

/* ------------------------------------------------------------------ MPI --
 * One federated program on many processes and hosts (docs/mpi.md). Launch the
 * same program on every rank (mpirun -np N prog), call fedc_mpi_init first and
 * fedc_mpi_finalize last, and create executors with options.mpi. Built without
 * MPI, fedc_mpi_init fails with FEDC_EUNSUPPORTED and a message that says how to
 * enable it, and the rest behave as one rank. */
FEDC_API bool fedc_mpi_built(void);            /* whether this fedc was built with MPI */
FEDC_API fedc_status fedc_mpi_init(void);      /* MPI_Init_thread unless already initialised */
FEDC_API fedc_status fedc_mpi_finalize(void);  /* MPI_Finalize, if fedc_mpi_init initialised MPI */
FEDC_API int fedc_mpi_rank(void);              /* 0 outside an MPI job */
FEDC_API int fedc_mpi_size(void);              /* 1 outside an MPI job */
/* Collective: every rank passes its status; every rank returns the status and
 * message of the lowest rank that failed (prefixed "rank R of N: "), or FEDC_OK.
 * Call it after anything that can fail on some ranks only (reading a client's data,
 * allocating), before the next collective call, so that no rank waits forever. */
FEDC_API fedc_status fedc_mpi_agree(fedc_status st);
/* Collective: rank 0's `bytes` at data reach every rank. */
FEDC_API fedc_status fedc_mpi_broadcast(void *data, size_t bytes);

/* Bytes of the planned block for intermediate values, and what it would be with no
 * reuse (the sum of every intermediate's size): how much the plan saves. */
FEDC_API size_t fedc_executor_planned_bytes(const fedc_executor *ex);
FEDC_API size_t fedc_executor_unplanned_bytes(const fedc_executor *ex);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_EXEC_H */
