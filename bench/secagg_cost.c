/*
 * bench_secagg_cost — what secure aggregation (src/deploy/secagg*.c) costs a
 * client and the server against the cohort's size, beside the plain sum.
 *
 *     ./build/bench_secagg_cost [length] [drop] [cohorts...]   (default 10000 0.1 10 50 100 200 500)
 *
 * One round in one process, one thread: n clients of `length` u32 words each
 * (the secure sum's words of a model of `length` parameters), a fraction `drop`
 * of them dropping after they share their keys (the costly case: the server
 * rebuilds their mask keys and their survivors' pairwise masks). Two graphs:
 * SecAgg's complete graph with t = floor(n/2) + 1, and SecAgg+'s with
 * k = 2 ceil(log2 n) neighbours (t = k/2 + 1) once k < n - 1.
 *
 * Per client: the mean CPU seconds of its four steps and the bytes it sends and
 * receives; the server: its seconds (receiving, relaying, unmasking) and bytes.
 * Plain: a client sends its 4 x length bytes, the server adds n vectors. The
 * sum is checked against the plain one every time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bench.h"
#include "deploy/secagg.h"

typedef struct cost {
    double client_s, server_s, plain_server_s;
    double client_sent, client_received, server_sent, server_received; /* bytes */
} cost;

typedef struct round_state {
    fedc__sa_params p;
    int n;
    fedc__sa_client **c;
    fedc__sa_server *s;
    uint32_t *words;
    bool *dropped;
    cost k;
} round_state;

/* The server takes a client's message; the seconds count as the server's. */
static void to_server(round_state *r, void *msg, size_t size) {
    double t = bench_now();
    if (fedc__sa_server_receive(r->s, msg, size)) fprintf(stderr, "server: %s\n", fedc_errmsg()), exit(1);
    r->k.server_s += bench_now() - t;
    r->k.client_sent += (double)size, r->k.server_received += (double)size;
    fedc_free(msg);
}

static void *from_server(round_state *r, uint32_t to, size_t *size) {
    void *m = NULL;
    double t = bench_now();
    if (fedc__sa_server_message(r->s, to, &m, size)) fprintf(stderr, "server: %s\n", fedc_errmsg()), exit(1);
    r->k.server_s += bench_now() - t;
    return m;
}

static void closing(round_state *r) {
    double t = bench_now();
    if (fedc__sa_server_close(r->s)) fprintf(stderr, "server: %s\n", fedc_errmsg()), exit(1);
    r->k.server_s += bench_now() - t;
}

/* Client i's step `r` on `in` (NULL in round 0). */
static void client_step(round_state *st, int i, int round, const void *in, size_t in_size) {
    void *out = NULL;
    size_t size = 0;
    double t = bench_now();
    fedc_status e = round == 0   ? fedc__sa_client_advertise(st->c[i], &out, &size)
                    : round == 1 ? fedc__sa_client_share(st->c[i], in, in_size, &out, &size)
                    : round == 2 ? fedc__sa_client_mask(st->c[i], in, in_size, st->words + (size_t)i * st->p.length, &out, &size)
                                 : fedc__sa_client_unmask(st->c[i], in, in_size, &out, &size);
    if (e) fprintf(stderr, "client: %s\n", fedc_errmsg()), exit(1);
    st->k.client_s += bench_now() - t;
    if (in) st->k.client_received += (double)in_size, st->k.server_sent += (double)in_size;
    to_server(st, out, size);
}

static void protocol(round_state *st) {
    for (int round = 0; round < 4; round++) {
        size_t size = 0;
        void *in = round == 1 || round == 3 ? from_server(st, 0, &size) : NULL;
        for (int i = 0; i < st->n; i++) {
            if (round >= 2 && st->dropped[i]) continue;
            if (round == 2) in = from_server(st, (uint32_t)i + 1, &size);
            client_step(st, i, round, in, size);
            if (round == 2) fedc_free(in), in = NULL;
        }
        fedc_free(in);
        if (round < 3) closing(st);
    }
}

