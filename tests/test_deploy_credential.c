/* Per-client credentials (src/deploy/credential.h; docs/deployment.md,
 * "Per-client credentials"): who may speak for which client id.
 *
 * The derivation against known answers (HMAC-SHA-256 as Python's hmac computes
 * it), verification (a client's own credential only: not another id's, not one
 * digit off, not a wrong length or a non-hex one), the issued files (mode 0600,
 * each verifying for its id, the key kept when issued again). Then a server with
 * credentials and clients as threads of this process over ipc://, 2 rounds of 3
 * of 5 clients, with each report replayed over a connection of its own
 * (FEDC_FAULT=report-replay: each answered "counted 0"), and while round 2 waits
 * for its last client, a raw connection that presents client 3's credential as
 * client 4 (checking in, beating, in a SecAgg message) and others' credentials, replays a report of round 1 in round 2,
 * sends a report for the stale round and one of a client round 2 did not select:
 * each refused with its reason logged (or, the replay, counted 0), the refused
 * credentials counted in metrics.jsonl, and the run has fedc_train's bits. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fault.h"
#include "deploy/credential.h"
#include "deploy/net.h"
#include "deploy_threads.h"

static char credentials_dir[700];

static bool setup(void) { return deploy_setup("deploy-credential"); }

/* ---------------------------------------------------- the credentials -- */

static void key_0_to_31(unsigned char key[FEDC__CREDENTIAL_KEY_BYTES]) {
    for (int i = 0; i < FEDC__CREDENTIAL_KEY_BYTES; i++) key[i] = (unsigned char)i;
}

/* hmac.new(bytes(range(32)), b"fedc credential 1 client %d" % c, hashlib.sha256).hexdigest() */
static void test_derive_known_answers(void) {
    static const struct {
        int64_t client;
        const char *hex;
    } known[] = {{0, "bf5ca4448d2207b6b7ae67466c64cf1837af7fc6dfa9c2c701a3b8d3e7979a04"},
                 {3, "4dd8311ac4b6a5e1691efc5e907c763392313cab87146c0606abb97af325f346"},
                 {4, "e23bb4c506b969b5045eddf4430ecc1363312261ecccc6fd607042c9e93bf560"}};
    unsigned char key[FEDC__CREDENTIAL_KEY_BYTES];
    key_0_to_31(key);
    for (int i = 0; i < FEDC_COUNT_OF(known); i++) {
        char hex[FEDC__CREDENTIAL_HEX + 1];
        fedc__credential_derive(key, known[i].client, hex);
        CHECK_MSG(!strcmp(hex, known[i].hex), "client %lld: %s, not %s", (long long)known[i].client, hex, known[i].hex);
    }
}

static void test_verify(void) {
    unsigned char key[FEDC__CREDENTIAL_KEY_BYTES], other[FEDC__CREDENTIAL_KEY_BYTES];
    key_0_to_31(key);
    memcpy(other, key, sizeof other);
    other[31] ^= 1;
    char c3[FEDC__CREDENTIAL_HEX + 1], c4[FEDC__CREDENTIAL_HEX + 1], bad[FEDC__CREDENTIAL_HEX + 2];
    fedc__credential_derive(key, 3, c3);
    fedc__credential_derive(key, 4, c4);
    CHECK(fedc__credential_verify(key, 3, c3));
    CHECK(fedc__credential_verify(key, 4, c4));
    CHECK(!fedc__credential_verify(key, 4, c3)); /* client 3's credential does not speak for client 4 */
    CHECK(!fedc__credential_verify(key, 3, c4));
    CHECK(!fedc__credential_verify(other, 3, c3)); /* another server's key */
    CHECK(!fedc__credential_verify(key, 1003, c3)); /* an id that merely ends the same */
    for (int at = 0; at < FEDC__CREDENTIAL_HEX; at += 21) { /* a digit off, first, middle or last */
        memcpy(bad, c3, sizeof c3);
        bad[at] = bad[at] == '0' ? '1' : '0';
        CHECK_MSG(!fedc__credential_verify(key, 3, bad), "digit %d changed, still verified", at);
    }
    memcpy(bad, c3, sizeof c3);
    bad[FEDC__CREDENTIAL_HEX - 1] = '\0';
    CHECK(!fedc__credential_verify(key, 3, bad)); /* 63 digits */
    memcpy(bad, c3, sizeof c3);
    bad[FEDC__CREDENTIAL_HEX] = '0', bad[FEDC__CREDENTIAL_HEX + 1] = '\0';
    CHECK(!fedc__credential_verify(key, 3, bad)); /* 65 digits */
    memcpy(bad, c3, sizeof c3);
    bad[10] = 'g';
    CHECK(!fedc__credential_verify(key, 3, bad));
    CHECK(!fedc__credential_verify(key, 3, ""));
    CHECK(!fedc__credential_verify(key, 3, NULL));
    for (char *p = c3; *p; p++) *p = (char)(*p >= 'a' ? *p - 32 : *p); /* the same bytes in capitals */
    CHECK(fedc__credential_verify(key, 3, c3));
}

