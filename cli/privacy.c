/*
 * fedc privacy — the RDP privacy accountant (fedc/privacy.h, docs/privacy.md):
 *
 *   fedc privacy epsilon --noise-multiplier Z --sampling-rate Q --steps T --delta D ...
 *                        the ε that T steps of the subsampled Gaussian spend
 *   fedc privacy noise --epsilon E --sampling-rate Q --steps T --delta D ...
 *                        the noise multiplier that spends at most E
 *
 * Both take --conversion, --orders, --series and --also (further mechanisms
 * composed with the main one). Exit status 0 done, 2 bad usage; nothing here
 * reads files, so 1 is only a target ε no noise multiplier meets.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"

static const char usage[] =
    "usage: fedc privacy epsilon --noise-multiplier Z --sampling-rate Q --steps T --delta D [options]\n"
    "       fedc privacy noise --epsilon E --sampling-rate Q --steps T --delta D [options]\n"
    "  the RDP accountant of the Poisson-subsampled Gaussian mechanism (docs/privacy.md):\n"
    "  epsilon prints the epsilon that T steps at sampling rate Q with noise multiplier Z\n"
    "  spend at delta D, and the best order; noise prints the noise multiplier for which\n"
    "  they spend at most E (Opacus's search: at most E, within --tolerance of it)\n"
    "  --noise-multiplier Z    noise stddev over the L2 sensitivity, >= 0\n"
    "  --epsilon E             the target epsilon, > 0 (noise)\n"
    "  --sampling-rate Q       each example's (client's) chance of joining a step, in [0, 1]\n"
    "                          ((0, 1] for noise)\n"
    "  --steps T               steps (rounds), 1 to 2^53\n"
    "  --delta D               in (0, 1)\n"
    "  --conversion NAME       classic (RDP - log D / (a - 1)) or improved (Balle et al.\n"
    "                          2020, dp_accounting's and Opacus's; the default)\n"
    "  --orders LIST           the RDP orders: dp-accounting (the default), opacus,\n"
    "                          tf-privacy, or increasing numbers in (1, 100000], comma-separated\n"
    "  --series NAME           fractional orders' series: absolute (dp_accounting's, an\n"
    "                          upper bound; the default) or signed (Opacus's and TF Privacy's)\n"
    "  --also Q,Z,T            another mechanism composed with the main one (e.g. the\n"
    "                          clip-estimation bits), repeatable up to 16 times\n"
    "  --tolerance X           noise: how far below E the epsilon may be, in (0, 1000]\n"
    "                          (default 0.01)\n"
    "Exit status: 0 done, 1 no noise multiplier up to 1e6 meets E, 2 bad usage.\n";

enum { MAX_ORDERS = 4096, MAX_ALSO = 16 };
static const char cmd_epsilon[] = "fedc privacy epsilon", cmd_noise[] = "fedc privacy noise";

typedef struct mechanism {
    double q, z;
    uint64_t steps;
} mechanism;

typedef struct privacy_args {
    bool noise;             /* the subcommand: noise, else epsilon */
    double z, epsilon, delta, tolerance;
    mechanism main;
    bool have_z, have_epsilon, have_q, have_steps, have_delta;
    fedc_rdp_conversion conversion;
    fedc_rdp_series series;
    double orders[MAX_ORDERS];
    int n_orders; /* 0: the default set */
    mechanism also[MAX_ALSO];
    int n_also;
} privacy_args;

static const cli_range unit_closed = {0, 1, false, false}, unit_open = {0, 1, true, true};
static const cli_range nonnegative = {0, INFINITY, false, true}, positive = {0, INFINITY, true, true};

