/* The deployment's server (fedc/deploy.h): a plan's server phases run on a
 * fedc_deployment_run of the cohort's size, and the clients' reports written
 * into its client slots. A round, for each exchange of the form:
 *
 *     server_prepare, broadcast        -> the values a task carries
 *     answer requests until every slot has reported or the deadline passes:
 *         check-in -> plan | task (a selected client's slot) | wait | done
 *         report   -> checked (token, plan, round, slot, names, types, finite)
 *                     and copied into its slot -> ack; else reject, logged
 *     aggregation over the slots that reported, in slot order; server_result
 *
 * then the new server state is checkpointed atomically and a metrics row
 * written. Which clients a round selects, and in which slots, is fedc train's
 * sample (seed, round, population), so a round in which every client reports
 * has the simulation's bits whatever order the reports arrive in. Every wait is
 * bounded: a receive waits 100 ms, a round until its deadline. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "deploy/deploy.h"
#include "deploy/net.h"

enum { RETRY_MS = 200, MAX_ATTEMPTS = 3 };

/* A value each client sends up for an aggregation. */
typedef struct upload {
    const char *name;
    fedc_type local;  /* one client's type */
    size_t bytes;     /* of one client's value */
    char *slots;      /* the run's buffer: clients x bytes */
} upload;

typedef struct server {
    const fedc_server_options *o;
    FILE *log;
    fedc_plan *plan;
    const fedc_deployment_form *form;
    fedc_deployment_run *run;
    fedc__net net;
    char token[160];
    int64_t population;
    uint64_t seed;
    float population_f;
    int k, ntensors;
    void **state;            /* per plan tensor: the server state, bound to the run */
    int64_t *sampled;        /* the round's clients, by slot */
    uint8_t *reported;       /* per slot, this exchange */
    int64_t *closed_sampled; /* the last exchange that closed: its clients and which reported, so that */
    uint8_t *closed_reported; /* an upload repeated after it closed is acknowledged, not counted */
    int closed_round, closed_exchange;
    int nreported, round, exchange;
    bool done;
    fedc_tensor_entry *task; /* the broadcast values a task carries */
    int ntask;
    upload *up;
    int nup;
    upload *own;             /* slots the server allocates: a client input the aggregation reads itself */
    int nown;
    double bytes_in, bytes_out;
    int refused, duplicates; /* requests refused; reports of a slot that had reported (not counted again) */
    FILE *metrics;
} server;

void fedc_server_defaults(fedc_server_options *o) {
    memset(o, 0, sizeof *o);
    o->rounds = 1, o->clients_per_round = 1;
    o->report_deadline = 600;
    o->min_reports = 1;
    o->max_message = (size_t)256 << 20;
    o->threads = 1;
    o->linger = 2;
}

/* ---------------------------------------------------------- replies -- */

static bool reply(server *s, fedc__msg_type type, const fedc_metadata_entry *f, int nf, const fedc_tensor_entry *t, int nt) {
    size_t bytes = 0;
    if (fedc__net_send_msg(&s->net, type, f, nf, t, nt, &bytes))
        fprintf(s->log, "fedc server: could not answer a request: %s\n", fedc_errmsg());
    s->bytes_out += (double)bytes;
    return true;
}

/* Rejects the request, saying why, and logs it: the client's id when known. */
static bool refuse(server *s, const char *client, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(server *s, const char *client, const char *fmt, ...) {
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    for (char *c = why; *c; c++)
        if (*c == '"' || *c == '\\' || *c == '\n') *c = '\''; /* metadata holds no escapes */
    fprintf(s->log, "fedc server: round %d: refused %s%s: %s\n", s->round + 1, client ? "client " : "a request",
            client ? client : "", why);
    s->refused++;
    return reply(s, FEDC__MSG_REJECT, (fedc_metadata_entry[]){{"reason", why}}, 1, NULL, 0);
}

/* Token comparison whose time does not depend on where they differ. */
static bool same_token(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    unsigned diff = na != nb;
    for (size_t i = 0; i < na && i < nb; i++) diff |= (unsigned)(a[i] ^ b[i]);
    return diff == 0;
}

static bool send_plan(server *s) {
    fedc_plan_file f[96];
    int n = fedc_plan_files(s->plan, f, 96);
    fedc_tensor_entry t[96];
    char names[96][72];
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "file/%s", f[i].name);
        t[i] = (fedc_tensor_entry){names[i], fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)f[i].size}), f[i].data};
    }
    return reply(s, FEDC__MSG_PLAN, (fedc_metadata_entry[]){{"hash", fedc_plan_hash(s->plan)}}, 1, t, n);
}

