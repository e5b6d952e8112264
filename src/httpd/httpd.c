/* httpd: see httpd.h. How the pieces fit:
 *
 *  - MHD is started in external-polling epoll mode with suspend/resume. A uv_poll watches its epoll
 *    descriptor, a uv_timer ("run timer") is re-armed from MHD_get_timeout after every MHD_run;
 *    starting the run timer with 0 is how the module asks for a pass of MHD_run "soon" (after an
 *    asynchronous answer), never recursively from inside MHD.
 *  - MHD calls on_access several times per request: once with the headers (route lookup, early
 *    refusals), once per body chunk (counted and appended to a bounded buffer), once when the body
 *    is complete (the handler runs). A handler that did not answer leaves the connection suspended
 *    and the request on the pending list.
 *  - An answer that cannot be queued right away (the request is suspended) is stored in the
 *    request, which goes on the `deferred` list; the run timer queues it on the suspended
 *    connection and resumes it (MHD allows queueing a response on a suspended connection at any
 *    time).
 *  - The request is freed by MHD's completion notification, whatever happened. */
#include "httpd/httpd.h"
#include "common/log.h"
#include "common/netaddr.h"
#include "common/strutil.h"
#include "common/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

struct route {
    char *method;
    char *path;
    size_t max_body;
    httpd_handler_fn fn;
    void *data;
};

enum req_state {
    REQ_HEADERS, /* headers seen, body (if any) arriving */
    REQ_PENDING, /* the handler runs or has returned without answering */
    REQ_ANSWERED /* an answer is stored or queued */
};

struct httpd_request {
    struct httpd_server *s;
    struct MHD_Connection *conn;
    const struct route *route;
    const char *method, *path; /* borrowed from MHD: valid for the request's life */
    struct sockaddr_storage peer;
    char peer_ip[INET6_ADDRSTRLEN];
    struct sbuf body;
    size_t max_body;
    enum req_state state;
    bool in_handler; /* the handler is running: an answer is queued when it returns */
    bool suspended;
    bool deferred; /* on the deferred list */
    struct MHD_Response *resp;
    unsigned status;
    char *hdr_name[HTTPD_MAX_EXTRA_HEADERS], *hdr_value[HTTPD_MAX_EXTRA_HEADERS];
    int nhdr;
    httpd_abort_fn abort_fn;
    void *abort_data;
    uint64_t deadline; /* loop time, pending requests */
    struct httpd_request *prev, *next;
};

/* A certificate chain and key loaded into GnuTLS for the certificate callback. Replaced ones are
 * kept (retired) until the server is freed: a handshake in progress may still point into them. */
#define TLS_MAX_CHAIN          8
#define TLS_MAX_RETIRED        64
#define HTTPD_IDLE_PASS_MAX_MS 64
struct tls_creds {
    gnutls_pcert_st pcert[TLS_MAX_CHAIN];
    unsigned n;
    gnutls_privkey_t key;
    struct tls_creds *next;
};

/* Client authentication: the trust list the client certificates must chain to and the common names
 * accepted (none: any). Replaced whole by httpd_set_client_ca; nothing keeps a pointer into it
 * between two calls of the verify function (both run on the loop's thread), so the old one is
 * freed at once. */
struct client_auth {
    gnutls_x509_trust_list_t tl;
    char cn[HTTPD_MAX_CLIENT_CNS][HTTPD_CN_MAX + 1];
    size_t ncn;
};

/* One connection, for the request deadline: fd is MHD's socket, deadline 0 while a request is
 * being answered (the handler's own deadline applies then). */
struct hconn {
    struct hconn *prev, *next;
    int fd;
    uint64_t deadline;
    bool fresh; /* handed to MHD, no request head yet (TLS: in its handshake): "Accepting" */
};

/* An accepted connection not handed to MHD yet ("Accepting"). */
struct held {
    struct held *next;
    int fd;
    uint64_t since;
    socklen_t addr_len;
    struct sockaddr_storage addr;
};

struct httpd_server {
    uv_loop_t *loop;
    char *name;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    char *cert, *key;
    unsigned connection_limit, per_ip_limit, timeout_s;
    size_t memory_limit;
    uint64_t handler_timeout_ms, request_timeout_ms;
    httpd_response_fn on_response;
    void *data;

    struct route routes[HTTPD_MAX_ROUTES];
    int nroutes;

    struct MHD_Daemon *d;
    uint16_t port;
    uv_poll_t poll;
    uv_timer_t run_timer;
    uv_timer_t deadline_timer;
    uv_timer_t conn_timer; /* request deadlines of the connections */
    struct hconn *conns;
    uint64_t request_timeouts;
    int open_handles;
    bool poll_started;
    bool closing;
    struct httpd_request *pending; /* suspended, waiting for their handler */
    struct httpd_request *deferred_head;
    void (*done)(void *data);
    void *done_data;
    struct tls_creds *creds;   /* what the certificate callback hands out */
    struct tls_creds *retired; /* replaced ones, newest first */
    size_t nretired;
    struct client_auth *client_auth; /* NULL: no client certificate asked for */
    uint64_t auth_failures;
    struct httpd_server *tls_next; /* on the list of listening TLS servers */
    int listen_fd;
    uv_poll_t listen_poll;
    bool listen_polled;
    bool listening; /* the listen poll is started */
    unsigned open;  /* connections MHD holds (started, not closed) */
    uv_timer_t hold_timer;
    struct held *held, **held_tail; /* oldest first */
    size_t nheld;
    unsigned fresh;  /* connections with hconn.fresh */
    unsigned active; /* requests between their head and their completion */
    unsigned handshake_limit;
    uint64_t hold_ms;      /* 0: no holding */
    uint64_t held_dropped; /* held connections their client closed before they were handed over */
    uint64_t handed_over;  /* connections handed to MHD */
    uint64_t passes;       /* MHD_run calls */
    uint64_t progress;     /* in the current pass: see "TLS transport" */
    uint64_t idle_pass_ms; /* the wait before a pass MHD asks for but may not need */
};

/* ---- addresses ------------------------------------------------------------------------------ */

void httpd_format_addr(const struct sockaddr *sa, char *buf, size_t size)
{
    char ip[INET6_ADDRSTRLEN];

    if (!buf || size == 0)
        return;
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in4->sin_addr, ip, sizeof(ip));
        snprintf(buf, size, "%s:%u", ip, (unsigned)ntohs(in4->sin_port));
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(buf, size, "[%s]:%u", ip, (unsigned)ntohs(in6->sin6_port));
    } else {
        snprintf(buf, size, "?");
    }
}

/* ---- loop integration ----------------------------------------------------------------------- */

static void flush_deferred(struct httpd_server *s);

static void run_mhd(struct httpd_server *s);

static void on_run_timer(uv_timer_t *t)
{
    run_mhd(t->data);
}

static void run_soon(struct httpd_server *s)
{
    if (s->d && !s->closing)
        uv_timer_start(&s->run_timer, on_run_timer, 0, 0);
}

/* The server whose MHD_run is on the stack (one event loop per process): what the TLS transport
 * functions count their bytes for. */
static _Thread_local struct httpd_server *in_pass;

