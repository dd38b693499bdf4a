/*
 * cli.h — the fedc tool's commands, one file each (cli/<command>.c), and the
 * helpers they share (cli/fedc.c: numbers, files, --help; cli/config.c: INI files).
 */
#ifndef FEDC_CLI_H
#define FEDC_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The exit status of every command (fedc --help documents it). */
enum {
    CLI_OK = 0,     /* the work is done */
    CLI_FAILED = 1, /* the work failed: a file missing or malformed, data that do not fit, out of memory */
    CLI_USAGE = 2   /* the command line (or its --config file) is wrong: nothing was done */
};

/* fedc train [options]: argv holds the arguments after "train". */
int fedc_cli_train(int argc, char **argv);
/* fedc eval --checkpoint FILE --data PATH [options]. */
int fedc_cli_eval(int argc, char **argv);
/* fedc plan build|check ... (cli/plan.c). */
int fedc_cli_plan(int argc, char **argv);
/* fedc server, fedc client, fedc fleet (cli/deploy.c). */
int fedc_cli_server(int argc, char **argv);
int fedc_cli_client(int argc, char **argv);
int fedc_cli_fleet(int argc, char **argv);
/* fedc aggregator (cli/aggregator.c). */
int fedc_cli_aggregator(int argc, char **argv);
/* Parses fedc train's options from argv (as `cmd` in messages) and calls run on
 * the configuration; 0, or the exit status of a bad command line or of run. */
struct fedc_train_config;
int cli_with_train_options(const char *cmd, int argc, char **argv,
                           int (*run)(const struct fedc_train_config *c, void *user), void *user);
/* fedc_model_create's "onnx:FILE" models (cli/model_onnx.c; with libfedc_formats). */
void cli_register_onnx_models(void);
/* fedc train --export-onnx OUT: the parameters of the ONNX model at `model` in
 * OUT_DIR/checkpoint.safetensors written into a copy of it at OUT and, by name,
 * into OUT's .safetensors; says what it wrote. 0, or the exit status. */
int cli_export_onnx(const char *model, const char *out_dir, const char *out);
/* fedc data info PATH [--format NAME]. */
int fedc_cli_data(int argc, char **argv);
/* fedc program check|print|grad|jvp|run|export|split ... (cli/program.c). */
int fedc_cli_program(int argc, char **argv);
/* fedc privacy epsilon|noise ... (cli/privacy.c). */
int fedc_cli_privacy(int argc, char **argv);

/* fedc program split (cli/program_split.c): its usage, and the command on the
 * arguments after "split". */
extern const char cli_split_usage[];
int cli_program_split(int argc, char **argv);
/* fedc program import (cli/program_import.c): an ONNX model as a program. */
extern const char cli_import_usage[];
int cli_program_import(int argc, char **argv);

/* A program read from a text file (or - for stdin), or NULL having said why
 * ("CMD: PATH: line:col: ..."); fedc_program_destroy it (cli/program.c). */
struct fedc_program;
struct fedc_program *cli_program_load(const char *cmd, const char *path);

/* ---------------------------------------------------- shared (cli/fedc.c) -- */

/* Worker threads a command may start: more is surely a typo, and each thread
 * holds its own workspace. */
#define CLI_MAX_THREADS 256

/* True when --help or -h stands anywhere in argv[0..argc). */
bool cli_wants_help(int argc, char **argv);

/* A range of real numbers: [lo, hi], each end open or closed. */
typedef struct cli_range {
    double lo, hi;
    bool lo_open, hi_open;
} cli_range;

/* The checked parsers every flag and config key goes through. `cmd` is the
 * command ("fedc train"), `what` names the value ("--rounds", or "run.ini:3:
 * rounds"). On a bad value they print "CMD: WHAT needs ..., not 'TEXT'" naming
 * the valid range and return false; `out` is then left alone. */
/* A decimal integer in [lo, hi] (digits only: no sign, no spaces). */
bool cli_uint(const char *cmd, const char *what, const char *text, uint64_t lo, uint64_t hi, uint64_t *out);
/* A finite real number in `r`. */
bool cli_real(const char *cmd, const char *what, const char *text, cli_range r, double *out);
/* A non-empty string. */
bool cli_text(const char *cmd, const char *what, const char *text);
/* yes/no, true/false, on/off, 1/0 (any case). */
bool cli_bool(const char *cmd, const char *what, const char *text, bool *out);

/* Reads a whole text file (or stdin for "-") of at most `max` bytes into a
 * NUL-terminated string (free it), or prints why not ("CMD: PATH: ...": cannot
 * open, a directory, too large, holds a NUL byte) and returns NULL. */
char *cli_read_text(const char *cmd, const char *path, size_t max);
/* Writes `text` to `path` (NULL or "-": standard output) whole, or removes what it
 * wrote and says why ("CMD: PATH: cannot write: ..."); false then. */
bool cli_write_text(const char *cmd, const char *path, const char *text);

/* ---------------------------------------------------------- cli/config.c -- */

/* Called for each "name = value" line; returns false (having said why) to fail. */
typedef bool (*cli_config_fn)(void *user, const char *name, const char *value, int line);

/* Reads the INI file at `path` (docs/training.md: "name = value" lines, # or ;
 * comments, [sections] ignored) and calls `fn` for each setting in order. The
 * names and values point into *text, which the caller frees (also after an
 * error) once it no longer needs them. False, having said why (with the line
 * number), on an error. */
bool cli_config_read(const char *cmd, const char *path, cli_config_fn fn, void *user, char **text);

#endif