static int slot_of(const server *s, int64_t client) {
    for (int i = 0; i < s->k; i++)
        if (s->sampled[i] == client) return i;
    return -1;
}

static bool checkin(server *s, const fedc__msg *m) {
    const char *who = fedc__msg_field(m, "client"), *hash = fedc__msg_field(m, "plan_hash");
    int64_t client;
    if (!same_token(fedc__msg_field(m, "token"), s->token)) return refuse(s, who, "invalid token");
    if (strcmp(fedc__msg_field(m, "version"), "1"))
        return refuse(s, who, "the client speaks protocol version %.20s; this server speaks 1", fedc__msg_field(m, "version"));
    if (fedc__msg_int(m, "client", 0, s->population - 1, &client)) return refuse(s, who, "%s", fedc_errmsg());
    if (!hash[0]) return send_plan(s);
    if (strcmp(hash, fedc_plan_hash(s->plan)))
        return refuse(s, who, "plan hash %.64s is not this server's plan (%s)", hash, fedc_plan_hash(s->plan));
    char rounds[32], retry[32], round[32], exchange[32], slot[32], reason[96];
    if (s->done) {
        snprintf(rounds, sizeof rounds, "%d", s->o->rounds);
        return reply(s, FEDC__MSG_DONE, (fedc_metadata_entry[]){{"rounds", rounds}}, 1, NULL, 0);
    }
    int i = slot_of(s, client);
    if (i >= 0 && !s->reported[i]) {
        snprintf(round, sizeof round, "%d", s->round);
        snprintf(exchange, sizeof exchange, "%d", s->exchange);
        snprintf(slot, sizeof slot, "%d", i);
        fedc_metadata_entry f[] = {{"round", round}, {"exchange", exchange}, {"slot", slot}, {"hash", fedc_plan_hash(s->plan)}};
        return reply(s, FEDC__MSG_TASK, f, 4, s->task, s->ntask);
    }
    snprintf(retry, sizeof retry, "%d", RETRY_MS);
    snprintf(reason, sizeof reason, i < 0 ? "not selected for round %d" : "reported; round %d goes on", s->round + 1);
    return reply(s, FEDC__MSG_WAIT, (fedc_metadata_entry[]){{"retry_ms", retry}, {"reason", reason}}, 2, NULL, 0);
}

/* Where a report's tensors do not fit what the aggregation takes: NULL if they do. */
static const char *check_uploads(const server *s, const fedc__msg *m, char *why, size_t size) {
    if (fedc_safetensors_count(m->body) != s->nup) {
        snprintf(why, size, "%d tensors; the aggregation takes %d", fedc_safetensors_count(m->body), s->nup);
        return why;
    }
    for (int j = 0; j < s->nup; j++) {
        fedc_tensor_entry e;
        char a[64], b[64];
        if (fedc_safetensors_find(m->body, s->up[j].name, &e)) {
            snprintf(why, size, "no tensor \"%s\"", s->up[j].name);
            return why;
        }
        if (e.type.dtype != s->up[j].local.dtype || !fedc_type_same_shape(&e.type, &s->up[j].local)) {
            snprintf(why, size, "tensor \"%s\" is %s, not %s", e.name, fedc_type_str(&e.type, a, sizeof a),
                     fedc_type_str(&s->up[j].local, b, sizeof b));
            return why;
        }
        int64_t n = fedc_type_count(&e.type);
        for (int64_t i = 0; i < n; i++) { /* read unaligned: the payload's offsets are the sender's */
            double v = 0;
            if (e.type.dtype == FEDC_F32) {
                float f;
                memcpy(&f, (const char *)e.data + 4 * i, 4);
                v = f;
            } else if (e.type.dtype == FEDC_F64) {
                memcpy(&v, (const char *)e.data + 8 * i, 8);
            }
            if (!isfinite(v)) {
                snprintf(why, size, "tensor \"%s\" is not finite (element %lld)", e.name, (long long)i);
                return why;
            }
        }
    }
    return NULL;
}