static void run_mhd(struct httpd_server *s)
{
    MHD_UNSIGNED_LONG_LONG t;

    if (!s->d || s->closing)
        return;
    s->progress = 0;
    s->passes++;
    flush_deferred(s);
    in_pass = s;
    MHD_run(s->d);
    in_pass = NULL;
    if (s->closing)
        return;
    if (MHD_get_timeout(s->d, &t) == MHD_YES) {
        /* "Again at once" after a pass of a TLS server that moved no byte and called nothing back
         * is a handshake waiting for its client ("TLS transport" below): wait a little, doubling
         * to HTTPD_IDLE_PASS_MAX_MS, since new data on any connection wakes the poll anyway. */
        if (t == 0 && s->cert && s->progress == 0) {
            t = s->idle_pass_ms ? s->idle_pass_ms : 1;
            s->idle_pass_ms = t * 2 > HTTPD_IDLE_PASS_MAX_MS ? HTTPD_IDLE_PASS_MAX_MS : t * 2;
        } else
            s->idle_pass_ms = 0;
        uv_timer_start(&s->run_timer, on_run_timer, t, 0);
    } else
        uv_timer_stop(&s->run_timer);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    run_mhd(p->data);
}

/* ---- requests and answers ------------------------------------------------------------------- */

/* A request is on at most one of the server's two lists (pending, then deferred), linked through
 * its next/prev fields. */
static void req_list_push(struct httpd_request **head, struct httpd_request *req)
{
    req->next = *head;
    req->prev = NULL;
    if (*head)
        (*head)->prev = req;
    *head = req;
}

static void req_list_unlink(struct httpd_request **head, struct httpd_request *req)
{
    if (req->prev)
        req->prev->next = req->next;
    else if (*head == req)
        *head = req->next;
    if (req->next)
        req->next->prev = req->prev;
    req->prev = req->next = NULL;
}

static void pending_unlink(struct httpd_request *req)
{
    req_list_unlink(&req->s->pending, req);
}

static void report(struct httpd_request *req)
{
    struct httpd_server *s = req->s;

    if (s->on_response)
        s->on_response(req, req->route ? req->route->path : NULL, req->status, s->data);
}

static void pump_soon(struct httpd_server *s);
static void req_free(struct httpd_request *req)
{
    if (!req)
        return;
    if (req->s && req->s->active > 0 && --req->s->active == 0)
        pump_soon(req->s); /* idle: "Accepting" */
    if (req->resp)
        MHD_destroy_response(req->resp);
    for (int i = 0; i < req->nhdr; i++) {
        x_free(req->hdr_name[i]);
        x_free(req->hdr_value[i]);
    }
    sbuf_done(&req->body);
    x_free(req);
}

struct httpd_body {
    char *data;
    size_t len;
    unsigned refs;
};

struct httpd_body *httpd_body_new(char *data, size_t len)
{
    struct httpd_body *b = x_calloc(1, sizeof(*b));

    if (!b) {
        x_free(data);
        return NULL;
    }
    b->data = data;
    b->len = len;
    b->refs = 1;
    return b;
}

const char *httpd_body_data(const struct httpd_body *b, size_t *ret_len)
{
    if (ret_len)
        *ret_len = b ? b->len : 0;
    return b ? b->data : NULL;
}

void httpd_body_put(struct httpd_body *b)
{
    if (!b || --b->refs > 0)
        return;
    x_free(b->data);
    x_free(b);
}

/* MHD's free callback of a response made from a shared body. */
static void body_released(void *cls)
{
    httpd_body_put(cls);
}

/* Builds the stored response: body copied, or shared (b not NULL: the response holds a reference
 * to it until MHD has sent it). Returns 0 or -ENOMEM. */
static int build_response_ex(struct httpd_request *req, unsigned status, const char *content_type,
                             const void *body, size_t len, struct httpd_body *b)
{
    struct MHD_Response *r;

    if (b) {
        b->refs++;
        r = MHD_create_response_from_buffer_with_free_callback_cls(b->len, b->data, body_released,
                                                                   b);
        if (!r)
            b->refs--;
    } else {
        r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    }
    if (!r)
        return -ENOMEM;
    if (content_type && MHD_add_response_header(r, "Content-Type", content_type) != MHD_YES)
        goto fail;
    for (int i = 0; i < req->nhdr; i++)
        if (MHD_add_response_header(r, req->hdr_name[i], req->hdr_value[i]) != MHD_YES)
            goto fail;
    if (req->resp)
        MHD_destroy_response(req->resp);
    req->resp = r;
    req->status = status;
    return 0;
fail:
    MHD_destroy_response(r);
    return -ENOMEM;
}

static int build_response(struct httpd_request *req, unsigned status, const char *content_type,
                          const void *body, size_t len)
{
    return build_response_ex(req, status, content_type, body, len, NULL);
}

/* Queues the stored answer from inside on_access (not for upload calls). */
static enum MHD_Result queue_now(struct httpd_request *req)
{
    enum MHD_Result r = MHD_queue_response(req->conn, req->status, req->resp);

    MHD_destroy_response(req->resp);
    req->resp = NULL;
    report(req);
    return r;
}

static void defer_answer(struct httpd_request *req)
{
    struct httpd_server *s = req->s;

    if (!req->deferred) {
        req->deferred = true;
        req_list_push(&s->deferred_head, req);
    }
    run_soon(s);
}

/* Queues stored answers on their suspended connections and resumes them. */
static void flush_deferred(struct httpd_server *s)
{
    while (s->deferred_head) {
        struct httpd_request *req = s->deferred_head;

        req_list_unlink(&s->deferred_head, req);
        req->deferred = false;
        s->progress++;
        if (req->resp)
            (void)queue_now(req);
        if (req->suspended) {
            req->suspended = false;
            MHD_resume_connection(req->conn);
        }
    }
}

static int answer_with_json_error(struct httpd_request *req, unsigned status, const char *error,
                                  const char *message);

/* Stores an answer made by the server itself (404, 405, 413, 503, 504). */
static int server_answer(struct httpd_request *req, unsigned status, const char *error,
                         const char *message)
{
    req->state = REQ_ANSWERED;
    return answer_with_json_error(req, status, error, message);
}

static void json_escape(struct sbuf *b, const char *s)
{
    sbuf_adds(b, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            sbuf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            sbuf_adds(b, "\\n");
        else if (*p < 0x20 || *p == 0x7f)
            sbuf_printf(b, "\\u%04x", *p);
        else
            sbuf_add(b, p, 1);
    }
    sbuf_adds(b, "\"");
}

static int answer_with_json_error(struct httpd_request *req, unsigned status, const char *error,
                                  const char *message)
{
    struct sbuf b;
    int r;

    sbuf_init(&b, 16384);
    sbuf_adds(&b, "{\"error\":");
    json_escape(&b, error);
    sbuf_adds(&b, ",\"message\":");
    json_escape(&b, message);
    r = sbuf_adds(&b, "}\n");
    if (r == 0)
        r = build_response(req, status, "application/json", sbuf_str(&b), sbuf_len(&b));
    sbuf_done(&b);
    return r;
}

static const struct route *find_route(struct httpd_server *s, const char *method, const char *path,
                                      bool *path_known)
{
    const char *m = strcmp(method, "HEAD") == 0 ? "GET" : method;

    *path_known = false;
    for (int i = 0; i < s->nroutes; i++) {
        if (strcmp(s->routes[i].path, path) != 0)
            continue;
        *path_known = true;
        if (strcmp(s->routes[i].method, m) == 0)
            return &s->routes[i];
    }
    return NULL;
}

