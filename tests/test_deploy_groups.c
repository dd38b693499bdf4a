/* Aggregators (fedc/deploy.h, src/deploy/groups.h): a server with groups, its
 * two aggregators and a fleet on each, as threads of this process over local
 * NNG sockets (ipc://). While round 1 waits, a peer speaking as an aggregator
 * gets its group task, and its damaged group reports (slot flags of the wrong
 * length, blocks that do not tile the group's leaves, a block out of place, a
 * NaN in a sum, another round, plan or token, an unknown group) are each
 * refused with the reason and logged; then the real aggregators run both
 * rounds to fedc_train's bits. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "core/fault.h"
#include "deploy/net.h"
#include "deploy_threads.h"
#include "fedc/deploy.h"

static bool setup(void) { return deploy_setup("deploy-groups"); }

typedef struct side {
    fedc_aggregator_options a;
    fedc_client_options c;
    fedc_status st;
    char err[1024];
} side;

static void *aggregator_main(void *arg) {
    side *s = arg;
    if ((s->st = fedc_aggregator_run(&s->a))) snprintf(s->err, sizeof s->err, "%s", fedc_errmsg());
    return NULL;
}

static void *fleet_main(void *arg) {
    side *s = arg;
    if ((s->st = fedc_fleet_run(&s->c, CASE_CLIENTS))) snprintf(s->err, sizeof s->err, "%s", fedc_errmsg());
    return NULL;
}

/* A run of plan `name` with 2 groups: the server's and each group's addresses
 * (ipc://), its output directory and its log. */
typedef struct run {
    char plan[600], out[620], url[3][700]; /* url[g]: group g's aggregator; url[2]: the server */
    FILE *log;
    job j;
    pthread_t server, agg[2], fleet[2];
    side sides[2];
} run;

/* The server of a run on a thread: `rounds` rounds of every client, 2 groups. */
static void start_server(run *r, const char *name, int rounds, double deadline) {
    snprintf(r->plan, sizeof r->plan, "%s", path(name));
    snprintf(r->out, sizeof r->out, "%s.out", r->plan);
    for (int i = 0; i < 3; i++) snprintf(r->url[i], sizeof r->url[i], "ipc://%s.%d.sock", path(name), i);
    char log[700];
    snprintf(log, sizeof log, "%s.log", r->plan);
    r->log = fopen(log, "w");
    memset(&r->j, 0, sizeof r->j);
    fedc_server_options *o = &r->j.s;
    fedc_server_defaults(o);
    o->plan = r->plan, o->listen = r->url[2], o->out_dir = r->out, o->rounds = rounds, o->clients_per_round = CASE_CLIENTS;
    o->token = "test-token", o->report_deadline = deadline, o->linger = 0.5, o->log = r->log, o->groups = 2;
    pthread_create(&r->server, NULL, server_main, &r->j);
}

/* Group g's aggregator and a fleet of every client on it, on threads. */
static void start_group(run *r, int g) {
    side *s = &r->sides[g];
    fedc_aggregator_defaults(&s->a);
    s->a.connect = r->url[2], s->a.listen = r->url[g], s->a.token = "test-token", s->a.group = g, s->a.out_dir = r->out;
    s->a.timeout = 30, s->a.max_seconds = 120, s->a.linger = 0.5, s->a.log = r->log;
    fedc_client_defaults(&s->c);
    s->c.connect = r->url[g], s->c.data = data_path, s->c.token = "test-token", s->c.timeout = 30, s->c.max_seconds = 120;
    pthread_create(&r->agg[g], NULL, aggregator_main, s);
    pthread_create(&r->fleet[g], NULL, fleet_main, s);
}

/* Waits for the groups started and the server, and checks they ended well. */
static void finish(run *r, int first_group) {
    for (int g = first_group; g < 2; g++) {
        pthread_join(r->agg[g], NULL), pthread_join(r->fleet[g], NULL);
        CHECK_MSG(r->sides[g].st == FEDC_OK, "group %d: %s", g, r->sides[g].err);
    }
    pthread_join(r->server, NULL);
    fclose(r->log);
    CHECK_MSG(r->j.st == FEDC_OK, "server: %s", r->j.err);
}

/* One request; its answer's type, and its reason has `needle` (NULL: any). */
static void expect_answer(fedc__net *n, fedc__msg_type type, const fedc_metadata_entry *f, int nf, const fedc_tensor_entry *t,
                          int nt, fedc__msg_type want, const char *needle) {
    fedc__msg m = {0};
    CHECK_OK(fedc__net_call(n, type, f, nf, t, nt, &m));
    if (!m.body) return;
    const char *why = fedc__msg_field(&m, "reason");
    CHECK_MSG(m.type == want && (!needle || (why && strstr(why, needle))), "a %s message (%s), not a %s with \"%s\"",
              fedc__msg_name(m.type), why ? why : "", fedc__msg_name(want), needle ? needle : "");
    fedc__msg_free(&m);
}

