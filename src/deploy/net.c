/* NNG request/reply sockets for the protocol (net.h). */
#include "deploy/net.h" /* nng/nng.h first: the protocol headers need it */

#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>
#include <stdio.h>
#include <string.h>

static fedc_status nng_fail(int rv, const char *what, const char *url) {
    return fedc_error(FEDC_EIO, "%s %s: %s", what, url ? url : "", nng_strerror(rv));
}

/* Timeouts and the message bound, common to both ends. */
static int configure(fedc__net *n, const char *url, size_t max, int recv_ms, int send_ms) {
    snprintf(n->url, sizeof n->url, "%s", url);
    n->timeout_ms = recv_ms;
    int rv = nng_socket_set_ms(n->s, NNG_OPT_RECVTIMEO, recv_ms);
    if (!rv) rv = nng_socket_set_ms(n->s, NNG_OPT_SENDTIMEO, send_ms);
    if (!rv) rv = nng_socket_set_size(n->s, NNG_OPT_RECVMAXSZ, max + FEDC__WIRE_HEADER);
    n->max = max;
    return rv;
}

static bool is_tls(const char *url) { return !strncmp(url, "tls+", 4); }

/* A PEM file whole, NUL-terminated (fedc_free it). */
static fedc_status read_pem(const char *what, const char *path, char **out) {
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return fedc_error(FEDC_EIO, "%s %s: cannot open", what, path ? path : "(none given)");
    char *buf = fedc_malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    bool whole = buf && feof(f);
    fclose(f);
    if (!whole) {
        fedc_status st = fedc_error(buf ? FEDC_EPARSE : FEDC_ENOMEM, "%s %s: unreadable, or larger than 1 MiB", what, path);
        fedc_free(buf);
        return st;
    }
    buf[n] = '\0';
    *out = buf;
    return FEDC_OK;
}

/* The TLS configuration of either end, or why not. */
static fedc_status tls_config(const char *url, const fedc__tls *t, bool server, nng_tls_config **cfg) {
    *cfg = NULL;
    bool want = t && (server ? t->cert || t->key : t->ca != NULL);
    if (!is_tls(url)) {
        if (want) return fedc_error(FEDC_EINVAL, "%s: TLS options need a tls+tcp:// address", url);
        return FEDC_OK;
    }
    if (server && (!t || !t->cert || !t->key))
        return fedc_error(FEDC_EINVAL, "%s: a TLS address needs a certificate and its key (--tls-cert, --tls-key)", url);
    if (!server && (!t || !t->ca))
        return fedc_error(FEDC_EINVAL, "%s: a TLS address needs the certificate to verify the server with (--tls-ca)", url);
    char *cert = NULL, *key = NULL;
    fedc_status st = server ? read_pem("--tls-cert", t->cert, &cert) : FEDC_OK;
    if (!st && server) st = read_pem("--tls-key", t->key, &key);
    int rv = st ? 0 : nng_tls_config_alloc(cfg, server ? NNG_TLS_MODE_SERVER : NNG_TLS_MODE_CLIENT);
    if (!st && !rv && server) rv = nng_tls_config_own_cert(*cfg, cert, key, NULL);
    if (!st && !rv && !server) rv = nng_tls_config_ca_file(*cfg, t->ca);
    if (!st && !rv && !server) rv = nng_tls_config_auth_mode(*cfg, NNG_TLS_AUTH_MODE_REQUIRED);
    if (!st && !rv && !server) {
        char host[256] = "";
        const char *h = strstr(url, "://");
        if (h) sscanf(h + 3, "%255[^:/]", host);
        rv = nng_tls_config_server_name(*cfg, t->server_name ? t->server_name : host);
    }
    fedc_free(cert), fedc_free(key);
    if (!st && rv) st = nng_fail(rv, "TLS configuration (certificate, key or CA file) for", url);
    if (st && *cfg) nng_tls_config_free(*cfg), *cfg = NULL;
    return st;
}

fedc_status fedc__net_listen(fedc__net *n, const char *url, size_t max, int recv_ms, const fedc__tls *tls) {
    n->open = false;
    nng_tls_config *cfg = NULL;
    fedc_status st = tls_config(url, tls, true, &cfg);
    if (st) return st;
    int rv = nng_rep0_open_raw(&n->s); /* raw: a request may be answered later, out of turn */
    if (!rv) n->open = true;
    if (!rv) rv = configure(n, url, max, recv_ms, 10000);
    nng_listener l;
    if (!rv) rv = nng_listener_create(&l, n->s, url);
    if (!rv && cfg) rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, cfg);
    if (!rv) rv = nng_listener_start(l, 0);
    if (cfg) nng_tls_config_free(cfg); /* the listener holds its own reference */
    if (rv) {
        st = nng_fail(rv, "server: cannot listen on", url);
        fedc__net_close(n);
    }
    return st;
}

