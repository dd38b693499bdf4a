/* A deployed client's state on disk (client_state.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "deploy/client_state.h"
#include "fedc/core.h"

#define FORMAT "fedc-client-state-1"

const char *fedc__client_state_path(const char *dir, const char *id, char *buf, size_t size) {
    snprintf(buf, size, "%s/client-%s.safetensors", dir, id);
    return buf;
}

/* A client id makes a file name: letters, digits, '.', '_' and '-' only. */
static fedc_status check_id(const char *id) {
    bool ok = id[0] != '\0' && id[0] != '.';
    for (const char *p = id; ok && *p; p++)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("._-", *p);
    return ok ? FEDC_OK : fedc_error(FEDC_EINVAL, "client \"%s\": --state-dir names its file by the client's id, "
                                     "which may hold only letters, digits, '.', '_' and '-'", id);
}

fedc_status fedc__client_state_save(const char *dir, const char *id, const char *plan_hash, const char *settings_hash,
                                    const fedc_tensor_entry *t, int n, int64_t pending_round, bool seen) {
    fedc_status st = check_id(id);
    if (!st) st = fedc_make_dirs(dir);
    if (st) return st;
    char path[4200], pending[32];
    snprintf(pending, sizeof pending, "%lld", (long long)pending_round);
    fedc_metadata_entry meta[] = {{"format", FORMAT}, {"plan_hash", plan_hash}, {"plan_settings", settings_hash},
                                  {"client", id}, {"pending_round", pending}, {"seen", seen ? "1" : "0"}};
    return fedc_safetensors_write(fedc__client_state_path(dir, id, path, sizeof path), t, n, meta, 6);
}

/* Metadata `key` of the file at path, which must be there. */
static fedc_status field(const fedc_safetensors *s, const char *path, const char *key, const char **out) {
    *out = fedc_safetensors_metadata(s, key);
    return *out ? FEDC_OK : fedc_error(FEDC_EPARSE, "%s: not a client's state file: no \"%s\" in its metadata", path, key);
}

/* The file's metadata against the plan and client; the pending round read. */
static fedc_status check_file(const fedc_safetensors *s, const char *path, const char *id, const char *plan_hash,
                              const char *settings_hash, fedc__client_state *out) {
    const char *format, *hash, *client, *pending, *seen;
    fedc_status st = field(s, path, "format", &format);
    if (!st && strcmp(format, FORMAT))
        st = fedc_error(FEDC_EPARSE, "%s: format \"%.40s\", not %s", path, format, FORMAT);
    if (!st) st = field(s, path, "plan_hash", &hash);
    if (!st && strcmp(hash, plan_hash))
        st = fedc_error(FEDC_EINVAL, "%s: the state of another plan (%.16s..., the server's is %.16s...): a new job "
                        "starts from client_init, so remove the file or give another --state-dir", path, hash, plan_hash);
    const char *settings = fedc_safetensors_metadata(s, "plan_settings"); /* absent in files before 2026-12-06 */
    if (!st && settings && strcmp(settings, settings_hash))
        st = fedc_error(FEDC_EINVAL, "%s: the state of this plan's programs under other settings (the plan was built "
                        "again differently, e.g. with another seed): a new job starts from client_init, so remove the "
                        "file or give another --state-dir", path);
    if (!st) st = field(s, path, "client", &client);
    if (!st && strcmp(client, id))
        st = fedc_error(FEDC_EINVAL, "%s: client \"%.40s\"'s state, not client \"%s\"'s", path, client, id);
    if (!st) st = field(s, path, "pending_round", &pending);
    if (!st) st = field(s, path, "seen", &seen);
    if (st) return st;
    char *end;
    errno = 0;
    long long r = strtoll(pending, &end, 10);
    if (errno || end == pending || *end || r < -1 || r > INT32_MAX)
        return fedc_error(FEDC_EPARSE, "%s: pending_round \"%.40s\" is not a round number or -1", path, pending);
    if (strcmp(seen, "0") && strcmp(seen, "1"))
        return fedc_error(FEDC_EPARSE, "%s: seen \"%.40s\" is not 0 or 1", path, seen);
    out->pending_round = r, out->seen = seen[0] == '1';
    return FEDC_OK;
}

/* Every tensor named client/<leaf> or next/client/<leaf>; next/ only while a
 * round is pending. */
static fedc_status check_names(const fedc_safetensors *s, const char *path, int64_t pending_round) {
    for (int i = 0; i < fedc_safetensors_count(s); i++) {
        const char *name = fedc_safetensors_tensor(s, i).name;
        bool next = !strncmp(name, "next/client/", 12);
        if (strncmp(name, "client/", 7) && !next)
            return fedc_error(FEDC_EPARSE, "%s: \"%s\" is not client/<leaf> or next/client/<leaf>", path, name);
        if (next && pending_round < 0)
            return fedc_error(FEDC_EPARSE, "%s: \"%s\" without a pending round", path, name);
    }
    return FEDC_OK;
}

fedc_status fedc__client_state_load(const char *dir, const char *id, const char *plan_hash, const char *settings_hash,
                                    fedc__client_state *out) {
    *out = (fedc__client_state){NULL, -1, false};
    fedc_status st = check_id(id);
    if (st) return st;
    char path[4200];
    struct stat info;
    if (stat(fedc__client_state_path(dir, id, path, sizeof path), &info) != 0) {
        if (errno == ENOENT) return FEDC_OK;
        return fedc_error(FEDC_EIO, "%s: %s", path, strerror(errno));
    }
    fedc_safetensors *s = NULL;
    st = fedc_safetensors_read(path, &s);
    if (!st) st = check_file(s, path, id, plan_hash, settings_hash, out);
    if (!st) st = check_names(s, path, out->pending_round);
    if (st) fedc_safetensors_destroy(s);
    else out->file = s;
    return st;
}
