/* net.h — the transport under the protocol (internal): NNG's request/reply
 * sockets. A client holds a REQ socket (one connection, dialled in the
 * background, so it may start before its server), asks and waits for the
 * answer; the server holds one REP socket and answers requests one at a time,
 * in the order NNG delivers them. Every wait has a timeout; messages above a
 * bound are dropped by NNG before they are read (NNG_OPT_RECVMAXSZ). */
#ifndef FEDC_DEPLOY_NET_H
#define FEDC_DEPLOY_NET_H

#include <nng/nng.h>

#include "deploy/wire.h"

typedef struct fedc__net {
    nng_socket s;
    bool open;
    size_t max; /* the largest payload a frame may declare */
    int timeout_ms;
    char url[256]; /* for messages */
} fedc__net;

/* TLS (tls+tcp:// addresses, through NNG's mbedTLS engine): the server's
 * certificate and key (PEM files), the certificate(s) a client verifies the
 * server with, and the name it expects in it (NULL: the address's host). */
typedef struct fedc__tls {
    const char *cert, *key, *ca, *server_name;
} fedc__tls;

/* The server's socket on `url` (tcp://HOST:PORT, ipc://PATH, tls+tcp://HOST:PORT
 * with tls's cert and key), waiting at most recv_ms for each request. */
fedc_status fedc__net_listen(fedc__net *n, const char *url, size_t max, int recv_ms, const fedc__tls *tls);
/* A client's socket towards `url` (tls+tcp:// needs tls's ca): each call waits
 * at most timeout_ms. */
fedc_status fedc__net_dial(fedc__net *n, const char *url, size_t max, int timeout_ms, const fedc__tls *tls);
void fedc__net_close(fedc__net *n);

/* Where a server's answer to a request goes: raw REP's backtrace (the pipe and
 * the request's id), so that a request may be answered after others. */
typedef struct fedc__req {
    unsigned char head[64];
    size_t nhead;
} fedc__req;
/* The server's next request (nng_msg_free it; its body is the frame) and where
 * to answer it, or *timed_out. */
fedc_status fedc__net_recv_req(fedc__net *n, nng_msg **msg, fedc__req *from, bool *timed_out);
/* Answers the request `to` with a message encoded; *bytes: the frame's size. */
fedc_status fedc__net_reply(fedc__net *n, const fedc__req *to, fedc__msg_type type, const fedc_metadata_entry *fields,
                            int nfields, const fedc_tensor_entry *tensors, int ntensors, size_t *bytes);
/* A client's next answer's bytes (nng_free them with size), or *timed_out. */
fedc_status fedc__net_recv(fedc__net *n, void **data, size_t *size, bool *timed_out);
fedc_status fedc__net_send(fedc__net *n, const void *data, size_t size);
/* A client's request: sent, and the reply received and decoded. */
fedc_status fedc__net_call(fedc__net *n, fedc__msg_type type, const fedc_metadata_entry *fields, int nfields,
                           const fedc_tensor_entry *tensors, int ntensors, fedc__msg *reply);
/* A client's request whose reply no one waits for (a heartbeat): queued to
 * send, and its reply dropped by NNG when the next request is sent. */
fedc_status fedc__net_post(fedc__net *n, fedc__msg_type type, const fedc_metadata_entry *fields, int nfields);

#endif
