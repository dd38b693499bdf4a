/*
 * fedc server, fedc client, fedc fleet — a plan deployed over the network
 * (fedc/deploy.h, docs/deployment.md): one server process, and clients that
 * each hold one client's data (a fleet: many clients as threads of one process).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"

static const char server_usage[] =
    "usage: fedc server --plan PLAN --listen ADDR --rounds R --clients-per-round K --out DIR [options]\n"
    "  run a plan's server (fedc plan build): each round selects K clients as fedc train samples\n"
    "  them, sends them the current model, adds their reports in slot order, checkpoints\n"
    "  DIR/checkpoint.safetensors and writes a row of DIR/metrics.jsonl; restarted with the same\n"
    "  command it continues from the checkpoint. A plan's warm start (HypCluster's k-means++) runs\n"
    "  first, as round 0 on fedc train's warm cohort (K must be the plan's --clients-per-round)\n"
    "  --listen ADDR            tcp://HOST:PORT (tcp://127.0.0.1:PORT: this host only) or ipc:///PATH\n"
    "  --token T                the token clients must present (default: one is made and written\n"
    "                           to DIR/token)\n"
    "  --token-file FILE        the token, as FILE's first line\n"
    "  --credentials-key FILE   per-client credentials instead of a token: each client must present\n"
    "                           the credential of its own id, derived from the key in FILE\n"
    "  --tls-cert FILE --tls-key FILE\n"
    "                           PEM certificate and key, for a tls+tcp://HOST:PORT address\n"
    "  --report-deadline S      seconds a round waits for its reports (default 600)\n"
    "  --min-reports M          reports a round needs by the deadline, else it is run again (default 1)\n"
    "  --over-select F          select ceil(F K) clients, add the first K reports in slot order\n"
    "                           (1 to 100, default 1)\n"
    "  --heartbeat S            seconds between a working client's heartbeats, and the longest a\n"
    "                           selected client's request is held (default: a quarter of the\n"
    "                           heartbeat timeout); a waiting client's check-in is held until it has\n"
    "                           a task, or for half its --timeout\n"
    "  --heartbeat-timeout S    a selected client silent this long is given up (default 30)\n"
    "  --max-held N             check-ins held for a task (default 4096); more are told to come\n"
    "                           back after the heartbeat interval\n"
    "  --reorder-window W       reports ahead of the slot order kept in memory, the rest in a\n"
    "                           file in DIR until their turn (default 16)\n"
    "  --max-message BYTES      the largest message a client may send, 1024 to 2^32 (default 2^28)\n"
    "  --threads N              threads for the server phases, 1 to 256 (default 1)\n"
    "  --linger S               seconds to tell clients the job is done, after it is (default 2)\n"
    "  --secure-agg T|auto      secure aggregation (SecAgg) of a plan built with --secure-sum: the\n"
    "                           server learns only the sum of the clients' words; T shares rebuild a\n"
    "                           dropped client's masks (auto: half its neighbours, plus one)\n"
    "  --secure-neighbours K    SecAgg+: each client shares with K neighbours on a ring (even;\n"
    "                           default 0: with every other client)\n"
    "  --groups N               cut each round's clients into N groups of contiguous slots, each run\n"
    "                           by an aggregator (fedc aggregator --group G)\n"
    "                           that forwards its group's sums; a plan built with --groups N pins\n"
    "                           each client to its group (default: none; docs/deployment-aggregators.md)\n"
    "  --async K                asynchronous (a plan of fedbuff, or of fedasync with K = 1): reports\n"
    "                           are taken as they come, weighted by their staleness, a server step\n"
    "                           every K; --rounds counts steps; DIR/arrivals.jsonl is what fedc\n"
    "                           train --replay reads\n"
    "  --concurrency C          with --async: clients training at once (default: --clients-per-round);\n"
    "                           --clients-per-round is then optional\n";

static const char issue_usage[] =
    "usage: fedc server --issue-credentials N --credentials-key FILE --out DIR\n"
    "  write the per-client credentials of clients 0 to N - 1, derived from the key in FILE (made,\n"
    "  mode 0600, if there is no such file), to DIR/client-ID.credential (mode 0600): the files\n"
    "  fedc client --credential and fedc fleet --credentials read\n";

static const char client_usage[] =
    "usage: fedc client --connect ADDR --data PATH [--client ID] [options]\n"
    "       fedc fleet --connect ADDR --data PATH --clients N [--client F] [options]\n"
    "  client: one client of a server's plan: client ID (default 0; its index in PATH, as fedc\n"
    "  train numbers them) of the dataset PATH, opened with the plan's settings\n"
    "  fleet: clients F (default 0) to F + N - 1 of PATH as threads of one process, each with its\n"
    "  own connection (fleets of other ranges share one server's population)\n"
    "  --token T | --token-file FILE   the server's token\n"
    "  --credential FILE        client: its own credential (fedc server --issue-credentials), in\n"
    "                           place of a token\n"
    "  --credentials DIR        each client's credential, DIR/client-ID.credential, in place of a token\n"
    "  --tls-ca FILE            for a tls+tcp:// address: the PEM certificate(s) to verify the\n"
    "                           server's with (a self-signed server: its certificate)\n"
    "  --tls-server-name NAME   the name the server's certificate must have (default: the host)\n"
    "  --timeout S              seconds to wait for an answer (default 60); the server holds a\n"
    "                           check-in half of that at most\n"
    "  --max-seconds S          the whole job at most (default 86400)\n"
    "  --max-message BYTES      the largest message the server may send (default 2^28)\n"
    "  --threads N              threads for each client's work (default 1)\n"
    "  --trainers N             fleet: clients working at once, each on an executor of a pool;\n"
    "                           the others wait, lowest slot first (default: the cores)\n"
    "  --state-dir DIR          a stateful algorithm's client state (SCAFFOLD's c_i, ...) kept in\n"
    "                           DIR/client-ID.safetensors after every change, and read back when the\n"
    "                           client starts again (default: in memory only)\n";

typedef struct args {
    fedc_server_options s;
    fedc_client_options c;
    const char *token_file;
    int64_t issue; /* --issue-credentials N (0: not asked) */
    int clients;
    bool has_clients, has_rounds, has_k;
    char token[256];
} args;

