/*
 * fedc — the command-line tool. It uses only the public API.
 *
 * This file dispatches to the commands (cli/<command>.c) and holds what they
 * share: the checked parsers every flag and config key goes through, so that
 * each bad value gets the same message naming the flag, the value and the valid
 * range; the bounded reader of text files; and --help detection.
 *
 * Exit status, for every command: 0 done, 1 the work failed, 2 bad usage.
 */
#include <ctype.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "fedc/fedc.h"

static const char usage[] =
    "usage: fedc <command> [options]\n"
    "\n"
    "commands:\n"
    "  train --data PATH [options]   federated training: metrics, curves, checkpoints\n"
    "  eval --checkpoint FILE --data PATH [options]\n"
    "                                evaluate a trained model on every client of PATH\n"
    "  data info PATH [--format NAME]\n"
    "                                describe a federated dataset\n"
    "  program check FILE            verify a program written in the text format\n"
    "  program print FILE            print it in canonical form\n"
    "  program grad FILE --of OUTPUT --wrt INPUT[,INPUT...]\n"
    "                                print its gradient program\n"
    "  program jvp FILE --wrt INPUT[,INPUT...]\n"
    "                                print its forward-mode program\n"
    "  program run FILE --input NAME=PATH.npy ... [options]\n"
    "                                run it on .npy inputs and write .npy outputs\n"
    "  program export FILE --to mlir [options]\n"
    "                                write it as an MLIR module (docs/export.md)\n"
    "  program import MODEL.onnx --out FILE [--params FILE.safetensors]\n"
    "                                an ONNX model as a program (docs/onnx.md)\n"
    "  plan build --data PATH --out PLAN [train options]\n"
    "                                a deployment plan of a training job (docs/deployment.md)\n"
    "  plan check PLAN               verify a plan as a server or client does\n"
    "  server --plan PLAN --listen ADDR --rounds R --clients-per-round K --out DIR\n"
    "                                serve a plan to clients over the network\n"
    "  client --connect ADDR --data PATH [--client ID]\n"
    "                                one client of a server's plan, on its data\n"
    "  fleet --connect ADDR --data PATH --clients N\n"
    "                                N clients as threads of one process\n"
    "  aggregator --connect ADDR --listen ADDR --group G --token-file FILE\n"
    "                                one group of a server run with --groups, for its clients\n"
    "  privacy epsilon --noise-multiplier Z --sampling-rate Q --steps T --delta D\n"
    "                                the epsilon of DP-SGD / DP-FedAvg noise (docs/privacy.md)\n"
    "  privacy noise --epsilon E --sampling-rate Q --steps T --delta D\n"
    "                                the noise multiplier for a target epsilon\n"
    "\n"
    "fedc COMMAND --help (fedc program SUBCOMMAND --help) shows a command's options.\n"
    "\n"
    "options:\n"
    "  --help                        show this help\n"
    "  --version                     show the version\n"
    "\n"
    "exit status (every command):\n"
    "  0  done\n"
    "  1  the work failed: a file missing, unreadable or malformed, data or a program\n"
    "     that does not fit the options, out of memory (the message says which)\n"
    "  2  bad usage, and nothing was done: an unknown command or option, a missing\n"
    "     value, a value that is malformed or out of its range (the message gives the\n"
    "     range), a --config file that cannot be read or has a bad line\n";

/* ------------------------------------------------------------ the checks -- */

bool cli_wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return true;
    return false;
}

bool cli_uint(const char *cmd, const char *what, const char *text, uint64_t lo, uint64_t hi, uint64_t *out) {
    uint64_t v = 0;
    bool ok = *text != '\0';
    for (const char *s = text; ok && *s; s++) {
        unsigned d = (unsigned)(*s - '0');
        ok = d <= 9 && v <= (UINT64_MAX - d) / 10; /* a digit, and no wrap past 2^64 - 1 */
        v = v * 10 + d;
    }
    if (ok && v >= lo && v <= hi) {
        *out = v;
        return true;
    }
    fprintf(stderr, "%s: %s needs an integer from %llu to %llu, not '%s'\n", cmd, what, (unsigned long long)lo,
            (unsigned long long)hi, text);
    return false;
}

