/*
 * fedc plan build|check — plans for deployment (fedc/deploy.h, docs/deployment.md).
 *
 * fedc plan build --out PLAN [fedc train's options] writes the plan of the
 * training job those options describe; fedc plan check PLAN reads one back with
 * every check a server or client makes, and prints what it holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"

static const char plan_usage[] =
    "usage: fedc plan build --data PATH --out PLAN [fedc train's options]\n"
    "       fedc plan check PLAN\n"
    "  build   write the plan of the training job that fedc train's options describe (the\n"
    "          same --data, --model, --algorithm, --batch-size, --epochs, --steps, --seed, ...):\n"
    "          the round program, its deployment form (and the algorithm's warm start on\n"
    "          --clients-per-round clients, with its form), the initial model and a manifest\n"
    "          (PLAN/plan.txt) with the programs' hash, the settings and the tensors\n"
    "  check   read PLAN with every check a server or client makes and print a summary\n"
    "Exit status: 0 done, 1 the plan cannot be built or is not valid, 2 bad usage.\n";

static int build(const fedc_train_config *c, void *user) {
    (void)user;
    if (fedc_plan_build(c, c->out_dir)) {
        fprintf(stderr, "fedc plan build: %s\n", fedc_errmsg());
        return CLI_FAILED;
    }
    fedc_plan *p = NULL;
    if (fedc_plan_read(c->out_dir, &p)) { /* what was written reads back */
        fprintf(stderr, "fedc plan build: %s\n", fedc_errmsg());
        return CLI_FAILED;
    }
    printf("plan %s: %s on %s, hash %s\n", c->out_dir, fedc_plan_setting(p, "algorithm"), fedc_plan_setting(p, "model"),
           fedc_plan_hash(p));
    fedc_plan_destroy(p);
    return CLI_OK;
}

/* The groups the plan pins its clients to, each one's clients (the first 20),
 * which tell where each client connects: its group's aggregator. */
static int print_groups(const fedc_plan *p) {
    int32_t *group_of = NULL;
    int groups = 0;
    if (fedc_plan_groups(p, &group_of, &groups)) {
        fprintf(stderr, "fedc plan check: %s\n", fedc_errmsg());
        return CLI_FAILED;
    }
    if (groups) printf("  %-11s %s\n", "groups", fedc_plan_setting(p, "groups"));
    long long population = groups ? atoll(fedc_plan_setting(p, "population")) : 0;
    for (int g = 0; g < groups; g++) {
        long long n = 0;
        printf("    group %d:", g);
        for (long long i = 0; i < population; i++)
            if (group_of[i] == g && n++ < 20) printf(" %lld", i);
        printf("%s (%lld clients)\n", n > 20 ? " ..." : "", n);
    }
    fedc_free(group_of);
    return CLI_OK;
}

static int check(const char *dir) {
    fedc_plan *p = NULL;
    if (fedc_plan_read(dir, &p)) {
        fprintf(stderr, "fedc plan check: %s\n", fedc_errmsg());
        return CLI_FAILED;
    }
    const fedc_deployment_form *f = fedc_plan_form(p);
    printf("%s: plan %d, hash %s\n", dir, FEDC_PLAN_VERSION, fedc_plan_hash(p));
    printf("  %d exchange%s; client_work of exchange 0: %d inputs, %d outputs\n", fedc_deployment_form_exchanges(f),
           fedc_deployment_form_exchanges(f) == 1 ? "" : "s",
           fedc_program_num_inputs(fedc_deployment_form_phase(f, 0, FEDC_PHASE_CLIENT_WORK)),
           fedc_program_num_outputs(fedc_deployment_form_phase(f, 0, FEDC_PHASE_CLIENT_WORK)));
    const fedc_deployment_form *w = fedc_plan_warm_form(p);
    if (w) printf("  warm start: %d exchange%s on %d clients, before round 1\n", fedc_deployment_form_exchanges(w),
                  fedc_deployment_form_exchanges(w) == 1 ? "" : "s", fedc_plan_warm_clients(p));
    printf("  %d server tensors\n", fedc_plan_num_tensors(p));
    const char *keys[] = {"algorithm", "model", "task", "batch_size", "max_steps", "epochs", "seed", "population"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (fedc_plan_setting(p, keys[i])) printf("  %-11s %s\n", keys[i], fedc_plan_setting(p, keys[i]));
    int rc = print_groups(p);
    fedc_plan_destroy(p);
    return rc;
}

int fedc_cli_plan(int argc, char **argv) {
    if (argc < 1 || (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        fputs(plan_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? CLI_USAGE : CLI_OK;
    }
    if (cli_wants_help(argc, argv)) {
        fputs(plan_usage, stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[0], "build")) {
        bool out = false;
        for (int i = 1; i < argc; i++) out |= !strcmp(argv[i], "--out");
        if (!out) {
            fprintf(stderr, "fedc plan build: needs --out PLAN (see fedc plan --help)\n");
            return CLI_USAGE;
        }
        return cli_with_train_options("fedc plan build", argc - 1, argv + 1, build, NULL);
    }
    if (!strcmp(argv[0], "check")) {
        if (argc != 2 || argv[1][0] == '-') {
            fprintf(stderr, "fedc plan check: needs PLAN, and nothing else (see fedc plan --help)\n");
            return CLI_USAGE;
        }
        return check(argv[1]);
    }
    fprintf(stderr, "fedc plan: unknown subcommand '%s' (build, check; see fedc plan --help)\n", argv[0]);
    return CLI_USAGE;
}
