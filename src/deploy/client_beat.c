/* A deployment client's heartbeats (client.h): while a client works on a task
 * (and waits for a trainer's seat), one thread of its process sends its
 * heartbeats every heartbeat_ms the task says, over the client's connection
 * when no request of the client's is on it; that thread serves all the
 * clients of a fleet. */
#include <string.h>
#include <time.h>

#include "deploy/client.h"

/* Posted, not called: nothing in the server's answer matters to the client,
 * and waiting for it would hold the work (the first beat) or the connection. */
static void send_beat(beat *b) {
    fedc_metadata_entry f[] = {{"token", b->token}, {"client", b->id}, {"round", b->round}, {"exchange", b->exchange},
                               {"slot", b->slot}};
    fedc__net_post(b->net, FEDC__MSG_HEARTBEAT, f, 5); /* a beat that fails is a beat missed: the server decides */
    b->last = fedc_seconds();
}

/* The heartbeats of the task m, sent by the heartbeat thread while it works. */
void fedc__client_beat_start(client *c, const fedc__msg *m) {
    beat *b = c->beat;
    int64_t every = 1000;
    if (!b || fedc__msg_int(m, "heartbeat_ms", 1, 3600000, &every)) return;
    pthread_mutex_lock(&b->lock);
    b->net = &c->net, b->token = c->token, b->id = c->id;
    snprintf(b->round, sizeof b->round, "%s", fedc__msg_field(m, "round"));
    snprintf(b->exchange, sizeof b->exchange, "%s", fedc__msg_field(m, "exchange"));
    snprintf(b->slot, sizeof b->slot, "%s", fedc__msg_field(m, "slot"));
    b->every_ms = (int)every;
    send_beat(b); /* at once: the server sends more tasks once it knows this one has arrived */
    atomic_store(&b->working, 1);
    pthread_mutex_unlock(&b->lock);
}

/* The client's work is over: the heartbeat thread sends it no more beats. */
void fedc__client_beat_stop(client *c) {
    if (c->beat) atomic_store(&c->beat->working, 0);
}

/* 50 ms, or until the beater is stopped: a client's run ends at once, not after
 * the heartbeat thread's nap. */
static void nap(beater *t) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 50000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&t->lock);
    if (!atomic_load(&t->stop)) pthread_cond_timedwait(&t->wake, &t->lock, &until);
    pthread_mutex_unlock(&t->lock);
}

/* Every 50 ms: the beats due of the working clients whose connections are free. */
static void *beater_main(void *arg) {
    beater *t = arg;
    while (!atomic_load(&t->stop)) {
        nap(t);
        if (atomic_load(&t->stop)) break;
        for (int i = 0; i < t->n; i++) {
            beat *b = &t->beats[i];
            if (!atomic_load(&b->working) || pthread_mutex_trylock(&b->lock)) continue;
            if (atomic_load(&b->working) && fedc_seconds() - b->last >= b->every_ms / 1000.0) send_beat(b);
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

fedc_status fedc__beater_start(beater *t, int n) {
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, NULL);
    t->made = true;
    if (!(t->beats = fedc_calloc((size_t)n, sizeof *t->beats))) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    for (int i = 0; i < n; i++) pthread_mutex_init(&t->beats[i].lock, NULL);
    t->n = n;
    if (pthread_create(&t->thread, NULL, beater_main, t) != 0) return fedc_error(FEDC_EIO, "client: cannot start the heartbeat thread");
    t->started = true;
    return FEDC_OK;
}

void fedc__beater_stop(beater *t) {
    if (!t->made) return; /* never started */
    pthread_mutex_lock(&t->lock);
    atomic_store(&t->stop, 1);
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    if (t->started) pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    for (int i = 0; t->beats && i < t->n; i++) pthread_mutex_destroy(&t->beats[i].lock);
    fedc_free(t->beats);
}
