/* fedjax_records.h — decoding one FedJAX client record (internal): the `data` blob
 * of a row of federated_data, zlib-compressed msgpack of a map from feature names
 * to numpy arrays, into a fedc_client_data. Used by read_fedjax.c. */
#ifndef FEDC_FORMATS_FEDJAX_RECORDS_H
#define FEDC_FORMATS_FEDJAX_RECORDS_H

#include <stddef.h>

#include "fedc/data.h"

/* Inflates and decodes `blob` (size bytes) into a new client named `client` with
 * `num_examples` examples, each feature's leading dimension checked against it.
 * Errors name `path`, the client and the feature. */
fedc_status fedc__fedjax_decode(const char *path, const char *client, int64_t num_examples, const void *blob,
                                size_t size, fedc_client_data **out);

#endif
