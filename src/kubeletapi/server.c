/* kla_server: see kubeletapi.h. How a connection goes:
 *
 *   accept -> TLS (kla_conn) -> HTTP: read a request head (bounded), drop its body (bounded),
 *   route, authenticate (once per connection: the client certificate), ask the backend which node
 *   the pod is on, authorise (asynchronous), hand the request to the backend;
 *   a plain answer (kla_resp_send / _begin _write _end) brings the connection back to HTTP
 *   (keep-alive), an exec upgrade turns it into an SPDY session (EXEC), the relay's upgrade into
 *   a raw pipe (RAW).
 *
 * Everything a connection owns (its request, exec session or raw pipe) is freed from the TLS
 * connection's `closed` callback, after the owner's own closed callback ran. One server-wide timer
 * ticks every second for the exec sessions' stream-creation deadline and for "soon" work (parsing
 * what a client sent while its previous request was answered). */
#include "kubeletapi/conn.h"
#include "kubeletapi/http.h"
#include "kubeletapi/internal.h"
#include "kubeletapi/spdy.h"

#include "common/log.h"
#include "common/netaddr.h"
#include "common/strutil.h"
#include "common/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MOD          "kubelet-api"
#define MAX_BODY     (64u << 10)
#define TICK_MS      1000
#define STATUS_BYTES 2048

enum conn_state {
    CS_HTTP, /* waiting for (the rest of) a request head */
    CS_BODY, /* dropping a request body */
    CS_BUSY, /* a request is being answered */
    CS_EXEC, /* upgraded: SPDY, remotecommand */
    CS_RAW,  /* upgraded: opaque bytes (relay) */
};

struct sconn;

enum req_state { RS_AUTHZ, RS_BACKEND, RS_STREAMING };

struct kla_request {
    struct sconn *sc;
    enum req_state state;
    enum kla_route route;
    struct kla_pod_ref ref;
    char *head; /* a copy of the request head; h points into it */
    struct kla_http_head h;
    char *query;
    char protocols[512];
    char node[KLA_MAX_NODE + 1];
    bool node_known;
    bool post;
    unsigned retry_after; /* seconds, in a Retry-After header of the answer when not 0 */
    void *authz_handle;
    struct kla_logs_opts lo;
    struct kla_exec_opts xo;
    void (*on_closed)(struct kla_request *r, void *data);
    void *closed_data;
    void (*on_drain)(struct kla_request *r, void *data);
    void *drain_data;
    bool want_drain;
};

struct kla_exec {
    struct sconn *sc;
    struct kla_spdy_session *sp;
    struct kla_exec_opts o;
    enum kla_rc_proto proto;
    uint32_t sid[KLA_STREAM_MAX];
    struct sbuf pend[KLA_STREAM_MAX]; /* output held back by the peer's flow-control windows */
    struct kla_exec_handlers h;
    void *hd;
    struct kla_rc_resize rs;
    uint64_t create_deadline;
    bool started, finishing, fin_sent, want_drain, closed_reported;
};

struct kla__raw {
    struct sconn *sc;
    struct kla__raw_ops ops;
    void *d;
};

struct sconn {
    struct kla_server *s;
    struct kla_conn *c;
    struct sconn *prev, *next;
    enum conn_state state;
    struct sbuf in;
    uint64_t body_left;
    /* When the request being received (head and body) must be complete: set by its first bytes,
     * cleared when it is; the idle timeout alone lets a client send a byte every few seconds. */
    uint64_t head_deadline;
    bool authenticated, auth_done;
    struct kla_user user;
    char auth_err[160];
    bool close_after;
    bool soon;       /* parse `in` at the next tick */
    bool authz_sync; /* the authoriser answered before check() returned */
    struct kla_request *req;
    struct kla_exec *x;
    struct kla__raw *raw;
    char ip[46];
};

struct kla_server {
    uv_loop_t *loop;
    struct kla_server_options o;
    char *name, *addr;
    uv_tcp_t tcp;
    uv_timer_t tick;
    bool listening, closing, tcp_inited;
    int open_handles;
    SSL_CTX *ctx;
    X509_STORE *ca_store;
    STACK_OF(X509_NAME) * ca_names;
    char *cert_pem, *key_pem;
    struct sconn *conns;
    size_t nconns;
    struct kla_server_stats st;
    void (*done)(void *data);
    void *done_data;
};

static void parse_input(struct sconn *sc);
static void conn_closed(struct kla_conn *c, int err, void *data);
static void conn_data(struct kla_conn *c, const char *buf, size_t len, void *data);
static void conn_drain(struct kla_conn *c, void *data);

static const struct kla_conn_ops sconn_ops = {
    .data = conn_data, .drain = conn_drain, .closed = conn_closed};

/* ---- responses ----------------------------------------------------------------------------- */

static const char *reason_of(unsigned status)
{
    switch (status) {
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Request Entity Too Large";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Unknown";
    }
}

static bool header_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/* Writes a response head; length < 0: chunked. */
static int write_head(struct sconn *sc, unsigned status, const char *content_type, long long length,
                      const char *extra)
{
    char head[1024];
    int n;

    if (content_type && !header_safe(content_type))
        content_type = "application/octet-stream";
    n = snprintf(head, sizeof(head), "HTTP/1.1 %u %s\r\n%s%s%s%s", status, reason_of(status),
                 content_type ? "Content-Type: " : "", content_type ? content_type : "",
                 content_type ? "\r\n" : "", extra ? extra : "");
    if (n < 0 || (size_t)n >= sizeof(head) - 64)
        return -ENOSPC;
    if (length >= 0)
        n += snprintf(head + n, sizeof(head) - (size_t)n, "Content-Length: %lld\r\n", length);
    else
        n += snprintf(head + n, sizeof(head) - (size_t)n, "Transfer-Encoding: chunked\r\n");
    if (sc->close_after)
        n += snprintf(head + n, sizeof(head) - (size_t)n, "Connection: close\r\n");
    n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
    return kla_conn_write(sc->c, head, (size_t)n);
}

static void request_free(struct kla_request *r)
{
    if (!r)
        return;
    kla_exec_opts_done(&r->xo);
    x_free(r->head);
    x_free(r->query);
    x_free(r);
}

