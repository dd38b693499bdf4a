/* client.h — a deployment client's state, shared by its files (internal):
 * client.c checks in until the job is done, client_task.c does a task,
 * client_report.c sends its report, client_answer.c reads the server's
 * answers, client_held.c keeps the values a client holds during a round,
 * client_keep.c its state across rounds and on disk,
 * client_beat.c sends the heartbeats, client_secure.c drives a secure round's
 * steps, and fleet.c runs many clients in one process. docs/deployment.md,
 * "The protocol". */
#ifndef FEDC_DEPLOY_CLIENT_H
#define FEDC_DEPLOY_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "deploy/deploy.h"
#include "deploy/fleet.h"
#include "deploy/net.h"
#include "deploy/secure.h"
#include "deploy/warm.h"
#include "deploy/plan_data.h"

/* A value the client holds by name during a round: a broadcast value or what
 * one of its phases computed (read by a later exchange or sent up). */
typedef struct held {
    char name[600];
    fedc_type type;
    void *data;
    size_t bytes;
    fedc__shared_value *shared; /* a broadcast value: data is the fleet's copy, not the client's */
} held;

/* What a client's heartbeats need, shared with the heartbeat thread: the
 * client's connection is used by one thread at a time (lock). */
typedef struct beat {
    pthread_mutex_t lock;
    atomic_int working;   /* a task's work is under way */
    fedc__net *net;
    const char *token, *id;
    char round[32], exchange[32], slot[32];
    int every_ms;
    double last;
} beat;

typedef struct client {
    const fedc_client_options *o;
    beat *beat;
    FILE *log;
    fedc__net net;
    const fedc_plan *plan;
    fedc__plan_client *pc;
    fedc__trainers *trainers; /* the process's seats for client_work, and their executors */
    fedc__trainers *warm_trainers; /* the same for the warm start's client_work (NULL: the plan has none) */
    fedc__shared *shared;     /* the process's copy of each broadcast value */
    const fedc_deployment_form *form; /* the task's program's: the round's, or the warm start's */
    int exchanges;
    char id[32];
    char token[160];    /* what its requests carry: the shared token, or its own credential (credential.h) */
    char hold_ms[16];   /* how long the server may hold its check-ins and readies: half its timeout */
    held *held;
    int nheld, cap;
    int64_t refused_round; /* a round whose report the server refused: left alone */
    int64_t refused_exchange; /* the exchange of that report: a task of an earlier exchange of that round
                                 is of the round started again (another attempt, or a server restarted
                                 whose warm start or round begins anew), which the client does */
    int64_t pending_round; /* a round whose report was counted: its new client state is kept as
                              next/client/<leaf> until a later round shows it committed */
    int reported;
    double start;       /* when it started: max_seconds count from there */
    fedc__secure_client sec; /* a secure round's state (client_secagg.c) */
} client;

/* Which task a client works on, as the task named it (its message is let go
 * before the work: what it carried is held). */
typedef struct task_id {
    char round[32], exchange[32], slot[32];
} task_id;

/* A task's fields, checked. */
typedef struct task {
    int64_t round, e, slot;
    task_id id; /* the same as the task wrote them, for the messages about it */
} task;

void fedc__client_sleep_ms(int ms);

/* client_answer.c: the server's answer m to the client's request `asked`
 * read, its type and what the client takes from it checked (a check-in's task
 * makes its program the client's form); a refusal of the plan or a check-in
 * is an error, one of a ready or report is not (*a says which type it was). */
typedef enum fedc__client_request { FEDC__ASKED_PLAN, FEDC__ASKED_CHECKIN, FEDC__ASKED_READY, FEDC__ASKED_REPORT } fedc__client_request;
typedef struct fedc__client_answer {
    task task;          /* a task's */
    int64_t ms;         /* a wait's retry_ms (200 after a check-in that was not a wait, 0 after a ready) */
    int64_t rounds;     /* a done's */
    int64_t counted;    /* an ack's */
    fedc_plan *plan;    /* a plan's, checked as any plan is (the caller destroys it) */
} fedc__client_answer;
fedc_status fedc__client_read_answer(client *c, fedc__client_request asked, const fedc__msg *m, fedc__client_answer *a);
/* The broadcast values task m carries for client_work q: each there, of its
 * type and finite, and none else; each given to `take` (NULL: checked only). */
