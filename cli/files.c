/* Reading the text files the commands take (programs, config files): whole, with
 * a size limit, refusing directories and NUL bytes, so /dev/zero or a binary file
 * given by mistake fails at once with a message; and writing the ones they make. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* Why a text file could not be read: an errno value, or one of these. */
enum { READ_OK = 0, READ_DIRECTORY = -1, READ_TOO_LARGE = -2, READ_NUL = -3, READ_NO_MEMORY = -4 };

/* Reads what is left of f, at most `max` bytes, into *text (with room for a
 * NUL after it). */
static int read_all(FILE *f, size_t max, char **text, size_t *size) {
    size_t cap = max < 4096 ? max + 1 : 4096;
    for (*size = 0;; cap = 2 * cap > max + 1 ? max + 1 : 2 * cap) {
        char *bigger = realloc(*text, cap + 1);
        if (!bigger) return READ_NO_MEMORY;
        *text = bigger;
        size_t got = fread(*text + *size, 1, cap - *size, f);
        /* a NUL ends the reading at once: /dev/zero is not read for ever */
        if (memchr(*text + *size, '\0', got)) return READ_NUL;
        *size += got;
        if (*size < cap) return ferror(f) ? errno : READ_OK;
        if (cap > max) return READ_TOO_LARGE;
    }
}

char *cli_read_text(const char *cmd, const char *path, size_t max) {
    bool std = !strcmp(path, "-");
    FILE *f = std ? stdin : fopen(path, "rb");
    struct stat st;
    if (!f) {
        fprintf(stderr, "%s: cannot open %s: %s\n", cmd, path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t size = 0;
    int err = fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode) ? READ_DIRECTORY : read_all(f, max, &text, &size);
    if (!std) fclose(f);
    if (err == READ_OK) {
        text[size] = '\0';
        return text;
    }
    fprintf(stderr, "%s: %s ", cmd, path);
    if (err == READ_DIRECTORY) fprintf(stderr, "is a directory, not a file\n");
    else if (err == READ_TOO_LARGE) fprintf(stderr, "is too large (more than %zu bytes)\n", max);
    else if (err == READ_NUL) fprintf(stderr, "holds a NUL byte: it is not a text file\n");
    else fprintf(stderr, "cannot be read: %s\n", err == READ_NO_MEMORY ? "out of memory" : strerror(err));
    free(text);
    return NULL;
}

bool cli_write_text(const char *cmd, const char *path, const char *text) {
    if (!path || !strcmp(path, "-")) return fputs(text, stdout) >= 0;
    FILE *f = fopen(path, "wb");
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) {
        fprintf(stderr, "%s: %s: cannot write: %s\n", cmd, path, strerror(errno));
        remove(path);
    }
    return ok;
}