static void arm_tick(struct kla_server *s, uint64_t due);

/* The answer is complete: back to reading requests, or close. */
static void request_done(struct kla_request *r)
{
    struct sconn *sc = r->sc;

    sc->req = NULL;
    request_free(r);
    if (sc->close_after) {
        kla_conn_shutdown(sc->c);
        return;
    }
    sc->state = CS_HTTP;
    kla_conn_set_idle(sc->c, sc->s->o.idle_ms);
    if (sbuf_len(&sc->in) > 0) {
        sc->soon = true;
        arm_tick(sc->s, 0);
    }
}

int kla_resp_send(struct kla_request *r, unsigned status, const char *content_type,
                  const void *body, size_t len)
{
    struct sconn *sc = r->sc;
    bool head = r->h.method_len == 4 && memcmp(r->h.method, "HEAD", 4) == 0;
    char extra[96];
    int e;

    if (r->state == RS_STREAMING)
        return -EALREADY;
    if (r->retry_after)
        snprintf(extra, sizeof(extra), "X-Content-Type-Options: nosniff\r\nRetry-After: %u\r\n",
                 r->retry_after);
    else
        snprintf(extra, sizeof(extra), "X-Content-Type-Options: nosniff\r\n");
    e = write_head(sc, status, content_type, (long long)len, extra);
    if (e == 0 && len && !head)
        e = kla_conn_write(sc->c, body, len);
    if (e < 0) {
        /* The connection is closing: its callback frees the request. */
        kla_conn_close(sc->c, e);
        return e;
    }
    request_done(r);
    return 0;
}

int kla_resp_error(struct kla_request *r, unsigned status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof(msg) - 2)
        n = (int)sizeof(msg) - 2;
    msg[n++] = '\n';
    msg[n] = '\0';
    return kla_resp_send(r, status, "text/plain; charset=utf-8", msg, (size_t)n);
}

int kla_resp_begin(struct kla_request *r, unsigned status, const char *content_type)
{
    int e;

    if (r->state == RS_STREAMING)
        return -EALREADY;
    e = write_head(r->sc, status, content_type, -1, "");
    if (e < 0) {
        kla_conn_close(r->sc->c, e);
        return e;
    }
    r->state = RS_STREAMING;
    return 0;
}

int kla_resp_write(struct kla_request *r, const void *buf, size_t len)
{
    char size[24];
    int n, e;

    if (r->state != RS_STREAMING)
        return -EINVAL;
    if (len == 0)
        return 0;
    n = snprintf(size, sizeof(size), "%zx\r\n", len);
    e = kla_conn_write(r->sc->c, size, (size_t)n);
    if (e == 0)
        e = kla_conn_write(r->sc->c, buf, len);
    if (e == 0)
        e = kla_conn_write(r->sc->c, "\r\n", 2);
    if (e < 0)
        return e;
    if (kla_conn_queued(r->sc->c) > r->sc->s->st.peak_queued)
        r->sc->s->st.peak_queued = kla_conn_queued(r->sc->c);
    if (!kla_conn_writable(r->sc->c))
        r->want_drain = true;
    return 0;
}

bool kla_resp_writable(const struct kla_request *r)
{
    return kla_conn_writable(r->sc->c);
}

void kla_resp_on_drain(struct kla_request *r, void (*fn)(struct kla_request *r, void *data),
                       void *data)
{
    r->on_drain = fn;
    r->drain_data = data;
    if (!kla_conn_writable(r->sc->c))
        r->want_drain = true;
}

int kla_resp_end(struct kla_request *r)
{
    int e;

    if (r->state != RS_STREAMING)
        return -EINVAL;
    e = kla_conn_write(r->sc->c, "0\r\n\r\n", 5);
    if (e < 0)
        return e;
    request_done(r);
    return 0;
}

const struct kla_user *kla_req_user(const struct kla_request *r)
{
    return &r->sc->user;
}

const char *kla_req_query(const struct kla_request *r)
{
    return r->query;
}

const char *kla_req_header(const struct kla_request *r, const char *name)
{
    static char buf[1024]; /* single-threaded: valid until the next call */

    return kla_http_header(&r->h, name, buf, sizeof(buf)) >= 0 ? buf : NULL;
}

const char *kla_req_stream_protocols(const struct kla_request *r)
{
    return r->protocols;
}

