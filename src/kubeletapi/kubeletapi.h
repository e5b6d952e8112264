/* kubeletapi (kla_): the kubelet API of cliqo's virtual nodes and of the node simulator: the
 * HTTPS endpoint an API server calls for `kubectl logs` and `kubectl exec` (and /healthz), on the
 * address and port a node publishes (status.addresses InternalIP, daemonEndpoints.kubeletEndpoint).
 *
 * Why a server of its own (OpenSSL on the libuv loop) rather than src/httpd (libmicrohttpd): the
 * exec route upgrades the connection to SPDY/3.1 and then carries several streams both ways for as
 * long as the command runs, with backpressure in each direction (stop reading one side while the
 * other is slow); logs stream for as long as `-f` follows. libmicrohttpd can upgrade, but over TLS
 * it relays the upgraded bytes through an internal socket pair and buffers of its own whose limits
 * we do not control, it uses a second TLS stack (GnuTLS) beside the OpenSSL that libcurl and our
 * PKI use, and changing its certificate or its client CA (a renewed serving certificate, a rotated
 * cluster CA) means restarting the daemon. Here a listener accepts TCP connections on the caller's
 * loop and runs TLS through memory BIOs: every buffer is ours and bounded, reading stops when a
 * peer is slow, and a new certificate or CA bundle applies to the next connection.
 *
 * Requests, as a kubelet serves them:
 *   GET  /healthz                                   "ok" (no client certificate needed)
 *   GET  /containerLogs/{ns}/{pod}/{container}      ?follow&previous&timestamps&tailLines
 *                                                   &sinceSeconds&sinceTime&limitBytes
 *   GET|POST /exec/{ns}/{pod}[/{uid}]/{container}   ?command=..(repeated)&input=1&output=1
 *                                                   &error=1&tty=1, Upgrade: SPDY/3.1
 * Authentication: the client certificate, verified against the client CA bundle (usage clientAuth);
 * the user is its CN, the groups its O values; without a valid one: 401. Authorisation: as a
 * kubelet, resource nodes, subresource proxy, verb get (GET, HEAD) or create (POST), name = the
 * node of the pod (from the backend); denied: 403. A pod the backend does not know is checked
 * against every node (no name), so that only a caller allowed on all nodes learns it is absent.
 *
 * A backend answers the routes: the node simulator runs its simulated containers, the virtual
 * kubelet relays to the provider cluster (kla_relay, below). Exec over SPDY speaks the
 * remotecommand protocol (X-Stream-Protocol-Version v4.channel.k8s.io, v3, v2; streams error,
 * stdin, stdout, stderr, resize; v4 reports the exit status as a metav1.Status on the error stream:
 * Success, or Failure with reason NonZeroExitCode and a cause ExitCode). WebSocket upgrades are
 * refused with 400 (kubectl then falls back to SPDY).
 *
 * Bounds: connections (total and per client address), the request head (16 KiB, 64 headers), the
 * request body (64 KiB, read and dropped), the TLS handshake and idle times, SPDY frames, header
 * blocks after decompression and streams per connection (spdy.h), and the bytes buffered towards
 * each peer: past a high-water mark a producer is told to wait (kla_resp_writable,
 * kla_exec_writable, the drain callbacks) and the reading side is paused; past a hard limit the
 * connection is closed.
 *
 * Threads: none; everything runs on the loop given to kla_server_new. The program must ignore
 * SIGPIPE (a write to a connection the peer closed then fails with EPIPE instead of killing it).
 * Ownership: strings passed in are copied unless said otherwise; requests and exec sessions belong
 * to the server and stay valid until their `closed` callback has run (or kla_resp_end /
 * kla_exec_finish returned). */
#ifndef CLIQO_KUBELETAPI_H
#define CLIQO_KUBELETAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct kapi_client;
struct kc_config;