static int mode_of(const char *file) {
    struct stat st;
    return stat(file, &st) ? -1 : (int)(st.st_mode & 0777);
}

static void test_issue(void) {
    if (!setup()) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    CHECK_OK(fedc_credentials_issue(path("issue.key"), 5, path("issued")));
    CHECK_EQ_INT(mode_of(path("issue.key")), 0600);
    unsigned char key[FEDC__CREDENTIAL_KEY_BYTES];
    CHECK_OK(fedc__credential_key_load(path("issue.key"), false, key));
    char first[FEDC__CREDENTIAL_HEX + 1] = "", hex[FEDC__CREDENTIAL_HEX + 1] = "", file[800];
    for (int c = 0; c < 5; c++) {
        fedc__credential_path(path("issued"), c, file, sizeof file);
        CHECK_EQ_INT(mode_of(file), 0600);
        CHECK_OK(fedc__credential_read(path("issued"), c, hex));
        CHECK_MSG(fedc__credential_verify(key, c, hex), "client %d's issued credential does not verify", c);
        CHECK_MSG(!fedc__credential_verify(key, (c + 1) % 5, hex), "client %d's credential verifies for another", c);
        if (c == 0) memcpy(first, hex, sizeof hex);
    }
    fedc__credential_path(path("issued"), 5, file, sizeof file);
    CHECK(access(file, F_OK) != 0); /* clients 0 to 4 only */
    /* issued again: the key is kept, and so are the credentials */
    CHECK_OK(fedc_credentials_issue(path("issue.key"), 2, path("issued")));
    CHECK_OK(fedc__credential_read(path("issued"), 0, hex));
    CHECK(!strcmp(hex, first));
    FILE *f = fopen(path("bad.key"), "w");
    if (f) fputs("not a key\n", f), fclose(f);
    CHECK_ERR(fedc_credentials_issue(path("bad.key"), 2, path("issued2")), FEDC_EPARSE, "must be one line of 64 hex digits");
    CHECK_ERR(fedc_credentials_issue(path("issue.key"), 0, path("issued2")), FEDC_EINVAL, "1 to");
    CHECK_ERR(fedc__credential_read(path("issued"), 7, hex), FEDC_EIO, "client-7.credential");
}

/* ------------------------------------------- a server with credentials -- */

typedef struct member {
    fedc_client_options o;
    fedc_status st;
    char err[1024];
    pthread_t thread;
    bool started;
} member;

static void *client_main(void *arg) {
    member *m = arg;
    m->st = fedc_client_run(&m->o);
    if (m->st) snprintf(m->err, sizeof m->err, "%s", fedc_errmsg());
    return NULL;
}

static void start_client(member *m, const char *url, int64_t id, FILE *log) {
    fedc_client_defaults(&m->o);
    m->o.connect = url, m->o.data = data_path, m->o.client = id, m->o.credentials_dir = credentials_dir;
    m->o.timeout = 30, m->o.max_seconds = 120, m->o.log = log;
    m->started = pthread_create(&m->thread, NULL, client_main, m) == 0;
    CHECK_MSG(m->started, "cannot start client %lld's thread", (long long)id);
}

