/* credential.h — per-client credentials (internal; credential.c): who may
 * speak for which client id. A client's credential is HMAC-SHA-256, under the
 * server's 32-byte secret key, of "fedc credential 1 client " and its id in
 * decimal, written as 64 hex digits. The server keeps only the key: it derives
 * the credential of the id a request claims and compares it with the one the
 * request carries (in its "token" field) in constant time, so a client that
 * holds client 3's credential cannot speak as client 4. docs/deployment.md,
 * "Per-client credentials" and "Security model". */
#ifndef FEDC_DEPLOY_CREDENTIAL_H
#define FEDC_DEPLOY_CREDENTIAL_H

#include <stdbool.h>
#include <stdint.h>

#include "fedc/core.h"

enum { FEDC__CREDENTIAL_KEY_BYTES = 32, FEDC__CREDENTIAL_HEX = 64 };

/* The key in `path`: its first line, 64 hex digits. With `make`, a file that
 * does not exist is created (mode 0600, never over an existing file) with a
 * fresh random key. */
fedc_status fedc__credential_key_load(const char *path, bool make, unsigned char key[FEDC__CREDENTIAL_KEY_BYTES]);

/* Client `client`'s credential under `key`, as 64 hex digits and a NUL. */
void fedc__credential_derive(const unsigned char key[FEDC__CREDENTIAL_KEY_BYTES], int64_t client,
                             char hex[FEDC__CREDENTIAL_HEX + 1]);

/* Whether `presented` is client `client`'s credential under `key`: 64 hex
 * digits whose bytes are the client's MAC, compared in constant time. */
bool fedc__credential_verify(const unsigned char key[FEDC__CREDENTIAL_KEY_BYTES], int64_t client, const char *presented);

/* The credential file of client `client` in `dir`: DIR/client-ID.credential. */
void fedc__credential_path(const char *dir, int64_t client, char *path, size_t size);

/* The credential in client `client`'s file in `dir` (its first line, 64 hex
 * digits), into hex. */
fedc_status fedc__credential_read(const char *dir, int64_t client, char hex[FEDC__CREDENTIAL_HEX + 1]);

#endif
