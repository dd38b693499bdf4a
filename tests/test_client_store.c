/* The per-client state store (src/fl/client_store.c, docs/client_state.md):
 * records round-trip bit for bit and across reopening; a resume from a checkpoint
 * sees exactly the versions of the rounds before it and rerunning from there gives
 * the bits of an uninterrupted run; the protected version survives any number of
 * writes; mismatched, damaged, truncated, random and hostile files, clients out of
 * range, a full file system (RLIMIT_FSIZE), an unwritable directory and a second
 * process each get an error naming the file and what is wrong. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/internal.h"
#include "fl/client_store.h"
#include "harness.h"

enum { NF = 37 }; /* floats a record: 148 bytes, not a multiple of anything */
typedef struct record {
    float v[NF];
} record;
static const char *LAYOUT = "test: w f32[37]";

/* A record whose every float names its client, round and position. */
static record make(int64_t client, uint32_t round) {
    record r;
    for (int k = 0; k < NF; k++) r.v[k] = (float)client * 1000.0f + (float)round * 10.0f + (float)k * 0.5f;
    return r;
}

static bool same(const record *a, const record *b) { return memcmp(a, b, sizeof *a) == 0; }

static fedc__client_store *open_store(const char *path, int64_t clients) {
    fedc__client_store *s = NULL;
    fedc_status st = fedc__client_store_open(&s, path, clients, sizeof(record), LAYOUT);
    CHECK_MSG(st == FEDC_OK, "open %s: %s", path, fedc_errmsg());
    return s;
}

static fedc_status write1(fedc__client_store *s, uint32_t round, int64_t client, const record *r) {
    const void *src = r;
    return fedc__client_store_write(s, round, 1, &client, &src);
}

/* Reads one client at `round`: its record in *out; *found as the store says. */
static fedc_status read1(fedc__client_store *s, uint32_t round, int64_t client, record *out, bool *found) {
    void *dst = out;
    return fedc__client_store_read(s, round, 1, &client, &dst, found);
}

/* The client's record at `round` is the one made at `want` (or absent: want < 0). */
static void expect(fedc__client_store *s, uint32_t round, int64_t client, int64_t want) {
    record got, sentinel;
    memset(&got, 0x5a, sizeof got);
    sentinel = got;
    bool found = !(want >= 0);
    fedc_status st = read1(s, round, client, &got, &found);
    CHECK_MSG(st == FEDC_OK, "read client %lld at round %u: %s", (long long)client, round, fedc_errmsg());
    if (want < 0) {
        CHECK_MSG(!found, "client %lld at round %u: found, expected none", (long long)client, round);
        CHECK_MSG(same(&got, &sentinel), "client %lld at round %u: not found, yet dst changed", (long long)client, round);
        return;
    }
    record w = make(client, (uint32_t)want);
    CHECK_MSG(found && same(&got, &w), "client %lld at round %u: expected round %lld's record (found %d, v0 %g)",
              (long long)client, round, (long long)want, found, (double)got.v[0]);
}

/* The documented layout (docs/client_state.md): where a client's slot j lies. */
static long slot_offset(int64_t clients, int64_t client, int j) {
    long header = (64 + (long)strlen(LAYOUT) + 4095) / 4096 * 4096;
    long index = header + 4096, data = (index + clients * 16 + 4095) / 4096 * 4096;
    return data + (client * 2 + j) * (long)sizeof(record);
}
static long index_offset(void) { return (64 + (long)strlen(LAYOUT) + 4095) / 4096 * 4096 + 4096; }

static void poke(const char *path, long offset, unsigned char xor_mask) {
    int fd = open(path, O_RDWR);
    unsigned char b = 0;
    CHECK(fd >= 0 && pread(fd, &b, 1, offset) == 1);
    b ^= xor_mask;
    CHECK(pwrite(fd, &b, 1, offset) == 1);
    close(fd);
}

static long file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* ------------------------------------------------------------ round trips -- */

