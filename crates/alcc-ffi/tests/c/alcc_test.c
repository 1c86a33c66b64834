/* Exercises libalcc through include/alcc.h only: a server thread sends N bytes with
 * alcc_accept/alcc_send/alcc_close under fixed:window=20; a client connects with
 * alcc_connect and reads with alcc_recv; checksums are compared. The same in framed mode
 * with Sprout (its forecaster in the client's alcc_recv). Then the uplink: the connecting
 * side sends with MDI (alcc_set_role "send"), the accepting side receives ("receive").
 * Then the error paths.
 * Exit status 0 on success; a message on stderr otherwise. */
#include "alcc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define TOTAL (8u << 20)

static int failures;
#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                           \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static struct sockaddr_storage server_addr;
static socklen_t server_len;
static uint64_t client_sum;
static uint64_t client_bytes;
static int framed; /* run in framed mode, Sprout at the sender, its forecaster at the receiver */
static int drwa;   /* the client sets its advertised window with DRWA (kernel mode) */

static void *client(void *arg) {
    (void)arg;
    int s = socket(server_addr.ss_family, SOCK_STREAM, 0);
    if (framed) {
        CHECK(alcc_set_mode(s, "framed") == 0, "set_mode on unconnected socket: %s", strerror(errno));
    } else if (drwa) {
        CHECK(alcc_set_receive_window(s, "drwa:lambda=") == -1 && errno == EINVAL, "bad window spec: errno %d", errno);
        CHECK(alcc_set_receive_window(s, "drwa") == 0, "set_receive_window: %s", strerror(errno));
    } else {
        CHECK(alcc_set_cc(s, "none", "cubic") == 0, "set_cc on unconnected socket: %s", strerror(errno));
    }
    CHECK(alcc_connect(s, (struct sockaddr *)&server_addr, server_len) == 0, "alcc_connect: %s", strerror(errno));
    static unsigned char buf[1 << 16];
    uint64_t h = 0xcbf29ce484222325ull;
    for (;;) {
        ssize_t n = alcc_recv(s, buf, sizeof buf, 0);
        if (n < 0) {
            CHECK(0, "alcc_recv: %s", strerror(errno));
            break;
        }
        if (n == 0) break;
        h = fnv(h, buf, (size_t)n);
        client_bytes += (uint64_t)n;
    }
    client_sum = h;
    if (drwa) {
        CHECK(alcc_set_receive_window(s, "drwa") == -1 && errno == EISCONN, "window on a connection: errno %d", errno);
        CHECK(alcc_get_info(s, NULL) == -1, "info on a receiver");
    }
    if (framed) {
        CHECK(alcc_send(s, buf, 1, 0) == -1 && errno == EOPNOTSUPP, "framed receiver sent: errno %d", errno);
        CHECK(alcc_set_mode(s, "kernel") == -1 && errno == EISCONN, "set_mode on a connection: errno %d", errno);
    }
    CHECK(alcc_close(s) == 0, "client alcc_close: %s", strerror(errno));
    return NULL;
}

