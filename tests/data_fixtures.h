/*
 * Small data sets in the real formats of ../shared/data (its README.md), written by
 * the tests themselves, so that every test runs on a plain clone of fedc; the real
 * data, where ../shared/data has it, adds runs and is needed for none.
 *
 * A set is named by its path under ../shared/data:
 *
 *     heart-disease-uci                           processed.<hospital>.data CSV files
 *     femnist-leaf/train, femnist-leaf/test       LEAF JSON, gzipped, 784 pixels/255
 *     shakespeare-leaf/train, shakespeare-leaf/test             LEAF JSON, gzipped
 *     shakespeare-leaf/raw_data/by_play_and_character           <PLAY>_<ROLE>.txt
 *
 * The small sets are drawn from a fixed seed (the same bytes every run) with a
 * signal a model can learn (heart disease from its risk factors, a FEMNIST
 * character from its strokes), and fedc_test_fixture_facts says what was written,
 * counted as it was written, for tests to check the readers against.
 */
#ifndef FEDC_TEST_DATA_FIXTURES_H
#define FEDC_TEST_DATA_FIXTURES_H

#include <stdbool.h>
#include <stdint.h>

/* The real set, ../shared/data/<set> (under FEDC_SOURCE_DIR, else the working
 * directory), or NULL with a note (not a skip: the small set still runs) when it
 * is absent. */
const char *fedc_test_real_data(const char *set);

/* The small set, written (once per process) under a fresh /tmp/fedc-data-XXXXXX
 * that is removed at exit; NULL, with a message, if it cannot be written. */
const char *fedc_test_fixture(const char *set);

/* The real set where it is present, else the small one: for tests whose checks
 * hold on both (a loss that falls, two runs alike). */
const char *fedc_test_data(const char *set);

/* Whether fedc_test_data(set) is the real set: for the few checks whose numbers
 * are the real data's (a count, the learning rate at which a run overflows). */
bool fedc_test_data_is_real(const char *set);

/* Writes the small set `set` as root/<set>; 0 on success, -1 with a message. */
int fedc_test_write_fixture(const char *root, const char *set);

/* mkdir -p: 0, or -1 with a message. */
int fedc_test_make_dirs(const char *path);

/* What a small set holds, counted as it was written. */
typedef struct fedc_test_fixture_facts {
    int clients;            /* files or writers or roles */
    int64_t examples;       /* rows, images, windows; lines of the raw text */
    int64_t counted;        /* LEAF's "num_samples" summed (more than examples by
                               the seam windows of Shakespeare's test split) */
    const char *first_id;   /* the first client's id, in the set's order */
    int64_t first_examples; /* its examples */
    double first_x_sum;     /* FEMNIST: the sum of its pixels as f32 */
    int32_t first_y[4];     /* FEMNIST: its first labels */
    const char *first_x;    /* Shakespeare LEAF: its first 80 characters... */
    char first_next;        /* ...and the character after them */
    int64_t counts[16];     /* the first 16 clients' examples, in the set's order */
    int64_t missing;        /* heart disease: fields written as "?" */
    int64_t sick;           /* heart disease: rows with a label above 0 */
    double mean_age;        /* heart disease: column 1's mean over every row */
} fedc_test_fixture_facts;

fedc_test_fixture_facts fedc_test_fixture_facts_of(const char *set);

#endif