void kla_req_on_closed(struct kla_request *r, void (*fn)(struct kla_request *r, void *data),
                       void *data)
{
    r->on_closed = fn;
    r->closed_data = data;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

static void answer_errno(struct kla_request *r, int e)
{
    switch (e) {
    case -ENOENT:
        kla_resp_error(r, 404, "pod %s/%s (container %s) not found", r->ref.ns, r->ref.pod,
                       r->ref.container);
        break;
    case -EINVAL:
        kla_resp_error(r, 400, "bad request");
        break;
    case -EAGAIN:
        /* The pod is this node's, but the provider's credential is not there (yet, or again):
         * a client that retries gets through once the agent has it. */
        r->retry_after = KLA_RETRY_AFTER_S;
        kla_resp_error(r, 503,
                       "pod %s/%s: the credential for its provider is not available yet; retry "
                       "later",
                       r->ref.ns, r->ref.pod);
        break;
    default:
        kla_resp_error(r, 500, "internal error: %s", strerror(-e));
        break;
    }
}

/* The request is authorised: check its options (as the kubelet's handlers do, after its filters),
 * then hand it to the backend. */
static void run_backend(struct kla_request *r)
{
    struct kla_server *s = r->sc->s;
    size_t qlen = strlen(r->query);
    char err[256];
    int e;

    r->state = RS_BACKEND;
    if (r->route == KLA_ROUTE_LOGS) {
        if (kla_logs_opts_parse(r->query, qlen, &r->lo, err, sizeof(err)) < 0) {
            kla_resp_error(r, 400, "%s", err);
            return;
        }
    } else {
        if (kla_http_has_token(&r->h, "Upgrade", "websocket")) {
            kla_resp_error(r, 400, "websocket upgrades are not supported here: use SPDY/3.1");
            return;
        }
        if (!kla_http_has_token(&r->h, "Connection", "upgrade") ||
            !kla_http_has_token(&r->h, "Upgrade", "SPDY/3.1")) {
            kla_resp_error(r, 400, "unable to upgrade: missing upgrade headers in request");
            return;
        }
        if (kla_exec_opts_parse(r->query, qlen, &r->xo, err, sizeof(err)) < 0) {
            kla_resp_error(r, 400, "%s", err);
            return;
        }
        if (kla_http_join(&r->h, "X-Stream-Protocol-Version", r->protocols, sizeof(r->protocols)) <
            0) {
            kla_resp_error(r, 400, "X-Stream-Protocol-Version is too long");
            return;
        }
    }

    if (!r->node_known) {
        kla_resp_error(r, 404, "pod \"%s/%s\" not found", r->ref.ns, r->ref.pod);
        return;
    }
    if (r->route == KLA_ROUTE_LOGS) {
        s->st.logs++;
        kla_conn_set_idle(r->sc->c, 0); /* `-f` may be quiet for a long time */
        e = s->o.backend.logs(s->o.backend.data, r, &r->ref, &r->lo);
    } else {
        s->st.execs++;
        e = s->o.backend.exec(s->o.backend.data, r, &r->ref, &r->xo);
    }
    if (e < 0)
        answer_errno(r, e);
}

static void authz_done(int decision, const char *reason, void *data)
{
    struct kla_request *r = data;
    const struct kla_user *u = &r->sc->user;

    r->authz_handle = NULL;
    r->sc->authz_sync = true;
    if (decision == 0) {
        run_backend(r);
        return;
    }
    if (decision == -EPERM) {
        r->sc->s->st.forbidden++;
        log_debug(MOD, "forbidden: user %s, node %s: %s", u->name,
                  r->node_known ? r->node : "(all)", reason ? reason : "");
        kla_resp_error(r, 403, "Forbidden (user=%s, verb=%s, resource=nodes, subresource=proxy)",
                       u->name, r->post ? "create" : "get");
        return;
    }
    kla_resp_error(r, 500,
                   "Authorization error (user=%s, verb=%s, resource=nodes, "
                   "subresource=proxy): %s",
                   u->name, r->post ? "create" : "get", reason ? reason : strerror(-decision));
}

static bool method_is(const struct kla_http_head *h, const char *m)
{
    return h->method_len == strlen(m) && memcmp(h->method, m, h->method_len) == 0;
}

static void authenticate_conn(struct sconn *sc)
{
    struct kla_server *s = sc->s;
    int e;

    if (sc->auth_done)
        return;
    sc->auth_done = true;
    e = kla__authenticate(s->ca_store, kla_conn_peer_cert(sc->c), kla_conn_peer_chain(sc->c),
                          &sc->user, sc->auth_err, sizeof(sc->auth_err));
    sc->authenticated = e == 0;
}

static void dispatch(struct sconn *sc, struct kla_request *r)
{
    struct kla_server *s = sc->s;
    const char *path, *query;
    size_t plen, qlen;
    struct kla_authz_attrs a;
    int e;

    s->st.requests++;
    kla_target_split(r->h.target, r->h.target_len, &path, &plen, &query, &qlen);
    r->query = x_strndup(query, qlen);
    if (!r->query) {
        kla_conn_close(sc->c, -ENOMEM);
        return;
    }
    e = kla_route_parse(path, plen, &r->route, &r->ref);
    if (e == -ENOENT) {
        kla_resp_error(r, 404, "404 page not found");
        return;
    }
    if (e < 0) {
        kla_resp_error(r, 400, "invalid namespace, pod or container name in the path");
        return;
    }
    if (r->route == KLA_ROUTE_HEALTHZ) {
        bool ok;

        if (!method_is(&r->h, "GET") && !method_is(&r->h, "HEAD")) {
            kla_resp_error(r, 405, "Method Not Allowed");
            return;
        }
        ok = !s->o.healthy || s->o.healthy(s->o.healthy_data);
        kla_resp_send(r, ok ? 200 : 503, "text/plain; charset=utf-8", ok ? "ok" : "starting",
                      ok ? 2 : 8);
        return;
    }
    r->post = method_is(&r->h, "POST");
    if ((r->route == KLA_ROUTE_LOGS && !method_is(&r->h, "GET")) ||
        (r->route == KLA_ROUTE_EXEC && !method_is(&r->h, "GET") && !r->post)) {
        kla_resp_error(r, 405, "Method Not Allowed");
        return;
    }
    authenticate_conn(sc);
    if (!sc->authenticated) {
        s->st.unauthenticated++;
        log_debug(MOD, "unauthenticated request from %s: %s", sc->ip, sc->auth_err);
        kla_resp_error(r, 401, "Unauthorized");
        return;
    }
    e = s->o.backend.node_of(s->o.backend.data, r->ref.ns, r->ref.pod, r->node);
    r->node_known = e == 0 && r->node[0];
    a = (struct kla_authz_attrs){.user = &sc->user,
                                 .verb = r->post ? "create" : "get",
                                 .node = r->node_known ? r->node : NULL,
                                 .subresource = "proxy"};
    r->state = RS_AUTHZ;
    sc->authz_sync = false;
    {
        void *handle = NULL;

        /* The decision may come at once (a cached one) and the answer with it, freeing r. */
        e = s->o.authz.check(s->o.authz.impl, &a, authz_done, r, &handle);
        if (e < 0)
            kla_resp_error(r, 500, "authorization failed: %s", strerror(-e));
        else if (!sc->authz_sync)
            r->authz_handle = handle;
    }
}

/* Parses what is buffered: a request head, then its body to drop. */
static void parse_input(struct sconn *sc)
{
    while (!kla_conn_closing(sc->c) && (sc->state == CS_HTTP || sc->state == CS_BODY)) {
        struct kla_http_head h;
        struct kla_request *r;
        uint64_t cl = 0;
        int e;

        if (sc->state == CS_BODY) {
            size_t drop = sbuf_len(&sc->in) < sc->body_left ? sbuf_len(&sc->in) : sc->body_left;
            struct sbuf rest;

            sc->body_left -= drop;
            sbuf_init(&rest, KLA_HTTP_MAX_HEAD + MAX_BODY);
            if (sbuf_len(&sc->in) > drop &&
                sbuf_add(&rest, sbuf_str(&sc->in) + drop, sbuf_len(&sc->in) - drop) < 0) {
                kla_conn_close(sc->c, -ENOMEM);
                return;
            }
            sbuf_done(&sc->in);
            sc->in = rest;
            if (sc->body_left > 0)
                return;
            sc->state = CS_BUSY;
            sc->head_deadline = 0;
            kla_conn_set_idle(sc->c, 0);
            dispatch(sc, sc->req);
            return;
        }
        if (sbuf_len(&sc->in) == 0)
            return;
        e = kla_http_parse_request(sbuf_str(&sc->in), sbuf_len(&sc->in), &h);
        if (e == -EAGAIN)
            return;
        r = x_calloc(1, sizeof(*r));
        if (!r) {
            kla_conn_close(sc->c, -ENOMEM);
            return;
        }
        r->sc = sc;
        sc->req = r;
        sc->state = CS_BUSY;
        sc->head_deadline = 0;
        if (e < 0) {
            /* Answer on a minimal request object, then close. */
            sc->close_after = true;
            r->h.method = "GET";
            r->h.method_len = 3;
            kla_resp_error(r, e == -E2BIG ? 431 : 400,
                           e == -E2BIG ? "request head too large" : "malformed request");
            return;
        }
        r->head = x_malloc(h.head_len + 1);
        if (!r->head) {
            kla_conn_close(sc->c, -ENOMEM);
            return;
        }
        memcpy(r->head, sbuf_str(&sc->in), h.head_len);
        r->head[h.head_len] = '\0';
        /* Re-parse on the copy so that the head outlives the input buffer. */
        (void)kla_http_parse_request(r->head, h.head_len, &r->h);
        {
            struct sbuf rest;

            sbuf_init(&rest, KLA_HTTP_MAX_HEAD + MAX_BODY);
            if (sbuf_len(&sc->in) > h.head_len && sbuf_add(&rest, sbuf_str(&sc->in) + h.head_len,
                                                           sbuf_len(&sc->in) - h.head_len) < 0) {
                kla_conn_close(sc->c, -ENOMEM);
                return;
            }
            sbuf_done(&sc->in);
            sc->in = rest;
        }
        if (r->h.minor == 0 || kla_http_has_token(&r->h, "Connection", "close"))
            sc->close_after = true;
        if (kla_http_header(&r->h, "Transfer-Encoding", (char[8]){0}, 8) != -ENOENT) {
            sc->close_after = true;
            kla_resp_error(r, 501, "request bodies with a transfer encoding are not supported");
            return;
        }
        e = kla_http_content_length(&r->h, &cl);
        if (e == -EINVAL || cl > MAX_BODY) {
            sc->close_after = true;
            kla_resp_error(r, e == -EINVAL ? 400 : 413,
                           e == -EINVAL ? "bad Content-Length" : "request body too large");
            return;
        }
        sc->body_left = e == 0 ? cl : 0;
        sc->state = CS_BODY;
    }
}

/* ---- exec sessions ------------------------------------------------------------------------- */

static bool exec_streams_ready(const struct kla_exec *x)
{
    if (!x->sid[KLA_STREAM_ERROR])
        return false;
    if (x->o.in && !x->sid[KLA_STREAM_STDIN])
        return false;
    if (x->o.out && !x->sid[KLA_STREAM_STDOUT])
        return false;
    if (x->o.err && !x->sid[KLA_STREAM_STDERR])
        return false;
    if (x->o.tty && x->proto >= KLA_RC_V3 && !x->sid[KLA_STREAM_RESIZE])
        return false;
    return true;
}

static size_t exec_pending(const struct kla_exec *x)
{
    size_t n = 0;

    for (int i = 0; i < KLA_STREAM_MAX; i++)
        n += sbuf_len(&x->pend[i]);
    return n;
}

/* Sends what flow control held back, then, when finishing, closes the streams and the session. */
static void exec_flush(struct kla_exec *x)
{
    struct sconn *sc = x->sc;

    for (int i = 0; i < KLA_STREAM_MAX && !kla_conn_closing(sc->c); i++) {
        struct sbuf *b = &x->pend[i];
        int n;

        if (sbuf_len(b) == 0)
            continue;
        n = kla_spdy_data(x->sp, x->sid[i], sbuf_str(b), sbuf_len(b), false);
        if (n < 0) {
            sbuf_done(b);
            sbuf_init(b, sc->s->o.hard_limit);
            continue;
        }
        if ((size_t)n == sbuf_len(b)) {
            sbuf_done(b);
            sbuf_init(b, sc->s->o.hard_limit);
        } else if (n > 0) {
            struct sbuf rest;

            sbuf_init(&rest, sc->s->o.hard_limit);
            (void)sbuf_add(&rest, sbuf_str(b) + n, sbuf_len(b) - (size_t)n);
            sbuf_done(b);
            *b = rest;
        }
    }
    if (kla_conn_closing(sc->c))
        return;
    if (x->finishing && !x->fin_sent && exec_pending(x) == 0) {
        x->fin_sent = true;
        for (int i = 0; i < KLA_STREAM_MAX; i++)
            if (x->sid[i] && kla_spdy_stream_open(x->sp, x->sid[i]))
                (void)kla_spdy_data(x->sp, x->sid[i], "", 0, true);
        (void)kla_spdy_goaway(x->sp, KLA_SPDY_GOAWAY_OK);
        kla_conn_shutdown(sc->c);
        return;
    }
    if (x->want_drain && !x->finishing && kla_exec_writable(x)) {
        x->want_drain = false;
        if (x->h.drain)
            x->h.drain(x, x->hd);
    }
}

static int sp_output(void *data, const uint8_t *buf, size_t len)
{
    struct kla_exec *x = data;

    return kla_conn_write(x->sc->c, buf, len);
}

static int sp_syn_stream(void *data, uint32_t id, const struct kla_spdy_headers *h, bool fin)
{
    struct kla_exec *x = data;
    struct kla_spdy_headers none = {.n = 0};
    char type[16];
    enum kla_stream t = KLA_STREAM_MAX;

    (void)fin;
    if (kla_spdy_header_get(h, "streamtype", type, sizeof(type)) >= 0)
        t = kla_rc_stream_type(type);
    if (x->started || (t < KLA_STREAM_MAX && x->sid[t])) {
        /* Streams after the start, or a second stream of one type: refused. */
        return kla_spdy_rst(x->sp, id, KLA_SPDY_REFUSED_STREAM) == -EPIPE ? -EPIPE : 0;
    }
    if (kla_spdy_syn_reply(x->sp, id, &none, false) < 0)
        return -EPIPE;
    if (t == KLA_STREAM_MAX)
        return 0; /* replied but unused, as a kubelet does */
    x->sid[t] = id;
    if (exec_streams_ready(x)) {
        x->started = true;
        kla_conn_set_idle(x->sc->c, x->sc->s->o.stream_idle_ms);
        if (x->h.start)
            x->h.start(x, x->hd);
    }
    return 0;
}

static void on_resize(void *data, unsigned w, unsigned h)
{
    struct kla_exec *x = data;

    if (x->h.resize && !x->finishing)
        x->h.resize(x, w, h, x->hd);
}

static int sp_data(void *data, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
    struct kla_exec *x = data;

    (void)kla_spdy_consumed(x->sp, id, len);
    if (x->finishing || !x->started)
        return 0;
    if (id == x->sid[KLA_STREAM_STDIN]) {
        if (len && x->h.stdin_data)
            x->h.stdin_data(x, (const char *)buf, len, x->hd);
        if (fin && x->h.stdin_data && !x->finishing)
            x->h.stdin_data(x, "", 0, x->hd);
    } else if (id == x->sid[KLA_STREAM_RESIZE] && len) {
        if (kla_rc_resize_feed(&x->rs, (const char *)buf, len, on_resize, x) < 0)
            return kla_spdy_rst(x->sp, id, KLA_SPDY_PROTOCOL_ERROR) == -EPIPE ? -EPIPE : 0;
    }
    return 0;
}

static void sp_rst(void *data, uint32_t id, uint32_t status)
{
    struct kla_exec *x = data;

    (void)status;
    /* The client reset its stdin: end of input. Other resets: the stream is gone. */
    for (int i = 0; i < KLA_STREAM_MAX; i++) {
        if (x->sid[i] != id)
            continue;
        if (i == KLA_STREAM_STDIN && x->started && !x->finishing && x->h.stdin_data)
            x->h.stdin_data(x, "", 0, x->hd);
    }
}

static void sp_window(void *data, uint32_t id)
{
    (void)id;
    exec_flush(data);
}

static const struct kla_spdy_callbacks exec_spdy_cb = {
    .output = sp_output,
    .syn_stream = sp_syn_stream,
    .data = sp_data,
    .rst = sp_rst,
    .window = sp_window,
};

static void exec_free(struct kla_exec *x)
{
    if (!x)
        return;
    kla_spdy_session_free(x->sp);
    for (int i = 0; i < KLA_STREAM_MAX; i++)
        sbuf_done(&x->pend[i]);
    kla_exec_opts_done(&x->o);
    x_free(x);
}

int kla_exec_accept(struct kla_request *r, const struct kla_exec_handlers *h, void *data)
{
    struct sconn *sc = r->sc;
    struct kla_server *s = sc->s;
    enum kla_rc_proto p;
    struct kla_exec *x;
    char head[512];
    int n, e;

    if (!r->protocols[0]) {
        kla_resp_error(r, 400, "unable to upgrade: X-Stream-Protocol-Version is required");
        return -EINVAL;
    }
    p = kla_rc_negotiate(r->protocols);
    if (p == KLA_RC_NONE) {
        char msg[800];

        snprintf(msg, sizeof(msg),
                 "unable to upgrade: unable to negotiate protocol: client supports [%s], server "
                 "accepts [v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io]\n",
                 r->protocols);
        n = write_head(sc, 403, "text/plain; charset=utf-8", (long long)strlen(msg),
                       "X-Accepted-Stream-Protocol-Versions: v4.channel.k8s.io\r\n"
                       "X-Accepted-Stream-Protocol-Versions: v3.channel.k8s.io\r\n"
                       "X-Accepted-Stream-Protocol-Versions: v2.channel.k8s.io\r\n");
        if (n == 0)
            n = kla_conn_write(sc->c, msg, strlen(msg));
        if (n < 0) {
            kla_conn_close(sc->c, n);
            return -EPROTO;
        }
        request_done(r);
        return -EPROTO;
    }
    x = x_calloc(1, sizeof(*x));
    if (!x) {
        kla_resp_error(r, 500, "out of memory");
        return -ENOMEM;
    }
    x->sc = sc;
    x->proto = p;
    x->h = *h;
    x->hd = data;
    x->o = r->xo;
    memset(&r->xo, 0, sizeof(r->xo)); /* the command moves to the session */
    for (int i = 0; i < KLA_STREAM_MAX; i++)
        sbuf_init(&x->pend[i], s->o.hard_limit);
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                 "X-Stream-Protocol-Version: %s\r\n\r\n",
                 kla_rc_proto_name(p));
    e = kla_conn_write(sc->c, head, (size_t)n);
    if (e < 0) {
        exec_free(x);
        kla_conn_close(sc->c, e);
        return e;
    }
    /* From here on the connection is the session's: r is gone. */
    sc->req = NULL;
    request_free(r);
    sc->state = CS_EXEC;
    sc->x = x;
    s->st.open_execs++;
    e = kla_spdy_session_new(true, NULL, &exec_spdy_cb, x, &x->sp);
    if (e < 0) {
        kla_conn_close(sc->c, e);
        return 0; /* the closed callback reports it */
    }
    x->create_deadline = uv_now(s->loop) + s->o.stream_create_ms;
    arm_tick(s, TICK_MS);
    kla_conn_set_idle(sc->c, 0);
    if (sbuf_len(&sc->in) > 0) {
        sc->soon = true;
        arm_tick(s, 0);
    }
    return 0;
}