typedef fedc_status (*fedc__client_take)(client *c, const char *name, fedc_type t, const void *data);
fedc_status fedc__client_task_broadcasts(client *c, const fedc__msg *m, const fedc_program *q, fedc__client_take take);

/* client.c: a client of o->connect, connected (its beat, if any, set after);
 * the plan from its server; a client started on the process's commons (its
 * state from client_init or its file); its check-ins until done; freed. */
fedc_status fedc__client_init(client *c, const fedc_client_options *o, int64_t id);
fedc_status fedc__client_fetch_plan(client *c, fedc_plan **out);
/* A plan message's plan (m: a "plan" message), checked as any plan is and its
 * hash against the message's; `who` names the receiver in errors. An
 * aggregator fetches its plan so too (aggregator.c). */
fedc_status fedc__plan_of_message(const fedc__msg *m, const char *who, fedc_plan **out);
fedc_status fedc__client_start(client *c, const fedc_plan *plan, fedc__plan_data *d, int64_t id, const fedc__commons *k);
fedc_status fedc__client_loop(client *c);
void fedc__client_free(client *c);
/* A request and its answer, the connection held meanwhile. */
fedc_status fedc__client_call(client *c, fedc__msg_type type, const fedc_metadata_entry *f, int nf,
                              const fedc_tensor_entry *t, int nt, fedc__msg *reply);

/* client_task.c: task m (a task message, whose fields t are read; freed here,
 * before the work) done. */
fedc_status fedc__client_task(client *c, fedc__msg *m, const task *t);

/* client_report.c: the report of exchange e of task `id` (of `round`) sent
 * once the server says go (*sent; false: the server wants none any more), its
 * answer taken (counted: the state saved; refused: the round left alone). */
fedc_status fedc__client_report(client *c, const task_id *id, int64_t round, int e, bool *sent);

/* client_secure.c: a secure round's steps before the work (*go: work) and its
 * masked words after it (*go: report); nothing, and go, in other rounds. */
fedc_status fedc__client_secure_share(client *c, const fedc__msg *m, int e, bool *go);
fedc_status fedc__client_secure_mask(client *c, int e, bool *go);

/* client_held.c: the value held as `name`, or NULL; a copy of data held as
 * `name` (replacing an older one); a broadcast value held as the process's
 * shared copy; a value let go; after exchange e, every value no later phase
 * of the round reads let go; all of them. */
held *fedc__client_find(client *c, const char *name);
fedc_status fedc__client_hold(client *c, const char *name, fedc_type type, const void *data);
fedc_status fedc__client_hold_shared(client *c, const char *name, fedc_type type, const void *data);
void fedc__client_unhold(client *c, held *h);
void fedc__client_forget(client *c, int e);
void fedc__client_unhold_all(client *c);

/* client_keep.c: the client's state (client/<leaf>) across rounds: a new
 * client's from client_init, over it the state of its file (with a state
 * directory), written after every change; a counted round's new state
 * (next/client/<leaf>) kept or let go once the round is over (task or done m). */
fedc_status fedc__client_init_state(client *c);
fedc_status fedc__client_restore_state(client *c);
fedc_status fedc__client_save_state(client *c);
fedc_status fedc__client_settle_state(client *c, const fedc__msg *m);

/* client_beat.c: one thread sends the heartbeats of a process's n clients
 * (beats[i] client i's); a client's beats begin with task m and end when its
 * work does. */
typedef struct beater {
    beat *beats;
    int n;
    atomic_int stop;
    pthread_mutex_t lock; /* with wake: the thread's nap, cut short by a stop */
    pthread_cond_t wake;
    pthread_t thread;
    bool made, started; /* made: lock and wake are */
} beater;
fedc_status fedc__beater_start(beater *t, int n);
void fedc__beater_stop(beater *t);
void fedc__client_beat_start(client *c, const fedc__msg *m);
void fedc__client_beat_stop(client *c);

#endif
