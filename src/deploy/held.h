/* held.h — the requests a deployment's server holds (internal; held.c).
 *
 * The server's socket is raw REP, so a request may be answered after others:
 *   - a check-in with nothing to give is held until its client has a task, the
 *     job is done, or the time the client allows passes (its "hold_ms"): a
 *     client waiting for the next round, or not selected, asks once, not every
 *     second; a selected client's (waiting for a task slot of the reorder
 *     window) is answered within the beat interval, so that it is heard from;
 *   - a "ready" is held until its report may come (a grant free, its slot near
 *     the frontier), answered within the beat interval (the client is working:
 *     it must be heard from) and the client's own bound.
 * The table's size is --max-held; beyond it a check-in is told to come back
 * after the beat interval. docs/deployment-internals.md, "The protocol". */
#ifndef FEDC_DEPLOY_HELD_H
#define FEDC_DEPLOY_HELD_H

#include "deploy/server.h"

typedef struct fedc__held {
    fedc__req from;
    int64_t client;
    int slot;    /* a ready's slot; -1: a check-in */
    double since; /* when it came */
    double hold; /* seconds its client allows it to be held */
} fedc__held;

/* A check-in with nothing to give now: held, or told to come back. */
void fedc__held_checkin(server *s, int64_t client, double hold);
/* A ready of slot (the client's open slot): go, if it may send; else held. */
void fedc__held_ready(server *s, int64_t client, int slot, double hold);
/* Answers the held requests that can be, and those held as long as they may. */
void fedc__held_answer(server *s);
/* After a request, what it can have changed: O(1) unless readies wait or a
 * task was confirmed. */
void fedc__held_after_request(server *s);
/* A report no longer expected, or come: its grant is free for another. */
void fedc__held_ungrant(server *s, int slot);

#endif
