/*
 * fedc/formats.h — libfedc_formats: the readers of TensorFlow Federated's HDF5
 * files (FEDC_FORMAT_TFF) and FedJAX's SQLite files (FEDC_FORMAT_FEDJAX).
 *
 * They need HDF5, SQLite, msgpack and zlib, so they are a library of their own,
 * built with FEDC_FORMATS=ON (the default): libfedc alone opens LEAF, IDX, CSV
 * and text data, and names these two formats but has no reader for them. A
 * program that opens them links libfedc_formats (pkg-config fedc-formats) and
 * calls fedc_formats_register() once, before it opens a dataset; the fedc CLI
 * and the Python package do so. Without it, fedc_dataset_open of such a file
 * fails with FEDC_EUNSUPPORTED, saying which library has the reader.
 */
#ifndef FEDC_FORMATS_H
#define FEDC_FORMATS_H

#include "fedc/data.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds the TFF and FedJAX readers to libfedc's table of readers. Call it before
 * any dataset is opened (it is not synchronised with fedc_dataset_open); calling
 * it again changes nothing. */
FEDC_API void fedc_formats_register(void);

#ifdef __cplusplus
}
#endif

#endif
