/* wire.h — the messages between a deployment's server and its clients
 * (internal; docs/deployment-internals.md, "The protocol").
 *
 * A message is a frame:
 *     bytes 0..3   magic "FDCW"
 *     bytes 4..5   version, u16 little-endian (FEDC__WIRE_VERSION)
 *     bytes 6..7   type, u16 little-endian (fedc__msg_type)
 *     bytes 8..15  payload length, u64 little-endian; it must be the rest of
 *                  the frame, and at most the receiver's limit
 *     payload      a safetensors file: the fields as its string metadata, the
 *                  tensors as its tensors
 * The decoder checks all of that, then that the type's fields are there; a
 * field's value is read with fedc__msg_int or fedc__msg_field, which say which
 * message and field is wrong. Nothing in a message is trusted further than that:
 * the server and client check values against their own state. */
#ifndef FEDC_DEPLOY_WIRE_H
#define FEDC_DEPLOY_WIRE_H

#include "fedc/safetensors.h"
#include "io/safetensors_io.h"

/* The frame's version; the protocol's (a check-in's "version": the messages
 * and what they mean) is FEDC__PROTOCOL_VERSION. */
enum { FEDC__WIRE_VERSION = 1, FEDC__WIRE_HEADER = 16, FEDC__PROTOCOL_VERSION = 5 }; /* 5: check-ins and readies say how long they may be held (hold_ms) */

typedef enum fedc__msg_type {
    FEDC__MSG_CHECKIN = 1, /* client: token, client, version, plan_hash ("" when it has no plan), hold_ms */
    FEDC__MSG_PLAN,        /* server: hash; tensors "file/NAME" (u8): the plan's files */
    FEDC__MSG_TASK,        /* server: round, exchange, slot, hash, heartbeat_ms; tensors: the broadcast values */
    FEDC__MSG_WAIT,        /* server: retry_ms (check in again after that), reason */
    FEDC__MSG_DONE,        /* server: rounds (the job is over) */
    FEDC__MSG_REPORT,      /* client: token, client, round, exchange, slot, hash; tensors: what it sends up */
    FEDC__MSG_ACK,         /* server: counted (1, or 0 for a report already counted) */
    FEDC__MSG_REJECT,      /* server: reason */
    FEDC__MSG_HEARTBEAT,   /* client, while it works on a task: token, client, round, exchange, slot */
    FEDC__MSG_READY,       /* client, its report ready: token, client, round, exchange, slot, hold_ms */
    FEDC__MSG_GO,          /* server: send the report now */
    FEDC__MSG_SECAGG,      /* client, in a secure round (secure.h): token, client, round, exchange, slot, session,
                              step; tensor "secagg" (u8): its message of that step, none to ask for the server's */
    FEDC__MSG_SECAGG_REPLY, /* server: step; tensor "secagg" (u8): the message opening that step */
    /* between a server and its aggregators (groups.h, docs/deployment-aggregators.md) */
    FEDC__MSG_GROUP_CHECKIN, /* aggregator: token, group, version, plan_hash ("": send the plan) */
    FEDC__MSG_GROUP_TASK,    /* server: round, exchange, hash, heartbeat_ms, cohort, first, clients, left_out, added,
                                rounds; tensors: the broadcast values */
    FEDC__MSG_GROUP_BEAT,    /* aggregator, while its group collects: token, group, round, exchange */
    FEDC__MSG_GROUP_REPORT,  /* aggregator: token, group, round, exchange, hash, reported, blocks; tensors: the
                                blocks' sums */
    FEDC__MSG_TYPES
} fedc__msg_type;

typedef struct fedc__msg {
    fedc__msg_type type;
    fedc_safetensors *body;
    void *frame;                  /* what holds the bytes of a message read in place (fedc__wire_view), */
    void (*release)(void *frame); /* let go by fedc__msg_free; NULL: nothing to let go */
} fedc__msg;

/* "checkin", "plan", ...; "?" for another number. */
const char *fedc__msg_name(int type);
/* The frame of a message, fedc_malloc'd into *out (*size bytes). */
fedc_status fedc__wire_encode(fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                              const fedc_tensor_entry *tensors, int ntensors, void **out, size_t *size);
/* The same frame written to `out` (a transport's message: each tensor copied
 * once, from the caller's buffer to the message). */
fedc_status fedc__wire_encode_into(fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                                   const fedc_tensor_entry *tensors, int ntensors, const fedc__byte_sink *out);
/* Decodes a frame of `size` bytes from an untrusted peer, refusing one whose
 * payload is above max bytes. FEDC_EPARSE (or FEDC_EUNSUPPORTED for another
 * version) with a message saying what is wrong. The message holds a copy. */
fedc_status fedc__wire_decode(const void *bytes, size_t size, size_t max, fedc__msg *out);
/* The same checks, the message read where it lies: its tensors point into
 * `bytes`, which must outlive it (or be handed to it as out->frame). */
fedc_status fedc__wire_view(const void *bytes, size_t size, size_t max, fedc__msg *out);
void fedc__msg_free(fedc__msg *m);
/* A field's text (NULL if absent; the decoder checked the type's own fields). */
const char *fedc__msg_field(const fedc__msg *m, const char *key);
/* A field as a whole number in [lo, hi]; else an error naming message and field. */
fedc_status fedc__msg_int(const fedc__msg *m, const char *key, int64_t lo, int64_t hi, int64_t *out);

/* The index of the first NaN or infinity in a float tensor (f32 or f64, read
 * where it lies, any alignment), or -1: none, or not a float tensor. */
int64_t fedc__tensor_first_not_finite(const fedc_tensor_entry *e);

#endif
