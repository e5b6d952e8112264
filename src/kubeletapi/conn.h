/* kla_conn: one TLS connection (server or client side) on a libuv TCP handle, with OpenSSL driven
 * through memory BIOs, so that every byte in either direction passes through buffers this module
 * bounds:
 *  - towards the peer: plaintext written is encrypted at once and queued for the socket; the bytes
 *    queued are counted, kla_conn_writable() is false above the high-water mark and the `drain`
 *    callback runs when they fall below half of it; past the hard limit a write fails (-ENOBUFS)
 *    and the connection is closed;
 *  - from the peer: reading is paused on demand (kla_conn_pause), which stops decrypting and
 *    stops reading the socket, so a slow consumer slows the peer down through TCP.
 * Closing gracefully (kla_conn_shutdown) flushes what is queued, sends close_notify, half-closes
 * the socket and then drains what the peer still sends for a short while before closing, so that
 * the peer reads our last bytes before it sees the connection go (no reset of unread data).
 *
 * Callbacks run on the loop; `closed` runs exactly once (also after kla_conn_close), after which
 * the connection is freed: the owner must forget it. The owner must not free anything the
 * callbacks use before `closed`. */
#ifndef CLIQO_KUBELETAPI_CONN_H
#define CLIQO_KUBELETAPI_CONN_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

struct kla_conn;

struct kla_conn_ops {
    /* TLS is established (certificates exchanged). Optional. */
    void (*ready)(struct kla_conn *c, void *data);
    /* Plaintext from the peer; len 0 is the peer's end of data (close_notify or EOF). */
    void (*data)(struct kla_conn *c, const char *buf, size_t len, void *data);
    void (*drain)(struct kla_conn *c, void *data);
    /* err: 0 after an orderly close, else a negative errno (-ETIMEDOUT, -ECONNRESET, -EPROTO for
     * a TLS failure, -ENOBUFS). */
    void (*closed)(struct kla_conn *c, int err, void *data);
};

struct kla_conn_limits {
    size_t high_water;     /* default 256 KiB */
    size_t hard_limit;     /* default 8 MiB */
    uint64_t handshake_ms; /* default 10 s */
    uint64_t idle_ms;      /* 0: none (kla_conn_set_idle changes it) */
};

/* Accepts a pending connection of `server` (server side of TLS with ctx; the ctx is referenced).
 * Returns 0 with *ret, or a negative errno (the pending connection is dropped). */
int kla_conn_accept(uv_stream_t *server, SSL_CTX *ctx, const struct kla_conn_limits *lim,
                    const struct kla_conn_ops *ops, void *data, struct kla_conn **ret);
/* Connects to addr and starts TLS as a client: SNI server_name (not for IP addresses), the peer
 * certificate verified against ctx's store for verify_name (a DNS name or an IP address; NULL:
 * no verification). */
int kla_conn_connect(uv_loop_t *loop, const struct sockaddr *addr, SSL_CTX *ctx,
                     const char *server_name, const char *verify_name,
                     const struct kla_conn_limits *lim, const struct kla_conn_ops *ops, void *data,
                     struct kla_conn **ret);

/* Queues plaintext (before `ready` on a client connection, it is sent after the handshake).
 * Returns 0, -ENOBUFS (hard limit: the connection is being closed) or -EPIPE. */
int kla_conn_write(struct kla_conn *c, const void *buf, size_t len);
bool kla_conn_writable(const struct kla_conn *c);
size_t kla_conn_queued(const struct kla_conn *c);
void kla_conn_pause(struct kla_conn *c, bool pause);
/* Idle timeout (no byte in either direction); 0 disables. */
void kla_conn_set_idle(struct kla_conn *c, uint64_t ms);
void kla_conn_set_ops(struct kla_conn *c, const struct kla_conn_ops *ops, void *data);
/* Graceful close (see above); the closed callback follows. */
void kla_conn_shutdown(struct kla_conn *c);
/* Immediate close; the closed callback follows (from the loop, not from inside this call). */
void kla_conn_close(struct kla_conn *c, int err);
bool kla_conn_closing(const struct kla_conn *c);
/* The peer's certificate chain as sent (leaf first), borrowed; NULL when it sent none. */
X509 *kla_conn_peer_cert(const struct kla_conn *c);
STACK_OF(X509) * kla_conn_peer_chain(const struct kla_conn *c);
/* The peer's address as text without the port. */
const char *kla_conn_peer_ip(const struct kla_conn *c);
/* OpenSSL's reason of a failed handshake or record ("" when none). */
const char *kla_conn_tls_error(const struct kla_conn *c);

#endif
