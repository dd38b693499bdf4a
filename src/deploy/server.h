/* server.h — the deployment server's state, shared by its files (internal):
 * server.c runs the rounds, server_setup.c sets the server up from its plan
 * (and a checkpoint), server_requests.c answers requests, held.c holds the
 * requests it cannot answer yet (check-ins waiting for a task, readies waiting
 * for their turn), server_secagg.c runs secure aggregation's side of a round.
 * docs/deployment-internals.md, "The protocol". */
#ifndef FEDC_DEPLOY_SERVER_H
#define FEDC_DEPLOY_SERVER_H

#include <stdio.h>

#include "deploy/collect.h"
#include "deploy/credential.h"
#include "deploy/deploy.h"
#include "deploy/net.h"
#include "deploy/secure.h"
#include "deploy/warm.h"

/* A value each client sends up for an aggregation. */
typedef struct upload {
    const char *name;
    fedc_type local;  /* one client's type */
    size_t bytes;     /* of one client's value */
} upload;


typedef struct fedc__async fedc__async; /* --async's clients in flight (server_async.c) */

typedef struct server {
    const fedc_server_options *o;
    FILE *log;
    char name[64];           /* its log lines' prefix: "fedc server", or "fedc aggregator G" */
    fedc_plan *plan;
    const fedc_deployment_form *form;
    fedc_deployment_run *run;
    fedc__collect *collect;
    fedc__net net;
    fedc__req from;          /* the request being answered */
    char token[160];         /* the clients' shared token, or, with credentials, none */
    bool credentials;        /* each request must carry the credential of the id it claims (credential.h) */
    unsigned char credential_key[FEDC__CREDENTIAL_KEY_BYTES];
    int64_t population;
    uint64_t seed;
    float population_f;
    int k, commit, ntensors; /* k slots selected, the first `commit` reports added */
    void **state;            /* per plan tensor: the server state, bound to the run */
    int64_t *sampled;        /* the round's clients, by slot */
    int64_t *next;           /* the next round's */
    uint8_t *left_out;       /* per slot: not added in some exchange of this round */
    uint8_t *sent;           /* per slot: 1 its task is sent and its client not heard from since, 2 heard */
    int unconfirmed;         /* tasks sent and not yet known received: at most reorder_window, so that the
                                tasks in NNG's send queues are not the cohort's */
    uint8_t *granted;        /* per slot: 1 told to send its report, which has not come yet */
    int ngranted;            /* those: at most reorder_window, so that NNG's receive buffers are not the
                                cohort's reports either */
    int32_t *slot_of;        /* per client of the population: its slot this round, or -1 */
    uint8_t *next_round;     /* per client: selected for the next round */
    double *heard;           /* per client: when it was last heard from (0: never) */
    int32_t *taken_round;    /* per client: the round and exchange of the last report taken from it, so */
    int32_t *taken_exchange; /* that an upload repeated after its exchange closed is acknowledged, not counted */
    int32_t *added_round;    /* per client: the last committed round that added its report (-1: none), told
                                with its tasks and done, so that a client that keeps state keeps the
                                state of an added report only */
    int round, exchange;
    bool collecting, done;
    double opened;           /* when the exchange began collecting */
    double waited;           /* seconds from the round attempt's opening to its first task (< 0: none yet) */
    fedc_tensor_entry *task; /* the broadcast values a task carries */
    int ntask;
    upload *up;
    int nup;
    struct fedc__held *held; /* held.h */
    int nheld, maxheld;
    int nready;              /* of the held, readies (slot >= 0) */
    double retry_until;      /* when the last client told to come back (--max-held) comes back */
    bool recheck;            /* a task was confirmed (or given up): a held check-in may have one now */
    double bytes_in, bytes_out, requests;
    int refused, duplicates, stragglers, missed; /* requests refused; reports of a slot that had reported (not
                                                    counted again); reports too late to add; clients given up
                                                    for missed heartbeats */
    int unauthenticated;     /* of the refused: a wrong token, or a credential not the claimed id's */
    FILE *metrics;
    fedc__secure *sec;       /* --secure-agg (server_secagg.c), else NULL */
    fedc__warm *warm;        /* while the warm start runs (warm.h): the round's run, collection and slots */
    bool resumed;            /* from a checkpoint: the warm start, if any, is done */
    bool unmasking;          /* the collection is over; the secure round's unmasking goes on */
    struct fedc__groups *groups; /* --groups: the aggregators' groups (groups.h), else NULL */
    const int32_t *group_of; /* an aggregator of groups the plan pins: each client's group, which must be */
    int group;               /* this one's (groups.h); else NULL */
    fedc__async *async;      /* --async (server_async.c): steps of K reports as they come, else NULL */
} server;

