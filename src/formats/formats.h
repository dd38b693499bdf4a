/* formats.h — the readers of libfedc_formats (internal): data formats whose
 * files need libraries of their own, kept out of libfedc so that the core library
 * needs none of them. fedc_formats_register (fedc/formats.h) puts them into
 * libfedc's table of readers (src/data/open.c). */
#ifndef FEDC_FORMATS_FORMATS_H
#define FEDC_FORMATS_FORMATS_H

#include "data/dataset.h"

/* TensorFlow Federated's HDF5 files (read_tff.c; HDF5). */
fedc_status fedc__open_tff(fedc_dataset **out, const char *path);
/* FedJAX's SQLite files of zlib'd msgpack records (read_fedjax.c; SQLite, msgpack). */
fedc_status fedc__open_fedjax(fedc_dataset **out, const char *path);

#endif
