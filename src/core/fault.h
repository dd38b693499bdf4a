/* core/fault.h — the faults tests inject (internal; src/core/fault.c).
 *
 * A test makes a run or a deployment fail where a real one would: a client
 * that is slow, dies after its report or sends a message a byte short, a run
 * killed right after a round's metrics, a client whose data cannot be loaded.
 * Which faults are on comes from one place, as SQLite's fault simulator: the
 * environment variable FEDC_FAULT (docs/training.md, docs/deployment-internals.md), read
 * and parsed once, the first time the library asks, or fedc__fault_set, with
 * which a C test sets them without touching its environment.
 *
 * FEDC_FAULT holds faults separated by ';' (usually one), each NAME or
 * NAME:ARGUMENT as the table below says. A value that names an unknown fault
 * or gives one a malformed argument injects nothing, and says so once on
 * stderr. Library code asks where the fault acts, by id:
 *
 *   fault                 argument  where it acts
 *   metrics:ROUNDS        rounds    fedc train, killed (SIGKILL) right after the round's metrics row
 *   load:ROUNDS           rounds    fedc train, the clients named cannot load their data that round
 *   slow:S                seconds   a client holds each task S seconds before its work
 *   report-twice          none      a client sends every report again after its acknowledgement
 *   report-replay         none      a client sends every report again over a new connection after its ack
 *   exit-after-report:R   round     a client's process ends once round R's report is acknowledged
 *   secagg-exit:R         round     a client's process ends before its message of secure step R
 *   secagg-garble:R       round     a client sends secure step R's message a byte short
 *   secagg-forge-unmask   none      a server asks for both shares of the lowest survivor
 *
 * A round is a non-negative integer. ROUNDS is GROUP/GROUP/..., each GROUP a
 * round or `*` (every round) followed by the clients it names, each after a
 * ':' or a ',' ("load:2:1", "load:1:3,4/2:0", "metrics:4"). */
#ifndef FEDC_CORE_FAULT_H
#define FEDC_CORE_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "fedc/core.h"

typedef enum fedc__fault_id {
    FEDC__FAULT_METRICS,
    FEDC__FAULT_LOAD,
    FEDC__FAULT_SLOW,
    FEDC__FAULT_REPORT_TWICE,
    FEDC__FAULT_REPORT_REPLAY,
    FEDC__FAULT_EXIT_AFTER_REPORT,
    FEDC__FAULT_SECAGG_EXIT,
    FEDC__FAULT_SECAGG_GARBLE,
    FEDC__FAULT_SECAGG_FORGE_UNMASK,
    FEDC__FAULT_COUNT
} fedc__fault_id;

/* Replaces the faults on with those `spec` names (FEDC_FAULT's syntax; NULL or
 * "": none), from then on instead of the environment's. A malformed spec turns
 * every fault off and returns FEDC_EINVAL with a message naming what is wrong. */
FEDC_INTERNAL_API fedc_status fedc__fault_set(const char *spec);

/* Whether fault `id` is on (whatever its argument). */
FEDC_INTERNAL_API bool fedc__fault_on(fedc__fault_id id);

/* Whether fault `id` is on at `round`: a round fault's round is `round`; a
 * rounds fault names `round` and, when client >= 0, `client` in it. */
FEDC_INTERNAL_API bool fedc__fault_at(fedc__fault_id id, int64_t round, int64_t client);

/* A seconds fault's seconds; 0 when it is off. */
FEDC_INTERNAL_API double fedc__fault_seconds(fedc__fault_id id);

#endif
