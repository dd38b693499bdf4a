/* The small data sets of data_fixtures.h: each writer draws its set from its own
 * xorshift stream (not the harness's, so that a test's random inputs do not
 * depend on which sets it asked for) and counts what it wrote. */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include "data_fixtures.h"

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "harness.h"

/* ------------------------------------------------------------ drawing -- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}
static double unit(rng *r) { return (double)(next(r) >> 11) / 9007199254740992.0; } /* [0, 1) */
static int below(rng *r, int n) { return (int)(next(r) % (uint64_t)n); }
static bool chance(rng *r, double p) { return unit(r) < p; }

/* ------------------------------------------------------------ writing -- */

/* Output to a plain or a gzipped file, with the first error kept. */
typedef struct out {
    FILE *f;
    gzFile gz;
    bool failed;
} out;

static bool out_open(out *o, const char *path, bool gz) {
    memset(o, 0, sizeof *o);
    if (gz) o->gz = gzopen(path, "wb6");
    else o->f = fopen(path, "w");
    if (!o->f && !o->gz) fprintf(stderr, "    fixture: cannot write %s: %s\n", path, strerror(errno));
    return o->f || o->gz;
}

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof buf) o->failed = true;
    else if (o->gz) o->failed |= gzwrite(o->gz, buf, (unsigned)n) != n;
    else o->failed |= fwrite(buf, 1, (size_t)n, o->f) != (size_t)n;
}

static int out_close(out *o, const char *path) {
    bool bad = o->failed;
    if (o->gz) bad |= gzclose(o->gz) != Z_OK;
    if (o->f) bad |= fclose(o->f) != 0;
    if (bad) fprintf(stderr, "    fixture: writing %s failed\n", path);
    return bad ? -1 : 0;
}

int fedc_test_make_dirs(const char *path) {
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0700) && errno != EEXIST) return -1;
        *s = '/';
    }
    if (mkdir(p, 0700) && errno != EEXIST) {
        fprintf(stderr, "    fixture: cannot make %s: %s\n", p, strerror(errno));
        return -1;
    }
    return 0;
}

/* A JSON string of LEAF's text: only quotes and backslashes need escapes here. */
static void put_json_string(out *o, const char *s, size_t n) {
    char buf[256];
    size_t k = 0;
    buf[k++] = '"';
    for (size_t i = 0; i < n && k < sizeof buf - 3; i++) {
        if (s[i] == '"' || s[i] == '\\') buf[k++] = '\\';
        buf[k++] = s[i];
    }
    buf[k++] = '"';
    buf[k] = 0;
    put(o, "%s", buf);
}

/* A client of `n` examples counted (its count kept for the first 16). */
static void add_client(fedc_test_fixture_facts *facts, int64_t n) {
    int slots = (int)(sizeof facts->counts / sizeof facts->counts[0]);
    if (facts->clients < slots) facts->counts[facts->clients] = n;
    facts->clients++, facts->examples += n;
}

/* ------------------------------------------------------- heart disease -- */

/* Four hospitals as UCI's (their rows about a sixth of the real ones, their share
 * of disease alike); the label (0, or a severity 1-4) follows the risk factors,
 * Cleveland writes "63.0"-style numbers and the others integers and "?" as UCI's
 * processed files do. */
static const struct hospital {
    const char *name;
    int rows;
    double sick;    /* share of patients with disease */
    double missing; /* chance that slope, ca or thal is "?" */
} hospitals[] = {{"cleveland", 50, 0.46, 0.02}, {"hungarian", 48, 0.36, 0.6},
                 {"switzerland", 20, 0.93, 0.5},  {"va", 34, 0.75, 0.5}};

static void put_field(out *o, bool decimal, bool missing, double v, bool last) {
    const char *sep = last ? "" : ",";
    if (missing) put(o, "?%s", sep);
    else if (decimal) put(o, "%.1f%s", v, sep);
    else if (v == (int)v) put(o, "%d%s", (int)v, sep);
    else put(o, "%g%s", v, sep);
}