static void test_round_trip(void) {
    const char *path = fedc_test_tmp("trip.store");
    fedc__client_store *s = open_store(path, 10);
    if (!s) return;
    CHECK_EQ_INT(fedc__client_store_count(s), 0);
    CHECK_EQ_INT(fedc__client_store_protected_round(s), 0);
    int64_t clients[3] = {1, 5, 9};
    record r[3] = {make(1, 0), make(5, 0), make(9, 0)};
    const void *src[3] = {&r[0], &r[1], &r[2]};
    CHECK_OK(fedc__client_store_write(s, 0, 3, clients, src));
    CHECK_EQ_INT(fedc__client_store_count(s), 3);
    expect(s, 1, 1, 0);
    expect(s, 1, 5, 0);
    expect(s, 1, 9, 0);
    expect(s, 0, 5, -1); /* written at round 0: not before it */
    expect(s, 1, 2, -1); /* never written */
    expect(s, 100, 0, -1);
    /* several clients in one read, one of them absent */
    int64_t want[3] = {9, 0, 1};
    record got[3];
    void *dst[3] = {&got[0], &got[1], &got[2]};
    bool found[3];
    CHECK_OK(fedc__client_store_read(s, 7, 3, want, dst, found));
    CHECK(found[0] && same(&got[0], &r[2]) && !found[1] && found[2] && same(&got[2], &r[0]));
    record r5 = make(5, 1);
    CHECK_OK(write1(s, 1, 5, &r5));
    fedc__client_store_close(s);

    s = open_store(path, 10); /* as a later process sees it */
    if (!s) return;
    record old;
    bool had;
    CHECK_ERR(read1(s, 1, 5, &old, &had), FEDC_EINVAL, "client 5 at round 1, which has a version of round 1 already");
    expect(s, 2, 5, 1);
    expect(s, 2, 9, 0);
    CHECK_EQ_INT(fedc__client_store_count(s), 3);
    /* apparent size: header, state and index blocks, then 2 slots per client */
    CHECK_EQ_INT(file_size(path), slot_offset(10, 10, 0));
    CHECK_OK(fedc__client_store_sync(s));
    fedc__client_store_close(s);
    fedc__client_store_close(NULL);
}

/* A store for a large population takes disk space only for the slots written. */
static void test_sparse(void) {
    const char *path = fedc_test_tmp("sparse.store");
    fedc__client_store *s = NULL;
    CHECK_OK(fedc__client_store_open(&s, path, 100000, 4096, "big"));
    if (!s) return;
    static unsigned char rec[4096];
    for (int k = 0; k < 4096; k++) rec[k] = (unsigned char)k;
    for (int64_t c = 0; c < 100000; c += 10000) {
        const void *src = rec;
        CHECK_OK(fedc__client_store_write(s, 0, 1, &c, &src));
    }
    struct stat sb;
    CHECK(stat(path, &sb) == 0);
    CHECK_MSG((double)sb.st_size > 800e6, "apparent size %lld", (long long)sb.st_size);
    CHECK_MSG((long long)sb.st_blocks * 512 < 8 << 20, "%lld bytes on disk for 10 records", (long long)sb.st_blocks * 512);
    CHECK_EQ_INT(fedc__client_store_count(s), 10);
    fedc__client_store_close(s);
}

/* ------------------------------------------------- checkpoints and resume -- */

/* The cohort of round r among 8 clients: those with (c + r) % 3 != 0. */
static int cohort(uint32_t r, int64_t *out) {
    int n = 0;
    for (int64_t c = 0; c < 8; c++)
        if ((c + r) % 3 != 0) out[n++] = c;
    return n;
}

/* One round of a stateful algorithm: each cohort client's state becomes
 * 0.5 * old + (c + r + k) (zero if it had none), read then written. */
static void run_round(fedc__client_store *s, uint32_t r) {
    int64_t clients[8];
    record st[8];
    void *dst[8] = {0};
    const void *src[8] = {0};
    bool found[8];
    int n = cohort(r, clients);
    for (int i = 0; i < n; i++) dst[i] = &st[i], src[i] = &st[i];
    CHECK_OK(fedc__client_store_read(s, r, n, clients, dst, found));
    for (int i = 0; i < n; i++)
        for (int k = 0; k < NF; k++)
            st[i].v[k] = (found[i] ? 0.5f * st[i].v[k] : 0.0f) + (float)(clients[i] + r + (uint32_t)k);
    CHECK_OK(fedc__client_store_write(s, r, n, clients, src));
}

