/*
 * config.c — the INI files of `fedc train --config FILE`.
 *
 * The syntax (docs/training.md): one "name = value" a line; spaces around the
 * name and the value are dropped; a line whose first non-blank character is # or
 * ; is a comment, and so is the rest of a line from a # or ; that follows a
 * blank; [section] lines are allowed and ignored; blank lines too. Lines may be
 * of any length and end in \n or \r\n; a UTF-8 byte-order mark is skipped.
 * Anything else is an error naming its line.
 *
 * Written here rather than taken from inih, whose fixed line buffer cut long
 * values (paths) short without a word and whose indented lines continued the
 * previous value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A config file is a page of settings: more than this is not one. */
#define MAX_CONFIG_BYTES (1 << 20)

static bool blank(char c) { return c == ' ' || c == '\t'; }

static char *trim(char *s) {
    while (blank(*s)) s++;
    size_t n = strlen(s);
    while (n && (blank(s[n - 1]) || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

/* Cuts a comment that starts after a blank: "x = 1  # why" is "x = 1". */
static void cut_comment(char *s) {
    for (char *p = s + 1; *p; p++)
        if ((*p == '#' || *p == ';') && blank(p[-1])) {
            *p = '\0';
            return;
        }
}

/* One line, NUL-terminated in place; false (having said why) if it is malformed. */
static bool parse_line(const char *cmd, const char *path, char *line, int number, cli_config_fn fn, void *user) {
    char *s = trim(line);
    if (!*s || *s == '#' || *s == ';') return true;
    cut_comment(s);
    s = trim(s);
    size_t n = strlen(s);
    if (*s == '[') {
        if (s[n - 1] == ']') return true;
        fprintf(stderr, "%s: %s:%d: a section header needs its closing ']'\n", cmd, path, number);
        return false;
    }
    char *eq = strchr(s, '=');
    if (!eq) {
        fprintf(stderr, "%s: %s:%d: expected 'name = value', not '%s'\n", cmd, path, number, s);
        return false;
    }
    *eq = '\0';
    char *name = trim(s), *value = trim(eq + 1);
    if (!*name) {
        fprintf(stderr, "%s: %s:%d: a setting needs a name before '='\n", cmd, path, number);
        return false;
    }
    return fn(user, name, value, number);
}

bool cli_config_read(const char *cmd, const char *path, cli_config_fn fn, void *user, char **text) {
    *text = cli_read_text(cmd, path, MAX_CONFIG_BYTES);
    if (!*text) return false;
    char *s = *text;
    if (!strncmp(s, "\xEF\xBB\xBF", 3)) s += 3;
    for (int number = 1; s; number++) {
        char *end = strchr(s, '\n');
        if (end) *end = '\0';
        if (!parse_line(cmd, path, s, number, fn, user)) return false;
        s = end ? end + 1 : NULL;
    }
    return true;
}
