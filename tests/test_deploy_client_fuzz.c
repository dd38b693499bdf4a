/* A hostile server against a real client (docs/deployment-internals.md, "How it
 * is tested"): the protocol_fuzz test's mirror. A REP socket on a loopback TCP
 * port, in a process of its own (hostile_process), speaks the protocol to fedc_client_run, one short client run (a
 * session) after another, and answers each session's requests honestly but
 * for one answer, which it damages: a plan, a task (its round, exchange,
 * slot, hash, heartbeat or program wrong; a broadcast value missing, extra,
 * of another dtype or shape, NaN or infinite; a tensor declaring a huge
 * shape), a wait (retry_ms absurd), a go, an ack, a done (fields odd or
 * missing), a secure round's replies (keys and forward messages damaged), or
 * any of them truncated, junk, with a damaged header or length, of a type
 * that does not answer that request, above the client's max_message, or
 * never sent (the client must time out).
 *
 * The client must end every session within its bound (timeout, max_seconds),
 * refuse each answer it cannot take with an error naming what is wrong, and
 * never send a ready or a report about a task it refused: a report it sends
 * carries the task's own round, exchange and slot, the plan's hash and the
 * aggregation's tensors, finite. A fixed list of damages, then seeded random
 * ones (field values from the protocol_fuzz test's mutants). Built with ASan +
 * UBSan (a FEDC_SANITIZE build) it is the memory check of the client's
 * answer handling. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS: the hostile server's state shared with its process */
#include <arpa/inet.h>
#include <math.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deploy/secagg.h"
#include "deploy/secure.h"
#include "deploy/wire.h"
#include "deploy_threads.h"

enum { MAX_MESSAGE = 1 << 20, RANDOM_SESSIONS = 48 };
static const double TIMEOUT = 0.3, MAX_SECONDS = 3, WAIT_MAX_SECONDS = 1;

/* Which answer of a session is damaged. */
typedef enum target { AT_PLAN, AT_TASK, AT_WAIT, AT_GO, AT_ACK, AT_DONE, AT_SECAGG0, AT_SECAGG1, AT_SECAGG2, TARGETS } target;
static const char *const target_names[] = {"plan", "task", "wait", "go", "ack", "done", "secagg ack", "secagg keys", "secagg forward"};

/* How: the frame (any answer), a field, a tensor, a secure round's message. */
typedef enum damage {
    D_NONE, D_TRUNCATE, D_JUNK, D_MAGIC, D_VERSION, D_LENGTH_HUGE, D_LENGTH_OFF, D_WRONG_TYPE, D_REJECT, D_SILENT, D_OVERSIZED,
    D_FIELD,   /* field `field` set to `value` (NULL: left out) */
    D_WAIT,    /* a wait instead, its retry_ms `value` */
    D_T_DROP, D_T_EXTRA, D_T_DTYPE, D_T_SHAPE, D_T_RANK, D_T_NAN, D_T_INF, D_T_RENAME, D_T_BYTES, D_T_HUGE,
    D_SA_JUNK, D_SA_CUT, D_SA_PARAMS, D_SA_NOT_OWN, D_SA_OTHER_ID, D_SA_NO_TENSOR, D_SA_DTYPE,
} damage;
static const char *const damage_names[] = {"none", "truncated", "junk", "magic", "version", "huge length", "length off",
    "wrong type", "reject", "silent", "oversized", "field", "wait", "tensor dropped", "tensor extra", "dtype", "shape", "rank",
    "NaN", "infinity", "tensor renamed", "bytes changed", "huge shape", "secagg junk", "secagg cut", "secagg params",
    "secagg without its keys", "secagg for another client", "secagg no tensor", "secagg dtype"};

typedef struct scenario {
    target at;
    damage d;
    bool secure;
    const char *field, *value;
    double max_seconds; /* the client's (0: MAX_SECONDS; WAIT_MAX_SECONDS for a wait's) */
    bool fail;         /* the client must end with an error ... */
    const char *error; /* ... holding this (NULL: any) */
    char value_buf[160];
} scenario;

/* An answer before it is encoded. */
typedef struct answer {
    fedc__msg_type type;
    fedc_metadata_entry f[20];
    int nf;
    fedc_tensor_entry t[40];
    int nt;
} answer;

typedef struct hostile {
    nng_socket s;
    fedc_plan *plan[2]; /* plain, secure */
    fedc_plan_file files[2][FEDC__PLAN_MAX_FILES];
    char file_names[2][FEDC__PLAN_MAX_FILES][72];
    int nfiles[2];
    char secagg_field[64];
    pthread_mutex_t lock; /* the session and the findings below */
    scenario sc;
    char token[32];       /* the session's: requests of an earlier session are not answered */
    bool task_sent, waited, bad_task, secure_refused;
    char task_round[200], task_exchange[200], task_slot[200];
    fedc__sa_key advertised; /* the client's keys, from its step 0 */
    int reports, readies;
    char problem[600];
    uint64_t rng; /* the server's own: the same answers every run */
    char url[64];         /* where it listens */
    atomic_int up;        /* 1: listening, -1: could not */
    atomic_int stop;
} hostile;

/* Values for tensors of up to MAX_MESSAGE bytes: zeros, NaNs, infinities, other finite bytes (0x3f: 0.74...). */

static float zeros[MAX_MESSAGE / 4], nans[MAX_MESSAGE / 4], infs[MAX_MESSAGE / 4], others[MAX_MESSAGE / 4];
static unsigned char pad_bytes[MAX_MESSAGE];

static unsigned rnd(hostile *h, unsigned n) {
    h->rng ^= h->rng << 13, h->rng ^= h->rng >> 7, h->rng ^= h->rng << 17;
    return (unsigned)(h->rng % n);
}

