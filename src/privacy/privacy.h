/* privacy.h — what the accountant's files share (internal). */
#ifndef FEDC_PRIVACY_INTERNAL_H
#define FEDC_PRIVACY_INTERNAL_H

#include "core/internal.h"
#include "fedc/privacy.h"

/* FEDC_OK when orders[0..n) is a valid list (see fedc_rdp_subsampled_gaussian),
 * else FEDC_EINVAL naming `fn`, the entry and the range. */
fedc_status fedc__rdp_check_orders(const char *fn, const double *orders, int n);

#endif