static void allow_header(struct httpd_server *s, struct httpd_request *req, const char *path)
{
    struct sbuf b;

    sbuf_init(&b, 256);
    for (int i = 0; i < s->nroutes; i++)
        if (strcmp(s->routes[i].path, path) == 0)
            sbuf_printf(&b, "%s%s", sbuf_len(&b) ? ", " : "", s->routes[i].method);
    if (sbuf_len(&b))
        (void)httpd_add_header(req, "Allow", sbuf_str(&b));
    sbuf_done(&b);
}

/* First call for a request: route lookup and the refusals that need no body. */
static enum MHD_Result begin_request(struct httpd_server *s, struct httpd_request *req)
{
    const union MHD_ConnectionInfo *ci;
    const char *cl;
    bool known;
    uint64_t n;

    ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        if (ci->client_addr->sa_family == AF_INET) {
            memcpy(&req->peer, ci->client_addr, sizeof(struct sockaddr_in));
            inet_ntop(AF_INET, &((struct sockaddr_in *)&req->peer)->sin_addr, req->peer_ip,
                      sizeof(req->peer_ip));
        } else if (ci->client_addr->sa_family == AF_INET6) {
            memcpy(&req->peer, ci->client_addr, sizeof(struct sockaddr_in6));
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&req->peer)->sin6_addr, req->peer_ip,
                      sizeof(req->peer_ip));
        }
    }
    req->route = find_route(s, req->method, req->path, &known);
    if (!req->route) {
        if (known) {
            allow_header(s, req, req->path);
            if (server_answer(req, 405, "method-not-allowed", "method not allowed for this path") <
                0)
                return MHD_NO;
        } else if (server_answer(req, 404, "not-found", "no such path") < 0) {
            return MHD_NO;
        }
        return queue_now(req);
    }
    req->max_body = req->route->max_body;
    sbuf_init(&req->body, req->max_body);
    cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Content-Length");
    if (cl && parse_u64(cl, UINT64_MAX, &n) == 0 && n > req->max_body) {
        if (server_answer(req, 413, "body-too-large", "request body too large") < 0)
            return MHD_NO;
        return queue_now(req);
    }
    return MHD_YES;
}

static void on_deadline(uv_timer_t *t);

static void arm_deadline(struct httpd_server *s)
{
    uint64_t now = uv_now(s->loop), first = UINT64_MAX;

    if (s->closing || !s->d)
        return;
    for (struct httpd_request *r = s->pending; r; r = r->next)
        if (r->deadline < first)
            first = r->deadline;
    if (first == UINT64_MAX)
        uv_timer_stop(&s->deadline_timer);
    else
        uv_timer_start(&s->deadline_timer, on_deadline, first > now ? first - now : 0, 0);
}

static void abort_pending(struct httpd_request *req, unsigned status, const char *error,
                          const char *message)
{
    httpd_abort_fn fn = req->abort_fn;

    pending_unlink(req);
    req->abort_fn = NULL;
    if (fn)
        fn(req, req->abort_data);
    if (server_answer(req, status, error, message) < 0) {
        /* No memory for an answer: resume without one, MHD closes the connection. */
        req->status = status;
    }
    defer_answer(req);
}

static void on_deadline(uv_timer_t *t)
{
    struct httpd_server *s = t->data;
    uint64_t now = uv_now(s->loop);
    struct httpd_request *r = s->pending, *next;

    for (; r; r = next) {
        next = r->next;
        if (r->deadline <= now) {
            log_debug("httpd", "%s: %s %s from %s: handler did not answer in time", s->name,
                      r->method, r->path, r->peer_ip);
            abort_pending(r, 504, "Timeout", "the request could not be completed in time");
        }
    }
    arm_deadline(s);
}

/* ---- request deadlines ---------------------------------------------------------------------
 *
 * MHD only has an idle timeout. Every connection gets a deadline for its next whole request
 * (handshake, head and body), set when it is accepted and again when an answer completes; a
 * timer closes the ones past it by shutting their socket down, which MHD sees as the peer going
 * away on its next pass (in the handshake too). */

/* ---- accepting
 * The server accepts its connections itself and hands them to MHD (MHD_add_connection). With
 * handshake_hold_ms set (TLS servers), a new connection goes at once only while no request is in
 * progress and fewer than handshake_limit connections are fresh (handed over, no request head yet:
 * in their handshake, mostly); otherwise it waits, accepted but not read, until that is so or for
 * hold_ms, oldest first. Why: Go's HTTP/1.1 transport, which the API server's webhook client uses
 * (it pins http/1.1), keeps 25 idle connections per host and dials a new one for every request that
 * finds none, then cancels the dial when the request was served on a connection freed meanwhile
 * (Go 1.19, which builds the control plane here, does). A burst of concurrent reviews thus opened a
 * connection per two reviews (500 or so for 1,000 pods), each a TLS handshake of about 1 ms of this
 * loop's CPU: a connection the client gave up while it waited is closed here without one. Served
 * one at a time on this loop, the requests lose nothing by waiting for a connection rather than for
 * the loop. */
static void hand_over(struct httpd_server *s, struct held *h)
{
    struct pollfd p = {.fd = h->fd, .events = POLLRDHUP};

    if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        s->held_dropped++; /* the client gave up while it waited: no handshake for it */
        close(h->fd);
    } else if (MHD_add_connection(s->d, h->fd, (struct sockaddr *)&h->addr, h->addr_len) !=
               MHD_YES) {
        /* MHD closes the socket of a connection it refuses. */
        log_debug("httpd", "%s: a connection was refused (connection limits)", s->name);
    } else {
        s->handed_over++;
    }
    x_free(h);
    run_soon(s);
}

/* Hands over what may go now: everything for a plain server, within the limit or past hold_ms
 * for a TLS one, while MHD has room (connection_limit); then arms the hold timer for the oldest
 * left, unless it waits for room (a connection that closes pumps again). */
static void on_hold_timer(uv_timer_t *t);
static void listen_resume(struct httpd_server *s);
static void pump_held(struct httpd_server *s)
{
    uint64_t now = uv_now(s->loop);

    while (s->held && !s->closing && s->open < s->connection_limit) {
        struct held *h = s->held;

        if (s->hold_ms && (s->fresh >= s->handshake_limit || s->active > 0) &&
            now < h->since + s->hold_ms)
            break;
        s->held = h->next;
        if (!s->held)
            s->held_tail = &s->held;
        s->nheld--;
        hand_over(s, h);
    }
    if (s->closing)
        return;
    if (s->held && s->open < s->connection_limit)
        uv_timer_start(&s->hold_timer, on_hold_timer, s->held->since + s->hold_ms - now, 0);
    else
        uv_timer_stop(&s->hold_timer);
    listen_resume(s);
}

static void on_hold_timer(uv_timer_t *t)
{
    pump_held(t->data);
}

/* A pass of pump_held from the loop, not from inside MHD (its callbacks call this). */
static void pump_soon(struct httpd_server *s)
{
    if (s->held && !s->closing)
        uv_timer_start(&s->hold_timer, on_hold_timer, 0, 0);
}

static void conn_unfresh(struct httpd_server *s, struct hconn *hc)
{
    if (hc && hc->fresh) {
        hc->fresh = false;
        s->fresh--;
        pump_soon(s);
    }
}

