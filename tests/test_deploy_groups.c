/* Aggregators (fedc/deploy.h, src/deploy/groups.h): a server with groups, its
 * two aggregators and a fleet on each, as threads of this process over local
 * NNG sockets (ipc://). While round 1 waits, a peer speaking as an aggregator
 * gets its group task, and its damaged group reports (slot flags of the wrong
 * length, blocks that do not tile the group's leaves, a block out of place, a
 * NaN in a sum, another round, plan or token, an unknown group) are each
 * refused with the reason and logged; then the real aggregators run both
 * rounds to fedc_train's bits. With --secure-agg each group's secure
 * aggregation ends with fedc_train's bits too (secure sum's), a client of group
 * 0 cannot join group 1's, and a group whose secure round fails is given up. */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core/fault.h"
#include "deploy/net.h"
#include "deploy/secagg.h"
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
    bool secure;            /* --secure-agg: each group's secure aggregation */
    double agg_deadline[2]; /* aggregator g's report deadline (0: its default) */
    bool fleet[2];          /* a fleet started on group g */
    job j;
    pthread_t server, agg[2], fleets[2];
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
    o->secure_agg = r->secure;
    pthread_create(&r->server, NULL, server_main, &r->j);
}

/* Group g's aggregator, and a fleet of every client on it, on threads. */
static void start_aggregator(run *r, int g) {
    side *s = &r->sides[g];
    fedc_aggregator_defaults(&s->a);
    s->a.connect = r->url[2], s->a.listen = r->url[g], s->a.token = "test-token", s->a.group = g, s->a.out_dir = r->out;
    s->a.timeout = 30, s->a.max_seconds = 120, s->a.linger = 0.5, s->a.log = r->log;
    if (r->agg_deadline[g] > 0) s->a.report_deadline = r->agg_deadline[g];
    pthread_create(&r->agg[g], NULL, aggregator_main, s);
}

static void start_fleet(run *r, int g) {
    side *s = &r->sides[g];
    fedc_client_defaults(&s->c);
    s->c.connect = r->url[g], s->c.data = data_path, s->c.token = "test-token", s->c.timeout = 30, s->c.max_seconds = 120;
    r->fleet[g] = !pthread_create(&r->fleets[g], NULL, fleet_main, s);
}

static void start_group(run *r, int g) {
    start_aggregator(r, g);
    start_fleet(r, g);
}