fedc_status fedc__net_dial(fedc__net *n, const char *url, size_t max, int timeout_ms, const fedc__tls *tls) {
    n->open = false;
    nng_tls_config *cfg = NULL;
    fedc_status st = tls_config(url, tls, false, &cfg);
    if (st) return st;
    int rv = nng_req0_open(&n->s);
    if (!rv) n->open = true;
    if (!rv) rv = configure(n, url, max, timeout_ms, timeout_ms);
    /* no resend while a request waits for its answer: a long round is not a lost
     * request (a repeated report would be counted once anyway) */
    if (!rv) rv = nng_socket_set_ms(n->s, NNG_OPT_REQ_RESENDTIME, timeout_ms);
    if (!rv) rv = nng_socket_set_ms(n->s, NNG_OPT_RECONNMINT, 20);
    if (!rv) rv = nng_socket_set_ms(n->s, NNG_OPT_RECONNMAXT, 1000);
    nng_dialer d;
    if (!rv) rv = nng_dialer_create(&d, n->s, url);
    if (!rv && cfg) rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, cfg);
    if (!rv) rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK); /* connects when the server is there */
    if (cfg) nng_tls_config_free(cfg);
    if (rv) {
        st = nng_fail(rv, "client: cannot dial", url);
        fedc__net_close(n);
    }
    return st;
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

fedc_status fedc__net_recv_req(fedc__net *n, nng_msg **msg, fedc__req *from, bool *timed_out) {
    *msg = NULL, *timed_out = false;
    int rv = nng_recvmsg(n->s, msg, 0);
    if (rv == NNG_ETIMEDOUT) {
        *timed_out = true;
        return FEDC_OK;
    }
    if (rv) return nng_fail(rv, "receive:", NULL);
    from->nhead = nng_msg_header_len(*msg);
    if (from->nhead > sizeof from->head) { /* not a peer's request: a backtrace this long comes through devices */
        nng_msg_free(*msg);
        *msg = NULL, *timed_out = true;
        return FEDC_OK;
    }
    memcpy(from->head, nng_msg_header(*msg), from->nhead);
    return FEDC_OK;
}

/* A message the wire encodes into, piece by piece: its room reserved first
 * (nng_msg_alloc would zero a model-sized body only to have it overwritten),
 * so a frame is written once, where NNG sends it from. */
static bool msg_begin(void *ctx, size_t total) {
    nng_msg **m = ctx;
    if (nng_msg_alloc(m, 0)) return *m = NULL, false;
    return nng_msg_reserve(*m, total) == 0;
}

static bool msg_put(void *ctx, const void *data, size_t n) {
    nng_msg **m = ctx;
    return nng_msg_append(*m, data, n) == 0;
}

static fedc_status encode_msg(fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                              const fedc_tensor_entry *tensors, int ntensors, nng_msg **out) {
    nng_msg *m = NULL;
    fedc_status st = fedc__wire_encode_into(type, fields, nfields, tensors, ntensors, &(fedc__byte_sink){msg_begin, msg_put, &m});
    if (st && m) nng_msg_free(m), m = NULL;
    *out = m;
    return st;
}

fedc_status fedc__net_reply(fedc__net *n, const fedc__req *to, fedc__msg_type type, const fedc_metadata_entry *fields,
                            int nfields, const fedc_tensor_entry *tensors, int ntensors, size_t *bytes) {
    nng_msg *m = NULL;
    *bytes = 0;
    fedc_status st = encode_msg(type, fields, nfields, tensors, ntensors, &m);
    size_t size = m ? nng_msg_len(m) : 0;
    int rv = st ? 0 : nng_msg_header_append(m, to->head, to->nhead);
    if (!st && !rv) rv = nng_sendmsg(n->s, m, 0); /* takes m; a peer gone away is not an error */
    else if (m) nng_msg_free(m);
    if (!st && rv) st = nng_fail(rv, "send:", NULL);
    if (!st) *bytes = size;
    return st;
}

fedc_status fedc__net_send(fedc__net *n, const void *data, size_t size) {
    int rv = nng_send(n->s, (void *)data, size, 0);
    return rv ? nng_fail(rv, "send:", NULL) : FEDC_OK;
}

/* A client's request that timed out, said as what the user can check. */
static fedc_status no_answer(const fedc__net *n) {
    return fedc_error(FEDC_EIO, "no connection to or answer from the server at %s within %d ms (is it running there? "
                      "over TLS, does --tls-ca verify its certificate?)", n->url, n->timeout_ms);
}

static void release_msg(void *m) { nng_msg_free(m); }

/* Sends a request; NNG_ETIMEDOUT and other failures said as the client's. */
static fedc_status send_request(fedc__net *n, nng_msg *m) {
    int rv = nng_sendmsg(n->s, m, 0); /* takes m when it succeeds */
    if (rv) nng_msg_free(m);
    if (rv == NNG_ETIMEDOUT) return no_answer(n);
    return rv ? nng_fail(rv, "client: cannot send to", n->url) : FEDC_OK;
}

fedc_status fedc__net_post(fedc__net *n, fedc__msg_type type, const fedc_metadata_entry *fields, int nfields) {
    nng_msg *m = NULL;
    fedc_status st = encode_msg(type, fields, nfields, NULL, 0, &m);
    return st ? st : send_request(n, m);
}

fedc_status fedc__net_call(fedc__net *n, fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                           const fedc_tensor_entry *tensors, int ntensors, fedc__msg *reply) {
    *reply = (fedc__msg){0};
    nng_msg *m = NULL;
    fedc_status st = encode_msg(type, fields, nfields, tensors, ntensors, &m);
    if (!st) st = send_request(n, m);
    if (st) return st;
    int rv = nng_recvmsg(n->s, &m, 0);
    if (rv == NNG_ETIMEDOUT) return no_answer(n);
    if (rv) return nng_fail(rv, "receive:", NULL);
    /* read where it lies: the reply keeps the message until it is let go */
    st = fedc__wire_view(nng_msg_body(m), nng_msg_len(m), n->max, reply);
    if (st) nng_msg_free(m);
    else reply->frame = m, reply->release = release_msg;
    return st;
}