static void problem(hostile *h, const char *fmt, const char *what) {
    if (!h->problem[0])
        snprintf(h->problem, sizeof h->problem, "%s %s session: %s (%s)", target_names[h->sc.at], damage_names[h->sc.d],
                 fmt, what ? what : "");
}

static void set_field(answer *a, const char *key, const char *value) {
    for (int i = 0; i < a->nf; i++)
        if (!strcmp(a->f[i].key, key)) {
            if (value) a->f[i].value = value;
            else a->f[i] = a->f[--a->nf];
            return;
        }
    if (value) a->f[a->nf++] = (fedc_metadata_entry){key, value};
}

/* Every field any message has, plausible: decodes as a message of any type. */
static void all_fields(answer *a, const char *hash) {
    static const char *const kv[][2] = {{"token", "t"}, {"client", "0"}, {"version", "5"}, {"plan_hash", ""},
        {"round", "0"}, {"exchange", "0"}, {"slot", "0"}, {"heartbeat_ms", "1000"}, {"retry_ms", "10"},
        {"reason", "another message"}, {"rounds", "1"}, {"counted", "1"}, {"session", "1"}, {"step", "1"},
        {"added", "0"}, {"program", "round"}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++) set_field(a, kv[i][0], kv[i][1]);
    set_field(a, "hash", hash);
}

/* The honest answer to request m (of the session's plan p). */
static void honest(hostile *h, const fedc__msg *m, int p, answer *a) {
    const fedc_plan *plan = h->plan[p];
    *a = (answer){0};
    switch (m->type) {
    case FEDC__MSG_CHECKIN:
        if (!fedc__msg_field(m, "plan_hash")[0]) {
            a->type = FEDC__MSG_PLAN;
            set_field(a, "hash", fedc_plan_hash(plan));
            for (int i = 0; i < h->nfiles[p]; i++)
                a->t[a->nt++] = (fedc_tensor_entry){h->file_names[p][i],
                    fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)h->files[p][i].size}), h->files[p][i].data};
        } else if (h->sc.at == AT_WAIT && !h->waited) {
            a->type = FEDC__MSG_WAIT;
            set_field(a, "retry_ms", "20"), set_field(a, "reason", "not yet");
        } else if (!h->task_sent) {
            a->type = FEDC__MSG_TASK;
            static const char *const kv[][2] = {{"round", "0"}, {"exchange", "0"}, {"slot", "0"}, {"heartbeat_ms", "1000"},
                                                {"added", "-1"}, {"program", "round"}};
            for (size_t i = 0; i < sizeof kv / sizeof *kv; i++) set_field(a, kv[i][0], kv[i][1]);
            set_field(a, "hash", fedc_plan_hash(plan));
            if (p) set_field(a, "secagg", h->secagg_field);
            const fedc_program *q = fedc_deployment_form_phase(fedc_plan_form(plan), 0, FEDC_PHASE_CLIENT_WORK);
            for (int i = 0; i < fedc_program_num_inputs(q); i++)
                if (!strncmp(fedc_program_input_name(q, i), "broadcast/", 10))
                    a->t[a->nt++] = (fedc_tensor_entry){fedc_program_input_name(q, i),
                                                        fedc_value_type(q, fedc_program_input(q, i)), zeros};
        } else {
            a->type = FEDC__MSG_DONE;
            set_field(a, "rounds", "1"), set_field(a, "added", "0");
        }
        break;
    case FEDC__MSG_READY: a->type = FEDC__MSG_GO; break;
    case FEDC__MSG_REPORT: a->type = FEDC__MSG_ACK, set_field(a, "counted", "1"); break;
    case FEDC__MSG_SECAGG: /* the client's message acknowledged, or the server's of the step asked for (answer_frame) */
        if (fedc_safetensors_count(m->body)) a->type = FEDC__MSG_ACK, set_field(a, "counted", "1");
        else a->type = FEDC__MSG_SECAGG_REPLY, set_field(a, "step", fedc__msg_field(m, "step"));
        break;
    default: a->type = FEDC__MSG_REJECT, set_field(a, "reason", "not expected"); break;
    }
}

/* Which answer of the session this is (the target it stands for). */
static target answer_target(const hostile *h, const fedc__msg *m, int step, bool has_tensor) {
    switch (m->type) {
    case FEDC__MSG_CHECKIN:
        if (!fedc__msg_field(m, "plan_hash")[0]) return AT_PLAN;
        return h->sc.at == AT_WAIT && !h->waited ? AT_WAIT : !h->task_sent ? AT_TASK : AT_DONE;
    case FEDC__MSG_READY: return AT_GO;
    case FEDC__MSG_REPORT: return AT_ACK;
    case FEDC__MSG_SECAGG: return has_tensor ? AT_SECAGG0 : step == 1 ? AT_SECAGG1 : AT_SECAGG2;
    default: return TARGETS;
    }
}

/* A secure round's message from the server: keys (step 1: the client's own, as
 * it advertised them, and a second client's) or forward (step 2: no shares,
 * which the client must refuse: fewer than the threshold). Damaged as d says. */
static void *secagg_reply(hostile *h, int step, damage d, size_t *size) {
    fedc__sa_key keys[2] = {h->advertised, {.id = 2}};
    memset(keys[1].enc_pk, 9, FEDC__SA_KEY), memset(keys[1].mask_pk, 11, FEDC__SA_KEY);
    if (d == D_SA_NOT_OWN) keys[0].enc_pk[0] ^= 1;
    fedc__sa_msg m = {.type = step == 1 ? FEDC__SA_KEYS : FEDC__SA_FORWARD, .id = d == D_SA_OTHER_ID ? 2 : 1,
                      .params = {1, 0, 0, 5}, .count = step == 1 ? 2 : 0, .keys = step == 1 ? keys : NULL};
    sscanf(h->secagg_field, "%*u %*u %*u %*u %u", &m.params.length);
    if (d == D_SA_PARAMS) m.params.length++;
    void *out = NULL;
    if (fedc__sa_encode(&m, &out, size)) return NULL;
    if (d == D_SA_CUT) (*size)--;
    if (d == D_SA_JUNK)
        for (size_t i = 0; i < *size; i++) ((unsigned char *)out)[i] = (unsigned char)rnd(h, 256);
    return out;
}

