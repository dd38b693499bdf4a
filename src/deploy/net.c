/* NNG request/reply sockets for the protocol (net.h). */
#include "deploy/net.h" /* nng/nng.h first: the protocol headers need it */

#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

static fedc_status nng_fail(int rv, const char *what, const char *url) {
    return fedc_error(FEDC_EIO, "%s %s: %s", what, url ? url : "", nng_strerror(rv));
}

/* Timeouts and the message bound, common to both ends. */
static int configure(fedc__net *n, size_t max, int recv_ms, int send_ms) {
    int rv = nng_socket_set_ms(n->s, NNG_OPT_RECVTIMEO, recv_ms);
    if (!rv) rv = nng_socket_set_ms(n->s, NNG_OPT_SENDTIMEO, send_ms);
    if (!rv) rv = nng_socket_set_size(n->s, NNG_OPT_RECVMAXSZ, max + FEDC__WIRE_HEADER);
    n->max = max;
    return rv;
}

fedc_status fedc__net_listen(fedc__net *n, const char *url, size_t max, int recv_ms) {
    n->open = false;
    int rv = nng_rep0_open(&n->s);
    if (rv) return nng_fail(rv, "server: cannot open a socket for", url);
    n->open = true;
    rv = configure(n, max, recv_ms, 10000);
    if (!rv) rv = nng_listen(n->s, url, NULL, 0);
    if (rv) {
        fedc_status st = nng_fail(rv, "server: cannot listen on", url);
        fedc__net_close(n);
        return st;
    }
    return FEDC_OK;
}

fedc_status fedc__net_dial(fedc__net *n, const char *url, size_t max, int timeout_ms) {
    n->open = false;
    int rv = nng_req0_open(&n->s);
    if (rv) return nng_fail(rv, "client: cannot open a socket for", url);
    n->open = true;
    rv = configure(n, max, timeout_ms, timeout_ms);
    /* no resend while a request waits for its answer: a long round is not a lost
     * request (a repeated report would be counted once anyway) */
    if (!rv) rv = nng_socket_set_ms(n->s, NNG_OPT_REQ_RESENDTIME, timeout_ms);
    if (!rv) rv = nng_socket_set_ms(n->s, NNG_OPT_RECONNMINT, 20);
    if (!rv) rv = nng_socket_set_ms(n->s, NNG_OPT_RECONNMAXT, 1000);
    if (!rv) rv = nng_dial(n->s, url, NULL, NNG_FLAG_NONBLOCK); /* connects when the server is there */
    if (rv) {
        fedc_status st = nng_fail(rv, "client: cannot dial", url);
        fedc__net_close(n);
        return st;
    }
    return FEDC_OK;
}

void fedc__net_close(fedc__net *n) {
    if (n->open) nng_close(n->s);
    n->open = false;
}

fedc_status fedc__net_recv(fedc__net *n, void **data, size_t *size, bool *timed_out) {
    *data = NULL, *size = 0, *timed_out = false;
    int rv = nng_recv(n->s, data, size, NNG_FLAG_ALLOC);
    if (rv == NNG_ETIMEDOUT) {
        *timed_out = true;
        return FEDC_OK;
    }
    return rv ? nng_fail(rv, "receive:", NULL) : FEDC_OK;
}

fedc_status fedc__net_send(fedc__net *n, const void *data, size_t size) {
    int rv = nng_send(n->s, (void *)data, size, 0);
    return rv ? nng_fail(rv, "send:", NULL) : FEDC_OK;
}

fedc_status fedc__net_send_msg(fedc__net *n, fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                               const fedc_tensor_entry *tensors, int ntensors, size_t *bytes) {
    void *frame = NULL;
    size_t size = 0;
    fedc_status st = fedc__wire_encode(type, fields, nfields, tensors, ntensors, &frame, &size);
    if (!st) st = fedc__net_send(n, frame, size);
    if (bytes) *bytes = st ? 0 : size;
    fedc_free(frame);
    return st;
}

fedc_status fedc__net_call(fedc__net *n, fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                           const fedc_tensor_entry *tensors, int ntensors, fedc__msg *reply) {
    reply->body = NULL;
    fedc_status st = fedc__net_send_msg(n, type, fields, nfields, tensors, ntensors, NULL);
    void *data = NULL;
    size_t size = 0;
    bool timed_out = false;
    if (!st) st = fedc__net_recv(n, &data, &size, &timed_out);
    if (!st && timed_out) st = fedc_error(FEDC_EIO, "no answer from the server in time (is it running?)");
    if (!st) st = fedc__wire_decode(data, size, n->max, reply);
    if (data) nng_free(data, size);
    return st;
}
