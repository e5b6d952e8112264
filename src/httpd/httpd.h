/* httpd: small HTTP(S) servers on libmicrohttpd, driven by the caller's libuv loop.
 *
 * MHD runs without threads of its own: the daemon is started in external-polling mode with epoll,
 * its epoll descriptor is watched by a uv_poll and a uv_timer armed from MHD_get_timeout, and
 * both call MHD_run. Every callback of this module therefore runs on the loop's thread.
 *
 * Routing is method + exact path (no patterns, no prefixes; the query string is not part of the
 * path). An unknown path is answered 404, a known path with another method 405 (with Allow). HEAD
 * is served by the GET route (MHD drops the body). Each route has a request-body limit: the body is
 * counted as it arrives and never buffered past the limit. A declared Content-Length above it is
 * refused with 413 before any of the body is read; a chunked body that grows past it makes the
 * server close the connection as soon as the excess arrives (MHD cannot answer in the middle of an
 * unread body; the request is reported to on_response as a 413).
 *
 * A handler answers with httpd_respond() (or a helper), either before it returns or later from the
 * loop: a handler that returns without answering leaves the request pending (the connection is
 * suspended) until it answers. A pending request is answered 504 if its handler has not answered
 * within handler_timeout_ms, and 503 when the server closes; in both cases the handler's abort
 * callback (httpd_req_on_abort) runs first and the handler must forget the request.
 *
 * TLS (optional) uses MHD's GnuTLS: certificate and key are given as PEM strings. A TLS server may
 * also authenticate its clients (client_ca_pem): every handshake then requires a client certificate
 * and verifies it inside the handshake, so that a client without an acceptable one never gets to
 * send a request (its handshake fails; no handler, no on_response). Limits: number of connections
 * (in total and per client address), memory per connection (request line and headers must fit),
 * and an idle timeout that closes silent connections (slowloris).
 *
 * Ownership: the server borrows the loop. Strings passed in are copied. struct httpd_request is
 * owned by the server: it is valid from the handler call until the handler answered (the answering
 * call included) or its abort callback ran, and nothing it returns may be kept beyond that. */
#ifndef CLIQO_HTTPD_H
#define CLIQO_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

struct httpd_server;
struct httpd_request;

#define HTTPD_DEFAULT_CONNECTION_LIMIT   64
#define HTTPD_DEFAULT_PER_IP_LIMIT       16
#define HTTPD_DEFAULT_MEMORY_LIMIT       (32u * 1024)
#define HTTPD_DEFAULT_TIMEOUT_S          30
#define HTTPD_DEFAULT_HANDLER_TIMEOUT_MS 30000
#define HTTPD_DEFAULT_REQUEST_TIMEOUT_MS 10000
#define HTTPD_DEFAULT_HANDSHAKE_LIMIT    8
#define HTTPD_MAX_ROUTES                 64
#define HTTPD_MAX_EXTRA_HEADERS          8
#define HTTPD_ADDR_STRLEN                64 /* "[ipv6]:port" and a NUL */
#define HTTPD_MAX_CLIENT_CNS             16 /* names in httpd_options.client_cn */
#define HTTPD_CN_MAX                     64 /* bytes of a common name (X.520 ub-common-name) */
#define HTTPD_CLIENT_CA_MAX              (1u << 20) /* bytes of a client CA bundle */

/* Runs on the loop with the complete request (body included). It answers now or later. */
typedef void (*httpd_handler_fn)(struct httpd_request *req, void *data);
/* The request will never be answered by its handler (timeout or server closing); runs once, before
 * the server's own answer. The handler must drop every reference to req. */
typedef void (*httpd_abort_fn)(struct httpd_request *req, void *data);
/* Every request that got an answer, with its status (for metrics and access logs). route is the
 * matched route's path, or NULL when none matched (404 and 405 included). */
typedef void (*httpd_response_fn)(const struct httpd_request *req, const char *route,
                                  unsigned status, void *data);