/* Every client's record at `round` in both stores is the same, bit for bit. */
static void expect_same_stores(fedc__client_store *a, fedc__client_store *b, uint32_t round) {
    for (int64_t c = 0; c < 8; c++) {
        record ra, rb;
        bool fa = false, fb = true;
        CHECK_OK(read1(a, round, c, &ra, &fa));
        CHECK_OK(read1(b, round, c, &rb, &fb));
        CHECK_MSG(fa == fb && (!fa || same(&ra, &rb)), "client %lld differs at round %u", (long long)c, round);
    }
}

/* The killed run, in a child process: rounds 1..2, the checkpoint for round 3,
 * rounds 3 and 4, half of round 5 (some clients written twice), then SIGKILL: no
 * close, no sync. It exits instead if one of its checks failed. */
static void killed_run(const char *path) {
    fedc__client_store *s = open_store(path, 8);
    if (!s) _exit(1);
    for (uint32_t r = 1; r <= 2; r++) run_round(s, r);
    CHECK_OK(fedc__client_store_sync(s)); /* ... the training checkpoint renamed into place ... */
    CHECK_OK(fedc__client_store_checkpoint(s, 3));
    CHECK_EQ_INT(fedc__client_store_protected_round(s), 3);
    run_round(s, 3);
    run_round(s, 4);
    int64_t part[8];
    int n5 = cohort(5, part);
    for (int i = 0; i < n5 / 2; i++) {
        record junk = make(part[i], 5);
        CHECK_OK(write1(s, 5, part[i], &junk));
        CHECK_OK(write1(s, 5, part[i], &junk));
    }
    if (fedc_test_failures()) _exit(1);
    raise(SIGKILL);
}

/* Rounds 1..6, a checkpoint after round 2 (next_round 3), killed in round 5,
 * resumed from 3: the reads of round 3 see round 2's versions, and rerunning 3..6
 * ends with the bits of a run never killed. */
static void test_resume(void) {
    const char *ref_path = fedc_test_tmp("ref.store"), *path = fedc_test_tmp("killed.store");
    fedc__client_store *ref = open_store(ref_path, 8), *s = NULL;
    if (!ref) return;
    record at3[8]; /* each client's state at the start of round 3, in the run never killed */
    bool had3[8];
    for (uint32_t r = 1; r <= 2; r++) run_round(ref, r);
    for (int64_t c = 0; c < 8; c++) CHECK_OK(read1(ref, 3, c, &at3[c], &had3[c]));
    for (uint32_t r = 3; r <= 6; r++) run_round(ref, r);

    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) killed_run(path);
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the killed run failed before its kill (status %d)",
              status);

    s = open_store(path, 8);
    if (!s) goto out;
    CHECK_EQ_INT(fedc__client_store_protected_round(s), 3);
    CHECK_OK(fedc__client_store_resume(s, 3));
    for (int64_t c = 0; c < 8; c++) {
        record got;
        bool found = !had3[c];
        CHECK_OK(read1(s, 3, c, &got, &found));
        CHECK_MSG(found == had3[c] && (!found || same(&got, &at3[c])), "client %lld at round 3 after resume", (long long)c);
        /* nothing of rounds 3..5 is left: a read at round 100 sees round <= 2 too */
        record late;
        bool lf = !had3[c];
        CHECK_OK(read1(s, 100, c, &late, &lf));
        CHECK(lf == had3[c] && (!lf || same(&late, &at3[c])));
    }
    CHECK_EQ_INT(had3[0] + had3[1] + had3[2] + had3[3] + had3[4] + had3[5] + had3[6] + had3[7], 8);
    for (uint32_t r = 3; r <= 6; r++) run_round(s, r);
    expect_same_stores(ref, s, 7);
out:
    fedc__client_store_close(ref);
    fedc__client_store_close(s);
}