/* The tensor damages, on a task's first broadcast value or a plan's last file (its first, plan.txt, parses the
 * same without its last newline); each reads at most the bytes it had. */
static void damage_tensor(answer *a, damage d) {
    if (!a->nt) return;
    int at = a->type == FEDC__MSG_PLAN ? a->nt - 1 : 0;
    fedc_tensor_entry *t = &a->t[at];
    fedc_type *ty = &t->type;
    switch (d) {
    case D_T_DROP: a->t[at] = a->t[--a->nt]; break;
    case D_T_EXTRA: a->t[a->nt++] = (fedc_tensor_entry){"broadcast/extra", fedc_type_make(FEDC_U8, 1, (int64_t[]){4}), zeros}; break;
    case D_T_DTYPE:
        if (ty->dtype == FEDC_U8) ty->dtype = FEDC_F32, ty->dims[0] = ty->dims[0] / 4 + 1, t->data = zeros;
        else ty->dtype = ty->dtype == FEDC_F32 ? FEDC_I32 : FEDC_F32;
        break;
    case D_T_SHAPE: if (ty->rank) ty->dims[0]--; else *ty = fedc_type_make(ty->dtype, 1, (int64_t[]){1}); break;
    case D_T_RANK: *ty = fedc_type_make(ty->dtype, 0, NULL); break;
    case D_T_NAN: t->data = nans; break;
    case D_T_INF: t->data = infs; break;
    case D_T_RENAME: t->name = a->type == FEDC__MSG_PLAN ? "plan.txt" : "broadcast/renamed"; break;
    case D_T_BYTES: t->data = others; break;
    default: break;
    }
}

/* The frame of answer a, damaged as the session says (NULL: none is sent). */
static void *answer_frame(hostile *h, const answer *a0, target at, size_t *size) {
    answer a = *a0;
    scenario *sc = &h->sc;
    damage d = sc->at == at ? sc->d : D_NONE;
    const char *hash = fedc_plan_hash(h->plan[sc->secure]);
    if (d == D_SILENT) return NULL;
    if (d == D_FIELD) set_field(&a, sc->field, sc->value);
    if (d == D_WAIT) a = (answer){.type = FEDC__MSG_WAIT, .f = {{"retry_ms", sc->value}, {"reason", "wait"}}, .nf = 2};
    if (d >= D_T_DROP && d <= D_T_BYTES) damage_tensor(&a, d);
    if (d == D_REJECT) a = (answer){.type = FEDC__MSG_REJECT, .f = {{"reason", "\x01odd\treason \xff"}}, .nf = 1};
    if (d == D_OVERSIZED) a.t[a.nt++] = (fedc_tensor_entry){"pad", fedc_type_make(FEDC_U8, 1, (int64_t[]){MAX_MESSAGE}), pad_bytes};
    if (d == D_WRONG_TYPE) { /* a message that never answers this request */
        static const bool ok[][FEDC__MSG_TYPES] = {
            [AT_PLAN] = {[FEDC__MSG_PLAN] = 1, [FEDC__MSG_REJECT] = 1},
            [AT_TASK] = {[FEDC__MSG_TASK] = 1, [FEDC__MSG_WAIT] = 1, [FEDC__MSG_DONE] = 1, [FEDC__MSG_REJECT] = 1},
            [AT_WAIT] = {[FEDC__MSG_TASK] = 1, [FEDC__MSG_WAIT] = 1, [FEDC__MSG_DONE] = 1, [FEDC__MSG_REJECT] = 1},
            [AT_DONE] = {[FEDC__MSG_TASK] = 1, [FEDC__MSG_WAIT] = 1, [FEDC__MSG_DONE] = 1, [FEDC__MSG_REJECT] = 1},
            [AT_GO] = {[FEDC__MSG_GO] = 1, [FEDC__MSG_WAIT] = 1, [FEDC__MSG_REJECT] = 1},
            [AT_ACK] = {[FEDC__MSG_ACK] = 1, [FEDC__MSG_REJECT] = 1},
            [AT_SECAGG0] = {[FEDC__MSG_ACK] = 1, [FEDC__MSG_REJECT] = 1},
            [AT_SECAGG1] = {[FEDC__MSG_SECAGG_REPLY] = 1, [FEDC__MSG_WAIT] = 1, [FEDC__MSG_REJECT] = 1},
            [AT_SECAGG2] = {[FEDC__MSG_SECAGG_REPLY] = 1, [FEDC__MSG_WAIT] = 1, [FEDC__MSG_REJECT] = 1}};
        int type;
        do type = 1 + (int)rnd(h, FEDC__MSG_TYPES - 1);
        while (ok[at][type]);
        a = (answer){.type = (fedc__msg_type)type};
        all_fields(&a, hash);
    }
    void *sa = NULL;
    size_t sa_size = 0;
    if ((at == AT_SECAGG1 || at == AT_SECAGG2) && a.type == FEDC__MSG_SECAGG_REPLY) { /* the server's message of the step */
        sa = secagg_reply(h, at == AT_SECAGG1 ? 1 : 2, d, &sa_size);
        if (sa && d != D_SA_NO_TENSOR)
            a.t[a.nt++] = (fedc_tensor_entry){"secagg", fedc_type_make(d == D_SA_DTYPE ? FEDC_F32 : FEDC_U8, 1,
                                                  (int64_t[]){(int64_t)(d == D_SA_DTYPE ? sa_size / 4 : sa_size)}), sa};
    }
    void *frame = NULL;
    fedc_status st = fedc__wire_encode(a.type, a.f, a.nf, a.t, a.nt, &frame, size);
    fedc_free(sa);
    if (st) {
        problem(h, "the test could not encode its answer", fedc_errmsg());
        return NULL;
    }
    unsigned char *b = frame;
    switch (d) {
    case D_TRUNCATE: *size = 1 + rnd(h, (unsigned)*size - 1); break;
    case D_JUNK: for (size_t i = 0; i < *size && i < 64; i++) b[i] = (unsigned char)rnd(h, 256); break;
    case D_MAGIC: b[1] ^= 0x20; break;
    case D_VERSION: b[4] = 9; break;
    case D_LENGTH_HUGE: b[15] = 0x7f; break;
    case D_LENGTH_OFF: b[8] ^= 1; break;
    case D_T_HUGE: { /* the first shape's digits all 9s: its size no longer its data's */
        size_t i = 24;
        while (i + 9 < *size && memcmp(b + i, "\"shape\":[", 9)) i++;
        for (i += 9; i < *size && b[i] >= '0' && b[i] <= '9'; i++) b[i] = '9';
        break;
    }
    default: break;
    }
    return frame;
}

