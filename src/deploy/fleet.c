/* A fleet (fedc/deploy.h): many clients on threads of one process, sharing the
 * plan and the data (opened once), each with its own connection and buffers;
 * one thread of the process sends the heartbeats of all its clients that are
 * working. What they share (fleet.h): seats for client_work with a pool of
 * executors, and one copy of each broadcast value. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deploy/client.h"
#include "deploy/fleet.h"

/* ----------------------------------------------------------- trainers -- */

/* A client's work waiting for a seat, and its result; the client waits on its
 * own condition variable, so that finished work wakes that client only. */
typedef struct waiter {
    int64_t round, exchange, slot;
    fedc__trainer_work fn;
    void *arg;
    bool done;
    fedc_status st;
    char err[1024];
    pthread_cond_t cond;
    struct waiter *next;
} waiter;

typedef struct seat {
    fedc__trainers *t;
    fedc_executor **ex; /* per exchange, made on first use */
    pthread_t thread;
    bool started;
} seat;

struct fedc__trainers {
    pthread_mutex_t lock;
    pthread_cond_t wake;  /* work waits, or stop */
    const fedc_deployment_form *form;
    int exchanges, seats, threads;
    bool stop;
    waiter *waiting;      /* unordered: a seat takes the lowest key */
    seat *seat;
};

static bool before(const waiter *a, const waiter *b) {
    if (a->round != b->round) return a->round < b->round;
    if (a->exchange != b->exchange) return a->exchange < b->exchange;
    return a->slot < b->slot;
}

/* Under the lock: the lowest waiting work, taken off the list, or NULL. */
static waiter *take_lowest(fedc__trainers *t) {
    if (!t->waiting) return NULL;
    waiter **best = &t->waiting;
    for (waiter **w = &t->waiting; *w; w = &(*w)->next)
        if (before(*w, *best)) best = w;
    waiter *w = *best;
    *best = w->next;
    return w;
}

static fedc_status run_on(seat *s, waiter *w) {
    int e = (int)w->exchange;
    if (!s->ex[e]) {
        const fedc_program *q = fedc_deployment_form_phase(s->t->form, e, FEDC_PHASE_CLIENT_WORK);
        fedc_status st = fedc_executor_create(&s->ex[e], q, &(fedc_exec_options){.clients = 1, .threads = s->t->threads});
        if (st) return st;
    }
    return w->fn(w->arg, s->ex[e]);
}

/* A seat: runs the lowest waiting work on its executors, on its own thread
 * (so that the kernels' stack is the seats', not every client thread's). */