static bool report(server *s, const fedc__msg *m) {
    const char *who = fedc__msg_field(m, "client");
    int64_t client, round, exchange, slot;
    char why[400];
    if (!same_token(fedc__msg_field(m, "token"), s->token)) return refuse(s, who, "invalid token");
    if (strcmp(fedc__msg_field(m, "hash"), fedc_plan_hash(s->plan))) return refuse(s, who, "a report for another plan");
    if (fedc__msg_int(m, "client", 0, s->population - 1, &client) || fedc__msg_int(m, "round", 0, INT32_MAX, &round) ||
        fedc__msg_int(m, "exchange", 0, 1000, &exchange) || fedc__msg_int(m, "slot", 0, s->k - 1, &slot))
        return refuse(s, who, "%s", fedc_errmsg());
    bool open = !s->done && round == s->round && exchange == s->exchange;
    if (!open && round == s->closed_round && exchange == s->closed_exchange && s->closed_sampled[slot] == client &&
        s->closed_reported[slot]) { /* a retried upload of an exchange that has closed */
        s->duplicates++;
        return reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "0"}}, 1, NULL, 0);
    }
    if (s->done) return refuse(s, who, "a report for round %lld, but the job is over", (long long)round + 1);
    if (!open)
        return refuse(s, who, "a report for round %lld exchange %lld, but round %d exchange %d is open", (long long)round + 1,
                      (long long)exchange, s->round + 1, s->exchange);
    if (s->sampled[slot] != client) return refuse(s, who, "slot %lld of round %d is not this client's", (long long)slot, s->round + 1);
    if (check_uploads(s, m, why, sizeof why)) return refuse(s, who, "%s", why);
    bool again = s->reported[slot];
    for (int j = 0; j < s->nup && !again; j++) { /* an upload is keyed by (round, slot): counted once */
        fedc_tensor_entry e;
        fedc_safetensors_find(m->body, s->up[j].name, &e);
        memcpy(s->up[j].slots + (size_t)slot * s->up[j].bytes, e.data, s->up[j].bytes);
    }
    if (!again) s->reported[slot] = 1, s->nreported++;
    else s->duplicates++;
    return reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", again ? "0" : "1"}}, 1, NULL, 0);
}

static void handle(server *s, const void *data, size_t size) {
    fedc__msg m;
    s->bytes_in += (double)size;
    if (fedc__wire_decode(data, size, s->net.max, &m)) {
        refuse(s, NULL, "%s", fedc_errmsg());
        return;
    }
    if (m.type == FEDC__MSG_CHECKIN) checkin(s, &m);
    else if (m.type == FEDC__MSG_REPORT) report(s, &m);
    else refuse(s, NULL, "a %s message is not a client's request", fedc__msg_name(m.type));
    fedc__msg_free(&m);
}

/* Answers requests until `until` (fedc_seconds), or every slot has reported. */
static fedc_status serve(server *s, double until, bool to_the_end) {
    while (fedc_seconds() < until && (to_the_end || s->nreported < s->k)) {
        void *data;
        size_t size;
        bool timed_out;
        fedc_status st = fedc__net_recv(&s->net, &data, &size, &timed_out);
        if (st) return st;
        if (timed_out) continue;
        handle(s, data, size);
        nng_free(data, size);
    }
    return FEDC_OK;
}

/* ---------------------------------------------------------- set-up -- */

/* Slots for a round input the aggregation reads itself (weighted_mean by
 * meta/num_examples): a buffer of the server's, bound to the run, made once. */
static fedc_status own_slots(server *s, const fedc_program *agg, int i, upload *u) {
    for (int j = 0; j < s->nown; j++)
        if (!strcmp(s->own[j].name, u->name)) {
            u->slots = s->own[j].slots;
            return FEDC_OK;
        }
    u->local = fedc_value_type(agg, fedc_program_input(agg, i));
    u->local.placement = FEDC_LOCAL;
    u->bytes = fedc_type_bytes(&u->local);
    upload *o = s->nown < 64 ? &s->own[s->nown] : NULL;
    if (!o) return fedc_error(FEDC_EUNSUPPORTED, "server: more than 64 client inputs read by aggregations");
    *o = *u;
    if (!(o->slots = fedc_calloc((size_t)s->k, u->bytes + 1))) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    s->nown++;
    u->slots = o->slots;
    return fedc_deployment_run_bind(s->run, u->name, u->slots);
}