static void on_listen(uv_poll_t *p, int status, int events)
{
    struct httpd_server *s = p->data;

    (void)status;
    (void)events;
    /* A bounded batch per callback: the poll fires again for the rest. */
    for (int i = 0; i < 64 && !s->closing; i++) {
        struct held *h;
        int fd;

        if (s->nheld >= s->connection_limit) {
            /* As many waiting as the server may hold open: the rest wait in the kernel's backlog,
             * as they did when MHD accepted (it stops at its limit), until room is made. */
            uv_poll_stop(&s->listen_poll);
            s->listening = false;
            break;
        }
        h = x_calloc(1, sizeof(*h));
        if (!h)
            break;
        h->addr_len = sizeof(h->addr);
        fd = accept4(s->listen_fd, (struct sockaddr *)&h->addr, &h->addr_len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            x_free(h);
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                log_warn("httpd", "%s: accept: %s", s->name, strerror(errno));
            break;
        }
        h->fd = fd;
        h->since = uv_now(s->loop);
        *s->held_tail = h;
        s->held_tail = &h->next;
        s->nheld++;
    }
    pump_held(s);
}

static void listen_resume(struct httpd_server *s)
{
    if (s->listen_polled && !s->listening && !s->closing && s->nheld < s->connection_limit &&
        uv_poll_start(&s->listen_poll, UV_READABLE, on_listen) == 0)
        s->listening = true;
}

uint64_t httpd_held_dropped(const struct httpd_server *s)
{
    return s ? s->held_dropped : 0;
}

uint64_t httpd_handed_over(const struct httpd_server *s)
{
    return s ? s->handed_over : 0;
}

static struct hconn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

    return i ? i->socket_context : NULL;
}

static void conn_deadline(struct MHD_Connection *conn, uint64_t deadline)
{
    struct hconn *hc = conn_of(conn);

    if (hc)
        hc->deadline = deadline;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct httpd_server *s = cls;
    struct hconn *hc = *socket_context;

    s->progress++;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *i =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

        hc = x_calloc(1, sizeof(*hc));
        if (!hc)
            return; /* no deadline for this one: the idle timeout still applies */
        hc->fd = i ? i->connect_fd : -1;
        hc->deadline = uv_now(s->loop) + s->request_timeout_ms;
        hc->fresh = true;
        s->fresh++;
        s->open++;
        hc->next = s->conns;
        if (s->conns)
            s->conns->prev = hc;
        s->conns = hc;
        *socket_context = hc;
        return;
    }
    if (!hc)
        return;
    conn_unfresh(s, hc);
    s->open--;
    pump_soon(s); /* room for a held one */
    if (hc->prev)
        hc->prev->next = hc->next;
    else
        s->conns = hc->next;
    if (hc->next)
        hc->next->prev = hc->prev;
    x_free(hc);
    *socket_context = NULL;
}

static void on_conn_timer(uv_timer_t *t)
{
    struct httpd_server *s = t->data;
    uint64_t now = uv_now(s->loop);
    bool closed = false;

    for (struct hconn *hc = s->conns; hc; hc = hc->next) {
        if (hc->deadline == 0 || hc->deadline > now || hc->fd < 0)
            continue;
        hc->deadline = 0;
        s->request_timeouts++;
        closed = true;
        log_debug("httpd", "%s: a request did not arrive within %llu ms, closing its connection",
                  s->name, (unsigned long long)s->request_timeout_ms);
        shutdown(hc->fd, SHUT_RDWR);
    }
    if (closed)
        run_soon(s);
}

uint64_t httpd_request_timeouts(const struct httpd_server *s)
{
    return s ? s->request_timeouts : 0;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
    struct httpd_server *s = cls;
    struct httpd_request *req = *con_cls;

    (void)version;
    s->progress++;
    if (!req) {
        conn_unfresh(s, conn_of(conn)); /* its handshake is over */
        req = x_calloc(1, sizeof(*req));
        if (!req)
            return MHD_NO;
        req->s = s;
        s->active++;
        req->conn = conn;
        req->method = method;
        req->path = url;
        sbuf_init(&req->body, 0);
        *con_cls = req;
        return begin_request(s, req);
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;

        *upload_data_size = 0;
        if (req->state != REQ_HEADERS)
            return MHD_YES; /* an answer is on its way: discard */
        (void)upload_data;
        if (sbuf_len(&req->body) + n > req->max_body || sbuf_add(&req->body, upload_data, n) < 0) {
            /* Over the limit (or out of memory): stop reading now. MHD cannot send an answer
             * in the middle of a body it has not read (libmicrohttpd 0.9.75 stalls the
             * connection), so the connection is closed at once; it is counted as a 413. A client
             * that declares its length gets a real 413 before sending anything (begin_request). */
            sbuf_done(&req->body);
            req->state = REQ_ANSWERED;
            req->status = 413;
            report(req);
            log_debug("httpd", "%s: %s %s from %s: body over %zu bytes, closing", s->name,
                      req->method, req->path, req->peer_ip, req->max_body);
            return MHD_NO;
        }
        return MHD_YES;
    }
    if (req->state == REQ_ANSWERED) {
        if (req->resp)
            return queue_now(req);
        return MHD_NO;
    }
    if (req->state == REQ_PENDING)
        return MHD_YES; /* resumed without an answer: cannot happen, be safe */
    /* The body is complete: run the handler. */
    conn_deadline(conn, 0);
    req->state = REQ_PENDING;
    req->in_handler = true;
    req->route->fn(req, req->route->data);
    req->in_handler = false;
    if (req->state == REQ_ANSWERED)
        return req->resp ? queue_now(req) : MHD_NO;
    if (s->closing) {
        /* Cannot wait: the server is going away. */
        if (server_answer(req, 503, "unavailable", "the server is shutting down") < 0)
            return MHD_NO;
        return queue_now(req);
    }
    MHD_suspend_connection(conn);
    req->suspended = true;
    req->deadline = uv_now(s->loop) + s->handler_timeout_ms;
    req_list_push(&s->pending, req);
    arm_deadline(s);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct httpd_server *s = cls;
    struct httpd_request *req = *con_cls;

    s->progress++;
    /* The next request on this connection has its own deadline. */
    if (!s->closing)
        conn_deadline(conn, uv_now(s->loop) + s->request_timeout_ms);
    if (!req)
        return;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
        log_debug("httpd", "%s: %s %s from %s ended early (code %d)", s->name, req->method,
                  req->path, req->peer_ip, (int)toe);
    if (req->state == REQ_PENDING && !req->in_handler) {
        pending_unlink(req);
        if (req->abort_fn)
            req->abort_fn(req, req->abort_data);
    }
    if (req->deferred)
        req_list_unlink(&s->deferred_head, req);
    req_free(req);
    *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct httpd_server *s = cls;
    char buf[512];
    size_t n;

    vsnprintf(buf, sizeof(buf), fmt, ap);
    n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    log_debug("httpd", "%s: libmicrohttpd: %s", s->name, buf);
}

/* ---- request API ---------------------------------------------------------------------------- */

const char *httpd_req_method(const struct httpd_request *req)
{
    return req->method;
}

const char *httpd_req_path(const struct httpd_request *req)
{
    return req->path;
}

const char *httpd_req_body(const struct httpd_request *req, size_t *ret_len)
{
    if (ret_len)
        *ret_len = sbuf_len(&req->body);
    return sbuf_str(&req->body);
}

