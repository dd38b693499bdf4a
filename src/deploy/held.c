/* The requests a deployment's server holds (held.h): check-ins until their
 * client has a task, readies until their report may come. Each is answered
 * within what its client allows, so no client's wait runs past its --timeout;
 * a request of a client the server must hear from (it has an open slot)
 * within the beat interval too, as heartbeats would be. */
#include <string.h>

#include "deploy/held.h"

void fedc__held_ungrant(server *s, int slot) {
    if (s->granted[slot] == 1) s->granted[slot] = 2, s->ngranted--;
}

/* Whether client has an open slot in the open exchange: the server gives it
 * up if it is silent for the heartbeat timeout, so it must be heard from. */
static bool must_hear(const server *s, int64_t client) {
    int i = s->collecting ? s->slot_of[client] : -1;
    return i >= 0 && fedc__collect_state(s->collect, i) == FEDC__SLOT_OPEN;
}

/* How long h may be held: what its client allows, and the beat interval at
 * most for a ready or a selected client's check-in. */
static double hold_limit(const server *s, const fedc__held *h) {
    double beat = fedc__server_beat(s);
    bool hear = h->slot >= 0 || must_hear(s, h->client);
    return hear && beat < h->hold ? beat : h->hold;
}

void fedc__held_checkin(server *s, int64_t client, double hold) {
    char why[128];
    double now = fedc_seconds();
    if (s->nheld < s->maxheld) {
        s->held[s->nheld++] = (fedc__held){s->from, client, -1, now, hold};
        return;
    }
    /* turned away: the server lingers after its last round until this client is back, to tell it so */
    if (now + fedc__server_beat(s) > s->retry_until) s->retry_until = now + fedc__server_beat(s);
    snprintf(why, sizeof why, "the server holds %d check-ins already (round %d)", s->maxheld, s->round + 1);
    fedc__server_wait(s, &s->from, fedc__server_beat_ms(s), why);
}

/* Answers a held "ready": go, if the slot is open and a grant is free (true), or
 * reject if the slot is settled. */
static bool answer_ready(server *s, const fedc__held *h) {
    fedc__slot_state st = s->collecting ? fedc__collect_state(s->collect, h->slot) : FEDC__SLOT_SKIPPED;
    if (st != FEDC__SLOT_OPEN) {
        fedc__server_reply_to(s, &h->from, FEDC__MSG_REJECT,
                              (fedc_metadata_entry[]){{"reason", "that slot wants no report now"}}, 1, NULL, 0);
        return true;
    }
    int w = s->o->reorder_window; /* within the window after the frontier: kept in memory till added */
    if (s->ngranted >= w || h->slot >= fedc__collect_frontier(s->collect) + w) return false;
    s->granted[h->slot] = 1, s->ngranted++;
    fedc__server_reply_to(s, &h->from, FEDC__MSG_GO, NULL, 0, NULL, 0);
    return true;
}

void fedc__held_ready(server *s, int64_t client, int slot, double hold) {
    fedc__held h = {s->from, client, slot, fedc_seconds(), hold};
    if (answer_ready(s, &h)) return;
    if (s->nheld < s->maxheld) s->held[s->nheld++] = h, s->nready++;
    else fedc__server_reply_to(s, &s->from, FEDC__MSG_GO, NULL, 0, NULL, 0); /* nowhere to hold it: let it come */
}

/* Answers the held readies in slot order while grants are free and their
 * slots within reorder_window of the frontier (so that the reports come in
 * the order they are added, and none waits on disk). */
static void answer_readies(server *s) {
    while (s->nready) { /* the lowest slot's ready first */
        int best = -1;
        for (int i = 0; i < s->nheld; i++)
            if (s->held[i].slot >= 0 && (best < 0 || s->held[i].slot < s->held[best].slot)) best = i;
        if (best < 0 || !answer_ready(s, &s->held[best])) break;
        s->held[best] = s->held[--s->nheld];
        s->nready--;
    }
}

/* Readies (above), check-ins that have a task now (or all, "done", when the job
 * is), and any held as long as it may be (come back at once). */
void fedc__held_answer(server *s) {
    double now = fedc_seconds();
    answer_readies(s);
    int kept = 0;
    s->recheck = false;
    for (int i = 0; i < s->nheld; i++) {
        fedc__held h = s->held[i];
        bool ready = h.slot >= 0, answered = true;
        int slot = ready ? -1 : fedc__server_open_slot(s, h.client);
        if (s->done && !ready) fedc__server_done(s, &h.from, h.client);
        else if (slot >= 0) fedc__server_task(s, &h.from, slot);
        else if (now - h.since >= hold_limit(s, &h)) fedc__server_wait(s, &h.from, 0, "nothing yet: check in again");
        else answered = false;
        if (!answered) s->held[kept++] = h;
        else if (ready) s->nready--;
    }
    s->nheld = kept;
}

/* A report frees a grant and moves the frontier (the readies), a confirmed
 * task lets another go out (the check-ins); the rest (a held request's time
 * passing) waits for the timers. */
void fedc__held_after_request(server *s) {
    if (s->nready) answer_readies(s);
    if (s->recheck) fedc__held_answer(s);
}