static int write_heart(const char *dir, fedc_test_fixture_facts *facts) {
    rng r = {0x4845415254ull}; /* "HEART" */
    double age_sum = 0;
    for (int h = 0; h < 4; h++) {
        const struct hospital *H = &hospitals[h];
        char path[1100];
        snprintf(path, sizeof path, "%s/processed.%s.data", dir, H->name);
        out o;
        if (!out_open(&o, path, false)) return -1;
        bool dec = h == 0;
        for (int i = 0; i < H->rows; i++) {
            bool ill = chance(&r, H->sick), sick = ill != chance(&r, 0.15); /* risk factors, mostly of the label's kind */
            int label = ill ? 1 + below(&r, 4) : 0;
            double f[13] = {
                (double)(38 + below(&r, 30) + (sick ? 6 : 0)),            /* age */
                chance(&r, sick ? 0.9 : 0.6),                            /* sex */
                sick ? (chance(&r, 0.75) ? 4 : 1 + below(&r, 3)) : (chance(&r, 0.2) ? 4 : 1 + below(&r, 3)),
                (double)(105 + below(&r, 50) + (sick ? 10 : 0)),          /* trestbps */
                h == 2 ? 0 : (double)(170 + below(&r, 160)),              /* chol (Switzerland's are 0) */
                chance(&r, 0.15),                                        /* fbs */
                (double)below(&r, 3),                                    /* restecg */
                (double)(sick ? 100 + below(&r, 50) : 140 + below(&r, 55)), /* thalach */
                chance(&r, sick ? 0.65 : 0.12),                          /* exang */
                (double)(sick ? below(&r, 40) : below(&r, 12)) / 10,     /* oldpeak */
                (double)(sick ? 2 + below(&r, 2) : 1 + below(&r, 2)),    /* slope */
                (double)(sick ? below(&r, 4) : chance(&r, 0.2)),         /* ca */
                sick ? (chance(&r, 0.7) ? 7 : 3) : (chance(&r, 0.85) ? 3 : 6), /* thal */
            };
            for (int k = 0; k < 13; k++) {
                bool missing = (k >= 10 && chance(&r, H->missing)) || (k == 3 && h > 0 && chance(&r, 0.05));
                put_field(&o, dec, missing, f[k], false);
                facts->missing += missing;
            }
            put(&o, "%d\n", label);
            facts->examples++, facts->sick += ill, age_sum += f[0];
        }
        facts->counts[h] = H->rows; /* 4 of the 16 */
        if (out_close(&o, path)) return -1;
    }
    facts->clients = 4;
    facts->counted = facts->examples;
    facts->first_id = hospitals[0].name, facts->first_examples = hospitals[0].rows;
    facts->mean_age = age_sum / (double)facts->examples;
    return 0;
}

/* ------------------------------------------------------------- FEMNIST -- */

/* 55 writers in eleven files (LEAF's names), each with the digits and a few of
 * the 52 letters (non-IID as LEAF's writers), split 90/10 as LEAF's are; writers of
 * both of FedJAX's domains (2100-2599 and the others). A class is a fixed set of
 * dark strokes on a white (1.0) page; each image redraws a few pixels. */
#define FEMNIST_FILES 11
#define FEMNIST_WRITERS 5 /* per file */

static bool stroke(int label, int pixel) {
    rng r = {0x9E3779B97F4A7C15ull ^ ((uint64_t)(label + 1) * 784 + (uint64_t)pixel) * 0xBF58476D1CE4E5B9ull};
    for (int i = 0; i < 3; i++) next(&r);
    return below(&r, 5) == 0;
}

static void put_image(out *o, rng *r, int label, double *sum) {
    put(o, "[");
    for (int p = 0; p < 784; p++) {
        bool dark = stroke(label, p) != chance(r, 0.04);
        int v = dark ? below(r, 90) : 255 - below(r, 20) * (below(r, 8) == 0);
        double x = v / 255.0;
        if (sum) *sum += (double)(float)x;
        if (v == 255) put(o, "%s1.0", p ? ", " : "");
        else put(o, "%s%.17g", p ? ", " : "", x);
    }
    put(o, "]");
}