/* A report or ready the client sends: of the task it was given, and a report's tensors what the aggregation reads. */
static void check_upload(hostile *h, const fedc__msg *m) {
    if (h->bad_task || h->secure_refused) problem(h, "a ready or report about a task the client had to refuse", fedc__msg_name(m->type));
    if (!h->task_sent) problem(h, "a ready or report before any task", fedc__msg_name(m->type));
    if (strcmp(fedc__msg_field(m, "round"), h->task_round) || strcmp(fedc__msg_field(m, "exchange"), h->task_exchange) ||
        strcmp(fedc__msg_field(m, "slot"), h->task_slot))
        problem(h, "a ready or report not of the task's round, exchange and slot", fedc__msg_field(m, "round"));
    if (m->type != FEDC__MSG_REPORT) return;
    h->reports++;
    const fedc_plan *plan = h->plan[h->sc.secure];
    if (strcmp(fedc__msg_field(m, "hash"), fedc_plan_hash(plan))) problem(h, "a report of another plan", NULL);
    const fedc_program *agg = fedc_deployment_form_phase(fedc_plan_form(plan), 0, FEDC_PHASE_AGGREGATION);
    if (fedc_safetensors_count(m->body) != fedc_program_num_inputs(agg)) problem(h, "a report of too few or many tensors", NULL);
    for (int i = 0; i < fedc_program_num_inputs(agg); i++) {
        fedc_tensor_entry e;
        fedc_type t = fedc_value_type(agg, fedc_program_input(agg, i));
        if (fedc_safetensors_find(m->body, fedc_program_input_name(agg, i), &e) || e.type.dtype != t.dtype ||
            !fedc_type_same_shape(&e.type, &t)) {
            problem(h, "a report's tensor missing or of another type", fedc_program_input_name(agg, i));
            continue;
        }
        for (int64_t k = 0; e.type.dtype == FEDC_F32 && k < fedc_type_count(&e.type); k++)
            if (!isfinite(((const float *)e.data)[k])) {
                problem(h, "a report's tensor not finite", e.name);
                break;
            }
    }
}

/* A request of the current session: noted, and answered (or not) as the session says. */
static void serve(hostile *h, const fedc__msg *m) {
    pthread_mutex_lock(&h->lock);
    const char *token = fedc__msg_field(m, "token");
    bool has_tensor = fedc_safetensors_count(m->body) > 0;
    int64_t step = -1;
    if (m->type == FEDC__MSG_SECAGG) fedc__msg_int(m, "step", 0, 3, &step);
    if (!token || strcmp(token, h->token) || m->type == FEDC__MSG_HEARTBEAT) { /* a beat's answer is dropped anyway */
        pthread_mutex_unlock(&h->lock);
        return;
    }
    if (m->type == FEDC__MSG_READY || m->type == FEDC__MSG_REPORT) check_upload(h, m);
    h->readies += m->type == FEDC__MSG_READY;
    if (m->type == FEDC__MSG_SECAGG && has_tensor && step == 0) {
        fedc_tensor_entry e;
        fedc__sa_msg adv = {0};
        if (!fedc_safetensors_find(m->body, "secagg", &e) &&
            !fedc__sa_decode_as(e.data, (size_t)fedc_type_bytes(&e.type), FEDC__SA_ADVERTISE, &adv))
            h->advertised = adv.key;
        fedc__sa_msg_free(&adv);
    }
    if (m->type == FEDC__MSG_SECAGG && has_tensor && step == 1 && h->sc.at == AT_SECAGG1 && h->sc.d >= D_SA_JUNK &&
        h->sc.d <= D_SA_NOT_OWN)
        problem(h, "shares sent for a keys message the client had to refuse", NULL);
    target at = answer_target(h, m, (int)step, has_tensor);
    answer a;
    honest(h, m, h->sc.secure, &a);
    size_t size = 0;
    void *frame = answer_frame(h, &a, at, &size);
    /* the session moves on once its task or wait is sent, not while the client asks again for a lost one */
    bool lost = h->sc.at == at && (h->sc.d == D_SILENT || h->sc.d == D_OVERSIZED);
    if (at == AT_WAIT && !lost) h->waited = true;
    if (at == AT_TASK && !lost) {
        h->task_sent = true;
        h->bad_task = h->sc.at == AT_TASK && h->sc.fail;
        const fedc_metadata_entry *f = a.f;
        for (int i = 0; i < a.nf; i++) {
            const char *v = f[i].value;
            if (h->sc.at == AT_TASK && h->sc.d == D_FIELD && !strcmp(f[i].key, h->sc.field)) v = h->sc.value ? h->sc.value : "";
            if (!strcmp(f[i].key, "round")) snprintf(h->task_round, sizeof h->task_round, "%s", v);
            if (!strcmp(f[i].key, "exchange")) snprintf(h->task_exchange, sizeof h->task_exchange, "%s", v);
            if (!strcmp(f[i].key, "slot")) snprintf(h->task_slot, sizeof h->task_slot, "%s", v);
        }
    }
    if (h->sc.at >= AT_SECAGG1 && at == h->sc.at) h->secure_refused = true; /* a damaged keys or forward message */
    pthread_mutex_unlock(&h->lock);
    if (frame) nng_send(h->s, frame, size, 0);
    fedc_free(frame);
}