const struct kla_exec_opts *kla_exec_options(const struct kla_exec *x)
{
    return &x->o;
}

const char *kla_exec_protocol(const struct kla_exec *x)
{
    return kla_rc_proto_name(x->proto);
}

int kla_exec_write(struct kla_exec *x, enum kla_stream s, const void *buf, size_t len)
{
    struct sbuf *b;
    int n;

    if (x->finishing || kla_conn_closing(x->sc->c))
        return -EPIPE;
    if (s != KLA_STREAM_STDOUT && s != KLA_STREAM_STDERR)
        return -EINVAL;
    if (!x->sid[s] || len == 0)
        return 0;
    b = &x->pend[s];
    if (exec_pending(x) + len > x->sc->s->o.hard_limit) {
        kla_conn_close(x->sc->c, -ENOBUFS);
        return -ENOBUFS;
    }
    n = 0;
    if (sbuf_len(b) == 0) {
        n = kla_spdy_data(x->sp, x->sid[s], buf, len, false);
        if (n < 0)
            return n == -ENOENT ? 0 : n; /* a stream the client reset swallows output */
    }
    if ((size_t)n < len && sbuf_add(b, (const char *)buf + n, len - (size_t)n) < 0) {
        kla_conn_close(x->sc->c, -ENOBUFS);
        return -ENOBUFS;
    }
    if (kla_conn_queued(x->sc->c) + exec_pending(x) > x->sc->s->st.peak_queued)
        x->sc->s->st.peak_queued = kla_conn_queued(x->sc->c) + exec_pending(x);
    if (!kla_exec_writable(x))
        x->want_drain = true;
    return 0;
}