/* A client's protected version outlives any number of writes until the next checkpoint. */
static void test_protected_survives(void) {
    const char *path = fedc_test_tmp("protect.store");
    fedc__client_store *s = open_store(path, 4);
    if (!s) return;
    record r;
    for (uint32_t round = 0; round <= 2; round++) {
        r = make(0, round);
        CHECK_OK(write1(s, round, 0, &r));
    }
    r = make(1, 0);
    CHECK_OK(write1(s, 0, 1, &r));
    CHECK_OK(fedc__client_store_checkpoint(s, 3));
    for (uint32_t round = 3; round <= 9; round++) { /* client 0 every round, client 1 from round 5 */
        r = make(0, round);
        CHECK_OK(write1(s, round, 0, &r));
        if (round >= 5) {
            r = make(1, round);
            CHECK_OK(write1(s, round, 1, &r));
        }
        expect(s, round + 1, 0, round); /* the newest is readable meanwhile */
    }
    expect(s, 3, 0, 2);
    expect(s, 3, 1, 0);
    record got;
    bool found;
    CHECK_ERR(read1(s, 6, 1, &got, &found), FEDC_EINVAL,
              "a read of client 1 at round 6, which has a version of round 9 already");
    /* round 9 done: checkpoint 10, then two more rounds; a resume goes back to 9's */
    CHECK_OK(fedc__client_store_checkpoint(s, 10));
    for (uint32_t round = 10; round <= 11; round++) {
        r = make(0, round);
        CHECK_OK(write1(s, round, 0, &r));
    }
    CHECK_OK(fedc__client_store_resume(s, 10));
    expect(s, 10, 0, 9);
    expect(s, 10, 1, 9);
    expect(s, 100, 0, 9);
    fedc__client_store_close(s);
}

/* What the runner may get wrong is refused, naming the rounds. */
static void test_round_rules(void) {
    const char *path = fedc_test_tmp("rules.store");
    fedc__client_store *s = open_store(path, 4);
    if (!s) return;
    record r = make(0, 1);
    CHECK_OK(write1(s, 1, 0, &r)); /* a round written twice replaces its version, keeping the one before */
    r = make(0, 2);
    CHECK_OK(write1(s, 2, 0, &r));
    CHECK_OK(write1(s, 2, 0, &r));
    CHECK_OK(fedc__client_store_resume(s, 2));
    expect(s, 2, 0, 1);
    r = make(2, 5);
    CHECK_OK(write1(s, 5, 2, &r));
    r = make(2, 4);
    CHECK_ERR(write1(s, 4, 2, &r), FEDC_EINVAL, "client 2 has a version of round 5, later than the round 4");
    expect(s, 6, 2, 5);
    CHECK_OK(fedc__client_store_checkpoint(s, 6));
    CHECK_ERR(write1(s, 5, 3, &r), FEDC_EINVAL, "before the protected round 6");
    CHECK_ERR(fedc__client_store_checkpoint(s, 4), FEDC_EINVAL, "before the one already protected (6)");
    CHECK_ERR(fedc__client_store_resume(s, 5), FEDC_EINVAL, "protects the versions for round 6");
    CHECK_ERR(write1(s, UINT32_MAX, 3, &r), FEDC_ERANGE, "past the last");
    CHECK_OK(fedc__client_store_resume(s, 6));
    CHECK_EQ_INT(fedc__client_store_count(s), 2);
    fedc__client_store_close(s);
    s = open_store(path, 4);
    if (!s) return;
    CHECK_EQ_INT(fedc__client_store_protected_round(s), 6);
    /* a run that starts afresh forgets everything, whatever was protected */
    CHECK_OK(fedc__client_store_resume(s, 0));
    CHECK_EQ_INT(fedc__client_store_count(s), 0);
    CHECK_EQ_INT(fedc__client_store_protected_round(s), 0);
    expect(s, 100, 2, -1);
    fedc__client_store_close(s);
    /* killed between the training checkpoint's rename and checkpoint(): resume(3)
     * of a store still protecting round 0 finds rounds 0..2 intact */
    path = fedc_test_tmp("rename.store");
    s = open_store(path, 4);
    if (!s) return;
    for (uint32_t round = 0; round <= 2; round++) {
        r = make(1, round);
        CHECK_OK(write1(s, round, 1, &r));
    }
    CHECK_OK(fedc__client_store_sync(s));
    fedc__client_store_close(s);
    s = open_store(path, 4);
    if (!s) return;
    CHECK_OK(fedc__client_store_resume(s, 3));
    expect(s, 3, 1, 2);
    CHECK_OK(fedc__client_store_resume(s, 3));
    expect(s, 3, 1, 2);
    fedc__client_store_close(s);
}

