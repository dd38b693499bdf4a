/* Status codes and the thread-local detail message behind fedc_errmsg(). */
#include "fedc/core.h"

#include <stdio.h>
#include <string.h>

static const char *const status_text[] = {
#define FEDC__STATUS_TEXT(name, text) text,
    FEDC_STATUS_TABLE(FEDC__STATUS_TEXT)
#undef FEDC__STATUS_TEXT
};

/* Large enough for a message that names an op, its operands and their types. */
static _Thread_local char errmsg[1024];

const char *fedc_status_str(fedc_status status) {
    if ((unsigned)status >= FEDC_STATUS_COUNT) return "unknown status";
    return status_text[status];
}

const char *fedc_errmsg(void) { return errmsg; }

/* Formatted aside first, so that a message may quote the last one
 * (fedc_error(st, "%s: %s", where, fedc_errmsg()) is how errors gain context). */
fedc_status fedc_verror(fedc_status status, const char *fmt, va_list ap) {
    char msg[sizeof errmsg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(errmsg, msg, sizeof msg);
    return status;
}

fedc_status fedc_error(fedc_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fedc_verror(status, fmt, ap);
    va_end(ap);
    return status;
}
