/*
 * fedc aggregator — a group of a deployment run by its own process: a client of
 * the server (fedc server --groups N) and a server to the group's clients
 * (fedc/deploy.h, docs/deployment-aggregators.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"

static const char usage[] =
    "usage: fedc aggregator --connect ADDR --listen ADDR --group G --token-file FILE [options]\n"
    "  runs group G (0 to N - 1) of a server started with --groups N: takes the group's task from\n"
    "  the server at ADDR, serves the group's clients (fedc client / fedc fleet --connect to its\n"
    "  --listen address), adds their reports in slot order and forwards the group's sums\n"
    "  --token T | --token-file FILE   the server's token, which the group's clients present too\n"
    "  --out DIR                the spill file of reports that come early (default: .)\n"
    "  --timeout S              seconds to wait for the server's answer (default 60)\n"
    "  --max-seconds S          the whole job at most (default 86400)\n"
    "  --report-deadline S      seconds an exchange waits for the group's reports (default 600)\n"
    "  --heartbeat S            seconds between a working client's heartbeats (default: a quarter of\n"
    "                           --heartbeat-timeout)\n"
    "  --heartbeat-timeout S    a client silent this long is given up (default 30)\n"
    "  --reorder-window W       reports ahead of the slot order kept in memory (default 16)\n"
    "  --max-held N             check-ins held for a task (default 4096)\n"
    "  --max-message BYTES      the largest message either side may send (default 2^28)\n"
    "  --threads N              threads for the aggregation (default 1)\n"
    "  --linger S               seconds to tell clients the job is done, after it is (default 2)\n"
    "  --tls-ca FILE            for a tls+tcp:// server: the PEM certificate(s) to verify it with\n"
    "  --tls-server-name NAME   the name the server's certificate must have (default: the host)\n"
    "  --tls-cert FILE --tls-key FILE   for a tls+tcp:// --listen address: its certificate and key\n";

/* One "--name VALUE"; false having said why. */
static bool option(fedc_aggregator_options *o, const char **token_file, const char *name, const char *v) {
    const char *cmd = "fedc aggregator";
    uint64_t n;
    cli_range seconds = {0, 1e9, true, false};
    if (!strcmp(name, "--connect")) return cli_text(cmd, name, v) && (o->connect = v);
    if (!strcmp(name, "--listen")) return cli_text(cmd, name, v) && (o->listen = v);
    if (!strcmp(name, "--group")) return cli_uint(cmd, name, v, 0, 1 << 20, &n) && (o->group = (int)n, true);
    if (!strcmp(name, "--token")) return cli_text(cmd, name, v) && (o->token = v);
    if (!strcmp(name, "--token-file")) return cli_text(cmd, name, v) && (*token_file = v);
    if (!strcmp(name, "--out")) return cli_text(cmd, name, v) && (o->out_dir = v);
    if (!strcmp(name, "--timeout")) return cli_real(cmd, name, v, seconds, &o->timeout);
    if (!strcmp(name, "--max-seconds")) return cli_real(cmd, name, v, seconds, &o->max_seconds);
    if (!strcmp(name, "--report-deadline")) return cli_real(cmd, name, v, seconds, &o->report_deadline);
    if (!strcmp(name, "--heartbeat")) return cli_real(cmd, name, v, (cli_range){0, 3600, false, false}, &o->heartbeat);
    if (!strcmp(name, "--heartbeat-timeout")) return cli_real(cmd, name, v, seconds, &o->heartbeat_timeout);
    if (!strcmp(name, "--reorder-window")) return cli_uint(cmd, name, v, 1, 1 << 16, &n) && (o->reorder_window = (int)n);
    if (!strcmp(name, "--max-held")) return cli_uint(cmd, name, v, 0, 1 << 20, &n) && (o->max_held = (int)n, true);
    if (!strcmp(name, "--max-message"))
        return cli_uint(cmd, name, v, 1024, (uint64_t)1 << 32, &n) && (o->max_message = (size_t)n, true);
    if (!strcmp(name, "--threads")) return cli_uint(cmd, name, v, 1, CLI_MAX_THREADS, &n) && (o->threads = (int)n);
    if (!strcmp(name, "--linger")) return cli_real(cmd, name, v, (cli_range){0, 3600, false, false}, &o->linger);
    if (!strcmp(name, "--tls-ca")) return cli_text(cmd, name, v) && (o->tls_ca = v);
    if (!strcmp(name, "--tls-server-name")) return cli_text(cmd, name, v) && (o->tls_server_name = v);
    if (!strcmp(name, "--tls-cert")) return cli_text(cmd, name, v) && (o->tls_cert = v);
    if (!strcmp(name, "--tls-key")) return cli_text(cmd, name, v) && (o->tls_key = v);
    fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", cmd, name, cmd);
    return false;
}

int fedc_cli_aggregator(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    fedc_aggregator_options o;
    fedc_aggregator_defaults(&o);
    const char *token_file = NULL;
    bool has_group = false;
    for (int i = 0; i < argc; i += 2) { /* every option takes a value */
        if (strncmp(argv[i], "--", 2) || i + 1 == argc) {
            fprintf(stderr, "fedc aggregator: %s '%s' (see fedc aggregator --help)\n",
                    strncmp(argv[i], "--", 2) ? "unexpected argument" : "a value is needed after", argv[i]);
            return CLI_USAGE;
        }
        if (!option(&o, &token_file, argv[i], argv[i + 1])) return CLI_USAGE;
        has_group |= !strcmp(argv[i], "--group");
    }
    char *text = token_file ? cli_read_text("fedc aggregator", token_file, 4096) : NULL;
    if (token_file && !text) return CLI_USAGE;
    if (text) text[strcspn(text, "\r\n")] = '\0', o.token = text;
    int rc = CLI_OK;
    if (!o.connect || !o.listen || !has_group || !o.token || !o.token[0]) {
        fprintf(stderr, "fedc aggregator: needs --connect, --listen, --group and the server's token (--token or "
                "--token-file) (see fedc aggregator --help)\n");
        rc = CLI_USAGE;
    } else if (fedc_aggregator_run(&o)) {
        fprintf(stderr, "fedc aggregator: %s\n", fedc_errmsg());
        rc = CLI_FAILED;
    }
    free(text);
    return rc;
}
