/* The wire format (wire.h): frames around safetensors payloads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/wire.h"

static const char MAGIC[4] = {'F', 'D', 'C', 'W'};

/* Each type's fields, which the decoder requires. */
static const struct {
    const char *name;
    const char *fields[7];
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
};

const char *fedc__msg_name(int type) { return type > 0 && type < FEDC__MSG_TYPES ? types[type].name : "?"; }

fedc_status fedc__wire_encode(fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                              const fedc_tensor_entry *tensors, int ntensors, void **out, size_t *size) {
    *out = NULL, *size = 0;
    void *body = NULL;
    size_t n = 0;
    fedc_status st = fedc_safetensors_encode(tensors, ntensors, fields, nfields, &body, &n);
    unsigned char *f = st ? NULL : fedc_malloc(FEDC__WIRE_HEADER + n);
    if (!st && !f) st = fedc_error(FEDC_ENOMEM, "wire: out of memory for a message of %zu bytes", n);
    if (!st) {
        memcpy(f, MAGIC, 4);
        f[4] = FEDC__WIRE_VERSION & 0xff, f[5] = FEDC__WIRE_VERSION >> 8;
        f[6] = (unsigned char)(type & 0xff), f[7] = (unsigned char)(type >> 8);
        for (int i = 0; i < 8; i++) f[8 + i] = (unsigned char)((uint64_t)n >> (8 * i));
        memcpy(f + FEDC__WIRE_HEADER, body, n);
        *out = f, *size = FEDC__WIRE_HEADER + n;
    }
    fedc_free(body);
    return st;
}

fedc_status fedc__wire_decode(const void *bytes, size_t size, size_t max, fedc__msg *out) {
    const unsigned char *b = bytes;
    out->type = 0, out->body = NULL;
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
    fedc_status st = fedc_safetensors_parse(b + FEDC__WIRE_HEADER, (size_t)n, what, &out->body);
    for (int i = 0; !st && i < 7 && types[type].fields[i]; i++)
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

void fedc__msg_free(fedc__msg *m) {
    fedc_safetensors_destroy(m->body);
    m->body = NULL;
}

const char *fedc__msg_field(const fedc__msg *m, const char *key) { return fedc_safetensors_metadata(m->body, key); }

fedc_status fedc__msg_int(const fedc__msg *m, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    const char *v = fedc__msg_field(m, key);
    char *end = NULL;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || end == v || *end || x < lo || x > hi)
        return fedc_error(FEDC_EPARSE, "wire: %s message: field \"%s\" is \"%.40s\", not a whole number in [%lld, %lld]",
                          fedc__msg_name(m->type), key, v ? v : "", (long long)lo, (long long)hi);
    *out = x;
    return FEDC_OK;
}