static int write_femnist(const char *dir, bool train, fedc_test_fixture_facts *facts) {
    static char first_ids[2][32]; /* train, test */
    char *first_id = first_ids[train];
    for (int f = 0; f < FEMNIST_FILES; f++) {
        char path[1100];
        snprintf(path, sizeof path, "%s/all_data_%d_niid_05_keep_0_%s_9.json.gz", dir, f, train ? "train" : "test");
        out o;
        if (!out_open(&o, path, true)) return -1;
        char ids[FEMNIST_WRITERS][32];
        int counts[FEMNIST_WRITERS];
        for (int w = 0; w < FEMNIST_WRITERS; w++) {
            int writer = f * FEMNIST_WRITERS + w;
            snprintf(ids[w], sizeof ids[w], "f%04d_%02d", writer % 2 ? 2100 + 37 * writer : 3100 + 41 * writer,
                     writer % 50);
            counts[w] = train ? 8 + writer % 5 : 1 + writer % 2;
        }
        put(&o, "{\"users\": [");
        for (int w = 0; w < FEMNIST_WRITERS; w++) put(&o, "%s\"%s\"", w ? ", " : "", ids[w]);
        put(&o, "], \"num_samples\": [");
        for (int w = 0; w < FEMNIST_WRITERS; w++) put(&o, "%s%d", w ? ", " : "", counts[w]);
        put(&o, "], \"user_data\": {");
        for (int w = 0; w < FEMNIST_WRITERS; w++) {
            int writer = f * FEMNIST_WRITERS + w;
            rng r = {(uint64_t)(writer + 1) * 0x2545F4914F6CDD1Dull + (train ? 0 : 7)};
            bool first = f == 0 && w == 0;
            int32_t labels[64];
            for (int k = 0; k < counts[w]; k++) /* digits for most, as LEAF's writers, else the writer's letters */
                labels[k] = chance(&r, 0.6) ? below(&r, 10) : 10 + (writer * 5 + below(&r, 6) * 11) % 52;
            put(&o, "%s\"%s\": {\"x\": [", w ? ", " : "", ids[w]);
            for (int k = 0; k < counts[w]; k++) {
                if (k) put(&o, ", ");
                put_image(&o, &r, labels[k], first ? &facts->first_x_sum : NULL);
            }
            put(&o, "], \"y\": [");
            for (int k = 0; k < counts[w]; k++) put(&o, "%s%d", k ? ", " : "", labels[k]);
            put(&o, "]}");
            if (first) {
                memcpy(first_id, ids[w], sizeof first_ids[0]);
                facts->first_id = first_id, facts->first_examples = counts[w];
                for (int k = 0; k < 4 && k < counts[w]; k++) facts->first_y[k] = labels[k];
            }
            add_client(facts, counts[w]);
        }
        put(&o, "}}\n");
        if (out_close(&o, path)) return -1;
    }
    facts->counted = facts->examples;
    return 0;
}

/* ---------------------------------------------------------- Shakespeare -- */

/* Roles whose lines are drawn from a small word list with the capitals and
 * punctuation of verse; LEAF's sets hold each role's 80-character windows, the
 * first 90% of them for training and the rest, after the 79 windows that
 * straddle the seam (dropped, but counted in the test file's "num_samples"), for
 * testing; the raw files hold the lines, some indented and some blank. */
static const char *const roles[] = {"MUCH_ADO_ABOUT_NOTHING_BEATRICE", "MUCH_ADO_ABOUT_NOTHING_BENEDICK",
                                    "THE_TEMPEST_ARIEL", "THE_TRAGEDY_OF_KING_LEAR_KENT",
                                    "THE_TRAGEDY_OF_KING_LEAR_PHILOSTRATE"}; /* sorted, as files are read */