/* Reads the token file's (or the credential file's) first line into a->token. */
static bool read_token(const char *cmd, args *a) {
    char *text = cli_read_text(cmd, a->token_file, 4096);
    if (!text) return false;
    text[strcspn(text, "\r\n")] = '\0';
    snprintf(a->token, sizeof a->token, "%s", text);
    free(text);
    if (!a->token[0]) fprintf(stderr, "%s: %s: the token file's first line is empty\n", cmd, a->token_file);
    return a->token[0] != '\0';
}

/* One "--name VALUE"; false having said why. */
static bool option(const char *cmd, args *a, bool server, const char *name, const char *v) {
    uint64_t n;
    double x;
    cli_range seconds = {0, 1e9, true, false};
    if (!strcmp(name, "--token")) return cli_text(cmd, name, v) && (a->s.token = a->c.token = v);
    if (!strcmp(name, "--token-file")) return cli_text(cmd, name, v) && (a->token_file = v);
    if (!strcmp(name, "--max-message")) {
        if (!cli_uint(cmd, name, v, 1024, (uint64_t)1 << 32, &n)) return false;
        a->s.max_message = a->c.max_message = (size_t)n;
        return true;
    }
    if (!strcmp(name, "--threads")) {
        if (!cli_uint(cmd, name, v, 1, CLI_MAX_THREADS, &n)) return false;
        a->s.threads = a->c.threads = (int)n;
        return true;
    }
    if (server) {
        if (!strcmp(name, "--plan")) return cli_text(cmd, name, v) && (a->s.plan = v);
        if (!strcmp(name, "--listen")) return cli_text(cmd, name, v) && (a->s.listen = v);
        if (!strcmp(name, "--out")) return cli_text(cmd, name, v) && (a->s.out_dir = v);
        if (!strcmp(name, "--tls-cert")) return cli_text(cmd, name, v) && (a->s.tls_cert = v);
        if (!strcmp(name, "--credentials-key")) return cli_text(cmd, name, v) && (a->s.credentials_key = v);
        if (!strcmp(name, "--issue-credentials"))
            return cli_uint(cmd, name, v, 1, FEDC_MAX_CREDENTIALS, &n) && (a->issue = (int64_t)n);
        if (!strcmp(name, "--tls-key")) return cli_text(cmd, name, v) && (a->s.tls_key = v);
        if (!strcmp(name, "--rounds"))
            return cli_uint(cmd, name, v, 1, 1000000, &n) && (a->s.rounds = (int)n, a->has_rounds = true);
        if (!strcmp(name, "--clients-per-round"))
            return cli_uint(cmd, name, v, 1, 1 << 20, &n) && (a->s.clients_per_round = (int)n, a->has_k = true);
        if (!strcmp(name, "--min-reports")) return cli_uint(cmd, name, v, 1, 1 << 20, &n) && (a->s.min_reports = (int)n);
        if (!strcmp(name, "--report-deadline")) return cli_real(cmd, name, v, seconds, &a->s.report_deadline);
        if (!strcmp(name, "--over-select"))
            return cli_real(cmd, name, v, (cli_range){1, 100, false, false}, &a->s.over_select);
        if (!strcmp(name, "--heartbeat")) return cli_real(cmd, name, v, (cli_range){0, 3600, false, false}, &a->s.heartbeat);
        if (!strcmp(name, "--heartbeat-timeout")) return cli_real(cmd, name, v, seconds, &a->s.heartbeat_timeout);
        if (!strcmp(name, "--max-held")) return cli_uint(cmd, name, v, 0, 1 << 20, &n) && (a->s.max_held = (int)n, true);
        if (!strcmp(name, "--reorder-window"))
            return cli_uint(cmd, name, v, 1, 1 << 16, &n) && (a->s.reorder_window = (int)n);
        if (!strcmp(name, "--secure-agg")) {
            a->s.secure_agg = true;
            return !strcmp(v, "auto") || (cli_uint(cmd, name, v, 1, 1 << 16, &n) && (a->s.secure_threshold = (int)n));
        }
        if (!strcmp(name, "--secure-neighbours"))
            return cli_uint(cmd, name, v, 0, 1 << 16, &n) && (a->s.secure_neighbours = (int)n, true);
        if (!strcmp(name, "--async")) return cli_uint(cmd, name, v, 1, 1 << 20, &n) && (a->s.async_buffer = (int)n);
        if (!strcmp(name, "--concurrency"))
            return cli_uint(cmd, name, v, 1, 1 << 20, &n) && (a->s.concurrency = (int)n, a->has_k = true);
        if (!strcmp(name, "--linger")) return cli_real(cmd, name, v, (cli_range){0, 3600, false, false}, &a->s.linger);
        if (!strcmp(name, "--groups")) return cli_uint(cmd, name, v, 1, 1 << 20, &n) && (a->s.groups = (int)n);
    } else {
        if (!strcmp(name, "--connect")) return cli_text(cmd, name, v) && (a->c.connect = v);
        if (!strcmp(name, "--data")) return cli_text(cmd, name, v) && (a->c.data = v);
        if (!strcmp(name, "--tls-ca")) return cli_text(cmd, name, v) && (a->c.tls_ca = v);
        if (!strcmp(name, "--credential")) return cli_text(cmd, name, v) && (a->token_file = v);
        if (!strcmp(name, "--credentials")) return cli_text(cmd, name, v) && (a->c.credentials_dir = v);
        if (!strcmp(name, "--tls-server-name")) return cli_text(cmd, name, v) && (a->c.tls_server_name = v);
        if (!strcmp(name, "--client")) return cli_uint(cmd, name, v, 0, 1 << 20, &n) && (a->c.client = (int64_t)n, true);
        if (!strcmp(name, "--clients"))
            return cli_uint(cmd, name, v, 1, 100000, &n) && (a->clients = (int)n, a->has_clients = true);
        if (!strcmp(name, "--timeout")) return cli_real(cmd, name, v, seconds, &a->c.timeout);
        if (!strcmp(name, "--state-dir")) return cli_text(cmd, name, v) && (a->c.state_dir = v);
        if (!strcmp(name, "--trainers")) return cli_uint(cmd, name, v, 1, 4096, &n) && (a->c.trainers = (int)n, true);
        if (!strcmp(name, "--max-seconds")) return cli_real(cmd, name, v, seconds, &x) && (a->c.max_seconds = x, true);
    }
    fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", cmd, name, cmd);
    return false;
}