/* The hostile server's process: its socket on a loopback port (h->url), requests answered until h->stop.
 * A process of its own, not a thread beside the client's: with NNG 1.5.2 a pipe that its peer hangs up on
 * while a message of several socket writes is going out (each oversized answer: the client drops the
 * connection once it has read the frame's length) can keep its send pending for ever (the partial write's
 * continuation is refused on the closed pipe and never completed; fixed in NNG 1.8.0, nanomsg/nng#1813),
 * and the one reaper thread of the process then waits on it, and with it every later nng_close in that
 * process. The server's sends are the test's, not the client's: in this process they would hang the
 * client's close, which the client does not cause. Its exit ends what is left of its socket. */
static int hostile_process(hostile *h) {
    nng_listener l;
    nng_sockaddr sa;
    if (nng_rep0_open(&h->s) || nng_socket_set_ms(h->s, NNG_OPT_RECVTIMEO, 50) ||
        nng_socket_set_size(h->s, NNG_OPT_RECVMAXSZ, 8 << 20) || nng_listen(h->s, "tcp://127.0.0.1:0", &l, 0) ||
        nng_listener_get_addr(l, NNG_OPT_LOCADDR, &sa)) {
        atomic_store(&h->up, -1);
        return 1;
    }
    snprintf(h->url, sizeof h->url, "tcp://127.0.0.1:%d", ntohs(sa.s_in.sa_port));
    atomic_store(&h->up, 1);
    while (!atomic_load(&h->stop)) {
        void *buf = NULL;
        size_t size = 0;
        if (nng_recv(h->s, &buf, &size, NNG_FLAG_ALLOC)) continue; /* a timeout: the stop flag looked at again */
        fedc__msg m;
        if (!fedc__wire_decode(buf, size, (size_t)1 << 26, &m)) serve(h, &m), fedc__msg_free(&m);
        nng_free(buf, size);
    }
    return 0;
}

