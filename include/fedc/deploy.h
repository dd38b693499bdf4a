/*
 * fedc/deploy.h — a deployment: a round program's phases (fedc/form.h) run in
 * one process, plans, and the server, client and fleet over NNG.
 *
 * This is libfedc_deploy (src/deploy; it needs NNG and libsodium), built with
 * FEDC_DEPLOY=ON (the default); link it before libfedc (pkg-config fedc-deploy).
 * The form itself, the cut of a round program into the five phases of each
 * exchange, is libfedc's (fedc/form.h); docs/deployment.md has the commands.
 */
#ifndef FEDC_DEPLOY_H
#define FEDC_DEPLOY_H

#include "fedc/exec.h"
#include "fedc/fl.h"
#include "fedc/form.h"
#include "fedc/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------- running the phases --
 * A deployment in one process, for checking a form against the simulator: the
 * server phases run as programs; the broadcast copies each value to every client;
 * client_work runs once per client, client by client, on an executor of the
 * one-client program; each aggregation adds the clients' values in client order
 * with the simulator's own summation tree (src/exec/aggregate.c); so the outputs
 * are bitwise those of fedc_executor_run on the round. The interface is the
 * executor's: bind the round's inputs (a @clients one holds clients x its type),
 * run, read the round's outputs (a @clients one likewise). options.clients is the
 * cohort (needed); device (or reference_kernels) and threads are passed on; clients are never
 * dropped (a client's failure fails the run, naming it). */
typedef struct fedc_deployment_run fedc_deployment_run;
FEDC_API fedc_status fedc_deployment_run_create(fedc_deployment_run **out, const fedc_deployment_form *f,
                                                const fedc_exec_options *options);
FEDC_API void fedc_deployment_run_destroy(fedc_deployment_run *r); /* safe on NULL */
FEDC_API fedc_status fedc_deployment_run_bind(fedc_deployment_run *r, const char *name, const void *data);
FEDC_API fedc_status fedc_deployment_run_run(fedc_deployment_run *r);
FEDC_API fedc_status fedc_deployment_run_output(const fedc_deployment_run *r, const char *name, const void **data,
                                                fedc_type *type);


/* ------------------------------------------------------------------ plans --
 * A plan is what a server serves and a client verifies before running anything:
 * a directory of
 *   plan.txt           the manifest: "fedc plan 2", the hash of the programs, the
 *                      files, the settings ("setting KEY VALUE") and the server
 *                      state's tensors ("tensor "NAME" TYPE"), docs/deployment.md
 *   round.fedc         the round program, in the text format
 *   E_PHASE.fedc       the phases of its deployment form
 *   warm_start.fedc    the algorithm's warm start (HypCluster's k-means++), when
 *                      it has one, and warm_E_PHASE.fedc, the phases of its form
 *   client_init.fedc   a never-seen client's state, when the round keeps one
 *   model.safetensors  the initial server state, named as the round's inputs
 * The hash is SHA-256 over each program file in the manifest's order, as its
 * name, a NUL, its size in decimal, a NUL and its bytes. A reader checks
 * everything: the manifest line by line (errors name the file, line and field),
 * the hash, that the phase files are the round's form (split again), that the
 * tensors are the round's server inputs with their types, and that the model
 * holds exactly those. It never aborts on bad input. */
typedef struct fedc_plan fedc_plan;
enum { FEDC_PLAN_VERSION = 2 }; /* 2: a plan may hold a warm start */

/* One file of a plan, in memory (what a client is sent). */
typedef struct fedc_plan_file {
    const char *name;
    const void *data;
    size_t size;
} fedc_plan_file;

/* The plan of `fedc train`'s job c (its data, model, algorithm and settings) in
 * `dir`: the round program c's training would run, its initial server state
 * (the model initialised from c->seed) and the settings a client needs to load
 * its batches as fedc train does (task, batch size, steps, epochs, seed, ...).
 * An algorithm's warm start is planned too, on c->clients_per_round clients
 * (fedc train's warm cohort). Refused, naming it, when the round reads an input a
 * deployment cannot give yet (client metadata other than meta/num_examples,
 * meta/seen and meta/domain; and meta/index, a client's place in the cohort,
 * for the warm start). */
FEDC_API fedc_status fedc_plan_build(const fedc_train_config *c, const char *dir);
/* Reads and checks the plan in `dir`, model included. */
FEDC_API fedc_status fedc_plan_read(const char *dir, fedc_plan **out);
/* Reads and checks a plan from its files (plan.txt and the programs; the model
 * is not needed and not read), named in errors by `what`. */
FEDC_API fedc_status fedc_plan_from_files(const fedc_plan_file *files, int n, const char *what, fedc_plan **out);
FEDC_API void fedc_plan_destroy(fedc_plan *p); /* safe on NULL */
/* The hash, 64 hex digits. */
FEDC_API const char *fedc_plan_hash(const fedc_plan *p);
FEDC_API const fedc_program *fedc_plan_round(const fedc_plan *p);
/* A never-seen client's state (client_init.fedc: no inputs, the round's client/<leaf>
 * inputs as outputs); NULL when the round keeps no client state. */
FEDC_API const fedc_program *fedc_plan_client_init(const fedc_plan *p);
FEDC_API const fedc_deployment_form *fedc_plan_form(const fedc_plan *p);
/* The warm start (a first pass over a cohort before round 1 that sets the server
 * state, fl.h), its form and the cohort it runs on; NULL, NULL, 0 when the plan
 * has none. */
FEDC_API const fedc_program *fedc_plan_warm_start(const fedc_plan *p);
FEDC_API const fedc_deployment_form *fedc_plan_warm_form(const fedc_plan *p);
FEDC_API int fedc_plan_warm_clients(const fedc_plan *p);
/* A setting's value, or NULL. */
FEDC_API const char *fedc_plan_setting(const fedc_plan *p, const char *key);
/* The groups the plan pins its clients to (plan build --groups N or
 * dirichlet:N:ALPHA, as fedc train --groups; fedc server --groups hands each
 * group's clients to its aggregator): *group_of[i] is client i's group, for
 * every client of the population (fedc_malloc'd; fedc_free it), and *groups
 * their number; NULL and 0 when the plan pins none. */
FEDC_API fedc_status fedc_plan_groups(const fedc_plan *p, int32_t **group_of, int *groups);
/* The manifest and the program files (not the model), owned by the plan:
 * files[0..n) for n = the return value (at most max are written). */
FEDC_API int fedc_plan_files(const fedc_plan *p, fedc_plan_file *files, int max);
/* The server state's tensors: name and type; data is the initial state when
 * the plan was read with its model, else NULL. */
FEDC_API int fedc_plan_num_tensors(const fedc_plan *p);
FEDC_API fedc_tensor_entry fedc_plan_tensor(const fedc_plan *p, int i);

/* ------------------------------------------------ a plan's client_work --
 * The clients of a plan run by another system's clients (Flower's ClientApp,
 * python/fedc/flower.py), the server phases being that system's. A worker holds
 * the plan's data, opened with its settings (as fedc client opens them), and runs
 * client_work of exchange `exchange` of round `round` (counted from 0) for client
 * `client` (its index in the data, as fedc train numbers them) on that client's
 * batches, loaded as fedc train loads them (x, y, mask, steps, key,
 * meta/num_examples, meta/domain), with meta/seen = seen. Every other input of
 * client_work (its broadcast/ values, the client's state client/<leaf>, values it
 * sent in an earlier exchange of the round, meta/index) is read from `inputs`,
 * safetensors bytes (fedc/safetensors.h), each of its type; *out gets the outputs
 * (the next client state under client/<leaf>, the values sent up) and the
 * client's own inputs that the exchange's aggregation reads (meta/num_examples)
 * as safetensors bytes, fedc_malloc'd, *out_size long: what fedc client reports
 * comes from these. One run at a time on a worker. The plan (one without a warm start)
 * is borrowed and must outlive the worker. */
typedef struct fedc_plan_worker fedc_plan_worker;
FEDC_API fedc_status fedc_plan_worker_create(const fedc_plan *p, const char *data, fedc_plan_worker **out);
FEDC_API void fedc_plan_worker_destroy(fedc_plan_worker *w); /* safe on NULL */
FEDC_API fedc_status fedc_plan_worker_run(fedc_plan_worker *w, int64_t client, int64_t round, int exchange, bool seen,
                                          const void *inputs, size_t size, void **out, size_t *out_size);

/* ------------------------------------------------------ server and clients --
 * A deployment over the network (NNG request/reply on tcp://, ipc://, or
 * tls+tcp:// with TLS through NNG's mbedTLS): the server runs the server phases
 * of a plan, clients run client_work on their own data, and they speak the
 * protocol of docs/deployment-internals.md ("The protocol"):
 * check-in (token, client, protocol version, plan hash) answered by the plan,
 * a task (round, exchange, slot, the broadcast values), a wait (retry after) or
 * done; a report (what client_work sends up) answered by ack or reject. Each
 * round's clients are those fedc train samples (seed, round, population), slot
 * i for the i-th sampled; the server adds their reports in slot order, whatever
 * order they arrive in, so a round without faults has fedc train's bits. */
typedef struct fedc_server_options {
    const char *plan;        /* the plan's directory */
    const char *listen;      /* tcp://127.0.0.1:PORT, ipc:///path, ... */
    const char *out_dir;     /* checkpoint.safetensors (after every round), metrics.jsonl, token */
    const char *token;       /* what clients must present; NULL: one is made and written to out_dir/token */
    const char *tls_cert, *tls_key; /* PEM files: the certificate and key of a tls+tcp:// address */
    int rounds, clients_per_round;
    double report_deadline;  /* seconds a round waits for its reports (default 600); then it commits without
                                the missing clients, if it has min_reports */
    int min_reports;         /* reports a round needs (default 1); fewer: abandoned and run again, 3 times at most */
    size_t max_message;      /* bytes a message may declare (default 256 MiB) */
    int threads;             /* for the server phases (default 1) */
    double linger;           /* seconds the server answers "done" after the last round (default 2) */
    FILE *log;               /* NULL: stderr */
    /* the round protocol (docs/deployment-internals.md, "The protocol"); after the older fields */
    double over_select;      /* select ceil(over_select x clients_per_round) clients and add the first
                                clients_per_round reports in slot order (default 1: no over-selection) */
    double heartbeat;        /* seconds between a working client's heartbeats, and the longest the server
                                holds a request of a client with an open slot (default 0: a quarter of
                                heartbeat_timeout); other check-ins are held as long as the client allows */
    double heartbeat_timeout; /* a selected client not heard from for this long is given up before the
                                 deadline (default 30; a client never heard from waits for the deadline) */
    int reorder_window;      /* reports ahead of the slot order held in memory (more wait in a file in
                                out_dir), tasks on their way and clients told to send their reports, at
                                most (default 16) */
    int max_held;            /* check-ins held waiting for a task (default 4096); more are answered
                                "wait" with a retry window (the heartbeat interval), and the server lingers
                                until they are due back */
    /* secure aggregation (docs/deployment-secagg.md): a plan built with --secure-sum */
    bool secure_agg;         /* the clients' u32 words are summed by SecAgg: the server sees only the sum */
    int secure_threshold;    /* t: shares that rebuild a client's secrets (0: half its neighbours, plus one) */
    int secure_neighbours;   /* SecAgg+: each client's neighbours, even (0: every other client) */
    /* per-client credentials (docs/deployment.md, "Per-client credentials"); after the older fields */
    const char *credentials_key; /* a file holding the key credentials are derived from (fedc_credentials_issue):
                                    each request must carry the credential of the client id it claims, in place
                                    of the token (which is then neither made nor accepted); NULL: the token */
    /* aggregators (docs/deployment-aggregators.md); after the older fields */
    int groups;              /* the round's slots cut into this many groups of contiguous slots (fedc
                                train --groups partitions the clients instead), each run by an aggregator (fedc_aggregator_run)
                                that the server hands the group's task and that reports the group's partial
                                aggregates (0, the default: no aggregators, the clients report themselves) */
    /* asynchronous aggregation (docs/deployment-async.md): a plan of fedbuff; after the older fields */
    int async_buffer;        /* K > 0: reports are taken as they come, a server step (a "round") every K; up to
                                `concurrency` clients train at once, each on the model version it was sent
                                (0, the default: synchronous rounds) */
    int concurrency;         /* C: clients training at once (0: clients_per_round) */
} fedc_server_options;
FEDC_API void fedc_server_defaults(fedc_server_options *o);
/* Runs the job to its last round; resumes from out_dir/checkpoint.safetensors if
 * there is one (of the same plan). */
FEDC_API fedc_status fedc_server_run(const fedc_server_options *o);

typedef struct fedc_client_options {
    const char *connect;  /* the server's address */
    const char *data;     /* a dataset (any format fedc reads), opened with the plan's settings */
    const char *token;
    const char *tls_ca;   /* tls+tcp://: the PEM certificate(s) the server's is verified with */
    const char *tls_server_name; /* the name the server's certificate must have (NULL: the address's host) */
    int64_t client;       /* the client's index in data, as fedc train numbers them */
    double timeout;       /* seconds to wait for an answer (default 60); the server may hold a request
                             half of it (a check-in waiting for a task) */
    double max_seconds;   /* the whole job, at most (default 86400) */
    size_t max_message;   /* bytes a message may declare (default 256 MiB) */
    int threads;          /* for client_work (default 1) */
    FILE *log;            /* NULL: stderr */
    int trainers;         /* a fleet's clients that run client_work at once, each on an executor of a
                             pool (0, the default: the cores); the others wait, lowest slot first */
    const char *state_dir; /* a stateful algorithm's client state kept in DIR/client-<id>.safetensors
                              after every change, and read back when the client starts again (NULL:
                              in memory only, so a restarted client starts from client_init) */
    const char *credentials_dir; /* per-client credentials: client ID presents the first line of
                                    DIR/client-ID.credential in place of the token (NULL: the token) */
} fedc_client_options;
FEDC_API void fedc_client_defaults(fedc_client_options *o);
/* Per-client credentials: the key in key_file (made, with mode 0600, if there
 * is no such file) and the credentials of clients 0 to clients - 1 derived from
 * it, written to dir/client-ID.credential (made if missing), mode 0600: the
 * files a server started with credentials_key = key_file accepts. */
enum { FEDC_MAX_CREDENTIALS = 1 << 24 };
FEDC_API fedc_status fedc_credentials_issue(const char *key_file, int64_t clients, const char *dir);
/* Runs one client until the server says the job is done. */
FEDC_API fedc_status fedc_client_run(const fedc_client_options *o);
/* Clients o->client to o->client + n - 1 of o->data, each on a thread of its
 * own with its own connection: for tests and load (fleets of other ranges, in
 * other processes, make up a large population); the wire is the same. */
FEDC_API fedc_status fedc_fleet_run(const fedc_client_options *o, int n);

/* An aggregator (docs/deployment-aggregators.md): a client of a server run
 * with groups (fedc_server_options.groups) and a server to the clients of its
 * group, which connect to it as to a server. For each exchange of a round it
 * takes its group's task from the server, hands its clients their tasks,
 * streams their reports in slot order into the group's part of the
 * aggregation, and forwards that part upward as one report. */
typedef struct fedc_aggregator_options {
    const char *connect;     /* the server's address */
    const char *listen;      /* where its clients connect: tcp://HOST:PORT, ipc:///path, tls+tcp://HOST:PORT */
    const char *token;       /* the server's token, which the group's clients present to it too */
    int group;               /* which of the server's groups it runs: 0 to groups - 1 */
    const char *out_dir;     /* the spill file of reports that come early (default: the working directory) */
    const char *tls_ca, *tls_server_name; /* a tls+tcp:// server: as fedc_client_options' */
    const char *tls_cert, *tls_key;       /* a tls+tcp:// listen address: as fedc_server_options' */
    double timeout;          /* seconds to wait for the server's answer (default 60) */
    double max_seconds;      /* the whole job, at most (default 86400) */
    double report_deadline;  /* seconds an exchange waits for its clients' reports (default 600) */
    double heartbeat, heartbeat_timeout; /* its clients', as fedc_server_options' (defaults 0: a quarter of
                                            the timeout, and 30) */
    int reorder_window, max_held; /* as fedc_server_options' (defaults 16 and 4096) */
    size_t max_message;      /* bytes a message may declare, either way (default 256 MiB) */
    int threads;             /* for its aggregation (default 1) */
    double linger;           /* seconds it tells its clients the job is done, after it is (default 2) */
    FILE *log;               /* NULL: stderr */
} fedc_aggregator_options;
FEDC_API void fedc_aggregator_defaults(fedc_aggregator_options *o);
/* Runs the group until the server says the job is done. */
FEDC_API fedc_status fedc_aggregator_run(const fedc_aggregator_options *o);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_DEPLOY_H */