const char *httpd_req_header(const struct httpd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *httpd_req_query(const struct httpd_request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const struct sockaddr *httpd_req_peer(const struct httpd_request *req)
{
    return (const struct sockaddr *)&req->peer;
}

const char *httpd_req_peer_ip(const struct httpd_request *req)
{
    return req->peer_ip[0] ? req->peer_ip : "?";
}

bool httpd_req_tls(const struct httpd_request *req)
{
    return req->s->cert != NULL;
}

struct httpd_server *httpd_req_server(const struct httpd_request *req)
{
    return req->s;
}

void httpd_req_on_abort(struct httpd_request *req, httpd_abort_fn fn, void *data)
{
    req->abort_fn = fn;
    req->abort_data = data;
}

int httpd_add_header(struct httpd_request *req, const char *name, const char *value)
{
    if (!req || !name || !value || !*name || strpbrk(name, "\r\n:") || strpbrk(value, "\r\n"))
        return -EINVAL;
    if (req->nhdr >= HTTPD_MAX_EXTRA_HEADERS)
        return -ENOSPC;
    req->hdr_name[req->nhdr] = x_strdup(name);
    req->hdr_value[req->nhdr] = x_strdup(value);
    if (!req->hdr_name[req->nhdr] || !req->hdr_value[req->nhdr]) {
        x_free(req->hdr_name[req->nhdr]);
        x_free(req->hdr_value[req->nhdr]);
        return -ENOMEM;
    }
    req->nhdr++;
    return 0;
}

static int respond(struct httpd_request *req, unsigned status, const char *content_type,
                   const void *body, size_t len, struct httpd_body *b)
{
    int r;

    if (!req || req->state != REQ_PENDING)
        return -EALREADY;
    r = build_response_ex(req, status, content_type, body ? body : "", body ? len : 0, b);
    if (r < 0) {
        static const char oom[] = "out of memory\n";

        /* Try a minimal answer; failing that, the connection is closed without one. */
        (void)build_response(req, 500, "text/plain", oom, sizeof(oom) - 1);
        r = -ENOMEM;
    }
    req->state = REQ_ANSWERED;
    if (req->in_handler)
        return r; /* on_access queues it when the handler returns */
    pending_unlink(req);
    req->abort_fn = NULL;
    defer_answer(req);
    arm_deadline(req->s);
    return r;
}

int httpd_respond(struct httpd_request *req, unsigned status, const char *content_type,
                  const void *body, size_t len)
{
    return respond(req, status, content_type, body, len, NULL);
}

int httpd_respond_body(struct httpd_request *req, unsigned status, const char *content_type,
                       struct httpd_body *b)
{
    if (!b)
        return respond(req, status, content_type, NULL, 0, NULL);
    return respond(req, status, content_type, NULL, 0, b);
}

int httpd_respond_text(struct httpd_request *req, unsigned status, const char *text)
{
    return httpd_respond(req, status, "text/plain; charset=utf-8", text, text ? strlen(text) : 0);
}

int httpd_respond_error(struct httpd_request *req, unsigned status, const char *error,
                        const char *message)
{
    struct sbuf b;
    int r;

    if (!req || req->state != REQ_PENDING)
        return -EALREADY;
    sbuf_init(&b, 16384);
    sbuf_adds(&b, "{\"error\":");
    json_escape(&b, error);
    sbuf_adds(&b, ",\"message\":");
    json_escape(&b, message);
    r = sbuf_adds(&b, "}\n");
    if (r < 0) {
        sbuf_done(&b);
        return httpd_respond_text(req, 500, "internal error\n");
    }
    r = httpd_respond(req, status, "application/json", sbuf_str(&b), sbuf_len(&b));
    sbuf_done(&b);
    return r;
}

/* ---- TLS certificates ------------------------------------------------------------------------
 *
 * Every TLS server hands its certificate to GnuTLS through MHD's certificate callback, so that
 * httpd_set_tls can replace it between two handshakes. The callback has no user data: it finds its
 * server by the local address of the connection's socket (MHD gives GnuTLS the socket itself). */

static struct httpd_server *tls_servers; /* listening TLS servers (one loop per process) */

static struct tls_creds *creds_free(struct tls_creds *c)
{
    while (c) {
        struct tls_creds *next = c->next;

        for (unsigned i = 0; i < c->n; i++)
            gnutls_pcert_deinit(&c->pcert[i]);
        gnutls_privkey_deinit(c->key);
        x_free(c);
        c = next;
    }
    return NULL;
}

static int creds_load(const char *cert, const char *key, struct tls_creds **ret)
{
    struct tls_creds *c = x_calloc(1, sizeof(*c));
    gnutls_datum_t cd, kd;
    unsigned n = TLS_MAX_CHAIN;

    if (!c)
        return -ENOMEM;
    cd.data = (unsigned char *)cert;
    cd.size = (unsigned)strlen(cert);
    kd.data = (unsigned char *)key;
    kd.size = (unsigned)strlen(key);
    if (gnutls_pcert_list_import_x509_raw(c->pcert, &n, &cd, GNUTLS_X509_FMT_PEM, 0) < 0 ||
        n == 0) {
        x_free(c);
        return -EPROTO;
    }
    c->n = n;
    if (gnutls_privkey_init(&c->key) < 0 ||
        gnutls_privkey_import_x509_raw(c->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0) < 0) {
        creds_free(c);
        return -EPROTO;
    }
    *ret = c;
    return 0;
}

static bool same_host(const struct sockaddr_storage *bound, const struct sockaddr_storage *local)
{
    if (bound->ss_family != local->ss_family)
        return false;
    if (bound->ss_family == AF_INET) {
        const struct sockaddr_in *b = (const void *)bound, *l = (const void *)local;

        return b->sin_addr.s_addr == INADDR_ANY || b->sin_addr.s_addr == l->sin_addr.s_addr;
    }
    if (bound->ss_family == AF_INET6) {
        const struct sockaddr_in6 *b = (const void *)bound, *l = (const void *)local;

        return IN6_IS_ADDR_UNSPECIFIED(&b->sin6_addr) ||
               memcmp(&b->sin6_addr, &l->sin6_addr, sizeof(b->sin6_addr)) == 0;
    }
    return false;
}

/* The listening TLS server a handshake belongs to, by the local address of its socket. */
static struct httpd_server *server_of_session(gnutls_session_t session)
{
    struct sockaddr_storage local;
    socklen_t len = sizeof(local);
    int fd = gnutls_transport_get_int(session);
    uint16_t port;

    if (fd < 0 || getsockname(fd, (struct sockaddr *)&local, &len) < 0)
        return NULL;
    port = ntohs(local.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&local)->sin6_port
                                             : ((struct sockaddr_in *)&local)->sin_port);
    for (struct httpd_server *s = tls_servers; s; s = s->tls_next)
        if (s->port == port && same_host(&s->addr, &local))
            return s;
    return NULL;
}

static struct client_auth *client_auth_free(struct client_auth *ca)
{
    if (ca) {
        if (ca->tl)
            gnutls_x509_trust_list_deinit(ca->tl, 1);
        x_free(ca);
    }
    return NULL;
}

/* A common name as accepted in a list: 1 to HTTPD_CN_MAX printable ASCII bytes. */
static bool cn_valid(const char *cn)
{
    size_t n = cn ? strlen(cn) : 0;

    if (n == 0 || n > HTTPD_CN_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)cn[i] < 0x20 || (unsigned char)cn[i] >= 0x7f)
            return false;
    return true;
}