/* --orders: a named set or a comma-separated list of reals in (1, 100000]. */
static bool parse_orders(const char *cmd, const char *text, privacy_args *a) {
    static const char *const names[] = {"dp-accounting", "opacus", "tf-privacy"};
    for (int s = 0; s < 3; s++)
        if (!strcmp(text, names[s])) {
            const double *o;
            a->n_orders = fedc_rdp_orders((fedc_rdp_order_set)s, &o);
            memcpy(a->orders, o, (size_t)a->n_orders * sizeof *o);
            return true;
        }
    char item[64];
    a->n_orders = 0;
    for (const char *s = text;; s++) {
        size_t len = strcspn(s, ",");
        if (a->n_orders == MAX_ORDERS || len >= sizeof item) {
            fprintf(stderr, "%s: --orders takes at most %d orders of at most %zu characters each\n", cmd,
                    MAX_ORDERS, sizeof item - 1);
            return false;
        }
        memcpy(item, s, len);
        item[len] = '\0';
        if (!cli_real(cmd, "an order of --orders", item, (cli_range){1, FEDC_RDP_MAX_ORDER, true, false},
                      &a->orders[a->n_orders++]))
            return false;
        s += len;
        if (!*s) break;
    }
    return true;
}

/* --also Q,Z,T. */
static bool parse_also(const char *cmd, const char *text, privacy_args *a) {
    if (a->n_also == MAX_ALSO) {
        fprintf(stderr, "%s: --also is given more than %d times\n", cmd, MAX_ALSO);
        return false;
    }
    char q[64], z[64], t[64], extra;
    if (strlen(text) >= sizeof q || sscanf(text, "%63[^,],%63[^,],%63[^,]%c", q, z, t, &extra) != 3) {
        fprintf(stderr, "%s: --also needs Q,Z,T (sampling rate, noise multiplier, steps), not '%s'\n", cmd, text);
        return false;
    }
    mechanism *m = &a->also[a->n_also++];
    return cli_real(cmd, "--also's sampling rate", q, unit_closed, &m->q) &&
           cli_real(cmd, "--also's noise multiplier", z, nonnegative, &m->z) &&
           cli_uint(cmd, "--also's steps", t, 1, 1ULL << 53, &m->steps);
}

/* One option with its value; false (having said why) on a bad one. */
static bool parse_option(const char *cmd, const char *opt, const char *v, privacy_args *a) {
    if (!strcmp(opt, "--noise-multiplier") && !a->noise)
        return (a->have_z = cli_real(cmd, opt, v, nonnegative, &a->main.z));
    if (!strcmp(opt, "--epsilon") && a->noise) return (a->have_epsilon = cli_real(cmd, opt, v, positive, &a->epsilon));
    if (!strcmp(opt, "--sampling-rate"))
        return (a->have_q = cli_real(cmd, opt, v, a->noise ? (cli_range){0, 1, true, false} : unit_closed, &a->main.q));
    if (!strcmp(opt, "--steps")) return (a->have_steps = cli_uint(cmd, opt, v, 1, 1ULL << 53, &a->main.steps));
    if (!strcmp(opt, "--delta")) return (a->have_delta = cli_real(cmd, opt, v, unit_open, &a->delta));
    if (!strcmp(opt, "--tolerance") && a->noise) return cli_real(cmd, opt, v, (cli_range){0, 1000, true, false}, &a->tolerance);
    if (!strcmp(opt, "--orders")) return parse_orders(cmd, v, a);
    if (!strcmp(opt, "--also")) return parse_also(cmd, v, a);
    if (!strcmp(opt, "--conversion") || !strcmp(opt, "--series")) {
        bool conversion = !strcmp(opt, "--conversion");
        for (int k = 0; k < 2; k++) {
            const char *name = conversion ? fedc_rdp_conversion_name(k) : fedc_rdp_series_name(k);
            if (strcmp(v, name)) continue;
            if (conversion) a->conversion = (fedc_rdp_conversion)k;
            else a->series = (fedc_rdp_series)k;
            return true;
        }
        fprintf(stderr, "%s: %s takes %s, not '%s'\n", cmd, opt,
                conversion ? "classic or improved" : "absolute or signed", v);
        return false;
    }
    fprintf(stderr, "%s: unexpected argument '%s' (see fedc privacy --help)\n", cmd, opt);
    return false;
}