/* The broadcast values of exchange e (a task's tensors: one client's copy) and
 * the slots each aggregation input is written into. */
static fedc_status exchange_io(server *s, int e) {
    const fedc_program *work = fedc_deployment_form_phase(s->form, e, FEDC_PHASE_CLIENT_WORK);
    const fedc_program *agg = fedc_deployment_form_phase(s->form, e, FEDC_PHASE_AGGREGATION);
    s->ntask = s->nup = 0;
    if (fedc_program_num_inputs(work) > 4096 || fedc_program_num_inputs(agg) > 4096)
        return fedc_error(FEDC_EUNSUPPORTED, "server: exchange %d passes more than 4096 values", e);
    for (int i = 0; i < fedc_program_num_inputs(work); i++) {
        const char *name = fedc_program_input_name(work, i);
        fedc_type t;
        void *buf = strncmp(name, "broadcast/", 10) ? NULL : fedc__deployment_run_buffer(s->run, name, false, &t);
        if (!buf) continue;
        t.placement = FEDC_LOCAL;
        s->task[s->ntask++] = (fedc_tensor_entry){name, t, buf};
    }
    for (int i = 0; i < fedc_program_num_inputs(agg); i++) {
        upload *u = &s->up[s->nup++];
        u->name = fedc_program_input_name(agg, i);
        u->slots = fedc__deployment_run_buffer(s->run, u->name, false, &u->local);
        fedc_status st = u->slots ? FEDC_OK : own_slots(s, agg, i, u);
        if (st) return st;
        u->local.placement = FEDC_LOCAL;
        u->bytes = fedc_type_bytes(&u->local);
    }
    return FEDC_OK;
}

static fedc_status plan_int(const server *s, const char *key, int64_t *out) {
    const char *v = fedc_plan_setting(s->plan, key);
    char *end = NULL;
    long long x = v ? strtoll(v, &end, 10) : -1;
    if (!v || *end || x < 1) return fedc_error(FEDC_EPARSE, "%s: setting %s is missing or not a positive number", s->o->plan, key);
    *out = x;
    return FEDC_OK;
}

/* A token of 32 hex digits, the first line of out_dir/token, as make_token wrote it. */
static bool read_token(server *s, const char *path) {
    FILE *f = fopen(path, "r");
    char line[64] = "";
    bool ok = f && fgets(line, sizeof line, f) && strlen(line) == 33 && line[32] == '\n' &&
              strspn(line, "0123456789abcdef") == 32;
    if (f) fclose(f);
    if (ok) snprintf(s->token, sizeof s->token, "%.32s", line);
    return ok;
}

/* The token: given, the one out_dir/token holds (a restarted server keeps its
 * clients), or 32 random hex digits written there (0600). */
static fedc_status make_token(server *s) {
    if (s->o->token) {
        if (!s->o->token[0] || strlen(s->o->token) >= sizeof s->token || strpbrk(s->o->token, "\"\\\n"))
            return fedc_error(FEDC_EINVAL, "server: the token must be 1 to 159 bytes without quotes, backslashes or newlines");
        snprintf(s->token, sizeof s->token, "%s", s->o->token);
        return FEDC_OK;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/token", s->o->out_dir);
    if (read_token(s, path)) {
        fprintf(s->log, "fedc server: clients' token in %s (kept)\n", path);
        return FEDC_OK;
    }
    unsigned char r[16];
    FILE *f = fopen("/dev/urandom", "rb");
    bool ok = f && fread(r, 1, sizeof r, f) == sizeof r;
    if (f) fclose(f);
    if (!ok) return fedc_error(FEDC_EIO, "server: cannot read /dev/urandom for a token");
    for (int i = 0; i < 16; i++) snprintf(s->token + 2 * i, 3, "%02x", r[i]);
    mode_t old = umask(077);
    f = fopen(path, "w");
    umask(old);
    ok = f && fprintf(f, "%s\n", s->token) > 0;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) return fedc_error(FEDC_EIO, "%s: cannot write the token", path);
    fprintf(s->log, "fedc server: clients' token in %s\n", path);
    return FEDC_OK;
}

/* A checkpoint keeps the model by its parameters' names, as fedc train's does
 * (fedc eval reads either), and the rest of the state as server/<leaf>. */