bool kla_exec_writable(const struct kla_exec *x)
{
    return !x->finishing && kla_conn_writable(x->sc->c) &&
           exec_pending(x) <= x->sc->s->o.high_water;
}

void kla_exec_pause_input(struct kla_exec *x, bool pause)
{
    if (!kla_conn_closing(x->sc->c))
        kla_conn_pause(x->sc->c, pause);
}

int kla_exec_finish(struct kla_exec *x, int exit_code, const char *message)
{
    char status[STATUS_BYTES];
    int n;

    if (x->finishing)
        return -EALREADY;
    if (kla_conn_closing(x->sc->c))
        return -EPIPE;
    n = kla_rc_status(x->proto, exit_code, message, status, sizeof(status));
    if (n < 0)
        n = kla_rc_status(x->proto, -1, "status too long", status, sizeof(status));
    x->finishing = true;
    kla_conn_pause(x->sc->c, false); /* read on: a client's last frames, then its close */
    if (n > 0 && x->sid[KLA_STREAM_ERROR] &&
        sbuf_add(&x->pend[KLA_STREAM_ERROR], status, (size_t)n) < 0) {
        kla_conn_close(x->sc->c, -ENOBUFS);
        return -ENOBUFS;
    }
    exec_flush(x);
    return 0;
}