static int parse(const char *cmd, args *a, bool server, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    fedc_server_defaults(&a->s);
    fedc_client_defaults(&a->c);
    for (int i = 0; i < argc; i += 2) { /* every option takes a value */
        if (strncmp(argv[i], "--", 2) || i + 1 == argc) {
            fprintf(stderr, "%s: %s '%s' (see %s --help)\n", cmd, strncmp(argv[i], "--", 2) ? "unexpected argument" : "a value is needed after",
                    argv[i], cmd);
            return CLI_USAGE;
        }
        if (!option(cmd, a, server, argv[i], argv[i + 1])) return CLI_USAGE;
    }
    if (a->token_file && !read_token(cmd, a)) return CLI_USAGE;
    if (a->token_file) a->s.token = a->c.token = a->token;
    return 0;
}

static int failed(const char *cmd) {
    fprintf(stderr, "%s: %s\n", cmd, fedc_errmsg());
    return CLI_FAILED;
}

/* fedc server --issue-credentials N: the credentials written, nothing served. */
static int issue_credentials(const args *a) {
    if (!a->s.credentials_key || !a->s.out_dir || a->s.plan || a->s.listen) {
        fprintf(stderr, "fedc server: --issue-credentials needs --credentials-key and --out, and no plan or "
                "address\n%s", issue_usage);
        return CLI_USAGE;
    }
    if (fedc_credentials_issue(a->s.credentials_key, a->issue, a->s.out_dir)) return failed("fedc server");
    printf("fedc server: %lld credentials in %s, derived from the key in %s\n", (long long)a->issue, a->s.out_dir,
           a->s.credentials_key);
    return CLI_OK;
}