static const char *saved_name(const char *name) {
    return !strncmp(name, "server/params/", 14) ? name + 14 : name;
}

static fedc_status resume(server *s, int *first) {
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", s->o->out_dir);
    struct stat sb;
    *first = 0;
    if (stat(path, &sb) != 0) return FEDC_OK;
    fedc_safetensors *c = NULL;
    fedc_status st = fedc_safetensors_read(path, &c);
    const char *hash = st ? NULL : fedc_safetensors_metadata(c, "plan_hash");
    const char *next = st ? NULL : fedc_safetensors_metadata(c, "next_round");
    if (!st && (!hash || strcmp(hash, fedc_plan_hash(s->plan)) || !next))
        st = fedc_error(FEDC_EINVAL, "%s is not a checkpoint of this plan (%s): move it away to start afresh", path,
                        fedc_plan_hash(s->plan));
    for (int i = 0; !st && i < s->ntensors; i++) {
        fedc_tensor_entry want = fedc_plan_tensor(s->plan, i), e;
        st = fedc_safetensors_find(c, saved_name(want.name), &e);
        if (!st && fedc_type_bytes(&e.type) != fedc_type_bytes(&want.type))
            st = fedc_error(FEDC_EPARSE, "%s: tensor \"%s\" has the wrong size", path, e.name);
        if (!st) memcpy(s->state[i], e.data, fedc_type_bytes(&want.type));
    }
    if (!st) *first = atoi(next);
    if (!st) fprintf(s->log, "fedc server: resumed from %s at round %d\n", path, *first + 1);
    fedc_safetensors_destroy(c);
    return st;
}

static fedc_status setup(server *s) {
    const fedc_server_options *o = s->o;
    int64_t k = o->clients_per_round;
    fedc_status st = fedc_plan_read(o->plan, &s->plan);
    if (st) return st;
    s->form = fedc_plan_form(s->plan);
    const char *seed = fedc_plan_setting(s->plan, "seed");
    if (!seed) return fedc_error(FEDC_EPARSE, "%s: no seed setting", o->plan);
    s->seed = strtoull(seed, NULL, 10);
    if ((st = plan_int(s, "population", &s->population))) return st;
    if (k < 1 || k > s->population)
        return fedc_error(FEDC_EINVAL, "server: %lld clients per round, but the plan's population is %lld clients",
                          (long long)k, (long long)s->population);
    s->k = (int)k;
    s->population_f = (float)s->population;
    s->ntensors = fedc_plan_num_tensors(s->plan);
    s->state = fedc_calloc((size_t)s->ntensors + 1, sizeof *s->state);
    s->sampled = fedc_calloc((size_t)k, sizeof *s->sampled);
    s->reported = fedc_calloc((size_t)k, 1);
    s->closed_sampled = fedc_calloc((size_t)k, sizeof *s->closed_sampled);
    s->closed_reported = fedc_calloc((size_t)k, 1);
    s->closed_round = -1;
    s->task = fedc_calloc(4096, sizeof *s->task);
    s->up = fedc_calloc(4096, sizeof *s->up);
    s->own = fedc_calloc(64, sizeof *s->own);
    if (!s->state || !s->sampled || !s->reported || !s->closed_sampled || !s->closed_reported || !s->task || !s->up || !s->own)
        return fedc_error(FEDC_ENOMEM, "server: out of memory");
    st = fedc_deployment_run_create(&s->run, s->form, &(fedc_exec_options){.clients = s->k, .threads = o->threads});
    for (int i = 0; !st && i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        size_t n = fedc_type_bytes(&e.type);
        if (!(s->state[i] = fedc_malloc(n ? n : 1))) return fedc_error(FEDC_ENOMEM, "server: out of memory");
        memcpy(s->state[i], e.data, n);
        st = fedc_deployment_run_bind(s->run, e.name, s->state[i]);
    }
    if (!st && fedc_program_find_input(fedc_plan_round(s->plan), "meta/population") != FEDC_NONE)
        st = fedc_deployment_run_bind(s->run, "meta/population", &s->population_f);
    if (!st) st = fedc_make_dirs(o->out_dir);
    if (!st) st = make_token(s);
    return st;
}

