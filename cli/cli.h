/* cli.h — the fedc tool's commands, one file each (cli/<command>.c). */
#ifndef FEDC_CLI_H
#define FEDC_CLI_H

/* fedc train [options]: argv holds the arguments after "train". */
int fedc_cli_train(int argc, char **argv);
/* fedc eval --checkpoint FILE --data PATH [options]. */
int fedc_cli_eval(int argc, char **argv);
/* fedc data info PATH [--format NAME]. */
int fedc_cli_data(int argc, char **argv);

#endif