#define KLA_MAX_NS        63  /* a namespace: DNS label */
#define KLA_MAX_POD       253 /* a pod name: DNS subdomain */
#define KLA_MAX_CONTAINER 63  /* a container name: DNS label */
#define KLA_MAX_UID       64
#define KLA_MAX_NODE      253
#define KLA_MAX_ARGS      128  /* command words of an exec */
#define KLA_MAX_ARG       4096 /* one word */
#define KLA_MAX_USER      256
#define KLA_MAX_GROUPS    16
#define KLA_RETRY_AFTER_S 5 /* Retry-After of a 503 while a provider's credential is missing */

/* ---- requests: what was asked -------------------------------------------------------------- */

struct kla_pod_ref {
    char ns[KLA_MAX_NS + 1];
    char pod[KLA_MAX_POD + 1];
    char uid[KLA_MAX_UID + 1]; /* "" unless the path names it */
    char container[KLA_MAX_CONTAINER + 1];
};

/* PodLogOptions as the kubelet takes them from the query. */
struct kla_logs_opts {
    bool follow, previous, timestamps;
    int64_t tail_lines;    /* -1: all */
    int64_t since_seconds; /* -1: none */
    int64_t since_time;    /* seconds since the epoch, -1: none */
    char since_time_str[40];
    int64_t limit_bytes; /* -1: none */
};

struct kla_exec_opts {
    char *command[KLA_MAX_ARGS]; /* argv, ncommand >= 1 */
    size_t ncommand;
    bool in, out, err, tty; /* as a kubelet: tty drops err */
};

/* Parse helpers (http.c), exported for tests and for the relay. Return 0 or -EINVAL with a
 * message in err (the kubelet's wording where it has one). */
int kla_logs_opts_parse(const char *query, size_t len, struct kla_logs_opts *ret, char *err,
                        size_t errlen);
int kla_exec_opts_parse(const char *query, size_t len, struct kla_exec_opts *ret, char *err,
                        size_t errlen);
void kla_exec_opts_done(struct kla_exec_opts *o);

/* The authenticated caller. */
struct kla_user {
    char name[KLA_MAX_USER + 1];
    char groups[KLA_MAX_GROUPS][KLA_MAX_USER + 1];
    size_t ngroups;
};

/* ---- authorisation ------------------------------------------------------------------------- */

struct kla_authz_attrs {
    const struct kla_user *user;
    const char *verb;        /* "get" or "create" */
    const char *node;        /* NULL: every node */
    const char *subresource; /* "proxy" */
};

/* decision: 0 allowed, -EPERM denied (reason says why), another negative errno when it could not
 * be decided (the request is then answered 500). */
typedef void (*kla_authz_cb)(int decision, const char *reason, void *data);

/* An authoriser: check() starts a decision and returns 0 (cb will run exactly once, possibly
 * before check returns) with a handle for cancel(), or a negative errno (cb will not run).
 * cancel(handle) guarantees cb will not run. */
struct kla_authorizer {
    int (*check)(void *impl, const struct kla_authz_attrs *a, kla_authz_cb cb, void *cb_data,
                 void **ret_handle);
    void (*cancel)(void *impl, void *handle);
    void *impl;
};

/* The SubjectAccessReview authoriser (sar.c): asks the API server (authorization.k8s.io/v1
 * SubjectAccessReview: user, groups, resourceAttributes {verb, resource nodes, subresource proxy,
 * name}) and caches decisions in a bounded LRU (allowed for allow_ttl, denied for deny_ttl);
 * concurrent identical questions share one review. */
struct kla_sar;
struct kla_sar_options {
    uint64_t allow_ttl_ms; /* default 5 min (the kubelet's) */
    uint64_t deny_ttl_ms;  /* default 30 s */
    size_t max_entries;    /* default 1024 */
    size_t max_pending;    /* reviews in flight; default 64 (more: answered as errors) */
};
/* c is borrowed and must outlive the authoriser. */
int kla_sar_new(struct kapi_client *c, const struct kla_sar_options *o, struct kla_sar **ret);
/* Cancels pending reviews (their callbacks do not run). NULL-safe. */
void kla_sar_free(struct kla_sar *s);
struct kla_authorizer kla_sar_authorizer(struct kla_sar *s);
/* Statistics: reviews sent, cache hits. */
void kla_sar_stats(const struct kla_sar *s, uint64_t *ret_reviews, uint64_t *ret_hits,
                   size_t *ret_entries);