#define ROLES 5
static const char *const words[] = {"thou", "art", "my", "lord", "good", "sweet", "what", "is", "the", "night",
                                    "and", "I", "will", "not", "love", "her", "with", "so", "a", "heart",
                                    "come", "hither", "speak", "fair", "king", "of", "all", "be", "it", "me"};

/* Role `role`'s lines (at most `max`); returns how many. */
static int role_lines(int role, char lines[][96], int max) {
    rng r = {0x5348414B45ull + (uint64_t)role * 7919}; /* "SHAKE" */
    int n = 40 + role * 12;
    if (n > max) n = max;
    for (int i = 0; i < n; i++) {
        int len = 0, count = 3 + below(&r, 8);
        for (int w = 0; w < count; w++) {
            const char *word = words[below(&r, 30)];
            len += snprintf(lines[i] + len, (size_t)(96 - len), "%s%s", w ? " " : "", word);
            if (w == 0 && lines[i][0] >= 'a') lines[i][0] = (char)(lines[i][0] - 'a' + 'A');
        }
        static const char *const ends[] = {".", ",", ";", "!", "?", "'s."};
        snprintf(lines[i] + len, (size_t)(96 - len), "%s", ends[below(&r, 6)]);
    }
    return n;
}

static int write_shakespeare_raw(const char *dir, fedc_test_fixture_facts *facts) {
    for (int i = 0; i < ROLES; i++) {
        char path[1100], lines[96][96];
        snprintf(path, sizeof path, "%s/%s.txt", dir, roles[i]);
        int n = role_lines(i, lines, 96);
        out o;
        if (!out_open(&o, path, false)) return -1;
        for (int k = 0; k < n; k++) put(&o, "%s%s\n%s", k % 5 == 3 ? "    " : "", lines[k], k % 7 == 6 ? "\n" : "");
        if (out_close(&o, path)) return -1;
        add_client(facts, n);
    }
    facts->counted = facts->examples;
    facts->first_id = roles[0], facts->first_examples = facts->counts[0];
    return 0;
}

static int write_shakespeare_leaf(const char *dir, bool train, fedc_test_fixture_facts *facts) {
    static char first_xs[2][81]; /* train, test */
    char *first_x = first_xs[train];
    char path[1100];
    snprintf(path, sizeof path, "%s/all_data_niid_023_keep_64_%s_9.json.gz", dir, train ? "train" : "test");
    out o;
    if (!out_open(&o, path, true)) return -1;
    static char texts[ROLES][96 * 97];
    int64_t begin[ROLES], count[ROLES], listed[ROLES];
    for (int i = 0; i < ROLES; i++) {
        char lines[96][96];
        int n = role_lines(i, lines, 96), len = 0;
        for (int k = 0; k < n; k++) len += snprintf(texts[i] + len, sizeof texts[i] - (size_t)len, "%s%s", k ? " " : "", lines[k]);
        int64_t windows = len - 80, train_n = windows * 9 / 10;
        begin[i] = train ? 0 : train_n + 79;
        count[i] = train ? train_n : windows - train_n - 79;
        listed[i] = train ? count[i] : count[i] + 79;
    }
    put(&o, "{\"users\": [");
    for (int i = 0; i < ROLES; i++) put(&o, "%s\"%s\"", i ? ", " : "", roles[i]);
    put(&o, "], \"num_samples\": [");
    for (int i = 0; i < ROLES; i++) put(&o, "%s%lld", i ? ", " : "", (long long)listed[i]);
    put(&o, "], \"user_data\": {");
    for (int i = 0; i < ROLES; i++) {
        const char *t = texts[i] + begin[i];
        put(&o, "%s\"%s\": {\"x\": [", i ? ", " : "", roles[i]);
        for (int64_t k = 0; k < count[i]; k++) {
            if (k) put(&o, ", ");
            put_json_string(&o, t + k, 80);
        }
        put(&o, "], \"y\": [");
        for (int64_t k = 0; k < count[i]; k++) {
            put(&o, "%s", k ? ", " : "");
            put_json_string(&o, t + k + 80, 1);
        }
        put(&o, "]}");
        add_client(facts, count[i]);
        facts->counted += listed[i];
    }
    put(&o, "}}\n");
    memcpy(first_x, texts[0] + begin[0], 80);
    facts->first_id = roles[0], facts->first_examples = count[0];
    facts->first_x = first_x, facts->first_next = texts[0][begin[0] + 80];
    return out_close(&o, path);
}

