/* client_state.h — a deployed client's state kept on disk (internal).
 *
 * A client of a stateful algorithm (SCAFFOLD's c_i, FedDyn's, DiLoCo's, APFL's
 * personal model) holds its state in memory between rounds. With
 * fedc_client_options.state_dir it also writes it, after every change, to
 * DIR/client-<id>.safetensors (written whole to a temporary file, synced and
 * renamed: a kill at any moment leaves the old file or the new one), so that a
 * process started again with the same options goes on from it instead of from
 * client_init. The file holds the state (client/<leaf>), the state of a counted
 * report whose round is not known to have committed (next/client/<leaf>, kept
 * or let go when the next task or done says), and in its metadata the plan's
 * hash, the client's id, that pending round and whether any round's state was
 * kept. */
#ifndef FEDC_DEPLOY_CLIENT_STATE_H
#define FEDC_DEPLOY_CLIENT_STATE_H

#include "fedc/safetensors.h"

typedef struct fedc__client_state {
    fedc_safetensors *file; /* the tensors: client/<leaf> and next/client/<leaf> */
    int64_t pending_round;  /* -1: none */
    bool seen;              /* a round's state was kept (the client is not new) */
} fedc__client_state;

/* The path of client `id`'s file in dir (buf of 4200 bytes suffices). */
const char *fedc__client_state_path(const char *dir, const char *id, char *buf, size_t size);

/* Writes the n tensors (client/ and next/client/ names) with the metadata: the
 * job's plan hash (its programs) and settings hash (fedc__plan_settings_hash),
 * the client, the pending round and whether a round's state was kept. */
fedc_status fedc__client_state_save(const char *dir, const char *id, const char *plan_hash, const char *settings_hash,
                                    const fedc_tensor_entry *t, int n, int64_t pending_round, bool seen);

/* Reads client id's file into *out, checked: a file of this plan (its programs'
 * hash, and its settings' where the file has them) and client, every tensor
 * named client/<leaf> or next/client/<leaf>. out->file is NULL when there is no
 * file (a client never run with this directory). */
fedc_status fedc__client_state_load(const char *dir, const char *id, const char *plan_hash, const char *settings_hash,
                                    fedc__client_state *out);

#endif