/* The fixed list: each damage where it applies, with what the client must do. */
static int fixed_scenarios(scenario *out) {
    int n = 0;
#define ADD(...) (out[n++] = (scenario){__VA_ARGS__})
    static const damage frame[] = {D_TRUNCATE, D_JUNK, D_MAGIC, D_VERSION, D_LENGTH_HUGE, D_LENGTH_OFF, D_WRONG_TYPE};
    static const char *const frame_error[] = {"wire: ", "wire: ", "wire: ", "wire: ", "wire: ", "wire: ", "message"};
    for (int at = AT_PLAN; at <= AT_DONE; at++)
        for (size_t i = 0; i < sizeof frame / sizeof *frame; i++) ADD(.at = at, .d = frame[i], .fail = true, .error = frame_error[i]);
    for (int at = AT_PLAN; at <= AT_DONE; at++) ADD(.at = at, .d = D_REJECT, .fail = at == AT_PLAN || at == AT_TASK || at == AT_WAIT);
    ADD(.at = AT_TASK, .d = D_SILENT, .fail = true, .error = "no connection to or answer from the server");
    ADD(.at = AT_ACK, .d = D_SILENT, .fail = true, .error = "no connection to or answer from the server");
    ADD(.at = AT_PLAN, .d = D_OVERSIZED, .fail = true, .error = "no connection to or answer from the server");
    ADD(.at = AT_GO, .d = D_OVERSIZED, .fail = true, .error = "no connection to or answer from the server");
    /* fields: a value the client must refuse (with what its error says), or one it may take */
    static const struct { target at; const char *field, *value, *error; bool fail; } fields[] = {
        {AT_PLAN, "hash", "00", "hashes to", true}, {AT_PLAN, "hash", NULL, "no field \"hash\"", true},
        {AT_TASK, "round", "-2", "\"round\"", true}, {AT_TASK, "round", "2147483648", "\"round\"", true},
        {AT_TASK, "round", "", "\"round\"", true}, {AT_TASK, "round", " 0", "\"round\"", true},
        {AT_TASK, "round", "1.5", "\"round\"", true}, {AT_TASK, "round", "-1", "warm start", true},
        {AT_TASK, "round", "5", NULL, false}, {AT_TASK, "round", NULL, "no field \"round\"", true},
        {AT_TASK, "exchange", "1", "\"exchange\"", true}, {AT_TASK, "exchange", "-1", "\"exchange\"", true},
        {AT_TASK, "slot", "-1", "\"slot\"", true}, {AT_TASK, "slot", "9999999999", "\"slot\"", true},
        {AT_TASK, "slot", "3", NULL, false},
        {AT_TASK, "hash", "deadbeef", "another plan", true}, {AT_TASK, "hash", NULL, "no field \"hash\"", true},
        {AT_TASK, "heartbeat_ms", "0", "\"heartbeat_ms\"", true}, {AT_TASK, "heartbeat_ms", "x", "\"heartbeat_ms\"", true},
        {AT_TASK, "heartbeat_ms", "3600001", "\"heartbeat_ms\"", true},
        {AT_TASK, "program", NULL, "program", true}, {AT_TASK, "program", "warm_start", "program", true},
        {AT_TASK, "program", "x", "program", true}, {AT_TASK, "added", "x", NULL, false},
        {AT_WAIT, "retry_ms", "-1", "\"retry_ms\"", true}, {AT_WAIT, "retry_ms", "x", "\"retry_ms\"", true},
        {AT_WAIT, "retry_ms", "1099511627776", "\"retry_ms\"", true}, {AT_WAIT, "retry_ms", NULL, "no field", true},
        {AT_WAIT, "retry_ms", "1000000000", "did not end within", true}, {AT_WAIT, "reason", NULL, "no field", true},
        {AT_GO, "counted", "x", NULL, false}, {AT_GO, "round", "99", NULL, false},
        {AT_ACK, "counted", "7", "\"counted\"", true}, {AT_ACK, "counted", "x", "\"counted\"", true},
        {AT_ACK, "counted", "", "\"counted\"", true}, {AT_ACK, "counted", NULL, "no field", true},
        {AT_ACK, "counted", "0", NULL, false},
        {AT_DONE, "rounds", "x", "\"rounds\"", true}, {AT_DONE, "rounds", "-1", "\"rounds\"", true},
        {AT_DONE, "rounds", NULL, "no field", true}, {AT_DONE, "added", "x", "\"added\"", true},
        {AT_DONE, "added", "-2", "\"added\"", true}, {AT_DONE, "added", "7", NULL, false}};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        ADD(.at = fields[i].at, .d = D_FIELD, .field = fields[i].field, .value = fields[i].value, .fail = fields[i].fail,
            .error = fields[i].error);
    /* tensors of the task and the plan */
    for (damage d = D_T_DROP; d <= D_T_HUGE; d++) {
        if (d == D_T_NAN || d == D_T_INF) ADD(.at = AT_TASK, .d = d, .fail = true, .error = "not finite");
        else if (d == D_T_HUGE) ADD(.at = AT_TASK, .d = d, .fail = true, .error = "wire: ");
        else if (d != D_T_BYTES) ADD(.at = AT_TASK, .d = d, .fail = true, .error = "the task");
        else ADD(.at = AT_TASK, .d = d);
        if (d != D_T_NAN && d != D_T_INF) ADD(.at = AT_PLAN, .d = d, .fail = true);
    }
    /* a secure round's: the task's secagg field, the acks, the keys and forward messages */
    ADD(.secure = true, .at = AT_TASK, .d = D_FIELD, .field = "secagg", .value = "1 0 5", .fail = true, .error = "secagg");
    ADD(.secure = true, .at = AT_TASK, .d = D_FIELD, .field = "secagg", .value = "0 0 5 1 8", .fail = true, .error = "secagg");
    ADD(.secure = true, .at = AT_TASK, .d = D_FIELD, .field = "slot", .value = "65535", .fail = true, .error = "\"slot\"");
    ADD(.secure = true, .at = AT_SECAGG2, .d = D_NONE); /* forward without shares: refused, no report */
    for (damage d = D_SA_JUNK; d <= D_SA_NOT_OWN; d++) ADD(.secure = true, .at = AT_SECAGG1, .d = d);
    ADD(.secure = true, .at = AT_SECAGG2, .d = D_SA_OTHER_ID);
    ADD(.secure = true, .at = AT_SECAGG1, .d = D_SA_NO_TENSOR, .fail = true, .error = "secagg");
    ADD(.secure = true, .at = AT_SECAGG2, .d = D_SA_DTYPE, .fail = true, .error = "secagg");
    ADD(.secure = true, .at = AT_SECAGG1, .d = D_REJECT);
    ADD(.secure = true, .at = AT_SECAGG1, .d = D_FIELD, .field = "step", .value = "x");
    for (int at = AT_SECAGG0; at <= AT_SECAGG2; at++) {
        ADD(.secure = true, .at = at, .d = D_WRONG_TYPE, .fail = true, .error = "message");
        ADD(.secure = true, .at = at, .d = D_TRUNCATE, .fail = true, .error = "wire: ");
    }
#undef ADD
    return n;
}

/* A seeded random damage: a field of the target's answer set to one of the protocol_fuzz test's kinds of
 * value, or a frame damaged; the client may take or refuse it, within its bound, never reporting a bad task. */
static void random_scenario(scenario *s) {
    static const char *const keys[][6] = {[AT_PLAN] = {"hash"}, [AT_TASK] = {"round", "exchange", "slot", "hash", "heartbeat_ms", "program"},
        [AT_WAIT] = {"retry_ms", "reason"}, [AT_GO] = {"x"}, [AT_ACK] = {"counted"}, [AT_DONE] = {"rounds", "added"}};
    *s = (scenario){.at = (target)fedc_test_uniform(0, AT_DONE + 1)};
    if (s->at > AT_DONE) s->at = AT_DONE;
    int nk = 0;
    while (nk < 6 && keys[s->at][nk]) nk++;
    int kind = (int)fedc_test_uniform(0, 8);
    if (kind >= 6) { /* a frame damaged (the client must refuse it) */
        static const damage frame[] = {D_TRUNCATE, D_JUNK, D_LENGTH_OFF, D_WRONG_TYPE};
        s->d = frame[(int)fedc_test_uniform(0, 4) % 4], s->fail = true;
        return;
    }
    s->d = D_FIELD, s->field = keys[s->at][(int)fedc_test_uniform(0, nk) % nk];
    char *b = s->value_buf;
    size_t size = 2 + (size_t)fedc_test_uniform(0, 150) % 150;
    switch (kind) {
    case 0: snprintf(b, size, "%d", (int)fedc_test_uniform(0, 12) - 3); break;
    case 1: snprintf(b, size, "%lld", (long long)1 << (30 + (int)fedc_test_uniform(0, 33) % 33)); break;
    case 2: b[0] = '\0'; break;
    case 3: memset(b, '7', size - 1), b[size - 1] = '\0'; break;
    case 4:
        for (size_t i = 0; i + 1 < size; i++) {
            char c = (char)(1 + (int)fedc_test_uniform(0, 126));
            b[i] = c == '"' || c == '\\' ? 'x' : c == '\n' ? ' ' : c; /* metadata holds no escapes */
        }
        b[size - 1] = '\0';
        break;
    default: b = NULL;
    }
    s->value = b;
}

