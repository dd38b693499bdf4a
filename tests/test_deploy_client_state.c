/* A deployed client's state file (src/deploy/client_state.c): what is saved
 * loads back bit for bit with its pending round; no file is no state; and a
 * file of another plan (or of its programs under other settings) or client, a name outside client/ and next/client/, a
 * next/ value without a pending round, bad metadata, a file cut short, and an
 * id that cannot name a file are refused, each naming what is wrong. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "deploy/client_state.h"

#define HASH "aa11"
#define SETTINGS "cc33"

static const float c_leaf[3] = {1.5f, -2, 0.25f}, next_leaf[3] = {3, 4, 5};

static fedc_status save(const char *dir, const char *id, int64_t pending, bool with_next) {
    fedc_tensor_entry t[] = {{"client/c/w", fedc_type_make(FEDC_F32, 1, (int64_t[]){3}), c_leaf},
                             {"next/client/c/w", fedc_type_make(FEDC_F32, 1, (int64_t[]){3}), next_leaf}};
    return fedc__client_state_save(dir, id, HASH, SETTINGS, t, with_next ? 2 : 1, pending, true);
}

static void test_round_trip(void) {
    const char *dir = fedc_test_tmp("rt");
    CHECK_OK(save(dir, "7", 4, true));
    fedc__client_state k;
    CHECK_OK(fedc__client_state_load(dir, "7", HASH, SETTINGS, &k));
    if (!k.file) {
        CHECK(k.file != NULL);
        return;
    }
    CHECK_EQ_INT(k.pending_round, 4);
    CHECK(k.seen);
    CHECK_EQ_INT(fedc_safetensors_count(k.file), 2);
    fedc_tensor_entry e;
    CHECK_OK(fedc_safetensors_find(k.file, "next/client/c/w", &e));
    CHECK(!memcmp(e.data, next_leaf, sizeof next_leaf));
    CHECK_OK(fedc_safetensors_find(k.file, "client/c/w", &e));
    CHECK(!memcmp(e.data, c_leaf, sizeof c_leaf));
    fedc_safetensors_destroy(k.file);
    CHECK_OK(fedc__client_state_load(dir, "8", HASH, SETTINGS, &k)); /* another client's: none yet */
    CHECK(k.file == NULL);
    CHECK_EQ_INT(k.pending_round, -1);
}

static void test_other_plan_or_client(void) {
    const char *dir = fedc_test_tmp("other");
    CHECK_OK(save(dir, "1", -1, false));
    fedc__client_state k;
    CHECK_ERR(fedc__client_state_load(dir, "1", "bb22", SETTINGS, &k), FEDC_EINVAL, "client-1.safetensors: the state of another plan");
    CHECK_ERR(fedc__client_state_load(dir, "1", HASH, "dd44", &k), FEDC_EINVAL,
              "client-1.safetensors: the state of this plan's programs under other settings");
    char from[4200], to[4200];
    fedc__client_state_path(dir, "1", from, sizeof from);
    fedc__client_state_path(dir, "2", to, sizeof to);
    CHECK(rename(from, to) == 0);
    CHECK_ERR(fedc__client_state_load(dir, "2", HASH, SETTINGS, &k), FEDC_EINVAL, "client \"1\"'s state, not client \"2\"'s");
}

static void test_bad_contents(void) {
    const char *dir = fedc_test_tmp("bad");
    char path[4200];
    fedc__client_state_path(dir, "3", path, sizeof path);
    fedc__client_state k;
    CHECK_OK(save(dir, "3", -1, true)); /* next/ without a pending round */
    CHECK_ERR(fedc__client_state_load(dir, "3", HASH, SETTINGS, &k), FEDC_EPARSE, "\"next/client/c/w\" without a pending round");
    fedc_tensor_entry t = {"server/w", fedc_type_make(FEDC_F32, 1, (int64_t[]){3}), c_leaf};
    fedc_metadata_entry meta[] = {{"format", "fedc-client-state-1"}, {"plan_hash", HASH}, {"client", "3"},
                                  {"pending_round", "-1"}, {"seen", "0"}};
    CHECK_OK(fedc_safetensors_write(path, &t, 1, meta, 5));
    CHECK_ERR(fedc__client_state_load(dir, "3", HASH, SETTINGS, &k), FEDC_EPARSE, "\"server/w\" is not client/<leaf>");
    t.name = "client/w";
    CHECK_OK(fedc_safetensors_write(path, &t, 1, meta, 5)); /* a file written before plan_settings: read */
    CHECK_OK(fedc__client_state_load(dir, "3", HASH, SETTINGS, &k));
    CHECK(k.file != NULL && k.pending_round == -1);
    fedc_safetensors_destroy(k.file);
    meta[3].value = "soon";
    CHECK_OK(fedc_safetensors_write(path, &t, 1, meta, 5));
    CHECK_ERR(fedc__client_state_load(dir, "3", HASH, SETTINGS, &k), FEDC_EPARSE, "pending_round \"soon\" is not a round number");
    CHECK_OK(fedc_safetensors_write(path, &t, 1, meta, 2));
    CHECK_ERR(fedc__client_state_load(dir, "3", HASH, SETTINGS, &k), FEDC_EPARSE, "not a client's state file: no \"client\"");
    CHECK_OK(save(dir, "3", 0, true));
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fclose(f);
        CHECK(truncate(path, n - 5) == 0);
    }
    CHECK_ERR(fedc__client_state_load(dir, "3", HASH, SETTINGS, &k), FEDC_EPARSE, "client-3.safetensors");
}

static void test_ids_that_name_no_file(void) {
    fedc__client_state k;
    const char *dir = fedc_test_tmp("ids");
    CHECK_ERR(save(dir, "../x", -1, false), FEDC_EINVAL, "client \"../x\": --state-dir names its file");
    CHECK_ERR(fedc__client_state_load(dir, "", HASH, SETTINGS, &k), FEDC_EINVAL, "may hold only letters");
    CHECK_OK(save(dir, "f0001_00.a-b", -1, false));
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("test-deploy-client-state")) return 1;
    static const fedc_test tests[] = {
        {"saved state loads back", test_round_trip},
        {"another plan's or client's file refused", test_other_plan_or_client},
        {"bad contents refused", test_bad_contents},
        {"ids that name no file refused", test_ids_that_name_no_file},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