static void teardown(server *s) {
    fedc__net_close(&s->net);
    for (int i = 0; s->state && i < s->ntensors; i++) fedc_free(s->state[i]);
    fedc_free(s->state), fedc_free(s->sampled), fedc_free(s->reported), fedc_free(s->task), fedc_free(s->up);
    fedc_free(s->closed_sampled), fedc_free(s->closed_reported);
    for (int i = 0; i < s->nown; i++) fedc_free(s->own[i].slots);
    fedc_free(s->own);
    fedc_deployment_run_destroy(s->run);
    fedc_plan_destroy(s->plan);
    if (s->metrics) fclose(s->metrics);
}

/* ---------------------------------------------------------- a round -- */

typedef struct round_stats {
    int reported, refused, duplicates;
    double bytes_in, bytes_out, t_prepare, t_collect, t_aggregate, t_result, t_checkpoint;
    float train_loss, examples;
} round_stats;

/* One exchange: prepare and broadcast, the clients' reports, aggregation and
 * server_result. *abandoned: too few reports by the deadline. */
static fedc_status run_exchange(server *s, int e, round_stats *rs, bool *abandoned) {
    double t0 = fedc_seconds();
    s->exchange = e;
    memset(s->reported, 0, (size_t)s->k);
    s->nreported = 0;
    fedc_status st = fedc__deployment_run_phase(s->run, e, FEDC_PHASE_SERVER_PREPARE, NULL);
    if (!st) st = fedc__deployment_run_phase(s->run, e, FEDC_PHASE_BROADCAST, NULL);
    if (!st) st = exchange_io(s, e);
    double t1 = fedc_seconds();
    if (!st) st = serve(s, t1 + s->o->report_deadline, false);
    double t2 = fedc_seconds();
    rs->t_prepare += t1 - t0, rs->t_collect += t2 - t1;
    memcpy(s->closed_sampled, s->sampled, (size_t)s->k * sizeof *s->sampled);
    memcpy(s->closed_reported, s->reported, (size_t)s->k);
    s->closed_round = s->round, s->closed_exchange = e;
    rs->reported = s->nreported;
    if (!st && s->nreported < s->o->min_reports) {
        fprintf(s->log, "fedc server: round %d: %d of %d clients reported by the deadline, fewer than %d: the round "
                "is abandoned\n", s->round + 1, s->nreported, s->k, s->o->min_reports);
        *abandoned = true;
        return FEDC_OK;
    }
    if (!st) st = fedc__deployment_run_phase(s->run, e, FEDC_PHASE_AGGREGATION, s->reported);
    double t3 = fedc_seconds();
    if (!st) st = fedc__deployment_run_phase(s->run, e, FEDC_PHASE_SERVER_RESULT, NULL);
    rs->t_aggregate += t3 - t2, rs->t_result += fedc_seconds() - t3;
    return st;
}

/* The round's new state, if finite, becomes the state. */
static fedc_status take_state(server *s, round_stats *rs) {
    for (int i = 0; i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        const void *v = fedc__deployment_run_buffer(s->run, e.name, true, NULL);
        if (!v) return fedc_error(FEDC_EINTERNAL, "server: the round has no output \"%s\"", e.name);
        int64_t n = e.type.dtype == FEDC_F32 ? fedc_type_count(&e.type) : 0;
        for (int64_t j = 0; j < n; j++)
            if (!isfinite(((const float *)v)[j]))
                return fedc_error(FEDC_ENONFINITE, "round %d: the model diverged: \"%s\" is not finite (element %lld); "
                                  "this round is not saved", s->round + 1, e.name, (long long)j);
    }
    for (int i = 0; i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        memcpy(s->state[i], fedc__deployment_run_buffer(s->run, e.name, true, NULL), fedc_type_bytes(&e.type));
    }
    const float *loss = fedc__deployment_run_buffer(s->run, "train_loss", true, NULL);
    const float *examples = fedc__deployment_run_buffer(s->run, "examples", true, NULL);
    rs->train_loss = loss ? *loss : NAN;
    rs->examples = examples ? *examples : NAN;
    return FEDC_OK;
}