bool cli_real(const char *cmd, const char *what, const char *text, cli_range r, double *out) {
    char *end;
    errno = 0;
    double v = *text && !isspace((unsigned char)*text) ? strtod(text, &end) : NAN;
    bool ok = isfinite(v) && !*end && (r.lo_open ? v > r.lo : v >= r.lo) && (r.hi_open ? v < r.hi : v <= r.hi);
    if (ok) {
        *out = v;
        return true;
    }
    fprintf(stderr, "%s: %s needs a number in %c%.10g, %.10g%c, not '%s'\n", cmd, what, r.lo_open ? '(' : '[',
            r.lo, r.hi, r.hi_open ? ')' : ']', text);
    return false;
}

bool cli_text(const char *cmd, const char *what, const char *text) {
    if (*text) return true;
    fprintf(stderr, "%s: %s needs a value, not ''\n", cmd, what);
    return false;
}

bool cli_bool(const char *cmd, const char *what, const char *text, bool *out) {
    static const char *const words[][2] = {{"no", "yes"}, {"false", "true"}, {"off", "on"}, {"0", "1"}};
    for (int i = 0; i < 4; i++)
        for (int v = 0; v < 2; v++)
            if (!strcasecmp(text, words[i][v])) {
                *out = v;
                return true;
            }
    fprintf(stderr, "%s: %s needs yes/no, true/false, on/off or 1/0, not '%s'\n", cmd, what, text);
    return false;
}

/* ------------------------------------------------------------- dispatch -- */

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command commands[] = {
    {"train", fedc_cli_train}, {"eval", fedc_cli_eval}, {"data", fedc_cli_data}, {"program", fedc_cli_program},
    {"privacy", fedc_cli_privacy}, {"plan", fedc_cli_plan},
    {"server", fedc_cli_server}, {"client", fedc_cli_client}, {"fleet", fedc_cli_fleet},
    {"aggregator", fedc_cli_aggregator}};

/* Settings a fedc process needs before the libraries it loads read them, so fedc
 * runs itself again with them set in its environment, once, before anything
 * else (if that fails it goes on without them; a value the user set is kept):
 * - OPENBLAS_NUM_THREADS=1. OpenBLAS starts its own threads when it is loaded,
 *   one per core, and each takes a 128 MB buffer at once. fedc never uses them
 *   (it calls BLAS from its own threads, one BLAS thread each), and under a
 *   memory limit one of them retries its allocation forever and the process
 *   cannot exit.
 * - GLIBC_TUNABLES=glibc.malloc.hugetlb=1: malloc asks for 2 MB pages where it
 *   maps memory. A deployed server and its clients take model-sized messages
 *   from NNG, whose buffers fedc does not allocate; faulted in 4 KB at a time,
 *   they cost the server a third of its CPU (docs/history/2026-12-06.md). */
static void with_process_settings(char **argv) {
    bool again = false;
    if (!getenv("OPENBLAS_NUM_THREADS") && setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0) again = true;
    if (!getenv("GLIBC_TUNABLES") && setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1) == 0) again = true;
    if (again) execv("/proc/self/exe", argv);
}

/* Every command frees and allocates buffers of a client's data or a model's size
 * over and over: a round's batches, a server's and a client's messages. glibc
 * would hand each one back to the kernel when it is freed and fault the next in
 * again a page at a time, and a page fault is dear in a virtual machine (a
 * FEMNIST writer's 450 KB took 2 ms to load fresh, 0.04 ms into reused memory),
 * while the training's cores wait (docs/history/2026-12-06.md). Kept in the heap instead:
 * RSS is then the most the process held at once. One heap for every thread, as
 * NNG's threads take a message's buffer and another thread frees it: with a heap
 * a thread, a fleet's received models were faulted in afresh in every round.
 * Process settings, so the program makes them, not the library. */
static void keep_freed_buffers(void) {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 32 << 20); /* glibc's largest */
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_ARENA_MAX, 1); /* one heap: a buffer one thread frees serves the next any thread takes */
#endif
}

int main(int argc, char **argv) {
    with_process_settings(argv);
    keep_freed_buffers();
#ifdef FEDC_HAVE_FORMATS
    fedc_formats_register(); /* the TFF and FedJAX readers (libfedc_formats) */
#endif
    cli_register_onnx_models(); /* --model onnx:FILE */
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("fedc %s\n", FEDC_VERSION);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 2, argv + 2);
    fprintf(stderr, "fedc: unknown command '%s' (commands: train, eval, data, program, privacy, plan, server, client, fleet, aggregator; see fedc --help)\n", argv[1]);
    return CLI_USAGE;
}