/* One session: the client run against the hostile server answering as sc says. */
static void session(hostile *h, const scenario *sc, int number, FILE *log) {
    if (!h->plan[0]) return;
    fedc_client_options o;
    fedc_client_defaults(&o);
    pthread_mutex_lock(&h->lock);
    h->sc = *sc;
    if (sc->value == sc->value_buf) h->sc.value = h->sc.value_buf;
    snprintf(h->token, sizeof h->token, "session-%d", number);
    h->task_sent = h->waited = h->bad_task = h->secure_refused = false;
    h->task_round[0] = h->task_exchange[0] = h->task_slot[0] = '\0';
    h->reports = 0;
    h->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(number + 1);
    pthread_mutex_unlock(&h->lock);
    o.connect = h->url, o.data = data_path, o.token = h->token, o.client = 0, o.log = log;
    o.timeout = TIMEOUT, o.max_seconds = sc->max_seconds > 0 ? sc->max_seconds : sc->at == AT_WAIT ? WAIT_MAX_SECONDS : MAX_SECONDS, o.max_message = MAX_MESSAGE;
    o.trainers = 1;
    double t0 = fedc_seconds();
    fedc_status st = fedc_client_run(&o);
    double took = fedc_seconds() - t0;
    char err[512];
    snprintf(err, sizeof err, "%s", st ? fedc_errmsg() : "");
    if (getenv("HOSTILE_TRACE")) fprintf(stderr, "%3d %-14s %-16s %-12s %.3f s %s\n", number, target_names[sc->at], damage_names[sc->d], sc->d == D_FIELD ? sc->field : "", took, err);
    pthread_mutex_lock(&h->lock);
    const char *what = h->sc.d == D_FIELD ? h->sc.field : "";
    CHECK_MSG(!h->problem[0], "session %d: %s", number, h->problem);
    CHECK_MSG(took < o.max_seconds + 2 * TIMEOUT + 2, "session %d (%s %s %s): the client took %.1f s, past its bound",
              number, target_names[sc->at], damage_names[sc->d], what, took);
    CHECK_MSG(!sc->fail || st, "session %d (%s %s %s = \"%.40s\"): the client took an answer it must refuse", number,
              target_names[sc->at], damage_names[sc->d], what, sc->value ? sc->value : "(none)");
    CHECK_MSG(!st || (err[0] && (!sc->fail || !sc->error || strstr(err, sc->error))),
              "session %d (%s %s %s): the client's error \"%s\" does not say \"%s\"", number, target_names[sc->at],
              damage_names[sc->d], what, err, sc->error ? sc->error : "");
    CHECK_MSG(!(sc->at == AT_DONE && sc->d == D_NONE) || (!st && h->reports == 1), "the honest session: %s, %d reports", err, h->reports);
    h->problem[0] = '\0';
    pthread_mutex_unlock(&h->lock);
}

static hostile *hs;  /* the hostile server's state, shared with its process */
static pid_t server = -1;
static FILE *clients_log;
static int sessions; /* a session's number: its token */