/* ---- raw pipes ----------------------------------------------------------------------------- */

int kla__upgrade_raw(struct kla_request *r, const char *protocol, const struct kla__raw_ops *ops,
                     void *d, struct kla__raw **ret)
{
    struct sconn *sc = r->sc;
    struct kla__raw *x;
    char head[640];
    int n, e;

    if (protocol && (strlen(protocol) > 256 || !header_safe(protocol))) {
        kla_resp_error(r, 502, "the provider answered an invalid protocol version");
        return -EPROTO;
    }
    x = x_calloc(1, sizeof(*x));
    if (!x) {
        kla_resp_error(r, 500, "out of memory");
        return -ENOMEM;
    }
    x->sc = sc;
    x->ops = *ops;
    x->d = d;
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                 "%s%s%s\r\n",
                 protocol && *protocol ? "X-Stream-Protocol-Version: " : "",
                 protocol && *protocol ? protocol : "", protocol && *protocol ? "\r\n" : "");
    e = kla_conn_write(sc->c, head, (size_t)n);
    if (e < 0) {
        x_free(x);
        kla_conn_close(sc->c, e);
        return e;
    }
    sc->req = NULL;
    request_free(r);
    sc->state = CS_RAW;
    sc->raw = x;
    sc->s->st.open_execs++;
    kla_conn_set_idle(sc->c, sc->s->o.stream_idle_ms);
    if (sbuf_len(&sc->in) > 0) {
        sc->soon = true;
        arm_tick(sc->s, 0);
    }
    *ret = x;
    return 0;
}

int kla__raw_write(struct kla__raw *x, const void *buf, size_t len)
{
    return kla_conn_write(x->sc->c, buf, len);
}

bool kla__raw_writable(const struct kla__raw *x)
{
    return kla_conn_writable(x->sc->c);
}

void kla__raw_pause(struct kla__raw *x, bool pause)
{
    kla_conn_pause(x->sc->c, pause);
}

void kla__raw_shutdown(struct kla__raw *x)
{
    kla_conn_shutdown(x->sc->c);
}

/* ---- connections --------------------------------------------------------------------------- */

static void conn_data(struct kla_conn *c, const char *buf, size_t len, void *data)
{
    struct sconn *sc = data;

    (void)c;
    switch (sc->state) {
    case CS_EXEC:
        if (len == 0) {
            kla_conn_shutdown(sc->c);
            return;
        }
        if (kla_spdy_feed(sc->x->sp, (const uint8_t *)buf, len) < 0)
            kla_conn_shutdown(sc->c); /* the GOAWAY is queued */
        return;
    case CS_RAW:
        sc->raw->ops.data(sc->raw->d, buf, len);
        return;
    case CS_BUSY:
        if (len == 0) {
            /* HTTP clients do not half-close: the client is gone. */
            kla_conn_close(sc->c, -ECONNRESET);
            return;
        }
        if (sbuf_add(&sc->in, buf, len) < 0)
            kla_conn_close(sc->c, -ENOBUFS);
        return;
    case CS_HTTP:
    case CS_BODY:
        if (len == 0) {
            kla_conn_shutdown(sc->c);
            return;
        }
        if (sc->head_deadline == 0) {
            sc->head_deadline = uv_now(sc->s->loop) + sc->s->o.handshake_ms;
            arm_tick(sc->s, sc->s->o.handshake_ms);
        }
        if (sbuf_add(&sc->in, buf, len) < 0) {
            kla_conn_close(sc->c, -ENOBUFS);
            return;
        }
        parse_input(sc);
        return;
    }
}

