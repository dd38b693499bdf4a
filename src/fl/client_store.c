/* The per-client state store (fl/client_store.h; the layout is documented in
 * docs/client_state.md, "Per-client state store"):
 *
 *   [0, H)          header: magic, version, num_clients, record_bytes, the layout
 *                   text and a crc32 of it all; H = 64 + layout text, rounded up to 4 KiB
 *   [H, H+4K)       state: the protected round and its crc32 (rewritten by checkpoint/resume)
 *   [H+4K, D)       index: num_clients x 2 slot entries {u32 round+1 (0 = empty), u32 crc32}
 *   [D, end)        data: num_clients x 2 slots of record_bytes (D rounded up to 4 KiB)
 *
 * All integers little-endian. The file is made at its full size by ftruncate, so
 * the slots of clients never written are holes and take no disk space. A slot's
 * crc32 covers the client index and round as well as the record, so a record
 * found in the wrong slot or under a damaged round fails its check too. */
#include "fl/client_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

_Static_assert(sizeof(off_t) == 8, "the store's offsets need a 64-bit off_t");

#define MAGIC "FEDCSTOR"
enum {
    VERSION = 1,
    FIXED_HEADER = 64, /* bytes before the layout text */
    BLOCK = 4096,      /* alignment of the state block, the index and the data */
    ENTRY = 8,         /* one slot's index entry */
    SCAN = 2048,       /* index entries per chunk of resume() and count(): 16 KiB */
};

struct fedc__client_store {
    int fd;
    char *path;
    int64_t num_clients;
    uint64_t record_bytes;
    uint64_t state_off, index_off, data_off, file_bytes;
    uint32_t protected_round;
};

/* A slot's index entry as read: round is meaningful when `used`. */
typedef struct slot {
    bool used;
    uint32_t round, crc;
} slot;

/* ------------------------------------------------------------ encoding -- */

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

/* The checksum of a slot: client index, round, then the record. */
static uint32_t slot_crc(int64_t client, uint32_t round, const void *data, uint64_t bytes) {
    unsigned char key[12];
    put_u64(key, (uint64_t)client);
    put_u32(key + 8, round);
    uLong c = crc32_z(crc32(0L, Z_NULL, 0), key, sizeof key);
    return (uint32_t)crc32_z(c, data, (z_size_t)bytes);
}

/* The state block's checksum: over the round's 4 bytes, so that a zeroed block fails. */
static uint32_t state_crc(const unsigned char *round4) { return (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), round4, 4); }

/* Where a store of this shape puts its parts; false if the file would not fit an off_t. */
static bool geometry(fedc__client_store *s, int64_t num_clients, uint64_t record_bytes, size_t layout_len) {
    uint64_t header = round_up(FIXED_HEADER + (uint64_t)layout_len, BLOCK);
    s->num_clients = num_clients;
    s->record_bytes = record_bytes;
    s->state_off = header;
    s->index_off = header + BLOCK;
    s->data_off = round_up(s->index_off + (uint64_t)num_clients * 2 * ENTRY, BLOCK);
    uint64_t slots = (uint64_t)num_clients * 2;
    if (record_bytes > ((uint64_t)INT64_MAX - s->data_off) / slots) return false;
    s->file_bytes = s->data_off + slots * record_bytes;
    return true;
}

/* Up to cap - 1 bytes of text as a message can show it: non-printable bytes as
 * '?', "..." when cut. */
static const char *shown(char *buf, size_t cap, const char *text, size_t len) {
    size_t n = 0;
    for (; n < len && n + 4 < cap; n++) buf[n] = (text[n] >= 0x20 && text[n] < 0x7f) ? text[n] : '?';
    if (n < len) memcpy(buf + n, "...", 3), n += 3;
    buf[n] = '\0';
    return buf;
}

/* ------------------------------------------------------------------ I/O -- */

