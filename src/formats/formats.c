/* libfedc_formats's one entry point (fedc/formats.h): its readers into
 * libfedc's table, whose rows for these formats (src/data/open.c) have no
 * reader until then. */
#include "fedc/formats.h"
#include "formats/formats.h"

void fedc_formats_register(void) {
    fedc__data_set_reader(FEDC_FORMAT_TFF, fedc__open_tff);
    fedc__data_set_reader(FEDC_FORMAT_FEDJAX, fedc__open_fedjax);
}