static cost measure(int n, uint32_t length, double drop, uint32_t k, uint32_t t) {
    round_state st = {.p = {.threshold = t, .length = length, .neighbours = k, .graph_seed = 7}, .n = n};
    st.c = calloc((size_t)n, sizeof *st.c);
    st.words = malloc((size_t)n * length * sizeof *st.words);
    st.dropped = calloc((size_t)n, sizeof *st.dropped);
    uint32_t *want = calloc(length, sizeof *want), *got = malloc(length * sizeof *got);
    for (size_t i = 0; i < (size_t)n * length; i++) st.words[i] = (uint32_t)(i * 2654435761u);
    for (int i = 0; i < n; i++) st.dropped[i] = i % (int)(1 / (drop > 0 ? drop : 1e-9)) == 1 && drop > 0;
    double t0 = bench_now();
    for (int i = 0; i < n; i++) /* the plain sum of the survivors */
        if (!st.dropped[i]) fedc_secure_sum_add(want, st.words + (size_t)i * length, length);
    st.k.plain_server_s = bench_now() - t0;
    if (fedc__sa_server_create(&st.s, &st.p)) fprintf(stderr, "%s\n", fedc_errmsg()), exit(1);
    for (int i = 0; i < n; i++)
        if (fedc__sa_client_create(&st.c[i], (uint32_t)i + 1, &st.p)) fprintf(stderr, "%s\n", fedc_errmsg()), exit(1);
    protocol(&st);
    double t1 = bench_now();
    if (fedc__sa_server_sum(st.s, got)) fprintf(stderr, "sum: %s\n", fedc_errmsg()), exit(1);
    st.k.server_s += bench_now() - t1;
    if (memcmp(got, want, length * sizeof *got)) fprintf(stderr, "the sum differs from the plain sum\n"), exit(1);
    for (int i = 0; i < n; i++) fedc__sa_client_destroy(st.c[i]);
    fedc__sa_server_destroy(st.s);
    free(st.c), free(st.words), free(st.dropped), free(want), free(got);
    cost c = st.k;
    c.client_s /= n, c.client_sent /= n, c.client_received /= n;
    return c;
}

static void report(const char *graph, int n, uint32_t length, uint32_t k, uint32_t t, cost c) {
    printf("%-8s %5d %4u %4u  %9.4f %9.1f %9.1f  %9.3f %10.1f  %9.5f %9.1f\n", graph, n, k ? k : (uint32_t)n - 1, t,
           c.client_s, c.client_sent / 1024, c.client_received / 1024, c.server_s,
           (c.server_sent + c.server_received) / 1048576, c.plain_server_s, 4.0 * length / 1024);
    bench_json("secagg_cost", "\"graph\": \"%s\", \"clients\": %d, \"neighbours\": %u, \"threshold\": %u, \"length\": %u, "
               "\"client_s\": %.6f, \"client_sent_bytes\": %.0f, \"client_received_bytes\": %.0f, \"server_s\": %.6f, "
               "\"server_bytes\": %.0f, \"plain_server_s\": %.6f, \"plain_client_sent_bytes\": %u",
               graph, n, k ? k : (uint32_t)n - 1, t, length, c.client_s, c.client_sent, c.client_received, c.server_s,
               c.server_sent + c.server_received, c.plain_server_s, 4 * length);
}

int main(int argc, char **argv) {
    uint32_t length = argc > 1 ? (uint32_t)atol(argv[1]) : 10000;
    double drop = argc > 2 ? atof(argv[2]) : 0.1;
    int defaults[] = {10, 50, 100, 200, 500}, ncohorts = argc > 3 ? argc - 3 : 5;
    printf("secagg cost: %u words a client, %.0f%% dropping after sharing; one thread\n", length, 100 * drop);
    printf("%-8s %5s %4s %4s  %9s %9s %9s  %9s %10s  %9s %9s\n", "graph", "n", "k", "t", "client_s", "sent_KiB",
           "recv_KiB", "server_s", "server_MiB", "plain_s", "plain_KiB");
    for (int j = 0; j < ncohorts; j++) {
        int n = argc > 3 ? atoi(argv[3 + j]) : defaults[j];
        if (n < 3) continue;
        uint32_t t = (uint32_t)n / 2 + 1; /* 2t > n - 1 */
        report("secagg", n, length, 0, t, measure(n, length, drop, 0, t));
        uint32_t k = 2 * (uint32_t)ceil(log2(n));
        if (k < (uint32_t)n - 1) report("secagg+", n, length, k, k / 2 + 1, measure(n, length, drop, k, k / 2 + 1));
    }
    return 0;
}
