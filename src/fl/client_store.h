/* fl/client_store.h — the per-client state store (internal): one file holding a
 * fixed-size record per client (SCAFFOLD's control variates, APFL's personal
 * models, a replica's optimizer state) for populations whose states do not fit in
 * memory. Only each round's cohort is read and written (pread/pwrite of its slots
 * in a sparse file); each client has two slots, so that the version a resume from
 * the last training checkpoint needs is never overwritten.
 *
 * The on-disk layout, the guarantees and how the runner calls these functions are
 * in docs/client_state.md ("Per-client state store").
 *
 * Threads: a store is used by one thread at a time (the runner's); distinct
 * stores are independent. Processes: the file is locked (fcntl, whole file) while
 * open, so a second process opening it gets an error instead of sharing it.
 * Memory: a store holds its path and layout text (at most FEDC__STORE_MAX_LAYOUT
 * bytes); nothing is proportional to num_clients or to record_bytes. resume() and
 * count() scan the index through a fixed 16 KiB buffer.
 *
 * Every error sets fedc_errmsg() naming the file and what is wrong (the client and
 * round where there is one); nothing aborts, and a failed call never damages a
 * version that a resume needs. A process that lowers RLIMIT_FSIZE should ignore
 * SIGXFSZ, so that writing past the limit is the error EFBIG rather than the
 * signal's default (termination). */
#ifndef FEDC_FL_CLIENT_STORE_H
#define FEDC_FL_CLIENT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fedc/core.h"

/* Bounds on a store's shape, checked on creation and on every file opened. */
#define FEDC__STORE_MAX_CLIENTS ((int64_t)1 << 32)
#define FEDC__STORE_MAX_RECORD ((int64_t)1 << 36) /* 64 GiB: far above any model */
#define FEDC__STORE_MAX_LAYOUT ((size_t)1 << 20)  /* 1 MiB of layout text */
/* The last round a record can be written at (rounds are stored as round + 1 in a u32). */
#define FEDC__STORE_MAX_ROUND (UINT32_MAX - 1)

typedef struct fedc__client_store fedc__client_store;

/* Opens (creating if absent) the store at `path` for `num_clients` clients whose
 * records are `record_bytes` bytes; `layout` is a short text describing the record
 * (e.g. "scaffold: c/dense/w f32[784,10]; c/dense/b f32[10]"), recorded in the
 * header: an existing store whose layout, record size or client count differ is
 * refused, naming both. A new store is made under `path`.new and renamed into
 * place, so a store file is never half-made. */
fedc_status fedc__client_store_open(fedc__client_store **out, const char *path, int64_t num_clients,
                                    size_t record_bytes, const char *layout);
void fedc__client_store_close(fedc__client_store *s); /* safe on NULL */

/* Reads the records of n clients as of the start of round `round` (the latest
 * version written at a round < `round`); found[i] = false (dst[i] untouched) for a
 * client never written before it. A record that fails its checksum is an error
 * naming the file, client and round (dst[i] then holds unspecified bytes). The
 * store keeps the latest versions, not a history: a read at a round no later than
 * one of the client's versions is refused (FEDC_EINVAL), except at the protected
 * round, whose version before it is kept by design. */
fedc_status fedc__client_store_read(fedc__client_store *s, uint32_t round, int n, const int64_t *clients,
                                    void *const *dst, bool *found);

/* Writes the records of n clients as computed in round `round` (never
 * overwriting the version a resume from the last checkpoint needs). Rounds go
 * forward: `round` must be at least the protected round and at least the round of
 * the client's versions (an equal round rewrites that version). */
fedc_status fedc__client_store_write(fedc__client_store *s, uint32_t round, int n, const int64_t *clients,
                                     const void *const *src);

/* Makes everything written so far durable (fdatasync); call before the training
 * checkpoint is renamed into place. */
fedc_status fedc__client_store_sync(fedc__client_store *s);

/* After the training checkpoint for `next_round` is in place, and before any
 * write at a round >= next_round: from now on the versions a resume from it needs
 * (each client's latest version written at a round < next_round) are protected.
 * Durable (syncs the data first). next_round may not go back. */
fedc_status fedc__client_store_checkpoint(fedc__client_store *s, uint32_t next_round);

/* On resuming from the checkpoint for `next_round`: forgets every version written
 * at a round >= next_round (a killed run wrote them after its checkpoint) and
 * protects as checkpoint() does. next_round may not be before the protected round
 * (older versions may be gone), except 0: a run that starts afresh calls
 * resume(s, 0), which forgets everything. */
fedc_status fedc__client_store_resume(fedc__client_store *s, uint32_t next_round);

/* Clients with at least one version in the index (for messages and tests): a scan
 * of the index, O(num_clients) reads; -1 with the message set if it cannot be read. */
int64_t fedc__client_store_count(const fedc__client_store *s);

/* The round whose resume the store protects (0 for a new store). */
uint32_t fedc__client_store_protected_round(const fedc__client_store *s);

#endif
