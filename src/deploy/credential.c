/* Per-client credentials (credential.h): derived from the server's key with
 * libsodium's HMAC-SHA-256, checked with its constant-time verification, and
 * issued as one file per client (fedc server --issue-credentials). A key or a
 * credential is a secret: every file of one is written with mode 0600, and
 * the buffers that held a key or a MAC are wiped. */
#include "deploy/credential.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fedc/deploy.h"

/* The message a client's MAC is of: a prefix that names what it is for (so
 * the key's MACs mean nothing elsewhere), then the id in decimal. */
static size_t credential_message(int64_t client, char *m, size_t size) {
    int n = snprintf(m, size, "fedc credential 1 client %lld", (long long)client);
    return n < 0 ? 0 : (size_t)n;
}

void fedc__credential_derive(const unsigned char key[FEDC__CREDENTIAL_KEY_BYTES], int64_t client,
                             char hex[FEDC__CREDENTIAL_HEX + 1]) {
    char m[64];
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256(mac, (const unsigned char *)m, credential_message(client, m, sizeof m), key);
    sodium_bin2hex(hex, FEDC__CREDENTIAL_HEX + 1, mac, sizeof mac);
    sodium_memzero(mac, sizeof mac);
}

bool fedc__credential_verify(const unsigned char key[FEDC__CREDENTIAL_KEY_BYTES], int64_t client, const char *presented) {
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    size_t got = 0;
    const char *end = NULL;
    if (!presented || strlen(presented) != FEDC__CREDENTIAL_HEX) return false; /* the length is no secret */
    /* sodium_hex2bin and the verification both take the same time wherever the bytes differ */
    if (sodium_hex2bin(mac, sizeof mac, presented, FEDC__CREDENTIAL_HEX, NULL, &got, &end) || got != sizeof mac ||
        *end)
        return false;
    char m[64];
    bool ok = crypto_auth_hmacsha256_verify(mac, (const unsigned char *)m, credential_message(client, m, sizeof m), key) == 0;
    sodium_memzero(mac, sizeof mac);
    return ok;
}

void fedc__credential_path(const char *dir, int64_t client, char *path, size_t size) {
    snprintf(path, size, "%s/client-%lld.credential", dir, (long long)client);
}

/* The first line of `path`, 64 hex digits, into hex; `what` names it in errors. */
static fedc_status read_hex_line(const char *path, const char *what, char hex[FEDC__CREDENTIAL_HEX + 1]) {
    FILE *f = fopen(path, "r");
    if (!f) return fedc_error(FEDC_EIO, "%s: cannot open %s: %s", path, what, strerror(errno));
    char line[FEDC__CREDENTIAL_HEX + 3] = "";
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    ok = ok && strlen(line) == FEDC__CREDENTIAL_HEX && strspn(line, "0123456789abcdefABCDEF") == FEDC__CREDENTIAL_HEX;
    if (ok) memcpy(hex, line, FEDC__CREDENTIAL_HEX + 1);
    sodium_memzero(line, sizeof line);
    return ok ? FEDC_OK : fedc_error(FEDC_EPARSE, "%s: %s must be one line of 64 hex digits", path, what);
}

/* `text` and a newline written to `path`, created with mode 0600 (exclusive:
 * an existing file is left alone and refused) or truncated to it. */
static fedc_status write_secret(const char *path, const char *text, bool exclusive) {
    int fd = open(path, O_WRONLY | O_CREAT | (exclusive ? O_EXCL : O_TRUNC), 0600);
    if (fd < 0) return fedc_error(FEDC_EIO, "%s: cannot create: %s", path, strerror(errno));
    size_t n = strlen(text);
    bool ok = fchmod(fd, 0600) == 0 && write(fd, text, n) == (ssize_t)n && write(fd, "\n", 1) == 1;
    ok = close(fd) == 0 && ok;
    return ok ? FEDC_OK : fedc_error(FEDC_EIO, "%s: cannot write: %s", path, strerror(errno));
}

fedc_status fedc__credential_key_load(const char *path, bool make, unsigned char key[FEDC__CREDENTIAL_KEY_BYTES]) {
    if (sodium_init() < 0) return fedc_error(FEDC_EINTERNAL, "credentials: libsodium failed to initialise");
    char hex[FEDC__CREDENTIAL_HEX + 1];
    fedc_status st = FEDC_OK;
    if (make && access(path, F_OK) != 0) {
        randombytes_buf(key, FEDC__CREDENTIAL_KEY_BYTES);
        sodium_bin2hex(hex, sizeof hex, key, FEDC__CREDENTIAL_KEY_BYTES);
        st = write_secret(path, hex, true);
    } else if (!(st = read_hex_line(path, "the credentials key", hex))) {
        sodium_hex2bin(key, FEDC__CREDENTIAL_KEY_BYTES, hex, FEDC__CREDENTIAL_HEX, NULL, NULL, NULL);
    }
    sodium_memzero(hex, sizeof hex);
    return st;
}

fedc_status fedc__credential_read(const char *dir, int64_t client, char hex[FEDC__CREDENTIAL_HEX + 1]) {
    char path[4200];
    fedc__credential_path(dir, client, path, sizeof path);
    return read_hex_line(path, "a client's credential", hex);
}

fedc_status fedc_credentials_issue(const char *key_path, int64_t clients, const char *dir) {
    if (!key_path || !dir || clients < 1 || clients > FEDC_MAX_CREDENTIALS)
        return fedc_error(FEDC_EINVAL, "credentials: needs a key file, an output directory and 1 to %d clients, not %lld",
                          FEDC_MAX_CREDENTIALS, (long long)clients);
    unsigned char key[FEDC__CREDENTIAL_KEY_BYTES];
    fedc_status st = fedc__credential_key_load(key_path, true, key);
    if (!st) st = fedc_make_dirs(dir);
    for (int64_t c = 0; !st && c < clients; c++) {
        char path[4200], hex[FEDC__CREDENTIAL_HEX + 1];
        fedc__credential_path(dir, c, path, sizeof path);
        fedc__credential_derive(key, c, hex);
        st = write_secret(path, hex, false);
        sodium_memzero(hex, sizeof hex);
    }
    sodium_memzero(key, sizeof key);
    return st;
}