static int run(int family) {
    int l = socket(family, SOCK_STREAM, 0);
    memset(&server_addr, 0, sizeof server_addr);
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&server_addr;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        server_len = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&server_addr;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        server_len = sizeof *a;
    }
    if (bind(l, (struct sockaddr *)&server_addr, server_len) != 0 || listen(l, 8) != 0) {
        perror("bind/listen");
        return 1;
    }
    getsockname(l, (struct sockaddr *)&server_addr, &server_len);
    const char *cc = framed ? "sprout" : "fixed:window=20";
    if (framed) {
        CHECK(alcc_set_cc(l, "sprout", "reno") == -1 && errno == EINVAL, "sprout in kernel mode: errno %d", errno);
        CHECK(alcc_set_mode(l, "udpx") == -1 && errno == EINVAL, "unknown mode: errno %d", errno);
        CHECK(alcc_set_mode(l, "udp") == -1 && errno == EOPNOTSUPP, "udp mode in C: errno %d", errno);
        CHECK(alcc_set_mode(l, "framed") == 0, "set_mode on listener: %s", strerror(errno));
    }
    CHECK(alcc_set_cc(l, cc, "reno") == 0, "set_cc on listener: %s", strerror(errno));
    CHECK(alcc_set_group(l, "a b", 1.0) == -1 && errno == EINVAL, "bad group name: errno %d", errno);
    CHECK(alcc_set_group(l, "auto", 0.0) == -1 && errno == EINVAL, "weight 0: errno %d", errno);
    CHECK(alcc_set_group(l, "c-test", 2.0) == 0, "set_group on listener: %s", strerror(errno));

    client_sum = 0;
    client_bytes = 0;
    pthread_t t;
    pthread_create(&t, NULL, client, NULL);
    struct sockaddr_storage peer;
    socklen_t peer_len = sizeof peer;
    int c = alcc_accept(l, (struct sockaddr *)&peer, &peer_len);
    CHECK(c >= 0, "alcc_accept: %s", strerror(errno));
    CHECK(peer.ss_family == family, "peer family %d", peer.ss_family);
    if (!framed) {
        /* Readiness: an empty queue has room. */
        int w = alcc_writable_fd(c);
        CHECK(w >= 0, "alcc_writable_fd: %s", strerror(errno));
        struct pollfd p = {.fd = w, .events = POLLOUT};
        CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLOUT), "readiness of an empty queue: revents %d", p.revents);
        CHECK(alcc_writable_fd(c) == w, "one readiness descriptor per connection");
        CHECK(alcc_set_group(c, "other", 1.0) == -1 && errno == EISCONN, "group of a connection: errno %d", errno);
        CHECK(alcc_set_group(c, NULL, 3.0) == 0, "weight of a connection: %s", strerror(errno));
    }

    static unsigned char buf[100000];
    uint64_t h = 0xcbf29ce484222325ull, sent = 0;
    if (!framed) {
        /* The first 300 000 bytes from a file by alcc_sendfile: 100 000 from an offset, then
         * 200 000 from the file's position. */
        FILE *f = tmpfile();
        CHECK(f != NULL, "tmpfile: %s", strerror(errno));
        static unsigned char part[300000];
        for (size_t i = 0; i < sizeof part; i++) part[i] = (unsigned char)(i * 2654435761u >> 13);
        CHECK(fwrite(part, 1, sizeof part, f) == sizeof part && fflush(f) == 0, "writing the file");
        int fd = fileno(f);
        off_t at = 0;
        CHECK(alcc_sendfile(c, fd, &at, 100000, 0) == 100000 && at == 100000, "alcc_sendfile at offset: %s", strerror(errno));
        CHECK(lseek(fd, 100000, SEEK_SET) == 100000, "lseek");
        CHECK(alcc_sendfile(c, fd, NULL, 200000, 0) == 200000, "alcc_sendfile at the position: %s", strerror(errno));
        CHECK(lseek(fd, 0, SEEK_CUR) == 300000, "the position did not move");
        CHECK(alcc_sendfile(c, -1, NULL, 1, 0) == -1 && errno == EBADF, "bad file: errno %d", errno);
        fclose(f); /* alcc keeps its own descriptor of the file until the bytes are sent */
        h = fnv(h, part, sizeof part);
        sent = sizeof part;
    }
    while (sent < TOTAL) {
        size_t n = TOTAL - sent < sizeof buf ? TOTAL - sent : sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)((sent + i) * 2654435761u >> 13);
        ssize_t k = alcc_send(c, buf, n, 0);
        if (k <= 0) {
            CHECK(0, "alcc_send: %s", strerror(errno));
            break;
        }
        h = fnv(h, buf, (size_t)k);
        sent += (uint64_t)k;
    }
    struct alcc_info info;
    CHECK(alcc_get_info(c, &info) == 0, "alcc_get_info: %s", strerror(errno));
    CHECK(framed || info.window == 20 * 1448, "window %llu", (unsigned long long)info.window);
    CHECK(framed || info.max_bytes_in_flight <= info.window, "in flight %llu > window", (unsigned long long)info.max_bytes_in_flight);
    CHECK(strcmp(info.controller, cc) == 0, "controller %s", info.controller);
    CHECK(strcmp(info.underlay, "reno") == 0, "underlay %s", info.underlay);
    /* alcc_set_cc on the listener set reno on it before the client connected: the connection
     * started under reno, not the host's default (bbr on this project's machines). */
    CHECK(strcmp(info.prior_congestion, "reno") == 0, "accepted under %s", info.prior_congestion);
    CHECK(alcc_close(c) == 0, "server alcc_close: %s", strerror(errno));
    pthread_join(t, NULL);
    CHECK(client_bytes == TOTAL, "client got %llu bytes", (unsigned long long)client_bytes);
    CHECK(client_sum == h, "checksums differ");
    CHECK(alcc_close(l) == 0, "closing the listener: %s", strerror(errno));
    printf("family %d%s%s: %u bytes, window %llu, max in flight %llu, kernel cwnd %llu\n", family,
           framed ? " framed sprout" : "", drwa ? " drwa client" : "", TOTAL, (unsigned long long)info.window, (unsigned long long)info.max_bytes_in_flight,
           (unsigned long long)info.kernel_cwnd);
    return 0;
}