/* Loads a client CA bundle and name list. Returns the number of certificates (> 0) or a negative
 * errno. */
static int client_auth_new(const char *pem, const char *const *cn, struct client_auth **ret)
{
    struct client_auth *ca;
    gnutls_datum_t d;
    size_t len = pem ? strlen(pem) : 0;
    int r;

    if (!pem || len > HTTPD_CLIENT_CA_MAX)
        return -EINVAL;
    for (size_t i = 0; cn && cn[i]; i++)
        if (i >= HTTPD_MAX_CLIENT_CNS || !cn_valid(cn[i]))
            return -EINVAL;
    ca = x_calloc(1, sizeof(*ca));
    if (!ca)
        return -ENOMEM;
    for (size_t i = 0; cn && cn[i]; i++)
        snprintf(ca->cn[ca->ncn++], sizeof(ca->cn[0]), "%s", cn[i]);
    if (gnutls_x509_trust_list_init(&ca->tl, 0) < 0) {
        ca->tl = NULL;
        client_auth_free(ca);
        return -ENOMEM;
    }
    d.data = (unsigned char *)pem;
    d.size = (unsigned)len;
    /* The number of CA certificates added: none is an error (nothing could ever verify). */
    r = gnutls_x509_trust_list_add_trust_mem(ca->tl, &d, NULL, GNUTLS_X509_FMT_PEM, 0, 0);
    if (r <= 0) {
        client_auth_free(ca);
        return -EPROTO;
    }
    *ret = ca;
    return r;
}

/* Verifies the client's certificate chain of session against ca. Returns 0, or -EACCES with the
 * reason in why. */
static int client_verify(const struct client_auth *ca, gnutls_session_t session, char *why,
                         size_t whylen)
{
    gnutls_x509_crt_t chain[TLS_MAX_CHAIN];
    gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID,
                                     (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0};
    const gnutls_datum_t *peers;
    unsigned n = 0, imported = 0, status = 0;
    char cn[HTTPD_CN_MAX + 2];
    size_t cnlen = sizeof(cn);
    int r = -EACCES;

    if (gnutls_certificate_type_get2(session, GNUTLS_CTYPE_PEERS) != GNUTLS_CRT_X509) {
        snprintf(why, whylen, "not an X.509 certificate");
        return -EACCES;
    }
    peers = gnutls_certificate_get_peers(session, &n);
    if (!peers || n == 0) {
        snprintf(why, whylen, "no client certificate");
        return -EACCES;
    }
    if (n > TLS_MAX_CHAIN) {
        snprintf(why, whylen, "a chain of %u certificates (at most %d)", n, TLS_MAX_CHAIN);
        return -EACCES;
    }
    for (; imported < n; imported++) {
        if (gnutls_x509_crt_init(&chain[imported]) < 0) {
            snprintf(why, whylen, "out of memory");
            goto out;
        }
        if (gnutls_x509_crt_import(chain[imported], &peers[imported], GNUTLS_X509_FMT_DER) < 0) {
            gnutls_x509_crt_deinit(chain[imported]);
            snprintf(why, whylen, "certificate %u does not parse", imported);
            goto out;
        }
    }
    if (gnutls_x509_trust_list_verify_crt2(ca->tl, chain, n, &purpose, 1, 0, &status, NULL) < 0 ||
        status != 0) {
        gnutls_datum_t text = {NULL, 0};

        if (status &&
            gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0)
            snprintf(why, whylen, "%s", (const char *)text.data);
        else
            snprintf(why, whylen, "the certificate does not verify");
        gnutls_free(text.data);
        goto out;
    }
    if (ca->ncn) {
        size_t other = sizeof(cn);
        char dummy[HTTPD_CN_MAX + 2];
        bool ok = false;

        /* Exactly one CN, of a length we accept, without a NUL inside. */
        if (gnutls_x509_crt_get_dn_by_oid(chain[0], GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &cnlen) <
                0 ||
            strlen(cn) != cnlen ||
            gnutls_x509_crt_get_dn_by_oid(chain[0], GNUTLS_OID_X520_COMMON_NAME, 1, 0, dummy,
                                          &other) != GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) {
            snprintf(why, whylen, "the certificate does not have exactly one usable common name");
            goto out;
        }
        for (size_t i = 0; i < ca->ncn && !ok; i++)
            ok = strcmp(ca->cn[i], cn) == 0;
        if (!ok) {
            char shown[HTTPD_CN_MAX + 1];
            size_t k = 0;

            for (; cn[k] && k < HTTPD_CN_MAX; k++)
                shown[k] =
                    (unsigned char)cn[k] < 0x20 || (unsigned char)cn[k] >= 0x7f ? '?' : cn[k];
            shown[k] = '\0';
            snprintf(why, whylen, "common name \"%s\" is not accepted", shown);
            goto out;
        }
    }
    r = 0;
out:
    for (unsigned i = 0; i < imported; i++)
        gnutls_x509_crt_deinit(chain[i]);
    return r;
}

/* GnuTLS calls it with the client's certificate, inside the handshake: non-zero fails the
 * handshake. Fails closed when the server is not found (closing). */
static int on_verify(gnutls_session_t session)
{
    struct httpd_server *s = server_of_session(session);
    char why[256] = "";

    if (!s || !s->client_auth)
        return GNUTLS_E_CERTIFICATE_ERROR;
    if (client_verify(s->client_auth, session, why, sizeof(why)) < 0) {
        s->auth_failures++;
        log_debug("httpd", "%s: client certificate refused: %s", s->name, why);
        return GNUTLS_E_CERTIFICATE_ERROR;
    }
    return 0;
}

/* ---- TLS transport
 * libmicrohttpd 0.9.75 in epoll mode keeps a TLS connection on its list of ready connections for
 * as long as its handshake waits for the client: GnuTLS reads the socket itself during the
 * handshake, and MHD learns that a read would block only from its own reads, after it. So
 * MHD_get_timeout says 0 and every pass calls gnutls_handshake again, which reads nothing (and
 * hashes the transcript again): a busy loop for as long as any client is slow to answer. Measured
 * before this: 45,000 passes and 0.5 s of CPU for 10 handshakes of a client that took 50 ms a
 * flight; an API server on a busy core kept the agent's webhook server looping like this.
 *
 * So the sessions read and write through these two functions, which count what they moved in the
 * current pass (so do MHD's callbacks), and run_mhd waits a little before a pass MHD asks for
 * after one that did nothing. New data on any connection still wakes the poll on MHD's epoll
 * descriptor at once (its sockets are edge-triggered there), so a handshake does not wait. */
_Static_assert(sizeof(giovec_t) == sizeof(struct iovec), "giovec_t is struct iovec");

/* Returns r; only reads errno, where GnuTLS then reads the reason of a failure. */
static ssize_t tls_count(ssize_t r)
{
    if (in_pass && (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)))
        in_pass->progress++; /* bytes, the end of the stream or an error: something to handle */
    return r;
}

static ssize_t tls_pull(gnutls_transport_ptr_t fd, void *buf, size_t len)
{
    return tls_count(recv((int)(intptr_t)fd, buf, len, 0));
}

static ssize_t tls_push(gnutls_transport_ptr_t fd, const giovec_t *iov, int iovcnt)
{
    struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};

    return tls_count(sendmsg((int)(intptr_t)fd, &m, MSG_NOSIGNAL));
}

