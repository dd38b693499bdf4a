/* What the clients of one process share (fleet.h): seats for client_work with a
 * pool of executors, and one copy of each broadcast value. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/fleet.h"

/* ----------------------------------------------------------- trainers -- */

/* A client waiting for a seat, on its own condition variable, so that a seat
 * given back wakes the one client let in, not every waiting thread. */
typedef struct waiter {
    int64_t round, exchange, slot;
    bool admitted;
    pthread_cond_t cond;
    struct waiter *next;
} waiter;

struct fedc__trainers {
    pthread_mutex_t lock;
    const fedc_deployment_form *form;
    int exchanges, seats, threads, busy;
    waiter *waiting;       /* unordered: the lowest key is found when a seat is free */
    fedc_executor **idle;  /* per exchange, `seats` entries: executors no seat holds */
    int *nidle;            /* per exchange */
};

fedc_status fedc__trainers_create(fedc__trainers **out, const fedc_deployment_form *f, int seats, int threads) {
    *out = NULL;
    if (seats < 1) return fedc_error(FEDC_EINVAL, "fleet: %d trainers; it needs 1 or more", seats);
    fedc__trainers *t = fedc_calloc(1, sizeof *t);
    int e = fedc_deployment_form_exchanges(f);
    if (t) t->idle = fedc_calloc((size_t)e * (size_t)seats, sizeof *t->idle);
    if (t) t->nidle = fedc_calloc((size_t)e, sizeof *t->nidle);
    if (!t || !t->idle || !t->nidle) {
        if (t) fedc_free(t->idle), fedc_free(t->nidle);
        fedc_free(t);
        return fedc_error(FEDC_ENOMEM, "fleet: out of memory");
    }
    pthread_mutex_init(&t->lock, NULL);
    t->form = f, t->exchanges = e, t->seats = seats, t->threads = threads;
    *out = t;
    return FEDC_OK;
}

void fedc__trainers_destroy(fedc__trainers *t) {
    if (!t) return;
    for (int e = 0; e < t->exchanges; e++)
        for (int i = 0; i < t->nidle[e]; i++) fedc_executor_destroy(t->idle[e * t->seats + i]);
    fedc_free(t->idle), fedc_free(t->nidle);
    pthread_mutex_destroy(&t->lock);
    fedc_free(t);
}

static bool before(const waiter *a, const waiter *b) {
    if (a->round != b->round) return a->round < b->round;
    if (a->exchange != b->exchange) return a->exchange < b->exchange;
    return a->slot < b->slot;
}

/* Under the lock: a free seat goes to the lowest waiting key. */
static void admit_next(fedc__trainers *t) {
    if (t->busy >= t->seats || !t->waiting) return;
    waiter **best = &t->waiting;
    for (waiter **w = &t->waiting; *w; w = &(*w)->next)
        if (before(*w, *best)) best = w;
    waiter *w = *best;
    *best = w->next;
    w->admitted = true;
    t->busy++;
    pthread_cond_signal(&w->cond);
}

static void give_back(fedc__trainers *t, int e, fedc_executor *ex) {
    pthread_mutex_lock(&t->lock);
    if (ex) t->idle[e * t->seats + t->nidle[e]++] = ex; /* at most one per seat: there is room */
    t->busy--;
    admit_next(t);
    pthread_mutex_unlock(&t->lock);
}

fedc_status fedc__trainers_acquire(fedc__trainers *t, int64_t round, int e, int64_t slot, fedc_executor **ex) {
    *ex = NULL;
    if (e < 0 || e >= t->exchanges) return fedc_error(FEDC_EINVAL, "fleet: no exchange %d", e);
    waiter w = {round, e, slot, false, PTHREAD_COND_INITIALIZER, NULL};
    pthread_mutex_lock(&t->lock);
    w.next = t->waiting, t->waiting = &w;
    admit_next(t);
    while (!w.admitted) pthread_cond_wait(&w.cond, &t->lock); /* a seat's work is bounded: so is this */
    fedc_executor *idle = t->nidle[e] ? t->idle[e * t->seats + --t->nidle[e]] : NULL;
    pthread_mutex_unlock(&t->lock);
    pthread_cond_destroy(&w.cond);
    if (idle) {
        *ex = idle;
        return FEDC_OK;
    }
    const fedc_program *q = fedc_deployment_form_phase(t->form, e, FEDC_PHASE_CLIENT_WORK);
    fedc_status st = fedc_executor_create(ex, q, &(fedc_exec_options){.clients = 1, .threads = t->threads});
    if (st) give_back(t, e, NULL);
    return st;
}

void fedc__trainers_release(fedc__trainers *t, int e, fedc_executor *ex) { give_back(t, e, ex); }

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