/* ------------------------------------------------------------- bad input -- */

static void test_arguments(void) {
    const char *path = fedc_test_tmp("args.store");
    fedc__client_store *s = NULL;
    CHECK_ERR(fedc__client_store_open(&s, path, 0, 16, "x"), FEDC_EINVAL, "0 clients is out of range");
    CHECK_ERR(fedc__client_store_open(&s, path, 10, 0, "x"), FEDC_EINVAL, "a record of 0 bytes");
    CHECK_ERR(fedc__client_store_open(&s, path, FEDC__STORE_MAX_CLIENTS, (size_t)FEDC__STORE_MAX_RECORD, "x"), FEDC_EINVAL,
              "do not fit a file");
    CHECK_ERR(fedc__client_store_open(&s, path, 10, 16, NULL), FEDC_EINVAL, "missing");
    CHECK(s == NULL && file_size(path) < 0);
    s = open_store(path, 10);
    if (!s) return;
    record r = make(0, 0), got;
    bool found;
    CHECK_ERR(write1(s, 0, 10, &r), FEDC_ERANGE, "client 10 is out of range: the store has 10 clients");
    CHECK_ERR(read1(s, 1, -1, &got, &found), FEDC_ERANGE, "client -1 is out of range");
    int64_t two[2] = {3, 99};
    const void *src[2] = {&r, &r};
    CHECK_ERR(fedc__client_store_write(s, 0, 2, two, src), FEDC_ERANGE, "client 99");
    CHECK_EQ_INT(fedc__client_store_count(s), 0); /* checked before anything is written */
    CHECK_ERR(fedc__client_store_read(s, 1, -1, two, NULL, NULL), FEDC_EINVAL, "-1 clients");
    CHECK_OK(fedc__client_store_read(s, 1, 0, NULL, NULL, NULL));
    fedc__client_store_close(s);
}

static void test_mismatch(void) {
    const char *path = fedc_test_tmp("mismatch.store");
    fedc__client_store *s = open_store(path, 10), *t = NULL;
    if (!s) return;
    fedc__client_store_close(s);
    CHECK_ERR(fedc__client_store_open(&t, path, 11, sizeof(record), LAYOUT), FEDC_EINVAL,
              "holds 10 clients of 148-byte records, not 11 of 148 bytes");
    CHECK_ERR(fedc__client_store_open(&t, path, 10, 256, LAYOUT), FEDC_EINVAL, "not 10 of 256 bytes");
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), "test: w f32[36]\n"), FEDC_EINVAL,
              "layout \"test: w f32[37]\", not the \"test: w f32[36]?\" asked for");
    CHECK(t == NULL);
    CHECK_ERR(fedc__client_store_open(&t, "/dev/full", 10, sizeof(record), LAYOUT), FEDC_EIO, "not a regular file");
}

/* A flipped byte of a record, of the header, of the state block or of an index
 * entry's round is caught by a checksum. */