uint64_t httpd_passes(const struct httpd_server *s)
{
    return s ? s->passes : 0;
}

/* MHD's certificate callback: GnuTLS calls it while it processes the ClientHello, before it sends
 * its own certificate and, in TLS 1.2 and 1.3 alike, before the CertificateRequest: the place to
 * require a client certificate for this session and to set the function that verifies it. */
static int on_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                   const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                   gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *key)
{
    struct httpd_server *s = server_of_session(session);

    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    if (!s || !s->creds)
        return -1;
    s->progress++;
    /* MHD set the socket as the transport: these read and write it the same way, counting. */
    gnutls_transport_set_pull_function(session, tls_pull);
    gnutls_transport_set_vec_push_function(session, tls_push);
    if (s->client_auth) {
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
        gnutls_session_set_verify_function(session, on_verify);
    }
    *pcert = s->creds->pcert;
    *pcert_length = s->creds->n;
    *key = s->creds->key;
    return 0;
}

static void tls_unlist(struct httpd_server *s)
{
    for (struct httpd_server **p = &tls_servers; *p; p = &(*p)->tls_next)
        if (*p == s) {
            *p = s->tls_next;
            break;
        }
    s->tls_next = NULL;
}

int httpd_set_tls(struct httpd_server *s, const char *cert_pem, const char *key_pem)
{
    struct tls_creds *c = NULL;
    char *cert = NULL, *key = NULL;
    int r;

    if (!s || !cert_pem || !key_pem || !s->cert || s->closing)
        return -EINVAL;
    r = creds_load(cert_pem, key_pem, &c);
    if (r < 0)
        return r;
    cert = x_strdup(cert_pem);
    key = x_strdup(key_pem);
    if (!cert || !key) {
        x_free(cert);
        x_free(key);
        creds_free(c);
        return -ENOMEM;
    }
    x_free(s->cert);
    explicit_bzero(s->key, strlen(s->key));
    x_free(s->key);
    s->cert = cert;
    s->key = key;
    if (s->creds) {
        s->creds->next = s->retired;
        s->retired = s->creds;
        if (++s->nretired > TLS_MAX_RETIRED) {
            struct tls_creds **p = &s->retired;

            for (size_t i = 0; *p && i < TLS_MAX_RETIRED; i++)
                p = &(*p)->next;
            *p = creds_free(*p);
            s->nretired = TLS_MAX_RETIRED;
        }
    }
    s->creds = c;
    return 0;
}

int httpd_set_client_ca(struct httpd_server *s, const char *ca_pem, const char *const *cn)
{
    struct client_auth *ca = NULL;
    int r;

    if (!s || !ca_pem || !s->cert || s->closing)
        return -EINVAL;
    r = client_auth_new(ca_pem, cn, &ca);
    if (r < 0)
        return r;
    client_auth_free(s->client_auth);
    s->client_auth = ca;
    return 0;
}

int httpd_client_ca_check(const char *ca_pem, const char *const *cn)
{
    struct client_auth *ca = NULL;
    int r = client_auth_new(ca_pem, cn, &ca);

    client_auth_free(ca);
    return r;
}

bool httpd_client_auth(const struct httpd_server *s)
{
    return s && s->client_auth;
}

uint64_t httpd_client_auth_failures(const struct httpd_server *s)
{
    return s ? s->auth_failures : 0;
}

/* ---- server --------------------------------------------------------------------------------- */

int httpd_new(uv_loop_t *loop, const struct httpd_options *o, struct httpd_server **ret)
{
    struct httpd_server *s = NULL;
    int r = -EINVAL;

    if (!loop || !o || !o->addr || !ret)
        return -EINVAL;
    if (!o->tls_cert_pem != !o->tls_key_pem)
        return -EINVAL;
    if ((o->client_ca_pem && !o->tls_cert_pem) || (o->client_cn && !o->client_ca_pem))
        return -EINVAL;
    if (o->tls_cert_pem && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return -ENOTSUP;
    s = x_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->loop = loop;
    r = netaddr_parse(o->addr, &s->addr, &s->addr_len);
    if (r < 0)
        goto out;
    r = -ENOMEM;
    s->name = x_strdup(o->name ? o->name : "httpd");
    if (!s->name)
        goto out;
    if (o->tls_cert_pem) {
        s->cert = x_strdup(o->tls_cert_pem);
        s->key = x_strdup(o->tls_key_pem);
        if (!s->cert || !s->key)
            goto out;
    }
    if (o->client_ca_pem) {
        r = client_auth_new(o->client_ca_pem, o->client_cn, &s->client_auth);
        if (r < 0)
            goto out;
    }
    s->connection_limit =
        o->connection_limit ? o->connection_limit : HTTPD_DEFAULT_CONNECTION_LIMIT;
    s->per_ip_limit =
        o->per_ip_connection_limit ? o->per_ip_connection_limit : HTTPD_DEFAULT_PER_IP_LIMIT;
    s->memory_limit =
        o->connection_memory_limit ? o->connection_memory_limit : HTTPD_DEFAULT_MEMORY_LIMIT;
    s->timeout_s = o->connection_timeout_s ? o->connection_timeout_s : HTTPD_DEFAULT_TIMEOUT_S;
    s->handler_timeout_ms =
        o->handler_timeout_ms ? o->handler_timeout_ms : HTTPD_DEFAULT_HANDLER_TIMEOUT_MS;
    s->request_timeout_ms =
        o->request_timeout_ms ? o->request_timeout_ms : HTTPD_DEFAULT_REQUEST_TIMEOUT_MS;
    s->hold_ms = o->tls_cert_pem ? o->handshake_hold_ms : 0;
    s->handshake_limit = o->handshake_limit ? o->handshake_limit : HTTPD_DEFAULT_HANDSHAKE_LIMIT;
    s->listen_fd = -1;
    s->held_tail = &s->held;
    s->on_response = o->on_response;
    s->data = o->data;
    *ret = s;
    s = NULL;
    r = 0;
out:
    if (s) {
        client_auth_free(s->client_auth);
        x_free(s->name);
        x_free(s->cert);
        if (s->key)
            explicit_bzero(s->key, strlen(s->key));
        x_free(s->key);
        x_free(s);
    }
    return r;
}

int httpd_route(struct httpd_server *s, const char *method, const char *path, size_t max_body,
                httpd_handler_fn fn, void *data)
{
    struct route *rt;

    if (!s || !method || !*method || !path || path[0] != '/' || !fn || s->closing)
        return -EINVAL;
    for (int i = 0; i < s->nroutes; i++)
        if (strcmp(s->routes[i].method, method) == 0 && strcmp(s->routes[i].path, path) == 0)
            return -EEXIST;
    if (s->nroutes >= HTTPD_MAX_ROUTES)
        return -ENOSPC;
    rt = &s->routes[s->nroutes];
    rt->method = x_strdup(method);
    rt->path = x_strdup(path);
    if (!rt->method || !rt->path) {
        x_free(rt->method);
        x_free(rt->path);
        rt->method = rt->path = NULL;
        return -ENOMEM;
    }
    rt->max_body = max_body;
    rt->fn = fn;
    rt->data = data;
    s->nroutes++;
    return 0;
}

static int listen_socket(struct httpd_server *s, int *ret_fd, char *err, size_t errlen)
{
    struct sockaddr_storage bound;
    socklen_t blen = sizeof(bound);
    char addr[HTTPD_ADDR_STRLEN];
    int fd, one = 1, r;

    httpd_format_addr((struct sockaddr *)&s->addr, addr, sizeof(addr));
    fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        r = -errno;
        snprintf(err, errlen, "%s: socket: %s", addr, strerror(-r));
        return r;
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&s->addr, s->addr_len) < 0 || listen(fd, 64) < 0 ||
        getsockname(fd, (struct sockaddr *)&bound, &blen) < 0) {
        r = -errno;
        snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(-r));
        close(fd);
        return r;
    }
    s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                : ((struct sockaddr_in *)&bound)->sin_port);
    *ret_fd = fd;
    return 0;
}

