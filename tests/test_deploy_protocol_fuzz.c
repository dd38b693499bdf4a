/* A fuzzer that speaks the protocol to a live server (docs/deployment-internals.md, "How
 * it is tested"), bounded in time: a server with per-client credentials on a
 * loopback TCP port, an honest fleet of clients 0 to 3, and meanwhile a hostile
 * peer holding client 4's credential that sends, for the whole job, valid
 * requests of every client type (check-in, heartbeat, ready, report, secagg)
 * with one field mutated (a number, an empty or long value, odd bytes, the
 * field left out), and frames truncated, with a damaged header, declaring a
 * huge length, or junk; messages above --max-message on raw connections (NNG
 * hangs up); while slow-loris connections dribble a message a byte at a time
 * and up to 1,000 connections sit idle.
 *
 * Its reports carry a NaN, and no mutation touches a tensor, so none can be
 * added: the server must answer every request (never stall), refuse each
 * damaged or unauthenticated one, and the honest clients must finish with the
 * bits of fedc_train over the clients that reported (client 4 left out of both
 * rounds). Seeded: the same sequence of requests every run (how many fit in
 * the job depends on the machine). Built with ASan + UBSan (a
 * FEDC_SANITIZE build) it is the memory check of the server's request path. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/fault.h"
#include "deploy/credential.h"
#include "deploy/net.h"
#include "deploy_threads.h"
#include "free_port.h"

enum { HOSTILE = 4, ROUNDS = 2, MAX_IDLE = 1000, SLOW_LORIS = 16, SERVER_MAX = 1 << 20 };

static void sleep_ms(int ms) { nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL); }

static int rnd(int n) { return (int)fedc_test_uniform(0, n) % n; }

/* A TCP connection to 127.0.0.1:port on its way, or -1: not waited for, as a
 * thousand of them overflow the listener's backlog and each would wait seconds. */
static int tcp_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && fcntl(fd, F_SETFL, O_NONBLOCK) == 0 && (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 ||
                                                          errno == EINPROGRESS))
        return fd;
    if (fd >= 0) close(fd);
    return -1;
}

typedef struct hostile {
    const char *url;
    int port;
    fedc_plan *plan;
    char credential[FEDC__CREDENTIAL_HEX + 1];
    int64_t slot[ROUNDS]; /* client 4's slot in each round */
    atomic_int stop;
    int requests, refused, stalled, accepted_damaged, idle, slow, hung_up;
    int logged; /* of the refused, those the server logs: all but a well-formed ready turned away (a late one is normal) */
    char problem[512];
} hostile;

static void problem(hostile *h, const char *what, int type) {
    if (!h->problem[0]) snprintf(h->problem, sizeof h->problem, "%s (answered %s)", what, type < 0 ? "nothing" : fedc__msg_name((fedc__msg_type)type));
}

/* Sends a frame and reads the answer: its type, or -1 (none in time), -2 (not a frame). */
static int exchange(fedc__net *n, const void *frame, size_t size) {
    if (fedc__net_send(n, frame, size)) return -1;
    void *data = NULL;
    size_t got = 0;
    bool timed_out = false;
    if (fedc__net_recv(n, &data, &got, &timed_out) || timed_out || !data) return -1;
    fedc__msg m = {0};
    int type = fedc__wire_decode(data, got, (size_t)1 << 28, &m) ? -2 : (int)m.type;
    fedc__msg_free(&m);
    nng_free(data, got);
    return type;
}

/* A mutated value for a field: a number, empty, long, odd bytes (no quote or backslash, which metadata holds
 * no escapes for), or NULL: the field left out. */
static const char *mutant(char *buf, size_t size) {
    switch (rnd(6)) {
    case 0: snprintf(buf, size, "%d", rnd(12) - 3); return buf;
    case 1: snprintf(buf, size, "%lld", (long long)1 << (30 + rnd(33))); return buf;
    case 2: return "";
    case 3: memset(buf, '7', size - 1), buf[size - 1] = '\0'; return buf;
    case 4: {
        size_t n = 1 + (size_t)rnd(40);
        for (size_t i = 0; i < n && i + 1 < size; i++) {
            char c = (char)(1 + rnd(126));
            buf[i] = c == '"' || c == '\\' ? 'x' : c == '\n' ? '\v' : c; /* a raw newline after encoding */
        }
        buf[n < size ? n : size - 1] = '\0';
        return buf;
    }
    default: return NULL;
    }
}

/* One request of a random client type, as client 4 would send it for a random round, with one field mutated
 * (or none), then damaged as a frame (or not). *damaged: it must be refused whatever its fields. */