static void test_corruption(void) {
    const char *path = fedc_test_tmp("corrupt.store");
    fedc__client_store *s = open_store(path, 10);
    if (!s) return;
    record r = make(3, 4);
    CHECK_OK(write1(s, 4, 3, &r));
    r = make(6, 4);
    CHECK_OK(write1(s, 4, 6, &r));
    fedc__client_store_close(s);
    poke(path, slot_offset(10, 3, 0) + 77, 0x10);
    poke(path, index_offset() + 6 * 16, 0x01); /* client 6's slot 0: round 4 + 1 becomes 4 */
    s = open_store(path, 10);
    if (!s) return;
    record got;
    bool found;
    CHECK_ERR(read1(s, 5, 3, &got, &found), FEDC_EIO, "record of client 3 written at round 4 fails its checksum");
    CHECK(strstr(fedc_errmsg(), path) != NULL);
    CHECK_ERR(read1(s, 5, 6, &got, &found), FEDC_EIO, "client 6 written at round 3 fails its checksum");
    expect(s, 5, 4, -1);
    fedc__client_store_close(s);
    fedc__client_store *t = NULL;
    poke(path, 16, 0x01); /* the client count, 11: still in range */
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EPARSE, "truncated");
    poke(path, 20, 0x01); /* 2^32 + 11 */
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EPARSE,
              "client count 4294967307 is out of range");
    poke(path, 20, 0x01);
    poke(path, 16, 0x01);
    poke(path, 64 + 3, 0x20); /* the layout text */
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EIO, "header fails its checksum");
    poke(path, 64 + 3, 0x20);
    poke(path, index_offset() - 4096, 0x01);
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EIO, "state block");
    poke(path, 8, 0x03); /* version 2 */
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EUNSUPPORTED, "client store version 2");
    poke(path, 8, 0x03);
    poke(path, 0, 0x01);
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EPARSE, "not a fedc client store");
    CHECK(t == NULL);
}

static void truncate_to(const char *path, long n) { CHECK(truncate(path, n) == 0); }

static void test_truncated(void) {
    const char *path = fedc_test_tmp("short.store");
    fedc__client_store *s = open_store(path, 10), *t = NULL;
    if (!s) return;
    record r = make(9, 0);
    CHECK_OK(write1(s, 0, 9, &r));
    long full = file_size(path);
    truncate_to(path, slot_offset(10, 9, 0) + 10); /* under the open store */
    record got;
    bool found;
    CHECK_ERR(read1(s, 1, 9, &got, &found), FEDC_EIO, "truncated");
    fedc__client_store_close(s);
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EPARSE,
              "but its header (10 clients x 2 slots x 148 bytes) makes");
    truncate_to(path, full + 1);
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EPARSE, "extended");
    truncate_to(path, 40);
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EPARSE, "shorter than a client store");
    truncate_to(path, 0);
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EPARSE, "0 bytes");
    CHECK(t == NULL);
}

/* Opens a store file whatever its bytes and reads every client at a few rounds:
 * an error names the file; a success returns records of the asked size. */
static void open_hostile(const char *path, int64_t clients, size_t bytes, const char *layout) {
    fedc__client_store *s = NULL;
    fedc_status st = fedc__client_store_open(&s, path, clients, bytes, layout);
    CHECK_MSG(st == FEDC_OK || strstr(fedc_errmsg(), path), "message without the file: %s", fedc_errmsg());
    if (st) return;
    record got;
    for (int64_t c = 0; c < clients; c++)
        for (uint32_t round = 0; round < 4; round++) {
            bool found;
            st = read1(s, round * 3, c, &got, &found);
            CHECK_MSG(st == FEDC_OK || strstr(fedc_errmsg(), path), "message without the file: %s", fedc_errmsg());
        }
    fedc__client_store_close(s);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n);
    if (f) fclose(f);
}

