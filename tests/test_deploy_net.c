/* The deployment over the network (fedc/deploy.h): a server and a fleet of
 * clients, in threads of this process over a local NNG socket (ipc://, nothing
 * leaves the host). Without faults, the deployed FedAvg run ends with the bits
 * of fedc_train on the same data, seeds and rounds. Bad input — random bytes, a
 * truncated frame, another version, a huge declared length, a wrong token or
 * plan hash, a report of the wrong shape, NaN, the wrong slot or round — is
 * refused with its reason logged, and the server goes on to the same bits.
 * Every wait is bounded (deadlines of 60 s, timeouts of 30 s). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deploy_threads.h"
#include "core/fault.h"
#include "deploy/net.h"
#include "fedc/deploy.h"
#include "fedc/safetensors.h"

static bool setup(void) { return deploy_setup("deploy-net"); }

/* The plan of `rounds` rounds of k clients, and fedc_train's run of the same;
 * with `adam`, FedAdam weighting clients by their datasets' sizes (the round
 * reads meta/num_examples, and the server keeps Adam's state). */
static bool plan_and_train_as(const char *name, int rounds, int k, bool adam) {
    char plan[600], train[700];
    snprintf(plan, sizeof plan, "%s", path(name));
    snprintf(train, sizeof train, "%s.train", plan);
    fedc_train_config c;
    case_config(&c, data_path, train, rounds, k);
    if (adam) {
        c.algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01);
        c.algorithm.weighting = FEDC_WEIGHT_DATASET;
    }
    fedc_status st = fedc_plan_build(&c, plan);
    if (!st) st = fedc_train(&c, NULL);
    if (st) fprintf(stderr, "%s: %s\n", name, fedc_errmsg());
    return st == FEDC_OK;
}

static bool plan_and_train(const char *name, int rounds, int k) { return plan_and_train_as(name, rounds, k, false); }

/* A server of plan `name` on a thread; heartbeat_timeout 0: the default. */
static void start_server(job *j, pthread_t *t, const char *name, const char *url, int rounds, int k, FILE *log,
                         double heartbeat_timeout) {
    static char plan[8][600], out[8][700];
    static int next;
    int i = next++ % 8;
    snprintf(plan[i], sizeof plan[i], "%s", path(name));
    snprintf(out[i], sizeof out[i], "%s.out", plan[i]);
    memset(j, 0, sizeof *j);
    fedc_server_defaults(&j->s);
    j->s.plan = plan[i], j->s.listen = url, j->s.out_dir = out[i];
    j->s.rounds = rounds, j->s.clients_per_round = k;
    j->s.token = "test-token";
    j->s.report_deadline = 60;
    j->s.linger = 0.5;
    j->s.log = log;
    if (heartbeat_timeout > 0) j->s.heartbeat_timeout = heartbeat_timeout;
    pthread_create(t, NULL, server_main, j);
}

static fedc_client_options client_options(const char *url, const char *token) {
    fedc_client_options o;
    fedc_client_defaults(&o);
    o.connect = url, o.data = data_path, o.token = token;
    o.timeout = 30, o.max_seconds = 120;
    return o;
}

/* The number after `key` in each of a metrics file's rows, at most max: how
 * many rows (-1: a row without it). */
static int field_values(const char *file, const char *key, long *v, int max) {
    FILE *f = fopen(file, "r");
    char line[4096];
    int n = 0;
    bool all = true;
    while (f && n < max && fgets(line, sizeof line, f)) {
        const char *at = strstr(line, key);
        all &= at != NULL;
        v[n++] = at ? strtol(at + strlen(key), NULL, 10) : -1;
    }
    if (f) fclose(f);
    return all ? n : -1;
}

/* The least value of the number after `key` over a metrics file's rows (-1:
 * a row without it, or no row). */
static long least_field(const char *file, const char *key) {
    long v[64], least = -1;
    int n = field_values(file, key, v, 64);
    for (int i = 0; i < n; i++)
        if (i == 0 || v[i] < least) least = v[i];
    return least;
}

/* The plan `name` served for `rounds` rounds of k clients to a fleet of all
 * five (with the faults `fault`, core/fault.h; NULL: none); false if the set-up
 * or the run fails. With `patient`, the server's heartbeat timeout is 600 s (a
 * beat every 150 s) and the clients' timeout 240 s (check-ins held 120 s), so
 * that within the clients' max_seconds (120 s) no request is repeated for time. */