int httpd_start(struct httpd_server *s, char *err, size_t errlen)
{
    const union MHD_DaemonInfo *info;
    char dummy[8];
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    int fd = -1, r;

    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    err[0] = '\0';
    if (!s || s->closing)
        return -EINVAL;
    if (s->d)
        return -EALREADY;
    r = listen_socket(s, &fd, err, errlen);
    if (r < 0)
        return r;
    if (s->addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (s->cert) {
        flags |= MHD_USE_TLS;
        if (!s->creds && creds_load(s->cert, s->key, &s->creds) < 0) {
            close(fd);
            snprintf(err, errlen, "%s: the TLS certificate or key is invalid", s->name);
            return -EPROTO;
        }
    }
    /* The server accepts its connections itself ("Accepting"): MHD has no listening socket. */
    flags |= MHD_USE_NO_LISTEN_SOCKET;
    {
        struct MHD_OptionItem opts[] = {
            {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->connection_limit, NULL},
            {MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)s->per_ip_limit, NULL},
            {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)s->memory_limit, NULL},
            {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->timeout_s, NULL},
            {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s},
            {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, s},
            {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, s},
            /* TLS options last: they are cut off for plain HTTP (MHD refuses them there). */
            {MHD_OPTION_HTTPS_MEM_KEY, 0, s->key},
            {MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert},
            {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"},
            {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)on_cert},
            {MHD_OPTION_END, 0, NULL},
        };
        if (!s->cert)
            opts[7].option = MHD_OPTION_END;
        s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_access, s, MHD_OPTION_ARRAY, opts,
                                MHD_OPTION_END);
    }
    if (!s->d) {
        close(fd);
        snprintf(err, errlen, "%s: libmicrohttpd refused to start%s", s->name,
                 s->cert ? " (is the TLS certificate or key invalid?)" : "");
        return -EPROTO;
    }
    if (s->cert) {
        s->tls_next = tls_servers;
        tls_servers = s;
    }
    info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info) {
        tls_unlist(s);
        MHD_stop_daemon(s->d);
        s->d = NULL;
        close(fd);
        snprintf(err, errlen, "%s: libmicrohttpd has no epoll descriptor", s->name);
        return -EPROTO;
    }
    uv_timer_init(s->loop, &s->run_timer);
    uv_timer_init(s->loop, &s->deadline_timer);
    uv_timer_init(s->loop, &s->conn_timer);
    uv_timer_init(s->loop, &s->hold_timer);
    s->run_timer.data = s;
    s->deadline_timer.data = s;
    s->conn_timer.data = s;
    s->hold_timer.data = s;
    s->open_handles = 4;
    s->listen_fd = fd;
    r = uv_poll_init(s->loop, &s->listen_poll, fd);
    if (r < 0) {
        snprintf(err, errlen, "%s: cannot watch the listening socket: %s", s->name, uv_strerror(r));
        return r; /* httpd_close cleans up */
    }
    s->listen_poll.data = s;
    s->listen_polled = true;
    s->open_handles++;
    r = uv_poll_start(&s->listen_poll, UV_READABLE, on_listen);
    s->listening = r == 0;
    if (r < 0) {
        snprintf(err, errlen, "%s: cannot watch the listening socket: %s", s->name, uv_strerror(r));
        return r;
    }
    uv_timer_start(&s->conn_timer, on_conn_timer, 250, 250);
    uv_unref((uv_handle_t *)&s->conn_timer); /* it alone does not keep a loop running */
    r = uv_poll_init(s->loop, &s->poll, info->epoll_fd);
    if (r == 0) {
        s->poll.data = s;
        s->open_handles++;
        s->poll_started = true;
        r = uv_poll_start(&s->poll, UV_READABLE, on_poll);
    }
    if (r < 0) {
        snprintf(err, errlen, "%s: cannot watch the epoll descriptor: %s", s->name, uv_strerror(r));
        /* httpd_close cleans up. */
        return r;
    }
    run_soon(s);
    return 0;
}

bool httpd_started(const struct httpd_server *s)
{
    return s && s->d;
}

uint16_t httpd_port(const struct httpd_server *s)
{
    return s && s->d ? s->port : 0;
}

size_t httpd_pending(const struct httpd_server *s)
{
    size_t n = 0;

    for (const struct httpd_request *r = s ? s->pending : NULL; r; r = r->next)
        n++;
    return n;
}

static void server_free(struct httpd_server *s)
{
    void (*done)(void *) = s->done;
    void *dd = s->done_data;

    for (int i = 0; i < s->nroutes; i++) {
        x_free(s->routes[i].method);
        x_free(s->routes[i].path);
    }
    x_free(s->name);
    x_free(s->cert);
    if (s->key)
        explicit_bzero(s->key, strlen(s->key));
    x_free(s->key);
    tls_unlist(s);
    s->creds = creds_free(s->creds);
    s->retired = creds_free(s->retired);
    s->client_auth = client_auth_free(s->client_auth);
    x_free(s);
    if (done)
        done(dd);
}

static void on_handle_closed(uv_handle_t *h)
{
    struct httpd_server *s = h->data;

    if (--s->open_handles == 0)
        server_free(s);
}

void httpd_close(struct httpd_server *s, void (*done)(void *data), void *data)
{
    if (!s || s->closing)
        return;
    s->done = done;
    s->done_data = data;
    /* Pending requests: their handlers are told, then they get 503. */
    while (s->pending)
        abort_pending(s->pending, 503, "unavailable", "the server is shutting down");
    if (s->d) {
        /* Queue the answers and resume every suspended connection: MHD must not be stopped with
         * suspended connections. MHD_stop_daemon then closes them all. */
        flush_deferred(s);
        s->closing = true;
        tls_unlist(s); /* MHD_stop_daemon below: no more handshakes */
        if (s->poll_started)
            uv_close((uv_handle_t *)&s->poll, on_handle_closed);
        if (s->listen_polled)
            uv_close((uv_handle_t *)&s->listen_poll, on_handle_closed);
        uv_close((uv_handle_t *)&s->hold_timer, on_handle_closed);
        while (s->held) {
            struct held *h = s->held;

            s->held = h->next;
            close(h->fd);
            x_free(h);
        }
        s->held_tail = &s->held;
        s->nheld = 0;
        uv_close((uv_handle_t *)&s->run_timer, on_handle_closed);
        uv_close((uv_handle_t *)&s->deadline_timer, on_handle_closed);
        uv_close((uv_handle_t *)&s->conn_timer, on_handle_closed);
        MHD_stop_daemon(s->d);
        s->d = NULL;
        if (s->listen_fd >= 0)
            close(s->listen_fd); /* after the poll's uv_close: libuv no longer watches it */
        s->listen_fd = -1;
        return;
    }
    s->closing = true;
    server_free(s);
}
