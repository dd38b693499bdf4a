/*
 * fedc — the command-line tool. It uses only the public API.
 *
 *   fedc program check FILE              verify a program in the text format
 *   fedc program print FILE              parse and print it (canonical form)
 *   fedc program grad FILE --of OUTPUT --wrt INPUT[,INPUT...]
 *                                        print the gradient program
 *   fedc --version | --help
 *
 * FILE may be "-" for standard input. Errors go to stderr with the file name and,
 * for parse errors, the line and column; the exit status is 1 for bad input and 2
 * for bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"

static const char usage[] =
    "usage: fedc <command> [options]\n"
    "\n"
    "commands:\n"
    "  program check FILE      verify a program written in the text format\n"
    "  program print FILE      parse a program and print it in canonical form\n"
    "  program grad FILE --of OUTPUT --wrt INPUT[,INPUT...]\n"
    "                          print the program that computes OUTPUT and the gradients\n"
    "                          of the scalar OUTPUT with respect to each INPUT\n"
    "\n"
    "options:\n"
    "  --help                  show this help\n"
    "  --version               show the version\n"
    "\n"
    "FILE may be - for standard input. The text format is described in docs/text-format.md.\n";

/* Reads a whole file (or stdin for "-") into a NUL-terminated string. */
static char *read_file(const char *path) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fedc: cannot open %s\n", path);
        return NULL;
    }
    size_t size = 0, cap = 1 << 16;
    char *text = malloc(cap);
    while (text) {
        size += fread(text + size, 1, cap - size - 1, f);
        if (size < cap - 1) break;
        char *bigger = realloc(text, cap *= 2);
        if (!bigger) free(text);
        text = bigger;
    }
    if (f != stdin) fclose(f);
    if (!text) fprintf(stderr, "fedc: out of memory reading %s\n", path);
    else text[size] = '\0';
    return text;
}

static fedc_program *load(const char *path) {
    char *text = read_file(path);
    if (!text) return NULL;
    fedc_program *p = NULL;
    fedc_status st = fedc_program_parse(text, &p);
    free(text);
    if (st) {
        fprintf(stderr, "fedc: %s: %s\n", path, fedc_errmsg());
        return NULL;
    }
    return p;
}

static int cmd_check(const char *path) {
    fedc_program *p = load(path);
    if (!p) return 1;
    printf("%s: ok (%d operations, %d inputs, %d outputs)\n", path, fedc_program_size(p), fedc_program_num_inputs(p),
           fedc_program_num_outputs(p));
    fedc_program_destroy(p);
    return 0;
}

static int cmd_print(const char *path) {
    fedc_program *p = load(path);
    if (!p) return 1;
    fedc_status st = fedc_program_print(p, stdout);
    if (st) fprintf(stderr, "fedc: %s\n", fedc_errmsg());
    fedc_program_destroy(p);
    return st ? 1 : 0;
}

/* Splits "a,b,c" in place into at most `max` names. */
static int split_names(char *list, const char **names, int max) {
    int n = 0;
    for (char *tok = strtok(list, ","); tok && n < max; tok = strtok(NULL, ",")) names[n++] = tok;
    return n;
}

static int cmd_grad(int argc, char **argv) {
    const char *path = NULL, *of = NULL;
    char *wrt_list = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--of") == 0 && i + 1 < argc) of = argv[++i];
        else if (strcmp(argv[i], "--wrt") == 0 && i + 1 < argc) wrt_list = argv[++i];
        else if (!path && argv[i][0] != '-') path = argv[i];
        else if (!path && strcmp(argv[i], "-") == 0) path = argv[i];
        else {
            fprintf(stderr, "fedc program grad: unexpected argument '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
    if (!path || !of || !wrt_list) {
        fprintf(stderr, "fedc program grad: needs FILE, --of OUTPUT and --wrt INPUT[,INPUT...]\n");
        return 2;
    }
    const char *wrt[64];
    int nwrt = split_names(wrt_list, wrt, 64);
    fedc_program *p = load(path);
    if (!p) return 1;
    fedc_program *g = NULL;
    fedc_status st = fedc_grad(p, of, wrt, nwrt, &g);
    if (!st) st = fedc_program_print(g, stdout);
    if (st) fprintf(stderr, "fedc: %s: %s\n", path, fedc_errmsg());
    fedc_program_destroy(g);
    fedc_program_destroy(p);
    return st ? 1 : 0;
}

static int cmd_program(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "fedc program: needs a subcommand and a FILE\n%s", usage);
        return 2;
    }
    if (strcmp(argv[0], "check") == 0 && argc == 2) return cmd_check(argv[1]);
    if (strcmp(argv[0], "print") == 0 && argc == 2) return cmd_print(argv[1]);
    if (strcmp(argv[0], "grad") == 0) return cmd_grad(argc - 1, argv + 1);
    fprintf(stderr, "fedc program: unknown subcommand or arguments '%s'\n%s", argv[0], usage);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("fedc %s\n", FEDC_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "program") == 0) return cmd_program(argc - 2, argv + 2);
    fprintf(stderr, "fedc: unknown command '%s'\n%s", argv[1], usage);
    return 2;
}
