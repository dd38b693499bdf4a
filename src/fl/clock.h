/* clock.h — the virtual clock's per-client profiles (internal; the spec is
 * fedc/clock.h). */
#ifndef FEDC_FL_CLOCK_H
#define FEDC_FL_CLOCK_H

#include "core/internal.h"
#include "fedc/clock.h"
#include "fedc/data.h"

typedef struct fedc__clock fedc__clock;

/* The profiles of ds's clients under spec and the run's seed (trace files read
 * and checked: every client has a speed, every line names a client of ds). */
FEDC_INTERNAL_API fedc_status fedc__clock_create(const fedc_clock_spec *spec, uint64_t seed, const fedc_dataset *ds,
                                                 fedc__clock **out);
FEDC_INTERNAL_API void fedc__clock_destroy(fedc__clock *c);
/* Client `client` (its index in the training data): seconds per step, bytes per
 * second (inf: no network time), and its task's virtual seconds for `steps`
 * local steps and `bytes` down and up. */
FEDC_INTERNAL_API double fedc__clock_seconds_per_step(const fedc__clock *c, int64_t client);
FEDC_INTERNAL_API double fedc__clock_bandwidth(const fedc__clock *c, int64_t client);
FEDC_INTERNAL_API double fedc__clock_task_seconds(const fedc__clock *c, int64_t client, double steps, double bytes);
/* Whether the spec says anything of availability (else every client always is). */
FEDC_INTERNAL_API bool fedc__clock_has_availability(const fedc__clock *c);
/* Whether the client checks in: in round `round` (bernoulli: a draw of (seed,
 * round, client)), or at virtual time `time` (diurnal windows, a trace). */
FEDC_INTERNAL_API bool fedc__clock_available(const fedc__clock *c, int64_t client, uint32_t round, double time);

#endif