/* How long a receive waits for a request: the server's timers run between. */
enum { FEDC__SERVER_RECV_MS = 50 };

/* The beat interval: seconds between a working client's heartbeats, and the
 * longest the server holds a request of a client it must hear from (a
 * selected client's): --heartbeat, or a quarter of the heartbeat timeout, so
 * that a client misses three beats before it is given up; 1 ms to an hour, the
 * range a task's heartbeat_ms may have. */
static inline double fedc__server_beat(const server *s) {
    double beat = s->o->heartbeat > 0 ? s->o->heartbeat : s->o->heartbeat_timeout / 4;
    return beat < 0.001 ? 0.001 : beat > 3600 ? 3600 : beat;
}
static inline int fedc__server_beat_ms(const server *s) { return (int)(fedc__server_beat(s) * 1000); }

/* Answers (server_requests.c): a message to request `to`; "wait" (come back after ms);
 * a task of slot; "done". Each returns true (a request is answered). */
bool fedc__server_reply_to(server *s, const fedc__req *to, fedc__msg_type type, const fedc_metadata_entry *f, int nf,
                           const fedc_tensor_entry *t, int nt);
bool fedc__server_wait(server *s, const fedc__req *to, int ms, const char *why);
bool fedc__server_task(server *s, const fedc__req *to, int slot);
bool fedc__server_send_task(server *s, const fedc__req *to, int64_t round, int slot, int64_t client);
bool fedc__server_done(server *s, const fedc__req *to, int64_t client);
bool fedc__server_send_plan(server *s, const fedc__req *to);
/* The slot client has an open task in that may be sent now, or -1. */
int fedc__server_open_slot(const server *s, int64_t client);

/* A request's checks (server_requests.c), shared with the asynchronous server:
 * its token and client id (false: refused); a refusal, logged (true: answered);
 * its hold_ms (false: refused); a report's tensors against the aggregation's
 * (NULL: they fit, else why not). */
bool fedc__server_known_client(server *s, const fedc__msg *m, int64_t *client);
bool fedc__server_refuse(server *s, const char *client, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool fedc__server_hold_allowed(server *s, const fedc__msg *m, double *hold);
const char *fedc__server_check_uploads(const server *s, const fedc__msg *m, char *why, size_t size);

/* server.c: the round's new state taken, if finite (its loss and examples);
 * the state checkpointed with `next_round`. */
fedc_status fedc__server_take_state(server *s, float *loss, float *examples);
fedc_status fedc__server_checkpoint(server *s, int next_round);

/* The asynchronous server (server_async.c): set up after the server (the plan
 * checked for it), freed, and its steps run from `first` (resumed); what the
 * request handlers and timers do instead of a round's (a check-in's free place,
 * reserved for its client, and its task; a ready; a report; the silent and
 * late given up). */
fedc_status fedc__async_create(server *s);
void fedc__async_destroy(fedc__async *a);
fedc_status fedc__async_run(server *s, int first);
int fedc__async_open_slot(const server *s, int64_t client);
bool fedc__async_task(server *s, const fedc__req *to, int place);
bool fedc__async_ready(server *s, const fedc__msg *m);
bool fedc__async_report(server *s, const fedc__msg *m);
fedc_status fedc__async_give_up_silent(server *s);

/* Answers requests until `until` (fedc_seconds), or, while collecting, until
 * every slot is settled, or, while unmasking, until the secure round is
 * (fedc__server_settled) (server_requests.c). */
fedc_status fedc__server_serve(server *s, double until);
bool fedc__server_settled(const server *s);

/* A secure round's last step, after the collection (server.c): the survivors
 * reveal their shares, each within the heartbeat timeout, while `serve`
 * answers requests until a time (the server's own serving, or an aggregator's,
 * which also beats upstream), and the sum is unmasked; fedc__secure_failed
 * says whether it was. */
typedef fedc_status (*fedc__server_serve_fn)(server *s, double until, void *ctx);
fedc_status fedc__server_unmask(server *s, fedc__server_serve_fn serve, void *ctx);

/* server_setup.c: the server of s->o set up (its plan read, its state bound,
 * its token, its collection); everything it holds freed; a checkpoint of the
 * plan in out_dir read back (*first: the round to run next, 0 without one);
 * exchange e's task values and the values its reports hold; the name a
 * checkpoint keeps a plan tensor by (the model's parameters by their own
 * names, as fedc train's checkpoints, the rest as server/<leaf>). */
fedc_status fedc__server_setup(server *s);
void fedc__server_teardown(server *s);
fedc_status fedc__server_resume(server *s, int *first);
fedc_status fedc__server_exchange_io(server *s, int e);
const char *fedc__server_saved_name(const char *name);

#endif
