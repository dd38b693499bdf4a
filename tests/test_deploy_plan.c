/* Plans (fedc/deploy.h): fedc_plan_build writes the round and initial state
 * fedc train would run, the reader gives them back and verifies everything, and
 * bad plans (a changed file, a wrong field, a type or version that differs,
 * random damage) are refused with a message naming file and field, never a
 * crash (a bounded random loop here; fuzz/fuzz_plan.c runs longer). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "deploy_case.h"
#include "deploy/deploy.h" /* fedc__sha256 */

static char data_path[400], plan_dir[400];

static bool setup(void) {
    if (data_path[0]) return true;
    if (!fedc_test_tmpdir("deploy-plan")) return false;
    snprintf(data_path, sizeof data_path, "%s", fedc_test_tmp("case.json"));
    snprintf(plan_dir, sizeof plan_dir, "%s", fedc_test_tmp("plan"));
    if (!write_case_data(data_path)) return false;
    fedc_train_config c;
    case_config(&c, data_path, plan_dir, 2, 3);
    fedc_status st = fedc_plan_build(&c, plan_dir);
    if (st) fprintf(stderr, "plan build: %s\n", fedc_errmsg());
    return st == FEDC_OK;
}

/* The round and the initial state are those of the training job: the round
 * program fedc_algorithm_round makes for the model with the job's steps, and
 * server_init on the model initialised from the seed. */
static void test_build_and_read(void) {
    if (!setup()) {
        CHECK_MSG(false, "cannot set up the plan");
        return;
    }
    fedc_plan *p = NULL;
    CHECK_OK(fedc_plan_read(plan_dir, &p));
    if (!p) return;
    CHECK_EQ_INT(strlen(fedc_plan_hash(p)), 64);
    CHECK(!strcmp(fedc_plan_setting(p, "algorithm"), "fedavg"));
    CHECK(!strcmp(fedc_plan_setting(p, "task"), "emnist"));
    CHECK(!strcmp(fedc_plan_setting(p, "population"), "5"));
    CHECK(!strcmp(fedc_plan_setting(p, "max_steps"), "5")); /* 9 examples in batches of 2 */
    CHECK(!strcmp(fedc_plan_setting(p, "seed"), "7"));
    CHECK(fedc_plan_setting(p, "nonesuch") == NULL);

    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "logistic", NULL));
    fedc_train_config c;
    case_config(&c, data_path, plan_dir, 2, 3);
    fedc_algorithm a = c.algorithm;
    a.max_steps = 5;
    fedc_program *round = NULL;
    char *want = NULL, *got = NULL;
    CHECK_OK(fedc_algorithm_round(m, &a, &round));
    CHECK_OK(fedc_program_to_string(round, &want));
    CHECK_OK(fedc_program_to_string(fedc_plan_round(p), &got));
    CHECK_MSG(want && got && !strcmp(want, got), "the plan's round is not the training job's");

    float *params = malloc((size_t)fedc_model_size(m) * sizeof *params);
    fedc_server_state *s = NULL;
    CHECK_OK(fedc_model_init(m, 7, params));
    CHECK_OK(fedc_server_state_create(&s, m, &a, params));
    float *back = malloc((size_t)fedc_model_size(m) * sizeof *back);
    CHECK_OK(fedc_server_state_params(s, back));
    int matched = 0;
    for (int i = 0; i < fedc_plan_num_tensors(p); i++) {
        fedc_tensor_entry e = fedc_plan_tensor(p, i);
        for (int k = 0; k < fedc_model_num_params(m); k++) {
            char name[300];
            snprintf(name, sizeof name, "server/params/%s", fedc_model_param_name(m, k));
            if (strcmp(name, e.name)) continue;
            CHECK_MSG(!memcmp(e.data, back + fedc_model_param_offset(m, k), fedc_type_bytes(&e.type)),
                      "tensor %s differs from the model initialised from the seed", e.name);
            matched++;
        }
    }
    CHECK_EQ_INT(matched, fedc_model_num_params(m));
    fedc_server_state_destroy(s);
    free(params), free(back);
    fedc_free(want), fedc_free(got);
    fedc_program_destroy(round);
    fedc_model_destroy(m);

    /* what a client is sent reads back as the same plan, without the model */
    fedc_plan_file files[128];
    int n = fedc_plan_files(p, files, 128);
    CHECK_EQ_INT(n, 2 + FEDC_PHASE_COUNT);
    fedc_plan *q = NULL;
    CHECK_OK(fedc_plan_from_files(files, n, "sent", &q));
    if (q) {
        CHECK(!strcmp(fedc_plan_hash(q), fedc_plan_hash(p)));
        CHECK(fedc_plan_tensor(q, 0).data == NULL);
    }
    fedc_plan_destroy(q);
    fedc_plan_destroy(p);
}