/* Reads exactly n bytes at off: a short read (the file ends early) is an error. */
static fedc_status read_at(int fd, const char *path, void *buf, uint64_t n, uint64_t off, const char *what) {
    unsigned char *p = buf;
    for (uint64_t done = 0; done < n;) {
        size_t want = n - done < ((size_t)1 << 30) ? (size_t)(n - done) : (size_t)1 << 30;
        ssize_t got = pread(fd, p + done, want, (off_t)(off + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            return fedc_error(FEDC_EIO, "%s: cannot read %s at byte %llu: %s", path, what,
                              (unsigned long long)(off + done), strerror(errno));
        if (got == 0)
            return fedc_error(FEDC_EIO, "%s: the file ends at byte %llu, inside %s (%llu bytes at byte %llu): truncated",
                              path, (unsigned long long)(off + done), what, (unsigned long long)n,
                              (unsigned long long)off);
        done += (uint64_t)got;
    }
    return FEDC_OK;
}

/* Writes exactly n bytes at off; a short write is retried, so that the error
 * reported is the one that stopped it (ENOSPC, EFBIG, EIO). */
static fedc_status write_at(int fd, const char *path, const void *buf, uint64_t n, uint64_t off, const char *what) {
    const unsigned char *p = buf;
    for (uint64_t done = 0; done < n;) {
        size_t want = n - done < ((size_t)1 << 30) ? (size_t)(n - done) : (size_t)1 << 30;
        ssize_t put = pwrite(fd, p + done, want, (off_t)(off + done));
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0)
            return fedc_error(FEDC_EIO, "%s: cannot write %s at byte %llu: %s", path, what,
                              (unsigned long long)(off + done), put < 0 ? strerror(errno) : "nothing written");
        done += (uint64_t)put;
    }
    return FEDC_OK;
}

static fedc_status sync_fd(int fd, const char *path) {
    while (fdatasync(fd) != 0)
        if (errno != EINTR) return fedc_error(FEDC_EIO, "%s: cannot make the store durable (fdatasync): %s", path, strerror(errno));
    return FEDC_OK;
}

/* An exclusive lock on the whole file, so that two processes never share a store. */
static fedc_status lock_fd(int fd, const char *path) {
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_SETLK, &l) == 0) return FEDC_OK;
    int err = errno;
    if (err == EACCES || err == EAGAIN) {
        struct flock who = l;
        if (fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK)
            return fedc_error(FEDC_EIO, "%s: the store is in use by another process (pid %ld)", path, (long)who.l_pid);
        return fedc_error(FEDC_EIO, "%s: the store is in use by another process", path);
    }
    return fedc_error(FEDC_EIO, "%s: cannot lock the store: %s", path, strerror(err));
}

/* The state block: the protected round, durable once synced. */
static fedc_status write_state(fedc__client_store *s, uint32_t protected_round) {
    unsigned char b[8];
    put_u32(b, protected_round);
    put_u32(b + 4, state_crc(b));
    fedc_status st = write_at(s->fd, s->path, b, sizeof b, s->state_off, "the state block");
    if (st == FEDC_OK) s->protected_round = protected_round;
    return st;
}

static fedc_status read_state(fedc__client_store *s) {
    unsigned char b[8];
    fedc_status st = read_at(s->fd, s->path, b, sizeof b, s->state_off, "the state block");
    if (st) return st;
    if (get_u32(b + 4) != state_crc(b))
        return fedc_error(FEDC_EIO, "%s: the state block (byte %llu) fails its checksum: the file is damaged", s->path,
                          (unsigned long long)s->state_off);
    s->protected_round = get_u32(b);
    return FEDC_OK;
}

/* ------------------------------------------------------------- creation -- */

/* The header block and an initial state block (protected round 0), in buf of
 * state_off + 8 bytes, zeroed. */
static void encode_header(const fedc__client_store *s, unsigned char *buf, const char *layout, size_t layout_len) {
    memcpy(buf, MAGIC, 8);
    put_u32(buf + 8, VERSION);
    put_u32(buf + 12, (uint32_t)layout_len);
    put_u64(buf + 16, (uint64_t)s->num_clients);
    put_u64(buf + 24, s->record_bytes);
    put_u64(buf + 32, s->state_off);
    put_u64(buf + 40, s->data_off);
    memcpy(buf + FIXED_HEADER, layout, layout_len);
    uLong c = crc32_z(crc32(0L, Z_NULL, 0), buf, 60);
    put_u32(buf + 60, (uint32_t)crc32_z(c, buf + FIXED_HEADER, layout_len));
    unsigned char *state = buf + s->state_off;
    put_u32(state, 0);
    put_u32(state + 4, state_crc(state));
}