/* The cache key of a question (exported for the unit tests): user, groups, verb, node joined by
 * NUL-safe separators into buf. Returns its length or -ENAMETOOLONG. */
int kla_sar_key(const struct kla_authz_attrs *a, char *buf, size_t size);

/* ---- the server ---------------------------------------------------------------------------- */

struct kla_server;
struct kla_request;
struct kla_exec;

/* What a node implementation provides. */
struct kla_backend {
    /* The node the pod runs on (for authorisation), written to ret_node (KLA_MAX_NODE + 1 bytes).
     * Returns 0, or -ENOENT when the pod is not on a node of this backend. Synchronous. */
    int (*node_of)(void *data, const char *ns, const char *pod, char *ret_node);
    /* GET /containerLogs: answer r with kla_resp_* (now or later). Return 0 once r is taken, or a
     * negative errno to have the server answer (-ENOENT 404, -EINVAL 400, -EAGAIN 503 with
     * Retry-After: the node cannot reach the pod now, else 500). */
    int (*logs)(void *data, struct kla_request *r, const struct kla_pod_ref *ref,
                const struct kla_logs_opts *o);
    /* /exec with an SPDY upgrade: accept it with kla_exec_accept (then the server speaks the
     * remotecommand protocol) or answer r with an error (kla_resp_error); return values as logs. */
    int (*exec)(void *data, struct kla_request *r, const struct kla_pod_ref *ref,
                const struct kla_exec_opts *o);
    void *data;
};

struct kla_server_options {
    const char *addr;            /* listen address HOST:PORT (see netaddr_parse) */
    const char *name;            /* for logs; default "kubelet-api" */
    unsigned max_connections;    /* default 256 */
    unsigned max_per_ip;         /* default 64 */
    uint64_t handshake_ms;       /* TLS handshake; and each request (head and body) from its
                                    first byte, in total; default 10 s */
    uint64_t idle_ms;            /* keep-alive connections without a request; default 60 s */
    uint64_t stream_idle_ms;     /* an exec session without traffic; default 4 h (the kubelet's) */
    uint64_t stream_create_ms;   /* exec: all streams must be created within; default 30 s */
    size_t high_water;           /* bytes buffered towards a peer before producers wait; 256 KiB */
    size_t hard_limit;           /* bytes buffered towards a peer before the connection closes;
                                    default 8 MiB */
    struct kla_backend backend;  /* required */
    struct kla_authorizer authz; /* required */
    /* /healthz: answers "ok" when NULL or when it returns true, else 503 "starting". */
    bool (*healthy)(void *data);
    void *healthy_data;
};

struct kla_server_stats {
    uint64_t connections, tls_failures, unauthenticated, forbidden, requests;
    uint64_t head_timeouts; /* connections closed: a request not received in handshake_ms */
    uint64_t logs, execs;
    size_t open_connections, open_execs;
    size_t peak_queued; /* most bytes ever buffered towards one client (the bound at work) */
};

/* Creates a server (not listening). Returns 0, -EINVAL or -ENOMEM. */
int kla_server_new(uv_loop_t *loop, const struct kla_server_options *o, struct kla_server **ret);
/* Sets the serving certificate (PEM chain, first the leaf) and key, and the client CA bundle (PEM,
 * one or more certificates); any may be NULL to keep the current one. Applies to the connections
 * accepted from now on. Returns 0, or -EINVAL with a message in err (a PEM that does not parse, a
 * key that does not match). */
int kla_server_set_tls(struct kla_server *s, const char *cert_pem, const char *key_pem,
                       const char *client_ca_pem, char *err, size_t errlen);