static bool deploy_as(const char *name, int rounds, int k, bool adam, const char *fault, bool patient) {
    if (!setup() || !plan_and_train_as(name, rounds, k, adam)) {
        CHECK_MSG(false, "cannot set up");
        return false;
    }
    char url[700], sock[64];
    snprintf(sock, sizeof sock, "%s.sock", name);
    snprintf(url, sizeof url, "ipc://%s", path(sock));
    job j;
    pthread_t t;
    start_server(&j, &t, name, url, rounds, k, NULL, patient ? 600 : 0);
    fedc_client_options o = client_options(url, "test-token");
    if (patient) o.timeout = 240;
    CHECK_OK(fedc__fault_set(fault));
    fedc_status st = fedc_fleet_run(&o, CASE_CLIENTS);
    CHECK_MSG(st == FEDC_OK, "fleet: %s", fedc_errmsg());
    CHECK_OK(fedc__fault_set(NULL));
    pthread_join(t, NULL);
    CHECK_MSG(j.st == FEDC_OK, "server: %s", j.err);
    return st == FEDC_OK && j.st == FEDC_OK;
}

static bool deploy(const char *name, int rounds, int k, bool adam, const char *fault) {
    return deploy_as(name, rounds, k, adam, fault, false);
}

/* Three rounds of three clients: fedc_train's bits, though every report is
 * sent twice (each client checks that the second is counted 0). */
static void test_equivalence(void) {
    if (!deploy("eq", 3, 3, false, "report-twice")) return;
    check_same_bits(path("eq.out/checkpoint.safetensors"), path("eq.train/checkpoint.safetensors"), 2);
    CHECK_EQ_INT(count_lines(path("eq.out/metrics.jsonl"), "\"reported\": 3, \"dropped\": 0"), 3);
    /* Each of a round's 3 clients beats once, says ready and reports before the round can close,
     * each a call answered before the next is sent. Not counted on: the check-in that got its task
     * (it may have come, and been held, in the round before) and the repeated report, sent once the
     * first is acknowledged and so free to reach the server after the round's last report closed it
     * (CI saw 11 in a round under ASan). */
    long requests = least_field(path("eq.out/metrics.jsonl"), "\"requests\": ");
    CHECK_MSG(requests >= 9, "a round answered %ld requests; its 3 clients make 9 at least", requests);
}

/* The liveness traffic: a client waiting for the next round (or not selected)
 * has its check-in held until it has a task, and a working client beats once
 * the task arrives and then every beat interval, a quarter of the heartbeat
 * timeout. With the holds and the beat interval above the clients' max_seconds
 * (deploy_as's `patient`), the protocol leaves no request to time: the plan
 * once, a check-in per task and one answered done per client, and each task's
 * heartbeat, ready and report: 1 + (9 + 5) + 9 x 3 = 42 for 3 rounds of 3 of
 * the 5 clients, however long the rounds take. Each client sleeps 1.5 s before
 * its work (FEDC_FAULT=slow), longer than the 1 s after which the protocol of
 * version 4 answered a held check-in and repeated a heartbeat. The rows count
 * the requests of their rounds (the last clients' check-ins, answered done
 * after the last row, are not in any), so they sum to 42 at most. */
static void test_liveness_traffic(void) {
    if (!deploy_as("quiet", 3, 3, false, "slow:1.5", true)) return;
    check_same_bits(path("quiet.out/checkpoint.safetensors"), path("quiet.train/checkpoint.safetensors"), 2);
    long v[8], sum = 0;
    int rows = field_values(path("quiet.out/metrics.jsonl"), "\"requests\": ", v, 8);
    CHECK_EQ_INT(rows, 3);
    for (int i = 0; i < rows; i++) {
        CHECK_MSG(v[i] >= 9, "round %d answered %ld requests; its 3 clients make 9 at least", i + 1, v[i]);
        sum += v[i];
    }
    CHECK_MSG(sum <= 42, "the rounds answered %ld requests; the protocol makes 42 at most without a repeated one", sum);
}

/* FedAdam weighting by dataset size: the server's Adam state (server/opt/...)
 * and each client's meta/num_examples cross the wire too; the same bits. */
static void test_equivalence_fedadam(void) {
    if (!deploy("adam", 2, 4, true, NULL)) return;
    fedc_plan *p = NULL;
    CHECK_OK(fedc_plan_read(path("adam"), &p));
    CHECK(p && fedc_program_find_input(fedc_plan_round(p), "meta/num_examples") != FEDC_NONE);
    int n = p ? fedc_plan_num_tensors(p) : 0;
    CHECK(n > 2); /* the model and Adam's moments and step */
    fedc_plan_destroy(p);
    check_same_bits(path("adam.out/checkpoint.safetensors"), path("adam.train/checkpoint.safetensors"), n);
}