/* fsync of the directory holding path, so that the rename that made the store is durable. */
static fedc_status sync_dir(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir) return fedc_error(FEDC_EINVAL, "%s: the path is too long", path);
    memcpy(dir, !slash ? "." : path, n);
    dir[n] = '\0';
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fedc_error(FEDC_EIO, "%s: cannot open its directory %s: %s", path, dir, strerror(errno));
    int rc = fsync(fd), err = errno;
    close(fd);
    if (rc != 0 && err != EINVAL) return fedc_error(FEDC_EIO, "%s: cannot sync its directory %s: %s", path, dir, strerror(err));
    return FEDC_OK;
}

/* Makes the store under path.new (locked, full size, synced) and renames it into
 * place; on failure removes path.new. Leaves s->fd open on success. */
static fedc_status create_store(fedc__client_store *s, const char *layout, size_t layout_len) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.new", s->path) >= (int)sizeof tmp)
        return fedc_error(FEDC_EINVAL, "%s: the path is too long", s->path);
    int fd = open(tmp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return fedc_error(FEDC_EIO, "%s: cannot create the store (as %s): %s", s->path, tmp, strerror(errno));
    fedc_status st = lock_fd(fd, tmp);
    if (st) { /* another process is making it: leave its file alone */
        close(fd);
        return st;
    }
    size_t head = (size_t)s->state_off + 8;
    unsigned char *buf = fedc_calloc(1, head);
    if (!buf) st = fedc_error(FEDC_ENOMEM, "%s: no memory for the header (%zu bytes)", s->path, head);
    if (!st && ftruncate(fd, 0) != 0)
        st = fedc_error(FEDC_EIO, "%s: cannot truncate %s: %s", s->path, tmp, strerror(errno));
    if (!st) {
        encode_header(s, buf, layout, layout_len);
        st = write_at(fd, tmp, buf, head, 0, "the header");
    }
    fedc_free(buf);
    if (!st && ftruncate(fd, (off_t)s->file_bytes) != 0)
        st = fedc_error(FEDC_EIO, "%s: cannot size the store to %llu bytes (%lld clients x 2 slots x %llu bytes): %s",
                        tmp, (unsigned long long)s->file_bytes, (long long)s->num_clients,
                        (unsigned long long)s->record_bytes, strerror(errno));
    if (!st) st = sync_fd(fd, tmp);
    if (!st && rename(tmp, s->path) != 0)
        st = fedc_error(FEDC_EIO, "%s: cannot rename %s into place: %s", s->path, tmp, strerror(errno));
    if (st) {
        unlink(tmp);
        close(fd);
        return st;
    }
    s->fd = fd;
    s->protected_round = 0;
    return sync_dir(s->path);
}

/* -------------------------------------------------------------- opening -- */

/* Checks an existing store's header against its own bounds and the file's size,
 * then against what the caller asked for. */