struct httpd_options {
    const char *name;                 /* for logs, e.g. "http" or "auth"; default "httpd" */
    const char *addr;                 /* listen address, HOST:PORT (see netaddr_parse) */
    const char *tls_cert_pem;         /* both or neither; NULL: plain HTTP */
    const char *tls_key_pem;          /* unencrypted PEM private key */
    unsigned connection_limit;        /* default 64 */
    unsigned per_ip_connection_limit; /* default 16 */
    size_t connection_memory_limit;   /* bytes per connection; default 32 KiB */
    unsigned connection_timeout_s;    /* idle connections are closed; default 30 */
    uint64_t handler_timeout_ms;      /* pending requests get 504 after this; default 30 s */
    /* Total deadline to receive a whole request (TLS handshake, head and body) from the moment the
     * connection is accepted, or the previous answer was sent on it; the connection is closed
     * when it passes. Unlike connection_timeout_s (an idle timeout, which a client sending one
     * byte a second never triggers), it bounds how long a slow client holds a connection.
     * Default 10 s. */
    uint64_t request_timeout_ms;
    /* Client authentication (TLS servers only). client_ca_pem, a PEM bundle of CA certificates:
     * every handshake requires a client certificate whose chain (as the client sends it) leads to
     * one of them, valid now (every certificate of the chain), and usable for TLS client
     * authentication (extendedKeyUsage clientAuth, or none). client_cn: a NULL-terminated list of
     * the subject common names accepted (at most HTTPD_MAX_CLIENT_CNS, each 1 to HTTPD_CN_MAX
     * bytes), compared exactly with the certificate's single CN; NULL or empty: any. Both NULL:
     * no client certificate is asked for. */
    const char *client_ca_pem;
    const char *const *client_cn;
    /* TLS servers, when handshake_hold_ms is set (default 0: off): a new connection is handed to
     * the TLS layer at once only while no request is in progress and fewer than handshake_limit
     * (default HTTPD_DEFAULT_HANDSHAKE_LIMIT) connections are in their handshake or waiting for
     * their first request; otherwise it waits, accepted but not read, until that is so or for
     * handshake_hold_ms, oldest first, and one whose client gave up meanwhile is closed without a
     * handshake. For a client that opens a connection per concurrent request and cancels the ones
     * it did not need (Go's HTTP/1.1 transport: the API server's webhook client), each of which
     * would otherwise cost a handshake (httpd.c, "Accepting"). A server with long-running
     * requests (streams) should leave it off: they would hold every new connection. */
    unsigned handshake_limit;
    uint64_t handshake_hold_ms;
    httpd_response_fn on_response; /* optional */
    void *data;                    /* for on_response */
};

/* Formats an IPv4 or IPv6 socket address as "1.2.3.4:80" or "[::1]:80" (buf of at least
 * HTTPD_ADDR_STRLEN bytes); "?" for other families. */
void httpd_format_addr(const struct sockaddr *sa, char *buf, size_t size);

/* Creates a server (not listening yet). Returns 0, -EINVAL (bad options or address; client_cn
 * without client_ca_pem, or either without TLS), -EPROTO (client_ca_pem holds no certificate that
 * loads), -ENOTSUP (TLS asked for but libmicrohttpd lacks it) or -ENOMEM. */
int httpd_new(uv_loop_t *loop, const struct httpd_options *o, struct httpd_server **ret);
/* Adds a route; allowed before and after httpd_start. method is "GET", "POST", ...; path is exact
 * and starts with '/'; max_body is the largest request body accepted (0: none). Returns 0,
 * -EINVAL, -EEXIST (same method and path), -ENOSPC (HTTPD_MAX_ROUTES) or -ENOMEM. */
int httpd_route(struct httpd_server *s, const char *method, const char *path, size_t max_body,
                httpd_handler_fn fn, void *data);
/* Binds and listens. On failure err (errlen bytes, may be NULL) says why. Returns 0, -EALREADY,
 * -EADDRINUSE / -EACCES / -EADDRNOTAVAIL (bind), -EPROTO (MHD refused, e.g. a bad certificate). */
int httpd_start(struct httpd_server *s, char *err, size_t errlen);
bool httpd_started(const struct httpd_server *s);
/* Replaces the certificate (chain) and key of a TLS server, before or after httpd_start: new
 * handshakes use the new pair at once, connections already established keep theirs (no listener
 * restart, nothing refused during a rotation). Returns 0, -EINVAL (not a TLS server, or closing),
 * -EPROTO (the PEM does not load; the old pair stays) or -ENOMEM. */
int httpd_set_tls(struct httpd_server *s, const char *cert_pem, const char *key_pem);
/* Replaces the client CA bundle and the accepted common names (see httpd_options; cn NULL: any)
 * of a TLS server, before or after httpd_start, or turns client authentication on for one that
 * had none. Handshakes verified from then on use the new ones; established connections are kept.
 * Client authentication cannot be turned off (ca_pem NULL is -EINVAL). Returns 0, -EINVAL (not a
 * TLS server, closing, a bad name), -EPROTO (no certificate in ca_pem loads; the old bundle
 * stays) or -ENOMEM. */