/* Binds and listens (needs a certificate and a client CA). Returns 0, -EALREADY, -EINVAL (no TLS
 * material, bad address) or the bind error (-EADDRINUSE, -EACCES, -EADDRNOTAVAIL), with err. */
int kla_server_start(struct kla_server *s, char *err, size_t errlen);
bool kla_server_listening(const struct kla_server *s);
uint16_t kla_server_port(const struct kla_server *s);
void kla_server_stats(const struct kla_server *s, struct kla_server_stats *ret);
/* Stops listening, closes every connection (backends get their closed callbacks), and frees the
 * server once the loop has released its handles; then done(data) runs (may be NULL). NULL-safe. */
void kla_server_close(struct kla_server *s, void (*done)(void *data), void *data);

/* ---- answering a request ------------------------------------------------------------------- */

const struct kla_user *kla_req_user(const struct kla_request *r);
/* The raw query string (without '?'), and a request header (first value; NULL when absent). */
const char *kla_req_query(const struct kla_request *r);
const char *kla_req_header(const struct kla_request *r, const char *name);
/* All values of X-Stream-Protocol-Version joined with ", " ("" when none). */
const char *kla_req_stream_protocols(const struct kla_request *r);
/* The client went away before the answer was complete: runs once; the backend must stop using r
 * (it is freed after the callback). */
void kla_req_on_closed(struct kla_request *r, void (*fn)(struct kla_request *r, void *data),
                       void *data);

/* A complete answer with a body. After it r is gone. Returns 0 or a negative errno (r is gone
 * either way). */
int kla_resp_send(struct kla_request *r, unsigned status, const char *content_type,
                  const void *body, size_t len);