static void *one_request(hostile *h, size_t *size, bool *damaged, bool *authentic, fedc__msg_type *sent_type) {
    static const fedc__msg_type types[] = {FEDC__MSG_CHECKIN, FEDC__MSG_HEARTBEAT, FEDC__MSG_READY, FEDC__MSG_REPORT,
                                           FEDC__MSG_SECAGG};
    fedc__msg_type type = *sent_type = types[rnd(5)];
    int r = rnd(ROUNDS);
    char version[16], round[16], slot[16], value[160];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    snprintf(round, sizeof round, "%d", r);
    snprintf(slot, sizeof slot, "%lld", (long long)h->slot[r]);
    fedc_metadata_entry f[8] = {{"token", h->credential}, {"client", "4"}};
    int nf = 2;
    if (type == FEDC__MSG_CHECKIN)
        f[nf++] = (fedc_metadata_entry){"version", version}, f[nf++] = (fedc_metadata_entry){"plan_hash", fedc_plan_hash(h->plan)};
    else
        f[nf++] = (fedc_metadata_entry){"round", round}, f[nf++] = (fedc_metadata_entry){"exchange", "0"},
        f[nf++] = (fedc_metadata_entry){"slot", slot};
    if (type == FEDC__MSG_CHECKIN || type == FEDC__MSG_READY) f[nf++] = (fedc_metadata_entry){"hold_ms", "300"};
    if (type == FEDC__MSG_REPORT) f[nf++] = (fedc_metadata_entry){"hash", fedc_plan_hash(h->plan)};
    if (type == FEDC__MSG_SECAGG) f[nf++] = (fedc_metadata_entry){"session", "1"}, f[nf++] = (fedc_metadata_entry){"step", "0"};
    *authentic = true;
    if (rnd(4)) { /* one field mutated */
        int i = rnd(nf);
        const char *v = mutant(value, 2 + (size_t)rnd(150));
        /* a changed token or client no longer matches the credential; a field left out is refused */
        if (!v || (i <= 1 && strcmp(v, f[i].value))) *authentic = false;
        if (v) f[i].value = v;
        else memmove(&f[i], &f[i + 1], (size_t)(nf - i - 1) * sizeof *f), nf--;
    }
    fedc_tensor_entry t[16];
    int nt = 0;
    static float nan_first[785 * 62];
    static unsigned char bytes[64];
    nan_first[0] = NAN; /* a report that can never be added */
    if (type == FEDC__MSG_REPORT) {
        const fedc_program *agg = fedc_deployment_form_phase(fedc_plan_form(h->plan), 0, FEDC_PHASE_AGGREGATION);
        for (int i = 0; i < fedc_program_num_inputs(agg) && nt < 16; i++) {
            fedc_type ty = fedc_value_type(agg, fedc_program_input(agg, i));
            ty.placement = FEDC_LOCAL;
            t[nt++] = (fedc_tensor_entry){fedc_program_input_name(agg, i), ty, nan_first};
        }
    }
    if (type == FEDC__MSG_SECAGG && rnd(2)) t[nt++] = (fedc_tensor_entry){"secagg", fedc_type_make(FEDC_U8, 1, (int64_t[]){64}), bytes};
    void *frame = NULL;
    if (fedc__wire_encode(type, f, nf, t, nt, &frame, size)) return NULL;
    unsigned char *b = frame;
    /* the encoder refuses a newline in a field, but a peer need not use it: each vertical tab (one of the
     * mutants' bytes) becomes a raw newline in the frame's JSON header, which the decoder takes */
    uint64_t header = 0;
    for (int i = 7; i >= 0 && *size >= 24; i--) header = header << 8 | b[16 + i];
    for (size_t i = 24; i < *size && i - 24 < header; i++)
        if (b[i] == '\v') b[i] = '\n';
    *damaged = true;
    switch (rnd(8)) {
    case 0: *size = (size_t)rnd((int)*size); break;      /* truncated */
    case 1: b[(int[]){0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15}[rnd(14)]] ^= (unsigned char)(1 + rnd(255));
        break; /* the header's magic, version or length damaged (another type may be another valid request) */
    case 2: b[15] = 0x7f; break;                            /* a length of 2^63 and more */
    case 3: for (size_t i = 0; i < *size && i < 200; i++) b[i] = (unsigned char)rnd(256); break; /* junk */
    default: *damaged = false;
    }
    return frame;
}

/* A message declaring more than the server takes (--max-message), over a raw
 * connection: NNG reads its length and hangs up, before anything is allocated
 * or the server sees it. */
