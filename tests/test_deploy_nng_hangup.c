/* Closing the deployment's sockets after peers hang up while an answer is going
 * out to them: every close returns. This is why fedc builds NNG 1.11 from
 * third_party/nng (docs/status.md). With NNG before 1.8 (Debian 12's 1.5.2), a
 * TCP pipe whose peer hangs up while a message of several socket writes goes
 * out can keep that send pending for ever (the partial write's continuation is
 * dropped on the closing pipe: nanomsg/nng#1813). The process's NNG reaper then
 * waits on it, and with it every later nng_close in that process: the end of a
 * fedc server, client or fleet run.
 *
 * Here the deployment's own sockets (net.h: the server's raw REP, clients' REQ
 * dialled in the background) do it on purpose, round after round: 16 clients
 * ask, the server answers each with a 4 MB task, and the clients hang up while
 * it goes out: the even ones close their sockets after a few milliseconds, the
 * odd ones have NNG drop an answer above their max_message once it has read the
 * frame's length. With NNG 1.5.2 a close hangs within a few rounds. The sockets
 * live in a child process, so that a hang fails the test at a deadline instead
 * of blocking CI. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "deploy/net.h"
#include "free_port.h"
#include "harness.h"

enum { CLIENTS = 16, ROUNDS = 8, ANSWER_FLOATS = 1 << 20 /* 4 MB: many socket writes */ };
static const double DEADLINE = 30; /* seconds; the rounds take about one (Release) */

typedef struct server {
    fedc__net net;
    atomic_int stop, answers;
} server;

/* Each request answered with a task of ANSWER_FLOATS floats, until s->stop. */
static void *serve(void *arg) {
    server *s = arg;
    static float values[ANSWER_FLOATS];
    fedc_tensor_entry w = {.name = "w", .type = {.dtype = FEDC_F32, .rank = 1, .dims = {ANSWER_FLOATS}}, .data = values};
    while (!atomic_load(&s->stop)) {
        nng_msg *m = NULL;
        fedc__req from;
        bool timed_out = false;
        size_t bytes = 0;
        if (fedc__net_recv_req(&s->net, &m, &from, &timed_out)) break;
        if (timed_out) continue;
        nng_msg_free(m);
        if (!fedc__net_reply(&s->net, &from, FEDC__MSG_TASK, NULL, 0, &w, 1, &bytes)) atomic_fetch_add(&s->answers, 1);
    }
    return NULL;
}

/* The rounds of hang-ups, in the child: 0 when every socket closed (a hang never returns). */
static int hang_up_during_sends(void) {
    server s = {0};
    char url[64];
    int port = free_port();
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    if (!port || fedc__net_listen(&s.net, url, 1 << 10, 50, NULL)) {
        fprintf(stderr, "cannot listen on %s: %s\n", url, fedc_errmsg());
        return 2;
    }
    pthread_t t;
    pthread_create(&t, NULL, serve, &s);
    uint64_t rng = 41; /* the same waits every run */
    int failed = 0;
    for (int r = 0; r < ROUNDS && !failed; r++) {
        fedc__net c[CLIENTS];
        int before = atomic_load(&s.answers);
        for (int i = 0; i < CLIENTS; i++) {
            size_t max = i % 2 ? (size_t)64 << 10 : (size_t)8 << 20; /* odd: below the answer */
            if (fedc__net_dial(&c[i], url, max, 2000, NULL) || fedc__net_send(&c[i], "ask", 3)) {
                fprintf(stderr, "round %d, client %d: %s\n", r, i, fedc_errmsg());
                failed = 1;
            }
        }
        /* half the answers on their way, then 0 to 3 ms more, so that the hang-ups fall in the middle of sends */
        for (double t0 = fedc_seconds(); atomic_load(&s.answers) - before < CLIENTS / 2 && fedc_seconds() - t0 < 5;)
            nanosleep(&(struct timespec){0, 100 * 1000}, NULL);
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        nanosleep(&(struct timespec){0, (long)(rng >> 33) % 4 * 1000000L}, NULL);
        for (int i = 0; i < CLIENTS; i++) fedc__net_close(&c[i]);
    }
    atomic_store(&s.stop, 1);
    pthread_join(t, NULL);
    fedc__net_close(&s.net);
    int answers = atomic_load(&s.answers);
    fprintf(stderr, "    %d rounds of %d clients hanging up during 4 MB answers: %d answers sent\n", ROUNDS, CLIENTS, answers);
    if (answers < ROUNDS * CLIENTS / 2)
        fprintf(stderr, "the server answered %d requests of %d\n", answers, ROUNDS * CLIENTS), failed = 1;
    return failed;
}

static void test_close_after_hang_ups(void) {
    fflush(NULL);
    pid_t child = fork(); /* before this process starts NNG: the child starts it afresh */
    if (child == 0) _exit(hang_up_during_sends()); /* _exit: the parent's atexit work is its own */
    CHECK_MSG(child > 0, "cannot fork");
    if (child <= 0) return;
    double t0 = fedc_seconds();
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(child, &status, WNOHANG)) == 0 && fedc_seconds() - t0 < DEADLINE)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    if (done == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        CHECK_MSG(false, "the sockets were not closed within %.0f s after their peers hung up during sends "
                  "(NNG before 1.8: nanomsg/nng#1813; fedc builds third_party/nng by default)", DEADLINE);
        return;
    }
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status %d: see its message above", status);
    fprintf(stderr, "    every socket closed, in %.2f s\n", fedc_seconds() - t0);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {{"close_after_hang_ups", test_close_after_hang_ups}};
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