static void test_random_and_hostile(void) {
    const char *path = fedc_test_tmp("random.store");
    fedc_test_seed(15);
    static unsigned char junk[20000];
    for (size_t k = 0; k < sizeof junk; k++) junk[k] = (unsigned char)fedc_test_uniform(0, 256);
    write_file(path, junk, sizeof junk);
    fedc__client_store *t = NULL;
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EPARSE, "not a fedc client store");
    memcpy(junk, "FEDCSTOR\1\0\0\0", 12); /* the magic and version, then random */
    write_file(path, junk, sizeof junk);
    CHECK_ERR(fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT), FEDC_EPARSE, "header's");
    CHECK(t == NULL);

    /* 300 seeded mutations of a real store: bit flips anywhere, truncations */
    const char *good = fedc_test_tmp("good.store");
    fedc__client_store *s = open_store(good, 4);
    if (!s) return;
    for (uint32_t round = 0; round < 3; round++)
        for (int64_t c = 0; c < 4; c++) {
            record r = make(c, round);
            CHECK_OK(write1(s, round, c, &r));
        }
    fedc__client_store_close(s);
    long n = file_size(good);
    unsigned char *bytes = malloc((size_t)n);
    FILE *f = fopen(good, "rb");
    CHECK(bytes && f && fread(bytes, 1, (size_t)n, f) == (size_t)n);
    if (f) fclose(f);
    if (!bytes) return;
    long hot[] = {0, 8, 12, 16, 24, 32, 40, 60, 64, index_offset() - 4096, index_offset(), slot_offset(4, 0, 0)};
    for (int m = 0; m < 300; m++) {
        long at = m % 3 == 0 ? hot[m / 3 % FEDC_COUNT_OF(hot)] + (long)fedc_test_uniform(0, 8)
                             : (long)fedc_test_uniform(0, (double)n);
        unsigned char keep = bytes[at];
        bytes[at] ^= (unsigned char)(1u << (m % 8));
        size_t len = m % 10 == 9 ? (size_t)fedc_test_uniform(0, (double)n) : (size_t)n;
        write_file(path, bytes, len);
        open_hostile(path, 4, sizeof(record), LAYOUT);
        bytes[at] = keep;
    }
    free(bytes);
}

/* A store written by another writer of the documented layout (fuzz/make-corpus,
 * in Python): its records read back as that writer laid them out. */
static void test_independent_writer(void) {
    const char *seed = fedc_test_path("fuzz/corpus/client_store/written"), *path = fedc_test_tmp("python.store");
    FILE *f = fopen(seed, "rb");
    if (!f) {
        fedc_test_skip("%s is absent", seed);
        return;
    }
    static unsigned char bytes[1 << 16];
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    write_file(path, bytes, n);
    fedc__client_store *s = NULL;
    CHECK_OK(fedc__client_store_open(&s, path, 4, 16, "fuzz"));
    if (!s) return;
    CHECK_EQ_INT(fedc__client_store_protected_round(s), 2);
    CHECK_EQ_INT(fedc__client_store_count(s), 4);
    for (int64_t c = 0; c < 4; c++)
        for (uint32_t round = 2; round <= 3; round++) { /* rounds 0..2 written (client 3: 1..2) */
            unsigned char got[16];
            void *dst = got;
            bool found = false;
            CHECK_OK(fedc__client_store_read(s, round, 1, &c, &dst, &found));
            bool ok = found;
            for (int k = 0; k < 16; k++) ok = ok && got[k] == (unsigned char)((c * 16 + (round - 1) + k) % 256);
            CHECK_MSG(ok, "client %lld at round %u: not the Python writer's record of round %u", (long long)c, round,
                      round - 1);
        }
    fedc__client_store_close(s);
}

/* --------------------------------------------------- the file system says no -- */

/* RLIMIT_FSIZE as a full disk: a store that cannot be sized is not left behind; a
 * write that cannot complete is an error and the versions before it still read. */
static void test_file_too_large(void) {
    const char *path = fedc_test_tmp("full.store"), *big = fedc_test_tmp("big.store");
    fedc__client_store *s = open_store(path, 10), *t = NULL;
    if (!s) return;
    for (uint32_t round = 0; round <= 2; round++) { /* client 9: slot 0 round 2, slot 1 round 1 */
        record r = make(9, round);
        CHECK_OK(write1(s, round, 9, &r));
    }
    struct rlimit old;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = (rlim_t)slot_offset(10, 9, 1) + 20, .rlim_max = old.rlim_max};
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    CHECK_ERR(fedc__client_store_open(&t, big, 100000, 4096, "big"), FEDC_EIO, "File too large");
    CHECK(t == NULL && file_size(big) < 0);
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s.new", big);
    CHECK(file_size(tmp) < 0);
    record r = make(9, 3); /* to slot 1, the older, which straddles the limit: a short write, then EFBIG */
    CHECK_ERR(write1(s, 3, 9, &r), FEDC_EIO, "cannot write a record at byte");
    CHECK(strstr(fedc_errmsg(), path) && strstr(fedc_errmsg(), "File too large"));
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, was);
    /* the cut write left its slot empty (the layout's entry: 8 zero bytes), not
     * round 1's entry over half of round 3's bytes */
    unsigned char e[8] = {1};
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && pread(fd, e, 8, index_offset() + 9 * 16 + 8) == 8);
    close(fd);
    CHECK(memcmp(e, (unsigned char[8]){0}, 8) == 0);
    expect(s, 5, 9, 2);
    CHECK_OK(write1(s, 3, 9, &r));
    expect(s, 5, 9, 3);
    fedc__client_store_close(s);
}