static fedc_status checkpoint(server *s, int next_round) {
    fedc_tensor_entry *t = fedc_calloc((size_t)s->ntensors + 1, sizeof *t);
    if (!t) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    for (int i = 0; i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        t[i] = (fedc_tensor_entry){saved_name(e.name), e.type, s->state[i]};
    }
    char next[32], path[4200];
    snprintf(next, sizeof next, "%d", next_round);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", s->o->out_dir);
    fedc_metadata_entry m[] = {{"format", "fedc deployment checkpoint"}, {"next_round", next},
                               {"plan_hash", fedc_plan_hash(s->plan)}};
    fedc_status st = fedc_safetensors_write(path, t, s->ntensors, m, 3);
    fedc_free(t);
    return st;
}

static void log_metrics(server *s, const round_stats *rs) {
    fprintf(s->metrics,
            "{\"round\": %d, \"selected\": %d, \"reported\": %d, \"dropped\": %d, \"refused\": %d, \"duplicates\": %d, "
            "\"bytes_in\": %.0f, "
            "\"bytes_out\": %.0f, \"train_loss\": %.9g, \"examples\": %.0f, \"seconds\": {\"prepare\": %.6f, "
            "\"collect\": %.6f, \"aggregate\": %.6f, \"result\": %.6f, \"checkpoint\": %.6f}}\n",
            s->round + 1, s->k, rs->reported, s->k - rs->reported, rs->refused, rs->duplicates, rs->bytes_in, rs->bytes_out,
            rs->train_loss, rs->examples, rs->t_prepare, rs->t_collect, rs->t_aggregate, rs->t_result, rs->t_checkpoint);
    fflush(s->metrics);
}

static fedc_status run_round(server *s, int r) {
    fedc_status st = FEDC_OK;
    bool abandoned = true;
    for (int attempt = 0; !st && abandoned && attempt < MAX_ATTEMPTS; attempt++) {
        round_stats rs = {0};
        double in = s->bytes_in, out = s->bytes_out;
        int refused = s->refused, duplicates = s->duplicates;
        s->round = r;
        abandoned = false;
        st = fedc_sample_clients(s->population, s->k, s->seed, (uint32_t)r, s->sampled);
        for (int e = 0; !st && !abandoned && e < fedc_deployment_form_exchanges(s->form); e++)
            st = run_exchange(s, e, &rs, &abandoned);
        if (!st && !abandoned) st = take_state(s, &rs);
        double t = fedc_seconds();
        if (!st && !abandoned) st = checkpoint(s, r + 1);
        rs.t_checkpoint = fedc_seconds() - t;
        rs.bytes_in = s->bytes_in - in, rs.bytes_out = s->bytes_out - out, rs.refused = s->refused - refused;
        rs.duplicates = s->duplicates - duplicates;
        if (!st && !abandoned) log_metrics(s, &rs);
    }
    if (!st && abandoned)
        return fedc_error(FEDC_EIO, "round %d: abandoned %d times (fewer than %d reports by the deadline)", r + 1,
                          MAX_ATTEMPTS, s->o->min_reports);
    return st;
}

fedc_status fedc_server_run(const fedc_server_options *o) {
    if (!o->plan || !o->listen || !o->out_dir || o->rounds < 1 || o->min_reports < 1 || !(o->report_deadline > 0))
        return fedc_error(FEDC_EINVAL, "server: needs a plan, an address, an output directory, rounds >= 1, "
                          "min_reports >= 1 and a deadline above 0");
    server s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.log = o->log ? o->log : stderr;
    int first = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", o->out_dir);
    fedc_status st = setup(&s);
    if (!st) st = resume(&s, &first);
    if (!st && !(s.metrics = fopen(path, first ? "a" : "w"))) st = fedc_error(FEDC_EIO, "%s: cannot write", path);
    if (!st) st = fedc__net_listen(&s.net, o->listen, o->max_message, 100,
                                             &(fedc__tls){.cert = o->tls_cert, .key = o->tls_key});
    if (!st) fprintf(s.log, "fedc server: listening on %s, plan %s, rounds %d to %d of %d clients\n", o->listen,
                     fedc_plan_hash(s.plan), first + 1, o->rounds, s.k);
    for (int r = first; !st && r < o->rounds; r++) st = run_round(&s, r);
    if (!st) {
        s.done = true;
        fprintf(s.log, "fedc server: done: %d rounds; %s/checkpoint.safetensors\n", o->rounds, o->out_dir);
        st = serve(&s, fedc_seconds() + o->linger, true); /* clients that ask are told the job is over */
    }
    teardown(&s);
    return st;
}
