/* A round's reports streamed into its aggregation in slot order (collect.h). */
#include "deploy/collect.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

struct fedc__collect {
    fedc_deployment_run *run;
    int slots, commit, window, exchange;
    int nin;
    size_t off[4096], size[4096], bytes; /* each value's offset and size in a report, and a report's size */
    size_t align[4096];      /* each value's alignment: its element's size */
    uint8_t *state;          /* per slot, a fedc__slot_state */
    int *buf;                /* per slot: its buffer in pool while HELD, else -1 */
    char **pool;             /* window buffers of a report, made on first use */
    int *free_bufs, nfree, nmade;
    char *scratch;           /* a report being added, aligned */
    int fd;                  /* the spill file */
    int frontier;            /* every slot before it is settled */
    int base;                /* slot i is the aggregation's slot base + i (an aggregator's group: groups.h) */
    fedc__collect_stats stats;
    int held;
    fedc__collect_hook hook; /* told of each report added */
    void *hook_ctx;
};

fedc_status fedc__collect_create(fedc__collect **out, fedc_deployment_run *run, int slots, int commit, int window,
                                 const char *spill_path) {
    *out = NULL;
    fedc__collect *c = fedc_calloc(1, sizeof *c);
    if (!c) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    c->run = run, c->slots = slots, c->commit = commit, c->window = window < 1 ? 1 : window;
    c->state = fedc_calloc((size_t)slots, 1);
    c->buf = fedc_calloc((size_t)slots, sizeof *c->buf);
    c->pool = fedc_calloc((size_t)c->window, sizeof *c->pool);
    c->free_bufs = fedc_calloc((size_t)c->window, sizeof *c->free_bufs);
    c->fd = open(spill_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (c->fd >= 0) unlink(spill_path);
    fedc_status st = FEDC_OK;
    if (!c->state || !c->buf || !c->pool || !c->free_bufs) st = fedc_error(FEDC_ENOMEM, "server: out of memory");
    else if (c->fd < 0) st = fedc_error(FEDC_EIO, "%s: cannot make the file for reports that arrive early", spill_path);
    if (st) fedc__collect_destroy(c);
    else *out = c;
    return st;
}

static void free_buffers(fedc__collect *c) {
    for (int i = 0; i < c->nmade; i++) fedc_free(c->pool[i]);
    c->nmade = c->nfree = 0;
    fedc_free(c->scratch);
    c->scratch = NULL;
}

void fedc__collect_destroy(fedc__collect *c) {
    if (!c) return;
    free_buffers(c);
    if (c->fd >= 0) close(c->fd);
    fedc_free(c->state), fedc_free(c->buf), fedc_free(c->pool), fedc_free(c->free_bufs), fedc_free(c);
}

fedc_status fedc__collect_begin(fedc__collect *c, int exchange, int nin, const size_t *bytes, const size_t *align) {
    if (nin > 4096) return fedc_error(FEDC_EUNSUPPORTED, "server: an aggregation of more than 4096 values");
    size_t total = 0;
    for (int i = 0; i < nin; i++) {
        c->off[i] = total, c->size[i] = bytes[i], c->align[i] = align[i] ? align[i] : 1;
        total += (bytes[i] + 15) & ~(size_t)15; /* aligned */
    }
    if (total != c->bytes) free_buffers(c); /* another exchange's size */
    c->bytes = total, c->nin = nin, c->exchange = exchange;
    if (!c->scratch && !(c->scratch = fedc_malloc(total ? total : 1))) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    for (int i = 0; i < c->nmade; i++) c->free_bufs[i] = i;
    c->nfree = c->nmade;
    memset(c->state, FEDC__SLOT_OPEN, (size_t)c->slots);
    for (int i = 0; i < c->slots; i++) c->buf[i] = -1;
    c->frontier = c->held = 0;
    memset(&c->stats, 0, sizeof c->stats);
    if (ftruncate(c->fd, 0) != 0) return fedc_error(FEDC_EIO, "server: cannot empty the spill file");
    return fedc__deployment_agg_begin(c->run, c->exchange);
}

fedc__slot_state fedc__collect_state(const fedc__collect *c, int slot) { return (fedc__slot_state)c->state[slot]; }

bool fedc__collect_closed(const fedc__collect *c) { return c->frontier == c->slots; }

int fedc__collect_frontier(const fedc__collect *c) { return c->frontier; }

fedc__collect_stats fedc__collect_stats_of(const fedc__collect *c) { return c->stats; }

void fedc__collect_on_add(fedc__collect *c, fedc__collect_hook hook, void *ctx) { c->hook = hook, c->hook_ctx = ctx; }

/* Adds the values `in` (or leaves the slot out: NULL) at the frontier. */
static fedc_status add_values(fedc__collect *c, const void *const *in) {
    double t = fedc_seconds();
    fedc_status st = in && c->hook ? c->hook(c->hook_ctx, c->frontier, in) : FEDC_OK;
    if (!st) st = fedc__deployment_agg_add(c->run, c->exchange, c->base + c->frontier, in);
    c->stats.seconds += fedc_seconds() - t;
    c->frontier++;
    return st;
}

/* Adds the report in `report` (or leaves the slot out: NULL) at the frontier. */
static fedc_status add_at_frontier(fedc__collect *c, const char *report) {
    const void *in[4096];
    for (int i = 0; report && i < c->nin; i++) in[i] = report + c->off[i];
    return add_values(c, report ? in : NULL);
}

/* Every value aligned for its dtype: addable where it lies. */
static bool aligned(const fedc__collect *c, const void *const *values) {
    for (int i = 0; i < c->nin; i++)
        if ((uintptr_t)values[i] % c->align[i]) return false;
    return true;
}

static void release(fedc__collect *c, int slot) {
    if (c->buf[slot] < 0) return;
    c->free_bufs[c->nfree++] = c->buf[slot];
    c->buf[slot] = -1;
    c->held--;
}

/* The report of a waiting slot: its buffer, or read back into scratch. */
static fedc_status waiting_report(fedc__collect *c, int slot, const char **report) {
    if (c->state[slot] == FEDC__SLOT_HELD) {
        *report = c->pool[c->buf[slot]];
        return FEDC_OK;
    }
    off_t at = (off_t)slot * (off_t)c->bytes;
    for (size_t done = 0; done < c->bytes;) {
        ssize_t n = pread(c->fd, c->scratch + done, c->bytes - done, at + (off_t)done);
        if (n <= 0) return fedc_error(FEDC_EIO, "server: cannot read slot %d's report back from the spill file", slot);
        done += (size_t)n;
    }
    *report = c->scratch;
    return FEDC_OK;
}

/* Moves the frontier over every settled slot, adding the reports there while
 * fewer than `commit` are in; then the rest are settled as not needed. */
static fedc_status advance(fedc__collect *c) {
    fedc_status st = FEDC_OK;
    while (!st && c->frontier < c->slots) {
        int slot = c->frontier;
        uint8_t s = c->state[slot];
        bool full = c->stats.added == c->commit;
        if (s == FEDC__SLOT_OPEN && !full) break;
        if (s == FEDC__SLOT_HELD || s == FEDC__SLOT_SPILLED) {
            const char *report = NULL;
            if (!full) st = waiting_report(c, slot, &report);
            if (!st) st = add_at_frontier(c, full ? NULL : report);
            release(c, slot);
            c->state[slot] = full ? FEDC__SLOT_UNUSED : FEDC__SLOT_ADDED;
            if (full) c->stats.unused++;
            else c->stats.added++;
        } else {
            if (s == FEDC__SLOT_OPEN) c->state[slot] = FEDC__SLOT_SKIPPED, c->stats.skipped++;
            st = add_at_frontier(c, NULL);
        }
    }
    return st;
}

/* A report's values copied into buffer b, each at its aligned offset. */
static void assemble(const fedc__collect *c, char *b, const void *const *values) {
    for (int i = 0; i < c->nin; i++) memcpy(b + c->off[i], values[i], c->size[i]);
}

/* Keeps slot's report until the frontier reaches it: in memory, or spilled. */
static fedc_status keep(fedc__collect *c, int slot, const void *const *values) {
    if (!c->nfree && c->nmade < c->window) {
        if (!(c->pool[c->nmade] = fedc_malloc(c->bytes ? c->bytes : 1))) return fedc_error(FEDC_ENOMEM, "server: out of memory");
        c->free_bufs[c->nfree++] = c->nmade++;
    }
    if (c->nfree) {
        int b = c->free_bufs[--c->nfree];
        assemble(c, c->pool[b], values);
        c->buf[slot] = b, c->state[slot] = FEDC__SLOT_HELD;
        if (++c->held > c->stats.held_peak) c->stats.held_peak = c->held;
        return FEDC_OK;
    }
    assemble(c, c->scratch, values);
    off_t at = (off_t)slot * (off_t)c->bytes;
    for (size_t done = 0; done < c->bytes;) {
        ssize_t n = pwrite(c->fd, c->scratch + done, c->bytes - done, at + (off_t)done);
        if (n <= 0) return fedc_error(FEDC_EIO, "server: cannot write slot %d's report to the spill file (disk full?)", slot);
        done += (size_t)n;
    }
    c->state[slot] = FEDC__SLOT_SPILLED;
    c->stats.spilled++;
    return FEDC_OK;
}

fedc_status fedc__collect_add(fedc__collect *c, int slot, const void *const *values) {
    if (c->state[slot] != FEDC__SLOT_OPEN) return fedc_error(FEDC_EINTERNAL, "server: slot %d has reported", slot);
    if (slot != c->frontier || c->stats.added == c->commit) {
        fedc_status st = keep(c, slot, values);
        return st ? st : advance(c);
    }
    c->state[slot] = FEDC__SLOT_ADDED;
    c->stats.added++;
    fedc_status st;
    if (aligned(c, values)) { /* a report in turn is added from where it lies (the received message) */
        st = add_values(c, values);
    } else {
        assemble(c, c->scratch, values);
        st = add_at_frontier(c, c->scratch);
    }
    return st ? st : advance(c);
}

fedc_status fedc__collect_drop(fedc__collect *c, int slot) {
    if (c->state[slot] != FEDC__SLOT_OPEN) return FEDC_OK;
    c->state[slot] = FEDC__SLOT_DROPPED;
    c->stats.dropped++;
    return advance(c);
}

fedc_status fedc__collect_end(fedc__collect *c) {
    if (!fedc__collect_closed(c)) return fedc_error(FEDC_EINTERNAL, "server: the aggregation ended with slot %d open", c->frontier);
    return fedc__deployment_agg_end(c->run, c->exchange);
}

void fedc__collect_set_base(fedc__collect *c, int base) { c->base = base; }

fedc_status fedc__collect_settle(fedc__collect *c, int first, int end, const char *reported) {
    if (c->frontier != first || c->stats.added + end - first > c->commit)
        return fedc_error(FEDC_EINTERNAL, "server: a group's slots %d to %d settled at slot %d", first, end - 1, c->frontier);
    for (int i = first; i < end; i++) {
        if (c->state[i] != FEDC__SLOT_OPEN) return fedc_error(FEDC_EINTERNAL, "server: slot %d has reported", i);
        bool added = reported[i - first] == '1';
        c->state[i] = added ? FEDC__SLOT_ADDED : FEDC__SLOT_DROPPED;
        if (added) c->stats.added++;
        else c->stats.dropped++;
    }
    c->frontier = end;
    return advance(c);
}
