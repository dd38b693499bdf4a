/* The wire format (wire.h): frames around safetensors payloads. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/wire.h"
#include "io/safetensors_io.h"

static const char MAGIC[4] = {'F', 'D', 'C', 'W'};

/* Each type's fields, which the decoder requires. */
enum { MAX_FIELDS = 10 };
static const struct {
    const char *name;
    const char *fields[MAX_FIELDS];
} types[FEDC__MSG_TYPES] = {
    [FEDC__MSG_CHECKIN] = {"checkin", {"token", "client", "version", "plan_hash"}},
    [FEDC__MSG_PLAN] = {"plan", {"hash"}},
    [FEDC__MSG_TASK] = {"task", {"round", "exchange", "slot", "hash", "heartbeat_ms"}},
    [FEDC__MSG_WAIT] = {"wait", {"retry_ms", "reason"}},
    [FEDC__MSG_DONE] = {"done", {"rounds"}},
    [FEDC__MSG_REPORT] = {"report", {"token", "client", "round", "exchange", "slot", "hash"}},
    [FEDC__MSG_ACK] = {"ack", {"counted"}},
    [FEDC__MSG_REJECT] = {"reject", {"reason"}},
    [FEDC__MSG_HEARTBEAT] = {"heartbeat", {"token", "client", "round", "exchange", "slot"}},
    [FEDC__MSG_READY] = {"ready", {"token", "client", "round", "exchange", "slot"}},
    [FEDC__MSG_GO] = {"go", {0}},
    [FEDC__MSG_SECAGG] = {"secagg", {"token", "client", "round", "exchange", "slot", "session", "step"}},
    [FEDC__MSG_SECAGG_REPLY] = {"secagg-reply", {"step"}},
    [FEDC__MSG_GROUP_CHECKIN] = {"group-checkin", {"token", "group", "version", "plan_hash"}},
    [FEDC__MSG_GROUP_TASK] = {"group-task", {"round", "exchange", "hash", "heartbeat_ms", "cohort", "first", "clients",
                                             "left_out", "added", "rounds"}},
    [FEDC__MSG_GROUP_BEAT] = {"group-beat", {"token", "group", "round", "exchange"}},
    [FEDC__MSG_GROUP_REPORT] = {"group-report", {"token", "group", "round", "exchange", "hash", "reported", "blocks"}},
};

const char *fedc__msg_name(int type) { return type > 0 && type < FEDC__MSG_TYPES ? types[type].name : "?"; }

/* The frame's header in front of the payload the safetensors encoder writes. */
typedef struct framing {
    fedc__msg_type type;
    const fedc__byte_sink *out;
} framing;

static bool frame_begin(void *ctx, size_t n) {
    framing *w = ctx;
    unsigned char f[FEDC__WIRE_HEADER];
    memcpy(f, MAGIC, 4);
    f[4] = FEDC__WIRE_VERSION & 0xff, f[5] = FEDC__WIRE_VERSION >> 8;
    f[6] = (unsigned char)(w->type & 0xff), f[7] = (unsigned char)(w->type >> 8);
    for (int i = 0; i < 8; i++) f[8 + i] = (unsigned char)((uint64_t)n >> (8 * i));
    return w->out->begin(w->out->ctx, FEDC__WIRE_HEADER + n) && w->out->put(w->out->ctx, f, sizeof f);
}

static bool frame_put(void *ctx, const void *data, size_t n) {
    const framing *w = ctx;
    return w->out->put(w->out->ctx, data, n);
}

fedc_status fedc__wire_encode_into(fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                                   const fedc_tensor_entry *tensors, int ntensors, const fedc__byte_sink *out) {
    framing w = {type, out};
    return fedc__safetensors_encode_into(tensors, ntensors, fields, nfields, &(fedc__byte_sink){frame_begin, frame_put, &w});
}

fedc_status fedc__wire_encode(fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                              const fedc_tensor_entry *tensors, int ntensors, void **out, size_t *size) {
    fedc__memory_sink m = {0};
    fedc__byte_sink sink = fedc__memory_sink_of(&m);
    fedc_status st = fedc__wire_encode_into(type, fields, nfields, tensors, ntensors, &sink);
    if (st) fedc_free(m.data), m.data = NULL, m.size = 0;
    *out = m.data, *size = m.size;
    return st;
}

