/* A loopback TCP port for a test's server: the deployment tests that listen on
 * tcp://127.0.0.1:PORT and need the port before NNG is asked to listen there. */
#ifndef FEDC_TEST_FREE_PORT_H
#define FEDC_TEST_FREE_PORT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* A port nothing listens on now (0: none found). */
static inline int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t n = sizeof a;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) && !getsockname(fd, (struct sockaddr *)&a, &n))
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

#endif