/* ------------------------------------------------------------ bad input -- */

/* Sends raw bytes; the answer must be a reject whose reason has `needle`. */
static void expect_reject(fedc__net *n, const void *bytes, size_t size, const char *needle) {
    CHECK_OK(fedc__net_send(n, bytes, size));
    void *data = NULL;
    size_t got = 0;
    bool timed_out = false;
    fedc__msg m = {0};
    CHECK_OK(fedc__net_recv(n, &data, &got, &timed_out));
    CHECK(!timed_out);
    if (!data) return;
    CHECK_OK(fedc__wire_decode(data, got, (size_t)1 << 28, &m));
    nng_free(data, got);
    if (!m.body) return;
    const char *why = fedc__msg_field(&m, "reason");
    CHECK_MSG(m.type == FEDC__MSG_REJECT && why && strstr(why, needle), "a %s message (%s), not a reject with \"%s\"",
              fedc__msg_name(m.type), why ? why : "", needle);
    fedc__msg_free(&m);
}

static void expect_reject_msg(fedc__net *n, fedc__msg_type type, const fedc_metadata_entry *f, int nf,
                              const fedc_tensor_entry *t, int nt, const char *needle) {
    void *frame = NULL;
    size_t size = 0;
    CHECK_OK(fedc__wire_encode(type, f, nf, t, nt, &frame, &size));
    if (frame) expect_reject(n, frame, size, needle);
    fedc_free(frame);
}

/* Reports for `slot` of client `who` whose tensors are those of `good` but
 * edited as `how` says. */
static void bad_reports(fedc__net *n, const fedc_plan *p, const char *who, const char *slot) {
    const fedc_program *agg = fedc_deployment_form_phase(fedc_plan_form(p), 0, FEDC_PHASE_AGGREGATION);
    int k = fedc_program_num_inputs(agg);
    fedc_tensor_entry t[16];
    static float zeros[785 * 62]; /* the largest tensor, with one row more for the wrong shape */
    for (int i = 0; i < k && i < 16; i++) {
        fedc_type type = fedc_value_type(agg, fedc_program_input(agg, i));
        type.placement = FEDC_LOCAL;
        t[i] = (fedc_tensor_entry){fedc_program_input_name(agg, i), type, zeros};
    }
    fedc_metadata_entry f[] = {{"token", "test-token"}, {"client", who}, {"round", "0"}, {"exchange", "0"},
                               {"slot", slot}, {"hash", fedc_plan_hash(p)}};
    fedc_tensor_entry wrong = t[0];
    wrong.type.dims[0] += wrong.type.rank ? 1 : 0;
    if (!wrong.type.rank) wrong.type = fedc_type_make(wrong.type.dtype, 1, (int64_t[]){2});
    fedc_tensor_entry shaped[16];
    memcpy(shaped, t, sizeof shaped);
    shaped[0] = wrong;
    expect_reject_msg(n, FEDC__MSG_REPORT, f, 6, shaped, k, "is f32[");
    zeros[3] = NAN;
    expect_reject_msg(n, FEDC__MSG_REPORT, f, 6, t, k, "is not finite (element 3)");
    zeros[3] = 0;
    expect_reject_msg(n, FEDC__MSG_REPORT, f, 6, t, k - 1, "tensors; the aggregation takes");
    fedc_metadata_entry g[6];
    memcpy(g, f, sizeof g);
    g[2].value = "7";
    expect_reject_msg(n, FEDC__MSG_REPORT, g, 6, t, k, "a report for round 8 exchange 0, but round 1 exchange 0 is open");
    memcpy(g, f, sizeof g);
    g[4].value = strcmp(slot, "0") ? "0" : "1";
    expect_reject_msg(n, FEDC__MSG_REPORT, g, 6, t, k, "is not this client's");
    memcpy(g, f, sizeof g);
    g[0].value = "nope";
    expect_reject_msg(n, FEDC__MSG_REPORT, g, 6, t, k, "invalid token");
}

/* Bad frames and messages from a raw socket while round 1 waits for its
 * reports; then the real clients report and the run has fedc_train's bits. */