static int parse_args(const char *cmd, int argc, char **argv, privacy_args *a) {
    for (int i = 0; i < argc; i += 2) { /* every option takes a value */
        if (strncmp(argv[i], "--", 2) || i + 1 >= argc) {
            fprintf(stderr, "%s: %s '%s' (see fedc privacy --help)\n", cmd,
                    strncmp(argv[i], "--", 2) ? "unexpected argument" : "a value is missing after", argv[i]);
            return CLI_USAGE;
        }
        if (!parse_option(cmd, argv[i], argv[i + 1], a)) return CLI_USAGE;
    }
    bool first = a->noise ? a->have_epsilon : a->have_z;
    if (first && a->have_q && a->have_steps && a->have_delta) return 0;
    fprintf(stderr, "%s: needs %s, --sampling-rate, --steps and --delta (see fedc privacy --help)\n", cmd,
            a->noise ? "--epsilon" : "--noise-multiplier");
    return CLI_USAGE;
}

/* The accountant with the --also mechanisms composed; NULL (having said why). */
static fedc_privacy_accountant *accountant(const char *cmd, const privacy_args *a) {
    fedc_privacy_accountant *acc = NULL;
    fedc_status st = fedc_privacy_accountant_create(&acc, a->n_orders ? a->orders : NULL, a->n_orders);
    if (!st) st = fedc_privacy_accountant_set_series(acc, a->series);
    for (int k = 0; !st && k < a->n_also; k++)
        st = fedc_privacy_accountant_add(acc, a->also[k].q, a->also[k].z, (int64_t)a->also[k].steps);
    if (!st) return acc;
    fprintf(stderr, "%s: %s\n", cmd, fedc_errmsg());
    fedc_privacy_accountant_destroy(acc);
    return NULL;
}

static int report(const char *cmd, fedc_privacy_accountant *acc, const privacy_args *a) {
    double eps, order;
    fedc_status st = fedc_privacy_accountant_add(acc, a->main.q, a->main.z, (int64_t)a->main.steps);
    if (!st) st = fedc_privacy_accountant_epsilon(acc, a->delta, a->conversion, &eps, &order);
    if (st) {
        fprintf(stderr, "%s: %s\n", cmd, fedc_errmsg());
        return CLI_USAGE;
    }
    if (a->noise) printf("noise multiplier: %.12g\n", a->main.z);
    printf("epsilon: %.12g\nbest order: %g\n", eps, order);
    printf("(delta %g, %s conversion, %s series, %d orders%s)\n", a->delta, fedc_rdp_conversion_name(a->conversion),
           fedc_rdp_series_name(a->series), fedc_privacy_accountant_rdp(acc, NULL, NULL),
           a->n_also ? ", with the --also mechanisms" : "");
    return CLI_OK;
}

static int run(const char *cmd, privacy_args *a) {
    fedc_privacy_accountant *acc = accountant(cmd, a);
    if (!acc) return CLI_USAGE;
    int rc = CLI_OK;
    if (a->noise) {
        fedc_status st = fedc_privacy_noise_for_epsilon(acc, a->epsilon, a->tolerance, a->main.q,
                                                        (int64_t)a->main.steps, a->delta, a->conversion,
                                                        &a->main.z, NULL);
        if (st) {
            fprintf(stderr, "%s: %s\n", cmd, fedc_errmsg());
            rc = st == FEDC_ERANGE ? CLI_FAILED : CLI_USAGE;
        }
    }
    if (rc == CLI_OK) rc = report(cmd, acc, a);
    fedc_privacy_accountant_destroy(acc);
    return rc;
}

int fedc_cli_privacy(int argc, char **argv) {
    bool epsilon = argc > 0 && !strcmp(argv[0], "epsilon"), noise = argc > 0 && !strcmp(argv[0], "noise");
    if (cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (!epsilon && !noise) {
        fprintf(stderr, "fedc privacy: %s%s%s (they are epsilon and noise; see fedc privacy --help)\n",
                argc ? "unknown subcommand '" : "needs a subcommand", argc ? argv[0] : "", argc ? "'" : "");
        return CLI_USAGE;
    }
    privacy_args *a = calloc(1, sizeof *a);
    if (!a) {
        fprintf(stderr, "fedc privacy: out of memory\n");
        return CLI_FAILED;
    }
    a->noise = noise;
    a->conversion = FEDC_RDP_IMPROVED;
    a->tolerance = 0.01;
    const char *cmd = noise ? cmd_noise : cmd_epsilon;
    int rc = parse_args(cmd, argc - 1, argv + 1, a);
    if (!rc) rc = run(cmd, a);
    free(a);
    return rc;
}
