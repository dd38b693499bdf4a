/* collect.h — a round's reports streamed into its aggregation (internal).
 *
 * The aggregation adds the clients' values in slot order (the simulator's tree,
 * src/exec/aggregate.c), which fixes its bits; reports arrive in any order. So a
 * report is added as soon as every slot before it is settled (reported, or given
 * up), and the reports that arrive ahead of that frontier wait: the first
 * `window` of them in memory, the others in a spill file (one report's bytes at
 * offset slot x report size), read back when the frontier reaches them. Memory
 * is O(model x window), whatever the cohort; the spill file holds at most the
 * cohort's reports of one exchange and is emptied at the next.
 *
 * With over-selection (commit < slots) the first `commit` reports in slot order
 * are added and the rest are not: once that many are in, the exchange closes.
 * Which reports are added is thus a function of which slots reported, never of
 * the order they came in. */
#ifndef FEDC_DEPLOY_COLLECT_H
#define FEDC_DEPLOY_COLLECT_H

#include "deploy/deploy.h"

typedef enum fedc__slot_state {
    FEDC__SLOT_OPEN,    /* no report yet */
    FEDC__SLOT_HELD,    /* reported, waiting in memory for the slots before it */
    FEDC__SLOT_SPILLED, /* reported, waiting in the spill file */
    FEDC__SLOT_ADDED,   /* reported and added */
    FEDC__SLOT_UNUSED,  /* reported, not added: over-selected beyond the first `commit` */
    FEDC__SLOT_DROPPED, /* given up without a report (deadline, missed heartbeats) */
    FEDC__SLOT_SKIPPED  /* no report, and none needed: the first `commit` were in */
} fedc__slot_state;

typedef struct fedc__collect fedc__collect;

/* A collector of `slots` reports into run's aggregations, adding at most
 * `commit` of them, `window` reports held in memory, spilling to the file
 * spill_path (made, and unlinked at once: nothing is left behind). */
fedc_status fedc__collect_create(fedc__collect **out, fedc_deployment_run *run, int slots, int commit, int window,
                                 const char *spill_path);
void fedc__collect_destroy(fedc__collect *c); /* safe on NULL */

/* Begins exchange e, whose reports are nin values of bytes[i] each, of
 * elements of align[i] bytes (a report whose values are so aligned is added
 * where it lies, not copied first). */
fedc_status fedc__collect_begin(fedc__collect *c, int exchange, int nin, const size_t *bytes, const size_t *align);
fedc__slot_state fedc__collect_state(const fedc__collect *c, int slot);
/* Slot's report (values[i]: its i-th value, any alignment), which must be OPEN;
 * added now or kept until the slots before it are settled. */
fedc_status fedc__collect_add(fedc__collect *c, int slot, const void *const *values);
/* Called with each report as it is added, in slot order (never for one left
 * out): secure aggregation takes exactly the added reports' masked inputs. A
 * failure is the add's. NULL: none. */
typedef fedc_status (*fedc__collect_hook)(void *ctx, int slot, const void *const *values);
void fedc__collect_on_add(fedc__collect *c, fedc__collect_hook hook, void *ctx);
/* Gives up an OPEN slot (it will not report). */
fedc_status fedc__collect_drop(fedc__collect *c, int slot);
/* The first slot not settled (slots: every one is). */
int fedc__collect_frontier(const fedc__collect *c);
/* Every slot settled: the aggregation has all it will get. */
bool fedc__collect_closed(const fedc__collect *c);
/* An aggregator's collector (groups.h): slot i is the aggregation's slot base + i. */
void fedc__collect_set_base(fedc__collect *c, int base);
/* The server's side of a group's report: its OPEN slots first to end - 1, at
 * the frontier, settled at once (reported[i - first] '1': added, else dropped),
 * the aggregation fed by the caller (its blocks), not slot by slot. */
fedc_status fedc__collect_settle(fedc__collect *c, int first, int end, const char *reported);
/* The aggregates written (the exchange must be closed). */
fedc_status fedc__collect_end(fedc__collect *c);

typedef struct fedc__collect_stats {
    int added, unused, dropped, skipped, spilled, held_peak;
    double seconds; /* spent adding */
} fedc__collect_stats;
fedc__collect_stats fedc__collect_stats_of(const fedc__collect *c);

#endif
