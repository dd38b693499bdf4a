/* fedc_test_data_dir DIR: lays out DIR as ../shared/data is laid out, for the
 * tests that are scripts (tests/cli.sh, cli_resume.sh, deploy.sh, the examples):
 * each set a link to the real one where ../shared/data has it, else the small set
 * of data_fixtures.h, whose clients and examples DIR/facts.txt gives as lines
 * "<set> clients N" and "<set> examples N". Run from the source tree (ctest's
 * fixture test_data does); DIR is made anew. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data_fixtures.h"
#include "harness.h"

static const char *const sets[] = {"heart-disease-uci", "femnist-leaf/train", "femnist-leaf/test",
                                   "shakespeare-leaf/train", "shakespeare-leaf/test",
                                   "shakespeare-leaf/raw_data/by_play_and_character"};

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path), 0;
}

/* DIR/<set> as a link to the real set . */
static int link_real(const char *dir, const char *set, const char *real) {
    char abs[4096], at[1100], parent[1100];
    if (!realpath(real, abs)) return perror(real), -1;
    snprintf(at, sizeof at, "%s/%s", dir, set);
    snprintf(parent, sizeof parent, "%s", at);
    *strrchr(parent, '/') = 0;
    if (fedc_test_make_dirs(parent) || symlink(abs, at) != 0) return perror(at), -1;
    printf("%s: the real set, %s\n", at, abs);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: %s DIR\n", argv[0]), 2;
    const char *dir = argv[1];
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    char path[1100];
    snprintf(path, sizeof path, "%s/facts.txt", dir);
    FILE *facts = fedc_test_make_dirs(dir) ? NULL : fopen(path, "w");
    if (!facts) return perror(path), 1;
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        const char *real = fedc_test_real_data(sets[i]);
        if (real ? link_real(dir, sets[i], real) : fedc_test_write_fixture(dir, sets[i])) return 1;
        if (real) continue;
        fedc_test_fixture_facts f = fedc_test_fixture_facts_of(sets[i]);
        fprintf(facts, "%s clients %d\n%s examples %lld\n", sets[i], f.clients, sets[i], (long long)f.examples);
        printf("%s/%s: a small set\n", dir, sets[i]);
    }
    return fclose(facts) ? perror(path), 1 : 0;
}