/* Group 0's task, once round 1 is open (the server answers "wait" before). */
static void group_task(fedc__net *n, const fedc_plan *p) {
    char version[16];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    fedc_metadata_entry f[] = {{"token", "test-token"}, {"group", "0"}, {"version", version}, {"plan_hash", fedc_plan_hash(p)}};
    for (int tries = 0; tries < 200; tries++) {
        fedc__msg m = {0};
        CHECK_OK(fedc__net_call(n, FEDC__MSG_GROUP_CHECKIN, f, 4, NULL, 0, &m));
        if (!m.body) return;
        fedc__msg_type type = m.type;
        if (type == FEDC__MSG_GROUP_TASK) { /* group 0 of 2 of 5 slots: slots 0 to 2 */
            CHECK(!strcmp(fedc__msg_field(&m, "first"), "0") && !strcmp(fedc__msg_field(&m, "cohort"), "5"));
            CHECK(!strcmp(fedc__msg_field(&m, "left_out"), "000") && !strcmp(fedc__msg_field(&m, "round"), "0"));
        }
        fedc__msg_free(&m);
        if (type == FEDC__MSG_GROUP_TASK) return;
        CHECK(type == FEDC__MSG_WAIT);
    }
    CHECK_MSG(false, "no group task");
}

/* Damaged reports of group 0 (slots 0 to 2: leaves 0 to 2 of 5), each refused. */
static void bad_reports(fedc__net *n, const fedc_plan *p) {
    const fedc_program *q = fedc_deployment_form_phase(fedc_plan_form(p), 0, FEDC_PHASE_AGGREGATION);
    int outputs = fedc_program_num_outputs(q);
    char tiled[2048] = "", short_[2048] = "", shifted[2048] = "";
    fedc_tensor_entry t[8];
    static float sums[8][785 * 62]; /* each aggregate's sum: the largest is the model's weights */
    static char names[8][24];
    CHECK(outputs <= 8);
    size_t at = 0, as = 0, ah = 0;
    for (int j = 0; j < outputs && j < 8; j++) { /* clients 0 and 1 dropped, client 2 in a block of its own */
        fedc_type type = fedc_value_type(q, fedc_program_output_value(q, j));
        type.placement = FEDC_LOCAL;
        snprintf(names[j], sizeof names[j], "block/%d", j);
        t[j] = (fedc_tensor_entry){names[j], fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)fedc_type_bytes(&type)}), sums[j]};
        at += (size_t)snprintf(tiled + at, sizeof tiled - at, "%s%d:0:1:0:0x0p+0,%d:2:0:1:0x1p+0", j ? "," : "", j, j);
        as += (size_t)snprintf(short_ + as, sizeof short_ - as, "%s%d:0:1:0:0x0p+0", j ? "," : "", j);
        ah += (size_t)snprintf(shifted + ah, sizeof shifted - ah, "%s%d:1:1:0:0x0p+0,%d:2:0:1:0x1p+0", j ? "," : "", j, j);
    }
    fedc_metadata_entry f[] = {{"token", "test-token"}, {"group", "0"}, {"round", "0"}, {"exchange", "0"},
                               {"hash", fedc_plan_hash(p)}, {"reported", "001"}, {"blocks", tiled}};
    fedc_metadata_entry g[7];
    memcpy(g, f, sizeof g), g[5].value = "01";
    expect_answer(n, FEDC__MSG_GROUP_REPORT, g, 7, t, outputs, FEDC__MSG_REJECT, "is not 3 flags");
    memcpy(g, f, sizeof g), g[6].value = short_;
    expect_answer(n, FEDC__MSG_GROUP_REPORT, g, 7, t, outputs, FEDC__MSG_REJECT, "do not tile");
    memcpy(g, f, sizeof g), g[6].value = shifted;
    expect_answer(n, FEDC__MSG_GROUP_REPORT, g, 7, t, outputs, FEDC__MSG_REJECT, "is not the next of the group's tree");
    sums[0][3] = NAN;
    expect_answer(n, FEDC__MSG_GROUP_REPORT, f, 7, t, outputs, FEDC__MSG_REJECT, "is not finite (element 3)");
    sums[0][3] = 0;
    memcpy(g, f, sizeof g), g[2].value = "7";
    expect_answer(n, FEDC__MSG_GROUP_REPORT, g, 7, t, outputs, FEDC__MSG_REJECT, "round 8 exchange 0, which is not open");
    memcpy(g, f, sizeof g), g[4].value = "0123";
    expect_answer(n, FEDC__MSG_GROUP_REPORT, g, 7, t, outputs, FEDC__MSG_REJECT, "another plan");
    memcpy(g, f, sizeof g), g[0].value = "nope";
    expect_answer(n, FEDC__MSG_GROUP_REPORT, g, 7, t, outputs, FEDC__MSG_REJECT, "invalid token");
    memcpy(g, f, sizeof g), g[1].value = "2";
    expect_answer(n, FEDC__MSG_GROUP_REPORT, g, 7, t, outputs, FEDC__MSG_REJECT, "field 'group' is '2'");
    /* a beat for a round that is not open tells the aggregator its report is not wanted */
    expect_answer(n, FEDC__MSG_GROUP_BEAT, (fedc_metadata_entry[]){{"token", "test-token"}, {"group", "1"}, {"round", "5"},
                  {"exchange", "0"}}, 4, NULL, 0, FEDC__MSG_REJECT, "not an open exchange");
}