/* The uplink's sender: connects, sends TOTAL bytes with MDI in framed mode. */
static uint64_t uplink_sum;
static void *uploader(void *arg) {
    (void)arg;
    int s = socket(server_addr.ss_family, SOCK_STREAM, 0);
    CHECK(alcc_set_mode(s, "framed") == 0, "set_mode: %s", strerror(errno));
    CHECK(alcc_set_role(s, "send") == 0, "set_role send: %s", strerror(errno));
    CHECK(alcc_set_cc(s, "mdi", "reno") == 0, "set_cc mdi: %s", strerror(errno));
    CHECK(alcc_connect(s, (struct sockaddr *)&server_addr, server_len) == 0, "alcc_connect: %s", strerror(errno));
    static unsigned char buf[70000];
    uint64_t h = 0xcbf29ce484222325ull, sent = 0;
    while (sent < TOTAL) {
        size_t n = TOTAL - sent < sizeof buf ? TOTAL - sent : sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)((sent + i) * 40503u >> 7);
        ssize_t k = alcc_send(s, buf, n, 0);
        if (k <= 0) {
            CHECK(0, "uplink alcc_send: %s", strerror(errno));
            break;
        }
        h = fnv(h, buf, (size_t)k);
        sent += (uint64_t)k;
    }
    struct alcc_info info;
    CHECK(alcc_get_info(s, &info) == 0, "uplink alcc_get_info: %s", strerror(errno));
    CHECK(strcmp(info.controller, "mdi") == 0, "uplink controller %s", info.controller);
    CHECK(strcmp(info.prior_congestion, "reno") == 0, "uplink connected under %s", info.prior_congestion);
    CHECK(alcc_recv(s, buf, 1, 0) == -1 && errno == EOPNOTSUPP, "framed sender received: errno %d", errno);
    CHECK(alcc_set_role(s, "receive") == -1 && errno == EISCONN, "set_role on a connection: errno %d", errno);
    CHECK(alcc_close(s) == 0, "uploader alcc_close: %s", strerror(errno));
    uplink_sum = h;
    return NULL;
}