static void oversized(hostile *h) {
    int fd = tcp_connect(h->port);
    struct pollfd p = {fd, POLLOUT, 0};
    if (fd < 0 || poll(&p, 1, 2000) != 1 || !(p.revents & POLLOUT)) {
        if (fd >= 0) close(fd);
        return;
    }
    /* a REQ peer's header, then a length of 2 MiB (big-endian) */
    static const unsigned char m[16] = {0, 'S', 'P', 0, 0, 0x30, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0};
    bool closed = send(fd, m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m;
    p.events = POLLIN;
    for (double t0 = fedc_seconds(); !closed && fedc_seconds() - t0 < 5;) {
        char buf[64];
        if (poll(&p, 1, 100) == 1 && recv(fd, buf, sizeof buf, 0) <= 0) closed = true; /* the server's header, then EOF */
    }
    if (closed) h->hung_up++;
    else problem(h, "the server kept a connection whose message is above --max-message", -1);
    close(fd);
}

static void *hostile_main(void *arg) {
    hostile *h = arg;
    int idle[MAX_IDLE], slow[SLOW_LORIS], sent[SLOW_LORIS] = {0};
    /* NNG's TCP header of a REQ (protocol 0x30) peer, then a message of 1000 bytes (8-byte big-endian length) */
    static unsigned char loris[16 + 1000] = {0, 'S', 'P', 0, 0, 0x30, 0, 0, 0, 0, 0, 0, 0, 0, 0x03, 0xe8};
    struct rlimit lim;
    int want = MAX_IDLE;
    if (!getrlimit(RLIMIT_NOFILE, &lim)) { /* the server's side of each connection is in this process too */
        if (lim.rlim_cur < lim.rlim_max) lim.rlim_cur = lim.rlim_max, setrlimit(RLIMIT_NOFILE, &lim);
        getrlimit(RLIMIT_NOFILE, &lim);
        if (lim.rlim_cur < 2 * MAX_IDLE + 256) want = lim.rlim_cur > 512 ? (int)(lim.rlim_cur - 256) / 2 : 0;
    }
    fedc__net n;
    /* the server is up once it answers (NNG dials in the background): a frame of junk, refused */
    int type = fedc__net_dial(&n, h->url, (size_t)1 << 28, 30000, NULL) ? -1 : exchange(&n, "junk", 4);
    if (type != FEDC__MSG_REJECT) {
        problem(h, "the server did not refuse a first frame of junk", type);
        fedc__net_close(&n);
        return NULL;
    }
    for (int i = 0; i < want; i++)
        if ((idle[h->idle] = tcp_connect(h->port)) >= 0) h->idle++;
    for (int i = 0; i < SLOW_LORIS; i++) slow[i] = tcp_connect(h->port);
    while (!atomic_load(&h->stop)) {
        size_t size = 0;
        bool damaged = false, authentic = true;
        fedc__msg_type kind = 0;
        void *frame = one_request(h, &size, &damaged, &authentic, &kind);
        if (!frame) continue;
        type = exchange(&n, frame, size);
        fedc_free(frame);
        h->requests++;
        if (type == FEDC__MSG_REJECT) h->refused++, h->logged += damaged || kind != FEDC__MSG_READY;
        if (type == -1 && !atomic_load(&h->stop)) h->stalled++, problem(h, "a request the server did not answer", -1);
        if (type == -2) problem(h, "an answer that is not a frame", -1);
        if ((damaged || !authentic) && type >= 0 && type != FEDC__MSG_REJECT) h->accepted_damaged++, problem(h, "a damaged request not refused", type);
        if (type == -1) { /* the REQ socket's state after a lost answer: start afresh */
            fedc__net_close(&n);
            if (fedc__net_dial(&n, h->url, (size_t)1 << 28, 5000, NULL)) break;
        }
        if (h->requests % 64 == 0) oversized(h);
        for (int i = 0; i < SLOW_LORIS; i++) /* a byte at a time: a REQ peer's SP header, then a message never finished */
            if (slow[i] >= 0 && sent[i] < (int)sizeof loris - 1 && send(slow[i], loris + sent[i], 1, MSG_NOSIGNAL) == 1)
                sent[i]++, h->slow++;
        sleep_ms(2);
    }
    fedc__net_close(&n);
    for (int i = 0; i < h->idle; i++) close(idle[i]);
    for (int i = 0; i < SLOW_LORIS; i++)
        if (slow[i] >= 0) close(slow[i]);
    return NULL;
}

static void test_live_protocol_fuzz(void) {
    if (!deploy_setup("deploy-protocol-fuzz")) {
        CHECK_MSG(false, "cannot set up");
        return;
    }
    /* fedc_train's run without client 4, which never gets a report added */
    fedc_train_config c;
    case_config(&c, data_path, path("fuzz.train"), ROUNDS, CASE_CLIENTS);
    CHECK_OK(fedc_plan_build(&c, path("fuzz")));
    CHECK_OK(fedc__fault_set("load:1:4/2:4"));
    CHECK_OK(fedc_train(&c, NULL));
    CHECK_OK(fedc__fault_set(NULL));
    char creds[700], key[700], plan_dir[700], out_dir[700], url[64];
    snprintf(creds, sizeof creds, "%s", path("fuzz.credentials")), snprintf(key, sizeof key, "%s", path("fuzz.key"));
    snprintf(plan_dir, sizeof plan_dir, "%s", path("fuzz")), snprintf(out_dir, sizeof out_dir, "%s", path("fuzz.out"));
    CHECK_OK(fedc_credentials_issue(key, CASE_CLIENTS, creds));
    int port = free_port();
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    hostile h = {.url = url, .port = port};
    CHECK_OK(fedc_plan_read(plan_dir, &h.plan));
    CHECK_OK(fedc__credential_read(creds, HOSTILE, h.credential));
    for (int r = 0; r < ROUNDS; r++) {
        int64_t sampled[CASE_CLIENTS];
        CHECK_OK(fedc_sample_clients(CASE_CLIENTS, CASE_CLIENTS, 7, (uint32_t)r, sampled));
        for (int i = 0; i < CASE_CLIENTS; i++)
            if (sampled[i] == HOSTILE) h.slot[r] = i;
    }
    if (!h.plan || !port) return;

    FILE *log = fopen(path("fuzz.log"), "w"), *clog = fopen(path("fuzz.clients.log"), "w");
    job j;
    memset(&j, 0, sizeof j);
    fedc_server_defaults(&j.s);
    j.s.plan = plan_dir, j.s.listen = url, j.s.out_dir = out_dir, j.s.log = log, j.s.credentials_key = key;
    j.s.rounds = ROUNDS, j.s.clients_per_round = CASE_CLIENTS, j.s.max_message = SERVER_MAX;
    j.s.report_deadline = 4, j.s.heartbeat_timeout = 2, j.s.linger = 2;
    pthread_t server, peer;
    pthread_create(&server, NULL, server_main, &j);
    fedc_test_seed(41);
    pthread_create(&peer, NULL, hostile_main, &h);
    fedc_client_options o;
    fedc_client_defaults(&o);
    o.connect = url, o.data = data_path, o.credentials_dir = creds, o.timeout = 30, o.max_seconds = 120, o.log = clog;
    fedc_status st = fedc_fleet_run(&o, HOSTILE); /* clients 0 to 3 */
    CHECK_MSG(st == FEDC_OK, "the honest fleet: %s", fedc_errmsg());
    atomic_store(&h.stop, 1);
    pthread_join(peer, NULL);
    pthread_join(server, NULL);
    fclose(log), fclose(clog);
    CHECK_MSG(j.st == FEDC_OK, "server: %s", j.err);
    CHECK_MSG(!h.problem[0], "%s", h.problem);
    CHECK_EQ_INT(h.stalled, 0);
    CHECK_EQ_INT(h.accepted_damaged, 0);
    CHECK_MSG(h.requests >= 100 && h.refused >= h.requests / 2, "%d hostile requests, %d refused", h.requests, h.refused);
    CHECK_MSG(h.slow > 0, "no slow-loris byte sent");
    CHECK_MSG(h.idle >= 100, "only %d idle connections", h.idle);
    CHECK_MSG(h.hung_up > 0, "no oversized message sent");
    fprintf(stderr, "    %d hostile requests (%d refused), %d oversized (hung up on), %d idle connections, %d slow-loris "
            "bytes\n", h.requests, h.refused, h.hung_up, h.idle, h.slow);
    check_same_bits(path("fuzz.out/checkpoint.safetensors"), path("fuzz.train/checkpoint.safetensors"), 2);
    /* a mutated client id holds newlines and other control characters: none forges a line of the server's log */
    CHECK_EQ_INT(count_lines(path("fuzz.log"), "\n") - count_lines(path("fuzz.log"), "fedc server: "), 0);
    int logged = count_lines(path("fuzz.log"), ": refused ");
    CHECK_MSG(logged >= h.logged, "%d refusals logged, but the peer was refused %d times (not counting readies)", logged,
              h.logged);
    CHECK_EQ_INT(count_lines(path("fuzz.out/metrics.jsonl"), "\"left_out\": [4]"), ROUNDS);
    CHECK_EQ_INT(count_lines(path("fuzz.out/metrics.jsonl"), "\"reported\": 4,"), ROUNDS);
    fedc_plan_destroy(h.plan);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {{"live_protocol_fuzz", test_live_protocol_fuzz}};
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