static void test_groups(void) {
    if (!setup()) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    fedc_train_config c;
    case_config(&c, data_path, path("groups.train"), 2, CASE_CLIENTS);
    CHECK_OK(fedc_plan_build(&c, path("groups")));
    CHECK_OK(fedc_train(&c, NULL));
    static run r;
    start_server(&r, "groups", 2, 60);
    fedc_plan *p = NULL;
    CHECK_OK(fedc_plan_read(r.plan, &p));
    fedc__net n;
    CHECK_OK(fedc__net_dial(&n, r.url[2], (size_t)1 << 28, 30000, NULL));
    if (p && n.open) {
        group_task(&n, p);
        bad_reports(&n, p);
    }
    fedc__net_close(&n);
    start_group(&r, 0);
    start_group(&r, 1);
    finish(&r, 0);
    check_same_bits(path("groups.out/checkpoint.safetensors"), path("groups.train/checkpoint.safetensors"), 2);
    CHECK_EQ_INT(count_lines(path("groups.log"), "refused the aggregator of group"), 7);
    CHECK_EQ_INT(count_lines(path("groups.log"), "refused a request: invalid token"), 1);
    CHECK_EQ_INT(count_lines(path("groups.out/metrics.jsonl"), "\"reported\": 5, \"dropped\": 0, \"refused\": 8"), 1);
    CHECK_EQ_INT(count_lines(path("groups.out/metrics.jsonl"), "\"groups\": 2, \"groups_dropped\": []"), 2);
    CHECK_EQ_INT(count_lines(path("groups.log"), "fedc aggregator 1: done: 2 group reports forwarded"), 1);
    fedc_plan_destroy(p);
}

/* Group 0's aggregator never comes: at the deadline (1.5 s) its group is given
 * up, and group 1's report, which came before, is still added: fedc_train's
 * bits with group 0's clients (slots 0 to 2) dropped. */
static void test_deadline(void) {
    if (!setup()) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    int64_t sampled[CASE_CLIENTS];
    char fault[64];
    CHECK_OK(fedc_sample_clients(CASE_CLIENTS, CASE_CLIENTS, 7, 0, sampled));
    snprintf(fault, sizeof fault, "load:1:%lld,%lld,%lld", (long long)sampled[0], (long long)sampled[1], (long long)sampled[2]);
    fedc_train_config c;
    case_config(&c, data_path, path("late.train"), 1, CASE_CLIENTS);
    CHECK_OK(fedc_plan_build(&c, path("late")));
    CHECK_OK(fedc__fault_set(fault));
    CHECK_OK(fedc_train(&c, NULL));
    CHECK_OK(fedc__fault_set(NULL));
    static run r;
    start_server(&r, "late", 1, 1.5);
    start_group(&r, 1);
    finish(&r, 1);
    check_same_bits(path("late.out/checkpoint.safetensors"), path("late.train/checkpoint.safetensors"), 2);
    CHECK_EQ_INT(count_lines(path("late.log"), "the aggregator of group 0 did not report by the deadline"), 1);
    CHECK_EQ_INT(count_lines(path("late.out/metrics.jsonl"), "\"reported\": 2, \"dropped\": 3"), 1);
    CHECK_EQ_INT(count_lines(path("late.out/metrics.jsonl"), "\"groups_dropped\": [0]"), 1);
}

/* What a server with groups refuses, before it listens: more groups than
 * clients a round, and a plan whose clients keep state (SCAFFOLD's). */
static void test_refused(void) {
    if (!setup()) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    fedc_train_config c;
    case_config(&c, data_path, path("scaffold.train"), 1, 4);
    c.algorithm.def = fedc_algorithm_find("scaffold");
    CHECK_OK(fedc_plan_build(&c, path("scaffold")));
    char plan[600], url[700];
    snprintf(plan, sizeof plan, "%s", path("scaffold"));
    snprintf(url, sizeof url, "ipc://%s", path("refused.sock"));
    fedc_server_options o;
    fedc_server_defaults(&o);
    o.plan = plan, o.listen = url, o.out_dir = path("refused.out"), o.rounds = 1, o.clients_per_round = 4, o.groups = 2;
    o.token = "test-token";
    CHECK_ERR(fedc_server_run(&o), FEDC_EUNSUPPORTED, "a plan whose clients keep state");
    o.groups = 5;
    CHECK_ERR(fedc_server_run(&o), FEDC_EINVAL, "--groups 5 is more groups than the round's 4 clients");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {{"groups", test_groups}, {"deadline", test_deadline},
                                      {"refused", test_refused}};
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