int fedc_cli_server(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        fputs(server_usage, stdout);
        fputs(issue_usage, stdout);
        return CLI_OK;
    }
    args a;
    int rc = parse("fedc server", &a, true, argc, argv);
    if (rc) return rc;
    if (a.issue) return issue_credentials(&a);
    if (!a.s.plan || !a.s.listen || !a.s.out_dir || !a.has_rounds || !a.has_k) {
        fprintf(stderr, "fedc server: needs --plan, --listen, --rounds, --clients-per-round and --out (with --async,\n"
                "--concurrency will do for --clients-per-round; see fedc server --help)\n");
        return CLI_USAGE;
    }
    return fedc_server_run(&a.s) ? failed("fedc server") : CLI_OK;
}

static int run_clients(int argc, char **argv, bool fleet) {
    const char *cmd = fleet ? "fedc fleet" : "fedc client";
    if (cli_wants_help(argc, argv)) {
        fputs(client_usage, stdout);
        return CLI_OK;
    }
    args a;
    int rc = parse(cmd, &a, false, argc, argv);
    if (rc) return rc;
    if (!a.c.connect || !a.c.data || fleet != a.has_clients) {
        fprintf(stderr, "%s: needs --connect and --data%s (see %s --help)\n", cmd,
                fleet ? " and --clients" : ", and no --clients (that is fedc fleet's)", cmd);
        return CLI_USAGE;
    }
    fedc_status st = fleet ? fedc_fleet_run(&a.c, a.clients) : fedc_client_run(&a.c);
    return st ? failed(cmd) : CLI_OK;
}

int fedc_cli_client(int argc, char **argv) { return run_clients(argc, argv, false); }
int fedc_cli_fleet(int argc, char **argv) { return run_clients(argc, argv, true); }