static void conn_drain(struct kla_conn *c, void *data)
{
    struct sconn *sc = data;

    (void)c;
    if (sc->state == CS_BUSY && sc->req && sc->req->want_drain && sc->req->on_drain) {
        sc->req->want_drain = false;
        sc->req->on_drain(sc->req, sc->req->drain_data);
    } else if (sc->state == CS_EXEC) {
        exec_flush(sc->x);
    } else if (sc->state == CS_RAW && sc->raw->ops.drain) {
        sc->raw->ops.drain(sc->raw->d);
    }
}

static void maybe_free_server(struct kla_server *s);

static void conn_closed(struct kla_conn *c, int err, void *data)
{
    struct sconn *sc = data;
    struct kla_server *s = sc->s;

    (void)c;
    if (sc->req) {
        struct kla_request *r = sc->req;

        if (r->authz_handle)
            s->o.authz.cancel(s->o.authz.impl, r->authz_handle);
        if (r->on_closed)
            r->on_closed(r, r->closed_data);
        request_free(r);
    }
    if (sc->x) {
        s->st.open_execs--;
        if (sc->x->h.closed)
            sc->x->h.closed(sc->x, sc->x->hd);
        exec_free(sc->x);
    }
    if (sc->raw) {
        s->st.open_execs--;
        sc->raw->ops.closed(sc->raw->d, err);
        x_free(sc->raw);
    }
    if (err == -EPROTO && !sc->auth_done)
        s->st.tls_failures++;
    if (sc->prev)
        sc->prev->next = sc->next;
    else
        s->conns = sc->next;
    if (sc->next)
        sc->next->prev = sc->prev;
    s->nconns--;
    sbuf_done(&sc->in);
    x_free(sc);
    maybe_free_server(s);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct kla_server *s = server->data;
    struct kla_conn_limits lim;
    struct sconn *sc;
    size_t same_ip = 0;

    if (status < 0 || s->closing)
        return;
    sc = x_calloc(1, sizeof(*sc));
    if (!sc)
        return;
    sc->s = s;
    sbuf_init(&sc->in, KLA_HTTP_MAX_HEAD + MAX_BODY);
    lim = (struct kla_conn_limits){.high_water = s->o.high_water,
                                   .hard_limit = s->o.hard_limit,
                                   .handshake_ms = s->o.handshake_ms,
                                   .idle_ms = s->o.handshake_ms};
    if (kla_conn_accept(server, s->ctx, &lim, &sconn_ops, sc, &sc->c) < 0) {
        x_free(sc);
        return;
    }
    snprintf(sc->ip, sizeof(sc->ip), "%s", kla_conn_peer_ip(sc->c));
    sc->next = s->conns;
    if (s->conns)
        s->conns->prev = sc;
    s->conns = sc;
    s->nconns++;
    s->st.connections++;
    for (struct sconn *o = s->conns; o; o = o->next)
        if (strcmp(o->ip, sc->ip) == 0)
            same_ip++;
    if (s->nconns > s->o.max_connections || same_ip > s->o.max_per_ip)
        kla_conn_close(sc->c, -EMFILE);
}

/* ---- the tick ------------------------------------------------------------------------------ */

static void on_tick(uv_timer_t *t)
{
    struct kla_server *s = t->data;
    uint64_t now = uv_now(s->loop);
    bool any_exec = false;

    for (struct sconn *sc = s->conns, *next; sc; sc = next) {
        next = sc->next;
        if (kla_conn_closing(sc->c))
            continue;
        if ((sc->state == CS_HTTP || sc->state == CS_BODY) && sc->head_deadline) {
            if (now >= sc->head_deadline) {
                log_debug(MOD, "%s: request not received within %llu ms, closing", sc->ip,
                          (unsigned long long)s->o.handshake_ms);
                s->st.head_timeouts++;
                kla_conn_close(sc->c, -ETIMEDOUT);
                continue;
            }
            any_exec = true; /* keep ticking */
        }
        if (sc->soon) {
            sc->soon = false;
            if (sc->state == CS_HTTP || sc->state == CS_BODY) {
                parse_input(sc);
            } else if ((sc->state == CS_EXEC || sc->state == CS_RAW) && sbuf_len(&sc->in) > 0) {
                /* Bytes that followed the upgrade request in the same read. */
                struct sbuf in = sc->in;

                sbuf_init(&sc->in, KLA_HTTP_MAX_HEAD + MAX_BODY);
                conn_data(sc->c, sbuf_str(&in), sbuf_len(&in), sc);
                sbuf_done(&in);
            }
        }
        if (sc->state == CS_EXEC && !sc->x->started) {
            any_exec = true;
            if (now >= sc->x->create_deadline) {
                log_debug(MOD, "exec from %s: streams not created in time", sc->ip);
                kla_conn_close(sc->c, -ETIMEDOUT);
            }
        }
    }
    if (any_exec)
        arm_tick(s, TICK_MS);
}

static void arm_tick(struct kla_server *s, uint64_t due)
{
    if (s->closing)
        return;
    if (uv_is_active((uv_handle_t *)&s->tick) && due > 0 && uv_timer_get_due_in(&s->tick) <= due)
        return;
    uv_timer_start(&s->tick, on_tick, due, 0);
}

/* ---- the server ---------------------------------------------------------------------------- */