static void test_bad_input(void) {
    if (!setup() || !plan_and_train("bad", 1, CASE_CLIENTS)) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    char url[700];
    snprintf(url, sizeof url, "ipc://%s", path("bad.sock"));
    FILE *log = fopen(path("bad.log"), "w");
    job j;
    pthread_t t;
    start_server(&j, &t, "bad", url, 1, CASE_CLIENTS, log, 0);
    fedc_plan *p = NULL;
    CHECK_OK(fedc_plan_read(path("bad"), &p));
    fedc__net n;
    CHECK_OK(fedc__net_dial(&n, url, (size_t)1 << 28, 30000, NULL));
    if (!p || !n.open) goto out;

    unsigned char junk[300];
    fedc_test_seed(3);
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(int)fedc_test_uniform(0, 256);
    expect_reject(&n, junk, sizeof junk, "not a fedc message");
    char version[16];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    fedc_metadata_entry ci[] = {{"token", "test-token"}, {"client", "2"}, {"version", version}, {"plan_hash", fedc_plan_hash(p)},
                                {"hold_ms", "100"}};
    void *frame = NULL;
    size_t size = 0;
    CHECK_OK(fedc__wire_encode(FEDC__MSG_CHECKIN, ci, 5, NULL, 0, &frame, &size));
    if (!frame) goto out;
    unsigned char *b = frame;
    expect_reject(&n, b, size - 5, "truncated frame");
    b[4] = 9;
    expect_reject(&n, b, size, "message version 9; this fedc speaks version 1");
    b[4] = 1, b[15] = 0x7f;
    expect_reject(&n, b, size, "above the limit");
    b[15] = 0;
    fedc_free(frame);
    fedc_metadata_entry bad[5];
    memcpy(bad, ci, sizeof bad);
    bad[0].value = "wrong";
    expect_reject_msg(&n, FEDC__MSG_CHECKIN, bad, 5, NULL, 0, "invalid token");
    memcpy(bad, ci, sizeof bad);
    bad[3].value = "0123";
    expect_reject_msg(&n, FEDC__MSG_CHECKIN, bad, 5, NULL, 0, "plan hash 0123 is not this server's plan");
    memcpy(bad, ci, sizeof bad);
    bad[2].value = "1";
    char speaks[64];
    snprintf(speaks, sizeof speaks, "protocol version 1; this server speaks %d", FEDC__PROTOCOL_VERSION);
    expect_reject_msg(&n, FEDC__MSG_CHECKIN, bad, 5, NULL, 0, speaks);
    memcpy(bad, ci, sizeof bad);
    bad[1].value = "99";
    expect_reject_msg(&n, FEDC__MSG_CHECKIN, bad, 5, NULL, 0, "field 'client' is '99'");
    /* a check-in is checked whole before it is acted on: without hold_ms it is refused, never given the plan */
    memcpy(bad, ci, sizeof bad);
    bad[3].value = "";
    expect_reject_msg(&n, FEDC__MSG_CHECKIN, bad, 4, NULL, 0, "field 'hold_ms' is ''");
    expect_reject_msg(&n, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "1"}}, 1, NULL, 0, "not a client's request");
    /* every client is in the round (5 of 5): client 2's slot is the one the sample gives it */
    int64_t sampled[CASE_CLIENTS];
    CHECK_OK(fedc_sample_clients(CASE_CLIENTS, CASE_CLIENTS, 7, 0, sampled));
    char slot[16] = "0";
    for (int i = 0; i < CASE_CLIENTS; i++)
        if (sampled[i] == 2) snprintf(slot, sizeof slot, "%d", i);
    bad_reports(&n, p, "2", slot);

    /* a client without the token is refused and stops */
    fedc_client_options o = client_options(url, "not-the-token");
    CHECK_ERR(fedc_client_run(&o), FEDC_EIO, "the server refused: invalid token");
    o = client_options(url, "test-token");
    CHECK_OK(fedc_fleet_run(&o, CASE_CLIENTS));
out:
    fedc__net_close(&n);
    pthread_join(t, NULL);
    fclose(log);
    CHECK_MSG(j.st == FEDC_OK, "server: %s", j.err);
    check_same_bits(path("bad.out/checkpoint.safetensors"), path("bad.train/checkpoint.safetensors"), 2);
    CHECK_EQ_INT(count_lines(path("bad.log"), "refused"), 17);
    CHECK_EQ_INT(count_lines(path("bad.log"), "refused client 2: tensor 'client_work/"), 2);
    CHECK_EQ_INT(count_lines(path("bad.out/metrics.jsonl"), "\"reported\": 5, \"dropped\": 0, \"refused\": 17"), 1);
    fedc_plan_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {{"equivalence", test_equivalence},
                                      {"equivalence_fedadam", test_equivalence_fedadam},
                                      {"liveness_traffic", test_liveness_traffic},
                                      {"bad_input", test_bad_input}};
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
