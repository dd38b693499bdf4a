/* tasks.h — what the task preprocessings (tasks*.c) share (internal): finding a
 * task's input features with errors that say what was expected, and building the
 * output client from arrays the task filled in place. */
#ifndef FEDC_DATA_TASKS_H
#define FEDC_DATA_TASKS_H

#include "data/dataset.h"
#include "fedc/tasks.h"

/* *out = the feature named `name`, or else `alt` (may be NULL), of this kind and,
 * for an array, dtype; FEDC_ENOTFOUND / FEDC_ETYPE (naming the task, the client
 * and the features it has) when there is none or it is of another sort. */
fedc_status fedc__task_input(const fedc_client_data *c, const char *task, const char *name, const char *alt,
                             fedc_feature_kind kind, fedc_dtype dtype, const fedc_feature **out);

/* Checks that an i32[n] label feature is in [0, limit); FEDC_ERANGE naming the
 * client and the first example outside otherwise. */
fedc_status fedc__task_check_labels(const fedc_client_data *c, const char *task, const fedc_feature *labels,
                                    int32_t limit);

/* Adds an array the caller allocated with fedc_malloc (NULL for an empty one) as
 * a feature of `c` without copying it; frees it on failure. */
fedc_status fedc__task_adopt(fedc_client_data *c, const char *name, fedc_type type, void *data);

/* What a hook does with a plain function's result: on success, destroys the old
 * client and puts the new one in its place. */
fedc_status fedc__task_replace(fedc_client_data **client, fedc_status st, fedc_client_data *made);

/* An array of `count` elements of `size` bytes from fedc_malloc (one byte for
 * none); NULL with FEDC_ENOMEM set, naming the client. */
void *fedc__task_alloc(const fedc_client_data *c, int64_t count, size_t size);

#endif