static void test_unwritable_directory(void) {
    fedc__client_store *t = NULL;
    CHECK_ERR(fedc__client_store_open(&t, "/proc/fedc-client-store-test", 10, 16, "x"), FEDC_EIO, "cannot create the store");
    CHECK_ERR(fedc__client_store_open(&t, "/nonexistent-dir/x.store", 10, 16, "x"), FEDC_EIO,
              "/nonexistent-dir/x.store: cannot create the store");
    if (geteuid() != 0) { /* root writes anywhere: only /proc above stops it */
        const char *dir = fedc_test_tmp("ro");
        CHECK(mkdir(dir, 0555) == 0);
        char path[512];
        snprintf(path, sizeof path, "%s/x.store", dir);
        CHECK_ERR(fedc__client_store_open(&t, path, 10, 16, "x"), FEDC_EIO, "Permission denied");
    }
    CHECK(t == NULL);
}

/* A second process opening a store in use is refused. */
static void test_locked(void) {
    const char *path = fedc_test_tmp("locked.store");
    fedc__client_store *s = open_store(path, 10);
    if (!s) return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        fedc__client_store *t = NULL;
        fedc_status st = fedc__client_store_open(&t, path, 10, sizeof(record), LAYOUT);
        _exit(st == FEDC_EIO && strstr(fedc_errmsg(), "in use by another process (pid") ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the second process was not refused");
    fedc__client_store_close(s);
}

/* Out of memory at each allocation of open, of a new store and then of an
 * existing one: an error, no leak (ASan checks), no store file half-made. */
static void test_alloc_failure(void) {
    const char *path = fedc_test_tmp("alloc.store");
    for (int existing = 0; existing < 2; existing++) {
        if (existing) fedc__client_store_close(open_store(path, 10));
        uint64_t k = 1;
        for (fedc_status st = FEDC_ENOMEM; st == FEDC_ENOMEM; k++) {
            fedc__client_store *s = NULL;
            fedc__alloc_fail_after(k);
            st = fedc__client_store_open(&s, path, 10, sizeof(record), LAYOUT);
            fedc__alloc_fail_after(0);
            CHECK_MSG(st == FEDC_OK || st == FEDC_ENOMEM, "allocation %llu: %s", (unsigned long long)k, fedc_errmsg());
            CHECK((st == FEDC_OK) == (s != NULL));
            CHECK(st == FEDC_OK || existing || file_size(path) < 0);
            fedc__client_store_close(s);
            if (!existing) unlink(path);
        }
        CHECK_MSG(k > 2, "open made no allocation that could fail (k %llu)", (unsigned long long)k);
    }
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("client-store")) {
        fprintf(stderr, "%s\n", fedc_errmsg());
        return 1;
    }
    static const fedc_test tests[] = {
        {"round_trip", test_round_trip},
        {"sparse", test_sparse},
        {"resume", test_resume},
        {"protected_survives", test_protected_survives},
        {"round_rules", test_round_rules},
        {"arguments", test_arguments},
        {"mismatch", test_mismatch},
        {"corruption", test_corruption},
        {"truncated", test_truncated},
        {"random_and_hostile", test_random_and_hostile},
        {"independent_writer", test_independent_writer},
        {"file_too_large", test_file_too_large},
        {"unwritable_directory", test_unwritable_directory},
        {"locked", test_locked},
        {"alloc_failure", test_alloc_failure},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