static void sleep_ms(int ms) { nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL); }

/* The number after `key` in row `row` (from 0) of a metrics file; -1 if none. */
static long field_of_row(const char *file, int row, const char *key) {
    FILE *f = fopen(file, "r");
    char line[4096];
    long v = -1;
    for (int i = 0; f && fgets(line, sizeof line, f); i++) {
        const char *at = strstr(line, key);
        if (i == row && at) v = strtol(at + strlen(key), NULL, 10);
    }
    if (f) fclose(f);
    return v;
}

static int slot_in(const int64_t *sampled, int k, int64_t client) {
    for (int i = 0; i < k; i++)
        if (sampled[i] == client) return i;
    return -1;
}

/* A report for (round, slot) as client `who`, carrying `token`, with tensors of
 * the aggregation's types (zeros): sent over n, the answer decoded into *answer. */
static void raw_report(fedc__net *n, const fedc_plan *p, const char *token, int64_t who, int round, int slot,
                       fedc__msg *answer) {
    const fedc_program *agg = fedc_deployment_form_phase(fedc_plan_form(p), 0, FEDC_PHASE_AGGREGATION);
    int k = fedc_program_num_inputs(agg);
    fedc_tensor_entry t[16];
    static float zeros[785 * 62];
    for (int i = 0; i < k && i < 16; i++) {
        fedc_type type = fedc_value_type(agg, fedc_program_input(agg, i));
        type.placement = FEDC_LOCAL;
        t[i] = (fedc_tensor_entry){fedc_program_input_name(agg, i), type, zeros};
    }
    char client[32], round_s[32], slot_s[32];
    snprintf(client, sizeof client, "%lld", (long long)who);
    snprintf(round_s, sizeof round_s, "%d", round);
    snprintf(slot_s, sizeof slot_s, "%d", slot);
    fedc_metadata_entry f[] = {{"token", token}, {"client", client}, {"round", round_s}, {"exchange", "0"},
                               {"slot", slot_s}, {"hash", fedc_plan_hash(p)}};
    memset(answer, 0, sizeof *answer);
    CHECK_OK(fedc__net_call(n, FEDC__MSG_REPORT, f, 6, t, k < 16 ? k : 16, answer));
}

static void expect_refused(fedc__msg *m, const char *needle) {
    const char *why = m->body ? fedc__msg_field(m, "reason") : NULL;
    CHECK_MSG(m->body && m->type == FEDC__MSG_REJECT && why && strstr(why, needle),
              "a %s message (%s), not a reject with \"%s\"", m->body ? fedc__msg_name(m->type) : "missing",
              why ? why : "", needle);
    fedc__msg_free(m);
}

static void expect_counted_0(fedc__msg *m) {
    const char *counted = m->body ? fedc__msg_field(m, "counted") : NULL;
    const char *why = m->body ? fedc__msg_field(m, "reason") : NULL;
    CHECK_MSG(m->body && m->type == FEDC__MSG_ACK && counted && !strcmp(counted, "0"), "a %s message (%s), not \"counted 0\"",
              m->body ? fedc__msg_name(m->type) : "missing", why ? why : "");
    fedc__msg_free(m);
}

/* What a raw connection tries while round 2 (index 1) waits for client z: see
 * the file's comment. x reported in round 1 only, w is not in round 2. */
