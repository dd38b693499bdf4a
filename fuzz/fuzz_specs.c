/* The option specs parsed this way: --aggregator (fedc_robust_parse), --attack
 * (fedc_attack_parse), FEDC_FAULT (fedc__fault_set) and --clock
 * (fedc_clock_parse). The input is split at its first three newlines into the
 * four specs. Each parser returns a status,
 * never a crash; an aggregator spec it accepts prints (fedc_robust_format) as a
 * spec that parses back to the same settings and prints the same again, as the
 * header promises, or the harness aborts (a finding); so does a clock spec. */
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "fedc/attack.h"
#include "fedc/clock.h"
#include "fedc/robust.h"
#include "fuzz.h"

/* The next spec of [*at, end): up to a newline, NUL-ended in a fresh buffer. */
static char *next_spec(const uint8_t **at, const uint8_t *end) {
    const uint8_t *nl = memchr(*at, '\n', (size_t)(end - *at));
    size_t len = (size_t)((nl ? nl : end) - *at);
    char *s = malloc(len + 1);
    if (!s) abort();
    memcpy(s, *at, len);
    s[len] = '\0';
    *at = nl ? nl + 1 : end;
    return s;
}

static void aggregator(const char *spec) {
    fedc_robust r = fedc_robust_defaults(FEDC_ROBUST_MEAN), back = r;
    if (fedc_robust_parse(spec, &r)) return;
    (void)fedc_robust_check(&r, 7);
    char once[256], twice[256];
    fedc_robust_format(&r, once, sizeof once);
    if (fedc_robust_parse(once, &back)) abort(); /* printed, it must parse */
    fedc_robust_format(&back, twice, sizeof twice);
    if (strcmp(once, twice) != 0) abort();
    fuzz_sink += (unsigned)strlen(once);
}

static void clock_spec(const char *spec) {
    fedc_clock_spec c, back;
    if (fedc_clock_parse(spec, &c)) return;
    char once[2 * FEDC_CLOCK_PATH_MAX + 256], twice[sizeof once];
    fedc_clock_format(&c, once, sizeof once);
    if (fedc_clock_parse(once, &back)) abort(); /* printed, it must parse */
    fedc_clock_format(&back, twice, sizeof twice);
    if (strcmp(once, twice) != 0) abort();
    fuzz_sink += (unsigned)strlen(once);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *at = data, *end = data + size;
    char *robust = next_spec(&at, end), *attack = next_spec(&at, end), *fault = next_spec(&at, end);
    char *clock = next_spec(&at, end);
    aggregator(robust);
    fedc_attack a = {0};
    if (!fedc_attack_parse(attack, &a)) fuzz_sink += (unsigned)a.kind;
    if (!fedc__fault_set(fault)) fuzz_sink += (unsigned)fedc__fault_on(FEDC__FAULT_LOAD);
    (void)fedc__fault_set(NULL);
    clock_spec(clock);
    free(robust), free(attack), free(fault), free(clock);
    return 0;
}