/* text/plain error, as the kubelet's http.Error. */
int kla_resp_error(struct kla_request *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A streamed answer (chunked): begin, write..., end. */
int kla_resp_begin(struct kla_request *r, unsigned status, const char *content_type);
/* Queues body bytes; returns 0, -ENOBUFS past the hard limit (the connection is then closed and
 * the closed callback follows) or -EPIPE. Check kla_resp_writable() to pace a stream. */
int kla_resp_write(struct kla_request *r, const void *buf, size_t len);
bool kla_resp_writable(const struct kla_request *r);
/* drain(r, data) runs once the buffered output fell below the low-water mark after
 * kla_resp_writable() said false. */
void kla_resp_on_drain(struct kla_request *r, void (*fn)(struct kla_request *r, void *data),
                       void *data);
/* Ends the body; r is gone after. */
int kla_resp_end(struct kla_request *r);

/* ---- exec sessions (remotecommand, server side) --------------------------------------------- */

enum kla_stream {
    KLA_STREAM_ERROR,
    KLA_STREAM_STDIN,
    KLA_STREAM_STDOUT,
    KLA_STREAM_STDERR,
    KLA_STREAM_RESIZE,
    KLA_STREAM_MAX,
};

struct kla_exec_handlers {
    /* Every stream the options ask for exists: run the command. */
    void (*start)(struct kla_exec *x, void *data);
    /* Input; len 0 is end of input. */
    void (*stdin_data)(struct kla_exec *x, const char *buf, size_t len, void *data);
    void (*resize)(struct kla_exec *x, unsigned width, unsigned height, void *data);
    /* The output fell below the low-water mark after kla_exec_writable() said false. */
    void (*drain)(struct kla_exec *x, void *data);
    /* The session is over (client gone, error, or after kla_exec_finish): forget x. */
    void (*closed)(struct kla_exec *x, void *data);
};

/* Accepts an exec request: negotiates the protocol version (answering 403 with
 * X-Accepted-Stream-Protocol-Versions when none is common), answers 101 Switching Protocols and
 * waits for the client's streams. Returns 0 (r is gone: the session reports through h) or a
 * negative errno (r was answered with an error and is gone). */
int kla_exec_accept(struct kla_request *r, const struct kla_exec_handlers *h, void *data);
const struct kla_exec_opts *kla_exec_options(const struct kla_exec *x);
/* "v4.channel.k8s.io" etc. */
const char *kla_exec_protocol(const struct kla_exec *x);
/* Output on KLA_STREAM_STDOUT or KLA_STREAM_STDERR (a stream the client did not open swallows
 * it). Returns 0, -ENOBUFS (hard limit: the session is closed) or -EPIPE. */
int kla_exec_write(struct kla_exec *x, enum kla_stream s, const void *buf, size_t len);
bool kla_exec_writable(const struct kla_exec *x);
/* Stops (true) or resumes delivering stdin (the connection stops reading meanwhile). */
void kla_exec_pause_input(struct kla_exec *x, bool pause);
/* The command ended: exit_code >= 0 its status; < 0 an internal error with message. Writes the
 * status the protocol version wants on the error stream, closes the streams and the connection
 * (after the output is flushed). closed() follows. */
int kla_exec_finish(struct kla_exec *x, int exit_code, const char *message);

/* ---- the relay (virtual kubelets) ----------------------------------------------------------- */

/* Where a home pod really runs. */
struct kla_target {
    char node[KLA_MAX_NODE + 1]; /* the virtual node the home pod is bound to (authorisation) */
    /* The provider's API: a client (its server and credential are used: bearer token or client
     * certificate, and its CA) or a kubeconfig (used when client is NULL). Borrowed: valid until
     * the resolver is called again or the loop iteration ends; the relay copies what it needs. */
    struct kapi_client *client;
    const struct kc_config *config;
    char ns[KLA_MAX_NS + 1];   /* the remote namespace */
    char pod[KLA_MAX_POD + 1]; /* the remote pod */
};

/* Resolves a home pod ({ns}/{pod} of the request) to its target. Returns 0 with *ret filled,
 * -ENOENT when the pod is not a pod of this relay's nodes (or not offloaded yet), -EAGAIN with
 * only ret->node filled when it is, but its provider cannot be reached without a credential the
 * node does not have (yet). Synchronous. */
typedef int (*kla_resolve_fn)(void *data, const char *ns, const char *pod, struct kla_target *ret);

struct kla_relay;
struct kla_relay_options {
    uint64_t connect_timeout_ms; /* connecting and the upstream's answer head; default 15 s */
    const char *user_agent;      /* default "cliqo-kubelet-relay/<version>" */
};
/* The relay backend: logs are streamed from the provider's pods/{pod}/log as they arrive, exec is
 * opened on the provider's pods/{pod}/exec (an HTTP/1.1 upgrade to SPDY/3.1 with the client's
 * protocol versions and the same command and streams) and, once the provider answered 101, the
 * two upgraded connections are joined byte for byte both ways (stdin, output, resize, the status
 * on the error stream: everything passes unchanged, whatever the version). Errors the provider
 * answers with pass back with their status. resolve may be set later (NULL: every pod is
 * unknown). */
int kla_relay_new(uv_loop_t *loop, const struct kla_relay_options *o, struct kla_relay **ret);
void kla_relay_set_resolver(struct kla_relay *rl, kla_resolve_fn fn, void *data);
/* The backend to give kla_server_new. */
struct kla_backend kla_relay_backend(struct kla_relay *rl);
/* Closes every relayed request. Only after the server that uses it has been closed. NULL-safe. */
void kla_relay_free(struct kla_relay *rl);
void kla_relay_stats(const struct kla_relay *rl, uint64_t *ret_logs, uint64_t *ret_execs,
                     uint64_t *ret_upstream_errors, size_t *ret_open);
/* Client TLS contexts: made (one per provider credential seen), reused (streams that shared one
 * already made) and kept now (at most 32, least recently used out first). */
void kla_relay_tls_stats(const struct kla_relay *rl, uint64_t *ret_made, uint64_t *ret_reused,
                         size_t *ret_kept);

#endif