static void hostile_requests(const char *url, const fedc_plan *p, const int64_t *r0, int64_t x, int64_t z, int64_t w) {
    fedc__net n;
    CHECK_OK(fedc__net_dial(&n, url, (size_t)1 << 28, 30000, NULL));
    if (!n.open) return;
    char cred[5][FEDC__CREDENTIAL_HEX + 1], version[16];
    for (int c = 0; c < CASE_CLIENTS; c++) CHECK_OK(fedc__credential_read(credentials_dir, c, cred[c]));
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    fedc__msg m = {0};
    /* client 3's credential, presented as client 4; no credential; the shared token of a token server */
    fedc_metadata_entry ci[] = {{"token", cred[3]}, {"client", "4"}, {"version", version}, {"plan_hash", fedc_plan_hash(p)},
                                {"hold_ms", "1000"}};
    CHECK_OK(fedc__net_call(&n, FEDC__MSG_CHECKIN, ci, 5, NULL, 0, &m));
    expect_refused(&m, "the credential is not client 4's");
    ci[0].value = "";
    CHECK_OK(fedc__net_call(&n, FEDC__MSG_CHECKIN, ci, 5, NULL, 0, &m));
    expect_refused(&m, "the credential is not client 4's");
    /* a heartbeat and a SecAgg message for client 4, with client 3's credential: the same one check */
    fedc_metadata_entry hb[] = {{"token", cred[3]}, {"client", "4"}, {"round", "1"}, {"exchange", "0"}, {"slot", "0"},
                                {"session", "0"}, {"step", "0"}};
    CHECK_OK(fedc__net_call(&n, FEDC__MSG_HEARTBEAT, hb, 5, NULL, 0, &m));
    expect_refused(&m, "the credential is not client 4's");
    CHECK_OK(fedc__net_call(&n, FEDC__MSG_SECAGG, hb, 7, NULL, 0, &m));
    expect_refused(&m, "the credential is not client 4's");
    char z_is[64];
    snprintf(z_is, sizeof z_is, "the credential is not client %lld's", (long long)z);
    raw_report(&n, p, cred[(z + 1) % CASE_CLIENTS], z, 1, 0, &m); /* another's credential, claiming z's open slot */
    expect_refused(&m, z_is);
    raw_report(&n, p, "test-token", z, 1, 0, &m);
    expect_refused(&m, z_is);
    /* x's round-1 report, replayed in round 2: counted 0 */
    raw_report(&n, p, cred[x], x, 0, slot_in(r0, 3, x), &m);
    expect_counted_0(&m);
    /* a report of z (not in round 1) for round 1, now stale */
    raw_report(&n, p, cred[z], z, 0, 0, &m);
    expect_refused(&m, "a report for round 1 exchange 0, but round 2 exchange 0 is open");
    /* w, not selected in round 2, reports into slot 0 */
    raw_report(&n, p, cred[w], w, 1, 0, &m);
    expect_refused(&m, "slot 0 of round 2 is not this client's");
    fedc__net_close(&n);
}

