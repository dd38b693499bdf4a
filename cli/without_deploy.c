/* The deployment's commands in a fedc built without libfedc_deploy
 * (-DFEDC_DEPLOY=OFF: no NNG or libsodium): each says so, and how to get it,
 * rather than being an unknown command. CMakeLists.txt builds this file in
 * place of deploy.c and plan.c. */
#include <stdio.h>

#include "cli.h"

static int without_deploy(const char *cmd) {
    fprintf(stderr, "fedc %s: this fedc was built without the deployment (libfedc_deploy): configure it with "
            "cmake -DFEDC_DEPLOY=ON, which needs NNG and libsodium (scripts/install-deps)\n", cmd);
    return CLI_FAILED;
}

int fedc_cli_plan(int argc, char **argv) { return (void)argc, (void)argv, without_deploy("plan"); }
int fedc_cli_server(int argc, char **argv) { return (void)argc, (void)argv, without_deploy("server"); }
int fedc_cli_client(int argc, char **argv) { return (void)argc, (void)argv, without_deploy("client"); }
int fedc_cli_fleet(int argc, char **argv) { return (void)argc, (void)argv, without_deploy("fleet"); }
int fedc_cli_aggregator(int argc, char **argv) { return (void)argc, (void)argv, without_deploy("aggregator"); }
