/*
 * fedc/form.h — a round program cut into the phases a deployment runs.
 *
 * The simulator runs a federated program in one process. A deployment runs it on
 * a server and many client devices, which exchange values only at broadcasts and
 * aggregations. fedc_program_deployment_form cuts a program into the five phases
 * of TensorFlow Federated's DistributeAggregateForm, once per exchange:
 *
 *   server_prepare                server state -> what is broadcast, temporary state
 *   server_to_client_broadcast    server values -> every client gets a copy
 *   client_work                   ONE client's data and broadcast values -> what it
 *                                 sends up (and its new client state)
 *   client_to_server_aggregation  the clients' values -> their sum, mean or weighted mean
 *   server_result                 aggregates and temporary state -> new server state,
 *                                 server outputs
 *
 * Each phase is a plain fedc program, verified and printable: the server phases
 * hold only @server and local values; client_work holds only local values (one
 * client's: a phone runs it with no cohort around it), with the map bodies
 * inlined; the broadcast phase holds only broadcast ops and the aggregation phase
 * only sum / mean / weighted_mean ops, each on phase inputs. A program with several
 * exchanges (a broadcast that depends on an aggregate, as in Mime's) becomes a
 * sequence of forms run in turn: exchange 0's five phases, then exchange 1's, ...
 *
 * Names. Phases read and write values by name; every value has one name:
 *   - an input of the round program: its own name (server/params/w, x, client/c/w);
 *   - a broadcast value: "broadcast/%N", an aggregate: "aggregate/%N";
 *   - any other value that a later phase reads: "<phase>/%N", the phase that
 *     computes it: "server_prepare/%N", "client_work/%N", "server_result/%N";
 * where N is the value's index in the round program (as fedc program print numbers
 * it). A phase also writes the round's outputs it computes under their own names
 * (server/<leaf> and train_loss from server_result, client/<leaf> from
 * client_work). A client's values from an earlier exchange (client_work/%N,
 * broadcast/%N) stay on that client for the later ones. Local constants are
 * copied into every phase that reads them, so they never cross. In client_work a
 * value has the per-client type (f32[10], where the round has f32[10]@clients).
 *
 * A worked example: FedAvg's round on a model, run phase by phase for 3 clients
 * with the simulator's bits (tests/test_deploy_form.c does this for FedAvg,
 * FedSGD, FedProx and SCAFFOLD):
 *
 *     fedc_program *round;
 *     fedc_algorithm_round(model, &alg, &round);
 *     fedc_deployment_form *form;
 *     if (fedc_program_deployment_form(round, &form)) fprintf(stderr, "%s\n", fedc_errmsg());
 *     const fedc_program *work = fedc_deployment_form_phase(form, 0, FEDC_PHASE_CLIENT_WORK);
 *     fedc_program_print(work, stdout);            // what one client runs
 *
 *     fedc_deployment_run *run;                     // all phases, in this process
 *     fedc_deployment_run_create(&run, form, &(fedc_exec_options){.clients = 3});
 *     fedc_deployment_run_bind(run, "x", x);        // as fedc_executor_bind
 *     ...                                           // every input of the round
 *     fedc_deployment_run_run(run);
 *     fedc_deployment_run_output(run, "server/params/dense1/w", &w, NULL);
 *     fedc_deployment_run_destroy(run);
 *     fedc_deployment_form_destroy(form);
 *
 * The form is a program -> program pass of the core library (src/ir/form.c);
 * running its phases, plans, the wire format, and the server and client over
 * NNG are the deployment's (fedc/deploy.h, libfedc_deploy; docs/deployment.md
 * has the commands).
 */
#ifndef FEDC_FORM_H
#define FEDC_FORM_H

#include "fedc/program.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fedc_deployment_form fedc_deployment_form;

/* The phases of one exchange, in the order they run. Append only. */
typedef enum fedc_phase_kind {
    FEDC_PHASE_SERVER_PREPARE,
    FEDC_PHASE_BROADCAST,   /* server_to_client_broadcast */
    FEDC_PHASE_CLIENT_WORK,
    FEDC_PHASE_AGGREGATION, /* client_to_server_aggregation */
    FEDC_PHASE_SERVER_RESULT,
    FEDC_PHASE_COUNT
} fedc_phase_kind;

/* "server_prepare", "server_to_client_broadcast", "client_work",
 * "client_to_server_aggregation", "server_result"; "?" for another number. */
FEDC_API const char *fedc_phase_name(fedc_phase_kind kind);

/* Cuts `round` (borrowed) into exchanges of five phases. Fails with FEDC_EINVAL if
 * the program is not valid (the verifier's message, naming the value, its op and
 * type), has no @clients value (nothing to deploy), or uses one of the names above
 * for an input or output of its own (named). Every phase is verified. */
FEDC_API fedc_status fedc_program_deployment_form(const fedc_program *round, fedc_deployment_form **out);
FEDC_API void fedc_deployment_form_destroy(fedc_deployment_form *f); /* safe on NULL */

/* The number of exchanges (1 or more). */
FEDC_API int fedc_deployment_form_exchanges(const fedc_deployment_form *f);
/* Phase `kind` of exchange `exchange`, owned by the form; NULL when out of range.
 * A phase with nothing to do is an empty program (no inputs, no outputs). The
 * names that flow between phases are the phases' input and output names. */
FEDC_API const fedc_program *fedc_deployment_form_phase(const fedc_deployment_form *f, int exchange,
                                                        fedc_phase_kind kind);
/* The type of a value crossing phases, by name, as the round program has it
 * (@server, @clients, or local); false when no phase reads or writes that name. */
FEDC_API bool fedc_deployment_form_value_type(const fedc_deployment_form *f, const char *name, fedc_type *type);

#ifdef __cplusplus
}
#endif

#endif