/* ---------------------------------------------------------- bad plans -- */

typedef struct copy {
    fedc_plan_file file[128];
    char *data[128];
    int n;
} copy;

/* The files of the plan in dir, copied so that a test may damage them. */
static bool copy_dir(const char *dir, copy *c) {
    fedc_plan *p = NULL;
    if (fedc_plan_read(dir, &p)) return false;
    fedc_plan_file f[128];
    c->n = fedc_plan_files(p, f, 128);
    for (int i = 0; i < c->n; i++) {
        c->data[i] = malloc(f[i].size + 64);
        memcpy(c->data[i], f[i].data, f[i].size);
        c->file[i] = (fedc_plan_file){strdup(f[i].name), c->data[i], f[i].size};
    }
    fedc_plan_destroy(p);
    return true;
}

static bool copy_plan(copy *c) { return setup() && copy_dir(plan_dir, c); }

/* The copy's file named `name`, or -1. */
static int file_index(const copy *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->file[i].name, name)) return i;
    return -1;
}

static void free_copy(copy *c) {
    for (int i = 0; i < c->n; i++) free((char *)c->file[i].name), free(c->data[i]);
}

/* File i (0: plan.txt) with its first `from` replaced by `to` (NUL-terminated result). */
static void edit_file(copy *c, int i, const char *from, const char *to) {
    char *s = malloc(c->file[i].size + strlen(to) + 1);
    memcpy(s, c->data[i], c->file[i].size);
    s[c->file[i].size] = '\0';
    char *at = strstr(s, from);
    if (!at) {
        fedc_test_fail(__FILE__, __LINE__, "%s has no \"%s\"", c->file[i].name, from);
        free(s);
        return;
    }
    char *out = malloc(c->file[i].size + strlen(to) + 64);
    size_t head = (size_t)(at - s);
    memcpy(out, s, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    free(c->data[i]), free(s);
    c->data[i] = out;
    c->file[i].data = out;
    c->file[i].size = strlen(out);
}

static void edit_manifest(copy *c, const char *from, const char *to) { edit_file(c, 0, from, to); }

static void refused(const char *from, const char *to, fedc_status want, const char *needle) {
    copy c;
    if (!copy_plan(&c)) {
        CHECK_MSG(false, "cannot read the plan");
        return;
    }
    edit_manifest(&c, from, to);
    fedc_plan *p = NULL;
    fedc_status st = fedc_plan_from_files(c.file, c.n, "bad", &p);
    CHECK_MSG(st == want && strstr(fedc_errmsg(), needle), "\"%s\" -> \"%s\": %s: %s (wanted \"%s\")", from, to,
              fedc_status_str(st), fedc_errmsg(), needle);
    CHECK(p == NULL);
    fedc_plan_destroy(p);
    free_copy(&c);
}

static void test_bad_manifest(void) {
    refused("fedc plan 2", "fedc plan 1", FEDC_EUNSUPPORTED,
            "bad/plan.txt:1: plan format 1; this fedc reads format 2 (build the plan again with this fedc's");
    refused("fedc plan 2", "fedc plan", FEDC_EPARSE, "bad/plan.txt:1: not a plan manifest");
    refused("exchanges 1", "exchanges 1\nfrobnicate 3", FEDC_EPARSE, "bad/plan.txt:5: unknown field \"frobnicate\"");
    refused("exchanges 1", "exchanges 99", FEDC_EPARSE, "plan.txt:4: exchanges needs a number from 1 to 16");
    refused("hash sha256 ", "hash sha256 0", FEDC_EPARSE, "plan.txt:2: hash needs \"sha256\" and 64");
    refused("round round.fedc", "round ../round.fedc", FEDC_EPARSE, "file name \"../round.fedc\" is not a plain name");
    refused("round round.fedc", "round other.fedc", FEDC_ENOTFOUND, "bad: no file \"other.fedc\"");
    refused("phase 0 client_work", "phase 0 server_result", FEDC_EPARSE, "phase should be client_work here");
    refused("setting seed 7", "setting seed", FEDC_EPARSE, "setting needs KEY VALUE");
    refused("setting seed 7", "setting seed 7\nsetting seed 8", FEDC_EPARSE, "setting \"seed\" is given twice");
    refused("f32[784,62]@server", "f32[784,61]@server", FEDC_EPARSE, "is f32[784,61]@server, but the round's input is f32[784,62]@server");
    refused("tensor \"server/params/", "tensor \"server/paramz/", FEDC_EPARSE, "is not a server/ input of the round");
    refused("\ntensor ", "\nsetting x 1\nfoo ", FEDC_EPARSE, "unknown field \"foo\"");
    /* a program changed after the plan was made: its hash no longer matches */
    copy c;
    if (copy_plan(&c)) {
        c.data[1][0] ^= 1;
        fedc_plan *p = NULL;
        CHECK_ERR(fedc_plan_from_files(c.file, c.n, "bad", &p), FEDC_EPARSE, "but plan.txt says");
        free_copy(&c);
    }
}

/* The model in the directory must hold the tensors the manifest lists. */
static void test_bad_model(void) {
    if (!setup()) return;
    char path[500], saved[500];
    snprintf(path, sizeof path, "%s/model.safetensors", plan_dir);
    snprintf(saved, sizeof saved, "%s/model.saved", plan_dir);
    CHECK(rename(path, saved) == 0);
    fedc_plan *p = NULL;
    CHECK_ERR(fedc_plan_read(plan_dir, &p), FEDC_EIO, "model.safetensors: cannot open");
    float w = 1;
    fedc_tensor_entry one = {"server/params/dense/b", fedc_type_make(FEDC_F32, 0, NULL), &w};
    CHECK_OK(fedc_safetensors_write(path, &one, 1, NULL, 0));
    CHECK_ERR(fedc_plan_read(plan_dir, &p), FEDC_EPARSE, "1 tensors, but plan.txt lists 2");
    CHECK(rename(saved, path) == 0);
    CHECK_OK(fedc_plan_read(plan_dir, &p));
    fedc_plan_destroy(p);
}

/* Random damage to plan.txt and to program file `program` of the plan in dir:
 * always a status, never a crash, and never a plan accepted with a program
 * other than the one hashed. */
static void random_damage(const char *dir, const char *program) {
    copy c;
    if (!copy_dir(dir, &c)) {
        CHECK_MSG(false, "cannot read %s", dir);
        return;
    }
    int damaged = file_index(&c, program);
    CHECK(damaged > 0);
    fedc_test_seed(17);
    int accepted = 0;
    for (int iter = 0; damaged > 0 && iter < 3000; iter++) {
        int which = iter % 3 == 2 ? damaged : 0; /* plan.txt twice as often as the program */
        size_t size = c.file[which].size;
        char *orig = malloc(size + 1);
        memcpy(orig, c.data[which], size);
        int edits = 1 + (int)fedc_test_uniform(0, 4);
        for (int e = 0; e < edits && c.file[which].size > 0; e++) {
            size_t at = (size_t)fedc_test_uniform(0, (double)c.file[which].size);
            double kind = fedc_test_uniform(0, 1);
            if (kind < 0.6) c.data[which][at] = (char)(int)fedc_test_uniform(0, 256);
            else if (kind < 0.8) c.file[which].size = at;  /* truncated */
            else c.data[which][at] = "\n \"0f@[],%"[(int)fedc_test_uniform(0, 9)];
        }
        fedc_plan *p = NULL;
        fedc_status st = fedc_plan_from_files(c.file, c.n, "damaged", &p);
        CHECK(st == FEDC_OK || st == FEDC_EPARSE || st == FEDC_EUNSUPPORTED || st == FEDC_ENOTFOUND ||
              st == FEDC_EINVAL || st == FEDC_ETYPE);
        if (st == FEDC_OK) accepted++;
        bool changed = c.file[which].size != size || memcmp(orig, c.data[which], size);
        CHECK(st != FEDC_OK || which == 0 || !changed); /* a changed program never passes its hash */
        fedc_plan_destroy(p);
        memcpy(c.data[which], orig, size);
        c.file[which].size = size;
        free(orig);
    }
    fprintf(stderr, "    %d of 3000 damaged plans (%s) still valid (changes to blank space or a setting)\n", accepted,
            program);
    free_copy(&c);
}

static void test_random_damage(void) {
    if (setup()) random_damage(plan_dir, "0_server_prepare.fedc");
}

/* SHA-256's test vectors (FIPS 180-4): one block, two blocks, a million 'a's fed in pieces. */
static void test_sha256(void) {
    const char *in[] = {"abc", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", ""};
    const char *want[] = {"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
                          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"};
    char hex[65];
    for (int i = 0; i < 3; i++) {
        fedc__sha256 c;
        fedc__sha256_init(&c);
        fedc__sha256_add(&c, in[i], strlen(in[i]));
        fedc__sha256_hex(&c, hex);
        CHECK_MSG(!strcmp(hex, want[i]), "sha256(\"%s\") = %s", in[i], hex);
    }
    fedc__sha256 c;
    fedc__sha256_init(&c);
    char a[1001];
    memset(a, 'a', sizeof a);
    for (int i = 0; i < 1000; i++) fedc__sha256_add(&c, a, i % 2 ? 999 : 1001);
    fedc__sha256_hex(&c, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

/* The manifest `text`'s hash line set to the hash of the programs f[1..n). */
static void rehash(char *text, const fedc_plan_file *f, int n) {
    char *hash = strstr(text, "hash sha256 ");
    CHECK(hash != NULL);
    if (!hash) return;
    fedc__sha256 h;
    fedc__sha256_init(&h);
    for (int i = 1; i < n; i++) {
        char size[32];
        int k = snprintf(size, sizeof size, "%zu", f[i].size);
        fedc__sha256_add(&h, f[i].name, strlen(f[i].name) + 1);
        fedc__sha256_add(&h, size, (size_t)k + 1);
        fedc__sha256_add(&h, f[i].data, f[i].size);
    }
    char hex[65];
    fedc__sha256_hex(&h, hex);
    memcpy(hash + 12, hex, 64);
}

/* SCAFFOLD's plan holds its client state's initial value, which the reader
 * checks against the round's client/ inputs; a manifest without it is refused. */
static void test_client_state(void) {
    if (!setup()) return;
    fedc_train_config c;
    case_config(&c, data_path, plan_dir, 2, 3);
    c.algorithm.def = fedc_algorithm_find("scaffold");
    char dir[500];
    snprintf(dir, sizeof dir, "%s", fedc_test_tmp("scaffold"));
    CHECK_OK(fedc_plan_build(&c, dir));
    fedc_plan *p = NULL;
    CHECK_OK(fedc_plan_read(dir, &p));
    if (!p) return;
    const fedc_program *init = fedc_plan_client_init(p);
    CHECK(init != NULL);
    int state = 0;
    for (int i = 0; i < fedc_program_num_inputs(fedc_plan_round(p)); i++)
        state += !strncmp(fedc_program_input_name(fedc_plan_round(p), i), "client/", 7);
    CHECK(state == 2 && init && fedc_program_num_outputs(init) == state && fedc_program_num_inputs(init) == 0);
    fedc_plan_file f[128];
    int n = fedc_plan_files(p, f, 128);
    CHECK(!strcmp(f[n - 1].name, "client_init.fedc"));
    /* plan.txt without its client_init line, hashed again over the programs it still names */
    char *text = malloc(f[0].size + 1);
    memcpy(text, f[0].data, f[0].size);
    text[f[0].size] = '\0';
    char *line = strstr(text, "client_init client_init.fedc\n");
    CHECK(line != NULL);
    if (line) memmove(line, line + 29, strlen(line + 29) + 1);
    rehash(text, f, n - 1);
    f[0].data = text, f[0].size = strlen(text);
    fedc_plan *q = NULL;
    CHECK_ERR(fedc_plan_from_files(f, n - 1, "bad", &q), FEDC_EPARSE,
              "bad/plan.txt: the round keeps client state, but there is no client_init line");
    free(text);
    fedc_plan_destroy(p);
}

/* AgnosticFedAvg's meta/domain is planned (a client finds its own); with a
 * --client-domains file the plan carries the domains as the job found them
 * (domains.txt, hashed), and a file without every client is refused, naming it. */
static void test_build_refuses(void) {
    if (!setup()) return;
    fedc_train_config c;
    case_config(&c, data_path, plan_dir, 2, 3);
    c.algorithm.def = fedc_algorithm_find("agnostic_fedavg");
    CHECK_OK(fedc_plan_build(&c, fedc_test_tmp("agnostic")));
    fedc_plan *p = NULL;
    size_t size = 0;
    CHECK_OK(fedc_plan_read(fedc_test_tmp("agnostic"), &p));
    CHECK(p && fedc_program_find_input(fedc_plan_round(p), "meta/domain") != FEDC_NONE);
    CHECK(p && !fedc__plan_domains(p, &size));
    fedc_plan_destroy(p);
    char domains[600]; /* fedc_test_tmp's buffer is reused */
    snprintf(domains, sizeof domains, "%s", fedc_test_tmp("domains.csv"));
    FILE *f = fopen(domains, "w");
    CHECK(f && fprintf(f, "client_id,domain\nw0,1\nw1,0\nw2,1\nw3,0\nw4,1\n") > 0);
    if (f) fclose(f);
    c.client_domains = domains;
    CHECK_OK(fedc_plan_build(&c, fedc_test_tmp("agnostic2")));
    p = NULL;
    CHECK_OK(fedc_plan_read(fedc_test_tmp("agnostic2"), &p));
    const char *d = p ? fedc__plan_domains(p, &size) : NULL;
    CHECK(d && size == 25 && !memcmp(d, "w0,1\nw1,0\nw2,1\nw3,0\nw4,1\n", 25));
    fedc_plan_destroy(p);
    f = fopen(domains, "w");
    CHECK(f && fprintf(f, "w0,1\nw1,0\n") > 0);
    if (f) fclose(f);
    CHECK_ERR(fedc_plan_build(&c, fedc_test_tmp("agnostic3")), FEDC_EINVAL, "no domain for client \"w2\"");
    c.client_domains = NULL;
    c.algorithm.def = &fedc_algorithm_fedavg;
    c.data = fedc_test_tmp("absent.json");
    CHECK(fedc_plan_build(&c, fedc_test_tmp("absent")) != FEDC_OK);
}

/* A plan built with groups keeps their rule (setting "groups"), from which
 * fedc_plan_groups draws fedc train's partition again: contiguous ranges, or
 * Dirichlet shares keyed by the seed. A plan without has none; a groups file,
 * sampling per level and an algorithm with a group level of its own are
 * refused at build, with the reason. */
static void test_groups(void) {
    if (!setup()) return;
    fedc_train_config c;
    case_config(&c, data_path, plan_dir, 2, 3);
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc_dataset_open(&ds, data_path, FEDC_FORMAT_AUTO));
    const char *setting[] = {"2", "dirichlet:3:0.7"};
    for (int k = 0; k < 2 && ds; k++) {
        c.groups = 2 + k, c.groups_alpha = k ? 0.7 : 0;
        char dir[600];
        snprintf(dir, sizeof dir, "%s", fedc_test_tmp(k ? "grouped1" : "grouped0"));
        CHECK_OK(fedc_plan_build(&c, dir));
        fedc_plan *p = NULL;
        CHECK_OK(fedc_plan_read(dir, &p));
        int32_t *got = NULL, want[CASE_CLIENTS];
        int n = 0, wn = 0;
        if (p) CHECK_OK(fedc_plan_groups(p, &got, &n));
        CHECK_OK(fedc_train_client_groups(&c, ds, want, &wn));
        CHECK(p && !strcmp(fedc_plan_setting(p, "groups"), setting[k]));
        CHECK(got && n == c.groups && wn == n && !memcmp(got, want, sizeof want));
        fedc_free(got);
        fedc_plan_destroy(p);
    }
    fedc_dataset_destroy(ds);
    fedc_plan *p = NULL;
    int32_t *none = (int32_t *)&c;
    int n = -1;
    CHECK_OK(fedc_plan_read(plan_dir, &p));
    if (p) CHECK_OK(fedc_plan_groups(p, &none, &n));
    CHECK(none == NULL && n == 0);
    fedc_plan_destroy(p);
    c.groups_file = "groups.csv";
    CHECK_ERR(fedc_plan_build(&c, fedc_test_tmp("grouped2")), FEDC_EUNSUPPORTED, "--groups-file is not deployed yet");
    c.groups_file = NULL, c.groups_per_round = 1;
    CHECK_ERR(fedc_plan_build(&c, fedc_test_tmp("grouped2")), FEDC_EUNSUPPORTED, "sampling per level");
    c.groups_per_round = 0, c.algorithm.def = fedc_algorithm_find("hierfavg"); /* group_rounds=2 by default */
    CHECK_ERR(fedc_plan_build(&c, fedc_test_tmp("grouped2")), FEDC_EUNSUPPORTED,
              "plan: hierfavg with group_rounds=2 has a group level of its own (@groups)");
    /* with one group round, FedAvg's round: the programs of fedavg's plan (grouped0's) */
    c.algorithm.hparam[0] = 1, c.algorithm.hparam_set[0] = true, c.groups = 2, c.groups_alpha = 0;
    CHECK_OK(fedc_plan_build(&c, fedc_test_tmp("grouped2")));
    fedc_plan *flat = NULL, *hier = NULL;
    CHECK_OK(fedc_plan_read(fedc_test_tmp("grouped0"), &flat));
    CHECK_OK(fedc_plan_read(fedc_test_tmp("grouped2"), &hier));
    CHECK(flat && hier && !strcmp(fedc_plan_hash(flat), fedc_plan_hash(hier)) &&
          !strcmp(fedc_plan_setting(hier, "groups"), "2"));
    fedc_plan_destroy(flat), fedc_plan_destroy(hier);
}

/* ------------------------------------------------------ the warm start -- */

static char warm_dir[400];

/* HypCluster's plan (k-means++ on a cohort of 3 clients, 2 clusters). */
static bool warm_setup(void) {
    if (warm_dir[0]) return true;
    if (!setup()) return false;
    fedc_train_config c;
    case_config(&c, data_path, plan_dir, 2, 3);
    c.algorithm.def = &fedc_algorithm_hypcluster;
    snprintf(warm_dir, sizeof warm_dir, "%s", fedc_test_tmp("warm"));
    fedc_status st = fedc_plan_build(&c, warm_dir);
    if (st) fprintf(stderr, "warm plan build: %s\n", fedc_errmsg());
    return st == FEDC_OK;
}

/* The plan's warm start is the training job's (fedc_algorithm_warm_start on its
 * cohort of 3), split into two exchanges a center (the gathering sums of k-means++
 * and of the chosen client's model); what a client is sent reads back with it; a
 * plan of an algorithm without one holds none; a cohort above the population is
 * refused at build. */
static void test_warm_start(void) {
    if (!warm_setup()) {
        CHECK_MSG(false, "cannot set up the warm plan");
        return;
    }
    fedc_plan *p = NULL, *q = NULL;
    CHECK_OK(fedc_plan_read(warm_dir, &p));
    if (!p) return;
    CHECK_EQ_INT(fedc_plan_warm_clients(p), 3);
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "logistic", NULL));
    fedc_train_config c;
    case_config(&c, data_path, plan_dir, 2, 3);
    fedc_algorithm a = c.algorithm;
    a.def = &fedc_algorithm_hypcluster;
    a.max_steps = 5;
    fedc_program *warm = NULL;
    char *want = NULL, *got = NULL;
    CHECK_OK(fedc_algorithm_warm_start(m, &a, 3, &warm));
    CHECK(warm && fedc_plan_warm_start(p));
    if (warm && fedc_plan_warm_start(p)) {
        CHECK_OK(fedc_program_to_string(warm, &want));
        CHECK_OK(fedc_program_to_string(fedc_plan_warm_start(p), &got));
        CHECK_MSG(want && got && !strcmp(want, got), "the plan's warm start is not the training job's");
    }
    CHECK_EQ_INT(fedc_deployment_form_exchanges(fedc_plan_warm_form(p)), 4);
    fedc_plan_file f[128];
    int n = fedc_plan_files(p, f, 128);
    CHECK_EQ_INT(n, 2 + FEDC_PHASE_COUNT + 1 + 4 * FEDC_PHASE_COUNT);
    CHECK(!strcmp(f[2 + FEDC_PHASE_COUNT].name, "warm_start.fedc") && !strcmp(f[n - 1].name, "warm_3_server_result.fedc"));
    CHECK_OK(fedc_plan_from_files(f, n, "sent", &q));
    CHECK(q && !strcmp(fedc_plan_hash(q), fedc_plan_hash(p)) && fedc_plan_warm_clients(q) == 3);
    fedc_plan_destroy(q), fedc_plan_destroy(p);
    fedc_free(want), fedc_free(got);
    fedc_program_destroy(warm);
    fedc_model_destroy(m);

    CHECK_OK(fedc_plan_read(plan_dir, &p)); /* FedAvg's: none */
    CHECK(p && !fedc_plan_warm_start(p) && !fedc_plan_warm_form(p) && fedc_plan_warm_clients(p) == 0);
    fedc_plan_destroy(p);
    c.algorithm.def = &fedc_algorithm_hypcluster;
    c.clients_per_round = 9;
    CHECK_ERR(fedc_plan_build(&c, fedc_test_tmp("warm9")), FEDC_EINVAL,
              "hypcluster's warm start runs on --clients-per-round 9 clients, as fedc train's does, but the data has 5");
}

/* The warm plan with file `name`'s first `from` made `to` (the manifest
 * hashed again, so that the reader's later checks are reached): refused with
 * `want` and `needle`, or read (want FEDC_OK). */
static void warm_refused(const char *name, const char *from, const char *to, fedc_status want, const char *needle) {
    copy c;
    if (!warm_setup() || !copy_dir(warm_dir, &c)) {
        CHECK_MSG(false, "cannot read the warm plan");
        return;
    }
    int i = file_index(&c, name);
    CHECK(i >= 0);
    if (i >= 0) edit_file(&c, i, from, to);
    char *text = malloc(c.file[0].size + 1);
    memcpy(text, c.data[0], c.file[0].size);
    text[c.file[0].size] = '\0';
    rehash(text, c.file, c.n);
    free(c.data[0]);
    c.data[0] = text, c.file[0].data = text;
    fedc_plan *p = NULL;
    fedc_status st = fedc_plan_from_files(c.file, c.n, "bad", &p);
    CHECK_MSG(st == want && strstr(fedc_errmsg(), needle), "%s: \"%s\" -> \"%s\": %s: %s (wanted \"%s\")", name, from, to,
              fedc_status_str(st), fedc_errmsg(), needle);
    CHECK((p != NULL) == (want == FEDC_OK));
    fedc_plan_destroy(p);
    free_copy(&c);
}

/* A damaged warm start: its manifest lines, a phase or its program changed (and
 * hashed again) are refused with what and where. */
static void test_bad_warm(void) {
    warm_refused("plan.txt", "clients 3 exchanges 4", "clients 0 exchanges 4", FEDC_EPARSE,
                 "bad/plan.txt:10: warm_start needs FILE clients K exchanges E");
    warm_refused("plan.txt", "clients 3 exchanges 4", "clients 3 exchanges 5", FEDC_EPARSE,
                 "bad/plan.txt: no warm_phase (one per phase of each of the warm start's exchanges) line");
    warm_refused("plan.txt", "clients 3 exchanges 4", "clients 3 exchanges 3", FEDC_EPARSE,
                 "more warm phases than the warm start's exchanges hold");
    warm_refused("plan.txt", "warm_phase 1 client_work", "warm_phase 1 server_result", FEDC_EPARSE,
                 "warm_phase should be client_work here");
    warm_refused("plan.txt", "\nwarm_phase 0 server_prepare", "\nphase 1 server_prepare", FEDC_EPARSE,
                 "phase after warm_start or client_init");
    warm_refused("plan.txt", "\nwarm_start ", "\nwarm_phase 0 server_prepare x.fedc\nwarm_start ", FEDC_EPARSE,
                 "warm_phase comes after warm_start, before client_init");
    warm_refused("warm_1_client_work.fedc", "input", "input", FEDC_OK, ""); /* unchanged: still valid */
    warm_refused("warm_1_client_work.fedc", "\noutput", "\n%99 = constant [1] : f32[]\noutput", FEDC_EPARSE,
                 "bad/warm_1_client_work.fedc: is not phase client_work of exchange 1 of the warm start's form");
    warm_refused("warm_start.fedc", "input \"server/params/dense1/b\"", "input \"client/b\"", FEDC_EPARSE,
                 "bad/warm_start.fedc: input \"client/b\" is not one of the round's server/ inputs");
    warm_refused("warm_start.fedc", "output \"server/clusters/1/params/dense1/b\"", "output \"other\"", FEDC_EPARSE,
                 "bad/warm_start.fedc: writes no \"server/clusters/1/params/dense1/b\"");
    warm_refused("warm_start.fedc", "fedc program", "fedc progran", FEDC_EPARSE, "bad/warm_start.fedc:");
}

static void test_warm_random_damage(void) {
    if (warm_setup()) random_damage(warm_dir, "warm_2_client_work.fedc");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"sha256", test_sha256}, {"build_and_read", test_build_and_read}, {"bad_manifest", test_bad_manifest}, {"bad_model", test_bad_model},
        {"random_damage", test_random_damage},   {"client_state", test_client_state}, {"groups", test_groups},
        {"build_refuses", test_build_refuses}, {"warm_start", test_warm_start}, {"bad_warm", test_bad_warm},
        {"warm_random_damage", test_warm_random_damage},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