/* The hostile server started, once: the plans (plain and secure) it serves, its process (hostile_process). */
static bool hostile_up(void) {
    if (clients_log) return true;
    if (!deploy_setup("deploy-client-fuzz")) return false;
    hs = mmap(NULL, sizeof *hs, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (hs == MAP_FAILED) {
        hs = NULL;
        CHECK_MSG(false, "cannot map the hostile server's state");
        return false;
    }
    for (size_t i = 0; i < MAX_MESSAGE / 4; i++) nans[i] = NAN, infs[i] = INFINITY;
    memset(others, 0x3f, sizeof others);
    fedc_train_config c;
    case_config(&c, data_path, path("unused.train"), 1, CASE_CLIENTS);
    CHECK_OK(fedc_plan_build(&c, path("plain")));
    c.algorithm.aggregation.secure_sum_bits = 16, c.algorithm.aggregation.secure_sum_bound = 1;
    CHECK_OK(fedc_plan_build(&c, path("secure")));
    CHECK_OK(fedc_plan_read(path("plain"), &hs->plan[0]));
    CHECK_OK(fedc_plan_read(path("secure"), &hs->plan[1]));
    if (!hs->plan[0] || !hs->plan[1]) return false;
    for (int p = 0; p < 2; p++) {
        hs->nfiles[p] = fedc_plan_files(hs->plan[p], hs->files[p], FEDC__PLAN_MAX_FILES);
        for (int i = 0; i < hs->nfiles[p]; i++)
            snprintf(hs->file_names[p][i], sizeof hs->file_names[p][i], "file/%s", hs->files[p][i].name);
    }
    int idx[FEDC__SECURE_MAX_INPUTS], ninputs;
    uint64_t words = 0;
    CHECK_OK(fedc__secure_inputs(fedc_deployment_form_phase(fedc_plan_form(hs->plan[1]), 0, FEDC_PHASE_AGGREGATION), idx,
                                 &ninputs, &words));
    snprintf(hs->secagg_field, sizeof hs->secagg_field, "1 0 5 1 %llu", (unsigned long long)words);
    pthread_mutexattr_t shared;
    pthread_mutexattr_init(&shared);
    pthread_mutexattr_setpshared(&shared, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&hs->lock, &shared);
    pthread_mutexattr_destroy(&shared);
    fflush(NULL);
    server = fork(); /* before this process opens any NNG socket: the child starts NNG afresh */
    if (server == 0) _exit(hostile_process(hs)); /* _exit: the child leaves the parent's atexit work alone */
    for (int i = 0; server > 0 && i < 1000 && !atomic_load(&hs->up) && waitpid(server, NULL, WNOHANG) == 0; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    if (atomic_load(&hs->up) != 1) {
        CHECK_MSG(false, "the hostile server cannot listen on a loopback port");
        return false;
    }
    clients_log = fopen(path("clients.log"), "w");
    return clients_log != NULL;
}

static void hostile_down(void) {
    if (server > 0) {
        atomic_store(&hs->stop, 1);
        waitpid(server, NULL, 0);
    }
    if (clients_log) fclose(clients_log);
    if (!hs) return;
    pthread_mutex_destroy(&hs->lock);
    fedc_plan_destroy(hs->plan[0]), fedc_plan_destroy(hs->plan[1]);
    munmap(hs, sizeof *hs);
}

/* The fixed list of damages, then seeded random ones, each a session. */
static void test_hostile_server(void) {
    if (!hostile_up()) return;
    static scenario list[256];
    int n = 0;
    list[n++] = (scenario){.at = AT_DONE, .d = D_NONE}; /* honest: the client ends well, with one report */
    n += fixed_scenarios(list + n);
    fedc_test_seed(41);
    for (int i = 0; i < RANDOM_SESSIONS; i++) random_scenario(&list[n++]);
    double t0 = fedc_seconds();
    for (int i = 0; i < n; i++) session(hs, &list[i], sessions++, clients_log);
    fprintf(stderr, "    %d sessions (%d of them seeded random) in %.1f s\n", n, RANDOM_SESSIONS, fedc_seconds() - t0);
}

/* What the fuzzer found, one session each: the client's error must name what is wrong. */
static void refused(target at, damage d, const char *field, const char *value, const char *error) {
    if (!hostile_up()) return;
    scenario s = {.at = at, .d = d, .field = field, .value = value, .fail = true, .error = error};
    session(hs, &s, sessions++, clients_log);
}

/* A task without "program" (a field the decoder does not require) was read as a NULL string: a crash. */
static void test_task_without_program(void) { refused(AT_TASK, D_FIELD, "program", NULL, "for program \"\""); }

/* A task's heartbeat_ms out of range was taken silently (no heartbeats at all) and the work done. */
static void test_task_heartbeat_ms(void) {
    refused(AT_TASK, D_FIELD, "heartbeat_ms", "0", "field \"heartbeat_ms\" is \"0\"");
    refused(AT_TASK, D_FIELD, "heartbeat_ms", "soon", "field \"heartbeat_ms\" is \"soon\"");
}

/* A broadcast value holding a NaN or an infinity was trained on, and its non-finite report sent. */
static void test_task_not_finite(void) {
    refused(AT_TASK, D_T_NAN, NULL, NULL, "is not finite (element 0)");
    refused(AT_TASK, D_T_INF, NULL, NULL, "is not finite (element 0)");
}

/* A wait of 10^9 ms slept 30 s, past a max_seconds of 1. */
static void test_wait_bounded(void) { refused(AT_WAIT, D_FIELD, "retry_ms", "1000000000", "did not end within 1 s"); }

/* A ready answered by waits was asked again at once, whatever their retry_ms: a hostile or overloaded server was
 * hammered until max_seconds; now each wait is waited (within max_seconds), and a bad retry_ms refused. */
static void test_ready_waits(void) {
    refused(AT_GO, D_WAIT, NULL, "x", "field \"retry_ms\" is \"x\"");
    if (!hostile_up()) return;
    scenario s = {.at = AT_GO, .d = D_WAIT, .value = "200", .max_seconds = 1, .fail = true, .error = "did not end within 1 s"};
    pthread_mutex_lock(&hs->lock);
    hs->readies = 0;
    pthread_mutex_unlock(&hs->lock);
    session(hs, &s, sessions++, clients_log);
    CHECK_MSG(hs->readies >= 2 && hs->readies <= 8, "%d readies in 1 s, each answered by a wait of 200 ms", hs->readies);
}

/* An ack whose "counted" is not 0 or 1, and a done whose "rounds" is not a count, were taken. */
static void test_ack_and_done_fields(void) {
    refused(AT_ACK, D_FIELD, "counted", "7", "field \"counted\" is \"7\"");
    refused(AT_DONE, D_FIELD, "rounds", "-1", "field \"rounds\" is \"-1\"");
}

/* A secure step's reply without its bytes was said as "answered by a secagg-reply message". */
static void test_secagg_reply_without_bytes(void) {
    scenario s = {.secure = true, .at = AT_SECAGG1, .d = D_SA_NO_TENSOR, .fail = true,
                  .error = "secagg message of step 1 is not a \"secagg\" tensor of bytes"};
    if (hostile_up()) session(hs, &s, sessions++, clients_log);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {{"hostile_server", test_hostile_server},
                                      {"task_without_program", test_task_without_program},
                                      {"task_heartbeat_ms", test_task_heartbeat_ms},
                                      {"task_not_finite", test_task_not_finite},
                                      {"wait_bounded", test_wait_bounded},
                                      {"ready_waits", test_ready_waits},
                                      {"ack_and_done_fields", test_ack_and_done_fields},
                                      {"secagg_reply_without_bytes", test_secagg_reply_without_bytes}};
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    hostile_down();
    fedc_test_tmpdir_remove();
    return rc;
}