int kla_server_new(uv_loop_t *loop, const struct kla_server_options *o, struct kla_server **ret)
{
    struct kla_server *s;
    struct sockaddr_storage ss;
    socklen_t sl;

    if (!loop || !o || !o->addr || !o->backend.node_of || !o->backend.logs || !o->backend.exec ||
        !o->authz.check || !o->authz.cancel || !ret)
        return -EINVAL;
    if (netaddr_parse(o->addr, &ss, &sl) < 0)
        return -EINVAL;
    s = x_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->loop = loop;
    s->o = *o;
    s->name = x_strdup(o->name ? o->name : "kubelet-api");
    s->addr = x_strdup(o->addr);
    if (!s->name || !s->addr) {
        x_free(s->name);
        x_free(s->addr);
        x_free(s);
        return -ENOMEM;
    }
    s->o.name = s->name;
    s->o.addr = s->addr;
    if (!s->o.max_connections)
        s->o.max_connections = 256;
    if (!s->o.max_per_ip)
        s->o.max_per_ip = 64;
    if (!s->o.handshake_ms)
        s->o.handshake_ms = 10000;
    if (!s->o.idle_ms)
        s->o.idle_ms = 60000;
    if (!s->o.stream_idle_ms)
        s->o.stream_idle_ms = 4ull * 3600 * 1000;
    if (!s->o.stream_create_ms)
        s->o.stream_create_ms = 30000;
    if (!s->o.high_water)
        s->o.high_water = 256u << 10;
    if (!s->o.hard_limit)
        s->o.hard_limit = 8u << 20;
    uv_timer_init(loop, &s->tick);
    s->tick.data = s;
    s->open_handles = 1;
    *ret = s;
    return 0;
}

int kla_server_set_tls(struct kla_server *s, const char *cert_pem, const char *key_pem,
                       const char *client_ca_pem, char *err, size_t errlen)
{
    X509_STORE *store = NULL;
    STACK_OF(X509_NAME) *names = NULL;
    SSL_CTX *ctx = NULL;
    char *cert = NULL, *key = NULL;
    int r;

    if (err && errlen)
        err[0] = '\0';
    if (client_ca_pem) {
        r = kla__tls_ca_store(client_ca_pem, &store, &names, err, errlen);
        if (r < 0)
            return r;
    }
    if (!cert_pem != !key_pem) {
        if (err && errlen)
            snprintf(err, errlen, "the serving certificate and key go together");
        r = -EINVAL;
        goto fail;
    }
    cert = x_strdup(cert_pem ? cert_pem : s->cert_pem ? s->cert_pem : "");
    key = x_strdup(key_pem ? key_pem : s->key_pem ? s->key_pem : "");
    if (!cert || !key) {
        r = -ENOMEM;
        goto fail;
    }
    if (cert[0]) {
        r = kla__tls_server_ctx(cert, key, store ? store : s->ca_store, names ? names : s->ca_names,
                                &ctx, err, errlen);
        if (r < 0)
            goto fail;
    }
    if (store) {
        X509_STORE_free(s->ca_store);
        sk_X509_NAME_pop_free(s->ca_names, X509_NAME_free);
        s->ca_store = store;
        s->ca_names = names;
    }
    if (ctx) {
        SSL_CTX_free(s->ctx); /* connections keep their reference */
        s->ctx = ctx;
    }
    if (s->key_pem)
        OPENSSL_cleanse(s->key_pem, strlen(s->key_pem));
    x_free(s->cert_pem);
    x_free(s->key_pem);
    s->cert_pem = cert;
    s->key_pem = key;
    return 0;
fail:
    X509_STORE_free(store);
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    if (key)
        OPENSSL_cleanse(key, strlen(key));
    x_free(cert);
    x_free(key);
    return r;
}

int kla_server_start(struct kla_server *s, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int r;

    if (err && errlen)
        err[0] = '\0';
    if (s->listening)
        return -EALREADY;
    if (!s->ctx || !s->ca_store) {
        if (err && errlen)
            snprintf(err, errlen, "no serving certificate or client CA yet");
        return -EINVAL;
    }
    if (netaddr_parse(s->addr, &ss, &sl) < 0)
        return -EINVAL;
    if (!s->tcp_inited) {
        uv_tcp_init(s->loop, &s->tcp);
        s->tcp.data = s;
        s->tcp_inited = true;
        s->open_handles++;
    }
    r = uv_tcp_bind(&s->tcp, (const struct sockaddr *)&ss, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)&s->tcp, 128, on_connection);
    if (r < 0) {
        if (err && errlen)
            snprintf(err, errlen, "cannot listen on %s: %s", s->addr, uv_strerror(r));
        return r;
    }
    s->listening = true;
    return 0;
}

bool kla_server_listening(const struct kla_server *s)
{
    return s && s->listening;
}

uint16_t kla_server_port(const struct kla_server *s)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);

    if (!s->listening || uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

void kla_server_stats(const struct kla_server *s, struct kla_server_stats *ret)
{
    *ret = s->st;
    ret->open_connections = s->nconns;
}

static void maybe_free_server(struct kla_server *s)
{
    void (*done)(void *);
    void *dd;

    if (!s->closing || s->open_handles > 0 || s->nconns > 0)
        return;
    done = s->done;
    dd = s->done_data;
    SSL_CTX_free(s->ctx);
    X509_STORE_free(s->ca_store);
    sk_X509_NAME_pop_free(s->ca_names, X509_NAME_free);
    if (s->key_pem)
        OPENSSL_cleanse(s->key_pem, strlen(s->key_pem));
    x_free(s->cert_pem);
    x_free(s->key_pem);
    x_free(s->name);
    x_free(s->addr);
    x_free(s);
    if (done)
        done(dd);
}

static void on_server_handle_closed(uv_handle_t *h)
{
    struct kla_server *s = h->data;

    s->open_handles--;
    maybe_free_server(s);
}

void kla_server_close(struct kla_server *s, void (*done)(void *data), void *data)
{
    if (!s || s->closing)
        return;
    s->closing = true;
    s->done = done;
    s->done_data = data;
    s->listening = false;
    for (struct sconn *sc = s->conns; sc; sc = sc->next) {
        /* No decision may arrive after this call: the authoriser's client may be closed (its
         * requests completed as cancelled) before the connections' closed callbacks run. */
        if (sc->req && sc->req->authz_handle) {
            s->o.authz.cancel(s->o.authz.impl, sc->req->authz_handle);
            sc->req->authz_handle = NULL;
        }
        kla_conn_close(sc->c, -ESHUTDOWN);
    }
    if (s->tcp_inited)
        uv_close((uv_handle_t *)&s->tcp, on_server_handle_closed);
    uv_close((uv_handle_t *)&s->tick, on_server_handle_closed);
}