/* Waits for the groups started and the server, and checks they ended well. */
static void finish(run *r, int first_group) {
    for (int g = first_group; g < 2; g++) {
        pthread_join(r->agg[g], NULL);
        if (r->fleet[g]) pthread_join(r->fleets[g], NULL);
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

/* A plan `name` of the case's job (with secure sum: 16 bits, bound 1), and
 * fedc_train's run of it into NAME.train: `rounds` rounds of every client, the
 * clients of slots [drop_from, drop_to) of round 1 dropped. */
static void train_job(const char *name, int rounds, bool secure, int drop_from, int drop_to) {
    int64_t sampled[CASE_CLIENTS];
    char train[600], fault[128] = "load:1";
    CHECK_OK(fedc_sample_clients(CASE_CLIENTS, CASE_CLIENTS, 7, 0, sampled));
    for (int i = drop_from; i < drop_to; i++)
        snprintf(fault + strlen(fault), sizeof fault - strlen(fault), "%c%lld", i > drop_from ? ',' : ':', (long long)sampled[i]);
    snprintf(train, sizeof train, "%s.train", path(name));
    fedc_train_config c;
    case_config(&c, data_path, train, rounds, CASE_CLIENTS);
    if (secure) c.algorithm.aggregation.secure_sum_bits = 16, c.algorithm.aggregation.secure_sum_bound = 1;
    CHECK_OK(fedc_plan_build(&c, path(name)));
    CHECK_OK(fedc__fault_set(drop_to > drop_from ? fault : NULL));
    CHECK_OK(fedc_train(&c, NULL));
    CHECK_OK(fedc__fault_set(NULL));
}

static void test_groups(void) {
    if (!setup()) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    train_job("groups", 2, false, 0, 0);
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
    train_job("late", 1, false, 0, 3);
    static run r;
    start_server(&r, "late", 1, 1.5);
    start_group(&r, 1);
    finish(&r, 1);
    check_same_bits(path("late.out/checkpoint.safetensors"), path("late.train/checkpoint.safetensors"), 2);
    CHECK_EQ_INT(count_lines(path("late.log"), "the aggregator of group 0 did not report by the deadline"), 1);
    CHECK_EQ_INT(count_lines(path("late.out/metrics.jsonl"), "\"reported\": 2, \"dropped\": 3"), 1);
    CHECK_EQ_INT(count_lines(path("late.out/metrics.jsonl"), "\"groups_dropped\": [0]"), 1);
}

/* A check-in of `client` to n, holding nothing; its answer's type, and the
 * task's "secagg" field in `secagg`. */
static fedc__msg_type checkin_as(fedc__net *n, const fedc_plan *p, int64_t client, char *secagg, size_t size) {
    char version[16], id[24];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    snprintf(id, sizeof id, "%lld", (long long)client);
    fedc_metadata_entry f[] = {{"token", "test-token"}, {"client", id}, {"version", version},
                               {"plan_hash", fedc_plan_hash(p)}, {"hold_ms", "0"}};
    fedc__msg m = {0};
    CHECK_OK(fedc__net_call(n, FEDC__MSG_CHECKIN, f, 5, NULL, 0, &m));
    if (!m.body) return FEDC__MSG_REJECT;
    fedc__msg_type type = m.type;
    const char *field = fedc__msg_field(&m, "secagg");
    snprintf(secagg, size, "%s", field ? field : "");
    fedc__msg_free(&m);
    return type;
}

/* A client of group 0 cannot join group 1's secure aggregation. Aggregator 1's
 * secure round is open (a task of its client `own` carries the round's
 * "secagg" field, with the session the requests name); group 0's client
 * `outsider` is given no task by it, and its advertise message, claiming
 * either of group 1's slots (SecAgg ids 1 and 2) or a slot past them, is
 * refused with the reason. */
static void outsider_refused(fedc__net *n, const fedc_plan *p, int64_t own, int64_t outsider) {
    char secagg[160] = "", id[24], session[32], slot[16];
    fedc__msg_type type = FEDC__MSG_WAIT;
    for (int tries = 0; tries < 400 && type != FEDC__MSG_TASK; tries++)
        if ((type = checkin_as(n, p, own, secagg, sizeof secagg)) != FEDC__MSG_TASK)
            nanosleep(&(struct timespec){0, 25 * 1000 * 1000}, NULL);
    CHECK_MSG(type == FEDC__MSG_TASK && secagg[0], "aggregator 1 gave its client no secure task (%s)", fedc__msg_name(type));
    unsigned t, k, length;
    unsigned long long seed, sess;
    CHECK(sscanf(secagg, "%u %u %llu %llu %u", &t, &k, &seed, &sess, &length) == 5);
    CHECK_EQ_INT((int)t, 1); /* 2 clients: each 1 neighbour, whose share is enough */
    CHECK_EQ_INT(checkin_as(n, p, outsider, secagg, sizeof secagg), FEDC__MSG_WAIT);
    snprintf(id, sizeof id, "%lld", (long long)outsider), snprintf(session, sizeof session, "%llu", sess);
    for (int i = 0; i < 3; i++) {
        fedc__sa_client *c = NULL;
        void *msg = NULL;
        size_t size = 0;
        CHECK_OK(fedc__sa_client_create(&c, (uint32_t)i + 1, &(fedc__sa_params){t, length, k, seed}));
        CHECK_OK(fedc__sa_client_advertise(c, &msg, &size));
        snprintf(slot, sizeof slot, "%d", i);
        fedc_metadata_entry f[] = {{"token", "test-token"}, {"client", id}, {"round", "0"}, {"exchange", "0"},
                                   {"slot", slot}, {"session", session}, {"step", "0"}};
        fedc_tensor_entry e = {"secagg", fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)size}), msg};
        expect_answer(n, FEDC__MSG_SECAGG, f, 7, &e, 1, FEDC__MSG_REJECT,
                      i < 2 ? "which is not this client's in a secure round" : "field 'slot'");
        fedc_free(msg);
        fedc__sa_client_destroy(c);
    }
}

/* Secure aggregation at the group level: each aggregator runs it among its
 * group's clients (3 and 2) and forwards its group's unmasked sum; the server
 * adds the groups'. Two rounds end with fedc_train's bits (secure sum's
 * quantization, the flat secure deployment's too); each group's secure round
 * unmasks every client; group 0's clients cannot join group 1's. */