static fedc_status check_header(fedc__client_store *s, int64_t num_clients, uint64_t record_bytes, const char *layout,
                                size_t layout_len) {
    const char *p = s->path;
    struct stat sb;
    if (fstat(s->fd, &sb) != 0) return fedc_error(FEDC_EIO, "%s: cannot stat the store: %s", p, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return fedc_error(FEDC_EIO, "%s: not a regular file, so not a client store", p);
    if (sb.st_size < FIXED_HEADER)
        return fedc_error(FEDC_EPARSE, "%s: %lld bytes, shorter than a client store's header (%d): not a store, or truncated",
                          p, (long long)sb.st_size, FIXED_HEADER);
    unsigned char h[FIXED_HEADER];
    fedc_status st = read_at(s->fd, p, h, sizeof h, 0, "the header");
    if (st) return st;
    if (memcmp(h, MAGIC, 8) != 0) return fedc_error(FEDC_EPARSE, "%s: not a fedc client store (no \"" MAGIC "\" magic)", p);
    if (get_u32(h + 8) != VERSION)
        return fedc_error(FEDC_EUNSUPPORTED, "%s: client store version %u; this fedc reads version %d", p,
                          get_u32(h + 8), VERSION);
    uint32_t stored_len = get_u32(h + 12);
    uint64_t clients = get_u64(h + 16), bytes = get_u64(h + 24);
    if (stored_len > FEDC__STORE_MAX_LAYOUT)
        return fedc_error(FEDC_EPARSE, "%s: header's layout text of %u bytes is over the limit of %zu", p, stored_len,
                          FEDC__STORE_MAX_LAYOUT);
    if (clients < 1 || clients > (uint64_t)FEDC__STORE_MAX_CLIENTS)
        return fedc_error(FEDC_EPARSE, "%s: header's client count %llu is out of range [1, %lld]", p,
                          (unsigned long long)clients, (long long)FEDC__STORE_MAX_CLIENTS);
    if (bytes < 1 || bytes > (uint64_t)FEDC__STORE_MAX_RECORD)
        return fedc_error(FEDC_EPARSE, "%s: header's record size %llu is out of range [1, %lld]", p,
                          (unsigned long long)bytes, (long long)FEDC__STORE_MAX_RECORD);
    if (!geometry(s, (int64_t)clients, bytes, stored_len))
        return fedc_error(FEDC_EPARSE, "%s: header's %llu clients x 2 x %llu bytes do not fit a file", p,
                          (unsigned long long)clients, (unsigned long long)bytes);
    if (get_u64(h + 32) != s->state_off || get_u64(h + 40) != s->data_off)
        return fedc_error(FEDC_EPARSE, "%s: header's offsets (state %llu, data %llu) are not those of its shape (%llu, %llu)",
                          p, (unsigned long long)get_u64(h + 32), (unsigned long long)get_u64(h + 40),
                          (unsigned long long)s->state_off, (unsigned long long)s->data_off);
    if ((uint64_t)sb.st_size != s->file_bytes)
        return fedc_error(FEDC_EPARSE, "%s: %lld bytes, but its header (%llu clients x 2 slots x %llu bytes) makes %llu: %s", p,
                          (long long)sb.st_size, (unsigned long long)clients, (unsigned long long)bytes,
                          (unsigned long long)s->file_bytes, (uint64_t)sb.st_size < s->file_bytes ? "truncated" : "extended");
    char *text = fedc_malloc((size_t)stored_len + 1);
    if (!text) return fedc_error(FEDC_ENOMEM, "%s: no memory for the layout text (%u bytes)", p, stored_len);
    st = read_at(s->fd, p, text, stored_len, FIXED_HEADER, "the layout text");
    uLong c = crc32_z(crc32_z(crc32(0L, Z_NULL, 0), h, 60), (const Bytef *)text, stored_len);
    if (!st && (uint32_t)c != get_u32(h + 60))
        st = fedc_error(FEDC_EIO, "%s: the header fails its checksum: the file is damaged", p);
    if (!st && (clients != (uint64_t)num_clients || bytes != record_bytes))
        st = fedc_error(FEDC_EINVAL, "%s: the store holds %llu clients of %llu-byte records, not %lld of %llu bytes as asked",
                        p, (unsigned long long)clients, (unsigned long long)bytes, (long long)num_clients,
                        (unsigned long long)record_bytes);
    if (!st && (stored_len != layout_len || memcmp(text, layout, layout_len) != 0)) {
        char a[160], b[160];
        st = fedc_error(FEDC_EINVAL, "%s: the store holds records of layout \"%s\", not the \"%s\" asked for", p,
                        shown(a, sizeof a, text, stored_len), shown(b, sizeof b, layout, layout_len));
    }
    fedc_free(text);
    return st;
}

static fedc_status open_existing(fedc__client_store *s, int64_t num_clients, uint64_t record_bytes, const char *layout,
                                 size_t layout_len) {
    fedc_status st = lock_fd(s->fd, s->path);
    if (!st) st = check_header(s, num_clients, record_bytes, layout, layout_len);
    if (!st) st = read_state(s);
    return st;
}

fedc_status fedc__client_store_open(fedc__client_store **out, const char *path, int64_t num_clients,
                                    size_t record_bytes, const char *layout) {
    if (!out) return fedc_error(FEDC_EINVAL, "client store: out is NULL");
    *out = NULL;
    if (!path || !*path || !layout) return fedc_error(FEDC_EINVAL, "client store: the path or the layout is missing");
    if (num_clients < 1 || num_clients > FEDC__STORE_MAX_CLIENTS)
        return fedc_error(FEDC_EINVAL, "%s: %lld clients is out of range [1, %lld]", path, (long long)num_clients,
                          (long long)FEDC__STORE_MAX_CLIENTS);
    if (record_bytes < 1 || (uint64_t)record_bytes > (uint64_t)FEDC__STORE_MAX_RECORD)
        return fedc_error(FEDC_EINVAL, "%s: a record of %zu bytes is out of range [1, %lld]", path, record_bytes,
                          (long long)FEDC__STORE_MAX_RECORD);
    size_t layout_len = strlen(layout);
    if (layout_len > FEDC__STORE_MAX_LAYOUT)
        return fedc_error(FEDC_EINVAL, "%s: a layout text of %zu bytes is over the limit of %zu", path, layout_len,
                          FEDC__STORE_MAX_LAYOUT);
    fedc__client_store *s = fedc_calloc(1, sizeof *s);
    size_t plen = strlen(path);
    if (s) s->path = fedc_malloc(plen + 1);
    if (!s || !s->path) {
        fedc_free(s);
        return fedc_error(FEDC_ENOMEM, "%s: no memory for the client store", path);
    }
    memcpy(s->path, path, plen + 1);
    s->fd = -1;
    fedc_status st = FEDC_OK;
    if (!geometry(s, num_clients, record_bytes, layout_len))
        st = fedc_error(FEDC_EINVAL, "%s: %lld clients x 2 slots x %zu bytes do not fit a file", path,
                        (long long)num_clients, record_bytes);
    if (!st) {
        s->fd = open(path, O_RDWR | O_CLOEXEC);
        if (s->fd >= 0) st = open_existing(s, num_clients, record_bytes, layout, layout_len);
        else if (errno == ENOENT) st = create_store(s, layout, layout_len);
        else st = fedc_error(FEDC_EIO, "%s: cannot open the store: %s", path, strerror(errno));
    }
    if (st) {
        fedc__client_store_close(s);
        return st;
    }
    *out = s;
    return FEDC_OK;
}

void fedc__client_store_close(fedc__client_store *s) {
    if (!s) return;
    if (s->fd >= 0) close(s->fd);
    fedc_free(s->path);
    fedc_free(s);
}

/* ---------------------------------------------------- reads and writes -- */

static uint64_t entry_off(const fedc__client_store *s, int64_t client) {
    return s->index_off + (uint64_t)client * 2 * ENTRY;
}
static uint64_t slot_off(const fedc__client_store *s, int64_t client, int j) {
    return s->data_off + ((uint64_t)client * 2 + (uint64_t)j) * s->record_bytes;
}

static void decode_slot(const unsigned char *e, slot *out) {
    uint32_t r1 = get_u32(e);
    out->used = r1 != 0;
    out->round = r1 - 1;
    out->crc = get_u32(e + 4);
}

/* Both slot entries of a client. */
static fedc_status read_slots(const fedc__client_store *s, int64_t client, slot sl[2]) {
    unsigned char e[2 * ENTRY];
    fedc_status st = read_at(s->fd, s->path, e, sizeof e, entry_off(s, client), "the index");
    if (st) return st;
    decode_slot(e, &sl[0]);
    decode_slot(e + ENTRY, &sl[1]);
    return FEDC_OK;
}

/* The arguments every read and write takes: a store, n >= 0 clients in range. */
static fedc_status check_clients(const fedc__client_store *s, int n, const int64_t *clients, const void *buffers,
                                 const char *what) {
    if (!s) return fedc_error(FEDC_EINVAL, "client store %s: the store is NULL", what);
    if (n < 0) return fedc_error(FEDC_EINVAL, "%s: %s of %d clients", s->path, what, n);
    if (n > 0 && (!clients || !buffers)) return fedc_error(FEDC_EINVAL, "%s: %s without clients or buffers", s->path, what);
    for (int i = 0; i < n; i++)
        if (clients[i] < 0 || clients[i] >= s->num_clients)
            return fedc_error(FEDC_ERANGE, "%s: %s: client %lld is out of range: the store has %lld clients", s->path,
                              what, (long long)clients[i], (long long)s->num_clients);
    return FEDC_OK;
}

/* The slot a read at `round` takes: the newest with a round before it; -1 if none. */
static int newest_before(const slot sl[2], uint32_t round) {
    int best = -1;
    for (int j = 0; j < 2; j++)
        if (sl[j].used && sl[j].round < round && (best < 0 || sl[j].round > sl[best].round)) best = j;
    return best;
}

/* The store keeps each client's latest versions, not its history: a read at a
 * round no later than one of the client's versions is exact only at the protected
 * round (a resume's reads), where the version before it is kept by design; any
 * other such read could silently return an older version than the one asked for. */
static fedc_status check_exact(const fedc__client_store *s, const slot sl[2], uint32_t round, int64_t c) {
    for (int j = 0; j < 2; j++)
        if (sl[j].used && sl[j].round >= round && round != s->protected_round)
            return fedc_error(FEDC_EINVAL, "%s: a read of client %lld at round %u, which has a version of round %u already: "
                              "the store keeps the latest versions, so earlier rounds read exactly only at the "
                              "protected round (%u)", s->path, (long long)c, round, sl[j].round, s->protected_round);
    return FEDC_OK;
}

fedc_status fedc__client_store_read(fedc__client_store *s, uint32_t round, int n, const int64_t *clients,
                                    void *const *dst, bool *found) {
    fedc_status st = check_clients(s, n, clients, dst, "read");
    if (!st && n > 0 && !found) st = fedc_error(FEDC_EINVAL, "%s: read without a found array", s->path);
    for (int i = 0; !st && i < n; i++) {
        slot sl[2];
        int64_t c = clients[i];
        if ((st = read_slots(s, c, sl))) break;
        if ((st = check_exact(s, sl, round, c))) break;
        int j = newest_before(sl, round);
        found[i] = j >= 0;
        if (j < 0) continue;
        if ((st = read_at(s->fd, s->path, dst[i], s->record_bytes, slot_off(s, c, j), "a record"))) break;
        uint32_t crc = slot_crc(c, sl[j].round, dst[i], s->record_bytes);
        if (crc != sl[j].crc)
            st = fedc_error(FEDC_EIO, "%s: the record of client %lld written at round %u fails its checksum (stored %08x, "
                            "computed %08x): the file is damaged", s->path, (long long)c, sl[j].round, sl[j].crc, crc);
    }
    return st;
}

/* The slot a write at `round` goes to: the one already holding that round, else
 * the one a resume from the protected round does not need (the newest before it),
 * preferring an empty slot, then the older. */
static int write_target(const slot sl[2], uint32_t round, uint32_t protected_round) {
    for (int j = 0; j < 2; j++)
        if (sl[j].used && sl[j].round == round) return j;
    int needed = newest_before(sl, protected_round);
    if (needed >= 0) return 1 - needed;
    if (!sl[0].used || !sl[1].used) return sl[0].used ? 1 : 0;
    return sl[0].round <= sl[1].round ? 0 : 1;
}

/* One client's record: the target slot's entry is cleared first, then the record
 * and its new entry are written, so that a write cut short (a kill, ENOSPC) leaves
 * the slot empty rather than an old entry over new bytes. */
static fedc_status write_one(fedc__client_store *s, uint32_t round, int64_t c, const void *src) {
    slot sl[2];
    fedc_status st = read_slots(s, c, sl);
    if (st) return st;
    for (int j = 0; j < 2; j++)
        if (sl[j].used && sl[j].round > round)
            return fedc_error(FEDC_EINVAL, "%s: client %lld has a version of round %u, later than the round %u written: "
                              "rounds go forward (resume() forgets later ones)", s->path, (long long)c, sl[j].round, round);
    int j = write_target(sl, round, s->protected_round);
    unsigned char e[ENTRY] = {0};
    uint64_t eoff = entry_off(s, c) + (uint64_t)j * ENTRY;
    if (sl[j].used && (st = write_at(s->fd, s->path, e, ENTRY, eoff, "the index"))) return st;
    if ((st = write_at(s->fd, s->path, src, s->record_bytes, slot_off(s, c, j), "a record"))) return st;
    put_u32(e, round + 1);
    put_u32(e + 4, slot_crc(c, round, src, s->record_bytes));
    return write_at(s->fd, s->path, e, ENTRY, eoff, "the index");
}

fedc_status fedc__client_store_write(fedc__client_store *s, uint32_t round, int n, const int64_t *clients,
                                     const void *const *src) {
    fedc_status st = check_clients(s, n, clients, src, "write");
    if (st) return st;
    if (round > FEDC__STORE_MAX_ROUND)
        return fedc_error(FEDC_ERANGE, "%s: round %u is past the last a store records (%u)", s->path, round,
                          (unsigned)FEDC__STORE_MAX_ROUND);
    if (round < s->protected_round)
        return fedc_error(FEDC_EINVAL, "%s: a write at round %u, before the protected round %u (the versions a resume "
                          "from its checkpoint needs)", s->path, round, s->protected_round);
    for (int i = 0; !st && i < n; i++) st = write_one(s, round, clients[i], src[i]);
    return st;
}

/* ------------------------------------------- durability and protection -- */

fedc_status fedc__client_store_sync(fedc__client_store *s) {
    if (!s) return fedc_error(FEDC_EINVAL, "client store sync: the store is NULL");
    return sync_fd(s->fd, s->path);
}

/* Records next_round as protected, durably, after the data it protects. */
static fedc_status protect(fedc__client_store *s, uint32_t next_round) {
    fedc_status st = sync_fd(s->fd, s->path);
    if (!st) st = write_state(s, next_round);
    if (!st) st = sync_fd(s->fd, s->path);
    return st;
}

fedc_status fedc__client_store_checkpoint(fedc__client_store *s, uint32_t next_round) {
    if (!s) return fedc_error(FEDC_EINVAL, "client store checkpoint: the store is NULL");
    if (next_round < s->protected_round)
        return fedc_error(FEDC_EINVAL, "%s: a checkpoint for round %u, before the one already protected (%u)", s->path,
                          next_round, s->protected_round);
    return protect(s, next_round);
}

/* Calls fn on each chunk of index entries in turn (fn may change them; a changed
 * chunk, *dirty set, is written back). */
typedef void (*scan_fn)(unsigned char *entries, uint64_t count, void *ctx, bool *dirty);

static fedc_status scan_index(const fedc__client_store *s, scan_fn fn, void *ctx) {
    unsigned char buf[SCAN * ENTRY];
    uint64_t total = (uint64_t)s->num_clients * 2;
    for (uint64_t at = 0; at < total; at += SCAN) {
        uint64_t count = total - at < SCAN ? total - at : SCAN, off = s->index_off + at * ENTRY;
        fedc_status st = read_at(s->fd, s->path, buf, count * ENTRY, off, "the index");
        bool dirty = false;
        if (!st) fn(buf, count, ctx, &dirty);
        if (!st && dirty) st = write_at(s->fd, s->path, buf, count * ENTRY, off, "the index");
        if (st) return st;
    }
    return FEDC_OK;
}

/* Clears the entries of rounds >= *(uint32_t *)ctx. */
static void forget_from(unsigned char *e, uint64_t count, void *ctx, bool *dirty) {
    uint32_t from = *(const uint32_t *)ctx;
    for (uint64_t k = 0; k < count; k++) {
        uint32_t r1 = get_u32(e + k * ENTRY);
        if (r1 != 0 && r1 - 1 >= from) memset(e + k * ENTRY, 0, ENTRY), *dirty = true;
    }
}

fedc_status fedc__client_store_resume(fedc__client_store *s, uint32_t next_round) {
    if (!s) return fedc_error(FEDC_EINVAL, "client store resume: the store is NULL");
    if (next_round < s->protected_round && next_round != 0) /* 0 needs no version: always safe */
        return fedc_error(FEDC_EINVAL, "%s: a resume from round %u, but the store protects the versions for round %u: "
                          "those of round %u may be overwritten already", s->path, next_round, s->protected_round,
                          next_round);
    fedc_status st = scan_index(s, forget_from, &next_round);
    return st ? st : protect(s, next_round);
}

/* Counts clients (entry pairs; a chunk holds whole pairs) with a used slot. */
static void count_used(unsigned char *e, uint64_t count, void *ctx, bool *dirty) {
    (void)dirty;
    for (uint64_t k = 0; k + 1 < count; k += 2)
        if (get_u32(e + k * ENTRY) != 0 || get_u32(e + (k + 1) * ENTRY) != 0) ++*(int64_t *)ctx;
}

int64_t fedc__client_store_count(const fedc__client_store *s) {
    if (!s) return -1;
    int64_t n = 0;
    return scan_index(s, count_used, &n) ? -1 : n;
}

uint32_t fedc__client_store_protected_round(const fedc__client_store *s) { return s ? s->protected_round : 0; }