static int run_uplink(void) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in *a = (struct sockaddr_in *)&server_addr;
    memset(&server_addr, 0, sizeof server_addr);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    server_len = sizeof *a;
    if (bind(l, (struct sockaddr *)&server_addr, server_len) != 0 || listen(l, 8) != 0) {
        perror("bind/listen");
        return 1;
    }
    getsockname(l, (struct sockaddr *)&server_addr, &server_len);
    CHECK(alcc_set_role(l, "recv") == -1 && errno == EINVAL, "unknown role: errno %d", errno);
    CHECK(alcc_set_mode(l, "kernel") == 0, "set_mode kernel: %s", strerror(errno));
    CHECK(alcc_set_role(l, "receive") == -1 && errno == EINVAL, "receive in kernel mode: errno %d", errno);
    CHECK(alcc_set_mode(l, "framed") == 0, "set_mode framed: %s", strerror(errno));
    CHECK(alcc_set_role(l, "receive") == 0, "set_role receive: %s", strerror(errno));
    pthread_t t;
    pthread_create(&t, NULL, uploader, NULL);
    int c = alcc_accept(l, NULL, NULL);
    CHECK(c >= 0, "alcc_accept: %s", strerror(errno));
    static unsigned char buf[1 << 16];
    uint64_t h = 0xcbf29ce484222325ull, got = 0;
    for (;;) {
        ssize_t n = alcc_recv(c, buf, sizeof buf, 0);
        if (n < 0) {
            CHECK(0, "receiver alcc_recv: %s", strerror(errno));
            break;
        }
        if (n == 0) break;
        h = fnv(h, buf, (size_t)n);
        got += (uint64_t)n;
    }
    CHECK(alcc_send(c, buf, 1, 0) == -1 && errno == EOPNOTSUPP, "framed receiver sent: errno %d", errno);
    CHECK(alcc_set_cc(c, "copa", NULL) == -1 && errno == EOPNOTSUPP, "set_cc on a receiver: errno %d", errno);
    CHECK(alcc_close(c) == 0, "receiver alcc_close: %s", strerror(errno));
    pthread_join(t, NULL);
    CHECK(got == TOTAL, "receiver got %llu bytes", (unsigned long long)got);
    CHECK(uplink_sum == h, "uplink checksums differ");
    CHECK(alcc_close(l) == 0, "closing the listener: %s", strerror(errno));
    printf("uplink framed mdi: %llu bytes\n", (unsigned long long)got);
    return 0;
}

int main(void) {
    if (run(AF_INET) || run(AF_INET6)) return 1;
    drwa = 1;
    if (run(AF_INET6)) return 1;
    drwa = 0;
    framed = 1;
    if (run(AF_INET)) return 1;
    if (run_uplink()) return 1;

    /* Error paths: -1 and errno. */
    char b[4];
    errno = 0;
    CHECK(alcc_send(12345, b, sizeof b, 0) == -1 && errno == EBADF, "send on unknown fd: errno %d", errno);
    errno = 0;
    CHECK(alcc_recv(12345, b, sizeof b, 0) == -1 && errno == EBADF, "recv on unknown fd: errno %d", errno);
    struct alcc_info info;
    CHECK(alcc_get_info(12345, &info) == -1 && errno == EBADF, "info on unknown fd: errno %d", errno);
    errno = 0;
    CHECK(alcc_writable_fd(12345) == -1 && errno == EBADF, "writable_fd on unknown fd: errno %d", errno);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    errno = 0;
    CHECK(alcc_set_cc(s, "nosuch", NULL) == -1 && errno == EINVAL, "bad spec: errno %d", errno);
    errno = 0;
    CHECK(alcc_set_cc(s, "fixed", "notacc") == -1 && errno == ENOENT, "bad underlay: errno %d", errno);
    CHECK(alcc_set_cc(s, NULL, NULL) == -1 && errno == EINVAL, "null spec: errno %d", errno);
    /* alcc's BPF underlay: an unknown policy is EINVAL; as root it loads, otherwise EPERM
     * (never a quiet switch to CUBIC). */
    errno = 0;
    CHECK(alcc_set_cc(s, "fixed", "alcc:loose") == -1 && errno == EINVAL, "bad alcc policy: errno %d", errno);
    errno = 0;
    if (geteuid() == 0) {
        CHECK(alcc_set_cc(s, "fixed", "alcc:follow") == 0, "alcc underlay as root: %s", strerror(errno));
    } else {
        CHECK(alcc_set_cc(s, "fixed", "alcc") == -1 && errno == EPERM, "alcc underlay unprivileged: errno %d", errno);
    }
    struct sockaddr_in nowhere = {.sin_family = AF_INET, .sin_port = htons(1), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    errno = 0;
    CHECK(alcc_connect(s, (struct sockaddr *)&nowhere, sizeof nowhere) == -1 && errno == ECONNREFUSED,
          "connect refused: errno %d", errno);
    CHECK(alcc_close(s) == 0, "close plain socket");
    /* Every connection was closed: the exit flush finds nothing left to hand over. */
    CHECK(alcc_exit_flush(1000) == 0, "alcc_exit_flush: %s", strerror(errno));
    if (failures) return 1;
    printf("alcc C ABI: all checks passed\n");
    return 0;
}