static void test_secure(void) {
    if (!setup()) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    int64_t sampled[CASE_CLIENTS];
    CHECK_OK(fedc_sample_clients(CASE_CLIENTS, CASE_CLIENTS, 7, 0, sampled));
    train_job("secure", 2, true, 0, 0);
    static run r;
    r.secure = true;
    start_server(&r, "secure", 2, 60);
    fedc_plan *p = NULL;
    CHECK_OK(fedc_plan_read(r.plan, &p));
    start_aggregator(&r, 1);
    fedc__net n;
    CHECK_OK(fedc__net_dial(&n, r.url[1], (size_t)1 << 28, 30000, NULL));
    if (p && n.open) outsider_refused(&n, p, sampled[3], sampled[0]);
    fedc__net_close(&n);
    start_fleet(&r, 1);
    start_group(&r, 0);
    finish(&r, 0);
    check_same_bits(path("secure.out/checkpoint.safetensors"), path("secure.train/checkpoint.safetensors"), 2);
    CHECK_EQ_INT(count_lines(path("secure.log"), "fedc server: 2 groups, each run by an aggregator (fedc aggregator "
                             "--group G), each group's sum by secure aggregation among its clients"), 1);
    CHECK_EQ_INT(count_lines(path("secure.log"), "\"masked\": 3, \"masked_left_out\": 0, \"revealed\": 3, \"unmasked\": true"), 2);
    CHECK_EQ_INT(count_lines(path("secure.log"), "\"masked\": 2, \"masked_left_out\": 0, \"revealed\": 2, \"unmasked\": true"), 2);
    CHECK_EQ_INT(count_lines(path("secure.log"), "fedc aggregator 1: round 1: refused client"), 3);
    CHECK_EQ_INT(count_lines(path("secure.out/metrics.jsonl"), "\"reported\": 5, \"dropped\": 0"), 2);
    CHECK_EQ_INT(count_lines(path("secure.out/metrics.jsonl"), "\"groups_dropped\": []"), 2);
    fedc_plan_destroy(p);
}

/* A group whose secure round fails is given up: group 1's clients never come,
 * so its aggregator's collection ends at its deadline (1 s) with the secure
 * round's first step still open, and it says so instead of forwarding its
 * sums; the round commits with group 0's: fedc_train's bits without group 1's
 * clients (slots 3 and 4). */
static void test_secure_failed(void) {
    if (!setup()) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    train_job("sfail", 1, true, 3, 5);
    static run r;
    r.secure = true, r.agg_deadline[1] = 1;
    start_server(&r, "sfail", 1, 60);
    start_group(&r, 0);
    start_aggregator(&r, 1);
    finish(&r, 0);
    check_same_bits(path("sfail.out/checkpoint.safetensors"), path("sfail.train/checkpoint.safetensors"), 2);
    CHECK_EQ_INT(count_lines(path("sfail.log"), "fedc aggregator 1: round 1: secure aggregation failed: the collection ended "
                             "with step 0 of 3 still open"), 1);
    CHECK_EQ_INT(count_lines(path("sfail.log"), "the aggregator of group 1 says its group's secure aggregation failed"), 1);
    CHECK_EQ_INT(count_lines(path("sfail.out/metrics.jsonl"), "\"reported\": 3, \"dropped\": 2"), 1);
    CHECK_EQ_INT(count_lines(path("sfail.out/metrics.jsonl"), "\"groups_dropped\": [1]"), 1);
}

/* What a server with groups refuses, before it listens: more groups than
 * clients a round, a plan whose clients keep state (SCAFFOLD's), and secure
 * aggregation that cannot work within a group. */
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
    /* each group's secure aggregation must work with its own clients: 3 and 2 of 5, or 2, 2 and 1 */
    c.algorithm.def = fedc_algorithm_find("fedavg");
    c.algorithm.aggregation.secure_sum_bits = 16, c.algorithm.aggregation.secure_sum_bound = 1;
    CHECK_OK(fedc_plan_build(&c, path("ssize")));
    snprintf(plan, sizeof plan, "%s", path("ssize"));
    o.clients_per_round = CASE_CLIENTS, o.groups = 2, o.secure_agg = true, o.secure_threshold = 3;
    CHECK_ERR(fedc_server_run(&o), FEDC_EINVAL, "--secure-agg 3: with 3 clients a group each has 2 neighbours");
    o.groups = 3, o.secure_threshold = 0;
    CHECK_ERR(fedc_server_run(&o), FEDC_EINVAL, "--secure-agg needs at least 2 clients a group, not 1");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {{"groups", test_groups}, {"deadline", test_deadline},
                                      {"secure", test_secure}, {"secure_failed", test_secure_failed},
                                      {"refused", test_refused}};
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
