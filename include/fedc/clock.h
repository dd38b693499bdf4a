/*
 * fedc/clock.h — a virtual clock for simulated clients (docs/training.md, "Time").
 *
 * A simulated round takes no wall-clock time to speak of, so how long it would
 * take a real cohort is modelled: each client has a compute speed (seconds per
 * local step), a bandwidth (bytes per second) and an availability, drawn from the
 * run's seed per client (the same client always gets the same profile) or read
 * from trace files. A client's task takes
 *
 *     steps × seconds_per_step + bytes / bandwidth
 *
 * virtual seconds, bytes being the model down and the update up (f32). The
 * simulation advances a virtual clock (double seconds), never the wall clock.
 *
 * The spec `fedc train --clock` takes: comma-separated items, each optional,
 *
 *     speed=S | speed=lognormal:MU:SIGMA | speed=trace:FILE
 *         seconds per step: S; exp(N(MU, SIGMA²)); "client_id,seconds_per_step" lines
 *     bandwidth=B | bandwidth=lognormal:MU:SIGMA | bandwidth=inf
 *         bytes per second (default inf: no network time)
 *     availability=always | availability=bernoulli:P | availability=diurnal:PERIOD:ON | availability=trace:FILE
 *         each client checks in with probability P each round; a client is online
 *         for the fraction ON of each PERIOD seconds, from a phase of its own;
 *         "client_id,start,end" lines (a client is online in [start, end); one
 *         without a line never is)
 *
 * A FILE may not hold a comma. Unset items: speed=0 (no compute time),
 * bandwidth=inf, availability=always.
 */
#ifndef FEDC_CLOCK_H
#define FEDC_CLOCK_H

#include <stdbool.h>
#include <stddef.h>

#include "fedc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fedc_clock_dist {
    FEDC_CLOCK_FIXED = 0, /* a: the value (0 for speed, inf for bandwidth when unset) */
    FEDC_CLOCK_LOGNORMAL, /* exp(N(a, b²)) */
    FEDC_CLOCK_TRACE,     /* per client, from a file */
} fedc_clock_dist;

typedef enum fedc_availability {
    FEDC_AVAILABLE_ALWAYS = 0,
    FEDC_AVAILABLE_BERNOULLI, /* a: P */
    FEDC_AVAILABLE_DIURNAL,   /* a: the period in seconds, b: the fraction online */
    FEDC_AVAILABLE_TRACE,
} fedc_availability;

enum { FEDC_CLOCK_PATH_MAX = 512 };

typedef struct fedc_clock_spec {
    fedc_clock_dist speed;
    double speed_a, speed_b;
    fedc_clock_dist bandwidth;
    double bandwidth_a, bandwidth_b;
    fedc_availability availability;
    double availability_a, availability_b;
    char speed_trace[FEDC_CLOCK_PATH_MAX], availability_trace[FEDC_CLOCK_PATH_MAX];
} fedc_clock_spec;

/* The spec with nothing set: no compute or network time, always available. */
FEDC_API fedc_clock_spec fedc_clock_defaults(void);
/* Parses a spec as above into *out; an error names the item and what it wants. */
FEDC_API fedc_status fedc_clock_parse(const char *spec, fedc_clock_spec *out);
/* The spec as a string that parses back to the same spec (every item, %.17g). */
FEDC_API void fedc_clock_format(const fedc_clock_spec *s, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
