/* plan_data.h — a deployed client's batches, loaded as fedc train loads them
 * (src/deploy/plan_data.c; internal). One fedc__plan_data holds a dataset opened
 * with a plan's settings (task, partition, holdout, ...); each client of it (a
 * fleet has many, on their own threads) has its own buffers and loads its
 * batches for a round under the data's lock. */
#ifndef FEDC_DEPLOY_PLAN_DATA_H
#define FEDC_DEPLOY_PLAN_DATA_H

#include "fedc/deploy.h"

typedef struct fedc__plan_data fedc__plan_data;
typedef struct fedc__plan_client fedc__plan_client;

fedc_status fedc__plan_data_open(const fedc_plan *p, const char *data, fedc__plan_data **out);
void fedc__plan_data_destroy(fedc__plan_data *d); /* safe on NULL */
int64_t fedc__plan_data_clients(const fedc__plan_data *d);

/* Client `id` (its index in the data, as fedc train samples it). */
fedc_status fedc__plan_client_create(fedc__plan_data *d, int64_t id, fedc__plan_client **out);
void fedc__plan_client_destroy(fedc__plan_client *c); /* safe on NULL */
/* Lets the client's batches' buffers go until its next load (a fleet's client
 * between tasks holds no batch). */
void fedc__plan_client_release(fedc__plan_client *c);
/* The client's index in the data. */
int64_t fedc__plan_client_id(const fedc__plan_client *c);
/* The client's id in the data ("f0001_23"). */
const char *fedc__plan_client_name(const fedc__plan_client *c);
/* The client's input `name` (x, y, mask, steps, key, meta/num_examples,
 * meta/seen), as last loaded; NULL for another name. */
const void *fedc__plan_client_input(const fedc__plan_client *c, const char *name);
/* meta/seen from now on: 1 once the client's state was kept after a round. */
void fedc__plan_client_seen(fedc__plan_client *c, bool seen);
/* Loads the client's batches of `round` (counted from 0; UINT32_MAX: the warm
 * start's, as fedc train loads them) and binds those of x, y,
 * mask, steps, key, meta/num_examples, meta/seen and meta/domain that q reads to ex. */
fedc_status fedc__plan_client_load(fedc__plan_client *c, uint32_t round, fedc_executor *ex, const fedc_program *q);

#endif