static void *seat_main(void *arg) {
    seat *s = arg;
    fedc__trainers *t = s->t;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        waiter *w = take_lowest(t);
        if (!w && t->stop) break;
        if (!w) {
            pthread_cond_wait(&t->wake, &t->lock);
            continue;
        }
        pthread_mutex_unlock(&t->lock);
        fedc_status st = run_on(s, w);
        pthread_mutex_lock(&t->lock);
        w->st = st, w->done = true;
        if (st) snprintf(w->err, sizeof w->err, "%s", fedc_errmsg()); /* the message is this thread's */
        pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

fedc_status fedc__trainers_create(fedc__trainers **out, const fedc_deployment_form *f, int seats, int threads) {
    *out = NULL;
    if (seats < 1) return fedc_error(FEDC_EINVAL, "fleet: %d trainers; it needs 1 or more", seats);
    fedc__trainers *t = fedc_calloc(1, sizeof *t);
    int e = fedc_deployment_form_exchanges(f);
    if (t) t->seat = fedc_calloc((size_t)seats, sizeof *t->seat);
    for (int i = 0; t && t->seat && i < seats; i++)
        if (!(t->seat[i].ex = fedc_calloc((size_t)e, sizeof *t->seat[i].ex))) seats = i;
    if (!t || !t->seat || seats < 1) {
        if (t) fedc_free(t->seat);
        fedc_free(t);
        return fedc_error(FEDC_ENOMEM, "fleet: out of memory");
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, NULL);
    t->form = f, t->exchanges = e, t->seats = seats, t->threads = threads;
    *out = t;
    for (int i = 0; i < seats; i++) {
        t->seat[i].t = t;
        if (pthread_create(&t->seat[i].thread, NULL, seat_main, &t->seat[i]) != 0)
            return fedc_error(FEDC_EIO, "fleet: cannot start trainer %d's thread", i);
        t->seat[i].started = true;
    }
    return FEDC_OK;
}

void fedc__trainers_destroy(fedc__trainers *t) {
    if (!t) return;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    for (int i = 0; i < t->seats; i++) {
        if (t->seat[i].started) pthread_join(t->seat[i].thread, NULL);
        for (int e = 0; e < t->exchanges; e++) fedc_executor_destroy(t->seat[i].ex[e]);
        fedc_free(t->seat[i].ex);
    }
    fedc_free(t->seat);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    fedc_free(t);
}

fedc_status fedc__trainers_run(fedc__trainers *t, int64_t round, int e, int64_t slot, fedc__trainer_work fn, void *arg) {
    if (e < 0 || e >= t->exchanges) return fedc_error(FEDC_EINVAL, "fleet: no exchange %d", e);
    waiter w = {.round = round, .exchange = e, .slot = slot, .fn = fn, .arg = arg};
    pthread_cond_init(&w.cond, NULL);
    pthread_mutex_lock(&t->lock);
    w.next = t->waiting, t->waiting = &w;
    pthread_cond_signal(&t->wake);
    while (!w.done) pthread_cond_wait(&w.cond, &t->lock); /* a seat's work is bounded: so is this */
    pthread_mutex_unlock(&t->lock);
    pthread_cond_destroy(&w.cond);
    return w.st ? fedc_error(w.st, "%s", w.err) : FEDC_OK;
}

/* ------------------------------------------------------ shared values -- */

struct fedc__shared_value {
    char name[600];
    size_t bytes;
    void *data;
    int refs;
    fedc__shared_value *next;
};

struct fedc__shared {
    pthread_mutex_t lock;
    fedc__shared_value *values;
};

fedc_status fedc__shared_create(fedc__shared **out) {
    if (!(*out = fedc_calloc(1, sizeof **out))) return fedc_error(FEDC_ENOMEM, "fleet: out of memory");
    pthread_mutex_init(&(*out)->lock, NULL);
    return FEDC_OK;
}

void fedc__shared_destroy(fedc__shared *s) {
    if (!s) return;
    for (fedc__shared_value *v = s->values, *next; v; v = next) {
        next = v->next;
        fedc_free(v->data), fedc_free(v);
    }
    pthread_mutex_destroy(&s->lock);
    fedc_free(s);
}

const void *fedc__shared_data(const fedc__shared_value *v) { return v->data; }

void fedc__shared_release(fedc__shared *s, fedc__shared_value *v) {
    if (!v) return;
    pthread_mutex_lock(&s->lock);
    bool last = --v->refs == 0;
    for (fedc__shared_value **p = &s->values; last && *p; p = &(*p)->next)
        if (*p == v) {
            *p = v->next;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    if (last) fedc_free(v->data), fedc_free(v);
}

/* The newest value kept of this name and size, referenced; NULL if none. */
static fedc__shared_value *candidate(fedc__shared *s, const char *name, size_t bytes) {
    pthread_mutex_lock(&s->lock);
    fedc__shared_value *v = s->values;
    while (v && (v->bytes != bytes || strcmp(v->name, name))) v = v->next;
    if (v) v->refs++;
    pthread_mutex_unlock(&s->lock);
    return v;
}

fedc_status fedc__shared_take(fedc__shared *s, const char *name, const void *data, size_t bytes, fedc__shared_value **out) {
    *out = NULL;
    if (strlen(name) >= sizeof (*out)->name) return fedc_error(FEDC_EINVAL, "fleet: a value's name is too long");
    fedc__shared_value *v = candidate(s, name, bytes);
    if (v && !memcmp(v->data, data, bytes)) { /* compared outside the lock: the reference keeps it */
        *out = v;
        return FEDC_OK;
    }
    fedc__shared_release(s, v);
    if (!(v = fedc_calloc(1, sizeof *v)) || !(v->data = fedc_malloc(bytes ? bytes : 1))) {
        fedc_free(v);
        return fedc_error(FEDC_ENOMEM, "fleet: out of memory");
    }
    snprintf(v->name, sizeof v->name, "%s", name);
    memcpy(v->data, data, bytes);
    v->bytes = bytes, v->refs = 1;
    pthread_mutex_lock(&s->lock);
    v->next = s->values, s->values = v; /* newest first: the next client's task finds it first */
    pthread_mutex_unlock(&s->lock);
    *out = v;
    return FEDC_OK;
}

/* ------------------------------------------------------------ commons -- */

fedc_status fedc__commons_create(fedc__commons *k, const fedc_client_options *o, const fedc_plan *plan, int clients) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int seats = o->trainers > 0 ? o->trainers : cores > 0 ? (int)cores : 1;
    memset(k, 0, sizeof *k);
    fedc_status st = fedc__shared_create(&k->shared);
    if (seats > clients) seats = clients;
    if (!st) st = fedc__trainers_create(&k->trainers, fedc_plan_form(plan), seats, o->threads);
    if (!st && fedc_plan_warm_form(plan)) st = fedc__trainers_create(&k->warm_trainers, fedc_plan_warm_form(plan), seats, o->threads);
    return st;
}

void fedc__commons_destroy(fedc__commons *k) {
    fedc__trainers_destroy(k->trainers);
    fedc__trainers_destroy(k->warm_trainers);
    fedc__shared_destroy(k->shared);
}

/* ------------------------------------------------------------- a fleet -- */

typedef struct member {
    client c;
    const fedc_plan *plan;
    fedc__plan_data *d;
    const fedc__commons *k;
    int64_t id;
    fedc_status st;
    char err[1024];
    pthread_t thread;
    bool started;
} member;

static void *member_main(void *arg) {
    member *m = arg;
    beat *b = m->c.beat;
    m->st = fedc__client_init(&m->c, m->c.o, m->id);
    m->c.beat = b;
    if (!m->st) m->st = fedc__client_start(&m->c, m->plan, m->d, m->id, m->k);
    if (!m->st) m->st = fedc__client_loop(&m->c);
    if (m->st) snprintf(m->err, sizeof m->err, "%s", fedc_errmsg());
    fedc__client_free(&m->c);
    return NULL;
}

fedc_status fedc_fleet_run(const fedc_client_options *o, int n) {
    if (n < 1) return fedc_error(FEDC_EINVAL, "fleet: needs 1 client or more, not %d", n);
    client first;
    fedc_plan *plan = NULL;
    fedc__plan_data *d = NULL;
    member *m = NULL;
    beater t = {0};
    fedc__commons k = {0};
    FILE *log = o->log ? o->log : stderr;
    fedc_status st = fedc__client_init(&first, o, 0); /* the plan, once, over a connection of its own */
    if (!st) st = fedc__client_fetch_plan(&first, &plan);
    fedc__client_free(&first);
    if (!st) st = fedc__plan_data_open(plan, o->data, &d);
    if (!st && (o->client < 0 || fedc__plan_data_clients(d) - o->client < n))
        st = fedc_error(FEDC_EINVAL, "fleet: clients %lld to %lld, but %s has %lld", (long long)o->client,
                        (long long)o->client + n - 1, o->data, (long long)fedc__plan_data_clients(d));
    if (!st && !(m = fedc_calloc((size_t)n, sizeof *m))) st = fedc_error(FEDC_ENOMEM, "fleet: out of memory");
    if (!st) st = fedc__commons_create(&k, o, plan, n);
    if (!st) st = fedc__beater_start(&t, n);
    if (!st)
        fprintf(log, "fedc fleet: %d clients of %s (from %lld) ready, plan %.16s..., server %s\n", n, o->data,
                (long long)o->client, fedc_plan_hash(plan), o->connect);
    for (int i = 0; !st && i < n; i++) {
        m[i].c.o = o, m[i].plan = plan, m[i].d = d, m[i].k = &k, m[i].id = o->client + i, m[i].c.beat = &t.beats[i];
        if (pthread_create(&m[i].thread, NULL, member_main, &m[i]) != 0)
            st = fedc_error(FEDC_EIO, "fleet: cannot start client %lld's thread", (long long)m[i].id);
        else m[i].started = true;
    }
    int failed = 0, reports = 0;
    for (int i = 0; m && i < n; i++) {
        if (!m[i].started) continue;
        pthread_join(m[i].thread, NULL);
        reports += m[i].c.reported;
        if (m[i].st && failed++ == 0 && !st) st = fedc_error(m[i].st, "fleet: %s", m[i].err);
    }
    fedc__beater_stop(&t);
    fedc__commons_destroy(&k);
    if (!st) fprintf(log, "fedc fleet: done: %d clients, %d reports\n", n, reports);
    else if (failed > 1) fprintf(log, "fedc fleet: %d clients failed\n", failed);
    fedc_free(m);
    fedc__plan_data_destroy(d);
    fedc_plan_destroy(plan);
    return st;
}