static fedc_status decode(const void *bytes, size_t size, size_t max, bool copy, fedc__msg *out) {
    const unsigned char *b = bytes;
    out->type = 0, out->body = NULL, out->frame = NULL, out->release = NULL;
    if (size < FEDC__WIRE_HEADER)
        return fedc_error(FEDC_EPARSE, "wire: truncated frame: %zu bytes, a header has %d", size, FEDC__WIRE_HEADER);
    if (memcmp(b, MAGIC, 4)) return fedc_error(FEDC_EPARSE, "wire: not a fedc message (no \"FDCW\" magic)");
    unsigned version = b[4] | (unsigned)b[5] << 8, type = b[6] | (unsigned)b[7] << 8;
    if (version != FEDC__WIRE_VERSION)
        return fedc_error(FEDC_EUNSUPPORTED, "wire: message version %u; this fedc speaks version %d", version,
                          FEDC__WIRE_VERSION);
    if (type < 1 || type >= FEDC__MSG_TYPES) return fedc_error(FEDC_EPARSE, "wire: unknown message type %u", type);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)b[8 + i] << (8 * i);
    if (n > max)
        return fedc_error(FEDC_EPARSE, "wire: %s message declares %llu bytes, above the limit of %zu", types[type].name,
                          (unsigned long long)n, max);
    if (n != size - FEDC__WIRE_HEADER)
        return fedc_error(FEDC_EPARSE, "wire: truncated frame: %s message declares %llu bytes and has %zu",
                          types[type].name, (unsigned long long)n, size - FEDC__WIRE_HEADER);
    char what[64];
    snprintf(what, sizeof what, "wire: %s message", types[type].name);
    fedc_status st = copy ? fedc_safetensors_parse(b + FEDC__WIRE_HEADER, (size_t)n, what, &out->body)
                          : fedc__safetensors_view(b + FEDC__WIRE_HEADER, (size_t)n, what, &out->body);
    for (int i = 0; !st && i < MAX_FIELDS && types[type].fields[i]; i++)
        if (!fedc_safetensors_metadata(out->body, types[type].fields[i]))
            st = fedc_error(FEDC_EPARSE, "%s: no field \"%s\"", what, types[type].fields[i]);
    if (st) {
        fedc_safetensors_destroy(out->body);
        out->body = NULL;
        return st;
    }
    out->type = (fedc__msg_type)type;
    return FEDC_OK;
}

fedc_status fedc__wire_decode(const void *bytes, size_t size, size_t max, fedc__msg *out) {
    return decode(bytes, size, max, true, out);
}

fedc_status fedc__wire_view(const void *bytes, size_t size, size_t max, fedc__msg *out) {
    return decode(bytes, size, max, false, out);
}

void fedc__msg_free(fedc__msg *m) {
    fedc_safetensors_destroy(m->body);
    if (m->release) m->release(m->frame);
    m->body = NULL, m->frame = NULL, m->release = NULL;
}

const char *fedc__msg_field(const fedc__msg *m, const char *key) { return fedc_safetensors_metadata(m->body, key); }

fedc_status fedc__msg_int(const fedc__msg *m, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    const char *v = fedc__msg_field(m, key);
    char *end = NULL;
    /* digits only, as fedc writes them: strtoll alone would also take " 4" and "+4" for 4 */
    bool plain = v && (isdigit((unsigned char)v[0]) || (v[0] == '-' && isdigit((unsigned char)v[1])));
    long long x = plain ? strtoll(v, &end, 10) : 0;
    if (!plain || *end || x < lo || x > hi)
        return fedc_error(FEDC_EPARSE, "wire: %s message: field \"%s\" is \"%.40s\", not a whole number in [%lld, %lld]",
                          fedc__msg_name(m->type), key, v ? v : "", (long long)lo, (long long)hi);
    *out = x;
    return FEDC_OK;
}

/* Whether the n elements (of `size` bytes) at p, any alignment, hold a NaN
 * or an infinity: an all-ones exponent. One branch-free pass, read in place. */
static bool any_not_finite(const unsigned char *p, int64_t n, size_t size) {
    unsigned bad = 0;
    if (size == 4) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            uint64_t u;
            memcpy(&u, p + 8 * i, 8);
            bad |= (u & 0x7ff0000000000000u) == 0x7ff0000000000000u;
        }
    }
    return bad != 0;
}

/* The first element of a float tensor that is NaN or infinite, or -1: checked
 * where the report lies, a block at a time, and only a bad block element by
 * element (for the index the refusal names). Server and client both check
 * what they are sent with it. */
int64_t fedc__tensor_first_not_finite(const fedc_tensor_entry *e) {
    if (e->type.dtype != FEDC_F32 && e->type.dtype != FEDC_F64) return -1;
    size_t size = fedc_dtype_size(e->type.dtype);
    int64_t n = fedc_type_count(&e->type);
    const unsigned char *p = e->data;
    for (int64_t at = 0; at < n; at += 4096) {
        int64_t m = n - at < 4096 ? n - at : 4096;
        if (!any_not_finite(p + (size_t)at * size, m, size)) continue;
        for (int64_t i = at; i < at + m; i++)
            if (any_not_finite(p + (size_t)i * size, 1, size)) return i;
    }
    return -1;
}
