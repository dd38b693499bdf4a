/*
 * fedc data info PATH [--format NAME] — what a dataset holds: the format, clients,
 * examples, the first client's features, and a histogram of examples per client.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"

static const char usage[] =
    "usage: fedc data info PATH [--format %s]\n"
    "  describe a federated dataset: its format (detected unless given), clients,\n"
    "  examples, examples per client (with a histogram) and the first client's\n"
    "  features\n"
    "Exit status: 0 done, 1 the data cannot be read, 2 bad usage.\n";

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The histogram of examples per client: integer bins of equal width covering
 * [min, max], at most 10 (fewer when the counts span fewer than 10 values). */
static void print_histogram(const int64_t *sorted, int64_t n) {
    int64_t lo = sorted[0], span = sorted[n - 1] - lo + 1, width = (span + 9) / 10;
    int bins = (int)((span + width - 1) / width);
    int64_t count[10] = {0}, most = 0;
    for (int64_t i = 0; i < n; i++) count[(sorted[i] - lo) / width]++;
    for (int b = 0; b < bins; b++) most = count[b] > most ? count[b] : most;
    printf("histogram of examples per client (%d bin%s):\n", bins, bins == 1 ? "" : "s");
    for (int b = 0; b < bins; b++) {
        /* 40 columns for the fullest bin; a bin with any client shows at least one. */
        int bar = (int)((count[b] * 40 + most - 1) / most);
        printf("  %8lld - %-8lld |%-40.*s| %lld\n", (long long)(lo + b * width), (long long)(lo + (b + 1) * width - 1),
               bar, "########################################", (long long)count[b]);
    }
}

/* min/median/mean/max of the clients' example counts, then the histogram. */
static bool print_client_sizes(const fedc_dataset *ds) {
    int64_t n = fedc_dataset_num_clients(ds);
    int64_t *sizes = malloc((size_t)n * sizeof *sizes);
    if (!sizes) {
        fprintf(stderr, "fedc data info: out of memory for %lld clients\n", (long long)n);
        return false;
    }
    for (int64_t i = 0; i < n; i++) sizes[i] = fedc_dataset_client_examples(ds, i);
    qsort(sizes, (size_t)n, sizeof *sizes, cmp_i64);
    double median = n % 2 ? (double)sizes[n / 2] : 0.5 * (double)(sizes[n / 2 - 1] + sizes[n / 2]);
    printf("examples per client: min %lld, median %.*f, mean %.1f, max %lld\n", (long long)sizes[0],
           median == (double)(int64_t)median ? 0 : 1, median,
           (double)fedc_dataset_total_examples(ds) / (double)n, (long long)sizes[n - 1]);
    print_histogram(sizes, n);
    free(sizes);
    return true;
}

/* One line per feature: name, kind, dtype and the shape of one example. */
static void print_feature(const fedc_feature *f, int64_t examples) {
    char shape[96] = "[";
    size_t used = 1;
    for (int d = 1; d < f->type.rank && used < sizeof shape; d++)
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%lld", d > 1 ? "," : "", (long long)f->type.dims[d]);
    if (used < sizeof shape) snprintf(shape + used, sizeof shape - used, "]");
    if (f->kind == FEDC_FEATURE_ARRAY) {
        printf("  %-14s array    %-5s %s\n", f->name, fedc_dtype_name(f->type.dtype), shape);
        return;
    }
    int64_t bytes = examples ? f->offsets[examples] - f->offsets[0] : 0;
    printf("  %-14s strings  %-5s [] (one string each, %.1f bytes on average)\n", f->name, "u8",
           examples ? (double)bytes / (double)examples : 0.0);
}

static int print_first_client(fedc_dataset *ds) {
    fedc_client_data *c = NULL;
    if (fedc_dataset_client(ds, 0, &c)) {
        fprintf(stderr, "fedc data info: %s\n", fedc_errmsg());
        return CLI_FAILED;
    }
    printf("first client \"%s\" (%lld example%s), features per example:\n", c->id, (long long)c->num_examples,
           c->num_examples == 1 ? "" : "s");
    for (int i = 0; i < c->num_features; i++) print_feature(&c->features[i], c->num_examples);
    fedc_client_data_destroy(c);
    return CLI_OK;
}

static int data_info(const char *path, fedc_data_format format) {
    fedc_dataset *ds = NULL;
    if (fedc_dataset_open(&ds, path, format)) {
        fprintf(stderr, "fedc data info: %s\n", fedc_errmsg());
        return CLI_FAILED;
    }
    int64_t n = fedc_dataset_num_clients(ds);
    printf("dataset:  %s\nformat:   %s (%s)\nclients:  %lld\nexamples: %lld\n", path,
           fedc_data_format_name(fedc_dataset_format(ds)), format == FEDC_FORMAT_AUTO ? "detected" : "given",
           (long long)n, (long long)fedc_dataset_total_examples(ds));
    int rc = 0;
    if (n > 0) rc = print_client_sizes(ds) ? print_first_client(ds) : 1;
    fedc_dataset_destroy(ds);
    return rc;
}

/* PATH and --format; 0, or the exit status of a bad command line. */
static int info_args(int argc, char **argv, const char **path, fedc_data_format *format) {
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--format")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "fedc data info: --format needs a value\n");
                return CLI_USAGE;
            }
            if (fedc_data_format_parse(argv[++i], format)) {
                fprintf(stderr, "fedc data info: --format: %s\n", fedc_errmsg());
                return CLI_USAGE;
            }
        } else if (!*path && argv[i][0] != '-' && argv[i][0]) {
            *path = argv[i];
        } else {
            fprintf(stderr, "fedc data info: unexpected argument '%s' (see fedc data info --help)\n", argv[i]);
            return CLI_USAGE;
        }
    }
    if (*path) return 0;
    fprintf(stderr, "fedc data info: needs PATH (see fedc data info --help)\n");
    return CLI_USAGE;
}

int fedc_cli_data(int argc, char **argv) {
    bool info = argc > 0 && !strcmp(argv[0], "info");
    if (argc > 0 && (info || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) && cli_wants_help(argc, argv)) {
        printf(usage, fedc_data_formats());
        return CLI_OK;
    }
    if (!info) {
        fprintf(stderr, "fedc data: %s%s%s (the one is info; see fedc data --help)\n",
                argc ? "unknown subcommand '" : "needs a subcommand", argc ? argv[0] : "", argc ? "'" : "");
        return CLI_USAGE;
    }
    const char *path = NULL;
    fedc_data_format format = FEDC_FORMAT_AUTO;
    int rc = info_args(argc - 1, argv + 1, &path, &format);
    return rc ? rc : data_info(path, format);
}
