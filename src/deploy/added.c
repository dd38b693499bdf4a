/* Which round last added each client's report, written into and read back
 * from a server's checkpoint (deploy.h): a client that keeps state is told it
 * with its next task, so a server started again must still know it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/deploy.h"

fedc_status fedc__added_encode(const int32_t *added, int64_t n, char **out) {
    size_t cap = 1, len = 0;
    for (int64_t i = 0; i < n; i++)
        if (added[i] >= 0) cap += 24;
    char *s = fedc_malloc(cap);
    if (!s) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    s[0] = '\0';
    for (int64_t i = 0; i < n; i++)
        if (added[i] >= 0)
            len += (size_t)snprintf(s + len, cap - len, "%s%lld:%d", len ? "," : "", (long long)i, (int)added[i]);
    *out = s;
    return FEDC_OK;
}

/* A whole number in [lo, hi] at *p, which moves past it. */
static bool number(const char **p, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    if (**p < '0' || **p > '9') return false;
    long long x = strtoll(*p, &end, 10);
    if (x < lo || x > hi) return false;
    *p = end, *out = x;
    return true;
}

fedc_status fedc__added_parse(const char *text, int32_t *added, int64_t n, int64_t rounds) {
    for (int64_t i = 0; i < n; i++) added[i] = -1;
    for (const char *p = text; *p;) {
        int64_t client, round;
        const char *at = p;
        bool ok = number(&p, 0, n - 1, &client) && *p++ == ':' && number(&p, 0, rounds - 1, &round) && (!*p || *p++ == ',');
        if (!ok)
            return fedc_error(FEDC_EPARSE, "added_rounds: \"%.40s\" at byte %lld is not CLIENT:ROUND with a client below %lld "
                              "and a round below %lld", at, (long long)(at - text), (long long)n, (long long)rounds);
        added[client] = (int32_t)round;
    }
    return FEDC_OK;
}