/* ---------------------------------------------------------------- sets -- */

struct set {
    const char *name;
    int (*write)(const char *dir, bool train, fedc_test_fixture_facts *facts);
    bool train;
};

static int heart(const char *d, bool t, fedc_test_fixture_facts *f) { return (void)t, write_heart(d, f); }
static int raw(const char *d, bool t, fedc_test_fixture_facts *f) { return (void)t, write_shakespeare_raw(d, f); }

static const struct set sets[] = {
    {"heart-disease-uci", heart, false},
    {"femnist-leaf/train", write_femnist, true},
    {"femnist-leaf/test", write_femnist, false},
    {"shakespeare-leaf/train", write_shakespeare_leaf, true},
    {"shakespeare-leaf/test", write_shakespeare_leaf, false},
    {"shakespeare-leaf/raw_data/by_play_and_character", raw, false},
};
#define SETS (int)(sizeof sets / sizeof sets[0])

static int find_set(const char *name) {
    for (int i = 0; i < SETS; i++)
        if (!strcmp(sets[i].name, name)) return i;
    fprintf(stderr, "    fixture: no small set \"%s\"\n", name);
    return -1;
}

static fedc_test_fixture_facts facts[SETS];

int fedc_test_write_fixture(const char *root, const char *set) {
    int i = find_set(set);
    if (i < 0) return -1;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", root, set);
    if (fedc_test_make_dirs(dir)) return -1;
    memset(&facts[i], 0, sizeof facts[i]);
    return sets[i].write(dir, sets[i].train, &facts[i]);
}

/* ------------------------------------------------------- where they are -- */

static char root[64];
static char paths[SETS][1100];

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path), 0;
}
static void remove_root(void) { nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

const char *fedc_test_fixture(const char *set) {
    int i = find_set(set);
    if (i < 0) return NULL;
    if (paths[i][0]) return paths[i];
    if (!root[0]) {
        snprintf(root, sizeof root, "/tmp/fedc-data-XXXXXX");
        if (!mkdtemp(root)) {
            perror("mkdtemp");
            root[0] = 0;
            return NULL;
        }
        atexit(remove_root);
    }
    if (fedc_test_write_fixture(root, set)) return NULL;
    snprintf(paths[i], sizeof paths[i], "%s/%s", root, set);
    return paths[i];
}

fedc_test_fixture_facts fedc_test_fixture_facts_of(const char *set) {
    int i = find_set(set);
    if (i < 0 || (!facts[i].clients && !fedc_test_fixture(set))) return (fedc_test_fixture_facts){0};
    return facts[i]; /* the same for every writing: the sets are drawn from fixed seeds */
}

const char *fedc_test_real_data(const char *set) {
    static _Thread_local char buf[1024];
    char rel[512];
    snprintf(rel, sizeof rel, "../shared/data/%s", set);
    snprintf(buf, sizeof buf, "%s", fedc_test_path(rel));
    struct stat sb;
    if (stat(buf, &sb) == 0) return buf;
    fprintf(stderr, "    note: %s is absent: its checks on the real data are not run\n", buf);
    return NULL;
}

const char *fedc_test_data(const char *set) {
    static char real[SETS][1100];
    int i = find_set(set);
    if (i < 0) return NULL;
    char rel[512];
    snprintf(rel, sizeof rel, "../shared/data/%s", set);
    snprintf(real[i], sizeof real[i], "%s", fedc_test_path(rel));
    struct stat sb;
    return stat(real[i], &sb) == 0 ? real[i] : fedc_test_fixture(set);
}

bool fedc_test_data_is_real(const char *set) {
    const char *path = fedc_test_data(set);
    return path && !strstr(path, "/fedc-data-");
}