static void test_who_speaks_for_whom(void) {
    if (!setup()) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    fedc_train_config c;
    case_config(&c, data_path, path("who.train"), 2, 3);
    CHECK_OK(fedc_plan_build(&c, path("who")));
    CHECK_OK(fedc_train(&c, NULL));
    snprintf(credentials_dir, sizeof credentials_dir, "%s", path("who.credentials"));
    CHECK_OK(fedc_credentials_issue(path("who.key"), CASE_CLIENTS, credentials_dir));
    /* round 1 (index 0) and round 2 (index 1)'s clients, as the server samples them (seed 7) */
    int64_t r0[3], r1[3], x = -1, z = -1, w = -1;
    CHECK_OK(fedc_sample_clients(CASE_CLIENTS, 3, 7, 0, r0));
    CHECK_OK(fedc_sample_clients(CASE_CLIENTS, 3, 7, 1, r1));
    for (int64_t i = 0; i < CASE_CLIENTS; i++) {
        bool in0 = slot_in(r0, 3, i) >= 0, in1 = slot_in(r1, 3, i) >= 0;
        if (in0 && !in1 && x < 0) x = i;
        if (in1 && !in0 && z < 0) z = i;
        if (!in1 && w < 0) w = i;
    }
    CHECK_MSG(x >= 0 && z >= 0 && w >= 0, "the samples of seed 7 have no client in round 1 only, in 2 only, or not in 2");
    fedc_plan *p = NULL;
    CHECK_OK(fedc_plan_read(path("who"), &p));
    if (x < 0 || z < 0 || w < 0 || !p) goto out_plan;

    char url[800];
    snprintf(url, sizeof url, "ipc://%s", path("who.sock"));
    FILE *log = fopen(path("who.log"), "w"), *clog = fopen(path("who.clients.log"), "w");
    job j;
    memset(&j, 0, sizeof j);
    fedc_server_defaults(&j.s);
    char plan_dir[700], out_dir[700], key[700]; /* path()'s buffers are reused */
    snprintf(plan_dir, sizeof plan_dir, "%s", path("who")), snprintf(out_dir, sizeof out_dir, "%s", path("who.out"));
    snprintf(key, sizeof key, "%s", path("who.key"));
    j.s.plan = plan_dir, j.s.listen = url, j.s.out_dir = out_dir, j.s.log = log, j.s.credentials_key = key;
    j.s.rounds = 2, j.s.clients_per_round = 3, j.s.report_deadline = 60, j.s.linger = 0.5;
    pthread_t t;
    pthread_create(&t, NULL, server_main, &j);
    CHECK_OK(fedc__fault_set("report-replay"));
    member m[CASE_CLIENTS] = {0};
    for (int i = 0; i < CASE_CLIENTS; i++)
        if (i != z) start_client(&m[i], url, i, clog);
    /* round 1 commits; round 2 then waits for z, which has not started */
    for (int i = 0; i < 1200 && count_lines(path("who.out/metrics.jsonl"), "\"round\": 1,") < 1; i++) sleep_ms(100);
    CHECK_EQ_INT(count_lines(path("who.out/metrics.jsonl"), "\"round\": 1,"), 1);
    sleep_ms(500); /* round 2 opens as soon as round 1's row is written: a margin for it */
    hostile_requests(url, p, r0, x, z, w);
    start_client(&m[z], url, z, clog);
    for (int i = 0; i < CASE_CLIENTS; i++) {
        if (!m[i].started) continue;
        pthread_join(m[i].thread, NULL);
        CHECK_MSG(m[i].st == FEDC_OK, "client %d: %s", i, m[i].err);
    }
    CHECK_OK(fedc__fault_set(NULL));
    pthread_join(t, NULL);
    fclose(log), fclose(clog);
    CHECK_MSG(j.st == FEDC_OK, "server: %s", j.err);

    check_same_bits(path("who.out/checkpoint.safetensors"), path("who.train/checkpoint.safetensors"), 2);

    const char *metrics = path("who.out/metrics.jsonl");
    CHECK_EQ_INT(count_lines(metrics, "\"reported\": 3, \"dropped\": 0"), 2);
    CHECK_EQ_INT((int)field_of_row(metrics, 0, "\"unauthenticated\": "), 0);
    CHECK_EQ_INT((int)field_of_row(metrics, 1, "\"unauthenticated\": "), 6);
    /* each replayed report was answered counted 0 (the clients check it) and is a duplicate: round 1's 3 and the raw
     * one by round 2's row; round 2's own are there too unless they came after its last report closed it */
    long dup = field_of_row(metrics, 0, "\"duplicates\": ") + field_of_row(metrics, 1, "\"duplicates\": ");
    CHECK_MSG(dup >= 4 && dup <= 7, "%ld duplicates; the replays make 4 to 7", dup);
    const char *log_path = path("who.log");
    CHECK_EQ_INT(count_lines(log_path, "refused client 4: the credential is not client 4's"), 4);
    char line[128];
    snprintf(line, sizeof line, "refused client %lld: the credential is not client %lld's", (long long)z, (long long)z);
    CHECK_EQ_INT(count_lines(log_path, line), 2);
    CHECK_EQ_INT(count_lines(log_path, "but round 2 exchange 0 is open"), 1);
    CHECK_EQ_INT(count_lines(log_path, "slot 0 of round 2 is not this client's"), 1);
out_plan:
    fedc_plan_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {{"derive_known_answers", test_derive_known_answers},
                                      {"verify", test_verify},
                                      {"issue", test_issue},
                                      {"who_speaks_for_whom", test_who_speaks_for_whom}};
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