int httpd_set_client_ca(struct httpd_server *s, const char *ca_pem, const char *const *cn);
/* Checks a client CA bundle and name list as httpd_new and httpd_set_client_ca would, without a
 * server. Returns the number of CA certificates in ca_pem, -EINVAL or -EPROTO (see above), or
 * -ENOMEM. */
int httpd_client_ca_check(const char *ca_pem, const char *const *cn);
/* Whether the server requires client certificates. */
bool httpd_client_auth(const struct httpd_server *s);
/* TLS handshakes refused because the client's certificate did not verify (a client that sends
 * none is refused by GnuTLS before the check, and not counted). */
uint64_t httpd_client_auth_failures(const struct httpd_server *s);
/* The bound port (useful with port 0), 0 when not listening. */
uint16_t httpd_port(const struct httpd_server *s);
/* Requests pending in asynchronous handlers. */
size_t httpd_pending(const struct httpd_server *s);
/* Connections closed because a request did not arrive within request_timeout_ms. */
uint64_t httpd_request_timeouts(const struct httpd_server *s);
/* How many passes of libmicrohttpd the server has run (for tests: a TLS handshake waiting for its
 * client must not make the server loop; see httpd.c, "TLS transport"). */
uint64_t httpd_passes(const struct httpd_server *s);
/* Connections accepted and held (handshake_limit) whose client closed them before they were
 * handed over: handshakes saved. */
uint64_t httpd_held_dropped(const struct httpd_server *s);
/* Connections accepted and handed to libmicrohttpd (for a TLS server: handshakes). */
uint64_t httpd_handed_over(const struct httpd_server *s);
/* Aborts pending requests (abort callbacks, then 503), stops listening, closes every connection and
 * frees the server once its loop handles have closed; then done(data) runs (done may be NULL).
 * NULL-safe. Not from inside one of the server's own callbacks: defer it (e.g. with a timer). */
void httpd_close(struct httpd_server *s, void (*done)(void *data), void *data);

/* ---- requests ------------------------------------------------------------------------------ */

const char *httpd_req_method(const struct httpd_request *req);
const char *httpd_req_path(const struct httpd_request *req);
/* The body (NUL-terminated, possibly containing other NULs) and its length; "" when none. */
const char *httpd_req_body(const struct httpd_request *req, size_t *ret_len);
/* A request header (case-insensitive name) or query argument, NULL when absent. */
const char *httpd_req_header(const struct httpd_request *req, const char *name);
const char *httpd_req_query(const struct httpd_request *req, const char *key);
/* The client's address, and as text without the port ("10.0.0.1", "::1"). */
const struct sockaddr *httpd_req_peer(const struct httpd_request *req);
const char *httpd_req_peer_ip(const struct httpd_request *req);
bool httpd_req_tls(const struct httpd_request *req);
struct httpd_server *httpd_req_server(const struct httpd_request *req);
/* Registers the abort callback of a pending request (see httpd_abort_fn). */
void httpd_req_on_abort(struct httpd_request *req, httpd_abort_fn fn, void *data);

/* Adds a response header (at most HTTPD_MAX_EXTRA_HEADERS) before answering. Returns 0, -EINVAL
 * (CR or LF in it), -ENOSPC or -ENOMEM. */
int httpd_add_header(struct httpd_request *req, const char *name, const char *value);
/* Answers the request: status, Content-Type (NULL: none) and body (copied). After this call req
 * is gone. Returns 0, or -EALREADY / -ENOMEM / -EIO (the request is then answered 500 or dropped:
 * either way req is gone). */
int httpd_respond(struct httpd_request *req, unsigned status, const char *content_type,
                  const void *body, size_t len);
/* A body many answers share without copying it (a cache of a large, often-read document): its
 * bytes are sent from where they are, and freed with the last reference (the owner's and one per
 * answer still being sent). Single-threaded, as the server. */
struct httpd_body;
/* Takes data (x_malloc'd, len bytes) over; the caller holds the first reference. NULL when out of
 * memory (data is freed then). */
struct httpd_body *httpd_body_new(char *data, size_t len);
const char *httpd_body_data(const struct httpd_body *b, size_t *ret_len);
/* Drops a reference; NULL-safe. */
void httpd_body_put(struct httpd_body *b);
/* httpd_respond with a shared body (the answer takes its own reference). */
int httpd_respond_body(struct httpd_request *req, unsigned status, const char *content_type,
                       struct httpd_body *b);
/* text/plain answer of a NUL-terminated string. */
int httpd_respond_text(struct httpd_request *req, unsigned status, const char *text);
/* application/json {"error":error,"message":message} (both escaped). */
int httpd_respond_error(struct httpd_request *req, unsigned status, const char *error,
                        const char *message);

#endif
